//! Statistics of a stored tensor: what the optimizer's sparsity estimators
//! read (Galley section 7.3.2).
//!
//! [`Statistics::compute`] runs once per tensor: for a stored table when
//! the catalog stores it (a database directory records the result, and
//! [`Statistics::restore`] checks it when the directory is opened), for
//! other tensors when the optimizer first reads their statistics
//! ([`Tensor::statistics`](crate::storage::Tensor::statistics)). Besides the
//! number of entries and the dimension sizes it keeps *degree statistics*
//! D(X|Y): for disjoint sets of dimensions X (non-empty) and Y, the largest
//! number of distinct X-projections among the stored entries that share one
//! value of the Y dimensions. D(X|∅) is the number of distinct X-projections,
//! so D(all dims|∅) is nnz. The chain-bound estimator combines them into an
//! upper bound on the size of a query's result.
//!
//! Which pairs are kept: for a tensor of up to [`FULL_STATISTICS_DIMS`]
//! dimensions, every pair of disjoint X ≠ ∅ and Y. For more dimensions, Y is
//! ∅ or a single dimension, and X is every single dimension outside Y and all
//! the dimensions outside Y together. Tensors of more than [`DimSet::CAPACITY`]
//! dimensions or of 2³² entries or more keep only nnz and sizes.
//!
//! How: every needed set Z of dimensions gets a dense id per entry for its
//! Z-projection: runs of the sorted batch for prefixes of the stored
//! order; for a single other dimension, its coordinates ranked through a
//! direct-addressed table (a hash map for a dimension much larger than the
//! number of entries); otherwise the ids of Z without its last dimension
//! paired with that dimension's ids, ranked without hashing: in one pass
//! with a slot per id of the last dimension when the rest is a prefix
//! (its ids come in runs), through a direct-addressed table when the pairs
//! are few, else after a counting sort of the entries by the last
//! dimension's ids. Then
//! D(X|Y) is, with Z = X ∪ Y, the largest number of distinct Z-ids that share
//! one Y-id: two linear passes. Sets of equal size, and then all pairs, are
//! computed in parallel. A matrix needs one pass instead (row runs and a
//! count per column), and a tensor whose entries fill its dimensions (a
//! factor matrix) none: D(X|Y) is the product of X's sizes.

use std::fmt;

use arrow::array::{Array, Int64Array, RecordBatch};
use hashbrown::HashMap;
use hashbrown::hash_map::Entry;
use rayon::prelude::*;

use super::tensor::{PARALLEL_ROWS, all_in_parallel};

use crate::storage::Dimension;

/// Tensors of up to this many dimensions get a degree statistic for every
/// pair of disjoint dimension sets.
pub const FULL_STATISTICS_DIMS: usize = 4;

/// A set of dimensions of one tensor, by position in its stored order, as a
/// bitset of at most [`DimSet::CAPACITY`] dimensions.
///
/// Displayed as `{0,2}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DimSet(u64);

impl DimSet {
    /// The largest number of dimensions a set can describe.
    pub const CAPACITY: usize = 64;

    /// The empty set.
    pub const EMPTY: DimSet = DimSet(0);

    /// The set of the given dimensions; `None` if one is not below
    /// [`DimSet::CAPACITY`].
    pub fn of(dims: &[usize]) -> Option<DimSet> {
        dims.iter()
            .try_fold(DimSet::EMPTY, |set, &d| Some(set.union(DimSet::single(d)?)))
    }

    /// The set holding only `d`; `None` if `d` is not below
    /// [`DimSet::CAPACITY`].
    pub fn single(d: usize) -> Option<DimSet> {
        u32::try_from(d)
            .ok()
            .and_then(|d| 1u64.checked_shl(d))
            .map(DimSet)
    }

    /// The dimensions `0..n`; `None` if `n` exceeds [`DimSet::CAPACITY`].
    pub fn all(n: usize) -> Option<DimSet> {
        match n {
            64 => Some(DimSet(u64::MAX)),
            n if n < 64 => Some(DimSet((1u64 << n) - 1)),
            _ => None,
        }
    }

    /// The set whose bits are `bits` (bit `d` for dimension `d`).
    pub fn from_bits(bits: u64) -> DimSet {
        DimSet(bits)
    }

    /// The bits of the set (bit `d` for dimension `d`).
    pub fn bits(self) -> u64 {
        self.0
    }

    /// Number of dimensions in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the set holds dimension `d`.
    pub fn contains(self, d: usize) -> bool {
        DimSet::single(d).is_some_and(|s| self.0 & s.0 != 0)
    }

    /// The dimensions in either set.
    pub fn union(self, other: DimSet) -> DimSet {
        DimSet(self.0 | other.0)
    }

    /// The dimensions of `self` that are not in `other`.
    pub fn minus(self, other: DimSet) -> DimSet {
        DimSet(self.0 & !other.0)
    }

    /// Whether the sets have no dimension in common.
    pub fn is_disjoint(self, other: DimSet) -> bool {
        self.0 & other.0 == 0
    }

    /// Whether the set is `{0, 1, ..., k-1}` for some `k` (a prefix of the
    /// stored order; the empty set is one).
    pub fn is_prefix(self) -> bool {
        self.0 & self.0.wrapping_add(1) == 0
    }

    /// The largest dimension of the set.
    pub fn last(self) -> Option<usize> {
        (!self.is_empty()).then(|| 63 - self.0.leading_zeros() as usize)
    }

