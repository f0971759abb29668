//! Storage: tensors, their fibertree indexes and statistics, and the
//! on-disk form of a database.
//!
//! [`tensor`] is the unit of storage; [`fibertree`] builds the per-order
//! indexes the executor walks; [`statistics`] computes what the optimizer
//! estimates from; [`from_arrow`] turns Arrow record batches into tensors
//! (the path every loader and SQL write takes); [`persist`] keeps a database
//! directory of Parquet files and a catalog, with atomic writes.

pub mod catalog;
pub mod fibertree;
pub mod from_arrow;
pub mod persist;
pub mod statistics;
pub mod tensor;

pub use tensor::{
    ColumnRef, Coo, Dictionary, Dimension, DimensionSpec, MULTIPLICITY, Tensor, ValueColumn,
    ValueData, ValueSource, ValueType,
};
