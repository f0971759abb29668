//! Arrow record batches → tensors.
//!
//! Every table that arrives as Arrow data (a Parquet or CSV file, the rows of
//! an `INSERT`, the result of `CREATE TABLE ... AS SELECT`) becomes a
//! [`Tensor`] here. Each column is either a key (a dimension) or a value (an
//! annotation); a table without value columns is a bag. The roles come from,
//! in order of precedence:
//!
//! 1. the caller's [`ColumnRoles`]: `keys` and `values` together select
//!    exactly the listed columns (others are skipped); `keys` alone makes
//!    every other column a value; `values` alone makes every other column a
//!    key;
//! 2. field metadata written by einsql's own Parquet writer ([`ROLE`],
//!    [`SIZE`], [`POSITION`]), so that einsql files round-trip faithfully;
//! 3. the column types: integer and string columns are keys, floating-point
//!    and boolean columns are values.
//!
//! Keys are integers (any width, unsigned ones range-checked; they become
//! coordinates) or strings (`Utf8`, `LargeUtf8`, `Utf8View` or dictionaries
//! of strings; dictionary-encoded per dimension, in sorted order). Values are
//! integers (→ `Int64`), floats (→ `Float64`) or booleans. NULLs, strings as
//! values, floats or booleans as keys, and other Arrow types (decimals,
//! dates, timestamps, binary, nested) are rejected with an error naming the
//! column. The batches are consumed one at a time by a [`TensorBuilder`], so
//! readers can stream: memory grows with the tensor, not with the input. A
//! value column that arrives in one batch, already of its stored type, is kept
//! as that batch's array: input that is sorted and duplicate-free (a CSR
//! matrix handed over from Python) is then stored without a copy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Decimal128Type, Field, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, Schema, SchemaRef, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};

use crate::error::{Error, Result};
use crate::storage::{
    ColumnRef, Dictionary, DimensionSpec, Tensor, ValueData, ValueSource, ValueType,
};

/// Field metadata key holding a column's role: `key` or `value`.
pub const ROLE: &str = "einsql:role";
/// Field metadata key holding the declared size of an integer key column.
pub const SIZE: &str = "einsql:size";
/// Field metadata key holding a column's 0-based position among the keys
/// (the stored dimension order) or among the values.
pub const POSITION: &str = "einsql:position";

/// Which columns of a batch are keys and which are values; see the module
/// documentation for how the lists combine.
#[derive(Clone, Debug, Default)]
pub struct ColumnRoles {
    /// The key columns (dimensions), by name.
    pub keys: Option<Vec<String>>,
    /// The value columns (annotations), by name.
    pub values: Option<Vec<String>>,
}

/// Builds a tensor from record batches that all have `schema`.
pub fn tensor_from_batches(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    roles: &ColumnRoles,
) -> Result<Tensor> {
    let mut builder = TensorBuilder::new(schema, roles, Origin::Batches)?;
    for batch in batches {
        builder.push(batch)?;
    }
    builder.finish()
}

/// The field metadata that records the role and position of `column` of
/// `tensor` (and the size of an integer key), so that reading the column
/// back gives the same tensor.
pub fn column_metadata(tensor: &Tensor, column: ColumnRef) -> HashMap<String, String> {
    let (role, position) = match column {
        ColumnRef::Key(d) => ("key", d),
        ColumnRef::Value(v) => ("value", v),
    };
    let mut metadata = HashMap::from([
        (ROLE.to_string(), role.to_string()),
        (POSITION.to_string(), position.to_string()),
    ]);
    if let ColumnRef::Key(d) = column
        && let Some(dim) = tensor.dims().get(d)
        && dim.dictionary.is_none()
    {
        metadata.insert(SIZE.to_string(), dim.size.to_string());
    }
    metadata
}

/// Which columns of `schema` the explicit lists of `roles` make values
/// (all `false` when `roles` lists nothing). Readers that infer column types
/// use it to parse such columns as numbers.
pub fn explicit_values(schema: &Schema, roles: &ColumnRoles) -> Result<Vec<bool>> {
    if roles.keys.is_none() && roles.values.is_none() {
        return Ok(vec![false; schema.fields().len()]);
    }
    Ok(
        explicit_roles(schema, roles.keys.as_deref(), roles.values.as_deref())?
            .into_iter()
            .map(|role| role == Role::Value)
            .collect(),
    )
}

