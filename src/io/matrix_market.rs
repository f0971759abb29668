//! Matrix Market (`.mtx`) files: reading into tensors and writing them.
//!
//! A Matrix Market file starts with a header line (`%%MatrixMarket matrix
//! coordinate|array real|integer|pattern|complex general|symmetric|
//! skew-symmetric|hermitian`), then `%` comments, a size line and one entry
//! per line. Files without a header are read as `real general`, coordinate
//! or array by the number of sizes on the size line. The reader streams the
//! body through [`crate::io::text`] (pieces parsed in parallel), expands the
//! stored triangle of symmetric files, and builds a two-dimensional tensor
//! (`i`, `j`, value `v` by default) with [`Tensor::from_coo`]: real values
//! become `DOUBLE`, integers `BIGINT`, and pattern files a bag. Malformed
//! input (bad header, wrong entry count, index out of range, bad value,
//! a symmetric file with entries on both sides of the diagonal, duplicate
//! entries) is an error naming the file and line. A symmetric file may store
//! the upper triangle instead of the lower one, and LAGraph's
//! `%%GraphBLAS type float|double` line makes an `integer` file's values real. The writer stores any two-dimensional
//! tensor with one value column, or a bag, as a coordinate file.

use std::fmt::Write as _;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;

use crate::durable::write_atomically;
use crate::error::{Error, Result};
use crate::io::ReadOptions;
use crate::io::text::{self, Annotation, Cursor, IntError, TextReader};
use crate::progress::{NoProgress, ProgressSink};
use crate::storage::{Coo, DimensionSpec, Tensor, ValueData};

/// The first word of a Matrix Market header.
const BANNER: &str = "%%MatrixMarket";

/// Reads the Matrix Market file at `path` into a two-dimensional tensor.
///
/// `options.keys` renames the dimensions (two names, default `i`, `j`) and
/// `options.values` the value column (one name, default `v`); other options
/// are rejected. Progress is reported in bytes to `progress`.
pub fn read(path: &Path, options: &ReadOptions, progress: &dyn ProgressSink) -> Result<Tensor> {
    options.check(path, "Matrix Market", &["keys", "values"])?;
    let names = Names::from_options(options)?;
    let mut reader = TextReader::open(path, progress)?;
    let header = read_header(&mut reader)?;
    if header.field == Field::Pattern && options.values.is_some() {
        return Err(Error::Invalid(format!(
            "'{}' is a pattern matrix without values, so 'values' cannot name its value column",
            path.display()
        )));
    }
    let body = parse_body(&mut reader, &header, false)?;
    check_count(&reader, &header, body.len())?;
    drop(reader);
    if header.layout == Layout::Coordinate
        && header.symmetry != Symmetry::General
        && let Some(k) = mixed_triangle(&body)
    {
        return Err(triangle_error(path, &body, k)?);
    }
    let stored = body.len();
    let entries = match header.layout {
        Layout::Coordinate => body,
        Layout::Array => body.with_array_coordinates(&header),
    };
    let entries = entries.expand_symmetry(header.symmetry, path)?;
    let expected = entries.len();
    let coo = entries.into_coo(&header, names);
    match Tensor::from_coo(coo) {
        Ok(tensor) if tensor.nnz() == expected => Ok(tensor),
        // Fewer entries than read, or an overflow adding integers up: the
        // file has duplicates. A second pass finds their lines.
        Ok(_) | Err(Error::Overflow(_)) if header.layout == Layout::Coordinate => {
            Err(find_duplicate(path, stored)?)
        }
        Ok(_) => Err(text::changed_while_reading(path)),
        Err(e) => Err(e),
    }
}

