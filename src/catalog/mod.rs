//! The catalog: the named tables of one database, kept in memory or in a
//! database directory ([`persist`]: Parquet files and a catalog file,
//! written atomically).
//!
//! Table names are matched without regard to case (as DuckDB does) and shown
//! as they were created. A catalog opened on a directory writes every change
//! through to its [`Store`] before it changes the tables in memory, so what a
//! query sees has always been made durable first.
//!
//! Declared indexes ([`DeclaredIndex`]) belong to their table: their names
//! are unique in the database (without regard to case), they are kept
//! built with the table's tensor and recorded with its catalog entry, and
//! they go when the table is dropped or replaced (`CREATE OR REPLACE`, an
//! einsum assignment). A change of the table's rows ([`Catalog::rewrite`],
//! `INSERT`) keeps them and builds them over the new rows, as a database
//! maintains its indexes under inserts.
//!
//! A table's statistics ([`Statistics`](crate::storage::statistics::Statistics))
//! are computed when it is stored (every way of storing one goes through
//! this catalog), not in the first query that plans over it; a database
//! directory records them with the table, in the same commit, and hands
//! them back when the table is loaded ([`persist`]).
//!
//! Opening a database directory reads its catalog file only: each table
//! is loaded from its data files when a statement first uses it, so a
//! database opens at once whatever it holds, and a damaged data file is
//! an error of the statements that read that table (the others still
//! work).

pub mod persist;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::storage::Tensor;
use crate::storage::fibertree::DeclaredIndex;
use persist::Store;

/// The tables of a database, and the directory that keeps them (if any).
#[derive(Debug, Default)]
pub struct Catalog {
    /// Tables by lower-case name, with the name as created.
    tables: BTreeMap<String, (String, Table)>,
    store: Option<Store>,
}

/// A table's tensor: set when the table is stored, or when a table of a
/// database directory is first used ([`Store::load`]).
type Table = OnceLock<Arc<Tensor>>;

impl Catalog {
    /// An empty catalog kept in memory only.
    pub fn in_memory() -> Catalog {
        Catalog::default()
    }

    /// The catalog of the database directory `dir`, created if missing.
    pub fn open(dir: &Path) -> Result<Catalog> {
        let (store, names) = Store::open(dir)?;
        let tables = names
            .into_iter()
            .map(|name| (name.to_lowercase(), (name, Table::new())))
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

    /// The table called `name` (loaded from the database directory on
    /// first use), or an error suggesting the closest name. Errors also:
    /// the table's data files are missing, unreadable or disagree with
    /// the catalog.
    pub fn get(&self, name: &str) -> Result<Arc<Tensor>> {
        let (shown, table) = self
            .tables
            .get(&name.to_lowercase())
            .ok_or_else(|| Error::unknown("Table", name, self.names()))?;
        if let Some(tensor) = table.get() {
            return Ok(Arc::clone(tensor));
        }
        let store = self.store.as_ref().ok_or_else(|| {
            Error::Internal(format!("table '{shown}' has neither data nor a store"))
        })?;
        let loaded = Arc::new(store.load(shown)?);
        // Another reader may have loaded it meanwhile: either copy will do.
        Ok(Arc::clone(table.get_or_init(|| loaded)))
    }

    /// The user-visible columns of table `name` in their order, without
    /// loading it (none for an unknown table).
    pub fn column_names(&self, name: &str) -> Vec<String> {
        let Some((shown, table)) = self.tables.get(&name.to_lowercase()) else {
            return Vec::new();
        };
        match (table.get(), &self.store) {
            (Some(tensor), _) => tensor
                .column_order()
                .iter()
                .map(|&c| tensor.column_name(c).to_string())
                .collect(),
            (None, Some(store)) => store.column_names(shown),
            (None, None) => Vec::new(),
        }
    }

    /// Whether a table called `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.tables.contains_key(&name.to_lowercase())
    }

