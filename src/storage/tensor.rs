//! Tensors as K-relations: the unit of storage.
//!
//! A [`Tensor`] is a table whose key columns are its dimensions and whose
//! value columns are annotations sharing one support (the stored entries).
//! It is kept as one Arrow [`RecordBatch`]: a non-null `Int64` coordinate
//! column per dimension, then the value columns, sorted lexicographically in
//! the stored dimension order with duplicate coordinates combined. A query
//! result whose entries are whole rows of its last dimension (every
//! coordinate of it under each stored coordinate of the others: a dense
//! matrix product's rows) is kept as those rows' leading coordinates and
//! the values ([`Tensor::with_full_rows`]); its coordinate columns are
//! listed when something first reads them, and its statistics and size
//! need none. A table
//! without value columns is a bag: its annotation is the multiplicity of each
//! row, kept in a hidden `Int64` column named [`MULTIPLICITY`]. String keys are
//! dictionary-encoded per dimension (see [`Dictionary`]); results decode them.
//!
//! The fill value of every tensor is zero (`false` for booleans). Entries are
//! the rows that were stored, so an explicit zero read from a file is an
//! entry, as in SQL a row whose value is 0 is still a row.
//!
//! Every path that creates a tensor (file readers, `INSERT`, query results)
//! goes through [`Tensor::from_coo`] or [`Tensor::from_columns`], which
//! validate coordinates, sort and combine duplicates with exact arithmetic;
//! `from_columns` keeps Arrow value columns as they are (no copy) when the
//! entries are already sorted and distinct. The statistics are computed on
//! first use (most query results are never estimated), except for stored
//! tables: the catalog computes them when it stores a table, and a
//! database directory keeps them and hands them back
//! ([`Tensor::restore_statistics`]) when it is opened. Fibertree indexes
//! over other dimension orders are built on demand by [`Tensor::index`]
//! and cached with the tensor.

use std::any::{Any, TypeId};
use std::cmp::Ordering;
use std::iter;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use arrow::array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow::buffer::ScalarBuffer;
use arrow::datatypes::{DataType, Field, Schema};
use hashbrown::HashMap;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::storage::fibertree::{DeclaredIndex, FiberTree, IndexLayout, IndexSpec};
use crate::storage::statistics::{DimSet, Statistics};
use crate::storage::tiles::{TileSpec, TiledIndex};

/// Name of the hidden value column that holds row multiplicities of a bag.
pub const MULTIPLICITY: &str = "#multiplicity";

/// The type of a value column (an annotation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ValueType {
    /// Booleans (patterns); duplicates combine with OR.
    Boolean,
    /// Exact 64-bit integers; duplicates combine with checked addition.
    Int64,
    /// Exact 128-bit integers (`HUGEINT`), stored as Arrow
    /// `Decimal128(38, 0)`; duplicates combine with checked addition.
    Int128,
    /// 64-bit floats; duplicates combine with addition.
    Float64,
}

impl ValueType {
    /// The Arrow type of a column of this value type.
    pub fn arrow_type(self) -> DataType {
        match self {
            ValueType::Boolean => DataType::Boolean,
            ValueType::Int64 => DataType::Int64,
            ValueType::Int128 => HUGEINT_ARROW,
            ValueType::Float64 => DataType::Float64,
        }
    }

    /// The SQL name of the type, as `DESCRIBE` shows it.
    pub fn sql_name(self) -> &'static str {
        match self {
            ValueType::Boolean => "BOOLEAN",
            ValueType::Int64 => "BIGINT",
            ValueType::Int128 => "HUGEINT",
            ValueType::Float64 => "DOUBLE",
        }
    }
}

/// The Arrow type of a `HUGEINT` column: `Decimal128(38, 0)`, as DuckDB
/// exports `HUGEINT` and as pyarrow, polars and DuckDB read an exact
/// integer of up to 38 digits back. Values beyond 38 digits (the 128-bit
/// range reaches 39) are still stored exactly; Arrow's validation of the
/// precision is not applied to them.
pub const HUGEINT_ARROW: DataType = DataType::Decimal128(38, 0);

/// A sorted, duplicate-free list of strings; a string's coordinate is its
/// position, so coordinates order like the strings they stand for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Dictionary {
    strings: Vec<String>,
    codes: hashbrown::HashMap<String, i64>,
}

impl Dictionary {
    /// Builds the dictionary of `strings` and returns it with the coordinate
    /// of every input string, in input order.
    pub fn encode<'a>(strings: impl IntoIterator<Item = &'a str>) -> (Dictionary, Vec<i64>) {
        let strings: Vec<&str> = strings.into_iter().collect();
        let mut distinct: Vec<&str> = strings.clone();
        distinct.par_sort_unstable();
        distinct.dedup();
        let dictionary =
            Dictionary::from_sorted(distinct.into_iter().map(str::to_string).collect());
        let codes = strings.iter().map(|s| dictionary.codes[*s]).collect();
        (dictionary, codes)
    }

    /// A dictionary over `strings`, which must be sorted and distinct.
    pub fn from_sorted(strings: Vec<String>) -> Dictionary {
        debug_assert!(strings.windows(2).all(|w| w[0] < w[1]));
        let codes = strings.iter().cloned().zip(0..).collect();
        Dictionary { strings, codes }
    }

    /// The coordinate of `s`, if it is in the dictionary.
    pub fn code(&self, s: &str) -> Option<i64> {
        self.codes.get(s).copied()
    }

    /// The string at coordinate `code`.
    pub fn string(&self, code: i64) -> Option<&str> {
        usize::try_from(code)
            .ok()
            .and_then(|c| self.strings.get(c))
            .map(String::as_str)
    }

    /// The strings, in coordinate order.
    pub fn strings(&self) -> &[String] {
        &self.strings
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether the dictionary has no strings.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}

/// A dimension (key column) of a stored tensor.
#[derive(Clone, Debug)]
pub struct Dimension {
    /// Column name.
    pub name: String,
    /// Number of coordinates: every stored coordinate is in `0..size`.
    pub size: u64,
    /// For string keys, the strings that coordinates stand for.
    pub dictionary: Option<Arc<Dictionary>>,
}

/// A dimension of a tensor being built: its size may still be unknown.
#[derive(Clone, Debug)]
pub struct DimensionSpec {
    /// Column name.
    pub name: String,
    /// The declared size (from a file header or the user); `None` takes
    /// max coordinate + 1.
    pub size: Option<u64>,
    /// For string keys, the dictionary the coordinates index.
    pub dictionary: Option<Arc<Dictionary>>,
}

impl DimensionSpec {
    /// An integer dimension called `name` with an optional declared size.
    pub fn new(name: impl Into<String>, size: Option<u64>) -> Self {
        DimensionSpec {
            name: name.into(),
            size,
            dictionary: None,
        }
    }
}

/// A value column (annotation) of a tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueColumn {
    /// Column name.
    pub name: String,
    /// Value type.
    pub ty: ValueType,
}

/// The values of one column of a tensor being built.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueData {
    /// Booleans.
    Boolean(Vec<bool>),
    /// Exact 64-bit integers.
    Int64(Vec<i64>),
    /// Exact 128-bit integers.
    Int128(Vec<i128>),
    /// 64-bit floats.
    Float64(Vec<f64>),
}

impl ValueData {
    /// The type of these values.
    pub fn value_type(&self) -> ValueType {
        match self {
            ValueData::Boolean(_) => ValueType::Boolean,
            ValueData::Int64(_) => ValueType::Int64,
            ValueData::Int128(_) => ValueType::Int128,
            ValueData::Float64(_) => ValueType::Float64,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ValueData::Boolean(v) => v.len(),
            ValueData::Int64(v) => v.len(),
            ValueData::Int128(v) => v.len(),
            ValueData::Float64(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values at positions `rows`, in that order.
    pub(crate) fn gather(&self, rows: &[usize]) -> ValueData {
        fn pick<T: Copy>(v: &[T], rows: &[usize]) -> Vec<T> {
            rows.iter().map(|&r| v[r]).collect()
        }
        match self {
            ValueData::Boolean(v) => ValueData::Boolean(pick(v, rows)),
            ValueData::Int64(v) => ValueData::Int64(pick(v, rows)),
            ValueData::Int128(v) => ValueData::Int128(pick(v, rows)),
            ValueData::Float64(v) => ValueData::Float64(pick(v, rows)),
        }
    }
}

/// The values of one column handed to [`Tensor::from_columns`].
#[derive(Clone, Debug)]
pub enum ValueSource {
    /// Values in memory, as [`Coo::values`] holds them.
    Data(ValueData),
    /// A non-null Arrow array of a stored type (`Float64`, `Int64`,
    /// `Decimal128(38, 0)` or `Boolean`). It is stored as it is, sharing its buffers, when the
    /// entries need no sorting; otherwise its values are copied.
    Array(ArrayRef),
}

impl ValueSource {
    fn len(&self) -> usize {
        match self {
            ValueSource::Data(data) => data.len(),
            ValueSource::Array(array) => array.len(),
        }
    }

    /// The type of the values (of an array checked by [`ValueSource::check`]).
    fn value_type(&self) -> ValueType {
        match self {
            ValueSource::Data(data) => data.value_type(),
            ValueSource::Array(array) => match array.data_type() {
                DataType::Float64 => ValueType::Float64,
                DataType::Boolean => ValueType::Boolean,
                DataType::Decimal128(..) => ValueType::Int128,
                _ => ValueType::Int64,
            },
        }
    }

    /// An error unless an array is of a stored type and holds no NULL.
    fn check(&self, name: &str) -> Result<()> {
        let ValueSource::Array(array) = self else {
            return Ok(());
        };
        let ty = array.data_type();
        if !matches!(ty, DataType::Float64 | DataType::Int64 | DataType::Boolean)
            && *ty != HUGEINT_ARROW
        {
            return Err(Error::Type(format!(
                "value column '{name}' has type {ty}; stored values are Float64, Int64, \
                 Decimal128(38, 0) or Boolean"
            )));
        }
        if array.logical_null_count() > 0 {
            return Err(Error::Invalid(format!(
                "value column '{name}' holds NULL; values must not be NULL"
            )));
        }
        Ok(())
    }

    /// The values in memory (an array's are copied).
    fn into_data(self) -> ValueData {
        match self {
            ValueSource::Data(data) => data,
            ValueSource::Array(array) => value_data(&array),
        }
    }

    /// The stored column: an array keeps its buffers and loses its
    /// validity bitmap (it marks no NULL), as stored columns have none.
    fn into_array(self) -> ArrayRef {
        match self {
            ValueSource::Data(ValueData::Boolean(v)) => Arc::new(BooleanArray::from(v)),
            ValueSource::Data(ValueData::Int64(v)) => Arc::new(Int64Array::from(v)),
            ValueSource::Data(ValueData::Int128(v)) => Arc::new(hugeint_array(v)),
            ValueSource::Data(ValueData::Float64(v)) => Arc::new(Float64Array::from(v)),
            ValueSource::Array(array) if array.nulls().is_none() => array,
            ValueSource::Array(array) => {
                let any = array.as_any();
                if let Some(a) = any.downcast_ref::<Float64Array>() {
                    Arc::new(Float64Array::new(a.values().clone(), None))
                } else if let Some(a) = any.downcast_ref::<Int64Array>() {
                    Arc::new(Int64Array::new(a.values().clone(), None))
                } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
                    Arc::new(
                        Decimal128Array::new(a.values().clone(), None)
                            .with_data_type(HUGEINT_ARROW),
                    )
                } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
                    Arc::new(BooleanArray::new(a.values().clone(), None))
                } else {
                    array
                }
            }
        }
    }
}

/// A column of a table as users see it, in declaration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnRef {
    /// The dimension at this position of the stored order.
    Key(usize),
    /// The value column at this position.
    Value(usize),
}

