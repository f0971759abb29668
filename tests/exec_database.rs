//! The executor behind the database: results that do not depend on the
//! thread count on inputs large enough to split into many chunks, the
//! memory limit and the settings that control it, and cancellation from
//! the progress sink.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::Rng;
use einsql::catalog::Catalog;
use einsql::exec::plan::{Driver, OutputFormat};
use einsql::exec::{ExecOptions, PlanChoices, QueryChoices, plan_with, run};
use einsql::progress::{NoProgress, ProgressSink};
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};
use einsql::{Database, Error, reference};

/// A random `n`×`n` float matrix with about `per_row` entries per row and
/// a few heavy rows.
fn matrix(rng: &mut Rng, n: usize, per_row: usize) -> Tensor {
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..n {
        let degree = if r % 50 == 7 {
            n / 2
        } else {
            rng.below(2 * per_row + 1)
        };
        let mut seen = std::collections::HashSet::new();
        for _ in 0..degree {
            let c = rng.below(n);
            if seen.insert(c) {
                rows.push(r as i64);
                cols.push(c as i64);
                vals.push((rng.below(2001) as f64 - 1000.0) / 7.0);
            }
        }
    }
    sized_matrix((n, n), rows, cols, ValueData::Float64(vals))
}

/// A `shape.0`×`shape.1` matrix of the entries at `rows` and `cols`.
fn sized_matrix(
    shape: (usize, usize),
    rows: Vec<i64>,
    cols: Vec<i64>,
    values: ValueData,
) -> Tensor {
    Tensor::from_coo(Coo {
        dims: vec![
            DimensionSpec::new("r", Some(shape.0 as u64)),
            DimensionSpec::new("c", Some(shape.1 as u64)),
        ],
        coords: vec![rows, cols],
        values: vec![("v".into(), values)],
        column_order: None,
    })
    .expect("a matrix")
}

fn catalog() -> Catalog {
    let mut rng = Rng(0xbeef_cafe_0042);
    let mut catalog = Catalog::in_memory();
    catalog
        .put("A", Arc::new(matrix(&mut rng, 300, 6)), false)
        .expect("A");
    catalog
        .put("B", Arc::new(matrix(&mut rng, 300, 4)), false)
        .expect("B");
    catalog
        .put("x", Arc::new(vector(&mut rng, 300)), false)
        .expect("x");
    catalog
}

/// A float vector over `n` coordinates, most of them stored (some with
/// the value 0).
fn vector(rng: &mut Rng, n: usize) -> Tensor {
    let (mut coords, mut vals) = (Vec::new(), Vec::new());
    for c in 0..n {
        if rng.below(10) > 0 {
            coords.push(c as i64);
            vals.push(if c % 17 == 3 {
                0.0
            } else {
                (rng.below(2001) as f64 - 1000.0) / 13.0
            });
        }
    }
    Tensor::from_coo(Coo {
        dims: vec![DimensionSpec::new("c", Some(n as u64))],
        coords: vec![coords],
        values: vec![("v".into(), ValueData::Float64(vals))],
        column_order: None,
    })
    .expect("a random vector")
}

fn options(threads: usize) -> ExecOptions {
    ExecOptions {
        threads,
        memory_limit: 1 << 30,
    }
}

