//! einsql's SQL dialect: DuckDB's, as `sqlparser` has it, with two
//! shortcuts in parsing expressions.
//!
//! For every expression operand `sqlparser` first tries to read a typed
//! string literal (`DATE '2024-01-01'`): it parses the operand as a data
//! type, fails, builds an error message and backtracks. In a query that
//! joins many tables the operands are mostly column references and
//! numbers (`e0.dst = e1.src AND l0.label = 12`), and that failed attempt
//! was about a third of parsing them. [`EinsqlDialect::parse_prefix`]
//! reads those two operand shapes directly. And a `WHERE` clause that
//! starts with comparisons of plain operands (names, numbers, strings)
//! joined by `AND` has that run of comparisons read in one pass: through
//! `sqlparser`'s operator-precedence loop, each comparison and each `AND`
//! moved the whole condition built so far (a kilobyte-sized value) a few
//! times, most of the time of parsing a query with dozens of them. Both
//! give the tree the default path gives (the tests parse every statement
//! of the SQL test files and generated texts both ways and compare the
//! trees, positions included) and leave everything else to `sqlparser`.
//! Everything else is DuckDB's: the dialect reports itself as
//! [`DuckDbDialect`], so `sqlparser`'s checks for DuckDB apply, and
//! answers each of the options DuckDB sets as DuckDB does.

use std::any::TypeId;

use sqlparser::ast::{BinaryOperator, Expr, Value, ValueWithSpan};
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

    /// At the start of a `WHERE` clause, the run of plain comparisons
    /// joined by `AND` it starts with ([`conjunction`]). Otherwise a
    /// number, or a name (unquoted words joined by `.`, the first no
    /// keyword) followed by a token that ends a plain operand (a
    /// comparison, `,`, `)`, `;`, `AND`, `OR` or the end): no data type,
    /// function call, lambda or string introducer can start there. What
    /// follows the whole name decides (`t.b [1] NULL` is a typed string
    /// of the array type `t.b[1]` to `sqlparser`), but only the first
    /// word is read here: `sqlparser` reads the rest of the name (`.dst`)
    /// after it, as it would have (after `INTERVAL t`, `.b` is a field of
    /// the interval).
    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if is_keyword(&parser.get_current_token().token, Keyword::WHERE)
            && let Some(condition) = conjunction(parser)
        {
            return Some(Ok(condition));
        }
        let first = parser.peek_token_ref();
        let (expr, length) = match &first.token {
            Token::Number(..) => operand_at(parser, 0)?,
            Token::Word(word) => {
                let length = name_length_at(parser, 0)?;
                let plain = match &parser.peek_nth_token_ref(length).token {
                    Token::Eq
                    | Token::Neq
                    | Token::Lt
                    | Token::Gt
                    | Token::LtEq
                    | Token::GtEq
                    | Token::Comma
                    | Token::RParen
                    | Token::SemiColon
                    | Token::EOF => true,
                    next => is_keyword(next, Keyword::AND) || is_keyword(next, Keyword::OR),
                };
                if !plain || typed_lambda_at(parser, length) {
                    return None;
                }
                (Expr::Identifier(word.to_ident(first.span)), 1)
            }
            _ => return None,
        };
        for _ in 0..length {
            parser.advance_token();
        }
        Some(Ok(expr))
    }
}

/// Whether `token` is the unquoted keyword `keyword`.
fn is_keyword(token: &Token, keyword: Keyword) -> bool {
    matches!(token, Token::Word(word) if word.quote_style.is_none() && word.keyword == keyword)
}

/// The comparisons of plain operands joined by `AND` that a `WHERE`
/// condition starts with, read as `sqlparser` reads them (a left-deep
/// chain of `AND`s) and consumed; `None`, consuming nothing, when it does
/// not start with one. A comparison is taken only when what follows it
/// binds less tightly than a comparison and an `AND` (another `AND`, `OR`,
/// `)`, `;`, the end, or `GROUP`, `ORDER` or `LIMIT`), so the condition
/// built is the one `sqlparser`'s precedence loop would build, which goes
/// on from there. The parser is called just after `WHERE`, at the lowest
/// precedence.
fn conjunction(parser: &mut Parser) -> Option<Expr> {
    let mut condition: Option<Expr> = None;
    loop {
        // Every comparison after the first follows an `AND`.
        let and = usize::from(condition.is_some());
        let Some((comparison, length)) = comparison_at(parser, and) else {
            break;
        };
        let next = &parser.peek_nth_token_ref(and + length).token;
        let more = is_keyword(next, Keyword::AND);
        let ends = matches!(next, Token::EOF | Token::SemiColon | Token::RParen)
            || [Keyword::OR, Keyword::GROUP, Keyword::ORDER, Keyword::LIMIT]
                .into_iter()
                .any(|keyword| is_keyword(next, keyword));
        if !more && !ends || typed_lambda_at(parser, and + length) {
            break;
        }
        for _ in 0..and + length {
            parser.advance_token();
        }
        condition = Some(match condition {
            None => comparison,
            Some(left) => Expr::BinaryOp {
                left: Box::new(left),
                op: BinaryOperator::And,
                right: Box::new(comparison),
            },
        });
        if !more {
            break;
        }
    }
    condition
}

