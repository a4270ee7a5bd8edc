//! The testbed's optional hooks: inventory, planting, state control, capacity,
//! faults, rotation and observation.

use super::*;

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

/// `faults/cause` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CauseParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The reason, one the provider's checker declares.
    pub reason: String,
}

/// `faults/cause` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CauseResult {
    /// Whether the fixture can produce this cause.
    pub produced: bool,
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
