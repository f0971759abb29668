//! Fibertree build and statistics times on random tensors of about a
//! million entries: the identity order (leaf shared with the Arrow buffers)
//! against reordered indexes, dense and hashed levels, and the degree
//! statistics computed on every store. Criterion reports time per build and
//! entries per second. The statistics are also timed on the FROSTT-style
//! `tensors/med.tns` of the datasets folder (`$EINSQL_DATA` or
//! `../shared/datasets`; skipped without it), the tensor of the MTTKRP
//! measurements in `docs/benchmarks.md`.

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use einsql::io::ReadOptions;
use einsql::progress::NoProgress;
use einsql::storage::fibertree::{FiberTree, IndexSpec, LevelFormat};
use einsql::storage::statistics::Statistics;
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};

/// A tensor of `rows` random entries (before combining duplicates) with the
/// given sizes and Float64 values.
fn random_tensor(sizes: &[u64], rows: usize, seed: u64) -> Tensor {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let coords = sizes
        .iter()
        .map(|&s| (0..rows).map(|_| (next() % s) as i64).collect())
        .collect();
    let values = (0..rows).map(|r| r as f64).collect();
    Tensor::from_coo(Coo {
        dims: sizes
            .iter()
            .enumerate()
            .map(|(d, &s)| DimensionSpec::new(format!("d{d}"), Some(s)))
            .collect(),
        coords,
        values: vec![("v".to_string(), ValueData::Float64(values))],
        column_order: None,
    })
    .expect("valid random tensor")
}

fn builds(c: &mut Criterion) {
    use LevelFormat::{Compressed, Dense, Hashed};
    let matrix = random_tensor(&[100_000, 100_000], 1_000_000, 7);
    let cube = random_tensor(&[1_000, 1_000, 1_000], 1_000_000, 11);
    let cases: [(&str, &Tensor, IndexSpec); 7] = [
        ("2d identity", &matrix, IndexSpec::identity(2)),
        ("2d transposed", &matrix, IndexSpec::compressed(vec![1, 0])),
        (
            "2d dense/compressed",
            &matrix,
            IndexSpec::new(vec![0, 1], vec![Dense, Compressed]),
        ),
        (
            "2d compressed/hashed",
            &matrix,
            IndexSpec::new(vec![0, 1], vec![Compressed, Hashed]),
        ),
        ("3d identity", &cube, IndexSpec::identity(3)),
        ("3d (2,0,1)", &cube, IndexSpec::compressed(vec![2, 0, 1])),
        ("3d (1,2,0)", &cube, IndexSpec::compressed(vec![1, 2, 0])),
    ];
    let mut group = c.benchmark_group("fibertree build");
    for (name, tensor, spec) in &cases {
        group.throughput(Throughput::Elements(tensor.nnz() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), spec, |b, spec| {
            b.iter(|| FiberTree::build(tensor, spec).expect("valid spec"))
        });
    }
    group.finish();

    let med = common::datasets().map(|dir| {
        einsql::io::tns::read(
            &dir.join("tensors/med.tns"),
            &ReadOptions::default(),
            &NoProgress,
        )
        .expect("readable med.tns")
    });
    let mut group = c.benchmark_group("statistics");
    let tensors = [
        ("2d", Some(&matrix)),
        ("3d", Some(&cube)),
        ("med.tns", med.as_ref()),
    ];
    for (name, tensor) in tensors.into_iter().filter_map(|(n, t)| Some((n, t?))) {
        group.throughput(Throughput::Elements(tensor.nnz() as u64));
        group.bench_function(name, |b| {
            b.iter(|| Statistics::compute(tensor.dims(), tensor.data()))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = builds
}
criterion_main!(benches);
