//! Differential tests of the executor against the reference evaluator:
//! random tensors (1–4 dimensions, empty to dense, skewed degrees, integer,
//! float and boolean values, bags) and random IR programs (joins, unions,
//! nested aggregates, every operator, constants as indices, aliases), run
//! under many physical plans each (every loop order of every query when
//! there are few, else a sample; random drivers and index and accumulator
//! formats; with and without variable elimination) and on one and several
//! threads. The optimizer's plans are checked the same way, under every
//! estimator and search and with each of its phases disabled.
//!
//! Where the reference evaluator succeeds, every plan must give the same
//! result (floats up to summation order) and the thread counts must agree
//! exactly. Where it fails (a division by zero somewhere in a
//! sub-expression), the executor may fail or succeed: it evaluates
//! sub-expressions only where the whole expression needs them.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, BooleanArray, Decimal128Array, Float64Array, Int64Array};
use common::Rng;
use einsql::exec::plan::{DenseKernel, Driver, OutputFormat, PhysicalPlan, Source};
use einsql::exec::{ExecOptions, PlanChoices, QueryChoices, plan_with, run, run_profiled};
use einsql::ir::{
    AggOp, Annotation, Arity, Expr, IndexTerm, Input, Program, Query, ScalarOp, TensorRef, Value,
};
use einsql::optimizer::fuse::fuse;
use einsql::optimizer::{EstimatorKind, OptimizerOptions, Phase, PhaseSet, Search, optimize};
use einsql::progress::NoProgress;
use einsql::storage::fibertree::{DeclaredIndex, IndexLayout, IndexSpec, LevelFormat};
use einsql::storage::tiles::TileSpec;
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData, ValueType};
use einsql::{Error, reference};

const VARS: [&str; 5] = ["i", "j", "k", "l", "m"];

/// A random program's setting: the size of every variable.
struct Gen {
    rng: Rng,
    /// The draws that widen integers (large values, `HUGEINT` columns),
    /// apart from `rng` so that the programs and the signs of values are
    /// those the seed always gave.
    wide: Rng,
    sizes: Vec<u64>,
    tensors: usize,
}

impl Gen {
    fn chance(&mut self, percent: usize) -> bool {
        self.rng.below(100) < percent
    }

    fn var(&mut self, vars: usize) -> usize {
        self.rng.below(vars)
    }

    /// A random value of `ty`: small, and for integers one time in ten
    /// large (2^40 times a small one, so that a few factors take a
    /// `BIGINT` product past 64 bits and it promotes to `HUGEINT`).
    fn value(&mut self, ty: ValueType) -> Value {
        match ty {
            ValueType::Boolean => Value::Bool(self.chance(70)),
            ValueType::Int64 | ValueType::Int128 => {
                let small = self.rng.below(7) as i64 - 3;
                let scale = if self.wide.below(10) == 0 { 1 << 40 } else { 1 };
                if ty == ValueType::Int64 {
                    Value::Int(small * scale)
                } else {
                    Value::huge(i128::from(small * scale))
                }
            }
            ValueType::Float64 => Value::Float((self.rng.below(17) as f64 - 8.0) / 4.0),
        }
    }

    /// A random tensor over dimensions of `sizes`: empty, sparse, dense or
    /// skewed; a bag one time in six.
    fn tensor(&mut self, sizes: &[u64]) -> (Arc<Tensor>, Annotation) {
        let cells: u64 = sizes.iter().product();
        let nnz = match self.rng.below(6) {
            _ if cells == 0 => 0,
            0 => 0,
            1 => 1 + self.rng.below(3),
            2 => cells as usize,
            _ => self.rng.below(cells as usize * 2 + 1),
        };
        let skewed = self.chance(30);
        let mut coords: Vec<Vec<i64>> = vec![Vec::new(); sizes.len()];
        for _ in 0..nnz {
            for (d, &size) in sizes.iter().enumerate() {
                let c = if skewed && d == 0 && self.chance(60) {
                    0
                } else {
                    self.rng.below(size as usize) as i64
                };
                coords[d].push(c);
            }
        }
        let dims: Vec<DimensionSpec> = sizes
            .iter()
            .enumerate()
            .map(|(d, &s)| DimensionSpec::new(format!("d{d}"), Some(s)))
            .collect();
        let bag = self.chance(17);
        let (values, annotation) = if bag {
            (Vec::new(), Annotation::Multiplicity)
        } else {
            let ty =
                match *self
                    .rng
                    .pick(&[ValueType::Boolean, ValueType::Int64, ValueType::Float64])
                {
                    ValueType::Int64 if self.wide.below(4) == 0 => ValueType::Int128,
                    ty => ty,
                };
            // Keep entries distinct so that duplicates do not combine.
            let mut seen = std::collections::HashSet::new();
            let mut keep = Vec::new();
            for row in 0..nnz {
                let key: Vec<i64> = coords.iter().map(|c| c[row]).collect();
                keep.push(seen.insert(key));
            }
            for column in &mut coords {
                let mut row = 0;
                column.retain(|_| {
                    row += 1;
                    keep[row - 1]
                });
            }
            let rows = coords.first().map_or(usize::from(nnz > 0), Vec::len);
            let rows = if sizes.is_empty() { rows.min(1) } else { rows };
            let data = match ty {
                ValueType::Boolean => {
                    ValueData::Boolean((0..rows).map(|_| self.chance(70)).collect())
                }
                ValueType::Int64 => ValueData::Int64(
                    (0..rows)
                        .map(|_| self.value(ty).as_i64().unwrap_or(0))
                        .collect(),
                ),
                ValueType::Int128 => ValueData::Int128(
                    (0..rows)
                        .map(|_| self.value(ty).as_i128().unwrap_or(0))
                        .collect(),
                ),
                ValueType::Float64 => {
                    ValueData::Float64((0..rows).map(|_| self.value(ty).as_f64()).collect())
                }
            };
            let annotation = if self.chance(10) {
                Annotation::Multiplicity
            } else {
                Annotation::Column(0)
            };
            (vec![("v".to_string(), data)], annotation)
        };
        let tensor = Tensor::from_coo(Coo {
            dims,
            coords,
            values,
            column_order: None,
        })
        .expect("a valid random tensor");
        (Arc::new(tensor), annotation)
    }

    /// An input over 1–3 terms (variables among the first `vars`, now and
    /// then a constant or a repeated variable).
    fn input(&mut self, vars: usize) -> Expr {
        let arity = 1 + self.rng.below(3);
        let mut terms = Vec::new();
        let mut sizes = Vec::new();
        for _ in 0..arity {
            if self.chance(12) {
                let size = 1 + self.rng.below(4) as u64;
                terms.push(IndexTerm::Const(self.rng.below(size as usize + 1) as i64));
                sizes.push(size);
            } else {
                let v = self.var(vars);
                terms.push(IndexTerm::Var(VARS[v].to_string()));
                sizes.push(self.sizes[v]);
            }
        }
        let (tensor, annotation) = self.tensor(&sizes);
        self.tensors += 1;
        Expr::Input(Input {
            tensor: TensorRef {
                name: format!("T{}", self.tensors),
                tensor,
            },
            annotation,
            indices: terms,
        })
    }

