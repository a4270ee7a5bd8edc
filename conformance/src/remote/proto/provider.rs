//! The provider's and the checker's methods: the operations, their outcomes
//! and errors, instances, listings and host health.

use super::*;

/// `provider/create` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreateParams {
    /// The provider instance.
    pub provider: ProviderHandle,
    /// Milliseconds left until the call's deadline when it was sent; `null`: none.
    pub deadline_ms: Option<u64>,
    /// The request.
    pub request: WireCreateRequest,
}

/// `provider/get` and `provider/delete` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdParams {
    /// The provider instance.
    pub provider: ProviderHandle,
    /// Milliseconds left until the call's deadline when it was sent; `null`: none.
    pub deadline_ms: Option<u64>,
    /// The instance's ID.
    pub id: String,
}

/// `provider/list_by_tag` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListByTagParams {
    /// The provider instance.
    pub provider: ProviderHandle,
    /// Milliseconds left until the call's deadline when it was sent; `null`: none.
    pub deadline_ms: Option<u64>,
    /// The tag.
    pub tag: String,
}

/// `checker/check` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckParams {
    /// The provider instance whose checker runs.
    pub provider: ProviderHandle,
    /// Milliseconds left until the call's deadline when it was sent; `null`: none.
    pub deadline_ms: Option<u64>,
}

/// The result of a provider operation: exactly one of `ok` and `error`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "OpOutcome_for_{T}")]
pub enum OpOutcome<T> {
    /// The operation succeeded.
    Ok(T),
    /// The operation returned a contract error.
    Error(ContractError),
}

/// [`Error`]: a contract error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContractError {
    /// `Error::provider`.
    pub provider: String,
    /// `Error::op`.
    pub op: WireOp,
    /// `Error::kind` without its fields.
    pub kind: WireErrorKind,
    /// `Error::message`.
    pub message: String,
    /// The source chain below the error, outermost first.
    #[serde(default)]
    pub source: Vec<String>,
    /// The quota fields; present exactly when `kind` is `QuotaExceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<WireQuota>,
}

/// [`ErrorKind`]'s names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WireErrorKind {
    /// `ErrorKind::NotFound`.
    NotFound,
    /// `ErrorKind::Transient`.
    Transient,
    /// `ErrorKind::Permanent`.
    Permanent,
    /// `ErrorKind::QuotaExceeded`.
    QuotaExceeded,
}

/// [`Quota`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireQuota {
    /// What is short.
    pub what: String,
    /// What is available.
    pub available: u64,
    /// What the request needs.
    pub needed: u64,
}

/// One link of a source chain received over the wire.
#[derive(Debug)]
pub struct RemoteSource {
    message: String,
    source: Option<Box<RemoteSource>>,
}

impl std::fmt::Display for RemoteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RemoteSource {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<&Error> for ContractError {
    fn from(e: &Error) -> Self {
        let mut source = Vec::new();
        let mut next = std::error::Error::source(e);
        while let Some(s) = next {
            source.push(s.to_string());
            next = s.source();
        }
        let (kind, quota) = match e.kind() {
            ErrorKind::NotFound => (WireErrorKind::NotFound, None),
            ErrorKind::Transient => (WireErrorKind::Transient, None),
            ErrorKind::Permanent => (WireErrorKind::Permanent, None),
            ErrorKind::QuotaExceeded(q) => (
                WireErrorKind::QuotaExceeded,
                Some(WireQuota {
                    what: q.what.clone(),
                    available: q.available,
                    needed: q.needed,
                }),
            ),
        };
        ContractError {
            provider: e.provider().to_owned(),
            op: e.op().into(),
            kind,
            message: e.message().to_owned(),
            source,
            quota,
        }
    }
}

impl ContractError {
    /// The contract error, or why the message is not one.
    pub fn to_error(&self) -> Result<Error, String> {
        let kind = match (self.kind, &self.quota) {
            (WireErrorKind::NotFound, None) => ErrorKind::NotFound,
            (WireErrorKind::Transient, None) => ErrorKind::Transient,
            (WireErrorKind::Permanent, None) => ErrorKind::Permanent,
            (WireErrorKind::QuotaExceeded, Some(q)) => ErrorKind::QuotaExceeded(Quota {
                what: q.what.clone(),
                available: q.available,
                needed: q.needed,
            }),
            (WireErrorKind::QuotaExceeded, None) => {
                return Err("a QuotaExceeded error without quota fields".into());
            }
            (k, Some(_)) => return Err(format!("a {k:?} error with quota fields")),
        };
        let mut e = Error::new(
            self.provider.clone(),
            self.op.into(),
            kind,
            self.message.clone(),
        );
        let mut chain: Option<Box<RemoteSource>> = None;
        for message in self.source.iter().rev() {
            chain = Some(Box::new(RemoteSource {
                message: message.clone(),
                source: chain,
            }));
        }
        if let Some(s) = chain {
            e = e.with_source(s as Box<dyn std::error::Error + Send + Sync>);
        }
        Ok(e)
    }
}

/// [`Instance`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireInstance {
    /// Its ID.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: WireState,
    /// Its IPv4 address in dotted form, or `null`.
    pub ipv4: Option<String>,
    /// The uid recorded at create.
    pub uid: String,
    /// The tag recorded at create.
    pub tag: String,
    /// When it was created, RFC 3339 in UTC with up to nine fraction digits, or `null`.
    pub created_at: Option<String>,
}

