//! The loop nest of one physical query over fibertree cursors, for any
//! pointwise expression and aggregate (the general path; products of inputs
//! under `SUM` take the faster [`super::product`] path).
//!
//! Every input has a position in its fibertree and a presence flag. The
//! expression's *support* ([`Sup`]) says which inputs must be present for
//! its value to differ from its fill: all of the inputs of an annihilating
//! operator (`*` with fill 0), any input of the others (`+`, `max`,
//! comparisons); for `ifelse(c, a, b)`, the inputs of `c` and of the
//! branch that `c`'s fill picks. At each loop the candidate coordinates are computed from
//! the support (the driver's fiber for an intersection, the merged fibers
//! for a union, every coordinate where nothing restricts the variable),
//! then every input read at that loop looks the coordinate up, and the
//! assignment is skipped when the support can no longer hold. A loop that
//! reads one level of one input, which the support requires and no other
//! input is fixed to drive, iterates that input's fiber without working
//! the support out ([`Kernel::sole`]); the support is checked again only
//! when an input went missing (the root's is checked before any loop).
//!
//! The loops that bind output variables are *walked*; once every output
//! variable is bound, the remaining (aggregated) loops are *grouped*: their
//! values are combined into one [`Slot`] per depth before returning to the
//! outer loop, which adds it to the output accumulator, or writes it
//! straight into the entries when the output loops are in the output's
//! order and every aggregated loop among them has visited at most one
//! coordinate so far in the group of leading output loops
//! ([`Kernel::between_outputs`]).
//!
//! The expression is evaluated at every innermost assignment, except its
//! largest sub-expressions that read only inputs and coordinates an outer
//! loop fixes ([`Body::Hoisted`]): each of those is evaluated once per
//! visit of that loop, when first needed there, and its value reused by
//! the assignments below (`L[o,n,s,p] * (A[o,n,p] + B[s] * C[o,n,p])`
//! looping `o, n, p, s, ...` evaluates the sum once per `s`). A loop
//! driven by one input's fiber reads that fiber's children in place
//! ([`Visits::Children`]), their positions known.

use std::cell::Cell;

use arrow::buffer::BooleanBuffer;

use crate::error::{Error, Result};
use crate::ir::{Annotation, ScalarOp, Value};
use crate::storage::fibertree::{Fiber, FiberTree, LeafValues};
use crate::storage::tensor::ValueType;

use super::accumulate::{Accumulator, AccumulatorPool, Entries, Slot};
use super::control::{CHECK_EVERY, Control, Held, RowBudget, rows_of};
use super::plan::{Driver, Node, OutputFormat, PhysicalQuery, Term};

/// The values of an input by leaf position.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Vals<'a> {
    Bool(&'a BooleanBuffer),
    Int(&'a [i64]),
    /// `HUGEINT`s.
    Huge(&'a [i128]),
    Float(&'a [f64]),
    /// 1 for every stored row (the multiplicity of a keyed table).
    One,
}

impl Vals<'_> {
    /// The value at leaf position `p`.
    #[inline]
    pub(crate) fn get(&self, p: usize) -> Value {
        match self {
            Vals::Bool(b) => Value::Bool(p < b.len() && b.value(p)),
            Vals::Int(v) => Value::Int(v.get(p).copied().unwrap_or(0)),
            Vals::Huge(v) => Value::huge(v.get(p).copied().unwrap_or(0)),
            Vals::Float(v) => Value::Float(v.get(p).copied().unwrap_or(0.0)),
            Vals::One => Value::Int(1),
        }
    }
}

/// The values of `tree` for an annotation: a value column, or the
/// multiplicity (the bag's column, or 1 per row of a keyed table).
pub(crate) fn values_of(tree: &FiberTree, annotation: Annotation, bag: bool) -> Result<Vals<'_>> {
    let column = match annotation {
        Annotation::Multiplicity if !bag => return Ok(Vals::One),
        Annotation::Multiplicity => 0,
        Annotation::Column(c) => c,
    };
    Ok(match tree.leaf_values(column) {
        Some(LeafValues::Boolean(b)) => Vals::Bool(b),
        Some(LeafValues::Int64(v)) => Vals::Int(v),
        Some(LeafValues::Int128(v)) => Vals::Huge(v),
        Some(LeafValues::Float64(v)) => Vals::Float(v),
        None => {
            return Err(Error::Internal(
                "an input reads a value column its tensor does not have".to_string(),
            ));
        }
    })
}

/// One input of a running query.
pub(crate) struct InputRt<'a> {
    pub tree: &'a FiberTree,
    pub values: Vals<'a>,
    pub fill: Value,
    /// The coordinates of the leading constant levels.
    pub consts: Vec<i64>,
}

impl<'a> InputRt<'a> {
    /// The fiber of `level` under `parent`.
    #[inline]
    pub(crate) fn fiber(&self, level: usize, parent: usize) -> Option<Fiber<'a>> {
        self.tree.levels().get(level).map(|l| l.fiber(parent))
    }

    /// The position after looking `coord` up in `count` levels from
    /// `level`, starting under `parent`.
    #[inline]
    pub(crate) fn descend(
        &self,
        parent: usize,
        level: usize,
        count: usize,
        coord: i64,
    ) -> Option<usize> {
        let mut p = parent;
        for l in level..level + count {
            p = self.fiber(l, p)?.lookup(coord)?;
        }
        Some(p)
    }

    /// The root position and presence, after the constant levels.
    pub(crate) fn root(&self) -> (usize, bool) {
        if self.tree.nnz() == 0 {
            return (0, false);
        }
        match self.descend_consts() {
            Some(p) => (p, true),
            None => (0, false),
        }
    }

    fn descend_consts(&self) -> Option<usize> {
        let mut p = 0;
        for (l, &c) in self.consts.iter().enumerate() {
            p = self.fiber(l, p)?.lookup(c)?;
        }
        Some(p)
    }
}

/// The inputs read at one loop: `count` consecutive levels from `level`
/// (more than one when a variable repeats, as in `A[i,i]`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part {
    pub input: usize,
    pub level: usize,
    pub count: usize,
}

/// Where the value of an expression may differ from its fill value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sup {
    /// Nowhere (a constant).
    Never,
    /// Anywhere (a coordinate).
    Always,
    /// Where the input has an entry.
    Input(usize),
    /// Where all hold (the arguments that annihilate an operator).
    And(Vec<Sup>),
    /// Where any holds.
    Or(Vec<Sup>),
}

