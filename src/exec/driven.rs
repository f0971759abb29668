//! The sparse-driven path: a query that is a product over the stored
//! entries of one sparse input ([`Driven`]) runs as one pass over those
//! entries instead of its loop nest, and builds no fibertree index.
//!
//! Every other input is a dense array addressed by offset: the tensor's
//! own value column when its entries fill its dimensions (a factor matrix
//! or dense vector is stored row-major in its stored order, so the cell at
//! coordinates `c` is value `Σ c_d · stride_d`), otherwise its entries
//! scattered into a row-major array (absent cells 0) first, or, for an
//! input over the driver's leading variables with many cells per driver
//! entry ([`Driven::at_entries`]), read at those entries, a value per
//! entry found by one merge of the two sorted lists. Per driver
//! entry the product of the values at the entry's offsets is taken; with
//! a free variable (a rank `r` the driver does not read) the inputs' rows
//! along it are multiplied cell by cell in a scratch row, a tight loop
//! over contiguous values when `r` is an input's last dimension. When one
//! input alone reads `r`, as its last dimension, and is mostly zero, the
//! plan may list it instead ([`Driven::listed`]): its entries row by row
//! ([`SparseRows`]), an entry adding only the non-zero cells of its row
//! into the result. The
//! result is added into a dense array over the output's coordinates, or,
//! when the output has every variable of the driver, written as one entry
//! per driver entry (and coordinate of `r`); when the output's coordinates
//! are the driver's, in its order, only the values are written
//! ([`Outcome::AtDriver`]) and the stored result shares the driver's
//! coordinate columns. An output whose array would dwarf the driver is
//! written grouped: entries keyed by their output coordinates, sorted,
//! equal keys added ([`DrivenOutput::Grouped`]). A dense array's non-zero cells are listed as
//! coordinate columns and values ([`Outcome::Columns`]; the array itself
//! is the values when every cell is non-zero), or, when each row along
//! the last output variable is non-zero throughout or zero, kept as rows
//! ([`Outcome::Rows`]: the present rows' leading coordinates and their
//! cells, stored without coordinate columns). An output of a prefix of
//! the driver's variables and the free one (SpMM, MTTKRP, a network
//! layer over `h[o,n,m]`) is added into a row per distinct prefix the
//! driver has, not per cell of the prefix's variables ([`RowStarts`]);
//! a result written at the driver's entries with such an output is too,
//! a row per entry. The rows' cells are listed into the result's
//! columns in parallel pieces. An operand read along `r` by a dimension
//! that is not its last is copied with that dimension last
//! ([`FreeLast`]), so that its rows are contiguous. Sums along `r` are taken
//! in [`LANES`] partial sums that the compiler vectorizes.
//!
//! One factor of the product may be a sum or difference of operands
//! ([`Driven::sum`]): per entry (or per cell of the free variable's row)
//! their cells are added, an absent cell adding 0, and the sum (read
//! through a function such as `sigmoid` when the factor is one,
//! [`Driven::sum_map`]) multiplies the rest. The driver may be a keyed
//! table without value columns (its pattern), and a result whose output
//! holds a key of the driver is written one entry per driver entry, in
//! order when the key leads it.
//!
//! The loops visit only coordinates where every input has an entry. An
//! input read in place has one everywhere, so both paths multiply the
//! same values. A scattered input's absent cells are 0 here, which adds
//! nothing as long as every value is finite (`0 × ∞` is NaN); when a value
//! is not, the caller runs the loops. A `BIGINT` product (patterns and
//! integer inputs) is computed in doubles and stored as integers when
//! every sum it can take is a whole number below 2^52 ([`Largest`]);
//! when one might not be, the caller runs the loops, exact.
//!
//! The driver's entries are split, where their first coordinate changes,
//! into at most [`CHUNKS`] chunks (a fixed split) that run on the thread
//! pool: each adds into its own rows of the result when the result's
//! first variable is the driver's first, into a partial array of a small
//! result (the partials added up in chunk order), or writes its entries
//! (concatenated in chunk order). Every cell is summed in the same order
//! whatever the thread count, so results do not depend on it. The arrays
//! the path allocates are charged against the memory limit while they
//! live, but for the partial arrays (at most [`PARTIAL_CELLS`] cells).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::iter;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use hashbrown::HashMap;
use rayon::prelude::*;

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Float64Type, Int64Type};

use crate::error::{Error, Result};
use crate::ir::{Annotation, ScalarOp};
use crate::storage::fibertree::FiberTree;
use crate::storage::{Tensor, ValueType};

use super::ExecOptions;
use super::accumulate::{Entries, Finished};
use super::control::{Control, Held, pool};
use super::finish;
use super::plan::{Driven, DrivenOutput, PhysicalQuery, Source};

/// What a sparse-driven run produced.
pub(crate) enum Outcome {
    /// The result's entries, stored as the loops' are.
    Entries(Finished),
    /// One value per driver entry, in the driver's order (0 where an
    /// operand has no cell): the result has the driver's coordinates,
    /// which it can share.
    AtDriver(Vec<f64>),
    /// The non-zero entries in strictly increasing order, as a coordinate
    /// column per output variable and the values.
    Columns(Vec<Vec<i64>>, Vec<f64>),
    /// The non-zero entries as whole rows of the last output variable
    /// (every cell of each listed row non-zero, every other cell zero): a
    /// coordinate column per other output variable, a row each, and the
    /// rows' cells in order.
    Rows(Vec<Vec<i64>>, Vec<f64>),
}

/// Cells of work (driver entries times the free variable's cells) between
/// two progress reports and checks for cancellation.
const CHECK_WORK: usize = 1 << 16;

/// Driver entries whose scalars are taken together, one operand at a
/// time.
const BLOCK: usize = 256;

/// The most chunks the driver's entries are split into for the threads.
const CHUNKS: usize = 64;

/// The fewest driver entries of a chunk.
const CHUNK_ENTRIES: usize = 1 << 15;

/// The fewest rows of an output array listed as one piece.
const LIST_ROWS: usize = 1 << 12;

/// The most cells of the partial result arrays of all chunks together,
/// for a result that is not split by rows (and at most as many as the
/// driver has entries).
const PARTIAL_CELLS: usize = 1 << 22;

/// The non-zero cells of an operand's rows along the free variable (its
/// last stored dimension), row by row: row `r`'s are `starts[r]` up to
/// `starts[r + 1]` in `cols` (their positions in the row) and `values`.
struct SparseRows {
    /// The cells of a row.
    width: usize,
    starts: Vec<usize>,
    cols: Vec<usize>,
    values: Vec<f64>,
}

impl SparseRows {
    /// The cells of a row of `tensor` along its last dimension.
    fn width(tensor: &Tensor) -> usize {
        tensor
            .dims()
            .last()
            .and_then(|d| usize::try_from(d.size).ok())
            .unwrap_or(1)
            .max(1)
    }

    /// The entries of `tensor` among the first `rank` cells of each row
    /// along its last dimension, by row: rows numbered as in the row-major
    /// array of its stored dimensions (`strides`, `cells` in all), which
    /// the entries need not be sorted by.
    fn of(
        query: &PhysicalQuery,
        tensor: &Tensor,
        annotation: Annotation,
        (strides, cells): (&[usize], usize),
        rank: usize,
    ) -> Result<SparseRows> {
        let width = SparseRows::width(tensor);
        let values = values_as_floats(query, tensor, annotation)?;
        let coords: Vec<&[i64]> = (0..strides.len()).map(|d| tensor.coords(d)).collect();
        let address = Address::new(strides);
        let last = strides.len().saturating_sub(1);
        let rows = cells / width;
        // Where each entry goes: its row, or none past `rank` or when 0.
        let place = |e: usize| -> Option<(usize, usize)> {
            let col = usize::try_from(coords[last][e]).ok()?;
            (col < rank && values[e] != 0.0).then(|| (address.at(&coords, e) / width, col))
        };
        let mut starts = vec![0usize; rows + 1];
        for e in 0..values.len() {
            if let Some((row, _)) = place(e) {
                let count = starts
                    .get_mut(row + 1)
                    .ok_or_else(|| internal(query, "has an input entry outside its dimensions"))?;
                *count += 1;
            }
        }
        for r in 0..rows {
            starts[r + 1] += starts[r];
        }
        let nnz = starts[rows];
        let (mut cols, mut listed) = (vec![0usize; nnz], vec![0.0; nnz]);
        let mut next = starts.clone();
        for (e, &value) in values.iter().enumerate() {
            if let Some((row, col)) = place(e) {
                cols[next[row]] = col;
                listed[next[row]] = value;
                next[row] += 1;
            }
        }
        Ok(SparseRows {
            width,
            starts,
            cols,
            values: listed,
        })
    }

    /// The bytes the lists of `tensor`'s entries take, over `cells`.
    fn bytes(tensor: &Tensor, cells: usize) -> u64 {
        let rows = cells / SparseRows::width(tensor) + 1;
        (tensor.nnz().saturating_mul(16)).saturating_add(rows.saturating_mul(8)) as u64
    }

    /// The positions and values of the non-zero cells of the row that
    /// starts at offset `at` of the array.
    #[inline(always)]
    fn row(&self, at: usize) -> (&[usize], &[f64]) {
        let r = at / self.width;
        match (self.starts.get(r), self.starts.get(r + 1)) {
            (Some(&from), Some(&to)) => (&self.cols[from..to], &self.values[from..to]),
            _ => (&[], &[]),
        }
    }
}

/// An input other than the driver, as a dense array.
struct Operand<'a> {
    /// Row-major over the tensor's stored dimensions.
    values: Cow<'a, [f64]>,
    /// Where a driver entry's cell lies in `values`.
    address: Address,
    /// The driver dimensions whose coordinates may lie outside the
    /// operand's size there, with that size: an entry beyond it meets
    /// an absent cell.
    bounded: Vec<(usize, i64)>,
    /// The stride of the free variable, when the operand reads it.
    free: Option<usize>,
    /// Whether the operand is the row-local input of a fused pass
    /// ([`Driven::local`]): its values are the pass's, not `values`.
    local: bool,
    /// For a term of the sum factor ([`Driven::sum`]): 1 or -1, its sign.
    /// `None` for a factor of the product.
    sign: Option<f64>,
    /// The function the operand is read through ([`Driven::maps`]).
    map: Option<ScalarOp>,
    /// Its rows along the free variable by their non-zero cells, instead
    /// of `values` ([`Driven::listed`]).
    sparse: Option<SparseRows>,
}

impl Operand<'_> {
    /// The offset of a driver entry's cell, or `None` when a coordinate
    /// lies outside the operand.
    #[inline(always)]
    fn offset(&self, coords: &[&[i64]], e: usize) -> Option<usize> {
        if self.bounded.iter().any(|&(d, size)| coords[d][e] >= size) {
            return None;
        }
        Some(self.address.at(coords, e))
    }
}

/// The offset of a driver entry's cell in a row-major array: the sum of
/// its coordinates along some driver dimensions times their strides; or,
/// for an array of one cell per driver entry, the entry itself.
#[derive(Clone, Debug, Default)]
struct Address {
    /// `(driver dimension, stride)` for every dimension that moves the
    /// offset.
    terms: Vec<(usize, usize)>,
    /// Whether the offset is the entry (the array holds a cell per driver
    /// entry; `terms` is empty).
    by_entry: bool,
}