/// Writes a two-dimensional tensor to `path` as a coordinate Matrix Market
/// file, atomically.
///
/// `DOUBLE` values are written as `real` (shortest exact form), `BIGINT` as
/// `integer`, `BOOLEAN` as `integer` 0/1; a bag becomes `pattern` when every
/// multiplicity is 1 and `integer` counts otherwise. Tensors with another
/// number of dimensions, several value columns or string dimensions are
/// rejected.
pub fn write(tensor: &Tensor, path: &Path) -> Result<()> {
    let keys = text::integer_keys(tensor, "Matrix Market")?;
    let [row, col] = keys[..] else {
        return Err(Error::NotSupported(format!(
            "Matrix Market files hold two-dimensional tensors, but this one has {} dimensions; \
             write it as .tns instead",
            keys.len()
        )));
    };
    let annotation = Annotation::of(tensor, "Matrix Market")?;
    let (field, annotation) = match annotation {
        Annotation::Multiplicity(counts) if counts.iter().all(|&c| c == 1) => ("pattern", None),
        Annotation::Real(_) => ("real", Some(annotation)),
        _ => ("integer", Some(annotation)),
    };
    let rows = tensor.coords(row);
    let cols = tensor.coords(col);
    write_atomically(path, |out| {
        let io = |e| Error::io(path, e);
        writeln!(out, "{BANNER} matrix coordinate {field} general").map_err(io)?;
        let (height, width) = (tensor.dims()[row].size, tensor.dims()[col].size);
        writeln!(out, "{height} {width} {}", tensor.nnz()).map_err(io)?;
        let mut line = String::with_capacity(64);
        for (k, (&r, &c)) in rows.iter().zip(cols).enumerate() {
            line.clear();
            let _ = write!(line, "{} {}", r + 1, c + 1);
            if let Some(annotation) = &annotation {
                annotation.push(&mut line, k);
            }
            line.push('\n');
            out.write_all(line.as_bytes()).map_err(io)?;
        }
        Ok(())
    })
}

/// Column names chosen by the read options.
struct Names {
    row: String,
    col: String,
    value: String,
}

