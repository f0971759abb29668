//! The logical optimizer (Galley section 5): rewrites each query of a
//! program into a sequence of aggregation steps, chosen by estimated cost.
//! Its phases ([`super::Phase`]) are separate passes over the program,
//! run in this order by [`super::optimize`]:
//!
//! 1. **Normalization** ([`normalize`]). Every aggregate's bound indices
//!    get names that no other part of the query uses (`SUM(j) A[i,j] *
//!    SUM(j) B[i,j]` binds `j` and `j_2`), nested products are flattened,
//!    a `SUM` inside a product is lifted out of it (× distributes over Σ:
//!    `A[i] * SUM(j) B[i,j]` becomes `SUM(j) A[i] * B[i,j]`), and directly
//!    nested `SUM`s merge. Every `SUM` over a product is then one sum over
//!    a flat list of factors, whatever order the user wrote it in. Two
//!    factors that read the same stored table at the same coordinates of
//!    a key of it read one entry, so the sum's variables that tell them
//!    apart are merged ([`merge_key_joins`]: the covariance `Xᵀ X` of a
//!    join's feature matrix no longer pairs the line items of an order);
//!    so are a product's stored inputs and the factors of a sum nested
//!    under a map in it (`sigmoid(SUM ...)`) that read them by a key.
//! 2. **Semijoin reduction** ([`super::reduce`]). Each such product's
//!    stored inputs are shrunk to the coordinates its one-variable factors
//!    allow, so that they are estimated from exact statistics.
//! 3. **Variable elimination** ([`eliminate`]). A step sums one variable
//!    `v` out of the factors that contain it: `T[N] = SUM(v) Π
//!    factors(v)`, where `N` are the other variables of those factors. A
//!    factor whose variables all lie in `N` (two or more of them) is taken
//!    into the step as a mask: it only removes entries (`E[j,k] * SUM(i)
//!    E[i,j] * E[i,k]` counts the triangles on each edge instead of all
//!    two-paths). What no step eliminates stays in the query's own loop
//!    nest, a worst-case-optimal join, so cycles need not be broken. The
//!    chosen steps become queries named `#e1`, `#e2`, ... (every step its
//!    own, even when equal to an earlier one: merging them is the `cse`
//!    phase's; an equal step is only estimated once, and a sum kept as
//!    written over factors that all annihilate keeps the statistics its
//!    search made).
//!    - **Cost** (Galley 5.3): a step costs `A·nnz(T) + B·nnz(Π
//!      factors(v))` — the entries it writes and the assignments its loop
//!      nest visits — and the remaining query likewise, with the estimates
//!      of the chosen [`SparsityEstimator`]; a plan costs the sum of its
//!      steps. A step that only sums more variables out of the one step
//!      before it runs in that step's loop nest (the chain is one step):
//!      it costs the difference of the two steps' entries.
//!    - **Search.** [`Search::Greedy`] repeatedly takes the cheapest step
//!      that lowers the plan's cost. [`Search::Exact`] starts from the
//!      greedy plan and runs a dynamic program over the sets of eliminated
//!      variables with branch-and-bound pruning against the best plan so
//!      far, when a sum has at most [`EXACT_LIMIT`] variables to eliminate
//!      (states are expanded in the order of what their plan would cost if
//!      it stopped there, most promising first); beyond that it keeps the
//!      greedy plan. It stops with the best plan found (never worse than
//!      greedy) after [`EXACT_BUDGET`] estimates, or sooner when the greedy
//!      plan is cheap: it spends at most about as long as the greedy plan
//!      would run ([`COST_PER_ESTIMATE`]). Estimates are cached by the set
//!      of input factors and eliminated variables a candidate covers, so
//!      each distinct sub-expression is estimated once.
//!    - **Trivial sums** (the `trivial` phase, within this one). Neither
//!      search runs on a sum whose loop nest as written is estimated to
//!      cost less than the greedy search's first round, two estimates per
//!      variable to eliminate ([`trivial_cost`]), once the estimate, an
//!      upper bound that takes the largest degree at every loop, is
//!      divided by what it is taken to overstate a nest's visits by
//!      ([`kept_as_written`]), or, over sparse stored inputs, is below a
//!      million units whatever its variables ([`SMALL_NEST`]; then its
//!      loops run under a guard on what they visit, [`NEST_VISITS`], and
//!      past it the statement is planned again with the sum searched);
//!      with an estimator whose estimates are not bounds
//!      ([`SparsityEstimator::bounds`]) every sum is searched.
//!      The sum stays one loop nest (the subgraph queries whose inputs the
//!      semijoin reduction left at a few hundred entries). Likewise the
//!      greedy search stops once what is left of its plan costs less than
//!      its next round would, the bound as it is; the exact search's
//!      budget then weighs the greedy plan's bound divided by what it
//!      overstates, as the nest's was ([`exact_budget`]).
//! 4. **Distributivity** (Galley 5.1, example 3). A product with factors
//!    that are sums or differences is also planned distributed into a
//!    signed sum of products (`S * (P + C) * θ` as `S*P*θ + S*C*θ`, each
//!    term with its own elimination plan); the form with the lower total
//!    cost is kept. This phase runs *within* the elimination pass and
//!    cannot run without it: whether to distribute is decided by comparing
//!    the elimination plans of both forms, and the form chosen for an inner
//!    sum is what the search of an enclosing sum estimates. Terms whose
//!    remaining sums share their factors once the steps are taken are
//!    summed in one loop again ([`Group`]): `L * (S + P) * θ` runs as
//!    `SUM L * (#e1 + #e2)` with `#e1 = S·θ` and `#e2 = P·θ`, one pass over
//!    `L`, not one per term and a sum of their results. The driver
//!    reports its time (planning and writing the distributed forms) apart
//!    from the elimination's.
//! 5. **Common sub-expressions** ([`cse`]). A step equal to an earlier one
//!    up to renaming its variables (two identical leaves of a star query)
//!    is dropped and its readers read the earlier result; the remaining
//!    steps are numbered `#e1`, `#e2`, ... again.
//!
//! The result is again a [`Program`]: the steps as intermediate queries
//! (names starting with `#`) followed by the rewritten queries, which the
//! physical optimizer ([`super::physical`]) and the planner turn into loop
//! nests. Aggregates other than `SUM` keep their form (they do not
//! distribute over `×` in general) but their arguments are optimized.
//! Every phase keeps the program's meaning on its own, so any of them can
//! be left out: without normalization the sums are searched as written
//! (nested ones separately), without elimination the program is planned
//! as written ([`as_written`] estimates it for the physical optimizer).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hashbrown::{HashMap, HashSet};

use crate::error::{Error, Result};
use crate::ir::{AggOp, Annotation, Expr, IndexTerm, Program, Query, ScalarOp, Value};

use super::estimate::{AliasSource, Aliases, Leaf, SparsityEstimator, estimate_with_fill};
use super::{OptimizerOptions, Phase};
use crate::exec::WORK_OVERESTIMATE;

/// Sums with at most this many variables to eliminate are searched
/// exactly (2^n states); larger ones greedily.
pub const EXACT_LIMIT: usize = 10;

/// The most estimates the exact search of one sum may ask for; then it
/// keeps the best plan found so far.
pub const EXACT_BUDGET: usize = 200;

/// The plan cost (entries written plus assignments visited) that the
/// executor gets through in about the time of one estimate. The exact
/// search stops after `greedy cost / COST_PER_ESTIMATE` estimates beyond
/// the greedy search (the cost divided by [`WORK_OVERESTIMATE`] first with
/// the `trivial` phase, [`exact_budget`]): searching longer than the
/// greedy plan would run cannot pay off. One chain-bound estimate takes
/// about 4 µs; on the subgraph sets up to 16 vertices the executor took a
/// median of 7 ns per unit of the estimated cost (1 thread; the estimates
/// are upper bounds, so most plans run faster than their cost says).
pub const COST_PER_ESTIMATE: f64 = 500.0;

/// Estimates the exact search may always make beyond the greedy search,
/// however cheap the greedy plan, when the `trivial` phase is off: about
/// 15 µs, enough to look one step past a greedy plan that stops early on
/// small inputs (the Galley examples in `tests/slt/optimizer.slt`). With
/// the phase on, such plans are kept as the greedy search found them. It was 24: at 0 or 4, the
/// lite subgraph queries ran 7% (hprd) and 1% (yeast) faster (geometric
/// means), with no query slower beyond run-to-run noise.
pub const EXACT_FLOOR: usize = 4;

/// The estimated cost below which a sum with `eliminable` variables to
/// eliminate is kept as written (the `trivial` phase): what the greedy
/// search's first round costs, two estimates (a step's entries and its
/// loop nest's assignments) per variable, at [`COST_PER_ESTIMATE`] each.
pub fn trivial_cost(eliminable: usize) -> f64 {
    2.0 * eliminable as f64 * COST_PER_ESTIMATE
}

/// How many estimates the exact search of a sum may have made, counting
/// the `spent` ones of the greedy search before it, when the greedy plan
/// costs `greedy_cost`: one per [`COST_PER_ESTIMATE`] units of that cost,
/// at most [`EXACT_BUDGET`]. With the `trivial` phase (`trivial`) the cost
/// is weighed as [`kept_as_written`] weighs a nest's, divided by
/// [`WORK_OVERESTIMATE`], and a greedy plan that stops early on small
/// inputs is kept as found; without it the search may always make
/// [`EXACT_FLOOR`] more. An infinite cost allows the whole budget.
pub fn exact_budget(spent: usize, greedy_cost: f64, trivial: bool) -> usize {
    let (floor, overstated) = if trivial {
        (0, WORK_OVERESTIMATE)
    } else {
        (EXACT_FLOOR, 1.0)
    };
    // A saturating cast.
    let worth = ((greedy_cost / overstated / COST_PER_ESTIMATE) as usize).max(floor);
    EXACT_BUDGET.min(spent.saturating_add(worth))
}

