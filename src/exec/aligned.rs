//! The aligned path: a query whose inputs all turn out, when it runs, to be
//! stored at the same coordinates runs as one loop over those entries
//! instead of its loop nest, and builds no fibertree index.
//!
//! Inputs are *aligned* when each is a float value column read by the
//! same variables in stored order and their coordinate columns are the
//! same Arrow buffers: a sparse-driven result at its driver's entries
//! shares its driver's ([`super::driven::Outcome::AtDriver`]), so the
//! Outer pattern's second step `SUM(i,j) X[i,j] * ln(#1[i,j] + ε)`, where
//! `#1` holds `U·Vᵀ` at `X`'s entries, reads `X` and `#1` entry by entry.
//! The loops visit coordinates where some input is stored; every input is
//! stored at exactly these entries, and where none is the body is its
//! value at the inputs' fills. So the path applies when that value is 0
//! (`X` annihilates here) and the query either sums over all the
//! variables into a scalar or keeps them all in stored order (an
//! element-wise map, stored at the same coordinates). The body is
//! evaluated per entry with the operators' float arithmetic
//! ([`ScalarOp::apply_f64`], which is their `apply` on floats), so each
//! term is the loops'; the values of a map are charged against the memory
//! limit while they are computed; a scalar sum is taken in fixed chunks of entries added up
//! in order, so it does not depend on the thread count (it may differ
//! from the loops' in the last bits, as their order differs).

use rayon::prelude::*;

use arrow::array::AsArray;
use arrow::datatypes::Float64Type;

use crate::error::Result;
use crate::ir::{AggOp, Annotation, ScalarOp, Value};
use crate::storage::{Tensor, ValueType};

use super::ExecOptions;
use super::control::{Control, Held, pool};
use super::kernel::Sup;
use super::plan::{Node, PhysicalQuery};

/// Entries per chunk of a scalar sum: a fixed split, whatever the thread
/// count.
const CHUNK: usize = 1 << 16;

/// What an aligned run produced.
pub(crate) enum Aligned {
    /// The sum over every entry.
    Total(f64),
    /// One value per entry, in stored order, at the inputs' coordinates.
    AtEntries(Vec<f64>),
}

/// Runs `query` over the entries its inputs share, when they are aligned
/// (see the module documentation); `inputs` are the tensors its inputs
/// read with their annotations and fills, in input order. `None` when
/// the path does not apply, or a value is not a float (the caller runs
/// the loops).
pub(crate) fn run(
    query: &PhysicalQuery,
    inputs: &[(&Tensor, Annotation, Value)],
    control: &Control<'_>,
    options: &ExecOptions,
) -> Result<Option<Aligned>> {
    let Some(values) = aligned_values(query, inputs) else {
        return Ok(None);
    };
    let fills: Vec<Value> = inputs.iter().map(|&(_, _, fill)| fill).collect();
    let (_, body_fill) = Sup::of(&query.body, &fills)?;
    let Some(vars) = query.inputs.first().and_then(|a| a.distinct_vars()) else {
        return Ok(None);
    };
    let keeps_all = vars == query.output && query.aggregated.is_empty();
    // Every summed variable is read (none repeats each value).
    let mut summed = query.aggregated.clone();
    summed.sort_unstable();
    let mut read = vars.clone();
    read.sort_unstable();
    let total = query.output.is_empty() && query.aggregate == Some(AggOp::Sum) && summed == read;
    if !body_fill.is_zero() || !(total || (keeps_all && query.aggregate.is_none())) {
        return Ok(None);
    }
    let entries = inputs.first().map_or(0, |(t, _, _)| t.nnz());
    let held = Held::new(control);
    if !total {
        held.reserve((entries as u64).saturating_mul(8))?;
    }
    let chunks: Vec<(usize, usize)> = (0..entries)
        .step_by(CHUNK)
        .map(|start| (start, (start + CHUNK).min(entries)))
        .collect();
    let Some(body) = FloatExpr::of(&query.body) else {
        return Ok(None);
    };
    let body = &body;
    let sums = pool(options.threads)?.install(|| {
        chunks
            .par_iter()
            .map(|&(start, end)| -> Result<Option<Vec<f64>>> {
                control.check()?;
                let mut out = Vec::with_capacity(if total { 1 } else { end - start });
                let mut sum = 0.0;
                for e in start..end {
                    let Some(value) = body.eval(&values, e) else {
                        return Ok(None);
                    };
                    if total {
                        sum += value;
                    } else {
                        out.push(value);
                    }
                }
                control.tick();
                if total {
                    out.push(sum);
                }
                Ok(Some(out))
            })
            .collect::<Result<Option<Vec<Vec<f64>>>>>()
    })?;
    let Some(parts) = sums else {
        return Ok(None);
    };
    Ok(Some(if total {
        Aligned::Total(parts.iter().flatten().sum())
    } else {
        Aligned::AtEntries(parts.concat())
    }))
}

/// The float values of every input when the inputs are aligned: float
/// columns read by the same distinct variables, over the same coordinate
/// buffers.
fn aligned_values<'t>(
    query: &PhysicalQuery,
    inputs: &[(&'t Tensor, Annotation, Value)],
) -> Option<Vec<&'t [f64]>> {
    let (first, _, _) = inputs.first()?;
    let vars = query.inputs.first()?.distinct_vars()?;
    if query.ty != ValueType::Float64 || inputs.len() != query.inputs.len() {
        return None;
    }
    let same_coords = |t: &Tensor| {
        t.nnz() == first.nnz()
            && t.dims().len() == vars.len()
            && (0..vars.len()).all(|d| std::ptr::eq(t.coords(d), first.coords(d)))
    };
    query
        .inputs
        .iter()
        .zip(inputs)
        .map(|(access, &(tensor, annotation, _))| {
            let Annotation::Column(column) = annotation else {
                return None;
            };
            if access.distinct_vars()? != vars || !same_coords(tensor) {
                return None;
            }
            let array = tensor.annotation_columns().get(column)?;
            Some(array.as_primitive_opt::<Float64Type>()?.values().as_ref())
        })
        .collect()
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

    /// The value at entry `e`; `None` when an operator has no float
    /// arithmetic (a division, a comparison).
    #[inline]
    fn eval(&self, values: &[&[f64]], e: usize) -> Option<f64> {
        match self {
            FloatExpr::Input(k) => Some(values[*k][e]),
            FloatExpr::Const(c) => Some(*c),
            FloatExpr::Map(op, args) => {
                let mut operands = [0.0; ARGS];
                for (slot, arg) in operands.iter_mut().zip(args) {
                    *slot = arg.eval(values, e)?;
                }
                op.apply_f64(&operands[..args.len()])
            }
        }
    }
}

/// The most arguments of an operator the float expressions take.
const ARGS: usize = 4;
