//! One `SELECT` as an IR program plus the recipe that turns the program's
//! results into SQL rows.
//!
//! - A query without aggregates lists the rows of its join: the program's
//!   `#rows[vars]` query holds each row's multiplicity, and the select items
//!   are evaluated per row.
//! - A query with `GROUP BY` or aggregates has one row per group: `#rows`
//!   (or the query's own `COUNT(*)`) counts each group's rows, every select
//!   item that aggregates is a query over the grouped variables (`SUM(j)
//!   A.v[i,j] * B.v[j,k]`), and grouped key columns are read off the row.
//! - Without `GROUP BY` the result has exactly one row; aggregates other
//!   than `COUNT` are NULL when no row matched.

use std::sync::Arc;

use sqlparser::ast::{
    BinaryOperator, Expr as SqlExpr, GroupByExpr, JoinConstraint, JoinOperator, Query, SelectItem,
    SelectItemQualifiedWildcardKind, TableFactor, TableWithJoins,
};

use super::expr::{Lowerer, SqlType, Typed, has_aggregate, has_nullable_aggregate};
use super::scope::{Column, Constant, Scope};
use super::{Ctes, body_select};
use crate::bound::Literal;
use crate::emit;
use crate::error::{Error, Result};
use crate::ir::{Expr, Program, Query as IrQuery, TensorRef};
use crate::sql::Context;

pub use crate::emit::Rows;

/// The name of the query whose entries are the result's rows.
pub const ROWS: &str = "#rows";

/// A lowered `SELECT`.
pub struct Plan {
    /// What to evaluate.
    pub program: Program,
    /// How rows come out of the program's results.
    pub rows: Rows,
    /// The visible columns, in order.
    pub columns: Vec<OutputColumn>,
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
    /// The `FROM` items that are not stored tables read as they are (a
    /// `WITH` table, a sub-query, a table function, renamed columns), as
    /// written: binding evaluated or changed them, so another engine
    /// cannot read them by name.
    pub derived: Vec<String>,
}

/// A visible result column.
pub struct OutputColumn {
    /// Its SQL name.
    pub name: String,
    /// How to compute it.
    pub item: Item,
    /// The dimension size of a plain key column (it becomes a dimension
    /// when the result is stored).
    pub key_size: Option<u64>,
}

/// How to compute one value of a row.
#[derive(Clone, Debug)]
pub enum Item {
    /// An expression over the row's variables (`coord(i)`, stored values,
    /// constants), evaluated per row.
    Pointwise { expr: Expr, ty: SqlType },
    /// The value of the program's query `query` at the row's coordinates;
    /// NULL in a one-row result without matching rows when `nullable`.
    Result {
        query: String,
        ty: SqlType,
        nullable: bool,
    },
}

/// One `ORDER BY` key.
pub struct OrderKey {
    /// A visible column (by position) or a hidden item.
    pub source: OrderSource,
    /// `DESC`.
    pub descending: bool,
    /// Where NULLs go (DuckDB's default: last).
    pub nulls_first: bool,
}

/// What an `ORDER BY` key sorts by.
pub enum OrderSource {
    /// The visible column at this position.
    Column(usize),
    /// Another expression.
    Item(Item),
}

