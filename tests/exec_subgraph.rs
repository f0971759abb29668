//! Subgraph counting on the Sun & Luo data graphs (`yeast`, `hprd`): the
//! number of label-preserving homomorphisms of each query graph, computed
//! by the executor from the einsum form (`subgraph::to_einsum`) over
//! the `edges` and `labels` bags of `subgraph::load_data_file`, must
//! equal the count in `truth/`.
//!
//! The `queries-lite` sets (the queries the Galley paper timed) run by
//! default; every query of the full sets with up to 16 vertices runs with
//! `cargo test --release --test exec_subgraph -- --ignored --nocapture`,
//! under the optimizer settings in `$EINSQL_SETTINGS` (SQL `SET`
//! statements, e.g. `SET estimator = 'uniform'; SET optimizer = 'greedy'`),
//! and prints the median, 95th percentile and maximum time per query and
//! the time spent optimizing (`$EINSQL_SUBGRAPH_SIZES`, e.g. `4,8`, limits
//! the query sizes).

mod common;
#[path = "../benches/workload/subgraph.rs"]
mod subgraph;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow::array::{Array, Decimal128Array, Int64Array};
use einsql::Database;
use einsql::io::graph::QueryGraph;
use subgraph::{Truth, load_data_file, read_truth, to_einsum};

/// The count of `query` on the executor (the database's default engine),
/// and how long optimizing it took. A count past 64 bits is a `HUGEINT`.
fn count(db: &Database, query: &QueryGraph) -> einsql::Result<(i128, Duration)> {
    let statement = to_einsum(query, "t")?;
    let (_, profile) = db.execute_profiled(&statement)?;
    let result = db.execute("SELECT * FROM t").expect("the count is stored");
    let column = result.batches[0].column(0).as_any();
    let count = match (
        column.downcast_ref::<Int64Array>(),
        column.downcast_ref::<Decimal128Array>(),
    ) {
        (Some(a), _) => i128::from(a.value(0)),
        (_, Some(a)) => {
            assert!(
                a.value(0) > i128::from(i64::MAX),
                "a HUGEINT only past 64 bits"
            );
            a.value(0)
        }
        _ => panic!("an integer count"),
    };
    db.execute("DROP TABLE t").expect("the count is dropped");
    Ok((count, profile.optimize))
}

