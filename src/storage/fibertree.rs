//! Fibertree indexes: the per-order views of a tensor that the join executor
//! walks (Galley sections 3.2 and 6).
//!
//! A [`FiberTree`] over a dimension order has one [`Level`] per dimension.
//! Level `k` maps a *parent position* (a node of level `k-1`; the root is
//! position 0) and a coordinate of dimension `order[k]` to a *child
//! position*. Each level has a [`LevelFormat`]:
//!
//! - **Dense**: every coordinate `0..size` has a slot under every parent;
//!   child position = `parent * size + coord`. A presence bitmap says which
//!   slots hold stored entries (or, above the leaf, have entries beneath).
//! - **Compressed**: sorted `pos`/`crd` arrays; the children of `parent` are
//!   `crd[pos[parent]..pos[parent+1]]`, and a child's position is its index
//!   in `crd`.
//! - **Hashed**: the compressed arrays plus a hash table from
//!   `(parent, coord)` to the child position, for O(1) expected lookups.
//!   Iteration walks the sorted `crd`, so it is in ascending coordinate
//!   order like every other format.
//! - **Bytemap**: positions as for dense, with a flag (one byte) per slot for
//!   O(1) lookups and the sorted present coordinates per parent for
//!   iteration.
//!
//! Cursors only ever yield *present* coordinates: those with at least one
//! stored entry beneath (at the leaf, the entries themselves). The leaf's
//! child positions index the value arrays ([`FiberTree::values`]). Under a
//! dense or bytemap leaf, the value arrays have a slot for every position;
//! slots without an entry hold the fill value (0, or `false`) and are never
//! yielded by a cursor ([`Level::contains`] tells them apart).
//!
//! Dense and bytemap levels allocate `fibers × size` slots. A level for which
//! that exceeds [`dense_limit`] (`4·nnz + 2²⁰` slots) is refused with an
//! error instead of allocating gigabytes; use compressed or hashed there.
//!
//! Building: for the tensor's stored order (the identity), entries are
//! already sorted, and a compressed or hashed leaf's `crd` and the value
//! arrays *are* the tensor's Arrow buffers (shared, not copied). Other
//! orders sort a permutation of the entries first (a radix sort of packed
//! keys when the coordinates fit in 64 bits together), then gather. Upper
//! levels are built by grouping runs of equal prefixes. The
//! [`Tensor::index`] cache keeps built trees by [`IndexSpec`].

use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, UInt64Array};
use arrow::buffer::{BooleanBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};
use hashbrown::HashMap;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::storage::tensor::PARALLEL_ROWS;
use crate::storage::tiles::TileSpec;
use crate::storage::{Dimension, Tensor};

/// The format of one fibertree level; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LevelFormat {
    /// A slot for every coordinate under every parent, with presence bits.
    Dense,
    /// Sorted `pos`/`crd` arrays.
    Compressed,
    /// Sorted `pos`/`crd` arrays plus a `(parent, coord)` hash table.
    Hashed,
    /// A flag per slot plus the sorted present coordinates.
    Bytemap,
}

impl LevelFormat {
    /// Every format, in the order [`LevelFormat::name`] lists them.
    pub const ALL: [LevelFormat; 4] = [
        LevelFormat::Dense,
        LevelFormat::Compressed,
        LevelFormat::Hashed,
        LevelFormat::Bytemap,
    ];

    /// The format called `name` (any case), if there is one.
    pub fn from_name(name: &str) -> Option<LevelFormat> {
        LevelFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// The lower-case name, as [`IndexSpec`]'s `Display` shows it.
    pub fn name(self) -> &'static str {
        match self {
            LevelFormat::Dense => "dense",
            LevelFormat::Compressed => "compressed",
            LevelFormat::Hashed => "hashed",
            LevelFormat::Bytemap => "bytemap",
        }
    }

    /// Whether the level allocates a slot per coordinate per parent.
    pub fn is_dense_addressed(self) -> bool {
        matches!(self, LevelFormat::Dense | LevelFormat::Bytemap)
    }
}

impl fmt::Display for LevelFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which index: a dimension order (positions in the tensor's stored order,
/// outermost level first) and a format per level.
///
/// Displayed with dimension positions, e.g. `(1,0) compressed/dense` for a
/// column-major index with compressed columns and dense rows;
/// [`IndexSpec::named`] uses dimension names instead.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexSpec {
    /// The dimension of each level, outermost first.
    pub order: Vec<usize>,
    /// The format of each level.
    pub formats: Vec<LevelFormat>,
}

impl IndexSpec {
    /// An index over `order` with the given level formats (checked by
    /// [`IndexSpec::validate`] when built).
    pub fn new(order: Vec<usize>, formats: Vec<LevelFormat>) -> IndexSpec {
        IndexSpec { order, formats }
    }

    /// The index over `order` whose levels are all compressed.
    pub fn compressed(order: Vec<usize>) -> IndexSpec {
        let formats = vec![LevelFormat::Compressed; order.len()];
        IndexSpec { order, formats }
    }

    /// The all-compressed index of the stored order of a tensor with `ndims`
    /// dimensions.
    pub fn identity(ndims: usize) -> IndexSpec {
        IndexSpec::compressed((0..ndims).collect())
    }

    /// Whether the order is the stored order.
    pub fn is_identity(&self) -> bool {
        self.order.iter().enumerate().all(|(k, &d)| k == d)
    }

