//! The `symmetry` phase (`src/optimizer/symmetry.rs`): sums over
//! interchangeable variables of a symmetric input without self-loops are
//! counted once per set of values, in degree order, and multiplied by the
//! number of orders. On random undirected graphs (with labels, repeated
//! rows and weights), every pattern's result equals the reference
//! evaluator's and the plan's without the phase; the patterns whose
//! variables are interchangeable are rewritten with the factor `EXPLAIN`
//! states, the others are not; inputs that are not symmetric, store a
//! self-loop, or have asymmetric values are left alone.

mod common;

use common::{Rng, lines};
use einsql::Database;

/// An undirected graph on `n` vertices, each edge stored both ways with
/// a weight equal both ways, and a label per vertex (0 or 1).
fn load(db: &Database, rng: &mut Rng, n: usize, percent: usize) {
    let mut edges = Vec::new();
    let mut weighted = Vec::new();
    for i in 0..n {
        for j in 0..i {
            if rng.below(100) < percent {
                let w = 1 + (i * 7 + j * 3) % 5;
                edges.extend([format!("({i},{j})"), format!("({j},{i})")]);
                weighted.extend([format!("({i},{j},{w}.5)"), format!("({j},{i},{w}.5)")]);
            }
        }
    }
    let labels: Vec<String> = (0..n).map(|v| format!("({v},{})", rng.below(2))).collect();
    db.execute_all(&format!(
        "CREATE TABLE e (s BIGINT, d BIGINT);
         INSERT INTO e VALUES {};
         CREATE TABLE w (s BIGINT, d BIGINT, v DOUBLE, PRIMARY KEY (s, d));
         INSERT INTO w VALUES {};
         CREATE TABLE lab (v BIGINT, l BIGINT);
         INSERT INTO lab VALUES {};",
        edges.join(","),
        weighted.join(","),
        labels.join(",")
    ))
    .expect("loads");
}

/// The patterns, with the factor the phase multiplies each by (1: not
/// rewritten).
const PATTERNS: [(&str, i64); 9] = [
    ("t = SUM(i,j,k) e[i,j] * e[j,k] * e[i,k]", 6),
    (
        "t = SUM(a,b,c,d) e[a,b] * e[a,c] * e[a,d] * e[b,c] * e[b,d] * e[c,d]",
        24,
    ),
    // A diamond: a and b interchangeable, c and d not adjacent.
    (
        "t = SUM(a,b,c,d) e[a,b] * e[a,c] * e[a,d] * e[b,c] * e[b,d]",
        2,
    ),
    // A 4-cycle: no two adjacent variables interchangeable.
    ("t = SUM(a,b,c,d) e[a,b] * e[b,c] * e[c,d] * e[d,a]", 1),
    // Per vertex: the output variable stays, the other two swap.
    ("t[i] = SUM(j,k) e[i,j] * e[j,k] * e[i,k]", 2),
    // Labels: only the two vertices labelled 1 swap.
    (
        "t = SUM(i,j,k) e[i,j] * e[j,k] * e[i,k] * lab[i,1] * lab[j,1] * lab[k,0]",
        2,
    ),
    // Weighted triangles: the weights are equal both ways.
    ("t = SUM(i,j,k) w.v[i,j] * w.v[j,k] * w.v[i,k]", 6),
    // Two triangles sharing a vertex: {i,j} and {k,l} each swap.
    (
        "t = SUM(c,i,j,k,l) e[c,i] * e[c,j] * e[i,j] * e[c,k] * e[c,l] * e[k,l]",
        4,
    ),
    // Read through its transpose too: e[j,i] is e[i,j].
    ("t = SUM(i,j,k) e[j,i] * e[k,j] * e[i,k]", 6),
];

/// `t`'s rows after `pattern` runs with `disabled_optimizers` set to
/// `disabled`, or on the reference evaluator.
fn rows(db: &Database, pattern: &str, disabled: Option<&str>) -> Vec<String> {
    match disabled {
        Some(d) => db
            .execute_all(&format!(
                "SET engine = 'executor'; SET disabled_optimizers = '{d}'; {pattern};"
            ))
            .expect("runs"),
        None => db
            .execute_all(&format!("SET engine = 'reference'; {pattern};"))
            .expect("runs"),
    };
    lines(&db.execute("SELECT * FROM t").expect("reads"))
}

/// The factor `EXPLAIN` says the phase multiplied a sum by (1: none).
fn factor(db: &Database, pattern: &str) -> i64 {
    db.execute_all("SET engine = 'executor'; SET disabled_optimizers = '';")
        .expect("sets");
    let plan = lines(&db.execute(&format!("EXPLAIN {pattern}")).expect("explains")).join("\n");
    plan.lines()
        .filter_map(|l| l.split_once("; the sum multiplied by "))
        .map(|(_, f)| f.trim().parse::<i64>().expect("a factor"))
        .product()
}

#[test]
fn interchangeable_variables_are_counted_once_and_the_results_stay() {
    let mut rng = Rng(0x5e11_2026_1202_0001);
    for (n, percent) in [(30, 30), (80, 12), (150, 6)] {
        let db = Database::open_in_memory();
        load(&db, &mut rng, n, percent);
        for (pattern, expected) in PATTERNS {
            let reference = rows(&db, pattern, None);
            assert!(!reference.is_empty(), "n {n}: {pattern} has a result");
            assert_eq!(rows(&db, pattern, Some("")), reference, "n {n}: {pattern}");
            assert_eq!(
                rows(&db, pattern, Some("symmetry")),
                reference,
                "n {n}: {pattern} without the phase"
            );
            assert_eq!(
                rows(&db, pattern, Some("trivial, physical")),
                reference,
                "n {n}: {pattern} in default loop orders"
            );
            assert_eq!(factor(&db, pattern), expected, "n {n}: {pattern}");
        }
    }
}

