//! Symmetry breaking: a sum over interchangeable variables of a symmetric
//! relation counted once per set of values, in one order, and multiplied
//! by the number of orders.
//!
//! In the triangle count `SUM(i,j,k) e[i,j] * e[j,k] * e[i,k]` over an
//! undirected graph (`e` symmetric: `e[a,b] = e[b,a]`, no self-loops),
//! swapping any two of `i`, `j`, `k` permutes the factors among
//! themselves, so every assignment with a non-zero product comes with its
//! 3! reorderings, all with the same product, and none of them repeats a
//! vertex (a self-loop would be needed). The sum is then 3! times the sum
//! over the assignments whose values increase in some total order of the
//! vertices, which is what the product with `e` replaced by its
//! *orientation* `o[a,b] = e[a,b]` where `a` ranks below `b` (else 0)
//! counts: `6 * SUM(i,j,k) o[i,j] * o[j,k] * o[i,k]`. The loops then
//! visit each triangle once instead of six times, and each 4-clique once
//! instead of 24 times. The vertices rank by degree, then coordinate
//! (degree ordering), so that a vertex's out-neighbours in `o` are no more
//! numerous than the square root of twice the edges: a hub's long list of
//! neighbours is only walked from the few vertices of higher degree.
//!
//! A *class* is a set of variables summed by the `SUM`, every two of which
//! are interchangeable: swapping them maps the product's factors (as a
//! multiset, reading a symmetric input's two variables in either order)
//! onto themselves, and a factor reads the pair from a stored input that
//! is symmetric in the two dimensions it reads them through and stores no
//! entry with equal coordinates there (data checked once per tensor and
//! kept with it). Swaps compose, so interchangeability is an equivalence
//! and the classes are disjoint; each class of `k` variables multiplies
//! the sum by `k!` and orders its variables by name, every factor between
//! two of them read through the orientation with the earlier variable in
//! the lower-ranked dimension. Output variables are never in a class, and
//! only `SUM`s are rewritten. A product with any factor other than an
//! input, an alias or a constant is left alone.
//!
//! Orientations are kept with the tensor they orient, like its indexes
//! (see [`Tensor::derived`]), named `#o1`, `#o2`, ... in the plan, and
//! read like a stored table: every statement reads the same tensor, so
//! that its statistics, indexes and semijoin reductions are made once.
//! Two variables are checked only when the sums of hashes of their
//! occurrences agree ([`fingerprints`]), so that a product whose
//! variables do not swap (labelled patterns, mostly) costs a pass over its
//! factors.

use std::cmp::Ordering;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::ir::{Annotation, Expr, IndexTerm, Input, Program, ScalarOp, TensorRef, Value};
use crate::storage::{Coo, Tensor, ValueData};

/// One orientation read by the plan, for `EXPLAIN`.
#[derive(Clone, Debug, PartialEq)]
pub struct Orientation {
    /// The name the orientation goes by in the plan (`#o1`, ...).
    pub name: String,
    /// The input it orients, as written first.
    pub source: String,
    /// The name of the dimension whose coordinate ranks lower.
    pub lower: String,
    /// The name of the dimension whose coordinate ranks higher.
    pub higher: String,
    /// The entries kept.
    pub kept: usize,
    /// The entries of the oriented tensor.
    pub of: usize,
}

/// The classes of one rewritten sum, for `EXPLAIN`.
#[derive(Clone, Debug, PartialEq)]
pub struct Broken {
    /// Each class's variables, in the order their values increase.
    pub classes: Vec<Vec<String>>,
    /// The product of the classes' factorials the sum is multiplied by.
    pub factor: i64,
}

/// The symmetry phase's state over one program: the orientations made
/// and the sums rewritten, in order.
#[derive(Default)]
pub struct Breaker {
    /// The orientations the rewritten products read.
    pub orientations: Vec<Orientation>,
    /// The rewritten sums, innermost first.
    pub broken: Vec<Broken>,
    /// This statement's references to the orientations, by oriented read.
    named: HashMap<EdgeRead, TensorRef>,
}

/// A read of a stored tensor through two dimensions: the tensor (by
/// address), the two dimensions and the annotation read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct EdgeRead {
    tensor: usize,
    dims: (usize, usize),
    annotation: Annotation,
}