    /// Checks that the order is a permutation of the tensor's dimensions and
    /// that there is one format per level.
    pub fn validate(&self, dims: &[Dimension]) -> Result<()> {
        let n = dims.len();
        if self.order.len() != n {
            return Err(Error::Invalid(format!(
                "index order {} lists {} dimensions, the tensor has {n}",
                list(&self.order),
                self.order.len()
            )));
        }
        let mut seen = vec![false; n];
        for &d in &self.order {
            match seen.get_mut(d) {
                None => {
                    return Err(Error::Invalid(format!(
                        "index order {} names dimension {d}, the tensor has dimensions 0..{n}",
                        list(&self.order)
                    )));
                }
                Some(true) => {
                    return Err(Error::Invalid(format!(
                        "index order {} lists dimension {d} twice",
                        list(&self.order)
                    )));
                }
                Some(slot) => *slot = true,
            }
        }
        if self.formats.len() != n {
            return Err(Error::Invalid(format!(
                "index {} gives {} level formats for {n} levels",
                list(&self.order),
                self.formats.len()
            )));
        }
        Ok(())
    }

    /// The spec with dimension names, e.g. `(j,i) compressed/dense`.
    pub fn named(&self, dims: &[Dimension]) -> String {
        format!("{} {}", named_order(&self.order, dims), self.format_list())
    }

    /// About the bytes the index takes over `nnz` entries (positions and
    /// coordinates per level, a copy of the values): what building it is
    /// charged against the memory limit.
    pub fn estimated_bytes(&self, nnz: usize) -> u64 {
        (nnz as u64).saturating_mul(16 * self.order.len() as u64 + 16)
    }

    fn format_list(&self) -> String {
        let formats: Vec<&str> = self.formats.iter().map(|f| f.name()).collect();
        formats.join("/")
    }
}

impl fmt::Display for IndexSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", list(&self.order), self.format_list())
    }
}

/// An index a user declared (`CREATE INDEX name ON table (...)`): kept
/// built with its tensor, persisted with its table, and named in plans
/// that read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredIndex {
    /// The name, as created (unique, without regard to case, in a
    /// database).
    pub name: String,
    /// A fibertree's order and level formats, or tiles.
    pub layout: IndexLayout,
}

impl DeclaredIndex {
    /// `a_csc (j,i) dense/compressed`: the name and the layout with
    /// dimension names.
    pub fn named(&self, dims: &[Dimension]) -> String {
        format!("{} {}", self.name, self.layout.named(dims))
    }
}

/// What a declared index builds: a fibertree, or the tiles of a
/// [`TiledIndex`](crate::storage::tiles::TiledIndex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexLayout {
    /// A fibertree of this order and these level formats.
    Levels(IndexSpec),
    /// Tiles of these sizes over this order.
    Tiles(TileSpec),
}

impl IndexLayout {
    /// The dimension of each level, outermost first.
    pub fn order(&self) -> &[usize] {
        match self {
            IndexLayout::Levels(spec) => &spec.order,
            IndexLayout::Tiles(spec) => &spec.order,
        }
    }

    /// Checks the layout against the tensor's dimensions (see
    /// [`IndexSpec::validate`] and [`TileSpec::validate`]).
    pub fn validate(&self, dims: &[Dimension]) -> Result<()> {
        match self {
            IndexLayout::Levels(spec) => spec.validate(dims),
            IndexLayout::Tiles(spec) => spec.validate(dims),
        }
    }

    /// The layout with dimension names, e.g. `(j,i) compressed/dense` or
    /// `(i,j) tiles(256,256)`.
    pub fn named(&self, dims: &[Dimension]) -> String {
        match self {
            IndexLayout::Levels(spec) => spec.named(dims),
            IndexLayout::Tiles(spec) => spec.named(dims),
        }
    }

    /// The level formats as `USING` lists them: one per level, or the
    /// one `tiles(...)`.
    pub fn formats(&self) -> Vec<String> {
        match self {
            IndexLayout::Levels(spec) => {
                spec.formats.iter().map(|f| f.name().to_string()).collect()
            }
            IndexLayout::Tiles(spec) => vec![spec.format()],
        }
    }

    /// About the bytes building the layout over `tensor` takes: what it is
    /// charged against the memory limit.
    pub fn estimated_bytes(&self, tensor: &Tensor) -> u64 {
        match self {
            IndexLayout::Levels(spec) => spec.estimated_bytes(tensor.nnz()),
            IndexLayout::Tiles(spec) => spec.estimated_bytes(tensor),
        }
    }
}

/// `(j,i)`: an order with the names of its dimensions (a position for
/// one that `dims` lacks).
pub fn named_order(order: &[usize], dims: &[Dimension]) -> String {
    let names: Vec<String> = order
        .iter()
        .map(|&d| {
            dims.get(d)
                .map_or_else(|| d.to_string(), |dim| dim.name.clone())
        })
        .collect();
    format!("({})", names.join(","))
}

/// `(1,0)`.
fn list(order: &[usize]) -> String {
    let items: Vec<String> = order.iter().map(usize::to_string).collect();
    format!("({})", items.join(","))
}

/// The most slots a dense or bytemap level may allocate in a tree over
/// `nnz` entries: `4·nnz + 2²⁰`.
pub fn dense_limit(nnz: usize) -> u64 {
    4 * nnz as u64 + (1 << 20)
}

/// A fibertree index over a tensor; see the module documentation.
#[derive(Debug)]
pub struct FiberTree {
    spec: IndexSpec,
    levels: Vec<Level>,
    values: Vec<ArrayRef>,
    nnz: usize,
}

/// One level of a fibertree: the children of every parent position.
#[derive(Debug)]
pub struct Level {
    dim: usize,
    size: u64,
    fibers: usize,
    storage: Storage,
}

