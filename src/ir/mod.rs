//! The intermediate representation shared by the SQL and einsum front-ends:
//! the input-program dialect of Galley (figure 4.A).
//!
//! A [`Program`] is a list of [`Query`]s, each naming an output and its
//! indices and giving an [`Expr`]:
//!
//! ```text
//! Program := Query...          Query := Name[Idx...] = Expr
//! Expr    := Agg(op, Idx..., Expr)          -- SUM(j) ...
//!          | Map(op, Expr...)               -- a * b, sigmoid(a)
//!          | Input(tensor.column[Term...])  -- A.v[i, j], labels.v[n, 12]
//!          | Alias(name[Term...])           -- an earlier query's result
//!          | Literal(value)                 -- 2, 0.5, true
//!          | Index(var)                     -- coord(i): i's coordinate
//! Term    := index variable | constant coordinate
//! ```
//!
//! Operators and their algebra live in [`operator`], values and type rules
//! in [`value`], and the text form (the einsum syntax itself, so that a
//! printed program parses back to the same IR) in [`display`]. The front-ends
//! build programs, the reference evaluator ([`crate::reference`]) runs them,
//! and the optimizer will rewrite them.

pub mod display;
pub mod operator;
pub mod value;

use std::sync::Arc;

pub use operator::{AggOp, Algebra, Annihilator, Arity, ScalarOp};
pub use value::{Int128, Value, column_values};

use crate::error::Result;
use crate::storage::{Coo, DimensionSpec, Tensor, ValueData, ValueType};

/// A program: queries evaluated in order; later ones may refer to earlier
/// ones through [`Expr::Alias`].
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The queries, in evaluation order.
    pub queries: Vec<Query>,
}

/// One output: `name[indices] = expr`.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The name of the result.
    pub name: String,
    /// The output indices, in the order of the result's dimensions; exactly
    /// the free indices of `expr`.
    pub indices: Vec<String>,
    /// What to compute.
    pub expr: Expr,
}

/// An expression of the input-program dialect.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `Agg(op, indices, body)`: aggregates `body` over every coordinate of
    /// the listed indices.
    Agg {
        /// The aggregate.
        op: AggOp,
        /// The indices aggregated away (at least one, each free in `body`).
        indices: Vec<String>,
        /// The aggregated expression.
        body: Box<Expr>,
    },
    /// `Map(op, args)`: applies a scalar operator pointwise.
    Map {
        /// The operator.
        op: ScalarOp,
        /// The arguments; their number fits the operator's arity.
        args: Vec<Expr>,
    },
    /// An annotation column of a stored tensor, indexed.
    Input(Input),
    /// The result of an earlier query of the program, indexed.
    Alias {
        /// The earlier query's name.
        name: String,
        /// One term per dimension of that result.
        indices: Vec<IndexTerm>,
    },
    /// A constant.
    Literal(Value),
    /// The coordinate that an index variable is bound to, as an integer
    /// (for a string key, its position in the sorted dictionary). It lets
    /// queries compare and compute with keys (`e.src < e.dst` in SQL,
    /// `coord(i)` in einsum); the variable must also index an input.
    Index(String),
}

/// What indexes one dimension of an input: a variable or a constant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IndexTerm {
    /// An index variable, by name.
    Var(String),
    /// A fixed coordinate (a string key is resolved to its coordinate).
    Const(i64),
}

/// `tensor.column[indices]`: one annotation of a stored tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// The tensor.
    pub tensor: TensorRef,
    /// Which annotation to read.
    pub annotation: Annotation,
    /// One term per dimension, in stored dimension order.
    pub indices: Vec<IndexTerm>,
}

/// Which annotation of a tensor an input reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Annotation {
    /// The value column at this position.
    Column(usize),
    /// How many rows the table holds at a coordinate: a bag's stored
    /// multiplicity, or 1 for every stored row of a keyed table (even one
    /// whose values are 0). SQL lowers its row semantics onto this.
    Multiplicity,
}

/// A stored tensor with the name it was found under. Two references are
/// equal when they name the same tensor object.
#[derive(Clone, Debug)]
pub struct TensorRef {
    /// The table name, as written in the catalog.
    pub name: String,
    /// The tensor itself (its statistics serve the optimizer).
    pub tensor: Arc<Tensor>,
}

impl PartialEq for TensorRef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.tensor, &other.tensor)
    }
}

impl IndexTerm {
    /// The constant terms of `terms` with their positions, in order.
    pub fn constants(terms: &[IndexTerm]) -> Vec<(usize, i64)> {
        terms
            .iter()
            .enumerate()
            .filter_map(|(d, t)| match t {
                IndexTerm::Const(c) => Some((d, *c)),
                IndexTerm::Var(_) => None,
            })
            .collect()
    }
}

