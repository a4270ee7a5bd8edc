//! No import circle between sibling modules of any crate: a module may name its parent
//! and its children freely, but when `a` names `b` (through `crate::` or `super::`
//! paths, in `use` items or in code) and `b` names `a`, directly or around a longer
//! circle of siblings, neither can be read, changed or deleted without the other.
//! Code under `#[cfg(test)]` is left out. How the source is read: `src/modules.rs`.

use std::path::Path;

use architecture::modules::{self, Circle};

mod support;
use support::targets;

#[test]
fn no_sibling_modules_name_each_other_in_a_circle() {
    let mut circles: Vec<String> = Vec::new();
    let (mut modules_seen, mut edges_seen) = (0, 0);
    for (package, target, root) in targets() {
        let graph = modules::read(&root).unwrap_or_else(|e| panic!("{package} ({target}): {e}"));
        modules_seen += graph.modules.len();
        edges_seen += graph.edge_count();
        circles.extend(
            graph
                .sibling_circles()
                .iter()
                .map(|c| format!("{package} ({target}) {c}")),
        );
    }
    // What the reading saw, so that a reading that finds nothing fails instead of
    // passing: the workspace has hundreds of modules naming one another.
    assert!(
        modules_seen > 200 && edges_seen > 300,
        "read only {modules_seen} modules and {edges_seen} names between them"
    );
    assert!(
        circles.is_empty(),
        "sibling modules naming each other in a circle (move what both need into one \
         of them, their parent or a new sibling):\n{}",
        circles.join("\n")
    );
}

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// The reading finds a planted circle, two or three siblings long, in `use` items, in
/// code and between inline modules, and nothing between a parent and its child or in
/// test code.
#[test]
fn a_planted_circle_is_found_and_nothing_else() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    write(
        d,
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\nmod p;\nmod inline { pub fn f() { super::d::g(); } }\n",
    );
    // a → b by a use item, b → c in code, c → a through `crate::`: one circle of three.
    write(d, "a.rs", "use super::b::B;\npub fn g() {}\n");
    // d and an inline module name each other.
    write(d, "d.rs", "pub fn g() { crate::inline::f(); }\n");
    write(
        d,
        "b.rs",
        "pub struct B;\npub fn h() { super::c::C::new(); }\n",
    );
    write(
        d,
        "c.rs",
        "pub struct C;\nimpl C { pub fn new() -> C { crate::a::g(); C } }\n",
    );
    // A parent and its child name each other; a test module names a sibling: neither
    // is a circle.
    write(d, "p.rs", "mod q;\npub fn p() { q::q(); }\n");
    write(
        d,
        "p/q.rs",
        "pub fn q() { super::p(); }\n#[cfg(test)]\nmod tests { use crate::a::g; }\n",
    );
    let graph = modules::read(&d.join("lib.rs")).expect("reads");
    assert_eq!(graph.modules.len(), 8, "{:?}", graph.modules.keys());
    let circles = graph.sibling_circles();
    let members: Vec<Vec<String>> = circles.iter().map(|c: &Circle| c.members.clone()).collect();
    assert_eq!(
        members,
        [vec!["a", "b", "c"], vec!["d", "inline"]],
        "{circles:#?}"
    );
    let via: Vec<String> = circles[0].via.iter().map(|v| v.2.clone()).collect();
    assert_eq!(via, ["super::b::B", "super::c::C::new", "crate::a::g"]);
}