/// The two dimensions of an oriented read and the annotation it reads.
type OrientedKey = ((usize, usize), Annotation);

/// The orientations of a tensor, by [`OrientedKey`]: `None` when the
/// tensor is not symmetric there or stores an entry on the diagonal.
#[derive(Default)]
struct Oriented(Mutex<HashMap<OrientedKey, Option<Arc<Tensor>>>>);

/// A factor of the product as the classes see it.
enum Factor<'a> {
    /// A stored input that reads two summed variables through dimensions
    /// of the same coordinates (`dims` in stored order): an edge.
    Edge {
        input: &'a Input,
        dims: (usize, usize),
    },
    /// Any other input, an alias or a constant: compared as written.
    Other,
}

/// What a factor reads, as [`key`] compares factors: a stored tensor (by
/// address) and annotation, or an earlier query's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Read<'a> {
    Input(usize, Annotation),
    Alias(&'a str),
}

/// A term of a factor's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Term<'a> {
    Const(i64),
    /// A variable the sum sums, by its position among them.
    Summed(usize),
    /// A variable the sum does not sum (an output variable).
    Free(&'a str),
}

/// A factor as [`swaps_onto_itself`] compares factors.
type Key<'a> = (Read<'a>, Vec<Term<'a>>);

impl Breaker {
    /// The symmetry phase: rewrites, in place, every `SUM` over a product
    /// in `program` whose summed variables fall into classes (see the
    /// module documentation), innermost first.
    ///
    /// Errors: a tensor whose orientation cannot be stored (see
    /// [`Tensor::from_coo`]).
    pub fn break_program(&mut self, program: &mut Program) -> Result<()> {
        program.queries.iter_mut().try_for_each(|query| {
            query
                .expr
                .for_each_sum_of_products(&mut |sum| self.break_sum(sum))
        })
    }

    /// Rewrites one `SUM` over a product whose variables fall into
    /// classes: `k * SUM(...)` over the orientation's factors.
    fn break_sum(&mut self, sum: &mut Expr) -> Result<()> {
        let Expr::Agg { indices, body, .. } = sum else {
            return Ok(());
        };
        let Expr::Map { args, .. } = body.as_mut() else {
            return Ok(());
        };
        let Some(factor) = self.break_product(indices, args)? else {
            return Ok(());
        };
        let counted = std::mem::replace(sum, Expr::Literal(Value::Int(factor)));
        *sum = Expr::Map {
            op: ScalarOp::Mul,
            args: vec![Expr::Literal(Value::Int(factor)), counted],
        };
        Ok(())
    }

