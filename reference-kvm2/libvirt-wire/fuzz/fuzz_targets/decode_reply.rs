//! Decodes arbitrary bytes as one procedure's reply body (chosen by the
//! first byte) and as a libvirt error (`libvirt_wire::fuzzing::decode_reply`,
//! which `cargo test` replays over the committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| libvirt_wire::fuzzing::decode_reply(data));
