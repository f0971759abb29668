//! Semijoin reduction: stored inputs of a product shrunk to the
//! coordinates its one-variable factors allow, before the logical
//! optimizer estimates and plans the product.
//!
//! In `labels[a,3] * edges[a,b,0] * labels[b,12] * ...` every assignment
//! with an entry has `a` among the vertices labelled 3 and `b` among those
//! labelled 12, so `edges[a,b,0]` may be replaced by its entries with
//! label 0 whose `a` and `b` are stored in those two filters: the product
//! is unchanged, because the executor (and the reference evaluator) only
//! produce assignments where every factor has a stored entry. The reduced
//! input is a stored tensor of its own (named `#s1`, `#s2`, ...), so the
//! degree statistics the estimators read from it are exact for the
//! labelled edges instead of bounded by the maximum degree over all
//! vertices, and every later intermediate and loop nest reads fewer
//! entries. This is the first pass of Yannakakis's semijoin reduction,
//! restricted to one-variable filters; it is what keeps the chain bound of
//! wide labelled subgraph queries within reach of their true sizes.
//!
//! A *filter* is a factor that reads a stored tensor through exactly one
//! variable (any other terms constant). A *target* is a stored input with
//! two or more distinct variables, at least one of them filtered by another
//! factor. The target's entries are walked in a fibertree order led by its
//! constants and then its filtered dimensions (smallest filter first),
//! visiting only the filters' coordinates. A reduction that removes nothing
//! is dropped, and reductions are shared by equal (target, filters) pairs
//! of one program. The work is proportional to the entries under the
//! filtered coordinates, never more than one pass over the target. A
//! tensor whose entries fill its dimensions (a dense vector) is no filter
//! by its values: it removes nothing within its dimensions.
//! Reductions are also kept with their target tensor across statements
//! (see [`Tensor::derived`]), for as long as their filter tensors live and
//! up to as many entries as the target holds (at least
//! [`CACHE_MIN_ENTRIES`]), least recently used first out: a later
//! statement with the same target and filters reuses the reduced tensor
//! and its statistics, in a copy without the indexes earlier statements
//! built on it, so that no plan depends on what ran before.
//!
//! A filter that counts each of its coordinates once (a label table whose
//! rows are distinct) is then redundant on any variable of a target that
//! is counted by multiplicity too: the reduced target keeps only the
//! filter's coordinates, where the filter multiplies by 1. Such filters are
//! left out of the product, so that neither the optimizer nor the loop
//! nest carries them; `EXPLAIN` lists them.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::exec::planner::table_formats;
use crate::ir::{Annotation, Expr, IndexTerm, Input, Program, ScalarOp, TensorRef};
use crate::storage::fibertree::{Fiber, FiberTree, IndexSpec, LeafValues, Level};
use crate::storage::{Coo, DimensionSpec, MULTIPLICITY, Tensor, ValueData};

/// One reduced input, for `EXPLAIN`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduction {
    /// The name the reduced tensor goes by in the plan (`#s1`, ...).
    pub name: String,
    /// The filters it was reduced by, as written first (held as the plan
    /// holds its inputs: while a reduction lives, its filters' tensors do,
    /// and so does its entry in the target's cache).
    pub filters: Vec<Input>,
    /// The variables of the reduced tensor, in its dimension order.
    pub indices: Vec<String>,
    /// The entries kept.
    pub kept: usize,
    /// The entries the target's constants select (all of them without
    /// constants).
    pub of: usize,
    /// The reduced input itself, as in the program before the reduction
    /// (what [`crate::emit`] restricts with a semi-join).
    pub target: Input,
}

impl Reduction {
    /// The reduced input as written first, with its variables.
    pub fn source(&self) -> String {
        self.target.to_string()
    }

    /// The filters as written first, for `EXPLAIN`.
    pub fn filters_written(&self) -> Vec<String> {
        self.filters.iter().map(ToString::to_string).collect()
    }

    /// The filters' columns, in the order of `filters`: each filter has
    /// one variable, the one it filters.
    pub fn filter_columns(&self) -> Vec<FilterColumn> {
        self.filters
            .iter()
            .filter_map(|f| {
                let variable = f.indices.iter().find_map(|t| match t {
                    IndexTerm::Var(v) => Some(v.as_str()),
                    IndexTerm::Const(_) => None,
                })?;
                FilterColumn::of(f, variable)
            })
            .collect()
    }
}

/// The column of a filter table that selects coordinates of a variable.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterColumn {
    /// The filter's table.
    pub table: String,
    /// The variable it filters.
    pub variable: String,
    /// The table's column that holds the variable's coordinates.
    pub column: String,
    /// The filter's constant terms: column and key (its string for a
    /// string key).
    pub constants: Vec<(String, KeyConstant)>,
}

/// A constant coordinate of a key column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyConstant {
    /// An integer coordinate.
    Coordinate(i64),
    /// The string a dictionary-coded coordinate stands for.
    String(String),
}

impl FilterColumn {
    /// The description of `input`'s column for `variable`, if it has one.
    fn of(input: &Input, variable: &str) -> Option<FilterColumn> {
        let dims = input.tensor.tensor.dims();
        let mut column = None;
        let mut constants = Vec::new();
        for (term, dim) in input.indices.iter().zip(dims) {
            match term {
                IndexTerm::Var(v) if v == variable => column = Some(dim.name.clone()),
                IndexTerm::Var(_) => {}
                IndexTerm::Const(c) => {
                    let key = match &dim.dictionary {
                        Some(d) => KeyConstant::String(d.string(*c)?.to_string()),
                        None => KeyConstant::Coordinate(*c),
                    };
                    constants.push((dim.name.clone(), key));
                }
            }
        }
        Some(FilterColumn {
            table: input.tensor.name.clone(),
            variable: variable.to_string(),
            column: column?,
            constants,
        })
    }
}

