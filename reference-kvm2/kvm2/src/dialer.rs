//! The dialer seam: how kvm2 gets a byte stream to a host's libvirt socket.
//!
//! Production dials SSH and forwards the socket ([`SshDialer`]); the embedded fake
//! is reached the same way, through an in-process SSH server, and unit tests may
//! hand out in-memory pipes or a local socket ([`LocalSocketDialer`]). Everything
//! above the seam (handshake, RPC, spans) is the same for all of them.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use conformance::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::config::HostConfig;

/// A bidirectional byte stream to libvirtd.
pub trait AsyncReadWrite: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> AsyncReadWrite for T {}

/// A boxed stream.
pub type Stream = Box<dyn AsyncReadWrite>;

/// Opens streams to hosts. Implementations read credentials on every dial.
pub trait Dialer: Send + Sync + 'static {
    /// Opens a stream to `host`'s libvirt socket.
    fn dial<'a>(&'a self, host: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>>;
}

/// Why a dial failed. Messages never carry key material.
#[derive(Debug)]
pub enum DialError {
    /// The host refused or reset the connection, or could not be resolved.
    Unreachable(String),
    /// The dial did not finish in time.
    Timeout,
    /// The server rejected the credentials.
    AuthFailed(String),
    /// The host key is unknown or does not match known_hosts.
    HostKeyRejected(String),
    /// The key or known_hosts file is not there (yet).
    CredentialsUnavailable(String),
    /// The key file exists but cannot be used.
    BadCredentials(String),
    /// Anything else.
    Other(String),
}

impl fmt::Display for DialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DialError::Unreachable(m) => write!(f, "host unreachable: {m}"),
            DialError::Timeout => f.write_str("dial timed out"),
            DialError::AuthFailed(m) => write!(f, "authentication failed: {m}"),
            DialError::HostKeyRejected(m) => write!(f, "host key rejected: {m}"),
            DialError::CredentialsUnavailable(m) => write!(f, "credentials unavailable: {m}"),
            DialError::BadCredentials(m) => write!(f, "unusable credentials: {m}"),
            DialError::Other(m) => write!(f, "dial failed: {m}"),
        }
    }
}

impl std::error::Error for DialError {}

/// Dials a libvirtd on this machine through its Unix socket (`host.socket`),
/// for hosts whose daemon is local (development and the local test host).
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalSocketDialer;

impl Dialer for LocalSocketDialer {
    fn dial<'a>(&'a self, host: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
        Box::pin(async move {
            match tokio::net::UnixStream::connect(&host.socket).await {
                Ok(s) => Ok(Box::new(s) as Stream),
                Err(e) => Err(match e.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        DialError::AuthFailed(format!("{}: {e}", host.socket))
                    }
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                        DialError::Unreachable(format!("{}: {e}", host.socket))
                    }
                    _ => DialError::Other(format!("{}: {e}", host.socket)),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn local_socket_dialer_reaches_a_fake_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libvirt-sock");
        let fake = libvirt_fake::FakeLibvirt::new();
        let _server = fake.serve_unix(&path).await.unwrap();
        let mut host = crate::fixture::Kvm2Fixture::default().config().hosts[0].clone();
        host.socket = path.to_string_lossy().into_owned();
        let stream = LocalSocketDialer.dial(&host).await.unwrap();
        let home = home_of(&stream);
        assert!(home.0.is_none(), "a local socket has no thread of its own");
        let (client, conn) = libvirt_rpc::Config::default().attach(stream);
        home.spawn(conn);
        client.open("qemu:///system").await.unwrap();
        assert_eq!(client.connect_get_hostname().await.unwrap(), "fake-host");
        host.socket = dir.path().join("missing").to_string_lossy().into_owned();
        assert!(matches!(
            LocalSocketDialer.dial(&host).await,
            Err(DialError::Unreachable(_))
        ));
    }
}

/// Dials a host over SSH (`libvirt-ssh`) and forwards `host.socket` through a
/// `direct-streamlocal` channel: the production dialer.
///
/// The key and known_hosts files are read on every dial, so rotated credentials are
/// used by the next connection without a restart.
#[derive(Clone, Copy, Debug)]
pub struct SshDialer {
    /// The limit for TCP connect, handshake, authentication and channel open.
    pub handshake_timeout: std::time::Duration,
}

impl Default for SshDialer {
    fn default() -> Self {
        SshDialer {
            handshake_timeout: std::time::Duration::from_secs(10),
        }
    }
}

impl Dialer for SshDialer {
    fn dial<'a>(&'a self, host: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
        Box::pin(async move {
            let (key, known) = match (&host.key_file, &host.known_hosts_file) {
                (Some(key), Some(known)) => (key, known),
                (None, _) => {
                    return Err(DialError::CredentialsUnavailable(format!(
                        "host {} has no key file: set {}",
                        host.name,
                        field(host, "keyFile")
                    )));
                }
                (_, None) => {
                    return Err(DialError::CredentialsUnavailable(format!(
                        "host {} has no known_hosts file: set {}",
                        host.name,
                        field(host, "knownHostsFile")
                    )));
                }
            };
            let mut target = libvirt_ssh::SshTarget::new(
                host.address.clone(),
                host.user.clone(),
                key.clone(),
                known.clone(),
            );
            target.port = host.port;
            target.socket_path = host.socket.clone();
            target.handshake_timeout = self.handshake_timeout;
            match libvirt_ssh::dial_on_own_thread(&target).await {
                Ok((stream, thread)) => {
                    // The cipher is logged at debug by the dial itself.
                    record_cipher(host, stream.cipher());
                    Ok(OwnThread::boxed(stream, thread))
                }
                Err(e) => {
                    use libvirt_ssh::SshErrorKind as K;
                    let mut msg = e.to_string();
                    // Name the configuration field behind a file that is not there.
                    if e.kind() == K::CredentialsUnavailable {
                        if !key.is_file() {
                            msg.push_str(&format!(" (the {})", field(host, "keyFile")));
                        } else if !known.is_file() {
                            msg.push_str(&format!(" (the {})", field(host, "knownHostsFile")));
                        }
                    }
                    Err(match e.kind() {
                        K::AuthFailed => DialError::AuthFailed(msg),
                        K::HostKeyRejected => DialError::HostKeyRejected(msg),
                        K::CredentialsUnavailable => DialError::CredentialsUnavailable(msg),
                        K::BadKey => DialError::BadCredentials(msg),
                        K::Unreachable => DialError::Unreachable(msg),
                        K::Timeout => DialError::Timeout,
                        _ => DialError::Other(msg),
                    })
                }
            }
        })
    }
}

