//! Runs a physical plan: opens each query's inputs (building the indexes
//! it reads, re-indexing where the plan says so), splits the outermost loop
//! into chunks of balanced work, runs them on the thread pool, merges their
//! entries in chunk order, and stores the result as a tensor with the
//! reference evaluator's conventions. A step with a guard
//! ([`StepGuards`]) stops once it charges more than the guard allows. The
//! query a caller needs only the
//! first rows of ([`FirstRows`]) runs its chunks in order under a
//! [`RowBudget`] and stops when it has them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::ir::{Annotation, Value};
use crate::progress::ProgressSink;
use crate::storage::fibertree::FiberTree;
use crate::storage::{DimensionSpec, Tensor, ValueData, ValueType};

use super::accumulate::{AccumulatorPool, Entries, Finished, Slot};
use super::control::{Control, Held, RowBudget, StepGuards, pool, within_threads};
use super::kernel::{Cands, InputRt, Kernel, Worker, entry_bytes, values_of};
use super::plan::{Access, PhysicalPlan, PhysicalQuery, Role, Source, Term};
use super::{Entrywise, ExecOptions, FirstRows, Fusion, Limited, Outputs, QueryRun};
use super::{aligned, dense, driven, finish, paired, product, tiled};

/// How many chunks the outermost loop is split into (at most): a fixed
/// number, so that results do not depend on the thread count.
const CHUNKS: usize = 256;

/// The least work (estimated inner iterations) a chunk is given: enough
/// that a chunk's worker and merge cost little next to it on small inputs
/// (a few thousand steps). An outer candidate's weight counts one
/// iteration per unit unless the loops' estimated work says more
/// ([`chunk_target`]).
const MIN_CHUNK_WORK: f64 = 4096.0;

/// How many times the loops' estimated work ([`PhysicalQuery::work`]) is
/// taken to exceed what they visit: the chain bound is an upper bound, and
/// it multiplies the largest degrees where the loops meet typical ones.
/// The executor divides by it when it decides the chunks, and the
/// `trivial` phase when it weighs a loop nest against the search that
/// would replace it ([`crate::optimizer::logical::kept_as_written`]).
pub const WORK_OVERESTIMATE: f64 = 16.0;

/// The results of the plan so far, by name.
type Results = HashMap<String, Stored>;

/// A stored result: the tensor and the value of its absent entries.
type Stored = (Arc<Tensor>, Value);

pub(crate) fn run_plan(
    plan: &PhysicalPlan,
    options: &ExecOptions,
    progress: &dyn ProgressSink,
    first: Option<&FirstRows>,
    guards: &StepGuards,
) -> Result<(Outputs, Vec<QueryRun>)> {
    let control = Control::new(progress, options.memory_limit);
    let mut results = Results::new();
    let mut outputs = Vec::new();
    let mut runs = Vec::new();
    for step in plan.steps() {
        if let [_, _, ..] = step {
            control.check()?;
            let start = Instant::now();
            if let Some(stored) = run_fused(step, &results, &control, options)? {
                let time = start.elapsed();
                let members: Vec<String> = step.iter().map(|q| q.name.clone()).collect();
                for (n, (query, result)) in step.iter().zip(stored).enumerate() {
                    runs.push(QueryRun {
                        name: query.name.clone(),
                        entries: result.as_ref().map_or(0, |(t, _)| t.nnz()),
                        time: if n == 0 { time } else { Duration::ZERO },
                        limited: None,
                        entrywise: None,
                        fused: Some(Fusion {
                            members: members.clone(),
                            row_local: result.is_none(),
                        }),
                    });
                    if let Some(stored) = result {
                        keep(query, stored, &mut outputs, &mut results);
                    }
                }
                continue;
            }
        }
        // One query, or the members of a fused pass that cannot run as
        // one, each on its own.
        for query in step {
            control.check()?;
            control.enter_step(query.head(), guards.get(&query.name));
            let start = Instant::now();
            let budget = first
                .filter(|f| f.query == query.name && in_output_order(query))
                .map(|f| RowBudget::new(f.rows));
            let ran = run_query(query, &results, &control, options, budget.as_ref())?;
            runs.push(QueryRun {
                name: query.name.clone(),
                entries: ran.stored.0.nnz(),
                time: start.elapsed(),
                limited: budget.map(|b| Limited {
                    rows: first.map_or(0, |f| f.rows),
                    chunks_run: b.chunks_run(),
                    chunks: ran.chunks,
                }),
                fused: None,
                entrywise: match ran.path {
                    Path::Entrywise(how) => Some(how),
                    Path::Loops | Path::Kernel => None,
                },
            });
            keep(query, ran.stored, &mut outputs, &mut results);
        }
    }
    Ok((outputs, runs))
}

/// Keeps `query`'s stored result for the later queries, and among the
/// outputs when it is one.
fn keep(query: &PhysicalQuery, stored: Stored, outputs: &mut Outputs, results: &mut Results) {
    if query.role == Role::Output {
        outputs.push((query.name.clone(), Arc::clone(&stored.0)));
    }
    results.insert(query.name.clone(), stored);
}