/// Lowers `select` (the body of `query`), evaluating its `FROM`
/// sub-queries with `run_subquery`.
pub fn plan(
    context: Context<'_>,
    query: &Query,
    ctes: &Ctes,
    run_subquery: &dyn Fn(&Query, &Ctes) -> Result<Arc<crate::storage::Tensor>>,
) -> Result<Plan> {
    let select = body_select(query)?;
    let unsupported = [
        (select.top.is_some(), "TOP"),
        (select.into.is_some(), "SELECT INTO"),
        (!select.lateral_views.is_empty(), "LATERAL VIEW"),
        (select.qualify.is_some(), "QUALIFY"),
        (!select.named_window.is_empty(), "WINDOW"),
        (query.fetch.is_some(), "FETCH"),
    ];
    if let Some((_, what)) = unsupported.iter().find(|(present, _)| *present) {
        return Err(Error::NotSupported(format!("{what} in queries")));
    }

    let mut scope = Scope::default();
    let mut derived = Vec::new();
    let mut conditions: Vec<&SqlExpr> = Vec::new();
    let mut usings: Vec<(usize, String)> = Vec::new();
    for TableWithJoins { relation, joins } in &select.from {
        derived.extend(add_relation(
            context,
            &mut scope,
            relation,
            ctes,
            run_subquery,
        )?);
        for join in joins {
            derived.extend(add_relation(
                context,
                &mut scope,
                &join.relation,
                ctes,
                run_subquery,
            )?);
            let right = scope.occurrences.len() - 1;
            let constraint = match &join.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) | JoinOperator::CrossJoin(c) => c,
                other => return Err(Error::NotSupported(join_name(other))),
            };
            match constraint {
                JoinConstraint::On(on) => conditions.push(on),
                JoinConstraint::Using(columns) => {
                    for column in columns {
                        usings.push((right, super::super::table_name(column)?));
                    }
                }
                JoinConstraint::None => {}
                JoinConstraint::Natural => {
                    return Err(Error::NotSupported("NATURAL JOIN".to_string()));
                }
            }
        }
    }
    for (right, column) in &usings {
        using(&mut scope, *right, column)?;
    }
    if let Some(selection) = &select.selection {
        conditions.push(selection);
    }
    let mut conjuncts = Vec::new();
    for condition in conditions {
        split_and(condition, &mut conjuncts);
    }
    let mut filters_sql = Vec::new();
    for conjunct in conjuncts {
        if !join_or_bind(&mut scope, conjunct)? {
            filters_sql.push(conjunct);
        }
    }
    scope.finish()?;

    let mut filters = Vec::new();
    {
        let lowerer = Lowerer::new(&scope, &[], None);
        for condition in filters_sql {
            filters.push(lowerer.condition(condition)?);
        }
    }
    if scope.is_empty() {
        filters.push(Expr::Literal(crate::ir::Value::Bool(false)));
    }

    let items = select_items(&scope, &select.projection)?;
    let group_exprs = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs.as_slice(),
        _ => {
            return Err(Error::NotSupported(
                "GROUP BY ALL and GROUP BY modifiers".to_string(),
            ));
        }
    };
    let order_exprs = order_by(query)?;
    let aggregating = !group_exprs.is_empty()
        || select.having.is_some()
        || items
            .iter()
            .any(|i| matches!(i, Selected::Expr(e, _) if has_aggregate(e)))
        || order_exprs.iter().any(|(e, _, _)| has_aggregate(e));
    let groups = if aggregating {
        Some(group_classes(&scope, group_exprs, &items)?)
    } else {
        None
    };

    let lowerer = Lowerer::new(&scope, &filters, groups.as_deref());
    let variables = scope.variables();
    let row_vars: Vec<usize> = match &groups {
        Some(g) => variables
            .iter()
            .copied()
            .filter(|c| g.contains(c))
            .collect(),
        None => variables.clone(),
    };
    let var_names: Vec<String> = row_vars
        .iter()
        .map(|&c| scope.classes()[c].name.clone())
        .collect();

    let mut builder = Builder {
        queries: Vec::new(),
        var_names: &var_names,
    };
    let mut columns = Vec::new();
    for selected in &items {
        let (name, typed, nullable) = match selected {
            Selected::Expr(e, name) => (name.clone(), lowerer.item(e)?, has_nullable_aggregate(e)),
            Selected::Column(c, name) => (name.clone(), lowerer.column(*c)?, false),
        };
        let column = match selected {
            Selected::Expr(e, _) => resolve_column(&scope, e)?,
            Selected::Column(c, _) => Some(*c),
        };
        let key_size = match column {
            Some(Column::Key { occurrence, dim }) => {
                Some(scope.classes()[scope.class(occurrence, dim)].size)
            }
            _ => None,
        };
        let item = builder.item(&name, typed, aggregating, nullable);
        columns.push(OutputColumn {
            name,
            item,
            key_size,
        });
    }
    let having = match &select.having {
        Some(h) => {
            let typed = lowerer.item(h)?;
            Some(builder.item("#having", typed, true, has_nullable_aggregate(h)))
        }
        None => None,
    };
    let mut order = Vec::new();
    for (expr, descending, nulls_first) in order_exprs {
        let source = match order_column(expr, &columns)? {
            Some(position) => OrderSource::Column(position),
            None => {
                let typed = lowerer.item(expr)?;
                OrderSource::Item(builder.item(
                    "#order",
                    typed,
                    aggregating,
                    has_nullable_aggregate(expr),
                ))
            }
        };
        order.push(OrderKey {
            source,
            descending,
            nulls_first,
        });
    }

    let rows = if !aggregating {
        builder.push(ROWS, lowerer.row_count());
        Rows::Entries {
            query: ROWS.to_string(),
            vars: var_names.clone(),
            repeat: true,
        }
    } else {
        let counted = items
            .iter()
            .zip(&columns)
            .find_map(|(s, c)| match (s, &c.item) {
                (Selected::Expr(e, _), Item::Result { query, .. }) if is_count_star(e) => {
                    Some(query.clone())
                }
                _ => None,
            });
        let grouped = !group_exprs.is_empty();
        let order_items = order.iter().filter_map(|key| match &key.source {
            OrderSource::Item(item) => Some(item),
            OrderSource::Column(_) => None,
        });
        let nullable = columns
            .iter()
            .map(|c| &c.item)
            .chain(having.iter())
            .chain(order_items)
            .any(|item| matches!(item, Item::Result { nullable: true, .. }));
        let count = match counted {
            Some(query) => Some(query),
            None if grouped || nullable => Some(builder.push(ROWS, lowerer.count_star())),
            None => None,
        };
        match (grouped, count) {
            (true, Some(query)) => Rows::Entries {
                query,
                vars: var_names.clone(),
                repeat: false,
            },
            (_, count) => Rows::One { count },
        }
    };

    let (limit, offset) = limit_offset(query)?;
    Ok(Plan {
        program: Program {
            queries: builder.queries,
        },
        rows,
        columns,
        having,
        order,
        distinct: select.distinct.is_some(),
        limit,
        offset,
        derived,
    })
}

