//! Declared indexes in a database directory: they survive reopening (tiled
//! ones too, in catalog format 3), go with their table, are kept (rebuilt)
//! by an INSERT, and a writer killed while it declares and drops them
//! leaves the previous set readable.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::lines;
use einsql::Database;
use einsql::storage::fibertree::{IndexLayout, IndexSpec, LevelFormat};

/// `index name|table|columns|formats` of every declared index.
fn declared(db: &Database) -> Vec<String> {
    lines(
        &db.execute(
            "SELECT index_name, table_name, columns, formats FROM einsql_indexes() \
             ORDER BY index_name",
        )
        .unwrap(),
    )
}

/// The catalog file's format version.
fn catalog_version(dir: &Path) -> u64 {
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("catalog.json")).unwrap()).unwrap();
    catalog["version"].as_u64().unwrap()
}

fn matrix(db: &Database, name: &str) {
    db.execute(&format!(
        "CREATE TABLE {name} (i INT, j INT, v DOUBLE, PRIMARY KEY (i, j)); \
         INSERT INTO {name} VALUES (0, 1, 2.0), (1, 0, 3.0), (1, 2, 4.0), (2, 2, 5.0)"
    ))
    .unwrap();
}

#[test]
fn indexes_survive_reopening_and_go_with_their_table() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        matrix(&db, "a");
        matrix(&db, "b");
        assert_eq!(catalog_version(dir.path()), 1, "no index: format 1");
        db.execute("CREATE INDEX a_csc ON a (j, i) USING (dense, compressed)")
            .unwrap();
        db.execute("CREATE INDEX a_hashed ON a (i, j) USING (hashed, hashed)")
            .unwrap();
        db.execute("CREATE INDEX b_csc ON b (j, i)").unwrap();
        assert_eq!(catalog_version(dir.path()), 2, "indexes: format 2");
    }
    let expected = vec![
        "a_csc|a|j, i|dense, compressed".to_string(),
        "a_hashed|a|i, j|hashed, hashed".to_string(),
        "b_csc|b|j, i|compressed, compressed".to_string(),
    ];
    {
        let db = Database::open(dir.path()).unwrap();
        assert_eq!(declared(&db), expected);
        let describe = db.execute("DESCRIBE a").unwrap().message.unwrap();
        assert!(
            describe.contains(
                "; index a_csc (j,i) dense/compressed; index a_hashed (i,j) hashed/hashed;"
            ),
            "{describe}"
        );
        // Rebuilt when the table is loaded: built before any query reads
        // them.
        let a = db.table("a").unwrap();
        let csc = IndexSpec::new(
            vec![1, 0],
            vec![LevelFormat::Dense, LevelFormat::Compressed],
        );
        assert!(a.built_index(&csc).is_some());
        assert_eq!(a.declared_name(&csc).as_deref(), Some("a_csc"));
        // An INSERT keeps the indexes, built over the new rows.
        db.execute("INSERT INTO b VALUES (3, 3, 1.0)").unwrap();
        let b = db.table("b").unwrap();
        let tree = b
            .built_index(&IndexSpec::compressed(vec![1, 0]))
            .expect("b_csc is rebuilt by the insert");
        assert_eq!(tree.nnz(), 5);
        db.execute("DROP INDEX a_hashed").unwrap();
    }
    {
        let db = Database::open(dir.path()).unwrap();
        assert_eq!(
            declared(&db),
            vec![expected[0].clone(), expected[2].clone()]
        );
        assert_eq!(
            db.table("b").unwrap().nnz(),
            5,
            "the insert was kept with the index"
        );
        db.execute("DROP TABLE a").unwrap();
        // A copy of a table does not copy its indexes; a replaced table
        // loses them.
        db.execute("CREATE TABLE c AS SELECT * FROM b").unwrap();
        assert_eq!(declared(&db), vec![expected[2].clone()]);
        db.execute("CREATE OR REPLACE TABLE b AS SELECT * FROM b")
            .unwrap();
    }
    let db = Database::open(dir.path()).unwrap();
    assert!(declared(&db).is_empty());
    assert_eq!(
        catalog_version(dir.path()),
        1,
        "format 1 again once no index is declared"
    );
    // The names are free again.
    matrix(&db, "a");
    db.execute("CREATE INDEX a_csc ON a (j, i)").unwrap();
}

