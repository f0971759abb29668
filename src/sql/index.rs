//! `CREATE INDEX` and `DROP INDEX`: declared fibertree indexes.
//!
//! ```sql
//! CREATE INDEX a_csc ON a (j, i) USING (dense, compressed);
//! CREATE INDEX IF NOT EXISTS a_csr ON a (i, j);
//! DROP INDEX IF EXISTS a_csc;
//! ```
//!
//! The columns are the table's dimensions, each once, outermost level
//! first; `USING` gives a level format per column (dense, compressed,
//! hashed or bytemap), and without it the index takes the formats the
//! executor reads the table through by default. `sqlparser` knows no level
//! list after the columns, so [`rewrite_level_formats`] hands it over as
//! the `INCLUDE` list, which einsql has no other use for.

use sqlparser::ast::{CreateIndex, Expr, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Word};

use super::Context;
use crate::bound::BoundStatement;
use crate::error::{Error, Result, closest_name};
use crate::exec::planner::table_formats;
use crate::storage::ColumnRef;
use crate::storage::fibertree::{DeclaredIndex, IndexSpec, LevelFormat};

/// In a `CREATE INDEX` statement, turns the `USING` that follows the
/// column list and opens a parenthesized list into `INCLUDE`, so that the
/// parser reads the level formats as the included columns. A statement
/// that names `INCLUDE` itself is refused.
pub fn rewrite_level_formats(tokens: &mut [TokenWithSpan]) -> Result<()> {
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let keyword = |i: usize| match &tokens[i].token {
        Token::Word(w) => w.keyword,
        _ => Keyword::NoKeyword,
    };
    let words: Vec<Keyword> = significant.iter().take(3).map(|&i| keyword(i)).collect();
    let create_index = matches!(
        words.as_slice(),
        [Keyword::CREATE, Keyword::INDEX, ..] | [Keyword::CREATE, Keyword::UNIQUE, Keyword::INDEX]
    );
    if !create_index {
        return Ok(());
    }
    if significant.iter().any(|&i| keyword(i) == Keyword::INCLUDE) {
        return Err(Error::NotSupported(
            "INCLUDE columns in CREATE INDEX (an index orders a table's dimensions; give level \
             formats with USING (...))"
                .to_string(),
        ));
    }
    let formats: Vec<usize> = significant
        .windows(3)
        .filter(|w| {
            tokens[w[0]].token == Token::RParen
                && keyword(w[1]) == Keyword::USING
                && tokens[w[2]].token == Token::LParen
        })
        .map(|w| w[1])
        .collect();
    for using in formats {
        tokens[using].token = Token::Word(Word {
            value: "INCLUDE".to_string(),
            quote_style: None,
            keyword: Keyword::INCLUDE,
        });
    }
    Ok(())
}