/// An SSH stream whose session runs on a thread of its own
/// ([`libvirt_ssh::ConnectionThread`]), where the task that uses the stream
/// belongs too (see [`home_of`]).
struct OwnThread {
    stream: libvirt_ssh::SshStream,
}

/// The threads of the [`OwnThread`] streams not yet asked for by
/// [`home_of`], by the stream's address.
static THREADS: std::sync::Mutex<Vec<(usize, libvirt_ssh::ConnectionThread)>> =
    std::sync::Mutex::new(Vec::new());

fn address(stream: &dyn AsyncReadWrite) -> usize {
    stream as *const dyn AsyncReadWrite as *const () as usize
}

impl OwnThread {
    fn boxed(stream: libvirt_ssh::SshStream, thread: libvirt_ssh::ConnectionThread) -> Stream {
        let b: Stream = Box::new(OwnThread { stream });
        THREADS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((address(&*b), thread));
        b
    }
}

impl Drop for OwnThread {
    fn drop(&mut self) {
        let me = self as *const OwnThread as usize;
        THREADS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(a, _)| *a != me);
    }
}

impl AsyncRead for OwnThread {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for OwnThread {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Where the task that reads and writes a stream (the libvirt connection)
/// runs: see [`home_of`].
#[derive(Debug)]
pub struct Home(Option<libvirt_ssh::ConnectionThread>);

impl Home {
    /// Spawns `connection` there.
    pub fn spawn<F>(self, connection: F)
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.0 {
            Some(thread) => drop(thread.spawn(connection)),
            None => drop(tokio::spawn(connection)),
        }
    }
}

/// Where the connection task of `stream` belongs: the stream's own thread
/// when [`SshDialer`] dialed it, so that the SSH session and the libvirt
/// connection hand packets to each other without waking another thread;
/// else the current runtime. Ask before the stream moves into the connection.
pub fn home_of(stream: &Stream) -> Home {
    let me = address(&**stream);
    let mut threads = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    Home(
        threads
            .iter()
            .position(|(a, _)| *a == me)
            .map(|i| threads.swap_remove(i).1),
    )
}

/// The cipher of the last SSH connection to each endpoint (user, address and
/// port), for `kvm2 check` to show.
static CIPHERS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

fn endpoint(host: &HostConfig) -> String {
    format!("{}@{}:{}", host.user, host.address, host.port)
}

fn record_cipher(host: &HostConfig, cipher: &str) {
    let key = endpoint(host);
    let mut table = CIPHERS.lock().unwrap_or_else(|e| e.into_inner());
    match table.iter_mut().find(|(k, _)| *k == key) {
        Some((_, c)) => cipher.clone_into(c),
        None => table.push((key, cipher.to_owned())),
    }
}

/// The cipher the last SSH dial to `host` negotiated (its SSH name), if
/// [`SshDialer`] dialed it.
pub fn negotiated_cipher(host: &HostConfig) -> Option<String> {
    let key = endpoint(host);
    let table = CIPHERS.lock().unwrap_or_else(|e| e.into_inner());
    table
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, c)| c.clone())
}

