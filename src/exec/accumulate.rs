//! Output accumulators: where a loop nest writes the values of its output
//! coordinates.
//!
//! The output levels bound by the leading loops are written in order (a
//! finished coordinate is final when its loop advances); the remaining
//! ("random-write") levels accumulate in an [`Accumulator`] keyed by their
//! coordinates: a single slot when there are none, a dense array with a
//! list of touched slots, or a hash table keyed by the coordinates'
//! row-major index (by the coordinates themselves past 2^128 cells). The
//! accumulator is drained into the worker's entries whenever the in-order
//! levels advance. A dense
//! array is allocated on the first write, and the workers of one kernel
//! run hand drained accumulators on through an [`AccumulatorPool`], so
//! that each chunk of the outermost loop does not allocate and clear the
//! array again.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Mutex, PoisonError};

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::ir::{AggOp, Value};

use super::control::Control;
use super::plan::OutputFormat;

/// Output entries, column-wise: the coordinates of each entry (in output
/// order, `dims` per entry, one flat vector) and its value.
#[derive(Clone, Debug)]
pub(crate) struct Entries<S> {
    pub dims: usize,
    pub coords: Vec<i64>,
    pub values: Vec<S>,
    /// Known to be in strictly increasing coordinate order (set by
    /// whoever writes them so; `false` says nothing).
    pub increasing: bool,
}

impl<S: Copy> Entries<S> {
    /// No entries, over `dims` dimensions.
    pub(crate) fn new(dims: usize) -> Entries<S> {
        Entries {
            dims,
            coords: Vec::new(),
            values: Vec::new(),
            increasing: false,
        }
    }

    /// Takes the entries, leaving none.
    pub(crate) fn take(&mut self) -> Entries<S> {
        std::mem::replace(self, Entries::new(self.dims))
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// Makes room for `n` more entries.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.coords.reserve(n.saturating_mul(self.dims));
        self.values.reserve(n);
    }

    /// Appends an entry.
    #[inline]
    pub(crate) fn push(&mut self, key: impl IntoIterator<Item = i64>, value: S) {
        self.coords.extend(key);
        self.values.push(value);
    }

    /// The coordinates of entry `n`.
    pub(crate) fn key(&self, n: usize) -> &[i64] {
        self.coords
            .get(n * self.dims..(n + 1) * self.dims)
            .unwrap_or(&[])
    }

    /// Appends all of `other`'s entries (increasing when both are and
    /// `other`'s come after these).
    pub(crate) fn append(&mut self, mut other: Entries<S>) {
        self.increasing = match (self.len(), other.len()) {
            (0, _) => other.increasing,
            (_, 0) => self.increasing,
            (n, _) => self.increasing && other.increasing && self.key(n - 1) < other.key(0),
        };
        self.coords.append(&mut other.coords);
        self.values.append(&mut other.values);
    }

    /// The entries of `parts`, each over `dims` dimensions, one after
    /// another.
    pub(crate) fn concat(dims: usize, parts: Vec<Entries<S>>) -> Entries<S> {
        let total = parts.iter().map(Entries::len).sum::<usize>();
        // The first part's buffers are kept: the others follow it.
        let mut parts = parts.into_iter();
        let Some(mut merged) = parts.next() else {
            return Entries::new(dims);
        };
        merged.reserve(total - merged.len());
        parts.for_each(|p| merged.append(p));
        merged
    }

    /// The run of `runs` to write the next entry into: the last one, or,
    /// when it holds [`RUN`] entries or there is none, a new one with room
    /// for `RUN`, marked `increasing` (over `dims` dimensions).
    pub(crate) fn next_run(
        runs: &mut Vec<Entries<S>>,
        dims: usize,
        increasing: bool,
    ) -> &mut Entries<S> {
        if runs.last().is_none_or(|run| run.len() >= RUN) {
            let mut run = Entries::new(dims);
            run.reserve(RUN);
            run.increasing = increasing;
            runs.push(run);
        }
        let last = runs.len() - 1;
        &mut runs[last]
    }

    /// The number of entries in `runs`.
    pub(crate) fn total(runs: &[Entries<S>]) -> usize {
        runs.iter().map(Entries::len).sum()
    }

