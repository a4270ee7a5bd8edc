//! The values that cross the provider contract: requests, IDs, instances, listings and
//! health reports, and the validation rules every provider applies to a request.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::time::SystemTime;

use serde::{Serialize, Serializer};

/// The opaque, stable ID a provider gives an instance.
///
/// It round-trips: the ID that Create returned names the same instance in Get and
/// Delete, for any provider instance over the same backend.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ProviderId(String);

impl ProviderId {
    /// Wraps any string; providers reject malformed IDs when they are used.
    pub fn new(id: impl Into<String>) -> Self {
        ProviderId(id.into())
    }

    /// The ID as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ProviderId {
    fn from(s: &str) -> Self {
        ProviderId(s.to_owned())
    }
}

impl From<String> for ProviderId {
    fn from(s: String) -> Self {
        ProviderId(s)
    }
}

/// The cloud-init payload of a request. It is secret.
///
/// `Debug`, `Display` and serialisation print a redaction marker and the length,
/// never the bytes; only [`CloudInit::expose`] gives them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CloudInit(String);

impl CloudInit {
    /// Wraps a payload.
    pub fn new(payload: impl Into<String>) -> Self {
        CloudInit(payload.into())
    }

    /// The payload, for the one place that must write it to the backend.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for CloudInit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CloudInit(<redacted {} bytes>)", self.0.len())
    }
}

impl fmt::Display for CloudInit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<redacted {} bytes>", self.0.len())
    }
}

impl Serialize for CloudInit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("<redacted {} bytes>", self.0.len()))
    }
}

/// What Create is asked to make.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreateRequest {
    /// The idempotency key; see [`validate_name`].
    pub name: String,
    /// The owner's id, recorded on the instance; see [`validate_uid`].
    pub uid: String,
    /// The garbage-collection mark, recorded on the instance; see [`validate_tag`].
    pub tag: String,
    /// A zone the provider's configuration maps to a location.
    pub placement: String,
    /// An image name from the provider's configuration; `None` means its default.
    pub image: Option<String>,
    /// The secret cloud-init user data.
    pub cloud_init: CloudInit,
}

/// Longest instance name: 63 characters leaves room for volume suffixes.
pub const MAX_NAME_LEN: usize = 63;
/// Longest uid.
pub const MAX_UID_LEN: usize = 128;
/// Longest tag.
pub const MAX_TAG_LEN: usize = 63;

/// A request field that breaks the contract's validation rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidField {
    /// The field name (`name`, `uid`, `tag`, `placement`).
    pub field: &'static str,
    /// What is wrong with it, as a lowercase fragment.
    pub problem: String,
}

impl fmt::Display for InvalidField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.field, self.problem)
    }
}

impl std::error::Error for InvalidField {}

fn invalid(field: &'static str, problem: impl Into<String>) -> InvalidField {
    InvalidField {
        field,
        problem: problem.into(),
    }
}

/// Checks an instance name: lowercase letters, digits and `-`, starting with a
/// letter, at most [`MAX_NAME_LEN`] characters.
pub fn validate_name(name: &str) -> Result<(), InvalidField> {
    label("name", name, MAX_NAME_LEN)
}

/// Checks a tag: the same alphabet as a name, at most [`MAX_TAG_LEN`] characters.
pub fn validate_tag(tag: &str) -> Result<(), InvalidField> {
    label("tag", tag, MAX_TAG_LEN)
}

fn label(field: &'static str, v: &str, max: usize) -> Result<(), InvalidField> {
    if v.is_empty() {
        return Err(invalid(field, "is empty"));
    }
    if v.len() > max {
        return Err(invalid(
            field,
            format!("is {} bytes, longer than {max}", v.len()),
        ));
    }
    if !v.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(invalid(field, "must start with a lowercase letter"));
    }
    if let Some(c) = v
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(invalid(
            field,
            format!("contains {c:?}; only a-z, 0-9 and '-' are allowed"),
        ));
    }
    Ok(())
}

/// Checks a uid: 1 to [`MAX_UID_LEN`] characters of ASCII letters, digits, `-`, `_`
/// and `.`, so it is safe in XML attributes, paths and labels.
pub fn validate_uid(uid: &str) -> Result<(), InvalidField> {
    if uid.is_empty() {
        return Err(invalid("uid", "is empty"));
    }
    if uid.len() > MAX_UID_LEN {
        return Err(invalid(
            "uid",
            format!("is {} bytes, longer than {MAX_UID_LEN}", uid.len()),
        ));
    }
    if let Some(c) = uid
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(invalid(
            "uid",
            format!("contains {c:?}; only letters, digits, '-', '_' and '.' are allowed"),
        ));
    }
    Ok(())
}

/// Checks name, uid and tag of a request (placement is the provider's to check).
pub fn validate_request(req: &CreateRequest) -> Result<(), InvalidField> {
    validate_name(&req.name)?;
    validate_uid(&req.uid)?;
    validate_tag(&req.tag)
}

