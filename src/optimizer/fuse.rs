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
//! Fusing adds no work and drops the passes' repeated reads and the
//! row-local results' storing and scattering, so it is done wherever it
//! applies, without a cost comparison. Switched off (`SET
//! disabled_optimizers = 'fuse'`), each query makes its own pass.

use std::ops::Range;
use std::sync::Arc;

use crate::exec::plan::{DrivenOutput, PhysicalPlan, PhysicalQuery, Source, Term, row_index};

/// Groups the plan's runs of fusable queries into fused passes
/// ([`PhysicalPlan::fused`]) and marks the inputs read row-local (see the
/// module documentation).
pub fn fuse(plan: &mut PhysicalPlan) {
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
