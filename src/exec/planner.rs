//! The default planner: turns any IR [`Program`] into a correct
//! [`PhysicalPlan`], until the cost-based optimizer produces plans through
//! the same types.
//!
//! Each IR query becomes one physical query, preceded by the intermediates
//! it needs:
//!
//! 1. Variable elimination (optional, [`PlanChoices::eliminate`]): in a
//!    `SUM` over a product of inputs, an aggregated variable whose factors
//!    touch at most one other variable, or whose other variables are all
//!    covered by one factor (a mask, as in `E[j,k] * SUM(i) E[i,j] *
//!    E[i,k]`, taken into the sum), is summed out into its own query first
//!    (Σ distributes over ×), as long as that query does not take the
//!    whole product. Trees of a
//!    subgraph-counting query fold into vectors this way; cycles stay in one
//!    worst-case-optimal loop nest.
//! 2. Nested aggregates are materialized as intermediate queries (`#1`,
//!    `#2`, ...) with their fill value, so the remaining expression of every
//!    query is pointwise under at most one aggregate.
//! 3. The loop order starts with the first output variable (or the first
//!    variable) and then repeatedly takes the variable that shares the most
//!    inputs with the variables already bound (ties: output variables, then
//!    first appearance), so joins stay connected. Inputs are read through an
//!    index whose level order follows the loop order; stored tensors that
//!    hold at least half of their cells (dense vectors, factor matrices)
//!    are read through dense levels.
//! 4. Output levels written in loop order are sorted; the others accumulate
//!    in a dense array when it is small, else in a hash table.
//!
//! [`PlanChoices`] overrides any of these per physical query, so tests can
//! run every valid loop order, driver and format.

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::ir::{AggOp, Annotation, Expr, IndexTerm, Program, Query, ScalarOp, Value};
use crate::storage::fibertree::{IndexLayout, IndexSpec, LevelFormat};
use crate::storage::{Tensor, ValueType};

use super::plan::{
    Access, DenseKernel, Driven, DrivenOutput, Driver, Loop, Node, OutputFormat, PhysicalPlan,
    PhysicalQuery, Role, Source, Term, Variable,
};

/// Output levels with at most this many coordinates (over all random-write
/// levels together) accumulate in a dense array by default.
const DENSE_ACCUMULATOR: u128 = 1 << 16;

/// Choices that override the default planner.
#[derive(Clone, Debug)]
pub struct PlanChoices {
    /// Whether to sum variables out into intermediate queries (step 1 of
    /// the module documentation).
    pub eliminate: bool,
    /// Choices per physical query, by position in the plan; missing entries
    /// keep the defaults.
    pub queries: std::collections::HashMap<usize, QueryChoices>,
}

impl Default for PlanChoices {
    fn default() -> Self {
        PlanChoices {
            eliminate: true,
            queries: std::collections::HashMap::new(),
        }
    }
}

/// Choices for one physical query.
#[derive(Clone, Debug, Default)]
pub struct QueryChoices {
    /// The loop order by variable name: a permutation of the loop
    /// variables of the default plan.
    pub loop_order: Option<Vec<String>>,
    /// The driver of each loop, by position in the loop order.
    pub drivers: Vec<Driver>,
    /// The format of every level of every input index.
    pub input_format: Option<LevelFormat>,
    /// The format of the output levels that are not written in order
    /// (dense, bytemap or hashed).
    pub accumulator: Option<OutputFormat>,
    /// Whether to make the loop nest a tree where the algebra allows
    /// ([`PhysicalQuery::factorize`]); the drivers follow their loops.
    pub factorize: bool,
    /// Whether to run the query as one dense matrix product when it is
    /// one ([`PhysicalQuery::contraction`]), and how.
    pub dense: Option<DenseKernel>,
    /// The input to run the query over entry by entry, the others read as
    /// dense arrays, when it can be ([`PhysicalQuery::driven_by`]).
    pub driven: Option<usize>,
    /// Whether such a run lists the rows of the input that can be listed
    /// by their non-zero cells ([`PhysicalQuery::listable_rows`]).
    pub listed: bool,
    /// Whether to run the query as one pass over the joined pairs of two
    /// of its tables when it can be ([`PhysicalQuery::as_paired`]) and
    /// runs neither as a dense product nor sparse-driven.
    pub paired: bool,
    /// The estimated work of the loops ([`PhysicalQuery::work`]).
    pub work: Option<f64>,
}

