//! The cost-based optimizer (Galley sections 5–7): [`optimize`] turns an IR
//! program into the physical plan the executor runs.
//!
//! The optimizer is a driver over named [phases](Phase), run in pipeline
//! order, each a separate pass over the program, timed, and each one that
//! [`OptimizerOptions::disabled`] names left out:
//!
//! | phase | what it does |
//! |---|---|
//! | `normalize` | unique bound names, flat products, sums lifted out of products ([`logical::normalize`]) |
//! | `saturate` | algebraic rewrites by equality saturation (SPORES), kept where the later phases estimate them cheaper ([`saturate`]) |
//! | `mask` | nested aggregates under maps computed only where an annihilating stored input around them is stored (SystemML's Outer, [`mask`]) |
//! | `symmetry` | sums over interchangeable variables of a symmetric input counted once per set of values, in degree order, and multiplied by the number of orders ([`symmetry`]; it reads the data) |
//! | `semijoin` | stored inputs of products shrunk by their one-variable factors ([`reduce`]; it reads the data) |
//! | `eliminate` | elimination orders searched, sums over products rewritten into aggregation steps ([`logical::eliminate`]) |
//! | `distribute` | products of sums planned distributed when cheaper (within `eliminate`, see [`logical`]) |
//! | `cse` | equal steps computed once ([`logical::cse`]) |
//! | `physical` | each query's loop order and output formats ([`physical`]), while the executor's planner builds the plan |
//! | `factorize` | loop nests of sums of products made trees, independent subtrees' sums multiplied, a repeated sibling taken once (within `physical`, timed apart: the costing of the trees) |
//! | `dense` | matrix products of operands that fill most of their cells run as one dense kernel where estimated cheaper (within `physical`, timed apart) |
//! | `fuse` | consecutive sparse-driven queries over the same driver run as one pass, a row sum that only the next reads kept row-local (SystemML's MAgg and Row, [`fuse`]); an element-wise map of a query's result applied as that query stores it |
//!
//! The phases compare candidates by estimated non-zeros, from the
//! estimator [`SET estimator`](EstimatorKind) selects; [`SET
//! optimizer`](Search) selects the elimination search (`none` runs no
//! phase). In debug builds the program is checked after each phase
//! ([`check`]): a phase that leaves a program that no longer binds is
//! reported as an internal error naming it.
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
pub mod check;
pub mod estimate;
pub mod fuse;
pub mod lattice;
pub mod logical;
pub mod mask;
pub mod phase;
pub mod physical;
pub mod reduce;
pub mod saturate;
pub mod symmetry;
pub mod uniform;

use std::time::{Duration, Instant};

pub use chain::{ChainEstimator, ChainStats};
pub use estimate::{
    AliasSource, Aliases, Leaf, SparsityEstimator, estimate_expr, estimate_nnz, estimate_with_fill,
};
pub use logical::Search;
pub use phase::{Phase, PhaseSet, PhaseTime};
pub use reduce::{FilterColumn, KeyConstant, Reduction};
pub use saturate::Rewritten;
pub use symmetry::{Broken, Orientation};
pub use uniform::{UniformEstimator, UniformStats};

