//! `EXPLAIN` of a SQL query (see [`crate::explain`]): the scan of a stored
//! table or the load of a file, or the IR program a query lowers to and how
//! its rows are assembled. Nothing is evaluated, except the sub-queries in
//! `FROM` and `WITH`, whose results the outer program reads.

use sqlparser::ast::{Statement, TableFunctionArgs};

use super::Context;
use super::query::{self, Ctes, Source};
use crate::database::QueryResult;
use crate::error::{Error, Result};

/// Runs `EXPLAIN statement`.
pub fn explain(context: Context<'_>, statement: &Statement, analyze: bool) -> Result<QueryResult> {
    if analyze {
        return Err(Error::NotSupported("EXPLAIN ANALYZE".to_string()));
    }
    let query = match statement {
        Statement::Query(query) => query,
        Statement::CreateTable(create) => create.query.as_ref().ok_or_else(|| {
            Error::NotSupported("EXPLAIN of CREATE TABLE without AS SELECT".to_string())
        })?,
        other => {
            return Err(Error::NotSupported(format!(
                "EXPLAIN of {} statements",
                super::statement_kind(other)
            )));
        }
    };
    let lines = match query::simple_source(query) {
        Some(Source::Table(name)) => {
            let tensor = context.catalog().get(&name)?;
            vec![format!(
                "Scan {}",
                crate::explain::table_line(&name, &tensor)
            )]
        }
        Some(Source::File { function, args }) => {
            vec![format!("Load {function}({})", arguments(args))]
        }
        None => query::output::explain(context, query, &Ctes::default())?,
    };
    crate::explain::plan_result(lines)
}

fn arguments(args: &TableFunctionArgs) -> String {
    args.args
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