/// Decides the loop order, drivers and formats of each physical query as
/// the planner builds it: [`PlanChoices`] by position, or the cost-based
/// physical optimizer ([`crate::optimizer::physical`]).
pub trait Choose {
    /// The choices for `query` (the `position`-th query of the plan, with
    /// its variables, inputs and body set and no loops yet), whose loops
    /// bind the variables `bound`. Missing choices keep the defaults.
    fn choose(
        &mut self,
        position: usize,
        query: &PhysicalQuery,
        bound: &[usize],
    ) -> Result<QueryChoices>;
}

impl Choose for PlanChoices {
    fn choose(&mut self, position: usize, _: &PhysicalQuery, _: &[usize]) -> Result<QueryChoices> {
        Ok(self.queries.get(&position).cloned().unwrap_or_default())
    }
}

/// A [`Choose`] that makes the loops of the named queries bind their
/// output indices in output order, for a caller that needs only their
/// first entries ([`FirstRows`](super::FirstRows)); every other choice,
/// and every choice for a query that aggregates, is `inner`'s. A loop
/// order it changes keeps `inner`'s formats, with the default drivers.
pub struct InOrder<'a> {
    /// The choices otherwise.
    pub inner: &'a mut dyn Choose,
    /// The queries, by name.
    pub queries: &'a [String],
}

impl Choose for InOrder<'_> {
    fn choose(
        &mut self,
        position: usize,
        query: &PhysicalQuery,
        bound: &[usize],
    ) -> Result<QueryChoices> {
        let choices = self.inner.choose(position, query, bound)?;
        let listed = self.queries.contains(&query.name)
            && query.aggregate.is_none()
            && bound.len() == query.output.len()
            && bound.iter().all(|v| query.output.contains(v));
        if !listed {
            return Ok(choices);
        }
        let order: Vec<String> = query
            .output
            .iter()
            .map(|&v| query.vars[v].name.clone())
            .collect();
        let current = match &choices.loop_order {
            Some(names) => names.clone(),
            None => default_order(query, bound)
                .iter()
                .map(|&v| query.vars[v].name.clone())
                .collect(),
        };
        if current == order {
            return Ok(choices);
        }
        Ok(QueryChoices {
            loop_order: Some(order),
            drivers: Vec::new(),
            ..choices
        })
    }
}

/// Plans `program` with the default choices.
pub fn plan(program: &Program) -> Result<PhysicalPlan> {
    plan_with(program, &PlanChoices::default())
}

/// Plans `program` as written (no variable elimination), with `chooser`
/// deciding every query's loops and formats. The queries named in
/// `intermediates` are computed for later queries and not returned.
pub fn plan_by(
    program: &Program,
    intermediates: &[String],
    chooser: &mut dyn Choose,
) -> Result<PhysicalPlan> {
    plan_program(program, false, intermediates, chooser)
}

/// Plans `program`, overriding the defaults with `choices`.
///
/// Errors: what the reference evaluator reports for the same program
/// (unknown aliases, index counts or sizes that do not fit the tensors,
/// output indices that are not the free indices, operators whose fill
/// value cannot be computed), and choices that do not fit the query.
pub fn plan_with(program: &Program, choices: &PlanChoices) -> Result<PhysicalPlan> {
    plan_program(program, choices.eliminate, &[], &mut choices.clone())
}

fn plan_program(
    program: &Program,
    eliminate: bool,
    intermediates: &[String],
    chooser: &mut dyn Choose,
) -> Result<PhysicalPlan> {
    let mut planner = Planner {
        eliminate,
        intermediates,
        chooser,
        queries: Vec::new(),
        results: HashMap::new(),
        taken: program.queries.iter().map(|q| q.name.clone()).collect(),
        fresh: 0,
    };
    for query in &program.queries {
        planner.query(query)?;
    }
    Ok(PhysicalPlan {
        queries: planner.queries,
        fused: Vec::new(),
    })
}

/// What later queries know about a result.
#[derive(Clone, Debug)]
struct ResultInfo {
    dims: Vec<Variable>,
    ty: ValueType,
    fill: Value,
}

struct Planner<'a> {
    eliminate: bool,
    intermediates: &'a [String],
    chooser: &'a mut dyn Choose,
    queries: Vec<PhysicalQuery>,
    results: HashMap<String, ResultInfo>,
    /// The names of the program's queries, which intermediates avoid.
    taken: Vec<String>,
    fresh: usize,
}

/// A variable's coordinates: size and dictionary.
type Domains = HashMap<String, Variable>;