/// Where batches come from; decides how errors name their location.
#[derive(Clone, Debug)]
pub enum Origin {
    /// Batches handed over by the caller (SQL `INSERT`, query results).
    Batches,
    /// A Parquet file.
    Parquet(PathBuf),
    /// A CSV file whose first data row is on 1-based line `first_line`.
    Csv { path: PathBuf, first_line: u64 },
}

impl Origin {
    fn path(&self) -> Option<&Path> {
        match self {
            Origin::Batches => None,
            Origin::Parquet(path) | Origin::Csv { path, .. } => Some(path),
        }
    }

    /// A problem with a column as a whole (its type or role).
    fn column_error(&self, message: String) -> Error {
        match self.path() {
            None => Error::Type(message),
            Some(path) => Error::Unsupported {
                path: path.to_path_buf(),
                message,
            },
        }
    }

    /// A problem with the 0-based data row `row`.
    fn row_error(&self, row: u64, message: &str) -> Error {
        match self {
            Origin::Batches => Error::Invalid(format!("row {}: {message}", row + 1)),
            Origin::Parquet(path) => Error::Unsupported {
                path: path.clone(),
                message: format!("row {}: {message}", row + 1),
            },
            Origin::Csv { path, first_line } => Error::file_format(path, first_line + row, message),
        }
    }

    /// Errors of [`Tensor::from_coo`] about the content name the file.
    fn locate(&self, error: Error) -> Error {
        match (error, self.path()) {
            (Error::Invalid(message), Some(path)) => Error::Unsupported {
                path: path.to_path_buf(),
                message,
            },
            (error, _) => error,
        }
    }
}

/// What one loaded column becomes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// An integer key with an optional declared size.
    IntegerKey(Option<u64>),
    /// A dictionary-encoded string key.
    StringKey,
    /// A value column of this type.
    Value(ValueType),
}

/// A column of the input that is loaded.
#[derive(Clone, Debug)]
struct Planned {
    name: String,
    /// Position of the column in the batches.
    index: usize,
    kind: Kind,
}

/// How the columns of a schema map onto a tensor.
#[derive(Clone, Debug)]
struct Plan {
    /// The loaded columns, in batch order.
    columns: Vec<Planned>,
    /// For each dimension in stored order, its position in `columns`.
    dims: Vec<usize>,
    /// For each value column in stored order, its position in `columns`.
    values: Vec<usize>,
}

/// The role a column is given before its type is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Key,
    Value,
    Skipped,
}

impl Plan {
    fn resolve(schema: &Schema, roles: &ColumnRoles, origin: &Origin) -> Result<Plan> {
        let fields = schema.fields();
        if fields.is_empty() {
            return Err(origin.column_error("the table has no columns".to_string()));
        }
        let explicit = roles.keys.is_some() || roles.values.is_some();
        let assigned = match (&roles.keys, &roles.values) {
            (None, None) => fields
                .iter()
                .map(|f| metadata_role(f, origin))
                .collect::<Result<Vec<_>>>()?,
            (keys, values) => explicit_roles(schema, keys.as_deref(), values.as_deref())?
                .into_iter()
                .map(Some)
                .collect(),
        };
        let mut columns = Vec::new();
        for (index, (field, role)) in fields.iter().zip(assigned).enumerate() {
            let role = role.unwrap_or_else(|| default_role(field.data_type()));
            if role == Role::Skipped {
                continue;
            }
            let kind = column_kind(field, role, origin)?;
            columns.push(Planned {
                name: field.name().clone(),
                index,
                kind,
            });
        }
        let (values, keys): (Vec<usize>, Vec<usize>) =
            (0..columns.len()).partition(|&c| matches!(columns[c].kind, Kind::Value(_)));
        let order = |group: Vec<usize>| match explicit {
            true => group,
            false => stored_order(&group, &columns, fields).unwrap_or(group),
        };
        Ok(Plan {
            dims: order(keys),
            values: order(values),
            columns,
        })
    }