use crate::error::Result;
use crate::exec::planner::{InOrder, PlanChoices, plan_by};
use crate::exec::{PhysicalPlan, StepGuards, default_memory_limit};
use crate::ir::{Expr, Program, Query};
use logical::LogicalPlan;
use physical::PhysicalOptimizer;
use reduce::Reducer;
use symmetry::Breaker;

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
    /// The search over elimination orders; [`Search::None`] runs no phase.
    pub search: Search,
    /// The phases left out (see [`optimize`]); what was `SET semijoin =
    /// false` is [`Phase::Semijoin`] disabled.
    pub disabled: PhaseSet,
    /// The memory a statement may take (`SET memory_limit`): an
    /// elimination step whose estimated entries would need more, once an
    /// upper bound is taken to overstate them, is never taken, as the
    /// loop nest that would read it computes the same without writing it
    /// ([`logical::step_fits`]); one taken that needs more stops at its
    /// guard and the statement is planned again.
    pub memory_limit: u64,
    /// An elimination step estimated to write this many entries or more
    /// is never taken ([`logical::MAX_STEP_ENTRIES`] by default). A
    /// statement planned again because a step outgrew its estimate
    /// ([`Optimized::step_guards`]) lowers it to that step's estimate.
    pub max_step_entries: u64,
    /// Whether the `trivial` phase also keeps sums over sparse inputs
    /// whose bound is below [`logical::SMALL_NEST`] as written, their
    /// loops guarded
    /// ([`Optimized::step_guards`]). A statement planned again because
    /// such a loop nest outgrew its guard turns it off.
    pub small_nests: bool,
}

impl OptimizerOptions {
    /// Whether `phase` runs: it is not among the disabled ones.
    pub fn runs(&self, phase: Phase) -> bool {
        !self.disabled.contains(phase)
    }
}