/// The lifecycle state of an instance as the contract names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum State {
    /// Being made, booting, or running without a usable address yet.
    Provisioning,
    /// Running with a usable IPv4 address (unless the provider's `ip-source` is `none`).
    Running,
    /// Anything else: shut off, paused, crashed, suspended, unknown.
    Stopped,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One instance as a provider reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Instance {
    /// Its ID.
    pub id: ProviderId,
    /// The name it was created with.
    pub name: String,
    /// Its state.
    pub state: State,
    /// A usable IPv4 address: not loopback, link-local or unspecified.
    pub ipv4: Option<Ipv4Addr>,
    /// The uid recorded at create (empty when the backend holds none).
    pub uid: String,
    /// The tag recorded at create.
    pub tag: String,
    /// When it was created, as recorded by the provider or reported by the backend.
    pub created_at: Option<SystemTime>,
}

/// Whether an address may be reported as an instance's IPv4.
pub fn is_usable_ipv4(ip: Ipv4Addr) -> bool {
    !(ip.is_loopback() || ip.is_link_local() || ip.is_unspecified() || ip.is_broadcast())
}

/// A location a listing could not read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnreachableLocation {
    /// The location's configured name.
    pub location: String,
    /// Why, as a lowercase fragment.
    pub reason: String,
}

/// The result of ListByTag.
///
/// With `list-partial=fail-whole`, `unreachable` is always empty: the call fails
/// instead.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// Instances carrying the tag, locations in configuration order.
    pub instances: Vec<Instance>,
    /// Locations that could not be read.
    pub unreachable: Vec<UnreachableLocation>,
}

/// Why a location is or is not ready.
///
/// The shared vocabulary is closed; a provider adds its own reasons through
/// [`Checker::extra_reasons`](crate::Checker::extra_reasons).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub enum HealthReason {
    /// The location answered and is usable.
    Ready,
    /// The location could not be reached.
    Unreachable,
    /// The location refused the credentials.
    AuthFailed,
    /// The location's host key was unknown or did not match.
    HostKeyRejected,
    /// The location did not answer in time.
    Timeout,
    /// The credential files are not there (yet).
    CredentialsUnavailable,
    /// A reason the provider declares itself.
    Other(String),
}

impl HealthReason {
    /// The shared reasons every provider may use.
    pub const SHARED: [&'static str; 6] = [
        "Ready",
        "Unreachable",
        "AuthFailed",
        "HostKeyRejected",
        "Timeout",
        "CredentialsUnavailable",
    ];

    /// The reason's name.
    pub fn as_str(&self) -> &str {
        match self {
            HealthReason::Ready => "Ready",
            HealthReason::Unreachable => "Unreachable",
            HealthReason::AuthFailed => "AuthFailed",
            HealthReason::HostKeyRejected => "HostKeyRejected",
            HealthReason::Timeout => "Timeout",
            HealthReason::CredentialsUnavailable => "CredentialsUnavailable",
            HealthReason::Other(s) => s,
        }
    }
}

impl From<HealthReason> for String {
    fn from(r: HealthReason) -> String {
        r.as_str().to_owned()
    }
}

impl fmt::Display for HealthReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The health of one location, as Check reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostHealth {
    /// The location's configured name.
    pub location: String,
    /// Whether it is usable.
    pub ready: bool,
    /// Why.
    pub reason: HealthReason,
    /// A human-readable line; never carries secrets.
    pub message: String,
    /// Facts read from the location (kvm2: user, hostname, libvirtVersion, pool, …).
    pub details: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("a", true)]
    #[case("web-1", true)]
    #[case(&"a".repeat(63), true)]
    #[case(&"a".repeat(64), false)]
    #[case("", false)]
    #[case("1abc", false)]
    #[case("-abc", false)]
    #[case("Abc", false)]
    #[case("a_b", false)]
    #[case("a/b", false)]
    #[case("a<b", false)]
    #[case("a b", false)]
    fn names(#[case] name: &str, #[case] ok: bool) {
        assert_eq!(validate_name(name).is_ok(), ok, "{name:?}");
    }

    #[rstest]
    #[case("0d5c7a2e-1b3f-4e5a-9c8d-7f6e5d4c3b2a", true)]
    #[case("owner_1.x", true)]
    #[case("", false)]
    #[case("a\"b", false)]
    #[case("a&b", false)]
    #[case("../etc", false)]
    fn uids(#[case] uid: &str, #[case] ok: bool) {
        assert_eq!(validate_uid(uid).is_ok(), ok, "{uid:?}");
    }

    #[test]
    fn cloud_init_never_prints_its_bytes() {
        let c = CloudInit::new("#cloud-config\npassword: hunter2");
        for shown in [
            format!("{c:?}"),
            format!("{c}"),
            serde_json::to_string(&c).unwrap(),
        ] {
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains("redacted"), "{shown}");
        }
        assert!(c.expose().contains("hunter2"));
    }

    #[test]
    fn usable_addresses() {
        assert!(is_usable_ipv4("10.0.0.5".parse().unwrap()));
        assert!(!is_usable_ipv4("127.0.0.1".parse().unwrap()));
        assert!(!is_usable_ipv4("169.254.3.4".parse().unwrap()));
        assert!(!is_usable_ipv4("0.0.0.0".parse().unwrap()));
    }
}
