//! What differs between the SQL engines the emitter writes for: identifier
//! quoting and reserved words, literals, integer sums and ranges of
//! coordinates (join hints are in [`super::relation`]).
//!
//! Integer semantics differ and are documented per dialect:
//!
//! - **DuckDB** raises an error on `BIGINT` overflow in `+`, `-` and `*`,
//!   and sums `BIGINT` into `HUGEINT`; the emitted `CAST(SUM(...) AS
//!   BIGINT)` raises an error where the sum does not fit, as einsql does.
//! - **DataFusion** sums `BIGINT` into `BIGINT` and wraps around on
//!   overflow, silently, in `+`, `*` and `SUM` (observed with the Python
//!   package 55.0.0: `SUM` of 2^62 and 2^62 gives -2^63): where einsql
//!   reports an overflow, DataFusion's answer is wrong.
//! - **Spark** 4 (ANSI mode, its default) raises `ARITHMETIC_OVERFLOW`
//!   in `+`, `*` and `SUM`, as einsql does; with
//!   `spark.sql.ansi.enabled = false` (the default before Spark 4) it wraps
//!   around silently (observed with pyspark 4.3.0: `SUM` of 2^62 and 2^62
//!   gives -2^63 without ANSI, an error with it).
//!
//! `HUGEINT` (einsql's exact 128-bit integers) is DuckDB's `HUGEINT`;
//! DataFusion and Spark have no 128-bit integer type and get
//! `DECIMAL(38, 0)` ([`Dialect::hugeint`]), which holds every integer of up
//! to 38 digits exactly (the 128-bit range reaches 39). A `BIGINT` sum
//! that einsql promotes to `HUGEINT` because its value does not fit in 64
//! bits is emitted as a `BIGINT` sum (its type is known only from the
//! data): DuckDB's `CAST` then raises an error, Spark (ANSI) raises an
//! overflow and DataFusion wraps; `CAST(... AS HUGEINT)` in the query
//! makes the emitted SQL exact in all three.
//!
//! Division: einsql's `0 / b` is 0 for every `b` (the sparse convention),
//! which the emitted SQL writes out; a non-zero value divided by 0 is an
//! error in einsql and in Spark's ANSI mode (`DIVIDE_BY_ZERO`), and
//! infinite, as IEEE has it, in DuckDB and DataFusion (observed with
//! DuckDB 2.0.1 and DataFusion 55.0.0: `1.0 / 0` gives `inf`).

use std::fmt;

use crate::error::{Error, Result};
use crate::ir::Value;