impl Planner<'_> {
    fn query(&mut self, query: &Query) -> Result<()> {
        let mut domains = Domains::new();
        self.collect_domains(&query.expr, &mut domains)?;
        let free = query.expr.free_indices();
        let same = free.len() == query.indices.len()
            && free.iter().all(|v| query.indices.contains(v))
            && query.indices.iter().all(|v| free.contains(v));
        if !same {
            return Err(Error::Invalid(format!(
                "the output indices [{}] of '{}' are not the free indices [{}] of its expression",
                query.indices.join(", "),
                query.name,
                free.join(", ")
            )));
        }
        let expr = if self.eliminate {
            eliminate(&query.expr)
        } else {
            query.expr.clone()
        };
        let (aggregate, body) = match &expr {
            Expr::Agg { op, indices, body } => (Some((*op, indices.clone())), body.as_ref()),
            other => (None, other),
        };
        let role = if self.intermediates.contains(&query.name) {
            Role::Intermediate
        } else {
            Role::Output
        };
        self.kernel(
            query.name.clone(),
            Made::Statement(role),
            &query.indices,
            aggregate,
            body,
            &domains,
        )
    }

    /// Records the size of every variable, checking that each input gets
    /// one term per dimension and that a variable has one size.
    fn collect_domains(&self, expr: &Expr, domains: &mut Domains) -> Result<()> {
        let (dims, terms): (Vec<Variable>, &[IndexTerm]) = match expr {
            Expr::Map { args, .. } => {
                return args
                    .iter()
                    .try_for_each(|a| self.collect_domains(a, domains));
            }
            Expr::Agg { body, .. } => return self.collect_domains(body, domains),
            Expr::Literal(_) | Expr::Index(_) => return Ok(()),
            Expr::Input(input) => (
                input
                    .tensor
                    .tensor
                    .dims()
                    .iter()
                    .map(|d| Variable {
                        name: d.name.clone(),
                        size: d.size,
                        dictionary: d.dictionary.clone(),
                    })
                    .collect(),
                &input.indices,
            ),
            Expr::Alias { name, indices } => (self.result(name)?.dims.clone(), indices),
        };
        if terms.len() != dims.len() {
            return Err(Error::Invalid(format!(
                "{expr} gives {} indices for {} dimensions",
                terms.len(),
                dims.len()
            )));
        }
        for (term, dim) in terms.iter().zip(dims) {
            let IndexTerm::Var(var) = term else { continue };
            let domain = domains.entry(var.clone()).or_insert_with(|| Variable {
                name: var.clone(),
                ..dim.clone()
            });
            // SQL joins columns of different sizes: an index ranges over
            // the largest (lookups beyond a smaller dimension find nothing).
            domain.size = domain.size.max(dim.size);
        }
        Ok(())
    }

    fn result(&self, name: &str) -> Result<&ResultInfo> {
        self.results.get(name).ok_or_else(|| {
            Error::unknown(
                "Query",
                name,
                self.results
                    .keys()
                    .filter(|k| !k.starts_with('#'))
                    .map(String::as_str),
            )
        })
    }

    /// Plans `name[output] = aggregate(body)` and the intermediates of its
    /// nested aggregates.
    fn kernel(
        &mut self,
        name: String,
        made: Made,
        output: &[String],
        aggregate: Option<(AggOp, Vec<String>)>,
        body: &Expr,
        domains: &Domains,
    ) -> Result<()> {
        let (role, nested) = match made {
            Made::Statement(role) => (role, false),
            Made::Nested => (Role::Intermediate, true),
        };
        let mut builder = Builder {
            vars: Vec::new(),
            inputs: Vec::new(),
            domains,
            output,
        };
        let output_ids = output
            .iter()
            .map(|v| builder.var(v))
            .collect::<Result<Vec<_>>>()?;
        let compiled = self.compile(body, &mut builder)?;
        let (op, aggregated) = match &aggregate {
            Some((op, indices)) => {
                let mut ids = Vec::new();
                for index in indices {
                    let id = builder.var(index)?;
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                (Some(*op), ids)
            }
            None => (None, Vec::new()),
        };
        let Builder { vars, inputs, .. } = builder;
        let (ty, body_fill) = (compiled.ty, compiled.fill);
        let (ty, fill) = match op {
            Some(op) => {
                // The number of aggregated coordinates; `None` beyond 2^128
                // (sixteen variables over a few thousand vertices).
                let total = aggregated
                    .iter()
                    .try_fold(1u128, |acc, &v| acc.checked_mul(u128::from(vars[v].size)));
                let empty = aggregated.iter().any(|&v| vars[v].size == 0);
                let lifted = op.lift(body_fill);
                let ty = op.result_type(ty);
                let fill = match total {
                    _ if empty => Value::zero(op.result_type(body_fill.value_type())),
                    Some(total) => op.repeat(lifted, total)?,
                    // Repeating 0, or a maximum, minimum or test, does not
                    // depend on how often.
                    None if lifted.is_zero() || op.idempotent() => op.repeat(lifted, 1)?,
                    None => return Err(too_many(&name)),
                };
                (ty, fill)
            }
            None => (ty, body_fill),
        };
        let mut query = PhysicalQuery {
            name: name.clone(),
            role,
            nested,
            vars,
            output: output_ids,
            formats: Vec::new(),
            aggregate: op,
            aggregated,
            loops: Vec::new(),
            inputs,
            body: compiled.node,
            ty,
            fill,
            dense: None,
            driven: None,
            paired: None,
            finish: None,
            work: None,
        };
        let bound = loop_vars(&query);
        if let Some(&unbound) = query.output.iter().find(|v| !bound.contains(v)) {
            return Err(Error::Invalid(format!(
                "index '{}' of '{name}' does not index any tensor",
                query.vars[unbound].name
            )));
        }
        let choices = self.chooser.choose(self.queries.len(), &query, &bound)?;
        query.work = choices.work.filter(|w| w.is_finite() && *w >= 0.0);
        let order = match &choices.loop_order {
            Some(names) => chosen_order(&query, &bound, names)?,
            None => default_order(&query, &bound),
        };
        query.loops = order
            .iter()
            .enumerate()
            .map(|(depth, &var)| {
                let driver = choices
                    .drivers
                    .get(depth)
                    .copied()
                    .unwrap_or(Driver::Smallest);
                Loop {
                    var,
                    driver,
                    end: order.len(),
                    repeats: None,
                }
            })
            .collect();
        if choices.factorize {
            query.factorize();
            query.mark_repeats();
        }
        if let Some(kernel) = choices.dense {
            query.dense = query.contraction().map(|c| c.with_kernel(kernel));
        }
        if query.dense.is_none()
            && let Some(driver) = choices.driven
        {
            query.driven = query.driven_by(driver).map(|mut driven| {
                if choices.listed && driven.listed.is_none() {
                    driven.listed = query.listable_rows(&driven);
                }
                driven.row_prefix = query.row_prefix(&driven);
                driven
            });
        }
        if query.dense.is_none() && query.driven.is_none() && choices.paired {
            query.paired = query.as_paired();
        }
        for depth in 0..query.loops.len() {
            if let Driver::Input(k) = query.loops[depth].driver
                && !query.inputs_at(depth).contains(&k)
            {
                return Err(Error::Invalid(format!(
                    "input {k} of '{name}' cannot drive the loop over '{}': it is not indexed by it",
                    query.vars[query.loops[depth].var].name
                )));
            }
        }
        self.index_inputs(&mut query, choices.input_format)?;
        query.formats = match (&query.dense, &query.driven) {
            // A dense product writes every cell of a dense array.
            (Some(_), _)
            | (
                _,
                Some(Driven {
                    output: DrivenOutput::Array,
                    ..
                }),
            ) => vec![OutputFormat::Dense; query.output.len()],
            (_, Some(_)) => vec![OutputFormat::Sorted; query.output.len()],
            (None, None) if query.paired.is_some() => {
                vec![OutputFormat::Sorted; query.output.len()]
            }
            (None, None) => output_formats(&query, choices.accumulator)?,
        };
        self.results.insert(
            name,
            ResultInfo {
                dims: query
                    .output
                    .iter()
                    .map(|&v| query.vars[v].clone())
                    .collect(),
                ty: query.ty,
                // An output stores every coordinate whose value is not 0.
                fill: match role {
                    Role::Output => Value::zero(query.ty),
                    Role::Intermediate => query.fill,
                },
            },
        );
        self.queries.push(query);
        Ok(())
    }

    /// Chooses every input's index: level order by loop order (constants
    /// first); formats as the `input_format` setting chooses, else those of
    /// the table's declared index of that order (built, so read for free),
    /// else by default.
    fn index_inputs(&self, query: &mut PhysicalQuery, format: Option<LevelFormat>) -> Result<()> {
        let depth_of: HashMap<usize, usize> = query
            .loops
            .iter()
            .enumerate()
            .map(|(d, l)| (l.var, d))
            .collect();
        for access in &mut query.inputs {
            let mut order: Vec<usize> = (0..access.terms.len()).collect();
            order.sort_by_key(|&d| match access.terms[d] {
                Term::Const(_) => (0, d),
                Term::Var(v) => (1 + depth_of.get(&v).copied().unwrap_or(usize::MAX - 1), d),
            });
            let declared = match &access.source {
                Source::Table { tensor, .. } if format.is_none() => tensor
                    .declared_indexes()
                    .into_iter()
                    .find_map(|d| match d.layout {
                        IndexLayout::Levels(spec) if spec.order == order => Some(spec),
                        _ => None,
                    }),
                _ => None,
            };
            access.index = match (declared, format) {
                (Some(declared), _) => declared,
                (None, Some(format)) => {
                    let formats = vec![format; order.len()];
                    IndexSpec::new(order, formats)
                }
                (None, None) => IndexSpec::new(order, default_formats(access)),
            };
        }
        Ok(())
    }

    /// Compiles a pointwise expression, planning each nested aggregate as
    /// an intermediate query.
    fn compile(&mut self, expr: &Expr, builder: &mut Builder<'_>) -> Result<Compiled> {
        Ok(match expr {
            Expr::Literal(v) => Compiled {
                node: Node::Literal(*v),
                ty: v.value_type(),
                fill: *v,
            },
            Expr::Index(var) => Compiled {
                node: Node::Coord(builder.var(var)?),
                ty: ValueType::Int64,
                fill: Value::Int(0),
            },
            Expr::Map { op, args } => {
                let args = args
                    .iter()
                    .map(|a| self.compile(a, builder))
                    .collect::<Result<Vec<_>>>()?;
                let types: Vec<ValueType> = args.iter().map(|a| a.ty).collect();
                let fills: Vec<Value> = args.iter().map(|a| a.fill).collect();
                Compiled {
                    ty: op.result_type(&types),
                    fill: op.apply(&fills)?,
                    node: Node::Map(*op, args.into_iter().map(|a| a.node).collect()),
                }
            }
            Expr::Input(input) => {
                let ty = input.value_type();
                let source = Source::Table {
                    name: input.tensor.name.clone(),
                    tensor: input.tensor.tensor.clone(),
                    annotation: input.annotation,
                };
                if let Annotation::Column(c) = input.annotation
                    && c >= input.tensor.tensor.values().len()
                {
                    return Err(Error::Internal(format!(
                        "{expr} reads a value column its tensor does not have"
                    )));
                }
                builder.input(source, &input.indices, ty, Value::zero(ty))?
            }
            Expr::Alias { name, indices } => {
                let info = self.result(name)?.clone();
                builder.input(Source::Result(name.clone()), indices, info.ty, info.fill)?
            }
            Expr::Agg { op, indices, body } => {
                let name = loop {
                    self.fresh += 1;
                    let name = format!("#{}", self.fresh);
                    if !self.taken.contains(&name) {
                        break name;
                    }
                };
                // The enclosing query's output indices first, in its
                // order, then the others as they appear: a loop order
                // that writes the enclosing output in order then reads
                // the nested result in its stored order.
                let mut free = expr.free_indices();
                free.sort_by_key(|v| {
                    builder
                        .output
                        .iter()
                        .position(|o| o == v)
                        .unwrap_or(usize::MAX)
                });
                self.kernel(
                    name.clone(),
                    Made::Nested,
                    &free,
                    Some((*op, indices.clone())),
                    body,
                    builder.domains,
                )?;
                let info = self.result(&name)?.clone();
                let terms: Vec<IndexTerm> = free.into_iter().map(IndexTerm::Var).collect();
                builder.input(Source::Result(name), &terms, info.ty, info.fill)?
            }
        })
    }
}

