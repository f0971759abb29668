//! The sparsity-statistics interface of Galley (section 7.2) and the fold
//! that annotates an IR expression with statistics bottom-up.
//!
//! An estimator is one [`SparsityEstimator`]: five functions over its own
//! statistics type. [`estimate_expr`] walks an [`Expr`] the way the
//! reference evaluator ([`crate::reference`]) does and calls them:
//!
//! - `Input` and `Alias` (and the literals and `coord(i)` leaves) become
//!   statistics through [`SparsityEstimator::leaf`];
//! - `Map(op, args)` is *annihilating* when some argument's fill value is
//!   the annihilator of `op` (`x * 0 = 0`): only assignments where all those
//!   arguments have entries can differ from the fill, so their statistics
//!   are joined ([`SparsityEstimator::join`]), with the variables of the
//!   other arguments ranging over their whole dimension
//!   ([`Leaf::Dense`]). Otherwise any argument's entry can make one, so the
//!   statistics are united ([`SparsityEstimator::union`]);
//! - `Agg(op, indices, body)` projects the body's entries onto the kept
//!   indices ([`SparsityEstimator::aggregate`]), whatever the aggregate;
//! - [`SparsityEstimator::estimate`] turns statistics into the estimated
//!   number of entries that differ from the expression's fill value, over
//!   its free indices.
//!
//! Fill values follow the reference evaluator: 0 for inputs, aliases and
//! coordinates, the value of a literal, `op(fills)` for a map, and the
//! repeated aggregate g(fill, n) for an aggregate. A fill that cannot be
//! computed (an operator error such as `1 / 0`) counts as unknown, which is
//! never annihilating: the estimate stays an over-approximation.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::ir::{Expr, IndexTerm, Input, Value};
use crate::storage::Tensor;

/// Where a statistics object comes from: one leaf of an expression.
#[derive(Debug)]
pub enum Leaf<'a, S> {
    /// A stored tensor read through one term per dimension (an `Input`, or
    /// an `Alias` whose result is stored). A constant term selects the
    /// entries with that coordinate; a variable repeated over several
    /// dimensions selects the entries whose coordinates agree there.
    Stored {
        /// The tensor.
        tensor: &'a Tensor,
        /// One term per dimension, in stored order.
        terms: &'a [IndexTerm],
    },
    /// An earlier result known only by its estimated statistics (an
    /// `Alias` the optimizer has planned but not run), whose free indices
    /// `indices` are read through `terms` (constants and repeats as for
    /// [`Leaf::Stored`]).
    Estimated {
        /// The statistics of the earlier result's expression.
        stats: &'a S,
        /// The earlier result's output indices, in dimension order.
        indices: &'a [String],
        /// One term per output index.
        terms: &'a [IndexTerm],
    },
    /// Every assignment of the variables (name and dimension size): a
    /// coordinate leaf `coord(i)`, or the variables that the
    /// non-annihilating arguments of an annihilating map range over.
    Dense {
        /// The variables with their dimension sizes.
        vars: &'a [(String, u64)],
    },
    /// No entries: a literal, which is all fill.
    Empty,
}

/// A sparsity estimator: the five functions of Galley section 7.2 over its
/// statistics type. Every function may fail only on a limit of the
/// estimator's representation (reported as [`Error::NotSupported`]).
pub trait SparsityEstimator {
    /// What the estimator knows about the entries of one sub-expression.
    type Stats: Clone + std::fmt::Debug;

