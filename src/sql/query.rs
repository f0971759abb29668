//! `SELECT` queries.
//!
//! So far a query lists a stored table or a loaded file: `SELECT * FROM t`,
//! `SELECT * FROM read_mtx('a.mtx')`, or such a query in parentheses. Joins,
//! filters, projections and aggregates are rejected by name.

use std::sync::Arc;

use sqlparser::ast::{Query, Select, SelectItem, SetExpr, TableFactor};

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

/// The table that a query denotes.
pub fn relation(context: Context<'_>, query: &Query) -> Result<Arc<Tensor>> {
    let unsupported = [
        (query.with.is_some(), "WITH"),
        (query.order_by.is_some(), "ORDER BY"),
        (query.limit_clause.is_some(), "LIMIT"),
        (query.fetch.is_some(), "FETCH"),
    ];
    reject(&unsupported)?;
    match query.body.as_ref() {
        SetExpr::Select(select) => select_relation(context, select),
        SetExpr::Query(inner) => relation(context, inner),
        SetExpr::Values(_) => Err(not_yet("VALUES as a query")),
        SetExpr::SetOperation { op, .. } => Err(not_yet(&op.to_string())),
        other => Err(not_yet(&other.to_string())),
    }
}

fn select_relation(context: Context<'_>, select: &Select) -> Result<Arc<Tensor>> {
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
        } => context.catalog().get(&super::table_name(name)?),
        TableFactor::Table {
            name,
            args: Some(args),
            ..
        } => super::table_function::load(context, name, args).map(Arc::new),
        TableFactor::Derived { subquery, .. } => relation(context, subquery),
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