impl Sup {
    /// The support and fill value of `node`, given the inputs' fills.
    pub(crate) fn of(node: &Node, fills: &[Value]) -> Result<(Sup, Value)> {
        Ok(match node {
            Node::Input(k) => (
                Sup::Input(*k),
                fills.get(*k).copied().unwrap_or(Value::Int(0)),
            ),
            Node::Literal(v) => (Sup::Never, *v),
            Node::Coord(_) => (Sup::Always, Value::Int(0)),
            Node::Map(op, args) => {
                let parts = args
                    .iter()
                    .map(|a| Sup::of(a, fills))
                    .collect::<Result<Vec<_>>>()?;
                let arg_fills: Vec<Value> = parts.iter().map(|p| p.1).collect();
                let fill = op.apply(&arg_fills)?;
                let annihilating: Vec<Sup> = match op.algebra().annihilator {
                    Some(a) => parts
                        .iter()
                        .enumerate()
                        .filter(|(n, p)| (*n == 0 || !a.only_first) && p.1.same(a.value))
                        .map(|(_, p)| p.0.clone())
                        .collect(),
                    None => Vec::new(),
                };
                let sup = match (op, parts.as_slice()) {
                    // Where the condition is at its fill, `ifelse` is the
                    // branch that fill picks: the other branch's support
                    // does not count (`MAX(i)` over a table's rows is
                    // `ifelse(T.*, coord(i), MIN)`, no wider than `T`).
                    (ScalarOp::IfElse, [condition, then, otherwise]) => {
                        let picked = if condition.1.is_zero() {
                            otherwise
                        } else {
                            then
                        };
                        Sup::or(vec![condition.0.clone(), picked.0.clone()])
                    }
                    _ if annihilating.is_empty() => {
                        Sup::or(parts.into_iter().map(|p| p.0).collect())
                    }
                    _ => Sup::and(annihilating),
                };
                (sup, fill)
            }
        })
    }

    fn and(items: Vec<Sup>) -> Sup {
        let mut kept = Vec::new();
        for item in items {
            match item {
                Sup::Never => return Sup::Never,
                Sup::Always => {}
                Sup::And(inner) => kept.extend(inner),
                other => kept.push(other),
            }
        }
        match kept.len() {
            0 => Sup::Always,
            1 => kept.remove(0),
            _ => Sup::And(kept),
        }
    }

    fn or(items: Vec<Sup>) -> Sup {
        let mut kept = Vec::new();
        for item in items {
            match item {
                Sup::Always => return Sup::Always,
                Sup::Never => {}
                Sup::Or(inner) => kept.extend(inner),
                other => kept.push(other),
            }
        }
        match kept.len() {
            0 => Sup::Never,
            1 => kept.remove(0),
            _ => Sup::Or(kept),
        }
    }

    /// Whether the support holds only where input `k` has an entry.
    fn requires(&self, k: usize) -> bool {
        match self {
            Sup::Never | Sup::Always => false,
            Sup::Input(i) => *i == k,
            Sup::And(items) => items.iter().any(|s| s.requires(k)),
            Sup::Or(items) => !items.is_empty() && items.iter().all(|s| s.requires(k)),
        }
    }

    /// Whether the support can hold given which inputs are present.
    pub(crate) fn feasible(&self, present: &[bool]) -> bool {
        match self {
            Sup::Never => false,
            Sup::Always => true,
            Sup::Input(k) => present.get(*k).copied().unwrap_or(false),
            Sup::And(items) => items.iter().all(|s| s.feasible(present)),
            Sup::Or(items) => items.iter().any(|s| s.feasible(present)),
        }
    }
}

/// The expression as a worker evaluates it: the plan's [`Node`]s, with
/// each largest sub-expression that is fixed by a loop outside the
/// innermost one replaced by a reference to it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Body {
    Input(usize),
    Literal(Value),
    Coord(usize),
    Map(ScalarOp, Vec<Body>),
    /// The value of [`Kernel::hoisted`]`[h]`, computed once per visit of
    /// its loop.
    Hoisted(usize),
}

/// A sub-expression whose inputs and coordinates are all fixed once loop
/// `depth` is bound.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hoisted {
    pub depth: usize,
    pub body: Body,
}

impl Body {
    /// `node` as a body, its fixed sub-expressions moved to `hoisted`,
    /// with the loop that fixes it (`None`: none, a constant). `fixed_at`
    /// gives the loop that fixes an input's or a coordinate's value;
    /// sub-expressions fixed only at `innermost` stay.
    fn of(
        node: &Node,
        fixed_at: &impl Fn(&Node) -> Option<usize>,
        innermost: usize,
        hoisted: &mut Vec<Hoisted>,
    ) -> (Body, Option<usize>) {
        match node {
            Node::Input(k) => (Body::Input(*k), fixed_at(node)),
            Node::Literal(v) => (Body::Literal(*v), None),
            Node::Coord(v) => (Body::Coord(*v), fixed_at(node)),
            Node::Map(op, args) => {
                let args: Vec<(Body, Option<usize>)> = args
                    .iter()
                    .map(|a| Body::of(a, fixed_at, innermost, hoisted))
                    .collect();
                let depth = args.iter().filter_map(|a| a.1).max();
                let args = args
                    .into_iter()
                    .map(|(body, fixed)| Body::hoist(body, fixed, depth, innermost, hoisted))
                    .collect();
                (Body::Map(*op, args), depth)
            }
        }
    }

    /// `body` (fixed at loop `fixed`) as a reference to it in `hoisted`
    /// when it is an operator fixed outside the innermost loop and outside
    /// `reader`, the loop that fixes the expression reading it; else as
    /// it is.
    fn hoist(
        body: Body,
        fixed: Option<usize>,
        reader: Option<usize>,
        innermost: usize,
        hoisted: &mut Vec<Hoisted>,
    ) -> Body {
        match (body, fixed) {
            (body @ Body::Map(..), Some(d)) if Some(d) < reader && d < innermost => {
                hoisted.push(Hoisted { depth: d, body });
                Body::Hoisted(hoisted.len() - 1)
            }
            (body, _) => body,
        }
    }
}

