//! The paired path: a query that is a product of two tables joined on the
//! variables they share, whose output's variables tell each table's
//! entries apart ([`Paired`]), runs as one pass over the joined pairs of
//! their entries instead of its loop nest, and builds no fibertree index.
//!
//! First each table (a *side*) is gone through once: per entry, the
//! product of its value (1 for a pattern) and of the cells of the inputs
//! read at its entries, and the sum of its terms of the sum factor. Those
//! inputs are dense arrays addressed by offset, as the sparse-driven path
//! reads its operands ([`super::driven`]): in place when they store every
//! cell, else scattered into an array (absent cells 0). An input read at
//! each pair has the part of its offset that each side's coordinates give
//! taken per entry, the two added per pair. The right side's entries whose
//! product is not 0 are grouped by their shared coordinates packed into
//! one number, by a counting sort when there are few such numbers and by
//! sorting otherwise, each group in stored order, and what the pairs read
//! of them gathered in that order. Then each left entry whose product is
//! not 0 meets its group: per pair, the two products times the factors
//! read at the pair and the sum factor (the two sums added, read through
//! its function). A side that is an earlier result is checked first: when
//! the output's variables do not tell its entries apart
//! ([`Tensor::distinct_at`]), the loops run instead.
//!
//! Every pair is its own result entry. The number of pairs of each left
//! entry is known before any is written, so the result's columns are
//! allocated (and charged against the memory limit) at their full length
//! at once, and the left's entries are split into chunks of about equal
//! numbers of pairs that write their parts of the columns on the thread
//! pool; cancellation is checked every [`CHECK_PAIRS`] pairs. Entries
//! whose value is 0 are then dropped. When the output lists the left's
//! dimensions from its first on, then the right's other dimensions in
//! their stored order, the columns are in increasing order and are stored
//! as they are; otherwise they become entries, sorted when stored.
//!
//! The pairs skipped are those whose product is 0, which the loops never
//! reach (an absent cell) or do not store (a zero): the same result as
//! long as every value is finite (`0 × ∞` is NaN), so a query that reads a
//! value that is not runs its loops. Sums are taken in another order than
//! the loops' (each side's terms first), so floats agree up to rounding.

use std::borrow::Cow;
use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::ir::{Annotation, ScalarOp};
use crate::storage::Tensor;

use super::ExecOptions;
use super::accumulate::{Entries, Finished};
use super::control::{Control, Held, pool};
use super::driven::Outcome;
use super::driven::{finite, huge_values, scatter, strides, values_as_floats, vars_of};
use super::finish;
use super::kernel::float_entry_bytes;
use super::plan::{PAIRED_CELLS, Paired, PairedAt, PairedPart, PhysicalQuery};

/// Pairs between two checks for cancellation and progress reports.
const CHECK_PAIRS: usize = 1 << 16;

/// The most chunks the pairs are split into for the threads.
const CHUNKS: usize = 64;

/// The fewest pairs of a chunk.
const CHUNK_PAIRS: usize = 1 << 16;

/// Group keys per right entry (beyond [`FEW_KEYS`]) up to which the
/// right's groups are found by a counting sort over every key.
const KEYS_PER_ENTRY: u64 = 2;

/// Group keys a counting sort may always go over.
const FEW_KEYS: u64 = 1 << 16;

