//! Bound statements: what the front-ends ([`crate::sql`], [`crate::einsum`])
//! make of a statement, and what the session ([`crate::session`]) executes.
//!
//! Binding resolves names against the catalog, checks types and lowers
//! queries to IR programs; it reads the catalog and may read files and
//! evaluate `WITH` and `FROM` sub-queries, but it never changes the
//! catalog. Every change (create, insert, drop, store) is a
//! [`BoundStatement`] that the session carries out under the catalog's
//! write lock, formatting the message that says what changed.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

use crate::emit::Dialect;
use crate::error::Result;
use crate::exec::{FirstRows, MemoryBudget};
use crate::io::{FileFormat, FileLoad};
use crate::ir::Program;
use crate::optimizer::OptimizerOptions;
use crate::storage::Tensor;
use crate::storage::fibertree::DeclaredIndex;
use crate::tpch::Dbgen;

/// One statement, bound.
#[derive(Debug)]
pub enum BoundStatement {
    /// A query: rows out of a table, a file or a program.
    Query(Relation),
    /// Tensor index notation: every query of the program is evaluated and
    /// stored as the table of its name, replacing one of that name.
    Assign(Program),
    /// `CREATE TABLE name ...`.
    CreateTable {
        /// The new table's name.
        name: String,
        /// Its contents.
        source: Relation,
        /// `IF NOT EXISTS`: an existing table is left as it is.
        if_not_exists: bool,
        /// `OR REPLACE`: an existing table is replaced.
        or_replace: bool,
    },
    /// `INSERT INTO table ...`.
    Insert {
        /// The table the rows go into.
        table: String,
        /// The rows, appended to the table as it is when the session holds
        /// the write lock (so concurrent inserts lose nothing).
        rows: Box<dyn Append>,
    },
    /// `DROP TABLE [IF EXISTS] names`.
    Drop {
        /// The tables.
        names: Vec<String>,
        /// `IF EXISTS`: missing tables are skipped.
        if_exists: bool,
    },
    /// `CREATE INDEX name ON table (columns) [USING (formats)]`.
    CreateIndex {
        /// The table.
        table: String,
        /// The index, its order and formats resolved against the table.
        index: DeclaredIndex,
        /// `IF NOT EXISTS`: an index of that name is left as it is.
        if_not_exists: bool,
    },
    /// `DROP INDEX [IF EXISTS] names`.
    DropIndex {
        /// The indexes.
        names: Vec<String>,
        /// `IF EXISTS`: missing indexes are skipped.
        if_exists: bool,
    },
    /// `COPY source TO 'path'`.
    Copy {
        /// What is written.
        source: Relation,
        /// Whether the source was written as a query (`COPY (SELECT ...)
        /// TO`) rather than a table name.
        query: bool,
        /// The file written (atomically).
        path: PathBuf,
        /// Its format.
        format: FileFormat,
    },
    /// `CALL dbgen(sf = ...)`: the eight TPC-H tables generated and
    /// created at once, none if a table of one of their names exists.
    Dbgen(Dbgen),
    /// `SHOW TABLES`.
    ShowTables,
    /// `DESCRIBE table`.
    Describe(String),
    /// `SET name = value`.
    Set {
        /// The setting, as written (lower case).
        name: String,
        /// Its new value.
        value: Literal,
    },
    /// `RESET name`, or `RESET ALL` (no name).
    Reset(Option<String>),
}

impl BoundStatement {
    /// The kind of statement, as SQL names it (`INSERT`), for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            BoundStatement::Query(_) => "SELECT",
            BoundStatement::Assign(_) => "tensor index notation",
            BoundStatement::CreateTable { .. } => "CREATE",
            BoundStatement::Insert { .. } => "INSERT",
            BoundStatement::Drop { .. } => "DROP",
            BoundStatement::CreateIndex { .. } => "CREATE INDEX",
            BoundStatement::DropIndex { .. } => "DROP INDEX",
            BoundStatement::Copy { .. } => "COPY",
            BoundStatement::Dbgen(_) => "CALL",
            BoundStatement::ShowTables => "SHOW",
            BoundStatement::Describe(_) => "DESCRIBE",
            BoundStatement::Set { .. } => "SET",
            BoundStatement::Reset(_) => "RESET",
        }
    }
}

/// The rows a query or a table source denotes.
#[derive(Debug)]
pub enum Relation {
    /// A stored table as it is.
    Table(String),
    /// A file as it is, read when the statement runs.
    File {
        /// What to read.
        load: FileLoad,
        /// The call as written, e.g. `read_mtx('a.mtx')`, for `EXPLAIN`.
        call: String,
    },
    /// A program whose results are assembled into rows.
    Program(BoundQuery),
    /// A tensor that binding made: the empty table that `CREATE TABLE t
    /// (...)` declares, or a `VALUES` list.
    Tensor(Arc<Tensor>),
}

