//! FROSTT `.tns` files: reading into tensors and writing them.
//!
//! A `.tns` file lists one entry per line, `c1 c2 ... cN value`, with
//! 1-based coordinates, `#` comments and blank lines; the order N comes from
//! the first entry line. The reader streams the body through
//! [`crate::io::text`] (pieces parsed in parallel) and builds an N-dimensional
//! tensor with [`Tensor::from_coo`]: dimensions `i, j, k, l, m, n, d7, d8,
//! ...` and value column `v` by default, sizes the largest coordinate. Values
//! are `BIGINT` when every value is written as an integer, `DOUBLE`
//! otherwise. A coordinate 0 (the file is 0-based) is an error that points to
//! the `zero_based` option; inconsistent field counts, bad numbers and
//! duplicate entries are errors naming the file and line. The writer stores
//! any tensor with integer dimensions and one value column (or a bag, whose
//! value is the multiplicity), 1-based, with exact values.

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

/// Default names of the first dimensions; later ones are `d7`, `d8`, ...
const DIMENSION_NAMES: [&str; 6] = ["i", "j", "k", "l", "m", "n"];

/// Reads the `.tns` file at `path` into a tensor.
///
/// `options.keys` names the dimensions (as many names as the file has
/// coordinates per entry), `options.values` the value column (one name,
/// default `v`), and `options.zero_based` accepts 0-based coordinates; the
/// CSV options are rejected. Progress is reported in bytes to `progress`.
pub fn read(path: &Path, options: &ReadOptions, progress: &dyn ProgressSink) -> Result<Tensor> {
    options.check(path, ".tns", &["keys", "values", "zero_based"])?;
    let value_name = match options.values.as_deref() {
        None => "v".to_string(),
        Some([name]) => name.clone(),
        Some(other) => {
            return Err(Error::Invalid(format!(
                "a .tns file has one value column, but values names {}",
                other.len()
            )));
        }
    };
    let mut reader = TextReader::open(path, progress)?;
    let Some((layout, first)) = first_entry(&mut reader, options.zero_based, false)? else {
        return empty_tensor(&reader, options, value_name);
    };
    let names = dimension_names(options, layout.order)?;
    let entries = parse_body(&mut reader, &layout, first)?;
    drop(reader);
    let read = entries.len();
    let coo = Coo {
        dims: names
            .into_iter()
            .map(|name| DimensionSpec::new(name, None))
            .collect(),
        coords: entries.coords,
        values: vec![(value_name, entries.values.into_data())],
        column_order: None,
    };
    match Tensor::from_coo(coo) {
        Ok(tensor) if tensor.nnz() == read => Ok(tensor),
        // Fewer entries than read, or an overflow adding integers up: the
        // file has duplicates. A second pass finds their lines.
        Ok(_) | Err(Error::Overflow(_)) => Err(find_duplicate(path, options.zero_based, read)?),
        Err(e) => Err(e),
    }
}

/// Writes `tensor` to `path` as a `.tns` file, atomically: one line per
/// entry, 1-based coordinates in the order users see the dimensions, then
/// the value (exact: shortest round-trip form for floats, 0/1 for booleans,
/// the multiplicity for a bag). String dimensions and several value
/// columns are rejected.
pub fn write(tensor: &Tensor, path: &Path) -> Result<()> {
    let keys = text::integer_keys(tensor, ".tns")?;
    if keys.is_empty() {
        return Err(Error::NotSupported(
            "a tensor without dimensions cannot be written as .tns".to_string(),
        ));
    }
    let annotation = Annotation::of(tensor, ".tns")?;
    let coords: Vec<&[i64]> = keys.iter().map(|&d| tensor.coords(d)).collect();
    write_atomically(path, |out| {
        let mut line = String::with_capacity(128);
        for k in 0..tensor.nnz() {
            line.clear();
            for (d, column) in coords.iter().enumerate() {
                let separator = if d == 0 { "" } else { " " };
                let _ = write!(line, "{separator}{}", column[k] + 1);
            }
            annotation.push(&mut line, k);
            line.push('\n');
            out.write_all(line.as_bytes())
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(())
    })
}

/// The shape of the entry lines, settled by the first one.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Coordinates per entry.
    order: usize,
    /// The line of the first entry.
    first_line: u64,
    zero_based: bool,
}

/// The values read so far: integers until a value that is not.
#[derive(Debug)]
enum Values {
    Integer(Vec<i64>),
    Real(Vec<f64>),
}

