//! Cuts a script into statements at top-level `;` and tells einsum
//! statements from SQL.
//!
//! A `;` inside a quoted string (`'...'`), a quoted name (`"..."`), a line
//! comment (`-- ...`) or a block comment (`/* ... */`) does not end a
//! statement. A statement is einsum when, after leading whitespace and
//! comments, it starts with a name followed by `[` or by `=` (not `==`):
//! `C[i,k] = ...` or `t = ...`. No SQL statement starts that way.
//! `EXPLAIN`, `EXPLAIN ANALYZE` or `EXPLAIN (options)` before an einsum
//! statement asks for its plan.
//!
//! The shell uses the same scanner ([`scan`], [`is_blank`]) to tell a
//! complete statement from one still being typed.

use std::ops::Range;

/// One statement of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Its bytes in the script, without the `;`.
    pub range: Range<usize>,
    /// Whether it is an einsum statement (else SQL).
    pub is_einsum: bool,
    /// The `EXPLAIN` before an einsum statement, which the range leaves
    /// out. (SQL keeps its `EXPLAIN` for the SQL parser.)
    pub explain: Option<Explain>,
}

/// The `EXPLAIN` before an einsum statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explain {
    /// `EXPLAIN ANALYZE`: the statement runs (its result is not stored)
    /// and the plan shows what each step produced and took.
    pub analyze: bool,
    /// The bytes between the parentheses of `EXPLAIN (options)`, if given.
    pub options: Option<Range<usize>>,
}

/// The statements of `text`, skipping empty ones (only whitespace and
/// comments).
pub fn split_statements(text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut start = 0;
    scan(text, |end| {
        // `end` is just after the `;`, which the piece leaves out.
        push_piece(text, start..end - 1, &mut pieces);
        start = end;
    });
    push_piece(text, start..text.len(), &mut pieces);
    pieces
}

/// Where the scanner is in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// In statement text.
    Code,
    /// Inside a `'...'` string literal.
    String,
    /// Inside a `"..."` quoted identifier.
    Identifier,
    /// Inside a `-- ...` comment (ends at the end of the line).
    LineComment,
    /// Inside a `/* ... */` comment.
    BlockComment,
}

/// Whether `text` holds nothing but whitespace, comments and `;`.
pub fn is_blank(text: &str) -> bool {
    let mut blank = true;
    let mut state = State::Code;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            State::Code => match c {
                '-' if chars.peek() == Some(&'-') => {
                    chars.next();
                    state = State::LineComment;
                }
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    state = State::BlockComment;
                }
                c if c.is_whitespace() || c == ';' => {}
                _ => blank = false,
            },
            State::LineComment if c == '\n' => state = State::Code,
            State::BlockComment if c == '*' && chars.peek() == Some(&'/') => {
                chars.next();
                state = State::Code;
            }
            _ => {}
        }
    }
    // An unterminated block comment is a statement still being typed.
    blank && state != State::BlockComment
}

/// Scans `text`, calling `on_end` with the byte offset just after every
/// statement-ending `;`, and returns the state at the end. Every character
/// the scanner looks for is ASCII, and no byte of a longer UTF-8 character
/// is, so it reads bytes, skipping in each state to the next byte that can
/// end it.
pub fn scan(text: &str, mut on_end: impl FnMut(usize)) -> State {
    let bytes = text.as_bytes();
    let mut state = State::Code;
    let mut i = 0;
    while let Some(offset) = bytes[i..].iter().position(|&b| ends(state, b)) {
        i += offset;
        let next = bytes.get(i + 1).copied();
        // How many bytes the state change takes.
        let mut width = 1;
        state = match (state, bytes[i]) {
            (State::Code, b'\'') => State::String,
            (State::Code, b'"') => State::Identifier,
            (State::Code, b'-') if next == Some(b'-') => {
                width = 2;
                State::LineComment
            }
            (State::Code, b'/') if next == Some(b'*') => {
                width = 2;
                State::BlockComment
            }
            (State::Code, b';') => {
                on_end(i + 1);
                State::Code
            }
            // A doubled quote inside a literal closes and reopens it, which
            // leaves the scanner inside the literal as it should.
            (State::String, b'\'') | (State::Identifier, b'"') | (State::LineComment, b'\n') => {
                State::Code
            }
            (State::BlockComment, b'*') if next == Some(b'/') => {
                width = 2;
                State::Code
            }
            (state, _) => state,
        };
        i += width;
    }
    state
}

