//! The e-class analysis of the `saturate` phase: what every expression of
//! a class shares (SPORES section 3.2, "class invariants").
//!
//! - **Free indices** (the schema): equal expressions have the same free
//!   indices, so the sum rules ask the class whether an index is free in
//!   it (`A * SUM(i) B = SUM(i) A * B` needs `i` not free in `A`).
//! - **Type**: equal expressions have the same value type; rules that
//!   would change it (`x * 1 = x` for a boolean `x`) check it.
//! - **Constant**: a class with a constant holds its literal (constant
//!   folding, with the IR's own [`ScalarOp::apply`]).
//! - **Fill and density**: the value at absent coordinates and the
//!   estimated fraction of coordinates that differ from it, propagated as
//!   SPORES' figure 12 does (`S[X*Y] = min`, `S[X+Y] = min(1, ΣS)`,
//!   `S[Σ_i X] = min(1, |i|·S)`), with the operator's declared
//!   annihilator deciding which arguments bound a map; stored inputs start
//!   from the uniform estimator's count of their entries. Equal
//!   expressions may be estimated differently: the class keeps the
//!   tighter estimate.
//! - **Smallest term**: the node of the smallest expression of the class
//!   (by node count), which the renaming rules copy (see
//!   [`super::rules`]).
//!
//! The leaves (inputs, aliases, `coord(i)`) live in [`Context::leaves`];
//! the sizes of the index variables in [`Context::sizes`].

use egg::{Analysis, DidMerge, EGraph, Id, Language};
use hashbrown::HashMap;

use super::lang::{Const, LeafId, Name, OpKind, Sp};
use crate::ir::{AggOp, Expr, ScalarOp, Value};
use crate::storage::ValueType;

/// The e-graph of the phase.
pub type Graph = EGraph<Sp, Context>;

/// One leaf of the e-graph.
#[derive(Clone, Debug)]
pub struct LeafInfo {
    /// The IR leaf: an `Input`, an `Alias` or an `Index`.
    pub expr: Expr,
    /// Its free index variables, sorted.
    pub free: Vec<Name>,
    /// Its value type.
    pub ty: ValueType,
    /// The estimated fraction of its coordinates that are stored.
    pub density: f64,
}

/// What the analysis knows beside the e-graph: the leaves and the index
/// sizes.
#[derive(Debug, Default)]
pub struct Context {
    /// The leaves, by [`LeafId`].
    pub leaves: Vec<LeafInfo>,
    /// The size of every index variable, fresh ones included.
    pub sizes: HashMap<Name, u64>,
}

impl Context {
    /// The leaf `info`, added to the table unless an equal one is there.
    pub fn leaf(&mut self, info: LeafInfo) -> LeafId {
        let found = self.leaves.iter().position(|l| l.expr == info.expr);
        let k = found.unwrap_or_else(|| {
            self.leaves.push(info);
            self.leaves.len() - 1
        });
        LeafId(k as u32)
    }

    /// The size of index `v` (1 if unknown).
    pub fn size(&self, v: Name) -> u64 {
        self.sizes.get(&v).copied().unwrap_or(1)
    }

    /// A name for index `v` in none of the `avoid` lists: the first of
    /// `v_2`, `v_3`, ... (after `v`'s own suffix, if it has one) that no
    /// index of another size has, so that the same rewrite always picks
    /// the same name, whatever else the e-graph holds. It takes `v`'s
    /// size.
    pub fn fresh_name(&mut self, v: Name, avoid: &[&[Name]]) -> Name {
        let size = self.size(v);
        let text = v.as_str();
        let base = match text.rsplit_once('_') {
            Some((base, n)) if !base.is_empty() && n.parse::<u32>().is_ok() => base,
            _ => text,
        };
        let name = (2..)
            .map(|n| Name::from(format!("{base}_{n}")))
            .find(|s| {
                avoid.iter().all(|names| !names.contains(s))
                    && self.sizes.get(s).is_none_or(|known| *known == size)
            })
            .unwrap_or(v);
        self.sizes.insert(name, size);
        name
    }
}