#[test]
fn repeated_rows_keep_their_multiplicity() {
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE e (s BIGINT, d BIGINT);
         INSERT INTO e VALUES (0,1),(1,0),(1,2),(2,1),(0,2),(2,0),(2,3),(3,2),(1,3),(3,1);
         INSERT INTO e VALUES (0,1),(1,0);",
    )
    .expect("loads");
    let triangles = "t = SUM(i,j,k) e[i,j] * e[j,k] * e[i,k]";
    assert_eq!(factor(&db, triangles), 6);
    // Triangles 012 (edge 01 stored twice: each of its 6 orders counts
    // 2) and 123 (each order 1): 6 * 2 + 6 * 1.
    assert_eq!(rows(&db, triangles, Some("")), ["18"]);
    assert_eq!(rows(&db, triangles, None), ["18"]);
}

#[test]
fn inputs_that_are_not_symmetric_are_left_alone() {
    let db = Database::open_in_memory();
    let triangles = "t = SUM(i,j,k) e[i,j] * e[j,k] * e[i,k]";
    let weighted = "t = SUM(i,j,k) w.v[i,j] * w.v[j,k] * w.v[i,k]";
    // One direction of an edge missing.
    db.execute_all(
        "CREATE TABLE e (s BIGINT, d BIGINT);
         INSERT INTO e VALUES (0,1),(1,0),(1,2),(2,1),(0,2),(2,0),(2,3),(3,2),(1,3);",
    )
    .expect("loads");
    assert_eq!(factor(&db, triangles), 1);
    assert_eq!(rows(&db, triangles, Some("")), rows(&db, triangles, None));
    // A self-loop: i = j = k would count.
    db.execute_all("INSERT INTO e VALUES (3,1),(2,2);")
        .expect("inserts");
    assert_eq!(factor(&db, triangles), 1);
    assert_eq!(rows(&db, triangles, Some("")), rows(&db, triangles, None));
    // Symmetric edges, asymmetric weights.
    db.execute_all(
        "CREATE TABLE w (s BIGINT, d BIGINT, v DOUBLE, PRIMARY KEY (s, d));
         INSERT INTO w VALUES (0,1,1),(1,0,1),(1,2,1),(2,1,1),(0,2,1),(2,0,2);",
    )
    .expect("loads");
    assert_eq!(factor(&db, weighted), 1);
    // The six orders of triangle 012: three read w[2,0] = 2.
    assert_eq!(rows(&db, weighted, Some("")), ["9.0"]);
    assert_eq!(rows(&db, weighted, None), ["9.0"]);
    // Edges with a label: the same pair under two labels, each both ways,
    // is symmetric; one pair whose label differs by direction is not.
    let labelled = "t = SUM(i,j,k) el[i,j,0] * el[j,k,0] * el[i,k,0]";
    db.execute_all(
        "CREATE TABLE el (s BIGINT, d BIGINT, l BIGINT);
         INSERT INTO el VALUES (0,1,0),(1,0,0),(0,1,1),(1,0,1),(1,2,0),(2,1,0),
                               (0,2,0),(2,0,0),(2,3,1),(3,2,1);",
    )
    .expect("loads");
    assert_eq!(factor(&db, labelled), 6);
    assert_eq!(rows(&db, labelled, Some("")), ["6"]);
    assert_eq!(rows(&db, labelled, None), ["6"]);
    db.execute_all("INSERT INTO el VALUES (1,3,0),(3,1,1);")
        .expect("inserts");
    assert_eq!(factor(&db, labelled), 1);
    assert_eq!(rows(&db, labelled, Some("")), rows(&db, labelled, None));
}

#[test]
fn the_plan_names_the_orientation_and_the_phase_can_be_switched_off() {
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE e (s BIGINT, d BIGINT);
         INSERT INTO e VALUES (0,1),(1,0),(1,2),(2,1),(0,2),(2,0),(0,3),(3,0);",
    )
    .expect("loads");
    let triangles = "t = SUM(i,j,k) e[i,j] * e[j,k] * e[i,k]";
    let plan = lines(
        &db.execute(&format!("EXPLAIN {triangles}"))
            .expect("explains"),
    )
    .join("\n");
    assert!(
        plan.contains("\"#o1\" = e where s ranks below d  (4 of 8 entries)"),
        "{plan}"
    );
    assert!(
        plan.contains("interchangeable: i < j < k; the sum multiplied by 6"),
        "{plan}"
    );
    assert!(plan.contains("6 * SUM(i,j,k) \"#o1\"[i,j]"), "{plan}");
    db.execute("SET disabled_optimizers = 'symmetry'")
        .expect("sets");
    let plan = lines(
        &db.execute(&format!("EXPLAIN {triangles}"))
            .expect("explains"),
    )
    .join("\n");
    assert!(!plan.contains("#o1"), "{plan}");
    let analyzed = lines(
        &db.execute(&format!("EXPLAIN ANALYZE {triangles}"))
            .expect("explains"),
    )
    .join("\n");
    assert!(analyzed.contains("symmetry"), "{analyzed}");
}