    /// Whether the entries of `runs`, one run after another, are known
    /// to be strictly increasing.
    pub(crate) fn increasing_together(runs: &[Entries<S>]) -> bool {
        let mut last: Option<&[i64]> = None;
        for run in runs.iter().filter(|run| run.len() > 0) {
            if !run.increasing || last.is_some_and(|key| key >= run.key(0)) {
                return false;
            }
            last = Some(run.key(run.len() - 1));
        }
        true
    }

    /// The entries of a kernel run's chunks as runs to be stored one after
    /// another. When each chunk wrote output coordinates of its own
    /// (`disjoint`: the chunks split an in-order output level) they are
    /// the chunks' entries, in chunk order, as they are. Otherwise (one
    /// run) each chunk's entries are strictly increasing (its
    /// accumulator drained once) and the values at one coordinate are
    /// combined in chunk order, whatever the number of threads, into
    /// strictly increasing entries: for the output's levels of `sizes`
    /// accumulated in an array (`format` dense or bytemap), added chunk
    /// after chunk into such an array, charged to `control` while it
    /// lives; else merged as sorted runs, which touches no hash table of
    /// the whole output.
    pub(crate) fn merge_chunks(
        parts: Vec<Entries<S>>,
        disjoint: bool,
        (format, sizes): (OutputFormat, &[u64]),
        control: &Control<'_>,
        mut combine: impl FnMut(&mut S, S) -> Result<()>,
    ) -> Result<Vec<Entries<S>>> {
        let dims = sizes.len();
        let total = Entries::total(&parts);
        if disjoint || parts.len() <= 1 {
            return Ok(parts);
        }
        let mut merged = Entries::new(dims);
        if matches!(format, OutputFormat::Dense | OutputFormat::Bytemap) {
            let bytes =
                u64::try_from(Accumulator::<S>::upfront_bytes(format, sizes)).unwrap_or(u64::MAX);
            control.reserve(bytes)?;
            let mut add_and_drain = || -> Result<()> {
                let mut acc = Accumulator::new(format, sizes.to_vec());
                let levels: Vec<usize> = (0..dims).collect();
                for part in &parts {
                    for (n, &value) in part.values.iter().enumerate() {
                        acc.add(part.key(n), &levels, value, &mut combine)?;
                    }
                }
                acc.drain(|key, value| {
                    merged.push(key.iter().copied(), value);
                    Ok(())
                })
            };
            let done = add_and_drain();
            control.release(bytes);
            done?;
            merged.increasing = true;
            return Ok(vec![merged]);
        }
        if !parts.iter().all(Entries::strictly_increasing) {
            return Err(Error::Internal(
                "a chunk's entries are not in increasing order".to_string(),
            ));
        }
        merged.reserve(total);
        let mut next = vec![0usize; parts.len()];
        // The next entry of every part, least coordinates first and, for
        // equal ones, in chunk order.
        let mut heads: BinaryHeap<Reverse<(&[i64], usize)>> = parts
            .iter()
            .enumerate()
            .filter(|(_, part)| part.len() > 0)
            .map(|(p, part)| Reverse((part.key(0), p)))
            .collect();
        while let Some(Reverse((key, p))) = heads.pop() {
            let value = parts[p].values[next[p]];
            let n = merged.len();
            match merged.values.last_mut() {
                Some(last) if merged.coords[(n - 1) * dims..] == *key => combine(last, value)?,
                _ => merged.push(key.iter().copied(), value),
            }
            next[p] += 1;
            if next[p] < parts[p].len() {
                heads.push(Reverse((parts[p].key(next[p]), p)));
            }
        }
        merged.increasing = true;
        Ok(vec![merged])
    }

    /// Whether every entry's coordinates come after the previous entry's.
    fn strictly_increasing(&self) -> bool {
        (1..self.len()).all(|n| self.key(n - 1) < self.key(n))
    }

    /// The entries with their values mapped by `f`.
    pub(crate) fn map<T>(self, mut f: impl FnMut(S) -> Result<T>) -> Result<Entries<T>> {
        Ok(Entries {
            dims: self.dims,
            coords: self.coords,
            values: self.values.iter().map(|&v| f(v)).collect::<Result<_>>()?,
            increasing: self.increasing,
        })
    }

