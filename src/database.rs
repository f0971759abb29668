//! The public API: a [`Database`] that executes statements.
//!
//! A database is opened in memory or on a directory, takes SQL and einsum
//! text, and returns each statement's result as Arrow record batches. It is
//! `Sync`: one database can serve queries from several threads; statements
//! that change the catalog take a write lock for their duration.

use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use crate::bound::{BoundStatement, Relation, RowStream};
use crate::catalog::Catalog;
use crate::emit::Dialect;
use crate::error::{Error, Result};
use crate::progress::{Interrupt, NoProgress, ProgressSink};
use crate::session::explain::emitted_sql;
use crate::session::{
    Profile, ProfileLog, QueryResult, Session, Settings, Statement, parse_script,
};
use crate::storage::Tensor;

/// An einsql database.
pub struct Database {
    catalog: RwLock<Catalog>,
    monitor: Monitor,
    settings: Settings,
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

    fn start_rows(&self, label: &str, total_rows: u64) {
        self.progress.start_rows(label, total_rows);
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

impl Database {
    /// A new, empty database kept in memory.
    pub fn open_in_memory() -> Database {
        Database::with_catalog(Catalog::in_memory())
    }

    /// The database in directory `dir`, created if it does not exist. Every
    /// change is written to the directory before the statement returns.
    /// Only the catalog is read here: a table is loaded from its files the
    /// first time a statement (or [`Database::table`]) uses it.
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
            settings: Settings::default(),
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
    pub fn settings(&self) -> &Settings {
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

    /// Executes every statement of `text` in order and hands out the rows
    /// of the last one as a stream of Arrow batches, each made when it is
    /// taken (see [`RowStream`] for what is computed before the first
    /// batch). Stops at the first statement that fails; the statements
    /// before it have taken effect. An interrupt request ends the stream
    /// with [`Error::Cancelled`] before its next batch.
    pub fn stream(&self, text: &str) -> Result<RowStream> {
        let session = self.session(None);
        let statements = parse_script(text)?;
        let Some((last, first)) = statements.split_last() else {
            return Ok(RowStream::from(QueryResult::message("No statement to run")));
        };
        for statement in first {
            session.execute(statement)?;
        }
        let interrupt = self.monitor.interrupt.clone();
        Ok(session
            .stream(last)?
            .until(move || interrupt.is_requested()))
    }

    /// Executes every statement of `text` in order and returns all results.
    ///
    /// `text` may mix SQL with einsum statements (`C[i,k] = SUM(j) A[i,j] *
    /// B[j,k];`, see [`crate::einsum`]). An einsum statement is run by the
    /// executor ([`crate::exec`]) and its result stored as the table it
    /// names, replacing a table of that name.
    pub fn execute_all(&self, text: &str) -> Result<Vec<QueryResult>> {
        self.execute_statements(&parse_script(text)?, None)
    }

    /// Executes every statement of `sql` in order, as [`Database::execute`],
    /// and returns the result of the last one with what running them took:
    /// the optimizer's plans with estimated and actual entries per step,
    /// and the optimization and execution times (see [`Profile`]).
    pub fn execute_profiled(&self, sql: &str) -> Result<(QueryResult, Profile)> {
        let log = ProfileLog::default();
        let start = Instant::now();
        let statements = parse_script(sql)?;
        let parse = start.elapsed();
        let mut results = self.execute_statements(&statements, Some(&log))?;
        let result = results
            .pop()
            .unwrap_or_else(|| QueryResult::message("No statement to run"));
        Ok((result, log.into_profile(parse)))
    }

    fn execute_statements(
        &self,
        statements: &[Statement],
        log: Option<&ProfileLog>,
    ) -> Result<Vec<QueryResult>> {
        let session = self.session(log);
        statements
            .iter()
            .map(|statement| session.execute(statement))
            .collect()
    }

    /// Stores `tensor` as a new table `name`, as `CREATE TABLE` does: an
    /// error if a table of that name exists; in a database on disk, the
    /// table is written to the directory before this returns. For loaders
    /// that build tensors directly (e.g. from [`crate::io::graph`]).
    pub fn create_table_from_tensor(&self, name: &str, tensor: Tensor) -> Result<()> {
        let session = self.session(None);
        session.run(BoundStatement::CreateTable {
            name: name.to_string(),
            source: Relation::Tensor(Arc::new(tensor)),
            if_not_exists: false,
            or_replace: false,
        })?;
        Ok(())
    }

    /// The optimized plan of the one statement `text` (a query or an
    /// einsum statement) as SQL for another engine (see [`crate::emit`]),
    /// with this database's tables and settings: what `EXPLAIN (FORMAT
    /// sql, DIALECT d) text` shows, as one string. Nothing is stored.
    ///
    /// Errors: a text that is not one statement; statements other than
    /// queries and tensor index notation
    /// ([`Error::NotSupported`](crate::Error::NotSupported)); binding
    /// errors; the emitter's.
    pub fn explain_sql(&self, text: &str, dialect: Dialect) -> Result<String> {
        let session = self.session(None);
        let statements = parse_script(text)?;
        let [statement] = statements.as_slice() else {
            return Err(Error::NotSupported(format!(
                "SQL for {} statements at once (one statement)",
                statements.len()
            )));
        };
        emitted_sql(&session, session.bind(statement)?, dialect)
    }

    /// The table called `name`, loaded from the database directory if no
    /// statement has used it yet. Errors: an unknown name; its data files
    /// are missing, unreadable or disagree with the catalog.
    pub fn table(&self, name: &str) -> Result<Arc<Tensor>> {
        self.read_catalog().get(name)
    }

    /// The user-visible columns of table `name` in their order (none for
    /// an unknown table); a table of a database directory is not loaded
    /// for them.
    pub fn column_names(&self, name: &str) -> Vec<String> {
        self.read_catalog().column_names(name)
    }

    /// The names of all tables, in alphabetical order.
    pub fn table_names(&self) -> Vec<String> {
        self.read_catalog().names().map(str::to_string).collect()
    }

    /// Whether changes are kept in a directory.
    pub fn is_persistent(&self) -> bool {
        self.read_catalog().is_persistent()
    }

    /// A session over this database's catalog and settings, recording
    /// evaluated programs in `log` if given.
    fn session<'a>(&'a self, log: Option<&'a ProfileLog>) -> Session<'a> {
        Session::new(&self.catalog, &self.settings, &self.monitor, log)
    }

    fn read_catalog(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        // Statements change the catalog only after their work has
        // succeeded, so a panic elsewhere cannot leave it half-changed.
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }
}
