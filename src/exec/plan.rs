//! Physical plans (Galley figure 4.C): what the executor runs.
//!
//! A [`PhysicalPlan`] is a sequence of [`PhysicalQuery`]s. Each one is a
//! loop nest that materializes one tensor: the program's outputs, and the
//! intermediates the planner introduced (nested aggregates, eliminated
//! variables), which later queries read by name. A query fixes
//!
//! - its variables (every index variable with its size) and which of them
//!   are the output's dimensions, and which are aggregated;
//! - the loop order ([`Loop`]), and per loop the input that drives the
//!   iteration ([`Driver`]): the driver's fiber is iterated and the current
//!   coordinate is looked up in every other input read at that loop. The
//!   loops form a tree ([`Loop::end`]): a loop nest is a path, and a
//!   factorized one ([`PhysicalQuery::factorize`]) runs sibling subtrees
//!   that share no input one after the other and multiplies their sums;
//! - per input ([`Access`]) the fibertree index it is read through, whose
//!   level order follows the loop order (constants first). When that order
//!   is not the stored one the input is re-indexed: an explicit step that
//!   EXPLAIN shows and that [`Tensor::index`] caches with the tensor,
//!   unless the table has a declared index of that order, which EXPLAIN
//!   names (`read A USING a_csc as (j,i) dense/compressed`);
//! - the pointwise [`Node`] expression over the inputs and the aggregate;
//! - the output format of every output level ([`OutputFormat`]): levels
//!   written in loop order are sorted (sequential writes), the others are
//!   accumulated in a dense array or a hash table (random writes);
//! - an element-wise map of the result applied as it is stored
//!   ([`Finish`]), where the `fuse` phase folded the query that maps it
//!   (`relu(#1[o,n,k])`) into this one.
//!
//! The [`Display`](fmt::Display) form is the text `EXPLAIN` prints: one line
//! per query, re-index step and loop, stable across runs.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::ir::{AggOp, Annotation, ScalarOp, Value};
use crate::storage::fibertree::{IndexLayout, IndexSpec, LevelFormat};
use crate::storage::{Dictionary, Tensor, ValueType};

/// A sequence of physical queries; see the module documentation.
#[derive(Clone, Debug)]
pub struct PhysicalPlan {
    /// The queries, in execution order.
    pub queries: Vec<PhysicalQuery>,
    /// Runs of consecutive queries that go as one pass over the entries
    /// of their common driver, as ranges of positions in `queries`,
    /// increasing and disjoint (see [`PhysicalPlan::fused_pass`]).
    pub fused: Vec<Range<usize>>,
}

impl PhysicalPlan {
    /// The queries in execution order, each run of fused queries
    /// together: a slice of one query, or of the members of a fused pass.
    pub fn steps(&self) -> Vec<&[PhysicalQuery]> {
        let mut steps = Vec::with_capacity(self.queries.len());
        let mut next = 0;
        for run in &self.fused {
            steps.extend(self.queries[next..run.start].chunks(1));
            steps.push(&self.queries[run.clone()]);
            next = run.end;
        }
        steps.extend(self.queries[next..].chunks(1));
        steps
    }

    /// The fused pass query `n` belongs to, if any.
    pub fn fused_pass(&self, n: usize) -> Option<&Range<usize>> {
        self.fused.iter().find(|run| run.contains(&n))
    }
}

/// One loop nest that materializes one tensor.
#[derive(Clone, Debug)]
pub struct PhysicalQuery {
    /// The name of the result (intermediates are named `#1`, `#2`, ...).
    pub name: String,
    /// Whether the result is one of the program's outputs.
    pub role: Role,
    /// Whether the result is a nested aggregate's (`#1`, ...): its levels
    /// are ordered for the enclosing query, which reads it in place.
    pub nested: bool,
    /// Every index variable of the query; the other fields refer to them
    /// by position.
    pub vars: Vec<Variable>,
    /// The output's dimensions, in order.
    pub output: Vec<usize>,
    /// The format of each output level (one per output dimension).
    pub formats: Vec<OutputFormat>,
    /// The aggregate, if the query aggregates.
    pub aggregate: Option<AggOp>,
    /// The aggregated variables: looped over, or (when no input reads them)
    /// accounted for by repeating each value ([`AggOp::repeat`]).
    pub aggregated: Vec<usize>,
    /// The loop nest, outermost first.
    pub loops: Vec<Loop>,
    /// The inputs the expression reads.
    pub inputs: Vec<Access>,
    /// The pointwise expression.
    pub body: Node,
    /// The type of the result's values.
    pub ty: ValueType,
    /// The value of every output coordinate that the loops produce no entry
    /// for (0 unless the expression is non-zero where its inputs are
    /// absent, as `exp(A[i])`).
    pub fill: Value,
    /// Set when the query runs as one dense matrix product of its two
    /// inputs instead of its loops (see [`Contraction`]).
    pub dense: Option<Contraction>,
    /// Set when the query runs entry by entry over one sparse input, the
    /// others read as dense arrays, instead of its loops (see [`Driven`]).
    pub driven: Option<Driven>,
    /// Set when the query runs as one pass over the joined pairs of two
    /// tables' entries instead of its loops (see [`Paired`]).
    pub paired: Option<Paired>,
    /// Set when each value of the result goes through an element-wise
    /// map before it is stored (see [`Finish`]).
    pub finish: Option<Finish>,
    /// The loops' estimated work, in the assignments they visit, when the
    /// physical optimizer costed them (an upper bound with the chain
    /// estimator). The executor splits the outermost loop into chunks by
    /// it: a candidate's weight, the length of one fiber under it, says
    /// little about a deep nest below it.
    pub work: Option<f64>,
}

/// An element-wise map a query applies to each value of its result
/// before storing it: the `fuse` phase folds the query `h[o,n,k] =
/// relu(#1[o,n,k])` into the query that makes `#1`, which then stores
/// `h` itself. The map is the folded query's body, over
/// [`Node::Input`]`(0)`, the value. Every operator in it has float
/// arithmetic ([`ScalarOp::apply_f64`], the operators' own on floats),
/// its constants are floats, and it takes 0 to 0, so the result's absent
/// entries stay absent; the entries it takes to 0 are dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct Finish(Node);

impl Finish {
    /// The map `body` makes of `Node::Input(0)`, when it qualifies (see
    /// the type's documentation).
    pub fn of(body: &Node) -> Option<Finish> {
        let finish = Finish(body.clone());
        (finish.value(0.0)? == 0.0).then_some(finish)
    }

    /// The map's body.
    pub fn body(&self) -> &Node {
        &self.0
    }

    /// The map's value at `x`.
    #[inline]
    pub fn apply(&self, x: f64) -> f64 {
        // One function of the value (`relu`) without the tree's walk.
        if let Node::Map(op, args) = &self.0
            && let [Node::Input(_)] = args.as_slice()
        {
            return op.apply_f64(&[x]).unwrap_or(f64::NAN);
        }
        // `of` found float arithmetic for every operator, which does not
        // depend on the operands' values.
        self.value(x).unwrap_or(f64::NAN)
    }

    fn value(&self, x: f64) -> Option<f64> {
        fn at(node: &Node, x: f64) -> Option<f64> {
            match node {
                Node::Input(_) => Some(x),
                Node::Literal(Value::Float(c)) => Some(*c),
                Node::Literal(_) | Node::Coord(_) => None,
                Node::Map(op, args) => {
                    let mut operands = [0.0; 4];
                    let slots = operands.get_mut(..args.len())?;
                    for (slot, arg) in slots.iter_mut().zip(args) {
                        *slot = at(arg, x)?;
                    }
                    op.apply_f64(slots)
                }
            }
        }
        at(&self.0, x)
    }
}

/// The cells per driver entry from which a sparse-driven query reads an
/// operand over the driver's leading variables at the driver's entries
/// instead of scattering it into an array of its cells (the merge that
/// finds its values costs more per entry than writing a scattered cell).
pub const ENTRY_CELLS: u64 = 4;

/// An input of a sparse-driven query that holds at most one non-zero cell
/// in this many is listed row by row by its non-zero cells instead of
/// scattered ([`Driven::listed`]): an entry's row update then visits those
/// cells only, as in the star join's `L[o,n,s,p,c] * C[c,k]`, four of a
/// customer's 139 features set.
pub const SPARSE_ROW_FILL: usize = 8;