/// The value of the entries a query's result does not store: 0 for an
/// output, which stores every coordinate whose value is not 0.
fn fill_of(query: &PhysicalQuery) -> Value {
    match query.role {
        Role::Output => Value::zero(query.ty),
        Role::Intermediate => query.fill,
    }
}

/// Whether `query` writes its entries in the order of its output indices
/// without aggregating: its loops bind exactly the output variables, in
/// order. Then its first entries in loop order are its first by
/// coordinates, and a row budget may stop it (not under a finish, which
/// may drop some of them).
fn in_output_order(query: &PhysicalQuery) -> bool {
    query.aggregate.is_none()
        && query.finish.is_none()
        && !query.loops.is_empty()
        && query
            .loops
            .iter()
            .map(|l| l.var)
            .eq(query.output.iter().copied())
}

/// What running one query gave: its stored result, the chunks its
/// outermost loop was split into, and how it ran.
struct Ran {
    stored: Stored,
    chunks: usize,
    path: Path,
}

/// How a query ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// Its loop nest.
    Loops,
    /// A dense or tiled matrix product, or a sparse-driven pass.
    Kernel,
    /// One loop over its inputs' entries ([`aligned`]).
    Entrywise(Entrywise),
}

impl Ran {
    /// A result computed in one piece (one chunk).
    fn whole(tensor: Tensor, fill: Value, path: Path) -> Ran {
        Ran {
            stored: (Arc::new(tensor), fill),
            chunks: 1,
            path,
        }
    }
}

