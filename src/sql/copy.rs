//! `COPY table TO 'file' (FORMAT parquet|csv|mtx|tns)` and
//! `COPY (SELECT ...) TO 'file'`. Without `FORMAT`, the file extension
//! decides. Files are written atomically.

use std::path::PathBuf;

use sqlparser::ast::{CopyLegacyOption, CopyOption, CopySource, CopyTarget};

use super::Context;
use crate::bound::{BoundStatement, Relation};
use crate::error::{Error, Result};
use crate::io::FileFormat;

/// Binds a `COPY`.
pub fn copy(
    context: Context<'_>,
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy_options: &[CopyLegacyOption],
) -> Result<BoundStatement> {
    if !to {
        return Err(Error::NotSupported(
            "COPY ... FROM; use INSERT INTO t SELECT * FROM read_csv('file') (or read_parquet, read_mtx, read_tns)"
                .to_string(),
        ));
    }
    let CopyTarget::File { filename } = target else {
        return Err(Error::NotSupported(format!("COPY TO {target}")));
    };
    if let Some(option) = legacy_options.first() {
        return Err(Error::NotSupported(format!("the COPY option {option}")));
    }
    let mut format = None;
    for option in options {
        match option {
            CopyOption::Format(name) => format = Some(FileFormat::from_name(&name.value)?),
            other => {
                return Err(Error::NotSupported(format!(
                    "the COPY option {other} (only FORMAT)"
                )));
            }
        }
    }
    let path = PathBuf::from(filename);
    let format = match format {
        Some(format) => format,
        None => FileFormat::from_path(&path)?,
    };
    let (source, query) = match source {
        CopySource::Table {
            table_name,
            columns,
        } => {
            if !columns.is_empty() {
                return Err(Error::NotSupported("a column list in COPY".to_string()));
            }
            let name = super::table_name(table_name)?;
            context.catalog().get(&name)?;
            (Relation::Table(name), false)
        }
        CopySource::Query(query) => (super::query::bind(context, query)?, true),
    };
    Ok(BoundStatement::Copy {
        source,
        path,
        format,
        query,
    })
}