/// Entries of a tensor in coordinate (COO) form, in any order and possibly
/// with duplicates: the input of [`Tensor::from_coo`].
#[derive(Clone, Debug)]
pub struct Coo {
    /// The dimensions, in stored order.
    pub dims: Vec<DimensionSpec>,
    /// One coordinate vector per dimension, all of the same length.
    pub coords: Vec<Vec<i64>>,
    /// The value columns with their values; empty for a bag, whose rows
    /// each count once. A bag may instead give its multiplicities as one
    /// `Int64` column named [`MULTIPLICITY`] (each at least 1).
    pub values: Vec<(String, ValueData)>,
    /// The order in which users see the columns; `None` lists the keys,
    /// then the values.
    pub column_order: Option<Vec<ColumnRef>>,
}

/// A stored tensor; see the module documentation.
#[derive(Debug)]
pub struct Tensor {
    dims: Vec<Dimension>,
    values: Vec<ValueColumn>,
    column_order: Vec<ColumnRef>,
    /// The entries: a batch, or full rows listed on first use.
    layout: Layout,
    statistics: OnceLock<Statistics>,
    /// Whether every stored entry counts once, once found
    /// ([`Tensor::counts_each_entry_once`]): asked often while planning,
    /// so kept here rather than among what is derived.
    counts_once: OnceLock<bool>,
    indexes: Mutex<HashMap<IndexSpec, Arc<FiberTree>>>,
    /// The tiled indexes built so far.
    tiled: Mutex<HashMap<TileSpec, Arc<TiledIndex>>>,
    /// The indexes users declared, in the order they were: each is built
    /// and kept in `indexes` or `tiled`.
    declared: Mutex<Vec<DeclaredIndex>>,
    /// What other parts of the engine derive from the tensor's data and
    /// keep with it, one value per type (see [`Tensor::derived`]): shared
    /// with the copies that share the data ([`Tensor::without_indexes`]).
    derived: Arc<Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl Tensor {
    /// Validates, sorts and combines `coo` into a tensor.
    ///
    /// Errors: columns of unequal length, duplicate column names, negative
    /// coordinates or coordinates outside a declared size, a coordinate
    /// beyond a dimension's dictionary, and integer overflow when combining
    /// duplicates.
    pub fn from_coo(coo: Coo) -> Result<Tensor> {
        Tensor::build(coo.into(), false)
    }

    /// [`Tensor::from_coo`] with value columns that may be Arrow arrays
    /// ([`ValueSource::Array`]): when the entries are strictly increasing
    /// (sorted and duplicate-free), such arrays become the stored columns
    /// without a copy. Also an error: an array of another type, or one
    /// holding NULL.
    pub fn from_columns(
        dims: Vec<DimensionSpec>,
        coords: Vec<Vec<i64>>,
        values: Vec<(String, ValueSource)>,
        column_order: Option<Vec<ColumnRef>>,
    ) -> Result<Tensor> {
        Tensor::build(
            Columns {
                specs: dims,
                coords,
                values,
                column_order,
            },
            false,
        )
    }

    /// [`Tensor::from_coo`] for entries the caller knows to be strictly
    /// increasing (a query result written in order): the order is not
    /// checked again, and a single dimension's range is its first and
    /// last coordinate.
    pub(crate) fn from_increasing_coo(coo: Coo) -> Result<Tensor> {
        debug_assert!(
            increasing(&coo.coords, coo.coords.first().map_or(0, Vec::len)),
            "entries said to be increasing are not"
        );
        Tensor::build(coo.into(), true)
    }

    /// A tensor with an entry at every stored coordinate of `source`, in
    /// its order, and the value columns `values` (one value per entry of
    /// `source`): the coordinate columns are `source`'s, shared without a
    /// copy. `dims` names the dimensions and gives their sizes, as in
    /// [`Tensor::from_coo`]; a size below `source`'s is checked against
    /// the coordinates.
    ///
    /// Errors: another number of dimensions than `source` has, value
    /// columns of another length or with duplicate names, or coordinates
    /// outside a given size.
    pub(crate) fn with_coordinates_of(
        source: &Tensor,
        dims: Vec<DimensionSpec>,
        values: Vec<(String, ValueData)>,
    ) -> Result<Tensor> {
        if dims.len() != source.dims.len() {
            return Err(Error::Invalid(format!(
                "{} dimensions given for the coordinates of a tensor of {}",
                dims.len(),
                source.dims.len()
            )));
        }
        let values: NamedValues = values
            .into_iter()
            .map(|(name, data)| (name, ValueSource::Data(data)))
            .collect();
        check_values(&dims, &values)?;
        check_value_lengths(&values, source.nnz())?;
        let dims = dims
            .into_iter()
            .enumerate()
            .map(|(d, spec)| {
                // `source`'s coordinates lie below its own sizes: only a
                // smaller size needs them read.
                let size = spec
                    .dictionary
                    .as_ref()
                    .map_or(spec.size, |dictionary| Some(dictionary.len() as u64));
                let within = size.is_some_and(|size| size >= source.dims[d].size);
                let column = if within { &[][..] } else { source.coords(d) };
                resolve_dimension(spec, column, false)
            })
            .collect::<Result<Vec<_>>>()?;
        let (value_columns, column_order) = value_columns_in_order(&dims, &values, None)?;
        let coords = source.data().columns()[..dims.len()].to_vec();
        let data = build_batch(&dims, coords, values)?;
        Ok(Tensor::assembled(
            dims,
            value_columns,
            column_order,
            Layout::Listed(data),
        ))
    }

    /// [`Tensor::from_columns`]; `known_increasing` skips the order check.
    fn build(columns: Columns, known_increasing: bool) -> Result<Tensor> {
        let Columns {
            specs,
            coords,
            values,
            column_order,
        } = columns;
        if coords.len() != specs.len() {
            return Err(Error::Invalid(format!(
                "{} coordinate columns given for {} dimensions",
                coords.len(),
                specs.len()
            )));
        }
        let rows = coords
            .first()
            .map(Vec::len)
            .or_else(|| values.first().map(|(_, v)| v.len()))
            .unwrap_or(0);
        check_values(&specs, &values)?;
        for (spec, column) in specs.iter().zip(&coords) {
            if column.len() != rows {
                return Err(Error::Invalid(format!(
                    "dimension '{}' has {} coordinates, expected {rows}",
                    spec.name,
                    column.len()
                )));
            }
        }
        check_value_lengths(&values, rows)?;
        let increasing = known_increasing || increasing(&coords, rows);
        // One dimension in increasing order: its first and last
        // coordinates are its least and greatest.
        let ends = increasing && coords.len() == 1;
        let dims = specs
            .into_iter()
            .zip(&coords)
            .map(|(spec, column)| resolve_dimension(spec, column, ends))
            .collect::<Result<Vec<_>>>()?;

        let packed = (!increasing)
            .then(|| sort_packed(&coords, &dims, &values, rows))
            .flatten();
        let (coords, values) = match packed {
            Some(sorted) => sorted,
            None => {
                let order = (!increasing).then(|| sorted_order(&coords, &dims, rows));
                combine_duplicates(coords, values, rows, order.as_deref())?
            }
        };

        let (value_columns, column_order) = value_columns_in_order(&dims, &values, column_order)?;
        let coords = coords
            .into_iter()
            .map(|c| Arc::new(Int64Array::from(c)) as ArrayRef)
            .collect();
        let data = build_batch(&dims, coords, values)?;
        Ok(Tensor::assembled(
            dims,
            value_columns,
            column_order,
            Layout::Listed(data),
        ))
    }

    /// A tensor whose entries are whole rows of its last dimension: every
    /// coordinate `0..size` of it under each stored coordinate of the
    /// leading dimensions, in row-major order. `leading` holds a
    /// coordinate column per leading dimension, strictly increasing
    /// together (the caller knows); each value column holds `size` values
    /// per row. The last dimension's size must be given. No coordinate
    /// column of the entries is made until something reads one; the
    /// statistics and the size in memory need none.
    ///
    /// Errors: fewer than two dimensions, a column count or length that
    /// does not match, a last dimension without a size, or coordinates
    /// outside a given size.
    pub(crate) fn with_full_rows(
        dims: Vec<DimensionSpec>,
        leading: Vec<Vec<i64>>,
        values: Vec<(String, ValueData)>,
    ) -> Result<Tensor> {
        let Some((last, leading_specs)) = dims.split_last() else {
            return Err(Error::Invalid(
                "full rows of a tensor without dimensions".into(),
            ));
        };
        let width = match last.size {
            Some(size) if leading.len() == leading_specs.len() && !leading.is_empty() => size,
            _ => {
                return Err(Error::Invalid(format!(
                    "full rows need the last dimension's size and a coordinate column per \
                     other dimension: {} columns for {} dimensions",
                    leading.len(),
                    dims.len()
                )));
            }
        };
        let rows = leading[0].len();
        if let Some(column) = leading.iter().find(|c| c.len() != rows) {
            return Err(Error::Invalid(format!(
                "leading coordinate columns of {} and {rows} rows",
                column.len()
            )));
        }
        let entries = usize::try_from(width)
            .ok()
            .and_then(|w| w.checked_mul(rows))
            .ok_or_else(|| Error::Invalid(format!("{rows} rows of {width} cells overflow")))?;
        let values: NamedValues = values
            .into_iter()
            .map(|(name, data)| (name, ValueSource::Data(data)))
            .collect();
        check_values(&dims, &values)?;
        check_value_lengths(&values, entries)?;
        let ends = leading.len() == 1;
        let mut resolved = dims
            .iter()
            .zip(&leading)
            .map(|(spec, column)| resolve_dimension(spec.clone(), column, ends))
            .collect::<Result<Vec<_>>>()?;
        resolved.push(resolve_dimension(last.clone(), &[], false)?);
        let (value_columns, column_order) = value_columns_in_order(&resolved, &values, None)?;
        let rows = FullRows {
            leading: leading.into_iter().map(ScalarBuffer::from).collect(),
            annotations: values.into_iter().map(|(_, v)| v.into_array()).collect(),
            width: width as usize,
        };
        let layout = Layout::Rows(rows, OnceLock::new());
        Ok(Tensor::assembled(
            resolved,
            value_columns,
            column_order,
            layout,
        ))
    }

    /// A tensor of these parts, with nothing computed, built or derived
    /// from it yet.
    fn assembled(
        dims: Vec<Dimension>,
        values: Vec<ValueColumn>,
        column_order: Vec<ColumnRef>,
        layout: Layout,
    ) -> Tensor {
        Tensor {
            dims,
            values,
            column_order,
            layout,
            statistics: OnceLock::new(),
            counts_once: OnceLock::new(),
            indexes: Mutex::new(HashMap::new()),
            tiled: Mutex::new(HashMap::new()),
            declared: Mutex::new(Vec::new()),
            derived: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The entries in coordinate form, ready to be extended and stored
    /// again (sizes and dictionaries kept; a bag keeps its multiplicities).
    pub fn to_coo(&self) -> Coo {
        let dims = self
            .dims
            .iter()
            .map(|d| DimensionSpec {
                name: d.name.clone(),
                size: Some(d.size),
                dictionary: d.dictionary.clone(),
            })
            .collect();
        let coords = (0..self.dims.len())
            .map(|d| self.coords(d).to_vec())
            .collect();
        let names = self
            .values
            .iter()
            .map(|v| v.name.clone())
            .chain(self.is_bag().then(|| MULTIPLICITY.to_string()));
        let values = names
            .zip(self.annotation_columns())
            .map(|(name, array)| (name, value_data(array)))
            .collect();
        Coo {
            dims,
            coords,
            values,
            column_order: Some(self.column_order.clone()),
        }
    }

    /// The dimensions, in stored order.
    pub fn dims(&self) -> &[Dimension] {
        &self.dims
    }

    /// The value columns; empty for a bag.
    pub fn values(&self) -> &[ValueColumn] {
        &self.values
    }

    /// Whether the tensor is a bag (no value columns; the annotation of an
    /// entry is its multiplicity).
    pub fn is_bag(&self) -> bool {
        self.values.is_empty()
    }

    /// The columns in the order users see them.
    pub fn column_order(&self) -> &[ColumnRef] {
        &self.column_order
    }

    /// The name of a user-visible column.
    pub fn column_name(&self, column: ColumnRef) -> &str {
        match column {
            ColumnRef::Key(d) => &self.dims[d].name,
            ColumnRef::Value(v) => &self.values[v].name,
        }
    }

    /// The SQL type name of a user-visible column: `VARCHAR` for a
    /// dimension with string keys, `BIGINT` for one with integer keys, the
    /// value type's name for a value column.
    pub fn column_sql_type(&self, column: ColumnRef) -> &'static str {
        match column {
            ColumnRef::Key(d) if self.dims[d].dictionary.is_some() => "VARCHAR",
            ColumnRef::Key(_) => "BIGINT",
            ColumnRef::Value(v) => self.values[v].ty.sql_name(),
        }
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        match &self.layout {
            Layout::Listed(data) => data.num_rows(),
            Layout::Rows(rows, _) => rows.entries(),
        }
    }

    /// Whether the entries fill the dimensions: one for every cell (a
    /// factor matrix, a dense vector). Stored entries are distinct and
    /// inside the dimensions, so then they are every cell in row-major
    /// order. A tensor without dimensions is full when it holds its one
    /// entry.
    pub fn is_full(&self) -> bool {
        let cells = self
            .dims
            .iter()
            .try_fold(1u64, |cells, d| cells.checked_mul(d.size));
        cells == Some(self.nnz() as u64)
    }

    /// The stored batch: coordinate columns, then value columns (or the
    /// multiplicity column of a bag), sorted and duplicate-free. Full rows
    /// list their coordinates the first time.
    pub fn data(&self) -> &RecordBatch {
        match &self.layout {
            Layout::Listed(data) => data,
            Layout::Rows(rows, listed) => {
                listed.get_or_init(|| rows.list(&self.dims, &self.values))
            }
        }
    }

    /// Whether the stored entries are listed (coordinate columns at hand),
    /// not full rows that [`Tensor::data`] would list first.
    pub(crate) fn is_listed(&self) -> bool {
        match &self.layout {
            Layout::Listed(_) => true,
            Layout::Rows(_, listed) => listed.get().is_some(),
        }
    }

    /// The coordinates of dimension `d`, in stored order.
    pub fn coords(&self, d: usize) -> &[i64] {
        int64_values(self.data().column(d))
    }

    /// The stored annotation columns: the value columns, or the multiplicity
    /// column of a bag.
    pub fn annotation_columns(&self) -> &[ArrayRef] {
        match &self.layout {
            Layout::Listed(data) => &data.columns()[self.dims.len()..],
            Layout::Rows(rows, _) => &rows.annotations,
        }
    }

    /// The bytes the tensor's stored arrays take (not its indexes): for
    /// full rows, their leading coordinates and values, and the listed
    /// batch once something listed it.
    pub fn memory_bytes(&self) -> u64 {
        let bytes = match &self.layout {
            Layout::Listed(data) => data.get_array_memory_size(),
            Layout::Rows(rows, listed) => {
                rows.memory_bytes() + listed.get().map_or(0, RecordBatch::get_array_memory_size)
            }
        };
        bytes as u64
    }

    /// The multiplicity of every entry of a bag; `None` for other tensors.
    pub fn multiplicities(&self) -> Option<&[i64]> {
        self.is_bag()
            .then(|| int64_values(self.data().column(self.dims.len())))
    }

    /// Whether every stored entry counts once: a tensor with value
    /// columns, or a bag whose multiplicities are all 1 (a keyed table
    /// without value columns). Found once and kept with the tensor.
    pub fn counts_each_entry_once(&self) -> bool {
        *self.counts_once.get_or_init(|| {
            self.multiplicities()
                .is_none_or(|counts| counts.iter().all(|&m| m == 1))
        })
    }

    /// Whether no two stored entries share their coordinates at `dims` (a
    /// key of the tensor, not only a prefix): at once when those hold the
    /// key prefix ([`Tensor::key_prefix`]), when they have fewer cells
    /// than the tensor has entries (not), or when the statistics are
    /// computed (the distinct projections D(`dims`|∅) against the
    /// entries); else by sorting the entries' coordinates there packed
    /// into one number (`false` when those numbers would pass 64 bits),
    /// found once per set of dimensions and kept with the tensor.
    pub fn distinct_at(&self, dims: &[usize]) -> bool {
        #[derive(Default)]
        struct DistinctAt(Mutex<HashMap<Vec<usize>, bool>>);
        if (0..self.key_prefix()).all(|d| dims.contains(&d)) {
            return true;
        }
        let mut strides = Vec::with_capacity(dims.len());
        let mut space = 1u64;
        for &d in dims.iter().rev() {
            let Some(dim) = self.dims.get(d) else {
                return false;
            };
            strides.push((d, space));
            let Some(next) = space.checked_mul(dim.size) else {
                return false;
            };
            space = next;
        }
        if space < self.nnz() as u64 {
            return false;
        }
        let degree = self
            .statistics
            .get()
            .and_then(|statistics| statistics.degree(DimSet::of(dims)?, DimSet::EMPTY));
        if let Some(distinct) = degree {
            return distinct == self.nnz() as u64;
        }
        let known = self.derived::<DistinctAt>();
        let mut known = known.0.lock().unwrap_or_else(PoisonError::into_inner);
        *known.entry(dims.to_vec()).or_insert_with(|| {
            let columns: Vec<(&[i64], u64)> =
                strides.iter().map(|&(d, s)| (self.coords(d), s)).collect();
            let mut keys: Vec<u64> = (0..self.nnz())
                .map(|e| columns.iter().map(|&(c, s)| c[e] as u64 * s).sum())
                .collect();
            keys.par_sort_unstable();
            keys.windows(2).all(|w| w[0] != w[1])
        })
    }

    /// The length of the shortest prefix of the dimensions (in stored
    /// order) that no two stored entries share: a key of the tensor. 0 for
    /// at most one entry; the number of dimensions when only all of them
    /// together tell every two entries apart. One pass over the sorted
    /// coordinates, found once and kept with the tensor.
    pub fn key_prefix(&self) -> usize {
        #[derive(Default)]
        struct KeyPrefix(OnceLock<usize>);
        *self.derived::<KeyPrefix>().0.get_or_init(|| {
            let columns: Vec<&[i64]> = (0..self.dims.len()).map(|d| self.coords(d)).collect();
            let mut key = 0;
            for r in 1..self.nnz() {
                // The first dimension where entry r differs from the one
                // before.
                let first = columns
                    .iter()
                    .position(|c| c.get(r) != c.get(r - 1))
                    .unwrap_or(columns.len());
                key = key.max(first + 1).min(columns.len());
                if key == columns.len() {
                    break;
                }
            }
            key
        })
    }

    /// The tensor's statistics, computed on first use and kept.
    pub fn statistics(&self) -> &Statistics {
        self.statistics.get_or_init(|| match &self.layout {
            Layout::Listed(data) => Statistics::compute(&self.dims, data),
            Layout::Rows(rows, _) => Statistics::of_full_rows(&self.dims, &rows.leading_columns()),
        })
    }

    /// The tensor's statistics if they were computed or restored already.
    pub fn computed_statistics(&self) -> Option<&Statistics> {
        self.statistics.get()
    }

    /// Keeps `statistics`, restored from where they were saved with the
    /// tensor ([`Statistics::restore`]), as the tensor's, so that they are
    /// not computed; whether they were kept: not if they describe other
    /// sizes or another number of entries, or statistics are already
    /// there.
    pub fn restore_statistics(&self, statistics: Statistics) -> bool {
        let sizes = self.dims.iter().map(|d| d.size);
        statistics.nnz() == self.nnz() as u64
            && statistics.sizes().iter().copied().eq(sizes)
            && self.statistics.set(statistics).is_ok()
    }

    /// The fibertree index described by `spec`, built on first use and
    /// cached with the tensor. A copy that shares the tensor's data
    /// ([`Tensor::without_indexes`]) takes an index another copy built
    /// instead of building it again; it is then among this copy's
    /// [`Tensor::built_indexes`], not among those of the copies made
    /// before or after.
    pub fn index(&self, spec: &IndexSpec) -> Result<Arc<FiberTree>> {
        if let Some(tree) = self.lock_indexes().get(spec) {
            return Ok(Arc::clone(tree));
        }
        let shared = self.derived::<SharedIndexes>();
        let found = shared.lock().get(spec).cloned();
        let tree = match found {
            Some(tree) => tree,
            // Build outside the locks so other queries are not blocked; if
            // two build the same index, the first one stored wins.
            None => {
                let built = Arc::new(FiberTree::build(self, spec)?);
                Arc::clone(shared.lock().entry(spec.clone()).or_insert(built))
            }
        };
        Ok(Arc::clone(
            self.lock_indexes().entry(spec.clone()).or_insert(tree),
        ))
    }

    /// The value of type `T` kept with this tensor, created empty on first
    /// use: data that another part of the engine derives from the tensor
    /// (the optimizer's semijoin reductions of it) and that should live
    /// exactly as long as the tensor, like its indexes.
    pub fn derived<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut derived = self.derived.lock().unwrap_or_else(PoisonError::into_inner);
        let value = derived
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        // The entry for `T`'s type id always holds a `T`.
        Arc::clone(value)
            .downcast::<T>()
            .unwrap_or_else(|_| Arc::new(T::default()))
    }

    /// The same tensor without the indexes built on it in other orders
    /// than its stored one: it shares the data (Arrow buffers), the
    /// statistics if computed (a few numbers per dimension subset), what
    /// is derived from the data and the indexes of its stored order (which
    /// every plan reads for free anyway), and gets its own list of the
    /// others. For a tensor handed to statement after statement whose
    /// plans should not depend on the orders earlier ones indexed it in:
    /// the copy's [`Tensor::built_indexes`] do not list them, but when its
    /// plan builds one of them, [`Tensor::index`] hands over the one built
    /// before.
    pub fn without_indexes(&self) -> Tensor {
        let stored_order: HashMap<IndexSpec, Arc<FiberTree>> = self
            .lock_indexes()
            .iter()
            .filter(|(spec, _)| spec.is_identity())
            .map(|(spec, tree)| (spec.clone(), Arc::clone(tree)))
            .collect();
        Tensor {
            dims: self.dims.clone(),
            values: self.values.clone(),
            column_order: self.column_order.clone(),
            layout: self.layout.clone(),
            statistics: self.statistics.clone(),
            counts_once: self.counts_once.clone(),
            indexes: Mutex::new(stored_order),
            tiled: Mutex::new(HashMap::new()),
            declared: Mutex::new(Vec::new()),
            derived: Arc::clone(&self.derived),
        }
    }

    /// The same tensor with its columns called `names`, in the order users
    /// see them (`FROM t AS u(a, b)`). It shares the data and the
    /// statistics if computed; its indexes are built anew when needed.
    ///
    /// Errors: a number of names other than the number of columns, or a
    /// name given twice (names are case-insensitive).
    pub fn with_column_names(&self, names: &[String]) -> Result<Tensor> {
        if names.len() != self.column_order.len() {
            return Err(Error::Invalid(format!(
                "{} column names for a table of {} columns",
                names.len(),
                self.column_order.len()
            )));
        }
        for (k, name) in names.iter().enumerate() {
            if names[..k].iter().any(|n| n.eq_ignore_ascii_case(name)) {
                return Err(Error::Invalid(format!("column name '{name}' given twice")));
            }
        }
        let mut dims = self.dims.clone();
        let mut values = self.values.clone();
        for (&column, name) in self.column_order.iter().zip(names) {
            match column {
                ColumnRef::Key(d) => dims[d].name.clone_from(name),
                ColumnRef::Value(v) => values[v].name.clone_from(name),
            }
        }
        let schema = self.data().schema();
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(k, field)| {
                let name = match k.checked_sub(dims.len()) {
                    None => &dims[k].name,
                    Some(v) => values.get(v).map_or(field.name(), |c| &c.name),
                };
                field.as_ref().clone().with_name(name)
            })
            .collect();
        let data = RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            self.data().columns().to_vec(),
        )?;
        let renamed = Tensor::assembled(
            dims,
            values,
            self.column_order.clone(),
            Layout::Listed(data),
        );
        // The statistics do not depend on names: a stored table's carry over.
        if let Some(statistics) = self.statistics.get() {
            renamed.restore_statistics(statistics.clone());
        }
        Ok(renamed)
    }

    /// Drops what was derived from the tensor (see [`Tensor::derived`]),
    /// for it and the copies that share it: to free its memory, or to time
    /// that work from scratch.
    pub fn clear_derived(&self) {
        self.derived
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Builds (or finds built) the index `index.layout` and keeps it,
    /// named, for as long as the tensor lives; a declaration of that name
    /// is replaced. Callers keep names unique in their database. Returns
    /// the bytes the built index takes.
    pub fn declare(&self, index: DeclaredIndex) -> Result<u64> {
        let bytes = self.build_layout(&index.layout)?;
        let mut declared = self.lock_declared();
        declared.retain(|d| !d.name.eq_ignore_ascii_case(&index.name));
        declared.push(index);
        Ok(bytes)
    }

    /// Builds (or finds built) the index `layout`, without declaring it;
    /// the bytes it takes.
    pub fn build_layout(&self, layout: &IndexLayout) -> Result<u64> {
        match layout {
            IndexLayout::Levels(spec) => Ok(self.index(spec)?.bytes()),
            IndexLayout::Tiles(spec) => Ok(self.tiles(spec)?.bytes()),
        }
    }

    /// The bytes the index `layout` takes if it is built, without building
    /// it.
    pub fn built_bytes(&self, layout: &IndexLayout) -> Option<u64> {
        match layout {
            IndexLayout::Levels(spec) => self.built_index(spec).map(|tree| tree.bytes()),
            IndexLayout::Tiles(spec) => self.built_tiles(spec).map(|tiles| tiles.bytes()),
        }
    }

    /// Removes the declared index `name` (any case) and frees what it
    /// built; the removed declaration, `None` if there was none.
    pub fn undeclare(&self, name: &str) -> Option<DeclaredIndex> {
        let mut declared = self.lock_declared();
        let position = declared
            .iter()
            .position(|d| d.name.eq_ignore_ascii_case(name))?;
        let index = declared.remove(position);
        if declared.iter().all(|d| d.layout != index.layout) {
            match &index.layout {
                IndexLayout::Levels(spec) => {
                    self.lock_indexes().remove(spec);
                    self.derived::<SharedIndexes>().lock().remove(spec);
                }
                IndexLayout::Tiles(spec) => {
                    self.lock_tiled().remove(spec);
                }
            }
        }
        Some(index)
    }

    /// The declared indexes, in the order they were declared.
    pub fn declared_indexes(&self) -> Vec<DeclaredIndex> {
        self.lock_declared().clone()
    }

    /// The name of the declared fibertree index with spec `spec`, if any.
    pub fn declared_name(&self, spec: &IndexSpec) -> Option<String> {
        self.lock_declared()
            .iter()
            .find(|d| matches!(&d.layout, IndexLayout::Levels(s) if s == spec))
            .map(|d| d.name.clone())
    }

    /// The tiled index described by `spec`, built on first use and cached
    /// with the tensor.
    pub fn tiles(&self, spec: &TileSpec) -> Result<Arc<TiledIndex>> {
        if let Some(tiles) = self.built_tiles(spec) {
            return Ok(tiles);
        }
        let tiles = Arc::new(TiledIndex::build(self, spec)?);
        Ok(Arc::clone(
            self.lock_tiled().entry(spec.clone()).or_insert(tiles),
        ))
    }

    /// The tiled index `spec` if it is built, without building it.
    pub fn built_tiles(&self, spec: &TileSpec) -> Option<Arc<TiledIndex>> {
        self.lock_tiled().get(spec).cloned()
    }

    fn lock_tiled(&self) -> std::sync::MutexGuard<'_, HashMap<TileSpec, Arc<TiledIndex>>> {
        // The cache holds only finished indexes, so a panic elsewhere cannot
        // leave it inconsistent.
        self.tiled.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The index `spec` if it is built, without building it.
    pub fn built_index(&self, spec: &IndexSpec) -> Option<Arc<FiberTree>> {
        self.lock_indexes().get(spec).cloned()
    }

    fn lock_declared(&self) -> std::sync::MutexGuard<'_, Vec<DeclaredIndex>> {
        // Declarations change by one push or removal, so a panic elsewhere
        // cannot leave them inconsistent.
        self.declared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The specifications of the indexes built so far.
    pub fn built_indexes(&self) -> Vec<IndexSpec> {
        let mut specs: Vec<IndexSpec> = self.lock_indexes().keys().cloned().collect();
        specs.sort();
        specs
    }

    fn lock_indexes(&self) -> std::sync::MutexGuard<'_, HashMap<IndexSpec, Arc<FiberTree>>> {
        // The cache holds only finished indexes, so a panic elsewhere cannot
        // leave it inconsistent.
        self.indexes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The rows of the table as SQL shows them: columns in declaration
    /// order, string keys decoded, and each row of a bag repeated as many
    /// times as its multiplicity.
    pub fn to_record_batch(&self) -> Result<RecordBatch> {
        let repeat: Option<Vec<u32>> = match self.multiplicities() {
            Some(m) if m.iter().any(|&c| c != 1) => Some(expansion_indices(m)?),
            _ => None,
        };
        let mut fields = Vec::with_capacity(self.column_order.len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.column_order.len());
        for &column in &self.column_order {
            let (array, nullable_name) = match column {
                ColumnRef::Key(d) => (self.decoded_key(d), &self.dims[d].name),
                ColumnRef::Value(v) => (
                    Arc::clone(&self.annotation_columns()[v]),
                    &self.values[v].name,
                ),
            };
            let array = match &repeat {
                Some(indices) => arrow::compute::take(
                    array.as_ref(),
                    &arrow::array::UInt32Array::from(indices.clone()),
                    None,
                )?,
                None => array,
            };
            fields.push(Field::new(nullable_name, array.data_type().clone(), false));
            columns.push(array);
        }
        let rows = match &repeat {
            Some(indices) => indices.len(),
            None => self.nnz(),
        };
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }

    /// Dimension `d` as users see it: strings for dictionary-encoded keys,
    /// the coordinates otherwise.
    pub fn decoded_key(&self, d: usize) -> ArrayRef {
        match &self.dims[d].dictionary {
            Some(dictionary) => Arc::new(StringArray::from_iter_values(
                self.coords(d)
                    .iter()
                    .map(|&c| dictionary.string(c).unwrap_or_default()),
            )),
            None => Arc::clone(self.data().column(d)),
        }
    }
}

