//! The table functions usable in `FROM`: the loaders `read_mtx`,
//! `read_tns`, `read_parquet` and `read_csv`, DuckDB-style, with named
//! options, and `einsql_indexes()`, the declared indexes of the database
//! (as DuckDB's `duckdb_indexes()`):
//!
//! ```sql
//! SELECT * FROM read_csv('sales.csv', keys = ['store', 'day'], values = ['amount']);
//! CREATE TABLE t AS SELECT * FROM read_tns('nell.tns', zero_based = true);
//! SELECT index_name, columns FROM einsql_indexes() WHERE table_name = 'a';
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, ObjectName, TableFunctionArgs};

use super::Context;
use crate::bound::Literal;
use crate::error::{Error, Result, closest_name};
use crate::io::{FileFormat, FileLoad, ReadOptions};
use crate::storage::{Coo, Dictionary, DimensionSpec, Tensor, ValueData};

/// The table functions, with the format each reads.
const FUNCTIONS: [(&str, FileFormat); 4] = [
    ("read_mtx", FileFormat::MatrixMarket),
    ("read_tns", FileFormat::Tns),
    ("read_parquet", FileFormat::Parquet),
    ("read_csv", FileFormat::Csv),
];

/// The named options the table functions accept.
const OPTIONS: [&str; 5] = ["keys", "values", "zero_based", "header", "delimiter"];

/// The table function that lists the declared indexes.
const INDEXES: &str = "einsql_indexes";

/// The table of the table function call `name(args)`: what
/// [`catalog_table`] makes of it, or the file it names, loaded.
pub fn load(context: Context<'_>, name: &ObjectName, args: &TableFunctionArgs) -> Result<Tensor> {
    match catalog_table(context, name, args)? {
        Some(tensor) => Ok(tensor),
        None => file_load(name, args)?.read(context.progress),
    }
}

/// The table of a call of a function that reads the catalog
/// (`einsql_indexes()`), `None` for any other function.
///
/// `einsql_indexes()` has a row per declared index: `index_name`,
/// `table_name`, `columns` (in level order, comma-separated), `formats`
/// (a level format per column) and `bytes` (the size of the built tree).
pub fn catalog_table(
    context: Context<'_>,
    name: &ObjectName,
    args: &TableFunctionArgs,
) -> Result<Option<Tensor>> {
    if !super::table_name(name)?.eq_ignore_ascii_case(INDEXES) {
        return Ok(None);
    }
    if !args.args.is_empty() {
        return Err(Error::Invalid(format!("{INDEXES}() takes no arguments")));
    }
    let catalog = context.catalog();
    let indexes = catalog.indexes();
    let mut rows: [Vec<String>; 4] = Default::default();
    let mut bytes = Vec::with_capacity(indexes.len());
    for (table, index) in &indexes {
        let tensor = catalog.get(table)?;
        let dims = tensor.dims();
        let columns: Vec<&str> = index
            .layout
            .order()
            .iter()
            .map(|&d| dims[d].name.as_str())
            .collect();
        let formats = index.layout.formats();
        let built = tensor.built_bytes(&index.layout).unwrap_or(0);
        for (column, cell) in rows.iter_mut().zip([
            index.name.clone(),
            table.clone(),
            columns.join(", "),
            formats.join(", "),
        ]) {
            column.push(cell);
        }
        bytes.push(i64::try_from(built).unwrap_or(i64::MAX));
    }
    let names = ["index_name", "table_name", "columns", "formats"];
    let mut dims = Vec::with_capacity(names.len());
    let mut coords = Vec::with_capacity(names.len());
    for (name, column) in names.into_iter().zip(&rows) {
        let (dictionary, codes) = Dictionary::encode(column.iter().map(String::as_str));
        dims.push(DimensionSpec {
            name: name.to_string(),
            size: Some(dictionary.len() as u64),
            dictionary: Some(Arc::new(dictionary)),
        });
        coords.push(codes);
    }
    Tensor::from_coo(Coo {
        dims,
        coords,
        values: vec![("bytes".to_string(), ValueData::Int64(bytes))],
        column_order: None,
    })
    .map(Some)
}

/// The file that the table function call `name(args)` names, with how to
/// read it.
pub fn file_load(name: &ObjectName, args: &TableFunctionArgs) -> Result<FileLoad> {
    let function = super::table_name(name)?.to_lowercase();
    let format = FUNCTIONS
        .iter()
        .find(|(f, _)| *f == function)
        .map(|(_, format)| *format)
        .ok_or_else(|| {
            Error::unknown(
                "Table function",
                &function,
                FUNCTIONS.iter().map(|(f, _)| *f).chain([INDEXES]),
            )
        })?;
    let (path, options) = arguments(&function, &args.args)?;
    Ok(FileLoad {
        format,
        path: PathBuf::from(path),
        options,
    })
}

/// The file path (the one positional argument) and the named options.
fn arguments(function: &str, args: &[FunctionArg]) -> Result<(String, ReadOptions)> {
    let mut path = None;
    let mut options = ReadOptions::default();
    for arg in args {
        match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) if path.is_none() => {
                path = Some(string(function, "the file path", expr)?);
            }
            FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(expr),
                ..
            } => set_option(function, &mut options, &name.value, expr)?,
            other => {
                return Err(Error::Invalid(format!(
                    "{function}: unexpected argument {other}; give the file path, then options as name = value"
                )));
            }
        }
    }
    let path = path.ok_or_else(|| {
        Error::Invalid(format!(
            "{function} needs a file path, e.g. {function}('file')"
        ))
    })?;
    Ok((path, options))
}

fn set_option(function: &str, options: &mut ReadOptions, name: &str, expr: &Expr) -> Result<()> {
    let what = format!("option '{name}'");
    match name.to_lowercase().as_str() {
        "keys" => options.keys = Some(names(function, &what, expr)?),
        "values" => options.values = Some(names(function, &what, expr)?),
        "zero_based" => options.zero_based = boolean(function, &what, expr)?,
        "header" => options.header = Some(boolean(function, &what, expr)?),
        "delimiter" => {
            let text = string(function, &what, expr)?;
            match text.as_bytes() {
                [byte] => options.delimiter = Some(*byte),
                _ => {
                    return Err(Error::Invalid(format!(
                        "{function}: the delimiter must be one character, not '{text}'"
                    )));
                }
            }
        }
        other => {
            let hint = closest_name(other, OPTIONS)
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            return Err(Error::Invalid(format!(
                "{function}: unknown option '{other}'{hint}; options are {}",
                OPTIONS.join(", ")
            )));
        }
    }
    Ok(())
}

fn string(function: &str, what: &str, expr: &Expr) -> Result<String> {
    match Literal::from_expr(expr) {
        Ok(Literal::String(s)) => Ok(s),
        _ => Err(Error::Type(format!(
            "{function}: {what} must be a string, not {expr}"
        ))),
    }
}

fn boolean(function: &str, what: &str, expr: &Expr) -> Result<bool> {
    match Literal::from_expr(expr) {
        Ok(Literal::Boolean(b)) => Ok(b),
        _ => Err(Error::Type(format!(
            "{function}: {what} must be true or false, not {expr}"
        ))),
    }
}

/// Column names: a list `['a', 'b']` or one string `'a, b'`.
fn names(function: &str, what: &str, expr: &Expr) -> Result<Vec<String>> {
    let names = match expr {
        Expr::Array(array) => array
            .elem
            .iter()
            .map(|e| string(function, what, e))
            .collect::<Result<Vec<_>>>()?,
        other => string(function, what, other)?
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
    };
    Ok(names)
}
