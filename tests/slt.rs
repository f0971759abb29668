//! Runs every sqllogictest file under `tests/slt/` against a fresh in-memory
//! database. Files may use `${__TEST_DIR__}` (a temporary folder) and
//! `${DATASETS}` (the public datasets folder) after `control substitution on`;
//! a file whose name starts with `datasets_` is skipped, saying so, when the
//! datasets are absent.
//!
//! Results are compared cell by cell, numbers with a tolerance (see
//! [`cells_match`]): the `duckdb_*.slt` files hold DuckDB's answers, recorded
//! by `scripts/record-duckdb-answers`, and DuckDB's libm may round `exp`, `ln`
//! or `sigmoid` in the last bit differently from Rust's. Durations in text
//! cells (`EXPLAIN ANALYZE`) read `<time>` (see [`mask_times`]).
//!
//! `EINSQL_SLT_COMPLETE=1 cargo test --test slt` rewrites the expected
//! output of every file from what einsql returns now (results that match
//! within the tolerance keep their recorded text), so that golden plans
//! change as reviewed diffs rather than by hand.

mod common;

use std::path::Path;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int64Array, StringArray,
    UInt64Array,
};
use arrow::datatypes::DataType;
use einsql::{Database, Error};
use sqllogictest::{DBOutput, DefaultColumnType, Normalizer, Runner, default_validator};

/// One database per test file.
struct Adapter(Database);

impl sqllogictest::DB for Adapter {
    type Error = Error;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, Error> {
        let result = self.0.execute(sql)?;
        if result.message.is_some() && result.schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = result
            .schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Int64 | DataType::UInt64 | DataType::Decimal128(_, 0) => {
                    DefaultColumnType::Integer
                }
                DataType::Float64 => DefaultColumnType::FloatingPoint,
                _ => DefaultColumnType::Text,
            })
            .collect();
        let mut rows = Vec::new();
        for batch in &result.batches {
            for row in 0..batch.num_rows() {
                rows.push(
                    batch
                        .columns()
                        .iter()
                        .map(|c| mask_times(&cell(c, row)))
                        .collect(),
                );
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }
}

/// `text` with every duration (`1.234 ms`) replaced by `<time>`, so that
/// `EXPLAIN ANALYZE` output can be a golden.
fn mask_times(text: &str) -> String {
    let mut masked = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" ms") {
        let (before, after) = rest.split_at(at);
        let number_start = before
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(0, |p| p + 1);
        let number = &before[number_start..];
        let is_duration = number.contains('.')
            && number.starts_with(|c: char| c.is_ascii_digit())
            && number.ends_with(|c: char| c.is_ascii_digit());
        if is_duration {
            masked.push_str(&before[..number_start]);
            masked.push_str("<time>");
        } else {
            masked.push_str(before);
            masked.push_str(" ms");
        }
        rest = &after[" ms".len()..];
    }
    masked.push_str(rest);
    masked
}

/// Whether `EINSQL_SLT_COMPLETE=1` asks for the files to be rewritten.
fn completing() -> bool {
    std::env::var_os("EINSQL_SLT_COMPLETE").is_some_and(|v| v == "1")
}

/// Relative (and, near zero, absolute) error up to which two numbers match.
const TOLERANCE: f64 = 1e-12;

/// Whether an expected cell and an actual one agree: equal text; or both
/// integers and equal (so `-0` matches `0`, and large integers stay exact);
/// or both numbers within [`TOLERANCE`] of each other, relatively or
/// absolutely (`NaN` matches `NaN`, an infinity only itself).
fn cells_match(expected: &str, actual: &str) -> bool {
    if expected == actual {
        return true;
    }
    if let (Ok(e), Ok(a)) = (expected.parse::<i128>(), actual.parse::<i128>()) {
        return e == a;
    }
    match (expected.parse::<f64>(), actual.parse::<f64>()) {
        (Ok(e), Ok(a)) if e.is_nan() || a.is_nan() => e.is_nan() && a.is_nan(),
        (Ok(e), Ok(a)) if e == a => true,
        (Ok(e), Ok(a)) if e.is_infinite() || a.is_infinite() => false,
        (Ok(e), Ok(a)) => {
            let error = (e - a).abs();
            error <= TOLERANCE * e.abs().max(a.abs()) || error <= TOLERANCE
        }
        _ => false,
    }
}