    /// A random expression of at most `depth` levels.
    fn expr(&mut self, depth: usize, vars: usize) -> Expr {
        if depth == 0 || self.chance(25) {
            return self.input(vars);
        }
        match self.rng.below(10) {
            0..=1 => {
                let body = self.expr(depth - 1, vars);
                let free = body.free_indices();
                if free.is_empty() {
                    return body;
                }
                let mut indices: Vec<String> =
                    free.into_iter().filter(|_| self.chance(60)).collect();
                if indices.is_empty() {
                    indices.push(body.free_indices()[0].clone());
                }
                Expr::Agg {
                    op: *self.rng.pick(&AggOp::ALL),
                    indices,
                    body: Box::new(body),
                }
            }
            2 => {
                // coord(v) next to an input that binds v.
                let input = self.input(vars);
                let free = input.free_indices();
                match free.first() {
                    Some(v) => Expr::map(
                        *self
                            .rng
                            .pick(&[ScalarOp::Add, ScalarOp::Mul, ScalarOp::Lt, ScalarOp::Ge]),
                        vec![input.clone(), Expr::Index(v.clone())],
                    ),
                    None => input,
                }
            }
            _ => {
                let op = *self.rng.pick(&ScalarOp::ALL);
                let count = match op.arity() {
                    Arity::Unary => 1,
                    Arity::Binary => 2,
                    Arity::Ternary => 3,
                    Arity::Variadic => 2 + self.rng.below(2),
                };
                let args = (0..count)
                    .map(|_| {
                        if self.chance(20) {
                            let ty = *self.rng.pick(&[
                                ValueType::Boolean,
                                ValueType::Int64,
                                ValueType::Float64,
                            ]);
                            Expr::Literal(self.value(ty))
                        } else {
                            self.expr(depth - 1, vars)
                        }
                    })
                    .collect();
                Expr::map(op, args)
            }
        }
    }

    /// A product of 2–4 inputs summed over some of its variables: the
    /// joins of sparse kernels and subgraph counting.
    fn join(&mut self, vars: usize) -> Expr {
        let factors = (0..2 + self.rng.below(3))
            .map(|_| self.input(vars))
            .collect();
        let body = Expr::map(ScalarOp::Mul, factors);
        let free = body.free_indices();
        let indices: Vec<String> = free.into_iter().filter(|_| self.chance(70)).collect();
        if indices.is_empty() {
            body
        } else {
            Expr::Agg {
                op: if self.chance(80) {
                    AggOp::Sum
                } else {
                    *self.rng.pick(&AggOp::ALL)
                },
                indices,
                body: Box::new(body),
            }
        }
    }

    /// `[SUM(..)] X[..] * f(AGG(..) Π inputs)`: a nested aggregate under a
    /// map, times an input over some of its variables (the `mask` phase's
    /// case, SystemML's Outer), with inputs empty to dense.
    fn outer(&mut self) -> Program {
        self.sizes = (0..VARS.len())
            .map(|_| 1 + self.rng.below(6) as u64)
            .collect();
        let mask = self.input(2);
        let nested = self.join(3);
        // Maps that stay finite on finite arguments (an infinity makes
        // sums depend on their order, which variable elimination changes).
        let half = || Expr::Literal(Value::Float(0.5));
        let mapped = match self.rng.below(9) {
            0 => Expr::map(
                ScalarOp::Ln,
                vec![Expr::map(
                    ScalarOp::Add,
                    vec![Expr::map(ScalarOp::Abs, vec![nested]), half()],
                )],
            ),
            1 => Expr::map(ScalarOp::Sqrt, vec![Expr::map(ScalarOp::Abs, vec![nested])]),
            2 => Expr::map(
                ScalarOp::Exp,
                vec![Expr::map(
                    ScalarOp::Neg,
                    vec![Expr::map(ScalarOp::Abs, vec![nested])],
                )],
            ),
            3 => Expr::map(ScalarOp::Sigmoid, vec![nested]),
            4 => Expr::map(ScalarOp::Relu, vec![nested]),
            5 => Expr::map(ScalarOp::Add, vec![nested, half()]),
            6 => Expr::map(ScalarOp::Greatest, vec![nested, half()]),
            7 => Expr::map(ScalarOp::Div, vec![nested, half()]),
            _ => Expr::map(
                ScalarOp::Power,
                vec![nested, Expr::Literal(Value::Float(2.0))],
            ),
        };
        let mut expr = Expr::map(ScalarOp::Mul, vec![mask, mapped]);
        let free = expr.free_indices();
        if !free.is_empty() && self.chance(60) {
            expr = Expr::sum(free, expr);
        }
        Program {
            queries: vec![query("Q1", expr, &mut self.rng)],
        }
    }

    /// A program the `saturate` phase has something to rewrite: sums,
    /// differences, negations, squares and scalings of products and
    /// sum-products, under aggregates, over inputs empty to dense (the
    /// shape of losses and gradients written from linear algebra).
    fn algebraic(&mut self) -> Program {
        let vars = 2 + self.rng.below(3);
        self.sizes = (0..VARS.len())
            .map(|_| 1 + self.rng.below(5) as u64)
            .collect();
        let mut expr = self.polynomial(3, vars);
        let free = expr.free_indices();
        if !free.is_empty() && self.chance(60) {
            let mut summed: Vec<String> =
                free.iter().filter(|_| self.chance(70)).cloned().collect();
            if summed.is_empty() {
                summed.push(free[0].clone());
            }
            expr = Expr::sum(summed, expr);
        }
        Program {
            queries: vec![query("Q1", expr, &mut self.rng)],
        }
    }

    /// A random sum-product polynomial of at most `depth` levels (see
    /// [`Gen::algebraic`]).
    fn polynomial(&mut self, depth: usize, vars: usize) -> Expr {
        if depth == 0 || self.chance(20) {
            return if self.chance(10) {
                let ty = *self.rng.pick(&[ValueType::Int64, ValueType::Float64]);
                Expr::Literal(self.value(ty))
            } else {
                self.input(vars)
            };
        }
        let next = |g: &mut Gen| g.polynomial(depth - 1, vars);
        match self.rng.below(9) {
            0 | 1 => {
                let (a, b) = (next(self), next(self));
                Expr::map(ScalarOp::Add, vec![a, b])
            }
            2 => {
                let (a, b) = (next(self), next(self));
                Expr::map(ScalarOp::Sub, vec![a, b])
            }
            3 | 4 => {
                let (a, b) = (next(self), next(self));
                Expr::map(ScalarOp::Mul, vec![a, b])
            }
            5 => Expr::map(ScalarOp::Neg, vec![next(self)]),
            6 => {
                let two = if self.chance(50) {
                    Value::Int(2)
                } else {
                    Value::Float(2.0)
                };
                Expr::map(ScalarOp::Power, vec![next(self), Expr::Literal(two)])
            }
            7 => self.join(vars),
            _ => {
                let body = next(self);
                let free = body.free_indices();
                if free.is_empty() {
                    return Expr::map(ScalarOp::Div, vec![body, Expr::Literal(Value::Float(4.0))]);
                }
                let indices: Vec<String> =
                    free.iter().filter(|_| self.chance(50)).cloned().collect();
                Expr::sum(indices, body)
            }
        }
    }