impl Names {
    fn from_options(options: &ReadOptions) -> Result<Names> {
        let (row, col) = match options.keys.as_deref() {
            None => ("i".to_string(), "j".to_string()),
            Some([row, col]) => (row.clone(), col.clone()),
            Some(other) => {
                return Err(Error::Invalid(format!(
                    "a Matrix Market file has two dimensions, but keys names {}",
                    other.len()
                )));
            }
        };
        let value = match options.values.as_deref() {
            None => "v".to_string(),
            Some([value]) => value.clone(),
            Some(other) => {
                return Err(Error::Invalid(format!(
                    "a Matrix Market file has one value column, but values names {}",
                    other.len()
                )));
            }
        };
        Ok(Names { row, col, value })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Coordinate,
    Array,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Symmetry {
    General,
    /// Symmetric, or Hermitian with real values (the same thing).
    Symmetric,
    SkewSymmetric,
}

/// What the header and the size line say.
#[derive(Clone, Debug)]
struct Header {
    layout: Layout,
    field: Field,
    symmetry: Symmetry,
    rows: u64,
    cols: u64,
    /// How many entries (coordinate) or values (array) the body holds.
    entries: u64,
    /// The line of the size line.
    size_line: u64,
}

/// Reads the header line (if any), comments and the size line.
fn read_header(reader: &mut TextReader<'_>) -> Result<Header> {
    let path = reader.path().to_path_buf();
    let mut banner: Option<(Layout, Field, Symmetry)> = None;
    let mut seen_content = false;
    loop {
        let Some((number, line)) = reader.next_line()? else {
            let message = if seen_content {
                "the file ends before the size line"
            } else {
                "the file is empty; expected a %%MatrixMarket header or a size line"
            };
            return Err(Error::file_format(&path, reader.last_line(), message));
        };
        let mut cursor = Cursor::new(line, number);
        let Some(first) = cursor.field() else {
            continue;
        };
        if first.starts_with(b"%%") && !seen_content {
            seen_content = true;
            banner = Some(parse_banner(&path, number, first, &mut cursor)?);
            continue;
        }
        if first.eq_ignore_ascii_case(b"%%GraphBLAS")
            && let Some((_, field, _)) = &mut banner
        {
            apply_graphblas_type(&mut cursor, field);
        }
        seen_content = true;
        if !first.starts_with(b"%") {
            return parse_size_line(&path, number, banner, Cursor::new(line, number));
        }
    }
}

/// Parses `%%MatrixMarket matrix <layout> <field> <symmetry>`; `first` is
/// the first field, already taken from `cursor`.
fn parse_banner(
    path: &Path,
    line: u64,
    first: &[u8],
    cursor: &mut Cursor<'_>,
) -> Result<(Layout, Field, Symmetry)> {
    let bad = |message: String| Error::file_format(path, line, message);
    let expected = "expected '%%MatrixMarket matrix coordinate|array real|integer|pattern \
                    general|symmetric|skew-symmetric|hermitian'";
    if !first.eq_ignore_ascii_case(BANNER.as_bytes()) {
        return Err(bad(format!(
            "unknown header {}; {expected}",
            text::show(first)
        )));
    }
    let mut word = |what: &str| {
        cursor
            .field()
            .map(|f| String::from_utf8_lossy(f).to_ascii_lowercase())
            .ok_or_else(|| bad(format!("the header ends before the {what}; {expected}")))
    };
    let object = word("object")?;
    let layout = word("format")?;
    let field = word("value type")?;
    let symmetry = word("symmetry")?;
    if object != "matrix" {
        return Err(bad(format!(
            "unknown object '{object}' in the header; only 'matrix' is supported"
        )));
    }
    let layout = match layout.as_str() {
        "coordinate" => Layout::Coordinate,
        "array" => Layout::Array,
        other => {
            return Err(bad(format!(
                "unknown format '{other}' in the header; expected 'coordinate' or 'array'"
            )));
        }
    };
    let field = match field.as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        "complex" => {
            return Err(Error::Unsupported {
                path: path.to_path_buf(),
                message: format!(
                    "complex values are not supported (line {line} declares a complex matrix)"
                ),
            });
        }
        other => {
            return Err(bad(format!(
                "unknown value type '{other}' in the header; expected 'real', 'integer', \
                 'pattern' or 'complex'"
            )));
        }
    };
    let symmetry = match symmetry.as_str() {
        "general" => Symmetry::General,
        "symmetric" | "hermitian" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        other => {
            return Err(bad(format!(
                "unknown symmetry '{other}' in the header; expected 'general', 'symmetric', \
                 'skew-symmetric' or 'hermitian'"
            )));
        }
    };
    if let Some(extra) = cursor.field() {
        return Err(bad(format!(
            "unexpected {} after the symmetry in the header",
            text::show(extra)
        )));
    }
    if field == Field::Pattern && layout == Layout::Array {
        return Err(bad(
            "a pattern matrix cannot be stored as an array".to_string()
        ));
    }
    if field == Field::Pattern && symmetry == Symmetry::SkewSymmetric {
        return Err(bad("a pattern matrix cannot be skew-symmetric".to_string()));
    }
    Ok((layout, field, symmetry))
}

/// LAGraph writes the GraphBLAS type of a matrix in a second header line,
/// `%%GraphBLAS type <type>`, and declares floating-point matrices as
/// `integer` (so that `inf` and `nan` may appear); a `float` or `double`
/// type makes the values real. Other types keep the header's value type.
fn apply_graphblas_type(cursor: &mut Cursor<'_>, field: &mut Field) {
    let is_type = cursor
        .field()
        .is_some_and(|word| word.eq_ignore_ascii_case(b"type"));
    let floating = cursor
        .field()
        .is_some_and(|ty| ty.eq_ignore_ascii_case(b"float") || ty.eq_ignore_ascii_case(b"double"));
    if is_type && floating && *field == Field::Integer {
        *field = Field::Real;
    }
}

/// Parses the size line, given the header (or its absence).
fn parse_size_line(
    path: &Path,
    line: u64,
    banner: Option<(Layout, Field, Symmetry)>,
    mut cursor: Cursor<'_>,
) -> Result<Header> {
    let bad = |message: String| Error::file_format(path, line, message);
    let mut sizes = Vec::new();
    while let Some(field) = cursor.field() {
        let size = text::parse_u64(field)
            .ok()
            .filter(|&s| i64::try_from(s).is_ok())
            .ok_or_else(|| {
                bad(format!(
                    "{} is not a valid size on the size line (sizes are integers from 0 to {})",
                    text::show(field),
                    i64::MAX
                ))
            })?;
        sizes.push(size);
        if sizes.len() > 3 {
            break;
        }
    }
    let (layout, field, symmetry) = match banner {
        Some(banner) => banner,
        None => match sizes.len() {
            3 => (Layout::Coordinate, Field::Real, Symmetry::General),
            2 => (Layout::Array, Field::Real, Symmetry::General),
            _ => {
                return Err(bad(
                    "expected a %%MatrixMarket header or a size line 'rows columns entries' \
                     (or 'rows columns' for a dense array)"
                        .to_string(),
                ));
            }
        },
    };
    let (rows, cols, entries) = match (layout, &sizes[..]) {
        (Layout::Coordinate, &[rows, cols, entries]) => (rows, cols, entries),
        (Layout::Array, &[rows, cols]) => (rows, cols, 0),
        (Layout::Coordinate, _) => {
            return Err(bad(format!(
                "expected the size line 'rows columns entries' of a coordinate file, found {} \
                 fields",
                sizes.len()
            )));
        }
        (Layout::Array, _) => {
            return Err(bad(format!(
                "expected the size line 'rows columns' of an array file, found {} fields",
                sizes.len()
            )));
        }
    };
    if symmetry != Symmetry::General && rows != cols {
        return Err(bad(format!(
            "a symmetric or skew-symmetric matrix must be square, but the size line says \
             {rows} x {cols}"
        )));
    }
    let entries = match layout {
        Layout::Coordinate => Some(entries),
        Layout::Array => match symmetry {
            Symmetry::General => rows.checked_mul(cols),
            Symmetry::Symmetric => rows.checked_mul(rows + 1).map(|n| n / 2),
            Symmetry::SkewSymmetric => rows.checked_mul(rows.saturating_sub(1)).map(|n| n / 2),
        },
    }
    .ok_or_else(|| bad(format!("a {rows} x {cols} array is too large")))?;
    Ok(Header {
        layout,
        field,
        symmetry,
        rows,
        cols,
        entries,
        size_line: line,
    })
}

/// The values of the entries read so far.
#[derive(Debug)]
enum Values {
    None,
    Real(Vec<f64>),
    Integer(Vec<i64>),
}

impl Values {
    fn new(field: Field) -> Values {
        match field {
            Field::Pattern => Values::None,
            Field::Real => Values::Real(Vec::new()),
            Field::Integer => Values::Integer(Vec::new()),
        }
    }

