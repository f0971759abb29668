//! The on-disk form of a database: a directory of Parquet files and a
//! catalog.
//!
//! ```text
//! dir/catalog.json                 format version, next generation, and per table:
//!                                  data file, dictionary file, schema, row count,
//!                                  declared indexes (name, order, level formats
//!                                  or tile sizes), statistics
//! dir/einsql.lock                  held (exclusive lock) while a Store is open
//! dir/data/000007-edges.parquet    a table's stored batch: Int64 coordinates,
//!                                  then the value (or multiplicity) columns
//! dir/data/000007-edges.dict.parquet   its string dictionaries, if any
//! ```
//!
//! Data files hold the tensor exactly as stored (coordinates, not decoded
//! strings, and the multiplicity of bag rows), and dictionary files hold
//! every string of a dimension, so a loaded table equals the saved one:
//! dimensions, sizes, dictionaries, value types, column order, bag
//! multiplicities and values.
//!
//! Opening a directory ([`Store::open`]) reads the catalog only; a table
//! is read from its files when it is first used ([`Store::load`]).
//!
//! Declared indexes are recorded in the catalog only (a name, a dimension
//! order and a level format per level) and rebuilt from the table's data
//! when it is loaded: a fibertree is a few sorted arrays that building
//! recreates in about the time reading them from files would take, and
//! recording only the declaration keeps one commit per change without
//! more files to write. A catalog that declares a tiled index is written
//! as format 3; one that declares only fibertree indexes as format 2; one
//! that declares none as format 1, so that a database stays readable by
//! the earlier builds that understand what it declares, and an earlier
//! build refuses (instead of silently dropping or misreading) the indexes
//! of a newer one.
//!
//! A table's statistics (nnz, sizes and every degree statistic, a few
//! numbers per set of dimensions) are recorded in its catalog entry,
//! written with the table in the same commit, and handed to the tensor
//! when it is loaded, so that its first query does not compute them. The
//! record names the data file it describes; it is used only with that
//! file, when it agrees with the entry's row count and sizes and passes
//! [`Statistics::restore`]'s checks. Otherwise (a damaged record, or none
//! in a catalog written before they were recorded) the table loads
//! without them, they are computed on first use, and the unused record is
//! left out of the next commit. The record adds no format version: it is
//! an optional field that earlier builds ignore, and they drop it when
//! they rewrite the catalog, so it never outlives the data it describes.
//!
//! Commit protocol: every write creates files under a fresh generation
//! number (never overwriting a file the catalog points to) through
//! [`write_atomically`], then replaces the catalog through
//! [`write_atomically`] (the commit point), then removes the files no longer
//! referenced. A process killed at any moment therefore leaves either the
//! previous catalog with its files or the new one with its files; leftover
//! temporary and unreferenced files are removed on the next open. A catalog
//! that does not parse, or comes from an unknown format version, is an error
//! that leaves every file untouched; so is a missing catalog beside data
//! files.

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Decimal128Type, Field, Float64Type, Int64Type, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::{Deserialize, Deserializer, Serialize};

use crate::durable::{sync_directory, write_atomically};
use crate::error::{Error, Result};
use crate::io::parquet::write_batch;
use crate::storage::fibertree::{DeclaredIndex, IndexLayout, IndexSpec, LevelFormat};
use crate::storage::statistics::{DegreeStat, DimSet, Statistics};
use crate::storage::tiles::TileSpec;
use crate::storage::{
    ColumnRef, Coo, Dictionary, DimensionSpec, MULTIPLICITY, Tensor, ValueData, ValueType,
};

/// The catalog file, in the database directory.
const CATALOG: &str = "catalog.json";
/// The lock file, in the database directory.
const LOCK: &str = "einsql.lock";
/// The folder of data files, in the database directory.
const DATA: &str = "data";
/// The `format` field of every catalog.
const FORMAT: &str = "einsql-database";
/// The newest catalog format version this build writes and reads: format 2
/// with tiled indexes.
const VERSION: u64 = 3;
/// The catalog format version written when tables declare indexes, none of
/// them tiled: format 1 with declared indexes.
const INDEXED_VERSION: u64 = 2;
/// The catalog format version written when no table declares an index.
const PLAIN_VERSION: u64 = 1;
/// How often a lock held elsewhere is retried (20 ms apart).
const LOCK_ATTEMPTS: u32 = 10;

