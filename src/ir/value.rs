//! Scalar values of the IR and the type rules that combine them.
//!
//! A value is a boolean, an exact 64-bit integer, an exact 128-bit integer
//! (`HUGEINT`) or a 64-bit float, the annotation types a stored tensor can
//! hold ([`ValueType`]). Types rank `BOOLEAN < BIGINT < HUGEINT < DOUBLE`;
//! arithmetic on mixed types promotes to the higher one, with booleans
//! counting as 0 and 1 (see [`ScalarOp`](super::ScalarOp) for the rules of
//! each operator). Integer arithmetic whose 64-bit result would overflow
//! gives the exact 128-bit result instead ([`Value::integer`]); past 128
//! bits it is an error. The fill value of every type is zero (`false`, `0`,
//! `0.0`).
//!
//! A 128-bit integer is held as [`Int128`], two 64-bit words aligned to 8
//! bytes, so that a `Value` takes 24 bytes rather than the 32 an `i128`
//! field (aligned to 16) would make it; the executor's fast path does not
//! hold `Value`s at all (it runs on `i64`, `i128` or `f64` directly).

use std::cmp::Ordering;
use std::fmt;

use arrow::array::{Array, BooleanArray, Decimal128Array, Float64Array, Int64Array};

use crate::error::{Error, Result};
use crate::storage::ValueType;

/// One scalar: what an entry of a tensor holds.
///
/// The tag is a whole word (`repr(u64)`), so every variant's payload
/// starts at the second word: a value is copied as three words. With a
/// one-byte tag the boolean sits in byte 1, and the copies of returned
/// values in the general loop nest's expression evaluation moved bytes 1
/// to 7 as overlapping pieces, which stalled reading them (about a third
/// of that evaluation's time on the TPC-H self-join).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u64)]
pub enum Value {
    /// A boolean; counts as 0 or 1 in arithmetic.
    Bool(bool),
    /// An exact 64-bit integer.
    Int(i64),
    /// An exact 128-bit integer (`HUGEINT`).
    Huge(Int128),
    /// A 64-bit float.
    Float(f64),
}

/// An exact 128-bit integer stored as two 64-bit words (8-byte aligned; see
/// the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Int128 {
    hi: i64,
    lo: u64,
}

impl Int128 {
    /// The integer `i`.
    #[inline]
    pub const fn new(i: i128) -> Int128 {
        Int128 {
            hi: (i >> 64) as i64,
            lo: i as u64,
        }
    }

    /// The integer.
    #[inline]
    pub const fn get(self) -> i128 {
        ((self.hi as i128) << 64) | self.lo as i128
    }
}

impl fmt::Debug for Int128 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.get())
    }
}

impl Value {
    /// The zero (fill value) of type `ty`.
    pub fn zero(ty: ValueType) -> Value {
        match ty {
            ValueType::Boolean => Value::Bool(false),
            ValueType::Int64 => Value::Int(0),
            ValueType::Int128 => Value::Huge(Int128::new(0)),
            ValueType::Float64 => Value::Float(0.0),
        }
    }

    /// The integer `i`: a `BIGINT` when it fits in 64 bits, else a
    /// `HUGEINT` (how integer arithmetic promotes on overflow).
    #[inline]
    pub fn integer(i: i128) -> Value {
        match i64::try_from(i) {
            Ok(small) => Value::Int(small),
            Err(_) => Value::Huge(Int128::new(i)),
        }
    }

    /// The `HUGEINT` `i`.
    #[inline]
    pub fn huge(i: i128) -> Value {
        Value::Huge(Int128::new(i))
    }

    /// The type of this value.
    pub fn value_type(self) -> ValueType {
        match self {
            Value::Bool(_) => ValueType::Boolean,
            Value::Int(_) => ValueType::Int64,
            Value::Huge(_) => ValueType::Int128,
            Value::Float(_) => ValueType::Float64,
        }
    }

    /// Whether the value is zero (`false`, `0` or `±0.0`): the fill value.
    pub fn is_zero(self) -> bool {
        match self {
            Value::Bool(b) => !b,
            Value::Int(i) => i == 0,
            Value::Huge(h) => h.get() == 0,
            Value::Float(f) => f == 0.0,
        }
    }

