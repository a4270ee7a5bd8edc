//! The workspace's structural invariants. `tests/crate_graph.rs` reads `cargo metadata`
//! and fails when the crate graph breaks one of the invariants ARCHITECTURE.md states;
//! `tests/module_graph.rs` reads every crate's source with [`modules`] and fails on an
//! import circle between sibling modules; `tests/long_functions.rs` lists, with a
//! reason each, the functions longer than a screen ([`functions`]);
//! `tests/mutants_record.rs` keeps the record of machine-made mutants (`mutants/`) in
//! step with `cargo mutants --list`.

pub mod functions;
pub mod modules;
