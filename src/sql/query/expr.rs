//! SQL scalar expressions and aggregates lowered to IR expressions.
//!
//! Columns become IR terms through the [`Scope`]: a key column is the
//! coordinate of its index variable (`coord(i)`, or its constant), a value
//! column reads the table's value (`A.v[i,j]`). Arithmetic, comparisons,
//! `AND`/`OR`/`NOT`, `CASE` (as `ifelse`), `BETWEEN`, `IN (...)` and the
//! scalar functions map to IR operators. String keys compare through their
//! sorted dictionaries, so `name < 'm'` becomes a comparison of coordinates.
//!
//! An aggregate ranges over the rows of the join: its body is the product
//! of the row counts of the tables (a bag's multiplicity, 1 for a keyed
//! table's row), the `WHERE` filters, and its argument, summed over every
//! variable that is not grouped. A table's row count is left out when the
//! argument is already 0 wherever the table has no row (`SUM(a.v * b.w)`
//! needs neither), which gives the same IR as tensor index notation.
//! `MIN`/`MAX` see only existing rows (`ifelse(rows, x, -inf)`), `AVG` is
//! an exact sum divided by the row count, and `COUNT(DISTINCT k)` of a key
//! counts the coordinates with a row.

use std::cmp::Ordering;
use std::sync::Arc;

use sqlparser::ast::{
    BinaryOperator, CaseWhen, CastKind, CeilFloorKind, DataType, DateTimeField, DuplicateTreatment,
    Expr as SqlExpr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator,
};

use super::scope::{Column, Scope};
use crate::bound::Literal;
use crate::error::{Error, Result};
use crate::ir::{AggOp, Annotation, Expr, IndexTerm, ScalarOp, Value};
use crate::storage::{Dictionary, ValueType};

/// The SQL type of a lowered expression.
#[derive(Clone, Debug)]
pub enum SqlType {
    /// A boolean, integer or float value.
    Value(ValueType),
    /// A string key: the expression is its coordinate in the dictionary.
    Key(Arc<Dictionary>),
    /// A string constant, usable only in comparisons with string keys.
    Text(String),
}

impl SqlType {
    /// The SQL name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            SqlType::Value(ty) => ty.sql_name(),
            SqlType::Key(_) | SqlType::Text(_) => "VARCHAR",
        }
    }
}

/// An IR expression with its SQL type.
#[derive(Clone, Debug)]
pub struct Typed {
    /// The expression.
    pub expr: Expr,
    /// Its type.
    pub ty: SqlType,
}

impl Typed {
    fn value(expr: Expr) -> Typed {
        let ty = expr.value_type(&|_| None);
        Typed {
            expr,
            ty: SqlType::Value(ty),
        }
    }

    fn literal(value: Value) -> Typed {
        Typed::value(Expr::Literal(value))
    }
}

/// The aggregate functions.
const AGGREGATES: [&str; 5] = ["sum", "count", "min", "max", "avg"];

/// Whether `expr` contains an aggregate function call.
pub fn has_aggregate(expr: &SqlExpr) -> bool {
    calls_any(expr, &AGGREGATES)
}

/// Whether `expr` contains an aggregate other than `COUNT`, which is NULL
/// over no rows.
pub fn has_nullable_aggregate(expr: &SqlExpr) -> bool {
    calls_any(expr, &["sum", "min", "max", "avg"])
}

/// Whether `expr` calls one of the functions `names` (lower case).
fn calls_any(expr: &SqlExpr, names: &[&str]) -> bool {
    let mut found = false;
    visit(expr, &mut |e| {
        if let SqlExpr::Function(f) = e
            && names.contains(&function_name(f).as_str())
        {
            found = true;
        }
    });
    found
}

