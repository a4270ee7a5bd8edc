//! The messages of the process protocol, version 1, as serde types, and their
//! conversions to and from the contract's own types.
//!
//! Names follow the Rust contract one to one: methods are `<trait>/<method>` in the
//! Rust spelling (`faults/set_reachability`), fields keep their Rust names, and enum
//! values their Rust variant names. `docs/remote-protocol.md` is the normative text;
//! `conformance/schema/remote/protocol-v1.schema.json` is generated from these types.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fixture::{
    AccessBreak, BackendCall, FaultKind, FaultSpec, Hook, Location, Part, Plant, Power,
    Reachability, Resource, Trigger, Verbosity,
};
use crate::profile::{Axis, Profile};
use crate::{
    CloudInit, CreateRequest, Error, ErrorKind, HealthReason, HostHealth, Instance, Listing, Op,
    Quota, State, UnreachableLocation,
};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest line either side may send, newline excluded.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// JSON-RPC error code: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC error code: the message is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC error code: the method is unknown.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC error code: the params do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC error code: the receiver failed for a reason of its own.
pub const INTERNAL_ERROR: i64 = -32603;
/// Error code: a fixture hook failed ([`HookError`](crate::fixture::HookError)); the
/// message is the hook's.
pub const HOOK_FAILED: i64 = 1;
/// Error code: the request names a testbed or provider handle the peer does not have.
pub const UNKNOWN_HANDLE: i64 = 2;
/// Error code: `initialize` offered no version the provider speaks.
pub const UNSUPPORTED_VERSION: i64 = 3;

/// Every request method, in the order of the protocol document.
pub const METHODS: &[&str] = &[
    "initialize",
    "shutdown",
    "fixture/open",
    "testbed/teardown",
    "testbed/restart",
    "testbed/request",
    "testbed/id_for",
    "testbed/location_of",
    "testbed/malformed_ids",
    "testbed/unconfigured_id",
    "testbed/unknown_placement",
    "provider/create",
    "provider/get",
    "provider/delete",
    "provider/list_by_tag",
    "checker/check",
    "inventory/resources",
    "planting/plant",
    "planting/inspect",
    "planting/remove_part",
    "planting/remove",
    "state_control/set_power",
    "state_control/set_addresses",
    "state_control/fail_address_lookup",
    "state_control/hold_boot",
    "capacity/set_free",
    "faults/inject",
    "faults/fired",
    "faults/clear",
    "faults/set_reachability",
    "rotation/rotate",
    "rotation/break_access",
    "rotation/restore_access",
    "observation/calls",
    "observation/dials",
    "observation/set_verbosity",
];

/// Suite → provider: stop working on a request.
pub const CANCEL: &str = "$/cancel";
/// Provider → suite: a span opened.
pub const SPAN_START: &str = "$/span/start";
/// Provider → suite: a span closed.
pub const SPAN_END: &str = "$/span/end";
/// Provider → suite: a log event.
pub const EVENT: &str = "$/event";

/// Every notification method.
pub const NOTIFICATIONS: &[&str] = &[CANCEL, SPAN_START, SPAN_END, EVENT];

/// A handle the provider gives a testbed.
pub type TestbedHandle = u64;
/// A handle the provider gives a provider instance (one per testbed, one per restart).
pub type ProviderHandle = u64;

/// An empty object: the result of methods that return nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

// ---------------------------------------------------------------------------------------
// initialize, shutdown

/// `initialize` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeParams {
    /// Protocol versions the suite speaks, most preferred first.
    pub protocol_versions: Vec<u32>,
    /// The suite's version, for the provider's logs.
    pub suite_version: String,
}

/// `initialize` result: the chosen version and the fixture's static facts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    /// One of the offered versions.
    pub protocol_version: u32,
    /// `Fixture::provider_name`.
    pub provider_name: String,
    /// `Fixture::provider_version`.
    pub provider_version: String,
    /// `Fixture::profile`.
    pub profile: WireProfile,
    /// `Fixture::hooks`.
    pub hooks: Vec<WireHook>,
    /// `Fixture::locations`.
    pub locations: Vec<WireLocation>,
    /// `Fixture::has_checker`.
    pub has_checker: bool,
    /// `Fixture::is_real_backend`.
    pub is_real_backend: bool,
    /// `Fixture::environment`.
    pub environment: BTreeMap<String, String>,
}