    /// Keeps the entries whose value satisfies `keep`.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(S) -> bool) {
        let dims = self.dims;
        // Usually every entry stays: a pass without early exit (which
        // the compiler vectorizes) says so before any search.
        if self.values.iter().fold(true, |all, &v| all & keep(v)) {
            return;
        }
        let Some(mut kept) = self.values.iter().position(|&v| !keep(v)) else {
            return;
        };
        for n in kept + 1..self.values.len() {
            let value = self.values[n];
            if keep(value) {
                // `kept < n`: an entry before `n` went.
                self.values[kept] = value;
                if dims == 1 {
                    self.coords[kept] = self.coords[n];
                } else {
                    self.coords
                        .copy_within(n * dims..(n + 1) * dims, kept * dims);
                }
                kept += 1;
            }
        }
        self.values.truncate(kept);
        self.coords.truncate(kept * dims);
    }
}

/// A kernel's entries with their final values: as [`Value`]s, or in the
/// machine type the fast path computed them in (no conversion per entry).
/// Machine-typed entries come in runs, stored one after another (the
/// chunks of a loop nest that each write output coordinates of their own,
/// in runs of about [`RUN`] entries: a large result is never copied into
/// one list before it is stored). `Huge` entries of a `BIGINT` query are
/// stored as `BIGINT` when they all fit in 64 bits, else as `HUGEINT`.
pub(crate) enum Finished {
    Values(Entries<Value>),
    Float(Vec<Entries<f64>>),
    Int(Vec<Entries<i64>>),
    Huge(Vec<Entries<i128>>),
}

impl Finished {
    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        match self {
            Finished::Values(e) => e.len(),
            Finished::Float(runs) => Entries::total(runs),
            Finished::Int(runs) => Entries::total(runs),
            Finished::Huge(runs) => Entries::total(runs),
        }
    }
}

/// The entries a worker writes into one run before it starts the next
/// (each run allocated once, at this size: growing one list for a whole
/// chunk would copy it into fresh memory at every doubling).
pub(crate) const RUN: usize = 1 << 16;

/// The aggregate of the assignments visited for one output coordinate: the
/// combination of their (lifted) values and how many assignments they
/// stand for, so that the absent ones can be accounted for with the fill
/// value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Slot {
    /// The combined value; `None` before the first assignment.
    pub acc: Option<Value>,
    /// How many assignments were combined.
    pub count: u128,
}

impl Slot {
    /// No assignment yet.
    pub(crate) const EMPTY: Slot = Slot {
        acc: None,
        count: 0,
    };

    /// Adds the assignments of `other`, combining with the aggregate `op`
    /// (a query without aggregate writes each coordinate once).
    pub(crate) fn merge(&mut self, other: Slot, op: Option<AggOp>) -> Result<()> {
        self.acc = match (self.acc, other.acc, op) {
            (Some(a), Some(b), Some(op)) => Some(op.combine().apply(&[a, b])?),
            (a, b, _) => b.or(a),
        };
        self.count += other.count;
        Ok(())
    }
}

/// A value that can be accumulated.
pub(crate) trait Accumulate: Copy {
    /// Adds `other` into `self`.
    fn add(&mut self, other: Self) -> Result<()>;
}

/// Exact integer sums.
impl Accumulate for i64 {
    fn add(&mut self, other: i64) -> Result<()> {
        *self = self
            .checked_add(other)
            .ok_or_else(|| Error::Overflow(format!("SUM of {self} and {other}")))?;
        Ok(())
    }
}

/// Exact integer sums at 128 bits.
impl Accumulate for i128 {
    fn add(&mut self, other: i128) -> Result<()> {
        *self = self.checked_add(other).ok_or_else(|| {
            Error::Overflow(format!("SUM of {self} and {other} (beyond HUGEINT)"))
        })?;
        Ok(())
    }
}

/// Float sums.
impl Accumulate for f64 {
    fn add(&mut self, other: f64) -> Result<()> {
        *self += other;
        Ok(())
    }
}