#[derive(Debug)]
enum Storage {
    Dense {
        stride: usize,
        present: Bitmap,
    },
    Compressed {
        pos: Vec<usize>,
        crd: ScalarBuffer<i64>,
    },
    Hashed {
        pos: Vec<usize>,
        crd: ScalarBuffer<i64>,
        table: HashMap<(usize, i64), usize>,
    },
    Bytemap {
        stride: usize,
        flags: Vec<bool>,
        pos: Vec<usize>,
        crd: ScalarBuffer<i64>,
    },
}

/// The values of one annotation column by leaf position.
#[derive(Clone, Copy, Debug)]
pub enum LeafValues<'a> {
    Boolean(&'a BooleanBuffer),
    Int64(&'a [i64]),
    /// `HUGEINT` values (a `Decimal128(38, 0)` column).
    Int128(&'a [i128]),
    Float64(&'a [f64]),
}

impl FiberTree {
    /// Builds the index `spec` over `tensor`.
    ///
    /// Errors: an invalid spec (see [`IndexSpec::validate`]), and a dense or
    /// bytemap level that would allocate more than [`dense_limit`] slots.
    pub fn build(tensor: &Tensor, spec: &IndexSpec) -> Result<FiberTree> {
        spec.validate(tensor.dims())?;
        if let Some(tree) = FiberTree::full_in_stored_order(tensor, spec) {
            return Ok(tree);
        }
        let nnz = tensor.nnz();
        let sorted = SortedEntries::new(tensor, &spec.order)?;
        let mut levels = Vec::with_capacity(spec.order.len());
        // The nodes of the level above: the entry where each one's run of
        // entries starts, and its position. The root is one node over all
        // entries (none for an empty tensor).
        let mut starts: Vec<usize> = if nnz > 0 { vec![0] } else { Vec::new() };
        let mut positions = Positions::Listed(vec![0; starts.len()]);
        let mut fibers = 1usize;
        for (k, (&dim, &format)) in spec.order.iter().zip(&spec.formats).enumerate() {
            let leaf = k + 1 == spec.order.len();
            let column = &sorted.columns[k];
            let (child_starts, first_child) = refine(&starts, column, nnz);
            if leaf && child_starts.len() != nnz {
                return Err(Error::Invalid(format!(
                    "the tensor holds {} duplicate coordinates; stored entries must be distinct",
                    nnz - child_starts.len()
                )));
            }
            let children = Children {
                parent_positions: &positions,
                first_child: &first_child,
                coords: if leaf {
                    column.clone()
                } else {
                    child_starts.iter().map(|&e| column[e]).collect()
                },
            };
            let dimension = &tensor.dims()[dim];
            let (level, child_positions) =
                Level::build(dim, dimension, format, fibers, &children, nnz)?;
            fibers = level.positions();
            levels.push(level);
            starts = child_starts;
            positions = child_positions;
        }
        let values = match (&positions, levels.last()) {
            (Positions::Listed(leaf), Some(level)) if level.format().is_dense_addressed() => sorted
                .values
                .iter()
                .map(|v| scatter(v, leaf, fibers))
                .collect::<Result<_>>()?,
            _ => sorted.values,
        };
        Ok(FiberTree {
            spec: spec.clone(),
            levels,
            values,
            nnz,
        })
    }

    /// The all-dense index of a tensor in its stored order whose entries
    /// fill its dimensions (a factor matrix, a dense vector): its sorted,
    /// distinct entries are exactly the cells in row-major order, so entry
    /// `e` sits at leaf position `e`, every slot is present, and the tree
    /// shares the tensor's value columns instead of scattering them.
    /// `None` for any other tensor or spec.
    fn full_in_stored_order(tensor: &Tensor, spec: &IndexSpec) -> Option<FiberTree> {
        let nnz = tensor.nnz();
        let all_dense = spec.formats.iter().all(|&f| f == LevelFormat::Dense);
        if nnz == 0 || !spec.is_identity() || !all_dense || !tensor.is_full() {
            return None;
        }
        let mut fibers = 1usize;
        let mut levels = Vec::with_capacity(spec.order.len());
        for (dim, dimension) in tensor.dims().iter().enumerate() {
            let stride = usize::try_from(dimension.size).ok()?;
            let slots = fibers.checked_mul(stride)?;
            levels.push(Level {
                dim,
                size: dimension.size,
                fibers,
                storage: Storage::Dense {
                    stride,
                    present: Bitmap::full(slots),
                },
            });
            fibers = slots;
        }
        Some(FiberTree {
            spec: spec.clone(),
            levels,
            values: tensor.annotation_columns().to_vec(),
            nnz,
        })
    }

    /// The spec the tree was built for.
    pub fn spec(&self) -> &IndexSpec {
        &self.spec
    }

    /// Number of stored entries (leaves).
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// The bytes the tree holds: its levels' arrays and its value arrays
    /// (counted whole even when shared with the tensor).
    pub fn bytes(&self) -> u64 {
        let levels: usize = self.levels.iter().map(Level::bytes).sum();
        let values: usize = self.values.iter().map(|v| v.get_array_memory_size()).sum();
        (levels + values) as u64
    }

    /// The levels, outermost first; empty for a tensor without dimensions,
    /// whose only leaf position is 0.
    #[inline]
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The children of the root: the fiber of the outermost level; `None`
    /// for a tensor without dimensions.
    pub fn root(&self) -> Option<Fiber<'_>> {
        self.levels.first().map(|l| l.fiber(0))
    }

    /// The position reached by following `coords` from the root through
    /// the first `coords.len()` levels: the parent position of the next
    /// level's fiber (0, the root's, for no coordinates). `None` when a
    /// coordinate is absent or there are fewer levels.
    pub fn descend(&self, coords: &[i64]) -> Option<usize> {
        let mut position = 0;
        for (level, &coord) in self.levels.get(..coords.len())?.iter().zip(coords) {
            position = level.fiber(position).lookup(coord)?;
        }
        Some(position)
    }

    /// The number of entries below `position` of the level above level
    /// `depth` (the root's position 0 for depth 0): the size of the
    /// subtree [`FiberTree::descend`] leads to. `None` when a level below
    /// is not position-listed (dense or bytemap).
    pub fn entries_under(&self, depth: usize, position: usize) -> Option<usize> {
        let (mut lo, mut hi) = (position, position + 1);
        for level in self.levels.get(depth..)? {
            let pos = level.pos()?;
            (lo, hi) = (*pos.get(lo)?, *pos.get(hi)?);
        }
        Some(hi.saturating_sub(lo))
    }

    /// The annotation columns by leaf position (in the order of
    /// [`Tensor::annotation_columns`]).
    pub fn values(&self) -> &[ArrayRef] {
        &self.values
    }

    /// Annotation column `column` as a typed slice by leaf position.
    pub fn leaf_values(&self, column: usize) -> Option<LeafValues<'_>> {
        let array = self.values.get(column)?;
        match array.data_type() {
            DataType::Boolean => Some(LeafValues::Boolean(array.as_boolean().values())),
            DataType::Int64 => Some(LeafValues::Int64(
                array.as_primitive::<Int64Type>().values(),
            )),
            DataType::Float64 => Some(LeafValues::Float64(
                array.as_primitive::<Float64Type>().values(),
            )),
            DataType::Decimal128(..) => Some(LeafValues::Int128(
                array.as_primitive::<Decimal128Type>().values(),
            )),
            _ => None,
        }
    }

    /// Calls `f(coords, leaf)` for every stored entry in the tree's order:
    /// `coords` has one coordinate per level (outermost first) and `leaf` is
    /// the entry's leaf position.
    pub fn for_each_entry(&self, mut f: impl FnMut(&[i64], usize)) {
        let Some(root) = self.root() else {
            (0..self.nnz).for_each(|leaf| f(&[], leaf));
            return;
        };
        let depth = self.levels.len();
        let mut coords = vec![0i64; depth];
        let mut stack = vec![root.cursor()];
        loop {
            let k = stack.len().saturating_sub(1);
            let Some(top) = stack.last_mut() else {
                return;
            };
            match top.next() {
                None => {
                    stack.pop();
                }
                Some((coord, child)) => {
                    coords[k] = coord;
                    match self.levels.get(k + 1) {
                        Some(level) => stack.push(level.fiber(child).cursor()),
                        None => f(&coords, child),
                    }
                }
            }
        }
    }
}

/// The entries' coordinates in level order and their values, sorted
/// lexicographically by the index order.
struct SortedEntries {
    columns: Vec<ScalarBuffer<i64>>,
    values: Vec<ArrayRef>,
}

impl SortedEntries {
    fn new(tensor: &Tensor, order: &[usize]) -> Result<SortedEntries> {
        let stored = (0..tensor.dims().len())
            .map(|d| {
                tensor
                    .data()
                    .column(d)
                    .as_primitive_opt::<Int64Type>()
                    .map(|a| a.values().clone())
                    .ok_or_else(|| {
                        Error::Type(format!("coordinate column {d} of the tensor is not Int64"))
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let in_order = |columns: Vec<ScalarBuffer<i64>>| SortedEntries {
            columns,
            values: tensor.annotation_columns().to_vec(),
        };
        if order.iter().enumerate().all(|(k, &d)| k == d) {
            return Ok(in_order(stored));
        }
        let level_columns: Vec<ScalarBuffer<i64>> =
            order.iter().map(|&d| stored[d].clone()).collect();
        let sizes: Vec<u64> = order.iter().map(|&d| tensor.dims()[d].size).collect();
        let (permutation, columns) = sort_entries(&level_columns, &sizes);
        if permutation.iter().enumerate().all(|(i, &e)| i as u64 == e) {
            // Already in this order (e.g. a diagonal): share the buffers.
            return Ok(in_order(level_columns));
        }
        let indices = UInt64Array::new(ScalarBuffer::from(permutation), None);
        let values = tensor
            .annotation_columns()
            .iter()
            .map(|v| arrow::compute::take(v.as_ref(), &indices, None))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(SortedEntries { columns, values })
    }
}

/// Sorts the entries by the level columns: returns the permutation (entry
/// at each sorted position) and the sorted columns.
fn sort_entries(
    columns: &[ScalarBuffer<i64>],
    sizes: &[u64],
) -> (Vec<u64>, Vec<ScalarBuffer<i64>>) {
    let rows = columns.first().map_or(0, |c| c.len());
    if rows < PARALLEL_ROWS {
        // Few entries: a comparison sort on the calling thread.
        let mut permutation: Vec<u64> = (0..rows as u64).collect();
        permutation.sort_unstable_by(|&a, &b| compare_rows(columns, a, b));
        let sorted_columns = columns
            .iter()
            .map(|c| permutation.iter().map(|&e| c[e as usize]).collect())
            .collect();
        return (permutation, sorted_columns);
    }
    let bits: Vec<u32> = sizes
        .iter()
        .map(|s| u64::BITS - s.saturating_sub(1).leading_zeros())
        .collect();
    let total: u32 = bits.iter().sum();
    if total <= 64 {
        // Pack each entry's coordinates into one key, radix-sort, and read
        // the sorted coordinates back from the keys.
        let keyed: Vec<(u64, u64)> = (0..rows)
            .into_par_iter()
            .map(|e| {
                let key = columns.iter().zip(&bits).fold(0u64, |acc, (c, &b)| {
                    acc.checked_shl(b).unwrap_or(0) | c[e] as u64
                });
                (key, e as u64)
            })
            .collect();
        let sorted = radix_sort(keyed, total);
        let mut shift = total;
        let sorted_columns = bits
            .iter()
            .map(|&b| {
                shift -= b;
                let mask = u64::MAX.checked_shr(64 - b).filter(|_| b > 0).unwrap_or(0);
                sorted
                    .par_iter()
                    .map(|&(key, _)| (key.checked_shr(shift).unwrap_or(0) & mask) as i64)
                    .collect::<Vec<i64>>()
                    .into()
            })
            .collect();
        (sorted.into_iter().map(|(_, e)| e).collect(), sorted_columns)
    } else {
        let mut permutation: Vec<u64> = (0..rows as u64).collect();
        permutation.par_sort_unstable_by(|&a, &b| compare_rows(columns, a, b));
        let sorted_columns = columns
            .iter()
            .map(|c| {
                permutation
                    .par_iter()
                    .map(|&e| c[e as usize])
                    .collect::<Vec<i64>>()
                    .into()
            })
            .collect();
        (permutation, sorted_columns)
    }
}

/// The lexicographic order of entries `a` and `b` by `columns`.
fn compare_rows(columns: &[ScalarBuffer<i64>], a: u64, b: u64) -> std::cmp::Ordering {
    columns
        .iter()
        .map(|c| c[a as usize].cmp(&c[b as usize]))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// Least-significant-digit radix sort of `(key, payload)` pairs by the low
/// `bits` bits of the key, 11 bits per pass; passes whose digit is the same
/// for every key are skipped.
fn radix_sort(mut items: Vec<(u64, u64)>, bits: u32) -> Vec<(u64, u64)> {
    const DIGIT: u32 = 11;
    const BUCKETS: usize = 1 << DIGIT;
    let mut scratch = vec![(0u64, 0u64); items.len()];
    let mut shift = 0;
    while shift < bits {
        let digit = |key: u64| ((key >> shift) as usize) & (BUCKETS - 1);
        let mut offsets = vec![0usize; BUCKETS];
        for &(key, _) in &items {
            offsets[digit(key)] += 1;
        }
        if offsets.iter().all(|&c| c == 0 || c == items.len()) {
            shift += DIGIT;
            continue;
        }
        let mut next = 0;
        for slot in offsets.iter_mut() {
            let count = *slot;
            *slot = next;
            next += count;
        }
        for &item in &items {
            let slot = &mut offsets[digit(item.0)];
            scratch[*slot] = item;
            *slot += 1;
        }
        std::mem::swap(&mut items, &mut scratch);
        shift += DIGIT;
    }
    items
}

/// Splits each node's run of entries (`starts`, ending at the next start or
/// `rows`) where `column` changes: returns the start of every child node and,
/// for every node, the index of its first child (plus the total at the end).
fn refine(starts: &[usize], column: &[i64], rows: usize) -> (Vec<usize>, Vec<usize>) {
    let mut child_starts = Vec::with_capacity(starts.len());
    let mut first_child = Vec::with_capacity(starts.len() + 1);
    for (j, &start) in starts.iter().enumerate() {
        let end = starts.get(j + 1).copied().unwrap_or(rows);
        first_child.push(child_starts.len());
        child_starts.push(start);
        child_starts.extend((start + 1..end).filter(|&e| column[e] != column[e - 1]));
    }
    first_child.push(child_starts.len());
    (child_starts, first_child)
}

/// Positions of the nodes of a level: listed, or `0..n` for compressed and
/// hashed levels (not materialized).
enum Positions {
    Listed(Vec<usize>),
    Sequential,
}

impl Positions {
    fn get(&self, node: usize) -> usize {
        match self {
            Positions::Listed(p) => p[node],
            Positions::Sequential => node,
        }
    }
}

/// The nodes of a level being built, grouped by parent node.
struct Children<'a> {
    /// Position of every parent node.
    parent_positions: &'a Positions,
    /// For parent node `j`, its children are `first_child[j]..first_child[j+1]`.
    first_child: &'a [usize],
    /// Coordinate of every child node.
    coords: ScalarBuffer<i64>,
}

impl Children<'_> {
    /// `(parent position, child node range)` for every parent node.
    fn groups(&self) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
        self.first_child
            .windows(2)
            .enumerate()
            .map(|(j, w)| (self.parent_positions.get(j), w[0]..w[1]))
    }

    /// The compressed `pos` array over `fibers` parent positions.
    fn pos(&self, fibers: usize) -> Vec<usize> {
        let mut pos = vec![0usize; fibers + 1];
        for (parent, range) in self.groups() {
            pos[parent + 1] = range.len();
        }
        for p in 1..pos.len() {
            pos[p] += pos[p - 1];
        }
        pos
    }
}

impl Level {
    /// Builds the level of dimension `dim` in `format` under `fibers` parent
    /// positions; returns it with the position of every child node.
    fn build(
        dim: usize,
        dimension: &Dimension,
        format: LevelFormat,
        fibers: usize,
        children: &Children<'_>,
        nnz: usize,
    ) -> Result<(Level, Positions)> {
        let level = |storage| Level {
            dim,
            size: dimension.size,
            fibers,
            storage,
        };
        if !format.is_dense_addressed() {
            let pos = children.pos(fibers);
            let crd = children.coords.clone();
            let storage = if format == LevelFormat::Hashed {
                let mut table = HashMap::with_capacity(crd.len());
                for (parent, range) in children.groups() {
                    table.extend(range.map(|i| ((parent, crd[i]), i)));
                }
                Storage::Hashed { pos, crd, table }
            } else {
                Storage::Compressed { pos, crd }
            };
            return Ok((level(storage), Positions::Sequential));
        }

        let slots = (fibers as u64).checked_mul(dimension.size);
        let limit = dense_limit(nnz);
        let (Some(slots), Ok(stride)) = (
            slots.filter(|&s| s <= limit),
            usize::try_from(dimension.size),
        ) else {
            return Err(Error::Invalid(format!(
                "a {format} level over dimension '{}' (size {}) under {fibers} fibers would \
                 allocate {} slots for {nnz} entries, more than the limit of 4·nnz + 2^20 = \
                 {limit}; use a compressed or hashed level",
                dimension.name,
                dimension.size,
                slots.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string()),
            )));
        };
        let slots = slots as usize;
        let mut child_positions = Vec::with_capacity(children.coords.len());
        for (parent, range) in children.groups() {
            child_positions.extend(range.map(|i| parent * stride + children.coords[i] as usize));
        }
        let storage = if format == LevelFormat::Dense {
            let mut present = Bitmap::new(slots);
            child_positions.iter().for_each(|&p| present.set(p));
            Storage::Dense { stride, present }
        } else {
            let mut flags = vec![false; slots];
            child_positions.iter().for_each(|&p| flags[p] = true);
            Storage::Bytemap {
                stride,
                flags,
                pos: children.pos(fibers),
                crd: children.coords.clone(),
            }
        };
        Ok((level(storage), Positions::Listed(child_positions)))
    }

    /// The bytes of the level's arrays (a hash table's entries counted
    /// at their size, not its spare capacity).
    fn bytes(&self) -> usize {
        use std::mem::{size_of, size_of_val};
        let compressed =
            |pos: &[usize], crd: &ScalarBuffer<i64>| size_of_val(pos) + size_of_val(crd.as_ref());
        match &self.storage {
            Storage::Dense { present, .. } => size_of_val(present.words.as_slice()),
            Storage::Compressed { pos, crd } => compressed(pos, crd),
            Storage::Hashed { pos, crd, table } => {
                compressed(pos, crd) + table.len() * size_of::<((usize, i64), usize)>()
            }
            Storage::Bytemap {
                flags, pos, crd, ..
            } => size_of_val(flags.as_slice()) + compressed(pos, crd),
        }
    }

    /// The format of the level.
    #[inline]
    pub fn format(&self) -> LevelFormat {
        match self.storage {
            Storage::Dense { .. } => LevelFormat::Dense,
            Storage::Compressed { .. } => LevelFormat::Compressed,
            Storage::Hashed { .. } => LevelFormat::Hashed,
            Storage::Bytemap { .. } => LevelFormat::Bytemap,
        }
    }

    /// The tensor dimension of the level (its position in the stored order).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The size of the level's dimension.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Number of parent positions (fibers).
    pub fn fibers(&self) -> usize {
        self.fibers
    }

    /// Number of child positions: the slots of a dense or bytemap level,
    /// the stored coordinates of the others.
    pub fn positions(&self) -> usize {
        match &self.storage {
            Storage::Dense { present, .. } => present.len,
            Storage::Bytemap { flags, .. } => flags.len(),
            Storage::Compressed { crd, .. } | Storage::Hashed { crd, .. } => crd.len(),
        }
    }

    /// The sorted coordinates of all fibers (`crd`); `None` for dense.
    #[inline]
    pub fn crd(&self) -> Option<&ScalarBuffer<i64>> {
        match &self.storage {
            Storage::Dense { .. } => None,
            Storage::Compressed { crd, .. }
            | Storage::Hashed { crd, .. }
            | Storage::Bytemap { crd, .. } => Some(crd),
        }
    }

    /// Where each fiber's coordinates start in [`Level::crd`] (`fibers + 1`
    /// offsets); `None` for dense.
    pub fn pos(&self) -> Option<&[usize]> {
        match &self.storage {
            Storage::Dense { .. } => None,
            Storage::Compressed { pos, .. }
            | Storage::Hashed { pos, .. }
            | Storage::Bytemap { pos, .. } => Some(pos),
        }
    }

    /// Whether child position `position` holds a node (an entry at the
    /// leaf) rather than an empty dense or bytemap slot.
    pub fn contains(&self, position: usize) -> bool {
        match &self.storage {
            Storage::Dense { present, .. } => present.get(position),
            Storage::Bytemap { flags, .. } => flags.get(position).copied().unwrap_or(false),
            Storage::Compressed { crd, .. } | Storage::Hashed { crd, .. } => position < crd.len(),
        }
    }

    /// The children of parent position `parent` (empty if there is no such
    /// parent).
    #[inline]
    pub fn fiber(&self, parent: usize) -> Fiber<'_> {
        let (lo, hi) = if parent >= self.fibers {
            (0, 0)
        } else {
            match &self.storage {
                Storage::Dense { stride, .. } => (parent * stride, (parent + 1) * stride),
                Storage::Compressed { pos, .. }
                | Storage::Hashed { pos, .. }
                | Storage::Bytemap { pos, .. } => (pos[parent], pos[parent + 1]),
            }
        };
        Fiber {
            level: self,
            parent,
            lo,
            hi,
        }
    }
}

/// The children of one parent position of a level: a cheap, copyable view.
#[derive(Clone, Copy, Debug)]
pub struct Fiber<'a> {
    level: &'a Level,
    parent: usize,
    /// The child positions (dense) or `crd` indices (others) of the fiber.
    lo: usize,
    hi: usize,
}