// ---------------------------------------------------------------------------------------
// Profile, hooks, locations

/// A profile: every axis by its key with its declared value (`"quota": "detected"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WireProfile(pub BTreeMap<String, String>);

impl JsonSchema for WireProfile {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WireProfile".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut props = serde_json::Map::new();
        for a in Axis::ALL {
            props.insert(
                a.key().to_owned(),
                serde_json::json!({ "type": "string", "enum": a.values() }),
            );
        }
        let required: Vec<&str> = Axis::ALL.iter().map(|a| a.key()).collect();
        schemars::json_schema!({
            "description": "Every axis of the contract by its key, with the declared value.",
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        })
    }
}

impl From<&Profile> for WireProfile {
    fn from(p: &Profile) -> Self {
        WireProfile(
            p.entries()
                .into_iter()
                .map(|(a, v)| (a.key().to_owned(), v.to_owned()))
                .collect(),
        )
    }
}

impl WireProfile {
    /// The profile, checked like any declared profile.
    pub fn to_profile(&self) -> Result<Profile, String> {
        let mut b = Profile::builder();
        for a in Axis::ALL {
            let v = self
                .0
                .get(a.key())
                .ok_or_else(|| format!("the profile lacks the axis {}", a.key()))?;
            b = b.with(a.key(), v).map_err(|e| e.to_string())?;
        }
        if let Some(k) = self
            .0
            .keys()
            .find(|k| !Axis::ALL.iter().any(|a| a.key() == *k))
        {
            return Err(format!("the profile names an unknown axis {k:?}"));
        }
        b.build().map_err(|e| e.to_string())
    }
}

macro_rules! wire_enum {
    ($(#[$m:meta])* $wire:ident <=> $rust:ident { $($v:ident),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        pub enum $wire { $(#[allow(missing_docs)] $v),+ }

        impl From<$rust> for $wire {
            fn from(v: $rust) -> Self {
                match v { $($rust::$v => $wire::$v),+ }
            }
        }

        impl From<$wire> for $rust {
            fn from(v: $wire) -> Self {
                match v { $($wire::$v => $rust::$v),+ }
            }
        }
    };
}

wire_enum!(
    /// [`Hook`].
    WireHook <=> Hook { Inventory, Planting, StateControl, Capacity, Faults, Rotation, Observation }
);
wire_enum!(
    /// [`Part`].
    WirePart <=> Part { Secondary, Primary, Container }
);
wire_enum!(
    /// [`Power`].
    WirePower <=> Power { Running, Paused, Stopped }
);
wire_enum!(
    /// [`Reachability`].
    WireReachability <=> Reachability { Up, Refused, BlackHole }
);
wire_enum!(
    /// [`AccessBreak`].
    WireAccessBreak <=> AccessBreak { Revoke, ForeignHostKey, RemoveCredentials }
);
wire_enum!(
    /// [`Verbosity`].
    WireVerbosity <=> Verbosity { V0, V1, V2 }
);
wire_enum!(
    /// [`State`].
    WireState <=> State { Provisioning, Running, Stopped }
);
wire_enum!(
    /// [`Op`].
    WireOp <=> Op { Create, Get, Delete, ListByTag, Check }
);

/// [`Location`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireLocation {
    /// The location's name.
    pub name: String,
    /// A placement the configuration maps to it.
    pub placement: String,
}

impl From<&Location> for WireLocation {
    fn from(l: &Location) -> Self {
        WireLocation {
            name: l.name.clone(),
            placement: l.placement.clone(),
        }
    }
}

impl From<WireLocation> for Location {
    fn from(l: WireLocation) -> Self {
        Location {
            name: l.name,
            placement: l.placement,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Testbeds

/// `fixture/open` result, and the result of `testbed/restart` (`provider` only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OpenResult {
    /// The new testbed's handle.
    pub testbed: TestbedHandle,
    /// `Testbed::provider`.
    pub provider: ProviderInfo,
}

/// A provider instance: its handle and what `Provider` says of itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderInfo {
    /// The handle later calls name.
    pub provider: ProviderHandle,
    /// `Provider::name`.
    pub name: String,
    /// `Provider::profile`.
    pub profile: WireProfile,
    /// `Provider::checker`: absent or `null` when the provider has none.
    pub checker: Option<CheckerInfo>,
}

/// A provider's checker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckerInfo {
    /// `Checker::extra_reasons`.
    pub extra_reasons: Vec<String>,
}