/// The estimated cost below which the `trivial` phase keeps a sum over
/// sparse stored inputs ([`all_sparse`]) as written whatever its
/// variables, its query's loops guarded ([`NEST_VISITS`]). Where the
/// semijoin reduction leaves a subgraph query's inputs at tens to
/// hundreds of entries whose degrees vary, the chain bound, which takes
/// the largest degree at every loop, overstates the loops' visits far
/// more than [`WORK_OVERESTIMATE`], and the nest as written runs in less
/// time than the search and the steps it chooses. Where every degree is
/// the same the bound is tight, and such a nest can take several times as
/// long as the steps: the guard stops it, and the statement is planned
/// again with the sum searched (`docs/benchmarks.md`, "Sums over sparse
/// inputs under a million assignments kept as written, guarded").
pub const SMALL_NEST: f64 = 1_000_000.0;

/// The share of its coordinates a stored factor may hold and still count
/// as sparse for [`SMALL_NEST`] ([`all_sparse`]).
pub const SPARSE_FILL: f64 = 0.01;

/// Whether every factor of a sum is a stored input that holds at most
/// [`SPARSE_FILL`] of the coordinates its dimensions span: the inputs of
/// graph patterns, whose degrees vary, and not dense matrices or complete
/// graphs, over which the chain bound is tight and a loop nest under
/// [`SMALL_NEST`] would run to its guard before the sum is searched.
fn all_sparse(factors: &[Expr]) -> bool {
    factors.iter().all(|factor| match factor {
        Expr::Input(input) => {
            let tensor = &input.tensor.tensor;
            let span: f64 = tensor.dims().iter().map(|d| d.size as f64).product();
            (tensor.nnz() as f64) <= SPARSE_FILL * span
        }
        _ => false,
    })
}

/// The most loop visits a query may make when the `trivial` phase kept a
/// sum of it as written for [`SMALL_NEST`] alone: past it the executor
/// stops the query ([`crate::exec::StepGuards::insert_visits`]) and the
/// session plans the statement again with such sums searched
/// ([`super::OptimizerOptions::small_nests`]).
pub const NEST_VISITS: u64 = 1 << 16;

/// Whether the `trivial` phase keeps a loop nest of estimated cost `cost`
/// as it is rather than search for a better plan over its `variables`
/// (the elimination steps of a sum, over the variables to eliminate, or
/// the loop order of a query, over its loop variables): when the loops
/// would run in less time than the search's first round takes
/// ([`trivial_cost`]). The nest's cost is a chain bound, which takes
/// the largest degree at every loop, so it is taken to overstate what the
/// loops visit by [`WORK_OVERESTIMATE`], as the executor takes it when it
/// splits them. On yeast's 4-vertex lite queries, whose semijoin-reduced
/// inputs hold tens to hundreds of entries, the 18 nests that the bound
/// put at 4,900 to 64,000 units ran as written in 0.47 to 0.72 of the
/// statement's time with the search and the steps it chose
/// (`docs/benchmarks.md`, "Loop nests kept as written on small inputs").
pub fn kept_as_written(cost: f64, variables: usize) -> bool {
    cost / WORK_OVERESTIMATE < trivial_cost(variables)
}

/// A step estimated to write this many entries or more is never taken
/// (the default of [`super::OptimizerOptions::max_step_entries`]): it
/// would need gigabytes of memory, and the loop nest of the query that
/// would read it computes the same without writing it. Below it, a step
/// that would not fit the statement's memory limit is not taken either
/// ([`step_fits`]).
pub const MAX_STEP_ENTRIES: u64 = 100_000_000;

/// Whether a step estimated to write `entries` entries over `dims`
/// indices may be taken: below `max_entries`, and with its memory at the
/// peak ([`step_bytes`]) within `memory_limit`. An estimate that is an
/// upper bound (`bounds`, the chain bound's) is taken to overstate the
/// entries by [`WORK_OVERESTIMATE`], as it overstates a loop nest's
/// visits ([`kept_as_written`]): on one-label yeast, three-variable steps
/// bounded at 77.6 million entries wrote 0.9 to 1.2 million, and taking
/// them finished a 16-vertex query whose loop nest ran past 30 s
/// (`docs/benchmarks.md`, "Steps bounded past the memory limit, taken
/// under their guard"). A step whose real entries pass the limit stops
/// at its guard and the statement is planned again without it
/// ([`super::Optimized::step_guards`]).
pub fn step_fits(
    entries: f64,
    dims: usize,
    memory_limit: f64,
    max_entries: f64,
    bounds: bool,
) -> bool {
    let overstated = if bounds { WORK_OVERESTIMATE } else { 1.0 };
    entries < max_entries && step_bytes(entries, dims) / overstated <= memory_limit
}

/// The memory the executor charges for a step of `entries` entries over
/// `dims` indices at its peak: each entry as it is collected and again
/// as the result is stored ([`crate::exec::entry_bytes`]).
pub fn step_bytes(entries: f64, dims: usize) -> f64 {
    entries * 2.0 * crate::exec::entry_bytes(dims) as f64
}

/// Weight of an entry written (`A` in the cost).
const WRITE_COST: f64 = 1.0;

/// Weight of an assignment visited (`B` in the cost).
const VISIT_COST: f64 = 1.0;

/// Which search over elimination orders the optimizer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// No optimization: the program runs as written.
    None,
    /// Greedy: the cheapest improving step, repeatedly.
    Greedy,
    /// Exact dynamic programming up to [`EXACT_LIMIT`], else greedy.
    Exact,
}

impl Search {
    /// The name `SET optimizer` takes.
    pub fn name(self) -> &'static str {
        match self {
            Search::None => "none",
            Search::Greedy => "greedy",
            Search::Exact => "exact",
        }
    }
}

/// The program between the logical phases, with what the physical
/// optimizer and `EXPLAIN` need to know about it.
#[derive(Debug)]
pub struct LogicalPlan<S> {
    /// The steps (intermediates named `#e1`, ...) and the rewritten queries.
    pub program: Program,
    /// The names of the steps.
    pub intermediates: Vec<String>,
    /// The estimated number of entries of every query of `program`, in
    /// order.
    pub estimates: Vec<f64>,
    /// The estimated statistics of every query of `program`, by name.
    pub stats: Aliases<S>,
    /// The plan's estimated cost (see the module documentation); NaN for a
    /// program planned as written.
    pub cost: f64,
    /// How long the distributivity phase took within [`eliminate`].
    pub distribute_time: Duration,
    /// The sums the trivial phase kept as written ([`kept_as_written`]).
    pub trivial: usize,
    /// The queries holding a sum kept as written because its bound is
    /// below [`SMALL_NEST`] alone: their loops run under a guard on what
    /// they visit ([`NEST_VISITS`]).
    pub guarded: Vec<String>,
    /// The canonical text of every step, by position in `intermediates`:
    /// steps with equal texts are equal up to renaming their variables.
    keys: Vec<String>,
}

impl<S> LogicalPlan<S> {
    fn new() -> LogicalPlan<S> {
        LogicalPlan {
            program: Program {
                queries: Vec::new(),
            },
            intermediates: Vec::new(),
            estimates: Vec::new(),
            stats: Aliases::new(),
            cost: 0.0,
            distribute_time: Duration::ZERO,
            trivial: 0,
            guarded: Vec::new(),
            keys: Vec::new(),
        }
    }

    /// `program` as written and not estimated (NaN estimates and cost):
    /// what is planned when neither the elimination nor the physical
    /// phase runs.
    pub fn unestimated(program: Program) -> LogicalPlan<S> {
        LogicalPlan {
            estimates: vec![f64::NAN; program.queries.len()],
            program,
            cost: f64::NAN,
            ..LogicalPlan::new()
        }
    }
}

/// The normalization phase: every query of `program` with unique bound
/// names, flattened products and lifted sums (see the module
/// documentation).
pub fn normalize(program: &Program) -> Program {
    Program {
        queries: program
            .queries
            .iter()
            .map(|query| Query {
                name: query.name.clone(),
                indices: query.indices.clone(),
                expr: merge_key_joins(lift(unique_names(query.expr.clone(), &query.indices))),
            })
            .collect(),
    }
}

/// The elimination phase, and within it the distributivity and trivial
/// phases unless `options` disables them: every sum over a product of
/// `program` rewritten into the steps its search finds, every query
/// estimated (see the module documentation).
///
/// Errors: what estimating the program's expressions reports (unknown
/// aliases, indices that index no tensor).
pub fn eliminate<E: SparsityEstimator>(
    estimator: &E,
    program: &Program,
    options: &OptimizerOptions,
) -> Result<LogicalPlan<E::Stats>> {
    let mut optimizer = Optimizer::new(estimator, options.search, options.runs(Phase::Distribute));
    optimizer.trivial = options.runs(Phase::Trivial) && estimator.bounds();
    optimizer.small_nests = optimizer.trivial && options.small_nests;
    optimizer.memory_limit = options.memory_limit as f64;
    optimizer.max_step_entries = options.max_step_entries as f64;
    for query in &program.queries {
        let expr = optimizer.rewrite(&query.expr)?;
        // A top-level sum ends in `Optimizer::eliminate`, which leaves
        // `known` for its result; anything else may hold an inner sum's.
        let top_sum = matches!(query.expr, Expr::Agg { op: AggOp::Sum, .. });
        let known = optimizer.known.take().filter(|_| top_sum);
        if std::mem::take(&mut optimizer.small_nest_kept) {
            optimizer.out.guarded.push(query.name.clone());
        }
        optimizer.emit(query.name.clone(), query.indices.clone(), expr, known)?;
    }
    Ok(optimizer.out)
}

/// `program` as written, every query estimated: what the physical
/// optimizer reads when the elimination phase did not run.
///
/// Errors: what estimating the program's expressions reports.
pub fn as_written<E: SparsityEstimator>(
    estimator: &E,
    program: Program,
) -> Result<LogicalPlan<E::Stats>> {
    let mut optimizer = Optimizer::new(estimator, Search::None, false);
    for query in program.queries {
        optimizer.emit(query.name, query.indices, query.expr, None)?;
    }
    optimizer.out.cost = f64::NAN;
    Ok(optimizer.out)
}

