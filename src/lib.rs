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
//! - [`reference`]: the reference evaluator of the IR, the test oracle.
//! - [`Database`]: the public API that ties them together.

pub mod error;
mod explain;
pub mod io;
pub mod storage;

pub use error::{Error, Result};
pub mod sql;

pub mod einsum;
pub mod ir;
pub mod reference;

mod database;

pub use database::{Database, Interrupt, QueryResult};
