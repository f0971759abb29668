//! The degree-statistics estimator with the chain bound (Galley section
//! 7.3.2): an upper bound on the number of entries of every sub-expression.
//!
//! [`ChainStats`] describe a sub-expression by a relation `R` over *slots*
//! (index variables, at most 64): its free variables by name, and *hidden*
//! variables that an aggregate summed away. The sub-expression's entries
//! are contained in the projection of `R` onto the free variables, and `R`
//! satisfies a set of degree constraints ([`Constraint`]): the tuples of `R`
//! that share one assignment of `Y` have at most `d` distinct assignments of
//! `X`. Every slot also has its dimension size as the constraint
//! `({v}, ∅, n_v)`.
//!
//! - A stored tensor gives its stored degree statistics D(X|Y) (see
//!   [`crate::storage::statistics`]), translated from dimensions to the
//!   variables that index them. A constant coordinate drops its dimension
//!   (selecting entries only lowers degrees) and a repeated variable merges
//!   its dimensions (`X` loses what `Y` fixes); both stay valid bounds.
//!   The stored nnz bounds all the variables together; with constants, the
//!   exact number of entries they select does (`labels[v, 34]`: the
//!   vertices labelled 34), counted in an index led by the constant
//!   dimensions.
//! - A join (annihilating map) is the union of the constraint sets: every
//!   constraint of an argument holds on the join. Hidden variables of
//!   different arguments stay distinct slots, so a name that an inner
//!   aggregate summed away never clashes with the same name outside.
//! - A union (non-annihilating map) extends each argument's constraints over
//!   the variables it lacks, `D(X ∪ K|Y) = D(X|Y) · Π_{k∈K} n_k`, and adds
//!   them up over the arguments, `D_C(X|Y) = Σ_j D_j(X|Y)`, for every
//!   `(X, Y)` that some argument constrains (as given and extended), where
//!   `D_j(X|Y)` is the tightest constraint of argument `j` that implies a
//!   bound on `(X, Y)`. Hidden variables are projected out first.
//! - An aggregate hides the summed variables: the constraints stay, and the
//!   estimate then bounds the projection.
//! - The estimate is the cheapest path in the lattice of variable sets
//!   ([`crate::optimizer::lattice`]) from ∅ to a set containing the free
//!   variables: an upper bound on the true number of entries.
//!
//! Projecting out a hidden variable `h` (for a union, or when a join would
//! need more than 64 slots) keeps `(X∖{h}, Y, d)` for every constraint with
//! `h ∉ Y`, drops those with `h ∈ Y`, and first records the current bound on
//! the free variables as one more constraint, so the bound never loosens.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::ir::IndexTerm;
use crate::optimizer::estimate::{Leaf, SparsityEstimator};
use crate::optimizer::lattice::{
    Constraint, Lattice, PathBound, SEARCH_BUDGET, bits, cheapest_path,
};
use crate::storage::fibertree::IndexSpec;

/// The most variables (free and hidden) one statistics object can track.
pub const MAX_SLOTS: usize = 64;

/// The most variables (those of the projections asked for, and hidden
/// ones their paths pass through) for which [`ChainEstimator`] bounds
/// every projection at once: `2^14` sets, searched in well under a
/// millisecond.
pub const PROJECTION_TABLE_VARIABLES: usize = 10;

/// A search that ran out of its budget with a bound over 2^20 entries
/// (where a loose bound moves plans: a step or a loop nest of millions)
/// searches again with [`RETRY_BUDGET`] and keeps the tighter bound. The
/// joins of elimination steps' results, whose summed variables stay as
/// slots with cheap constraints, spend a small budget before they leave
/// those slots: `PB[p,j] * PB[p,k] * #e1[p] * #e2[p]` over TPC-H's parts
/// came out as 9.5·10^10 for 1.25·10^6 with [`SEARCH_BUDGET`], which left
/// a line-item variable in the self-join covariance's loop nests
/// (`docs/benchmarks.md`, "Integer products as passes").
pub const RETRY_ABOVE_LOG2: f64 = 20.0;

