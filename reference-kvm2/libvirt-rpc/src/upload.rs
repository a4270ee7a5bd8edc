//! `Upload`: the client side of a `STORAGE_VOL_UPLOAD` stream. Data goes out
//! in chunks of at most 262 120 bytes (the payload size every libvirt accepts);
//! `finish` sends the end marker and waits for the server's confirmation.
//!
//! A server error can arrive at any moment after the stream opened; it is
//! surfaced by the next `write` or by `finish`, which never wait for a
//! confirmation that will not come.

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use libvirt_wire::limits::LEGACY_PAYLOAD_MAX;
use libvirt_wire::{Header, Procedure, Status, StorageVolUploadArgs, encode_raw};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::trace;

use crate::client::{Client, Shared, decode_reply};
use crate::connection::{Request, StreamEvent};
use crate::error::{Error, Kind, Result};

/// Bytes of stream data per packet.
pub const CHUNK_SIZE: usize = LEGACY_PAYLOAD_MAX;

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
    in_flight: Option<oneshot::Receiver<()>>,
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
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (packet, mut guard) = self
            .send_call(PROCEDURE, &args, deadline, Some(events_tx))
            .await?;
        // From here to the end nothing awaits, so the guard's duty passes to
        // the `Upload` without a gap in which a drop could leak the stream.
        let result = decode_reply::<()>(PROCEDURE, &packet);
        guard.disarm();
        result?;
        Ok(Upload {
            shared: self.shared().clone(),
            call: Header::call(PROCEDURE, packet.header.serial),
            events: events_rx,
            in_flight: None,
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

    /// Bytes handed to the connection so far.
    pub fn bytes_sent(&self) -> u64 {
        self.sent
    }

    /// Sends `data`, split into chunks of at most [`CHUNK_SIZE`].
    ///
    /// Fails with the server's error if the server ended the stream.
    pub async fn write(&mut self, mut data: Bytes) -> Result<()> {
        while !data.is_empty() {
            let chunk = data.split_to(data.len().min(CHUNK_SIZE));
            self.write_chunk(chunk).await?;
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
                self.write_chunk(buf.split().freeze()).await?;
                buf.reserve(CHUNK_SIZE);
            }
        }
        if !buf.is_empty() {
            self.write_chunk(buf.freeze()).await?;
        }
        self.finish().await
    }

    /// Sends every item of `stream`, coalesced into full chunks, then
    /// finishes. An item error aborts the stream and is returned as a source
    /// error. Returns the bytes sent.
    pub async fn send_stream<St, B, E>(mut self, stream: St) -> Result<u64>
    where
        St: Stream<Item = std::result::Result<B, E>>,
        B: Buf,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut stream = std::pin::pin!(stream);
        let mut buf = BytesMut::new();
        while let Some(item) = stream.next().await {
            let mut item = item.map_err(|e| Error::new(Kind::Source).with_source(e))?;
            while item.has_remaining() {
                let take = item.remaining().min(CHUNK_SIZE - buf.len());
                buf.put((&mut item).take(take));
                if buf.len() == CHUNK_SIZE {
                    self.write_chunk(buf.split().freeze()).await?;
                }
            }
        }
        if !buf.is_empty() {
            self.write_chunk(buf.freeze()).await?;
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
        // Waiting for the last chunk keeps the abort behind it on the wire.
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

    async fn write_chunk(&mut self, chunk: Bytes) -> Result<()> {
        if self.phase != Phase::Open {
            return Err(Error::closed("the upload has ended").with_procedure(PROCEDURE));
        }
        self.check_events()?;
        // At most one chunk waits for the transport: that is the backpressure.
        self.wait_in_flight().await?;
        let mut frame = BytesMut::with_capacity(28 + chunk.len());
        encode_raw(&mut frame, &self.call.stream(Status::Continue), &chunk)
            .map_err(|e| Error::new(Kind::Encode).with_source(e))?;
        let (ack_tx, ack_rx) = oneshot::channel();
        self.send(Request::StreamData {
            serial: self.call.serial,
            frame: frame.freeze(),
            ack: ack_tx,
        })?;
        self.in_flight = Some(ack_rx);
        self.sent += chunk.len() as u64;
        trace!(
            serial = self.call.serial,
            len = chunk.len(),
            "stream chunk queued"
        );
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

    async fn wait_in_flight(&mut self) -> Result<()> {
        let Some(ack) = self.in_flight.take() else {
            return Ok(());
        };
        let deadline = self.deadline;
        tokio::select! {
            biased;
            event = self.events.recv() => {
                self.phase = Phase::Done;
                Err(event.map(event_error).unwrap_or_else(|| {
                    Error::closed("the connection has ended").with_procedure(PROCEDURE)
                }))
            }
            sent = ack => match sent {
                Ok(()) => Ok(()),
                // Not sent: the stream ended, and its event says why.
                Err(_) => {
                    self.check_events()?;
                    self.phase = Phase::Done;
                    Err(Error::closed("the stream has ended").with_procedure(PROCEDURE))
                }
            },
            _ = tokio::time::sleep_until(deadline) => {
                Err(Error::timeout().with_procedure(PROCEDURE))
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

fn event_error(event: StreamEvent) -> Error {
    match event {
        StreamEvent::Failed(remote) => Error::remote(remote).with_procedure(PROCEDURE),
        StreamEvent::Closed(cause) => Error::closed_by(&cause).with_procedure(PROCEDURE),
        StreamEvent::Confirmed => Error::new(Kind::BadReply)
            .with_source("the server ended the stream early")
            .with_procedure(PROCEDURE),
    }
}
