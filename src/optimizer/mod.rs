//! The cost-based optimizer (Galley sections 5–7): [`optimize`] turns an IR
//! program into the physical plan the executor runs.
//!
//! [`logical`] normalizes each query, has [`reduce`] shrink the stored
//! inputs of its products by their one-variable factors (a semijoin
//! reduction that reads the data, timed separately), and searches
//! elimination orders, rewriting sums over products into a sequence of
//! aggregation steps;
//! [`physical`] chooses each step's loop order and output formats while
//! the executor's planner builds the plan. Both compare candidates by
//! estimated non-zeros, from the estimator [`SET estimator`](EstimatorKind)
//! selects; [`SET optimizer`](Search) selects the search.
//!
//! # Sparsity estimation
//!
//! The optimizer compares plans by how many non-zeros their intermediates
//! will have. [`estimate`] defines what an estimator is (the five
//! functions of Galley 7.2, [`SparsityEstimator`]) and folds one over an IR
//! expression ([`estimate_expr`]); [`uniform`] assumes uniformly spread
//! entries (7.3.1); [`chain`] propagates the stored degree statistics and
//! bounds every intermediate from above with the chain bound (7.3.2), whose
//! search over the lattice of index sets lives in [`lattice`].
//!
//! # How the optimizer calls it
//!
//! To cost a candidate sub-expression (a minimal sub-expression while
//! searching elimination orders, or the body of one aggregation step), ask
//! for the statistics of that expression and estimate them:
//!
//! ```
//! use einsql::Database;
//! use einsql::ir::{AggOp, Expr, IndexTerm, Input, Annotation, TensorRef};
//! use einsql::optimizer::{ChainEstimator, SparsityEstimator, UniformEstimator, estimate_expr};
//!
//! let db = Database::open_in_memory();
//! db.execute("CREATE TABLE e (s INT, d INT, PRIMARY KEY (s, d))")?;
//! db.execute("INSERT INTO e VALUES (0, 1), (1, 2), (0, 2), (2, 0)")?;
//! let e = TensorRef { name: "e".into(), tensor: db.table("e")? };
//! let edge = |a: &str, b: &str| Expr::Input(Input {
//!     tensor: e.clone(),
//!     annotation: Annotation::Multiplicity,
//!     indices: vec![IndexTerm::Var(a.into()), IndexTerm::Var(b.into())],
//! });
//! // Paths of length two, i -> j -> k, with j summed away.
//! let paths = Expr::Agg {
//!     op: AggOp::Sum,
//!     indices: vec!["j".into()],
//!     body: Box::new(Expr::map(einsql::ir::ScalarOp::Mul, vec![edge("i", "j"), edge("j", "k")])),
//! };
//! let chain = ChainEstimator::default();
//! let stats = estimate_expr(&chain, &paths, &Default::default())?;
//! // The chain bound: 4 edges, each followed by at most 2 out-edges.
//! assert_eq!(chain.estimate(&stats), 8.0);
//! let uniform = UniformEstimator;
//! let guess = uniform.estimate(&estimate_expr(&uniform, &paths, &Default::default())?);
//! assert!(guess > 0.0 && guess < 9.0);
//! # Ok::<(), einsql::Error>(())
//! ```
//!
//! Statistics compose: the optimizer may keep the statistics of an
//! intermediate it plans to materialize and hand them to later queries as
//! [`AliasSource::Estimated`], so that an `Alias` of that result is
//! estimated from them. The chain bound is an upper bound on the number of
//! entries of every sub-expression; the uniform estimate is a guess that
//! can be far off on skewed data (Galley figure 10). Both are cheap: the
//! uniform estimator is constant time per node; the chain bound's lattice
//! search is bounded by [`ChainEstimator::budget`] expanded sets per
//! estimate (a valid, possibly looser bound when the budget runs out).

pub mod chain;
pub mod estimate;
pub mod lattice;
pub mod logical;
pub mod physical;
pub mod reduce;
pub mod uniform;

use std::time::{Duration, Instant};

pub use chain::{ChainEstimator, ChainStats};
pub use estimate::{
    AliasSource, Aliases, Leaf, SparsityEstimator, estimate_expr, estimate_nnz, estimate_with_fill,
};
pub use logical::Search;
pub use reduce::{FilterColumn, KeyConstant, Reduction};
pub use uniform::{UniformEstimator, UniformStats};