/// How a tensor keeps its entries.
#[derive(Clone, Debug)]
enum Layout {
    /// The stored batch.
    Listed(RecordBatch),
    /// Whole rows of the last dimension, and their batch once something
    /// listed it.
    Rows(FullRows, OnceLock<RecordBatch>),
}

/// The indexes built on a tensor or on any copy that shares its data
/// ([`Tensor::without_indexes`]), kept among what is derived from the
/// data: a copy takes one from here instead of building it again.
#[derive(Default)]
struct SharedIndexes(Mutex<HashMap<IndexSpec, Arc<FiberTree>>>);

impl SharedIndexes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IndexSpec, Arc<FiberTree>>> {
        // It holds only finished indexes: a panic elsewhere cannot leave it
        // inconsistent.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Entries that are whole rows of the last dimension (see
/// [`Tensor::with_full_rows`]).
#[derive(Clone, Debug)]
struct FullRows {
    /// A coordinate column per leading dimension: a row each.
    leading: Vec<ScalarBuffer<i64>>,
    /// The annotation columns, `width` values per row.
    annotations: Vec<ArrayRef>,
    /// The size of the last dimension.
    width: usize,
}

impl FullRows {
    fn entries(&self) -> usize {
        self.leading[0].len() * self.width
    }

    fn leading_columns(&self) -> Vec<&[i64]> {
        self.leading.iter().map(|c| c.as_ref()).collect()
    }

