//! Scalar operators and aggregates, each with its algebra declared in one
//! place.
//!
//! The optimizer (Galley section 5.4) reasons about expressions only through
//! [`Algebra`]: identities, annihilators, commutativity, associativity,
//! idempotence, distributivity over aggregates, and the repeated application
//! g(x, n) of an aggregate ([`AggOp::repeat`]). The reference evaluator uses
//! the annihilators to skip assignments that cannot produce an entry. The
//! property tests at the bottom check every declared law on random values.
//!
//! Type rules (SQL-like, as DuckDB): `+ - *`, `abs`, `relu` and unary minus
//! on integers and booleans give exact integers, and floats if any argument
//! is a float. Integer results are exact to 128 bits: a `BIGINT` result
//! that would overflow 64 bits is a `HUGEINT` instead, a `HUGEINT`
//! argument makes the result a `HUGEINT`, and a result beyond 128 bits is
//! an error (never a wrap); `/`, `exp`, `ln`, `log` (base 10),
//! `sqrt`, `power` and `sigmoid` always give floats; `floor` and `%` (`mod`)
//! keep the arithmetic type; `greatest` and `least`
//! give the widest argument type (NaN ranks above every number, as in
//! DuckDB, so their value does not depend on the arguments' order); `hugeint` gives a `HUGEINT`; comparisons, `and`, `or` give booleans
//! (numbers are true when non-zero). Division follows the sparse convention
//! that 0 divided by anything is 0, so absent entries stay absent; a non-zero
//! value divided by zero is an error. Float results follow IEEE rules
//! (`ln(0)` is `-inf`, `sqrt(-1)` is NaN); the declared laws hold for finite
//! values.

use std::cmp::Ordering;

use super::value::{Value, arithmetic_type, wider};
use crate::error::{Error, Result};
use crate::storage::ValueType;

