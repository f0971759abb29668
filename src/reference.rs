//! The reference evaluator: a deliberately simple, obviously correct
//! evaluator of IR programs, the oracle of every later test. Speed does not
//! matter; clarity does.
//!
//! Every sub-expression evaluates to a [`Relation`]: a fill value plus the
//! entries (assignments of its free index variables) whose value may differ
//! from it; every other assignment has the fill value. Inputs contribute
//! their stored entries (fill 0), literals a fill and no entries.
//!
//! - `Map(op, args)` has fill `op(fills)`. When some argument's fill
//!   annihilates `op` (`x * 0 = 0`), only assignments where all such
//!   arguments have entries can differ: their join. Otherwise the candidates
//!   are the union of the arguments' entries. Either way, index variables
//!   that the candidate set does not bind range over their whole dimension
//!   (guarded by [`ASSIGNMENT_LIMIT`]).
//! - `Agg(op, indices, body)` folds each group's entries and then accounts
//!   for the absent assignments of the group with g(fill, count), so `MAX`
//!   and `MIN` see the fill 0 wherever a coordinate has no entry.
//!
//! Results are tensors with one dimension per output index (named after it,
//! with its size and string dictionary) and one value column `v` (renamed
//! `v_`, `v__`, ... if an index is called `v`). Entries equal to 0 are not
//! stored (where the expression's fill is not 0, every other coordinate is
//! stored); a scalar result always has its one entry, even 0.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ir::{
    AggOp, Annotation, Expr, IndexTerm, Program, Query, ScalarOp, Value, column_values,
};
use crate::progress::{NoProgress, ProgressSink, check_cancelled};
use crate::storage::{Dictionary, DimensionSpec, Tensor, ValueType};

/// The most assignments any one step may enumerate.
pub const ASSIGNMENT_LIMIT: u128 = 10_000_000;

/// How many assignments the evaluator enumerates between two progress
/// reports (which are also where it checks for cancellation).
const REPORT_EVERY: usize = 4096;

/// Evaluates every query of `program` in order and returns the results by
/// name; a query may refer to earlier results through `Alias`.
pub fn evaluate(program: &Program) -> Result<Vec<(String, Arc<Tensor>)>> {
    evaluate_with(program, &NoProgress)
}

/// [`evaluate`], reporting to `progress` while it enumerates assignments
/// (`advance(0)`: the work is not measured in bytes) and stopping with
/// [`Error::Cancelled`] when `progress` asks it to.
pub fn evaluate_with(
    program: &Program,
    progress: &dyn ProgressSink,
) -> Result<Vec<(String, Arc<Tensor>)>> {
    let mut results: Vec<(String, Arc<Tensor>)> = Vec::new();
    for query in &program.queries {
        let earlier: HashMap<&str, &Arc<Tensor>> =
            results.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let tensor = evaluate_query(query, &earlier, progress)?;
        results.push((query.name.clone(), Arc::new(tensor)));
    }
    Ok(results)
}

/// Evaluates one query; `earlier` holds the results that aliases name.
pub fn evaluate_query(
    query: &Query,
    earlier: &HashMap<&str, &Arc<Tensor>>,
    progress: &dyn ProgressSink,
) -> Result<Tensor> {
    let mut domains = HashMap::new();
    collect_domains(&query.expr, earlier, &mut domains)?;
    let evaluator = Evaluator {
        earlier,
        domains: &domains,
        progress,
    };
    let relation = evaluator.eval(&query.expr)?;
    let ty = query.expr.value_type(&|name| {
        earlier
            .get(name)
            .and_then(|t| t.values().first().map(|v| v.ty))
    });
    evaluator.output(query, relation, ty)
}

/// The coordinates an index variable ranges over.
#[derive(Clone, Debug)]
struct Domain {
    size: u64,
    dictionary: Option<Arc<Dictionary>>,
}

/// A fill value and the entries that may differ from it, keyed by the
/// coordinates of `vars`.
#[derive(Debug)]
struct Relation {
    vars: Vec<String>,
    fill: Value,
    entries: HashMap<Vec<i64>, Value>,
}

impl Relation {
    fn value(&self, key: &[i64]) -> Value {
        self.entries.get(key).copied().unwrap_or(self.fill)
    }
}