/// Binds `CREATE INDEX name ON table (columns) [USING (formats)]`.
///
/// Errors: no index name; an unknown table or column (with the closest
/// name); a value column, a dimension listed twice or left out; a number
/// of formats other than of columns, or an unknown format; and the clauses
/// einsql does not support (`UNIQUE`, `WHERE`, an index method, `ASC`).
pub fn create_index(context: Context<'_>, create: &CreateIndex) -> Result<BoundStatement> {
    let unsupported = [
        (
            create.unique,
            "UNIQUE indexes (a table holds one entry per key already)",
        ),
        (
            create.predicate.is_some(),
            "partial indexes (CREATE INDEX ... WHERE)",
        ),
        (
            create.concurrently || create.r#async,
            "CONCURRENTLY or ASYNC index builds",
        ),
        (
            !create.with.is_empty() || !create.index_options.is_empty(),
            "index options (give level formats with USING (...) after the columns)",
        ),
        (
            create.nulls_distinct.is_some() || !create.alter_options.is_empty(),
            "NULLS DISTINCT, ALGORITHM or LOCK in CREATE INDEX",
        ),
    ];
    if let Some((_, what)) = unsupported.iter().find(|(given, _)| *given) {
        return Err(Error::NotSupported((*what).to_string()));
    }
    if let Some(method) = &create.using {
        return Err(Error::NotSupported(format!(
            "the index method {method}; give a level format per column after the columns: \
             USING (dense, compressed)"
        )));
    }
    let name = create.name.as_ref().ok_or_else(|| {
        Error::Invalid("an index needs a name: CREATE INDEX name ON table (columns)".to_string())
    })?;
    let name = index_name(name)?;
    let table = super::table_name(&create.table_name)?;
    let tensor = context.catalog().get(&table)?;
    let dims = tensor.dims();
    let mut order = Vec::with_capacity(create.columns.len());
    for column in &create.columns {
        let options = &column.column.options;
        if options.sort.is_some()
            || options.nulls_first.is_some()
            || column.operator_class.is_some()
        {
            return Err(Error::NotSupported(format!(
                "ASC, DESC, NULLS or an operator class in CREATE INDEX ({}); levels are in \
                 ascending order",
                column.column
            )));
        }
        let Expr::Identifier(ident) = &column.column.expr else {
            return Err(Error::NotSupported(format!(
                "the index expression {}; an index lists the table's columns",
                column.column.expr
            )));
        };
        let found = tensor
            .column_order()
            .iter()
            .find(|&&c| tensor.column_name(c).eq_ignore_ascii_case(&ident.value));
        let d = match found {
            Some(&ColumnRef::Key(d)) => d,
            Some(&ColumnRef::Value(_)) => {
                return Err(Error::Invalid(format!(
                    "column '{}' of table '{table}' holds values; an index orders the \
                     dimensions ({})",
                    ident.value,
                    dimension_list(&tensor)
                )));
            }
            None => {
                let names = tensor.column_order().iter().map(|&c| tensor.column_name(c));
                return Err(Error::unknown("Column", &ident.value, names));
            }
        };
        if order.contains(&d) {
            return Err(Error::Invalid(format!(
                "index '{name}' lists column '{}' twice",
                ident.value
            )));
        }
        order.push(d);
    }
    if order.len() != dims.len() {
        return Err(Error::Invalid(format!(
            "index '{name}' lists {} of the {} dimensions of table '{table}'; an index lists \
             every dimension once, in the order of its levels: ({})",
            order.len(),
            dims.len(),
            dimension_list(&tensor)
        )));
    }
    let formats = if create.include.is_empty() {
        table_formats(&tensor)
    } else {
        if create.include.len() != order.len() {
            return Err(Error::Invalid(format!(
                "index '{name}' gives {} level formats for {} columns; give one per column",
                create.include.len(),
                order.len()
            )));
        }
        create
            .include
            .iter()
            .map(|format| level_format(&format.value))
            .collect::<Result<Vec<_>>>()?
    };
    Ok(BoundStatement::CreateIndex {
        table,
        index: DeclaredIndex {
            name,
            spec: IndexSpec::new(order, formats),
        },
        if_not_exists: create.if_not_exists,
    })
}

/// Binds `DROP INDEX [IF EXISTS] names`.
pub fn drop_index(if_exists: bool, names: &[ObjectName]) -> Result<BoundStatement> {
    let names = names.iter().map(index_name).collect::<Result<Vec<_>>>()?;
    Ok(BoundStatement::DropIndex { names, if_exists })
}

/// The name of an index (one identifier).
fn index_name(name: &ObjectName) -> Result<String> {
    super::table_name(name).map_err(|_| {
        Error::NotSupported(format!(
            "the index name {name} (an index name is one identifier)"
        ))
    })
}

/// The level format called `name`, or an error naming the closest.
fn level_format(name: &str) -> Result<LevelFormat> {
    LevelFormat::from_name(name).ok_or_else(|| {
        let names = LevelFormat::ALL.map(LevelFormat::name);
        let hint = closest_name(name, names)
            .map(|s| format!(" (did you mean '{s}'?)"))
            .unwrap_or_default();
        Error::Invalid(format!(
            "unknown level format '{name}'{hint}; the formats are {}",
            names.join(", ")
        ))
    })
}

/// `i, j`: the dimension names of a tensor, in stored order.
fn dimension_list(tensor: &crate::storage::Tensor) -> String {
    let names: Vec<&str> = tensor.dims().iter().map(|d| d.name.as_str()).collect();
    names.join(", ")
}
