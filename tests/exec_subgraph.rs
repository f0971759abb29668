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

use arrow::array::{Array, Int64Array};
use einsql::Database;
use einsql::io::graph::QueryGraph;
use subgraph::{Truth, load_data_file, read_truth, to_einsum};

/// The count of `query` on the executor (the database's default engine),
/// and how long optimizing it took.
fn count(db: &Database, query: &QueryGraph) -> einsql::Result<(i64, Duration)> {
    let statement = to_einsum(query, "t")?;
    let (_, profile) = db.execute_profiled(&statement)?;
    let result = db.execute("SELECT * FROM t").expect("the count is stored");
    let count = result.batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .map(|a| a.value(0))
        .expect("an integer count");
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