/// The budget of the second search (see [`RETRY_ABOVE_LOG2`]).
pub const RETRY_BUDGET: usize = 64;

/// The chain-bound estimator; its statistics are [`ChainStats`].
#[derive(Clone, Copy, Debug)]
pub struct ChainEstimator {
    /// How many sets one lattice search may expand (see
    /// [`crate::optimizer::lattice::cheapest_path`]); past it the bound is valid but may be looser.
    pub budget: usize,
}

impl Default for ChainEstimator {
    fn default() -> Self {
        ChainEstimator {
            budget: SEARCH_BUDGET,
        }
    }
}

/// One variable of a [`ChainStats`].
#[derive(Clone, Debug, PartialEq)]
struct Slot {
    /// The variable's name; `None` once an aggregate has summed it away.
    name: Option<Arc<str>>,
    /// Its dimension size.
    size: u64,
}

/// Degree constraints over the variables of a sub-expression; see the
/// module documentation.
#[derive(Clone, Debug)]
pub struct ChainStats {
    slots: Vec<Slot>,
    constraints: Vec<Constraint>,
    /// Known to have no entries at all.
    empty: bool,
    /// The constraints' lattice for targets within the free variables,
    /// prepared on the first search and shared by clones (an aggregate's
    /// free variables are a subset of its body's).
    lattice: OnceLock<Arc<Lattice>>,
}

impl PartialEq for ChainStats {
    fn eq(&self, other: &Self) -> bool {
        self.slots == other.slots
            && self.constraints == other.constraints
            && self.empty == other.empty
    }
}

fn bit(slot: usize) -> u64 {
    1u64 << slot
}

/// A set of slots carried through `map` (old slot → new slot, or `None`
/// for a slot fixed to a constant).
fn remap(set: u64, map: &[Option<usize>]) -> u64 {
    bits(set)
        .filter_map(|b| map.get(b).copied().flatten())
        .fold(0, |acc, s| acc | bit(s))
}

fn too_many_slots() -> Error {
    Error::NotSupported(format!(
        "the chain-bound estimator tracks at most {MAX_SLOTS} index variables in one expression"
    ))
}

impl ChainStats {
    /// Statistics over `slots` with `constraints`, normalized: size
    /// constraints added, duplicates merged, constraints no tighter than the
    /// sizes dropped, and emptiness detected (a size or degree of 0).
    fn new(slots: Vec<Slot>, constraints: Vec<Constraint>, empty: bool) -> ChainStats {
        let mut stats = ChainStats {
            empty: empty
                || slots.iter().any(|s| s.size == 0)
                || constraints.iter().any(|c| c.degree <= 0.0),
            slots,
            constraints,
            lattice: OnceLock::new(),
        };
        stats.normalize();
        stats
    }

    fn normalize(&mut self) {
        let mut all = std::mem::take(&mut self.constraints);
        let slots = &self.slots;
        let space = |x: u64| bits(x).map(|b| slots[b].size as f64).product::<f64>();
        all.retain_mut(|c| {
            c.x &= !c.y;
            c.x != 0 && c.degree < space(c.x)
        });
        all.extend(slots.iter().enumerate().map(|(s, slot)| Constraint {
            x: bit(s),
            y: 0,
            degree: slot.size as f64,
        }));
        all.sort_unstable_by_key(|c| u128::from(c.y) << 64 | u128::from(c.x));
        all.dedup_by(|later, kept| {
            let same = later.x == kept.x && later.y == kept.y;
            if same {
                kept.degree = kept.degree.min(later.degree);
            }
            same
        });
        self.constraints = all;
    }

    /// The free variables, in slot order.
    pub fn free_indices(&self) -> impl Iterator<Item = &str> {
        self.slots.iter().filter_map(|s| s.name.as_deref())
    }

