//! The text form of the IR: tensor index notation itself, for `EXPLAIN` and
//! golden tests.
//!
//! A query prints as `C[i,k] = SUM(j) A.v[i,j] * B.v[j,k]`: inputs with
//! their value column (`E[i,j]` for a bag's multiplicity, `A.*[i,j]` for
//! the row count of a keyed table), `coord(i)` for an index's coordinate,
//! aliases as
//! `name[i]`, operators infix with the fewest parentheses the einsum grammar
//! needs, aggregates as a prefix whose body extends to the right (so an
//! aggregate is parenthesized unless it ends its context). The output is
//! deterministic and parses back to the same IR (see the einsum tests).
//!
//! Precedence, loosest first: `or`, `and`, comparisons, `+ -`, `* /`,
//! unary `-`; all binary operators group to the left.

use std::fmt::{self, Display, Formatter, Write};

use super::{Annotation, Expr, IndexTerm, Input, Program, Query, ScalarOp, Value};

impl Display for Program {
    /// One query per line, each ending in `;`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (n, query) in self.queries.iter().enumerate() {
            if n > 0 {
                f.write_char('\n')?;
            }
            write!(f, "{query};")?;
        }
        Ok(())
    }
}

impl Display for Query {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_name(f, &self.name)?;
        if !self.indices.is_empty() {
            f.write_char('[')?;
            for (n, index) in self.indices.iter().enumerate() {
                if n > 0 {
                    f.write_char(',')?;
                }
                write_name(f, index)?;
            }
            f.write_char(']')?;
        }
        write!(f, " = {}", self.expr)
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_expr(f, self, 0, true)
    }
}

impl Display for Input {
    /// As the input reads in an expression: `A.v[i,j]`, `E[i,j]`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_input(f, self)
    }
}

/// Binding strength of an expression's outermost operator.
fn precedence(expr: &Expr) -> u8 {
    match expr {
        Expr::Agg { .. } => 0,
        Expr::Map { op, .. } => infix_precedence(*op).unwrap_or(PRIMARY),
        Expr::Literal(value) if value.compare(Value::Int(0)) == Some(std::cmp::Ordering::Less) => {
            UNARY
        }
        _ => PRIMARY,
    }
}

const UNARY: u8 = 6;
const PRIMARY: u8 = 7;

/// The precedence of an operator written infix (or prefix, for `-a`).
pub fn infix_precedence(op: ScalarOp) -> Option<u8> {
    use ScalarOp::*;
    Some(match op {
        Or => 1,
        And => 2,
        Eq | Ne | Lt | Le | Gt | Ge => 3,
        Add | Sub => 4,
        Mul | Div => 5,
        Neg => UNARY,
        _ => return None,
    })
}

/// Writes `expr` where the context binds with strength `min`; `right_edge`
/// says whether nothing follows it before its context closes (so an
/// aggregate may stand without parentheses).
fn write_expr(f: &mut Formatter<'_>, expr: &Expr, min: u8, right_edge: bool) -> fmt::Result {
    let own = precedence(expr);
    let parenthesize = match expr {
        Expr::Agg { .. } => !right_edge,
        _ => own < min,
    };
    if parenthesize {
        f.write_char('(')?;
        write_bare(f, expr, true)?;
        f.write_char(')')
    } else {
        write_bare(f, expr, right_edge)
    }
}

fn write_bare(f: &mut Formatter<'_>, expr: &Expr, right_edge: bool) -> fmt::Result {
    match expr {
        Expr::Literal(value) => write!(f, "{value}"),
        Expr::Input(input) => write_input(f, input),
        Expr::Index(var) => {
            f.write_str("coord(")?;
            write_name(f, var)?;
            f.write_char(')')
        }
        Expr::Alias { name, indices } => {
            write_name(f, name)?;
            write_terms(f, indices)
        }
        Expr::Agg { op, indices, body } => {
            write!(f, "{}(", op.name())?;
            for (n, index) in indices.iter().enumerate() {
                if n > 0 {
                    f.write_char(',')?;
                }
                write_name(f, index)?;
            }
            f.write_str(") ")?;
            write_expr(f, body, 0, right_edge)
        }
        Expr::Map { op, args } => match (infix_precedence(*op), op.function_name(), &args[..]) {
            (Some(p), _, [operand]) => {
                write!(f, "-")?;
                write_expr(f, operand, p, right_edge)
            }
            (Some(p), _, _) => {
                let symbol = op.symbol().unwrap_or("?");
                for (n, arg) in args.iter().enumerate() {
                    let last = n + 1 == args.len();
                    if n > 0 {
                        write!(f, " {symbol} ")?;
                    }
                    let min = if n == 0 { p } else { p + 1 };
                    write_expr(f, arg, min, last && right_edge)?;
                }
                Ok(())
            }
            (None, name, _) => {
                write!(f, "{}(", name.unwrap_or("?"))?;
                for (n, arg) in args.iter().enumerate() {
                    if n > 0 {
                        f.write_str(", ")?;
                    }
                    write_expr(f, arg, 0, true)?;
                }
                f.write_char(')')
            }
        },
    }
}

fn write_input(f: &mut Formatter<'_>, input: &Input) -> fmt::Result {
    write_name(f, &input.tensor.name)?;
    match (input.annotation, input.column_name()) {
        (Annotation::Column(_), Some(column)) => {
            f.write_char('.')?;
            write_name(f, column)?;
        }
        (Annotation::Multiplicity, _) if !input.tensor.tensor.is_bag() => f.write_str(".*")?,
        _ => {}
    }
    write_terms(f, &input.indices)
}

fn write_terms(f: &mut Formatter<'_>, terms: &[IndexTerm]) -> fmt::Result {
    f.write_char('[')?;
    for (n, term) in terms.iter().enumerate() {
        if n > 0 {
            f.write_char(',')?;
        }
        match term {
            IndexTerm::Var(v) => write_name(f, v)?,
            IndexTerm::Const(c) => write!(f, "{c}")?,
        }
    }
    f.write_char(']')
}

/// Writes a name, in double quotes unless it is a plain identifier (a
/// letter or `_`, then letters, digits or `_`) that is not a keyword.
fn write_name(f: &mut Formatter<'_>, name: &str) -> fmt::Result {
    if is_plain_identifier(name) {
        f.write_str(name)
    } else {
        write!(f, "\"{}\"", name.replace('"', "\"\""))
    }
}

/// Whether `name` can be written without quotes in tensor index notation.
pub fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let keyword = ["and", "or", "true", "false"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(name));
    starts_well && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && !keyword
}
