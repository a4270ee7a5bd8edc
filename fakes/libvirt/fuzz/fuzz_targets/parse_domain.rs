//! Reads arbitrary text as a domain definition a client could send
//! (`libvirt_fake::fuzzing::parse_domain_xml`, which `cargo test` replays
//! over the committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| libvirt_fake::fuzzing::parse_domain_xml(data));
