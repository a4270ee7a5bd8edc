//! Packet framing: the length word, the 24-byte `Header`, and `Packet`
//! (a header plus its undecoded payload).
//!
//! Decoding from a buffer answers `Ok(None)` while the buffer holds less than
//! a whole packet, and `Err` only for bytes that can never become a valid
//! packet (a length word below 28 or above 4 + 32 MiB).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::WireError;
use crate::limits::{LEN_WORD, MESSAGE_MAX, PACKET_MIN};
use crate::procedure::Procedure;
use crate::remote_error::RemoteError;
use crate::xdr::{Decode, Encode, Reader, decode_exact};

/// The remote program (`REMOTE_PROGRAM`), which carries every procedure.
pub const REMOTE_PROGRAM: u32 = 0x2000_8086;
/// Version of the remote program.
pub const REMOTE_VERSION: u32 = 1;
/// The keepalive program (ASCII "keep").
pub const KEEPALIVE_PROGRAM: u32 = 0x6b65_6570;
/// Version of the keepalive program.
pub const KEEPALIVE_VERSION: u32 = 1;
/// Keepalive procedure: are you there?
pub const KEEPALIVE_PING: i32 = 1;
/// Keepalive procedure: yes.
pub const KEEPALIVE_PONG: i32 = 2;

int_enum! {
    /// What a packet is (`virNetMessageType`).
    pub enum MessageType: i32 {
        /// A method call, client to server.
        Call = 0 => "VIR_NET_CALL",
        /// The reply to a call, server to client.
        Reply = 1 => "VIR_NET_REPLY",
        /// An asynchronous message: events and keepalive.
        Message = 2 => "VIR_NET_MESSAGE",
        /// Stream data or stream control.
        Stream = 3 => "VIR_NET_STREAM",
        /// A call passing file descriptors (Unix sockets only).
        CallWithFds = 4 => "VIR_NET_CALL_WITH_FDS",
        /// A reply passing file descriptors.
        ReplyWithFds = 5 => "VIR_NET_REPLY_WITH_FDS",
        /// A hole in a sparse stream.
        StreamHole = 6 => "VIR_NET_STREAM_HOLE",
    }
}

int_enum! {
    /// Outcome or stream state carried by a packet (`virNetMessageStatus`).
    pub enum Status: i32 {
        /// Success; on a stream, "finished" or "finish confirmed".
        Ok = 0 => "VIR_NET_OK",
        /// Failure (a `RemoteError` follows, or nothing for a client abort).
        Error = 1 => "VIR_NET_ERROR",
        /// Stream data follows.
        Continue = 2 => "VIR_NET_CONTINUE",
    }
}

/// The fixed header after the length word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(test, derive(proptest_derive::Arbitrary))]
pub struct Header {
    /// Program number ([`REMOTE_PROGRAM`], [`KEEPALIVE_PROGRAM`]).
    pub program: u32,
    /// Program version.
    pub version: u32,
    /// Procedure number within the program (see [`Procedure`]).
    pub procedure: i32,
    /// Packet type.
    pub kind: MessageType,
    /// Call serial; replies and stream packets echo their call's serial.
    pub serial: u32,
    /// Status.
    pub status: Status,
}

impl Header {
    /// Reads the header of the packet at the start of `buf`, length word included.
    ///
    /// Returns `Ok(None)` when fewer than 28 bytes are available, and an error
    /// when the length word is out of bounds.
    pub fn decode(buf: &[u8]) -> Result<Option<Header>, WireError> {
        if buf.len() < PACKET_MIN {
            // Still validate a complete length word early: a peer sending a
            // bogus length should be rejected without waiting for more bytes.
            frame_len(buf)?;
            return Ok(None);
        }
        frame_len(buf)?;
        let mut r = Reader::new(&buf[LEN_WORD..PACKET_MIN]);
        Ok(Some(Header {
            program: r.read_u32()?,
            version: r.read_u32()?,
            procedure: r.read_i32()?,
            kind: MessageType::decode(&mut r)?,
            serial: r.read_u32()?,
            status: Status::decode(&mut r)?,
        }))
    }

    /// Writes the 24 header bytes (without the length word).
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_u32(self.program);
        buf.put_u32(self.version);
        buf.put_i32(self.procedure);
        buf.put_i32(self.kind.to_raw());
        buf.put_u32(self.serial);
        buf.put_i32(self.status.to_raw());
    }

    /// A CALL header for a remote procedure.
    pub fn call(procedure: Procedure, serial: u32) -> Header {
        Header {
            program: REMOTE_PROGRAM,
            version: REMOTE_VERSION,
            procedure: procedure.to_raw(),
            kind: MessageType::Call,
            serial,
            status: Status::Ok,
        }
    }

    /// The header of a REPLY to this call: same program, procedure and serial.
    pub fn reply(&self, status: Status) -> Header {
        Header {
            kind: MessageType::Reply,
            status,
            ..*self
        }
    }

    /// The header of a STREAM packet belonging to this call.
    pub fn stream(&self, status: Status) -> Header {
        Header {
            kind: MessageType::Stream,
            status,
            ..*self
        }
    }

    /// A keepalive MESSAGE header ([`KEEPALIVE_PING`] or [`KEEPALIVE_PONG`]), serial 0.
    pub fn keepalive(procedure: i32) -> Header {
        Header {
            program: KEEPALIVE_PROGRAM,
            version: KEEPALIVE_VERSION,
            procedure,
            kind: MessageType::Message,
            serial: 0,
            status: Status::Ok,
        }
    }

    /// The remote procedure this header names (meaningful for the remote program).
    pub fn remote_procedure(&self) -> Procedure {
        Procedure::from_raw(self.procedure)
    }

    /// Whether this is a keepalive PING.
    pub fn is_ping(&self) -> bool {
        self.program == KEEPALIVE_PROGRAM && self.procedure == KEEPALIVE_PING
    }

    /// Whether this is a keepalive PONG.
    pub fn is_pong(&self) -> bool {
        self.program == KEEPALIVE_PROGRAM && self.procedure == KEEPALIVE_PONG
    }
}

