//! `Config` builds a `Client` and its `Connection`; `Client` is the cheap,
//! clonable handle that encodes calls, hands them to the connection task and
//! waits for their replies under a deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use libvirt_wire::{
    Encode, Header, Packet, Procedure, RemoteCall, Status, decode_exact, encode_packet,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::connection::{Connection, Keepalive, Request, StreamEvent};
use crate::error::{Error, Kind, Result};

/// Settings for a new connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Deadline of each call made through the returned `Client`
    /// (see [`Client::with_timeout`] to change it per call site).
    pub call_timeout: Duration,
    /// Send PINGs when the server is silent, and declare the connection dead
    /// when they go unanswered. `None` only answers the server's PINGs.
    pub keepalive: Option<Keepalive>,
}

impl Default for Config {
    /// A 30 s call deadline; a PING after 5 s of silence, dead after 5 more
    /// unanswered (libvirt's own defaults).
    fn default() -> Self {
        Config {
            call_timeout: Duration::from_secs(30),
            keepalive: Some(Keepalive {
                interval: Duration::from_secs(5),
                count: 5,
            }),
        }
    }
}

impl Config {
    /// Wraps an established byte stream (a Unix socket, an SSH channel, an
    /// in-memory pipe). Does no I/O: spawn the returned `Connection`, then
    /// make calls through the `Client`.
    pub fn attach<S>(&self, stream: S) -> (Client, Connection<S>)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = Client {
            shared: Arc::new(Shared {
                requests: tx,
                next_serial: AtomicU32::new(1),
            }),
            timeout: self.call_timeout,
        };
        (client, Connection::new(stream, rx, self.keepalive))
    }
}

pub(crate) struct Shared {
    pub(crate) requests: mpsc::UnboundedSender<Request>,
    next_serial: AtomicU32,
}

impl Shared {
    fn next_serial(&self) -> u32 {
        loop {
            let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
            if serial != 0 {
                return serial;
            }
        }
    }
}

/// A handle for making calls on one connection. Cloning is cheap; every
/// clone shares the connection. Calls may be made concurrently from many
/// tasks: they are pipelined, and replies are matched by serial. libvirtd
/// reads at most five requests per client at a time; further calls wait in
/// the transport, and that wait counts against their deadlines.
///
/// # Cancel safety
///
/// Every call is cancel safe. Nothing is sent before the call's future is
/// first polled. A call whose future is dropped, or whose deadline passes,
/// is abandoned: the connection discards its reply when it arrives, and the
/// other calls and the connection carry on. Dropping an [`crate::Upload`]
/// before it finished aborts the stream on the server.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("timeout", &self.timeout)
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Sends a cancellation for its serial when dropped while armed.
pub(crate) struct CallGuard {
    shared: Arc<Shared>,
    serial: u32,
    armed: bool,
}

impl CallGuard {
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.shared.requests.send(Request::Cancel {
                serial: self.serial,
            });
        }
    }
}

impl Client {
    /// A handle on the same connection whose calls get `timeout` as deadline.
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            shared: self.shared.clone(),
            timeout,
        }
    }

    /// The deadline given to each call made through this handle.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether the connection task has ended; calls would fail at once.
    pub fn is_closed(&self) -> bool {
        self.shared.requests.is_closed()
    }

    /// Calls procedure `C` with this handle's deadline.
    pub async fn call<C: RemoteCall>(&self, args: &C::Args) -> Result<C::Ret> {
        let deadline = Instant::now() + self.timeout;
        self.call_until::<C>(args, deadline).await
    }

    /// Calls procedure `C`, giving up at `deadline`.
    pub async fn call_until<C: RemoteCall>(
        &self,
        args: &C::Args,
        deadline: Instant,
    ) -> Result<C::Ret> {
        let (packet, mut guard) = self.send_call(C::PROCEDURE, args, deadline, None).await?;
        guard.disarm();
        decode_reply::<C::Ret>(C::PROCEDURE, &packet)
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Queues a CALL and waits for its REPLY. The returned guard is still
    /// armed: the caller disarms it once nothing more needs cancelling.
    pub(crate) async fn send_call(
        &self,
        procedure: Procedure,
        args: &(dyn Encode + Sync),
        deadline: Instant,
        stream: Option<mpsc::UnboundedSender<StreamEvent>>,
    ) -> Result<(Packet, CallGuard)> {
        let serial = self.shared.next_serial();
        let mut buf = BytesMut::new();
        encode_packet(&mut buf, &Header::call(procedure, serial), args).map_err(|e| {
            Error::new(Kind::Encode)
                .with_source(e)
                .with_procedure(procedure)
        })?;
        let (reply_tx, reply_rx) = oneshot::channel();
        self.shared
            .requests
            .send(Request::Call {
                serial,
                procedure,
                frame: buf.freeze(),
                reply: reply_tx,
                stream,
            })
            .map_err(|_| Error::closed("the connection has ended").with_procedure(procedure))?;
        let guard = CallGuard {
            shared: self.shared.clone(),
            serial,
            armed: true,
        };
        match tokio::time::timeout_at(deadline, reply_rx).await {
            Err(_) => Err(Error::timeout().with_procedure(procedure)),
            Ok(Err(_)) => {
                Err(Error::closed("the connection task is gone").with_procedure(procedure))
            }
            Ok(Ok(Err(e))) => Err(e),
            Ok(Ok(Ok(packet))) => Ok((packet, guard)),
        }
    }
}

impl Client {
    /// Opens a stream with the CALL `procedure` (`args`): waits for the server to
    /// accept it and returns the stream's header and its events. Nothing awaits
    /// between the REPLY and the return, so the call guard's duty passes to the
    /// caller's stream handle without a gap in which a drop could leak the stream.
    pub(crate) async fn open_stream(
        &self,
        procedure: Procedure,
        args: &(dyn Encode + Sync),
        deadline: Instant,
    ) -> Result<(Header, mpsc::UnboundedReceiver<StreamEvent>)> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (packet, mut guard) = self
            .send_call(procedure, args, deadline, Some(events_tx))
            .await?;
        let result = decode_reply::<()>(procedure, &packet);
        guard.disarm();
        result?;
        Ok((Header::call(procedure, packet.header.serial), events_rx))
    }
}

/// Turns a REPLY into the procedure's result or its error.
pub(crate) fn decode_reply<T: libvirt_wire::Decode>(
    procedure: Procedure,
    packet: &Packet,
) -> Result<T> {
    match packet.header.status {
        Status::Ok => {
            decode_exact(&packet.payload).map_err(|e| Error::bad_reply(e).with_procedure(procedure))
        }
        Status::Error => match packet.remote_error() {
            Ok(remote) => Err(Error::remote(remote).with_procedure(procedure)),
            Err(e) => Err(Error::bad_reply(e).with_procedure(procedure)),
        },
        other => Err(Error::new(Kind::BadReply)
            .with_source(format!("reply with status {other}"))
            .with_procedure(procedure)),
    }
}
