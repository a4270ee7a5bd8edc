//! Feeds arbitrary bytes to the packet decoder, as a peer on the socket
//! could (`libvirt_wire::fuzzing::decode_packet`, which `cargo test`
//! replays over the committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| libvirt_wire::fuzzing::decode_packet(data));