/// A stored input read through its terms, identified by the tensor object
/// and the terms' shape (constants, and which position is which variable).
type Shape = (usize, Annotation, Vec<Option<i64>>);

/// A filter: its shape and the position of its variable.
type FilterKey = (Shape, usize);

/// A reduction: the target's shape and, per term, the filters on it.
type ReductionKey = (Shape, Vec<Vec<FilterKey>>);

/// Reduces the products of one program, remembering what it made.
#[derive(Debug, Default)]
pub struct Reducer {
    /// The filters' coordinates by (filter shape, position of its variable).
    supports: HashMap<FilterKey, Arc<Support>>,
    /// Reductions made, by target shape and the filters of each position;
    /// `None` when the filters remove nothing.
    made: HashMap<ReductionKey, Option<Made>>,
    /// What was made, in order.
    pub reductions: Vec<Reduction>,
    /// The filters left out of their products (see [`Reducer::reduce`]).
    pub absorbed: Vec<Expr>,
}

/// The coordinates a filter stores at its variable: sorted, and as a
/// bitmap for constant-time membership.
#[derive(Debug)]
struct Support {
    coords: Vec<i64>,
    bits: Vec<u64>,
    /// Whether the filter counts every one of these coordinates once (its
    /// factor is 1 wherever it has an entry), so that a product whose
    /// reduced inputs already keep only these coordinates does not need it.
    unit: bool,
}

impl Support {
    fn new(coords: Vec<i64>, unit: bool) -> Support {
        let words = coords.last().map_or(0, |&c| c as usize / 64 + 1);
        let mut bits = vec![0u64; words];
        for &c in &coords {
            bits[c as usize / 64] |= 1 << (c % 64);
        }
        Support { coords, bits, unit }
    }

    fn contains(&self, c: i64) -> bool {
        usize::try_from(c)
            .ok()
            .and_then(|c| self.bits.get(c / 64).map(|w| w >> (c % 64) & 1 == 1))
            .unwrap_or(false)
    }

    fn len(&self) -> usize {
        self.coords.len()
    }

    /// The coordinates in both.
    fn intersect(&self, other: &Support) -> Support {
        Support::new(
            self.coords
                .iter()
                .copied()
                .filter(|&c| other.contains(c))
                .collect(),
            self.unit && other.unit,
        )
    }
}

/// A one-variable stored factor of a product.
struct Filter<'a> {
    /// Its position among the product's factors.
    position: usize,
    input: &'a Input,
    key: FilterKey,
}

/// The fewest entries the cached reductions of one tensor may hold
/// together; beyond this and beyond the tensor's own number of entries,
/// the least recently used go.
const CACHE_MIN_ENTRIES: usize = 1 << 16;

/// The reductions of one target tensor, kept with it across statements
/// ([`Tensor::derived`]): statements often reduce the same input by the
/// same filters (subgraph queries share label pairs), and a cached reduced
/// tensor keeps its statistics.
/// An entry holds while its filter tensors live: a replaced table is a new
/// tensor, so it never matches an entry made from the old one.
#[derive(Debug, Default)]
struct Cache(Mutex<CacheState>);

#[derive(Debug, Default)]
struct CacheState {
    entries: HashMap<CacheKey, CacheEntry>,
    /// The entries the cached reduced tensors hold together.
    held: usize,
    /// Advances with every lookup, for least-recently-used eviction.
    clock: u64,
}

/// A reduction of the tensor a cache belongs to, keyed as within one
/// program ([`ReductionKey`]: the target's shape, so its address too,
/// the same for every entry). A filter is keyed by its tensor's address,
/// which the entry's weak reference keeps from being reused.
type CacheKey = ReductionKey;

#[derive(Debug)]
struct CacheEntry {
    /// The filters' tensors.
    filters: Vec<Weak<Tensor>>,
    /// The reduction; `None` when the filters remove nothing.
    reduced: Option<Reduced>,
    /// The clock at its last use.
    used: u64,
}

impl CacheEntry {
    fn live(&self) -> bool {
        self.filters.iter().all(|f| f.strong_count() > 0)
    }

    fn held(&self) -> usize {
        self.reduced.as_ref().map_or(0, |r| r.kept)
    }
}

impl Cache {
    fn state(&self) -> std::sync::MutexGuard<'_, CacheState> {
        // Entries are inserted whole, so a panic elsewhere cannot leave the
        // cache inconsistent.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached reduction for `key`, if its filters still live.
    fn get(&self, key: &CacheKey) -> Option<Option<Reduced>> {
        let mut state = self.state();
        state.clock += 1;
        let now = state.clock;
        let entry = state.entries.get_mut(key)?;
        if entry.live() {
            entry.used = now;
            return Some(entry.reduced.clone());
        }
        let held = entry.held();
        state.entries.remove(key);
        state.held -= held;
        None
    }

