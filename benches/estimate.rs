//! Chain-bound estimation time on the largest yeast query graphs (16, 24
//! and 32 query vertices, dense and sparse): the statistics of the labelled
//! join (one `edges` factor per query edge, one `labels[v, label]` factor
//! per query vertex) and its bound, which is what the optimizer asks for the
//! biggest sub-expression of a subgraph query. Before timing, it prints per
//! group how many lattice searches finished within the budget and how many
//! sets they expanded. Needs the datasets folder (`$EINSQL_DATA` or
//! `../shared/datasets`); without it there is nothing to time.

#[path = "../tests/estimate/graph.rs"]
mod graph;

use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use einsql::ir::Expr;
use einsql::optimizer::{Aliases, ChainEstimator, SparsityEstimator, UniformEstimator, estimate_expr};

/// Queries timed per group.
const QUERIES: usize = 20;

fn datasets() -> Option<PathBuf> {
    let path = std::env::var_os("EINSQL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"));
    path.is_dir().then_some(path)
}

/// The first `QUERIES` query graphs `query_{kind}_{size}_N.graph`.
fn queries(dir: &Path, kind: &str, size: usize) -> Vec<graph::Graph> {
    (1..=QUERIES)
        .filter_map(|n| {
            let path = dir.join(format!("queries/query_{kind}_{size}_{n}.graph"));
            graph::read(&path).ok()
        })
        .collect()
}

fn chain_bounds(c: &mut Criterion) {
    let Some(data) = datasets() else {
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
            let (mut exact, mut expanded, mut ratio) = (0, Vec::new(), Vec::new());
            for join in &joins {
                let Ok(stats) = estimate_expr(&chain, join, &aliases) else {
                    continue;
                };
                let free: Vec<&str> = stats.free_indices().collect();
                let search = stats.bound_on(&free, chain.budget);
                exact += usize::from(search.exact);
                expanded.push(search.expanded);
                if let Ok(u) = estimate_expr(&UniformEstimator, join, &aliases) {
                    ratio.push(search.value() / UniformEstimator.estimate(&u).max(1.0));
                }
            }
            expanded.sort_unstable();
            ratio.sort_by(f64::total_cmp);
            eprintln!(
                "{kind}_{size}: {exact}/{} searches exact; sets expanded median {}, max {}; \
                 chain/uniform median {:.3e}",
                joins.len(),
                expanded.get(expanded.len() / 2).copied().unwrap_or(0),
                expanded.last().copied().unwrap_or(0),
                ratio.get(ratio.len() / 2).copied().unwrap_or(f64::NAN),
            );
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
