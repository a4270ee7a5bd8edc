//! The client side: dial a host and open a `direct-streamlocal@openssh.com` channel.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use russh::client;
use russh::keys::{self, PrivateKey, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use russh::{ChannelStream, Disconnect, Preferred, cipher};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tracing::{debug, trace, warn};

use crate::error::{SshError, SshErrorKind};

/// Where and how to dial.
#[derive(Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// Host name or address of the SSH server.
    pub host: String,
    /// TCP port of the SSH server.
    pub port: u16,
    /// User to authenticate as.
    pub user: String,
    /// OpenSSH private key file (ed25519 or RSA, unencrypted). Read on every dial.
    pub key_file: PathBuf,
    /// OpenSSH known_hosts file holding the server's host key, as a plain or hashed
    /// entry (`[host]:port` when the port is not 22). Read on every dial.
    pub known_hosts_file: PathBuf,
    /// Path of the unix socket on the server to connect the channel to.
    pub socket_path: String,
    /// Upper bound for the whole dial: TCP connect, handshake, authentication and
    /// channel open.
    pub handshake_timeout: Duration,
    /// Accept any host key (logged as a warning). For tests and first contact only.
    pub insecure_accept_any_host_key: bool,
}

/// The libvirt system daemon's read-write socket, the usual [`SshTarget::socket_path`].
pub const DEFAULT_LIBVIRT_SOCKET: &str = "/var/run/libvirt/libvirt-sock";

/// The ciphers a dial offers, most preferred first: AES-GCM, which CPUs with
/// AES instructions run several times faster than ChaCha20-Poly1305, then
/// ChaCha20-Poly1305 for servers without AES-GCM, then the AES-CTR modes.
pub const CIPHER_PREFERENCE: &[cipher::Name] = &[
    cipher::AES_256_GCM,
    cipher::AES_128_GCM,
    cipher::CHACHA20_POLY1305,
    cipher::AES_256_CTR,
    cipher::AES_192_CTR,
    cipher::AES_128_CTR,
];

/// Channel data of one SSH packet at most (russh's default packet size):
/// what [`SshStream`]'s vectored write gathers small buffers up to.
const GATHER_MAX: usize = 32 * 1024;

/// The [`SshTarget::handshake_timeout`] that [`SshTarget::new`] sets.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

impl SshTarget {
    /// A target on port 22 for the libvirt system socket, with
    /// [`DEFAULT_HANDSHAKE_TIMEOUT`] and host key checking on.
    pub fn new(
        host: impl Into<String>,
        user: impl Into<String>,
        key_file: impl Into<PathBuf>,
        known_hosts_file: impl Into<PathBuf>,
    ) -> Self {
        SshTarget {
            host: host.into(),
            port: 22,
            user: user.into(),
            key_file: key_file.into(),
            known_hosts_file: known_hosts_file.into(),
            socket_path: DEFAULT_LIBVIRT_SOCKET.into(),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            insecure_accept_any_host_key: false,
        }
    }

    fn label(&self) -> String {
        format!("ssh to {}@{}:{}", self.user, self.host, self.port)
    }
}

impl fmt::Debug for SshTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshTarget")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("key_file", &self.key_file)
            .field("known_hosts_file", &self.known_hosts_file)
            .field("socket_path", &self.socket_path)
            .field("handshake_timeout", &self.handshake_timeout)
            .field(
                "insecure_accept_any_host_key",
                &self.insecure_accept_any_host_key,
            )
            .finish()
    }
}

/// A byte stream to the remote unix socket, carried by one SSH channel.
///
/// Owns the SSH connection: dropping the stream closes the channel and the
/// connection.
pub struct SshStream {
    stream: ChannelStream<client::Msg>,
    _handle: client::Handle<HostKeyCheck>,
    label: String,
    cipher: String,
    /// Small buffers of a vectored write, gathered into one channel packet.
    gather: Vec<u8>,
}

impl SshStream {
    /// The cipher negotiated with the server (its SSH name, such as
    /// `aes256-gcm@openssh.com`).
    pub fn cipher(&self) -> &str {
        &self.cipher
    }
}

impl fmt::Debug for SshStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshStream")
            .field("target", &self.label)
            .field("cipher", &self.cipher)
            .finish_non_exhaustive()
    }
}

impl AsyncRead for SshStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for SshStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    /// Each write becomes SSH packets of its own, so a short buffer (such as
    /// a libvirt packet header) is gathered with what follows it, up to one
    /// packet's worth, instead of costing a packet of its own; a large first
    /// buffer is written as it is.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut bufs = bufs.iter().filter(|b| !b.is_empty());
        let Some(first) = bufs.next() else {
            return Poll::Ready(Ok(0));
        };
        if first.len() >= GATHER_MAX {
            return Pin::new(&mut self.stream).poll_write(cx, first);
        }
        let this = &mut *self;
        // Gathered afresh on every call: a write left pending is offered the
        // same buffers again, and the channel keeps what it took first.
        this.gather.clear();
        this.gather.extend_from_slice(first);
        for b in bufs {
            let room = GATHER_MAX - this.gather.len();
            if room == 0 {
                break;
            }
            this.gather.extend_from_slice(&b[..b.len().min(room)]);
        }
        Pin::new(&mut this.stream).poll_write(cx, &this.gather)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Why the host key check refused the server, recorded by the handler because russh