/// The common sub-expression phase: drops every step of `plan` equal to
/// an earlier one up to renaming its variables, has its readers read the
/// earlier one, and numbers the remaining steps `#e1`, `#e2`, ... in
/// order (see the module documentation). The estimates and statistics
/// follow; the cost is that of the plan as searched.
pub fn cse<S>(plan: &mut LogicalPlan<S>) {
    // The new name of every step that is renamed or dropped, and which
    // steps are dropped, by position.
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut dropped = vec![false; plan.intermediates.len()];
    {
        // The new name of the first step of every canonical text.
        let mut first: HashMap<&str, String> = HashMap::new();
        for (k, (name, key)) in plan.intermediates.iter().zip(&plan.keys).enumerate() {
            if let Some(earlier) = first.get(key.as_str()) {
                renamed.insert(name.clone(), earlier.clone());
                dropped[k] = true;
            } else {
                let new = format!("#e{}", first.len() + 1);
                if new != *name {
                    renamed.insert(name.clone(), new.clone());
                }
                first.insert(key, new);
            }
        }
    }
    if renamed.is_empty() {
        return;
    }
    let LogicalPlan {
        program,
        intermediates,
        estimates,
        stats,
        keys,
        ..
    } = plan;
    let mut kept_stats = Vec::new();
    for (k, name) in intermediates.iter().enumerate() {
        if let Some(new) = renamed.get(name) {
            let source = stats.remove(name);
            if !dropped[k] {
                kept_stats.extend(source.map(|s| (new.clone(), s)));
            }
        }
    }
    stats.extend(kept_stats);
    let dropped_names: HashSet<&str> = intermediates
        .iter()
        .zip(&dropped)
        .filter(|(_, d)| **d)
        .map(|(n, _)| n.as_str())
        .collect();
    let mut kept_estimates = Vec::with_capacity(estimates.len());
    let mut queries = Vec::with_capacity(program.queries.len());
    for (mut query, estimate) in std::mem::take(&mut program.queries)
        .into_iter()
        .zip(estimates.iter())
    {
        if dropped_names.contains(query.name.as_str()) {
            continue;
        }
        if let Some(new) = renamed.get(&query.name) {
            query.name = new.clone();
        }
        rename_aliases(&mut query.expr, &renamed);
        queries.push(query);
        kept_estimates.push(*estimate);
    }
    // Its names borrow `intermediates`, renamed below.
    drop(dropped_names);
    program.queries = queries;
    *estimates = kept_estimates;
    let mut k = 0;
    keys.retain(|_| {
        k += 1;
        !dropped[k - 1]
    });
    let mut k = 0;
    intermediates.retain_mut(|name| {
        k += 1;
        if let Some(new) = renamed.get(name) {
            *name = new.clone();
        }
        !dropped[k - 1]
    });
}

/// Renames, in place, every alias of `expr` that `to` maps.
fn rename_aliases(expr: &mut Expr, to: &HashMap<String, String>) {
    match expr {
        Expr::Alias { name, .. } => {
            if let Some(new) = to.get(name) {
                name.clone_from(new);
            }
        }
        Expr::Agg { body, .. } => rename_aliases(body, to),
        Expr::Map { args, .. } => args.iter_mut().for_each(|a| rename_aliases(a, to)),
        Expr::Input(_) | Expr::Literal(_) | Expr::Index(_) => {}
    }
}

struct Optimizer<'a, E: SparsityEstimator> {
    estimator: &'a E,
    search: Search,
    /// Whether products of sums are also planned distributed.
    distribute: bool,
    /// Whether sums cheaper to run as written than to search are kept as
    /// written ([`kept_as_written`]).
    trivial: bool,
    /// Whether, with `trivial`, sums whose bound is below [`SMALL_NEST`]
    /// are kept as written too.
    small_nests: bool,
    /// Whether the query being rewritten holds a sum kept as written for
    /// [`SMALL_NEST`] alone.
    small_nest_kept: bool,
    /// The memory a step may need ([`step_fits`]).
    memory_limit: f64,
    /// A step estimated to write this many entries or more is not taken.
    max_step_entries: f64,
    out: LogicalPlan<E::Stats>,
    /// The first step of every canonical text.
    first: HashMap<String, First>,
    /// The name every step will have once the `cse` phase merged equal
    /// steps, where it is not its own.
    merged: HashMap<String, String>,
    fresh: usize,
    /// The estimated statistics of what the last [`Optimizer::eliminate`]
    /// returned, when its search made them already: a sum kept as
    /// written over factors that all annihilate (the `trivial` sums of the
    /// subgraph queries), whose estimate [`Optimizer::emit`] then need not
    /// make again.
    known: Option<E::Stats>,
}

impl<'a, E: SparsityEstimator> Optimizer<'a, E> {
    fn new(estimator: &'a E, search: Search, distribute: bool) -> Self {
        Optimizer {
            estimator,
            search,
            distribute,
            trivial: false,
            small_nests: false,
            small_nest_kept: false,
            memory_limit: f64::INFINITY,
            max_step_entries: MAX_STEP_ENTRIES as f64,
            out: LogicalPlan::new(),
            first: HashMap::new(),
            merged: HashMap::new(),
            fresh: 0,
            known: None,
        }
    }

    /// Appends a query to the output program with its estimate, from the
    /// statistics of `expr` when they are `known`.
    /// When the estimator cannot represent the expression, its entries are
    /// bounded by its whole index space and the estimate is unknown (NaN).
    fn emit(
        &mut self,
        name: String,
        indices: Vec<String>,
        expr: Expr,
        known: Option<E::Stats>,
    ) -> Result<()> {
        let sizes = index_sizes(&expr, &self.out.stats);
        let indices_sized: Vec<(String, u64)> = indices
            .iter()
            .map(|v| (v.clone(), sizes.get(v).copied().unwrap_or(1)))
            .collect();
        let estimated = match known {
            Some(stats) => Ok(stats),
            None => estimate_with_fill(self.estimator, &expr, &self.out.stats).map(|(s, _)| s),
        };
        let (stats, estimate) = match estimated {
            Ok(stats) => {
                let estimate = self.estimator.estimate(&stats);
                (stats, estimate)
            }
            Err(_) => (
                self.estimator.leaf(Leaf::Dense {
                    vars: &indices_sized,
                })?,
                f64::NAN,
            ),
        };
        self.out.stats.insert(
            name.clone(),
            AliasSource::Estimated {
                indices: indices_sized,
                stats,
            },
        );
        self.out.program.queries.push(Query {
            name,
            indices,
            expr,
        });
        self.out.estimates.push(estimate);
        Ok(())
    }

    /// Optimizes the sums over products in `expr`, innermost first.
    fn rewrite(&mut self, expr: &Expr) -> Result<Expr> {
        Ok(match expr {
            Expr::Agg {
                op: AggOp::Sum,
                indices,
                body,
            } => match body.as_ref() {
                Expr::Map {
                    op: ScalarOp::Mul,
                    args,
                } => {
                    let factors = args
                        .iter()
                        .map(|a| self.rewrite(a))
                        .collect::<Result<Vec<_>>>()?;
                    self.eliminate(indices, factors)?
                }
                other => {
                    let body = self.rewrite(other)?;
                    self.eliminate(indices, vec![body])?
                }
            },
            Expr::Agg { op, indices, body } => Expr::Agg {
                op: *op,
                indices: indices.clone(),
                body: Box::new(self.rewrite(body)?),
            },
            Expr::Map { op, args } => Expr::Map {
                op: *op,
                args: args
                    .iter()
                    .map(|a| self.rewrite(a))
                    .collect::<Result<Vec<_>>>()?,
            },
            other => other.clone(),
        })
    }

    /// `SUM(indices) Π factors` as a sequence of steps and what remains:
    /// as written, or with its sums of terms distributed over the product
    /// when that plans cheaper (see the module documentation).
    fn eliminate(&mut self, indices: &[String], factors: Vec<Expr>) -> Result<Expr> {
        self.known = None;
        let Ok(mut plain) = self.plan_sum(indices, &factors) else {
            // The estimator cannot represent this sum (more than 64
            // variables with hidden ones): it runs as written.
            return Ok(sum(indices.to_vec(), factors));
        };
        let written = plain.written.take();
        if self.distribute {
            let start = Instant::now();
            let distributed = self.distributed(indices, &factors, plain.plan.cost);
            self.out.distribute_time += start.elapsed();
            if let Some(total) = distributed? {
                self.known = None;
                return Ok(total);
            }
        }
        let rewritten = self.materialize(indices, factors, plain)?;
        self.known = written;
        Ok(rewritten)
    }

    /// `SUM(indices) Π factors` distributed over its factors that are sums
    /// or differences, with every term's steps emitted, when that plans
    /// cheaper than `plain` (the cost of the plan as written); `None`
    /// otherwise.
    fn distributed(
        &mut self,
        indices: &[String],
        factors: &[Expr],
        plain: f64,
    ) -> Result<Option<Expr>> {
        let Some(terms) = distribute(factors) else {
            return Ok(None);
        };
        let sizes = index_sizes(&Expr::product(factors.to_vec()), &self.out.stats);
        let mut planned = Vec::new();
        for (sign, term) in &terms {
            // A term without some of the summed indices is summed over the
            // others and multiplied by the sizes of those (SUM(i) a =
            // a · |i| when a lacks i).
            let free: Vec<String> = term.iter().flat_map(Expr::free_indices).collect();
            let (kept, absent): (Vec<String>, Vec<String>) =
                indices.iter().cloned().partition(|v| free.contains(v));
            let mut term = term.clone();
            if !absent.is_empty() {
                let copies: u64 = absent
                    .iter()
                    .map(|v| sizes.get(v).copied().unwrap_or(1))
                    .product();
                let Ok(copies) = i64::try_from(copies) else {
                    return Ok(None);
                };
                term.push(Expr::Literal(Value::Int(copies)));
            }
            match self.plan_sum(&kept, &term) {
                Ok(plan) => planned.push((*sign, kept, term, plan)),
                Err(_) => break,
            }
        }
        let cost: f64 = planned.iter().map(|(_, _, _, p)| p.plan.cost).sum();
        if !(planned.len() == terms.len() && cost < plain) {
            return Ok(None);
        }
        let mut groups: Vec<Group> = Vec::new();
        for (sign, kept, term, plan) in planned {
            let (left, remaining) = match self.onto_group(&groups, &kept, &term, &plan)? {
                Some(parts) => parts,
                None => self.materialize_parts(&kept, term, plan)?,
            };
            let joined = groups
                .iter()
                .enumerate()
                .find_map(|(k, g)| Some((k, g.joined(sign, &left, &remaining)?)));
            match joined {
                Some((k, group)) => groups[k] = group,
                None => groups.push(Group::new(sign, left, remaining)),
            }
        }
        Ok(signed_sum(
            groups.into_iter().map(|g| (Sign::Plus, g.into_expr())),
        ))
    }

