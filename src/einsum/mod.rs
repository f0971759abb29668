//! The tensor-index-notation (einsum) front-end: text → IR.
//!
//! One statement per output, ending in `;` (Galley section 3.1):
//!
//! ```text
//! C[i,k] = SUM(j) A[i,j] * B[j,k];
//! t = SUM(i,j,k) E[i,j] * E[j,k] * E[i,k];
//! P[i] = sigmoid(SUM(j) X[i,j] * theta[j]);
//! V[i] = L[i] * MAX(j,k) E[i,j] * E[j,k] * E[i,k];
//! n = SUM(v) labels[v, 12];             -- a constant coordinate
//! r[o] = orders.price[o] * orders.qty[o]; -- named value columns
//! ```
//!
//! [`lexer`] makes tokens with byte spans, [`parser`] a syntax tree (the
//! grammar and precedence are documented there), and [`bind`] resolves
//! tables against the catalog and builds the [`ir::Query`](crate::ir::Query).
//! [`split`] cuts a script into statements and tells einsum from SQL, so
//! that the session ([`crate::session`]) accepts both in one text. Every error carries the line and column in the whole text and the
//! offending line with a caret under the problem.

pub mod bind;
pub mod lexer;
pub mod parser;
pub mod split;

use std::ops::Range;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::ir::{Program, Query};

pub use split::{Piece, split_statements};

/// A parsed einsum statement, with the script it came from (error
/// positions count from the start of the script).
#[derive(Clone, Debug)]
pub struct Parsed {
    source: Arc<str>,
    statement: parser::Statement,
}

impl Parsed {
    /// Binds the statement to the tables of `catalog`: a query named after
    /// its output.
    pub fn bind(&self, catalog: &Catalog) -> Result<Query> {
        bind::bind(&self.source, &self.statement, catalog)
    }
}

/// Parses the einsum statement at `source[range]` (without its `;`).
pub fn parse(source: &Arc<str>, range: Range<usize>) -> Result<Parsed> {
    let tokens = lexer::tokenize(source, range.clone())?;
    let end = tokens.last().map_or(range.start, |t| t.span.end);
    let statement = parser::parse_statement(source, &tokens, end)?;
    Ok(Parsed {
        source: Arc::clone(source),
        statement,
    })
}

/// Compiles a text of einsum statements, each ending in `;` (the last one
/// may omit it), into a program. Later statements may not refer to earlier
/// outputs of the same text: run them one by one through the database for
/// that.
pub fn compile(source: &str, catalog: &Catalog) -> Result<Program> {
    let text: Arc<str> = Arc::from(source);
    let mut queries = Vec::new();
    for piece in split_statements(source) {
        if !piece.is_einsum {
            return Err(located(
                source,
                piece.range.clone(),
                Error::Syntax("expected an einsum statement, as in C[i,k] = ...".to_string()),
            ));
        }
        queries.push(parse(&text, piece.range)?.bind(catalog)?);
    }
    Ok(Program { queries })
}

/// `error`, wrapped with the 1-based line and column of `span` in `source`
/// and an excerpt of that line with a caret under the span.
pub fn located(source: &str, span: Range<usize>, error: Error) -> Error {
    let start = floor_char_boundary(source, span.start.min(source.len()));
    let line_start = source[..start].rfind('\n').map_or(0, |n| n + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |n| start + n);
    let line_text = &source[line_start..line_end];
    let (line, column) = split::line_and_column(source, start);
    let width = source
        .get(start..span.end.clamp(start, line_end))
        .map_or(1, |s| s.chars().count().max(1));
    let excerpt = format!(
        "  {line_text}\n  {}{}",
        " ".repeat(column - 1),
        "^".repeat(width)
    );
    Error::Positioned {
        line,
        column,
        excerpt,
        source: Box::new(error),
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests;
