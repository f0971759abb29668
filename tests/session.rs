//! One statement path: a SQL query and the einsum statement that says the
//! same thing are parsed into `Statement`s, bound into the same IR program,
//! planned into the same plan and evaluated by the same session; and the
//! front-ends bind without touching the catalog.

use std::sync::RwLock;

use arrow::array::{Array, Float64Array};
use einsql::bound::{BoundStatement, Relation};
use einsql::catalog::Catalog;
use einsql::emit::Dialect;
use einsql::ir::Program;
use einsql::progress::NoProgress;
use einsql::session::{ExplainFormat, Session, Settings, Statement, explain, parse_script};

/// A catalog with `a` and `x`, made through a session.
fn catalog(settings: &Settings) -> RwLock<Catalog> {
    let catalog = RwLock::new(Catalog::in_memory());
    let session = Session::new(&catalog, settings, &NoProgress, None);
    for statement in parse_script(
        "CREATE TABLE a (i INT, j INT, v DOUBLE, PRIMARY KEY (i, j));
         INSERT INTO a VALUES (0, 0, 1.5), (0, 1, 2.0), (1, 2, 3.0), (2, 1, -1.0);
         CREATE TABLE x (j INT, v DOUBLE, PRIMARY KEY (j));
         INSERT INTO x VALUES (0, 0.5), (1, 4.0), (2, 2.0);",
    )
    .expect("setup parses")
    {
        session.execute(&statement).expect("setup runs");
    }
    catalog
}

/// The one statement of `text`.
fn statement(text: &str) -> Statement {
    let mut statements = parse_script(text).expect("parses");
    assert_eq!(statements.len(), 1, "{text}");
    statements.remove(0)
}

/// The physical plan's lines of `program`, with query names left out
/// (SQL names its aggregate after the select item, einsum after the
/// output).
fn plan_lines(program: &Program, settings: &Settings) -> Vec<String> {
    let lines = explain::program_lines(program, &settings.optimizer_options()).expect("plans");
    let start = lines
        .iter()
        .position(|l| l == "Physical plan:")
        .expect("a physical plan");
    lines[start..]
        .iter()
        .map(|l| match l.split_once(" = ") {
            Some((_, rhs)) => rhs.to_string(),
            None => l.trim().to_string(),
        })
        .collect()
}

#[test]
fn sql_and_einsum_share_binding_planning_and_evaluation() {
    let settings = Settings::default();
    let catalog = catalog(&settings);
    let session = Session::new(&catalog, &settings, &NoProgress, None);
    let cases = [
        (
            "SELECT a.i, SUM(a.v * x.v) AS y FROM a, x WHERE a.j = x.j GROUP BY a.i",
            "y[i] = SUM(j) a[i,j] * x[j];",
        ),
        ("SELECT SUM(v) AS total FROM a", "total = SUM(i,j) a[i,j];"),
    ];
    for (sql, einsum) in cases {
        let BoundStatement::Query(Relation::Program(query)) =
            session.bind(&statement(sql)).expect("SQL binds")
        else {
            panic!("{sql} binds to a query program");
        };
        let BoundStatement::Assign(program) =
            session.bind(&statement(einsum)).expect("einsum binds")
        else {
            panic!("{einsum} binds to an assignment");
        };
        // The same IR: the SQL program's first query is the einsum query.
        assert_eq!(
            query.program.queries[0].expr, program.queries[0].expr,
            "{sql}"
        );
        assert_eq!(
            query.program.queries[0].indices, program.queries[0].indices,
            "{sql}"
        );
        // The same plan for that query.
        let sql_first = Program {
            queries: vec![query.program.queries[0].clone()],
        };
        assert_eq!(
            plan_lines(&sql_first, &settings),
            plan_lines(&program, &settings),
            "{sql}"
        );
        // The same results, through the same evaluation.
        let sql_result = session.evaluate(&sql_first).expect("SQL evaluates");
        let einsum_result = session.evaluate(&program).expect("einsum evaluates");
        let values = |results: &[(String, std::sync::Arc<einsql::storage::Tensor>)]| {
            let batch = results[0].1.to_record_batch().expect("a batch");
            let column = batch.column(batch.num_columns() - 1);
            let floats = column
                .as_any()
                .downcast_ref::<Float64Array>()
                .expect("float values");
            (0..floats.len())
                .map(|r| floats.value(r))
                .collect::<Vec<_>>()
        };
        assert_eq!(values(&sql_result), values(&einsum_result), "{sql}");
        // And the statements themselves agree on their rows.
        let rows = session.run(session.bind(&statement(sql)).expect("binds again"));
        assert!(rows.expect("SQL runs").num_rows() > 0, "{sql}");
    }
}

