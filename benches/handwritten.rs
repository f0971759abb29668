//! Hand-written single-threaded loops for SpMM, SDDMM and MTTKRP over
//! plain arrays: the second baseline, beside scipy, that issue 20 holds
//! the sparse-driven path to ("within 2x of the fastest of scipy and a
//! hand-written Rust loop over the same arrays"). It does not use einsql.
//!
//! `benches/python/systemml.py` writes the arrays it gives scipy as raw
//! little-endian files in a folder and runs this program on them:
//!
//! ```text
//! handwritten <spmm|sddmm|mttkrp> <folder> <rank> [repeat]
//! ```
//!
//! The sparse operand is `X.i.i64`, `X.j.i64` (and `X.k.i64` for
//! MTTKRP's 3-tensor) and `X.v.f64`: coordinates sorted by `i`, then the
//! others, and values. The dense factors are row-major `rank`-column
//! `f64` files: `B.f64` (SpMM: `C[i,:] += x · B[j,:]`), `U.f64` and
//! `V.f64` (SDDMM: `c_e = x · U[i,:] · V[j,:]`), `B.f64` and `C.f64`
//! (MTTKRP: `M[i,:] += t · B[j,:] ⊙ C[k,:]`). Reading the files is not
//! timed; the result array is allocated inside the timed part, as the
//! other libraries allocate theirs. It prints the best time of `repeat`
//! runs (default 5) in seconds and the sum of the result, comma-separated.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [pattern, folder, rank, rest @ ..] = args.as_slice() else {
        eprintln!("usage: handwritten <spmm|sddmm|mttkrp> <folder> <rank> [repeat]");
        std::process::exit(2);
    };
    let rank: usize = rank
        .parse()
        .unwrap_or_else(|_| fail("the rank is not a number"));
    let repeat: usize = rest
        .first()
        .map_or(Ok(5), |r| r.parse())
        .unwrap_or_else(|_| fail("the repeat count is not a number"));
    let ints = |name: &str| -> Vec<usize> {
        read(folder, name)
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
            .collect()
    };
    let floats = |name: &str| -> Vec<f64> {
        read(folder, name)
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect()
    };
    let (i, j, x) = (ints("X.i.i64"), ints("X.j.i64"), floats("X.v.f64"));
    let rows = i.iter().max().map_or(0, |&m| m + 1);
    let run: Box<dyn Fn() -> f64> = match pattern.as_str() {
        "spmm" => {
            let b = floats("B.f64");
            Box::new(move || {
                let mut c = vec![0.0; rows * rank];
                for ((&i, &j), &x) in i.iter().zip(&j).zip(&x) {
                    let to = &mut c[i * rank..(i + 1) * rank];
                    for (cell, &b) in to.iter_mut().zip(&b[j * rank..(j + 1) * rank]) {
                        *cell += x * b;
                    }
                }
                c.iter().sum()
            })
        }
        "sddmm" => {
            let (u, v) = (floats("U.f64"), floats("V.f64"));
            Box::new(move || {
                let out: Vec<f64> = i
                    .iter()
                    .zip(&j)
                    .zip(&x)
                    .map(|((&i, &j), &x)| {
                        let (u, v) = (&u[i * rank..(i + 1) * rank], &v[j * rank..(j + 1) * rank]);
                        x * u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>()
                    })
                    .collect();
                out.iter().sum()
            })
        }
        "mttkrp" => {
            let (k, b, c) = (ints("X.k.i64"), floats("B.f64"), floats("C.f64"));
            Box::new(move || {
                let mut m = vec![0.0; rows * rank];
                for (((&i, &j), &k), &t) in i.iter().zip(&j).zip(&k).zip(&x) {
                    let (b, c) = (&b[j * rank..(j + 1) * rank], &c[k * rank..(k + 1) * rank]);
                    let to = &mut m[i * rank..(i + 1) * rank];
                    for ((cell, &b), &c) in to.iter_mut().zip(b).zip(c) {
                        *cell += t * b * c;
                    }
                }
                m.iter().sum()
            })
        }
        other => fail(&format!("unknown pattern '{other}': spmm, sddmm or mttkrp")),
    };
    let mut best = f64::INFINITY;
    let mut sum = 0.0;
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        sum = std::hint::black_box(run());
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!("{best:.6},{sum:?}");
}

/// The bytes of `folder/name`.
fn read(folder: &str, name: &str) -> Vec<u8> {
    let path = format!("{folder}/{name}");
    std::fs::read(&path).unwrap_or_else(|e| fail(&format!("{path}: {e}")))
}

fn fail(message: &str) -> ! {
    eprintln!("handwritten: {message}");
    std::process::exit(2)
}
