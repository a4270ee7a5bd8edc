//! No code: this package holds the tests (`tests/crate_graph.rs`) that read
//! `cargo metadata` and fail when the crate graph breaks one of the invariants
//! ARCHITECTURE.md states.