    /// The free variables as a slot set.
    fn free(&self) -> u64 {
        self.named(|_| true)
    }

    /// The named slots whose name satisfies `keep`.
    fn named(&self, keep: impl Fn(&str) -> bool) -> u64 {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.name.as_deref().is_some_and(&keep))
            .fold(0, |acc, (k, _)| acc | bit(k))
    }

    fn hidden(&self) -> u64 {
        let all = if self.slots.len() >= 64 {
            u64::MAX
        } else {
            bit(self.slots.len()) - 1
        };
        all & !self.free()
    }

    /// Whether the statistics prove there are no entries.
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// The degree constraints as `(X, Y, d)` with variable names (hidden
    /// variables shown as `_k`), for EXPLAIN output and tests.
    pub fn constraints(&self) -> Vec<(Vec<String>, Vec<String>, f64)> {
        let names = |set: u64| -> Vec<String> {
            bits(set)
                .map(|b| match &self.slots[b].name {
                    Some(n) => n.to_string(),
                    None => format!("_{b}"),
                })
                .collect()
        };
        self.constraints
            .iter()
            .map(|c| (names(c.x), names(c.y), c.degree))
            .collect()
    }

    /// The chain bound on the number of distinct assignments of the
    /// variables named in `vars` (free ones; others are ignored).
    pub fn bound_on(&self, vars: &[&str], budget: usize) -> PathBound {
        self.search(self.named(|n| vars.contains(&n)), budget)
    }

    /// The lattice of the constraints for targets within the free
    /// variables, prepared once.
    fn lattice(&self) -> &Lattice {
        self.lattice
            .get_or_init(|| Arc::new(Lattice::new(&self.constraints, self.free())))
    }

    fn search(&self, target: u64, budget: usize) -> PathBound {
        if self.empty {
            return PathBound {
                log2: f64::NEG_INFINITY,
                exact: true,
                expanded: 0,
            };
        }
        if target == 0 {
            // One assignment of no variables: nothing to search.
            return PathBound {
                log2: 0.0,
                exact: true,
                expanded: 0,
            };
        }
        let lattice = self.lattice();
        let find = |budget| {
            if target & !lattice.targets() == 0 {
                lattice.cheapest_path(target, budget)
            } else {
                cheapest_path(&self.constraints, target, budget)
            }
        };
        let first = find(budget);
        if first.exact || first.log2 <= RETRY_ABOVE_LOG2 || budget >= RETRY_BUDGET {
            return first;
        }
        let again = find(RETRY_BUDGET);
        if again.log2 < first.log2 {
            again
        } else {
            first
        }
    }

    /// The chain bound on the projection onto every subset of `vars`
    /// (indexed by the subset's bits over `vars`; names that are not free
    /// variables count for nothing), from one search over the whole
    /// lattice ([`Lattice::all_paths`]): exact cheapest paths, never looser
    /// than one budgeted search per subset. `None` past
    /// [`PROJECTION_TABLE_VARIABLES`].
    fn projections(&self, vars: &[String]) -> Option<Vec<f64>> {
        if vars.len() > PROJECTION_TABLE_VARIABLES {
            return None;
        }
        if self.empty {
            return Some(vec![0.0; 1 << vars.len()]);
        }
        let slots: Vec<u64> = vars.iter().map(|v| self.named(|n| n == v)).collect();
        let paths = self.lattice().all_paths(PROJECTION_TABLE_VARIABLES)?;
        Some(paths.subset_bounds(&slots))
    }

    /// The same statistics without the `hidden` slots: constraints that
    /// count them lose them, those that fix them go, and the bound on the
    /// free variables is kept as a constraint first.
    fn project_out(&self, hidden: u64, budget: usize) -> ChainStats {
        if hidden == 0 {
            return self.clone();
        }
        let free = self.free() & !hidden;
        let mut constraints: Vec<Constraint> = self
            .constraints
            .iter()
            .filter(|c| c.y & hidden == 0)
            .map(|c| Constraint {
                x: c.x & !hidden,
                ..*c
            })
            .collect();
        if free != 0 && !self.empty {
            constraints.push(Constraint {
                x: free,
                y: 0,
                degree: self.search(free, budget).value(),
            });
        }
        let mut map = Vec::with_capacity(self.slots.len());
        let mut slots = Vec::new();
        for (k, slot) in self.slots.iter().enumerate() {
            if hidden & bit(k) == 0 {
                map.push(Some(slots.len()));
                slots.push(slot.clone());
            } else {
                map.push(None);
            }
        }
        let constraints = constraints
            .iter()
            .map(|c| Constraint {
                x: remap(c.x, &map),
                y: remap(c.y, &map),
                degree: c.degree,
            })
            .collect();
        ChainStats::new(slots, constraints, self.empty)
    }
}