    /// The table names, as created, in alphabetical order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tables.values().map(|(name, _)| name.as_str())
    }

    /// Stores `tensor` as table `name`, a new table without declared
    /// indexes (a tensor that has some, such as another table's, is stored
    /// as a copy without them). With `replace`, an existing table of that
    /// name is replaced; without, it is an error.
    pub fn put(&mut self, name: &str, tensor: Arc<Tensor>, replace: bool) -> Result<()> {
        let tensor = if tensor.declared_indexes().is_empty() {
            tensor
        } else {
            Arc::new(tensor.without_indexes())
        };
        self.store_table(name, tensor, replace)
    }

    /// Stores `tensor`, with the indexes it declares and its statistics
    /// (computed now if they were not), as table `name`.
    fn store_table(&mut self, name: &str, tensor: Arc<Tensor>, replace: bool) -> Result<()> {
        let key = name.to_lowercase();
        let shown = match self.tables.get(&key) {
            Some(_) if !replace => return Err(Error::TableExists(name.to_string())),
            Some((existing, _)) => existing.clone(),
            None => name.to_string(),
        };
        tensor.statistics();
        if let Some(store) = &mut self.store {
            store.save_table(&shown, &tensor)?;
        }
        self.tables.insert(key, (shown, Table::from(tensor)));
        Ok(())
    }

    /// Creates the tables `tables` at once (in a persistent database, in
    /// one commit), with their statistics: an error, creating none, if a table of one of their
    /// names exists.
    pub fn create_all(&mut self, tables: Vec<(String, Arc<Tensor>)>) -> Result<()> {
        if let Some((name, _)) = tables.iter().find(|(name, _)| self.contains(name)) {
            return Err(Error::TableExists(name.clone()));
        }
        for (_, tensor) in &tables {
            tensor.statistics();
        }
        if let Some(store) = &mut self.store {
            let saved: Vec<(&str, &Tensor)> = tables
                .iter()
                .map(|(name, tensor)| (name.as_str(), tensor.as_ref()))
                .collect();
            store.save_tables(&saved)?;
        }
        for (name, tensor) in tables {
            self.tables
                .insert(name.to_lowercase(), (name, Table::from(tensor)));
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

    /// Stores `tensor` as the new rows of the existing table `name`,
    /// keeping its declared indexes: each is built over the new rows before
    /// anything is stored.
    pub fn rewrite(&mut self, name: &str, tensor: Arc<Tensor>) -> Result<()> {
        let tensor = Arc::new(tensor.without_indexes());
        for index in self.get(name)?.declared_indexes() {
            tensor.declare(index)?;
        }
        self.store_table(name, tensor, true)
    }

    /// The declared index called `name` (any case), with the name of its
    /// table as created.
    pub fn index(&self, name: &str) -> Option<(String, DeclaredIndex)> {
        self.indexes()
            .into_iter()
            .find(|(_, index)| index.name.eq_ignore_ascii_case(name))
    }

    /// Every declared index with the name of its table, by table name,
    /// then in the order they were declared (a table not loaded yet: as
    /// its catalog entry records them).
    pub fn indexes(&self) -> Vec<(String, DeclaredIndex)> {
        self.tables
            .values()
            .flat_map(|(shown, table)| {
                let declared = match (table.get(), &self.store) {
                    (Some(tensor), _) => tensor.declared_indexes(),
                    (None, Some(store)) => store.declared_indexes(shown),
                    (None, None) => Vec::new(),
                };
                declared
                    .into_iter()
                    .map(move |index| (shown.clone(), index))
            })
            .collect()
    }

    /// Declares `index` on table `table`, building it unless it is built.
    /// Errors: an unknown table, an index name taken in the database, an
    /// index of the table with the same order and formats, and the
    /// build's (a format that cannot hold a dimension).
    pub fn create_index(&mut self, table: &str, index: DeclaredIndex) -> Result<()> {
        if let Some((owner, _)) = self.index(&index.name) {
            return Err(Error::IndexExists(index.name, owner));
        }
        let tensor = self.get(table)?;
        let mut declared = tensor.declared_indexes();
        if let Some(same) = declared.iter().find(|d| d.layout == index.layout) {
            return Err(Error::Invalid(format!(
                "index '{}' on table '{table}' already has the columns and formats of '{}'",
                same.name, index.name
            )));
        }
        index.layout.validate(tensor.dims())?;
        tensor.build_layout(&index.layout)?;
        let shown = self.shown(table).to_string();
        if let Some(store) = &mut self.store {
            declared.push(index.clone());
            store.set_indexes(&shown, &declared)?;
        }
        tensor.declare(index)?;
        Ok(())
    }

    /// Removes the declared index `name` (any case); the name of its table
    /// and the removed declaration, `None` if there is no such index.
    pub fn drop_index(&mut self, name: &str) -> Result<Option<(String, DeclaredIndex)>> {
        let Some((table, index)) = self.index(name) else {
            return Ok(None);
        };
        let tensor = self.get(&table)?;
        if let Some(store) = &mut self.store {
            let declared: Vec<DeclaredIndex> = tensor
                .declared_indexes()
                .into_iter()
                .filter(|d| d.name != index.name)
                .collect();
            store.set_indexes(&table, &declared)?;
        }
        tensor.undeclare(&index.name);
        Ok(Some((table, index)))
    }

    /// The name of table `name` as created (`name` if there is none).
    fn shown<'a>(&'a self, name: &'a str) -> &'a str {
        self.tables
            .get(&name.to_lowercase())
            .map_or(name, |(shown, _)| shown.as_str())
    }
}
