//! `CREATE TABLE` (with columns, or `AS SELECT`) and `DROP TABLE` (`DROP
//! INDEX` goes to [`super::index`]).
//!
//! A table created with columns is an empty tensor whose dimensions are its
//! `PRIMARY KEY` columns, in key order, and whose value columns are the
//! rest. Without a primary key, integer and string columns are dimensions and
//! floating-point and boolean columns are values. String columns must be
//! dimensions (they are dictionary-encoded); floats and booleans cannot be.

use std::sync::Arc;

use sqlparser::ast::{
    ColumnDef, ColumnOption, CreateTable, DataType, ObjectName, ObjectType, TableConstraint,
};

use super::Context;
use crate::bound::{BoundStatement, Relation};
use crate::error::{Error, Result};
use crate::storage::{ColumnRef, Coo, Dictionary, DimensionSpec, Tensor, ValueData};

/// The SQL column types einsql stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnType {
    Integer,
    /// `HUGEINT`: values only.
    Huge,
    Float,
    String,
    Boolean,
}

impl ColumnType {
    fn of(column: &ColumnDef) -> Result<ColumnType> {
        use DataType as D;
        Ok(match &column.data_type {
            D::TinyInt(_)
            | D::SmallInt(_)
            | D::Int(_)
            | D::Integer(_)
            | D::BigInt(_)
            | D::Int2(_)
            | D::Int4(_)
            | D::Int8(_)
            | D::Int16
            | D::Int32
            | D::Int64
            | D::UTinyInt
            | D::USmallInt
            | D::UInt8
            | D::UInt16
            | D::UInt32
            | D::UInt64
            | D::UBigInt
            | D::Signed
            | D::SignedInteger => ColumnType::Integer,
            D::HugeInt | D::Int128 => ColumnType::Huge,
            D::Float(_)
            | D::Float4
            | D::Float8
            | D::Float32
            | D::Float64
            | D::Real
            | D::Double(_)
            | D::DoublePrecision => ColumnType::Float,
            D::Varchar(_)
            | D::Char(_)
            | D::Character(_)
            | D::CharVarying(_)
            | D::CharacterVarying(_)
            | D::Text
            | D::String(_) => ColumnType::String,
            D::Bool | D::Boolean => ColumnType::Boolean,
            other => {
                return Err(Error::NotSupported(format!(
                    "the column type {other} (of column '{}'); use BIGINT, HUGEINT, DOUBLE, \
                     VARCHAR or BOOLEAN",
                    column.name.value
                )));
            }
        })
    }
}

/// Binds `CREATE TABLE`.
pub fn create_table(context: Context<'_>, create: &CreateTable) -> Result<BoundStatement> {
    let name = super::table_name(&create.name)?;
    let unsupported = [
        (create.temporary, "TEMPORARY tables"),
        (create.like.is_some(), "CREATE TABLE ... LIKE"),
        (create.clone.is_some(), "CREATE TABLE ... CLONE"),
        (create.external, "EXTERNAL tables"),
    ];
    if let Some((_, construct)) = unsupported.iter().find(|(present, _)| *present) {
        return Err(Error::NotSupported(construct.to_string()));
    }
    let source = match &create.query {
        Some(query) => {
            if !create.columns.is_empty() {
                return Err(Error::NotSupported(
                    "a column list in CREATE TABLE ... AS SELECT".to_string(),
                ));
            }
            super::query::bind(context, query)?
        }
        None => Relation::Tensor(Arc::new(empty_table(create)?)),
    };
    Ok(BoundStatement::CreateTable {
        name,
        source,
        if_not_exists: create.if_not_exists,
        or_replace: create.or_replace,
    })
}

