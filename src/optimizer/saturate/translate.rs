//! IR expressions into the e-graph and extracted terms back.
//!
//! Into the e-graph, `+` and `*` become binary nodes (left to right),
//! `a - b` becomes `a + (-1)·b` and `-a` becomes `(-1)·a` (SPORES'
//! difference), `SUM(i,j) a` becomes `(sum i (sum j a))`, `power` its own
//! node and every other operator an [`OpKind`] node. Back, the same in
//! reverse: a term `(-1)·x` of a sum is subtracted, a product with the
//! factor `-1` negated, nested sums merge into one aggregate, and a sum
//! over an index its body does not have is its body times the index's
//! size.

use std::cmp::Ordering;

use egg::{Id, RecExpr};
use hashbrown::HashMap;

use super::analysis::{Context, Graph, LeafInfo};
use super::lang::{Const, Name, OpKind, Sp};
use crate::error::{Error, Result};
use crate::ir::{AggOp, Expr, IndexTerm, ScalarOp, Value};
use crate::optimizer::estimate::{Aliases, estimate_nnz};
use crate::optimizer::uniform::{UniformEstimator, UniformStats};
use crate::storage::ValueType;

/// What an alias of an earlier query reads: its value type and the sizes
/// of its output indices.
pub type AliasInfo = HashMap<String, (ValueType, Vec<u64>)>;

/// The size of every index variable of `expr`, or `None` when a variable
/// indexes dimensions of different sizes (an index then ranges over the
/// largest, which a rewrite that drops one of its inputs would change),
/// indexes nothing, or an alias is unknown.
pub fn index_sizes(expr: &Expr, aliases: &AliasInfo) -> Option<HashMap<String, u64>> {
    fn walk(expr: &Expr, aliases: &AliasInfo, out: &mut HashMap<String, u64>) -> Option<()> {
        let mut record = |terms: &[IndexTerm], sizes: &[u64]| -> Option<()> {
            if terms.len() != sizes.len() {
                return None;
            }
            for (term, &size) in terms.iter().zip(sizes) {
                if let IndexTerm::Var(v) = term
                    && *out.entry(v.clone()).or_insert(size) != size
                {
                    return None;
                }
            }
            Some(())
        };
        match expr {
            Expr::Input(input) => {
                let sizes: Vec<u64> = input.tensor.tensor.dims().iter().map(|d| d.size).collect();
                record(&input.indices, &sizes)
            }
            Expr::Alias { name, indices } => record(indices, &aliases.get(name)?.1),
            Expr::Map { args, .. } => args.iter().try_for_each(|a| walk(a, aliases, out)),
            Expr::Agg { body, .. } => walk(body, aliases, out),
            Expr::Literal(_) | Expr::Index(_) => Some(()),
        }
    }
    fn names(expr: &Expr, out: &mut Vec<String>) {
        match expr {
            Expr::Agg { indices, body, .. } => {
                out.extend(indices.iter().cloned());
                names(body, out);
            }
            Expr::Map { args, .. } => args.iter().for_each(|a| names(a, out)),
            other => out.extend(other.free_indices()),
        }
    }
    let mut sizes = HashMap::new();
    walk(expr, aliases, &mut sizes)?;
    let mut all = Vec::new();
    names(expr, &mut all);
    all.iter().all(|v| sizes.contains_key(v)).then_some(sizes)
}

