//! What every worker of a running plan shares: the memory budget, the
//! cancellation checks, the first error, and the thread pools (also for
//! the index builds and result sorts of a plan, which run on rayon's
//! parallel iterators: [`within_threads`] keeps them to the plan's
//! thread count).
//!
//! The budget counts the bytes of what a plan builds (indexes in another
//! order, accumulators, entries, result tensors); reserving past the limit
//! fails with [`Error::OutOfMemory`]. A worker that fails records its error
//! and raises a stop flag that the others poll with the cancellation flag,
//! so a plan stops promptly and reports the first real error.
//!
//! A step of the plan may have a guard ([`StepGuards`]): the most it may
//! charge from when it begins; past it, or at the limit, it stops with
//! [`Error::StepOutgrown`] so that the statement can be planned again.
//!
//! A worker's charges end with it, except for the entries it hands on:
//! those stay charged ([`Held`]) until the query's result is stored.
//! A [`RowBudget`] stops one query early: the rows a caller needs of it
//! (a `LIMIT`), taken by its workers in chunk order.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::ir::Value;
use crate::progress::ProgressSink;
use crate::storage::tensor::PARALLEL_ROWS;

/// How many inner iterations a worker runs between two cancellation checks.
pub(crate) const CHECK_EVERY: usize = 4096;

/// Shared state of one running plan.
pub(crate) struct Control<'a> {
    progress: &'a dyn ProgressSink,
    stop: AtomicBool,
    failure: Mutex<Option<Error>>,
    memory: MemoryBudget,
    /// The step of the plan that runs now (`#e1[a,c]`), named in the
    /// error when its charges pass the limit.
    step: Mutex<String>,
    /// The name of the step that runs under a guard (`#e1`), named in
    /// [`Error::StepOutgrown`].
    guarded: Mutex<String>,
    /// The bytes charged when the step began, and the most it may add
    /// ([`StepGuards`]; `u64::MAX`: no guard).
    guard_start: AtomicU64,
    guard_room: AtomicU64,
    /// The loop visits the guarded step has counted, and the most it may
    /// make ([`StepGuards::insert_visits`]; `u64::MAX`: no guard).
    visits: AtomicU64,
    visit_room: AtomicU64,
}

/// The most memory each guarded step of a plan may charge, by the step's
/// name: a step that charges more, or that meets the memory limit,
/// stops with [`Error::StepOutgrown`] instead of running on (the session
/// then plans the statement again without steps that large). Steps
/// without a guard, and every output, run to the memory limit.
///
/// Likewise the most loop visits a query may make, by its name, where the
/// optimizer kept a sum of it as one loop nest on the strength of a loose
/// bound ([`crate::optimizer::Optimized::step_guards`]): past it, the
/// query stops with [`Error::NestOutgrown`] and the session plans the
/// statement again with the sum searched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepGuards {
    bytes: HashMap<String, u64>,
    visits: HashMap<String, u64>,
}

impl StepGuards {
    /// Guards step `name`: it may charge at most `bytes`.
    pub fn insert(&mut self, name: String, bytes: u64) {
        self.bytes.insert(name, bytes);
    }

    /// Guards query `name`: its loops may visit at most `visits`
    /// assignments (counted as the executor counts them between its
    /// cancellation checks, so a query stops within a few thousand past
    /// it per worker).
    pub fn insert_visits(&mut self, name: String, visits: u64) {
        self.visits.insert(name, visits);
    }

    /// The most memory step `name` may charge, if it is guarded so.
    pub fn bytes(&self, name: &str) -> Option<u64> {
        self.bytes.get(name).copied()
    }

    /// The guards of step `name`, if it has any.
    pub(crate) fn get<'g>(&'g self, name: &'g str) -> Option<StepGuard<'g>> {
        let bytes = self.bytes.get(name).copied();
        let visits = self.visits.get(name).copied();
        (bytes.is_some() || visits.is_some()).then(|| StepGuard {
            step: name,
            bytes: bytes.unwrap_or(u64::MAX),
            visits: visits.unwrap_or(u64::MAX),
        })
    }
}