/// A query that is a product of float inputs that are 0 where absent,
/// run over the stored entries of one of them, the *driver*: every other
/// input is read as a dense array at the offset the entry's coordinates
/// give (in place when its entries fill its dimensions, as a factor
/// matrix's do; else scattered into an array first). At most one variable
/// is not the driver's, the *free* variable (a rank `r`): per entry, the
/// rows of the inputs along it are multiplied cell by cell, summed when it
/// is aggregated. This is SystemML's sparse-driven fusion (its Cell, Row
/// and Outer templates): SpMV, SpMM, SDDMM, MTTKRP and elementwise
/// products with dense operands, with no index built and no intermediate
/// larger than the result. One factor may be a sum of inputs ([`Driven::sum`]):
/// Galley's star join, a keyed fact table times the sum of its dimension
/// tables' lookups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Driven {
    /// The driver (a position in [`PhysicalQuery::inputs`]).
    pub driver: usize,
    /// The other inputs read as dense arrays, in input order.
    pub dense: Vec<usize>,
    /// The inputs left out: patterns of tables that store every cell
    /// (`Y.*`), 1 wherever the driver has an entry.
    pub ones: Vec<usize>,
    /// The inputs (among `dense`) of the product's one factor that is a
    /// sum or difference of inputs, each with whether it is subtracted;
    /// empty when there is none. The factor is the sum of their cells at
    /// the entry (an absent cell adds 0), as the star join's `L[o,n,s,p,c]
    /// * (#e1[s] + #e2[p] + #e3[o] + #e4[c])`; only with
    /// [`DrivenOutput::Entries`].
    pub sum: Vec<(usize, bool)>,
    /// The function the sum factor is read through, if any
    /// (`sigmoid(#e1[s] + #e2[p])`, the logistic regression over a join):
    /// one of [`Driven::maps`]' functions, applied to the sum at each entry
    /// (or cell of the free variable's row). Only in a `DOUBLE` product.
    pub sum_map: Option<ScalarOp>,
    /// The inputs (among `dense`) read through a function as a factor of
    /// the product (`sigmoid(#1[o,n])`), with it: a function whose value
    /// is finite for every finite argument, applied to the cell at the
    /// entry (an absent cell is 0). They read no free variable.
    pub maps: Vec<(usize, ScalarOp)>,
    /// The inputs (among `dense`, not full) over the driver's leading
    /// variables in their order with at least [`ENTRY_CELLS`] cells per
    /// driver entry: read at the driver's entries (a value per entry,
    /// found by one merge of the two sorted lists) instead of scattered
    /// into an array of every cell, as `#1[o,n]` at `L[o,n,s,p,c]`'s.
    pub at_entries: Vec<usize>,
    /// The variable the driver does not read, if any.
    pub free: Option<usize>,
    /// How the result is written.
    pub output: DrivenOutput,
    /// The input (one of `dense`) that is a result of an earlier query of
    /// the same fused pass, read row-local: a vector over the driver's
    /// first dimension whose value for a row the pass computes just before
    /// it visits the row's entries here, never stored (SystemML's Row
    /// template). Set by the optimizer's `fuse` phase.
    pub local: Option<usize>,
    /// An index of the driver in its stored order, built or declared
    /// when the query was planned, whose last level lists the entries in
    /// stored order (a matrix's CSR): a fused pass that goes over the
    /// driver's rows takes where each row starts from its pointers instead
    /// of reading the row coordinates ([`row_index`]). Set by the `fuse`
    /// phase.
    pub rows: Option<IndexSpec>,
    /// The input (one of `dense`) whose rows along the free variable are
    /// listed by their non-zero cells instead of scattered into an array
    /// ([`PhysicalQuery::listable_rows`]): chosen by the physical optimizer
    /// when at most one cell in [`SPARSE_ROW_FILL`] of it is non-zero, and
    /// always for an integer input (a count), the one kind of integer
    /// input a driven query may have.
    pub listed: Option<usize>,
    /// Set when the result is added into a row per distinct prefix of
    /// this many of the driver's leading variables
    /// ([`PhysicalQuery::row_prefix`]), by the planner; the `fuse` phase
    /// clears it for the members of a fused pass, which add into whole
    /// arrays.
    pub row_prefix: Option<usize>,
}

/// A query that is a product of two tables joined on the variables they
/// share, whose output's variables tell each table's entries apart (a
/// join's pairs written out, as the self-join of line items through their
/// part): it runs as one pass over the entries of the *left* table, each
/// meeting the entries of the *right* one that agree with it on the shared
/// variables, instead of its loops, and builds no fibertree index. Every
/// other input is read as the sparse-driven path reads its operands
/// ([`Driven`]), at one table's entries when it reads only that table's
/// variables (a factor, a factor through a function, or a term of the
/// product's one sum factor), else at each pair (a factor). Each pair is
/// its own result entry: the two tables' products times the factors read
/// at the pair and the sum factor (the two tables' terms added, read
/// through its function).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paired {
    /// The table whose entries are gone through in stored order (a
    /// position in [`PhysicalQuery::inputs`]).
    pub left: usize,
    /// The table whose entries are grouped by their shared coordinates.
    pub right: usize,
    /// The variables both tables read, in the left's order.
    pub shared: Vec<usize>,
    /// Every other input, with the side it is read at and its part in
    /// the product, in input order.
    pub reads: Vec<PairedRead>,
    /// The function the sum factor is read through, if any.
    pub sum_map: Option<ScalarOp>,
}

/// The most cells of an input that a [`Paired`] query scatters into an
/// array (one that does not store every cell): 1 GiB of doubles.
pub const PAIRED_CELLS: u64 = 1 << 27;

/// An input of a [`Paired`] query other than its two tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairedRead {
    /// The input (a position in [`PhysicalQuery::inputs`]).
    pub input: usize,
    /// Where it is read.
    pub at: PairedAt,
    /// How its cell enters the product.
    pub part: PairedPart,
}

/// Where an input of a [`Paired`] query is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairedAt {
    /// At the left table's entries: it reads only the left's variables.
    Left,
    /// At the right table's entries: it reads only the right's variables.
    Right,
    /// At each pair: it reads variables of both tables, and is a factor.
    Pair,
}

/// How an input's cell enters a [`Paired`] query's product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairedPart {
    /// A factor.
    Factor,
    /// A factor read through a function (`sigmoid(#1[o,n])`).
    Map(ScalarOp),
    /// A term of the sum factor, subtracted when `true`.
    Term(bool),
}

/// The spec of a built index of a matrix in its stored order whose levels
/// are dense or compressed, then compressed (a CSR index, declared ones
/// first): its second level's pointers are where each row's entries
/// start among the stored entries. `None` when no such index is built.
pub fn row_index(tensor: &Tensor) -> Option<IndexSpec> {
    let is_rows = |spec: &IndexSpec| {
        spec.order == [0, 1]
            && matches!(
                spec.formats.as_slice(),
                [
                    LevelFormat::Dense | LevelFormat::Compressed,
                    LevelFormat::Compressed
                ]
            )
    };
    let declared = tensor
        .declared_indexes()
        .into_iter()
        .filter_map(|index| match index.layout {
            IndexLayout::Levels(spec) => Some(spec),
            IndexLayout::Tiles(_) => None,
        });
    declared.chain(tensor.built_indexes()).find(is_rows)
}

/// The inputs of a sum or difference of inputs (`a + b - c`), each with
/// whether it is subtracted (flipped when `negated`); `None` for any
/// other expression.
fn summed_inputs(node: &Node, negated: bool) -> Option<Vec<(usize, bool)>> {
    match node {
        Node::Input(k) => Some(vec![(*k, negated)]),
        Node::Map(ScalarOp::Add, args) => {
            let mut all = Vec::new();
            for arg in args {
                all.extend(summed_inputs(arg, negated)?);
            }
            Some(all)
        }
        Node::Map(ScalarOp::Sub, args) => match args.as_slice() {
            [a, b] => {
                let mut all = summed_inputs(a, negated)?;
                all.extend(summed_inputs(b, !negated)?);
                Some(all)
            }
            _ => None,
        },
        Node::Map(ScalarOp::Neg, args) => match args.as_slice() {
            [a] => summed_inputs(a, !negated),
            _ => None,
        },
        _ => None,
    }
}

/// The factors of a product of inputs as the sparse passes read them:
/// inputs, inputs read through a function (`sigmoid(#1[o,n])`), and at
/// most one sum or difference of inputs, itself possibly read through a
/// function (`sigmoid(#e1[s] + #e2[p])`, only in a `DOUBLE` product).
#[derive(Clone, Debug, Default)]
struct ProductShape {
    product: Vec<usize>,
    maps: Vec<(usize, ScalarOp)>,
    sum: Vec<(usize, bool)>,
    sum_map: Option<ScalarOp>,
}

impl ProductShape {
    /// The shape of the product of `args`; `None` when a factor is none of
    /// those, or a second one is a sum.
    fn of(args: &[Node], float: bool) -> Option<ProductShape> {
        let mut shape = ProductShape::default();
        for arg in args {
            match arg {
                Node::Input(k) => shape.product.push(*k),
                Node::Map(
                    op @ (ScalarOp::Neg | ScalarOp::Abs | ScalarOp::Relu | ScalarOp::Sigmoid),
                    inner,
                ) if matches!(inner.as_slice(), [Node::Input(_)]) => {
                    if let [Node::Input(k)] = inner.as_slice() {
                        shape.maps.push((*k, *op));
                    }
                }
                Node::Map(op @ (ScalarOp::Abs | ScalarOp::Relu | ScalarOp::Sigmoid), inner)
                    if shape.sum.is_empty() && float =>
                {
                    let [inner] = inner.as_slice() else {
                        return None;
                    };
                    shape.sum = summed_inputs(inner, false)?;
                    shape.sum_map = Some(*op);
                }
                _ if shape.sum.is_empty() => shape.sum = summed_inputs(arg, false)?,
                _ => return None,
            }
        }
        Some(shape)
    }

