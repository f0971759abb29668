//! Prepares one statement for a peer engine (what `scripts/run-on` runs):
//! exports the tables as Parquet, writes the SQL einsql emits for the
//! engine, computes einsql's own answer, and writes the job file that
//! `scripts/peers.py` runs and checks.
//!
//! ```text
//! cargo run --release --example run_on -- ENGINE DATA STATEMENT OUT_DIR [--naive]
//! ```
//!
//! - `ENGINE`: `duckdb`, `datafusion` or `spark`.
//! - `DATA`: an einsql database directory (opened, never changed: its
//!   tables are copied into memory), or a subgraph data graph (`*.graph`,
//!   stored as the bags `edges` and `labels`).
//! - `STATEMENT`: one einsum statement or SQL query, or a subgraph query graph
//!   (`*.graph`, counted into `count`), or `@FILE` with either, or a
//!   folder of query graphs (one case each, with einsql's counts).
//! - `--naive`: run the naive SQL of a subgraph query (one join of every
//!   edge and label row, `subgraph::to_sql`) instead of the emitted plan.
//!
//! `OUT_DIR/job.json` then lists the tables, the SQL and the expected
//! answer (`OUT_DIR/expected.parquet`: a query's rows, written with `COPY
//! (query) TO`, which refuses NULLs; an einsum statement's stored result).

use std::path::{Path, PathBuf};

use einsql::emit::Dialect;
#[path = "../benches/workload/subgraph.rs"]
mod subgraph;

use einsql::io::graph::QueryGraph;
use einsql::{Database, Error, Result};
use subgraph::{load_data_file, to_einsum, to_sql};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let naive = args.iter().any(|a| a == "--naive");
    let args: Vec<&String> = args.iter().filter(|a| *a != "--naive").collect();
    let [engine, data, statement, out] = args[..] else {
        return Err(Error::Invalid(
            "usage: run_on ENGINE DATA STATEMENT OUT_DIR [--naive]".to_string(),
        ));
    };
    let dialect = Dialect::from_name(engine)?;
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out).map_err(|e| Error::io(&out, e))?;

    let db = Database::open_in_memory();
    if data.ends_with(".graph") {
        load_data_file(&db, data)?;
    } else {
        let stored = Database::open(data)?;
        for name in stored.table_names() {
            db.create_table_from_tensor(&name, stored.table(&name)?.without_indexes())?;
        }
    }
    let mut tables = serde_json::Map::new();
    for name in db.table_names() {
        let path = out.join(format!("{name}.parquet"));
        db.execute(&format!("COPY \"{name}\" TO '{}'", path.display()))?;
        tables.insert(name, serde_json::Value::from(path.display().to_string()));
    }
    let mut cases = Vec::new();
    if Path::new(statement.as_str()).is_dir() {
        // Every query graph of a folder, counted.
        let mut files: Vec<PathBuf> = std::fs::read_dir(statement.as_str())
            .map_err(|e| Error::io(statement.as_str(), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "graph"))
            .collect();
        files.sort();
        for file in files {
            let query = QueryGraph::read(&file)?;
            let einsum = to_einsum(&query, "count")?;
            let sql = if naive {
                to_sql(&query)?
            } else {
                db.explain_sql(&einsum, dialect)?
            };
            db.execute(&einsum)?;
            let count = db.execute("SELECT v FROM count")?;
            let count = count
                .batches
                .first()
                .and_then(|b| {
                    b.column(0)
                        .as_any()
                        .downcast_ref::<arrow::array::Int64Array>()
                        .map(|a| a.value(0))
                })
                .ok_or_else(|| Error::Invalid("no count".to_string()))?;
            let name = file.file_name().unwrap_or_default().display().to_string();
            cases.push(serde_json::json!({"name": name, "sql": sql, "expected_rows": [[count]]}));
        }
    } else {
        let text = match statement.strip_prefix('@') {
            Some(file) => {
                std::fs::read_to_string(file).map_err(|e| Error::io(Path::new(file), e))?
            }
            None => statement.clone(),
        };
        let (text, naive_sql) = if text.trim_end().ends_with(".graph") {
            let query = QueryGraph::read(text.trim())?;
            (to_einsum(&query, "count")?, Some(to_sql(&query)?))
        } else {
            (text, None)
        };
        let sql = match (naive, naive_sql) {
            (true, Some(sql)) => sql,
            (true, None) => {
                return Err(Error::Invalid(
                    "--naive needs a subgraph query graph".to_string(),
                ));
            }
            (false, _) => db.explain_sql(&text, dialect)?,
        };
        std::fs::write(out.join("query.sql"), format!("{sql};\n"))
            .map_err(|e| Error::io(out.join("query.sql"), e))?;
        // einsql's answer: a query's rows, or the statement's stored result.
        let expected = out.join("expected.parquet");
        let started = std::time::Instant::now();
        let copy = if is_query(&text)? {
            format!(
                "COPY ({}) TO '{}'",
                text.trim().trim_end_matches(';'),
                expected.display()
            )
        } else {
            db.execute(&text)?;
            let name = text
                .split(['[', '=', ' '])
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            format!("COPY \"{name}\" TO '{}'", expected.display())
        };
        db.execute(&copy)?;
        eprintln!(
            "einsql: {:.6} s (executor and COPY, in memory)",
            started.elapsed().as_secs_f64()
        );
        cases.push(serde_json::json!({
            "name": text.trim(), "sql": sql, "expected": expected.display().to_string()
        }));
    }
    let job = serde_json::json!({
        "engine": dialect.name(),
        "threads": 2,
        "memory_limit": "4GB",
        "temp_directory": out.join("spill").display().to_string(),
        "timeout": 30,
        "tables": tables,
        "cases": cases,
    });
    std::fs::write(out.join("job.json"), job.to_string())
        .map_err(|e| Error::io(out.join("job.json"), e))?;
    Ok(())
}

/// Whether `text` is one SQL statement (a query) rather than tensor index
/// notation.
fn is_query(text: &str) -> Result<bool> {
    let statements = einsql::session::parse_script(text)?;
    Ok(matches!(
        statements.as_slice(),
        [einsql::session::Statement::Sql(_)]
    ))
}
