//! The numpy-style `einsum` table function:
//!
//! ```sql
//! SELECT * FROM einsum('ij,jk->ik', a, b);   -- matrix product
//! SELECT * FROM einsum('ii', a);             -- trace (implicit output)
//! ```
//!
//! Each operand is a table with one value column (or a bag, read as its
//! multiplicities), indexed by one letter per dimension. Letters of the
//! output (after `->`) index the result; every other letter is summed. As in
//! numpy, without `->` the output is the letters that appear exactly once,
//! in alphabetical order. The call becomes the IR query
//! `einsum[i,k] = SUM(j) a.v[i,j] * b.v[j,k]`, and its result is a table
//! with one dimension per output letter and the value column `v`.

use std::sync::Arc;

use sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, ObjectName, TableFunctionArgs,
};

use super::Context;
use super::query::Ctes;
use crate::bound::Literal;
use crate::error::{Error, Result};
use crate::ir::{AggOp, Annotation, Expr, IndexTerm, Input, Program, Query, ScalarOp, TensorRef};
use crate::storage::Tensor;

/// Whether a table function call is `einsum(...)`.
pub fn is_einsum(name: &ObjectName) -> bool {
    super::table_name(name).is_ok_and(|n| n.eq_ignore_ascii_case("einsum"))
}

/// Evaluates `einsum(spec, tables...)`.
pub fn einsum(context: Context<'_>, args: &TableFunctionArgs, ctes: &Ctes) -> Result<Arc<Tensor>> {
    let mut args = args.args.iter().map(|arg| match arg {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
        other => Err(Error::Invalid(format!(
            "einsum: unexpected argument {other}; give the subscripts, then tables"
        ))),
    });
    let spec = match args.next().transpose()?.map(Literal::from_expr) {
        Some(Ok(Literal::String(s))) => s,
        _ => {
            return Err(Error::Invalid(
                "einsum needs its subscripts first, as in einsum('ij,jk->ik', a, b)".to_string(),
            ));
        }
    };
    let tables = args
        .map(|arg| arg.and_then(|e| table(context, e, ctes)))
        .collect::<Result<Vec<_>>>()?;
    let query = query(&spec, tables)?;
    let program = Program {
        queries: vec![query],
    };
    let mut results = context.evaluate(&program)?;
    results
        .pop()
        .map(|(_, tensor)| tensor)
        .ok_or_else(|| Error::Invalid("einsum produced no result".to_string()))
}

/// An operand: a table name (bare or quoted) in the catalog or a `WITH`.
fn table(context: Context<'_>, expr: &SqlExpr, ctes: &Ctes) -> Result<TensorRef> {
    let name = match expr {
        SqlExpr::Identifier(ident) => ident.value.clone(),
        other => match Literal::from_expr(other) {
            Ok(Literal::String(s)) => s,
            _ => {
                return Err(Error::Invalid(format!(
                    "einsum: {other} is not a table name"
                )));
            }
        },
    };
    let tensor = ctes.table(context, &name)?;
    Ok(TensorRef { name, tensor })
}

/// The IR query of `spec` over `tables`.
fn query(spec: &str, tables: Vec<TensorRef>) -> Result<Query> {
    let spec: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (inputs, output) = match spec.split_once("->") {
        Some((inputs, output)) => (inputs, Some(output)),
        None => (spec.as_str(), None),
    };
    let operands: Vec<&str> = inputs.split(',').collect();
    if operands.len() != tables.len() {
        return Err(Error::Invalid(format!(
            "einsum: the subscripts '{spec}' name {} operands but {} tables are given",
            operands.len(),
            tables.len()
        )));
    }
    let letters = |text: &str| -> Result<Vec<String>> {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(c.to_string())
                } else {
                    Err(Error::Invalid(format!(
                        "einsum: '{c}' in '{spec}' is not an index letter (a-z, A-Z)"
                    )))
                }
            })
            .collect()
    };
    let mut factors = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (operand, table) in operands.iter().zip(tables) {
        let indices = letters(operand)?;
        let tensor = &table.tensor;
        if indices.len() != tensor.dims().len() {
            return Err(Error::Invalid(format!(
                "einsum: '{operand}' gives {} indices for '{}', which has {} dimensions",
                indices.len(),
                table.name,
                tensor.dims().len()
            )));
        }
        let annotation = match tensor.values().len() {
            0 => Annotation::Multiplicity,
            1 => Annotation::Column(0),
            _ => {
                return Err(Error::Invalid(format!(
                    "einsum: '{}' has several value columns; select one into a table first",
                    table.name
                )));
            }
        };
        for index in &indices {
            if !seen.contains(index) {
                seen.push(index.clone());
            }
        }
        factors.push(Expr::Input(Input {
            tensor: table,
            annotation,
            indices: indices.into_iter().map(IndexTerm::Var).collect(),
        }));
    }
    let output = match output {
        Some(text) => {
            let out = letters(text)?;
            if let Some(twice) = out
                .iter()
                .enumerate()
                .find_map(|(n, i)| out[..n].contains(i).then_some(i))
            {
                return Err(Error::Invalid(format!(
                    "einsum: the output index '{twice}' is listed twice"
                )));
            }
            if let Some(missing) = out.iter().find(|i| !seen.contains(i)) {
                return Err(Error::Invalid(format!(
                    "einsum: the output index '{missing}' does not appear in the operands"
                )));
            }
            out
        }
        None => {
            let mut once: Vec<String> = seen
                .iter()
                .filter(|i| {
                    operands
                        .iter()
                        .map(|o| o.matches(i.as_str()).count())
                        .sum::<usize>()
                        == 1
                })
                .cloned()
                .collect();
            once.sort();
            once
        }
    };
    let summed: Vec<String> = seen.into_iter().filter(|i| !output.contains(i)).collect();
    let body = match factors.len() {
        0 => {
            return Err(Error::Invalid(
                "einsum needs at least one table".to_string(),
            ));
        }
        1 => factors.remove(0),
        _ => Expr::map(ScalarOp::Mul, factors),
    };
    let expr = if summed.is_empty() {
        body
    } else {
        Expr::Agg {
            op: AggOp::Sum,
            indices: summed,
            body: Box::new(body),
        }
    };
    Ok(Query {
        name: "einsum".to_string(),
        indices: output,
        expr,
    })
}