    /// Every input the product reads, with repeats.
    fn inputs(&self) -> impl Iterator<Item = usize> + '_ {
        self.product
            .iter()
            .copied()
            .chain(self.sum.iter().map(|&(k, _)| k))
            .chain(self.maps.iter().map(|&(k, _)| k))
    }
}

/// Where a [`Driven`] query writes its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrivenOutput {
    /// A dense array over the output's coordinates, added to per entry:
    /// the output lacks a variable of the driver (it is summed).
    Array,
    /// One result entry per driver entry (and free coordinate): the
    /// output has the variables of a key of the driver (a prefix of its
    /// dimensions that no two entries share, as all of them are).
    Entries,
    /// Each entry's value at its output coordinates, the entries then
    /// sorted by those and equal ones added: a group-by, for an output
    /// without a free variable whose array would have far more cells than
    /// the driver has entries ([`GROUPED_CELLS_PER_ENTRY`]), as a fact
    /// table's count by two of its columns.
    Grouped,
}

/// A driven query whose output array would have more than this many
/// cells per driver entry writes its result grouped
/// ([`DrivenOutput::Grouped`]) instead: sorting the entries then costs
/// less than clearing, filling and scanning the array.
pub const GROUPED_CELLS_PER_ENTRY: u64 = 8;

/// The fewest driver entries a grouped result is written for: below, the
/// parallel sort's setup is not repaid, and the loops, over a few
/// thousand entries, take microseconds (the subgraph queries' small
/// semijoin-reduced tables).
pub const GROUPED_MIN_ENTRIES: u64 = 1 << 15;

/// A query that is one matrix product, `C[m,n] = SUM(k) A[m,k] * B[k,n]`
/// over two float inputs that are 0 where absent, in any index order of
/// the inputs and the output, with `m` or `n` or both absent (a product
/// with a vector, a dot product). The dense path scatters both operands
/// into dense arrays and computes `C` in one by a blocked matrix kernel
/// (for operands that fill most of their cells, as factor matrices and
/// their Gram matrices: the same multiply-adds as the loops, an order of
/// magnitude faster), or, for two matrices with declared tiled indexes,
/// goes over their tiles ([`super::tiled`]). It builds no fibertree index.
/// A sparse operand times dense ones (SpMM) is a [`Driven`] query instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contraction {
    /// The left operand `A` (a position in [`PhysicalQuery::inputs`]).
    pub left: usize,
    /// The right operand `B`.
    pub right: usize,
    /// `m`, the left operand's other variable, if it has one.
    pub rows: Option<usize>,
    /// `n`, the right operand's other variable, if it has one.
    pub cols: Option<usize>,
    /// `k`, the summed variable both operands read.
    pub inner: usize,
    /// Whether both operands are read through their tiled indexes instead.
    pub tiled: bool,
}

/// How the dense path reads the operands of a [`Contraction`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenseKernel {
    /// Both scattered into arrays and multiplied by a blocked kernel.
    Arrays,
    /// Both read through their declared tiled indexes, tile by tile.
    Tiles,
}

impl Contraction {
    /// The product read the way `kernel` says.
    pub fn with_kernel(self, kernel: DenseKernel) -> Contraction {
        Contraction {
            tiled: kernel == DenseKernel::Tiles,
            ..self
        }
    }

    /// The sizes `(m, n, k)` of the product (1 for an absent `m` or `n`).
    pub fn shape(&self, query: &PhysicalQuery) -> (u64, u64, u64) {
        let size = |v: Option<usize>| v.map_or(1, |v| query.vars[v].size);
        (
            size(self.rows),
            size(self.cols),
            query.vars[self.inner].size,
        )
    }
}

/// Whether a query's result is an output of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A result of the program: stored as the reference evaluator stores it
    /// (zeros dropped, every other coordinate stored if the fill is not 0).
    Output,
    /// An intermediate: entries equal to [`PhysicalQuery::fill`] dropped.
    Intermediate,
}

/// An index variable of a physical query.
#[derive(Clone, Debug)]
pub struct Variable {
    /// The name, as in the program.
    pub name: String,
    /// The number of coordinates.
    pub size: u64,
    /// The string keys of the coordinates, if any.
    pub dictionary: Option<Arc<Dictionary>>,
}

/// One loop: a variable, who drives its iteration, and which loops run
/// inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loop {
    /// The variable (a position in [`PhysicalQuery::vars`]).
    pub var: usize,
    /// Which input is iterated; the others read at this loop are looked up.
    pub driver: Driver,
    /// The end of the loop's subtree: the loops after this one and before
    /// `end` run inside it. The loops from `end` to the end of its parent's
    /// subtree read no input this subtree reads, so they run after it, once
    /// per assignment of the enclosing loops, and the two sums multiply. In
    /// a loop nest that is a path, `end` is the number of loops.
    pub end: usize,
    /// The earlier sibling subtree (its first loop's depth) whose sum this
    /// subtree's equals, its variables renamed: loops of the same shape
    /// over the same tensors, read with the same outer variables (twin
    /// vertices of a query graph, `Σ_a f(a) · Σ_b f(b)`). Its sum is not
    /// computed again ([`PhysicalQuery::mark_repeats`]).
    pub repeats: Option<usize>,
}

/// The access protocol of a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// At every visit, the input whose current fiber is shortest drives
    /// (generic join's choice, robust to skewed degrees).
    Smallest,
    /// This input (a position in [`PhysicalQuery::inputs`]) always drives.
    Input(usize),
}

/// What one input of a query reads and how.
#[derive(Clone, Debug)]
pub struct Access {
    /// The tensor.
    pub source: Source,
    /// One term per stored dimension of the tensor.
    pub terms: Vec<Term>,
    /// The fibertree index read: its level order follows the loop order
    /// (constant dimensions first).
    pub index: IndexSpec,
    /// The value where the tensor has no entry.
    pub fill: Value,
    /// The type of its values.
    pub ty: ValueType,
}

impl Access {
    /// Whether `self` and `other` read the same values (in any index): the
    /// same tensor and annotation, or the same result, with the same fill.
    pub fn same_values(&self, other: &Access) -> bool {
        let same_source = match (&self.source, &other.source) {
            (
                Source::Table {
                    tensor: ta,
                    annotation: na,
                    ..
                },
                Source::Table {
                    tensor: tb,
                    annotation: nb,
                    ..
                },
            ) => Arc::ptr_eq(ta, tb) && na == nb,
            (Source::Result(na), Source::Result(nb)) => na == nb,
            _ => false,
        };
        same_source && self.fill.same(other.fill) && self.ty == other.ty
    }

    /// The variable of every dimension, when each dimension has its own
    /// (no constant, no variable read twice).
    pub fn distinct_vars(&self) -> Option<Vec<usize>> {
        let vars: Vec<usize> = self
            .terms
            .iter()
            .map(|t| match t {
                Term::Var(v) => Some(*v),
                Term::Const(_) => None,
            })
            .collect::<Option<_>>()?;
        let distinct = vars.iter().enumerate().all(|(n, v)| !vars[..n].contains(v));
        distinct.then_some(vars)
    }
}

/// What indexes one dimension of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// A variable (a position in [`PhysicalQuery::vars`]).
    Var(usize),
    /// A fixed coordinate.
    Const(i64),
}

/// A term of an input of a sibling subtree, as
/// [`PhysicalQuery::mark_repeats`] compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LocalTerm {
    /// The subtree's own variable at this place in its loops.
    Own(usize),
    /// A variable of the loops around the subtree.
    Outer(usize),
    Const(i64),
}

/// Where an input's tensor comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A stored table, with the annotation read.
    Table {
        /// The table's name.
        name: String,
        /// The tensor.
        tensor: Arc<Tensor>,
        /// The value column, or the multiplicity.
        annotation: Annotation,
    },
    /// The result of an earlier query of the plan, by name.
    Result(String),
}

/// The pointwise expression of a query.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// The value of an input (a position in [`PhysicalQuery::inputs`]).
    Input(usize),
    /// A constant.
    Literal(Value),
    /// The coordinate of a variable.
    Coord(usize),
    /// An operator applied to the values of its arguments.
    Map(ScalarOp, Vec<Node>),
}

/// The format of one output level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Written in order: the level's variable is looped over before every
    /// aggregated variable and every later output level.
    Sorted,
    /// A dense array over the level's coordinates (random writes).
    Dense,
    /// A dense array of flags and values, with the touched coordinates
    /// listed (random writes to a sparse level).
    Bytemap,
    /// A hash table (random writes to a very sparse level).
    Hashed,
}

impl OutputFormat {
    /// The lower-case name EXPLAIN shows.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Sorted => "sorted",
            OutputFormat::Dense => "dense",
            OutputFormat::Bytemap => "bytemap",
            OutputFormat::Hashed => "hashed",
        }
    }
}

