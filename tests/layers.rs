//! The library's modules depend downward only, in the layers that
//! `docs/ARCHITECTURE.md` lists: a `crate::` path in code (not in comments)
//! may name a module of its own layer or of a layer below, never one above.
//! A new upward import fails this test.

use std::path::{Path, PathBuf};

/// The top-level modules, bottom to top; modules on one line share a layer.
const LAYERS: &[&[&str]] = &[
    &["error", "progress", "durable"],
    &["storage"],
    &["io", "tpch"],
    &["catalog"],
    &["ir"],
    &["exec", "reference"],
    &["optimizer"],
    &["bound", "emit"],
    &["sql", "einsum"],
    &["session"],
    &["database"],
];

/// The layer of a top-level module, `None` for names that are not modules
/// (`crate::Error`, a re-export at the top).
fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The top-level modules that `code` names through `crate::`, including
/// the ones in `use crate::{a, b::c}` groups.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.push(name);
            }
        } else {
            names.push(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    names
}

/// `text` without its comments (line comments and doc comments).
fn code_only(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn modules_depend_downward_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut upward = Vec::new();
    let mut unlisted = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).expect("below src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|s| s.trim_end_matches(".rs").to_string())
            .unwrap_or_default();
        // The binary (main.rs, shell/) uses the public API; lib.rs lists
        // the modules.
        if matches!(top.as_str(), "main" | "shell" | "lib") {
            continue;
        }
        let Some(own) = layer(&top) else {
            unlisted.push(top);
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable source");
        for name in crate_paths(&code_only(&text)) {
            if let Some(other) = layer(&name)
                && other > own
            {
                upward.push(format!("{}: {top} uses {name}", relative.display()));
            }
        }
    }
    unlisted.sort();
    unlisted.dedup();
    assert!(
        unlisted.is_empty(),
        "modules missing from LAYERS (and from docs/ARCHITECTURE.md): {unlisted:?}"
    );
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn the_checker_sees_grouped_and_plain_paths() {
    let code = code_only(
        "use crate::io::FileFormat;\nuse crate::{session, sql::Context};\n// crate::database in a comment\nlet x = crate::exec::run();",
    );
    assert_eq!(crate_paths(&code), ["io", "session", "sql", "exec"]);
}