/// Every statement gives bit-identical results on 1, 2 and 4 threads, and
/// the reference's up to rounding, under its default plan and under a plan
/// whose outermost loop is aggregated (so chunks merge by coordinate).
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let catalog = catalog();
    let statements = [
        "C[i,k] = SUM(j) A[i,j] * B[j,k];",
        "y[i] = SUM(j) A[i,j] * x[j];",
        "y[j] = SUM(i) A[i,j] * x[i];",
        "t = SUM(i,j) A[i,j] * B[j,i];",
        "y[i] = SUM(j) A[i,j] + B[i,j];",
        "m[k] = MAX(j) A[j,k] * 2.0;",
        "s[i] = MIN(j) greatest(A[i,j], B[i,j]) - 1.0;",
        // Reversed, the loops write `k` in order and `i` under it: the
        // chunks' entries are stored one chunk after another and sorted.
        "D[i,k] = SUM(j) (A[i,j] + B[i,j]) * B[j,k];",
    ];
    for statement in statements {
        let program = einsql::einsum::compile(statement, &catalog).expect("binds");
        let expected = reference::evaluate(&program).expect("the reference runs");
        let base = plan_with(&program, &PlanChoices::default()).expect("plans");
        let query = &base.queries[0];
        let mut reversed: Vec<String> = query
            .loop_vars()
            .iter()
            .map(|&v| query.vars[v].name.clone())
            .collect();
        reversed.reverse();
        let variants = [
            PlanChoices::default(),
            PlanChoices {
                eliminate: true,
                queries: [(
                    0,
                    QueryChoices {
                        loop_order: Some(reversed),
                        drivers: vec![Driver::Smallest; 3],
                        input_format: None,
                        accumulator: Some(OutputFormat::Hashed),
                        factorize: false,
                        dense: None,
                        driven: None,
                        listed: false,
                        paired: false,
                        work: None,
                    },
                )]
                .into_iter()
                .collect(),
            },
        ];
        for choices in variants {
            let plan = plan_with(&program, &choices).expect("plans");
            let one = run(&plan, &options(1), &NoProgress).expect("runs");
            for threads in [2, 4] {
                let many = run(&plan, &options(threads), &NoProgress).expect("runs");
                assert_eq!(
                    one[0].1.data(),
                    many[0].1.data(),
                    "{statement} on {threads} threads\n{plan}"
                );
            }
            let (got, want) = (&one[0].1, &expected[0].1);
            assert_eq!(got.nnz(), want.nnz(), "{statement}\n{plan}");
            for d in 0..got.dims().len() {
                assert_eq!(got.coords(d), want.coords(d), "{statement}\n{plan}");
            }
            let values = |t: &Tensor| -> Vec<f64> {
                let column = t.annotation_columns()[0].clone();
                let column = column
                    .as_any()
                    .downcast_ref::<arrow::array::Float64Array>()
                    .expect("floats")
                    .clone();
                column.values().to_vec()
            };
            for (a, b) in values(got).iter().zip(values(want)) {
                assert!(
                    (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
                    "{statement}: {a} vs {b}"
                );
            }
        }
    }
}

/// A query over the memory limit stops with a clear error and leaves the
/// database usable; `SET` and `RESET` change and restore the settings.
#[test]
fn the_memory_limit_stops_a_query_and_the_database_stays_usable() {
    let db = Database::open_in_memory();
    db.execute("CREATE TABLE e (i INT, j INT)").unwrap();
    let rows: Vec<String> = (0..200)
        .map(|n| format!("({n}, {})", (n * 7) % 200))
        .collect();
    db.execute(&format!("INSERT INTO e VALUES {}", rows.join(", ")))
        .unwrap();
    let message = db.execute("SET memory_limit = '2KB'").unwrap().message;
    assert_eq!(
        message.as_deref(),
        Some("memory_limit = 2.0 KiB (2000 bytes)")
    );
    let error = db.execute("p[i,k] = SUM(j) e[i,j] * e[j,k];").unwrap_err();
    assert!(matches!(error, Error::OutOfMemory(_)), "{error}");
    // The error names the step of the plan that needed the memory.
    assert_eq!(
        error.to_string(),
        "Out of memory: the query needs more than the memory limit of 2.0 KiB \
         for step p[i,k] of its plan (see EXPLAIN) (SET memory_limit = '...' raises it)"
    );
    assert!(db.table("p").is_err(), "nothing was stored");
    db.execute("RESET memory_limit").unwrap();
    db.execute("p[i,k] = SUM(j) e[i,j] * e[j,k];").unwrap();
    assert_eq!(db.table("p").unwrap().nnz(), 200);
    let message = db.execute("SET threads = 3").unwrap().message;
    assert_eq!(message.as_deref(), Some("threads = 3"));
    assert_eq!(db.settings().threads(), 3);
    db.execute("RESET ALL").unwrap();
    assert_eq!(db.settings().threads(), einsql::exec::default_threads());
    let error = db.execute("SET threds = 2").unwrap_err();
    assert_eq!(
        error.to_string(),
        "Setting 'threds' does not exist (did you mean 'threads'?)"
    );
    let error = db.execute("SET memory_limit = 'lots'").unwrap_err();
    assert!(error.to_string().contains("'4GB'"), "{error}");
}