impl Plan {
    /// The assembly of the rows as the SQL emitter reads it.
    ///
    /// Errors: [`Error::NotSupported`] for a query that reads
    /// [`Plan::derived`] items.
    pub fn assembly(&self) -> Result<emit::Assembly> {
        if let Some(item) = self.derived.first() {
            return Err(Error::NotSupported(format!(
                "SQL for a query that reads {item} (another engine reads only the stored \
                 tables, by their names and columns)"
            )));
        }
        let item = |item: &Item| match item {
            Item::Pointwise { expr, ty } => emit::Item::Pointwise {
                expr: expr.clone(),
                text: match ty {
                    SqlType::Text(text) => Some(text.clone()),
                    SqlType::Value(_) | SqlType::Key(_) => None,
                },
            },
            Item::Result {
                query, nullable, ..
            } => emit::Item::Result {
                query: query.clone(),
                nullable: *nullable,
            },
        };
        Ok(emit::Assembly {
            rows: self.rows.clone(),
            columns: self
                .columns
                .iter()
                .map(|c| (c.name.clone(), item(&c.item)))
                .collect(),
            having: self.having.as_ref().map(item),
            order: self
                .order
                .iter()
                .map(|key| emit::OrderKey {
                    source: match &key.source {
                        OrderSource::Column(n) => emit::OrderSource::Column(*n),
                        OrderSource::Item(i) => emit::OrderSource::Item(item(i)),
                    },
                    descending: key.descending,
                    nulls_first: key.nulls_first,
                })
                .collect(),
            distinct: self.distinct,
            limit: self.limit,
            offset: self.offset,
        })
    }

