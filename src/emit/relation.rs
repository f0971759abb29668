//! IR expressions as SQL relations: one `SELECT` per aggregation step,
//! joining its factors, with the aggregate pushed into its `GROUP BY`.
//!
//! A relation holds the entries of a K-relation: one row per assignment of
//! its index variables (one column per variable) where the value (column
//! `v`) may differ from the relation's *fill*, the value of every other
//! assignment. Fills are known when the SQL is written (they follow from
//! the operators' algebra, as in [`crate::reference`]), so they appear as
//! constants.
//!
//! A *block* is the `FROM ... WHERE` of one `SELECT`: the rows it lists
//! cover every assignment where the expression may differ from its fill,
//! and the expression's value is a SQL expression over the row:
//!
//! - a stored input joins its table (keyed tables are unique per key; a
//!   bag's rows repeat by multiplicity, so a bag is grouped into a count
//!   unless it is a factor of a `SUM`, where repeated rows multiply the sum
//!   exactly);
//! - a product joins the factors whose fill annihilates it (their rows
//!   hold its support) and looks the others up with `LEFT JOIN` and
//!   `COALESCE(v, fill)`; factors without tables (`coord(i) < coord(j)`,
//!   constants) are expressions on the joined row;
//! - a map over one relation and constants keeps that relation's rows; a
//!   map over several (`A + B`) is their `FULL OUTER JOIN`;
//! - an aggregate groups its body's block by the variables it keeps and
//!   accounts for the assignments without a row (`SUM(v) + fill · (total −
//!   COUNT(*))`, `MAX` against the fill where some are missing), with the
//!   domain sizes of the aggregated indices as constants.
//!
//! What cannot be written exactly is refused with
//! [`Error::NotSupported`]: a relation whose rows would be every
//! coordinate of a string dimension, a union of relations over different
//! indices (every coordinate of the missing ones), more than
//! [`DENSE_LIMIT`] dense coordinates.

use hashbrown::HashMap;

use super::dialect::Dialect;
use crate::error::{Error, Result};
use crate::ir::{AggOp, Annotation, Expr, IndexTerm, Input, ScalarOp, Value};
use crate::optimizer::Reduction;
use crate::storage::ValueType;

/// The most coordinates a dense result (one whose fill is not 0) may list.
pub const DENSE_LIMIT: u128 = 10_000_000;

/// Assumed number of Spark executors in the broadcast rule (TRA's cost
/// model: broadcasting `f` floats to `s` sites moves `f · s`, a shuffle
/// join moves every input once).
pub const SPARK_SITES: f64 = 8.0;

/// Factors estimated above this many entries are never broadcast,
/// whatever the rule says: each executor would hold them in memory.
pub const BROADCAST_MAX_ENTRIES: f64 = 1_000_000.0;

/// The coordinates an index variable ranges over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain {
    /// The number of coordinates.
    pub size: u64,
    /// Whether they are strings (a dictionary-coded dimension).
    pub strings: bool,
}

/// A computed result that later steps read: its CTE and columns.
#[derive(Clone, Debug)]
pub struct Computed {
    /// The CTE's name, quoted as needed.
    pub cte: String,
    /// Its index columns, in order.
    pub columns: Vec<String>,
    /// Its value column.
    pub value: String,
    /// The domains of its index columns.
    pub domains: Vec<Domain>,
    /// Its value type.
    pub ty: ValueType,
    /// The estimated number of entries (NaN if unknown).
    pub estimate: f64,
}

/// A relation as a `SELECT` with columns named after its variables, then
/// `v`.
#[derive(Clone, Debug)]
pub struct Relation {
    /// The `SELECT` text.
    pub sql: String,
    /// Its variables, in column order.
    pub vars: Vec<String>,
    /// The value of the assignments without a row.
    pub fill: Value,
    /// The type of `v`.
    pub ty: ValueType,
    /// The estimated number of rows (NaN if unknown).
    pub estimate: f64,
}

/// A SQL scalar expression with its type. `text` marks a string key
/// (usable only in comparisons with other string keys).
#[derive(Clone, Debug)]
pub(super) struct Scalar {
    pub(super) sql: String,
    pub(super) ty: ValueType,
    pub(super) text: bool,
}

impl Scalar {
    fn value(sql: String, ty: ValueType) -> Scalar {
        Scalar {
            sql,
            ty,
            text: false,
        }
    }
}

/// How a table joins a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Join {
    Inner,
    Left,
}

/// One table or sub-query of a block's `FROM`.
#[derive(Debug)]
struct FromItem {
    source: String,
    alias: String,
    join: Join,
    on: Vec<String>,
    /// Estimated rows and columns, for the broadcast rule.
    rows: f64,
    columns: usize,
}

