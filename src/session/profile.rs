//! Profiles of statements: the optimizer's plans with their estimates, and
//! what each step of the executor produced and took.
//!
//! While a statement runs with a [`ProfileLog`] in its context, every IR
//! program it evaluates (a SQL query evaluates one per `WITH` table and
//! sub-query, plus its own) records a [`ProgramRun`]. `EXPLAIN ANALYZE`
//! prints them;
//! [`Database::execute_profiled`](crate::Database::execute_profiled)
//! returns them as a [`Profile`].

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

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

/// A plan given up because one of its elimination steps charged far more
/// memory than its estimate needs (or met the memory limit).
#[derive(Clone, Debug, PartialEq)]
pub struct Replan {
    /// The step's name (`#e3`).
    pub step: String,
    /// Its estimated entries: the next plan takes no step estimated at
    /// as many or more.
    pub estimate: f64,
    /// How long the plan ran before the step stopped it.
    pub time: Duration,
}

/// Collects the [`ProgramRun`]s of one statement.
#[derive(Debug, Default)]
pub struct ProfileLog(Mutex<Vec<ProgramRun>>);

impl ProfileLog {
    /// Records a program run.
    pub fn record(&self, run: ProgramRun) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(run);
    }

    /// The runs recorded so far, leaving the log empty.
    pub fn take(&self) -> Vec<ProgramRun> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// What running a statement took.
#[derive(Clone, Debug, Default)]
pub struct Profile {
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
    /// The profile of the runs of one statement.
    pub fn from_runs(programs: Vec<ProgramRun>) -> Profile {
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
            optimize,
            reduce,
            execute,
            programs,
        }
    }

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
