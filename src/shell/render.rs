//! Rendering statement results in the shell's output modes.
//!
//! The engine returns Arrow record batches (string keys already decoded);
//! this module turns them into text: a box-drawn table sized to the terminal
//! (`comfy-table`) with a row-count footer and the middle rows elided beyond
//! `.maxrows`, or CSV, TSV, JSON, Markdown or one `column = value` line per
//! field. Values are formatted by Arrow's display code, so integers of any
//! size are printed exactly; NULL is printed as `NULL` (empty in CSV/TSV,
//! `null` in JSON).
//!
//! A [`RowWriter`] takes the batches of a result as they arrive: CSV, TSV,
//! JSON and line mode print each batch's rows at once; a table and
//! Markdown size their columns to every row, so they print at the end. A
//! table under `.maxrows` keeps only the rows it will show (the first and
//! the last ones) and counts the others, so a large result takes no more
//! memory in the shell than its rows on the screen.

use std::io::{self, Write};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type, SchemaRef, UInt64Type};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// A box-drawn table sized to the terminal, with a row count.
    Table,
    /// Comma-separated values with a header line (RFC 4180 quoting).
    Csv,
    /// Tab-separated values with a header line.
    Tsv,
    /// A JSON array with one object per row.
    Json,
    /// A Markdown (GitHub) table.
    Markdown,
    /// One `column = value` line per field, a blank line between rows.
    Line,
}

impl Mode {
    /// Every mode, in the order `.help` lists them.
    pub const ALL: [Mode; 6] = [
        Mode::Table,
        Mode::Csv,
        Mode::Tsv,
        Mode::Json,
        Mode::Markdown,
        Mode::Line,
    ];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Table => "table",
            Mode::Csv => "csv",
            Mode::Tsv => "tsv",
            Mode::Json => "json",
            Mode::Markdown => "markdown",
            Mode::Line => "line",
        }
    }

    /// The mode called `name`.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// Whether the mode is meant for people rather than programs: statement
    /// messages ("Created table ...") are printed only in these modes.
    pub fn is_for_people(self) -> bool {
        matches!(self, Mode::Table | Mode::Markdown | Mode::Line)
    }
}

/// Terminals narrower than this are taken not to know their width.
const MIN_TERMINAL_WIDTH: u16 = 20;

/// Settings that shape the output.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The output mode.
    pub mode: Mode,
    /// In table mode, the most rows shown (0: all).
    pub max_rows: usize,
    /// In table mode: `Some(width)` wraps to that width, `None` to the
    /// terminal's width when the output is a terminal.
    pub width: Option<u16>,
    /// Whether the output goes to the terminal (so the table may be sized
    /// to it).
    pub to_terminal: bool,
}

/// Writes a result's rows as its batches arrive (see the module
/// documentation): [`RowWriter::write`] per batch, then
/// [`RowWriter::finish`].
pub struct RowWriter {
    schema: SchemaRef,
    layout: Layout,
    /// Whether the header (or JSON's opening bracket) is written.
    started: bool,
    /// Whether a row is written (JSON and line mode separate rows).
    wrote_row: bool,
    /// The rows a table or Markdown prints at the end.
    kept: Kept,
}

/// The rows of a result that a table or Markdown prints at the end: all
/// of them, or under `.maxrows` only the first `head` and the last `tail`
/// (whole batches, or slices of them, that cover them), with the number
/// of rows that came.
struct Kept {
    /// The first rows: all of them, or the first `head` of them.
    front: Vec<RecordBatch>,
    front_rows: usize,
    /// The latest batches after the front, while the rows after the
    /// first of them are fewer than `tail`.
    back: Vec<RecordBatch>,
    back_rows: usize,
    /// Every row that came.
    total: usize,
    /// Rows kept at the front and at the back; `None` keeps every row.
    bounds: Option<(usize, usize)>,
}

impl Kept {
    /// Keeps every row, or under `max_rows` (0: all) the rows a table
    /// shows.
    fn new(max_rows: usize) -> Kept {
        let head = max_rows.div_ceil(2);
        Kept {
            front: Vec::new(),
            front_rows: 0,
            back: Vec::new(),
            back_rows: 0,
            total: 0,
            bounds: (max_rows > 0).then_some((head, max_rows - head)),
        }
    }