/// Whether a word and `->` start `at` tokens ahead: after a word
/// operand, `sqlparser` reads that as a lambda's typed parameter (`a AND
/// -> 1` is `a` of type `AND`), so the operand is not plain.
fn typed_lambda_at(parser: &Parser, at: usize) -> bool {
    matches!(parser.peek_nth_token_ref(at).token, Token::Word(_))
        && parser.peek_nth_token_ref(at + 1).token == Token::Arrow
}

/// The comparison of two plain operands ([`operand_at`]) starting `at`
/// tokens ahead, with its length in tokens.
fn comparison_at(parser: &Parser, at: usize) -> Option<(Expr, usize)> {
    let (left, left_length) = operand_at(parser, at)?;
    let op = match parser.peek_nth_token_ref(at + left_length).token {
        Token::Eq => BinaryOperator::Eq,
        Token::Neq => BinaryOperator::NotEq,
        Token::Lt => BinaryOperator::Lt,
        Token::Gt => BinaryOperator::Gt,
        Token::LtEq => BinaryOperator::LtEq,
        Token::GtEq => BinaryOperator::GtEq,
        _ => return None,
    };
    let (right, right_length) = operand_at(parser, at + left_length + 1)?;
    let comparison = Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    };
    Some((comparison, left_length + 1 + right_length))
}

/// The plain operand starting `at` tokens ahead, with its length in
/// tokens: a number, a single-quoted string, or a name (unquoted words
/// joined by `.`, the first no keyword). Whether it is one depends on what
/// follows too, which the caller checks.
fn operand_at(parser: &Parser, at: usize) -> Option<(Expr, usize)> {
    let first = parser.peek_nth_token_ref(at);
    match &first.token {
        Token::Number(digits, long) => Some((
            Expr::Value(ValueWithSpan {
                value: Value::Number(digits.clone(), *long),
                span: first.span,
            }),
            1,
        )),
        Token::SingleQuotedString(text) => Some((
            Expr::Value(ValueWithSpan {
                value: Value::SingleQuotedString(text.clone()),
                span: first.span,
            }),
            1,
        )),
        Token::Word(_) => {
            let length = name_length_at(parser, at)?;
            let mut parts: Vec<_> = (at..at + length)
                .step_by(2)
                .filter_map(|k| {
                    let part = parser.peek_nth_token_ref(k);
                    match &part.token {
                        Token::Word(word) => Some(word.to_ident(part.span)),
                        _ => None,
                    }
                })
                .collect();
            let name = match parts.len() {
                1 => Expr::Identifier(parts.remove(0)),
                _ => Expr::CompoundIdentifier(parts),
            };
            Some((name, length))
        }
        _ => None,
    }
}

