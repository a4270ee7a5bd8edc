//! The faults a step may arm at the backend seam: their kinds, the class of
//! answer each allows, and the fake's rule that fires each.

use super::*;

/// One fault, armed just before a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultArm {
    /// `VIR_ERR_OPERATION_TIMEOUT` on the k-th call: a busy driver.
    Busy(u64),
    /// `VIR_ERR_SYSTEM_ERROR` on the k-th call.
    SystemError(u64),
    /// `VIR_ERR_INTERNAL_ERROR` on the k-th call.
    Internal(u64),
    /// `VIR_ERR_ACCESS_DENIED` on the k-th call.
    Denied(u64),
    /// `VIR_ERR_INVALID_ARG` on the k-th call.
    InvalidArg(u64),
    /// `VIR_ERR_NO_DOMAIN` on the first call of this procedure.
    NoDomain(Procedure),
    /// `VIR_ERR_NO_STORAGE_VOL` on the first call of this procedure.
    NoVolume(Procedure),
    /// The k-th call never answers.
    Hang(u64),
    /// The connection drops under the k-th call.
    Drop(u64),
    /// The k-th call takes effect, then the connection drops before its reply.
    LostReply(u64),
    /// The daemon restarts: connections dialled before are never answered again.
    DaemonRestart,
    /// Every call of the step gets this many milliseconds of round trip.
    Latency(u64),
    /// Part of an instance goes out of band before the step: its domain
    /// (destroyed and undefined) or its volumes (deleted).
    Vanish(Part, usize),
}

/// What of an instance a [`FaultArm::Vanish`] removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Domain,
    Volumes,
}

/// The fault kinds, in the order they are reported.
pub const KINDS: [&str; 13] = [
    "busy", "syserr", "internal", "denied", "invalid", "nodom", "novol", "hang", "drop", "lost",
    "restart", "latency", "vanish",
];

/// What the contract lets a fault cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A passing cause (busy, system or internal error, hang, dropped
    /// connection, lost reply, restarted daemon): Transient or success.
    Transient,
    /// The backend says the object is missing: NotFound-consistent results
    /// (Transient inside Create).
    Gone,
    /// A lasting refusal: Permanent or success.
    Permanent,
    /// Latency within every limit, or a part removed out of band before the
    /// step: exactly what the step gives without a fault on the host as it is.
    Benign,
}

impl FaultArm {
    pub fn kind(&self) -> &'static str {
        match self {
            FaultArm::Busy(_) => "busy",
            FaultArm::SystemError(_) => "syserr",
            FaultArm::Internal(_) => "internal",
            FaultArm::Denied(_) => "denied",
            FaultArm::InvalidArg(_) => "invalid",
            FaultArm::NoDomain(_) => "nodom",
            FaultArm::NoVolume(_) => "novol",
            FaultArm::Hang(_) => "hang",
            FaultArm::Drop(_) => "drop",
            FaultArm::LostReply(_) => "lost",
            FaultArm::DaemonRestart => "restart",
            FaultArm::Latency(_) => "latency",
            FaultArm::Vanish(..) => "vanish",
        }
    }

    pub fn class(&self) -> Class {
        match self {
            FaultArm::Busy(_)
            | FaultArm::SystemError(_)
            | FaultArm::Internal(_)
            | FaultArm::Hang(_)
            | FaultArm::Drop(_)
            | FaultArm::LostReply(_)
            | FaultArm::DaemonRestart => Class::Transient,
            FaultArm::NoDomain(_) | FaultArm::NoVolume(_) => Class::Gone,
            FaultArm::Denied(_) | FaultArm::InvalidArg(_) => Class::Permanent,
            FaultArm::Latency(_) | FaultArm::Vanish(..) => Class::Benign,
        }
    }

    /// Whether the fault is a libvirt error answered to one call.
    pub(super) fn is_error(&self) -> bool {
        matches!(
            self,
            FaultArm::Busy(_)
                | FaultArm::SystemError(_)
                | FaultArm::Internal(_)
                | FaultArm::Denied(_)
                | FaultArm::InvalidArg(_)
                | FaultArm::NoDomain(_)
                | FaultArm::NoVolume(_)
        )
    }

    /// The rule that arms it at the fake's seam (none for a restart or latency).
    pub(super) fn rule(&self) -> Option<FaultRule> {
        let err = |c, d, m: &str| Fault::Error(VirError::new(c, d, m));
        let nth = |k: u64, f| Some(FaultRule::nth_call(k, f).once());
        match self {
            FaultArm::Busy(k) => nth(*k, Fault::busy()),
            FaultArm::SystemError(k) => nth(
                *k,
                err(
                    ErrorCode::SystemError,
                    ErrorDomain::Qemu,
                    "Unable to read from monitor: Connection reset by peer",
                ),
            ),
            FaultArm::Internal(k) => nth(
                *k,
                err(
                    ErrorCode::InternalError,
                    ErrorDomain::Qemu,
                    "unexpected error in the driver",
                ),
            ),
            FaultArm::Denied(k) => nth(*k, Fault::access_denied()),
            FaultArm::InvalidArg(k) => nth(
                *k,
                err(
                    ErrorCode::InvalidArg,
                    ErrorDomain::None,
                    "invalid argument in flags",
                ),
            ),
            FaultArm::NoDomain(p) => Some(
                FaultRule::new(
                    libvirt_fake::Trigger::NthCallOf(*p, 1),
                    Fault::no_domain("x"),
                )
                .once(),
            ),
            FaultArm::NoVolume(p) => Some(
                FaultRule::new(
                    libvirt_fake::Trigger::NthCallOf(*p, 1),
                    Fault::no_storage_vol("x"),
                )
                .once(),
            ),
            FaultArm::Hang(k) => nth(*k, Fault::Hang),
            FaultArm::Drop(k) => nth(*k, Fault::DropConnection),
            FaultArm::LostReply(k) => nth(*k, Fault::LoseReply),
            FaultArm::DaemonRestart | FaultArm::Latency(_) | FaultArm::Vanish(..) => None,
        }
    }
}

impl fmt::Display for FaultArm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultArm::Busy(k)
            | FaultArm::SystemError(k)
            | FaultArm::Internal(k)
            | FaultArm::Denied(k)
            | FaultArm::InvalidArg(k)
            | FaultArm::Hang(k)
            | FaultArm::Drop(k)
            | FaultArm::LostReply(k) => write!(f, "{}@{k}", self.kind()),
            FaultArm::NoDomain(p) | FaultArm::NoVolume(p) => {
                write!(f, "{}:{}", self.kind(), p.api_name())
            }
            FaultArm::DaemonRestart => f.write_str("restart"),
            FaultArm::Latency(ms) => write!(f, "latency={ms}"),
            FaultArm::Vanish(Part::Domain, i) => write!(f, "vanish:dom:{i}"),
            FaultArm::Vanish(Part::Volumes, i) => write!(f, "vanish:vol:{i}"),
        }
    }
}