    /// How the rows come out of the program, for `EXPLAIN`.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec!["Result:".to_string()];
        lines.push(match &self.rows {
            Rows::Entries {
                query,
                vars,
                repeat,
            } => {
                let each = if *repeat {
                    "repeated by its value"
                } else {
                    "where it is not 0"
                };
                format!("  one row per entry of {query}[{}], {each}", vars.join(","))
            }
            Rows::One { count: Some(q) } => {
                format!("  one row; aggregates are NULL where {q} is 0")
            }
            Rows::One { count: None } => "  one row".to_string(),
        });
        for column in &self.columns {
            lines.push(format!("  {} = {}", column.name, column.item));
        }
        if let Some(having) = &self.having {
            lines.push(format!("  HAVING {having}"));
        }
        if self.distinct {
            lines.push("  DISTINCT".to_string());
        }
        for key in &self.order {
            let source = match &key.source {
                OrderSource::Column(n) => self.columns[*n].name.clone(),
                OrderSource::Item(item) => item.to_string(),
            };
            let direction = if key.descending { "DESC" } else { "ASC" };
            lines.push(format!("  ORDER BY {source} {direction}"));
        }
        if self.offset > 0 {
            lines.push(format!("  OFFSET {}", self.offset));
        }
        if let Some(limit) = self.limit {
            lines.push(format!("  LIMIT {limit}"));
        }
        lines
    }
}

impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Item::Pointwise { expr, .. } => write!(f, "{expr}"),
            Item::Result { query, .. } => write!(f, "the value of {query}"),
        }
    }
}

/// Collects the program's queries.
struct Builder<'v> {
    queries: Vec<IrQuery>,
    var_names: &'v [String],
}

impl Builder<'_> {
    /// Adds `name[vars] = expr` under a name not used yet; returns it.
    fn push(&mut self, name: &str, expr: Expr) -> String {
        let mut unique = name.to_string();
        let mut n = 2;
        while self
            .queries
            .iter()
            .any(|q| q.name.eq_ignore_ascii_case(&unique))
        {
            unique = format!("{name}_{n}");
            n += 1;
        }
        let free = expr.free_indices();
        let indices = self
            .var_names
            .iter()
            .filter(|v| free.contains(v))
            .cloned()
            .collect();
        self.queries.push(IrQuery {
            name: unique.clone(),
            indices,
            expr,
        });
        unique
    }

    /// How to compute a lowered item: aggregates become queries of the
    /// program, everything else is evaluated per row.
    fn item(&mut self, name: &str, typed: Typed, aggregating: bool, nullable: bool) -> Item {
        let Typed { expr, ty } = typed;
        if aggregating && contains_agg(&expr) {
            let query = self.push(name, expr);
            Item::Result {
                query,
                ty,
                nullable,
            }
        } else {
            Item::Pointwise { expr, ty }
        }
    }
}

fn contains_agg(expr: &Expr) -> bool {
    match expr {
        Expr::Agg { .. } => true,
        Expr::Map { args, .. } => args.iter().any(contains_agg),
        _ => false,
    }
}

/// A select-list entry after `*` is expanded.
enum Selected<'q> {
    /// An expression with its result column name.
    Expr(&'q SqlExpr, String),
    /// A column from `*`.
    Column(Column, String),
}

fn select_items<'q>(scope: &Scope, projection: &'q [SelectItem]) -> Result<Vec<Selected<'q>>> {
    let mut items = Vec::new();
    for item in projection {
        match item {
            SelectItem::UnnamedExpr(expr) => items.push(Selected::Expr(expr, column_name(expr))),
            SelectItem::ExprWithAlias { expr, alias } => {
                items.push(Selected::Expr(expr, alias.value.clone()));
            }
            SelectItem::Wildcard(options) | SelectItem::QualifiedWildcard(_, options)
                if !options.to_string().is_empty() =>
            {
                return Err(Error::NotSupported(format!("{item} (wildcard options)")));
            }
            SelectItem::Wildcard(_) => {
                for (name, column) in scope.star(None)? {
                    items.push(Selected::Column(column, name));
                }
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                let qualifier = super::super::table_name(name)?;
                for (name, column) in scope.star(Some(&qualifier))? {
                    items.push(Selected::Column(column, name));
                }
            }
            other => return Err(Error::NotSupported(format!("the select item {other}"))),
        }
    }
    Ok(items)
}