use crate::error::Result;
use crate::exec::PhysicalPlan;
use crate::exec::planner::{PlanChoices, plan_by, plan_with};
use crate::ir::Program;
use physical::PhysicalOptimizer;
use reduce::Reducer;

/// Which sparsity estimator the optimizer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EstimatorKind {
    /// Uniformly spread entries (Galley 7.3.1).
    Uniform,
    /// Degree statistics and the chain bound (Galley 7.3.2), the default.
    Chain,
}

impl EstimatorKind {
    /// The name `SET estimator` takes.
    pub fn name(self) -> &'static str {
        match self {
            EstimatorKind::Uniform => "uniform",
            EstimatorKind::Chain => "chain",
        }
    }
}

/// What the optimizer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptimizerOptions {
    /// The sparsity estimator.
    pub estimator: EstimatorKind,
    /// The search over elimination orders.
    pub search: Search,
    /// Whether products' stored inputs are first reduced by their
    /// one-variable factors ([`reduce`]); not with [`Search::None`].
    pub semijoin: bool,
}

impl Default for OptimizerOptions {
    /// The chain bound with the exact search.
    fn default() -> Self {
        OptimizerOptions {
            estimator: EstimatorKind::Chain,
            search: Search::Exact,
            semijoin: true,
        }
    }
}

/// An optimized program: the logical plan, the physical plan and what the
/// optimization took.
#[derive(Clone, Debug)]
pub struct Optimized {
    /// The logical plan: the aggregation steps (intermediates named `#e1`,
    /// ...) and the rewritten queries.
    pub logical: Program,
    /// The estimated number of entries of every query of `logical` (NaN
    /// when not estimated, as with `SET optimizer = 'none'`).
    pub estimates: Vec<f64>,
    /// The plan the executor runs.
    pub plan: PhysicalPlan,
    /// The estimated cost of the logical plan (see [`logical`]).
    pub cost: f64,
    /// The inputs the semijoin reduction replaced, in order.
    pub reductions: Vec<Reduction>,
    /// The filters the reductions made redundant, left out of their
    /// products (see [`reduce::Reducer::reduce`]).
    pub absorbed: Vec<String>,
    /// How long the optimization took, the reductions included.
    pub time: Duration,
    /// How long the semijoin reductions took.
    pub reduce_time: Duration,
    /// The options it ran with.
    pub options: OptimizerOptions,
}

/// Optimizes `program` into a physical plan (see the module documentation).
///
/// Errors: what planning reports for the program (unknown aliases, index
/// counts that do not fit the tensors, ...).
pub fn optimize(program: &Program, options: &OptimizerOptions) -> Result<Optimized> {
    let start = Instant::now();
    let planned = match (options.search, options.estimator) {
        (Search::None, _) => {
            let choices = PlanChoices {
                eliminate: false,
                ..PlanChoices::default()
            };
            let plan = plan_with(program, &choices)?;
            Planned {
                logical: program.clone(),
                estimates: vec![f64::NAN; program.queries.len()],
                plan,
                cost: f64::NAN,
                reducer: Reducer::default(),
            }
        }
        (_, EstimatorKind::Chain) => with(&ChainEstimator::default(), program, options)?,
        (_, EstimatorKind::Uniform) => with(&UniformEstimator, program, options)?,
    };
    Ok(Optimized {
        logical: planned.logical,
        estimates: planned.estimates,
        plan: planned.plan,
        cost: planned.cost,
        reductions: planned.reducer.reductions,
        absorbed: planned.reducer.absorbed,
        time: start.elapsed(),
        reduce_time: planned.reducer.time,
        options: *options,
    })
}

/// What [`with`] plans.
struct Planned {
    logical: Program,
    estimates: Vec<f64>,
    plan: PhysicalPlan,
    cost: f64,
    reducer: Reducer,
}

fn with<E: SparsityEstimator>(
    estimator: &E,
    program: &Program,
    options: &OptimizerOptions,
) -> Result<Planned> {
    let reducer = options.semijoin.then(Reducer::default);
    let logical = logical::optimize(estimator, program, options.search, reducer)?;
    let mut chooser = PhysicalOptimizer::new(estimator, &logical.stats);
    let plan = plan_by(&logical.program, &logical.intermediates, &mut chooser)?;
    Ok(Planned {
        logical: logical.program,
        estimates: logical.estimates,
        plan,
        cost: logical.cost,
        reducer: logical.reducer.unwrap_or_default(),
    })
}
