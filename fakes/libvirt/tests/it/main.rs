//! Hermetic tests of the fake: model semantics with libvirt's real error
//! codes, fault injection, the trace, and the remote-protocol server.

mod common;
mod daemon;
mod domains;
mod faults;
mod interfaces;
mod lenient;
mod metadata;
mod pools;
mod props;
mod robustness;
mod storage;
#[path = "../support/mod.rs"]
mod support;
mod wire;