    /// Caches `reduced` for `key`, dropping the entries whose filters are
    /// gone, then the least recently used ones while the entries held pass
    /// `capacity`.
    fn insert(
        &self,
        key: CacheKey,
        filters: Vec<Weak<Tensor>>,
        reduced: Option<Reduced>,
        capacity: usize,
    ) {
        let mut state = self.state();
        state.clock += 1;
        let entry = CacheEntry {
            filters,
            reduced,
            used: state.clock,
        };
        state.held += entry.held();
        if let Some(old) = state.entries.insert(key, entry) {
            state.held -= old.held();
        }
        let CacheState { entries, held, .. } = &mut *state;
        entries.retain(|_, e| {
            let live = e.live();
            if !live {
                *held -= e.held();
            }
            live
        });
        while *held > capacity && entries.len() > 1 {
            let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = entries.remove(&oldest) {
                *held -= e.held();
            }
        }
    }
}

/// A reduced tensor, the target's dimensions it keeps (in its order), and
/// how many entries it kept of how many the target's constants select.
#[derive(Clone, Debug)]
struct Reduced {
    tensor: Arc<Tensor>,
    annotation: Annotation,
    dims: Vec<usize>,
    kept: usize,
    of: usize,
}

/// A reduced tensor as one program reads it (named `#s1`, ...) and the
/// target's dimensions it keeps, in its order.
#[derive(Clone, Debug)]
struct Made {
    tensor: TensorRef,
    annotation: Annotation,
    dims: Vec<usize>,
}

/// A factor that reads a stored tensor: the input, its shape (see
/// [`Shape`]) and, per term, its variable.
struct Stored<'a> {
    input: &'a Input,
    shape: Shape,
    vars: Vec<Option<&'a str>>,
}

impl<'a> Stored<'a> {
    /// `factor` if it is an input.
    fn of(factor: &'a Expr) -> Option<Stored<'a>> {
        let Expr::Input(input) = factor else {
            return None;
        };
        let consts = input
            .indices
            .iter()
            .map(|t| match t {
                IndexTerm::Const(c) => Some(*c),
                IndexTerm::Var(_) => None,
            })
            .collect();
        let vars = input
            .indices
            .iter()
            .map(|t| match t {
                IndexTerm::Var(v) => Some(v.as_str()),
                IndexTerm::Const(_) => None,
            })
            .collect();
        let id = Arc::as_ptr(&input.tensor.tensor) as usize;
        Some(Stored {
            input,
            shape: (id, input.annotation, consts),
            vars,
        })
    }
}

/// The distinct variables of `vars` if none repeats.
fn distinct<'a>(vars: &[Option<&'a str>]) -> Option<Vec<&'a str>> {
    let mut seen: Vec<&str> = Vec::new();
    for v in vars.iter().flatten() {
        if seen.contains(v) {
            return None;
        }
        seen.push(v);
    }
    Some(seen)
}

impl Reducer {
    /// The semijoin phase: reduces, in place, the factors of every `SUM`
    /// over a product in `program` ([`Reducer::reduce`]), innermost first
    /// and left to right, so that the reduced tensors are named `#s1`,
    /// `#s2`, ... in that order.
    ///
    /// Errors: see [`Reducer::reduce`].
    pub fn reduce_program(&mut self, program: &mut Program) -> Result<()> {
        program.queries.iter_mut().try_for_each(|query| {
            query
                .expr
                .for_each_sum_of_products(&mut |sum| self.reduce_sum(sum))
        })
    }

    /// Reduces the factors of one `SUM` over a product.
    fn reduce_sum(&mut self, sum: &mut Expr) -> Result<()> {
        let Expr::Agg { body, .. } = sum else {
            return Ok(());
        };
        let Expr::Map { args, .. } = body.as_mut() else {
            return Ok(());
        };
        let reduced = self.reduce(std::mem::take(args))?;
        // Absorbed filters go, the targets stay: never empty. The factors
        // are not flattened again, so that the elimination phase sees the
        // product's factors as they were.
        **body = match <[Expr; 1]>::try_from(reduced) {
            Ok([factor]) => factor,
            Err(factors) => Expr::Map {
                op: ScalarOp::Mul,
                args: factors,
            },
        };
        Ok(())
    }