    /// A term's steps taken so that it joins a group of the terms before it,
    /// when its own plan would not: the term's factors other than a factor
    /// `F` common to the group are reduced onto the group's variables (the
    /// star join's `SUM(j) P[p,j] * W1[k,j]`), `F` is left for the group's
    /// pass, and the term adds its reduced factors to that pass instead of
    /// a result of its own the size of the output. Taken when those steps
    /// cost no more than the term's own plan; `None` otherwise, with
    /// nothing emitted.
    fn onto_group(
        &mut self,
        groups: &[Group],
        kept: &[String],
        term: &[Expr],
        own: &Planned<E::Stats>,
    ) -> Result<Option<(Vec<String>, Vec<Expr>)>> {
        let Planned {
            plan: own, names, ..
        } = own;
        // The indices the term's own plan leaves summed, sorted.
        let eliminated: Vec<&String> = own.steps.iter().map(|s| &names[s.var]).collect();
        let mut own_left: Vec<String> = kept
            .iter()
            .filter(|v| !eliminated.contains(v))
            .cloned()
            .collect();
        own_left.sort_unstable();
        for group in groups {
            let mut group_indices = group.indices.clone();
            group_indices.sort_unstable();
            for common in &group.common {
                let Some(k) = term.iter().position(|f| f == common) else {
                    continue;
                };
                let covered = common.free_indices();
                let mut left: Vec<String> = kept
                    .iter()
                    .filter(|v| covered.contains(v))
                    .cloned()
                    .collect();
                left.sort_unstable();
                if own.remaining.contains(&Origin::Input(k)) && own_left == left {
                    // The term's own plan joins the group as it is.
                    return Ok(None);
                }
                if left != group_indices {
                    continue;
                }
                let reduced: Vec<String> = kept
                    .iter()
                    .filter(|v| !covered.contains(v))
                    .cloned()
                    .collect();
                let mut rest = term.to_vec();
                let shared = rest.remove(k);
                if rest.is_empty() {
                    continue;
                }
                let Ok(plan) = self.plan_sum(&reduced, &rest) else {
                    continue;
                };
                if plan.plan.cost > own.cost {
                    continue;
                }
                let (still, mut remaining) = self.materialize_parts(&reduced, rest, plan)?;
                // What the steps leave summed is one more step; a product
                // left over goes to the group's pass as it is.
                if !still.is_empty() {
                    remaining = vec![self.step(sum(still, remaining), None)?];
                }
                remaining.push(shared);
                return Ok(Some((left, remaining)));
            }
        }
        Ok(None)
    }

    /// The cheapest plan the search finds for `SUM(indices) Π factors`
    /// (no steps when there is nothing to eliminate), with the sum's
    /// variables and the statistics the search made that
    /// [`Optimizer::emit`] can take ([`Planned`]). Errors when the
    /// estimator cannot represent the sum.
    fn plan_sum(&mut self, indices: &[String], factors: &[Expr]) -> Result<Planned<E::Stats>> {
        let mut names: Vec<String> = Vec::new();
        for factor in factors {
            for v in factor.free_indices() {
                if !names.contains(&v) {
                    names.push(v);
                }
            }
        }
        if names.len() > 64 || factors.len() > 128 {
            return Err(Error::NotSupported(
                "estimating a product of more than 128 factors or 64 indices".to_string(),
            ));
        }
        let eliminable: Vec<usize> = (0..names.len())
            .filter(|&k| indices.contains(&names[k]))
            .collect();
        let sizes = index_sizes(&Expr::product(factors.to_vec()), &self.out.stats);
        let mut inputs = Vec::new();
        for (k, expr) in factors.iter().enumerate() {
            let (stats, fill) = estimate_with_fill(self.estimator, expr, &self.out.stats)?;
            inputs.push(Factor {
                vars: var_bits(&expr.free_indices(), &names),
                stats: Rc::new(stats),
                annihilates: fill.is_some_and(|f| f.is_zero()),
                key: (1u128 << k, 0),
                origin: Origin::Input(k),
                written: 0.0,
            });
        }
        let annihilates: Vec<bool> = inputs.iter().map(|f| f.annihilates).collect();
        let mut space = Space {
            estimator: self.estimator,
            names: &names,
            sizes: names
                .iter()
                .map(|n| sizes.get(n).copied().unwrap_or(1))
                .collect(),
            summed: names
                .iter()
                .filter(|n| indices.contains(n))
                .cloned()
                .collect(),
            key: Vec::new(),
            estimates: 0,
            costs: HashMap::new(),
            written: None,
            steps: HashMap::new(),
            memory_limit: self.memory_limit,
            max_step_entries: self.max_step_entries,
            trivial: self.trivial,
        };
        let as_written = |space: &mut Space<'_, E>, inputs| {
            space.plan(State {
                factors: inputs,
                steps: Vec::new(),
                cost: 0.0,
            })
        };
        let searched = factors.len() >= 2 && !eliminable.is_empty();
        // The loop nest's cost as written, which the `trivial` phase weighs.
        let nest = if searched && self.trivial {
            space.finish(&inputs)?
        } else {
            f64::INFINITY
        };
        let plan = if !searched {
            as_written(&mut space, inputs)?
        } else if kept_as_written(nest, eliminable.len()) {
            self.out.trivial += 1;
            as_written(&mut space, inputs)?
        } else if self.small_nests && all_sparse(factors) && nest < SMALL_NEST {
            self.out.trivial += 1;
            self.small_nest_kept = true;
            as_written(&mut space, inputs)?
        } else {
            match self.search {
                Search::Exact if eliminable.len() <= EXACT_LIMIT => {
                    let greedy = space.greedy(&inputs, &eliminable)?;
                    let budget = exact_budget(space.estimates, greedy.cost, self.trivial);
                    space.exact(&inputs, &eliminable, greedy, budget)?
                }
                _ => space.greedy(&inputs, &eliminable)?,
            }
        };
        // Over factors that all annihilate, a step's text (and the sum's,
        // when kept as written) joins the statistics the search joined, in
        // the same order: its estimate would make them again.
        let written = if plan.steps.is_empty() && annihilates.iter().all(|&a| a) {
            space.written.take()
        } else {
            None
        };
        let steps = plan
            .steps
            .iter()
            .map(|step| {
                let inputs = step
                    .chosen
                    .iter()
                    .try_fold(0u128, |taken, origin| match origin {
                        Origin::Input(k) if annihilates[*k] => Some(taken | 1 << k),
                        _ => None,
                    })?;
                let (stats, _, _) = space.steps.get(&(inputs, 1 << step.var))?;
                Some(E::Stats::clone(stats))
            })
            .collect();
        Ok(Planned {
            plan,
            names,
            written,
            steps,
        })
    }

    /// Emits the steps of `plan` as queries and returns what remains of
    /// `SUM(indices) Π factors`.
    fn materialize(
        &mut self,
        indices: &[String],
        factors: Vec<Expr>,
        plan: Planned<E::Stats>,
    ) -> Result<Expr> {
        let (left, remaining) = self.materialize_parts(indices, factors, plan)?;
        Ok(sum(left, remaining))
    }

    /// [`Optimizer::materialize`], with what remains as the indices still
    /// summed and the factors of their product.
    fn materialize_parts(
        &mut self,
        indices: &[String],
        factors: Vec<Expr>,
        Planned {
            plan,
            names,
            steps: mut known,
            ..
        }: Planned<E::Stats>,
    ) -> Result<(Vec<String>, Vec<Expr>)> {
        self.out.cost += plan.cost;
        let mut exprs: Vec<Option<Expr>> = factors.into_iter().map(Some).collect();
        // A step that only sums more variables out of the one step before
        // it (`SUM(c) #e1[n,s,p,c]`) is that step's loop nest summing them
        // too: the chain is one step, and its intermediates are not written.
        let mut summed: Vec<Vec<String>> = Vec::new();
        let mut reads: Vec<Vec<Origin>> = Vec::new();
        let mut absorbed = vec![false; plan.steps.len()];
        for step in &plan.steps {
            let var = names[step.var].clone();
            match step.chosen[..] {
                [Origin::Step(s)] => {
                    absorbed[s] = true;
                    let mut vars = summed[s].clone();
                    vars.push(var);
                    summed.push(vars);
                    reads.push(reads[s].clone());
                }
                _ => {
                    summed.push(vec![var]);
                    reads.push(step.chosen.clone());
                }
            }
        }
        let mut made: Vec<Option<Expr>> = vec![None; plan.steps.len()];
        let read =
            |origin: &Origin, exprs: &mut Vec<Option<Expr>>, made: &[Option<Expr>]| match origin {
                Origin::Input(k) => exprs.get_mut(*k).and_then(Option::take),
                Origin::Step(s) => made.get(*s).cloned().flatten(),
            };
        for (k, (vars, origins)) in summed.into_iter().zip(&reads).enumerate() {
            if absorbed[k] {
                continue;
            }
            let taken: Vec<Expr> = origins
                .iter()
                .map(|origin| read(origin, &mut exprs, &made))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    Error::Internal("an elimination step reads a factor twice".to_string())
                })?;
            made[k] = Some(self.step(sum(vars, taken), known[k].take())?);
        }
        let mut remaining: Vec<Expr> = Vec::new();
        for origin in &plan.remaining {
            remaining.extend(read(origin, &mut exprs, &made));
        }
        let eliminated: Vec<&String> = plan.steps.iter().map(|s| &names[s.var]).collect();
        let left: Vec<String> = indices
            .iter()
            .filter(|v| !eliminated.contains(v))
            .cloned()
            .collect();
        Ok((left, remaining))
    }

    /// Emits the step `body` (a `SUM` over its output variables) as the
    /// next intermediate query and returns the expression that reads it.
    /// A step equal to an earlier one up to renaming is not estimated
    /// again: it takes the earlier one's estimate and statistics, and the
    /// `cse` phase may merge the two. Equal steps are found by their
    /// canonical text with every step they read called by the name it has
    /// once the `cse` phase merged equal steps and numbered the rest, so
    /// that its text and output order are those of the merged program.
    fn step(&mut self, body: Expr, known: Option<E::Stats>) -> Result<Expr> {
        let (key, indices) = if self.merged.is_empty() {
            canonical(&body)
        } else {
            let mut resolved = body.clone();
            rename_aliases(&mut resolved, &self.merged);
            canonical(&resolved)
        };
        self.fresh += 1;
        let name = format!("#e{}", self.fresh);
        self.out.intermediates.push(name.clone());
        self.out.keys.push(key.clone());
        match self.first.get(&key) {
            Some(first) => {
                let source = self.out.stats.get(&first.name).cloned().ok_or_else(|| {
                    Error::Internal(format!("the step '{}' has no statistics", first.name))
                })?;
                self.out.stats.insert(name.clone(), source);
                self.out.estimates.push(self.out.estimates[first.position]);
                self.out.program.queries.push(Query {
                    name: name.clone(),
                    indices: indices.clone(),
                    expr: body,
                });
                self.merged.insert(name.clone(), first.merged.clone());
            }
            None => {
                let merged = format!("#e{}", self.first.len() + 1);
                if merged != name {
                    self.merged.insert(name.clone(), merged.clone());
                }
                let first = First {
                    name: name.clone(),
                    position: self.out.program.queries.len(),
                    merged,
                };
                self.emit(name.clone(), indices.clone(), body, known)?;
                self.first.insert(key, first);
            }
        }
        Ok(Expr::Alias {
            name,
            indices: indices.into_iter().map(IndexTerm::Var).collect(),
        })
    }
}

