//! The `saturate` phase: algebraic rewrites by equality saturation
//! (SPORES, Wang et al. 2020), with the [`egg`] library.
//!
//! Galley's logical optimizer lifts sums out of products and distributes
//! products over sums in one direction. Programs written from linear
//! algebra often need the other rewrites SPORES finds by saturating an
//! e-graph with a small complete rule set: factoring (the reverse of
//! distributing), rewrites through pointwise maps (`power(x, 2)`,
//! differences), and choices that only pay off together. With `X` sparse
//! and `U`, `V` dense,
//!
//! ```text
//! SUM(i,j) power(X[i,j] - SUM(k) U[i,k] * V[j,k], 2)
//! = SUM(i,j) X[i,j]*X[i,j] - 2 * SUM(i,j,k) X[i,j]*U[i,k]*V[j,k]
//!   + SUM(k,k_2) (SUM(i) U[i,k]*U[i,k_2]) * (SUM(j) V[j,k]*V[j,k_2])
//! ```
//!
//! runs in time proportional to `nnz(X)·k + (m+n)·k²` instead of `m·n·k`.
//!
//! Each query that has something to rewrite ([`worth_saturating`]: sums of
//! terms, differences, negations, powers, divisions; a pure sum-product
//! join, which variable elimination already solves, is left alone) goes
//! into an e-graph ([`translate`]); the rules ([`rules`]: SPORES' R_EQ and
//! the pointwise rules, each derived from the operator algebra the IR
//! declares) run in two stages, the directed rules that reach SPORES'
//! canonical form first and then every rule, within [`Limits`] on
//! iterations, nodes and time, with at most [`Limits::matches`] matches
//! per rule per iteration (SPORES' sampling); the analysis ([`analysis`]) carries every class's free
//! indices, type, constant and estimated sparsity. A few candidates are
//! extracted greedily ([`cost`]: SPORES' sparsity cost, and the most
//! distributed form), each is normalized and costed by the rest of the
//! optimizer (the `mask`, `eliminate`, `distribute`, `cse` and physical
//! phases, as the caller's cost function runs them), and the cheapest
//! replaces the query when it costs at most [`MIN_GAIN`] of the query as
//! it was; otherwise the query stays as it was, so the phase never makes
//! a program that the optimizer estimates costlier.

pub mod analysis;
pub mod cost;
pub mod lang;
pub mod rules;
pub mod translate;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use egg::{Extractor, Id, RecExpr, Rewrite, RewriteScheduler, Runner, SearchMatches, StopReason};

use crate::error::Result;
use crate::ir::{AggOp, Expr, Program, Query, ScalarOp};
use crate::storage::ValueType;
use analysis::{Context, Graph};
use lang::{Name, Sp};
use translate::AliasInfo;

/// A candidate replaces a query only when its estimated cost is at most
/// this fraction of the query's (ties and near-ties keep the query as
/// written).
pub const MIN_GAIN: f64 = 0.8;

/// The bounds of one saturation. The iteration and node limits bind
/// first on the programs the phase is for, so that its result does not
/// depend on the machine's speed; the time limit is a safety net.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Iterations of the expanding rules (the first stage).
    pub expand_iterations: usize,
    /// Iterations of every rule (the second stage; 0 skips it).
    pub iterations: usize,
    /// E-nodes.
    pub nodes: usize,
    /// Time, both stages together.
    pub time: Duration,
    /// Matches applied per rule and iteration; beyond, a sample of them
    /// (SPORES section 3.1).
    pub matches: usize,
}

impl Default for Limits {
    /// The phase's limits: planning stays within milliseconds
    /// (`benches/saturate.rs` compares others: on its random programs a
    /// longer second stage buys little; see docs/benchmarks.md).
    fn default() -> Self {
        Limits {
            expand_iterations: 12,
            iterations: 3,
            nodes: 1_000,
            time: Duration::from_millis(40),
            matches: 100,
        }
    }
}

