//! `SET name = value`, `RESET name` and `RESET ALL`: the settings of a
//! database that change how statements run.
//!
//! - `threads`: the executor's worker threads (default: one per core);
//! - `memory_limit`: the most memory the intermediates and results of one
//!   statement may take, as bytes or a string with a unit (`'4GB'`,
//!   `'512MiB'`; `KB`, `MB`, `GB`, `TB` are powers of 1000, `KiB`, `MiB`,
//!   `GiB`, `TiB` powers of 1024, as in DuckDB). Default: 60% of the
//!   physical memory.
//! - `engine`: what runs programs: `'executor'` (the default) or
//!   `'reference'`, the simple reference evaluator that tests use as their
//!   oracle (slow, but obviously correct).
//! - `estimator`: the optimizer's sparsity estimator, `'chain'` (degree
//!   statistics and the chain bound, the default) or `'uniform'`;
//! - `optimizer`: the search over elimination orders, `'exact'` (the
//!   default: exact up to a size threshold, greedy beyond), `'greedy'`, or
//!   `'none'` (programs run as written).
//! - `disabled_optimizers`: the optimizer phases to leave out, as a
//!   comma-separated list of their names (`'semijoin, distribute'`; see
//!   [`Phase`] for the phases; `''`, the default, runs them all), as in
//!   DuckDB; an unknown name is an error with the closest name.
//! - `semijoin`: `false` is the same as listing `semijoin` in
//!   `disabled_optimizers` (the optimizer then does not reduce the stored
//!   inputs of a product by its one-variable factors, see
//!   [`crate::optimizer::reduce`]); `true`, the default, takes it out.
//!
//! The values live in [`Settings`], which the database owns and its
//! sessions share; they are atomics, so one database serving several
//! threads reads them without locks. The SQL front-end binds `SET` and
//! `RESET` ([`BoundStatement::Set`](crate::bound::BoundStatement::Set));
//! [`Settings::set`] and [`Settings::reset`] check and apply them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use super::profile::{ProfileLog, ProgramRun, Replan, ReplanCause};
use crate::bound::Literal;
use crate::error::{Error, Result};
use crate::exec::{ExecOptions, FirstRows, StepGuards, default_memory_limit, default_threads};
use crate::ir::Program;
use crate::optimizer::{EstimatorKind, OptimizerOptions, Phase, PhaseSet, Search};
use crate::progress::ProgressSink;
use crate::storage::Tensor;

/// The names of the settings, for messages.
const NAMES: [&str; 7] = [
    "threads",
    "memory_limit",
    "engine",
    "estimator",
    "optimizer",
    "disabled_optimizers",
    "semijoin",
];

/// How many times a statement is planned again because a step outgrew
/// its estimate ([`Settings::evaluate_first`]).
pub const MAX_REPLANS: usize = 3;

/// The estimators by their setting value.
const ESTIMATORS: [EstimatorKind; 2] = [EstimatorKind::Chain, EstimatorKind::Uniform];

/// The searches by their setting value.
const SEARCHES: [Search; 3] = [Search::Exact, Search::Greedy, Search::None];

/// The settings of a database; see the module documentation.
#[derive(Debug)]
pub struct Settings {
    threads: AtomicUsize,
    memory_limit: AtomicU64,
    /// Whether programs run on the reference evaluator.
    reference: AtomicBool,
    /// The estimator (a position in [`ESTIMATORS`]).
    estimator: AtomicU8,
    /// The search (a position in [`SEARCHES`]).
    search: AtomicU8,
    /// The optimizer phases left out ([`PhaseSet::bits`]).
    disabled: AtomicU16,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threads: AtomicUsize::new(default_threads()),
            memory_limit: AtomicU64::new(default_memory_limit()),
            reference: AtomicBool::new(false),
            estimator: AtomicU8::new(0),
            search: AtomicU8::new(0),
            disabled: AtomicU16::new(OptimizerOptions::default().disabled.bits()),
        }
    }
}