impl PhysicalQuery {
    /// The variables the loops bind, in loop order.
    pub fn loop_vars(&self) -> Vec<usize> {
        self.loops.iter().map(|l| l.var).collect()
    }

    /// The inputs read at loop `depth` (those with a level for its
    /// variable): the valid [`Driver::Input`] choices there.
    pub fn inputs_at(&self, depth: usize) -> Vec<usize> {
        let Some(l) = self.loops.get(depth) else {
            return Vec::new();
        };
        (0..self.inputs.len())
            .filter(|&k| self.inputs[k].terms.contains(&Term::Var(l.var)))
            .collect()
    }

    /// Makes the loop nest a tree where that saves work: after the loops
    /// that bind the output variables (and never at the outermost loop,
    /// which parallel workers divide), the remaining loops are grouped by
    /// the inputs they share; a group that shares no input with the loops
    /// after it becomes a subtree of its own, whose sum multiplies the
    /// sum of its siblings (`Σ_{x,y} f(x)·g(y) = Σ_x f(x) · Σ_y g(y)`),
    /// recursively. Among the loops that bind the output variables (the
    /// trunk, a path), a summed loop that no chain of inputs joins to an
    /// output variable still unbound goes first, with the loops joined to
    /// it, as a subtree whose sum multiplies every entry the loops after
    /// it write (`Σ_o A[s,p,o] · B[p,j]` takes `Σ_o A[s,p,o]` once per
    /// `(s, p)`, not once per `j`). Only for a `SUM` of a product of
    /// inputs that are 0 where absent, where that identity holds. Each
    /// group keeps its loops' relative order, so every input's level
    /// order is unchanged. Returns whether the tree has a branch.
    pub fn factorize(&mut self) -> bool {
        if !self.sums_a_product() || self.loops.is_empty() {
            return false;
        }
        let inputs: Vec<Vec<usize>> = self
            .inputs
            .iter()
            .map(|a| {
                a.terms
                    .iter()
                    .filter_map(|t| match t {
                        Term::Var(v) => Some(*v),
                        Term::Const(_) => None,
                    })
                    .collect()
            })
            .collect();
        let n = self.loops.len();
        let mut tree: Vec<Loop> = vec![self.loops[0]];
        let mut rest: Vec<Loop> = self.loops[1..].to_vec();
        while rest.iter().any(|l| self.output.contains(&l.var)) {
            let member = joined_to_head(&rest, &inputs);
            let hoisted = rest
                .iter()
                .zip(&member)
                .all(|(l, &m)| !m || !self.output.contains(&l.var));
            if hoisted {
                let (group, others) = split_members(&rest, &member);
                arrange(&group, &inputs, tree.len(), &mut tree);
                rest = others;
            } else {
                tree.push(Loop { end: n, ..rest[0] });
                rest.remove(0);
            }
        }
        arrange(&rest, &inputs, tree.len(), &mut tree);
        self.loops = tree;
        self.loops.iter().any(|l| l.end < n)
    }

    /// Marks each sibling subtree of the loop tree that repeats the one
    /// just before it ([`Loop::repeats`]): same loop shapes and sizes, and
    /// the same inputs (the same tensor, annotation and fill) read with
    /// the same outer variables and constants, the subtree's own
    /// variables matched by their place in it. (A sum does not depend on
    /// the order its loops run in or the indexes they read.) Runs of such
    /// siblings all point at the first. The loops that bind output
    /// variables (and the subtrees holding them) repeat nothing.
    pub fn mark_repeats(&mut self) {
        for depth in 1..self.loops.len() {
            // A loop not inside the one above starts a sibling subtree.
            if self.loops[depth - 1].end > depth {
                continue;
            }
            let Some(previous) = self.previous_sibling(depth) else {
                continue;
            };
            if self.binds_output(previous) || self.binds_output(depth) {
                continue;
            }
            if self.same_sums(previous, depth) {
                let first = self.loops[previous].repeats.unwrap_or(previous);
                self.loops[depth].repeats = Some(first);
            }
        }
    }

    /// Whether the subtree starting at loop `depth` binds an output
    /// variable.
    fn binds_output(&self, depth: usize) -> bool {
        self.loops[depth..self.loops[depth].end]
            .iter()
            .any(|l| self.output.contains(&l.var))
    }

    /// The sibling subtree just before the one starting at loop `depth`:
    /// from the first loop inside the innermost loop around `depth` (or
    /// the outermost loop), subtree by subtree.
    fn previous_sibling(&self, depth: usize) -> Option<usize> {
        let parent = (0..depth).rev().find(|&d| self.loops[d].end > depth);
        let mut sibling = parent.map_or(0, |p| p + 1);
        while sibling < depth {
            let end = self.loops[sibling].end;
            if end == depth {
                return Some(sibling);
            }
            sibling = end;
        }
        None
    }

    /// Whether the subtrees starting at loops `a` and `b` sum the same
    /// values for every assignment of the loops around them.
    fn same_sums(&self, a: usize, b: usize) -> bool {
        let (ea, eb) = (self.loops[a].end, self.loops[b].end);
        if ea - a != eb - b {
            return false;
        }
        let shapes_agree = (0..ea - a).all(|i| {
            let (la, lb) = (&self.loops[a + i], &self.loops[b + i]);
            la.end - a == lb.end - b && self.vars[la.var].size == self.vars[lb.var].size
        });
        if !shapes_agree {
            return false;
        }
        let mut left = self.subtree_inputs(a);
        let mut right = self.subtree_inputs(b);
        if left.len() != right.len() {
            return false;
        }
        // Match each input of one subtree to an unused equal one of the
        // other (a handful each: quadratic is fine).
        while let Some((k, terms)) = left.pop() {
            let found = right.iter().position(|(j, other)| {
                *other == terms && self.inputs[k].same_values(&self.inputs[*j])
            });
            match found {
                Some(at) => {
                    right.swap_remove(at);
                }
                None => return false,
            }
        }
        true
    }

    /// The inputs that read a variable of the subtree starting at loop
    /// `depth`, each with its terms: the subtree's variables by their
    /// place in it, the others as they are.
    fn subtree_inputs(&self, depth: usize) -> Vec<(usize, Vec<LocalTerm>)> {
        let own: Vec<usize> = self.loops[depth..self.loops[depth].end]
            .iter()
            .map(|l| l.var)
            .collect();
        self.inputs
            .iter()
            .enumerate()
            .filter(|(_, access)| {
                access
                    .terms
                    .iter()
                    .any(|t| matches!(t, Term::Var(v) if own.contains(v)))
            })
            .map(|(k, access)| {
                let terms = access
                    .terms
                    .iter()
                    .map(|t| match *t {
                        Term::Var(v) => match own.iter().position(|&w| w == v) {
                            Some(place) => LocalTerm::Own(place),
                            None => LocalTerm::Outer(v),
                        },
                        Term::Const(c) => LocalTerm::Const(c),
                    })
                    .collect();
                (k, terms)
            })
            .collect()
    }

    /// Per variable, the least-numbered variable it is a twin of, if any:
    /// no input reads both, and swapping the two maps the inputs onto
    /// themselves (each input that reads one has an input of the same
    /// values that reads the other in its place). Being twins is an
    /// equivalence. The loop-order search costs a twin's loop that
    /// repeats another's ([`Loop::repeats`]) as one product per
    /// assignment of the loops around it.
    pub fn twins(&self) -> Vec<Option<usize>> {
        let reads = |k: usize, v: usize| self.inputs[k].terms.contains(&Term::Var(v));
        let readers: Vec<usize> = (0..self.vars.len())
            .map(|v| (0..self.inputs.len()).filter(|&k| reads(k, v)).count())
            .collect();
        // Input `j` reads what input `k` reads with `u` and `v` swapped.
        let mirrors = |k: usize, j: usize, u: usize, v: usize| {
            let swap = |t: Term| match t {
                Term::Var(w) if w == u => Term::Var(v),
                Term::Var(w) if w == v => Term::Var(u),
                other => other,
            };
            let (a, b) = (&self.inputs[k], &self.inputs[j]);
            a.terms.len() == b.terms.len()
                && a.terms.iter().zip(&b.terms).all(|(&x, &y)| swap(x) == y)
                && a.same_values(b)
        };
        let twins = |u: usize, v: usize| {
            (0..self.inputs.len())
                .filter(|&k| reads(k, u) || reads(k, v))
                .all(|k| {
                    !(reads(k, u) && reads(k, v))
                        && (0..self.inputs.len()).any(|j| mirrors(k, j, u, v))
                })
        };
        (0..self.vars.len())
            .map(|v| {
                (0..v).find(|&u| {
                    readers[u] > 0
                        && readers[u] == readers[v]
                        && self.vars[u].size == self.vars[v].size
                        && twins(u, v)
                })
            })
            .collect()
    }

