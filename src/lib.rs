//! einsql: an embedded database engine for sparse tensors.
//!
//! Tensors are stored as Arrow-backed K-relations (coordinate columns plus
//! value columns) with fibertree indexes, and queried with SQL. The modules,
//! in pipeline order:
//!
//! - [`error`]: the one error type, with a category for every kind of
//!   failure.
//! - [`progress`]: progress reports and the interrupt flag (Ctrl-C).
//! - [`durable`]: atomic file writes.
//! - [`storage`]: tensors, fibertree indexes and statistics.
//! - [`io`]: Matrix Market, FROSTT `.tns`, Parquet, CSV and graph files.
//! - [`tpch`]: the TPC-H tables at a scale factor (`CALL dbgen`).
//! - [`catalog`]: the named tables of a database, in memory or on disk.
//! - [`ir`]: the plan dialect shared by the front-ends, with the algebra
//!   of every operator.
//! - [`exec`]: the planner and the worst-case-optimal-join executor that
//!   runs IR programs over fibertree cursors.
//! - [`reference`]: the reference evaluator of the IR, the test oracle.
//! - [`optimizer`]: the cost-based optimizer (sparsity estimation, logical
//!   and physical planning).
//! - [`emit`]: optimized plans as SQL for DuckDB, DataFusion and Spark.
//! - [`bound`]: bound statements, what the front-ends hand the session.
//! - [`sql`]: the SQL front-end (statements bound against the catalog).
//! - [`einsum`]: the tensor-index-notation front-end (statements to IR).
//! - [`session`]: executes statements of both languages; the only writer
//!   of the catalog; `EXPLAIN`, settings and profiles.
//! - [`Database`]: the public API that ties them together.
//!
//! ```
//! use einsql::Database;
//!
//! let db = Database::open_in_memory();
//! db.execute("CREATE TABLE a (i INT, j INT, v DOUBLE, PRIMARY KEY (i, j))")?;
//! db.execute("INSERT INTO a VALUES (0, 1, 2.5), (1, 0, 1.0), (1, 1, 0.5)")?;
//! // Tensor index notation and SQL share one database.
//! db.execute("rows[i] = SUM(j) a[i,j];")?;
//! let result = db.execute("SELECT * FROM rows")?;
//! assert_eq!(result.num_rows(), 2);
//! assert_eq!(db.table("a")?.nnz(), 3);
//! # Ok::<(), einsql::Error>(())
//! ```

pub mod bound;
pub mod catalog;
mod database;
pub mod durable;
pub mod einsum;
pub mod emit;
pub mod error;
pub mod exec;
pub mod io;
pub mod ir;
pub mod optimizer;
pub mod progress;
pub mod reference;
pub mod session;
pub mod sql;
pub mod storage;
pub mod tpch;

pub use bound::RowStream;
pub use database::Database;
pub use error::{Error, Result};
pub use progress::Interrupt;
pub use session::{Profile, QueryResult};