/// The length in tokens of the name starting `at` tokens ahead: unquoted
/// words joined by `.`, the first no keyword.
fn name_length_at(parser: &Parser, at: usize) -> Option<usize> {
    if !matches!(&parser.peek_nth_token_ref(at).token,
        Token::Word(word) if word.quote_style.is_none() && word.keyword == Keyword::NoKeyword)
    {
        return None;
    }
    let mut length = 1;
    while parser.peek_nth_token_ref(at + length).token == Token::Period {
        match &parser.peek_nth_token_ref(at + length + 1).token {
            Token::Word(part) if part.quote_style.is_none() => length += 2,
            _ => return None,
        }
    }
    Some(length)
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

    /// [`parsed`] as einsql reads `text`: its own tokens
    /// ([`crate::sql::tokens`]), then this dialect.
    fn read(text: &str) -> String {
        let statements = crate::sql::tokens::tokenize(&EinsqlDialect, text)
            .map_err(ParserError::from)
            .and_then(|tokens| {
                Parser::new(&EinsqlDialect)
                    .with_tokens_with_locations(tokens)
                    .parse_statements()
            });
        format!("{statements:?}")
    }

    /// Checks that `text` parses as with DuckDB's dialect, both from
    /// `sqlparser`'s tokens and from einsql's.
    fn same(text: &str) -> Result<(), TestCaseError> {
        let expected = parsed(&DuckDbDialect, text);
        prop_assert_eq!(&parsed(&EinsqlDialect, text), &expected, "{}", text);
        prop_assert_eq!(&read(text), &expected, "{}", text);
        Ok(())
    }

    #[test]
    fn the_test_statements_parse_as_with_duckdb() {
        for text in crate::sql::corpus::statements() {
            same(&text).unwrap();
        }
    }

    #[test]
    fn the_shortcuts_read_names_numbers_and_conditions() {
        for text in [
            "SELECT COUNT(*) FROM e e0, e e1 WHERE e0.dst = e1.src AND e0.w > 3 OR x = 1",
            "SELECT 1 FROM t WHERE a.b = 1 AND c <> 'x' AND d.e.f >= g AND h = i + 1 AND j < 2",
            "SELECT 1 FROM t WHERE a = 1 AND b = 2 GROUP BY a ORDER BY b LIMIT 3;",
            "SELECT (SELECT 1 FROM u WHERE u.a = t.a AND u.b != 2) FROM t WHERE t.a <= 3",
            "DELETE FROM t WHERE a = 1 AND b IS NULL",
            // Names that only look plain, left to sqlparser: a typed string
            // of an array type, and lambdas whose parameter's type is a
            // word (`AND`, `GROUP`).
            "SELECT t.b [1] NULL FROM t WHERE t.b [1] NULL",
            "SELECT a AND -> 1, f(a OR -> 1)",
            "SELECT 1 FROM t WHERE a = b AND -> 1",
            "SELECT 1 FROM t WHERE a = b GROUP -> 1",
            "SELECT 1 FROM t WHERE a AND -> 1",
        ] {
            same(text).unwrap();
            assert!(!read(text).contains("Err"), "{text}");
        }
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

    /// Operands of the comparisons of generated conditions: plain ones and
    /// others.
    const OPERANDS: &[&str] = &[
        "a",
        "t.b",
        "t.b.c",
        "t.value",
        "3",
        "'s'",
        "NULL",
        "TRUE",
        "f(x)",
        "-1",
        "t.*",
        "x[1]",
        "\"q\"",
        "t.\"q\"",
        "1.5",
        "DATE '2024-01-01'",
    ];

    /// Comparisons and what may follow an operand.
    const OPERATORS: &[&str] = &["=", "<>", "!=", "<", ">", "<=", ">=", "+", "IS", "::", "=="];

    /// An operand, plain (the first six) three times in four.
    fn operand() -> impl Strategy<Value = usize> {
        prop_oneof![3 => 0..6usize, 1 => 0..OPERANDS.len()]
    }

    /// An operator, a comparison (the first seven) three times in four.
    fn operator() -> impl Strategy<Value = usize> {
        prop_oneof![3 => 0..7usize, 1 => 0..OPERATORS.len()]
    }

    /// What may follow a comparison: what continues or ends a condition.
    const JOINS: &[&str] = &[
        "AND",
        "AND",
        "AND",
        "OR",
        "AND NOT",
        "IS NULL AND",
        "BETWEEN 1 AND",
        "IN (1) AND",
        "LIKE 'x' AND",
        "+ 1 AND",
        ")",
        "GROUP BY a",
        "ORDER BY a",
        "LIMIT 1",
        ";",
        "COLLATE c",
    ];

    proptest! {
        #[test]
        fn generated_expressions_parse_as_with_duckdb(
            picks in proptest::collection::vec(0..PIECES.len(), 1..12)
        ) {
            let body: Vec<&str> = picks.iter().map(|&k| PIECES[k]).collect();
            same(&format!("SELECT {} FROM t WHERE {}", body.join(" "), body.join(" ")))?;
        }

        #[test]
        fn generated_conditions_parse_as_with_duckdb(
            comparisons in proptest::collection::vec(
                (operand(), operator(), operand(), 0..JOINS.len()),
                1..8,
            ),
            shape in 0..3usize,
        ) {
            let mut condition = String::new();
            for (k, &(left, op, right, join)) in comparisons.iter().enumerate() {
                if k > 0 {
                    condition.push(' ');
                }
                condition.push_str(&format!("{} {} {}", OPERANDS[left], OPERATORS[op], OPERANDS[right]));
                if k + 1 < comparisons.len() {
                    condition.push(' ');
                    condition.push_str(JOINS[join]);
                }
            }
            let text = match shape {
                0 => format!("SELECT * FROM t WHERE {condition}"),
                1 => format!("SELECT * FROM (SELECT * FROM t WHERE {condition}) s WHERE s.a = 1"),
                _ => format!("DELETE FROM t WHERE {condition}"),
            };
            same(&text)?;
        }
    }
}
