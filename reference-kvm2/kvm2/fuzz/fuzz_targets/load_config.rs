//! Loads arbitrary text as a kvm2 configuration file
//! (`kvm2::fuzzing::load_config`, which `cargo test` replays over the
//! committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kvm2::fuzzing::load_config(data));
