//! einsql: an embedded database engine for sparse tensors.
//!
//! Tensors are stored as Arrow-backed K-relations (coordinate columns plus
//! value columns) with fibertree indexes, and queried with SQL. The modules,
//! in pipeline order:
//!
//! - [`io`]: Matrix Market, FROSTT `.tns`, Parquet and CSV readers and writers.
//! - [`storage`]: tensors, fibertree indexes, statistics, the on-disk database.
//! - [`sql`]: the SQL front-end (statements over the catalog).
//! - [`einsum`]: the tensor-index-notation front-end (statements to IR).
//! - [`ir`]: the plan dialects shared by the front-ends, with the algebra
//!   of every operator.
//! - [`optimizer`]: sparsity estimation (uniform and chain bound) for the
//!   cost-based optimizer.
//! - [`reference`]: the reference evaluator of the IR, the test oracle.
//! - [`subgraph`]: subgraph-counting graph files as SQL and einsum queries.
//! - [`emit`]: optimized plans as SQL for DuckDB, DataFusion and Spark.
//! - [`exec`]: the planner and the worst-case-optimal-join executor that
//!   runs IR programs over fibertree cursors.
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

pub mod error;
mod explain;
pub mod io;
pub mod storage;

pub use error::{Error, Result};
pub mod sql;

pub mod einsum;
pub mod emit;
pub mod ir;
pub mod optimizer;
pub mod profile;
pub mod reference;
pub mod subgraph;

pub mod exec;

mod database;

pub use database::{Database, Interrupt, QueryResult};
pub use profile::Profile;