    fn memory_bytes(&self) -> usize {
        let leading: usize = self.leading.iter().map(|c| c.inner().capacity()).sum();
        let values: usize = self
            .annotations
            .iter()
            .map(|a| a.get_array_memory_size())
            .sum();
        leading + values
    }

    /// The entries as a stored batch: each leading coordinate repeated
    /// along its row, the last dimension's coordinates counted along it.
    fn list(&self, dims: &[Dimension], values: &[ValueColumn]) -> RecordBatch {
        let width = self.width;
        let mut coords: Vec<ArrayRef> = self
            .leading
            .iter()
            .map(|column| {
                let repeated = column.iter().flat_map(|&c| iter::repeat_n(c, width));
                Arc::new(Int64Array::from_iter_values(repeated)) as ArrayRef
            })
            .collect();
        let counted = (0..self.leading[0].len()).flat_map(|_| 0..width as i64);
        coords.push(Arc::new(Int64Array::from_iter_values(counted)));
        let mut fields: Vec<Field> = dims
            .iter()
            .map(|d| Field::new(&d.name, DataType::Int64, false))
            .collect();
        fields.extend(
            values
                .iter()
                .map(|v| Field::new(&v.name, v.ty.arrow_type(), false)),
        );
        coords.extend(self.annotations.iter().cloned());
        // The lengths and types were checked when the tensor was made.
        RecordBatch::try_new(Arc::new(Schema::new(fields)), coords)
            .expect("full rows list into a valid batch")
    }
}

/// The parts of a tensor being built: [`Coo`] with value columns that may
/// be arrays.
struct Columns {
    specs: Vec<DimensionSpec>,
    coords: Vec<Vec<i64>>,
    values: Vec<(String, ValueSource)>,
    column_order: Option<Vec<ColumnRef>>,
}

impl From<Coo> for Columns {
    fn from(coo: Coo) -> Columns {
        Columns {
            specs: coo.dims,
            coords: coo.coords,
            values: coo
                .values
                .into_iter()
                .map(|(name, data)| (name, ValueSource::Data(data)))
                .collect(),
            column_order: coo.column_order,
        }
    }
}

/// The values of a non-null `Int64` column.
fn int64_values(array: &ArrayRef) -> &[i64] {
    array
        .as_any()
        .downcast_ref::<Int64Array>()
        .map(|a| a.values().as_ref())
        .unwrap_or(&[])
}

/// The values of a stored annotation column.
fn value_data(array: &ArrayRef) -> ValueData {
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<Float64Array>() {
        ValueData::Float64(a.values().to_vec())
    } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
        ValueData::Boolean(a.values().iter().collect())
    } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
        ValueData::Int128(a.values().to_vec())
    } else {
        ValueData::Int64(int64_values(array).to_vec())
    }
}

