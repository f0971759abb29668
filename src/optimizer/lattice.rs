//! The chain bound's search: the cheapest path from ∅ to a target set in
//! the lattice of index-variable sets (Galley section 7.3.2, after Chen et
//! al.'s cardinality estimation graphs).
//!
//! Variables are bits of a `u64`. A degree constraint `(X, Y, d)` says that
//! the entries sharing one assignment of `Y` have at most `d` distinct
//! assignments of `X`. It is an edge from every set `S ⊇ Y` to `S ∪ X` of
//! cost `log₂ d`: the assignments of `S ∪ X` that extend one of `S` number
//! at most `d`, so a path from ∅ to a set that contains the target, of total
//! cost `c`, proves that the entries have at most `2^c` distinct target
//! assignments. Every path is a valid bound; the cheapest is the chain
//! bound.
//!
//! The search is A* over the sets reachable from ∅, with an admissible and
//! consistent heuristic: for every target variable `v` not yet in `S`, the
//! cheapest cost per target variable of a constraint that adds `v`, summed
//! (any path must add every missing variable, and an edge adding `k` target
//! variables pays at least their shares), updated incrementally along each
//! edge. Variables that are neither in the target nor in some constraint's
//! `Y` are dropped from every `X` (they can never help), edges that another
//! edge dominates (needs no more, adds as much, costs no more) are dropped,
//! and among sets of equal estimated cost the fuller one is expanded first.
//! Every set is closed under the edges of cost 0 (degree 1), which never
//! make a path dearer, so such chains cost no expansions. A
//! greedy path (cheapest cost per added variable) gives the first incumbent,
//! which prunes every partial path that cannot beat it, and greedy
//! completions from sets that first reach a new quarter of the target
//! improve it as the search goes.
//! The search expands at most a budget of sets; past it, the incumbent (a
//! valid but possibly looser bound) is the answer, flagged as not exact.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;

/// How many sets the search expands before it settles for its incumbent.
/// On the subgraph queries with semijoin-reduced inputs, whose many
/// small degrees leave the heuristic loose, the search reached 256 sets
/// (the former budget) in one estimate out of 20 and averaged 24 to 90
/// expansions, without a cheaper plan than at 16 (`benches/optimize.rs`
/// and the README's optimizer figures); with the stored statistics alone
/// it averages one to three.
pub const SEARCH_BUDGET: usize = 16;

/// A degree constraint over variables numbered `0..64`: entries sharing one
/// assignment of `y` have at most `degree` distinct assignments of `x`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constraint {
    /// The counted variables (disjoint from `y`).
    pub x: u64,
    /// The fixed variables.
    pub y: u64,
    /// The largest number of distinct `x` assignments per `y` assignment.
    pub degree: f64,
}

/// The outcome of one search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathBound {
    /// `log₂` of the bound (`+inf` if no path reaches the target).
    pub log2: f64,
    /// Whether the path is the cheapest one (the search finished within its
    /// budget).
    pub exact: bool,
    /// How many sets the search expanded.
    pub expanded: usize,
}

impl PathBound {
    /// The bound itself, `2^log2`.
    pub fn value(self) -> f64 {
        self.log2.exp2()
    }
}

thread_local! {
    /// The A* search's tables, kept between searches so that their memory
    /// is reused: the cheapest known cost of every set, and the queue.
    static SCRATCH: RefCell<(HashMap<u64, f64>, BinaryHeap<Open>)> =
        RefCell::new((HashMap::new(), BinaryHeap::new()));
}

/// A search's outcome.
fn done(log2: f64, exact: bool, expanded: usize) -> PathBound {
    PathBound {
        log2,
        exact,
        expanded,
    }
}

/// Tolerance on path costs (sums of logarithms).
const EPS: f64 = 1e-9;

/// One constraint as an edge of the lattice.
#[derive(Clone, Copy, Debug)]
struct Edge {
    x: u64,
    y: u64,
    cost: f64,
}

/// A set waiting in the A* queue.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// Path cost plus heuristic, on a fixed grid so that ties are exact.
    f: i64,
    /// Number of target variables in the set.
    depth: u32,
    g: f64,
    /// The heuristic of `set`.
    h: f64,
    set: u64,
}

impl PartialEq for Open {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Open {}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Open {
    /// The heap pops the greatest: the smallest `f`, then the deepest set.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .f
            .cmp(&self.f)
            .then(self.depth.cmp(&other.depth))
            .then(other.set.cmp(&self.set))
    }
}