/// Accumulates the random-write output levels; see the module
/// documentation.
pub(crate) enum Accumulator<S> {
    /// No random-write level: one slot.
    Single(Option<S>),
    /// A slot per coordinate (row-major over the levels' sizes; empty
    /// until the first write) and the slots written since the last drain.
    Dense {
        sizes: Vec<u64>,
        slots: Vec<Option<S>>,
        touched: Vec<usize>,
    },
    /// A hash table by the coordinates' row-major index over the levels'
    /// sizes (when they span at most 2^128 cells).
    Hashed {
        sizes: Vec<u64>,
        table: HashMap<u128, S>,
        /// The drained entries being sorted (kept for the next drain).
        sorting: Vec<(u128, S)>,
    },
    /// A hash table by the coordinates themselves (levels spanning more
    /// than 2^128 cells).
    Keyed(HashMap<Vec<i64>, S>),
}

impl<S: Copy> Accumulator<S> {
    /// An accumulator over levels of `sizes` in `format` (dense and bytemap
    /// share one implementation: an array of optional slots).
    pub(crate) fn new(format: OutputFormat, sizes: Vec<u64>) -> Accumulator<S> {
        if sizes.is_empty() {
            return Accumulator::Single(None);
        }
        match format {
            OutputFormat::Dense | OutputFormat::Bytemap => Accumulator::Dense {
                sizes,
                slots: Vec::new(),
                touched: Vec::new(),
            },
            OutputFormat::Sorted | OutputFormat::Hashed => {
                let cells = sizes
                    .iter()
                    .try_fold(1u128, |cells, &s| cells.checked_mul(u128::from(s)));
                match cells {
                    Some(_) => Accumulator::Hashed {
                        sizes,
                        table: HashMap::new(),
                        sorting: Vec::new(),
                    },
                    None => Accumulator::Keyed(HashMap::new()),
                }
            }
        }
    }

    /// The bytes an accumulator over `sizes` in `format` allocates up front.
    pub(crate) fn upfront_bytes(format: OutputFormat, sizes: &[u64]) -> u128 {
        match format {
            OutputFormat::Dense | OutputFormat::Bytemap if !sizes.is_empty() => {
                sizes.iter().map(|&s| u128::from(s)).product::<u128>()
                    * (std::mem::size_of::<Option<S>>() as u128 + 8)
            }
            _ => 0,
        }
    }

    /// Adds `slot` at the coordinates `coords[vars[..]]`; returns whether
    /// the coordinate is new.
    pub(crate) fn add(
        &mut self,
        coords: &[i64],
        vars: &[usize],
        slot: S,
        merge: impl FnOnce(&mut S, S) -> Result<()>,
    ) -> Result<bool> {
        let existing = match self {
            Accumulator::Single(s) => match s {
                Some(s) => s,
                None => {
                    *s = Some(slot);
                    return Ok(true);
                }
            },
            Accumulator::Dense {
                sizes,
                slots,
                touched,
            } => {
                let mut index = 0usize;
                for (&v, &size) in vars.iter().zip(sizes.iter()) {
                    index = index * size as usize + coords[v] as usize;
                }
                if index >= slots.len() {
                    let len: usize = sizes.iter().map(|&s| s as usize).product();
                    if !slots.is_empty() || index >= len {
                        return Err(Error::Internal(
                            "an output coordinate outside its dimension".to_string(),
                        ));
                    }
                    slots.resize(len, None);
                }
                let cell = &mut slots[index];
                match cell {
                    Some(s) => s,
                    None => {
                        *cell = Some(slot);
                        touched.push(index);
                        return Ok(true);
                    }
                }
            }
            Accumulator::Hashed { sizes, table, .. } => {
                let mut index = 0u128;
                for (&v, &size) in vars.iter().zip(sizes.iter()) {
                    let coord = u64::try_from(coords[v]).ok().filter(|&c| c < size);
                    let coord = coord.ok_or_else(|| {
                        Error::Internal("an output coordinate outside its dimension".to_string())
                    })?;
                    // Below the product of the sizes, which fits (checked
                    // when the accumulator was made).
                    index = index * u128::from(size) + u128::from(coord);
                }
                match table.entry(index) {
                    hashbrown::hash_map::Entry::Occupied(e) => e.into_mut(),
                    hashbrown::hash_map::Entry::Vacant(e) => {
                        e.insert(slot);
                        return Ok(true);
                    }
                }
            }
            Accumulator::Keyed(table) => {
                let key: Vec<i64> = vars.iter().map(|&v| coords[v]).collect();
                match table.get_mut(&key) {
                    Some(s) => s,
                    None => {
                        table.insert(key, slot);
                        return Ok(true);
                    }
                }
            }
        };
        merge(existing, slot)?;
        Ok(false)
    }