impl Address {
    /// The address with `strides[d]` for every driver dimension `d`
    /// (0 where it does not move the offset).
    fn new(strides: &[usize]) -> Address {
        let terms = strides
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s > 0)
            .map(|(d, &s)| (d, s))
            .collect();
        Address {
            terms,
            by_entry: false,
        }
    }

    /// The address of an array with a cell per driver entry.
    fn by_entry() -> Address {
        Address {
            terms: Vec::new(),
            by_entry: true,
        }
    }

    /// `visit(b, offset)` for the offset of every driver entry
    /// `block.start + b` in `block`: one loop over the coordinate columns
    /// the address reads, without looking them up per entry.
    #[inline(always)]
    fn each_in(&self, coords: &[&[i64]], block: Range<usize>, mut visit: impl FnMut(usize, usize)) {
        if self.by_entry {
            block.enumerate().for_each(|(b, e)| visit(b, e));
            return;
        }
        match self.terms.as_slice() {
            [] => (0..block.len()).for_each(|b| visit(b, 0)),
            &[(d, s)] => {
                for (b, &c) in coords[d][block].iter().enumerate() {
                    visit(b, c as usize * s);
                }
            }
            &[(d, s), (f, t)] => {
                let pairs = coords[d][block.clone()].iter().zip(&coords[f][block]);
                for (b, (&c, &g)) in pairs.enumerate() {
                    visit(b, c as usize * s + g as usize * t);
                }
            }
            _ => block
                .enumerate()
                .for_each(|(b, e)| visit(b, self.at(coords, e))),
        }
    }

    /// The offset split for a walk along the rows of a driver of at most
    /// two dimensions: the stride of the row's coordinate (0 if it does
    /// not move the offset), and the coordinates and stride of the second
    /// dimension when it does.
    fn along_rows<'c>(&self, coords: &[&'c [i64]]) -> Option<AlongRows<'c>> {
        if self.by_entry {
            return None;
        }
        let mut row = 0;
        let mut moving = None;
        for &(d, stride) in &self.terms {
            match d {
                0 => row = stride,
                _ => moving = Some((*coords.get(d)?, stride)),
            }
        }
        Some((row, moving))
    }

    /// Whether the offset moves with driver dimension `d`.
    fn reads(&self, d: usize) -> bool {
        self.terms.iter().any(|&(e, _)| e == d)
    }

    /// The offset of driver entry `e`; matrices and vectors, the common
    /// cases, without a loop.
    #[inline(always)]
    fn at(&self, coords: &[&[i64]], e: usize) -> usize {
        let coord = |d: usize| coords[d][e] as usize;
        match self.terms.as_slice() {
            [] if self.by_entry => e,
            [] => 0,
            [(d, s)] => coord(*d) * s,
            [(d, s), (f, t)] => coord(*d) * s + coord(*f) * t,
            terms => terms.iter().map(|&(d, s)| coord(d) * s).sum(),
        }
    }
}

/// Row-major strides of a tensor's stored dimensions; `None` when the
/// cells overflow `usize`.
pub(super) fn strides(tensor: &Tensor) -> Option<(Vec<usize>, usize)> {
    let mut strides = vec![0; tensor.dims().len()];
    let mut cells = 1usize;
    for (d, dim) in tensor.dims().iter().enumerate().rev() {
        strides[d] = cells;
        cells = cells.checked_mul(usize::try_from(dim.size).ok()?)?;
    }
    Some((strides, cells))
}

/// The value column that `annotation` reads of `tensor`.
fn value_column<'t>(
    query: &PhysicalQuery,
    tensor: &'t Tensor,
    annotation: Annotation,
) -> Result<&'t arrow::array::ArrayRef> {
    let Annotation::Column(column) = annotation else {
        return Err(internal(query, "reads the rows of a bag"));
    };
    tensor
        .annotation_columns()
        .get(column)
        .ok_or_else(|| internal(query, "reads a value column it does not have"))
}

/// Whether `annotation` reads a value column of `tensor` that is neither
/// `DOUBLE` nor `BIGINT`: an earlier step's count that came out `HUGEINT`
/// (past 2^63) though the plan expected a `BIGINT`. The pass does not
/// read those; the loops compute the query exactly instead.
pub(super) fn huge_values(tensor: &Tensor, annotation: Annotation) -> bool {
    let Annotation::Column(column) = annotation else {
        return false;
    };
    tensor
        .annotation_columns()
        .get(column)
        .is_some_and(|a| !matches!(a.data_type(), DataType::Float64 | DataType::Int64))
}

/// The float values of input `k`'s annotation.
fn float_values<'t>(
    query: &PhysicalQuery,
    tensor: &'t Tensor,
    annotation: Annotation,
) -> Result<&'t [f64]> {
    value_column(query, tensor, annotation)?
        .as_primitive_opt::<Float64Type>()
        .map(|a| a.values().as_ref())
        .ok_or_else(|| internal(query, "reads a value column that is not DOUBLE"))
}

/// The values of `tensor` as floats: its DOUBLE column, its BIGINT
/// column converted (a count the plan lists, [`Driven::listed`], or an
/// operand of a `BIGINT` product), or 1 per entry for its pattern (a
/// factor of a `BIGINT` product; the plan takes only tables that store
/// each row once).
pub(super) fn values_as_floats<'t>(
    query: &PhysicalQuery,
    tensor: &'t Tensor,
    annotation: Annotation,
) -> Result<Cow<'t, [f64]>> {
    if annotation == Annotation::Multiplicity && query.ty == ValueType::Int64 {
        return Ok(Cow::Owned(vec![1.0; tensor.nnz()]));
    }
    let array = value_column(query, tensor, annotation)?;
    if let Some(floats) = array.as_primitive_opt::<Float64Type>() {
        return Ok(Cow::Borrowed(floats.values().as_ref()));
    }
    let integers = array.as_primitive_opt::<Int64Type>().ok_or_else(|| {
        internal(
            query,
            "lists a value column that is neither DOUBLE nor BIGINT",
        )
    })?;
    Ok(Cow::Owned(
        integers.values().iter().map(|&v| v as f64).collect(),
    ))
}

/// An input of a sparse-driven query: a tensor with the annotation read,
/// or, for the row-local input of a fused pass ([`Driven::local`]), none.
pub(crate) type Input<'a> = Option<(&'a Tensor, Annotation)>;

/// Runs `query` over the entries of its driver; `inputs` are the tensors
/// its inputs read with their annotations, in input order. Returns the
/// result, through the query's finish (the caller stores it as the
/// loops' would be), or `None` when a
/// scattered input meets a value that is not finite (the caller runs the
/// loops).
pub(crate) fn run(
    query: &PhysicalQuery,
    driven: &Driven,
    inputs: &[(&Tensor, Annotation)],
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Outcome>> {
    if inputs
        .iter()
        .any(|&(tensor, annotation)| huge_values(tensor, annotation))
    {
        return Ok(None);
    }
    let inputs: Vec<Input<'_>> = inputs.iter().copied().map(Some).collect();
    let driver = Driver::of(query, driven, &inputs)?;
    let held = Held::new(control);
    let Some(prepared) = prepare(
        query,
        driven,
        &inputs,
        &driver,
        Keeps::Own,
        (&held, control),
    )?
    else {
        return Ok(None);
    };
    let pass = prepared.pass(&driver, None, options.threads, control);
    // Each way applies the query's finish: to the array's cells before it
    // is listed, to the entries as they are written, to the grouped sums.
    if let Some(starts) = &prepared.row_starts {
        return pass.add_into_rows(&pass.array_out(), starts).map(Some);
    }
    match driven.output {
        DrivenOutput::Array if driven.sum.is_empty() => pass.add_into_array(prepared.out_cells),
        DrivenOutput::Array => Err(internal(query, "adds a sum of operands into an array")),
        DrivenOutput::Entries => pass.write_entries(),
        DrivenOutput::Grouped => pass.group(),
    }
    .map(Some)
}

/// One member of a fused pass: a sparse-driven query adding into a dense
/// array, its inputs (the row-local one `None`), and whether its own
/// result is row-local (read by a later member, never stored).
pub(crate) struct Member<'a> {
    pub query: &'a PhysicalQuery,
    pub inputs: Vec<Input<'a>>,
    pub row_local: bool,
}

/// Runs the members of a fused pass over the entries of their common
/// driver, piece by piece (see the `fuse` phase): every member goes over
/// a piece before the next piece, a row-local result's values for the
/// piece's rows computed just before the member that reads them. Returns
/// each member's result (`None` for a row-local one), or `None` when some
/// member cannot run this way (an operand that is not finite beside a
/// scattered or row-local one: the caller runs the members one by one).
/// Every cell is summed in the order the members' own passes would sum
/// it, so the results are those of the unfused plan.
pub(crate) fn run_fused(
    members: &[Member<'_>],
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Vec<Option<Outcome>>>> {
    let huge = |member: &Member<'_>| {
        member
            .inputs
            .iter()
            .flatten()
            .any(|&(tensor, annotation)| huge_values(tensor, annotation))
    };
    if members.iter().any(huge) {
        return Ok(None);
    }
    let held = Held::new(control);
    let mut drivers = Vec::with_capacity(members.len());
    for member in members {
        let driven = driven_of(member.query)?;
        if driven.output != DrivenOutput::Array {
            return Err(internal(
                member.query,
                "is fused but does not add into an array",
            ));
        }
        drivers.push(Driver::of(member.query, driven, &member.inputs)?);
    }
    let mut prepared = Vec::with_capacity(members.len());
    for (member, driver) in members.iter().zip(&drivers) {
        let driven = driven_of(member.query)?;
        let keeps = match member.row_local {
            true => Keeps::Nothing,
            false => Keeps::Array,
        };
        match prepare(
            member.query,
            driven,
            &member.inputs,
            driver,
            keeps,
            (&held, control),
        )? {
            Some(p) => prepared.push(p),
            None => return Ok(None),
        }
    }
    // Where each member's row-local input comes from: a producer member.
    let mut producers = Vec::with_capacity(members.len());
    for member in members {
        let driven = driven_of(member.query)?;
        let producer = match driven.local {
            None => None,
            Some(k) => {
                let name = match member.query.inputs.get(k).map(|a| &a.source) {
                    Some(Source::Result(name)) => name,
                    _ => return Err(internal(member.query, "reads a row-local table")),
                };
                let found = members
                    .iter()
                    .position(|m| m.row_local && m.query.name == *name);
                Some(
                    found
                        .ok_or_else(|| internal(member.query, "reads a result not in its pass"))?,
                )
            }
        };
        producers.push(producer);
    }
    let fused = Fused {
        members,
        drivers: &drivers,
        prepared: &prepared,
        producers: &producers,
        threads: options.threads,
        control,
    };
    fused.run().map(Some)
}

/// The driven plan of a query the plan runs sparse-driven.
fn driven_of(query: &PhysicalQuery) -> Result<&Driven> {
    query
        .driven
        .as_ref()
        .ok_or_else(|| internal(query, "is not sparse-driven"))
}

/// The driver of a query: its tensor's coordinates and values, and the
/// query's variable of each of its dimensions.
struct Driver<'a> {
    /// The driver's coordinates, one column per stored dimension.
    coords: Vec<&'a [i64]>,
    /// Its values; `None` for its pattern (1 at every entry).
    x: Option<&'a [f64]>,
    /// Its entries.
    entries: usize,
    /// The query's variable of each driver dimension.
    vars: Vec<usize>,
    /// The size of each driver dimension.
    sizes: Vec<u64>,
    /// The tensor and the annotation read.
    input: (&'a Tensor, Annotation),
    /// The index whose pointers give where each row starts
    /// ([`Driven::rows`]), when it is still built.
    rows: Option<Arc<FiberTree>>,
}

impl<'a> Driver<'a> {
    fn of(query: &PhysicalQuery, driven: &Driven, inputs: &[Input<'a>]) -> Result<Driver<'a>> {
        let Some(Some((tensor, annotation))) = inputs.get(driven.driver).copied() else {
            return Err(internal(query, "has no driver"));
        };
        let vars = vars_of(query, driven.driver)?;
        Ok(Driver {
            coords: (0..vars.len()).map(|d| tensor.coords(d)).collect(),
            // A table's pattern drives with the value 1 at every entry.
            x: match annotation {
                Annotation::Multiplicity => None,
                Annotation::Column(_) => Some(float_values(query, tensor, annotation)?),
            },
            entries: tensor.nnz(),
            vars,
            sizes: tensor.dims().iter().map(|d| d.size).collect(),
            input: (tensor, annotation),
            rows: driven
                .rows
                .as_ref()
                .and_then(|spec| tensor.built_index(spec)),
        })
    }

    /// How the runs of one first coordinate among the entries are found:
    /// from the row index's pointers when there is one.
    fn row_runs(&self) -> Option<RowRuns<'_>> {
        let Some(tree) = &self.rows else {
            return self.coords.first().map(|&rows| RowRuns::Scan(rows));
        };
        match tree.levels() {
            [top, leaf] if tree.nnz() == self.entries => Some(RowRuns::Pointers {
                rows: top.crd().map(|crd| &crd[..]),
                starts: leaf.pos()?,
            }),
            _ => None,
        }
    }
}

/// Where the runs of one first coordinate (rows) of a driver's entries
/// start.
enum RowRuns<'a> {
    /// Found by reading the first coordinate of every entry.
    Scan(&'a [i64]),
    /// Given by a row index ([`Driven::rows`]): row `p` holds the entries
    /// `starts[p]..starts[p + 1]`, and its coordinate is `rows[p]`, or `p`
    /// when the index's first level is dense.
    Pointers {
        rows: Option<&'a [i64]>,
        starts: &'a [usize],
    },
}

impl RowRuns<'_> {
    /// The rows among `entries`, which start and end at row boundaries,
    /// in order: each row's coordinate and its entries.
    fn rows(&self, entries: Range<usize>) -> Rows<'_> {
        match *self {
            RowRuns::Scan(rows) => Rows::Scan {
                rows,
                at: entries.start,
                end: entries.end,
            },
            RowRuns::Pointers { rows, starts } => Rows::Pointers {
                rows,
                starts,
                p: starts.partition_point(|&s| s < entries.start),
                end: entries.end,
            },
        }
    }
}