/// The tensor and annotation that a leaf reads.
fn leaf<'a>(
    expr: &'a Expr,
    earlier: &'a HashMap<&str, &'a Arc<Tensor>>,
) -> Result<Option<(&'a Tensor, Annotation, &'a [IndexTerm])>> {
    Ok(match expr {
        Expr::Input(input) => Some((&input.tensor.tensor, input.annotation, &input.indices)),
        Expr::Alias { name, indices } => {
            let tensor = earlier
                .get(name.as_str())
                .ok_or_else(|| Error::unknown("Query", name, earlier.keys().copied()))?;
            let annotation = if tensor.is_bag() {
                Annotation::Multiplicity
            } else {
                Annotation::Column(0)
            };
            Some((tensor.as_ref(), annotation, indices.as_slice()))
        }
        _ => None,
    })
}

fn collect_domains(
    expr: &Expr,
    earlier: &HashMap<&str, &Arc<Tensor>>,
    domains: &mut HashMap<String, Domain>,
) -> Result<()> {
    match expr {
        Expr::Map { args, .. } => args
            .iter()
            .try_for_each(|a| collect_domains(a, earlier, domains)),
        Expr::Agg { body, .. } => collect_domains(body, earlier, domains),
        Expr::Literal(_) | Expr::Index(_) => Ok(()),
        leaf_expr => {
            let Some((tensor, _, terms)) = leaf(leaf_expr, earlier)? else {
                return Ok(());
            };
            if terms.len() != tensor.dims().len() {
                return Err(Error::Invalid(format!(
                    "{leaf_expr} gives {} indices for {} dimensions",
                    terms.len(),
                    tensor.dims().len()
                )));
            }
            for (term, dim) in terms.iter().zip(tensor.dims()) {
                let IndexTerm::Var(var) = term else { continue };
                let domain = domains.entry(var.clone()).or_insert_with(|| Domain {
                    size: dim.size,
                    dictionary: dim.dictionary.clone(),
                });
                // SQL joins columns of different sizes: an index ranges
                // over the largest (the front-ends check dictionaries).
                domain.size = domain.size.max(dim.size);
            }
            Ok(())
        }
    }
}

struct Evaluator<'a> {
    earlier: &'a HashMap<&'a str, &'a Arc<Tensor>>,
    domains: &'a HashMap<String, Domain>,
    progress: &'a dyn ProgressSink,
}

