//! The rewrite rules of the `saturate` phase: SPORES' seven relational
//! equalities (R_EQ, figure 3) and the pointwise rules, each derived from
//! what [`crate::ir::operator`] declares about the operators rather than
//! from their names where the IR declares it:
//!
//! | rule | from |
//! |---|---|
//! | `a*(b+c) = a*b + a*c`, both ways (R_EQ 1); `a + a*b = a*(1 + b)`, `a + a = a*2` | `*` distributes over `SUM`, whose combining operator is `+`; `*`'s identity; `SUM`'s g(a, 2) |
//! | `SUM(i)(a+b) = SUM(i) a + SUM(i) b`, both ways (R_EQ 2) | `+` combines `SUM` and is commutative and associative |
//! | `a * SUM(i) b = SUM(i) a*b`, both ways, `i` not free in `a` (R_EQ 3; renamed when it is) | `*` distributes over `SUM` |
//! | `SUM(i) SUM(j) a = SUM(j) SUM(i) a` (R_EQ 4) | `+` is commutative and associative |
//! | `SUM(i) a = a · |i|`, `i` not free in `a` (R_EQ 5) | `SUM`'s repeated application ([`AggOp::repeat`]) |
//! | associativity and commutativity of `+` and `*` (R_EQ 6, 7) | the operators' declared laws |
//! | `a * 1 = a`, `a + 0 = a`, `a * 0 = 0` | the declared identities and annihilators |
//! | `f(a ∘ b) = f(a) • f(b)` (`exp(a + b) = exp(a) · exp(b)`) | [`Algebra::homomorphism`](crate::ir::Algebra::homomorphism) |
//! | `SUM(i) a = a[i := 0]` when `|i| = 1` | one coordinate: the sum is its only value |
//! | `power(x, 2) = x * x` | `power` with an integral exponent is repeated `*` |
//! | `a / c = a * (1/c)` for a constant `c ≠ 0` | the definition of `/` |
//!
//! Subtraction is `a + (-1)·b` in the e-graph ([`super::translate`]), and
//! constants fold in the analysis ([`super::analysis`]). Rules that could
//! change a class's type (`x * 1 = x` for a boolean `x`) check it; every
//! rule keeps the free indices, which the appliers check in debug builds.

use egg::{Applier, Id, Language, Pattern, PatternAst, Rewrite, Subst, Var};

use super::analysis::{Graph, LeafInfo};
use super::lang::{Const, LeafId, Name, OpKind, Sp};
use crate::ir::{AggOp, Expr, IndexTerm, ScalarOp, Value};

type Rw = Rewrite<Sp, super::analysis::Context>;

fn var(name: &str) -> Var {
    name.parse().expect("a pattern variable")
}

fn pattern(text: &str) -> Pattern<Sp> {
    text.parse().expect("a valid pattern")
}

/// An applier that builds the class to union with the matched one, or
/// nothing.
struct Build<F>(F);

impl<F> Applier<Sp, super::analysis::Context> for Build<F>
where
    F: Fn(&mut Graph, Id, &Subst) -> Option<Id> + Send + Sync,
{
    fn apply_one(
        &self,
        egraph: &mut Graph,
        eclass: Id,
        subst: &Subst,
        _: Option<&PatternAst<Sp>>,
        _: egg::Symbol,
    ) -> Vec<Id> {
        let Some(new) = (self.0)(egraph, eclass, subst) else {
            return Vec::new();
        };
        let (old, built) = (&egraph[eclass].data, &egraph[new].data);
        if old.free != built.free || old.ty != built.ty {
            debug_assert!(
                false,
                "a rule changed the free indices or the type: {:?} {:?} into {:?} {:?}",
                old.free, old.ty, built.free, built.ty
            );
            return Vec::new();
        }
        if egraph.union(eclass, new) {
            vec![eclass]
        } else {
            Vec::new()
        }
    }
}

