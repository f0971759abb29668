//! The physical optimizer (Galley section 6): the loop order and output
//! formats of every physical query, chosen by estimated cost while the
//! planner ([`crate::exec::planner`]) builds the plan.
//!
//! - **Loop order.** A Selinger-style dynamic program over the sets of
//!   variables bound so far: binding the variables `S` in the outer loops
//!   visits about `|π_S(J)|` assignments, where `J` is the join of the
//!   inputs the body cannot do without (those whose absence makes the
//!   expression its fill, as the factors of a product); the estimator
//!   bounds that projection (for the exact search, every projection at
//!   once when the estimator can: the chain bound searches its lattice
//!   once, see [`SparsityEstimator::projections`]). That holds for a
//!   loop that some input intersects under the outer loops; a loop that
//!   only reads an input's top level visits all of it per outer
//!   assignment, and one that no input restricts the whole dimension
//!   ([`Support`]: which inputs restrict a loop, as the kernel finds
//!   it). The key also holds the inputs that must be re-indexed because
//!   the order so far reads them against their stored order and against
//!   every index cached with the tensor: a re-index costs `nnz · log₂
//!   nnz` (an index that [`Tensor::index`] built before is free; an
//!   earlier result's costs a visit per entry, and nothing in an order
//!   an earlier query of the plan reads it in), and how many output
//!   variables lead in the output's own order while only output
//!   variables are bound: when they end, the sort that puts a
//!   statement's output (or a nested aggregate's result) back in its
//!   order is charged ([`OrderSearch::sort_cost`]).
//!   Only variables sharing an input with the outer loops extend an
//!   order while there are any, so joins stay connected. Queries with
//!   more than [`EXACT_VARIABLES`] loop variables, or whose search exceeds
//!   [`ESTIMATE_BUDGET`] estimates, take the greedy order: each next
//!   variable the one whose loop visits fewest assignments. When the
//!   inputs' re-index choices multiply the keys of one level past
//!   [`LEVEL_STATES`], the cheapest of them go on. With
//!   [`Phase::Trivial`](super::Phase::Trivial) on, the greedy order is
//!   found first and kept when the loops would run in less time than the
//!   exact search would take
//!   ([`kept_as_written`](super::logical::kept_as_written) of the loop
//!   variables; only with an estimator whose estimates are upper bounds).
//! - **Loop trees.** With [`Phase::Factorize`](super::Phase::Factorize)
//!   on, a `SUM` of a product has its loop nest made a tree
//!   ([`PhysicalQuery::factorize`]): loops that share no input with each
//!   other, given the loops around them, run one after the other and their
//!   sums multiply; among the output loops, a summed loop joined to no
//!   output variable still unbound runs ahead of them. The search costs
//!   each loop by the assignments of the loops that will enclose it in
//!   that tree ([`OrderSearch::enclosing`]), so it prefers orders whose
//!   trees branch early; a loop over a twin of the variable bound just
//!   before it (a leaf of the tree like it) repeats that sum
//!   ([`crate::exec::plan::Loop::repeats`]) and is costed as one product
//!   per assignment of the loops around it.
//! - **Dense kernels.** With [`Phase::Dense`](super::Phase::Dense) on, a
//!   query that is one matrix product ([`PhysicalQuery::contraction`])
//!   runs on the dense path when that is estimated cheaper than its loop
//!   nest: both operands in arrays, `m·n·k` multiply-adds at 16 to a loop
//!   visit, plus a quarter of a visit per cell of the three arrays, which
//!   hold at most 2^27 cells; or, for two matrices with declared tiled indexes of the
//!   same tile size along `k` ([`crate::exec::tiled`]), over their tiles:
//!   the multiply-adds of the pairs of present tiles that meet, at 16 to a
//!   visit, plus a quarter of a visit per cell of `C` (nothing is
//!   scattered), so a fully
//!   dense product costs a little less than the arrays and a block-sparse
//!   one a fraction of them. Products of operands that fill most of their
//!   cells take the kernel (Gram matrices of factor matrices); a product
//!   of two sparse operands keeps the loops, whose cost follows their
//!   entries.
//! - **Sparse-driven products.** With the same phase on, a product over
//!   one stored input whose other inputs are read as dense arrays
//!   ([`PhysicalQuery::driven_by`]) runs as one pass over that input's
//!   entries when that is cheaper still: half a visit per entry, the free
//!   variable's cells at 4 multiply-adds to a visit per input reading
//!   them, and a quarter of a visit per cell of the arrays it fills
//!   (scattered inputs, a dense result; a row sum that the `fuse` phase
//!   will compute in the same pass is not scattered; a result of a row per
//!   distinct prefix of the driver's entries, [`PhysicalQuery::row_prefix`],
//!   counts those rows' cells, the prefixes the statistics' or, before
//!   they are computed, the fewer of the driver's entries and the
//!   prefix's cells); an input with at
//!   most one non-zero cell in 8, listed row by row instead, costs a loop
//!   visit per cell of its row an entry visits, and two array cells per
//!   listed cell. SpMV, SpMM, SDDMM,
//!   MTTKRP and element-wise products with dense factors take it.
//! - **Joined pairs.** With the same phase on, a product that neither
//!   runs as a dense product nor sparse-driven, of two tables joined on
//!   their shared variables whose output tells each one's entries apart
//!   ([`PhysicalQuery::as_paired`]: a join's pairs written out, as the
//!   self-join of line items through their part), always runs as one pass
//!   over the pairs: it visits exactly the pairs the loops would write,
//!   without their levels, accumulator or re-indexed inputs, and skips
//!   those a factor that is 0 on one side rules out.
//! - **Drivers.** Every loop keeps [`Driver::Smallest`]: at run time the
//!   input with the shortest fiber under the current outer coordinates is
//!   iterated and the others are looked up. That is the choice Galley
//!   makes from estimates (the fewest entries given the outer loops), made
//!   with the actual fiber lengths instead, per visit, so skewed degrees
//!   cannot mislead it.
//! - **Output formats.** Levels written in loop order are sorted; the
//!   others accumulate in a dense array when their space is small (at
//!   most 2^16 coordinates); in a space of at most 2^20, in a dense array
//!   when the estimated output fills at least an eighth of it and in a
//!   bytemap when at least 1/64; in a hash table otherwise.
//!
//! [`Tensor::index`]: crate::storage::Tensor::index

use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashMap;

use crate::error::Result;
use crate::exec::plan::{
    Contraction, DenseKernel, DrivenOutput, Driver, Node, OutputFormat, PhysicalQuery, Role,
    SPARSE_ROW_FILL, Source, Term,
};
use crate::exec::planner::{Choose, QueryChoices};
use crate::ir::{IndexTerm, Value};
use crate::storage::Tensor;
use crate::storage::statistics::DimSet;

use super::estimate::{AliasSource, Aliases, Leaf, SparsityEstimator};
use super::lattice::bits;
use super::logical::kept_as_written;
use super::{OptimizerOptions, Phase};

/// Queries with at most this many loop variables get the exact search.
pub const EXACT_VARIABLES: usize = 12;