impl Settings {
    /// The number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads.load(Ordering::Relaxed)
    }

    /// Sets the number of worker threads; 0 means one per core.
    pub fn set_threads(&self, threads: usize) {
        let threads = if threads == 0 {
            default_threads()
        } else {
            threads
        };
        self.threads.store(threads, Ordering::Relaxed);
    }

    /// The memory limit in bytes.
    pub fn memory_limit(&self) -> u64 {
        self.memory_limit.load(Ordering::Relaxed)
    }

    /// Sets the memory limit in bytes.
    pub fn set_memory_limit(&self, bytes: u64) {
        self.memory_limit.store(bytes, Ordering::Relaxed);
    }

    /// Whether programs run on the reference evaluator instead of the
    /// executor.
    pub fn uses_reference(&self) -> bool {
        self.reference.load(Ordering::Relaxed)
    }

    /// Runs programs on the reference evaluator (`true`) or the executor.
    pub fn set_reference(&self, on: bool) {
        self.reference.store(on, Ordering::Relaxed);
    }

    /// The optimizer's options.
    pub fn optimizer_options(&self) -> OptimizerOptions {
        let estimator = ESTIMATORS[usize::from(self.estimator.load(Ordering::Relaxed)) % 2];
        let search = SEARCHES[usize::from(self.search.load(Ordering::Relaxed)) % 3];
        OptimizerOptions {
            estimator,
            search,
            disabled: PhaseSet::from_bits(self.disabled.load(Ordering::Relaxed)),
            memory_limit: self.memory_limit(),
            max_step_entries: crate::optimizer::logical::MAX_STEP_ENTRIES,
            small_nests: true,
        }
    }

    /// Sets the optimizer's options.
    pub fn set_optimizer_options(&self, options: OptimizerOptions) {
        let estimator = ESTIMATORS.iter().position(|e| *e == options.estimator);
        let search = SEARCHES.iter().position(|s| *s == options.search);
        self.estimator
            .store(estimator.unwrap_or(0) as u8, Ordering::Relaxed);
        self.search
            .store(search.unwrap_or(0) as u8, Ordering::Relaxed);
        self.disabled
            .store(options.disabled.bits(), Ordering::Relaxed);
        self.set_memory_limit(options.memory_limit);
    }

    /// Runs `program` on the engine these settings choose (optimized for
    /// the executor) and returns its results by query name; records the
    /// run in `log` if given.
    pub fn evaluate(
        &self,
        program: &Program,
        progress: &dyn ProgressSink,
        log: Option<&ProfileLog>,
    ) -> Result<Vec<(String, Arc<Tensor>)>> {
        self.evaluate_first(program, None, progress, log)
    }

    /// [`Settings::evaluate`] for a caller that needs only the first rows
    /// of one output (`first`): the executor plans that query's loops in
    /// output order and stops it once it has them
    /// ([`crate::exec::run_first`]); that result then holds its first
    /// entries by coordinates. The reference evaluator computes every
    /// result whole.
    ///
    /// An elimination step that outgrows its estimate (its guard,
    /// [`crate::optimizer::Optimized::step_guards`]) stops the plan, and
    /// the program is planned again with no step estimated as large as
    /// it; a loop nest kept as written that visits more than its guard
    /// allows stops it too, and the program is planned again with such
    /// sums searched. Up to [`MAX_REPLANS`] times; the last plan runs
    /// unguarded.
    pub fn evaluate_first(
        &self,
        program: &Program,
        first: Option<&FirstRows>,
        progress: &dyn ProgressSink,
        log: Option<&ProfileLog>,
    ) -> Result<Vec<(String, Arc<Tensor>)>> {
        if self.uses_reference() {
            let start = Instant::now();
            let results = crate::reference::evaluate_with(program, progress)?;
            if let Some(log) = log {
                log.record(ProgramRun {
                    optimized: None,
                    queries: Vec::new(),
                    execute: start.elapsed(),
                    replans: Vec::new(),
                });
            }
            return Ok(results);
        }
        let in_order: Vec<String> = first.iter().map(|f| f.query.clone()).collect();
        let mut options = self.optimizer_options();
        let mut replans = Vec::new();
        loop {
            let optimized = crate::optimizer::optimize_in_order(program, &options, &in_order)?;
            // The last plan allowed runs to the memory limit.
            let guards = if replans.len() < MAX_REPLANS {
                optimized.step_guards()
            } else {
                StepGuards::default()
            };
            let start = Instant::now();
            let ran = crate::exec::run_first(
                &optimized.plan,
                &self.exec_options(),
                progress,
                first,
                &guards,
            );
            let (results, queries) = match ran {
                Err(Error::StepOutgrown(step)) => {
                    let estimate = optimized.step_estimate(&step).ok_or_else(|| {
                        Error::Internal(format!("step {step} stopped without a guard"))
                    })?;
                    replans.push(Replan {
                        query: step,
                        cause: ReplanCause::Step { estimate },
                        time: start.elapsed(),
                    });
                    options.max_step_entries = estimate as u64;
                    continue;
                }
                Err(Error::NestOutgrown(query)) => {
                    replans.push(Replan {
                        query,
                        cause: ReplanCause::Nest,
                        time: start.elapsed(),
                    });
                    options.small_nests = false;
                    continue;
                }
                ran => ran?,
            };
            if let Some(log) = log {
                log.record(ProgramRun {
                    optimized: Some(optimized),
                    queries,
                    execute: start.elapsed(),
                    replans,
                });
            }
            return Ok(results);
        }
    }

    /// The executor's options under these settings.
    pub fn exec_options(&self) -> ExecOptions {
        ExecOptions {
            threads: self.threads().max(1),
            memory_limit: self.memory_limit(),
        }
    }

    /// The value of the setting `name`, as text.
    fn show(&self, name: &str) -> String {
        match name {
            "threads" => format!("threads = {}", self.threads()),
            "engine" if self.uses_reference() => "engine = 'reference'".to_string(),
            "engine" => "engine = 'executor'".to_string(),
            "estimator" => format!(
                "estimator = '{}'",
                self.optimizer_options().estimator.name()
            ),
            "optimizer" => format!("optimizer = '{}'", self.optimizer_options().search.name()),
            "disabled_optimizers" => format!(
                "disabled_optimizers = '{}'",
                self.optimizer_options().disabled
            ),
            "semijoin" => format!(
                "semijoin = {}",
                !self.optimizer_options().disabled.contains(Phase::Semijoin)
            ),
            _ => format!(
                "memory_limit = {} ({} bytes)",
                crate::exec::format_bytes(self.memory_limit()),
                self.memory_limit()
            ),
        }
    }
}

