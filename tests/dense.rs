//! Dense matrix products (the `dense` optimizer phase): every shape of
//! `SUM(k) A * B` the dense kernel takes (matrix times matrix in each
//! stored orientation and output order, matrix times vector, vector times
//! matrix, dot product, a Gram matrix of one table) over random matrices
//! from full to sparse gives the reference evaluator's answer with the
//! phase on and off and with the optimizer off; EXPLAIN names the kernel
//! for dense operands and keeps the loops for a sparse one; a product
//! whose arrays do not fit the memory limit is refused with an error; an
//! operand that is not finite runs as loops; random programs with dense
//! steps nested under maps and chained agree with every plan. Products of
//! matrices with declared tiled indexes (in either order, of random tile
//! sizes, from full to block-sparse) run over their tiles where the sizes
//! along `k` agree and give the reference's answer on one thread and two.

mod common;

use std::collections::BTreeMap;

use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::Float64Type;
use common::{Rng, lines};
use einsql::Database;
use einsql::catalog::Catalog;
use einsql::exec::{ExecOptions, PhysicalPlan, PlanChoices, QueryChoices, plan_with, run};
use einsql::progress::NoProgress;
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};

/// Entries by coordinates.
type Entries = BTreeMap<Vec<i64>, f64>;

/// A table's dimensions: name and size.
type Dims = Vec<(&'static str, usize)>;

/// A random tensor over `sizes` with a DOUBLE value at each cell kept
/// with probability `percent`/100. Values are small integers, so every
/// sum is exact whatever order it is taken in.
fn random(rng: &mut Rng, sizes: &[usize], percent: usize) -> Entries {
    let cells: usize = sizes.iter().product();
    let mut entries = Entries::new();
    for cell in 0..cells {
        if rng.below(100) >= percent {
            continue;
        }
        let mut rest = cell;
        let mut coords = vec![0; sizes.len()];
        for (c, n) in coords.iter_mut().zip(sizes).rev() {
            *c = (rest % n) as i64;
            rest /= n;
        }
        entries.insert(coords, rng.below(9) as f64 - 4.0);
    }
    entries
}

/// Stores `entries` as table `name` with dimensions `dims` (name, size).
fn store(db: &Database, name: &str, dims: &[(&str, usize)], entries: &Entries) {
    db.create_table_from_tensor(name, tensor(dims, entries))
        .expect("stored");
}

/// `entries` as a tensor with dimensions `dims` (name, size).
fn tensor(dims: &[(&str, usize)], entries: &Entries) -> Tensor {
    let coords = (0..dims.len())
        .map(|d| entries.keys().map(|k| k[d]).collect())
        .collect();
    Tensor::from_coo(Coo {
        dims: dims
            .iter()
            .map(|(d, n)| DimensionSpec::new(*d, Some(*n as u64)))
            .collect(),
        coords,
        values: vec![(
            "v".to_string(),
            ValueData::Float64(entries.values().copied().collect()),
        )],
        column_order: None,
    })
    .expect("a valid tensor")
}

/// The entries of table `c` after `statement` under `setting`.
fn answer(db: &Database, setting: &str, statement: &str) -> Entries {
    db.execute_all(&format!("{setting};\n{statement}"))
        .unwrap_or_else(|e| panic!("{setting}: {e}\n{statement}"));
    let result = db
        .execute("SELECT * FROM c")
        .unwrap_or_else(|e| panic!("{setting}: {e}\n{statement}"));
    lines(&result)
        .iter()
        .map(|row| {
            let cells: Vec<&str> = row.split('|').collect();
            let (coords, value) = cells.split_at(cells.len() - 1);
            (
                coords
                    .iter()
                    .map(|c| c.parse().expect("a coordinate"))
                    .collect(),
                value[0].parse().expect("a value"),
            )
        })
        .filter(|(coords, value): &(Vec<i64>, f64)| coords.is_empty() || *value != 0.0)
        .collect()
}

/// The physical plan of `statement`, as EXPLAIN prints it.
fn explain(db: &Database, statement: &str) -> String {
    let result = db
        .execute(&format!("EXPLAIN {statement}"))
        .unwrap_or_else(|e| panic!("{e}\n{statement}"));
    lines(&result).join("\n")
}

/// One product the dense kernel takes: the statement, its output
/// variables and its two factors (table, variables).
struct Product {
    text: &'static str,
    output: &'static [&'static str],
    factors: [(&'static str, &'static [&'static str]); 2],
}

/// The products, over `a` (`m × k`, stored `[i,k]`), `at` (the same shape
/// stored `[k,i]`), `b` (`k × n` stored `[k,j]`), `bt` (stored `[j,k]`),
/// `x` (`k`) and `y` (`m`).
const PRODUCTS: [Product; 8] = [
    Product {
        text: "c[i,j] = SUM(k) a[i,k] * b[k,j]",
        output: &["i", "j"],
        factors: [("a", &["i", "k"]), ("b", &["k", "j"])],
    },
    Product {
        text: "c[j,i] = SUM(k) a[i,k] * b[k,j]",
        output: &["j", "i"],
        factors: [("a", &["i", "k"]), ("b", &["k", "j"])],
    },
    Product {
        text: "c[i,j] = SUM(k) at[k,i] * bt[j,k]",
        output: &["i", "j"],
        factors: [("at", &["k", "i"]), ("bt", &["j", "k"])],
    },
    Product {
        text: "c[j,i] = SUM(k) bt[j,k] * at[k,i]",
        output: &["j", "i"],
        factors: [("bt", &["j", "k"]), ("at", &["k", "i"])],
    },
    Product {
        text: "c[i] = SUM(k) a[i,k] * x[k]",
        output: &["i"],
        factors: [("a", &["i", "k"]), ("x", &["k"])],
    },
    Product {
        text: "c[k] = SUM(i) y[i] * a[i,k]",
        output: &["k"],
        factors: [("y", &["i"]), ("a", &["i", "k"])],
    },
    Product {
        text: "c[] = SUM(k) x[k] * x[k]",
        output: &[],
        factors: [("x", &["k"]), ("x", &["k"])],
    },
    Product {
        text: "c[k,l] = SUM(i) a[i,k] * a[i,l]",
        output: &["k", "l"],
        factors: [("a", &["i", "k"]), ("a", &["i", "l"])],
    },
];

/// `product` computed here from the tables' entries: the products of
/// the factors' values summed per output coordinate, zeros dropped (a
/// scalar kept).
fn reference(product: &Product, tables: &BTreeMap<&str, Entries>) -> Entries {
    let [(left, lv), (right, rv)] = &product.factors;
    let mut sums = Entries::new();
    if product.output.is_empty() {
        sums.insert(Vec::new(), 0.0);
    }
    for (lc, lx) in &tables[left] {
        for (rc, rx) in &tables[right] {
            let agree = lv.iter().enumerate().all(|(p, v)| {
                rv.iter()
                    .position(|w| w == v)
                    .is_none_or(|q| lc[p] == rc[q])
            });
            if !agree {
                continue;
            }
            let at = |v: &&str| match lv.iter().position(|w| w == v) {
                Some(p) => lc[p],
                None => rc[rv.iter().position(|w| w == v).expect("bound")],
            };
            let key: Vec<i64> = product.output.iter().map(at).collect();
            *sums.entry(key).or_default() += lx * rx;
        }
    }
    sums.retain(|k, v| k.is_empty() || *v != 0.0);
    sums
}

/// Checks that `product` gives the reference's answer over `tables`
/// under each of `settings` (after `SET optimizer = 'exact'`); returns
/// its plan with every phase on.
fn agree_under_every_setting(
    db: &Database,
    product: &Product,
    tables: &BTreeMap<&str, Entries>,
    settings: &[&str],
    context: &str,
) -> String {
    let statement = format!("{};", product.text);
    let expected = reference(product, tables);
    for setting in settings {
        db.execute("SET optimizer = 'exact'").expect("set");
        let got = answer(db, setting, &statement);
        assert_eq!(got, expected, "{context}, {setting}: {}", product.text);
    }
    db.execute_all("SET optimizer = 'exact'; SET disabled_optimizers = ''")
        .expect("set");
    explain(db, product.text)
}

#[test]
fn dense_products_agree_with_the_reference_and_every_plan() {
    let mut rng = Rng(0x0de5_2026_1126_0001);
    let settings = [
        "SET disabled_optimizers = ''",
        "SET disabled_optimizers = 'dense'",
        "SET optimizer = 'none'",
    ];
    let (mut dense_plans, mut driven_plans) = (0, 0);
    for case in 0..24 {
        let (m, k, n) = (1 + rng.below(12), 1 + rng.below(12), 1 + rng.below(12));
        let percent = *rng.pick(&[100, 90, 60, 30, 5]);
        let db = Database::open_in_memory();
        let shapes: [(&str, Dims); 6] = [
            ("a", vec![("i", m), ("k", k)]),
            ("at", vec![("k", k), ("i", m)]),
            ("b", vec![("k", k), ("j", n)]),
            ("bt", vec![("j", n), ("k", k)]),
            ("x", vec![("k", k)]),
            ("y", vec![("i", m)]),
        ];
        let mut tables = BTreeMap::new();
        for (name, dims) in &shapes {
            let sizes: Vec<usize> = dims.iter().map(|d| d.1).collect();
            let entries = random(&mut rng, &sizes, percent);
            store(&db, name, dims, &entries);
            tables.insert(*name, entries);
        }
        for product in &PRODUCTS {
            let context = format!("case {case} ({m}×{k}×{n}, {percent}%)");
            let plan = agree_under_every_setting(&db, product, &tables, &settings, &context);
            if plan.contains("dense matrix product") {
                dense_plans += 1;
            }
            if plan.contains("sparse-driven") {
                driven_plans += 1;
            }
        }
    }
    // The full and nearly full cases take the kernel, some of the sparser
    // ones the sparse-driven pass.
    eprintln!("{dense_plans} dense plans, {driven_plans} sparse-driven");
    assert!(dense_plans >= 40, "{dense_plans} dense plans");
    assert!(driven_plans >= 5, "{driven_plans} sparse-driven plans");
}

#[test]
fn explain_names_the_kernel_for_dense_operands_only() {
    let mut rng = Rng(0x0de5_2026_1126_0002);
    let db = Database::open_in_memory();
    store(
        &db,
        "u",
        &[("i", 40), ("k", 60)],
        &random(&mut rng, &[40, 60], 100),
    );
    store(
        &db,
        "s",
        &[("i", 400), ("j", 400)],
        &random(&mut rng, &[400, 400], 1),
    );
    let gram = explain(&db, "g[k,l] = SUM(i) u[i,k] * u[i,l]");
    assert!(
        gram.contains("dense matrix product: u.v[i,k] (60 × 40) times u.v[i,l] (40 × 60)"),
        "{gram}"
    );
    assert!(!gram.contains("for i:"), "{gram}");
    let sparse = explain(&db, "g[i,j] = SUM(k) s[i,k] * s[k,j]");
    assert!(!sparse.contains("dense matrix product"), "{sparse}");
    db.execute("SET disabled_optimizers = 'dense'")
        .expect("set");
    let off = explain(&db, "g[k,l] = SUM(i) u[i,k] * u[i,l]");
    assert!(!off.contains("dense matrix product"), "{off}");
    assert!(off.contains("for i:"), "{off}");
}

#[test]
fn a_dense_product_over_the_memory_limit_is_an_error() {
    // The kernel's three arrays take 2.16 MB.
    refused_over_the_limit(&ones(), "1MB");
}

/// A database holding `p`, a full 300 × 300 matrix of ones.
fn ones() -> Database {
    let db = Database::open_in_memory();
    let ones: Entries = (0..300)
        .flat_map(|i| (0..300).map(move |k| (vec![i, k], 1.0)))
        .collect();
    store(&db, "p", &[("i", 300), ("k", 300)], &ones);
    db
}

/// `c = p · p` over `ones()` fails for memory under `limit` and gives
/// 300 everywhere under 1 GB.
fn refused_over_the_limit(db: &Database, limit: &str) {
    let statement = "c[i,j] = SUM(k) p[i,k] * p[k,j];";
    db.execute(&format!("SET memory_limit = '{limit}'"))
        .expect("limit");
    let error = db
        .execute_all(statement)
        .map(|_| ())
        .expect_err("over the limit");
    assert!(error.to_string().contains("memory"), "{error}");
    db.execute("SET memory_limit = '1GB'").expect("limit");
    let product = answer(db, "SET threads = 2", statement);
    assert_eq!(product.len(), 90_000);
    assert!(product.values().all(|&v| v == 300.0));
}

/// A database holding `a`, full but for (0, 1) and with an infinity at
/// (1, 1), and `b`, full but for (1, 0): a dense kernel would multiply
/// the infinity by the absent 0 of `b` at (1, 0) (NaN); the loops never
/// read that cell.
fn non_finite_operands() -> Database {
    let db = Database::open_in_memory();
    let mut a: Entries = (0..3)
        .flat_map(|i| (0..3).map(move |k| (vec![i, k], 1.0 + i as f64)))
        .collect();
    a.remove(&vec![0, 1]);
    a.insert(vec![1, 1], f64::INFINITY);
    let mut b: Entries = (0..3)
        .flat_map(|k| (0..3).map(move |j| (vec![k, j], 2.0)))
        .collect();
    b.remove(&vec![1, 0]);
    store(&db, "a", &[("i", 3), ("k", 3)], &a);
    store(&db, "b", &[("k", 3), ("j", 3)], &b);
    db
}

#[test]
fn an_operand_that_is_not_finite_runs_as_the_loops() {
    let db = non_finite_operands();
    let statement = "c[i,j] = SUM(k) a[i,k] * b[k,j]";
    // Either kernel: the sparse-driven one scatters `b` (not full) too.
    let plan = explain(&db, statement);
    assert!(
        plan.contains("dense matrix product") || plan.contains("sparse-driven"),
        "{plan}"
    );
    let rows = |setting: &str| {
        db.execute_all(&format!("{setting};\n{statement};"))
            .expect("runs");
        lines(&db.execute("SELECT * FROM c").expect("rows"))
    };
    let kernel = rows("SET disabled_optimizers = ''");
    let loops = rows("SET disabled_optimizers = 'dense'");
    assert_eq!(kernel, loops);
    // 2 × 2 + 2 × 2: the infinite entry meets no stored entry of `b`.
    assert!(kernel.contains(&"1|0|8.0".to_string()), "{kernel:?}");
}

/// Whether two answers agree up to rounding (their sums are taken in
/// different orders): the same coordinates, values within 1e-9 relative,
/// NaN equal to NaN.
fn agree(a: &Entries, b: &Entries) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((ka, va), (kb, vb))| {
            ka == kb
                && ((va.is_nan() && vb.is_nan())
                    || va == vb
                    || (va - vb).abs() <= 1e-9 * va.abs().max(vb.abs()))
        })
}

/// Random programs whose steps include matrix products of dense operands,
/// nested under maps and chained, over full factor matrices and a sparse
/// or full `x`: the same answer with the optimizer off (the program as
/// written, as loops) and with every combination of `dense` and `mask`
/// (which turns a nested product into a sampled one) on and off.
#[test]
fn random_programs_with_dense_steps_agree_with_every_plan() {
    let mut rng = Rng(0x0de5_2026_1126_0003);
    let settings = [
        "SET optimizer = 'none'",
        "SET optimizer = 'exact'; SET disabled_optimizers = ''",
        "SET optimizer = 'exact'; SET disabled_optimizers = 'dense'",
        "SET optimizer = 'exact'; SET disabled_optimizers = 'mask'",
        "SET optimizer = 'exact'; SET disabled_optimizers = 'mask, dense'",
    ];
    let maps = [
        "ln(1.5 + {})",
        "exp(0.01 * {})",
        "power({}, 2)",
        "1 / (2 + {})",
    ];
    let (mut dense_plans, mut programs) = (0, 0);
    for case in 0..12 {
        let (m, n, k) = (20 + rng.below(30), 20 + rng.below(30), 2 + rng.below(40));
        let percent = *rng.pick(&[100, 50, 5]);
        let db = Database::open_in_memory();
        let shapes: [(&str, Dims, usize); 4] = [
            ("u", vec![("i", m), ("k", k)], 100),
            ("v", vec![("j", n), ("k", k)], 100),
            ("w", vec![("j", n), ("l", k)], 100),
            ("x", vec![("i", m), ("j", n)], percent),
        ];
        for (name, dims, percent) in &shapes {
            let sizes: Vec<usize> = dims.iter().map(|d| d.1).collect();
            let mut entries = random(&mut rng, &sizes, *percent);
            // Positive values keep ln's and the division's arguments
            // away from 0.
            entries.values_mut().for_each(|v| *v = v.abs() + 1.0);
            store(&db, name, dims, &entries);
        }
        let inner = "(SUM(k) u[i,k] * v[j,k])";
        let map = rng.pick(&maps).replace("{}", inner);
        let statements = [
            format!("c[] = SUM(i,j) x[i,j] * {map};"),
            format!("c[i,j] = x[i,j] * {map};"),
            "c[i,l] = SUM(k) u[i,k] * (SUM(j) v[j,k] * w[j,l]);".to_string(),
            format!("c[i] = SUM(j) {map} * (SUM(l) x[i,j] * w[j,l]);"),
        ];
        for statement in &statements {
            let answers: Vec<Entries> = settings
                .iter()
                .map(|setting| answer(&db, setting, statement))
                .collect();
            for (setting, got) in settings.iter().zip(&answers).skip(1) {
                assert!(
                    agree(got, &answers[0]),
                    "case {case} ({m}×{n}, rank {k}, {percent}%), {setting}: {statement}\n\
                     {got:?}\nexpected {:?}",
                    answers[0]
                );
            }
            db.execute_all("SET optimizer = 'exact'; SET disabled_optimizers = ''")
                .expect("set");
            if explain(&db, statement.trim_end_matches(';')).contains("dense matrix product") {
                dense_plans += 1;
            }
            programs += 1;
        }
    }
    assert!(
        dense_plans * 3 >= programs,
        "{dense_plans} of {programs} plans use the kernel"
    );
}

/// The shapes the sparse-driven path takes (SystemML's Cell, Row and
/// Outer templates and the kernels of issue 20), over a sparse `x`
/// (`m × n`, stored `[i,j]`, and `xt`, the same stored `[j,i]`), a sparse
/// 3-tensor `t` (`[i,j,l]`), full factor matrices `u` (`[i,k]`), `v`
/// (`[j,k]`), `vt` (`[k,j]`), `w` (`[l,k]`), full `z` (`[i,j]`) and vectors
/// `y` (`[j]`, full) and `q` (`[i]`, full or sparse, so scattered); `z.*`
/// is 1 wherever `x` has an entry, `zs.*` (full over half of `i`) only
/// on half of them. The last four are projections of one input.
const DRIVEN: [&str; 22] = [
    "c[i] = SUM(j) z.*[i,j] * x[i,j] * y[j]",
    "c[i] = SUM(j) zs.*[i,j] * x[i,j] * y[j]",
    "c[i] = SUM(j) x[i,j] * y[j]",
    "c[j] = SUM(i) x[i,j] * q[i]",
    "c[j] = SUM(i) xt[j,i] * q[i]",
    "c[i,k] = SUM(j) x[i,j] * v[j,k]",
    "c[k,i] = SUM(j) x[i,j] * v[j,k]",
    "c[i,k] = SUM(j) x[i,j] * vt[k,j]",
    "c[i,j] = SUM(k) x[i,j] * u[i,k] * v[j,k]",
    "c[j,i] = SUM(k) x[i,j] * u[i,k] * v[j,k]",
    "c[] = SUM(i,j) x[i,j] * z[i,j] * z[i,j]",
    "c[i,j] = x[i,j] * z[i,j]",
    "c[i,k] = SUM(j,l) t[i,j,l] * v[j,k] * w[l,k]",
    "c[j] = SUM(i) x[i,j] * (q[i] * SUM(l) x[i,l] * y[l])",
    "c[i,j,k] = x[i,j] * u[i,k]",
    "c[] = SUM(i,j) x[i,j] * ln(1 + SUM(k) u[i,k] * v[j,k])",
    "c[j] = SUM(i) x[i,j]",
    "c[i] = SUM(j) x[i,j]",
    "c[i,l] = SUM(j) t[i,j,l]",
    "c[] = SUM(i,j,l) t[i,j,l]",
    "c[j] = SUM(i) x[i,j] * zp[i,j]",
    "c[] = SUM(i,j) x[i,j] * exp(zp[i,j])",
];

/// A product whose result rows are each non-zero throughout or zero
/// (SpMM with a dense factor of positive values) is kept as its rows: the
/// entries, the table's rows in SQL and a statement that reads the table
/// are the loops', and a row that cancels to zero is left out.
#[test]
fn result_rows_non_zero_throughout_are_kept_as_rows() {
    let mut rng = Rng(0x0de5_2026_1127_0001);
    let (m, n, r) = (50, 40, 6);
    let db = Database::open_in_memory();
    let mut x: Entries = random(&mut rng, &[m, n], 8)
        .into_iter()
        .filter(|(c, _)| c[0] != 0)
        .map(|(c, v): (Vec<i64>, f64)| (c, v.abs().max(1.0)))
        .collect();
    // Row 0 cancels: x[0,0] = 1 and x[0,1] = -1 read v's equal rows 0 and 1.
    x.insert(vec![0, 0], 1.0);
    x.insert(vec![0, 1], -1.0);
    let mut v: Entries = random(&mut rng, &[n, r], 100)
        .into_iter()
        .map(|(c, v): (Vec<i64>, f64)| (c, v.abs() + 1.0))
        .collect();
    for k in 0..r as i64 {
        let same = v[&vec![0, k]];
        v.insert(vec![1, k], same);
    }
    store(&db, "x", &[("i", m), ("j", n)], &x);
    store(&db, "v", &[("j", n), ("k", r)], &v);
    let statement = "c[i,k] = SUM(j) x[i,j] * v[j,k];";
    let expected = answer(&db, "SET optimizer = 'none'", statement);
    let on = "SET optimizer = 'exact'; SET disabled_optimizers = ''";
    let got = answer(&db, on, statement);
    assert!(agree(&got, &expected), "{got:?}\nexpected {expected:?}");
    assert!(explain(&db, statement.trim_end_matches(';')).contains("sparse-driven"));
    assert!(!got.keys().any(|c| c[0] == 0) && got.len().is_multiple_of(r) && !got.is_empty());
    // Read back: by SQL, and by a statement over the stored rows.
    let total: f64 = expected.values().sum();
    let counted = lines(
        &db.execute("SELECT COUNT(*), SUM(v) FROM c")
            .expect("select"),
    );
    let (count, sum) = counted[0].split_once('|').expect("two columns");
    assert_eq!(count.parse::<usize>().expect("a count"), expected.len());
    assert!((sum.parse::<f64>().expect("a sum") - total).abs() <= 1e-9 * total.abs());
    db.execute_all(&format!("{on}; d[k] = SUM(i) c[i,k] * x[i,0];"))
        .expect("d");
    let mut by_column = BTreeMap::new();
    for (c, value) in &expected {
        if let Some(weight) = x.get(&vec![c[0], 0]) {
            *by_column.entry(c[1]).or_insert(0.0) += value * weight;
        }
    }
    let d = lines(&db.execute("SELECT * FROM d").expect("select d"));
    assert_eq!(d.len(), by_column.values().filter(|&&v| v != 0.0).count());
    for row in d {
        let (k, value) = row.split_once('|').expect("two columns");
        let want = by_column[&k.parse::<i64>().expect("k")];
        assert!((value.parse::<f64>().expect("d") - want).abs() <= 1e-9 * want.abs());
    }
    // Rows of an array over every coordinate of the output, whose first
    // variable is not the driver's: the columns of `x` that have an entry.
    let u: Entries = random(&mut rng, &[m, r], 100)
        .into_iter()
        .map(|(c, v): (Vec<i64>, f64)| (c, v.abs() + 1.0))
        .collect();
    store(&db, "u", &[("i", m), ("k", r)], &u);
    let columns = "c[j,k] = SUM(i) x[i,j] * u[i,k];";
    let expected = answer(&db, "SET optimizer = 'none'", columns);
    let got = answer(&db, on, columns);
    assert!(agree(&got, &expected), "{got:?}\nexpected {expected:?}");
    let present: std::collections::BTreeSet<i64> = x.keys().map(|c| c[1]).collect();
    assert_eq!(got.len(), present.len() * r);
    assert!(explain(&db, columns.trim_end_matches(';')).contains("sparse-driven"));
}

/// A driver times an input whose rows along the free variable are mostly
/// zero (the star join's `L[o,n,s,p,c] * O[o,k]`, a line item's order
/// with 4 of its 108 features set), or an integer input: that input's
/// rows are listed by their non-zero cells, not scattered, and the answer
/// is the loops', whichever of the output's variables leads and whatever
/// else multiplies the entry.
#[test]
fn mostly_zero_rows_are_listed_by_their_non_zero_cells() {
    let mut rng = Rng(0x0de5_2026_1127_0002);
    let (o, s, k) = (200, 7, 40);
    let db = Database::open_in_memory();
    // One supplier per order, as a key's function.
    let l: Entries = (0..o as i64)
        .map(|i| (vec![i, rng.below(s) as i64], rng.below(8) as f64 + 1.0))
        .collect();
    store(&db, "l", &[("o", o), ("s", s)], &l);
    // About 5% of the cells, under SPARSE_ROW_FILL's one in eight.
    store(
        &db,
        "f",
        &[("o", o), ("k", k)],
        &random(&mut rng, &[o, k], 5),
    );
    store(&db, "w", &[("o", o)], &random(&mut rng, &[o], 70));
    let on = "SET optimizer = 'exact'; SET disabled_optimizers = ''";
    for statement in [
        "c[s,k] = SUM(o) l[o,s] * f[o,k];",
        "c[k,s] = SUM(o) l[o,s] * f[o,k];",
        "c[s,k] = SUM(o) l[o,s] * w[o] * f[o,k];",
    ] {
        let expected = answer(&db, "SET optimizer = 'none'", statement);
        let got = answer(&db, on, statement);
        assert!(!expected.is_empty(), "{statement}");
        assert!(
            agree(&got, &expected),
            "{statement}\n{got:?}\nexpected {expected:?}"
        );
        let plan = explain(&db, statement.trim_end_matches(';'));
        assert!(
            plan.contains(".v[o,k] (rows listed by their non-zero cells)"),
            "{statement}\n{plan}"
        );
    }
    // An integer input (a count per order and supplier) of a float
    // product is listed whatever its fill.
    let rows: Vec<String> = l
        .iter()
        .map(|(c, v)| format!("({}, {}, {})", c[0], c[1], *v as i64))
        .collect();
    db.execute_all(&format!(
        "CREATE TABLE m (o BIGINT, s BIGINT, v BIGINT, PRIMARY KEY (o, s));\n\
         INSERT INTO m VALUES {};",
        rows.join(", ")
    ))
    .expect("m");
    let statement = "c[k,s] = SUM(o) f[o,k] * m[o,s];";
    let expected = answer(&db, "SET optimizer = 'none'", statement);
    assert!(!expected.is_empty());
    assert!(agree(&answer(&db, on, statement), &expected));
    let plan = explain(&db, statement.trim_end_matches(';'));
    assert!(
        plan.contains("sparse-driven: for each entry of f.v[o,k]")
            && plan.contains("m.v[o,s] (rows listed by their non-zero cells)"),
        "{plan}"
    );
}

/// A keyed table `l[o,s,p]` (each order one supplier and part) and a
/// `BIGINT` vector `e[p]` with values `value(p)`.
fn integer_tables(rng: &mut Rng, value: impl Fn(usize) -> i64) -> Database {
    let (orders, suppliers, parts) = (400, 9, 30);
    let db = Database::open_in_memory();
    let rows: Vec<String> = (0..orders)
        .map(|o| format!("({o}, {}, {})", rng.below(suppliers), rng.below(parts)))
        .collect();
    let values: Vec<String> = (0..parts)
        .filter(|p| p % 7 != 3)
        .map(|p| format!("({p}, {})", value(p)))
        .collect();
    db.execute_all(&format!(
        "CREATE TABLE l (o BIGINT, s BIGINT, p BIGINT, PRIMARY KEY (o, s, p));\n\
         INSERT INTO l VALUES {};\n\
         CREATE TABLE e (p BIGINT, v BIGINT, PRIMARY KEY (p));\n\
         INSERT INTO e VALUES {};",
        rows.join(", "),
        values.join(", ")
    ))
    .expect("tables");
    db
}

/// `c`'s rows after `statement` under `setting`, as printed.
fn printed(db: &Database, setting: &str, statement: &str) -> Vec<String> {
    db.execute_all(&format!("{setting};\n{statement}"))
        .unwrap_or_else(|e| panic!("{setting}: {e}\n{statement}"));
    lines(&db.execute("SELECT * FROM c").expect("rows"))
}

/// The values of rows printed as `key|value`, as integers.
fn integers(rows: &[String]) -> Vec<i128> {
    rows.iter()
        .map(|row| {
            row.split('|')
                .nth(1)
                .expect("a value")
                .parse()
                .expect("an integer")
        })
        .collect()
}

/// A `BIGINT` product of a keyed table's pattern and an integer input
/// (negative values and absent cells among them) runs sparse-driven,
/// added into an array or written at the driver's entries, and gives the
/// loops' answer as integers; with values so large that a sum could pass
/// 2^52 the same plan runs its loops and the answer stays exact.
#[test]
fn integer_products_run_sparse_driven_and_exactly() {
    let on = "SET optimizer = 'exact'; SET disabled_optimizers = ''";
    let loops = "SET optimizer = 'exact'; SET disabled_optimizers = 'dense'";
    let statements = [
        "c[s] = SUM(o,p) l[o,s,p] * e[p];",
        "c[p,s] = SUM(o) l[o,s,p] * e[p];",
        "c[o,s,p] = l[o,s,p] * e[p];",
        "c[s] = SUM(o,p) l[o,s,p] * e[p] * e[p];",
    ];
    let db = integer_tables(&mut Rng(0x1a7e_2026_1129_0001), |p| p as i64 - 12);
    for statement in statements {
        db.execute_all(on).expect("settings");
        let plan = explain(&db, statement.trim_end_matches(';'));
        assert!(plan.contains("sparse-driven"), "{statement}\n{plan}");
        let expected = printed(&db, loops, statement);
        assert!(!expected.is_empty(), "{statement}");
        assert!(
            expected.iter().all(|row| !row.contains('.')),
            "{expected:?}"
        );
        assert_eq!(printed(&db, on, statement), expected, "{statement}");
        assert_eq!(
            printed(&db, "SET optimizer = 'none'", statement),
            expected,
            "{statement}"
        );
    }
    // 2^50 + 1 needs 51 bits: nine of them add up past what doubles hold
    // exactly. The sums here are exact only in integers.
    let huge = (1i64 << 50) + 1;
    let db = integer_tables(&mut Rng(0x1a7e_2026_1129_0002), |_| huge);
    let statement = "c[s] = SUM(o,p) l[o,s,p] * e[p];";
    assert!(explain(&db, statement.trim_end_matches(';')).contains("sparse-driven"));
    let got = printed(&db, on, statement);
    assert_eq!(got, printed(&db, loops, statement));
    let exact = integers(&got);
    assert!(exact.iter().any(|&v| v > 8 * i128::from(huge)), "{got:?}");
    assert!(exact.iter().all(|&v| v % i128::from(huge) == 0), "{got:?}");
}

/// A step whose integer sum passes 2^63 is stored as `HUGEINT`, though
/// the plan expected a `BIGINT`; the `BIGINT` product that reads it,
/// planned as a sparse-driven pass, runs its loops instead and gives the
/// exact counts (it stopped with an internal error before).
#[test]
fn a_step_that_comes_out_hugeint_is_read_by_the_loops_exactly() {
    let db = integer_tables(&mut Rng(0x1a7e_2026_1129_0003), |p| p as i64);
    let big = 1i64 << 62;
    let cells: Vec<String> = (0..30)
        .flat_map(|p| (0..4).map(move |q| format!("({p}, {q}, {big})")))
        .collect();
    db.execute_all(&format!(
        "CREATE TABLE f (p BIGINT, q BIGINT, v BIGINT, PRIMARY KEY (p, q));\n\
         INSERT INTO f VALUES {};\n\
         CREATE TABLE g (q BIGINT, v BIGINT, PRIMARY KEY (q));\n\
         INSERT INTO g VALUES (0, 4), (1, 4), (2, 4), (3, 4);",
        cells.join(", ")
    ))
    .expect("tables");
    let statement = "c[s] = SUM(o,p,q) l[o,s,p] * f[p,q] * g[q];";
    let on = "SET optimizer = 'exact'; SET disabled_optimizers = ''";
    db.execute_all(on).expect("settings");
    let plan = explain(&db, statement.trim_end_matches(';'));
    assert!(
        plan.contains("sparse-driven: for each entry of l"),
        "{plan}"
    );
    let got = printed(&db, on, statement);
    assert_eq!(got, printed(&db, "SET optimizer = 'none'", statement));
    // Each line item's part adds 4 · 4 · 2^62 = 2^66.
    let per_item = 1i128 << 66;
    let counts = integers(&got);
    assert!(
        counts.iter().all(|&v| v > 0 && v % per_item == 0),
        "{got:?}"
    );
    assert_eq!(counts.iter().sum::<i128>(), 400 * per_item, "{got:?}");
}

/// Every shape of [`DRIVEN`] over random data gives the loops' answer
/// (the optimizer off) with the `dense` phase on and off, and with the
/// phase on most of them run sparse-driven, some listing a mostly-zero
/// factor's rows.
#[test]
fn sparse_driven_products_agree_with_the_loops() {
    let mut rng = Rng(0x0de5_2026_1126_0004);
    let settings = [
        "SET optimizer = 'none'",
        "SET optimizer = 'exact'; SET disabled_optimizers = ''",
        "SET optimizer = 'exact'; SET disabled_optimizers = 'dense'",
    ];
    let (mut driven_plans, mut listed_plans, mut programs) = (0, 0, 0);
    for case in 0..6 {
        let (m, n, p, r) = (
            30 + rng.below(40),
            30 + rng.below(40),
            3 + rng.below(6),
            1 + rng.below(20),
        );
        let (sparse, q_percent) = (*rng.pick(&[1, 5, 20]), *rng.pick(&[100, 40]));
        let db = Database::open_in_memory();
        let x = random(&mut rng, &[m, n], sparse);
        store(&db, "x", &[("i", m), ("j", n)], &x);
        let xt: Entries = x.iter().map(|(c, &v)| (vec![c[1], c[0]], v)).collect();
        store(&db, "xt", &[("j", n), ("i", m)], &xt);
        // A dense factor, or one whose rows are listed (5% filled).
        let v_percent = *rng.pick(&[100, 5]);
        let v = random(&mut rng, &[n, r], v_percent);
        store(&db, "v", &[("j", n), ("k", r)], &v);
        let vt: Entries = v.iter().map(|(c, &x)| (vec![c[1], c[0]], x)).collect();
        store(&db, "vt", &[("k", r), ("j", n)], &vt);
        let shapes: [(&str, Dims, usize); 8] = [
            ("zs", vec![("i", m / 2), ("j", n)], 100),
            ("zp", vec![("i", m), ("j", n)], 40),
            ("t", vec![("i", m), ("j", n), ("l", p)], sparse),
            ("u", vec![("i", m), ("k", r)], 100),
            ("w", vec![("l", p), ("k", r)], 100),
            ("z", vec![("i", m), ("j", n)], 100),
            ("y", vec![("j", n)], 100),
            ("q", vec![("i", m)], q_percent),
        ];
        for (name, dims, percent) in &shapes {
            let sizes: Vec<usize> = dims.iter().map(|d| d.1).collect();
            store(&db, name, dims, &random(&mut rng, &sizes, *percent));
        }
        for statement in DRIVEN {
            let statement = format!("{statement};");
            let answers: Vec<Entries> = settings
                .iter()
                .map(|setting| answer(&db, setting, &statement))
                .collect();
            for (setting, got) in settings.iter().zip(&answers).skip(1) {
                assert!(
                    agree(got, &answers[0]),
                    "case {case} ({m}×{n}×{p}, rank {r}, {sparse}%), {setting}: {statement}\n\
                     {got:?}\nexpected {:?}",
                    answers[0]
                );
            }
            db.execute_all("SET optimizer = 'exact'; SET disabled_optimizers = ''")
                .expect("set");
            let plan = explain(&db, statement.trim_end_matches(';'));
            if plan.contains("sparse-driven") {
                driven_plans += 1;
            }
            if plan.contains("(rows listed by their non-zero cells)") {
                listed_plans += 1;
            }
            programs += 1;
        }
    }
    eprintln!("{driven_plans} of {programs} plans are sparse-driven, {listed_plans} list rows");
    assert!(
        driven_plans * 2 >= programs,
        "{driven_plans} of {programs} plans are sparse-driven"
    );
    assert!(
        listed_plans >= 2,
        "{listed_plans} plans list an input's rows"
    );
}

#[test]
fn explain_names_the_driver_and_how_each_operand_is_read() {
    let mut rng = Rng(0x0de5_2026_1126_0005);
    let db = Database::open_in_memory();
    store(
        &db,
        "x",
        &[("i", 2000), ("j", 2000)],
        &random(&mut rng, &[2000, 2000], 1),
    );
    store(
        &db,
        "b",
        &[("j", 2000), ("k", 16)],
        &random(&mut rng, &[2000, 16], 100),
    );
    let spmm = explain(&db, "c[i,k] = SUM(j) x[i,j] * b[j,k]");
    assert!(
        spmm.contains(
            "sparse-driven: for each entry of x.v[i,j]\n      b.v[j,k] (read in place)\n      \
             per entry, a row over k (16)\n      result: added into a row per (i) of the driver's \
             entries"
        ),
        "{spmm}"
    );
    assert!(!spmm.contains("for i:"), "{spmm}");
    let sddmm = explain(&db, "c[i,j] = SUM(k) x[i,j] * b[i,k] * b[j,k]");
    assert!(
        sddmm.contains("result: written at the driver's entries"),
        "{sddmm}"
    );
    // A sparse operand over the driver's leading variables, with many
    // cells per driver entry: read at the driver's entries, the loops'
    // answer.
    store(
        &db,
        "p",
        &[("i", 2000), ("j", 2000)],
        &random(&mut rng, &[2000, 2000], 2),
    );
    let statement = "c[i,j] = x[i,j] * sigmoid(p[i,j])";
    let merged = explain(&db, statement);
    assert!(
        merged.contains("p.v[i,j] (read at the driver's entries; through sigmoid)"),
        "{merged}"
    );
    let loops = answer(&db, "SET optimizer = 'none'", statement);
    let driven = answer(&db, "SET optimizer = 'exact'", statement);
    assert!(loops.len() > 30_000, "{}", loops.len());
    assert!(agree(&driven, &loops));
    // The pattern of a full table (as SQL's joins produce) is left out.
    store(&db, "f", &[("i", 2000)], &random(&mut rng, &[2000], 100));
    let masked = explain(&db, "c[i,k] = SUM(j) x[i,j] * b[j,k] * f.*[i]");
    assert!(masked.contains("f.*[i] (1 at every entry)"), "{masked}");
    db.execute("SET disabled_optimizers = 'dense'")
        .expect("set");
    let off = explain(&db, "c[i,k] = SUM(j) x[i,j] * b[j,k]");
    assert!(!off.contains("sparse-driven"), "{off}");
    assert!(off.contains("for i:"), "{off}");
}

/// The first output of `plan` run on one thread: the coordinates of its
/// first dimension and its values.
fn run_on_one_thread(plan: &PhysicalPlan) -> (Vec<i64>, Vec<f64>) {
    let options = ExecOptions {
        threads: 1,
        memory_limit: 1 << 30,
    };
    let result = run(plan, &options, &NoProgress).expect("runs");
    let c = &result[0].1;
    let values = c.annotation_columns()[0]
        .as_primitive::<Float64Type>()
        .values()
        .to_vec();
    (c.coords(0).to_vec(), values)
}

#[test]
fn a_scattered_operand_that_is_not_finite_runs_as_the_loops() {
    // `x` holds an infinity at (1, 1) where `q` (not full, so scattered)
    // has no entry: the scattered 0 times the infinity would be NaN; the
    // loops never visit (1, 1) at all. The plan is forced to drive by `x`.
    let x: Entries = [
        (vec![0, 0], 2.0),
        (vec![1, 1], f64::INFINITY),
        (vec![1, 0], 3.0),
    ]
    .into_iter()
    .collect();
    let q: Entries = [(vec![0], 5.0)].into_iter().collect();
    let mut catalog = Catalog::in_memory();
    for (name, dims, entries) in [
        ("x", vec![("i", 2), ("j", 2)], &x),
        ("q", vec![("j", 2)], &q),
    ] {
        catalog
            .put(name, Arc::new(tensor(&dims, entries)), false)
            .expect("stored");
    }
    let program = einsql::einsum::compile("c[i] = SUM(j) x[i,j] * q[j];", &catalog).expect("binds");
    let driven = PlanChoices {
        eliminate: false,
        queries: [(
            0,
            QueryChoices {
                driven: Some(0),
                ..QueryChoices::default()
            },
        )]
        .into_iter()
        .collect(),
    };
    let plan = plan_with(&program, &driven).expect("plans");
    assert!(
        plan.to_string()
            .contains("q.v[j] (scattered into an array)"),
        "{plan}"
    );
    assert_eq!(run_on_one_thread(&plan), (vec![0, 1], vec![10.0, 15.0]));
}

/// On a driver split into many chunks (rows of the result, partial
/// arrays, entries), the sparse-driven path gives bit-identical results on
/// 1, 2 and 4 threads, and the loops' answer.
#[test]
fn sparse_driven_results_do_not_depend_on_the_thread_count() {
    let mut rng = Rng(0x0de5_2026_1126_0006);
    let db = Database::open_in_memory();
    let (m, n) = (2000, 1200);
    let x = random(&mut rng, &[m, n], 10);
    store(&db, "x", &[("i", m), ("j", n)], &x);
    store(
        &db,
        "v",
        &[("j", n), ("k", 8)],
        &random(&mut rng, &[n, 8], 100),
    );
    store(
        &db,
        "u",
        &[("i", m), ("k", 8)],
        &random(&mut rng, &[m, 8], 100),
    );
    store(&db, "y", &[("j", n)], &random(&mut rng, &[n], 100));
    store(&db, "q", &[("i", m)], &random(&mut rng, &[m], 100));
    for statement in [
        "c[i,k] = SUM(j) x[i,j] * v[j,k];",
        "c[i] = SUM(j) x[i,j] * y[j];",
        "c[j] = SUM(i) x[i,j] * q[i];",
        "c[i,j] = SUM(k) x[i,j] * u[i,k] * v[j,k];",
        "c[] = SUM(i,j) x[i,j] * q[i] * y[j];",
    ] {
        let plan = explain(&db, statement.trim_end_matches(';'));
        assert!(plan.contains("sparse-driven"), "{plan}");
        let one = answer(&db, "SET threads = 1", statement);
        for threads in [2, 4] {
            let many = answer(&db, &format!("SET threads = {threads}"), statement);
            assert_eq!(one, many, "{statement} on {threads} threads");
        }
        let loops = answer(&db, "SET disabled_optimizers = 'dense'", statement);
        db.execute("SET disabled_optimizers = ''").expect("set");
        assert!(agree(&one, &loops), "{statement}");
    }
}

/// A sparse-driven result at the driver's coordinates (SDDMM, an
/// elementwise product) shares the driver's coordinate columns when none
/// of its values is dropped, and is stored as the loops' when some are
/// (a product that is 0); both give the loops' answer.
#[test]
fn a_result_at_the_drivers_entries_shares_its_coordinates() {
    let mut rng = Rng(0x0de5_2026_1126_0007);
    let db = Database::open_in_memory();
    // Values 1 to 9: no product is 0.
    let positive = |rng: &mut Rng, sizes: &[usize], percent: usize| -> Entries {
        let mut entries = random(rng, sizes, percent);
        for value in entries.values_mut() {
            *value = value.abs() + 1.0;
        }
        entries
    };
    let x = positive(&mut rng, &[300, 200], 10);
    store(&db, "x", &[("i", 300), ("j", 200)], &x);
    store(
        &db,
        "u",
        &[("i", 300), ("k", 6)],
        &positive(&mut rng, &[300, 6], 100),
    );
    store(
        &db,
        "v",
        &[("j", 200), ("k", 6)],
        &positive(&mut rng, &[200, 6], 100),
    );
    store(&db, "q", &[("i", 300)], &positive(&mut rng, &[300], 100));
    store(&db, "y", &[("j", 200)], &positive(&mut rng, &[200], 100));
    // Full, with a 0 in some cells: those products are dropped.
    let mut z = positive(&mut rng, &[300, 200], 100);
    for (n, value) in z.values_mut().enumerate() {
        if n % 7 == 0 {
            *value = 0.0;
        }
    }
    store(&db, "z", &[("i", 300), ("j", 200)], &z);
    let x_coords = db.table("x").expect("x").data().column(0).to_data();
    for (statement, shared) in [
        ("c[i,j] = SUM(k) x[i,j] * u[i,k] * v[j,k];", true),
        ("c[i,j] = x[i,j] * q[i] * y[j];", true),
        ("c[i,j] = x[i,j] * z[i,j];", false),
    ] {
        let plan = explain(&db, statement.trim_end_matches(';'));
        assert!(
            plan.contains("result: written at the driver's entries"),
            "{plan}"
        );
        let got = answer(&db, "SET disabled_optimizers = ''", statement);
        let c = db.table("c").expect("c");
        let coords = c.data().column(0).to_data();
        assert_eq!(
            coords.buffers()[0].as_ptr() == x_coords.buffers()[0].as_ptr(),
            shared,
            "{statement}: shared coordinates"
        );
        let loops = answer(&db, "SET optimizer = 'none'", statement);
        db.execute("SET optimizer = 'exact'").expect("set");
        assert!(
            agree(&got, &loops),
            "{statement}\n{got:?}\nexpected {loops:?}"
        );
        let dropped = x.keys().filter(|k| !got.contains_key(*k)).count();
        assert_eq!(
            dropped > 0,
            !shared,
            "{statement}: {dropped} entries dropped"
        );
    }
}

/// A result added into a dense array gives the loops' answer both when
/// every cell is non-zero (the array becomes the values) and when some
/// are 0 (only the others are listed).
#[test]
fn a_dense_result_array_is_listed_as_the_loops_result() {
    let mut rng = Rng(0x0de5_2026_1126_0008);
    let db = Database::open_in_memory();
    let mut x = random(&mut rng, &[200, 150], 20);
    for value in x.values_mut() {
        *value = value.abs() + 1.0;
    }
    store(&db, "x", &[("i", 200), ("j", 150)], &x);
    let mut v = random(&mut rng, &[150, 5], 100);
    for value in v.values_mut() {
        *value = value.abs() + 1.0;
    }
    store(&db, "v", &[("j", 150), ("k", 5)], &v);
    // Rows 0, 3, 6, ... of `y` are 0: half of `c2`'s cells are.
    let y: Entries = (0..200i64)
        .map(|i| (vec![i], if i % 3 == 0 { 0.0 } else { 2.0 }))
        .collect();
    store(&db, "y", &[("i", 200)], &y);
    let rows = x
        .keys()
        .map(|k| k[0])
        .collect::<std::collections::BTreeSet<_>>();
    for (statement, cells) in [
        ("c[i,k] = SUM(j) x[i,j] * v[j,k];", rows.len() * 5),
        (
            "c[i,k] = SUM(j) y[i] * x[i,j] * v[j,k];",
            rows.iter().filter(|&&i| i % 3 != 0).count() * 5,
        ),
    ] {
        let plan = explain(&db, statement.trim_end_matches(';'));
        assert!(
            plan.contains("result: added into a row per (i) of the driver's entries"),
            "{plan}"
        );
        let got = answer(&db, "SET disabled_optimizers = ''", statement);
        assert_eq!(got.len(), cells, "{statement}");
        let loops = answer(&db, "SET optimizer = 'none'", statement);
        db.execute("SET optimizer = 'exact'").expect("set");
        assert!(
            agree(&got, &loops),
            "{statement}\n{got:?}\nexpected {loops:?}"
        );
    }
}

/// The text of `CREATE INDEX name ON table (columns) USING (tiles(...))`
/// with the columns in the order given and a tile size for each.
fn create_tiles(name: &str, table: &str, columns: &[(&str, usize)]) -> String {
    let names: Vec<&str> = columns.iter().map(|c| c.0).collect();
    let sizes: Vec<String> = columns.iter().map(|c| c.1.to_string()).collect();
    format!(
        "CREATE INDEX {name} ON {table} ({}) USING (tiles({}))",
        names.join(", "),
        sizes.join(", ")
    )
}

/// `entries` with every cell in a block of `block × block` cells dropped
/// unless its block is one of the `percent`/100 kept.
fn block_sparse(rng: &mut Rng, entries: Entries, block: i64, percent: usize) -> Entries {
    let mut kept = BTreeMap::new();
    entries
        .into_iter()
        .filter(|(coords, _)| {
            let key: Vec<i64> = coords.iter().map(|c| c / block).collect();
            *kept.entry(key).or_insert_with(|| rng.below(100) < percent)
        })
        .collect()
}

#[test]
fn tiled_products_agree_with_the_reference() {
    let mut rng = Rng(0x0de5_2026_1126_0004);
    let settings = [
        "SET disabled_optimizers = ''; SET threads = 1",
        "SET disabled_optimizers = ''; SET threads = 2",
        "SET disabled_optimizers = 'dense'",
        "SET optimizer = 'none'",
    ];
    // The matrix products of `PRODUCTS` (a Gram matrix of `a` among them).
    let products: Vec<&Product> = PRODUCTS.iter().filter(|p| p.output.len() == 2).collect();
    let (mut tiled_plans, mut plans) = (0, 0);
    for case in 0..30 {
        let (m, k, n) = (1 + rng.below(14), 1 + rng.below(14), 1 + rng.below(14));
        let percent = *rng.pick(&[100, 100, 60, 20, 5]);
        let (sm, sk, sn) = (1 + rng.below(5), 1 + rng.below(5), 1 + rng.below(5));
        // One time in five `b`'s tiles do not fit `a`'s along `k`.
        let sk_b = if rng.below(5) == 0 { sk + 1 } else { sk };
        let db = Database::open_in_memory();
        let shapes: [(&str, Dims, [usize; 2]); 4] = [
            ("a", vec![("i", m), ("k", k)], [sm, sk]),
            ("at", vec![("k", k), ("i", m)], [sk, sm]),
            ("b", vec![("k", k), ("j", n)], [sk_b, sn]),
            ("bt", vec![("j", n), ("k", k)], [sn, sk_b]),
        ];
        let mut tables = BTreeMap::new();
        for (name, dims, tile) in &shapes {
            let sizes: Vec<usize> = dims.iter().map(|d| d.1).collect();
            let mut entries = random(&mut rng, &sizes, percent);
            if rng.below(3) == 0 {
                entries = block_sparse(&mut rng, entries, tile[0].max(tile[1]) as i64, 30);
            }
            store(&db, name, dims, &entries);
            let mut columns = [(dims[0].0, tile[0]), (dims[1].0, tile[1])];
            if rng.below(2) == 0 {
                columns.reverse();
            }
            db.execute(&create_tiles(&format!("{name}_t"), name, &columns))
                .unwrap_or_else(|e| panic!("case {case}: {e}"));
            tables.insert(*name, entries);
        }
        for product in &products {
            let context = format!("case {case} ({m}×{k}×{n} in {sm}×{sk}×{sn} tiles, {percent}%)");
            let plan = agree_under_every_setting(&db, product, &tables, &settings, &context);
            if plan.contains("tiled matrix product") {
                tiled_plans += 1;
                let fits = sk == sk_b || product.text.contains("a[i,k] * a[i,l]");
                assert!(fits, "case {case}: tiles of other sizes along k\n{plan}");
            }
            plans += 1;
        }
    }
    assert!(
        tiled_plans * 3 >= plans,
        "{tiled_plans} of {plans} plans run over tiles"
    );
}

#[test]
fn explain_names_the_tiles_and_the_phase_switches_them_off() {
    let mut rng = Rng(0x0de5_2026_1126_0005);
    let db = Database::open_in_memory();
    store(
        &db,
        "p",
        &[("i", 10), ("k", 10)],
        &random(&mut rng, &[10, 10], 100),
    );
    db.execute("CREATE INDEX p_t ON p (i, k) USING (tiles(4, 4))")
        .expect("tiles");
    db.execute("CREATE INDEX p_tt ON p (k, i) USING (tiles(5, 4))")
        .expect("tiles");
    let plan = explain(&db, "c[i,j] = SUM(k) p[i,k] * p[k,j]");
    assert!(
        plan.contains(
            "tiled matrix product: p.v[i,k] USING p_t (9 of 3 × 3 tiles of 4 × 4) times \
             p.v[k,j] USING p_t (9 of 3 × 3 tiles of 4 × 4)"
        ),
        "{plan}"
    );
    // A Gram matrix over `p_tt`: its tiles of 5 (along `p`'s `k`, here
    // `i`) × 4 (along `p`'s `i`, here the summed `k`).
    db.execute("DROP INDEX p_t").expect("drop");
    let gram = "c[i,j] = SUM(k) p[k,i] * p[k,j]";
    let plan = explain(&db, gram);
    assert!(
        plan.contains(
            "tiled matrix product: p.v[k,i] USING p_tt (6 of 2 × 3 tiles of 5 × 4) times \
             p.v[k,j] USING p_tt (6 of 2 × 3 tiles of 5 × 4)"
        ),
        "{plan}"
    );
    // Along `k`, `p_tt` has tiles of 4 for `p[k,i]` and of 5 for `p[j,k]`.
    let unfit = explain(&db, "c[i,j] = SUM(k) p[k,i] * p[j,k]");
    assert!(!unfit.contains("tiled matrix product"), "{unfit}");
    // 300 × 300 in tiles of 64: the last row and column of tiles are cut
    // short, and the cost counts only their cells within the dimensions
    // (counted whole, the tiles would seem dearer than the arrays).
    store(
        &db,
        "q",
        &[("i", 300), ("k", 300)],
        &random(&mut rng, &[300, 300], 100),
    );
    db.execute("CREATE INDEX q_t ON q (i, k) USING (tiles(64, 64))")
        .expect("tiles");
    let edges = explain(&db, "c[i,j] = SUM(k) q[i,k] * q[k,j]");
    assert!(
        edges.contains("USING q_t (25 of 5 × 5 tiles of 64 × 64)"),
        "{edges}"
    );
    db.execute("SET disabled_optimizers = 'dense'")
        .expect("set");
    let off = explain(&db, gram);
    assert!(!off.contains("matrix product"), "{off}");
}

#[test]
fn a_tiled_product_over_the_memory_limit_is_an_error() {
    let db = ones();
    db.execute("CREATE INDEX p_t ON p (i, k) USING (tiles(100, 100))")
        .expect("tiles");
    assert!(explain(&db, "c[i,j] = SUM(k) p[i,k] * p[k,j]").contains("tiled matrix product"));
    // `C`'s array alone takes 720 kB.
    refused_over_the_limit(&db, "500kB");
}

#[test]
fn tiles_that_are_not_finite_run_as_the_loops() {
    // The tiles would multiply the infinity at (1, 1) by the absent 0 of
    // `b` at (1, 0).
    let db = non_finite_operands();
    db.execute_all(
        "CREATE INDEX a_t ON a (i, k) USING (tiles(2, 2));\n\
         CREATE INDEX b_t ON b (k, j) USING (tiles(2, 2));",
    )
    .expect("tiles");
    let statement = "c[i,j] = SUM(k) a[i,k] * b[k,j]";
    assert!(explain(&db, statement).contains("tiled matrix product"));
    let rows = |setting: &str| {
        db.execute_all(&format!("{setting};\n{statement};"))
            .expect("runs");
        lines(&db.execute("SELECT * FROM c").expect("rows"))
    };
    let tiled = rows("SET disabled_optimizers = ''");
    let loops = rows("SET disabled_optimizers = 'dense'");
    assert_eq!(tiled, loops);
    assert!(tiled.contains(&"1|0|8.0".to_string()), "{tiled:?}");
}

/// `entries` with every value made a non-integer (`v · 0.37 + 0.011`), so
/// that sums taken in another order round differently.
fn inexact(entries: &Entries) -> Entries {
    entries
        .iter()
        .map(|(c, &v)| (c.clone(), v * 0.37 + 0.011))
        .collect()
}

/// Fused passes (the `fuse` phase: SystemML's Row and MAgg) over a driver
/// split into several chunks, with results that add by rows and into
/// partial arrays: each is
/// bit-identical to the queries run one by one (`fuse` off) on 1, 2 and
/// 4 threads, with values whose sums round by order, and gives the loops'
/// answer (the optimizer off) on small-integer values.
#[test]
fn fused_passes_agree_with_each_query_on_its_own() {
    let mut rng = Rng(0x0f05_2026_1126_0001);
    let (m, n) = (600, 400);
    let shapes: [(&str, Dims, usize); 8] = [
        ("x", vec![("i", m), ("j", n)], 60),
        ("xs", vec![("i", m), ("j", n)], 5),
        ("z", vec![("i", m), ("j", n)], 100),
        ("z2", vec![("i", m), ("j", n)], 100),
        ("v", vec![("j", n), ("k", 8)], 100),
        ("u", vec![("i", m), ("k", 8)], 100),
        ("y", vec![("j", n)], 100),
        ("q", vec![("i", m)], 100),
    ];
    let mut tables = Vec::new();
    for (name, dims, percent) in &shapes {
        let sizes: Vec<usize> = dims.iter().map(|d| d.1).collect();
        tables.push((*name, dims.clone(), random(&mut rng, &sizes, *percent)));
    }
    // Long rows (which the pass runs row by row) and then rows of at most
    // two entries (which it runs in blocks of entries), in one table.
    let mut mixed = random(&mut rng, &[m / 2, n], 60);
    for i in m / 2..m {
        for _ in 0..rng.below(3) {
            let j = rng.below(n) as i64;
            mixed.insert(vec![i as i64, j], rng.below(9) as f64 - 4.0);
        }
    }
    tables.push(("xm", vec![("i", m), ("j", n)], mixed));
    let exact = Database::open_in_memory();
    let rounding = Database::open_in_memory();
    for (name, dims, entries) in &tables {
        store(&exact, name, dims, entries);
        store(&rounding, name, dims, &inexact(entries));
    }
    let statements = [
        // Row: Xᵀ(q ⊙ (X y)), the result added into partial arrays.
        "c[j] = SUM(i) x[i,j] * (q[i] * SUM(l) x[i,l] * y[l]);",
        // BATAx.
        "c[j] = SUM(i) x[i,j] * (SUM(l) x[i,l] * y[l]);",
        // The consumer's result added by rows (its first index is the driver's).
        "c[i,k] = SUM(j) x[i,j] * v[j,k] * (SUM(l) x[i,l] * y[l]);",
        // Row and BATAx over long rows and short ones.
        "c[j] = SUM(i) xm[i,j] * (q[i] * SUM(l) xm[i,l] * y[l]);",
        "c[j] = SUM(i) xm[i,j] * (SUM(l) xm[i,l] * y[l]);",
    ];
    for statement in statements {
        let plan = explain(&exact, statement.trim_end_matches(';'));
        assert!(plan.contains("Fused pass over the entries of"), "{plan}");
        assert!(plan.contains("(row-local, from the same pass)"), "{plan}");
        let unfused = answer(&rounding, "SET disabled_optimizers = 'fuse'", statement);
        for threads in [1, 2, 4] {
            let setting = format!("SET disabled_optimizers = ''; SET threads = {threads}");
            let fused = answer(&rounding, &setting, statement);
            assert_eq!(fused, unfused, "{statement} on {threads} threads");
        }
        let loops = answer(&exact, "SET optimizer = 'none'", statement);
        exact
            .execute_all("SET optimizer = 'exact'; SET disabled_optimizers = ''")
            .expect("set");
        let fused = answer(&exact, "SET threads = 2", statement);
        assert!(agree(&fused, &loops), "{statement}\n{fused:?}\n{loops:?}");
    }
    // MAgg: two sums and the count over the same driver in one pass, as
    // SQL writes them.
    let select = "SELECT SUM(xs.v * z.v) AS a, SUM(xs.v * z2.v) AS b, COUNT(*) AS n \
                  FROM xs, z, z2 WHERE xs.i = z.i AND xs.j = z.j AND xs.i = z2.i AND xs.j = z2.j";
    let plan = explain(&rounding, select);
    assert!(
        plan.contains("Fused pass over the entries of xs.v[i,j]: a, b, n"),
        "{plan}"
    );
    let rows = |db: &Database, setting: &str| {
        db.execute_all(setting).expect("set");
        lines(&db.execute(select).expect("runs"))
    };
    let unfused = rows(&rounding, "SET disabled_optimizers = 'fuse'");
    for threads in [1, 2, 4] {
        let setting = format!("SET disabled_optimizers = ''; SET threads = {threads}");
        assert_eq!(rows(&rounding, &setting), unfused, "{threads} threads");
    }
    assert_eq!(
        rows(&exact, "SET disabled_optimizers = ''"),
        rows(&exact, "SET optimizer = 'none'"),
    );
}

/// A fused pass over a matrix with a declared row-order index (CSR, with
/// a compressed or a dense first level) takes where each row starts from
/// the index's pointers: EXPLAIN names the index, and the results are
/// bit-identical to the same pass finding the rows by their coordinates,
/// on 1, 2 and 4 threads, over several chunks of long rows, empty rows and
/// rows of one or two entries.
#[test]
fn a_fused_pass_takes_its_rows_from_a_declared_row_index() {
    let mut rng = Rng(0x0f05_2026_1126_0002);
    let (m, n) = (6000, 400);
    let mut entries = Entries::new();
    for i in 0..m {
        let count = match (i < m / 2, i % 3) {
            (true, 0) => 120,
            (_, 1) => 0,
            _ => rng.below(3),
        };
        for _ in 0..count {
            let j = rng.below(n) as i64;
            entries.insert(
                vec![i as i64, j],
                (rng.below(9) as f64 - 4.0) * 0.37 + 0.011,
            );
        }
    }
    assert!(entries.len() > 2 << 15, "several chunks: {}", entries.len());
    let y = inexact(&random(&mut rng, &[n], 100));
    let q = inexact(&random(&mut rng, &[m], 100));
    let statements = [
        "c[j] = SUM(i) x[i,j] * (SUM(l) x[i,l] * y[l]);",
        "c[j] = SUM(i) x[i,j] * (q[i] * SUM(l) x[i,l] * y[l]);",
    ];
    let database = |index: Option<&str>| {
        let db = Database::open_in_memory();
        store(&db, "x", &[("i", m), ("j", n)], &entries);
        store(&db, "y", &[("j", n)], &y);
        store(&db, "q", &[("i", m)], &q);
        if let Some(using) = index {
            db.execute(&format!("CREATE INDEX x_rows ON x (i, j){using}"))
                .expect("index");
        }
        db
    };
    let scanned = database(None);
    for statement in statements {
        let plan = explain(&scanned, statement.trim_end_matches(';'));
        assert!(plan.contains("Fused pass over the entries of"), "{plan}");
        assert!(!plan.contains("rows from"), "{plan}");
        let expected = answer(&scanned, "SET threads = 1", statement);
        for using in ["", " USING (dense, compressed)"] {
            let indexed = database(Some(using));
            let plan = explain(&indexed, statement.trim_end_matches(';'));
            assert!(plan.contains(", rows from x_rows"), "{using}: {plan}");
            for threads in [1, 2, 4] {
                let got = answer(&indexed, &format!("SET threads = {threads}"), statement);
                assert_eq!(got, expected, "{statement} {using} on {threads} threads");
            }
        }
    }
}

/// A sum of one table by two of its columns whose array would have far
/// more cells than the table has entries (coordinates spread over
/// 600,000 × 400,000) runs as a grouped pass: each entry keyed by its
/// output coordinates, the keys sorted, equal ones added. The sums, the
/// SQL `GROUP BY` with `COUNT(*)`, and a product with a second table give
/// the loops' answer (the optimizer off, and `dense` off), and on 1, 2
/// and 4 threads the same bits, with values whose sums round by order.
#[test]
fn a_sum_by_columns_with_a_huge_array_runs_grouped() {
    let mut rng = Rng(0x0f05_2026_1126_0003);
    let (o, s, c) = (40_000usize, 600_000usize, 400_000usize);
    let mut w = Entries::new();
    for i in 0..o {
        // About 2,000 distinct (s, c) pairs, so groups hold several entries.
        let (si, ci) = (rng.below(50) * 12_000, rng.below(40) * 10_000);
        w.insert(
            vec![i as i64, si as i64, ci as i64],
            rng.below(9) as f64 - 4.0,
        );
    }
    let q = inexact(&random(&mut rng, &[o], 100));
    assert!(w.len() as u64 >= einsql::exec::plan::GROUPED_MIN_ENTRIES);
    // A fresh database for each statement: the loops' run builds indexes
    // that would make loops the cheaper plan of the next one.
    let database = || {
        let db = Database::open_in_memory();
        store(&db, "w", &[("o", o), ("s", s), ("c", c)], &w);
        store(&db, "wi", &[("o", o), ("s", s), ("c", c)], &inexact(&w));
        store(&db, "q", &[("o", o)], &q);
        db
    };
    let statements = [
        "c[s,c] = SUM(o) w[o,s,c];",
        "c[c,s] = SUM(o) w[o,s,c];",
        "c[c] = SUM(o,s) w[o,s,c] * q[o];",
        "c[s,c] = SUM(o) wi[o,s,c];",
    ];
    for statement in statements {
        let db = database();
        let plan = explain(&db, statement.trim_end_matches(';'));
        assert!(plan.contains("result: grouped"), "{plan}");
        let grouped = answer(&db, "SET threads = 1", statement);
        for setting in [
            "SET optimizer = 'none'",
            "SET optimizer = 'exact'; SET disabled_optimizers = 'dense'",
        ] {
            let loops = answer(&db, setting, statement);
            assert!(agree(&grouped, &loops), "{setting}: {statement}");
        }
        db.execute_all("SET optimizer = 'exact'; SET disabled_optimizers = ''")
            .expect("set");
        for threads in [2, 4] {
            let again = answer(&db, &format!("SET threads = {threads}"), statement);
            assert_eq!(again, grouped, "{statement} on {threads} threads");
        }
    }
    let db = database();
    let select = "SELECT s, c, SUM(v) AS t, COUNT(*) AS n FROM w GROUP BY s, c ORDER BY s, c";
    let plan = explain(&db, select);
    assert_eq!(plan.matches("result: grouped").count(), 2, "{plan}");
    let rows = |setting: &str| {
        db.execute_all(setting).expect("set");
        lines(&db.execute(select).expect("runs"))
    };
    let grouped = rows("SET threads = 2");
    assert!(grouped.len() > 1000, "{} groups", grouped.len());
    assert_eq!(grouped, rows("SET optimizer = 'none'"));
    // The sorted pairs count against the memory limit: a clear error,
    // and the table is as it was.
    db.execute_all("SET optimizer = 'exact'; SET memory_limit = '512KB'")
        .expect("limit");
    let error = db
        .execute_all("c[s,c] = SUM(o) w[o,s,c];")
        .expect_err("over the limit");
    assert!(error.to_string().contains("memory"), "{error}");
    db.execute("SET memory_limit = '1GB'").expect("limit");
    assert_eq!(
        lines(&db.execute("SELECT COUNT(*) FROM w").expect("runs")),
        ["40000"]
    );
}

/// BATAx over a matrix of one entry per five rows: the physical phase
/// costs `y` as the `fuse` phase runs it, reading the row sum `#e1`
/// row-local (not scattered into an array of `n` cells), so the two steps
/// become one pass; with `fuse` off `y` reads it at the driver's entries
/// (five cells of `#e1` per entry of the matrix), not scattered either.
/// Both give the same answer, and the loops' (the optimizer off). The
/// `trivial` phase is off: it would keep a product this small as one loop
/// nest, without the row sum.
#[test]
fn a_row_sum_read_in_the_same_pass_is_costed_as_not_scattered() {
    let mut rng = Rng(0x0f05_2026_1126_0002);
    let n = 20_000;
    let mut a = Entries::new();
    for _ in 0..n / 5 {
        let (i, j) = (rng.below(n) as i64, rng.below(n) as i64);
        a.insert(vec![i, j], rng.below(9) as f64 - 3.5);
    }
    let x: Entries = (0..n as i64)
        .map(|k| (vec![k], rng.below(5) as f64 + 0.25))
        .collect();
    let db = Database::open_in_memory();
    store(&db, "a", &[("i", n), ("j", n)], &a);
    store(&db, "x", &[("k", n)], &x);
    db.execute("SET disabled_optimizers = 'trivial'")
        .expect("set");
    let statement = "c[j] = SUM(i) a[i,j] * (SUM(k) a[i,k] * x[k]);";
    let plan = explain(&db, statement.trim_end_matches(';'));
    assert!(
        plan.contains("Fused pass over the entries of a.v[i,k]: #e1, c"),
        "{plan}"
    );
    let fused = answer(&db, "SET threads = 1", statement);
    db.execute("SET disabled_optimizers = 'fuse,trivial'")
        .expect("set");
    let plan = explain(&db, statement.trim_end_matches(';'));
    assert!(!plan.contains("Fused pass"), "{plan}");
    assert!(
        plan.contains("#e1[i] (read at the driver's entries)"),
        "{plan}"
    );
    assert!(agree(&answer(&db, "SET threads = 1", statement), &fused));
    let loops = answer(&db, "SET optimizer = 'none'", statement);
    assert!(agree(&fused, &loops), "{fused:?}\n{loops:?}");
}

/// A fused pass whose row-local operand sits beside a value that is not
/// finite runs its queries one by one, as the loops: the row-local sum
/// of row 0 is exactly 0 (not stored, so the loops never visit the row),
/// and `q` is infinite there, where the pass would multiply ∞ by 0.
#[test]
fn a_fused_pass_beside_a_value_that_is_not_finite_runs_unfused() {
    let x: Entries = [(vec![0, 0], 1.0), (vec![0, 1], -1.0), (vec![1, 0], 2.0)]
        .into_iter()
        .collect();
    let y: Entries = [(vec![0], 1.0), (vec![1], 1.0)].into_iter().collect();
    let q: Entries = [(vec![0], f64::INFINITY), (vec![1], 3.0)]
        .into_iter()
        .collect();
    let mut catalog = Catalog::in_memory();
    for (name, dims, entries) in [
        ("x", vec![("i", 2), ("j", 2)], &x),
        ("y", vec![("j", 2)], &y),
        ("q", vec![("i", 2)], &q),
    ] {
        catalog
            .put(name, Arc::new(tensor(&dims, entries)), false)
            .expect("stored");
    }
    let program = einsql::einsum::compile(
        "c[j] = SUM(i) x[i,j] * (q[i] * SUM(l) x[i,l] * y[l]);",
        &catalog,
    )
    .expect("binds");
    let by_x = QueryChoices {
        driven: Some(0),
        ..QueryChoices::default()
    };
    let choices = PlanChoices {
        eliminate: true,
        queries: [(0, by_x.clone()), (1, by_x)].into_iter().collect(),
    };
    let mut plan = plan_with(&program, &choices).expect("plans");
    einsql::optimizer::fuse::fuse(&mut plan);
    assert!(
        plan.to_string().contains("(row-local, from the same pass)"),
        "{plan}"
    );
    assert_eq!(run_on_one_thread(&plan), (vec![0], vec![12.0]));
}

/// The aligned path: the masked nested sum `#1` is stored at `x`'s
/// coordinates (sharing them), so the step over `x` and `#1` runs as one
/// loop over their entries (EXPLAIN ANALYZE says so), for a total and
/// for an element-wise map, on 1 and 2 threads, with the loops' answer;
/// where a product of `#1` is 0 (dropped, so the coordinates are not
/// shared) the step merges the two inputs' entries, with the same answer.
#[test]
fn aligned_inputs_run_as_one_loop_over_their_entries() {
    let mut rng = Rng(0x0a11_2026_1126_0001);
    let (m, n, r) = (300, 200, 6);
    let db = Database::open_in_memory();
    let x = random(&mut rng, &[m, n], 10);
    store(&db, "x", &[("i", m), ("j", n)], &x);
    let positive = |entries: Entries| -> Entries {
        entries
            .into_iter()
            .map(|(c, v)| (c, v.abs() + 1.0))
            .collect()
    };
    let u = positive(random(&mut rng, &[m, r], 100));
    let v = positive(random(&mut rng, &[n, r], 100));
    store(&db, "u", &[("i", m), ("k", r)], &u);
    store(&db, "v", &[("j", n), ("k", r)], &v);
    // `z` is 0 in one column: `#1` has zeros there, which are dropped.
    let z: Entries = v
        .iter()
        .map(|(c, &x)| (c.clone(), if c[0] == 3 { 0.0 } else { x }))
        .collect();
    store(&db, "z", &[("j", n), ("k", r)], &z);
    let cases = [
        (
            "c[] = SUM(i,j) x[i,j] * ln(0.5 + SUM(k) u[i,k] * v[j,k]);",
            true,
        ),
        ("c[i,j] = x[i,j] * ln(0.5 + SUM(k) u[i,k] * v[j,k]);", true),
        (
            "c[] = SUM(i,j) x[i,j] * ln(0.5 + SUM(k) u[i,k] * z[j,k]);",
            false,
        ),
    ];
    for (statement, shared) in cases {
        let loops = answer(&db, "SET optimizer = 'none'", statement);
        db.execute("SET optimizer = 'exact'").expect("set");
        let analyzed = explain(&db, &format!("ANALYZE {}", statement.trim_end_matches(';')));
        assert_eq!(
            analyzed.contains("one loop over its inputs' shared entries"),
            shared,
            "{statement}\n{analyzed}"
        );
        assert_eq!(
            analyzed.contains("one merge of its inputs' sorted entries"),
            !shared,
            "{statement}\n{analyzed}"
        );
        let one = answer(&db, "SET threads = 1", statement);
        let two = answer(&db, "SET threads = 2", statement);
        assert_eq!(one, two, "{statement}");
        assert!(agree(&one, &loops), "{statement}\n{one:?}\n{loops:?}");
    }
}

/// The merged path: element-wise maps and totals over inputs stored at
/// different coordinates (a sum visits the coordinates either holds, a
/// product those both hold) run as one merge of their sorted entries
/// (EXPLAIN ANALYZE says so), in chunks (the matrices hold more than one
/// chunk's 65,536 entries), with the answer computed here entry by entry
/// on 1 and 2 threads; the three-way tensors compare entries by more than
/// one coordinate.
#[test]
fn element_wise_maps_of_differently_stored_inputs_merge_their_entries() {
    let mut rng = Rng(0x0e1e_2026_1127_0001);
    let db = Database::open_in_memory();
    for (names, dims) in [
        (["x", "y"], vec![("i", 600), ("j", 400)]),
        (["a", "b"], vec![("i", 40), ("j", 30), ("k", 60)]),
    ] {
        let sizes: Vec<usize> = dims.iter().map(|&(_, n)| n).collect();
        let left = random(&mut rng, &sizes, 35);
        let right = random(&mut rng, &sizes, 20);
        store(&db, names[0], &dims, &left);
        store(&db, names[1], &dims, &right);
        let vars = dims.iter().map(|&(v, _)| v).collect::<Vec<_>>().join(",");
        let [l, r] = names.map(|n| format!("{n}[{vars}]"));
        let at = |entries: &Entries, key: &Vec<i64>| entries.get(key).copied().unwrap_or(0.0);
        let union: Vec<&Vec<i64>> = left.keys().chain(right.keys()).collect();
        let map = |f: &dyn Fn(f64, f64) -> f64| -> Entries {
            union
                .iter()
                .map(|&key| (key.clone(), f(at(&left, key), at(&right, key))))
                .filter(|&(_, v)| v != 0.0)
                .collect()
        };
        let total = |f: &dyn Fn(f64, f64) -> f64| -> Entries {
            let mut keys = union.clone();
            keys.sort();
            keys.dedup();
            let sum = keys
                .iter()
                .map(|&key| f(at(&left, key), at(&right, key)))
                .sum();
            Entries::from([(vec![], sum)])
        };
        let cases = [
            (format!("c[{vars}] = {l} + {r};"), map(&|a, b| a + b)),
            (
                format!("c[{vars}] = {l} - 2.5 * {r};"),
                map(&|a, b| a - 2.5 * b),
            ),
            (
                format!("c[{vars}] = {l} * {r} + {l};"),
                map(&|a, b| a * b + a),
            ),
            (
                format!("c[] = SUM({vars}) abs({l} - {r});"),
                total(&|a, b| (a - b).abs()),
            ),
        ];
        for (statement, expected) in cases {
            let analyzed = explain(&db, &format!("ANALYZE {}", statement.trim_end_matches(';')));
            assert!(
                analyzed.contains("one merge of its inputs' sorted entries"),
                "{statement}\n{analyzed}"
            );
            let one = answer(&db, "SET threads = 1", &statement);
            let two = answer(&db, "SET threads = 2", &statement);
            assert_eq!(one, two, "{statement}");
            assert!(agree(&one, &expected), "{statement}");
        }
    }
}

/// A fact table without values keyed by a prefix of its columns (`f[o,n]`
/// names the rest), and its one-key-per-entry results: the sum of the
/// dimension blocks' lookups is one factor of a pass over its entries
/// (Galley's star join), with and without a free variable, with a
/// subtracted term and beside a lookup through a function, against the
/// loops; a driver whose prefix is not a key
/// keeps the loops.
#[test]
fn a_sum_of_lookups_runs_over_the_entries_of_a_keyed_fact_table() {
    let mut rng = Rng(0x5a11_2026_1126_0002);
    let db = Database::open_in_memory();
    let mut rows = Vec::new();
    for o in 0..200 {
        for n in 0..=(o % 4) {
            rows.push(format!("({o}, {n}, {}, {})", rng.below(30), rng.below(40)));
        }
    }
    db.execute(&format!(
        "CREATE TABLE f (o BIGINT, n BIGINT, s BIGINT, p BIGINT, PRIMARY KEY (o, n, s, p));
         INSERT INTO f VALUES {};",
        rows.join(", ")
    ))
    .expect("the fact table loads");
    let a = random(&mut rng, &[30], 70);
    let b = random(&mut rng, &[40], 70);
    let g = random(&mut rng, &[200], 50);
    let u = random(&mut rng, &[30, 5], 60);
    let w = random(&mut rng, &[40, 5], 60);
    store(&db, "a", &[("s", 30)], &a);
    store(&db, "b", &[("p", 40)], &b);
    store(&db, "g", &[("o", 200)], &g);
    // Full: a factor that restricts no entry of `f`.
    store(&db, "h", &[("o", 200)], &random(&mut rng, &[200], 100));
    store(
        &db,
        "q",
        &[("o", 200), ("n", 4)],
        &random(&mut rng, &[200, 4], 40),
    );
    store(&db, "u", &[("s", 30), ("k", 5)], &u);
    store(&db, "w", &[("p", 40), ("k", 5)], &w);
    let cases = [
        "c[o,n] = SUM(s,p) f[o,n,s,p] * (a[s] + b[p] - g[o]);",
        "c[o,n,k] = SUM(s,p) f[o,n,s,p] * (u[s,k] + w[p,k]);",
        "c[o,n,k] = SUM(s,p) f[o,n,s,p] * h[o] * (u[s,k] - w[p,k] + a[s]);",
        "c[o,n] = SUM(s,p) f[o,n,s,p] * sigmoid(q[o,n]) * (a[s] + b[p]);",
        "c[o,n,k] = SUM(s,p) f[o,n,s,p] * relu(q[o,n]) * (u[s,k] - w[p,k]);",
    ];
    for statement in cases {
        let loops = answer(&db, "SET optimizer = 'none'", statement);
        db.execute("SET optimizer = 'exact'").expect("set");
        let driven = explain(&db, statement.trim_end_matches(';'));
        assert!(
            driven.contains("sparse-driven: for each entry of f[o,n,s,p]")
                && (driven.contains("added in the sum")
                    || driven.contains("subtracted in the sum"))
                && driven.contains("result: written at the driver's entries"),
            "{statement}\n{driven}"
        );
        if statement.contains("sigmoid") || statement.contains("relu") {
            assert!(driven.contains("; through "), "{statement}\n{driven}");
        }
        let one = answer(&db, "SET optimizer = 'exact'; SET threads = 1", statement);
        let two = answer(&db, "SET threads = 2", statement);
        assert_eq!(one, two, "{statement}");
        assert!(agree(&one, &loops), "{statement}\n{one:?}\n{loops:?}");
    }
    // A count at the key and one more variable: 1 at each entry's
    // projection, written entry by entry (a count at every variable is
    // the table's pattern, which the loops store).
    let count = "c[o,n,s] = SUM(p) f[o,n,s,p];";
    let loops = answer(&db, "SET optimizer = 'none'", count);
    db.execute("SET optimizer = 'exact'").expect("set");
    let plan = explain(&db, count.trim_end_matches(';'));
    assert!(
        plan.contains("result: written at the driver's entries") && plan.contains("BIGINT"),
        "{plan}"
    );
    assert_eq!(answer(&db, "SET threads = 2", count), loops);
    // (o, n) is no longer a key: the sum over s and p adds two entries.
    db.execute("INSERT INTO f VALUES (0, 0, 29, 39)")
        .expect("it inserts");
    let statement = cases[0];
    db.execute("SET optimizer = 'exact'").expect("set");
    let plan = explain(&db, statement.trim_end_matches(';'));
    assert!(
        !plan.contains("sparse-driven: for each entry of f"),
        "{plan}"
    );
    let loops = answer(&db, "SET optimizer = 'none'", statement);
    let planned = answer(&db, "SET optimizer = 'exact'", statement);
    assert!(agree(&planned, &loops), "{planned:?}\n{loops:?}");
}

/// A layer of a network over a fact table's entries, `c[o,n,k] = SUM(m)
/// h[o,n,m] * w[k,m]` with `w` full, as loops: the innermost loop over
/// `k` adds an entry's row of `w` into the dense accumulator at once
/// (the product path's dense row). Equal to a direct computation with
/// the plan as the optimizer makes it (the dense kernels off) and
/// without the optimizer. The plan is the exact loop-order search's (the
/// `trivial` phase off): on inputs this small the phase keeps the greedy
/// order, whose innermost loop is another.
#[test]
fn a_dense_row_per_entry_is_added_into_the_accumulator_at_once() {
    let mut rng = Rng(0x0de5_2026_1129_0001);
    let db = Database::open_in_memory();
    let (orders, lines, width, hidden) = (40, 4, 6, 5);
    let h = random(&mut rng, &[orders, lines, width], 50);
    let w = random(&mut rng, &[hidden, width], 100);
    store(&db, "h", &[("o", orders), ("n", lines), ("m", width)], &h);
    store(&db, "w", &[("k", hidden), ("m", width)], &w);
    let mut expected = Entries::new();
    for (key, hv) in &h {
        for k in 0..hidden as i64 {
            if let Some(wv) = w.get(&vec![k, key[2]]) {
                *expected.entry(vec![key[0], key[1], k]).or_insert(0.0) += hv * wv;
            }
        }
    }
    expected.retain(|_, v| *v != 0.0);
    let statement = "c[o,n,k] = SUM(m) h[o,n,m] * w[k,m];";
    for setting in [
        "SET optimizer = 'none'",
        "SET optimizer = 'exact'; SET disabled_optimizers = 'dense'",
    ] {
        assert_eq!(answer(&db, setting, statement), expected, "{setting}");
    }
    db.execute("SET disabled_optimizers = 'dense,trivial'")
        .expect("set");
    let plan = explain(&db, "c[o,n,k] = SUM(m) h[o,n,m] * w[k,m]");
    assert!(
        plan.contains("for k: iterate w.v[k,m] (dense)") && plan.contains("sorted/sorted/dense"),
        "{plan}"
    );
}