/// What a planned query computes: a statement of the program (its
/// output or an elimination step) or a nested aggregate's result.
#[derive(Clone, Copy)]
enum Made {
    Statement(Role),
    Nested,
}

/// A compiled expression with its type and fill value.
struct Compiled {
    node: Node,
    ty: ValueType,
    fill: Value,
}

/// Collects the variables and inputs of one physical query.
struct Builder<'a> {
    vars: Vec<Variable>,
    inputs: Vec<Access>,
    domains: &'a Domains,
    /// The query's output indices.
    output: &'a [String],
}

impl Builder<'_> {
    fn var(&mut self, name: &str) -> Result<usize> {
        if let Some(id) = self.vars.iter().position(|v| v.name == name) {
            return Ok(id);
        }
        let domain = self
            .domains
            .get(name)
            .ok_or_else(|| Error::Invalid(format!("index '{name}' does not index any tensor")))?;
        self.vars.push(domain.clone());
        Ok(self.vars.len() - 1)
    }

    fn input(
        &mut self,
        source: Source,
        indices: &[IndexTerm],
        ty: ValueType,
        fill: Value,
    ) -> Result<Compiled> {
        let terms = indices
            .iter()
            .map(|t| match t {
                IndexTerm::Var(v) => self.var(v).map(Term::Var),
                IndexTerm::Const(c) => Ok(Term::Const(*c)),
            })
            .collect::<Result<Vec<_>>>()?;
        let n = terms.len();
        self.inputs.push(Access {
            source,
            terms,
            index: IndexSpec::identity(n),
            fill,
            ty,
        });
        Ok(Compiled {
            node: Node::Input(self.inputs.len() - 1),
            ty,
            fill,
        })
    }
}