/// A sum's plan ([`Optimizer::plan_sum`]) with the statistics its search
/// made of what the plan emits, where they are what the estimate of the
/// emitted text would make.
struct Planned<S> {
    plan: Plan,
    /// The sum's variables, which the plan's steps number.
    names: Vec<String>,
    /// The statistics of the sum as written, when the plan takes no step
    /// and every factor annihilates.
    written: Option<S>,
    /// Per step of the plan, its result's statistics when it sums one
    /// variable out of inputs that all annihilate.
    steps: Vec<Option<S>>,
}

/// The first of the steps with one canonical text.
struct First {
    /// Its name.
    name: String,
    /// Its position in the output program.
    position: usize,
    /// Its name once the `cse` phase merged equal steps.
    merged: String,
}

/// The input factors a sub-expression covers (bits over the sum's
/// factors) and the variables it eliminated: equal keys are equal
/// sub-expressions.
type FactorKey = (u128, u64);

/// Where a factor of the search comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// The k-th factor of the sum.
    Input(usize),
    /// The result of the s-th step of the plan.
    Step(usize),
}

/// A factor of a sum during the search.
#[derive(Clone, Debug)]
struct Factor<S> {
    /// Its variables (bits over the sum's variables).
    vars: u64,
    stats: Rc<S>,
    /// Whether its fill value is 0, so that it bounds a product's entries.
    annihilates: bool,
    /// The input factors it covers and the variables it eliminated: equal
    /// keys are equal sub-expressions.
    key: FactorKey,
    origin: Origin,
    /// The entries a step's result is estimated to write (0 for an input).
    written: f64,
}

/// One elimination step of a plan.
#[derive(Clone, Debug)]
struct Step {
    /// The variable summed out.
    var: usize,
    /// The factors it multiplies.
    chosen: Vec<Origin>,
}

/// A plan for one sum: its steps, the factors of the remaining query, and
/// its estimated cost.
#[derive(Clone, Debug)]
struct Plan {
    steps: Vec<Step>,
    remaining: Vec<Origin>,
    cost: f64,
}

/// The sign of a term of a distributed product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sign {
    Plus,
    Minus,
}

/// Terms of a distributed product that, once their steps are taken, still
/// sum over the same indices and share factors: `SUM(K) Π common * (±Π
/// rest₁ ± Π rest₂ ...)`, one loop over the shared factors (the star
/// join's `L[o,n,s,p,c]`) in place of one per term and a sum of their
/// results. It visits no more than the terms did apart: the shared
/// factors' entries where any rest is non-zero.
#[derive(Clone)]
struct Group {
    indices: Vec<String>,
    common: Vec<Expr>,
    rests: Vec<(Sign, Vec<Expr>)>,
}

impl Group {
    fn new(sign: Sign, indices: Vec<String>, factors: Vec<Expr>) -> Group {
        Group {
            indices,
            common: factors,
            rests: vec![(sign, Vec::new())],
        }
    }

    /// The group with a term summed over `indices` with these factors
    /// added, when the term shares a factor other than a constant with the
    /// group, every rest then reads only variables of the common factors
    /// or of the result (the loop runs over the common factors' entries
    /// and looks the rests up), and a common factor is a bag or a step's
    /// result. `None` otherwise.
    fn joined(&self, sign: Sign, indices: &[String], factors: &[Expr]) -> Option<Group> {
        let mut mine = self.indices.clone();
        let mut theirs = indices.to_vec();
        mine.sort_unstable();
        theirs.sort_unstable();
        if mine != theirs {
            return None;
        }
        let mut rest = factors.to_vec();
        let mut common = Vec::new();
        let mut dropped = Vec::new();
        for c in &self.common {
            match rest.iter().position(|f| f == c) {
                Some(k) => common.push(rest.remove(k)),
                None => dropped.push(c.clone()),
            }
        }
        if common.iter().all(|c| matches!(c, Expr::Literal(_))) {
            return None;
        }
        let mut rests = self.rests.clone();
        for (_, r) in &mut rests {
            r.extend(dropped.iter().cloned());
        }
        rests.push((sign, rest));
        // A rest's variable is the common factors' or one the sum keeps.
        let covered: HashSet<String> = common.iter().flat_map(Expr::free_indices).collect();
        let looked_up = rests.iter().all(|(_, r)| {
            !r.is_empty()
                && r.iter()
                    .flat_map(Expr::free_indices)
                    .all(|v| covered.contains(&v) || !self.indices.contains(&v))
        });
        // Terms over a table with value columns that add into arrays run
        // as passes over its entries, fused (`dense`, `fuse`): cheaper than
        // one loop nest over a sum. Over a bag (the star join's fact table)
        // the sum is one factor of a single pass when the result keeps a
        // key of the bag, and a step's result drives no pass.
        let drives_no_pass = common.iter().any(|c| match c {
            Expr::Input(input) => input.tensor.tensor.is_bag(),
            Expr::Alias { .. } => true,
            _ => false,
        });
        (looked_up && drives_no_pass).then(|| Group {
            indices: self.indices.clone(),
            common,
            rests,
        })
    }

    fn into_expr(self) -> Expr {
        let rest = |factors: Vec<Expr>| {
            if factors.is_empty() {
                Expr::Literal(Value::Int(1))
            } else {
                Expr::product(factors)
            }
        };
        let mut factors = self.common;
        if let [(sign, only)] = &self.rests[..] {
            factors.extend(only.iter().cloned());
            let expr = sum(self.indices, factors);
            return match sign {
                Sign::Plus => expr,
                Sign::Minus => Expr::map(ScalarOp::Neg, vec![expr]),
            };
        }
        factors.extend(signed_sum(
            self.rests.into_iter().map(|(sign, r)| (sign, rest(r))),
        ));
        sum(self.indices, factors)
    }
}

/// `±a ± b ± ...` (`None` for no terms).
fn signed_sum(terms: impl IntoIterator<Item = (Sign, Expr)>) -> Option<Expr> {
    let mut total: Option<Expr> = None;
    for (sign, expr) in terms {
        total = Some(match (total, sign) {
            (None, Sign::Plus) => expr,
            (None, Sign::Minus) => Expr::map(ScalarOp::Neg, vec![expr]),
            (Some(t), Sign::Plus) => Expr::map(ScalarOp::Add, vec![t, expr]),
            (Some(t), Sign::Minus) => Expr::map(ScalarOp::Sub, vec![t, expr]),
        });
    }
    total
}

/// The most terms a product is distributed into.
const MAX_TERMS: usize = 16;

/// The product of `factors` as a signed sum of products, distributing it
/// over every factor that is a sum or difference (`a * (b - c)` is
/// `a*b - a*c`); `None` when no factor is, or past [`MAX_TERMS`] terms.
fn distribute(factors: &[Expr]) -> Option<Vec<(Sign, Vec<Expr>)>> {
    if !factors.iter().any(|f| terms_of(f).is_some()) {
        return None;
    }
    let mut products: Vec<(Sign, Vec<Expr>)> = vec![(Sign::Plus, Vec::new())];
    for factor in factors {
        let terms = terms_of(factor).unwrap_or_else(|| vec![(Sign::Plus, factor.clone())]);
        if products.len() * terms.len() > MAX_TERMS {
            return None;
        }
        let mut next = Vec::new();
        for (sign, product) in &products {
            for (term_sign, term) in &terms {
                let mut extended = product.clone();
                match term {
                    Expr::Map {
                        op: ScalarOp::Mul,
                        args,
                    } => extended.extend(args.iter().cloned()),
                    other => extended.push(other.clone()),
                }
                let sign = if sign == term_sign {
                    Sign::Plus
                } else {
                    Sign::Minus
                };
                next.push((sign, extended));
            }
        }
        products = next;
    }
    Some(products)
}