/// The walk of [`RowRuns::rows`]: where the next row starts, and where the
/// entries end.
enum Rows<'a> {
    Scan {
        rows: &'a [i64],
        at: usize,
        end: usize,
    },
    Pointers {
        rows: Option<&'a [i64]>,
        starts: &'a [usize],
        p: usize,
        end: usize,
    },
}

impl Iterator for Rows<'_> {
    type Item = (usize, Range<usize>);

    #[inline(always)]
    fn next(&mut self) -> Option<(usize, Range<usize>)> {
        match self {
            Rows::Scan { rows, at, end } => {
                let start = *at;
                let row = *rows.get(start).filter(|_| start < *end)?;
                *at = rows[start..*end]
                    .iter()
                    .position(|&r| r != row)
                    .map_or(*end, |len| start + len);
                Some((row as usize, start..*at))
            }
            Rows::Pointers {
                rows,
                starts,
                p,
                end,
            } => loop {
                let (start, next) = (*starts.get(*p)?, *starts.get(*p + 1)?);
                if start >= *end {
                    return None;
                }
                let row = rows.map_or(*p, |rows| rows[*p] as usize);
                *p += 1;
                // Rows without entries (a dense first level's) are skipped.
                if next > start {
                    return Some((row, start..next.min(*end)));
                }
            },
        }
    }
}

/// The variable of every dimension of input `k`.
pub(super) fn vars_of(query: &PhysicalQuery, k: usize) -> Result<Vec<usize>> {
    query
        .inputs
        .get(k)
        .and_then(|a| a.distinct_vars())
        .ok_or_else(|| internal(query, "reads a constant or a repeated variable"))
}

/// A query's operands as arrays, ready for passes over its driver.
struct Prepared<'q, 'a> {
    query: &'q PhysicalQuery,
    driven: &'q Driven,
    /// The operands, in the order of [`Driven::dense`].
    operands: Vec<Operand<'a>>,
    /// The cells of the free variable that can be non-zero (1 without one).
    rank: usize,
    /// The cells of the output array ([`DrivenOutput::Array`]).
    out_cells: usize,
    /// Where the rows of the output start among the driver's entries,
    /// when the pass adds into a row per prefix of them.
    row_starts: Option<RowStarts>,
}

/// The most cells of an operand that [`FreeLast`] moves.
const FREE_LAST_CELLS: usize = 1 << 20;

/// An operand read along the free variable by a dimension that is not
/// its last (`W[k,m]` in `SUM(m) x[o,n,m] * W[k,m]`): its cells moved
/// so that that dimension is the last, and each entry's row along the
/// free variable is contiguous cells, which the pass multiplies in a
/// loop the compiler vectorizes rather than one cell a stride apart at a
/// time.
struct FreeLast {
    /// The size of each of the operand's dimensions.
    sizes: Vec<usize>,
    /// Its row-major strides.
    strides: Vec<usize>,
    /// The dimension the free variable reads.
    free: usize,
    /// The driver dimension each other dimension reads, with it.
    driver_dims: Vec<(usize, usize)>,
    /// The driver's dimensions.
    driver_len: usize,
}

impl FreeLast {
    fn apply(self, operand: &mut Operand<'_>) {
        let FreeLast {
            sizes,
            strides,
            free,
            driver_dims,
            driver_len,
        } = self;
        let order: Vec<usize> = (0..sizes.len())
            .filter(|&d| d != free)
            .chain([free])
            .collect();
        let mut moved = vec![0; sizes.len()];
        let mut cells = 1;
        for &d in order.iter().rev() {
            moved[d] = cells;
            cells *= sizes[d];
        }
        let mut values = vec![0.0; cells];
        for (at, &value) in operand.values.iter().enumerate() {
            if value == 0.0 {
                continue;
            }
            let (mut rest, mut to) = (at, 0);
            for (&stride, &new) in strides.iter().zip(&moved) {
                to += rest / stride * new;
                rest %= stride;
            }
            values[to] = value;
        }
        let mut by_driver = vec![0; driver_len];
        for (p, d) in driver_dims {
            by_driver[p] = moved[d];
        }
        operand.values = Cow::Owned(values);
        operand.address = Address::new(&by_driver);
        operand.free = Some(1);
    }
}

/// What a pass keeps of its output array, which [`prepare`] charges.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keeps {
    /// Nothing: a fused pass's row-local result.
    Nothing,
    /// The whole array: a fused pass's stored member.
    Array,
    /// The pass's own result: a row per distinct prefix of the driver's
    /// entries where it can add into those ([`RowStarts`]), else the
    /// whole array.
    Own,
}

/// The rows of an output that is a prefix of the driver's variables and
/// then the free variable ([`Driven::row_prefix`]): a row of the output
/// array per distinct prefix among the driver's entries (SpMM's result
/// rows, a row of `X` each), so that the rows the driver lacks are
/// neither cleared nor scanned.
struct RowStarts {
    /// The first entry of each row.
    starts: Vec<usize>,
    /// The prefix of each row: a column per leading output variable.
    keys: Vec<Vec<i64>>,
    /// The cells of a row: the free variable's size.
    width: usize,
    /// The cells of all rows.
    cells: usize,
}

impl RowStarts {
    fn of(query: &PhysicalQuery, driven: &Driven, driver: &Driver<'_>) -> Option<RowStarts> {
        let prefix = driven.row_prefix?;
        let width = usize::try_from(query.vars[driven.free?].size).ok()?;
        let leading = &driver.coords[..prefix];
        let starts: Vec<usize> = (0..driver.entries)
            .filter(|&e| e == 0 || leading.iter().any(|c| c[e] != c[e - 1]))
            .collect();
        let keys = leading
            .iter()
            .map(|c| starts.iter().map(|&e| c[e]).collect())
            .collect();
        let cells = starts.len().checked_mul(width)?;
        Some(RowStarts {
            starts,
            keys,
            width,
            cells,
        })
    }
}

/// A bound on every sum a pass takes, for a `BIGINT` product computed in
/// doubles: the driver's entries times the largest absolute value of each
/// factor, the terms of the sum factor added into one.
struct Largest {
    product: f64,
    terms: Option<f64>,
}

impl Largest {
    /// The bound before any operand: the driver's entries times its
    /// largest value (1 for its pattern).
    fn of_driver(driver: &Driver<'_>) -> Largest {
        let own = driver.x.map_or(1.0, largest_magnitude);
        Largest {
            product: driver.entries as f64 * own,
            terms: None,
        }
    }

    /// Takes an operand with these values in: a factor, or a `term` of
    /// the sum factor.
    fn add(&mut self, values: &[f64], term: bool) {
        let own = largest_magnitude(values);
        match term {
            true => *self.terms.get_or_insert(0.0) += own,
            false => self.product *= own,
        }
    }

    /// Whether every sum stays a whole number that doubles hold exactly
    /// (below 2^52, clear of the rounding of the bound itself).
    fn exact(&self) -> bool {
        self.product * self.terms.unwrap_or(1.0) < (1u64 << 52) as f64
    }
}

/// The largest absolute value among `values` (0 for none).
fn largest_magnitude(values: &[f64]) -> f64 {
    values.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
}