/// The most estimates the exact search of one query may ask for.
pub const ESTIMATE_BUDGET: usize = 1_024;

/// The most states one level of the exact search keeps (the cheapest),
/// when the inputs' re-index choices multiply them.
pub const LEVEL_STATES: usize = 256;

/// Random-write spaces up to this many coordinates are always dense.
const SMALL_SPACE: f64 = 65_536.0;

/// Random-write spaces above this many coordinates are never dense nor
/// bytemaps: the array (16 bytes a coordinate) is set up before the first
/// write, and the estimated fill it would pay for is an upper bound. On
/// yeast `query_dense_16_133`, a bytemap of 9.7 million coordinates
/// chosen for an estimated 714,555 entries (21,665 in fact) took most of
/// the query's 25 to 520 ms.
const LARGE_SPACE: f64 = (1u64 << 20) as f64;

/// Multiply-adds of the dense matrix kernel per unit of the loop nests'
/// cost (one assignment visited): the blocked kernel does a multiply-add
/// in about a tenth of a nanosecond, a loop nest visits an assignment in
/// a few nanoseconds.
const DENSE_MADDS_PER_VISIT: f64 = 16.0;

/// Multiply-adds per unit of the loop nests' cost on the sparse-driven
/// path's rows: each entry's row update streams rows of its inputs, about
/// four times slower than the blocked kernel.
const ENTRY_MADDS_PER_VISIT: f64 = 4.0;

/// Units of the loop nests' cost per driver entry on the sparse-driven
/// path: the other inputs are read at a computed offset, not searched, and
/// no index is built or walked.
const DRIVEN_ENTRY: f64 = 0.5;

/// Units of the loop nests' cost per driver entry, beyond
/// [`DRIVEN_ENTRY`], of a sparse-driven result written grouped
/// ([`DrivenOutput::Grouped`]): the entry's key and value written, sorted
/// and added up, about one loop visit.
const GROUPED_ENTRY: f64 = 1.0;

/// Units of the loop nests' cost per non-zero cell of an input's row that
/// the sparse-driven path visits for a driver entry when it lists the
/// input's rows ([`Driven::listed`](crate::exec::plan::Driven::listed)):
/// read from the list and added into the result at a computed offset,
/// about a loop visit.
const LISTED_CELL: f64 = 1.0;

/// Units of the loop nests' cost per cell of an array the sparse-driven
/// path fills (cleared, scattered into and read back, or a dense result):
/// a cell costs about a nanosecond, a loop visit a few.
const ARRAY_CELL: f64 = 0.25;

/// The most cells the dense path's three arrays may hold together (1 GiB
/// of floats); a larger product runs as loops.
const DENSE_CELLS: f64 = (1u64 << 27) as f64;

/// The physical optimizer: implements the planner's [`Choose`] with the
/// estimates of `estimator` and the statistics the logical optimizer kept
/// for the program's queries.
pub struct PhysicalOptimizer<'a, E: SparsityEstimator> {
    estimator: &'a E,
    stats: &'a Aliases<E::Stats>,
    /// Whether loop nests become trees where the algebra allows
    /// ([`Phase::Factorize`](super::Phase::Factorize)).
    factorize: bool,
    /// Whether matrix products may run as one dense kernel
    /// ([`Phase::Dense`](super::Phase::Dense)).
    dense: bool,
    /// Whether sparse-driven queries over one table will run as one pass
    /// ([`Phase::Fuse`](super::Phase::Fuse)).
    fuse: bool,
    /// Whether a cheap enough greedy order is kept without the exact
    /// search ([`Phase::Trivial`](super::Phase::Trivial)).
    trivial: bool,
    /// The intermediate row sums planned so far to run sparse-driven: each
    /// result's name and its driver. With `fuse`, a later query driven by
    /// the same table that reads one at its first variable reads it
    /// row-local, not scattered.
    row_sums: Vec<(String, Arc<Tensor>)>,
    /// The estimated statistics of the nested aggregates planned so far
    /// (the queries the logical plan does not name, `#1`, ...).
    nested: Aliases<E::Stats>,
    /// Per earlier result, the level orders the queries planned so far
    /// re-index it in ([`Earlier::reindexed`]).
    reindexed: HashMap<String, Vec<Vec<usize>>>,
    /// The estimated cost of every query planned so far, in plan order.
    pub costs: Vec<f64>,
    /// The time spent costing loop trees (the `factorize` phase).
    pub factorize_time: Duration,
    /// The time spent costing dense kernels (the `dense` phase).
    pub dense_time: Duration,
}

impl<'a, E: SparsityEstimator> PhysicalOptimizer<'a, E> {
    /// A physical optimizer that reads the estimated statistics of
    /// earlier results in `stats` and runs the phases within its own that
    /// `options` does not disable: it factorizes loop nests
    /// (`factorize`), runs matrix products densely where that is
    /// estimated cheaper (`dense`), costs sparse-driven queries as the
    /// `fuse` phase will run them (`fuse`), and keeps cheap greedy orders
    /// (`trivial`).
    pub fn new(estimator: &'a E, stats: &'a Aliases<E::Stats>, options: &OptimizerOptions) -> Self {
        PhysicalOptimizer {
            estimator,
            stats,
            factorize: options.runs(Phase::Factorize),
            dense: options.runs(Phase::Dense),
            fuse: options.runs(Phase::Fuse),
            trivial: options.runs(Phase::Trivial) && estimator.bounds(),
            row_sums: Vec::new(),
            nested: Aliases::new(),
            reindexed: HashMap::new(),
            costs: Vec::new(),
            factorize_time: Duration::ZERO,
            dense_time: Duration::ZERO,
        }
    }
}

