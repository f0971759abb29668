//! The SQL einsql emits for other engines ([`einsql::emit`]).
//!
//! - Golden files `tests/emit/*.slt`: `statement ok` blocks set up a fresh
//!   database; each `emit <dialect>` block gives one statement and, after
//!   `----`, the SQL expected for it (`emit <dialect> error`: the expected
//!   error). A block ends at a blank line. `EINSQL_BLESS=1 cargo test
//!   --test emit` rewrites the files with what the emitter writes now.
//! - Peers: when `$EINSQL_PEERS_PYTHON` names a Python with the `duckdb`
//!   and `datafusion` packages (`scripts/peers-venv` makes one), the SQL of
//!   every golden example and of every `queries-lite` subgraph query of
//!   yeast and hprd runs on DuckDB and DataFusion (`scripts/peers.py`)
//!   over the tables as einsql exports them to Parquet, and each answer
//!   must equal einsql's (integers exactly, floats to 1e-9). Without it
//!   the test says it skips.

mod common;
#[path = "../benches/workload/subgraph.rs"]
mod subgraph;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use einsql::Database;
use einsql::emit::Dialect;
use einsql::io::graph::QueryGraph;
use subgraph::{load_data_file, to_einsum};

/// One block of a golden file.
enum Block {
    /// Lines kept as they are (comments, blank lines).
    Text(String),
    /// `statement ok` and its statement.
    Statement(String),
    /// `emit <dialect> [error]`, its statement and the expected output.
    Emit {
        dialect: Dialect,
        error: bool,
        statement: String,
        expected: String,
    },
}

fn parse(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().peekable();
    let until_blank = |lines: &mut std::iter::Peekable<std::str::Lines<'_>>, stop: Option<&str>| {
        let mut out = Vec::new();
        while let Some(line) = lines.peek() {
            if line.trim().is_empty() || Some(*line) == stop {
                break;
            }
            out.push(lines.next().unwrap_or_default().to_string());
        }
        out.join("\n")
    };
    while let Some(line) = lines.next() {
        if line == "statement ok" {
            blocks.push(Block::Statement(until_blank(&mut lines, None)));
        } else if let Some(rest) = line.strip_prefix("emit ") {
            let mut words = rest.split_whitespace();
            let dialect = Dialect::from_name(words.next().unwrap_or_default()).expect("dialect");
            let error = words.next() == Some("error");
            let statement = until_blank(&mut lines, Some("----"));
            assert_eq!(lines.next(), Some("----"), "'----' after {statement}");
            let expected = until_blank(&mut lines, None);
            blocks.push(Block::Emit {
                dialect,
                error,
                statement,
                expected,
            });
        } else {
            blocks.push(Block::Text(line.to_string()));
        }
    }
    blocks
}

fn golden_files() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emit");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("tests/emit")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    files
}

/// What the emitter writes for one block: the SQL, or the error's text.
fn emitted(db: &Database, statement: &str, dialect: Dialect) -> (bool, String) {
    match db.explain_sql(statement, dialect) {
        Ok(sql) => (false, sql),
        Err(e) => (true, e.to_string()),
    }
}

#[test]
fn emitted_sql_matches_the_golden_files() {
    let bless = std::env::var_os("EINSQL_BLESS").is_some();
    let mut failures = Vec::new();
    for path in golden_files() {
        let text = std::fs::read_to_string(&path).expect("golden file");
        let db = Database::open_in_memory();
        let mut out = String::new();
        for block in parse(&text) {
            match block {
                Block::Text(line) => writeln!(out, "{line}").unwrap_or_default(),
                Block::Statement(statement) => {
                    db.execute(&statement)
                        .unwrap_or_else(|e| panic!("{}: {statement}: {e}", path.display()));
                    writeln!(out, "statement ok\n{statement}").unwrap_or_default();
                }
                Block::Emit {
                    dialect,
                    error,
                    statement,
                    expected,
                } => {
                    let (is_error, actual) = emitted(&db, &statement, dialect);
                    if (is_error, actual.as_str()) != (error, expected.as_str()) {
                        failures.push(format!(
                            "{} ({dialect}): {statement}\nexpected{}:\n{expected}\nactual{}:\n{actual}",
                            path.display(),
                            if error { " error" } else { "" },
                            if is_error { " error" } else { "" },
                        ));
                    }
                    let mark = if is_error { " error" } else { "" };
                    writeln!(out, "emit {dialect}{mark}\n{statement}\n----\n{actual}")
                        .unwrap_or_default();
                }
            }
        }
        if bless {
            std::fs::write(&path, out).expect("write golden file");
        }
    }
    assert!(
        bless || failures.is_empty(),
        "{} differ (EINSQL_BLESS=1 rewrites the files):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The Python with the peer engines, or `None` after saying why the peer
/// test skips.
fn peers_python() -> Option<PathBuf> {
    python_with(&["duckdb", "datafusion"])
}

/// The Python of `$EINSQL_PEERS_PYTHON` if it imports `packages`, or
/// `None` after saying why the test skips.
fn python_with(packages: &[&str]) -> Option<PathBuf> {
    let Some(python) = std::env::var_os("EINSQL_PEERS_PYTHON") else {
        eprintln!(
            "skipping: EINSQL_PEERS_PYTHON is not set (scripts/peers-venv [--spark] makes a \
             Python with {})",
            packages.join(", ")
        );
        return None;
    };
    let ok = Command::new(&python)
        .args(["-c", &format!("import {}", packages.join(", "))])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "skipping: {} cannot import {}",
            PathBuf::from(&python).display(),
            packages.join(", ")
        );
        return None;
    }
    Some(PathBuf::from(python))
}