/// One query the phase rewrote: as it was and as it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Rewritten {
    /// The query before.
    pub before: Query,
    /// The query after.
    pub after: Query,
}

/// Whether the phase may improve `expr`: it has a sum of terms, a
/// difference, a negation, a power or a division somewhere. Products,
/// aggregates, comparisons and other maps alone (a sum-product join, a
/// subgraph count) are left to the other phases.
pub fn worth_saturating(expr: &Expr) -> bool {
    match expr {
        Expr::Map { op, args } => {
            matches!(
                op,
                ScalarOp::Add | ScalarOp::Sub | ScalarOp::Neg | ScalarOp::Power | ScalarOp::Div
            ) || args.iter().any(worth_saturating)
        }
        Expr::Agg { body, .. } => worth_saturating(body),
        _ => false,
    }
}

/// The rules, built once.
fn all_rules() -> &'static rules::Rules {
    static RULES: OnceLock<rules::Rules> = OnceLock::new();
    RULES.get_or_init(rules::rules)
}

/// SPORES' sampling scheduler: a rule with more matches than the limit in
/// an iteration applies a sample of them (deterministic, different in
/// every iteration), and the saturation does not count as converged in an
/// iteration that sampled.
struct Sampling {
    limit: usize,
    iteration: usize,
    sampled: bool,
}

impl RewriteScheduler<Sp, Context> for Sampling {
    fn can_stop(&mut self, _: usize) -> bool {
        !self.sampled
    }

    fn search_rewrite<'a>(
        &mut self,
        iteration: usize,
        egraph: &Graph,
        rewrite: &'a Rewrite<Sp, Context>,
    ) -> Vec<SearchMatches<'a, Sp>> {
        if iteration != self.iteration {
            self.iteration = iteration;
            self.sampled = false;
        }
        let mut matches = rewrite.search(egraph);
        let total: usize = matches.iter().map(|m| m.substs.len()).sum();
        if total <= self.limit {
            return matches;
        }
        self.sampled = true;
        // A xorshift stream seeded by the iteration and the rule.
        let mut state = (iteration as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ rewrite
                .name
                .as_str()
                .bytes()
                .fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
                });
        let mut keep = |_: &egg::Subst| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % total as u64) < self.limit as u64
        };
        for m in &mut matches {
            m.substs.retain(&mut keep);
        }
        matches.retain(|m| !m.substs.is_empty());
        matches
    }
}

/// An e-graph with `exprs` in it, over the index sizes they read, or
/// `None` when an index has no single size (see
/// [`translate::index_sizes`]).
fn graph_of(exprs: &[&Expr], aliases: &AliasInfo) -> Option<(Graph, Vec<Id>)> {
    let mut ctx = Context::default();
    for expr in exprs {
        let sizes = translate::index_sizes(expr, aliases)?;
        for (name, size) in sizes {
            let symbol = Name::from(name.as_str());
            if *ctx.sizes.entry(symbol).or_insert(size) != size {
                return None;
            }
        }
    }
    let mut egraph = Graph::new(ctx);
    let roots = exprs
        .iter()
        .map(|e| translate::add(&mut egraph, e, aliases))
        .collect();
    Some((egraph, roots))
}

/// A saturated e-graph.
pub struct Saturated {
    /// The e-graph.
    pub egraph: Graph,
    /// The class of the expression.
    pub root: Id,
    /// Why the rules stopped.
    pub stop: Option<StopReason>,
    /// The iterations run.
    pub iterations: usize,
}

/// `expr` saturated with the rules within `limits`; `None` when the
/// phase cannot take it (an index over dimensions of different sizes).
pub fn saturate(expr: &Expr, aliases: &AliasInfo, limits: Limits) -> Option<Saturated> {
    let (egraph, roots) = graph_of(&[expr], aliases)?;
    let (runner, iterations) = run(egraph, limits, None);
    Some(Saturated {
        root: runner.egraph.find(roots[0]),
        stop: runner.stop_reason.clone(),
        iterations,
        egraph: runner.egraph,
    })
}

