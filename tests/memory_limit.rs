//! The memory limit against the process's peak resident memory: a join
//! listing whose result does not fit stops with the clear error before its
//! peak resident memory grows past the limit. Measured in a child process
//! (this test binary run again on one test), from `VmHWM` in
//! `/proc/self/status`, so that nothing else runs beside the statement.

use std::fmt::Write as _;
use std::process::Command;

use einsql::{Database, Error};

/// Set in the child process.
const CHILD: &str = "EINSQL_MEMORY_LIMIT_CHILD";

/// The peak resident memory so far, in bytes (Linux).
fn peak_resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// A graph of 3,000 vertices with 30 out-edges each: its 2-paths number
/// 2.7 million.
fn graph_database() -> Database {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.mtx");
    let (n, degree) = (3000, 30);
    let mut text = String::new();
    writeln!(text, "%%MatrixMarket matrix coordinate pattern general").unwrap();
    writeln!(text, "{n} {n} {}", n * degree).unwrap();
    for v in 0..n {
        for k in 0..degree {
            writeln!(text, "{} {}", v + 1, (v * 7 + k * 13 + 1) % n + 1).unwrap();
        }
    }
    std::fs::write(&path, text).unwrap();
    let db = Database::open_in_memory();
    db.execute(&format!(
        "CREATE TABLE e AS SELECT * FROM read_mtx('{}', keys = ['s', 'd'])",
        path.display()
    ))
    .unwrap();
    db
}

const LIMIT: u64 = 32 << 20;

/// The child's side: runs the listing under the limit and prints how much
/// the peak resident memory grew.
fn child() {
    let db = graph_database();
    db.execute(&format!("SET memory_limit = '{LIMIT}'"))
        .unwrap();
    // Warm the indexes the listing reads, so that the growth measured is
    // the statement's own.
    db.execute("SELECT COUNT(*) FROM e a, e b WHERE a.d = b.s")
        .unwrap();
    let before = peak_resident().expect("VmHWM in /proc/self/status");
    let result = db.execute("SELECT a.s, a.d, b.d FROM e a, e b WHERE a.d = b.s");
    let after = peak_resident().expect("VmHWM in /proc/self/status");
    assert!(
        matches!(result, Err(Error::OutOfMemory(_))),
        "{:?}",
        result.map(|r| r.num_rows())
    );
    // The session stays usable.
    assert_eq!(db.execute("SELECT COUNT(*) FROM e").unwrap().num_rows(), 1);
    println!("peak growth: {}", after - before);
}

#[test]
fn a_listing_that_does_not_fit_stops_near_the_limit() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    if peak_resident().is_none() {
        eprintln!("skipping: no /proc/self/status VmHWM on this system");
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_listing_that_does_not_fit_stops_near_the_limit",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let growth: u64 = stdout
        .lines()
        .find_map(|l| l.split_once("peak growth: ").map(|(_, n)| n))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no growth reported: {stdout}"));
    // The whole result would take about 2.7 million * 32 bytes = 86 MB in
    // entries alone.
    assert!(
        growth <= LIMIT + LIMIT / 10,
        "peak resident memory grew by {growth} bytes under a limit of {LIMIT}"
    );
}
