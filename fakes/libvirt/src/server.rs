//! A fake libvirtd: serves a [`FakeLibvirt`] over libvirt's remote protocol
//! on any byte stream (an in-memory duplex, a Unix socket, TCP), with the
//! packet format of the `libvirt-wire` crate.
//!
//! This file is the daemon's framing: it reads packets, answers keepalive,
//! routes STREAM packets to their stream and hands each CALL, decoded, to
//! `libvirt_wire::dispatch` with the fake's handler (`handler.rs`). The
//! upload streams themselves are in `upload.rs`.
//!
//! Like libvirtd it answers keepalive PINGs at once, works on at most
//! `max_requests` calls per client (5 by default) and stops reading the
//! socket while that many are in flight, answers calls in the order they
//! finish (so injected latency on one call never holds the others), streams
//! uploads with STREAM packets, and closes the socket after `ConnectClose` or
//! when a dropped-connection fault fires.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::stream::{FuturesUnordered, StreamExt};
use libvirt_wire::{
    CallArgs, Encode, Header, KEEPALIVE_PING, KEEPALIVE_PONG, KEEPALIVE_PROGRAM, MessageType,
    Packet, Procedure, REMOTE_PROGRAM, REMOTE_VERSION, RemoteError, Status, WireError, dispatch,
    encode_error_reply, encode_reply,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tracing::Instrument;

use crate::error::{CallError, VirError};
use crate::fake::FakeLibvirt;
use crate::fake::connection::FakeConnection;
use crate::handler::WireCall;
use crate::socket::QuietSocket;
use crate::streams::{Backlog, Streams, Tx, rpc_error, send};

/// Settings of the fake daemon, defaulting to libvirtd's.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Calls worked on at once per client (`max_client_requests`, 5).
    pub max_requests: usize,
    /// Silence after which the server PINGs a client that asked for
    /// keepalive (`keepalive_interval`, 5 s); `None` sends no PINGs.
    pub keepalive_interval: Option<Duration>,
    /// Unanswered PINGs after which the client is dropped
    /// (`keepalive_count`, 5).
    pub keepalive_count: u32,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_requests: 5,
            keepalive_interval: Some(Duration::from_secs(5)),
            keepalive_count: 5,
        }
    }
}

/// Bytes read ahead while a packet waits for its turn.
const WAIT_BUFFER: usize = 1 << 20;
/// Free space the read buffer keeps at least.
const MIN_FREE: usize = 16 << 10;
/// The largest packet the read buffer grows for at once.
const MAX_AHEAD: usize = 4 << 20;

/// Makes room in the read buffer for the rest of the packet being read (a
/// stream's 256 KiB data packet then arrives in one read rather than many)
/// and at least [`MIN_FREE`] bytes, without growing it for a small call:
/// while decoded packets still share the buffer, growing it allocates anew.
fn make_room(buf: &mut BytesMut) {
    let pending = match buf.get(..4) {
        Some(len) => u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize,
        None => 0,
    };
    let want = pending.min(MAX_AHEAD).max(buf.len() + MIN_FREE);
    if buf.capacity() < want {
        buf.reserve(want - buf.len());
    }
}

