//! The profile: the contract's sixteen axes, each a closed set of values, of which a
//! provider declares exactly one per axis.
//!
//! An axis value changes the *expected result* of the rules that depend on it; the
//! suite checks the behaviour-checked axes against what it observes.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Whether the suite verifies an axis against behaviour or only reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AxisClass {
    /// The suite checks the declared value against what the provider does.
    BehaviourChecked,
    /// The suite reports the declared value and does not check it.
    DeclaredOnly,
}

macro_rules! axes {
    ($(
        $(#[doc = $doc:literal])*
        $ty:ident / $field:ident / $setter:ident = $key:literal, $class:ident {
            $( $(#[doc = $vdoc:literal])* $var:ident = $val:literal ),+ $(,)?
        }
    )*) => {
        $(
            $(#[doc = $doc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            pub enum $ty {
                $( $(#[doc = $vdoc])* $var ),+
            }

            impl $ty {
                /// Every value, in declaration order (the first is kvm2's).
                pub const ALL: &'static [$ty] = &[$($ty::$var),+];

                /// The value as written in profiles and reports.
                pub fn as_str(self) -> &'static str {
                    match self { $($ty::$var => $val),+ }
                }
            }

            impl fmt::Display for $ty {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str(self.as_str())
                }
            }

            impl FromStr for $ty {
                type Err = ProfileError;
                fn from_str(s: &str) -> Result<Self, ProfileError> {
                    match s {
                        $($val => Ok($ty::$var),)+
                        _ => Err(ProfileError(format!(
                            "{}: unknown value {s:?}; expected one of {}",
                            $key,
                            [$($val),+].join(", ")
                        ))),
                    }
                }
            }

            impl Serialize for $ty {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.serialize_str(self.as_str())
                }
            }
        )*

        /// The name of one axis.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub enum Axis {
            $( $(#[doc = $doc])* $ty ),*
        }

        impl Axis {
            /// Every axis, in the contract's order.
            pub const ALL: &'static [Axis] = &[$(Axis::$ty),*];

            /// The axis as written in profiles and reports.
            pub fn key(self) -> &'static str {
                match self { $(Axis::$ty => $key),* }
            }

            /// Whether the suite checks it.
            pub fn class(self) -> AxisClass {
                match self { $(Axis::$ty => AxisClass::$class),* }
            }

            /// The axis's values.
            pub fn values(self) -> &'static [&'static str] {
                match self { $(Axis::$ty => &[$($val),+]),* }
            }
        }

        impl fmt::Display for Axis {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.key())
            }
        }

        /// The values a provider declares, one per axis.
        ///
        /// Built with [`Profile::builder`], which rejects illegal combinations.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct Profile {
            $( $field: $ty ),*
        }

        impl Profile {
            $(
                #[doc = concat!("The declared `", $key, "`.")]
                pub fn $field(&self) -> $ty { self.$field }
            )*

            /// The declared value of `axis`, as text.
            pub fn value(&self, axis: Axis) -> &'static str {
                match axis { $(Axis::$ty => self.$field.as_str()),* }
            }

            fn first() -> Profile {
                Profile { $( $field: $ty::ALL[0] ),* }
            }

            fn set(&mut self, axis: Axis, value: &str) -> Result<(), ProfileError> {
                match axis { $(Axis::$ty => self.$field = value.parse()?),* }
                Ok(())
            }
        }

        impl ProfileBuilder {
            $(
                #[doc = concat!("Declares `", $key, "`.")]
                pub fn $setter(mut self, v: $ty) -> Self { self.0.$field = v; self }
            )*
        }

        impl WatchedProfile {
            $(
                #[doc = concat!("The declared `", $key, "`; the read is recorded.")]
                pub fn $field(&self) -> $ty {
                    self.note(Axis::$ty);
                    self.profile.$field()
                }
            )*
        }
    };
}