/// Runs `query` over the joined pairs of its two tables; `inputs` are the
/// tensors its inputs read with their annotations, in input order.
/// Returns the result, through the query's finish (the caller stores it
/// as the loops' would be), or
/// `None` when an input holds a value that is not finite, an array cannot
/// be addressed, or the output does not tell an earlier result's entries
/// apart (the caller runs the loops).
pub(crate) fn run(
    query: &PhysicalQuery,
    paired: &Paired,
    inputs: &[(&Tensor, Annotation)],
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Outcome>> {
    if inputs
        .iter()
        .any(|&(tensor, annotation)| huge_values(tensor, annotation) || !finite(tensor, annotation))
    {
        return Ok(None);
    }
    let held = Held::new(control);
    let summed = paired
        .reads
        .iter()
        .any(|r| matches!(r.part, PairedPart::Term(_)));
    let (Some(left), Some(right)) = (
        Side::of(query, paired, false, inputs, &held)?,
        Side::of(query, paired, true, inputs, &held)?,
    ) else {
        return Ok(None);
    };
    let left_scalars = left.scalars(summed, (&held, control))?;
    let right_scalars = right.scalars(summed, (&held, control))?;
    let Some(key) = GroupKey::of(query, paired, &left, &right)? else {
        return Ok(None);
    };
    let sources = sources(query, &left, &right)?;
    let read: Vec<usize> = sources.iter().filter(|s| s.0).map(|s| s.1).collect();
    let groups = Groups::of(&key, &right, &right_scalars, &read, &held)?;
    drop(right_scalars);
    let mut crossed = Vec::new();
    for read in paired.reads.iter().filter(|r| r.at == PairedAt::Pair) {
        let Some(mut cells) = Crossed::of(query, read.input, inputs, (&left, &right), &held)?
        else {
            return Ok(None);
        };
        cells.right = groups.order.iter().map(|&f| cells.right[f]).collect();
        crossed.push(cells);
    }
    let pass = PairPass {
        left: &left,
        right: &right,
        left_scalars: &left_scalars,
        key: &key,
        groups: &groups,
        crossed: &crossed,
        sources: &sources,
        sum_map: paired.sum_map,
        summed,
        control,
    };
    let (mut coords, mut values) = pass.write_all(query.output.len(), options.threads, &held)?;
    pool(options.threads)?.install(|| finish::floats(query, &mut values));
    drop_zeros(&mut coords, &mut values);
    if in_order(&sources, &left, &right, paired) {
        return Ok(Some(Outcome::Columns(coords, values)));
    }
    // Written as entries to be sorted when stored: the columns and the
    // entries live together for a while.
    let dims = coords.len();
    held.reserve((values.len() as u64).saturating_mul(float_entry_bytes(dims)))?;
    let mut entries = Entries::new(dims);
    entries.reserve(values.len());
    for (e, value) in values.into_iter().enumerate() {
        entries.push(coords.iter().map(|c| c[e]), value);
    }
    Ok(Some(Outcome::Entries(Finished::Float(vec![entries]))))
}

/// The part of the result's columns one chunk writes.
struct Part<'o> {
    coords: Vec<&'o mut [i64]>,
    values: &'o mut [f64],
}

/// `coords` and `values` cut into consecutive parts of `lengths` entries.
fn split<'o>(
    coords: &'o mut [Vec<i64>],
    values: &'o mut [f64],
    lengths: impl Iterator<Item = usize>,
) -> Vec<Part<'o>> {
    let mut rest_coords: Vec<&'o mut [i64]> = coords.iter_mut().map(Vec::as_mut_slice).collect();
    let mut rest_values = values;
    let mut parts = Vec::new();
    for n in lengths {
        let mut part_coords = Vec::with_capacity(rest_coords.len());
        for column in &mut rest_coords {
            let (head, tail) = std::mem::take(column).split_at_mut(n);
            part_coords.push(head);
            *column = tail;
        }
        let (head, tail) = rest_values.split_at_mut(n);
        rest_values = tail;
        parts.push(Part {
            coords: part_coords,
            values: head,
        });
    }
    parts
}

/// Removes the entries whose value is 0 (a product whose sum factor is
/// 0), which the result does not store, keeping the others in order.
fn drop_zeros(coords: &mut [Vec<i64>], values: &mut Vec<f64>) {
    if !values.contains(&0.0) {
        return;
    }
    let mut kept = 0;
    for e in 0..values.len() {
        if values[e] != 0.0 {
            for column in coords.iter_mut() {
                column[kept] = column[e];
            }
            values[kept] = values[e];
            kept += 1;
        }
    }
    values.truncate(kept);
    for column in coords.iter_mut() {
        column.truncate(kept);
    }
}

/// An input's values as a dense array, row-major over its stored
/// dimensions (in place when it stores every cell, else scattered).
struct Array<'a> {
    values: Cow<'a, [f64]>,
    /// The stride of each stored dimension.
    strides: Vec<usize>,
    tensor: &'a Tensor,
}