    /// Whether the query is a `SUM` of a product of inputs that are 0
    /// where absent: the queries [`PhysicalQuery::factorize`] applies to.
    pub fn sums_a_product(&self) -> bool {
        let product = match &self.body {
            Node::Input(_) => true,
            Node::Map(ScalarOp::Mul, args) => args.iter().all(|a| matches!(a, Node::Input(_))),
            _ => false,
        };
        self.aggregate == Some(AggOp::Sum)
            && product
            && self.inputs.iter().all(|a| a.fill.is_zero())
    }

    /// The query as one matrix product, if it is one (see
    /// [`Contraction`]): a `SUM` over one variable of the product of two
    /// float inputs that are 0 where absent and read no constant, no
    /// repeated variable and no bag's rows, each with at most one variable
    /// besides the summed one, those being the output's.
    pub fn contraction(&self) -> Option<Contraction> {
        let Node::Map(ScalarOp::Mul, args) = &self.body else {
            return None;
        };
        let [Node::Input(left), Node::Input(right)] = args.as_slice() else {
            return None;
        };
        let (left, right) = (*left, *right);
        let operand_vars = |k: usize| -> Option<Vec<usize>> {
            let access = self.inputs.get(k)?;
            let keyed = match &access.source {
                Source::Table {
                    tensor, annotation, ..
                } => !tensor.is_bag() && matches!(annotation, Annotation::Column(_)),
                Source::Result(_) => true,
            };
            let vars = access.distinct_vars()?;
            (keyed
                && access.ty == ValueType::Float64
                && access.fill.is_zero()
                && (1..=2).contains(&vars.len()))
            .then_some(vars)
        };
        let (a, b) = (operand_vars(left)?, operand_vars(right)?);
        let [inner] = self.aggregated.as_slice() else {
            return None;
        };
        let own = |vars: &[usize]| -> Option<Option<usize>> {
            let rest: Vec<usize> = vars.iter().copied().filter(|v| v != inner).collect();
            (rest.len() + 1 == vars.len() && rest.len() <= 1).then(|| rest.first().copied())
        };
        let (rows, cols) = (own(&a)?, own(&b)?);
        let mut output: Vec<usize> = rows.into_iter().chain(cols).collect();
        let mut written = self.output.clone();
        output.sort_unstable();
        written.sort_unstable();
        (self.aggregate == Some(AggOp::Sum)
            && self.ty == ValueType::Float64
            && self.inputs.len() == 2
            && left != right
            && output == written)
            .then_some(Contraction {
                left,
                right,
                rows,
                cols,
                inner: *inner,
                tiled: false,
            })
    }

    /// Whether the result is an intermediate vector over the first
    /// variable of input `driver`: one value per row of it (`X v`), which
    /// a fused pass over `driver` computes row-local.
    pub fn sums_rows_of(&self, driver: usize) -> bool {
        let first = self.inputs.get(driver).and_then(|a| a.terms.first());
        self.role == Role::Intermediate
            && matches!((self.output.as_slice(), first), ([v], Some(Term::Var(w))) if v == w)
    }

    /// How many of the driver's leading variables the output starts with,
    /// when it is those and then the free variable (SpMM's `(i, r)`, a
    /// network layer's `(o, n, k)` over `x[o,n,m]`) and the result is a
    /// `DOUBLE` added into an array, with one or two factors (no sum of
    /// operands nor function of one) reading the free variable, or
    /// written at the driver's entries: the pass then adds into a row of
    /// the output per distinct prefix of the driver's entries rather than
    /// into the whole array (or a list of entries).
    pub fn row_prefix(&self, driven: &Driven) -> Option<usize> {
        let free = driven.free?;
        let (&last, leading) = self.output.split_last()?;
        let terms = &self.inputs.get(driven.driver)?.terms;
        let prefix = !leading.is_empty()
            && leading.len() <= terms.len()
            && leading.iter().zip(terms).all(|(&v, t)| *t == Term::Var(v));
        let rows = driven
            .dense
            .iter()
            .filter(|&&k| {
                self.inputs[k].terms.contains(&Term::Var(free))
                    && !driven.maps.iter().any(|&(j, _)| j == k)
            })
            .count();
        // Written entries (the prefix holds a key of the driver: a row per
        // entry) take any product the pass computes row by row.
        let adds_rows = self.ty == ValueType::Float64
            && match driven.output {
                DrivenOutput::Array => driven.sum.is_empty() && matches!(rows, 1 | 2),
                DrivenOutput::Entries => driven.listed.is_none(),
                DrivenOutput::Grouped => false,
            };
        (last == free && prefix && adds_rows).then_some(leading.len())
    }

    /// The query run entry by entry over input `driver` (see [`Driven`]),
    /// if it is a product that can be: a `SUM` of a product (or a product)
    /// of two or more float inputs that are 0 where absent (or of one such
    /// input summed over some of its variables, a projection), each read by
    /// distinct variables and no constant, the driver a stored table's
    /// value column or its pattern (`X.*`, or a keyed table without
    /// value columns), at most one variable outside the driver's, and at
    /// most one factor that is a sum or difference of such inputs when
    /// the output holds a key of the driver. A count (a `BIGINT` sum of the patterns of
    /// tables that are sets, one of them alone or times patterns of tables
    /// that store every cell, as SQL's `COUNT(*)` beside other
    /// aggregates) runs so too: the pass adds 1 per driver entry in
    /// doubles, exact below 2^53, more than a table has entries. So does
    /// any other `BIGINT` product of such patterns and `BIGINT` inputs
    /// that are 0 where absent, driven by a pattern: the pass computes it
    /// in doubles when every sum it takes stays below 2^52 (checked
    /// before the pass, [`super::driven`]), else the loops run.
    pub fn driven_by(&self, driver: usize) -> Option<Driven> {
        // A stored table's pattern (`X.*`, 1 at every entry) may drive too:
        // the mask the `mask` phase multiplies into a nested sum. So may a
        // bag whose every row is stored once (a keyed table without value
        // columns).
        let pattern = |k: usize| {
            matches!(
                &self.inputs[k].source,
                Source::Table {
                    tensor,
                    annotation: Annotation::Multiplicity,
                    ..
                } if tensor.counts_each_entry_once()
            )
        };
        let count = self.ty == ValueType::Int64 && (0..self.inputs.len()).all(pattern);
        // A `BIGINT` product of patterns and `BIGINT` inputs that are 0
        // where absent, driven by a pattern.
        let integer = self.ty == ValueType::Int64
            && pattern(driver)
            && self.inputs.iter().enumerate().all(|(k, access)| {
                pattern(k) || (access.ty == ValueType::Int64 && access.fill.is_zero())
            });
        // One input summed over some of its variables: a projection, as
        // `SUM(k) t[i,j,k]`, added up entry by entry.
        let projection = self.output.len() < self.vars.len();
        let shape = match &self.body {
            Node::Map(ScalarOp::Mul, args) => {
                ProductShape::of(args, self.ty == ValueType::Float64)?
            }
            Node::Input(k) if count || projection => ProductShape {
                product: vec![*k],
                ..ProductShape::default()
            },
            _ => return None,
        };
        let mut seen: Vec<usize> = shape.inputs().collect();
        let ProductShape {
            product,
            maps,
            sum,
            sum_map,
        } = shape;
        let read = seen.len();
        seen.sort_unstable();
        seen.dedup();
        let every_input_once = seen.len() == read
            && seen.len() == self.inputs.len()
            && (seen.len() >= 2 || count || projection)
            && !sum.iter().any(|&(k, _)| k == driver)
            && !maps.iter().any(|&(k, _)| k == driver);
        let summed = match self.aggregate {
            Some(AggOp::Sum) => true,
            None => self.aggregated.is_empty(),
            Some(_) => false,
        };
        if !every_input_once || !summed || !(self.ty == ValueType::Float64 || count || integer) {
            return None;
        }
        // In a float product, an integer input other than the driver may
        // only be the one whose rows are listed (checked below): its
        // values are read as floats then, never scattered.
        let vars_of = |k: usize| -> Option<Vec<usize>> {
            let access = &self.inputs[k];
            let float = access.ty == ValueType::Float64
                || (k == driver && pattern(k))
                || (integer && k != driver);
            let bag = matches!(
                &access.source,
                Source::Table {
                    annotation: Annotation::Multiplicity,
                    ..
                }
            );
            let listable = k != driver && access.ty == ValueType::Int64 && !bag;
            let vars = access.distinct_vars()?;
            ((float || listable) && access.fill.is_zero()).then_some(vars)
        };
        let stored = match &self.inputs.get(driver)?.source {
            Source::Table { tensor, .. } => tensor.counts_each_entry_once(),
            Source::Result(_) => false,
        };
        let driver_vars = vars_of(driver).filter(|_| stored)?;
        // The pattern of a full table (`Y.*` where `Y` stores every cell),
        // or the driver's own pattern read again at the same coordinates
        // (`L * L`, two reads of one entry by a key), is 1 wherever the
        // driver has an entry: a factor to leave out.
        let again = |k: usize| match (&self.inputs[k].source, &self.inputs[driver].source) {
            (Source::Table { tensor: a, .. }, Source::Table { tensor: b, .. }) => {
                Arc::ptr_eq(a, b) && self.inputs[k].terms == self.inputs[driver].terms
            }
            _ => false,
        };
        let ones = |k: usize| {
            k != driver
                && product.contains(&k)
                && pattern(k)
                && (again(k)
                    || matches!(&self.inputs[k].source, Source::Table { tensor, .. } if tensor.is_full()))
        };
        let mut free = None;
        let mut left_out = Vec::new();
        for (k, access) in self.inputs.iter().enumerate() {
            if let Source::Table { tensor, .. } = &access.source
                && !tensor.counts_each_entry_once()
            {
                return None;
            }
            if ones(k) {
                let vars = access.distinct_vars()?;
                // Every driver coordinate must lie inside the table.
                let size = |k: usize, d: usize| match &self.inputs[k].source {
                    Source::Table { tensor, .. } => tensor.dims().get(d).map(|d| d.size),
                    Source::Result(_) => None,
                };
                let covered = vars.iter().enumerate().all(|(d, v)| {
                    driver_vars
                        .iter()
                        .position(|w| w == v)
                        .is_some_and(|p| size(k, d) >= size(driver, p))
                });
                if !covered {
                    return None;
                }
                left_out.push(k);
                continue;
            }
            let mapped = maps.iter().any(|&(j, _)| j == k);
            for v in vars_of(k)? {
                if driver_vars.contains(&v) || free == Some(v) {
                    continue;
                }
                if free.is_some() || k == driver || mapped {
                    return None;
                }
                free = Some(v);
            }
        }
        let covers = |v: &usize| driver_vars.contains(v) || free == Some(*v);
        let read: Vec<usize> = driver_vars.iter().copied().chain(free).collect();
        if !self.output.iter().all(covers)
            || !self.aggregated.iter().all(covers)
            || read.len() != self.output.len() + self.aggregated.len()
        {
            return None;
        }
        // The output has a key of the driver: each entry is its own
        // result entry.
        let (key, entries) = match &self.inputs[driver].source {
            Source::Table { tensor, .. } => (tensor.key_prefix(), tensor.nnz() as u64),
            Source::Result(_) => (driver_vars.len(), 0),
        };
        let cells = self
            .output
            .iter()
            .try_fold(1u64, |c, &v| c.checked_mul(self.vars[v].size));
        let output = if driver_vars
            .iter()
            .take(key)
            .all(|v| self.output.contains(v))
        {
            DrivenOutput::Entries
        } else if free.is_none()
            && entries >= GROUPED_MIN_ENTRIES
            && cells.is_some_and(|c| c > entries.saturating_mul(GROUPED_CELLS_PER_ENTRY))
        {
            DrivenOutput::Grouped
        } else {
            DrivenOutput::Array
        };
        // A count at every driver variable is the driver's pattern, which
        // the loops store as it is; one at a key and some of the other
        // variables (`SUM(p,c) L[o,n,s,p,c]`, `(o, n)` a key) is 1 at each
        // entry's projection, written entry by entry.
        if (count && output == DrivenOutput::Entries && self.output.len() == driver_vars.len())
            || (!sum.is_empty() && output != DrivenOutput::Entries)
        {
            return None;
        }
        let dense: Vec<usize> = (0..self.inputs.len())
            .filter(|&k| k != driver && !left_out.contains(&k))
            .collect();
        let at_entries = dense
            .iter()
            .copied()
            .filter(|&k| self.read_at_entries(k, &driver_vars, entries))
            .collect();
        let mut driven = Driven {
            driver,
            dense,
            ones: left_out,
            sum,
            sum_map,
            maps,
            at_entries,
            free,
            output,
            local: None,
            rows: None,
            listed: None,
            row_prefix: None,
        };
        // A float product lists its one integer input, if any (an integer
        // product reads every input as floats).
        let integers: Vec<usize> = driven
            .dense
            .iter()
            .copied()
            .filter(|&k| self.inputs[k].ty != ValueType::Float64)
            .collect();
        match integers[..] {
            _ if integer => {}
            [] => {}
            [k] if self.listable_rows(&driven) == Some(k) => driven.listed = Some(k),
            _ => return None,
        }
        Some(driven)
    }

