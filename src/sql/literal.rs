//! Constants in SQL text: the values of `INSERT ... VALUES` rows and of
//! table-function options.

use sqlparser::ast::{Expr, UnaryOperator, Value};

use crate::bound::Literal;
use crate::error::{Error, Result};

impl Literal {
    /// The constant that `expr` denotes: a number, a string, a boolean, or
    /// one of those negated or in parentheses.
    pub fn from_expr(expr: &Expr) -> Result<Literal> {
        match expr {
            Expr::Value(value) => match &value.value {
                Value::Number(text, _) => parse_number(text),
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
                    Ok(Literal::String(s.clone()))
                }
                Value::Boolean(b) => Ok(Literal::Boolean(*b)),
                Value::Null => Err(Error::NotSupported(
                    "NULL values (an absent entry is simply not stored)".to_string(),
                )),
                other => Err(Error::NotSupported(format!("the constant {other}"))),
            },
            Expr::Nested(inner) => Literal::from_expr(inner),
            // A number is parsed with its sign, so that i64::MIN is reachable.
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr: inner,
            } if is_number(inner) => parse_number(&format!("-{inner}")),
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr: inner,
            } => match Literal::from_expr(inner)? {
                Literal::Integer(v) => v
                    .checked_neg()
                    .map(Literal::Integer)
                    .ok_or_else(|| Error::Overflow(format!("-({v}) does not fit in 64 bits"))),
                Literal::Float(v) => Ok(Literal::Float(-v)),
                other => Err(Error::Type(format!("cannot negate {other}"))),
            },
            Expr::UnaryOp {
                op: UnaryOperator::Plus,
                expr: inner,
            } => Literal::from_expr(inner),
            other => Err(Error::NotSupported(format!(
                "the expression {other} here (only constants)"
            ))),
        }
    }

    /// The SQL type name of the constant, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Literal::Integer(_) => "BIGINT",
            Literal::Float(_) => "DOUBLE",
            Literal::String(_) => "VARCHAR",
            Literal::Boolean(_) => "BOOLEAN",
        }
    }
}

fn is_number(expr: &Expr) -> bool {
    matches!(expr, Expr::Value(v) if matches!(v.value, Value::Number(..)))
}

fn parse_number(text: &str) -> Result<Literal> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let integral = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    if integral {
        return text
            .parse()
            .map(Literal::Integer)
            .map_err(|_| Error::Overflow(format!("the integer {text} does not fit in 64 bits")));
    }
    text.parse()
        .map(Literal::Float)
        .map_err(|_| Error::Syntax(format!("'{text}' is not a number")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::DuckDbDialect;
    use sqlparser::parser::Parser;

    fn literal(sql: &str) -> Result<Literal> {
        let expr = Parser::new(&DuckDbDialect {})
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| Error::Syntax(e.to_string()))?;
        Literal::from_expr(&expr)
    }

    #[test]
    fn constants() {
        assert_eq!(literal("42").unwrap(), Literal::Integer(42));
        assert_eq!(literal("-(2.5)").unwrap(), Literal::Float(-2.5));
        assert_eq!(literal("'x'").unwrap(), Literal::String("x".into()));
        assert_eq!(literal("true").unwrap(), Literal::Boolean(true));
        assert_eq!(
            literal("-9223372036854775808").unwrap(),
            Literal::Integer(i64::MIN)
        );
    }

    #[test]
    fn rejects_what_is_not_a_constant() {
        assert!(matches!(
            literal("99999999999999999999"),
            Err(Error::Overflow(_))
        ));
        assert!(matches!(literal("NULL"), Err(Error::NotSupported(_))));
        assert!(matches!(literal("a + 1"), Err(Error::NotSupported(_))));
    }
}