axes! {
    /// What Create waits for before it returns.
    CreateReturn / create_return / with_create_return = "create-return", BehaviourChecked {
        /// Create returns once the instance is Running.
        Blocking = "blocking",
        /// Create returns once the instance exists; Get reports Provisioning, then Running.
        Early = "early",
    }
    /// Where the Provisioning state is observed.
    ProvisioningState / provisioning_state / with_provisioning_state = "provisioning-state", BehaviourChecked {
        /// Create blocks through provisioning.
        CreateBlocks = "create-blocks",
        /// Get reports Provisioning while the instance boots.
        GetReports = "get-reports",
    }
    /// Whether each backend call gets a child span of the operation span.
    ChildSpans / child_spans / with_child_spans = "child-spans", BehaviourChecked {
        /// One span per operation, one child span per backend call.
        SpanDecorator = "span-decorator",
        /// No spans.
        None = "none",
    }
    /// How capacity shortage is found.
    QuotaMode / quota / with_quota = "quota", BehaviourChecked {
        /// The provider checks capacity before it creates anything.
        Detected = "detected",
        /// The backend refuses, and the provider maps that refusal.
        BackendReported = "backend-reported",
        /// No capacity checks.
        None = "none",
    }
    /// Where credentials come from.
    Credentials / credentials / with_credentials = "credentials", BehaviourChecked {
        /// Files re-read on every dial, so rotation needs no restart.
        MountedFiles = "mounted-files",
        /// Environment variables.
        Env = "env",
        /// Inline in the configuration.
        Inline = "inline",
    }
    /// How the provider talks to its backend.
    ClientKind / client_kind / with_client_kind = "client-kind", DeclaredOnly {
        /// An RPC protocol tunnelled over SSH.
        RpcOverSsh = "rpc-over-ssh",
        /// An HTTP API.
        HttpApi = "http-api",
        /// A vendor SDK.
        Sdk = "sdk",
    }
    /// How instances are marked for garbage collection.
    GcMark / gc_mark / with_gc_mark = "gc-mark", BehaviourChecked {
        /// Metadata written on the resource at create.
        WrittenMetadata = "written-metadata",
        /// The backend's own tags or labels.
        BackendTags = "backend-tags",
        /// A name prefix.
        NamePrefix = "name-prefix",
    }
    /// Where `created_at` comes from.
    CreatedAt / created_at / with_created_at = "created-at", BehaviourChecked {
        /// Written by the provider at create.
        WrittenAtCreate = "written-at-create",
        /// Reported by the backend.
        BackendReported = "backend-reported",
        /// Not available.
        None = "none",
    }
    /// Where the instance's IPv4 address comes from.
    IpSource / ip_source / with_ip_source = "ip-source", BehaviourChecked {
        /// Discovered from the running guest.
        Discovered = "discovered",
        /// Allocated by the backend.
        Allocated = "allocated",
        /// No address is reported.
        None = "none",
    }
    /// What ListByTag does when a location cannot be read.
    ListPartial / list_partial / with_list_partial = "list-partial", BehaviourChecked {
        /// The whole call fails (Transient).
        FailWhole = "fail-whole",
        /// The reachable locations are returned and the others named.
        Partial = "partial",
    }
    /// How the backend says an instance is missing.
    NotFoundMode / not_found / with_not_found = "not-found", DeclaredOnly {
        /// A distinct error code.
        ErrorCode = "error-code",
        /// Absence from a listing.
        Absence = "absence",
    }
    /// What Delete waits for before it returns.
    DeleteReturn / delete_return / with_delete_return = "delete-return", BehaviourChecked {
        /// Delete returns once the instance is gone; Get then says NotFound.
        Waits = "waits",
        /// Delete returns once deletion started; Get says NotFound eventually.
        Early = "early",
    }
    /// Who deletes the instance's secondary resources (disks, seed, firmware state).
    SecondaryResources / secondary_resources / with_secondary_resources = "secondary-resources", BehaviourChecked {
        /// The provider deletes each one.
        Explicit = "explicit",
        /// The backend deletes them with the instance.
        Cascaded = "cascaded",
        /// There are none.
        None = "none",
    }
    /// Where deadlines apply.
    Timeouts / timeouts / with_timeouts = "timeouts", DeclaredOnly {
        /// Each backend call has its own deadline inside the operation's.
        PerCall = "per-call",
        /// One deadline for the whole operation.
        PerOperation = "per-operation",
    }
    /// How the provider logs.
    Logging / logging / with_logging = "logging", BehaviourChecked {
        /// V0 warnings and errors only, V1 one outcome line per operation, V2 one line per backend call.
        Tiered = "tiered",
        /// The provider does not log.
        None = "none",
    }
    /// How a real backend is tested.
    BackendTest / backend_test / with_backend_test = "backend-test", DeclaredOnly {
        /// Integration tests gated by environment.
        IntegrationTag = "integration-tag",
        /// None.
        None = "none",
    }
}