impl FakeLibvirt {
    /// Serves one client on `io` until it closes, sends `ConnectClose`, or a
    /// fault drops it. Each call counts as one dial.
    pub async fn serve<S>(&self, io: S) -> io::Result<()>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        self.serve_with(io, ServerOptions::default()).await
    }

    /// [`FakeLibvirt::serve`] with explicit settings.
    pub async fn serve_with<S>(&self, io: S, opts: ServerOptions) -> io::Result<()>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        serve_connection(self.clone(), io, opts).await
    }

    /// Spawns a server task on one end of an in-memory pipe and returns the
    /// other end. Needs a Tokio runtime.
    pub fn duplex(&self) -> tokio::io::DuplexStream {
        let (client, server) = tokio::io::duplex(1 << 20);
        let fake = self.clone();
        tokio::spawn(async move {
            let _ = fake.serve(server).await;
        });
        client
    }

    /// Listens on a Unix socket at `path` (replacing a stale socket file) and
    /// serves every client that connects, until the returned handle is
    /// dropped or shut down.
    pub async fn serve_unix(&self, path: impl AsRef<Path>) -> io::Result<UnixServer> {
        self.serve_unix_with(path, ServerOptions::default()).await
    }

    /// [`FakeLibvirt::serve_unix`] with explicit settings.
    pub async fn serve_unix_with(
        &self,
        path: impl AsRef<Path>,
        opts: ServerOptions,
    ) -> io::Result<UnixServer> {
        let path = path.as_ref().to_path_buf();
        if path.exists() {
            std::fs::remove_file(&path)?;
        }
        let listener = UnixListener::bind(&path)?;
        let fake = self.clone();
        let task = tokio::spawn(async move {
            let mut clients = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let stream = match QuietSocket::unix(stream) {
                            Ok(stream) => stream,
                            Err(e) => {
                                tracing::warn!(error = %e, "connection not served");
                                continue;
                            }
                        };
                        let fake = fake.clone();
                        let opts = opts.clone();
                        clients.spawn(async move {
                            let _ = serve_connection(fake, stream, opts).await;
                        });
                    }
                    Some(_) = clients.join_next(), if !clients.is_empty() => {}
                }
            }
        });
        Ok(UnixServer { path, task })
    }
}

/// A Unix-socket listener serving a fake; dropping it stops the listener and
/// every client connection, and removes the socket file.
#[derive(Debug)]
pub struct UnixServer {
    path: PathBuf,
    task: JoinHandle<()>,
}

impl UnixServer {
    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops serving (same as dropping the handle).
    pub fn shutdown(self) {}
}

impl Drop for UnixServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn write_loop<W: AsyncWrite>(
    w: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    backlog: Arc<Backlog>,
) {
    let mut w = std::pin::pin!(w);
    while let Some(b) = rx.recv().await {
        let failed = w.write_all(&b).await.is_err() || w.flush().await.is_err();
        backlog.bytes.fetch_sub(b.len(), Ordering::SeqCst);
        backlog.drained.notify_waiters();
        if failed {
            drop(rx);
            backlog.drained.notify_waiters();
            return;
        }
    }
    let _ = w.shutdown().await;
}

async fn serve_connection<S>(fake: FakeLibvirt, io: S, opts: ServerOptions) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let Ok(conn) = fake.connect() else {
        // A refused dial: close at once.
        return Ok(());
    };
    let (mut rd, wr) = tokio::io::split(io);
    if conn.is_black_hole() {
        // Accept and read, never answer.
        let mut sink = vec![0u8; 64 * 1024];
        while matches!(rd.read(&mut sink).await, Ok(n) if n > 0) {}
        conn.close();
        return Ok(());
    }
    let (tx, rx, backlog) = Tx::new();
    let streams: Streams = Arc::default();
    // Reading, the calls and writing are one task: a call's reply is
    // written without waking another task (or another thread).
    let mut writer = std::pin::pin!(write_loop(wr, rx, backlog));
    let mut written = false;
    let result = {
        let mut reading = std::pin::pin!(read_loop(&conn, &mut rd, tx, &streams, &opts));
        loop {
            tokio::select! {
                r = &mut reading => break r,
                () = &mut writer, if !written => written = true,
            }
        }
    };
    let dropped = conn.was_dropped();
    conn.close();
    streams.lock().expect("stream table poisoned").clear();
    // A dropped connection goes away with whatever was not yet written;
    // otherwise what was queued (streams still sending included) is written.
    if !dropped && !written {
        writer.await;
    }
    result
}