/// A host's configuration field as an operator finds it in the file.
fn field(host: &HostConfig, name: &str) -> String {
    format!("{name} of host {} in the kvm2 configuration", host.name)
}

#[cfg(test)]
mod ssh_tests {
    use std::sync::Arc;

    use libvirt_ssh::server::{ChannelTarget, KeyKind, TestServer, generate_client_key};

    use super::*;

    fn host(port: u16, key: std::path::PathBuf, known: std::path::PathBuf) -> HostConfig {
        HostConfig {
            name: "h1".into(),
            address: "127.0.0.1".into(),
            port,
            user: "root".into(),
            key_file: Some(key),
            known_hosts_file: Some(known),
            socket: "/var/run/libvirt/libvirt-sock".into(),
        }
    }

    #[tokio::test]
    async fn libvirt_calls_flow_over_ssh_to_the_fake_and_rotation_needs_no_restart() {
        let dir = tempfile::tempdir().unwrap();
        let fake = libvirt_fake::FakeLibvirt::new();
        let serving = fake.clone();
        let (server, files) = TestServer::start_with_client(
            dir.path(),
            ChannelTarget::Handler(Arc::new(move |stream| {
                let f = serving.clone();
                Box::pin(async move {
                    let _ = f.serve(stream).await;
                })
            })),
        )
        .await;
        let (key, known) = (files.key, files.known_hosts);
        let h = host(server.port(), key.clone(), known.clone());
        let dialer = SshDialer::default();

        let stream = dialer.dial(&h).await.expect("dial over ssh");
        // The SSH session runs on a thread of its own, and so does the
        // connection task spawned through its home.
        let home = home_of(&stream);
        assert!(home.0.is_some(), "an ssh stream has a thread of its own");
        assert!(
            home_of(&stream).0.is_none(),
            "the thread is handed out once"
        );
        let (client, conn) = libvirt_rpc::Config::default().attach(stream);
        home.spawn(conn);
        client.open("qemu:///system").await.expect("open");
        assert_eq!(client.connect_get_lib_version().await.unwrap(), 9_000_000);
        // AES-GCM is preferred, and the cipher is noted for `kvm2 check`.
        assert_eq!(
            negotiated_cipher(&h).as_deref(),
            Some("aes256-gcm@openssh.com")
        );

        // Rotation: a new key in the same file, the old one revoked; the next dial
        // reads the file again.
        let sub = dir.path().join("next");
        std::fs::create_dir_all(&sub).unwrap();
        let (new_key, new_public) = generate_client_key(&sub, KeyKind::Ed25519);
        server.set_authorized(vec![new_public]);
        let old = dialer.dial(&h).await.err().expect("the old key is refused");
        assert!(matches!(old, DialError::AuthFailed(_)), "{old}");
        std::fs::copy(&new_key, &key).unwrap();
        dialer
            .dial(&h)
            .await
            .expect("the rotated key is used without a restart");

        // A missing known_hosts file means the secret is not mounted yet.
        let missing = host(server.port(), key.clone(), dir.path().join("absent"));
        let e = dialer.dial(&missing).await.err().expect("no known_hosts");
        assert!(matches!(e, DialError::CredentialsUnavailable(_)), "{e}");
        let absent = dir.path().join("absent").display().to_string();
        let text = e.to_string();
        assert!(
            text.contains(&absent)
                && text.contains("knownHostsFile of host h1 in the kvm2 configuration"),
            "{text}"
        );
        // A missing key file names the file and its field.
        let no_key = host(server.port(), dir.path().join("no_key"), known.clone());
        let e = dialer.dial(&no_key).await.err().expect("no key file");
        let text = e.to_string();
        assert!(
            text.contains(&dir.path().join("no_key").display().to_string())
                && text.contains("keyFile of host h1 in the kvm2 configuration"),
            "{text}"
        );
        let mut unset = host(server.port(), key.clone(), known);
        unset.key_file = None;
        let e = dialer
            .dial(&unset)
            .await
            .err()
            .expect("no key file configured");
        assert!(
            matches!(e, DialError::CredentialsUnavailable(_))
                && e.to_string().contains("set keyFile of host h1"),
            "{e}"
        );
    }
}