/// Runs every query file of `dir` accepted by `wanted` that has a
/// trustworthy truth; returns how many ran.
fn check(data: &Path, name: &str, dir: &str, wanted: impl Fn(&str) -> bool) -> usize {
    let root = data.join("subgraph").join(name);
    let db = Database::open_in_memory();
    load_data_file(&db, root.join(format!("{name}.graph"))).expect("the data graph");
    let settings = std::env::var("EINSQL_SETTINGS").unwrap_or_default();
    if !settings.trim().is_empty() {
        db.execute(&settings).expect("the settings apply");
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .expect("the query folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.file_name().and_then(|f| f.to_str()).is_some_and(&wanted))
        .collect();
    files.sort();
    let mut ran = 0;
    let started = Instant::now();
    let (mut times, mut optimizing, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for file in files {
        let file_name = file.file_name().expect("a file name");
        let Ok(Some(Truth::Count(truth))) = read_truth(root.join("truth").join(file_name)) else {
            continue;
        };
        let query = QueryGraph::read(&file).expect("a query graph");
        let begun = Instant::now();
        let (got, optimize) = match count(&db, &query) {
            Ok(counted) => counted,
            Err(error) => {
                failed.push(format!("{name}/{}: {error}", file_name.to_string_lossy()));
                continue;
            }
        };
        assert_eq!(
            u64::try_from(got).ok(),
            Some(truth),
            "{name}/{dir}/{}",
            file.display()
        );
        let took = begun.elapsed();
        if took.as_secs_f64() > 2.0 {
            eprintln!("  {name}/{}: {took:.1?}", file_name.to_string_lossy());
        }
        times.push(took);
        optimizing.push(optimize);
        ran += 1;
    }
    assert!(failed.is_empty(), "queries failed:\n{}", failed.join("\n"));
    times.sort();
    optimizing.sort();
    eprintln!(
        "{name}/{dir}: {ran} queries match truth/ in {:.1?}; per query {}; optimizing {}",
        started.elapsed(),
        spread(&times),
        spread(&optimizing)
    );
    ran
}

/// "median …, p95 …, max …" of sorted durations, in milliseconds.
fn spread(sorted: &[Duration]) -> String {
    let at = |p: f64| {
        let k = ((sorted.len().max(1) - 1) as f64 * p).round() as usize;
        sorted.get(k).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    format!(
        "median {:.3} ms, p95 {:.3} ms, max {:.3} ms",
        at(0.5),
        at(0.95),
        at(1.0)
    )
}

#[test]
fn lite_queries_match_truth() {
    let Some(data) = common::datasets() else {
        return;
    };
    let mut ran = 0;
    for name in ["yeast", "hprd"] {
        ran += check(&data, name, "queries-lite", |_| true);
    }
    assert!(ran > 100, "only {ran} queries have a truth");
}

#[test]
#[ignore = "minutes: every query of the full sets with up to 16 vertices"]
fn full_queries_up_to_16_vertices_match_truth() {
    let Some(data) = common::datasets() else {
        return;
    };
    // `EINSQL_SUBGRAPH_SIZES=4,8` runs only those query sizes.
    let sizes: Vec<String> = std::env::var("EINSQL_SUBGRAPH_SIZES")
        .unwrap_or_else(|_| "4,8,16".to_string())
        .split(',')
        .map(|s| format!("_{}_", s.trim()))
        .collect();
    for name in ["yeast", "hprd"] {
        check(&data, name, "queries", |f| {
            sizes.iter().any(|s| f.contains(s))
        });
    }
}

/// The yeast query graphs with 32 vertices, sparse, whose counts pass
/// 2^63: their `truth/` counts overflowed (or were never computed), so
/// each count is checked against a second plan instead (see
/// [`counts_past_64_bits`]).
const YEAST_SPARSE_32_PAST_64_BITS: &[&str] = &[
    "query_sparse_32_124.graph",
    "query_sparse_32_125.graph",
    "query_sparse_32_137.graph",
    "query_sparse_32_141.graph",
    "query_sparse_32_157.graph",
    "query_sparse_32_162.graph",
    "query_sparse_32_183.graph",
    "query_sparse_32_187.graph",
    "query_sparse_32_191.graph",
    "query_sparse_32_199.graph",
    "query_sparse_32_20.graph",
    "query_sparse_32_29.graph",
    "query_sparse_32_3.graph",
    "query_sparse_32_51.graph",
    "query_sparse_32_55.graph",
    "query_sparse_32_80.graph",
    "query_sparse_32_9.graph",
    "query_sparse_32_99.graph",
];

/// The HUGEINT counts of `files` (yeast query graphs), each computed by
/// two plans that must agree: the default one, and the one without the
/// semijoin reduction (other inputs, so other steps and loops); returns the
/// counts and how many of the queries the two plan differently (by their
/// `EXPLAIN` text).
fn counts_past_64_bits(data: &Path, files: &[&str]) -> (Vec<(String, i128)>, usize) {
    let root = data.join("subgraph").join("yeast");
    let db = Database::open_in_memory();
    load_data_file(&db, root.join("yeast.graph")).expect("the data graph");
    let explain = |statement: &str| {
        let result = db
            .execute(&format!("EXPLAIN {statement}"))
            .expect("the plan");
        format!("{:?}", result.batches)
    };
    let (mut counts, mut differ) = (Vec::new(), 0);
    for file in files {
        let query = QueryGraph::read(root.join("queries").join(file)).expect("a query graph");
        let statement = to_einsum(&query, "t").expect("expressible");
        db.execute("RESET ALL").expect("the default plan");
        let plan = explain(&statement);
        let begun = Instant::now();
        let (first, _) = count(&db, &query).expect("the default plan counts");
        let took = begun.elapsed();
        db.execute("SET disabled_optimizers = 'semijoin'")
            .expect("the second plan");
        differ += usize::from(explain(&statement) != plan);
        let (second, _) = count(&db, &query).expect("the second plan counts");
        assert_eq!(first, second, "yeast/{file}: the two plans disagree");
        assert!(
            first > i128::from(i64::MAX),
            "yeast/{file}: {first} fits in 64 bits"
        );
        eprintln!("yeast/{file}: {first} in {took:.1?}, the same by both plans");
        counts.push((file.to_string(), first));
    }
    (counts, differ)
}

#[test]
fn yeast_counts_past_64_bits_are_hugeints() {
    let Some(data) = common::datasets() else {
        return;
    };
    let (counts, differ) = counts_past_64_bits(&data, YEAST_SPARSE_32_PAST_64_BITS);
    assert_eq!(counts.len(), YEAST_SPARSE_32_PAST_64_BITS.len());
    // The original computation counted in 64 bits and wrapped: truth/ has
    // six of these counts, five of them ours modulo 2^64 (an independent
    // check of the low 64 bits); the sixth (query_sparse_32_137, truth/
    // 8432606220706741664) is neither.
    let mut wrapped = 0;
    for (file, count) in &counts {
        let truth = data.join("subgraph/yeast/truth").join(file);
        if let Ok(Some(Truth::Count(n) | Truth::Untrusted(n))) = read_truth(truth) {
            if (count % (1 << 64)) as u64 == n {
                wrapped += 1;
            } else {
                eprintln!("yeast/{file}: truth/ {n} is not {count} modulo 2^64");
            }
        }
    }
    eprintln!(
        "the two plans differ on {differ} of the {} queries; {wrapped} truth/ counts match \
         modulo 2^64",
        counts.len()
    );
    assert_eq!(wrapped, 5, "truth/ counts that are ours modulo 2^64");
    assert!(
        differ > counts.len() / 2,
        "the second plan is mostly the first"
    );
}

#[test]
#[ignore = "minutes: every sparse yeast query with 32 vertices"]
fn yeast_sparse_32_vertex_counts() {
    let Some(data) = common::datasets() else {
        return;
    };
    let root = data.join("subgraph").join("yeast");
    let db = Database::open_in_memory();
    load_data_file(&db, root.join("yeast.graph")).expect("the data graph");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("queries"))
        .expect("the query folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with("query_sparse_32_"))
        })
        .collect();
    files.sort();
    let (mut matched, mut wrapped, mut past) = (0, 0, Vec::new());
    for file in &files {
        let name = file.file_name().and_then(|f| f.to_str()).unwrap_or("?");
        let query = QueryGraph::read(file).expect("a query graph");
        let begun = Instant::now();
        let (got, _) = count(&db, &query).expect("the query counts");
        let took = begun.elapsed();
        let truth = match read_truth(root.join("truth").join(name)) {
            Ok(Some(Truth::Count(n) | Truth::Untrusted(n))) => Some(n),
            _ => None,
        };
        // The original computation counted in 64 bits and wrapped: where
        // the count passes 2^64, truth/ holds it modulo 2^64.
        match truth {
            Some(truth) if i128::from(truth) == got => matched += 1,
            Some(truth) if got >= 1 << 64 && (got % (1 << 64)) as u64 == truth => wrapped += 1,
            Some(truth) if got > i128::from(i64::MAX) => {
                eprintln!("yeast/{name}: {got}, truth/ {truth} (untrusted, differs)")
            }
            Some(truth) => panic!("yeast/{name}: counted {got}, truth/ {truth}"),
            None => eprintln!("yeast/{name}: {got} in {took:.1?}, no truth/"),
        }
        if got > i128::from(i64::MAX) {
            past.push(name.to_string());
        }
    }
    eprintln!(
        "{} queries: {matched} match truth/, {wrapped} match it modulo 2^64 (it wrapped), \
         {} pass 64 bits: {past:?}",
        files.len(),
        past.len()
    );
    let past: Vec<&str> = past.iter().map(String::as_str).collect();
    assert_eq!(past, YEAST_SPARSE_32_PAST_64_BITS);
}