/// The name of an unaliased result column: a column's own name, else the
/// expression's text (as DuckDB does).
fn column_name(expr: &SqlExpr) -> String {
    match expr {
        SqlExpr::Identifier(ident) => ident.value.clone(),
        SqlExpr::CompoundIdentifier(parts) => parts
            .last()
            .map_or_else(|| expr.to_string(), |p| p.value.clone()),
        other => other.to_string(),
    }
}

fn is_count_star(expr: &SqlExpr) -> bool {
    matches!(expr, SqlExpr::Function(f)
        if super::expr::function_name(f) == "count"
            && matches!(&f.args, sqlparser::ast::FunctionArguments::List(l)
                if l.duplicate_treatment.is_none()
                    && matches!(l.args.as_slice(),
                        [sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Wildcard)])))
}

/// The classes that `GROUP BY` lists: key columns, given by name, by select
/// alias or by position.
fn group_classes(scope: &Scope, exprs: &[SqlExpr], items: &[Selected<'_>]) -> Result<Vec<usize>> {
    let mut classes = Vec::new();
    for expr in exprs {
        let target: &SqlExpr = match literal_position(expr) {
            Some(n) => match items.get(n.wrapping_sub(1)) {
                Some(Selected::Expr(e, _)) => e,
                Some(Selected::Column(Column::Key { occurrence, dim }, _)) => {
                    classes.push(scope.class(*occurrence, *dim));
                    continue;
                }
                Some(Selected::Column(Column::Value { .. }, name)) => {
                    return Err(group_by_value(name));
                }
                None => {
                    return Err(Error::Invalid(format!(
                        "GROUP BY position {n} is not in the select list"
                    )));
                }
            },
            None => expr,
        };
        let column = match target {
            SqlExpr::Identifier(ident) => match scope.resolve(None, &ident.value) {
                Ok(column) => column,
                Err(e) => match items.iter().find_map(|item| match item {
                    Selected::Expr(inner, name) if name.eq_ignore_ascii_case(&ident.value) => {
                        Some(*inner)
                    }
                    _ => None,
                }) {
                    Some(aliased) => resolve_column(scope, aliased)?.ok_or(e)?,
                    None => return Err(e),
                },
            },
            other => resolve_column(scope, other)?.ok_or_else(|| {
                Error::NotSupported(format!(
                    "GROUP BY the expression {other}; group by key columns"
                ))
            })?,
        };
        match column {
            Column::Key { occurrence, dim } => classes.push(scope.class(occurrence, dim)),
            Column::Value { .. } => return Err(group_by_value(&target.to_string())),
        }
    }
    let variables = scope.variables();
    let mut distinct: Vec<usize> = variables
        .into_iter()
        .filter(|c| classes.contains(c))
        .collect();
    distinct.dedup();
    Ok(distinct)
}

fn group_by_value(name: &str) -> Error {
    Error::NotSupported(format!(
        "GROUP BY the value column {name}; group by key columns (dimensions)"
    ))
}

/// The column a plain column reference names, if it is one.
fn resolve_column(scope: &Scope, expr: &SqlExpr) -> Result<Option<Column>> {
    Ok(match expr {
        SqlExpr::Identifier(ident) => Some(scope.resolve(None, &ident.value)?),
        SqlExpr::CompoundIdentifier(parts) => match parts.as_slice() {
            [table, column] => Some(scope.resolve(Some(&table.value), &column.value)?),
            _ => None,
        },
        SqlExpr::Nested(inner) => resolve_column(scope, inner)?,
        _ => None,
    })
}

fn literal_position(expr: &SqlExpr) -> Option<usize> {
    match Literal::from_expr(expr) {
        Ok(Literal::Integer(n)) if matches!(expr, SqlExpr::Value(_)) => usize::try_from(n).ok(),
        _ => None,
    }
}

/// Adds a `FROM` item to the scope.
/// Adds a `FROM` item to `scope`; says what it is when it is not a stored
/// table read as it is ([`Plan::derived`]).
fn add_relation(
    context: Context<'_>,
    scope: &mut Scope,
    relation: &TableFactor,
    ctes: &Ctes,
    run_subquery: &dyn Fn(&Query, &Ctes) -> Result<Arc<crate::storage::Tensor>>,
) -> Result<Option<String>> {
    let (name, tensor, alias, evaluated) = match relation {
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            let table = super::super::table_name(name)?;
            let tensor = ctes.table(context, &table)?;
            let with_table = ctes.get(&table).is_some();
            let stored = context
                .catalog()
                .names()
                .find(|n| n.eq_ignore_ascii_case(&table))
                .map_or(table, str::to_string);
            let kind = with_table.then_some("the WITH table");
            (stored, tensor, alias, kind)
        }
        TableFactor::Table {
            name,
            alias,
            args: Some(args),
            ..
        } => {
            let function = super::super::table_name(name)?.to_lowercase();
            let tensor = if crate::sql::einsum_function::is_einsum(name) {
                crate::sql::einsum_function::einsum(context, args, ctes)?
            } else {
                Arc::new(crate::sql::table_function::load(context, name, args)?)
            };
            (function, tensor, alias, Some("the table function"))
        }
        TableFactor::Derived {
            subquery, alias, ..
        } => {
            let tensor = run_subquery(subquery, ctes)?;
            ("subquery".to_string(), tensor, alias, Some("the sub-query"))
        }
        other => return Err(Error::NotSupported(format!("FROM {other}"))),
    };
    let renamed = alias.as_ref().is_some_and(|a| !a.columns.is_empty());
    let tensor = match alias {
        Some(alias) if renamed => {
            let names: Vec<String> = alias.columns.iter().map(|c| c.name.value.clone()).collect();
            Arc::new(tensor.with_column_names(&names)?)
        }
        _ => tensor,
    };
    let shown = alias
        .as_ref()
        .map_or(name.clone(), |a| a.name.value.clone());
    scope.add(&shown, TensorRef { name, tensor })?;
    Ok(match (evaluated, renamed) {
        (Some(kind), _) => Some(format!("{kind} {relation}")),
        (None, true) => Some(format!("{relation}, whose columns are renamed")),
        (None, false) => None,
    })
}

