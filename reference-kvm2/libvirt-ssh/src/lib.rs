//! SSH transport to a libvirt daemon socket.
//!
//! [`dial`] connects to an SSH server, verifies its host key against an OpenSSH
//! known_hosts file, authenticates with an ed25519 or RSA key file, and opens a
//! `direct-streamlocal@openssh.com` channel to a unix socket on the server (normally
//! libvirt's `libvirt-sock`). The returned [`SshStream`] is a plain
//! `AsyncRead + AsyncWrite` byte stream, so an RPC codec can run over it unchanged.
//! Key and known_hosts files are read on every dial, so rotated credentials take
//! effect without a restart. Every failure is an [`SshError`] whose
//! [`SshErrorKind`] says whether retrying can help.
//!
//! ```no_run
//! # async fn run() -> Result<(), libvirt_ssh::SshError> {
//! use libvirt_ssh::{SshTarget, dial};
//!
//! let target = SshTarget::new("hv1.example", "root", "/secrets/id_ed25519", "/secrets/known_hosts");
//! let stream = dial(&target).await?; // AsyncRead + AsyncWrite to libvirt-sock
//! # drop(stream);
//! # Ok(())
//! # }
//! ```
//!
//! With the `server` feature, [`server::TestServer`] provides an in-process SSH
//! server and key helpers for tests.

#![deny(missing_docs)]

mod dial;
mod error;
#[cfg(feature = "server")]
pub mod server;

pub use dial::{
    CIPHER_PREFERENCE, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_LIBVIRT_SOCKET, SshStream, SshTarget,
    dial,
};
pub use error::{SshError, SshErrorKind};