impl fmt::Display for ChainStats {
    /// `{i,j}: D(i,j|) = 12, D(j|i) = 3, ...`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let free: Vec<&str> = self.free_indices().collect();
        write!(f, "{{{}}}", free.join(","))?;
        if self.empty {
            return write!(f, ": empty");
        }
        for (k, (x, y, d)) in self.constraints().into_iter().enumerate() {
            let sep = if k == 0 { ": " } else { ", " };
            write!(f, "{sep}D({}|{}) = {d}", x.join(","), y.join(","))?;
        }
        Ok(())
    }
}

/// The number of entries of `tensor` whose coordinates equal the constant
/// terms, counted in an index with the constant dimensions first (built
/// once and cached with the tensor; the executor reads the same index);
/// `None` without constants or when the index cannot be built.
fn selected_entries(tensor: &crate::storage::Tensor, terms: &[IndexTerm]) -> Option<u64> {
    let consts = IndexTerm::constants(terms);
    if consts.is_empty() || terms.len() != tensor.dims().len() {
        return None;
    }
    let mut order: Vec<usize> = consts.iter().map(|(d, _)| *d).collect();
    order.extend((0..terms.len()).filter(|d| !consts.iter().any(|(c, _)| c == d)));
    let tree = tensor.index(&IndexSpec::compressed(order)).ok()?;
    let coords: Vec<i64> = consts.iter().map(|(_, c)| *c).collect();
    match tree.descend(&coords) {
        None => Some(0),
        Some(position) => tree.entries_under(consts.len(), position).map(|n| n as u64),
    }
}

/// Slots for reading `sizes.len()` dimensions (of a tensor or an earlier
/// result) through `terms`: the slot of each dimension (`None` for a
/// constant), the new slots named after the variables in order of
/// appearance, and whether a constant lies outside its dimension (no
/// entries).
fn read_slots(sizes: &[u64], terms: &[IndexTerm]) -> Result<(Vec<Option<usize>>, Vec<Slot>, bool)> {
    if sizes.len() != terms.len() {
        return Err(Error::Invalid(format!(
            "{} index terms for a tensor of {} dimensions",
            terms.len(),
            sizes.len()
        )));
    }
    let mut slots: Vec<Slot> = Vec::new();
    let mut map = Vec::with_capacity(terms.len());
    let mut empty = false;
    for (term, &size) in terms.iter().zip(sizes) {
        match term {
            IndexTerm::Const(c) => {
                empty |= u64::try_from(*c).map_or(true, |c| c >= size);
                map.push(None);
            }
            IndexTerm::Var(v) => {
                let k = match slots.iter().position(|s| s.name.as_deref() == Some(v)) {
                    Some(k) => {
                        slots[k].size = slots[k].size.min(size);
                        k
                    }
                    None => {
                        slots.push(Slot {
                            name: Some(Arc::from(v.as_str())),
                            size,
                        });
                        slots.len() - 1
                    }
                };
                map.push(Some(k));
            }
        }
    }
    if slots.len() > MAX_SLOTS {
        return Err(too_many_slots());
    }
    Ok((map, slots, empty))
}