impl Settings {
    /// Sets the setting `name` (lower case) to `value` and returns the
    /// setting as it now is, as text (`threads = 4`).
    pub fn set(&self, name: &str, value: Literal) -> Result<String> {
        let name = setting_name(name)?;
        match name.as_str() {
            "threads" => match value {
                Literal::Integer(n) if n >= 0 => self.set_threads(n as usize),
                other => {
                    return Err(Error::Invalid(format!(
                        "threads must be a whole number of threads (0: one per core), not {other}"
                    )));
                }
            },
            "engine" => match &value {
                Literal::String(s) if s.eq_ignore_ascii_case("executor") => {
                    self.set_reference(false);
                }
                Literal::String(s) if s.eq_ignore_ascii_case("reference") => {
                    self.set_reference(true);
                }
                other => {
                    return Err(Error::Invalid(format!(
                        "engine must be 'executor' or 'reference', not {other}"
                    )));
                }
            },
            "estimator" => {
                let estimator = named(&value, &ESTIMATORS, EstimatorKind::name, "estimator")?;
                let options = self.optimizer_options();
                self.set_optimizer_options(OptimizerOptions {
                    estimator,
                    ..options
                });
            }
            "optimizer" => {
                let search = named(&value, &SEARCHES, Search::name, "optimizer")?;
                let options = self.optimizer_options();
                self.set_optimizer_options(OptimizerOptions { search, ..options });
            }
            "semijoin" => {
                let Literal::Boolean(semijoin) = value else {
                    return Err(Error::Invalid(format!(
                        "semijoin must be true or false, not {value}"
                    )));
                };
                let options = self.optimizer_options();
                let disabled = if semijoin {
                    options.disabled.without(Phase::Semijoin)
                } else {
                    options.disabled.with(Phase::Semijoin)
                };
                self.set_optimizer_options(OptimizerOptions {
                    disabled,
                    ..options
                });
            }
            "disabled_optimizers" => {
                let Literal::String(list) = &value else {
                    return Err(Error::Invalid(format!(
                        "disabled_optimizers must be a list of optimizer phases such as \
                         'semijoin, distribute' (the phases: {}), not {value}",
                        PhaseSet::all()
                    )));
                };
                let disabled: PhaseSet = list.parse()?;
                let options = self.optimizer_options();
                self.set_optimizer_options(OptimizerOptions {
                    disabled,
                    ..options
                });
            }
            _ => self.set_memory_limit(parse_bytes(&value)?),
        }
        Ok(self.show(&name))
    }