    /// `C = SUM(k) A * B` for matrices `A` over `i, k` and `B` over `k, j`
    /// (each stored in either order, with DOUBLE values, empty to full,
    /// some with NaN or an infinity), written in either output order: a
    /// query the dense and tiled paths take.
    fn product(&mut self) -> Program {
        self.sizes = (0..VARS.len())
            .map(|_| 1 + self.rng.below(9) as u64)
            .collect();
        let factor = |g: &mut Gen, vars: [usize; 2]| {
            let mut vars = vars;
            if g.chance(50) {
                vars.reverse();
            }
            let sizes = vars.map(|v| g.sizes[v]);
            let tensor = loop {
                let (tensor, annotation) = g.tensor(&sizes);
                let float = matches!(tensor.values(), [v] if v.ty == ValueType::Float64);
                if float && annotation == Annotation::Column(0) {
                    break tensor;
                }
            };
            let tensor = if g.chance(10) && tensor.nnz() > 0 {
                with_value(&tensor, *g.rng.pick(&[f64::NAN, f64::INFINITY]))
            } else {
                tensor
            };
            g.tensors += 1;
            Expr::Input(Input {
                tensor: TensorRef {
                    name: format!("T{}", g.tensors),
                    tensor,
                },
                annotation: Annotation::Column(0),
                indices: vars
                    .iter()
                    .map(|&v| IndexTerm::Var(VARS[v].to_string()))
                    .collect(),
            })
        };
        let (a, b) = (factor(self, [0, 2]), factor(self, [2, 1]));
        let body = Expr::Agg {
            op: AggOp::Sum,
            indices: vec![VARS[2].to_string()],
            body: Box::new(Expr::map(ScalarOp::Mul, vec![a, b])),
        };
        Program {
            queries: vec![query("C", body, &mut self.rng)],
        }
    }

    fn program(&mut self) -> Program {
        let vars = 2 + self.rng.below(3);
        self.sizes = (0..VARS.len())
            .map(|_| 1 + self.rng.below(5) as u64)
            .collect();
        if self.chance(5) {
            self.sizes[0] = 0;
        }
        let first = if self.chance(40) {
            self.join(vars)
        } else {
            self.expr(3, vars)
        };
        let mut queries = vec![query("Q1", first, &mut self.rng)];
        if self.chance(35) {
            let free = queries[0].indices.clone();
            let alias = Expr::Alias {
                name: "Q1".to_string(),
                indices: free
                    .iter()
                    .map(|v| {
                        if self.chance(15) {
                            IndexTerm::Const(0)
                        } else {
                            IndexTerm::Var(v.clone())
                        }
                    })
                    .collect(),
            };
            let other = self.expr(1, vars);
            let op = *self
                .rng
                .pick(&[ScalarOp::Mul, ScalarOp::Add, ScalarOp::Greatest]);
            let mut body = Expr::map(op, vec![alias, other]);
            let free = body.free_indices();
            if !free.is_empty() && self.chance(50) {
                body = Expr::Agg {
                    op: *self.rng.pick(&AggOp::ALL),
                    indices: vec![free[0].clone()],
                    body: Box::new(body),
                };
            }
            queries.push(query("Q2", body, &mut self.rng));
        }
        Program { queries }
    }
}

fn query(name: &str, expr: Expr, rng: &mut Rng) -> Query {
    let mut indices = expr.free_indices();
    if indices.len() > 1 && rng.below(2) == 0 {
        indices.reverse();
    }
    Query {
        name: name.to_string(),
        indices,
        expr,
    }
}

/// `tensor` (one DOUBLE column) with its first value replaced by `value`.
fn with_value(tensor: &Tensor, value: f64) -> Arc<Tensor> {
    let column = tensor.annotation_columns()[0]
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("a DOUBLE column");
    let mut values: Vec<f64> = column.values().to_vec();
    values[0] = value;
    let n = tensor.dims().len();
    let tensor = Tensor::from_coo(Coo {
        dims: tensor
            .dims()
            .iter()
            .map(|d| DimensionSpec::new(d.name.clone(), Some(d.size)))
            .collect(),
        coords: (0..n).map(|d| tensor.coords(d).to_vec()).collect(),
        values: vec![("v".to_string(), ValueData::Float64(values))],
        column_order: None,
    })
    .expect("the same entries");
    Arc::new(tensor)
}

/// A result as comparable parts: dimension names and sizes, value type,
/// and entries by coordinates.
struct Shape {
    dims: Vec<(String, u64)>,
    ty: ValueType,
    entries: HashMap<Vec<i64>, Value>,
}

fn entries(tensor: &Tensor) -> Shape {
    let dims = tensor
        .dims()
        .iter()
        .map(|d| (d.name.clone(), d.size))
        .collect();
    let ty = tensor.values().first().map_or(ValueType::Int64, |v| v.ty);
    let column = &tensor.annotation_columns()[0];
    let any = column.as_any();
    let value = |row: usize| -> Value {
        if let Some(a) = any.downcast_ref::<Int64Array>() {
            Value::Int(a.value(row))
        } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
            Value::huge(a.value(row))
        } else if let Some(a) = any.downcast_ref::<Float64Array>() {
            Value::Float(a.value(row))
        } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
            Value::Bool(a.value(row))
        } else {
            panic!("unexpected column type {}", column.data_type())
        }
    };
    let entries = (0..tensor.nnz())
        .map(|row| {
            let key = (0..tensor.dims().len())
                .map(|d| tensor.coords(d)[row])
                .collect();
            (key, value(row))
        })
        .collect();
    Shape { dims, ty, entries }
}

fn close(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => {
            (x.is_nan() && y.is_nan())
                || x == y
                || (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs()))
        }
        _ => a == b,
    }
}

