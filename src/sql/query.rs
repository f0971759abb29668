//! `SELECT` queries.
//!
//! So far a query lists a stored table or a loaded file: `SELECT * FROM t`,
//! `SELECT * FROM read_mtx('a.mtx')`, or such a query in parentheses. Joins,
//! filters, projections and aggregates are rejected by name.

use std::sync::Arc;

use sqlparser::ast::{
    ObjectName, Query, Select, SelectItem, SetExpr, TableFactor, TableFunctionArgs,
};

use super::Context;
use crate::database::QueryResult;
use crate::error::{Error, Result};
use crate::storage::Tensor;

/// Runs a `SELECT` and returns its rows.
pub fn select(context: Context<'_>, query: &Query) -> Result<QueryResult> {
    let tensor = relation(context, query)?;
    let batch = tensor.to_record_batch()?;
    Ok(QueryResult::rows(batch.schema(), vec![batch]))
}

/// Where the rows of a query come from.
pub enum Source<'q> {
    /// A stored table, by name.
    Table(String),
    /// A file read by a table function such as `read_mtx('a.mtx')`.
    File {
        function: &'q ObjectName,
        args: &'q TableFunctionArgs,
    },
}

/// The table that a query denotes.
pub fn relation(context: Context<'_>, query: &Query) -> Result<Arc<Tensor>> {
    match source(query)? {
        Source::Table(name) => context.catalog().get(&name),
        Source::File { function, args } => {
            super::table_function::load(context, function, args).map(Arc::new)
        }
    }
}

/// Where a query's rows come from, checked without reading anything;
/// constructs beyond `SELECT * FROM <table or file>` are rejected by name.
pub fn source(query: &Query) -> Result<Source<'_>> {
    let unsupported = [
        (query.with.is_some(), "WITH"),
        (query.order_by.is_some(), "ORDER BY"),
        (query.limit_clause.is_some(), "LIMIT"),
        (query.fetch.is_some(), "FETCH"),
    ];
    reject(&unsupported)?;
    match query.body.as_ref() {
        SetExpr::Select(select) => select_source(select),
        SetExpr::Query(inner) => source(inner),
        SetExpr::Values(_) => Err(not_yet("VALUES as a query")),
        SetExpr::SetOperation { op, .. } => Err(not_yet(&op.to_string())),
        other => Err(not_yet(&other.to_string())),
    }
}

fn select_source(select: &Select) -> Result<Source<'_>> {
    let star = matches!(
        select.projection.as_slice(),
        [SelectItem::Wildcard(options)] if options.to_string().is_empty()
    );
    let unsupported = [
        (!star, "a select list other than *"),
        (select.distinct.is_some(), "DISTINCT"),
        (select.selection.is_some(), "WHERE"),
        (
            !matches!(&select.group_by, sqlparser::ast::GroupByExpr::Expressions(e, _) if e.is_empty()),
            "GROUP BY",
        ),
        (select.having.is_some(), "HAVING"),
        (select.from.len() > 1, "joins"),
        (select.from.iter().any(|t| !t.joins.is_empty()), "joins"),
        (select.from.is_empty(), "SELECT without FROM"),
    ];
    reject(&unsupported)?;
    match &select.from[0].relation {
        TableFactor::Table {
            name, args: None, ..
        } => Ok(Source::Table(super::table_name(name)?)),
        TableFactor::Table {
            name,
            args: Some(args),
            ..
        } => Ok(Source::File {
            function: name,
            args,
        }),
        TableFactor::Derived { subquery, .. } => source(subquery),
        other => Err(not_yet(&format!("FROM {other}"))),
    }
}

fn reject(checks: &[(bool, &str)]) -> Result<()> {
    match checks.iter().find(|(present, _)| *present) {
        Some((_, construct)) => Err(not_yet(construct)),
        None => Ok(()),
    }
}

fn not_yet(construct: &str) -> Error {
    Error::NotSupported(format!(
        "{construct} in queries (einsql runs SELECT * FROM <table or file> so far)"
    ))
}
