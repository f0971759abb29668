//! Subgraph counting on the Sun & Luo data graphs (`yeast`, `hprd`): the
//! number of label-preserving homomorphisms of each query graph, computed
//! by the executor from the einsum form (`einsql::subgraph::to_einsum`) over
//! the `edges` and `labels` bags of `einsql::subgraph::load_data_file`, must
//! equal the count in `truth/`.
//!
//! The `queries-lite` sets (the queries the Galley paper timed) run by
//! default; every query of the full sets with up to 8 vertices runs with
//! `cargo test --release --test exec_subgraph -- --ignored`.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow::array::{Array, Int64Array};
use einsql::Database;
use einsql::subgraph::{QueryGraph, Truth, load_data_file, read_truth, to_einsum};

/// The count of `query` on the executor (the database's default engine).
fn count(db: &Database, query: &QueryGraph) -> i64 {
    let statement = to_einsum(query, "t").expect("expressible");
    db.execute(&statement).expect("the count runs");
    let result = db.execute("SELECT * FROM t").expect("the count is stored");
    result.batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .map(|a| a.value(0))
        .expect("an integer count")
}

/// Runs every query file of `dir` accepted by `wanted` that has a
/// trustworthy truth; returns how many ran.
fn check(data: &Path, name: &str, dir: &str, wanted: impl Fn(&str) -> bool) -> usize {
    let root = data.join("subgraph").join(name);
    let db = Database::open_in_memory();
    load_data_file(&db, root.join(format!("{name}.graph"))).expect("the data graph");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .expect("the query folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.file_name().and_then(|f| f.to_str()).is_some_and(&wanted))
        .collect();
    files.sort();
    let mut ran = 0;
    let started = Instant::now();
    for file in files {
        let file_name = file.file_name().expect("a file name");
        let Ok(Some(Truth::Count(truth))) = read_truth(root.join("truth").join(file_name)) else {
            continue;
        };
        let query = QueryGraph::read(&file).expect("a query graph");
        let begun = Instant::now();
        let got = count(&db, &query);
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
        ran += 1;
    }
    eprintln!(
        "{name}/{dir}: {ran} queries match truth/ in {:.1?}",
        started.elapsed()
    );
    ran
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
#[ignore = "minutes: every query of the full sets with up to 8 vertices"]
fn full_queries_up_to_8_vertices_match_truth() {
    let Some(data) = common::datasets() else {
        return;
    };
    for name in ["yeast", "hprd"] {
        check(&data, name, "queries", |f| {
            f.contains("_4_") || f.contains("_8_")
        });
    }
}