    /// Adds `value(row[c])` at coordinate `c` of a dense accumulator over
    /// one level, for every cell of `row` whose value is `Some` (SpMM's
    /// row of a factor matrix, times the entry): the coordinates are the
    /// slots, without computing an index per cell. Returns how many
    /// coordinates are new; `None` when the accumulator is not dense over
    /// one level of at least `row`'s length.
    pub(crate) fn add_row<R: Copy>(
        &mut self,
        row: &[R],
        mut value: impl FnMut(R) -> Result<Option<S>>,
        merge: impl Fn(&mut S, S) -> Result<()>,
    ) -> Option<Result<usize>> {
        let Accumulator::Dense {
            sizes,
            slots,
            touched,
        } = self
        else {
            return None;
        };
        let [size] = sizes.as_slice() else {
            return None;
        };
        let size = usize::try_from(*size).ok().filter(|&n| n >= row.len())?;
        if slots.is_empty() {
            slots.resize(size, None);
        }
        let mut new = 0;
        for ((c, &cell), slot) in row.iter().enumerate().zip(slots.iter_mut()) {
            let v = match value(cell) {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            };
            match slot {
                Some(s) => {
                    if let Err(e) = merge(s, v) {
                        return Some(Err(e));
                    }
                }
                None => {
                    *slot = Some(v);
                    touched.push(c);
                    new += 1;
                }
            }
        }
        Some(Ok(new))
    }

    /// How many coordinates were written since the last drain: the
    /// entries the next drain hands out.
    pub(crate) fn written(&self) -> usize {
        match self {
            Accumulator::Single(s) => usize::from(s.is_some()),
            Accumulator::Dense { touched, .. } => touched.len(),
            Accumulator::Hashed { table, .. } => table.len(),
            Accumulator::Keyed(table) => table.len(),
        }
    }

    /// Whether nothing was written since the last drain.
    fn is_drained(&self) -> bool {
        match self {
            Accumulator::Single(s) => s.is_none(),
            Accumulator::Dense { touched, .. } => touched.is_empty(),
            Accumulator::Hashed { table, .. } => table.is_empty(),
            Accumulator::Keyed(table) => table.is_empty(),
        }
    }

    /// Calls `f(coordinates, slot)` for every written coordinate and
    /// empties the accumulator.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(&[i64], S) -> Result<()>) -> Result<()> {
        match self {
            Accumulator::Single(s) => {
                if let Some(slot) = s.take() {
                    f(&[], slot)?;
                }
            }
            Accumulator::Dense {
                sizes,
                slots,
                touched,
            } => {
                touched.sort_unstable();
                let mut key = vec![0i64; sizes.len()];
                for &index in touched.iter() {
                    coordinates_of(index as u128, sizes, &mut key);
                    if let Some(slot) = slots.get_mut(index).and_then(Option::take) {
                        f(&key, slot)?;
                    }
                }
                touched.clear();
            }
            Accumulator::Hashed {
                sizes,
                table,
                sorting,
            } => {
                sorting.extend(table.drain());
                sorting.sort_unstable_by_key(|e| e.0);
                let mut key = vec![0i64; sizes.len()];
                for (index, slot) in sorting.drain(..) {
                    coordinates_of(index, sizes, &mut key);
                    f(&key, slot)?;
                }
            }
            Accumulator::Keyed(table) => {
                let mut entries: Vec<(Vec<i64>, S)> = table.drain().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                for (key, slot) in entries {
                    f(&key, slot)?;
                }
            }
        }
        Ok(())
    }
}