/// Runs the rules on `egraph` in two stages within `limits` (the time
/// and nodes for both): the expanding rules, then every rule
/// ([`rules::Rules`]); with `until`, stops as soon as those two classes
/// are one. Returns the runner of the last stage and the iterations of
/// both.
fn run(egraph: Graph, limits: Limits, until: Option<(Id, Id)>) -> (Runner<Sp, Context>, usize) {
    // egg times itself with quanta, whose first clock in a process
    // calibrates for up to 200 ms: it runs under a mock clock, and the time
    // limit is checked against std's clock in a hook.
    let (clock, _) = quanta::Clock::mock();
    quanta::with_clock(&clock, || {
        let start = Instant::now();
        let runner = |egraph: Graph, iterations: usize| {
            Runner::default()
                .with_egraph(egraph)
                .with_iter_limit(iterations)
                .with_node_limit(limits.nodes)
                .with_time_limit(Duration::MAX)
                .with_scheduler(Sampling {
                    limit: limits.matches,
                    iteration: usize::MAX,
                    sampled: false,
                })
                .with_hook(move |runner| {
                    if until.is_some_and(|(a, b)| runner.egraph.find(a) == runner.egraph.find(b)) {
                        Err("proved".to_string())
                    } else if start.elapsed() > limits.time {
                        Err("time limit".to_string())
                    } else {
                        Ok(())
                    }
                })
        };
        let rules = all_rules();
        let first = runner(egraph, limits.expand_iterations).run(&rules.expand);
        let iterations = first.iterations.len();
        if limits.iterations == 0
            || !matches!(
                first.stop_reason,
                Some(StopReason::Saturated | StopReason::IterationLimit(_))
            )
        {
            return (first, iterations);
        }
        let second = runner(first.egraph, limits.iterations).run(&rules.all);
        let iterations = iterations + second.iterations.len();
        (second, iterations)
    })
}

impl Saturated {
    /// The candidates: the cheapest expression by SPORES' sparsity cost
    /// and the most distributed one ([`cost`]), without repeats.
    ///
    /// Errors: an extracted term that does not translate back (an
    /// internal error).
    pub fn candidates(&self) -> Result<Vec<Expr>> {
        let mut terms: Vec<RecExpr<Sp>> = Vec::new();
        let sparse = Extractor::new(
            &self.egraph,
            cost::Sparsity {
                egraph: &self.egraph,
            },
        );
        terms.push(sparse.find_best(self.root).1);
        let expanded = Extractor::new(
            &self.egraph,
            cost::Expanded {
                egraph: &self.egraph,
            },
        );
        let term = expanded.find_best(self.root).1;
        if !terms.contains(&term) {
            terms.push(term);
        }
        terms
            .iter()
            .map(|t| translate::to_expr(t, &self.egraph.analysis))
            .collect()
    }
}

/// Whether the rules prove `start` and `goal` equal within `limits` (the
/// rule tests: `start => goal`); `None` when they cannot be put in one
/// e-graph.
pub fn proves(start: &Expr, goal: &Expr, limits: Limits) -> Option<bool> {
    let (egraph, roots) = graph_of(&[start, goal], &AliasInfo::new())?;
    let (a, b) = (roots[0], roots[1]);
    let (runner, _) = run(egraph, limits, Some((a, b)));
    Some(runner.egraph.find(a) == runner.egraph.find(b))
}