impl<E: SparsityEstimator> Choose for PhysicalOptimizer<'_, E> {
    fn choose(&mut self, _: usize, query: &PhysicalQuery, bound: &[usize]) -> Result<QueryChoices> {
        let factorize = self.factorize && query.sums_a_product();
        let earlier = Earlier {
            planned: self.stats,
            nested: &self.nested,
            reindexed: &self.reindexed,
        };
        let Ok(mut search) = OrderSearch::new(self.estimator, &earlier, query, bound, factorize)
        else {
            self.costs.push(f64::NAN);
            return Ok(QueryChoices::default());
        };
        let (order, cost) = if bound.len() > EXACT_VARIABLES {
            search.greedy()
        } else if self.trivial {
            let greedy = search.greedy();
            if kept_as_written(greedy.1, bound.len()) {
                greedy
            } else {
                search.exact().unwrap_or(greedy)
            }
        } else {
            search.exact().unwrap_or_else(|| search.greedy())
        };
        let begin = Instant::now();
        let dense = self
            .dense
            .then(|| query.contraction())
            .flatten()
            .and_then(|product| cheapest_kernel(query, &product))
            .filter(|&(_, dense)| dense < cost);
        let kernel_cost = dense.map_or(cost, |(_, dense)| dense);
        let row_sums = if self.fuse { &self.row_sums[..] } else { &[] };
        let entries = |k: usize| match &query.inputs[k].source {
            Source::Table { tensor, .. } => Some(tensor.nnz() as f64),
            Source::Result(name) => match earlier.get(name)? {
                AliasSource::Stored(tensor) => Some(tensor.nnz() as f64),
                AliasSource::Estimated { stats, .. } => Some(self.estimator.estimate(stats)),
            },
        };
        let driven = self
            .dense
            .then(|| cheapest_driver(query, row_sums, &entries))
            .flatten()
            .filter(|&(_, driven, _)| driven < kernel_cost);
        let dense = dense.filter(|_| driven.is_none());
        if let Some((driver, _, _)) = driven {
            self.note_row_sum(query, driver);
        }
        // A join's pairs written out: the pass visits the pairs the loops
        // would, without their levels, and skips the pairs the loops
        // would not reach (a factor that is 0 on one side).
        let paired =
            self.dense && driven.is_none() && dense.is_none() && query.as_paired().is_some();
        self.dense_time += begin.elapsed();
        self.costs
            .push(driven.map_or(kernel_cost, |(_, driven, _)| driven));
        self.factorize_time += search.tree_time;
        if driven.is_none() && dense.is_none() && !paired {
            self.note_reindexes(query, &order, &search);
        }
        let accumulator = search.accumulator(&order);
        if query.role == Role::Intermediate
            && !self.stats.contains_key(&query.name)
            && let Ok(stats) = search.output_stats()
        {
            let indices = query
                .output
                .iter()
                .map(|&v| (query.vars[v].name.clone(), query.vars[v].size))
                .collect();
            self.nested.insert(
                query.name.clone(),
                AliasSource::Estimated { indices, stats },
            );
        }
        Ok(QueryChoices {
            loop_order: Some(
                order
                    .iter()
                    .map(|&v| query.vars[search.vars[v]].name.clone())
                    .collect(),
            ),
            drivers: vec![Driver::Smallest; order.len()],
            input_format: None,
            accumulator: Some(accumulator),
            factorize,
            dense: dense.map(|(kernel, _)| kernel),
            driven: driven.map(|(driver, _, _)| driver),
            listed: driven.is_some_and(|(_, _, listed)| listed),
            paired,
            work: Some(cost),
        })
    }
}

impl<E: SparsityEstimator> PhysicalOptimizer<'_, E> {
    /// Notes the level order in which the loop order `order` (of
    /// `search`'s variables) reads each earlier result of `query`, where
    /// that is not the result's own ([`Earlier::reindexed`]).
    fn note_reindexes<S: SparsityEstimator>(
        &mut self,
        query: &PhysicalQuery,
        order: &[usize],
        search: &OrderSearch<'_, S>,
    ) {
        for (access, info) in query.inputs.iter().zip(&search.inputs) {
            let Source::Result(name) = &access.source else {
                continue;
            };
            let levels = info.levels(order);
            if levels.len() != info.dims.len() || levels.iter().copied().eq(0..levels.len()) {
                continue;
            }
            let orders = self.reindexed.entry(name.clone()).or_default();
            if !orders.contains(&levels) {
                orders.push(levels);
            }
        }
    }

    /// Records `query`, planned to run driven by input `driver`, when its
    /// result is an intermediate vector over the driver's first variable.
    fn note_row_sum(&mut self, query: &PhysicalQuery, driver: usize) {
        if let Source::Table { tensor, .. } = &query.inputs[driver].source
            && query.sums_rows_of(driver)
        {
            self.row_sums.push((query.name.clone(), Arc::clone(tensor)));
        }
    }
}