impl Evaluator<'_> {
    fn eval(&self, expr: &Expr) -> Result<Relation> {
        match expr {
            Expr::Literal(value) => Ok(Relation {
                vars: Vec::new(),
                fill: *value,
                entries: HashMap::new(),
            }),
            Expr::Map { op, args } => {
                let args = args.iter().map(|a| self.eval(a)).collect::<Result<_>>()?;
                self.map(*op, args)
            }
            Expr::Agg { op, indices, body } => self.aggregate(*op, indices, self.eval(body)?),
            Expr::Index(var) => self.coordinates(var),
            leaf_expr => match leaf(leaf_expr, self.earlier)? {
                Some((tensor, annotation, terms)) => read(tensor, annotation, terms),
                None => Err(Error::Invalid(format!("cannot evaluate {leaf_expr}"))),
            },
        }
    }

    /// The coordinates of `var` as values: every coordinate but 0 (the
    /// fill) is an entry.
    fn coordinates(&self, var: &str) -> Result<Relation> {
        let size = self.domain(var)?.size;
        if u128::from(size) > ASSIGNMENT_LIMIT {
            return Err(too_many());
        }
        let entries = (1..size)
            .filter_map(|c| i64::try_from(c).ok())
            .map(|c| (vec![c], Value::Int(c)))
            .collect();
        Ok(Relation {
            vars: vec![var.to_string()],
            fill: Value::Int(0),
            entries,
        })
    }

    fn domain(&self, var: &str) -> Result<&Domain> {
        self.domains
            .get(var)
            .ok_or_else(|| Error::Invalid(format!("index '{var}' does not index any tensor")))
    }

    fn map(&self, op: ScalarOp, args: Vec<Relation>) -> Result<Relation> {
        let mut vars: Vec<String> = Vec::new();
        for arg in &args {
            for v in &arg.vars {
                if !vars.contains(v) {
                    vars.push(v.clone());
                }
            }
        }
        let fills: Vec<Value> = args.iter().map(|a| a.fill).collect();
        let fill = op.apply(&fills)?;
        let positions: Vec<Vec<usize>> = args.iter().map(|a| positions(&a.vars, &vars)).collect();
        let annihilating: Vec<usize> = match op.algebra().annihilator {
            Some(a) => (0..args.len())
                .filter(|&n| (n == 0 || !a.only_first) && args[n].fill.same(a.value))
                .collect(),
            None => Vec::new(),
        };
        let candidates = if annihilating.is_empty() {
            let mut all = Vec::new();
            for (arg, pos) in args.iter().zip(&positions) {
                let partial = partials(arg, pos, vars.len());
                all.extend(self.complete(partial, &vars)?);
            }
            all
        } else {
            let mut partial = vec![vec![None; vars.len()]];
            for &n in &annihilating {
                partial = join(partial, &args[n], &positions[n], self.progress)?;
            }
            self.complete(partial, &vars)?
        };
        let mut entries = HashMap::new();
        for key in candidates {
            if entries.contains_key(&key) {
                continue;
            }
            let values: Vec<Value> = args
                .iter()
                .zip(&positions)
                .map(|(arg, pos)| arg.value(&project(&key, pos)))
                .collect();
            let value = op.apply(&values)?;
            if !same_value(value, fill) {
                entries.insert(key, value);
            }
        }
        Ok(Relation {
            vars,
            fill,
            entries,
        })
    }

    fn aggregate(&self, op: AggOp, indices: &[String], body: Relation) -> Result<Relation> {
        let vars: Vec<String> = body
            .vars
            .iter()
            .filter(|v| !indices.contains(v))
            .cloned()
            .collect();
        let kept = positions(&vars, &body.vars);
        // Aggregated indices the body does not use multiply each entry.
        let mut copies: u128 = 1;
        let mut total: u128 = 1;
        for index in indices {
            let size = u128::from(self.domain(index)?.size);
            total = total.checked_mul(size).ok_or_else(too_many)?;
            if !body.vars.contains(index) {
                copies = copies.checked_mul(size).ok_or_else(too_many)?;
            }
        }
        let combine = op.combine();
        let mut groups: HashMap<Vec<i64>, (Value, u128)> = HashMap::new();
        let mut keys: Vec<(&Vec<i64>, &Value)> = body.entries.iter().collect();
        keys.sort_by(|a, b| a.0.cmp(b.0));
        for (key, value) in keys {
            let lifted = op.repeat(op.lift(*value), copies)?;
            let group = project(key, &kept);
            let slot = match groups.remove(&group) {
                Some((acc, count)) => (combine.apply(&[acc, lifted])?, count + copies),
                None => (lifted, copies),
            };
            groups.insert(group, slot);
        }
        let lifted_fill = op.lift(body.fill);
        let fill = if total == 0 {
            Value::zero(op.result_type(body.fill.value_type()))
        } else {
            op.repeat(lifted_fill, total)?
        };
        let mut entries = HashMap::new();
        for (group, (acc, count)) in groups {
            let value = match total - count {
                0 => acc,
                missing => combine.apply(&[acc, op.repeat(lifted_fill, missing)?])?,
            };
            if !same_value(value, fill) {
                entries.insert(group, value);
            }
        }
        Ok(Relation {
            vars,
            fill,
            entries,
        })
    }

    /// Fills the unbound positions of each partial assignment with every
    /// coordinate of their dimension.
    fn complete(&self, partial: Vec<Vec<Option<i64>>>, vars: &[String]) -> Result<Vec<Vec<i64>>> {
        let mut out = Vec::new();
        let mut count: u128 = 0;
        for (k, assignment) in partial.into_iter().enumerate() {
            report(self.progress, k)?;
            let mut rows: Vec<Vec<i64>> = vec![Vec::with_capacity(vars.len())];
            let mut product: u128 = 1;
            for (slot, var) in assignment.iter().zip(vars) {
                if slot.is_none() {
                    product = product
                        .checked_mul(u128::from(self.domain(var)?.size))
                        .ok_or_else(too_many)?;
                }
            }
            count += product;
            if count > ASSIGNMENT_LIMIT {
                return Err(too_many());
            }
            for (slot, var) in assignment.iter().zip(vars) {
                rows = match slot {
                    Some(c) => rows
                        .into_iter()
                        .map(|mut r| {
                            r.push(*c);
                            r
                        })
                        .collect(),
                    None => {
                        let size = i64::try_from(self.domain(var)?.size).map_err(|_| too_many())?;
                        rows.into_iter()
                            .flat_map(|r| {
                                (0..size).map(move |c| {
                                    let mut r = r.clone();
                                    r.push(c);
                                    r
                                })
                            })
                            .collect()
                    }
                };
            }
            out.extend(rows);
        }
        Ok(out)
    }

    /// The stored tensor of a query's result.
    fn output(&self, query: &Query, relation: Relation, ty: ValueType) -> Result<Tensor> {
        let order = positions(&query.indices, &relation.vars);
        if order.len() != relation.vars.len() || query.indices.len() != relation.vars.len() {
            return Err(Error::Invalid(format!(
                "the output indices [{}] of '{}' are not the free indices [{}] of its expression",
                query.indices.join(", "),
                query.name,
                relation.vars.join(", ")
            )));
        }
        let mut entries: Vec<(Vec<i64>, Value)> = if relation.fill.is_zero() {
            relation
                .entries
                .iter()
                .map(|(k, v)| (project(k, &order), *v))
                .collect()
        } else {
            let all = self.complete(vec![vec![None; query.indices.len()]], &query.indices)?;
            all.into_iter()
                .map(|key| {
                    let value =
                        relation.value(&project(&key, &positions(&relation.vars, &query.indices)));
                    (key, value)
                })
                .collect()
        };
        if !query.indices.is_empty() {
            entries.retain(|(_, v)| !v.is_zero());
        } else if entries.is_empty() {
            entries.push((Vec::new(), relation.fill));
        }
        let mut dims = Vec::new();
        for index in &query.indices {
            let domain = self.domain(index)?;
            dims.push(DimensionSpec {
                name: index.clone(),
                size: Some(domain.size),
                dictionary: domain.dictionary.clone(),
            });
        }
        let coords = (0..dims.len())
            .map(|d| entries.iter().map(|(k, _)| k[d]).collect())
            .collect();
        crate::ir::result_tensor(dims, coords, entries.into_iter().map(|(_, v)| v), ty)
    }
}