/// A physical query ready to run: its inputs opened, its loops resolved.
pub(crate) struct Kernel<'a> {
    pub query: &'a PhysicalQuery,
    pub inputs: Vec<InputRt<'a>>,
    /// The expression, and its sub-expressions fixed by an outer loop.
    pub body: Body,
    pub hoisted: Vec<Hoisted>,
    /// Per loop, the inputs read there.
    pub parts: Vec<Vec<Part>>,
    /// Per loop and input, its position in `parts` (if read there).
    pub part_of: Vec<Vec<Option<usize>>>,
    pub sup: Sup,
    /// Per loop, the one input read there (at one level) when the
    /// support requires it and the loop's driver is that input or the
    /// shortest fiber: the loop's candidates are that input's fiber,
    /// without working the support out at each visit.
    pub sole: Vec<Option<Part>>,
    pub body_fill: Value,
    /// Per loop, the end of its subtree ([`Loop::end`](super::plan::Loop::end)).
    pub ends: Vec<usize>,
    /// Per loop, the variable and its size.
    pub vars: Vec<usize>,
    pub sizes: Vec<u64>,
    /// The loops that bind output variables first (written in order).
    pub prefix: usize,
    /// Whether a worker's entries come out in the output's order: the
    /// in-order levels are the output's leading ones, in its order (the
    /// accumulator drains the rest sorted, in the output's order).
    pub in_order: bool,
    /// The depth from which every output variable is bound.
    pub group: usize,
    /// Per loop, whether it is an aggregated loop among those that bind
    /// the output variables after the prefix, where the output variables
    /// are bound in the output's order: while every such loop of a
    /// prefix group visits at most one coordinate (each row of a table
    /// has one value of a functionally dependent column), the output is
    /// written in order without the accumulator ([`Worker::write`]).
    /// Empty when the loops do not allow that.
    pub between_outputs: Vec<bool>,
    /// How many assignments each visited one stands for (aggregated
    /// variables no input reads), and how many each output coordinate
    /// aggregates in all.
    pub copies: u128,
    pub total: u128,
    /// The output variables not bound by the prefix, with their sizes.
    pub suffix: Vec<usize>,
    pub suffix_sizes: Vec<u64>,
    /// Per output dimension, its position in `suffix` (if there).
    pub suffix_of: Vec<Option<usize>>,
    pub accumulator: OutputFormat,
    /// The rows the query may write before it stops (see [`RowBudget`]);
    /// set only when its loops write every output level in order.
    pub budget: Option<&'a RowBudget>,
    /// Where the workers' charges for the entries they hand on go.
    pub held: Option<&'a Held<'a>>,
}

impl<'a> Kernel<'a> {
    /// The loops' estimated work that the outermost loop is split by
    /// ([`PhysicalQuery::work`]), on `threads` threads: only where more
    /// than one runs and the sums are exact (not floating point), whose
    /// value does not depend on how the loop is split. A floating-point
    /// sum is split the same way at every thread count, so its rounding
    /// does not depend on it; on one thread the chunks would only add
    /// their workers and merges.
    pub(crate) fn split_work(&self, threads: usize) -> Option<f64> {
        (threads > 1 && self.query.ty != ValueType::Float64)
            .then_some(self.query.work)
            .flatten()
    }

    /// Resolves `query` over its opened inputs.
    pub(crate) fn new(query: &'a PhysicalQuery, inputs: Vec<InputRt<'a>>) -> Result<Kernel<'a>> {
        let depth_of = |v: usize| query.loops.iter().position(|l| l.var == v);
        let mut parts: Vec<Vec<Part>> = vec![Vec::new(); query.loops.len()];
        for (k, access) in query.inputs.iter().enumerate() {
            let mut level = 0;
            let order = &access.index.order;
            while level < order.len() {
                let term = access.terms.get(order[level]).copied();
                match term {
                    Some(Term::Const(_)) => level += 1,
                    Some(Term::Var(v)) => {
                        let depth = depth_of(v).ok_or_else(|| {
                            Error::Internal("an input variable without a loop".into())
                        })?;
                        let mut count = 1;
                        while order
                            .get(level + count)
                            .and_then(|&d| access.terms.get(d))
                            .is_some_and(|t| *t == Term::Var(v))
                        {
                            count += 1;
                        }
                        parts[depth].push(Part {
                            input: k,
                            level,
                            count,
                        });
                        level += count;
                    }
                    None => {
                        return Err(Error::Internal("an index level without a term".into()));
                    }
                }
            }
        }
        let part_of = parts
            .iter()
            .map(|ps| {
                (0..inputs.len())
                    .map(|k| ps.iter().position(|p| p.input == k))
                    .collect()
            })
            .collect();
        let fills: Vec<Value> = inputs.iter().map(|i| i.fill).collect();
        let (sup, body_fill) = Sup::of(&query.body, &fills)?;
        let sole = parts
            .iter()
            .zip(&query.loops)
            .map(|(ps, l)| match ps.as_slice() {
                [part] if part.count == 1 && sup.requires(part.input) => {
                    let drives = match l.driver {
                        Driver::Smallest => true,
                        Driver::Input(d) => d == part.input,
                    };
                    drives.then_some(*part)
                }
                _ => None,
            })
            .collect();
        // An input's value is fixed at its last loop; one read at no loop
        // (a scalar) at the first. A coordinate without a loop is never
        // treated as fixed.
        let innermost = query.loops.len().saturating_sub(1);
        let fixed_at = |node: &Node| match node {
            Node::Input(k) => Some(
                parts
                    .iter()
                    .rposition(|ps: &Vec<Part>| ps.iter().any(|p| p.input == *k))
                    .unwrap_or(0),
            ),
            Node::Coord(v) => Some(depth_of(*v).unwrap_or(innermost)),
            _ => None,
        };
        let mut hoisted = Vec::new();
        let (body, fixed) = Body::of(&query.body, &fixed_at, innermost, &mut hoisted);
        // The whole expression is read at the innermost loop.
        let body = Body::hoist(body, fixed, Some(innermost), innermost, &mut hoisted);
        let vars: Vec<usize> = query.loops.iter().map(|l| l.var).collect();
        let ends = query.loops.iter().map(|l| l.end).collect();
        let size = |v: usize| query.vars.get(v).map_or(0, |var| var.size);
        let sizes = vars.iter().map(|&v| size(v)).collect();
        let prefix = query.sorted_prefix();
        let group = query
            .output
            .iter()
            .filter_map(|&v| depth_of(v))
            .max()
            .map_or(0, |d| d + 1);
        let mut copies: u128 = 1;
        let mut total: u128 = 1;
        for &v in &query.aggregated {
            total = total.saturating_mul(u128::from(size(v)));
            if !vars.contains(&v) {
                copies = copies.saturating_mul(u128::from(size(v)));
            }
        }
        let prefix_vars = &vars[..prefix];
        let suffix: Vec<usize> = query
            .output
            .iter()
            .copied()
            .filter(|v| !prefix_vars.contains(v))
            .collect();
        let suffix_sizes = suffix.iter().map(|&v| size(v)).collect();
        let suffix_of = query
            .output
            .iter()
            .map(|v| suffix.iter().position(|s| s == v))
            .collect();
        let accumulator = query
            .output
            .iter()
            .zip(&query.formats)
            .find(|(v, _)| suffix.contains(v))
            .map_or(OutputFormat::Hashed, |(_, f)| *f);
        let in_order = query.output.get(..prefix) == vars.get(..prefix);
        let bound_in_order = vars
            .iter()
            .take(group)
            .filter(|v| query.output.contains(v))
            .eq(query.output.iter());
        // The output's order among the loops up to `group` implies that
        // of the prefix (`in_order`).
        let between_outputs = if prefix > 0 && group > prefix && bound_in_order {
            (0..vars.len())
                .map(|d| d >= prefix && d < group && !query.output.contains(&vars[d]))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Kernel {
            query,
            inputs,
            body,
            hoisted,
            parts,
            part_of,
            sup,
            sole,
            body_fill,
            ends,
            vars,
            sizes,
            prefix,
            in_order,
            group,
            between_outputs,
            copies,
            total,
            suffix,
            suffix_sizes,
            suffix_of,
            accumulator,
            budget: None,
            held: None,
        })
    }

    /// The fiber that input `k` iterates at loop `depth` from `parent`.
    #[inline]
    pub(crate) fn fiber_at(&self, depth: usize, k: usize, parent: usize) -> Option<Fiber<'a>> {
        let part = self
            .parts
            .get(depth)?
            .get(self.part_of.get(depth)?.get(k).copied()??)?;
        self.inputs.get(k)?.fiber(part.level, parent)
    }

    /// The chunks' entries of one run as runs to be stored one after
    /// another ([`Entries::merge_chunks`]): the chunks' own when the
    /// outermost loop writes the output in order (the chunks' coordinates
    /// are disjoint), else one, combined coordinate by coordinate in chunk
    /// order with `combine`.
    pub(crate) fn merge_chunks<S: Copy>(
        &self,
        parts: Vec<Entries<S>>,
        control: &Control<'_>,
        combine: impl FnMut(&mut S, S) -> Result<()>,
    ) -> Result<Vec<Entries<S>>> {
        Entries::merge_chunks(
            parts,
            self.prefix > 0,
            (self.accumulator, &self.suffix_sizes),
            control,
            combine,
        )
    }

    /// The final value of an entry: the combination of the visited
    /// assignments and, for the others, the body's fill.
    pub(crate) fn finish(&self, slot: Slot) -> Result<Value> {
        let Some(op) = self.query.aggregate else {
            return Ok(slot.acc.unwrap_or(self.body_fill));
        };
        let missing = self.total.saturating_sub(slot.count);
        if missing == 0 {
            return Ok(slot.acc.unwrap_or(self.query.fill));
        }
        let rest = op.repeat(op.lift(self.body_fill), missing)?;
        match slot.acc {
            Some(acc) => op.combine().apply(&[acc, rest]),
            None => Ok(rest),
        }
    }

    /// The driver fixed for loop `depth`, if any.
    pub(crate) fn fixed_driver(&self, depth: usize) -> Option<usize> {
        match self.query.loops.get(depth)?.driver {
            Driver::Input(k) => Some(k),
            Driver::Smallest => None,
        }
    }
}

