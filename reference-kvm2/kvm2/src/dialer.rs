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