/// Whether a golden statement is a SQL query (else tensor index notation).
fn is_query(statement: &str) -> bool {
    matches!(
        einsql::session::parse_script(statement).as_deref(),
        Ok([einsql::session::Statement::Sql(_)])
    )
}

/// The rows of a query's result as JSON arrays (NULL as `null`).
fn rows_json(result: &einsql::QueryResult) -> serde_json::Value {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};
    let mut rows = Vec::new();
    for batch in &result.batches {
        for row in 0..batch.num_rows() {
            let cells: Vec<serde_json::Value> = batch
                .columns()
                .iter()
                .map(|column| {
                    if column.is_null(row) {
                        return serde_json::Value::Null;
                    }
                    match column.data_type() {
                        DataType::Int64 => column.as_primitive::<Int64Type>().value(row).into(),
                        DataType::Float64 => column.as_primitive::<Float64Type>().value(row).into(),
                        DataType::Boolean => column.as_boolean().value(row).into(),
                        DataType::Utf8 => column.as_string::<i32>().value(row).into(),
                        // HUGEINT: exact while it fits JSON's integers, else
                        // compared as a float (to 1e-9, as floats are).
                        DataType::Decimal128(_, 0) => {
                            let v = column.as_primitive::<Decimal128Type>().value(row);
                            i64::try_from(v).map_or_else(|_| (v as f64).into(), Into::into)
                        }
                        other => panic!("a result column of type {other}"),
                    }
                })
                .collect();
            rows.push(serde_json::Value::Array(cells));
        }
    }
    serde_json::Value::Array(rows)
}

/// One statement to check on a peer.
struct Case {
    name: String,
    sql: String,
    expected: serde_json::Value,
}

/// Exports every table of `db` to `dir` as Parquet; the job's table map.
fn export(db: &Database, dir: &Path) -> serde_json::Map<String, serde_json::Value> {
    let mut tables = serde_json::Map::new();
    for name in db.table_names() {
        let path = dir.join(format!("{name}.parquet"));
        db.execute(&format!("COPY \"{name}\" TO '{}'", path.display()))
            .unwrap_or_else(|e| panic!("COPY {name}: {e}"));
        tables.insert(name, serde_json::Value::from(path.display().to_string()));
    }
    tables
}