    /// The query as a pass over joined pairs of entries (see [`Paired`]),
    /// if it can be one: a `DOUBLE` `SUM` of a product (or a product), 0
    /// where its inputs are absent, of two tables (see
    /// [`PhysicalQuery::pair_side`]) that share a variable and together
    /// read every variable, each one's entries told apart by the output's
    /// variables, times `DOUBLE` inputs that each read only one table's
    /// variables (factors, factors read through a function, or terms of at
    /// most one sum factor) or variables of both (factors read at each
    /// pair), each scattered into at most [`PAIRED_CELLS`] cells. The left
    /// table is the one that reads the output's first variable.
    pub fn as_paired(&self) -> Option<Paired> {
        let summed = match self.aggregate {
            Some(AggOp::Sum) => true,
            None => self.aggregated.is_empty(),
            Some(_) => false,
        };
        if self.ty != ValueType::Float64 || !summed || !self.fill.is_zero() {
            return None;
        }
        let Node::Map(ScalarOp::Mul, args) = &self.body else {
            return None;
        };
        let shape = ProductShape::of(args, true)?;
        let mut seen: Vec<usize> = shape.inputs().collect();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != shape.inputs().count() || seen.len() != self.inputs.len() {
            return None;
        }
        let first = *self.output.first()?;
        let mut sides: Vec<usize> = shape.product.clone();
        // The table that reads the output's first variable goes left.
        sides.sort_by_key(|&k| !self.inputs[k].terms.contains(&Term::Var(first)));
        for &left in &sides {
            for &right in &sides {
                if left == right {
                    continue;
                }
                if let Some(paired) = self.pair(&shape, (left, right)) {
                    return Some(paired);
                }
            }
        }
        None
    }

    /// [`PhysicalQuery::as_paired`] with `left` and `right` the tables.
    fn pair(&self, shape: &ProductShape, (left, right): (usize, usize)) -> Option<Paired> {
        let left_vars = self.pair_side(left)?;
        let right_vars = self.pair_side(right)?;
        let shared: Vec<usize> = left_vars
            .iter()
            .copied()
            .filter(|v| right_vars.contains(v))
            .collect();
        let read = |v: &usize| left_vars.contains(v) || right_vars.contains(v);
        if shared.is_empty() || !self.output.iter().all(read) || !self.aggregated.iter().all(read) {
            return None;
        }
        let mut reads = Vec::new();
        for (k, access) in self.inputs.iter().enumerate() {
            if k == left || k == right {
                continue;
            }
            let part = if shape.product.contains(&k) {
                PairedPart::Factor
            } else if let Some(&(_, op)) = shape.maps.iter().find(|&&(j, _)| j == k) {
                PairedPart::Map(op)
            } else {
                let &(_, negated) = shape.sum.iter().find(|&&(j, _)| j == k)?;
                PairedPart::Term(negated)
            };
            let column = matches!(
                &access.source,
                Source::Table {
                    annotation: Annotation::Column(_),
                    ..
                } | Source::Result(_)
            );
            if !column || access.ty != ValueType::Float64 || !access.fill.is_zero() {
                return None;
            }
            let vars = access.distinct_vars()?;
            let full = matches!(&access.source, Source::Table { tensor, .. } if tensor.is_full());
            let cells = vars
                .iter()
                .try_fold(1u64, |c, &v| c.checked_mul(self.vars[v].size));
            if !full && cells.is_none_or(|c| c > PAIRED_CELLS) {
                return None;
            }
            let at = if vars.iter().all(|v| left_vars.contains(v)) {
                PairedAt::Left
            } else if vars.iter().all(|v| right_vars.contains(v)) {
                PairedAt::Right
            } else if part == PairedPart::Factor {
                PairedAt::Pair
            } else {
                return None;
            };
            reads.push(PairedRead { input: k, at, part });
        }
        Some(Paired {
            left,
            right,
            shared,
            reads,
            sum_map: shape.sum_map,
        })
    }

    /// The variables of input `k`, when it can be a table of a [`Paired`]
    /// query: a stored table's `DOUBLE` or `BIGINT` value column or its
    /// pattern, each row stored once, whose entries the output's
    /// variables tell apart ([`Tensor::distinct_at`]), or an earlier
    /// `DOUBLE` or `BIGINT` result (whose entries the run checks so), 0
    /// where absent, read by distinct variables.
    fn pair_side(&self, k: usize) -> Option<Vec<usize>> {
        let access = &self.inputs[k];
        let vars = access.distinct_vars()?;
        let numbers = matches!(access.ty, ValueType::Float64 | ValueType::Int64);
        if !access.fill.is_zero() || !numbers {
            return None;
        }
        match &access.source {
            Source::Table { tensor, .. } => {
                let written: Vec<usize> = (0..vars.len())
                    .filter(|&d| self.output.contains(&vars[d]))
                    .collect();
                (tensor.counts_each_entry_once() && tensor.distinct_at(&written)).then_some(vars)
            }
            Source::Result(_) => Some(vars),
        }
    }

