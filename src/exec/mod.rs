//! The executor: runs IR programs as worst-case-optimal joins over
//! fibertree cursors (Galley sections 3.2, 4 and 6).
//!
//! [`execute`] plans a program ([`planner`]) into a [`PhysicalPlan`]
//! ([`plan`]) and runs it ([`run`]): each physical query is a loop nest in
//! the style of generic join. At every loop one input's fiber is iterated
//! and the coordinate is looked up in the others (dense slot, hash probe or
//! galloping seek); an assignment is skipped as soon as the inputs that
//! annihilate the expression are absent, and the union is iterated where an
//! operator does not annihilate (`+`, `max`, comparisons; for `ifelse`,
//! the condition and the branch its fill picks). Inner
//! aggregated loops are summed into per-depth accumulators, so the full join
//! is never materialized; products of inputs under `SUM` take a
//! monomorphized path that multiplies each factor in at the depth where its
//! last index is bound ([`product`]). A query the optimizer marks as one
//! matrix product of dense-enough operands runs as a dense kernel instead
//! ([`dense`]), a product over one sparse input whose other inputs are
//! dense arrays as one pass over that input's entries ([`driven`]), and a
//! product of two tables whose output holds a key of each (a join's pairs
//! written out) as one pass over their joined pairs of entries
//! ([`paired`]).
//!
//! Results are exactly those of the reference evaluator
//! ([`crate::reference`]): the same fill-value semantics, exact 64-bit
//! integers (overflow is [`Error::Overflow`](crate::Error::Overflow)),
//! floats up to the order of summation. The outermost loop is split into
//! chunks of balanced work, independent of the number of threads, run on a
//! `rayon` pool and merged in chunk order, so results do not depend on the
//! thread count. Intermediates and results are charged against a memory
//! limit ([`Error::OutOfMemory`](crate::Error::OutOfMemory)), and the
//! progress sink's cancellation flag is polled between chunks and every few
//! thousand inner iterations.
//!
//! A caller that needs only the first rows of an output that does not
//! aggregate (a SQL join listing under `LIMIT`) says so with [`FirstRows`]
//! ([`run_first`]): when that query's loops bind its output indices in
//! order, its chunks run one after another and it stops as soon as its
//! entries hold that many rows, so it computes its first entries (by
//! coordinates) and no more.

mod accumulate;
mod aligned;
mod control;
mod dense;
mod driven;
mod finish;
mod kernel;
mod paired;
pub mod plan;
pub mod planner;
mod product;
mod run;
pub(crate) mod tiled;

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::ir::Program;
use crate::progress::ProgressSink;
use crate::storage::Tensor;

pub use control::{MemoryBudget, StepGuards, format_bytes};
pub use kernel::entry_bytes;
pub use plan::PhysicalPlan;
pub use planner::{PlanChoices, QueryChoices, plan, plan_with};
pub use run::WORK_OVERESTIMATE;

/// How a program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecOptions {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// The most bytes the intermediates and results of one program may
    /// take.
    pub memory_limit: u64,
}

impl Default for ExecOptions {
    /// One thread per core and [`default_memory_limit`].
    fn default() -> Self {
        ExecOptions {
            threads: default_threads(),
            memory_limit: default_memory_limit(),
        }
    }
}

/// The number of cores (1 if it cannot be told).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The memory limit used when none is set: 60% of the physical memory in
/// `/proc/meminfo`, or 4 GiB where that cannot be read.
pub fn default_memory_limit() -> u64 {
    const FALLBACK: u64 = 4 << 30;
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .map_or(FALLBACK, |kib| kib.saturating_mul(1024) / 10 * 6)
}

/// Plans `program` with the default planner and runs it; returns each
/// query's result by name, in order, as
/// [`reference::evaluate`](crate::reference::evaluate) does.
///
/// Errors: planning errors (see [`plan_with`]), integer overflow, division
/// of a non-zero value by zero, [`Error::OutOfMemory`](crate::Error::OutOfMemory)
/// and [`Error::Cancelled`](crate::Error::Cancelled).
pub fn execute(
    program: &Program,
    options: &ExecOptions,
    progress: &dyn ProgressSink,
) -> Result<Vec<(String, Arc<Tensor>)>> {
    let plan = plan(program)?;
    run(&plan, options, progress)
}

/// Runs a physical plan and returns the program's outputs by name, in
/// order (intermediates are dropped).
pub fn run(
    plan: &PhysicalPlan,
    options: &ExecOptions,
    progress: &dyn ProgressSink,
) -> Result<Vec<(String, Arc<Tensor>)>> {
    Ok(run::run_plan(plan, options, progress, None, &StepGuards::default())?.0)
}

/// A program's outputs by name, in order.
pub type Outputs = Vec<(String, Arc<Tensor>)>;

/// [`run`], and what each query of the plan took.
pub fn run_profiled(
    plan: &PhysicalPlan,
    options: &ExecOptions,
    progress: &dyn ProgressSink,
) -> Result<(Outputs, Vec<QueryRun>)> {
    run::run_plan(plan, options, progress, None, &StepGuards::default())
}

/// [`run_profiled`] for a caller that needs only the first rows of one
/// output: when `first` names a query that does not aggregate and whose
/// loops bind its output indices in order (the planner's
/// [`InOrder`](planner::InOrder) makes them so), that query stops once its
/// entries, in coordinate order, hold `first.rows` rows; its result is
/// then those first entries. Any other query runs whole. A step that
/// `guards` names stops with
/// [`Error::StepOutgrown`](crate::Error::StepOutgrown) once it charges
/// more memory than its guard, or meets the memory limit.
pub fn run_first(
    plan: &PhysicalPlan,
    options: &ExecOptions,
    progress: &dyn ProgressSink,
    first: Option<&FirstRows>,
    guards: &StepGuards,
) -> Result<(Outputs, Vec<QueryRun>)> {
    run::run_plan(plan, options, progress, first, guards)
}

/// The first rows of one output that a caller needs (a `LIMIT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstRows {
    /// The output's name.
    pub query: String,
    /// How many rows: each entry stands for as many as its value (an
    /// integer multiplicity; any other non-zero value is one row).
    pub rows: u64,
}

/// What one query of a plan produced and took.
#[derive(Clone, Debug)]
pub struct QueryRun {
    /// The query's name.
    pub name: String,
    /// The entries its result stores.
    pub entries: usize,
    /// Its wall-clock time, re-indexing its inputs included.
    pub time: Duration,
    /// When it ran under a row budget ([`FirstRows`]): how far it got.
    pub limited: Option<Limited>,
    /// When it ran in a fused pass with other queries: the pass. The
    /// pass's time is the first member's; the others' is zero.
    pub fused: Option<Fusion>,
    /// Whether it ran as one loop over its inputs' entries instead of its
    /// loop nest, and how.
    pub entrywise: Option<Entrywise>,
}

/// How a query ran as one loop over its inputs' entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entrywise {
    /// Its inputs are stored at the same coordinates: one loop over the
    /// entries they share.
    Shared,
    /// Its inputs' sorted coordinates were merged.
    Merged,
}

/// The fused pass a query ran in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fusion {
    /// The queries of the pass, in order.
    pub members: Vec<String>,
    /// Whether the query's result was row-local: computed a few rows at a
    /// time for the next member and never stored.
    pub row_local: bool,
}

/// How far a query that needed only its first rows ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limited {
    /// The rows it needed.
    pub rows: u64,
    /// The chunks of its outermost loop that ran before it had them.
    pub chunks_run: usize,
    /// The chunks its outermost loop was split into.
    pub chunks: usize,
}
