//! The session: executes statements, SQL and tensor index notation alike.
//!
//! A script is split and parsed once into [`Statement`]s ([`statement`]).
//! Each statement is bound by its front-end ([`crate::sql::bind`],
//! [`crate::einsum::Parsed::bind`]) into a
//! [`BoundStatement`](crate::bound::BoundStatement), which
//! [`Session::run`] carries out: it evaluates query programs through the
//! optimizer and the executor (or the reference evaluator, as the
//! [`Settings`] say), is the only writer of the catalog (it computes a
//! table's statistics before storing it, with their working memory charged
//! to `memory_limit`, so that the statement that stores a table pays for
//! them and no query does), and formats the message that says what a
//! statement changed. [`explain`] is the one
//! `EXPLAIN` and `EXPLAIN ANALYZE` of both languages; [`profile`] records
//! what each evaluated program took.

pub mod describe;
pub mod explain;
pub mod profile;
pub mod result;
pub mod settings;
pub mod statement;

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

pub use profile::{Profile, ProfileLog, ProgramRun, Replan, ReplanCause};
pub use result::QueryResult;
pub use settings::Settings;
pub use statement::{ExplainFormat, Statement, parse_script};

use crate::bound::{BATCH_ROWS, BoundStatement, Relation, RowStream, results_bytes};
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::exec::{FirstRows, MemoryBudget};
use crate::ir::Program;
use crate::progress::{ProgressSink, check_cancelled};
use crate::sql;
use crate::storage::Tensor;
use crate::storage::fibertree::DeclaredIndex;
use crate::storage::statistics::Statistics;
use crate::tpch::{Dbgen, Table};

/// What statements run against: the database's catalog and settings, where
/// progress goes, and (for `EXPLAIN ANALYZE` and profiles) where evaluated
/// programs are recorded.
#[derive(Clone, Copy)]
pub struct Session<'a> {
    catalog: &'a RwLock<Catalog>,
    settings: &'a Settings,
    progress: &'a dyn ProgressSink,
    log: Option<&'a ProfileLog>,
}

