//! Sparse kernels on the executor: SpMV, SpMM, SDDMM, MTTKRP and triangle
//! counting over the Matrix Market matrices and FROSTT tensors of the
//! datasets folder (`$EINSQL_DATA` or `../shared/datasets`; without it
//! there is nothing to time).
//!
//! Every kernel is an einsum statement. Two costs are timed: what a user
//! gets from `Database::execute` (parse, bind, plan, run, store the result
//! as a table), and the run of a pre-built physical plan alone
//! (`einsql::exec::run`). The executor runs on one thread, like the
//! baselines. Next to SpMV, a hand-written CSR loop over the same matrix
//! (`usize` row pointers and column indices, `f64` values) and a STREAM
//! triad over three 64 MiB arrays: SpMV's bytes (row pointers, column
//! indices, values, `x` and `y`, each read or written once) divided by its
//! time give GB/s comparable with the triad's. Before timing, each SpMV
//! result is checked against the CSR loop's and a summary of both (with
//! their ratio) is printed.

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use einsql::catalog::Catalog;
use einsql::exec::{ExecOptions, PhysicalPlan};
use einsql::io::ReadOptions;
use einsql::progress::NoProgress;
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};
use einsql::{Database, Result};

/// Columns of the dense factor matrices of SpMM, SDDMM and MTTKRP.
const RANK: u64 = 16;

/// Elements of each STREAM triad array: 64 MiB of `f64`.
const TRIAD_LEN: usize = 8 << 20;

/// SpMV matrices, smallest first (pattern matrices get the value 1).
const SPMV: [&str; 4] = [
    "lagraph/cryg2500.mtx",
    "lagraph/bcsstk13.mtx",
    "lagraph_dnn/sparse-images-1024_subset.mtx",
    "lagraph/pushpull.mtx",
];

/// SpMM, SDDMM and triangle-counting matrices.
const LARGER: [&str; 2] = ["lagraph/bcsstk13.mtx", "lagraph/pushpull.mtx"];

/// The file name without its extension.
fn stem(file: &str) -> &str {
    Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(file)
}

/// A Matrix Market file read by the engine's loader, with a value of 1 on
/// every entry of a pattern matrix (a bag) so that every kernel is `f64`.
fn read_matrix(path: &Path) -> Result<Tensor> {
    let tensor = einsql::io::matrix_market::read(path, &ReadOptions::default(), &NoProgress)?;
    if !tensor.is_bag() {
        return Ok(tensor);
    }
    let mut coo = tensor.to_coo();
    coo.values = vec![("v".to_string(), ValueData::Float64(vec![1.0; tensor.nnz()]))];
    coo.column_order = None;
    Tensor::from_coo(coo)
}

/// A dense tensor over `sizes` with deterministic values in `[0.5, 1.5)`.
fn dense(names: &[&str], sizes: &[u64]) -> Result<Tensor> {
    let count: u64 = sizes.iter().product();
    let mut coords: Vec<Vec<i64>> = vec![Vec::with_capacity(count as usize); sizes.len()];
    let mut values = Vec::with_capacity(count as usize);
    for n in 0..count {
        let mut rest = n;
        for (column, &size) in coords.iter_mut().zip(sizes).rev() {
            column.push((rest % size) as i64);
            rest /= size;
        }
        values.push(0.5 + ((n * 2_654_435_761) % 1000) as f64 / 1000.0);
    }
    Tensor::from_coo(Coo {
        dims: names
            .iter()
            .zip(sizes)
            .map(|(name, &size)| DimensionSpec::new(*name, Some(size)))
            .collect(),
        coords,
        values: vec![("v".to_string(), ValueData::Float64(values))],
        column_order: None,
    })
}

/// One kernel over named tables: a database holding them (the user's
/// path) and the pre-built plan of the same statement.
struct Kernel {
    db: Database,
    statement: String,
    plan: PhysicalPlan,
    options: ExecOptions,
}

impl Kernel {
    fn new(tables: Vec<(&str, Tensor)>, statement: &str) -> Result<Kernel> {
        let db = Database::open_in_memory();
        db.set_threads(1);
        let mut catalog = Catalog::in_memory();
        for (name, tensor) in tables {
            db.create_table_from_tensor(name, tensor)?;
            catalog.put(name, db.table(name)?, false)?;
        }
        let program = einsql::einsum::compile(statement, &catalog)?;
        let plan = einsql::exec::plan(&program)?;
        let options = ExecOptions {
            threads: 1,
            ..ExecOptions::default()
        };
        Ok(Kernel {
            db,
            statement: statement.to_string(),
            plan,
            options,
        })
    }

