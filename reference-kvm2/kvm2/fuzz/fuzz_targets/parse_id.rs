//! Parses arbitrary text as an instance ID
//! (`kvm2::fuzzing::parse_provider_id`, which `cargo test` replays over the
//! committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kvm2::fuzzing::parse_provider_id(data));