/// `constraints` over old slots, carried through `map` (dropping what a
/// constant fixes, merging repeated variables).
fn carry<'a>(
    constraints: impl Iterator<Item = Constraint> + 'a,
    map: &'a [Option<usize>],
) -> impl Iterator<Item = Constraint> + 'a {
    constraints
        .map(|c| {
            let y = remap(c.y, map);
            Constraint {
                x: remap(c.x, map) & !y,
                y,
                degree: c.degree,
            }
        })
        .filter(|c| c.x != 0)
}

impl ChainEstimator {
    fn stored(&self, tensor: &crate::storage::Tensor, terms: &[IndexTerm]) -> Result<ChainStats> {
        let sizes: Vec<u64> = tensor.dims().iter().map(|d| d.size).collect();
        let (map, slots, empty) = read_slots(&sizes, terms)?;
        let statistics = tensor.statistics();
        let degrees = statistics.degrees().map(|s| Constraint {
            x: s.x.bits(),
            y: s.y.bits(),
            degree: s.degree as f64,
        });
        let mut constraints: Vec<Constraint> = carry(degrees, &map).collect();
        let all = (0..slots.len()).fold(0, |acc, k| acc | bit(k));
        let selected = selected_entries(tensor, terms).unwrap_or(statistics.nnz());
        if all != 0 {
            constraints.push(Constraint {
                x: all,
                y: 0,
                degree: selected as f64,
            });
        }
        Ok(ChainStats::new(slots, constraints, empty || selected == 0))
    }

    fn estimated(
        &self,
        stats: &ChainStats,
        indices: &[String],
        terms: &[IndexTerm],
    ) -> Result<ChainStats> {
        // Dimension p of the earlier result is the slot named indices[p].
        let dims: Vec<Option<usize>> = indices
            .iter()
            .map(|name| {
                stats
                    .slots
                    .iter()
                    .position(|s| s.name.as_deref() == Some(name))
            })
            .collect();
        let sizes: Vec<u64> = dims
            .iter()
            .map(|d| d.map_or(1, |k| stats.slots[k].size))
            .collect();
        let (dim_map, mut slots, empty) = read_slots(&sizes, terms)?;
        // Old slot → new slot: through the dimension that reads it, or a
        // fresh hidden slot.
        let mut map: Vec<Option<usize>> = vec![None; stats.slots.len()];
        let mut read = vec![false; stats.slots.len()];
        for (old, new) in dims.iter().zip(&dim_map) {
            if let Some(old) = *old {
                map[old] = *new;
                read[old] = true;
            }
        }
        for (k, slot) in stats.slots.iter().enumerate() {
            if !read[k] {
                map[k] = Some(slots.len());
                slots.push(Slot {
                    name: None,
                    size: slot.size,
                });
            }
        }
        if slots.len() > MAX_SLOTS {
            return Err(too_many_slots());
        }
        let constraints = carry(stats.constraints.iter().copied(), &map).collect();
        Ok(ChainStats::new(slots, constraints, empty || stats.empty))
    }

    /// The arguments as one slot space: each argument's slot map, and the
    /// slots (named ones shared by name, hidden ones kept apart). A shared
    /// variable indexing dimensions of different sizes has the smallest
    /// size in a join (`joined`: only coordinates every argument has can
    /// match) and the largest in a union.
    fn merge(args: &[&ChainStats], joined: bool) -> (Vec<Vec<Option<usize>>>, Vec<Slot>) {
        let mut slots: Vec<Slot> = Vec::new();
        let maps = args
            .iter()
            .map(|arg| {
                arg.slots
                    .iter()
                    .map(|slot| {
                        let shared = slot.name.as_ref().and_then(|n| {
                            slots.iter().position(|s| s.name.as_deref() == Some(&**n))
                        });
                        Some(match shared {
                            Some(k) => {
                                slots[k].size = if joined {
                                    slots[k].size.min(slot.size)
                                } else {
                                    slots[k].size.max(slot.size)
                                };
                                k
                            }
                            None => {
                                slots.push(slot.clone());
                                slots.len() - 1
                            }
                        })
                    })
                    .collect()
            })
            .collect();
        (maps, slots)
    }