    /// The batch positions of the loaded columns, and the plan for batches
    /// that hold only those columns (a projection).
    fn project(mut self) -> (Vec<usize>, Plan) {
        let indices = self.columns.iter().map(|c| c.index).collect();
        for (position, column) in self.columns.iter_mut().enumerate() {
            column.index = position;
        }
        (indices, self)
    }
}

/// Roles from explicit `keys`/`values` lists.
fn explicit_roles(
    schema: &Schema,
    keys: Option<&[String]>,
    values: Option<&[String]>,
) -> Result<Vec<Role>> {
    let fallback = match (keys, values) {
        (Some(_), None) => Role::Value,
        (None, Some(_)) => Role::Key,
        _ => Role::Skipped,
    };
    let mut roles = vec![None; schema.fields().len()];
    for (names, role) in [(keys, Role::Key), (values, Role::Value)] {
        for name in names.unwrap_or_default() {
            let index = find_column(schema, name)?;
            let field = schema.field(index).name();
            match roles[index] {
                Some(previous) if previous != role => {
                    return Err(Error::Invalid(format!(
                        "column '{field}' is listed both as a key and as a value"
                    )));
                }
                Some(_) => {
                    return Err(Error::Invalid(format!("column '{field}' is listed twice")));
                }
                None => roles[index] = Some(role),
            }
        }
    }
    Ok(roles.into_iter().map(|r| r.unwrap_or(fallback)).collect())
}

/// The column called `name`: an exact match, else the only
/// case-insensitive one.
fn find_column(schema: &Schema, name: &str) -> Result<usize> {
    let fields = schema.fields();
    if let Some(index) = fields.iter().position(|f| f.name() == name) {
        return Ok(index);
    }
    let mut matches = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name().eq_ignore_ascii_case(name));
    match (matches.next(), matches.next()) {
        (Some((index, _)), None) => Ok(index),
        _ => Err(Error::unknown(
            "Column",
            name,
            fields.iter().map(|f| f.name().as_str()),
        )),
    }
}

/// The role recorded in a field's metadata, if any.
fn metadata_role(field: &Field, origin: &Origin) -> Result<Option<Role>> {
    match field.metadata().get(ROLE).map(String::as_str) {
        None => Ok(None),
        Some("key") => Ok(Some(Role::Key)),
        Some("value") => Ok(Some(Role::Value)),
        Some(other) => Err(origin.column_error(format!(
            "column '{}' has the role '{other}' in its metadata ({ROLE}); expected 'key' or 'value'",
            field.name()
        ))),
    }
}

fn default_role(ty: &DataType) -> Role {
    if ty.is_integer() || is_string(ty) || *ty == DataType::Null {
        Role::Key
    } else {
        Role::Value
    }
}

fn is_string(ty: &DataType) -> bool {
    match ty {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => {
            matches!(values.as_ref(), DataType::Utf8 | DataType::LargeUtf8)
        }
        _ => false,
    }
}

/// Checks that a column of this type can play `role` (Key or Value).
fn column_kind(field: &Field, role: Role, origin: &Origin) -> Result<Kind> {
    let name = field.name();
    let ty = field.data_type();
    // A decimal of scale 0 is an exact integer: a HUGEINT value.
    let hugeint = matches!(ty, DataType::Decimal128(_, 0));
    let numeric = ty.is_integer() || ty.is_floating() || *ty == DataType::Boolean || hugeint;
    if !numeric && !is_string(ty) && *ty != DataType::Null {
        return Err(origin.column_error(format!(
            "column '{name}' has type {ty}, which einsql cannot store; \
             key columns are integers or strings, value columns integers, floats or booleans"
        )));
    }
    if role == Role::Key {
        if is_string(ty) {
            return Ok(Kind::StringKey);
        }
        if ty.is_integer() || *ty == DataType::Null {
            return Ok(Kind::IntegerKey(declared_size(field, origin)?));
        }
        return Err(origin.column_error(format!(
            "column '{name}' has type {ty} and cannot be a key: keys are integers or strings \
             (make it a value column)"
        )));
    }
    if is_string(ty) {
        return Err(origin.column_error(format!(
            "column '{name}' holds strings and cannot be a value column: values are integers, \
             floats or booleans (make it a key column)"
        )));
    }
    Ok(Kind::Value(if ty.is_integer() {
        ValueType::Int64
    } else if matches!(ty, DataType::Decimal128(_, 0)) {
        ValueType::Int128
    } else if *ty == DataType::Boolean {
        ValueType::Boolean
    } else {
        ValueType::Float64
    }))
}

