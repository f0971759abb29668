//! Matrix Market load throughput (MB/s of text, parsing plus building the
//! tensor): a synthetic coordinate real general file of about 80 MB,
//! generated into a temporary directory when the benchmark starts (sorted,
//! so that parsing dominates), and the largest `.mtx` file of the public
//! datasets (when they are present).

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use einsql::io::{ReadOptions, matrix_market};
use einsql::progress::NoProgress;

/// Entries of the synthetic matrix (about 27 bytes per line).
const ENTRIES: usize = 3_000_000;

/// Writes a synthetic 1-based coordinate real general file with scattered
/// coordinates and full-precision values.
fn synthetic(dir: &Path) -> PathBuf {
    let path = dir.join("synthetic.mtx");
    let file = std::fs::File::create(&path).expect("create synthetic file");
    let mut out = std::io::BufWriter::new(file);
    let n = 1_000_000u64;
    writeln!(out, "%%MatrixMarket matrix coordinate real general").expect("write");
    writeln!(out, "{n} {n} {ENTRIES}").expect("write");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0..ENTRIES as u64 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // Three entries per row, in increasing column order, so that the
        // tensor is built without sorting and the parser dominates.
        let row = k / 3 + 1;
        let col = (k % 3) * (n / 3) + (state >> 33) % (n / 3) + 1;
        let value = (state >> 11) as f64 / (1u64 << 53) as f64;
        writeln!(out, "{row} {col} {value}").expect("write");
    }
    out.flush().expect("flush");
    path
}

/// The largest `.mtx` file under the datasets' `matrices/` folder.
fn largest_dataset_matrix() -> Option<PathBuf> {
    let root = std::env::var_os("EINSQL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"))
        .join("matrices");
    let mut pending = vec![root];
    let mut best: Option<(u64, PathBuf)> = None;
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "mtx") {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                if best.as_ref().is_none_or(|(s, _)| size > *s) {
                    best = Some((size, path));
                }
            }
        }
    }
    best.map(|(_, path)| path)
}

fn bench_read(c: &mut Criterion, name: &str, path: &Path) {
    let bytes = std::fs::metadata(path).expect("bench file").len();
    let mut group = c.benchmark_group("matrix_market_read");
    group.throughput(Throughput::Bytes(bytes));
    group.sample_size(10);
    group.bench_function(name, |b| {
        b.iter(|| {
            matrix_market::read(path, &ReadOptions::default(), &NoProgress)
                .expect("bench file loads")
        })
    });
    group.finish();
}

fn matrix_market_throughput(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = synthetic(dir.path());
    bench_read(c, "synthetic_80MB", &path);
    match largest_dataset_matrix() {
        Some(path) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            bench_read(c, &name, &path);
        }
        None => eprintln!("datasets not found: skipping the dataset benchmark (set EINSQL_DATA)"),
    }
}

criterion_group!(benches, matrix_market_throughput);
criterion_main!(benches);
