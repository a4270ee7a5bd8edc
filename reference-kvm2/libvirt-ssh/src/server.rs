//! An in-process SSH server for tests, plus key helpers.
//!
//! [`TestServer`] listens on `127.0.0.1:0` with a freshly generated ed25519 host key
//! (or, on request, a foreign one), accepts public key authentication for a
//! replaceable set of keys and the keys of an `authorized_keys` file, and serves
//! `direct-streamlocal@openssh.com` channels, either by handing each channel to a
//! caller-supplied [`ChannelHandler`] or by forwarding it to a local unix socket.
//!
//! Known limit: the russh server buffers incoming channel data in a bounded queue, so
//! a peer that echoes more than about 1 MiB in both directions at once can stall the
//! connection. Use a real `sshd` for bulk bidirectional traffic.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use data_encoding::BASE64;
use futures_util::future::BoxFuture;
use hmac::{KeyInit, Mac};
use rand::Rng as _;
use russh::keys::ssh_key::public::KeyData;
use russh::keys::ssh_key::{self, Algorithm, LineEnding, PrivateKey};
use russh::server::{self, Msg, Session, VerifiedPublicKey};
use russh::{Channel, ChannelOpenFailure, ChannelStream};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The public key type the server accepts and [`generate_client_key`] returns.
pub use russh::keys::ssh_key::PublicKey;

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
    authorized_file: Arc<RwLock<Option<PathBuf>>>,
    channel: ChannelTarget,
    requested: Arc<Mutex<Vec<String>>>,
}

/// Whether the `authorized_keys` file at `path` lists `offered` (plain
/// `type base64 [comment]` lines; lines with options are skipped).
fn file_authorizes(path: &Path, offered: &KeyData) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .any(|l| PublicKey::from_openssh(l).is_ok_and(|k| k.key_data() == offered))
}

/// The server configuration for one host key.
fn server_config(host_key: PrivateKey) -> Arc<server::Config> {
    Arc::new(server::Config {
        keys: vec![host_key],
        auth_rejection_time: Duration::from_millis(10),
        auth_rejection_time_initial: Some(Duration::ZERO),
        inactivity_timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    })
}

/// The configuration new connections get; replaced to change the host key.
type CurrentConfig = Arc<RwLock<Arc<server::Config>>>;

/// Accepts connections until the listener fails, serving each with the
/// configuration current at its accept.
async fn accept_loop(listener: TcpListener, config: CurrentConfig, shared: Shared) {
    while let Ok((socket, _)) = listener.accept().await {
        let config = config.read().unwrap_or_else(|e| e.into_inner()).clone();
        let handler = shared.clone();
        tokio::spawn(async move {
            let _ = socket.set_nodelay(true);
            if let Ok(session) = server::run_stream(config, socket, handler).await {
                let _ = session.await;
            }
        });
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
            .any(|k| k.key_data() == key.public_key.key_data())
            || self
                .authorized_file
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .as_deref()
                .is_some_and(|p| file_authorizes(p, key.public_key.key_data()));
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
    host_key: PrivateKey,
    config: CurrentConfig,
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
        let host_key = new_host_key();
        let config: CurrentConfig = Arc::new(RwLock::new(server_config(host_key.clone())));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        let shared = Shared {
            authorized: Arc::new(RwLock::new(opts.authorized)),
            authorized_file: Arc::default(),
            channel: opts.channel,
            requested: Arc::default(),
        };
        let task = tokio::spawn(accept_loop(listener, config.clone(), shared.clone()));
        TestServer {
            port,
            host_key,
            config,
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

    /// The server's own host key (the one [`TestServer::known_hosts_line`] names,
    /// whichever key the server presents).
    pub fn host_key(&self) -> &PublicKey {
        self.host_key.public_key()
    }

    /// With `true`, the server presents a freshly generated host key other than its
    /// own to every connection from now on, as a host whose key was changed does;
    /// with `false`, its own key again. Connections already open are not touched.
    pub fn present_foreign_host_key(&self, foreign: bool) {
        let key = if foreign {
            new_host_key()
        } else {
            self.host_key.clone()
        };
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = server_config(key);
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
        self.host_key()
            .to_openssh()
            .expect("encode host public key")
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

    /// Also accepts, from now on, every key listed in the OpenSSH `authorized_keys`
    /// file at `path` (plain `type base64 [comment]` lines), read afresh on every
    /// authentication attempt as `sshd` does; a missing file lists no key.
    pub fn authorize_file(&self, path: impl Into<PathBuf>) {
        *self
            .shared
            .authorized_file
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(path.into());
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

fn new_host_key() -> PrivateKey {
    PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).expect("generate ed25519 host key")
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
