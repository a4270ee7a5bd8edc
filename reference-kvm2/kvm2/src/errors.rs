//! Failures inside kvm2 and the one function that classifies them into the
//! contract's four kinds.

use std::fmt;

use conformance::{Error, ErrorKind, Interrupted, Op, Quota};
use libvirt_wire::ErrorCode;

use crate::dialer::DialError;

/// What went wrong, before classification.
#[derive(Debug)]
pub enum Failure {
    /// A libvirt call failed.
    Rpc {
        /// The call, e.g. `DomainLookupByName`.
        call: &'static str,
        /// The RPC client's error.
        err: libvirt_rpc::Error,
    },
    /// Opening a connection failed.
    Dial(DialError),
    /// The context's deadline passed or its token fired.
    Interrupted(Interrupted),
    /// The request or configuration is unusable, or a guard refused.
    Refused(String),
    /// The instance does not exist (or is not kvm2's).
    Missing(String),
    /// Capacity is short.
    Quota(Quota),
    /// A passing condition (no address yet, overall deadline).
    NotYet(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Rpc { call, err } => write!(f, "{call}: {err}"),
            Failure::Dial(e) => write!(f, "{e}"),
            Failure::Interrupted(i) => write!(f, "{i}"),
            Failure::Refused(m) | Failure::Missing(m) | Failure::NotYet(m) => f.write_str(m),
            Failure::Quota(q) => write!(
                f,
                "{}: {} bytes available, {} needed",
                q.what, q.available, q.needed
            ),
        }
    }
}

impl Failure {
    /// The libvirt error code, when libvirt answered with an error.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Failure::Rpc { err, .. } => err.as_remote().map(|r| r.code),
            _ => None,
        }
    }

    /// Whether libvirt answered with `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code() == Some(code)
    }

    /// Whether the connection under the call is gone.
    pub fn connection_lost(&self) -> bool {
        matches!(self, Failure::Rpc { err, .. } if err.is_closed())
    }
}

/// Classifies a failure of operation `op` into one of the contract's kinds.
///
/// - no domain / no storage volume → NotFound, but Transient inside Create;
/// - no storage pool, XML error (both libvirt's semantic `XML_ERROR` and the
///   parser's syntax `XML_DETAIL`), no support, invalid argument,
///   authentication failed, access denied → Permanent;
/// - SSH authentication failure, rejected host key, unusable key → Permanent;
///   missing key or known_hosts file → Transient (the secret is not mounted yet);
/// - cancellation, deadlines, network errors, EOF and anything else → Transient.
pub fn classify(op: Op, f: &Failure) -> ErrorKind {
    match f {
        Failure::Rpc { err, .. } => match err.as_remote().map(|r| r.code) {
            Some(ErrorCode::NoDomain | ErrorCode::NoStorageVol) => {
                if op == Op::Create {
                    ErrorKind::Transient
                } else {
                    ErrorKind::NotFound
                }
            }
            Some(
                ErrorCode::NoStoragePool
                | ErrorCode::XmlError
                | ErrorCode::XmlDetail
                | ErrorCode::NoSupport
                | ErrorCode::InvalidArg
                | ErrorCode::AuthFailed
                | ErrorCode::AccessDenied,
            ) => ErrorKind::Permanent,
            _ => ErrorKind::Transient,
        },
        Failure::Dial(d) => match d {
            DialError::AuthFailed(_)
            | DialError::HostKeyRejected(_)
            | DialError::BadCredentials(_) => ErrorKind::Permanent,
            _ => ErrorKind::Transient,
        },
        Failure::Interrupted(_) | Failure::NotYet(_) => ErrorKind::Transient,
        Failure::Refused(_) => ErrorKind::Permanent,
        Failure::Missing(_) if op == Op::Create => ErrorKind::Transient,
        Failure::Missing(_) => ErrorKind::NotFound,
        Failure::Quota(q) => ErrorKind::QuotaExceeded(q.clone()),
    }
}