/// A query lowered to an IR program, with the recipe that turns the
/// program's results into the query's rows.
pub struct BoundQuery {
    /// What to evaluate.
    pub program: Program,
    /// How the rows come out of the results.
    pub assembly: Box<dyn Assemble>,
}

impl fmt::Debug for BoundQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundQuery")
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

/// The results of an evaluated program, by query name.
pub type Results = [(String, Arc<Tensor>)];

/// How many rows each batch of a [`RowStream`] holds (the last one fewer),
/// whether assembled rows or a stored table's.
pub const BATCH_ROWS: usize = 8192;

/// The bytes the Arrow arrays of `results` take: what an assembly of
/// their rows starts its [`MemoryBudget`] with.
pub fn results_bytes(results: &Results) -> u64 {
    results
        .iter()
        .map(|(_, tensor)| tensor.memory_bytes())
        .sum()
}

/// Turns the results of a query's program into its rows.
pub trait Assemble: Send + Sync {
    /// The rows as a stream of Arrow batches, made as they are taken.
    /// What is built before the first batch (the values it reads, rows
    /// to sort or make distinct) is charged to `memory`; the batches are
    /// not (the caller holds or drops them).
    fn stream(&self, results: &Results, memory: &MemoryBudget) -> Result<RowStream>;
    /// The rows as a tensor (for `CREATE TABLE AS`, `COPY` and
    /// sub-queries), what it takes to build charged to `memory`.
    fn tensor(&self, results: &Results, memory: &MemoryBudget) -> Result<Tensor>;
    /// The first rows of one of the program's outputs, when they are all
    /// the rows need (a join listing under `LIMIT`): the session then lets
    /// the executor stop that query early. `None`: every result whole.
    fn first_rows(&self) -> Option<FirstRows> {
        None
    }
    /// How the rows are assembled, as `EXPLAIN` lines.
    fn describe(&self) -> Vec<String>;
    /// The query as SQL for another engine ([`crate::emit`]): `program`
    /// (the query's) optimized with `options`, then the assembly of the
    /// rows as the last `SELECT`.
    fn sql(
        &self,
        program: &Program,
        options: &OptimizerOptions,
        dialect: Dialect,
    ) -> Result<String>;
}

/// A statement's rows, handed out batch by batch: each batch is made when
/// it is taken (a join listing's rows are read off its program's results
/// as the batches are taken; rows that must be sorted, made distinct or
/// grouped are computed before the first batch, then converted to Arrow
/// batch by batch). Statements without rows have an empty stream and a
/// message.
pub struct RowStream {
    schema: SchemaRef,
    message: Option<String>,
    batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
}

impl RowStream {
    /// Rows of `schema`, made by `batches` as they are taken.
    pub fn new(
        schema: SchemaRef,
        batches: impl Iterator<Item = Result<RecordBatch>> + Send + 'static,
    ) -> RowStream {
        RowStream {
            schema,
            message: None,
            batches: Box::new(batches),
        }
    }

    /// Rows that are already made, and a statement's message.
    pub fn ready(
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        message: Option<String>,
    ) -> RowStream {
        RowStream {
            schema,
            message,
            batches: Box::new(batches.into_iter().map(Ok)),
        }
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// What a statement without rows did, e.g. "Created table a (3
    /// entries)".
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The same stream, ending with [`Error::Cancelled`](crate::Error::Cancelled)
    /// before the next batch once `stop` says so.
    pub fn until(self, stop: impl Fn() -> bool + Send + 'static) -> RowStream {
        let mut batches = self.batches;
        let mut stopped = false;
        let checked = std::iter::from_fn(move || {
            if stopped {
                return None;
            }
            if stop() {
                stopped = true;
                return Some(Err(crate::error::Error::Cancelled));
            }
            batches.next()
        });
        RowStream {
            schema: self.schema,
            message: self.message,
            batches: Box::new(checked),
        }
    }
}

impl Iterator for RowStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.batches.next()
    }
}

impl fmt::Debug for RowStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowStream")
            .field("schema", &self.schema)
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

/// New rows for a table.
pub trait Append: Send + Sync + fmt::Debug {
    /// `table` with the rows added.
    fn append(&self, table: &Tensor) -> Result<Tensor>;
    /// How many rows are added.
    fn rows(&self) -> usize;
}

/// A constant of statement text: a `SET` value, an `INSERT ... VALUES`
/// cell, a table-function option.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// An integer that fits in 64 bits.
    Integer(i64),
    /// A number with a fraction or an exponent.
    Float(f64),
    /// A quoted string.
    String(String),
    /// `true` or `false`.
    Boolean(bool),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Integer(v) => write!(f, "{v}"),
            Literal::Float(v) => write!(f, "{v}"),
            Literal::String(v) => write!(f, "'{v}'"),
            Literal::Boolean(v) => write!(f, "{v}"),
        }
    }
}