/// Params of every method that names only a testbed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestbedParams {
    /// The testbed.
    pub testbed: TestbedHandle,
}

/// `testbed/request` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The instance name.
    pub name: String,
    /// The tag.
    pub tag: String,
    /// Where to place it.
    pub location: WireLocation,
}

/// [`CreateRequest`], with the cloud-init payload in clear: the provider must write it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireCreateRequest {
    /// The idempotency key.
    pub name: String,
    /// The owner's id.
    pub uid: String,
    /// The garbage-collection mark.
    pub tag: String,
    /// A zone the configuration maps to a location.
    pub placement: String,
    /// An image name; `null` means the provider's default.
    pub image: Option<String>,
    /// The secret cloud-init user data, in clear.
    pub cloud_init: String,
}

impl std::fmt::Debug for WireCreateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireCreateRequest")
            .field("name", &self.name)
            .field("uid", &self.uid)
            .field("tag", &self.tag)
            .field("placement", &self.placement)
            .field("image", &self.image)
            .field(
                "cloud_init",
                &format_args!("<redacted {} bytes>", self.cloud_init.len()),
            )
            .finish()
    }
}

impl From<&CreateRequest> for WireCreateRequest {
    fn from(r: &CreateRequest) -> Self {
        WireCreateRequest {
            name: r.name.clone(),
            uid: r.uid.clone(),
            tag: r.tag.clone(),
            placement: r.placement.clone(),
            image: r.image.clone(),
            cloud_init: r.cloud_init.expose().to_owned(),
        }
    }
}

impl From<WireCreateRequest> for CreateRequest {
    fn from(r: WireCreateRequest) -> Self {
        CreateRequest {
            name: r.name,
            uid: r.uid,
            tag: r.tag,
            placement: r.placement,
            image: r.image,
            cloud_init: CloudInit::new(r.cloud_init),
        }
    }
}

/// `testbed/id_for` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdForParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The instance name.
    pub name: String,
}

/// The result of `testbed/id_for` and `testbed/unconfigured_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdResult {
    /// The provider ID.
    pub id: String,
}

/// `testbed/location_of` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocationOfParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The ID.
    pub id: String,
}

/// `testbed/location_of` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocationOfResult {
    /// The location, or `null` when the ID is not well formed.
    pub location: Option<String>,
}

/// `testbed/malformed_ids` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MalformedIdsResult {
    /// IDs the provider must reject as malformed.
    pub ids: Vec<String>,
}

/// `testbed/unconfigured_id` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnconfiguredIdParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The instance name.
    pub name: String,
}

/// `testbed/unknown_placement` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnknownPlacementResult {
    /// A placement the configuration does not map.
    pub placement: String,
}

// ---------------------------------------------------------------------------------------
// Provider operations

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

// ---------------------------------------------------------------------------------------
// Hooks

/// Params of hook methods that name a location.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocationParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
}

/// Params of hook methods that name an instance at a location.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NameParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The instance name.
    pub name: String,
}

/// `inventory/resources` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourcesResult {
    /// Every resource at the location.
    pub resources: Vec<WireResource>,
}

/// [`Resource`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireResource {
    /// The instance it belongs to, or `null` for shared resources.
    pub instance: Option<String>,
    /// What it is.
    pub kind: String,
    /// Whether it is the instance itself.
    pub primary: bool,
    /// Its backend name.
    pub name: String,
}

impl From<&Resource> for WireResource {
    fn from(r: &Resource) -> Self {
        WireResource {
            instance: r.instance.clone(),
            kind: r.kind.clone(),
            primary: r.primary,
            name: r.name.clone(),
        }
    }
}

impl From<WireResource> for Resource {
    fn from(r: WireResource) -> Self {
        Resource {
            instance: r.instance,
            kind: r.kind,
            primary: r.primary,
            name: r.name,
        }
    }
}

/// `planting/plant` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlantParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The name to plant under.
    pub name: String,
    /// What to plant.
    pub what: WirePlant,
}

