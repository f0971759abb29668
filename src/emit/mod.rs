//! Optimized plans as SQL for other engines: DuckDB, DataFusion and Spark.
//!
//! einsql is embedded and single-machine; its logical plans (variable
//! elimination, pushed-down aggregates, semijoin reductions) are what a
//! distributed engine's binary-join planner lacks. [`emit_sql`] writes the
//! logical plan of an [`Optimized`] program as one SQL statement:
//!
//! - one CTE per semijoin-reduced input (`"#s1"`): the original table
//!   restricted with `IN (SELECT ...)` semi-joins to the coordinates its
//!   filters store (the reduced tensor is not a user table);
//! - one CTE per query of the plan, in order (the steps `"#e1"`, ..., then
//!   the program's own queries): a join of its factors with the pushed
//!   aggregate and its `GROUP BY` (see [`relation`] for how each IR
//!   expression becomes SQL, and which ones are refused because the SQL
//!   would not be exact);
//! - the final `SELECT` of the last query's entries: its index columns
//!   and `v`, the rows whose value is not 0 (a scalar: its one row), as
//!   einsql stores the result.
//!
//! Tables are referenced by name with their columns as einsql writes them
//! to Parquet with `COPY t TO 'file.parquet'` (string keys as strings, a
//! bag's rows repeated by multiplicity), so the SQL runs on the exported
//! files registered under the tables' names (`scripts/run-on`).
//!
//! The statement-level entries: [`emit_program`] takes a bound IR program
//! and optimizer options (what the einsum front-end produces),
//! [`emit_select`] a lowered SQL `SELECT` as an [`Assembly`] (it adds the
//! assembly of the result's rows); `Database::explain_sql` emits one
//! statement's plan against a database's tables.

pub mod dialect;
pub mod relation;
pub mod select;

use hashbrown::HashSet;

pub use dialect::Dialect;
pub use select::{Assembly, Item, OrderKey, OrderSource, Rows, emit_select};

use crate::error::{Error, Result};
use crate::ir::{IndexTerm, Program};
use crate::optimizer::{KeyConstant, Optimized, OptimizerOptions, Phase, Reduction};
use crate::storage::ValueType;
use relation::{Computed, DENSE_LIMIT, Domain, Writer};

/// The SQL of an optimized program in `dialect`: its CTEs, then the
/// `SELECT` of the last query's entries.
///
/// Errors: [`Error::NotSupported`] for plans whose SQL would not be exact
/// (see [`relation`]).
pub fn emit_sql(optimized: &Optimized, dialect: Dialect) -> Result<String> {
    let (ctes, writer) = plan_ctes(optimized, dialect)?;
    let last = optimized
        .logical
        .queries
        .last()
        .ok_or_else(|| Error::Invalid("an empty program has no SQL".to_string()))?;
    let result = writer.result(&last.name)?;
    let mut columns: Vec<String> = result.columns.iter().map(|c| dialect.ident(c)).collect();
    columns.push("v".to_string());
    let mut sql = format!("SELECT {} FROM {}", columns.join(", "), result.cte);
    if !result.columns.is_empty() {
        sql.push_str(&format!(" WHERE {}", nonzero("v", result.ty)));
    }
    Ok(with(&ctes, &sql))
}

/// Optimizes `program` with `options` and writes its SQL ([`emit_sql`]):
/// what `EXPLAIN (FORMAT sql, DIALECT d) <einsum statement>` shows.
///
/// Errors: the optimizer's, and [`emit_sql`]'s.
pub fn emit_program(
    program: &Program,
    options: &OptimizerOptions,
    dialect: Dialect,
) -> Result<String> {
    let optimized = crate::optimizer::optimize(program, &without_symmetry(options))?;
    emit_sql(&optimized, dialect)
}

/// `options` with the `symmetry` phase off: its orientations by degree
/// are not written as SQL, so emitted plans read the symmetric inputs
/// whole.
pub(crate) fn without_symmetry(options: &OptimizerOptions) -> OptimizerOptions {
    OptimizerOptions {
        disabled: options.disabled.with(Phase::Symmetry),
        ..*options
    }
}

