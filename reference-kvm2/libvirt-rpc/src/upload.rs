//! `Upload`: the client side of a `STORAGE_VOL_UPLOAD` stream. Data goes out
//! in chunks of at most 262 120 bytes (the payload size every libvirt accepts);
//! `finish` sends the end marker and waits for the server's confirmation.
//!
//! Data is never copied on its way to the transport when it arrives as
//! `Bytes`: a chunk is a list of buffers that the connection writes, after
//! the packet header, with one vectored write. Up to [`IN_FLIGHT`] chunks
//! are queued or being written at a time, so the transport never waits for
//! the writer between two chunks while memory stays bounded.
//!
//! A server error can arrive at any moment after the stream opened; it is
//! surfaced by the next `write` or by `finish`, which never wait for a
//! confirmation that will not come.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use libvirt_wire::limits::{LEGACY_PAYLOAD_MAX, LEN_WORD, MESSAGE_MAX, PACKET_MIN};
use libvirt_wire::{Header, Procedure, Status, StorageVolUploadArgs, WireError};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::trace;

use crate::client::{Client, Shared};
use crate::connection::{Request, StreamEvent};
use crate::error::{Error, Kind, Result};

/// Bytes of stream data per packet.
pub const CHUNK_SIZE: usize = LEGACY_PAYLOAD_MAX;

/// Chunks queued or being written at once, at most: the backpressure. Three
/// keep the transport busy while the writer prepares the next one, and hold
/// at most about 768 KiB of data.
pub const IN_FLIGHT: usize = 3;

/// Pieces of a streamed item shorter than this are copied together into one
/// buffer rather than handed on as buffers of their own.
const SMALL: usize = 4096;

const PROCEDURE: Procedure = Procedure::StorageVolUpload;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Finishing,
    Done,
}

/// An open upload stream into a storage volume.
///
/// Obtained from [`Client::storage_vol_upload`]. Write with [`Upload::write`],
/// [`Upload::send_reader`] or [`Upload::send_stream`], then [`Upload::finish`].
///
/// # Cancel safety
///
/// Dropping an `Upload` that has not finished aborts the stream (an empty
/// STREAM/ERROR packet); the connection swallows the server's confirmation.
/// Dropping a `write` future part-way leaves an unknown amount of its data
/// sent: abort or drop the upload then. Every wait is bounded by the
/// upload's deadline, so a silent server cannot hang a writer.
pub struct Upload {
    shared: Arc<Shared>,
    call: Header,
    events: mpsc::UnboundedReceiver<StreamEvent>,
    in_flight: VecDeque<oneshot::Receiver<()>>,
    deadline: Instant,
    phase: Phase,
    sent: u64,
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload")
            .field("serial", &self.call.serial)
            .field("phase", &self.phase)
            .field("sent", &self.sent)
            .finish()
    }
}

impl Client {
    /// Opens an upload stream into `vol` (`STORAGE_VOL_UPLOAD`): `length`
    /// bytes (0 for no limit) written from `offset`. Waits for the server to
    /// accept the stream before returning.
    ///
    /// The call and, by default, the whole upload share this handle's
    /// deadline; see [`Upload::set_deadline`].
    pub async fn storage_vol_upload(
        &self,
        vol: &libvirt_wire::StorageVol,
        offset: u64,
        length: u64,
        flags: u32,
    ) -> Result<Upload> {
        let deadline = Instant::now() + self.timeout();
        let args = StorageVolUploadArgs {
            vol: vol.clone(),
            offset,
            length,
            flags,
        };
        let (call, events) = self.open_stream(PROCEDURE, &args, deadline).await?;
        Ok(Upload {
            shared: self.shared().clone(),
            call,
            events,
            in_flight: VecDeque::with_capacity(IN_FLIGHT),
            deadline,
            phase: Phase::Open,
            sent: 0,
        })
    }
}