/// Runs `cases` on `engine` with `python`; the failures.
fn run_peer(
    python: &Path,
    engine: &str,
    dir: &Path,
    tables: &serde_json::Map<String, serde_json::Value>,
    cases: &[Case],
) -> Vec<String> {
    let job = serde_json::json!({
        "engine": engine,
        "threads": 2,
        "memory_limit": "2GB",
        "temp_directory": dir.join("spill").display().to_string(),
        "timeout": 60,
        "tables": tables,
        "cases": cases.iter().map(|c| {
            let mut case = serde_json::json!({"name": c.name, "sql": c.sql});
            case[if c.expected.is_string() { "expected" } else { "expected_rows" }] =
                c.expected.clone();
            case
        }).collect::<Vec<_>>(),
    });
    let job_path = dir.join(format!("{engine}-job.json"));
    std::fs::write(&job_path, job.to_string()).expect("job file");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peers.py");
    let output = Command::new(python)
        .arg(script)
        .arg(&job_path)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut failures = Vec::new();
    let mut seen = 0;
    for line in stdout.lines() {
        let result: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        seen += 1;
        if result["status"] != "ok" {
            failures.push(format!("{engine}: {result}"));
        }
    }
    if seen != cases.len() || !output.status.success() {
        failures.push(format!(
            "{engine}: {seen} of {} cases reported; stderr:\n{}",
            cases.len(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    eprintln!("{engine}: {} cases, {} failed", cases.len(), failures.len());
    failures
}

#[test]
fn golden_examples_give_einsql_answers_on_duckdb_and_datafusion() {
    let Some(python) = peers_python() else {
        return;
    };
    check_golden_examples(&python, &[Dialect::DuckDb, Dialect::DataFusion]);
}

/// Spark local mode takes seconds to start: run with `--ignored` and a
/// `$EINSQL_PEERS_PYTHON` from `scripts/peers-venv --spark`.
#[test]
#[ignore]
fn golden_examples_give_einsql_answers_on_spark() {
    let Some(python) = python_with(&["pyspark"]) else {
        return;
    };
    check_golden_examples(&python, &[Dialect::Spark]);
}

/// Runs the SQL of every golden example on each of `dialects` (the engine
/// of that name) and compares the answers with einsql's.
fn check_golden_examples(python: &Path, dialects: &[Dialect]) {
    let mut failures = Vec::new();
    for path in golden_files() {
        let text = std::fs::read_to_string(&path).expect("golden file");
        let dir = tempfile::tempdir().expect("temporary folder");
        let db = Database::open_in_memory();
        let mut by_engine: Vec<(&str, Dialect, Vec<Case>)> = dialects
            .iter()
            .map(|d| (d.name(), *d, Vec::new()))
            .collect();
        let mut statements = Vec::new();
        for block in parse(&text) {
            match block {
                Block::Statement(s) => {
                    db.execute(&s).expect("statement");
                }
                Block::Emit {
                    error: false,
                    statement,
                    ..
                } if !statements.contains(&statement) => statements.push(statement),
                _ => {}
            }
        }
        let tables = export(&db, dir.path());
        for (n, statement) in statements.iter().enumerate() {
            let sqls: Vec<String> = by_engine
                .iter()
                .map(|(_, dialect, _)| db.explain_sql(statement, *dialect).expect("emits"))
                .collect();
            // einsql's answer: a query's rows, or an einsum statement's
            // stored result.
            let expected = if is_query(statement) {
                rows_json(&db.execute(statement).expect("einsql runs it"))
            } else {
                let path = dir.path().join(format!("expected-{n}.parquet"));
                db.execute(statement).expect("einsql runs it");
                let name = statement
                    .split(['[', '=', ' '])
                    .next()
                    .unwrap_or_default()
                    .trim();
                db.execute(&format!("COPY \"{name}\" TO '{}'", path.display()))
                    .expect("COPY result");
                serde_json::Value::from(path.display().to_string())
            };
            for ((_, _, cases), sql) in by_engine.iter_mut().zip(sqls) {
                cases.push(Case {
                    name: format!("{}: {statement}", path.display()),
                    sql,
                    expected: expected.clone(),
                });
            }
        }
        for (engine, _, cases) in &by_engine {
            failures.extend(run_peer(python, engine, dir.path(), &tables, cases));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn subgraph_queries_lite_give_einsql_counts_on_duckdb_and_datafusion() {
    let Some(python) = peers_python() else {
        return;
    };
    let Some(datasets) = common::datasets() else {
        return;
    };
    let mut failures = Vec::new();
    for name in ["yeast", "hprd"] {
        let folder = datasets.join("subgraph").join(name);
        if !folder.is_dir() {
            eprintln!("skipping {name}: '{}' not found", folder.display());
            continue;
        }
        let db = Database::open_in_memory();
        load_data_file(&db, folder.join(format!("{name}.graph"))).expect("data graph");
        let dir = tempfile::tempdir().expect("temporary folder");
        let tables = export(&db, dir.path());
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder.join("queries-lite"))
            .expect("queries-lite")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "graph"))
            .collect();
        files.sort();
        let mut duckdb = Vec::new();
        let mut datafusion = Vec::new();
        for file in &files {
            let query = QueryGraph::read(file).expect("query graph");
            let text = to_einsum(&query, "count").expect("expressible");
            let label = format!("{name}/{}", file.file_name().unwrap_or_default().display());
            let emit = |dialect| db.explain_sql(&text, dialect);
            let (sql_duckdb, sql_datafusion) =
                match (emit(Dialect::DuckDb), emit(Dialect::DataFusion)) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(e), _) | (_, Err(e)) => {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                };
            db.execute(&text).expect("einsql counts");
            let result = db.execute("SELECT v FROM count").expect("count");
            let count = result.batches[0]
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .map(|a| a.value(0))
                .expect("an integer count");
            let expected = serde_json::json!([[count]]);
            duckdb.push(Case {
                name: label.clone(),
                sql: sql_duckdb,
                expected: expected.clone(),
            });
            datafusion.push(Case {
                name: label,
                sql: sql_datafusion,
                expected,
            });
        }
        failures.extend(run_peer(&python, "duckdb", dir.path(), &tables, &duckdb));
        failures.extend(run_peer(
            &python,
            "datafusion",
            dir.path(),
            &tables,
            &datafusion,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