    /// The user's path: the statement through the database.
    fn execute(&self) -> Result<()> {
        self.db.execute(&self.statement).map(|_| ())
    }

    /// The pre-built plan's run; returns the first output.
    fn run(&self) -> Result<Arc<Tensor>> {
        let mut outputs = einsql::exec::run(&self.plan, &self.options, &NoProgress)?;
        outputs
            .pop()
            .map(|(_, t)| t)
            .ok_or_else(|| einsql::Error::Invalid("the plan has no output".to_string()))
    }
}

/// A matrix in compressed sparse row form, the baseline's layout.
struct Csr {
    rowptr: Vec<usize>,
    col: Vec<usize>,
    val: Vec<f64>,
    cols: usize,
}

impl Csr {
    /// The CSR form of a two-dimensional `f64` tensor (stored row-major).
    fn new(tensor: &Tensor) -> Option<Csr> {
        let rows = usize::try_from(tensor.dims().first()?.size).ok()?;
        let cols = usize::try_from(tensor.dims().get(1)?.size).ok()?;
        let val = tensor
            .annotation_columns()
            .first()?
            .as_any()
            .downcast_ref::<arrow::array::Float64Array>()?
            .values()
            .to_vec();
        let mut rowptr = vec![0usize; rows + 1];
        for &i in tensor.coords(0) {
            rowptr[usize::try_from(i).ok()? + 1] += 1;
        }
        for r in 0..rows {
            rowptr[r + 1] += rowptr[r];
        }
        let col = tensor
            .coords(1)
            .iter()
            .map(|&j| usize::try_from(j).ok())
            .collect::<Option<Vec<_>>>()?;
        Some(Csr {
            rowptr,
            col,
            val,
            cols,
        })
    }

    fn rows(&self) -> usize {
        self.rowptr.len() - 1
    }

    /// `y = A x`, the straightforward loop.
    // The textbook form the issue names as the baseline, kept as written.
    #[allow(clippy::needless_range_loop)]
    fn spmv(&self, x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.rows()];
        for row in 0..self.rows() {
            for k in self.rowptr[row]..self.rowptr[row + 1] {
                y[row] += self.val[k] * x[self.col[k]];
            }
        }
        y
    }

    /// The bytes one SpMV reads and writes, each array once.
    fn bytes(&self) -> u64 {
        let words = self.rowptr.len() + self.col.len() + self.val.len() + self.cols + self.rows();
        8 * words as u64
    }
}

/// STREAM triad: `a = b + s·c`.
fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
        *a = b + s * c;
    }
}

/// The values of a one-dimensional result by coordinate (0 where absent).
fn vector(tensor: &Tensor, len: usize) -> Vec<f64> {
    let mut out = vec![0.0; len];
    let values = tensor
        .annotation_columns()
        .first()
        .and_then(|a| a.as_any().downcast_ref::<arrow::array::Float64Array>());
    if let Some(values) = values {
        for (&i, &v) in tensor.coords(0).iter().zip(values.values().iter()) {
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
                *slot = v;
            }
        }
    }
    out
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn bench_triad(c: &mut Criterion) {
    let mut a = vec![0.0f64; TRIAD_LEN];
    let b = vec![1.0f64; TRIAD_LEN];
    let d = vec![2.0f64; TRIAD_LEN];
    let mut group = c.benchmark_group("triad");
    group.throughput(Throughput::BytesDecimal(3 * 8 * TRIAD_LEN as u64));
    group.bench_function("3x64MiB", |bench| {
        bench.iter(|| triad(black_box(&mut a), black_box(&b), black_box(&d), 3.0))
    });
    group.finish();
}

