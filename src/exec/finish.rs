//! A query's finish ([`Finish`]) applied to its result: every value of
//! every form a run can give (the loops' entries, a sparse-driven or
//! paired pass's outcome, an entry-wise map's values) goes through the
//! element-wise map before it is stored, and the values it takes to 0 are
//! dropped where the result is stored, as the folded map query would have
//! dropped them. A sparse-driven pass that writes one entry per driver
//! entry applies the map itself as it writes (`driven::Pass`), so that the
//! entries it drops are never written.
//!
//! The values are mapped in fixed chunks on the thread pool; each value's
//! map does not depend on the others, so the result does not depend on
//! the thread count.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::ir::Value;

use super::accumulate::Finished;
use super::aligned::Aligned;
use super::driven::Outcome;
use super::plan::{Finish, PhysicalQuery};

/// Values mapped per task.
const CHUNK: usize = 1 << 16;

/// Maps every value in place.
pub(crate) fn floats(finish: &Finish, values: &mut [f64]) {
    values.par_chunks_mut(CHUNK).for_each(|chunk| {
        for value in chunk {
            *value = finish.apply(*value);
        }
    });
}

/// The loops' (or a dense product's) entries, mapped.
pub(crate) fn finished(
    query: &PhysicalQuery,
    finish: &Finish,
    entries: Finished,
) -> Result<Finished> {
    Ok(match entries {
        Finished::Float(mut runs) => {
            runs.par_iter_mut()
                .for_each(|run| floats(finish, &mut run.values));
            Finished::Float(runs)
        }
        Finished::Values(entries) => Finished::Values(entries.map(|v| match v {
            Value::Float(x) => Ok(Value::Float(finish.apply(x))),
            other => Err(not_float(query, other)),
        })?),
        Finished::Int(_) | Finished::Huge(_) => {
            return Err(Error::Internal(format!(
                "'{}' maps its values but makes integers",
                query.name
            )));
        }
    })
}

/// A sparse-driven or paired pass's outcome, mapped; whole rows that the
/// map zeroes a cell of become coordinate columns without that cell.
pub(crate) fn outcome(query: &PhysicalQuery, finish: &Finish, outcome: Outcome) -> Result<Outcome> {
    Ok(match outcome {
        Outcome::Entries(entries) => Outcome::Entries(finished(query, finish, entries)?),
        Outcome::AtDriver(mut values) => {
            floats(finish, &mut values);
            Outcome::AtDriver(values)
        }
        Outcome::Columns(coords, mut values) => {
            floats(finish, &mut values);
            Outcome::Columns(coords, values)
        }
        Outcome::Rows(leading, values) => rows(finish, leading, values),
    })
}

/// Whole rows (see [`Outcome::Rows`]), mapped: listed as coordinate
/// columns without the cells the map zeroes, if it zeroes any.
fn rows(finish: &Finish, leading: Vec<Vec<i64>>, mut values: Vec<f64>) -> Outcome {
    floats(finish, &mut values);
    if values.par_iter().all(|&v| v != 0.0) {
        Outcome::Rows(leading, values)
    } else {
        let (coords, values) = listed_rows(&leading, &values);
        Outcome::Columns(coords, values)
    }
}

/// An entry-wise run's result, mapped.
pub(crate) fn aligned(finish: &Finish, aligned: Aligned) -> Aligned {
    match aligned {
        Aligned::Total(sum) => Aligned::Total(finish.apply(sum)),
        Aligned::AtEntries(mut values) => {
            floats(finish, &mut values);
            Aligned::AtEntries(values)
        }
        Aligned::Merged(coords, mut values) => {
            floats(finish, &mut values);
            Aligned::Merged(coords, values)
        }
    }
}

/// The non-zero cells of whole rows (see [`Outcome::Rows`]) as a
/// coordinate column per output variable and the values, in order.
fn listed_rows(leading: &[Vec<i64>], values: &[f64]) -> (Vec<Vec<i64>>, Vec<f64>) {
    let rows = leading.first().map_or(0, Vec::len);
    let width = values.len().checked_div(rows).unwrap_or(0);
    let kept = values.iter().filter(|&&v| v != 0.0).count();
    let mut coords: Vec<Vec<i64>> = (0..=leading.len())
        .map(|_| Vec::with_capacity(kept))
        .collect();
    let mut out = Vec::with_capacity(kept);
    for (row, cells) in values.chunks(width.max(1)).enumerate() {
        for (r, &value) in cells.iter().enumerate() {
            if value == 0.0 {
                continue;
            }
            for (column, lead) in coords.iter_mut().zip(leading) {
                column.push(lead[row]);
            }
            coords[leading.len()].push(r as i64);
            out.push(value);
        }
    }
    (coords, out)
}

fn not_float(query: &PhysicalQuery, value: Value) -> Error {
    Error::Internal(format!(
        "'{}' maps its values as floats but made {value}",
        query.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::plan::Node;
    use crate::ir::ScalarOp;

    #[test]
    fn rows_with_a_zeroed_cell_are_listed_without_it() {
        let leading = vec![vec![3, 3], vec![0, 2]];
        let values = [1.0, 0.0, 2.0, 0.0, 0.0, 5.0];
        let (coords, values) = listed_rows(&leading, &values);
        assert_eq!(coords, vec![vec![3, 3, 3], vec![0, 0, 2], vec![0, 2, 2]]);
        assert_eq!(values, vec![1.0, 2.0, 5.0]);
    }

    #[test]
    fn a_map_that_keeps_zero_is_applied_to_every_form() {
        let value = || Node::Input(0);
        let exp = Node::Map(ScalarOp::Exp, vec![value()]);
        assert!(Finish::of(&exp).is_none(), "exp(0) is 1");
        let relu = Finish::of(&Node::Map(ScalarOp::Relu, vec![value()])).expect("relu(0) is 0");
        let two = Node::Literal(Value::Float(2.0));
        let twice = Finish::of(&Node::Map(ScalarOp::Mul, vec![value(), two])).expect("2x keeps 0");
        assert!(matches!(aligned(&relu, Aligned::Total(-2.0)), Aligned::Total(v) if v == 0.0));
        let mut values = vec![-1.0, 3.0, f64::NAN];
        floats(&relu, &mut values);
        assert_eq!(values[..2], [0.0, 3.0]);
        match rows(&twice, vec![vec![1]], vec![-1.0, 2.0]) {
            Outcome::Rows(leading, values) => {
                assert_eq!((leading, values), (vec![vec![1]], vec![-2.0, 4.0]));
            }
            _ => panic!("rows without a zero stay rows"),
        }
        match rows(&relu, vec![vec![1]], vec![-1.0, 2.0]) {
            Outcome::Columns(coords, values) => {
                assert_eq!((coords, values), (vec![vec![1], vec![1]], vec![2.0]));
            }
            _ => panic!("rows with a zero are listed"),
        }
    }
}