fn too_many() -> Error {
    Error::NotSupported(format!(
        "the reference evaluator enumerates at most {ASSIGNMENT_LIMIT} assignments of \
         index variables in one step; this query needs more"
    ))
}

/// Equality of values for dropping entries equal to the fill: numeric,
/// except that NaN equals NaN (so a NaN fill does not keep every entry).
fn same_value(a: Value, b: Value) -> bool {
    a.same(b) || (a.as_f64().is_nan() && b.as_f64().is_nan())
}

/// For each of `vars`, its position in `within` (vars missing from
/// `within` are skipped).
fn positions(vars: &[String], within: &[String]) -> Vec<usize> {
    vars.iter()
        .filter_map(|v| within.iter().position(|w| w == v))
        .collect()
}

fn project(key: &[i64], positions: &[usize]) -> Vec<i64> {
    positions.iter().map(|&p| key[p]).collect()
}

/// The entries of `arg` as partial assignments over `width` variables.
fn partials(arg: &Relation, positions: &[usize], width: usize) -> Vec<Vec<Option<i64>>> {
    arg.entries
        .keys()
        .map(|key| {
            let mut partial = vec![None; width];
            for (&p, &c) in positions.iter().zip(key) {
                partial[p] = Some(c);
            }
            partial
        })
        .collect()
}

/// Every [`REPORT_EVERY`] steps of a loop: a progress report, and a stop
/// if the work was cancelled.
fn report(progress: &dyn ProgressSink, step: usize) -> Result<()> {
    if step.is_multiple_of(REPORT_EVERY) {
        check_cancelled(progress)?;
        progress.advance(0);
    }
    Ok(())
}