/// The `FROM ... WHERE` of one `SELECT` and the variables it binds.
#[derive(Debug, Default)]
pub(super) struct Block {
    from: Vec<FromItem>,
    /// The inputs joined so far: table, terms, whether counted, alias.
    inputs: Vec<(String, Vec<IndexTerm>, bool, String)>,
    pub(super) conditions: Vec<String>,
    pub(super) bound: Vec<(String, String)>,
}

impl Block {
    pub(super) fn column(&self, var: &str) -> Option<&str> {
        self.bound
            .iter()
            .find(|(v, _)| v == var)
            .map(|(_, c)| c.as_str())
    }
}

/// Writes the relations of one program's queries.
pub struct Writer<'a> {
    pub(super) dialect: Dialect,
    /// The semijoin reductions, by the name the plan reads them under.
    pub(super) reductions: HashMap<String, &'a Reduction>,
    /// The results computed so far, by query name.
    pub(super) results: HashMap<String, Computed>,
    /// The domains of the current query's variables.
    pub(super) domains: HashMap<String, Domain>,
    aliases: usize,
}

impl<'a> Writer<'a> {
    /// A writer for `dialect` that reads the reduced inputs `reductions`.
    pub fn new(dialect: Dialect, reductions: &'a [Reduction]) -> Writer<'a> {
        Writer {
            dialect,
            reductions: reductions.iter().map(|r| (r.name.clone(), r)).collect(),
            results: HashMap::new(),
            domains: HashMap::new(),
            aliases: 0,
        }
    }

    fn ident(&self, name: &str) -> String {
        self.dialect.ident(name)
    }

    fn alias(&mut self) -> String {
        self.aliases += 1;
        format!("t{}", self.aliases)
    }

    /// Collects the domains of the variables of `expr` (the largest size
    /// among the dimensions each indexes, as the evaluators do).
    pub fn collect_domains(&mut self, expr: &Expr) -> Result<()> {
        match expr {
            Expr::Map { args, .. } => args.iter().try_for_each(|a| self.collect_domains(a)),
            Expr::Agg { body, .. } => self.collect_domains(body),
            Expr::Literal(_) | Expr::Index(_) => Ok(()),
            Expr::Input(input) => {
                let dims: Vec<Domain> = input
                    .tensor
                    .tensor
                    .dims()
                    .iter()
                    .map(|d| Domain {
                        size: d.size,
                        strings: d.dictionary.is_some(),
                    })
                    .collect();
                self.add_domains(&input.indices, &dims)
            }
            Expr::Alias { name, indices } => {
                let dims = self.result(name)?.domains.clone();
                self.add_domains(indices, &dims)
            }
        }
    }

    fn add_domains(&mut self, terms: &[IndexTerm], dims: &[Domain]) -> Result<()> {
        if terms.len() != dims.len() {
            return Err(Error::Invalid(format!(
                "internal: {} indices for {} dimensions",
                terms.len(),
                dims.len()
            )));
        }
        for (term, dim) in terms.iter().zip(dims) {
            if let IndexTerm::Var(v) = term {
                let domain = self.domains.entry(v.clone()).or_insert(*dim);
                domain.size = domain.size.max(dim.size);
                domain.strings |= dim.strings;
            }
        }
        Ok(())
    }

    fn domain(&self, var: &str) -> Result<Domain> {
        self.domains
            .get(var)
            .copied()
            .ok_or_else(|| Error::Invalid(format!("index '{var}' does not index any tensor")))
    }

    pub(super) fn result(&self, name: &str) -> Result<&Computed> {
        self.results
            .get(name)
            .ok_or_else(|| Error::unknown("Query", name, self.results.keys().map(String::as_str)))
    }

    /// The value type of `expr`.
    fn ty(&self, expr: &Expr) -> ValueType {
        expr.value_type(&|name| self.results.get(name).map(|r| r.ty))
    }

    /// The value of `expr` wherever its relation has no row.
    pub fn fill(&self, expr: &Expr) -> Result<Value> {
        Ok(match expr {
            Expr::Input(_) | Expr::Alias { .. } => Value::zero(self.ty(expr)),
            Expr::Literal(v) => *v,
            Expr::Index(_) => Value::Int(0),
            Expr::Map { op, args } => {
                let fills = args
                    .iter()
                    .map(|a| self.fill(a))
                    .collect::<Result<Vec<_>>>()?;
                op.apply(&fills)?
            }
            Expr::Agg { op, indices, body } => {
                let total = self.total(indices)?;
                let fill = self.fill(body)?;
                if total == 0 {
                    Value::zero(op.result_type(fill.value_type()))
                } else {
                    op.repeat(op.lift(fill), total)?
                }
            }
        })
    }

    /// The number of assignments of `indices`.
    fn total(&self, indices: &[String]) -> Result<u128> {
        let mut total: u128 = 1;
        for index in indices {
            total = total
                .checked_mul(u128::from(self.domain(index)?.size))
                .ok_or_else(|| too_large("the aggregated indices have too many coordinates"))?;
        }
        Ok(total)
    }

    /// The relation of `expr`, with its free variables as columns.
    pub fn relation(&mut self, expr: &Expr) -> Result<Relation> {
        if let Expr::Agg { op, indices, body } = expr {
            return self.aggregate(expr, *op, indices, body);
        }
        let mut block = Block::default();
        let value = self.inline(expr, &mut block, false)?;
        let vars = expr.free_indices();
        let columns = self.bound_columns(&block, &vars)?;
        let rows = block_estimate(&block);
        Ok(Relation {
            sql: self.select(&block, &columns, &value.sql, &[]),
            vars,
            fill: self.fill(expr)?,
            ty: value.ty,
            estimate: rows,
        })
    }

    /// The columns of `vars` in `block`, each `column AS var`.
    fn bound_columns(&self, block: &Block, vars: &[String]) -> Result<Vec<String>> {
        vars.iter()
            .map(|v| {
                block
                    .column(v)
                    .map(|c| format!("{c} AS {}", self.ident(v)))
                    .ok_or_else(|| dense(v))
            })
            .collect()
    }

    /// `SELECT columns, value AS v FROM ... WHERE ... [GROUP BY group]`.
    fn select(&self, block: &Block, columns: &[String], value: &str, group: &[String]) -> String {
        let mut sql = String::from("SELECT ");
        if let Some(hint) = self.hint(block) {
            sql.push_str(&hint);
            sql.push(' ');
        }
        let mut items: Vec<String> = columns.to_vec();
        items.push(format!("{value} AS v"));
        sql.push_str(&items.join(", "));
        sql.push_str(&self.tables_clause(block));
        if !group.is_empty() {
            sql.push_str(&format!(" GROUP BY {}", group.join(", ")));
        }
        sql
    }

    /// ` FROM ... JOIN ... WHERE ...` of `block`.
    pub(super) fn tables_clause(&self, block: &Block) -> String {
        let mut sql = String::new();
        for (n, item) in block.from.iter().enumerate() {
            let source = if item.source == item.alias {
                item.source.clone()
            } else {
                format!("{} {}", item.source, item.alias)
            };
            if n == 0 {
                sql.push_str(&format!(" FROM {source}"));
                continue;
            }
            match (item.join, item.on.is_empty()) {
                (Join::Inner, true) => sql.push_str(&format!(" CROSS JOIN {source}")),
                (Join::Inner, false) => {
                    sql.push_str(&format!(" JOIN {source} ON {}", item.on.join(" AND ")))
                }
                (Join::Left, true) => sql.push_str(&format!(" LEFT JOIN {source} ON TRUE")),
                (Join::Left, false) => {
                    sql.push_str(&format!(" LEFT JOIN {source} ON {}", item.on.join(" AND ")))
                }
            }
        }
        let mut conditions = block.conditions.clone();
        if let Some(first) = block.from.first() {
            conditions.splice(0..0, first.on.iter().cloned());
        }
        if !conditions.is_empty() {
            sql.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
        }
        sql
    }

    /// Spark's `/*+ BROADCAST(...) */` for the block's small factors: a
    /// factor of `f` floats (entries × columns) is broadcast when sending
    /// it to every site costs less than shuffling the others, `f · (s − 1)
    /// < Σ others` (TRA §5.3, `s` = [`SPARK_SITES`]), and it has at most
    /// [`BROADCAST_MAX_ENTRIES`] entries.
    fn hint(&self, block: &Block) -> Option<String> {
        if self.dialect != Dialect::Spark || block.from.len() < 2 {
            return None;
        }
        let floats: Vec<f64> = block
            .from
            .iter()
            .map(|item| {
                if item.rows.is_nan() {
                    f64::INFINITY
                } else {
                    item.rows * item.columns as f64
                }
            })
            .collect();
        let total: f64 = floats.iter().sum();
        let small: Vec<&str> = block
            .from
            .iter()
            .zip(&floats)
            .filter(|(item, f)| {
                item.rows <= BROADCAST_MAX_ENTRIES && **f * (SPARK_SITES - 1.0) < total - **f
            })
            .map(|(item, _)| item.alias.as_str())
            .collect();
        (!small.is_empty()).then(|| format!("/*+ BROADCAST({}) */", small.join(", ")))
    }

    /// The aggregate `op(indices) body` as a grouped `SELECT`.
    fn aggregate(
        &mut self,
        expr: &Expr,
        op: AggOp,
        indices: &[String],
        body: &Expr,
    ) -> Result<Relation> {
        let mut block = Block::default();
        let value = self.inline(body, &mut block, op == AggOp::Sum)?;
        let vars = expr.free_indices();
        let columns = self.bound_columns(&block, &vars)?;
        let group: Vec<String> = vars
            .iter()
            .filter_map(|v| block.column(v).map(str::to_string))
            .collect();
        let body_vars = body.free_indices();
        let mut copies: u128 = 1;
        for index in indices {
            if !body_vars.contains(index) {
                copies = copies
                    .checked_mul(u128::from(self.domain(index)?.size))
                    .ok_or_else(|| too_large("the aggregated indices have too many coordinates"))?;
            } else if block.column(index).is_none() {
                return Err(dense(index));
            }
        }
        let total = self.total(indices)?;
        let fill = self.fill(body)?;
        let lifted = op.lift(fill);
        let ty = op.result_type(value.ty);
        let int = |n: u128| -> Result<String> {
            i64::try_from(n)
                .map(|n| n.to_string())
                .map_err(|_| too_large("an aggregate over more than 2^63 assignments"))
        };
        // How many assignments of each group have no row; `None` when
        // there are more than 2^63 (some always have none).
        let missing = match (i64::try_from(total), copies) {
            (Err(_), _) => None,
            (Ok(total), 1) => Some(format!("({total} - COUNT(*))")),
            (Ok(total), copies) => Some(format!("({total} - COUNT(*) * {})", int(copies)?)),
        };
        let x = &value.sql;
        let times = |sum: String| -> Result<String> {
            Ok(if copies == 1 {
                sum
            } else {
                format!("{sum} * {}", int(copies)?)
            })
        };
        let mut sql = match op {
            AggOp::Sum | AggOp::Count => {
                let term = match (op, value.ty) {
                    (AggOp::Count, _) => format!("CASE WHEN {} THEN 1 ELSE 0 END", truth(&value)),
                    (_, ValueType::Boolean) => format!("CAST({x} AS BIGINT)"),
                    _ => x.clone(),
                };
                let mut sum = times(format!("SUM({term})"))?;
                if !lifted.is_zero() {
                    let missing = missing.ok_or_else(|| {
                        too_large("a sum of a non-zero fill over more than 2^63 assignments")
                    })?;
                    sum = format!(
                        "{sum} + {} * {missing}",
                        self.dialect.literal(lifted.cast(ty))
                    );
                }
                match ty {
                    ValueType::Int64 => self.dialect.integer_sum(sum),
                    ValueType::Int128 => format!("CAST({sum} AS {})", self.dialect.hugeint()),
                    _ => sum,
                }
            }
            AggOp::Any => {
                let any = format!("bool_or({})", truth(&value));
                match (lifted.is_zero(), missing) {
                    (true, _) => any,
                    (false, None) => "TRUE".to_string(),
                    (false, Some(missing)) => format!("({any} OR {missing} > 0)"),
                }
            }
            AggOp::Max | AggOp::Min => {
                let name = if op == AggOp::Max { "MAX" } else { "MIN" };
                let pick = if op == AggOp::Max {
                    "greatest"
                } else {
                    "least"
                };
                let fill = self.dialect.literal(lifted.cast(ty));
                match missing {
                    Some(missing) => format!(
                        "CASE WHEN {missing} > 0 THEN {pick}({name}({x}), {fill}) ELSE {name}({x}) END"
                    ),
                    None => format!("{pick}({name}({x}), {fill})"),
                }
            }
        };
        let agg_fill = self.fill(expr)?;
        if vars.is_empty() {
            // One row even without any: the fill, as the evaluators give.
            sql = format!("COALESCE({sql}, {})", self.dialect.literal(agg_fill));
        }
        let rows = block_estimate(&block);
        Ok(Relation {
            sql: self.select(&block, &columns, &sql, &group),
            vars,
            fill: agg_fill,
            ty,
            estimate: rows,
        })
    }

    /// Adds what `expr` needs to `block` and returns its value on the
    /// block's rows. The rows keep every assignment where `expr` may differ
    /// from its fill among those the block already lists. `raw_bags`: bags
    /// may join with their rows repeated (a factor of a `SUM`).
    pub(super) fn inline(
        &mut self,
        expr: &Expr,
        block: &mut Block,
        raw_bags: bool,
    ) -> Result<Scalar> {
        match expr {
            Expr::Literal(v) => Ok(Scalar::value(self.dialect.literal(*v), v.value_type())),
            Expr::Index(var) => {
                let column = block.column(var).ok_or_else(|| dense(var))?.to_string();
                Ok(Scalar {
                    sql: column,
                    ty: ValueType::Int64,
                    text: self.domain(var)?.strings,
                })
            }
            Expr::Input(input) => self.join_input(input, block, Join::Inner, raw_bags),
            Expr::Alias { name, indices } => self.join_alias(name, indices, block, Join::Inner),
            Expr::Agg { .. } => {
                let relation = self.relation(expr)?;
                self.join_relation(&relation, block, Join::Inner)
            }
            Expr::Map { op, args } => self.inline_map(*op, args, expr, block, raw_bags),
        }
    }

    fn inline_map(
        &mut self,
        op: ScalarOp,
        args: &[Expr],
        expr: &Expr,
        block: &mut Block,
        raw_bags: bool,
    ) -> Result<Scalar> {
        let fills = args
            .iter()
            .map(|a| self.fill(a))
            .collect::<Result<Vec<_>>>()?;
        let annihilating: Vec<bool> = match op.algebra().annihilator {
            Some(a) => (0..args.len())
                .map(|n| (n == 0 || !a.only_first) && fills[n].same(a.value))
                .collect(),
            None => vec![false; args.len()],
        };
        let mut values: Vec<Option<Scalar>> = vec![None; args.len()];
        let all_bound = expr
            .free_indices()
            .iter()
            .all(|v| block.column(v).is_some());
        if annihilating.iter().any(|a| *a) {
            // The support is within the join of the annihilating factors,
            // joined in an order where each shares an index with those
            // before it when one does (no cross join an engine that keeps
            // the written order would run, as Spark without statistics).
            let raw = raw_bags && op == ScalarOp::Mul;
            let mut pending: Vec<usize> = (0..args.len())
                .filter(|&n| annihilating[n] && has_table(&args[n]))
                .collect();
            while !pending.is_empty() {
                let connected = pending.iter().position(|&n| {
                    args[n]
                        .free_indices()
                        .iter()
                        .any(|v| block.column(v).is_some())
                });
                let n = pending.remove(connected.unwrap_or(0));
                values[n] = Some(self.inline(&args[n], block, raw)?);
            }
        } else if !all_bound {
            let tables: Vec<usize> = (0..args.len()).filter(|&n| has_table(&args[n])).collect();
            let constant = |n: usize| args[n].free_indices().is_empty();
            match tables[..] {
                [one] if (0..args.len()).all(|n| n == one || constant(n)) => {
                    values[one] = Some(self.inline(&args[one], block, false)?);
                }
                _ => {
                    let relation = self.union(op, args, expr)?;
                    return self.join_relation(&relation, block, Join::Inner);
                }
            }
        }
        // Everything else is looked up on the rows.
        for (n, arg) in args.iter().enumerate() {
            if values[n].is_some() {
                continue;
            }
            values[n] = Some(if has_table(arg) {
                let relation = self.relation(arg)?;
                self.join_relation(&relation, block, Join::Left)?
            } else {
                self.inline(arg, block, false)?
            });
        }
        let values: Vec<Scalar> = values.into_iter().flatten().collect();
        self.apply(op, &values)
    }

    /// `op` over several relations: their full outer join on the same
    /// variables.
    fn union(&mut self, op: ScalarOp, args: &[Expr], expr: &Expr) -> Result<Relation> {
        let vars = expr.free_indices();
        let mut parts: Vec<(String, Relation)> = Vec::new();
        let mut values: Vec<Scalar> = Vec::new();
        for arg in args {
            if !has_table(arg) {
                if !arg.free_indices().is_empty() {
                    return Err(Error::NotSupported(format!(
                        "SQL for {expr}: {arg} has a value at every coordinate of its indices"
                    )));
                }
                let mut empty = Block::default();
                values.push(self.inline(arg, &mut empty, false)?);
                continue;
            }
            let relation = self.relation(arg)?;
            let mut own = relation.vars.clone();
            own.sort();
            let mut all = vars.clone();
            all.sort();
            if own != all {
                return Err(Error::NotSupported(format!(
                    "SQL for {expr}: its arguments have different indices, so its entries \
                     would be every coordinate of the indices one of them lacks"
                )));
            }
            let alias = self.alias();
            values.push(Scalar::value(
                format!(
                    "COALESCE({alias}.v, {})",
                    self.dialect.literal(relation.fill)
                ),
                relation.ty,
            ));
            parts.push((alias, relation));
        }
        let value = self.apply(op, &values)?;
        let key = |var: &str, parts: &[(String, Relation)]| -> String {
            let columns: Vec<String> = parts
                .iter()
                .map(|(alias, _)| format!("{alias}.{}", self.ident(var)))
                .collect();
            if columns.len() == 1 {
                columns[0].clone()
            } else {
                format!("COALESCE({})", columns.join(", "))
            }
        };
        let mut sql = String::from("SELECT ");
        let mut items: Vec<String> = vars
            .iter()
            .map(|v| format!("{} AS {}", key(v, &parts), self.ident(v)))
            .collect();
        items.push(format!("{} AS v", value.sql));
        sql.push_str(&items.join(", "));
        for (n, (alias, relation)) in parts.iter().enumerate() {
            if n == 0 {
                sql.push_str(&format!(" FROM ({}) {alias}", relation.sql));
                continue;
            }
            let on: Vec<String> = vars
                .iter()
                .map(|v| format!("{} = {alias}.{}", key(v, &parts[..n]), self.ident(v)))
                .collect();
            let on = if on.is_empty() {
                "TRUE".to_string()
            } else {
                on.join(" AND ")
            };
            sql.push_str(&format!(
                " FULL OUTER JOIN ({}) {alias} ON {on}",
                relation.sql
            ));
        }
        Ok(Relation {
            sql,
            vars,
            fill: self.fill(expr)?,
            ty: value.ty,
            estimate: parts.iter().map(|(_, r)| r.estimate).sum(),
        })
    }

    /// Joins a sub-query's relation to `block`; its value, with the fill
    /// where a `LEFT JOIN` finds no row.
    fn join_relation(
        &mut self,
        relation: &Relation,
        block: &mut Block,
        join: Join,
    ) -> Result<Scalar> {
        let alias = self.alias();
        let mut on = Vec::new();
        for var in &relation.vars {
            let column = format!("{alias}.{}", self.ident(var));
            match block.column(var) {
                Some(bound) => on.push(format!("{bound} = {column}")),
                None if join == Join::Left => return Err(dense(var)),
                None => block.bound.push((var.clone(), column)),
            }
        }
        block.from.push(FromItem {
            source: format!("({})", relation.sql),
            alias: alias.clone(),
            join,
            on,
            rows: relation.estimate,
            columns: relation.vars.len() + 1,
        });
        let value = format!("{alias}.v");
        Ok(Scalar::value(
            match join {
                Join::Inner => value,
                Join::Left => format!("COALESCE({value}, {})", self.dialect.literal(relation.fill)),
            },
            relation.ty,
        ))
    }

    /// Joins an earlier result.
    pub(super) fn join_alias(
        &mut self,
        name: &str,
        terms: &[IndexTerm],
        block: &mut Block,
        join: Join,
    ) -> Result<Scalar> {
        let result = self.result(name)?.clone();
        let alias = self.alias();
        let mut on = Vec::new();
        for ((term, column), domain) in terms.iter().zip(&result.columns).zip(&result.domains) {
            let column = format!("{alias}.{}", self.ident(column));
            self.term(term, column, *domain, None, block, join, &mut on)?;
        }
        block.from.push(FromItem {
            source: result.cte.clone(),
            alias: alias.clone(),
            join,
            on,
            rows: result.estimate,
            columns: result.columns.len() + 1,
        });
        let value = format!("{alias}.{}", self.ident(&result.value));
        Ok(Scalar::value(
            match join {
                Join::Inner => value,
                Join::Left => format!(
                    "COALESCE({value}, {})",
                    self.dialect.literal(Value::zero(result.ty))
                ),
            },
            result.ty,
        ))
    }

    /// Joins a stored input (a user table, or the semi-join of a reduced
    /// one).
    fn join_input(
        &mut self,
        input: &Input,
        block: &mut Block,
        join: Join,
        raw_bags: bool,
    ) -> Result<Scalar> {
        let tensor = &input.tensor.tensor;
        let (source, bag) = match self.reductions.get(&input.tensor.name) {
            Some(reduction) => (
                self.ident(&reduction.name),
                reduction.target.tensor.tensor.is_bag(),
            ),
            None if input.tensor.name.starts_with('#') => {
                return Err(Error::NotSupported(format!(
                    "SQL for an input '{}' that is not a table",
                    input.tensor.name
                )));
            }
            None => (self.ident(&input.tensor.name), tensor.is_bag()),
        };
        let dims = tensor.dims();
        let counted = bag && !raw_bags && input.annotation == Annotation::Multiplicity;
        let dialect = self.dialect;
        let value = |alias: &str| -> Result<String> {
            Ok(match (input.annotation, input.column_name()) {
                (Annotation::Column(_), Some(name)) => format!("{alias}.{}", dialect.ident(name)),
                (Annotation::Column(c), None) => {
                    return Err(Error::Invalid(format!(
                        "internal: value column {c} of '{}'",
                        input.tensor.name
                    )));
                }
                (Annotation::Multiplicity, _) if counted => format!("{alias}.v"),
                (Annotation::Multiplicity, _) => "1".to_string(),
            })
        };
        let ty = input.value_type();
        // The same rows joined again (another column of one table): the
        // same alias.
        if join == Join::Inner
            && let Some((_, _, _, alias)) = block.inputs.iter().find(|(name, terms, c, _)| {
                *name == input.tensor.name && *terms == input.indices && *c == counted
            })
        {
            return Ok(Scalar::value(value(alias)?, ty));
        }
        let alias = self.alias();
        let source = if counted {
            let columns: Vec<String> = dims.iter().map(|d| self.ident(&d.name)).collect();
            format!(
                "(SELECT {}, COUNT(*) AS v FROM {source} GROUP BY {})",
                columns.join(", "),
                columns.join(", ")
            )
        } else {
            source
        };
        let mut on = Vec::new();
        for (term, dim) in input.indices.iter().zip(dims) {
            let column = format!("{alias}.{}", self.ident(&dim.name));
            let domain = Domain {
                size: dim.size,
                strings: dim.dictionary.is_some(),
            };
            let strings = dim.dictionary.as_deref();
            self.term(term, column, domain, strings, block, join, &mut on)?;
        }
        let value = value(&alias)?;
        if join == Join::Inner {
            block.inputs.push((
                input.tensor.name.clone(),
                input.indices.clone(),
                counted,
                alias.clone(),
            ));
        }
        block.from.push(FromItem {
            source,
            alias,
            join,
            on,
            rows: tensor.nnz() as f64,
            columns: dims.len() + usize::from(!bag),
        });
        Ok(Scalar::value(
            match join {
                Join::Inner => value,
                Join::Left => format!(
                    "COALESCE({value}, {})",
                    self.dialect.literal(Value::zero(ty))
                ),
            },
            ty,
        ))
    }

    /// The condition or binding one term of a joined table adds.
    #[allow(clippy::too_many_arguments)]
    fn term(
        &self,
        term: &IndexTerm,
        column: String,
        domain: Domain,
        strings: Option<&crate::storage::Dictionary>,
        block: &mut Block,
        join: Join,
        on: &mut Vec<String>,
    ) -> Result<()> {
        match term {
            IndexTerm::Const(c) => {
                let constant = match (strings, domain.strings) {
                    (Some(dictionary), _) => match dictionary.string(*c) {
                        Some(s) => self.dialect.string(s),
                        None => {
                            return Err(Error::Invalid(format!(
                                "internal: coordinate {c} is not in the dictionary of {column}"
                            )));
                        }
                    },
                    (None, true) => {
                        return Err(Error::NotSupported(format!(
                            "SQL for a string coordinate {c} of {column}"
                        )));
                    }
                    (None, false) => c.to_string(),
                };
                on.push(format!("{column} = {constant}"));
            }
            IndexTerm::Var(var) => match block.column(var) {
                Some(bound) => on.push(format!("{bound} = {column}")),
                None if join == Join::Left => return Err(dense(var)),
                None => block.bound.push((var.clone(), column)),
            },
        }
        Ok(())
    }

    /// `op` applied to SQL values, with einsql's type rules.
    fn apply(&self, op: ScalarOp, args: &[Scalar]) -> Result<Scalar> {
        use ScalarOp::*;
        let types: Vec<ValueType> = args.iter().map(|a| a.ty).collect();
        let ty = op.result_type(&types);
        let comparison = matches!(op, Eq | Ne | Lt | Le | Gt | Ge);
        if args.iter().any(|a| a.text) && !(comparison && args.iter().all(|a| a.text)) {
            return Err(Error::NotSupported(format!(
                "SQL for {op:?} of a string key's coordinate (only comparisons of two string keys)"
            )));
        }
        let number = |a: &Scalar| -> String {
            if a.ty == ValueType::Boolean {
                format!("CAST({} AS BIGINT)", a.sql)
            } else {
                a.sql.clone()
            }
        };
        let double = |a: &Scalar| -> String {
            if a.ty == ValueType::Float64 {
                a.sql.clone()
            } else {
                format!("CAST({} AS DOUBLE)", number(a))
            }
        };
        let as_type = |a: &Scalar| -> String {
            match (a.ty, ty) {
                (from, to) if from == to => a.sql.clone(),
                (_, ValueType::Float64) => double(a),
                (_, ValueType::Int64) => number(a),
                (_, ValueType::Int128) => {
                    format!("CAST({} AS {})", number(a), self.dialect.hugeint())
                }
                (_, ValueType::Boolean) => truth(a),
            }
        };
        let infix = |symbol: &str, f: &dyn Fn(&Scalar) -> String| -> String {
            let parts: Vec<String> = args.iter().map(f).collect();
            format!("({})", parts.join(&format!(" {symbol} ")))
        };
        let sql = match op {
            Mul => {
                // Factors of 1 (a keyed table's row count) drop out.
                let factors: Vec<String> =
                    args.iter().filter(|a| a.sql != "1").map(number).collect();
                match &factors[..] {
                    [] => "1".to_string(),
                    [one] => one.clone(),
                    _ => format!("({})", factors.join(" * ")),
                }
            }
            Add | Sub => infix(op.symbol().unwrap_or("+"), &number),
            Div => {
                // einsql's 0 / b is 0 for every b, 0 included.
                let a = double(&args[0]);
                format!(
                    "CASE WHEN {a} = 0 THEN {} ELSE ({a} / {}) END",
                    self.dialect.literal(Value::Float(0.0)),
                    number(&args[1])
                )
            }
            Neg => format!("(- {})", number(&args[0])),
            Eq | Ne | Lt | Le | Gt | Ge => {
                let mixed = args.iter().any(|a| a.ty != args[0].ty);
                let f: &dyn Fn(&Scalar) -> String =
                    if mixed { &number } else { &|a| a.sql.clone() };
                infix(op.symbol().unwrap_or("="), f)
            }
            And => infix("AND", &truth),
            Or => infix("OR", &truth),
            Exp | Ln | Log | Sqrt => format!("{}({})", function(op), double(&args[0])),
            Abs => format!("abs({})", number(&args[0])),
            Floor => format!("floor({})", number(&args[0])),
            Mod => format!("({} % {})", number(&args[0]), number(&args[1])),
            Power => format!("power({}, {})", double(&args[0]), double(&args[1])),
            Greatest | Least => {
                let parts: Vec<String> = args.iter().map(as_type).collect();
                format!("{}({})", function(op), parts.join(", "))
            }
            Sigmoid => format!(
                "(CAST(1 AS DOUBLE) / (CAST(1 AS DOUBLE) + exp(- {})))",
                double(&args[0])
            ),
            Hugeint => format!("CAST({} AS {})", number(&args[0]), self.dialect.hugeint()),
            Relu => format!(
                "greatest({}, {})",
                number(&args[0]),
                self.dialect.literal(Value::zero(ty))
            ),
            IfElse => format!(
                "CASE WHEN {} THEN {} ELSE {} END",
                truth(&args[0]),
                as_type(&args[1]),
                as_type(&args[2])
            ),
        };
        Ok(Scalar::value(sql, ty))
    }
}

/// The SQL function of a unary or variadic operator written as a call.
fn function(op: ScalarOp) -> &'static str {
    match op {
        ScalarOp::Exp => "exp",
        ScalarOp::Ln => "ln",
        ScalarOp::Log => "log10",
        ScalarOp::Sqrt => "sqrt",
        ScalarOp::Greatest => "greatest",
        _ => "least",
    }
}

/// `a` as a boolean: itself, or whether it is non-zero.
fn truth(a: &Scalar) -> String {
    if a.ty == ValueType::Boolean {
        a.sql.clone()
    } else {
        format!("({} <> 0)", a.sql)
    }
}

/// Whether `expr` reads a table (an input, an earlier result or an
/// aggregate of them): it then has a relation of its own.
fn has_table(expr: &Expr) -> bool {
    match expr {
        Expr::Input(_) | Expr::Alias { .. } => true,
        Expr::Agg { .. } => true,
        Expr::Map { args, .. } => args.iter().any(has_table),
        Expr::Literal(_) | Expr::Index(_) => false,
    }
}

/// The estimated rows of a block: its largest factor's (NaN if unknown).
fn block_estimate(block: &Block) -> f64 {
    block.from.iter().map(|f| f.rows).fold(f64::NAN, f64::max)
}

fn dense(var: &str) -> Error {
    Error::NotSupported(format!(
        "SQL for an expression with a value at every coordinate of index '{var}' (no table \
         lists them)"
    ))
}

fn too_large(what: &str) -> Error {
    Error::NotSupported(format!("SQL for {what}"))
}