impl<'a> Fiber<'a> {
    /// Number of present children. O(1), except dense levels, which count
    /// presence bits (O(size / 64)).
    #[inline]
    pub fn len(&self) -> usize {
        match &self.level.storage {
            Storage::Dense { present, .. } => present.count(self.lo, self.hi),
            _ => self.hi - self.lo,
        }
    }

    /// Whether the fiber has no present children.
    pub fn is_empty(&self) -> bool {
        match &self.level.storage {
            Storage::Dense { present, .. } => present.next_set(self.lo, self.hi) == self.hi,
            _ => self.hi == self.lo,
        }
    }

    /// The child position of `coord`, if it is present: a direct slot for
    /// dense and bytemap, a hash probe for hashed, a binary search for
    /// compressed.
    #[inline]
    pub fn lookup(&self, coord: i64) -> Option<usize> {
        match &self.level.storage {
            Storage::Dense { stride, present } => {
                let slot = slot(self.lo, *stride, coord)?;
                present.get(slot).then_some(slot)
            }
            Storage::Bytemap { stride, flags, .. } => {
                let slot = slot(self.parent * stride, *stride, coord)?;
                flags.get(slot).copied().unwrap_or(false).then_some(slot)
            }
            Storage::Hashed { table, .. } => table.get(&(self.parent, coord)).copied(),
            Storage::Compressed { crd, .. } => {
                let coords = crd.get(self.lo..self.hi)?;
                let range = candidate_positions(coords, coord)?;
                let found = coords.get(range.clone())?.binary_search(&coord).ok()?;
                Some(self.lo + range.start + found)
            }
        }
    }

