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
