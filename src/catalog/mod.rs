//! The catalog: the named tables of one database, kept in memory or in a
//! database directory ([`persist`]: Parquet files and a catalog file,
//! written atomically).
//!
//! Table names are matched without regard to case (as DuckDB does) and shown
//! as they were created. A catalog opened on a directory writes every change
//! through to its [`Store`] before it changes the tables in memory, so what a
//! query sees has always been made durable first.

pub mod persist;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::storage::Tensor;
use persist::Store;

/// The tables of a database, and the directory that keeps them (if any).
#[derive(Debug, Default)]
pub struct Catalog {
    /// Tables by lower-case name, with the name as created.
    tables: BTreeMap<String, (String, Arc<Tensor>)>,
    store: Option<Store>,
}

impl Catalog {
    /// An empty catalog kept in memory only.
    pub fn in_memory() -> Catalog {
        Catalog::default()
    }

    /// The catalog of the database directory `dir`, created if missing.
    pub fn open(dir: &Path) -> Result<Catalog> {
        let (store, tables) = Store::open(dir)?;
        let tables = tables
            .into_iter()
            .map(|(name, tensor)| (name.to_lowercase(), (name, Arc::new(tensor))))
            .collect();
        Ok(Catalog {
            tables,
            store: Some(store),
        })
    }

    /// Whether the catalog writes through to a directory.
    pub fn is_persistent(&self) -> bool {
        self.store.is_some()
    }

    /// The table called `name`, or an error suggesting the closest name.
    pub fn get(&self, name: &str) -> Result<Arc<Tensor>> {
        self.tables
            .get(&name.to_lowercase())
            .map(|(_, tensor)| Arc::clone(tensor))
            .ok_or_else(|| Error::unknown("Table", name, self.names()))
    }

    /// Whether a table called `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.tables.contains_key(&name.to_lowercase())
    }

    /// The table names, as created, in alphabetical order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tables.values().map(|(name, _)| name.as_str())
    }

    /// Stores `tensor` as table `name`. With `replace`, an existing table of
    /// that name is replaced; without, it is an error.
    pub fn put(&mut self, name: &str, tensor: Arc<Tensor>, replace: bool) -> Result<()> {
        let key = name.to_lowercase();
        let shown = match self.tables.get(&key) {
            Some(_) if !replace => return Err(Error::TableExists(name.to_string())),
            Some((existing, _)) => existing.clone(),
            None => name.to_string(),
        };
        if let Some(store) = &mut self.store {
            store.save_table(&shown, &tensor)?;
        }
        self.tables.insert(key, (shown, tensor));
        Ok(())
    }

    /// Creates the tables `tables` at once (in a persistent database, in
    /// one commit): an error, creating none, if a table of one of their
    /// names exists.
    pub fn create_all(&mut self, tables: Vec<(String, Arc<Tensor>)>) -> Result<()> {
        if let Some((name, _)) = tables.iter().find(|(name, _)| self.contains(name)) {
            return Err(Error::TableExists(name.clone()));
        }
        if let Some(store) = &mut self.store {
            let saved: Vec<(&str, &Tensor)> = tables
                .iter()
                .map(|(name, tensor)| (name.as_str(), tensor.as_ref()))
                .collect();
            store.save_tables(&saved)?;
        }
        for (name, tensor) in tables {
            self.tables.insert(name.to_lowercase(), (name, tensor));
        }
        Ok(())
    }

    /// Removes the tables `names` at once (in a persistent database, in one
    /// commit); an error, removing none, if one of them does not exist.
    pub fn drop_tables(&mut self, names: &[&str]) -> Result<()> {
        let mut keys = Vec::with_capacity(names.len());
        let mut shown = Vec::with_capacity(names.len());
        for name in names {
            let key = name.to_lowercase();
            let Some((table, _)) = self.tables.get(&key) else {
                return Err(Error::unknown("Table", name, self.names()));
            };
            if !keys.contains(&key) {
                shown.push(table.clone());
                keys.push(key);
            }
        }
        if let Some(store) = &mut self.store {
            let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
            store.drop_tables(&shown)?;
        }
        for key in &keys {
            self.tables.remove(key);
        }
        Ok(())
    }
}