impl<'a> Array<'a> {
    /// Input `k`'s array; `None` when it cannot be addressed or would be
    /// too large.
    fn of(
        query: &PhysicalQuery,
        k: usize,
        inputs: &[(&'a Tensor, Annotation)],
        held: &Held<'_>,
    ) -> Result<Option<Array<'a>>> {
        let &(tensor, annotation) = inputs
            .get(k)
            .ok_or_else(|| internal(query, "misses an input"))?;
        let Some((strides, cells)) = strides(tensor) else {
            return Ok(None);
        };
        let mut values = values_as_floats(query, tensor, annotation)?;
        if !tensor.is_full() {
            if cells as u64 > PAIRED_CELLS {
                return Ok(None);
            }
            held.reserve((cells as u64).saturating_mul(8))?;
            values = Cow::Owned(scatter(query, tensor, &values, &strides, cells)?);
        }
        Ok(Some(Array {
            values,
            strides,
            tensor,
        }))
    }
}

/// Where a side's entry's cell lies in an input's array: the part of the
/// offset that the side's coordinates give.
struct Address {
    /// `(side dimension, stride)` for each input dimension the side reads.
    terms: Vec<(usize, usize)>,
    /// The side dimensions whose coordinates may lie past the input's
    /// size there, with that size: an entry beyond it meets an absent
    /// cell.
    bounded: Vec<(usize, i64)>,
    /// Whether the side reads every dimension of the input.
    whole: bool,
}

impl Address {
    /// The address in `array` (read by `vars`) of `side`'s entries, over
    /// the dimensions the side reads but those of the variables `taken`
    /// (read at the other side).
    fn of(array: &Array<'_>, vars: &[usize], side: &Side<'_>, taken: &[usize]) -> Address {
        let mut address = Address {
            terms: Vec::with_capacity(vars.len()),
            bounded: Vec::new(),
            whole: true,
        };
        for (d, v) in vars.iter().enumerate() {
            let position = side.vars.iter().position(|w| w == v);
            let Some(p) = position.filter(|_| !taken.contains(v)) else {
                address.whole = false;
                continue;
            };
            address.terms.push((p, array.strides[d]));
            let size = array.tensor.dims()[d].size;
            if size < side.sizes[p] {
                address.bounded.push((p, size as i64));
            }
        }
        address
    }

    /// The offset part of entry `e` of a side with coordinate columns
    /// `coords`; `None` where the input has no cell.
    #[inline]
    fn offset(&self, coords: &[&[i64]], e: usize) -> Option<usize> {
        if self.bounded.iter().any(|&(d, size)| coords[d][e] >= size) {
            return None;
        }
        Some(
            self.terms
                .iter()
                .map(|&(d, stride)| coords[d][e] as usize * stride)
                .sum(),
        )
    }
}

/// An input read at one side's entries.
struct Cells<'a> {
    values: Cow<'a, [f64]>,
    address: Address,
}

impl<'a> Cells<'a> {
    /// Input `k` read at the entries of `side`; `None` when its array
    /// cannot be addressed or would be too large.
    fn of(
        query: &PhysicalQuery,
        k: usize,
        inputs: &[(&'a Tensor, Annotation)],
        side: &Side<'a>,
        held: &Held<'_>,
    ) -> Result<Option<Cells<'a>>> {
        let Some(array) = Array::of(query, k, inputs, held)? else {
            return Ok(None);
        };
        let vars = vars_of(query, k)?;
        let address = Address::of(&array, &vars, side, &[]);
        if !address.whole {
            return Err(internal(
                query,
                "reads an input at a table without its variables",
            ));
        }
        Ok(Some(Cells {
            values: array.values,
            address,
        }))
    }

    /// The cell at entry `e` of a side with coordinate columns `coords`;
    /// 0 where the input has none.
    #[inline]
    fn at(&self, coords: &[&[i64]], e: usize) -> f64 {
        self.address
            .offset(coords, e)
            .and_then(|offset| self.values.get(offset))
            .copied()
            .unwrap_or(0.0)
    }
}

/// An input read at each pair (a factor over variables of both tables):
/// the parts of its cells' offsets that each side's entries give, added
/// per pair. [`NO_CELL`] marks an entry whose cells all lie outside.
struct Crossed<'a> {
    values: Cow<'a, [f64]>,
    /// Per left entry.
    left: Vec<usize>,
    /// Per right entry, in the order of [`Groups`] once gathered.
    right: Vec<usize>,
}

/// The offset of an entry whose cells lie outside an input.
const NO_CELL: usize = usize::MAX;

