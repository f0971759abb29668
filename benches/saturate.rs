//! Planning overhead of the `saturate` phase (equality saturation).
//!
//! 1. Random linear-algebra programs of 1 to 15 operators (sums,
//!    differences, element-wise products, squares, negations, scalings,
//!    `exp`, matrix products `U Vᵀ`, sums over all entries or rows) over a
//!    sparse `X`, `Y` (`m × n` at 1e-3), a dense `D` and dense factors of
//!    rank `k`, plus the four programs of issue 22: each optimized with the
//!    default options, the fastest of [`RUNS`] runs counting. Prints the
//!    phase's time (median, 95th percentile, maximum) by operator count,
//!    the whole optimization with and without the phase, and how many
//!    programs it rewrote.
//! 2. The subgraph `queries-lite` sets of yeast and hprd (when the
//!    datasets folder is there): every query optimized with and without
//!    the phase, interleaved, the medians of both, and a check that the
//!    phase leaves every plan as it was (it skips sum-product joins).
//!
//! Run with `cargo bench --bench saturate`.

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "workload/subgraph.rs"]
mod subgraph;

use std::sync::Arc;
use std::time::Duration;

use common::Rng;
use einsql::Database;
use einsql::catalog::Catalog;
use einsql::io::graph::QueryGraph;
use einsql::ir::{Expr, Program};
use einsql::optimizer::{OptimizerOptions, Phase, PhaseSet, optimize};
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};
use subgraph::{load_data_file, to_einsum};

/// Timed optimizations per program (the fastest counts).
const RUNS: usize = 3;

/// Random programs per run.
const PROGRAMS: usize = 400;

fn matrix(rows: u64, cols: u64, density: f64, rng: &mut Rng) -> Arc<Tensor> {
    let mut coords = vec![Vec::new(), Vec::new()];
    let mut values = Vec::new();
    if density >= 1.0 {
        for r in 0..rows {
            for c in 0..cols {
                coords[0].push(r as i64);
                coords[1].push(c as i64);
                values.push(rng.below(1000) as f64 / 1000.0 + 0.001);
            }
        }
    } else {
        let nnz = (rows as f64 * cols as f64 * density) as usize;
        let mut seen = std::collections::HashSet::new();
        while seen.len() < nnz {
            let (r, c) = (rng.below(rows as usize), rng.below(cols as usize));
            if seen.insert((r, c)) {
                coords[0].push(r as i64);
                coords[1].push(c as i64);
                values.push(rng.below(1000) as f64 / 1000.0 + 0.001);
            }
        }
    }
    Arc::new(
        Tensor::from_coo(Coo {
            dims: vec![
                DimensionSpec::new("i", Some(rows)),
                DimensionSpec::new("j", Some(cols)),
            ],
            coords,
            values: vec![("v".to_string(), ValueData::Float64(values))],
            column_order: None,
        })
        .expect("a valid matrix"),
    )
}

fn catalog(m: u64, n: u64, k: u64) -> Catalog {
    let mut rng = Rng(0x5A70_BE4C);
    let mut catalog = Catalog::in_memory();
    let mut put = |name: &str, tensor: Arc<Tensor>| catalog.put(name, tensor, false).expect("new");
    put("X", matrix(m, n, 1e-3, &mut rng));
    put("Y", matrix(m, n, 1e-3, &mut rng));
    put("D", matrix(m, n, 1.0, &mut rng));
    put("U", matrix(m, k, 1.0, &mut rng));
    put("V", matrix(n, k, 1.0, &mut rng));
    put("W", matrix(m, k, 1.0, &mut rng));
    put("H", matrix(k, n, 1.0, &mut rng));
    put("P", matrix(m, 1, 1.0, &mut rng));
    put("S", matrix(n, 1, 1.0, &mut rng));
    catalog
}