/// Reads `query`'s operands as arrays (in place, or scattered) and charges
/// them, and its output array when `stores`, to `held`; `None` when a
/// size overflows or a scattered (or row-local) operand sits beside a
/// value that is not finite.
fn prepare<'q, 'a>(
    query: &'q PhysicalQuery,
    driven: &'q Driven,
    inputs: &[Input<'a>],
    driver: &Driver<'a>,
    keeps: Keeps,
    (held, control): (&Held<'_>, &Control<'_>),
) -> Result<Option<Prepared<'q, 'a>>> {
    // The free variable's cells that can be non-zero: the fewest any
    // input reading it has (1 without one).
    let mut rank = driven.free.map_or(1, |v| query.vars[v].size);
    let mut term_sizes = u64::MAX;
    // Scattered arrays, integer values read as floats and the output
    // array, charged together.
    let mut cells = 0usize;
    let mut operands = Vec::with_capacity(driven.dense.len());
    let mut scattered = Vec::new();
    let mut at_entries = Vec::new();
    // The operand of the output's rows along the free variable that the
    // plan lists by its non-zero cells instead of scattering it
    // ([`Driven::listed`]).
    let mut listed = Vec::new();
    let mut listed_bytes = 0u64;
    let rows_listed = driven.listed;
    // The operands whose rows along the free variable are strided, moved
    // so that they are contiguous ([`FreeLast`]).
    let mut free_last = Vec::new();
    // A `BIGINT` product is computed in doubles when that is exact: the
    // largest sum it can take, the driver's entries times each factor's
    // largest absolute value (the sum factor's terms' added), is below
    // 2^52 ([`Largest`]).
    let integer = query.ty == ValueType::Int64;
    let mut largest = Largest::of_driver(driver);
    // The plan lists rows only for float products; an integer one whose
    // listed values the bound would not see runs its loops.
    if integer && rows_listed.is_some() {
        return Ok(None);
    }
    for &k in &driven.dense {
        let vars = vars_of(query, k)?;
        let Some((tensor, annotation)) = inputs.get(k).copied().flatten() else {
            // The row-local input: a vector over the driver's first
            // dimension, read at the entry's first coordinate. Its values
            // are not known before the pass: an integer product runs its
            // loops.
            if integer {
                return Ok(None);
            }
            if driven.local != Some(k) || vars.first() != driver.vars.first() || vars.len() != 1 {
                return Err(internal(query, "misses an input"));
            }
            operands.push(Operand {
                values: Cow::Borrowed(&[]),
                address: Address::new(&[1]),
                bounded: Vec::new(),
                free: None,
                local: true,
                sign: None,
                map: None,
                sparse: None,
            });
            continue;
        };
        let Some((own_strides, own_cells)) = strides(tensor) else {
            return Ok(None);
        };
        // A listed operand's values are read when it is listed.
        let values = match rows_listed == Some(k) {
            true => Cow::Borrowed(&[][..]),
            false => values_as_floats(query, tensor, annotation)?,
        };
        if let Cow::Owned(converted) = &values {
            cells = cells.saturating_add(converted.len());
        }
        if integer {
            largest.add(&values, driven.sum.iter().any(|&(j, _)| j == k));
        }
        let mut operand = Operand {
            values,
            address: Address::default(),
            bounded: Vec::new(),
            free: None,
            local: false,
            sign: driven
                .sum
                .iter()
                .find(|&&(j, _)| j == k)
                .map(|&(_, negated)| if negated { -1.0 } else { 1.0 }),
            map: driven
                .maps
                .iter()
                .find(|&&(j, _)| j == k)
                .map(|&(_, op)| op),
            sparse: None,
        };
        let mut by_driver = vec![0; driver.vars.len()];
        let mut free_dim = None;
        let mut driver_dims = Vec::new();
        for (d, &v) in vars.iter().enumerate() {
            let size = tensor.dims()[d].size;
            match driver.vars.iter().position(|&w| w == v) {
                Some(p) => {
                    by_driver[p] = own_strides[d];
                    driver_dims.push((p, d));
                    if size < driver.sizes[p] {
                        operand.bounded.push((p, size as i64));
                    }
                }
                None if operand.sign.is_some() => {
                    // A term of the sum factor adds 0 past its size, where
                    // the others may not: it must cover the product's row.
                    operand.free = Some(own_strides[d]);
                    term_sizes = term_sizes.min(size);
                }
                None => {
                    operand.free = Some(own_strides[d]);
                    free_dim = Some(d);
                    rank = rank.min(size);
                }
            }
        }
        operand.address = Address::new(&by_driver);
        let plain = rows_listed != Some(k) && !driven.at_entries.contains(&k);
        if let Some(free) = free_dim.filter(|_| plain && operand.free != Some(1))
            && operand.map.is_none()
            && own_cells <= FREE_LAST_CELLS
        {
            cells = cells.saturating_add(own_cells);
            free_last.push((
                operands.len(),
                FreeLast {
                    sizes: tensor.dims().iter().map(|d| d.size as usize).collect(),
                    strides: own_strides.clone(),
                    free,
                    driver_dims,
                    driver_len: by_driver.len(),
                },
            ));
        }
        if rows_listed == Some(k) {
            // Listed, whatever its fill (chosen by the plan).
            if operand.free != Some(1) {
                return Err(internal(
                    query,
                    "lists an input not along its last dimension",
                ));
            }
            listed_bytes = listed_bytes.saturating_add(SparseRows::bytes(tensor, own_cells));
            listed.push((operands.len(), tensor, annotation, own_strides, own_cells));
        } else if driven.at_entries.contains(&k) && !tensor.is_full() {
            // Over the driver's leading variables, with many cells per
            // driver entry (chosen by the plan).
            if driver.vars.get(..vars.len()) != Some(&vars[..]) {
                return Err(internal(
                    query,
                    "reads at the driver's entries a tensor over other variables",
                ));
            }
            operand.address = Address::by_entry();
            operand.bounded.clear();
            // The driver's own values, read again at every variable: its
            // value column is already a value per entry.
            let itself = std::ptr::eq(tensor, driver.input.0) && vars.len() == driver.vars.len();
            if !itself {
                cells = cells.saturating_add(driver.entries);
                at_entries.push((operands.len(), tensor, vars.len()));
            }
        } else if !tensor.is_full() {
            cells = cells.saturating_add(own_cells);
            scattered.push((operands.len(), tensor, own_strides, own_cells));
        }
        operands.push(operand);
    }
    if term_sizes < rank || (integer && !largest.exact()) {
        return Ok(None);
    }
    let Ok(rank) = usize::try_from(rank) else {
        return Ok(None);
    };
    let out_cells = match driven.output {
        DrivenOutput::Array => query.output.iter().try_fold(1usize, |c, &v| {
            c.checked_mul(usize::try_from(query.vars[v].size).ok()?)
        }),
        DrivenOutput::Entries | DrivenOutput::Grouped => Some(0),
    };
    let Some(out_cells) = out_cells else {
        return Ok(None);
    };
    let row_starts = match keeps {
        Keeps::Own => RowStarts::of(query, driven, driver),
        Keeps::Nothing | Keeps::Array => None,
    };
    cells = cells.saturating_add(match (keeps, &row_starts) {
        (Keeps::Nothing, _) => 0,
        (_, Some(starts)) => starts.cells,
        (_, None) => out_cells,
    });
    cells = cells.saturating_add(rank);
    if !scattered.is_empty() || !at_entries.is_empty() || driven.local.is_some() {
        let operands = driven
            .dense
            .iter()
            .filter_map(|&k| inputs.get(k).copied().flatten());
        if !operands.chain([driver.input]).all(|(t, a)| finite(t, a)) {
            return Ok(None);
        }
    }
    let bytes = (cells as u64)
        .saturating_mul(8)
        .saturating_add(listed_bytes);
    held.reserve(bytes)?;
    for (n, tensor, own_strides, own_cells) in scattered {
        let array = scatter(query, tensor, &operands[n].values, &own_strides, own_cells)?;
        operands[n].values = Cow::Owned(array);
        control.check()?;
    }
    for (n, layout) in free_last {
        layout.apply(&mut operands[n]);
        control.check()?;
    }
    for (n, tensor, annotation, own_strides, own_cells) in listed {
        let strides = (&own_strides[..], own_cells);
        let rows = SparseRows::of(query, tensor, annotation, strides, rank)?;
        operands[n].sparse = Some(rows);
        control.check()?;
    }
    for (n, tensor, leading) in at_entries {
        let prefix = &driver.coords[..leading];
        let values = at_driver_entries(tensor, &operands[n].values, prefix)?;
        operands[n].values = Cow::Owned(values);
        control.check()?;
    }
    Ok(Some(Prepared {
        query,
        driven,
        operands,
        rank,
        out_cells,
        row_starts,
    }))
}

impl<'q, 'a> Prepared<'q, 'a> {
    /// A pass of the query over the driver's entries, the row-local input
    /// read from `local` (the values of the rows from a first one on).
    fn pass<'p>(
        &'p self,
        driver: &'p Driver<'a>,
        local: Option<(&'p [f64], usize)>,
        threads: usize,
        control: &'p Control<'p>,
    ) -> Pass<'p, 'a> {
        let (terms, factors): (Vec<_>, Vec<_>) =
            self.operands.iter().partition(|o| o.sign.is_some());
        let (mapped, factors): (Vec<_>, Vec<_>) =
            factors.into_iter().partition(|o| o.map.is_some());
        let (rows, scalars) = factors.into_iter().partition(|o| o.free.is_some());
        Pass {
            query: self.query,
            driven: self.driven,
            coords: &driver.coords,
            x: driver.x,
            entries: driver.entries,
            driver_vars: &driver.vars,
            key: driver.input.0.key_prefix(),
            scalars,
            rows,
            terms,
            mapped,
            local,
            rank: self.rank,
            threads,
            control,
        }
    }
}

/// Which float value columns of a tensor hold only finite values, found
/// once per column and kept with the tensor ([`Tensor::derived`]).
#[derive(Default)]
struct FiniteColumns(Mutex<HashMap<usize, bool>>);

/// Whether every value the annotation reads of the tensor is finite (a
/// pattern's, 1, are; a column that is not DOUBLE is not read here).
pub(super) fn finite(tensor: &Tensor, annotation: Annotation) -> bool {
    let Annotation::Column(column) = annotation else {
        return true;
    };
    let known = tensor.derived::<FiniteColumns>();
    let mut known = known.0.lock().unwrap_or_else(PoisonError::into_inner);
    *known.entry(column).or_insert_with(|| {
        tensor
            .annotation_columns()
            .get(column)
            .and_then(|array| array.as_primitive_opt::<Float64Type>())
            .is_none_or(|a| a.values().iter().all(|v| v.is_finite()))
    })
}

/// A tensor's entries, with these `values` (its value column as
/// floats), in a row-major array of its stored dimensions.
pub(super) fn scatter(
    query: &PhysicalQuery,
    tensor: &Tensor,
    values: &[f64],
    strides: &[usize],
    cells: usize,
) -> Result<Vec<f64>> {
    let coords: Vec<&[i64]> = (0..strides.len()).map(|d| tensor.coords(d)).collect();
    let address = Address::new(strides);
    let mut array = vec![0.0; cells];
    for (e, &value) in values.iter().enumerate() {
        let slot = array
            .get_mut(address.at(&coords, e))
            .ok_or_else(|| internal(query, "has an input entry outside its dimensions"))?;
        *slot = value;
    }
    Ok(array)
}

/// The `values` of `tensor` (its value column as floats), whose
/// dimensions are the driver's leading ones in order (`prefix`: the
/// driver's coordinate columns there), at every driver entry: its value
/// at the entry's coordinates there, 0 where it has no entry. Both lists
/// are sorted by those coordinates, so one merge finds every value.
fn at_driver_entries(tensor: &Tensor, values: &[f64], prefix: &[&[i64]]) -> Result<Vec<f64>> {
    let own: Vec<&[i64]> = (0..prefix.len()).map(|d| tensor.coords(d)).collect();
    // How the tensor's entry `p` compares with driver entry `e`.
    let order = |p: usize, e: usize| {
        own.iter()
            .zip(prefix)
            .map(|(o, d)| o[p].cmp(&d[e]))
            .find(|c| c.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let entries = prefix.first().map_or(0, |c| c.len());
    let mut out = vec![0.0; entries];
    let mut p = 0;
    for (e, cell) in out.iter_mut().enumerate() {
        while p < values.len() && order(p, e).is_lt() {
            p += 1;
        }
        if p < values.len() && order(p, e).is_eq() {
            *cell = values[p];
        }
    }
    Ok(out)
}

/// One pass over the driver's entries.
#[derive(Clone)]
struct Pass<'p, 'a> {
    query: &'p PhysicalQuery,
    driven: &'p Driven,
    /// The driver's coordinates, one column per stored dimension.
    coords: &'p [&'a [i64]],
    /// The driver's values; `None` for its pattern (1 at every entry).
    x: Option<&'a [f64]>,
    /// The driver's entries.
    entries: usize,
    /// The variable of each driver dimension.
    driver_vars: &'p [usize],
    /// The length of the prefix of the driver's dimensions that is a key
    /// of it ([`Tensor::key_prefix`]).
    key: usize,
    /// The operands that do not read the free variable: a cell per entry.
    scalars: Vec<&'p Operand<'a>>,
    /// The operands that do: a row per entry.
    rows: Vec<&'p Operand<'a>>,
    /// The terms of the sum factor ([`Driven::sum`]), which multiplies
    /// the product of the others.
    terms: Vec<&'p Operand<'a>>,
    /// The operands read through a function ([`Driven::maps`]).
    mapped: Vec<&'p Operand<'a>>,
    /// The values of the row-local operand for the rows of the piece of
    /// a fused pass that runs, and the first of those rows.
    local: Option<(&'p [f64], usize)>,
    /// The cells of the free variable (1 without one).
    rank: usize,
    /// The threads the pass may use.
    threads: usize,
    control: &'p Control<'p>,
}

impl Pass<'_, '_> {
    /// Visits every driver entry whose cells are present in every
    /// operand: `visit(e, row)` with the products along the free variable
    /// (one cell without one; their sum, one cell, when the free variable
    /// is summed over one or two contiguous rows).
    fn each(&self, entries: Range<usize>, mut visit: impl FnMut(usize, &[f64])) -> Result<()> {
        if self.rows.iter().any(|o| o.sparse.is_some()) {
            return Err(internal(self.query, "reads listed rows as an array"));
        }
        let mut row = vec![0.0; self.rank];
        let rank = self.rank;
        // A summed free variable over one or two contiguous rows: their dot
        // product in one loop (SDDMM, the masked nested sum).
        let dot = self.free_in_output().is_none()
            && self.terms.is_empty()
            && matches!(self.rows.len(), 1 | 2)
            && self.rows.iter().all(|o| o.free == Some(1));
        let mut sum = vec![0.0; if self.terms.is_empty() { 0 } else { rank }];
        self.blocks(entries, |e, scalar| {
            if self.driven.free.is_none() {
                visit(e, &[scalar]);
                return;
            }
            if dot {
                let sum = match self.rows.as_slice() {
                    [a] => {
                        let Some(at) = a.offset(self.coords, e) else {
                            return;
                        };
                        lanes_sum(&a.values[at..at + rank])
                    }
                    [a, b] => {
                        let (Some(at), Some(bt)) =
                            (a.offset(self.coords, e), b.offset(self.coords, e))
                        else {
                            return;
                        };
                        lanes_dot(&a.values[at..at + rank], &b.values[bt..bt + rank])
                    }
                    _ => return,
                };
                visit(e, &[scalar * sum]);
                return;
            }
            row.fill(scalar);
            for operand in &self.rows {
                let Some(offset) = operand.offset(self.coords, e) else {
                    return;
                };
                multiply_row(&mut row, &operand.values, offset, operand.free.unwrap_or(1));
            }
            if self.has_term_rows() {
                sum.fill(0.0);
                for term in &self.terms {
                    let (Some(offset), Some(sign)) = (term.offset(self.coords, e), term.sign)
                    else {
                        continue;
                    };
                    match term.free {
                        // A contiguous row: a loop the compiler vectorizes.
                        Some(1) => {
                            let cells = &term.values[offset..offset + rank];
                            for (cell, &v) in sum.iter_mut().zip(cells) {
                                *cell += sign * v;
                            }
                        }
                        Some(stride) => {
                            for (cell, r) in sum.iter_mut().zip(0..) {
                                *cell += sign * term.values[offset + r * stride];
                            }
                        }
                        None => sum
                            .iter_mut()
                            .for_each(|c| *c += sign * term.values[offset]),
                    }
                }
                match self.driven.sum_map {
                    None => row.iter_mut().zip(&sum).for_each(|(cell, &s)| *cell *= s),
                    Some(_) => {
                        for (cell, &s) in row.iter_mut().zip(&sum) {
                            *cell *= self.sum_factor(s);
                        }
                    }
                }
            }
            visit(e, &row);
        })
    }

    /// How the pass reads its entries row by row, when each entry adds
    /// one scalar (no free variable, rows, sum factor or maps) whose
    /// operands cover the driver's coordinates, at most one of them moves
    /// along a row through one more dimension, and the output does the
    /// same (`array`; `None` for a row-local result).
    fn by_rows(&self, array: Option<&ArrayOut>) -> Option<RowPass<'_>> {
        let simple = self.driven.free.is_none()
            && self.rows.is_empty()
            && self.terms.is_empty()
            && self.mapped.is_empty();
        if !simple || self.coords.len() > 2 {
            return None;
        }
        let mut factors = Vec::with_capacity(self.scalars.len());
        for operand in &self.scalars {
            if !operand.bounded.is_empty() {
                return None;
            }
            factors.push(if operand.local {
                RowFactor::Local
            } else {
                let values = &operand.values[..];
                match operand.address.along_rows(self.coords)? {
                    (row, None) => RowFactor::Fixed { values, row },
                    (row, Some(moving)) => RowFactor::Moving {
                        values,
                        row,
                        moving,
                    },
                }
            });
        }
        let moving = factors
            .iter()
            .filter(|f| matches!(f, RowFactor::Moving { .. }))
            .count();
        let out = match array {
            Some(array) => Some(array.entry.along_rows(self.coords)?),
            None => None,
        };
        (moving <= 1 && factors.len() <= ROW_FIXED).then_some(RowPass {
            x: self.x,
            factors,
            out,
        })
    }

    /// Whether a term of the sum factor reads the free variable: the sum
    /// is then a row per entry, taken in [`Pass::each`]; otherwise it is a
    /// scalar, taken in [`Pass::blocks`].
    fn has_term_rows(&self) -> bool {
        self.terms.iter().any(|t| t.free.is_some())
    }

    /// The sum factor's value at a cell whose terms add up to `sum`: the
    /// sum read through its function, if it has one ([`Driven::sum_map`]).
    #[inline]
    fn sum_factor(&self, sum: f64) -> f64 {
        match self.driven.sum_map {
            Some(op) => op.apply_f64(&[sum]).unwrap_or(f64::NAN),
            None => sum,
        }
    }

    /// Visits the driver entries in blocks of [`BLOCK`]: the block's
    /// scalars (the entry's value times the cells of the operands that do
    /// not read the free variable) are taken one operand at a time, loops
    /// of independent reads the processor overlaps, then `visit(e,
    /// scalar)` runs for every entry present in those operands.
    fn blocks(&self, entries: Range<usize>, mut visit: impl FnMut(usize, f64)) -> Result<()> {
        self.scalar_blocks(entries, |start, scalars, outside| {
            for (b, &scalar) in scalars.iter().enumerate() {
                if outside.is_none_or(|o| !o[b]) {
                    visit(start + b, scalar);
                }
            }
        })
    }

    /// [`Pass::blocks`] a block at a time: `visit(start, scalars,
    /// outside)` with the scalars of the entries from `start` on, and,
    /// when some operand may lack a cell, which entries are outside it
    /// (their scalars are to be skipped).
    fn scalar_blocks(
        &self,
        entries: Range<usize>,
        mut visit: impl FnMut(usize, &mut [f64], Option<&[bool]>),
    ) -> Result<()> {
        let mut scalars = [0.0; BLOCK];
        let mut outside = [false; BLOCK];
        let bounded = self.scalars.iter().any(|o| !o.bounded.is_empty());
        let mut work = CHECK_WORK;
        for start in entries.clone().step_by(BLOCK) {
            let len = BLOCK.min(entries.end - start);
            if work >= CHECK_WORK {
                self.control.tick();
                self.control.check()?;
                work = 0;
            }
            work += len * self.rank.max(1);
            let (scalars, outside) = (&mut scalars[..len], &mut outside[..len]);
            // The driver's values, until the first operand's loop
            // multiplies them in as it reads its cells.
            let mut pending = self.x.map(|x| &x[start..start + len]);
            if pending.is_none() {
                scalars.fill(1.0);
            }
            if bounded {
                outside.fill(false);
            }
            for operand in &self.scalars {
                if operand.local {
                    let (values, first) = self
                        .local
                        .ok_or_else(|| internal(self.query, "runs outside its fused pass"))?;
                    let rows = &self.coords[0][start..start + len];
                    let cell = |row: i64| values[row as usize - first];
                    match pending.take() {
                        Some(x) => {
                            for ((scalar, &row), &x) in scalars.iter_mut().zip(rows).zip(x) {
                                *scalar = x * cell(row);
                            }
                        }
                        None => {
                            for (scalar, &row) in scalars.iter_mut().zip(rows) {
                                *scalar *= cell(row);
                            }
                        }
                    }
                } else if operand.bounded.is_empty() {
                    let (values, block) = (&operand.values[..], start..start + len);
                    match pending.take() {
                        Some(x) => operand
                            .address
                            .each_in(self.coords, block, |b, at| scalars[b] = x[b] * values[at]),
                        None => operand
                            .address
                            .each_in(self.coords, block, |b, at| scalars[b] *= values[at]),
                    }
                } else {
                    if let Some(x) = pending.take() {
                        scalars.copy_from_slice(x);
                    }
                    for (b, scalar) in scalars.iter_mut().enumerate() {
                        match operand.offset(self.coords, start + b) {
                            Some(offset) => *scalar *= operand.values[offset],
                            None => outside[b] = true,
                        }
                    }
                }
            }
            if let Some(x) = pending {
                scalars.copy_from_slice(x);
            }
            for operand in &self.mapped {
                let Some(op) = operand.map else {
                    continue;
                };
                for (b, scalar) in scalars.iter_mut().enumerate() {
                    // An absent cell is 0, and the function's value there
                    // the operand's.
                    let cell = operand
                        .offset(self.coords, start + b)
                        .map_or(0.0, |offset| operand.values[offset]);
                    *scalar *= op.apply_f64(&[cell]).unwrap_or(f64::NAN);
                }
            }
            if !self.terms.is_empty() && !self.has_term_rows() {
                for (b, scalar) in scalars.iter_mut().enumerate() {
                    let mut sum = 0.0;
                    for term in &self.terms {
                        // An absent cell adds 0.
                        if let (Some(offset), Some(sign)) =
                            (term.offset(self.coords, start + b), term.sign)
                        {
                            sum += sign * term.values[offset];
                        }
                    }
                    *scalar *= self.sum_factor(sum);
                }
            }
            visit(start, scalars, bounded.then_some(&*outside));
        }
        Ok(())
    }

    /// Adds the scalar of every driver entry in `entries` times its rows
    /// of the one or two operands that read the free variable to the
    /// entry's row of the result (SpMM, MTTKRP): at `base_of(entry)` in
    /// `out`, with the free variable's output stride. [`Pass::each`]
    /// without the scratch row: one loop over contiguous rows when every
    /// row is.
    fn add_scaled_rows(
        &self,
        entries: Range<usize>,
        free_stride: usize,
        out: &mut [f64],
        mut base_of: impl FnMut(usize) -> usize,
    ) -> Result<()> {
        let rank = self.rank;
        let contiguous = free_stride == 1 && self.rows.iter().all(|o| o.free == Some(1));
        self.blocks(entries, |e, scalar| {
            let base = base_of(e);
            match self.rows.as_slice() {
                [a] => {
                    let Some(at) = a.offset(self.coords, e) else {
                        return;
                    };
                    if let Some(sparse) = &a.sparse {
                        let (cols, values) = sparse.row(at);
                        for (&c, &x) in cols.iter().zip(values) {
                            out[base + c * free_stride] += scalar * x;
                        }
                    } else if contiguous {
                        let to = &mut out[base..base + rank];
                        for (cell, &x) in to.iter_mut().zip(&a.values[at..at + rank]) {
                            *cell += scalar * x;
                        }
                    } else {
                        let stride = a.free.unwrap_or(1);
                        for r in 0..rank {
                            out[base + r * free_stride] += scalar * a.values[at + r * stride];
                        }
                    }
                }
                [a, b] => {
                    let (Some(at), Some(bt)) = (a.offset(self.coords, e), b.offset(self.coords, e))
                    else {
                        return;
                    };
                    if contiguous {
                        let to = &mut out[base..base + rank];
                        let rows = a.values[at..at + rank].iter().zip(&b.values[bt..bt + rank]);
                        for (cell, (&x, &y)) in to.iter_mut().zip(rows) {
                            *cell += scalar * x * y;
                        }
                    } else {
                        let (sa, sb) = (a.free.unwrap_or(1), b.free.unwrap_or(1));
                        for r in 0..rank {
                            out[base + r * free_stride] +=
                                scalar * a.values[at + r * sa] * b.values[bt + r * sb];
                        }
                    }
                }
                _ => {}
            }
        })
    }

    /// The driver's entries split into at most [`CHUNKS`] ranges of at
    /// least [`CHUNK_ENTRIES`], each ending where the first coordinate
    /// changes: a fixed split, whatever the thread count, so that results
    /// do not depend on it.
    fn chunks(&self) -> Vec<Range<usize>> {
        let target = self.entries.div_ceil(CHUNKS).max(CHUNK_ENTRIES);
        let mut chunks = Vec::new();
        let mut start = 0;
        while start < self.entries {
            let mut end = (start + target).min(self.entries);
            if let Some(first) = self.coords.first() {
                while end < self.entries && first[end] == first[end - 1] {
                    end += 1;
                }
            }
            chunks.push(start..end);
            start = end;
        }
        chunks
    }

    /// Runs `job`, whose parallel iterators go over the chunks, on the
    /// pool of the pass's threads.
    fn in_pool<T: Send>(&self, job: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        pool(self.threads)?.install(job)
    }

    /// Whether the output reads the free variable.
    fn free_in_output(&self) -> Option<usize> {
        let free = self.driven.free?;
        self.query.output.iter().position(|&v| v == free)
    }

    /// Where the pass adds an entry in its dense output array.
    fn array_out(&self) -> ArrayOut {
        let query = self.query;
        let mut strides = vec![0usize; query.output.len()];
        let mut stride = 1usize;
        for (n, &v) in query.output.iter().enumerate().rev() {
            strides[n] = stride;
            stride *= query.vars[v].size as usize;
        }
        // The output stride of every driver dimension (0 if summed).
        let entry_strides: Vec<usize> = self
            .driver_vars
            .iter()
            .map(|v| {
                query
                    .output
                    .iter()
                    .position(|w| w == v)
                    .map_or(0, |n| strides[n])
            })
            .collect();
        let rows_first =
            query.output.first() == self.driver_vars.first() && !self.driver_vars.is_empty();
        ArrayOut {
            entry: Address::new(&entry_strides),
            free_stride: self.free_in_output().map(|n| strides[n]),
            row_cells: if rows_first { Some(strides[0]) } else { None },
            strides,
        }
    }

    /// Adds the driver entries `entries` into `out`, which holds the
    /// output array's cells from `first` on.
    fn add(
        &self,
        array: &ArrayOut,
        entries: Range<usize>,
        out: &mut [f64],
        first: usize,
    ) -> Result<()> {
        let entry = &array.entry;
        // Whether each entry has a cell of its own (the offset moves with
        // the driver's last dimension) rather than each run of entries.
        let per_entry = (self.coords.len().checked_sub(1)).is_some_and(|last| entry.reads(last));
        match (array.free_stride, self.rows.len()) {
            (Some(s), 1 | 2) => {
                self.add_scaled_rows(entries, s, out, |e| entry.at(self.coords, e) - first)
            }
            // No free variable, a cell per run of entries (the output
            // leaves out the driver's last dimension): each run, a row's
            // for a sum per row, is summed in a register, in the same
            // order, and written once.
            _ if self.driven.free.is_none() && !per_entry => {
                let mut run: Option<(usize, f64)> = None;
                self.scalar_blocks(entries, |start, scalars, outside| {
                    skip_outside(scalars, outside);
                    entry.each_in(self.coords, start..start + scalars.len(), |b, at| {
                        let (at, scalar) = (at - first, scalars[b]);
                        match &mut run {
                            Some((cell, sum)) if *cell == at => *sum += scalar,
                            _ => {
                                if let Some((cell, sum)) = run {
                                    out[cell] = sum;
                                }
                                run = Some((at, out[at] + scalar));
                            }
                        }
                    })
                })?;
                if let Some((cell, sum)) = run {
                    out[cell] = sum;
                }
                Ok(())
            }
            // No free variable, a cell per entry or scattered: each entry's
            // scalar added in place.
            _ if self.driven.free.is_none() => {
                self.scalar_blocks(entries, |start, scalars, outside| {
                    skip_outside(scalars, outside);
                    entry.each_in(self.coords, start..start + scalars.len(), |b, at| {
                        out[at - first] += scalars[b]
                    })
                })
            }
            _ => self.each(entries, |e, row| {
                let base = entry.at(self.coords, e) - first;
                match array.free_stride {
                    Some(s) => {
                        for (r, &v) in row.iter().enumerate() {
                            out[base + r * s] += v;
                        }
                    }
                    None => out[base] += lanes_sum(row),
                }
            }),
        }
    }

    /// The result added into a dense array of `cells` over the output's
    /// coordinates, its non-zero cells listed in output order.
    fn add_into_array(&self, cells: usize) -> Result<Outcome> {
        let array = self.array_out();
        let chunks = self.chunks();
        let mut out = vec![0.0; cells];
        match array.split(&chunks, cells, self.coords) {
            Split::ByRows => {
                // The chunks cover disjoint rows of the result (their
                // first coordinates), so each adds into its own slice.
                let parts = array.row_parts(&chunks, &mut out, self.coords);
                self.in_pool(|| {
                    parts
                        .into_par_iter()
                        .zip(chunks)
                        .try_for_each(|((part, first), chunk)| {
                            part.fill(0.0);
                            self.add(&array, chunk, part, first)
                        })
                })?;
            }
            Split::Partials => {
                // A small result: a partial array per chunk, added up in
                // chunk order.
                let partials = self.in_pool(|| {
                    chunks
                        .into_par_iter()
                        .map(|chunk| {
                            let mut partial = zeros(cells);
                            self.add(&array, chunk, &mut partial, 0)?;
                            Ok(partial)
                        })
                        .collect::<Result<Vec<_>>>()
                })?;
                out.fill(0.0);
                for partial in &partials {
                    add_up(&mut out, partial);
                }
            }
            Split::Whole => {
                out.fill(0.0);
                self.add(&array, 0..self.entries, &mut out, 0)?;
            }
        }
        self.control.check()?;
        self.list(&array, RowKeys::Every(&array.strides), out)
    }

    /// [`Pass::add_into_array`] into a row per distinct prefix of the
    /// driver's entries ([`RowStarts`]); when every row is non-zero
    /// throughout, the array is the result's values as it is.
    fn add_into_rows(&self, array: &ArrayOut, rows: &RowStarts) -> Result<Outcome> {
        let RowStarts {
            starts,
            keys,
            width,
            cells,
        } = rows;
        let (starts, width) = (&starts[..], *width);
        let chunks = self.chunks();
        let mut out = vec![0.0; *cells];
        // Chunks end where the first coordinate changes, so at the start
        // of a row: each adds into the rows of its own entries.
        let mut parts = Vec::with_capacity(chunks.len());
        let mut rest = &mut out[..];
        for chunk in &chunks {
            let from = starts.partition_point(|&s| s < chunk.start);
            let to = starts.partition_point(|&s| s < chunk.end);
            let (part, tail) = rest.split_at_mut((to - from) * width);
            parts.push((part, from));
            rest = tail;
        }
        // One or two operands' rows scaled by the entry's product; else
        // each entry's row of products as the pass computes it.
        let scaled = self.terms.is_empty() && matches!(self.rows.len(), 1 | 2);
        self.in_pool(|| {
            parts
                .into_par_iter()
                .zip(chunks)
                .try_for_each(|((part, from), chunk)| {
                    part.fill(0.0);
                    let mut row = from;
                    let mut base = |e: usize| {
                        while starts.get(row + 1).is_some_and(|&s| s <= e) {
                            row += 1;
                        }
                        (row - from) * width
                    };
                    if scaled {
                        return self.add_scaled_rows(chunk, 1, part, base);
                    }
                    self.each(chunk, |e, cells| {
                        let at = base(e);
                        for (cell, &v) in part[at..at + cells.len()].iter_mut().zip(cells) {
                            *cell += v;
                        }
                    })
                })
        })?;
        self.control.check()?;
        self.list(array, RowKeys::Driver(keys), out)
    }

    /// The output array's non-zero cells in output order; a count's as
    /// integers.
    fn list(&self, array: &ArrayOut, rows: RowKeys<'_>, mut out: Vec<f64>) -> Result<Outcome> {
        let query = self.query;
        if query.ty == ValueType::Int64 {
            return Ok(Outcome::Entries(Finished::Int(vec![counts(
                query, array, &out,
            )])));
        }
        // Through the query's finish, which takes the absent cells' 0 to 0.
        pool(self.threads)?.install(|| finish::floats(query, &mut out));
        if query.output.is_empty() {
            let mut entries = Entries::new(0);
            entries.push([], out.first().copied().unwrap_or(0.0));
            return Ok(Outcome::Entries(Finished::Float(vec![entries])));
        }
        // Row by row along the last output variable: the leading
        // coordinates are divided out once per row, not per cell.
        let row_cells = (query.vars[query.output[query.output.len() - 1]].size as usize).max(1);
        let present: Vec<usize> = self.in_pool(|| {
            Ok(out
                .par_chunks(row_cells)
                .map(|cells| cells.iter().fold(0, |n, &v| n + usize::from(v != 0.0)))
                .collect())
        })?;
        let last = query.output.len() - 1;
        let rows_only = present.iter().all(|&n| n == 0 || n == row_cells);
        if last > 0 && query.ty == ValueType::Float64 && query.fill.is_zero() && rows_only {
            return Ok(full_rows(rows, last, &present, row_cells, out));
        }
        // The lists are sized up front (growing them would copy them, and
        // fresh memory is dear: the kernel clears every page on first
        // touch) and written in pieces of rows in parallel, each piece
        // into its own stretch of them; a result with every cell non-zero
        // keeps the array as its values.
        let kept: usize = present.iter().sum();
        let every = kept == out.len();
        // Allocated zeroed, each page first touched by a piece's writes.
        let mut coords: Vec<Vec<i64>> = (0..query.output.len()).map(|_| vec![0; kept]).collect();
        let mut values = vec![0.0; if every { 0 } else { kept }];
        let pieces: Vec<Range<usize>> = (0..present.len())
            .step_by(present.len().div_ceil(CHUNKS).max(LIST_ROWS))
            .map(|start| {
                start..(start + present.len().div_ceil(CHUNKS).max(LIST_ROWS)).min(present.len())
            })
            .collect();
        let counts: Vec<usize> = pieces
            .iter()
            .map(|p| present[p.clone()].iter().sum())
            .collect();
        let mut parts: Vec<(Vec<&mut [i64]>, &mut [f64])> = Vec::with_capacity(pieces.len());
        let mut columns: Vec<&mut [i64]> = coords.iter_mut().map(|c| &mut c[..]).collect();
        let mut rest_values = &mut values[..];
        for &count in &counts {
            let mut piece = Vec::with_capacity(columns.len());
            for column in &mut columns {
                let (part, tail) = std::mem::take(column).split_at_mut(count);
                piece.push(part);
                *column = tail;
            }
            let taken = if every { 0 } else { count };
            let (part, tail) = std::mem::take(&mut rest_values).split_at_mut(taken);
            rest_values = tail;
            parts.push((piece, part));
        }
        self.in_pool(|| {
            parts
                .into_par_iter()
                .zip(&pieces)
                .for_each(|((mut columns, values), piece)| {
                    let mut at = 0;
                    for row in piece.clone() {
                        let present = present[row];
                        if present == 0 {
                            continue;
                        }
                        let cells = &out[row * row_cells..(row + 1) * row_cells];
                        rows.each(row, row_cells, |column, key| {
                            columns[column][at..at + present].fill(key);
                        });
                        if present == cells.len() {
                            // A full row (SpMM's, a dense factor's): its columns
                            // in order and its cells as they are, without a test
                            // per cell.
                            for (slot, column) in
                                columns[last][at..at + present].iter_mut().zip(0..)
                            {
                                *slot = column;
                            }
                            if !every {
                                values[at..at + present].copy_from_slice(cells);
                            }
                            at += present;
                            continue;
                        }
                        // A row with a zero: only its non-zero cells.
                        for (column, &v) in cells.iter().enumerate() {
                            if v != 0.0 {
                                columns[last][at] = column as i64;
                                values[at] = v;
                                at += 1;
                            }
                        }
                    }
                });
            Ok(())
        })?;
        if every {
            values = out;
        }
        Ok(Outcome::Columns(coords, values))
    }

    /// The result as one entry per driver entry (per cell of the free
    /// variable when the output reads it), in the driver's order: only
    /// the values when the output's coordinates are the driver's, in its
    /// order. The values go through the query's finish as they are
    /// written, and the entries it takes to 0 are not.
    fn write_entries(&self) -> Result<Outcome> {
        let query = self.query;
        // Where each output coordinate comes from: a driver dimension, or
        // the free variable (`None`).
        let sources: Vec<Option<usize>> = query
            .output
            .iter()
            .map(|v| self.driver_vars.iter().position(|w| w == v))
            .collect();
        let free_in_output = self.free_in_output().is_some();
        if sources
            .iter()
            .copied()
            .eq((0..self.driver_vars.len()).map(Some))
        {
            return self.values_at_driver().map(Outcome::AtDriver);
        }
        let write = |chunk: Range<usize>| -> Result<Entries<f64>> {
            let mut entries = Entries::new(query.output.len());
            let per_entry = if free_in_output { self.rank } else { 1 };
            entries.reserve(chunk.len().saturating_mul(per_entry));
            let mut key = vec![0i64; sources.len()];
            self.each(chunk, |e, row| {
                for (slot, source) in key.iter_mut().zip(&sources) {
                    *slot = source.map_or(0, |d| self.coords[d][e]);
                }
                if free_in_output {
                    for (r, &value) in row.iter().enumerate() {
                        let Some(value) = self.finished(value) else {
                            continue;
                        };
                        for (slot, source) in key.iter_mut().zip(&sources) {
                            if source.is_none() {
                                *slot = r as i64;
                            }
                        }
                        entries.push(key.iter().copied(), value);
                    }
                } else if let Some(value) = self.finished(lanes_sum(row)) {
                    entries.push(key.iter().copied(), value);
                }
            })?;
            Ok(entries)
        };
        let mut parts = self.in_pool(|| {
            self.chunks()
                .into_par_iter()
                .map(write)
                .collect::<Result<Vec<_>>>()
        })?;
        // A prefix of the driver's stored order that is a key of it (the
        // planner asks for one), then the free variable: increasing when
        // the output lists them so. The chunks' entries are stored one
        // after another as runs.
        let prefix = sources.iter().flatten().count();
        let in_order: Vec<Option<usize>> = (0..prefix)
            .map(Some)
            .chain(free_in_output.then_some(None))
            .collect();
        let increasing = sources == in_order && prefix >= self.key;
        for part in &mut parts {
            part.increasing = increasing;
        }
        finished(query, parts).map(Outcome::Entries)
    }

    /// The result grouped ([`DrivenOutput::Grouped`]): every entry's
    /// scalar keyed by its output coordinates packed into one number
    /// (row-major over the output's sizes), the pairs sorted by key with
    /// a stable sort, and each key's scalars added in entry order, so the
    /// result does not depend on the thread count. The pairs (16 bytes an
    /// entry, twice while the chunks' parts are joined) are charged to the
    /// memory limit while they live.
    fn group(&self) -> Result<Outcome> {
        let query = self.query;
        let dims = query
            .output
            .iter()
            .map(|v| self.driver_vars.iter().position(|w| w == v))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| internal(query, "groups by a variable its driver lacks"))?;
        let sizes: Vec<u64> = query.output.iter().map(|&v| query.vars[v].size).collect();
        let mut strides = vec![1u64; sizes.len()];
        for k in (1..sizes.len()).rev() {
            strides[k - 1] = strides[k]
                .checked_mul(sizes[k])
                .ok_or_else(|| internal(query, "groups by more cells than 64 bits count"))?;
        }
        let held = Held::new(self.control);
        held.reserve((self.entries as u64).saturating_mul(32))?;
        let pair = |chunk: Range<usize>| -> Result<Vec<(u64, f64)>> {
            let mut pairs = Vec::with_capacity(chunk.len());
            self.blocks(chunk, |e, scalar| {
                let key = dims
                    .iter()
                    .zip(&strides)
                    .map(|(&d, &stride)| self.coords[d][e] as u64 * stride)
                    .sum();
                pairs.push((key, scalar));
            })?;
            Ok(pairs)
        };
        let mut pairs = self.in_pool(|| {
            let parts = self
                .chunks()
                .into_par_iter()
                .map(pair)
                .collect::<Result<Vec<_>>>()?;
            let mut pairs = Vec::with_capacity(parts.iter().map(Vec::len).sum());
            for part in parts {
                pairs.extend(part);
            }
            pairs.par_sort_by_key(|&(key, _)| key);
            Ok(pairs)
        })?;
        self.control.check()?;
        // Each key's scalars added in order, in place.
        let mut kept = 0;
        for p in 0..pairs.len() {
            if kept > 0 && pairs[kept - 1].0 == pairs[p].0 {
                pairs[kept - 1].1 += pairs[p].1;
            } else {
                pairs[kept] = pairs[p];
                kept += 1;
            }
        }
        pairs.truncate(kept);
        // Through the query's finish (only `DOUBLE` results have one),
        // the sums it takes to 0 dropped.
        if let Some(finish) = &query.finish {
            for pair in &mut pairs {
                pair.1 = finish.apply(pair.1);
            }
            pairs.retain(|&(_, value)| value != 0.0);
        }
        let coordinate = |key: u64, k: usize| match k {
            0 => key / strides[0],
            _ => key % strides[k - 1] / strides[k],
        } as i64;
        if query.ty == ValueType::Int64 {
            let mut entries = Entries::new(dims.len());
            entries.reserve(pairs.len());
            for &(key, value) in &pairs {
                entries.push((0..dims.len()).map(|k| coordinate(key, k)), value);
            }
            entries.increasing = true;
            return finished(query, vec![entries]).map(Outcome::Entries);
        }
        let coords = (0..dims.len())
            .map(|k| pairs.iter().map(|&(key, _)| coordinate(key, k)).collect())
            .collect();
        let values = pairs.iter().map(|&(_, value)| value).collect();
        Ok(Outcome::Columns(coords, values))
    }

    /// The summed products of every driver entry, in the driver's order
    /// (0 for an entry that some operand has no cell for). Each chunk
    /// writes its own part of the list.
    fn values_at_driver(&self) -> Result<Vec<f64>> {
        let mut values = vec![0.0; self.entries];
        let mut parts = Vec::new();
        let mut rest: &mut [f64] = &mut values;
        for chunk in self.chunks() {
            let (part, tail) = rest.split_at_mut(chunk.len());
            parts.push((chunk, part));
            rest = tail;
        }
        self.in_pool(|| {
            parts.into_par_iter().try_for_each(|(chunk, part)| {
                let first = chunk.start;
                if self.driven.free.is_none() {
                    self.blocks(chunk, |e, scalar| part[e - first] = scalar)?;
                } else {
                    self.each(chunk, |e, row| part[e - first] = lanes_sum(row))?;
                }
                if let Some(finish) = &self.query.finish {
                    part.iter_mut().for_each(|v| *v = finish.apply(*v));
                }
                Ok(())
            })
        })?;
        Ok(values)
    }

    /// A written entry's value through the query's finish; `None` when
    /// the finish takes it to 0 (the entry is dropped).
    fn finished(&self, value: f64) -> Option<f64> {
        match &self.query.finish {
            None => Some(value),
            Some(finish) => Some(finish.apply(value)).filter(|&v| v != 0.0),
        }
    }
}

/// Where a pass adds its entries in a dense output array.
struct ArrayOut {
    /// The offset of a driver entry's cell (the output strides of the
    /// driver's dimensions).
    entry: Address,
    /// The output stride of the free variable, when the output reads it.
    free_stride: Option<usize>,
    /// The cells of one first coordinate of the output, when that is the
    /// driver's first variable: then the driver's rows add into disjoint
    /// parts of the array.
    row_cells: Option<usize>,
    /// The output's row-major strides.
    strides: Vec<usize>,
}

/// How the chunks of a pass add into an output array.
enum Split {
    /// Each into its own rows of it.
    ByRows,
    /// Each into a partial array of its own, added up in chunk order.
    Partials,
    /// One after the other into the array.
    Whole,
}

impl ArrayOut {
    /// How chunks `chunks` add into this array of `cells`.
    fn split(&self, chunks: &[Range<usize>], cells: usize, coords: &[&[i64]]) -> Split {
        // Partial arrays of more cells than the pass has entries would
        // cost more to clear and add up than the pass (BATAx's `y` over
        // a wide, sparse `A`): then the chunks run one after the other.
        let entries = chunks.last().map_or(0, |c| c.end);
        let partial_cells = cells.saturating_mul(chunks.len());
        if chunks.len() <= 1 {
            Split::Whole
        } else if self.row_cells.is_some() && !coords.is_empty() {
            Split::ByRows
        } else if partial_cells <= PARTIAL_CELLS && partial_cells <= entries {
            Split::Partials
        } else {
            Split::Whole
        }
    }

    /// `out` cut into the part of each chunk's rows ([`Split::ByRows`]),
    /// with the cell each part starts at.
    fn row_parts<'o>(
        &self,
        chunks: &[Range<usize>],
        out: &'o mut [f64],
        coords: &[&[i64]],
    ) -> Vec<(&'o mut [f64], usize)> {
        let row_cells = self.row_cells.unwrap_or(0);
        let mut parts = Vec::with_capacity(chunks.len());
        let mut rest = out;
        let mut at = 0;
        for chunk in chunks {
            let last = coords[0][chunk.end - 1] as usize;
            let end = (last + 1) * row_cells;
            let (part, tail) = rest.split_at_mut(end - at);
            parts.push((part, at));
            (rest, at) = (tail, end);
        }
        parts
    }
}