    /// (1) Statistics of a leaf: a stored tensor or earlier result, read
    /// through its index terms (constants and repeated variables included).
    fn leaf(&self, leaf: Leaf<'_, Self::Stats>) -> Result<Self::Stats>;

    /// (2) An annihilating map: the entries are (at most) the natural join
    /// of the arguments' entries, over the union of their variables.
    fn join(&self, args: &[&Self::Stats]) -> Result<Self::Stats>;

    /// (3) A non-annihilating map: the entries are (at most) the union of
    /// the arguments' entries, each extended over the variables it lacks.
    fn union(&self, args: &[&Self::Stats]) -> Result<Self::Stats>;

    /// (4) An aggregate over `indices`: the entries are (at most) the
    /// projection of the body's entries onto the other variables. Indices
    /// the body does not have are ignored.
    fn aggregate(&self, indices: &[String], body: &Self::Stats) -> Result<Self::Stats>;

    /// (5) The estimated number of entries (over the free variables) that
    /// differ from the fill value.
    fn estimate(&self, stats: &Self::Stats) -> f64;

    /// The estimates of the projections of `stats` onto every subset of
    /// `vars` (some of its free variables), indexed by the subset's bits
    /// over `vars`: the same as [`SparsityEstimator::aggregate`] over the
    /// other free variables followed by [`SparsityEstimator::estimate`],
    /// computed together when the estimator can do that faster than one by
    /// one (`None`: ask one by one). The physical optimizer's loop-order
    /// search asks for these.
    fn projections(&self, _stats: &Self::Stats, _vars: &[String]) -> Option<Vec<f64>> {
        None
    }

    /// Whether every estimate is an upper bound on the true number of
    /// entries (the chain bound's are; a guess's, such as the uniform
    /// estimator's, are not). The `trivial` phase keeps a plan without
    /// search only on a cost estimated from bounds.
    fn bounds(&self) -> bool {
        false
    }
}

/// What an `Alias` of the estimated expression refers to.
#[derive(Clone, Debug)]
pub enum AliasSource<S> {
    /// A result that is stored (already computed).
    Stored(Arc<Tensor>),
    /// A result known by its estimated statistics: the query's output
    /// indices with their dimension sizes, and the statistics of its
    /// expression.
    Estimated {
        /// The output indices of the earlier query, with their sizes.
        indices: Vec<(String, u64)>,
        /// The statistics of the earlier query's expression.
        stats: S,
    },
}

/// The results an expression's aliases refer to, by query name.
pub type Aliases<S> = HashMap<String, AliasSource<S>>;

/// The statistics of `expr`: the five functions of `estimator` folded over
/// the expression tree (see the module documentation). `aliases` resolves
/// `Alias` leaves. Pass the result to [`SparsityEstimator::estimate`] for
/// the estimated number of non-fill entries over `expr`'s free indices.
///
/// Errors: an alias not in `aliases`, an index variable that no input
/// gives a size, and the estimator's own limits. An index variable over
/// dimensions of different sizes ranges over the largest.
pub fn estimate_expr<E: SparsityEstimator>(
    estimator: &E,
    expr: &Expr,
    aliases: &Aliases<E::Stats>,
) -> Result<E::Stats> {
    Ok(estimate_with_fill(estimator, expr, aliases)?.0)
}

/// [`estimate_expr`] and the fill value of `expr` (`None` when it cannot be
/// computed), which tells whether `expr` annihilates a product: only a
/// factor whose fill is 0 limits the product's entries to its own.
pub fn estimate_with_fill<E: SparsityEstimator>(
    estimator: &E,
    expr: &Expr,
    aliases: &Aliases<E::Stats>,
) -> Result<(E::Stats, Option<Value>)> {
    let mut sizes = HashMap::new();
    collect_sizes(expr, aliases, &mut sizes)?;
    let folder = Folder {
        estimator,
        aliases,
        sizes: &sizes,
    };
    let node = folder.fold(expr)?;
    Ok((node.stats, node.fill))
}

/// The estimated number of non-fill entries of `expr` over its free indices:
/// [`estimate_expr`] followed by [`SparsityEstimator::estimate`].
pub fn estimate_nnz<E: SparsityEstimator>(
    estimator: &E,
    expr: &Expr,
    aliases: &Aliases<E::Stats>,
) -> Result<f64> {
    Ok(estimator.estimate(&estimate_expr(estimator, expr, aliases)?))
}

/// The size of every index variable, from the leaves that it indexes.
fn collect_sizes<S>(
    expr: &Expr,
    aliases: &Aliases<S>,
    sizes: &mut HashMap<String, u64>,
) -> Result<()> {
    let mut record = |terms: &[IndexTerm], dims: &mut dyn Iterator<Item = u64>| {
        for (term, size) in terms.iter().zip(dims) {
            let IndexTerm::Var(var) = term else { continue };
            // SQL joins columns of different sizes: an index ranges over
            // the largest, as in the planner and the reference evaluator.
            let known = sizes.entry(var.clone()).or_insert(size);
            *known = (*known).max(size);
        }
    };
    match expr {
        Expr::Input(Input {
            tensor, indices, ..
        }) => {
            record(indices, &mut tensor.tensor.dims().iter().map(|d| d.size));
            Ok(())
        }
        Expr::Alias { name, indices } => {
            match alias(aliases, name)? {
                AliasSource::Stored(tensor) => {
                    record(indices, &mut tensor.dims().iter().map(|d| d.size))
                }
                AliasSource::Estimated { indices: own, .. } => {
                    record(indices, &mut own.iter().map(|(_, size)| *size))
                }
            }
            Ok(())
        }
        Expr::Map { args, .. } => args
            .iter()
            .try_for_each(|arg| collect_sizes(arg, aliases, sizes)),
        Expr::Agg { body, .. } => collect_sizes(body, aliases, sizes),
        Expr::Literal(_) | Expr::Index(_) => Ok(()),
    }
}

fn alias<'a, S>(aliases: &'a Aliases<S>, name: &str) -> Result<&'a AliasSource<S>> {
    aliases
        .get(name)
        .ok_or_else(|| Error::unknown("Query", name, aliases.keys().map(String::as_str)))
}