impl Upload {
    /// Changes the deadline every later wait is bounded by.
    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }

    /// Bytes handed to the connection so far (queued, not necessarily
    /// written yet).
    pub fn bytes_sent(&self) -> u64 {
        self.sent
    }

    /// Sends `data`, split into chunks of at most [`CHUNK_SIZE`].
    ///
    /// Fails with the server's error if the server ended the stream.
    pub async fn write(&mut self, mut data: Bytes) -> Result<()> {
        while !data.is_empty() {
            let chunk = data.split_to(data.len().min(CHUNK_SIZE));
            let len = chunk.len();
            self.write_chunk(vec![chunk], len).await?;
        }
        Ok(())
    }

    /// Sends everything `reader` yields, then finishes. A read error aborts
    /// the stream and is returned as a source error. Returns the bytes sent.
    pub async fn send_reader<R>(mut self, mut reader: R) -> Result<u64>
    where
        R: AsyncRead + Unpin,
    {
        let mut buf = BytesMut::with_capacity(CHUNK_SIZE);
        loop {
            let room = CHUNK_SIZE - buf.len();
            let n = reader
                .read_buf(&mut (&mut buf).limit(room))
                .await
                .map_err(|e| Error::new(Kind::Source).with_source(e))?;
            if n == 0 {
                break;
            }
            if buf.len() == CHUNK_SIZE {
                self.write_chunk(vec![buf.split().freeze()], CHUNK_SIZE)
                    .await?;
                buf.reserve(CHUNK_SIZE);
            }
        }
        if !buf.is_empty() {
            let len = buf.len();
            self.write_chunk(vec![buf.freeze()], len).await?;
        }
        self.finish().await
    }

    /// Sends every item of `stream`, coalesced into full chunks, then
    /// finishes. An item error aborts the stream and is returned as a source
    /// error. Returns the bytes sent.
    ///
    /// Items are not copied when `B` is `Bytes` (its `copy_to_bytes` only
    /// takes a reference): a chunk is made of the items' own buffers, and
    /// only pieces shorter than 4 KiB are gathered into a buffer of their own.
    pub async fn send_stream<St, B, E>(mut self, stream: St) -> Result<u64>
    where
        St: Stream<Item = std::result::Result<B, E>>,
        B: Buf,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut stream = std::pin::pin!(stream);
        let mut chunk = Chunk::default();
        while let Some(item) = stream.next().await {
            let mut item = item.map_err(|e| Error::new(Kind::Source).with_source(e))?;
            while item.has_remaining() {
                chunk.take_from(&mut item);
                if chunk.len == CHUNK_SIZE {
                    let (parts, len) = chunk.take();
                    self.write_chunk(parts, len).await?;
                }
            }
        }
        if chunk.len > 0 {
            let (parts, len) = chunk.take();
            self.write_chunk(parts, len).await?;
        }
        self.finish().await
    }

    /// Ends the data and waits for the server to confirm it stored it.
    /// Returns the bytes sent.
    pub async fn finish(mut self) -> Result<u64> {
        self.wait_in_flight().await?;
        self.check_events()?;
        self.phase = Phase::Finishing;
        self.send(Request::StreamFinish {
            serial: self.call.serial,
        })?;
        let event = self.next_event().await;
        self.phase = Phase::Done;
        match event? {
            StreamEvent::Confirmed => Ok(self.sent),
            other => Err(event_error(other)),
        }
    }

    /// Aborts the stream and waits for the server's confirmation.
    pub async fn abort(mut self) -> Result<()> {
        // Waiting for the chunks in flight keeps the abort behind them.
        let _ = self.wait_in_flight().await;
        self.phase = Phase::Finishing;
        self.send(Request::StreamAbort {
            serial: self.call.serial,
        })?;
        let event = self.next_event().await;
        self.phase = Phase::Done;
        match event? {
            StreamEvent::Confirmed => Ok(()),
            other => Err(event_error(other)),
        }
    }

    /// Queues one packet of stream data made of `parts` (`len` bytes in
    /// all, at most [`CHUNK_SIZE`]), once fewer than [`IN_FLIGHT`] are.
    async fn write_chunk(&mut self, parts: Vec<Bytes>, len: usize) -> Result<()> {
        if self.phase != Phase::Open {
            return Err(Error::closed("the upload has ended").with_procedure(PROCEDURE));
        }
        self.check_events()?;
        while self.in_flight.len() >= IN_FLIGHT {
            self.wait_oldest().await?;
        }
        let head = stream_head(&self.call.stream(Status::Continue), len)
            .map_err(|e| Error::new(Kind::Encode).with_source(e))?;
        let mut frame = Vec::with_capacity(parts.len() + 1);
        frame.push(head);
        frame.extend(parts);
        let (ack_tx, ack_rx) = oneshot::channel();
        self.send(Request::StreamData {
            serial: self.call.serial,
            parts: frame,
            ack: ack_tx,
        })?;
        self.in_flight.push_back(ack_rx);
        self.sent += len as u64;
        trace!(serial = self.call.serial, len, "stream chunk queued");
        Ok(())
    }

    fn send(&self, request: Request) -> Result<()> {
        self.shared
            .requests
            .send(request)
            .map_err(|_| Error::closed("the connection has ended").with_procedure(PROCEDURE))
    }

    /// Fails if the server already ended the stream.
    fn check_events(&mut self) -> Result<()> {
        match self.events.try_recv() {
            Ok(event) => {
                self.phase = Phase::Done;
                Err(event_error(event))
            }
            Err(mpsc::error::TryRecvError::Empty) => Ok(()),
            Err(mpsc::error::TryRecvError::Disconnected) => {
                self.phase = Phase::Done;
                Err(Error::closed("the connection has ended").with_procedure(PROCEDURE))
            }
        }
    }

    /// Waits until every chunk in flight was written.
    async fn wait_in_flight(&mut self) -> Result<()> {
        while !self.in_flight.is_empty() {
            self.wait_oldest().await?;
        }
        Ok(())
    }

    /// Waits until the oldest chunk in flight was written, failing as soon
    /// as the stream ends or the deadline passes.
    async fn wait_oldest(&mut self) -> Result<()> {
        let Some(ack) = self.in_flight.front_mut() else {
            return Ok(());
        };
        let deadline = self.deadline;
        let sent = tokio::select! {
            biased;
            event = self.events.recv() => {
                self.phase = Phase::Done;
                return Err(event.map(event_error).unwrap_or_else(|| {
                    Error::closed("the connection has ended").with_procedure(PROCEDURE)
                }));
            }
            sent = ack => sent,
            _ = tokio::time::sleep_until(deadline) => {
                return Err(Error::timeout().with_procedure(PROCEDURE));
            }
        };
        self.in_flight.pop_front();
        match sent {
            Ok(()) => Ok(()),
            // Not sent: the stream ended, and its event says why.
            Err(_) => {
                self.check_events()?;
                self.phase = Phase::Done;
                Err(Error::closed("the stream has ended").with_procedure(PROCEDURE))
            }
        }
    }

    async fn next_event(&mut self) -> Result<StreamEvent> {
        match tokio::time::timeout_at(self.deadline, self.events.recv()).await {
            Err(_) => Err(Error::timeout().with_procedure(PROCEDURE)),
            Ok(None) => Err(Error::closed("the connection has ended").with_procedure(PROCEDURE)),
            Ok(Some(event)) => Ok(event),
        }
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.phase != Phase::Done {
            // Aborts an open stream; for one finishing, drops interest in
            // the confirmation.
            let _ = self.shared.requests.send(Request::Cancel {
                serial: self.call.serial,
            });
        }
    }
}