impl<'a> Crossed<'a> {
    /// Input `k` read at the pairs of `left` and `right`; `None` when its
    /// array cannot be addressed or would be too large.
    fn of(
        query: &PhysicalQuery,
        k: usize,
        inputs: &[(&'a Tensor, Annotation)],
        (left, right): (&Side<'a>, &Side<'a>),
        held: &Held<'_>,
    ) -> Result<Option<Crossed<'a>>> {
        let Some(array) = Array::of(query, k, inputs, held)? else {
            return Ok(None);
        };
        let vars = vars_of(query, k)?;
        // A shared variable is the left's.
        let from_left = Address::of(&array, &vars, left, &[]);
        let from_right = Address::of(&array, &vars, right, &left.vars);
        let read = from_left.terms.len() + from_right.terms.len();
        if read != vars.len() {
            return Err(internal(query, "reads a variable neither table reads"));
        }
        held.reserve(((left.entries + 2 * right.entries) as u64).saturating_mul(8))?;
        let offsets = |side: &Side<'_>, address: &Address| -> Vec<usize> {
            (0..side.entries)
                .map(|e| address.offset(&side.coords, e).unwrap_or(NO_CELL))
                .collect()
        };
        Ok(Some(Crossed {
            left: offsets(left, &from_left),
            right: offsets(right, &from_right),
            values: array.values,
        }))
    }

    /// The cell of left entry `e` and right entry `i` (in group order).
    #[inline]
    fn at(&self, e: usize, i: usize) -> f64 {
        match (self.left[e], self.right[i]) {
            (NO_CELL, _) | (_, NO_CELL) => 0.0,
            (l, r) => self.values.get(l + r).copied().unwrap_or(0.0),
        }
    }
}