fn too_many(name: &str) -> Error {
    Error::NotSupported(format!(
        "the query '{name}' aggregates over more than 2^128 coordinates"
    ))
}

/// The variables a query loops over: those an input or a `coord` reads.
pub(crate) fn loop_vars(query: &PhysicalQuery) -> Vec<usize> {
    fn coords(node: &Node, out: &mut Vec<usize>) {
        match node {
            Node::Coord(v) => out.push(*v),
            Node::Map(_, args) => args.iter().for_each(|a| coords(a, out)),
            Node::Input(_) | Node::Literal(_) => {}
        }
    }
    let mut used = Vec::new();
    for access in &query.inputs {
        for term in &access.terms {
            if let Term::Var(v) = term {
                used.push(*v);
            }
        }
    }
    coords(&query.body, &mut used);
    (0..query.vars.len()).filter(|v| used.contains(v)).collect()
}

fn chosen_order(query: &PhysicalQuery, bound: &[usize], names: &[String]) -> Result<Vec<usize>> {
    let order: Vec<usize> = names
        .iter()
        .filter_map(|n| query.vars.iter().position(|v| &v.name == n))
        .collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != names.len() || sorted != bound {
        let expected: Vec<&str> = bound.iter().map(|&v| query.vars[v].name.as_str()).collect();
        return Err(Error::Invalid(format!(
            "the loop order [{}] of '{}' is not a permutation of its loop variables [{}]",
            names.join(", "),
            query.name,
            expected.join(", ")
        )));
    }
    Ok(order)
}