/// only reports a refusal as "unknown key".
type Verdict = Arc<Mutex<Option<String>>>;

/// The client handler: verifies the server's host key and notes the
/// negotiated cipher.
struct HostKeyCheck {
    host: String,
    port: u16,
    known_hosts_file: PathBuf,
    insecure: bool,
    verdict: Verdict,
    cipher: Arc<Mutex<String>>,
}

impl HostKeyCheck {
    fn refuse(&self, why: String) -> bool {
        *self.verdict.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        false
    }
}

impl client::Handler for HostKeyCheck {
    type Error = russh::Error;

    async fn kex_done(
        &mut self,
        _shared_secret: Option<&[u8]>,
        names: &russh::Names,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        let cipher = names.cipher.as_ref().to_owned();
        debug!(host = %self.host, port = self.port, %cipher, "ssh cipher negotiated");
        *self.cipher.lock().unwrap_or_else(|e| e.into_inner()) = cipher;
        Ok(())
    }

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        if self.insecure {
            warn!(
                host = %self.host,
                port = self.port,
                "accepting the server's host key without checking it (insecure mode)"
            );
            return Ok(true);
        }
        let PublicKeyOrCertificate::PublicKey { key, .. } = key else {
            return Ok(
                self.refuse("server offered a host certificate, which is not supported".into())
            );
        };
        let file = self.known_hosts_file.display().to_string();
        let offered = format!(
            "host key {} {}",
            key.algorithm(),
            key.fingerprint(keys::HashAlg::Sha256)
        );
        match keys::check_known_hosts_path(&self.host, self.port, key, &self.known_hosts_file) {
            Ok(true) => Ok(true),
            Ok(false) => Ok(self.refuse(format!(
                "{offered} is not in the known_hosts file {file}; if that fingerprint is the \
                 host's (compare `ssh-keygen -lf` of its host key on the host), record it with \
                 `{}`",
                keyscan(&self.host, self.port, &self.known_hosts_file)
            ))),
            Err(keys::Error::KeyChanged { line }) => Ok(self.refuse(format!(
                "{offered} differs from the one recorded for {} at line {line} of the \
                 known_hosts file {file}; if the host's key was changed on purpose and that \
                 fingerprint is the host's, replace the entry with `ssh-keygen -R {} -f {} && {}`",
                known_hosts_name(&self.host, self.port),
                shell_quote(&known_hosts_name(&self.host, self.port)),
                shell_quote(&file),
                keyscan(&self.host, self.port, &self.known_hosts_file)
            ))),
            Err(_) => Ok(self.refuse(format!("known_hosts file {file} cannot be read"))),
        }
    }
}

/// How known_hosts names a host: `host` on port 22, `[host]:port` elsewhere.
fn known_hosts_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_owned()
    } else {
        format!("[{host}]:{port}")
    }
}

/// The command that records `host`'s key in `file`.
fn keyscan(host: &str, port: u16, file: &Path) -> String {
    format!(
        "ssh-keyscan -p {port} {} >> {}",
        shell_quote(host),
        shell_quote(&file.display().to_string())
    )
}