    /// How many slots merging `args` needs.
    fn merged_len(args: &[&ChainStats]) -> usize {
        let mut names: Vec<&str> = Vec::new();
        let mut hidden = 0;
        for arg in args {
            for slot in &arg.slots {
                match &slot.name {
                    Some(n) if !names.contains(&&**n) => names.push(n),
                    Some(_) => {}
                    None => hidden += 1,
                }
            }
        }
        names.len() + hidden
    }

    /// `D_j(X|Y)` of the union rule: the tightest bound that `arg` (with
    /// free slots `free`, constraints in the merged numbering) implies on
    /// the distinct `x` assignments per `y` assignment, extended over the
    /// variables of `x` it lacks.
    fn extended_degree(arg: &[Constraint], free: u64, x: u64, y: u64, sizes: &[f64]) -> f64 {
        let own = x & free;
        let extra: f64 = bits(x & !free).map(|b| sizes[b]).product();
        if own == 0 {
            return extra;
        }
        let tightest = arg
            .iter()
            .filter(|c| c.y & !y == 0 && own & !(c.x | y) == 0)
            .map(|c| c.degree)
            .fold(bits(own).map(|b| sizes[b]).product::<f64>(), f64::min);
        tightest * extra
    }
}

impl SparsityEstimator for ChainEstimator {
    type Stats = ChainStats;

    fn bounds(&self) -> bool {
        true
    }

    fn leaf(&self, leaf: Leaf<'_, ChainStats>) -> Result<ChainStats> {
        match leaf {
            Leaf::Stored { tensor, terms } => self.stored(tensor, terms),
            Leaf::Estimated {
                stats,
                indices,
                terms,
            } => self.estimated(stats, indices, terms),
            Leaf::Dense { vars } => {
                if vars.len() > MAX_SLOTS {
                    return Err(too_many_slots());
                }
                let slots = vars
                    .iter()
                    .map(|(name, size)| Slot {
                        name: Some(Arc::from(name.as_str())),
                        size: *size,
                    })
                    .collect();
                Ok(ChainStats::new(slots, Vec::new(), false))
            }
            Leaf::Empty => Ok(ChainStats::new(Vec::new(), Vec::new(), true)),
        }
    }

    fn join(&self, args: &[&ChainStats]) -> Result<ChainStats> {
        let projected: Vec<ChainStats>;
        let args: Vec<&ChainStats> = if Self::merged_len(args) > MAX_SLOTS {
            projected = args
                .iter()
                .map(|a| a.project_out(a.hidden(), self.budget))
                .collect();
            projected.iter().collect()
        } else {
            args.to_vec()
        };
        let (maps, slots) = Self::merge(&args, true);
        if slots.len() > MAX_SLOTS {
            return Err(too_many_slots());
        }
        let mut constraints = Vec::with_capacity(
            args.iter().map(|a| a.constraints.len()).sum::<usize>() + slots.len(),
        );
        for (arg, map) in args.iter().zip(&maps) {
            constraints.extend(carry(arg.constraints.iter().copied(), map));
        }
        let empty = args.iter().any(|a| a.empty);
        Ok(ChainStats::new(slots, constraints, empty))
    }

