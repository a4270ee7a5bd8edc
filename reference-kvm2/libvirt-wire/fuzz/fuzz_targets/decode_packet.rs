//! Feeds arbitrary bytes to the packet decoder, as a peer on the socket
//! could, and decodes every packet's payload as each type a client or a
//! server would. Nothing may panic, and whatever decodes must re-encode to
//! a value that decodes the same.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use libvirt_wire::{CallArgs, CallRet, Encode, Header, Packet, Procedure, RemoteError};

fuzz_target!(|data: &[u8]| {
    let _ = Header::decode(data);
    let _ = Packet::decode(data);

    let mut buf = BytesMut::from(data);
    while let Ok(Some(packet)) = Packet::decode_from(&mut buf) {
        let procedure = packet.header.remote_procedure();
        if let Ok(args) = CallArgs::decode(procedure, &packet.payload) {
            let mut again = BytesMut::new();
            args.encode(&mut again);
            assert_eq!(CallArgs::decode(procedure, &again).as_ref(), Ok(&args));
        }
        if let Ok(ret) = CallRet::decode(procedure, &packet.payload) {
            let mut again = BytesMut::new();
            ret.encode(&mut again);
            assert_eq!(CallRet::decode(procedure, &again).as_ref(), Ok(&ret));
        }
        if let Ok(err) = packet.remote_error() {
            let again = libvirt_wire::encode_to_vec(&err);
            assert_eq!(libvirt_wire::decode_exact::<RemoteError>(&again), Ok(err));
        }
        let mut framed = BytesMut::new();
        packet.encode(&mut framed).expect("a decoded packet re-encodes");
        let (back, used) = Packet::decode(&framed).unwrap().unwrap();
        assert_eq!(used, framed.len());
        assert_eq!(back, packet);
    }

    // Payload-only decoding for every known procedure, independent of framing.
    for p in Procedure::ALL {
        let _ = CallArgs::decode(*p, data);
        let _ = CallRet::decode(*p, data);
    }
});