/// A random `m × n` expression over `(i, j)` of about `budget` operators.
fn matrix_expr(rng: &mut Rng, budget: usize) -> String {
    if budget <= 1 {
        return match rng.below(6) {
            0 => "X[i,j]".into(),
            1 => "Y[i,j]".into(),
            2 => "D[i,j]".into(),
            3 => "(SUM(k) U[i,k] * V[j,k])".into(),
            4 => "P[i,0] * S[j,0]".into(),
            _ => "X[i,j]".into(),
        };
    }
    match rng.below(9) {
        0 | 1 => {
            let left = 1 + rng.below(budget - 1);
            format!(
                "({} + {})",
                matrix_expr(rng, left),
                matrix_expr(rng, budget - left)
            )
        }
        2 | 3 => {
            let left = 1 + rng.below(budget - 1);
            format!(
                "({} - {})",
                matrix_expr(rng, left),
                matrix_expr(rng, budget - left)
            )
        }
        4 | 5 => {
            let left = 1 + rng.below(budget - 1);
            format!(
                "({} * {})",
                matrix_expr(rng, left),
                matrix_expr(rng, budget - left)
            )
        }
        6 => format!("power({}, 2)", matrix_expr(rng, budget - 1)),
        7 => format!("-({})", matrix_expr(rng, budget - 1)),
        _ => format!("({} / 2.0)", matrix_expr(rng, budget - 1)),
    }
}