fn bench_spmv(c: &mut Criterion) {
    let Some(data) = common::datasets() else {
        eprintln!("kernels: datasets folder not found (set EINSQL_DATA); nothing to time");
        return;
    };
    let mut group = c.benchmark_group("spmv");
    for file in SPMV {
        let name = stem(file);
        let setup = || -> Result<(Kernel, Csr, Vec<f64>)> {
            let a = read_matrix(&data.join("matrices").join(file))?;
            let n = a.dims()[1].size;
            let x = dense(&["j"], &[n])?;
            let xs = vector(&x, n as usize);
            let csr = Csr::new(&a)
                .ok_or_else(|| einsql::Error::Invalid(format!("{file} is not a matrix")))?;
            let kernel = Kernel::new(vec![("A", a), ("x", x)], "y[i] = SUM(j) A[i,j] * x[j];")?;
            Ok((kernel, csr, xs))
        };
        let (kernel, csr, x) = match setup() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("kernels: skipping SpMV on {file}: {e}");
                continue;
            }
        };
        let expected = csr.spmv(&x);
        match kernel.run() {
            Ok(y) => {
                let got = vector(&y, csr.rows());
                let worst = got
                    .iter()
                    .zip(&expected)
                    .map(|(g, e)| (g - e).abs() / e.abs().max(1.0))
                    .fold(0.0, f64::max);
                assert!(worst < 1e-9, "SpMV on {file} differs from CSR by {worst}");
            }
            Err(e) => {
                eprintln!("kernels: SpMV on {file} failed: {e}");
                continue;
            }
        }
        let einsql = median(51, || {
            black_box(kernel.run().ok());
        });
        let baseline = median(51, || {
            black_box(csr.spmv(black_box(&x)));
        });
        eprintln!(
            "spmv {name}: {} rows, {} nnz, {} bytes; median run {:?}, CSR {:?}, ratio {:.2}",
            csr.rows(),
            csr.val.len(),
            csr.bytes(),
            einsql,
            baseline,
            einsql.as_secs_f64() / baseline.as_secs_f64()
        );
        group.throughput(Throughput::BytesDecimal(csr.bytes()));
        group.bench_function(BenchmarkId::new("execute", name), |b| {
            b.iter(|| kernel.execute().ok())
        });
        group.bench_function(BenchmarkId::new("run", name), |b| {
            b.iter(|| kernel.run().ok())
        });
        group.bench_function(BenchmarkId::new("csr", name), |b| {
            b.iter(|| csr.spmv(black_box(&x)))
        });
    }
    group.finish();
}

/// Times the user's path and the plan's run of one kernel, after checking
/// that it runs.
fn bench_kernel(
    c: &mut Criterion,
    group: &str,
    name: &str,
    setup: impl FnOnce() -> Result<Kernel>,
) {
    let kernel = match setup() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("kernels: skipping {group} on {name}: {e}");
            return;
        }
    };
    match kernel.run() {
        Ok(out) => eprintln!("{group} {name}: result has {} entries", out.nnz()),
        Err(e) => {
            eprintln!("kernels: {group} on {name} failed: {e}");
            return;
        }
    }
    let mut g = c.benchmark_group(group);
    // These take tens to hundreds of milliseconds: ten samples keep the
    // run brief.
    g.sample_size(10);
    g.bench_function(BenchmarkId::new("execute", name), |b| {
        b.iter(|| kernel.execute().ok())
    });
    g.bench_function(BenchmarkId::new("run", name), |b| {
        b.iter(|| kernel.run().ok())
    });
    g.finish();
}

fn bench_matrix_kernels(c: &mut Criterion) {
    let Some(data) = common::datasets() else {
        return;
    };
    for file in LARGER {
        let path = data.join("matrices").join(file);
        let name = stem(file);
        bench_kernel(c, "spmm", name, || {
            let a = read_matrix(&path)?;
            let b = dense(&["j", "k"], &[a.dims()[1].size, RANK])?;
            Kernel::new(vec![("A", a), ("B", b)], "C[i,k] = SUM(j) A[i,j] * B[j,k];")
        });
        bench_kernel(c, "sddmm", name, || {
            let a = read_matrix(&path)?;
            let u = dense(&["i", "k"], &[a.dims()[0].size, RANK])?;
            let v = dense(&["j", "k"], &[a.dims()[1].size, RANK])?;
            Kernel::new(
                vec![("A", a), ("U", u), ("V", v)],
                "C[i,j] = SUM(k) A[i,j] * U[i,k] * V[j,k];",
            )
        });
        bench_kernel(c, "triangles", name, || {
            Kernel::new(
                vec![("A", read_matrix(&path)?)],
                "t = SUM(i,j,k) A.*[i,j] * A.*[j,k] * A.*[i,k];",
            )
        });
    }
}

fn bench_mttkrp(c: &mut Criterion) {
    let Some(data) = common::datasets() else {
        return;
    };
    bench_kernel(c, "mttkrp", "med", || {
        let path = data.join("tensors/med.tns");
        let t = einsql::io::tns::read(&path, &ReadOptions::default(), &NoProgress)?;
        let b = dense(&["j", "r"], &[t.dims()[1].size, RANK])?;
        let d = dense(&["k", "r"], &[t.dims()[2].size, RANK])?;
        Kernel::new(
            vec![("T", t), ("B", b), ("D", d)],
            "M[i,r] = SUM(j,k) T[i,j,k] * B[j,r] * D[k,r];",
        )
    });
}

criterion_group!(
    benches,
    bench_triad,
    bench_spmv,
    bench_matrix_kernels,
    bench_mttkrp
);
criterion_main!(benches);
