//! A query's finish ([`Finish`]) applied to its result: every value of
//! every form a run can give (the loops' or a dense product's entries, an
//! entry-wise map's values, a paired pass's columns) goes through the
//! element-wise map before it is stored, and the values it takes to 0 are
//! dropped where the result is stored, as the folded map query would have
//! dropped them. A sparse-driven pass applies the map itself (to its
//! output array before it is listed, to its entries as it writes them, to
//! its grouped sums), so that the entries it drops are never written.
//!
//! Each function leaves the values as they are when the query has no
//! finish. The values are mapped in fixed chunks on the thread pool the
//! caller runs in; each value's map does not depend on the others, so
//! the result does not depend on the thread count.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::ir::Value;

use super::accumulate::Finished;
use super::aligned::Aligned;
use super::plan::{Finish, PhysicalQuery};

/// Values mapped per task.
const CHUNK: usize = 1 << 16;

/// Maps every value in place through the query's finish.
pub(crate) fn floats(query: &PhysicalQuery, values: &mut [f64]) {
    if let Some(finish) = &query.finish {
        map_floats(finish, values);
    }
}

/// The loops' (or a dense product's) entries, through the query's finish.
pub(crate) fn finished(query: &PhysicalQuery, entries: Finished) -> Result<Finished> {
    let Some(finish) = &query.finish else {
        return Ok(entries);
    };
    Ok(match entries {
        Finished::Float(mut runs) => {
            runs.par_iter_mut()
                .for_each(|run| map_floats(finish, &mut run.values));
            Finished::Float(runs)
        }
        Finished::Values(entries) => Finished::Values(entries.map(|v| match v {
            Value::Float(x) => Ok(Value::Float(finish.apply(x))),
            other => Err(Error::Internal(format!(
                "'{}' maps its values as floats but made {other}",
                query.name
            ))),
        })?),
        Finished::Int(_) | Finished::Huge(_) => {
            return Err(Error::Internal(format!(
                "'{}' maps its values but makes integers",
                query.name
            )));
        }
    })
}

/// An entry-wise run's result, through the query's finish.
pub(crate) fn aligned(query: &PhysicalQuery, aligned: Aligned) -> Aligned {
    match &query.finish {
        Some(finish) => map_aligned(finish, aligned),
        None => aligned,
    }
}

fn map_floats(finish: &Finish, values: &mut [f64]) {
    values.par_chunks_mut(CHUNK).for_each(|chunk| {
        for value in chunk {
            *value = finish.apply(*value);
        }
    });
}

fn map_aligned(finish: &Finish, aligned: Aligned) -> Aligned {
    match aligned {
        Aligned::Total(sum) => Aligned::Total(finish.apply(sum)),
        Aligned::AtEntries(mut values) => {
            map_floats(finish, &mut values);
            Aligned::AtEntries(values)
        }
        Aligned::Merged(coords, mut values) => {
            map_floats(finish, &mut values);
            Aligned::Merged(coords, values)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::plan::Node;
    use crate::ir::ScalarOp;

    #[test]
    fn a_map_that_keeps_zero_is_applied_to_every_form() {
        let value = || Node::Input(0);
        let exp = Node::Map(ScalarOp::Exp, vec![value()]);
        assert!(Finish::of(&exp).is_none(), "exp(0) is 1");
        let relu = Finish::of(&Node::Map(ScalarOp::Relu, vec![value()])).expect("relu(0) is 0");
        let two = Node::Literal(Value::Float(2.0));
        let twice = Finish::of(&Node::Map(ScalarOp::Mul, vec![value(), two])).expect("2x keeps 0");
        let total = map_aligned(&relu, Aligned::Total(-2.0));
        assert!(matches!(total, Aligned::Total(v) if v == 0.0));
        let mut values = vec![-1.0, 3.0, f64::NAN];
        map_floats(&relu, &mut values);
        assert_eq!(values[..2], [0.0, 3.0]);
        let mut values = vec![-1.0, 2.0];
        map_floats(&twice, &mut values);
        assert_eq!(values, [-2.0, 4.0]);
    }
}