/// The candidate coordinates of one loop visit.
#[derive(Clone, Debug)]
pub(crate) enum Cands {
    /// Every coordinate in `lo..hi`.
    Range(i64, i64),
    /// These coordinates, ascending.
    List(Vec<i64>),
}

impl Cands {
    pub(crate) fn len(&self) -> usize {
        match self {
            Cands::Range(lo, hi) => (hi - lo).max(0) as usize,
            Cands::List(v) => v.len(),
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> i64 {
        match self {
            Cands::Range(lo, _) => lo + i as i64,
            Cands::List(v) => v.get(i).copied().unwrap_or(0),
        }
    }

    /// The candidates `from..to` (by position).
    pub(crate) fn slice(&self, from: usize, to: usize) -> Cands {
        match self {
            Cands::Range(lo, _) => Cands::Range(lo + from as i64, lo + to as i64),
            Cands::List(v) => Cands::List(v.get(from..to).unwrap_or(&[]).to_vec()),
        }
    }
}

/// The coordinates one visit of a loop goes through.
enum Visits<'a> {
    Cands(Cands),
    /// The children of `input`'s fiber: coordinates `coords`, the `i`-th
    /// at child position `first + i`.
    Children {
        input: usize,
        coords: &'a [i64],
        first: usize,
    },
}

impl Visits<'_> {
    fn len(&self) -> usize {
        match self {
            Visits::Cands(cands) => cands.len(),
            Visits::Children { coords, .. } => coords.len(),
        }
    }

    /// The `i`-th coordinate, with the input and child position it is
    /// known at.
    #[inline]
    fn get(&self, i: usize) -> (i64, Option<(usize, usize)>) {
        match self {
            Visits::Cands(cands) => (cands.get(i), None),
            Visits::Children {
                input,
                coords,
                first,
            } => (coords[i], Some((*input, first + i))),
        }
    }
}

/// A set of coordinates under construction.
enum Set<'a> {
    Empty,
    All,
    Fiber(usize, Fiber<'a>),
    List(Vec<i64>),
}

impl Set<'_> {
    fn estimate(&self) -> usize {
        match self {
            Set::Empty => 0,
            Set::All => usize::MAX,
            Set::Fiber(_, f) => f.len(),
            Set::List(v) => v.len(),
        }
    }

    fn push_into(self, out: &mut Vec<i64>) {
        match self {
            Set::Fiber(_, f) => match f.sorted_coords() {
                Some(coords) => out.extend_from_slice(coords),
                None => out.extend(f.cursor().map(|(c, _)| c)),
            },
            Set::List(v) => out.extend(v),
            Set::Empty | Set::All => {}
        }
    }
}

/// The state of one worker running a [`Kernel`] over a chunk of the
/// outermost loop.
pub(crate) struct Worker<'k, 'a> {
    k: &'k Kernel<'a>,
    ctl: &'k Control<'k>,
    pub pos: Vec<usize>,
    pub present: Vec<bool>,
    coords: Vec<i64>,
    saved: Vec<(usize, bool)>,
    top: Option<Cands>,
    acc: Accumulator<Slot>,
    /// Where the accumulator came from and goes back to.
    pool: Option<&'k AccumulatorPool<Slot>>,
    out: Written,
    steps: usize,
    reserved: u64,
    /// The part of `reserved` charged ahead of the entries that will use
    /// it ([`Worker::charge`]).
    ahead: u64,
    /// The most coordinates the accumulator held at once, each charged.
    acc_charged: usize,
    /// Set when the row budget ran out: the loop nest unwinds with an
    /// error that [`Worker::run`] drops.
    full: bool,
    /// The bytes charged for the entries in `out`, handed on with them.
    kept: u64,
    /// Per loop, how many times it was entered (a visit's number).
    visits: Vec<u64>,
    /// Per hoisted sub-expression, its value and the visit of its loop it
    /// was computed at.
    cache: Vec<Cell<(u64, Value)>>,
    /// Whether the current prefix group writes its entries straight into
    /// `out` ([`Kernel::between_outputs`]): every aggregated loop among
    /// its output loops visited at most one coordinate so far. Reset as
    /// each group ends ([`Worker::flush`]).
    writes_directly: bool,
}