    /// For a dense-addressed level (dense or bytemap), the child position
    /// of coordinate 0 and the number of coordinates: coordinate `c <
    /// stride` has the position `base + c`, present or not (under a leaf,
    /// an absent slot's value is the fill). `None` for other formats.
    #[inline]
    pub fn slots(&self) -> Option<(usize, usize)> {
        match &self.level.storage {
            Storage::Dense { stride, .. } | Storage::Bytemap { stride, .. } => {
                Some((self.parent * stride, *stride))
            }
            Storage::Compressed { .. } | Storage::Hashed { .. } => None,
        }
    }

    /// The present coordinates in ascending order, for formats that store
    /// them (all but dense); a merge can walk this slice directly.
    #[inline]
    pub fn sorted_coords(&self) -> Option<&'a [i64]> {
        self.level.crd().and_then(|crd| crd.get(self.lo..self.hi))
    }

    /// The present coordinates in ascending order and the child position
    /// of the first, for the formats whose children sit at consecutive
    /// positions (compressed and hashed): the `i`-th child is at that
    /// position plus `i`. `None` for dense and bytemap levels.
    #[inline]
    pub fn consecutive(&self) -> Option<(&'a [i64], usize)> {
        match &self.level.storage {
            Storage::Compressed { crd, .. } | Storage::Hashed { crd, .. } => {
                Some((crd.get(self.lo..self.hi)?, self.lo))
            }
            Storage::Dense { .. } | Storage::Bytemap { .. } => None,
        }
    }

    /// A cursor at the first present child.
    #[inline]
    pub fn cursor(&self) -> Cursor<'a> {
        let at = match &self.level.storage {
            Storage::Dense { present, .. } => present.next_set(self.lo, self.hi),
            _ => self.lo,
        };
        Cursor { fiber: *self, at }
    }
}