/// [`Plant`]; the variant is named by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum WirePlant {
    /// `Plant::Unmarked`.
    Unmarked,
    /// `Plant::ForeignUid`.
    ForeignUid {
        /// The tag.
        tag: String,
        /// The foreign uid.
        uid: String,
    },
    /// `Plant::EmptyUid`.
    EmptyUid {
        /// The tag.
        tag: String,
    },
    /// `Plant::Unreadable`.
    Unreadable {
        /// The tag.
        tag: String,
    },
}

impl From<Plant> for WirePlant {
    fn from(p: Plant) -> Self {
        match p {
            Plant::Unmarked => WirePlant::Unmarked,
            Plant::ForeignUid { tag, uid } => WirePlant::ForeignUid { tag, uid },
            Plant::EmptyUid { tag } => WirePlant::EmptyUid { tag },
            Plant::Unreadable { tag } => WirePlant::Unreadable { tag },
        }
    }
}

impl From<WirePlant> for Plant {
    fn from(p: WirePlant) -> Self {
        match p {
            WirePlant::Unmarked => Plant::Unmarked,
            WirePlant::ForeignUid { tag, uid } => Plant::ForeignUid { tag, uid },
            WirePlant::EmptyUid { tag } => Plant::EmptyUid { tag },
            WirePlant::Unreadable { tag } => Plant::Unreadable { tag },
        }
    }
}

/// `planting/inspect` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InspectResult {
    /// The fingerprint, or `null` when nothing of that name exists.
    pub fingerprint: Option<String>,
}

/// `planting/remove_part` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RemovePartParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The instance name.
    pub name: String,
    /// The part.
    pub part: WirePart,
}

/// `state_control/set_power` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetPowerParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The instance name.
    pub name: String,
    /// The power state.
    pub power: WirePower,
}

/// `state_control/set_addresses` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetAddressesParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The instance name.
    pub name: String,
    /// IPv4 or IPv6 addresses in text form.
    pub addrs: Vec<String>,
}

/// Parses addresses received over the wire.
pub fn addrs_from_wire(addrs: &[String]) -> Result<Vec<IpAddr>, String> {
    addrs
        .iter()
        .map(|a| a.parse().map_err(|_| format!("{a:?} is not an IP address")))
        .collect()
}

/// `state_control/fail_address_lookup` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FailAddressLookupParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The instance name.
    pub name: String,
    /// Fail (`true`) or work again (`false`).
    pub fail: bool,
}

/// `state_control/hold_boot` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HoldBootParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// Hold (`true`) or release (`false`).
    pub hold: bool,
}

/// `capacity/set_free` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetFreeParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// Free bytes; `null` restores the real capacity.
    pub bytes: Option<u64>,
}

/// `faults/inject` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InjectParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The injection.
    pub spec: WireFaultSpec,
}

/// [`FaultSpec`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireFaultSpec {
    /// The location, or `null` for every location.
    pub location: Option<String>,
    /// When it fires.
    pub trigger: WireTrigger,
    /// What it does.
    pub kind: WireFaultKind,
}

/// [`Trigger`]; the variant is named by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum WireTrigger {
    /// `Trigger::Nth`: the n-th backend call from now, 1-based.
    Nth {
        /// The call's number.
        n: u64,
    },
    /// `Trigger::Named`: the next call of the named procedure.
    Named {
        /// The procedure.
        name: String,
    },
    /// `Trigger::Always`.
    Always,
}

/// [`FaultKind`]; the variant is named by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum WireFaultKind {
    /// `FaultKind::Transient`.
    Transient,
    /// `FaultKind::Permanent`.
    Permanent,
    /// `FaultKind::NotFound`.
    NotFound,
    /// `FaultKind::Quota`.
    Quota,
    /// `FaultKind::Hang`.
    Hang,
    /// `FaultKind::Delay`.
    Delay {
        /// The delay in microseconds.
        micros: u64,
    },
    /// `FaultKind::Drop`.
    Drop,
    /// `FaultKind::LostReply`.
    LostReply,
}

