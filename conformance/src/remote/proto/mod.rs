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

mod hooks;
mod provider;
mod session;
mod telemetry;
mod testbed;

pub use hooks::*;
pub use provider::*;
pub use session::*;
pub use telemetry::*;
pub use testbed::*;

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
/// Error code: the provider's method panicked; the message is the panic's. The suite
/// treats the call as one that panicked in process (the rule fails "no panic").
pub const PROVIDER_PANICKED: i64 = 4;

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
    "faults/cause",
    "faults/undo_cause",
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
        m!("faults/cause", CauseParams, CauseResult),
        m!("faults/undo_cause", LocationParams, Empty),
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