/// An open database directory; holds its lock until dropped.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    catalog: Catalog,
    /// The tables (name and data file) whose statistics record did not fit
    /// their data when loaded: the next commit leaves the record out.
    unfit: Mutex<Vec<(String, String)>>,
    /// The locked lock file; the lock is released when it is closed.
    _lock: File,
}

/// The catalog: what the directory holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Catalog {
    format: String,
    version: u64,
    /// The generation number of the next file written.
    next_generation: u64,
    tables: BTreeMap<String, TableEntry>,
}

/// One table in the catalog.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct TableEntry {
    /// The stored batch, in the data folder.
    data_file: String,
    /// The dictionaries of the string dimensions, in the data folder.
    dictionary_file: Option<String>,
    /// Number of stored entries.
    rows: u64,
    dims: Vec<DimEntry>,
    values: Vec<ValueEntry>,
    column_order: Vec<ColumnRef>,
    /// Whether the table is a bag (no value columns; the data file holds
    /// multiplicities).
    bag: bool,
    /// The declared indexes, in the order they were declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    indexes: Vec<IndexEntry>,
    /// The table's statistics: `None` in catalogs of earlier builds, and
    /// for a record that cannot be decoded (read leniently: a damaged
    /// record is not an error, the statistics are computed again).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_statistics"
    )]
    statistics: Option<StatisticsEntry>,
}

/// A table's statistics in the catalog ([`Statistics`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StatisticsEntry {
    /// The data file they describe: they are used only with that file.
    data_file: String,
    /// Number of stored entries.
    nnz: u64,
    /// The size of every dimension, in stored order.
    sizes: Vec<u64>,
    /// Every degree statistic D(X|Y) as `[X, Y, degree]`, the sets as
    /// bitsets of dimension positions, in the order [`Statistics`] keeps
    /// them.
    degrees: Vec<[u64; 3]>,
}

/// One declared index in the catalog.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct IndexEntry {
    name: String,
    /// The dimension of each level (positions in the stored order).
    order: Vec<usize>,
    /// A format per level; none for tiles.
    formats: Vec<LevelFormat>,
    /// The tile size per level of a tiled index (catalog format 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tiles: Option<Vec<u64>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct DimEntry {
    name: String,
    size: u64,
    /// Whether the keys are strings (dictionary-encoded).
    strings: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct ValueEntry {
    name: String,
    #[serde(rename = "type")]
    ty: ValueType,
}