/// Whether byte `b` may end `state` (or, in code, start another state or
/// end a statement).
fn ends(state: State, b: u8) -> bool {
    match state {
        State::Code => matches!(b, b'\'' | b'"' | b'-' | b'/' | b';'),
        State::String => b == b'\'',
        State::Identifier => b == b'"',
        State::LineComment => b == b'\n',
        State::BlockComment => b == b'*',
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
pub fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn push_piece(text: &str, range: Range<usize>, pieces: &mut Vec<Piece>) {
    let Some(body) = text.get(range.start..range.end.min(text.len())) else {
        return;
    };
    let rest = skip_blank(body);
    if rest.is_empty() {
        return;
    }
    let end = range.end.min(text.len());
    if let Some((statement, explain)) = explained(text, end - rest.len()..end)
        && is_einsum(&text[statement.clone()])
    {
        pieces.push(Piece {
            is_einsum: true,
            explain: Some(explain),
            range: statement,
        });
        return;
    }
    pieces.push(Piece {
        is_einsum: is_einsum(rest),
        explain: None,
        range: range.start..end,
    });
}

/// `text` without leading whitespace and comments.
fn skip_blank(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        if let Some(rest) = text.strip_prefix("--") {
            text = rest.find('\n').map_or("", |n| &rest[n..]);
        } else if let Some(rest) = text.strip_prefix("/*") {
            text = rest.find("*/").map_or("", |n| &rest[n + 2..]);
        } else {
            return text;
        }
    }
}

/// The statement after a leading `EXPLAIN`, `EXPLAIN ANALYZE` or
/// `EXPLAIN (options)` in the bytes `range` of `text`, if they have one,
/// and what the prefix asks. Ranges are bytes of `text`.
fn explained(text: &str, range: Range<usize>) -> Option<(Range<usize>, Explain)> {
    let body = &text[range.clone()];
    let at = |rest: &str| range.end - rest.len();
    let rest = keyword(body, "explain")?;
    if let Some(statement) = keyword(rest, "analyze") {
        let explain = Explain {
            analyze: true,
            options: None,
        };
        return Some((at(statement)..range.end, explain));
    }
    if let Some(inside) = rest.strip_prefix('(') {
        let close = inside.find(')')?;
        let statement = skip_blank(&inside[close + 1..]);
        let explain = Explain {
            analyze: false,
            options: Some(at(inside)..at(inside) + close),
        };
        return Some((at(statement)..range.end, explain));
    }
    let explain = Explain {
        analyze: false,
        options: None,
    };
    Some((at(rest)..range.end, explain))
}

/// `text` after the keyword `word` (case-insensitive, followed by a blank,
/// a comment or `(`), with the blanks skipped.
fn keyword<'a>(text: &'a str, word: &str) -> Option<&'a str> {
    let head = text.get(..word.len())?;
    let rest = &text[word.len()..];
    let separated =
        rest.starts_with(|c: char| c.is_whitespace() || c == '(') || rest.starts_with("/*");
    (head.eq_ignore_ascii_case(word) && separated).then(|| skip_blank(rest))
}