/// The signed terms of a sum, difference or negation; `None` for any
/// other expression.
fn terms_of(expr: &Expr) -> Option<Vec<(Sign, Expr)>> {
    let flip = |s: Sign| match s {
        Sign::Plus => Sign::Minus,
        Sign::Minus => Sign::Plus,
    };
    let expand = |e: &Expr| terms_of(e).unwrap_or_else(|| vec![(Sign::Plus, e.clone())]);
    match expr {
        Expr::Map {
            op: ScalarOp::Add,
            args,
        } => Some(args.iter().flat_map(expand).collect()),
        Expr::Map {
            op: ScalarOp::Sub,
            args,
        } if args.len() == 2 => {
            let mut terms = expand(&args[0]);
            terms.extend(expand(&args[1]).into_iter().map(|(s, t)| (flip(s), t)));
            Some(terms)
        }
        Expr::Map {
            op: ScalarOp::Neg,
            args,
        } if args.len() == 1 => Some(
            expand(&args[0])
                .into_iter()
                .map(|(s, t)| (flip(s), t))
                .collect(),
        ),
        _ => None,
    }
}

/// A state of the search: the factors after some steps.
#[derive(Clone, Debug)]
struct State<S> {
    factors: Vec<Factor<S>>,
    steps: Vec<Step>,
    cost: f64,
}

/// A candidate step from a state: the factors it takes (by position), the
/// statistics, variables and key of its result, and its cost.
struct Candidate<S> {
    chosen: Vec<usize>,
    vars: u64,
    stats: Rc<S>,
    annihilates: bool,
    key: FactorKey,
    written: f64,
    cost: f64,
}

/// The search space of one sum, with its estimate caches.
struct Space<'a, E: SparsityEstimator> {
    estimator: &'a E,
    names: &'a [String],
    sizes: Vec<u64>,
    /// The names of the variables it sums over.
    summed: Vec<String>,
    /// The sorted factor keys of the last [`Space::finish`] (its memory is
    /// reused).
    key: Vec<FactorKey>,
    /// Estimates made so far.
    estimates: usize,
    /// The cost of finishing with a set of factors (by their keys).
    costs: HashMap<Vec<FactorKey>, f64>,
    /// The statistics of the sum as written (its inputs, no step taken),
    /// once [`Space::finish`] estimated them.
    written: Option<E::Stats>,
    /// Eliminating a variable from a set of factors (by their keys): the
    /// step's statistics, estimated entries and cost.
    steps: HashMap<FactorKey, (Rc<E::Stats>, f64, f64)>,
    /// The memory a step may need ([`step_fits`]).
    memory_limit: f64,
    /// A step estimated to write this many entries or more is not taken.
    max_step_entries: f64,
    /// Whether the greedy search stops where a round would cost more than
    /// what is left of the plan ([`trivial_cost`]).
    trivial: bool,
}

impl<E: SparsityEstimator> Space<'_, E> {
    /// The statistics of the product of `factors`: the join of those that
    /// annihilate, with the variables only the others have ranging over
    /// their whole dimension.
    fn product(&self, factors: &[&Factor<E::Stats>]) -> Result<E::Stats> {
        let bound = factors
            .iter()
            .filter(|f| f.annihilates)
            .fold(0u64, |acc, f| acc | f.vars);
        let all = factors.iter().fold(0u64, |acc, f| acc | f.vars);
        let dense: Vec<(String, u64)> = (0..self.names.len())
            .filter(|k| (all & !bound) >> k & 1 == 1)
            .map(|k| (self.names[k].clone(), self.sizes[k]))
            .collect();
        let dense_stats = if dense.is_empty() {
            None
        } else {
            Some(self.estimator.leaf(Leaf::Dense { vars: &dense })?)
        };
        let mut joined: Vec<&E::Stats> = factors
            .iter()
            .filter(|f| f.annihilates)
            .map(|f| &*f.stats)
            .collect();
        joined.extend(dense_stats.as_ref());
        if joined.is_empty() {
            return self.estimator.leaf(Leaf::Empty);
        }
        self.estimator.join(&joined)
    }

    fn estimate(&mut self, stats: &E::Stats) -> f64 {
        self.estimates += 1;
        self.estimator.estimate(stats)
    }

    /// The cost of the remaining query over `factors`: its entries and the
    /// assignments of its loop nest.
    fn finish(&mut self, factors: &[Factor<E::Stats>]) -> Result<f64> {
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.extend(factors.iter().map(|f| f.key));
        key.sort_unstable();
        let known = self.costs.get(key.as_slice()).copied();
        self.key = key;
        if let Some(cost) = known {
            return Ok(cost);
        }
        let refs: Vec<&Factor<E::Stats>> = factors.iter().collect();
        let body = self.product(&refs)?;
        // Aggregating names the body lacks changes nothing.
        let output = self.estimator.aggregate(&self.summed, &body)?;
        let cost = WRITE_COST * self.estimate(&output) + VISIT_COST * self.estimate(&body);
        self.costs.insert(self.key.clone(), cost);
        if factors.iter().all(|f| matches!(f.origin, Origin::Input(_))) {
            self.written = Some(output);
        }
        Ok(cost)
    }

    /// Eliminating `var` from `factors` (see the module documentation), or
    /// `None` when no factor has it or the step would take every factor.
    /// A step over one earlier step's result alone sums more variables
    /// out in that step's loop nest ([`Optimizer::materialize_parts`]
    /// makes the chain one step): it visits nothing more, and writes its
    /// entries instead of the earlier step's.
    fn candidate(
        &mut self,
        factors: &[Factor<E::Stats>],
        var: usize,
    ) -> Result<Option<Candidate<E::Stats>>> {
        let bit = 1u64 << var;
        let containing: Vec<usize> = (0..factors.len())
            .filter(|&f| factors[f].vars & bit != 0)
            .collect();
        if containing.is_empty() {
            return Ok(None);
        }
        let neighbours = containing
            .iter()
            .fold(0u64, |acc, &f| acc | factors[f].vars)
            & !bit;
        let chosen: Vec<usize> = (0..factors.len())
            .filter(|&f| {
                let vars = factors[f].vars;
                vars & bit != 0
                    || (neighbours.count_ones() >= 2
                        && vars != 0
                        && vars & !neighbours == 0
                        && factors[f].annihilates)
            })
            .collect();
        if chosen.len() == factors.len() {
            return Ok(None);
        }
        let key = chosen.iter().fold((0u128, bit), |acc, &f| {
            (acc.0 | factors[f].key.0, acc.1 | factors[f].key.1)
        });
        let chained = match chosen[..] {
            [f] if matches!(factors[f].origin, Origin::Step(_)) => Some(factors[f].written),
            _ => None,
        };
        let (stats, written, cost) = match self.steps.get(&key) {
            Some(known) => known.clone(),
            None => {
                let refs: Vec<&Factor<E::Stats>> = chosen.iter().map(|&f| &factors[f]).collect();
                let body = self.product(&refs)?;
                let stats = Rc::new(
                    self.estimator
                        .aggregate(std::slice::from_ref(&self.names[var]), &body)?,
                );
                let written = self.estimate(&stats);
                let dims = neighbours.count_ones() as usize;
                let fits = step_fits(
                    written,
                    dims,
                    self.memory_limit,
                    self.max_step_entries,
                    self.estimator.bounds(),
                );
                let cost = if !fits {
                    f64::INFINITY
                } else if let Some(before) = chained {
                    WRITE_COST * (written - before)
                } else {
                    WRITE_COST * written + VISIT_COST * self.estimate(&body)
                };
                self.steps.insert(key, (Rc::clone(&stats), written, cost));
                (stats, written, cost)
            }
        };
        Ok(Some(Candidate {
            vars: neighbours,
            stats,
            annihilates: chosen.iter().any(|&f| factors[f].annihilates),
            key,
            chosen,
            written,
            cost,
        }))
    }

    /// The state after taking `candidate` (eliminating `var`) in `state`.
    fn apply(
        state: &State<E::Stats>,
        var: usize,
        candidate: Candidate<E::Stats>,
    ) -> State<E::Stats> {
        let mut steps = state.steps.clone();
        steps.push(Step {
            var,
            chosen: candidate
                .chosen
                .iter()
                .map(|&f| state.factors[f].origin)
                .collect(),
        });
        let mut factors: Vec<Factor<E::Stats>> = state
            .factors
            .iter()
            .enumerate()
            .filter(|(f, _)| !candidate.chosen.contains(f))
            .map(|(_, f)| f.clone())
            .collect();
        factors.push(Factor {
            vars: candidate.vars,
            stats: candidate.stats,
            annihilates: candidate.annihilates,
            key: candidate.key,
            origin: Origin::Step(steps.len() - 1),
            written: candidate.written,
        });
        State {
            factors,
            steps,
            cost: state.cost + candidate.cost,
        }
    }

    fn plan(&mut self, state: State<E::Stats>) -> Result<Plan> {
        let cost = state.cost + self.finish(&state.factors)?;
        Ok(Plan {
            remaining: state.factors.iter().map(|f| f.origin).collect(),
            steps: state.steps,
            cost,
        })
    }

    /// Greedy search: take the cheapest step that lowers the plan's cost,
    /// until none does, or (with `trivial`) until what is left of the plan
    /// costs less than the next round's estimates would.
    fn greedy(&mut self, inputs: &[Factor<E::Stats>], vars: &[usize]) -> Result<Plan> {
        let mut state = State {
            factors: inputs.to_vec(),
            steps: Vec::new(),
            cost: 0.0,
        };
        let mut left: Vec<usize> = vars.to_vec();
        loop {
            let now = self.finish(&state.factors)?;
            if self.trivial && now < trivial_cost(left.len()) {
                return self.plan(state);
            }
            let mut candidates = Vec::new();
            for &v in &left {
                if let Some(c) = self.candidate(&state.factors, v)? {
                    candidates.push((v, c));
                }
            }
            candidates.sort_by(|a, b| a.1.cost.total_cmp(&b.1.cost));
            let mut taken = None;
            for (v, candidate) in candidates {
                if candidate.cost >= now {
                    break;
                }
                let next = Self::apply(&state, v, candidate);
                if next.cost - state.cost + self.finish(&next.factors)? < now {
                    taken = Some((v, next));
                    break;
                }
            }
            match taken {
                Some((v, next)) => {
                    state = next;
                    left.retain(|&w| w != v);
                }
                None => return self.plan(state),
            }
        }
    }

    /// Exact search: dynamic programming over the sets of eliminated
    /// variables, starting from the plan `best` (the greedy one) and
    /// pruning states that already cost more than the best plan found.
    /// States are expanded in the order of what their plan would cost if
    /// it stopped there (their steps plus the remaining query), so that the
    /// budget goes to the most promising ones first; when the estimates
    /// made reach `budget` it returns the best plan so far.
    fn exact(
        &mut self,
        inputs: &[Factor<E::Stats>],
        vars: &[usize],
        mut best: Plan,
        budget: usize,
    ) -> Result<Plan> {
        let start = State {
            factors: inputs.to_vec(),
            steps: Vec::new(),
            cost: 0.0,
        };
        // The cheapest state per set of eliminated variables, with its
        // priority: what its plan costs if it stops there. Costs are
        // non-negative, so their bit patterns order like them; a queued
        // priority that no longer matches its set's state is stale.
        let mut states: HashMap<u64, (u64, State<E::Stats>)> = HashMap::from([(0, (0, start))]);
        let mut open: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::from([Reverse((0, 0))]);
        while let Some(Reverse((priority, set))) = open.pop() {
            let Some((current, state)) = states.get(&set) else {
                continue;
            };
            if *current != priority || state.cost >= best.cost {
                continue;
            }
            let state = state.clone();
            for &v in vars {
                if set >> v & 1 == 1 {
                    continue;
                }
                if self.estimates > budget {
                    return Ok(best);
                }
                let Some(candidate) = self.candidate(&state.factors, v)? else {
                    continue;
                };
                if state.cost + candidate.cost >= best.cost {
                    continue;
                }
                let key = set | 1 << v;
                let after = Self::apply(&state, v, candidate);
                if states.get(&key).is_some_and(|(_, s)| after.cost >= s.cost) {
                    continue;
                }
                let total = after.cost + self.finish(&after.factors)?;
                if total < best.cost {
                    best = Plan {
                        remaining: after.factors.iter().map(|f| f.origin).collect(),
                        steps: after.steps.clone(),
                        cost: total,
                    };
                }
                open.push(Reverse((total.to_bits(), key)));
                states.insert(key, (total.to_bits(), after));
            }
        }
        Ok(best)
    }
}