/// The position of `coord` in the slot range starting at `base`, if the
/// coordinate is in `0..stride`.
fn slot(base: usize, stride: usize, coord: i64) -> Option<usize> {
    usize::try_from(coord)
        .ok()
        .filter(|&c| c < stride)
        .map(|c| base + c)
}

/// A position in a fiber's present children, in ascending coordinate order:
/// [`Cursor::current`], [`Cursor::advance`], and [`Cursor::seek`] for
/// leapfrog intersection. As an [`Iterator`] it yields `(coord, child)` and
/// advances.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    fiber: Fiber<'a>,
    /// The current child position (dense) or `crd` index (others); `hi`
    /// when exhausted.
    at: usize,
}

impl Cursor<'_> {
    /// The current `(coordinate, child position)`; `None` when exhausted.
    #[inline]
    pub fn current(&self) -> Option<(i64, usize)> {
        let fiber = &self.fiber;
        if self.at >= fiber.hi {
            return None;
        }
        match &fiber.level.storage {
            Storage::Dense { .. } => Some(((self.at - fiber.lo) as i64, self.at)),
            Storage::Compressed { crd, .. } | Storage::Hashed { crd, .. } => {
                crd.get(self.at).map(|&c| (c, self.at))
            }
            Storage::Bytemap { stride, crd, .. } => crd
                .get(self.at)
                .map(|&c| (c, fiber.parent * stride + c as usize)),
        }
    }

    /// The current coordinate; `None` when exhausted.
    #[inline]
    pub fn coord(&self) -> Option<i64> {
        self.current().map(|(c, _)| c)
    }

    /// Whether the cursor is past the last child.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.at >= self.fiber.hi
    }

    /// Moves to the next present child.
    #[inline]
    pub fn advance(&mut self) {
        let hi = self.fiber.hi;
        if self.at >= hi {
            return;
        }
        self.at = match &self.fiber.level.storage {
            Storage::Dense { present, .. } => present.next_set(self.at + 1, hi),
            _ => self.at + 1,
        };
    }

    /// Moves forward to the first present child whose coordinate is at least
    /// `coord` (never backwards): galloping search over `crd`, a bit scan for
    /// dense levels.
    pub fn seek(&mut self, coord: i64) {
        let (lo, hi) = (self.fiber.lo, self.fiber.hi);
        if self.at >= hi {
            return;
        }
        self.at = match &self.fiber.level.storage {
            Storage::Dense { present, .. } => {
                let target = match usize::try_from(coord) {
                    Ok(c) => lo.saturating_add(c).min(hi),
                    Err(_) => lo,
                };
                if target <= self.at {
                    return;
                }
                present.next_set(target, hi)
            }
            Storage::Compressed { crd, .. }
            | Storage::Hashed { crd, .. }
            | Storage::Bytemap { crd, .. } => gallop(crd, self.at, hi, coord),
        };
    }
}