#[test]
fn binding_leaves_the_catalog_alone() {
    let settings = Settings::default();
    let catalog = catalog(&settings);
    let session = Session::new(&catalog, &settings, &NoProgress, None);
    let names = || {
        catalog
            .read()
            .expect("not poisoned")
            .names()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let nnz = |name: &str| {
        catalog
            .read()
            .expect("not poisoned")
            .get(name)
            .expect("exists")
            .nnz()
    };
    for text in [
        "CREATE TABLE b AS SELECT * FROM a",
        "INSERT INTO a VALUES (3, 3, 1.0)",
        "DROP TABLE x",
        "y[i] = SUM(j) a[i,j];",
        "CREATE TABLE c (k INT, PRIMARY KEY (k))",
    ] {
        let before = (names(), nnz("a"));
        let bound = session.bind(&statement(text)).expect("binds");
        assert_eq!(
            (names(), nnz("a")),
            before,
            "binding {text} changed the catalog"
        );
        session.run(bound).expect("runs");
    }
    assert_eq!(names(), ["a", "b", "c", "y"]);
    assert_eq!(nnz("a"), 5);
}

#[test]
fn explain_wraps_either_language() {
    let sql = |d| ExplainFormat::Sql(d);
    for (text, analyze, format) in [
        ("EXPLAIN SELECT 1", false, ExplainFormat::Text),
        ("EXPLAIN ANALYZE SELECT 1", true, ExplainFormat::Text),
        ("EXPLAIN y[i] = SUM(j) a[i,j];", false, ExplainFormat::Text),
        (
            "EXPLAIN ANALYZE y[i] = SUM(j) a[i,j];",
            true,
            ExplainFormat::Text,
        ),
        ("EXPLAIN (ANALYZE) SELECT 1", true, ExplainFormat::Text),
        (
            "EXPLAIN (ANALYZE false) SELECT 1",
            false,
            ExplainFormat::Text,
        ),
        ("EXPLAIN (FORMAT sql) SELECT 1", false, sql(Dialect::DuckDb)),
        (
            "EXPLAIN (FORMAT 'sql', DIALECT 'DataFusion') SELECT 1",
            false,
            sql(Dialect::DataFusion),
        ),
        (
            "EXPLAIN (FORMAT sql, DIALECT spark) y[i] = SUM(j) a[i,j];",
            false,
            sql(Dialect::Spark),
        ),
        (
            "EXPLAIN (format text, analyze) y[i] = SUM(j) a[i,j];",
            true,
            ExplainFormat::Text,
        ),
    ] {
        match statement(text) {
            Statement::Explain {
                analyze: a,
                format: f,
                statement,
            } => {
                assert_eq!((a, f), (analyze, format), "{text}");
                assert!(!matches!(*statement, Statement::Explain { .. }), "{text}");
            }
            other => panic!("{text} parsed as {other:?}"),
        }
    }
}

#[test]
fn explain_options_are_checked() {
    for (text, error) in [
        (
            "EXPLAIN (FORMAT sql, DIALECT oracle) SELECT 1",
            "unknown SQL dialect 'oracle'",
        ),
        (
            "EXPLAIN (FROMAT sql) y[i] = SUM(j) a[i,j];",
            "did you mean 'FORMAT'?",
        ),
        (
            "EXPLAIN (FORMAT sql extra) y[i] = SUM(j) a[i,j];",
            "write a name and at most one value",
        ),
        ("EXPLAIN (ANALYZE maybe) SELECT 1", "takes true or false"),
        ("EXPLAIN (FORMAT) SELECT 1", "needs a value"),
        ("EXPLAIN (DIALECT) SELECT 1", "needs a value"),
    ] {
        let message = parse_script(text).unwrap_err().to_string();
        assert!(message.contains(error), "{text}: {message}");
    }
}

#[test]
fn errors_point_into_the_whole_script() {
    let error = parse_script("SELECT 1;\nSELECT 2;\nSELECT FROM WHERE;").unwrap_err();
    assert!(
        error.to_string().contains("Line: 3"),
        "the position counts from the start of the script: {error}"
    );
}
