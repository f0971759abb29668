//! The e-graph language of the `saturate` phase: SPORES' relational
//! algebra (`*` join, `+` union, `sum` one-index aggregate) with the
//! pointwise operators of the IR as further nodes.
//!
//! ```text
//! (+ a b)        a + b                      (- b is (+ a (* -1 b)))
//! (* a b)        a * b
//! (sum i a)      SUM(i) a, over one index   (i is a `Var` node)
//! (pow a b)      power(a, b)
//! 2, 2.5, true   a literal (`Num`)
//! @3             the third leaf: an input, an alias or coord(i)
//! (exp a) ...    any other map or aggregate (`Op`), its indices first
//! i              an index variable, as the first child of `sum`
//! ```
//!
//! Leaves are kept in a table beside the e-graph ([`super::analysis`]) so
//! that the language needs no copy of a tensor reference per node.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use egg::{Id, Symbol, define_language};

use crate::ir::{AggOp, Int128, ScalarOp, Value};

define_language! {
    /// A node of the e-graph (see the module documentation).
    pub enum Sp {
        "+" = Add([Id; 2]),
        "*" = Mul([Id; 2]),
        "sum" = Sum([Id; 2]),
        "pow" = Pow([Id; 2]),
        Num(Const),
        Leaf(LeafId),
        Op(OpKind, Vec<Id>),
        Var(Name),
    }
}

/// An index variable's name: an interned string ordered by its text (not
/// by when it was interned), so that the e-graph's node order, and with it
/// which of two equally cheap terms is extracted, does not depend on what
/// else the process interned first.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Name(Symbol);

impl Name {
    /// The name's text.
    pub fn as_str(&self) -> &'static str {
        self.0.as_str()
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name(Symbol::from(text))
    }
}

impl From<String> for Name {
    fn from(text: String) -> Name {
        Name(Symbol::from(text))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Name {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Name, Self::Err> {
        Ok(Name::from(text))
    }
}

/// A literal as an e-graph node: a [`Value`] compared by type and bits, so
/// that `2` and `2.0` are different nodes (their types differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Const {
    /// A boolean.
    Bool(bool),
    /// A `BIGINT`.
    Int(i64),
    /// A `HUGEINT`.
    Huge(i128),
    /// A `DOUBLE`, by its bits.
    Float(u64),
}

impl Const {
    /// The literal of `value`.
    pub fn of(value: Value) -> Const {
        match value {
            Value::Bool(b) => Const::Bool(b),
            Value::Int(i) => Const::Int(i),
            Value::Huge(h) => Const::Huge(h.get()),
            Value::Float(f) => Const::Float(f.to_bits()),
        }
    }

    /// Its value.
    pub fn value(self) -> Value {
        match self {
            Const::Bool(b) => Value::Bool(b),
            Const::Int(i) => Value::Int(i),
            Const::Huge(h) => Value::Huge(Int128::new(h)),
            Const::Float(bits) => Value::Float(f64::from_bits(bits)),
        }
    }
}

impl fmt::Display for Const {
    /// `true`, `3`, `3h` (a `HUGEINT`), `3.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Const::Huge(h) => write!(f, "{h}h"),
            other => write!(f, "{}", other.value()),
        }
    }
}

impl FromStr for Const {
    type Err = ();

    fn from_str(text: &str) -> Result<Const, ()> {
        match text {
            "true" => return Ok(Const::Bool(true)),
            "false" => return Ok(Const::Bool(false)),
            _ => {}
        }
        if let Some(huge) = text.strip_suffix('h') {
            return huge.parse().map(Const::Huge).map_err(|_| ());
        }
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Const::Int(i));
        }
        if text.contains(['.', 'e', 'E']) || matches!(text, "inf" | "-inf" | "NaN") {
            return text
                .parse::<f64>()
                .map(|f| Const::Float(f.to_bits()))
                .map_err(|_| ());
        }
        Err(())
    }
}

/// A leaf of the e-graph: a position in the leaf table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeafId(pub u32);

impl fmt::Display for LeafId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.0)
    }
}

impl FromStr for LeafId {
    type Err = ();

    fn from_str(text: &str) -> Result<LeafId, ()> {
        text.strip_prefix('@')
            .and_then(|n| n.parse().ok())
            .map(LeafId)
            .ok_or(())
    }
}

/// An operator without a node of its own: a map, or an aggregate other
/// than a `SUM` (its children are its index variables, then its body).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// A pointwise operator.
    Map(ScalarOp),
    /// An aggregate over `.1` indices.
    Agg(AggOp, u8),
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpKind::Map(op) => match op.function_name() {
                Some(name) => f.write_str(name),
                None => write!(f, "{}", op_symbol(*op)),
            },
            OpKind::Agg(op, n) => write!(f, "{}/{n}", op.name()),
        }
    }
}

/// The written name of an operator without a function name (`/`, `<`,
/// `and`, ...); `+ - *` get their own nodes and never come here.
fn op_symbol(op: ScalarOp) -> String {
    match op {
        ScalarOp::Sub => "minus".to_string(),
        ScalarOp::Neg => "neg".to_string(),
        other => other.symbol().unwrap_or("?").to_string(),
    }
}

impl FromStr for OpKind {
    type Err = ();

    fn from_str(text: &str) -> Result<OpKind, ()> {
        if let Some((name, n)) = text.split_once('/')
            && let (Some(op), Ok(n)) = (AggOp::from_name(name), n.parse())
        {
            return Ok(OpKind::Agg(op, n));
        }
        if let Some(op) = ScalarOp::from_function_name(text) {
            return Ok(OpKind::Map(op));
        }
        ScalarOp::ALL
            .into_iter()
            .filter(|op| !matches!(op, ScalarOp::Add | ScalarOp::Mul))
            .find(|op| op_symbol(*op) == text)
            .map(OpKind::Map)
            .ok_or(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_print_and_parse_back() {
        for value in [
            Value::Bool(true),
            Value::Int(-3),
            Value::huge(1 << 80),
            Value::Float(2.0),
            Value::Float(-0.25),
        ] {
            let c = Const::of(value);
            assert_eq!(c.to_string().parse::<Const>(), Ok(c), "{value}");
        }
        assert_ne!(Const::of(Value::Int(2)), Const::of(Value::Float(2.0)));
        for kind in [
            OpKind::Map(ScalarOp::Exp),
            OpKind::Map(ScalarOp::Div),
            OpKind::Map(ScalarOp::Lt),
            OpKind::Agg(AggOp::Max, 2),
        ] {
            assert_eq!(kind.to_string().parse::<OpKind>(), Ok(kind), "{kind}");
        }
        let expr: egg::RecExpr<Sp> = "(sum i (* @0 (exp @1)))".parse().unwrap();
        assert_eq!(expr.to_string(), "(sum i (* @0 (exp @1)))");
    }
}
