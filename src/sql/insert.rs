//! `INSERT INTO t [(columns)] VALUES (...), ...` and `INSERT INTO t SELECT ...`.
//!
//! New rows are merged into the stored entries: a row whose key is already
//! stored adds its values to the entry (a bag adds to the multiplicity), as
//! duplicates do everywhere in einsql. New strings extend a dimension's
//! dictionary and new integer keys grow a dimension's size.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
use sqlparser::ast::{Insert, SetExpr, TableObject};

use super::Context;
use crate::bound::{Append, BoundStatement, Literal};
use crate::error::{Error, Result};
use crate::storage::{ColumnRef, Dictionary, MULTIPLICITY, Tensor, ValueData, ValueType};

/// Binds an `INSERT`: the rows of `VALUES`, or of the `SELECT` (evaluated
/// now), to be appended by the session.
pub fn insert(context: Context<'_>, insert: &Insert) -> Result<BoundStatement> {
    let unsupported = [
        (insert.or.is_some(), "INSERT OR ..."),
        (insert.ignore, "INSERT IGNORE"),
        (insert.overwrite, "INSERT OVERWRITE"),
        (insert.on.is_some(), "ON CONFLICT"),
        (insert.returning.is_some(), "RETURNING"),
        (!insert.assignments.is_empty(), "INSERT ... SET"),
        (insert.partitioned.is_some(), "PARTITION"),
    ];
    if let Some((_, construct)) = unsupported.iter().find(|(present, _)| *present) {
        return Err(Error::NotSupported(construct.to_string()));
    }
    let TableObject::TableName(name) = &insert.table else {
        return Err(Error::NotSupported(
            "INSERT INTO a table function".to_string(),
        ));
    };
    let name = super::table_name(name)?;
    context.catalog().get(&name)?;
    let source = insert
        .source
        .as_ref()
        .ok_or_else(|| Error::NotSupported("INSERT without VALUES or SELECT".to_string()))?;
    let rows = match source.body.as_ref() {
        SetExpr::Values(values) => values
            .rows
            .iter()
            .map(|row| row.content.iter().map(Literal::from_expr).collect())
            .collect::<Result<Vec<Vec<Literal>>>>()?,
        _ => query_rows(super::query::relation(context, source)?.as_ref())?,
    };
    let columns = insert
        .columns
        .iter()
        .map(super::table_name)
        .collect::<Result<Vec<_>>>()?;
    Ok(BoundStatement::Insert {
        table: name,
        rows: Box::new(Rows { columns, rows }),
    })
}

/// The rows of an `INSERT`, with the columns they fill.
#[derive(Debug)]
struct Rows {
    /// The statement's column list (empty: every column, in table order).
    columns: Vec<String>,
    rows: Vec<Vec<Literal>>,
}

impl Append for Rows {
    fn append(&self, table: &Tensor) -> Result<Tensor> {
        let targets = target_columns(table, &self.columns)?;
        append(table, &targets, &self.rows)
    }

    fn rows(&self) -> usize {
        self.rows.len()
    }
}

/// The table columns that the statement's column list names, in its order;
/// every column must be given (einsql has no NULLs and no defaults).
fn target_columns(table: &Tensor, columns: &[String]) -> Result<Vec<ColumnRef>> {
    let all = table.column_order();
    if columns.is_empty() {
        return Ok(all.to_vec());
    }
    let mut targets = Vec::with_capacity(columns.len());
    for name in columns {
        let target = all
            .iter()
            .copied()
            .find(|&c| table.column_name(c).eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::unknown("Column", name, all.iter().map(|&c| table.column_name(c)))
            })?;
        if targets.contains(&target) {
            return Err(Error::Invalid(format!("column '{name}' is listed twice")));
        }
        targets.push(target);
    }
    if let Some(missing) = all.iter().find(|c| !targets.contains(c)) {
        return Err(Error::Invalid(format!(
            "INSERT must give every column; '{}' is missing (einsql tables have no NULLs or defaults)",
            table.column_name(*missing)
        )));
    }
    Ok(targets)
}

/// The rows of a query result as constants, in its column order.
fn query_rows(tensor: &Tensor) -> Result<Vec<Vec<Literal>>> {
    let batch = tensor.to_record_batch()?;
    let columns = batch
        .columns()
        .iter()
        .map(column_literals)
        .collect::<Result<Vec<_>>>()?;
    Ok((0..batch.num_rows())
        .map(|row| columns.iter().map(|c| c[row].clone()).collect())
        .collect())
}