/// Whether two results are the same (floats up to rounding); a message if
/// not.
fn compare(
    expected: &[(String, Arc<Tensor>)],
    actual: &[(String, Arc<Tensor>)],
) -> Result<(), String> {
    if expected.len() != actual.len() {
        return Err(format!(
            "{} results, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    for ((name, e), (got_name, a)) in expected.iter().zip(actual) {
        if name != got_name {
            return Err(format!("result {got_name}, expected {name}"));
        }
        let Shape {
            dims: e_dims,
            ty: e_ty,
            entries: e_map,
        } = entries(e);
        let Shape {
            dims: a_dims,
            ty: a_ty,
            entries: a_map,
        } = entries(a);
        if e_dims != a_dims || e_ty != a_ty {
            return Err(format!(
                "{name}: dims {a_dims:?} {a_ty:?}, expected {e_dims:?} {e_ty:?}"
            ));
        }
        // An entry that rounds to zero on one side may be absent on the other.
        for (key, &ev) in &e_map {
            let av = a_map.get(key).copied().unwrap_or(Value::zero(e_ty));
            if !close(ev, av) {
                return Err(format!("{name}{key:?} = {av:?}, expected {ev:?}"));
            }
        }
        for (key, &av) in &a_map {
            if !e_map.contains_key(key) && !close(av, Value::zero(e_ty)) {
                return Err(format!("{name}{key:?} = {av:?}, expected no entry"));
            }
        }
    }
    Ok(())
}

/// Exact equality of results (thread counts must not change anything).
fn identical(a: &[(String, Arc<Tensor>)], b: &[(String, Arc<Tensor>)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((n, x), (m, y))| n == m && x.data() == y.data())
}

fn permutations(items: &[String]) -> Vec<Vec<String>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (n, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(n);
        for mut tail in permutations(&rest) {
            tail.insert(0, first.clone());
            out.push(tail);
        }
    }
    out
}

/// Random choices for every query of `base`, with the loop order of query
/// `which` set to `order`.
fn choices(
    rng: &mut Rng,
    base: &einsql::exec::PhysicalPlan,
    eliminate: bool,
    which: usize,
    order: Option<Vec<String>>,
) -> PlanChoices {
    let mut queries = HashMap::new();
    for (q, query) in base.queries.iter().enumerate() {
        let names: Vec<String> = query
            .loop_vars()
            .iter()
            .map(|&v| query.vars[v].name.clone())
            .collect();
        let loop_order = if q == which {
            order.clone()
        } else if rng.below(2) == 0 {
            let all = permutations(&names);
            Some(rng.pick(&all).clone())
        } else {
            None
        };
        queries.insert(
            q,
            QueryChoices {
                loop_order,
                drivers: Vec::new(),
                input_format: Some(*rng.pick(&[
                    LevelFormat::Compressed,
                    LevelFormat::Hashed,
                    LevelFormat::Dense,
                    LevelFormat::Bytemap,
                ])),
                accumulator: Some(*rng.pick(&[
                    OutputFormat::Dense,
                    OutputFormat::Bytemap,
                    OutputFormat::Hashed,
                ])),
                factorize: rng.below(2) == 0,
                // Drawn only for a matrix product, where it matters.
                dense: match query.contraction() {
                    Some(_) => *rng.pick(&[None, Some(DenseKernel::Arrays)]),
                    None => None,
                },
                // Drawn among the inputs that can drive the query.
                driven: {
                    let drivers: Vec<Option<usize>> = std::iter::once(None)
                        .chain(
                            (0..query.inputs.len())
                                .filter(|&k| query.driven_by(k).is_some())
                                .map(Some),
                        )
                        .collect();
                    *rng.pick(&drivers)
                },
                // Whether a driven run lists the input it can list, at
                // any fill.
                listed: rng.below(2) == 0,
                // Drawn only where the query can run over joined pairs.
                paired: query.as_paired().is_some() && rng.below(2) == 0,
                // The loops' estimated work, from none to far more than
                // any input holds: the outermost loop runs as one chunk
                // or as many.
                work: *rng.pick(&[None, Some(0.0), Some(1e3), Some(1e6), Some(1e9)]),
            },
        );
    }
    PlanChoices { eliminate, queries }
}

/// Drivers for the loops of every query of `plan`: random inputs read at
/// each loop, or the dynamic choice.
fn with_drivers(
    rng: &mut Rng,
    plan: &einsql::exec::PhysicalPlan,
    mut choices: PlanChoices,
) -> PlanChoices {
    for (q, query) in plan.queries.iter().enumerate() {
        let drivers = (0..query.loops.len())
            .map(|depth| {
                let inputs = query.inputs_at(depth);
                if inputs.is_empty() || rng.below(3) == 0 {
                    Driver::Smallest
                } else {
                    Driver::Input(*rng.pick(&inputs))
                }
            })
            .collect();
        // The drivers go with the planned loops, which factorizing may
        // have reordered: the order is the planned one.
        let entry = choices.queries.entry(q).or_default();
        entry.drivers = drivers;
        entry.loop_order = Some(
            query
                .loop_vars()
                .iter()
                .map(|&v| query.vars[v].name.clone())
                .collect(),
        );
    }
    choices
}

fn options(threads: usize) -> ExecOptions {
    ExecOptions {
        threads,
        memory_limit: 1 << 30,
    }
}

#[test]
fn random_programs_agree_with_the_reference_under_every_plan() {
    let mut generator = Gen {
        rng: Rng(0x5eed_2024_e1c5_0001),
        wide: Rng(0x5eed_2024_e1c5_0001 ^ 0x1280),
        sizes: Vec::new(),
        tensors: 0,
    };
    let (mut programs, mut plans, mut reference_errors, mut both_failed) = (0, 0, 0, 0);
    let (mut promoted, mut driven, mut paired, mut finished) = (0, 0, 0, 0);
    // Its own stream, so that the programs drawn stay the same.
    let mut folds = Rng(0x0971_2026_1129_0f01);
    for case in 0..3000 {
        let program = generator.program();
        programs += 1;
        let expected = match reference::evaluate(&program) {
            Ok(results) => {
                // Results of BIGINT queries with a value past 64 bits.
                promoted += results
                    .iter()
                    .zip(&program.queries)
                    .filter(|((_, t), q)| {
                        t.values()[0].ty == ValueType::Int128
                            && q.expr.value_type(&|_| None) == ValueType::Int64
                    })
                    .count();
                Some(results)
            }
            Err(_) => {
                reference_errors += 1;
                None
            }
        };
        let mut variants = Vec::new();
        for eliminate in [true, false] {
            let base = match plan_with(
                &program,
                &PlanChoices {
                    eliminate,
                    ..PlanChoices::default()
                },
            ) {
                Ok(plan) => plan,
                Err(error) => {
                    assert!(
                        expected.is_none(),
                        "case {case}: planning failed: {error}\n{program}"
                    );
                    both_failed += 1;
                    continue;
                }
            };
            variants.push(PlanChoices {
                eliminate,
                ..PlanChoices::default()
            });
            // Every loop order of each query (a sample when there are many),
            // with random formats and drivers elsewhere.
            for (q, query) in base.queries.iter().enumerate() {
                let names: Vec<String> = query
                    .loop_vars()
                    .iter()
                    .map(|&v| query.vars[v].name.clone())
                    .collect();
                let mut orders = permutations(&names);
                while orders.len() > 6 {
                    let n = generator.rng.below(orders.len());
                    orders.swap_remove(n);
                }
                for order in orders {
                    let choice = choices(&mut generator.rng, &base, eliminate, q, Some(order));
                    let Ok(planned) = plan_with(&program, &choice) else {
                        panic!("case {case}: a valid choice was refused\n{program}\n{choice:?}");
                    };
                    variants.push(with_drivers(&mut generator.rng, &planned, choice));
                }
            }
        }
        for choice in variants {
            let mut plan = plan_with(&program, &choice)
                .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}\n{choice:?}"));
            // Half the plans with the `fuse` phase's fused passes and
            // folded maps.
            if folds.below(2) == 0 {
                fuse(&mut plan);
            }
            plans += 1;
            driven += plan.queries.iter().filter(|q| q.driven.is_some()).count();
            paired += plan.queries.iter().filter(|q| q.paired.is_some()).count();
            finished += plan.queries.iter().filter(|q| q.finish.is_some()).count();
            let single = run(&plan, &options(1), &NoProgress);
            match (&expected, &single) {
                (Some(expected), Ok(actual)) => {
                    if let Err(message) = compare(expected, actual) {
                        panic!("case {case}: {message}\n{program}\n{plan}");
                    }
                }
                (Some(_), Err(error)) => {
                    panic!("case {case}: the executor failed: {error}\n{program}\n{plan}")
                }
                (None, _) => {}
            }
            if let Ok(single) = &single {
                let multi = run(&plan, &options(3), &NoProgress)
                    .unwrap_or_else(|e| panic!("case {case}: 3 threads failed: {e}\n{plan}"));
                assert!(
                    identical(single, &multi),
                    "case {case}: 1 and 3 threads differ\n{plan}"
                );
            }
        }
    }
    eprintln!(
        "{programs} programs, {plans} plans ({driven} sparse-driven queries, {paired} over \
         joined pairs, {finished} with a map folded in); the reference failed on \
         {reference_errors} (planning too on {both_failed}); {promoted} BIGINT results promoted \
         to HUGEINT"
    );
    assert!(finished >= 10, "too few maps are folded: {finished}");
    assert!(promoted >= 10, "too few results pass 64 bits: {promoted}");
    assert!(driven >= 20, "too few queries are sparse-driven: {driven}");
    assert!(
        paired >= 20,
        "too few queries run over joined pairs: {paired}"
    );
    assert!(
        reference_errors < programs / 3,
        "too few programs are checked"
    );
}