    /// Rewrites the factors `args` of a sum over `summed` when its
    /// variables fall into classes; the factor the sum is then to be
    /// multiplied by.
    fn break_product(&mut self, summed: &[String], args: &mut [Expr]) -> Result<Option<i64>> {
        let var = |name: &str| summed.iter().position(|s| s == name);
        let mut factors = Vec::with_capacity(args.len());
        for arg in args.iter() {
            factors.push(match arg {
                Expr::Input(input) => {
                    edge(input, &var).map_or(Factor::Other, |dims| Factor::Edge { input, dims })
                }
                Expr::Alias { .. } | Expr::Literal(_) => Factor::Other,
                _ => return Ok(None),
            });
        }
        // The pairs an edge joins, each once: the candidates to swap.
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for f in &factors {
            if let Factor::Edge { input, dims } = f
                && let Some(pair) = vars_at(input, *dims, &var)
                && !pairs.contains(&pair)
            {
                pairs.push(pair);
            }
        }
        // Two variables that swap occur in factors of the same kinds.
        let prints = fingerprints(args, &factors, &var, summed.len());
        pairs.retain(|&(a, b)| prints[a] == prints[b]);
        if pairs.is_empty() {
            return Ok(None);
        }
        // First as if every edge's input were symmetric (no data read),
        // then with the data's answer for the pairs that pass.
        let assumed = |_: &Input, _: (usize, usize)| true;
        let swaps: Vec<(usize, usize)> = pairs
            .into_iter()
            .filter(|&pair| swaps_onto_itself(args, &factors, &var, pair, &assumed))
            .collect();
        if swaps.is_empty() {
            return Ok(None);
        }
        // The data is read for the edges a swap moves: a factor that
        // mentions neither variable of a swap keeps its key either way.
        let moved = |input: &Input, dims: (usize, usize)| {
            vars_at(input, dims, &var).is_some_and(|(a, b)| {
                swaps
                    .iter()
                    .any(|&(x, y)| [a, b].iter().any(|v| *v == x || *v == y))
            })
        };
        let mut orientations: HashMap<EdgeRead, Option<Arc<Tensor>>> = HashMap::new();
        for f in &factors {
            if let Factor::Edge { input, dims } = f
                && moved(input, *dims)
            {
                let read = read_of(input, *dims);
                if !orientations.contains_key(&read) {
                    orientations.insert(read, orientation(input, *dims)?);
                }
            }
        }
        let symmetric = |input: &Input, dims: (usize, usize)| {
            orientations
                .get(&read_of(input, dims))
                .is_some_and(Option::is_some)
        };
        let mut class: Vec<usize> = (0..summed.len()).collect();
        for pair in swaps {
            if joined_symmetrically(&factors, &var, pair, &symmetric)
                && swaps_onto_itself(args, &factors, &var, pair, &symmetric)
            {
                let (a, b) = (root(&class, pair.0), root(&class, pair.1));
                class[a.max(b)] = a.min(b);
            }
        }
        let roots: Vec<usize> = (0..summed.len()).map(|v| root(&class, v)).collect();
        let mut classes: Vec<Vec<&str>> = Vec::new();
        for r in 0..summed.len() {
            let mut members: Vec<&str> = (0..summed.len())
                .filter(|&v| roots[v] == r)
                .map(|v| summed[v].as_str())
                .collect();
            if members.len() >= 2 {
                members.sort_unstable();
                classes.push(members);
            }
        }
        // The number of orders: each class's factorial (a product past 64
        // bits is left as written).
        let orders = classes.iter().try_fold(1i64, |acc, c| {
            (2..=c.len() as i64).try_fold(acc, i64::checked_mul)
        });
        let Some(factor) = orders.filter(|_| !classes.is_empty()) else {
            return Ok(None);
        };
        // A variable's class and its place in the class's order.
        let place = |name: &str| {
            classes
                .iter()
                .enumerate()
                .find_map(|(c, members)| members.iter().position(|m| *m == name).map(|p| (c, p)))
        };
        let mut rewritten = Vec::with_capacity(args.len());
        for f in &factors {
            let Factor::Edge { input, dims } = f else {
                rewritten.push(None);
                continue;
            };
            let (IndexTerm::Var(a), IndexTerm::Var(b)) =
                (&input.indices[dims.0], &input.indices[dims.1])
            else {
                rewritten.push(None);
                continue;
            };
            let (Some((ca, pa)), Some((cb, pb))) = (place(a), place(b)) else {
                rewritten.push(None);
                continue;
            };
            let Some(Some(oriented)) = orientations.get(&read_of(input, *dims)) else {
                rewritten.push(None);
                continue;
            };
            if ca != cb {
                rewritten.push(None);
                continue;
            }
            let mut indices = input.indices.clone();
            if pa > pb {
                indices.swap(dims.0, dims.1);
            }
            let tensor = self.reference(input, *dims, oriented);
            rewritten.push(Some(Expr::Input(Input {
                tensor,
                annotation: input.annotation,
                indices,
            })));
        }
        for (arg, new) in args.iter_mut().zip(rewritten) {
            if let Some(new) = new {
                *arg = new;
            }
        }
        self.broken.push(Broken {
            classes: classes
                .iter()
                .map(|c| c.iter().map(|s| s.to_string()).collect())
                .collect(),
            factor,
        });
        Ok(Some(factor))
    }