    /// The factors of one product with every target input replaced by its
    /// reduction (see the module documentation); the others unchanged,
    /// except the filters that the reductions make redundant: a filter
    /// whose every selected entry counts 1 (multiplicity 1), on a variable
    /// of a target that is counted by multiplicity too, is left out. The
    /// target keeps only coordinates the filter stores, where the filter
    /// multiplies by 1, and the target's integer factor keeps the
    /// product's type.
    ///
    /// Errors: a fibertree index of a target or filter that cannot be built
    /// (see [`Tensor::index`]).
    pub fn reduce(&mut self, factors: Vec<Expr>) -> Result<Vec<Expr>> {
        let stored: Vec<Option<Stored<'_>>> = factors.iter().map(Stored::of).collect();
        // The one-variable stored factors, by variable. A target has two
        // or more variables, so it is never its own filter.
        let mut filters: HashMap<&str, Vec<Filter<'_>>> = HashMap::new();
        for (position, s) in stored.iter().enumerate() {
            let Some(s) = s else {
                continue;
            };
            // A full tensor's values (a dense vector) store every
            // coordinate of its dimensions: as a filter they remove nothing
            // within them, and the product is the same without the
            // reduction. (A pattern stays a filter: the reduction may leave
            // it out of the product.)
            if s.input.tensor.tensor.is_full() && s.input.annotation != Annotation::Multiplicity {
                continue;
            }
            if let Some([v]) = distinct(&s.vars).as_deref()
                && let Some(term) = s.vars.iter().position(|x| x == &Some(*v))
            {
                filters.entry(v).or_default().push(Filter {
                    position,
                    input: s.input,
                    key: (s.shape.clone(), term),
                });
            }
        }
        // The variables of targets counted by multiplicity: their unit
        // filters go.
        let mut counted: Vec<&str> = Vec::new();
        let mut reduced = Vec::with_capacity(factors.len());
        for (factor, s) in factors.iter().zip(&stored) {
            let replacement = match s {
                Some(s) if distinct(&s.vars).is_some_and(|n| n.len() >= 2) => {
                    if s.input.annotation == Annotation::Multiplicity {
                        counted.extend(s.vars.iter().flatten());
                    }
                    let by_term: Vec<&[Filter<'_>]> = s
                        .vars
                        .iter()
                        .map(|v| {
                            v.and_then(|v| filters.get(v))
                                .map_or(&[][..], Vec::as_slice)
                        })
                        .collect();
                    if by_term.iter().all(|fs| fs.is_empty()) {
                        None
                    } else {
                        self.reduced(s, &by_term)?
                    }
                }
                _ => None,
            };
            reduced.push(Some(replacement.unwrap_or_else(|| factor.clone())));
        }
        let mut redundant = Vec::new();
        for v in counted {
            for filter in filters.get(v).map_or(&[][..], Vec::as_slice) {
                if self.unit(filter)? {
                    redundant.push(filter.position);
                }
            }
        }
        redundant.sort_unstable();
        for position in redundant {
            if let Some(slot) = reduced.get_mut(position)
                && let Some(factor) = slot.take()
            {
                self.absorbed.push(factor);
            }
        }
        Ok(reduced.into_iter().flatten().collect())
    }

    /// The reduced form of `input` by the filters of each of its terms, if
    /// they remove any entry.
    fn reduced(&mut self, target: &Stored<'_>, by_term: &[&[Filter<'_>]]) -> Result<Option<Expr>> {
        let (input, vars) = (target.input, &target.vars);
        let filter_key: Vec<Vec<FilterKey>> = by_term
            .iter()
            .map(|fs| {
                let mut keys: Vec<FilterKey> = fs.iter().map(|f| f.key.clone()).collect();
                keys.sort();
                keys
            })
            .collect();
        let key = (target.shape.clone(), filter_key);
        let made = match self.made.get(&key) {
            Some(made) => made.clone(),
            None => {
                let tensor = &input.tensor.tensor;
                let cache = tensor.derived::<Cache>();
                let cached = match cache.get(&key) {
                    Some(cached) => cached,
                    None => {
                        let made = make(input, &self.supports_by_term(by_term)?)?;
                        if let Some(made) = &made {
                            // Computed once; every copy below shares them,
                            // what is derived from the data and the index
                            // of the stored order that plans read it
                            // through unless they sort it.
                            made.tensor.statistics();
                            made.tensor.counts_each_entry_once();
                            let formats = table_formats(&made.tensor);
                            let order = (0..formats.len()).collect();
                            made.tensor.index(&IndexSpec::new(order, formats))?;
                        }
                        let filters = by_term
                            .iter()
                            .flat_map(|fs| fs.iter())
                            .map(|f| Arc::downgrade(&f.input.tensor.tensor))
                            .collect();
                        let capacity = tensor.nnz().max(CACHE_MIN_ENTRIES);
                        cache.insert(key.clone(), filters, made.clone(), capacity);
                        made
                    }
                };
                // Each statement reads a copy without the indexes earlier
                // ones built in other orders than the stored one: those
                // orders would be free to its plan, which would then depend
                // on what ran before (23 of yeast's full set chose loop
                // orders up to 100 times slower).
                let reduced = cached.map(|r| Reduced {
                    tensor: Arc::new(r.tensor.without_indexes()),
                    ..r
                });
                let made = reduced.map(|reduced| {
                    let name = format!("#s{}", self.reductions.len() + 1);
                    self.reductions.push(Reduction {
                        name: name.clone(),
                        filters: by_term
                            .iter()
                            .flat_map(|fs| fs.iter())
                            .map(|f| f.input.clone())
                            .collect(),
                        indices: reduced
                            .dims
                            .iter()
                            .filter_map(|&d| vars.get(d).copied().flatten().map(str::to_string))
                            .collect(),
                        kept: reduced.kept,
                        of: reduced.of,
                        target: input.clone(),
                    });
                    Made {
                        tensor: TensorRef {
                            name,
                            tensor: reduced.tensor,
                        },
                        annotation: reduced.annotation,
                        dims: reduced.dims,
                    }
                });
                self.made.insert(key, made.clone());
                made
            }
        };
        Ok(made.map(|made| {
            let indices = made
                .dims
                .iter()
                .filter_map(|&d| input.indices.get(d).cloned())
                .collect();
            Expr::Input(Input {
                tensor: made.tensor,
                annotation: made.annotation,
                indices,
            })
        }))
    }

    /// Per term, the coordinates all its filters store (`None`: no
    /// filter).
    fn supports_by_term(&mut self, by_term: &[&[Filter<'_>]]) -> Result<Vec<Option<Arc<Support>>>> {
        let mut supports = Vec::with_capacity(by_term.len());
        for fs in by_term {
            let mut support: Option<Arc<Support>> = None;
            for filter in fs.iter() {
                let own = self.support(filter)?;
                support = Some(match support {
                    None => own,
                    Some(other) => Arc::new(other.intersect(&own)),
                });
            }
            supports.push(support);
        }
        Ok(supports)
    }

    /// Whether every entry `filter` selects counts 1: at once for a
    /// tensor whose every entry does, else from its support.
    fn unit(&mut self, filter: &Filter<'_>) -> Result<bool> {
        let input = filter.input;
        if input.annotation != Annotation::Multiplicity {
            return Ok(false);
        }
        if input.tensor.tensor.counts_each_entry_once() {
            return Ok(true);
        }
        Ok(self.support(filter)?.unit)
    }

    /// The coordinates `filter` stores at its variable.
    fn support(&mut self, filter: &Filter<'_>) -> Result<Arc<Support>> {
        if let Some(found) = self.supports.get(&filter.key) {
            return Ok(Arc::clone(found));
        }
        let (input, position) = (filter.input, filter.key.1);
        let consts = IndexTerm::constants(&input.indices);
        let order: Vec<usize> = consts.iter().map(|(d, _)| *d).chain([position]).collect();
        let tree = input.tensor.tensor.index(&IndexSpec::compressed(order))?;
        let path: Vec<i64> = consts.iter().map(|(_, c)| *c).collect();
        let entries: Vec<(i64, usize)> = match (tree.descend(&path), tree.levels().get(path.len()))
        {
            (Some(parent), Some(level)) => level.fiber(parent).cursor().collect(),
            _ => Vec::new(),
        };
        // Counted by multiplicity: 1 per row of a keyed table, a bag's
        // stored multiplicity otherwise.
        let unit = input.annotation == Annotation::Multiplicity
            && (!input.tensor.tensor.is_bag()
                || matches!(tree.leaf_values(0), Some(LeafValues::Int64(m))
                    if entries.iter().all(|&(_, leaf)| m.get(leaf) == Some(&1))));
        let coords = entries.into_iter().map(|(c, _)| c).collect();
        let support = Arc::new(Support::new(coords, unit));
        self.supports
            .insert(filter.key.clone(), Arc::clone(&support));
        Ok(support)
    }
}

/// Walks `input`'s entries within `supports` (per term; `None`: no
/// filter) and stores those kept as a new tensor over the input's
/// variables; `None` when the filters remove nothing.
fn make(input: &Input, supports: &[Option<Arc<Support>>]) -> Result<Option<Reduced>> {
    let tensor = &input.tensor.tensor;
    let constants = IndexTerm::constants(&input.indices);
    let consts: Vec<usize> = constants.iter().map(|(d, _)| *d).collect();
    let mut filtered: Vec<usize> = (0..input.indices.len())
        .filter(|&d| supports.get(d).is_some_and(Option::is_some))
        .collect();
    filtered.sort_by_key(|&d| supports[d].as_ref().map_or(0, |s| s.len()));
    let rest: Vec<usize> = (0..input.indices.len())
        .filter(|d| !consts.contains(d) && !filtered.contains(d))
        .collect();
    let order: Vec<usize> = consts
        .iter()
        .chain(&filtered)
        .chain(&rest)
        .copied()
        .collect();
    let tree = tensor.index(&IndexSpec::compressed(order.clone()))?;
    let path: Vec<i64> = constants.iter().map(|(_, c)| *c).collect();
    let Some(parent) = tree.descend(&path) else {
        return Ok(None);
    };
    let levels = tree.levels();
    let steps: Vec<Option<Arc<Support>>> = order[consts.len()..]
        .iter()
        .map(|&d| supports.get(d).cloned().flatten())
        .collect();
    let mut walk = Walk {
        levels: &levels[consts.len()..],
        steps: &steps,
        coords: vec![Vec::new(); steps.len()],
        leaves: Vec::new(),
        path: vec![0; steps.len()],
    };
    if let Some(first) = levels.get(consts.len()) {
        walk.visit(0, first.fiber(parent));
    }
    let of = tree.entries_under(consts.len(), parent).unwrap_or(0);
    let kept = walk.leaves.len();
    if kept >= of {
        return Ok(None);
    }
    let dims: Vec<usize> = order[consts.len()..].to_vec();
    let specs = dims
        .iter()
        .map(|&d| {
            let dim = &tensor.dims()[d];
            DimensionSpec {
                name: dim.name.clone(),
                size: Some(dim.size),
                dictionary: dim.dictionary.clone(),
            }
        })
        .collect();
    let (values, annotation) = match input.annotation {
        Annotation::Multiplicity if tensor.is_bag() => (
            vec![(MULTIPLICITY.to_string(), gather(&tree, 0, &walk.leaves)?)],
            Annotation::Multiplicity,
        ),
        Annotation::Multiplicity => (Vec::new(), Annotation::Multiplicity),
        Annotation::Column(k) => {
            let name = tensor
                .values()
                .get(k)
                .map(|v| v.name.clone())
                .ok_or_else(|| {
                    Error::Invalid(format!("internal: value column {k} of a reduced input"))
                })?;
            (
                vec![(name, gather(&tree, k, &walk.leaves)?)],
                Annotation::Column(0),
            )
        }
    };
    let reduced = Tensor::from_increasing_coo(Coo {
        dims: specs,
        coords: walk.coords,
        values,
        column_order: None,
    })?;
    Ok(Some(Reduced {
        tensor: Arc::new(reduced),
        annotation,
        dims,
        kept,
        of,
    }))
}

/// The state of one reduction walk over the variable levels of a
/// fibertree.
struct Walk<'a> {
    /// The levels, from the first variable's on.
    levels: &'a [Level],
    /// Per level, the filter's sorted coordinates (`None`: every one).
    steps: &'a [Option<Arc<Support>>],
    /// The kept entries' coordinates, per level.
    coords: Vec<Vec<i64>>,
    /// The kept entries' leaf positions.
    leaves: Vec<usize>,
    /// The coordinates on the current path, per level.
    path: Vec<i64>,
}