impl Values {
    /// Appends the value written in `field`, switching to floats when it is
    /// not an integer that fits in 64 bits.
    fn push(&mut self, field: &[u8]) -> Result<(), String> {
        if let Values::Integer(v) = self {
            match text::parse_i64(field) {
                Ok(value) => {
                    v.push(value);
                    return Ok(());
                }
                Err(_) => self.make_real(),
            }
        }
        let value = text::parse_f64(field)
            .ok_or_else(|| format!("{} is not a number", text::show(field)))?;
        if let Values::Real(v) = self {
            v.push(value);
        }
        Ok(())
    }

    fn make_real(&mut self) {
        if let Values::Integer(v) = self {
            *self = Values::Real(v.iter().map(|&x| x as f64).collect());
        }
    }

    fn append(&mut self, other: Values) {
        match other {
            Values::Integer(b) => match self {
                Values::Integer(a) => a.extend(b),
                Values::Real(a) => a.extend(b.iter().map(|&x| x as f64)),
            },
            Values::Real(b) => {
                self.make_real();
                if let Values::Real(a) = self {
                    a.extend(b);
                }
            }
        }
    }

    fn into_data(self) -> ValueData {
        match self {
            Values::Integer(v) => ValueData::Int64(v),
            Values::Real(v) => ValueData::Float64(v),
        }
    }
}

/// Entries read: 0-based coordinates per dimension, values, and optionally
/// the line of every entry (for locating errors).
#[derive(Debug)]
struct Entries {
    coords: Vec<Vec<i64>>,
    values: Values,
    lines: Option<Vec<u64>>,
}

impl Entries {
    fn new(order: usize, record_lines: bool) -> Entries {
        Entries {
            coords: vec![Vec::new(); order],
            values: Values::Integer(Vec::new()),
            lines: record_lines.then(Vec::new),
        }
    }

    fn len(&self) -> usize {
        match &self.values {
            Values::Integer(v) => v.len(),
            Values::Real(v) => v.len(),
        }
    }

    fn append(&mut self, piece: Entries) {
        for (mine, theirs) in self.coords.iter_mut().zip(piece.coords) {
            mine.extend(theirs);
        }
        self.values.append(piece.values);
        if let (Some(lines), Some(more)) = (&mut self.lines, piece.lines) {
            lines.extend(more);
        }
    }
}

/// Reads up to the first entry line, which settles the order; returns the
/// layout with that entry, or `None` when the file has no entries.
fn first_entry(
    reader: &mut TextReader<'_>,
    zero_based: bool,
    record_lines: bool,
) -> Result<Option<(Layout, Entries)>> {
    let path = reader.path().to_path_buf();
    while let Some((number, line)) = reader.next_line()? {
        let mut cursor = Cursor::new(line, number);
        if !cursor.next_line(b'#') {
            continue;
        }
        let fields = cursor.clone().remaining_fields();
        if fields < 2 {
            return Err(Error::file_format(
                &path,
                number,
                "an entry needs at least one coordinate and a value, but this line has one field",
            ));
        }
        let layout = Layout {
            order: fields - 1,
            first_line: number,
            zero_based,
        };
        let mut entries = Entries::new(layout.order, record_lines);
        parse_line(&mut cursor, &layout, &path, &mut entries)?;
        return Ok(Some((layout, entries)));
    }
    Ok(None)
}

/// Reads the entries after the first one and appends them to `entries`.
fn parse_body(
    reader: &mut TextReader<'_>,
    layout: &Layout,
    mut entries: Entries,
) -> Result<Entries> {
    let path = reader.path().to_path_buf();
    let record_lines = entries.lines.is_some();
    reader.parse_pieces(
        |cursor| parse_piece(cursor, layout, &path, record_lines),
        |piece| {
            entries.append(piece);
            Ok(ControlFlow::Continue(()))
        },
    )?;
    Ok(entries)
}

fn parse_piece(
    mut cursor: Cursor<'_>,
    layout: &Layout,
    path: &Path,
    record_lines: bool,
) -> Result<Entries> {
    let mut entries = Entries::new(layout.order, record_lines);
    while cursor.next_line(b'#') {
        parse_line(&mut cursor, layout, path, &mut entries)?;
    }
    Ok(entries)
}

