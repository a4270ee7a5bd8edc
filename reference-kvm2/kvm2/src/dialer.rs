//! The dialer seam: how kvm2 gets a byte stream to a host's libvirt socket.
//!
//! Production dials SSH and forwards the socket; tests and the embedded fake hand
//! out in-memory pipes. Everything above the seam (handshake, RPC, spans) is the
//! same for both.

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