/// The empty tensor that a column list declares.
fn empty_table(create: &CreateTable) -> Result<Tensor> {
    if create.columns.is_empty() {
        return Err(Error::Invalid(
            "CREATE TABLE needs at least one column".to_string(),
        ));
    }
    let types = create
        .columns
        .iter()
        .map(ColumnType::of)
        .collect::<Result<Vec<_>>>()?;
    let declared_keys = primary_key(create)?;
    let is_key: Vec<bool> = match &declared_keys {
        Some(keys) => create
            .columns
            .iter()
            .map(|c| keys.iter().any(|k| k.eq_ignore_ascii_case(&c.name.value)))
            .collect(),
        None => types
            .iter()
            .map(|t| matches!(t, ColumnType::Integer | ColumnType::String))
            .collect(),
    };
    // Dimensions in key order: the PRIMARY KEY's order when declared.
    let mut key_columns: Vec<usize> = (0..create.columns.len()).filter(|&c| is_key[c]).collect();
    if let Some(keys) = &declared_keys {
        key_columns.sort_by_key(|&c| {
            keys.iter()
                .position(|k| k.eq_ignore_ascii_case(&create.columns[c].name.value))
        });
    }
    let mut dims = Vec::new();
    let mut values = Vec::new();
    let mut column_order = Vec::new();
    for (c, (column, ty)) in create.columns.iter().zip(&types).enumerate() {
        check_options(column)?;
        let name = column.name.value.clone();
        if is_key[c] {
            let dictionary = match ty {
                ColumnType::Integer => None,
                ColumnType::String => Some(Arc::new(Dictionary::default())),
                ColumnType::Huge | ColumnType::Float | ColumnType::Boolean => {
                    return Err(Error::Type(format!(
                        "key column '{name}' is {}; keys are integers or strings",
                        column.data_type
                    )));
                }
            };
            let position = key_columns
                .iter()
                .position(|&k| k == c)
                .unwrap_or(dims.len());
            column_order.push(ColumnRef::Key(position));
            dims.push((
                position,
                DimensionSpec {
                    name,
                    size: None,
                    dictionary,
                },
            ));
        } else {
            let data = match ty {
                ColumnType::Integer => ValueData::Int64(Vec::new()),
                ColumnType::Huge => ValueData::Int128(Vec::new()),
                ColumnType::Float => ValueData::Float64(Vec::new()),
                ColumnType::Boolean => ValueData::Boolean(Vec::new()),
                ColumnType::String => {
                    return Err(Error::Type(format!(
                        "string column '{name}' must be part of the key (strings are \
                         dictionary-encoded dimensions, not values)"
                    )));
                }
            };
            column_order.push(ColumnRef::Value(values.len()));
            values.push((name, data));
        }
    }
    dims.sort_by_key(|(position, _)| *position);
    let dims: Vec<DimensionSpec> = dims.into_iter().map(|(_, spec)| spec).collect();
    Tensor::from_coo(Coo {
        coords: vec![Vec::new(); dims.len()],
        dims,
        values,
        column_order: Some(column_order),
    })
}

/// The declared primary key columns, if any.
fn primary_key(create: &CreateTable) -> Result<Option<Vec<String>>> {
    let mut keys: Option<Vec<String>> = None;
    let mut declare = |columns: Vec<String>| {
        if keys.replace(columns).is_some() {
            return Err(Error::Invalid(
                "a table can have only one PRIMARY KEY".to_string(),
            ));
        }
        Ok(())
    };
    for column in &create.columns {
        if column
            .options
            .iter()
            .any(|o| matches!(o.option, ColumnOption::PrimaryKey(_)))
        {
            declare(vec![column.name.value.clone()])?;
        }
    }
    for constraint in &create.constraints {
        match constraint {
            TableConstraint::PrimaryKey(pk) => declare(
                pk.columns
                    .iter()
                    .map(|c| match &c.column.expr {
                        sqlparser::ast::Expr::Identifier(ident) => Ok(ident.value.clone()),
                        other => Err(Error::NotSupported(format!(
                            "the expression {other} in a PRIMARY KEY (name columns)"
                        ))),
                    })
                    .collect::<Result<_>>()?,
            )?,
            other => {
                return Err(Error::NotSupported(format!("the table constraint {other}")));
            }
        }
    }
    if let Some(keys) = &keys {
        for key in keys {
            if !create
                .columns
                .iter()
                .any(|c| c.name.value.eq_ignore_ascii_case(key))
            {
                return Err(Error::unknown(
                    "Column",
                    key,
                    create.columns.iter().map(|c| c.name.value.as_str()),
                ));
            }
        }
    }
    Ok(keys)
}

/// Accepts the column options that hold for every einsql column.
fn check_options(column: &ColumnDef) -> Result<()> {
    for option in &column.options {
        match &option.option {
            ColumnOption::NotNull | ColumnOption::PrimaryKey(_) => {}
            other => {
                return Err(Error::NotSupported(format!(
                    "the column option {other} (on column '{}')",
                    column.name.value
                )));
            }
        }
    }
    Ok(())
}

/// Binds `DROP TABLE [IF EXISTS] a, b, ...`.
pub fn drop(
    object_type: ObjectType,
    if_exists: bool,
    names: &[ObjectName],
) -> Result<BoundStatement> {
    if object_type == ObjectType::Index {
        return super::index::drop_index(if_exists, names);
    }
    if object_type != ObjectType::Table {
        return Err(Error::NotSupported(format!("DROP {object_type}")));
    }
    let names = names
        .iter()
        .map(super::table_name)
        .collect::<Result<Vec<_>>>()?;
    Ok(BoundStatement::Drop { names, if_exists })
}
