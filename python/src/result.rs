//! `QueryResult`: the rows of one statement, as Arrow record batches.
//!
//! The batches cross into Python through the Arrow C data interface as a
//! `pyarrow.Table` that shares their buffers. A stored table read with
//! `Database.table` carries einsql's field metadata (each column's role,
//! position and dimension size), which the Python side reads to build
//! scipy and numpy arrays of the right shape.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use arrow_pyarrow::{IntoPyArrow, Table};
use pyo3::prelude::*;

/// The result of one statement: rows (possibly none) and, for a statement
/// that changed the database, a message saying what changed.
#[pyclass(frozen, module = "einsql._einsql")]
pub struct QueryResult {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    message: Option<String>,
}

impl QueryResult {
    /// The Python object for an engine result.
    pub fn new(result: einsql::QueryResult) -> QueryResult {
        QueryResult {
            schema: result.schema,
            batches: result.batches,
            message: result.message,
        }
    }
}

#[pymethods]
impl QueryResult {
    /// What a statement without rows did, e.g. "Created table a (3
    /// entries)"; None for a query.
    #[getter]
    fn message(&self) -> Option<String> {
        self.message.clone()
    }

    /// The number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The rows as a `pyarrow.Table` sharing the result's buffers.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let table = Table::try_new(self.batches.clone(), SchemaRef::clone(&self.schema))
            .map_err(|e| crate::errors::ArrowError::new_err(e.to_string()))?;
        table.into_pyarrow(py)
    }
}