/// Which output coordinates the rows of an output array (its cells along
/// the last output variable) stand for.
#[derive(Clone, Copy)]
enum RowKeys<'a> {
    /// Every combination of the leading output coordinates, in row-major
    /// order: the array's strides.
    Every(&'a [usize]),
    /// The distinct prefixes of the driver's entries (a column per
    /// leading output coordinate): a row each.
    Driver(&'a [Vec<i64>]),
}

impl RowKeys<'_> {
    /// Calls `key(column, coordinate)` with each leading output
    /// coordinate of row `row` (of `width` cells).
    fn each(self, row: usize, width: usize, mut key: impl FnMut(usize, i64)) {
        match self {
            RowKeys::Every(strides) => {
                let mut rest = row * width;
                for (column, &stride) in strides[..strides.len() - 1].iter().enumerate() {
                    key(column, (rest / stride) as i64);
                    rest %= stride;
                }
            }
            RowKeys::Driver(keys) => {
                for (column, keys) in keys.iter().enumerate() {
                    key(column, keys[row]);
                }
            }
        }
    }
}

/// The non-zero cells of an output array whose rows along the last output
/// variable (`present` non-zero cells each, of `width`) are each all
/// non-zero or all zero: the leading coordinates of the non-zero rows, and
/// their cells moved to the front of the array, in order. The array keeps
/// its capacity: it is the values, without a copy into fresh memory.
fn full_rows(
    keys: RowKeys<'_>,
    leading: usize,
    present: &[usize],
    width: usize,
    mut out: Vec<f64>,
) -> Outcome {
    let rows = present.iter().filter(|&&n| n > 0).count();
    let mut leading = vec![Vec::with_capacity(rows); leading];
    let mut kept = 0;
    for row in (0..present.len()).filter(|&row| present[row] > 0) {
        keys.each(row, width, |column, key| leading[column].push(key));
        if kept != row * width {
            out.copy_within(row * width..(row + 1) * width, kept);
        }
        kept += width;
    }
    out.truncate(kept);
    Outcome::Rows(leading, out)
}

