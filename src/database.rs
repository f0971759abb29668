//! The public API: a [`Database`] that executes statements.
//!
//! A database is opened in memory or on a directory, takes SQL and einsum
//! text, and returns each statement's result as Arrow record batches. It is
//! `Sync`: one database can serve queries from several threads; statements
//! that change the catalog take a write lock for their duration.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::error::Result;
use crate::io::{NoProgress, ProgressSink};
use crate::profile::{Profile, ProfileLog};
use crate::storage::Tensor;
use crate::storage::catalog::Catalog;
use crate::{einsum, sql};

/// An einsql database.
pub struct Database {
    catalog: RwLock<Catalog>,
    monitor: Monitor,
    settings: sql::Settings,
}

/// A flag that stops running statements, settable from any thread (or a
/// signal handler: requesting is one atomic store). The statement under way
/// stops at its next check with [`Error::Cancelled`](crate::Error::Cancelled),
/// changing nothing, and the statements after it in the same text do not
/// run. A request stays pending until [`Interrupt::clear`]: while it is
/// pending, every statement stops at its first check, so a request made
/// between two statements of a script still stops the script.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A new flag, not requested.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Asks the running statement to stop.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was requested since the flag was last cleared.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Withdraws a request.
    pub fn clear(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// What long-running work reports to: the user's progress sink and the
/// interrupt flag, which it polls through [`ProgressSink::cancelled`].
struct Monitor {
    progress: Arc<dyn ProgressSink>,
    interrupt: Interrupt,
}

impl ProgressSink for Monitor {
    fn start(&self, label: &str, total_bytes: u64) {
        self.progress.start(label, total_bytes);
    }

    fn start_query(&self, label: &str) {
        self.progress.start_query(label);
    }

    fn advance(&self, bytes: u64) {
        self.progress.advance(bytes);
    }

    fn finish(&self) {
        self.progress.finish();
    }

    fn cancelled(&self) -> bool {
        self.interrupt.is_requested()
    }
}

/// The result of one statement: rows (possibly none) and, for statements
/// that change the database, a message saying what changed.
#[derive(Clone, Debug)]
pub struct QueryResult {
    /// The schema of the rows.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
    /// What a statement without rows did, e.g. "Created table a (3 entries)".
    pub message: Option<String>,
}

impl QueryResult {
    /// A result with rows.
    pub fn rows(schema: SchemaRef, batches: Vec<RecordBatch>) -> QueryResult {
        QueryResult {
            schema,
            batches,
            message: None,
        }
    }

    /// A result without rows, with a message.
    pub fn message(message: impl Into<String>) -> QueryResult {
        QueryResult {
            schema: Arc::new(Schema::empty()),
            batches: Vec::new(),
            message: Some(message.into()),
        }
    }

    /// Rows of one non-null text column called `name`.
    pub fn text_column(name: &str, values: Vec<String>) -> Result<QueryResult> {
        let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, false)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(StringArray::from(values)) as ArrayRef],
        )?;
        Ok(QueryResult::rows(schema, vec![batch]))
    }

    /// The total number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

impl Database {
    /// A new, empty database kept in memory.
    pub fn open_in_memory() -> Database {
        Database::with_catalog(Catalog::in_memory())
    }

    /// The database in directory `dir`, created if it does not exist. Every
    /// change is written to the directory before the statement returns.
    pub fn open(dir: impl AsRef<Path>) -> Result<Database> {
        Ok(Database::with_catalog(Catalog::open(dir.as_ref())?))
    }

    fn with_catalog(catalog: Catalog) -> Database {
        Database {
            catalog: RwLock::new(catalog),
            monitor: Monitor {
                progress: Arc::new(NoProgress),
                interrupt: Interrupt::new(),
            },
            settings: sql::Settings::default(),
        }
    }

    /// Runs statements on `threads` worker threads (0: one per core, the
    /// default); the same as `SET threads = N`.
    pub fn set_threads(&self, threads: usize) {
        self.settings.set_threads(threads);
    }

    /// Stops a statement whose intermediates and results would take more
    /// than `bytes` (default: 60% of the physical memory); the same as
    /// `SET memory_limit = ...`.
    pub fn set_memory_limit(&self, bytes: u64) {
        self.settings.set_memory_limit(bytes);
    }

    /// The settings statements run with.
    pub fn settings(&self) -> &sql::Settings {
        &self.settings
    }

    /// Reports the progress of long loads to `progress` (the shell draws a
    /// progress bar).
    pub fn set_progress(&mut self, progress: Arc<dyn ProgressSink>) {
        self.monitor.progress = progress;
    }

    /// The flag that interrupts this database's running statements.
    pub fn interrupt(&self) -> Interrupt {
        self.monitor.interrupt.clone()
    }

    /// Makes `interrupt` the flag that stops this database's statements
    /// (the shell shares one flag with its Ctrl-C handler across the
    /// databases it opens).
    pub fn set_interrupt(&mut self, interrupt: Interrupt) {
        self.monitor.interrupt = interrupt;
    }

    /// Executes every statement of `sql` in order and returns the result of
    /// the last one. Stops at the first statement that fails; the statements
    /// before it have taken effect.
    pub fn execute(&self, sql: &str) -> Result<QueryResult> {
        let mut results = self.execute_all(sql)?;
        Ok(results
            .pop()
            .unwrap_or_else(|| QueryResult::message("No statement to run")))
    }