/// The input to run `query` over entry by entry on the sparse-driven path
/// ([`PhysicalQuery::driven_by`]), with its estimated cost in the loop
/// nests' units and whether it lists an input's rows, if one can drive
/// it: a stored table whose entries are visited at [`DRIVEN_ENTRY`] a
/// unit each, plus the cells of the free variable's rows multiplied per
/// entry at [`ENTRY_MADDS_PER_VISIT`] a unit, plus [`ARRAY_CELL`] a cell
/// of the arrays: the inputs whose entries do not fill their dimensions
/// (scattered, or a cell per driver entry for those read at its entries)
/// and a dense result. The input whose rows can be listed
/// ([`PhysicalQuery::listable_rows`]) is listed when at most one cell in
/// [`SPARSE_ROW_FILL`] of it is non-zero by `entries` (an input's stored
/// or estimated entries): two cells per entry and one per row, and
/// [`LISTED_CELL`] per cell of its row an entry visits. An input that
/// is one of `row_sums` driven by the same table and read at its first
/// variable is not scattered: the `fuse` phase computes it row by row in
/// the same pass. `None` when no input can drive it or the arrays would
/// exceed [`DENSE_CELLS`].
fn cheapest_driver(
    query: &PhysicalQuery,
    row_sums: &[(String, Arc<Tensor>)],
    entries: &dyn Fn(usize) -> Option<f64>,
) -> Option<(usize, f64, bool)> {
    let cells = |vars: &mut dyn Iterator<Item = usize>| -> f64 {
        vars.map(|v| query.vars[v].size as f64).product()
    };
    let input_cells = |k: usize| -> f64 {
        match &query.inputs[k].source {
            Source::Table { tensor, .. } if tensor.is_full() => 0.0,
            _ => cells(&mut query.inputs[k].terms.iter().filter_map(|t| match t {
                Term::Var(v) => Some(*v),
                Term::Const(_) => None,
            })),
        }
    };
    (0..query.inputs.len())
        .filter_map(|k| {
            let driven = query.driven_by(k)?;
            let Source::Table { tensor, .. } = &query.inputs[k].source else {
                return None;
            };
            let first = query.inputs[k].terms.first();
            let row_local = |d: usize| {
                let access = &query.inputs[d];
                let Source::Result(name) = &access.source else {
                    return false;
                };
                access.terms.first() == first
                    && access.terms.len() == 1
                    && row_sums
                        .iter()
                        .any(|(sum, driver)| sum == name && Arc::ptr_eq(driver, tensor))
            };
            // The input whose rows are listed by their non-zero cells, with
            // its entries and rows; an integer one always is (already in
            // `driven.listed`).
            let listed = query.listable_rows(&driven).and_then(|d| {
                let all = input_cells(d);
                let nnz = entries(d).unwrap_or(all);
                let width = query.inputs[d].terms.last().and_then(|t| match t {
                    Term::Var(v) => Some(query.vars[*v].size.max(1) as f64),
                    Term::Const(_) => None,
                })?;
                let sparse = nnz * SPARSE_ROW_FILL as f64 <= all;
                (sparse || driven.listed == Some(d)).then_some((d, nnz, all / width))
            });
            let scattered: f64 = driven
                .dense
                .iter()
                .filter(|&&d| !row_local(d))
                .map(|&d| match listed {
                    Some((k, nnz, rows)) if k == d => 2.0 * nnz + rows,
                    _ if driven.at_entries.contains(&d) => tensor.nnz() as f64,
                    _ => input_cells(d),
                })
                .sum();
            // The result array's cells, and the work per entry of a
            // grouped result.
            let (result, grouped) = match driven.output {
                DrivenOutput::Array => match query.row_prefix(&driven) {
                    Some(prefix) => {
                        let width = driven.free.map_or(1.0, |v| query.vars[v].size as f64);
                        (prefixes(tensor, prefix) * width, 0.0)
                    }
                    None => (cells(&mut query.output.iter().copied()), 0.0),
                },
                DrivenOutput::Entries => (0.0, 0.0),
                DrivenOutput::Grouped => (0.0, GROUPED_ENTRY),
            };
            if scattered + result > DENSE_CELLS {
                return None;
            }
            let row = driven.free.map_or(0.0, |v| {
                if let Some((_, nnz, rows)) = listed {
                    return nnz / rows.max(1.0) * LISTED_CELL;
                }
                let readers = driven
                    .dense
                    .iter()
                    .filter(|&&d| query.inputs[d].terms.contains(&Term::Var(v)))
                    .count();
                query.vars[v].size as f64 * readers as f64 / ENTRY_MADDS_PER_VISIT
            });
            let work = tensor.nnz() as f64 * (DRIVEN_ENTRY + grouped + row);
            Some((
                k,
                (scattered + result) * ARRAY_CELL + work,
                listed.is_some(),
            ))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// The distinct prefixes of `prefix` dimensions among a table's entries:
/// the statistics' count when they are computed, else at most its
/// entries and the prefix's cells.
fn prefixes(tensor: &Tensor, prefix: usize) -> f64 {
    let dims: Vec<usize> = (0..prefix).collect();
    let counted = tensor
        .computed_statistics()
        .zip(DimSet::of(&dims))
        .and_then(|(statistics, dims)| statistics.degree(dims, DimSet::EMPTY));
    match counted {
        Some(count) => count as f64,
        None => tensor.dims()[..prefix]
            .iter()
            .map(|d| d.size as f64)
            .product::<f64>()
            .min(tensor.nnz() as f64),
    }
}

/// The cheapest way to run `product` on the dense path, with its
/// estimated cost in the loop nests' units. Both operands scattered:
/// [`ARRAY_CELL`] a cell of the three arrays scattered and read back, plus `m·n·k`
/// multiply-adds at [`DENSE_MADDS_PER_VISIT`] a unit. Both operands read
/// through declared tiled indexes: the multiply-adds of the pairs of
/// present tiles that meet, at [`DENSE_MADDS_PER_VISIT`] a unit, and `C`'s
/// array only. `None` when no way keeps the arrays within
/// [`DENSE_CELLS`].
fn cheapest_kernel(query: &PhysicalQuery, product: &Contraction) -> Option<(DenseKernel, f64)> {
    let (m, n, k) = product.shape(query);
    let (m, n, k) = (m as f64, n as f64, k as f64);
    let arrays = (
        DenseKernel::Arrays,
        m * k + k * n + m * n,
        m * n * k / DENSE_MADDS_PER_VISIT,
    );
    // Over tiles: the multiply-adds of the pairs of present tiles (their
    // cells within the dimensions), and only `C`'s array (the tiles are
    // built with their indexes).
    let tiles = crate::exec::tiled::operands(query, product).map(|tiled| {
        (
            DenseKernel::Tiles,
            m * n,
            tiled.multiply_adds(product.shape(query)) / DENSE_MADDS_PER_VISIT,
        )
    });
    [Some(arrays), tiles]
        .into_iter()
        .flatten()
        .filter(|&(_, cells, _)| cells <= DENSE_CELLS)
        .map(|(kernel, cells, work)| (kernel, cells * ARRAY_CELL + work))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// The loop-order search of one query. Variables are numbered by their
/// position in `vars` (the query's loop variables).
struct OrderSearch<'a, E: SparsityEstimator> {
    estimator: &'a E,
    query: &'a PhysicalQuery,
    /// The loop variables (positions in the query's variables).
    vars: Vec<usize>,
    /// The join of the required inputs, over the loop variables.
    join: E::Stats,
    /// Where the body differs from its fill (what a loop iterates).
    support: Support,
    /// The output variables (bits over the loop variables).
    output: u64,
    /// Whether writing the output out of its order is charged its sort
    /// (a statement's output or a nested aggregate's result, see
    /// [`OrderSearch::sort_cost`]).
    sorted_output: bool,
    /// Per input: its loop variables (bits) and the orders of its cached
    /// indexes, with the cost of re-indexing it.
    inputs: Vec<InputInfo>,
    /// Estimated assignments per set of outer variables, for every set
    /// when the estimator gives them at once, else as asked.
    table: Option<Vec<f64>>,
    visits: HashMap<u64, f64>,
    estimates: usize,
    /// Whether the chosen order will be factorized: a loop then visits the
    /// assignments of the loops that enclose it, not of all outer loops.
    factorized: bool,
    /// Per loop variable, its group of twins (the least loop variable of
    /// the group, [`PhysicalQuery::twins`]) when it has a twin and the
    /// order is factorized; `twinned` has their bits.
    twins: Vec<Option<usize>>,
    twinned: u64,
    /// The time spent finding the twins and the enclosing loops (the
    /// `factorize` phase's share of the search).
    tree_time: Duration,
}

/// Per loop variable (a position in `vars`), the least loop variable
/// of its group of twins ([`PhysicalQuery::twins`]: swapping any two of a
/// group maps the inputs onto themselves), for a variable with a twin;
/// empty unless the order is `factorized`.
fn twin_groups(query: &PhysicalQuery, vars: &[usize], factorized: bool) -> Vec<Option<usize>> {
    if !factorized {
        return Vec::new();
    }
    let twins = query.twins();
    let mut groups: Vec<Option<usize>> = vars
        .iter()
        .map(|&v| twins[v].and_then(|u| vars.iter().position(|&w| w == u)))
        .collect();
    // The least member of a group is its own group when it has a twin.
    for k in 0..groups.len() {
        if let Some(g) = groups[k]
            && let Some(root) = groups.get_mut(g)
        {
            root.get_or_insert(g);
        }
    }
    groups
}

/// The statistics of the results computed before a query: those the
/// logical plan estimated, and those of the nested aggregates planned
/// before it.
struct Earlier<'s, S> {
    planned: &'s Aliases<S>,
    nested: &'s Aliases<S>,
    /// Per result, the level orders earlier queries re-index it in
    /// (positions of its dimensions): the executor keeps those indexes
    /// with the result, so a later query reads them for free.
    reindexed: &'s HashMap<String, Vec<Vec<usize>>>,
}

impl<'s, S> Earlier<'s, S> {
    fn get(&self, name: &str) -> Option<&'s AliasSource<S>> {
        self.planned.get(name).or_else(|| self.nested.get(name))
    }
}

/// A state of the exact search: the variables bound (bits), the inputs
/// re-indexed (bits), while only output variables are bound how many of
/// them lead in the output's own order ([`OrderSearch::sorted_run`]), and
/// the last variable when its twin is still to come
/// ([`OrderSearch::pending_twin`]).
type OrderKey = (u64, u64, usize, usize);

/// [`OrderKey`]'s last field when no twin is pending.
const NO_TWIN: usize = usize::MAX;

/// The cheapest order found for one key, with its cost.
type Partial = (f64, Vec<usize>);

/// What the search knows about one input.
struct InputInfo {
    /// The loop variables of each dimension (`None`: a constant).
    dims: Vec<Option<usize>>,
    /// Level orders that are free to read: the stored order and cached
    /// indexes (a result computed by the plan: its own order).
    free_orders: Vec<Vec<usize>>,
    /// The cost of building the index another order needs.
    reindex: f64,
    /// Its loop variables (bits).
    vars: u64,
}

impl InputInfo {
    /// The input's dimensions in the order of its levels when its
    /// variables are bound in `order`: constants first, then each bound
    /// variable's dimensions in binding order.
    fn level_iter(&self, order: impl Iterator<Item = usize>) -> impl Iterator<Item = usize> {
        let n = self.dims.len();
        (0..n)
            .filter(|&d| self.dims[d].is_none())
            .chain(order.flat_map(move |w| (0..n).filter(move |&d| self.dims[d] == Some(w))))
    }

    /// [`InputInfo::level_iter`] collected.
    fn levels(&self, order: &[usize]) -> Vec<usize> {
        self.level_iter(order.iter().copied()).collect()
    }
}

impl<'a, E: SparsityEstimator> OrderSearch<'a, E> {
    fn new(
        estimator: &'a E,
        stats: &Earlier<'_, E::Stats>,
        query: &'a PhysicalQuery,
        bound: &[usize],
        factorized: bool,
    ) -> Result<Self> {
        let vars = bound.to_vec();
        let name_of = |v: usize| query.vars[v].name.clone();
        let (support, _) = Support::of(&query.body, query);
        let required = support.required();
        let mut joined = Vec::new();
        for &k in &required {
            let access = &query.inputs[k];
            let terms: Vec<IndexTerm> = access
                .terms
                .iter()
                .map(|t| match t {
                    Term::Var(v) => IndexTerm::Var(name_of(*v)),
                    Term::Const(c) => IndexTerm::Const(*c),
                })
                .collect();
            let leaf = match &access.source {
                Source::Table { tensor, .. } => estimator.leaf(Leaf::Stored {
                    tensor,
                    terms: &terms,
                })?,
                Source::Result(name) => match stats.get(name) {
                    Some(AliasSource::Estimated {
                        indices,
                        stats: own,
                    }) => {
                        let names: Vec<String> = indices.iter().map(|(n, _)| n.clone()).collect();
                        estimator.leaf(Leaf::Estimated {
                            stats: own,
                            indices: &names,
                            terms: &terms,
                        })?
                    }
                    Some(AliasSource::Stored(tensor)) => estimator.leaf(Leaf::Stored {
                        tensor,
                        terms: &terms,
                    })?,
                    None => continue,
                },
            };
            joined.push(leaf);
        }
        let covered: Vec<usize> = required
            .iter()
            .flat_map(|&k| query.inputs[k].terms.iter())
            .filter_map(|t| match t {
                Term::Var(v) => Some(*v),
                Term::Const(_) => None,
            })
            .collect();
        let dense: Vec<(String, u64)> = vars
            .iter()
            .filter(|v| !covered.contains(v))
            .map(|&v| (name_of(v), query.vars[v].size))
            .collect();
        let dense_stats = if dense.is_empty() {
            None
        } else {
            Some(estimator.leaf(Leaf::Dense { vars: &dense })?)
        };
        let mut refs: Vec<&E::Stats> = joined.iter().collect();
        refs.extend(dense_stats.as_ref());
        let join = estimator.join(&refs)?;
        let inputs = query
            .inputs
            .iter()
            .map(|access| {
                let dims: Vec<Option<usize>> = access
                    .terms
                    .iter()
                    .map(|t| match t {
                        Term::Var(v) => vars.iter().position(|w| w == v),
                        Term::Const(_) => None,
                    })
                    .collect();
                let (free_orders, reindex) = match &access.source {
                    Source::Table { tensor, .. } => {
                        let mut orders = vec![(0..dims.len()).collect::<Vec<_>>()];
                        orders.extend(
                            tensor
                                .built_indexes()
                                .into_iter()
                                .filter(|spec| !spec.is_identity())
                                .map(|spec| spec.order),
                        );
                        let nnz = tensor.nnz() as f64;
                        (orders, nnz * (nnz + 2.0).log2())
                    }
                    // A result is stored sorted in its own order, and
                    // kept in the orders earlier queries re-index it in;
                    // its re-index is charged a visit per entry only,
                    // since the search does not charge the writes an
                    // order that reads it in place may add (a loop order
                    // that sums the innermost variable into one output
                    // cell writes less than one that writes every visit).
                    Source::Result(name) => {
                        let nnz = match stats.get(name) {
                            Some(AliasSource::Stored(tensor)) => tensor.nnz() as f64,
                            Some(AliasSource::Estimated { stats: own, .. }) => {
                                estimator.estimate(own)
                            }
                            None => 0.0,
                        };
                        let mut orders = vec![(0..dims.len()).collect::<Vec<_>>()];
                        orders.extend(stats.reindexed.get(name).into_iter().flatten().cloned());
                        (orders, nnz)
                    }
                };
                InputInfo {
                    vars: dims.iter().flatten().fold(0, |acc, &v| acc | 1 << v),
                    dims,
                    free_orders,
                    reindex,
                }
            })
            .collect();
        let output = query
            .output
            .iter()
            .filter_map(|v| vars.iter().position(|w| w == v))
            .fold(0, |acc, k| acc | 1 << k);
        let table = if vars.len() <= EXACT_VARIABLES {
            let names: Vec<String> = vars.iter().map(|&v| name_of(v)).collect();
            estimator.projections(&join, &names)
        } else {
            None
        };
        let begin = Instant::now();
        let twins = twin_groups(query, &vars, factorized);
        let twinned = twins
            .iter()
            .enumerate()
            .filter(|(_, g)| g.is_some())
            .fold(0u64, |acc, (k, _)| {
                acc | 1u64.checked_shl(k as u32).unwrap_or(0)
            });
        let twin_time = begin.elapsed();
        Ok(OrderSearch {
            estimator,
            query,
            vars,
            join,
            support,
            output,
            sorted_output: query.role == Role::Output || query.nested,
            inputs,
            table,
            visits: HashMap::new(),
            estimates: 0,
            twins,
            twinned,
            factorized,
            tree_time: twin_time,
        })
    }

    /// The estimated statistics of the query's result: its inputs' join
    /// with the variables outside its output summed out.
    fn output_stats(&self) -> Result<E::Stats> {
        let hidden: Vec<String> = self
            .vars
            .iter()
            .filter(|v| !self.query.output.contains(v))
            .map(|&v| self.query.vars[v].name.clone())
            .collect();
        self.estimator.aggregate(&hidden, &self.join)
    }

    /// The estimated assignments of the loops over `set`.
    fn visits(&mut self, set: u64) -> f64 {
        if let Some(known) = self.table.as_ref().and_then(|t| t.get(set as usize)) {
            return *known;
        }
        if let Some(&known) = self.visits.get(&set) {
            return known;
        }
        let hidden: Vec<String> = (0..self.vars.len())
            .filter(|k| set >> k & 1 == 0)
            .map(|k| self.query.vars[self.vars[k]].name.clone())
            .collect();
        self.estimates += 1;
        let value = match self.estimator.aggregate(&hidden, &self.join) {
            Ok(projected) => self.estimator.estimate(&projected),
            Err(_) => f64::INFINITY,
        };
        self.visits.insert(set, value);
        value
    }

    /// Whether input `k`, with its variables bound in `order` and then
    /// `v`, can still be read through its stored order or a cached index:
    /// some free order lists its constant dimensions first, then the
    /// dimensions of each bound variable in binding order.
    fn readable(&self, k: usize, order: &[usize], v: usize) -> bool {
        let info = &self.inputs[k];
        let n = info.dims.len();
        // Each dimension appears at most once among the levels, so there
        // are at most `n` of them and a zip with an order checks a prefix.
        info.free_orders.iter().any(|o| {
            o.len() == n
                && info
                    .level_iter(order.iter().chain([&v]).copied())
                    .zip(o)
                    .all(|(l, &d)| l == d)
        })
    }

    /// The variables that may come next after `set` (bits): those sharing
    /// an input with it, or all when none does.
    fn next_vars(&self, set: u64) -> u64 {
        let all = if self.vars.len() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.vars.len()) - 1
        };
        let left = all & !set;
        let connected = self
            .inputs
            .iter()
            .filter(|i| i.vars & set != 0)
            .fold(0, |acc, i| acc | i.vars)
            & left;
        if connected == 0 { left } else { connected }
    }

    /// The cost of binding `v` after `order` (whose set is `set`), and the
    /// inputs that need a new index from then on (bits). Inputs past the
    /// 64th have no bit (only the greedy search sees them, the exact one
    /// refuses them): their re-index is charged at each loop that needs it.
    fn step(&mut self, order: &[usize], set: u64, reindexed: u64, v: usize) -> (f64, u64) {
        let enclosing = if self.factorized {
            let begin = Instant::now();
            let enclosing = self.enclosing(order, set, v);
            self.tree_time += begin.elapsed();
            enclosing
        } else {
            set
        };
        let outer = |search: &mut Self| {
            if enclosing == 0 {
                1.0
            } else {
                search.visits(enclosing)
            }
        };
        let loop_visits = if self.repeats_twin(order, set, v) {
            // One product per assignment of the loops around it.
            outer(self)
        } else {
            match self.support.restriction(&self.inputs, v, enclosing) {
                Restriction::Fiber => self.visits(enclosing | 1 << v),
                // Every coordinate of the level for each outer assignment,
                // though fewer may go on to the loops inside.
                Restriction::Top => outer(self) * self.visits(1 << v),
                Restriction::Dimension => outer(self) * self.query.vars[self.vars[v]].size as f64,
            }
        };
        let mut cost = loop_visits + self.sort_cost(order, set, v);
        let mut now = reindexed;
        for k in 0..self.inputs.len() {
            let bit = u32::try_from(k)
                .ok()
                .and_then(|k| 1u64.checked_shl(k))
                .unwrap_or(0);
            if now & bit == 0
                && self.inputs[k].vars >> v & 1 == 1
                && !self.inputs[k].free_orders.is_empty()
                && !self.readable(k, order, v)
            {
                now |= bit;
                cost += self.inputs[k].reindex;
            }
        }
        (cost, now)
    }

    /// `v` when it was bound last (the variables bound are `bound`), past
    /// the output variables and the first loop, with every input that
    /// reads it complete, and a twin of it is still unbound, else
    /// [`NO_TWIN`]: the exact search keeps such orders apart, since a
    /// twin's loop is costed as a repeat only right after another of its
    /// group ([`OrderSearch::repeats_twin`]). Other orders keep the keys
    /// they would have without twins.
    fn pending_twin(&self, bound: u64, v: usize) -> usize {
        let Some(group) = self.twin_group(v) else {
            return NO_TWIN;
        };
        let unbound_twin = self
            .twins
            .iter()
            .enumerate()
            .any(|(w, &g)| g == Some(group) && bound >> w & 1 == 0);
        let pending = unbound_twin
            && self.output & !bound == 0
            && self.output >> v & 1 == 0
            && bound.count_ones() > 1
            && self
                .inputs
                .iter()
                .all(|i| i.vars >> v & 1 == 0 || i.vars & !bound == 0);
        if pending { v } else { NO_TWIN }
    }

    /// The group of `v`'s twins, if it has a twin (see [`OrderSearch::twins`]).
    fn twin_group(&self, v: usize) -> Option<usize> {
        if self.twinned >> v & 1 == 0 {
            return None;
        }
        self.twins.get(v).copied().flatten()
    }

    /// Whether `v`, bound right after a twin of it (whose set is `set`),
    /// will be a sibling loop that repeats the twin's sum
    /// ([`crate::exec::plan::Loop::repeats`]): past the output variables
    /// and the first loop, with every input that either reads complete
    /// once it is bound (each loop a leaf of the tree). Its loop is then
    /// costed as one product per assignment of the loops around it.
    fn repeats_twin(&self, order: &[usize], set: u64, v: usize) -> bool {
        let (Some(group), Some(&u)) = (self.twin_group(v), order.last()) else {
            return false;
        };
        if self.twin_group(u) != Some(group) {
            return false;
        }
        let bound = set | 1 << v;
        order.len() > self.trunk(order)
            && self.output & !set == 0
            && self
                .inputs
                .iter()
                .filter(|i| i.vars & (1 << u | 1 << v) != 0)
                .all(|i| i.vars & !bound == 0)
    }

    /// How many of the loops `order` and then `v` lead with the output's
    /// variables in the output's own order (its stored level order).
    fn sorted_run(&self, order: &[usize], v: usize) -> usize {
        order
            .iter()
            .chain([&v])
            .zip(&self.query.output)
            .take_while(|&(&u, &w)| self.vars[u] == w)
            .count()
    }

    /// The cost of sorting the output into its own order that binding `v`
    /// after `order` (whose set is `set`) settles: when `v` ends the
    /// leading loops over output variables (the levels written in loop
    /// order, [`PhysicalQuery::sorted_prefix`]), the entries arrive
    /// sorted within each group of those loops (an accumulator drains
    /// each group sorted) but must end sorted within each group of the
    /// leading loops that follow the output's order: `E · log₂(E /
    /// groups sorted)` for `E` estimated entries. A loop order
    /// that writes the output in its own order pays nothing; one that
    /// writes it transposed pays a sort of every entry. Only a
    /// statement's output and a nested aggregate's result (whose order is
    /// its reader's) are charged: the elimination steps' estimates are
    /// the least trustworthy of a plan (on yeast's lite queries, charging
    /// them moved 51 of 120 plans and slowed the slowest 1.5x; see
    /// `docs/optimizer.md`).
    fn sort_cost(&mut self, order: &[usize], set: u64, v: usize) -> f64 {
        let output = self.output;
        let bound = set | 1 << v;
        let closes = set & !output == 0 && (output >> v & 1 == 0 || bound == output);
        if !self.sorted_output || output == 0 || !closes {
            return 0.0;
        }
        let sorted_bits = order
            .iter()
            .chain([&v])
            .take(self.sorted_run(order, v))
            .fold(0, |acc, &u| acc | 1 << u);
        if sorted_bits == output {
            return 0.0;
        }
        let groups = if sorted_bits == 0 {
            1.0
        } else {
            self.visits(sorted_bits)
        };
        let entries = self.visits(output);
        entries * (entries / groups).max(1.0).log2()
    }

    /// The variables (bits) of the loops that will enclose a loop over
    /// `v` bound after `order` (whose set is `set`) in the factorized nest
    /// ([`PhysicalQuery::factorize`]). While output variables are unbound
    /// the loops form a trunk, except that a summed loop (not the first)
    /// that no chain of unbound variables' inputs joins to an unbound
    /// output variable starts a subtree of its own with the variables so
    /// joined, enclosed by the trunk before it only. Past the output
    /// variables, and inside such a subtree, a loop over `u` encloses `v`
    /// only when some chain of inputs joins `u` to `v` through variables
    /// bound after `u` (the loop tree's ancestors).
    fn enclosing(&self, order: &[usize], set: u64, v: usize) -> u64 {
        let output = self.output;
        if output == 0 {
            // No trunk past the first loop (a count).
            return self.enclosing_in(order, 1, set, v);
        }
        let Some(&head) = order.first() else {
            return 0;
        };
        let mut bound = 1u64 << head;
        let mut trunk = bound;
        // The subtrees split off the trunk, (first position, variables),
        // and all their variables.
        let mut subtrees: Vec<(usize, u64)> = Vec::new();
        let mut hoisted = 0u64;
        let mut past_outputs = order.len();
        for (i, &u) in order.iter().enumerate().skip(1) {
            if output & !bound == 0 {
                past_outputs = i;
                break;
            }
            if hoisted >> u & 1 == 0 {
                let reach = self.reach(u, !bound);
                if output >> u & 1 == 0 && reach & output == 0 {
                    subtrees.push((i, reach));
                    hoisted |= reach;
                } else {
                    trunk |= 1 << u;
                }
            }
            bound |= 1 << u;
        }
        if let Some(&(start, members)) = subtrees.iter().find(|(_, m)| m >> v & 1 == 1) {
            let outer = order[..start]
                .iter()
                .filter(|&&w| trunk >> w & 1 == 1)
                .fold(0, |acc, &w| acc | 1 << w);
            return outer | self.enclosing_in(order, start, set, v) & members;
        }
        if output & !set == 0 {
            return trunk | self.enclosing_in(order, past_outputs, set, v) & !hoisted;
        }
        trunk
    }

    /// The loops of `order` from position `first` on that enclose `v`
    /// bound after it (whose set is `set`), plus every loop before
    /// `first`: a loop over `u` encloses `v` when some chain of inputs
    /// joins `u` to `v` through variables bound after `u`.
    fn enclosing_in(&self, order: &[usize], first: usize, set: u64, v: usize) -> u64 {
        let mut enclosing = order.iter().take(first).fold(0, |acc, &u| acc | 1 << u);
        let mut later = !set | 1 << v;
        for &u in order.iter().skip(first).rev() {
            if self.joined(v, u, later) {
                enclosing |= 1 << u;
            }
            later |= 1 << u;
        }
        enclosing
    }

    /// The variables (bits) that a chain of inputs joins to `from` through
    /// variables of `within`, `from` included.
    fn reach(&self, from: usize, within: u64) -> u64 {
        self.reach_until(from, within, 0)
    }

    /// [`OrderSearch::reach`], stopping as soon as it holds a variable of
    /// `stop` (bits).
    fn reach_until(&self, from: usize, within: u64, stop: u64) -> u64 {
        let mut reach = 1u64 << from;
        loop {
            let next = self
                .inputs
                .iter()
                .filter(|i| i.vars & reach != 0)
                .fold(reach, |acc, i| acc | i.vars & within);
            if next & stop != 0 || next == reach {
                return next;
            }
            reach = next;
        }
    }

    /// How many loops of `order` lead up to its last output variable, at
    /// least the first loop: past them, the factorized nest branches
    /// wherever its inputs allow ([`OrderSearch::enclosing`]).
    fn trunk(&self, order: &[usize]) -> usize {
        order
            .iter()
            .rposition(|&u| self.output >> u & 1 == 1)
            .map_or(1, |p| p + 1)
    }

    /// Whether a chain of inputs joins `from` to `to` through variables of
    /// `within` (bits).
    fn joined(&self, from: usize, to: usize, within: u64) -> bool {
        let target = 1u64 << to;
        self.reach_until(from, within | target, target) & target != 0
    }

    /// Dynamic programming over (bound variables, re-indexed inputs),
    /// keeping the cheapest order per key; `None` past the budget.
    fn exact(&mut self) -> Option<(Vec<usize>, f64)> {
        let n = self.vars.len();
        if self.inputs.len() > 64 {
            return None;
        }
        let mut level: Vec<(OrderKey, Partial)> = vec![((0, 0, 0, NO_TWIN), (0.0, Vec::new()))];
        let output = self.output;
        for _ in 0..n {
            let mut next: HashMap<OrderKey, Partial> = HashMap::new();
            for ((set, reindexed, _, _), (cost, order)) in &level {
                for v in bits(self.next_vars(*set)) {
                    if self.estimates > ESTIMATE_BUDGET {
                        return None;
                    }
                    let (step, now) = self.step(order, *set, *reindexed, v);
                    let total = cost + step;
                    let bound = set | 1 << v;
                    let run = if bound & !output == 0 {
                        self.sorted_run(order, v)
                    } else {
                        0
                    };
                    let key = (bound, now, run, self.pending_twin(bound, v));
                    if next.get(&key).is_none_or(|(c, _)| total < *c) {
                        let mut extended = Vec::with_capacity(order.len() + 1);
                        extended.extend_from_slice(order);
                        extended.push(v);
                        next.insert(key, (total, extended));
                    }
                }
            }
            level = next.into_iter().collect();
            if level.len() > LEVEL_STATES {
                level.sort_by(|a, b| a.1.0.total_cmp(&b.1.0).then_with(|| a.0.cmp(&b.0)));
                level.truncate(LEVEL_STATES);
            }
            // Keys in order, so that ties resolve the same way every run.
            level.sort_unstable_by_key(|e| e.0);
        }
        let (_, (cost, order)) = level
            .into_iter()
            .min_by(|a, b| a.1.0.total_cmp(&b.1.0).then_with(|| a.1.1.cmp(&b.1.1)))?;
        let cost = cost + self.output_cost(&order);
        Some((order, cost))
    }

    /// Each next variable the one whose loop visits fewest assignments.
    fn greedy(&mut self) -> (Vec<usize>, f64) {
        let mut order = Vec::new();
        let (mut set, mut reindexed, mut total) = (0u64, 0u64, 0.0);
        while order.len() < self.vars.len() {
            let mut best: Option<(f64, usize, u64)> = None;
            for v in bits(self.next_vars(set)) {
                let (cost, now) = self.step(&order, set, reindexed, v);
                if best.is_none_or(|(c, _, _)| cost < c) {
                    best = Some((cost, v, now));
                }
            }
            let Some((cost, v, now)) = best else { break };
            order.push(v);
            set |= 1 << v;
            reindexed = now;
            total += cost;
        }
        let cost = total + self.output_cost(&order);
        (order, cost)
    }

    /// The estimated entries of the output when it is written out of loop
    /// order (0 when written in order).
    fn output_cost(&mut self, order: &[usize]) -> f64 {
        let output = self.output;
        let prefix = order.iter().take_while(|&&v| output >> v & 1 == 1).count();
        if prefix == output.count_ones() as usize {
            0.0
        } else {
            self.visits(output)
        }
    }

    /// The accumulator for the output levels that `order` does not write in
    /// order (see the module documentation).
    fn accumulator(&mut self, order: &[usize]) -> OutputFormat {
        let output = self.output;
        let prefix: Vec<usize> = order
            .iter()
            .copied()
            .take_while(|&v| output >> v & 1 == 1)
            .collect();
        let space: f64 = self
            .query
            .output
            .iter()
            .filter(|v| !prefix.iter().any(|&p| self.vars[p] == **v))
            .map(|&v| self.query.vars[v].size as f64)
            .product();
        if space <= SMALL_SPACE {
            return OutputFormat::Dense;
        }
        accumulator_format(space, self.visits(output))
    }
}