/// Whether `text` (starting at a token) is `name[` or `name =`.
fn is_einsum(text: &str) -> bool {
    let after_name = if let Some(rest) = text.strip_prefix('"') {
        match rest.find('"') {
            Some(n) => &rest[n + 1..],
            None => return false,
        }
    } else {
        let starts_well = text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !starts_well {
            return false;
        }
        text.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
    };
    let next = skip_blank(after_name);
    next.starts_with('[') || (next.starts_with('=') && !next.starts_with("=="))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The statement ends and final state of `text`, read one character at
    /// a time: what [`scan`] must find by skipping.
    fn scanned_by_characters(text: &str) -> (Vec<usize>, State) {
        let mut ends = Vec::new();
        let mut state = State::Code;
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            state = match (state, c) {
                (State::Code, '\'') => State::String,
                (State::Code, '"') => State::Identifier,
                (State::Code, '-') if next == Some('-') => {
                    chars.next();
                    State::LineComment
                }
                (State::Code, '/') if next == Some('*') => {
                    chars.next();
                    State::BlockComment
                }
                (State::Code, ';') => {
                    ends.push(i + 1);
                    State::Code
                }
                (State::String, '\'') | (State::Identifier, '"') | (State::LineComment, '\n') => {
                    State::Code
                }
                (State::BlockComment, '*') if next == Some('/') => {
                    chars.next();
                    State::Code
                }
                (state, _) => state,
            };
        }
        (ends, state)
    }

    proptest! {
        /// Skipping to the bytes that matter finds what reading every
        /// character finds, in text made of the characters that matter,
        /// others, and non-ASCII ones.
        #[test]
        fn scanning_by_bytes_reads_as_by_characters(
            text in "[-;'\"/*\n aé∑☃]{0,40}"
        ) {
            let mut ends = Vec::new();
            let state = scan(&text, |end| ends.push(end));
            prop_assert_eq!((ends, state), scanned_by_characters(&text));
        }
    }

    #[test]
    fn splits_at_top_level_semicolons_only() {
        let text = "CREATE TABLE a (s VARCHAR); INSERT INTO a VALUES ('x;y'); -- c;\n\
                    C[i] = a[i] * 2;\n/* ; */ t = SUM(i) C[i]";
        let pieces = split_statements(text);
        let shown: Vec<(&str, bool)> = pieces
            .iter()
            .map(|p| (text[p.range.clone()].trim(), p.is_einsum))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("CREATE TABLE a (s VARCHAR)", false),
                ("INSERT INTO a VALUES ('x;y')", false),
                ("-- c;\nC[i] = a[i] * 2", true),
                ("/* ; */ t = SUM(i) C[i]", true),
            ]
        );
    }

    #[test]
    fn non_ascii_text_splits_at_its_semicolons() {
        let text = "INSERT INTO \"größe\" VALUES ('é;ß'); SELECT 'ü' -- ;☃\n; /* ∑; */ C[i] = a[i]";
        let pieces = split_statements(text);
        let shown: Vec<&str> = pieces
            .iter()
            .map(|p| text[p.range.clone()].trim())
            .collect();
        assert_eq!(
            shown,
            vec![
                "INSERT INTO \"größe\" VALUES ('é;ß')",
                "SELECT 'ü' -- ;☃",
                "/* ∑; */ C[i] = a[i]",
            ]
        );
    }

    #[test]
    fn sql_is_not_einsum() {
        for sql in [
            "SELECT * FROM a",
            "SET threads = 4",
            "x == 3",
            "(SELECT 1)",
            "",
        ] {
            assert!(!is_einsum(sql), "{sql}");
        }
        for einsum in ["t = 1", "C [i] = A[i]", "\"my table\"[i] = A[i]"] {
            assert!(is_einsum(einsum), "{einsum}");
        }
    }

    #[test]
    fn explain_prefixes_of_einsum_statements() {
        let text = "EXPLAIN C[i] = A[i]; explain analyze C[i] = A[i];\n\
                    EXPLAIN (FORMAT sql, DIALECT spark) C[i] = A[i]; EXPLAIN (FORMAT sql) SELECT 1";
        let pieces = split_statements(text);
        // Each piece: its text, and the EXPLAIN's analyze and options.
        type Shown<'a> = (&'a str, Option<(bool, Option<&'a str>)>);
        let shown: Vec<Shown> = pieces
            .iter()
            .map(|p| {
                let explain = p
                    .explain
                    .as_ref()
                    .map(|e| (e.analyze, e.options.as_ref().map(|o| &text[o.clone()])));
                (text[p.range.clone()].trim(), explain)
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                ("C[i] = A[i]", Some((false, None))),
                ("C[i] = A[i]", Some((true, None))),
                (
                    "C[i] = A[i]",
                    Some((false, Some("FORMAT sql, DIALECT spark")))
                ),
                ("EXPLAIN (FORMAT sql) SELECT 1", None),
            ]
        );
    }
}