impl<'a> Session<'a> {
    /// A session over `catalog` with `settings`, reporting to `progress`
    /// (which also answers whether to stop) and recording evaluated
    /// programs in `log` if given.
    pub fn new(
        catalog: &'a RwLock<Catalog>,
        settings: &'a Settings,
        progress: &'a dyn ProgressSink,
        log: Option<&'a ProfileLog>,
    ) -> Session<'a> {
        Session {
            catalog,
            settings,
            progress,
            log,
        }
    }

    /// The same session, recording evaluated programs in `log`.
    fn logged<'b>(&self, log: &'b ProfileLog) -> Session<'b>
    where
        'a: 'b,
    {
        Session {
            log: Some(log),
            ..*self
        }
    }

    /// Binds and runs one statement, unless a stop was requested.
    pub fn execute(&self, statement: &Statement) -> Result<QueryResult> {
        check_cancelled(self.progress)?;
        match statement {
            Statement::Explain {
                analyze,
                format,
                statement,
            } => match format {
                ExplainFormat::Text if *analyze => {
                    // Binding evaluates the WITH tables and sub-queries:
                    // their runs are shown with the statement's own.
                    let log = ProfileLog::default();
                    let bound = self.logged(&log).bind(statement)?;
                    explain::explain(self, bound, Some(log.into_profile(Duration::ZERO)))
                }
                ExplainFormat::Text => explain::explain(self, self.bind(statement)?, None),
                ExplainFormat::Sql(dialect) => {
                    let sql = explain::emitted_sql(self, self.bind(statement)?, *dialect)?;
                    QueryResult::text_column("sql", sql.lines().map(str::to_string).collect())
                }
            },
            other => self.run(self.bind(other)?),
        }
    }

    /// Binds a statement against the current catalog (timed in the
    /// session's profile log, if it has one).
    pub fn bind(&self, statement: &Statement) -> Result<BoundStatement> {
        match self.log {
            Some(log) => log.bind(|| self.bind_unlogged(statement)),
            None => self.bind_unlogged(statement),
        }
    }

    fn bind_unlogged(&self, statement: &Statement) -> Result<BoundStatement> {
        match statement {
            Statement::Sql(statement) => sql::bind(
                sql::Context::new(self.catalog, self.progress, self),
                statement,
            ),
            Statement::Einsum(parsed) => Ok(BoundStatement::Assign(Program {
                queries: vec![parsed.bind(&self.read_catalog())?],
            })),
            Statement::Explain { .. } => Err(Error::NotSupported(
                "EXPLAIN of an EXPLAIN statement".to_string(),
            )),
        }
    }

    /// Carries out a bound statement.
    pub fn run(&self, bound: BoundStatement) -> Result<QueryResult> {
        match bound {
            BoundStatement::Query(relation) => self.rows(&relation),
            BoundStatement::Assign(program) => self.assign(&program),
            BoundStatement::CreateTable {
                name,
                source,
                if_not_exists,
                or_replace,
            } => {
                let memory = self.budget();
                let tensor = self.tensor(source, &memory)?;
                table_statistics(&tensor, &memory)?;
                // Check and store under one lock, so that a concurrent
                // CREATE cannot slip in between.
                let mut catalog = self.write_catalog();
                if if_not_exists && catalog.contains(&name) {
                    return Ok(QueryResult::message(format!(
                        "Table {name} already exists; nothing done"
                    )));
                }
                let message = format!("Created table {name} ({})", entries(tensor.nnz()));
                catalog.put(&name, tensor, or_replace)?;
                Ok(QueryResult::message(message))
            }
            BoundStatement::Insert { table, rows } => {
                // Hold the write lock from reading the table to storing the
                // new one, so that concurrent inserts do not lose rows.
                let mut catalog = self.write_catalog();
                let old = catalog.get(&table)?;
                let tensor = rows.append(old.as_ref())?;
                let memory = self.budget();
                for index in old.declared_indexes() {
                    memory.reserve(
                        index.layout.estimated_bytes(&tensor),
                        &format!("for rebuilding index {}", index.name),
                    )?;
                }
                table_statistics(&tensor, &memory)?;
                catalog.rewrite(&table, Arc::new(tensor))?;
                Ok(QueryResult::message(format!(
                    "Inserted {} into {table}",
                    count(rows.rows(), "row", "rows")
                )))
            }
            BoundStatement::Drop { names, if_exists } => self.drop(&names, if_exists),
            BoundStatement::CreateIndex {
                table,
                index,
                if_not_exists,
            } => self.create_index(&table, index, if_not_exists),
            BoundStatement::DropIndex { names, if_exists } => self.drop_index(&names, if_exists),
            BoundStatement::Copy {
                source,
                path,
                format,
                query,
            } => {
                let what = match (&source, query) {
                    (Relation::Table(name), false) => name.clone(),
                    _ => "query result".to_string(),
                };
                let memory = self.budget();
                let tensor = self.tensor(source, &memory)?;
                memory.reserve(export_bytes(&tensor), "for writing its rows")?;
                format.write(&tensor, &path)?;
                Ok(QueryResult::message(format!(
                    "Wrote {what} ({}) to {}",
                    entries(tensor.nnz()),
                    path.display()
                )))
            }
            BoundStatement::Dbgen(dbgen) => self.dbgen(&dbgen),
            BoundStatement::ShowTables => describe::show_tables(&self.read_catalog()),
            BoundStatement::Describe(name) => describe::describe(&self.read_catalog(), &name),
            BoundStatement::Set { name, value } => {
                Ok(QueryResult::message(self.settings.set(&name, value)?))
            }
            BoundStatement::Reset(name) => {
                Ok(QueryResult::message(self.settings.reset(name.as_deref())?))
            }
        }
    }

    /// Evaluates an einsum program and stores each query's result as the
    /// table of its name, replacing a table of that name.
    fn assign(&self, program: &Program) -> Result<QueryResult> {
        let label = program
            .queries
            .iter()
            .map(|q| q.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        self.progress.start_query(&format!("computing {label}"));
        let evaluated = self.evaluate(program);
        self.progress.finish();
        let mut messages = Vec::new();
        let memory = self.budget();
        for (name, tensor) in evaluated? {
            table_statistics(&tensor, &memory)?;
            let entries = entries(tensor.nnz());
            let mut catalog = self.write_catalog();
            let message = if catalog.contains(&name) {
                format!("Replaced table {name} ({entries})")
            } else {
                format!("Stored {name} ({entries})")
            };
            catalog.put(&name, tensor, true)?;
            messages.push(message);
        }
        Ok(QueryResult::message(messages.join("; ")))
    }

    /// `CALL dbgen(...)`: generates the TPC-H tables and creates all eight
    /// at once. A table of one of their names is an error before anything
    /// is generated (and again, creating none, if one was created while
    /// they were generated); so is a scale factor whose tables would not
    /// fit `memory_limit`.
    fn dbgen(&self, dbgen: &Dbgen) -> Result<QueryResult> {
        let names: Vec<String> = Table::ALL.iter().map(|&t| dbgen.table_name(t)).collect();
        let existing: Vec<&str> = {
            let catalog = self.read_catalog();
            names
                .iter()
                .filter(|n| catalog.contains(n))
                .map(String::as_str)
                .collect()
        };
        if !existing.is_empty() {
            let (noun, verb) = match existing.len() {
                1 => ("table", "exists"),
                _ => ("tables", "exist"),
            };
            let list = existing.join(", ");
            return Err(Error::Invalid(format!(
                "dbgen: {noun} {list} already {verb}; DROP TABLE {list} first, or give the new \
                 tables a suffix: CALL dbgen(sf = {}, suffix = '_2')",
                dbgen.scale_factor()
            )));
        }
        let memory = self.budget();
        memory.reserve(dbgen.estimated_bytes(), "for the TPC-H tables")?;
        let tables = dbgen.generate(self.progress)?;
        check_cancelled(self.progress)?;
        for (_, tensor) in &tables {
            table_statistics(tensor, &memory)?;
        }
        let created: Vec<String> = tables
            .iter()
            .map(|(name, tensor)| format!("{name} ({})", entries(tensor.nnz())))
            .collect();
        self.write_catalog().create_all(
            tables
                .into_iter()
                .map(|(name, tensor)| (name, Arc::new(tensor)))
                .collect(),
        )?;
        Ok(QueryResult::message(format!(
            "Created tables {}",
            created.join(", ")
        )))
    }

    /// `DROP TABLE`: every table must exist unless `if_exists`.
    fn drop(&self, names: &[String], if_exists: bool) -> Result<QueryResult> {
        let mut catalog = self.write_catalog();
        if !if_exists && let Some(missing) = names.iter().find(|n| !catalog.contains(n)) {
            return Err(Error::unknown("Table", missing, catalog.names()));
        }
        let dropped: Vec<&str> = names
            .iter()
            .filter(|n| catalog.contains(n))
            .map(String::as_str)
            .collect();
        catalog.drop_tables(&dropped)?;
        Ok(QueryResult::message(if dropped.is_empty() {
            "No table dropped".to_string()
        } else {
            format!("Dropped table {}", dropped.join(", "))
        }))
    }

    /// `CREATE INDEX`: builds the index (its estimated bytes charged to
    /// `memory_limit`) outside the catalog's write lock, then declares it.
    fn create_index(
        &self,
        table: &str,
        index: DeclaredIndex,
        if_not_exists: bool,
    ) -> Result<QueryResult> {
        let exists = |catalog: &Catalog| {
            catalog
                .index(&index.name)
                .map(|(owner, _)| Error::IndexExists(index.name.clone(), owner))
        };
        let tensor = {
            let catalog = self.read_catalog();
            match exists(&catalog) {
                Some(_) if if_not_exists => return Ok(index_exists(&index.name)),
                Some(error) => return Err(error),
                None => catalog.get(table)?,
            }
        };
        index.layout.validate(tensor.dims())?;
        if tensor.built_bytes(&index.layout).is_none() {
            self.budget().reserve(
                index.layout.estimated_bytes(&tensor),
                &format!("for building index {}", index.name),
            )?;
        }
        self.progress
            .start_query(&format!("building index {}", index.name));
        let built = tensor.build_layout(&index.layout);
        self.progress.finish();
        let bytes = built?;
        let mut catalog = self.write_catalog();
        if if_not_exists && exists(&catalog).is_some() {
            return Ok(index_exists(&index.name));
        }
        let message = format!(
            "Created index {} on {table} {} ({bytes} bytes)",
            index.name,
            index.layout.named(tensor.dims())
        );
        catalog.create_index(table, index)?;
        Ok(QueryResult::message(message))
    }

    /// `DROP INDEX`: every index must exist unless `if_exists`.
    fn drop_index(&self, names: &[String], if_exists: bool) -> Result<QueryResult> {
        let mut catalog = self.write_catalog();
        if !if_exists && let Some(missing) = names.iter().find(|n| catalog.index(n).is_none()) {
            let known: Vec<String> = catalog.indexes().into_iter().map(|(_, d)| d.name).collect();
            return Err(Error::unknown(
                "Index",
                missing,
                known.iter().map(String::as_str),
            ));
        }
        let mut dropped = Vec::new();
        for name in names {
            if let Some((table, index)) = catalog.drop_index(name)? {
                dropped.push(format!("{} (on {table})", index.name));
            }
        }
        Ok(QueryResult::message(if dropped.is_empty() {
            "No index dropped".to_string()
        } else {
            format!("Dropped index {}", dropped.join(", "))
        }))
    }

    /// Binds and runs one statement, unless a stop was requested, and
    /// hands out its rows as a stream: a query's program is evaluated
    /// first, its rows are assembled batch by batch as they are taken (see
    /// [`RowStream`]); any other statement runs whole.
    pub fn stream(&self, statement: &Statement) -> Result<RowStream> {
        check_cancelled(self.progress)?;
        if let Statement::Explain { .. } = statement {
            return self.execute(statement).map(RowStream::from);
        }
        match self.bind(statement)? {
            BoundStatement::Query(relation) => self.row_stream(&relation, &self.budget()),
            bound => self.run(bound).map(RowStream::from),
        }
    }

    /// The rows of a relation.
    fn rows(&self, relation: &Relation) -> Result<QueryResult> {
        let memory = self.budget();
        QueryResult::collect(self.row_stream(relation, &memory)?, &memory)
    }

    /// A budget of `memory_limit` for what a statement builds after its
    /// program has run.
    fn budget(&self) -> MemoryBudget {
        MemoryBudget::new(self.settings.memory_limit())
    }

    /// The rows of a relation as a stream; what is built before the first
    /// batch is charged to `memory`, starting with the program's results.
    fn row_stream(&self, relation: &Relation, memory: &MemoryBudget) -> Result<RowStream> {
        match relation {
            Relation::Program(query) => {
                let results = self.evaluate_first(&query.program, query.assembly.first_rows())?;
                memory.reserve(results_bytes(&results), "for its results")?;
                query.assembly.stream(&results, memory)
            }
            other => {
                // A stored table or a file as it is: its one batch, handed
                // out in slices of a stream's batch size (no copy).
                let batch = self.stored(other)?.to_record_batch()?;
                let slices = (0..batch.num_rows().max(1))
                    .step_by(BATCH_ROWS)
                    .map(|offset| {
                        batch.slice(
                            offset,
                            BATCH_ROWS.min(batch.num_rows().saturating_sub(offset)),
                        )
                    })
                    .collect();
                Ok(RowStream::ready(batch.schema(), slices, None))
            }
        }
    }

    /// A relation as a tensor: a stored table or a file as it is, or a
    /// query's rows with its grouped key columns as dimensions (what that
    /// takes charged to `memory`).
    fn tensor(&self, relation: Relation, memory: &MemoryBudget) -> Result<Arc<Tensor>> {
        match relation {
            Relation::Program(query) => {
                let results = self.evaluate_first(&query.program, query.assembly.first_rows())?;
                memory.reserve(results_bytes(&results), "for its results")?;
                Ok(Arc::new(query.assembly.tensor(&results, memory)?))
            }
            other => self.stored(&other),
        }
    }

    /// The tensor of a relation that is read as it is.
    fn stored(&self, relation: &Relation) -> Result<Arc<Tensor>> {
        match relation {
            Relation::Table(name) => self.read_catalog().get(name),
            Relation::File { load, .. } => Ok(Arc::new(load.read(self.progress)?)),
            Relation::Tensor(tensor) => Ok(Arc::clone(tensor)),
            Relation::Program(_) => Err(Error::Internal(
                "a query program read as a stored table".to_string(),
            )),
        }
    }

    /// Runs `program` on the engine the settings choose and returns its
    /// results by query name.
    pub fn evaluate(&self, program: &Program) -> Result<Vec<(String, Arc<Tensor>)>> {
        self.settings.evaluate(program, self.progress, self.log)
    }

    /// [`Session::evaluate`] for a caller that needs only the first rows
    /// of one output (see [`Settings::evaluate_first`]).
    fn evaluate_first(
        &self,
        program: &Program,
        first: Option<FirstRows>,
    ) -> Result<Vec<(String, Arc<Tensor>)>> {
        self.settings
            .evaluate_first(program, first.as_ref(), self.progress, self.log)
    }

    /// The settings statements run with.
    pub fn settings(&self) -> &Settings {
        self.settings
    }

    fn read_catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        // Statements change the catalog only after their work has
        // succeeded, so a panic elsewhere cannot leave it half-changed.
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_catalog(&self) -> RwLockWriteGuard<'_, Catalog> {
        self.catalog.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Computes the statistics of a table about to be stored, unless they
/// are there already, charging the memory that takes to `memory`: the
/// catalog keeps them with the table, and computing them here rather than
/// under its write lock keeps other statements' reads going meanwhile.
fn table_statistics(tensor: &Tensor, memory: &MemoryBudget) -> Result<()> {
    if tensor.computed_statistics().is_none() {
        // The statistics themselves are a few numbers per dimension set;
        // what computing them takes is returned when they are done.
        let bytes = Statistics::working_bytes(tensor.dims(), tensor.nnz());
        memory.reserve(bytes, "for its statistics")?;
        tensor.statistics();
        memory.release(bytes);
    }
    Ok(())
}

impl sql::Evaluate for Session<'_> {
    fn evaluate(&self, program: &Program) -> Result<Vec<(String, Arc<Tensor>)>> {
        Session::evaluate(self, program)
    }

    fn memory_limit(&self) -> u64 {
        self.settings.memory_limit()
    }
}