fn build<F>(name: &str, searcher: &str, f: F) -> Rw
where
    F: Fn(&mut Graph, Id, &Subst) -> Option<Id> + Send + Sync + 'static,
{
    Rewrite::new(name, pattern(searcher), Build(f)).expect("a valid rule")
}

fn plain(name: &str, searcher: &str, applier: &str) -> Rw {
    Rewrite::new(name, pattern(searcher), pattern(applier)).expect("a valid rule")
}

/// The binary node of `op` (`+` or `*`) in pattern syntax.
fn node_name(op: ScalarOp) -> Option<&'static str> {
    match op {
        ScalarOp::Add => Some("+"),
        ScalarOp::Mul => Some("*"),
        _ => None,
    }
}

/// The rules in two sets: `expand`, the directed rules that reach
/// SPORES' canonical form (a sum of sum-products: distributing, splitting
/// sums, pulling sums out of products, squares, constants) without the
/// associativity and commutativity that make e-graphs grow fast; and
/// `all`, every rule (see the module documentation).
pub struct Rules {
    /// The expanding rules, run first.
    pub expand: Vec<Rw>,
    /// Every rule.
    pub all: Vec<Rw>,
}

/// The rules of both stages.
pub fn rules() -> Rules {
    let expand = every_rule()
        .into_iter()
        .filter(|r| {
            let name = r.name.as_str();
            EXPAND.contains(&name) || (name.contains(" maps ") && !name.ends_with(" back"))
        })
        .collect();
    // The mirrored rules are for the first stage, which has no
    // commutativity; with it they are redundant.
    let all = every_rule()
        .into_iter()
        .filter(|r| !r.name.as_str().ends_with(" right"))
        .collect();
    Rules { expand, all }
}

