//! No code: this package holds the tests (`tests/crate_graph.rs`) that read
//! `cargo metadata` and fail when the crate graph breaks one of the invariants
//! ARCHITECTURE.md states, and the test (`tests/mutants_record.rs`) that keeps the
//! record of machine-made mutants (`mutants/`) in step with `cargo mutants --list`.
