//! Error reports: the message, where it happened, and the offending line
//! with a caret under the position the error refers to.
//!
//! The engine reports SQL syntax errors with a line and column relative to
//! the statement it was given ("... at Line: 1, Column: 10") and einsum
//! errors as [`Error::Positioned`] (a statement-relative line and column,
//! with an excerpt the report replaces by its own); unknown and duplicate
//! table names come without a position, so the report points at the first
//! place the statement mentions the name. Positions are turned
//! into positions in the input (script line, column) before printing, in
//! colour when standard error is a terminal that supports it.

use std::io::{IsTerminal, Write};

use einsql::Error;

use super::splitter;

/// Where a statement came from: the input's name and the position of the
/// statement's first character in it.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The input's name: a script path, `<command>` for `-c`, `<stdin>` for
    /// standard input (typed at the prompt or piped).
    pub source: String,
    /// 1-based line of the statement's first character.
    pub line: usize,
    /// 1-based column (in characters) of the statement's first character.
    pub column: usize,
}

/// A position inside a statement's text, with that text.
#[derive(Clone, Debug)]
pub struct Spot<'a> {
    /// The statement as it was executed.
    pub text: &'a str,
    /// Byte offset of the position the error refers to, if known.
    pub offset: Option<usize>,
}

/// Whether error reports should use colour: standard error is a terminal,
/// `NO_COLOR` is unset and `TERM` is not `dumb`.
pub fn use_color() -> bool {
    std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && !matches!(std::env::var("TERM").as_deref(), Ok("dumb"))
}

/// Splits the position off a syntax error message: "Expected ..., found: x
/// at Line: 2, Column: 5" gives ("Expected ..., found: x", (2, 5)).
pub fn split_position(message: &str) -> (&str, Option<(usize, usize)>) {
    let Some(at) = message.rfind(" at Line: ") else {
        return (message, None);
    };
    let position = &message[at + " at Line: ".len()..];
    let parsed = position
        .split_once(", Column: ")
        .and_then(|(line, column)| Some((line.trim().parse().ok()?, column.trim().parse().ok()?)));
    match parsed {
        Some(position) => (&message[..at], Some(position)),
        None => (message, None),
    }
}

/// The message of `error` (without an engine-relative position) and the
/// byte offset in `statement` that it refers to, if any.
pub fn locate(error: &Error, statement: &str) -> (String, Option<usize>) {
    match error {
        Error::Syntax(message) => {
            let (message, position) = split_position(message);
            let offset =
                position.and_then(|(line, column)| splitter::offset_of(statement, line, column));
            (format!("Syntax error: {message}"), offset)
        }
        Error::Positioned {
            line,
            column,
            source,
            ..
        } => (
            source.to_string(),
            splitter::offset_of(statement, *line, *column),
        ),
        Error::UnknownName { name, .. } | Error::TableExists(name) => {
            (error.to_string(), find_word(statement, name))
        }
        other => (other.to_string(), None),
    }
}