/// The coordinates of cell `index` of a row-major array over levels of
/// `sizes`, written into `key`.
fn coordinates_of(index: u128, sizes: &[u64], key: &mut [i64]) {
    // 64-bit divisions where the index fits (much cheaper).
    if let Ok(mut rest) = u64::try_from(index) {
        for (coord, &size) in key.iter_mut().zip(sizes).rev() {
            *coord = (rest % size) as i64;
            rest /= size;
        }
        return;
    }
    let mut rest = index;
    for (coord, &size) in key.iter_mut().zip(sizes).rev() {
        let size = u128::from(size);
        // Below a dimension's size, which is an `i64`.
        *coord = (rest % size) as i64;
        rest /= size;
    }
}

/// The drained accumulators of one kernel run, for its next workers.
pub(crate) struct AccumulatorPool<S> {
    format: OutputFormat,
    sizes: Vec<u64>,
    free: Mutex<Vec<Accumulator<S>>>,
}

impl<S: Copy> AccumulatorPool<S> {
    /// A pool of accumulators over levels of `sizes` in `format`.
    pub(crate) fn new(format: OutputFormat, sizes: Vec<u64>) -> AccumulatorPool<S> {
        AccumulatorPool {
            format,
            sizes,
            free: Mutex::new(Vec::new()),
        }
    }

    /// A drained accumulator: one handed back earlier, else a new one.
    pub(crate) fn take(&self) -> Accumulator<S> {
        self.free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_else(|| Accumulator::new(self.format, self.sizes.clone()))
    }