/// The natural join of partial assignments with the entries of `arg`.
fn join(
    partial: Vec<Vec<Option<i64>>>,
    arg: &Relation,
    positions: &[usize],
    progress: &dyn ProgressSink,
) -> Result<Vec<Vec<Option<i64>>>> {
    // A hash join: the entries of `arg` grouped by their coordinates at
    // the positions every partial assignment binds. Each candidate is then
    // checked against the whole assignment.
    let shared: Vec<usize> = (0..positions.len())
        .filter(|&n| partial.iter().all(|a| a[positions[n]].is_some()))
        .collect();
    let mut groups: HashMap<Vec<i64>, Vec<&Vec<i64>>> = HashMap::new();
    for key in arg.entries.keys() {
        groups
            .entry(shared.iter().map(|&n| key[n]).collect())
            .or_default()
            .push(key);
    }
    let mut out = Vec::new();
    for (k, assignment) in partial.iter().enumerate() {
        report(progress, k)?;
        let probe: Vec<i64> = shared
            .iter()
            .map(|&n| assignment[positions[n]].unwrap_or_default())
            .collect();
        for key in groups.get(&probe).into_iter().flatten() {
            let consistent = positions
                .iter()
                .zip(key.iter())
                .all(|(&p, &c)| assignment[p].is_none_or(|a| a == c));
            if consistent {
                let mut merged = assignment.clone();
                for (&p, &c) in positions.iter().zip(key.iter()) {
                    merged[p] = Some(c);
                }
                out.push(merged);
                if out.len() as u128 > ASSIGNMENT_LIMIT {
                    return Err(too_many());
                }
            }
        }
    }
    Ok(out)
}

/// The entries of one annotation of `tensor` indexed by `terms`: rows whose
/// coordinates match the constants (and agree where a variable repeats),
/// keyed by the coordinates of the distinct variables.
fn read(tensor: &Tensor, annotation: Annotation, terms: &[IndexTerm]) -> Result<Relation> {
    /// What a term asks of a coordinate: a value, or a variable's slot.
    enum Slot {
        Const(i64),
        Var(usize),
    }
    let mut vars: Vec<String> = Vec::new();
    let slots: Vec<Slot> = terms
        .iter()
        .map(|term| match term {
            IndexTerm::Const(k) => Slot::Const(*k),
            IndexTerm::Var(v) => Slot::Var(vars.iter().position(|w| w == v).unwrap_or_else(|| {
                vars.push(v.clone());
                vars.len() - 1
            })),
        })
        .collect();
    if terms.len() != tensor.dims().len() {
        return Err(internal(format!(
            "{} indices for a tensor of {} dimensions",
            terms.len(),
            tensor.dims().len()
        )));
    }
    let (column, ty) = match annotation {
        Annotation::Column(c) => (
            tensor.annotation_columns().get(c),
            tensor.values().get(c).map(|v| v.ty),
        ),
        Annotation::Multiplicity if !tensor.is_bag() => (None, Some(ValueType::Int64)),
        Annotation::Multiplicity => (tensor.annotation_columns().first(), Some(ValueType::Int64)),
    };
    let (values, Some(ty)) = (column, ty) else {
        return Err(internal(
            "an input reads a value column its tensor does not have".to_string(),
        ));
    };
    // A keyed table's rows each count once.
    let values = match values {
        Some(column) => column_values(column.as_ref())?,
        None => vec![Value::Int(1); tensor.nnz()],
    };
    let coords: Vec<&[i64]> = (0..terms.len()).map(|d| tensor.coords(d)).collect();
    let rows = tensor.nnz();
    if values.len() != rows || coords.iter().any(|c| c.len() != rows) {
        return Err(internal("a tensor's columns differ in length".to_string()));
    }
    let mut entries = HashMap::new();
    'rows: for (row, value) in values.into_iter().enumerate() {
        let mut key: Vec<Option<i64>> = vec![None; vars.len()];
        // `row` is below every column's length, checked above.
        for (slot, coords) in slots.iter().zip(&coords) {
            let c = coords[row];
            match *slot {
                Slot::Const(k) if k != c => continue 'rows,
                Slot::Const(_) => {}
                Slot::Var(p) => match key[p] {
                    Some(seen) if seen != c => continue 'rows,
                    _ => key[p] = Some(c),
                },
            }
        }
        if !value.is_zero() {
            entries.insert(key.into_iter().flatten().collect(), value);
        }
    }
    Ok(Relation {
        vars,
        fill: Value::zero(ty),
        entries,
    })
}