impl Store {
    /// Opens (creating it if missing) the database directory `dir` and
    /// locks it; the names of its tables, as created, which
    /// [`Store::load`] loads when they are first used.
    ///
    /// Errors: the directory is open elsewhere; the catalog is damaged,
    /// from an unknown format version, or missing beside data files.
    pub fn open(dir: &Path) -> Result<(Store, Vec<String>)> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let lock = lock_directory(dir)?;
        let data_dir = dir.join(DATA);
        let catalog = match read_catalog(&dir.join(CATALOG))? {
            Some(catalog) => catalog,
            None => create_catalog(dir)?,
        };
        std::fs::create_dir_all(&data_dir).map_err(|e| Error::io(&data_dir, e))?;
        let names = catalog.tables.keys().cloned().collect();
        let store = Store {
            dir: dir.to_path_buf(),
            catalog,
            unfit: Mutex::new(Vec::new()),
            _lock: lock,
        };
        store.remove_leftovers();
        Ok((store, names))
    }

    /// Loads table `name` from its data files, with its declared indexes
    /// built and the statistics its catalog entry records (computed again
    /// on first use when the record does not fit the data).
    ///
    /// Errors: no such table; a data file is missing, unreadable or
    /// disagrees with the catalog.
    pub fn load(&self, name: &str) -> Result<Tensor> {
        let entry = self.catalog.tables.get(name).ok_or_else(|| {
            Error::unknown(
                "Table",
                name,
                self.catalog.tables.keys().map(String::as_str),
            )
        })?;
        let tensor = load_table(&self.dir.join(DATA), name, entry)?;
        if let Some(statistics) = &entry.statistics
            && !statistics.restore(entry, &tensor)
        {
            self.unfit
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((name.to_string(), entry.data_file.clone()));
        }
        Ok(tensor)
    }

    /// The user-visible columns of table `name` in their order, as its
    /// catalog entry records them (none for an unknown table).
    pub fn column_names(&self, name: &str) -> Vec<String> {
        let Some(entry) = self.catalog.tables.get(name) else {
            return Vec::new();
        };
        entry
            .column_order
            .iter()
            .filter_map(|column| match *column {
                ColumnRef::Key(d) => entry.dims.get(d).map(|dim| dim.name.clone()),
                ColumnRef::Value(v) => entry.values.get(v).map(|value| value.name.clone()),
            })
            .collect()
    }

    /// The indexes table `name` declares, as its catalog entry records
    /// them (none for an unknown table).
    pub fn declared_indexes(&self, name: &str) -> Vec<DeclaredIndex> {
        self.catalog
            .tables
            .get(name)
            .map(|entry| entry.indexes.iter().map(DeclaredIndex::from).collect())
            .unwrap_or_default()
    }

    /// Stores `tensor` as table `name`, replacing any table of that name.
    /// Atomic: after a crash, the table is either the old or the new one.
    pub fn save_table(&mut self, name: &str, tensor: &Tensor) -> Result<()> {
        self.save_tables(&[(name, tensor)])
    }

    /// Stores each tensor of `tables` as the table of its name, replacing
    /// any table of that name, in one commit: after a crash, either every
    /// table is new or every one is as it was.
    pub fn save_tables(&mut self, tables: &[(&str, &Tensor)]) -> Result<()> {
        let data_dir = self.dir.join(DATA);
        let mut catalog = self.catalog.clone();
        let mut replaced = Vec::new();
        for &(name, tensor) in tables {
            // A generation is never reused, even when this save fails
            // halfway: the catalog on disk may already point at its files.
            let generation = self.catalog.next_generation;
            self.catalog.next_generation += 1;
            catalog.next_generation = self.catalog.next_generation;
            let stem = format!("{generation:06}-{}", file_stem(name));
            let data_file = format!("{stem}.parquet");
            write_batch(&data_dir.join(&data_file), tensor.data())?;
            let dictionary_file = match dictionary_batch(tensor)? {
                Some(batch) => {
                    let file = format!("{stem}.dict.parquet");
                    write_batch(&data_dir.join(&file), &batch)?;
                    Some(file)
                }
                None => None,
            };
            let entry = TableEntry::describe(tensor, data_file, dictionary_file);
            replaced.extend(catalog.tables.insert(name.to_string(), entry));
        }
        self.commit(catalog, replaced)
    }

    /// Records `indexes` as the declared indexes of table `name`, in one
    /// commit of the catalog alone (the indexes are rebuilt when the table
    /// is loaded).
    pub fn set_indexes(&mut self, name: &str, indexes: &[DeclaredIndex]) -> Result<()> {
        let mut catalog = self.catalog.clone();
        let Some(entry) = catalog.tables.get_mut(name) else {
            return Err(Error::unknown(
                "Table",
                name,
                self.catalog.tables.keys().map(String::as_str),
            ));
        };
        entry.indexes = indexes.iter().map(IndexEntry::from).collect();
        self.commit(catalog, Vec::new())
    }

    /// Removes the tables `names` in one commit: after a crash, either all
    /// of them are gone or none.
    pub fn drop_tables(&mut self, names: &[&str]) -> Result<()> {
        let mut catalog = self.catalog.clone();
        let mut dropped = Vec::with_capacity(names.len());
        for name in names {
            let Some(entry) = catalog.tables.remove(*name) else {
                return Err(Error::unknown(
                    "Table",
                    name,
                    self.catalog.tables.keys().map(String::as_str),
                ));
            };
            dropped.push(entry);
        }
        self.commit(catalog, dropped)
    }

    /// Writes `catalog` (the commit point), then removes the files of the
    /// `replaced` entries.
    fn commit(&mut self, mut catalog: Catalog, replaced: Vec<TableEntry>) -> Result<()> {
        // A record that did not fit is not written back (a table stored
        // since has a data file, and a record, of its own).
        let unfit = self.unfit.get_mut().unwrap_or_else(PoisonError::into_inner);
        for (name, file) in unfit.iter() {
            if let Some(entry) = catalog.tables.get_mut(name)
                && entry.data_file == *file
            {
                entry.statistics = None;
            }
        }
        let indexes = || catalog.tables.values().flat_map(|t| &t.indexes);
        catalog.version = if indexes().any(|i| i.tiles.is_some()) {
            VERSION
        } else if indexes().next().is_some() {
            INDEXED_VERSION
        } else {
            PLAIN_VERSION
        };
        write_catalog(&self.dir.join(CATALOG), &catalog)?;
        self.catalog = catalog;
        if !replaced.is_empty() {
            let data_dir = self.dir.join(DATA);
            for file in replaced.iter().flat_map(TableEntry::files) {
                // Best effort: an unreferenced file is removed on the next
                // open anyway.
                let _ = std::fs::remove_file(data_dir.join(file));
            }
        }
        Ok(())
    }

    /// Removes temporary files left by interrupted writes and data files
    /// that the catalog does not reference. Best effort: a file that cannot
    /// be removed now is tried again on the next open.
    fn remove_leftovers(&self) {
        let referenced: hashbrown::HashSet<&str> = self
            .catalog
            .tables
            .values()
            .flat_map(TableEntry::files)
            .collect();
        let catalog_temporary = format!(".{CATALOG}.tmp-");
        remove_files(&self.dir, |name| name.starts_with(&catalog_temporary));
        remove_files(&self.dir.join(DATA), |name| {
            !referenced.contains(name) && (name.ends_with(".parquet") || is_temporary(name))
        });
    }
}

