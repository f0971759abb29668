//! The sparsity estimators against the reference evaluator: the chain bound
//! is never below the true number of non-zeros of any sub-expression, the
//! uniform estimate is finite and positive where there are entries, and
//! golden bounds computed by hand (triangle, matrix chain, star), plus the
//! yeast graph and its query set's true counts.

mod common;
#[path = "estimate/graph.rs"]
mod graph;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, BooleanArray, Float64Array, Int64Array};
use einsql::ir::{AggOp, Annotation, Expr, IndexTerm, Input, Program, Query, ScalarOp, TensorRef};
use einsql::optimizer::{
    Aliases, ChainEstimator, SparsityEstimator, UniformEstimator, estimate_nnz,
};
use einsql::reference;
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};
use proptest::prelude::*;

use graph::{DataGraph, Graph};

/// The non-zero entries of `expr` over its free indices, by the reference
/// evaluator.
fn true_nnz(expr: &Expr) -> u64 {
    let query = Query {
        name: "r".to_string(),
        indices: expr.free_indices(),
        expr: expr.clone(),
    };
    let results = reference::evaluate(&Program {
        queries: vec![query],
    })
    .expect("the reference evaluator runs the test expression");
    let column = results[0].1.annotation_columns()[0].clone();
    let any = column.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        a.values().iter().filter(|&&v| v != 0).count() as u64
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        a.values().iter().filter(|&&v| v != 0.0).count() as u64
    } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
        a.values().count_set_bits() as u64
    } else {
        panic!("unexpected result column type {}", column.data_type())
    }
}

fn chain(expr: &Expr) -> f64 {
    estimate_nnz(&ChainEstimator::default(), expr, &Aliases::new()).expect("chain estimate")
}

fn uniform(expr: &Expr) -> f64 {
    estimate_nnz(&UniformEstimator, expr, &Aliases::new()).expect("uniform estimate")
}

/// Every sub-expression of `expr`, itself included.
fn subexpressions(expr: &Expr) -> Vec<&Expr> {
    let mut out = vec![expr];
    match expr {
        Expr::Map { args, .. } => args.iter().for_each(|a| out.extend(subexpressions(a))),
        Expr::Agg { body, .. } => out.extend(subexpressions(body)),
        _ => {}
    }
    out
}

fn tensor(name: &str, sizes: &[u64], entries: &[Vec<i64>], values: Vec<i64>) -> TensorRef {
    let coo = Coo {
        dims: sizes
            .iter()
            .enumerate()
            .map(|(d, &s)| DimensionSpec::new(format!("d{d}"), Some(s)))
            .collect(),
        coords: (0..sizes.len())
            .map(|d| entries.iter().map(|e| e[d]).collect())
            .collect(),
        values: vec![("v".to_string(), ValueData::Int64(values))],
        column_order: None,
    };
    TensorRef {
        name: name.to_string(),
        tensor: Arc::new(Tensor::from_coo(coo).expect("valid test tensor")),
    }
}

fn input(t: &TensorRef, vars: &[&str]) -> Expr {
    Expr::Input(Input {
        tensor: t.clone(),
        annotation: Annotation::Column(0),
        indices: vars.iter().map(|v| IndexTerm::Var(v.to_string())).collect(),
    })
}

fn mul(args: Vec<Expr>) -> Expr {
    Expr::map(ScalarOp::Mul, args)
}

fn sum(indices: &[&str], body: Expr) -> Expr {
    Expr::Agg {
        op: AggOp::Sum,
        indices: indices.iter().map(|s| s.to_string()).collect(),
        body: Box::new(body),
    }
}

fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= 1e-9 * expected.max(1.0),
        "estimate {actual}, expected {expected}"
    );
}

/// A random expression over a few tensors, before it is tied to them.
#[derive(Clone, Debug)]
enum Shape {
    /// Tensor number, and one term choice per dimension: 0–3 a variable
    /// (`a`..`d`), 4 the constant 0, 5 the constant 1.
    Leaf(usize, Vec<u8>),
    Mul(Vec<Shape>),
    /// `ANY` if the flag is set, else `SUM`, over the free indices picked
    /// by the mask.
    Agg(bool, u8, Box<Shape>),
}