/// One table of the pair, with the inputs read at its entries.
struct Side<'a> {
    /// Its coordinates, one column per stored dimension.
    coords: Vec<&'a [i64]>,
    /// Its values as floats; `None` for its pattern (1 at every entry).
    x: Option<Cow<'a, [f64]>>,
    /// Its entries.
    entries: usize,
    /// The query's variable of each dimension.
    vars: Vec<usize>,
    /// The size of each dimension.
    sizes: Vec<u64>,
    /// The length of the prefix of its dimensions that is a key of it.
    key: usize,
    /// The inputs that are factors of the product.
    factors: Vec<Cells<'a>>,
    /// The inputs read through a function.
    maps: Vec<(Cells<'a>, ScalarOp)>,
    /// The terms of the sum factor, each with its sign.
    terms: Vec<(Cells<'a>, f64)>,
}

/// Per entry of a side: the product of its value and factors, and the
/// sum of its terms (empty when the query has no sum factor).
struct Scalars {
    product: Vec<f64>,
    sum: Vec<f64>,
}

impl<'a> Side<'a> {
    /// The right table of `paired` when `right`, else the left one, with
    /// the inputs read at its entries; `None` when one of those cannot be
    /// read as an array.
    fn of(
        query: &PhysicalQuery,
        paired: &Paired,
        right: bool,
        inputs: &[(&'a Tensor, Annotation)],
        held: &Held<'_>,
    ) -> Result<Option<Side<'a>>> {
        let k = if right { paired.right } else { paired.left };
        let &(tensor, annotation) = inputs
            .get(k)
            .ok_or_else(|| internal(query, "misses a table"))?;
        let vars = vars_of(query, k)?;
        let written: Vec<usize> = (0..vars.len())
            .filter(|&d| query.output.contains(&vars[d]))
            .collect();
        if !tensor.distinct_at(&written) {
            return Ok(None);
        }
        let mut side = Side {
            coords: (0..vars.len()).map(|d| tensor.coords(d)).collect(),
            x: match annotation {
                Annotation::Multiplicity => None,
                Annotation::Column(_) => Some(values_as_floats(query, tensor, annotation)?),
            },
            entries: tensor.nnz(),
            vars,
            sizes: tensor.dims().iter().map(|d| d.size).collect(),
            key: tensor.key_prefix(),
            factors: Vec::new(),
            maps: Vec::new(),
            terms: Vec::new(),
        };
        let at = if right {
            PairedAt::Right
        } else {
            PairedAt::Left
        };
        for read in paired.reads.iter().filter(|r| r.at == at) {
            let Some(cells) = Cells::of(query, read.input, inputs, &side, held)? else {
                return Ok(None);
            };
            match read.part {
                PairedPart::Factor => side.factors.push(cells),
                PairedPart::Map(op) => side.maps.push((cells, op)),
                PairedPart::Term(negated) => {
                    side.terms.push((cells, if negated { -1.0 } else { 1.0 }))
                }
            }
        }
        Ok(Some(side))
    }

    /// Every entry's product and, when the query has a sum factor
    /// (`summed`), sum: one loop over the entries per input.
    fn scalars(&self, summed: bool, (held, control): (&Held<'_>, &Control<'_>)) -> Result<Scalars> {
        let arrays = if summed { 2 } else { 1 };
        held.reserve((self.entries as u64).saturating_mul(8 * arrays))?;
        let mut product = match &self.x {
            Some(x) => x.to_vec(),
            None => vec![1.0; self.entries],
        };
        for cells in &self.factors {
            for (e, p) in product.iter_mut().enumerate() {
                *p *= cells.at(&self.coords, e);
            }
            control.check()?;
        }
        for (cells, op) in &self.maps {
            for (e, p) in product.iter_mut().enumerate() {
                *p *= op
                    .apply_f64(&[cells.at(&self.coords, e)])
                    .unwrap_or(f64::NAN);
            }
            control.check()?;
        }
        let mut sum = vec![0.0; if summed { self.entries } else { 0 }];
        for (cells, sign) in &self.terms {
            for (e, s) in sum.iter_mut().enumerate() {
                *s += sign * cells.at(&self.coords, e);
            }
            control.check()?;
        }
        Ok(Scalars { product, sum })
    }
}

/// The shared coordinates of an entry packed into one number, row-major
/// over the right table's sizes of the shared dimensions.
struct GroupKey {
    /// `(left dimension, right dimension, stride)` per shared variable.
    dims: Vec<(usize, usize, u64)>,
    /// The numbers keys lie below.
    space: u64,
}

impl GroupKey {
    /// The key of `paired`'s shared variables; `None` when the packed
    /// numbers would overflow 64 bits.
    fn of(
        query: &PhysicalQuery,
        paired: &Paired,
        left: &Side<'_>,
        right: &Side<'_>,
    ) -> Result<Option<GroupKey>> {
        let position = |side: &Side<'_>, v: usize| {
            side.vars
                .iter()
                .position(|&w| w == v)
                .ok_or_else(|| internal(query, "shares a variable a table does not read"))
        };
        let mut dims = Vec::with_capacity(paired.shared.len());
        let mut space = 1u64;
        for &v in paired.shared.iter().rev() {
            let (l, r) = (position(left, v)?, position(right, v)?);
            dims.push((l, r, space));
            let Some(next) = space.checked_mul(right.sizes[r]) else {
                return Ok(None);
            };
            space = next;
        }
        Ok(Some(GroupKey { dims, space }))
    }

    /// The key of right entry `f`.
    #[inline]
    fn of_right(&self, right: &Side<'_>, f: usize) -> u64 {
        self.dims
            .iter()
            .map(|&(_, r, stride)| right.coords[r][f] as u64 * stride)
            .sum()
    }

    /// The key of left entry `e`; `None` when one of its shared
    /// coordinates lies past the right's size there (no right entry has
    /// it).
    #[inline]
    fn of_left(&self, left: &Side<'_>, right: &Side<'_>, e: usize) -> Option<u64> {
        let mut key = 0;
        for &(l, r, stride) in &self.dims {
            let c = left.coords[l][e] as u64;
            if c >= right.sizes[r] {
                return None;
            }
            key += c * stride;
        }
        Some(key)
    }
}

/// The right's entries whose product is not 0, grouped by key, each
/// group in stored order, with what the pairs read of them gathered in
/// that order: a group's entries are read one after another however the
/// table stores them.
struct Groups {
    /// Where each group lies.
    bounds: Bounds,
    /// The right entry at each position.
    order: Vec<usize>,
    /// The coordinates of the right's dimensions the output reads (empty
    /// columns for the others).
    coords: Vec<Vec<i64>>,
    /// Each entry's product.
    product: Vec<f64>,
    /// Each entry's sum (empty without a sum factor).
    sum: Vec<f64>,
}

/// Where the groups of [`Groups`] lie.
enum Bounds {
    /// Group `k` is `starts[k]..starts[k + 1]`.
    Counted(Vec<usize>),
    /// The entries' keys, sorted.
    Sorted(Vec<u64>),
}

impl Groups {
    /// The groups of `right`'s entries whose product is not 0 (its
    /// `scalars`), with the coordinates of its dimensions in `read`.
    fn of(
        key: &GroupKey,
        right: &Side<'_>,
        scalars: &Scalars,
        read: &[usize],
        held: &Held<'_>,
    ) -> Result<Groups> {
        let kept = || (0..right.entries).filter(|&f| scalars.product[f] != 0.0);
        let few = key.space
            <= FEW_KEYS.saturating_add(KEYS_PER_ENTRY.saturating_mul(right.entries as u64));
        let (bounds, order) = if few {
            let space = key.space as usize;
            held.reserve((space as u64 + 1 + right.entries as u64).saturating_mul(8))?;
            let mut starts = vec![0usize; space + 1];
            for f in kept() {
                starts[key.of_right(right, f) as usize + 1] += 1;
            }
            for k in 0..space {
                starts[k + 1] += starts[k];
            }
            let mut next = starts.clone();
            let mut order = vec![0; starts[space]];
            for f in kept() {
                let slot = &mut next[key.of_right(right, f) as usize];
                order[*slot] = f;
                *slot += 1;
            }
            (Bounds::Counted(starts), order)
        } else {
            held.reserve((right.entries as u64).saturating_mul(16))?;
            let mut pairs: Vec<(u64, usize)> =
                kept().map(|f| (key.of_right(right, f), f)).collect();
            pairs.sort_unstable();
            let (keys, order) = pairs.into_iter().unzip();
            (Bounds::Sorted(keys), order)
        };
        let columns = read.len() + 1 + usize::from(!scalars.sum.is_empty());
        held.reserve((order.len() as u64).saturating_mul(8 * columns as u64))?;
        let gather = |column: &[f64]| order.iter().map(|&f| column[f]).collect::<Vec<f64>>();
        Ok(Groups {
            coords: (0..right.vars.len())
                .map(|d| match read.contains(&d) {
                    true => order.iter().map(|&f| right.coords[d][f]).collect(),
                    false => Vec::new(),
                })
                .collect(),
            product: gather(&scalars.product),
            sum: if scalars.sum.is_empty() {
                Vec::new()
            } else {
                gather(&scalars.sum)
            },
            bounds,
            order,
        })
    }

    /// The positions of the entries of key `k`.
    #[inline]
    fn get(&self, k: u64) -> Range<usize> {
        match &self.bounds {
            Bounds::Counted(starts) => {
                let k = k as usize;
                match (starts.get(k), starts.get(k + 1)) {
                    (Some(&from), Some(&to)) => from..to,
                    _ => 0..0,
                }
            }
            Bounds::Sorted(keys) => {
                let from = keys.partition_point(|&c| c < k);
                from..from + keys[from..].partition_point(|&c| c == k)
            }
        }
    }
}

/// Where each output coordinate comes from: `(right, dimension)`, a
/// dimension of the right table when `right`, else of the left one (a
/// shared variable is read from the left).
fn sources(query: &PhysicalQuery, left: &Side<'_>, right: &Side<'_>) -> Result<Vec<(bool, usize)>> {
    query
        .output
        .iter()
        .map(|v| {
            if let Some(d) = left.vars.iter().position(|w| w == v) {
                Ok((false, d))
            } else {
                right
                    .vars
                    .iter()
                    .position(|w| w == v)
                    .map(|d| (true, d))
                    .ok_or_else(|| internal(query, "writes a variable neither table reads"))
            }
        })
        .collect()
}

/// Whether the entries come out in increasing order: the output lists
/// the left's dimensions from its first on, through its key, then the
/// right's dimensions that are not shared, from its first on (within a
/// group the shared ones are equal, and the entries in stored order).
fn in_order(sources: &[(bool, usize)], left: &Side<'_>, right: &Side<'_>, paired: &Paired) -> bool {
    let prefix = sources
        .iter()
        .zip(0..)
        .take_while(|&(&(r, d), n)| !r && d == n)
        .count();
    let own: Vec<usize> = (0..right.vars.len())
        .filter(|&d| !paired.shared.contains(&right.vars[d]))
        .collect();
    let rest = &sources[prefix..];
    prefix >= left.key
        && rest.len() <= own.len()
        && rest.iter().zip(&own).all(|(&(r, d), &o)| r && d == o)
}

/// The pass over the pairs, shared by the chunks.
struct PairPass<'p, 'a> {
    left: &'p Side<'a>,
    right: &'p Side<'a>,
    left_scalars: &'p Scalars,
    key: &'p GroupKey,
    groups: &'p Groups,
    crossed: &'p [Crossed<'a>],
    sources: &'p [(bool, usize)],
    sum_map: Option<ScalarOp>,
    summed: bool,
    control: &'p Control<'p>,
}