/// The length word and header of a stream data packet carrying `len` bytes.
fn stream_head(header: &Header, len: usize) -> std::result::Result<Bytes, WireError> {
    let total = PACKET_MIN + len;
    if total - LEN_WORD > MESSAGE_MAX {
        return Err(WireError::PacketTooLarge {
            len: total - LEN_WORD,
            max: MESSAGE_MAX,
        });
    }
    let mut head = BytesMut::with_capacity(PACKET_MIN);
    head.put_u32(total as u32);
    header.encode(&mut head);
    Ok(head.freeze())
}

/// The chunk being gathered by `send_stream`: buffers taken from the items,
/// and small pieces copied together.
#[derive(Default)]
struct Chunk {
    parts: Vec<Bytes>,
    small: BytesMut,
    len: usize,
}

impl Chunk {
    /// Takes as much of `item` as fits.
    fn take_from<B: Buf>(&mut self, item: &mut B) {
        let n = item.remaining().min(CHUNK_SIZE - self.len);
        if n < SMALL {
            // Several short pieces in a row share one buffer.
            self.small.put((&mut *item).take(n));
        } else {
            self.seal_small();
            self.parts.push(item.copy_to_bytes(n));
        }
        self.len += n;
    }

    fn seal_small(&mut self) {
        if !self.small.is_empty() {
            self.parts.push(self.small.split().freeze());
        }
    }

