//! The bodies of the fuzz targets in `fuzz/`, kept here so that a plain
//! `cargo test` replays each committed seed corpus through exactly the code
//! the fuzzer runs. Not part of the crate's API.

use bytes::BytesMut;

use crate::{
    CallArgs, CallRet, Encode, Header, Packet, Procedure, RemoteError, decode_exact, encode_to_vec,
};

/// Feeds `data` to the packet decoder as a peer on the socket could, and
/// decodes every packet's payload as each type a client or a server would.
/// Nothing may panic, and whatever decodes must re-encode to bytes that
/// decode to the same value.
pub fn decode_packet(data: &[u8]) {
    let _ = Header::decode(data);
    let _ = Packet::decode(data);

    let mut buf = BytesMut::from(data);
    while let Ok(Some(packet)) = Packet::decode_from(&mut buf) {
        let procedure = packet.header.remote_procedure();
        round_trip_args(procedure, &packet.payload);
        round_trip_ret(procedure, &packet.payload);
        round_trip_error(&packet.payload);
        let mut framed = BytesMut::new();
        packet
            .encode(&mut framed)
            .expect("a decoded packet re-encodes");
        let (back, used) = Packet::decode(&framed)
            .expect("a re-encoded packet decodes")
            .expect("a re-encoded packet is whole");
        assert_eq!(used, framed.len());
        assert_eq!(back, packet);
    }

    // Payload-only decoding for every known procedure, independent of framing.
    for p in Procedure::ALL {
        let _ = CallArgs::decode(*p, data);
        let _ = CallRet::decode(*p, data);
    }
}

/// Decodes `data` as the reply body of one procedure, chosen by its first
/// byte, and as the error a failed reply carries: what the client reads
/// from a server it does not trust. Whatever decodes must round-trip.
pub fn decode_reply(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let procedure = Procedure::ALL[usize::from(pick) % Procedure::ALL.len()];
    round_trip_ret(procedure, body);
    round_trip_error(body);
}

fn round_trip_args(procedure: Procedure, payload: &[u8]) {
    if let Ok(args) = CallArgs::decode(procedure, payload) {
        let mut again = BytesMut::new();
        args.encode(&mut again);
        assert_eq!(CallArgs::decode(procedure, &again).as_ref(), Ok(&args));
    }
}

fn round_trip_ret(procedure: Procedure, payload: &[u8]) {
    if let Ok(ret) = CallRet::decode(procedure, payload) {
        let mut again = BytesMut::new();
        ret.encode(&mut again);
        assert_eq!(CallRet::decode(procedure, &again).as_ref(), Ok(&ret));
    }
}

fn round_trip_error(payload: &[u8]) {
    if let Ok(err) = decode_exact::<RemoteError>(payload) {
        let again = encode_to_vec(&err);
        assert_eq!(decode_exact::<RemoteError>(&again), Ok(err));
    }
}

#[cfg(test)]
mod replay {
    fn replay(target: &str, f: fn(&[u8])) {
        seed_corpus::replay(env!("CARGO_MANIFEST_DIR"), target, f);
    }

    #[test]
    fn decode_packet_corpus() {
        replay("decode_packet", super::decode_packet);
    }

    #[test]
    fn decode_reply_corpus() {
        replay("decode_reply", super::decode_reply);
    }
}