/// `cells` zeros, written rather than only allocated, for an array that
/// a pass adds into. Fresh memory's pages are mapped on first touch: one
/// read first (an add reads before it writes) maps the shared zero page,
/// and the write after it faults again and flushes the other threads'
/// TLBs; written first, each page faults once. A pass that adds into its
/// own part of a shared array writes zeros over the part first for the
/// same reason (on its own thread, so the pages fault in parallel), and
/// one that adds into a whole array writes zeros over it first.
fn zeros(cells: usize) -> Vec<f64> {
    let mut array = Vec::with_capacity(cells);
    array.resize(cells, 0.0);
    array
}

/// Sets the scalars of the entries `outside` some operand to 0, so that
/// adding every scalar of a block adds what skipping those would: a cell
/// that only they reach stays 0, which is not listed.
fn skip_outside(scalars: &mut [f64], outside: Option<&[bool]>) {
    if let Some(outside) = outside {
        for (scalar, &out) in scalars.iter_mut().zip(outside) {
            if out {
                *scalar = 0.0;
            }
        }
    }
}

/// Adds `partial` into `out`, cell by cell.
fn add_up(out: &mut [f64], partial: &[f64]) {
    for (cell, value) in out.iter_mut().zip(partial) {
        *cell += value;
    }
}