/// Calls `f` on `expr` and its sub-expressions (those this module lowers).
fn visit(expr: &SqlExpr, f: &mut dyn FnMut(&SqlExpr)) {
    f(expr);
    match expr {
        SqlExpr::BinaryOp { left, right, .. } => {
            visit(left, f);
            visit(right, f);
        }
        SqlExpr::UnaryOp { expr, .. }
        | SqlExpr::Nested(expr)
        | SqlExpr::Cast { expr, .. }
        | SqlExpr::Floor { expr, .. }
        | SqlExpr::IsNull(expr)
        | SqlExpr::IsNotNull(expr) => visit(expr, f),
        SqlExpr::Between {
            expr, low, high, ..
        } => {
            visit(expr, f);
            visit(low, f);
            visit(high, f);
        }
        SqlExpr::InList { expr, list, .. } => {
            visit(expr, f);
            list.iter().for_each(|e| visit(e, f));
        }
        SqlExpr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(o) = operand {
                visit(o, f);
            }
            for CaseWhen { condition, result } in conditions {
                visit(condition, f);
                visit(result, f);
            }
            if let Some(e) = else_result {
                visit(e, f);
            }
        }
        SqlExpr::Function(function) => {
            if let FunctionArguments::List(list) = &function.args {
                for arg in &list.args {
                    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg {
                        visit(e, f);
                    }
                }
            }
        }
        _ => {}
    }
}

/// The lower-case name of a called function.
pub fn function_name(function: &Function) -> String {
    function.name.to_string().to_lowercase()
}

/// Where column references are evaluated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Per row of the join (inside aggregates, or a query without them).
    Row,
    /// Per group: only grouped columns, and aggregates.
    Group,
}

/// Lowers expressions of one `SELECT` against its scope.
pub struct Lowerer<'a> {
    scope: &'a Scope,
    /// The row-filter factors (`WHERE` conditions that are not joins).
    filters: &'a [Expr],
    /// The grouped classes; `None` when the query does not aggregate.
    groups: Option<&'a [usize]>,
}

impl<'a> Lowerer<'a> {
    /// A lowerer for a query whose `WHERE` filters are `filters` and whose
    /// grouped classes are `groups` (`None` if it does not aggregate).
    pub fn new(scope: &'a Scope, filters: &'a [Expr], groups: Option<&'a [usize]>) -> Self {
        Lowerer {
            scope,
            filters,
            groups,
        }
    }

    /// Lowers a `WHERE` condition (per row); it must be a boolean.
    pub fn condition(&self, expr: &SqlExpr) -> Result<Expr> {
        let typed = self.lower(expr, Level::Row)?;
        match typed.ty {
            SqlType::Value(ValueType::Boolean) => Ok(typed.expr),
            other => Err(Error::Type(format!(
                "a condition must be BOOLEAN, not {}: {expr}",
                other.name()
            ))),
        }
    }

    /// Lowers a select item, `HAVING` or `ORDER BY` expression: per group
    /// when the query aggregates, else per row.
    pub fn item(&self, expr: &SqlExpr) -> Result<Typed> {
        let level = if self.groups.is_some() {
            Level::Group
        } else {
            Level::Row
        };
        let typed = self.lower(expr, level)?;
        if let SqlType::Text(text) = &typed.ty {
            return Err(Error::NotSupported(format!(
                "the string constant '{text}' as a result column (strings are keys of tables)"
            )));
        }
        Ok(typed)
    }

    /// A column, for `SELECT *` and grouped keys.
    pub fn column(&self, column: Column) -> Result<Typed> {
        let level = if self.groups.is_some() {
            Level::Group
        } else {
            Level::Row
        };
        self.column_at(column, level, &column_text(self.scope, column))
    }

    /// The product of every table's row count and the filters: the
    /// multiplicity of each row of the join.
    pub fn row_count(&self) -> Expr {
        self.rows_times(None)
    }

    /// `COUNT(*)`: the row counts summed over the variables that are not
    /// grouped.
    pub fn count_star(&self) -> Expr {
        self.aggregate_rows(AggOp::Sum, self.row_count())
    }

