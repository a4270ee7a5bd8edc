//! A scripted libvirt server for tests: the test drives it packet by packet,
//! or lets `spawn_auto` answer everything with a handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use libvirt_rpc::{Client, Config, Connection, PacketCodec};
use libvirt_wire::{
    CallArgs, Encode, Header, KEEPALIVE_PONG, MessageType, Packet, RemoteError, Status,
    encode_error_reply, encode_packet, encode_reply,
};
use tokio::io::DuplexStream;
use tokio::task::JoinHandle;
use tokio_util::codec::Framed;

/// How long a test waits for anything before declaring a hang.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub struct Server {
    framed: Framed<DuplexStream, PacketCodec>,
}

/// A client, its spawned connection task, and the server end.
pub fn pair(config: Config) -> (Client, JoinHandle<libvirt_rpc::Result<()>>, Server) {
    let (a, b) = tokio::io::duplex(1 << 20);
    let (client, connection): (Client, Connection<DuplexStream>) = config.attach(a);
    let task = tokio::spawn(connection);
    (
        client,
        task,
        Server {
            framed: Framed::new(b, PacketCodec),
        },
    )
}

/// A configuration without client PINGs, so scripted servers see only calls.
pub fn quiet() -> Config {
    Config {
        keepalive: None,
        ..Config::default()
    }
}

impl Server {
    /// The next packet, or `None` at end of stream.
    pub async fn next(&mut self) -> Option<Packet> {
        match tokio::time::timeout(PATIENCE, self.framed.next()).await {
            Ok(Some(Ok(p))) => Some(p),
            Ok(Some(Err(e))) => panic!("server read failed: {e:?}"),
            Ok(None) => None,
            Err(_) => panic!("server waited too long for a packet"),
        }
    }

    /// The next packet, which must exist.
    pub async fn recv(&mut self) -> Packet {
        self.next().await.expect("client closed the connection")
    }

    /// The next CALL, decoded.
    pub async fn recv_call(&mut self) -> (Header, CallArgs) {
        let p = self.recv().await;
        assert_eq!(p.header.kind, MessageType::Call, "{:?}", p.header);
        let args = CallArgs::decode(p.header.remote_procedure(), &p.payload).unwrap();
        (p.header, args)
    }

    pub async fn send_frame(&mut self, frame: Bytes) {
        self.framed.send(frame).await.expect("server write failed");
    }

    pub async fn reply<T: Encode + ?Sized>(&mut self, call: &Header, ret: &T) {
        let mut buf = BytesMut::new();
        encode_reply(&mut buf, call, ret).unwrap();
        self.send_frame(buf.freeze()).await;
    }

    pub async fn reply_error(&mut self, call: &Header, err: &RemoteError) {
        let mut buf = BytesMut::new();
        encode_error_reply(&mut buf, call, err).unwrap();
        self.send_frame(buf.freeze()).await;
    }

    pub async fn send_packet<T: Encode + ?Sized>(&mut self, header: &Header, body: &T) {
        let mut buf = BytesMut::new();
        encode_packet(&mut buf, header, body).unwrap();
        self.send_frame(buf.freeze()).await;
    }

    /// Waits up to `wait` for a packet; `None` if none came (or EOF).
    pub async fn maybe_recv(&mut self, wait: Duration) -> Option<Packet> {
        match tokio::time::timeout(wait, self.framed.next()).await {
            Ok(Some(Ok(p))) => Some(p),
            _ => None,
        }
    }
}

/// What the auto server saw.
#[derive(Default)]
pub struct Seen {
    pub calls: AtomicUsize,
    pub uploads: AtomicUsize,
    pub aborts: AtomicUsize,
    pub finishes: AtomicUsize,
    pub data: AtomicUsize,
}

/// Answers every call with `handler`'s frame (or a bare OK reply), every
/// PING with a PONG, and confirms stream finishes and aborts.
pub fn spawn_auto<F>(mut server: Server, handler: F) -> (Arc<Seen>, JoinHandle<()>)
where
    F: Fn(&Header, &CallArgs) -> Option<Bytes> + Send + 'static,
{
    let seen = Arc::new(Seen::default());
    let stats = seen.clone();
    let task = tokio::spawn(async move {
        while let Some(Ok(p)) = server.framed.next().await {
            let h = p.header;
            if h.is_ping() {
                server
                    .send_packet(&Header::keepalive(KEEPALIVE_PONG), &())
                    .await;
                continue;
            }
            match h.kind {
                MessageType::Call => {
                    stats.calls.fetch_add(1, Ordering::SeqCst);
                    let args = CallArgs::decode(h.remote_procedure(), &p.payload).unwrap();
                    if matches!(args, CallArgs::StorageVolUpload(_)) {
                        stats.uploads.fetch_add(1, Ordering::SeqCst);
                    }
                    match handler(&h, &args) {
                        Some(frame) => server.send_frame(frame).await,
                        None => server.reply(&h, &()).await,
                    }
                }
                MessageType::Stream => match h.status {
                    Status::Continue => {
                        stats.data.fetch_add(p.payload.len(), Ordering::SeqCst);
                    }
                    Status::Ok => {
                        stats.finishes.fetch_add(1, Ordering::SeqCst);
                        server.send_packet(&h.stream(Status::Ok), &()).await;
                    }
                    _ => {
                        stats.aborts.fetch_add(1, Ordering::SeqCst);
                        server.send_packet(&h.stream(Status::Ok), &()).await;
                    }
                },
                _ => {}
            }
        }
    });
    (seen, task)
}

/// A reply frame for `call`.
pub fn reply_frame<T: Encode + ?Sized>(call: &Header, ret: &T) -> Bytes {
    let mut buf = BytesMut::new();
    encode_reply(&mut buf, call, ret).unwrap();
    buf.freeze()
}

pub fn domain(name: &str) -> libvirt_wire::Domain {
    libvirt_wire::Domain {
        name: name.to_owned(),
        uuid: libvirt_wire::Uuid([7; 16]),
        id: -1,
    }
}
