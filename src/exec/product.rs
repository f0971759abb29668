//! The fast path for products of inputs, optionally under `SUM`: SpMV,
//! SpMM, SDDMM, MTTKRP, triangle and subgraph counting.
//!
//! Values are monomorphized (`i64` with overflow checks, `i128` for
//! `HUGEINT`s and for integer runs that overflow 64 bits, or `f64`); every
//! loop intersects the fibers of the inputs read there (the driver is
//! iterated, the others looked up by dense slot, hash probe or galloping
//! seek; an innermost loop over two sorted fibers merges them, or maps the
//! one that stays while the loop above runs and scans the other; a loop
//! that reads one input's sorted fiber walks its coordinates directly,
//! which a fact table's key levels do once per row; an innermost output
//! loop over a dense leaf adds the leaf's row into the dense accumulator
//! at once, as SpMM's `k` in `SUM(m) X[i,m] * W[k,m]`); sibling
//! subtrees of a factorized loop nest run one after the other and their
//! sums multiply; a factor is multiplied in at the depth where its last
//! index is bound, and the aggregated inner loops return their sums to the
//! loop above (pushed-down aggregation), so the inner loop of SpMV is one
//! multiply-add per stored entry of the row.
//!
//! An integer kernel runs on `i64` first, so that exact 64-bit sums and
//! products cost what they always did. When a step would overflow (a
//! product, a sum, or a `HUGEINT` input value beyond 64 bits), the run
//! stops with [`Error::Overflow`] and the kernel runs again on `i128`, with
//! overflow checks at 128 bits; its entries are stored as `BIGINT` if they
//! all fit, else as `HUGEINT` (see [`Finished`]). A kernel with a
//! `HUGEINT` input runs on `i128` from the start.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::ir::{AggOp, ScalarOp, Value};
use crate::storage::ValueType;
use crate::storage::fibertree::{Cursor, Fiber, Level, LevelFormat};

use super::ExecOptions;
use super::accumulate::{Accumulate, Accumulator, AccumulatorPool, Entries, Finished, RUN};
use super::control::{CHECK_EVERY, Control, rows_of};
use super::kernel::{Cands, Kernel, Vals, Worker, entry_bytes, output_key};
use super::plan::Node;
use super::run::{Chunks, run_chunks, split, split_sums, top_weights};

/// A numeric type of the fast path.
trait Num: Accumulate + PartialEq + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
    /// `self * other` (an error on integer overflow).
    fn times(self, other: Self) -> Result<Self>;
    /// The values of an input as this type ([`Error::Overflow`] when an
    /// integer does not fit).
    fn typed(values: Vals<'_>) -> Result<Typed<'_, Self>>;
    /// `n` copies summed.
    fn repeat(self, n: u128) -> Result<Self>;
    /// Entries in this type, in runs stored one after another, as the
    /// run's result.
    fn finished(runs: Vec<Entries<Self>>) -> Finished;
    /// The rows an entry of this value stands for in a row budget.
    fn rows(self) -> u64;
    /// Pushes the entries of rows `first..end` of `rows` (their sums
    /// times `scale`) computed with a shortcut that skips the exact
    /// loop's zero tests (see [`SlotProbes::sum`]; `x` is the only
    /// probe's values), as long as the shortcut is sure to give the
    /// exact loop's answer, and returns the first row it is not sure of
    /// (`end` when none).
    fn quick_rows(
        rows: &Rows<'_, Self>,
        x: &[Self],
        first: usize,
        end: usize,
        scale: Self,
        out: &mut Entries<Self>,
    ) -> usize;
}

impl Num for i64 {
    const ZERO: i64 = 0;
    const ONE: i64 = 1;

    #[inline]
    fn times(self, other: i64) -> Result<i64> {
        self.checked_mul(other)
            .ok_or_else(|| Error::Overflow(format!("* of {self}, {other}")))
    }

    fn typed(values: Vals<'_>) -> Result<Typed<'_, i64>> {
        Ok(match values {
            Vals::Int(v) => Typed::Values(Cow::Borrowed(v)),
            Vals::Huge(v) => Typed::Values(Cow::Owned(
                v.iter()
                    .map(|&x| {
                        i64::try_from(x)
                            .map_err(|_| Error::Overflow(format!("{x} does not fit in BIGINT")))
                    })
                    .collect::<Result<_>>()?,
            )),
            Vals::Bool(b) => Typed::Values(Cow::Owned(b.iter().map(i64::from).collect())),
            Vals::Float(v) => Typed::Values(Cow::Owned(v.iter().map(|&x| x as i64).collect())),
            Vals::One => Typed::One,
        })
    }

    fn finished(runs: Vec<Entries<i64>>) -> Finished {
        Finished::Int(runs)
    }

    fn rows(self) -> u64 {
        rows_of(Value::Int(self))
    }

    fn repeat(self, n: u128) -> Result<i64> {
        i64::try_from(n)
            .ok()
            .and_then(|n| self.checked_mul(n))
            .ok_or_else(|| Error::Overflow(format!("SUM of {n} copies of {self}")))
    }

    /// Integer sums check every step for overflow: no shortcut.
    fn quick_rows(
        _: &Rows<'_, i64>,
        _: &[i64],
        first: usize,
        _: usize,
        _: i64,
        _: &mut Entries<i64>,
    ) -> usize {
        first
    }
}

impl Num for i128 {
    const ZERO: i128 = 0;
    const ONE: i128 = 1;

    #[inline]
    fn times(self, other: i128) -> Result<i128> {
        self.checked_mul(other)
            .ok_or_else(|| Error::Overflow(format!("* of {self}, {other} (beyond HUGEINT)")))
    }

    fn typed(values: Vals<'_>) -> Result<Typed<'_, i128>> {
        Ok(match values {
            Vals::Huge(v) => Typed::Values(Cow::Borrowed(v)),
            Vals::Int(v) => Typed::Values(Cow::Owned(v.iter().map(|&x| i128::from(x)).collect())),
            Vals::Bool(b) => Typed::Values(Cow::Owned(b.iter().map(i128::from).collect())),
            Vals::Float(v) => Typed::Values(Cow::Owned(v.iter().map(|&x| x as i128).collect())),
            Vals::One => Typed::One,
        })
    }

    fn finished(runs: Vec<Entries<i128>>) -> Finished {
        Finished::Huge(runs)
    }

    fn rows(self) -> u64 {
        u64::try_from(self).unwrap_or(if self > 0 { u64::MAX } else { 0 })
    }

    fn repeat(self, n: u128) -> Result<i128> {
        i128::try_from(n)
            .ok()
            .and_then(|n| self.checked_mul(n))
            .ok_or_else(|| Error::Overflow(format!("SUM of {n} copies of {self} (beyond HUGEINT)")))
    }

    /// Integer sums check every step for overflow: no shortcut.
    fn quick_rows(
        _: &Rows<'_, i128>,
        _: &[i128],
        first: usize,
        _: usize,
        _: i128,
        _: &mut Entries<i128>,
    ) -> usize {
        first
    }
}

impl Num for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;

    #[inline]
    fn times(self, other: f64) -> Result<f64> {
        Ok(self * other)
    }

    fn typed(values: Vals<'_>) -> Result<Typed<'_, f64>> {
        Ok(match values {
            Vals::Float(v) => Typed::Values(Cow::Borrowed(v)),
            Vals::Int(v) => Typed::Values(Cow::Owned(v.iter().map(|&x| x as f64).collect())),
            Vals::Huge(v) => Typed::Values(Cow::Owned(v.iter().map(|&x| x as f64).collect())),
            Vals::Bool(b) => Typed::Values(Cow::Owned(
                b.iter().map(|x| f64::from(u8::from(x))).collect(),
            )),
            Vals::One => Typed::One,
        })
    }

    fn finished(runs: Vec<Entries<f64>>) -> Finished {
        Finished::Float(runs)
    }

    fn rows(self) -> u64 {
        rows_of(Value::Float(self))
    }

    fn repeat(self, n: u128) -> Result<f64> {
        Ok(self * n as f64)
    }

    /// Each row's terms all summed, zeros included, and the sum kept
    /// only when it is finite and not zero. Then no term was infinite or
    /// NaN (one would have made the sum so), so each term the exact loop
    /// skips (a zero factor, or `c` outside `x`) is ±0 here, and adding
    /// ±0 to a partial sum changes nothing: a partial sum is never -0
    /// (sums start at +0, and +0 + -0 = +0), and `s + ±0 = s` for any
    /// other `s`. So the partial sums are the exact loop's, step for
    /// step; and a non-zero sum has at least one term, so the exact loop
    /// returns it too (not `None`).
    ///
    /// The sums of up to [`CHECK_TOP_EVERY`] rows are computed first and
    /// checked together, so that no row waits for the one before. Not
    /// inlined: one tight loop keeps its sums in registers.
    #[inline(never)]
    fn quick_rows(
        rows: &Rows<'_, f64>,
        x: &[f64],
        first: usize,
        end: usize,
        scale: f64,
        out: &mut Entries<f64>,
    ) -> usize {
        let at = |c: i64| {
            usize::try_from(c)
                .ok()
                .and_then(|c| x.get(c))
                .copied()
                .unwrap_or(0.0)
        };
        let dot = |coords: &[i64], values: &[f64]| {
            let mut sum = 0.0;
            for (&c, &v) in coords.iter().zip(values) {
                sum += v * at(c);
            }
            sum
        };
        let mut sums = [0.0; CHECK_TOP_EVERY];
        let n = end.saturating_sub(first).min(CHECK_TOP_EVERY);
        match (rows.bounds, rows.values) {
            // SpMV's usual shape, with the row bounds and values sliced
            // once (a row that cannot be sliced sums to 0: the exact loop
            // takes it).
            (RowBounds::Each(bounds), Some(values)) => {
                let bounds = bounds.get(first..=first + n).unwrap_or(&[]);
                for (slot, w) in sums.iter_mut().zip(bounds.windows(2)) {
                    if let (Some(coords), Some(values)) =
                        (rows.leaf.get(w[0]..w[1]), values.get(w[0]..w[1]))
                    {
                        *slot = dot(coords, values);
                    }
                }
            }
            _ => {
                for (k, slot) in sums.iter_mut().take(n).enumerate() {
                    *slot = match rows.row(first + k) {
                        (coords, Some(values)) => dot(coords, values),
                        // `1 * x` is `x`.
                        (coords, None) => coords.iter().map(|&c| at(c)).fold(0.0, |s, x| s + x),
                    };
                }
            }
        }
        let sums = &sums[..n];
        let sure = |s: f64| s.is_finite() && s != 0.0;
        let done = if sums.iter().fold(true, |all, &s| all & sure(s)) {
            n
        } else {
            sums.iter().position(|&s| !sure(s)).unwrap_or(n)
        };
        let crd = rows.crd.get(first..first + done).unwrap_or(&[]);
        out.coords.extend_from_slice(crd);
        out.values
            .extend(sums.iter().take(crd.len()).map(|&s| scale * s));
        first + crd.len()
    }
}

/// An input's values as the fast path's type.
enum Typed<'a, T: Clone + 'static> {
    Values(Cow<'a, [T]>),
    One,
}

impl<T: Num> Typed<'_, T> {
    #[inline]
    fn get(&self, p: usize) -> T {
        match self {
            Typed::Values(v) => v.get(p).copied().unwrap_or(T::ZERO),
            Typed::One => T::ONE,
        }
    }

    /// The values as a slice; `None` when every value is 1.
    #[inline]
    fn slice(&self) -> Option<&[T]> {
        match self {
            Typed::Values(v) => Some(v),
            Typed::One => None,
        }
    }