fn shape_strategy() -> impl Strategy<Value = Shape> {
    let leaf =
        (0usize..3, prop::collection::vec(0u8..6, 3)).prop_map(|(t, terms)| Shape::Leaf(t, terms));
    leaf.prop_recursive(4, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..=3).prop_map(Shape::Mul),
            (any::<bool>(), any::<u8>(), inner).prop_map(|(a, m, s)| Shape::Agg(a, m, Box::new(s))),
        ]
    })
}

fn build(shape: &Shape, tensors: &[TensorRef], size: u64) -> Expr {
    match shape {
        Shape::Leaf(t, choices) => {
            let t = &tensors[t % tensors.len()];
            let dims = t.tensor.dims().len();
            let indices = choices[..dims]
                .iter()
                .map(|&c| match c {
                    0..=3 => IndexTerm::Var(["a", "b", "c", "d"][c as usize].to_string()),
                    k => IndexTerm::Const(i64::from(k - 4) % size as i64),
                })
                .collect();
            Expr::Input(Input {
                tensor: t.clone(),
                annotation: Annotation::Column(0),
                indices,
            })
        }
        Shape::Mul(args) => mul(args.iter().map(|a| build(a, tensors, size)).collect()),
        Shape::Agg(is_any, mask, body) => {
            let body = build(body, tensors, size);
            let free = body.free_indices();
            let mut indices: Vec<String> = free
                .iter()
                .enumerate()
                .filter(|(k, _)| mask & (1 << k) != 0)
                .map(|(_, v)| v.clone())
                .collect();
            if indices.is_empty() {
                match free.first() {
                    Some(first) => indices.push(first.clone()),
                    None => return body,
                }
            }
            Expr::Agg {
                op: if *is_any { AggOp::Any } else { AggOp::Sum },
                indices,
                body: Box::new(body),
            }
        }
    }
}

/// Tensors of 1–3 dimensions, all of size `size`, whose coordinates crowd
/// towards 0 (skewed degrees), with positive values so that no product
/// cancels.
/// Per tensor: its number of dimensions and raw coordinates.
type TensorSpecs = Vec<(usize, Vec<Vec<u32>>)>;

fn tensors_strategy() -> impl Strategy<Value = (u64, TensorSpecs)> {
    let one = (
        1usize..=3,
        prop::collection::vec(prop::collection::vec(0u32..1000, 3), 0..24),
    );
    (2u64..=5, prop::collection::vec(one, 1..=3))
}

