//! The libvirt remote protocol's wire format, with no I/O: XDR encoding,
//! packet framing, procedure numbers with typed arguments and results, and
//! libvirt's error structure.
//!
//! Its neighbours: `libvirt-rpc` drives it over an async byte stream as a
//! client, and the in-memory libvirt fake uses it as a server. Neither this
//! crate nor its types know about sockets, tasks or time.
//!
//! # Overview
//!
//! * [`Encode`] writes a value into a `BytesMut`; [`Decode`] reads one from a
//!   [`Reader`] over a byte slice. Every string, array and packet length is
//!   checked against its declared maximum ([`limits`]) before allocating.
//! * [`Packet::decode`] / [`Packet::decode_from`] take one packet off the
//!   front of a buffer, answering `Ok(None)` when more bytes are needed;
//!   [`Header::decode`] peeks at the header alone. [`encode_packet`] and
//!   [`encode_raw`] frame a header with an XDR body or raw stream bytes.
//! * One table in `procedure.rs` ([`for_each_procedure!`]) gives every
//!   [`Procedure`] its number, libvirt API name ([`Procedure::api_name`]),
//!   argument and result types: [`calls`] has a marker type per procedure
//!   implementing [`RemoteCall`], for typed clients; [`CallArgs::decode`]
//!   turns a CALL payload into typed arguments by procedure, and
//!   [`dispatch`] routes them to the server's [`Handler`], one method per
//!   procedure.
//! * A failed REPLY carries a [`RemoteError`]; its [`ErrorCode`] and
//!   [`ErrorDomain`] keep unknown numbers as `Other(n)`.
//!
//! A server answers a CALL like this:
//!
//! ```
//! use bytes::BytesMut;
//! use libvirt_wire::*;
//!
//! // A client's AUTH_LIST call, serial 1.
//! let mut wire = BytesMut::new();
//! encode_packet(&mut wire, &Header::call(Procedure::AuthList, 1), &()).unwrap();
//!
//! let call = Packet::decode_from(&mut wire).unwrap().expect("whole packet");
//! let args = CallArgs::decode(call.header.remote_procedure(), &call.payload).unwrap();
//! assert_eq!(args, CallArgs::AuthList(()));
//!
//! let mut out = BytesMut::new();
//! let ret = AuthListRet { types: vec![AuthType::None] };
//! encode_reply(&mut out, &call.header, &ret).unwrap();
//! assert_eq!(out.len(), 36);
//! ```

#![deny(missing_docs)]

#[macro_use]
mod macros;

mod constants;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
pub mod limits;
mod messages;
mod packet;
mod procedure;
mod remote_error;
mod types;
mod xdr;

#[cfg(test)]
mod tests;

pub use constants::*;
pub use error::WireError;
pub use handler::{Handler, dispatch};
pub use messages::*;
pub use packet::{
    Header, KEEPALIVE_PING, KEEPALIVE_PONG, KEEPALIVE_PROGRAM, KEEPALIVE_VERSION, MessageType,
    Packet, REMOTE_PROGRAM, REMOTE_VERSION, Status, encode_error_reply, encode_packet, encode_raw,
    encode_reply, frame_len,
};
pub use procedure::{CallArgs, CallRet, Procedure, RemoteCall, calls};
pub use remote_error::{ErrorCode, ErrorDomain, ErrorLevel, RemoteError};
pub use types::{
    AuthType, CharArray, Domain, FixedChars, Interface, Network, StoragePool, StorageVol, Uuid,
};
pub use xdr::{
    Decode, Encode, Reader, decode_array, decode_exact, encode_fixed_opaque, encode_to_vec,
    encode_var_opaque,
};