    fn append(&mut self, other: Values) {
        match (self, other) {
            (Values::Real(a), Values::Real(b)) => a.extend(b),
            (Values::Integer(a), Values::Integer(b)) => a.extend(b),
            _ => {}
        }
    }
}

/// Entries of the body: 0-based coordinates (empty for an array file until
/// [`Entries::with_array_coordinates`]), values, and optionally the line of
/// every entry (for locating errors).
#[derive(Debug)]
struct Entries {
    rows: Vec<i64>,
    cols: Vec<i64>,
    values: Values,
    lines: Option<Vec<u64>>,
    /// Number of entries (array files have values but no coordinates yet).
    count: usize,
}

impl Entries {
    fn new(field: Field, record_lines: bool) -> Entries {
        Entries {
            rows: Vec::new(),
            cols: Vec::new(),
            values: Values::new(field),
            lines: record_lines.then(Vec::new),
            count: 0,
        }
    }

    fn len(&self) -> usize {
        self.count
    }

    fn append(&mut self, piece: Entries) {
        self.rows.extend(piece.rows);
        self.cols.extend(piece.cols);
        self.values.append(piece.values);
        if let (Some(lines), Some(more)) = (&mut self.lines, piece.lines) {
            lines.extend(more);
        }
        self.count += piece.count;
    }

    /// Gives the values of an array file their coordinates: column-major,
    /// the whole matrix (general) or the lower triangle (symmetric, with
    /// the diagonal; skew-symmetric, without).
    fn with_array_coordinates(mut self, header: &Header) -> Entries {
        let n = self.count;
        let (mut rows, mut cols) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let first_row = |col: i64| match header.symmetry {
            Symmetry::General => 0,
            Symmetry::Symmetric => col,
            Symmetry::SkewSymmetric => col + 1,
        };
        let (height, width) = (header.rows as i64, header.cols as i64);
        let mut col = 0;
        let mut row = first_row(0);
        while rows.len() < n && col < width {
            if row >= height {
                col += 1;
                row = first_row(col);
                continue;
            }
            rows.push(row);
            cols.push(col);
            row += 1;
        }
        self.rows = rows;
        self.cols = cols;
        self
    }

    /// Adds the mirror image of every off-diagonal entry of a symmetric
    /// (same value) or skew-symmetric (negated value) matrix.
    fn expand_symmetry(mut self, symmetry: Symmetry, path: &Path) -> Result<Entries> {
        if symmetry == Symmetry::General {
            return Ok(self);
        }
        let mirrored: Vec<usize> = (0..self.count)
            .filter(|&k| self.rows[k] != self.cols[k])
            .collect();
        let negate = symmetry == Symmetry::SkewSymmetric;
        self.rows.reserve(mirrored.len());
        self.cols.reserve(mirrored.len());
        for &k in &mirrored {
            self.rows.push(self.cols[k]);
            self.cols.push(self.rows[k]);
        }
        match &mut self.values {
            Values::None => {}
            Values::Real(v) => {
                v.reserve(mirrored.len());
                for &k in &mirrored {
                    v.push(if negate { -v[k] } else { v[k] });
                }
            }
            Values::Integer(v) => {
                v.reserve(mirrored.len());
                for &k in &mirrored {
                    let value = if negate {
                        v[k].checked_neg().ok_or_else(|| {
                            Error::Overflow(format!(
                                "'{}': the skew-symmetric mirror of value {} at ({}, {}) does \
                                 not fit in 64 bits",
                                path.display(),
                                v[k],
                                self.rows[k] + 1,
                                self.cols[k] + 1
                            ))
                        })?
                    } else {
                        v[k]
                    };
                    v.push(value);
                }
            }
        }
        self.count += mirrored.len();
        Ok(self)
    }

