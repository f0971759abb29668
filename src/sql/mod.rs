//! The SQL front-end: parses statements with `sqlparser` (DuckDB dialect)
//! and executes them against the catalog.
//!
//! Statements are dispatched by kind to one module each: [`ddl`] (`CREATE
//! TABLE`, `CREATE TABLE ... AS`, `DROP TABLE`), [`insert`] (`INSERT INTO`),
//! [`copy`] (`COPY ... TO`), [`describe`] (`SHOW TABLES`, `DESCRIBE`),
//! [`explain`] (`EXPLAIN`) and
//! [`query`] (`SELECT`, lowered to the IR), [`settings`] (`SET`,
//! `RESET`), with [`table_function`] for the `read_mtx`, `read_tns`,
//! `read_parquet` and `read_csv` loaders usable in `FROM`,
//! [`einsum_function`] for `einsum('ij,jk->ik', a, b)`, and
//! [`literal`] for constants. A statement of another kind is rejected with an
//! error that names it.

mod copy;
mod ddl;
mod describe;
mod einsum_function;
mod explain;
mod insert;
mod literal;
mod query;
mod settings;
mod table_function;

pub use settings::Settings;

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use sqlparser::ast::Statement;
use sqlparser::dialect::DuckDbDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::database::QueryResult;
use crate::error::{Error, Result};
use crate::io::ProgressSink;
use crate::ir::Program;
use crate::profile::ProfileLog;
use crate::storage::Tensor;
use crate::storage::catalog::Catalog;

/// What a statement runs against: the catalog and where to report progress.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The database's tables.
    pub catalog: &'a RwLock<Catalog>,
    /// Receives progress reports of long loads.
    pub progress: &'a dyn ProgressSink,
    /// The database's settings (`SET threads = 4`).
    pub settings: &'a Settings,
    /// Where evaluated programs are recorded (`EXPLAIN ANALYZE`,
    /// [`Database::execute_profiled`](crate::Database::execute_profiled)).
    pub log: Option<&'a ProfileLog>,
}

impl Context<'_> {
    /// The catalog, for reading.
    fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        // The catalog changes only after a statement's work succeeded, so a
        // panic elsewhere cannot leave it half-changed.
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs an IR program on the engine the settings choose and returns its
    /// results by query name.
    fn evaluate(&self, program: &Program) -> Result<Vec<(String, Arc<Tensor>)>> {
        self.settings.evaluate(program, self.progress, self.log)
    }

    /// The catalog, for changing.
    fn catalog_mut(&self) -> RwLockWriteGuard<'_, Catalog> {
        self.catalog.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Parses `sql` into statements.
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    let dialect = DuckDbDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| syntax_error(e.to_string()))?;
    unreserve_named_arguments(&mut tokens);
    Parser::new(&dialect)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| syntax_error(e.to_string()))
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

/// Executes one parsed statement.
pub fn execute(context: Context<'_>, statement: &Statement) -> Result<QueryResult> {
    match statement {
        Statement::Query(query) => query::select(context, query),
        Statement::CreateTable(create) => ddl::create_table(context, create),
        Statement::Drop {
            object_type,
            if_exists,
            names,
            ..
        } => ddl::drop(context, *object_type, *if_exists, names),
        Statement::Insert(insert) => insert::insert(context, insert),
        Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        } => copy::copy(context, source, *to, target, options, legacy_options),
        Statement::ShowTables { .. } => describe::show_tables(context),
        Statement::Explain {
            statement, analyze, ..
        } => explain::explain(context, statement, *analyze),
        Statement::ExplainTable { table_name, .. } => describe::describe(context, table_name),
        Statement::Set(set) => settings::set(context, set),
        Statement::Reset(reset) => settings::reset(context, reset),
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

/// "1 row", "2 rows": `n` with the `singular` or `plural` noun, for
/// messages.
pub(crate) fn count(n: usize, singular: &str, plural: &str) -> String {
    match n {
        1 => format!("1 {singular}"),
        n => format!("{n} {plural}"),
    }
}

/// "1 entry", "2 entries": a count of stored entries for messages.
pub(crate) fn entries(n: usize) -> String {
    count(n, "entry", "entries")
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
