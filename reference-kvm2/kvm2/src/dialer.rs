//! The dialer seam: how kvm2 gets a byte stream to a host's libvirt socket.
//!
//! Production dials SSH and forwards the socket ([`SshDialer`]); the embedded fake
//! is reached the same way, through an in-process SSH server, and unit tests may
//! hand out in-memory pipes or a local socket ([`LocalSocketDialer`]). Everything
//! above the seam (handshake, RPC, spans) is the same for all of them.

use std::fmt;

use conformance::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite};

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
        let (client, conn) = libvirt_rpc::Config::default().attach(stream);
        tokio::spawn(conn);
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
            // The SSH session task runs on the caller's runtime, like the
            // connection task and the callers: see `dial` in backend.rs.
            match libvirt_ssh::dial(&target).await {
                Ok(stream) => {
                    // The cipher is logged at debug by the dial itself.
                    record_cipher(host, stream.cipher());
                    Ok(Box::new(stream) as Stream)
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
        let (client, conn) = libvirt_rpc::Config::default().attach(stream);
        tokio::spawn(conn);
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
