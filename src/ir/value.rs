//! Scalar values of the IR and the type rules that combine them.
//!
//! A value is a boolean, an exact 64-bit integer or a 64-bit float, the
//! three annotation types a stored tensor can hold ([`ValueType`]). Types
//! rank `BOOLEAN < BIGINT < DOUBLE`; arithmetic on mixed types promotes to
//! the higher one, with booleans counting as 0 and 1 (see
//! [`ScalarOp`](super::ScalarOp) for the rules of each operator). The fill
//! value of every type is zero (`false`, `0`, `0.0`).

use std::cmp::Ordering;
use std::fmt;

use arrow::array::{Array, BooleanArray, Float64Array, Int64Array};

use crate::error::{Error, Result};
use crate::storage::ValueType;

/// One scalar: what an entry of a tensor holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A boolean; counts as 0 or 1 in arithmetic.
    Bool(bool),
    /// An exact 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
}

impl Value {
    /// The zero (fill value) of type `ty`.
    pub fn zero(ty: ValueType) -> Value {
        match ty {
            ValueType::Boolean => Value::Bool(false),
            ValueType::Int64 => Value::Int(0),
            ValueType::Float64 => Value::Float(0.0),
        }
    }

    /// The type of this value.
    pub fn value_type(self) -> ValueType {
        match self {
            Value::Bool(_) => ValueType::Boolean,
            Value::Int(_) => ValueType::Int64,
            Value::Float(_) => ValueType::Float64,
        }
    }

    /// Whether the value is zero (`false`, `0` or `±0.0`): the fill value.
    pub fn is_zero(self) -> bool {
        match self {
            Value::Bool(b) => !b,
            Value::Int(i) => i == 0,
            Value::Float(f) => f == 0.0,
        }
    }

    /// The value as a float (booleans are 0 and 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Bool(b) => f64::from(u8::from(b)),
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
        }
    }

    /// The value as an integer, for booleans and integers; `None` for floats.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Value::Bool(b) => Some(i64::from(b)),
            Value::Int(i) => Some(i),
            Value::Float(_) => None,
        }
    }

    /// Numeric equality across types: `true == 1 == 1.0`. Integers compare
    /// exactly; NaN equals nothing.
    pub fn same(self, other: Value) -> bool {
        self.compare(other) == Some(Ordering::Equal)
    }

    /// Numeric order across types; integers compare exactly, and `None`
    /// when a NaN is involved.
    pub fn compare(self, other: Value) -> Option<Ordering> {
        match (self.as_i64(), other.as_i64()) {
            (Some(a), Some(b)) => Some(a.cmp(&b)),
            _ => self.as_f64().partial_cmp(&other.as_f64()),
        }
    }

    /// The value converted to type `ty` (numeric conversion; a float
    /// converted to an integer truncates, which the type rules never need).
    pub fn cast(self, ty: ValueType) -> Value {
        match ty {
            ValueType::Boolean => Value::Bool(!self.is_zero()),
            ValueType::Int64 => Value::Int(self.as_i64().unwrap_or(self.as_f64() as i64)),
            ValueType::Float64 => Value::Float(self.as_f64()),
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
            Value::Float(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 => {
                write!(f, "{x:.1}")
            }
            Value::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// The higher of two types in the order `BOOLEAN < BIGINT < DOUBLE`.
pub fn wider(a: ValueType, b: ValueType) -> ValueType {
    let rank = |t: ValueType| match t {
        ValueType::Boolean => 0,
        ValueType::Int64 => 1,
        ValueType::Float64 => 2,
    };
    if rank(a) >= rank(b) { a } else { b }
}

/// The type of arithmetic on `types`: `DOUBLE` if any is, else `BIGINT`.
pub fn arithmetic_type(types: &[ValueType]) -> ValueType {
    if types.contains(&ValueType::Float64) {
        ValueType::Float64
    } else {
        ValueType::Int64
    }
}

/// The values of an annotation column (Int64, Float64 or Boolean).
pub fn column_values(column: &dyn Array) -> Result<Vec<Value>> {
    let any = column.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        Ok(a.values().iter().map(|&v| Value::Int(v)).collect())
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
    fn literals_print_with_their_type() {
        assert_eq!(Value::Float(2.0).to_string(), "2.0");
        assert_eq!(Value::Float(0.25).to_string(), "0.25");
        assert_eq!(Value::Float(1e20).to_string(), "1e20");
        assert_eq!(Value::Int(-3).to_string(), "-3");
        assert_eq!(Value::Bool(false).to_string(), "false");
    }
}