/// The entries a worker writes: slots, combined later with other chunks'
/// and finished then; or, when its chunk writes output coordinates of its
/// own, each finished to a float as its group of in-order levels ends
/// ([`Worker::run_floats`]), in runs of [`super::accumulate::RUN`] entries (allocated once
/// each: a large result is never copied to grow).
enum Written {
    Slots(Entries<Slot>),
    Floats(Vec<Entries<f64>>),
}

impl Written {
    /// Appends the entry at output coordinates `key` (finished to a float
    /// for float runs); the bytes it takes.
    fn push(
        &mut self,
        k: &Kernel<'_>,
        key: impl IntoIterator<Item = i64>,
        slot: Slot,
    ) -> Result<u64> {
        let dims = k.query.output.len();
        Ok(match self {
            Written::Slots(out) => {
                out.push(key, slot);
                entry_bytes(dims)
            }
            Written::Floats(runs) => {
                let value = k.finish(slot)?.as_f64();
                Entries::next_run(runs, dims, k.in_order).push(key, value);
                float_entry_bytes(dims)
            }
        })
    }
}

/// The output coordinates of an entry: the bound coordinates of the
/// in-order levels, `suffix_key` for the others.
#[inline]
pub(crate) fn output_key<'k>(
    k: &'k Kernel<'_>,
    coords: &'k [i64],
    suffix_key: &'k [i64],
) -> impl Iterator<Item = i64> + 'k {
    k.query
        .output
        .iter()
        .zip(&k.suffix_of)
        .map(move |(&v, suffix)| match suffix {
            Some(j) => suffix_key.get(*j).copied().unwrap_or(0),
            None => coords.get(v).copied().unwrap_or(0),
        })
}

/// A worker's accumulator and entries are returned to the budget when it
/// ends (the caller charges the merged result again), and its accumulator
/// to its pool.
impl Drop for Worker<'_, '_> {
    fn drop(&mut self) {
        self.ctl.release(self.reserved);
        if let Some(pool) = self.pool {
            pool.give(&mut self.acc);
        }
    }
}

/// The bytes a worker charges to the budget at a time, ahead of the
/// entries it writes.
const CHARGE_BLOCK: u64 = 1 << 20;

/// The bytes an output entry of `dims` dimensions takes while it is
/// collected.
pub fn entry_bytes(dims: usize) -> u64 {
    (dims as u64) * 8 + 64
}

/// The bytes a finished float entry of `dims` dimensions takes
/// ([`Worker::run_floats`]).
pub(crate) fn float_entry_bytes(dims: usize) -> u64 {
    (dims as u64 + 1) * 8
}

impl<'k, 'a> Worker<'k, 'a> {
    /// A worker at the root of the loop nest, with an accumulator from
    /// `pool` (else its own).
    pub(crate) fn new(
        k: &'k Kernel<'a>,
        ctl: &'k Control<'k>,
        pool: Option<&'k AccumulatorPool<Slot>>,
    ) -> Result<Worker<'k, 'a>> {
        let (pos, present) = k.inputs.iter().map(InputRt::root).unzip();
        let upfront = Accumulator::<Slot>::upfront_bytes(k.accumulator, &k.suffix_sizes);
        let reserved = u64::try_from(upfront).unwrap_or(u64::MAX);
        ctl.reserve(reserved)?;
        Ok(Worker {
            k,
            ctl,
            pos,
            present,
            coords: vec![0; k.query.vars.len()],
            saved: Vec::new(),
            top: None,
            acc: match pool {
                Some(pool) => pool.take(),
                None => Accumulator::new(k.accumulator, k.suffix_sizes.clone()),
            },
            pool,
            out: Written::Slots(Entries {
                increasing: k.in_order,
                ..Entries::new(k.query.output.len())
            }),
            steps: 0,
            reserved,
            ahead: 0,
            acc_charged: 0,
            full: false,
            kept: 0,
            visits: vec![0; k.vars.len()],
            cache: vec![Cell::new((u64::MAX, Value::Int(0))); k.hoisted.len()],
            writes_directly: !k.between_outputs.is_empty(),
        })
    }

    /// Whether the expression can differ from its fill at the root.
    pub(crate) fn feasible(&self) -> bool {
        self.k.sup.feasible(&self.present)
    }

    /// Runs the loop nest over the outermost candidates `top` (ignored when
    /// there is no loop) and returns the entries written, each with its
    /// output coordinates.
    pub(crate) fn run(mut self, top: Cands) -> Result<Entries<Slot>> {
        self.walk_top(top)?;
        match std::mem::replace(&mut self.out, Written::Floats(Vec::new())) {
            Written::Slots(entries) => Ok(entries),
            Written::Floats(_) => Err(Error::Internal("a worker wrote floats".into())),
        }
    }

    /// [`Worker::run`] for a float query whose chunks write output
    /// coordinates of their own (`prefix > 0`): each entry is finished
    /// ([`Kernel::finish`]) as its group of in-order levels ends, so that
    /// only coordinates and a float per entry are kept.
    pub(crate) fn run_floats(mut self, top: Cands) -> Result<Vec<Entries<f64>>> {
        if self.k.prefix == 0 {
            return Err(Error::Internal(
                "floats finished before the chunks are combined".into(),
            ));
        }
        self.out = Written::Floats(Vec::new());
        self.walk_top(top)?;
        match std::mem::replace(&mut self.out, Written::Floats(Vec::new())) {
            Written::Floats(runs) => Ok(runs),
            Written::Slots(_) => Err(Error::Internal("a worker wrote slots".into())),
        }
    }

    /// Runs the loop nest over `top` and hands the entries' charges on
    /// with them (see [`Held`]).
    fn walk_top(&mut self, top: Cands) -> Result<()> {
        // `enter` relies on it: the support is rechecked only where an
        // input goes missing.
        debug_assert!(self.feasible(), "a loop nest run from an infeasible root");
        self.top = Some(top);
        self.walk_all()?;
        if let Some(held) = self.k.held {
            let kept = self.kept.min(self.reserved);
            held.keep(kept);
            self.reserved -= kept;
        }
        Ok(())
    }