    /// Counts `batch`'s rows and keeps those that may be shown.
    fn push(&mut self, batch: &RecordBatch) {
        let n = batch.num_rows();
        self.total += n;
        let Some((head, tail)) = self.bounds else {
            self.front.push(batch.clone());
            self.front_rows += n;
            return;
        };
        let to_front = n.min(head - self.front_rows);
        if to_front > 0 {
            self.front.push(batch.slice(0, to_front));
            self.front_rows += to_front;
        }
        if to_front == n {
            return;
        }
        self.back.push(batch.slice(to_front, n - to_front));
        self.back_rows += n - to_front;
        let dropped = self
            .back
            .iter()
            .scan(self.back_rows, |left, b| {
                *left -= b.num_rows();
                Some(*left)
            })
            .take_while(|&left| left >= tail)
            .count();
        for batch in self.back.drain(..dropped) {
            self.back_rows -= batch.num_rows();
        }
    }

    /// The kept rows, addressed by their row numbers in the whole result.
    fn rows(&self) -> Rows<'_> {
        let mut batches = Vec::new();
        let mut start = 0;
        for batch in &self.front {
            batches.push((start, batch));
            start += batch.num_rows();
        }
        let mut start = self.total - self.back_rows;
        for batch in &self.back {
            batches.push((start, batch));
            start += batch.num_rows();
        }
        Rows {
            batches,
            total: self.total,
        }
    }
}

impl RowWriter {
    /// A writer of rows of `schema` laid out by `layout`.
    pub fn new(schema: &SchemaRef, layout: &Layout) -> RowWriter {
        RowWriter {
            schema: Arc::clone(schema),
            layout: *layout,
            started: false,
            wrote_row: false,
            kept: Kept::new(match layout.mode {
                Mode::Table => layout.max_rows,
                _ => 0,
            }),
        }
    }

    /// Writes `batch`'s rows, or keeps them for [`RowWriter::finish`].
    pub fn write(&mut self, out: &mut dyn Write, batch: &RecordBatch) -> io::Result<()> {
        let rows = Rows::of(batch);
        match self.layout.mode {
            Mode::Table | Mode::Markdown => {
                self.kept.push(batch);
                Ok(())
            }
            Mode::Csv => {
                self.start(out)?;
                write_delimited(out, &rows, b',')
            }
            Mode::Tsv => {
                self.start(out)?;
                write_delimited(out, &rows, b'\t')
            }
            Mode::Json => {
                self.start(out)?;
                write_json(out, &self.schema, &rows, &mut self.wrote_row)
            }
            Mode::Line => write_lines(out, &self.schema, &rows, &mut self.wrote_row),
        }
    }

    /// Writes what comes after the last batch (a table or Markdown: all
    /// of it).
    pub fn finish(mut self, out: &mut dyn Write) -> io::Result<()> {
        match self.layout.mode {
            Mode::Table => write_table(out, &self.schema, &self.kept.rows(), &self.layout),
            Mode::Markdown => write_markdown(out, &self.schema, &self.kept.rows()),
            Mode::Json => {
                self.start(out)?;
                writeln!(out, "]")
            }
            Mode::Csv | Mode::Tsv => self.start(out),
            Mode::Line => Ok(()),
        }
    }

    /// Writes the CSV or TSV header, or JSON's opening bracket, once.
    fn start(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if std::mem::replace(&mut self.started, true) {
            return Ok(());
        }
        match self.layout.mode {
            Mode::Csv => write_header(out, &self.schema, b','),
            Mode::Tsv => write_header(out, &self.schema, b'\t'),
            Mode::Json => write!(out, "["),
            Mode::Table | Mode::Markdown | Mode::Line => Ok(()),
        }
    }
}