    /// This statement's reference to the orientation `oriented` of
    /// `input` through `dims`, named on first use.
    fn reference(
        &mut self,
        input: &Input,
        dims: (usize, usize),
        oriented: &Arc<Tensor>,
    ) -> TensorRef {
        let read = read_of(input, dims);
        if let Some(named) = self.named.get(&read) {
            return named.clone();
        }
        let name = format!("#o{}", self.orientations.len() + 1);
        let tensor = &input.tensor.tensor;
        let dim_name = |d: usize| tensor.dims()[d].name.clone();
        self.orientations.push(Orientation {
            name: name.clone(),
            source: input.tensor.name.clone(),
            lower: dim_name(dims.0),
            higher: dim_name(dims.1),
            kept: oriented.nnz(),
            of: tensor.nnz(),
        });
        // Read like a stored table: the same tensor every statement, so
        // that what is kept with it (its statistics, indexes and semijoin
        // reductions) serves them all.
        oriented.statistics();
        let named = TensorRef {
            name,
            tensor: Arc::clone(oriented),
        };
        self.named.insert(read, named.clone());
        named
    }
}

/// The two dimensions through which `input` reads two distinct summed
/// variables (`var` numbers them), every other term a constant, when the
/// two dimensions have the same size and both or neither have a
/// dictionary (whether the dictionaries agree is [`orient`]'s to say).
fn edge(input: &Input, var: &impl Fn(&str) -> Option<usize>) -> Option<(usize, usize)> {
    let mut dims = input
        .indices
        .iter()
        .enumerate()
        .filter(|(_, t)| matches!(t, IndexTerm::Var(_)));
    let (Some((p, IndexTerm::Var(a))), Some((q, IndexTerm::Var(b))), None) =
        (dims.next(), dims.next(), dims.next())
    else {
        return None;
    };
    if a == b || var(a).is_none() || var(b).is_none() {
        return None;
    }
    // The dictionaries' strings are compared once per tensor, with its
    // data ([`orient`]), not per statement.
    let all = input.tensor.tensor.dims();
    let same =
        all[p].size == all[q].size && all[p].dictionary.is_some() == all[q].dictionary.is_some();
    same.then_some((p, q))
}

/// The numbers of the two variables an edge reads, the smaller first.
fn vars_at(
    input: &Input,
    dims: (usize, usize),
    var: &impl Fn(&str) -> Option<usize>,
) -> Option<(usize, usize)> {
    let (IndexTerm::Var(a), IndexTerm::Var(b)) = (&input.indices[dims.0], &input.indices[dims.1])
    else {
        return None;
    };
    let (a, b) = (var(a)?, var(b)?);
    Some((a.min(b), a.max(b)))
}

/// The read an edge makes.
fn read_of(input: &Input, dims: (usize, usize)) -> EdgeRead {
    EdgeRead {
        tensor: Arc::as_ptr(&input.tensor.tensor) as usize,
        dims,
        annotation: input.annotation,
    }
}

/// The class representative of `v` (union-find without ranks: classes
/// are small).
fn root(class: &[usize], mut v: usize) -> usize {
    while class[v] != v {
        v = class[v];
    }
    v
}