/// The driver entries of a piece of a fused pass: whole rows, at least
/// this many entries unless the chunk ends first.
const PIECE: usize = 4096;

/// The most operands of a member of a fused pass run row by row.
const ROW_FIXED: usize = 4;

/// The fewest entries per row, on average over a piece, for a fused pass
/// to run the piece row by row ([`Fused::piece_by_rows`]).
const ROW_ENTRIES: usize = 4;

/// A fused pass being run (see [`run_fused`]).
struct Fused<'f, 'a> {
    members: &'f [Member<'a>],
    drivers: &'f [Driver<'a>],
    prepared: &'f [Prepared<'f, 'a>],
    /// The member each member's row-local input comes from.
    producers: &'f [Option<usize>],
    threads: usize,
    control: &'f Control<'f>,
}

/// Where one member of a fused pass adds the entries of one chunk: into
/// its rows of the member's array, or a partial array of the chunk's own.
enum Target<'o> {
    Rows(&'o mut [f64], usize),
    Partial(Vec<f64>),
}

impl Target<'_> {
    /// The cells the member adds into, and the array cell the first of
    /// them is.
    fn cells(&mut self) -> (&mut [f64], usize) {
        match self {
            Target::Rows(out, at) => (&mut **out, *at),
            Target::Partial(out) => (&mut out[..], 0),
        }
    }
}

impl Fused<'_, '_> {
    fn run(&self) -> Result<Vec<Option<Outcome>>> {
        let passes: Vec<Pass<'_, '_>> = self
            .prepared
            .iter()
            .zip(self.drivers)
            .map(|(p, d)| p.pass(d, None, self.threads, self.control))
            .collect();
        let arrays: Vec<ArrayOut> = passes.iter().map(Pass::array_out).collect();
        let stored: Vec<usize> = (0..self.members.len())
            .filter(|&m| !self.members[m].row_local)
            .collect();
        let cells = |m: usize| self.prepared[m].out_cells;
        let coords = passes.first().map_or(&[][..], |p| p.coords);
        let chunks = passes.first().map(Pass::chunks).unwrap_or_default();
        let splits: Vec<Split> = stored
            .iter()
            .map(|&m| arrays[m].split(&chunks, cells(m), coords))
            .collect();
        let mut outs: Vec<Vec<f64>> = stored.iter().map(|&m| vec![0.0; cells(m)]).collect();
        if splits.iter().any(|s| matches!(s, Split::Whole)) {
            // Some member's result can be split neither by rows nor into
            // partials: the whole pass runs as one chunk.
            let mut targets: Vec<Target<'_>> =
                outs.iter_mut().map(|out| Target::Rows(out, 0)).collect();
            let whole = passes.first().map_or(0, |p| p.entries);
            self.chunk(&passes, &arrays, &stored, 0..whole, &mut targets)?;
        } else {
            // Each chunk's targets: its rows of every member split by rows,
            // a partial array for the others.
            let mut per_chunk: Vec<Vec<Target<'_>>> = chunks
                .iter()
                .map(|_| Vec::with_capacity(stored.len()))
                .collect();
            for ((out, &m), split) in outs.iter_mut().zip(&stored).zip(&splits) {
                match split {
                    Split::ByRows => {
                        let parts = arrays[m].row_parts(&chunks, out, coords);
                        for (targets, (part, first)) in per_chunk.iter_mut().zip(parts) {
                            targets.push(Target::Rows(part, first));
                        }
                    }
                    _ => {
                        for targets in &mut per_chunk {
                            targets.push(Target::Partial(zeros(cells(m))));
                        }
                    }
                }
            }
            let done = passes[0].in_pool(|| {
                per_chunk
                    .into_par_iter()
                    .zip(chunks.clone())
                    .map(|(mut targets, chunk)| {
                        self.chunk(&passes, &arrays, &stored, chunk, &mut targets)?;
                        Ok(targets)
                    })
                    .collect::<Result<Vec<_>>>()
            })?;
            let partials: Vec<Vec<Option<Vec<f64>>>> = done
                .into_iter()
                .map(|targets| {
                    targets
                        .into_iter()
                        .map(|target| match target {
                            Target::Partial(partial) => Some(partial),
                            Target::Rows(..) => None,
                        })
                        .collect()
                })
                .collect();
            for chunk in partials {
                for (out, partial) in outs.iter_mut().zip(chunk) {
                    if let Some(partial) = partial {
                        add_up(out, &partial);
                    }
                }
            }
        }
        self.control.check()?;
        let mut outcomes: Vec<Option<Outcome>> = (0..self.members.len()).map(|_| None).collect();
        for (out, &m) in outs.into_iter().zip(&stored) {
            outcomes[m] =
                Some(passes[m].list(&arrays[m], RowKeys::Every(&arrays[m].strides), out)?);
        }
        Ok(outcomes)
    }

