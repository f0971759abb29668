//! The one error type of einsql.
//!
//! Every fallible operation in the engine returns [`Result<T>`]. Variants are
//! grouped by the stage that raises them (file formats, SQL, catalog, storage,
//! execution), and each message reads as a sentence a user can act on: it
//! names the file and line, the table or column, or the unsupported construct,
//! and suggests the closest known name where one exists ("did you mean").

use std::path::PathBuf;

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in einsql.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error while reading or writing a file.
    #[error("I/O error on '{}': {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A malformed input file: the file, the 1-based line, and the problem.
    #[error("{}:{line}: {message}", path.display())]
    FileFormat {
        path: PathBuf,
        line: u64,
        message: String,
    },

    /// A file whose content is well-formed but cannot be represented.
    #[error("'{}': {message}", path.display())]
    Unsupported { path: PathBuf, message: String },

    /// The SQL or einsum text does not parse.
    #[error("Syntax error: {0}")]
    Syntax(String),

    /// An error in a statement at a 1-based line and column, with the
    /// statement's line and a caret under the offending text.
    #[error("{line}:{column}: {source}\n{excerpt}")]
    Positioned {
        line: usize,
        column: usize,
        excerpt: String,
        #[source]
        source: Box<Error>,
    },

    /// A construct that einsql understands but does not support (yet).
    #[error("Not supported: {0}")]
    NotSupported(String),

    /// A name that is not in the catalog, with the closest known name.
    #[error("{kind} '{name}' does not exist{}", did_you_mean(suggestion))]
    UnknownName {
        kind: &'static str,
        name: String,
        suggestion: Option<String>,
    },

    /// A table that already exists.
    #[error("Table '{0}' already exists")]
    TableExists(String),

    /// An index name already declared in the database (on the table
    /// named second).
    #[error("Index '{0}' already exists (on table '{1}')")]
    IndexExists(String, String),

    /// Values or columns of a type that does not fit where they are used.
    #[error("Type error: {0}")]
    Type(String),

    /// A statement that is well-formed but invalid, e.g. a coordinate out of
    /// range or a column listed twice.
    #[error("Invalid input: {0}")]
    Invalid(String),

    /// The statement was interrupted (see [`crate::Interrupt`]).
    #[error("Cancelled: the statement was interrupted")]
    Cancelled,

    /// Exact integer arithmetic that does not fit in 64 bits.
    #[error("Integer overflow: {0}")]
    Overflow(String),

    /// A query whose intermediates and results would exceed the memory
    /// limit (`SET memory_limit`); it stopped and changed nothing.
    #[error("Out of memory: {0}")]
    OutOfMemory(String),

    /// An intermediate step of a plan charged more memory than its guard
    /// allows (far more than its estimate needs, or the memory limit):
    /// the session plans the statement again without steps that large
    /// ([`crate::exec::StepGuards`]), so a user sees it only from the
    /// executor's API.
    #[error(
        "Estimate exceeded: step {0} of the plan charged far more memory than its estimate \
         needs, or met the memory limit"
    )]
    StepOutgrown(String),

    /// A query whose sum the optimizer kept as one loop nest, on the
    /// strength of a bound it takes to be loose, visited more assignments
    /// than its guard allows: the session plans the statement again with
    /// the sum searched ([`crate::exec::StepGuards::insert_visits`]), so
    /// a user sees it only from the executor's API.
    #[error(
        "Estimate exceeded: the loop nest of query {0} of the plan visited more assignments \
         than its guard allows"
    )]
    NestOutgrown(String),

    /// A broken invariant of the engine, not of the input: a bug in einsql.
    #[error("Internal error: {0} (this is a bug in einsql; please report it)")]
    Internal(String),

    /// A database directory whose catalog cannot be read.
    #[error("Catalog error in '{}': {message}", path.display())]
    Catalog { path: PathBuf, message: String },

    /// An error reported by the Arrow library.
    #[error("Arrow error: {0}")]
    Arrow(#[from] arrow::error::ArrowError),

    /// An error reported by the Parquet library.
    #[error("Parquet error: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!(" (did you mean '{s}'?)"),
        None => String::new(),
    }
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A malformed-file error at a 1-based `line` of `path`.
    pub fn file_format(path: impl Into<PathBuf>, line: u64, message: impl Into<String>) -> Self {
        Error::FileFormat {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// An unknown name of `kind` ("Table", "Column", ...), suggesting the
    /// closest of `candidates` when one is close enough to be a likely typo.
    pub fn unknown<'a>(
        kind: &'static str,
        name: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        Error::UnknownName {
            kind,
            name: name.to_string(),
            suggestion: closest_name(name, candidates),
        }
    }
}

/// The candidate closest to `name` by edit distance (case-insensitive), if it
/// is within a third of the name's length (at least 1, at most 3 edits).
pub fn closest_name<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let target = name.to_lowercase();
    let limit = (target.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (edit_distance(&target, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

/// Edit distance between two strings, by characters, where an insertion,
/// a deletion, a substitution or a swap of two neighbours costs one (optimal
/// string alignment), so that `edgse` is one edit from `edges`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: distance between the first i chars of a and the first j of b.
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = ["edges", "labels", "orders"];
        assert_eq!(closest_name("edgse", names), Some("edges".to_string()));
        assert_eq!(closest_name("LABELS", names), Some("labels".to_string()));
        assert_eq!(closest_name("customers", names), None);
    }

    #[test]
    fn unknown_name_message_has_hint() {
        let err = Error::unknown("Table", "edgs", ["edges", "labels"]);
        assert_eq!(
            err.to_string(),
            "Table 'edgs' does not exist (did you mean 'edges'?)"
        );
    }
}
