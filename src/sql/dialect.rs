//! einsql's SQL dialect: DuckDB's, as `sqlparser` has it, with one
//! shortcut in parsing expressions.
//!
//! For every expression operand `sqlparser` first tries to read a typed
//! string literal (`DATE '2024-01-01'`): it parses the operand as a data
//! type, fails, builds an error message and backtracks. In a query that
//! joins many tables the operands are mostly column references and
//! numbers (`e0.dst = e1.src AND l0.label = 12`), and that failed attempt
//! was about a third of parsing them. [`EinsqlDialect::parse_prefix`]
//! reads those two operand shapes directly, with the result the default
//! path gives (the tests parse every statement of the SQL test files both
//! ways and compare the trees), and leaves every other operand to
//! `sqlparser`. Everything else is DuckDB's: the dialect reports itself
//! as [`DuckDbDialect`], so `sqlparser`'s checks for DuckDB apply, and
//! answers each of the options DuckDB sets as DuckDB does.

use std::any::TypeId;

use sqlparser::ast::{Expr, Value, ValueWithSpan};
use sqlparser::dialect::{Dialect, DuckDbDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// DuckDB's dialect with the operand shortcut (see the module
/// documentation).
#[derive(Debug, Default, Clone, Copy)]
pub struct EinsqlDialect;

/// Answers each option that [`DuckDbDialect`] sets as it does.
macro_rules! as_duckdb {
    ($($option:ident),* $(,)?) => {
        $(fn $option(&self) -> bool {
            DuckDbDialect.$option()
        })*
    };
}

impl Dialect for EinsqlDialect {
    fn dialect(&self) -> TypeId {
        DuckDbDialect.dialect()
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        DuckDbDialect.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        DuckDbDialect.is_identifier_part(ch)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        DuckDbDialect.identifier_quote_style(identifier)
    }

    as_duckdb!(
        supports_trailing_commas,
        supports_filter_during_aggregation,
        supports_group_by_expr,
        supports_bitwise_shift_operators,
        supports_named_fn_args_with_eq_operator,
        supports_named_fn_args_with_assignment_operator,
        supports_dictionary_syntax,
        support_map_literal_syntax,
        supports_lambda_functions,
        allow_extract_single_quotes,
        supports_explain_with_utility_options,
        supports_load_extension,
        supports_array_typedef_with_brackets,
        supports_from_first_select,
        supports_order_by_all,
        supports_select_wildcard_exclude,
        supports_notnull_operator,
        supports_install,
        supports_detach,
        supports_select_wildcard_replace,
        supports_comma_separated_trim,
        supports_numeric_literal_underscores,
    );

    /// A number, or an unquoted word that is no keyword followed by a
    /// token that makes it a plain name (`.`, a comparison, `,`, `)`,
    /// `;`, `AND`, `OR` or the end): no data type, function call, lambda
    /// or string introducer can start there. `sqlparser` reads the rest
    /// of a qualified name (`.dst`) after this, as it would have.
    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let first = parser.peek_token_ref();
        let expr = match &first.token {
            Token::Number(digits, long) => Expr::Value(ValueWithSpan {
                value: Value::Number(digits.clone(), *long),
                span: first.span,
            }),
            Token::Word(word)
                if word.quote_style.is_none() && word.keyword == Keyword::NoKeyword =>
            {
                let plain = match &parser.peek_nth_token_ref(1).token {
                    Token::Period
                    | Token::Eq
                    | Token::Neq
                    | Token::Lt
                    | Token::Gt
                    | Token::LtEq
                    | Token::GtEq
                    | Token::Comma
                    | Token::RParen
                    | Token::SemiColon
                    | Token::EOF => true,
                    Token::Word(next) => {
                        next.quote_style.is_none()
                            && matches!(next.keyword, Keyword::AND | Keyword::OR)
                    }
                    _ => false,
                };
                if !plain {
                    return None;
                }
                Expr::Identifier(word.to_ident(first.span))
            }
            _ => return None,
        };
        parser.advance_token();
        Some(Ok(expr))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sqlparser::dialect::DuckDbDialect;

    use super::*;

    /// The statements `text` parses to (or the error) as text, with every
    /// token's position.
    fn parsed(dialect: &dyn Dialect, text: &str) -> String {
        format!("{:?}", Parser::parse_sql(dialect, text))
    }

    #[test]
    fn the_test_statements_parse_as_with_duckdb() {
        for text in crate::sql::corpus::statements() {
            assert_eq!(
                parsed(&EinsqlDialect, &text),
                parsed(&DuckDbDialect, &text),
                "{text}"
            );
        }
    }

    #[test]
    fn the_shortcut_reads_names_and_numbers() {
        let text = "SELECT COUNT(*) FROM e e0, e e1 WHERE e0.dst = e1.src AND e0.w > 3 OR x = 1";
        assert_eq!(parsed(&EinsqlDialect, text), parsed(&DuckDbDialect, text));
        assert!(!parsed(&EinsqlDialect, text).contains("Err"));
    }

    /// Pieces of expressions around the shortcut's operands.
    const PIECES: &[&str] = &[
        "a",
        "t.b",
        "t.b.c",
        "3",
        "12L",
        "'s'",
        "f(",
        "(",
        ")",
        ",",
        "=",
        "<",
        ">=",
        "<>",
        "AND",
        "OR",
        "NOT",
        "->",
        "+",
        "*",
        "::",
        "INT",
        "DATE",
        "'2024-01-01'",
        "[1]",
        ".",
        "x ->",
        "CASE",
        "WHEN",
        "THEN",
        "END",
        "IS",
        "NULL",
        "AS",
        "_utf8",
        "interval",
        "1.5",
    ];

    proptest! {
        #[test]
        fn generated_expressions_parse_as_with_duckdb(
            picks in proptest::collection::vec(0..PIECES.len(), 1..12)
        ) {
            let body: Vec<&str> = picks.iter().map(|&k| PIECES[k]).collect();
            let text = format!("SELECT {} FROM t WHERE {}", body.join(" "), body.join(" "));
            prop_assert_eq!(parsed(&EinsqlDialect, &text), parsed(&DuckDbDialect, &text));
        }
    }
}