/// Runs one query; returns its result, the value of its absent entries
/// and how many chunks its outermost loop was split into.
fn run_query(
    query: &PhysicalQuery,
    results: &Results,
    control: &Control<'_>,
    options: &ExecOptions,
    budget: Option<&RowBudget>,
) -> Result<Ran> {
    let fill = fill_of(query);
    if let Some(product) = &query.dense {
        let operand = |k: usize| {
            let access = query
                .inputs
                .get(k)
                .ok_or_else(|| Error::Internal(format!("'{}' has no input {k}", query.name)))?;
            source(access, results)
        };
        let (left, right) = (operand(product.left)?, operand(product.right)?);
        let left = (left.0.as_ref(), left.1);
        let right = (right.0.as_ref(), right.1);
        let entries = if product.tiled {
            tiled::run(query, product, control, options)?
        } else {
            dense::run(query, product, left, right, control, options)?
        };
        if let Some(entries) = entries {
            let tensor = within_threads(options.threads, entries.len(), || {
                store(query, finish::finished(query, entries)?, control)
            })?;
            return Ok(Ran::whole(tensor, fill, Path::Kernel));
        }
    }
    let tensors = query
        .inputs
        .iter()
        .map(|access| source(access, results))
        .collect::<Result<Vec<_>>>()?;
    // A sparse-driven pass, or one over joined pairs, when planned and
    // the inputs allow it; the input named is the one whose coordinates
    // the result may share.
    if query.driven.is_some() || query.paired.is_some() {
        let inputs: Vec<(&Tensor, Annotation)> =
            tensors.iter().map(|(t, a, _)| (t.as_ref(), *a)).collect();
        let pass = match (&query.driven, &query.paired) {
            (Some(driven), _) => driven::run(query, driven, &inputs, control, options)?
                .map(|outcome| (outcome, driven.driver)),
            (None, Some(pairs)) => paired::run(query, pairs, &inputs, control, options)?
                .map(|outcome| (outcome, pairs.left)),
            (None, None) => None,
        };
        if let Some((outcome, k)) = pass {
            let (shared, _) = inputs[k];
            let tensor = store_outcome(query, shared, outcome, control, options)?;
            return Ok(Ran::whole(tensor, fill, Path::Kernel));
        }
    }
    let inputs: Vec<(&Tensor, Annotation, Value)> = tensors
        .iter()
        .map(|(t, a, f)| (t.as_ref(), *a, *f))
        .collect();
    let aligned = match budget {
        Some(_) => None,
        None => aligned::run(query, &inputs, control, options)?,
    };
    if let Some((aligned, how)) = aligned {
        let aligned = pool(options.threads)?.install(|| finish::aligned(query, aligned));
        let tensor = match aligned {
            aligned::Aligned::Total(sum) => {
                let mut entries = Entries::new(0);
                entries.push([], sum);
                store(query, Finished::Float(vec![entries]), control)?
            }
            aligned::Aligned::AtEntries(values) => store_at(query, inputs[0].0, values, control)?,
            aligned::Aligned::Merged(coords, values) => {
                store_columns(query, coords, values, control)?
            }
        };
        return Ok(Ran::whole(tensor, fill, Path::Entrywise(how)));
    }
    let mut opened = Vec::new();
    for (access, (tensor, annotation, fill)) in query.inputs.iter().zip(tensors) {
        // Entries an index build still has to sort (none when it is cached).
        // Its build is charged the estimate, then the index's own size.
        let (unindexed, estimate) = if tensor.built_indexes().contains(&access.index) {
            (0, 0)
        } else {
            let estimate = access.index.estimated_bytes(tensor.nnz());
            control.reserve(estimate)?;
            (tensor.nnz(), estimate)
        };
        let tree: Arc<FiberTree> =
            within_threads(options.threads, unindexed, || tensor.index(&access.index))?;
        control.release(estimate.saturating_sub(tree.bytes()));
        let consts: Vec<i64> = access
            .index
            .order
            .iter()
            .map_while(|&d| match access.terms.get(d) {
                Some(Term::Const(c)) => Some(*c),
                _ => None,
            })
            .collect();
        // A bag whose multiplicities are all 1 is read as a set: its
        // values are not read at all.
        let bag = !tensor.counts_each_entry_once();
        opened.push((tree, annotation, bag, fill, consts));
    }
    let inputs = opened
        .iter()
        .map(|(tree, annotation, bag, fill, consts)| {
            Ok(InputRt {
                tree: tree.as_ref(),
                values: values_of(tree, *annotation, *bag)?,
                fill: *fill,
                consts: consts.clone(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let held = Held::new(control);
    let mut kernel = Kernel::new(query, inputs)?;
    kernel.budget = budget;
    kernel.held = Some(&held);
    let chunks = Chunks::default();
    let entries = match product::Product::new(&kernel) {
        Some(product) => product.run(&kernel, control, options, &chunks)?,
        None => run_general(&kernel, control, options, &chunks)?,
    };
    let tensor = within_threads(options.threads, entries.len(), || {
        store(query, finish::finished(query, entries)?, control)
    })?;
    Ok(Ran {
        stored: (Arc::new(tensor), fill),
        chunks: chunks.get(),
        path: Path::Loops,
    })
}

/// Runs the members of a fused pass as one pass over their driver
/// ([`driven::run_fused`]): each member's stored result and the value of
/// its absent entries, `None` for a row-local one; `None` when the pass
/// cannot run fused (the caller runs the members one by one).
fn run_fused(
    step: &[PhysicalQuery],
    results: &Results,
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Vec<Option<Stored>>>> {
    control.enter_step(
        format!(
            "fused pass of {}",
            step.iter()
                .map(|q| q.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None,
    );
    // A result read row-local by a later member is never stored.
    let row_local = |name: &str| {
        step.iter().any(|q| {
            q.driven
                .as_ref()
                .and_then(|d| q.inputs.get(d.local?))
                .is_some_and(|a| matches!(&a.source, Source::Result(r) if r == name))
        })
    };
    let mut tensors = Vec::with_capacity(step.len());
    for query in step {
        let driven = query.driven.as_ref();
        let sources = query
            .inputs
            .iter()
            .enumerate()
            .map(|(k, access)| {
                if driven.is_some_and(|d| d.local == Some(k)) {
                    Ok(None)
                } else {
                    source(access, results).map(Some)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        tensors.push(sources);
    }
    let members: Vec<driven::Member<'_>> = step
        .iter()
        .zip(&tensors)
        .map(|(query, sources)| driven::Member {
            query,
            inputs: sources
                .iter()
                .map(|s| s.as_ref().map(|(t, a, _)| (t.as_ref(), *a)))
                .collect(),
            row_local: row_local(&query.name),
        })
        .collect();
    let Some(outcomes) = driven::run_fused(&members, control, options)? else {
        return Ok(None);
    };
    let mut stored = Vec::with_capacity(step.len());
    for (member, outcome) in members.iter().zip(outcomes) {
        let query = member.query;
        let Some(outcome) = outcome else {
            stored.push(None);
            continue;
        };
        let driver = query
            .driven
            .as_ref()
            .and_then(|d| member.inputs.get(d.driver).copied().flatten())
            .map(|(tensor, _)| tensor)
            .ok_or_else(|| Error::Internal(format!("'{}' has no driver", query.name)))?;
        let tensor = store_outcome(query, driver, outcome, control, options)?;
        stored.push(Some((Arc::new(tensor), fill_of(query))));
    }
    Ok(Some(stored))
}

/// Stores the result of a sparse-driven run of `query` over `driver`.
fn store_outcome(
    query: &PhysicalQuery,
    driver: &Tensor,
    outcome: driven::Outcome,
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Tensor> {
    match outcome {
        driven::Outcome::Entries(entries) => within_threads(options.threads, entries.len(), || {
            store(query, entries, control)
        }),
        driven::Outcome::AtDriver(values) => store_at(query, driver, values, control),
        driven::Outcome::Columns(coords, values) => store_columns(query, coords, values, control),
        driven::Outcome::Rows(leading, values) => store_rows(query, leading, values, control),
    }
}

/// The tensor an input reads, the annotation it reads of it and its value
/// where absent: a stored table, or a result of the plan so far.
fn source(access: &Access, results: &Results) -> Result<(Arc<Tensor>, Annotation, Value)> {
    Ok(match &access.source {
        Source::Table {
            tensor, annotation, ..
        } => (Arc::clone(tensor), *annotation, access.fill),
        Source::Result(name) => {
            let (tensor, fill) = results.get(name).ok_or_else(|| {
                Error::Internal(format!("the plan reads '{name}' before it is computed"))
            })?;
            let annotation = if tensor.is_bag() {
                Annotation::Multiplicity
            } else {
                Annotation::Column(0)
            };
            (Arc::clone(tensor), annotation, *fill)
        }
    })
}

/// How many chunks a query's outermost loop was split into (set by the
/// path that runs it).
#[derive(Default)]
pub(crate) struct Chunks(AtomicUsize);

impl Chunks {
    pub(crate) fn set(&self, n: usize) {
        self.0.store(n, Ordering::Relaxed);
    }

    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// Runs a kernel on the general path: a `DOUBLE` query's entries as
/// floats, any other's as [`Value`]s.
fn run_general(
    kernel: &Kernel<'_>,
    control: &Control<'_>,
    options: &ExecOptions,
    count: &Chunks,
) -> Result<Finished> {
    Ok(match kernel.query.ty {
        ValueType::Float64 if kernel.prefix > 0 => Finished::Float(
            run_split(kernel, control, options, count, |worker, top| {
                worker.run_floats(top)
            })?
            .into_iter()
            .flatten()
            .collect(),
        ),
        ValueType::Float64 => {
            Finished::Float(run_finished(kernel, control, options, count, |v| {
                Ok(v.as_f64())
            })?)
        }
        _ => Finished::Values(Entries::concat(
            kernel.query.output.len(),
            run_finished(kernel, control, options, count, Ok)?,
        )),
    })
}

/// [`run_general`] with each finished value converted by `typed`, in
/// runs to be stored one after another. When the chunks write output
/// coordinates of their own (an in-order output level splits them), each
/// chunk's entries are finished as it ends, so that only the typed values
/// are carried on, a run per chunk; otherwise the chunks' slots are
/// merged into one run first.
fn run_finished<T: Copy + Send>(
    kernel: &Kernel<'_>,
    control: &Control<'_>,
    options: &ExecOptions,
    count: &Chunks,
    typed: impl Fn(Value) -> Result<T> + Sync,
) -> Result<Vec<Entries<T>>> {
    let finish_all = |entries: Entries<Slot>| entries.map(|slot| typed(kernel.finish(slot)?));
    if kernel.prefix > 0 {
        return run_split(kernel, control, options, count, |worker, top| {
            finish_all(worker.run(top)?)
        });
    }
    let parts = run_split(kernel, control, options, count, |worker, top| {
        worker.run(top)
    })?;
    if parts.is_empty() {
        return Ok(Vec::new());
    }
    let op = kernel.query.aggregate;
    kernel
        .merge_chunks(parts, control, |a, b| a.merge(b, op))?
        .into_iter()
        .map(finish_all)
        .collect()
}

/// `run(worker, candidates)` for each chunk of the outermost loop's
/// candidates (balanced by [`top_weights`]), each with a worker of its
/// own, in chunk order; one run over no candidates for a loop nest
/// without loops, none when the expression is its fill everywhere.
fn run_split<R: Send>(
    kernel: &Kernel<'_>,
    control: &Control<'_>,
    options: &ExecOptions,
    count: &Chunks,
    run: impl Fn(Worker<'_, '_>, Cands) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let mut root = Worker::new(kernel, control, None)?;
    if !root.feasible() {
        return Ok(Vec::new());
    }
    if kernel.vars.is_empty() {
        return Ok(vec![run(root, Cands::List(Vec::new()))?]);
    }
    let top = root.candidates(0);
    let weights = top_weights(kernel, &root.pos, &root.present, &top);
    drop(root);
    let chunks = split(&weights, top.len(), kernel.split_work(options.threads));
    count.set(chunks.len());
    let pool = AccumulatorPool::new(kernel.accumulator, kernel.suffix_sizes.clone());
    run_kernel_chunks(kernel, &chunks, control, options, |from, to| {
        run(
            Worker::new(kernel, control, Some(&pool))?,
            top.slice(from, to),
        )
    })
}

/// The results of `run(from, to)` for a kernel's chunks, in chunk order:
/// under a row budget one after another until it runs out, else by
/// [`run_chunks`].
fn run_kernel_chunks<T: Send>(
    kernel: &Kernel<'_>,
    chunks: &[(usize, usize)],
    control: &Control<'_>,
    options: &ExecOptions,
    run: impl Fn(usize, usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let Some(budget) = kernel.budget else {
        return run_chunks(chunks, options, control, run);
    };
    let mut parts = Vec::new();
    for &(from, to) in chunks {
        if budget.used_up() {
            break;
        }
        budget.chunk();
        control.check()?;
        control.tick();
        parts.push(run(from, to)?);
    }
    Ok(parts)
}

/// Runs `run(from, to)` for every chunk, on the thread pool when there
/// are several threads and chunks, and returns the results in chunk order,
/// or the first real error any chunk met (the others stop early).
pub(crate) fn run_chunks<T: Send>(
    chunks: &[(usize, usize)],
    options: &ExecOptions,
    control: &Control<'_>,
    run: impl Fn(usize, usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let one = |&(from, to): &(usize, usize)| -> Result<T> {
        control.check()?;
        control.tick();
        run(from, to).inspect_err(|e| control.fail(clone_error(e)))
    };
    let parts: Vec<Result<T>> = if options.threads <= 1 || chunks.len() <= 1 {
        chunks.iter().map(one).collect()
    } else {
        super::control::pool(options.threads)?.install(|| chunks.par_iter().map(one).collect())
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Ok(p) => out.push(p),
            Err(e) => return Err(control.take_failure().unwrap_or(e)),
        }
    }
    Ok(out)
}

/// A copy of an error for the shared failure slot (errors that wrap
/// foreign sources become messages).
fn clone_error(error: &Error) -> Error {
    match error {
        Error::Cancelled => Error::Cancelled,
        Error::Overflow(m) => Error::Overflow(m.clone()),
        Error::OutOfMemory(m) => Error::OutOfMemory(m.clone()),
        Error::StepOutgrown(m) => Error::StepOutgrown(m.clone()),
        Error::NestOutgrown(m) => Error::NestOutgrown(m.clone()),
        Error::Invalid(m) => Error::Invalid(m.clone()),
        Error::NotSupported(m) => Error::NotSupported(m.clone()),
        Error::Type(m) => Error::Type(m.clone()),
        other => Error::Invalid(other.to_string()),
    }
}

/// An estimate of the work under each outermost candidate: 1 plus the
/// length of the next fiber of the largest input read at the outermost
/// loop.
pub(crate) fn top_weights(
    kernel: &Kernel<'_>,
    pos: &[usize],
    present: &[bool],
    top: &Cands,
) -> Vec<u64> {
    let heaviest = kernel.parts.first().and_then(|parts| {
        parts
            .iter()
            .filter(|p| present.get(p.input).copied().unwrap_or(false))
            .max_by_key(|p| kernel.inputs[p.input].tree.nnz())
    });
    let Some(part) = heaviest else {
        return vec![1; top.len()];
    };
    let input = &kernel.inputs[part.input];
    let parent = pos[part.input];
    // The candidates ascend: one cursor seeks through the fiber instead of
    // a search from its start per candidate.
    let mut cursor = input.fiber(part.level, parent).map(|f| f.cursor());
    (0..top.len())
        .map(|i| {
            let c = top.get(i);
            let child = match cursor.as_mut() {
                Some(cursor) if part.count == 1 => {
                    cursor.seek(c);
                    cursor.current().filter(|&(at, _)| at == c).map(|(_, p)| p)
                }
                _ => input.descend(parent, part.level, part.count, c),
            };
            let work = child
                .and_then(|child| input.fiber(part.level + part.count, child))
                .map_or(0, |f| f.len() as u64);
            1 + work
        })
        .collect()
}

/// The weight a chunk gathers, of `total` over all candidates: a
/// [`CHUNKS`]-th of it, and at least the weight of [`MIN_CHUNK_WORK`]
/// where a unit of weight stands for one inner iteration, less where
/// `work` (the loops' estimated work, see [`PhysicalQuery::work`]) says
/// that a unit stands for more. At least 1.
fn chunk_target(total: u64, work: Option<f64>) -> u64 {
    let units = total as f64;
    let per_unit = work.map_or(1.0, |work| {
        (work / WORK_OVERESTIMATE / units.max(1.0)).max(1.0)
    });
    let least = (MIN_CHUNK_WORK / per_unit).ceil().max(1.0) as u64;
    (total / CHUNKS as u64).max(least)
}

/// Splits `n` candidates into at most [`CHUNKS`] ranges of about equal
/// weight, each gathering [`chunk_target`] of the loops' estimated
/// `work` (the last maybe less).
pub(crate) fn split(weights: &[u64], n: usize, work: Option<f64>) -> Vec<(usize, usize)> {
    let total: u64 = if weights.len() == n {
        weights.iter().sum()
    } else {
        n as u64
    };
    let target = chunk_target(total, work);
    let mut chunks = Vec::new();
    let (mut from, mut gathered) = (0, 0u64);
    for i in 0..n {
        gathered += weights.get(i).copied().unwrap_or(1);
        if gathered >= target {
            chunks.push((from, i + 1));
            from = i + 1;
            gathered = 0;
        }
    }
    if from < n || chunks.is_empty() {
        chunks.push((from, n));
    }
    chunks
}

/// [`split`] for weights given by their running sums: `before(i)` is the
/// sum of the weights of candidates `0..i` (non-decreasing, 0 at 0). The
/// same chunks, each end found by a binary search instead of a pass over
/// every weight.
pub(crate) fn split_sums(
    n: usize,
    before: impl Fn(usize) -> u64,
    work: Option<f64>,
) -> Vec<(usize, usize)> {
    let target = chunk_target(before(n), work);
    let mut chunks = Vec::new();
    let mut from = 0;
    while from < n {
        // The first `i` whose chunk `from..=i` reaches the target.
        let goal = before(from).saturating_add(target);
        let (mut lo, mut hi) = (from, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid + 1) >= goal {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        chunks.push((from, (lo + 1).min(n)));
        from = lo + 1;
    }
    if chunks.is_empty() {
        chunks.push((0, n));
    }
    chunks
}

/// Equality for dropping entries equal to the fill: numeric, with NaN
/// equal to NaN (as the reference evaluator).
fn same_value(a: Value, b: Value) -> bool {
    a.same(b) || (a.as_f64().is_nan() && b.as_f64().is_nan())
}

/// The result tensor: entries equal to the fill dropped (intermediates),
/// or the reference evaluator's form (outputs: zeros dropped, every
/// coordinate stored when the fill is not zero, a scalar always stored).
///
/// Machine-typed entries of the output's own type whose stored form is
/// their non-zero entries go straight into the value column.
fn store(query: &PhysicalQuery, entries: Finished, control: &Control<'_>) -> Result<Tensor> {
    match entries {
        Finished::Values(entries) => store_values(query, entries, control),
        Finished::Float(runs) => store_typed(
            query,
            runs,
            control,
            MachineType {
                ty: ValueType::Float64,
                value: Value::Float,
                column: ValueData::Float64,
            },
            float_kept(query),
        ),
        Finished::Int(runs) => store_typed(
            query,
            runs,
            control,
            MachineType {
                ty: ValueType::Int64,
                value: Value::Int,
                column: ValueData::Int64,
            },
            |v| kept(query, Value::Int(v)),
        ),
        // A `BIGINT` query's 128-bit entries that all fit are `BIGINT`s.
        Finished::Huge(runs)
            if query.ty == ValueType::Int64
                && runs
                    .iter()
                    .all(|run| run.values.iter().all(|&v| i64::try_from(v).is_ok())) =>
        {
            let narrow = runs
                .into_iter()
                .map(|run| run.map(|v| Ok(v as i64)))
                .collect::<Result<_>>()?;
            store(query, Finished::Int(narrow), control)
        }
        Finished::Huge(runs) => store_typed(
            query,
            runs,
            control,
            MachineType {
                ty: ValueType::Int128,
                value: Value::huge,
                column: ValueData::Int128,
            },
            |v| kept(query, Value::huge(v)),
        ),
    }
}

/// Whether [`store`] keeps an entry of value `v`: an intermediate drops
/// its fill, an output its zeros.
fn kept(query: &PhysicalQuery, v: Value) -> bool {
    match query.role {
        Role::Intermediate => !same_value(v, query.fill),
        Role::Output => !v.is_zero(),
    }
}

/// [`kept`] for a float, without making a [`Value`] of each.
fn float_kept(query: &PhysicalQuery) -> impl Fn(f64) -> bool + use<> {
    let (fill, role) = (query.fill.as_f64(), query.role);
    move |v| match role {
        Role::Intermediate => !(v == fill || (v.is_nan() && fill.is_nan())),
        Role::Output => v != 0.0,
    }
}

/// [`store`] for one float value per entry of `driver`, at its
/// coordinates (a sparse-driven result whose output variables are the
/// driver's, in its order). When [`store`] would keep every entry, the
/// result shares the driver's coordinate columns; otherwise the entries
/// go through [`store`].
fn store_at(
    query: &PhysicalQuery,
    driver: &Tensor,
    values: Vec<f64>,
    control: &Control<'_>,
) -> Result<Tensor> {
    let dims = query.output.len();
    if stored_as_they_are(query, &values) {
        control.reserve(8u64.saturating_mul(values.len() as u64))?;
        return crate::ir::result_tensor_at(driver, dim_specs(query), ValueData::Float64(values));
    }
    let coords: Vec<&[i64]> = (0..dims).map(|d| driver.coords(d)).collect();
    store(query, increasing_entries(&coords, values), control)
}

/// [`store`] for non-zero float entries in strictly increasing order, as
/// a coordinate column per output variable and the values: stored as
/// they are when [`store`] would keep every one of them.
fn store_columns(
    query: &PhysicalQuery,
    coords: Vec<Vec<i64>>,
    values: Vec<f64>,
    control: &Control<'_>,
) -> Result<Tensor> {
    if stored_as_they_are(query, &values) {
        control.reserve(entry_bytes(coords.len()).saturating_mul(values.len() as u64))?;
        return crate::ir::result_tensor_increasing(
            dim_specs(query),
            coords,
            ValueData::Float64(values),
        );
    }
    let coords: Vec<&[i64]> = coords.iter().map(Vec::as_slice).collect();
    store(query, increasing_entries(&coords, values), control)
}

/// Stores non-zero float entries that are whole rows of the last output
/// variable (see [`driven::Outcome::Rows`]) as such rows, without their
/// coordinate columns ([`Tensor::with_full_rows`]); the values' array is
/// charged whole, with its spare capacity.
fn store_rows(
    query: &PhysicalQuery,
    leading: Vec<Vec<i64>>,
    values: Vec<f64>,
    control: &Control<'_>,
) -> Result<Tensor> {
    let rows = leading.first().map_or(0, Vec::len) as u64;
    let bytes = 8 * (values.capacity() as u64 + rows * leading.len() as u64);
    control.reserve(bytes)?;
    crate::ir::result_tensor_rows(dim_specs(query), leading, ValueData::Float64(values))
}

/// Whether [`store`] would keep float entries with these values as they
/// are: a `DOUBLE` result with fill 0 and at least one dimension, none of
/// whose values it drops (a 0 of an output, the fill of an intermediate).
fn stored_as_they_are(query: &PhysicalQuery, values: &[f64]) -> bool {
    let kept = float_kept(query);
    query.ty == ValueType::Float64
        && !query.output.is_empty()
        && query.fill.is_zero()
        && values.iter().fold(true, |all, &v| all & kept(v))
}

/// Float entries in strictly increasing order, from a coordinate column
/// per dimension and the values.
fn increasing_entries(coords: &[&[i64]], values: Vec<f64>) -> Finished {
    let mut entries = Entries::new(coords.len());
    entries.reserve(values.len());
    for (e, value) in values.into_iter().enumerate() {
        entries.push(coords.iter().map(|c| c[e]), value);
    }
    entries.increasing = true;
    Finished::Float(vec![entries])
}

/// A machine type `T` of entries: the value type it is made of, and how
/// one entry and a whole value column convert.
struct MachineType<T> {
    ty: ValueType,
    value: fn(T) -> Value,
    column: fn(Vec<T>) -> ValueData,
}

/// [`store`] for entries in a machine type (`keep` says which entries it
/// keeps, as [`kept`]), in runs stored one after another.
fn store_typed<T: Copy + Send + Sync>(
    query: &PhysicalQuery,
    mut runs: Vec<Entries<T>>,
    control: &Control<'_>,
    machine: MachineType<T>,
    keep: impl Fn(T) -> bool,
) -> Result<Tensor> {
    let MachineType { ty, value, column } = machine;
    let dims = query.output.len();
    // A `BIGINT` query stores 128-bit entries as `HUGEINT`s (promoted).
    let promoted = ty == ValueType::Int128 && query.ty == ValueType::Int64;
    let direct = (query.ty == ty || promoted) && dims > 0 && query.fill.is_zero();
    if !direct {
        let entries = Entries::concat(dims, runs).map(|v| Ok(value(v)))?;
        return store_values(query, entries, control);
    }
    for run in &mut runs {
        run.retain(&keep);
    }
    let total = Entries::total(&runs);
    let bytes = entry_bytes(dims).saturating_mul(total as u64);
    charged_as_built(control, bytes, || typed_tensor(query, runs, column))
}

/// The result tensor of typed entries in runs, one run after another.
fn typed_tensor<T: Copy + Sync>(
    query: &PhysicalQuery,
    mut runs: Vec<Entries<T>>,
    column: fn(Vec<T>) -> ValueData,
) -> Result<Tensor> {
    let increasing = Entries::increasing_together(&runs);
    let coords = columns(&mut runs, query.output.len());
    let values = column(match <[_; 1]>::try_from(runs) {
        Ok([run]) => run.values,
        Err(runs) => {
            let total = Entries::total(&runs);
            let mut values = Vec::with_capacity(total);
            runs.iter()
                .for_each(|run| values.extend_from_slice(&run.values));
            values
        }
    });
    if increasing {
        crate::ir::result_tensor_increasing(dim_specs(query), coords, values)
    } else {
        crate::ir::result_tensor_of(dim_specs(query), coords, values)
    }
}

/// The tensor `build` makes, charged `bytes` (an upper estimate) while
/// it is built and its own size from then on.
fn charged_as_built(
    control: &Control<'_>,
    bytes: u64,
    build: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    control.reserve(bytes)?;
    let tensor = build()?;
    control.release(bytes.saturating_sub(tensor.memory_bytes()));
    Ok(tensor)
}

/// [`store`] for entries with [`Value`]s.
fn store_values(
    query: &PhysicalQuery,
    mut entries: Entries<Value>,
    control: &Control<'_>,
) -> Result<Tensor> {
    let dims = query.output.len();
    match query.role {
        Role::Intermediate => entries.retain(|v| kept(query, v)),
        Role::Output if query.fill.is_zero() => {
            if dims > 0 {
                entries.retain(|v| kept(query, v));
            } else if entries.len() == 0 {
                entries.push([], query.fill);
            }
        }
        Role::Output => entries = complete(query, entries, control)?,
    }
    let bytes = entry_bytes(dims).saturating_mul(entries.len() as u64);
    charged_as_built(control, bytes, || tensor(query, entries))
}

/// Every coordinate of the output with its value (the entry's, else the
/// fill), zeros dropped except for a scalar.
fn complete(
    query: &PhysicalQuery,
    entries: Entries<Value>,
    control: &Control<'_>,
) -> Result<Entries<Value>> {
    let sizes: Vec<u64> = query.output.iter().map(|&v| query.vars[v].size).collect();
    let count = sizes
        .iter()
        .try_fold(1u64, |acc, &s| acc.checked_mul(s))
        .ok_or_else(|| too_large(query))?;
    control.reserve(
        count
            .checked_mul(entry_bytes(sizes.len()))
            .ok_or_else(|| too_large(query))?,
    )?;
    let known: HashMap<&[i64], Value> = (0..entries.len())
        .map(|n| (entries.key(n), entries.values[n]))
        .collect();
    let mut out = Entries::new(sizes.len());
    let mut key = vec![0i64; sizes.len()];
    for n in 0..count {
        if n % 65536 == 0 {
            control.check()?;
        }
        let mut rest = n;
        for (slot, &size) in key.iter_mut().zip(&sizes).rev() {
            *slot = (rest % size) as i64;
            rest /= size;
        }
        let value = known.get(key.as_slice()).copied().unwrap_or(query.fill);
        if sizes.is_empty() || !value.is_zero() {
            out.push(key.iter().copied(), value);
        }
    }
    Ok(out)
}

fn too_large(query: &PhysicalQuery) -> Error {
    Error::OutOfMemory(format!(
        "'{}' has a value at every coordinate of its dimensions, more than 2^64",
        query.name
    ))
}

/// A tensor named after the output indices, with one value column `v`
/// (renamed `v_`, ... if an index is called `v`).
fn tensor(query: &PhysicalQuery, mut entries: Entries<Value>) -> Result<Tensor> {
    let dims = dim_specs(query);
    let coords = columns(std::slice::from_mut(&mut entries), dims.len());
    crate::ir::result_tensor(dims, coords, entries.values.iter().copied(), query.ty)
}

/// The output's dimensions: named after its indices, with their sizes and
/// dictionaries.
fn dim_specs(query: &PhysicalQuery) -> Vec<DimensionSpec> {
    query
        .output
        .iter()
        .map(|&v| {
            let var = &query.vars[v];
            DimensionSpec {
                name: var.name.clone(),
                size: Some(var.size),
                dictionary: var.dictionary.clone(),
            }
        })
        .collect()
}

/// The coordinate columns of runs of `n`-dimensional entries, one run
/// after another (a single run's coordinates move over when `n` is 1).
/// The runs are transposed side by side, each into its own stretch of
/// every column.
fn columns<T: Copy + Sync>(runs: &mut [Entries<T>], n: usize) -> Vec<Vec<i64>> {
    if let ([run], 1) = (&mut *runs, n) {
        return vec![std::mem::take(&mut run.coords)];
    }
    let total = Entries::total(runs);
    let mut columns: Vec<Vec<i64>> = (0..n).map(|_| vec![0; total]).collect();
    // Each run's stretch of every column.
    let mut stretches: Vec<Vec<&mut [i64]>> = runs.iter().map(|_| Vec::new()).collect();
    for column in &mut columns {
        let mut rest = column.as_mut_slice();
        for (run, stretch) in runs.iter().zip(&mut stretches) {
            let (mine, after) = rest.split_at_mut(run.len());
            stretch.push(mine);
            rest = after;
        }
    }
    stretches
        .into_par_iter()
        .zip(runs.par_iter())
        .for_each(|(mut stretch, run)| {
            for (i, key) in run.coords.chunks_exact(n.max(1)).enumerate() {
                for (column, &c) in stretch.iter_mut().zip(key) {
                    column[i] = c;
                }
            }
        });
    columns
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The binary-searched split is the split of the weights.
        #[test]
        fn split_sums_is_split(
            weights in prop::collection::vec(1u64..20_000, 0..600),
            work in prop::option::of(0.0f64..1e9),
        ) {
            let mut sums = vec![0u64];
            for w in &weights {
                sums.push(sums.last().copied().unwrap_or(0) + w);
            }
            let searched = split_sums(weights.len(), |i| sums[i], work);
            prop_assert_eq!(searched, split(&weights, weights.len(), work));
        }

        /// The chunks cover the candidates in order, at most [`CHUNKS`]
        /// of them and the last maybe smaller; more estimated work never
        /// makes fewer.
        #[test]
        fn more_work_never_splits_coarser(
            weights in prop::collection::vec(1u64..200, 1..600),
            work in 0.0f64..1e8,
        ) {
            let n = weights.len();
            let coarse = split(&weights, n, Some(work));
            let fine = split(&weights, n, Some(work * 16.0));
            for chunks in [&coarse, &fine] {
                prop_assert_eq!(chunks.first().map(|c| c.0), Some(0));
                prop_assert_eq!(chunks.last().map(|c| c.1), Some(n));
                prop_assert!(chunks.windows(2).all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1));
                prop_assert!(chunks.len() <= CHUNKS + 1);
            }
            prop_assert!(fine.len() >= coarse.len());
            prop_assert_eq!(split(&weights, n, None), split(&weights, n, Some(0.0)));
        }
    }

    /// A nest whose estimate says each unit of weight stands for many
    /// iterations is split although its weights are below
    /// [`MIN_CHUNK_WORK`]; without an estimate it runs as one chunk.
    #[test]
    fn estimated_work_splits_a_light_outer_loop() {
        let weights = vec![6u64; 500];
        assert_eq!(split(&weights, 500, None), vec![(0, 500)]);
        assert_eq!(split(&weights, 500, Some(1_000.0)), vec![(0, 500)]);
        // 1,000 estimated iterations per unit of weight, 62.5 after the
        // overestimate: chunks of 66, about 46 of them.
        let chunks = split(&weights, 500, Some(3_000_000.0));
        assert!((40..=50).contains(&chunks.len()), "{chunks:?}");
        assert_eq!(chunks.last().map(|c| c.1), Some(500));
    }
}
