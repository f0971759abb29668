//! The tokens of a SQL statement, for `sqlparser`'s parser.
//!
//! `sqlparser`'s tokenizer reads a text a character at a time through a
//! peekable iterator and finds each word's keyword by a binary search of
//! about 900 keywords; on a query that joins many tables (a kilobyte of
//! `e0.dst = e1.src AND ...`) that was about 40% of parsing it.
//! [`tokenize`] reads the common part of SQL directly from the bytes:
//! plain words and keywords, whole numbers, `'...'` strings without
//! quotes or backslashes inside, spaces, tabs and newlines, and the
//! punctuation and comparisons of a query. A text with anything else
//! (quoted identifiers, comments, decimals, other operators, characters
//! beyond ASCII, ...) goes to `sqlparser`'s tokenizer whole, so that every
//! token it makes is one `sqlparser` would have made, at the same line and
//! column (the tests compare both on every statement of the SQL test files
//! and on generated texts).

use std::sync::OnceLock;

use hashbrown::HashMap;
use sqlparser::dialect::Dialect;
use sqlparser::keywords::{ALL_KEYWORDS, ALL_KEYWORDS_INDEX, Keyword};
use sqlparser::tokenizer::{
    Location, Span, Token, TokenWithSpan, Tokenizer, TokenizerError, Whitespace, Word,
};

/// The tokens of `text` with their lines and columns (from 1, as
/// `sqlparser` counts them): read directly when the text keeps to the
/// common part of SQL, else by `sqlparser`'s tokenizer with `dialect`.
pub fn tokenize(dialect: &dyn Dialect, text: &str) -> Result<Vec<TokenWithSpan>, TokenizerError> {
    match common_tokens(text) {
        Some(tokens) => Ok(tokens),
        None => Tokenizer::new(dialect, text).tokenize_with_location(),
    }
}

/// The tokens of `text` if it keeps to the common part of SQL (see the
/// module documentation), else `None`.
fn common_tokens(text: &str) -> Option<Vec<TokenWithSpan>> {
    let bytes = text.as_bytes();
    // Room for every token at once: a join query makes about one per two
    // bytes (names, `.`, spaces, `=`).
    let mut tokens = Vec::with_capacity(bytes.len() * 3 / 4);
    let mut at = 0;
    let mut line = 1;
    let mut line_start = 0;
    while at < bytes.len() {
        let start = at;
        let token = if let Some(token) = single(bytes[at]) {
            at += 1;
            token
        } else if let Some((length, token)) = operator(&bytes[at..]) {
            at += length;
            token
        } else {
            match bytes[at] {
                b'.' if bytes
                    .get(at + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'*') =>
                {
                    at += 1;
                    Token::Period
                }
                b'\'' => {
                    let length = bytes[at + 1..].iter().position(|&c| c == b'\'')?;
                    let inside = &text[at + 1..at + 1 + length];
                    if inside
                        .bytes()
                        .any(|c| c == b'\\' || c == b'\n' || !c.is_ascii())
                    {
                        return None;
                    }
                    at += length + 2;
                    if bytes.get(at) == Some(&b'\'') {
                        return None;
                    }
                    Token::SingleQuotedString(inside.to_string())
                }
                c if c.is_ascii_digit() => {
                    at += bytes[at..]
                        .iter()
                        .take_while(|c| c.is_ascii_digit())
                        .count();
                    let after = bytes.get(at).copied();
                    if after.is_some_and(|c| c.is_ascii_alphanumeric() || b"_.$".contains(&c)) {
                        return None;
                    }
                    Token::Number(text[start..at].to_string(), false)
                }
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    at += bytes[at..]
                        .iter()
                        .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
                        .count();
                    if bytes.get(at).is_some_and(|c| b"'\"&".contains(c)) {
                        return None;
                    }
                    let value = &text[start..at];
                    Token::Word(Word {
                        value: value.to_string(),
                        quote_style: None,
                        keyword: keyword(value),
                    })
                }
                _ => return None,
            }
        };
        let from = Location::new(line, (start - line_start + 1) as u64);
        if token == Token::Whitespace(Whitespace::Newline) {
            line += 1;
            line_start = at;
        }
        let to = Location::new(line, (at - line_start + 1) as u64);
        tokens.push(TokenWithSpan::new(token, Span::new(from, to)));
    }
    Some(tokens)
}

/// The token of a byte that starts no longer token: whitespace and
/// punctuation.
fn single(byte: u8) -> Option<Token> {
    Some(match byte {
        b' ' => Token::Whitespace(Whitespace::Space),
        b'\t' => Token::Whitespace(Whitespace::Tab),
        b'\n' => Token::Whitespace(Whitespace::Newline),
        b'(' => Token::LParen,
        b')' => Token::RParen,
        b',' => Token::Comma,
        b';' => Token::SemiColon,
        b'*' => Token::Mul,
        _ => return None,
    })
}

