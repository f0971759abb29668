//! Reading and writing tensor files.
//!
//! One module per format: [`matrix_market`] (`.mtx`), [`tns`] (FROSTT
//! `.tns`), [`parquet`] and [`csv`], and [`graph`] for the labelled graph
//! files of subgraph counting. Each has `read(path, &ReadOptions,
//! &dyn ProgressSink) -> Result<Tensor>` and `write(&Tensor, path)`. Readers
//! stream their input (memory proportional to the tensor, not the file),
//! report progress in bytes, and reject malformed input with an error that
//! names the file, the line and the problem. Writers go through
//! [`write_atomically`](crate::durable::write_atomically), so a crash never
//! leaves a half-written file under the target name.

pub mod csv;
pub mod graph;
pub mod matrix_market;
pub mod parquet;
mod text;
pub mod tns;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::progress::ProgressSink;
use crate::storage::Tensor;

/// Options that a loader accepts (from `read_mtx(..., keys = [...])` and
/// the like). Each reader rejects options that mean nothing for its format.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadOptions {
    /// Matrix Market and TNS: names for the dimensions, in file order.
    /// Parquet and CSV: the columns that are keys (dimensions).
    pub keys: Option<Vec<String>>,
    /// Matrix Market and TNS: the name of the value column (one name).
    /// Parquet and CSV: the columns that are values (annotations).
    pub values: Option<Vec<String>>,
    /// TNS: the file uses 0-based coordinates.
    pub zero_based: bool,
    /// CSV: whether the first line holds column names (default: yes).
    pub header: Option<bool>,
    /// CSV: the field delimiter (default: `,`).
    pub delimiter: Option<u8>,
}

impl ReadOptions {
    /// Rejects the options that mean nothing for a file format: every option
    /// given must be in `allowed` (option names as SQL spells them: `keys`,
    /// `values`, `zero_based`, `header`, `delimiter`). `format` names the
    /// format in the message, e.g. "Parquet".
    pub(crate) fn check(&self, path: &Path, format: &str, allowed: &[&str]) -> Result<()> {
        let given = [
            ("keys", self.keys.is_some()),
            ("values", self.values.is_some()),
            ("zero_based", self.zero_based),
            ("header", self.header.is_some()),
            ("delimiter", self.delimiter.is_some()),
        ];
        match given
            .iter()
            .find(|&&(name, is_given)| is_given && !allowed.contains(&name))
        {
            Some((name, _)) => Err(Error::Invalid(format!(
                "'{}': the option '{name}' does not apply to {format} files (it applies to: {})",
                path.display(),
                allowed.join(", ")
            ))),
            None => Ok(()),
        }
    }
}

/// A file format, chosen by the user or by the file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// Matrix Market `.mtx`.
    MatrixMarket,
    /// FROSTT `.tns`.
    Tns,
    /// Apache Parquet.
    Parquet,
    /// Comma-separated values.
    Csv,
}

impl FileFormat {
    /// The format named `name` (`mtx`, `tns`, `parquet`, `csv`).
    pub fn from_name(name: &str) -> Result<FileFormat> {
        match name.to_ascii_lowercase().as_str() {
            "mtx" | "matrixmarket" | "matrix_market" => Ok(FileFormat::MatrixMarket),
            "tns" | "frostt" => Ok(FileFormat::Tns),
            "parquet" => Ok(FileFormat::Parquet),
            "csv" => Ok(FileFormat::Csv),
            other => Err(Error::unknown(
                "File format",
                other,
                ["mtx", "tns", "parquet", "csv"],
            )),
        }
    }

    /// The format of `path`, from its extension.
    pub fn from_path(path: &Path) -> Result<FileFormat> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        FileFormat::from_name(extension).map_err(|_| {
            Error::Invalid(format!(
                "cannot tell the format of '{}' from its extension; use .mtx, .tns, .parquet or .csv, or name the format",
                path.display()
            ))
        })
    }
}

impl FileFormat {
    /// Reads `path` in this format.
    pub fn read(
        self,
        path: &Path,
        options: &ReadOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Tensor> {
        match self {
            FileFormat::MatrixMarket => matrix_market::read(path, options, progress),
            FileFormat::Tns => tns::read(path, options, progress),
            FileFormat::Parquet => parquet::read(path, options, progress),
            FileFormat::Csv => csv::read(path, options, progress),
        }
    }

    /// Writes `tensor` to `path` in this format, atomically.
    pub fn write(self, tensor: &Tensor, path: &Path) -> Result<()> {
        match self {
            FileFormat::MatrixMarket => matrix_market::write(tensor, path),
            FileFormat::Tns => tns::write(tensor, path),
            FileFormat::Parquet => parquet::write(tensor, path),
            FileFormat::Csv => csv::write(tensor, path),
        }
    }
}

/// A file to read as a table: what `read_csv('f.csv', ...)` and the other
/// table functions name.
#[derive(Clone, Debug, PartialEq)]
pub struct FileLoad {
    /// The file's format.
    pub format: FileFormat,
    /// The file.
    pub path: PathBuf,
    /// How to read it.
    pub options: ReadOptions,
}

impl FileLoad {
    /// Reads the file.
    pub fn read(&self, progress: &dyn ProgressSink) -> Result<Tensor> {
        self.format.read(&self.path, &self.options, progress)
    }
}

/// The rows of `tensor` as SQL shows them, for a writer of `path`; a table
/// without columns cannot be written.
fn exported_rows(tensor: &Tensor, path: &Path) -> Result<arrow::array::RecordBatch> {
    let batch = tensor.to_record_batch()?;
    if batch.num_columns() == 0 {
        return Err(Error::Invalid(format!(
            "cannot write '{}': the table has no columns",
            path.display()
        )));
    }
    Ok(batch)
}

/// The label of a load's progress report: the name of the file read
/// (the whole path when it has no name).
pub(crate) fn progress_label(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}