/// Every plan the optimizer produces, with either estimator and every
/// search, with and without the semijoin reduction, gives the reference
/// evaluator's results, and the chain bound of
/// every intermediate step it introduces is at least its actual entries.
#[test]
fn optimized_plans_agree_with_the_reference() {
    let mut generator = Gen {
        rng: Rng(0x0971_2026_1121_0005),
        wide: Rng(0x0971_2026_1121_0005 ^ 0x1280),
        sizes: Vec::new(),
        tensors: 0,
    };
    let (mut checked, mut rewritten, mut bounded, mut reduced) = (0, 0, 0, 0);
    for case in 0..1500 {
        let program = generator.program();
        let Ok(expected) = reference::evaluate(&program) else {
            continue;
        };
        // The programs' tensors are small: with `trivial` on, most sums
        // are kept as written, so the searches run with it off.
        let searched = PhaseSet::EMPTY.with(Phase::Trivial);
        for estimator in [EstimatorKind::Chain, EstimatorKind::Uniform] {
            for (search, disabled) in [
                (Search::Exact, PhaseSet::EMPTY),
                (Search::Exact, searched),
                (Search::Exact, searched.with(Phase::Semijoin)),
                (Search::Greedy, searched),
                (Search::None, PhaseSet::EMPTY.with(Phase::Semijoin)),
            ] {
                let choice = OptimizerOptions {
                    estimator,
                    search,
                    disabled,
                    ..OptimizerOptions::default()
                };
                let optimized = optimize(&program, &choice)
                    .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}"));
                let (actual, runs) = run_profiled(&optimized.plan, &options(2), &NoProgress)
                    .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}\n{}", optimized.plan));
                // The chain bound is never below an intermediate's entries.
                if estimator == EstimatorKind::Chain {
                    for (query, estimate) in
                        optimized.logical.queries.iter().zip(&optimized.estimates)
                    {
                        let Some(step) = runs.iter().find(|r| r.name == query.name) else {
                            continue;
                        };
                        if query.name.starts_with("#e") {
                            bounded += 1;
                            assert!(
                                step.entries as f64 <= estimate * (1.0 + 1e-9) + 1e-6,
                                "case {case}: {} has {} entries, bound {estimate}\n{program}",
                                query.name,
                                step.entries
                            );
                        }
                    }
                }
                if let Err(message) = compare(&expected, &actual) {
                    panic!(
                        "case {case} ({choice:?}): {message}\n{program}\n{}",
                        optimized.plan
                    );
                }
                checked += 1;
                if optimized.logical != program {
                    rewritten += 1;
                }
                if !optimized.reductions.is_empty() {
                    reduced += 1;
                }
            }
        }
    }
    eprintln!(
        "{checked} optimized plans checked, {rewritten} of them rewritten, \
         {reduced} with semijoin reductions, {bounded} intermediates within the chain bound"
    );
    assert!(checked > 3000, "too few programs are checked");
    assert!(rewritten > 300, "too few programs are rewritten");
    assert!(reduced > 100, "too few plans have semijoin reductions");
}

