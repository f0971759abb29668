//! A lowered SQL `SELECT` as SQL for another engine: the CTEs of its
//! optimized program, then the assembly of its rows ([`Assembly`]) as the
//! last `SELECT`: one row per group of the rows query whose count is not
//! 0, one row per unit of multiplicity of a join's rows (a row generator
//! of the dialect, [`Dialect::repeat`]), or exactly one row; each column
//! read from its query's result at the row's coordinates or computed on
//! the row; `HAVING`, `DISTINCT`, `ORDER BY`, `LIMIT`, `OFFSET`.
//!
//! The SQL front-end describes its lowered `SELECT` in these terms
//! (`sql::query::plan::Plan` implements [`crate::bound::Assemble::sql`]).

use hashbrown::HashMap;

use super::relation::{Block, Join, Scalar, Writer};
use super::{Dialect, nonzero, plan_ctes, with, without_symmetry};
use crate::error::{Error, Result};
use crate::ir::{Expr, IndexTerm, Program};
use crate::optimizer::OptimizerOptions;

/// How a lowered `SELECT` turns its program's results into rows, as the
/// emitter reads it.
#[derive(Clone, Debug)]
pub struct Assembly {
    /// Where the rows come from.
    pub rows: Rows,
    /// The visible columns: name and how to compute it.
    pub columns: Vec<(String, Item)>,
    /// The `HAVING` condition.
    pub having: Option<Item>,
    /// The `ORDER BY` keys.
    pub order: Vec<OrderKey>,
    /// `SELECT DISTINCT`.
    pub distinct: bool,
    /// `LIMIT`.
    pub limit: Option<usize>,
    /// `OFFSET`.
    pub offset: usize,
}

/// Where a result's rows come from.
#[derive(Clone, Debug)]
pub enum Rows {
    /// One row per entry of `query` over `vars`, repeated by its value
    /// when `repeat`, once otherwise.
    Entries {
        /// The query.
        query: String,
        /// Its variables.
        vars: Vec<String>,
        /// Whether rows repeat by value (a join listing).
        repeat: bool,
    },
    /// Exactly one row; `count` names the query that tells whether any
    /// row matched, when a nullable column needs it.
    One {
        /// The query counting the matched rows.
        count: Option<String>,
    },
}

/// How to compute one value of a row.
#[derive(Clone, Debug)]
pub enum Item {
    /// An expression over the row's variables.
    Pointwise {
        /// The expression.
        expr: Expr,
        /// A string constant's text, when the item is one.
        text: Option<String>,
    },
    /// The value of the program's query `query` at the row's coordinates;
    /// NULL in a one-row result without matching rows when `nullable`.
    Result {
        /// The query.
        query: String,
        /// Whether it is NULL over no rows.
        nullable: bool,
    },
}

/// One `ORDER BY` key.
#[derive(Clone, Debug)]
pub struct OrderKey {
    /// A visible column (by position) or another item.
    pub source: OrderSource,
    /// `DESC`.
    pub descending: bool,
    /// Where NULLs go.
    pub nulls_first: bool,
}

/// What an `ORDER BY` key sorts by.
#[derive(Clone, Debug)]
pub enum OrderSource {
    /// The visible column at this position.
    Column(usize),
    /// Another expression.
    Item(Item),
}

