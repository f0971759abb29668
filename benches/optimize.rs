//! Optimization time on the subgraph query sets of yeast and hprd: every
//! `queries-lite` query and the first [`PER_GROUP`] queries of each group
//! of `queries/` up to 16 vertices, optimized (logical and physical plan)
//! with each estimator and each search (and the default without the
//! semijoin reduction), timed cold (the semijoin reductions cached with the
//! tensors dropped first) and then as the fastest of [`RUNS`] runs. Prints
//! per dataset, set and configuration the median (warm and cold), 95th
//! percentile and maximum time, the median time in the reductions, and the
//! plan-quality gap (estimated cost of the greedy plan over the exact
//! one), then times a few queries with criterion. Needs the datasets folder
//! (`$EINSQL_DATA` or `../shared/datasets`); without it there is nothing to
//! time.

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "workload/subgraph.rs"]
mod subgraph;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use einsql::Database;
use einsql::catalog::Catalog;
use einsql::io::graph::QueryGraph;
use einsql::ir::Program;
use einsql::optimizer::{EstimatorKind, OptimizerOptions, Phase, PhaseSet, Search, optimize};
use einsql::storage::Tensor;
use subgraph::{load_data_file, to_einsum};

/// Timed optimizations per query (the fastest counts).
const RUNS: usize = 3;

/// Queries taken from each group `query_{dense,sparse}_{n}` of `queries/`.
const PER_GROUP: usize = 50;

/// The programs of the query files in `files`, over `catalog`.
fn programs(files: &[PathBuf], catalog: &Catalog) -> Vec<(String, usize, Program)> {
    files
        .iter()
        .filter_map(|path| {
            let graph = QueryGraph::read(path).ok()?;
            let text = to_einsum(&graph, "c").ok()?;
            let program = einsql::einsum::compile(&text, catalog).ok()?;
            let name = path.file_name()?.to_string_lossy().into_owned();
            Some((name, graph.vertices.len(), program))
        })
        .collect()
}

/// The query files of one set: `queries-lite/`, or the first `PER_GROUP`
/// of every group of `queries/` with at most 16 vertices.
fn files(dir: &Path, lite: bool) -> Vec<PathBuf> {
    if lite {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("queries-lite"))
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        return files;
    }
    let mut files = Vec::new();
    for kind in ["dense", "sparse"] {
        for size in [4, 8, 16] {
            for n in 1..=PER_GROUP {
                let path = dir.join(format!("queries/query_{kind}_{size}_{n}.graph"));
                if path.is_file() {
                    files.push(path);
                }
            }
        }
    }
    files
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let k = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[k.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// The configurations timed: estimator, search, semijoin reduction.
const CONFIGURATIONS: [(EstimatorKind, Search, bool); 5] = [
    (EstimatorKind::Chain, Search::Exact, true),
    (EstimatorKind::Chain, Search::Greedy, true),
    (EstimatorKind::Chain, Search::Exact, false),
    (EstimatorKind::Uniform, Search::Exact, true),
    (EstimatorKind::Uniform, Search::Greedy, true),
];

fn report(
    dataset: &str,
    set: &str,
    programs: &[(String, usize, Program)],
    tensors: &[Arc<Tensor>],
) {
    let mut exact_costs = Vec::new();
    for (estimator, search, semijoin) in CONFIGURATIONS {
        let options = OptimizerOptions {
            estimator,
            search,
            disabled: if semijoin {
                PhaseSet::EMPTY
            } else {
                PhaseSet::EMPTY.with(Phase::Semijoin)
            },
            ..OptimizerOptions::default()
        };
        let mut times = Vec::new();
        let mut cold_times = Vec::new();
        let mut reduce_times = Vec::new();
        let mut costs = Vec::new();
        for (_, _, program) in programs {
            // Cold: the reductions cached with the tensors dropped first.
            // Then the fastest of `RUNS` timed runs: the machine's noise
            // only ever adds time.
            tensors.iter().for_each(|t| t.clear_derived());
            if let Ok(cold) = optimize(program, &options) {
                cold_times.push(cold.time);
            }
            let runs: Vec<_> = (0..RUNS)
                .filter_map(|_| optimize(program, &options).ok())
                .collect();
            if let Some(fastest) = runs.iter().min_by_key(|o| o.time) {
                times.push(fastest.time);
                reduce_times.push(fastest.reduce_time);
                costs.push(fastest.cost);
            }
        }
        times.sort();
        cold_times.sort();
        reduce_times.sort();
        let gap = match (search, semijoin) {
            (Search::Exact, true) => {
                exact_costs = costs.clone();
                String::from("-")
            }
            (Search::Greedy, _) => {
                let mut ratios: Vec<f64> = costs
                    .iter()
                    .zip(&exact_costs)
                    .filter(|(g, e)| g.is_finite() && e.is_finite() && **e > 0.0)
                    .map(|(g, e)| g / e)
                    .collect();
                ratios.sort_by(f64::total_cmp);
                let worse = ratios.iter().filter(|r| **r > 1.0 + 1e-9).count();
                format!(
                    "{worse} of {} worse, max {:.2}x",
                    ratios.len(),
                    ratios.last().copied().unwrap_or(1.0)
                )
            }
            _ => String::from("-"),
        };
        println!(
            "| {dataset} | {set} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {gap} |",
            estimator.name(),
            search.name(),
            if semijoin { "on" } else { "off" },
            times.len(),
            ms(percentile(&times, 0.5)),
            ms(percentile(&cold_times, 0.5)),
            ms(percentile(&times, 0.95)),
            ms(times.last().copied().unwrap_or_default()),
            ms(percentile(&reduce_times, 0.5)),
        );
    }
}

fn bench(c: &mut Criterion) {
    let Some(root) = common::datasets() else {
        eprintln!("no datasets folder ($EINSQL_DATA or ../shared/datasets): nothing to time");
        return;
    };
    println!(
        "| dataset | set | estimator | search | semijoin | queries | median ms | cold median ms | p95 ms | max ms | of which reductions, median ms | greedy vs exact (estimated cost) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut samples = Vec::new();
    for dataset in ["yeast", "hprd"] {
        let dir = root.join("subgraph").join(dataset);
        let db = Database::open_in_memory();
        if load_data_file(&db, dir.join(format!("{dataset}.graph"))).is_err() {
            eprintln!("cannot load {dataset}: skipped");
            continue;
        }
        let mut catalog = Catalog::in_memory();
        let mut tensors = Vec::new();
        for name in db.table_names() {
            if let Ok(tensor) = db.table(&name) {
                let _ = catalog.put(&name, Arc::clone(&tensor), true);
                tensors.push(tensor);
            }
        }
        for (set, lite) in [("queries-lite", true), ("queries <= 16", false)] {
            let programs = programs(&files(&dir, lite), &catalog);
            report(dataset, set, &programs, &tensors);
            if let Some(largest) = programs.iter().max_by_key(|(_, n, _)| *n) {
                samples.push((format!("{dataset}/{}", largest.0), largest.2.clone()));
            }
        }
    }
    let mut group = c.benchmark_group("optimize");
    for (name, program) in &samples {
        group.bench_function(name.as_str(), |b| {
            b.iter(|| optimize(program, &OptimizerOptions::default()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