    /// Whether input `k` of a query driven by `entries` entries over
    /// `driver_vars` is read at the driver's entries (see
    /// [`Driven::at_entries`]).
    fn read_at_entries(&self, k: usize, driver_vars: &[usize], entries: u64) -> bool {
        let access = &self.inputs[k];
        let full = matches!(&access.source, Source::Table { tensor, .. } if tensor.is_full());
        let Some(vars) = access.distinct_vars() else {
            return false;
        };
        let cells = vars
            .iter()
            .try_fold(1u64, |c, &v| c.checked_mul(self.vars[v].size));
        !full
            && !vars.is_empty()
            && driver_vars.starts_with(&vars)
            && cells.is_none_or(|c| c / ENTRY_CELLS >= entries)
    }

    /// The input of `driven` whose rows along the free variable can be
    /// listed by their non-zero cells instead of scattered into an array
    /// ([`Driven::listed`]): the one input that reads the free variable,
    /// as its last dimension, when the result is an array that holds the
    /// free variable and the input is an earlier result or a stored table
    /// that does not store every cell.
    pub fn listable_rows(&self, driven: &Driven) -> Option<usize> {
        let free = driven.free?;
        if driven.output != DrivenOutput::Array || !self.output.contains(&free) {
            return None;
        }
        let mut readers = driven
            .dense
            .iter()
            .filter(|&&k| self.inputs[k].terms.contains(&Term::Var(free)));
        let (Some(&k), None) = (readers.next(), readers.next()) else {
            return None;
        };
        let terms = &self.inputs[k].terms;
        let stored_full =
            matches!(&self.inputs[k].source, Source::Table { tensor, .. } if tensor.is_full());
        (terms.last() == Some(&Term::Var(free))
            && terms.iter().filter(|&&t| t == Term::Var(free)).count() == 1
            && !driven.sum.iter().any(|&(j, _)| j == k)
            && driven.local != Some(k)
            && !stored_full)
            .then_some(k)
    }

    /// How many loops enclose loop `depth` (its depth in the loop tree).
    pub fn tree_depth(&self, depth: usize) -> usize {
        self.loops
            .iter()
            .take(depth)
            .filter(|l| l.end > depth)
            .count()
    }

    /// How many leading loops bind output variables: the output levels
    /// that are written in order.
    pub fn sorted_prefix(&self) -> usize {
        self.loops
            .iter()
            .take_while(|l| self.output.contains(&l.var))
            .count()
    }

    /// The result's name and output indices, as EXPLAIN shows them:
    /// `#e1[a,c]`, or just the name of a scalar.
    pub fn head(&self) -> String {
        if self.output.is_empty() {
            return self.name.clone();
        }
        let outputs: Vec<&str> = self.output.iter().map(|&v| self.var_name(v)).collect();
        format!("{}[{}]", self.name, outputs.join(","))
    }

    fn var_name(&self, v: usize) -> &str {
        self.vars.get(v).map_or("?", |var| var.name.as_str())
    }

    fn input_name(&self, k: usize) -> String {
        let Some(access) = self.inputs.get(k) else {
            return "?".to_string();
        };
        let terms: Vec<String> = access
            .terms
            .iter()
            .map(|t| match t {
                Term::Var(v) => self.var_name(*v).to_string(),
                Term::Const(c) => c.to_string(),
            })
            .collect();
        let name = match &access.source {
            Source::Table {
                name,
                tensor,
                annotation,
            } => match annotation {
                Annotation::Column(c) => match tensor.values().get(*c) {
                    Some(column) if !tensor.is_bag() => format!("{name}.{}", column.name),
                    _ => name.clone(),
                },
                Annotation::Multiplicity if tensor.is_bag() => name.clone(),
                Annotation::Multiplicity => format!("{name}.*"),
            },
            Source::Result(name) => name.clone(),
        };
        format!("{name}[{}]", terms.join(","))
    }

    /// The EXPLAIN lines of a query run by `driven`: its driver, how each
    /// other input is read, the free variable's loop and the result.
    fn write_driven(&self, f: &mut fmt::Formatter<'_>, driven: &Driven) -> fmt::Result {
        write!(
            f,
            "\n  sparse-driven: for each entry of {}",
            self.input_name(driven.driver)
        )?;
        if let (Some(spec), Source::Table { tensor, .. }) =
            (&driven.rows, &self.inputs[driven.driver].source)
        {
            match tensor.declared_name(spec) {
                Some(name) => write!(f, ", rows from {name}")?,
                None => write!(f, ", rows from its built index")?,
            }
        }
        for &k in &driven.ones {
            write!(f, "\n    {} (1 at every entry)", self.input_name(k))?;
        }
        for &k in &driven.dense {
            let full = match &self.inputs[k].source {
                Source::Table { tensor, .. } => tensor.is_full(),
                Source::Result(_) => false,
            };
            let how = if driven.local == Some(k) {
                "row-local, from the same pass"
            } else if full {
                "read in place"
            } else if driven.at_entries.contains(&k) {
                "read at the driver's entries"
            } else if driven.listed == Some(k) {
                "rows listed by their non-zero cells"
            } else {
                "scattered into an array"
            };
            let through = driven
                .sum_map
                .and_then(ScalarOp::function_name)
                .map_or(String::new(), |name| format!(", read through {name}"));
            let term = match driven.sum.iter().find(|&&(j, _)| j == k) {
                Some((_, false)) => format!("; added in the sum{through}"),
                Some((_, true)) => format!("; subtracted in the sum{through}"),
                None => match driven.maps.iter().find(|&&(j, _)| j == k) {
                    Some((_, op)) => format!("; through {}", op.function_name().unwrap_or("-")),
                    None => String::new(),
                },
            };
            write!(f, "\n    {} ({how}{term})", self.input_name(k))?;
        }
        if let Some(v) = driven.free {
            write!(
                f,
                "\n    per entry, a row over {} ({})",
                self.var_name(v),
                self.vars[v].size
            )?;
        }
        if let (DrivenOutput::Array, Some(prefix)) = (driven.output, driven.row_prefix) {
            let names: Vec<&str> = self.output[..prefix]
                .iter()
                .map(|&v| self.var_name(v))
                .collect();
            return write!(
                f,
                "\n    result: added into a row per ({}) of the driver's entries",
                names.join(",")
            );
        }
        f.write_str(match driven.output {
            DrivenOutput::Array => "\n    result: added into a dense array",
            DrivenOutput::Entries => "\n    result: written at the driver's entries",
            DrivenOutput::Grouped => {
                "\n    result: grouped (entries sorted by the output's coordinates and added)"
            }
        })
    }

    /// The EXPLAIN lines of a query run by `paired`: its two tables, the
    /// variables they share and how each other input is read.
    fn write_paired(&self, f: &mut fmt::Formatter<'_>, paired: &Paired) -> fmt::Result {
        let shared: Vec<&str> = paired.shared.iter().map(|&v| self.var_name(v)).collect();
        write!(
            f,
            "\n  paired: each entry of {} meets the entries of {} that share ({})",
            self.input_name(paired.left),
            self.input_name(paired.right),
            shared.join(",")
        )?;
        for read in &paired.reads {
            let at = match read.at {
                PairedAt::Left => "at the left table's entries",
                PairedAt::Right => "at the right table's entries",
                PairedAt::Pair => "at each pair",
            };
            let through = paired
                .sum_map
                .and_then(ScalarOp::function_name)
                .map_or(String::new(), |name| format!(", read through {name}"));
            let part = match read.part {
                PairedPart::Factor => String::new(),
                PairedPart::Map(op) => format!("; through {}", op.function_name().unwrap_or("-")),
                PairedPart::Term(false) => format!("; added in the sum{through}"),
                PairedPart::Term(true) => format!("; subtracted in the sum{through}"),
            };
            write!(f, "\n    {} ({at}{part})", self.input_name(read.input))?;
        }
        f.write_str("\n    result: one entry per pair")
    }

    /// The value before a finish: the aggregate and the body.
    fn write_value(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(op) = self.aggregate {
            let names: Vec<&str> = self.aggregated.iter().map(|&v| self.var_name(v)).collect();
            write!(f, "{}({}) ", op.name(), names.join(","))?;
        }
        self.write_node(f, &self.body)
    }

    fn write_node(&self, f: &mut fmt::Formatter<'_>, node: &Node) -> fmt::Result {
        self.write_tree(f, node, &|f, k| f.write_str(&self.input_name(k)))
    }