impl PairPass<'_, '_> {
    /// The group left entry `e` meets (empty when its product is 0).
    #[inline]
    fn group(&self, e: usize) -> Range<usize> {
        if self.left_scalars.product[e] == 0.0 || self.crossed.iter().any(|c| c.left[e] == NO_CELL)
        {
            return 0..0;
        }
        self.key
            .of_left(self.left, self.right, e)
            .map_or(0..0, |k| self.groups.get(k))
    }

    /// The left's entries split into chunks of about equal numbers of
    /// pairs, each with its pairs.
    fn chunks(&self) -> Vec<(Range<usize>, usize)> {
        let counts: Vec<usize> = (0..self.left.entries)
            .map(|e| self.group(e).len())
            .collect();
        let total: usize = counts.iter().sum();
        let target = total.div_ceil(CHUNKS).max(CHUNK_PAIRS);
        let mut chunks = Vec::new();
        let (mut start, mut pairs) = (0, 0);
        for (e, &count) in counts.iter().enumerate() {
            pairs += count;
            if pairs >= target {
                chunks.push((start..e + 1, pairs));
                (start, pairs) = (e + 1, 0);
            }
        }
        if start < self.left.entries {
            chunks.push((start..self.left.entries, pairs));
        }
        chunks
    }

    /// Every pair's entry, as a coordinate column per output dimension
    /// (`dims` of them) and the values: the columns allocated at their
    /// full length at once, each chunk's part written on the pool of
    /// `threads`.
    fn write_all(
        &self,
        dims: usize,
        threads: usize,
        held: &Held<'_>,
    ) -> Result<(Vec<Vec<i64>>, Vec<f64>)> {
        let chunks = self.chunks();
        let total: usize = chunks.iter().map(|(_, pairs)| pairs).sum();
        held.reserve((total as u64).saturating_mul(float_entry_bytes(dims)))?;
        let mut coords: Vec<Vec<i64>> = (0..dims).map(|_| vec![0; total]).collect();
        let mut values = vec![0.0; total];
        let parts = split(
            &mut coords,
            &mut values,
            chunks.iter().map(|(_, pairs)| *pairs),
        );
        pool(threads)?.install(|| {
            chunks
                .into_par_iter()
                .zip(parts)
                .map(|((entries, _), part)| self.write(entries, part))
                .collect::<Result<()>>()
        })?;
        Ok((coords, values))
    }

