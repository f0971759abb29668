//! Subgraph counting on the Sun & Luo data graphs (`yeast`, `hprd`): the
//! number of label-preserving homomorphisms of each query graph, computed
//! by the executor from an einsum statement over `edges(src, dst, label)`
//! (both directions of every undirected edge) and `labels(vertex, label)`
//! bags, must equal the count in `truth/`.
//!
//! The `queries-lite` sets (the queries the Galley paper timed) run by
//! default; every query of the full sets with up to 8 vertices runs with
//! `cargo test --release --test exec_subgraph -- --ignored`.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, Int64Array};
use einsql::exec::{ExecOptions, execute};
use einsql::io::NoProgress;
use einsql::storage::catalog::Catalog;
use einsql::storage::{Coo, DimensionSpec, Tensor};

/// A graph file: vertex labels and undirected edges.
struct Graph {
    labels: Vec<i64>,
    edges: Vec<(i64, i64)>,
}

fn read_graph(path: &Path) -> Graph {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut labels = Vec::new();
    let mut edges = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let fields: Vec<i64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| {
                f.parse()
                    .unwrap_or_else(|_| panic!("{}:{}: not a number", path.display(), n + 1))
            })
            .collect();
        match line.split_whitespace().next() {
            Some("v") => {
                let (id, label) = (fields[0] as usize, fields[1]);
                if labels.len() <= id {
                    labels.resize(id + 1, 0);
                }
                labels[id] = label;
            }
            Some("e") => edges.push((fields[0], fields[1])),
            _ => {}
        }
    }
    Graph { labels, edges }
}

/// The `edges` and `labels` bags of a data graph.
fn catalog(graph: &Graph) -> Catalog {
    let n = graph.labels.len() as u64;
    let (src, dst): (Vec<i64>, Vec<i64>) = graph
        .edges
        .iter()
        .flat_map(|&(u, v)| [(u, v), (v, u)])
        .unzip();
    let rows = src.len();
    let edges = Tensor::from_coo(Coo {
        dims: vec![
            DimensionSpec::new("src", Some(n)),
            DimensionSpec::new("dst", Some(n)),
            DimensionSpec::new("label", Some(1)),
        ],
        coords: vec![src, dst, vec![0; rows]],
        values: Vec::new(),
        column_order: None,
    })
    .expect("the edges bag");
    let max_label = graph.labels.iter().copied().max().unwrap_or(0) as u64;
    let labels = Tensor::from_coo(Coo {
        dims: vec![
            DimensionSpec::new("vertex", Some(n)),
            DimensionSpec::new("label", Some(max_label + 1)),
        ],
        coords: vec![(0..n as i64).collect(), graph.labels.clone()],
        values: Vec::new(),
        column_order: None,
    })
    .expect("the labels bag");
    let mut catalog = Catalog::in_memory();
    catalog.put("edges", Arc::new(edges), false).expect("edges");
    catalog
        .put("labels", Arc::new(labels), false)
        .expect("labels");
    catalog
}

/// `t = SUM(v0,...) edges[u,v,0] * ... * labels[v0,L0] * ...;`
fn statement(query: &Graph) -> String {
    let vars: Vec<String> = (0..query.labels.len()).map(|v| format!("v{v}")).collect();
    let mut factors: Vec<String> = query
        .edges
        .iter()
        .map(|&(u, v)| format!("edges[v{u},v{v},0]"))
        .collect();
    factors.extend(
        query
            .labels
            .iter()
            .enumerate()
            .map(|(v, label)| format!("labels[v{v},{label}]")),
    );
    format!("t = SUM({}) {};", vars.join(","), factors.join(" * "))
}

fn count(catalog: &Catalog, query: &Graph) -> i64 {
    let program = einsql::einsum::compile(&statement(query), catalog).expect("the statement binds");
    let options = ExecOptions {
        threads: einsql::exec::default_threads(),
        memory_limit: 4 << 30,
    };
    let results = execute(&program, &options, &NoProgress).expect("the count runs");
    let column = results[0].1.annotation_columns()[0].clone();
    column
        .as_any()
        .downcast_ref::<Int64Array>()
        .map(|a| a.value(0))
        .expect("an integer count")
}

/// Runs every query file of `dir` accepted by `wanted` that has a
/// trustworthy truth; returns how many ran.
fn check(data: &Path, name: &str, dir: &str, wanted: impl Fn(&str) -> bool) -> usize {
    let root = data.join("subgraph").join(name);
    let catalog = catalog(&read_graph(&root.join(format!("{name}.graph"))));
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
        let Ok(truth) = std::fs::read_to_string(root.join("truth").join(file_name)) else {
            continue;
        };
        let truth: i64 = match truth.trim().parse() {
            // Counts near 2^63 overflowed in the original computation.
            Ok(t) if t < 9_000_000_000_000_000_000 => t,
            _ => continue,
        };
        let query = read_graph(&file);
        let begun = Instant::now();
        let got = count(&catalog, &query);
        assert_eq!(got, truth, "{name}/{dir}/{}", file.display());
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