/// The guards of one step ([`StepGuards::get`]): the step's name, the
/// most memory it may charge and the most loop visits it may make
/// (`u64::MAX`: no guard).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StepGuard<'g> {
    pub step: &'g str,
    pub bytes: u64,
    pub visits: u64,
}

impl<'a> Control<'a> {
    pub(crate) fn new(progress: &'a dyn ProgressSink, limit: u64) -> Control<'a> {
        Control {
            progress,
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            memory: MemoryBudget::new(limit),
            step: Mutex::new(String::new()),
            guarded: Mutex::new(String::new()),
            guard_start: AtomicU64::new(0),
            guard_room: AtomicU64::new(u64::MAX),
            visits: AtomicU64::new(0),
            visit_room: AtomicU64::new(u64::MAX),
        }
    }

    /// Names the step whose charges follow by its head (`#e1[a,c]`), for
    /// the out-of-memory error, and sets its guard (see [`StepGuards`];
    /// `None`: none).
    pub(crate) fn enter_step(&self, head: String, guard: Option<StepGuard<'_>>) {
        *self.step.lock().unwrap_or_else(PoisonError::into_inner) = head;
        if let Some(guard) = guard {
            let mut guarded = self.guarded.lock().unwrap_or_else(PoisonError::into_inner);
            guarded.clear();
            guarded.push_str(guard.step);
        }
        self.guard_start
            .store(self.memory.used.load(Ordering::Relaxed), Ordering::Relaxed);
        self.guard_room.store(
            guard.map_or(u64::MAX, |guard| guard.bytes),
            Ordering::Relaxed,
        );
        self.visits.store(0, Ordering::Relaxed);
        self.visit_room.store(
            guard.map_or(u64::MAX, |guard| guard.visits),
            Ordering::Relaxed,
        );
    }

    /// Counts `visits` loop visits of the running step against its guard:
    /// past it, [`Error::NestOutgrown`] names the step.
    pub(crate) fn count_visits(&self, visits: u64) -> Result<()> {
        let room = self.visit_room.load(Ordering::Relaxed);
        if room == u64::MAX {
            return Ok(());
        }
        if self.visits.fetch_add(visits, Ordering::Relaxed) + visits > room {
            let step = self.guarded.lock().unwrap_or_else(PoisonError::into_inner);
            return Err(Error::NestOutgrown(step.clone()));
        }
        Ok(())
    }

    /// [`Error::Cancelled`] if the user cancelled or another worker failed.
    pub(crate) fn check(&self) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) || self.progress.cancelled() {
            return Err(Error::Cancelled);
        }
        Ok(())
    }

    /// Reports progress (work that is not measured in bytes).
    pub(crate) fn tick(&self) {
        self.progress.advance(0);
    }

    /// Records `error` if it is the first and stops the other workers.
    pub(crate) fn fail(&self, error: Error) {
        let mut slot = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(error);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Clears a recorded failure and the stop flag, for a query that runs
    /// again after the error its workers met (a 64-bit overflow); a
    /// cancellation by the user stays.
    pub(crate) fn resume(&self) {
        self.take_failure();
        self.stop.store(false, Ordering::Relaxed);
    }

    /// The first recorded error, if any.
    pub(crate) fn take_failure(&self) -> Option<Error> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Charges `bytes` against the memory limit; past it, the error names
    /// the step that needed them. Past the guard of a guarded step, or at
    /// the limit within one, the error is [`Error::StepOutgrown`].
    pub(crate) fn reserve(&self, bytes: u64) -> Result<()> {
        let room = self.guard_room.load(Ordering::Relaxed);
        let taken = self.memory.take(bytes);
        let outgrown = room != u64::MAX
            && (!taken
                || self
                    .memory
                    .used
                    .load(Ordering::Relaxed)
                    .saturating_sub(self.guard_start.load(Ordering::Relaxed))
                    > room);
        if outgrown {
            if taken {
                self.memory.release(bytes);
            }
            let step = self.guarded.lock().unwrap_or_else(PoisonError::into_inner);
            return Err(Error::StepOutgrown(step.clone()));
        }
        if taken {
            return Ok(());
        }
        let step = self.step.lock().unwrap_or_else(PoisonError::into_inner);
        Err(self
            .memory
            .exceeded(&format!("for step {step} of its plan (see EXPLAIN)")))
    }

    /// Returns `bytes` charged earlier.
    pub(crate) fn release(&self, bytes: u64) {
        self.memory.release(bytes);
    }
}

