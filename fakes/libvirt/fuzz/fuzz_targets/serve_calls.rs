//! Serves arbitrary bytes as what a client sends the daemon after its
//! handshake (`libvirt_fake::fuzzing::serve_calls`, which `cargo test`
//! replays over the committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| libvirt_fake::fuzzing::serve_calls(data));
