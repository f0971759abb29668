//! The optimizer through the public API: `EXPLAIN ANALYZE` and
//! `Database::execute_profiled` report every step's estimated and actual
//! entries and the times, and the optimizer settings change the plan but
//! not the answer.

use arrow::array::{Array, Int64Array, StringArray};
use einsql::Database;

/// Two triangles sharing the edge (1, 2), plus a pendant edge (3, 4).
fn graph() -> Database {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE e (src INT, dst INT);
         INSERT INTO e VALUES (0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1),
                              (1, 3), (3, 1), (2, 3), (3, 2), (3, 4), (4, 3);",
    )
    .expect("the graph loads");
    db
}

fn plan_lines(db: &Database, sql: &str) -> Vec<String> {
    let result = db.execute(sql).expect("EXPLAIN runs");
    let mut lines = Vec::new();
    for batch in &result.batches {
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("a text column");
        lines.extend((0..column.len()).map(|k| column.value(k).to_string()));
    }
    lines
}

const DIAMONDS: &str = "d[] = SUM(i,j,k,l) e[i,j] * e[i,k] * e[j,k] * e[l,j] * e[l,k];";

#[test]
fn explain_analyze_shows_estimates_actual_entries_and_times() {
    let db = graph();
    let lines = plan_lines(&db, &format!("EXPLAIN ANALYZE {DIAMONDS}"));
    let text = lines.join("\n");
    // The mask step: triangles per edge, 10 directed edges lie on one.
    assert!(
        text.contains("\"#e1\"[j,k] = SUM(i) e[i,j] * e[i,k] * e[j,k]"),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("#e1: 10 entries (estimated")),
        "{text}"
    );
    assert!(lines.iter().any(|l| l.contains("Optimized in")), "{text}");
    // EXPLAIN ANALYZE of an einsum statement does not store its result.
    assert!(db.execute("SELECT * FROM d").is_err());

    let sql = plan_lines(
        &db,
        "EXPLAIN ANALYZE SELECT COUNT(*) FROM e a, e b, e c \
         WHERE a.dst = b.src AND b.dst = c.src AND c.dst = a.src",
    );
    let text = sql.join("\n");
    assert!(text.contains("Execution:"), "{text}");
    assert!(
        sql.last()
            .is_some_and(|l| l.starts_with("Result: 1 row in")),
        "{text}"
    );
}

#[test]
fn execute_profiled_reports_the_plan_and_times() {
    let db = graph();
    let (result, profile) = db
        .execute_profiled("SELECT COUNT(*) AS n FROM e a, e b WHERE a.dst = b.src")
        .expect("the query runs");
    let n = result.batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("a count")
        .value(0);
    // Walks of length two: the sum of squared degrees (2, 3, 3, 3, 1).
    assert_eq!(n, 4 + 9 + 9 + 9 + 1);
    assert_eq!(profile.programs.len(), 1);
    assert!(profile.optimize.as_nanos() > 0);
    let plan = profile.plan();
    assert!(plan.contains("Logical plan"), "{plan}");
    assert!(plan.contains("entries (estimated"), "{plan}");
    assert!(!plan.contains(" ms"), "{plan}");
}

#[test]
fn every_setting_gives_the_same_counts() {
    let db = graph();
    let mut counts = Vec::new();
    for (estimator, optimizer, semijoin) in [
        ("chain", "exact", true),
        ("chain", "exact", false),
        ("chain", "greedy", true),
        ("chain", "none", true),
        ("uniform", "exact", true),
        ("uniform", "greedy", false),
        ("uniform", "none", true),
    ] {
        db.execute(&format!(
            "SET estimator = '{estimator}'; SET optimizer = '{optimizer}'; \
             SET semijoin = {semijoin};"
        ))
        .expect("the settings apply");
        db.execute(DIAMONDS).expect("the count runs");
        let result = db.execute("SELECT * FROM d").expect("the count is stored");
        let count = result.batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("an integer")
            .value(0);
        counts.push(count);
    }
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
    assert!(counts[0] > 0);
}

#[test]
fn a_constant_coordinate_is_estimated_by_the_entries_it_selects() {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE labels (vertex INT, label INT);
         INSERT INTO labels VALUES (0, 3), (1, 3), (2, 5), (3, 3), (4, 7), (5, 5);",
    )
    .expect("the labels load");
    let lines = plan_lines(&db, "EXPLAIN x[v] = labels[v, 3]");
    assert!(
        lines.iter().any(|l| l.ends_with("(estimated 3 entries)")),
        "{lines:?}"
    );
    let lines = plan_lines(&db, "EXPLAIN x[v] = labels[v, 4]");
    assert!(
        lines.iter().any(|l| l.ends_with("(estimated 0 entries)")),
        "{lines:?}"
    );
}