/// The accumulator for random-write levels over `space` coordinates
/// (beyond [`SMALL_SPACE`]) that are estimated to receive `entries`.
fn accumulator_format(space: f64, entries: f64) -> OutputFormat {
    let density = entries / space;
    if space > LARGE_SPACE {
        OutputFormat::Hashed
    } else if density >= 1.0 / 8.0 {
        OutputFormat::Dense
    } else if density >= 1.0 / 64.0 {
        OutputFormat::Bytemap
    } else {
        OutputFormat::Hashed
    }
}

/// Where the query's body can differ from its fill, as the kernel's
/// loops find it: the fibers of inputs with a zero fill, intersected under
/// an annihilating map and united under any other.
enum Support {
    /// Input `k`'s entries.
    Input(usize),
    /// Where every part has entries.
    Meet(Vec<Support>),
    /// Where any part has entries.
    Join(Vec<Support>),
    /// Anywhere (a non-zero fill, a literal, a coordinate).
    Everywhere,
}

/// How the loop over a variable finds its coordinates, given the loops
/// outside it: in fibers under their coordinates, at the top level of an
/// input (every coordinate it has, whatever the outer loops bound), or
/// over the whole dimension. Ordered from the fewest coordinates.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Restriction {
    Fiber,
    Top,
    Dimension,
}