    /// The dimensions in increasing order.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        (0..Self::CAPACITY).filter(move |&d| self.contains(d))
    }

    /// Every subset of the set (the empty set and the set itself included).
    pub fn subsets(self) -> impl Iterator<Item = DimSet> {
        // Counts down through the subsets of the mask; stops after the
        // empty set.
        let mut next = Some(self.0);
        std::iter::from_fn(move || {
            let current = next?;
            next = (current != 0).then(|| (current - 1) & self.0);
            Some(DimSet(current))
        })
    }
}

impl fmt::Display for DimSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{")?;
        for (k, d) in self.iter().enumerate() {
            if k > 0 {
                write!(f, ",")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "}}")
    }
}

/// One degree statistic: D(`x`|`y`) = `degree`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DegreeStat {
    /// The counted dimensions (non-empty).
    pub x: DimSet,
    /// The fixed dimensions, disjoint from `x`.
    pub y: DimSet,
    /// The largest number of distinct `x`-projections of stored entries
    /// sharing one `y` value (0 for an empty tensor).
    pub degree: u64,
}

/// Statistics of a stored tensor; see the module documentation.
#[derive(Clone, Debug)]
pub struct Statistics {
    nnz: u64,
    sizes: Vec<u64>,
    /// Sorted by `(y, x)`.
    degrees: Vec<DegreeStat>,
}

impl Statistics {
    /// Computes the statistics of a tensor's stored batch: `dims` in stored
    /// order, `data` with one `Int64` coordinate column per dimension first,
    /// sorted and duplicate-free (the layout of [`Tensor`](crate::storage::Tensor)).
    /// A batch with an entry for every cell gets the degrees of a full
    /// tensor without reading its coordinates; any other batch whose
    /// coordinates do not follow that layout (not `Int64`, or outside
    /// `0..size`) gets only nnz and sizes.
    pub fn compute(dims: &[Dimension], data: &RecordBatch) -> Statistics {
        let sizes: Vec<u64> = dims.iter().map(|d| d.size).collect();
        let full = data.num_rows() > 0 && cells(&sizes) == Some(data.num_rows() as u64);
        let degrees = if full {
            // Distinct entries as many as the cells: no pass is needed
            // (the coordinates were checked when the tensor was stored).
            full_degree_statistics(&sizes)
        } else {
            coordinate_columns(&sizes, data)
                .map(|columns| degree_statistics(&columns, &sizes))
                .unwrap_or_default()
        };
        Statistics {
            nnz: data.num_rows() as u64,
            sizes,
            degrees,
        }
    }

    /// The statistics of a tensor whose entries are whole rows of its last
    /// dimension (every coordinate of it under each row), the rows given
    /// by their leading coordinates (a column per other dimension,
    /// distinct rows, inside the sizes): the same numbers
    /// [`Statistics::compute`] finds in the listed entries, from a pass
    /// over the rows. The last dimension takes each of its values under
    /// every row, so a statistic reading it scales the rows' by its size,
    /// and conditioning on it changes nothing.
    pub fn of_full_rows(dims: &[Dimension], leading: &[&[i64]]) -> Statistics {
        let sizes: Vec<u64> = dims.iter().map(|d| d.size).collect();
        let rows = leading.first().map_or(0, |c| c.len()) as u64;
        let width = sizes.last().copied().unwrap_or(0);
        let nnz = rows.saturating_mul(width);
        let n = sizes.len();
        let full = nnz > 0 && cells(&sizes) == Some(nnz);
        let degrees = if full {
            full_degree_statistics(&sizes)
        } else if !(2..=DimSet::CAPACITY).contains(&n) || u32::try_from(nnz).is_err() {
            // As `compute`: only nnz and sizes past 32-bit ids.
            Vec::new()
        } else {
            let of_rows = Statistics {
                nnz: rows,
                sizes: sizes[..n - 1].to_vec(),
                degrees: degree_statistics(leading, &sizes[..n - 1]),
            };
            let last = DimSet::single(n - 1).unwrap_or_default();
            statistic_pairs(n)
                .into_iter()
                .map(|(x, y)| {
                    let (x_rows, y_rows) = (x.minus(last), y.minus(last));
                    let in_rows = if x_rows.is_empty() {
                        u64::from(rows > 0)
                    } else {
                        of_rows.degree(x_rows, y_rows).unwrap_or(rows)
                    };
                    let degree = if x.contains(n - 1) {
                        in_rows * width
                    } else {
                        in_rows
                    };
                    DegreeStat { x, y, degree }
                })
                .collect()
        };
        Statistics {
            nnz,
            sizes,
            degrees,
        }
    }

