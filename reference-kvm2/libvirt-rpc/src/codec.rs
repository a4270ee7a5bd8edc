//! `PacketCodec`: the thin `tokio_util` codec that frames libvirt packets
//! with `libvirt-wire`. Decoding yields whole `Packet`s; encoding takes
//! already framed bytes, so callers encode (and size-check) before queueing.

use bytes::{Bytes, BytesMut};
use libvirt_wire::{Packet, WireError, frame_len};
use tokio_util::codec::{Decoder, Encoder};

/// Why the codec failed: the transport, or bytes that break the protocol.
#[derive(Debug)]
pub enum CodecError {
    /// Reading or writing the transport failed.
    Io(std::io::Error),
    /// The peer sent bytes that are not a valid packet.
    Wire(WireError),
}

impl From<std::io::Error> for CodecError {
    fn from(e: std::io::Error) -> Self {
        CodecError::Io(e)
    }
}

/// Frames libvirt packets on an async byte stream.
#[derive(Debug, Default, Clone, Copy)]
pub struct PacketCodec;

impl Decoder for PacketCodec {
    type Item = Packet;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Packet>, CodecError> {
        match Packet::decode_from(src).map_err(CodecError::Wire)? {
            Some(packet) => Ok(Some(packet)),
            None => {
                // Reserve room for the rest of the packet once its length is
                // known (and already checked against the maximum).
                if let Ok(Some(total)) = frame_len(src) {
                    src.reserve(total.saturating_sub(src.len()));
                }
                Ok(None)
            }
        }
    }
}

impl Encoder<Bytes> for PacketCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: Bytes, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.extend_from_slice(&frame);
        Ok(())
    }
}