/// The default loop order (step 3 of the module documentation).
fn default_order(query: &PhysicalQuery, bound: &[usize]) -> Vec<usize> {
    let appearance = first_appearance(query, bound);
    let mut order: Vec<usize> = Vec::new();
    let mut left: Vec<usize> = appearance.clone();
    while !left.is_empty() {
        let score = |v: usize| -> (usize, bool) {
            let shared = query
                .inputs
                .iter()
                .filter(|a| {
                    a.terms.contains(&Term::Var(v))
                        && a.terms
                            .iter()
                            .any(|t| matches!(t, Term::Var(w) if order.contains(w)))
                })
                .count();
            (shared, query.output.contains(&v))
        };
        let next = if order.is_empty() {
            query.output.first().copied().unwrap_or(left[0])
        } else {
            let mut best = left[0];
            for &v in &left {
                if score(v) > score(best) {
                    best = v;
                }
            }
            best
        };
        order.push(next);
        left.retain(|&v| v != next);
    }
    order
}

/// The loop variables in order of first appearance in the inputs (then
/// those only `coord` reads).
fn first_appearance(query: &PhysicalQuery, bound: &[usize]) -> Vec<usize> {
    let mut seen = Vec::new();
    for access in &query.inputs {
        for term in &access.terms {
            if let Term::Var(v) = term
                && !seen.contains(v)
            {
                seen.push(*v);
            }
        }
    }
    for &v in bound {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen
}

/// Compressed levels, except dense levels for a stored tensor that holds
/// at least half of its cells (a lookup is then one array access).
fn default_formats(access: &Access) -> Vec<LevelFormat> {
    match &access.source {
        Source::Table { tensor, .. } => table_formats(tensor),
        Source::Result(_) => vec![LevelFormat::Compressed; access.terms.len()],
    }
}

/// The level formats a stored tensor is read through when neither a
/// setting nor a declared index says otherwise (and that `CREATE INDEX`
/// without `USING` declares): dense when the tensor is mostly full,
/// compressed otherwise.
pub fn table_formats(tensor: &Tensor) -> Vec<LevelFormat> {
    let format = if is_mostly_full(tensor) {
        LevelFormat::Dense
    } else {
        LevelFormat::Compressed
    };
    vec![format; tensor.dims().len()]
}

/// Whether a stored tensor holds at least half of its dimensions' cells
/// (a dense vector, factor matrix or feature table): read through dense
/// levels, a coordinate is a direct offset instead of a search.
fn is_mostly_full(tensor: &Tensor) -> bool {
    let cells = tensor
        .dims()
        .iter()
        .try_fold(1u64, |cells, d| cells.checked_mul(d.size));
    cells.is_some_and(|cells| cells <= 2 * tensor.nnz() as u64)
}

/// Sorted for the output levels written in loop order, else the chosen
/// accumulator, or dense when the random-write levels are small.
fn output_formats(
    query: &PhysicalQuery,
    chosen: Option<OutputFormat>,
) -> Result<Vec<OutputFormat>> {
    let prefix: Vec<usize> = query.loops[..query.sorted_prefix()]
        .iter()
        .map(|l| l.var)
        .collect();
    let random: u128 = query
        .output
        .iter()
        .filter(|v| !prefix.contains(v))
        .map(|&v| u128::from(query.vars[v].size))
        .product();
    let default = if random <= DENSE_ACCUMULATOR {
        OutputFormat::Dense
    } else {
        OutputFormat::Hashed
    };
    let format = match chosen {
        Some(OutputFormat::Sorted) => {
            return Err(Error::Invalid(format!(
                "the output levels of '{}' that are not written in loop order cannot be sorted",
                query.name
            )));
        }
        Some(format) => format,
        None => default,
    };
    Ok(query
        .output
        .iter()
        .map(|v| {
            if prefix.contains(v) {
                OutputFormat::Sorted
            } else {
                format
            }
        })
        .collect())
}

/// Variable elimination over `SUM`s of products (step 1 of the module
/// documentation), applied everywhere in `expr`.
fn eliminate(expr: &Expr) -> Expr {
    match expr {
        Expr::Map { op, args } => Expr::Map {
            op: *op,
            args: args.iter().map(eliminate).collect(),
        },
        Expr::Agg { op, indices, body } => {
            let body = eliminate(body);
            match (&body, op) {
                (
                    Expr::Map {
                        op: ScalarOp::Mul,
                        args,
                    },
                    AggOp::Sum,
                ) if args
                    .iter()
                    .all(|a| matches!(a, Expr::Input(_) | Expr::Alias { .. })) =>
                {
                    sum_out(indices.clone(), args.clone())
                }
                _ => Expr::Agg {
                    op: *op,
                    indices: indices.clone(),
                    body: Box::new(body),
                },
            }
        }
        other => other.clone(),
    }
}

/// `SUM(indices) Π factors`, with the variables that can be summed out
/// moved into nested sums.
fn sum_out(mut indices: Vec<String>, mut factors: Vec<Expr>) -> Expr {
    loop {
        let vars: Vec<Vec<String>> = factors.iter().map(Expr::free_indices).collect();
        let mut best: Option<(usize, usize, String, Vec<usize>)> = None;
        for v in &indices {
            let containing: Vec<usize> = (0..factors.len())
                .filter(|&f| vars[f].contains(v))
                .collect();
            if containing.is_empty() {
                continue;
            }
            let mut neighbours: Vec<&String> = Vec::new();
            for &f in &containing {
                for w in &vars[f] {
                    if w != v && !neighbours.contains(&w) {
                        neighbours.push(w);
                    }
                }
            }
            // Masks bound an intermediate over two or more variables;
            // over one, it is at most a vector anyway.
            let chosen: Vec<usize> = (0..factors.len())
                .filter(|&f| {
                    containing.contains(&f)
                        || (neighbours.len() > 1
                            && !vars[f].is_empty()
                            && vars[f].iter().all(|w| neighbours.contains(&w)))
                })
                .collect();
            let covered = neighbours.len() <= 1
                || chosen
                    .iter()
                    .any(|&f| neighbours.iter().all(|w| vars[f].contains(w)));
            if chosen.len() == factors.len() || !covered {
                continue;
            }
            let rank = (neighbours.len(), chosen.len());
            if best.as_ref().is_none_or(|b| rank < (b.0, b.1)) {
                best = Some((rank.0, rank.1, v.clone(), chosen));
            }
        }
        let Some((_, _, var, chosen)) = best else {
            break;
        };
        let first = chosen[0];
        let mut taken = Vec::new();
        let mut kept = Vec::new();
        for (f, factor) in factors.into_iter().enumerate() {
            if chosen.contains(&f) {
                taken.push(factor);
            } else {
                kept.push(factor);
            }
        }
        let inner = Expr::Agg {
            op: AggOp::Sum,
            indices: vec![var.clone()],
            body: Box::new(Expr::product(taken)),
        };
        kept.insert(first.min(kept.len()), inner);
        factors = kept;
        indices.retain(|v| *v != var);
    }
    Expr::sum(indices, Expr::product(factors))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ir::{Input, TensorRef};
    use crate::storage::{Coo, DimensionSpec, Tensor};

    fn bag(name: &str, dims: usize) -> TensorRef {
        let tensor = Tensor::from_coo(Coo {
            dims: (0..dims)
                .map(|d| DimensionSpec::new(format!("d{d}"), Some(4)))
                .collect(),
            coords: (0..dims).map(|d| vec![0, 1, 2 + d as i64 % 2]).collect(),
            values: Vec::new(),
            column_order: None,
        })
        .unwrap();
        TensorRef {
            name: name.to_string(),
            tensor: Arc::new(tensor),
        }
    }

    fn input(tensor: &TensorRef, vars: &[&str]) -> Expr {
        Expr::Input(Input {
            tensor: tensor.clone(),
            annotation: Annotation::Multiplicity,
            indices: vars.iter().map(|v| IndexTerm::Var(v.to_string())).collect(),
        })
    }

    fn sum(indices: &[&str], factors: Vec<Expr>) -> Expr {
        Expr::Agg {
            op: AggOp::Sum,
            indices: indices.iter().map(|v| v.to_string()).collect(),
            body: Box::new(Expr::map(ScalarOp::Mul, factors)),
        }
    }

    #[test]
    fn tree_variables_are_summed_out_and_cycles_stay_joined() {
        let (e, l) = (bag("E", 2), bag("L", 1));
        // A star: the leaf c folds into a vector over a, which folds into
        // one over b.
        let star = sum(
            &["a", "b", "c"],
            vec![
                input(&e, &["a", "b"]),
                input(&e, &["a", "c"]),
                input(&l, &["b"]),
            ],
        );
        assert_eq!(
            eliminate(&star).to_string(),
            "SUM(b) (SUM(a) E[a,b] * SUM(c) E[a,c]) * L[b]"
        );
        // A triangle: summing out a vertex would take the whole product.
        let triangle = sum(
            &["i", "j", "k"],
            vec![
                input(&e, &["i", "j"]),
                input(&e, &["j", "k"]),
                input(&e, &["i", "k"]),
            ],
        );
        assert_eq!(eliminate(&triangle), triangle);
        // A triangle with a tail: the tail folds, masked by nothing else.
        let tailed = sum(
            &["i", "j", "k", "t"],
            vec![
                input(&e, &["i", "j"]),
                input(&e, &["j", "k"]),
                input(&e, &["i", "k"]),
                input(&e, &["k", "t"]),
            ],
        );
        assert_eq!(
            eliminate(&tailed).to_string(),
            "SUM(i,j,k) E[i,j] * E[j,k] * E[i,k] * SUM(t) E[k,t]"
        );
    }

    #[test]
    fn plans_show_loops_reindexing_and_intermediates() {
        let e = bag("E", 2);
        let program = Program {
            queries: vec![Query {
                name: "p".into(),
                indices: vec!["k".into()],
                expr: sum(&["i"], vec![input(&e, &["i", "k"]), input(&e, &["k", "i"])]),
            }],
        };
        let plan = plan(&program).unwrap();
        assert_eq!(
            plan.to_string(),
            "Query p[k] (output BIGINT, sorted) = SUM(i) (E[i,k] * E[k,i])\n  \
             reindex E[i,k] as (k,i) compressed/compressed\n  \
             for k: iterate the shortest of E[i,k] (compressed), E[k,i] (compressed); look up the others\n    \
             for i: iterate the shortest of E[i,k] (compressed), E[k,i] (compressed); look up the others"
        );
        let bad = PlanChoices {
            eliminate: true,
            queries: [(
                0,
                QueryChoices {
                    loop_order: Some(vec!["i".into(), "x".into()]),
                    ..QueryChoices::default()
                },
            )]
            .into_iter()
            .collect(),
        };
        let error = plan_with(&program, &bad).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Invalid input: the loop order [i, x] of 'p' is not a permutation of its loop \
             variables [k, i]"
        );
    }
}
