//! The check the optimizer runs after each phase in debug builds: the
//! program still binds.
//!
//! [`problem`] finds the first way in which a program does not bind: a
//! query whose output indices are not exactly the free indices of its
//! expression (or repeat one), an alias that names no earlier query or
//! gives it the wrong number of terms, an input whose terms do not match
//! its tensor's dimensions, an aggregate over no index, or an
//! intermediate that names no query. The driver ([`super::optimize`])
//! checks the program it was given first and checks the phases' output
//! only when that passes, so that a program that never bound is reported
//! by the planner as the user's error, and one that a phase broke as an
//! [`Error::Internal`] naming the phase ([`after`]).

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::ir::{Expr, Program};

use super::phase::Phase;

/// The first reason `program`, with the queries named in
/// `intermediates`, does not bind (see the module documentation); `None`
/// when it does.
pub fn problem(program: &Program, intermediates: &[String]) -> Option<String> {
    // The number of output indices of every query so far, by name.
    let mut arity: HashMap<&str, usize> = HashMap::new();
    for query in &program.queries {
        if let Some(problem) = expr_problem(&query.expr, &arity) {
            return Some(format!("in '{}': {problem}", query.name));
        }
        let free = query.expr.free_indices();
        let repeated = query
            .indices
            .iter()
            .enumerate()
            .any(|(k, v)| query.indices[..k].contains(v));
        if repeated
            || free.len() != query.indices.len()
            || free.iter().any(|v| !query.indices.contains(v))
        {
            return Some(format!(
                "the output indices [{}] of '{}' are not the free indices [{}] of its expression",
                query.indices.join(", "),
                query.name,
                free.join(", ")
            ));
        }
        arity.insert(&query.name, query.indices.len());
    }
    intermediates
        .iter()
        .find(|name| !arity.contains_key(name.as_str()))
        .map(|name| format!("the intermediate '{name}' is no query of the program"))
}

/// The first reason `expr` does not bind, given the arity of the
/// queries before it.
fn expr_problem(expr: &Expr, arity: &HashMap<&str, usize>) -> Option<String> {
    match expr {
        Expr::Input(input) => {
            let dims = input.tensor.tensor.dims().len();
            (input.indices.len() != dims).then(|| {
                format!(
                    "{expr} gives {} terms for {dims} dimensions",
                    input.indices.len()
                )
            })
        }
        Expr::Alias { name, indices } => match arity.get(name.as_str()) {
            None => Some(format!("{expr} reads no earlier query")),
            Some(&n) if n != indices.len() => Some(format!(
                "{expr} gives {} terms for {n} dimensions",
                indices.len()
            )),
            Some(_) => None,
        },
        Expr::Agg { indices, body, .. } => {
            if indices.is_empty() {
                Some(format!("{expr} aggregates over no index"))
            } else {
                expr_problem(body, arity)
            }
        }
        Expr::Map { args, .. } => args.iter().find_map(|a| expr_problem(a, arity)),
        Expr::Literal(_) | Expr::Index(_) => None,
    }
}

/// `Ok` when `program` binds, else the internal error of a bug in
/// `phases` (those that just ran, together), which left it so.
///
/// Errors: [`Error::Internal`] naming the phases and the problem.
pub fn after(phases: &[Phase], program: &Program, intermediates: &[String]) -> Result<()> {
    match problem(program, intermediates) {
        None => Ok(()),
        Some(problem) => {
            let names: Vec<String> = phases.iter().map(|p| format!("'{p}'")).collect();
            Err(Error::Internal(format!(
                "the optimizer phase {} left a program that does not bind: {problem}",
                names.join(" with ")
            )))
        }
    }
}