impl Support {
    /// The support of `node` and its fill (`None` when unknown).
    fn of(node: &Node, query: &PhysicalQuery) -> (Support, Option<Value>) {
        match node {
            Node::Input(k) => {
                let fill = query.inputs.get(*k).map(|a| a.fill);
                let support = if fill.is_some_and(|f| f.is_zero()) {
                    Support::Input(*k)
                } else {
                    Support::Everywhere
                };
                (support, fill)
            }
            Node::Literal(v) => (Support::Everywhere, Some(*v)),
            Node::Coord(_) => (Support::Everywhere, None),
            Node::Map(op, args) => {
                let parts: Vec<(Support, Option<Value>)> =
                    args.iter().map(|a| Support::of(a, query)).collect();
                let fills: Option<Vec<Value>> = parts.iter().map(|p| p.1).collect();
                let fill = fills.and_then(|f| op.apply(&f).ok());
                let annihilator = op.algebra().annihilator;
                let annihilates = |k: usize, fill: Option<Value>| {
                    annihilator.is_some_and(|a| {
                        (k == 0 || !a.only_first) && fill.is_some_and(|f| f.same(a.value))
                    })
                };
                let meet = parts.iter().enumerate().any(|(k, p)| annihilates(k, p.1));
                let support = if meet {
                    Support::Meet(
                        parts
                            .into_iter()
                            .enumerate()
                            .filter(|(k, p)| annihilates(*k, p.1))
                            .map(|(_, p)| p.0)
                            .collect(),
                    )
                } else {
                    Support::Join(parts.into_iter().map(|p| p.0).collect())
                };
                (support, fill)
            }
        }
    }