/// `WITH ctes SELECT ...` on separate lines (no `WITH` without CTEs).
fn with(ctes: &[String], select: &str) -> String {
    if ctes.is_empty() {
        return select.to_string();
    }
    format!("WITH\n{}\n{select}", ctes.join(",\n"))
}

/// `value` is not the fill 0.
fn nonzero(value: &str, ty: ValueType) -> String {
    match ty {
        ValueType::Boolean => value.to_string(),
        ValueType::Int64 | ValueType::Int128 | ValueType::Float64 => format!("{value} <> 0"),
    }
}

/// The CTEs of the reductions and of every query of the logical plan, and
/// the writer that knows their results.
fn plan_ctes(optimized: &Optimized, dialect: Dialect) -> Result<(Vec<String>, Writer<'_>)> {
    let mut writer = Writer::new(dialect, &optimized.reductions);
    let tables = table_names(optimized);
    let mut ctes = Vec::new();
    let mut taken: HashSet<String> = tables.clone();
    for reduction in &optimized.reductions {
        taken.insert(reduction.name.to_lowercase());
        ctes.push(format!(
            "{} AS ({})",
            dialect.ident(&reduction.name),
            semi_join(reduction, dialect)?
        ));
    }
    for (query, estimate) in optimized.logical.queries.iter().zip(&optimized.estimates) {
        writer.domains.clear();
        writer.collect_domains(&query.expr)?;
        if let Some(v) = query.indices.iter().find(|i| i.eq_ignore_ascii_case("v")) {
            return Err(Error::NotSupported(format!(
                "SQL for a result with an index called '{v}' (the value column is v)"
            )));
        }
        let relation = writer.relation(&query.expr)?;
        let domains =
            query
                .indices
                .iter()
                .map(|i| {
                    writer.domains.get(i).copied().ok_or_else(|| {
                        Error::Invalid(format!("index '{i}' does not index any tensor"))
                    })
                })
                .collect::<Result<Vec<Domain>>>()?;
        let columns: Vec<String> = query.indices.iter().map(|i| dialect.ident(i)).collect();
        let body = if query.indices.is_empty() {
            if matches!(query.expr, crate::ir::Expr::Agg { .. }) {
                relation.sql
            } else {
                // At most one row: the value, else the fill.
                format!(
                    "SELECT COALESCE(MAX(v), {}) AS v FROM ({}) r",
                    dialect.literal(relation.fill),
                    relation.sql
                )
            }
        } else if !relation.fill.is_zero() {
            dense(&relation, &query.indices, &domains, dialect)?
        } else if relation.vars == query.indices {
            relation.sql
        } else {
            format!("SELECT {}, v FROM ({}) r", columns.join(", "), relation.sql)
        };
        let mut name = query.name.clone();
        while taken.contains(&name.to_lowercase()) {
            name.push_str("#out");
        }
        taken.insert(name.to_lowercase());
        let cte = dialect.ident(&name);
        ctes.push(format!("{cte} AS ({body})"));
        writer.results.insert(
            query.name.clone(),
            Computed {
                cte,
                columns: query.indices.clone(),
                value: "v".to_string(),
                domains,
                ty: relation.ty,
                estimate: *estimate,
            },
        );
    }
    Ok((ctes, writer))
}

/// The lower-cased names of the tables a plan reads.
fn table_names(optimized: &Optimized) -> HashSet<String> {
    let mut names = HashSet::new();
    for query in &optimized.logical.queries {
        for input in query.expr.inputs() {
            names.insert(input.tensor.name.to_lowercase());
        }
    }
    for reduction in &optimized.reductions {
        names.insert(reduction.target.tensor.name.to_lowercase());
        for filter in reduction.filter_columns() {
            names.insert(filter.table.to_lowercase());
        }
    }
    names
}