/// The positions of the bits set in `set`, lowest first.
pub(crate) fn bits(mut set: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (set != 0).then(|| {
            let bit = set.trailing_zeros() as usize;
            set &= set - 1;
            bit
        })
    })
}

/// The cheapest cost share, per target variable, of an edge that adds it:
/// `cost / (target variables the edge adds)`. Summed over the missing
/// target variables it is a lower bound on the cost of any completion.
fn shares(edges: &[Edge], target: u64) -> [f64; 64] {
    let mut share = [f64::INFINITY; 64];
    for e in edges {
        let covered = e.x & target;
        let count = f64::from(covered.count_ones());
        for v in bits(covered) {
            share[v] = share[v].min(e.cost / count);
        }
    }
    share
}

/// `set` with every one of the `free` edges (of cost 0) that applies to
/// it, repeatedly.
fn closure(free: &[Edge], mut set: u64) -> u64 {
    loop {
        let before = set;
        for e in free {
            if e.y & !set == 0 {
                set |= e.x;
            }
        }
        if set == before {
            return set;
        }
    }
}

/// `set`'s bits within `vars`, packed: the k-th variable of `vars` (lowest
/// first) becomes bit k.
fn compress(set: u64, vars: u64) -> usize {
    bits(vars)
        .enumerate()
        .filter(|&(_, v)| set >> v & 1 == 1)
        .fold(0, |acc, (k, _)| acc | 1 << k)
}

