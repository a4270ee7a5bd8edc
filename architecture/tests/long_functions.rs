//! Functions longer than a screen are few and each has a reason. A function of more
//! than [`LIMIT`] lines (from `fn` to the closing brace) in any library or binary
//! target of the workspace, test code left out, must be listed in [`LONG`] with one
//! line saying why it stays long; a listed function that got shorter, was renamed or
//! is gone must leave the list. How functions are read: `src/functions.rs`.

use std::collections::BTreeMap;

use architecture::{functions, modules};

mod support;
use support::targets;

/// The length above which a function must be listed.
const LIMIT: usize = 80;

/// (file from the workspace root, function, why it stays long).
const LONG: &[(&str, &str, &str)] = &[];

#[test]
fn every_long_function_is_listed_with_a_reason() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let mut found: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut seen = 0;
    for (package, target, src) in targets() {
        let graph = modules::read(&src).unwrap_or_else(|e| panic!("{package} ({target}): {e}"));
        let mut files: Vec<_> = graph.modules.values().cloned().collect();
        files.sort();
        files.dedup();
        for file in files {
            let rel = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .to_string_lossy()
                .into_owned();
            for f in functions::functions(&file).unwrap_or_else(|e| panic!("{e}")) {
                seen += 1;
                if f.lines > LIMIT {
                    found.insert((rel.clone(), f.name), f.lines);
                }
            }
        }
    }
    // What the reading saw, so that a reading that finds nothing fails.
    assert!(seen > 1000, "read only {seen} functions");
    let listed: BTreeMap<(String, String), &str> = LONG
        .iter()
        .map(|(file, name, why)| (((*file).to_owned(), (*name).to_owned()), *why))
        .collect();
    let unlisted: Vec<String> = found
        .iter()
        .filter(|(k, _)| !listed.contains_key(*k))
        .map(|((file, name), n)| format!("    (\"{file}\", \"{name}\", \"…\"), // {n} lines"))
        .collect();
    let stale: Vec<String> = listed
        .keys()
        .filter(|k| !found.contains_key(*k))
        .map(|(file, name)| format!("{file}: {name}"))
        .collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "functions over {LIMIT} lines not in LONG (split them into named steps, or list \
         them with why they stay long):\n{}\nlisted but no longer over {LIMIT} lines (remove \
         them from LONG):\n{}",
        unlisted.join("\n"),
        stale.join("\n")
    );
    for why in listed.values() {
        assert!(
            !why.trim().is_empty() && !why.contains('…'),
            "a reason is missing"
        );
    }
}
