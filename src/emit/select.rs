//! A lowered SQL `SELECT` ([`Assembly`]) as SQL for another engine: the CTEs
//! of its optimized program, then the assembly of its rows as the last
//! `SELECT` (one row per group of the rows query whose count is not 0, or
//! exactly one row; each column read from its query's result at the row's
//! coordinates or computed on the row; `HAVING`, `DISTINCT`, `ORDER BY`,
//! `LIMIT`, `OFFSET`).
//!
//! A `SELECT` without aggregates lists its join's rows repeated by their
//! multiplicity, which needs a row generator per dialect; it is refused
//! with [`Error::NotSupported`].

use super::relation::{Block, Join, Scalar, Writer};
use super::{Dialect, nonzero, plan_ctes, with};
use crate::error::{Error, Result};
use crate::ir::{Expr, IndexTerm, Program};
use crate::optimizer::OptimizerOptions;

/// How a lowered `SELECT` turns its program's results into rows: the
/// SQL front-end's plan (`sql::query::plan::Plan`) as the emitter reads
/// it.
#[derive(Clone, Debug)]
pub struct Assembly {
    /// The program.
    pub program: Program,
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

/// The SQL of `plan` in `dialect`, its program optimized with `options`:
/// what `EXPLAIN (FORMAT sql, DIALECT d) SELECT ...` shows.
///
/// Errors: the optimizer's; [`Error::NotSupported`] for a `SELECT`
/// without aggregates and for plans whose SQL would not be exact.
pub fn emit_select(
    plan: &Assembly,
    options: &OptimizerOptions,
    dialect: Dialect,
) -> Result<String> {
    let optimized = crate::optimizer::optimize(&plan.program, options)?;
    let (ctes, mut writer) = plan_ctes(&optimized, dialect)?;
    writer.domains.clear();
    for query in &plan.program.queries {
        writer.collect_domains(&query.expr)?;
    }
    let mut block = Block::default();
    let count = match &plan.rows {
        Rows::Entries { repeat: true, .. } => {
            return Err(Error::NotSupported(
                "SQL for a SELECT without aggregates (its rows repeat by multiplicity)".to_string(),
            ));
        }
        Rows::Entries { query, vars, .. } => {
            let terms: Vec<IndexTerm> = vars.iter().map(|v| IndexTerm::Var(v.clone())).collect();
            let rows = writer.join_alias(query, &terms, &mut block, Join::Inner)?;
            block.conditions.push(nonzero(&rows.sql, rows.ty));
            None
        }
        Rows::One { count: Some(query) } => Some(read(&mut writer, &mut block, query)?),
        Rows::One { count: None } => None,
    };
    let item_sql = |writer: &mut Writer<'_>, block: &mut Block, item: &Item| -> Result<String> {
        Ok(match item {
            Item::Pointwise {
                text: Some(text), ..
            } => dialect.string(text),
            Item::Pointwise { expr, text: None } => writer.inline(expr, block, false)?.sql,
            Item::Result {
                query, nullable, ..
            } => {
                let value = read(writer, block, query)?;
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
        let sql = item_sql(&mut writer, &mut block, item)?;
        columns.push(format!("{sql} AS {}", dialect.ident(name)));
    }
    if let Some(having) = &plan.having {
        let sql = item_sql(&mut writer, &mut block, having)?;
        block.conditions.push(sql);
    }
    let mut order = Vec::new();
    for key in &plan.order {
        let sql = match &key.source {
            OrderSource::Column(n) => (n + 1).to_string(),
            OrderSource::Item(item) => item_sql(&mut writer, &mut block, item)?,
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
/// 0 where it has no entry.
fn read(writer: &mut Writer<'_>, block: &mut Block, query: &str) -> Result<Scalar> {
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
    writer.join_alias(query, &terms, block, join)
}