/// Removes the files of `folder` whose names satisfy `remove`, as far as
/// possible.
fn remove_files(folder: &Path, remove: impl Fn(&str) -> bool) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(&remove) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl TableEntry {
    fn describe(tensor: &Tensor, data_file: String, dictionary_file: Option<String>) -> TableEntry {
        TableEntry {
            rows: tensor.nnz() as u64,
            dims: tensor
                .dims()
                .iter()
                .map(|d| DimEntry {
                    name: d.name.clone(),
                    size: d.size,
                    strings: d.dictionary.is_some(),
                })
                .collect(),
            values: tensor
                .values()
                .iter()
                .map(|v| ValueEntry {
                    name: v.name.clone(),
                    ty: v.ty,
                })
                .collect(),
            column_order: tensor.column_order().to_vec(),
            bag: tensor.is_bag(),
            indexes: tensor
                .declared_indexes()
                .iter()
                .map(IndexEntry::from)
                .collect(),
            statistics: Some(StatisticsEntry::describe(tensor.statistics(), &data_file)),
            data_file,
            dictionary_file,
        }
    }

    /// The files of this table, in the data folder.
    fn files(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.data_file.as_str()).chain(self.dictionary_file.as_deref())
    }

    /// The stored columns: the dimensions, then the values or the
    /// multiplicity.
    fn stored_fields(&self) -> Vec<(&str, ValueType)> {
        let dims = self
            .dims
            .iter()
            .map(|d| (d.name.as_str(), ValueType::Int64));
        if self.bag {
            dims.chain([(MULTIPLICITY, ValueType::Int64)]).collect()
        } else {
            dims.chain(self.values.iter().map(|v| (v.name.as_str(), v.ty)))
                .collect()
        }
    }
}

/// The statistics record of a catalog entry, `None` if it does not decode.
fn lenient_statistics<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<StatisticsEntry>, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