/// The bits of `vars` among `names`.
fn var_bits(vars: &[String], names: &[String]) -> u64 {
    vars.iter()
        .filter_map(|v| names.iter().position(|n| n == v))
        .fold(0, |acc, k| acc | 1 << k)
}

/// The size of every index variable of `expr` (the largest dimension it
/// indexes).
fn index_sizes<S>(expr: &Expr, aliases: &Aliases<S>) -> HashMap<String, u64> {
    fn walk<S>(expr: &Expr, aliases: &Aliases<S>, out: &mut HashMap<String, u64>) {
        let mut record = |terms: &[IndexTerm], sizes: Vec<u64>| {
            for (term, size) in terms.iter().zip(sizes) {
                if let IndexTerm::Var(v) = term {
                    let known = out.entry(v.clone()).or_insert(size);
                    *known = (*known).max(size);
                }
            }
        };
        match expr {
            Expr::Input(input) => record(
                &input.indices,
                input.tensor.tensor.dims().iter().map(|d| d.size).collect(),
            ),
            Expr::Alias { name, indices } => match aliases.get(name) {
                Some(AliasSource::Stored(tensor)) => {
                    record(indices, tensor.dims().iter().map(|d| d.size).collect())
                }
                Some(AliasSource::Estimated { indices: own, .. }) => {
                    record(indices, own.iter().map(|(_, s)| *s).collect())
                }
                None => {}
            },
            Expr::Map { args, .. } => args.iter().for_each(|a| walk(a, aliases, out)),
            Expr::Agg { body, .. } => walk(body, aliases, out),
            Expr::Literal(_) | Expr::Index(_) => {}
        }
    }
    let mut out = HashMap::new();
    walk(expr, aliases, &mut out);
    out
}

/// `SUM(indices) Π factors`, without an empty sum or a one-factor product.
fn sum(indices: Vec<String>, factors: Vec<Expr>) -> Expr {
    Expr::sum(indices, Expr::product(factors))
}

/// `expr` with every aggregate's bound indices renamed where another part
/// of the query already uses the name (`free` are the query's indices).
fn unique_names(expr: Expr, free: &[String]) -> Expr {
    fn all_names(expr: &Expr, out: &mut HashSet<String>) {
        match expr {
            Expr::Agg { indices, body, .. } => {
                out.extend(indices.iter().cloned());
                all_names(body, out);
            }
            Expr::Map { args, .. } => args.iter().for_each(|a| all_names(a, out)),
            other => out.extend(other.free_indices()),
        }
    }
    fn walk(expr: Expr, claimed: &mut HashSet<String>, taken: &mut HashSet<String>) -> Expr {
        match expr {
            Expr::Agg { op, indices, body } => {
                let mut body = *body;
                let mut bound = Vec::with_capacity(indices.len());
                for index in indices {
                    let name = if claimed.contains(&index) {
                        let mut n = 2;
                        while taken.contains(&format!("{index}_{n}")) {
                            n += 1;
                        }
                        let fresh = format!("{index}_{n}");
                        body = rename(&body, &|v| (v == index).then(|| fresh.clone()));
                        fresh
                    } else {
                        index
                    };
                    claimed.insert(name.clone());
                    taken.insert(name.clone());
                    bound.push(name);
                }
                Expr::Agg {
                    op,
                    indices: bound,
                    body: Box::new(walk(body, claimed, taken)),
                }
            }
            Expr::Map { op, args } => Expr::Map {
                op,
                args: args.into_iter().map(|a| walk(a, claimed, taken)).collect(),
            },
            other => other,
        }
    }
    let mut taken = HashSet::new();
    all_names(&expr, &mut taken);
    let mut claimed: HashSet<String> = free.iter().cloned().collect();
    claimed.extend(expr.free_indices());
    walk(expr, &mut claimed, &mut taken)
}

/// `expr` with the free occurrences of every index `v` for which `to(v)`
/// gives a name renamed to it.
fn rename(expr: &Expr, to: &dyn Fn(&str) -> Option<String>) -> Expr {
    let name = |v: &String| to(v).unwrap_or_else(|| v.clone());
    let term = |t: &IndexTerm| match t {
        IndexTerm::Var(v) => IndexTerm::Var(name(v)),
        other => other.clone(),
    };
    match expr {
        Expr::Input(input) => {
            let mut input = input.clone();
            input.indices = input.indices.iter().map(term).collect();
            Expr::Input(input)
        }
        Expr::Alias { name, indices } => Expr::Alias {
            name: name.clone(),
            indices: indices.iter().map(term).collect(),
        },
        Expr::Index(v) => Expr::Index(name(v)),
        Expr::Agg { op, indices, body } => {
            // The indices it binds are not free in its body.
            let inner = |v: &str| {
                if indices.iter().any(|i| i == v) {
                    None
                } else {
                    to(v)
                }
            };
            Expr::Agg {
                op: *op,
                indices: indices.clone(),
                body: Box::new(rename(body, &inner)),
            }
        }
        Expr::Map { op, args } => Expr::Map {
            op: *op,
            args: args.iter().map(|a| rename(a, to)).collect(),
        },
        other => other.clone(),
    }
}

/// Flattens products and lifts `SUM`s out of products and out of `SUM`s,
/// bottom-up (bound names must be unique, see [`unique_names`]).
fn lift(expr: Expr) -> Expr {
    match expr {
        Expr::Map {
            op: ScalarOp::Mul,
            args,
        } => {
            let mut indices = Vec::new();
            let mut factors = Vec::new();
            for arg in args.into_iter().map(lift) {
                match arg {
                    Expr::Agg {
                        op: AggOp::Sum,
                        indices: bound,
                        body,
                    } => {
                        indices.extend(bound);
                        factors.push(*body);
                    }
                    other => factors.push(other),
                }
            }
            Expr::sum(indices, Expr::map(ScalarOp::Mul, factors))
        }
        Expr::Map { op, args } => Expr::Map {
            op,
            args: args.into_iter().map(lift).collect(),
        },
        Expr::Agg {
            op: AggOp::Sum,
            indices,
            body,
        } => match lift(*body) {
            Expr::Agg {
                op: AggOp::Sum,
                indices: inner,
                body,
            } => {
                let mut all = indices;
                all.extend(inner);
                Expr::Agg {
                    op: AggOp::Sum,
                    indices: all,
                    body,
                }
            }
            body => Expr::Agg {
                op: AggOp::Sum,
                indices,
                body: Box::new(body),
            },
        },
        Expr::Agg { op, indices, body } => Expr::Agg {
            op,
            indices,
            body: Box::new(lift(*body)),
        },
        other => other,
    }
}