    /// Runs every member over the entries `chunk`, piece by piece, adding
    /// the stored members' results into `targets` (in the order of
    /// `stored`).
    fn chunk(
        &self,
        passes: &[Pass<'_, '_>],
        arrays: &[ArrayOut],
        stored: &[usize],
        chunk: Range<usize>,
        targets: &mut [Target<'_>],
    ) -> Result<()> {
        // Written first, so that the pages fault once (see [`zeros`]).
        for target in targets.iter_mut() {
            if let Target::Rows(part, _) = target {
                part.fill(0.0);
            }
        }
        let Some(rows) = passes.first().and_then(|p| p.coords.first()) else {
            return Err(internal(
                self.members[0].query,
                "has a driver without dimensions",
            ));
        };
        let row_passes: Option<Vec<RowPass<'_>>> = (passes.iter().zip(arrays))
            .zip(self.members)
            .map(|((pass, array), member)| pass.by_rows((!member.row_local).then_some(array)))
            .collect();
        let runs = self.drivers.first().and_then(Driver::row_runs);
        let mut locals: Vec<Vec<f64>> = vec![Vec::new(); self.members.len()];
        let mut start = chunk.start;
        while start < chunk.end {
            let mut end = (start + PIECE).min(chunk.end);
            while end < chunk.end && rows[end] == rows[end - 1] {
                end += 1;
            }
            let first = rows[start] as usize;
            let last = rows[end - 1] as usize;
            // Rows of a few entries each run faster in blocks of entries.
            let long_rows = end - start >= ROW_ENTRIES * (last + 1 - first);
            if let (Some(row_passes), Some(runs), true) = (row_passes.as_deref(), &runs, long_rows)
            {
                self.piece_by_rows(row_passes, runs, start..end, targets)?;
                start = end;
                continue;
            }
            let mut target = 0;
            for (m, member) in self.members.iter().enumerate() {
                // A row-local result's buffer, taken out while it is written.
                let mut own = std::mem::take(&mut locals[m]);
                let local = self.producers[m].map(|p| (locals[p].as_slice(), first));
                let pass = Pass {
                    local,
                    ..passes[m].clone()
                };
                if member.row_local {
                    own.clear();
                    own.resize(last + 1 - first, 0.0);
                    pass.add(&arrays[m], start..end, &mut own, first)?;
                    locals[m] = own;
                } else {
                    let (out, first) = targets[target].cells();
                    pass.add(&arrays[m], start..end, out, first)?;
                    target += 1;
                }
            }
            debug_assert_eq!(target, stored.len());
            start = end;
        }
        Ok(())
    }
}

/// An offset split for a walk along a driver's rows
/// ([`Address::along_rows`]): the stride of the row's coordinate, and the
/// second dimension's coordinates and stride when it moves the offset.
type AlongRows<'c> = (usize, Option<Moving<'c>>);

/// A driver dimension's coordinates and the stride they move an offset by.
type Moving<'c> = (&'c [i64], usize);

/// A member of a fused pass read row by row ([`Pass::by_rows`]).
struct RowPass<'p> {
    /// The driver's values; `None` for its pattern.
    x: Option<&'p [f64]>,
    /// The operands, in the pass's order.
    factors: Vec<RowFactor<'p>>,
    /// Where an entry adds in the output array, split as
    /// [`Address::along_rows`] splits it; `None` for a row-local result.
    out: Option<AlongRows<'p>>,
}

/// An operand of a [`RowPass`].
enum RowFactor<'p> {
    /// The row-local input: one value per row.
    Local,
    /// A cell that stays the same along a row, at the row's coordinate
    /// times `row`.
    Fixed { values: &'p [f64], row: usize },
    /// A cell that moves along a row: at the row's coordinate times `row`
    /// plus the entry's coordinate in `moving.0` times `moving.1`.
    Moving {
        values: &'p [f64],
        row: usize,
        moving: Moving<'p>,
    },
}

/// The scalars of a [`RowPass`]'s entries along one row: the driver's
/// value times the row's fixed cells `before` the moving one, the moving
/// cell, and the fixed cells `after` it, in that order (the pass's).
struct RowScalars<'r> {
    x: Option<&'r [f64]>,
    before: &'r [f64],
    moving: Option<(&'r [f64], Moving<'r>)>,
    after: &'r [f64],
}

impl RowScalars<'_> {
    /// `sum` plus the scalars of `entries`, added in order.
    #[inline(always)]
    fn sum(&self, entries: Range<usize>, mut sum: f64) -> f64 {
        self.each(entries, iter::repeat(()), |(), scalar| sum += scalar);
        sum
    }

    /// Adds the scalar of every entry of `entries` into `out` at the
    /// entry's coordinate in `coords` times `stride`.
    #[inline(always)]
    fn scatter(&self, entries: Range<usize>, out: &mut [f64], (coords, stride): Moving<'_>) {
        let coords = coords[entries.clone()].iter();
        if stride == 1 {
            self.each(entries, coords, move |&c, scalar| out[c as usize] += scalar);
        } else {
            self.each(entries, coords, move |&c, scalar| {
                out[c as usize * stride] += scalar
            });
        }
    }

    /// `visit(lane, scalar)` for every entry of `entries`, one of the
    /// row's runs, and the next of `lanes` (one per entry); the common
    /// shapes (a matrix-vector product's cell, a row's value or two) in
    /// loops of their own.
    #[inline(always)]
    fn each<L>(
        &self,
        entries: Range<usize>,
        lanes: impl Iterator<Item = L>,
        mut visit: impl FnMut(L, f64),
    ) {
        match (self.x, self.before, self.moving, self.after) {
            (Some(x), [], Some((values, (coords, 1))), []) => {
                let x = &x[entries.clone()];
                for ((&x, &c), lane) in x.iter().zip(&coords[entries]).zip(lanes) {
                    visit(lane, x * values[c as usize]);
                }
            }
            (Some(x), [], Some((values, (coords, stride))), []) => {
                let x = &x[entries.clone()];
                for ((&x, &c), lane) in x.iter().zip(&coords[entries]).zip(lanes) {
                    visit(lane, x * values[c as usize * stride]);
                }
            }
            (Some(x), &[a], None, []) => {
                for (&x, lane) in x[entries].iter().zip(lanes) {
                    visit(lane, x * a);
                }
            }
            (Some(x), &[a, b], None, []) => {
                for (&x, lane) in x[entries].iter().zip(lanes) {
                    visit(lane, x * a * b);
                }
            }
            _ => {
                for (e, lane) in entries.zip(lanes) {
                    let mut scalar = self.x.map_or(1.0, |x| x[e]);
                    for &cell in self.before {
                        scalar *= cell;
                    }
                    if let Some((values, (coords, stride))) = self.moving {
                        scalar *= values[coords[e] as usize * stride];
                    }
                    for &cell in self.after {
                        scalar *= cell;
                    }
                    visit(lane, scalar);
                }
            }
        }
    }
}

impl Fused<'_, '_> {
    /// One piece of [`Fused::chunk`] when every member reads its entries
    /// row by row (`row_passes`, [`Pass::by_rows`]): row by row (runs of
    /// one first coordinate `rows`), every member over a row's entries
    /// before the next row, so the row's entries are read from memory once and a
    /// row-local result is one value held while its row runs. Each
    /// entry's scalar is the product [`Pass::blocks`] takes, in its order,
    /// and each cell sums its entries in the same order as
    /// [`Pass::add`].
    fn piece_by_rows(
        &self,
        row_passes: &[RowPass<'_>],
        runs: &RowRuns<'_>,
        chunk: Range<usize>,
        targets: &mut [Target<'_>],
    ) -> Result<()> {
        let mut row_values = vec![0.0; self.members.len()];
        // Each stored member's array, and the cell it starts at.
        let mut outs: Vec<(&mut [f64], usize)> = targets.iter_mut().map(Target::cells).collect();
        // The cells before the moving one and after it, for the row.
        let (mut before, mut after) = ([0.0; ROW_FIXED], [0.0; ROW_FIXED]);
        let mut work = 0;
        for (row, Range { start, end }) in runs.rows(chunk) {
            let mut target = 0;
            for (m, pass) in row_passes.iter().enumerate() {
                let local = self.producers[m].map_or(0.0, |p| row_values[p]);
                let (mut fixed_before, mut fixed_after) = (0, 0);
                let mut moving = None;
                for factor in &pass.factors {
                    let cell = match *factor {
                        RowFactor::Local => local,
                        RowFactor::Fixed {
                            values,
                            row: stride,
                        } => values[row * stride],
                        RowFactor::Moving {
                            values,
                            row: stride,
                            moving: along,
                        } => {
                            moving = Some((&values[row * stride..], along));
                            continue;
                        }
                    };
                    if moving.is_none() {
                        before[fixed_before] = cell;
                        fixed_before += 1;
                    } else {
                        after[fixed_after] = cell;
                        fixed_after += 1;
                    }
                }
                let scalars = RowScalars {
                    x: pass.x,
                    before: &before[..fixed_before],
                    moving,
                    after: &after[..fixed_after],
                };
                let Some((row_stride, along)) = pass.out else {
                    row_values[m] = scalars.sum(start..end, 0.0);
                    continue;
                };
                let (out, first) = &mut outs[target];
                target += 1;
                let at = row * row_stride - *first;
                match along {
                    Some(moving) => scalars.scatter(start..end, &mut out[at..], moving),
                    None => out[at] = scalars.sum(start..end, out[at]),
                }
            }
            work += end - start;
            if work >= CHECK_WORK {
                self.control.tick();
                self.control.check()?;
                work = 0;
            }
        }
        Ok(())
    }
}

/// A pass's entries as `query`'s result: a count's (a `BIGINT` query's)
/// as integers, whole numbers below 2^53 and so exact in doubles.
fn finished(query: &PhysicalQuery, runs: Vec<Entries<f64>>) -> Result<Finished> {
    Ok(if query.ty == ValueType::Int64 {
        Finished::Int(
            runs.into_iter()
                .map(|run| run.map(|value| Ok(value as i64)))
                .collect::<Result<_>>()?,
        )
    } else {
        Finished::Float(runs)
    })
}

/// The non-zero cells of a count's output array `out` (whole numbers
/// below 2^53, so exact in doubles) as integer entries in output order.
fn counts(query: &PhysicalQuery, array: &ArrayOut, out: &[f64]) -> Entries<i64> {
    let mut entries = Entries::new(query.output.len());
    let mut key = vec![0i64; query.output.len()];
    for (cell, &value) in out.iter().enumerate() {
        if value == 0.0 && !query.output.is_empty() {
            continue;
        }
        let mut rest = cell;
        for (slot, &stride) in key.iter_mut().zip(&array.strides) {
            *slot = (rest / stride) as i64;
            rest %= stride;
        }
        entries.push(key.iter().copied(), value as i64);
    }
    entries.increasing = true;
    entries
}

/// Independent partial sums of [`lanes_dot`] and [`lanes_sum`].
const LANES: usize = 8;

/// `Σ a[r] · b[r]` over equally long slices, with [`LANES`] partial sums
/// (lane `l` takes the cells `r ≡ l` modulo [`LANES`]) added up at the
/// end: independent additions that the compiler vectorizes, where one
/// running sum waits on each addition in turn. The order is fixed by the
/// length alone, so a result does not depend on the thread count.
#[inline]
fn lanes_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0; LANES];
    let (a_body, a_tail) = a.split_at(a.len() - a.len() % LANES);
    let (b_body, b_tail) = b.split_at(a_body.len());
    for (x, y) in a_body.chunks_exact(LANES).zip(b_body.chunks_exact(LANES)) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    let tail: f64 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f64>() + tail
}

/// `Σ a[r]` with [`LANES`] partial sums, as [`lanes_dot`].
#[inline]
fn lanes_sum(a: &[f64]) -> f64 {
    let mut lanes = [0.0; LANES];
    let (body, tail) = a.split_at(a.len() - a.len() % LANES);
    for x in body.chunks_exact(LANES) {
        for (lane, x) in lanes.iter_mut().zip(x) {
            *lane += x;
        }
    }
    lanes.iter().sum::<f64>() + tail.iter().sum::<f64>()
}

/// `row[r] *= values[offset + r · stride]` for every cell of `row`.
#[inline]
fn multiply_row(row: &mut [f64], values: &[f64], offset: usize, stride: usize) {
    let len = row.len();
    if stride == 1 {
        for (cell, &v) in row.iter_mut().zip(&values[offset..offset + len]) {
            *cell *= v;
        }
    } else {
        for (r, cell) in row.iter_mut().enumerate() {
            *cell *= values[offset + r * stride];
        }
    }
}

fn internal(query: &PhysicalQuery, what: &str) -> Error {
    Error::Internal(format!("the sparse-driven run of '{}' {what}", query.name))
}
