//! `Download`: the client side of a `STORAGE_VOL_DOWNLOAD` stream. libvirtd
//! sends the volume's bytes in STREAM packets of status CONTINUE and marks
//! their end with an empty one; the client then sends its finish (STREAM OK)
//! and the server confirms it.

use std::sync::Arc;

use bytes::Bytes;
use libvirt_wire::{Header, Procedure, StorageVolDownloadArgs};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::client::{Client, Shared};
use crate::connection::{Request, StreamEvent};
use crate::error::{Error, Kind, Result};

const PROCEDURE: Procedure = Procedure::StorageVolDownload;

/// An open download stream from a storage volume.
///
/// Obtained from [`Client::storage_vol_download`]; read with
/// [`Download::next_chunk`] or [`Download::read_all`].
///
/// # Cancel safety
///
/// Dropping a `Download` before its end aborts the stream (an empty
/// STREAM/ERROR packet); the connection swallows what the server still
/// sends. Every wait is bounded by the download's deadline.
pub struct Download {
    shared: Arc<Shared>,
    call: Header,
    events: mpsc::UnboundedReceiver<StreamEvent>,
    deadline: Instant,
    done: bool,
    received: u64,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Download")
            .field("serial", &self.call.serial)
            .field("done", &self.done)
            .field("received", &self.received)
            .finish()
    }
}

impl Client {
    /// Opens a download stream from `vol` (`STORAGE_VOL_DOWNLOAD`): `length`
    /// bytes (0 for all) from `offset`. Waits for the server to accept the
    /// stream before returning; the call and the download share this
    /// handle's deadline.
    pub async fn storage_vol_download(
        &self,
        vol: &libvirt_wire::StorageVol,
        offset: u64,
        length: u64,
        flags: u32,
    ) -> Result<Download> {
        let deadline = Instant::now() + self.timeout();
        let args = StorageVolDownloadArgs {
            vol: vol.clone(),
            offset,
            length,
            flags,
        };
        let (call, events) = self.open_stream(PROCEDURE, &args, deadline).await?;
        Ok(Download {
            shared: self.shared().clone(),
            call,
            events,
            deadline,
            done: false,
            received: 0,
        })
    }
}

impl Download {
    /// The next piece of data, or `None` once the server has sent all of it
    /// and confirmed the client's finish.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>> {
        if self.done {
            return Ok(None);
        }
        match self.next_event().await? {
            StreamEvent::Data(data) if !data.is_empty() => {
                self.received += data.len() as u64;
                Ok(Some(data))
            }
            StreamEvent::Data(_) => {
                self.finish().await?;
                Ok(None)
            }
            other => {
                self.done = true;
                Err(event_error(other))
            }
        }
    }

    /// Reads everything left into one buffer.
    pub async fn read_all(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Sends the finish after the end of the data and waits for the
    /// server's confirmation.
    async fn finish(&mut self) -> Result<()> {
        self.shared
            .requests
            .send(Request::StreamFinish {
                serial: self.call.serial,
            })
            .map_err(|_| Error::closed("the connection has ended").with_procedure(PROCEDURE))?;
        let event = self.next_event().await;
        self.done = true;
        match event? {
            StreamEvent::Confirmed => Ok(()),
            other => Err(event_error(other)),
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

impl Drop for Download {
    fn drop(&mut self) {
        if !self.done {
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
        StreamEvent::Confirmed | StreamEvent::Data(_) => Error::new(Kind::BadReply)
            .with_source("the server ended the download before its data")
            .with_procedure(PROCEDURE),
    }
}