impl StatisticsEntry {
    fn describe(statistics: &Statistics, data_file: &str) -> StatisticsEntry {
        StatisticsEntry {
            data_file: data_file.to_string(),
            nnz: statistics.nnz(),
            sizes: statistics.sizes().to_vec(),
            degrees: statistics
                .degrees()
                .map(|s| [s.x.bits(), s.y.bits(), s.degree])
                .collect(),
        }
    }

    /// Hands the recorded statistics to `tensor`, loaded from `entry`'s
    /// data file, if they describe that file and table and pass
    /// [`Statistics::restore`]'s checks; whether they did.
    fn restore(&self, entry: &TableEntry, tensor: &Tensor) -> bool {
        let sizes = entry.dims.iter().map(|d| d.size);
        if self.data_file != entry.data_file
            || self.nnz != entry.rows
            || !self.sizes.iter().copied().eq(sizes)
        {
            return false;
        }
        let degrees = self
            .degrees
            .iter()
            .map(|&[x, y, degree]| DegreeStat {
                x: DimSet::from_bits(x),
                y: DimSet::from_bits(y),
                degree,
            })
            .collect();
        Statistics::restore(tensor.dims(), self.nnz, degrees)
            .is_some_and(|statistics| tensor.restore_statistics(statistics))
    }
}

impl From<&IndexEntry> for DeclaredIndex {
    fn from(index: &IndexEntry) -> DeclaredIndex {
        let layout = match &index.tiles {
            None => IndexLayout::Levels(IndexSpec::new(index.order.clone(), index.formats.clone())),
            Some(sizes) => IndexLayout::Tiles(TileSpec::new(index.order.clone(), sizes.clone())),
        };
        DeclaredIndex {
            name: index.name.clone(),
            layout,
        }
    }
}

impl From<&DeclaredIndex> for IndexEntry {
    fn from(index: &DeclaredIndex) -> IndexEntry {
        IndexEntry {
            name: index.name.clone(),
            order: index.layout.order().to_vec(),
            formats: match &index.layout {
                IndexLayout::Levels(spec) => spec.formats.clone(),
                IndexLayout::Tiles(_) => Vec::new(),
            },
            tiles: match &index.layout {
                IndexLayout::Levels(_) => None,
                IndexLayout::Tiles(spec) => Some(spec.sizes.clone()),
            },
        }
    }
}

fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp-")
}

/// A readable, file-system-safe fragment of a table name for file names.
fn file_stem(name: &str) -> String {
    name.chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Locks the directory by its lock file. A lock held elsewhere is retried
/// for a moment before giving up: a process that is spawning a child holds
/// copies of its open files (and so of their locks) until the child starts
/// its program, so a lock can outlive its owner briefly.
fn lock_directory(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let mut attempts = 0;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if attempts < LOCK_ATTEMPTS => {
                attempts += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Catalog {
                    path: dir.to_path_buf(),
                    message: "the database is already open (in another process or elsewhere in \
                              this one); close it there first"
                        .to_string(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
}

fn catalog_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Catalog {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The catalog at `path`, `None` if there is none.
fn read_catalog(path: &Path) -> Result<Option<Catalog>> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let untouched = "no file was changed";
    let json: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
        catalog_error(
            path,
            format!("the catalog is damaged (not valid JSON: {e}); {untouched}"),
        )
    })?;
    if json.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(catalog_error(
            path,
            format!("this is not an einsql catalog (no \"format\": \"{FORMAT}\"); {untouched}"),
        ));
    }
    match json.get("version").and_then(|v| v.as_u64()) {
        Some(PLAIN_VERSION | INDEXED_VERSION | VERSION) => {}
        Some(version) if version > VERSION => {
            return Err(catalog_error(
                path,
                format!(
                    "the database was written by a newer einsql (catalog format {version}; this \
                     build reads formats {PLAIN_VERSION} to {VERSION}); open it with a newer \
                     einsql. {untouched}"
                ),
            ));
        }
        Some(version) => {
            return Err(catalog_error(
                path,
                format!(
                    "catalog format {version} is older than any this build reads (formats \
                     {PLAIN_VERSION} to {VERSION}); {untouched}"
                ),
            ));
        }
        None => {
            return Err(catalog_error(
                path,
                format!("the catalog is damaged (no format version); {untouched}"),
            ));
        }
    }
    let catalog: Catalog = serde_json::from_value(json)
        .map_err(|e| catalog_error(path, format!("the catalog is damaged ({e}); {untouched}")))?;
    let mut index_names: Vec<String> = Vec::new();
    for (name, entry) in &catalog.tables {
        check_entry(path, name, entry)?;
        for index in &entry.indexes {
            if index_names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&index.name))
            {
                return Err(catalog_error(
                    path,
                    format!(
                        "the catalog is damaged: the index name '{}' is declared twice; \
                         {untouched}",
                        index.name
                    ),
                ));
            }
            index_names.push(index.name.clone());
        }
    }
    Ok(Some(catalog))
}