    fn union(&self, args: &[&ChainStats]) -> Result<ChainStats> {
        let owned: Vec<ChainStats> = args
            .iter()
            .map(|a| a.project_out(a.hidden(), self.budget))
            .collect();
        let refs: Vec<&ChainStats> = owned.iter().collect();
        let (maps, slots) = Self::merge(&refs, false);
        if slots.len() > MAX_SLOTS {
            return Err(too_many_slots());
        }
        let live: Vec<(u64, Vec<Constraint>)> = owned
            .iter()
            .zip(&maps)
            .filter(|(arg, _)| !arg.empty)
            .map(|(arg, map)| {
                (
                    remap(arg.free(), map),
                    carry(arg.constraints.iter().copied(), map).collect(),
                )
            })
            .collect();
        if live.is_empty() {
            return Ok(ChainStats::new(slots, Vec::new(), true));
        }
        let sizes: Vec<f64> = slots.iter().map(|s| s.size as f64).collect();
        let all = (0..slots.len()).fold(0, |acc, k| acc | bit(k));
        let mut pairs: Vec<(u64, u64)> = vec![(all, 0)];
        for (free, constraints) in &live {
            for c in constraints {
                pairs.push((c.x, c.y));
                pairs.push(((c.x | (all & !free)) & !c.y, c.y));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let constraints = pairs
            .into_iter()
            .filter(|(x, _)| *x != 0)
            .map(|(x, y)| Constraint {
                x,
                y,
                degree: live
                    .iter()
                    .map(|(free, cs)| Self::extended_degree(cs, *free, x, y, &sizes))
                    .sum(),
            })
            .collect();
        Ok(ChainStats::new(slots, constraints, false))
    }

    fn aggregate(&self, indices: &[String], body: &ChainStats) -> Result<ChainStats> {
        // Prepared before cloning, the lattice serves the body and every
        // projection of it; a projection onto no variable needs none.
        let keeps_some = body
            .free_indices()
            .any(|name| !indices.iter().any(|i| i == name));
        if !body.empty && keeps_some {
            body.lattice();
        }
        let mut stats = body.clone();
        for slot in &mut stats.slots {
            if slot
                .name
                .as_deref()
                .is_some_and(|n| indices.iter().any(|i| i == n))
            {
                slot.name = None;
            }
        }
        Ok(stats)
    }

    fn estimate(&self, stats: &ChainStats) -> f64 {
        stats.search(stats.free(), self.budget).value()
    }

    fn projections(&self, stats: &ChainStats, vars: &[String]) -> Option<Vec<f64>> {
        stats.projections(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(name: &str, size: u64) -> Slot {
        Slot {
            name: Some(Arc::from(name)),
            size,
        }
    }

    fn c(x: u64, y: u64, degree: f64) -> Constraint {
        Constraint { x, y, degree }
    }

    #[test]
    fn union_extends_and_adds() {
        let e = ChainEstimator::default();
        // A[i,j] with 30 entries, B[j,k] with 20, all sizes 10.
        let a = ChainStats::new(
            vec![slot("i", 10), slot("j", 10)],
            vec![c(3, 0, 30.0)],
            false,
        );
        let b = ChainStats::new(
            vec![slot("j", 10), slot("k", 10)],
            vec![c(3, 0, 20.0)],
            false,
        );
        let united = e.union(&[&a, &b]).unwrap();
        // |A|·n_k + n_i·|B| = 300 + 200.
        assert!((e.estimate(&united) - 500.0).abs() < 1e-6, "{united}");
        let joined = e.join(&[&a, &b]).unwrap();
        // ∅ → {i,j} (30) → k (10), or {j,k} (20) → i (10): 200.
        assert!((e.estimate(&joined) - 200.0).abs() < 1e-6, "{joined}");
    }

    #[test]
    fn a_union_ranges_over_the_widest_dimension() {
        let e = ChainEstimator::default();
        // P[p,j] over j < 8 and C[c,j] over 8 <= j < 16, both full, with
        // p and c of size 4: the union has 4·32 + 4·32 entries over
        // (p, c, j), j ranging over 16.
        let p = ChainStats::new(vec![slot("p", 4), slot("j", 8)], vec![c(3, 0, 32.0)], false);
        let q = ChainStats::new(
            vec![slot("c", 4), slot("j", 16)],
            vec![c(3, 0, 32.0)],
            false,
        );
        let united = e.union(&[&p, &q]).unwrap();
        assert!(e.estimate(&united) >= 256.0, "{united}");
        // Their join only matches j < 8.
        let joined = e.join(&[&p, &q]).unwrap();
        assert!(e.estimate(&joined) <= 4.0 * 4.0 * 8.0, "{joined}");
    }

    #[test]
    fn hidden_names_do_not_clash() {
        let e = ChainEstimator::default();
        // SUM(j) A[i,j] where A has one entry per row; then joined with a
        // dense vector over another j.
        let a = ChainStats::new(
            vec![slot("i", 100), slot("j", 100)],
            vec![c(3, 0, 100.0), c(2, 1, 1.0)],
            false,
        );
        let summed = e.aggregate(&["j".to_string()], &a).unwrap();
        assert_eq!(summed.free_indices().collect::<Vec<_>>(), ["i"]);
        let v = ChainStats::new(vec![slot("j", 100)], Vec::new(), false);
        let joined = e.join(&[&summed, &v]).unwrap();
        assert_eq!(joined.free_indices().collect::<Vec<_>>(), ["i", "j"]);
        assert!((e.estimate(&joined) - 10_000.0).abs() < 1e-6, "{joined}");
        // Projecting the hidden j out keeps the bound.
        let projected = summed.project_out(summed.hidden(), SEARCH_BUDGET);
        assert_eq!(projected.slots.len(), 1);
        assert!((e.estimate(&projected) - 100.0).abs() < 1e-6);
    }

    #[test]
    fn projections_match_one_search_each() {
        let e = ChainEstimator { budget: usize::MAX };
        // A path a-b-c-d of 40, 30 and 20 entries with small degrees, and
        // a hidden variable h fixing b.
        let mut constraints = vec![c(3, 0, 40.0), c(6, 0, 30.0), c(12, 0, 20.0)];
        constraints.extend([c(2, 1, 2.0), c(4, 2, 3.0), c(8, 4, 1.0), c(2, 16, 1.0)]);
        constraints.push(c(16, 0, 5.0));
        let slots = vec![
            slot("a", 10),
            slot("b", 10),
            slot("c", 10),
            slot("d", 10),
            Slot {
                name: None,
                size: 7,
            },
        ];
        let stats = ChainStats::new(slots, constraints, false);
        let vars: Vec<String> = ["d", "b", "a", "c", "z"].map(String::from).to_vec();
        let table = e.projections(&stats, &vars).expect("five variables fit");
        assert_eq!(table.len(), 32);
        for (set, &bound) in table.iter().enumerate() {
            let hidden: Vec<String> = (0..vars.len())
                .filter(|k| set >> k & 1 == 0)
                .map(|k| vars[k].clone())
                .collect();
            let one = e.estimate(&e.aggregate(&hidden, &stats).unwrap());
            assert!(
                (bound - one).abs() <= 1e-9 * one,
                "{set:05b}: {bound} vs {one}"
            );
        }
    }

    #[test]
    fn empties_and_display() {
        let e = ChainEstimator::default();
        let empty = e.leaf(Leaf::Empty).unwrap();
        let a = ChainStats::new(vec![slot("i", 4)], vec![c(1, 0, 3.0)], false);
        assert_eq!(e.estimate(&e.join(&[&a, &empty]).unwrap()), 0.0);
        assert_eq!(e.estimate(&e.union(&[&a, &empty]).unwrap()), 3.0);
        assert_eq!(a.to_string(), "{i}: D(i|) = 3");
        assert!(
            e.join(&[&a, &empty])
                .unwrap()
                .to_string()
                .ends_with("empty")
        );
    }
}
