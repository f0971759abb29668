//! PLACEHOLDER (replaced by its owner before the first commit lands).

use crate::error::Result;
use crate::storage::Tensor;

/// The format of one fibertree level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LevelFormat {
    Dense,
    Compressed,
    Hashed,
    Bytemap,
}

/// Which index: a dimension order and a format per level.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexSpec {
    pub order: Vec<usize>,
    pub formats: Vec<LevelFormat>,
}

/// A fibertree index over a tensor.
#[derive(Debug)]
pub struct FiberTree {}

impl FiberTree {
    /// Builds the index `spec` over `tensor`.
    pub fn build(_tensor: &Tensor, _spec: &IndexSpec) -> Result<FiberTree> {
        unimplemented!()
    }
}

impl std::fmt::Display for IndexSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.order)
    }
}
