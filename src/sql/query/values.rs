//! `VALUES` lists as tables: `SELECT * FROM (VALUES (1, 2.5), (3, 4.0))
//! t(i, v)`, or `VALUES (1, 'a'), (2, 'b')` as a query.
//!
//! The columns are called `col0`, `col1`, ... (as in DuckDB) unless the
//! `FROM` alias names them. Every row must have as many values as the
//! first, each column one type (integers widen to floats). As in a table
//! created without a primary key, string columns and integer columns
//! without negative values are the table's dimensions and the other
//! columns its values; a list without value columns is a bag, so repeated
//! rows count.

use std::sync::Arc;

use sqlparser::ast::Values;

use crate::bound::Literal;
use crate::error::{Error, Result};
use crate::storage::{ColumnRef, Coo, Dictionary, DimensionSpec, Tensor, ValueData};

/// The table a `VALUES` list denotes.
pub fn table(values: &Values) -> Result<Tensor> {
    let rows = values
        .rows
        .iter()
        .map(|row| row.content.iter().map(Literal::from_expr).collect())
        .collect::<Result<Vec<Vec<Literal>>>>()?;
    let width = rows.first().map_or(0, Vec::len);
    if width == 0 {
        return Err(Error::Invalid(
            "VALUES needs at least one value".to_string(),
        ));
    }
    if let Some((r, row)) = rows.iter().enumerate().find(|(_, row)| row.len() != width) {
        return Err(Error::Invalid(format!(
            "VALUES row {} has {} values, but the first row has {width}",
            r + 1,
            row.len()
        )));
    }
    let mut dims = Vec::new();
    let mut coords = Vec::new();
    let mut value_columns = Vec::new();
    let mut order = Vec::new();
    for k in 0..width {
        let name = format!("col{k}");
        let column: Vec<&Literal> = rows.iter().map(|row| &row[k]).collect();
        match column_of(&name, &column)? {
            Column::Key(spec, codes) => {
                order.push(ColumnRef::Key(dims.len()));
                dims.push(spec);
                coords.push(codes);
            }
            Column::Value(data) => {
                order.push(ColumnRef::Value(value_columns.len()));
                value_columns.push((name, data));
            }
        }
    }
    Tensor::from_coo(Coo {
        dims,
        coords,
        values: value_columns,
        column_order: Some(order),
    })
}

/// One column of a `VALUES` list, as a dimension or as values.
enum Column {
    Key(DimensionSpec, Vec<i64>),
    Value(ValueData),
}

/// The column `name` whose values, row by row, are `cells`.
fn column_of(name: &str, cells: &[&Literal]) -> Result<Column> {
    let mismatch = |cell: &Literal| {
        Error::Type(format!(
            "VALUES column {name} mixes {} with {cell}",
            cells[0]
        ))
    };
    match cells[0] {
        Literal::String(_) => {
            let strings = cells
                .iter()
                .map(|&cell| match cell {
                    Literal::String(s) => Ok(s.as_str()),
                    other => Err(mismatch(other)),
                })
                .collect::<Result<Vec<&str>>>()?;
            let (dictionary, codes) = Dictionary::encode(strings);
            let spec = DimensionSpec {
                name: name.to_string(),
                size: Some(dictionary.len() as u64),
                dictionary: Some(Arc::new(dictionary)),
            };
            Ok(Column::Key(spec, codes))
        }
        Literal::Boolean(_) => cells
            .iter()
            .map(|&cell| match cell {
                Literal::Boolean(b) => Ok(*b),
                other => Err(mismatch(other)),
            })
            .collect::<Result<Vec<bool>>>()
            .map(|b| Column::Value(ValueData::Boolean(b))),
        Literal::Integer(_) | Literal::Float(_) => {
            let integers: Option<Vec<i64>> = cells
                .iter()
                .map(|&cell| match cell {
                    Literal::Integer(n) => Some(*n),
                    _ => None,
                })
                .collect();
            match integers {
                Some(codes) if codes.iter().all(|&n| n >= 0) => {
                    Ok(Column::Key(DimensionSpec::new(name, None), codes))
                }
                Some(integers) => Ok(Column::Value(ValueData::Int64(integers))),
                None => cells
                    .iter()
                    .map(|&cell| match cell {
                        Literal::Integer(n) => Ok(*n as f64),
                        Literal::Float(x) => Ok(*x),
                        other => Err(mismatch(other)),
                    })
                    .collect::<Result<Vec<f64>>>()
                    .map(|x| Column::Value(ValueData::Float64(x))),
            }
        }
    }
}