/// The runner's validator: the rows as the default validator normalizes
/// them, compared cell by cell with [`cells_match`]. Files using the
/// `<slt:ignore>` marker get the default validator.
fn tolerant_validator(normalizer: Normalizer, actual: &[Vec<String>], expected: &[String]) -> bool {
    if expected.iter().any(|line| line.contains("<slt:ignore>")) {
        return default_validator(normalizer, actual, expected);
    }
    actual.len() == expected.len()
        && actual.iter().zip(expected).all(|(row, line)| {
            let row = row.iter().map(normalizer).collect::<Vec<_>>().join(" ");
            let line = normalizer(line);
            let (got, want): (Vec<&str>, Vec<&str>) = (
                row.split_ascii_whitespace().collect(),
                line.split_ascii_whitespace().collect(),
            );
            got.len() == want.len() && want.iter().zip(&got).all(|(e, a)| cells_match(e, a))
        })
}

/// A value as the test files spell it.
fn cell(array: &ArrayRef, row: usize) -> String {
    if array.is_null(row) {
        return "NULL".to_string();
    }
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<UInt64Array>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
        a.value(row).to_string()
    } else if let Some(a) = any.downcast_ref::<StringArray>() {
        a.value(row).to_string()
    } else {
        format!("<{}>", array.data_type())
    }
}

#[test]
fn sqllogictest_files() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .expect("tests/slt exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no .slt files in {}",
        directory.display()
    );
    let datasets = common::datasets();
    let mut failures = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("datasets_") && datasets.is_none() {
            eprintln!("skipping {name}: no datasets");
            continue;
        }
        let mut runner = Runner::new(|| async { Ok(Adapter(Database::open_in_memory())) });
        runner.with_validator(tolerant_validator);
        if let Some(datasets) = &datasets {
            runner.set_var("DATASETS".to_string(), datasets.display().to_string());
        }
        let outcome = if completing() {
            futures::executor::block_on(runner.update_test_file(
                file,
                " ",
                tolerant_validator,
                sqllogictest::default_normalizer,
                sqllogictest::default_column_validator,
            ))
            .map_err(|e| e.to_string())
        } else {
            runner.run_file(file).map_err(|e| e.to_string())
        };
        match outcome {
            Ok(()) => eprintln!("ok {name}"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn durations_are_masked() {
    assert_eq!(
        mask_times("Optimized in 0.123 ms (semijoin reductions 12.000 ms)"),
        "Optimized in <time> (semijoin reductions <time>)"
    );
    assert_eq!(
        mask_times("  #e1: 3 entries, 1.5 ms"),
        "  #e1: 3 entries, <time>"
    );
    assert_eq!(
        mask_times("3 ms and 1. ms and x.5 ms"),
        "3 ms and 1. ms and x.5 ms"
    );
    assert_eq!(mask_times("no duration"), "no duration");
}

#[test]
fn numbers_match_within_the_tolerance_and_text_exactly() {
    assert!(cells_match("abc", "abc"));
    assert!(!cells_match("abc", "abd"));
    assert!(!cells_match("true", "false"));
    assert!(!cells_match("NULL", "0"));
    assert!(cells_match("0.3", "0.30000000000000004"));
    assert!(cells_match("0.6224593312018546", "0.6224593312018547"));
    assert!(cells_match("3", "2.9999999999999996"));
    assert!(!cells_match("1", "1.000000001"));
    assert!(cells_match("0", "0.0000000000001"));
    assert!(!cells_match("0", "0.00000000001"));
    assert!(cells_match("-0", "0"));
    assert!(!cells_match("9007199254740993", "9007199254740992"));
    assert!(cells_match("NaN", "NaN"));
    assert!(!cells_match("NaN", "0"));
    assert!(cells_match("inf", "inf"));
    assert!(!cells_match("inf", "-inf"));
    assert!(!cells_match("inf", "1000000000000000"));
}

#[test]
fn rows_match_cell_by_cell() {
    let normalizer: Normalizer = sqllogictest::default_normalizer;
    let rows = |cells: &[&[&str]]| -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|row| row.iter().map(|c| c.to_string()).collect())
            .collect()
    };
    let expected = vec!["a 1 0.3".to_string(), "b 2 NULL".to_string()];
    let close = rows(&[&["a", "1", "0.30000000000000004"], &["b", "2", "NULL"]]);
    assert!(tolerant_validator(normalizer, &close, &expected));
    let wrong = rows(&[&["a", "1", "0.31"], &["b", "2", "NULL"]]);
    assert!(!tolerant_validator(normalizer, &wrong, &expected));
    let short = rows(&[&["a", "1", "0.3"]]);
    assert!(!tolerant_validator(normalizer, &short, &expected));
    let extra_cell = rows(&[&["a", "1", "0.3", "x"], &["b", "2", "NULL"]]);
    assert!(!tolerant_validator(normalizer, &extra_cell, &expected));
    let ignored = vec!["a <slt:ignore>".to_string()];
    assert!(tolerant_validator(
        normalizer,
        &rows(&[&["a", "7"]]),
        &ignored
    ));
}
