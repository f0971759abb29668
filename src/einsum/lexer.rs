//! Splits one einsum statement into tokens, each with its byte span in the
//! source text (so errors can point at it).
//!
//! Tokens: identifiers (`A`, `theta`, or `"quoted names"`), the keywords
//! `and or true false` (case-insensitive), integers, floats (`0.5`, `1e-3`),
//! `'string'` keys, punctuation `[ ] ( ) , .`, and the operators
//! `= == <> != < <= > >= + - * /`. `--` starts a comment to the end of the
//! line and `/* ... */` is a comment (not nested), as in SQL and as the
//! statement splitter ([`super::split`]) reads them.

use std::ops::Range;

use super::located;
use crate::error::{Error, Result};

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    /// A name; `quoted` if written in double quotes (never a keyword).
    Ident { name: String, quoted: bool },
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A `'string'` literal.
    Str(String),
    /// Punctuation or an operator, as written (`==` is kept as `==`).
    Symbol(&'static str),
}

/// A token and where it is: byte offsets into the whole source text.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Its bytes in the source.
    pub span: Range<usize>,
}

impl Token {
    /// Whether the token is the symbol `s`.
    pub fn is(&self, s: &str) -> bool {
        matches!(self.kind, TokenKind::Symbol(t) if t == s)
    }

    /// Whether the token is the unquoted keyword `k` (any case).
    pub fn is_keyword(&self, k: &str) -> bool {
        matches!(&self.kind, TokenKind::Ident { name, quoted: false } if name.eq_ignore_ascii_case(k))
    }
}

const SYMBOLS: [&str; 18] = [
    "==", "<>", "!=", "<=", ">=", "[", "]", "(", ")", ",", ".", "=", "<", ">", "+", "-", "*", "/",
];

/// The tokens of `source[range]`, with spans into `source`.
pub fn tokenize(source: &str, range: Range<usize>) -> Result<Vec<Token>> {
    let text = source.get(range.clone()).unwrap_or_default();
    let base = range.start;
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let c = bytes[at];
        let start = at;
        if c.is_ascii_whitespace() {
            at += 1;
            continue;
        }
        if text[at..].starts_with("--") {
            at = text[at..].find('\n').map_or(bytes.len(), |n| at + n);
            continue;
        }
        if text[at..].starts_with("/*") {
            at = text[at + 2..]
                .find("*/")
                .map(|n| at + 2 + n + 2)
                .ok_or_else(|| {
                    located(
                        source,
                        base + at..base + at + 2,
                        Error::Syntax("unterminated comment: '/*' without '*/'".to_string()),
                    )
                })?;
            continue;
        }
        let kind = if c.is_ascii_alphabetic() || c == b'_' {
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
            TokenKind::Ident {
                name: text[start..at].to_string(),
                quoted: false,
            }
        } else if c.is_ascii_digit() {
            at = number_end(bytes, at);
            number(&text[start..at]).map_err(|e| located(source, base + start..base + at, e))?
        } else if c == b'"' || c == b'\'' {
            let (value, end) = quoted(text, at, c as char).ok_or_else(|| {
                let what = if c == b'"' { "name" } else { "string" };
                located(
                    source,
                    base + start..base + text.len(),
                    Error::Syntax(format!("unterminated quoted {what}")),
                )
            })?;
            at = end;
            if c == b'"' {
                TokenKind::Ident {
                    name: value,
                    quoted: true,
                }
            } else {
                TokenKind::Str(value)
            }
        } else if let Some(symbol) = SYMBOLS.iter().find(|s| text[at..].starts_with(**s)) {
            at += symbol.len();
            TokenKind::Symbol(symbol)
        } else {
            let ch = text[at..].chars().next().unwrap_or_default();
            return Err(located(
                source,
                base + at..base + at + ch.len_utf8(),
                Error::Syntax(format!("unexpected character '{ch}'")),
            ));
        };
        tokens.push(Token {
            kind,
            span: base + start..base + at,
        });
    }
    Ok(tokens)
}

/// The end of the number starting at `at`: digits, an optional fraction and
/// an optional exponent.
fn number_end(bytes: &[u8], mut at: usize) -> usize {
    let digits = |mut at: usize| {
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        at
    };
    at = digits(at);
    if bytes.get(at) == Some(&b'.') && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) {
        at = digits(at + 1);
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(at + 1), Some(b'+' | b'-')));
        if bytes.get(at + 1 + sign).is_some_and(u8::is_ascii_digit) {
            at = digits(at + 1 + sign);
        }
    }
    at
}

fn number(text: &str) -> Result<TokenKind> {
    if text.contains(['.', 'e', 'E']) {
        text.parse::<f64>()
            .map(TokenKind::Float)
            .map_err(|_| Error::Syntax(format!("malformed number {text}")))
    } else {
        text.parse::<i64>()
            .map(TokenKind::Int)
            .map_err(|_| Error::Overflow(format!("the integer {text} does not fit in 64 bits")))
    }
}

/// The content of the quoted text starting at `at` (a doubled quote stands
/// for one) and the offset after the closing quote.
fn quoted(text: &str, at: usize, quote: char) -> Option<(String, usize)> {
    let mut value = String::new();
    let mut chars = text[at + 1..].char_indices().peekable();
    while let Some((offset, ch)) = chars.next() {
        if ch == quote {
            if chars.peek().is_some_and(|&(_, next)| next == quote) {
                chars.next();
                value.push(quote);
                continue;
            }
            return Some((value, at + 1 + offset + 1));
        }
        value.push(ch);
    }
    None
}