    fn into_coo(self, header: &Header, names: Names) -> Coo {
        let values = match self.values {
            Values::None => vec![],
            Values::Real(v) => vec![(names.value, ValueData::Float64(v))],
            Values::Integer(v) => vec![(names.value, ValueData::Int64(v))],
        };
        Coo {
            dims: vec![
                DimensionSpec::new(names.row, Some(header.rows)),
                DimensionSpec::new(names.col, Some(header.cols)),
            ],
            coords: vec![self.rows, self.cols],
            values,
            column_order: None,
        }
    }
}

/// Parses the body after the size line, stopping once more entries than
/// the size line announces have been read.
fn parse_body(reader: &mut TextReader<'_>, header: &Header, record_lines: bool) -> Result<Entries> {
    let path = reader.path().to_path_buf();
    let mut entries = Entries::new(header.field, record_lines);
    let limit = usize::try_from(header.entries).unwrap_or(usize::MAX);
    reader.parse_pieces(
        |cursor| parse_piece(cursor, header, &path, record_lines),
        |piece| {
            entries.append(piece);
            Ok(if entries.len() > limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        },
    )?;
    Ok(entries)
}

/// Parses the entry lines of one piece of the body.
fn parse_piece(
    mut cursor: Cursor<'_>,
    header: &Header,
    path: &Path,
    record_lines: bool,
) -> Result<Entries> {
    let mut entries = Entries::new(header.field, record_lines);
    let fields = match (header.layout, header.field) {
        (Layout::Array, _) => 1,
        (Layout::Coordinate, Field::Pattern) => 2,
        (Layout::Coordinate, _) => 3,
    };
    while cursor.next_line(b'%') {
        let line = cursor.line();
        let bad = |message: String| Error::file_format(path, line, message);
        let missing = |found: usize| wrong_field_count(path, line, header, fields, found);
        if header.layout == Layout::Coordinate {
            let row = parse_index(
                cursor.field().ok_or_else(|| missing(0))?,
                header.rows,
                "row",
            )
            .map_err(&bad)?;
            let col = parse_index(
                cursor.field().ok_or_else(|| missing(1))?,
                header.cols,
                "column",
            )
            .map_err(&bad)?;
            if header.symmetry == Symmetry::SkewSymmetric && row == col {
                return Err(bad(format!(
                    "entry ({}, {}) is on the diagonal; a skew-symmetric matrix has a zero \
                     diagonal, which its file leaves out",
                    row + 1,
                    col + 1
                )));
            }
            entries.rows.push(row);
            entries.cols.push(col);
        }
        match &mut entries.values {
            Values::None => {}
            Values::Real(v) => {
                let field = cursor.field().ok_or_else(|| missing(fields - 1))?;
                let value = text::parse_f64(field)
                    .ok_or_else(|| bad(format!("{} is not a real number", text::show(field))))?;
                v.push(value);
            }
            Values::Integer(v) => {
                let field = cursor.field().ok_or_else(|| missing(fields - 1))?;
                let value = text::parse_i64(field).map_err(|e| match e {
                    IntError::Syntax => bad(format!(
                        "{} is not an integer (the header declares integer values)",
                        text::show(field)
                    )),
                    IntError::Overflow => bad(format!(
                        "integer value {} does not fit in 64 bits",
                        text::show(field)
                    )),
                })?;
                v.push(value);
            }
        }
        let extra = cursor.remaining_fields();
        if extra > 0 {
            return Err(wrong_field_count(
                path,
                line,
                header,
                fields,
                fields + extra,
            ));
        }
        if let Some(lines) = &mut entries.lines {
            lines.push(line);
        }
        entries.count += 1;
    }
    Ok(entries)
}

fn wrong_field_count(
    path: &Path,
    line: u64,
    header: &Header,
    expected: usize,
    found: usize,
) -> Error {
    let layout = match (header.layout, header.field) {
        (Layout::Array, _) => "one value per line",
        (Layout::Coordinate, Field::Pattern) => "'row column' (a pattern file has no values)",
        (Layout::Coordinate, _) => "'row column value'",
    };
    let plural = if expected == 1 { "" } else { "s" };
    Error::file_format(
        path,
        line,
        format!("expected {expected} field{plural}, {layout}, but found {found}"),
    )
}

/// A 1-based index in `1..=size`, returned 0-based.
fn parse_index(field: &[u8], size: u64, what: &str) -> Result<i64, String> {
    match text::parse_u64(field) {
        Ok(index) if (1..=size).contains(&index) => Ok(index as i64 - 1),
        Ok(index) => Err(format!(
            "{what} index {index} is out of range 1..={size} (Matrix Market indices are 1-based)"
        )),
        Err(IntError::Overflow) => Err(format!(
            "{what} index {} is out of range 1..={size}",
            text::show(field)
        )),
        Err(IntError::Syntax) => Err(format!("{} is not a valid {what} index", text::show(field))),
    }
}

/// The first entry (by position) on the other side of the diagonal from
/// the first off-diagonal entry: a symmetric or skew-symmetric file stores
/// one triangle, the lower one by the standard, or the upper one as some
/// writers do, but never both.
fn mixed_triangle(entries: &Entries) -> Option<usize> {
    let side = |k: usize| entries.rows[k].cmp(&entries.cols[k]);
    let first = (0..entries.count).map(side).find(|s| s.is_ne())?;
    (0..entries.count).find(|&k| side(k) == first.reverse())
}

/// The error for an entry on the other side of the diagonal, at its line.
fn triangle_error(path: &Path, entries: &Entries, k: usize) -> Result<Error> {
    let line = locate(path, |lines| lines.get(k).copied())?;
    let (row, col) = (entries.rows[k] + 1, entries.cols[k] + 1);
    let (this, other) = if row > col {
        ("below", "above")
    } else {
        ("above", "below")
    };
    Ok(Error::file_format(
        path,
        line,
        format!(
            "entry ({row}, {col}) is {this} the diagonal, but the entries before it are \
             {other} it; a symmetric file stores only one triangle"
        ),
    ))
}

/// Checks the number of entries read against the size line.
fn check_count(reader: &TextReader<'_>, header: &Header, read: usize) -> Result<()> {
    let path = reader.path();
    let what = match header.layout {
        Layout::Coordinate => "entries",
        Layout::Array => "values",
    };
    if (read as u64) < header.entries {
        return Err(Error::file_format(
            path,
            reader.last_line(),
            format!(
                "the file ends after {read} {what}, but the size line (line {}) announces {}",
                header.size_line, header.entries
            ),
        ));
    }
    if read as u64 > header.entries {
        let line = locate(path, |lines| lines.get(header.entries as usize).copied())?;
        return Err(Error::file_format(
            path,
            line,
            format!(
                "more {what} than the {} announced by the size line (line {})",
                header.entries, header.size_line
            ),
        ));
    }
    Ok(())
}

/// Reads `path` again, recording the line of every entry, and returns what
/// `find` picks from the entries' lines.
fn locate(path: &Path, find: impl FnOnce(&[u64]) -> Option<u64>) -> Result<u64> {
    let entries = reread_with_lines(path)?;
    entries
        .lines
        .as_deref()
        .and_then(find)
        .ok_or_else(|| text::changed_while_reading(path))
}

fn reread_with_lines(path: &Path) -> Result<Entries> {
    let mut reader = TextReader::open(path, &NoProgress)?;
    let header = read_header(&mut reader)?;
    parse_body(&mut reader, &header, true)
}

/// The error for the first entry (in file order) whose coordinates repeat
/// an earlier entry, found by a second pass over the file.
fn find_duplicate(path: &Path, expected: usize) -> Result<Error> {
    let entries = reread_with_lines(path)?;
    let lines = entries.lines.as_deref().unwrap_or_default();
    let keyed = entries.rows.iter().zip(&entries.cols).zip(lines);
    text::find_duplicate(
        path,
        entries.len(),
        expected,
        keyed.map(|((&row, &col), &line)| ((row, col), line)),
        |&(row, col)| format!("{}, {}", row + 1, col + 1),
    )
}