/// Reads the length word at the start of `buf` and returns the whole packet
/// length (length word included), or `Ok(None)` when fewer than 4 bytes are
/// available.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, WireError> {
    if buf.len() < LEN_WORD {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let total = len as usize;
    if total < PACKET_MIN {
        return Err(WireError::PacketTooSmall(len));
    }
    if total - LEN_WORD > MESSAGE_MAX {
        return Err(WireError::PacketTooLarge {
            len: total - LEN_WORD,
            max: MESSAGE_MAX,
        });
    }
    Ok(Some(total))
}

/// A framed packet: its header and its still-encoded payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The header.
    pub header: Header,
    /// The payload after the header (XDR, or raw bytes for stream data).
    pub payload: Bytes,
}

impl Packet {
    /// Decodes the packet at the start of `buf`, returning it with the number
    /// of bytes it took, or `Ok(None)` if `buf` does not yet hold all of it.
    pub fn decode(buf: &[u8]) -> Result<Option<(Packet, usize)>, WireError> {
        let Some(total) = frame_len(buf)? else {
            return Ok(None);
        };
        if buf.len() < total {
            return Ok(None);
        }
        let header = Header::decode(buf)?.expect("whole packet is buffered");
        let payload = Bytes::copy_from_slice(&buf[PACKET_MIN..total]);
        Ok(Some((Packet { header, payload }, total)))
    }

    /// Like [`Packet::decode`], but consumes the packet from `buf` without
    /// copying the payload. Leaves `buf` untouched when it returns `Ok(None)`
    /// or an error.
    pub fn decode_from(buf: &mut BytesMut) -> Result<Option<Packet>, WireError> {
        let Some(total) = frame_len(buf)? else {
            return Ok(None);
        };
        if buf.len() < total {
            return Ok(None);
        }
        let header = Header::decode(buf)?.expect("whole packet is buffered");
        let mut frame = buf.split_to(total);
        frame.advance(PACKET_MIN);
        Ok(Some(Packet {
            header,
            payload: frame.freeze(),
        }))
    }

    /// Frames this packet into `dst`.
    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), WireError> {
        encode_raw(dst, &self.header, &self.payload)
    }

    /// Decodes the payload as `T`, requiring it to be consumed exactly.
    pub fn decode_payload<T: Decode>(&self) -> Result<T, WireError> {
        decode_exact(&self.payload)
    }

    /// Decodes the payload as a [`RemoteError`] (for packets with status ERROR).
    pub fn remote_error(&self) -> Result<RemoteError, WireError> {
        self.decode_payload()
    }
}

/// Frames a packet whose payload is the XDR encoding of `body`.
///
/// Fails, leaving `dst` as it was, when the packet would exceed the
/// protocol's maximum size.
pub fn encode_packet<T: Encode + ?Sized>(
    dst: &mut BytesMut,
    header: &Header,
    body: &T,
) -> Result<(), WireError> {
    let start = dst.len();
    dst.put_u32(0);
    header.encode(dst);
    body.encode(dst);
    finish_frame(dst, start)
}

/// Frames a packet whose payload is `data` verbatim (stream data).
pub fn encode_raw(dst: &mut BytesMut, header: &Header, data: &[u8]) -> Result<(), WireError> {
    let total = PACKET_MIN + data.len();
    if total - LEN_WORD > MESSAGE_MAX {
        return Err(WireError::PacketTooLarge {
            len: total - LEN_WORD,
            max: MESSAGE_MAX,
        });
    }
    dst.reserve(total);
    dst.put_u32(total as u32);
    header.encode(dst);
    dst.put_slice(data);
    Ok(())
}

/// Frames a successful REPLY to `call` carrying `ret`.
pub fn encode_reply<T: Encode + ?Sized>(
    dst: &mut BytesMut,
    call: &Header,
    ret: &T,
) -> Result<(), WireError> {
    encode_packet(dst, &call.reply(Status::Ok), ret)
}

/// Frames a failed REPLY to `call` carrying `error`.
pub fn encode_error_reply(
    dst: &mut BytesMut,
    call: &Header,
    error: &RemoteError,
) -> Result<(), WireError> {
    encode_packet(dst, &call.reply(Status::Error), error)
}

fn finish_frame(dst: &mut BytesMut, start: usize) -> Result<(), WireError> {
    let total = dst.len() - start;
    if total - LEN_WORD > MESSAGE_MAX {
        dst.truncate(start);
        return Err(WireError::PacketTooLarge {
            len: total - LEN_WORD,
            max: MESSAGE_MAX,
        });
    }
    dst[start..start + LEN_WORD].copy_from_slice(&(total as u32).to_be_bytes());
    Ok(())
}
