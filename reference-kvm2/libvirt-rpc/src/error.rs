//! `Error`: the one opaque error of the client, with predicates.
//!
//! Callers ask questions (`is_closed`, `is_timeout`, `as_remote`) rather than
//! matching variants, so the set of causes can grow without breaking them.

use std::fmt;

use libvirt_wire::{Procedure, RemoteError, WireError};

/// An error from the libvirt RPC client.
pub struct Error(Box<Inner>);

struct Inner {
    kind: Kind,
    procedure: Option<Procedure>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The connection is gone; the source (a `Cause`) says why.
    Closed,
    /// The call's deadline passed.
    Timeout,
    /// The server sent no keepalive answer in time: the connection is dead.
    KeepaliveTimeout,
    /// Reading or writing the transport failed.
    Io,
    /// The peer broke the protocol; the connection is dropped.
    Protocol,
    /// A reply payload did not decode. The framing is intact, so only this
    /// call fails and the connection stays open.
    BadReply,
    /// libvirt answered with an error.
    Remote,
    /// The request could not be encoded (for example, it is too large).
    Encode,
    /// The data source of an upload failed.
    Source,
}

/// Why a connection closed, attached to the errors of the calls it failed.
#[derive(Debug, Clone)]
pub(crate) struct Cause {
    kind: Kind,
    message: String,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Cause {}

impl Error {
    pub(crate) fn new(kind: Kind) -> Error {
        Error(Box::new(Inner {
            kind,
            procedure: None,
            source: None,
        }))
    }

    pub(crate) fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        self.0.source = Some(source.into());
        self
    }

    pub(crate) fn with_procedure(mut self, procedure: Procedure) -> Error {
        self.0.procedure = Some(procedure);
        self
    }

    /// A "connection closed" error for a call, remembering what closed it.
    pub(crate) fn closed_by(cause: &Cause) -> Error {
        Error::new(Kind::Closed).with_source(cause.clone())
    }

    /// A "connection closed" error with a plain reason.
    pub(crate) fn closed(reason: &str) -> Error {
        Error::closed_by(&Cause {
            kind: Kind::Closed,
            message: reason.to_owned(),
        })
    }

    /// The cause to hand to calls failed by this connection-level error.
    pub(crate) fn cause(&self) -> Cause {
        if self.0.kind == Kind::Closed
            && let Some(cause) = self
                .0
                .source
                .as_ref()
                .and_then(|s| s.downcast_ref::<Cause>())
        {
            return cause.clone();
        }
        Cause {
            kind: self.0.kind,
            message: self.to_string(),
        }
    }

    /// An error saying that the data source of an upload failed with
    /// `source` (what [`Error::is_source`] recognises), for code that feeds
    /// an upload and fails beside it.
    pub fn from_source(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        Error::new(Kind::Source).with_source(source)
    }

    pub(crate) fn timeout() -> Error {
        Error::new(Kind::Timeout)
    }

    pub(crate) fn protocol(reason: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        Error::new(Kind::Protocol).with_source(reason)
    }

    pub(crate) fn bad_reply(e: WireError) -> Error {
        Error::new(Kind::BadReply).with_source(e)
    }

    pub(crate) fn remote(e: RemoteError) -> Error {
        Error::new(Kind::Remote).with_source(e)
    }

    fn closed_cause(&self) -> Option<Kind> {
        match self.0.kind {
            Kind::Closed => self
                .0
                .source
                .as_ref()
                .and_then(|s| s.downcast_ref::<Cause>())
                .map(|c| c.kind),
            _ => None,
        }
    }

    /// The connection is closed or dead; a new one is needed.
    pub fn is_closed(&self) -> bool {
        matches!(
            self.0.kind,
            Kind::Closed | Kind::KeepaliveTimeout | Kind::Io | Kind::Protocol
        )
    }

    /// The call's deadline passed. The connection itself may still be fine.
    pub fn is_timeout(&self) -> bool {
        self.0.kind == Kind::Timeout
    }

    /// The connection was declared dead because keepalive PINGs went unanswered.
    pub fn is_keepalive_timeout(&self) -> bool {
        self.0.kind == Kind::KeepaliveTimeout || self.closed_cause() == Some(Kind::KeepaliveTimeout)
    }

    /// The peer broke the protocol: bad framing or an unknown program (which
    /// closes the connection), or a reply that does not decode (which fails
    /// only that call).
    pub fn is_protocol(&self) -> bool {
        matches!(self.0.kind, Kind::Protocol | Kind::BadReply)
            || self.closed_cause() == Some(Kind::Protocol)
    }

    /// Transport I/O failed (directly, or it is what closed the connection).
    pub fn is_io(&self) -> bool {
        self.0.kind == Kind::Io || self.closed_cause() == Some(Kind::Io)
    }

    /// libvirt answered with an error; see [`Error::as_remote`].
    pub fn is_remote(&self) -> bool {
        self.0.kind == Kind::Remote
    }

    /// The request could not be encoded (too large for the protocol).
    pub fn is_encode(&self) -> bool {
        self.0.kind == Kind::Encode
    }

    /// Reading the data to upload failed (the caller's source, not libvirt).
    pub fn is_source(&self) -> bool {
        self.0.kind == Kind::Source
    }

    /// The libvirt error, when libvirt answered with one.
    pub fn as_remote(&self) -> Option<&RemoteError> {
        match self.0.kind {
            Kind::Remote => self.0.source.as_ref()?.downcast_ref(),
            _ => None,
        }
    }

    /// The procedure the failed call was for, when known.
    pub fn procedure(&self) -> Option<Procedure> {
        self.0.procedure
    }

    fn description(&self) -> &'static str {
        match self.0.kind {
            Kind::Closed => "connection closed",
            Kind::Timeout => "deadline exceeded",
            Kind::KeepaliveTimeout => "keepalive timeout: no answer from the server",
            Kind::Io => "transport i/o failed",
            Kind::Protocol => "protocol violation",
            Kind::BadReply => "malformed reply",
            Kind::Remote => "libvirt error",
            Kind::Encode => "cannot encode request",
            Kind::Source => "upload source failed",
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.0.kind);
        if let Some(p) = self.0.procedure {
            d.field("procedure", &p);
        }
        if let Some(s) = &self.0.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())?;
        if let Some(p) = self.0.procedure {
            write!(f, " in {p}")?;
        }
        if let Some(s) = &self.0.source {
            write!(f, ": {s}")?;
        }
        Ok(())
    }
}

/// The cause's own text is already part of this error's text (`Display` shows
/// it, so a plain `{err}` tells the whole story); `source` therefore hands on
/// what lies *below* the cause, and a walk down the chain prints each text once.
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_ref().and_then(|s| s.source())
    }
}

/// The result type of the client.
pub type Result<T, E = Error> = std::result::Result<T, E>;
