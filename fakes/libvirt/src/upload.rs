//! The wire side of an upload stream: fed by the STREAM packets the server routes
//! to it, written into the volume through a [`crate::Upload`].

use libvirt_wire::{Header, Packet, RemoteError, Status};
use tokio::sync::mpsc;

use crate::error::{CallError, VirError};
use crate::fake::connection::Upload;
use crate::streams::{Streams, Tx, rpc_error, send};

/// Opens the wire stream of an accepted `STORAGE_VOL_UPLOAD` call: its
/// STREAM packets (by the call's serial) feed `upload` from now on. The
/// stream exists before the REPLY leaves, so data sent right after it is
/// never lost.
pub(crate) fn open_stream(upload: Upload, call: Header, tx: &Tx, streams: &Streams) {
    let (stx, srx) = mpsc::channel(4);
    streams
        .lock()
        .expect("stream table poisoned")
        .insert(call.serial, stx);
    tokio::spawn(upload_loop(upload, srx, tx.clone(), call, streams.clone()));
}

/// Feeds one upload stream from its STREAM packets.
async fn upload_loop(
    mut upload: Upload,
    mut rx: mpsc::Receiver<Packet>,
    tx: Tx,
    call: Header,
    streams: Streams,
) {
    let done = |streams: &Streams| {
        // Later packets of this stream are swallowed, as libvirtd does.
        streams
            .lock()
            .expect("stream table poisoned")
            .remove(&call.serial);
    };
    while let Some(p) = rx.recv().await {
        match p.header.status {
            Status::Continue => {
                if let Err(e) = upload.send_bytes(p.payload) {
                    if let CallError::Libvirt(e) = e {
                        send_stream_error(&tx, &call, &e);
                    }
                    done(&streams);
                    return;
                }
            }
            Status::Ok => {
                match upload.finish() {
                    Ok(()) => send(&tx, &call.stream(Status::Ok), &()),
                    Err(CallError::Libvirt(e)) => send_stream_error(&tx, &call, &e),
                    Err(CallError::Closed) => {}
                }
                done(&streams);
                return;
            }
            Status::Error => {
                let _ = upload.abort();
                send(&tx, &call.stream(Status::Ok), &());
                done(&streams);
                return;
            }
            Status::Other(n) => {
                let e = rpc_error(format!("stream aborted with unexpected status {n}"));
                send_stream_error(&tx, &call, &e);
                done(&streams);
                return;
            }
        }
    }
}

fn send_stream_error(tx: &Tx, call: &Header, e: &VirError) {
    send(tx, &call.stream(Status::Error), &RemoteError::from(e));
}