fn join_name(operator: &JoinOperator) -> String {
    let name = match operator {
        JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => "LEFT OUTER JOIN",
        JoinOperator::Right(_) | JoinOperator::RightOuter(_) => "RIGHT OUTER JOIN",
        JoinOperator::FullOuter(_) => "FULL OUTER JOIN",
        JoinOperator::Semi(_) | JoinOperator::LeftSemi(_) | JoinOperator::RightSemi(_) => {
            "SEMI JOIN"
        }
        JoinOperator::Anti(_) | JoinOperator::LeftAnti(_) | JoinOperator::RightAnti(_) => {
            "ANTI JOIN"
        }
        _ => "this kind of JOIN",
    };
    format!("{name} is not supported yet (inner joins are)")
}

/// `JOIN t USING (c)`: unifies `c` of the right table with the one earlier
/// table that has it.
fn using(scope: &mut Scope, right: usize, column: &str) -> Result<()> {
    let right_alias = scope.occurrences[right].alias.clone();
    let Column::Key { dim: right_dim, .. } = scope.resolve(Some(&right_alias), column)? else {
        return Err(Error::NotSupported(format!(
            "USING ({column}): joins are on key columns"
        )));
    };
    let left: Vec<(usize, usize)> = (0..right)
        .filter_map(|o| {
            let alias = scope.occurrences[o].alias.clone();
            match scope.resolve(Some(&alias), column) {
                Ok(Column::Key { dim, .. }) => Some((o, dim)),
                _ => None,
            }
        })
        .collect();
    match left.as_slice() {
        [one] => scope.unify(*one, (right, right_dim)),
        [] => Err(Error::Invalid(format!(
            "USING ({column}): no table before {right_alias} has a key column {column}"
        ))),
        _ => Err(Error::Invalid(format!(
            "USING ({column}) is ambiguous: several tables before {right_alias} have it"
        ))),
    }
}

