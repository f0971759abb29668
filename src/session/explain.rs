//! `EXPLAIN` and `EXPLAIN ANALYZE` of a bound statement, SQL or tensor
//! index notation: the plan it runs, as rows of text (one column, `plan`).
//!
//! A SQL query that lists one stored table or one file scans or loads it.
//! Every other query, every einsum statement and the query of a `CREATE
//! TABLE ... AS` is an IR program: its plan is the program in its text form
//! with the inputs it reads, then what the optimizer ([`crate::optimizer`])
//! makes of it: the logical plan (the aggregation steps, each with its
//! estimated number of entries) and the physical plan ([`crate::exec::plan`]:
//! one line per query, re-index step and loop), then how a SQL query's rows
//! are assembled. Nothing is evaluated, except the `WITH` tables and `FROM`
//! sub-queries that binding evaluates. `EXPLAIN ANALYZE` runs the
//! statement's program without storing anything and shows every program it
//! evaluated (those that binding evaluated first) with the entries and time
//! of each step. `EXPLAIN (FORMAT sql, DIALECT d)` shows the optimized plan
//! as SQL for another engine instead ([`emitted_sql`]).

use std::time::{Duration, Instant};

use super::profile::{Profile, ProfileLog, ProgramRun, ReplanCause};
use super::result::QueryResult;
use super::{Session, count, entries};
use crate::bound::{BoundStatement, Relation};
use crate::emit::{self, Dialect};
use crate::error::{Error, Result};
use crate::exec::{Entrywise, FirstRows};
use crate::ir::{Expr, Program};
use crate::optimizer::{Optimized, OptimizerOptions};
use crate::storage::{ColumnRef, Tensor};

/// `EXPLAIN` of `bound`, or `EXPLAIN ANALYZE` when given the profile of
/// binding it: its time and the programs it evaluated (`WITH` tables and
/// sub-queries), which are shown first.
pub fn explain(
    session: &Session<'_>,
    bound: BoundStatement,
    analyze: Option<Profile>,
) -> Result<QueryResult> {
    let relation = match bound {
        BoundStatement::Query(relation) => relation,
        BoundStatement::CreateTable {
            source: source @ (Relation::Program(_) | Relation::Table(_) | Relation::File { .. }),
            ..
        } => source,
        BoundStatement::Assign(program) => {
            let lines = if let Some(binding) = analyze {
                analyzed(session, &program, binding, |session| {
                    let results = session.evaluate(&program)?;
                    let stored: Vec<String> = results
                        .iter()
                        .map(|(name, tensor)| format!("{name} ({})", entries(tensor.nnz())))
                        .collect();
                    Ok(format!("{}, not stored,", stored.join(", ")))
                })?
            } else {
                program_lines(&program, &session.settings().optimizer_options())?
            };
            return plan_result(lines);
        }
        BoundStatement::CreateTable { .. } => {
            return Err(Error::NotSupported(
                "EXPLAIN of CREATE TABLE without AS SELECT".to_string(),
            ));
        }
        other if analyze.is_some() => {
            return Err(Error::NotSupported(format!(
                "EXPLAIN ANALYZE of {} statements (only queries and tensor index notation)",
                other.kind()
            )));
        }
        other => {
            return Err(Error::NotSupported(format!(
                "EXPLAIN of {} statements",
                other.kind()
            )));
        }
    };
    let lines = match (&relation, analyze) {
        (Relation::Program(query), None) => {
            let mut lines = first_rows_lines(
                &query.program,
                &session.settings().optimizer_options(),
                query.assembly.first_rows(),
            )?;
            lines.extend(query.assembly.describe());
            lines
        }
        (Relation::Program(query), Some(binding)) => {
            analyzed(session, &query.program, binding, |session| {
                let rows = session.rows(&relation)?.num_rows();
                Ok(count(rows, "row", "rows"))
            })?
        }
        (source, None) => vec![source_line(session, source)?],
        (source, Some(binding)) => {
            let start = Instant::now();
            let rows = session.rows(source)?.num_rows();
            vec![
                source_line(session, source)?,
                bound_line(binding.bind),
                result_line(&count(rows, "row", "rows"), start.elapsed()),
            ]
        }
    };
    plan_result(lines)
}

