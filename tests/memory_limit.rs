//! The memory limit against the process's peak resident memory: each
//! memory-hungry statement (a wide join listing, a big grouped
//! intermediate, a large sort, a large `COPY ... TO`) either finishes or
//! stops with the clear out-of-memory error, and the process's peak
//! resident memory grows by at most the limit plus 10% while it runs.
//!
//! Each case runs in a child process (this test binary run again on one
//! test), so that nothing else runs beside the statement: the child
//! builds a generated graph, warms the indexes the statement reads,
//! resets the peak (`/proc/self/clear_refs`) and reports how far `VmHWM`
//! rose above the resident memory before the statement. The heavy cases
//! (1 GB and 4 GB limits, larger graphs) are ignored in debug test runs;
//! `cargo test --release --test memory_limit -- --include-ignored` runs
//! them all.

use std::fmt::Write as _;
use std::process::Command;

use einsql::{Database, Error};

/// Set in the child process: the case to run.
const CHILD: &str = "EINSQL_MEMORY_LIMIT_CHILD";

const MB: u64 = 1 << 20;

/// A field of `/proc/self/status` in bytes (Linux).
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// A memory-hungry statement over the graph table `e` (keys `s`, `d`).
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// The 3-path listing: a join of three tables, every row listed.
    WideJoin,
    /// The 3-paths grouped by their ends: a large grouped result.
    Intermediate,
    /// The 2-path listing sorted on columns it is not produced in.
    Sort,
    /// The 2-path listing written to a CSV file.
    Copy,
    /// Every pair of out-edges of each vertex, weighted, stored as a
    /// tensor (tensor index notation; one pass over the joined pairs).
    Pairs,
}

impl Kind {
    fn statement(self, dir: &std::path::Path) -> String {
        match self {
            Kind::WideJoin => "SELECT a.s, b.s, c.s, c.d FROM e a, e b, e c \
                               WHERE a.d = b.s AND b.d = c.s"
                .to_string(),
            Kind::Intermediate => "SELECT a.s, c.d, COUNT(*) FROM e a, e b, e c \
                                   WHERE a.d = b.s AND b.d = c.s GROUP BY a.s, c.d"
                .to_string(),
            Kind::Sort => "SELECT a.s, a.d, b.d FROM e a, e b WHERE a.d = b.s \
                           ORDER BY b.d DESC, a.s, a.d"
                .to_string(),
            Kind::Copy => format!(
                "COPY (SELECT a.s, a.d, b.d FROM e a, e b WHERE a.d = b.s) TO '{}'",
                dir.join("paths.csv").display()
            ),
            Kind::Pairs => "y[s,d1,d2] = f[s,d1] * f[s,d2]".to_string(),
        }
    }

    /// The statements that make the tables the statement reads besides
    /// `e`.
    fn setup(self) -> &'static str {
        match self {
            Kind::Pairs => {
                "CREATE TABLE f (s BIGINT, d BIGINT, v DOUBLE, PRIMARY KEY (s, d));
                 INSERT INTO f SELECT s, d, 0.5 FROM e"
            }
            Kind::WideJoin | Kind::Intermediate | Kind::Sort | Kind::Copy => "",
        }
    }
}

/// One statement on a generated graph under one limit.
#[derive(Clone, Copy, Debug)]
struct Case {
    kind: Kind,
    /// Vertices of the graph and out-edges of each.
    vertices: usize,
    degree: usize,
    limit: u64,
}