/// A key whose integer order is `f64::total_cmp`'s order (for cheap sort
/// comparisons).
pub fn order_key(value: f64) -> u64 {
    let bits = value.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// Drops every edge that another makes redundant: one that needs no more
/// (`y ⊆`), adds at least as much (`x ⊇`) and costs no more. Replacing the
/// redundant edge by it in any path gives a path at least as cheap. The
/// edges left are in increasing order of cost.
fn prune_dominated(edges: &mut Vec<Edge>) {
    edges.sort_unstable_by_key(|e| {
        (
            order_key(e.cost),
            std::cmp::Reverse(e.x.count_ones()),
            e.x,
            e.y,
        )
    });
    // The edges kept so far are the prefix `..kept`.
    let mut kept = 0;
    for i in 0..edges.len() {
        let e = edges[i];
        let dominated = edges[..kept]
            .iter()
            .any(|k| k.y & !e.y == 0 && e.x & !k.x == 0 && k.cost <= e.cost);
        if !dominated {
            edges[kept] = e;
            kept += 1;
        }
    }
    edges.truncate(kept);
}

/// The cost of a greedy path from `set` to a superset of `target`: each step
/// takes the applicable edge of least cost per variable it adds (target
/// variables count fully, enabling ones a quarter). `+inf` if stuck.
fn greedy(edges: &[Edge], mut set: u64, target: u64) -> f64 {
    let mut cost = 0.0;
    while set & target != target {
        // The best edge so far, with its cost and gain: ratios compare as
        // `cost · other gain`, without a division per edge.
        let mut best: Option<(f64, f64, u64)> = None;
        for e in edges {
            let new = e.x & !set;
            if e.y & !set != 0 || new == 0 {
                continue;
            }
            let gain = f64::from((new & target).count_ones())
                + 0.25 * f64::from((new & !target).count_ones());
            if best.is_none_or(|(c, g, _)| e.cost * g < c * gain) {
                best = Some((e.cost, gain, e.x));
            }
        }
        let Some((c, _, x)) = best else {
            return f64::INFINITY;
        };
        set |= x;
        cost += c;
    }
    cost
}

/// The cheapest path from ∅ to a superset of `target` over `constraints`
/// (see the module documentation), expanding at most `budget` sets.
/// Degrees below 1 count as 1 (a constraint of degree 0 means no entries at
/// all; callers handle that before searching).
pub fn cheapest_path(constraints: &[Constraint], target: u64, budget: usize) -> PathBound {
    Lattice::new(constraints, target).cheapest_path(target, budget)
}

/// The lattice of one set of constraints, prepared for searches towards
/// any target within a set of variables (edges restricted to the useful
/// variables, dominated ones dropped), so that several projections of one
/// expression share the preparation.
#[derive(Clone, Debug)]
pub struct Lattice {
    /// The edges, in increasing order of cost.
    edges: Vec<Edge>,
    /// How many edges cost 0 (degree at most 1; they lead `edges`): every
    /// set is closed under them for free.
    free: usize,
    /// The variables a target may hold.
    targets: u64,
}

impl Lattice {
    /// The lattice of `constraints` for targets within `targets`.
    pub fn new(constraints: &[Constraint], targets: u64) -> Lattice {
        let useful = constraints.iter().fold(targets, |m, c| m | c.y);
        let mut edges: Vec<Edge> = constraints
            .iter()
            .filter_map(|c| {
                let x = c.x & useful & !c.y;
                (x != 0).then(|| Edge {
                    x,
                    y: c.y,
                    cost: c.degree.max(1.0).log2(),
                })
            })
            .collect();
        prune_dominated(&mut edges);
        let free = edges.iter().take_while(|e| e.cost <= 0.0).count();
        Lattice {
            edges,
            free,
            targets,
        }
    }

    /// `set` with every edge of cost 0 that applies to it, repeatedly.
    fn close(&self, set: u64) -> u64 {
        closure(&self.edges[..self.free], set)
    }

    /// The variables a target may hold.
    pub fn targets(&self) -> u64 {
        self.targets
    }

    /// The cheapest path from ∅ to a superset of `target`, which must lie
    /// within [`Lattice::targets`] (other variables may have been dropped
    /// from the edges), expanding at most `budget` sets.
    pub fn cheapest_path(&self, target: u64, budget: usize) -> PathBound {
        if target == 0 {
            return done(0.0, true, 0);
        }
        let edges = &self.edges;
        let share = shares(edges, target);
        if bits(target).any(|v| share[v].is_infinite()) {
            return done(f64::INFINITY, true, 0);
        }
        let incumbent = greedy(edges, 0, target);
        SCRATCH.with_borrow_mut(|(best, open)| {
            best.clear();
            open.clear();
            self.search(target, budget, &share, incumbent, best, open)
        })
    }

    /// The A* search of [`Lattice::cheapest_path`] from its first
    /// incumbent, in the given (empty) tables of the cheapest known cost of
    /// every set and of the queued sets.
    fn search(
        &self,
        target: u64,
        budget: usize,
        share: &[f64; 64],
        mut incumbent: f64,
        best: &mut HashMap<u64, f64>,
        open: &mut BinaryHeap<Open>,
    ) -> PathBound {
        let edges = &self.edges;
        let grid = |f: f64| (f * 1e9).round() as i64;
        let start = self.close(0);
        let h0: f64 = bits(target & !start).map(|v| share[v]).sum();
        // Greedy completions run when the search first reaches these depths
        // (a quarter of the target apart), so at most five per search.
        let step = (target.count_ones() / 4).max(1);
        let mut next_completion = step;
        best.insert(start, 0.0);
        open.push(Open {
            f: grid(h0),
            depth: (start & target).count_ones(),
            g: 0.0,
            h: h0,
            set: start,
        });
        let mut expanded = 0;
        while let Some(Open {
            depth, g, h, set, ..
        }) = open.pop()
        {
            if best.get(&set).is_some_and(|&b| g > b + EPS) {
                continue;
            }
            if set & target == target {
                return done(g.min(incumbent), true, expanded);
            }
            if g + h >= incumbent - EPS {
                // Every set still queued costs at least as much.
                return done(incumbent, true, expanded);
            }
            if expanded >= budget {
                return done(incumbent, false, expanded);
            }
            expanded += 1;
            if depth >= next_completion {
                next_completion = depth + step;
                incumbent = incumbent.min(g + greedy(edges, set, target));
            }
            for e in edges {
                if e.y & !set != 0 || e.x & !set == 0 {
                    continue;
                }
                let next = self.close(set | e.x);
                let new = next & !set;
                let g_next = g + e.cost;
                let h_next = (h - bits(new & target).map(|v| share[v]).sum::<f64>()).max(0.0);
                if g_next + h_next >= incumbent - EPS {
                    continue;
                }
                match best.entry(next) {
                    Entry::Occupied(mut o) if g_next < *o.get() - EPS => {
                        o.insert(g_next);
                    }
                    Entry::Occupied(_) => continue,
                    Entry::Vacant(v) => {
                        v.insert(g_next);
                    }
                }
                open.push(Open {
                    f: grid(g_next + h_next),
                    depth: (next & target).count_ones(),
                    g: g_next,
                    h: h_next,
                    set: next,
                });
            }
        }
        done(incumbent, true, expanded)
    }

    /// The cheapest paths to every set at once, when the edges involve at
    /// most `max_vars` variables (`None` beyond): a dynamic program over
    /// the sets closed under the free edges (a set reached is as good as
    /// its closure, which costs nothing more and admits every edge it did),
    /// then, per set, the cheapest of its supersets (a path to a superset
    /// is a path for the set). It costs at most `2^vars` times the edges,
    /// against one A* search per target.
    pub fn all_paths(&self, max_vars: usize) -> Option<AllPaths> {
        let vars = self.edges.iter().fold(0u64, |acc, e| acc | e.x | e.y);
        let width = vars.count_ones() as usize;
        if width > max_vars {
            return None;
        }
        let edges: Vec<Edge> = self
            .edges
            .iter()
            .map(|e| Edge {
                x: compress(e.x, vars) as u64,
                y: compress(e.y, vars) as u64,
                cost: e.cost,
            })
            .collect();
        let (free, paid) = edges.split_at(self.free);
        let close = |set: usize| closure(free, set as u64) as usize;
        // Every edge leads to a proper superset, a larger number: in
        // increasing order, each set's cheapest path is known when reached.
        let mut log2 = vec![f64::INFINITY; 1 << width];
        log2[close(0)] = 0.0;
        for set in 0..log2.len() {
            let g = log2[set];
            if g.is_infinite() {
                continue;
            }
            for e in paid {
                let (x, y) = (e.x as usize, e.y as usize);
                if y & !set == 0 && x & !set != 0 {
                    let next = close(set | x);
                    if g + e.cost < log2[next] {
                        log2[next] = g + e.cost;
                    }
                }
            }
        }
        for b in 0..width {
            for set in 0..log2.len() {
                if set >> b & 1 == 0 {
                    log2[set] = log2[set].min(log2[set | 1 << b]);
                }
            }
        }
        Some(AllPaths { vars, log2 })
    }
}

/// The cheapest path from ∅ to a superset of every set of a lattice's
/// variables at once ([`Lattice::all_paths`]), for callers that ask for
/// many projections of one expression (the physical optimizer's loop
/// orders).
#[derive(Clone, Debug)]
pub struct AllPaths {
    /// The variables that some edge adds or needs: sets are stored by
    /// their bits within this mask, in order.
    vars: u64,
    /// Per set (compressed to `vars`): the `log₂` cost of the cheapest
    /// path from ∅ to a superset of it.
    log2: Vec<f64>,
}

impl AllPaths {
    /// The cheapest path's `log₂` cost to a superset of `target` (`+inf`
    /// when none reaches it): what [`Lattice::cheapest_path`] finds with an
    /// unlimited budget.
    pub fn log2(&self, target: u64) -> f64 {
        if target & !self.vars != 0 {
            return f64::INFINITY;
        }
        self.log2
            .get(compress(target, self.vars))
            .copied()
            .unwrap_or(f64::INFINITY)
    }

    /// `2^`[`AllPaths::log2`] of the union of `slots[k]` over the members
    /// `k` of every subset of `0..slots.len()`, indexed by the subset's
    /// bits: each subset's position in the table is a smaller subset's
    /// (without its lowest member) with one more slot's, so no target is
    /// compressed twice.
    pub fn subset_bounds(&self, slots: &[u64]) -> Vec<f64> {
        // A slot with a variable that no edge adds is reached by no path.
        let positions: Vec<Option<usize>> = slots
            .iter()
            .map(|&s| (s & !self.vars == 0).then(|| compress(s, self.vars)))
            .collect();
        let mut at = vec![Some(0usize); 1 << slots.len()];
        for set in 1..at.len() {
            at[set] = at[set & (set - 1)]
                .zip(positions[set.trailing_zeros() as usize])
                .map(|(rest, one)| rest | one);
        }
        at.iter()
            .map(|p| {
                p.and_then(|p| self.log2.get(p))
                    .map_or(f64::INFINITY, |log2| log2.exp2())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn c(x: u64, y: u64, degree: f64) -> Constraint {
        Constraint { x, y, degree }
    }

    /// Every path cost by brute force over all reachable sets (Bellman-Ford
    /// style relaxation until nothing changes).
    fn brute_force(constraints: &[Constraint], target: u64) -> f64 {
        let mut cost: std::collections::HashMap<u64, f64> = [(0u64, 0.0)].into();
        loop {
            let mut changed = false;
            let snapshot: Vec<(u64, f64)> = cost.iter().map(|(&s, &g)| (s, g)).collect();
            for (set, g) in snapshot {
                for k in constraints {
                    if k.y & !set == 0 {
                        let next = set | k.x;
                        let g_next = g + k.degree.max(1.0).log2();
                        if cost.get(&next).is_none_or(|&old| g_next < old - EPS) {
                            cost.insert(next, g_next);
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        cost.iter()
            .filter(|(s, _)| *s & target == target)
            .map(|(_, g)| *g)
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn triangle_paths() {
        // i=1, j=2, k=4; three edges of 100 entries, degree 5 each way.
        let mut cs = Vec::new();
        for (a, b) in [(1, 2), (2, 4), (1, 4)] {
            cs.extend([c(a | b, 0, 100.0), c(b, a, 5.0), c(a, b, 5.0)]);
        }
        let bound = cheapest_path(&cs, 7, SEARCH_BUDGET);
        assert!(bound.exact);
        assert!((bound.value() - 500.0).abs() < 1e-6, "{bound:?}");
        // Projection onto {i}: the 100-entry edge beats nothing smaller.
        assert!((cheapest_path(&cs, 1, SEARCH_BUDGET).value() - 100.0).abs() < 1e-6);
        assert_eq!(cheapest_path(&cs, 0, SEARCH_BUDGET).value(), 1.0);
        assert_eq!(cheapest_path(&cs, 8, SEARCH_BUDGET).log2, f64::INFINITY);
    }

    fn constraints_strategy() -> impl Strategy<Value = (Vec<Constraint>, u64)> {
        // A quarter of the degrees are at most 1: edges of cost 0.
        let degree = prop_oneof![1 => 0.5f64..=1.0, 3 => 1.0f64..1000.0];
        let constraint = (1u64..64, 0u64..64, degree).prop_map(|(x, y, d)| c(x & !y, y, d));
        (prop::collection::vec(constraint, 1..14), 1u64..64).prop_map(|(mut cs, target)| {
            // Sizes for the six variables keep every target reachable.
            cs.extend((0..6).map(|v| c(1 << v, 0, 50.0)));
            cs.retain(|k| k.x != 0);
            (cs, target)
        })
    }

    proptest! {
        #[test]
        fn a_star_finds_the_cheapest_path((cs, target) in constraints_strategy()) {
            // Six variables have 64 sets: a budget above that is never hit.
            let found = cheapest_path(&cs, target, 1 << 7);
            prop_assert!(found.exact);
            let expected = brute_force(&cs, target);
            prop_assert!((found.log2 - expected).abs() < 1e-6, "{found:?} vs {expected}");
            // The default budget gives a valid path, the cheapest when it
            // says it is exact.
            let bounded = cheapest_path(&cs, target, SEARCH_BUDGET);
            prop_assert!(bounded.log2 >= expected - 1e-6);
            if bounded.exact {
                prop_assert!((bounded.log2 - expected).abs() < 1e-6);
            }
            // A budget of nothing still gives a valid (greedy) path.
            let greedy = cheapest_path(&cs, target, 0);
            prop_assert!(greedy.log2 >= expected - 1e-6);
        }

        #[test]
        fn all_paths_match_every_search((cs, _) in constraints_strategy()) {
            let lattice = Lattice::new(&cs, 63);
            let all = lattice.all_paths(6).expect("six variables fit");
            for target in 0..64u64 {
                let expected = brute_force(&cs, target);
                prop_assert!((all.log2(target) - expected).abs() < 1e-6, "{target}: {} vs {expected}", all.log2(target));
            }
            // The table over unions of slots (one, several, no variable,
            // and one past the six) is the bound of each union.
            let slots = [4u64, 3, 0, 48, 1 << 7];
            let table = all.subset_bounds(&slots);
            prop_assert_eq!(table.len(), 32);
            for (set, &bound) in table.iter().enumerate() {
                let target = (0..slots.len())
                    .filter(|k| set >> k & 1 == 1)
                    .fold(0, |acc, k| acc | slots[k]);
                prop_assert_eq!(bound, all.log2(target).exp2(), "{:05b}", set);
            }
            // Past its variable limit it declines.
            let width = lattice.edges.iter().fold(0u64, |a, e| a | e.x | e.y).count_ones();
            prop_assert_eq!(lattice.all_paths(5).is_some(), width <= 5);
        }
    }
}
