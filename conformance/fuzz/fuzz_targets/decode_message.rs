//! Reads arbitrary bytes as a line a provider process sends over the
//! process protocol (`conformance::remote::fuzzing::decode_message`, which
//! `cargo test` replays over the committed corpus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| conformance::remote::fuzzing::decode_message(data));
