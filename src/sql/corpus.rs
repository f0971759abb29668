//! The statements of the SQL test files (`tests/slt`), for the tests that
//! compare two ways of reading SQL: each `statement` or `query` record's
//! text, its lines joined as written.

use std::path::Path;

/// Every statement of every `.slt` file under `tests/slt`, in file order.
pub fn statements() -> Vec<String> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .expect("the tests/slt folder")
        .map(|entry| entry.expect("an entry of tests/slt").path())
        .filter(|path| path.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    let mut statements = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("an .slt file");
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if !(line.starts_with("statement ") || line.starts_with("query ")) {
                continue;
            }
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.is_empty() && *l != "----")
                .collect();
            statements.push(body.join("\n"));
        }
    }
    statements
}