#[test]
fn tiled_indexes_survive_reopening_as_catalog_format_3() {
    let dir = tempfile::tempdir().unwrap();
    let product = "c[i,j] = SUM(k) a[i,k] * b[k,j]";
    let answer = |db: &Database| {
        db.execute_all(&format!("{product};")).unwrap();
        lines(&db.execute("SELECT * FROM c ORDER BY i, j").unwrap())
    };
    let before = {
        let db = Database::open(dir.path()).unwrap();
        matrix(&db, "a");
        matrix(&db, "b");
        db.execute("CREATE INDEX a_csc ON a (j, i)").unwrap();
        assert_eq!(catalog_version(dir.path()), 2, "fibertree indexes only");
        db.execute_all(
            "CREATE INDEX a_t ON a (i, j) USING (tiles(2, 2));\n\
             CREATE INDEX b_t ON b (j, i) USING (tiles(3, 2));",
        )
        .unwrap();
        assert_eq!(catalog_version(dir.path()), 3, "a tiled index");
        answer(&db)
    };
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(
        declared(&db),
        [
            "a_csc|a|j, i|compressed, compressed",
            "a_t|a|i, j|tiles(2,2)",
            "b_t|b|j, i|tiles(3,2)",
        ]
    );
    let plan = lines(&db.execute(&format!("EXPLAIN {product}")).unwrap()).join("\n");
    assert!(
        plan.contains(
            "tiled matrix product: a.v[i,k] USING a_t (3 of 2 × 2 tiles of 2 × 2) times \
             b.v[k,j] USING b_t (2 of 1 × 2 tiles of 3 × 2)"
        ),
        "{plan}"
    );
    assert_eq!(answer(&db), before);
    assert_eq!(
        before,
        ["0|0|6.0", "0|2|8.0", "1|1|6.0", "1|2|20.0", "2|2|25.0"]
    );
    db.execute("DROP INDEX a_t").unwrap();
    drop(db);
    assert_eq!(catalog_version(dir.path()), 3, "b_t is still tiled");
    let db = Database::open(dir.path()).unwrap();
    db.execute("DROP TABLE b").unwrap();
    assert_eq!(catalog_version(dir.path()), 2, "no tiled index is left");
    assert_eq!(declared(&db), ["a_csc|a|j, i|compressed, compressed"]);
}

#[test]
fn a_version_1_catalog_is_read() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        matrix(&db, "a");
    }
    let text = std::fs::read_to_string(dir.path().join("catalog.json")).unwrap();
    assert!(text.contains("\"version\": 1"));
    assert!(!text.contains("indexes"), "no index: no index field");
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(lines(&db.execute("SELECT COUNT(*) FROM a").unwrap()), ["4"]);
    db.execute("CREATE INDEX a_csc ON a (j, i)").unwrap();
}

#[test]
fn a_damaged_index_declaration_is_a_catalog_error_that_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        matrix(&db, "a");
        db.execute("CREATE INDEX a_csc ON a (j, i)").unwrap();
    }
    let path = dir.path().join("catalog.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replacen(
        "\"order\": [\n            1,",
        "\"order\": [\n            7,",
        1,
    );
    assert_ne!(damaged, text, "the order is where the test expects it");
    std::fs::write(&path, &damaged).unwrap();
    // The table loads when first used: that statement fails, and again.
    let db = Database::open(dir.path()).unwrap();
    for _ in 0..2 {
        let error = db
            .execute("SELECT COUNT(*) FROM a")
            .expect_err("a damaged index");
        let message = error.to_string();
        assert!(
            message.contains("table 'a' cannot be loaded: its index 'a_csc' cannot be built"),
            "{message}"
        );
    }
    drop(db);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), damaged);
}

/// Environment variables that make `kill_child_index_writer` run.
const CHILD_DIR: &str = "EINSQL_INDEX_KILL_DIR";
const CHILD_START: &str = "EINSQL_INDEX_KILL_START";

