//! The `saturate` phase (equality saturation, SPORES): declarative rule
//! tests `start => goal` in tensor index notation (the rules must prove
//! the two equal), the phase's choices on the four programs of issue 22
//! (the squared loss, ALS, PNMF and MLR) and on SPORES' figure 14
//! examples, and that what it rewrites computes what the reference
//! evaluator computes.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::Rng;
use einsql::catalog::Catalog;
use einsql::einsum;
use einsql::ir::{Expr, Program};
use einsql::optimizer::saturate::{Limits, proves};
use einsql::optimizer::{OptimizerOptions, Phase, PhaseSet, optimize};
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};

/// A `rows × cols` matrix of floats with about `density` of its cells
/// stored (every cell when 1), dimensions named `i` and `j`.
fn matrix(rows: u64, cols: u64, density: f64, rng: &mut Rng) -> Arc<Tensor> {
    let mut coords = vec![Vec::new(), Vec::new()];
    let mut values = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            if density >= 1.0 || (rng.below(1_000_000) as f64) < density * 1e6 {
                coords[0].push(r as i64);
                coords[1].push(c as i64);
                values.push((rng.below(17) as f64 - 8.0) / 4.0 + 0.125);
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

/// A vector of `n` floats, every cell stored.
fn vector(n: u64, rng: &mut Rng) -> Arc<Tensor> {
    let values = (0..n).map(|_| (rng.below(9) as f64 + 1.0) / 10.0).collect();
    Arc::new(
        Tensor::from_coo(Coo {
            dims: vec![DimensionSpec::new("i", Some(n))],
            coords: vec![(0..n as i64).collect()],
            values: vec![("v".to_string(), ValueData::Float64(values))],
            column_order: None,
        })
        .expect("a valid vector"),
    )
}

/// The tables of the tests: `X` (`m × n`, sparse), `D` (`m × n`, dense),
/// `U` (`m × k`), `V` (`n × k`), `W` (`m × k`), `H` (`k × n`), `P`, `r`
/// (`m`), `c` (`n`), `A`, `B`, `Z` (`m × m`, dense), `Y` (`m × n`,
/// sparse), `P1` (`m × 1`).
fn catalog(m: u64, n: u64, k: u64, density: f64) -> Catalog {
    let mut rng = Rng(0x5A70_2026_0022);
    let mut catalog = Catalog::in_memory();
    let mut put = |name: &str, tensor: Arc<Tensor>| {
        catalog.put(name, tensor, false).expect("a new table");
    };
    put("X", matrix(m, n, density, &mut rng));
    put("Y", matrix(m, n, density, &mut rng));
    put("D", matrix(m, n, 1.0, &mut rng));
    put("U", matrix(m, k, 1.0, &mut rng));
    put("V", matrix(n, k, 1.0, &mut rng));
    put("W", matrix(m, k, 1.0, &mut rng));
    put("H", matrix(k, n, 1.0, &mut rng));
    put("A", matrix(m, m, 1.0, &mut rng));
    put("B", matrix(m, m, 1.0, &mut rng));
    put("Z", matrix(m, m, 1.0, &mut rng));
    put("P", vector(m, &mut rng));
    put("r", vector(m, &mut rng));
    put("s", vector(n, &mut rng));
    put("P1", matrix(m, 1, 1.0, &mut rng));
    catalog
}

fn compile(text: &str, catalog: &Catalog) -> Program {
    einsum::compile(text, catalog).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The expression `text`, whose free indices are those written in
/// brackets and never aggregated (so every case below binds each index
/// name once).
fn expr(text: &str, catalog: &Catalog) -> Expr {
    let mut free: Vec<String> = Vec::new();
    let mut bound: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['[', '(']) {
        let close = rest[open..]
            .find([']', ')'])
            .map_or(rest.len(), |c| open + c);
        let inside = &rest[open + 1..close];
        let names = inside
            .split(',')
            .map(str::trim)
            .filter(|n| n.starts_with(|c: char| c.is_ascii_alphabetic()))
            .map(str::to_string);
        if rest[..open].ends_with("SUM") {
            bound.extend(names);
        } else if rest.as_bytes()[open] == b'[' {
            free.extend(names);
        }
        rest = &rest[open + 1..];
    }
    let mut outputs: Vec<String> = Vec::new();
    for name in free {
        if !bound.contains(&name) && !outputs.contains(&name) {
            outputs.push(name);
        }
    }
    let head = if outputs.is_empty() {
        "out".to_string()
    } else {
        format!("out[{}]", outputs.join(","))
    };
    compile(&format!("{head} = {text};"), catalog)
        .queries
        .remove(0)
        .expr
}

/// The limits of the rule tests: enough for every proof below (the
/// phase itself runs with tighter ones).
fn generous() -> Limits {
    Limits {
        expand_iterations: 40,
        iterations: 40,
        nodes: 60_000,
        time: Duration::from_secs(20),
        matches: 2_000,
    }
}

/// `start => goal` pairs in tensor index notation that the rules must
/// prove equal: SPORES' R_EQ one rule at a time, the examples of its
/// figures (the introduction's loss, figure 6's canonical form, the
/// SystemML rewrites of figure 14 that are sum-product rewrites) and the
/// four programs of issue 22. Over `X`, `Y` sparse `m × n`; `D` dense
/// `m × n`; `U` `m × k`, `V` `n × k`, `W` `m × k`, `H` `k × n`, `A`, `B`,
/// `Z` `m × m`; vectors `P`, `r` (`m`), `s` (`n`); `P1` an `m × 1` column
/// (m = 20, n = 15, k = 3). A fresh index is named as the rules name it:
/// the renamed `k` of a squared sum is `k_2`.
const RULE_CASES: &[(&str, &str, &str)] = &[
    // R_EQ 1: distributivity, both ways.
    (
        "distribute",
        "X[i,j] * (Y[i,j] + D[i,j])",
        "X[i,j] * Y[i,j] + X[i,j] * D[i,j]",
    ),
    (
        "factor",
        "X[i,j] * Y[i,j] + X[i,j] * D[i,j]",
        "X[i,j] * (Y[i,j] + D[i,j])",
    ),
    // R_EQ 2: a sum of terms splits, and sums merge.
    (
        "split a sum",
        "SUM(i,j) X[i,j] + D[i,j]",
        "(SUM(i,j) X[i,j]) + SUM(i,j) D[i,j]",
    ),
    (
        "merge sums",
        "(SUM(j) X[i,j]) + SUM(j) Y[i,j]",
        "SUM(j) X[i,j] + Y[i,j]",
    ),
    // R_EQ 3: a factor without the index moves in and out of a sum.
    (
        "pull a factor out",
        "SUM(j) r[i] * X[i,j]",
        "r[i] * SUM(j) X[i,j]",
    ),
    (
        "push a factor in",
        "P[i] * SUM(j) X[i,j] * s[j]",
        "SUM(j) P[i] * X[i,j] * s[j]",
    ),
    // R_EQ 4: nested sums are one sum, in any order.
    ("nested sums", "SUM(i) SUM(j) X[i,j]", "SUM(j,i) X[i,j]"),
    // R_EQ 5: a sum over an index the body lacks multiplies it.
    (
        "sum of a constant",
        "SUM(i,j) P[i] + s[j]",
        "15 * (SUM(i) P[i]) + 20 * SUM(j) s[j]",
    ),
    // R_EQ 6 and 7: associativity and commutativity.
    (
        "associate and commute",
        "(X[i,j] * Y[i,j]) * D[i,j]",
        "D[i,j] * (Y[i,j] * X[i,j])",
    ),
    (
        "associate and commute +",
        "(X[i,j] + Y[i,j]) + D[i,j]",
        "Y[i,j] + (D[i,j] + X[i,j])",
    ),
    // SPORES' introduction (and figure 6): the rank-1 loss.
    (
        "rank-1 loss",
        "SUM(i,j) power(X[i,j] - P[i] * s[j], 2)",
        "(SUM(i,j) X[i,j] * X[i,j]) - 2 * (SUM(i,j) P[i] * X[i,j] * s[j]) + (SUM(i) P[i] * P[i]) * SUM(j) s[j] * s[j]",
    ),
    // Issue 22: the squared loss of a sparse X against U Vᵀ.
    (
        "squared loss",
        "SUM(i,j) power(X[i,j] - SUM(k) U[i,k] * V[j,k], 2)",
        "(SUM(i,j) X[i,j] * X[i,j]) - 2 * (SUM(i,j,k) X[i,j] * U[i,k] * V[j,k]) + SUM(k,k_2) (SUM(i) U[i,k] * U[i,k_2]) * (SUM(j) V[j,k] * V[j,k_2])",
    ),
    // Issue 22: ALS, (U Vᵀ − X) V into U (Vᵀ V) − X V.
    (
        "ALS",
        "SUM(j) ((SUM(k) U[i,k] * V[j,k]) - X[i,j]) * V[j,l]",
        "(SUM(k) U[i,k] * SUM(j) V[j,k] * V[j,l]) - SUM(j) X[i,j] * V[j,l]",
    ),
    // Issue 22 and figure 14 (SumMatrixMult): PNMF, sum(W H) into
    // colSums(W) · rowSums(H).
    (
        "PNMF",
        "SUM(i,j) SUM(k) W[i,k] * H[k,j]",
        "SUM(k) (SUM(i) W[i,k]) * SUM(j) H[k,j]",
    ),
    // Issue 22: MLR, factoring P out with rowSums(P) = P for a column P.
    (
        "MLR",
        "P1[i,0] * X[i,j] - P1[i,0] * (SUM(c) P1[i,c]) * X[i,j]",
        "P1[i,0] * (1 - P1[i,0]) * X[i,j]",
    ),
    (
        "MLR over a vector",
        "P[i] * X[i,j] - P[i] * P[i] * X[i,j]",
        "P[i] * (1 - P[i]) * X[i,j]",
    ),
    // Figure 14: UnnecessaryOuterProduct, X * (Y 1ᵀ) for a column Y.
    (
        "unnecessary outer product",
        "X[i,j] * SUM(c) P1[i,c]",
        "X[i,j] * P1[i,0]",
    ),
    // Figure 14: ColSumsMVMult, colSums(X * y) = yᵀ X for a column y.
    (
        "colSums of a scaled matrix",
        "SUM(i) X[i,j] * P[i]",
        "SUM(i) P[i] * X[i,j]",
    ),
    // Figure 14: pushdownSumOnAdd.
    (
        "sum of a sum",
        "SUM(i,j) D[i,j] + Y[i,j]",
        "(SUM(i,j) Y[i,j]) + SUM(i,j) D[i,j]",
    ),
    // Figure 14: DotProductSum, sum(v²) = vᵀ v.
    ("dot product", "SUM(i) power(P[i], 2)", "SUM(i) P[i] * P[i]"),
    // Figure 14: reorderMinusMatrixMult, (−Xᵀ) y = −(Xᵀ y).
    (
        "minus out of a product",
        "SUM(i) -X[i,j] * P[i]",
        "-SUM(i) X[i,j] * P[i]",
    ),
    // Figure 14: UnnecessaryBinaryOperation, X * 1 = X.
    ("times one", "X[i,j] * 1.0", "X[i,j]"),
    // Figure 14: BinaryToUnaryOperation, X * X = X², X + X = 2X.
    ("square", "X[i,j] * X[i,j]", "power(X[i,j], 2)"),
    ("twice", "X[i,j] + X[i,j]", "2 * X[i,j]"),
    // Figure 14: MatrixMultScalarAdd, eps + U Vᵀ = U Vᵀ + eps.
    (
        "scalar added",
        "0.5 + SUM(k) U[i,k] * V[j,k]",
        "(SUM(k) U[i,k] * V[j,k]) + 0.5",
    ),
    // Figure 14: DistributiveBinaryOperation, X − Y * X = (1 − Y) * X.
    (
        "distributive",
        "X[i,j] - Y[i,j] * X[i,j]",
        "(1 - Y[i,j]) * X[i,j]",
    ),
    // Figure 14: BushyBinaryOperation, X * (Y * (Z v)) = (X * Y) * (Z v).
    (
        "bushy product",
        "X[i,j] * (Y[i,j] * SUM(l) A[i,l] * P[l])",
        "(X[i,j] * Y[i,j]) * SUM(l) A[i,l] * P[l]",
    ),
    // Figure 14: UnaryAggReorgOperation, sum(Xᵀ) = sum(X).
    ("sum of a transpose", "SUM(j,i) X[i,j]", "SUM(i,j) X[i,j]"),
    // Figure 14: UnnecessaryAggregates, sum(rowSums(X)) = sum(X).
    ("sum of row sums", "SUM(i) SUM(j) D[i,j]", "SUM(i,j) D[i,j]"),
    // Figure 14: pushdownSumBinaryMult, sum(λ X) = λ sum(X).
    (
        "scalar out of a sum",
        "SUM(i,j) 2.5 * X[i,j]",
        "2.5 * SUM(i,j) X[i,j]",
    ),
    // Figure 14: UnnecessaryMinus, −(−X) = X.
    ("minus minus", "-(-X[i,j])", "X[i,j]"),
    // Figure 14: TransposeAggBinBinaryChains, (Aᵀ Bᵀ + Z)ᵀ = B A + Zᵀ.
    (
        "transposed chain",
        "(SUM(k) A[k,j] * B[i,k]) + Z[j,i]",
        "Z[j,i] + SUM(k) B[i,k] * A[k,j]",
    ),
    // Through pointwise maps: exp maps + to *, division by a constant,
    // constant folding.
    (
        "exp of a sum",
        "SUM(i,j) exp(P[i] + s[j])",
        "(SUM(i) exp(P[i])) * SUM(j) exp(s[j])",
    ),
    ("divide by a constant", "X[i,j] / 4.0", "0.25 * X[i,j]"),
    ("fold constants", "(2 + 3) * X[i,j]", "5 * X[i,j]"),
];

/// Equalities the rules must not prove (they do not hold).
const WRONG: &[(&str, &str)] = &[
    ("SUM(i) P[i] * P[i]", "(SUM(i) P[i]) * SUM(i) P[i]"),
    ("SUM(j) X[i,j] * X[i,j]", "power(SUM(j) X[i,j], 2)"),
    (
        "SUM(i,j) X[i,j] * D[i,j]",
        "(SUM(i,j) X[i,j]) * SUM(i,j) D[i,j]",
    ),
    ("exp(P[i] * r[i])", "exp(P[i]) * exp(r[i])"),
];

#[test]
fn rules_prove_every_start_goal_pair() {
    let catalog = catalog(20, 15, 3, 0.2);
    assert!(RULE_CASES.len() >= 25);
    let mut failed = Vec::new();
    for (name, start, goal) in RULE_CASES {
        let (start, goal) = (expr(start, &catalog), expr(goal, &catalog));
        let begin = std::time::Instant::now();
        let proved = proves(&start, &goal, generous());
        eprintln!("{name}: {proved:?} in {:?}", begin.elapsed());
        if proved != Some(true) {
            failed.push(format!("{name}: {start}  =>  {goal}"));
        }
    }
    assert!(failed.is_empty(), "not proved:\n{}", failed.join("\n"));
    for (start, goal) in WRONG {
        let limits = Limits {
            iterations: 12,
            nodes: 20_000,
            ..generous()
        };
        let proved = proves(&expr(start, &catalog), &expr(goal, &catalog), limits);
        assert_eq!(proved, Some(false), "{start} = {goal} proved");
    }
}

/// The four programs of issue 22 with `X` sparse (200 × 150 at 1%) and
/// dense factors of rank 5: the squared loss and ALS are rewritten (into
/// sums of sum-products, no dense `U Vᵀ` step left), PNMF is left to
/// variable elimination (no sum of terms: it already sums `W`'s columns
/// and `H`'s rows apart), MLR stays as written unless its factored form is
/// estimated cheaper; all four compute the reference evaluator's results,
/// with the phase and without it.
#[test]
fn the_four_programs_of_issue_22() {
    let catalog = catalog(200, 150, 5, 0.01);
    let dense = 200.0 * 150.0;
    let without = OptimizerOptions {
        disabled: PhaseSet::EMPTY.with(Phase::Saturate),
        ..OptimizerOptions::default()
    };
    for (text, rewritten) in [
        (
            "loss[] = SUM(i,j) power(X[i,j] - SUM(k) U[i,k] * V[j,k], 2)",
            Some(true),
        ),
        (
            "G[i,l] = SUM(j) ((SUM(k) U[i,k] * V[j,k]) - X[i,j]) * V[j,l]",
            Some(true),
        ),
        ("s[] = SUM(i,j) SUM(k) W[i,k] * H[k,j]", Some(false)),
        ("M[i,j] = P[i] * X[i,j] - P[i] * P[i] * X[i,j]", None),
    ] {
        let program = compile(text, &catalog);
        let expected = einsql::reference::evaluate(&program).expect("the reference evaluates");
        let optimized = optimize(&program, &OptimizerOptions::default()).expect("optimizes");
        let plain = optimize(&program, &without).expect("optimizes");
        if let Some(rewritten) = rewritten {
            assert_eq!(!optimized.rewritten.is_empty(), rewritten, "{text}");
        }
        if rewritten == Some(true) {
            let after = optimized.rewritten[0].after.to_string();
            assert!(!after.contains("power"), "{after}");
            // No step or query of the plan is estimated near m·n entries.
            for (query, estimate) in optimized.logical.queries.iter().zip(&optimized.estimates) {
                assert!(*estimate < dense / 10.0, "{query}: {estimate}");
            }
        }
        if text.starts_with("loss") {
            let after = optimized.rewritten[0].after.to_string();
            assert!(after.contains("- 2 * SUM"), "{after}");
        }
        for plan in [&optimized, &plain] {
            let actual = einsql::exec::run(
                &plan.plan,
                &einsql::exec::ExecOptions {
                    threads: 1,
                    memory_limit: 1 << 30,
                },
                &einsql::progress::NoProgress,
            )
            .expect("runs");
            for ((name, e), (_, a)) in expected.iter().zip(&actual) {
                let (e, a) = (values(e), values(a));
                assert_eq!(e.len(), a.len(), "{name}");
                for (x, y) in e.iter().zip(&a) {
                    assert!(
                        (x - y).abs() <= 1e-9 * (1.0 + x.abs()),
                        "{name}: {x} vs {y}"
                    );
                }
            }
        }
    }
}

/// The values of a result's column, in stored order.
fn values(tensor: &Tensor) -> Vec<f64> {
    let column = &tensor.annotation_columns()[0];
    let floats = column
        .as_any()
        .downcast_ref::<arrow::array::Float64Array>()
        .expect("a float result");
    floats.values().to_vec()
}