    /// The value as a float (booleans are 0 and 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Bool(b) => f64::from(u8::from(b)),
            Value::Int(i) => i as f64,
            Value::Huge(h) => h.get() as f64,
            Value::Float(f) => f,
        }
    }

    /// The value as a 64-bit integer, for booleans and integers that fit;
    /// `None` for floats and `HUGEINT`s beyond 64 bits.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Value::Bool(b) => Some(i64::from(b)),
            Value::Int(i) => Some(i),
            Value::Huge(h) => i64::try_from(h.get()).ok(),
            Value::Float(_) => None,
        }
    }

    /// The value as a 128-bit integer, for booleans and integers; `None`
    /// for floats.
    #[inline]
    pub fn as_i128(self) -> Option<i128> {
        match self {
            Value::Bool(b) => Some(i128::from(b)),
            Value::Int(i) => Some(i128::from(i)),
            Value::Huge(h) => Some(h.get()),
            Value::Float(_) => None,
        }
    }

    /// Numeric equality across types: `true == 1 == 1.0`. Integers compare
    /// exactly; NaN equals nothing.
    pub fn same(self, other: Value) -> bool {
        self.compare(other) == Some(Ordering::Equal)
    }

    /// Whether the value is a float NaN.
    pub fn is_nan(self) -> bool {
        matches!(self, Value::Float(x) if x.is_nan())
    }

    /// Numeric order across types; integers compare exactly, and `None`
    /// when a NaN is involved.
    pub fn compare(self, other: Value) -> Option<Ordering> {
        match (self.as_i128(), other.as_i128()) {
            (Some(a), Some(b)) => Some(a.cmp(&b)),
            _ => self.as_f64().partial_cmp(&other.as_f64()),
        }
    }

    /// The value converted to type `ty` (numeric conversion; a float
    /// converted to an integer truncates, which the type rules never need).
    /// An integer keeps its exact value: converted to `BIGINT`, an integer
    /// beyond 64 bits stays a `HUGEINT` (see [`Value::integer`]).
    pub fn cast(self, ty: ValueType) -> Value {
        match (ty, self.as_i128()) {
            (ValueType::Boolean, _) => Value::Bool(!self.is_zero()),
            (ValueType::Int64, Some(i)) => Value::integer(i),
            (ValueType::Int64, None) => Value::Int(self.as_f64() as i64),
            (ValueType::Int128, Some(i)) => Value::huge(i),
            (ValueType::Int128, None) => Value::huge(self.as_f64() as i128),
            (ValueType::Float64, _) => Value::Float(self.as_f64()),
        }
    }

    /// The value converted to type `ty` as SQL's `CAST` does: like
    /// [`Value::cast`], but a float is rounded to the nearest integer
    /// (halves away from zero, as DuckDB casts), and an integer that does
    /// not fit the target type, or a float outside it or not finite, is an
    /// error.
    pub fn cast_exact(self, ty: ValueType) -> Result<Value> {
        let out_of_range = || Error::Overflow(format!("CAST of {self} to {}", ty.sql_name()));
        match (ty, self) {
            (ValueType::Int64, Value::Huge(h)) => i64::try_from(h.get())
                .map(Value::Int)
                .map_err(|_| out_of_range()),
            (ValueType::Int64 | ValueType::Int128, Value::Float(f)) => {
                let limit = if ty == ValueType::Int64 { 63 } else { 127 };
                let bound = 2f64.powi(limit);
                let f = f.round();
                if f.is_finite() && f >= -bound && f < bound {
                    Ok(Value::Float(f).cast(ty))
                } else {
                    Err(out_of_range())
                }
            }
            _ => Ok(self.cast(ty)),
        }
    }
}