/// The memory one part of a statement may take (`memory_limit`) and what
/// it has charged so far: the executor's [`Control`] charges a plan's
/// intermediates and results; the assembly of SQL rows, `COPY` and the
/// collected result of `execute` charge theirs against a budget of their
/// own, which starts with the results they read.
pub struct MemoryBudget {
    limit: u64,
    used: AtomicU64,
}

impl MemoryBudget {
    /// A budget of `limit` bytes, nothing charged.
    pub fn new(limit: u64) -> MemoryBudget {
        MemoryBudget {
            limit,
            used: AtomicU64::new(0),
        }
    }

    /// Charges `bytes`, or fails with [`Error::OutOfMemory`] saying `what`
    /// needed them ("for sorting its rows") when the limit would be passed.
    pub fn reserve(&self, bytes: u64, what: &str) -> Result<()> {
        if self.take(bytes) {
            Ok(())
        } else {
            Err(self.exceeded(what))
        }
    }

    /// Charges `bytes` if the limit allows; whether it did.
    fn take(&self, bytes: u64) -> bool {
        let before = self.used.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > self.limit {
            self.used.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The error for a charge past the limit, saying `what` needed it.
    fn exceeded(&self, what: &str) -> Error {
        Error::OutOfMemory(format!(
            "the query needs more than the memory limit of {} {what} \
             (SET memory_limit = '...' raises it)",
            format_bytes(self.limit)
        ))
    }

    /// Returns `bytes` charged earlier.
    pub fn release(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                Some(used.saturating_sub(bytes))
            });
    }
}

/// The bytes charged for the entries a query's workers hand on: they
/// stay charged after the worker that wrote them ends, while its chunk's
/// entries are merged and stored, and are released when the query's
/// result is stored (or it fails), as this is dropped.
pub(crate) struct Held<'c> {
    control: &'c Control<'c>,
    bytes: AtomicU64,
}

impl<'c> Held<'c> {
    pub(crate) fn new(control: &'c Control<'c>) -> Held<'c> {
        Held {
            control,
            bytes: AtomicU64::new(0),
        }
    }

    /// Charges `bytes` against the memory limit now and keeps them
    /// charged until this is dropped.
    pub(crate) fn reserve(&self, bytes: u64) -> Result<()> {
        self.control.reserve(bytes)?;
        self.keep(bytes);
        Ok(())
    }

    /// Keeps `bytes` charged until this is dropped.
    pub(crate) fn keep(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Releases every byte kept so far (the entries of a run that is
    /// dropped to run again).
    pub(crate) fn release_all(&self) {
        self.control.release(self.bytes.swap(0, Ordering::Relaxed));
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.control.release(self.bytes.load(Ordering::Relaxed));
    }
}

/// The rows a query may still write before it stops: each entry it
/// writes takes its row count (its value, a multiplicity). The workers of
/// the query run their chunks one after another, in order, so the entries
/// written before the budget ran out are the query's first ones.
pub(crate) struct RowBudget {
    rows: u64,
    left: AtomicU64,
    /// How many chunks of the outermost loop ran.
    chunks: AtomicUsize,
}

impl RowBudget {
    pub(crate) fn new(rows: u64) -> RowBudget {
        RowBudget {
            rows,
            left: AtomicU64::new(rows),
            chunks: AtomicUsize::new(0),
        }
    }

    /// Takes `rows` from the budget; whether it is then used up.
    pub(crate) fn take(&self, rows: u64) -> bool {
        let before = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                Some(left.saturating_sub(rows))
            })
            .unwrap_or(0);
        before <= rows
    }

    /// Gives back every row and forgets the chunks that ran, for a query
    /// that runs again from the start.
    pub(crate) fn reset(&self) {
        self.left.store(self.rows, Ordering::Relaxed);
        self.chunks.store(0, Ordering::Relaxed);
    }

    /// Whether no row is left.
    pub(crate) fn used_up(&self) -> bool {
        self.left.load(Ordering::Relaxed) == 0
    }

    /// Counts a chunk of the outermost loop that runs.
    pub(crate) fn chunk(&self) {
        self.chunks.fetch_add(1, Ordering::Relaxed);
    }

    /// How many chunks ran.
    pub(crate) fn chunks_run(&self) -> usize {
        self.chunks.load(Ordering::Relaxed)
    }
}