/// The reduced input: the target table's rows with its constants whose
/// filtered columns hold coordinates every filter on them stores.
fn semi_join(reduction: &Reduction, dialect: Dialect) -> Result<String> {
    let target = &reduction.target;
    let tensor = &target.tensor.tensor;
    let filters = reduction.filter_columns();
    let mut conditions = Vec::new();
    for (term, dim) in target.indices.iter().zip(tensor.dims()) {
        let column = dialect.ident(&dim.name);
        match term {
            IndexTerm::Const(c) => {
                conditions.push(format!("{column} = {}", constant(dim, *c, dialect)?))
            }
            IndexTerm::Var(var) => {
                for filter in filters.iter().filter(|f| f.variable == *var) {
                    let mut sub = format!(
                        "SELECT {} FROM {}",
                        dialect.ident(&filter.column),
                        dialect.ident(&filter.table)
                    );
                    let selected: Vec<String> = filter
                        .constants
                        .iter()
                        .map(|(column, key)| {
                            let key = match key {
                                KeyConstant::Coordinate(c) => c.to_string(),
                                KeyConstant::String(s) => dialect.string(s),
                            };
                            format!("{} = {key}", dialect.ident(column))
                        })
                        .collect();
                    if !selected.is_empty() {
                        sub.push_str(&format!(" WHERE {}", selected.join(" AND ")));
                    }
                    conditions.push(format!("{column} IN ({sub})"));
                }
            }
        }
    }
    let mut sql = format!("SELECT * FROM {}", dialect.ident(&target.tensor.name));
    if !conditions.is_empty() {
        sql.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
    }
    Ok(sql)
}

/// A coordinate of `dim` as a SQL constant (its string for a string key).
fn constant(dim: &crate::storage::Dimension, c: i64, dialect: Dialect) -> Result<String> {
    match &dim.dictionary {
        Some(dictionary) => dictionary
            .string(c)
            .map(|s| dialect.string(s))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "internal: coordinate {c} is not in the dictionary of {}",
                    dim.name
                ))
            }),
        None => Ok(c.to_string()),
    }
}

/// Every coordinate of a result whose fill is not 0: the ranges of its
/// (integer) indices, with the relation's value or the fill.
fn dense(
    relation: &relation::Relation,
    indices: &[String],
    domains: &[Domain],
    dialect: Dialect,
) -> Result<String> {
    let mut count: u128 = 1;
    for (index, domain) in indices.iter().zip(domains) {
        if domain.strings {
            return Err(Error::NotSupported(format!(
                "SQL for a result with a value ({}) at every coordinate of the string key '{index}'",
                relation.fill
            )));
        }
        count = count.saturating_mul(u128::from(domain.size));
    }
    if count > DENSE_LIMIT {
        return Err(Error::NotSupported(format!(
            "SQL for a result with a value ({}) at every one of its {count} coordinates \
             (at most {DENSE_LIMIT})",
            relation.fill
        )));
    }
    let mut sql = String::from("SELECT ");
    let columns: Vec<String> = indices
        .iter()
        .enumerate()
        .map(|(n, i)| format!("d{n}.{} AS {}", dialect.ident(i), dialect.ident(i)))
        .collect();
    sql.push_str(&columns.join(", "));
    sql.push_str(&format!(
        ", COALESCE(r.v, {}) AS v",
        dialect.literal(relation.fill)
    ));
    for (n, (index, domain)) in indices.iter().zip(domains).enumerate() {
        let range = dialect.range(index, domain.size);
        if n == 0 {
            sql.push_str(&format!(" FROM {range} d{n}"));
        } else {
            sql.push_str(&format!(" CROSS JOIN {range} d{n}"));
        }
    }
    let on: Vec<String> = indices
        .iter()
        .enumerate()
        .map(|(n, i)| format!("r.{} = d{n}.{}", dialect.ident(i), dialect.ident(i)))
        .collect();
    sql.push_str(&format!(
        " LEFT JOIN ({}) r ON {}",
        relation.sql,
        on.join(" AND ")
    ));
    Ok(sql)
}