/// `text` as one shell word: unchanged when it holds only characters no shell
/// treats specially, else in single quotes.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@,%=".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Checks that a credential file is present; a missing one is transient (a mounted
/// secret that has not appeared yet).
fn require_file(label: &str, what: &str, path: &Path) -> Result<(), SshError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(SshError::new(
            SshErrorKind::CredentialsUnavailable,
            format!("{label}: {what} {} is not a regular file", path.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(SshError::new(
            SshErrorKind::CredentialsUnavailable,
            format!("{label}: {what} {} does not exist", path.display()),
        )),
        Err(e) => Err(SshError::new(
            SshErrorKind::CredentialsUnavailable,
            format!("{label}: {what} {} cannot be read", path.display()),
        )
        .with_source(e)),
    }
}

fn load_key(label: &str, path: &Path) -> Result<PrivateKey, SshError> {
    match keys::load_secret_key(path, None) {
        Ok(key) => Ok(key),
        // The parser's own error may quote the file; keep a fixed description.
        Err(keys::Error::IO(e)) if e.kind() == io::ErrorKind::NotFound => Err(SshError::new(
            SshErrorKind::CredentialsUnavailable,
            format!("{label}: key file {} does not exist", path.display()),
        )),
        Err(keys::Error::KeyIsEncrypted) => Err(SshError::new(
            SshErrorKind::BadKey,
            format!(
                "{label}: key file {} is encrypted, which is not supported",
                path.display()
            ),
        )),
        Err(_) => Err(SshError::new(
            SshErrorKind::BadKey,
            format!(
                "{label}: key file {} is not a usable ed25519 or rsa private key",
                path.display()
            ),
        )),
    }
}

fn map_russh(label: &str, step: &str, verdict: &Verdict, e: russh::Error) -> SshError {
    use russh::Error as E;
    match e {
        E::UnknownKey | E::KeyChanged { .. } => {
            let why = verdict
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .unwrap_or_else(|| "host key rejected".into());
            SshError::new(SshErrorKind::HostKeyRejected, format!("{label}: {why}"))
        }
        E::IO(io) => SshError::new(SshErrorKind::Unreachable, format!("{label}: {step} failed"))
            .with_source(io),
        E::Disconnect | E::HUP | E::RecvError | E::SendError => SshError::new(
            SshErrorKind::Unreachable,
            format!("{label}: connection closed during {step}"),
        )
        .with_source(e),
        E::ConnectionTimeout | E::KeepaliveTimeout | E::InactivityTimeout | E::Elapsed(_) => {
            SshError::new(SshErrorKind::Timeout, format!("{label}: {step} timed out"))
                .with_source(e)
        }
        E::ChannelOpenFailure(reason) => SshError::new(
            SshErrorKind::Unreachable,
            format!("{label}: server could not open the socket channel ({reason:?})"),
        ),
        E::Keys(_) | E::SshKey(_) | E::Signature(_) => SshError::new(
            SshErrorKind::Protocol,
            format!("{label}: {step} failed on a key operation"),
        ),
        other => SshError::new(SshErrorKind::Protocol, format!("{label}: {step} failed"))
            .with_source(other),
    }
}

/// Dials `target` and opens a `direct-streamlocal@openssh.com` channel to
/// `target.socket_path`.
///
/// The key file and the known_hosts file are read afresh on every call, so rotated
/// credentials take effect on the next dial. The whole dial runs under
/// `target.handshake_timeout`.
pub async fn dial(target: &SshTarget) -> Result<SshStream, SshError> {
    let label = target.label();
    require_file(&label, "key file", &target.key_file)?;
    if !target.insecure_accept_any_host_key {
        require_file(&label, "known_hosts file", &target.known_hosts_file)?;
    }
    let key = load_key(&label, &target.key_file)?;
    match tokio::time::timeout(target.handshake_timeout, connect(target, &label, key)).await {
        Ok(result) => result,
        Err(_) => Err(SshError::new(
            SshErrorKind::Timeout,
            format!(
                "{label}: no connected channel within {:?}",
                target.handshake_timeout
            ),
        )),
    }
}

async fn connect(target: &SshTarget, label: &str, key: PrivateKey) -> Result<SshStream, SshError> {
    let verdict: Verdict = Arc::default();
    let cipher: Arc<Mutex<String>> = Arc::default();
    let handler = HostKeyCheck {
        host: target.host.clone(),
        port: target.port,
        known_hosts_file: target.known_hosts_file.clone(),
        insecure: target.insecure_accept_any_host_key,
        verdict: verdict.clone(),
        cipher: cipher.clone(),
    };
    let config = Arc::new(client::Config {
        nodelay: true,
        preferred: Preferred {
            cipher: std::borrow::Cow::Borrowed(CIPHER_PREFERENCE),
            ..Preferred::DEFAULT
        },
        ..Default::default()
    });
    let mut handle = client::connect(config, (target.host.as_str(), target.port), handler)
        .await
        .map_err(|e| map_russh(label, "connect", &verdict, e))?;
    trace!(target = %label, "ssh handshake done");

    let hash = handle
        .best_supported_rsa_hash()
        .await
        .map_err(|e| map_russh(label, "algorithm negotiation", &verdict, e))?
        .flatten();
    let auth = handle
        .authenticate_publickey(
            target.user.clone(),
            PrivateKeyWithHashAlg::new(Arc::new(key), hash),
        )
        .await
        .map_err(|e| map_russh(label, "authentication", &verdict, e))?;
    if !auth.success() {
        let _ = handle.disconnect(Disconnect::ByApplication, "", "en").await;
        return Err(SshError::new(
            SshErrorKind::AuthFailed,
            format!(
                "{label}: server refused the key from {}",
                target.key_file.display()
            ),
        ));
    }
    let channel = handle
        .channel_open_direct_streamlocal(target.socket_path.clone())
        .await
        .map_err(|e| map_russh(label, "channel open", &verdict, e))?;
    trace!(target = %label, socket = %target.socket_path, "socket channel open");
    let cipher = cipher.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(SshStream {
        stream: channel.into_stream(),
        _handle: handle,
        label: label.to_owned(),
        cipher,
        gather: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_sets_secure_defaults() {
        let t = SshTarget::new("hv1", "root", "/k", "/kh");
        assert_eq!(t.port, 22);
        assert_eq!(t.socket_path, DEFAULT_LIBVIRT_SOCKET);
        assert_eq!(t.handshake_timeout, DEFAULT_HANDSHAKE_TIMEOUT);
        assert!(!t.insecure_accept_any_host_key);
        assert_eq!(t.label(), "ssh to root@hv1:22");
    }
}