/// The number of operators (maps and aggregates) of `expr`.
fn operators(expr: &Expr) -> usize {
    match expr {
        Expr::Map { args, .. } => 1 + args.iter().map(operators).sum::<usize>(),
        Expr::Agg { body, .. } => 1 + operators(body),
        _ => 0,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// The fastest of [`RUNS`] optimizations: the whole time and the phase's.
fn timed(program: &Program, options: &OptimizerOptions) -> Option<(Duration, Duration, bool)> {
    let runs: Vec<_> = (0..RUNS)
        .filter_map(|_| optimize(program, options).ok())
        .collect();
    let fastest = runs.iter().min_by_key(|o| o.time)?;
    let phase = fastest
        .phases
        .iter()
        .find(|t| t.phase == Phase::Saturate)
        .map_or(Duration::ZERO, |t| t.time);
    Some((fastest.time, phase, !fastest.rewritten.is_empty()))
}

fn algebra() {
    let (m, n, k) = (2_000, 2_000, 50);
    let catalog = catalog(m, n, k);
    let mut rng = Rng(0x0022_2026);
    let mut texts: Vec<String> = vec![
        "loss[] = SUM(i,j) power(X[i,j] - SUM(k) U[i,k] * V[j,k], 2)".into(),
        "g[i,l] = SUM(j) ((SUM(k) U[i,k] * V[j,k]) - X[i,j]) * V[j,l]".into(),
        "s[] = SUM(i,j) SUM(k) W[i,k] * H[k,j]".into(),
        "q[i,j] = P[i,0] * X[i,j] - P[i,0] * (SUM(c) P[i,c]) * X[i,j]".into(),
    ];
    while texts.len() < PROGRAMS {
        let budget = 1 + rng.below(13);
        let body = matrix_expr(&mut rng, budget);
        texts.push(match rng.below(3) {
            0 => format!("r[] = SUM(i,j) {body}"),
            1 => format!("r[i] = SUM(j) ({body}) * S[j,0]"),
            _ => format!("r[i,j] = {body}"),
        });
    }
    let options = OptimizerOptions::default();
    let without = OptimizerOptions {
        disabled: PhaseSet::EMPTY.with(Phase::Saturate),
        ..OptimizerOptions::default()
    };
    // Warm up (the rules are built once per process).
    let first = einsql::einsum::compile(&format!("{};", texts[0]), &catalog).expect("compiles");
    let _ = optimize(&first, &options);
    let mut buckets: Vec<Vec<Duration>> = vec![Vec::new(); 3];
    let mut kept: Vec<Program> = Vec::new();
    let (mut all_on, mut all_off, mut phase_all) = (Vec::new(), Vec::new(), Vec::new());
    let mut rewritten = 0;
    let mut largest = 0;
    let (mut saturation, mut nodes) = (Vec::new(), Vec::new());
    for text in &texts {
        let Ok(program) = einsql::einsum::compile(&format!("{text};"), &catalog) else {
            continue;
        };
        let ops = operators(&program.queries[0].expr);
        if ops > 15 {
            continue;
        }
        largest = largest.max(ops);
        kept.push(program.clone());
        let (Some((on, phase, changed)), Some((off, _, _))) =
            (timed(&program, &options), timed(&program, &without))
        else {
            continue;
        };
        let normalized = einsql::optimizer::logical::normalize(&program);
        let expr = &normalized.queries[0].expr;
        if einsql::optimizer::saturate::worth_saturating(expr) {
            let alone = (0..RUNS)
                .map(|_| {
                    let begin = std::time::Instant::now();
                    let saturated = einsql::optimizer::saturate::saturate(
                        expr,
                        &Default::default(),
                        Default::default(),
                    );
                    let nodes = saturated
                        .as_ref()
                        .map_or(0, |s| s.egraph.total_number_of_nodes());
                    (begin.elapsed(), nodes)
                })
                .min()
                .unwrap_or_default();
            saturation.push(alone.0);
            nodes.push(alone.1);
        }
        buckets[(ops.max(1) - 1) / 5].push(phase);
        phase_all.push(phase);
        all_on.push(on);
        all_off.push(off);
        rewritten += usize::from(changed);
    }
    for list in buckets
        .iter_mut()
        .chain([&mut all_on, &mut all_off, &mut phase_all])
    {
        list.sort();
    }
    println!(
        "Random linear-algebra programs (X, Y {m} x {n} at 1e-3, rank {k}), {} programs of at most {largest} operators, {rewritten} rewritten",
        phase_all.len()
    );
    println!("| operators | programs | saturate median ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    for (b, list) in buckets.iter().enumerate() {
        println!(
            "| {}-{} | {} | {} | {} | {} |",
            5 * b + 1,
            5 * b + 5,
            list.len(),
            ms(percentile(list, 0.5)),
            ms(percentile(list, 0.95)),
            ms(list.last().copied().unwrap_or_default())
        );
    }
    println!(
        "| all | {} | {} | {} | {} |",
        phase_all.len(),
        ms(percentile(&phase_all, 0.5)),
        ms(percentile(&phase_all, 0.95)),
        ms(phase_all.last().copied().unwrap_or_default())
    );
    saturation.sort();
    nodes.sort();
    println!(
        "Saturation alone (no extraction, no costing), median {} ms, max {} ms; e-nodes median {}, max {}",
        ms(percentile(&saturation, 0.5)),
        ms(saturation.last().copied().unwrap_or_default()),
        nodes.get(nodes.len() / 2).copied().unwrap_or(0),
        nodes.last().copied().unwrap_or(0),
    );
    println!(
        "Whole optimization, median: {} ms with the phase, {} ms without (max {} / {} ms)",
        ms(percentile(&all_on, 0.5)),
        ms(percentile(&all_off, 0.5)),
        ms(all_on.last().copied().unwrap_or_default()),
        ms(all_off.last().copied().unwrap_or_default()),
    );
    limits(&kept);
}

/// The phase under other limits on the same programs: its time, how many
/// programs it rewrites, and the geometric mean of the estimated cost
/// after over before (what the limits trade).
fn limits(programs: &[Program]) {
    use einsql::optimizer::saturate::{Limits, saturate_program};
    let options = OptimizerOptions::default();
    let estimator = einsql::optimizer::ChainEstimator::default();
    let variants = [
        ("default", Limits::default()),
        (
            "first stage only",
            Limits {
                iterations: 0,
                ..Limits::default()
            },
        ),
        (
            "second stage 6 iterations, 2,000 nodes",
            Limits {
                iterations: 6,
                nodes: 2_000,
                ..Limits::default()
            },
        ),
        (
            "second stage 2 iterations, 600 nodes",
            Limits {
                iterations: 2,
                nodes: 600,
                ..Limits::default()
            },
        ),
        (
            "generous: 12 iterations, 20,000 nodes, 1 s",
            Limits {
                iterations: 12,
                nodes: 20_000,
                time: Duration::from_secs(1),
                ..Limits::default()
            },
        ),
    ];
    println!(
        "| limits | median ms | max ms | rewritten | estimated cost after / before, geometric mean |"
    );
    println!("|---|---|---|---|---|");
    for (name, limits) in variants {
        let (mut times, mut rewritten, mut log_ratio, mut costed) = (Vec::new(), 0, 0.0, 0);
        for program in programs {
            let program = einsql::optimizer::logical::normalize(program);
            let normalize = |q: &einsql::ir::Query| {
                einsql::optimizer::logical::normalize(&Program {
                    queries: vec![q.clone()],
                })
                .queries
                .remove(0)
            };
            let mut best = None;
            for _ in 0..2 {
                let mut copy = program.clone();
                let begin = std::time::Instant::now();
                let done = saturate_program(&mut copy, limits, &normalize, &mut |queries| {
                    einsql::optimizer::plan_cost(&estimator, queries, &options)
                });
                let took = begin.elapsed();
                if let Ok(done) = done {
                    best = Some((
                        took.min(best.map_or(took, |b: (Duration, _, _)| b.0)),
                        done.len(),
                        copy,
                    ));
                }
            }
            let Some((took, changed, after)) = best else {
                continue;
            };
            times.push(took);
            rewritten += usize::from(changed > 0);
            let before = einsql::optimizer::plan_cost(&estimator, &program.queries, &options);
            let now = einsql::optimizer::plan_cost(&estimator, &after.queries, &options);
            if let (Some(b), Some(a)) = (before, now)
                && b > 0.0
                && a > 0.0
            {
                log_ratio += (a / b).ln();
                costed += 1;
            }
        }
        times.sort();
        println!(
            "| {name} | {} | {} | {rewritten} | {:.3} |",
            ms(percentile(&times, 0.5)),
            ms(times.last().copied().unwrap_or_default()),
            (log_ratio / costed.max(1) as f64).exp()
        );
    }
}

fn subgraphs() {
    let Some(root) = common::datasets() else {
        println!("no datasets folder ($EINSQL_DATA or ../shared/datasets): subgraph sets skipped");
        return;
    };
    let options = OptimizerOptions::default();
    let without = OptimizerOptions {
        disabled: PhaseSet::EMPTY.with(Phase::Saturate),
        ..OptimizerOptions::default()
    };
    println!(
        "| dataset | lite queries | median ms with saturate | median ms without | saturate phase, median ms | max ms | plans changed |"
    );
    println!("|---|---|---|---|---|---|---|");
    for dataset in ["yeast", "hprd"] {
        let dir = root.join("subgraph").join(dataset);
        let db = Database::open_in_memory();
        if load_data_file(&db, dir.join(format!("{dataset}.graph"))).is_err() {
            continue;
        }
        let mut catalog = Catalog::in_memory();
        for name in db.table_names() {
            let table = db.table(&name).expect("loaded");
            catalog.put(&name, table, false).expect("new");
        }
        let mut files: Vec<_> = std::fs::read_dir(dir.join("queries-lite"))
            .map(|e| e.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        let (mut on, mut off, mut phase, mut changed) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for path in files {
            let Ok(graph) = QueryGraph::read(&path) else {
                continue;
            };
            let Ok(text) = to_einsum(&graph, "c") else {
                continue;
            };
            let Ok(program) = einsql::einsum::compile(&text, &catalog) else {
                continue;
            };
            // Both orders, so that neither pays for the reductions the
            // other cached.
            let (Some(a1), Some(b1), Some(b2), Some(a2)) = (
                timed(&program, &options),
                timed(&program, &without),
                timed(&program, &without),
                timed(&program, &options),
            ) else {
                continue;
            };
            on.push(a1.0.min(a2.0));
            off.push(b1.0.min(b2.0));
            phase.push(a1.1.min(a2.1));
            let with = optimize(&program, &options).expect("optimizes");
            let plain = optimize(&program, &without).expect("optimizes");
            changed += usize::from(with.logical.to_string() != plain.logical.to_string());
        }
        on.sort();
        off.sort();
        phase.sort();
        println!(
            "| {dataset} | {} | {} | {} | {} | {} | {changed} |",
            on.len(),
            ms(percentile(&on, 0.5)),
            ms(percentile(&off, 0.5)),
            ms(percentile(&phase, 0.5)),
            ms(phase.last().copied().unwrap_or_default()),
        );
    }
}

fn main() {
    algebra();
    subgraphs();
}
