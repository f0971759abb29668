//! Line editing: the `rustyline` helper with tab completion, and where the
//! history file lives.
//!
//! Completion looks at the text before the cursor: the first word of a
//! dot-command completes to command names and its arguments to what the
//! command takes (files, tables, modes, on/off); inside a `'...'` literal
//! it completes file paths; elsewhere it completes SQL keywords, the table
//! functions, table names and column names. Table and column names come
//! from a snapshot ([`Names`]) that the shell refreshes after every
//! statement.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::commands::{self, Arguments};
use super::splitter::{self, State};

/// Keywords offered by completion (upper case; typed lower case they
/// complete in lower case).
const KEYWORDS: &[&str] = &[
    "AND",
    "AS",
    "ASC",
    "AVG",
    "BIGINT",
    "BOOLEAN",
    "BY",
    "CASE",
    "COPY",
    "COUNT",
    "CREATE",
    "DELIMITER",
    "DESC",
    "DESCRIBE",
    "DISTINCT",
    "DOUBLE",
    "DROP",
    "ELSE",
    "END",
    "EXISTS",
    "EXPLAIN",
    "FALSE",
    "FORMAT",
    "FROM",
    "GROUP",
    "HAVING",
    "IF",
    "IN",
    "INSERT",
    "INTEGER",
    "INTO",
    "JOIN",
    "KEY",
    "LIMIT",
    "MAX",
    "MIN",
    "NOT",
    "NULL",
    "ON",
    "OR",
    "ORDER",
    "PRIMARY",
    "REPLACE",
    "SELECT",
    "SHOW",
    "SUM",
    "TABLE",
    "TABLES",
    "THEN",
    "TO",
    "TRUE",
    "VALUES",
    "VARCHAR",
    "WHEN",
    "WHERE",
    "WITH",
];

/// The table functions that load files.
const FUNCTIONS: &[&str] = &["read_csv", "read_mtx", "read_parquet", "read_tns"];

/// The names completion offers besides keywords.
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Table names.
    pub tables: Vec<String>,
    /// Column names of all tables, sorted and without duplicates.
    pub columns: Vec<String>,
}

/// The snapshot of [`Names`] shared between the shell and the editor.
pub type SharedNames = Arc<Mutex<Names>>;

/// The `rustyline` helper of the shell.
pub struct ShellHelper {
    names: SharedNames,
}