/// Every optimizer phase can be left out, alone or all together, without
/// changing a result: random programs give the reference evaluator's
/// results with each phase of `Phase::ALL` disabled (with `trivial`),
/// with none and with all of them disabled (in debug builds the optimizer
/// also checks after every phase that the program still binds), and
/// every phase is reported in pipeline order, skipped exactly when
/// disabled or when a phase it needs is (`distribute` and `cse` need
/// `eliminate`; `factorize`, `dense` and `fuse` need `physical`;
/// `trivial` needs one of the two).
#[test]
fn every_optimizer_phase_can_be_disabled() {
    let mut generator = Gen {
        rng: Rng(0x0971_2026_1125_0019),
        wide: Rng(0x0971_2026_1125_0019 ^ 0x1280),
        sizes: Vec::new(),
        tensors: 0,
    };
    // Each phase off on its own, with `trivial` off too (on these small
    // tensors it keeps most sums as written, and the others would have
    // little to do), then every phase on, then none.
    let mut sets: Vec<PhaseSet> = Phase::ALL
        .into_iter()
        .map(|phase| PhaseSet::EMPTY.with(phase).with(Phase::Trivial))
        .collect();
    sets.push(PhaseSet::EMPTY);
    sets.push(PhaseSet::all());
    let (mut checked, mut differ, mut dense, mut driven) = (0, 0, 0, 0);
    for case in 0..700 {
        let program = generator.program();
        let Ok(expected) = reference::evaluate(&program) else {
            continue;
        };
        let all = optimize(&program, &OptimizerOptions::default())
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}"));
        for disabled in &sets {
            let choice = OptimizerOptions {
                disabled: *disabled,
                ..OptimizerOptions::default()
            };
            let optimized = optimize(&program, &choice)
                .unwrap_or_else(|e| panic!("case {case} (without {disabled}): {e}\n{program}"));
            let order: Vec<Phase> = optimized.phases.iter().map(|t| t.phase).collect();
            assert_eq!(order, Phase::ALL, "case {case}");
            let eliminated = !disabled.contains(Phase::Eliminate);
            let physical = !disabled.contains(Phase::Physical);
            for time in &optimized.phases {
                let needs_elimination = matches!(time.phase, Phase::Distribute | Phase::Cse);
                let needs_physical =
                    matches!(time.phase, Phase::Factorize | Phase::Dense | Phase::Fuse);
                let skipped = disabled.contains(time.phase)
                    || (needs_elimination && !eliminated)
                    || (needs_physical && !physical)
                    || (time.phase == Phase::Trivial && !eliminated && !physical);
                assert_eq!(
                    time.skipped, skipped,
                    "case {case} (without {disabled}): {time:?}"
                );
            }
            let actual = run(&optimized.plan, &options(2), &NoProgress)
                .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}\n{}", optimized.plan));
            if let Err(message) = compare(&expected, &actual) {
                panic!(
                    "case {case} (without {disabled}): {message}\n{program}\n{}",
                    optimized.plan
                );
            }
            checked += 1;
            if optimized.logical != all.logical {
                differ += 1;
            }
            if optimized.plan.queries.iter().any(|q| q.dense.is_some()) {
                dense += 1;
            }
            if optimized.plan.queries.iter().any(|q| q.driven.is_some()) {
                driven += 1;
            }
        }
    }
    eprintln!(
        "{checked} plans with phases disabled checked, {differ} of them with another logical \
         plan, {dense} with a dense matrix product, {driven} with a sparse-driven query"
    );
    assert!(checked > 2000, "too few programs are checked");
    assert!(
        differ > 300,
        "too few plans change when a phase is disabled"
    );
}

/// Nested aggregates under maps, times a stored input that may mask them
/// (the `mask` phase): with the phase and without it, the reference's
/// answer; the phase must mask a good share of them.
#[test]
fn masked_nested_aggregates_agree_with_the_reference() {
    let mut generator = Gen {
        rng: Rng(0x0020_2026_1125_0020),
        wide: Rng(0x0020_2026_1125_0020 ^ 0x1280),
        sizes: Vec::new(),
        tensors: 0,
    };
    let without = OptimizerOptions {
        disabled: PhaseSet::EMPTY.with(Phase::Mask),
        ..OptimizerOptions::default()
    };
    let (mut checked, mut masked) = (0, 0);
    for case in 0..1500 {
        let program = generator.outer();
        let Ok(expected) = reference::evaluate(&program) else {
            continue;
        };
        let with = optimize(&program, &OptimizerOptions::default())
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}"));
        let plain = optimize(&program, &without)
            .unwrap_or_else(|e| panic!("case {case} (without mask): {e}\n{program}"));
        for optimized in [&with, &plain] {
            let actual = run(&optimized.plan, &options(2), &NoProgress)
                .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}\n{}", optimized.plan));
            if let Err(message) = compare(&expected, &actual) {
                panic!(
                    "case {case}: {message}\n{program}\n{}\n{}",
                    optimized.logical, optimized.plan
                );
            }
        }
        checked += 1;
        if with.logical != plain.logical {
            masked += 1;
        }
    }
    eprintln!("{checked} programs checked, {masked} of them masked");
    assert!(checked > 1000, "too few programs are checked");
    assert!(masked > 250, "too few programs are masked");
}

/// An integer sum past 64 bits is exact (a `HUGEINT`); past 128 bits it
/// is an error, not a wrapped value.
#[test]
fn integer_sums_promote_and_overflow_is_an_error() {
    let sum = |values: ValueData| {
        let program = sum_program(values);
        let results: Vec<_> = [1, 2]
            .into_iter()
            .map(|threads| einsql::exec::execute(&program, &options(threads), &NoProgress))
            .collect();
        let reference = reference::evaluate(&program);
        (results, reference)
    };
    let (results, reference) = sum(ValueData::Int64(vec![i64::MAX, 1]));
    for result in results.into_iter().chain([reference]) {
        let result = result.expect("a HUGEINT sum");
        let Shape { ty, entries, .. } = entries(&result[0].1);
        assert_eq!(ty, ValueType::Int128);
        assert_eq!(entries.get(&Vec::new()), Some(&Value::huge(1 << 63)));
    }
    let (results, reference) = sum(ValueData::Int128(vec![i128::MAX, 1]));
    for result in results.into_iter().chain([reference]) {
        let error = result.expect_err("past 128 bits");
        assert!(matches!(error, Error::Overflow(_)), "{error}");
    }
}

/// `t = SUM(i) B[i]` over a one-dimensional `B` holding `values`.
fn sum_program(values: ValueData) -> Program {
    let n = values.len();
    let big = Tensor::from_coo(Coo {
        dims: vec![DimensionSpec::new("i", Some(n as u64))],
        coords: vec![(0..n as i64).collect()],
        values: vec![("v".into(), values)],
        column_order: None,
    })
    .unwrap();
    let input = Expr::Input(Input {
        tensor: TensorRef {
            name: "B".into(),
            tensor: Arc::new(big),
        },
        annotation: Annotation::Column(0),
        indices: vec![IndexTerm::Var("i".into())],
    });
    Program {
        queries: vec![Query {
            name: "t".into(),
            indices: Vec::new(),
            expr: Expr::Agg {
                op: AggOp::Sum,
                indices: vec!["i".into()],
                body: Box::new(input),
            },
        }],
    }
}