    fn owned_bytes(&self) -> u64 {
        match self {
            Typed::Values(Cow::Owned(v)) => std::mem::size_of_val(v.as_slice()) as u64,
            _ => 0,
        }
    }
}

/// The value at position `p` of `values` (`None`: every value is 1).
#[inline]
fn read<T: Num>(values: Option<&[T]>, p: usize) -> T {
    match values {
        Some(v) => v.get(p).copied().unwrap_or(T::ZERO),
        None => T::ONE,
    }
}

/// A kernel that the fast path runs: which factor is multiplied in at
/// which depth, and in which type.
pub(crate) struct Product {
    /// The machine type the kernel runs on first.
    num: NumType,
    /// The inputs bound before any loop (no variable, or only constants).
    root: Vec<usize>,
    /// Per loop, the positions (in the loop's parts) of the inputs whose
    /// last variable it binds.
    completes: Vec<Vec<usize>>,
}

impl Product {
    /// The fast path's plan for `kernel`, if its expression is a product
    /// of inputs (fill 0) under `SUM` or no aggregate.
    pub(crate) fn new(kernel: &Kernel<'_>) -> Option<Product> {
        let query = kernel.query;
        if !matches!(query.aggregate, None | Some(AggOp::Sum)) {
            return None;
        }
        let factors: Vec<usize> = match &query.body {
            Node::Input(k) => vec![*k],
            Node::Map(ScalarOp::Mul, args) => args
                .iter()
                .map(|a| match a {
                    Node::Input(k) => Some(*k),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?,
            _ => return None,
        };
        let mut seen = factors.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != factors.len() || seen.len() != kernel.inputs.len() {
            return None;
        }
        if kernel.inputs.iter().any(|i| !i.fill.is_zero()) {
            return None;
        }
        let has = |ty| query.inputs.iter().any(|a| a.ty == ty);
        let num = if has(ValueType::Float64) {
            NumType::Float
        } else if has(ValueType::Int128) {
            NumType::Huge
        } else {
            NumType::Int
        };
        let last_depth = |k: usize| {
            kernel
                .parts
                .iter()
                .rposition(|parts| parts.iter().any(|p| p.input == k))
        };
        let mut root = Vec::new();
        let mut completes = vec![Vec::new(); kernel.parts.len()];
        for k in 0..kernel.inputs.len() {
            match last_depth(k) {
                Some(d) => {
                    let j = kernel.parts[d].iter().position(|p| p.input == k)?;
                    completes[d].push(j);
                }
                None => root.push(k),
            }
        }
        Some(Product {
            num,
            root,
            completes,
        })
    }

    /// Runs the kernel and returns its entries with their final values.
    pub(crate) fn run(
        &self,
        kernel: &Kernel<'_>,
        control: &Control<'_>,
        options: &ExecOptions,
        count: &Chunks,
    ) -> Result<Finished> {
        match self.num {
            NumType::Float => self.run_typed::<f64>(kernel, control, options, count),
            NumType::Huge => self.run_typed::<i128>(kernel, control, options, count),
            NumType::Int => match self.run_typed::<i64>(kernel, control, options, count) {
                Err(Error::Overflow(_)) => {
                    // Exact at 128 bits instead: the 64-bit run's state
                    // (its stop flag, held entries, rows taken) is undone.
                    control.resume();
                    if let Some(held) = kernel.held {
                        held.release_all();
                    }
                    if let Some(budget) = kernel.budget {
                        budget.reset();
                    }
                    self.run_typed::<i128>(kernel, control, options, count)
                }
                other => other,
            },
        }
    }

    fn run_typed<T: Num>(
        &self,
        kernel: &Kernel<'_>,
        control: &Control<'_>,
        options: &ExecOptions,
        count: &Chunks,
    ) -> Result<Finished> {
        let empty = || Ok(T::finished(vec![Entries::new(kernel.query.output.len())]));
        let values: Vec<Typed<'_, T>> = kernel
            .inputs
            .iter()
            .map(|i| T::typed(i.values))
            .collect::<Result<_>>()?;
        control.reserve(values.iter().map(Typed::owned_bytes).sum())?;
        let root = Worker::new(kernel, control, None)?;
        if !root.feasible() {
            return empty();
        }
        let mut scale = T::ONE;
        for &k in &self.root {
            let factor = values[k].get(root.pos[k]);
            // A zero factor makes the product zero, even next to a NaN.
            if factor == T::ZERO {
                return empty();
            }
            scale = scale.times(factor)?;
        }
        let shared = Shared {
            kernel,
            product: self,
            values: &values,
            control,
            leaves: LeafReads::new(kernel, &values),
            accumulators: AccumulatorPool::new(kernel.accumulator, kernel.suffix_sizes.clone()),
        };
        let dims = kernel.query.output.len();
        let parts: Vec<Vec<Entries<T>>> = if kernel.vars.is_empty() {
            vec![shared.worker(&root.pos, None, Vec::new())?.run(scale)?]
        } else {
            let mut root = root;
            let work = kernel.split_work(options.threads);
            let (top, sequential) = sequential_top(kernel, &mut root);
            let chunks = match sequential {
                Some((lo, hi)) => sequential_chunks(kernel, lo, hi, work),
                None => split(
                    &top_weights(kernel, &root.pos, &root.present, &top),
                    top.len(),
                    work,
                ),
            };
            count.set(chunks.len());
            let pos = std::mem::take(&mut root.pos);
            drop(root);
            let chunk = |from: usize, to: usize| match sequential {
                Some((lo, _)) => Top::Positions(lo + from, lo + to),
                None => Top::Cands(top.slice(from, to)),
            };
            if (options.threads <= 1 || kernel.budget.is_some()) && kernel.prefix > 0 {
                // The chunks' entries are concatenated in chunk order:
                // on one thread, each chunk appends to the runs of the
                // ones before. Under a row budget the chunks run so,
                // until the budget runs out.
                let mut out = Entries::new(dims);
                if kernel.budget.is_none() {
                    out.reserve(chunks.last().map_or(0, |&(_, to)| to));
                }
                let mut out = vec![out];
                for &(from, to) in &chunks {
                    if let Some(budget) = kernel.budget {
                        if budget.used_up() {
                            break;
                        }
                        budget.chunk();
                    }
                    control.check()?;
                    control.tick();
                    out = shared
                        .worker(&pos, Some(chunk(from, to)), out)?
                        .run(scale)?;
                }
                vec![out]
            } else {
                run_chunks(&chunks, options, control, |from, to| {
                    shared
                        .worker(&pos, Some(chunk(from, to)), Vec::new())?
                        .run(scale)
                })?
            }
        };
        // Chunks that write output coordinates of their own are their
        // runs; the others' entries are combined.
        let parts = if kernel.prefix > 0 {
            parts.into_iter().flatten().collect()
        } else {
            parts
                .into_iter()
                .map(|runs| Entries::concat(dims, runs))
                .collect()
        };
        let merged = kernel.merge_chunks(parts, control, |a, b| a.add(b))?;
        Ok(T::finished(match kernel.copies {
            1 => merged,
            copies => merged
                .into_iter()
                .map(|run| run.map(|v| v.repeat(copies)))
                .collect::<Result<_>>()?,
        }))
    }
}

/// The machine types of the fast path.
#[derive(Clone, Copy, Debug, PartialEq)]
enum NumType {
    Int,
    Huge,
    Float,
}

/// What the workers of one run share.
struct Shared<'s, 'a, T: Num> {
    kernel: &'s Kernel<'a>,
    product: &'s Product,
    values: &'s [Typed<'a, T>],
    control: &'s Control<'s>,
    leaves: Option<LeafReads<'s, 'a, T>>,
    /// The workers' accumulators, handed from one chunk to the next.
    accumulators: AccumulatorPool<T>,
}

/// The most inputs [`ProductWorker::innermost_slots`] handles: a driver
/// and [`MOST_SLOT_PROBES`] probes.
const MOST_LEAF_READS: usize = 1 + MOST_SLOT_PROBES;

/// The reads of the innermost loop, fixed for a run: per input read there,
/// its leaf level, format and values.
struct LeafReads<'s, 'a, T> {
    depth: usize,
    reads: Vec<LeafRead<'s, 'a, T>>,
    /// The driver fixed by the plan (a position in `reads`).
    fixed: Option<usize>,
    /// The driver (a position in `reads`) when the loop's shape is fixed
    /// for [`SlotProbes`]: a compressed or hashed driver, every other read
    /// at a dense-addressed level with a value array.
    slot_driver: Option<usize>,
    /// Per read, its stride when dense-addressed (else 0).
    strides: [usize; MOST_LEAF_READS],
}

/// One input's read at the innermost loop.
struct LeafRead<'s, 'a, T> {
    input: usize,
    level: &'a Level,
    format: LevelFormat,
    /// `None`: every value is 1.
    values: Option<&'s [T]>,
}

impl<'s, 'a, T: Num> LeafReads<'s, 'a, T> {
    /// The innermost loop's reads, when every input read there binds one
    /// level (no repeated variable) and there are at most
    /// [`MOST_LEAF_READS`] of them.
    fn new(kernel: &Kernel<'a>, values: &'s [Typed<'a, T>]) -> Option<Self> {
        let depth = kernel.parts.len().checked_sub(1)?;
        let parts = &kernel.parts[depth];
        if parts.len() > MOST_LEAF_READS || parts.iter().any(|p| p.count != 1) {
            return None;
        }
        let reads = parts
            .iter()
            .map(|p| {
                let level = kernel.inputs.get(p.input)?.tree.levels().get(p.level)?;
                Some(LeafRead {
                    input: p.input,
                    level,
                    format: level.format(),
                    values: values.get(p.input)?.slice(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let fixed = kernel
            .fixed_driver(depth)
            .and_then(|k| parts.iter().position(|p| p.input == k));
        let mut strides = [0; MOST_LEAF_READS];
        for (stride, read) in strides.iter_mut().zip(&reads) {
            *stride = read.level.fiber(0).slots().map_or(0, |(_, s)| s);
        }
        let sorted = |j: usize| {
            matches!(
                reads[j].format,
                LevelFormat::Compressed | LevelFormat::Hashed
            )
        };
        let driver = match fixed {
            Some(j) => Some(j),
            None => {
                let mut drivers = (0..reads.len()).filter(|&j| sorted(j));
                drivers.next().filter(|_| drivers.next().is_none())
            }
        };
        let slot_driver = driver.filter(|&d| {
            sorted(d)
                && reads
                    .iter()
                    .enumerate()
                    .all(|(j, r)| j == d || (r.format.is_dense_addressed() && r.values.is_some()))
        });
        Some(LeafReads {
            depth,
            reads,
            fixed,
            slot_driver,
            strides,
        })
    }
}

impl<'s, 'a, T: Num> Shared<'s, 'a, T> {
    /// A worker over the chunk `top` that appends its entries to the runs
    /// `runs` (to the last one while it has room).
    fn worker(
        &self,
        pos: &[usize],
        top: Option<Top>,
        mut runs: Vec<Entries<T>>,
    ) -> Result<ProductWorker<'_, 's, 'a, T>> {
        let kernel = self.kernel;
        let upfront = Accumulator::<T>::upfront_bytes(kernel.accumulator, &kernel.suffix_sizes);
        let reserved = u64::try_from(upfront).unwrap_or(u64::MAX);
        self.control.reserve(reserved)?;
        let mut out = runs
            .pop()
            .unwrap_or_else(|| Entries::new(kernel.query.output.len()));
        if kernel.prefix > 0
            && let Some(top) = &top
        {
            // The outermost loop writes the first output level: usually
            // about one entry per coordinate when it is the only one.
            out.reserve(top.len());
        }
        Ok(ProductWorker {
            shared: self,
            pos: pos.to_vec(),
            coords: vec![0; kernel.query.vars.len()],
            top,
            acc: self.accumulators.take(),
            out,
            full_runs: runs,
            steps: 0,
            scratch: (0..kernel.vars.len()).map(|_| Scratch::default()).collect(),
            marks: Marks::default(),
            invariant: Invariant::default(),
            reserved,
            pending: 0,
            full: false,
            kept: 0,
        })
    }
}

/// The bytes of entries a worker collects before charging them.
const CHARGE_BATCH: u64 = 64 << 10;

/// One worker of the fast path.
struct ProductWorker<'w, 's, 'a, T: Num> {
    shared: &'w Shared<'s, 'a, T>,
    pos: Vec<usize>,
    coords: Vec<i64>,
    top: Option<Top>,
    acc: Accumulator<T>,
    /// The run the entries are written into.
    out: Entries<T>,
    /// The runs before it, each started when the one before had no room.
    full_runs: Vec<Entries<T>>,
    steps: usize,
    reserved: u64,
    /// Bytes written but not yet charged (less than [`CHARGE_BATCH`]).
    pending: u64,
    /// Set when the row budget ran out: the loop nest unwinds with an
    /// error that [`ProductWorker::run`] drops.
    full: bool,
    /// The bytes charged (or pending) for the entries in `out`, handed on
    /// with them.
    kept: u64,
    /// Buffers per loop depth.
    scratch: Vec<Scratch<'a>>,
    /// The innermost loop's map of a fiber that stays while the loop
    /// above it runs.
    marks: Marks<'a>,
    /// The innermost loop's intersection of the fibers that stay while
    /// the loop above it runs, when others vary.
    invariant: Invariant<T>,
}

/// A worker's accumulator and entries are returned to the budget when it
/// ends (the caller charges the merged result again), and its accumulator
/// to the pool.
impl<T: Num> Drop for ProductWorker<'_, '_, '_, T> {
    fn drop(&mut self) {
        self.shared.control.release(self.reserved);
        self.shared.accumulators.give(&mut self.acc);
    }
}

/// How one input is looked up at a loop.
enum Probe<'a> {
    /// Galloping seek of a cursor over sorted coordinates.
    Seek(Cursor<'a>),
    /// Direct lookup: dense slot, bytemap flag or hash probe.
    Direct(Fiber<'a>),
}

impl Probe<'_> {
    #[inline]
    fn find(&mut self, coord: i64) -> Option<usize> {
        match self {
            Probe::Seek(cursor) => {
                cursor.seek(coord);
                match cursor.current() {
                    Some((c, p)) if c == coord => Some(p),
                    _ => None,
                }
            }
            Probe::Direct(fiber) => fiber.lookup(coord),
        }
    }
}

impl<'s, 'a, T: Num> ProductWorker<'_, 's, 'a, T> {
    fn run(mut self, scale: T) -> Result<Vec<Entries<T>>> {
        self.walk_all(scale)?;
        // The entries' charges go on with them (see [`Held`]).
        if let Some(held) = self.shared.kernel.held {
            let pending = std::mem::take(&mut self.pending);
            self.shared.control.reserve(pending)?;
            self.reserved += pending;
            let kept = self.kept.min(self.reserved);
            held.keep(kept);
            self.reserved -= kept;
        }
        let mut runs = std::mem::take(&mut self.full_runs);
        runs.push(self.out.take());
        Ok(runs)
    }

    /// Makes room for `n` more entries: in the current run when it has
    /// it (or holds fewer than [`RUN`]), else in a new run, so that a run
    /// is never copied to grow.
    fn make_room(&mut self, n: usize) {
        let (len, capacity) = (self.out.len(), self.out.values.capacity());
        if len > 0 && len + n > capacity.max(RUN) {
            let mut next = Entries::new(self.out.dims);
            next.reserve(RUN.max(n));
            self.full_runs.push(std::mem::replace(&mut self.out, next));
        } else {
            self.out.reserve(n);
        }
    }

    /// Runs the whole loop nest (or its chunk), writing the entries.
    fn walk_all(&mut self, scale: T) -> Result<()> {
        let kernel = self.shared.kernel;
        if let Some(result) = self.rows(scale) {
            return result;
        }
        // Only the rows know their order.
        self.out.increasing = false;
        if kernel.vars.is_empty() {
            self.add(scale)?;
        } else if kernel.group == 0 {
            if let Some(sum) = self.group(0, kernel.vars.len())? {
                self.add(scale.times(sum)?)?;
            }
        } else {
            match self.walk(0, scale) {
                // The row budget ran out: the entries so far are the result.
                Err(_) if self.full => return Ok(()),
                walked => walked?,
            }
        }
        if kernel.prefix == 0 {
            self.flush()?;
        }
        Ok(())
    }

    /// The product of the factors completed at loop `depth`, at the
    /// positions found there.
    #[inline]
    fn factors(&self, depth: usize, positions: &[usize]) -> Result<T> {
        let kernel = self.shared.kernel;
        let mut v = T::ONE;
        for &j in &self.shared.product.completes[depth] {
            let input = kernel.parts[depth][j].input;
            let factor = self.shared.values[input].get(positions[j]);
            // A zero factor makes the product zero, even next to a NaN or
            // an infinity (as `*` does).
            if factor == T::ZERO {
                return Ok(T::ZERO);
            }
            v = v.times(factor)?;
        }
        Ok(v)
    }

    fn walk(&mut self, depth: usize, partial: T) -> Result<()> {
        let kernel = self.shared.kernel;
        let n = kernel.vars.len();
        if kernel.ends[depth] < n {
            // Summed subtrees ahead of output loops (a factorized trunk,
            // see `PhysicalQuery::factorize`, which leaves an output loop
            // after them): their sum multiplies every entry the loops
            // after them write.
            let mut after = depth;
            while kernel.ends[after] < n {
                after = kernel.ends[after];
            }
            let Some(sum) = self.group(depth, after)? else {
                return Ok(());
            };
            return self.walk(after, partial.times(sum)?);
        }
        if let Some(result) = self.dense_row(depth, partial) {
            return result;
        }
        visit(self, depth, |w, positions| {
            let factor = w.factors(depth, positions)?;
            if factor == T::ZERO {
                return Ok(());
            }
            let v = partial.times(factor)?;
            w.set(depth, positions);
            if depth + 1 == kernel.group {
                if let Some(inner) = w.group(depth + 1, kernel.vars.len())? {
                    w.add(v.times(inner)?)?;
                }
            } else {
                w.walk(depth + 1, v)?;
            }
            if depth + 1 == kernel.prefix {
                w.flush()?;
            }
            Ok(())
        })
    }

    /// The innermost loop when it binds the one output variable written
    /// at random (after a summed loop, as SpMM's `k` in `SUM(m) X[i,m] *
    /// W[m,k]` looping `i, m, k`) into a dense accumulator, and one input
    /// drives it with a dense leaf whose value is the loop's only factor:
    /// the leaf's row times `partial` added into the accumulator cell by
    /// cell, without the general loop's dispatch per cell (a zero cell, as
    /// an absent one holds, is skipped, as [`ProductWorker::factors`]
    /// skips it). `None` when the
    /// loop does not have that shape.
    fn dense_row(&mut self, depth: usize, partial: T) -> Option<Result<()>> {
        let kernel = self.shared.kernel;
        let n = kernel.vars.len();
        let [part] = kernel.parts[depth].as_slice() else {
            return None;
        };
        if depth + 1 != n
            || kernel.group != n
            || part.count != 1
            || kernel.suffix.as_slice() != [kernel.vars[depth]]
            || self.shared.product.completes[depth].as_slice() != [0]
        {
            return None;
        }
        let level = kernel.inputs[part.input].tree.levels().get(part.level)?;
        if level.format() != LevelFormat::Dense {
            return None;
        }
        let (base, stride) = level.fiber(self.pos[part.input]).slots()?;
        let row = self.shared.values[part.input]
            .slice()?
            .get(base..base + stride)?;
        let scaled = |cell: T| {
            if cell == T::ZERO {
                return Ok(None);
            }
            partial.times(cell).map(Some)
        };
        let new = match self.acc.add_row(row, scaled, |a, b| a.add(b))? {
            Ok(new) => new,
            Err(e) => return Some(Err(e)),
        };
        Some(
            self.charge(entry_bytes(kernel.suffix.len()) * new as u64)
                .and_then(|()| self.count_steps(stride)),
        )
    }

    /// The sum over the loops from `depth` to `end` (siblings in the loop
    /// tree, or one subtree) of the product of the factors they complete;
    /// `None` when no product is non-zero. Sibling subtrees share no
    /// input, so their sums multiply; a sibling that repeats the one
    /// before it ([`Loop::repeats`](super::plan::Loop::repeats)) multiplies
    /// that sum in again without computing it.
    fn group(&mut self, depth: usize, end: usize) -> Result<Option<T>> {
        let kernel = self.shared.kernel;
        let n = kernel.vars.len();
        if depth == end {
            return Ok(Some(T::ONE));
        }
        let subtree = kernel.ends[depth];
        if subtree < end {
            let Some(first) = self.group(depth, subtree)? else {
                return Ok(None);
            };
            let (mut copies, mut next) = (1, subtree);
            while next < end && kernel.query.loops[next].repeats == Some(depth) {
                copies += 1;
                next = kernel.ends[next];
            }
            let Some(mut product) = self.group(next, end)? else {
                return Ok(None);
            };
            for _ in 0..copies {
                product = first.times(product)?;
            }
            return Ok(Some(product));
        }
        let mut sum = T::ZERO;
        let mut any = false;
        if depth + 1 == n && !(depth == 0 && self.top.is_some()) {
            if let Some(result) = self.innermost_slots(depth) {
                return result;
            }
            if let Some(result) = self.innermost(depth) {
                return result;
            }
        }
        if depth + 1 == end {
            visit(self, depth, |w, positions| {
                let v = w.factors(depth, positions)?;
                if v != T::ZERO {
                    sum.add(v)?;
                    any = true;
                }
                w.count_steps(1)
            })?;
        } else {
            visit(self, depth, |w, positions| {
                let v = w.factors(depth, positions)?;
                if v == T::ZERO {
                    return Ok(());
                }
                w.set(depth, positions);
                if let Some(inner) = w.group(depth + 1, end)? {
                    sum.add(v.times(inner)?)?;
                    any = true;
                }
                Ok(())
            })?;
        }
        Ok(any.then_some(sum))
    }

    /// The innermost loop's sum when the driver has sorted coordinates (or
    /// is a dense leaf with values: a dot product of dense factor rows)
    /// and every other input is read at a dense-addressed leaf with a
    /// value array ([`SlotProbes`]): SpMV's `x[j]`, SpMM's and SDDMM's
    /// factor rows. Works from the reads fixed for the run ([`LeafReads`]), so a
    /// row costs a few fiber bounds and no buffers; `None` when the loop
    /// does not have that shape, for [`ProductWorker::innermost`].
    #[inline]
    fn innermost_slots(&mut self, depth: usize) -> Option<Result<Option<T>>> {
        let reads = self.shared.leaves.as_ref().filter(|r| r.depth == depth)?;
        if let Some(driver) = reads.slot_driver {
            return Some(self.slot_sum(reads, driver));
        }
        let mut fibers: [Option<Fiber<'a>>; MOST_LEAF_READS] = [None; MOST_LEAF_READS];
        for (slot, read) in fibers.iter_mut().zip(&reads.reads) {
            *slot = Some(read.level.fiber(self.pos[read.input]));
        }
        let n = reads.reads.len();
        let driver = match reads.fixed {
            Some(j) => j,
            None => (0..n).min_by_key(|&j| match (&fibers[j], reads.reads[j].format) {
                (_, LevelFormat::Dense) | (None, _) => usize::MAX,
                (Some(f), _) => f.len(),
            })?,
        };
        // A dense driver (every input dense: a dot product of factor rows)
        // walks its slots; absent ones hold 0, which the sum skips.
        let dense = match reads.reads.get(driver)?.format {
            LevelFormat::Compressed | LevelFormat::Hashed => false,
            LevelFormat::Dense => true,
            LevelFormat::Bytemap => return None,
        };
        let mut probes = SlotProbes {
            count: 0,
            probes: [(0, 0, &[]); MOST_SLOT_PROBES],
        };
        for (j, (fiber, read)) in fibers.iter().zip(&reads.reads).enumerate() {
            if j == driver {
                continue;
            }
            let (base, stride) = fiber.as_ref()?.slots()?;
            *probes.probes.get_mut(probes.count)? = (base, stride, read.values?);
            probes.count += 1;
        }
        let fiber = fibers[driver]?;
        if dense {
            let (base, stride) = fiber.slots()?;
            let values = reads.reads[driver].values?.get(base..base + stride)?;
            if let Err(e) = self.count_steps(stride) {
                return Some(Err(e));
            }
            let entries = values.iter().enumerate().map(|(c, &v)| (c as i64, v));
            return Some(probes.exact(probes.single(), entries));
        }
        let coords = fiber.sorted_coords()?;
        if let Err(e) = self.count_steps(coords.len()) {
            return Some(Err(e));
        }
        let base = fiber.cursor().current().map_or(0, |(_, p)| p);
        let values = reads.reads[driver]
            .values
            .map(|v| v.get(base..).unwrap_or(&[]));
        Some(probes.sum(probes.single(), coords, values))
    }

    /// [`ProductWorker::innermost_slots`] for a loop whose shape
    /// [`LeafReads`] fixed: the driver's fiber bounds and each probe's
    /// slot base are all a row costs.
    #[inline]
    fn slot_sum(&mut self, reads: &LeafReads<'s, 'a, T>, driver: usize) -> Result<Option<T>> {
        let mut probes = SlotProbes {
            count: 0,
            probes: [(0, 0, &[]); MOST_SLOT_PROBES],
        };
        for ((j, read), &stride) in reads.reads.iter().enumerate().zip(&reads.strides) {
            if j == driver {
                continue;
            }
            if let (Some(slot), Some(values)) = (probes.probes.get_mut(probes.count), read.values) {
                *slot = (self.pos[read.input].saturating_mul(stride), stride, values);
                probes.count += 1;
            }
        }
        let read = &reads.reads[driver];
        let fiber = read.level.fiber(self.pos[read.input]);
        let coords = fiber.sorted_coords().unwrap_or(&[]);
        self.count_steps(coords.len())?;
        let base = fiber.cursor().current().map_or(0, |(_, p)| p);
        let values = read.values.map(|v| v.get(base..).unwrap_or(&[]));
        probes.sum(probes.single(), coords, values)
    }

    /// The rows of a two-loop kernel whose outer loop walks one input's
    /// positions ([`Top::Positions`]) and writes the output in order,
    /// with no factor completed there and the inner loop summed like
    /// [`ProductWorker::slot_sum`] (SpMV): per row, one sum and one entry,
    /// without the general loop's dispatch. `None` when the kernel does
    /// not have that shape.
    fn rows(&mut self, scale: T) -> Option<Result<()>> {
        let shared = self.shared;
        let kernel = shared.kernel;
        let Some(Top::Positions(lo, hi)) = self.top else {
            return None;
        };
        let reads = shared.leaves.as_ref().filter(|r| r.depth == 1)?;
        let driver = reads.slot_driver?;
        let [part] = kernel.parts.first()?.as_slice() else {
            return None;
        };
        let var = kernel.vars[0];
        if kernel.vars.len() != 2
            || kernel.group != 1
            || kernel.prefix != 1
            || !kernel.suffix.is_empty()
            || kernel.query.output.as_slice() != [var]
            || !shared.product.completes.first()?.is_empty()
        {
            return None;
        }
        let crd = kernel.inputs[part.input]
            .tree
            .levels()
            .get(part.level)?
            .crd()?
            .get(lo..hi)?;
        // The probed inputs are not read at the outer loop: their slots
        // are the same for every row.
        let mut probes = SlotProbes {
            count: 0,
            probes: [(0, 0, &[]); MOST_SLOT_PROBES],
        };
        for ((j, read), &stride) in reads.reads.iter().enumerate().zip(&reads.strides) {
            if j == driver {
                continue;
            }
            if read.input == part.input {
                return None;
            }
            *probes.probes.get_mut(probes.count)? = (
                self.pos[read.input].saturating_mul(stride),
                stride,
                read.values?,
            );
            probes.count += 1;
        }
        let read = &reads.reads[driver];
        let (bounds, leaf) = (read.level.pos()?, read.level.crd()?);
        // The driver's fibers: under the row's position when the driver is
        // the outer loop's input, else all under its fixed position.
        let bounds = if read.input == part.input {
            RowBounds::Each(bounds.get(lo..=hi)?)
        } else {
            let q = self.pos[read.input];
            RowBounds::Same(*bounds.get(q)?, *bounds.get(q + 1)?)
        };
        let rows = Rows {
            crd,
            bounds,
            leaf,
            values: read.values,
            single: probes.single(),
            probes,
        };
        let start = self.out.len();
        let before = start == 0 || self.out.increasing;
        let result = self.emit_rows(&rows, scale);
        // The rows ascend (one compressed fiber), after the entries of
        // the chunks before, which hold its earlier positions.
        let joined = start
            .checked_sub(1)
            .and_then(|last| self.out.coords.get(last..=start))
            .is_none_or(|w| w[0] < w[1]);
        self.out.increasing = before && joined;
        Some(result)
    }

    /// Sums the rows of [`ProductWorker::rows`] and pushes one entry per
    /// row with a sum: [`Num::quick_rows`] while it is sure, the exact
    /// loop for the rows it is not. Cancellation is checked, and the
    /// entries charged, per block of rows ([`Rows::block_end`]).
    fn emit_rows(&mut self, rows: &Rows<'_, T>, scale: T) -> Result<()> {
        let width = entry_bytes(1);
        let n = rows.crd.len();
        let mut first = 0;
        while first < n {
            self.shared.control.check()?;
            let end = rows.block_end(first);
            let before = self.out.len();
            let mut i = first;
            while i < end {
                if let Some(x) = rows.single {
                    i = T::quick_rows(rows, x, i, end, scale, &mut self.out);
                    if i == end {
                        break;
                    }
                }
                let (coords, values) = rows.row(i);
                if let Some(sum) = rows.exact(coords, values)? {
                    let c = rows.crd.get(i).copied().unwrap_or(0);
                    self.out.push([c], scale.times(sum)?);
                }
                i += 1;
            }
            let bytes = width * (self.out.len() - before) as u64;
            self.charge(bytes)?;
            self.kept += bytes;
            first = end;
        }
        Ok(())
    }

    /// The innermost loop's sum as one tight loop over the driver's sorted
    /// coordinates and values, probing the other inputs; `None` when the
    /// loop does not have that shape (a repeated variable, or a driver
    /// without sorted coordinates), for [`visit`] to handle.
    fn innermost(&mut self, depth: usize) -> Option<Result<Option<T>>> {
        let kernel = self.shared.kernel;
        let parts = &kernel.parts[depth];
        if parts.iter().any(|p| p.count != 1) {
            return None;
        }
        let mut scratch = std::mem::take(&mut self.scratch[depth]);
        let result = self.innermost_with(depth, &mut scratch);
        self.scratch[depth] = scratch;
        result
    }

    fn innermost_with(
        &mut self,
        depth: usize,
        scratch: &mut Scratch<'a>,
    ) -> Option<Result<Option<T>>> {
        let kernel = self.shared.kernel;
        let parts = &kernel.parts[depth];
        scratch.parents.clear();
        scratch
            .parents
            .extend(parts.iter().map(|p| self.pos[p.input]));
        let Some(join) = Join::new(kernel, depth, scratch) else {
            return Some(Ok(None));
        };
        let (coords, base) = join.fiber.consecutive()?;
        let values = self.shared.values;
        let driver = values[parts[join.driver].input].slice();
        if let [(j, Probe::Seek(_))] = scratch.probes.as_slice() {
            // Two sorted fibers (triangles' `L[j,k] * L[i,k]`): a merge, or
            // a galloping search through the longer one when it is much
            // longer, without a probe per coordinate.
            let fiber = scratch.fibers[*j];
            let other = fiber.sorted_coords()?;
            let other_base = fiber.cursor().current().map_or(0, |(_, p)| p);
            let other_values = values[parts[*j].input].slice();
            if let Err(e) = self.count_steps(coords.len()) {
                return Some(Err(e));
            }
            let driving = Side {
                key: (parts[join.driver].input, scratch.parents[join.driver]),
                coords,
                base,
                values: driver,
            };
            let probed = Side {
                key: (parts[*j].input, scratch.parents[*j]),
                coords: other,
                base: other_base,
                values: other_values,
            };
            // A fiber whose input the loop above does not read stays the
            // same while that loop runs: mapped once, each visit then
            // scans only the other fiber (masked two-paths on a hub).
            let stays = |side: &Side<'_, '_, T>| {
                depth > 0 && kernel.part_of[depth - 1][side.key.0].is_none()
            };
            let space = kernel.sizes[depth];
            let sides = if stays(&probed) && self.marks.worth(&probed, space) {
                Some((probed, driving))
            } else if stays(&driving) && self.marks.worth(&driving, space) {
                Some((driving, probed))
            } else {
                None
            };
            if let Some((mapped, scanned)) = sides {
                return Some(self.marked_sum(mapped, scanned, space));
            }
            let a = (coords, driver.map(|v| v.get(base..).unwrap_or(&[])));
            let b = (
                other,
                other_values.map(|v| v.get(other_base..).unwrap_or(&[])),
            );
            return Some(merged_sum(a, b));
        }
        if kernel.fixed_driver(depth).is_none()
            && let Some(result) = self.invariant_sum(depth, scratch)
        {
            return Some(result);
        }
        const MOST_PROBES: usize = 8;
        if scratch.probes.len() > MOST_PROBES {
            return None;
        }
        let mut probed: [Option<&[T]>; MOST_PROBES] = [None; MOST_PROBES];
        for (slot, (j, _)) in probed.iter_mut().zip(&scratch.probes) {
            *slot = values[parts[*j].input].slice();
        }
        if let Err(e) = self.count_steps(coords.len()) {
            return Some(Err(e));
        }
        let mut sum = T::ZERO;
        let mut any = false;
        'entries: for (i, &c) in coords.iter().enumerate() {
            let mut v = read(driver, base + i);
            if v == T::ZERO {
                continue;
            }
            for ((_, probe), vals) in scratch.probes.iter_mut().zip(&probed) {
                let Some(p) = probe.find(c) else {
                    continue 'entries;
                };
                let factor = read(*vals, p);
                if factor == T::ZERO {
                    continue 'entries;
                }
                v = match v.times(factor) {
                    Ok(v) => v,
                    Err(e) => return Some(Err(e)),
                };
            }
            if let Err(e) = sum.add(v) {
                return Some(Err(e));
            }
            any = true;
        }
        Some(Ok(any.then_some(sum)))
    }

    /// The sum over the coordinates `mapped` and `scanned` share of the
    /// product of their values, through the map of `mapped`'s fiber
    /// (built unless it is the one mapped last).
    fn marked_sum(
        &mut self,
        mapped: Side<'a, '_, T>,
        scanned: Side<'a, '_, T>,
        space: u64,
    ) -> Result<Option<T>> {
        if self.marks.key != Some(mapped.key) {
            let grown = self.marks.map(&mapped, space);
            if grown > 0 {
                self.shared.control.reserve(grown)?;
                self.reserved += grown;
            }
        }
        let slots = &self.marks.slots;
        if mapped.values.is_none() && scanned.values.is_none() {
            let n = scanned
                .coords
                .iter()
                .filter(|&&c| slots.get(c as usize).is_some_and(|&s| s != 0))
                .count();
            return if n == 0 {
                Ok(None)
            } else {
                T::ONE.repeat(n as u128).map(Some)
            };
        }
        let (mut sum, mut any) = (T::ZERO, false);
        for (t, &c) in scanned.coords.iter().enumerate() {
            let slot = slots.get(c as usize).copied().unwrap_or(0);
            if slot == 0 {
                continue;
            }
            let x = read(scanned.values, scanned.base + t);
            let y = read(mapped.values, slot as usize - 1);
            if x != T::ZERO && y != T::ZERO {
                sum.add(x.times(y)?)?;
                any = true;
            }
        }
        Ok(any.then_some(sum))
    }

    /// The innermost loop's sum over three or more sorted fibers when some
    /// of them stay the same while the loop above runs (their inputs are
    /// not read there) and others vary: the staying fibers' intersection
    /// is worked out once ([`Invariant`]), on the second visit under the
    /// same fibers, and each visit then intersects it with the varying
    /// fibers only, scanning the shortest of them against the
    /// intersection's map, or searching them for the intersection's
    /// coordinates when it is more than [`GALLOP_RATIO`] times shorter. A
    /// 4-clique's last loop, `N(a) ∩ N(c) ∩ N(b)` for every `b` in `N(a) ∩
    /// N(c)`, scans `N(b)` against one map instead of probing two fibers
    /// per coordinate. `None` when the loop does not have that shape or
    /// the intersection is not built yet, for the probing loop.
    fn invariant_sum(&mut self, depth: usize, scratch: &Scratch<'a>) -> Option<Result<Option<T>>> {
        let kernel = self.shared.kernel;
        let parts = &kernel.parts[depth];
        let above = kernel.part_of.get(depth.checked_sub(1)?)?;
        let space = kernel.sizes[depth];
        if parts.len() < 3 || space > MARK_SPACE {
            return None;
        }
        let stays = |j: usize| above[parts[j].input].is_none();
        let staying_parts = (0..parts.len()).filter(|&j| stays(j)).count();
        if staying_parts == 0 || staying_parts == parts.len() {
            return None;
        }
        let keys = (0..parts.len())
            .filter(|&j| stays(j))
            .map(|j| (parts[j].input, scratch.parents[j]));
        let invariant = &mut self.invariant;
        if !invariant.holds(keys.clone()) {
            invariant.expect(keys);
            return None;
        }
        if invariant.unmappable {
            return None;
        }
        let values = self.shared.values;
        let mut staying = SideSet::default();
        let mut varying = SideSet::default();
        for (j, (part, fiber)) in parts.iter().zip(&scratch.fibers).enumerate() {
            let (coords, base) = fiber.consecutive()?;
            let side = Side {
                key: (part.input, scratch.parents[j]),
                coords,
                base,
                values: values[part.input].slice(),
            };
            let set = if stays(j) { &mut staying } else { &mut varying };
            set.push(side)?;
        }
        if !invariant.built {
            let grown = match invariant.build(&staying, space) {
                Ok(Some(grown)) => grown,
                Ok(None) => {
                    invariant.unmappable = true;
                    return None;
                }
                Err(e) => return Some(Err(e)),
            };
            if grown > 0 {
                if let Err(e) = self.shared.control.reserve(grown) {
                    return Some(Err(e));
                }
                self.reserved += grown;
            }
        }
        let (shortest, side) = varying
            .iter()
            .enumerate()
            .min_by_key(|(_, side)| side.coords.len())?;
        // Scanning the varying fiber against the map costs a lookup per
        // coordinate; the intersection drives only when it is so much
        // shorter that searching the fiber for each of its coordinates
        // costs less.
        let length = self.invariant.coords.len();
        let by_invariant = length.saturating_mul(GALLOP_RATIO) < side.coords.len();
        let steps = if by_invariant {
            length
        } else {
            side.coords.len()
        };
        if let Err(e) = self.count_steps(steps) {
            return Some(Err(e));
        }
        Some(self.invariant.sum(&varying, shortest, by_invariant))
    }

    /// Counts inner iterations and checks for cancellation every
    /// [`CHECK_EVERY`] of them.
    #[inline]
    fn count_steps(&mut self, n: usize) -> Result<()> {
        self.steps += n;
        if self.steps >= CHECK_EVERY {
            let visits = std::mem::take(&mut self.steps);
            self.shared.control.count_visits(visits as u64)?;
            self.shared.control.check()?;
        }
        Ok(())
    }

    /// Moves the inputs read at `depth` to `positions`.
    #[inline]
    fn set(&mut self, depth: usize, positions: &[usize]) {
        for (part, &p) in self.shared.kernel.parts[depth].iter().zip(positions) {
            self.pos[part.input] = p;
        }
    }

    fn add(&mut self, value: T) -> Result<()> {
        let kernel = self.shared.kernel;
        if kernel.suffix.is_empty() {
            // Every output level is written in loop order: each output
            // coordinate is reached once, so its value is final.
            self.make_room(1);
            let coords = &self.coords;
            self.out
                .push(kernel.query.output.iter().map(|&v| coords[v]), value);
            let bytes = entry_bytes(kernel.query.output.len());
            self.charge(bytes)?;
            self.kept += bytes;
            if let Some(budget) = kernel.budget
                && budget.take(value.rows())
            {
                self.full = true;
                return Err(Error::Cancelled);
            }
            return Ok(());
        }
        let new = self
            .acc
            .add(&self.coords, &kernel.suffix, value, |a, b| a.add(b))?;
        if new && !kernel.suffix.is_empty() {
            self.charge(entry_bytes(kernel.suffix.len()))?;
        }
        Ok(())
    }

    /// Charges `bytes` against the memory limit, in batches of
    /// [`CHARGE_BATCH`] (one shared counter update per entry would cost
    /// more than computing a row of SpMV).
    fn charge(&mut self, bytes: u64) -> Result<()> {
        self.pending += bytes;
        if self.pending >= CHARGE_BATCH {
            self.shared.control.reserve(self.pending)?;
            self.reserved += self.pending;
            self.pending = 0;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let kernel = self.shared.kernel;
        if kernel.suffix.is_empty() {
            return Ok(());
        }
        self.make_room(self.acc.written());
        let before = self.out.len();
        let ProductWorker {
            acc, out, coords, ..
        } = self;
        acc.drain(|suffix_key, v| {
            out.push(output_key(kernel, coords, suffix_key), v);
            Ok(())
        })?;
        let added = (self.out.len() - before) as u64;
        let bytes = entry_bytes(kernel.query.output.len()) * added;
        self.charge(bytes)?;
        self.kept += bytes;
        Ok(())
    }
}

/// Calls `f(worker, positions)` for every coordinate of loop `depth` where
/// every input read there has an entry, with the inputs' child positions
/// (in the order of the loop's parts); binds the loop's variable and
/// restores the inputs' positions afterwards.
#[inline]
fn visit<'s, 'a, T: Num, F>(
    w: &mut ProductWorker<'_, 's, 'a, T>,
    depth: usize,
    mut f: F,
) -> Result<()>
where
    F: FnMut(&mut ProductWorker<'_, 's, 'a, T>, &[usize]) -> Result<()>,
{
    let kernel: &Kernel<'a> = w.shared.kernel;
    if let [part] = kernel.parts[depth].as_slice()
        && part.count == 1
        && (depth > 0 || w.top.is_none())
    {
        // One input's sorted fiber and nothing to intersect it with (a
        // fact table's key levels): its coordinates in order, without the
        // join's buffers.
        let parent = w.pos[part.input];
        let Some(fiber) = kernel.inputs[part.input].fiber(part.level, parent) else {
            return Ok(());
        };
        if let Some((coords, base)) = fiber.consecutive() {
            let var = kernel.vars[depth];
            let mut result = Ok(());
            for (i, &c) in coords.iter().enumerate() {
                w.coords[var] = c;
                result = f(w, &[base + i]);
                if result.is_err() {
                    break;
                }
            }
            w.pos[part.input] = parent;
            return result.and_then(|()| w.count_steps(coords.len()));
        }
    }
    let mut scratch = std::mem::take(&mut w.scratch[depth]);
    let result = visit_with(w, depth, &mut scratch, f);
    let kernel = w.shared.kernel;
    for (part, &p) in kernel.parts[depth].iter().zip(&scratch.parents) {
        w.pos[part.input] = p;
    }
    w.scratch[depth] = scratch;
    result
}

/// [`visit`] with the loop's buffers.
#[inline]
fn visit_with<'s, 'a, T: Num, F>(
    w: &mut ProductWorker<'_, 's, 'a, T>,
    depth: usize,
    scratch: &mut Scratch<'a>,
    mut f: F,
) -> Result<()>
where
    F: FnMut(&mut ProductWorker<'_, 's, 'a, T>, &[usize]) -> Result<()>,
{
    let kernel: &Kernel<'a> = w.shared.kernel;
    let parts = &kernel.parts[depth];
    let var = kernel.vars[depth];
    scratch.parents.clear();
    scratch.parents.extend(parts.iter().map(|p| w.pos[p.input]));
    scratch.positions.clear();
    scratch.positions.resize(parts.len(), 0);
    let top = match w.top.take().filter(|_| depth == 0) {
        None => {
            let scanned = intersect(kernel, depth, scratch, |c, positions| {
                w.coords[var] = c;
                f(w, positions)
            })?;
            return w.count_steps(scanned);
        }
        Some(Top::Positions(lo, hi)) => {
            let result = visit_positions(w, scratch, lo, hi, f);
            w.top = Some(Top::Positions(lo, hi));
            return result;
        }
        Some(Top::Cands(top)) => top,
    };
    // The chunk's coordinates ascend: seek through compressed levels.
    scratch.probes.clear();
    for (j, (part, &parent)) in parts.iter().zip(&scratch.parents).enumerate() {
        let input = &kernel.inputs[part.input];
        let Some(fiber) = input.fiber(part.level, parent) else {
            w.top = Some(Top::Cands(top));
            return Ok(());
        };
        let probe = match input.tree.levels().get(part.level).map(|l| l.format()) {
            Some(LevelFormat::Compressed) => Probe::Seek(fiber.cursor()),
            _ => Probe::Direct(fiber),
        };
        scratch.probes.push((j, probe));
    }
    let mut result = Ok(());
    for i in 0..top.len() {
        if i % CHECK_TOP_EVERY == 0
            && let Err(e) = w.shared.control.check()
        {
            result = Err(e);
            break;
        }
        let c = top.get(i);
        let found = scratch
            .probes
            .iter_mut()
            .zip(scratch.positions.iter_mut())
            .all(|((j, probe), slot)| {
                let part = &parts[*j];
                let p = probe.find(c).and_then(|p| {
                    if part.count > 1 {
                        kernel.inputs[part.input].descend(p, part.level + 1, part.count - 1, c)
                    } else {
                        Some(p)
                    }
                });
                match p {
                    Some(p) => {
                        *slot = p;
                        true
                    }
                    None => false,
                }
            });
        if found {
            w.coords[var] = c;
            if let Err(e) = f(w, &scratch.positions) {
                result = Err(e);
                break;
            }
        }
    }
    w.top = Some(Top::Cands(top));
    result
}

/// The outermost loop of a chunk whose only input read there is walked in
/// position order (see [`sequential_top`]): no seek, no probe; the
/// position is the input's child and the stored coordinate binds the loop.
fn visit_positions<'s, 'a, T: Num, F>(
    w: &mut ProductWorker<'_, 's, 'a, T>,
    scratch: &mut Scratch<'a>,
    lo: usize,
    hi: usize,
    mut f: F,
) -> Result<()>
where
    F: FnMut(&mut ProductWorker<'_, 's, 'a, T>, &[usize]) -> Result<()>,
{
    let kernel: &Kernel<'a> = w.shared.kernel;
    let var = kernel.vars[0];
    let crd = kernel.parts[0]
        .first()
        .and_then(|part| kernel.inputs[part.input].tree.levels().get(part.level))
        .and_then(|level| level.crd())
        .and_then(|crd| crd.get(lo..hi))
        .unwrap_or(&[]);
    for (i, &c) in crd.iter().enumerate() {
        if i % CHECK_TOP_EVERY == 0 {
            w.shared.control.check()?;
        }
        w.coords[var] = c;
        scratch.positions[0] = lo + i;
        f(w, &scratch.positions)?;
    }
    Ok(())
}

/// A chunk of the outermost loop.
enum Top {
    /// Candidate coordinates, probed in every input read there.
    Cands(Cands),
    /// The child positions `lo..hi` of the only input read there, walked
    /// in order (see [`sequential_top`]).
    Positions(usize, usize),
}

impl Top {
    fn len(&self) -> usize {
        match self {
            Top::Cands(c) => c.len(),
            Top::Positions(lo, hi) => hi - lo,
        }
    }
}

/// The outermost loop's candidates, and the child positions `lo..hi` of
/// its fiber when that loop reads one present input, at one compressed
/// or hashed level, and its candidates are exactly that fiber's
/// coordinates: the loop can walk the positions in order instead of
/// seeking each candidate (SpMV's rows). The candidates are then not
/// copied (an empty list stands for them) when the worker says they are
/// that input's fiber.
fn sequential_top(
    kernel: &Kernel<'_>,
    root: &mut Worker<'_, '_>,
) -> (Cands, Option<(usize, usize)>) {
    let Some((input, coords, lo)) = outer_fiber(kernel, &root.pos, &root.present) else {
        return (root.candidates(0), None);
    };
    let range = Some((lo, lo + coords.len()));
    if root.candidate_input(0) == Some(input) {
        return (Cands::List(Vec::new()), range);
    }
    let top = root.candidates(0);
    let same = match &top {
        Cands::List(list) => list.as_slice() == coords,
        // Sorted distinct coordinates, as many as the range holds, from
        // its first to its last: exactly the range.
        Cands::Range(first, end) => {
            coords.len() == top.len()
                && coords.first().is_none_or(|c| c == first)
                && coords.last().is_none_or(|&c| c == end - 1)
        }
    };
    (top, range.filter(|_| same))
}

/// The fiber of the outermost loop when that loop reads one present
/// input, at one compressed or hashed level: the input, the fiber's
/// sorted coordinates and the position of the first.
fn outer_fiber<'a>(
    kernel: &Kernel<'a>,
    pos: &[usize],
    present: &[bool],
) -> Option<(usize, &'a [i64], usize)> {
    let [part] = kernel.parts.first()?.as_slice() else {
        return None;
    };
    if part.count != 1 || !present.get(part.input).copied().unwrap_or(false) {
        return None;
    }
    let input = kernel.inputs.get(part.input)?;
    let level = input.tree.levels().get(part.level)?;
    if !matches!(
        level.format(),
        LevelFormat::Compressed | LevelFormat::Hashed
    ) {
        return None;
    }
    let fiber = level.fiber(*pos.get(part.input)?);
    let coords = fiber.sorted_coords()?;
    let lo = fiber.cursor().current().map_or(0, |(_, p)| p);
    Some((part.input, coords, lo))
}

/// The chunks of a [`sequential_top`] loop over positions `lo..hi`: the
/// split of [`top_weights`]' weights (1 plus the length of the next fiber
/// under each position), by the loops' estimated `work` where
/// [`Kernel::split_work`] gives one. Over a compressed next level, the
/// running sums of the weights are its position bounds, and the split
/// searches them ([`split_sums`]) instead of listing a weight per
/// position.
fn sequential_chunks(
    kernel: &Kernel<'_>,
    lo: usize,
    hi: usize,
    work: Option<f64>,
) -> Vec<(usize, usize)> {
    let Some(part) = kernel.parts.first().and_then(|parts| parts.first()) else {
        return split(&[], hi - lo, work);
    };
    let input = &kernel.inputs[part.input];
    let bounds = input
        .tree
        .levels()
        .get(part.level + 1)
        .filter(|l| l.format() == LevelFormat::Compressed)
        .and_then(|l| l.pos())
        .and_then(|pos| pos.get(lo..=hi));
    if let Some(bounds) = bounds {
        let first = bounds.first().copied().unwrap_or(0);
        return split_sums(
            hi - lo,
            |i| {
                let below = bounds
                    .get(i)
                    .copied()
                    .unwrap_or(first)
                    .saturating_sub(first);
                (i + below) as u64
            },
            work,
        );
    }
    let weights: Vec<u64> = (lo..hi)
        .map(|p| 1 + input.fiber(part.level + 1, p).map_or(0, |f| f.len() as u64))
        .collect();
    split(&weights, hi - lo, work)
}

/// The probes of an innermost loop when every probed input is read at a
/// dense-addressed leaf with a value array: the value of coordinate `c` is
/// `values[base + c]` for `c < stride`, and an absent slot holds 0, which
/// annihilates the product just as the absence would. No presence test,
/// no dispatch on the level format per entry.
struct SlotProbes<'v, T> {
    count: usize,
    probes: [(usize, usize, &'v [T]); MOST_SLOT_PROBES],
}

/// The most probes [`SlotProbes`] takes (SDDMM and MTTKRP probe two).
const MOST_SLOT_PROBES: usize = 4;

impl<'v, T: Num> SlotProbes<'v, T> {
    /// The sum over the driver's entries (`coords` and `values`, all 1
    /// when `None`) of the products with the probed values; `None` when
    /// no product is non-zero. Zero factors are skipped, as in the
    /// general loop, so a zero next to a NaN gives no term. With one
    /// probe, `single` holds its values ([`SlotProbes::single`]).
    ///
    /// SpMV's rows take a shortcut to the same sums
    /// ([`Num::quick_rows`]).
    #[inline(always)]
    fn sum(&self, single: Option<&[T]>, coords: &[i64], values: Option<&[T]>) -> Result<Option<T>> {
        match values {
            Some(v) => self.exact(single, coords.iter().copied().zip(v.iter().copied())),
            None => self.exact(single, coords.iter().map(|&c| (c, T::ONE))),
        }
    }

    /// [`SlotProbes::sum`] over `entries`.
    #[inline(always)]
    fn exact(
        &self,
        single: Option<&[T]>,
        entries: impl Iterator<Item = (i64, T)>,
    ) -> Result<Option<T>> {
        let mut sum = T::ZERO;
        let mut any = false;
        if let Some(values) = single {
            for (c, v) in entries {
                let Some(&x) = usize::try_from(c).ok().and_then(|c| values.get(c)) else {
                    continue;
                };
                if v == T::ZERO || x == T::ZERO {
                    continue;
                }
                sum.add(v.times(x)?)?;
                any = true;
            }
            return Ok(any.then_some(sum));
        }
        'entries: for (c, mut v) in entries {
            if v == T::ZERO {
                continue;
            }
            let Ok(c) = usize::try_from(c) else {
                continue;
            };
            for &(base, stride, values) in &self.probes[..self.count] {
                let x = match values.get(base + c) {
                    Some(&x) if c < stride && x != T::ZERO => x,
                    _ => continue 'entries,
                };
                v = v.times(x)?;
            }
            sum.add(v)?;
            any = true;
        }
        Ok(any.then_some(sum))
    }
}

impl<'v, T: Num> SlotProbes<'v, T> {
    /// The values of the only probe over its slots, if there is one.
    fn single(&self) -> Option<&'v [T]> {
        let [(base, stride, values)] = self.probes[..self.count] else {
            return None;
        };
        let values = values.get(base..).unwrap_or(&[]);
        values.get(..stride.min(values.len()))
    }
}

/// The driver's leaf positions of each row of [`ProductWorker::rows`].
#[derive(Clone, Copy)]
enum RowBounds<'v> {
    /// Row `i` is `bounds[i]..bounds[i + 1]`.
    Each(&'v [usize]),
    /// Every row is `from..to`.
    Same(usize, usize),
}

impl RowBounds<'_> {
    #[inline(always)]
    fn get(self, i: usize) -> (usize, usize) {
        match self {
            RowBounds::Each(bounds) => match (bounds.get(i), bounds.get(i + 1)) {
                (Some(&from), Some(&to)) => (from, to),
                _ => (0, 0),
            },
            RowBounds::Same(from, to) => (from, to),
        }
    }
}

/// What [`ProductWorker::emit_rows`] sums: the rows' coordinates and
/// leaf positions, the driver's leaf coordinates and values, and the
/// probes.
struct Rows<'v, T> {
    crd: &'v [i64],
    bounds: RowBounds<'v>,
    leaf: &'v [i64],
    /// `None`: every value is 1.
    values: Option<&'v [T]>,
    /// The only probe's values ([`SlotProbes::single`]).
    single: Option<&'v [T]>,
    probes: SlotProbes<'v, T>,
}

impl<T: Num> Rows<'_, T> {
    /// Row `i`'s entries: the driver's coordinates and values (`None`:
    /// all 1).
    #[inline(always)]
    fn row(&self, i: usize) -> (&[i64], Option<&[T]>) {
        let (from, to) = self.bounds.get(i);
        let coords = self.leaf.get(from..to).unwrap_or(&[]);
        let values = self.values.map(|v| v.get(from..).unwrap_or(&[]));
        (coords, values)
    }

    /// The end of the block of rows from `first`: [`CHECK_TOP_EVERY`]
    /// rows, fewer when they hold more than [`CHECK_EVERY`] steps (at
    /// least one row).
    fn block_end(&self, first: usize) -> usize {
        let end = first.saturating_add(CHECK_TOP_EVERY).min(self.crd.len());
        match self.bounds {
            RowBounds::Each(bounds) => {
                let start = bounds.get(first).copied().unwrap_or(0);
                let ends = bounds.get(first + 1..=end).unwrap_or(&[]);
                let under = ends.partition_point(|&p| p.saturating_sub(start) < CHECK_EVERY);
                (first + 1 + under).min(end)
            }
            RowBounds::Same(from, to) => {
                let rows = CHECK_EVERY / to.saturating_sub(from).max(1);
                first
                    .saturating_add(rows.clamp(1, CHECK_TOP_EVERY))
                    .min(self.crd.len())
            }
        }
    }

    /// The row's sum by the exact loop ([`SlotProbes::sum`]).
    #[inline(never)]
    fn exact(&self, coords: &[i64], values: Option<&[T]>) -> Result<Option<T>> {
        match values {
            Some(v) => self
                .probes
                .exact(self.single, coords.iter().copied().zip(v.iter().copied())),
            None => self
                .probes
                .exact(self.single, coords.iter().map(|&c| (c, T::ONE))),
        }
    }
}

/// How many outermost coordinates a worker visits between two
/// cancellation checks (the inner loops check by their own count).
const CHECK_TOP_EVERY: usize = 64;

/// Reusable buffers of one loop: the inputs' parent and child positions,
/// their fibers and formats, and the probes.
#[derive(Default)]
struct Scratch<'a> {
    parents: Vec<usize>,
    positions: Vec<usize>,
    fibers: Vec<Fiber<'a>>,
    formats: Vec<Option<LevelFormat>>,
    probes: Vec<(usize, Probe<'a>)>,
}

/// One sorted fiber of a two-input innermost loop: its input and parent
/// position (which name it), coordinates, first position and the input's
/// values (`None`: every value is 1).
struct Side<'a, 'v, T> {
    key: (usize, usize),
    coords: &'a [i64],
    base: usize,
    values: Option<&'v [T]>,
}

/// A map from coordinates to positions of one fiber, for the innermost
/// loop ([`ProductWorker::marked_sum`]): per coordinate of the loop's
/// space, the child position + 1 (0: absent).
#[derive(Default)]
struct Marks<'a> {
    /// The input and parent position of the fiber mapped.
    key: Option<(usize, usize)>,
    /// Its coordinates (to clear them).
    coords: &'a [i64],
    slots: Vec<u32>,
}

/// Fibers shorter than this are merged rather than mapped.
const MARK_MIN: usize = 16;

/// Loop spaces larger than this (coordinates) are not mapped: the map
/// would take 4 bytes per coordinate per worker.
const MARK_SPACE: u64 = 1 << 20;

impl<'a> Marks<'a> {
    /// Whether mapping `side` can pay and is exact: the fiber mapped
    /// already, or a long enough one in a space small enough, whose
    /// coordinates lie in the space and whose positions fit the map.
    fn worth<T>(&self, side: &Side<'a, '_, T>, space: u64) -> bool {
        if self.key == Some(side.key) {
            return true;
        }
        let (Some(&first), Some(&last)) = (side.coords.first(), side.coords.last()) else {
            return false;
        };
        side.coords.len() >= MARK_MIN
            && space <= MARK_SPACE
            && first >= 0
            && u64::try_from(last).is_ok_and(|last| last < space)
            && side.base + side.coords.len() < u32::MAX as usize
    }