/// A profile whose reads are recorded: the suite hands one to each check, so that what
/// a check's verdict depends on can be compared with the axes its rule names.
pub struct WatchedProfile {
    profile: Profile,
    on_read: Box<dyn Fn(Axis) + Send + Sync>,
}

impl WatchedProfile {
    /// Watches `profile`, calling `on_read` with each axis a check reads.
    pub fn new(profile: Profile, on_read: impl Fn(Axis) + Send + Sync + 'static) -> Self {
        WatchedProfile {
            profile,
            on_read: Box::new(on_read),
        }
    }

    fn note(&self, axis: Axis) {
        (self.on_read)(axis);
    }

    /// The declared value of `axis`, as text; the read is recorded.
    pub fn value(&self, axis: Axis) -> &'static str {
        self.note(axis);
        self.profile.value(axis)
    }

    /// The profile itself, for the harness around the checks: reads through it are not
    /// recorded.
    pub fn unwatched(&self) -> Profile {
        self.profile
    }
}

impl fmt::Debug for WatchedProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchedProfile")
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

/// An illegal profile, or an unknown axis or value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileError(String);

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileError {}

/// Builds a [`Profile`]; starts from the first value of every axis.
#[derive(Clone, Copy, Debug)]
pub struct ProfileBuilder(Profile);

impl ProfileBuilder {
    /// Declares an axis by name and value, as written in profiles.
    pub fn with(mut self, axis: &str, value: &str) -> Result<Self, ProfileError> {
        let a = Axis::ALL
            .iter()
            .copied()
            .find(|a| a.key() == axis)
            .ok_or_else(|| ProfileError(format!("unknown axis {axis:?}")))?;
        self.0.set(a, value)?;
        Ok(self)
    }

    /// Checks the combination and returns the profile.
    pub fn build(self) -> Result<Profile, ProfileError> {
        let p = self.0;
        if p.create_return == CreateReturn::Early
            && p.provisioning_state == ProvisioningState::CreateBlocks
        {
            return Err(ProfileError(
                "create-return=early contradicts provisioning-state=create-blocks: an early Create leaves provisioning to Get".into(),
            ));
        }
        if p.create_return == CreateReturn::Blocking
            && p.provisioning_state == ProvisioningState::GetReports
        {
            return Err(ProfileError(
                "create-return=blocking contradicts provisioning-state=get-reports: a Create that returns once Running leaves Get no Provisioning to report".into(),
            ));
        }
        if p.gc_mark == GcMark::NamePrefix && p.created_at == CreatedAt::WrittenAtCreate {
            return Err(ProfileError(
                "created-at=written-at-create needs somewhere to write it; gc-mark=name-prefix writes nothing".into(),
            ));
        }
        Ok(p)
    }
}

impl Profile {
    /// A builder starting from the first value of every axis.
    pub fn builder() -> ProfileBuilder {
        ProfileBuilder(Profile::first())
    }

