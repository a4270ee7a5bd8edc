//! The body of the `decode_message` fuzz target in `fuzz/`, kept here so
//! that a plain `cargo test` replays its committed seed corpus through
//! exactly the code the fuzzer runs. Not part of the crate's API.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::proto::{
    CheckResult, ContractError, EventParams, InitializeResult, MAX_LINE, OpOutcome,
    ResourcesResult, SpanEndParams, SpanStartParams, WireInstance, WireListing, WireProfile,
};
use crate::types::{HostHealth, Instance, Listing};

/// Reads `data` as one line a provider process sends: a JSON value, then
/// (by its first byte) the params or result of one message type, converted
/// to the suite's own types as the bridge does. Nothing may panic; a
/// message that decodes re-encodes to one that decodes equal, and a value
/// that converts converts back to a wire form that converts to the same
/// value.
pub fn decode_message(data: &[u8]) {
    if data.len() > MAX_LINE {
        return;
    }
    // Any JSON value, as the connection reads a line first. (Not compared
    // after a round trip: serde_json reads floats fast, not exactly.)
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        let _ = serde_json::to_string(&v).expect("a JSON value serialises");
    }
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    match pick % 9 {
        0 => {
            if let Some(r) = round_trip::<InitializeResult>(body) {
                profile(&r.profile);
            }
        }
        1 => {
            if let Some(p) = round_trip::<WireProfile>(body) {
                profile(&p);
            }
        }
        2 => {
            if let Some(o) = round_trip::<OpOutcome<WireInstance>>(body) {
                match o {
                    OpOutcome::Ok(w) => instance(&w),
                    OpOutcome::Error(e) => error(&e),
                }
            }
        }
        3 => {
            if let Some(OpOutcome::Ok(w)) = round_trip::<OpOutcome<WireListing>>(body)
                && let Ok(l) = w.to_listing()
            {
                let back = super::proto::WireListing::from(&l).to_listing();
                assert_eq!(back.as_ref(), Ok::<&Listing, &String>(&l));
            }
        }
        4 => {
            if let Some(e) = round_trip::<ContractError>(body) {
                error(&e);
            }
        }
        5 => {
            if let Some(c) = round_trip::<CheckResult>(body) {
                for w in c.health {
                    let h = HostHealth::from(w);
                    let again = HostHealth::from(super::proto::WireHostHealth::from(&h));
                    assert_eq!(again, h);
                }
            }
        }
        6 => {
            let _ = round_trip::<ResourcesResult>(body);
        }
        7 => {
            let _ = round_trip::<SpanStartParams>(body);
            let _ = round_trip::<SpanEndParams>(body);
        }
        _ => {
            let _ = round_trip::<EventParams>(body);
        }
    }
}

/// Decodes `body` as `T`; what decodes must re-encode to JSON that decodes
/// to the same value.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    body: &[u8],
) -> Option<T> {
    let t: T = serde_json::from_slice(body).ok()?;
    let text = serde_json::to_vec(&t).expect("a protocol message serialises");
    let back: T = serde_json::from_slice(&text)
        .unwrap_or_else(|e| panic!("a re-encoded message decodes: {e}"));
    assert_eq!(back, t);
    Some(t)
}

fn profile(w: &WireProfile) {
    if let Ok(p) = w.to_profile() {
        assert_eq!(WireProfile::from(&p).to_profile(), Ok(p));
    }
}

fn instance(w: &WireInstance) {
    if let Ok(i) = w.to_instance() {
        let back = WireInstance::from(&i).to_instance();
        assert_eq!(back.as_ref(), Ok::<&Instance, &String>(&i));
    }
}

fn error(w: &ContractError) {
    if let Ok(e) = w.to_error() {
        let wire = ContractError::from(&e);
        let again = wire.to_error().expect("a converted error converts back");
        assert_eq!(ContractError::from(&again), wire);
    }
}

#[cfg(test)]
mod replay {
    fn replay(target: &str, f: fn(&[u8])) {
        seed_corpus::replay(env!("CARGO_MANIFEST_DIR"), target, f);
    }

    #[test]
    fn decode_message_corpus() {
        replay("decode_message", super::decode_message);
    }
}