fn skewed(raw: u32, size: u64) -> i64 {
    let x = f64::from(raw) / 1000.0;
    ((x * x * x * size as f64) as i64).min(size as i64 - 1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn chain_bound_is_an_upper_bound(
        (size, specs) in tensors_strategy(),
        shape in shape_strategy(),
    ) {
        let tensors: Vec<TensorRef> = specs
            .iter()
            .enumerate()
            .map(|(k, (dims, raw))| {
                let entries: Vec<Vec<i64>> = raw
                    .iter()
                    .map(|e| e[..*dims].iter().map(|&r| skewed(r, size)).collect())
                    .collect();
                let values = (0..entries.len() as i64).map(|v| 1 + v % 3).collect();
                tensor(&format!("t{k}"), &vec![size; *dims], &entries, values)
            })
            .collect();
        let expr = build(&shape, &tensors, size);
        for sub in subexpressions(&expr) {
            let truth = true_nnz(sub) as f64;
            let bound = chain(sub);
            prop_assert!(bound >= truth * (1.0 - 1e-9), "chain bound {bound} < {truth} for {sub}");
            let guess = uniform(sub);
            prop_assert!(guess.is_finite() && guess >= 0.0, "uniform {guess} for {sub}");
            if truth > 0.0 {
                prop_assert!(guess > 0.0, "uniform 0 for {truth} entries of {sub}");
            }
        }
    }
}

/// The small graph of the golden tests: triangles {0,1,2} and {2,3,4}, and
/// a pendant edge 4–5. Degrees 2, 2, 4, 2, 3, 1.
fn small_graph() -> DataGraph {
    let graph = Graph {
        labels: vec![0, 1, 0, 1, 0, 1],
        edges: vec![(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (2, 4), (4, 5)],
    };
    DataGraph::new(&graph).expect("small graph")
}

fn edge(g: &DataGraph, a: &str, b: &str) -> Expr {
    Expr::Input(Input {
        tensor: g.edges.clone(),
        annotation: Annotation::Multiplicity,
        indices: vec![IndexTerm::Var(a.into()), IndexTerm::Var(b.into())],
    })
}

#[test]
fn triangle_on_a_small_graph() {
    let g = small_graph();
    let join = mul(vec![
        edge(&g, "i", "j"),
        edge(&g, "j", "k"),
        edge(&g, "i", "k"),
    ]);
    // 2m = 14 directed edges, max degree Δ = 4, 6 vertices with edges.
    // Paths: an edge then the third vertex by degree, 14·4 = 56; a vertex
    // then two degrees, 6·4·4 = 96; sizes 6³. The chain bound is 56 (the
    // fractional AGM bound 14^1.5 ≈ 52.4 needs no path; the integral cover
    // bound 14² = 196).
    assert_close(chain(&join), 56.0);
    // Two triangles, each in 6 orders.
    assert_eq!(true_nnz(&join), 12);
    let count = sum(&["i", "j", "k"], join.clone());
    assert_eq!(chain(&count), 1.0);
    // Wedges around j: SUM(i) over the first two edges bounds {j,k} by
    // the 14 entries of edge(j,k).
    assert_close(
        chain(&sum(
            &["i"],
            mul(vec![edge(&g, "i", "j"), edge(&g, "j", "k")]),
        )),
        14.0,
    );
    let guess = uniform(&join);
    // 6³ · (14/36)³.
    assert_close(guess, 216.0 * (14.0f64 / 36.0).powi(3));
}

#[test]
fn star_on_a_small_graph() {
    let g = small_graph();
    let star = mul(vec![
        edge(&g, "c", "x"),
        edge(&g, "c", "y"),
        edge(&g, "c", "z"),
    ]);
    // An edge then two more neighbours of c: 14·4·4 = 224 (a vertex then
    // three neighbours: 6·4³ = 384). True: Σ deg³ = 8+8+64+8+27+1 = 116.
    assert_close(chain(&star), 224.0);
    assert_eq!(true_nnz(&star), 116);
    // Labelled centre (label 0: vertices 0, 2, 4): the labels factor adds
    // D(vertex | label) = 3 centres, then three neighbours: 3·4³ = 192.
    let labelled = mul(vec![
        star.clone(),
        Expr::Input(Input {
            tensor: g.labels.clone(),
            annotation: Annotation::Multiplicity,
            indices: vec![IndexTerm::Var("c".into()), IndexTerm::Const(0)],
        }),
    ]);
    assert_close(chain(&labelled), 192.0);
    assert_eq!(true_nnz(&labelled), 8 + 64 + 27);
}

#[test]
fn matrix_chain() {
    let ones = vec![1; 4];
    let a = tensor(
        "A",
        &[4, 4],
        &[vec![0, 0], vec![0, 1], vec![1, 1], vec![2, 3]],
        ones.clone(),
    );
    let b = tensor(
        "B",
        &[4, 4],
        &[vec![0, 0], vec![1, 0], vec![1, 2], vec![3, 3]],
        ones.clone(),
    );
    let c = tensor(
        "C",
        &[4, 4],
        &[vec![0, 1], vec![2, 2], vec![3, 0], vec![3, 1]],
        ones,
    );
    let join = mul(vec![
        input(&a, &["i", "j"]),
        input(&b, &["j", "k"]),
        input(&c, &["k", "l"]),
    ]);
    // Each matrix: 4 entries, at most 2 per row and per column, 3
    // non-empty rows and columns. Any start (4) then two degrees (2·2).
    assert_close(chain(&join), 16.0);
    assert_eq!(true_nnz(&join), 7);
    // A·B·C: {i,l} through the hidden j, k: 3 rows of A times 3 columns
    // of C.
    let product = sum(&["j", "k"], join.clone());
    assert_close(chain(&product), 9.0);
    assert_eq!(true_nnz(&product), 6);
    // (A·B) first, then C: the same bound through nested aggregates.
    let ab = sum(
        &["j"],
        mul(vec![input(&a, &["i", "j"]), input(&b, &["j", "k"])]),
    );
    let nested = sum(&["k"], mul(vec![ab, input(&c, &["k", "l"])]));
    assert_close(chain(&nested), 9.0);
    assert_eq!(true_nnz(&nested), 6);
    // A + B over {i, j}: 4 + 4 entries at most.
    let added = Expr::map(
        ScalarOp::Add,
        vec![input(&a, &["i", "j"]), input(&b, &["i", "j"])],
    );
    assert_close(chain(&added), 8.0);
    assert_eq!(true_nnz(&added), 7);
}

fn load(path: &std::path::Path) -> Option<Graph> {
    match graph::read(path) {
        Ok(g) => Some(g),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn yeast_triangles_and_query_truths() {
    let Some(data) = common::datasets() else {
        return;
    };
    let dir = data.join("subgraph/yeast");
    let Some(yeast) = load(&dir.join("yeast.graph")) else {
        return;
    };
    let g = DataGraph::new(&yeast).expect("yeast tensors");

    // Ordered triangles, counted directly.
    let mut adjacency: HashMap<i64, HashSet<i64>> = HashMap::new();
    for &(u, v) in &yeast.edges {
        adjacency.entry(u).or_default().insert(v);
        adjacency.entry(v).or_default().insert(u);
    }
    let mut triangles = 0u64;
    for (u, nu) in &adjacency {
        for v in nu {
            if let Some(nv) = adjacency.get(v) {
                triangles += nu.intersection(nv).filter(|w| *w != u).count() as u64;
            }
        }
    }
    let join = mul(vec![
        edge(&g, "i", "j"),
        edge(&g, "j", "k"),
        edge(&g, "i", "k"),
    ]);
    let bound = chain(&join);
    eprintln!(
        "yeast: {triangles} ordered triangles, chain bound {bound:.0}, uniform {:.1}",
        uniform(&join)
    );
    assert!(bound >= triangles as f64);

    // Every query of queries-lite with a trustworthy truth: the bound on
    // the labelled join is at least the number of homomorphisms.
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir.join("queries-lite"))
        .expect("queries-lite folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        let Some(name) = path.file_name() else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(dir.join("truth").join(name)) else {
            continue;
        };
        let Ok(truth) = text.trim().parse::<u64>() else {
            continue;
        };
        if truth > 9_000_000_000_000_000_000 {
            continue;
        }
        let Some(query) = load(&path) else { continue };
        let bound = chain(&g.join(&query, true));
        assert!(
            bound >= truth as f64 * (1.0 - 1e-12),
            "{}: chain bound {bound} below the true count {truth}",
            path.display()
        );
        let vertices: Vec<String> = (0..query.labels.len()).map(|v| format!("v{v}")).collect();
        let names: Vec<&str> = vertices.iter().map(String::as_str).collect();
        assert!(chain(&sum(&names, g.join(&query, true))) <= 1.0);
        checked += 1;
    }
    eprintln!("yeast queries-lite: chain bound >= truth on {checked} queries");
    assert!(checked > 0);
}

#[test]
fn estimators_agree_on_trivial_shapes() {
    let g = small_graph();
    let one = edge(&g, "i", "j");
    assert_close(chain(&one), 14.0);
    assert_close(uniform(&one), 14.0);
    // A diagonal read edge[i, i] (no self-loops here): the chain bound
    // keeps what the stored statistics say about one of the two
    // dimensions, 6 distinct sources; uniform keeps 1/6 of the 14 entries.
    let diagonal = edge(&g, "i", "i");
    assert_eq!(true_nnz(&diagonal), 0);
    assert_close(chain(&diagonal), 6.0);
    assert_close(uniform(&diagonal), 14.0 / 6.0);
    let chain_estimator = ChainEstimator::default();
    let scalar = chain_estimator
        .leaf(einsql::optimizer::Leaf::Empty)
        .expect("empty leaf");
    assert_eq!(chain_estimator.estimate(&scalar), 0.0);
}