/// "1 row", "2 rows": `n` with the `singular` or `plural` noun.
pub fn count<N>(n: N, singular: &str, plural: &str) -> String
where
    N: std::fmt::Display + PartialEq + From<u8>,
{
    if n == N::from(1) {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

/// The rows of several batches, addressed by one global row number: each
/// batch with the number of its first row (a table's kept rows may leave
/// a gap between its first and last ones).
struct Rows<'a> {
    batches: Vec<(usize, &'a RecordBatch)>,
    total: usize,
}

impl<'a> Rows<'a> {
    /// The rows of `batch`.
    fn of(batch: &'a RecordBatch) -> Rows<'a> {
        Rows {
            batches: vec![(0, batch)],
            total: batch.num_rows(),
        }
    }

    /// Calls `each` with the formatted fields of every row in `range`
    /// (global row numbers), in order.
    fn format(
        &self,
        range: std::ops::Range<usize>,
        null: &str,
        mut each: impl FnMut(Vec<String>) -> io::Result<()>,
    ) -> io::Result<()> {
        let options = FormatOptions::default()
            .with_null(null)
            .with_display_error(true);
        for &(first, batch) in &self.batches {
            let rows = first..first + batch.num_rows();
            let start = range.start.max(rows.start);
            let end = range.end.min(rows.end);
            if start >= end {
                continue;
            }
            let formatters = batch
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                .collect::<Result<Vec<_>, _>>()
                .map_err(io::Error::other)?;
            for row in start - rows.start..end - rows.start {
                each(
                    formatters
                        .iter()
                        .map(|f| f.value(row).to_string())
                        .collect(),
                )?;
            }
        }
        Ok(())
    }

    /// Calls `each` with the columns of every batch and the row numbers of
    /// that batch.
    fn arrays(&self, mut each: impl FnMut(&[ArrayRef], usize) -> io::Result<()>) -> io::Result<()> {
        for (_, batch) in &self.batches {
            for row in 0..batch.num_rows() {
                each(batch.columns(), row)?;
            }
        }
        Ok(())
    }
}

/// The SQL name of an Arrow type, as the table header shows it.
fn type_name(ty: &DataType) -> String {
    match ty {
        DataType::Int64 => "bigint".to_string(),
        DataType::Decimal128(38, 0) => "hugeint".to_string(),
        DataType::Int32 => "integer".to_string(),
        DataType::UInt64 => "ubigint".to_string(),
        DataType::Float64 => "double".to_string(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "varchar".to_string(),
        DataType::Boolean => "boolean".to_string(),
        other => other.to_string().to_lowercase(),
    }
}

fn is_numeric(ty: &DataType) -> bool {
    ty.is_numeric()
}

fn write_table(
    out: &mut dyn Write,
    schema: &SchemaRef,
    rows: &Rows<'_>,
    layout: &Layout,
) -> io::Result<()> {
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    match layout.width {
        Some(width) => {
            table.set_width(width);
        }
        None if !layout.to_terminal => {
            table.force_no_tty();
        }
        None => {
            // A terminal that reports no usable size (a pseudo-terminal
            // without one reports 0 columns) gets an unwrapped table.
            if table.width().is_none_or(|w| w < MIN_TERMINAL_WIDTH) {
                table.force_no_tty();
            }
        }
    }
    // Headers stay left-aligned above right-aligned numbers.
    table.set_header(schema.fields().iter().map(|f| {
        Cell::new(format!("{}\n{}", f.name(), type_name(f.data_type())))
            .set_alignment(CellAlignment::Left)
    }));
    let total = rows.total;
    let shown = if layout.max_rows == 0 || total <= layout.max_rows {
        total
    } else {
        layout.max_rows
    };
    let head = shown.div_ceil(2);
    let tail = shown - head;
    rows.format(0..head, "NULL", |fields| {
        table.add_row(fields);
        Ok(())
    })?;
    if shown < total {
        table.add_row(vec!["…"; schema.fields().len()]);
    }
    rows.format(total - tail..total, "NULL", |fields| {
        table.add_row(fields);
        Ok(())
    })?;
    for (index, field) in schema.fields().iter().enumerate() {
        if let Some(column) = table.column_mut(index)
            && is_numeric(field.data_type())
        {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    if !schema.fields().is_empty() {
        writeln!(out, "{table}")?;
    }
    if shown < total {
        writeln!(out, "{} ({shown} shown)", count(total, "row", "rows"))
    } else {
        writeln!(out, "{}", count(total, "row", "rows"))
    }
}

/// Quotes a CSV/TSV field when it holds the delimiter, a quote or a line
/// break (or starts or ends with a space, so it survives trimming readers).
fn quote_field(field: &str, delimiter: u8) -> String {
    let needs_quotes = field
        .bytes()
        .any(|b| b == delimiter || b == b'"' || b == b'\n' || b == b'\r')
        || field.starts_with(' ')
        || field.ends_with(' ');
    if needs_quotes {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

fn write_header(out: &mut dyn Write, schema: &SchemaRef, delimiter: u8) -> io::Result<()> {
    let separator = char::from(delimiter).to_string();
    let header: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| quote_field(f.name(), delimiter))
        .collect();
    writeln!(out, "{}", header.join(&separator))
}

fn write_delimited(out: &mut dyn Write, rows: &Rows<'_>, delimiter: u8) -> io::Result<()> {
    let separator = char::from(delimiter).to_string();
    rows.format(0..rows.total, "", |fields| {
        let fields: Vec<String> = fields.iter().map(|f| quote_field(f, delimiter)).collect();
        writeln!(out, "{}", fields.join(&separator))
    })
}

/// The JSON text of the value at `row` of `array`: numbers and booleans as
/// JSON literals (integers exactly), NULL as `null`, non-finite floats and
/// other types as strings.
fn json_value(array: &ArrayRef, row: usize) -> io::Result<String> {
    if array.is_null(row) {
        return Ok("null".to_string());
    }
    let value = match array.data_type() {
        DataType::Int64 => serde_json::Value::from(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt64 => serde_json::Value::from(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float64 => {
            let x = array.as_primitive::<Float64Type>().value(row);
            serde_json::Number::from_f64(x)
                .map_or_else(|| serde_json::Value::from(x.to_string()), Into::into)
        }
        DataType::Boolean => serde_json::Value::from(array.as_boolean().value(row)),
        // A HUGEINT: its digits are a JSON integer.
        DataType::Decimal128(_, 0) => {
            return Ok(array
                .as_primitive::<Decimal128Type>()
                .value(row)
                .to_string());
        }
        _ => {
            let options = FormatOptions::default().with_display_error(true);
            let formatter =
                ArrayFormatter::try_new(array.as_ref(), &options).map_err(io::Error::other)?;
            serde_json::Value::from(formatter.value(row).to_string())
        }
    };
    serde_json::to_string(&value).map_err(io::Error::other)
}

/// The rows of a JSON array, after `wrote_row` rows before them.
fn write_json(
    out: &mut dyn Write,
    schema: &SchemaRef,
    rows: &Rows<'_>,
    wrote_row: &mut bool,
) -> io::Result<()> {
    let keys = schema
        .fields()
        .iter()
        .map(|f| serde_json::to_string(f.name()).map_err(io::Error::other))
        .collect::<io::Result<Vec<String>>>()?;
    rows.arrays(|columns, row| {
        let fields = keys
            .iter()
            .zip(columns)
            .map(|(key, column)| Ok(format!("{key}:{}", json_value(column, row)?)))
            .collect::<io::Result<Vec<String>>>()?;
        if std::mem::replace(wrote_row, true) {
            writeln!(out, ",")?;
        }
        write!(out, "{{{}}}", fields.join(","))
    })
}

fn write_markdown(out: &mut dyn Write, schema: &SchemaRef, rows: &Rows<'_>) -> io::Result<()> {
    let escape = |s: &str| s.replace('|', "\\|").replace('\n', "<br>");
    let header: Vec<String> = schema.fields().iter().map(|f| escape(f.name())).collect();
    let mut body = Vec::with_capacity(rows.total);
    rows.format(0..rows.total, "NULL", |fields| {
        body.push(fields.iter().map(|f| escape(f)).collect::<Vec<_>>());
        Ok(())
    })?;
    let widths: Vec<usize> = header
        .iter()
        .enumerate()
        .map(|(c, name)| {
            body.iter()
                .filter_map(|row| row.get(c))
                .chain(std::iter::once(name))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
                .max(3)
        })
        .collect();
    let numeric: Vec<bool> = schema
        .fields()
        .iter()
        .map(|f| is_numeric(f.data_type()))
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .zip(&numeric)
            .map(|((cell, &width), &right)| {
                if right {
                    format!("{cell:>width$}")
                } else {
                    format!("{cell:<width$}")
                }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    writeln!(out, "{}", line(&header))?;
    let rule: Vec<String> = widths
        .iter()
        .zip(&numeric)
        .map(|(&width, &right)| {
            if right {
                format!("{}:", "-".repeat(width - 1))
            } else {
                "-".repeat(width)
            }
        })
        .collect();
    writeln!(out, "| {} |", rule.join(" | "))?;
    for row in &body {
        writeln!(out, "{}", line(row))?;
    }
    Ok(())
}

/// Line mode's rows, after `wrote_row` rows before them.
fn write_lines(
    out: &mut dyn Write,
    schema: &SchemaRef,
    rows: &Rows<'_>,
    wrote_row: &mut bool,
) -> io::Result<()> {
    let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    rows.format(0..rows.total, "NULL", |fields| {
        if std::mem::replace(wrote_row, true) {
            writeln!(out)?;
        }
        for (name, value) in names.iter().zip(&fields) {
            writeln!(out, "{name:>width$} = {value}")?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use arrow::array::{BooleanArray, Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    /// Writes the rows of a result (`schema` and `batches`) to `out`, as
    /// the shell does.
    fn write_rows(
        out: &mut dyn Write,
        schema: &SchemaRef,
        batches: &[RecordBatch],
        layout: &Layout,
    ) -> io::Result<()> {
        let mut writer = RowWriter::new(schema, layout);
        for batch in batches {
            writer.write(out, batch)?;
        }
        writer.finish(out)
    }

    fn sample() -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
            Field::new("x", DataType::Float64, true),
            Field::new("b", DataType::Boolean, true),
        ]));
        let batch = |k: Vec<Option<&str>>, n: Vec<Option<i64>>, x: Vec<Option<f64>>| {
            let len = k.len();
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(StringArray::from(k)) as ArrayRef,
                    Arc::new(Int64Array::from(n)),
                    Arc::new(Float64Array::from(x)),
                    Arc::new(BooleanArray::from(vec![Some(true); len])),
                ],
            )
            .unwrap()
        };
        let batches = vec![
            batch(
                vec![Some("a,b"), None],
                vec![Some(i64::MAX), Some(-1)],
                vec![Some(0.5), None],
            ),
            batch(vec![Some("say \"hi\"")], vec![None], vec![Some(f64::NAN)]),
        ];
        (schema, batches)
    }

    fn render(mode: Mode, max_rows: usize) -> String {
        let (schema, batches) = sample();
        let layout = Layout {
            mode,
            max_rows,
            width: None,
            to_terminal: false,
        };
        let mut out = Vec::new();
        write_rows(&mut out, &schema, &batches, &layout).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn streaming_modes_write_each_batch_as_it_arrives() {
        let (schema, batches) = sample();
        for (mode, after_first, at_end) in [
            (
                Mode::Csv,
                "k,n,x,b\n\"a,b\",9223372036854775807,0.5,true\n",
                "",
            ),
            (Mode::Json, "[{\"k\":\"a,b\"", "]\n"),
            (Mode::Line, "k = a,b\n", ""),
            (Mode::Table, "", "3 rows"),
        ] {
            let layout = Layout {
                mode,
                max_rows: 0,
                width: None,
                to_terminal: false,
            };
            let mut writer = RowWriter::new(&schema, &layout);
            let mut out = Vec::new();
            writer.write(&mut out, &batches[0]).unwrap();
            let first = String::from_utf8(out.clone()).unwrap();
            assert!(first.starts_with(after_first), "{mode:?}: {first}");
            assert_eq!(first.is_empty(), mode == Mode::Table, "{mode:?}: {first}");
            for batch in &batches[1..] {
                writer.write(&mut out, batch).unwrap();
            }
            writer.finish(&mut out).unwrap();
            let all = String::from_utf8(out).unwrap();
            assert!(all.contains(at_end), "{mode:?}: {all}");
            assert_eq!(all, render(mode, 0), "{mode:?}");
        }
    }

    #[test]
    fn csv_quotes_and_prints_nulls_empty() {
        assert_eq!(
            render(Mode::Csv, 0),
            "k,n,x,b\n\"a,b\",9223372036854775807,0.5,true\n,-1,,true\n\"say \"\"hi\"\"\",,NaN,true\n"
        );
    }

    #[test]
    fn tsv_separates_with_tabs() {
        assert_eq!(
            render(Mode::Tsv, 0),
            "k\tn\tx\tb\na,b\t9223372036854775807\t0.5\ttrue\n\t-1\t\ttrue\n\"say \"\"hi\"\"\"\t\tNaN\ttrue\n"
        );
    }

    #[test]
    fn json_keeps_large_integers_exact() {
        assert_eq!(
            render(Mode::Json, 0),
            "[{\"k\":\"a,b\",\"n\":9223372036854775807,\"x\":0.5,\"b\":true},\n\
             {\"k\":null,\"n\":-1,\"x\":null,\"b\":true},\n\
             {\"k\":\"say \\\"hi\\\"\",\"n\":null,\"x\":\"NaN\",\"b\":true}]\n"
        );
    }

    #[test]
    fn markdown_aligns_numbers_right() {
        assert_eq!(
            render(Mode::Markdown, 0),
            "| k        |                   n |    x | b    |\n\
             | -------- | ------------------: | ---: | ---- |\n\
             | a,b      | 9223372036854775807 |  0.5 | true |\n\
             | NULL     |                  -1 | NULL | true |\n\
             | say \"hi\" |                NULL |  NaN | true |\n"
        );
    }

    #[test]
    fn line_mode_lists_fields() {
        assert_eq!(
            render(Mode::Line, 0),
            "k = a,b\nn = 9223372036854775807\nx = 0.5\nb = true\n\n\
             k = NULL\nn = -1\nx = NULL\nb = true\n\n\
             k = say \"hi\"\nn = NULL\nx = NaN\nb = true\n"
        );
    }

    #[test]
    fn table_has_types_footer_and_elision() {
        let full = render(Mode::Table, 0);
        assert!(full.contains("9223372036854775807"), "{full}");
        assert!(full.contains("varchar"), "{full}");
        assert!(full.ends_with("3 rows\n"), "{full}");
        let cut = render(Mode::Table, 2);
        assert!(cut.contains('…'), "{cut}");
        assert!(cut.contains("a,b") && cut.contains("say \"hi\""), "{cut}");
        assert!(!cut.contains("-1"), "{cut}");
        assert!(cut.ends_with("3 rows (2 shown)\n"), "{cut}");
    }

    #[test]
    fn a_table_keeps_only_the_rows_it_shows() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let layout = Layout {
            mode: Mode::Table,
            max_rows: 7,
            width: None,
            to_terminal: false,
        };
        let mut writer = RowWriter::new(&schema, &layout);
        let mut out = Vec::new();
        for b in 0..50i64 {
            let values = Int64Array::from_iter_values(b * 100..(b + 1) * 100);
            let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(values)]).unwrap();
            writer.write(&mut out, &batch).unwrap();
            let kept = writer.kept.front_rows + writer.kept.back_rows;
            assert!(kept <= 7 + 100, "batch {b}: {kept} rows kept");
        }
        writer.finish(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let shown: Vec<i64> = text
            .lines()
            .filter_map(|l| l.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
            .collect();
        assert_eq!(shown, [0, 1, 2, 3, 4997, 4998, 4999], "{text}");
        assert!(text.ends_with("5000 rows (7 shown)\n"), "{text}");
    }

    #[test]
    fn a_short_table_is_shown_whole_from_its_kept_rows() {
        for max_rows in [1, 2, 3, 4, 5, 6, 40] {
            let (schema, batches) = sample();
            let layout = Layout {
                mode: Mode::Table,
                max_rows,
                width: None,
                to_terminal: false,
            };
            let mut out = Vec::new();
            write_rows(&mut out, &schema, &batches, &layout).unwrap();
            let text = String::from_utf8(out).unwrap();
            let shown = max_rows.min(3);
            assert_eq!(text.contains("a,b"), shown >= 1, "{max_rows}: {text}");
            assert_eq!(
                text.contains("say \"hi\""),
                shown >= 2,
                "{max_rows}: {text}"
            );
            assert_eq!(text.contains("-1"), shown >= 3, "{max_rows}: {text}");
        }
    }

    #[test]
    fn table_wraps_to_the_given_width() {
        let (schema, batches) = sample();
        let layout = Layout {
            mode: Mode::Table,
            max_rows: 0,
            width: Some(30),
            to_terminal: false,
        };
        let mut out = Vec::new();
        write_rows(&mut out, &schema, &batches, &layout).unwrap();
        let text = String::from_utf8(out).unwrap();
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 30, "{text}");
    }

    #[test]
    fn modes_round_trip_their_names() {
        for mode in Mode::ALL {
            assert_eq!(Mode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(Mode::from_name("CSV"), Some(Mode::Csv));
        assert_eq!(Mode::from_name("box"), None);
    }
}
