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
//! executor reads the table through by default. `USING (tiles(256, 256))`
//! instead cuts the table into dense tiles of a size per column (a
//! [`TiledIndex`](crate::storage::tiles::TiledIndex)). `sqlparser` knows no
//! level list after the columns, so [`rewrite_level_formats`] hands it over
//! as the `INCLUDE` list, which einsql has no other use for, with a
//! `tiles(...)` as one quoted name.

use sqlparser::ast::{CreateIndex, Expr, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

use super::Context;
use crate::bound::BoundStatement;
use crate::error::{Error, Result, closest_name};
use crate::exec::planner::table_formats;
use crate::storage::ColumnRef;
use crate::storage::fibertree::{DeclaredIndex, IndexLayout, IndexSpec, LevelFormat};
use crate::storage::tiles::TileSpec;

/// In a `CREATE INDEX` statement, turns the `USING` that follows the
/// column list and opens a parenthesized list into `INCLUDE`, so that the
/// parser reads the level formats as the included columns. A statement
/// that names `INCLUDE` itself is refused.
pub fn rewrite_level_formats(tokens: &mut [TokenWithSpan]) -> Result<()> {
    let keyword_of = |token: &Token| match token {
        Token::Word(w) => w.keyword,
        _ => Keyword::NoKeyword,
    };
    let words: Vec<Keyword> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .take(3)
        .map(|t| keyword_of(&t.token))
        .collect();
    let create_index = matches!(
        words.as_slice(),
        [Keyword::CREATE, Keyword::INDEX, ..] | [Keyword::CREATE, Keyword::UNIQUE, Keyword::INDEX]
    );
    if !create_index {
        return Ok(());
    }
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let keyword = |i: usize| keyword_of(&tokens[i].token);
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
    for &using in &formats {
        tokens[using].token = Token::Word(Word {
            value: "INCLUDE".to_string(),
            quote_style: None,
            keyword: Keyword::INCLUDE,
        });
    }
    if let Some(&using) = formats.last() {
        join_tiles(tokens, &significant, using);
    }
    Ok(())
}

/// Turns a `tiles ( ... )` in the list after `tokens[using]` into one
/// quoted name of its text (the blanks left where the rest stood), which
/// [`create_index`] reads back with [`tile_sizes`].
fn join_tiles(tokens: &mut [TokenWithSpan], significant: &[usize], using: usize) {
    let after = significant.iter().skip_while(|&&i| i <= using).copied();
    let list: Vec<usize> = after.collect();
    let Some(start) = list.windows(2).position(|w| {
        matches!(&tokens[w[0]].token, Token::Word(w) if w.value.eq_ignore_ascii_case(TILES))
            && tokens[w[1]].token == Token::LParen
    }) else {
        return;
    };
    let Some(end) = list[start..]
        .iter()
        .position(|&i| tokens[i].token == Token::RParen)
        .map(|n| start + n)
    else {
        return;
    };
    let text: Vec<String> = tokens[list[start]..=list[end]]
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .map(|t| t.token.to_string())
        .collect();
    let text = text.join(" ");
    for t in &mut tokens[list[start]..=list[end]] {
        t.token = Token::Whitespace(Whitespace::Space);
    }
    tokens[list[start]].token = Token::Word(Word {
        value: text,
        quote_style: Some('"'),
        keyword: Keyword::NoKeyword,
    });
}

/// The name of the tiled format.
const TILES: &str = "tiles";

/// Binds `CREATE INDEX name ON table (columns) [USING (formats)]`.
///
/// Errors: no index name; an unknown table or column (with the closest
/// name); a value column, a dimension listed twice or left out; a number
/// of formats other than of columns, or an unknown format; `tiles(...)`
/// beside other formats, with sizes that do not read as positive integers
/// or not one per column; and the clauses
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
    let tiles = create
        .include
        .iter()
        .map(|format| tile_sizes(&format.value))
        .collect::<Result<Vec<_>>>()?;
    if let Some(sizes) = tiles.iter().flatten().next() {
        if create.include.len() != 1 {
            return Err(Error::Invalid(format!(
                "index '{name}' gives tiles(...) with other formats; tiles(...) is the one \
                 format of its index, with a tile size per column"
            )));
        }
        if sizes.len() != order.len() {
            return Err(Error::Invalid(format!(
                "index '{name}' gives {} tile sizes for {} columns; give one per column",
                sizes.len(),
                order.len()
            )));
        }
        return Ok(BoundStatement::CreateIndex {
            table,
            index: DeclaredIndex {
                name,
                layout: IndexLayout::Tiles(TileSpec::new(order, sizes.clone())),
            },
            if_not_exists: create.if_not_exists,
        });
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
            layout: IndexLayout::Levels(IndexSpec::new(order, formats)),
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

/// The tile sizes of a format written `tiles(256, 256)` (as
/// [`join_tiles`] joins it), `None` for a format of another name.
///
/// Errors: no parenthesized list, or a size that is not a positive
/// integer (the upper bounds are [`TileSpec::validate`]'s).
fn tile_sizes(format: &str) -> Result<Option<Vec<u64>>> {
    let Some(rest) = format
        .get(..TILES.len())
        .filter(|head| head.eq_ignore_ascii_case(TILES))
        .map(|_| format[TILES.len()..].trim())
    else {
        return Ok(None);
    };
    let bad = || {
        Error::Invalid(format!(
            "cannot read the tile sizes of '{format}'; write tiles(256, 256), a positive \
             integer per column"
        ))
    };
    let list = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(bad)?;
    list.split(',')
        .map(|size| match size.trim().parse::<u64>() {
            Ok(0) | Err(_) => Err(bad()),
            Ok(size) => Ok(size),
        })
        .collect::<Result<Vec<u64>>>()
        .map(Some)
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
