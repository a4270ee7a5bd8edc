//! The one error type of the transport, with its classification.
//!
//! Every failure of [`crate::dial`] is an [`SshError`] of exactly one [`SshErrorKind`].
//! Permanent kinds need an operator to change something (a key, a known_hosts entry,
//! the server's configuration); transient kinds may clear on their own (a secret not
//! mounted yet, a network blip, a daemon restarting), so the caller may retry.
//!
//! Messages never carry key material: errors raised while reading key or known_hosts
//! files keep a fixed description and drop the underlying parser error.

use std::fmt;

/// What went wrong while dialling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SshErrorKind {
    /// The server refused the client key (public key authentication failed).
    AuthFailed,
    /// The server's host key is not in the known_hosts file, or differs from the
    /// recorded one.
    HostKeyRejected,
    /// The key file or the known_hosts file does not exist (yet), or cannot be read.
    CredentialsUnavailable,
    /// The private key file exists but cannot be used: unparsable, encrypted or of an
    /// unsupported algorithm.
    BadKey,
    /// The host could not be reached, the connection broke before the channel was
    /// open, or the server could not connect the channel to the socket.
    Unreachable,
    /// The dial did not finish within the handshake timeout.
    Timeout,
    /// The SSH exchange failed for another reason (no common algorithm, bad packet).
    Protocol,
}

impl SshErrorKind {
    /// `true` for kinds that retrying cannot fix: [`SshErrorKind::AuthFailed`],
    /// [`SshErrorKind::HostKeyRejected`] and [`SshErrorKind::BadKey`].
    pub fn is_permanent(self) -> bool {
        matches!(
            self,
            SshErrorKind::AuthFailed | SshErrorKind::HostKeyRejected | SshErrorKind::BadKey
        )
    }
}

impl fmt::Display for SshErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failed dial.
///
/// The message is a lowercase fragment naming the target (`user@host:port`) and what
/// failed; [`SshError::kind`] and [`SshError::is_permanent`] tell the caller how to
/// react.
pub struct SshError {
    kind: SshErrorKind,
    message: String,
    source: Option<Source>,
}

impl SshError {
    pub(crate) fn new(kind: SshErrorKind, message: impl Into<String>) -> Self {
        SshError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// Attaches an underlying error. Only for errors that cannot contain key material
    /// (I/O and SSH transport errors).
    pub(crate) fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> SshErrorKind {
        self.kind
    }

    /// `true` when retrying cannot help until something is changed.
    pub fn is_permanent(&self) -> bool {
        self.kind.is_permanent()
    }

    /// `true` when a later retry may succeed.
    pub fn is_transient(&self) -> bool {
        !self.is_permanent()
    }
}

impl fmt::Display for SshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for SshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshError")
            .field("kind", &self.kind)
            .field("permanent", &self.is_permanent())
            .field("message", &self.message)
            .field("source", &self.source)
            .finish()
    }
}

impl std::error::Error for SshError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_the_documented_class() {
        use SshErrorKind::*;
        let table = [
            (AuthFailed, true),
            (HostKeyRejected, true),
            (BadKey, true),
            (CredentialsUnavailable, false),
            (Unreachable, false),
            (Timeout, false),
            (Protocol, false),
        ];
        for (kind, permanent) in table {
            assert_eq!(kind.is_permanent(), permanent, "{kind}");
            let e = SshError::new(kind, "x");
            assert_eq!(e.is_permanent(), permanent);
            assert_eq!(e.is_transient(), !permanent);
        }
    }

    #[test]
    fn display_and_debug_carry_message_and_kind() {
        let e = SshError::new(SshErrorKind::Timeout, "ssh to u@h:1: handshake timed out");
        assert_eq!(e.to_string(), "ssh to u@h:1: handshake timed out");
        let dbg = format!("{e:?}");
        assert!(
            dbg.contains("Timeout") && dbg.contains("permanent: false"),
            "{dbg}"
        );
    }
}
