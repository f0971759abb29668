//! The `fuse` phase: sparse-driven queries that go over the same driver
//! one after the other run as one pass over its entries (SystemML's
//! multi-aggregate and row-wise fusion, its MAgg and Row templates).
//!
//! [`fuse`] groups runs of consecutive queries of a physical plan that are
//! each a sparse-driven product adding into a dense array
//! ([`Driven`](crate::exec::plan::Driven) with [`DrivenOutput::Array`]:
//! a sum over some of the driver's variables) and whose drivers are the
//! same stored table (its value column or its pattern). The executor
//! then visits the driver's entries piece by piece, a few thousand at a
//! time and whole rows (runs of one first coordinate) each, and runs
//! every member over a piece before it moves on: the driver's
//! coordinates and values are read from memory once for all of them,
//! where separate queries would each stream the whole table.
//!
//! A member may read the result of an earlier one, its *producer*, when
//! that result is a vector over the driver's first dimension (a sum of
//! each row, as `X v` in `Xᵀ(w ⊙ (X v))`), read at the member's driver's
//! first variable, by no other query of the plan, and not a program
//! output: then the producer's values for a piece's rows are computed just
//! before the member visits those rows and are never stored
//! ([`Driven::local`](crate::exec::plan::Driven::local)). Any other use
//! of an earlier member's result ends the run of fused queries before the
//! query that makes it.
//!
//! When the driver has a built index in its stored order whose levels
//! are dense or compressed, then compressed (a matrix's CSR, declared by
//! `CREATE INDEX ... ON a (i, j)` or built by an earlier loop nest), the
//! pass takes where each row starts from that index's pointers
//! ([`Driven::rows`](crate::exec::plan::Driven::rows)) instead of reading
//! every entry's row coordinate.
//!
//! The phase also folds an element-wise map of a result into the query
//! that makes it ([`Finish`]): a network layer `h[o,n,k] =
//! relu(SUM(m) x[o,n,m] * W[k,m])` plans as `#1[o,n,k] = SUM(m) ...` and
//! `h[o,n,k] = relu(#1[o,n,k])`, and then the first query stores `h`
//! itself, each value through `relu` as it is written, where the second
//! would have listed `#1`'s entries (tens of millions of them), indexed
//! them and written them again. It folds a query whose one input is the
//! result of the query just before it, read by no other query, over the
//! same variables in the same order, and whose body is a map that
//! [`Finish::of`] takes (float arithmetic, 0 to 0) of a `DOUBLE` result
//! whose absent entries are 0. Neither query may be a member of a fused
//! pass.
//!
//! Fusing adds no work and drops the passes' repeated reads and the
//! row-local results' storing and scattering, and folding a map drops a
//! pass over a result, so both are done wherever they apply, without a
//! cost comparison. Switched off (`SET disabled_optimizers = 'fuse'`),
//! each query makes its own pass.

use std::ops::Range;
use std::sync::Arc;

use crate::exec::plan::{
    DrivenOutput, Finish, PhysicalPlan, PhysicalQuery, Role, Source, Term, row_index,
};
use crate::storage::ValueType;

/// Groups the plan's runs of fusable queries into fused passes
/// ([`PhysicalPlan::fused`]), marks the inputs read row-local, and folds
/// element-wise maps of results into the queries that make them (see the
/// module documentation).
pub fn fuse(plan: &mut PhysicalPlan) {
    group(plan);
    fold_maps(plan);
}

/// Groups the plan's runs of fusable queries into fused passes.
fn group(plan: &mut PhysicalPlan) {
    plan.fused.clear();
    let mut start = 0;
    while start < plan.queries.len() {
        let end = run_from(plan, start);
        if end - start >= 2 {
            // The members share their driver, so its row index too.
            let rows = fusable(&plan.queries[start]).and_then(|driver| match driver {
                Source::Table { tensor, .. } => row_index(tensor),
                Source::Result(_) => None,
            });
            for n in start..end {
                let local = local_input(plan, start..n, n);
                if let Some(driven) = plan.queries[n].driven.as_mut() {
                    driven.local = local;
                    driven.rows.clone_from(&rows);
                    // A fused pass adds into each member's whole array.
                    driven.row_prefix = None;
                }
            }
            plan.fused.push(start..end);
            start = end;
        } else {
            start += 1;
        }
    }
}

/// The end of the longest run of fusable queries from `start`.
fn run_from(plan: &PhysicalPlan, start: usize) -> usize {
    let Some(driver) = fusable(&plan.queries[start]) else {
        return start + 1;
    };
    let mut end = start + 1;
    while let Some(query) = plan.queries.get(end) {
        let same_driver = fusable(query).is_some_and(|d| same_table(d, driver));
        if !same_driver || !reads_members_row_local(plan, start..end, end) {
            break;
        }
        end += 1;
    }
    end
}

/// The driver of a query that can be a member of a fused pass: a
/// sparse-driven query that adds into a dense array and is not run as a
/// dense kernel.
fn fusable(query: &PhysicalQuery) -> Option<&Source> {
    let driven = query.driven.as_ref()?;
    if driven.output != DrivenOutput::Array || query.dense.is_some() {
        return None;
    }
    Some(&query.inputs.get(driven.driver)?.source)
}

