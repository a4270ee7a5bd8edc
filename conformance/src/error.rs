//! The one error type every provider returns: the configured provider name, the
//! operation, and exactly one of four kinds. Backend detail stays in the source chain.

use std::fmt;

use serde::Serialize;

/// The operation an error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Op {
    /// `Provider::create`.
    Create,
    /// `Provider::get`.
    Get,
    /// `Provider::delete`.
    Delete,
    /// `Provider::list_by_tag`.
    ListByTag,
    /// `Checker::check`.
    Check,
}

impl Op {
    /// The operation's name as it appears in messages, spans and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Get => "get",
            Op::Delete => "delete",
            Op::ListByTag => "list_by_tag",
            Op::Check => "check",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is short when Create is refused for lack of capacity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Quota {
    /// What is short, e.g. `storage pool default on host-a`.
    pub what: String,
    /// What is available, in bytes (or the resource's own unit, named in `what`).
    pub available: u64,
    /// What the request needs, in the same unit.
    pub needed: u64,
}

/// The contract's error kinds. There are exactly four.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum ErrorKind {
    /// The instance does not exist. Never returned by Create.
    NotFound,
    /// Retrying may succeed: timeouts, cancellation, network trouble, a busy backend.
    Transient,
    /// Retrying the same call will fail the same way: bad input, a guard, bad config.
    Permanent,
    /// Create was refused before anything was made because capacity is short.
    QuotaExceeded(Quota),
}

impl ErrorKind {
    /// The kind's name without its fields.
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::NotFound => "NotFound",
            ErrorKind::Transient => "Transient",
            ErrorKind::Permanent => "Permanent",
            ErrorKind::QuotaExceeded(_) => "QuotaExceeded",
        }
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error from a provider.
///
/// Its message reads "`<provider>`: `<op>`: `<message>`". The message and the source
/// chain never carry secrets such as cloud-init data or key material.
pub struct Error {
    provider: String,
    op: Op,
    kind: ErrorKind,
    message: String,
    source: Option<Source>,
}

impl Error {
    /// A new error of `kind`.
    pub fn new(
        provider: impl Into<String>,
        op: Op,
        kind: ErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Error {
            provider: provider.into(),
            op,
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// Shorthand for a [`ErrorKind::NotFound`] error.
    pub fn not_found(provider: &str, op: Op, message: impl Into<String>) -> Self {
        Error::new(provider, op, ErrorKind::NotFound, message)
    }

    /// Shorthand for a [`ErrorKind::Transient`] error.
    pub fn transient(provider: &str, op: Op, message: impl Into<String>) -> Self {
        Error::new(provider, op, ErrorKind::Transient, message)
    }

    /// Shorthand for a [`ErrorKind::Permanent`] error.
    pub fn permanent(provider: &str, op: Op, message: impl Into<String>) -> Self {
        Error::new(provider, op, ErrorKind::Permanent, message)
    }

    /// Shorthand for a [`ErrorKind::QuotaExceeded`] error.
    pub fn quota(provider: &str, op: Op, quota: Quota) -> Self {
        let message = format!(
            "{}: {} available, {} needed",
            quota.what, quota.available, quota.needed
        );
        Error::new(provider, op, ErrorKind::QuotaExceeded(quota), message)
    }

    /// Attaches the backend error that caused this one.
    pub fn with_source(mut self, source: impl Into<Source>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The configured name of the provider that returned it.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The operation.
    pub fn op(&self) -> Op {
        self.op
    }

    /// The kind.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The message without provider and operation.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the kind is NotFound.
    pub fn is_not_found(&self) -> bool {
        matches!(self.kind, ErrorKind::NotFound)
    }

    /// Whether the kind is Transient.
    pub fn is_transient(&self) -> bool {
        matches!(self.kind, ErrorKind::Transient)
    }

    /// Whether the kind is Permanent.
    pub fn is_permanent(&self) -> bool {
        matches!(self.kind, ErrorKind::Permanent)
    }

    /// The quota fields, when the kind is QuotaExceeded.
    pub fn quota_fields(&self) -> Option<&Quota> {
        match &self.kind {
            ErrorKind::QuotaExceeded(q) => Some(q),
            _ => None,
        }
    }

    /// The message and every source below it, joined by ": ".
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut next = std::error::Error::source(self);
        while let Some(e) = next {
            out.push_str(": ");
            out.push_str(&e.to_string());
            next = e.source();
        }
        out
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.provider, self.op, self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("provider", &self.provider)
            .field("op", &self.op)
            .field("kind", &self.kind)
            .field("message", &self.message);
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
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
    fn display_names_provider_and_operation() {
        let e = Error::permanent("kvm2", Op::Create, "unknown placement \"mars\"")
            .with_source(std::io::Error::other("boom"));
        assert_eq!(e.to_string(), "kvm2: create: unknown placement \"mars\"");
        assert_eq!(e.chain(), "kvm2: create: unknown placement \"mars\": boom");
        assert!(e.is_permanent());
    }

    #[test]
    fn quota_carries_structured_fields() {
        let q = Quota {
            what: "pool default".into(),
            available: 10,
            needed: 20,
        };
        let e = Error::quota("kvm2", Op::Create, q.clone());
        assert_eq!(e.quota_fields(), Some(&q));
        assert_eq!(e.kind().name(), "QuotaExceeded");
    }
}
