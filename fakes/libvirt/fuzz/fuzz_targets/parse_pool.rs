//! Reads arbitrary text as a storage pool definition a client could send
//! (`libvirt_fake::fuzzing::parse_pool_xml`, which `cargo test` replays
//! over the committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| libvirt_fake::fuzzing::parse_pool_xml(data));
