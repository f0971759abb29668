//! The public `Database` API on a directory: what is stored survives
//! reopening, failed statements change nothing, one process at a time.

use einsql::Database;

fn rows(db: &Database, sql: &str) -> Vec<String> {
    let result = db.execute(sql).unwrap();
    let mut out = Vec::new();
    for batch in &result.batches {
        let columns: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| {
                arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &Default::default())
                    .unwrap()
            })
            .collect();
        for row in 0..batch.num_rows() {
            out.push(
                columns
                    .iter()
                    .map(|f| f.value(row).to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    out
}

#[test]
fn tables_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Database::open(&path).unwrap();
        assert!(db.is_persistent());
        db.execute(
            "CREATE TABLE prices (item VARCHAR, shop INT, price DOUBLE, PRIMARY KEY (shop, item));
             INSERT INTO prices VALUES ('pen', 2, 1.5), ('ink', 2, 7.25);
             CREATE TABLE edges (src INT, dst INT);
             INSERT INTO edges VALUES (0, 1), (0, 1), (1, 0);
             CREATE TABLE gone (x INT);
             CREATE TABLE gone_too (x INT);
             DROP TABLE gone, GONE_TOO, gone;",
        )
        .unwrap();
        // A failed statement leaves the stored table as it was.
        assert!(
            db.execute("INSERT INTO prices VALUES ('x', -1, 2.0)")
                .is_err()
        );
    }
    let db = Database::open(&path).unwrap();
    assert_eq!(db.table_names(), ["edges", "prices"]);
    assert_eq!(
        rows(&db, "SELECT * FROM prices"),
        ["ink 2 7.25", "pen 2 1.5"]
    );
    assert_eq!(rows(&db, "SELECT * FROM edges"), ["0 1", "0 1", "1 0"]);
    let prices = db.table("prices").unwrap();
    assert_eq!(prices.dims()[0].name, "shop");
    assert_eq!(prices.dims()[0].size, 3);

    // Changes after reopening persist too.
    db.execute("INSERT INTO prices VALUES ('cap', 0, 3.0)")
        .unwrap();
    drop(db);
    let db = Database::open(&path).unwrap();
    assert_eq!(
        rows(&db, "SELECT * FROM prices"),
        ["cap 0 3.0", "ink 2 7.25", "pen 2 1.5"]
    );
}

#[test]
fn tables_load_when_first_used() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Database::open(&path).unwrap();
        db.execute(
            "CREATE TABLE good (x INT, y INT); INSERT INTO good VALUES (1, 2), (3, 4);
             CREATE TABLE bad (x INT); INSERT INTO bad VALUES (5);
             CREATE INDEX by_y ON good (y, x);",
        )
        .unwrap();
    }
    // Damage the data file of `bad` only: the database still opens, the
    // other table works, and reading `bad` names the file.
    let data = path.join("data");
    let bad_file = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|name| name.ends_with("-bad.parquet"))
        .expect("bad's data file");
    std::fs::write(data.join(&bad_file), b"not parquet").unwrap();
    let db = Database::open(&path).unwrap();
    assert_eq!(db.table_names(), ["bad", "good"]);
    // The columns come from the catalog (what the shell completes).
    assert_eq!(db.column_names("BAD"), ["x"]);
    assert_eq!(db.column_names("good"), ["x", "y"]);
    assert_eq!(rows(&db, "SELECT * FROM good"), ["1 2", "3 4"]);
    assert_eq!(db.column_names("good"), ["x", "y"]);
    let error = db.execute("SELECT * FROM bad").unwrap_err().to_string();
    assert!(
        error.contains(&bad_file) && error.contains("unreadable"),
        "{error}"
    );
    // The same error again, not a half-loaded table.
    let again = db.execute("SELECT * FROM bad").unwrap_err().to_string();
    assert_eq!(again, error);
    // Dropping the damaged table works without reading it.
    db.execute("DROP TABLE bad").unwrap();
    assert_eq!(db.table_names(), ["good"]);
    drop(db);
    // A table's declared indexes are known before it is loaded.
    let db = Database::open(&path).unwrap();
    let error = db.execute("DROP INDEX by_x").unwrap_err();
    assert!(error.to_string().contains("by_y"), "{error}");
    assert_eq!(rows(&db, "SELECT y FROM good WHERE x = 3"), ["4"]);
    db.execute("DROP INDEX by_y").unwrap();
}

#[test]
fn one_process_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let first = Database::open(dir.path()).unwrap();
    let second = Database::open(dir.path());
    assert!(
        second.is_err(),
        "a second open of the same directory must fail"
    );
    drop(first);
    Database::open(dir.path()).unwrap();
}

