//! Helpers shared by the integration tests.

use std::path::PathBuf;

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
