//! Opening a session: the handshake's answer, the profile, the enums and the
//! location every later message shares, and what `fixture/open` returns.

use super::*;

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
    /// `Fixture::backend_versions`: the backend's versions at each location, by
    /// location name (`{"site-a": {"libvirt": "11.3.0"}}`); absent when not known.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_versions: BTreeMap<String, BTreeMap<String, String>>,
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
