//! The entry-wise paths: a query that maps its inputs entry by entry (or
//! sums such a map into a scalar) runs as one loop over their stored
//! entries instead of its loop nest, and builds no fibertree index.
//!
//! The path applies when every input (at most [`MOST_INPUTS`]) is a float
//! value column read by the same variables in stored order, the value of
//! the body at the inputs' fills is 0 (where no input is stored, nothing
//! is), and the query either sums over all the variables into a scalar or
//! keeps them all in stored order (an element-wise map). Then the loops
//! would visit exactly the coordinates where some input is stored and the
//! support ([`Sup`]) holds, in increasing order, and so does this path:
//!
//! - *Aligned* inputs are stored at the same coordinates: their
//!   coordinate columns are the same Arrow buffers. A sparse-driven result
//!   at its driver's entries shares its driver's
//!   ([`super::driven::Outcome::AtDriver`]), so the Outer pattern's second
//!   step `SUM(i,j) X[i,j] * ln(#1[i,j] + ε)`, where `#1` holds `U·Vᵀ` at
//!   `X`'s entries, reads `X` and `#1` entry by entry, and a map is stored
//!   at the same coordinates.
//! - Otherwise the inputs' sorted coordinate columns are *merged*: each
//!   step takes the least coordinates among the inputs' next entries,
//!   evaluates the body there where the support holds (an absent input
//!   reads as its fill) and moves past them. `A[i,j] * B[i,j]` visits the
//!   coordinates both hold, `A[i,j] + B[i,j]` those either holds. The
//!   entries are split into chunks at fixed coordinates (every [`CHUNK`]
//!   entries of the largest input), merged in parallel.
//!
//! The body is evaluated per entry with the operators' float arithmetic
//! ([`ScalarOp::apply_f64`], which is their `apply` on floats), so each
//! term is the loops'; the values of a map are charged against the memory
//! limit while they are computed; a scalar sum is taken in fixed chunks of
//! entries added up in order, so it does not depend on the thread count (it
//! may differ from the loops' in the last bits, as their order differs).

use std::cmp::Ordering;

use rayon::prelude::*;

use arrow::array::AsArray;
use arrow::datatypes::Float64Type;

use crate::error::Result;
use crate::ir::{AggOp, Annotation, ScalarOp, Value};
use crate::storage::{Tensor, ValueType};

use super::control::{Control, Held, pool};
use super::kernel::Sup;
use super::plan::{Node, PhysicalQuery};
use super::{Entrywise, ExecOptions};

/// Entries per chunk: a fixed split, whatever the thread count.
const CHUNK: usize = 1 << 16;

/// The most inputs the entry-wise paths take (each set of them present
/// has an entry in [`EntryMap::feasible`]).
const MOST_INPUTS: usize = 8;

/// What an entry-wise run produced.
pub(crate) enum Aligned {
    /// The sum over every entry.
    Total(f64),
    /// One value per entry of the aligned inputs, in stored order, at
    /// their coordinates.
    AtEntries(Vec<f64>),
    /// The merged entries in increasing order: a coordinate column per
    /// output variable, and the values.
    Merged(Vec<Vec<i64>>, Vec<f64>),
}

