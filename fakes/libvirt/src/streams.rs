//! What a connection's calls and streams write with: the queue of outgoing
//! packets with the count of bytes waiting in it, the open streams by serial, and
//! how a packet or an RPC-layer error is sent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use libvirt_wire::{Encode, ErrorCode, ErrorDomain, Header, Packet, encode_packet};
use tokio::sync::{Notify, mpsc};

use crate::error::VirError;

/// The open streams of one connection by serial: where the STREAM packets
/// of an upload go.
pub(crate) type Streams = Arc<Mutex<HashMap<u32, mpsc::Sender<Packet>>>>;
/// The connection's outgoing packets, written in order by one task, with a
/// count of the bytes waiting to be written, so that a stream can wait for
/// a slow reader instead of queueing a whole volume.
#[derive(Clone)]
pub(crate) struct Tx {
    queue: mpsc::UnboundedSender<Bytes>,
    backlog: Arc<Backlog>,
}

#[derive(Default)]
pub(crate) struct Backlog {
    pub(crate) bytes: AtomicUsize,
    pub(crate) drained: Notify,
}

impl Tx {
    pub(crate) fn new() -> (Tx, mpsc::UnboundedReceiver<Bytes>, Arc<Backlog>) {
        let (queue, rx) = mpsc::unbounded_channel();
        let backlog = Arc::<Backlog>::default();
        let tx = Tx {
            queue,
            backlog: backlog.clone(),
        };
        (tx, rx, backlog)
    }

    /// Queues one packet; fails once the connection's writer is gone.
    pub(crate) fn send(&self, packet: Bytes) -> Result<(), Bytes> {
        let n = packet.len();
        self.backlog.bytes.fetch_add(n, Ordering::SeqCst);
        self.queue.send(packet).map_err(|e| {
            self.backlog.bytes.fetch_sub(n, Ordering::SeqCst);
            e.0
        })
    }

    /// Waits until fewer than `limit` bytes wait to be written. False once
    /// nothing will write them any more (the connection is gone).
    pub(crate) async fn room(&self, limit: usize) -> bool {
        loop {
            let drained = self.backlog.drained.notified();
            let mut drained = std::pin::pin!(drained);
            drained.as_mut().enable();
            if self.queue.is_closed() {
                return false;
            }
            if self.backlog.bytes.load(Ordering::SeqCst) < limit {
                return true;
            }
            // The writer wakes us after each write; the timeout notices a
            // writer that was aborted with the connection.
            let _ = tokio::time::timeout(Duration::from_millis(100), drained).await;
        }
    }
}

pub(crate) fn send<T: Encode + ?Sized>(tx: &Tx, header: &Header, body: &T) {
    let mut out = BytesMut::new();
    if encode_packet(&mut out, header, body).is_ok() {
        let _ = tx.send(out.freeze());
    }
}

pub(crate) fn rpc_error(detail: impl Into<String>) -> VirError {
    VirError::new(ErrorCode::Rpc, ErrorDomain::Rpc, detail)
}