/// Every rule (see the module documentation).
fn every_rule() -> Vec<Rw> {
    let mut rules = Vec::new();
    // Associativity, commutativity, identities and annihilators of the
    // operators with nodes of their own (R_EQ 6 and 7).
    for op in [ScalarOp::Add, ScalarOp::Mul] {
        let algebra = op.algebra();
        let f = node_name(op).expect("a node");
        if algebra.commutative {
            rules.push(plain(
                &format!("commute {f}"),
                &format!("({f} ?a ?b)"),
                &format!("({f} ?b ?a)"),
            ));
        }
        if algebra.associative {
            rules.push(plain(
                &format!("associate {f}"),
                &format!("({f} ?a ({f} ?b ?c))"),
                &format!("({f} ({f} ?a ?b) ?c)"),
            ));
            // With commutativity, one direction reaches every grouping.
        }
        if let Some(identity) = algebra.identity {
            rules.push(build(
                &format!("identity {f}"),
                &format!("({f} ?a ?b)"),
                move |egraph, eclass, subst| {
                    let (a, b) = (subst[var("?a")], subst[var("?b")]);
                    let is_identity = egraph[b].data.constant.is_some_and(|c| c.same(identity));
                    (is_identity && egraph[a].data.ty == egraph[eclass].data.ty).then_some(a)
                },
            ));
        }
        if let Some(annihilator) = algebra.annihilator {
            rules.push(build(
                &format!("annihilate {f}"),
                &format!("({f} ?a ?b)"),
                move |egraph, eclass, subst| {
                    let (a, b) = (subst[var("?a")], subst[var("?b")]);
                    let annihilates = egraph[b]
                        .data
                        .constant
                        .is_some_and(|c| c.same(annihilator.value));
                    if !annihilates || !egraph[a].data.free.is_empty() {
                        return None;
                    }
                    let value = annihilator.value.cast(egraph[eclass].data.ty);
                    Some(egraph.add(Sp::Num(Const::of(value))))
                },
            ));
        }
    }

    // `*` distributes over SUM, whose combining operator is `+`: over `+`
    // (R_EQ 1) and over the aggregate itself (R_EQ 3).
    let sum_combine = node_name(AggOp::Sum.combine()).expect("SUM combines with +");
    if ScalarOp::Mul
        .algebra()
        .distributes_over
        .contains(&AggOp::Sum)
    {
        let plus = sum_combine;
        rules.push(plain(
            "distribute",
            &format!("(* ?a ({plus} ?b ?c))"),
            &format!("({plus} (* ?a ?b) (* ?a ?c))"),
        ));
        rules.push(plain(
            "distribute right",
            &format!("(* ({plus} ?b ?c) ?a)"),
            &format!("({plus} (* ?b ?a) (* ?c ?a))"),
        ));
        rules.push(plain(
            "factor",
            &format!("({plus} (* ?a ?b) (* ?a ?c))"),
            &format!("(* ?a ({plus} ?b ?c))"),
        ));
        // With the identity of `*` as the other factor: a + a*b =
        // a*(1 + b), and a + a = a*(1 + 1) (SUM's g(a, 2) = 2a).
        if let Some(one) = ScalarOp::Mul.algebra().identity {
            rules.push(build(
                "factor one",
                &format!("({plus} ?a (* ?a ?b))"),
                move |egraph, _, subst| {
                    let (a, b) = (subst[var("?a")], subst[var("?b")]);
                    let one = egraph.add(Sp::Num(Const::of(one)));
                    let sum = egraph.add(Sp::Add([one, b]));
                    Some(egraph.add(Sp::Mul([a, sum])))
                },
            ));
            rules.push(build(
                "twice",
                &format!("({plus} ?a ?a)"),
                move |egraph, _, subst| {
                    let a = subst[var("?a")];
                    let two = AggOp::Sum.repeat(one, 2).ok()?;
                    let two = egraph.add(Sp::Num(Const::of(two)));
                    Some(egraph.add(Sp::Mul([a, two])))
                },
            ));
        }
        rules.push(build("pull sum", "(* ?a (sum ?i ?b))", pull_sum));
        rules.push(build("pull sum right", "(* (sum ?i ?b) ?a)", pull_sum));
        rules.push(build(
            "push sum",
            "(sum ?i (* ?a ?b))",
            |egraph, _, subst| {
                let (i, a, b) = (subst[var("?i")], subst[var("?a")], subst[var("?b")]);
                let index = egraph[i].data.var?;
                if egraph[a].data.has(index) {
                    return None;
                }
                let inner = egraph.add(Sp::Sum([i, b]));
                Some(egraph.add(Sp::Mul([a, inner])))
            },
        ));
    }

    // `+` combines SUM, commutatively and associatively: a sum of terms
    // splits into sums (R_EQ 2) and nested sums commute (R_EQ 4).
    let combine = AggOp::Sum.algebra();
    if combine.commutative && combine.associative {
        let plus = sum_combine;
        rules.push(plain(
            "split sum",
            &format!("(sum ?i ({plus} ?a ?b))"),
            &format!("({plus} (sum ?i ?a) (sum ?i ?b))"),
        ));
        rules.push(plain(
            "merge sums",
            &format!("({plus} (sum ?i ?a) (sum ?i ?b))"),
            &format!("(sum ?i ({plus} ?a ?b))"),
        ));
        rules.push(plain(
            "commute sums",
            "(sum ?i (sum ?j ?a))",
            "(sum ?j (sum ?i ?a))",
        ));
    }

    // SUM(i) a = g(a, |i|) = a · |i| when i is not free in a (R_EQ 5).
    rules.push(build(
        "sum of a constant",
        "(sum ?i ?a)",
        |egraph, _, subst| {
            let (i, a) = (subst[var("?i")], subst[var("?a")]);
            let index = egraph[i].data.var?;
            if egraph[a].data.has(index) {
                return None;
            }
            let size = i64::try_from(egraph.analysis.size(index)).ok()?;
            let count = egraph.add(Sp::Num(Const::Int(size)));
            Some(egraph.add(Sp::Mul([a, count])))
        },
    ));

    // A sum over one coordinate is the value there.
    rules.push(build(
        "sum of one",
        "(sum ?i ?a)",
        |egraph, eclass, subst| {
            let (i, a) = (subst[var("?i")], subst[var("?a")]);
            let index = egraph[i].data.var?;
            if egraph.analysis.size(index) != 1
                || !egraph[a].data.has(index)
                || egraph[a].data.ty != egraph[eclass].data.ty
            {
                return None;
            }
            substitute(egraph, a, index, Target::Const(0), 0)
        },
    ));

    // Homomorphisms: f(a ∘ b) = f(a) • f(b), both ways.
    for op in ScalarOp::ALL {
        let Some((from, to)) = op.algebra().homomorphism else {
            continue;
        };
        let (Some(from), Some(to), Some(f)) = (node_name(from), node_name(to), op.function_name())
        else {
            continue;
        };
        rules.push(plain(
            &format!("{f} maps {from} to {to}"),
            &format!("({f} ({from} ?a ?b))"),
            &format!("({to} ({f} ?a) ({f} ?b))"),
        ));
        rules.push(plain(
            &format!("{f} maps {from} to {to} back"),
            &format!("({to} ({f} ?a) ({f} ?b))"),
            &format!("({f} ({from} ?a ?b))"),
        ));
    }

    // power(x, 2) = x * x (times 1.0 where x is not a float: power is).
    rules.push(build("square", "(pow ?x ?n)", |egraph, eclass, subst| {
        let (x, n) = (subst[var("?x")], subst[var("?n")]);
        if !egraph[n]
            .data
            .constant
            .is_some_and(|c| c.same(Value::Int(2)))
        {
            return None;
        }
        let square = egraph.add(Sp::Mul([x, x]));
        if egraph[square].data.ty == egraph[eclass].data.ty {
            Some(square)
        } else {
            let one = egraph.add(Sp::Num(Const::of(Value::Float(1.0))));
            Some(egraph.add(Sp::Mul([square, one])))
        }
    }));

    // a / c = a * (1/c) for a finite constant c other than 0.
    let divide = OpKind::Map(ScalarOp::Div);
    rules.push(build(
        "divide by a constant",
        &format!("({divide} ?a ?c)"),
        |egraph, _, subst| {
            let (a, c) = (subst[var("?a")], subst[var("?c")]);
            let c = egraph[c].data.constant?.as_f64();
            if c == 0.0 || !c.is_finite() {
                return None;
            }
            let inverse = egraph.add(Sp::Num(Const::of(Value::Float(1.0 / c))));
            // a / c is always a float; so is a * (1/c).
            Some(egraph.add(Sp::Mul([a, inverse])))
        },
    ));
    rules
}

