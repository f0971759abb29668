//! Splitting shell input into statements.
//!
//! A statement (SQL or tensor index notation) ends at a `;` that is not
//! inside a string literal (`'...'`), a quoted identifier (`"..."`), a line
//! comment (`-- ...`) or a block comment (`/* ... */`). The shell feeds the
//! text of each complete statement to [`einsql::Database::execute`] and keeps
//! the unterminated rest until more input arrives. The scanner is the
//! engine's own ([`einsql::einsum::split::scan`]); it knows nothing else
//! about either language, so an einsum statement such as
//! `C[i,k] = SUM(j) A[i,j] * B[j,k];` splits like any SQL statement.

use std::ops::Range;

use einsql::einsum::split::scan;
pub use einsql::einsum::split::{State, is_blank, line_and_column};

/// The statements of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The byte ranges of the complete statements, each ending after its
    /// `;` and starting at its first non-whitespace character.
    pub statements: Vec<Range<usize>>,
    /// Where the unterminated rest of the text begins.
    pub rest: usize,
    /// The scanner state at the end of the text.
    pub state: State,
}

/// Splits `text` into complete statements and an unterminated rest.
/// Statements that hold only comments and whitespace are left out.
pub fn split(text: &str) -> Split {
    let mut statements = Vec::new();
    let mut start = 0;
    let state = scan(text, |end| {
        let range = start..end;
        start = end;
        if !is_blank(&text[range.clone()]) {
            let skipped = text[range.clone()].len() - text[range.clone()].trim_start().len();
            statements.push(range.start + skipped..range.end);
        }
    });
    Split {
        statements,
        rest: start,
        state,
    }
}

/// The byte offset of the 1-based `line` and `column` of `text`, if it is
/// inside the text.
pub fn offset_of(text: &str, line: usize, column: usize) -> Option<usize> {
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2).map(|(p, _)| p + 1)?
    };
    let line_text = text[line_start..].split('\n').next().unwrap_or_default();
    let within = line_text
        .char_indices()
        .map(|(p, _)| p)
        .chain(std::iter::once(line_text.len()))
        .nth(column.checked_sub(1)?)?;
    Some(line_start + within)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> (Vec<&str>, &str) {
        let split = split(text);
        let statements = split.statements.iter().map(|r| &text[r.clone()]).collect();
        (statements, &text[split.rest..])
    }

    #[test]
    fn splits_at_semicolons_outside_quotes_and_comments() {
        let text = "SELECT 'a;b' FROM \"x;y\"; -- c;d\nSHOW TABLES; /* e;f */ DROP TABLE t";
        let (statements, rest) = pieces(text);
        assert_eq!(
            statements,
            ["SELECT 'a;b' FROM \"x;y\";", "-- c;d\nSHOW TABLES;"]
        );
        assert_eq!(rest, " /* e;f */ DROP TABLE t");
        assert_eq!(split(text).state, State::Code);
    }

    #[test]
    fn einsum_statements_split_like_sql() {
        let text = "C[i,k] = SUM(j) A[i,j] * B[j,k];\nt = SUM(i) x[i];";
        let (statements, rest) = pieces(text);
        assert_eq!(
            statements,
            ["C[i,k] = SUM(j) A[i,j] * B[j,k];", "t = SUM(i) x[i];"]
        );
        assert_eq!(rest, "");
    }

    #[test]
    fn doubled_quotes_stay_inside_the_literal() {
        let (statements, rest) = pieces("INSERT INTO t VALUES ('it''s; fine'); x");
        assert_eq!(statements, ["INSERT INTO t VALUES ('it''s; fine');"]);
        assert_eq!(rest, " x");
    }

    #[test]
    fn reports_an_open_literal_or_comment() {
        assert_eq!(split("SELECT 'abc;").state, State::String);
        assert_eq!(split("SELECT /* ;").state, State::BlockComment);
        assert_eq!(split("SELECT 1 -- ;").state, State::LineComment);
    }

    #[test]
    fn blank_text_has_only_comments_and_whitespace() {
        assert!(is_blank("  -- hello\n /* world */ ;\n"));
        assert!(!is_blank("/* unterminated"));
        assert!(!is_blank("-- x\nSELECT"));
        let (statements, rest) = pieces(";; -- only comments;\n");
        assert!(statements.is_empty());
        assert!(is_blank(rest));
    }

    #[test]
    fn lines_and_columns_are_one_based_characters() {
        let text = "ab\ncdé f\n";
        assert_eq!(line_and_column(text, 0), (1, 1));
        assert_eq!(line_and_column(text, 3), (2, 1));
        let f = text.find('f').unwrap();
        assert_eq!(line_and_column(text, f), (2, 5));
        assert_eq!(offset_of(text, 2, 5), Some(f));
        assert_eq!(offset_of(text, 1, 1), Some(0));
        assert_eq!(offset_of(text, 9, 1), None);
        assert_eq!(offset_of(text, 1, 0), None);
    }
}