    /// Statistics saved earlier for a tensor of dimensions `dims` and `nnz`
    /// entries (read back from a database's catalog), if they are what
    /// [`Statistics::compute`] keeps for such a tensor: the same pairs in
    /// the same order, and every degree a possible one (D(all|∅) = nnz;
    /// none above nnz or the product of its X sizes; 0 exactly when the
    /// tensor is empty; the products of the sizes for a tensor whose
    /// entries fill its dimensions). `None` otherwise: a record that fails
    /// these checks is not trusted, and the statistics are computed anew.
    pub fn restore(dims: &[Dimension], nnz: u64, degrees: Vec<DegreeStat>) -> Option<Statistics> {
        let sizes: Vec<u64> = dims.iter().map(|d| d.size).collect();
        let full = nnz > 0 && cells(&sizes) == Some(nnz);
        let expected = if full || u32::try_from(nnz).is_ok() {
            statistic_pairs(sizes.len())
        } else {
            Vec::new()
        };
        // No pair has X = all dimensions when there are too many for a set.
        let all = DimSet::all(sizes.len()).unwrap_or_default();
        let product = |x: DimSet| {
            x.iter()
                .try_fold(1u64, |p, d| p.checked_mul(sizes[d]))
                .unwrap_or(u64::MAX)
        };
        let plausible = |s: &DegreeStat| {
            let bound = product(s.x).min(nnz);
            s.degree <= bound
                && (s.degree == 0) == (nnz == 0)
                && (!full || s.degree == bound)
                && (s.x != all || !s.y.is_empty() || s.degree == nnz)
        };
        let same_pairs = degrees.len() == expected.len()
            && degrees
                .iter()
                .zip(&expected)
                .all(|(s, &(x, y))| s.x == x && s.y == y);
        (same_pairs && degrees.iter().all(plausible)).then_some(Statistics {
            nnz,
            sizes,
            degrees,
        })
    }

    /// An upper estimate of the bytes [`Statistics::compute`] works in for
    /// a tensor of dimensions `dims` and `rows` entries (the statistics
    /// themselves are a few numbers per pair of dimension sets): a 32-bit
    /// id per entry for every projection it keeps, and two tables at a
    /// time to rank projections with.
    pub fn working_bytes(dims: &[Dimension], rows: usize) -> u64 {
        let rows = rows as u64;
        let projections = needed_sets(&statistic_pairs(dims.len())).len() as u64;
        // A direct-addressed table over a dimension's coordinates or the
        // pairs of two sets' ids (at most rows² of them), or 16 bytes per
        // entry: a hash map's, or a counting sort's order and slots.
        // Saturating: a dimension may be as large as a u64 allows.
        let widest = dims.iter().map(|d| d.size).max().unwrap_or(0);
        let table = table_limit(rows as usize)
            .saturating_mul(4)
            .min(widest.max(rows.saturating_mul(rows)).saturating_mul(4))
            .max(rows.saturating_mul(16));
        rows.saturating_mul(4)
            .saturating_mul(projections)
            .saturating_add(table.saturating_mul(2))
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> u64 {
        self.nnz
    }

    /// The size of every dimension, in stored order.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// D(`x`|`y`), if it is stored: `None` when `x` is empty, `x` and `y`
    /// overlap, or the pair is not among those kept (see the module
    /// documentation).
    pub fn degree(&self, x: DimSet, y: DimSet) -> Option<u64> {
        self.degrees
            .binary_search_by_key(&(y, x), |s| (s.y, s.x))
            .ok()
            .and_then(|i| self.degrees.get(i))
            .map(|s| s.degree)
    }

    /// All stored degree statistics, ordered by `y`, then `x` (as bitsets).
    pub fn degrees(&self) -> impl Iterator<Item = DegreeStat> + '_ {
        self.degrees.iter().copied()
    }
}

/// The number of cells of a tensor of dimensions of `sizes`, if it fits
/// a `u64`.
fn cells(sizes: &[u64]) -> Option<u64> {
    sizes
        .iter()
        .try_fold(1u64, |cells, &s| cells.checked_mul(s))
}

/// The coordinate columns of `data`, if the batch follows the tensor layout
/// and is small enough for 32-bit ids.
fn coordinate_columns<'a>(sizes: &[u64], data: &'a RecordBatch) -> Option<Vec<&'a [i64]>> {
    if sizes.len() > DimSet::CAPACITY
        || data.num_columns() < sizes.len()
        || u32::try_from(data.num_rows()).is_err()
    {
        return None;
    }
    let columns = data.columns()[..sizes.len()]
        .iter()
        .map(|c| {
            c.as_any()
                .downcast_ref::<Int64Array>()
                .filter(|a| a.null_count() == 0)
                .map(|a| a.values().as_ref())
        })
        .collect::<Option<Vec<&[i64]>>>()?;
    let below = |size: u64| move |&c: &i64| u64::try_from(c).is_ok_and(|c| c < size);
    let in_range = if data.num_rows() < PARALLEL_ROWS {
        columns
            .iter()
            .zip(sizes)
            .all(|(column, &size)| column.iter().all(below(size)))
    } else {
        columns
            .par_iter()
            .zip(sizes)
            .all(|(column, &size)| all_in_parallel(0..column.len(), |e| below(size)(&column[e])))
    };
    in_range.then_some(columns)
}

/// The (X, Y) pairs kept for a tensor of `n` dimensions.
fn statistic_pairs(n: usize) -> Vec<(DimSet, DimSet)> {
    let Some(all) = DimSet::all(n) else {
        return Vec::new();
    };
    let mut pairs = Vec::new();
    if n <= FULL_STATISTICS_DIMS {
        for y in all.subsets() {
            let rest = all.minus(y);
            pairs.extend(rest.subsets().filter(|x| !x.is_empty()).map(|x| (x, y)));
        }
    } else {
        let singles = || all.iter().filter_map(DimSet::single);
        for y in std::iter::once(DimSet::EMPTY).chain(singles()) {
            let rest = all.minus(y);
            pairs.extend(singles().filter(|x| x.is_disjoint(y)).map(|x| (x, y)));
            if rest.len() > 1 {
                pairs.push((rest, y));
            }
        }
    }
    pairs.sort_by_key(|&(x, y)| (y, x));
    pairs
}