/// A sink that asks to stop after it has been polled `after` times.
struct StopAfter {
    polls: AtomicUsize,
    after: usize,
}

impl ProgressSink for StopAfter {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
    fn cancelled(&self) -> bool {
        self.polls.fetch_add(1, Ordering::SeqCst) >= self.after
    }
}

/// The executor polls the sink while it runs (not only before) and stops
/// with `Cancelled`.
#[test]
fn a_running_query_is_cancelled() {
    let catalog = catalog();
    for statement in [
        "t = SUM(i,j,k) A[i,j] * B[j,k] * A[k,i];",
        "u = MAX(i,j,k) A[i,j] + B[j,k];",
    ] {
        let program = einsql::einsum::compile(statement, &catalog).expect("binds");
        for threads in [1, 2] {
            let sink = StopAfter {
                polls: AtomicUsize::new(0),
                after: 3,
            };
            let error = einsql::exec::execute(&program, &options(threads), &sink).unwrap_err();
            assert!(matches!(error, Error::Cancelled), "{statement}: {error}");
            assert!(sink.polls.load(Ordering::SeqCst) > 3);
        }
    }
}

/// A `rows`×`cols` integer matrix of the given `(row, column)` entries,
/// all 1.
fn pattern(rows: usize, cols: usize, entries: impl Iterator<Item = (usize, usize)>) -> Tensor {
    let (r, c): (Vec<i64>, Vec<i64>) = entries.map(|(r, c)| (r as i64, c as i64)).unzip();
    let ones = vec![1; r.len()];
    sized_matrix((rows, cols), r, c, ValueData::Int64(ones))
}

/// A loop nest whose inner loop finds nothing to intersect under any of
/// its outer assignments (its fibers hold disjoint coordinates: every
/// probe misses, no product is ever formed) still polls the sink and
/// stops. The outermost loop has one candidate, so the run is one chunk
/// and only the loops inside it poll: the subgraph benchmark's 30-second
/// timeouts once went unheeded for minutes in such a loop.
#[test]
fn a_loop_whose_intersections_all_miss_is_cancelled() {
    let (n, m) = (20_000, 50);
    let mut catalog = Catalog::in_memory();
    let tables = [
        ("A", pattern(1, n, (0..n).map(|j| (0, j)))),
        ("B", pattern(1, 2 * m, (0..m).map(|k| (0, k)))),
        (
            "C",
            pattern(
                n,
                2 * m,
                (0..n).flat_map(|j| (m..2 * m).map(move |k| (j, k))),
            ),
        ),
        ("D", pattern(2 * m, 2 * m, (0..2 * m).map(|k| (k, k)))),
    ];
    for (name, tensor) in tables {
        catalog.put(name, Arc::new(tensor), false).expect("stored");
    }
    let statement = "t = SUM(i,j,k,l) A[i,j] * B[i,k] * C[j,k] * D[k,l];";
    let program = einsql::einsum::compile(statement, &catalog).expect("binds");
    let choices = PlanChoices {
        eliminate: false,
        queries: [(
            0,
            QueryChoices {
                loop_order: Some(["i", "j", "k", "l"].map(String::from).to_vec()),
                ..QueryChoices::default()
            },
        )]
        .into_iter()
        .collect(),
    };
    let plan = plan_with(&program, &choices).expect("plans");
    let uncancelled = run(&plan, &options(1), &NoProgress).expect("runs");
    let total = uncancelled[0].1.annotation_columns()[0].clone();
    let total = total
        .as_any()
        .downcast_ref::<arrow::array::Int64Array>()
        .expect("integers")
        .values()
        .to_vec();
    assert_eq!(total, [0], "no assignment matches");
    for threads in [1, 2] {
        let sink = StopAfter {
            polls: AtomicUsize::new(0),
            after: 20,
        };
        let error = run(&plan, &options(threads), &sink).unwrap_err();
        assert!(matches!(error, Error::Cancelled), "{error}");
    }
}