/// An error for a broken invariant of the engine (not of the input).
fn internal(message: String) -> Error {
    Error::Internal(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Input, TensorRef};
    use crate::storage::{Coo, ValueData};
    use arrow::array::Int64Array;

    fn vector(name: &str, size: u64, entries: &[(i64, i64)]) -> TensorRef {
        let tensor = Tensor::from_coo(Coo {
            dims: vec![DimensionSpec::new("i", Some(size))],
            coords: vec![entries.iter().map(|e| e.0).collect()],
            values: vec![(
                "v".to_string(),
                ValueData::Int64(entries.iter().map(|e| e.1).collect()),
            )],
            column_order: None,
        })
        .unwrap();
        TensorRef {
            name: name.to_string(),
            tensor: Arc::new(tensor),
        }
    }

    fn input(tensor: &TensorRef, index: &str) -> Expr {
        Expr::Input(Input {
            tensor: tensor.clone(),
            annotation: Annotation::Column(0),
            indices: vec![IndexTerm::Var(index.to_string())],
        })
    }

    #[test]
    fn reads_match_constants_and_repeated_variables() {
        let a = vector("A", 3, &[(0, 2), (2, -1)]);
        let all = read(
            &a.tensor,
            Annotation::Column(0),
            &[IndexTerm::Var("i".into())],
        )
        .unwrap();
        assert_eq!(all.entries.len(), 2);
        let one = read(&a.tensor, Annotation::Column(0), &[IndexTerm::Const(2)]).unwrap();
        assert_eq!(one.entries.get(&Vec::new()), Some(&Value::Int(-1)));
    }

    #[test]
    fn reads_that_break_invariants_are_internal_errors() {
        let a = vector("A", 3, &[(0, 2), (2, -1)]);
        let terms = [IndexTerm::Var("i".into()), IndexTerm::Var("j".into())];
        let error = read(&a.tensor, Annotation::Column(0), &terms).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Internal error: 2 indices for a tensor of 1 dimensions (this is a bug in einsql; please report it)"
        );
        let terms = [IndexTerm::Var("i".into())];
        let error = read(&a.tensor, Annotation::Column(1), &terms).unwrap_err();
        assert!(matches!(error, Error::Internal(_)), "{error}");
    }

    #[test]
    fn aliases_read_earlier_results() {
        let a = vector("A", 3, &[(0, 2), (2, -1)]);
        let double = Query {
            name: "D".into(),
            indices: vec!["i".into()],
            expr: Expr::map(
                ScalarOp::Mul,
                vec![input(&a, "i"), Expr::Literal(Value::Int(2))],
            ),
        };
        let total = Query {
            name: "t".into(),
            indices: Vec::new(),
            expr: Expr::Agg {
                op: AggOp::Sum,
                indices: vec!["j".into()],
                body: Box::new(Expr::Alias {
                    name: "D".into(),
                    indices: vec![IndexTerm::Var("j".into())],
                }),
            },
        };
        let program = Program {
            queries: vec![double, total],
        };
        assert_eq!(program.to_string(), "D[i] = A.v[i] * 2;\nt = SUM(j) D[j];");
        let results = evaluate(&program).unwrap();
        assert_eq!(results[0].1.nnz(), 2);
        assert_eq!((results[1].1.dims().len(), results[1].1.nnz()), (0, 1));
        let sum = results[1].1.annotation_columns()[0]
            .as_any()
            .downcast_ref::<Int64Array>()
            .map(|a| a.value(0));
        assert_eq!(sum, Some(2));
    }

    #[test]
    fn dense_results_are_guarded_by_the_limit() {
        let big = vector("A", 1 << 40, &[(5, 1)]);
        let query = Query {
            name: "E".into(),
            indices: vec!["i".into()],
            expr: Expr::map(ScalarOp::Exp, vec![input(&big, "i")]),
        };
        let err = evaluate(&Program {
            queries: vec![query],
        })
        .unwrap_err();
        assert!(matches!(err, Error::NotSupported(_)), "{err}");
        // A sparse result over the same huge dimension is fine.
        let query = Query {
            name: "S".into(),
            indices: vec!["i".into()],
            expr: Expr::map(ScalarOp::Sqrt, vec![input(&big, "i")]),
        };
        let results = evaluate(&Program {
            queries: vec![query],
        })
        .unwrap();
        assert_eq!(results[0].1.nnz(), 1);
    }
}