    /// Executes every statement of `text` in order and returns all results.
    ///
    /// `text` may mix SQL with einsum statements (`C[i,k] = SUM(j) A[i,j] *
    /// B[j,k];`, see [`crate::einsum`]). An einsum statement is run by the
    /// executor ([`crate::exec`]) and its result stored as the table it
    /// names, replacing a table of that name.
    pub fn execute_all(&self, text: &str) -> Result<Vec<QueryResult>> {
        self.execute_logged(text, None)
    }

    /// Executes every statement of `sql` in order, as [`Database::execute`],
    /// and returns the result of the last one with what running them took:
    /// the optimizer's plans with estimated and actual entries per step,
    /// and the optimization and execution times (see [`Profile`]).
    pub fn execute_profiled(&self, sql: &str) -> Result<(QueryResult, Profile)> {
        let log = ProfileLog::default();
        let mut results = self.execute_logged(sql, Some(&log))?;
        let result = results
            .pop()
            .unwrap_or_else(|| QueryResult::message("No statement to run"));
        Ok((result, Profile::from_runs(log.take())))
    }

    fn execute_logged(&self, text: &str, log: Option<&ProfileLog>) -> Result<Vec<QueryResult>> {
        let pieces = einsum::split_statements(text);
        if !pieces.iter().any(|p| p.is_einsum) {
            return sql::parse(text)?
                .iter()
                .map(|statement| self.execute_sql(statement, log))
                .collect();
        }
        let mut results = Vec::new();
        for piece in pieces {
            if piece.explain {
                let program = self.compile_einsum(text, piece.range)?;
                let mut lines =
                    crate::explain::program_lines(&program, &self.settings.optimizer_options())?;
                if piece.analyze {
                    let runs = ProfileLog::default();
                    self.settings
                        .evaluate(&program, &self.monitor, Some(&runs))?;
                    lines.push("Analyzed run:".to_string());
                    for run in runs.take() {
                        lines.extend(
                            crate::explain::run_lines(&run, true)
                                .into_iter()
                                .map(|l| format!("  {l}")),
                        );
                    }
                }
                results.push(crate::explain::plan_result(lines)?);
            } else if piece.is_einsum {
                crate::io::check_cancelled(&self.monitor)?;
                results.push(self.execute_einsum(text, piece.range, log)?);
            } else {
                for statement in sql::parse(&text[piece.range])? {
                    results.push(self.execute_sql(&statement, log)?);
                }
            }
        }
        Ok(results)
    }

    /// Runs one SQL statement, unless an interrupt is pending.
    fn execute_sql(
        &self,
        statement: &sqlparser::ast::Statement,
        log: Option<&ProfileLog>,
    ) -> Result<QueryResult> {
        crate::io::check_cancelled(&self.monitor)?;
        sql::execute(self.context(log), statement)
    }

    /// Runs the einsum statement at `text[range]` and stores its result, as
    /// an assignment: a table of the same name is replaced, and the message
    /// says so.
    fn execute_einsum(
        &self,
        text: &str,
        range: std::ops::Range<usize>,
        log: Option<&ProfileLog>,
    ) -> Result<QueryResult> {
        let program = self.compile_einsum(text, range)?;
        self.monitor
            .start_query(&format!("computing {}", program.queries[0].name));
        let evaluated = self.settings.evaluate(&program, &self.monitor, log);
        self.monitor.finish();
        let mut messages = Vec::new();
        for (name, tensor) in evaluated? {
            let entries = sql::entries(tensor.nnz());
            let mut catalog = self.catalog.write().unwrap_or_else(PoisonError::into_inner);
            let message = if catalog.contains(&name) {
                format!("Replaced table {name} ({entries})")
            } else {
                format!("Stored {name} ({entries})")
            };
            catalog.put(&name, tensor, true)?;
            messages.push(message);
        }
        let message = messages.join("; ");
        Ok(QueryResult::message(message))
    }

    /// The one-query program of the einsum statement at `text[range]`,
    /// bound to the current tables.
    fn compile_einsum(
        &self,
        text: &str,
        range: std::ops::Range<usize>,
    ) -> Result<crate::ir::Program> {
        let query = einsum::compile_statement(text, range, &self.read_catalog())?;
        Ok(crate::ir::Program {
            queries: vec![query],
        })
    }

    /// Stores `tensor` as a new table `name`, as `CREATE TABLE` does: an
    /// error if a table of that name exists; in a database on disk, the
    /// table is written to the directory before this returns. For loaders
    /// that build tensors directly (e.g. [`crate::subgraph`]).
    pub fn create_table_from_tensor(&self, name: &str, tensor: Tensor) -> Result<()> {
        let mut catalog = self.catalog.write().unwrap_or_else(PoisonError::into_inner);
        catalog.put(name, Arc::new(tensor), false)
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Result<Arc<Tensor>> {
        self.read_catalog().get(name)
    }

    /// The names of all tables, in alphabetical order.
    pub fn table_names(&self) -> Vec<String> {
        self.read_catalog().names().map(str::to_string).collect()
    }

    /// Whether changes are kept in a directory.
    pub fn is_persistent(&self) -> bool {
        self.read_catalog().is_persistent()
    }

    fn context<'a>(&'a self, log: Option<&'a ProfileLog>) -> sql::Context<'a> {
        sql::Context {
            catalog: &self.catalog,
            progress: &self.monitor,
            settings: &self.settings,
            log,
        }
    }

    fn read_catalog(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        // Statements change the catalog only after their work has
        // succeeded, so a panic elsewhere cannot leave it half-changed.
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }
}