/// Whether two drivers are the same stored table's entries.
fn same_table(a: &Source, b: &Source) -> bool {
    match (a, b) {
        (Source::Table { tensor: x, .. }, Source::Table { tensor: y, .. }) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

/// Whether query `n` reads the results of the queries in `members` only
/// as one row-local input (see the module documentation).
fn reads_members_row_local(plan: &PhysicalPlan, members: Range<usize>, n: usize) -> bool {
    let query = &plan.queries[n];
    let reads = query
        .inputs
        .iter()
        .filter(|access| member_result(plan, members.clone(), &access.source).is_some())
        .count();
    reads == 0 || (reads == 1 && local_input(plan, members, n).is_some())
}

/// The input of query `n` that reads a member's result row-local, if it
/// has one.
fn local_input(plan: &PhysicalPlan, members: Range<usize>, n: usize) -> Option<usize> {
    let query = &plan.queries[n];
    let driven = query.driven.as_ref()?;
    let first_var = match query.inputs.get(driven.driver)?.terms.first()? {
        Term::Var(v) => *v,
        Term::Const(_) => return None,
    };
    driven.dense.iter().copied().find(|&k| {
        let access = &query.inputs[k];
        let Some(producer) = member_result(plan, members.clone(), &access.source) else {
            return false;
        };
        access.terms == [Term::Var(first_var)]
            && is_row_sum(&plan.queries[producer])
            && readers(plan, &plan.queries[producer].name) == 1
    })
}

/// The member of `members` whose result `source` is.
fn member_result(plan: &PhysicalPlan, members: Range<usize>, source: &Source) -> Option<usize> {
    let Source::Result(name) = source else {
        return None;
    };
    members.into_iter().find(|&m| plan.queries[m].name == *name)
}

/// Whether a query's result is an intermediate vector over its driver's
/// first dimension: one value per row of the driver.
fn is_row_sum(query: &PhysicalQuery) -> bool {
    query
        .driven
        .as_ref()
        .is_some_and(|driven| query.sums_rows_of(driven.driver))
}

/// How many inputs of the plan's queries read the result `name`.
fn readers(plan: &PhysicalPlan, name: &str) -> usize {
    plan.queries
        .iter()
        .flat_map(|q| &q.inputs)
        .filter(|a| matches!(&a.source, Source::Result(r) if r == name))
        .count()
}

/// Folds every query that maps the result of the query just before it
/// into that query, as its finish.
fn fold_maps(plan: &mut PhysicalPlan) {
    let mut n = 1;
    while n < plan.queries.len() {
        match foldable_map(plan, n) {
            Some(finish) => fold(plan, n, finish),
            None => n += 1,
        }
    }
}

/// The finish query `n` makes of the result of query `n - 1`, when it
/// can be folded into it (see the module documentation).
fn foldable_map(plan: &PhysicalPlan, n: usize) -> Option<Finish> {
    let (producer, map) = (&plan.queries[n - 1], &plan.queries[n]);
    let [access] = map.inputs.as_slice() else {
        return None;
    };
    let reads_producer = matches!(&access.source, Source::Result(name) if *name == producer.name);
    let in_order = access
        .terms
        .iter()
        .copied()
        .eq(map.output.iter().map(|&v| Term::Var(v)));
    let same_dims = producer.output.len() == map.output.len()
        && producer.output.iter().zip(&map.output).all(|(&p, &m)| {
            let (p, m) = (&producer.vars[p], &map.vars[m]);
            let same_keys = match (&p.dictionary, &m.dictionary) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            p.size == m.size && same_keys
        });
    // The producer's other variables keep their names beside the
    // output's new ones.
    let names_apart = (0..producer.vars.len())
        .filter(|v| !producer.output.contains(v))
        .all(|v| map.vars.iter().all(|w| w.name != producer.vars[v].name));
    let qualifies = reads_producer
        && in_order
        && same_dims
        && names_apart
        && map.aggregate.is_none()
        && map.vars.len() == map.output.len()
        && map.ty == ValueType::Float64
        && map.fill.is_zero()
        && producer.ty == ValueType::Float64
        && producer.fill.is_zero()
        && producer.role == Role::Intermediate
        && producer.finish.is_none()
        && readers(plan, &producer.name) == 1
        && plan.fused_pass(n - 1).is_none()
        && plan.fused_pass(n).is_none();
    if !qualifies {
        return None;
    }
    Finish::of(&map.body)
}

/// Folds query `n` into query `n - 1` as its finish: that query makes
/// `n`'s result, under its name, role and output variables.
fn fold(plan: &mut PhysicalPlan, n: usize, finish: Finish) {
    let map = plan.queries.remove(n);
    let producer = &mut plan.queries[n - 1];
    for (&p, &m) in producer.output.iter().zip(&map.output) {
        producer.vars[p] = map.vars[m].clone();
    }
    producer.name = map.name;
    producer.role = map.role;
    producer.nested = map.nested;
    producer.finish = Some(finish);
    for run in &mut plan.fused {
        if run.start > n {
            *run = run.start - 1..run.end - 1;
        }
    }
}