/// Dense ids of the distinct projections of the entries onto a set of
/// dimensions.
struct Projection {
    /// The id of every entry's projection.
    ids: Vec<u32>,
    /// Number of distinct projections (ids are `0..distinct`).
    distinct: u32,
}

/// The degree statistics of distinct entries, from their coordinate
/// columns: counted directly for one or two dimensions, from the
/// projections onto sets of dimensions for more.
fn degree_statistics(columns: &[&[i64]], sizes: &[u64]) -> Vec<DegreeStat> {
    match (columns, sizes) {
        // One dimension: the entries are distinct coordinates, and every
        // pair (there is one, D({0} | ∅)) counts them.
        ([column], _) => statistic_pairs(1)
            .into_iter()
            .map(|(x, y)| DegreeStat {
                x,
                y,
                degree: column.len() as u64,
            })
            .collect(),
        ([rows, cols], [_, width]) => matrix_degree_statistics(rows, cols, *width),
        _ => degrees_by_projections(columns, sizes, combine),
    }
}

/// How the ids of a set of dimensions are found from the ids of the set
/// without its last dimension (the first argument; whether it is a prefix
/// of the stored order, the third) and those of that dimension.
type Combine = fn(&Projection, &Projection, bool) -> Projection;

/// The degree statistics of a tensor of any order, from the projections
/// onto the sets of dimensions they need, each set built from two smaller
/// ones by `combine`.
fn degrees_by_projections(columns: &[&[i64]], sizes: &[u64], combine: Combine) -> Vec<DegreeStat> {
    let pairs = statistic_pairs(columns.len());
    let rows = columns.first().map_or(0, |c| c.len());
    let needed = needed_sets(&pairs);

    let mut projections: HashMap<DimSet, Projection> = HashMap::new();
    let parallel = rows >= PARALLEL_ROWS;
    for size in 1..=columns.len() {
        let of_size = |z: &&DimSet| z.len() == size;
        let computed: Vec<(DimSet, Projection)> = if parallel {
            needed
                .par_iter()
                .filter(of_size)
                .map(|&z| (z, project(z, columns, sizes, rows, &projections, combine)))
                .collect()
        } else {
            needed
                .iter()
                .filter(of_size)
                .map(|&z| (z, project(z, columns, sizes, rows, &projections, combine)))
                .collect()
        };
        projections.extend(computed);
    }

    let stat = |&(x, y): &(DimSet, DimSet)| DegreeStat {
        x,
        y,
        degree: degree(&projections, x.union(y), y),
    };
    if parallel {
        pairs.par_iter().map(stat).collect()
    } else {
        pairs.iter().map(stat).collect()
    }
}

/// Every set of dimensions whose projection the degrees of `pairs` need,
/// with the sets they are built from, smallest first.
fn needed_sets(pairs: &[(DimSet, DimSet)]) -> Vec<DimSet> {
    let mut needed: Vec<DimSet> = Vec::new();
    let mut pending: Vec<DimSet> = pairs
        .iter()
        .flat_map(|&(x, y)| [x.union(y), y])
        .filter(|z| !z.is_empty())
        .collect();
    while let Some(z) = pending.pop() {
        if needed.contains(&z) {
            continue;
        }
        needed.push(z);
        if let Some((rest, last)) = split_last(z) {
            pending.extend([rest, last]);
        }
    }
    needed.sort_by_key(|z| (z.len(), *z));
    needed
}

/// The degree statistics of a matrix in one pass over its columns: the
/// sorted row coordinates give the distinct rows and the longest row, a
/// count per column coordinate (an array, or a hash map for a wide one)
/// the distinct columns and the fullest column; the entries are distinct,
/// so all of them together are nnz.
fn matrix_degree_statistics(rows: &[i64], cols: &[i64], width: u64) -> Vec<DegreeStat> {
    let (mut distinct_rows, mut longest, mut run) = (0u64, 0u64, 0u64);
    for (e, row) in rows.iter().enumerate() {
        if e == 0 || rows[e - 1] != *row {
            distinct_rows += 1;
            run = 0;
        }
        run += 1;
        longest = longest.max(run);
    }
    let counts: Vec<u32> = if width <= 4 * cols.len() as u64 + (1 << 16) {
        let mut counts = vec![0u32; width as usize];
        for &c in cols {
            if let Some(count) = counts.get_mut(c as usize) {
                *count += 1;
            }
        }
        counts
    } else {
        let mut counts: HashMap<i64, u32> = HashMap::new();
        for &c in cols {
            *counts.entry(c).or_default() += 1;
        }
        counts.into_values().collect()
    };
    let distinct_cols = counts.iter().filter(|&&c| c > 0).count() as u64;
    let fullest = counts.iter().max().map_or(0, |&c| u64::from(c));
    let (row, col) = (DimSet(1), DimSet(2));
    statistic_pairs(2)
        .into_iter()
        .map(|(x, y)| DegreeStat {
            x,
            y,
            degree: if y.is_empty() && x == row {
                distinct_rows
            } else if y.is_empty() && x == col {
                distinct_cols
            } else if y.is_empty() {
                rows.len() as u64
            } else if y == row {
                longest
            } else {
                fullest
            },
        })
        .collect()
}