fn declared_size(field: &Field, origin: &Origin) -> Result<Option<u64>> {
    field
        .metadata()
        .get(SIZE)
        .map(|size| {
            size.parse::<u64>().map_err(|_| {
                origin.column_error(format!(
                    "column '{}' has the size '{size}' in its metadata ({SIZE}); expected a \
                     non-negative integer",
                    field.name()
                ))
            })
        })
        .transpose()
}

/// The stored order of a group of columns (the keys, or the values) as
/// recorded in field metadata, when every column records a distinct
/// position.
fn stored_order(
    group: &[usize],
    columns: &[Planned],
    fields: &arrow::datatypes::Fields,
) -> Option<Vec<usize>> {
    let mut order: Vec<Option<usize>> = vec![None; group.len()];
    for &column in group {
        let position: usize = fields
            .get(columns.get(column)?.index)?
            .metadata()
            .get(POSITION)?
            .parse()
            .ok()?;
        let slot = order.get_mut(position)?;
        if slot.replace(column).is_some() {
            return None;
        }
    }
    order.into_iter().collect()
}

/// The coordinates of one dimension being built.
#[derive(Debug)]
enum KeyData {
    Integers(Vec<i64>),
    /// Strings are interned as they arrive (ids in first-seen order) and
    /// mapped to sorted dictionary coordinates at the end.
    Strings {
        ids: Vec<i64>,
        interned: hashbrown::HashMap<String, i64>,
    },
}

/// Accumulates batches into a tensor, one batch at a time.
#[derive(Debug)]
pub struct TensorBuilder {
    plan: Plan,
    origin: Origin,
    rows: u64,
    /// Per loaded column (in plan order): its keys, if it is a key.
    keys: Vec<Option<KeyData>>,
    /// Per loaded column (in plan order): its values, if it is a value.
    values: Vec<Option<ValueData>>,
    /// Per loaded column (in plan order): the array of the first batch, if
    /// it is a value column of its stored type and no other batch came.
    kept: Vec<Option<ArrayRef>>,
}

impl TensorBuilder {
    /// A builder for batches with `schema`.
    pub fn new(schema: &Schema, roles: &ColumnRoles, origin: Origin) -> Result<TensorBuilder> {
        let plan = Plan::resolve(schema, roles, &origin)?;
        Ok(TensorBuilder::from_plan(plan, origin))
    }

    /// A builder for batches with `schema`, and the positions of the
    /// columns it loads: the builder then expects batches holding only
    /// those columns, in schema order (a reader's projection).
    pub fn projected(
        schema: &Schema,
        roles: &ColumnRoles,
        origin: Origin,
    ) -> Result<(Vec<usize>, TensorBuilder)> {
        let (indices, plan) = Plan::resolve(schema, roles, &origin)?.project();
        Ok((indices, TensorBuilder::from_plan(plan, origin)))
    }

    fn from_plan(plan: Plan, origin: Origin) -> TensorBuilder {
        let keys = plan
            .columns
            .iter()
            .map(|c| match c.kind {
                Kind::IntegerKey(_) => Some(KeyData::Integers(Vec::new())),
                Kind::StringKey => Some(KeyData::Strings {
                    ids: Vec::new(),
                    interned: hashbrown::HashMap::new(),
                }),
                Kind::Value(_) => None,
            })
            .collect();
        let values = plan
            .columns
            .iter()
            .map(|c| match c.kind {
                Kind::Value(ValueType::Boolean) => Some(ValueData::Boolean(Vec::new())),
                Kind::Value(ValueType::Int64) => Some(ValueData::Int64(Vec::new())),
                Kind::Value(ValueType::Int128) => Some(ValueData::Int128(Vec::new())),
                Kind::Value(ValueType::Float64) => Some(ValueData::Float64(Vec::new())),
                _ => None,
            })
            .collect();
        let kept = vec![None; plan.columns.len()];
        TensorBuilder {
            plan,
            origin,
            rows: 0,
            keys,
            values,
            kept,
        }
    }

