//! An in-process SSH server for tests, plus key helpers.
//!
//! [`TestServer`] listens on `127.0.0.1:0` with a freshly generated ed25519 host key,
//! accepts public key authentication for a replaceable set of keys, and serves
//! `direct-streamlocal@openssh.com` channels, either by handing each channel to a
//! caller-supplied [`ChannelHandler`] or by forwarding it to a local unix socket.
//!
//! Known limit: the russh server buffers incoming channel data in a bounded queue, so
//! a peer that echoes more than about 1 MiB in both directions at once can stall the
//! connection. Use a real `sshd` for bulk bidirectional traffic.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use data_encoding::BASE64;
use futures_util::future::BoxFuture;
use hmac::{KeyInit, Mac};
use rand::Rng as _;
use russh::keys::ssh_key::{self, Algorithm, LineEnding, PrivateKey, PublicKey};
use russh::server::{self, Msg, Server as _, Session, VerifiedPublicKey};
use russh::{Channel, ChannelOpenFailure, ChannelStream};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Receives each accepted channel as a byte stream.
pub type ChannelHandler =
    Arc<dyn Fn(ChannelStream<Msg>) -> BoxFuture<'static, ()> + Send + Sync + 'static>;

/// What the server does with an accepted `direct-streamlocal` channel.
#[derive(Clone)]
pub enum ChannelTarget {
    /// Hand the channel to this function, whatever socket path was requested.
    Handler(ChannelHandler),
    /// Connect to this unix socket and copy bytes both ways; the channel is refused
    /// when the socket cannot be reached.
    ForwardTo(PathBuf),
    /// Connect to the unix socket the client asked for.
    ForwardRequested,
}

impl ChannelTarget {
    /// A handler that echoes every byte back.
    pub fn echo() -> Self {
        ChannelTarget::Handler(Arc::new(|mut stream: ChannelStream<Msg>| {
            Box::pin(async move {
                let (mut r, mut w) = tokio::io::split(&mut stream);
                let _ = tokio::io::copy(&mut r, &mut w).await;
            })
        }))
    }
}

impl fmt::Debug for ChannelTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelTarget::Handler(_) => f.write_str("Handler(..)"),
            ChannelTarget::ForwardTo(p) => f.debug_tuple("ForwardTo").field(p).finish(),
            ChannelTarget::ForwardRequested => f.write_str("ForwardRequested"),
        }
    }
}

/// Options for [`TestServer::start`].
#[derive(Debug, Clone)]
pub struct TestServerOptions {
    /// Public keys allowed to log in (any user name).
    pub authorized: Vec<PublicKey>,
    /// What to do with accepted channels.
    pub channel: ChannelTarget,
}

impl TestServerOptions {
    /// Options that authorise `authorized` and echo every channel.
    pub fn echo(authorized: Vec<PublicKey>) -> Self {
        TestServerOptions {
            authorized,
            channel: ChannelTarget::echo(),
        }
    }
}

#[derive(Clone)]
struct Shared {
    authorized: Arc<RwLock<Vec<PublicKey>>>,
    channel: ChannelTarget,
    requested: Arc<Mutex<Vec<String>>>,
}

impl server::Server for Shared {
    type Handler = Shared;
    fn new_client(&mut self, _: Option<SocketAddr>) -> Shared {
        self.clone()
    }
}

impl server::Handler for Shared {
    type Error = russh::Error;

    async fn auth_publickey(
        &mut self,
        _user: &str,
        key: VerifiedPublicKey<'_>,
    ) -> Result<server::Auth, Self::Error> {
        let ok = self
            .authorized
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|k| k.key_data() == key.public_key.key_data());
        Ok(if ok {
            server::Auth::Accept
        } else {
            server::Auth::reject()
        })
    }

    async fn channel_open_direct_streamlocal(
        &mut self,
        channel: Channel<Msg>,
        socket_path: &str,
        reply: server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.requested
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(socket_path.to_owned());
        let forward_to = match &self.channel {
            ChannelTarget::Handler(handler) => {
                reply.accept().await;
                tokio::spawn(handler(channel.into_stream()));
                return Ok(());
            }
            ChannelTarget::ForwardTo(path) => path.clone(),
            ChannelTarget::ForwardRequested => PathBuf::from(socket_path),
        };
        match tokio::net::UnixStream::connect(&forward_to).await {
            Ok(mut unix) => {
                reply.accept().await;
                tokio::spawn(async move {
                    let mut stream = channel.into_stream();
                    let _ = tokio::io::copy_bidirectional(&mut stream, &mut unix).await;
                });
            }
            Err(_) => reply.reject(ChannelOpenFailure::ConnectFailed).await,
        }
        Ok(())
    }
}