/// The rules of the first, expanding stage (see [`Rules`]).
const EXPAND: &[&str] = &[
    "identity +",
    "identity *",
    "annihilate *",
    "distribute",
    "distribute right",
    "twice",
    "pull sum",
    "pull sum right",
    "split sum",
    "sum of a constant",
    "sum of one",
    "square",
    "divide by a constant",
];

/// `a * SUM(i) b = SUM(i) a * b` (R_EQ 3); when `i` is free in `a`, the
/// sum's index is renamed in `b` first, to the first of `i_2`, `i_3`, ...
/// that is neither free in `a` nor a name in `b` ([`Context::fresh_name`]).
///
/// [`Context::fresh_name`]: super::analysis::Context::fresh_name
fn pull_sum(egraph: &mut Graph, _: Id, subst: &Subst) -> Option<Id> {
    let (a, i, b) = (subst[var("?a")], subst[var("?i")], subst[var("?b")]);
    let index = egraph[i].data.var?;
    if !egraph[a].data.has(index) {
        let inner = egraph.add(Sp::Mul([a, b]));
        return Some(egraph.add(Sp::Sum([i, inner])));
    }
    let avoid_a = egraph[a].data.free.clone();
    let avoid_b = egraph[b].data.names.clone();
    let fresh = egraph.analysis.fresh_name(index, &[&avoid_a, &avoid_b]);
    let renamed = substitute(egraph, b, index, Target::Var(fresh), 0)?;
    let j = egraph.add(Sp::Var(fresh));
    let inner = egraph.add(Sp::Mul([a, renamed]));
    Some(egraph.add(Sp::Sum([j, inner])))
}