/// Adds `expr` to `egraph` (whose context already knows the index sizes)
/// and returns its class.
pub fn add(egraph: &mut Graph, expr: &Expr, aliases: &AliasInfo) -> Id {
    let add_node = |egraph: &mut Graph, node: Sp| egraph.add(node);
    match expr {
        Expr::Literal(v) => add_node(egraph, Sp::Num(Const::of(*v))),
        Expr::Input(_) | Expr::Alias { .. } | Expr::Index(_) => {
            let info = leaf_info(expr, &egraph.analysis, aliases);
            let k = egraph.analysis.leaf(info);
            add_node(egraph, Sp::Leaf(k))
        }
        Expr::Map { op, args } => {
            let ids: Vec<Id> = args.iter().map(|a| add(egraph, a, aliases)).collect();
            map(egraph, *op, ids)
        }
        Expr::Agg { op, indices, body } => {
            let body = add(egraph, body, aliases);
            let vars: Vec<Id> = indices
                .iter()
                .map(|v| egraph.add(Sp::Var(Name::from(v.as_str()))))
                .collect();
            match op {
                AggOp::Sum => vars
                    .into_iter()
                    .rev()
                    .fold(body, |acc, v| egraph.add(Sp::Sum([v, acc]))),
                other => {
                    let mut children = vars;
                    children.push(body);
                    let n = u8::try_from(indices.len()).unwrap_or(u8::MAX);
                    egraph.add(Sp::Op(OpKind::Agg(*other, n), children))
                }
            }
        }
    }
}

/// The class of the map `op` over `args`.
fn map(egraph: &mut Graph, op: ScalarOp, args: Vec<Id>) -> Id {
    let minus_one = |egraph: &mut Graph| egraph.add(Sp::Num(Const::Int(-1)));
    match op {
        ScalarOp::Add | ScalarOp::Mul if args.len() >= 2 => {
            let mut args = args.into_iter();
            let first = args.next().unwrap_or_default();
            args.fold(first, |acc, a| {
                egraph.add(if op == ScalarOp::Add {
                    Sp::Add([acc, a])
                } else {
                    Sp::Mul([acc, a])
                })
            })
        }
        ScalarOp::Sub if args.len() == 2 => {
            let m = minus_one(egraph);
            let negated = egraph.add(Sp::Mul([m, args[1]]));
            egraph.add(Sp::Add([args[0], negated]))
        }
        ScalarOp::Neg if args.len() == 1 => {
            let m = minus_one(egraph);
            egraph.add(Sp::Mul([m, args[0]]))
        }
        ScalarOp::Power if args.len() == 2 => egraph.add(Sp::Pow([args[0], args[1]])),
        other => egraph.add(Sp::Op(OpKind::Map(other), args)),
    }
}

/// The leaf table entry of an input, alias or `coord(i)`.
fn leaf_info(expr: &Expr, ctx: &Context, aliases: &AliasInfo) -> LeafInfo {
    let mut free: Vec<Name> = expr
        .free_indices()
        .iter()
        .map(|v| Name::from(v.as_str()))
        .collect();
    free.sort_unstable();
    let (ty, density) = match expr {
        Expr::Input(input) => {
            let cells: f64 = free.iter().map(|v| ctx.size(*v) as f64).product();
            let nnz = estimate_nnz(&UniformEstimator, expr, &Aliases::<UniformStats>::new())
                .unwrap_or(cells);
            let density = if cells > 0.0 {
                (nnz / cells).clamp(0.0, 1.0)
            } else {
                0.0
            };
            (input.value_type(), density)
        }
        Expr::Alias { name, .. } => (aliases.get(name).map_or(ValueType::Int64, |a| a.0), 1.0),
        _ => (ValueType::Int64, 1.0),
    };
    LeafInfo {
        expr: expr.clone(),
        free,
        ty,
        density,
    }
}

/// The IR expression of an extracted term.
///
/// Errors: a term that is no expression (an index variable where a value
/// belongs), which the rules never make.
pub fn to_expr(term: &RecExpr<Sp>, ctx: &Context) -> Result<Expr> {
    Back { term, ctx }.expr(term.root())
}

struct Back<'a> {
    term: &'a RecExpr<Sp>,
    ctx: &'a Context,
}