/// The message of a `CREATE INDEX IF NOT EXISTS` that finds the name
/// taken.
fn index_exists(name: &str) -> QueryResult {
    QueryResult::message(format!("Index {name} already exists; nothing done"))
}

/// "1 row", "2 rows": `n` with the `singular` or `plural` noun, for
/// messages.
pub(crate) fn count(n: usize, singular: &str, plural: &str) -> String {
    match n {
        1 => format!("1 {singular}"),
        n => format!("{n} {plural}"),
    }
}

/// "1 entry", "2 entries": a count of stored entries for messages.
pub(crate) fn entries(n: usize) -> String {
    count(n, "entry", "entries")
}

/// What a writer holds of `tensor` beside it: its rows as SQL shows them
/// (a bag's rows repeated, strings decoded), 8 bytes a cell plus the
/// strings' bytes, which the Parquet writer's encoded pages take again at
/// most.
fn export_bytes(tensor: &Tensor) -> u64 {
    let rows = match tensor.multiplicities() {
        Some(counts) => counts.iter().map(|&c| u64::try_from(c).unwrap_or(0)).sum(),
        None => tensor.nnz() as u64,
    };
    let strings: u64 = (0..tensor.dims().len())
        .filter_map(|d| {
            let dictionary = tensor.dims()[d].dictionary.as_ref()?;
            Some(
                tensor
                    .coords(d)
                    .iter()
                    .map(|&c| dictionary.string(c).map_or(0, |s| s.len() as u64))
                    .sum::<u64>(),
            )
        })
        .sum();
    let cells = rows.saturating_mul(tensor.column_order().len() as u64);
    cells
        .saturating_mul(8)
        .saturating_add(strings)
        .saturating_mul(2)
}