/// Checks what can be checked of a catalog entry without its files.
fn check_entry(path: &Path, name: &str, entry: &TableEntry) -> Result<()> {
    let damaged = |message: String| {
        catalog_error(
            path,
            format!("the catalog is damaged: table '{name}' {message}"),
        )
    };
    for file in entry.files() {
        let plain = !file.is_empty()
            && !file.starts_with('.')
            && file
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !plain {
            return Err(damaged(format!(
                "names the data file '{file}', which is not a plain file name"
            )));
        }
    }
    if entry.bag != entry.values.is_empty() {
        return Err(damaged("has an inconsistent bag flag".to_string()));
    }
    if entry.dims.iter().any(|d| d.strings) != entry.dictionary_file.is_some() {
        return Err(damaged(
            "has string dimensions without a dictionary file, or the reverse".to_string(),
        ));
    }
    Ok(())
}

/// Writes the first, empty catalog of a new database. A directory that
/// already holds data files but no catalog has lost its catalog: that is an
/// error, not an empty database.
fn create_catalog(dir: &Path) -> Result<Catalog> {
    let data_dir = dir.join(DATA);
    if let Ok(entries) = std::fs::read_dir(&data_dir) {
        let orphan = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .find(|name| name.ends_with(".parquet"));
        if let Some(orphan) = orphan {
            return Err(catalog_error(
                &dir.join(CATALOG),
                format!(
                    "the catalog is missing, but the folder '{}' holds data files (such as \
                     '{orphan}'); restore the catalog or move the folder away. No file was changed",
                    data_dir.display()
                ),
            ));
        }
    }
    std::fs::create_dir_all(&data_dir).map_err(|e| Error::io(&data_dir, e))?;
    sync_directory(dir)?;
    let catalog = Catalog {
        format: FORMAT.to_string(),
        version: PLAIN_VERSION,
        next_generation: 1,
        tables: BTreeMap::new(),
    };
    write_catalog(&dir.join(CATALOG), &catalog)?;
    Ok(catalog)
}

fn write_catalog(path: &Path, catalog: &Catalog) -> Result<()> {
    let text = serde_json::to_vec_pretty(catalog)
        .map_err(|e| catalog_error(path, format!("cannot encode the catalog: {e}")))?;
    write_atomically(path, |out| {
        std::io::Write::write_all(out, &text).map_err(|e| Error::io(path, e))
    })
}