/// SpMV's rows sum without zero tests and redo a row exactly only when its
/// sum is not finite or is zero: rows with NaN or infinite values next to
/// zeros, sums that cancel to 0 or overflow, -0 values, products that
/// underflow and all-zero rows give the reference's entries bit for bit,
/// on one thread and on several.
#[test]
fn spmv_rows_keep_the_zero_and_nan_semantics() {
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let rows: Vec<Vec<(i64, f64)>> = vec![
        vec![(0, 1.5), (1, 2.0), (5, -0.25)],
        vec![(0, nan), (3, 2.0)],
        vec![(3, inf), (1, 1.0)],
        vec![(1, inf), (2, 1.0)],
        vec![(1, 1.0), (2, -1.0)],
        vec![(1, -0.0), (2, 0.0)],
        vec![(0, 1e-200), (4, 1e-200)],
        vec![(0, 1e308), (1, 1e308)],
        vec![(1, -inf), (2, inf)],
        vec![(0, -0.0)],
        vec![(5, 3.0), (1, nan)],
        vec![(2, 4.0)],
    ];
    let x = [1.0, 1.0, 1.0, 0.0, 1e-200, 2.0];
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    // Many copies, so that the rows fill several chunks and blocks.
    for copy in 0..500 {
        for (n, row) in rows.iter().enumerate() {
            for &(col, value) in row {
                r.push((copy * rows.len() + n) as i64);
                c.push(col);
                v.push(value);
            }
        }
    }
    let n = (500 * rows.len()) as u64;
    let matrix = Tensor::from_coo(Coo {
        dims: vec![
            DimensionSpec::new("r", Some(n)),
            DimensionSpec::new("c", Some(6)),
        ],
        coords: vec![r, c],
        values: vec![("v".into(), ValueData::Float64(v))],
        column_order: None,
    })
    .expect("a matrix");
    let vector = Tensor::from_coo(Coo {
        dims: vec![DimensionSpec::new("c", Some(6))],
        coords: vec![(0..6).collect()],
        values: vec![("v".into(), ValueData::Float64(x.to_vec()))],
        column_order: None,
    })
    .expect("a vector");
    let mut catalog = Catalog::in_memory();
    catalog.put("A", Arc::new(matrix), false).expect("A");
    catalog.put("x", Arc::new(vector), false).expect("x");
    let program = einsql::einsum::compile("y[i] = SUM(j) A[i,j] * x[j];", &catalog).expect("binds");
    let expected = reference::evaluate(&program).expect("the reference runs");
    let plan = plan_with(&program, &PlanChoices::default()).expect("plans");
    let entries = |t: &Tensor| -> Vec<(i64, u64)> {
        let column = t.annotation_columns()[0].clone();
        let values = column
            .as_any()
            .downcast_ref::<arrow::array::Float64Array>()
            .expect("floats")
            .values()
            .to_vec();
        let bits = |v: f64| {
            if v.is_nan() {
                f64::NAN.to_bits()
            } else {
                v.to_bits()
            }
        };
        t.coords(0)
            .iter()
            .zip(values)
            .map(|(&i, v)| (i, bits(v)))
            .collect()
    };
    let want = entries(&expected[0].1);
    for threads in [1, 2] {
        let got = run(&plan, &options(threads), &NoProgress).expect("runs");
        assert_eq!(entries(&got[0].1), want, "{threads} threads");
    }
}

/// Storing a table computes its statistics, and what that works in is
/// charged to the memory limit: a limit below it stops the `INSERT`,
/// which changes nothing.
#[test]
fn a_table_statistics_are_charged_to_the_memory_limit() {
    let db = Database::open_in_memory();
    db.execute("CREATE TABLE e (i INT, j INT, PRIMARY KEY (i, j))")
        .unwrap();
    let rows: Vec<String> = (0..2000)
        .map(|n| format!("({n}, {})", (n * 7) % 2000))
        .collect();
    let insert = format!("INSERT INTO e VALUES {}", rows.join(", "));
    db.execute("SET memory_limit = '100KB'").unwrap();
    let error = db.execute(&insert).unwrap_err();
    assert!(matches!(error, Error::OutOfMemory(_)), "{error}");
    assert!(error.to_string().contains("for its statistics"), "{error}");
    assert_eq!(db.table("e").unwrap().nnz(), 0, "nothing was stored");
    db.execute("RESET memory_limit").unwrap();
    db.execute(&insert).unwrap();
    let e = db.table("e").unwrap();
    assert_eq!(e.nnz(), 2000);
    assert!(e.computed_statistics().is_some());
}