    /// Appends the rows of `batch`.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        for (c, column) in self.plan.columns.iter().enumerate() {
            let array = batch.columns().get(column.index).ok_or_else(|| {
                Error::Invalid(format!(
                    "a batch has {} columns, but column '{}' is number {}",
                    batch.num_columns(),
                    column.name,
                    column.index + 1
                ))
            })?;
            let located = |(row, message): (usize, String)| {
                self.origin.row_error(
                    self.rows + row as u64,
                    &format!("column '{}' {message}", column.name),
                )
            };
            check_no_nulls(array).map_err(located)?;
            if let Some(Some(keys)) = self.keys.get_mut(c) {
                append_key(array, keys).map_err(located)?;
            } else if let (Some(Some(values)), Some(kept)) =
                (self.values.get_mut(c), self.kept.get_mut(c))
            {
                let stored_type = *array.data_type() == values.value_type().arrow_type();
                if self.rows == 0 && kept.is_none() && stored_type {
                    *kept = Some(ArrayRef::clone(array));
                } else {
                    if let Some(first) = kept.take() {
                        append_value(&first, values).map_err(located)?;
                    }
                    append_value(array, values).map_err(located)?;
                }
            }
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// The tensor of all rows pushed so far.
    pub fn finish(self) -> Result<Tensor> {
        let TensorBuilder {
            plan,
            origin,
            mut keys,
            mut values,
            mut kept,
            ..
        } = self;
        let mut dims = Vec::with_capacity(plan.dims.len());
        let mut coords = Vec::with_capacity(plan.dims.len());
        // Where each loaded column lands: a dimension or a value column.
        let mut place = vec![None; plan.columns.len()];
        for (d, &c) in plan.dims.iter().enumerate() {
            let Some(column) = plan.columns.get(c) else {
                continue;
            };
            place[c] = Some(ColumnRef::Key(d));
            let size = match column.kind {
                Kind::IntegerKey(size) => size,
                _ => None,
            };
            let mut spec = DimensionSpec::new(column.name.clone(), size);
            match keys.get_mut(c).and_then(Option::take) {
                Some(KeyData::Integers(values)) => coords.push(values),
                Some(KeyData::Strings { ids, interned }) => {
                    let (dictionary, codes) = encode_interned(&interned);
                    spec.dictionary = Some(std::sync::Arc::new(dictionary));
                    coords.push(ids.iter().map(|&id| codes[id as usize]).collect());
                }
                None => {}
            }
            dims.push(spec);
        }
        let mut value_columns = Vec::with_capacity(plan.values.len());
        for (v, &c) in plan.values.iter().enumerate() {
            if let (Some(column), Some(data)) = (
                plan.columns.get(c),
                values.get_mut(c).and_then(Option::take),
            ) {
                place[c] = Some(ColumnRef::Value(v));
                let source = match kept.get_mut(c).and_then(Option::take) {
                    Some(array) => ValueSource::Array(array),
                    None => ValueSource::Data(data),
                };
                value_columns.push((column.name.clone(), source));
            }
        }
        let column_order = place.into_iter().flatten().collect();
        Tensor::from_columns(dims, coords, value_columns, Some(column_order))
            .map_err(|e| origin.locate(e))
    }
}

/// The sorted dictionary of interned strings and, for every id, its
/// coordinate.
fn encode_interned(interned: &hashbrown::HashMap<String, i64>) -> (Dictionary, Vec<i64>) {
    let mut by_id: Vec<&str> = vec![""; interned.len()];
    for (string, &id) in interned {
        by_id[id as usize] = string;
    }
    Dictionary::encode(by_id)
}

/// A problem at a 0-based row of one array.
type RowProblem = (usize, String);