/// The degree statistics of a tensor whose distinct entries fill its
/// dimensions: every combination of coordinates is present, so D(X|Y) is
/// the product of the sizes of X's dimensions, whatever Y.
fn full_degree_statistics(sizes: &[u64]) -> Vec<DegreeStat> {
    statistic_pairs(sizes.len())
        .into_iter()
        .map(|(x, y)| DegreeStat {
            x,
            y,
            degree: x.iter().map(|d| sizes[d]).product(),
        })
        .collect()
}

/// For a set that is neither a prefix of the stored order nor a single
/// dimension: the set without its last dimension, and that dimension.
fn split_last(z: DimSet) -> Option<(DimSet, DimSet)> {
    if z.is_prefix() || z.len() == 1 {
        return None;
    }
    let last = DimSet::single(z.last()?)?;
    Some((z.minus(last), last))
}

/// The ids of the projections onto `z`: runs for a prefix of the stored
/// order, ids ranked by coordinate for another single dimension, and for
/// any other set, `combine` of the ids of `z` without its last dimension
/// (taken from `done` if there) and those of that dimension.
fn project(
    z: DimSet,
    columns: &[&[i64]],
    sizes: &[u64],
    rows: usize,
    done: &HashMap<DimSet, Projection>,
    combine: Combine,
) -> Projection {
    if z.is_prefix() {
        return prefix_runs(&columns[..z.len()], rows);
    }
    match split_last(z) {
        Some((rest, last)) => {
            // The parts are smaller sets, computed before `z`; compute them
            // here if a caller did not.
            let (owned_rest, owned_last);
            let a = match done.get(&rest) {
                Some(p) => p,
                None => {
                    owned_rest = project(rest, columns, sizes, rows, done, combine);
                    &owned_rest
                }
            };
            let b = match done.get(&last) {
                Some(p) => p,
                None => {
                    owned_last = project(last, columns, sizes, rows, done, combine);
                    &owned_last
                }
            };
            combine(a, b, rest.is_prefix())
        }
        None => {
            // A single dimension other than the first; its coordinates were
            // checked to be in 0..size.
            let d = z.last().unwrap_or(0);
            let column = columns[d];
            rank(rows, sizes[d], |e| column[e] as u64)
        }
    }
}

/// The ids of the pairs (`a` id, `b` id) of the entries, `a`'s ids in
/// runs if `a_in_runs`, without hashing: with the runs, one pass and a
/// slot per `b` id; else a direct-addressed table over the pairs when there
/// are at most a few per entry, or the entries bucketed by `b` id (a
/// counting sort) and a slot per `a` id.
fn combine(a: &Projection, b: &Projection, a_in_runs: bool) -> Projection {
    let rows = a.ids.len();
    let width = u64::from(b.distinct);
    let space = u64::from(a.distinct) * width;
    if a_in_runs {
        within_runs(a, b)
    } else if space <= table_limit(rows) {
        rank(rows, space, |e| {
            u64::from(a.ids[e]) * width + u64::from(b.ids[e])
        })
    } else {
        bucketed(a, b)
    }
}

/// [`combine`] when `a`'s ids come in runs (equal ids are adjacent): the
/// pairs of one run are told apart by their `b` ids, so a slot per `b` id
/// that remembers the run it was last seen in, and the id it got there,
/// ranks them. Ids are in order of first appearance.
fn within_runs(a: &Projection, b: &Projection) -> Projection {
    let mut last: Vec<(u32, u32)> = vec![(u32::MAX, 0); b.distinct as usize];
    let mut distinct = 0u32;
    let ids = a
        .ids
        .iter()
        .zip(&b.ids)
        .map(|(&run, &b_id)| {
            let slot = &mut last[b_id as usize];
            if slot.0 != run {
                *slot = (run, distinct);
                distinct += 1;
            }
            slot.1
        })
        .collect();
    Projection { ids, distinct }
}

/// [`combine`] for any `a`: the entries in order of their `b` id (a
/// counting sort), so that the pairs of one `b` id are adjacent and a slot
/// per `a` id ranks them as [`within_runs`] does with the roles swapped.
fn bucketed(a: &Projection, b: &Projection) -> Projection {
    let rows = a.ids.len();
    // ends[k]: first the count of b id k - 1, then where bucket k starts,
    // and after the entries are placed, where it ends.
    let mut ends = vec![0u32; b.distinct as usize + 1];
    for &b_id in &b.ids {
        ends[b_id as usize + 1] += 1;
    }
    for k in 1..ends.len() {
        ends[k] += ends[k - 1];
    }
    let mut order = vec![0u32; rows];
    for (e, &b_id) in b.ids.iter().enumerate() {
        let end = &mut ends[b_id as usize];
        order[*end as usize] = e as u32;
        *end += 1;
    }
    let mut last: Vec<(u32, u32)> = vec![(u32::MAX, 0); a.distinct as usize];
    let mut ids = vec![0u32; rows];
    let mut distinct = 0u32;
    let mut start = 0usize;
    for (bucket, &end) in ends.iter().enumerate().take(b.distinct as usize) {
        for &e in &order[start..end as usize] {
            let slot = &mut last[a.ids[e as usize] as usize];
            if slot.0 != bucket as u32 {
                *slot = (bucket as u32, distinct);
                distinct += 1;
            }
            ids[e as usize] = slot.1;
        }
        start = end as usize;
    }
    Projection { ids, distinct }
}