    /// Runs the whole loop nest (or its chunk), writing the entries.
    fn walk_all(&mut self) -> Result<()> {
        let k = self.k;
        if k.group == 0 {
            let slot = self.group(0)?;
            if slot.count > 0 {
                self.accumulate(slot)?;
            }
        } else {
            match self.walk(0) {
                // The row budget ran out: the entries so far are the result.
                Err(_) if self.full => return Ok(()),
                walked => walked?,
            }
        }
        if k.prefix == 0 {
            self.flush()?;
        }
        Ok(())
    }

    /// The candidate coordinates of loop `depth` in the current state.
    pub(crate) fn candidates(&mut self, depth: usize) -> Cands {
        if depth == 0
            && let Some(top) = &self.top
        {
            return top.clone();
        }
        let set = self.loop_set(depth);
        self.cands_of(set, depth)
    }

    /// The coordinates of `set` at loop `depth`.
    fn cands_of(&self, set: Set<'a>, depth: usize) -> Cands {
        let size = self.k.sizes.get(depth).copied().unwrap_or(0);
        match set {
            Set::All => Cands::Range(0, i64::try_from(size).unwrap_or(i64::MAX)),
            Set::Empty => Cands::List(Vec::new()),
            set => {
                let mut out = Vec::new();
                set.push_into(&mut out);
                Cands::List(out)
            }
        }
    }