impl From<FaultSpec> for WireFaultSpec {
    fn from(s: FaultSpec) -> Self {
        WireFaultSpec {
            location: s.location,
            trigger: match s.trigger {
                Trigger::Nth(n) => WireTrigger::Nth { n },
                Trigger::Named(name) => WireTrigger::Named { name },
                Trigger::Always => WireTrigger::Always,
            },
            kind: match s.kind {
                FaultKind::Transient => WireFaultKind::Transient,
                FaultKind::Permanent => WireFaultKind::Permanent,
                FaultKind::NotFound => WireFaultKind::NotFound,
                FaultKind::Quota => WireFaultKind::Quota,
                FaultKind::Hang => WireFaultKind::Hang,
                FaultKind::Delay(d) => WireFaultKind::Delay {
                    micros: u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
                },
                FaultKind::Drop => WireFaultKind::Drop,
                FaultKind::LostReply => WireFaultKind::LostReply,
            },
        }
    }
}

impl From<WireFaultSpec> for FaultSpec {
    fn from(s: WireFaultSpec) -> Self {
        FaultSpec {
            location: s.location,
            trigger: match s.trigger {
                WireTrigger::Nth { n } => Trigger::Nth(n),
                WireTrigger::Named { name } => Trigger::Named(name),
                WireTrigger::Always => Trigger::Always,
            },
            kind: match s.kind {
                WireFaultKind::Transient => FaultKind::Transient,
                WireFaultKind::Permanent => FaultKind::Permanent,
                WireFaultKind::NotFound => FaultKind::NotFound,
                WireFaultKind::Quota => FaultKind::Quota,
                WireFaultKind::Hang => FaultKind::Hang,
                WireFaultKind::Delay { micros } => FaultKind::Delay(Duration::from_micros(micros)),
                WireFaultKind::Drop => FaultKind::Drop,
                WireFaultKind::LostReply => FaultKind::LostReply,
            },
        }
    }
}

/// `faults/inject` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InjectResult {
    /// The [`FaultId`](crate::fixture::FaultId) to ask `faults/fired` about.
    pub id: u64,
}

/// `faults/fired` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FiredParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The injection.
    pub id: u64,
}

/// `faults/fired` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FiredResult {
    /// Whether it fired.
    pub fired: bool,
}

/// `faults/set_reachability` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetReachabilityParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// How it answers.
    pub reachability: WireReachability,
}

/// `rotation/break_access` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BreakAccessParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// How.
    pub how: WireAccessBreak,
}

/// `rotation/break_access` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BreakAccessResult {
    /// Whether the fixture can produce this cause.
    pub produced: bool,
}

/// `observation/calls` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallsParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// Skip the first `since` calls (those the suite already has).
    pub since: u64,
}

/// `observation/calls` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallsResult {
    /// The calls after the first `since`, in order.
    pub calls: Vec<WireBackendCall>,
}

/// [`BackendCall`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireBackendCall {
    /// The location called.
    pub location: String,
    /// The procedure.
    pub name: String,
    /// The connection it came on.
    pub connection: u64,
}

impl From<&BackendCall> for WireBackendCall {
    fn from(c: &BackendCall) -> Self {
        WireBackendCall {
            location: c.location.clone(),
            name: c.name.clone(),
            connection: c.connection,
        }
    }
}

impl From<WireBackendCall> for BackendCall {
    fn from(c: WireBackendCall) -> Self {
        BackendCall {
            location: c.location,
            name: c.name,
            connection: c.connection,
        }
    }
}

/// `observation/dials` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DialsResult {
    /// Connections opened to the location.
    pub dials: u64,
}

/// `observation/set_verbosity` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetVerbosityParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The tier.
    pub verbosity: WireVerbosity,
}

// ---------------------------------------------------------------------------------------
// Notifications

/// `$/cancel` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CancelParams {
    /// The request to stop.
    pub id: u64,
}

/// A level of `tracing` (and of the `logging` axis' tiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WireLevel {
    /// Errors.
    ERROR,
    /// Warnings.
    WARN,
    /// V1 outcome lines.
    INFO,
    /// V2 per-call lines.
    DEBUG,
    /// Below the tiers.
    TRACE,
}

impl From<tracing::Level> for WireLevel {
    fn from(l: tracing::Level) -> Self {
        match l {
            tracing::Level::ERROR => WireLevel::ERROR,
            tracing::Level::WARN => WireLevel::WARN,
            tracing::Level::INFO => WireLevel::INFO,
            tracing::Level::DEBUG => WireLevel::DEBUG,
            tracing::Level::TRACE => WireLevel::TRACE,
        }
    }
}