    /// Maps `side`'s fiber instead of the one mapped before; returns the
    /// bytes the map grew by.
    fn map<T>(&mut self, side: &Side<'a, '_, T>, space: u64) -> u64 {
        for &c in self.coords {
            if let Some(slot) = self.slots.get_mut(c as usize) {
                *slot = 0;
            }
        }
        let before = self.slots.len();
        let space = usize::try_from(space).unwrap_or(usize::MAX);
        if self.slots.len() < space {
            self.slots.resize(space, 0);
        }
        for (t, &c) in side.coords.iter().enumerate() {
            if let (Some(slot), Ok(p)) = (
                self.slots.get_mut(c as usize),
                u32::try_from(side.base + t + 1),
            ) {
                *slot = p;
            }
        }
        self.key = Some(side.key);
        self.coords = side.coords;
        ((self.slots.len() - before) * std::mem::size_of::<u32>()) as u64
    }
}

/// The most fibers an innermost loop keeps apart as staying or varying
/// for [`ProductWorker::invariant_sum`].
const MOST_SIDES: usize = 8;

/// Up to [`MOST_SIDES`] fibers of an innermost loop, on the stack.
struct SideSet<'a, 'v, T> {
    sides: [Option<Side<'a, 'v, T>>; MOST_SIDES],
    len: usize,
}

impl<T> Default for SideSet<'_, '_, T> {
    fn default() -> Self {
        SideSet {
            sides: std::array::from_fn(|_| None),
            len: 0,
        }
    }
}

impl<'a, 'v, T> SideSet<'a, 'v, T> {
    /// Adds `side`; `None` when the set is full.
    fn push(&mut self, side: Side<'a, 'v, T>) -> Option<()> {
        *self.sides.get_mut(self.len)? = Some(side);
        self.len += 1;
        Some(())
    }