    /// The parts and length of the chunk, leaving it empty.
    fn take(&mut self) -> (Vec<Bytes>, usize) {
        self.seal_small();
        (
            std::mem::take(&mut self.parts),
            std::mem::take(&mut self.len),
        )
    }
}

fn event_error(event: StreamEvent) -> Error {
    match event {
        StreamEvent::Failed(remote) => Error::remote(remote).with_procedure(PROCEDURE),
        StreamEvent::Closed(cause) => Error::closed_by(&cause).with_procedure(PROCEDURE),
        StreamEvent::Confirmed => Error::new(Kind::BadReply)
            .with_source("the server ended the stream early")
            .with_procedure(PROCEDURE),
        StreamEvent::Data(_) => Error::new(Kind::BadReply)
            .with_source("the server sent data on an upload stream")
            .with_procedure(PROCEDURE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_takes_large_buffers_without_copying_them() {
        let a = Bytes::from(vec![1u8; CHUNK_SIZE + 100]);
        let b = Bytes::from(vec![2u8; 10]);
        let c = Bytes::from(vec![3u8; CHUNK_SIZE]);
        let mut chunk = Chunk::default();
        let mut item = a.clone();
        chunk.take_from(&mut item);
        assert_eq!(chunk.len, CHUNK_SIZE);
        let (parts, len) = chunk.take();
        assert_eq!(len, CHUNK_SIZE);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].as_ptr(), a.as_ptr(), "the item's own buffer");
        // The item's last 100 bytes and a short item are copied together;
        // the next large item is referenced.
        chunk.take_from(&mut item);
        let mut short = b.clone();
        chunk.take_from(&mut short);
        let mut large = c.clone();
        chunk.take_from(&mut large);
        let (parts, len) = chunk.take();
        assert_eq!(len, CHUNK_SIZE);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].len(), 110);
        assert_eq!(&parts[0][..100], &[1u8; 100][..]);
        assert_eq!(&parts[0][100..], &[2u8; 10][..]);
        assert_eq!(parts[1].as_ptr(), c.as_ptr());
        assert_eq!(parts[1].len(), CHUNK_SIZE - 110);
        assert_eq!(large.remaining(), 110);
    }

    #[test]
    fn a_stream_head_frames_the_payload_length() {
        let call = Header::call(PROCEDURE, 7);
        let head = stream_head(&call.stream(Status::Continue), 1000).unwrap();
        assert_eq!(head.len(), PACKET_MIN);
        let mut whole = BytesMut::from(&head[..]);
        whole.extend_from_slice(&[9u8; 1000]);
        let packet = libvirt_wire::Packet::decode_from(&mut whole)
            .unwrap()
            .unwrap();
        assert_eq!(packet.header, call.stream(Status::Continue));
        assert_eq!(packet.payload.len(), 1000);
        assert!(stream_head(&call, MESSAGE_MAX).is_err());
    }
}