impl Walk<'_> {
    /// Visits the children of `fiber`, a fiber of level `level`, that the
    /// level's filter allows.
    fn visit(&mut self, level: usize, fiber: Fiber<'_>) {
        let steps = self.steps;
        match steps.get(level).and_then(Option::as_ref) {
            // A short fiber: look its coordinates up in the filter.
            Some(support) if fiber.len() <= support.len() => {
                for (c, child) in fiber.cursor() {
                    if support.contains(c) {
                        self.descend(level, c, child);
                    }
                }
            }
            // A short filter: seek its coordinates in the fiber.
            Some(support) => {
                let mut cursor = fiber.cursor();
                for &s in &support.coords {
                    cursor.seek(s);
                    match cursor.current() {
                        Some((c, child)) if c == s => self.descend(level, c, child),
                        Some(_) => {}
                        None => break,
                    }
                }
            }
            None => {
                for (c, child) in fiber.cursor() {
                    self.descend(level, c, child);
                }
            }
        }
    }

    /// Follows coordinate `coord` at child position `child` of level
    /// `level`: keeps the entry at a leaf, visits the child fiber above.
    fn descend(&mut self, level: usize, coord: i64, child: usize) {
        self.path[level] = coord;
        let levels = self.levels;
        match levels.get(level + 1) {
            Some(next) => self.visit(level + 1, next.fiber(child)),
            None => {
                for (column, &c) in self.coords.iter_mut().zip(&self.path) {
                    column.push(c);
                }
                self.leaves.push(child);
            }
        }
    }
}

