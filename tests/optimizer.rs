//! The optimizer through the public API: `EXPLAIN ANALYZE` and
//! `Database::execute_profiled` report every step's estimated and actual
//! entries and the times, and the optimizer settings change the plan but
//! not the answer.

use std::time::Instant;

use arrow::array::{Array, Int64Array, StringArray};
use einsql::Database;

mod common;

/// Two triangles sharing the edge (1, 2), plus a pendant edge (3, 4).
/// Its plans are searched although they cost less to run than to search
/// (`trivial` off), so that the tests see the steps a larger graph gets.
fn graph() -> Database {
    let db = Database::open_in_memory();
    db.execute_all(
        "CREATE TABLE e (src INT, dst INT);
         INSERT INTO e VALUES (0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1),
                              (1, 3), (3, 1), (2, 3), (3, 2), (3, 4), (4, 3);
         SET disabled_optimizers = 'trivial';",
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

/// The logical plan's lines of `EXPLAIN statement`.
fn logical_plan_lines(db: &Database, statement: &str) -> Vec<String> {
    plan_lines(db, &format!("EXPLAIN {statement}"))
        .into_iter()
        .skip_while(|l| !l.starts_with("Logical plan"))
        .take_while(|l| !l.starts_with("Physical plan"))
        .collect()
}

const DIAMONDS: &str = "d[] = SUM(i,j,k,l) e[i,j] * e[i,k] * e[j,k] * e[l,j] * e[l,k];";

#[test]
fn explain_analyze_shows_estimates_actual_entries_and_times() {
    let db = graph();
    let lines = plan_lines(&db, &format!("EXPLAIN ANALYZE {DIAMONDS}"));
    let text = lines.join("\n");
    // The mask step: triangles per edge, read through the edges'
    // orientation (`j` and `k` are interchangeable, the sum doubled): 5
    // of the 10 directed edges that lie on one.
    assert!(
        text.contains("interchangeable: j < k; the sum multiplied by 2"),
        "{text}"
    );
    assert!(
        text.contains("\"#e1\"[j,k] = SUM(i) e[i,j] * e[i,k] * \"#o1\"[j,k]"),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("#e1: 5 entries (estimated")),
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
fn explain_analyze_shows_the_programs_binding_evaluates() {
    let db = graph();
    let lines = plan_lines(
        &db,
        "EXPLAIN ANALYZE WITH p AS (SELECT a.src, b.dst FROM e a, e b WHERE a.dst = b.src) \
         SELECT COUNT(*) FROM p x, p y WHERE x.dst = y.src",
    );
    let text = lines.join("\n");
    // The WITH table's program runs while the statement is bound; it is
    // listed first, then the query's own.
    let first = lines.iter().position(|l| l == "Program 1 of 2:");
    let second = lines.iter().position(|l| l == "Program 2 of 2:");
    assert!(
        first.is_some_and(|f| second.is_some_and(|s| f < s)),
        "{text}"
    );
    let optimized = lines.iter().filter(|l| l.starts_with("Optimized in"));
    assert_eq!(optimized.count(), 2, "{text}");
    let bound = lines.iter().position(|l| l.starts_with("Bound in"));
    let result = lines.iter().position(|l| l.starts_with("Result: 1 row in"));
    assert!(bound.is_some_and(|b| result == Some(b + 1)), "{text}");
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
    assert!(profile.parse.as_nanos() > 0);
    assert!(profile.bind.as_nanos() > 0);
    let plan = profile.plan();
    assert!(plan.contains("Logical plan"), "{plan}");
    assert!(plan.contains("entries (estimated"), "{plan}");
    assert!(!plan.contains(" ms"), "{plan}");
}

#[test]
fn a_profile_counts_the_programs_binding_evaluates_once() {
    let db = graph();
    let started = Instant::now();
    let (_, profile) = db
        .execute_profiled(
            "WITH p AS (SELECT a.src, b.dst FROM e a, e b WHERE a.dst = b.src) \
             SELECT COUNT(*) FROM p x, p y WHERE x.dst = y.src",
        )
        .expect("the query runs");
    let wall = started.elapsed();
    // The WITH table is evaluated while the statement is bound: its run is
    // its own program, and binding's time leaves it out, so the parts add
    // up to no more than the whole.
    assert_eq!(profile.programs.len(), 2);
    assert!(profile.bind.as_nanos() > 0);
    let parts = profile.parse + profile.bind + profile.optimize + profile.execute;
    assert!(parts <= wall, "{parts:?} of {wall:?}: {profile:?}");
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

/// A star join: `l[o,n,s,p]` has one entry per `(o, n)` (a key of it),
/// with features of `s` and `p` in two blocks of `j`; every value a
/// multiple of 1/8, so that sums in any order are exact.
fn star_join() -> Database {
    star_join_of(100, 10, 12)
}

/// [`star_join`] with `orders` orders, `suppliers` suppliers and `parts`
/// parts.
fn star_join_of(orders: i64, suppliers: i64, parts: i64) -> Database {
    let mut rows = Vec::new();
    for o in 0..orders {
        for n in 0..=o % 3 {
            rows.push(format!(
                "({o}, {n}, {}, {})",
                (o * 7 + n) % suppliers,
                (o * 3 + n * 5) % parts
            ));
        }
    }
    let block = |keys: i64, first: i64| {
        let mut cells = Vec::new();
        for k in 0..keys {
            for j in first..first + 20 {
                if (k + j) % 3 == 0 {
                    cells.push(format!("({k}, {j}, {})", (k - j % 7) as f64 / 4.0));
                }
            }
        }
        cells.join(", ")
    };
    let theta: Vec<String> = (0..40)
        .map(|j| format!("({j}, {})", f64::from(j % 5 - 2) / 8.0))
        .collect();
    let db = Database::open_in_memory();
    db.execute(&format!(
        "CREATE TABLE l (o BIGINT, n BIGINT, s BIGINT, p BIGINT, PRIMARY KEY (o, n, s, p));
         INSERT INTO l VALUES {};
         CREATE TABLE fs (s BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (s, j));
         INSERT INTO fs VALUES {};
         CREATE TABLE fp (p BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (p, j));
         INSERT INTO fp VALUES {};
         CREATE TABLE theta (j BIGINT, v DOUBLE, PRIMARY KEY (j));
         INSERT INTO theta VALUES {};",
        rows.join(", "),
        block(suppliers, 0),
        block(parts, 20),
        theta.join(", ")
    ))
    .expect("the star join loads");
    db
}

/// The sorted entries of `statement`'s result under each optimizer
/// setting: every phase, `distribute` off, and the optimizer off. The
/// tables are small enough for every plan to cost less to run than to
/// search: `trivial` stays off throughout, so that plans are searched as
/// they are at scale (and stays off for the `EXPLAIN` that follows).
fn under_each_setting(db: &Database, statement: &str, table: &str) -> Vec<Vec<String>> {
    let mut answers = Vec::new();
    for setting in [
        "SET optimizer = 'exact'; SET disabled_optimizers = 'trivial'",
        "SET disabled_optimizers = 'distribute, trivial'",
        "SET disabled_optimizers = 'trivial'; SET optimizer = 'none'",
    ] {
        db.execute(setting).expect("the setting applies");
        db.execute(statement).expect("the statement runs");
        let mut rows = common::lines(
            &db.execute(&format!("SELECT * FROM {table}"))
                .expect("it reads"),
        );
        rows.sort();
        answers.push(rows);
    }
    db.execute("SET optimizer = 'exact'")
        .expect("the setting applies");
    answers
}

/// The sorted entries of `statement`'s result with the optimizer phases
/// `phases` and `trivial` off (see [`under_each_setting`]).
fn with_disabled(db: &Database, phases: &str, statement: &str, table: &str) -> Vec<String> {
    db.execute(&format!("SET disabled_optimizers = '{phases}, trivial'"))
        .expect("the setting applies");
    db.execute(statement).expect("the statement runs");
    let mut rows = common::lines(
        &db.execute(&format!("SELECT * FROM {table}"))
            .expect("it reads"),
    );
    rows.sort();
    db.execute("SET disabled_optimizers = 'trivial'")
        .expect("the setting applies");
    rows
}

#[test]
fn a_keyed_tables_rows_are_their_own_square_and_a_bags_counts_are_not() {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE k (o BIGINT, s BIGINT, PRIMARY KEY (o, s));
         INSERT INTO k VALUES (0, 1), (1, 2), (2, 1);
         CREATE TABLE b (o BIGINT, s BIGINT);
         INSERT INTO b VALUES (0, 1), (0, 1), (1, 2), (2, 1), (2, 1), (2, 1);
         CREATE TABLE f (s BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (s, j));
         INSERT INTO f VALUES (1, 0, 0.5), (1, 1, 2.0), (2, 0, 3.0);",
    )
    .expect("it loads");
    // o is a key of both: the two reads of one entry merge. k's rows are
    // 1 at each entry, so one read is left; b's counts (2 and 3) square.
    for (table, square) in [("k", false), ("b", true)] {
        let statement = format!(
            "c[j,m] = SUM(o) (SUM(s) {table}[o,s] * f[s,j]) * (SUM(s2) {table}[o,s2] * f[s2,m])"
        );
        let answers = under_each_setting(&db, &statement, "c");
        assert_eq!(answers[0], answers[1], "{table}");
        assert_eq!(answers[0], answers[2], "{table}");
        assert_eq!(answers[0].len(), 4, "{table}: {answers:?}");
        let lines: Vec<String> = plan_lines(&db, &format!("EXPLAIN {statement}"))
            .into_iter()
            .skip_while(|l| !l.starts_with("Logical plan"))
            .collect();
        let twice = format!("{table}[o,s] * {table}[o,s]");
        assert_eq!(
            lines.iter().any(|l| l.contains(&twice)),
            square,
            "{table}: {lines:#?}"
        );
        assert!(lines.iter().all(|l| !l.contains("s2")), "{lines:#?}");
    }
    db.execute("c[j,m] = SUM(o) (SUM(s) b[o,s] * f[s,j]) * (SUM(s2) b[o,s2] * f[s2,m])")
        .expect("it runs");
    let rows = common::lines(
        &db.execute("SELECT * FROM c WHERE j = 0 AND m = 0")
            .expect("it reads"),
    );
    // o = 0: (2 · 0.5)² = 1; o = 1: (1 · 3)² = 9; o = 2: (3 · 0.5)² = 2.25.
    assert_eq!(rows, vec!["0|0|12.25"], "{rows:?}");
}

/// A sum nested under `sigmoid` that reads, by a key, the entry a factor
/// around it reads is that entry: its variables take the outer factor's
/// coordinates (a keyed table's rows, a pattern of ones, drop out inside;
/// a bag's counts stay). A table that `o` is no key of keeps its nested
/// sum. Every answer equals the unoptimized plan's.
#[test]
fn a_nested_sum_that_reads_an_outer_entry_by_its_key_is_that_entry() {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE k (o BIGINT, s BIGINT, PRIMARY KEY (o, s));
         INSERT INTO k VALUES (0, 1), (1, 2), (2, 1), (3, 3);
         CREATE TABLE b (o BIGINT, s BIGINT);
         INSERT INTO b VALUES (0, 1), (0, 1), (1, 2), (2, 1), (2, 1), (2, 1), (3, 3);
         CREATE TABLE g (o BIGINT, s BIGINT, PRIMARY KEY (o, s));
         INSERT INTO g VALUES (0, 1), (0, 2), (1, 2), (2, 1), (3, 3);
         CREATE TABLE f (s BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (s, j));
         INSERT INTO f VALUES (1, 0, 0.5), (1, 1, -2.0), (2, 0, 3.0), (2, 1, 0.25);",
    )
    .expect("it loads");
    for (table, inner) in [
        ("k", Some("sigmoid(f.v[s,m])")),
        ("b", Some("sigmoid(b[o,s] * f.v[s,m])")),
        ("g", None),
    ] {
        let statement =
            format!("y[o,m] = SUM(s) {table}[o,s] * sigmoid(SUM(s2) {table}[o,s2] * f[s2,m])");
        let answers = under_each_setting(&db, &statement, "y");
        assert_eq!(answers[0], answers[1], "{table}");
        assert_eq!(answers[0], answers[2], "{table}");
        assert_eq!(answers[0].len(), 8, "{table}: {answers:?}");
        let lines = logical_plan_lines(&db, &statement);
        let unnested = lines.iter().all(|l| !l.contains("s2"));
        assert_eq!(unnested, inner.is_some(), "{table}: {lines:#?}");
        if let Some(inner) = inner {
            assert!(
                lines.iter().any(|l| l.contains(inner)),
                "{table}: {lines:#?}"
            );
        }
    }
    // o = 3 reads s = 3, which f has no entry for: sigmoid(0) times its
    // row, as without the rewrite.
    db.execute("y[o,m] = SUM(s) b[o,s] * sigmoid(SUM(s2) b[o,s2] * f[s2,m])")
        .expect("it runs");
    let rows = common::lines(
        &db.execute("SELECT * FROM y WHERE o >= 2 ORDER BY o, m")
            .expect("it reads"),
    );
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let expected = [
        format!("2|0|{}", 3.0 * sigmoid(1.5)),
        format!("2|1|{}", 3.0 * sigmoid(-6.0)),
        "3|0|0.5".to_string(),
        "3|1|0.5".to_string(),
    ];
    assert_eq!(rows, expected, "{rows:?}");
}

/// The star join's logistic regression: the sum under `sigmoid` reads
/// `l`'s entry by its key `(o, n)`, so it is the entry's features times
/// theta, which one sparse-driven pass over `l` reads through `sigmoid`
/// (no nested result per line item). Answers equal every other plan's.
#[test]
fn a_sum_of_lookups_under_sigmoid_is_read_in_one_pass_over_the_driver() {
    let db = star_join();
    let statement = "y[o,n] = (SUM(s,p) l[o,n,s,p]) \
                     * sigmoid(SUM(s,p,j) l[o,n,s,p] * (fs[s,j] + fp[p,j]) * theta[j])";
    let answers = under_each_setting(&db, statement, "y");
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
    assert_eq!(answers[0].len(), 199, "{answers:?}");
    let lines = plan_lines(&db, &format!("EXPLAIN {statement}"));
    let passes_over_l: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("sparse-driven: for each entry of l["))
        .collect();
    assert_eq!(passes_over_l.len(), 1, "{lines:#?}");
    let through = lines
        .iter()
        .filter(|l| l.contains("added in the sum, read through sigmoid"))
        .count();
    assert_eq!(through, 2, "{lines:#?}");
}

/// A sum of blocks read through `relu` with a free variable: each entry
/// of `l` writes a row over `j`, every cell the sum's cell through the
/// function, as the loops compute it.
#[test]
fn a_sum_of_rows_under_relu_is_read_in_one_pass_over_the_driver() {
    let db = star_join();
    let statement = "y[o,n,j] = SUM(s,p) l[o,n,s,p] * relu(fs[s,j] - fp[p,j])";
    let answers = under_each_setting(&db, statement, "y");
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
    assert!(answers[0].len() > 500, "{}", answers[0].len());
    let lines = plan_lines(&db, &format!("EXPLAIN {statement}"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("sparse-driven: for each entry of l[")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("subtracted in the sum, read through relu")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("per entry, a row over j")),
        "{lines:#?}"
    );
}

/// The self-join of `l` through its part, each pair's features those of
/// both suppliers and of the part, times the weights: a join's pairs
/// written out, one pass over the pairs (no loops over the join); answers
/// equal the loops' and every other plan's. With few suppliers and parts
/// the weighted blocks are one result over `(s1, s2, p)`, read at each
/// pair; with many, one per block, each read at one table's entries and
/// added per pair.
#[test]
fn a_joins_pairs_are_written_in_one_pass_over_the_pairs() {
    let statement = "y[o1,n1,o2,n2] = SUM(s1,s2,p,j) l[o1,n1,s1,p] * l[o2,n2,s2,p] \
                     * (fs[s1,j] + fs[s2,j] + fp[p,j]) * theta[j]";
    let paired =
        "paired: each entry of l[o1,n1,s1,p] meets the entries of l[o2,n2,s2,p] that share (p)";
    for (db, at_pair, at_left, at_right) in [
        (star_join(), 1, 0, 0),
        (star_join_of(2_000, 200, 300), 0, 2, 1),
    ] {
        let mut answers = under_each_setting(&db, statement, "y");
        answers.push(with_disabled(&db, "dense", statement, "y"));
        assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
        assert!(answers[0].len() > 1_000, "{}", answers[0].len());
        let lines = plan_lines(&db, &format!("EXPLAIN {statement}"));
        assert!(lines.iter().any(|l| l.contains(paired)), "{lines:#?}");
        let read = |at: &str| lines.iter().filter(|l| l.contains(at)).count();
        let reads = (
            read("(at each pair)"),
            read("(at the left table's entries; added in the sum)"),
            read("(at the right table's entries; added in the sum)"),
        );
        assert_eq!(reads, (at_pair, at_left, at_right), "{lines:#?}");
        let lines = plan_lines(
            &db,
            &format!("SET disabled_optimizers = 'dense'; EXPLAIN {statement}"),
        );
        assert!(!lines.iter().any(|l| l.contains("paired:")), "{lines:#?}");
        db.execute("SET disabled_optimizers = ''")
            .expect("the setting applies");
    }
}

/// The same pairs read through `sigmoid`, each side's factors and a
/// function of a factor on each side: per pair, the two sides' products
/// times the function of the two sides' sums.
#[test]
fn a_function_of_both_sides_sums_is_taken_per_pair() {
    let db = star_join();
    let statement = "y[o1,n1,o2,n2] = (SUM(s1,s2,p) l[o1,n1,s1,p] * l[o2,n2,s2,p]) \
                     * sigmoid(SUM(s1,s2,p,j) l[o1,n1,s1,p] * l[o2,n2,s2,p] \
                     * (fs[s1,j] + fs[s2,j] + fp[p,j]) * theta[j])";
    let mut answers = under_each_setting(&db, statement, "y");
    answers.push(with_disabled(&db, "dense", statement, "y"));
    assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
    let lines = plan_lines(&db, &format!("EXPLAIN {statement}"));
    assert!(
        lines.iter().any(|l| l.contains("paired: each entry of l[")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("added in the sum, read through sigmoid")),
        "{lines:#?}"
    );
    add_weights(&db);
    let factors = "y[o1,n1,o2,n2] = SUM(s1,s2,p) l[o1,n1,s1,p] * l[o2,n2,s2,p] \
                   * w[s1] * relu(w[s2])";
    let mut answers = under_each_setting(&db, factors, "y");
    answers.push(with_disabled(&db, "dense", factors, "y"));
    assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
    assert!(!answers[0].is_empty());
    let lines = plan_lines(&db, &format!("EXPLAIN {factors}"));
    assert!(
        lines.iter().any(|l| l.contains("paired: each entry of")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("(at the right table's entries; through relu)")),
        "{lines:#?}"
    );
}

/// Pairs whose output does not list the left table's variables first are
/// written as they come and sorted when stored; an output without a key of
/// each table is no join's pairs (an entry sums several), and runs its
/// loops.
#[test]
fn pairs_out_of_order_are_sorted_and_an_output_without_keys_is_not_paired() {
    let db = star_join();
    add_weights(&db);
    let shuffled = "y[n1,o2,o1,n2] = SUM(s1,s2,p) l[o1,n1,s1,p] * l[o2,n2,s2,p] * w[s1]";
    let mut answers = under_each_setting(&db, shuffled, "y");
    answers.push(with_disabled(&db, "dense", shuffled, "y"));
    assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
    let lines = plan_lines(&db, &format!("EXPLAIN {shuffled}"));
    assert!(lines.iter().any(|l| l.contains("paired:")), "{lines:#?}");
    let summed = "y[o1,o2] = SUM(n1,n2,s1,s2,p) l[o1,n1,s1,p] * l[o2,n2,s2,p] * w[s1]";
    let mut answers = under_each_setting(&db, summed, "y");
    answers.push(with_disabled(&db, "dense", summed, "y"));
    assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
    let lines = plan_lines(&db, &format!("EXPLAIN {summed}"));
    assert!(!lines.iter().any(|l| l.contains("paired:")), "{lines:#?}");
}

/// Adds the weights of a two-layer network over `l`'s 40 features:
/// `w1[k,j]` (6 × 40) and `w2[k,m]` (5 × 6), multiples of 1/8 of both
/// signs, so that some of each layer's sums are negative (`relu` takes
/// them to 0) and sums in any order are exact.
fn add_layers(db: &Database) {
    let cells = |rows: i64, columns: i64, seed: i64| {
        let mut cells = Vec::new();
        for k in 0..rows {
            for j in 0..columns {
                let v = (k * 7 + j * seed) % 9 - 4;
                if v != 0 {
                    cells.push(format!("({k}, {j}, {})", v as f64 / 8.0));
                }
            }
        }
        cells.join(", ")
    };
    db.execute(&format!(
        "CREATE TABLE w1 (k BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (k, j));
         INSERT INTO w1 VALUES {};
         CREATE TABLE w2 (k BIGINT, m BIGINT, v DOUBLE, PRIMARY KEY (k, m));
         INSERT INTO w2 VALUES {};",
        cells(6, 40, 5),
        cells(5, 6, 3)
    ))
    .expect("the weights load");
}

/// A network layer, `relu` of a sum per line item and hidden unit: the
/// `fuse` phase folds the `relu` into the query that makes the sum, which
/// stores the layer itself, each value through `relu` as it is written
/// (the zeros it makes dropped). The first layer runs one pass over `l`
/// writing a row of hidden units per line item; the second, over the
/// first layer's entries `h[o,n,m]`, adds each into a row per `(o, n)`,
/// reading `w2[k,m]` along `k`. Every setting gives the same entries, on
/// one thread and on two; a map that does not keep 0 at 0 (`sigmoid`) is
/// not folded.
#[test]
fn a_layers_relu_is_applied_as_the_layer_is_written() {
    let db = star_join_of(3_000, 10, 12);
    add_layers(&db);
    let first = "h[o,n,k] = relu(SUM(s,p,j) l[o,n,s,p] * (fs[s,j] + fp[p,j]) * w1[k,j])";
    let second = "h2[o,n,k] = relu(SUM(m) h[o,n,m] * w2[k,m])";
    for (statement, table, result) in [
        (first, "h", "result: written at the driver's entries"),
        (
            second,
            "h2",
            "result: added into a row per (o,n) of the driver's entries",
        ),
    ] {
        let mut answers = under_each_setting(&db, statement, table);
        answers.push(with_disabled(&db, "fuse", statement, table));
        answers.push(with_disabled(&db, "dense", statement, table));
        db.execute("SET threads = 1").expect("the setting applies");
        answers.push(with_disabled(&db, "", statement, table));
        db.execute("SET threads = 2").expect("the setting applies");
        assert!(answers.iter().all(|a| a == &answers[0]), "{statement}");
        // Some sums are negative, so the layer stores fewer entries than
        // a row per line item.
        let rows = common::lines(&db.execute("SELECT COUNT(*) FROM l").expect("it counts"));
        let items: usize = rows[0].trim().parse().expect("a count");
        assert!(
            answers[0].len() > items && answers[0].len() < items * 6,
            "{statement}"
        );
        let lines = plan_lines(&db, &format!("EXPLAIN {statement}"));
        let head = format!("Query {table}[o,n,k] (output DOUBLE");
        let folded = lines
            .iter()
            .any(|l| l.contains(&head) && l.contains("= relu(SUM("));
        assert!(folded, "{lines:#?}");
        assert!(!lines.iter().any(|l| l.contains("= relu(#")), "{lines:#?}");
        assert!(lines.iter().any(|l| l.contains(result)), "{lines:#?}");
        let lines = plan_lines(
            &db,
            &format!("SET disabled_optimizers = 'fuse'; EXPLAIN {statement}"),
        );
        assert!(
            lines.iter().any(|l| l.contains("= relu(#1[o,n,k])")),
            "{lines:#?}"
        );
        db.execute("SET disabled_optimizers = ''")
            .expect("the setting applies");
    }
    let squashed = "y[o,n,k] = sigmoid(SUM(m) h[o,n,m] * w2[k,m])";
    let answers = under_each_setting(&db, squashed, "y");
    assert!(answers.iter().all(|a| a == &answers[0]));
    let lines = plan_lines(&db, &format!("EXPLAIN {squashed}"));
    assert!(
        lines.iter().any(|l| l.contains("= sigmoid(#1[o,n,k])")),
        "{lines:#?}"
    );
}

/// Adds `w[s]`, weights of four of `l`'s suppliers, one negative.
fn add_weights(db: &Database) {
    db.execute(
        "CREATE TABLE w (s BIGINT, v DOUBLE, PRIMARY KEY (s));
         INSERT INTO w VALUES (1, 0.5), (2, -0.25), (4, 0.75), (7, 1.5)",
    )
    .expect("w loads");
}

#[test]
fn distributed_terms_that_share_the_join_are_one_loop_over_it() {
    let db = star_join();
    let statement = "y[o,n] = SUM(s,p,j) l[o,n,s,p] * (fs[s,j] + fp[p,j]) * theta[j]";
    let answers = under_each_setting(&db, statement, "y");
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
    assert!(answers[0].len() > 150, "{answers:?}");
    // theta is pushed into each block, and the join is read once with the
    // blocks' sums looked up, not once per block with the results added.
    let lines = plan_lines(&db, &format!("EXPLAIN {statement}"));
    let reading_l = lines
        .iter()
        .filter(|l| l.trim_start().starts_with("Query") && l.contains("l[o,n,s,p]"))
        .count();
    assert_eq!(reading_l, 1, "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("SUM(s,p) (l[o,n,s,p] * (#e1[s] + #e2[p]))")),
        "{lines:#?}"
    );
}

#[test]
fn two_reads_of_one_entry_by_a_key_are_merged() {
    let db = star_join();
    // X^T X: both copies of l are the entry of (o, n), so s2 and p2 are s
    // and p; the plan never pairs the entries of one order.
    let statement = "cov[j,k] = SUM(o,n) (SUM(s,p) l[o,n,s,p] * (fs[s,j] + fp[p,j])) \
                     * (SUM(s2,p2) l[o,n,s2,p2] * (fs[s2,k] + fp[p2,k]))";
    let answers = under_each_setting(&db, statement, "cov");
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
    assert!(answers[0].len() > 8, "{answers:?}");
    let logical = logical_plan_lines(&db, statement);
    assert!(logical.len() > 1, "{logical:#?}");
    assert!(
        logical
            .iter()
            .all(|l| !l.contains("s2") && !l.contains("p2")),
        "{logical:#?}"
    );

    // Without a key (two entries share (o, n) = (0, 0)), the copies stay
    // apart, and the answer is still the optimizer-free one.
    db.execute("INSERT INTO l VALUES (0, 0, 9, 11)")
        .expect("it inserts");
    let answers = under_each_setting(&db, statement, "cov");
    assert_eq!(answers[0], answers[2]);
    let lines = plan_lines(&db, &format!("EXPLAIN {statement}"));
    assert!(lines.iter().any(|l| l.contains("s2")), "{lines:#?}");
}