/// The contract error for a failure: provider name, operation, kind, and the
/// backend error in the source chain.
///
/// A failure with a cause (a libvirt call's error, a dial error, an
/// interruption) gets kvm2's own sentence as its message and the cause as its
/// source, never the cause's text in both: `Error::chain` prints each once.
pub fn to_error(provider: &str, op: Op, f: Failure) -> Error {
    let kind = classify(op, &f);
    match f {
        Failure::Rpc { call, err } => {
            Error::new(provider, op, kind, format!("{call} failed")).with_source(err)
        }
        Failure::Dial(d) => {
            Error::new(provider, op, kind, "connecting to the host failed").with_source(d)
        }
        Failure::Interrupted(i) => Error::new(provider, op, kind, "interrupted").with_source(i),
        f => Error::new(provider, op, kind, f.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(Op::Get, Failure::Missing("x".into()), "NotFound")]
    #[case(Op::Create, Failure::Missing("x".into()), "Transient")]
    #[case(Op::Create, Failure::Refused("x".into()), "Permanent")]
    #[case(Op::Get, Failure::Interrupted(Interrupted::Cancelled), "Transient")]
    #[case(Op::Get, Failure::Dial(DialError::Timeout), "Transient")]
    #[case(Op::Get, Failure::Dial(DialError::Unreachable("refused".into())), "Transient")]
    #[case(Op::Get, Failure::Dial(DialError::CredentialsUnavailable("no key".into())), "Transient")]
    #[case(Op::Get, Failure::Dial(DialError::AuthFailed("denied".into())), "Permanent")]
    #[case(Op::Get, Failure::Dial(DialError::HostKeyRejected("unknown".into())), "Permanent")]
    #[case(Op::Get, Failure::Dial(DialError::BadCredentials("parse".into())), "Permanent")]
    #[case(Op::Create, Failure::NotYet("no address".into()), "Transient")]
    fn kinds(#[case] op: Op, #[case] f: Failure, #[case] want: &str) {
        assert_eq!(classify(op, &f).name(), want);
        let shown = f.to_string();
        let e = to_error("kvm2-home", op, f);
        let chain = e.chain();
        assert_eq!(
            chain.matches(&shown).count(),
            1,
            "{shown:?} once in {chain:?}"
        );
        assert_eq!(e.provider(), "kvm2-home");
        assert_eq!(e.kind().name(), want);
    }

    /// Real libvirt errors, produced by the fake over the wire.
    #[tokio::test]
    async fn libvirt_codes() {
        use libvirt_fake::{FakeLibvirt, Fault, FaultRule};
        use libvirt_wire::Procedure;
        let fake = FakeLibvirt::new();
        let (client, conn) = libvirt_rpc::Config::default().attach(fake.duplex());
        tokio::spawn(conn);
        client.open("qemu:///system").await.unwrap();
        let fail = |call, err| Failure::Rpc { call, err };
        let no_dom = client.domain_lookup_by_name("nope").await.unwrap_err();
        let f = fail("DomainLookupByName", no_dom);
        assert_eq!(classify(Op::Get, &f).name(), "NotFound");
        let again = client.domain_lookup_by_name("nope").await.unwrap_err();
        let text = to_error("kvm2", Op::Get, fail("DomainLookupByName", again)).chain();
        assert_eq!(
            text.matches("no domain with matching name").count(),
            1,
            "the libvirt error is printed once: {text}"
        );
        assert!(
            text.starts_with("kvm2: get: DomainLookupByName failed: "),
            "{text}"
        );
        assert_eq!(classify(Op::Delete, &f).name(), "NotFound");
        assert_eq!(classify(Op::Create, &f).name(), "Transient");
        let no_pool = client
            .storage_pool_lookup_by_name("nope")
            .await
            .unwrap_err();
        assert_eq!(
            classify(Op::Create, &fail("StoragePoolLookupByName", no_pool)).name(),
            "Permanent"
        );
        fake.faults()
            .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::busy()).once());
        let busy = client.connect_get_hostname().await.unwrap_err();
        assert_eq!(
            classify(Op::Get, &fail("ConnectGetHostname", busy)).name(),
            "Transient"
        );
        fake.faults()
            .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::access_denied()).once());
        let denied = client.connect_get_hostname().await.unwrap_err();
        assert_eq!(
            classify(Op::Get, &fail("ConnectGetHostname", denied)).name(),
            "Permanent"
        );
        // A document libvirt's parser rejects: the same bytes never succeed.
        let bad_xml = client.domain_define_xml("<domain").await.unwrap_err();
        assert_eq!(
            classify(Op::Create, &fail("DomainDefineXML", bad_xml)).name(),
            "Permanent"
        );
        fake.faults()
            .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::DropConnection).once());
        let dropped = client.connect_get_hostname().await.unwrap_err();
        let f = fail("ConnectGetHostname", dropped);
        assert!(f.connection_lost());
        assert_eq!(classify(Op::Get, &f).name(), "Transient");
    }
}