/// A `HUGEINT` column: the integers as `Decimal128(38, 0)`, no NULL.
pub fn hugeint_array(values: Vec<i128>) -> Decimal128Array {
    Decimal128Array::new(values.into(), None).with_data_type(HUGEINT_ARROW)
}

/// Row indices that repeat row `r` `multiplicities[r]` times.
fn expansion_indices(multiplicities: &[i64]) -> Result<Vec<u32>> {
    let limit = u64::from(u32::MAX);
    let total = multiplicities
        .iter()
        .try_fold(0u64, |total, &count| {
            total
                .checked_add(u64::try_from(count).ok()?)
                .filter(|&t| t <= limit)
        })
        .ok_or_else(|| {
            Error::NotSupported(format!(
                "listing more than {limit} rows of a bag table at once"
            ))
        })?;
    let mut indices = Vec::with_capacity(total as usize);
    for (row, &count) in multiplicities.iter().enumerate() {
        indices.extend(std::iter::repeat_n(row as u32, count as usize));
    }
    Ok(indices)
}

/// The value columns' names (see [`check_names`]) and contents.
fn check_values(specs: &[DimensionSpec], values: &NamedValues) -> Result<()> {
    check_names(specs, values)?;
    values
        .iter()
        .try_for_each(|(name, source)| source.check(name))
}

/// Every value column has `rows` values.
fn check_value_lengths(values: &NamedValues, rows: usize) -> Result<()> {
    match values.iter().find(|(_, column)| column.len() != rows) {
        Some((name, column)) => Err(Error::Invalid(format!(
            "value column '{name}' has {} values, expected {rows}",
            column.len()
        ))),
        None => Ok(()),
    }
}

/// The value columns a tensor lists (a bag's multiplicities are not one)
/// and its column order: `column_order` checked, or the dimensions and
/// then the value columns.
fn value_columns_in_order(
    dims: &[Dimension],
    values: &NamedValues,
    column_order: Option<Vec<ColumnRef>>,
) -> Result<(Vec<ValueColumn>, Vec<ColumnRef>)> {
    let value_columns: Vec<ValueColumn> = values
        .iter()
        .filter(|(name, _)| name != MULTIPLICITY)
        .map(|(name, source)| ValueColumn {
            name: name.clone(),
            ty: source.value_type(),
        })
        .collect();
    let column_order = match column_order {
        Some(order) => validate_column_order(order, dims.len(), value_columns.len())?,
        None => (0..dims.len())
            .map(ColumnRef::Key)
            .chain((0..value_columns.len()).map(ColumnRef::Value))
            .collect(),
    };
    Ok((value_columns, column_order))
}

fn check_names(specs: &[DimensionSpec], values: &[(String, ValueSource)]) -> Result<()> {
    if let [(name, source)] = values
        && name == MULTIPLICITY
    {
        let multiplicities = match source {
            ValueSource::Data(ValueData::Int64(m)) => Some(m.as_slice()),
            ValueSource::Data(_) => None,
            ValueSource::Array(array) => array
                .as_any()
                .downcast_ref::<Int64Array>()
                .map(|a| a.values().as_ref()),
        };
        return match multiplicities {
            Some(m) if m.iter().all(|&c| c >= 1) => check_names(specs, &[]),
            _ => Err(Error::Invalid(
                "bag multiplicities must be integers of at least 1".to_string(),
            )),
        };
    }
    let mut seen = hashbrown::HashSet::new();
    for name in specs
        .iter()
        .map(|s| &s.name)
        .chain(values.iter().map(|(n, _)| n))
    {
        if name == MULTIPLICITY {
            return Err(Error::Invalid(format!("column name '{name}' is reserved")));
        }
        if !seen.insert(name.to_lowercase()) {
            return Err(Error::Invalid(format!("column '{name}' is listed twice")));
        }
    }
    Ok(())
}

