//! `Database::stream`: a statement's rows as batches made when they are
//! taken (a stored table's in slices), with the same rows as
//! `Database::execute`.

use arrow::array::{Array, Int64Array, RecordBatch};
use einsql::{Database, Error};

/// A bag of `n` rows `(x, x % 97)` and a keyed table of 97 rows.
fn database(n: usize) -> Database {
    let db = Database::open_in_memory();
    db.execute("CREATE TABLE t (x INT, g INT)").unwrap();
    db.execute("CREATE TABLE h (g INT, w DOUBLE, PRIMARY KEY (g))")
        .unwrap();
    let rows: Vec<String> = (0..n).map(|x| format!("({x}, {})", x % 97)).collect();
    db.execute(&format!("INSERT INTO t VALUES {}", rows.join(", ")))
        .unwrap();
    let rows: Vec<String> = (0..97).map(|g| format!("({g}, {g}.5)")).collect();
    db.execute(&format!("INSERT INTO h VALUES {}", rows.join(", ")))
        .unwrap();
    db
}

fn first_column(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let column = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            (0..column.len())
                .map(|i| column.value(i))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_listing_streams_in_batches_with_the_rows_of_execute() {
    let db = database(30_000);
    let sql = "SELECT t.x, h.w FROM t JOIN h ON t.g = h.g";
    let stream = db.stream(sql).unwrap();
    assert_eq!(stream.schema().fields().len(), 2);
    let batches: Vec<RecordBatch> = stream.collect::<Result<_, _>>().unwrap();
    assert_eq!(
        batches
            .iter()
            .map(RecordBatch::num_rows)
            .collect::<Vec<_>>(),
        [8192, 8192, 8192, 5424]
    );
    let whole = db.execute(sql).unwrap();
    assert_eq!(first_column(&batches), first_column(&whole.batches));
    assert_eq!(first_column(&batches).len(), 30_000);
}

#[test]
fn sorted_results_and_statements_without_rows_stream_too() {
    let db = database(20_000);
    let sorted: Vec<RecordBatch> = db
        .stream("SELECT x FROM t ORDER BY x DESC LIMIT 10000 OFFSET 5")
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(sorted.len(), 2);
    let xs = first_column(&sorted);
    assert_eq!(xs.first(), Some(&19_994));
    assert_eq!(xs.len(), 10_000);

    // A stored table as it is comes in slices of the same size.
    let stored: Vec<RecordBatch> = db
        .stream("SELECT * FROM t")
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        stored.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(),
        [8192, 8192, 3616]
    );
    assert_eq!(first_column(&stored), (0..20_000).collect::<Vec<i64>>());

    let empty: Vec<RecordBatch> = db
        .stream("SELECT x FROM t WHERE x < 0")
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(empty.len(), 1);
    assert_eq!(empty[0].num_rows(), 0);

    // Every statement of the text runs; the last one's rows stream.
    let mut created = db
        .stream("CREATE TABLE u AS SELECT x FROM t LIMIT 3; DROP TABLE u")
        .unwrap();
    assert_eq!(created.message(), Some("Dropped table u"));
    assert!(created.all(|b| b.is_ok_and(|b| b.num_rows() == 0)));
    assert!(db.stream("SELECT * FROM missing").is_err());
}

#[test]
fn batches_are_made_when_taken_so_an_interrupt_ends_the_stream() {
    let db = database(30_000);
    let mut stream = db
        .stream("SELECT t.x, h.w FROM t JOIN h ON t.g = h.g")
        .unwrap();
    assert_eq!(stream.next().map(|b| b.unwrap().num_rows()), Some(8192));
    let interrupt = db.interrupt();
    interrupt.request();
    assert!(matches!(stream.next(), Some(Err(Error::Cancelled))));
    assert!(stream.next().is_none());
    interrupt.clear();
    assert_eq!(
        db.stream("SELECT x FROM t LIMIT 2")
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum::<usize>(),
        2
    );
}