impl fmt::Display for Value {
    /// Writes the value as a literal of tensor index notation: `true`,
    /// `42`, and floats always with a decimal point or exponent (`2.0`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Huge(h) => write!(f, "{}", h.get()),
            Value::Float(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 => {
                write!(f, "{x:.1}")
            }
            Value::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// The higher of two types in the order
/// `BOOLEAN < BIGINT < HUGEINT < DOUBLE`.
pub fn wider(a: ValueType, b: ValueType) -> ValueType {
    let rank = |t: ValueType| match t {
        ValueType::Boolean => 0,
        ValueType::Int64 => 1,
        ValueType::Int128 => 2,
        ValueType::Float64 => 3,
    };
    if rank(a) >= rank(b) { a } else { b }
}

/// The type of arithmetic on `types`: `DOUBLE` if any is, else `HUGEINT`
/// if any is, else `BIGINT` (whose values promote to `HUGEINT` where they
/// would overflow).
pub fn arithmetic_type(types: &[ValueType]) -> ValueType {
    if types.contains(&ValueType::Float64) {
        ValueType::Float64
    } else if types.contains(&ValueType::Int128) {
        ValueType::Int128
    } else {
        ValueType::Int64
    }
}

/// The values of an annotation column (Int64, Decimal128 of scale 0,
/// Float64 or Boolean).
pub fn column_values(column: &dyn Array) -> Result<Vec<Value>> {
    let any = column.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        Ok(a.values().iter().map(|&v| Value::Int(v)).collect())
    } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
        Ok(a.values().iter().map(|&v| Value::huge(v)).collect())
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        Ok(a.values().iter().map(|&v| Value::Float(v)).collect())
    } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
        Ok(a.values().iter().map(Value::Bool).collect())
    } else {
        Err(Error::Internal(format!(
            "an annotation column of type {}",
            column.data_type()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_across_types() {
        assert!(Value::Bool(true).same(Value::Int(1)));
        assert!(Value::Int(2).same(Value::Float(2.0)));
        assert!(!Value::Float(f64::NAN).same(Value::Float(f64::NAN)));
        assert!(Value::Int(i64::MAX).compare(Value::Int(i64::MAX - 1)) == Some(Ordering::Greater));
        assert_eq!(
            Value::Float(0.5).cast(ValueType::Boolean),
            Value::Bool(true)
        );
    }

    #[test]
    fn hugeints_are_exact_and_narrow_only_when_promoted() {
        for i in [0, 1, -1, i128::MAX, i128::MIN, 1 << 64, -(1 << 64) + 7] {
            assert_eq!(Int128::new(i).get(), i);
        }
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(Value::integer(5), Value::Int(5));
        assert_eq!(Value::integer(1 << 63).value_type(), ValueType::Int128);
        assert_eq!(Value::huge(5).value_type(), ValueType::Int128);
        assert_eq!(Value::huge(5).as_i64(), Some(5));
        assert_eq!(Value::huge(1 << 63).as_i64(), None);
        assert!(Value::huge(1 << 63).compare(Value::Int(i64::MAX)) == Some(Ordering::Greater));
        assert!(Value::huge(3).same(Value::Float(3.0)));
        assert_eq!(Value::Int(7).cast(ValueType::Int128), Value::huge(7));
        assert_eq!(Value::huge(7).cast(ValueType::Int64), Value::Int(7));
        assert_eq!(
            Value::huge(1 << 70).cast(ValueType::Int64),
            Value::huge(1 << 70),
            "an integer keeps its value"
        );
        assert!(matches!(
            Value::huge(1 << 70).cast_exact(ValueType::Int64),
            Err(Error::Overflow(_))
        ));
        assert_eq!(
            Value::Float(-2.75).cast_exact(ValueType::Int128).ok(),
            Some(Value::huge(-3))
        );
        for x in [f64::NAN, f64::INFINITY, 1e39] {
            assert!(
                Value::Float(x).cast_exact(ValueType::Int128).is_err(),
                "{x}"
            );
        }
        assert_eq!(Value::huge(i128::MIN).to_string(), i128::MIN.to_string());
        assert_eq!(
            wider(ValueType::Int64, ValueType::Int128),
            ValueType::Int128
        );
        assert_eq!(
            wider(ValueType::Float64, ValueType::Int128),
            ValueType::Float64
        );
    }

    #[test]
    fn literals_print_with_their_type() {
        assert_eq!(Value::Float(2.0).to_string(), "2.0");
        assert_eq!(Value::Float(0.25).to_string(), "0.25");
        assert_eq!(Value::Float(1e20).to_string(), "1e20");
        assert_eq!(Value::Int(-3).to_string(), "-3");
        assert_eq!(Value::Bool(false).to_string(), "false");
    }
}
