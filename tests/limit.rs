//! `LIMIT` on join listings: the answers equal the full listing's rows
//! sliced by `OFFSET` and `LIMIT` (under every optimizer setting, thread
//! count and executor path), and the executor stops early, which the
//! profile's work counters show: the entries the rows query wrote and the
//! chunks of its outermost loop that ran.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use einsql::Database;
use einsql::exec::QueryRun;

/// A directed graph on `n` vertices with `degree` out-edges per vertex,
/// as a Matrix Market pattern file.
fn write_graph(path: &Path, n: usize, degree: usize) {
    let mut text = String::new();
    writeln!(text, "%%MatrixMarket matrix coordinate pattern general").unwrap();
    writeln!(text, "{n} {n} {}", n * degree).unwrap();
    for v in 0..n {
        for k in 0..degree {
            let w = (v * 7 + k * 13 + 1) % n;
            writeln!(text, "{} {}", v + 1, w + 1).unwrap();
        }
    }
    std::fs::write(path, text).unwrap();
}

/// A database with the table `e` (keys `s`, `d`): a graph of `n` vertices
/// and `degree` out-edges each (repeated edges collapse).
fn graph_database(n: usize, degree: usize) -> Database {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.mtx");
    write_graph(&path, n, degree);
    let db = Database::open_in_memory();
    db.execute(&format!(
        "CREATE TABLE e AS SELECT * FROM read_mtx('{}', keys = ['s', 'd'])",
        path.display()
    ))
    .unwrap();
    db
}

fn rows(db: &Database, sql: &str) -> Vec<String> {
    common::lines(&db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}")))
}

/// The rows of a profiled statement and the runs of its physical queries.
fn profiled(db: &Database, sql: &str) -> (Vec<String>, Vec<QueryRun>) {
    let (result, profile) = db.execute_profiled(sql).unwrap();
    let runs = profile
        .programs
        .iter()
        .flat_map(|p| p.queries.iter().cloned())
        .collect();
    (common::lines(&result), runs)
}

/// The rows of a profiled statement and the run of its rows query.
fn rows_run(db: &Database, sql: &str) -> (Vec<String>, QueryRun) {
    let (listed, runs) = profiled(db, sql);
    let run = runs
        .into_iter()
        .find(|q| q.name == "#rows")
        .expect("the statement ran a rows query");
    (listed, run)
}

/// Every `OFFSET`/`LIMIT` pair of `limits` over `listing` gives the full
/// listing's slice, under each setting of `settings`.
fn check_slices(db: &Database, listing: &str, settings: &[&str]) {
    let full = rows(db, listing);
    assert!(full.len() > 20, "{listing}: {} rows", full.len());
    for setting in settings {
        db.execute(setting).unwrap();
        for (offset, limit) in [(0, 1), (0, 7), (3, 5), (40, 30), (full.len() - 2, 10)] {
            let sql = format!("{listing} LIMIT {limit} OFFSET {offset}");
            let expected: Vec<String> = full.iter().skip(offset).take(limit).cloned().collect();
            assert_eq!(rows(db, &sql), expected, "{sql} after {setting}");
        }
        assert_eq!(
            rows(db, &format!("{listing} LIMIT 0")),
            Vec::<String>::new()
        );
    }
    db.execute("RESET ALL").unwrap();
}

const SETTINGS: [&str; 7] = [
    "SET threads = 1",
    "SET threads = 2",
    "SET optimizer = 'none'",
    "SET optimizer = 'greedy'",
    "SET disabled_optimizers = 'physical'",
    "SET disabled_optimizers = 'semijoin, eliminate'",
    "SET estimator = 'uniform'",
];

#[test]
fn a_limited_listing_is_the_full_listings_slice() {
    let db = graph_database(40, 3);
    // A product of row counts: the executor's product path.
    check_slices(
        &db,
        "SELECT a.s, b.d, c.d FROM e a, e b, e c WHERE a.d = b.s AND b.d = c.s",
        &SETTINGS,
    );
    // A condition beside the join: the general path.
    check_slices(
        &db,
        "SELECT b.d, a.s FROM e a JOIN e b ON a.d = b.s WHERE a.s < b.d",
        &SETTINGS,
    );
}

#[test]
fn bag_rows_repeat_across_the_limit() {
    let db = Database::open_in_memory();
    db.execute("CREATE TABLE bag (x INT, y INT)").unwrap();
    let mut values = Vec::new();
    for x in 0..12 {
        for copy in 0..(x % 4) {
            values.push(format!("({x}, {})", (x * 5 + copy) % 7));
        }
        values.push(format!("({x}, {})", x % 7));
    }
    db.execute(&format!("INSERT INTO bag VALUES {}", values.join(", ")))
        .unwrap();
    check_slices(
        &db,
        "SELECT p.x, p.y, q.x FROM bag p, bag q WHERE p.y = q.y",
        &SETTINGS,
    );
    check_slices(&db, "SELECT * FROM bag", &["SET threads = 1"]);
}

