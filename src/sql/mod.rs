//! The SQL front-end: parses statements with `sqlparser` (DuckDB dialect;
//! [`tokens`] and [`dialect`] read common texts faster, with the same result)
//! and binds them against the catalog into [`BoundStatement`]s, which the
//! session ([`crate::session`]) executes. Binding never changes the
//! catalog.
//!
//! Statements are bound by kind in one module each: [`ddl`] (`CREATE
//! TABLE`, `CREATE TABLE ... AS`, `DROP TABLE`), [`index`] (`CREATE
//! INDEX`, `DROP INDEX`), [`insert`] (`INSERT
//! INTO`), [`copy`] (`COPY ... TO`), [`call`] (`CALL dbgen(sf = ...)`,
//! the TPC-H generator), [`settings`] (`SET`, `RESET`) and
//! [`query`] (`SELECT`, lowered to an IR program and the recipe that
//! assembles its rows), with [`table_function`] for the `read_mtx`,
//! `read_tns`, `read_parquet` and `read_csv` loaders usable in `FROM`,
//! [`einsum_function`] for `einsum('ij,jk->ik', a, b)`, and [`literal`]
//! for constants. A statement of another kind is rejected with an error
//! that names it.

mod call;
mod copy;
#[cfg(test)]
mod corpus;
mod ddl;
mod dialect;
mod einsum_function;
mod index;
mod insert;
mod literal;
mod query;
mod settings;
mod table_function;
mod tokens;

use std::ops::Range;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use sqlparser::ast::Statement;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use self::dialect::EinsqlDialect;
use crate::bound::BoundStatement;
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::exec::MemoryBudget;
use crate::ir::Program;
use crate::progress::ProgressSink;
use crate::storage::Tensor;

/// Runs the IR programs that binding needs evaluated: the `WITH` tables and
/// `FROM` sub-queries a query reads, and the `SELECT` of an `INSERT`. The
/// session implements it with the database's settings.
pub trait Evaluate {
    /// The results of `program`, by query name.
    fn evaluate(&self, program: &Program) -> Result<Vec<(String, Arc<Tensor>)>>;
    /// The memory a statement may take (`memory_limit`), in bytes.
    fn memory_limit(&self) -> u64;
}

/// What a statement is bound against.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    catalog: &'a RwLock<Catalog>,
    /// Receives progress reports of file loads.
    pub progress: &'a dyn ProgressSink,
    evaluator: &'a dyn Evaluate,
}

impl<'a> Context<'a> {
    /// A context that reads `catalog` (binding never writes it), reports
    /// loads to `progress` and evaluates sub-queries with `evaluator`.
    pub fn new(
        catalog: &'a RwLock<Catalog>,
        progress: &'a dyn ProgressSink,
        evaluator: &'a dyn Evaluate,
    ) -> Context<'a> {
        Context {
            catalog,
            progress,
            evaluator,
        }
    }

    /// The catalog, for reading.
    fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        // The catalog changes only after a statement's work succeeded, so a
        // panic elsewhere cannot leave it half-changed.
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs an IR program and returns its results by query name.
    fn evaluate(&self, program: &Program) -> Result<Vec<(String, Arc<Tensor>)>> {
        self.evaluator.evaluate(program)
    }

    /// A budget of the memory limit, for assembling a sub-query's rows.
    fn budget(&self) -> MemoryBudget {
        MemoryBudget::new(self.evaluator.memory_limit())
    }
}

/// Parses the SQL statement at `script[range]`. Error positions count from
/// the start of `script`.
pub fn parse_statement(script: &str, range: Range<usize>) -> Result<Statement> {
    let (line, column) = crate::einsum::split::line_and_column(script, range.start);
    let shift = |location: &mut Location| {
        if location.line == 1 {
            location.column += column as u64 - 1;
        }
        location.line += line as u64 - 1;
    };
    let dialect = EinsqlDialect;
    let mut tokens = tokens::tokenize(&dialect, &script[range]).map_err(|mut e| {
        shift(&mut e.location);
        syntax_error(e.to_string())
    })?;
    for token in &mut tokens {
        shift(&mut token.span.start);
        shift(&mut token.span.end);
    }
    unreserve_named_arguments(&mut tokens);
    index::rewrite_level_formats(&mut tokens)?;
    let mut statements = Parser::new(&dialect)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| syntax_error(e.to_string()))?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        n => Err(Error::Syntax(format!("expected one statement, found {n}"))),
    }
}

fn syntax_error(message: String) -> Error {
    Error::Syntax(
        message
            .strip_prefix("sql parser error: ")
            .unwrap_or(&message)
            .to_string(),
    )
}

/// Lets a keyword such as `VALUES` name a table-function option
/// (`read_csv('f.csv', values = ['price'])`): a keyword directly followed by
/// `=`, `:=` or `=>` can only be an option name, so it becomes an identifier.
fn unreserve_named_arguments(tokens: &mut [TokenWithSpan]) {
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    for pair in significant.windows(2) {
        let [word, next] = [pair[0], pair[1]];
        let is_assignment = matches!(
            tokens[next].token,
            Token::Eq | Token::Assignment | Token::RArrow
        );
        if is_assignment
            && let Token::Word(w) = &mut tokens[word].token
            && w.keyword == Keyword::VALUES
        {
            w.keyword = Keyword::NoKeyword;
            w.quote_style = Some('"');
        }
    }
}

/// Binds one parsed statement.
pub fn bind(context: Context<'_>, statement: &Statement) -> Result<BoundStatement> {
    match statement {
        Statement::Query(query) => Ok(BoundStatement::Query(query::bind(context, query)?)),
        Statement::CreateTable(create) => ddl::create_table(context, create),
        Statement::CreateIndex(create) => index::create_index(context, create),
        Statement::Drop {
            object_type,
            if_exists,
            names,
            ..
        } => ddl::drop(*object_type, *if_exists, names),
        Statement::Insert(insert) => insert::insert(context, insert),
        Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        } => copy::copy(context, source, *to, target, options, legacy_options),
        Statement::Call(function) => call::call(function),
        Statement::ShowTables { .. } => Ok(BoundStatement::ShowTables),
        Statement::ExplainTable { table_name, .. } => {
            Ok(BoundStatement::Describe(self::table_name(table_name)?))
        }
        Statement::Set(set) => settings::set(set),
        Statement::Reset(reset) => settings::reset(reset),
        other => Err(Error::NotSupported(format!(
            "{} statements",
            statement_kind(other)
        ))),
    }
}

/// The first word of a statement, e.g. `UPDATE`, for messages.
fn statement_kind(statement: &Statement) -> String {
    statement
        .to_string()
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_uppercase()
}

/// The name of a table from a (possibly qualified) SQL object name.
fn table_name(name: &sqlparser::ast::ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [part] => part
            .as_ident()
            .map(|ident| ident.value.clone())
            .ok_or_else(|| Error::NotSupported(format!("the table name {name}"))),
        _ => Err(Error::NotSupported(format!(
            "qualified table names such as {name} (einsql has one schema)"
        ))),
    }
}