/// `SystemTime` as RFC 3339 in UTC, nanoseconds kept.
pub fn time_to_wire(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// RFC 3339 back to `SystemTime`.
pub fn time_from_wire(s: &str) -> Result<SystemTime, String> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| SystemTime::from(t.with_timezone(&chrono::Utc)))
        .map_err(|e| format!("created_at is not RFC 3339: {e}"))
}

impl From<&Instance> for WireInstance {
    fn from(i: &Instance) -> Self {
        WireInstance {
            id: i.id.as_str().to_owned(),
            name: i.name.clone(),
            state: i.state.into(),
            ipv4: i.ipv4.map(|a| a.to_string()),
            uid: i.uid.clone(),
            tag: i.tag.clone(),
            created_at: i.created_at.map(time_to_wire),
        }
    }
}

impl WireInstance {
    /// The instance, or why the message is not one.
    pub fn to_instance(&self) -> Result<Instance, String> {
        let ipv4 = match &self.ipv4 {
            None => None,
            Some(a) => Some(
                a.parse::<Ipv4Addr>()
                    .map_err(|_| format!("ipv4 {a:?} is not an IPv4 address"))?,
            ),
        };
        Ok(Instance {
            id: self.id.clone().into(),
            name: self.name.clone(),
            state: self.state.into(),
            ipv4,
            uid: self.uid.clone(),
            tag: self.tag.clone(),
            created_at: self.created_at.as_deref().map(time_from_wire).transpose()?,
        })
    }
}

/// [`Listing`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireListing {
    /// Instances carrying the tag.
    pub instances: Vec<WireInstance>,
    /// Locations that could not be read.
    pub unreachable: Vec<WireUnreachableLocation>,
}

/// [`UnreachableLocation`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireUnreachableLocation {
    /// The location.
    pub location: String,
    /// Why.
    pub reason: String,
}

impl From<&Listing> for WireListing {
    fn from(l: &Listing) -> Self {
        WireListing {
            instances: l.instances.iter().map(WireInstance::from).collect(),
            unreachable: l
                .unreachable
                .iter()
                .map(|u| WireUnreachableLocation {
                    location: u.location.clone(),
                    reason: u.reason.clone(),
                })
                .collect(),
        }
    }
}

impl WireListing {
    /// The listing, or why the message is not one.
    pub fn to_listing(&self) -> Result<Listing, String> {
        Ok(Listing {
            instances: self
                .instances
                .iter()
                .map(WireInstance::to_instance)
                .collect::<Result<_, _>>()?,
            unreachable: self
                .unreachable
                .iter()
                .map(|u| UnreachableLocation {
                    location: u.location.clone(),
                    reason: u.reason.clone(),
                })
                .collect(),
        })
    }
}

/// `checker/check` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckResult {
    /// One entry per configured location.
    pub health: Vec<WireHostHealth>,
}

/// [`HostHealth`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireHostHealth {
    /// The location.
    pub location: String,
    /// Whether it is usable.
    pub ready: bool,
    /// A [`HealthReason`]: one of the shared names (`Ready`, `Unreachable`,
    /// `AuthFailed`, `HostKeyRejected`, `Timeout`, `CredentialsUnavailable`) or one of
    /// the checker's `extra_reasons`.
    pub reason: String,
    /// A human-readable line.
    pub message: String,
    /// Facts read from the location.
    pub details: BTreeMap<String, String>,
}

/// A reason by name: the shared ones as their variants, anything else as `Other`.
pub fn reason_from_wire(s: &str) -> HealthReason {
    match s {
        "Ready" => HealthReason::Ready,
        "Unreachable" => HealthReason::Unreachable,
        "AuthFailed" => HealthReason::AuthFailed,
        "HostKeyRejected" => HealthReason::HostKeyRejected,
        "Timeout" => HealthReason::Timeout,
        "CredentialsUnavailable" => HealthReason::CredentialsUnavailable,
        other => HealthReason::Other(other.to_owned()),
    }
}

impl From<&HostHealth> for WireHostHealth {
    fn from(h: &HostHealth) -> Self {
        WireHostHealth {
            location: h.location.clone(),
            ready: h.ready,
            reason: h.reason.as_str().to_owned(),
            message: h.message.clone(),
            details: h.details.clone(),
        }
    }
}

impl From<WireHostHealth> for HostHealth {
    fn from(h: WireHostHealth) -> Self {
        HostHealth {
            reason: reason_from_wire(&h.reason),
            location: h.location,
            ready: h.ready,
            message: h.message,
            details: h.details,
        }
    }
}