/// Whether some edge reads the pair from an input that `symmetric` says
/// is symmetric (and free of diagonal entries) through its dimensions.
fn joined_symmetrically(
    factors: &[Factor<'_>],
    var: &impl Fn(&str) -> Option<usize>,
    pair: (usize, usize),
    symmetric: &impl Fn(&Input, (usize, usize)) -> bool,
) -> bool {
    factors.iter().any(|f| match f {
        Factor::Edge { input, dims } => {
            vars_at(input, *dims, var) == Some(pair) && symmetric(input, *dims)
        }
        Factor::Other => false,
    })
}

/// Whether swapping the two variables of `pair` maps the factors `args`
/// onto themselves as a multiset, an edge whose input `symmetric` says
/// is symmetric read with its two variables in either order.
fn swaps_onto_itself(
    args: &[Expr],
    factors: &[Factor<'_>],
    var: &impl Fn(&str) -> Option<usize>,
    pair: (usize, usize),
    symmetric: &impl Fn(&Input, (usize, usize)) -> bool,
) -> bool {
    let keys = |swap: Option<(usize, usize)>| {
        let mut keys: Vec<Key<'_>> = args
            .iter()
            .zip(factors)
            .filter_map(|(arg, f)| key(arg, f, var, pair, swap, symmetric))
            .collect();
        keys.sort_unstable();
        keys
    };
    keys(None) == keys(Some(pair))
}

/// Per summed variable, a sum of hashes of its occurrences in `args`:
/// what the factor reads, the shape of its terms (which are constants,
/// and their values) and the variable's position in it (any position of
/// an edge, whose input may be symmetric). Swapping two variables maps
/// the occurrences of one onto those of the other, so two variables that
/// swap have equal sums: pairs with different sums are not checked.
fn fingerprints(
    args: &[Expr],
    factors: &[Factor<'_>],
    var: &impl Fn(&str) -> Option<usize>,
    summed: usize,
) -> Vec<u64> {
    let hashes = hashbrown::DefaultHashBuilder::default();
    let mut prints = vec![0u64; summed];
    for (arg, factor) in args.iter().zip(factors) {
        let (read, terms) = match arg {
            Expr::Input(input) => (
                hashes.hash_one((Arc::as_ptr(&input.tensor.tensor) as usize, input.annotation)),
                &input.indices,
            ),
            Expr::Alias { name, indices } => (hashes.hash_one(name.as_str()), indices),
            _ => continue,
        };
        let shape = {
            let mut h = hashes.build_hasher();
            for t in terms {
                match t {
                    IndexTerm::Const(c) => (0u8, *c).hash(&mut h),
                    IndexTerm::Var(_) => (1u8, 0i64).hash(&mut h),
                }
            }
            h.finish()
        };
        for (position, term) in terms.iter().enumerate() {
            if let IndexTerm::Var(name) = term
                && let Some(v) = var(name)
            {
                let place = match factor {
                    Factor::Edge { .. } => usize::MAX,
                    Factor::Other => position,
                };
                prints[v] = prints[v].wrapping_add(hashes.hash_one((read, shape, place)));
            }
        }
    }
    prints
}

/// A factor's key with the variables of `swap` exchanged: what it reads
/// and its terms; an edge on a symmetric input with its two variables in
/// increasing order. `None` for a factor that reads neither variable of
/// `pair` (a constant among them): swapping the pair leaves it in place.
fn key<'a>(
    arg: &'a Expr,
    factor: &Factor<'_>,
    var: &impl Fn(&str) -> Option<usize>,
    pair: (usize, usize),
    swap: Option<(usize, usize)>,
    symmetric: &impl Fn(&Input, (usize, usize)) -> bool,
) -> Option<Key<'a>> {
    let (read, indices) = match arg {
        Expr::Input(input) => {
            let tensor = Arc::as_ptr(&input.tensor.tensor) as usize;
            (Read::Input(tensor, input.annotation), &input.indices)
        }
        Expr::Alias { name, indices } => (Read::Alias(name), indices),
        _ => return None,
    };
    let reads_pair = indices.iter().any(|t| match t {
        IndexTerm::Var(name) => var(name).is_some_and(|v| v == pair.0 || v == pair.1),
        IndexTerm::Const(_) => false,
    });
    if !reads_pair {
        return None;
    }
    let term = |t: &'a IndexTerm| -> Term<'a> {
        match t {
            IndexTerm::Const(c) => Term::Const(*c),
            IndexTerm::Var(name) => match var(name) {
                Some(v) => Term::Summed(match swap {
                    Some((a, b)) if v == a => b,
                    Some((a, b)) if v == b => a,
                    _ => v,
                }),
                None => Term::Free(name),
            },
        }
    };
    let mut terms: Vec<Term<'a>> = indices.iter().map(term).collect();
    if let (Factor::Edge { dims, .. }, Expr::Input(input)) = (factor, arg)
        && symmetric(input, *dims)
        && terms[dims.0] > terms[dims.1]
    {
        terms.swap(dims.0, dims.1);
    }
    Some((read, terms))
}

/// The orientation of `input`'s tensor through `dims` for the annotation
/// it reads (found once and kept with the tensor): its entries whose
/// coordinate at `dims.0` ranks below the one at `dims.1`, by degree
/// (entries with that coordinate at `dims.0`), then coordinate; `None`
/// when the two dimensions' dictionaries differ, the tensor is not
/// symmetric there (swapping the two coordinates of every entry gives an
/// entry with the same annotation) or it stores an entry with the two
/// coordinates equal.
///
/// Errors: an orientation that cannot be stored ([`Tensor::from_coo`]).
fn orientation(input: &Input, dims: (usize, usize)) -> Result<Option<Arc<Tensor>>> {
    let tensor = &input.tensor.tensor;
    let kept = tensor.derived::<Oriented>();
    let key = (dims, input.annotation);
    if let Some(found) = kept
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return Ok(found.clone());
    }
    let made = orient(tensor, dims, input.annotation)?.map(Arc::new);
    kept.0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, made.clone());
    Ok(made)
}