    /// Takes `acc` from a worker that is done with it (leaving a single
    /// empty slot) and hands it on to a later worker; one that still holds
    /// entries (its worker failed) is dropped instead.
    pub(crate) fn give(&self, acc: &mut Accumulator<S>) {
        let acc = std::mem::replace(acc, Accumulator::Single(None));
        if acc.is_drained() {
            self.free
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    fn sum(a: &mut i64, b: i64) -> Result<()> {
        a.add(b)
    }

    #[test]
    fn every_format_accumulates_the_same() {
        for format in [
            OutputFormat::Dense,
            OutputFormat::Bytemap,
            OutputFormat::Hashed,
        ] {
            let mut acc: Accumulator<i64> = Accumulator::new(format, vec![3, 4]);
            let writes = [([2, 1], 5), ([0, 3], 1), ([2, 1], -2)];
            for (coords, value) in writes {
                acc.add(&coords, &[0, 1], value, sum).unwrap();
            }
            let mut out = Vec::new();
            acc.drain(|key, v| {
                out.push((key.to_vec(), v));
                Ok(())
            })
            .unwrap();
            assert_eq!(out, vec![(vec![0, 3], 1), (vec![2, 1], 3)], "{format:?}");
        }
    }

    /// Two chunks' entries, each strictly increasing, over 3 × 4 cells.
    fn chunks() -> Vec<Entries<i64>> {
        let chunk = |writes: &[([i64; 2], i64)]| {
            let mut entries = Entries::new(2);
            for &(key, value) in writes {
                entries.push(key, value);
            }
            entries
        };
        vec![
            chunk(&[([0, 3], 1), ([2, 1], 5)]),
            chunk(&[([1, 0], 7), ([2, 1], -2)]),
        ]
    }

    #[test]
    fn chunks_merge_into_increasing_entries_within_the_memory_limit() {
        let expected = vec![(vec![0, 3], 1), (vec![1, 0], 7), (vec![2, 1], 3)];
        for format in [OutputFormat::Dense, OutputFormat::Hashed] {
            let control = Control::new(&NoProgress, 1 << 20);
            let merged =
                Entries::merge_chunks(chunks(), false, (format, &[3, 4]), &control, sum).unwrap();
            let [merged] = <[_; 1]>::try_from(merged).expect("one run");
            let got: Vec<(Vec<i64>, i64)> = (0..merged.len())
                .map(|n| (merged.key(n).to_vec(), merged.values[n]))
                .collect();
            assert_eq!(got, expected, "{format:?}");
            assert!(merged.increasing);
            // The array is given back: the whole limit is free again.
            assert!(control.reserve(1 << 20).is_ok(), "{format:?}");
        }
        // An array past the limit is an error, not an allocation.
        let control = Control::new(&NoProgress, 64);
        let error = Entries::merge_chunks(
            chunks(),
            false,
            (OutputFormat::Dense, &[3, 4]),
            &control,
            sum,
        )
        .unwrap_err();
        assert!(matches!(error, Error::OutOfMemory(_)), "{error}");
        // Chunks of their own coordinates are runs, as they are.
        let control = Control::new(&NoProgress, 0);
        let mut disjoint = chunks();
        disjoint.truncate(1);
        disjoint.push(Entries::new(2));
        let merged = Entries::merge_chunks(
            disjoint,
            true,
            (OutputFormat::Dense, &[3, 4]),
            &control,
            sum,
        )
        .unwrap();
        assert_eq!(merged.len(), 2);
        assert_eq!(Entries::concat(2, merged).coords, vec![0, 3, 2, 1]);
    }

    #[test]
    fn levels_past_2_to_the_128_cells_hash_their_coordinates() {
        let big = u64::MAX;
        let mut acc: Accumulator<i64> = Accumulator::new(OutputFormat::Hashed, vec![big, big, 3]);
        assert!(matches!(acc, Accumulator::Keyed(_)));
        let far = i64::MAX;
        let writes = [([far, 1, 2], 5), ([0, far, 0], 1), ([far, 1, 2], -2)];
        for (coords, value) in writes {
            acc.add(&coords, &[0, 1, 2], value, sum).unwrap();
        }
        let mut out = Vec::new();
        acc.drain(|key, v| {
            out.push((key.to_vec(), v));
            Ok(())
        })
        .unwrap();
        assert_eq!(out, vec![(vec![0, far, 0], 1), (vec![far, 1, 2], 3)]);
        // Within 2^128 cells, the index: a coordinate outside its level is
        // an error.
        let mut acc: Accumulator<i64> = Accumulator::new(OutputFormat::Hashed, vec![big, 3]);
        assert!(matches!(acc, Accumulator::Hashed { .. }));
        assert!(acc.add(&[0, 3], &[0, 1], 1, sum).is_err());
        acc.add(&[far, 2], &[0, 1], 4, sum).unwrap();
        let mut out = Vec::new();
        acc.drain(|key, v| {
            out.push((key.to_vec(), v));
            Ok(())
        })
        .unwrap();
        assert_eq!(out, vec![(vec![far, 2], 4)]);
    }

    #[test]
    fn a_pool_hands_on_drained_accumulators_with_their_array() {
        let pool: AccumulatorPool<i64> = AccumulatorPool::new(OutputFormat::Dense, vec![3, 4]);
        let mut acc = pool.take();
        let Accumulator::Dense { slots, .. } = &acc else {
            panic!("a dense accumulator");
        };
        assert!(slots.is_empty(), "allocated before the first write");
        acc.add(&[2, 1], &[0, 1], 5, sum).unwrap();
        let array = match &acc {
            Accumulator::Dense { slots, .. } => slots.as_ptr(),
            _ => unreachable!(),
        };
        acc.drain(|_, _| Ok(())).unwrap();
        pool.give(&mut acc);
        let mut again = pool.take();
        match &again {
            Accumulator::Dense { slots, touched, .. } => {
                assert_eq!(slots.as_ptr(), array, "the same array, not a new one");
                assert!(slots.iter().all(Option::is_none) && touched.is_empty());
            }
            _ => unreachable!(),
        }
        // Holding an entry, it is not handed on: the next take is new.
        again.add(&[0, 0], &[0, 1], 1, sum).unwrap();
        pool.give(&mut again);
        match pool.take() {
            Accumulator::Dense { slots, .. } => assert!(slots.is_empty()),
            _ => unreachable!(),
        }
        // A coordinate outside the levels is an error, not a panic.
        let mut acc = pool.take();
        assert!(acc.add(&[3, 0], &[0, 1], 1, sum).is_err());
    }

    #[test]
    fn integer_sums_overflow_and_slots_count() {
        let mut big = i64::MAX;
        assert!(matches!(big.add(1), Err(Error::Overflow(_))));
        let mut slot = Slot {
            acc: Some(Value::Int(2)),
            count: 1,
        };
        let other = Slot {
            acc: Some(Value::Int(7)),
            count: 3,
        };
        slot.merge(other, Some(AggOp::Max)).unwrap();
        assert_eq!(
            slot,
            Slot {
                acc: Some(Value::Int(7)),
                count: 4
            }
        );
    }
}