    /// Resets the setting `name` (lower case), or all of them, to its
    /// default and returns the settings as they now are, as text.
    pub fn reset(&self, name: Option<&str>) -> Result<String> {
        let defaults = Settings::default();
        let names: Vec<String> = match name {
            None => NAMES.iter().map(|n| n.to_string()).collect(),
            Some(name) => vec![setting_name(name)?],
        };
        let mut shown = Vec::new();
        for name in names {
            match name.as_str() {
                "threads" => self.set_threads(defaults.threads()),
                "engine" => self.set_reference(false),
                "estimator" => {
                    let options = self.optimizer_options();
                    self.set_optimizer_options(OptimizerOptions {
                        estimator: OptimizerOptions::default().estimator,
                        ..options
                    });
                }
                "optimizer" => {
                    let options = self.optimizer_options();
                    self.set_optimizer_options(OptimizerOptions {
                        search: OptimizerOptions::default().search,
                        ..options
                    });
                }
                "semijoin" => {
                    let options = self.optimizer_options();
                    self.set_optimizer_options(OptimizerOptions {
                        disabled: options.disabled.without(Phase::Semijoin),
                        ..options
                    });
                }
                "disabled_optimizers" => {
                    let options = self.optimizer_options();
                    self.set_optimizer_options(OptimizerOptions {
                        disabled: OptimizerOptions::default().disabled,
                        ..options
                    });
                }
                _ => self.set_memory_limit(defaults.memory_limit()),
            }
            shown.push(self.show(&name));
        }
        Ok(shown.join("; "))
    }
}

/// The choice among `choices` that `value` names (a string,
/// case-insensitive).
fn named<T: Copy>(
    value: &Literal,
    choices: &[T],
    name: fn(T) -> &'static str,
    setting: &str,
) -> Result<T> {
    if let Literal::String(text) = value
        && let Some(&found) = choices
            .iter()
            .find(|c| name(**c).eq_ignore_ascii_case(text))
    {
        return Ok(found);
    }
    let names: Vec<String> = choices.iter().map(|c| format!("'{}'", name(*c))).collect();
    Err(Error::Invalid(format!(
        "{setting} must be one of {}, not {value}",
        names.join(", ")
    )))
}

/// The setting `name` names, or an error with the closest name.
fn setting_name(name: &str) -> Result<String> {
    if NAMES.contains(&name) {
        Ok(name.to_string())
    } else {
        Err(Error::unknown("Setting", name, NAMES))
    }
}

/// A memory size: a number of bytes, or a string with a unit.
fn parse_bytes(value: &Literal) -> Result<u64> {
    let invalid = || {
        Error::Invalid(format!(
            "memory_limit must be a size such as '4GB', '512MiB' or a number of bytes, not {value}"
        ))
    };
    let text = match value {
        Literal::Integer(n) if *n > 0 => return Ok(*n as u64),
        Literal::String(s) => s.trim(),
        _ => return Err(invalid()),
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| invalid())?;
    let scale: f64 = match unit.trim().to_lowercase().as_str() {
        "" | "b" | "bytes" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" | "k" => 1024.0,
        "mib" | "m" => 1024.0 * 1024.0,
        "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
        "tib" | "t" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(invalid()),
    };
    let bytes = number * scale;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(invalid());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        let s = |t: &str| parse_bytes(&Literal::String(t.into()));
        assert_eq!(s("4GB").unwrap(), 4_000_000_000);
        assert_eq!(s("512 MiB").unwrap(), 512 << 20);
        assert_eq!(s("1.5gib").unwrap(), 3 << 29);
        assert_eq!(parse_bytes(&Literal::Integer(1000)).unwrap(), 1000);
        assert!(s("lots").is_err());
        assert!(s("0GB").is_err());
        assert!(parse_bytes(&Literal::Integer(-1)).is_err());
    }

    #[test]
    fn unknown_settings_suggest_a_name() {
        let error = setting_name("thread").unwrap_err();
        assert_eq!(
            error.to_string(),
            "Setting 'thread' does not exist (did you mean 'threads'?)"
        );
    }

    #[test]
    fn zero_threads_means_one_per_core() {
        let settings = Settings::default();
        settings.set_threads(0);
        assert_eq!(settings.threads(), default_threads());
        settings.set_threads(3);
        assert_eq!(settings.exec_options().threads, 3);
    }
}
