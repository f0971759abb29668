//! Runs every sqllogictest file under `tests/slt/` against a fresh in-memory
//! database. Files may use `${__TEST_DIR__}` (a temporary folder) and
//! `${DATASETS}` (the public datasets folder) after `control substitution on`;
//! a file whose name starts with `datasets_` is skipped, saying so, when the
//! datasets are absent.

mod common;

use std::path::Path;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt64Array,
};
use arrow::datatypes::DataType;
use einsql::{Database, Error};
use sqllogictest::{DBOutput, DefaultColumnType, Runner};

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
                DataType::Int64 | DataType::UInt64 => DefaultColumnType::Integer,
                DataType::Float64 => DefaultColumnType::FloatingPoint,
                _ => DefaultColumnType::Text,
            })
            .collect();
        let mut rows = Vec::new();
        for batch in &result.batches {
            for row in 0..batch.num_rows() {
                rows.push(batch.columns().iter().map(|c| cell(c, row)).collect());
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }
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
        if let Some(datasets) = &datasets {
            runner.set_var("DATASETS".to_string(), datasets.display().to_string());
        }
        match runner.run_file(file) {
            Ok(()) => eprintln!("ok {name}"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