/// The SQL of a `SELECT` lowered to `program` and `plan` in `dialect`,
/// the program optimized with `options`: what `EXPLAIN (FORMAT sql,
/// DIALECT d) SELECT ...` shows.
///
/// Errors: the optimizer's; [`Error::NotSupported`] for plans whose SQL
/// would not be exact.
pub fn emit_select(
    program: &Program,
    plan: &Assembly,
    options: &OptimizerOptions,
    dialect: Dialect,
) -> Result<String> {
    let optimized = crate::optimizer::optimize(program, &without_symmetry(options))?;
    let (mut ctes, mut writer) = plan_ctes(&optimized, dialect)?;
    writer.domains.clear();
    for query in &program.queries {
        writer.collect_domains(&query.expr)?;
    }
    let mut block = Block::default();
    // The results joined so far, by query: each is joined once.
    let mut joined: HashMap<String, Scalar> = HashMap::new();
    // Distinct rows need no repetition.
    let repeat = matches!(plan.rows, Rows::Entries { repeat: true, .. }) && !plan.distinct;
    let count = match &plan.rows {
        Rows::Entries { query, vars, .. } if repeat => {
            // The join's rows, each as many times as its multiplicity.
            let counted = writer.result(query)?;
            let columns: Vec<String> = counted.columns.iter().map(|c| dialect.ident(c)).collect();
            let mut name = format!("{query}#each");
            while writer.results.contains_key(&name) {
                name.push('#');
            }
            let cte = dialect.ident(&name);
            ctes.push(format!(
                "{cte} AS ({})",
                dialect.repeat(&counted.cte, &columns, &counted.value)
            ));
            let mut each = counted.clone();
            each.cte = cte;
            writer.results.insert(name.clone(), each);
            let terms: Vec<IndexTerm> = vars.iter().map(|v| IndexTerm::Var(v.clone())).collect();
            writer.join_alias(&name, &terms, &mut block, Join::Inner)?;
            None
        }
        Rows::Entries { query, vars, .. } => {
            let terms: Vec<IndexTerm> = vars.iter().map(|v| IndexTerm::Var(v.clone())).collect();
            let rows = writer.join_alias(query, &terms, &mut block, Join::Inner)?;
            block.conditions.push(nonzero(&rows.sql, rows.ty));
            joined.insert(query.clone(), rows);
            None
        }
        Rows::One { count: Some(query) } => {
            Some(read(&mut writer, &mut block, &mut joined, query)?)
        }
        Rows::One { count: None } => None,
    };
    let item_sql = |writer: &mut Writer<'_>,
                    block: &mut Block,
                    joined: &mut HashMap<String, Scalar>,
                    item: &Item|
     -> Result<String> {
        Ok(match item {
            Item::Pointwise {
                text: Some(text), ..
            } => dialect.string(text),
            Item::Pointwise { expr, text: None } => writer.inline(expr, block, false)?.sql,
            Item::Result {
                query, nullable, ..
            } => {
                let value = read(writer, block, joined, query)?;
                match (&count, nullable) {
                    (Some(count), true) => {
                        format!(
                            "CASE WHEN {} = 0 THEN NULL ELSE {} END",
                            count.sql, value.sql
                        )
                    }
                    _ => value.sql,
                }
            }
        })
    };
    let mut columns = Vec::new();
    for (name, item) in &plan.columns {
        let sql = item_sql(&mut writer, &mut block, &mut joined, item)?;
        columns.push(format!("{sql} AS {}", dialect.ident(name)));
    }
    if let Some(having) = &plan.having {
        let sql = item_sql(&mut writer, &mut block, &mut joined, having)?;
        block.conditions.push(sql);
    }
    let mut order = Vec::new();
    for key in &plan.order {
        let sql = match &key.source {
            OrderSource::Column(n) => (n + 1).to_string(),
            OrderSource::Item(item) => item_sql(&mut writer, &mut block, &mut joined, item)?,
        };
        let direction = if key.descending { "DESC" } else { "ASC" };
        let nulls = if key.nulls_first { "FIRST" } else { "LAST" };
        order.push(format!("{sql} {direction} NULLS {nulls}"));
    }
    let distinct = if plan.distinct { "DISTINCT " } else { "" };
    let mut sql = format!(
        "SELECT {distinct}{}{}",
        columns.join(", "),
        writer.tables_clause(&block)
    );
    if !order.is_empty() {
        sql.push_str(&format!(" ORDER BY {}", order.join(", ")));
    }
    if let Some(limit) = plan.limit {
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    if plan.offset > 0 {
        sql.push_str(&format!(" OFFSET {}", plan.offset));
    }
    Ok(with(&ctes, &sql))
}

/// The value of the program's query `query` on the block's rows: its
/// result joined on the variables the row binds (one row for a scalar),
/// 0 where it has no entry. A result in `joined` is not joined again.
fn read(
    writer: &mut Writer<'_>,
    block: &mut Block,
    joined: &mut HashMap<String, Scalar>,
    query: &str,
) -> Result<Scalar> {
    if let Some(value) = joined.get(query) {
        return Ok(value.clone());
    }
    let columns = writer.result(query)?.columns.clone();
    let terms: Vec<IndexTerm> = columns.iter().map(|v| IndexTerm::Var(v.clone())).collect();
    if columns.iter().any(|c| block.column(c).is_none()) {
        return Err(Error::NotSupported(format!(
            "SQL for a column whose query {query} has indices the rows do not have"
        )));
    }
    let join = if columns.is_empty() {
        Join::Inner
    } else {
        Join::Left
    };
    let value = writer.join_alias(query, &terms, block, join)?;
    joined.insert(query.to_string(), value.clone());
    Ok(value)
}