/// Reads and answers one client until it goes, closes, or is dropped.
async fn read_loop<R: AsyncRead + Unpin>(
    conn: &FakeConnection,
    rd: &mut R,
    tx: Tx,
    streams: &Streams,
    opts: &ServerOptions,
) -> io::Result<()> {
    let budget = Arc::new(Semaphore::new(opts.max_requests.max(1)));
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut closed = std::pin::pin!(conn.closed());
    let tick = opts.keepalive_interval.unwrap_or(Duration::from_secs(3600));
    let mut keepalive = tokio::time::interval_at(Instant::now() + tick, tick);
    let mut last_rx = Instant::now();
    let mut unanswered = 0u32;

    // The calls in progress, driven by this task rather than spawned: a
    // call's answer then costs no hop between threads.
    let mut running = FuturesUnordered::new();

    let result = 'serve: loop {
        loop {
            match Packet::decode_from(&mut buf) {
                Ok(Some(pkt)) => {
                    last_rx = Instant::now();
                    unanswered = 0;
                    if conn.daemon_lost() {
                        // A wedged or restarted daemon reads and never answers.
                        continue;
                    }
                    let mut handled = std::pin::pin!(handle_packet(pkt, &tx, &budget, streams));
                    // While the packet waits (for a free slot, or for room in
                    // an upload), the calls in progress go on, and a little
                    // is buffered so a client that hangs up is noticed;
                    // nothing buffered is dispatched.
                    let call = loop {
                        tokio::select! {
                            call = &mut handled => break call,
                            Some(()) = running.next(), if !running.is_empty() => {}
                            _ = &mut closed => break 'serve Ok(()),
                            n = rd.read_buf(&mut buf), if buf.len() < WAIT_BUFFER => match n {
                                Ok(0) => break 'serve Ok(()),
                                Ok(_) => {}
                                Err(e) => break 'serve Err(e),
                            },
                        }
                    };
                    if let Some((pkt, permit)) = call {
                        // Polled by this task, inside the connection's span.
                        running.push(handle_call(
                            conn.clone(),
                            pkt,
                            tx.clone(),
                            streams.clone(),
                            permit,
                        ));
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // A peer out of sync cannot be answered: drop it.
                    break 'serve Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            }
        }
        make_room(&mut buf);
        tokio::select! {
            n = rd.read_buf(&mut buf) => match n {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            },
            Some(()) = running.next(), if !running.is_empty() => {}
            _ = &mut closed => break Ok(()),
            _ = keepalive.tick(), if opts.keepalive_interval.is_some() => {
                if conn.keepalive_requested() && last_rx.elapsed() >= tick && !conn.daemon_lost() {
                    if unanswered >= opts.keepalive_count {
                        tracing::info!("connection closed due to keepalive timeout");
                        break Ok(());
                    }
                    unanswered += 1;
                    tracing::debug!(unanswered, "keepalive ping sent");
                    send(&tx, &Header::keepalive(KEEPALIVE_PING), &());
                }
            }
        }
    };
    if !running.is_empty() {
        // Calls in progress finish (or find the connection closed) as they
        // would on a daemon whose client went away.
        tokio::spawn(async move { while running.next().await.is_some() {} }.in_current_span());
    }
    result
}

fn send_error(tx: &Tx, call: &Header, e: &VirError) {
    let mut out = BytesMut::new();
    if encode_error_reply(&mut out, call, &RemoteError::from(e)).is_ok() {
        let _ = tx.send(out.freeze());
    }
}

/// Answers what needs no call (keepalive, stream data, errors) and returns
/// a call to run, with its slot of the client's budget.
async fn handle_packet(
    pkt: Packet,
    tx: &Tx,
    budget: &Arc<Semaphore>,
    streams: &Streams,
) -> Option<(Packet, OwnedSemaphorePermit)> {
    let h = pkt.header;
    match (h.program, h.kind) {
        (KEEPALIVE_PROGRAM, MessageType::Message) if h.procedure == KEEPALIVE_PING => {
            send(tx, &Header::keepalive(KEEPALIVE_PONG), &());
        }
        (KEEPALIVE_PROGRAM, MessageType::Message) if h.procedure == KEEPALIVE_PONG => {
            tracing::debug!("keepalive pong received");
        }
        (REMOTE_PROGRAM, MessageType::Call) if h.version == REMOTE_VERSION => {
            if h.status != Status::Ok {
                let detail = format!("Unexpected message status {}", h.status.to_raw());
                send_error(tx, &h, &rpc_error(detail));
                return None;
            }
            // Like libvirtd, stop reading while the client's budget is spent.
            let permit = budget.clone().acquire_owned().await.ok()?;
            return Some((pkt, permit));
        }
        (REMOTE_PROGRAM, MessageType::Stream) => {
            let sender = streams
                .lock()
                .expect("stream table poisoned")
                .get(&h.serial)
                .cloned();
            // Data for no open stream is ignored, as libvirtd does.
            if let Some(s) = sender {
                let _ = s.send(pkt).await;
            }
        }
        (_, MessageType::Call | MessageType::CallWithFds) => {
            send_error(
                tx,
                &h,
                &rpc_error(format!(
                    "Cannot find program {} version {}",
                    h.program, h.version
                )),
            );
        }
        // Replies, events and holes from a client are dropped unanswered.
        _ => {}
    }
    None
}

async fn handle_call(
    conn: FakeConnection,
    pkt: Packet,
    tx: Tx,
    streams: Streams,
    permit: OwnedSemaphorePermit,
) {
    let h = pkt.header;
    let args = match decode_call(h.remote_procedure(), &pkt.payload) {
        Ok(a) => a,
        Err(WireError::UnknownProcedure(n)) => {
            tracing::debug!(procedure = n, serial = h.serial, "unknown procedure");
            send_error(&tx, &h, &rpc_error(format!("unknown procedure: {n}")));
            return;
        }
        Err(e) => {
            tracing::debug!(procedure = %h.remote_procedure(), serial = h.serial, error = %e, len = pkt.payload.len(), "undecodable call");
            send_error(&tx, &h, &rpc_error("Unable to decode message payload"));
            return;
        }
    };
    let call = WireCall {
        conn: &conn,
        header: h,
        tx: &tx,
        streams: &streams,
        after_reply: std::sync::Mutex::new(None),
    };
    let procedure = h.remote_procedure();
    match dispatch(args, &call).await.and_then(|ret| reply(&h, &ret)) {
        Ok(reply) => {
            tracing::debug!(%procedure, serial = h.serial, "call answered");
            let _ = tx.send(reply);
            let after = call
                .after_reply
                .lock()
                .expect("after-reply slot poisoned")
                .take();
            if let Some(after) = after {
                after();
            }
        }
        Err(CallError::Libvirt(e)) => {
            tracing::debug!(%procedure, serial = h.serial, code = %e.code, "call failed");
            send_error(&tx, &h, &e);
        }
        // The connection is gone: nothing is answered.
        Err(CallError::Closed) => {
            tracing::debug!(%procedure, serial = h.serial, "call dropped: connection closed");
        }
    }
    drop(permit);
}

/// A call's arguments as libvirtd reads them: its XDR decoder stops after
/// the last field and never looks at what follows, so bytes after the
/// arguments are ignored (measured on libvirtd 11.3, which answers such a
/// call as if they were not there; go-libvirt and other hand-made clients
/// may send them).
fn decode_call(procedure: Procedure, payload: &[u8]) -> Result<CallArgs, WireError> {
    match CallArgs::decode(procedure, payload) {
        Err(WireError::TrailingBytes(n)) if n <= payload.len() => {
            CallArgs::decode(procedure, &payload[..payload.len() - n])
        }
        other => other,
    }
}

fn reply<T: Encode + ?Sized>(call: &Header, ret: &T) -> Result<Bytes, CallError> {
    let mut out = BytesMut::new();
    encode_reply(&mut out, call, ret)
        .map_err(|e| CallError::Libvirt(rpc_error(format!("unable to encode reply: {e}"))))?;
    Ok(out.freeze())
}