/// The data of one e-class (see the module documentation).
#[derive(Clone, Debug)]
pub struct Data {
    /// The free index variables, sorted.
    pub free: Vec<Name>,
    /// The index variable, for the class of a `Var` node.
    pub var: Option<Name>,
    /// Every index name, free or bound, of any expression of the class,
    /// sorted: what a fresh name avoids.
    pub names: Vec<Name>,
    /// The value type.
    pub ty: ValueType,
    /// The constant value, when the class is one.
    pub constant: Option<Value>,
    /// The value at coordinates where no input has an entry (`None`:
    /// unknown, as for an operator error).
    pub fill: Option<Value>,
    /// The estimated fraction of the coordinates of the free indices whose
    /// value may differ from the fill, in `0..=1`.
    pub density: f64,
    /// The number of coordinates of the free indices.
    pub cells: f64,
    /// The node of the smallest expression of the class, with that
    /// expression's node count.
    pub best: (u32, Sp),
}

impl Data {
    /// The estimated number of coordinates that differ from the fill.
    pub fn nnz(&self) -> f64 {
        self.density * self.cells
    }

    /// Whether index `v` is free in the class.
    pub fn has(&self, v: Name) -> bool {
        self.free.binary_search(&v).is_ok()
    }
}

/// The sorted union of `sets`.
fn union(sets: impl IntoIterator<Item = Vec<Name>>) -> Vec<Name> {
    let mut all: Vec<Name> = sets.into_iter().flatten().collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// `op` applied to `args` when every one is known and the operator
/// succeeds.
fn apply(op: ScalarOp, args: &[Option<Value>]) -> Option<Value> {
    let values: Option<Vec<Value>> = args.iter().copied().collect();
    op.apply(&values?).ok()
}

/// The density of a map over arguments with `fills` and `densities`
/// (see the module documentation): the arguments whose fill annihilates
/// the operator bound it (the least of them), else any argument's entry
/// may make one (their sum, at most 1).
fn map_density(op: ScalarOp, fills: &[Option<Value>], densities: &[f64]) -> f64 {
    let density = |k: usize| {
        if fills[k].is_some() {
            densities[k]
        } else {
            1.0
        }
    };
    if let Some(a) = op.algebra().annihilator {
        let bounding = (0..fills.len())
            .filter(|&k| (k == 0 || !a.only_first) && fills[k].is_some_and(|f| f.same(a.value)));
        if let Some(least) = bounding.map(density).reduce(f64::min) {
            return least;
        }
    }
    (0..fills.len()).map(density).sum::<f64>().min(1.0)
}

impl Context {
    fn cells(&self, free: &[Name]) -> f64 {
        free.iter().map(|v| self.size(*v) as f64).product()
    }

    /// The data of a map `op` over the classes `args`.
    fn map_data(
        &self,
        op: ScalarOp,
        args: &[&Data],
    ) -> (ValueType, Option<Value>, Option<Value>, f64) {
        let types: Vec<ValueType> = args.iter().map(|a| a.ty).collect();
        let ty = op.result_type(&types);
        let constants: Vec<Option<Value>> = args.iter().map(|a| a.constant).collect();
        let fills: Vec<Option<Value>> = args.iter().map(|a| a.fill).collect();
        let densities: Vec<f64> = args.iter().map(|a| a.density).collect();
        (
            ty,
            apply(op, &constants),
            apply(op, &fills),
            map_density(op, &fills, &densities),
        )
    }

    /// The data of `SUM` (or `agg`) over the indices `vars` of `body`.
    fn agg_data(
        &self,
        agg: AggOp,
        vars: &[Name],
        body: &Data,
    ) -> (Vec<Name>, ValueType, Option<Value>, Option<Value>, f64) {
        let free: Vec<Name> = body
            .free
            .iter()
            .copied()
            .filter(|v| !vars.contains(v))
            .collect();
        let count: u128 = vars.iter().map(|v| u128::from(self.size(*v))).product();
        let repeat = |x: Option<Value>| {
            x.and_then(|x| {
                if count == 0 {
                    Some(Value::zero(agg.result_type(x.value_type())))
                } else {
                    agg.repeat(agg.lift(x), count).ok()
                }
            })
        };
        let spread: f64 = vars
            .iter()
            .filter(|v| body.has(**v))
            .map(|v| self.size(*v) as f64)
            .product();
        (
            free,
            agg.result_type(body.ty),
            repeat(body.constant),
            repeat(body.fill),
            (body.density * spread).min(1.0),
        )
    }
}

impl Analysis<Sp> for Context {
    type Data = Data;

    fn make(egraph: &mut Graph, enode: &Sp, _id: Id) -> Data {
        let egraph: &Graph = egraph;
        let ctx = &egraph.analysis;
        let data = |id: &Id| &egraph[*id].data;
        let size = enode
            .children()
            .iter()
            .fold(1u32, |n, c| n.saturating_add(data(c).best.0));
        let best = (size, enode.clone());
        let names = match enode {
            Sp::Var(v) => vec![*v],
            Sp::Leaf(LeafId(k)) => ctx.leaves[*k as usize].free.clone(),
            other => union(other.children().iter().map(|c| data(c).names.clone())),
        };
        let var = |id: &Id| data(id).var.unwrap_or_else(|| Name::from("?"));
        let mapped = |op: ScalarOp, args: &[Id]| {
            let args: Vec<&Data> = args.iter().map(data).collect();
            let free = union(args.iter().map(|a| a.free.clone()));
            let (ty, constant, fill, density) = ctx.map_data(op, &args);
            (free, ty, constant, fill, density)
        };
        let (free, ty, constant, fill, density) = match enode {
            Sp::Var(v) => {
                return Data {
                    free: Vec::new(),
                    var: Some(*v),
                    names,
                    ty: ValueType::Int64,
                    constant: None,
                    fill: None,
                    density: 0.0,
                    cells: 1.0,
                    best,
                };
            }
            Sp::Num(c) => {
                let v = c.value();
                (Vec::new(), v.value_type(), Some(v), Some(v), 0.0)
            }
            Sp::Leaf(LeafId(k)) => {
                let leaf = &ctx.leaves[*k as usize];
                let zero = Value::zero(leaf.ty);
                (leaf.free.clone(), leaf.ty, None, Some(zero), leaf.density)
            }
            Sp::Add(args) => mapped(ScalarOp::Add, args),
            Sp::Mul(args) => mapped(ScalarOp::Mul, args),
            Sp::Pow(args) => mapped(ScalarOp::Power, args),
            Sp::Op(OpKind::Map(op), args) => mapped(*op, args),
            Sp::Sum([v, body]) => ctx.agg_data(AggOp::Sum, &[var(v)], data(body)),
            Sp::Op(OpKind::Agg(op, _), args) => {
                let (body, vars) = args.split_last().expect("an aggregate has a body");
                let vars: Vec<Name> = vars.iter().map(var).collect();
                ctx.agg_data(*op, &vars, data(body))
            }
        };
        // A constant of another type than the class's (an integer that
        // overflowed into a HUGEINT) is not folded.
        let constant = constant.filter(|c| c.value_type() == ty && free.is_empty());
        Data {
            cells: ctx.cells(&free),
            free,
            var: None,
            names,
            ty,
            constant,
            fill,
            density,
            best,
        }
    }

    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        debug_assert_eq!(a.free, b.free, "equal classes with other free indices");
        debug_assert_eq!(a.ty, b.ty, "equal classes with other types");
        let mut changed_a = false;
        let mut changed_b = false;
        match (a.constant, b.constant) {
            (None, Some(c)) => {
                a.constant = Some(c);
                changed_a = true;
            }
            (Some(_), None) => changed_b = true,
            _ => {}
        }
        match (a.fill, b.fill) {
            (None, Some(f)) => {
                a.fill = Some(f);
                changed_a = true;
            }
            (Some(_), None) => changed_b = true,
            _ => {}
        }
        if b.density < a.density {
            a.density = b.density;
            changed_a = true;
        } else if a.density < b.density {
            changed_b = true;
        }
        if a.names != b.names {
            let names = union([a.names.clone(), b.names.clone()]);
            changed_a |= names != a.names;
            changed_b |= names != b.names;
            a.names = names;
        }
        if b.best.0 < a.best.0 {
            a.best = b.best;
            changed_a = true;
        } else if a.best.0 < b.best.0 {
            changed_b = true;
        }
        DidMerge(changed_a, changed_b)
    }

    fn modify(egraph: &mut Graph, id: Id) {
        if let Some(c) = egraph[id].data.constant {
            let num = egraph.add(Sp::Num(Const::of(c)));
            egraph.union(id, num);
        }
    }
}
