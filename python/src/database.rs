//! `Database`: one einsql database seen from Python.
//!
//! Every statement runs on a worker thread while the calling thread, with
//! the interpreter released, waits for it and checks for signals every few
//! milliseconds. A signal handler that raises (Ctrl-C's KeyboardInterrupt)
//! requests the database's [`Interrupt`]: the statement stops at its next
//! check, changing nothing, and the exception is raised once it has
//! stopped, so the connection stays usable. Other Python threads run
//! meanwhile.
//!
//! Tables are registered from anything that exports an Arrow stream
//! (`__arrow_c_stream__`) or a record batch (`__arrow_c_array__`); a value
//! column of a sorted, duplicate-free single batch is stored without a
//! copy (see [`einsql::storage::from_arrow`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::ffi_stream::RecordBatchStreamReader;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::FromPyArrow;
use einsql::storage::Tensor;
use einsql::storage::from_arrow::{ColumnRoles, column_metadata, tensor_from_batches};
use einsql::{Interrupt, QueryResult as EngineResult};
use pyo3::exceptions::{PyOSError, PyTypeError};
use pyo3::panic::PanicException;
use pyo3::prelude::*;

use crate::errors::{ArrowError, to_py};
use crate::result::QueryResult;

/// How often the thread waiting for a statement checks for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// The stack of the thread a statement runs on: a main thread's, as the
/// engine has when embedded in a program.
const STACK_BYTES: usize = 8 << 20;

/// An einsql database, in memory or in a directory.
#[pyclass(frozen, module = "einsql._einsql")]
pub struct Database {
    engine: einsql::Database,
}

#[pymethods]
impl Database {
    /// A new in-memory database, or the database in directory `path`
    /// (created if it does not exist).
    #[new]
    #[pyo3(signature = (path = None))]
    fn new(py: Python<'_>, path: Option<PathBuf>) -> PyResult<Database> {
        let engine = match path {
            None => einsql::Database::open_in_memory(),
            Some(dir) => py
                .detach(|| einsql::Database::open(dir))
                .map_err(|e| to_py(py, e))?,
        };
        Ok(Database { engine })
    }

    /// Runs every statement of `text` (SQL and einsum) and returns the last
    /// one's result.
    fn execute(&self, py: Python<'_>, text: &str) -> PyResult<QueryResult> {
        run(py, &self.engine, |db| db.execute(text)).map(QueryResult::new)
    }

    /// Stores the rows of `data` (an object with `__arrow_c_stream__` or
    /// `__arrow_c_array__`) as table `name`, replacing a table of that
    /// name; `keys` and `values` choose the columns' roles. Returns what
    /// changed, e.g. "Registered table a (3 entries)".
    #[pyo3(signature = (name, data, keys = None, values = None))]
    fn register(
        &self,
        py: Python<'_>,
        name: &str,
        data: &Bound<'_, PyAny>,
        keys: Option<Vec<String>>,
        values: Option<Vec<String>>,
    ) -> PyResult<String> {
        let (schema, batches) = read_arrow(data)?;
        let roles = ColumnRoles { keys, values };
        run(py, &self.engine, |db| {
            let tensor = tensor_from_batches(&schema, &batches, &roles)?;
            replace_table(db, name, tensor)
        })
    }

    /// The stored rows of table `name` in declaration order, sharing the
    /// table's buffers, with einsql's metadata on every field: its role
    /// (`einsql:role`), its position among the keys or values
    /// (`einsql:position`) and the size of an integer dimension
    /// (`einsql:size`).
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<QueryResult> {
        let tensor = self.engine.table(name).map_err(|e| to_py(py, e))?;
        let batch = tensor.to_record_batch().map_err(|e| to_py(py, e))?;
        let fields: Vec<Field> = tensor
            .column_order()
            .iter()
            .zip(batch.schema().fields())
            .map(|(&column, field)| {
                field
                    .as_ref()
                    .clone()
                    .with_metadata(column_metadata(&tensor, column))
            })
            .collect();
        let schema: SchemaRef = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(SchemaRef::clone(&schema), batch.columns().to_vec())
            .map_err(|e| ArrowError::new_err(e.to_string()))?;
        Ok(QueryResult::new(EngineResult::rows(schema, vec![batch])))
    }

    /// The names of all tables, in alphabetical order.
    fn table_names(&self) -> Vec<String> {
        self.engine.table_names()
    }

