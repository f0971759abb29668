//! Storage: tensors, their fibertree and tiled indexes and statistics.
//!
//! [`tensor`] is the unit of storage; [`fibertree`] builds the per-order
//! indexes the executor walks; [`tiles`] cuts a matrix into dense tiles for
//! blocked products; [`statistics`] computes what the optimizer
//! estimates from; [`from_arrow`] turns Arrow record batches into tensors
//! (the path every loader and SQL write takes). The named tables of a
//! database and their on-disk form are the [`catalog`](crate::catalog)'s.

pub mod fibertree;
pub mod from_arrow;
pub mod statistics;
pub mod tensor;
pub mod tiles;

pub use tensor::{
    ColumnRef, Coo, Dictionary, Dimension, DimensionSpec, HUGEINT_ARROW, MULTIPLICITY, Tensor,
    ValueColumn, ValueData, ValueSource, ValueType, hugeint_array,
};
