//! The wire side of `STORAGE_VOL_DOWNLOAD`: a server-to-client stream, as
//! libvirtd 11.3 sends it to virsh. After the REPLY come the volume's bytes
//! in STREAM packets of status CONTINUE (at most 262 120 bytes each), then an
//! empty CONTINUE packet that marks the end; the client's STREAM OK (its
//! finish) is confirmed with a STREAM OK, and its STREAM ERROR (an abort)
//! ends the stream the same way.

use bytes::BytesMut;
use libvirt_wire::limits::LEGACY_PAYLOAD_MAX;
use libvirt_wire::{Header, Packet, Status, encode_raw};
use tokio::sync::mpsc;

use crate::server::{Streams, Tx, send};

/// Registers the stream of an accepted download (so the client's finish is
/// routed to it) and returns what sends its data, to be run once the REPLY
/// is on its way.
pub(crate) fn open_stream(
    data: Vec<u8>,
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
        for chunk in data.chunks(LEGACY_PAYLOAD_MAX) {
            send_data(&tx, &call, chunk);
        }
        // The end of the data: an empty CONTINUE packet.
        send_data(&tx, &call, &[]);
        tokio::spawn(finish_loop(srx, tx, call, streams));
    })
}

fn send_data(tx: &Tx, call: &Header, data: &[u8]) {
    let mut out = BytesMut::with_capacity(data.len() + 28);
    if encode_raw(&mut out, &call.stream(Status::Continue), data).is_ok() {
        let _ = tx.send(out.freeze());
    }
}

/// Waits for the client's finish or abort and confirms it.
async fn finish_loop(mut rx: mpsc::Receiver<Packet>, tx: Tx, call: Header, streams: Streams) {
    while let Some(p) = rx.recv().await {
        match p.header.status {
            // Flow data from a client on a download stream is ignored.
            Status::Continue => continue,
            _ => {
                send(&tx, &call.stream(Status::Ok), &());
                break;
            }
        }
    }
    streams
        .lock()
        .expect("stream table poisoned")
        .remove(&call.serial);
}