/// Programs the `saturate` phase rewrites (sums, differences, squares of
/// products and sum-products, under aggregates, over sparse and dense
/// inputs of every type) give the reference evaluator's answer with the
/// phase and without it; the phase must rewrite a good share of them.
#[test]
fn saturated_programs_agree_with_the_reference() {
    let mut generator = Gen {
        rng: Rng(0x5a70_2026_1125_0022),
        wide: Rng(0x5a70_2026_1125_0022 ^ 0x1280),
        sizes: Vec::new(),
        tensors: 0,
    };
    let without = OptimizerOptions {
        disabled: PhaseSet::EMPTY.with(Phase::Saturate),
        ..OptimizerOptions::default()
    };
    let (mut checked, mut rewritten) = (0, 0);
    for case in 0..1500 {
        let program = generator.algebraic();
        let Ok(expected) = reference::evaluate(&program) else {
            continue;
        };
        let with = optimize(&program, &OptimizerOptions::default())
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}"));
        let plain = optimize(&program, &without)
            .unwrap_or_else(|e| panic!("case {case} (without saturate): {e}\n{program}"));
        let after = Program {
            queries: with.rewritten.iter().map(|r| r.after.clone()).collect(),
        };
        for optimized in [&with, &plain] {
            let actual = run(&optimized.plan, &options(2), &NoProgress).unwrap_or_else(|e| {
                panic!("case {case}: {e}\n{program}\n{after}\n{}", optimized.plan)
            });
            if let Err(message) = compare(&expected, &actual) {
                panic!(
                    "case {case}: {message}\n{program}\nrewritten: {after}\n{}\n{}",
                    optimized.logical, optimized.plan
                );
            }
        }
        checked += 1;
        if !with.rewritten.is_empty() {
            rewritten += 1;
        }
    }
    eprintln!("{checked} programs checked, {rewritten} of them rewritten");
    assert!(checked > 1000, "too few programs are checked");
    assert!(rewritten > 100, "too few programs are rewritten");
}

/// Declared indexes change which fibertrees a plan reads, never a result:
/// random programs whose tables each declare up to three indexes (random
/// orders and level formats, or tiles; those whose dense levels would be
/// too large, and tiles of tables that are not one DOUBLE column, are
/// refused and left out) give the reference evaluator's results, and the
/// optimizer reads some inputs through a declared index. Then 200 matrix
/// products the same way; every program also runs with each product over
/// its tiles where they fit.
#[test]
fn declared_indexes_agree_with_the_reference() {
    let mut generator = Gen {
        rng: Rng(0x1d3c_2026_1126_0023),
        wide: Rng(0x1d3c_2026_1126_0023 ^ 0x1280),
        sizes: Vec::new(),
        tensors: 0,
    };
    let mut pick = Rng(0x1d3c_2026_1126_0024);
    let (mut checked, mut declared, mut read_through) = (0, 0, 0);
    let (mut tiles_declared, mut tiled_products) = (0, 0);
    // Matrix products, which may run over tiles, after the programs.
    let mut products = Gen {
        rng: Rng(0x1d3c_2026_1126_0025),
        wide: Rng(0x1d3c_2026_1126_0025 ^ 0x1280),
        sizes: Vec::new(),
        tensors: 0,
    };
    let mut product_pick = Rng(0x1d3c_2026_1126_0026);
    for case in 0..1000 {
        let (program, pick) = if case < 800 {
            (generator.program(), &mut pick)
        } else {
            (products.product(), &mut product_pick)
        };
        let Ok(expected) = reference::evaluate(&program) else {
            continue;
        };
        for query in &program.queries {
            for input in query.expr.inputs() {
                let tensor = &input.tensor.tensor;
                let n = tensor.dims().len();
                for k in 0..pick.below(4) {
                    let mut order: Vec<usize> = (0..n).collect();
                    for i in (1..n).rev() {
                        order.swap(i, pick.below(i + 1));
                    }
                    // One time in three tiles of 1 to 4 cells a side
                    // (refused for tables that are not one DOUBLE column);
                    // for the products three times in four, of 1 or 2.
                    let (tiled, largest) = if case < 800 {
                        (pick.below(3) == 0, 4)
                    } else {
                        (pick.below(4) != 0, 2)
                    };
                    let layout = if tiled {
                        let sizes = (0..n).map(|_| 1 + pick.below(largest) as u64).collect();
                        IndexLayout::Tiles(TileSpec::new(order, sizes))
                    } else {
                        let formats = (0..n).map(|_| *pick.pick(&LevelFormat::ALL)).collect();
                        IndexLayout::Levels(IndexSpec::new(order, formats))
                    };
                    let index = DeclaredIndex {
                        name: format!("{}_{k}", input.tensor.name),
                        layout,
                    };
                    let fresh = tensor
                        .declared_indexes()
                        .iter()
                        .all(|d| d.layout != index.layout);
                    let tiled = matches!(index.layout, IndexLayout::Tiles(_));
                    if fresh && tensor.declare(index).is_ok() {
                        declared += 1;
                        tiles_declared += usize::from(tiled);
                    }
                }
            }
        }
        let optimized = optimize(&program, &OptimizerOptions::default())
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}"));
        read_through += optimized
            .plan
            .queries
            .iter()
            .flat_map(|q| &q.inputs)
            .filter(|access| match &access.source {
                Source::Table { tensor, .. } => tensor.declared_name(&access.index).is_some(),
                Source::Result(_) => false,
            })
            .count();
        let actual = run(&optimized.plan, &options(2), &NoProgress)
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}\n{}", optimized.plan));
        if let Err(message) = compare(&expected, &actual) {
            panic!("case {case}: {message}\n{program}\n{}", optimized.plan);
        }
        // Every matrix product over tiles where its operands have fitting
        // ones (the others run as loops).
        let base = plan_with(&program, &PlanChoices::default())
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}"));
        let tiles = QueryChoices {
            dense: Some(DenseKernel::Tiles),
            ..QueryChoices::default()
        };
        let choices = PlanChoices {
            eliminate: true,
            queries: (0..base.queries.len())
                .map(|q| (q, tiles.clone()))
                .collect(),
        };
        let tiled =
            plan_with(&program, &choices).unwrap_or_else(|e| panic!("case {case}: {e}\n{program}"));
        let shown = tiled.to_string();
        tiled_products += shown.matches("tiled matrix product: ").count()
            - shown.matches("(tiles dropped)").count();
        let actual = run(&tiled, &options(2), &NoProgress)
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{program}\n{tiled}"));
        if let Err(message) = compare(&expected, &actual) {
            panic!("case {case} over tiles: {message}\n{program}\n{tiled}");
        }
        checked += 1;
    }
    eprintln!(
        "{checked} programs checked, {declared} indexes declared ({tiles_declared} tiled), \
         {read_through} inputs read through one, {tiled_products} products over tiles"
    );
    assert!(tiles_declared > 100, "too few tiled indexes are declared");
    assert!(tiled_products > 50, "too few products run over tiles");
    assert!(checked > 500, "too few programs are checked");
    assert!(declared > 1000, "too few indexes are declared");
    assert!(
        read_through > 100,
        "too few inputs are read through a declared index"
    );
}

/// A tensor named `name` over `vars` (each of size `size`) with one
/// value column: `entries` as coordinates and a value each, read as
/// integers or as floats.
fn small_input(
    name: &str,
    vars: &[&str],
    size: u64,
    entries: &[(&[i64], i64)],
    floats: bool,
) -> Expr {
    let coords = (0..vars.len())
        .map(|d| entries.iter().map(|(key, _)| key[d]).collect())
        .collect();
    let values = entries.iter().map(|&(_, v)| v);
    let values = if floats {
        ValueData::Float64(values.map(|v| v as f64 / 4.0).collect())
    } else {
        ValueData::Int64(values.collect())
    };
    let tensor = Tensor::from_coo(Coo {
        dims: vars
            .iter()
            .map(|&v| DimensionSpec::new(v, Some(size)))
            .collect(),
        coords,
        values: vec![("v".into(), values)],
        column_order: None,
    })
    .unwrap();
    Expr::Input(Input {
        tensor: TensorRef {
            name: name.into(),
            tensor: Arc::new(tensor),
        },
        annotation: Annotation::Column(0),
        indices: vars.iter().map(|&v| IndexTerm::Var(v.into())).collect(),
    })
}

