//! PLACEHOLDER (replaced by its owner before the first commit lands).

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

use crate::error::Result;
use crate::storage::Tensor;

/// Which columns of a batch are keys and which are values.
#[derive(Clone, Debug, Default)]
pub struct ColumnRoles {
    pub keys: Option<Vec<String>>,
    pub values: Option<Vec<String>>,
}

/// Builds a tensor from record batches.
pub fn tensor_from_batches(
    _schema: &SchemaRef,
    _batches: &[RecordBatch],
    _roles: &ColumnRoles,
) -> Result<Tensor> {
    unimplemented!()
}