    /// A builder starting from this profile, to change some of its values.
    pub fn to_builder(self) -> ProfileBuilder {
        ProfileBuilder(self)
    }

    /// Parses `axis=value` pairs separated by commas (e.g.
    /// `create-return=blocking,quota=none`) over this profile; the result must be a
    /// legal combination. An unknown axis or value, a pair without `=`, or an axis
    /// named twice is an error that names it.
    pub fn with_pairs(self, pairs: &str) -> Result<Profile, ProfileError> {
        let mut b = self.to_builder();
        let mut seen = std::collections::HashSet::new();
        for pair in pairs.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (axis, value) = pair
                .split_once('=')
                .ok_or_else(|| ProfileError(format!("{pair:?} is not axis=value")))?;
            let (axis, value) = (axis.trim(), value.trim());
            if !seen.insert(axis.to_owned()) {
                return Err(ProfileError(format!("the axis {axis:?} is named twice")));
            }
            b = b.with(axis, value)?;
        }
        b.build()
    }

    /// Every axis with its declared value, in the contract's order.
    pub fn entries(&self) -> Vec<(Axis, &'static str)> {
        Axis::ALL.iter().map(|a| (*a, self.value(*a))).collect()
    }
}

impl Serialize for Profile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(Axis::ALL.len()))?;
        for (a, v) in self.entries() {
            m.serialize_entry(a.key(), v)?;
        }
        m.end()
    }
}

/// Reads what [`Profile`]'s `Serialize` writes: a map from every axis to its value.
/// A missing or unknown axis, an unknown value or an illegal combination is an error.
impl<'de> serde::Deserialize<'de> for Profile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let map = std::collections::BTreeMap::<String, String>::deserialize(d)?;
        if let Some(k) = map
            .keys()
            .find(|k| !Axis::ALL.iter().any(|a| a.key() == *k))
        {
            return Err(D::Error::custom(format!("unknown axis {k:?}")));
        }
        let mut b = Profile::builder();
        for a in Axis::ALL {
            let v = map.get(a.key()).ok_or_else(|| {
                D::Error::custom(format!("the profile lacks the axis {}", a.key()))
            })?;
            b = b.with(a.key(), v).map_err(D::Error::custom)?;
        }
        b.build().map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn sixteen_axes_with_the_contract_classes() {
        assert_eq!(Axis::ALL.len(), 16);
        let declared: Vec<_> = Axis::ALL
            .iter()
            .filter(|a| a.class() == AxisClass::DeclaredOnly)
            .map(|a| a.key())
            .collect();
        assert_eq!(
            declared,
            ["client-kind", "not-found", "timeouts", "backend-test"]
        );
    }

    #[test]
    fn default_is_the_first_value_of_each_axis() {
        let p = Profile::builder().build().unwrap();
        for a in Axis::ALL {
            assert_eq!(p.value(*a), a.values()[0]);
        }
    }

    #[rstest]
    #[case("create-return", "early", "provisioning-state", "create-blocks")]
    #[case("create-return", "blocking", "provisioning-state", "get-reports")]
    #[case("gc-mark", "name-prefix", "created-at", "written-at-create")]
    fn illegal_combinations_are_rejected(
        #[case] a1: &str,
        #[case] v1: &str,
        #[case] a2: &str,
        #[case] v2: &str,
    ) {
        let b = Profile::builder()
            .with(a1, v1)
            .unwrap()
            .with(a2, v2)
            .unwrap();
        assert!(b.build().is_err());
    }

    #[test]
    fn unknown_axis_and_value_name_what_was_wrong() {
        let e = Profile::builder().with("colour", "red").unwrap_err();
        assert!(e.to_string().contains("colour"));
        let e = Profile::builder().with("quota", "lots").unwrap_err();
        assert!(e.to_string().contains("quota") && e.to_string().contains("detected"));
    }
}