/// `$/span/start` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpanStartParams {
    /// The request it belongs to.
    pub request: u64,
    /// The span's id, unique on the connection.
    pub span: u64,
    /// The parent span's id; `null`: directly under the request's caller.
    pub parent: Option<u64>,
    /// The span's name (`template.create`, `kvm2.DomainDefineXML`).
    pub name: String,
    /// Its level.
    pub level: WireLevel,
    /// Its fields as text.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}

/// `$/span/end` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpanEndParams {
    /// The span.
    pub span: u64,
}

/// `$/event` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventParams {
    /// The request it belongs to.
    pub request: u64,
    /// The span it was emitted in; `null`: directly under the request's caller.
    pub span: Option<u64>,
    /// Its level.
    pub level: WireLevel,
    /// The message.
    pub message: String,
    /// Its other fields as text.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}

// ---------------------------------------------------------------------------------------
// The message table

/// The params and result types of every method, as schemas: `(method, params, result)`.
/// A notification's result is `None`.
pub fn message_schemas(
    g: &mut schemars::SchemaGenerator,
) -> Vec<(&'static str, schemars::Schema, Option<schemars::Schema>)> {
    macro_rules! m {
        ($method:expr, $p:ty, $r:ty) => {
            (
                $method,
                g.subschema_for::<$p>(),
                Some(g.subschema_for::<$r>()),
            )
        };
        ($method:expr, $p:ty) => {
            ($method, g.subschema_for::<$p>(), None)
        };
    }
    vec![
        m!("initialize", InitializeParams, InitializeResult),
        m!("shutdown", Empty, Empty),
        m!("fixture/open", Empty, OpenResult),
        m!("testbed/teardown", TestbedParams, Empty),
        m!("testbed/restart", TestbedParams, ProviderInfo),
        m!("testbed/request", RequestParams, WireCreateRequest),
        m!("testbed/id_for", IdForParams, IdResult),
        m!("testbed/location_of", LocationOfParams, LocationOfResult),
        m!("testbed/malformed_ids", TestbedParams, MalformedIdsResult),
        m!("testbed/unconfigured_id", UnconfiguredIdParams, IdResult),
        m!(
            "testbed/unknown_placement",
            TestbedParams,
            UnknownPlacementResult
        ),
        m!("provider/create", CreateParams, OpOutcome<IdResult>),
        m!("provider/get", IdParams, OpOutcome<WireInstance>),
        m!("provider/delete", IdParams, OpOutcome<Empty>),
        m!(
            "provider/list_by_tag",
            ListByTagParams,
            OpOutcome<WireListing>
        ),
        m!("checker/check", CheckParams, CheckResult),
        m!("inventory/resources", LocationParams, ResourcesResult),
        m!("planting/plant", PlantParams, Empty),
        m!("planting/inspect", NameParams, InspectResult),
        m!("planting/remove_part", RemovePartParams, Empty),
        m!("planting/remove", NameParams, Empty),
        m!("state_control/set_power", SetPowerParams, Empty),
        m!("state_control/set_addresses", SetAddressesParams, Empty),
        m!(
            "state_control/fail_address_lookup",
            FailAddressLookupParams,
            Empty
        ),
        m!("state_control/hold_boot", HoldBootParams, Empty),
        m!("capacity/set_free", SetFreeParams, Empty),
        m!("faults/inject", InjectParams, InjectResult),
        m!("faults/fired", FiredParams, FiredResult),
        m!("faults/clear", TestbedParams, Empty),
        m!("faults/set_reachability", SetReachabilityParams, Empty),
        m!("rotation/rotate", LocationParams, Empty),
        m!(
            "rotation/break_access",
            BreakAccessParams,
            BreakAccessResult
        ),
        m!("rotation/restore_access", LocationParams, Empty),
        m!("observation/calls", CallsParams, CallsResult),
        m!("observation/dials", LocationParams, DialsResult),
        m!("observation/set_verbosity", SetVerbosityParams, Empty),
        m!(CANCEL, CancelParams),
        m!(SPAN_START, SpanStartParams),
        m!(SPAN_END, SpanEndParams),
        m!(EVENT, EventParams),
    ]
}
