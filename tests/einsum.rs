//! Differential tests of the reference evaluator: einsum statements over
//! random small tensors (with explicit zeros and negative values) against a
//! brute-force dense computation that loops over every coordinate of every
//! index range.

use std::collections::HashMap;
use std::sync::Arc;

use einsql::Database;
use einsql::catalog::Catalog;
use einsql::einsum;
use einsql::reference;
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};
use proptest::prelude::*;

/// A dense integer tensor: sizes and row-major values.
#[derive(Clone, Debug)]
struct Dense {
    sizes: Vec<usize>,
    values: Vec<i64>,
}

impl Dense {
    fn at(&self, coords: &[usize]) -> i64 {
        let offset = coords
            .iter()
            .zip(&self.sizes)
            .fold(0, |acc, (&c, &s)| acc * s + c);
        self.values[offset]
    }

    /// The sparse tensor holding the non-zero entries, plus explicit zeros
    /// where `zeros` says so (they must not change any result).
    fn to_tensor(&self, zeros: &[bool]) -> Tensor {
        let mut coords = vec![Vec::new(); self.sizes.len()];
        let mut values = Vec::new();
        for (offset, &value) in self.values.iter().enumerate() {
            if value == 0 && !zeros.get(offset).copied().unwrap_or(false) {
                continue;
            }
            let mut rest = offset;
            for d in (0..self.sizes.len()).rev() {
                coords[d].push((rest % self.sizes[d]) as i64);
                rest /= self.sizes[d];
            }
            values.push(value);
        }
        Tensor::from_coo(Coo {
            dims: (0..self.sizes.len())
                .map(|d| DimensionSpec::new(format!("d{d}"), Some(self.sizes[d] as u64)))
                .collect(),
            coords,
            values: vec![("v".to_string(), ValueData::Int64(values))],
            column_order: None,
        })
        .unwrap()
    }
}

fn dense(sizes: Vec<usize>) -> impl Strategy<Value = (Dense, Vec<bool>)> {
    let len: usize = sizes.iter().product();
    (
        proptest::collection::vec(prop_oneof![3 => Just(0i64), 2 => -3i64..4], len),
        proptest::collection::vec(any::<bool>(), len),
    )
        .prop_map(move |(values, zeros)| {
            (
                Dense {
                    sizes: sizes.clone(),
                    values,
                },
                zeros,
            )
        })
}

/// Runs `statement` over `tables` with the reference evaluator and returns
/// the result's entries by coordinates.
fn run(statement: &str, tables: &[(&str, &(Dense, Vec<bool>))]) -> HashMap<Vec<i64>, i64> {
    let mut catalog = Catalog::in_memory();
    for (name, (dense, zeros)) in tables {
        catalog
            .put(name, Arc::new(dense.to_tensor(zeros)), false)
            .unwrap();
    }
    let program = einsum::compile(statement, &catalog).unwrap();
    let results = reference::evaluate(&program).unwrap();
    let tensor = &results[0].1;
    let batch = tensor.data();
    let dims = tensor.dims().len();
    let values = batch
        .column(dims)
        .as_any()
        .downcast_ref::<arrow::array::Int64Array>()
        .unwrap();
    (0..tensor.nnz())
        .map(|r| {
            let key = (0..dims).map(|d| tensor.coords(d)[r]).collect();
            (key, values.value(r))
        })
        .collect()
}

/// Checks `actual` against `expected(coords)` at every coordinate of `sizes`
/// (absent entries are 0; scalars are always stored).
fn check(
    actual: &HashMap<Vec<i64>, i64>,
    sizes: &[usize],
    expected: impl Fn(&[usize]) -> i64,
) -> Result<(), TestCaseError> {
    let total: usize = sizes.iter().product();
    for offset in 0..total {
        let mut rest = offset;
        let mut coords = vec![0; sizes.len()];
        for d in (0..sizes.len()).rev() {
            coords[d] = rest % sizes[d];
            rest /= sizes[d];
        }
        let key: Vec<i64> = coords.iter().map(|&c| c as i64).collect();
        let got = actual.get(&key).copied().unwrap_or(0);
        prop_assert_eq!(got, expected(&coords), "at {:?}", coords);
        if !sizes.is_empty() {
            prop_assert!(
                got != 0 || !actual.contains_key(&key),
                "stored zero at {:?}",
                coords
            );
        }
    }
    prop_assert!(actual.len() <= total.max(1));
    Ok(())
}

