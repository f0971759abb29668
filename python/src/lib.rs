//! Python bindings of einsql: the native module `einsql._einsql`.
//!
//! The Python package `einsql` (in `python/einsql/`) wraps this module with
//! the user-facing API; the native side is kept small:
//!
//! - [`database`]: `Database`, one engine database. Statements run on a
//!   worker thread with the interpreter released while the calling thread
//!   watches for Ctrl-C; tables are registered from Arrow data.
//! - [`result`]: `QueryResult`, a statement's rows, handed to Python as a
//!   `pyarrow.Table` through the Arrow C data interface (no copy).
//! - [`errors`]: one Python exception class per [`einsql::Error`] variant.

mod database;
mod errors;
mod result;

use pyo3::prelude::*;

/// The native part of the `einsql` package.
#[pymodule]
fn _einsql(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<database::Database>()?;
    module.add_class::<result::QueryResult>()?;
    errors::register(module)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
