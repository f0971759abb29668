//! CSV files ↔ tensors.
//!
//! [`read`] makes two passes over the file with arrow-csv: the first infers
//! the column types from every row, the second parses the rows batch by
//! batch into a [`TensorBuilder`](crate::storage::from_arrow::TensorBuilder)
//! (only the loaded columns). Roles follow
//! [`crate::storage::from_arrow`]: integer and string columns are keys,
//! floating-point and boolean columns values, unless the options list
//! `keys` or `values`. Dates and times are read as strings (string keys,
//! which sort chronologically in ISO format). A column named as a value but
//! holding text is parsed as numbers, so the error names the offending
//! line. Errors name the file and the 1-based line when arrow reports one.
//!
//! [`write`] writes the table as SQL shows it, with a header line. CSV keeps
//! no roles: integer value columns come back as keys unless `values` names
//! them.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use arrow::csv::reader::Format;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::error::ArrowError;

use crate::durable::write_atomically;
use crate::error::{Error, Result};
use crate::io::{ReadOptions, progress_label};
use crate::progress::ProgressSink;
use crate::storage::Tensor;
use crate::storage::from_arrow::{ColumnRoles, Origin, TensorBuilder, explicit_values};

/// Rows per batch while reading (at most).
const BATCH_ROWS: usize = 64 * 1024;

/// Fields per batch while reading (at most). arrow-csv reserves about 16
/// bytes per field of a batch up front, over all columns of the file, so a
/// wide file (a long first line) would otherwise reserve gigabytes.
const BATCH_FIELDS: usize = 1024 * 1024;

/// Reads the CSV file at `path` into a tensor.
///
/// Options: `header` (default true), `delimiter` (default `,`), `keys` and
/// `values`; `zero_based` is rejected.
pub fn read(path: &Path, options: &ReadOptions, progress: &dyn ProgressSink) -> Result<Tensor> {
    options.check(path, "CSV", &["keys", "values", "header", "delimiter"])?;
    let header = options.header.unwrap_or(true);
    let format = Format::default()
        .with_header(header)
        .with_delimiter(options.delimiter.unwrap_or(b','));
    let total_bytes = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    if total_bytes == 0 {
        return Err(Error::file_format(
            path,
            1,
            "the file is empty; expected a header line naming the columns",
        ));
    }
    progress.start(&progress_label(path), 2 * total_bytes);
    let result = read_rows(path, options, &format, header, progress);
    progress.finish();
    result
}

fn read_rows(
    path: &Path,
    options: &ReadOptions,
    format: &Format,
    header: bool,
    progress: &dyn ProgressSink,
) -> Result<Tensor> {
    let (inferred, _) = format
        .infer_schema(open(path, progress)?, None)
        .map_err(|e| csv_error(path, e))?;
    if inferred.fields().is_empty() {
        return Err(Error::file_format(path, 1, "the file has no columns"));
    }
    let roles = ColumnRoles {
        keys: options.keys.clone(),
        values: options.values.clone(),
    };
    let schema = Arc::new(adjust_types(
        &inferred,
        &explicit_values(&inferred, &roles)?,
    ));
    let origin = Origin::Csv {
        path: path.to_path_buf(),
        first_line: if header { 2 } else { 1 },
    };
    let (columns, mut tensor) = TensorBuilder::projected(&schema, &roles, origin)?;
    let reader = arrow::csv::ReaderBuilder::new(Arc::clone(&schema))
        .with_format(format.clone())
        .with_projection(columns)
        .with_batch_size(batch_rows(schema.fields().len()))
        .build(open(path, progress)?)
        .map_err(|e| csv_error(path, e))?;
    for batch in reader {
        crate::progress::check_cancelled(progress)?;
        tensor.push(&batch.map_err(|e| csv_error(path, e))?)?;
    }
    tensor.finish()
}

/// Rows per batch for a file of `columns` columns.
fn batch_rows(columns: usize) -> usize {
    (BATCH_FIELDS / columns.max(1)).clamp(1, BATCH_ROWS)
}

/// The types to parse with: dates and times as strings, and text columns
/// that are meant as values as numbers (so that the text is reported).
fn adjust_types(inferred: &Schema, values: &[bool]) -> Schema {
    let fields: Vec<Field> = inferred
        .fields()
        .iter()
        .zip(values)
        .map(|(field, &value)| {
            let ty = match field.data_type() {
                DataType::Utf8 if value => DataType::Float64,
                DataType::Date32
                | DataType::Date64
                | DataType::Time32(_)
                | DataType::Time64(_)
                | DataType::Timestamp(_, _) => DataType::Utf8,
                other => other.clone(),
            };
            field.as_ref().clone().with_data_type(ty)
        })
        .collect();
    Schema::new(fields)
}

/// Writes `tensor` to `path` as CSV with a header line, atomically.
pub fn write(tensor: &Tensor, path: &Path) -> Result<()> {
    let batch = super::exported_rows(tensor, path)?;
    write_atomically(path, |out| {
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(out);
        writer.write(&batch)?;
        Ok(())
    })
}

fn open<'a>(path: &Path, progress: &'a dyn ProgressSink) -> Result<Counting<'a>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(Counting {
        inner: file,
        progress,
    })
}

/// A file that reports the bytes read from it as progress.
struct Counting<'a> {
    inner: File,
    progress: &'a dyn ProgressSink,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.advance(n as u64);
        Ok(n)
    }
}

/// An arrow-csv error as a file error, at the line arrow names if any.
/// Record errors count lines from 1 (the header included); value parse
/// errors count them from 0, so their line is shifted and dropped from the
/// text.
fn csv_error(path: &Path, error: ArrowError) -> Error {
    let (message, shift) = match error {
        ArrowError::CsvError(m) => (m, 0),
        ArrowError::ParseError(m) => (m, 1),
        ArrowError::IoError(_, source) => return Error::io(path, source),
        other => (other.to_string(), 0),
    };
    match line_number(&message) {
        Some(line) if shift == 0 => Error::file_format(path, line, message),
        Some(line) => Error::file_format(
            path,
            line + shift,
            message.replacen(&format!(" at line {line}"), "", 1),
        ),
        None => Error::Unsupported {
            path: path.to_path_buf(),
            message,
        },
    }
}

/// The number after the word "line" in an arrow-csv message.
fn line_number(message: &str) -> Option<u64> {
    let (_, after) = message.split_once("line ")?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_line_numbers_in_messages() {
        assert_eq!(
            line_number("incorrect number of fields for line 3, expected 2 got 1"),
            Some(3)
        );
        assert_eq!(
            line_number(
                "Error while parsing value 'x' as type 'Int64' for column 0 at line 12. Row data: '[x]'"
            ),
            Some(12)
        );
        assert_eq!(line_number("no position here"), None);
    }

    #[test]
    fn wide_files_read_in_smaller_batches() {
        assert_eq!(batch_rows(3), BATCH_ROWS);
        assert_eq!(batch_rows(1000), BATCH_FIELDS / 1000);
        assert_eq!(batch_rows(10_000_000), 1);
        assert_eq!(batch_rows(0), BATCH_ROWS);
    }
}