/// The strings of every string dimension as a two-column batch
/// (`dimension`, `string`), in coordinate order; `None` when there are no
/// string dimensions.
fn dictionary_batch(tensor: &Tensor) -> Result<Option<RecordBatch>> {
    if tensor.dims().iter().all(|d| d.dictionary.is_none()) {
        return Ok(None);
    }
    let mut dims = Vec::new();
    let mut strings: Vec<&str> = Vec::new();
    for (d, dim) in tensor.dims().iter().enumerate() {
        if let Some(dictionary) = &dim.dictionary {
            dims.extend(std::iter::repeat_n(d as i64, dictionary.len()));
            strings.extend(dictionary.strings().iter().map(String::as_str));
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("dimension", DataType::Int64, false),
        Field::new("string", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(dims)),
        Arc::new(StringArray::from(strings)),
    ];
    Ok(Some(RecordBatch::try_new(schema, columns)?))
}

/// The number of rows of a Parquet file written by this module and its
/// batches, each read as the iterator reaches it (so a table's batches
/// are not all held at once while it is loaded).
fn read_batches<'p>(
    path: &'p Path,
    table: &'p str,
) -> Result<(usize, impl Iterator<Item = Result<RecordBatch>> + 'p)> {
    let problem = move |message: String| {
        catalog_error(path, format!("table '{table}' cannot be loaded: {message}"))
    };
    let file = File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            problem("its data file is missing".to_string())
        } else {
            Error::io(path, e)
        }
    })?;
    let unreadable =
        move |e: &dyn std::fmt::Display| problem(format!("its data file is unreadable ({e})"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| unreadable(&e))?;
    let rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let reader = builder
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| unreadable(&e))?;
    Ok((
        rows,
        reader.map(move |batch| batch.map_err(|e| unreadable(&e))),
    ))
}

/// An empty column with room for `rows` values, or without when the
/// allocator refuses that much (a damaged file's row count: the load then
/// fails on the rows it finds).
fn reserved<T>(rows: usize) -> Vec<T> {
    let mut column = Vec::new();
    // Refused, the column stays empty and grows as the rows come.
    let _ = column.try_reserve_exact(rows);
    column
}

/// Loads one table and checks it against its catalog entry.
fn load_table(data_dir: &Path, name: &str, entry: &TableEntry) -> Result<Tensor> {
    let path = data_dir.join(&entry.data_file);
    let mismatch = |message: String| {
        catalog_error(
            &path,
            format!("table '{name}' cannot be loaded: the data file {message}, unlike the catalog"),
        )
    };
    let expected = entry.stored_fields();
    let (rows, batches) = read_batches(&path, name)?;
    // The columns are made as long as the file says it is, not grown
    // batch by batch (each doubling copied the column to fresh pages).
    let rows = rows.min(usize::try_from(entry.rows).unwrap_or(usize::MAX));
    let mut coords: Vec<Vec<i64>> = (0..entry.dims.len()).map(|_| reserved(rows)).collect();
    let mut annotations: Vec<ValueData> = expected[entry.dims.len()..]
        .iter()
        .map(|(_, ty)| match ty {
            ValueType::Boolean => ValueData::Boolean(reserved(rows)),
            ValueType::Int64 => ValueData::Int64(reserved(rows)),
            ValueType::Int128 => ValueData::Int128(reserved(rows)),
            ValueType::Float64 => ValueData::Float64(reserved(rows)),
        })
        .collect();
    for batch in batches {
        let batch = batch?;
        let schema = batch.schema();
        let found: Vec<(&str, &DataType)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().as_str(), f.data_type()))
            .collect();
        let wanted: Vec<(&str, DataType)> = expected
            .iter()
            .map(|&(n, ty)| (n, ty.arrow_type()))
            .collect();
        if found.len() != wanted.len()
            || found
                .iter()
                .zip(&wanted)
                .any(|(f, w)| f.0 != w.0 || *f.1 != w.1)
        {
            return Err(mismatch(format!(
                "has the columns {found:?}, not {wanted:?}"
            )));
        }
        if batch.columns().iter().any(|c| c.null_count() > 0) {
            return Err(mismatch("holds NULLs".to_string()));
        }
        let (keys, rest) = batch.columns().split_at(entry.dims.len());
        for (out, column) in coords.iter_mut().zip(keys) {
            out.extend_from_slice(column.as_primitive::<Int64Type>().values());
        }
        for (out, column) in annotations.iter_mut().zip(rest) {
            match out {
                ValueData::Boolean(v) => v.extend(column.as_boolean().values().iter()),
                ValueData::Int64(v) => {
                    v.extend_from_slice(column.as_primitive::<Int64Type>().values())
                }
                ValueData::Int128(v) => {
                    v.extend_from_slice(column.as_primitive::<Decimal128Type>().values())
                }
                ValueData::Float64(v) => {
                    v.extend_from_slice(column.as_primitive::<Float64Type>().values())
                }
            }
        }
    }
    let rows = annotations.first().map_or(0, ValueData::len) as u64;
    if rows != entry.rows {
        return Err(mismatch(format!("has {rows} rows, not {}", entry.rows)));
    }
    let mut dictionaries = match &entry.dictionary_file {
        Some(file) => read_dictionaries(&data_dir.join(file), name, entry)?,
        None => vec![None; entry.dims.len()],
    };
    let dims = entry
        .dims
        .iter()
        .zip(dictionaries.iter_mut())
        .map(|(dim, dictionary)| DimensionSpec {
            name: dim.name.clone(),
            size: Some(dim.size),
            dictionary: dictionary.take(),
        })
        .collect();
    // A bag's annotation column is its multiplicities, which `Coo` takes
    // under the reserved name.
    let names = entry
        .values
        .iter()
        .map(|v| v.name.clone())
        .chain(entry.bag.then(|| MULTIPLICITY.to_string()));
    let values = names.zip(annotations).collect();
    let tensor = Tensor::from_coo(Coo {
        dims,
        coords,
        values,
        column_order: Some(entry.column_order.clone()),
    })
    .map_err(|e| mismatch(format!("does not form a valid table ({e})")))?;
    if tensor.nnz() as u64 != entry.rows {
        return Err(mismatch("holds duplicate or unsorted entries".to_string()));
    }
    for index in &entry.indexes {
        tensor.declare(DeclaredIndex::from(index)).map_err(|e| {
            catalog_error(
                &path,
                format!(
                    "table '{name}' cannot be loaded: its index '{}' cannot be built ({e})",
                    index.name
                ),
            )
        })?;
    }
    Ok(tensor)
}