fn column_literals(array: &ArrayRef) -> Result<Vec<Literal>> {
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        Ok(a.values().iter().map(|&v| Literal::Integer(v)).collect())
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        Ok(a.values().iter().map(|&v| Literal::Float(v)).collect())
    } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
        Ok(a.values().iter().map(Literal::Boolean).collect())
    } else if let Some(a) = any.downcast_ref::<StringArray>() {
        Ok((0..a.len())
            .map(|i| Literal::String(a.value(i).to_string()))
            .collect())
    } else {
        Err(Error::Type(format!(
            "cannot insert values of type {}",
            array.data_type()
        )))
    }
}

/// The table with `rows` added; `targets[k]` is the column of each row's
/// `k`-th value.
fn append(table: &Tensor, targets: &[ColumnRef], rows: &[Vec<Literal>]) -> Result<Tensor> {
    for (r, row) in rows.iter().enumerate() {
        if row.len() != targets.len() {
            return Err(Error::Invalid(format!(
                "row {} has {} values, expected {}",
                r + 1,
                row.len(),
                targets.len()
            )));
        }
    }
    let position = |column: ColumnRef| targets.iter().position(|&t| t == column).unwrap_or(0);
    let mut coo = table.to_coo();
    for (d, (spec, coords)) in coo.dims.iter_mut().zip(&mut coo.coords).enumerate() {
        let k = position(ColumnRef::Key(d));
        let new = rows.iter().map(|row| &row[k]);
        match &spec.dictionary {
            Some(dictionary) => {
                let strings = new
                    .enumerate()
                    .map(|(r, literal)| match literal {
                        Literal::String(s) => Ok(s.as_str()),
                        other => Err(mismatch(&spec.name, "VARCHAR", other, r)),
                    })
                    .collect::<Result<Vec<&str>>>()?;
                let merged = merge_dictionary(dictionary, &strings);
                for c in coords.iter_mut() {
                    let old = dictionary.string(*c).unwrap_or_default();
                    *c = merged.code(old).unwrap_or_default();
                }
                coords.extend(strings.iter().map(|s| merged.code(s).unwrap_or_default()));
                spec.dictionary = Some(Arc::new(merged));
            }
            None => {
                for (r, literal) in new.enumerate() {
                    let coordinate = match literal {
                        Literal::Integer(v) if *v >= 0 => *v,
                        Literal::Integer(v) => {
                            return Err(Error::Invalid(format!(
                                "row {}: key column '{}' cannot hold the negative value {v}",
                                r + 1,
                                spec.name
                            )));
                        }
                        other => return Err(mismatch(&spec.name, "BIGINT", other, r)),
                    };
                    spec.size = Some(spec.size.unwrap_or(0).max(coordinate as u64 + 1));
                    coords.push(coordinate);
                }
            }
        }
    }
    for (v, (name, data)) in coo.values.iter_mut().enumerate() {
        if name == MULTIPLICITY {
            if let ValueData::Int64(counts) = data {
                counts.extend(std::iter::repeat_n(1, rows.len()));
            }
            continue;
        }
        let k = position(ColumnRef::Value(v));
        for (r, row) in rows.iter().enumerate() {
            push_value(name, data, &row[k], r)?;
        }
    }
    Tensor::from_coo(coo)
}

fn push_value(name: &str, data: &mut ValueData, literal: &Literal, row: usize) -> Result<()> {
    match (data, literal) {
        (ValueData::Int64(v), Literal::Integer(x)) => v.push(*x),
        (ValueData::Int128(v), Literal::Integer(x)) => v.push(i128::from(*x)),
        (ValueData::Float64(v), Literal::Float(x)) => v.push(*x),
        (ValueData::Float64(v), Literal::Integer(x)) => v.push(*x as f64),
        (ValueData::Boolean(v), Literal::Boolean(x)) => v.push(*x),
        (data, other) => {
            let ty: ValueType = data.value_type();
            return Err(mismatch(name, ty.sql_name(), other, row));
        }
    }
    Ok(())
}

fn mismatch(column: &str, ty: &str, literal: &Literal, row: usize) -> Error {
    Error::Type(format!(
        "row {}: column '{column}' is {ty}, but the value {literal} is {}",
        row + 1,
        literal.type_name()
    ))
}

/// The sorted union of a dictionary's strings and `new` ones.
fn merge_dictionary(dictionary: &Dictionary, new: &[&str]) -> Dictionary {
    let mut strings: Vec<String> = dictionary
        .strings()
        .iter()
        .cloned()
        .chain(new.iter().map(|s| s.to_string()))
        .collect();
    strings.sort_unstable();
    strings.dedup();
    Dictionary::from_sorted(strings)
}