    /// Writes the pairs of left entries `entries` into `part`, which has
    /// room for exactly those.
    fn write(&self, entries: Range<usize>, mut part: Part<'_>) -> Result<()> {
        let left = self.left;
        let groups = self.groups;
        let mut at = 0;
        let mut since = 0;
        for e in entries {
            let group = self.group(e);
            if group.is_empty() {
                continue;
            }
            let lp = self.left_scalars.product[e];
            let ls = if self.summed {
                self.left_scalars.sum[e]
            } else {
                0.0
            };
            let n = group.len();
            let values = &mut part.values[at..at + n];
            for (value, i) in values.iter_mut().zip(group.clone()) {
                *value = lp * groups.product[i];
                for cells in self.crossed {
                    *value *= cells.at(e, i);
                }
                if self.summed {
                    let sum = ls + groups.sum[i];
                    *value *= match self.sum_map {
                        Some(op) => op.apply_f64(&[sum]).unwrap_or(f64::NAN),
                        None => sum,
                    };
                }
            }
            for (column, &(right, d)) in part.coords.iter_mut().zip(self.sources) {
                let column = &mut column[at..at + n];
                if right {
                    column.copy_from_slice(&groups.coords[d][group.clone()]);
                } else {
                    column.fill(left.coords[d][e]);
                }
            }
            at += n;
            since += n;
            if since >= CHECK_PAIRS {
                self.control.tick();
                self.control.check()?;
                since = 0;
            }
        }
        Ok(())
    }
}

fn internal(query: &PhysicalQuery, what: &str) -> Error {
    Error::Internal(format!("the paired run of '{}' {what}", query.name))
}