#[test]
fn in_memory_databases_are_independent() {
    let a = Database::open_in_memory();
    let b = Database::open_in_memory();
    a.execute("CREATE TABLE t (x INT)").unwrap();
    assert!(!a.is_persistent());
    assert_eq!(a.table_names(), ["t"]);
    assert!(b.table_names().is_empty());
    let err = b.execute("SELECT * FROM t").unwrap_err().to_string();
    assert_eq!(err, "Table 't' does not exist");
}

/// A progress sink that interrupts the load it watches at its first report.
struct InterruptOnProgress(einsql::Interrupt);

impl einsql::progress::ProgressSink for InterruptOnProgress {
    fn start(&self, _label: &str, _total_bytes: u64) {}
    fn advance(&self, _bytes: u64) {
        self.0.request();
    }
    fn finish(&self) {}
}

#[test]
fn an_interrupted_statement_stops_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.mtx");
    let mut text = String::from("%%MatrixMarket matrix coordinate real general\n300 300 90000\n");
    for i in 1..=300 {
        for j in 1..=300 {
            text.push_str(&format!("{i} {j} 1.5\n"));
        }
    }
    std::fs::write(&path, text).unwrap();

    let mut db = Database::open_in_memory();
    let interrupt = db.interrupt();
    db.set_progress(std::sync::Arc::new(InterruptOnProgress(interrupt.clone())));
    let load = format!(
        "CREATE TABLE m AS SELECT * FROM read_mtx('{}')",
        path.display()
    );
    let err = db
        .execute(&format!(
            "CREATE TABLE before (x INT); {load}; CREATE TABLE after (x INT);"
        ))
        .unwrap_err();
    assert!(matches!(err, einsql::Error::Cancelled), "{err}");
    assert_eq!(err.to_string(), "Cancelled: the statement was interrupted");
    // The statement before took effect; the interrupted one and the one
    // after it did not.
    assert_eq!(db.table_names(), ["before"]);

    // The request stays pending until it is cleared.
    db.set_progress(std::sync::Arc::new(einsql::progress::NoProgress));
    assert!(interrupt.is_requested());
    let err = db.execute("CREATE TABLE later (x INT)").unwrap_err();
    assert!(matches!(err, einsql::Error::Cancelled), "{err}");
    interrupt.clear();
    db.execute(&load).unwrap();
    assert_eq!(db.table("m").unwrap().nnz(), 90_000);
}

#[test]
fn a_database_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Database>();
    shareable::<einsql::Interrupt>();
    let db = std::sync::Arc::new(Database::open_in_memory());
    db.execute("CREATE TABLE t (x INT)").unwrap();
    let handles: Vec<_> = (0..4)
        .map(|k| {
            let db = std::sync::Arc::clone(&db);
            std::thread::spawn(move || db.execute(&format!("INSERT INTO t VALUES ({k})")).unwrap())
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(rows(&db, "SELECT * FROM t"), ["0", "1", "2", "3"]);
}

#[test]
fn the_readme_shows_examples_embed_rs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/embed.rs")).unwrap();
    // The example without its module comment, as the README shows it.
    let code = &example[example.find("use ").unwrap()..];
    assert!(
        readme.contains(&format!("```rust\n{code}```")),
        "README.md's embedding example differs from examples/embed.rs"
    );
}

#[test]
fn an_interrupted_einsum_statement_stops_and_stores_nothing() {
    let mut db = Database::open_in_memory();
    let values = |n: usize| {
        (0..n)
            .map(|k| format!("({k}, 1.5)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    db.execute(&format!(
        "CREATE TABLE x (i INT, v DOUBLE, PRIMARY KEY (i)); INSERT INTO x VALUES {};
         CREATE TABLE y (j INT, v DOUBLE, PRIMARY KEY (j)); INSERT INTO y VALUES {};",
        values(2000),
        values(2000)
    ))
    .unwrap();
    let interrupt = db.interrupt();
    db.set_progress(std::sync::Arc::new(InterruptOnProgress(interrupt.clone())));
    // Four million assignments: the evaluator reports (and checks) every few
    // thousand, so it stops long before the end.
    let err = db.execute("t[i,j] = x[i] * y[j];").unwrap_err();
    assert!(matches!(err, einsql::Error::Cancelled), "{err}");
    assert_eq!(db.table_names(), ["x", "y"]);
    interrupt.clear();
    db.set_progress(std::sync::Arc::new(einsql::progress::NoProgress));
    db.execute("s = SUM(i) x[i];").unwrap();
    assert_eq!(rows(&db, "SELECT * FROM s"), ["3000.0"]);
}
