//! Parquet files ↔ tensors.
//!
//! [`read`] streams a Parquet file batch by batch into a
//! [`TensorBuilder`](crate::storage::from_arrow::TensorBuilder), reading only
//! the columns that are loaded and reporting progress in bytes (in proportion
//! to the rows read). Column roles come from the options, else from the
//! field metadata einsql writes, else from the column types (see
//! [`crate::storage::from_arrow`]).
//!
//! [`write`] stores the table as SQL shows it (strings decoded, rows of a
//! bag repeated) with zstd compression, and marks each field with its role,
//! the size of integer dimensions and the stored dimension order, so that
//! parquet → table → parquet preserves the columns, their order, types,
//! roles, sizes and values. The file is written atomically.
//!
//! The parquet crate panics on some damaged files instead of returning an
//! error, so its decoding (and only that) runs under [`decode`], which turns
//! such a panic into an error saying the file is damaged.

use std::any::Any;
use std::fmt::Display;
use std::fs::File;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::WriterProperties;

use crate::durable::write_atomically;
use crate::error::{Error, Result};
use crate::io::{ReadOptions, progress_label};
use crate::progress::ProgressSink;
use crate::storage::Tensor;
use crate::storage::from_arrow::{ColumnRoles, Origin, TensorBuilder, column_metadata};

/// Rows per batch while reading.
const BATCH_ROWS: usize = 64 * 1024;

/// Reads the Parquet file at `path` into a tensor.
///
/// Options: `keys` and `values` choose the column roles; the CSV and TNS
/// options are rejected.
pub fn read(path: &Path, options: &ReadOptions, progress: &dyn ProgressSink) -> Result<Tensor> {
    options.check(path, "Parquet", &["keys", "values"])?;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let total_bytes = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let builder = decode(path, || ParquetRecordBatchReaderBuilder::try_new(file))?;
    check_column_chunks(path, builder.metadata())?;
    let roles = ColumnRoles {
        keys: options.keys.clone(),
        values: options.values.clone(),
    };
    let (columns, mut tensor) = TensorBuilder::projected(
        builder.schema(),
        &roles,
        Origin::Parquet(path.to_path_buf()),
    )?;
    let total_rows = u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let mask = ProjectionMask::roots(builder.parquet_schema(), columns);
    let mut reader = decode(path, || {
        builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
    })?;

    progress.start(&progress_label(path), total_bytes);
    let result = (|| {
        let (mut rows, mut reported) = (0u64, 0u64);
        while let Some(batch) = decode(path, || reader.next().transpose())? {
            crate::progress::check_cancelled(progress)?;
            tensor.push(&batch)?;
            rows += batch.num_rows() as u64;
            let done = proportion(total_bytes, rows, total_rows);
            progress.advance(done.saturating_sub(reported));
            reported = reported.max(done);
        }
        progress.advance(total_bytes.saturating_sub(reported));
        tensor.finish()
    })();
    progress.finish();
    result
}

/// Writes `tensor` to `path` as Parquet (zstd), atomically.
pub fn write(tensor: &Tensor, path: &Path) -> Result<()> {
    let batch = super::exported_rows(tensor, path)?;
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(tensor.column_order())
        .map(|(field, &column)| {
            field
                .as_ref()
                .clone()
                .with_metadata(column_metadata(tensor, column))
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    write_batch(path, &batch.with_schema(schema)?)
}

/// Writes `batch` to `path` as Parquet (zstd), atomically, with its schema
/// (field metadata included) as is. Used by [`write`] and by the database
/// files of [`crate::catalog::persist`].
pub(crate) fn write_batch(path: &Path, batch: &RecordBatch) -> Result<()> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    write_atomically(path, |out| {
        let mut writer = ArrowWriter::try_new(out, batch.schema(), Some(properties))?;
        writer.write(batch)?;
        writer.close()?;
        Ok(())
    })
}

/// Runs the parquet crate's decoding of the file at `path`, turning its
/// errors and its panics into errors that name the file.
///
/// Why catch panics: the crate asserts instead of returning an error on some
/// damaged files (e.g. `ColumnChunkMetaData::byte_range` on a negative
/// offset), and a damaged file must not bring down the engine or the shell.
/// Only third-party decoding runs in here, never einsql code, and a decoder
/// that panicked is not used again (the load stops with the error). The
/// default panic hook still prints the crate's message on stderr.
fn decode<T, E: Display>(
    path: &Path,
    decoding: impl FnOnce() -> std::result::Result<T, E>,
) -> Result<T> {
    match std::panic::catch_unwind(AssertUnwindSafe(decoding)) {
        Ok(result) => result.map_err(|e| unreadable(path, e)),
        Err(panic) => Err(damaged(path, panic_message(panic.as_ref()))),
    }
}

/// The text of a panic payload.
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    match payload.downcast_ref::<&str>() {
        Some(message) => message,
        None => payload
            .downcast_ref::<String>()
            .map_or("no message", String::as_str),
    }
}

/// Rejects column chunks whose recorded start or length is negative, on
/// which the parquet crate panics: checking first gives the same error as
/// [`decode`] without a panic message on stderr.
fn check_column_chunks(path: &Path, metadata: &ParquetMetaData) -> Result<()> {
    for (group, row_group) in metadata.row_groups().iter().enumerate() {
        for column in row_group.columns() {
            let start = column
                .dictionary_page_offset()
                .unwrap_or_else(|| column.data_page_offset());
            if start < 0 || column.compressed_size() < 0 {
                return Err(damaged(
                    path,
                    format!(
                        "column '{}' of row group {} has a negative offset ({start}) or length ({})",
                        column.column_path().string(),
                        group + 1,
                        column.compressed_size()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn unreadable(path: &Path, error: impl Display) -> Error {
    Error::Unsupported {
        path: path.to_path_buf(),
        message: format!("not a readable Parquet file: {error}"),
    }
}

fn damaged(path: &Path, problem: impl Display) -> Error {
    Error::Unsupported {
        path: path.to_path_buf(),
        message: format!("the Parquet file is damaged: {problem}"),
    }
}

/// `total * part / whole`, without overflow; `total` when `whole` is 0.
fn proportion(total: u64, part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return total;
    }
    (u128::from(total) * u128::from(part.min(whole)) / u128::from(whole)) as u64
}
