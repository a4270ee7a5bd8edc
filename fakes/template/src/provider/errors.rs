//! The one error mapping: every failure a step can meet, classified into the
//! contract's four kinds.

use std::fmt;

use conformance::{Error, ErrorKind, Interrupted, Op, Quota};

use crate::backend::BackendError;

/// Why a step did not produce its result: the backend said no, or the call was
/// interrupted by its context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The backend answered with an error.
    Backend(BackendError),
    /// The context's deadline passed or its token fired.
    Interrupted(Interrupted),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Backend(e) => e.fmt(f),
            Failure::Interrupted(i) => i.fmt(f),
        }
    }
}

impl std::error::Error for Failure {}

impl From<BackendError> for Failure {
    fn from(e: BackendError) -> Self {
        Failure::Backend(e)
    }
}

impl From<Interrupted> for Failure {
    fn from(i: Interrupted) -> Self {
        Failure::Interrupted(i)
    }
}

impl Failure {
    pub(crate) fn is_no_object(&self) -> bool {
        matches!(self, Failure::Backend(BackendError::NoObject(_)))
    }

    /// A missing object or a missing volume store: both mean "already gone" to Delete.
    pub(super) fn is_gone(&self) -> bool {
        matches!(
            self,
            Failure::Backend(BackendError::NoObject(_) | BackendError::NoContainer(_))
        )
    }
}

/// Maps a failure onto exactly one of the contract's four kinds.
///
/// This is the provider's only classification: a missing object is NotFound, except
/// inside Create where it means a dependency vanished mid-way (Transient); bad
/// credentials, a site identity other than the trusted one (a changed host key),
/// refusals and unreadable marks are Permanent; a full volume store is
/// QuotaExceeded; everything else (busy, closed, refused connections, missing
/// credential files, deadlines, cancellation) is Transient.
pub fn classify(provider: &str, op: Op, message: String, failure: Failure) -> Error {
    Error::new(provider, op, kind_of(op, &failure), message).with_source(failure)
}

/// The kind [`classify`] gives `failure` inside `op`.
pub(crate) fn kind_of(op: Op, failure: &Failure) -> ErrorKind {
    match failure {
        Failure::Interrupted(_) => ErrorKind::Transient,
        Failure::Backend(b) => match b {
            BackendError::NoObject(_) if op == Op::Create => ErrorKind::Transient,
            BackendError::NoObject(_) => ErrorKind::NotFound,
            BackendError::Busy(_)
            | BackendError::Exists(_)
            | BackendError::Closed
            | BackendError::Refused
            | BackendError::CredentialsMissing(_) => ErrorKind::Transient,
            BackendError::Denied(_)
            | BackendError::Running(_)
            | BackendError::AuthFailed
            | BackendError::HostKeyRejected
            | BackendError::Unreadable(_)
            | BackendError::NoContainer(_) => ErrorKind::Permanent,
            BackendError::NoSpace {
                what,
                available,
                needed,
            } => ErrorKind::QuotaExceeded(Quota {
                what: what.clone(),
                available: *available,
                needed: *needed,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(Op::Get, Failure::Backend(BackendError::NoObject("x".into())), "NotFound")]
    #[case(Op::Create, Failure::Backend(BackendError::NoObject("x".into())), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::Busy("x".into())), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::Closed), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::Refused), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::CredentialsMissing("f".into())), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::AuthFailed), "Permanent")]
    #[case(
        Op::Create,
        Failure::Backend(BackendError::HostKeyRejected),
        "Permanent"
    )]
    #[case(Op::Delete, Failure::Backend(BackendError::Denied("x".into())), "Permanent")]
    #[case(Op::Create, Failure::Backend(BackendError::NoContainer("s".into())), "Permanent")]
    #[case(Op::Create, Failure::Backend(BackendError::NoSpace { what: "s".into(), available: 1, needed: 2 }), "QuotaExceeded")]
    #[case(
        Op::Get,
        Failure::Interrupted(Interrupted::DeadlineExceeded),
        "Transient"
    )]
    #[case(Op::Delete, Failure::Interrupted(Interrupted::Cancelled), "Transient")]
    fn classifies_every_failure_into_one_kind(
        #[case] op: Op,
        #[case] f: Failure,
        #[case] kind: &str,
    ) {
        let e = classify("template", op, "doing it".into(), f);
        assert_eq!(e.kind().name(), kind);
        assert_eq!(e.provider(), "template");
        assert_eq!(e.op(), op);
        assert!(std::error::Error::source(&e).is_some());
    }
}