/// Runs `plan` with 1 and 2 threads: the first equals `expected` (the
/// reference evaluator's), the second the first.
fn agrees_on_one_and_two_threads(plan: &PhysicalPlan, expected: &[(String, Arc<Tensor>)]) {
    let one = run(plan, &options(1), &NoProgress).unwrap();
    if let Err(message) = compare(expected, &one) {
        panic!("{message}\n{plan}");
    }
    let two = run(plan, &options(2), &NoProgress).unwrap();
    assert!(identical(&one, &two), "1 and 2 threads differ\n{plan}");
}

/// Output loops around aggregated ones, `y[i,k,l] = SUM(j,m) A[i,j] *
/// B[j,k,m] * (C[m,l] + D[l])` looping `i, j, k, m, l`: where `j` and
/// `m` visit one coordinate (rows 0, 2 and 5 of `A` have one `j`), the
/// loops write the output straight into the result (`i = 2`
/// throughout); a row `i` with two `j`s (`i = 1`) takes the accumulator
/// from the start, and a `k` with two `m`s from there on, after the
/// entries written directly before it (`i = 0` and `5` at `k = 1`).
/// Dense and hashed accumulators, on one and two threads, integers and
/// floats (the slot and the float paths), give the reference's result.
#[test]
fn output_loops_around_single_aggregated_loops_write_in_order() {
    let a: &[(&[i64], i64)] = &[
        (&[0, 1], 2),
        (&[1, 0], 3),
        (&[1, 3], -1),
        (&[2, 2], 5),
        (&[4, 4], 1),
        (&[5, 1], 7),
    ];
    let b: &[(&[i64], i64)] = &[
        (&[0, 1, 2], 1),
        (&[1, 0, 0], 2),
        (&[1, 1, 0], 3),
        (&[1, 1, 2], -2),
        (&[1, 2, 1], 4),
        (&[2, 0, 1], 6),
        (&[3, 1, 0], 1),
        (&[4, 2, 0], 2),
        (&[4, 2, 1], 3),
    ];
    let c: &[(&[i64], i64)] = &[(&[0, 0], 1), (&[0, 3], 2), (&[1, 1], -3), (&[2, 2], 4)];
    let d: &[(&[i64], i64)] = &[(&[1], 5), (&[4], -1)];
    for floats in [false, true] {
        let body = Expr::Map {
            op: ScalarOp::Mul,
            args: vec![
                small_input("A", &["i", "j"], 6, a, floats),
                small_input("B", &["j", "k", "m"], 6, b, floats),
                Expr::Map {
                    op: ScalarOp::Add,
                    args: vec![
                        small_input("C", &["m", "l"], 6, c, floats),
                        small_input("D", &["l"], 6, d, floats),
                    ],
                },
            ],
        };
        let program = Program {
            queries: vec![Query {
                name: "y".into(),
                indices: vec!["i".into(), "k".into(), "l".into()],
                expr: Expr::Agg {
                    op: AggOp::Sum,
                    indices: vec!["j".into(), "m".into()],
                    body: Box::new(body),
                },
            }],
        };
        let expected = reference::evaluate(&program).unwrap();
        for accumulator in [OutputFormat::Dense, OutputFormat::Hashed] {
            let choice = PlanChoices {
                eliminate: false,
                queries: HashMap::from([(
                    0,
                    QueryChoices {
                        loop_order: Some(["i", "j", "k", "m", "l"].map(String::from).to_vec()),
                        accumulator: Some(accumulator),
                        ..QueryChoices::default()
                    },
                )]),
            };
            let plan = plan_with(&program, &choice).unwrap();
            let order: Vec<&str> = plan.queries[0]
                .loop_vars()
                .iter()
                .map(|&v| plan.queries[0].vars[v].name.as_str())
                .collect();
            assert_eq!(order, ["i", "j", "k", "m", "l"], "{plan}");
            agrees_on_one_and_two_threads(&plan, &expected);
        }
    }
}

/// A loop that reads one input: where the support requires it (`A[i,j] *
/// B[i] + A[i,j] * C[i]`, either term needs `A`) the loop over `j`
/// iterates `A`'s fiber alone; where it does not (`A[i,j] + B[i]`,
/// `A[i,j] * C[i] + B[i]`) every `j` of a row that `B` holds is a
/// candidate. Rows where `A`, `B` or `C` is missing, and a
/// row that only `B` holds, against the reference evaluator, looping `i`
/// then `j`, with 1 and 2 threads.
#[test]
fn a_loop_over_one_input_iterates_it_alone_only_where_the_support_needs_it() {
    let a: &[(&[i64], i64)] = &[
        (&[0, 1], 2),
        (&[0, 3], -1),
        (&[1, 0], 3),
        (&[3, 2], 5),
        (&[4, 4], 1),
    ];
    let b: &[(&[i64], i64)] = &[(&[0], 2), (&[2], 7), (&[3], -3)];
    let c: &[(&[i64], i64)] = &[(&[1], 4), (&[3], 1), (&[4], 6)];
    for floats in [false, true] {
        let input =
            |name: &str, vars: &[&str], entries| small_input(name, vars, 5, entries, floats);
        let times = |x, y| Expr::map(ScalarOp::Mul, vec![x, y]);
        let plus = |x, y| Expr::map(ScalarOp::Add, vec![x, y]);
        let bodies = [
            plus(
                times(input("A", &["i", "j"], a), input("B", &["i"], b)),
                times(input("A", &["i", "j"], a), input("C", &["i"], c)),
            ),
            plus(input("A", &["i", "j"], a), input("B", &["i"], b)),
            plus(
                times(input("A", &["i", "j"], a), input("C", &["i"], c)),
                input("B", &["i"], b),
            ),
        ];
        for body in bodies {
            let program = Program {
                queries: vec![Query {
                    name: "y".into(),
                    indices: vec!["i".into(), "j".into()],
                    expr: body,
                }],
            };
            let expected = reference::evaluate(&program).unwrap();
            let choice = PlanChoices {
                eliminate: false,
                queries: HashMap::from([(
                    0,
                    QueryChoices {
                        loop_order: Some(["i", "j"].map(String::from).to_vec()),
                        ..QueryChoices::default()
                    },
                )]),
            };
            let plan = plan_with(&program, &choice).unwrap();
            agrees_on_one_and_two_threads(&plan, &expected);
        }
    }
}