fn split_and<'q>(expr: &'q SqlExpr, out: &mut Vec<&'q SqlExpr>) {
    match expr {
        SqlExpr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        SqlExpr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

/// Takes a conjunct that joins two key columns or fixes one to a
/// constant into the scope; `false` for any other condition.
fn join_or_bind(scope: &mut Scope, conjunct: &SqlExpr) -> Result<bool> {
    let SqlExpr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = conjunct
    else {
        return Ok(false);
    };
    let key = |scope: &Scope, e: &SqlExpr| -> Result<Option<(usize, usize)>> {
        Ok(match resolve_column(scope, e)? {
            Some(Column::Key { occurrence, dim }) => Some((occurrence, dim)),
            _ => None,
        })
    };
    let constant = |e: &SqlExpr| match Literal::from_expr(e) {
        Ok(Literal::Integer(i)) => Some(Constant::Int(i)),
        Ok(Literal::String(s)) => Some(Constant::Str(s)),
        _ => None,
    };
    match (key(scope, left)?, key(scope, right)?) {
        (Some(a), Some(b)) => scope.unify(a, b).map(|()| true),
        (Some(a), None) => match constant(right) {
            Some(c) => scope.bind(a, c).map(|()| true),
            None => Ok(false),
        },
        (None, Some(b)) => match constant(left) {
            Some(c) => scope.bind(b, c).map(|()| true),
            None => Ok(false),
        },
        (None, None) => Ok(false),
    }
}

/// The `ORDER BY` keys: expression, descending, nulls first.
fn order_by(query: &Query) -> Result<Vec<(&SqlExpr, bool, bool)>> {
    use sqlparser::ast::{OrderByKind, OrderBySort};
    let Some(order_by) = &query.order_by else {
        return Ok(Vec::new());
    };
    let OrderByKind::Expressions(exprs) = &order_by.kind else {
        return Err(Error::NotSupported("ORDER BY ALL".to_string()));
    };
    exprs
        .iter()
        .map(|o| {
            let descending = match &o.options.sort {
                Some(OrderBySort::Desc) => true,
                Some(OrderBySort::Asc) | None => false,
                Some(OrderBySort::Using(_)) => {
                    return Err(Error::NotSupported("ORDER BY ... USING".to_string()));
                }
            };
            Ok((&o.expr, descending, o.options.nulls_first.unwrap_or(false)))
        })
        .collect()
}

/// The visible column an `ORDER BY` key names: by position or by alias.
fn order_column(expr: &SqlExpr, columns: &[OutputColumn]) -> Result<Option<usize>> {
    if let Some(n) = literal_position(expr) {
        return if (1..=columns.len()).contains(&n) {
            Ok(Some(n - 1))
        } else {
            Err(Error::Invalid(format!(
                "ORDER BY position {n} is not in the select list (1 to {})",
                columns.len()
            )))
        };
    }
    if let SqlExpr::Identifier(ident) = expr {
        let named: Vec<usize> = (0..columns.len())
            .filter(|&n| columns[n].name.eq_ignore_ascii_case(&ident.value))
            .collect();
        if let [one] = named.as_slice() {
            return Ok(Some(*one));
        }
    }
    Ok(None)
}

fn limit_offset(query: &Query) -> Result<(Option<usize>, usize)> {
    use sqlparser::ast::LimitClause;
    let count = |e: &SqlExpr, what: &str| match Literal::from_expr(e) {
        Ok(Literal::Integer(n)) if n >= 0 => {
            usize::try_from(n).map_err(|_| Error::Invalid(format!("{what} {n} is too large")))
        }
        _ => Err(Error::Invalid(format!(
            "{what} takes a non-negative integer, not {e}"
        ))),
    };
    match &query.limit_clause {
        None => Ok((None, 0)),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(Error::NotSupported("LIMIT BY".to_string()));
            }
            let limit = match limit {
                Some(SqlExpr::Value(v)) if v.to_string().eq_ignore_ascii_case("null") => None,
                Some(e) => Some(count(e, "LIMIT")?),
                None => None,
            };
            let offset = match offset {
                Some(o) => count(&o.value, "OFFSET")?,
                None => 0,
            };
            Ok((limit, offset))
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            Ok((Some(count(limit, "LIMIT")?), count(offset, "OFFSET")?))
        }
    }
}
