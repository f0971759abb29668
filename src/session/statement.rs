//! Scripts split and parsed once into [`Statement`]s.
//!
//! A script is cut at top-level `;` ([`crate::einsum::split_statements`]);
//! each piece is SQL (parsed by [`crate::sql::parse_statement`]) or tensor
//! index notation (parsed by [`crate::einsum::parse`]), and `EXPLAIN
//! [ANALYZE]` of either becomes one [`Statement::Explain`]. Nothing is
//! bound yet: names are resolved when the statement runs, so a statement
//! sees the tables that the statements before it created.

use std::sync::Arc;

use crate::einsum;
use crate::error::{Error, Result};
use crate::sql;

/// One parsed statement.
#[derive(Clone, Debug)]
pub enum Statement {
    /// A SQL statement other than `EXPLAIN`.
    Sql(Box<sqlparser::ast::Statement>),
    /// A tensor-index-notation assignment.
    Einsum(einsum::Parsed),
    /// `EXPLAIN [ANALYZE] statement`.
    Explain {
        /// `EXPLAIN ANALYZE`: the statement runs (changing nothing) and the
        /// plan shows what each step produced and took.
        analyze: bool,
        /// What is explained.
        statement: Box<Statement>,
    },
}

/// Splits `text` into statements and parses each of them. Errors of a
/// statement give its line and column in the whole text.
pub fn parse_script(text: &str) -> Result<Vec<Statement>> {
    let source: Arc<str> = Arc::from(text);
    let mut statements = Vec::new();
    for piece in einsum::split_statements(text) {
        let statement = if piece.is_einsum {
            let parsed = Statement::Einsum(einsum::parse(&source, piece.range)?);
            if piece.explain {
                Statement::Explain {
                    analyze: piece.analyze,
                    statement: Box::new(parsed),
                }
            } else {
                parsed
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
            if verbose || format.is_some() || options.is_some() {
                return Err(Error::NotSupported(
                    "EXPLAIN options (VERBOSE, FORMAT, ...); use EXPLAIN or EXPLAIN ANALYZE"
                        .to_string(),
                ));
            }
            Ok(Statement::Explain {
                analyze,
                statement: Box::new(from_sql(*statement)?),
            })
        }
        other => Ok(Statement::Sql(Box::new(other))),
    }
}