fn validate_column_order(
    order: Vec<ColumnRef>,
    keys: usize,
    values: usize,
) -> Result<Vec<ColumnRef>> {
    let mut expected: Vec<ColumnRef> = (0..keys)
        .map(ColumnRef::Key)
        .chain((0..values).map(ColumnRef::Value))
        .collect();
    let mut given = order.clone();
    let rank = |c: &ColumnRef| match *c {
        ColumnRef::Key(k) => k,
        ColumnRef::Value(v) => keys + v,
    };
    given.sort_by_key(rank);
    expected.sort_by_key(rank);
    if given != expected {
        return Err(Error::Invalid(
            "the column order must list every column once".to_string(),
        ));
    }
    Ok(order)
}

/// Below this many rows, the checks of [`Tensor::from_coo`], the
/// statistics and the index sorts run on the calling thread: handing a
/// small job to the thread pool and waiting for it costs more than the job
/// (a query result of a few thousand entries would spend most of its time
/// there).
pub(crate) const PARALLEL_ROWS: usize = 1 << 16;

/// Whether `test` holds at every index of `indices`, tested on the thread
/// pool in runs of consecutive indices: rayon's own `all` reads a shared
/// flag before every item, which costs more than testing a coordinate.
pub(crate) fn all_in_parallel(indices: Range<usize>, test: impl Fn(usize) -> bool + Sync) -> bool {
    const RUN: usize = 1 << 14;
    let runs = indices.len().div_ceil(RUN);
    (0..runs).into_par_iter().all(|run| {
        let start = indices.start + run * RUN;
        (start..indices.end.min(start + RUN)).all(&test)
    })
}

/// Checks the coordinates of one dimension and settles its size; `sorted`
/// says the column ascends (its range is then its first and last).
fn resolve_dimension(spec: DimensionSpec, column: &[i64], sorted: bool) -> Result<Dimension> {
    let widen = |(lo, hi): (i64, i64), &c: &i64| (lo.min(c), hi.max(c));
    let empty = (i64::MAX, i64::MIN);
    let (min, max) = if sorted {
        match (column.first(), column.last()) {
            (Some(&first), Some(&last)) => (first, last),
            _ => empty,
        }
    } else if column.len() < PARALLEL_ROWS {
        column.iter().fold(empty, widen)
    } else {
        column
            .par_iter()
            .fold(|| empty, widen)
            .reduce(|| empty, |a, b| (a.0.min(b.0), a.1.max(b.1)))
    };
    if !column.is_empty() && min < 0 {
        return Err(Error::Invalid(format!(
            "dimension '{}' has the negative coordinate {min}; key columns hold coordinates \
             0, 1, 2, ... (store other integers as a value column, or as strings)",
            spec.name
        )));
    }
    let observed = if column.is_empty() { 0 } else { max as u64 + 1 };
    let size = match (&spec.dictionary, spec.size) {
        (Some(dictionary), _) => {
            let len = dictionary.len() as u64;
            if observed > len {
                return Err(Error::Invalid(format!(
                    "dimension '{}' has coordinate {max} beyond its {len} dictionary strings",
                    spec.name
                )));
            }
            len
        }
        (None, Some(size)) => {
            if observed > size {
                return Err(Error::Invalid(format!(
                    "dimension '{}' has coordinate {max}, outside its size {size}",
                    spec.name
                )));
            }
            size
        }
        (None, None) => observed,
    };
    Ok(Dimension {
        name: spec.name,
        size,
        dictionary: spec.dictionary,
    })
}

