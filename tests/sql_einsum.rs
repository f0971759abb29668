//! SQL and tensor index notation lower to the same IR: for matrix
//! multiply, a triangle count, a labelled subgraph count and a sigmoid over
//! an aggregate, the SQL query's program holds exactly the einsum
//! statement's expression (its `EXPLAIN` line), and both give the same
//! results.

use arrow::array::{Array, Float64Array, Int64Array, StringArray};
use einsql::{Database, QueryResult};

fn database() -> Database {
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE a (i INT, j INT, v INT, PRIMARY KEY (i, j));
         INSERT INTO a VALUES (0, 0, 1), (0, 1, 2), (1, 2, 3), (2, 1, -1), (3, 0, 2);
         CREATE TABLE b (j INT, k INT, v INT, PRIMARY KEY (j, k));
         INSERT INTO b VALUES (0, 1, 4), (1, 0, 5), (2, 2, 6), (1, 2, 7);
         CREATE TABLE e (src INT, dst INT);
         INSERT INTO e VALUES (0, 1), (1, 2), (0, 2), (2, 0), (0, 1), (2, 3), (1, 3), (0, 3);
         CREATE TABLE labels (vertex INT, label INT);
         INSERT INTO labels VALUES (0, 7), (1, 7), (2, 8), (3, 7);
         CREATE TABLE x (i INT, j INT, v DOUBLE, PRIMARY KEY (i, j));
         INSERT INTO x VALUES (0, 0, 0.5), (0, 1, -1.5), (2, 1, 2.0), (3, 0, 1.0);
         CREATE TABLE theta (j INT, v DOUBLE, PRIMARY KEY (j));
         INSERT INTO theta VALUES (0, 0.25), (1, 0.75);",
    )
    .expect("setup runs");
    db
}

/// The expressions (right-hand sides) of the program lines of `EXPLAIN`.
fn program(db: &Database, statement: &str) -> Vec<String> {
    let plan = db
        .execute(&format!("EXPLAIN {statement}"))
        .expect("EXPLAIN runs");
    let mut lines = Vec::new();
    for batch in &plan.batches {
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("EXPLAIN gives text");
        lines.extend(column.iter().flatten().map(str::to_string));
    }
    lines
        .iter()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_once(" = ").map(|(_, rhs)| rhs.to_string()))
        .collect()
}

/// Every row of a result, as numbers.
fn rows(result: &QueryResult) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = Vec::new();
    for batch in &result.batches {
        for row in 0..batch.num_rows() {
            out.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| {
                        let any = c.as_any();
                        if let Some(a) = any.downcast_ref::<Int64Array>() {
                            a.value(row) as f64
                        } else if let Some(a) = any.downcast_ref::<Float64Array>() {
                            a.value(row)
                        } else {
                            panic!("unexpected column type {}", c.data_type())
                        }
                    })
                    .collect(),
            );
        }
    }
    out.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    out
}

/// Checks that the SQL query's program contains the einsum statement's
/// expression, and returns both results: the SQL rows and the stored
/// einsum output.
fn same_ir(sql: &str, einsum: &str, output: &str) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let db = database();
    let einsum_program = program(&db, einsum);
    assert_eq!(einsum_program.len(), 1, "{einsum_program:?}");
    let sql_program = program(&db, sql);
    assert!(
        sql_program.contains(&einsum_program[0]),
        "SQL lowers to {sql_program:?}, einsum to {einsum_program:?}"
    );
    let sql_rows = rows(&db.execute(sql).expect("SQL runs"));
    db.execute(einsum).expect("einsum runs");
    let einsum_rows = rows(
        &db.execute(&format!("SELECT * FROM {output}"))
            .expect("result stored"),
    );
    (sql_rows, einsum_rows)
}

#[test]
fn matrix_multiply() {
    let (sql, einsum) = same_ir(
        "SELECT a.i, b.k, SUM(a.v * b.v) FROM a JOIN b ON a.j = b.j GROUP BY a.i, b.k",
        "C[i,k] = SUM(j) a[i,j] * b[j,k]",
        "C",
    );
    assert_eq!(sql, einsum);
    assert_eq!(sql.len(), 7);
}

#[test]
fn triangle_count() {
    let (sql, einsum) = same_ir(
        "SELECT COUNT(*) FROM e e1, e e2, e e3 \
         WHERE e1.dst = e2.src AND e2.dst = e3.dst AND e1.src = e3.src",
        "t = SUM(src,dst,dst_2) e[src,dst] * e[dst,dst_2] * e[src,dst_2]",
        "t",
    );
    assert_eq!(sql, einsum);
    // 0→1→2 (0→1 twice), 0→1→3 (twice), 0→2→3, 1→2→3, 2→0→3.
    assert_eq!(sql, vec![vec![7.0]]);
}

#[test]
fn labelled_subgraph_count() {
    let (sql, einsum) = same_ir(
        "SELECT COUNT(*) FROM e e0, e e1, labels l0, labels l2 \
         WHERE e0.dst = e1.src AND l0.vertex = e0.src AND l0.label = 7 \
         AND l2.vertex = e1.dst AND l2.label = 8",
        "n = SUM(src,dst,dst_2) labels[src,7] * e[src,dst] * e[dst,dst_2] * labels[dst_2,8]",
        "n",
    );
    assert_eq!(sql, einsum);
    // Paths into vertex 2 (label 8) from a label-7 start: 0→1→2 twice.
    assert_eq!(sql, vec![vec![2.0]]);
}

#[test]
fn sigmoid_over_an_aggregate() {
    let (sql, einsum) = same_ir(
        "SELECT x.i, sigmoid(SUM(x.v * theta.v)) FROM x, theta WHERE x.j = theta.j GROUP BY x.i",
        "P[i] = sigmoid(SUM(j) x[i,j] * theta[j])",
        "P",
    );
    // The sigmoid of an absent sum is 0.5, so the einsum output holds every
    // i; SQL has the groups with rows. They agree on those.
    assert_eq!(sql.len(), 3);
    for row in &sql {
        assert!(einsum.contains(row), "{row:?} missing from {einsum:?}");
    }
    let expected = |t: f64| 1.0 / (1.0 + (-t).exp());
    assert_eq!(
        sql,
        vec![
            vec![0.0, expected(0.5 * 0.25 - 1.5 * 0.75)],
            vec![2.0, expected(2.0 * 0.75)],
            vec![3.0, expected(0.25)],
        ]
    );
}