    fn iter(&self) -> impl Iterator<Item = &Side<'a, 'v, T>> {
        self.sides.iter().take(self.len).flatten()
    }
}

/// The intersection of the innermost loop's staying fibers (see
/// [`ProductWorker::invariant_sum`]): their shared coordinates, the
/// product of their values at each, and a map from coordinates to them.
struct Invariant<T> {
    /// The (input, parent position) of each staying fiber last seen.
    key: Vec<(usize, usize)>,
    /// Whether `coords` holds the intersection of `key`'s fibers (it is
    /// built on the second visit under them).
    built: bool,
    /// Whether that intersection cannot be mapped (a coordinate outside
    /// the loop's space): the probing loop takes these fibers.
    unmappable: bool,
    /// The shared coordinates, ascending.
    coords: Vec<i64>,
    /// The product of the staying fibers' values at each shared
    /// coordinate; empty when every fiber's values are 1.
    products: Vec<T>,
    /// Per coordinate of the loop's space, its index in `coords` + 1 (0:
    /// absent).
    slots: Vec<u32>,
    /// The buffers `build` swaps with `coords` and `products` while it
    /// intersects, kept to be reused.
    spare: (Vec<i64>, Vec<T>),
}

impl<T> Default for Invariant<T> {
    fn default() -> Self {
        Invariant {
            key: Vec::new(),
            built: false,
            unmappable: false,
            coords: Vec::new(),
            products: Vec::new(),
            slots: Vec::new(),
            spare: (Vec::new(), Vec::new()),
        }
    }
}

impl<T: Num> Invariant<T> {
    /// Whether the staying fibers named by `keys` (input, parent position)
    /// are the ones last seen.
    fn holds(&self, keys: impl Iterator<Item = (usize, usize)>) -> bool {
        self.key.iter().copied().eq(keys)
    }