/// A database holding `e`: a graph of `vertices` with `degree` out-edges
/// each (2-paths number vertices * degree^2).
fn graph_database(dir: &std::path::Path, vertices: usize, degree: usize) -> Database {
    let path = dir.join("e.mtx");
    let mut text = String::new();
    writeln!(text, "%%MatrixMarket matrix coordinate pattern general").unwrap();
    writeln!(text, "{vertices} {vertices} {}", vertices * degree).unwrap();
    for v in 0..vertices {
        for k in 0..degree {
            writeln!(text, "{} {}", v + 1, (v * 7 + k * 13 + 1) % vertices + 1).unwrap();
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

/// The child's side: runs the case and prints its peak growth and outcome.
fn child(case: Case) {
    let dir = tempfile::tempdir().unwrap();
    let db = graph_database(dir.path(), case.vertices, case.degree);
    if !case.kind.setup().is_empty() {
        db.execute(case.kind.setup()).unwrap();
    }
    db.execute(&format!("SET memory_limit = '{}'", case.limit))
        .unwrap();
    // Warm the indexes the statements read, so that the growth measured
    // is the statement's own.
    db.execute("SELECT COUNT(*) FROM e a, e b WHERE a.d = b.s")
        .unwrap();
    // Reset the peak to the resident memory now (Linux 4.0 and later);
    // where that is refused, the peak so far stands in for it.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = if reset {
        status_bytes("VmRSS:")
    } else {
        status_bytes("VmHWM:")
    }
    .expect("VmRSS and VmHWM in /proc/self/status");
    let result = db.execute(&case.kind.statement(dir.path()));
    let after = status_bytes("VmHWM:").expect("VmHWM in /proc/self/status");
    let outcome = match result {
        Ok(result) => format!(
            "{} rows, {}",
            result.num_rows(),
            result.message.unwrap_or_default()
        ),
        Err(Error::OutOfMemory(message)) => format!("out of memory: {message}"),
        Err(other) => panic!("neither finished nor ran out of memory: {other}"),
    };
    // The session stays usable.
    assert_eq!(db.execute("SELECT COUNT(*) FROM e").unwrap().num_rows(), 1);
    println!("outcome: {outcome}");
    println!("peak growth: {}", after.saturating_sub(before));
}

/// Runs `case` in a child process (the test `test` of this binary) and
/// checks its peak growth against the limit plus 10%.
fn measure(test: &str, case: Case) {
    if std::env::var_os(CHILD).is_some() {
        child(case);
        return;
    }
    if status_bytes("VmHWM:").is_none() {
        eprintln!("skipping: no /proc/self/status VmHWM on this system");
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--nocapture",
            "--test-threads=1",
            "--include-ignored",
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
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(name).map(|(_, n)| n.trim().to_string()))
            .unwrap_or_else(|| panic!("no {name} reported: {stdout}"))
    };
    let growth: u64 = field("peak growth: ").parse().unwrap();
    let outcome = field("outcome: ");
    eprintln!(
        "{test}: {case:?}: peak growth {} MB under {} MB: {outcome}",
        growth / MB,
        case.limit / MB
    );
    assert!(
        growth <= case.limit + case.limit / 10,
        "peak resident memory grew by {growth} bytes under a limit of {}: {outcome}",
        case.limit
    );
}

/// The graph of the fast cases: 3,000 vertices, 30 out-edges each
/// (2.7 million 2-paths, 81 million 3-paths).
const SMALL: (usize, usize) = (3000, 30);
/// A graph whose 2-path listing (1.2 million rows) the executor builds
/// under 256 MB, so that the assembly of its rows decides: 3,000
/// vertices, 20 out-edges each.
const MEDIUM: (usize, usize) = (3000, 20);
/// The graph of the heavy cases: 20,000 vertices, 40 out-edges each
/// (32 million 2-paths).
const LARGE: (usize, usize) = (20_000, 40);

fn case(kind: Kind, (vertices, degree): (usize, usize), limit: u64) -> Case {
    Case {
        kind,
        vertices,
        degree,
        limit,
    }
}

#[test]
fn a_small_limit_stops_a_listing_near_it() {
    measure(
        "a_small_limit_stops_a_listing_near_it",
        case(Kind::WideJoin, SMALL, 32 * MB),
    );
}

#[test]
fn wide_join_under_256mb() {
    measure(
        "wide_join_under_256mb",
        case(Kind::WideJoin, SMALL, 256 * MB),
    );
}

#[test]
fn intermediate_under_256mb() {
    measure(
        "intermediate_under_256mb",
        case(Kind::Intermediate, SMALL, 256 * MB),
    );
}

#[test]
fn sort_under_256mb() {
    measure("sort_under_256mb", case(Kind::Sort, SMALL, 256 * MB));
}

/// The sort of a listing that the executor builds under the limit: the
/// assembly of its rows decides, refusing them once they pass the limit.
/// (Its rows' cell vectors were charged at their length while collecting
/// them through `Result` left room for more: the peak grew by 314 MB.)
#[test]
fn sort_of_a_listing_that_fits_under_256mb() {
    measure(
        "sort_of_a_listing_that_fits_under_256mb",
        case(Kind::Sort, MEDIUM, 256 * MB),
    );
}

/// 2.7 million pairs, 86 MB of columns: past a 32 MB limit the pass stops
/// before it allocates them; under 256 MB it finishes.
#[test]
fn pairs_past_32mb() {
    measure("pairs_past_32mb", case(Kind::Pairs, SMALL, 32 * MB));
}

#[test]
fn pairs_under_256mb() {
    measure("pairs_under_256mb", case(Kind::Pairs, SMALL, 256 * MB));
}

#[test]
fn copy_under_256mb() {
    measure("copy_under_256mb", case(Kind::Copy, MEDIUM, 256 * MB));
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn wide_join_under_1gb() {
    measure("wide_join_under_1gb", case(Kind::WideJoin, SMALL, 1 << 30));
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn intermediate_under_1gb() {
    measure(
        "intermediate_under_1gb",
        case(Kind::Intermediate, SMALL, 1 << 30),
    );
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn sort_under_1gb() {
    measure("sort_under_1gb", case(Kind::Sort, SMALL, 1 << 30));
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn copy_under_1gb() {
    measure("copy_under_1gb", case(Kind::Copy, SMALL, 1 << 30));
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn wide_join_under_4gb() {
    measure("wide_join_under_4gb", case(Kind::WideJoin, LARGE, 4 << 30));
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn intermediate_under_4gb() {
    measure(
        "intermediate_under_4gb",
        case(Kind::Intermediate, LARGE, 4 << 30),
    );
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn sort_under_4gb() {
    measure("sort_under_4gb", case(Kind::Sort, LARGE, 4 << 30));
}

#[test]
#[ignore = "heavy: a few GB of work"]
fn copy_under_4gb() {
    measure("copy_under_4gb", case(Kind::Copy, LARGE, 4 << 30));
}