    /// The inputs without which the body is its fill.
    fn required(&self) -> Vec<usize> {
        match self {
            Support::Input(k) => vec![*k],
            Support::Everywhere => Vec::new(),
            Support::Meet(parts) => {
                let mut all: Vec<usize> = parts.iter().flat_map(Support::required).collect();
                all.sort_unstable();
                all.dedup();
                all
            }
            // Entries come from any part: only what every part needs is
            // needed.
            Support::Join(parts) => {
                let mut parts = parts.iter().map(Support::required);
                let mut common = parts.next().unwrap_or_default();
                for part in parts {
                    common.retain(|k| part.contains(k));
                }
                common
            }
        }
    }

    /// How a loop over `v` finds its coordinates inside loops over
    /// `bound` (bits over the search's variables; `vars` gives each
    /// input's).
    fn restriction(&self, vars: &[InputInfo], v: usize, bound: u64) -> Restriction {
        match self {
            Support::Input(k) => match vars.get(*k) {
                Some(info) if info.vars >> v & 1 == 1 => {
                    if info.vars & bound != 0 {
                        Restriction::Fiber
                    } else {
                        Restriction::Top
                    }
                }
                _ => Restriction::Dimension,
            },
            Support::Everywhere => Restriction::Dimension,
            Support::Meet(parts) => parts
                .iter()
                .map(|p| p.restriction(vars, v, bound))
                .min()
                .unwrap_or(Restriction::Dimension),
            Support::Join(parts) => parts
                .iter()
                .map(|p| p.restriction(vars, v, bound))
                .max()
                .unwrap_or(Restriction::Dimension),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_only_for_dense_enough_output_within_the_space_limit() {
        let million = (1u64 << 20) as f64;
        assert_eq!(
            accumulator_format(million, million / 4.0),
            OutputFormat::Dense
        );
        assert_eq!(
            accumulator_format(million, million / 32.0),
            OutputFormat::Bytemap
        );
        assert_eq!(
            accumulator_format(million, million / 128.0),
            OutputFormat::Hashed
        );
        // yeast query_dense_16_133: 3,112 x 3,112 coordinates, 714,555
        // entries estimated (21,665 in fact).
        assert_eq!(
            accumulator_format(3112.0 * 3112.0, 714_555.0),
            OutputFormat::Hashed
        );
        assert_eq!(
            accumulator_format(2.0 * million, 2.0 * million),
            OutputFormat::Hashed
        );
    }
}
