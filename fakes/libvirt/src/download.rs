//! The wire side of `STORAGE_VOL_DOWNLOAD`: a server-to-client stream, as
//! libvirtd 11.3 sends it to virsh. After the REPLY come the volume's bytes
//! in STREAM packets of status CONTINUE (at most 262 120 bytes each), then an
//! empty CONTINUE packet that marks the end; the client's STREAM OK (its
//! finish) is confirmed with a STREAM OK, and its STREAM ERROR (an abort)
//! ends the stream the same way, sent or not.
//!
//! The data is made packet by packet as the connection drains: only the
//! uploaded bytes are held (or read from a large upload's spill file as
//! they are sent), zeros are made as they are sent, and at most
//! [`WINDOW`] bytes wait in the connection's queue, so a client that reads
//! slowly, or a large empty volume, costs the daemon no more than that.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use bytes::BytesMut;
use libvirt_wire::limits::LEGACY_PAYLOAD_MAX;
use libvirt_wire::{ErrorDomain, Header, Packet, RemoteError, Status, encode_raw};
use tokio::sync::mpsc;

use crate::error::VirError;
use crate::streams::{Streams, Tx, send};

/// Bytes of a download that may wait to be written at once.
const WINDOW: usize = 4 << 20;

/// Where the uploaded bytes of a download's range come from.
#[derive(Debug)]
pub(crate) enum Held {
    /// Kept in memory.
    Bytes(Vec<u8>),
    /// `len` bytes of a spill file from byte `from` on.
    File { file: File, from: u64, len: u64 },
}

/// What a download sends: the uploaded bytes in range, then zeros up to
/// `len`.
#[derive(Debug)]
pub(crate) struct DownloadData {
    pub(crate) held: Held,
    pub(crate) len: u64,
}

impl DownloadData {
    /// Bytes `at..at + n` of the range into `out`: the uploaded ones, then
    /// zeros.
    fn read(&self, at: u64, n: usize, out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        match &self.held {
            Held::Bytes(b) => {
                let from = usize::try_from(at).unwrap_or(usize::MAX).min(b.len());
                out.extend_from_slice(&b[from..(from + n).min(b.len())]);
            }
            Held::File { file, from, len } => {
                let take = len.saturating_sub(at).min(n as u64) as usize;
                out.resize(take, 0);
                file.read_exact_at(out, from + at)?;
            }
        }
        out.resize(n, 0);
        Ok(())
    }

    /// The whole range as bytes (the in-process API).
    pub(crate) fn into_vec(self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read(0, usize::try_from(self.len).unwrap_or(usize::MAX), &mut out)?;
        Ok(out)
    }
}

/// Registers the stream of an accepted download (so the client's finish is
/// routed to it) and returns what sends its data, to be run once the REPLY
/// is on its way.
pub(crate) fn open_stream(
    data: DownloadData,
    call: Header,
    tx: &Tx,
    streams: &Streams,
) -> Box<dyn FnOnce() + Send> {
    let (stx, srx) = mpsc::channel(4);
    streams
        .lock()
        .expect("stream table poisoned")
        .insert(call.serial, stx);
    let (tx, streams) = (tx.clone(), streams.clone());
    Box::new(move || {
        tokio::spawn(async move {
            let mut rx = srx;
            if send_all(&data, &mut rx, &tx, &call).await {
                finish_loop(rx, &tx, &call).await;
            }
            streams
                .lock()
                .expect("stream table poisoned")
                .remove(&call.serial);
        });
    })
}

/// Sends the data and the end mark, waiting for room in the connection's
/// queue. Stops early when the client ends the stream (confirmed here) or
/// the connection goes; true when the client has yet to finish.
async fn send_all(
    data: &DownloadData,
    rx: &mut mpsc::Receiver<Packet>,
    tx: &Tx,
    call: &Header,
) -> bool {
    let mut chunk = Vec::with_capacity(LEGACY_PAYLOAD_MAX);
    let mut at = 0u64;
    while at < data.len {
        if let Ok(p) = rx.try_recv()
            && p.header.status != Status::Continue
        {
            send(tx, &call.stream(Status::Ok), &());
            return false;
        }
        if !tx.room(WINDOW).await {
            return false;
        }
        let n = (data.len - at).min(LEGACY_PAYLOAD_MAX as u64) as usize;
        if let Err(e) = data.read(at, n, &mut chunk) {
            // libvirtd ends a stream whose file fails to read with an error.
            let e = VirError::system(
                ErrorDomain::Streams,
                "cannot read from stream",
                &e.to_string(),
            );
            send(tx, &call.stream(Status::Error), &RemoteError::from(&e));
            return false;
        }
        send_data(tx, call, &chunk);
        at += n as u64;
    }
    // The end of the data: an empty CONTINUE packet.
    send_data(tx, call, &[]);
    true
}

fn send_data(tx: &Tx, call: &Header, data: &[u8]) {
    let mut out = BytesMut::with_capacity(data.len() + 28);
    if encode_raw(&mut out, &call.stream(Status::Continue), data).is_ok() {
        let _ = tx.send(out.freeze());
    }
}

/// Waits for the client's finish or abort and confirms it.
async fn finish_loop(mut rx: mpsc::Receiver<Packet>, tx: &Tx, call: &Header) {
    while let Some(p) = rx.recv().await {
        match p.header.status {
            // Flow data from a client on a download stream is ignored.
            Status::Continue => continue,
            _ => {
                send(tx, &call.stream(Status::Ok), &());
                break;
            }
        }
    }
}