#[test]
fn the_executor_stops_once_it_has_the_rows() {
    // 90,000 edges; the 3-paths number 90,000 * 30 * 30 = 81 million.
    let db = graph_database(3000, 30);
    let paths = "SELECT a.s, b.d, c.d FROM e a, e b, e c WHERE a.d = b.s AND b.d = c.s";
    let count = rows(
        &db,
        "SELECT COUNT(*) FROM e a, e b, e c WHERE a.d = b.s AND b.d = c.s",
    );
    assert_eq!(count, vec!["81000000".to_string()]);
    for threads in [1, 2] {
        db.execute(&format!("SET threads = {threads}")).unwrap();
        let (listed, run) = rows_run(&db, &format!("{paths} LIMIT 5"));
        assert_eq!(listed.len(), 5);
        let limited = run.limited.expect("the rows query ran under a row budget");
        assert_eq!(limited.rows, 5);
        // 5 entries written of 81 million, in the first of the chunks.
        assert_eq!(run.entries, 5, "{run:?}");
        assert_eq!(limited.chunks_run, 1, "{run:?}");
        assert!(limited.chunks >= 10, "{run:?}");
        let (_, profile) = db.execute_profiled(&format!("{paths} LIMIT 5")).unwrap();
        let plan = profile.plan();
        assert!(
            plan.contains("#rows: 5 entries (estimated ")
                && plan.contains("stopped at its first 5 rows (1 of "),
            "{plan}"
        );

        let (listed, run) = rows_run(&db, &format!("{paths} LIMIT 10 OFFSET 100000"));
        assert_eq!(listed.len(), 10);
        let limited = run.limited.expect("the rows query ran under a row budget");
        assert_eq!(run.entries, 100_010, "{run:?}");
        assert!(limited.chunks_run * 5 < limited.chunks, "{run:?}");

        // SELECT * over a join reads the values per row too.
        let (listed, run) = rows_run(&db, "SELECT * FROM e a, e b WHERE a.d = b.s LIMIT 10");
        assert_eq!(listed.len(), 10);
        assert_eq!(run.entries, 10, "{run:?}");
    }
}

#[test]
fn sorted_distinct_and_grouped_rows_are_computed_whole() {
    let db = graph_database(40, 3);
    let join = "FROM e a, e b WHERE a.d = b.s";
    for sql in [
        format!("SELECT a.s, b.d {join} ORDER BY b.d DESC, a.s LIMIT 4"),
        format!("SELECT DISTINCT a.s {join} LIMIT 4"),
        format!("SELECT a.s, COUNT(*) {join} GROUP BY a.s LIMIT 4"),
    ] {
        let (listed, runs) = profiled(&db, &sql);
        assert_eq!(listed.len(), 4, "{sql}");
        assert!(runs.iter().all(|run| run.limited.is_none()), "{sql}");
    }
    let (listed, _) = rows_run(
        &db,
        &format!("SELECT a.s, b.d {join} ORDER BY b.d DESC, a.s LIMIT 2"),
    );
    let mut all = rows(&db, &format!("SELECT a.s, b.d {join}"));
    all.sort_by_key(|row| {
        let (s, d) = row.split_once('|').unwrap();
        (
            std::cmp::Reverse(d.parse::<i64>().unwrap()),
            s.parse::<i64>().unwrap(),
        )
    });
    assert_eq!(listed, all[..2]);
}

/// `ORDER BY ... LIMIT k OFFSET o` keeps only the first `o + k` rows in
/// order while it assembles them (a bounded heap); its rows are the full
/// sort's slice, ties included in the order the full sort leaves them.
#[test]
fn a_sorted_limit_is_the_full_sorts_slice() {
    let db = graph_database(60, 4);
    let join = "FROM e a, e b, e c WHERE a.d = b.s AND b.d = c.s";
    for order in [
        // Few distinct keys: most rows tie, and ties keep listing order.
        "c.d < 30",
        "c.d DESC",
        "b.s DESC, c.d",
        "a.s + c.d, a.s DESC",
        "a.s * 0",
    ] {
        let listing = format!("SELECT a.s, b.s, c.s, c.d {join} ORDER BY {order}");
        let full = rows(&db, &listing);
        assert!(full.len() > 100, "{listing}: {} rows", full.len());
        for (offset, limit) in [
            (0, 0),
            (0, 1),
            (0, 7),
            (5, 20),
            (90, 45),
            (full.len() - 3, 10),
        ] {
            let sql = format!("{listing} LIMIT {limit} OFFSET {offset}");
            let expected: Vec<String> = full.iter().skip(offset).take(limit).cloned().collect();
            assert_eq!(rows(&db, &sql), expected, "{sql}");
        }
    }
}

/// A top-k holds only its rows: under a memory limit that the full sort's
/// rows do not fit in, the first rows in order still come out.
#[test]
fn a_sorted_limit_holds_only_its_rows() {
    let db = graph_database(1000, 10);
    let listing = "SELECT a.s, a.d, b.d FROM e a, e b WHERE a.d = b.s ORDER BY b.d DESC, a.s";
    let first: Vec<String> = rows(&db, listing).into_iter().take(5).collect();
    db.execute("SET memory_limit = '20MB'").unwrap();
    let error = db.execute(listing).unwrap_err();
    assert!(matches!(error, einsql::Error::OutOfMemory(_)), "{error}");
    assert_eq!(rows(&db, &format!("{listing} LIMIT 5")), first);
}

#[test]
fn the_issues_three_path_query_on_bcsstk13() {
    let Some(data) = common::datasets() else {
        return;
    };
    let path = data.join("matrices/lagraph/bcsstk13.mtx");
    if !path.exists() {
        eprintln!("skipping: {} not found", path.display());
        return;
    }
    let db = Database::open_in_memory();
    db.execute(&format!(
        "CREATE TABLE A AS SELECT * FROM read_mtx('{}')",
        path.display()
    ))
    .unwrap();
    let (listed, run) = rows_run(
        &db,
        "SELECT a.i, b.j, c.j FROM A a, A b, A c WHERE a.j = b.i AND b.j = c.i LIMIT 5;",
    );
    assert_eq!(listed, ["0|0|0", "0|0|1", "0|0|2", "0|0|3", "0|0|4"]);
    assert_eq!(run.entries, 5);
    assert_eq!(run.limited.map(|l| l.chunks_run), Some(1));
}
