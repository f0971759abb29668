//! Using einsql as a library: load a matrix, query it, compute with tensor
//! index notation, and read the stored tensor's statistics.
//!
//! Run from the repository root: `cargo run --example embed`.

use arrow::util::display::{ArrayFormatter, FormatOptions};
use einsql::storage::statistics::DimSet;
use einsql::{Database, Result};

fn main() -> Result<()> {
    let db = Database::open_in_memory();
    db.execute(
        "CREATE TABLE g AS SELECT * FROM read_mtx('data/graph.mtx', keys = ['src', 'dst'])",
    )?;

    // Every statement returns Arrow record batches.
    let result = db.execute("SELECT * FROM g")?;
    println!("{} edges", result.num_rows());

    // Tensor index notation and SQL share one database.
    db.execute("out[s] = SUM(d) g[s, d];")?;
    let out = db.execute("SELECT * FROM out")?;
    for batch in &out.batches {
        let columns = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = columns.iter().map(|c| c.value(row).to_string()).collect();
            println!("out[{}] = {}", cells[0], cells[1]);
        }
    }

    // The stored tensor, with the statistics the optimizer uses.
    let g = db.table("g")?;
    let stats = g.statistics();
    if let (Some(src), Some(dst)) = (DimSet::single(0), DimSet::single(1)) {
        println!(
            "nnz = {}, max out-degree D(dst|src) = {:?}",
            stats.nnz(),
            stats.degree(dst, src)
        );
    }
    Ok(())
}