/// Ids of the projections onto a prefix of the stored order: the batch is
/// sorted, so equal projections form runs.
fn prefix_runs(columns: &[&[i64]], rows: usize) -> Projection {
    let mut ids = Vec::with_capacity(rows);
    let mut id = 0u32;
    for e in 0..rows {
        if e > 0 && columns.iter().any(|c| c[e] != c[e - 1]) {
            id += 1;
        }
        ids.push(id);
    }
    Projection {
        ids,
        distinct: if rows == 0 { 0 } else { id + 1 },
    }
}

/// The largest key space ranked through a direct-addressed table for
/// `rows` keys.
fn table_limit(rows: usize) -> u64 {
    (rows as u64).saturating_mul(4).saturating_add(1 << 16)
}

/// Ids, in order of first appearance, of the keys `key(0..rows)`, all below
/// `space`: a direct-addressed table when `space` is at most a few times
/// `rows`, a hash map otherwise.
fn rank(rows: usize, space: u64, key: impl Fn(usize) -> u64) -> Projection {
    let mut ids = Vec::with_capacity(rows);
    let mut distinct = 0u32;
    if space <= table_limit(rows) {
        let mut table = vec![u32::MAX; space as usize];
        for e in 0..rows {
            if let Some(slot) = table.get_mut(key(e) as usize) {
                if *slot == u32::MAX {
                    *slot = distinct;
                    distinct += 1;
                }
                ids.push(*slot);
            }
        }
    } else {
        let mut table: HashMap<u64, u32> = HashMap::with_capacity(rows.min(1 << 20));
        for e in 0..rows {
            let id = match table.entry(key(e)) {
                Entry::Occupied(o) => *o.get(),
                Entry::Vacant(v) => {
                    distinct += 1;
                    *v.insert(distinct - 1)
                }
            };
            ids.push(id);
        }
    }
    Projection { ids, distinct }
}

