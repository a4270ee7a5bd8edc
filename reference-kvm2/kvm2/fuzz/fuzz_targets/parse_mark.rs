//! Reads arbitrary text as the mark element `DomainGetMetadata` returns
//! (`kvm2::fuzzing::parse_mark_xml`, which `cargo test` replays over the
//! committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kvm2::fuzzing::parse_mark_xml(data));