fn shapes() -> impl Strategy<Value = (usize, usize, usize)> {
    (1usize..5, 1usize..5, 1usize..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn matrix_multiply((n, m, p) in shapes(), seed in any::<u64>()) {
        let (a, b) = random_pair(seed, vec![n, m], vec![m, p]);
        let result = run("C[i,k] = SUM(j) A[i,j] * B[j,k];", &[("A", &a), ("B", &b)]);
        check(&result, &[n, p], |c| (0..m).map(|j| a.0.at(&[c[0], j]) * b.0.at(&[j, c[1]])).sum())?;
    }

    #[test]
    fn triangle_count(e in (1usize..6).prop_flat_map(|n| dense(vec![n, n]))) {
        let n = e.0.sizes[0];
        let result = run("t = SUM(i,j,k) E[i,j] * E[j,k] * E[i,k];", &[("E", &e)]);
        let mut expected = 0;
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    expected += e.0.at(&[i, j]) * e.0.at(&[j, k]) * e.0.at(&[i, k]);
                }
            }
        }
        check(&result, &[], |_| expected)?;
    }

    #[test]
    fn elementwise_sums_cover_the_union((n, m, _) in shapes(), seed in any::<u64>()) {
        let (a, b) = random_pair(seed, vec![n, m], vec![n, m]);
        let tables = [("A", &a), ("B", &b)];
        let sum = run("S[i,j] = A[i,j] + B[i,j];", &tables);
        check(&sum, &[n, m], |c| a.0.at(c) + b.0.at(c))?;
        let mixed = run("S[j,i] = A[i,j] - 2 * B[i,j] + A[i,j] * B[i,j];", &tables);
        check(&mixed, &[m, n], |c| {
            let (x, y) = (a.0.at(&[c[1], c[0]]), b.0.at(&[c[1], c[0]]));
            x - 2 * y + x * y
        })?;
    }

    #[test]
    fn max_and_min_aggregates_see_absent_zeros((n, m, _) in shapes(), seed in any::<u64>()) {
        let (a, b) = random_pair(seed, vec![n, m], vec![n, m]);
        let tables = [("A", &a), ("B", &b)];
        let max = run("M[i] = MAX(j) A[i,j];", &tables);
        check(&max, &[n], |c| (0..m).map(|j| a.0.at(&[c[0], j])).max().unwrap_or(0))?;
        let min = run("M[j] = MIN(i) A[i,j] + B[i,j];", &tables);
        check(&min, &[m], |c| (0..n).map(|i| a.0.at(&[i, c[0]]) + b.0.at(&[i, c[0]])).min().unwrap_or(0))?;
        let count = run("M[i] = COUNT(j) A[i,j] * B[i,j];", &tables);
        check(&count, &[n], |c| (0..m).filter(|&j| a.0.at(&[c[0], j]) * b.0.at(&[c[0], j]) != 0).count() as i64)?;
    }

    #[test]
    fn labelled_triangles_per_vertex(e in (1usize..5).prop_flat_map(|n| (dense(vec![n, n]), dense(vec![n])))) {
        let (e, l) = e;
        let n = e.0.sizes[0];
        let result = run(
            "V[i] = L[i] * MAX(j,k) E[i,j] * E[j,k] * E[i,k];",
            &[("E", &e), ("L", &l)],
        );
        check(&result, &[n], |c| {
            let i = c[0];
            let mut best = i64::MIN;
            for j in 0..n {
                for k in 0..n {
                    best = best.max(e.0.at(&[i, j]) * e.0.at(&[j, k]) * e.0.at(&[i, k]));
                }
            }
            l.0.at(&[i]) * best
        })?;
    }
}

/// Two random dense tensors of the given shapes, from a seed (so shapes
/// can depend on other generated values).
fn random_pair(
    seed: u64,
    first: Vec<usize>,
    second: Vec<usize>,
) -> ((Dense, Vec<bool>), (Dense, Vec<bool>)) {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut make = |sizes: Vec<usize>| {
        let len: usize = sizes.iter().product();
        let values = (0..len)
            .map(|_| match next() % 10 {
                0..=4 => 0,
                r => r as i64 - 7,
            })
            .collect();
        let zeros = (0..len).map(|_| next() % 2 == 0).collect();
        (Dense { sizes, values }, zeros)
    };
    (make(first), make(second))
}

#[test]
fn einsum_results_are_tables_through_the_database() {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE a (i INT, j INT, v INT, PRIMARY KEY (i, j));
         INSERT INTO a VALUES (0, 1, 2), (1, 0, 3);
         C[i,k] = SUM(j) a[i,j] * a[j,k];",
    )
    .unwrap();
    let c = db.table("C").unwrap();
    assert_eq!(c.nnz(), 2);
    assert_eq!(c.dims()[0].name, "i");
    assert_eq!(db.execute("SELECT * FROM C").unwrap().num_rows(), 2);
}

#[test]
fn expressions_nested_up_to_the_limit_evaluate_and_deeper_ones_fail_cleanly() {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE a (i INT, v INT, PRIMARY KEY (i));
         INSERT INTO a VALUES (0, 2);",
    )
    .unwrap();
    let depth = einsum::parser::MAX_DEPTH;
    let n = depth / 2 - 1;
    db.execute(&format!("t = {}a[0]{};", "-(".repeat(n), ")".repeat(n)))
        .unwrap();
    assert_eq!(db.table("t").unwrap().nnz(), 1);
    let sum = format!("s = a[0]{};", " + a[0]".repeat(depth - 2));
    db.execute(&sum).unwrap();
    let deeper = format!("u = {}a[0]{};", "(".repeat(100_000), ")".repeat(100_000));
    let message = db.execute(&deeper).unwrap_err().to_string();
    assert!(
        message.contains("expression nested too deeply"),
        "{message}"
    );
}

#[test]
fn an_einsum_statement_says_when_it_replaces_a_table() {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE a (i INT, v INT, PRIMARY KEY (i));
         INSERT INTO a VALUES (0, 2), (1, 3);",
    )
    .unwrap();
    let message = |text: &str| db.execute(text).unwrap().message.unwrap_or_default();
    assert_eq!(message("b[i] = a[i] * 2;"), "Stored b (2 entries)");
    assert_eq!(message("B = SUM(i) a[i];"), "Replaced table B (1 entry)");
    assert_eq!(db.table("b").unwrap().dims().len(), 0);
    assert_eq!(message("a[i] = a[i] + 1;"), "Replaced table a (2 entries)");
}