impl Iterator for Cursor<'_> {
    type Item = (i64, usize);

    #[inline]
    fn next(&mut self) -> Option<(i64, usize)> {
        let current = self.current()?;
        self.advance();
        Some(current)
    }
}

/// The first index in `from..to` whose coordinate is at least `target`
/// (`to` if none), by exponential then binary search from `from`.
fn gallop(crd: &[i64], from: usize, to: usize, target: i64) -> usize {
    let Some(coords) = crd.get(from..to) else {
        return to;
    };
    match coords.first() {
        Some(&c) if c < target => {}
        _ => return from,
    }
    // coords[bound / 2] < target throughout.
    let mut bound = 1;
    while bound < coords.len() && coords[bound] < target {
        bound *= 2;
    }
    let start = bound / 2;
    let end = (bound + 1).min(coords.len());
    from + start + coords[start..end].partition_point(|&c| c < target)
}

/// A fixed-size bitset with a fast scan for the next set bit.
#[derive(Debug)]
struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    fn new(len: usize) -> Bitmap {
        Bitmap {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// A bitmap of `len` set bits.
    fn full(len: usize) -> Bitmap {
        let mut words = vec![u64::MAX; len.div_ceil(64)];
        if let Some(last) = words.last_mut().filter(|_| !len.is_multiple_of(64)) {
            *last = (1 << (len % 64)) - 1;
        }
        Bitmap { words, len }
    }

    fn set(&mut self, i: usize) {
        if let Some(word) = self.words.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }

    fn get(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|word| word & (1 << (i % 64)) != 0)
    }

    /// The first set bit in `from..end`, or `end`.
    fn next_set(&self, from: usize, end: usize) -> usize {
        if from >= end {
            return end;
        }
        let mut w = from / 64;
        let mut word = self.words.get(w).copied().unwrap_or(0) & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return (w * 64 + word.trailing_zeros() as usize).min(end);
            }
            w += 1;
            if w * 64 >= end {
                return end;
            }
            word = self.words.get(w).copied().unwrap_or(0);
        }
    }

    /// Number of set bits in `from..end`.
    fn count(&self, from: usize, end: usize) -> usize {
        if from >= end {
            return 0;
        }
        let (first, last) = (from / 64, (end - 1) / 64);
        let words = self.words.get(first..=last).unwrap_or(&[]);
        let mut total: usize = words.iter().map(|w| w.count_ones() as usize).sum();
        if let Some(w) = words.first() {
            total -= (w & !(u64::MAX << (from % 64))).count_ones() as usize;
        }
        if let Some(w) = words.last() {
            let keep = end - last * 64;
            if keep < 64 {
                total -= (w & (u64::MAX << keep)).count_ones() as usize;
            }
        }
        total
    }
}

