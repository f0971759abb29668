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
             DROP TABLE gone;",
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
