//! PLACEHOLDER (replaced by its owner before the first commit lands).

use std::path::Path;

use crate::error::Result;
use crate::storage::Tensor;

/// A database directory.
#[derive(Debug)]
pub struct Store {}

impl Store {
    /// Opens a directory.
    pub fn open(_dir: &Path) -> Result<(Store, Vec<(String, Tensor)>)> {
        unimplemented!()
    }
    /// Saves a table.
    pub fn save_table(&mut self, _name: &str, _tensor: &Tensor) -> Result<()> {
        unimplemented!()
    }
    /// Drops a table.
    pub fn drop_table(&mut self, _name: &str) -> Result<()> {
        unimplemented!()
    }
}
