//! Chain-bound estimation time on the largest yeast query graphs (16, 24
//! and 32 query vertices, dense and sparse): the statistics of the labelled
//! join (one `edges` factor per query edge, one `labels[v, label]` factor
//! per query vertex) and its bound, which is what the optimizer asks for the
//! biggest sub-expression of a subgraph query. Before timing, it prints per
//! group and per search budget how many lattice searches were exact, their
//! median time and how much looser than the best bound the budget leaves. Needs the datasets folder (`$EINSQL_DATA` or
//! `../shared/datasets`); without it there is nothing to time.

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/estimate/graph.rs"]
mod graph;

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use einsql::ir::Expr;
use einsql::optimizer::lattice::PathBound;
use einsql::optimizer::{
    Aliases, ChainEstimator, ChainStats, SparsityEstimator, UniformEstimator, estimate_expr,
};

/// Queries timed per group.
const QUERIES: usize = 20;

/// The first `QUERIES` query graphs `query_{kind}_{size}_N.graph`.
fn queries(dir: &Path, kind: &str, size: usize) -> Vec<graph::Graph> {
    (1..=QUERIES)
        .filter_map(|n| {
            let path = dir.join(format!("queries/query_{kind}_{size}_{n}.graph"));
            graph::read(&path).ok()
        })
        .collect()
}

/// Budgets compared in the printed summary.
const BUDGETS: [usize; 5] = [64, 256, 1024, 4096, 32768];

/// Prints, per search budget, how many of the searches for `joins` were
/// exact, the median time of one search, and how far (in bits, log₂ of
/// the ratio) the median and worst bound lie above the best bound found
/// with any budget; and the median ratio of chain bound to uniform estimate.
fn report(group: &str, joins: &[Expr]) {
    let mut fold_times = Vec::new();
    let stats: Vec<ChainStats> = joins
        .iter()
        .filter_map(|j| {
            let start = Instant::now();
            let stats = estimate_expr(&ChainEstimator::default(), j, &Aliases::new()).ok();
            fold_times.push(start.elapsed().as_secs_f64() * 1e6);
            stats
        })
        .collect();
    let searches: Vec<Vec<(PathBound, f64)>> = BUDGETS
        .iter()
        .map(|&budget| {
            stats
                .iter()
                .map(|s| {
                    let free: Vec<&str> = s.free_indices().collect();
                    let start = Instant::now();
                    let bound = s.bound_on(&free, budget);
                    (bound, start.elapsed().as_secs_f64())
                })
                .collect()
        })
        .collect();
    let best: Vec<f64> = (0..stats.len())
        .map(|q| {
            searches
                .iter()
                .map(|s| s[q].0.log2)
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    eprintln!(
        "{group}: statistics of the join (leaves, join) median {:.1} µs",
        median(fold_times)
    );
    for (budget, found) in BUDGETS.iter().zip(&searches) {
        let gaps: Vec<f64> = found.iter().zip(&best).map(|(f, b)| f.0.log2 - b).collect();
        let worst = gaps.iter().copied().fold(0.0, f64::max);
        let micros: Vec<f64> = found.iter().map(|f| f.1 * 1e6).collect();
        eprintln!(
            "{group} budget {budget:>5}: {:>2}/{} exact, search median {:>8.1} µs, mean {:>8.1} µs, \
             gap to best median {:.2} bits, max {:.2} bits",
            found.iter().filter(|f| f.0.exact).count(),
            found.len(),
            median(micros.clone()),
            micros.iter().sum::<f64>() / micros.len().max(1) as f64,
            median(gaps),
            worst,
        );
    }
    let ratios: Vec<f64> = joins
        .iter()
        .zip(&best)
        .filter_map(|(j, b)| {
            let u = estimate_expr(&UniformEstimator, j, &Aliases::new()).ok()?;
            Some(b - UniformEstimator.estimate(&u).max(1.0).log2())
        })
        .collect();
    eprintln!(
        "{group}: chain bound over uniform estimate, median {:.1} bits",
        median(ratios)
    );
}

fn chain_bounds(c: &mut Criterion) {
    let Some(data) = common::datasets() else {
        eprintln!("skipping: no datasets folder (set EINSQL_DATA)");
        return;
    };
    let dir = data.join("subgraph/yeast");
    let yeast = match graph::read(&dir.join("yeast.graph")) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let Ok(tensors) = graph::DataGraph::new(&yeast) else {
        eprintln!("skipping: the yeast graph does not load as tensors");
        return;
    };
    let chain = ChainEstimator::default();
    let aliases = Aliases::new();
    let mut group = c.benchmark_group("chain_bound");
    for size in [16, 24, 32] {
        for kind in ["dense", "sparse"] {
            let joins: Vec<Expr> = queries(&dir, kind, size)
                .iter()
                .map(|q| tensors.join(q, true))
                .collect();
            if joins.is_empty() {
                continue;
            }
            report(&format!("{kind}_{size}"), &joins);
            group.bench_with_input(
                BenchmarkId::new(kind, size),
                &joins,
                |b, joins: &Vec<Expr>| {
                    b.iter(|| {
                        joins
                            .iter()
                            .filter_map(|j| estimate_expr(&chain, j, &aliases).ok())
                            .map(|s| chain.estimate(&s))
                            .sum::<f64>()
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, chain_bounds);
criterion_main!(benches);