/// A value column spread over `len` slots: entry `e` goes to `positions[e]`,
/// every other slot holds the fill value.
fn scatter(values: &ArrayRef, positions: &[usize], len: usize) -> Result<ArrayRef> {
    fn spread<T: Copy>(source: &[T], positions: &[usize], len: usize, fill: T) -> Vec<T> {
        let mut out = vec![fill; len];
        for (&p, &v) in positions.iter().zip(source) {
            if let Some(slot) = out.get_mut(p) {
                *slot = v;
            }
        }
        out
    }
    Ok(match values.data_type() {
        DataType::Int64 => Arc::new(Int64Array::from(spread(
            values.as_primitive::<Int64Type>().values(),
            positions,
            len,
            0,
        ))),
        DataType::Float64 => Arc::new(Float64Array::from(spread(
            values.as_primitive::<Float64Type>().values(),
            positions,
            len,
            0.0,
        ))),
        DataType::Decimal128(..) => Arc::new(crate::storage::tensor::hugeint_array(spread(
            values.as_primitive::<Decimal128Type>().values(),
            positions,
            len,
            0,
        ))),
        DataType::Boolean => {
            let bools: Vec<bool> = values.as_boolean().values().iter().collect();
            Arc::new(BooleanArray::from(spread(&bools, positions, len, false)))
        }
        other => {
            return Err(Error::Type(format!(
                "cannot index a value column of type {other}"
            )));
        }
    })
}

/// The positions of `coords` (strictly increasing) where `coord` can be:
/// the `i`-th coordinate is at least `i` past the first and at most
/// `len - 1 - i` before the last, so a fiber of nearly consecutive
/// coordinates (keys `1..n`) is searched over its gaps only. `None` when
/// `coord` is outside the fiber's coordinates.
fn candidate_positions(coords: &[i64], coord: i64) -> Option<std::ops::Range<usize>> {
    let (&first, &last) = (coords.first()?, coords.last()?);
    if coord < first || coord > last {
        return None;
    }
    let top = coords.len() - 1;
    let at_most = usize::try_from(coord.abs_diff(first)).map_or(top, |d| d.min(top));
    let at_least = usize::try_from(last.abs_diff(coord)).map_or(0, |d| top.saturating_sub(d));
    (at_least <= at_most).then_some(at_least..at_most + 1)
}