/// Every `SUM` over a product of `expr` with its pairs of factors that
/// read one entry merged: two factors reading the same stored table at
/// the same coordinates of a key of it (a prefix of its dimensions that no
/// two stored entries share,
/// [`Tensor::key_prefix`](crate::storage::Tensor::key_prefix)) are both non-zero only at the
/// one entry there, so their other coordinates are equal, and each of
/// these variables that the sum binds is renamed to the other factor's.
/// `SUM(o,n) X[o,n,j] * X[o,n,k]` with `X = SUM(s) L[o,n,s] * F[s,j]`
/// lifts to `SUM(o,n,s,s_2) L[o,n,s] * L[o,n,s_2] * F[s,j] * F[s_2,k]`;
/// when `(o, n)` is a key of `L` it becomes `SUM(o,n,s) L[o,n,s] *
/// L[o,n,s] * F[s,j] * F[s,k]`, which no longer pairs every `s` with every
/// `s_2` (the covariance of a join's feature matrix). Both factors stay,
/// their product being the entry's value squared, unless they read a
/// pattern of ones (a keyed table's rows, [`is_pattern_of_ones`]), whose
/// square is itself: then one goes, and the loops no longer intersect the
/// table with itself.
///
/// The same holds for a `SUM` nested under a map in a factor of a product
/// (as in `sigmoid` or `ln` of a sum, which cannot be lifted): where the
/// product is not 0, each of its stored inputs reads one entry, so a
/// factor of the nested sum that reads that table at the same key
/// coordinates reads the same entry, and the nested sum's variables that
/// tell the two apart take the outer factor's coordinates
/// ([`unnested_key_reads`]). The logistic regression over a join's pairs,
/// `SUM(s,p) L[o,n,s,p] * L[q,m,t,p] * sigmoid(SUM(s_2,t_2,p_2,j)
/// L[o,n,s_2,p_2] * L[q,m,t_2,p_2] * x[s_2,t_2,p_2,j] * θ[j])`, becomes
/// `SUM(s,p) L[o,n,s,p] * L[q,m,t,p] * sigmoid(SUM(j) x[s,t,p,j] * θ[j])`
/// (with `(o, n)` a key of `L`, whose rows are a pattern of ones): one
/// pass over the pairs instead of a nested result of one entry per pair
/// joined with the pairs again.
fn merge_key_joins(expr: Expr) -> Expr {
    match expr {
        Expr::Agg {
            op: AggOp::Sum,
            indices,
            body,
        } => match *body {
            // The factors' own sums first; the nested sums are unnested
            // once, after this sum's variables are merged.
            Expr::Map {
                op: ScalarOp::Mul,
                args,
            } => {
                let args = args.into_iter().map(merge_key_joins).collect();
                let (indices, factors) = merged_key_factors(indices, args);
                Expr::sum(
                    indices,
                    Expr::map(ScalarOp::Mul, unnested_key_reads(factors)),
                )
            }
            body => Expr::sum(indices, merge_key_joins(body)),
        },
        Expr::Map {
            op: ScalarOp::Mul,
            args,
        } => Expr::map(
            ScalarOp::Mul,
            unnested_key_reads(args.into_iter().map(merge_key_joins).collect()),
        ),
        other => other.map_children(merge_key_joins),
    }
}

/// The factors of a product with the `SUM`s nested under maps in them
/// reading, by a key, the entries that the product's stored inputs read
/// (see [`merge_key_joins`]): each such sum's variables that tell its
/// factor apart from the outer one are renamed to the outer one's, and
/// a factor that then equals an outer pattern of ones is dropped (it is 1
/// wherever the product is not 0).
fn unnested_key_reads(factors: Vec<Expr>) -> Vec<Expr> {
    // Most products (every subgraph count) have no map to look into.
    if !factors.iter().any(|f| matches!(f, Expr::Map { .. })) {
        return factors;
    }
    let outer: Vec<Expr> = factors
        .iter()
        .filter(|f| matches!(f, Expr::Input(_)))
        .cloned()
        .collect();
    if outer.is_empty() {
        return factors;
    }
    factors
        .into_iter()
        .map(|f| match f {
            Expr::Map { .. } => unnest_under_maps(f, &outer),
            other => other,
        })
        .collect()
}

/// `expr` (a factor of a product whose stored inputs are `outer`) with
/// the `SUM`s reached through its maps unnested as
/// [`unnested_key_reads`] says. Other aggregates are left as they are.
fn unnest_under_maps(expr: Expr, outer: &[Expr]) -> Expr {
    match expr {
        Expr::Map { op, args } => Expr::Map {
            op,
            args: args
                .into_iter()
                .map(|a| unnest_under_maps(a, outer))
                .collect(),
        },
        Expr::Agg {
            op: AggOp::Sum,
            mut indices,
            body,
        } if !outer.iter().any(|o| reads_any_of(o, &indices)) => {
            // (Normalized names are unique: an outer factor never reads a
            // variable the nested sum binds, which would be another one.)
            let mut body = *body;
            while let Some((from, to)) = product_factors(&body)
                .iter()
                .find_map(|inner| outer.iter().find_map(|o| key_rename(o, inner, &indices)))
            {
                indices.retain(|v| *v != from);
                body = rename(&body, &|v: &str| (v == from).then(|| to.clone()));
            }
            let mut factors = product_factors(&body);
            let before = factors.len();
            factors.retain(|f| !(is_pattern_of_ones(f) && outer.contains(f)));
            if factors.len() < before {
                body = if factors.is_empty() {
                    Expr::Literal(Value::Int(1))
                } else {
                    Expr::product(factors)
                };
            }
            Expr::sum(indices, body)
        }
        other => other,
    }
}

/// Whether `expr` reads any of the variables `names`.
fn reads_any_of(expr: &Expr, names: &[String]) -> bool {
    expr.free_indices().iter().any(|v| names.contains(v))
}

/// The factors of a product, or the expression itself as the one factor.
fn product_factors(expr: &Expr) -> Vec<Expr> {
    match expr {
        Expr::Map {
            op: ScalarOp::Mul,
            args,
        } => args.clone(),
        other => vec![other.clone()],
    }
}

/// [`merge_key_joins`] for one `SUM(indices) Π factors`.
fn merged_key_factors(
    mut indices: Vec<String>,
    mut factors: Vec<Expr>,
) -> (Vec<String>, Vec<Expr>) {
    let mut a = 0;
    while a < factors.len() {
        let mut b = a + 1;
        while b < factors.len() {
            while let Some((from, to)) = key_rename(&factors[a], &factors[b], &indices) {
                indices.retain(|v| *v != from);
                let to_name = |v: &str| (v == from).then(|| to.clone());
                factors = factors.iter().map(|f| rename(f, &to_name)).collect();
            }
            if factors[a] == factors[b] && is_pattern_of_ones(&factors[a]) {
                factors.remove(b);
            } else {
                b += 1;
            }
        }
        a += 1;
    }
    (indices, factors)
}

/// Whether `factor` reads 1 at every stored entry of a table (and 0
/// elsewhere), so that its square is itself: the rows of a table with
/// value columns, or of a bag whose multiplicities are all 1.
fn is_pattern_of_ones(factor: &Expr) -> bool {
    matches!(factor, Expr::Input(x)
        if x.annotation == Annotation::Multiplicity && x.tensor.tensor.counts_each_entry_once())
}

/// The next renaming (a summed variable, the variable it becomes) that
/// makes factors `a` and `b` equal when both read one entry of a stored
/// table by a key of it (see [`merge_key_joins`]); `None` when they are
/// equal already or do not read one entry, or when no variable that
/// differs between them is summed here.
fn key_rename(a: &Expr, b: &Expr, summed: &[String]) -> Option<(String, String)> {
    let (Expr::Input(x), Expr::Input(y)) = (a, b) else {
        return None;
    };
    if x.tensor != y.tensor || x.annotation != y.annotation || x.indices == y.indices {
        return None;
    }
    // The cheap test first: the key scan reads the table once.
    if x.indices.first() != y.indices.first() {
        return None;
    }
    let key = x.tensor.tensor.key_prefix();
    if x.indices.get(..key) != y.indices.get(..key) {
        return None;
    }
    x.indices
        .iter()
        .zip(&y.indices)
        .find_map(|pair| match pair {
            (IndexTerm::Var(u), IndexTerm::Var(v)) if u != v => {
                if summed.contains(v) {
                    Some((v.clone(), u.clone()))
                } else if summed.contains(u) {
                    Some((u.clone(), v.clone()))
                } else {
                    None
                }
            }
            _ => None,
        })
}

/// A text that equal steps share whatever their variables are called, and
/// the step's output variables in the canonical order. Factors are ordered
/// by their text with variables blanked, then variables are numbered in
/// order of appearance.
fn canonical(body: &Expr) -> (String, Vec<String>) {
    let (indices, inner) = match body {
        Expr::Agg { indices, body, .. } => (indices.clone(), body.as_ref().clone()),
        other => (Vec::new(), other.clone()),
    };
    let mut factors: Vec<Expr> = match inner {
        Expr::Map {
            op: ScalarOp::Mul,
            args,
        } => args,
        other => vec![other],
    };
    let role = |v: &str| {
        if indices.iter().any(|i| i == v) {
            "s"
        } else {
            "o"
        }
    };
    factors.sort_by_cached_key(|f| rename(f, &|v| Some(format!("\u{1}{}", role(v)))).to_string());
    let mut order: Vec<String> = Vec::new();
    for factor in &factors {
        for v in factor.free_indices() {
            if !order.contains(&v) {
                order.push(v);
            }
        }
    }
    let numbered: Vec<String> = order
        .iter()
        .enumerate()
        .map(|(k, v)| format!("\u{1}{}{k}", role(v)))
        .collect();
    let number = |v: &str| {
        order
            .iter()
            .position(|o| o == v)
            .map(|k| numbered[k].clone())
    };
    let renamed: Vec<Expr> = factors.iter().map(|f| rename(f, &number)).collect();
    let summed: Vec<String> = indices
        .iter()
        .filter_map(|v| {
            order
                .iter()
                .position(|o| o == v)
                .map(|k| numbered[k].clone())
        })
        .collect();
    let text = sum(summed, renamed).to_string();
    let outputs: Vec<String> = order.into_iter().filter(|v| !indices.contains(v)).collect();
    (text, outputs)
}