    fn rows_times(&self, argument: Option<Expr>) -> Expr {
        let mut factors: Vec<Expr> = self
            .scope
            .join_order()
            .into_iter()
            .filter(|&o| {
                argument
                    .as_ref()
                    .is_none_or(|a| !vanishes_without(a, &self.scope.presence(o)))
            })
            .map(|o| self.scope.presence(o))
            .collect();
        factors.extend(self.filters.iter().cloned());
        factors.extend(argument);
        match factors.len() {
            // No table and no condition (`SELECT 40 + 2`): one row.
            0 => Expr::Literal(Value::Int(1)),
            1 => factors.remove(0),
            _ => Expr::map(ScalarOp::Mul, factors),
        }
    }

    /// `op(indices) body` over the variables of `body` that are not
    /// grouped.
    fn aggregate_rows(&self, op: AggOp, body: Expr) -> Expr {
        let groups = self.groups.unwrap_or_default();
        let free = body.free_indices();
        let indices: Vec<String> = self
            .scope
            .variables()
            .into_iter()
            .filter(|c| !groups.contains(c))
            .map(|c| self.scope.classes()[c].name.clone())
            .filter(|name| free.contains(name))
            .collect();
        if indices.is_empty() {
            return body;
        }
        Expr::Agg {
            op,
            indices,
            body: Box::new(body),
        }
    }