/// The `saturate` phase over every query of `program` worth it
/// ([`worth_saturating`]), in place, each saturated within `limits`: each candidate the saturation finds
/// is normalized with `normalize` (the `normalize` phase, when it runs)
/// and costed with `cost` as the last query of the program so far
/// (`None`: it could not be costed, and is not taken). Returns the
/// queries it rewrote.
///
/// Errors: an internal error of the translation back to the IR.
pub fn saturate_program(
    program: &mut Program,
    limits: Limits,
    normalize: &dyn Fn(&Query) -> Query,
    cost: &mut dyn FnMut(&[Query]) -> Option<f64>,
) -> Result<Vec<Rewritten>> {
    let mut rewritten = Vec::new();
    // What the queries before one tell of the tables they make is read
    // only when one is worth saturating: most programs (every join count)
    // have none.
    let Some(last) = program
        .queries
        .iter()
        .rposition(|q| worth_saturating(&q.expr))
    else {
        return Ok(rewritten);
    };
    let mut aliases = AliasInfo::new();
    for k in 0..=last {
        let query = program.queries[k].clone();
        if worth_saturating(&query.expr)
            && let Some(saturated) = saturate(&query.expr, &aliases, limits)
        {
            let mut best: Option<(f64, Query)> = None;
            let mut original: Option<Option<f64>> = None;
            for expr in saturated.candidates()? {
                let mut candidate = normalize(&Query {
                    expr,
                    ..query.clone()
                });
                candidate.expr = constants_out_of_sums(candidate.expr);
                if candidate == query {
                    continue;
                }
                let before = *original.get_or_insert_with(|| {
                    let mut prefix = program.queries[..k].to_vec();
                    prefix.push(query.clone());
                    cost(&prefix)
                });
                let Some(before) = before else { break };
                let mut prefix = program.queries[..k].to_vec();
                prefix.push(candidate.clone());
                let Some(after) = cost(&prefix) else { continue };
                if after <= MIN_GAIN * before && best.as_ref().is_none_or(|(b, _)| after < *b) {
                    best = Some((after, candidate));
                }
            }
            if let Some((_, after)) = best {
                program.queries[k] = after.clone();
                rewritten.push(Rewritten {
                    before: query,
                    after,
                });
            }
        }
        let current = &program.queries[k];
        let ty = current
            .expr
            .value_type(&|name| aliases.get(name).map(|a| a.0));
        let sizes = translate::index_sizes(&current.expr, &aliases).map(|sizes| {
            current
                .indices
                .iter()
                .map(|v| sizes.get(v).copied().unwrap_or(1))
                .collect::<Vec<u64>>()
        });
        match sizes {
            Some(sizes) => {
                aliases.insert(current.name.clone(), (ty, sizes));
            }
            None => {
                aliases.remove(&current.name);
            }
        }
    }
    Ok(rewritten)
}

/// `expr` with the numeric literal factors of every `SUM` over a product
/// taken out of it (`SUM(i) 2 * x[i]` as `2 * SUM(i) x[i]`; `*`
/// distributes over `SUM`): normalization lifts sums over them, and a
/// sum-product of inputs alone runs on the executor's fastest loops (a
/// literal factor inside one made a 20,000 × 20,000 sparse-dense product
/// 100× slower).
fn constants_out_of_sums(expr: Expr) -> Expr {
    let literal = |e: &Expr| matches!(e, Expr::Literal(v) if v.value_type() != ValueType::Boolean);
    match expr {
        Expr::Agg {
            op: AggOp::Sum,
            indices,
            body,
        } => match constants_out_of_sums(*body) {
            Expr::Map {
                op: ScalarOp::Mul,
                args,
            } if args.iter().any(literal) && !args.iter().all(literal) => {
                let (mut constants, rest): (Vec<Expr>, Vec<Expr>) =
                    args.into_iter().partition(|a| literal(a));
                constants.push(Expr::sum(indices, Expr::product(rest)));
                Expr::Map {
                    op: ScalarOp::Mul,
                    args: constants,
                }
            }
            body => Expr::Agg {
                op: AggOp::Sum,
                indices,
                body: Box::new(body),
            },
        },
        other => other.map_children(constants_out_of_sums),
    }
}