/// What an index is replaced with.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// Another index variable (not bound anywhere in the expression).
    Var(Name),
    /// A coordinate.
    Const(i64),
}

/// The deepest a substitution follows the smallest terms.
const MAX_DEPTH: usize = 64;

/// The class of the smallest expression of `class` with the free index
/// `from` replaced by `to`; classes without `from` are shared as they are.
/// `None` past [`MAX_DEPTH`] or where `to` would be captured.
pub fn substitute(
    egraph: &mut Graph,
    class: Id,
    from: Name,
    to: Target,
    depth: usize,
) -> Option<Id> {
    let class = egraph.find(class);
    if !egraph[class].data.has(from) {
        return Some(class);
    }
    if depth > MAX_DEPTH {
        return None;
    }
    let node = egraph[class].data.best.1.clone();
    match node {
        Sp::Leaf(LeafId(k)) => {
            let leaf = egraph.analysis.leaves.get(k as usize)?.clone();
            let expr = substitute_leaf(&leaf.expr, from, to)?;
            if let Expr::Literal(v) = expr {
                return Some(egraph.add(Sp::Num(Const::of(v))));
            }
            let mut free: Vec<Name> = leaf.free.iter().filter(|v| **v != from).copied().collect();
            if let Target::Var(v) = to {
                free.push(v);
            }
            free.sort_unstable();
            free.dedup();
            let id = egraph.analysis.leaf(LeafInfo { expr, free, ..leaf });
            Some(egraph.add(Sp::Leaf(id)))
        }
        Sp::Var(_) | Sp::Num(_) => Some(class),
        other => {
            // A binder of `to` would capture it.
            let binds = |id: &Id, egraph: &Graph| match to {
                Target::Var(v) => egraph[*id].data.var == Some(v),
                Target::Const(_) => false,
            };
            if matches!(other, Sp::Sum(_) | Sp::Op(OpKind::Agg(..), _))
                && other.children().iter().any(|c| binds(c, egraph))
            {
                return None;
            }
            let mut children = Vec::with_capacity(other.children().len());
            for &child in other.children() {
                children.push(if egraph[child].data.var.is_some() {
                    child
                } else {
                    substitute(egraph, child, from, to, depth + 1)?
                });
            }
            let mut k = 0;
            let node = other.map_children(|_| {
                k += 1;
                children[k - 1]
            });
            Some(egraph.add(node))
        }
    }
}

/// `leaf` (an input, alias or `coord(i)`) with `from` replaced by `to`.
fn substitute_leaf(leaf: &Expr, from: Name, to: Target) -> Option<Expr> {
    let term = |t: &IndexTerm| match t {
        IndexTerm::Var(v) if v.as_str() == from.as_str() => match to {
            Target::Var(w) => IndexTerm::Var(w.as_str().to_string()),
            Target::Const(c) => IndexTerm::Const(c),
        },
        other => other.clone(),
    };
    Some(match leaf {
        Expr::Input(input) => {
            let mut input = input.clone();
            input.indices = input.indices.iter().map(term).collect();
            Expr::Input(input)
        }
        Expr::Alias { name, indices } => Expr::Alias {
            name: name.clone(),
            indices: indices.iter().map(term).collect(),
        },
        Expr::Index(v) if v.as_str() == from.as_str() => match to {
            Target::Var(w) => Expr::Index(w.as_str().to_string()),
            Target::Const(c) => Expr::Literal(Value::Int(c)),
        },
        _ => return None,
    })
}