/// `EXPLAIN (FORMAT sql, DIALECT dialect)` of `bound`: its optimized plan
/// as SQL for another engine ([`crate::emit`]), with the session's
/// optimizer settings. A query that lists a stored table is `SELECT *` of
/// it.
///
/// Errors: statements other than queries and tensor index notation, a
/// query that reads a file, and the emitter's.
pub fn emitted_sql(
    session: &Session<'_>,
    bound: BoundStatement,
    dialect: Dialect,
) -> Result<String> {
    let options = session.settings().optimizer_options();
    match bound {
        BoundStatement::Assign(program) => emit::emit_program(&program, &options, dialect),
        BoundStatement::Query(Relation::Program(query)) => {
            query.assembly.sql(&query.program, &options, dialect)
        }
        BoundStatement::Query(Relation::Table(name)) => {
            Ok(format!("SELECT * FROM {}", dialect.ident(&name)))
        }
        BoundStatement::Query(Relation::File { call, .. }) => Err(Error::NotSupported(format!(
            "SQL for a query that reads the file {call} (load it into a table first)"
        ))),
        BoundStatement::Query(Relation::Tensor(_)) => {
            Err(Error::NotSupported("SQL for a VALUES list".to_string()))
        }
        other => Err(Error::NotSupported(format!(
            "EXPLAIN (FORMAT sql) of {} statements (queries and tensor index notation only)",
            other.kind()
        ))),
    }
}

/// `Scan <table>` or `Load <call>`: the plan of a relation read as it is.
fn source_line(session: &Session<'_>, relation: &Relation) -> Result<String> {
    match relation {
        Relation::Table(name) => Ok(format!(
            "Scan {}",
            table_line(name, session.read_catalog().get(name)?.as_ref())
        )),
        Relation::File { call, .. } => Ok(format!("Load {call}")),
        Relation::Tensor(_) | Relation::Program(_) => Err(Error::Internal(
            "a program explained as a stored source".to_string(),
        )),
    }
}