/// The byte offset of the first whole-word, case-insensitive occurrence of
/// `word` in `text` (quoted or not).
fn find_word(text: &str, word: &str) -> Option<usize> {
    if word.is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    let word = word.to_lowercase();
    // Lower-casing can change byte lengths; only trust offsets when it did not.
    if lower.len() != text.len() {
        return None;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    lower.match_indices(&word).map(|(p, _)| p).find(|&p| {
        let before = lower[..p].chars().next_back();
        let after = lower[p + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// Prints an error report to standard error.
pub fn print(message: &str, origin: Option<&Origin>, spot: Option<Spot<'_>>, color: bool) {
    let text = format(message, origin, spot, color);
    let mut stderr = std::io::stderr().lock();
    // Nothing sensible is left to do when standard error is gone.
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// The text of an error report (see [`print`]).
pub fn format(
    message: &str,
    origin: Option<&Origin>,
    spot: Option<Spot<'_>>,
    color: bool,
) -> String {
    let paint = |code: &str, text: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    let mut report = format!("{} {message}\n", paint("1;31", "Error:"));
    let Some(origin) = origin else {
        return report;
    };
    let located = spot.and_then(|spot| {
        let offset = spot.offset?;
        let (line, column) = splitter::line_and_column(spot.text, offset);
        let line_text = spot.text.lines().nth(line - 1).unwrap_or_default();
        Some((line, column, line_text))
    });
    let (line, column) = match located {
        Some((1, column, _)) => (origin.line, origin.column + column - 1),
        Some((line, column, _)) => (origin.line + line - 1, column),
        None => (origin.line, origin.column),
    };
    report.push_str(&format!(
        " {} {}:{line}:{column}\n",
        paint("34", "-->"),
        origin.source
    ));
    if let Some((_, relative_column, line_text)) = located {
        let gutter = line.to_string();
        let pad = " ".repeat(gutter.len());
        let shown = line_text.replace('\t', " ");
        let caret = format!("{}^", " ".repeat(relative_column - 1));
        report.push_str(&format!(
            "{pad} {bar}\n{} {bar} {shown}\n{pad} {bar} {}\n",
            paint("34", &gutter),
            paint("1;31", &caret),
            bar = paint("34", "|"),
        ));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_parser_position_off() {
        assert_eq!(
            split_position("Expected: end of statement, found: FORM at Line: 2, Column: 10"),
            ("Expected: end of statement, found: FORM", Some((2, 10)))
        );
        assert_eq!(split_position("no position"), ("no position", None));
    }

    #[test]
    fn points_at_unknown_names() {
        let error = Error::unknown("Table", "edgs", ["edges"]);
        let statement = "SELECT * FROM edgs_x, edgs;";
        let (message, offset) = locate(&error, statement);
        assert_eq!(
            message,
            "Table 'edgs' does not exist (did you mean 'edges'?)"
        );
        assert_eq!(offset, statement.rfind("edgs"));
    }

    #[test]
    fn reports_the_line_and_column_in_the_input() {
        let statement = "SELECT *\n  FORM t;";
        let error = Error::Syntax(
            "Expected: end of statement, found: FORM at Line: 2, Column: 3".to_string(),
        );
        let (message, offset) = locate(&error, statement);
        let origin = Origin {
            source: "script.sql".to_string(),
            line: 7,
            column: 5,
        };
        let spot = Spot {
            text: statement,
            offset,
        };
        assert_eq!(
            format(&message, Some(&origin), Some(spot), false),
            "Error: Syntax error: Expected: end of statement, found: FORM\n \
             --> script.sql:8:3\n  |\n8 |   FORM t;\n  |   ^\n"
        );
    }

    #[test]
    fn einsum_positions_become_input_positions() {
        let statement = "C[i] = SUM(j)\n  Bb[i, j];";
        let error =
            einsql::einsum::located(statement, 16..18, Error::unknown("Table", "Bb", ["B"]));
        let (message, offset) = locate(&error, statement);
        assert_eq!(message, "Table 'Bb' does not exist (did you mean 'B'?)");
        assert_eq!(offset, Some(16));
        let origin = Origin {
            source: "script.sql".to_string(),
            line: 3,
            column: 1,
        };
        let spot = Spot {
            text: statement,
            offset,
        };
        assert_eq!(
            format(&message, Some(&origin), Some(spot), false),
            "Error: Table 'Bb' does not exist (did you mean 'B'?)\n \
             --> script.sql:4:3\n  |\n4 |   Bb[i, j];\n  |   ^\n"
        );
    }

    #[test]
    fn first_line_columns_add_the_statement_column() {
        let origin = Origin {
            source: "<command>".to_string(),
            line: 1,
            column: 11,
        };
        let spot = Spot {
            text: "SELECT * FROM nope;",
            offset: Some(14),
        };
        let text = format(
            "Table 'nope' does not exist",
            Some(&origin),
            Some(spot),
            false,
        );
        assert!(text.contains("--> <command>:1:25\n"), "{text}");
        assert!(
            text.ends_with("1 | SELECT * FROM nope;\n  |               ^\n"),
            "{text}"
        );
    }

    #[test]
    fn colour_wraps_the_label() {
        let text = format("boom", None, None, true);
        assert_eq!(text, "\x1b[1;31mError:\x1b[0m boom\n");
    }
}
