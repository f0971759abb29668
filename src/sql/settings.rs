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
//! - `semijoin`: whether the optimizer first reduces the stored inputs of a
//!   product by its one-variable factors (`true`, the default; see
//!   [`crate::optimizer::reduce`]) or leaves them as they are (`false`).
//!
//! The values live in [`Settings`], which the database owns and shares with
//! every statement through [`Context`](super::Context); they are atomics, so
//! one database serving several threads reads them without locks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use sqlparser::ast::{ObjectName, Reset, ResetStatement, Set};

use crate::database::QueryResult;
use crate::error::{Error, Result};
use crate::exec::{ExecOptions, default_memory_limit, default_threads};
use crate::io::ProgressSink;
use crate::ir::Program;
use crate::optimizer::{EstimatorKind, OptimizerOptions, Phase, PhaseSet, Search};
use crate::profile::{ProfileLog, ProgramRun};
use crate::storage::Tensor;

use super::Context;
use super::literal::Literal;

/// The names of the settings, for messages.
const NAMES: [&str; 6] = [
    "threads",
    "memory_limit",
    "engine",
    "estimator",
    "optimizer",
    "semijoin",
];

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
    /// Whether the optimizer runs the semijoin reduction.
    semijoin: AtomicBool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threads: AtomicUsize::new(default_threads()),
            memory_limit: AtomicU64::new(default_memory_limit()),
            reference: AtomicBool::new(false),
            estimator: AtomicU8::new(0),
            search: AtomicU8::new(0),
            semijoin: AtomicBool::new(
                !OptimizerOptions::default()
                    .disabled
                    .contains(Phase::Semijoin),
            ),
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
            disabled: if self.semijoin.load(Ordering::Relaxed) {
                PhaseSet::EMPTY
            } else {
                PhaseSet::EMPTY.with(Phase::Semijoin)
            },
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
        self.semijoin.store(
            !options.disabled.contains(Phase::Semijoin),
            Ordering::Relaxed,
        );
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
        if self.uses_reference() {
            let start = Instant::now();
            let results = crate::reference::evaluate_with(program, progress)?;
            if let Some(log) = log {
                log.record(ProgramRun {
                    optimized: None,
                    queries: Vec::new(),
                    execute: start.elapsed(),
                });
            }
            return Ok(results);
        }
        let optimized = crate::optimizer::optimize(program, &self.optimizer_options())?;
        let start = Instant::now();
        let (results, queries) =
            crate::exec::run_profiled(&optimized.plan, &self.exec_options(), progress)?;
        if let Some(log) = log {
            log.record(ProgramRun {
                optimized: Some(optimized),
                queries,
                execute: start.elapsed(),
            });
        }
        Ok(results)
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

/// Runs `SET name = value`.
pub fn set(context: Context<'_>, set: &Set) -> Result<QueryResult> {
    let Set::SingleAssignment {
        variable, values, ..
    } = set
    else {
        return Err(Error::NotSupported(format!(
            "SET statements other than SET name = value ({set})"
        )));
    };
    let name = setting_name(variable)?;
    let [value] = values.as_slice() else {
        return Err(Error::Invalid(format!("SET {name} takes one value")));
    };
    let value = Literal::from_expr(value)?;
    match name.as_str() {
        "threads" => match value {
            Literal::Integer(n) if n >= 0 => context.settings.set_threads(n as usize),
            other => {
                return Err(Error::Invalid(format!(
                    "threads must be a whole number of threads (0: one per core), not {other}"
                )));
            }
        },
        "engine" => match &value {
            Literal::String(s) if s.eq_ignore_ascii_case("executor") => {
                context.settings.set_reference(false);
            }
            Literal::String(s) if s.eq_ignore_ascii_case("reference") => {
                context.settings.set_reference(true);
            }
            other => {
                return Err(Error::Invalid(format!(
                    "engine must be 'executor' or 'reference', not {other}"
                )));
            }
        },
        "estimator" => {
            let estimator = named(&value, &ESTIMATORS, EstimatorKind::name, "estimator")?;
            let options = context.settings.optimizer_options();
            context.settings.set_optimizer_options(OptimizerOptions {
                estimator,
                ..options
            });
        }
        "optimizer" => {
            let search = named(&value, &SEARCHES, Search::name, "optimizer")?;
            let options = context.settings.optimizer_options();
            context
                .settings
                .set_optimizer_options(OptimizerOptions { search, ..options });
        }
        "semijoin" => {
            let Literal::Boolean(semijoin) = value else {
                return Err(Error::Invalid(format!(
                    "semijoin must be true or false, not {value}"
                )));
            };
            let options = context.settings.optimizer_options();
            let disabled = if semijoin {
                options.disabled.without(Phase::Semijoin)
            } else {
                options.disabled.with(Phase::Semijoin)
            };
            context.settings.set_optimizer_options(OptimizerOptions {
                disabled,
                ..options
            });
        }
        _ => context.settings.set_memory_limit(parse_bytes(&value)?),
    }
    Ok(QueryResult::message(context.settings.show(&name)))
}

/// Runs `RESET name` or `RESET ALL`.
pub fn reset(context: Context<'_>, reset: &ResetStatement) -> Result<QueryResult> {
    let defaults = Settings::default();
    let names: Vec<String> = match &reset.reset {
        Reset::ALL => NAMES.iter().map(|n| n.to_string()).collect(),
        Reset::ConfigurationParameter(name) => vec![setting_name(name)?],
        Reset::SessionAuthorization => {
            return Err(Error::NotSupported(
                "RESET SESSION AUTHORIZATION (einsql has no users)".to_string(),
            ));
        }
    };
    let mut shown = Vec::new();
    for name in names {
        match name.as_str() {
            "threads" => context.settings.set_threads(defaults.threads()),
            "engine" => context.settings.set_reference(false),
            "estimator" => {
                let options = context.settings.optimizer_options();
                context.settings.set_optimizer_options(OptimizerOptions {
                    estimator: OptimizerOptions::default().estimator,
                    ..options
                });
            }
            "optimizer" => {
                let options = context.settings.optimizer_options();
                context.settings.set_optimizer_options(OptimizerOptions {
                    search: OptimizerOptions::default().search,
                    ..options
                });
            }
            "semijoin" => {
                let options = context.settings.optimizer_options();
                context.settings.set_optimizer_options(OptimizerOptions {
                    disabled: options.disabled.without(Phase::Semijoin),
                    ..options
                });
            }
            _ => context.settings.set_memory_limit(defaults.memory_limit()),
        }
        shown.push(context.settings.show(&name));
    }
    Ok(QueryResult::message(shown.join("; ")))
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

/// The setting an object name names (case-insensitive).
fn setting_name(name: &ObjectName) -> Result<String> {
    let text = name.to_string().to_lowercase();
    if NAMES.contains(&text.as_str()) {
        Ok(text)
    } else {
        Err(Error::unknown("Setting", &text, NAMES))
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
        let name = ObjectName::from(vec![sqlparser::ast::Ident::new("thread")]);
        let error = setting_name(&name).unwrap_err();
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