/// The operator at the start of `rest` and its length, when what follows
/// ends it ([`ends_operator`]).
fn operator(rest: &[u8]) -> Option<(usize, Token)> {
    // Two-byte operators first: `<` is read only where `<=` and `<>` are not.
    const OPERATORS: [(&str, Token); 10] = [
        ("<=", Token::LtEq),
        (">=", Token::GtEq),
        ("<>", Token::Neq),
        ("!=", Token::Neq),
        ("=", Token::Eq),
        ("<", Token::Lt),
        (">", Token::Gt),
        ("+", Token::Plus),
        ("-", Token::Minus),
        ("/", Token::Div),
    ];
    if !b"<>=!+-/".contains(rest.first()?) {
        return None;
    }
    OPERATORS.iter().find_map(|(spelling, token)| {
        let length = spelling.len();
        (rest.starts_with(spelling.as_bytes()) && ends_operator(rest.get(length).copied()))
            .then(|| (length, token.clone()))
    })
}

/// Whether the byte after a one- or two-character operator ends it: what
/// follows can start no longer operator (`<=>`, `->`, `--`, `//`, ...).
fn ends_operator(next: Option<u8>) -> bool {
    next.is_none_or(|c| c.is_ascii_alphanumeric() || matches!(c, b' ' | b'(' | b'_' | b'\''))
}

/// The keyword `word` is (in any case), as `sqlparser` finds it.
fn keyword(word: &str) -> Keyword {
    /// Every keyword by its upper-case spelling, and the longest one's
    /// length.
    static KEYWORDS: OnceLock<(HashMap<&'static [u8], Keyword>, usize)> = OnceLock::new();
    let (keywords, longest) = KEYWORDS.get_or_init(|| {
        let map: HashMap<&'static [u8], Keyword> = ALL_KEYWORDS
            .iter()
            .zip(ALL_KEYWORDS_INDEX)
            .map(|(spelling, keyword)| (spelling.as_bytes(), *keyword))
            .collect();
        let longest = ALL_KEYWORDS.iter().map(|k| k.len()).max().unwrap_or(0);
        (map, longest)
    });
    let mut upper = [0u8; 64];
    if word.len() > *longest || word.len() > upper.len() {
        return Keyword::NoKeyword;
    }
    let upper = &mut upper[..word.len()];
    upper.copy_from_slice(word.as_bytes());
    upper.make_ascii_uppercase();
    keywords.get(&*upper).copied().unwrap_or(Keyword::NoKeyword)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sqlparser::dialect::DuckDbDialect;

    use super::*;

    /// `sqlparser`'s tokens of `text`.
    fn theirs(text: &str) -> Result<Vec<TokenWithSpan>, TokenizerError> {
        Tokenizer::new(&DuckDbDialect, text).tokenize_with_location()
    }

    /// Checks that where [`common_tokens`] reads `text`, it makes
    /// `sqlparser`'s tokens at `sqlparser`'s lines and columns; returns
    /// whether it read it.
    fn agrees(text: &str) -> bool {
        let Some(ours) = common_tokens(text) else {
            return false;
        };
        let theirs = theirs(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(ours.len(), theirs.len(), "{text:?}");
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a.token, b.token, "{text:?}");
            assert_eq!(
                (a.span.start, a.span.end),
                (b.span.start, b.span.end),
                "{text:?}: {}",
                a.token
            );
        }
        true
    }

    #[test]
    fn the_test_statements_tokenize_as_sqlparser_does() {
        let statements = crate::sql::corpus::statements();
        let read = statements.iter().filter(|s| agrees(s)).count();
        // Most statements of the test files keep to the common part (the
        // rest have decimals, quoted names, comments, ...).
        assert!(
            read * 2 > statements.len(),
            "{read} of {} read directly",
            statements.len()
        );
    }

    #[test]
    fn a_join_query_is_read_directly() {
        let text = "SELECT COUNT(*) FROM edges e0, labels l0\nWHERE e0.label = 0 AND l0.vertex = e0.src\tAND l0.label <> 12;";
        assert!(agrees(text));
    }

    #[test]
    fn texts_beyond_the_common_part_go_to_sqlparser() {
        for text in [
            "SELECT 1.5",
            "SELECT \"x\" FROM t",
            "SELECT 1 -- note",
            "SELECT 'it''s'",
            "SELECT x'1F'",
            "SELECT a->>'b' FROM t",
            "SELECT 7 // 2",
            "SELECT 'é'",
            "SELECT 1\r\n",
        ] {
            assert!(common_tokens(text).is_none(), "{text:?}");
            assert_eq!(
                tokenize(&DuckDbDialect, text).map_err(|e| e.to_string()),
                theirs(text).map_err(|e| e.to_string()),
                "{text:?}"
            );
        }
    }

    /// Pieces of SQL, some of which the direct reading declines.
    const PIECES: &[&str] = &[
        "SELECT", "select", "e0", "_x", "a$b", "label", "AND", "or", " ", "  ", "\n", "\t", ".",
        ".*", "*", "(", ")", ",", ";", "=", "==", "=>", "<", "<=", "<>", "<=>", ">", ">=", "!=",
        "!", "+", "-", "->", "--", "/", "//", "/*", "0", "12", "1.5", "1e3", "7L", "'a b'", "''",
        "'", "\"q\"", "x'", "N'", "é", "\r", "$1", ":", "[", "]", "%",
    ];

    proptest! {
        #[test]
        fn generated_texts_tokenize_as_sqlparser_does(
            picks in proptest::collection::vec(0..PIECES.len(), 0..24)
        ) {
            let text: String = picks.iter().map(|&k| PIECES[k]).collect();
            agrees(&text);
        }
    }
}