/// Entries `a` and `b` compared lexicographically by their coordinates.
fn compare_rows(coords: &[Vec<i64>], a: usize, b: usize) -> Ordering {
    coords
        .iter()
        .map(|c| c[a].cmp(&c[b]))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// Whether the entries are strictly increasing (sorted and
/// duplicate-free).
fn increasing(coords: &[Vec<i64>], rows: usize) -> bool {
    let ascends = |r: usize| compare_rows(coords, r - 1, r) == Ordering::Less;
    if let [column] = coords {
        // One dimension: a plain scan of the column.
        column.windows(2).all(|w| w[0] < w[1])
    } else if rows < PARALLEL_ROWS {
        (1..rows).all(ascends)
    } else {
        all_in_parallel(1..rows, ascends)
    }
}

/// The permutation that sorts the entries lexicographically (for entries
/// that are not [`increasing`]).
fn sorted_order(coords: &[Vec<i64>], dims: &[Dimension], rows: usize) -> Vec<usize> {
    let compare = |a: usize, b: usize| compare_rows(coords, a, b);
    // When the coordinates fit in 64 bits together, sort packed keys: much
    // faster than comparing column by column.
    let bits = coordinate_bits(dims);
    let parallel = rows >= PARALLEL_ROWS;
    if bits.iter().sum::<u32>() <= 64 {
        let keyed = sorted_by_packed_key(coords, &bits, rows, |r| r);
        keyed.into_iter().map(|(_, r)| r).collect()
    } else {
        let mut order: Vec<usize> = (0..rows).collect();
        let by_row = |a: &usize, b: &usize| compare(*a, *b).then(a.cmp(b));
        if parallel {
            order.par_sort_unstable_by(by_row);
        } else {
            order.sort_unstable_by(by_row);
        }
        order
    }
}

/// The bits a coordinate of each dimension takes (0 for a dimension of
/// one coordinate).
fn coordinate_bits(dims: &[Dimension]) -> Vec<u32> {
    dims.iter()
        .map(|d| u64::BITS - d.size.saturating_sub(1).leading_zeros())
        .collect()
}

/// `(key, tag(r))` for every row `r`, sorted: the key packs the row's
/// coordinates, `bits[d]` bits for dimension `d` (they fit in 64
/// together). In parallel from [`PARALLEL_ROWS`] rows.
fn sorted_by_packed_key<T: Ord + Send>(
    coords: &[Vec<i64>],
    bits: &[u32],
    rows: usize,
    tag: impl Fn(usize) -> T + Sync + Send,
) -> Vec<(u64, T)> {
    let entry = |r: usize| {
        let key = coords.iter().zip(bits).fold(0u64, |acc, (c, &b)| {
            (acc.checked_shl(b).unwrap_or(0)) | c[r] as u64
        });
        (key, tag(r))
    };
    if rows >= PARALLEL_ROWS {
        let mut sorted: Vec<(u64, T)> = (0..rows).into_par_iter().map(entry).collect();
        sorted.par_sort_unstable();
        sorted
    } else {
        let mut sorted: Vec<(u64, T)> = (0..rows).map(entry).collect();
        sorted.sort_unstable();
        sorted
    }
}

/// Entries sorted by their coordinates without a gather through a row
/// order: each entry's coordinates packed into one 64-bit key (when they
/// fit together) and sorted together with its one 64-bit value (or its
/// multiplicity 1 when there is no value column), the coordinate columns
/// then unpacked from the sorted keys. `None` when the coordinates do not
/// fit, the values are of another kind, or two entries share coordinates
/// (their values are added up in row order by [`combine_duplicates`]).
fn sort_packed(
    coords: &[Vec<i64>],
    dims: &[Dimension],
    values: &NamedValues,
    rows: usize,
) -> Option<(Vec<Vec<i64>>, NamedValues)> {
    let bits = coordinate_bits(dims);
    if bits.iter().sum::<u32>() > 64 || rows < 2 {
        return None;
    }
    let (name, payload) = match values.as_slice() {
        [] => (MULTIPLICITY, Payload::Ones),
        [(name, ValueSource::Data(ValueData::Float64(v)))] => (name.as_str(), Payload::Float(v)),
        [(name, ValueSource::Data(ValueData::Int64(v)))] => (name.as_str(), Payload::Int(v)),
        _ => return None,
    };
    let sorted = sorted_by_packed_key(coords, &bits, rows, |r| payload.bits(r));
    if sorted.windows(2).any(|w| w[0].0 == w[1].0) {
        return None;
    }
    let shifts: Vec<u32> = (0..bits.len())
        .map(|d| bits[d + 1..].iter().sum())
        .collect();
    let coords = bits
        .par_iter()
        .zip(shifts)
        .map(|(&b, shift)| {
            let mask = 1u64.checked_shl(b).map_or(u64::MAX, |m| m - 1);
            sorted
                .iter()
                .map(|&(key, _)| (key.checked_shr(shift).unwrap_or(0) & mask) as i64)
                .collect()
        })
        .collect();
    let data = match payload {
        Payload::Float(_) => {
            ValueData::Float64(sorted.iter().map(|&(_, v)| f64::from_bits(v)).collect())
        }
        Payload::Int(_) | Payload::Ones => {
            ValueData::Int64(sorted.iter().map(|&(_, v)| v as i64).collect())
        }
    };
    Some((coords, vec![(name.to_string(), ValueSource::Data(data))]))
}

/// The one value column [`sort_packed`] carries along with the keys.
#[derive(Clone, Copy)]
enum Payload<'a> {
    /// No value column: each entry counts once.
    Ones,
    Float(&'a [f64]),
    Int(&'a [i64]),
}

impl Payload<'_> {
    /// The bits of row `r`'s value.
    #[inline]
    fn bits(self, r: usize) -> u64 {
        match self {
            Payload::Ones => 1,
            Payload::Float(v) => v[r].to_bits(),
            Payload::Int(v) => v[r] as u64,
        }
    }
}

/// Value columns with their names, as [`Tensor::from_columns`] takes them.
type NamedValues = Vec<(String, ValueSource)>;

/// Applies `order` and combines runs of equal coordinates; bags get their
/// multiplicity column here.
fn combine_duplicates(
    coords: Vec<Vec<i64>>,
    values: NamedValues,
    rows: usize,
    order: Option<&[usize]>,
) -> Result<(Vec<Vec<i64>>, NamedValues)> {
    let values = if values.is_empty() {
        vec![(
            MULTIPLICITY.to_string(),
            ValueSource::Data(ValueData::Int64(vec![1; rows])),
        )]
    } else {
        values
    };
    let Some(order) = order else {
        return Ok((coords, values));
    };
    // Start of each run of equal coordinates, in sorted position, and the
    // end of the last.
    let same = |a: usize, b: usize| coords.iter().all(|c| c[a] == c[b]);
    let mut starts = Vec::with_capacity(order.len() + 1);
    starts.extend((0..order.len()).filter(|&p| p == 0 || !same(order[p - 1], order[p])));
    if starts.len() == order.len() {
        // No duplicates: the entries in sorted order.
        let coords = coords
            .into_par_iter()
            .map(|c| order.iter().map(|&r| c[r]).collect())
            .collect();
        let values = values
            .into_iter()
            .map(|(name, source)| (name, ValueSource::Data(source.into_data().gather(order))))
            .collect();
        return Ok((coords, values));
    }
    starts.push(order.len());
    let runs = || starts.windows(2).map(|w| &order[w[0]..w[1]]);
    let coords = coords
        .into_par_iter()
        .map(|c| runs().map(|run| c[run[0]]).collect())
        .collect();
    let values = values
        .into_iter()
        .map(|(name, source)| {
            let combined = match source.into_data() {
                ValueData::Boolean(v) => {
                    ValueData::Boolean(runs().map(|run| run.iter().any(|&r| v[r])).collect())
                }
                ValueData::Float64(v) => {
                    ValueData::Float64(runs().map(|run| run.iter().map(|&r| v[r]).sum()).collect())
                }
                ValueData::Int64(v) => ValueData::Int64(
                    runs()
                        .map(|run| {
                            run.iter()
                                .try_fold(0i64, |acc, &r| acc.checked_add(v[r]))
                                .ok_or_else(|| duplicate_overflow(&name))
                        })
                        .collect::<Result<_>>()?,
                ),
                ValueData::Int128(v) => ValueData::Int128(
                    runs()
                        .map(|run| {
                            run.iter()
                                .try_fold(0i128, |acc, &r| acc.checked_add(v[r]))
                                .ok_or_else(|| duplicate_overflow(&name))
                        })
                        .collect::<Result<_>>()?,
                ),
            };
            Ok((name, ValueSource::Data(combined)))
        })
        .collect::<Result<_>>()?;
    Ok((coords, values))
}

fn duplicate_overflow(name: &str) -> Error {
    Error::Overflow(format!("adding up duplicate entries of column '{name}'"))
}

/// A tensor's record batch: its coordinate columns, then its value
/// columns.
fn build_batch(
    dims: &[Dimension],
    coords: Vec<ArrayRef>,
    values: NamedValues,
) -> Result<RecordBatch> {
    let rows = coords
        .first()
        .map(|c| c.len())
        .or_else(|| values.first().map(|(_, v)| v.len()))
        .unwrap_or(0);
    let mut fields: Vec<Field> = dims
        .iter()
        .map(|d| Field::new(&d.name, DataType::Int64, false))
        .collect();
    let mut columns = coords;
    for (name, source) in values {
        fields.push(Field::new(&name, source.value_type().arrow_type(), false));
        columns.push(source.into_array());
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn coo(dims: usize, coords: Vec<Vec<i64>>, values: Vec<(String, ValueData)>) -> Coo {
        Coo {
            dims: (0..dims)
                .map(|d| DimensionSpec::new(format!("d{d}"), None))
                .collect(),
            coords,
            values,
            column_order: None,
        }
    }

    /// A copy without indexes keeps the stored order's index (free to
    /// every plan) and what was derived from the data, shares what either
    /// derives later, and builds its other orders anew.
    #[test]
    fn a_copy_without_indexes_keeps_the_stored_orders_and_shares_what_is_derived() {
        #[derive(Default)]
        struct Seen(OnceLock<u32>);
        let bag = Tensor::from_coo(coo(
            2,
            vec![vec![0, 1, 1], vec![2, 0, 3]],
            vec![(MULTIPLICITY.into(), ValueData::Int64(vec![1, 2, 1]))],
        ))
        .expect("a bag");
        let stored = bag.index(&IndexSpec::identity(2)).expect("stored order");
        let other = IndexSpec::compressed(vec![1, 0]);
        let reversed = bag.index(&other).expect("the other order");
        assert!(!bag.counts_each_entry_once());
        bag.derived::<Seen>().0.get_or_init(|| 7);

        let copy = bag.without_indexes();
        assert_eq!(copy.built_indexes(), vec![IndexSpec::identity(2)]);
        let again = copy.index(&IndexSpec::identity(2)).expect("stored order");
        assert!(Arc::ptr_eq(&stored, &again));
        assert!(!copy.counts_each_entry_once());
        assert_eq!(copy.derived::<Seen>().0.get(), Some(&7));
        #[derive(Default)]
        struct Later(OnceLock<u32>);
        copy.derived::<Later>().0.get_or_init(|| 9);
        assert_eq!(bag.derived::<Later>().0.get(), Some(&9));

        // The other order, asked for by the copy, is the one built before;
        // it is then the copy's, but not a later copy's.
        let taken = copy.index(&other).expect("the other order");
        assert!(Arc::ptr_eq(&reversed, &taken));
        assert_eq!(copy.built_indexes().len(), 2);
        assert_eq!(bag.without_indexes().built_indexes().len(), 1);
    }

    /// Dropping a declared index frees it, also where copies could have
    /// found it.
    #[test]
    fn an_undeclared_index_is_not_kept_for_copies() {
        let tensor = Tensor::from_coo(coo(
            2,
            vec![vec![0, 1, 1], vec![2, 0, 3]],
            vec![("v".into(), ValueData::Int64(vec![1, 2, 1]))],
        ))
        .expect("a tensor");
        let spec = IndexSpec::compressed(vec![1, 0]);
        tensor
            .declare(DeclaredIndex {
                name: "by_column".to_string(),
                layout: IndexLayout::Levels(spec.clone()),
            })
            .expect("declared");
        let built = tensor.built_index(&spec).expect("built");
        assert_eq!(
            Arc::strong_count(&built),
            3,
            "the tensor's, the shared one and this"
        );
        tensor.undeclare("by_column").expect("undeclared");
        assert_eq!(Arc::strong_count(&built), 1);
        let copy = tensor.without_indexes();
        let rebuilt = copy.index(&spec).expect("built again");
        assert!(!Arc::ptr_eq(&built, &rebuilt));
    }

    /// A tensor at another's coordinates shares its coordinate columns,
    /// takes the given names and sizes, and checks a smaller size against
    /// the coordinates.
    #[test]
    fn a_tensor_at_anothers_coordinates_shares_them() {
        use arrow::array::AsArray;

        let source = Tensor::from_coo(coo(
            2,
            vec![vec![2, 0, 1], vec![5, 1, 3]],
            vec![("v".into(), ValueData::Int64(vec![1, 2, 3]))],
        ))
        .expect("a tensor");
        let spec = |name: &str, size: u64| DimensionSpec::new(name, Some(size));
        let values = |v: Vec<f64>| vec![("w".to_string(), ValueData::Float64(v))];
        let at = Tensor::with_coordinates_of(
            &source,
            vec![spec("i", 10), spec("j", 6)],
            values(vec![0.5, 1.5, 2.5]),
        )
        .expect("the same coordinates");
        for d in 0..2 {
            assert_eq!(at.coords(d).as_ptr(), source.coords(d).as_ptr());
        }
        assert_eq!(at.coords(0), &[0, 1, 2]);
        assert_eq!(at.dims()[0].name, "i");
        assert_eq!(at.dims()[0].size, 10);
        assert_eq!(at.values()[0].name, "w");
        let column = at.annotation_columns()[0].as_primitive::<arrow::datatypes::Float64Type>();
        assert_eq!(column.values().as_ref(), &[0.5, 1.5, 2.5]);

        // Sizes below the source's: checked against the coordinates.
        let small = |j: u64| {
            Tensor::with_coordinates_of(
                &source,
                vec![spec("i", 3), spec("j", j)],
                values(vec![0.0; 3]),
            )
        };
        assert!(small(6).is_ok());
        let message = small(5).expect_err("j = 5 is outside 5").to_string();
        assert!(message.contains("outside its size 5"), "{message}");
        assert!(
            Tensor::with_coordinates_of(&source, vec![spec("i", 3)], values(vec![0.0; 3])).is_err()
        );
        assert!(
            Tensor::with_coordinates_of(
                &source,
                vec![spec("i", 3), spec("j", 6)],
                values(vec![0.0; 2])
            )
            .is_err()
        );
    }

    /// Entries as (coordinates, value) in stored order.
    fn entries(tensor: &Tensor) -> Vec<(Vec<i64>, i64)> {
        let annotation = int64_values(&tensor.annotation_columns()[0]);
        (0..tensor.nnz())
            .map(|r| {
                let key = (0..tensor.dims().len())
                    .map(|d| tensor.coords(d)[r])
                    .collect();
                (key, annotation[r])
            })
            .collect()
    }

    proptest! {
        /// Sorting and combining duplicates agrees with a BTreeMap model,
        /// for integer values and for bags, whatever the packing path
        /// (`distinct` keeps the first row of each coordinate only, so
        /// that the sort that carries the values along can run).
        #[test]
        fn from_coo_matches_a_map_model(
            dims in 0usize..5,
            rows in proptest::collection::vec((proptest::collection::vec(0i64..6, 5), -50i64..50), 0..60),
            wide in any::<bool>(),
            distinct in any::<bool>(),
        ) {
            let mut seen = std::collections::HashSet::new();
            let rows: Vec<_> = rows
                .into_iter()
                .filter(|(c, _)| !distinct || seen.insert(c[..dims].to_vec()))
                .collect();
            // `wide` puts a huge coordinate in, so the keys no longer pack in
            // 64 bits and the comparison sort runs instead.
            let mut coords: Vec<Vec<i64>> = (0..dims)
                .map(|d| rows.iter().map(|(c, _)| c[d]).collect())
                .collect();
            if wide && dims >= 2 && !rows.is_empty() {
                for column in &mut coords {
                    column[0] = i64::MAX - 1;
                }
            }
            let values: Vec<i64> = rows.iter().map(|(_, v)| *v).collect();
            let mut model: BTreeMap<Vec<i64>, (i64, i64)> = BTreeMap::new();
            for r in 0..rows.len() {
                let key: Vec<i64> = coords.iter().map(|c| c[r]).collect();
                let entry = model.entry(key).or_default();
                entry.0 += values[r];
                entry.1 += 1;
            }
            let valued = Tensor::from_coo(coo(
                dims,
                coords.clone(),
                vec![("v".into(), ValueData::Int64(values.clone()))],
            ))
            .unwrap();
            let expected: Vec<(Vec<i64>, i64)> =
                model.iter().map(|(k, (v, _))| (k.clone(), *v)).collect();
            prop_assert_eq!(entries(&valued), expected);

            // A bag without dimensions has no column to count its rows by.
            if dims == 0 {
                return Ok(());
            }
            let bag = Tensor::from_coo(coo(dims, coords, Vec::new())).unwrap();
            prop_assert!(bag.is_bag());
            let expected: Vec<(Vec<i64>, i64)> =
                model.iter().map(|(k, (_, n))| (k.clone(), *n)).collect();
            prop_assert_eq!(entries(&bag), expected);
            prop_assert_eq!(bag.to_record_batch().unwrap().num_rows(), rows.len());

            // Through to_coo and back, nothing changes.
            let again = Tensor::from_coo(bag.to_coo()).unwrap();
            prop_assert_eq!(entries(&again), entries(&bag));
        }
    }

    /// Distinct entries in scrambled order come out sorted, each with its
    /// own value, floats and integers alike, below and above the
    /// threshold for sorting in parallel.
    #[test]
    fn distinct_entries_sort_with_their_values() {
        for rows in [5, PARALLEL_ROWS + 7] {
            // 7919 is prime and divides neither count: a permutation.
            let scrambled: Vec<i64> = (0..rows).map(|i| ((i * 7919) % rows) as i64).collect();
            let coords = vec![
                scrambled.iter().map(|c| c / 100).collect(),
                scrambled.iter().map(|c| c % 100).collect(),
            ];
            let floats =
                |c: &[i64]| ValueData::Float64(c.iter().map(|&c| c as f64 * 0.5).collect());
            let ints = |c: &[i64]| ValueData::Int64(c.iter().map(|&c| 3 * c - 1).collect());
            let sorted: Vec<i64> = (0..rows as i64).collect();
            let makers: [fn(&[i64]) -> ValueData; 2] = [floats, ints];
            for values in makers {
                let tensor = Tensor::from_coo(coo(
                    2,
                    coords.clone(),
                    vec![("v".into(), values(&scrambled))],
                ))
                .unwrap();
                assert_eq!(
                    tensor.coords(0),
                    sorted.iter().map(|c| c / 100).collect::<Vec<_>>()
                );
                assert_eq!(
                    tensor.coords(1),
                    sorted.iter().map(|c| c % 100).collect::<Vec<_>>()
                );
                assert_eq!(value_data(&tensor.annotation_columns()[0]), values(&sorted));
            }
        }
    }

    #[test]
    fn sizes_are_declared_or_observed() {
        let mut input = coo(2, vec![vec![3, 0], vec![1, 1]], Vec::new());
        input.dims[1].size = Some(10);
        let tensor = Tensor::from_coo(input.clone()).unwrap();
        assert_eq!(tensor.dims()[0].size, 4);
        assert_eq!(tensor.dims()[1].size, 10);
        input.dims[1].size = Some(1);
        let err = Tensor::from_coo(input).unwrap_err().to_string();
        assert!(err.contains("coordinate 1, outside its size 1"), "{err}");
    }

    #[test]
    fn rejects_negative_coordinates_and_overflow() {
        let err = Tensor::from_coo(coo(1, vec![vec![2, -1]], Vec::new())).unwrap_err();
        assert!(err.to_string().contains("negative coordinate -1"), "{err}");
        let err = Tensor::from_coo(coo(
            1,
            vec![vec![0, 0]],
            vec![("v".into(), ValueData::Int64(vec![i64::MAX, 1]))],
        ))
        .unwrap_err();
        assert!(matches!(err, Error::Overflow(_)), "{err}");
    }

    #[test]
    fn float_and_boolean_duplicates_combine() {
        let tensor = Tensor::from_coo(coo(
            1,
            vec![vec![1, 0, 1]],
            vec![
                ("x".into(), ValueData::Float64(vec![0.5, 2.0, 0.25])),
                ("b".into(), ValueData::Boolean(vec![false, false, true])),
            ],
        ))
        .unwrap();
        assert_eq!(tensor.nnz(), 2);
        assert_eq!(
            value_data(&tensor.annotation_columns()[0]),
            ValueData::Float64(vec![2.0, 0.75])
        );
        assert_eq!(
            value_data(&tensor.annotation_columns()[1]),
            ValueData::Boolean(vec![false, true])
        );
    }

    #[test]
    fn arrays_of_increasing_entries_are_stored_without_a_copy() {
        let dims = || vec![DimensionSpec::new("i", Some(4))];
        let values: ArrayRef = Arc::new(Float64Array::from(vec![0.5, 2.0, 0.25]));
        let address = |array: &ArrayRef| array.to_data().buffers()[0].as_ptr();
        let kept = Tensor::from_columns(
            dims(),
            vec![vec![0, 1, 3]],
            vec![("x".into(), ValueSource::Array(Arc::clone(&values)))],
            None,
        )
        .unwrap();
        assert_eq!(
            address(&kept.annotation_columns()[0]),
            address(&values),
            "sorted entries keep the array"
        );
        let sorted = Tensor::from_columns(
            dims(),
            vec![vec![3, 0, 0]],
            vec![("x".into(), ValueSource::Array(Arc::clone(&values)))],
            None,
        )
        .unwrap();
        assert_eq!(sorted.coords(0), &[0, 3]);
        assert_eq!(
            value_data(&sorted.annotation_columns()[0]),
            ValueData::Float64(vec![2.25, 0.5])
        );
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        let error = Tensor::from_columns(
            dims(),
            vec![vec![0]],
            vec![("s".into(), ValueSource::Array(strings))],
            None,
        )
        .unwrap_err();
        assert!(error.to_string().contains("value column 's' has type Utf8"));
    }

    #[test]
    fn listing_a_bag_beyond_u32_rows_is_an_error() {
        let tensor = Tensor::from_coo(coo(
            1,
            vec![vec![0, 1]],
            vec![(
                MULTIPLICITY.into(),
                ValueData::Int64(vec![i64::MAX, i64::MAX]),
            )],
        ))
        .unwrap();
        assert!(tensor.is_bag());
        let err = tensor.to_record_batch().unwrap_err();
        assert!(matches!(err, Error::NotSupported(_)), "{err}");
    }

    #[test]
    fn scalars_have_one_entry() {
        let tensor = Tensor::from_coo(coo(
            0,
            Vec::new(),
            vec![("v".into(), ValueData::Int64(vec![2, 3, 4]))],
        ))
        .unwrap();
        assert_eq!(tensor.nnz(), 1);
        assert_eq!(entries(&tensor), vec![(vec![], 9)]);
    }

    #[test]
    fn dictionaries_order_like_their_strings() {
        let (dictionary, codes) = Dictionary::encode(["pear", "apple", "pear", "fig"]);
        assert_eq!(dictionary.strings(), ["apple", "fig", "pear"]);
        assert_eq!(codes, vec![2, 0, 2, 1]);
        assert_eq!(dictionary.code("fig"), Some(1));
        assert_eq!(dictionary.string(3), None);
    }

    #[test]
    fn full_rows_read_as_their_listed_entries() {
        let dims = || {
            vec![
                DimensionSpec::new("i", Some(3)),
                DimensionSpec::new("k", Some(4)),
            ]
        };
        let values: Vec<f64> = (1..=8).map(f64::from).collect();
        let column = |v: &[f64]| vec![("v".to_string(), ValueData::Float64(v.to_vec()))];
        let full = Tensor::with_full_rows(dims(), vec![vec![0, 2]], column(&values)).unwrap();
        let listed = Tensor::from_coo(Coo {
            dims: dims(),
            coords: vec![vec![0, 0, 0, 0, 2, 2, 2, 2], vec![0, 1, 2, 3, 0, 1, 2, 3]],
            values: column(&values),
            column_order: None,
        })
        .unwrap();
        assert_eq!(full.nnz(), 8);
        assert_eq!(full.annotation_columns(), listed.annotation_columns());
        // Neither the statistics nor the size list the coordinates.
        assert_eq!(
            full.statistics().degrees().collect::<Vec<_>>(),
            listed.statistics().degrees().collect::<Vec<_>>()
        );
        assert!(full.memory_bytes() < listed.memory_bytes());
        assert!(matches!(&full.layout, Layout::Rows(_, listed) if listed.get().is_none()));
        assert_eq!(full.coords(1), listed.coords(1));
        assert_eq!(full.data(), listed.data());
        assert_eq!(
            full.without_indexes().to_record_batch().unwrap(),
            listed.to_record_batch().unwrap()
        );
        assert_eq!(full.key_prefix(), 2);
    }

    #[test]
    fn full_rows_reject_what_does_not_fit() {
        // (last dimension's size, leading coordinates, values, error)
        let cases = [
            (None, vec![vec![0]], 2, "size"),
            (Some(2), vec![vec![0]], 3, "3 values"),
            (Some(2), vec![vec![3]], 2, "outside its size"),
            (Some(2), Vec::new(), 0, "columns"),
        ];
        for (last, leading, n, expected) in cases {
            let dims = vec![
                DimensionSpec::new("i", Some(3)),
                DimensionSpec::new("k", last),
            ];
            let values = vec![("v".to_string(), ValueData::Float64(vec![1.0; n]))];
            let error = Tensor::with_full_rows(dims, leading, values).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
        }
    }
}