/// D(Z∖Y|Y): the largest number of distinct Z-projections sharing one
/// Y-projection.
fn degree(projections: &HashMap<DimSet, Projection>, z: DimSet, y: DimSet) -> u64 {
    let Some(zp) = projections.get(&z) else {
        return 0;
    };
    if y.is_empty() {
        return u64::from(zp.distinct);
    }
    let Some(yp) = projections.get(&y) else {
        return 0;
    };
    // The Y-id of each distinct Z-projection, then how many share each Y-id.
    let mut y_of_z = vec![0u32; zp.distinct as usize];
    for (&z_id, &y_id) in zp.ids.iter().zip(&yp.ids) {
        if let Some(slot) = y_of_z.get_mut(z_id as usize) {
            *slot = y_id;
        }
    }
    let mut counts = vec![0u32; yp.distinct as usize];
    for &y_id in &y_of_z {
        if let Some(count) = counts.get_mut(y_id as usize) {
            *count += 1;
        }
    }
    counts.into_iter().max().map_or(0, u64::from)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;
    use crate::storage::{Coo, DimensionSpec, Tensor, ValueData};

    fn tensor(sizes: &[u64], entries: &[Vec<i64>]) -> Tensor {
        let dims = sizes
            .iter()
            .enumerate()
            .map(|(d, &s)| DimensionSpec::new(format!("d{d}"), Some(s)))
            .collect();
        let coords = (0..sizes.len())
            .map(|d| entries.iter().map(|e| e[d]).collect())
            .collect();
        Tensor::from_coo(Coo {
            dims,
            coords,
            values: Vec::new(),
            column_order: None,
        })
        .expect("valid test tensor")
    }

    /// The obvious definition: group the distinct entries by their
    /// Y-projection and count distinct X-projections per group.
    fn brute_force(entries: &[Vec<i64>], x: DimSet, y: DimSet) -> u64 {
        let distinct: BTreeSet<&Vec<i64>> = entries.iter().collect();
        let mut groups: BTreeMap<Vec<i64>, BTreeSet<Vec<i64>>> = BTreeMap::new();
        for e in distinct {
            let project = |s: DimSet| s.iter().map(|d| e[d]).collect::<Vec<i64>>();
            groups.entry(project(y)).or_default().insert(project(x));
        }
        groups.values().map(|g| g.len() as u64).max().unwrap_or(0)
    }

    fn set(dims: &[usize]) -> DimSet {
        DimSet::of(dims).expect("small dimensions")
    }

    /// A dimension as large as integer keys can make it (a value column
    /// of large integers read as keys) saturates the estimate instead of
    /// overflowing it.
    #[test]
    fn working_bytes_of_huge_dimensions_saturate() {
        let huge = tensor(&[2, u64::MAX / 2], &[vec![0, 1 << 62], vec![1, 1 << 61]]);
        let bytes = Statistics::working_bytes(huge.dims(), huge.nnz());
        assert!(bytes >= 16 * 2, "{bytes}");
        let cube = tensor(&[u64::MAX, u64::MAX, u64::MAX], &[vec![0, 0, 0]]);
        assert!(Statistics::working_bytes(cube.dims(), usize::MAX) == u64::MAX);
    }

    #[test]
    fn three_by_three_by_hand() {
        // 1 1 0
        // 0 0 1
        // 1 1 1
        let entries = [
            vec![0, 0],
            vec![0, 1],
            vec![1, 2],
            vec![2, 0],
            vec![2, 1],
            vec![2, 2],
        ];
        let stats = tensor(&[3, 3], &entries).statistics().clone();
        assert_eq!(stats.nnz(), 6);
        assert_eq!(stats.sizes(), &[3, 3]);
        let (i, j, none) = (set(&[0]), set(&[1]), DimSet::EMPTY);
        assert_eq!(stats.degree(i, none), Some(3));
        assert_eq!(stats.degree(j, none), Some(3));
        assert_eq!(stats.degree(set(&[0, 1]), none), Some(6));
        // Most entries in a row: row 2 has 3; in a column: columns 0..2 have 2.
        assert_eq!(stats.degree(j, i), Some(3));
        assert_eq!(stats.degree(i, j), Some(2));
        assert_eq!(stats.degree(i, i), None);
        assert_eq!(stats.degree(none, i), None);
        assert_eq!(stats.degrees().count(), 5);
    }

    #[test]
    fn full_tensors_match_brute_force() {
        for sizes in [
            vec![1],
            vec![7],
            vec![3, 4],
            vec![2, 1, 5],
            vec![2, 3, 2, 2, 1],
        ] {
            let cells: Vec<Vec<i64>> = sizes.iter().fold(vec![Vec::new()], |cells, &s| {
                cells
                    .iter()
                    .flat_map(|c| (0..s as i64).map(move |k| [c.clone(), vec![k]].concat()))
                    .collect()
            });
            let stats = tensor(&sizes, &cells).statistics().clone();
            assert_eq!(stats.nnz(), cells.len() as u64);
            assert_eq!(
                stats.degrees().count(),
                statistic_pairs(sizes.len()).len(),
                "{sizes:?}"
            );
            for stat in stats.degrees() {
                let expected = brute_force(&cells, stat.x, stat.y);
                assert_eq!(stat.degree, expected, "{sizes:?}: D({}|{})", stat.x, stat.y);
            }
        }
    }

    #[test]
    fn empty_and_scalar_tensors() {
        let stats = tensor(&[4, 5], &[]).statistics().clone();
        assert_eq!(stats.nnz(), 0);
        assert!(stats.degrees().all(|s| s.degree == 0));
        assert_eq!(stats.degrees().count(), 5);
        let scalar = tensor(&[], &[]).statistics().clone();
        assert_eq!(scalar.degrees().count(), 0);
    }

    #[test]
    fn wide_tensors_keep_the_documented_subset() {
        let pairs = statistic_pairs(6);
        // Y = ∅: 6 singles + all; Y = {y}: 5 singles + the other 5.
        assert_eq!(pairs.len(), 7 + 6 * 6);
        assert!(pairs.contains(&(set(&[1, 2, 3, 4, 5]), set(&[0]))));
        assert!(pairs.contains(&(set(&[0, 1, 2, 3, 4, 5]), DimSet::EMPTY)));
        assert_eq!(statistic_pairs(4).len(), 3usize.pow(4) - 2usize.pow(4));
    }

    #[test]
    fn dim_sets() {
        let s = set(&[0, 2, 5]);
        assert_eq!(s.to_string(), "{0,2,5}");
        assert_eq!(s.len(), 3);
        assert_eq!(s.last(), Some(5));
        assert!(set(&[0, 1]).is_prefix() && !s.is_prefix());
        assert_eq!(s.subsets().count(), 8);
        assert_eq!(DimSet::single(64), None);
        assert_eq!(DimSet::all(64).map(DimSet::len), Some(64));
        assert_eq!(DimSet::all(65), None);
    }

    fn entries_strategy() -> impl Strategy<Value = (Vec<u64>, Vec<Vec<i64>>)> {
        // Small sizes give many shared projections (direct-addressed ids);
        // large ones take the hash-map path.
        let size = prop_oneof![4 => 1u64..6, 1 => 1_000_000u64..2_000_000];
        prop::collection::vec(size, 1..=5).prop_flat_map(|sizes| {
            let entry: Vec<_> = sizes.iter().map(|&s| 0..s as i64).collect();
            (Just(sizes), prop::collection::vec(entry, 0..40))
        })
    }

    /// How sets were combined before [`within_runs`] and [`bucketed`]:
    /// every pair of ids ranked through a direct-addressed table or a hash
    /// map.
    fn hashed_combine(a: &Projection, b: &Projection, _: bool) -> Projection {
        let width = u64::from(b.distinct);
        rank(a.ids.len(), u64::from(a.distinct) * width, |e| {
            u64::from(a.ids[e]) * width + u64::from(b.ids[e])
        })
    }

    /// Tensors of 1 to 5 dimensions and up to 300 entries, some dimensions
    /// of a few coordinates and some of a million (pairs that take the
    /// counting sort).
    fn larger_entries_strategy() -> impl Strategy<Value = (Vec<u64>, Vec<Vec<i64>>)> {
        let size = prop_oneof![2 => 1u64..8, 1 => 20u64..60, 1 => 1_000_000u64..1_000_100];
        prop::collection::vec(size, 1..=5).prop_flat_map(|sizes| {
            let entry: Vec<_> = sizes.iter().map(|&s| 0..s as i64).collect();
            (Just(sizes), prop::collection::vec(entry, 0..300))
        })
    }

    proptest! {
        #[test]
        fn new_and_old_computations_agree((sizes, entries) in larger_entries_strategy()) {
            let t = tensor(&sizes, &entries);
            let columns: Vec<&[i64]> = (0..sizes.len()).map(|d| t.coords(d)).collect();
            let new = degree_statistics(&columns, &sizes);
            let old = degrees_by_projections(&columns, &sizes, hashed_combine);
            prop_assert_eq!(new, old);
        }

        #[test]
        fn degrees_match_brute_force((sizes, entries) in entries_strategy()) {
            let stats = tensor(&sizes, &entries).statistics().clone();
            prop_assert_eq!(stats.nnz(), entries.iter().collect::<BTreeSet<_>>().len() as u64);
            let pairs = statistic_pairs(sizes.len());
            prop_assert_eq!(stats.degrees().count(), pairs.len());
            for s in stats.degrees() {
                prop_assert_eq!(s.degree, brute_force(&entries, s.x, s.y), "D({}|{})", s.x, s.y);
            }
        }

        #[test]
        fn computed_statistics_are_restored_as_they_are(
            (sizes, entries) in entries_strategy()
        ) {
            let t = tensor(&sizes, &entries);
            let stats = t.statistics();
            let degrees: Vec<DegreeStat> = stats.degrees().collect();
            let restored = Statistics::restore(t.dims(), stats.nnz(), degrees.clone())
                .expect("computed statistics pass the checks");
            prop_assert_eq!(restored.sizes(), stats.sizes());
            prop_assert_eq!(restored.degrees().collect::<Vec<_>>(), degrees);
        }

        #[test]
        fn full_rows_have_the_statistics_of_their_listed_entries(
            (sizes, entries) in entries_strategy().prop_filter("a leading dimension", |(s, _)| s.len() >= 2),
            width in 1u64..5,
        ) {
            // The entries' leading coordinates are the rows; the last
            // dimension is replaced by one of `width` coordinates.
            let n = sizes.len();
            let mut sizes = sizes;
            sizes[n - 1] = width;
            let rows: BTreeSet<Vec<i64>> = entries.iter().map(|e| e[..n - 1].to_vec()).collect();
            let listed: Vec<Vec<i64>> = rows
                .iter()
                .flat_map(|row| (0..width as i64).map(move |c| [row.clone(), vec![c]].concat()))
                .collect();
            let dims: Vec<DimensionSpec> = sizes
                .iter()
                .enumerate()
                .map(|(d, &s)| DimensionSpec::new(format!("d{d}"), Some(s)))
                .collect();
            let leading = (0..n - 1).map(|d| rows.iter().map(|r| r[d]).collect()).collect();
            let values = vec![("v".to_string(), ValueData::Float64(vec![1.0; listed.len()]))];
            let full = Tensor::with_full_rows(dims, leading, values).expect("valid full rows");
            let expected = tensor(&sizes, &listed);
            let stats = full.statistics();
            prop_assert_eq!(stats.nnz(), expected.statistics().nnz());
            prop_assert_eq!(
                stats.degrees().collect::<Vec<_>>(),
                expected.statistics().degrees().collect::<Vec<_>>()
            );
            prop_assert!(Statistics::restore(full.dims(), stats.nnz(), stats.degrees().collect()).is_some());
        }
    }

    #[test]
    fn restore_rejects_impossible_records() {
        let entries = [vec![0, 0], vec![0, 1], vec![2, 1]];
        let t = tensor(&[3, 2], &entries);
        let degrees: Vec<DegreeStat> = t.statistics().degrees().collect();
        let restore = |degrees: Vec<DegreeStat>| Statistics::restore(t.dims(), 3, degrees);
        assert!(restore(degrees.clone()).is_some());
        let changed = |k: usize, degree: u64| {
            let mut d = degrees.clone();
            d[k].degree = degree;
            d
        };
        // D({0,1}|∅) is nnz; no degree is 0 or above nnz or its cells.
        let all = degrees
            .iter()
            .position(|s| s.y.is_empty() && s.x.len() == 2)
            .expect("D(all|∅)");
        assert!(restore(changed(all, 2)).is_none());
        assert!(restore(changed(0, 0)).is_none());
        assert!(restore(changed(0, 4)).is_none());
        let col = degrees
            .iter()
            .position(|s| s.x == set(&[1]) && s.y.is_empty())
            .expect("D({1}|∅)");
        assert!(restore(changed(col, 3)).is_none());
        assert!(restore(degrees[1..].to_vec()).is_none());
        let mut swapped = degrees.clone();
        swapped.swap(0, 1);
        assert!(restore(swapped).is_none());
        assert!(Statistics::restore(t.dims(), 4, degrees.clone()).is_none());
        // A full tensor's degrees are the products of the sizes.
        let full = tensor(&[1, 2], &[vec![0, 0], vec![0, 1]]);
        let mut degrees: Vec<DegreeStat> = full.statistics().degrees().collect();
        assert!(Statistics::restore(full.dims(), 2, degrees.clone()).is_some());
        let k = degrees
            .iter()
            .position(|s| s.x == set(&[1]) && s.y == set(&[0]))
            .expect("D({1}|{0})");
        degrees[k].degree = 1;
        assert!(Statistics::restore(full.dims(), 2, degrees).is_none());
    }
}