    /// `node`, each input written by `input`.
    fn write_tree(
        &self,
        f: &mut fmt::Formatter<'_>,
        node: &Node,
        input: &dyn Fn(&mut fmt::Formatter<'_>, usize) -> fmt::Result,
    ) -> fmt::Result {
        match node {
            Node::Input(k) => input(f, *k),
            Node::Literal(v) => write!(f, "{v}"),
            Node::Coord(v) => write!(f, "coord({})", self.var_name(*v)),
            Node::Map(op, args) => {
                let name = op.function_name().or_else(|| op.symbol()).unwrap_or("?");
                match (op.symbol(), args.as_slice()) {
                    (Some(symbol), [arg]) => {
                        write!(f, "{symbol}(")?;
                        self.write_tree(f, arg, input)?;
                        f.write_str(")")
                    }
                    (Some(symbol), _) => {
                        f.write_str("(")?;
                        for (n, arg) in args.iter().enumerate() {
                            if n > 0 {
                                write!(f, " {symbol} ")?;
                            }
                            self.write_tree(f, arg, input)?;
                        }
                        f.write_str(")")
                    }
                    (None, _) => {
                        write!(f, "{name}(")?;
                        for (n, arg) in args.iter().enumerate() {
                            if n > 0 {
                                f.write_str(", ")?;
                            }
                            self.write_tree(f, arg, input)?;
                        }
                        f.write_str(")")
                    }
                }
            }
        }
    }
}

/// Appends `seq` (the loops from `offset`, all inside one parent) to
/// `tree` as subtrees: the first loop with every later loop connected to
/// it through shared inputs (its own subtree, arranged the same way), then
/// the loops left, as its siblings.
fn arrange(seq: &[Loop], inputs: &[Vec<usize>], offset: usize, tree: &mut Vec<Loop>) {
    let Some(&head) = seq.first() else {
        return;
    };
    let (group, rest) = split_members(seq, &joined_to_head(seq, inputs));
    let end = offset + group.len();
    tree.push(Loop {
        end,
        repeats: None,
        ..head
    });
    arrange(&group[1..], inputs, offset + 1, tree);
    arrange(&rest, inputs, end, tree);
}

/// Which loops of `seq` a chain of inputs (each given by its variables)
/// joins to its first loop through loops of `seq`.
fn joined_to_head(seq: &[Loop], inputs: &[Vec<usize>]) -> Vec<bool> {
    let mut member = vec![false; seq.len()];
    if let Some(first) = member.first_mut() {
        *first = true;
    }
    let mut grew = true;
    while grew {
        grew = false;
        for vars in inputs {
            let joined = seq
                .iter()
                .zip(&member)
                .any(|(l, &m)| m && vars.contains(&l.var));
            if !joined {
                continue;
            }
            for (l, m) in seq.iter().zip(member.iter_mut()) {
                if !*m && vars.contains(&l.var) {
                    *m = true;
                    grew = true;
                }
            }
        }
    }
    member
}

/// The loops of `seq` that are members, and the others, each in order.
fn split_members(seq: &[Loop], member: &[bool]) -> (Vec<Loop>, Vec<Loop>) {
    let (mut group, mut rest) = (Vec::new(), Vec::new());
    for (&l, &m) in seq.iter().zip(member) {
        if m {
            group.push(l);
        } else {
            rest.push(l);
        }
    }
    (group, rest)
}

impl fmt::Display for PhysicalPlan {
    /// The queries in order; the members of a fused pass under a line
    /// that names them, its driver, and the results it keeps row-local.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, query) in self.queries.iter().enumerate() {
            if n > 0 {
                f.write_str("\n")?;
            }
            if let Some(run) = self.fused.iter().find(|run| run.start == n) {
                self.write_fused(f, &self.queries[run.clone()])?;
            }
            write!(f, "{query}")?;
        }
        Ok(())
    }
}

impl PhysicalPlan {
    /// `Fused pass over the entries of X.v: #e1, r (#e1 row-local, not
    /// stored)`, then a line break.
    fn write_fused(&self, f: &mut fmt::Formatter<'_>, members: &[PhysicalQuery]) -> fmt::Result {
        let names: Vec<&str> = members.iter().map(|q| q.name.as_str()).collect();
        let driver = members
            .first()
            .and_then(|q| Some(q.input_name(q.driven.as_ref()?.driver)))
            .unwrap_or_default();
        let local: Vec<&str> = members
            .iter()
            .filter_map(|q| {
                let k = q.driven.as_ref()?.local?;
                match &q.inputs.get(k)?.source {
                    Source::Result(name) => Some(name.as_str()),
                    Source::Table { .. } => None,
                }
            })
            .collect();
        write!(
            f,
            "Fused pass over the entries of {driver}: {}",
            names.join(", ")
        )?;
        if !local.is_empty() {
            write!(f, " ({} row-local, not stored)", local.join(", "))?;
        }
        f.write_str("\n")
    }
}

impl fmt::Display for PhysicalQuery {
    /// `Query C[i,k] (output; sorted/hashed) = SUM(j) (A[i,j] * B[j,k])`,
    /// then one line per re-index step and per loop.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let formats: Vec<&str> = self.formats.iter().map(|f| f.name()).collect();
        let role = match self.role {
            Role::Output => "output",
            Role::Intermediate => "intermediate",
        };
        write!(f, "Query {} ({role} {}", self.head(), self.ty.sql_name())?;
        if !formats.is_empty() {
            write!(f, ", {}", formats.join("/"))?;
        }
        if !self.fill.is_zero() {
            write!(f, ", fill {}", self.fill)?;
        }
        f.write_str(") = ")?;
        match &self.finish {
            Some(finish) => self.write_tree(f, finish.body(), &|f, _| self.write_value(f))?,
            None => self.write_value(f)?,
        }
        if let Some(product) = self.dense.filter(|p| p.tiled) {
            let names = (
                self.input_name(product.left),
                self.input_name(product.right),
            );
            let line = super::tiled::describe(self, &product, (&names.0, &names.1));
            return write!(f, "\n  {line}");
        }
        if let Some(product) = &self.dense {
            let (m, n, k) = product.shape(self);
            return write!(
                f,
                "\n  dense matrix product: {} ({m} × {k}) times {} ({k} × {n})",
                self.input_name(product.left),
                self.input_name(product.right)
            );
        }
        if let Some(driven) = &self.driven {
            return self.write_driven(f, driven);
        }
        if let Some(paired) = &self.paired {
            return self.write_paired(f, paired);
        }
        for (k, access) in self.inputs.iter().enumerate() {
            let declared = match &access.source {
                Source::Table { tensor, .. } => tensor.declared_name(&access.index),
                Source::Result(_) => None,
            };
            if declared.is_some() || !access.index.is_identity() {
                let order: Vec<String> = access
                    .index
                    .order
                    .iter()
                    .map(|&d| match access.terms.get(d) {
                        Some(Term::Var(v)) => self.var_name(*v).to_string(),
                        Some(Term::Const(c)) => c.to_string(),
                        None => "?".to_string(),
                    })
                    .collect();
                let formats: Vec<&str> = access.index.formats.iter().map(|f| f.name()).collect();
                let how = match &declared {
                    Some(name) => format!("read {} USING {name}", self.input_name(k)),
                    None => format!("reindex {}", self.input_name(k)),
                };
                write!(
                    f,
                    "\n  {how} as ({}) {}",
                    order.join(","),
                    formats.join("/")
                )?;
            }
        }
        // The loops inside a repeated subtree do not run: not shown.
        let mut shown_from = 0;
        for (depth, l) in self.loops.iter().enumerate() {
            if depth < shown_from {
                continue;
            }
            let read = self.inputs_at(depth);
            let var = self.var_name(l.var);
            // A loop that is not inside the one above it starts a sibling
            // subtree, whose sum multiplies the sums before it.
            let sibling = depth > 0 && self.loops[depth - 1].end <= depth;
            write!(
                f,
                "\n  {}{}for {var}: ",
                "  ".repeat(self.tree_depth(depth)),
                if sibling { "× " } else { "" }
            )?;
            if let Some(first) = l.repeats {
                let twin = self.loops.get(first).map_or("?", |t| self.var_name(t.var));
                write!(f, "the same sum as for {twin}, taken once")?;
                shown_from = l.end;
                continue;
            }
            if read.is_empty() {
                f.write_str("every coordinate")?;
                continue;
            }
            let level_format = |k: usize| {
                let access = &self.inputs[k];
                access
                    .index
                    .order
                    .iter()
                    .position(|&d| access.terms.get(d) == Some(&Term::Var(l.var)))
                    .and_then(|level| access.index.formats.get(level))
                    .copied()
                    .unwrap_or(LevelFormat::Compressed)
            };
            let names: Vec<String> = read
                .iter()
                .map(|&k| format!("{} ({})", self.input_name(k), level_format(k)))
                .collect();
            match l.driver {
                Driver::Input(d) if read.contains(&d) => {
                    write!(f, "iterate {} ({})", self.input_name(d), level_format(d))?;
                    let others: Vec<&String> = read
                        .iter()
                        .zip(&names)
                        .filter(|(k, _)| **k != d)
                        .map(|(_, n)| n)
                        .collect();
                    if !others.is_empty() {
                        let others: Vec<&str> = others.iter().map(|s| s.as_str()).collect();
                        write!(f, "; look up {}", others.join(", "))?;
                    }
                }
                _ if read.len() == 1 => write!(f, "iterate {}", names.join(""))?,
                _ => write!(
                    f,
                    "iterate the shortest of {}; look up the others",
                    names.join(", ")
                )?,
            }
        }
        Ok(())
    }
}