/// [`orientation`], computed.
fn orient(
    tensor: &Tensor,
    (p, q): (usize, usize),
    annotation: Annotation,
) -> Result<Option<Tensor>> {
    let keys = match (&tensor.dims()[p].dictionary, &tensor.dims()[q].dictionary) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x.strings() == y.strings(),
        _ => false,
    };
    let (cp, cq) = (tensor.coords(p), tensor.coords(q));
    if !keys || cp.iter().zip(cq).any(|(a, b)| a == b) {
        return Ok(None);
    }
    let coo = tensor.to_coo();
    let read: Option<&ValueData> = match annotation {
        Annotation::Multiplicity if tensor.is_bag() => coo.values.last().map(|(_, v)| v),
        Annotation::Multiplicity => None,
        Annotation::Column(k) => Some(
            &coo.values
                .get(k)
                .ok_or_else(|| Error::Internal(format!("value column {k} of an oriented input")))?
                .1,
        ),
    };
    // The entries sorted by (p, q, the other dimensions) and by (q, p, the
    // others): the tensor is symmetric when the two lists agree entry by
    // entry, values included. The pair leads each key, so that the sort
    // moves small tuples and reads the other dimensions only on ties.
    let rest: Vec<&[i64]> = (0..coo.coords.len())
        .filter(|&d| d != p && d != q)
        .map(|d| coo.coords[d].as_slice())
        .collect();
    let tie = |x: usize, y: usize| {
        rest.iter()
            .map(|c| c[x].cmp(&c[y]))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let sorted = |first: &[i64], second: &[i64]| {
        let mut keys: Vec<(i64, i64, usize)> = first
            .iter()
            .zip(second)
            .enumerate()
            .map(|(e, (&a, &b))| (a, b, e))
            .collect();
        keys.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then_with(|| tie(x.2, y.2)));
        keys
    };
    let (straight, swapped) = (sorted(cp, cq), sorted(cq, cp));
    let symmetric = straight.iter().zip(&swapped).all(|(x, y)| {
        (x.0, x.1) == (y.0, y.1) && tie(x.2, y.2).is_eq() && read.is_none_or(|v| same(v, x.2, y.2))
    });
    if !symmetric {
        return Ok(None);
    }
    // Degrees from the runs of the first coordinate.
    let mut degree: HashMap<i64, u64> = HashMap::new();
    for run in straight.chunk_by(|x, y| x.0 == y.0) {
        degree.insert(run[0].0, run.len() as u64);
    }
    let rank = |c: i64| (degree.get(&c).copied().unwrap_or(0), c);
    let keep: Vec<usize> = (0..cp.len())
        .filter(|&e| rank(cp[e]) < rank(cq[e]))
        .collect();
    let Coo {
        dims: specs,
        coords,
        values,
        column_order,
    } = coo;
    let coords = coords
        .into_iter()
        .map(|c| keep.iter().map(|&e| c[e]).collect())
        .collect();
    let values = values
        .into_iter()
        .map(|(name, data)| (name, data.gather(&keep)))
        .collect();
    Tensor::from_coo(Coo {
        dims: specs,
        coords,
        values,
        column_order,
    })
    .map(Some)
}

/// Whether entries `x` and `y` of a value column hold the same value.
fn same(values: &ValueData, x: usize, y: usize) -> bool {
    match values {
        ValueData::Boolean(v) => v[x] == v[y],
        ValueData::Int64(v) => v[x] == v[y],
        ValueData::Int128(v) => v[x] == v[y],
        ValueData::Float64(v) => v[x].to_bits() == v[y].to_bits(),
    }
}
