//! Scripts split and parsed once into [`Statement`]s.
//!
//! A script is cut at top-level `;` ([`crate::einsum::split_statements`]);
//! each piece is SQL (parsed by [`crate::sql::parse_statement`]) or tensor
//! index notation (parsed by [`crate::einsum::parse`]), and `EXPLAIN
//! [ANALYZE]` or `EXPLAIN (options)` of either becomes one
//! [`Statement::Explain`]. Nothing is bound yet: names are resolved when
//! the statement runs, so a statement sees the tables that the statements
//! before it created.
//!
//! The options of `EXPLAIN (...)` are PostgreSQL's form, `name [value]`
//! separated by commas: `ANALYZE [true|false]`, `FORMAT text|sql` and
//! `DIALECT duckdb|datafusion|spark` (the engine `FORMAT sql` writes for,
//! DuckDB when not given; see [`crate::emit`]).

use std::ops::Range;
use std::sync::Arc;

use sqlparser::ast::{Expr as SqlExpr, UtilityOption, Value};

use crate::einsum;
use crate::emit::Dialect;
use crate::error::{Error, Result};
use crate::sql;

/// One parsed statement.
#[derive(Clone, Debug)]
pub enum Statement {
    /// A SQL statement other than `EXPLAIN`.
    Sql(Box<sqlparser::ast::Statement>),
    /// A tensor-index-notation assignment.
    Einsum(einsum::Parsed),
    /// `EXPLAIN [ANALYZE] statement` or `EXPLAIN (options) statement`.
    Explain {
        /// `EXPLAIN ANALYZE`: the statement runs (changing nothing) and the
        /// plan shows what each step produced and took.
        analyze: bool,
        /// What the plan is shown as.
        format: ExplainFormat,
        /// What is explained.
        statement: Box<Statement>,
    },
}

/// What `EXPLAIN` shows a plan as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplainFormat {
    /// einsql's plan as text, one line a row (`FORMAT text`, the default).
    Text,
    /// The optimized plan as SQL for another engine (`FORMAT sql`).
    Sql(Dialect),
}

/// Splits `text` into statements and parses each of them. Errors of a
/// statement give its line and column in the whole text.
pub fn parse_script(text: &str) -> Result<Vec<Statement>> {
    let source: Arc<str> = Arc::from(text);
    let mut statements = Vec::new();
    for piece in einsum::split_statements(text) {
        let statement = if piece.is_einsum {
            let parsed = Statement::Einsum(einsum::parse(&source, piece.range)?);
            match piece.explain {
                Some(explain) => {
                    let options = match explain.options {
                        Some(range) => einsum_options(text, range)?,
                        None => Vec::new(),
                    };
                    let (analyze, format) = explain_options(explain.analyze, options)?;
                    Statement::Explain {
                        analyze,
                        format,
                        statement: Box::new(parsed),
                    }
                }
                None => parsed,
            }
        } else {
            from_sql(sql::parse_statement(text, piece.range)?)?
        };
        statements.push(statement);
    }
    Ok(statements)
}

/// A SQL statement, with `EXPLAIN` taken apart.
fn from_sql(statement: sqlparser::ast::Statement) -> Result<Statement> {
    match statement {
        sqlparser::ast::Statement::Explain {
            statement,
            analyze,
            verbose,
            format,
            options,
            ..
        } => {
            if verbose || format.is_some() {
                return Err(Error::NotSupported(
                    "EXPLAIN VERBOSE and EXPLAIN FORMAT without parentheses; \
                     write EXPLAIN (FORMAT sql, DIALECT duckdb) ..."
                        .to_string(),
                ));
            }
            let options = options
                .unwrap_or_default()
                .into_iter()
                .map(sql_option)
                .collect();
            let (analyze, format) = explain_options(analyze, options)?;
            Ok(Statement::Explain {
                analyze,
                format,
                statement: Box::new(from_sql(*statement)?),
            })
        }
        other => Ok(Statement::Sql(Box::new(other))),
    }
}

/// One `EXPLAIN` option: its name and its value, as written.
type ExplainOption = (String, Option<String>);

/// An option of a SQL `EXPLAIN (...)`, as parsed by the SQL parser.
fn sql_option(option: UtilityOption) -> ExplainOption {
    let value = option.arg.map(|arg| match arg {
        SqlExpr::Identifier(ident) => ident.value,
        SqlExpr::Value(value) => match value.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s,
            other => other.to_string(),
        },
        other => other.to_string(),
    });
    (option.name.value, value)
}

/// The options of an einsum statement's `EXPLAIN (...)`: the bytes `range`
/// of `text`, `name [value]` separated by commas.
fn einsum_options(text: &str, range: Range<usize>) -> Result<Vec<ExplainOption>> {
    let inside = &text[range];
    let mut options = Vec::new();
    for option in inside.split(',') {
        let words: Vec<&str> = option.split_whitespace().collect();
        let unquote = |w: &str| w.trim_matches('\'').to_string();
        match words.as_slice() {
            [name] => options.push((name.to_string(), None)),
            [name, value] => options.push((name.to_string(), Some(unquote(value)))),
            _ => {
                return Err(Error::Invalid(format!(
                    "EXPLAIN option '{}': write a name and at most one value",
                    option.trim()
                )));
            }
        }
    }
    Ok(options)
}

/// Whether to analyze, and the format, from `EXPLAIN [ANALYZE]` and its
/// options.
///
/// Errors: an unknown option or value, `DIALECT` without `FORMAT sql`, and
/// `ANALYZE` with `FORMAT sql` (the SQL is not run).
fn explain_options(
    mut analyze: bool,
    options: Vec<ExplainOption>,
) -> Result<(bool, ExplainFormat)> {
    let mut sql = false;
    let mut dialect = None;
    for (name, value) in options {
        match name.to_ascii_lowercase().as_str() {
            "analyze" => {
                analyze = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    None | Some("true" | "on" | "1") => true,
                    Some("false" | "off" | "0") => false,
                    Some(other) => {
                        return Err(Error::Invalid(format!(
                            "EXPLAIN option ANALYZE takes true or false, not '{other}'"
                        )));
                    }
                }
            }
            "format" => {
                sql = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    Some("text") => false,
                    Some("sql") => true,
                    Some(other) => {
                        return Err(Error::NotSupported(format!(
                            "EXPLAIN FORMAT {other} (FORMAT text or FORMAT sql)"
                        )));
                    }
                    None => {
                        return Err(Error::Invalid(
                            "EXPLAIN option FORMAT needs a value: text or sql".to_string(),
                        ));
                    }
                }
            }
            "dialect" => {
                let name = value.ok_or_else(|| {
                    Error::Invalid(
                        "EXPLAIN option DIALECT needs a value: duckdb, datafusion or spark"
                            .to_string(),
                    )
                })?;
                dialect = Some(Dialect::from_name(&name)?);
            }
            _ => {
                return Err(Error::unknown(
                    "EXPLAIN option",
                    &name,
                    ["ANALYZE", "FORMAT", "DIALECT"],
                ));
            }
        }
    }
    match (sql, dialect) {
        (false, Some(_)) => Err(Error::Invalid(
            "EXPLAIN option DIALECT goes with FORMAT sql".to_string(),
        )),
        (true, _) if analyze => Err(Error::NotSupported(
            "EXPLAIN ANALYZE with FORMAT sql (the SQL is shown, not run)".to_string(),
        )),
        (true, dialect) => Ok((
            false,
            ExplainFormat::Sql(dialect.unwrap_or(Dialect::DuckDb)),
        )),
        (false, None) => Ok((analyze, ExplainFormat::Text)),
    }
}