    /// Remembers the staying fibers named by `keys` as the ones last seen,
    /// not yet intersected; the map of the previous intersection is
    /// cleared.
    fn expect(&mut self, keys: impl Iterator<Item = (usize, usize)>) {
        for &c in &self.coords {
            if let Some(slot) = self.slots.get_mut(c as usize) {
                *slot = 0;
            }
        }
        self.coords.clear();
        self.products.clear();
        self.key.clear();
        self.key.extend(keys);
        self.built = false;
        self.unmappable = false;
    }

    /// Intersects the `staying` fibers and maps the shared coordinates;
    /// the bytes the map grew by. `None` when a coordinate lies outside
    /// the loop's `space` or the intersection is too long for the map
    /// (nothing is mapped then, and the fibers are not taken as built).
    fn build(&mut self, staying: &SideSet<'_, '_, T>, space: u64) -> Result<Option<u64>> {
        let Some((shortest, first)) = staying
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.coords.len())
        else {
            return Ok(None);
        };
        let weighted = staying.iter().any(|s| s.values.is_some());
        self.coords.extend_from_slice(first.coords);
        if weighted {
            self.products
                .extend((0..first.coords.len()).map(|t| read(first.values, first.base + t)));
        }
        let (mut next, mut products) = std::mem::take(&mut self.spare);
        for (k, side) in staying.iter().enumerate() {
            if k == shortest {
                continue;
            }
            next.clear();
            products.clear();
            for_common(&self.coords, side.coords, |i, j| {
                next.push(self.coords[i]);
                if weighted {
                    let p = self.products[i].times(read(side.values, side.base + j))?;
                    products.push(p);
                }
                Ok(())
            })?;
            std::mem::swap(&mut self.coords, &mut next);
            if weighted {
                std::mem::swap(&mut self.products, &mut products);
            }
        }
        self.spare = (next, products);
        let (Some(&lo), Some(&hi)) = (self.coords.first(), self.coords.last()) else {
            self.built = true;
            return Ok(Some(0));
        };
        let fits = usize::try_from(space).ok().filter(|&space| {
            lo >= 0
                && usize::try_from(hi).is_ok_and(|hi| hi < space)
                && self.coords.len() < u32::MAX as usize
        });
        let Some(space) = fits else {
            self.coords.clear();
            self.products.clear();
            return Ok(None);
        };
        let before = self.slots.len();
        if self.slots.len() < space {
            self.slots.resize(space, 0);
        }
        for (i, &c) in self.coords.iter().enumerate() {
            self.slots[c as usize] = (i + 1) as u32;
        }
        self.built = true;
        Ok(Some(
            ((self.slots.len() - before) * std::mem::size_of::<u32>()) as u64,
        ))
    }