impl ShellHelper {
    /// A helper completing from `names`.
    pub fn new(names: SharedNames) -> ShellHelper {
        ShellHelper { names }
    }
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(complete(line, pos, &names))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Validator for ShellHelper {}

impl Helper for ShellHelper {}

/// The history file: `$EINSQL_HISTORY` (empty disables history), else
/// `.einsql_history` in the home directory.
pub fn history_path() -> Option<PathBuf> {
    match std::env::var_os("EINSQL_HISTORY") {
        Some(path) if path.is_empty() => None,
        Some(path) => Some(PathBuf::from(path)),
        None => std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(|home| Path::new(&home).join(".einsql_history")),
    }
}

/// The start of the text to replace and the candidates, for the cursor at
/// byte `pos` of `line`.
pub fn complete(line: &str, pos: usize, names: &Names) -> (usize, Vec<Pair>) {
    let before = line.get(..pos).unwrap_or(line);
    let indent = before.len() - before.trim_start().len();
    if before[indent..].starts_with('.') {
        return complete_command(before, indent, names);
    }
    let split = splitter::split(before);
    if split.state == State::String
        && let Some(quote) = before.rfind('\'')
    {
        return (quote + 1, paths(&before[quote + 1..]));
    }
    if matches!(
        split.state,
        State::Identifier | State::LineComment | State::BlockComment
    ) {
        return (pos, Vec::new());
    }
    let start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let partial = &before[start..];
    let mut candidates: Vec<String> = names
        .tables
        .iter()
        .chain(&names.columns)
        .filter(|name| starts_with_ignore_case(name, partial))
        .cloned()
        .collect();
    if !partial.is_empty() {
        let lower = !partial.chars().any(char::is_uppercase);
        candidates.extend(
            KEYWORDS
                .iter()
                .filter(|k| starts_with_ignore_case(k, partial))
                .map(|k| {
                    if lower {
                        k.to_lowercase()
                    } else {
                        k.to_string()
                    }
                }),
        );
        candidates.extend(
            FUNCTIONS
                .iter()
                .filter(|f| starts_with_ignore_case(f, partial))
                .map(|f| f.to_string()),
        );
    }
    (start, pairs(candidates))
}

/// Completion inside a dot-command line starting at byte `indent`.
fn complete_command(before: &str, indent: usize, names: &Names) -> (usize, Vec<Pair>) {
    let text = &before[indent..];
    let Some(name_end) = text.find(char::is_whitespace) else {
        let candidates = commands::COMMANDS
            .iter()
            .map(|c| c.name)
            .filter(|name| name.starts_with(text))
            .map(str::to_string)
            .collect();
        return (indent, pairs(candidates));
    };
    let Some(command) = commands::find(&text[..name_end]) else {
        return (before.len(), Vec::new());
    };
    let start = before
        .rfind(char::is_whitespace)
        .map_or(before.len(), |p| p + 1);
    let partial = &before[start..];
    let argument = text[name_end..].split_whitespace().count() - usize::from(!partial.is_empty());
    let choices = |options: &[&str]| -> Vec<String> {
        options
            .iter()
            .filter(|o| o.starts_with(partial))
            .map(|o| o.to_string())
            .collect()
    };
    let candidates = match command.arguments {
        Arguments::Nothing => Vec::new(),
        Arguments::Files => return (start, paths(partial)),
        Arguments::TableThenFile if argument > 0 => return (start, paths(partial)),
        Arguments::Tables | Arguments::TableThenFile => names
            .tables
            .iter()
            .filter(|t| starts_with_ignore_case(t, partial))
            .cloned()
            .collect(),
        Arguments::Choices(options) => choices(options),
        Arguments::Modes => choices(&super::render::Mode::ALL.map(|m| m.name())),
        Arguments::Commands => commands::COMMANDS
            .iter()
            .map(|c| c.name)
            .filter(|n| n.starts_with(partial) || n[1..].starts_with(partial))
            .map(str::to_string)
            .collect(),
    };
    (start, pairs(candidates))
}

fn starts_with_ignore_case(name: &str, prefix: &str) -> bool {
    name.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Sorted, distinct candidates.
fn pairs(mut candidates: Vec<String>) -> Vec<Pair> {
    candidates.sort();
    candidates.dedup();
    candidates
        .into_iter()
        .map(|c| Pair {
            display: c.clone(),
            replacement: c,
        })
        .collect()
}

/// The paths that complete `partial`: entries of its directory whose names
/// start with its last component (directories with a trailing `/`; hidden
/// entries only when the component starts with `.`).
fn paths(partial: &str) -> Vec<Pair> {
    let (directory, prefix) = match partial.rfind('/') {
        Some(slash) => (&partial[..=slash], &partial[slash + 1..]),
        None => ("", partial),
    };
    let listing = if directory.is_empty() {
        Path::new(".")
    } else {
        Path::new(directory)
    };
    let Ok(entries) = std::fs::read_dir(listing) else {
        return Vec::new();
    };
    let mut found: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let visible = !name.starts_with('.') || prefix.starts_with('.');
            let is_dir = entry.file_type().ok()?.is_dir();
            (visible && name.starts_with(prefix)).then_some((name, is_dir))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(name, is_dir)| {
            let shown = if is_dir { format!("{name}/") } else { name };
            Pair {
                replacement: format!("{directory}{shown}"),
                display: shown,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            tables: vec!["graph".to_string(), "sales".to_string()],
            columns: vec!["dst".to_string(), "src".to_string(), "store".to_string()],
        }
    }

    fn replacements(line: &str) -> (usize, Vec<String>) {
        let (start, pairs) = complete(line, line.len(), &names());
        (start, pairs.into_iter().map(|p| p.replacement).collect())
    }

    #[test]
    fn completes_keywords_in_the_case_typed() {
        assert_eq!(replacements("SEL"), (0, vec!["SELECT".to_string()]));
        assert_eq!(replacements("sel"), (0, vec!["select".to_string()]));
    }

    #[test]
    fn completes_tables_columns_and_functions() {
        assert_eq!(
            replacements("SELECT * FROM gr"),
            (14, vec!["graph".to_string(), "group".to_string()])
        );
        assert_eq!(
            replacements("SELECT s"),
            (
                7,
                vec![
                    "sales".to_string(),
                    "select".to_string(),
                    "show".to_string(),
                    "src".to_string(),
                    "store".to_string(),
                    "sum".to_string()
                ]
            )
        );
        assert_eq!(
            replacements("SELECT * FROM read_m"),
            (14, vec!["read_mtx".to_string()])
        );
    }

    #[test]
    fn completes_dot_commands_and_their_arguments() {
        assert_eq!(replacements(".tab"), (0, vec![".tables".to_string()]));
        assert_eq!(replacements(".mode j"), (6, vec!["json".to_string()]));
        assert_eq!(replacements(".describe s"), (10, vec!["sales".to_string()]));
        assert_eq!(replacements(".timer o").1, vec!["off", "on"]);
        assert_eq!(replacements(".nosuch x"), (9, Vec::new()));
    }

    #[test]
    fn completes_paths_inside_quotes_and_file_arguments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data").join("graph.mtx"), "").unwrap();
        std::fs::write(dir.path().join("data").join(".hidden"), "").unwrap();
        let base = dir.path().display().to_string();
        let line = format!("SELECT * FROM read_mtx('{base}/data/g");
        let (start, candidates) = replacements(&line);
        assert_eq!(start, line.find('\'').unwrap() + 1);
        assert_eq!(candidates, vec![format!("{base}/data/graph.mtx")]);
        let (_, candidates) = replacements(&format!(".read {base}/da"));
        assert_eq!(candidates, vec![format!("{base}/data/")]);
        let (_, candidates) = replacements(&format!(".save graph {base}/data/"));
        assert_eq!(candidates, vec![format!("{base}/data/graph.mtx")]);
    }
}