impl Default for OptimizerOptions {
    /// The chain bound with the exact search and every phase.
    fn default() -> Self {
        OptimizerOptions {
            estimator: EstimatorKind::Chain,
            search: Search::Exact,
            disabled: PhaseSet::EMPTY,
            memory_limit: default_memory_limit(),
            max_step_entries: logical::MAX_STEP_ENTRIES,
            small_nests: true,
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
    /// The names of the elimination steps among `logical`'s queries.
    pub steps: Vec<String>,
    /// The plan the executor runs.
    pub plan: PhysicalPlan,
    /// The estimated cost of the logical plan (see [`logical`]; NaN
    /// without the `eliminate` phase).
    pub cost: f64,
    /// The sums the `trivial` phase kept as written, estimated cheaper to
    /// run than to search ([`logical::kept_as_written`]).
    pub trivial: usize,
    /// The queries whose loops run under a guard on what they visit: a
    /// sum of each was kept as written for [`logical::SMALL_NEST`] alone.
    pub guarded: Vec<String>,
    /// The inputs the semijoin reduction replaced, in order.
    pub reductions: Vec<Reduction>,
    /// The filters the reductions made redundant, left out of their
    /// products (see [`reduce::Reducer::reduce`]).
    pub absorbed: Vec<Expr>,
    /// The orientations of symmetric inputs the `symmetry` phase made the
    /// plan read, in order.
    pub orientations: Vec<Orientation>,
    /// The sums the `symmetry` phase rewrote, innermost first.
    pub broken: Vec<Broken>,
    /// The queries the `saturate` phase rewrote, as they were and as they
    /// run (normalized), in order.
    pub rewritten: Vec<Rewritten>,
    /// How long the optimization took, every phase included.
    pub time: Duration,
    /// How long the semijoin reductions took: the `semijoin` phase's time.
    pub reduce_time: Duration,
    /// Every phase in pipeline order ([`Phase::ALL`]) with its time, the
    /// skipped ones marked so (with zero time).
    pub phases: Vec<PhaseTime>,
    /// The options it ran with.
    pub options: OptimizerOptions,
}

/// How many times the memory its estimated entries need
/// ([`logical::step_bytes`]) an elimination step may charge before the
/// statement is planned again without it ([`Optimized::step_guards`]).
pub const REPLAN_FACTOR: f64 = 16.0;

/// The least memory a step's guard allows: a step that fits in it runs on
/// whatever its estimate said, as planning again would cost more than it
/// could save.
pub const REPLAN_FLOOR: u64 = 256 << 20;

impl Optimized {
    /// The guards of the plan's elimination steps ([`StepGuards`]): each
    /// may charge [`REPLAN_FACTOR`] times the memory its estimated entries
    /// need, and at least [`REPLAN_FLOOR`]. A step that charges more (its
    /// estimate was orders of magnitude low) or meets the memory limit
    /// stops, and the caller plans the statement again with
    /// [`OptimizerOptions::max_step_entries`] lowered to that step's
    /// estimate ([`Optimized::step_estimate`]), so no step estimated as
    /// large is taken again. A step estimated at the cap or above has no
    /// guard: the plan took it because it cannot do without it (a sum of
    /// a distributed product, which is computed on its own), so planning
    /// again would take it again.
    ///
    /// A step whose estimated entries need more than the memory limit,
    /// taken because a bound is taken to overstate them
    /// ([`logical::step_fits`]), may charge only what that assumption
    /// allows: its estimate's memory divided by
    /// [`crate::exec::WORK_OVERESTIMATE`], and at least [`REPLAN_FLOOR`].
    /// Where the bound was close, the step stops early and the statement
    /// is planned without it, rather than build a step that fills the
    /// memory limit.
    ///
    /// Each query holding a sum kept as written for
    /// [`logical::SMALL_NEST`] alone ([`Optimized::guarded`]) may visit
    /// [`logical::NEST_VISITS`] assignments; past them it stops, and the
    /// caller plans the statement again with
    /// [`OptimizerOptions::small_nests`] off.
    pub fn step_guards(&self) -> StepGuards {
        let mut guards = StepGuards::default();
        let cap = self.options.max_step_entries as f64;
        for query in &self.plan.queries {
            if let Some(estimate) = self.step_estimate(&query.name).filter(|&e| e < cap) {
                let needs = logical::step_bytes(estimate, query.output.len());
                let bytes = if needs > self.options.memory_limit as f64 {
                    needs / crate::exec::WORK_OVERESTIMATE
                } else {
                    REPLAN_FACTOR * needs
                };
                guards.insert(query.name.clone(), (bytes as u64).max(REPLAN_FLOOR));
            }
        }
        for name in &self.guarded {
            guards.insert_visits(name.clone(), logical::NEST_VISITS);
        }
        guards
    }

    /// The estimated entries of elimination step `name`, if it is one and
    /// was estimated.
    pub fn step_estimate(&self, name: &str) -> Option<f64> {
        if !self.steps.iter().any(|s| s == name) {
            return None;
        }
        let k = self.logical.queries.iter().position(|q| q.name == name)?;
        self.estimates.get(k).copied().filter(|e| e.is_finite())
    }
}

/// Optimizes `program` into a physical plan (see the module
/// documentation), running every phase of [`Phase::ALL`] in order except
/// those `options.disabled` names. Each phase keeps the program's meaning,
/// so any set of them may be disabled and the results stay the same:
///
/// - without `normalize`, sums are searched as written (a `SUM` inside a
///   product is planned on its own instead of with the product);
/// - without `saturate`, the queries keep the algebraic form they were
///   written in (no factoring, no expansion of powers and differences);
/// - without `mask`, a nested aggregate under a map is computed over its
///   whole domain;
/// - without `semijoin`, the stored inputs are estimated and read whole;
/// - without `eliminate`, the program is planned as written (no
///   aggregation steps), and `distribute` and `cse`, which work on the
///   steps of the elimination, are skipped too; the `physical` phase then
///   estimates the queries as written;
/// - without `distribute` or `cse`, products of sums stay as written and
///   equal steps are computed each;
/// - without `trivial`, every sum and loop nest is searched, however
///   little it is estimated to cost as written; it is skipped when
///   neither `eliminate` nor `physical`, whose searches it skips, runs,
///   and with an estimator whose estimates are not upper bounds;
/// - without `physical`, the planner's default loop orders and formats
///   are used ([`PlanChoices`]), and `factorize` and `dense`, which work
///   on them, are skipped too;
/// - without `factorize`, every loop nest is a path: each loop runs
///   inside all the loops before it;
/// - without `dense`, every query runs as its loop nest, matrix products
///   of dense operands included;
/// - without `fuse`, every query makes its own pass and stores its
///   result; `fuse` needs `physical`, which chooses the sparse-driven
///   queries it fuses.
///
/// With [`Search::None`] no phase runs: the program is planned as written
/// with the default choices.
///
/// Errors: what planning reports for the program (unknown aliases, index
/// counts that do not fit the tensors, ...); in debug builds, an
/// [`crate::Error::Internal`] when a phase leaves a program that no longer
/// binds though the given one did ([`check`]).
pub fn optimize(program: &Program, options: &OptimizerOptions) -> Result<Optimized> {
    optimize_in_order(program, options, &[])
}

/// [`optimize`], with the loops of the queries named in `in_order` (those
/// that do not aggregate) binding their output indices in output order,
/// whatever the physical phase would choose ([`InOrder`]): the executor
/// can then stop them after their first entries
/// ([`run_first`](crate::exec::run_first)). The logical phases are not
/// affected.
pub fn optimize_in_order(
    program: &Program,
    options: &OptimizerOptions,
    in_order: &[String],
) -> Result<Optimized> {
    match (options.search, options.estimator) {
        (Search::None, _) => as_written(program, options, in_order),
        (_, EstimatorKind::Chain) => with(&ChainEstimator::default(), program, options, in_order),
        (_, EstimatorKind::Uniform) => with(&UniformEstimator, program, options, in_order),
    }
}

/// `program` planned as written with the default choices, no phase run.
fn as_written(
    program: &Program,
    options: &OptimizerOptions,
    in_order: &[String],
) -> Result<Optimized> {
    let start = Instant::now();
    let mut choices = PlanChoices {
        eliminate: false,
        ..PlanChoices::default()
    };
    let plan = plan_by(
        program,
        &[],
        &mut InOrder {
            inner: &mut choices,
            queries: in_order,
        },
    )?;
    Ok(Optimized {
        logical: program.clone(),
        estimates: vec![f64::NAN; program.queries.len()],
        steps: Vec::new(),
        plan,
        cost: f64::NAN,
        trivial: 0,
        guarded: Vec::new(),
        reductions: Vec::new(),
        absorbed: Vec::new(),
        orientations: Vec::new(),
        broken: Vec::new(),
        rewritten: Vec::new(),
        time: start.elapsed(),
        reduce_time: Duration::ZERO,
        phases: Phase::ALL
            .into_iter()
            .map(|phase| PhaseTime {
                phase,
                time: Duration::ZERO,
                skipped: true,
            })
            .collect(),
        options: *options,
    })
}

/// The record of the phases of one optimization.
struct Phases {
    times: Vec<PhaseTime>,
    /// Whether the program is checked after each phase: in debug builds,
    /// when the given program binds.
    checked: bool,
}

impl Phases {
    /// Records that `phase` took `time`.
    fn ran(&mut self, phase: Phase, time: Duration) {
        self.times.push(PhaseTime {
            phase,
            time,
            skipped: false,
        });
    }

    /// Records that `phase` did not run.
    fn skipped(&mut self, phase: Phase) {
        self.times.push(PhaseTime {
            phase,
            time: Duration::ZERO,
            skipped: true,
        });
    }

    /// Checks, when checking, that `program` still binds after `phases`.
    fn check(&self, phases: &[Phase], program: &Program, intermediates: &[String]) -> Result<()> {
        if self.checked {
            check::after(phases, program, intermediates)
        } else {
            Ok(())
        }
    }
}

/// Runs the phases with `estimator` (see [`optimize`]).
fn with<E: SparsityEstimator>(
    estimator: &E,
    program: &Program,
    options: &OptimizerOptions,
    in_order: &[String],
) -> Result<Optimized> {
    let start = Instant::now();
    let mut phases = Phases {
        times: Vec::with_capacity(Phase::ALL.len()),
        checked: cfg!(debug_assertions) && check::problem(program, &[]).is_none(),
    };

    let mut program = if options.runs(Phase::Normalize) {
        let begin = Instant::now();
        let normalized = logical::normalize(program);
        phases.ran(Phase::Normalize, begin.elapsed());
        phases.check(&[Phase::Normalize], &normalized, &[])?;
        normalized
    } else {
        phases.skipped(Phase::Normalize);
        program.clone()
    };

    let mut rewritten = Vec::new();
    if options.runs(Phase::Saturate) {
        let begin = Instant::now();
        let normalize = options.runs(Phase::Normalize);
        rewritten = saturate::saturate_program(
            &mut program,
            saturate::Limits::default(),
            &|query: &Query| {
                if normalize {
                    logical::normalize(&Program {
                        queries: vec![query.clone()],
                    })
                    .queries
                    .remove(0)
                } else {
                    query.clone()
                }
            },
            &mut |queries: &[Query]| plan_cost(estimator, queries, options),
        )?;
        phases.ran(Phase::Saturate, begin.elapsed());
        phases.check(&[Phase::Saturate], &program, &[])?;
    } else {
        phases.skipped(Phase::Saturate);
    }

    if options.runs(Phase::Mask) {
        let begin = Instant::now();
        mask::mask_program(estimator, &mut program);
        phases.ran(Phase::Mask, begin.elapsed());
        phases.check(&[Phase::Mask], &program, &[])?;
    } else {
        phases.skipped(Phase::Mask);
    }

    let mut breaker = Breaker::default();
    if options.runs(Phase::Symmetry) {
        let begin = Instant::now();
        breaker.break_program(&mut program)?;
        phases.ran(Phase::Symmetry, begin.elapsed());
        phases.check(&[Phase::Symmetry], &program, &[])?;
    } else {
        phases.skipped(Phase::Symmetry);
    }

    let mut reducer = Reducer::default();
    if options.runs(Phase::Semijoin) {
        let begin = Instant::now();
        reducer.reduce_program(&mut program)?;
        phases.ran(Phase::Semijoin, begin.elapsed());
        phases.check(&[Phase::Semijoin], &program, &[])?;
    } else {
        phases.skipped(Phase::Semijoin);
    }

    let mut eliminated: Option<LogicalPlan<E::Stats>> = None;
    if options.runs(Phase::Eliminate) {
        let begin = Instant::now();
        let distribute = options.runs(Phase::Distribute);
        let plan = logical::eliminate(estimator, &program, options)?;
        let time = begin.elapsed();
        phases.ran(Phase::Eliminate, time.saturating_sub(plan.distribute_time));
        let which: &[Phase] = if distribute {
            phases.ran(Phase::Distribute, plan.distribute_time);
            &[Phase::Eliminate, Phase::Distribute]
        } else {
            phases.skipped(Phase::Distribute);
            &[Phase::Eliminate]
        };
        phases.check(which, &plan.program, &plan.intermediates)?;
        eliminated = Some(plan);
    } else {
        phases.skipped(Phase::Eliminate);
        phases.skipped(Phase::Distribute);
    }
    // The trivial phase's time is part of the elimination's and the
    // physical phase's: it only decides to skip their searches.
    if options.runs(Phase::Trivial)
        && estimator.bounds()
        && (options.runs(Phase::Eliminate) || options.runs(Phase::Physical))
    {
        phases.ran(Phase::Trivial, Duration::ZERO);
    } else {
        phases.skipped(Phase::Trivial);
    }

    match &mut eliminated {
        Some(plan) if options.runs(Phase::Cse) => {
            let begin = Instant::now();
            logical::cse(plan);
            phases.ran(Phase::Cse, begin.elapsed());
            phases.check(&[Phase::Cse], &plan.program, &plan.intermediates)?;
        }
        _ => phases.skipped(Phase::Cse),
    }

    let (logical, plan) = if options.runs(Phase::Physical) {
        let begin = Instant::now();
        let logical = match eliminated {
            Some(plan) => plan,
            None => logical::as_written(estimator, program)?,
        };
        let factorize = options.runs(Phase::Factorize);
        let dense = options.runs(Phase::Dense);
        let mut chooser = PhysicalOptimizer::new(estimator, &logical.stats, options);
        let mut plan = plan_by(
            &logical.program,
            &logical.intermediates,
            &mut InOrder {
                inner: &mut chooser,
                queries: in_order,
            },
        )?;
        let (factorize_time, dense_time) = (chooser.factorize_time, chooser.dense_time);
        phases.ran(
            Phase::Physical,
            begin
                .elapsed()
                .saturating_sub(factorize_time)
                .saturating_sub(dense_time),
        );
        for (phase, runs, time) in [
            (Phase::Factorize, factorize, factorize_time),
            (Phase::Dense, dense, dense_time),
        ] {
            if runs {
                phases.ran(phase, time);
            } else {
                phases.skipped(phase);
            }
        }
        if options.runs(Phase::Fuse) {
            let begin = Instant::now();
            fuse::fuse(&mut plan);
            phases.ran(Phase::Fuse, begin.elapsed());
        } else {
            phases.skipped(Phase::Fuse);
        }
        (logical, plan)
    } else {
        phases.skipped(Phase::Physical);
        phases.skipped(Phase::Factorize);
        phases.skipped(Phase::Dense);
        phases.skipped(Phase::Fuse);
        let logical = match eliminated {
            Some(plan) => plan,
            None => LogicalPlan::unestimated(program),
        };
        let plan = plan_by(
            &logical.program,
            &logical.intermediates,
            &mut InOrder {
                inner: &mut PlanChoices::default(),
                queries: in_order,
            },
        )?;
        (logical, plan)
    };

    let reduce_time = phases
        .times
        .iter()
        .find(|t| t.phase == Phase::Semijoin)
        .map_or(Duration::ZERO, |t| t.time);
    Ok(Optimized {
        logical: logical.program,
        estimates: logical.estimates,
        steps: logical.intermediates,
        plan,
        cost: logical.cost,
        trivial: logical.trivial,
        guarded: logical.guarded,
        reductions: reducer.reductions,
        absorbed: reducer.absorbed,
        orientations: breaker.orientations,
        broken: breaker.broken,
        rewritten,
        time: start.elapsed(),
        reduce_time,
        phases: phases.times,
        options: *options,
    })
}

/// The estimated cost of running `queries` as the phases after
/// `saturate` plan them under `options` (`mask`, `eliminate` with `distribute` and `cse`,
/// each unless disabled, then the physical optimizer's loop orders): the
/// sum of the physical optimizer's estimated cost of every query of the
/// plan, steps and nested aggregates included. `None` when the program
/// cannot be planned or estimated. The `saturate` phase ranks its
/// candidates by it.
pub fn plan_cost<E: SparsityEstimator>(
    estimator: &E,
    queries: &[Query],
    options: &OptimizerOptions,
) -> Option<f64> {
    let mut program = Program {
        queries: queries.to_vec(),
    };
    if options.runs(Phase::Mask) {
        mask::mask_program(estimator, &mut program);
    }
    let logical = if options.runs(Phase::Eliminate) {
        let mut plan = logical::eliminate(estimator, &program, options).ok()?;
        if options.runs(Phase::Cse) {
            logical::cse(&mut plan);
        }
        plan
    } else {
        logical::as_written(estimator, program).ok()?
    };
    let mut chooser = PhysicalOptimizer::new(estimator, &logical.stats, options);
    plan_by(&logical.program, &logical.intermediates, &mut chooser).ok()?;
    let total: f64 = chooser.costs.iter().sum();
    (!total.is_nan()).then_some(total)
}