/// The two indexes the child declares and drops, as `declared` lists them.
const CSC: &str = "t_csc|t|j, i|compressed, hashed";
const HASHED: &str = "t_hashed|t|i, j|hashed, hashed";

/// The writer that `a_killed_index_writer_leaves_the_previous_set` kills:
/// in a loop, it declares t_csc, inserts a row, declares t_hashed, drops
/// t_csc, inserts a row, and drops t_hashed.
#[test]
#[ignore = "run as a child process by a_killed_index_writer_leaves_the_previous_set"]
fn kill_child_index_writer() {
    let dir = PathBuf::from(std::env::var_os(CHILD_DIR).expect("set by the kill test"));
    let start: i64 = std::env::var(CHILD_START).unwrap().parse().unwrap();
    let db = Database::open(&dir).unwrap();
    // The child killed before may have left either index declared.
    db.execute("DROP INDEX IF EXISTS t_csc, t_hashed").unwrap();
    println!("child-ready");
    let began = Instant::now();
    let mut n = start;
    while began.elapsed() < Duration::from_secs(30) {
        for statement in [
            "CREATE INDEX t_csc ON t (j, i) USING (compressed, hashed)".to_string(),
            format!("INSERT INTO t VALUES ({n}, {}, 1.0)", n % 7),
            "CREATE INDEX t_hashed ON t (i, j) USING (hashed, hashed)".to_string(),
            "DROP INDEX t_csc".to_string(),
            format!("INSERT INTO t VALUES ({}, {}, 1.0)", n + 1_000_000, n % 5),
            "DROP INDEX t_hashed".to_string(),
        ] {
            db.execute(&statement).unwrap();
        }
        n += 1;
    }
}

#[test]
fn a_killed_index_writer_leaves_the_previous_set() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        db.execute(
            "CREATE TABLE t (i INT, j INT, v DOUBLE, PRIMARY KEY (i, j)); \
             INSERT INTO t VALUES (0, 0, 1.0)",
        )
        .unwrap();
    }
    let mut random = common::clock_rng("index kill test");
    let mut last_rows = 1;
    let mut sets_seen = std::collections::BTreeSet::new();
    for round in 1..=10i64 {
        common::kill_child_after(
            "kill_child_index_writer",
            &[
                (CHILD_DIR, dir.path().display().to_string()),
                (CHILD_START, (round * 10_000).to_string()),
            ],
            Duration::from_millis(20 + random.next() % 230),
        );

        let db = Database::open(dir.path()).unwrap();
        let set = declared(&db);
        // Every state the child commits has no index, t_csc, both, or
        // t_hashed.
        let allowed: [&[&str]; 4] = [&[], &[CSC], &[CSC, HASHED], &[HASHED]];
        assert!(
            allowed.iter().any(|a| *a == set.as_slice()),
            "round {round}: declared {set:?}"
        );
        let rows: usize = lines(&db.execute("SELECT COUNT(*) FROM t").unwrap())[0]
            .parse()
            .unwrap();
        assert!(rows >= last_rows, "round {round}: rows went back");
        last_rows = rows;
        // The declared indexes are built over the rows as they are.
        let t = db.table("t").unwrap();
        for index in t.declared_indexes() {
            let IndexLayout::Levels(spec) = &index.layout else {
                panic!("round {round}: index {} is tiled", index.name);
            };
            let tree = t.built_index(spec).expect("built on open");
            assert_eq!(tree.nnz(), rows, "round {round}: index {}", index.name);
        }
        // A query whose loop order reads t through t_csc when declared.
        let sum: f64 = lines(
            &db.execute("s[j] = SUM(i) t[i,j]; SELECT * FROM s")
                .unwrap_or_else(|e| panic!("round {round}: {e}")),
        )
        .iter()
        .map(|row| row.rsplit('|').next().unwrap().parse::<f64>().unwrap())
        .sum();
        assert_eq!(sum, rows as f64, "round {round}");
        eprintln!("round {round}: {rows} rows, indexes {set:?}");
        sets_seen.insert(set);
        db.execute("DROP TABLE IF EXISTS s").unwrap();
    }
    assert!(
        last_rows > 1,
        "the child never inserted before it was killed"
    );
    eprintln!("index sets seen: {sets_seen:?}");
}