/// A running in-process SSH server. Stops when dropped.
pub struct TestServer {
    port: u16,
    host_key: PublicKey,
    shared: Shared,
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestServer")
            .field("port", &self.port)
            .field("channel", &self.shared.channel)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// Starts a server on `127.0.0.1:0` with a new ed25519 host key.
    ///
    /// # Panics
    /// When the loopback listener cannot be bound.
    pub async fn start(opts: TestServerOptions) -> TestServer {
        let host_key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519)
            .expect("generate ed25519 host key");
        let host_public = host_key.public_key().clone();
        let config = Arc::new(server::Config {
            keys: vec![host_key],
            auth_rejection_time: Duration::from_millis(10),
            auth_rejection_time_initial: Some(Duration::ZERO),
            inactivity_timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        });
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        let shared = Shared {
            authorized: Arc::new(RwLock::new(opts.authorized)),
            channel: opts.channel,
            requested: Arc::default(),
        };
        let mut server = shared.clone();
        let task = tokio::spawn(async move {
            let _ = server.run_on_socket(config, &listener).await;
        });
        TestServer {
            port,
            host_key: host_public,
            shared,
            task: Some(task),
        }
    }

    /// Starts a server whose one authorised client key is written into `dir`, with
    /// a known_hosts file naming the server beside it: what a client needs to dial
    /// it as a production client would.
    ///
    /// # Panics
    /// When the loopback listener cannot be bound or a file cannot be written.
    pub async fn start_with_client(
        dir: &Path,
        channel: ChannelTarget,
    ) -> (TestServer, ClientFiles) {
        let (key, public) = generate_client_key(dir, KeyKind::Ed25519);
        let server = TestServer::start(TestServerOptions {
            authorized: vec![public],
            channel,
        })
        .await;
        let known_hosts = dir.join(format!("known_hosts_{}", server.port()));
        std::fs::write(&known_hosts, format!("{}\n", server.known_hosts_line()))
            .expect("write known_hosts file");
        (server, ClientFiles { key, known_hosts })
    }

    /// The TCP port the server listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's host key.
    pub fn host_key(&self) -> &PublicKey {
        &self.host_key
    }

    /// A plain known_hosts line for this server: `[127.0.0.1]:port ssh-ed25519 AAAA…`.
    pub fn known_hosts_line(&self) -> String {
        format!("{} {}", self.host_pattern(), self.host_key_openssh())
    }

    /// A hashed known_hosts line for this server (`|1|salt|hash ssh-ed25519 AAAA…`),
    /// as `ssh-keygen -H` writes it.
    pub fn hashed_known_hosts_line(&self) -> String {
        format!(
            "{} {}",
            hash_host(&self.host_pattern()),
            self.host_key_openssh()
        )
    }

    fn host_pattern(&self) -> String {
        format!("[127.0.0.1]:{}", self.port)
    }

    fn host_key_openssh(&self) -> String {
        self.host_key.to_openssh().expect("encode host public key")
    }

    /// Replaces the set of keys allowed to log in; takes effect for the next
    /// authentication attempt.
    pub fn set_authorized(&self, keys: Vec<PublicKey>) {
        *self
            .shared
            .authorized
            .write()
            .unwrap_or_else(|e| e.into_inner()) = keys;
    }

    /// Socket paths requested by clients so far, in order.
    pub fn requested_socket_paths(&self) -> Vec<String> {
        self.shared
            .requested
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops accepting connections. Connections already open are not torn down.
    pub fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Hashes a known_hosts host pattern the way OpenSSH does:
/// `|1|base64(salt)|base64(hmac-sha1(salt, host))`.
pub fn hash_host(host: &str) -> String {
    let mut salt = [0u8; 20];
    rand::rng().fill_bytes(&mut salt);
    let mut mac =
        hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt).expect("hmac accepts any key size");
    mac.update(host.as_bytes());
    let digest = mac.finalize().into_bytes();
    format!("|1|{}|{}", BASE64.encode(&salt), BASE64.encode(&digest))
}

/// Algorithm of a key made by [`generate_client_key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// An ed25519 key.
    Ed25519,
    /// A 2048-bit RSA key.
    Rsa,
}

/// A client's files for a [`TestServer`] made by [`TestServer::start_with_client`].
#[derive(Clone, Debug)]
pub struct ClientFiles {
    /// The private key the server accepts (OpenSSH format, mode 0600).
    pub key: PathBuf,
    /// A known_hosts file with the server's host key.
    pub known_hosts: PathBuf,
}

static KEY_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Generates a client key, writes it unencrypted in OpenSSH format to a new file in
/// `dir` (mode 0600), and returns the file's path and the public key.
///
/// # Panics
/// When key generation or the write fails.
pub fn generate_client_key(dir: &Path, kind: KeyKind) -> (PathBuf, PublicKey) {
    let (algorithm, name) = match kind {
        KeyKind::Ed25519 => (Algorithm::Ed25519, "ed25519"),
        KeyKind::Rsa => (Algorithm::Rsa { hash: None }, "rsa"),
    };
    let key = match kind {
        KeyKind::Ed25519 => PrivateKey::random(&mut rand::rng(), algorithm),
        KeyKind::Rsa => ssh_key::private::RsaKeypair::random(&mut rand::rng(), 2048)
            .and_then(|pair| PrivateKey::new(pair.into(), "")),
    }
    .expect("generate client key");
    let n = KEY_COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("id_{name}_{}_{n}", std::process::id()));
    key.write_openssh_file(&path, LineEnding::LF)
        .expect("write private key file");
    (path, key.public_key().clone())
}