/// The dictionary of every string dimension of `entry` (`None` for integer
/// dimensions), checked against the sizes in the catalog.
fn read_dictionaries(
    path: &Path,
    name: &str,
    entry: &TableEntry,
) -> Result<Vec<Option<Arc<Dictionary>>>> {
    let damaged = |message: String| {
        catalog_error(
            path,
            format!("table '{name}' cannot be loaded: its dictionary file {message}"),
        )
    };
    let mut strings: Vec<Vec<String>> = vec![Vec::new(); entry.dims.len()];
    for batch in read_batches(path, name)?.1 {
        let batch = batch?;
        let (Some(dims), Some(values)) = (
            batch
                .column_by_name("dimension")
                .and_then(|c| c.as_primitive_opt::<Int64Type>()),
            batch
                .column_by_name("string")
                .and_then(|c| c.as_string_opt::<i32>()),
        ) else {
            return Err(damaged(
                "lacks its 'dimension' and 'string' columns".to_string(),
            ));
        };
        if dims.null_count() > 0 || values.null_count() > 0 {
            return Err(damaged("holds NULLs".to_string()));
        }
        for (&d, s) in dims.values().iter().zip(values.iter().flatten()) {
            let slot = usize::try_from(d)
                .ok()
                .filter(|&d| entry.dims.get(d).is_some_and(|dim| dim.strings))
                .and_then(|d| strings.get_mut(d))
                .ok_or_else(|| damaged(format!("names dimension {d}, which has no strings")))?;
            slot.push(s.to_string());
        }
    }
    entry
        .dims
        .iter()
        .zip(strings)
        .map(|(dim, strings)| {
            if !dim.strings {
                return Ok(None);
            }
            if strings.len() as u64 != dim.size {
                return Err(damaged(format!(
                    "holds {} strings for dimension '{}' of size {}",
                    strings.len(),
                    dim.name,
                    dim.size
                )));
            }
            if strings.windows(2).any(|w| w[0] >= w[1]) {
                return Err(damaged(format!(
                    "holds the strings of dimension '{}' out of order",
                    dim.name
                )));
            }
            Ok(Some(Arc::new(Dictionary::from_sorted(strings))))
        })
        .collect()
}