/// Statistics of a sub-expression with its fill value (`None`: unknown).
struct Node<S> {
    stats: S,
    fill: Option<Value>,
}

struct Folder<'a, E: SparsityEstimator> {
    estimator: &'a E,
    aliases: &'a Aliases<E::Stats>,
    sizes: &'a HashMap<String, u64>,
}

impl<E: SparsityEstimator> Folder<'_, E> {
    fn size(&self, var: &str) -> Result<u64> {
        self.sizes
            .get(var)
            .copied()
            .ok_or_else(|| Error::Invalid(format!("index '{var}' does not index any tensor")))
    }

    fn fold(&self, expr: &Expr) -> Result<Node<E::Stats>> {
        let zero = Some(Value::Int(0));
        match expr {
            Expr::Input(input) => Ok(Node {
                stats: self.estimator.leaf(Leaf::Stored {
                    tensor: &input.tensor.tensor,
                    terms: &input.indices,
                })?,
                fill: zero,
            }),
            Expr::Alias { name, indices } => {
                let stats = match alias(self.aliases, name)? {
                    AliasSource::Stored(tensor) => self.estimator.leaf(Leaf::Stored {
                        tensor,
                        terms: indices,
                    })?,
                    AliasSource::Estimated {
                        indices: own,
                        stats,
                    } => {
                        let names: Vec<String> = own.iter().map(|(n, _)| n.clone()).collect();
                        self.estimator.leaf(Leaf::Estimated {
                            stats,
                            indices: &names,
                            terms: indices,
                        })?
                    }
                };
                Ok(Node { stats, fill: zero })
            }
            Expr::Literal(value) => Ok(Node {
                stats: self.estimator.leaf(Leaf::Empty)?,
                fill: Some(*value),
            }),
            Expr::Index(var) => {
                let vars = [(var.clone(), self.size(var)?)];
                Ok(Node {
                    stats: self.estimator.leaf(Leaf::Dense { vars: &vars })?,
                    fill: zero,
                })
            }
            Expr::Map { op, args } => {
                let nodes = args
                    .iter()
                    .map(|a| self.fold(a))
                    .collect::<Result<Vec<_>>>()?;
                let fills: Option<Vec<Value>> = nodes.iter().map(|n| n.fill).collect();
                let fill = fills.and_then(|f| op.apply(&f).ok());
                let annihilating: Vec<bool> = match op.algebra().annihilator {
                    Some(a) => nodes
                        .iter()
                        .enumerate()
                        .map(|(k, n)| {
                            (k == 0 || !a.only_first) && n.fill.is_some_and(|f| f.same(a.value))
                        })
                        .collect(),
                    None => vec![false; nodes.len()],
                };
                let stats = if annihilating.contains(&true) {
                    self.annihilating_map(args, &nodes, &annihilating)?
                } else {
                    let all: Vec<&E::Stats> = nodes.iter().map(|n| &n.stats).collect();
                    self.estimator.union(&all)?
                };
                Ok(Node { stats, fill })
            }
            Expr::Agg { op, indices, body } => {
                let node = self.fold(body)?;
                let mut total: u128 = 1;
                for index in indices {
                    total = total.saturating_mul(u128::from(self.size(index)?));
                }
                let fill = node.fill.and_then(|f| {
                    if total == 0 {
                        Some(Value::Int(0))
                    } else {
                        op.repeat(op.lift(f), total).ok()
                    }
                });
                Ok(Node {
                    stats: self.estimator.aggregate(indices, &node.stats)?,
                    fill,
                })
            }
        }
    }

    /// The join of the annihilating arguments, with the variables that only
    /// the other arguments have ranging over their whole dimension.
    fn annihilating_map(
        &self,
        args: &[Expr],
        nodes: &[Node<E::Stats>],
        annihilating: &[bool],
    ) -> Result<E::Stats> {
        let mut bound: Vec<String> = Vec::new();
        let mut others: Vec<String> = Vec::new();
        for (arg, &joins) in args.iter().zip(annihilating) {
            let target = if joins { &mut bound } else { &mut others };
            for v in arg.free_indices() {
                if !target.contains(&v) {
                    target.push(v);
                }
            }
        }
        let dense = others
            .into_iter()
            .filter(|v| !bound.contains(v))
            .map(|v| self.size(&v).map(|size| (v, size)))
            .collect::<Result<Vec<_>>>()?;
        let dense_stats = if dense.is_empty() {
            None
        } else {
            Some(self.estimator.leaf(Leaf::Dense { vars: &dense })?)
        };
        let mut joined: Vec<&E::Stats> = nodes
            .iter()
            .zip(annihilating)
            .filter(|(_, joins)| **joins)
            .map(|(n, _)| &n.stats)
            .collect();
        joined.extend(dense_stats.as_ref());
        self.estimator.join(&joined)
    }
}