    /// What loop `depth` visits: the children of the one input's fiber
    /// that drives it, read in place, when that fiber lists them at
    /// consecutive positions and is the input's only level at this loop;
    /// else [`Worker::candidates`].
    fn visits(&mut self, depth: usize) -> Visits<'a> {
        if depth == 0 && self.top.is_some() {
            return Visits::Cands(self.candidates(depth));
        }
        let k = self.k;
        let set = self.loop_set(depth);
        if let Set::Fiber(input, fiber) = &set
            && let Some(part) = k.part_of[depth][*input].map(|j| &k.parts[depth][j])
            && part.count == 1
            && let Some((coords, first)) = fiber.consecutive()
        {
            return Visits::Children {
                input: *input,
                coords,
                first,
            };
        }
        Visits::Cands(self.cands_of(set, depth))
    }

    /// The input whose fiber [`Worker::candidates`] would copy for loop
    /// `depth`, when the candidates are exactly one input's fiber: a
    /// caller that walks that fiber itself needs no copy.
    pub(crate) fn candidate_input(&self, depth: usize) -> Option<usize> {
        if depth == 0 && self.top.is_some() {
            return None;
        }
        match self.loop_set(depth) {
            Set::Fiber(k, _) => Some(k),
            _ => None,
        }
    }

    /// The candidates of loop `depth` as a set: the fiber of its sole
    /// input ([`Kernel::sole`]), else worked out from the support.
    fn loop_set(&self, depth: usize) -> Set<'a> {
        match self.k.sole[depth] {
            Some(part) if !self.present[part.input] => Set::Empty,
            Some(part) => match self.k.inputs[part.input].fiber(part.level, self.pos[part.input]) {
                Some(f) => Set::Fiber(part.input, f),
                None => Set::Empty,
            },
            None => self.set(&self.k.sup, depth),
        }
    }

    fn set(&self, sup: &Sup, depth: usize) -> Set<'a> {
        match sup {
            Sup::Never => Set::Empty,
            Sup::Always => Set::All,
            Sup::Input(k) => {
                if !self.present[*k] {
                    return Set::Empty;
                }
                match self.k.fiber_at(depth, *k, self.pos[*k]) {
                    Some(f) => Set::Fiber(*k, f),
                    None if self.k.part_of[depth][*k].is_some() => Set::Empty,
                    None => Set::All,
                }
            }
            Sup::And(items) => {
                // Any one item's set bounds the intersection, and `enter`
                // checks the whole support: the loop iterates the fixed
                // driver's fiber or the smallest set. A union is built
                // only when no other item narrows the loop as much as the
                // union's items' lengths together (a line item's one part,
                // say, against all the parts of a table).
                let fixed = self.k.fixed_driver(depth);
                let mut chosen: Option<Set<'a>> = None;
                for unions in [false, true] {
                    for item in items {
                        if matches!(item, Sup::Or(_)) != unions {
                            continue;
                        }
                        if unions
                            && let Some(best) = &chosen
                            && (matches!(best, Set::Fiber(k, _) if Some(*k) == fixed)
                                || self.bound(item, depth) >= best.estimate())
                        {
                            continue;
                        }
                        let set = match self.set(item, depth) {
                            Set::Empty => return Set::Empty,
                            Set::All => continue,
                            set => set,
                        };
                        let better = match &chosen {
                            None => true,
                            Some(Set::Fiber(k, _)) if Some(*k) == fixed => false,
                            Some(_) if matches!(set, Set::Fiber(k, _) if Some(k) == fixed) => true,
                            Some(best) => set.estimate() < best.estimate(),
                        };
                        if better {
                            chosen = Some(set);
                        }
                    }
                }
                chosen.unwrap_or(Set::All)
            }
            Sup::Or(items) => {
                // Every item's set first: one that is not narrowed at this
                // loop makes the union everything, with nothing copied.
                let mut sets = Vec::new();
                for item in items {
                    match self.set(item, depth) {
                        Set::All => return Set::All,
                        Set::Empty => {}
                        set => sets.push(set),
                    }
                }
                if sets.is_empty() {
                    return Set::Empty;
                }
                if sets.len() == 1 {
                    return sets.swap_remove(0);
                }
                let mut out = Vec::new();
                for set in sets {
                    set.push_into(&mut out);
                }
                out.sort_unstable();
                out.dedup();
                Set::List(out)
            }
        }
    }

    /// An upper bound on the length of [`Worker::set`] of `sup` at loop
    /// `depth`, found without building a union: a fiber's length, the
    /// least of an intersection's items, the sum of a union's.
    fn bound(&self, sup: &Sup, depth: usize) -> usize {
        match sup {
            Sup::Never => 0,
            Sup::Always => usize::MAX,
            Sup::Input(_) => self.set(sup, depth).estimate(),
            Sup::And(items) => items
                .iter()
                .map(|item| self.bound(item, depth))
                .min()
                .unwrap_or(usize::MAX),
            Sup::Or(items) => items
                .iter()
                .map(|item| self.bound(item, depth))
                .fold(0, usize::saturating_add),
        }
    }

    /// Binds loop `depth` to `coord` and looks it up in the inputs read
    /// there, except under the one whose child position is `known` (the
    /// input and the position); `false` (with the state restored) if the
    /// support cannot hold.
    #[inline]
    fn enter(&mut self, depth: usize, coord: i64, known: Option<(usize, usize)>) -> bool {
        let k = self.k;
        if let Some(&v) = k.vars.get(depth) {
            self.coords[v] = coord;
        }
        // The support held before this loop (the root's is checked before
        // any loop runs): it can fail only where an input went missing.
        let mut lost = false;
        for part in &k.parts[depth] {
            let i = part.input;
            self.saved.push((self.pos[i], self.present[i]));
            if !self.present[i] {
                continue;
            }
            match known {
                Some((input, p)) if input == i => self.pos[i] = p,
                _ => match k.inputs[i].descend(self.pos[i], part.level, part.count, coord) {
                    Some(p) => self.pos[i] = p,
                    None => {
                        self.present[i] = false;
                        lost = true;
                    }
                },
            }
        }
        if !lost || k.sup.feasible(&self.present) {
            if let Some(visit) = self.visits.get_mut(depth) {
                *visit += 1;
            }
            true
        } else {
            self.leave(depth);
            false
        }
    }

    /// Undoes [`Worker::enter`].
    #[inline]
    fn leave(&mut self, depth: usize) {
        for part in self.k.parts[depth].iter().rev() {
            if let Some((p, present)) = self.saved.pop() {
                self.pos[part.input] = p;
                self.present[part.input] = present;
            }
        }
    }

    fn walk(&mut self, depth: usize) -> Result<()> {
        let k = self.k;
        let visits = self.visits(depth);
        // A second coordinate of an aggregated loop between output loops
        // may write an output coordinate again: the rest of the group
        // goes through the accumulator, which drains after the entries
        // written so far (their coordinates come first).
        if visits.len() > 1 && k.between_outputs.get(depth).copied().unwrap_or(false) {
            self.writes_directly = false;
        }
        for i in 0..visits.len() {
            if depth == 0 {
                self.ctl.check()?;
            }
            let (coord, known) = visits.get(i);
            if !self.enter(depth, coord, known) {
                continue;
            }
            let result = self.walk_inside(depth);
            self.leave(depth);
            result?;
            if depth + 1 == k.prefix {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn walk_inside(&mut self, depth: usize) -> Result<()> {
        if depth + 1 == self.k.group {
            let slot = self.group(depth + 1)?;
            if slot.count == 0 {
                Ok(())
            } else if self.writes_directly {
                self.write(slot)
            } else {
                self.accumulate(slot)
            }
        } else {
            self.walk(depth + 1)
        }
    }

    fn group(&mut self, depth: usize) -> Result<Slot> {
        let k = self.k;
        if depth == k.vars.len() {
            return self.leaf();
        }
        let visits = self.visits(depth);
        let mut slot = Slot::EMPTY;
        for i in 0..visits.len() {
            if depth == 0 {
                self.ctl.check()?;
            }
            let (coord, known) = visits.get(i);
            if !self.enter(depth, coord, known) {
                continue;
            }
            let inner = self.group(depth + 1);
            self.leave(depth);
            slot.merge(inner?, k.query.aggregate)?;
        }
        Ok(slot)
    }

    fn leaf(&mut self) -> Result<Slot> {
        self.steps += 1;
        if self.steps.is_multiple_of(CHECK_EVERY) {
            self.ctl.check()?;
        }
        let k = self.k;
        let value = self.eval(&k.body)?;
        Ok(match k.query.aggregate {
            // One copy is the lifted value itself.
            Some(op) if k.copies == 1 => Slot {
                acc: Some(op.lift(value)),
                count: 1,
            },
            Some(op) => Slot {
                acc: Some(op.repeat(op.lift(value), k.copies)?),
                count: k.copies,
            },
            None => Slot {
                acc: Some(value),
                count: 1,
            },
        })
    }

    fn eval(&self, body: &Body) -> Result<Value> {
        match body {
            Body::Input(k) => Ok(if self.present[*k] {
                self.k.inputs[*k].values.get(self.pos[*k])
            } else {
                self.k.inputs[*k].fill
            }),
            Body::Literal(v) => Ok(*v),
            Body::Coord(v) => Ok(Value::Int(self.coords[*v])),
            Body::Hoisted(h) => {
                let (Some(hoisted), Some(cache)) = (self.k.hoisted.get(*h), self.cache.get(*h))
                else {
                    return Err(Error::Internal("a hoisted expression out of range".into()));
                };
                let visit = self.visits.get(hoisted.depth).copied().unwrap_or(0);
                let (at, value) = cache.get();
                if at == visit {
                    return Ok(value);
                }
                let value = self.eval(&hoisted.body)?;
                cache.set((visit, value));
                Ok(value)
            }
            Body::Map(op, args) => {
                if let [a, b] = args.as_slice()
                    && let Some(v) = self.binary(*op, a, b)?
                {
                    return Ok(v);
                }
                // Most operators take a few arguments: kept on the stack.
                let mut stack = [Value::Int(0); 8];
                if let Some(values) = stack.get_mut(..args.len()) {
                    for (value, arg) in values.iter_mut().zip(args) {
                        *value = self.eval(arg)?;
                    }
                    return op.apply(values);
                }
                let values = args
                    .iter()
                    .map(|a| self.eval(a))
                    .collect::<Result<Vec<_>>>()?;
                op.apply(&values)
            }
        }
    }

    /// `a * b` and `a + b` without the general operator dispatch where
    /// both are floats, both 64-bit integers whose result fits, or one of
    /// each (the integer read as a float, as [`ScalarOp::apply`] does); a
    /// product with a zero factor, an overflow and other types take the
    /// dispatch. `None` for other operators.
    #[inline]
    fn binary(&self, op: ScalarOp, a: &Body, b: &Body) -> Result<Option<Value>> {
        if !matches!(op, ScalarOp::Mul | ScalarOp::Add) {
            return Ok(None);
        }
        let (x, y) = (self.eval(a)?, self.eval(b)?);
        let mul = op == ScalarOp::Mul;
        let fast = match (x, y) {
            (Value::Float(x), Value::Float(y)) => Some((x, y)),
            (Value::Int(i), Value::Float(f)) | (Value::Float(f), Value::Int(i)) => {
                Some((i as f64, f))
            }
            (Value::Int(i), Value::Int(j)) => {
                let exact = if mul {
                    i.checked_mul(j)
                } else {
                    i.checked_add(j)
                };
                if let Some(v) = exact {
                    return Ok(Some(Value::Int(v)));
                }
                None
            }
            _ => None,
        };
        Ok(Some(match fast {
            Some((x, y)) if !mul => Value::Float(x + y),
            Some((x, y)) if x != 0.0 && y != 0.0 => Value::Float(x * y),
            _ => op.apply(&[x, y])?,
        }))
    }

    fn accumulate(&mut self, slot: Slot) -> Result<()> {
        let op = self.k.query.aggregate;
        let new = self
            .acc
            .add(&self.coords, &self.k.suffix, slot, |a, b| a.merge(b, op))?;
        // The accumulator keeps the room of its largest fill between
        // drains: it is charged for that, not for every coordinate ever
        // written into it.
        if new && !self.k.suffix.is_empty() && self.acc.written() > self.acc_charged {
            self.acc_charged = self.acc.written();
            self.charge(entry_bytes(self.k.suffix.len()))?;
        }
        Ok(())
    }

    /// Charges `bytes` to the budget: out of what was charged ahead, else
    /// with [`CHARGE_BLOCK`] more charged ahead when the budget has room
    /// for it (the workers of a loop nest then do not take turns at the
    /// shared budget for every entry they write).
    fn charge(&mut self, bytes: u64) -> Result<()> {
        if self.ahead < bytes {
            let block = bytes.saturating_add(CHARGE_BLOCK);
            let more = match self.ctl.reserve(block) {
                Ok(()) => block,
                Err(_) => {
                    self.ctl.reserve(bytes)?;
                    bytes
                }
            };
            self.reserved += more;
            self.ahead += more;
        }
        self.ahead -= bytes;
        Ok(())
    }

    /// Moves the accumulated coordinates into the entries, with the
    /// coordinates of the in-order levels, and lets the next prefix group
    /// write directly again.
    fn flush(&mut self) -> Result<()> {
        let k = self.k;
        let counting = k.budget.is_some();
        let mut rows = 0u64;
        let Worker {
            acc, out, coords, ..
        } = self;
        let mut count = |slot: &Slot| {
            if counting {
                rows += rows_of(slot.acc.unwrap_or(k.body_fill));
            }
        };
        let mut bytes = 0;
        acc.drain(|suffix_key, slot| {
            count(&slot);
            bytes += out.push(k, output_key(k, coords, suffix_key), slot)?;
            Ok(())
        })?;
        self.writes_directly = !k.between_outputs.is_empty();
        self.record(bytes, rows)
    }

    /// Writes the entry at the bound output coordinates straight into the
    /// entries (see [`Kernel::between_outputs`]). A row budget is only set
    /// for loops that write every output level in order, with no
    /// aggregated loop among them: there are no rows to count here.
    fn write(&mut self, slot: Slot) -> Result<()> {
        let k = self.k;
        debug_assert!(
            k.budget.is_none(),
            "a row budget for entries written directly"
        );
        let coords = &self.coords;
        let key = k
            .query
            .output
            .iter()
            .map(|&v| coords.get(v).copied().unwrap_or(0));
        let bytes = self.out.push(k, key, slot)?;
        self.record(bytes, 0)
    }

    /// Charges the `bytes` of entries just written, handed on with them,
    /// and takes their `rows` from the row budget.
    fn record(&mut self, bytes: u64, rows: u64) -> Result<()> {
        self.charge(bytes)?;
        self.kept += bytes;
        if let Some(budget) = self.k.budget
            && budget.take(rows)
        {
            self.full = true;
            return Err(Error::Cancelled);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `L * (A + B * C)` looping over 5 variables: `L` is fixed at the
    /// innermost loop (4), `A` and `C` at loop 2, `B` at loop 3. The sum
    /// is hoisted whole to loop 3 (its product `B * C` with it, not apart),
    /// the product with `L` stays.
    #[test]
    fn the_largest_sub_expressions_fixed_outside_the_innermost_loop_are_hoisted() {
        let input = |k| Node::Input(k);
        let body = Node::Map(
            ScalarOp::Mul,
            vec![
                input(0),
                Node::Map(
                    ScalarOp::Add,
                    vec![input(1), Node::Map(ScalarOp::Mul, vec![input(2), input(3)])],
                ),
            ],
        );
        let fixed_at = |node: &Node| match node {
            Node::Input(k) => [4, 2, 3, 2].get(*k).copied(),
            _ => None,
        };
        let mut hoisted = Vec::new();
        let (compiled, depth) = Body::of(&body, &fixed_at, 4, &mut hoisted);
        assert_eq!(depth, Some(4));
        assert_eq!(
            compiled,
            Body::Map(ScalarOp::Mul, vec![Body::Input(0), Body::Hoisted(0)])
        );
        assert_eq!(
            hoisted,
            vec![Hoisted {
                depth: 3,
                body: Body::Map(
                    ScalarOp::Add,
                    vec![
                        Body::Input(1),
                        Body::Map(ScalarOp::Mul, vec![Body::Input(2), Body::Input(3)])
                    ],
                ),
            }]
        );
        // Nothing is fixed outside the innermost loop of a one-loop nest.
        let mut none = Vec::new();
        let (same, _) = Body::of(&body, &|_: &Node| Some(0), 0, &mut none);
        assert!(none.is_empty());
        assert!(matches!(same, Body::Map(ScalarOp::Mul, _)));
    }

    /// An input the support requires is one without which the support
    /// never holds, for every presence of the others.
    #[test]
    fn a_required_input_is_one_the_support_cannot_hold_without() {
        let input = Sup::Input;
        let sups = [
            input(0),
            Sup::And(vec![input(0), Sup::Or(vec![input(1), input(2)])]),
            Sup::Or(vec![
                Sup::And(vec![input(0), input(1)]),
                Sup::And(vec![input(0), input(2)]),
            ]),
            Sup::Or(vec![input(0), Sup::And(vec![input(1), input(2)])]),
            Sup::And(vec![Sup::Or(vec![input(0), input(1)]), input(2)]),
            Sup::Always,
            Sup::Never,
        ];
        let requires = |sup: &Sup| (0..3).filter(|&k| sup.requires(k)).collect::<Vec<_>>();
        let listed: Vec<Vec<usize>> = sups.iter().map(requires).collect();
        assert_eq!(
            listed,
            [vec![0], vec![0], vec![0], vec![], vec![2], vec![], vec![]]
        );
        for sup in &sups {
            for bits in 0..8u8 {
                let present: Vec<bool> = (0..3).map(|k| bits >> k & 1 == 1).collect();
                for k in requires(sup) {
                    assert!(present[k] || !sup.feasible(&present), "{sup:?} {present:?}");
                }
            }
        }
    }
}
