//! The `mask` phase: sparse-driven nested aggregates (SystemML's Outer
//! template). A product annihilated by a sparse factor needs a nested
//! aggregate under a pointwise map only where that factor is stored:
//!
//! ```text
//! SUM(i,j) X[i,j] * ln((SUM(k) U[i,k] * V[j,k]) + 1e-15)
//! SUM(i,j) X[i,j] * ln((SUM(k) X.*[i,j] * U[i,k] * V[j,k]) + 1e-15)
//! ```
//!
//! The nested `SUM(k)` cannot be lifted out of `ln`, so without this phase
//! it is computed over every `(i, j)` (a dense `m × n` intermediate for
//! dense `U`, `V`), although the product reads it only where `X` is
//! stored. With `X`'s row indicator (`X.*`, 1 at every stored coordinate)
//! as a factor of the aggregate's body, its loop nest is driven by `X`:
//! `nnz(X) · k` work instead of `m · n · k`.
//!
//! The rewrite is sound for any map whose operator a stored input's fill
//! (0) annihilates, as its [`Annihilator`](crate::ir::Annihilator)
//! declares (`*`, `AND`, `/` in its first argument), and for any
//! aggregate: where the indicator is 1 the body's values are unchanged
//! (`1` is `*`'s identity), and where it is absent the aggregate's value
//! is read only where the input annihilates the map. An input qualifies
//! when it is stored in a keyed table (a bag's multiplicity is no
//! indicator), stands at an annihilating position of the map, and every
//! variable it reads is free in the aggregate (none is bound by an
//! aggregate between the two). The phase decides by estimate: it adds the indicators
//! when the masked aggregate is estimated to have at most half the entries
//! of the unmasked one (a dense `X` masks nothing and is left out).

use crate::ir::{Annotation, Expr, Input, Program, ScalarOp};
use crate::storage::ValueType;

use super::estimate::{Aliases, SparsityEstimator, estimate_nnz};

/// How much smaller the masked aggregate must be estimated to be for the
/// mask to be added.
const MIN_GAIN: f64 = 2.0;

/// The `mask` phase over every query of `program` (see the module
/// documentation), in place; a query without an aggregate under a map
/// (every subgraph count) is left as it is without being copied.
pub fn mask_program<E: SparsityEstimator>(estimator: &E, program: &mut Program) {
    let masker = Masker { estimator };
    for query in &mut program.queries {
        if aggregate_under_map(&query.expr, false) {
            query.expr = masker.rewrite(&query.expr, &[]);
        }
    }
}

/// Whether `expr` has an aggregate under a map (`under_map`: `expr` is an
/// argument of one): the only place a mask can go.
fn aggregate_under_map(expr: &Expr, under_map: bool) -> bool {
    match expr {
        Expr::Map { args, .. } => args.iter().any(|a| aggregate_under_map(a, true)),
        Expr::Agg { body, .. } => under_map || aggregate_under_map(body, false),
        _ => false,
    }
}

struct Masker<'a, E: SparsityEstimator> {
    estimator: &'a E,
}

impl<E: SparsityEstimator> Masker<'_, E> {
    /// `expr` with its nested aggregates masked by `masks`, the indicator
    /// inputs of the products around it whose variables are still free
    /// here, and by the products within it.
    fn rewrite(&self, expr: &Expr, masks: &[Input]) -> Expr {
        match expr {
            Expr::Map { op, args } => {
                // The stored inputs where a 0 annihilates the map mask
                // every argument (as do the masks from outside).
                let mut inner: Vec<Input> = masks.to_vec();
                if let Some(a) = op.algebra().annihilator.filter(|a| a.value.is_zero()) {
                    let annihilating = if a.only_first {
                        args.get(..1).unwrap_or(&[])
                    } else {
                        &args[..]
                    };
                    inner.extend(annihilating.iter().filter_map(indicator));
                }
                Expr::Map {
                    op: *op,
                    args: args.iter().map(|a| self.rewrite(a, &inner)).collect(),
                }
            }
            Expr::Agg { op, indices, body } => {
                // A mask reading an index this aggregate binds refers to
                // another variable of that name: it does not apply inside.
                let outside: Vec<Input> = masks
                    .iter()
                    .filter(|m| !reads_any(m, indices))
                    .cloned()
                    .collect();
                // Inside, the masks still hold: the aggregate's value is
                // read only where they are stored.
                let body = self.rewrite(body, &outside);
                let agg = Expr::Agg {
                    op: *op,
                    indices: indices.clone(),
                    body: Box::new(body),
                };
                self.masked_agg(agg, &outside)
            }
            other => other.clone(),
        }
    }

    /// `agg` with the indicators of `masks` whose variables are all free
    /// in it as factors of its body, when that is estimated to pay.
    fn masked_agg(&self, agg: Expr, masks: &[Input]) -> Expr {
        let free = agg.free_indices();
        let applicable: Vec<Expr> = masks
            .iter()
            .filter(|m| {
                let vars = vars_of(m);
                !vars.is_empty() && vars.iter().all(|v| free.contains(v))
            })
            .map(|m| Expr::Input(m.clone()))
            .collect();
        let Expr::Agg { op, indices, body } = &agg else {
            return agg;
        };
        if applicable.is_empty() || !numeric(body) {
            return agg;
        }
        let mut factors = applicable;
        factors.push((**body).clone());
        let masked = Expr::Agg {
            op: *op,
            indices: indices.clone(),
            body: Box::new(Expr::map(ScalarOp::Mul, factors)),
        };
        if self.pays(&agg, &masked) {
            masked
        } else {
            agg
        }
    }

    /// Whether `masked` is estimated to have at most a [`MIN_GAIN`]th of
    /// `agg`'s entries (no: when either cannot be estimated, as with an
    /// earlier query's result inside).
    fn pays(&self, agg: &Expr, masked: &Expr) -> bool {
        let aliases = Aliases::default();
        let before = estimate_nnz(self.estimator, agg, &aliases);
        let after = estimate_nnz(self.estimator, masked, &aliases);
        matches!((before, after), (Ok(b), Ok(a)) if a * MIN_GAIN <= b)
    }
}

/// The indicator of a factor that can mask: a stored input of a keyed
/// table (its rows' indicator, `X.*`, 1 wherever a row is stored).
fn indicator(factor: &Expr) -> Option<Input> {
    let Expr::Input(input) = factor else {
        return None;
    };
    if input.tensor.tensor.is_bag() || vars_of(input).is_empty() {
        return None;
    }
    Some(Input {
        annotation: Annotation::Multiplicity,
        ..input.clone()
    })
}

fn vars_of(input: &Input) -> Vec<String> {
    Expr::Input(input.clone()).free_indices()
}

fn reads_any(input: &Input, names: &[String]) -> bool {
    vars_of(input).iter().any(|v| names.contains(v))
}

/// Whether `body`'s values are numbers (a boolean body times the
/// indicator would become an integer).
fn numeric(body: &Expr) -> bool {
    matches!(
        body.value_type(&|_| None),
        ValueType::Int64 | ValueType::Float64
    )
}
