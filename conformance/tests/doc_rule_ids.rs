//! Every rule ID a document cites names a rule of the catalogue.
//!
//! The documents are every `*.md` under `docs/`, the workspace's `README.md` and
//! `ARCHITECTURE.md`, and every `README.md` under `reference-kvm2/` and `fakes/`.
//! A rule ID is a token of the shape `(CRE|GET|DEL|LST|GEN|CHK)-[A-Z0-9]+(-[A-Z0-9]+)*`
//! that does not continue a longer word; nothing of that shape is exempt, so a
//! document that needs such a word for something else must be reworded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use conformance::rules::CATALOGUE;

/// The area prefixes rule IDs start with.
const PREFIXES: [&str; 6] = ["CRE", "GET", "DEL", "LST", "GEN", "CHK"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// Files under `dir` (recursively) whose name satisfies `keep`, skipping build
/// output and hidden directories, sorted.
fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    let mut entries: Vec<_> = entries
        .map(|e| e.unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let kind = e
            .file_type()
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        if kind.is_dir() {
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            walk(&path, keep, out);
        } else if kind.is_file() && keep(&path) {
            out.push(path);
        }
    }
}

/// The documents whose rule IDs are checked.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = Vec::new();
    walk(
        &root.join("docs"),
        &|p| p.extension().is_some_and(|x| x == "md"),
        &mut docs,
    );
    for top in ["README.md", "ARCHITECTURE.md"] {
        docs.push(root.join(top));
    }
    for dir in ["reference-kvm2", "fakes"] {
        walk(
            &root.join(dir),
            &|p| p.file_name().is_some_and(|n| n == "README.md"),
            &mut docs,
        );
    }
    docs
}

fn is_id_char(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

/// Every token of the rule-ID shape in `text`, in order, with repeats.
///
/// A token starts at an area prefix that no letter, digit, `_` or `-` precedes, is
/// followed by `-` and one or more uppercase letters or digits, and takes as many
/// further `-SEGMENT`s as follow.
fn rule_ids(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts_token =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'_' | b'-'));
        let prefix = PREFIXES
            .iter()
            .find(|p| starts_token && b[i..].starts_with(p.as_bytes()));
        let Some(prefix) = prefix else {
            i += 1;
            continue;
        };
        // At least one segment: `-` then one or more ID characters.
        let mut end = i + prefix.len();
        let mut segments = 0;
        while end + 1 < b.len() && b[end] == b'-' && is_id_char(b[end + 1]) {
            let mut j = end + 1;
            while j < b.len() && is_id_char(b[j]) {
                j += 1;
            }
            end = j;
            segments += 1;
        }
        if segments == 0 {
            i += prefix.len();
            continue;
        }
        found.push(&text[i..end]);
        i = end;
    }
    found
}

#[test]
fn the_matcher_finds_rule_ids_and_nothing_else() {
    let text = "CRE-ID-STABLE, (GET-STATE) and `DEL-RESUME`; LST-X1.\n\
                GEN-MODEL=5 CHK-ORDER's BUDGET-1 X_GET-A GET- GET-lower CRE MyCRE-X \
                conformance::get::GET-STATELESS";
    assert_eq!(
        rule_ids(text),
        [
            "CRE-ID-STABLE",
            "GET-STATE",
            "DEL-RESUME",
            "LST-X1",
            "GEN-MODEL",
            "CHK-ORDER",
            "GET-STATELESS",
        ]
    );
}

#[test]
fn every_rule_id_a_document_cites_is_in_the_catalogue() {
    let root = workspace_root();
    let docs = documents(&root);
    let spec = root.join("docs/kvm2-provider-spec.md");
    assert!(
        docs.contains(&spec),
        "the walk missed {} (found {docs:?})",
        spec.display()
    );
    let known: BTreeSet<&str> = CATALOGUE.iter().map(|r| r.id).collect();
    let mut cited = 0;
    let mut unknown = Vec::new();
    for path in &docs {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            for id in rule_ids(line) {
                cited += 1;
                if !known.contains(id) {
                    unknown.push(format!("{rel}:{}: {id}", n + 1));
                }
            }
        }
    }
    assert!(
        cited > 0,
        "no document cites a rule ID: is the walk broken? {docs:?}"
    );
    assert!(
        unknown.is_empty(),
        "{} citation(s) of rule IDs that are not in conformance::rules::CATALOGUE \
         (file:line: ID):\n  {}",
        unknown.len(),
        unknown.join("\n  ")
    );
}