    /// Whether changes are kept in a directory.
    #[getter]
    fn persistent(&self) -> bool {
        self.engine.is_persistent()
    }

    /// Stops the statements running on this database (from another
    /// thread); they raise `CancelledError`.
    fn interrupt(&self) {
        self.engine.interrupt().request();
    }
}

/// The schema and batches of an Arrow stream or record batch.
fn read_arrow(data: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    if data.hasattr("__arrow_c_stream__")? {
        let reader = RecordBatchStreamReader::from_pyarrow_bound(data)?;
        let schema = reader.schema();
        let batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ArrowError::new_err(e.to_string()))?;
        Ok((schema, batches))
    } else if data.hasattr("__arrow_c_array__")? {
        let batch = RecordBatch::from_pyarrow_bound(data)?;
        Ok((batch.schema(), vec![batch]))
    } else {
        Err(PyTypeError::new_err(format!(
            "expected Arrow data (an object with __arrow_c_stream__ or __arrow_c_array__), \
             got {}",
            data.get_type().name()?
        )))
    }
}

/// Stores `tensor` as table `name`, dropping a table of that name first.
fn replace_table(db: &einsql::Database, name: &str, tensor: Tensor) -> einsql::Result<String> {
    let entries = tensor.nnz();
    // By name: a table of a database directory is not loaded to be replaced.
    let replaced = db
        .table_names()
        .iter()
        .any(|table| table.eq_ignore_ascii_case(name));
    if replaced {
        db.execute(&format!("DROP TABLE {}", quote_identifier(name)))?;
    }
    db.create_table_from_tensor(name, tensor)?;
    let verb = if replaced { "Replaced" } else { "Registered" };
    let plural = if entries == 1 { "entry" } else { "entries" };
    Ok(format!("{verb} table {name} ({entries} {plural})"))
}

/// `name` as a double-quoted SQL identifier.
fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// How a statement run by [`run`] ended.
enum Outcome<T> {
    /// It finished, with this result.
    Finished(einsql::Result<T>),
    /// A signal handler raised this exception while it ran; it was
    /// stopped.
    Signalled(PyErr),
    /// It panicked, with this message.
    Panicked(String),
    /// Its thread could not be started.
    NotStarted(std::io::Error),
}

/// Runs `work` on `db` on a worker thread, with the interpreter released,
/// and stops it when a signal handler raises (see the module
/// documentation).
fn run<T: Send>(
    py: Python<'_>,
    db: &einsql::Database,
    work: impl FnOnce(&einsql::Database) -> einsql::Result<T> + Send,
) -> PyResult<T> {
    let interrupt = db.interrupt();
    interrupt.clear();
    let outcome = py.detach(|| watch(db, &interrupt, work));
    interrupt.clear();
    match outcome {
        Outcome::Finished(result) => result.map_err(|e| to_py(py, e)),
        Outcome::Signalled(error) => Err(error),
        Outcome::Panicked(message) => Err(PanicException::new_err(message)),
        Outcome::NotStarted(error) => Err(PyOSError::new_err(format!(
            "cannot start a thread for the statement: {error}"
        ))),
    }
}

/// [`run`] without the interpreter: starts the worker and waits for it,
/// checking for signals every [`SIGNAL_POLL`].
fn watch<T: Send>(
    db: &einsql::Database,
    interrupt: &Interrupt,
    work: impl FnOnce(&einsql::Database) -> einsql::Result<T> + Send,
) -> Outcome<T> {
    std::thread::scope(|scope| {
        // The worker drops `finished` when it ends, however it ends, which
        // wakes the waiting thread at once.
        let (finished, ended) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("einsql statement".to_string())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, move || {
                let _finished = finished;
                work(db)
            });
        let worker = match spawned {
            Ok(worker) => worker,
            Err(error) => return Outcome::NotStarted(error),
        };
        let mut signalled = None;
        while let Err(RecvTimeoutError::Timeout) = ended.recv_timeout(SIGNAL_POLL) {
            if signalled.is_none()
                && let Err(error) = Python::attach(|py| py.check_signals())
            {
                interrupt.request();
                signalled = Some(error);
            }
        }
        match (signalled, worker.join()) {
            (Some(error), _) => Outcome::Signalled(error),
            (None, Ok(result)) => Outcome::Finished(result),
            (None, Err(panic)) => Outcome::Panicked(panic_message(panic.as_ref())),
        }
    })
}

/// The message of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        message.to_string()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "the statement panicked".to_string()
    }
}
