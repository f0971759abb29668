//! Profiles of statements: the optimizer's plans with their estimates, and
//! what each step of the executor produced and took.
//!
//! While a statement runs with a [`ProfileLog`] in its context, every IR
//! program it evaluates (a SQL query evaluates one per `WITH` table and
//! sub-query, plus its own) records a [`ProgramRun`], and binding records
//! its own time. `EXPLAIN ANALYZE` prints the runs;
//! [`Database::execute_profiled`](crate::Database::execute_profiled)
//! returns them as a [`Profile`], with the time spent parsing.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::exec::QueryRun;
use crate::optimizer::Optimized;

/// One IR program evaluated by a statement.
#[derive(Clone, Debug)]
pub struct ProgramRun {
    /// The optimizer's plan (`None` on the reference evaluator, which runs
    /// programs as written).
    pub optimized: Option<Optimized>,
    /// Per physical query: its actual entries and time.
    pub queries: Vec<QueryRun>,
    /// The time to run the plan.
    pub execute: Duration,
    /// The plans given up before this one, in order: each had a step that
    /// outgrew its estimate ([`crate::optimizer::Optimized::step_guards`]).
    pub replans: Vec<Replan>,
}

impl ProgramRun {
    /// Its time optimizing and executing.
    pub fn time(&self) -> Duration {
        self.execute + self.optimized.as_ref().map_or(Duration::ZERO, |o| o.time)
    }
}

/// A plan given up because one of its elimination steps charged far more
/// memory than its estimate needs (or met the memory limit), or because
/// a loop nest kept as written visited more than its guard allows.
#[derive(Clone, Debug, PartialEq)]
pub struct Replan {
    /// The query that stopped the plan: a step (`#e3`), or a query whose
    /// loops were guarded.
    pub query: String,
    /// Why the plan was given up.
    pub cause: ReplanCause,
    /// How long the plan ran before the query stopped it.
    pub time: Duration,
}

/// What stopped a plan ([`Replan`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReplanCause {
    /// The step outgrew its estimated entries: the next plan takes no
    /// step estimated at as many or more.
    Step {
        /// The step's estimated entries.
        estimate: f64,
    },
    /// The query's loops, a sum of it kept as written for its small bound
    /// ([`crate::optimizer::logical::SMALL_NEST`]), visited more than
    /// [`crate::optimizer::logical::NEST_VISITS`] assignments: the next
    /// plan searches such sums.
    Nest,
}

/// Collects the [`ProgramRun`]s of one statement and the time spent
/// binding it.
#[derive(Debug, Default)]
pub struct ProfileLog(Mutex<Entries>);

#[derive(Debug, Default)]
struct Entries {
    runs: Vec<ProgramRun>,
    bind: Duration,
}

impl ProfileLog {
    fn entries(&self) -> MutexGuard<'_, Entries> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a program run.
    pub fn record(&self, run: ProgramRun) {
        self.entries().runs.push(run);
    }

    /// Runs `bind` and records the time it took, less the time of the
    /// programs it evaluated meanwhile (`WITH` tables and sub-queries,
    /// recorded as runs of their own).
    pub fn bind<T>(&self, bind: impl FnOnce() -> T) -> T {
        let earlier = self.entries().runs.len();
        let start = Instant::now();
        let bound = bind();
        let elapsed = start.elapsed();
        let mut entries = self.entries();
        let evaluated: Duration = entries
            .runs
            .iter()
            .skip(earlier)
            .map(ProgramRun::time)
            .sum();
        entries.bind += elapsed.saturating_sub(evaluated);
        bound
    }

    /// The runs recorded so far, leaving the log empty.
    pub fn take(&self) -> Vec<ProgramRun> {
        std::mem::take(&mut self.entries().runs)
    }

    /// The profile of what was recorded, with the time spent parsing the
    /// statements.
    pub fn into_profile(self, parse: Duration) -> Profile {
        let entries = self.0.into_inner().unwrap_or_else(PoisonError::into_inner);
        let programs = entries.runs;
        let optimize = programs
            .iter()
            .filter_map(|p| p.optimized.as_ref().map(|o| o.time))
            .sum();
        let reduce = programs
            .iter()
            .filter_map(|p| p.optimized.as_ref().map(|o| o.reduce_time))
            .sum();
        let execute = programs.iter().map(|p| p.execute).sum();
        Profile {
            parse,
            bind: entries.bind,
            optimize,
            reduce,
            execute,
            programs,
        }
    }
}

/// What running a statement took.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Time parsing the text into statements.
    pub parse: Duration,
    /// Time binding them to the catalog (names, types, the IR program),
    /// not counting the `WITH` tables and sub-queries binding evaluates:
    /// their optimizing and executing count below.
    pub bind: Duration,
    /// Time in the optimizer, over every program the statement evaluated.
    pub optimize: Duration,
    /// Of which in the semijoin reductions ([`crate::optimizer::reduce`]).
    pub reduce: Duration,
    /// Time in the executor (or the reference evaluator), likewise.
    pub execute: Duration,
    /// The programs the statement evaluated, in order.
    pub programs: Vec<ProgramRun>,
}

impl Profile {
    /// The plans with estimated and actual entries per step, as `EXPLAIN
    /// ANALYZE` prints them (without the times, which [`Profile::optimize`]
    /// and [`Profile::execute`] hold). Written on request, so that running
    /// a statement does not pay for the text.
    pub fn plan(&self) -> String {
        self.programs
            .iter()
            .flat_map(|p| super::explain::run_lines(p, false))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