impl Back<'_> {
    fn node(&self, id: Id) -> &Sp {
        &self.term[id]
    }

    fn var(&self, id: Id) -> Result<String> {
        match self.node(id) {
            Sp::Var(v) => Ok(v.as_str().to_string()),
            other => Err(Error::Internal(format!(
                "saturate: {other} where an index variable belongs"
            ))),
        }
    }

    /// The terms of a sum, flattened.
    fn terms(&self, id: Id, out: &mut Vec<Id>) {
        match self.node(id) {
            Sp::Add([a, b]) => {
                self.terms(*a, out);
                self.terms(*b, out);
            }
            _ => out.push(id),
        }
    }

    /// The factors of a product, flattened.
    fn factors(&self, id: Id, out: &mut Vec<Id>) {
        match self.node(id) {
            Sp::Mul([a, b]) => {
                self.factors(*a, out);
                self.factors(*b, out);
            }
            _ => out.push(id),
        }
    }

    /// The expression at `id` as a sign and what it negates: `(true, x)`
    /// for a product with the factor `-1` (`x` the other factors) and for
    /// a sum over one (`x` the sum without it).
    fn signed(&self, id: Id) -> Result<(bool, Expr)> {
        match self.node(id) {
            Sp::Mul(_) => {
                let mut ids = Vec::new();
                self.factors(id, &mut ids);
                let mut negative = false;
                let mut factors = Vec::new();
                let mut constants = Vec::new();
                for f in ids {
                    match self.node(f) {
                        // A negative constant is a negation of its absolute
                        // value (of the same type).
                        Sp::Num(c) if c.value().compare(Value::Int(0)) == Some(Ordering::Less) => {
                            negative = !negative;
                            let magnitude = match c.value() {
                                Value::Int(i) => i.checked_neg().map(Value::Int),
                                Value::Huge(h) => h.get().checked_neg().map(Value::huge),
                                Value::Float(x) => Some(Value::Float(-x)),
                                Value::Bool(_) => None,
                            };
                            match magnitude {
                                Some(m)
                                    if !m.same(Value::Int(1))
                                        || m.value_type() != ValueType::Int64 =>
                                {
                                    constants.push(Expr::Literal(m));
                                }
                                Some(_) => {}
                                None => {
                                    negative = !negative;
                                    constants.push(Expr::Literal(c.value()));
                                }
                            }
                        }
                        Sp::Num(c) => constants.push(Expr::Literal(c.value())),
                        _ => {
                            let (sign, factor) = self.signed(f)?;
                            negative ^= sign;
                            factors.push(factor);
                        }
                    }
                }
                // Constants first: `2 * x`.
                constants.extend(factors);
                let mut factors = constants;
                if factors.is_empty() {
                    let one = if negative { -1 } else { 1 };
                    return Ok((false, Expr::Literal(Value::Int(one))));
                }
                // A factor 1 goes where the product keeps its type without
                // it (`x * 1` for a float x).
                let ty = value_type(&Expr::product(factors.clone()), self.ctx);
                let others: Vec<Expr> = factors
                    .iter()
                    .filter(|f| !matches!(f, Expr::Literal(v) if v.same(Value::Int(1))))
                    .cloned()
                    .collect();
                if !others.is_empty()
                    && others.len() < factors.len()
                    && value_type(&Expr::product(others.clone()), self.ctx) == ty
                {
                    factors = others;
                }
                Ok((negative, Expr::product(factors)))
            }
            Sp::Sum(_) => {
                let mut indices = Vec::new();
                let mut at = id;
                while let Sp::Sum([v, body]) = self.node(at) {
                    indices.push(self.var(*v)?);
                    at = *body;
                }
                let (negative, body) = self.signed(at)?;
                let free = body.free_indices();
                let (kept, absent): (Vec<String>, Vec<String>) =
                    indices.into_iter().partition(|v| free.contains(v));
                let copies: u64 = absent
                    .iter()
                    .map(|v| self.ctx.size(Name::from(v.as_str())))
                    .product();
                let summed = Expr::sum(kept, body);
                if absent.is_empty() {
                    return Ok((negative, summed));
                }
                // An integer count keeps the sum's type (SUM of booleans
                // counts them).
                let count = Value::Int(i64::try_from(copies).unwrap_or(i64::MAX));
                Ok((
                    negative,
                    Expr::map(ScalarOp::Mul, vec![summed, Expr::Literal(count)]),
                ))
            }
            Sp::Add(_) => {
                let mut ids = Vec::new();
                self.terms(id, &mut ids);
                // Equal terms of one sign count once, times their number
                // (a + a = 2·a).
                let mut counted: Vec<(bool, Expr, i64)> = Vec::new();
                for t in ids {
                    let (negative, term) = self.signed(t)?;
                    match counted
                        .iter_mut()
                        .find(|(n, e, _)| *n == negative && *e == term)
                    {
                        Some(known) => known.2 += 1,
                        None => counted.push((negative, term, 1)),
                    }
                }
                let mut plus = Vec::new();
                let mut minus = Vec::new();
                for (negative, term, count) in counted {
                    let term = if count == 1 {
                        term
                    } else {
                        Expr::map(ScalarOp::Mul, vec![Expr::Literal(Value::Int(count)), term])
                    };
                    if negative {
                        minus.push(term);
                    } else {
                        plus.push(term);
                    }
                }
                let mut minus = minus.into_iter();
                let mut total = match plus.len() {
                    0 => {
                        let first = minus
                            .next()
                            .ok_or_else(|| Error::Internal("saturate: an empty sum".to_string()))?;
                        Expr::map(ScalarOp::Neg, vec![first])
                    }
                    1 => plus.remove(0),
                    _ => Expr::map(ScalarOp::Add, plus),
                };
                for m in minus {
                    total = Expr::map(ScalarOp::Sub, vec![total, m]);
                }
                Ok((false, total))
            }
            _ => Ok((false, self.plain(id)?)),
        }
    }

    fn expr(&self, id: Id) -> Result<Expr> {
        let (negative, expr) = self.signed(id)?;
        Ok(if negative {
            Expr::map(ScalarOp::Neg, vec![expr])
        } else {
            expr
        })
    }

    /// A node other than `+`, `*` and `sum`.
    fn plain(&self, id: Id) -> Result<Expr> {
        Ok(match self.node(id) {
            Sp::Num(c) => Expr::Literal(c.value()),
            Sp::Leaf(k) => self
                .ctx
                .leaves
                .get(k.0 as usize)
                .map(|l| l.expr.clone())
                .ok_or_else(|| Error::Internal(format!("saturate: no leaf {k}")))?,
            Sp::Var(v) => {
                return Err(Error::Internal(format!(
                    "saturate: the index {v} where a value belongs"
                )));
            }
            Sp::Add(_) | Sp::Mul(_) | Sp::Sum(_) => self.expr(id)?,
            Sp::Pow([a, b]) => Expr::Map {
                op: ScalarOp::Power,
                args: vec![self.expr(*a)?, self.expr(*b)?],
            },
            Sp::Op(OpKind::Map(op), args) => {
                let args = args
                    .iter()
                    .map(|a| self.expr(*a))
                    .collect::<Result<Vec<_>>>()?;
                Expr::map(*op, args)
            }
            Sp::Op(OpKind::Agg(op, _), args) => {
                let (body, vars) = args
                    .split_last()
                    .ok_or_else(|| Error::Internal("saturate: an empty aggregate".to_string()))?;
                Expr::Agg {
                    op: *op,
                    indices: vars.iter().map(|v| self.var(*v)).collect::<Result<_>>()?,
                    body: Box::new(self.expr(*body)?),
                }
            }
        })
    }
}

/// The value type of `expr`, whose aliases are leaves of `ctx`.
fn value_type(expr: &Expr, ctx: &Context) -> ValueType {
    expr.value_type(&|name| {
        ctx.leaves.iter().find_map(|l| match &l.expr {
            Expr::Alias { name: n, .. } if n == name => Some(l.ty),
            _ => None,
        })
    })
}