    fn lower(&self, expr: &SqlExpr, level: Level) -> Result<Typed> {
        match expr {
            SqlExpr::Identifier(ident) => {
                let column = self.scope.resolve(None, &ident.value)?;
                self.column_at(column, level, &ident.value)
            }
            SqlExpr::CompoundIdentifier(parts) => match parts.as_slice() {
                [table, column] => {
                    let resolved = self.scope.resolve(Some(&table.value), &column.value)?;
                    self.column_at(resolved, level, &expr.to_string())
                }
                _ => Err(Error::NotSupported(format!("the column name {expr}"))),
            },
            SqlExpr::Nested(inner) => self.lower(inner, level),
            SqlExpr::Value(_) | SqlExpr::UnaryOp { .. } if is_literal(expr) => {
                Ok(match Literal::from_expr(expr)? {
                    Literal::Integer(i) => Typed::literal(Value::Int(i)),
                    Literal::Float(f) => Typed::literal(Value::Float(f)),
                    Literal::Boolean(b) => Typed::literal(Value::Bool(b)),
                    Literal::String(s) => Typed {
                        expr: Expr::Literal(Value::Bool(false)),
                        ty: SqlType::Text(s),
                    },
                })
            }
            SqlExpr::Value(value) => Err(Error::NotSupported(format!(
                "the constant {value} in expressions"
            ))),
            SqlExpr::UnaryOp { op, expr: inner } => {
                let operand = self.lower(inner, level)?;
                match op {
                    UnaryOperator::Plus => numeric(operand, "+"),
                    UnaryOperator::Minus => Ok(Typed::value(Expr::map(
                        ScalarOp::Neg,
                        vec![numeric(operand, "-")?.expr],
                    ))),
                    UnaryOperator::Not => Ok(Typed::value(negate(boolean(operand, "NOT")?))),
                    other => Err(Error::NotSupported(format!("the operator {other}"))),
                }
            }
            SqlExpr::BinaryOp { left, op, right } => {
                let (l, r) = (self.lower(left, level)?, self.lower(right, level)?);
                binary(l, op, r)
            }
            SqlExpr::IsNull(inner) | SqlExpr::IsNotNull(inner) => {
                // Stored columns and the results computed from them are
                // never NULL.
                self.lower(inner, level)?;
                Ok(Typed::literal(Value::Bool(matches!(
                    expr,
                    SqlExpr::IsNotNull(_)
                ))))
            }
            SqlExpr::Between {
                expr: inner,
                negated,
                low,
                high,
            } => {
                let value = self.lower(inner, level)?;
                let low = binary(
                    value.clone(),
                    &BinaryOperator::GtEq,
                    self.lower(low, level)?,
                )?;
                let high = binary(value, &BinaryOperator::LtEq, self.lower(high, level)?)?;
                let both = Expr::map(ScalarOp::And, vec![low.expr, high.expr]);
                Ok(Typed::value(if *negated { negate(both) } else { both }))
            }
            SqlExpr::InList {
                expr: inner,
                list,
                negated,
            } => {
                let value = self.lower(inner, level)?;
                let mut tests = Vec::new();
                for item in list {
                    let item = self.lower(item, level)?;
                    tests.push(binary(value.clone(), &BinaryOperator::Eq, item)?.expr);
                }
                let any = match tests.len() {
                    0 => Expr::Literal(Value::Bool(false)),
                    1 => tests.remove(0),
                    _ => Expr::map(ScalarOp::Or, tests),
                };
                Ok(Typed::value(if *negated { negate(any) } else { any }))
            }
            SqlExpr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
                level,
            ),
            SqlExpr::Function(function) => self.function(function, level),
            // FLOOR(x), which sqlparser parses apart from other calls.
            SqlExpr::Floor {
                expr: inner,
                field: CeilFloorKind::DateTimeField(DateTimeField::NoDateTime),
            } => {
                let operand = numeric(self.lower(inner, level)?, "FLOOR")?;
                Ok(Typed::value(Expr::map(ScalarOp::Floor, vec![operand.expr])))
            }
            SqlExpr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr: inner,
                data_type: DataType::HugeInt | DataType::Int128,
                format: None,
            } => {
                let operand = numeric(self.lower(inner, level)?, "CAST")?;
                Ok(Typed::value(Expr::map(
                    ScalarOp::Hugeint,
                    vec![operand.expr],
                )))
            }
            SqlExpr::Cast { data_type, .. } => Err(Error::NotSupported(format!(
                "CAST to {data_type} (einsql's CAST converts numbers to HUGEINT; \
                 other types follow from the type rules)"
            ))),
            other => Err(Error::NotSupported(format!(
                "the expression {other} in queries"
            ))),
        }
    }

    fn column_at(&self, column: Column, level: Level, text: &str) -> Result<Typed> {
        if level == Level::Group {
            let grouped = match column {
                Column::Key { occurrence, dim } => {
                    let class = self.scope.class(occurrence, dim);
                    self.scope.classes()[class].constant.is_some()
                        || self.groups.unwrap_or_default().contains(&class)
                }
                Column::Value { .. } => false,
            };
            if !grouped {
                return Err(Error::Invalid(format!(
                    "column {text} must appear in the GROUP BY clause or be used in an \
                     aggregate function"
                )));
            }
        }
        Ok(match column {
            Column::Key { occurrence, dim } => {
                let class = &self.scope.classes()[self.scope.class(occurrence, dim)];
                let expr = match self.scope.term(occurrence, dim) {
                    IndexTerm::Const(c) => Expr::Literal(Value::Int(c)),
                    IndexTerm::Var(v) => Expr::Index(v),
                };
                let ty = match &class.dictionary {
                    Some(d) => SqlType::Key(Arc::clone(d)),
                    None => SqlType::Value(ValueType::Int64),
                };
                Typed { expr, ty }
            }
            Column::Value { occurrence, column } => {
                Typed::value(self.scope.input(occurrence, Annotation::Column(column)))
            }
        })
    }

    fn case(
        &self,
        operand: Option<&SqlExpr>,
        conditions: &[CaseWhen],
        otherwise: Option<&SqlExpr>,
        level: Level,
    ) -> Result<Typed> {
        let Some(otherwise) = otherwise else {
            return Err(Error::NotSupported(
                "CASE without ELSE (its NULL result); add ELSE, e.g. ELSE 0".to_string(),
            ));
        };
        let operand = operand.map(|o| self.lower(o, level)).transpose()?;
        let mut result = self.lower(otherwise, level)?;
        for CaseWhen {
            condition,
            result: then,
        } in conditions.iter().rev()
        {
            let condition = self.lower(condition, level)?;
            let test = match &operand {
                Some(value) => binary(value.clone(), &BinaryOperator::Eq, condition)?.expr,
                None => boolean(condition, "CASE WHEN")?,
            };
            let then = self.lower(then, level)?;
            let (then, ty) = same_kind(then, result.clone(), "CASE")?;
            result = Typed {
                expr: Expr::map(ScalarOp::IfElse, vec![test, then.0, then.1]),
                ty,
            };
            if let SqlType::Value(_) = result.ty {
                result.ty = SqlType::Value(result.expr.value_type(&|_| None));
            }
        }
        Ok(result)
    }

    fn function(&self, function: &Function, level: Level) -> Result<Typed> {
        let name = function_name(function);
        let unsupported = [
            (function.over.is_some(), "window functions (OVER)"),
            (function.filter.is_some(), "FILTER in aggregates"),
            (!function.within_group.is_empty(), "WITHIN GROUP"),
        ];
        if let Some((_, what)) = unsupported.iter().find(|(present, _)| *present) {
            return Err(Error::NotSupported((*what).to_string()));
        }
        let (args, distinct) = match &function.args {
            FunctionArguments::List(list) => (
                list.args.as_slice(),
                list.duplicate_treatment == Some(DuplicateTreatment::Distinct),
            ),
            FunctionArguments::None => (&[][..], false),
            FunctionArguments::Subquery(_) => {
                return Err(Error::NotSupported(format!("the subquery in {function}")));
            }
        };
        if AGGREGATES.contains(&name.as_str()) {
            return self.aggregate(function, &name, args, distinct, level);
        }
        if distinct {
            return Err(Error::NotSupported(format!("DISTINCT in {name}(...)")));
        }
        let op = match name.as_str() {
            "pow" => Some(ScalarOp::Power),
            "if" => Some(ScalarOp::IfElse),
            _ => ScalarOp::from_function_name(&name),
        }
        .ok_or_else(|| {
            let known = ScalarOp::ALL
                .iter()
                .filter_map(|op| op.function_name())
                .chain(AGGREGATES);
            Error::unknown("Function", &name, known)
        })?;
        let args = args
            .iter()
            .map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => self.lower(e, level),
                other => Err(Error::NotSupported(format!(
                    "the argument {other} of {name}"
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        if !op.accepts(args.len()) {
            return Err(Error::Invalid(format!(
                "{name} does not take {} arguments",
                args.len()
            )));
        }
        let args = if op == ScalarOp::IfElse {
            let mut args = args.into_iter();
            let (Some(test), Some(then), Some(otherwise)) = (args.next(), args.next(), args.next())
            else {
                return Err(Error::Invalid(format!("{name} takes 3 arguments")));
            };
            let test = boolean(test, &name)?;
            let (branches, _) = same_kind(then, otherwise, &name)?;
            vec![test, branches.0, branches.1]
        } else {
            args.into_iter()
                .map(|a| numeric(a, &name).map(|t| t.expr))
                .collect::<Result<_>>()?
        };
        Ok(Typed::value(Expr::map(op, args)))
    }

    fn aggregate(
        &self,
        function: &Function,
        name: &str,
        args: &[FunctionArg],
        distinct: bool,
        level: Level,
    ) -> Result<Typed> {
        if level == Level::Row {
            let message = if self.groups.is_some() {
                format!("aggregates cannot be nested: {function}")
            } else {
                format!("the aggregate {function} in a WHERE clause")
            };
            return Err(Error::Invalid(message));
        }
        let argument = match args {
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if name == "count" && !distinct => {
                None
            }
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => Some(self.lower(e, Level::Row)?),
            _ => {
                return Err(Error::Invalid(format!(
                    "{name} takes one argument{}: {function}",
                    if name == "count" { " or *" } else { "" }
                )));
            }
        };
        if distinct {
            return self.count_distinct(function, name, argument);
        }
        let count = || self.count_star();
        let Some(argument) = argument else {
            return Ok(Typed::value(count()));
        };
        if name == "count" {
            // Stored values are never NULL: COUNT(x) counts rows.
            return Ok(Typed::value(count()));
        }
        let ty = argument.ty.clone();
        let value_type = match &ty {
            SqlType::Value(t) => *t,
            SqlType::Key(_) if matches!(name, "min" | "max") => ValueType::Int64,
            other => {
                return Err(Error::Type(format!(
                    "{} of a {} column is not supported",
                    name.to_uppercase(),
                    other.name()
                )));
            }
        };
        match name {
            "sum" | "avg" => {
                if value_type == ValueType::Boolean {
                    return Err(Error::Type(format!(
                        "{} of BOOLEAN values; count them with COUNT(*) and a WHERE condition",
                        name.to_uppercase()
                    )));
                }
                let sum = self.aggregate_rows(AggOp::Sum, self.rows_times(Some(argument.expr)));
                Ok(Typed::value(if name == "sum" {
                    sum
                } else {
                    Expr::map(ScalarOp::Div, vec![sum, count()])
                }))
            }
            _ => {
                let op = if name == "max" {
                    AggOp::Max
                } else {
                    AggOp::Min
                };
                let sentinel = extreme(value_type, op == AggOp::Max);
                let guarded = Expr::map(
                    ScalarOp::IfElse,
                    vec![self.row_count(), argument.expr, Expr::Literal(sentinel)],
                );
                let expr = self.aggregate_rows(op, guarded);
                Ok(match ty {
                    SqlType::Key(d) => Typed {
                        expr,
                        ty: SqlType::Key(d),
                    },
                    _ => Typed::value(expr),
                })
            }
        }
    }

    /// `COUNT(DISTINCT k)` of a key column `k`: the number of its
    /// coordinates with at least one row.
    fn count_distinct(
        &self,
        function: &Function,
        name: &str,
        argument: Option<Typed>,
    ) -> Result<Typed> {
        let Some(Typed {
            expr: Expr::Index(var),
            ..
        }) = argument.filter(|_| name == "count")
        else {
            return Err(Error::NotSupported(format!(
                "{function}: DISTINCT is supported in COUNT of a key column"
            )));
        };
        let groups = self.groups.unwrap_or_default();
        let others: Vec<String> = self
            .scope
            .variables()
            .into_iter()
            .filter(|c| !groups.contains(c))
            .map(|c| self.scope.classes()[c].name.clone())
            .filter(|n| *n != var)
            .collect();
        let rows = self.row_count();
        let exists = if others.is_empty() {
            Expr::map(ScalarOp::Ne, vec![rows, Expr::Literal(Value::Int(0))])
        } else {
            Expr::Agg {
                op: AggOp::Any,
                indices: others,
                body: Box::new(rows),
            }
        };
        let expr = if groups.iter().any(|&c| self.scope.classes()[c].name == var) {
            Expr::map(ScalarOp::Mul, vec![exists, Expr::Literal(Value::Int(1))])
        } else {
            Expr::Agg {
                op: AggOp::Count,
                indices: vec![var],
                body: Box::new(exists),
            }
        };
        Ok(Typed::value(expr))
    }
}

/// Whether `expr` is 0 wherever `presence` (a table's row count) is 0:
/// it reads that table's values as a factor.
fn vanishes_without(expr: &Expr, presence: &Expr) -> bool {
    let Expr::Input(row) = presence else {
        return false;
    };
    match expr {
        Expr::Input(input) => input.tensor == row.tensor && input.indices == row.indices,
        Expr::Map { op, args } => match op.algebra().annihilator {
            Some(a) if a.value.is_zero() => args
                .iter()
                .take(if a.only_first { 1 } else { args.len() })
                .any(|arg| vanishes_without(arg, presence)),
            _ => false,
        },
        _ => false,
    }
}

/// The most extreme value of `ty`: what `MAX` (`largest` false) or `MIN`
/// sees where a row is missing.
fn extreme(ty: ValueType, for_max: bool) -> Value {
    match (ty, for_max) {
        (ValueType::Boolean, m) => Value::Bool(!m),
        (ValueType::Int64, true) => Value::Int(i64::MIN),
        (ValueType::Int64, false) => Value::Int(i64::MAX),
        (ValueType::Int128, true) => Value::huge(i128::MIN),
        (ValueType::Int128, false) => Value::huge(i128::MAX),
        (ValueType::Float64, true) => Value::Float(f64::NEG_INFINITY),
        (ValueType::Float64, false) => Value::Float(f64::INFINITY),
    }
}

fn is_literal(expr: &SqlExpr) -> bool {
    match expr {
        SqlExpr::Value(_) => Literal::from_expr(expr).is_ok(),
        SqlExpr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => matches!(expr.as_ref(), SqlExpr::Value(_)) && Literal::from_expr(expr).is_ok(),
        _ => false,
    }
}

fn column_text(scope: &Scope, column: Column) -> String {
    match column {
        Column::Key { occurrence, dim } => format!(
            "{}.{}",
            scope.occurrences[occurrence].alias,
            scope.dimension(occurrence, dim).name
        ),
        Column::Value { occurrence, column } => {
            let o = &scope.occurrences[occurrence];
            format!("{}.{}", o.alias, o.table.tensor.values()[column].name)
        }
    }
}

/// `NOT e`, pushed into comparisons where it can be.
fn negate(expr: Expr) -> Expr {
    use ScalarOp::*;
    match expr {
        Expr::Map { op, args } if matches!(op, Eq | Ne | Lt | Le | Gt | Ge) => {
            let flipped = match op {
                Eq => Ne,
                Ne => Eq,
                Lt => Ge,
                Le => Gt,
                Gt => Le,
                _ => Lt,
            };
            Expr::map(flipped, args)
        }
        Expr::Literal(Value::Bool(b)) => Expr::Literal(Value::Bool(!b)),
        other => Expr::map(Eq, vec![other, Expr::Literal(Value::Bool(false))]),
    }
}

fn numeric(typed: Typed, context: &str) -> Result<Typed> {
    match typed.ty {
        SqlType::Value(_) => Ok(typed),
        other => Err(Error::Type(format!(
            "{context} needs numbers, not {} values",
            other.name()
        ))),
    }
}

fn boolean(typed: Typed, context: &str) -> Result<Expr> {
    match typed.ty {
        SqlType::Value(ValueType::Boolean) => Ok(typed.expr),
        other => Err(Error::Type(format!(
            "{context} needs a BOOLEAN condition, not {}",
            other.name()
        ))),
    }
}

/// Two results of one `CASE` (or `ifelse`): both values, or both keys of
/// one dictionary.
fn same_kind(a: Typed, b: Typed, context: &str) -> Result<((Expr, Expr), SqlType)> {
    match (&a.ty, &b.ty) {
        (SqlType::Value(_), SqlType::Value(_)) => {
            let ty = SqlType::Value(ValueType::Int64);
            Ok(((a.expr, b.expr), ty))
        }
        (SqlType::Key(x), SqlType::Key(y)) if Arc::ptr_eq(x, y) => {
            let ty = a.ty.clone();
            Ok(((a.expr, b.expr), ty))
        }
        _ => Err(Error::NotSupported(format!(
            "{context} results of types {} and {} (results are numbers, booleans or the \
             keys of one column)",
            a.ty.name(),
            b.ty.name()
        ))),
    }
}

/// A binary SQL operator over two lowered operands.
fn binary(l: Typed, op: &BinaryOperator, r: Typed) -> Result<Typed> {
    use BinaryOperator as B;
    let comparison = match op {
        B::Eq => Some(ScalarOp::Eq),
        B::NotEq => Some(ScalarOp::Ne),
        B::Lt => Some(ScalarOp::Lt),
        B::LtEq => Some(ScalarOp::Le),
        B::Gt => Some(ScalarOp::Gt),
        B::GtEq => Some(ScalarOp::Ge),
        _ => None,
    };
    if let Some(cmp) = comparison {
        return compare(l, cmp, r);
    }
    let arithmetic = match op {
        B::Plus => ScalarOp::Add,
        B::Minus => ScalarOp::Sub,
        B::Multiply => ScalarOp::Mul,
        B::Divide => ScalarOp::Div,
        B::Modulo => ScalarOp::Mod,
        B::And => ScalarOp::And,
        B::Or => ScalarOp::Or,
        other => return Err(Error::NotSupported(format!("the operator {other}"))),
    };
    let symbol = op.to_string();
    let args = if matches!(arithmetic, ScalarOp::And | ScalarOp::Or) {
        vec![boolean(l, &symbol)?, boolean(r, &symbol)?]
    } else {
        vec![numeric(l, &symbol)?.expr, numeric(r, &symbol)?.expr]
    };
    Ok(Typed::value(Expr::map(arithmetic, args)))
}

/// A comparison; string keys compare by their sorted dictionary.
fn compare(l: Typed, cmp: ScalarOp, r: Typed) -> Result<Typed> {
    match (&l.ty, &r.ty) {
        (SqlType::Value(_), SqlType::Value(_)) => {
            Ok(Typed::value(Expr::map(cmp, vec![l.expr, r.expr])))
        }
        (SqlType::Key(x), SqlType::Key(y)) if Arc::ptr_eq(x, y) || x.strings() == y.strings() => {
            Ok(Typed::value(Expr::map(cmp, vec![l.expr, r.expr])))
        }
        (SqlType::Key(_), SqlType::Key(_)) => Err(Error::NotSupported(
            "comparing string keys of two different columns other than by = in a join".to_string(),
        )),
        (SqlType::Key(d), SqlType::Text(s)) => Ok(Typed::value(key_versus_text(l.expr, cmp, d, s))),
        (SqlType::Text(_), SqlType::Key(_)) => compare(r, mirror(cmp), l),
        (SqlType::Text(a), SqlType::Text(b)) => {
            let order = a.cmp(b);
            let holds = match cmp {
                ScalarOp::Eq => order == Ordering::Equal,
                ScalarOp::Ne => order != Ordering::Equal,
                ScalarOp::Lt => order == Ordering::Less,
                ScalarOp::Le => order != Ordering::Greater,
                ScalarOp::Gt => order == Ordering::Greater,
                _ => order != Ordering::Less,
            };
            Ok(Typed::literal(Value::Bool(holds)))
        }
        _ => Err(Error::Type(format!(
            "cannot compare {} with {}",
            l.ty.name(),
            r.ty.name()
        ))),
    }
}

/// `a < b` as `b > a`.
fn mirror(cmp: ScalarOp) -> ScalarOp {
    match cmp {
        ScalarOp::Lt => ScalarOp::Gt,
        ScalarOp::Le => ScalarOp::Ge,
        ScalarOp::Gt => ScalarOp::Lt,
        ScalarOp::Ge => ScalarOp::Le,
        other => other,
    }
}

/// `key cmp 'text'` for a key coded by the sorted `dictionary`: the
/// strings below `text` are the codes below `lower`, those up to it the
/// codes below `upper`.
fn key_versus_text(code: Expr, cmp: ScalarOp, dictionary: &Dictionary, text: &str) -> Expr {
    let strings = dictionary.strings();
    let lower = strings.partition_point(|s| s.as_str() < text) as i64;
    let upper = strings.partition_point(|s| s.as_str() <= text) as i64;
    let at = |op, bound| Expr::map(op, vec![code.clone(), Expr::Literal(Value::Int(bound))]);
    match cmp {
        ScalarOp::Eq if lower == upper => Expr::Literal(Value::Bool(false)),
        ScalarOp::Ne if lower == upper => Expr::Literal(Value::Bool(true)),
        ScalarOp::Eq => at(ScalarOp::Eq, lower),
        ScalarOp::Ne => at(ScalarOp::Ne, lower),
        ScalarOp::Lt => at(ScalarOp::Lt, lower),
        ScalarOp::Le => at(ScalarOp::Lt, upper),
        ScalarOp::Gt => at(ScalarOp::Ge, upper),
        _ => at(ScalarOp::Ge, lower),
    }
}