/// The rows an entry of value `value` stands for in a row budget: an
/// integer its count (none below 0), any other value one row unless it
/// is zero.
pub(crate) fn rows_of(value: Value) -> u64 {
    match value {
        Value::Int(n) => u64::try_from(n).unwrap_or(0),
        Value::Huge(n) => u64::try_from(n.get()).unwrap_or(if n.get() > 0 { u64::MAX } else { 0 }),
        other => u64::from(!other.is_zero()),
    }
}

/// `1.5 GiB`, `512.0 MiB`, `100 bytes`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A thread pool of `threads` workers, built once per size and shared by
/// every plan that asks for that many.
pub(crate) fn pool(threads: usize) -> Result<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(pool) = pools.get(&threads) {
        return Ok(Arc::clone(pool));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|n| format!("einsql-exec-{n}"))
        .build()
        .map_err(|e| Error::Invalid(format!("cannot start {threads} worker threads: {e}")))?;
    let pool = Arc::new(pool);
    pools.insert(threads, Arc::clone(&pool));
    Ok(pool)
}

/// Runs `job`, which builds or sorts `rows` entries, so that the parallel
/// iterators inside it use at most `threads` threads: large jobs (those
/// that go parallel, [`PARALLEL_ROWS`] entries and up) on the pool of
/// `threads`, small ones on the calling thread (they stay sequential, and
/// handing them to a pool would cost more than they do).
pub(crate) fn within_threads<T: Send>(
    threads: usize,
    rows: usize,
    job: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    if rows < PARALLEL_ROWS {
        job()
    } else {
        pool(threads)?.install(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    #[test]
    fn the_budget_refuses_past_the_limit_and_recovers() {
        let control = Control::new(&NoProgress, 1000);
        assert!(control.reserve(600).is_ok());
        let error = control.reserve(600).unwrap_err();
        assert!(matches!(error, Error::OutOfMemory(_)), "{error}");
        assert!(error.to_string().contains("1000 bytes"), "{error}");
        control.release(600);
        assert!(control.reserve(900).is_ok());
    }

    #[test]
    fn a_row_budget_runs_out_once_its_rows_are_taken() {
        let budget = RowBudget::new(5);
        assert!(!budget.take(2));
        assert!(!budget.used_up());
        assert!(budget.take(3));
        assert!(budget.used_up());
        assert!(budget.take(1));
        assert!(RowBudget::new(3).take(7));
        assert_eq!(rows_of(Value::Int(4)), 4);
        assert_eq!(rows_of(Value::Int(-2)), 0);
        assert_eq!(rows_of(Value::Float(0.5)), 1);
        assert_eq!(rows_of(Value::Bool(false)), 0);
    }

    #[test]
    fn held_bytes_stay_charged_until_dropped() {
        let control = Control::new(&NoProgress, 1000);
        {
            let held = Held::new(&control);
            assert!(control.reserve(700).is_ok());
            held.keep(700);
            assert!(control.reserve(400).is_err());
        }
        assert!(control.reserve(900).is_ok());
    }

    #[test]
    fn the_first_failure_wins() {
        let control = Control::new(&NoProgress, 1);
        assert!(control.check().is_ok());
        control.fail(Error::Overflow("first".into()));
        control.fail(Error::Cancelled);
        assert!(matches!(control.check(), Err(Error::Cancelled)));
        assert!(matches!(control.take_failure(), Some(Error::Overflow(_))));
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
    }
}