impl Input {
    /// The name of the annotation: the value column's name, or `None` for
    /// a bag's multiplicity.
    pub fn column_name(&self) -> Option<&str> {
        match self.annotation {
            Annotation::Column(c) => self.tensor.tensor.values().get(c).map(|v| v.name.as_str()),
            Annotation::Multiplicity => None,
        }
    }

    /// The type of the annotation (multiplicities are integers).
    pub fn value_type(&self) -> ValueType {
        match self.annotation {
            Annotation::Column(c) => self
                .tensor
                .tensor
                .values()
                .get(c)
                .map_or(ValueType::Int64, |v| v.ty),
            Annotation::Multiplicity => ValueType::Int64,
        }
    }
}

impl Expr {
    /// `Map(op, args)`, flattening arguments that are the same associative
    /// operator (`a * (b * c)` becomes `Map(*, a, b, c)`), so that equal
    /// products have one form.
    pub fn map(op: ScalarOp, args: Vec<Expr>) -> Expr {
        let args = if op.algebra().associative {
            args.into_iter()
                .flat_map(|arg| match arg {
                    Expr::Map { op: inner, args } if inner == op => args,
                    other => vec![other],
                })
                .collect()
        } else {
            args
        };
        Expr::Map { op, args }
    }

    /// The product of `factors` (flattened as [`Expr::map`] does); the
    /// factor itself when there is one.
    pub fn product(mut factors: Vec<Expr>) -> Expr {
        if factors.len() == 1 {
            factors.remove(0)
        } else {
            Expr::map(ScalarOp::Mul, factors)
        }
    }

    /// `SUM(indices) body`, or `body` itself when there are no indices.
    pub fn sum(indices: Vec<String>, body: Expr) -> Expr {
        if indices.is_empty() {
            body
        } else {
            Expr::Agg {
                op: AggOp::Sum,
                indices,
                body: Box::new(body),
            }
        }
    }

    /// The expression with `f` applied to each of its direct
    /// sub-expressions (an aggregate's body, an operator's arguments); a
    /// leaf as it is. The walk of a rewrite that changes some nodes and
    /// rebuilds the rest.
    pub fn map_children(self, mut f: impl FnMut(Expr) -> Expr) -> Expr {
        match self {
            Expr::Agg { op, indices, body } => Expr::Agg {
                op,
                indices,
                body: Box::new(f(*body)),
            },
            Expr::Map { op, args } => Expr::Map {
                op,
                args: args.into_iter().map(f).collect(),
            },
            leaf => leaf,
        }
    }

    /// Calls `f` on every `SUM` over a product within the expression
    /// (an `Agg` whose body is a `Map` of `*`), innermost first: a sum's
    /// factors are visited before the sum itself, and `f` may rewrite the
    /// sum in place. The walk of the phases that rewrite such sums.
    pub fn for_each_sum_of_products(
        &mut self,
        f: &mut impl FnMut(&mut Expr) -> Result<()>,
    ) -> Result<()> {
        match self {
            Expr::Agg {
                op: AggOp::Sum,
                body,
                ..
            } if matches!(
                body.as_ref(),
                Expr::Map {
                    op: ScalarOp::Mul,
                    ..
                }
            ) =>
            {
                body.for_each_sum_of_products(f)?;
                f(self)
            }
            Expr::Agg { body, .. } => body.for_each_sum_of_products(f),
            Expr::Map { args, .. } => args
                .iter_mut()
                .try_for_each(|arg| arg.for_each_sum_of_products(f)),
            Expr::Input(_) | Expr::Alias { .. } | Expr::Literal(_) | Expr::Index(_) => Ok(()),
        }
    }

    /// The stored-tensor inputs of the expression, in order of appearance.
    pub fn inputs(&self) -> Vec<&Input> {
        match self {
            Expr::Input(input) => vec![input],
            Expr::Agg { body, .. } => body.inputs(),
            Expr::Map { args, .. } => args.iter().flat_map(Expr::inputs).collect(),
            Expr::Alias { .. } | Expr::Literal(_) | Expr::Index(_) => Vec::new(),
        }
    }

    /// The free index variables of the expression, in order of first
    /// appearance.
    pub fn free_indices(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_free(&mut out);
        out
    }