/// `EXPLAIN ANALYZE`: the program and its inputs, then every program that
/// binding (`binding`) and then `run` evaluated, with what each step
/// produced and took, then the time binding took, then what `run`
/// returned (a description of the result) and the time it took.
fn analyzed(
    session: &Session<'_>,
    program: &Program,
    binding: Profile,
    run: impl FnOnce(&Session<'_>) -> Result<String>,
) -> Result<Vec<String>> {
    let log = ProfileLog::default();
    let start = Instant::now();
    let result = run(&session.logged(&log))?;
    let elapsed = start.elapsed();
    let mut lines = program_text_lines(program);
    let mut runs = binding.programs;
    runs.extend(log.take());
    for (k, run) in runs.iter().enumerate() {
        if runs.len() > 1 {
            lines.push(format!("Program {} of {}:", k + 1, runs.len()));
        }
        lines.extend(run_lines(run, true));
    }
    lines.push(bound_line(binding.bind));
    lines.push(result_line(&result, elapsed));
    Ok(lines)
}

/// The time binding took, without the programs it evaluated.
fn bound_line(bind: Duration) -> String {
    format!("Bound in {}", millis(bind))
}

fn result_line(result: &str, elapsed: Duration) -> String {
    format!("Result: {result} in {}", millis(elapsed))
}

/// The lines of a plan as a result with one `plan` column.
pub fn plan_result(lines: Vec<String>) -> Result<QueryResult> {
    QueryResult::text_column("plan", lines)
}

/// The plan of a program: its IR, the inputs it reads, and the optimized
/// plan under `options`.
pub fn program_lines(program: &Program, options: &OptimizerOptions) -> Result<Vec<String>> {
    first_rows_lines(program, options, None)
}

/// [`program_lines`] of a program whose caller needs only the `first`
/// rows of one output: that query's loops planned in output order, as
/// they run ([`crate::optimizer::optimize_in_order`]).
fn first_rows_lines(
    program: &Program,
    options: &OptimizerOptions,
    first: Option<FirstRows>,
) -> Result<Vec<String>> {
    let mut lines = program_text_lines(program);
    let in_order: Vec<String> = first.into_iter().map(|f| f.query).collect();
    let optimized = crate::optimizer::optimize_in_order(program, options, &in_order)?;
    lines.extend(optimized_lines(&optimized));
    Ok(lines)
}

/// A program in its text form, and the inputs it reads.
fn program_text_lines(program: &Program) -> Vec<String> {
    let mut lines = vec!["Program (tensor index notation):".to_string()];
    lines.extend(program.queries.iter().map(|q| format!("  {q}")));
    lines.push("Inputs:".to_string());
    let mut seen: Vec<&str> = Vec::new();
    for query in &program.queries {
        for input in query.expr.inputs() {
            let name = input.tensor.name.as_str();
            if !seen.contains(&name) {
                seen.push(name);
                lines.push(format!("  {}", table_line(name, &input.tensor.tensor)));
            }
        }
    }
    if seen.is_empty() {
        lines.push("  none (the program reads no table)".to_string());
    }
    lines
}

/// The logical plan with its estimates, then the physical plan.
pub fn optimized_lines(optimized: &Optimized) -> Vec<String> {
    let options = optimized.options;
    let mut lines = Vec::new();
    if !optimized.rewritten.is_empty() {
        lines.push("Rewritten by equality saturation (saturate):".to_string());
        for r in &optimized.rewritten {
            lines.push(format!("  {}", r.before));
            lines.push(format!("    as {}", r.after));
        }
    }
    if !optimized.broken.is_empty() {
        lines.push("Symmetry broken (each set of values counted once, in increasing order of degree, then coordinate):".to_string());
        for o in &optimized.orientations {
            lines.push(format!(
                "  \"{}\" = {} where {} ranks below {}  ({} of {} entries)",
                o.name,
                o.source,
                o.lower,
                o.higher,
                grouped(o.kept as f64),
                grouped(o.of as f64)
            ));
        }
        for b in &optimized.broken {
            let classes: Vec<String> = b.classes.iter().map(|c| c.join(" < ")).collect();
            lines.push(format!(
                "  interchangeable: {}; the sum multiplied by {}",
                classes.join("; "),
                b.factor
            ));
        }
    }
    if !optimized.reductions.is_empty() || !optimized.absorbed.is_empty() {
        lines.push("Semijoin reductions:".to_string());
        for r in &optimized.reductions {
            lines.push(format!(
                "  \"{}\"[{}] = {} restricted by {}  ({} of {} entries)",
                r.name,
                r.indices.join(","),
                r.source(),
                r.filters_written().join(", "),
                grouped(r.kept as f64),
                grouped(r.of as f64)
            ));
        }
        if !optimized.absorbed.is_empty() {
            lines.push(format!(
                "  left out, implied by the reductions (each entry counts 1): {}",
                optimized
                    .absorbed
                    .iter()
                    .map(Expr::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let trivial = match optimized.trivial {
        0 => String::new(),
        1 => "; 1 sum kept as written, cheaper to run than to search".to_string(),
        n => format!("; {n} sums kept as written, cheaper to run than to search"),
    };
    let guarded = if optimized.guarded.is_empty() {
        String::new()
    } else {
        format!(
            "; the loops of {} stop past {} visits and plan again",
            optimized.guarded.join(", "),
            crate::optimizer::logical::NEST_VISITS
        )
    };
    lines.push(format!(
        "Logical plan (optimizer = {}, estimator = {}{trivial}{guarded}):",
        options.search.name(),
        options.estimator.name()
    ));
    for (query, estimate) in optimized.logical.queries.iter().zip(&optimized.estimates) {
        lines.push(format!("  {query}  ({})", estimated(*estimate)));
    }
    lines.push("Physical plan:".to_string());
    lines.extend(optimized.plan.to_string().lines().map(|l| format!("  {l}")));
    lines
}

/// The lines of one program run: the plan, then per physical query its
/// actual entries (and estimate) and, if `times`, its time and the
/// optimization and execution times.
pub fn run_lines(run: &ProgramRun, times: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for replan in &run.replans {
        let mut line = match replan.cause {
            ReplanCause::Step { estimate } => format!(
                "Planned again: step {} ({}) outgrew its estimate; no step estimated as large is \
                 taken",
                replan.query,
                estimated(estimate)
            ),
            ReplanCause::Nest => format!(
                "Planned again: the loops of {} visited more than {} assignments as written; its \
                 sums are searched",
                replan.query,
                crate::optimizer::logical::NEST_VISITS
            ),
        };
        if times {
            line.push_str(&format!(" (the plan given up ran {})", millis(replan.time)));
        }
        lines.push(line);
    }
    match &run.optimized {
        Some(optimized) => lines.extend(optimized_lines(optimized)),
        None => lines.push("Reference evaluator (the program runs as written)".to_string()),
    }
    if !run.queries.is_empty() {
        lines.push("Execution:".to_string());
    }
    for query in &run.queries {
        let estimate = run.optimized.as_ref().and_then(|o| {
            o.logical
                .queries
                .iter()
                .position(|q| q.name == query.name)
                .map(|k| o.estimates[k])
        });
        let row_local = query.fused.as_ref().is_some_and(|f| f.row_local);
        let mut line = if row_local {
            format!("  {}: row-local, not stored", query.name)
        } else {
            format!("  {}: {}", query.name, entries(query.entries))
        };
        if let Some(estimate) = estimate.filter(|_| !row_local) {
            line.push_str(&format!(" ({})", estimated(estimate)));
        }
        let first_of_pass = match &query.fused {
            Some(fusion) => {
                line.push_str(&format!("; fused pass {}", fusion.members.join(", ")));
                fusion.members.first() == Some(&query.name)
            }
            None => true,
        };
        if let Some(limited) = query.limited {
            line.push_str(&format!(
                ", stopped at its first {} ({} of {} chunks run)",
                count(
                    usize::try_from(limited.rows).unwrap_or(usize::MAX),
                    "row",
                    "rows"
                ),
                limited.chunks_run,
                limited.chunks
            ));
        }
        match query.entrywise {
            Some(Entrywise::Shared) => line.push_str("; one loop over its inputs' shared entries"),
            Some(Entrywise::Merged) => line.push_str("; one merge of its inputs' sorted entries"),
            None => {}
        }
        if times && first_of_pass {
            line.push_str(&format!(", {}", millis(query.time)));
        }
        lines.push(line);
    }
    if times && let Some(optimized) = &run.optimized {
        lines.push("Optimizer phases:".to_string());
        for phase in &optimized.phases {
            lines.push(if phase.skipped {
                format!("  {}: skipped", phase.phase)
            } else {
                format!("  {}: {}", phase.phase, millis(phase.time))
            });
        }
    }
    if times {
        let optimize = run.optimized.as_ref().map_or(Duration::ZERO, |o| o.time);
        let reduce = run
            .optimized
            .as_ref()
            .map_or(Duration::ZERO, |o| o.reduce_time);
        lines.push(format!(
            "Optimized in {} (semijoin reductions {}); executed in {}",
            millis(optimize),
            millis(reduce),
            millis(run.execute)
        ));
    }
    lines
}

/// "estimated 1,234 entries", or "not estimated".
fn estimated(estimate: f64) -> String {
    if estimate.is_nan() {
        return "not estimated".to_string();
    }
    let text = if estimate < 1e15 {
        grouped(estimate)
    } else {
        format!("{estimate:.2e}")
    };
    let noun = if text == "1" { "entry" } else { "entries" };
    format!("estimated {text} {noun}")
}

/// A whole number with its thousands separated by commas (`1,234`).
fn grouped(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut text = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            text.push(',');
        }
        text.push(c);
    }
    text
}

/// A duration in milliseconds with three decimals.
fn millis(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}

/// One line describing a stored table: its dimensions with sizes, its
/// value columns and its number of stored entries.
pub fn table_line(name: &str, tensor: &Tensor) -> String {
    let mut dims = Vec::new();
    let mut values = Vec::new();
    for &column in tensor.column_order() {
        let text = format!(
            "{} {}",
            tensor.column_name(column),
            tensor.column_sql_type(column)
        );
        match column {
            ColumnRef::Key(d) => dims.push(format!("{text} [{}]", tensor.dims()[d].size)),
            ColumnRef::Value(_) => values.push(text),
        }
    }
    let values = if tensor.is_bag() {
        "a bag (rows counted by multiplicity)".to_string()
    } else {
        format!("values {}", values.join(", "))
    };
    format!(
        "{name}: dimensions {}; {values}; {}",
        dims.join(", "),
        count(tensor.nnz(), "stored entry", "stored entries")
    )
}
