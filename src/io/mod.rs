//! Reading and writing tensor files.
//!
//! One module per format: [`matrix_market`] (`.mtx`), [`tns`] (FROSTT
//! `.tns`), [`parquet`] and [`csv`]. Each has `read(path, &ReadOptions,
//! &dyn ProgressSink) -> Result<Tensor>` and `write(&Tensor, path)`. Readers
//! stream their input (memory proportional to the tensor, not the file),
//! report progress in bytes, and reject malformed input with an error that
//! names the file, the line and the problem. Writers go through
//! [`write_atomically`], so a crash never leaves a half-written file under
//! the target name.

pub mod csv;
pub mod matrix_market;
pub mod parquet;
mod text;
pub mod tns;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
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

/// Receives progress reports from long-running loads. The shell draws a
/// progress bar; the library default ignores them.
pub trait ProgressSink: Send + Sync {
    /// A load of `total_bytes` bytes (0 when unknown) called `label` begins.
    fn start(&self, label: &str, total_bytes: u64);
    /// Work that is not measured in bytes (a query) called `label` begins;
    /// it calls `advance(0)` now and then while it runs.
    fn start_query(&self, label: &str) {
        self.start(label, 0);
    }
    /// `bytes` more bytes were consumed.
    fn advance(&self, bytes: u64);
    /// The load ended (successfully or not).
    fn finish(&self);
    /// Whether the load should stop: readers check it between pieces of
    /// their input and then fail with [`Error::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// The label of a load's progress report: the name of the file read
/// (the whole path when it has no name).
pub(crate) fn progress_label(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// [`Error::Cancelled`] if `progress` asks the load to stop.
pub fn check_cancelled(progress: &dyn ProgressSink) -> Result<()> {
    if progress.cancelled() {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

/// A [`ProgressSink`] that ignores every report.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn start(&self, _label: &str, _total_bytes: u64) {}
    fn advance(&self, _bytes: u64) {}
    fn finish(&self) {}
}

/// Writes `path` atomically: `write` fills a temporary file in the same
/// directory, which is flushed, synced to disk and renamed over `path`; the
/// directory is synced last. A crash at any moment leaves either the old
/// file or the new one, never a mix.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let directory = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| Error::Invalid(format!("'{}' is not a file path", path.display())))?;
    // Unique per process and per call, so that two writers of one target
    // never share a temporary file.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let temporary = directory.join(format!(
        ".{}.tmp-{}-{}",
        file_name.to_string_lossy(),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|e| Error::io(&temporary, e))?;
        let mut writer = BufWriter::new(file);
        write(&mut writer)?;
        writer.flush().map_err(|e| Error::io(&temporary, e))?;
        let file = writer
            .into_inner()
            .map_err(|e| Error::io(&temporary, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&temporary, e))?;
        std::fs::rename(&temporary, path).map_err(|e| Error::io(path, e))?;
        sync_directory(&directory)
    })();
    if result.is_err() {
        // Best effort: the temporary file is garbage either way.
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Syncs a directory so that a rename inside it is durable.
pub fn sync_directory(directory: &Path) -> Result<()> {
    File::open(directory)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(directory, e))
}
