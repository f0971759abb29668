//! `EXPLAIN` of a SQL query (see [`crate::explain`]): the scan of a stored
//! table or the load of a file, or the IR program a query lowers to, its
//! optimized plan and how its rows are assembled. Nothing is evaluated,
//! except the sub-queries in `FROM` and `WITH`, whose results the outer
//! program reads. `EXPLAIN ANALYZE` runs the query and shows every program
//! it evaluated with the entries and time of each step.

use sqlparser::ast::{Statement, TableFunctionArgs};

use std::time::Instant;

use super::Context;
use super::query::{self, Ctes, Source};
use crate::database::QueryResult;
use crate::error::{Error, Result};
use crate::profile::ProfileLog;

/// Runs `EXPLAIN statement`.
pub fn explain(context: Context<'_>, statement: &Statement, analyze: bool) -> Result<QueryResult> {
    if analyze {
        return explain_analyze(context, statement);
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

/// Runs the query `statement` with a profile log and shows its runs.
fn explain_analyze(context: Context<'_>, statement: &Statement) -> Result<QueryResult> {
    let Statement::Query(query) = statement else {
        return Err(Error::NotSupported(format!(
            "EXPLAIN ANALYZE of {} statements (only queries)",
            super::statement_kind(statement)
        )));
    };
    let log = ProfileLog::default();
    let start = Instant::now();
    let result = query::select(
        Context {
            log: Some(&log),
            ..context
        },
        query,
    )?;
    let elapsed = start.elapsed();
    let runs = log.take();
    let mut lines = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        if runs.len() > 1 {
            lines.push(format!("Program {} of {}:", k + 1, runs.len()));
        }
        lines.extend(crate::explain::run_lines(run, true));
    }
    lines.push(format!(
        "Result: {} in {:.3} ms",
        super::count(result.num_rows(), "row", "rows"),
        elapsed.as_secs_f64() * 1e3
    ));
    crate::explain::plan_result(lines)
}

fn arguments(args: &TableFunctionArgs) -> String {
    args.args
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