/// Runs `query` entry by entry when the path applies (see the module
/// documentation); `inputs` are the tensors its inputs read with their
/// annotations and fills, in input order. `None` when it does not, or a
/// value is not a float (the caller runs the loops).
pub(crate) fn run(
    query: &PhysicalQuery,
    inputs: &[(&Tensor, Annotation, Value)],
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<(Aligned, Entrywise)>> {
    let Some(map) = EntryMap::of(query, inputs)? else {
        return Ok(None);
    };
    if let Some(values) = aligned_values(query, inputs) {
        let ran = aligned(&map, &values, control, options)?;
        return Ok(ran.map(|r| (r, Entrywise::Shared)));
    }
    let Some(sorted) = sorted_inputs(query, inputs) else {
        return Ok(None);
    };
    let ran = merged(&map, &sorted, control, options)?;
    Ok(ran.map(|r| (r, Entrywise::Merged)))
}

/// What the query computes at an entry, and what it keeps of them.
struct EntryMap {
    body: FloatExpr,
    /// Whether the body may differ from its fill (0), by which inputs are
    /// present (bit `k` for input `k`): the support ([`Sup`]) of every
    /// such set.
    feasible: Vec<bool>,
    /// Each input's value where it is not stored.
    fills: Vec<f64>,
    /// Whether the query sums every entry into a scalar (else it keeps
    /// each one).
    total: bool,
}

impl EntryMap {
    /// The query's entry map, when it is an element-wise map or a total
    /// of one over float columns read by the same variables, 0 where no
    /// input is stored, with float arithmetic only.
    fn of(
        query: &PhysicalQuery,
        inputs: &[(&Tensor, Annotation, Value)],
    ) -> Result<Option<EntryMap>> {
        // The cheap checks first: every query that runs comes here.
        if query.ty != ValueType::Float64
            || inputs.len() != query.inputs.len()
            || inputs.len() > MOST_INPUTS
        {
            return Ok(None);
        }
        let Some(vars) = query.inputs.first().and_then(|a| a.distinct_vars()) else {
            return Ok(None);
        };
        if !query
            .inputs
            .iter()
            .all(|a| a.distinct_vars().as_ref() == Some(&vars))
        {
            return Ok(None);
        }
        let fills: Vec<Value> = inputs.iter().map(|&(_, _, fill)| fill).collect();
        let (sup, body_fill) = Sup::of(&query.body, &fills)?;
        let keeps_all = vars == query.output && query.aggregated.is_empty();
        // Every summed variable is read (none repeats each value).
        let mut summed = query.aggregated.clone();
        summed.sort_unstable();
        let mut read = vars;
        read.sort_unstable();
        let total =
            query.output.is_empty() && query.aggregate == Some(AggOp::Sum) && summed == read;
        if !body_fill.is_zero() || !(total || (keeps_all && query.aggregate.is_none())) {
            return Ok(None);
        }
        let Some(body) = FloatExpr::of(&query.body) else {
            return Ok(None);
        };
        // Whether an operator lacks float arithmetic does not depend on
        // the values.
        let ones = vec![[1.0]; inputs.len()];
        let ones: Vec<&[f64]> = ones.iter().map(|one| one.as_slice()).collect();
        if body.eval(&ones, 1).is_none() {
            return Ok(None);
        }
        let feasible = (0..1usize << inputs.len())
            .map(|set| {
                let present: Vec<bool> = (0..inputs.len()).map(|k| set >> k & 1 == 1).collect();
                sup.feasible(&present)
            })
            .collect();
        Ok(Some(EntryMap {
            body,
            feasible,
            fills: fills.iter().map(|f| f.as_f64()).collect(),
            total,
        }))
    }
}

/// The aligned path: one value per entry of inputs stored at the same
/// coordinates.
fn aligned(
    map: &EntryMap,
    values: &[&[f64]],
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Aligned>> {
    let entries = values.first().map_or(0, |v| v.len());
    let held = Held::new(control);
    if !map.total {
        held.reserve((entries as u64).saturating_mul(8))?;
    }
    let chunks: Vec<(usize, usize)> = (0..entries)
        .step_by(CHUNK)
        .map(|start| (start, (start + CHUNK).min(entries)))
        .collect();
    let sums = pool(options.threads)?.install(|| {
        chunks
            .par_iter()
            .map(|&(start, end)| -> Result<Option<Vec<f64>>> {
                control.check()?;
                let chunk: Vec<&[f64]> = values.iter().map(|v| &v[start..end]).collect();
                let Some(out) = map.body.eval(&chunk, end - start) else {
                    return Ok(None);
                };
                control.tick();
                Ok(Some(if map.total {
                    vec![out.iter().fold(0.0, |sum, v| sum + v)]
                } else {
                    out
                }))
            })
            .collect::<Result<Option<Vec<Vec<f64>>>>>()
    })?;
    let Some(parts) = sums else {
        return Ok(None);
    };
    Ok(Some(if map.total {
        Aligned::Total(parts.iter().flatten().sum())
    } else {
        Aligned::AtEntries(parts.concat())
    }))
}

/// The float values of every input when the inputs are aligned: float
/// columns over the same coordinate buffers.
fn aligned_values<'t>(
    query: &PhysicalQuery,
    inputs: &[(&'t Tensor, Annotation, Value)],
) -> Option<Vec<&'t [f64]>> {
    let (first, _, _) = inputs.first()?;
    let dims = query.inputs.first()?.terms.len();
    let same_coords = |t: &Tensor| {
        t.nnz() == first.nnz()
            && t.dims().len() == dims
            && (0..dims).all(|d| std::ptr::eq(t.coords(d), first.coords(d)))
    };
    inputs
        .iter()
        .map(|&(tensor, annotation, _)| {
            if !same_coords(tensor) {
                return None;
            }
            float_column(tensor, annotation)
        })
        .collect()
}

/// The float value column an input reads.
fn float_column(tensor: &Tensor, annotation: Annotation) -> Option<&[f64]> {
    let Annotation::Column(column) = annotation else {
        return None;
    };
    let array = tensor.annotation_columns().get(column)?;
    Some(array.as_primitive_opt::<Float64Type>()?.values().as_ref())
}

/// An input of a merge: its coordinate columns in stored order (sorted,
/// without duplicates) and its float values.
struct Sorted<'t> {
    coords: Vec<&'t [i64]>,
    values: &'t [f64],
}

impl Sorted<'_> {
    fn len(&self) -> usize {
        self.values.len()
    }

    /// How entry `p` of these compares with entry `q` of `other`.
    #[inline]
    fn compare(&self, p: usize, other: &Sorted<'_>, q: usize) -> Ordering {
        for (a, b) in self.coords.iter().zip(&other.coords) {
            match a[p].cmp(&b[q]) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        Ordering::Equal
    }

    /// The first entry not before entry `q` of `other`.
    fn lower_bound(&self, other: &Sorted<'_>, q: usize) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.compare(mid, other, q) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The inputs as sorted columns, when each is a float column with its
/// stored entries listed.
fn sorted_inputs<'t>(
    query: &PhysicalQuery,
    inputs: &[(&'t Tensor, Annotation, Value)],
) -> Option<Vec<Sorted<'t>>> {
    let dims = query.inputs.first()?.terms.len();
    inputs
        .iter()
        .map(|&(tensor, annotation, _)| {
            if tensor.dims().len() != dims || !tensor.is_listed() {
                return None;
            }
            Some(Sorted {
                coords: (0..dims).map(|d| tensor.coords(d)).collect(),
                values: float_column(tensor, annotation)?,
            })
        })
        .collect()
}

/// The merged path: the entries of `inputs` merged in coordinate order,
/// in chunks that start at every [`CHUNK`]-th entry of the largest input.
fn merged(
    map: &EntryMap,
    inputs: &[Sorted<'_>],
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Aligned>> {
    let Some(largest) = inputs.iter().max_by_key(|s| s.len()) else {
        return Ok(None);
    };
    let dims = largest.coords.len();
    let mut starts: Vec<Vec<usize>> = vec![vec![0; inputs.len()]];
    for q in (CHUNK..largest.len()).step_by(CHUNK) {
        starts.push(inputs.iter().map(|s| s.lower_bound(largest, q)).collect());
    }
    starts.push(inputs.iter().map(Sorted::len).collect());
    let held = Held::new(control);
    let entry_bytes = 8 * (dims as u64 + 1);
    let chunks = pool(options.threads)?.install(|| {
        starts
            .par_windows(2)
            .map(|range| -> Result<Option<Chunk>> {
                control.check()?;
                let chunk = merge_chunk(map, inputs, &range[0], &range[1]);
                if let Some(chunk) = &chunk
                    && !map.total
                {
                    held.reserve(entry_bytes.saturating_mul(chunk.values.len() as u64))?;
                }
                control.tick();
                Ok(chunk)
            })
            .collect::<Result<Option<Vec<Chunk>>>>()
    })?;
    let Some(mut chunks) = chunks else {
        return Ok(None);
    };
    if map.total {
        let total = chunks.iter().fold(0.0, |sum, c| sum + c.sum);
        return Ok(Some(Aligned::Total(total)));
    }
    if chunks.len() == 1
        && let Some(chunk) = chunks.pop()
    {
        return Ok(Some(Aligned::Merged(chunk.coords, chunk.values)));
    }
    let entries = chunks.iter().map(|c| c.values.len()).sum();
    let mut coords: Vec<Vec<i64>> = (0..dims).map(|_| Vec::with_capacity(entries)).collect();
    let mut values = Vec::with_capacity(entries);
    for chunk in chunks {
        for (column, part) in coords.iter_mut().zip(chunk.coords) {
            column.extend_from_slice(&part);
        }
        values.extend_from_slice(&chunk.values);
    }
    Ok(Some(Aligned::Merged(coords, values)))
}

/// What merging one chunk gave: its entries (for a map) or their sum.
struct Chunk {
    coords: Vec<Vec<i64>>,
    values: Vec<f64>,
    sum: f64,
}

/// Merges the entries `from[k]..to[k]` of each input `k`, evaluating
/// the body [`BATCH`] entries at a time; `None` when an operator has no
/// float arithmetic.
fn merge_chunk(
    map: &EntryMap,
    inputs: &[Sorted<'_>],
    from: &[usize],
    to: &[usize],
) -> Option<Chunk> {
    let dims = inputs.first().map_or(0, |s| s.coords.len());
    // Entries the chunk may write: at most those of its ranges together.
    let room = if map.total {
        0
    } else {
        from.iter().zip(to).map(|(f, t)| t - f).sum()
    };
    let mut chunk = Chunk {
        coords: (0..dims).map(|_| Vec::with_capacity(room)).collect(),
        values: Vec::with_capacity(room),
        sum: 0.0,
    };
    // Each input's values (or fills) at the batch's entries.
    let mut batch: Vec<Vec<f64>> = vec![Vec::with_capacity(BATCH); inputs.len()];
    let mut at = from.to_vec();
    loop {
        // The inputs (bits) whose next entries have the least coordinates,
        // and the first of them.
        let mut present = 0u64;
        let mut least = usize::MAX;
        for (k, input) in inputs.iter().enumerate() {
            if at[k] == to[k] {
                continue;
            }
            let order = match inputs.get(least) {
                Some(head) => input.compare(at[k], head, at[least]),
                None => Ordering::Less,
            };
            match order {
                Ordering::Less => (present, least) = (1 << k, k),
                Ordering::Equal => present |= 1 << k,
                Ordering::Greater => {}
            }
        }
        let Some(head) = inputs.get(least) else {
            chunk.add(map, &batch)?;
            return Some(chunk);
        };
        if map.feasible[present as usize] {
            for (k, values) in batch.iter_mut().enumerate() {
                values.push(if present >> k & 1 == 1 {
                    inputs[k].values[at[k]]
                } else {
                    map.fills[k]
                });
            }
            if !map.total {
                for (column, coords) in chunk.coords.iter_mut().zip(&head.coords) {
                    column.push(coords[at[least]]);
                }
            }
            if batch[0].len() == BATCH {
                chunk.add(map, &batch)?;
                batch.iter_mut().for_each(Vec::clear);
            }
        }
        for (k, at) in at.iter_mut().enumerate() {
            *at += (present >> k & 1) as usize;
        }
    }
}

/// Entries whose values are computed together in a merge.
const BATCH: usize = 1024;

impl Chunk {
    /// Evaluates the body at a batch of entries (each input's values at
    /// them) and keeps the values, or adds them to the sum in order.
    fn add(&mut self, map: &EntryMap, batch: &[Vec<f64>]) -> Option<()> {
        let n = batch.first().map_or(0, Vec::len);
        let inputs: Vec<&[f64]> = batch.iter().map(Vec::as_slice).collect();
        let values = map.body.eval(&inputs, n)?;
        if map.total {
            self.sum = values.iter().fold(self.sum, |sum, v| sum + v);
        } else {
            self.values.extend_from_slice(&values);
        }
        Some(())
    }
}

/// A query's body over float inputs, with the operators' float
/// arithmetic ([`ScalarOp::apply_f64`]).
enum FloatExpr {
    Input(usize),
    Const(f64),
    Map(ScalarOp, Vec<FloatExpr>),
}

impl FloatExpr {
    /// The body as a float expression; `None` when it reads a coordinate
    /// or a constant that is not a float, or an operator has more than
    /// four arguments.
    fn of(node: &Node) -> Option<FloatExpr> {
        Some(match node {
            Node::Input(k) => FloatExpr::Input(*k),
            Node::Literal(Value::Float(c)) => FloatExpr::Const(*c),
            Node::Literal(_) | Node::Coord(_) => return None,
            Node::Map(op, args) if args.len() <= ARGS => {
                FloatExpr::Map(*op, args.iter().map(FloatExpr::of).collect::<Option<_>>()?)
            }
            Node::Map(..) => return None,
        })
    }

    /// The values at `n` entries where input `k` has the values
    /// `inputs[k]` (each of length `n`), an operator at a time; `None`
    /// when an operator has no float arithmetic (a division, a
    /// comparison).
    fn eval(&self, inputs: &[&[f64]], n: usize) -> Option<Vec<f64>> {
        match self {
            FloatExpr::Input(k) => Some(inputs[*k].to_vec()),
            FloatExpr::Const(c) => Some(vec![*c; n]),
            FloatExpr::Map(op, args) => {
                let args = args
                    .iter()
                    .map(|a| a.eval(inputs, n))
                    .collect::<Option<Vec<_>>>()?;
                let pairs = || args[0].iter().zip(&args[1]);
                Some(match (op, args.len()) {
                    (ScalarOp::Add, 2) => pairs().map(|(a, b)| a + b).collect(),
                    (ScalarOp::Sub, 2) => pairs().map(|(a, b)| a - b).collect(),
                    // As `apply_f64`: a product with a zero factor is 0.
                    (ScalarOp::Mul, 2) => pairs()
                        .map(|(&a, &b)| if a == 0.0 || b == 0.0 { 0.0 } else { a * b })
                        .collect(),
                    _ => (0..n)
                        .map(|e| {
                            let mut operands = [0.0; ARGS];
                            for (slot, arg) in operands.iter_mut().zip(&args) {
                                *slot = arg[e];
                            }
                            op.apply_f64(&operands[..args.len()])
                        })
                        .collect::<Option<_>>()?,
                })
            }
        }
    }
}

/// The most arguments of an operator the float expressions take.
const ARGS: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch is evaluated as [`ScalarOp::apply_f64`] evaluates each
    /// entry, bit for bit, with zeros of both signs, infinities and NaN
    /// among the operands; an operator without float arithmetic gives
    /// `None`.
    #[test]
    fn a_batch_is_evaluated_as_each_entry_would_be() {
        let special = [
            0.0,
            -0.0,
            1.5,
            -2.25,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e308,
        ];
        let (a, b): (Vec<f64>, Vec<f64>) = special
            .iter()
            .flat_map(|&x| special.iter().map(move |&y| (x, y)))
            .unzip();
        let n = a.len();
        let same = |x: f64, y: f64| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
        let binary = [ScalarOp::Add, ScalarOp::Sub, ScalarOp::Mul, ScalarOp::Power];
        let unary = [
            ScalarOp::Neg,
            ScalarOp::Abs,
            ScalarOp::Exp,
            ScalarOp::Sigmoid,
        ];
        for op in binary.into_iter().chain(unary) {
            let args = if binary.contains(&op) { 2 } else { 1 };
            let expr = FloatExpr::Map(op, (0..args).map(FloatExpr::Input).collect());
            let got = expr.eval(&[&a, &b], n).expect("float arithmetic");
            for (e, value) in got.into_iter().enumerate() {
                let want = op
                    .apply_f64(&[a[e], b[e]][..args])
                    .expect("float arithmetic");
                assert!(
                    same(value, want),
                    "{op:?}({}, {}): {value} against {want}",
                    a[e],
                    b[e]
                );
            }
        }
        let division = FloatExpr::Map(
            ScalarOp::Div,
            vec![FloatExpr::Input(0), FloatExpr::Input(1)],
        );
        assert!(division.eval(&[&a, &b], n).is_none());
    }
}
