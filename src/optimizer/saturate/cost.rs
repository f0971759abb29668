//! The cost functions that extract candidates from a saturated e-graph
//! (greedily, bottom-up: SPORES found the greedy extractor as good as its
//! ILP).
//!
//! - [`Sparsity`] is SPORES' cost: every operator costs the estimated
//!   non-zeros of its result (the class's [`Data::nnz`]), leaves nothing.
//!   It prefers the forms whose intermediates stay sparse: `X ⊙ (U Vᵀ)`
//!   driven by `X` rather than the dense `U Vᵀ`, factored forms where the
//!   factors are small.
//! - [`Expanded`] first counts the sums of terms that stand under a
//!   product, an aggregate or a map (SPORES' canonical form, a sum of
//!   sum-products, has none), then the sparsity cost: it extracts the
//!   most distributed form the saturation found, whose every term is a
//!   sum-product that variable elimination plans on its own (the squared
//!   loss `SUM((X − UVᵀ)²)` as `SUM(X²) − 2·SUM(X ⊙ UVᵀ) + SUM(UᵀU ⊙ VᵀV)`).
//!
//! [`Data::nnz`]: super::analysis::Data::nnz

use std::cmp::Ordering;

use egg::{CostFunction, Id, Language};

use super::analysis::Graph;
use super::lang::Sp;

/// The estimated non-zeros of the class of `enode`, plus one for the
/// operator (so that of equal estimates the smaller expression wins: a
/// folded constant over the sum it folds); 0 for leaves.
fn local(egraph: &Graph, enode: &Sp) -> f64 {
    match enode {
        Sp::Num(_) | Sp::Leaf(_) | Sp::Var(_) => 0.0,
        other => egraph
            .lookup(other.clone())
            .map_or(f64::MAX, |id| 1.0 + egraph[id].data.nnz()),
    }
}

/// SPORES' cost: the estimated non-zeros of every operator's result.
pub struct Sparsity<'a> {
    /// The saturated e-graph.
    pub egraph: &'a Graph,
}

impl CostFunction<Sp> for Sparsity<'_> {
    type Cost = f64;

    fn cost<C>(&mut self, enode: &Sp, mut costs: C) -> f64
    where
        C: FnMut(Id) -> f64,
    {
        let own = local(self.egraph, enode);
        enode
            .children()
            .iter()
            .fold(own, |total, c| total + costs(*c))
            .min(f64::MAX)
    }
}

/// The cost of [`Expanded`]: sums of terms under other operators, then
/// the sparsity cost; whether the expression is itself a sum of terms.
#[derive(Clone, Copy, Debug)]
pub struct ExpandedCost {
    nested_sums: u32,
    sparsity: f64,
    is_sum: bool,
}

impl PartialEq for ExpandedCost {
    fn eq(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

impl PartialOrd for ExpandedCost {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(
            self.nested_sums
                .cmp(&other.nested_sums)
                .then(self.sparsity.total_cmp(&other.sparsity)),
        )
    }
}

/// The most distributed form (see the module documentation).
pub struct Expanded<'a> {
    /// The saturated e-graph.
    pub egraph: &'a Graph,
}

impl CostFunction<Sp> for Expanded<'_> {
    type Cost = ExpandedCost;

    fn cost<C>(&mut self, enode: &Sp, mut costs: C) -> ExpandedCost
    where
        C: FnMut(Id) -> ExpandedCost,
    {
        let own = local(self.egraph, enode);
        let is_sum = matches!(enode, Sp::Add(_));
        let mut total = ExpandedCost {
            nested_sums: 0,
            sparsity: own,
            is_sum,
        };
        for &child in enode.children() {
            let c = costs(child);
            total.nested_sums = total
                .nested_sums
                .saturating_add(c.nested_sums)
                .saturating_add(u32::from(c.is_sum && !is_sum));
            total.sparsity = (total.sparsity + c.sparsity).min(f64::MAX);
        }
        total
    }
}
