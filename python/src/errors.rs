//! The Python exception classes of einsql, one per variant of
//! [`einsql::Error`], all derived from `einsql.Error`.
//!
//! An error keeps the engine's message. A positioned error (a statement's
//! line and column with a caret under the problem) is raised as the class
//! of the problem it wraps, with `line` and `column` attributes set.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    einsql,
    Error,
    PyException,
    "Base class of every einsql error."
);

/// Declares the subclasses of `Error` and `register`, which adds them all
/// to the module.
macro_rules! exceptions {
    ($($name:ident: $doc:literal,)*) => {
        $(create_exception!(einsql, $name, Error, $doc);)*

        /// Adds the exception classes to the module.
        pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
            let py = module.py();
            module.add("Error", py.get_type::<Error>())?;
            $(module.add(stringify!($name), py.get_type::<$name>())?;)*
            Ok(())
        }
    };
}

exceptions! {
    IoError: "An operating-system error while reading or writing a file.",
    FileFormatError: "A malformed input file (the message names the file and line).",
    UnsupportedFileError: "A well-formed file whose content einsql cannot represent.",
    ParseError: "SQL or einsum text that does not parse (einsql's `Syntax` error).",
    NotSupportedError: "A construct that einsql understands but does not support.",
    UnknownNameError: "A table or column that does not exist (with the closest known name).",
    TableExistsError: "A table that already exists.",
    IndexExistsError: "An index name that is already declared in the database.",
    TypeMismatchError: "Values or columns of a type that does not fit where they are used.",
    InvalidInputError: "A well-formed but invalid statement or input (e.g. a negative coordinate).",
    CancelledError: "A statement stopped by Connection.interrupt() from another thread.",
    IntegerOverflowError: "Exact integer arithmetic that does not fit in 64 bits.",
    OutOfMemoryError: "A statement whose intermediates would exceed the memory limit.",
    InternalError: "A broken invariant inside einsql: a bug, not a problem with the input.",
    CatalogError: "A database directory whose catalog cannot be read.",
    ArrowError: "An error reported by the Arrow library.",
    ParquetError: "An error reported by the Parquet library.",
}

/// The Python exception for `error`, with the engine's message.
pub fn to_py(py: Python<'_>, error: einsql::Error) -> PyErr {
    let message = error.to_string();
    let mut inner = &error;
    let mut position = None;
    while let einsql::Error::Positioned {
        line,
        column,
        source,
        ..
    } = inner
    {
        position.get_or_insert((*line, *column));
        inner = source;
    }
    use einsql::Error as E;
    let exception = match inner {
        E::Io { .. } => IoError::new_err(message),
        E::FileFormat { .. } => FileFormatError::new_err(message),
        E::Unsupported { .. } => UnsupportedFileError::new_err(message),
        E::Syntax(_) => ParseError::new_err(message),
        E::NotSupported(_) => NotSupportedError::new_err(message),
        E::UnknownName { .. } => UnknownNameError::new_err(message),
        E::TableExists(_) => TableExistsError::new_err(message),
        E::IndexExists(..) => IndexExistsError::new_err(message),
        E::Type(_) => TypeMismatchError::new_err(message),
        E::Invalid(_) => InvalidInputError::new_err(message),
        E::Cancelled => CancelledError::new_err(message),
        E::Overflow(_) => IntegerOverflowError::new_err(message),
        E::OutOfMemory(_) | E::StepOutgrown(_) => OutOfMemoryError::new_err(message),
        // The session plans again past a nest's guard: one never reaches a caller.
        E::Internal(_) | E::NestOutgrown(_) => InternalError::new_err(message),
        E::Catalog { .. } => CatalogError::new_err(message),
        E::Arrow(_) => ArrowError::new_err(message),
        E::Parquet(_) => ParquetError::new_err(message),
        E::Positioned { .. } => Error::new_err(message),
    };
    if let Some((line, column)) = position {
        let value = exception.value(py);
        if let Err(failure) = value
            .setattr("line", line)
            .and_then(|()| value.setattr("column", column))
        {
            return failure;
        }
    }
    exception
}