/// The values of annotation column `column` at the leaves `leaves`.
fn gather(tree: &FiberTree, column: usize, leaves: &[usize]) -> Result<ValueData> {
    let missing = || Error::Invalid(format!("internal: annotation column {column} of an index"));
    Ok(match tree.leaf_values(column).ok_or_else(missing)? {
        LeafValues::Int64(v) => ValueData::Int64(leaves.iter().map(|&l| v[l]).collect()),
        LeafValues::Int128(v) => ValueData::Int128(leaves.iter().map(|&l| v[l]).collect()),
        LeafValues::Float64(v) => ValueData::Float64(leaves.iter().map(|&l| v[l]).collect()),
        LeafValues::Boolean(v) => ValueData::Boolean(leaves.iter().map(|&l| v.value(l)).collect()),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// A stored tensor over `dims` (name, size) from `entries` (coordinates
    /// and a value): a bag with the values as multiplicities when `bag`,
    /// else one float column `v`.
    fn tensor(dims: &[(&str, u64)], entries: &BTreeMap<Vec<i64>, i64>, bag: bool) -> Arc<Tensor> {
        let coords = (0..dims.len())
            .map(|d| entries.keys().map(|k| k[d]).collect())
            .collect();
        let values = if bag {
            vec![(
                MULTIPLICITY.to_string(),
                ValueData::Int64(entries.values().copied().collect()),
            )]
        } else {
            vec![(
                "v".to_string(),
                ValueData::Float64(entries.values().map(|&v| v as f64 / 2.0).collect()),
            )]
        };
        let coo = Coo {
            dims: dims
                .iter()
                .map(|(n, s)| DimensionSpec::new(*n, Some(*s)))
                .collect(),
            coords,
            values,
            column_order: None,
        };
        Arc::new(Tensor::from_coo(coo).unwrap())
    }

    fn input(name: &str, tensor: &Arc<Tensor>, annotation: Annotation, terms: &[&str]) -> Expr {
        Expr::Input(Input {
            tensor: TensorRef {
                name: name.to_string(),
                tensor: Arc::clone(tensor),
            },
            annotation,
            indices: terms
                .iter()
                .map(|t| match t.parse::<i64>() {
                    Ok(c) => IndexTerm::Const(c),
                    Err(_) => IndexTerm::Var(t.to_string()),
                })
                .collect(),
        })
    }

    /// The entries of a tensor by the variables' names: each entry as a
    /// map from variable to coordinate, with its annotation as a float.
    fn entries_by_var(expr: &Expr) -> Vec<(BTreeMap<String, i64>, f64)> {
        let Expr::Input(input) = expr else {
            panic!("not an input: {expr}");
        };
        let t = &input.tensor.tensor;
        let values: Vec<f64> = match (input.annotation, t.multiplicities()) {
            (Annotation::Multiplicity, Some(m)) => m.iter().map(|&v| v as f64).collect(),
            (Annotation::Multiplicity, None) => vec![1.0; t.nnz()],
            (Annotation::Column(k), _) => {
                let tree = t.index(&IndexSpec::identity(t.dims().len())).unwrap();
                match tree.leaf_values(k).unwrap() {
                    LeafValues::Float64(v) => v.to_vec(),
                    other => panic!("unexpected values {other:?}"),
                }
            }
        };
        let mut out: Vec<(BTreeMap<String, i64>, f64)> = (0..t.nnz())
            .filter_map(|row| {
                let mut assignment = BTreeMap::new();
                for (d, term) in input.indices.iter().enumerate() {
                    let c = t.coords(d)[row];
                    match term {
                        IndexTerm::Const(k) if *k != c => return None,
                        IndexTerm::Const(_) => {}
                        IndexTerm::Var(v) => {
                            assignment.insert(v.clone(), c);
                        }
                    }
                }
                Some((assignment, values[row]))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The coordinates of `var` that a one-variable filter stores.
    fn support(filter: &Expr, var: &str) -> Vec<i64> {
        entries_by_var(filter)
            .into_iter()
            .map(|(a, _)| a[var])
            .collect()
    }

    fn sparse(dims: Vec<u64>) -> impl Strategy<Value = BTreeMap<Vec<i64>, i64>> {
        let key = dims.into_iter().map(|n| 0..n as i64).collect::<Vec<_>>();
        proptest::collection::btree_map(key, 1..4i64, 0..40)
    }

    proptest! {
        /// A reduced input holds exactly the target's entries (with their
        /// multiplicities or values) whose filtered coordinates every
        /// filter stores; an input is left as it is only when its filters
        /// remove nothing.
        #[test]
        fn reduction_keeps_exactly_the_filtered_entries(
            target in sparse(vec![6, 7, 3]),
            left in sparse(vec![6, 2]),
            right in sparse(vec![7, 2]),
            extra in sparse(vec![6]),
            bag in any::<bool>(),
            label in 0..3i64,
        ) {
            let t = tensor(&[("a", 6), ("b", 7), ("c", 3)], &target, bag);
            let l = tensor(&[("v", 6), ("l", 2)], &left, true);
            let r = tensor(&[("v", 7), ("l", 2)], &right, true);
            let x = tensor(&[("v", 6)], &extra, true);
            let annotation = if bag { Annotation::Multiplicity } else { Annotation::Column(0) };
            let label = label.to_string();
            let factors = vec![
                input("L", &l, Annotation::Multiplicity, &["i", "1"]),
                input("T", &t, annotation, &["i", "j", &label]),
                input("R", &r, Annotation::Multiplicity, &["j", "0"]),
                input("X", &x, Annotation::Multiplicity, &["i"]),
            ];
            let mut reducer = Reducer::default();
            let mut reduced = reducer.reduce(factors.clone()).unwrap();
            // A filter whose selected entries all count 1 goes when the
            // target is counted by multiplicity; the others stay.
            let mut left_out = Vec::new();
            for k in [0, 2, 3] {
                let unit = entries_by_var(&factors[k]).iter().all(|(_, m)| *m == 1.0);
                if bag && unit {
                    left_out.push(factors[k].clone());
                } else {
                    prop_assert!(reduced.contains(&factors[k]), "{} missing", factors[k]);
                }
            }
            prop_assert_eq!(&reducer.absorbed, &left_out);
            prop_assert_eq!(reduced.len(), 4 - left_out.len());
            let filters = [&factors[0], &factors[2], &factors[3]];
            reduced.retain(|f| !filters.contains(&f));
            prop_assert_eq!(reduced.len(), 1);
            let target = &reduced[0];
            let (on_i, on_j) = (
                Support::new(support(&factors[0], "i"), true)
                    .intersect(&Support::new(support(&factors[3], "i"), true))
                    .coords,
                support(&factors[2], "j"),
            );
            let all = entries_by_var(&factors[1]);
            let expected: Vec<_> = all
                .iter()
                .filter(|(a, _)| on_i.binary_search(&a["i"]).is_ok()
                    && on_j.binary_search(&a["j"]).is_ok())
                .cloned()
                .collect();
            if expected.len() == all.len() {
                prop_assert_eq!(target, &factors[1]);
                prop_assert!(reducer.reductions.is_empty());
            } else {
                prop_assert_eq!(entries_by_var(target), expected.clone());
                prop_assert_eq!(reducer.reductions.len(), 1);
                prop_assert_eq!(reducer.reductions[0].kept, expected.len());
                prop_assert_eq!(reducer.reductions[0].of, all.len());
            }
        }
    }

    /// Equal targets with equal filters share one reduced tensor; the same
    /// target under other filters gets its own.
    #[test]
    fn equal_reductions_are_shared() {
        let edges: BTreeMap<Vec<i64>, i64> = [(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0)]
            .into_iter()
            .map(|(a, b)| (vec![a, b], 1))
            .collect();
        let labels: BTreeMap<Vec<i64>, i64> = [(0, 5), (1, 5), (2, 6)]
            .into_iter()
            .map(|(v, l)| (vec![v, l], 1))
            .collect();
        let e = tensor(&[("s", 3), ("d", 3)], &edges, true);
        let l = tensor(&[("v", 3), ("l", 7)], &labels, true);
        let m = Annotation::Multiplicity;
        let factors = vec![
            input("labels", &l, m, &["a", "5"]),
            input("labels", &l, m, &["b", "5"]),
            input("labels", &l, m, &["c", "6"]),
            input("edges", &e, m, &["a", "b"]),
            input("edges", &e, m, &["b", "a"]),
            input("edges", &e, m, &["a", "c"]),
        ];
        let mut reducer = Reducer::default();
        let reduced = reducer.reduce(factors).unwrap();
        // Every label counts once: the labels are left out.
        let absorbed: Vec<String> = reducer.absorbed.iter().map(Expr::to_string).collect();
        assert_eq!(absorbed, ["labels[a,5]", "labels[b,5]", "labels[c,6]"]);
        let names: Vec<String> = reduced
            .iter()
            .map(|f| match f {
                Expr::Input(i) => i.tensor.name.clone(),
                other => other.to_string(),
            })
            .collect();
        assert_eq!(names, ["#s1", "#s1", "#s2"]);
        assert_eq!(reducer.reductions.len(), 2);
        assert_eq!(
            (reducer.reductions[0].kept, reducer.reductions[0].of),
            (2, 6)
        );
        assert_eq!(
            (reducer.reductions[1].kept, reducer.reductions[1].of),
            (2, 6)
        );
        assert_eq!(
            reducer.reductions[0].filters_written(),
            ["labels[a,5]", "labels[b,5]"]
        );
    }

    /// The tensor a reduced factor reads.
    fn read(factor: &Expr) -> Arc<Tensor> {
        match factor {
            Expr::Input(i) => Arc::clone(&i.tensor.tensor),
            other => panic!("not an input: {other}"),
        }
    }

    /// A later statement reducing the same target by the same filters
    /// reuses the cached reduced tensor (with what it reported); a filter
    /// table replaced by a new tensor gets a reduction of its own, and the
    /// entry made from the old one goes once that tensor is dropped.
    #[test]
    fn reductions_are_cached_with_their_target() {
        let edges: BTreeMap<Vec<i64>, i64> = [(0, 1), (1, 2), (2, 0), (0, 2)]
            .into_iter()
            .map(|(a, b)| (vec![a, b], 1))
            .collect();
        let labels = |pairs: &[(i64, i64)]| -> BTreeMap<Vec<i64>, i64> {
            pairs.iter().map(|&(v, l)| (vec![v, l], 1)).collect()
        };
        let e = tensor(&[("s", 3), ("d", 3)], &edges, true);
        let l = tensor(
            &[("v", 3), ("l", 7)],
            &labels(&[(0, 5), (1, 5), (2, 6)]),
            true,
        );
        let m = Annotation::Multiplicity;
        let product = |l: &Arc<Tensor>| {
            vec![
                input("labels", l, m, &["a", "5"]),
                input("edges", &e, m, &["a", "b"]),
            ]
        };
        let mut first = Reducer::default();
        let reduced = first.reduce(product(&l)).unwrap();
        read(&reduced[0])
            .index(&IndexSpec::compressed(vec![1, 0]))
            .unwrap();
        let mut second = Reducer::default();
        let again = second.reduce(product(&l)).unwrap();
        // The same reduction, not walked again, in a copy of its own
        // with the index of its stored order, built once when it was made,
        // but without the other order the first statement built.
        assert_eq!(e.derived::<Cache>().state().entries.len(), 1);
        assert_eq!(first.reductions, second.reductions);
        assert_eq!((second.reductions[0].kept, second.reductions[0].of), (3, 4));
        let (one, two) = (read(&reduced[0]), read(&again[0]));
        assert!(!Arc::ptr_eq(&one, &two));
        let stored = IndexSpec::identity(2);
        assert_eq!(
            one.built_indexes(),
            vec![stored.clone(), IndexSpec::compressed(vec![1, 0])]
        );
        assert_eq!(two.built_indexes(), vec![stored.clone()]);
        assert!(Arc::ptr_eq(
            &one.index(&stored).unwrap(),
            &two.index(&stored).unwrap()
        ));
        assert_eq!(
            one.to_record_batch().unwrap(),
            two.to_record_batch().unwrap()
        );

        // Vertex 2 relabelled 5: a new tensor, a new reduction.
        let relabelled = tensor(
            &[("v", 3), ("l", 7)],
            &labels(&[(0, 5), (1, 5), (2, 5)]),
            true,
        );
        let mut third = Reducer::default();
        let other = third.reduce(product(&relabelled)).unwrap();
        assert!(!Arc::ptr_eq(&read(&reduced[0]), &read(&other[0])));
        // Every edge starts at a vertex labelled 5: nothing is removed.
        assert!(third.reductions.is_empty());
        let cache = e.derived::<Cache>();
        assert_eq!(cache.state().entries.len(), 2);
        // The labels gone, with the reductions that name them as filters.
        drop((first, second, third, l));
        let keys: Vec<CacheKey> = cache.state().entries.keys().cloned().collect();
        let found = keys.iter().filter(|k| cache.get(k).is_some()).count();
        assert_eq!(found, 1);
        let state = cache.state();
        assert_eq!(state.entries.len(), 1);
        assert_eq!(state.held, 0);
    }

    /// Past its capacity the cache drops the least recently used entries,
    /// and it always keeps the newest.
    #[test]
    fn the_cache_keeps_the_recently_used() {
        let entries: BTreeMap<Vec<i64>, i64> = (0..4).map(|k| (vec![k], 1)).collect();
        let t = tensor(&[("v", 4)], &entries, true);
        let reduced = |kept: usize| Reduced {
            tensor: Arc::clone(&t),
            annotation: Annotation::Multiplicity,
            dims: vec![0],
            kept,
            of: 4,
        };
        let key = |k: i64| ((0, Annotation::Multiplicity, vec![Some(k)]), Vec::new());
        let cache = Cache::default();
        cache.insert(key(1), Vec::new(), Some(reduced(3)), 8);
        cache.insert(key(2), Vec::new(), Some(reduced(3)), 8);
        assert!(cache.get(&key(1)).is_some());
        // 9 entries held: the least recently used (key 2) goes.
        cache.insert(key(3), Vec::new(), Some(reduced(3)), 8);
        assert!(cache.get(&key(2)).is_none());
        assert!(cache.get(&key(1)).is_some());
        assert_eq!(cache.state().held, 6);
        // An entry larger than the capacity still stays, alone.
        cache.insert(key(4), Vec::new(), Some(reduced(20)), 8);
        assert_eq!(cache.state().entries.len(), 1);
        assert!(cache.get(&key(4)).is_some());
        // A reduction that removes nothing holds no entries.
        cache.insert(key(5), Vec::new(), None, 8);
        assert!(matches!(cache.get(&key(5)), Some(None)));
    }
}