/// A pointwise (Map) operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarOp {
    /// `a + b + ...`
    Add,
    /// `a - b`
    Sub,
    /// `a * b * ...`
    Mul,
    /// `a / b` (always a float)
    Div,
    /// `-a`
    Neg,
    /// `a = b`
    Eq,
    /// `a <> b` (also written `!=`)
    Ne,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a and b and ...`
    And,
    /// `a or b or ...`
    Or,
    /// `exp(a)`
    Exp,
    /// `ln(a)`, the natural logarithm
    Ln,
    /// `log(a)`, the base-10 logarithm (as in SQL)
    Log,
    /// `sqrt(a)`
    Sqrt,
    /// `abs(a)`
    Abs,
    /// `power(a, b)`
    Power,
    /// `greatest(a, b, ...)`
    Greatest,
    /// `least(a, b, ...)`
    Least,
    /// `sigmoid(a)` = 1 / (1 + e^-a)
    Sigmoid,
    /// `relu(a)` = greatest(a, 0)
    Relu,
    /// `ifelse(c, a, b)`: `a` where `c` is non-zero, else `b` (SQL `CASE`)
    IfElse,
    /// `hugeint(a)`: `a` as a `HUGEINT` (SQL `CAST(a AS HUGEINT)`); a
    /// float is truncated toward zero, and one outside the 128-bit range
    /// (or not finite) is an error
    Hugeint,
    /// `floor(a)`: the largest integral value not above `a` (a float stays
    /// a float, an integer is itself)
    Floor,
    /// `mod(a, b)` (SQL `a % b`): the remainder of `a / b` truncated toward
    /// zero, with the sign of `a` (as C, DuckDB and Julia's `rem`); `0 % b`
    /// is 0 for every `b`, and a non-zero `a % 0` is an error
    Mod,
}

/// How many arguments an operator takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly one.
    Unary,
    /// Exactly two.
    Binary,
    /// Exactly three.
    Ternary,
    /// Two or more (the operator is associative).
    Variadic,
}

/// A value that fixes an operator's result to itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Annihilator {
    /// The annihilating value (compared numerically, see [`Value::same`]).
    pub value: Value,
    /// Whether it annihilates only as the first argument (`0 / x = 0`);
    /// otherwise in any position (`x * 0 = 0`).
    pub only_first: bool,
}

/// The algebraic properties of a scalar operator; the optimizer reasons
/// only through these. Equalities are numeric ([`Value::same`]); the laws
/// of `and` and `or` hold on booleans.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Algebra {
    /// `e` with `f(x, e) = f(e, x) = x`; `None` if there is none (or, as for
    /// `greatest`, only an infinite one).
    pub identity: Option<Value>,
    /// `a` with `f(..., a, ...) = a`; for a unary operator, `f(a) = a`.
    pub annihilator: Option<Annihilator>,
    /// `f(x, y) = f(y, x)`.
    pub commutative: bool,
    /// `f(f(x, y), z) = f(x, f(y, z))`.
    pub associative: bool,
    /// `f(x, x) = x`.
    pub idempotent: bool,
    /// Aggregates `α` with `f(x, α(a, b)) = α(f(x, a), f(x, b))` (for a
    /// unary operator, `f(α(a, b)) = α(f(a), f(b))`).
    pub distributes_over: &'static [AggOp],
    /// `(g, h)` with `f(g(x, y)) = h(f(x), f(y))` for a unary `f`, up to
    /// rounding and for finite results: `f` maps `g` onto `h`
    /// (`exp(x + y) = exp(x) · exp(y)`).
    pub homomorphism: Option<(ScalarOp, ScalarOp)>,
}

const NOTHING: Algebra = Algebra {
    identity: None,
    annihilator: None,
    commutative: false,
    associative: false,
    idempotent: false,
    distributes_over: &[],
    homomorphism: None,
};

const fn zero_preserving(distributes_over: &'static [AggOp]) -> Algebra {
    Algebra {
        annihilator: Some(Annihilator {
            value: Value::Int(0),
            only_first: false,
        }),
        distributes_over,
        ..NOTHING
    }
}

const LATTICE: Algebra = Algebra {
    commutative: true,
    associative: true,
    idempotent: true,
    distributes_over: &[AggOp::Max, AggOp::Min],
    ..NOTHING
};

const COMPARISON: Algebra = NOTHING;

impl ScalarOp {
    /// Every operator, for tests and listings.
    pub const ALL: [ScalarOp; 27] = [
        ScalarOp::Add,
        ScalarOp::Sub,
        ScalarOp::Mul,
        ScalarOp::Div,
        ScalarOp::Neg,
        ScalarOp::Eq,
        ScalarOp::Ne,
        ScalarOp::Lt,
        ScalarOp::Le,
        ScalarOp::Gt,
        ScalarOp::Ge,
        ScalarOp::And,
        ScalarOp::Or,
        ScalarOp::Exp,
        ScalarOp::Ln,
        ScalarOp::Log,
        ScalarOp::Sqrt,
        ScalarOp::Abs,
        ScalarOp::Power,
        ScalarOp::Greatest,
        ScalarOp::Least,
        ScalarOp::Sigmoid,
        ScalarOp::Relu,
        ScalarOp::IfElse,
        ScalarOp::Hugeint,
        ScalarOp::Floor,
        ScalarOp::Mod,
    ];

    /// The algebra of the operator (see [`Algebra`]).
    pub fn algebra(self) -> Algebra {
        use ScalarOp::*;
        match self {
            Add => Algebra {
                identity: Some(Value::Int(0)),
                commutative: true,
                associative: true,
                distributes_over: &[AggOp::Max, AggOp::Min],
                ..NOTHING
            },
            Mul => Algebra {
                identity: Some(Value::Int(1)),
                annihilator: Some(Annihilator {
                    value: Value::Int(0),
                    only_first: false,
                }),
                commutative: true,
                associative: true,
                distributes_over: &[AggOp::Sum],
                ..NOTHING
            },
            Div | Mod => Algebra {
                annihilator: Some(Annihilator {
                    value: Value::Int(0),
                    only_first: true,
                }),
                ..NOTHING
            },
            Neg => zero_preserving(&[AggOp::Sum]),
            Sqrt | Abs | Hugeint => zero_preserving(&[]),
            Relu | Floor => zero_preserving(&[AggOp::Max, AggOp::Min]),
            Exp => Algebra {
                distributes_over: &[AggOp::Max, AggOp::Min],
                homomorphism: Some((Add, Mul)),
                ..NOTHING
            },
            Sigmoid => Algebra {
                distributes_over: &[AggOp::Max, AggOp::Min],
                ..NOTHING
            },
            Eq | Ne => Algebra {
                commutative: true,
                ..COMPARISON
            },
            Lt | Le | Gt | Ge => COMPARISON,
            And => Algebra {
                identity: Some(Value::Bool(true)),
                annihilator: Some(Annihilator {
                    value: Value::Bool(false),
                    only_first: false,
                }),
                distributes_over: &[AggOp::Any],
                ..LATTICE
            },
            Or => Algebra {
                identity: Some(Value::Bool(false)),
                annihilator: Some(Annihilator {
                    value: Value::Bool(true),
                    only_first: false,
                }),
                distributes_over: &[AggOp::Any],
                ..LATTICE
            },
            Greatest | Least => LATTICE,
            Sub | Ln | Log | Power | IfElse => NOTHING,
        }
    }

    /// How many arguments the operator takes.
    pub fn arity(self) -> Arity {
        use ScalarOp::*;
        match self {
            Add | Mul | And | Or | Greatest | Least => Arity::Variadic,
            Sub | Div | Eq | Ne | Lt | Le | Gt | Ge | Power | Mod => Arity::Binary,
            Neg | Exp | Ln | Log | Sqrt | Abs | Sigmoid | Relu | Hugeint | Floor => Arity::Unary,
            IfElse => Arity::Ternary,
        }
    }

    /// Whether `count` arguments fit the operator's arity.
    pub fn accepts(self, count: usize) -> bool {
        match self.arity() {
            Arity::Unary => count == 1,
            Arity::Binary => count == 2,
            Arity::Ternary => count == 3,
            Arity::Variadic => count >= 2,
        }
    }

    /// The infix symbol of the operator, if it is written infix (or, for
    /// `-a`, prefix).
    pub fn symbol(self) -> Option<&'static str> {
        use ScalarOp::*;
        Some(match self {
            Add => "+",
            Sub | Neg => "-",
            Mul => "*",
            Div => "/",
            Eq => "=",
            Ne => "<>",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            And => "and",
            Or => "or",
            _ => return None,
        })
    }

    /// The function name of the operator as written in tensor index
    /// notation, for operators written as calls.
    pub fn function_name(self) -> Option<&'static str> {
        use ScalarOp::*;
        Some(match self {
            Exp => "exp",
            Ln => "ln",
            Log => "log",
            Sqrt => "sqrt",
            Abs => "abs",
            Power => "power",
            Greatest => "greatest",
            Least => "least",
            Sigmoid => "sigmoid",
            Relu => "relu",
            IfElse => "ifelse",
            Hugeint => "hugeint",
            Floor => "floor",
            Mod => "mod",
            _ => return None,
        })
    }

    /// The operator called `name` (case-insensitive) in function syntax.
    pub fn from_function_name(name: &str) -> Option<ScalarOp> {
        let lower = name.to_lowercase();
        ScalarOp::ALL
            .into_iter()
            .find(|op| op.function_name() == Some(lower.as_str()))
    }

    /// The type of the result for arguments of `types` (see the module
    /// documentation).
    pub fn result_type(self, types: &[ValueType]) -> ValueType {
        use ScalarOp::*;
        match self {
            Add | Sub | Mul | Neg | Abs | Relu | Floor | Mod => arithmetic_type(types),
            Div | Exp | Ln | Log | Sqrt | Power | Sigmoid => ValueType::Float64,
            Eq | Ne | Lt | Le | Gt | Ge | And | Or => ValueType::Boolean,
            Hugeint => ValueType::Int128,
            Greatest | Least => types
                .iter()
                .copied()
                .reduce(wider)
                .unwrap_or(ValueType::Int64),
            IfElse => types
                .get(1..)
                .and_then(|branches| branches.iter().copied().reduce(wider))
                .unwrap_or(ValueType::Int64),
        }
    }

    /// Applies the operator to `args`, whose number must fit its arity.
    ///
    /// Errors: integer overflow, a non-zero value divided by zero, and a
    /// wrong number of arguments (which the front-ends rule out).
    pub fn apply(self, args: &[Value]) -> Result<Value> {
        match self.apply_floats(args) {
            Some(value) => Ok(value),
            None => self.apply_any(args),
        }
    }

    /// [`ScalarOp::apply`] by the general dispatch, for any arguments.
    fn apply_any(self, args: &[Value]) -> Result<Value> {
        use ScalarOp::*;
        if !self.accepts(args.len()) {
            return Err(Error::Invalid(format!(
                "operator {self:?} applied to {} arguments",
                args.len()
            )));
        }
        // Most operators take a few arguments: their types on the stack.
        let mut few = [ValueType::Int64; 8];
        let many: Vec<ValueType>;
        let types: &[ValueType] = match few.get_mut(..args.len()) {
            Some(slots) => {
                for (slot, arg) in slots.iter_mut().zip(args) {
                    *slot = arg.value_type();
                }
                slots
            }
            None => {
                many = args.iter().map(|a| a.value_type()).collect();
                &many
            }
        };
        let float = self.result_type(types) == ValueType::Float64;
        let unary = args[0];
        Ok(match self {
            Add => fold_arithmetic(args, float, &INT_ADD, |a, b| a + b, "+")?,
            Sub => fold_arithmetic(args, float, &INT_SUB, |a, b| a - b, "-")?,
            Mul if args.iter().any(|a| a.is_zero()) => Value::zero(self.result_type(types)),
            Mul => fold_arithmetic(args, float, &INT_MUL, |a, b| a * b, "*")?,
            Div => divide(args[0], args[1])?,
            Neg => match unary {
                Value::Float(x) => Value::Float(-x),
                _ => integer_unary(unary, i128::checked_neg, "-")?,
            },
            Abs => match unary {
                Value::Float(x) => Value::Float(x.abs()),
                _ => integer_unary(unary, i128::checked_abs, "abs")?,
            },
            Relu => match unary {
                Value::Float(x) => Value::Float(x.max(0.0)),
                Value::Huge(h) => Value::huge(h.get().max(0)),
                _ => Value::Int(unary.as_i64().unwrap_or_default().max(0)),
            },
            Eq | Ne | Lt | Le | Gt | Ge => Value::Bool(compare(self, args[0], args[1])),
            And => Value::Bool(args.iter().all(|a| !a.is_zero())),
            Or => Value::Bool(args.iter().any(|a| !a.is_zero())),
            Exp => Value::Float(unary.as_f64().exp()),
            Ln => Value::Float(unary.as_f64().ln()),
            Log => Value::Float(unary.as_f64().log10()),
            Sqrt => Value::Float(unary.as_f64().sqrt()),
            Sigmoid => Value::Float(1.0 / (1.0 + (-unary.as_f64()).exp())),
            Power => Value::Float(args[0].as_f64().powf(args[1].as_f64())),
            Greatest | Least => {
                let wanted = if self == Greatest {
                    Ordering::Greater
                } else {
                    Ordering::Less
                };
                // NaN ranks above every number (as in DuckDB): `greatest`
                // of a NaN is NaN and `least` passes it by, whatever the
                // order of the arguments (and so of a `MAX` or `MIN`).
                let rank = |a: Value, b: Value| match (a.is_nan(), b.is_nan()) {
                    (true, true) => Some(Ordering::Equal),
                    (true, false) => Some(Ordering::Greater),
                    (false, true) => Some(Ordering::Less),
                    (false, false) => a.compare(b),
                };
                let best = args.iter().copied().fold(args[0], |best, a| {
                    if rank(a, best) == Some(wanted) {
                        a
                    } else {
                        best
                    }
                });
                best.cast(self.result_type(types))
            }
            IfElse => {
                let chosen = if unary.is_zero() { args[2] } else { args[1] };
                chosen.cast(self.result_type(types))
            }
            Hugeint => unary.cast_exact(ValueType::Int128)?,
            Floor => match unary {
                Value::Float(x) => Value::Float(x.floor()),
                Value::Bool(b) => Value::Int(i64::from(b)),
                _ => unary,
            },
            Mod => remainder(args[0], args[1], float)?,
        })
    }
}

impl ScalarOp {
    /// [`ScalarOp::apply`] of float arguments for the arithmetic and the
    /// functions whose float result needs no check, without the general
    /// dispatch (which allocates): the same value. `None` for any other
    /// operator or argument.
    #[inline]
    fn apply_floats(self, args: &[Value]) -> Option<Value> {
        let mut floats = [0.0; 4];
        if args.len() > floats.len() {
            return None;
        }
        for (slot, arg) in floats.iter_mut().zip(args) {
            match arg {
                Value::Float(x) => *slot = *x,
                _ => return None,
            }
        }
        self.apply_f64(&floats[..args.len()]).map(Value::Float)
    }

    /// [`ScalarOp::apply`] of floats, for the arithmetic and the functions
    /// whose float result needs no check (not division, whose divisor 0
    /// is an error, nor comparisons): the float `apply` gives. `None` for
    /// any other operator or a number of arguments it does not take.
    #[inline]
    pub fn apply_f64(self, args: &[f64]) -> Option<f64> {
        use ScalarOp::*;
        if !self.accepts(args.len()) {
            return None;
        }
        let fold = |f: fn(f64, f64) -> f64| {
            let (first, rest) = args.split_first()?;
            Some(rest.iter().fold(*first, |acc, &a| f(acc, a)))
        };
        let unary = args.first().copied();
        Some(match self {
            Add => fold(|a, b| a + b)?,
            Sub => fold(|a, b| a - b)?,
            // As `apply`: a product with a zero factor is 0.
            Mul if args.contains(&0.0) => 0.0,
            Mul => fold(|a, b| a * b)?,
            Neg => -unary?,
            Abs => unary?.abs(),
            Relu => unary?.max(0.0),
            Exp => unary?.exp(),
            Ln => unary?.ln(),
            Log => unary?.log10(),
            Sqrt => unary?.sqrt(),
            Sigmoid => 1.0 / (1.0 + (-unary?).exp()),
            Power => unary?.powf(*args.get(1)?),
            _ => return None,
        })
    }
}

fn overflow(op: &str, args: &[Value]) -> Error {
    let shown: Vec<String> = args.iter().map(Value::to_string).collect();
    Error::Overflow(format!("{op} of {}", shown.join(", ")))
}

/// An exact integer operation at 64 bits and, where that overflows, at
/// 128 bits.
struct IntOp {
    small: fn(i64, i64) -> Option<i64>,
    wide: fn(i128, i128) -> Option<i128>,
}

const INT_ADD: IntOp = IntOp {
    small: i64::checked_add,
    wide: i128::checked_add,
};
const INT_SUB: IntOp = IntOp {
    small: i64::checked_sub,
    wide: i128::checked_sub,
};
const INT_MUL: IntOp = IntOp {
    small: i64::checked_mul,
    wide: i128::checked_mul,
};

/// Folds `args` with exact integer arithmetic, or with floats when `float`.
/// Integers fold at 64 bits while they fit; a step that would overflow
/// continues at 128 bits, and the result is a `BIGINT` if it fits, else a
/// `HUGEINT` ([`Value::integer`]). With a `HUGEINT` argument the result is
/// a `HUGEINT`. Past 128 bits it is [`Error::Overflow`].
fn fold_arithmetic(
    args: &[Value],
    float: bool,
    int: &IntOp,
    real: fn(f64, f64) -> f64,
    name: &str,
) -> Result<Value> {
    let (first, rest) = args.split_first().ok_or_else(|| overflow(name, args))?;
    if float {
        return Ok(Value::Float(
            rest.iter()
                .fold(first.as_f64(), |acc, a| real(acc, a.as_f64())),
        ));
    }
    let huge = args.iter().any(|a| matches!(a, Value::Huge(_)));
    if !huge {
        let mut acc = first.as_i64().unwrap_or_default();
        let mut done = true;
        for a in rest {
            match (int.small)(acc, a.as_i64().unwrap_or_default()) {
                Some(next) => acc = next,
                None => {
                    done = false;
                    break;
                }
            }
        }
        if done {
            return Ok(Value::Int(acc));
        }
    }
    let mut acc = first.as_i128().unwrap_or_default();
    for a in rest {
        acc =
            (int.wide)(acc, a.as_i128().unwrap_or_default()).ok_or_else(|| overflow(name, args))?;
    }
    Ok(if huge {
        Value::huge(acc)
    } else {
        Value::integer(acc)
    })
}

/// An exact unary integer operation: a `HUGEINT` stays one, a `BIGINT`
/// becomes one only when its result does not fit in 64 bits.
fn integer_unary(x: Value, op: fn(i128) -> Option<i128>, name: &str) -> Result<Value> {
    let result = op(x.as_i128().unwrap_or_default()).ok_or_else(|| overflow(name, &[x]))?;
    Ok(match x {
        Value::Huge(_) => Value::huge(result),
        _ => Value::integer(result),
    })
}

fn divide(a: Value, b: Value) -> Result<Value> {
    if a.is_zero() {
        return Ok(Value::Float(0.0));
    }
    if b.is_zero() {
        return Err(Error::Invalid(format!(
            "division by zero ({a} / {b}); a / b is defined where b is non-zero or a is zero"
        )));
    }
    Ok(Value::Float(a.as_f64() / b.as_f64()))
}

/// `a % b`, truncated toward zero (the sign of `a`); exact on integers
/// (a `HUGEINT` argument gives a `HUGEINT`).
fn remainder(a: Value, b: Value, float: bool) -> Result<Value> {
    if a.is_zero() {
        return Ok(Value::zero(if float {
            ValueType::Float64
        } else {
            arithmetic_type(&[a.value_type(), b.value_type()])
        }));
    }
    if b.is_zero() {
        return Err(Error::Invalid(format!(
            "division by zero ({a} % {b}); a % b is defined where b is non-zero or a is zero"
        )));
    }
    if float {
        return Ok(Value::Float(a.as_f64() % b.as_f64()));
    }
    let (x, y) = (
        a.as_i128().unwrap_or_default(),
        b.as_i128().unwrap_or_default(),
    );
    let r = x.checked_rem(y).ok_or_else(|| overflow("%", &[a, b]))?;
    Ok(
        if matches!(a, Value::Huge(_)) || matches!(b, Value::Huge(_)) {
            Value::huge(r)
        } else {
            Value::integer(r)
        },
    )
}

fn compare(op: ScalarOp, a: Value, b: Value) -> bool {
    let order = a.compare(b);
    match op {
        ScalarOp::Eq => order == Some(Ordering::Equal),
        ScalarOp::Ne => order != Some(Ordering::Equal),
        ScalarOp::Lt => order == Some(Ordering::Less),
        ScalarOp::Le => matches!(order, Some(Ordering::Less | Ordering::Equal)),
        ScalarOp::Gt => order == Some(Ordering::Greater),
        _ => matches!(order, Some(Ordering::Greater | Ordering::Equal)),
    }
}

/// An aggregate (Agg) operator.
///
/// An aggregate first lifts each value ([`AggOp::lift`]: `COUNT` counts
/// non-zero values, `ANY` tests them), then combines the lifted values with
/// its [`AggOp::combine`] operator. Over a tensor, it ranges over every
/// coordinate of the aggregated dimensions: absent entries take part with
/// the fill value 0 (so `MAX` over a row whose stored values are all
/// negative is 0 when the row has an absent entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AggOp {
    /// Sum of the values.
    Sum,
    /// Largest value.
    Max,
    /// Smallest value.
    Min,
    /// Number of non-zero values.
    Count,
    /// Whether any value is non-zero.
    Any,
}

impl AggOp {
    /// Every aggregate.
    pub const ALL: [AggOp; 5] = [AggOp::Sum, AggOp::Max, AggOp::Min, AggOp::Count, AggOp::Any];

    /// The name as written (`SUM`, `MAX`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AggOp::Sum => "SUM",
            AggOp::Max => "MAX",
            AggOp::Min => "MIN",
            AggOp::Count => "COUNT",
            AggOp::Any => "ANY",
        }
    }

    /// The aggregate called `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<AggOp> {
        AggOp::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// The binary operator that combines lifted values.
    pub fn combine(self) -> ScalarOp {
        match self {
            AggOp::Sum | AggOp::Count => ScalarOp::Add,
            AggOp::Max => ScalarOp::Greatest,
            AggOp::Min => ScalarOp::Least,
            AggOp::Any => ScalarOp::Or,
        }
    }

    /// The algebra of the combining operator.
    pub fn algebra(self) -> Algebra {
        self.combine().algebra()
    }

    /// A value as the aggregate combines it: `COUNT` maps it to 1 if it is
    /// non-zero, else 0; `ANY` to a boolean; `SUM` turns booleans into
    /// integers; `MAX` and `MIN` keep it.
    pub fn lift(self, value: Value) -> Value {
        match self {
            AggOp::Count => Value::Int(i64::from(!value.is_zero())),
            AggOp::Any => Value::Bool(!value.is_zero()),
            AggOp::Sum => match value {
                Value::Bool(b) => Value::Int(i64::from(b)),
                other => other,
            },
            AggOp::Max | AggOp::Min => value,
        }
    }

    /// Whether combining a value with itself gives it back (`MAX`, `MIN`,
    /// `ANY`): [`AggOp::repeat`] is then the value for any count.
    pub fn idempotent(self) -> bool {
        matches!(self, AggOp::Max | AggOp::Min | AggOp::Any)
    }

    /// The repeated application g(x, n): the combination of `n` copies of
    /// the lifted value `x` (`n·x` for `SUM` and `COUNT`, `x` for the
    /// idempotent `MAX`, `MIN` and `ANY`). `n` must be at least 1.
    pub fn repeat(self, x: Value, n: u128) -> Result<Value> {
        match self {
            AggOp::Max | AggOp::Min | AggOp::Any => Ok(x),
            AggOp::Sum | AggOp::Count => match x {
                Value::Float(f) => Ok(Value::Float(f * n as f64)),
                Value::Huge(_) if x.is_zero() => Ok(Value::huge(0)),
                _ if x.is_zero() => Ok(Value::Int(0)),
                _ => {
                    let i = x.as_i128().unwrap_or_default();
                    let product = i128::try_from(n)
                        .ok()
                        .and_then(|n| i.checked_mul(n))
                        .ok_or_else(|| {
                            Error::Overflow(format!("{} of {n} copies of {i}", self.name()))
                        })?;
                    Ok(match x {
                        Value::Huge(_) => Value::huge(product),
                        _ => Value::integer(product),
                    })
                }
            },
        }
    }

    /// The type of the aggregate of values of type `input`.
    pub fn result_type(self, input: ValueType) -> ValueType {
        match self {
            AggOp::Count => ValueType::Int64,
            AggOp::Any => ValueType::Boolean,
            AggOp::Sum => arithmetic_type(&[input]),
            AggOp::Max | AggOp::Min => input,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<bool>().prop_map(Value::Bool),
            (-6i64..6).prop_map(Value::Int),
            (-12i32..12).prop_map(|x| Value::Float(f64::from(x) / 4.0)),
        ]
    }

    fn same(a: &Result<Value>, b: &Result<Value>) -> bool {
        match (a, b) {
            (Ok(a), Ok(b)) => a.same(*b),
            (Err(_), Err(_)) => true,
            _ => false,
        }
    }

    fn call(op: ScalarOp, args: &[Value]) -> Result<Value> {
        op.apply(args)
    }

    /// Floats that include the edge cases: zeros of both signs,
    /// infinities, NaN, and ordinary values.
    fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            -1e6f64..1e6,
        ]
    }

    proptest! {
        /// The float fast path gives the general dispatch's value, bit for
        /// bit, for every operator and arity it takes.
        #[test]
        fn float_fast_path_is_the_general_one(args in prop::collection::vec(float(), 1..4)) {
            let args: Vec<Value> = args.into_iter().map(Value::Float).collect();
            for op in ScalarOp::ALL {
                if let Some(fast) = op.apply_floats(&args) {
                    let general = op.apply_any(&args);
                    let bits = |v: &Value| match v {
                        Value::Float(x) if x.is_nan() => Some(u64::MAX),
                        Value::Float(x) => Some(x.to_bits()),
                        _ => None,
                    };
                    prop_assert!(
                        general.as_ref().is_ok_and(|g| bits(g).is_some() && bits(g) == bits(&fast)),
                        "{op:?} of {args:?}: {fast:?} against {general:?}"
                    );
                }
            }
        }

        /// Every declared law holds on random booleans, small integers and
        /// small binary fractions (exact in floating point).
        #[test]
        fn declared_laws_hold(x in value(), y in value(), z in value()) {
            for op in ScalarOp::ALL {
                // The laws of `and` and `or` are those of booleans.
                let (x, y, z) = if matches!(op, ScalarOp::And | ScalarOp::Or) {
                    let b = |v: Value| v.cast(ValueType::Boolean);
                    (b(x), b(y), b(z))
                } else {
                    (x, y, z)
                };
                let algebra = op.algebra();
                let binary = op.arity() != Arity::Unary;
                if let Some(e) = algebra.identity {
                    prop_assert!(same(&call(op, &[x, e]), &Ok(x)), "{op:?} identity");
                    prop_assert!(same(&call(op, &[e, x]), &Ok(x)), "{op:?} identity");
                }
                if let Some(a) = algebra.annihilator {
                    let expected = Ok(a.value);
                    if binary {
                        prop_assert!(same(&call(op, &[a.value, x]), &expected), "{op:?} annihilator");
                        if !a.only_first {
                            prop_assert!(same(&call(op, &[x, a.value]), &expected), "{op:?} annihilator");
                        }
                    } else {
                        prop_assert!(same(&call(op, &[a.value]), &expected), "{op:?} annihilator");
                    }
                }
                if algebra.commutative {
                    prop_assert!(same(&call(op, &[x, y]), &call(op, &[y, x])), "{op:?} commutative");
                }
                if algebra.associative {
                    let left = call(op, &[x, y]).and_then(|xy| call(op, &[xy, z]));
                    let right = call(op, &[y, z]).and_then(|yz| call(op, &[x, yz]));
                    prop_assert!(same(&left, &right), "{op:?} associative");
                    prop_assert!(same(&left, &call(op, &[x, y, z])), "{op:?} variadic");
                }
                if algebra.idempotent {
                    prop_assert!(same(&call(op, &[x, x]), &Ok(x)), "{op:?} idempotent");
                }
                if let Some((g, h)) = algebra.homomorphism {
                    // Up to rounding: compared with a relative tolerance.
                    let left = call(g, &[x, y]).and_then(|xy| call(op, &[xy]));
                    let right = call(op, &[x])
                        .and_then(|fx| call(op, &[y]).and_then(|fy| call(h, &[fx, fy])));
                    let (Ok(left), Ok(right)) = (left, right) else {
                        prop_assert!(false, "{op:?} maps {g:?} to {h:?}: an error");
                        unreachable!()
                    };
                    let (l, r) = (left.as_f64(), right.as_f64());
                    prop_assert!((l - r).abs() <= 1e-12 * l.abs().max(r.abs()), "{op:?} maps {g:?} to {h:?}");
                }
                for agg in algebra.distributes_over {
                    let combine = agg.combine();
                    let (a, b) = (agg.lift(y), agg.lift(z));
                    let (left, right) = if binary {
                        (
                            call(combine, &[a, b]).and_then(|ab| call(op, &[x, ab])),
                            call(op, &[x, a]).and_then(|xa| {
                                call(op, &[x, b]).and_then(|xb| call(combine, &[xa, xb]))
                            }),
                        )
                    } else {
                        (
                            call(combine, &[a, b]).and_then(|ab| call(op, &[ab])),
                            call(op, &[a]).and_then(|fa| {
                                call(op, &[b]).and_then(|fb| call(combine, &[fa, fb]))
                            }),
                        )
                    };
                    prop_assert!(same(&left, &right), "{op:?} distributes over {agg:?}");
                }
            }
        }

        /// g(x, n) equals combining n copies of x, and results have the
        /// declared types.
        #[test]
        fn repeat_and_types_agree_with_apply(x in value(), y in value(), n in 1u128..6) {
            for agg in AggOp::ALL {
                let lifted = agg.lift(x);
                let copies = vec![lifted; n as usize];
                let folded = if n == 1 { Ok(lifted) } else { agg.combine().apply(&copies) };
                prop_assert!(same(&agg.repeat(lifted, n), &folded), "{agg:?}");
                prop_assert_eq!(agg.lift(x).value_type(), agg.result_type(x.value_type()));
            }
            for op in ScalarOp::ALL {
                let args: &[Value] = match op.arity() {
                    Arity::Unary => &[x],
                    Arity::Ternary => &[x, y, x],
                    _ => &[x, y],
                };
                let types: Vec<ValueType> = args.iter().map(|a| a.value_type()).collect();
                if let Ok(result) = op.apply(args) {
                    prop_assert_eq!(result.value_type(), op.result_type(&types), "{:?}", op);
                }
            }
        }
    }

    proptest! {
        /// `greatest` and `least` do not depend on the order of their
        /// arguments, NaN included (it ranks above every number), so
        /// neither do `MAX` and `MIN` on any plan.
        #[test]
        fn greatest_and_least_take_any_order(args in prop::collection::vec(float(), 2..5)) {
            let args: Vec<Value> = args.into_iter().map(Value::Float).collect();
            let mut reversed = args.clone();
            reversed.reverse();
            for op in [ScalarOp::Greatest, ScalarOp::Least] {
                let (a, b) = (op.apply(&args)?, op.apply(&reversed)?);
                prop_assert!((a.is_nan() && b.is_nan()) || a.same(b), "{:?}: {:?} against {:?}", op, a, b);
            }
            let nan = args.iter().any(|a| a.is_nan());
            let greatest = ScalarOp::Greatest.apply(&args)?;
            prop_assert_eq!(greatest.is_nan(), nan);
            let least = ScalarOp::Least.apply(&args)?;
            prop_assert_eq!(least.is_nan(), args.iter().all(|a| a.is_nan()));
        }
    }

    #[test]
    fn ifelse_picks_a_branch_and_widens_its_type() {
        let pick = |c, a, b| ScalarOp::IfElse.apply(&[c, a, b]).ok();
        assert_eq!(
            pick(Value::Bool(true), Value::Int(2), Value::Int(3)),
            Some(Value::Int(2))
        );
        assert_eq!(
            pick(Value::Int(0), Value::Int(2), Value::Float(0.5)),
            Some(Value::Float(0.5))
        );
        assert_eq!(
            pick(Value::Float(-1.0), Value::Int(2), Value::Float(0.5)),
            Some(Value::Float(2.0))
        );
    }

    #[test]
    fn integer_arithmetic_is_exact_or_an_error() {
        let big = Value::Int(i64::MAX);
        let apply = |op: ScalarOp, args: &[Value]| op.apply(args).ok();
        // Past 64 bits a BIGINT result is the exact HUGEINT ...
        let past = Value::huge(i128::from(i64::MAX) + 1);
        assert_eq!(apply(ScalarOp::Add, &[big, Value::Int(1)]), Some(past));
        assert_eq!(
            apply(ScalarOp::Abs, &[Value::Int(i64::MIN)]),
            Some(Value::huge(1 << 63))
        );
        assert_eq!(
            apply(ScalarOp::Neg, &[Value::Int(i64::MIN)]),
            Some(Value::huge(1 << 63))
        );
        assert_eq!(
            apply(ScalarOp::Mul, &[big, big, Value::Int(-1)]),
            Some(Value::huge(-(i128::from(i64::MAX) * i128::from(i64::MAX))))
        );
        assert_eq!(
            AggOp::Sum.repeat(big, 2).ok(),
            Some(Value::huge(i128::from(i64::MAX) * 2))
        );
        // ... and a fold that passes 64 bits and comes back is a BIGINT.
        assert_eq!(
            apply(ScalarOp::Add, &[big, big, Value::Int(-i64::MAX)]),
            Some(big)
        );
        assert_eq!(
            apply(ScalarOp::Sub, &[past, Value::Int(1)]),
            Some(Value::huge(i128::from(i64::MAX))),
            "a HUGEINT argument makes a HUGEINT"
        );
        assert_eq!(
            apply(ScalarOp::Add, &[Value::huge(2), Value::Bool(true)]),
            Some(Value::huge(3))
        );
        assert_eq!(
            apply(ScalarOp::Mul, &[Value::huge(2), Value::Float(0.25)]),
            Some(Value::Float(0.5))
        );
        assert_eq!(
            apply(ScalarOp::Lt, &[Value::Int(i64::MAX), past]),
            Some(Value::Bool(true))
        );
        assert_eq!(
            apply(ScalarOp::Greatest, &[past, Value::Int(3)]),
            Some(past)
        );
        // Past 128 bits it is an error, never a wrap.
        let huge = Value::huge(i128::MAX);
        for (op, args) in [
            (ScalarOp::Add, vec![huge, Value::Int(1)]),
            (ScalarOp::Sub, vec![Value::huge(i128::MIN), Value::Int(1)]),
            (ScalarOp::Mul, vec![big, big, big]),
            (ScalarOp::Neg, vec![Value::huge(i128::MIN)]),
            (ScalarOp::Abs, vec![Value::huge(i128::MIN)]),
        ] {
            let error = op.apply(&args).unwrap_err();
            assert!(matches!(error, Error::Overflow(_)), "{op:?}: {error}");
        }
        assert!(matches!(
            AggOp::Sum.repeat(huge, 2),
            Err(Error::Overflow(_))
        ));
        assert_eq!(
            AggOp::Count.repeat(Value::Int(1), 1 << 70).ok(),
            Some(Value::huge(1 << 70))
        );
        assert_eq!(
            ScalarOp::Div.apply(&[Value::Int(3), Value::Int(2)]).ok(),
            Some(Value::Float(1.5))
        );
        assert_eq!(
            ScalarOp::Div.apply(&[Value::Int(0), Value::Int(0)]).ok(),
            Some(Value::Float(0.0))
        );
        assert!(
            ScalarOp::Div
                .apply(&[Value::Int(1), Value::Int(0)])
                .is_err()
        );
        assert_eq!(
            ScalarOp::Mul
                .apply(&[Value::Int(0), Value::Float(f64::NAN)])
                .ok(),
            Some(Value::Float(0.0))
        );
    }
}