    fn collect_free(&self, out: &mut Vec<String>) {
        let mut add_terms = |terms: &[IndexTerm]| {
            for term in terms {
                if let IndexTerm::Var(v) = term
                    && !out.contains(v)
                {
                    out.push(v.clone());
                }
            }
        };
        match self {
            Expr::Input(input) => add_terms(&input.indices),
            Expr::Alias { indices, .. } => add_terms(indices),
            Expr::Literal(_) => {}
            Expr::Index(v) => {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            Expr::Map { args, .. } => args.iter().for_each(|a| a.collect_free(out)),
            Expr::Agg { indices, body, .. } => {
                for v in body.free_indices() {
                    if !indices.contains(&v) && !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
        }
    }

    /// The type of the expression's values, given the types of the
    /// results that aliases name.
    pub fn value_type(&self, alias_type: &dyn Fn(&str) -> Option<ValueType>) -> ValueType {
        match self {
            Expr::Input(input) => input.value_type(),
            Expr::Alias { name, .. } => alias_type(name).unwrap_or(ValueType::Int64),
            Expr::Literal(v) => v.value_type(),
            Expr::Index(_) => ValueType::Int64,
            Expr::Map { op, args } => {
                let types: Vec<ValueType> = args.iter().map(|a| a.value_type(alias_type)).collect();
                op.result_type(&types)
            }
            Expr::Agg { op, body, .. } => op.result_type(body.value_type(alias_type)),
        }
    }
}

/// The stored form of a query's result, shared by the evaluators: one
/// dimension per output index (`dims`, with `coords` per dimension) and one
/// value column `v` of type `ty` (renamed `v_`, `v__`, ... if an index is
/// called `v`). A `BIGINT` result with a value beyond 64 bits is stored as
/// `HUGEINT` (see [`stored_type`]).
pub fn result_tensor(
    dims: Vec<DimensionSpec>,
    coords: Vec<Vec<i64>>,
    values: impl Iterator<Item = Value>,
    ty: ValueType,
) -> Result<Tensor> {
    let values: Vec<Value> = values.map(|v| v.cast(ty)).collect();
    let data = match stored_type(ty, &values) {
        ValueType::Boolean => ValueData::Boolean(
            values
                .iter()
                .map(|v| matches!(v, Value::Bool(true)))
                .collect(),
        ),
        ValueType::Int64 => ValueData::Int64(
            values
                .iter()
                .map(|v| v.as_i64().unwrap_or_default())
                .collect(),
        ),
        ValueType::Int128 => ValueData::Int128(
            values
                .iter()
                .map(|v| v.as_i128().unwrap_or_default())
                .collect(),
        ),
        ValueType::Float64 => ValueData::Float64(values.iter().map(|v| v.as_f64()).collect()),
    };
    result_tensor_of(dims, coords, data)
}

/// The type a result of type `ty` is stored as, given its values: `ty`,
/// except that `BIGINT` values of which one does not fit in 64 bits (they
/// were promoted) are stored as `HUGEINT`.
pub fn stored_type(ty: ValueType, values: &[Value]) -> ValueType {
    if ty == ValueType::Int64 && values.iter().any(|v| v.as_i64().is_none()) {
        ValueType::Int128
    } else {
        ty
    }
}

/// [`result_tensor`] for a value column already in its final type.
pub fn result_tensor_of(
    dims: Vec<DimensionSpec>,
    coords: Vec<Vec<i64>>,
    data: ValueData,
) -> Result<Tensor> {
    Tensor::from_coo(result_coo(dims, coords, data))
}

/// [`result_tensor_of`] for entries known to be strictly increasing (see
/// [`Tensor::from_increasing_coo`]).
pub(crate) fn result_tensor_increasing(
    dims: Vec<DimensionSpec>,
    coords: Vec<Vec<i64>>,
    data: ValueData,
) -> Result<Tensor> {
    Tensor::from_increasing_coo(result_coo(dims, coords, data))
}

/// [`result_tensor_of`] for entries that are whole rows of the last
/// dimension (see [`Tensor::with_full_rows`]).
pub(crate) fn result_tensor_rows(
    dims: Vec<DimensionSpec>,
    leading: Vec<Vec<i64>>,
    data: ValueData,
) -> Result<Tensor> {
    let column = value_column_name(&dims);
    Tensor::with_full_rows(dims, leading, vec![(column, data)])
}

/// [`result_tensor_of`] with a value for every stored entry of `source`,
/// at its coordinates (shared, see [`Tensor::with_coordinates_of`]).
pub(crate) fn result_tensor_at(
    source: &Tensor,
    dims: Vec<DimensionSpec>,
    data: ValueData,
) -> Result<Tensor> {
    let column = value_column_name(&dims);
    Tensor::with_coordinates_of(source, dims, vec![(column, data)])
}

/// The entries with one value column named by [`value_column_name`].
fn result_coo(dims: Vec<DimensionSpec>, coords: Vec<Vec<i64>>, data: ValueData) -> Coo {
    let column = value_column_name(&dims);
    Coo {
        dims,
        coords,
        values: vec![(column, data)],
        column_order: None,
    }
}

/// A result's value column: `v`, renamed `v_`, ... if an index is called
/// `v`.
fn value_column_name(dims: &[DimensionSpec]) -> String {
    let mut column = "v".to_string();
    while dims.iter().any(|d| d.name.eq_ignore_ascii_case(&column)) {
        column.push('_');
    }
    column
}
