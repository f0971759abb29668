//! `EXPLAIN`: the plan a statement runs, as rows of text (one column,
//! `plan`).
//!
//! Today there are two kinds of plans. A SQL query lists one stored table or
//! one file, so its plan is a scan or a load. An einsum statement is an IR
//! program run by the executor, so its plan is the program in its text form
//! with the inputs it reads, then the physical plan ([`crate::exec::plan`]):
//! one line per query, re-index step and loop. The optimizer will add the
//! logical plan and its estimates here.

use crate::database::QueryResult;
use crate::error::Result;
use crate::ir::Program;
use crate::storage::{ColumnRef, Tensor};

/// The lines of a plan as a result with one `plan` column.
pub fn plan_result(lines: Vec<String>) -> Result<QueryResult> {
    QueryResult::text_column("plan", lines)
}

/// The plan of an einsum program: its IR, the inputs it reads and the
/// physical plan that runs it.
pub fn program_lines(program: &Program) -> Result<Vec<String>> {
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
    lines.push("Physical plan:".to_string());
    let plan = crate::exec::plan(program)?;
    lines.extend(plan.to_string().lines().map(|l| format!("  {l}")));
    Ok(lines)
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
        crate::sql::count(tensor.nnz(), "stored entry", "stored entries")
    )
}