/// Parses the entry on the cursor's current line into `entries`.
fn parse_line(
    cursor: &mut Cursor<'_>,
    layout: &Layout,
    path: &Path,
    entries: &mut Entries,
) -> Result<()> {
    let line = cursor.line();
    let bad = |message: String| Error::file_format(path, line, message);
    let wrong_count = |found: usize| {
        bad(format!(
            "this line has {found} fields, but the first entry (line {}) has {}: every entry \
             needs {} coordinates and a value",
            layout.first_line,
            layout.order + 1,
            layout.order
        ))
    };
    for (d, column) in entries.coords.iter_mut().enumerate() {
        let field = cursor.field().ok_or_else(|| wrong_count(d))?;
        column.push(parse_coordinate(field, d, layout.zero_based).map_err(bad)?);
    }
    let field = cursor.field().ok_or_else(|| wrong_count(layout.order))?;
    entries.values.push(field).map_err(bad)?;
    let extra = cursor.remaining_fields();
    if extra > 0 {
        return Err(wrong_count(layout.order + 1 + extra));
    }
    if let Some(lines) = &mut entries.lines {
        lines.push(line);
    }
    Ok(())
}

/// A coordinate of dimension `d` (0-based position), returned 0-based.
fn parse_coordinate(field: &[u8], d: usize, zero_based: bool) -> Result<i64, String> {
    let value = match text::parse_u64(field) {
        Ok(value) => value,
        Err(IntError::Syntax) => {
            return Err(format!(
                "{} is not a valid coordinate (coordinates are non-negative integers)",
                text::show(field)
            ));
        }
        Err(IntError::Overflow) => u64::MAX,
    };
    let coordinate = if zero_based {
        value
    } else if value == 0 {
        return Err(format!(
            "coordinate {} is 0, but .tns coordinates are 1-based; if this file is 0-based, \
             load it with zero_based = true",
            d + 1
        ));
    } else {
        value - 1
    };
    // Keep max + 1 (the dimension's size) representable.
    i64::try_from(coordinate)
        .ok()
        .filter(|&c| c < i64::MAX)
        .ok_or_else(|| format!("coordinate {} is too large", text::show(field)))
}

/// The dimension names: `options.keys`, or the defaults.
fn dimension_names(options: &ReadOptions, order: usize) -> Result<Vec<String>> {
    match &options.keys {
        Some(keys) if keys.len() == order => Ok(keys.clone()),
        Some(keys) => Err(Error::Invalid(format!(
            "keys names {} dimensions, but the file has {order} coordinates per entry",
            keys.len()
        ))),
        None => Ok((0..order)
            .map(|d| match DIMENSION_NAMES.get(d) {
                Some(name) => (*name).to_string(),
                None => format!("d{}", d + 1),
            })
            .collect()),
    }
}

/// A file without entries: an empty tensor when `keys` says how many
/// dimensions it has, an error otherwise.
fn empty_tensor(
    reader: &TextReader<'_>,
    options: &ReadOptions,
    value_name: String,
) -> Result<Tensor> {
    let Some(keys) = options.keys.as_ref().filter(|k| !k.is_empty()) else {
        return Err(Error::file_format(
            reader.path(),
            reader.last_line(),
            "the file has no entries, so its number of dimensions is unknown; name the \
             dimensions with keys to load it as an empty tensor",
        ));
    };
    Tensor::from_coo(Coo {
        dims: keys
            .iter()
            .map(|name| DimensionSpec::new(name.clone(), None))
            .collect(),
        coords: vec![Vec::new(); keys.len()],
        values: vec![(value_name, ValueData::Int64(Vec::new()))],
        column_order: None,
    })
}

/// The error for the first entry (in file order) whose coordinates repeat
/// an earlier entry, found by a second pass over the file.
fn find_duplicate(path: &Path, zero_based: bool, expected: usize) -> Result<Error> {
    let mut reader = TextReader::open(path, &NoProgress)?;
    let entries = match first_entry(&mut reader, zero_based, true)? {
        Some((layout, first)) => parse_body(&mut reader, &layout, first)?,
        None => Entries::new(0, true),
    };
    let lines = entries.lines.as_deref().unwrap_or_default();
    let keyed = lines.iter().enumerate().map(|(k, &line)| {
        let key: Vec<i64> = entries.coords.iter().map(|c| c[k]).collect();
        (key, line)
    });
    let show = |key: &Vec<i64>| {
        let shown: Vec<String> = key
            .iter()
            .map(|&c| (if zero_based { c } else { c + 1 }).to_string())
            .collect();
        shown.join(", ")
    };
    text::find_duplicate(path, entries.len(), expected, keyed, show)
}