    /// The product of the staying fibers' values at the `i`-th shared
    /// coordinate.
    #[inline]
    fn product(&self, i: usize) -> T {
        self.products.get(i).copied().unwrap_or(T::ONE)
    }

    /// The sum over the coordinates the intersection shares with every
    /// `varying` fiber of the product of all their values: driven by the
    /// intersection's coordinates (`by_invariant`), each varying fiber
    /// searched from where the last search in it stopped, else by the
    /// `shortest` varying fiber, looked up in the map and the others
    /// searched.
    fn sum(
        &self,
        varying: &SideSet<'_, '_, T>,
        shortest: usize,
        by_invariant: bool,
    ) -> Result<Option<T>> {
        let counting = self.products.is_empty() && varying.iter().all(|s| s.values.is_none());
        if counting
            && varying.len == 1
            && let Some(side) = varying.iter().next()
        {
            let n = if by_invariant {
                let mut n = 0u128;
                for_common(&self.coords, side.coords, |_, _| {
                    n += 1;
                    Ok(())
                })?;
                n
            } else {
                side.coords
                    .iter()
                    .filter(|&&c| self.slots.get(c as usize).is_some_and(|&s| s != 0))
                    .count() as u128
            };
            return if n == 0 {
                Ok(None)
            } else {
                T::ONE.repeat(n).map(Some)
            };
        }
        let (mut sum, mut any) = (T::ZERO, false);
        let mut at = [0usize; MOST_SIDES];
        // The product of the varying fibers' values at `c`, each found
        // from where the last search left it; `None` when one lacks `c`
        // or has a zero there.
        let mut others = |c: i64, skip: Option<usize>, mut v: T| -> Result<Option<T>> {
            for (k, side) in varying.iter().enumerate() {
                if Some(k) == skip {
                    continue;
                }
                let rest = side.coords.get(at[k]..).unwrap_or(&[]);
                let t = at[k] + rest.partition_point(|&y| y < c);
                at[k] = t;
                if side.coords.get(t) != Some(&c) {
                    return Ok(None);
                }
                let x = read(side.values, side.base + t);
                if x == T::ZERO {
                    return Ok(None);
                }
                v = v.times(x)?;
            }
            Ok(Some(v))
        };
        if by_invariant {
            for (i, &c) in self.coords.iter().enumerate() {
                let p = self.product(i);
                if p == T::ZERO {
                    continue;
                }
                if let Some(v) = others(c, None, p)? {
                    sum.add(v)?;
                    any = true;
                }
            }
        } else if let Some(side) = varying.iter().nth(shortest) {
            for (t, &c) in side.coords.iter().enumerate() {
                let slot = self.slots.get(c as usize).copied().unwrap_or(0);
                if slot == 0 {
                    continue;
                }
                let p = self.product(slot as usize - 1);
                let x = read(side.values, side.base + t);
                if p == T::ZERO || x == T::ZERO {
                    continue;
                }
                if let Some(v) = others(c, Some(shortest), p.times(x)?)? {
                    sum.add(v)?;
                    any = true;
                }
            }
        }
        Ok(any.then_some(sum))
    }
}

/// The sum over the coordinates two sorted fibers share of the product
/// of their values (`None`: every value is 1, and the sum is the number of
/// shared coordinates); `None` when no product is non-zero.
fn merged_sum<T: Num>(
    (a, va): (&[i64], Option<&[T]>),
    (b, vb): (&[i64], Option<&[T]>),
) -> Result<Option<T>> {
    if va.is_none() && vb.is_none() {
        let n = if b.len() / GALLOP_RATIO > a.len() {
            let mut n = 0u128;
            for_common(a, b, |_, _| {
                n += 1;
                Ok(())
            })?;
            n
        } else {
            common_count(a, b)
        };
        return if n == 0 {
            Ok(None)
        } else {
            T::ONE.repeat(n).map(Some)
        };
    }
    let (mut sum, mut any) = (T::ZERO, false);
    for_common(a, b, |i, j| {
        let (x, y) = (read(va, i), read(vb, j));
        if x != T::ZERO && y != T::ZERO {
            sum.add(x.times(y)?)?;
            any = true;
        }
        Ok(())
    })?;
    Ok(any.then_some(sum))
}

/// A fiber this many times longer than the other is searched (galloping)
/// rather than merged.
const GALLOP_RATIO: usize = 16;

/// Calls `f(i, j)` for every `a[i] == b[j]`, in order: a merge, or for each
/// coordinate of `a` a galloping search in `b` when `b` is more than
/// [`GALLOP_RATIO`] times longer.
#[inline]
fn for_common(a: &[i64], b: &[i64], mut f: impl FnMut(usize, usize) -> Result<()>) -> Result<()> {
    if b.len() / GALLOP_RATIO > a.len() {
        let mut lo = 0;
        for (i, &x) in a.iter().enumerate() {
            let rest = &b[lo..];
            let mut step = 1;
            while step < rest.len() && rest[step] < x {
                step *= 2;
            }
            lo += rest[..(step + 1).min(rest.len())].partition_point(|&y| y < x);
            match b.get(lo) {
                None => break,
                Some(&y) if y == x => {
                    f(i, lo)?;
                    lo += 1;
                }
                Some(_) => {}
            }
        }
        return Ok(());
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x == y {
            f(i, j)?;
        }
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    Ok(())
}

/// The number of coordinates two sorted slices share: a branch-free merge.
#[inline]
fn common_count(a: &[i64], b: &[i64]) -> u128 {
    let (mut i, mut j, mut n) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        n += u64::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    u128::from(n)
}

/// The intersection of the fibers read at one loop: the driver's fiber,
/// iterated, and a probe into each other fiber (kept in the loop's
/// [`Scratch`]).
#[derive(Clone, Copy)]
struct Join<'a> {
    /// The driving part (a position in the loop's parts).
    driver: usize,
    fiber: Fiber<'a>,
}

impl<'a> Join<'a> {
    /// The intersection at loop `depth` under the inputs' positions in
    /// `scratch.parents`; the driver is fixed by the plan, else the
    /// shortest fiber (a dense level only when all are dense). The probes
    /// go to `scratch.probes`. `None` when an input has no such fiber.
    fn new(kernel: &Kernel<'a>, depth: usize, scratch: &mut Scratch<'a>) -> Option<Join<'a>> {
        let parts = &kernel.parts[depth];
        let (fibers, formats) = (&mut scratch.fibers, &mut scratch.formats);
        fibers.clear();
        formats.clear();
        for (part, &parent) in parts.iter().zip(&scratch.parents) {
            let input = &kernel.inputs[part.input];
            fibers.push(input.fiber(part.level, parent)?);
            formats.push(input.tree.levels().get(part.level).map(|l| l.format()));
        }
        let fixed = kernel
            .fixed_driver(depth)
            .and_then(|k| parts.iter().position(|p| p.input == k));
        let driver = match fixed {
            Some(j) => j,
            None => (0..parts.len()).min_by_key(|&j| {
                if formats[j] == Some(LevelFormat::Dense) {
                    usize::MAX
                } else {
                    fibers[j].len()
                }
            })?,
        };
        scratch.probes.clear();
        for (j, (fiber, format)) in fibers.iter().zip(formats.iter()).enumerate() {
            if j == driver {
                continue;
            }
            let probe = match format {
                Some(LevelFormat::Compressed) => Probe::Seek(fiber.cursor()),
                _ => Probe::Direct(*fiber),
            };
            scratch.probes.push((j, probe));
        }
        Some(Join {
            driver,
            fiber: fibers[driver],
        })
    }
}

/// Iterates the intersection of the fibers read at loop `depth` under
/// `scratch.parents`, calling `f(coordinate, positions)` with every input's child
/// position (in the order of the loop's parts). Returns the work done
/// here, for the caller's cancellation count: the driver's coordinates
/// it went through (each probed in the other fibers, most of them maybe
/// in vain), and at least 1.
#[inline]
fn intersect<'a>(
    kernel: &Kernel<'a>,
    depth: usize,
    scratch: &mut Scratch<'a>,
    mut f: impl FnMut(i64, &[usize]) -> Result<()>,
) -> Result<usize> {
    let parts = &kernel.parts[depth];
    let Some(join) = Join::new(kernel, depth, scratch) else {
        return Ok(1);
    };
    let (probes, positions) = (&mut scratch.probes, &mut scratch.positions);
    let driver = join.driver;
    let sorted = join.fiber.consecutive();
    let fiber = join.fiber;
    let drive = &parts[driver];
    let driver_input = &kernel.inputs[drive.input];
    let mut emit = |c: i64, child: usize, positions: &mut [usize]| -> Result<()> {
        let child = if drive.count > 1 {
            match driver_input.descend(child, drive.level + 1, drive.count - 1, c) {
                Some(p) => p,
                None => return Ok(()),
            }
        } else {
            child
        };
        positions[driver] = child;
        for (j, probe) in probes.iter_mut() {
            let part = &parts[*j];
            let Some(mut p) = probe.find(c) else {
                return Ok(());
            };
            if part.count > 1 {
                match kernel.inputs[part.input].descend(p, part.level + 1, part.count - 1, c) {
                    Some(q) => p = q,
                    None => return Ok(()),
                }
            }
            positions[*j] = p;
        }
        f(c, positions)
    };
    let scanned = match sorted {
        Some((coords, base)) => {
            for (i, &c) in coords.iter().enumerate() {
                emit(c, base + i, positions)?;
            }
            coords.len()
        }
        None => {
            let mut scanned = 0;
            for (c, child) in fiber.cursor() {
                emit(c, child, positions)?;
                scanned += 1;
            }
            scanned
        }
    };
    Ok(scanned.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorted distinct coordinates below `range`, each kept with
    /// probability `1 / keep` (xorshift from `seed`).
    fn sorted(seed: &mut u64, range: i64, keep: u64) -> Vec<i64> {
        (0..range)
            .filter(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                (*seed).is_multiple_of(keep)
            })
            .collect()
    }

    #[test]
    fn merges_and_gallops_find_every_shared_coordinate() {
        let mut seed = 0x1234_5678_9abc_def1;
        for (range, keep_a, keep_b) in [(200, 2, 3), (5000, 400, 2), (300, 1, 1), (50, 60, 2)] {
            for _ in 0..20 {
                let a = sorted(&mut seed, range, keep_a);
                let b = sorted(&mut seed, range, keep_b);
                let expected: Vec<(usize, usize)> = a
                    .iter()
                    .enumerate()
                    .filter_map(|(i, x)| b.binary_search(x).ok().map(|j| (i, j)))
                    .collect();
                let mut found = Vec::new();
                for_common(&a, &b, |i, j| {
                    found.push((i, j));
                    Ok(())
                })
                .expect("no error");
                assert_eq!(found, expected);
                assert_eq!(common_count(&a, &b), expected.len() as u128);
                let count = merged_sum::<i64>((&a, None), (&b, None)).expect("fits");
                assert_eq!(
                    count,
                    (!expected.is_empty()).then_some(expected.len() as i64)
                );
                let va: Vec<f64> = a.iter().map(|&c| c as f64).collect();
                let vb: Vec<f64> = b.iter().map(|&c| (c % 3) as f64).collect();
                let sum = merged_sum::<f64>((&a, Some(&va)), (&b, Some(&vb))).expect("sums");
                let products: Vec<f64> = expected
                    .iter()
                    .map(|&(i, j)| va[i] * vb[j])
                    .filter(|&p| p != 0.0)
                    .collect();
                let want = (!products.is_empty()).then(|| products.iter().sum::<f64>());
                assert_eq!(sum, want);
            }
        }
    }

    /// The sum over the coordinates every fiber shares of the product of
    /// their values, directly (`None` when no product is non-zero).
    fn shared_sum(fibers: &[(Vec<i64>, Option<Vec<f64>>)]) -> Option<f64> {
        let (first, rest) = fibers.split_first()?;
        let products: Vec<f64> = first
            .0
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let mut v = first.1.as_ref().map_or(1.0, |vals| vals[i]);
                for (coords, vals) in rest {
                    let j = coords.binary_search(c).ok()?;
                    v *= vals.as_ref().map_or(1.0, |vals| vals[j]);
                }
                (v != 0.0).then_some(v)
            })
            .collect();
        (!products.is_empty()).then(|| products.iter().sum())
    }

    #[test]
    fn the_staying_fibers_intersection_sums_like_all_fibers_together() {
        let mut seed = 0x5eed_2026_1128_0004;
        let space = 3000;
        for (staying_n, varying_n, keeps) in [
            (2, 1, [2, 3, 5, 2, 2]),
            (1, 2, [4, 2, 3, 2, 2]),
            (3, 2, [2, 2, 2, 40, 3]),
            (2, 2, [300, 2, 2, 2, 2]),
        ] {
            for weighted in [false, true] {
                for _ in 0..10 {
                    let fibers: Vec<(Vec<i64>, Option<Vec<f64>>)> = keeps
                        .iter()
                        .take(staying_n + varying_n)
                        .map(|&keep| {
                            let coords = sorted(&mut seed, space, keep);
                            let values = weighted
                                .then(|| coords.iter().map(|&c| ((c % 4) as f64) / 2.0).collect());
                            (coords, values)
                        })
                        .collect();
                    let side = |k: usize| Side {
                        key: (k, 0),
                        coords: &fibers[k].0,
                        base: 0,
                        values: fibers[k].1.as_deref(),
                    };
                    let (mut staying, mut varying) = (SideSet::default(), SideSet::default());
                    for k in 0..staying_n {
                        staying.push(side(k)).expect("room");
                    }
                    for k in staying_n..staying_n + varying_n {
                        varying.push(side(k)).expect("room");
                    }
                    let mut invariant = Invariant::<f64>::default();
                    let keys = || staying.iter().map(|side| side.key);
                    assert!(!invariant.holds(keys()));
                    invariant.expect(keys());
                    assert!(invariant.holds(keys()));
                    invariant
                        .build(&staying, space as u64)
                        .expect("builds")
                        .expect("maps");
                    let want = shared_sum(&fibers);
                    for shortest in 0..varying_n {
                        for by_invariant in [false, true] {
                            let got = invariant
                                .sum(&varying, shortest, by_invariant)
                                .expect("sums");
                            assert_eq!(
                                got,
                                want,
                                "staying {staying_n}, varying {varying_n}, weighted {weighted}, \
                                 driven by {}",
                                if by_invariant {
                                    "the intersection"
                                } else {
                                    "a fiber"
                                }
                            );
                        }
                    }
                    // Other staying fibers: the map is cleared with them.
                    invariant.expect([(0, 1)].into_iter());
                    assert!(!invariant.holds(keys()));
                    assert!(invariant.slots.iter().all(|&s| s == 0));
                }
            }
        }
    }
}