fn check_no_nulls(array: &ArrayRef) -> Result<(), RowProblem> {
    let null_row = match array.logical_nulls() {
        Some(nulls) if nulls.null_count() > 0 => nulls.iter().position(|valid| !valid),
        _ => None,
    };
    match null_row {
        Some(row) => Err((
            row,
            "is NULL; keys and values must not be NULL (leave the row out instead)".to_string(),
        )),
        None => Ok(()),
    }
}

fn append_key(array: &ArrayRef, keys: &mut KeyData) -> Result<(), RowProblem> {
    match keys {
        KeyData::Integers(out) => append_integers(array, out),
        KeyData::Strings { ids, interned } => {
            let mut intern = |s: &str| {
                let next = interned.len() as i64;
                *interned.entry_ref(s).or_insert(next)
            };
            match array.data_type() {
                DataType::Utf8 => {
                    ids.extend(array.as_string::<i32>().iter().flatten().map(&mut intern))
                }
                DataType::LargeUtf8 => {
                    ids.extend(array.as_string::<i64>().iter().flatten().map(&mut intern))
                }
                DataType::Utf8View => {
                    ids.extend(array.as_string_view().iter().flatten().map(&mut intern))
                }
                _ => {
                    let strings = arrow::compute::cast(array, &DataType::Utf8)
                        .map_err(|e| (0, format!("cannot be read as strings: {e}")))?;
                    ids.extend(strings.as_string::<i32>().iter().flatten().map(&mut intern))
                }
            }
            Ok(())
        }
    }
}

fn append_value(array: &ArrayRef, values: &mut ValueData) -> Result<(), RowProblem> {
    match values {
        ValueData::Int64(out) => append_integers(array, out),
        ValueData::Int128(out) => match array.data_type() {
            DataType::Decimal128(_, 0) => {
                out.extend_from_slice(array.as_primitive::<Decimal128Type>().values());
                Ok(())
            }
            other => Err(type_changed(other)),
        },
        ValueData::Float64(out) => {
            match array.data_type() {
                DataType::Float16 => out.extend(
                    array
                        .as_primitive::<Float16Type>()
                        .values()
                        .iter()
                        .map(|v| v.to_f64()),
                ),
                DataType::Float32 => out.extend(
                    array
                        .as_primitive::<Float32Type>()
                        .values()
                        .iter()
                        .map(|&v| f64::from(v)),
                ),
                DataType::Float64 => {
                    out.extend_from_slice(array.as_primitive::<Float64Type>().values())
                }
                other => return Err(type_changed(other)),
            }
            Ok(())
        }
        ValueData::Boolean(out) => match array.as_boolean_opt() {
            Some(booleans) => {
                out.extend(booleans.values().iter());
                Ok(())
            }
            None => Err(type_changed(array.data_type())),
        },
    }
}

fn append_integers(array: &ArrayRef, out: &mut Vec<i64>) -> Result<(), RowProblem> {
    macro_rules! widen {
        ($t:ty) => {
            out.extend(
                array
                    .as_primitive::<$t>()
                    .values()
                    .iter()
                    .map(|&v| i64::from(v)),
            )
        };
    }
    match array.data_type() {
        DataType::Int8 => widen!(Int8Type),
        DataType::Int16 => widen!(Int16Type),
        DataType::Int32 => widen!(Int32Type),
        DataType::Int64 => out.extend_from_slice(array.as_primitive::<Int64Type>().values()),
        DataType::UInt8 => widen!(UInt8Type),
        DataType::UInt16 => widen!(UInt16Type),
        DataType::UInt32 => widen!(UInt32Type),
        DataType::UInt64 => {
            for (row, &v) in array
                .as_primitive::<UInt64Type>()
                .values()
                .iter()
                .enumerate()
            {
                let v = i64::try_from(v).map_err(|_| {
                    (
                        row,
                        format!("holds {v}, which does not fit a 64-bit signed integer"),
                    )
                })?;
                out.push(v);
            }
        }
        // Only an empty column has no type.
        DataType::Null => {}
        other => return Err(type_changed(other)),
    }
    Ok(())
}

/// A batch whose column type differs from the schema's.
fn type_changed(ty: &DataType) -> RowProblem {
    (0, format!("has type {ty} in this batch, unlike the schema"))
}