/// A SQL engine the emitter writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// DuckDB (1.x).
    DuckDb,
    /// Apache DataFusion (Python bindings, 40 and later).
    DataFusion,
    /// Apache Spark SQL (3.x and 4.x).
    Spark,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 3] = [Dialect::DuckDb, Dialect::DataFusion, Dialect::Spark];

    /// The name `EXPLAIN (FORMAT sql, DIALECT ...)` and the runner take.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::DuckDb => "duckdb",
            Dialect::DataFusion => "datafusion",
            Dialect::Spark => "spark",
        }
    }

    /// The dialect called `name` (case-insensitive).
    ///
    /// Errors: an unknown name, listing the known ones.
    pub fn from_name(name: &str) -> Result<Dialect> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "unknown SQL dialect '{name}' (known: duckdb, datafusion, spark)"
                ))
            })
    }

    /// `name` as an identifier: bare when it is a lower-case plain
    /// identifier that is not reserved, else quoted (`"x"`, or `` `x` ``
    /// in Spark). DataFusion folds bare identifiers to lower case, so
    /// names with capitals are always quoted.
    pub fn ident(self, name: &str) -> String {
        let plain = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name));
        if plain {
            return name.to_string();
        }
        match self {
            Dialect::Spark => format!("`{}`", name.replace('`', "``")),
            Dialect::DuckDb | Dialect::DataFusion => format!("\"{}\"", name.replace('"', "\"\"")),
        }
    }

    /// A string literal.
    pub fn string(self, text: &str) -> String {
        match self {
            // Spark reads backslash escapes inside string literals.
            Dialect::Spark => format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'")),
            Dialect::DuckDb | Dialect::DataFusion => format!("'{}'", text.replace('\'', "''")),
        }
    }

    /// A literal of `value`: `TRUE`, `42`, `CAST(0.5 AS DOUBLE)` (a bare
    /// `0.5` is a decimal in DuckDB and Spark), infinities and NaN as
    /// casts of strings.
    pub fn literal(self, value: Value) -> String {
        match value {
            Value::Bool(true) => "TRUE".to_string(),
            Value::Bool(false) => "FALSE".to_string(),
            Value::Int(i) if i == i64::MIN => format!("CAST({i} AS BIGINT)"),
            Value::Int(i) => i.to_string(),
            Value::Huge(h) => format!("CAST({} AS {})", h.get(), self.hugeint()),
            Value::Float(f) if f.is_nan() => "CAST('NaN' AS DOUBLE)".to_string(),
            Value::Float(f) if f.is_infinite() => {
                let sign = if f < 0.0 { "-" } else { "" };
                format!("CAST('{sign}Infinity' AS DOUBLE)")
            }
            Value::Float(f) => format!("CAST({} AS DOUBLE)", Value::Float(f)),
        }
    }

    /// The type that holds einsql's `HUGEINT`s (see the module
    /// documentation).
    pub fn hugeint(self) -> &'static str {
        match self {
            Dialect::DuckDb => "HUGEINT",
            Dialect::DataFusion | Dialect::Spark => "DECIMAL(38, 0)",
        }
    }

    /// A sum of integers as a `BIGINT` (see the module documentation).
    pub fn integer_sum(self, sum: String) -> String {
        match self {
            Dialect::DuckDb => format!("CAST({sum} AS BIGINT)"),
            Dialect::DataFusion | Dialect::Spark => sum,
        }
    }

    /// A table of the coordinates `0..size` in one column called `column`.
    pub fn range(self, column: &str, size: u64) -> String {
        let column = self.ident(column);
        match self {
            Dialect::DuckDb => format!("(SELECT range AS {column} FROM range(0, {size}))"),
            Dialect::DataFusion => format!("(SELECT value AS {column} FROM range(0, {size}))"),
            Dialect::Spark => format!("(SELECT id AS {column} FROM range(0, {size}))"),
        }
    }

    /// The rows of the table `source` (columns `columns` and the count
    /// `value`), each repeated `value` times: a join listing's rows by
    /// multiplicity. The repetition's number is in a column `#n`.
    pub fn repeat(self, source: &str, columns: &[String], value: &str) -> String {
        let n = self.ident("#n");
        let mut kept = columns.to_vec();
        kept.push(value.to_string());
        let kept = kept.join(", ");
        let generator = match self {
            Dialect::DuckDb | Dialect::DataFusion => format!("unnest(range({value}))"),
            Dialect::Spark => format!("explode(sequence(1, {value}))"),
        };
        format!("SELECT {kept}, {generator} AS {n} FROM {source} WHERE {value} > 0")
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Words quoted as identifiers in every dialect: the reserved words of
/// DuckDB, DataFusion (sqlparser's) and Spark's ANSI mode that may name a
/// table or column. Quoting a word that is not reserved is harmless.
const RESERVED: &[&str] = &[
    "all",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "between",
    "both",
    "by",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "cross",
    "current_date",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "filter",
    "for",
    "foreign",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "in",
    "inner",
    "intersect",
    "interval",
    "into",
    "is",
    "join",
    "lateral",
    "leading",
    "left",
    "like",
    "limit",
    "natural",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "over",
    "partition",
    "pivot",
    "primary",
    "qualify",
    "range",
    "references",
    "right",
    "rows",
    "select",
    "semi",
    "anti",
    "some",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "unpivot",
    "user",
    "using",
    "values",
    "when",
    "where",
    "window",
    "with",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_when_needed() {
        assert_eq!(Dialect::DuckDb.ident("src"), "src");
        assert_eq!(Dialect::DuckDb.ident("#e1"), "\"#e1\"");
        assert_eq!(Dialect::DataFusion.ident("A"), "\"A\"");
        assert_eq!(Dialect::Spark.ident("order"), "`order`");
        assert_eq!(Dialect::Spark.ident("a`b"), "`a``b`");
    }

    #[test]
    fn literals_keep_their_type() {
        assert_eq!(
            Dialect::DuckDb.literal(Value::Float(0.5)),
            "CAST(0.5 AS DOUBLE)"
        );
        assert_eq!(Dialect::Spark.literal(Value::Int(-3)), "-3");
        assert_eq!(
            Dialect::DataFusion.literal(Value::Float(f64::NEG_INFINITY)),
            "CAST('-Infinity' AS DOUBLE)"
        );
        assert_eq!(Dialect::Spark.string("it's"), "'it\\'s'");
        assert_eq!(Dialect::DuckDb.string("it's"), "'it''s'");
        assert!(Dialect::from_name("Spark").is_ok());
        assert!(Dialect::from_name("oracle").is_err());
    }
}
