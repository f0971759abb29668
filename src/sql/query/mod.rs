//! `SELECT` queries, lowered to IR programs.
//!
//! A query's `FROM` tables become inputs and their key columns index
//! variables ([`scope`]); `WHERE` and `ON` equalities between key columns
//! join them and equalities with constants fix them; every other condition
//! is a 0/1 factor of each row. Select items, `HAVING` and `ORDER BY` lower
//! to IR expressions ([`expr`]); [`plan`] turns the whole `SELECT` into one
//! program — one query per aggregate column plus the query whose entries
//! are the result's rows — and [`output`] evaluates it and assembles the
//! rows (`DISTINCT`, `ORDER BY`, `LIMIT`) as Arrow batches.
//!
//! `WITH` tables and sub-queries in `FROM` are evaluated first and stored
//! as temporary tensors (their grouped columns become dimensions), which the
//! outer query reads like stored tables. `SELECT * FROM <table or file>`
//! reads the table as stored.

pub mod expr;
pub mod output;
pub mod plan;
pub mod scope;
pub mod values;

use std::sync::Arc;

use sqlparser::ast::{Query, Select, SelectItem, SetExpr, TableFactor, TableFunctionArgs};

use super::Context;
use crate::bound::{BoundQuery, Relation};
use crate::error::{Error, Result};
use crate::storage::Tensor;

/// Binds a `SELECT`: a stored table or a file read as it is, or the
/// query's program with the recipe that assembles its rows. `WITH` tables
/// and `FROM` sub-queries are evaluated now.
pub fn bind(context: Context<'_>, query: &Query) -> Result<Relation> {
    if let Some(list) = values_list(query) {
        return Ok(Relation::Tensor(Arc::new(values::table(list)?)));
    }
    match simple_source(query) {
        Some(Source::Table(name)) => {
            context.catalog().get(&name)?;
            Ok(Relation::Table(name))
        }
        Some(Source::File { function, args }) => {
            if let Some(tensor) = super::table_function::catalog_table(context, function, args)? {
                return Ok(Relation::Tensor(Arc::new(tensor)));
            }
            Ok(Relation::File {
                load: super::table_function::file_load(function, args)?,
                call: format!("{function}({})", arguments(args)),
            })
        }
        None => {
            let plan = output::bind(context, query, &Ctes::default())?;
            Ok(Relation::Program(BoundQuery {
                program: plan.program.clone(),
                assembly: Box::new(plan),
            }))
        }
    }
}

/// The arguments of a table-function call as written.
fn arguments(args: &TableFunctionArgs) -> String {
    args.args
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table that a query denotes, evaluated now (for `INSERT ...
/// SELECT`): a stored table or file as it is, or the result of a query
/// with its grouped key columns as dimensions.
pub fn relation(context: Context<'_>, query: &Query) -> Result<Arc<Tensor>> {
    if let Some(tensor) = stored(context, query)? {
        return Ok(tensor);
    }
    let memory = context.budget();
    let table = output::run(context, query, &Ctes::default(), &memory)?;
    Ok(Arc::new(table.into_tensor(&memory)?))
}

/// The `WITH` tables visible to a query, evaluated.
#[derive(Clone, Default)]
pub struct Ctes {
    tables: Vec<(String, Arc<Tensor>)>,
}

impl Ctes {
    /// The table called `name`, if a `WITH` clause defines it.
    pub fn get(&self, name: &str) -> Option<Arc<Tensor>> {
        self.tables
            .iter()
            .rev()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t)| Arc::clone(t))
    }

    /// The table called `name`: a `WITH` table, else a stored one.
    pub fn table(&self, context: Context<'_>, name: &str) -> Result<Arc<Tensor>> {
        match self.get(name) {
            Some(tensor) => Ok(tensor),
            None => context.catalog().get(name),
        }
    }

    /// These tables and `name`.
    pub fn with(&self, name: &str, tensor: Arc<Tensor>) -> Ctes {
        let mut tables = self.tables.clone();
        tables.push((name.to_string(), tensor));
        Ctes { tables }
    }
}

/// Where the rows of `SELECT * FROM x` come from when `x` is read as it is.
pub enum Source<'q> {
    /// A stored table, by name.
    Table(String),
    /// A file read by a table function such as `read_mtx('a.mtx')`.
    File {
        /// The function, e.g. `read_mtx`.
        function: &'q sqlparser::ast::ObjectName,
        /// Its arguments.
        args: &'q TableFunctionArgs,
    },
}

/// The source of a query that is exactly `SELECT * FROM <table or file>`
/// (possibly in parentheses), with no other clause.
pub fn simple_source(query: &Query) -> Option<Source<'_>> {
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none();
    if !plain {
        return None;
    }
    match query.body.as_ref() {
        SetExpr::Query(inner) => simple_source(inner),
        SetExpr::Select(select) if is_plain_star(select) => match &select.from[0].relation {
            TableFactor::Table {
                name,
                args: None,
                alias: None,
                ..
            } => super::table_name(name).ok().map(Source::Table),
            TableFactor::Table {
                name,
                args: Some(args),
                alias: None,
                ..
            } if !super::einsum_function::is_einsum(name) => Some(Source::File {
                function: name,
                args,
            }),
            TableFactor::Derived {
                subquery,
                alias: None,
                ..
            } => simple_source(subquery),
            _ => None,
        },
        _ => None,
    }
}

fn is_plain_star(select: &Select) -> bool {
    matches!(
        select.projection.as_slice(),
        [SelectItem::Wildcard(options)] if options.to_string().is_empty()
    ) && select.distinct.is_none()
        && select.selection.is_none()
        && matches!(&select.group_by, sqlparser::ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        && select.having.is_none()
        && select.from.len() == 1
        && select.from[0].joins.is_empty()
}

/// The stored tensor of a `SELECT * FROM <table or file>` query.
fn stored(context: Context<'_>, query: &Query) -> Result<Option<Arc<Tensor>>> {
    Ok(match simple_source(query) {
        Some(Source::Table(name)) => Some(context.catalog().get(&name)?),
        Some(Source::File { function, args }) => Some(Arc::new(super::table_function::load(
            context, function, args,
        )?)),
        None => None,
    })
}

/// The `VALUES` list that `query` is, with no other clause.
pub fn values_list(query: &Query) -> Option<&sqlparser::ast::Values> {
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none();
    match query.body.as_ref() {
        SetExpr::Values(values) if plain => Some(values),
        SetExpr::Query(inner) if plain => values_list(inner),
        _ => None,
    }
}

/// The `SELECT` of a query body, or an error naming what stands instead.
fn body_select(query: &Query) -> Result<&Select> {
    match query.body.as_ref() {
        SetExpr::Select(select) => Ok(select),
        SetExpr::Values(_) => Err(Error::NotSupported(
            "VALUES with ORDER BY, LIMIT or WITH; select from it: SELECT * FROM (VALUES ...) t"
                .to_string(),
        )),
        SetExpr::SetOperation { op, .. } => Err(Error::NotSupported(format!("{op} of queries"))),
        other => Err(Error::NotSupported(format!("the query {other}"))),
    }
}
