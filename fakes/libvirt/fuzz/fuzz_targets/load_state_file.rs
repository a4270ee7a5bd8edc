//! Reads arbitrary text as a `fake-libvirtd` state file and loads it
//! (`libvirt_fake::fuzzing::load_state_file`, which `cargo test` replays
//! over the committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| libvirt_fake::fuzzing::load_state_file(data));
