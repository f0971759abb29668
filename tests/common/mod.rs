//! Helpers shared by the integration tests.

use std::path::PathBuf;

use arrow::util::display::{ArrayFormatter, FormatOptions};
use einsql::{Database, QueryResult};

/// Runs `check` on `db` under the optimizer's plans and the default ones
/// (`disabled_optimizers` empty, then `'physical'`), each on one thread
/// and two, with the case's description.
#[allow(dead_code)]
pub fn under_plans_and_threads(db: &Database, mut check: impl FnMut(&str)) {
    for setting in ["", "physical"] {
        for threads in [1, 2] {
            db.set_threads(threads);
            db.execute(&format!("SET disabled_optimizers = '{setting}'"))
                .expect("sets");
            check(&format!("'{setting}', {threads} threads"));
        }
    }
}

/// The public datasets folder: `$EINSQL_DATA`, or `../shared/datasets` beside
/// the repository. `None` (after saying so on stderr) when it is absent, so
/// tests that need it skip instead of failing on a machine without the data.
#[allow(dead_code)]
pub fn datasets() -> Option<PathBuf> {
    let path = std::env::var_os("EINSQL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"));
    if path.is_dir() {
        Some(path)
    } else {
        eprintln!(
            "skipping: datasets folder '{}' not found (set EINSQL_DATA)",
            path.display()
        );
        None
    }
}

/// The README's first-session transcript: the fenced block that follows the
/// `<!-- first-session ... -->` marker line, so the README shows exactly what
/// the tests replay.
#[allow(dead_code)]
pub fn first_session() -> String {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .expect("README.md exists");
    let start = readme
        .find("<!-- first-session")
        .and_then(|marker| {
            readme[marker..]
                .find("```text\n")
                .map(|fence| marker + fence + 8)
        })
        .expect("README.md has the first-session marker and a ```text block after it");
    let length = readme[start..]
        .find("\n```")
        .expect("the first-session block is closed");
    readme[start..start + length + 1].to_string()
}

/// xorshift64*: a small deterministic generator for the fuzz tests, so
/// failures reproduce.
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The rows of a result, each as its cells (Arrow's display) joined by `|`.
#[allow(dead_code)]
pub fn lines(result: &QueryResult) -> Vec<String> {
    let mut out = Vec::new();
    for batch in &result.batches {
        let columns: Vec<ArrayFormatter<'_>> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default()).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = columns.iter().map(|c| c.value(row).to_string()).collect();
            out.push(cells.join("|"));
        }
    }
    out
}

/// A generator seeded from the clock, its seed printed under `label` so
/// that a failure can be reproduced.
#[allow(dead_code)]
pub fn clock_rng(label: &str) -> Rng {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    eprintln!("{label} seed {seed}");
    Rng(seed)
}

/// Runs the ignored test `name` of the current test binary as a child
/// process with the environment `env`, waits until it prints
/// `child-ready`, lets it run for `pause` and kills it: a writer killed at
/// an arbitrary moment.
#[allow(dead_code)]
pub fn kill_child_after(name: &str, env: &[(&str, String)], pause: std::time::Duration) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--ignored", "--nocapture"])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = BufReader::new(stdout)
        .lines()
        .any(|line| line.unwrap().contains("child-ready"));
    assert!(ready, "the child writer did not start");
    std::thread::sleep(pause);
    child.kill().unwrap();
    child.wait().unwrap();
}
