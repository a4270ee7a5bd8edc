//! The fixture API: what a provider author writes so the suite can run against the
//! provider. A [`Fixture`] opens one [`Testbed`] per rule; the testbed hands out the
//! provider and the hooks below it.
//!
//! Required parts are trait methods without defaults. Each optional hook is an
//! accessor returning `None` by default; a rule that needs a missing hook is
//! reported Skipped with the hook's name, never passed.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::{BoxFuture, CreateRequest, Profile, Provider, ProviderId};

/// A harness or environment failure inside a hook. The rule's outcome is Error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookError(pub String);

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HookError {}

impl HookError {
    /// A hook error from anything printable.
    pub fn new(msg: impl fmt::Display) -> Self {
        HookError(msg.to_string())
    }
}

/// The result of a hook call.
pub type HookResult<T> = Result<T, HookError>;

/// The optional hooks, by name.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
pub enum Hook {
    /// [`Inventory`].
    Inventory,
    /// [`Planting`].
    Planting,
    /// [`StateControl`].
    StateControl,
    /// [`Capacity`].
    Capacity,
    /// [`Faults`].
    Faults,
    /// [`Rotation`].
    Rotation,
    /// [`Observation`].
    Observation,
}

impl Hook {
    /// Every hook.
    pub const ALL: [Hook; 7] = [
        Hook::Inventory,
        Hook::Planting,
        Hook::StateControl,
        Hook::Capacity,
        Hook::Faults,
        Hook::Rotation,
        Hook::Observation,
    ];

    /// The hook's name as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Inventory => "inventory",
            Hook::Planting => "planting",
            Hook::StateControl => "state-control",
            Hook::Capacity => "capacity",
            Hook::Faults => "faults",
            Hook::Rotation => "rotation",
            Hook::Observation => "observation",
        }
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The provider under test and everything the suite needs to know about it before a
/// run. Implemented once per provider.
pub trait Fixture: Send + Sync {
    /// The provider's configured name (errors must carry it).
    fn provider_name(&self) -> String;

    /// The provider's declared profile.
    fn profile(&self) -> Profile;

    /// The provider's version, for reports.
    fn provider_version(&self) -> String {
        String::from("unknown")
    }

    /// The hooks the testbeds offer. Decided before the run, so listings show it.
    fn hooks(&self) -> Vec<Hook>;

    /// The configured locations, in configuration order.
    fn locations(&self) -> Vec<Location>;

    /// Whether the provider has a [`Checker`](crate::Checker).
    fn has_checker(&self) -> bool;

    /// Whether the backend is real (property tests then run fewer cases).
    fn is_real_backend(&self) -> bool {
        false
    }

    /// Facts about the environment, for reports (backend version, host, …).
    fn environment(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// The backend's versions at each location, by location name (kvm2: libvirt's and
    /// QEMU's), for the report's provenance; empty when the fixture cannot tell. Asked
    /// once before the first rule, and given up on after [`BACKEND_VERSIONS_TIMEOUT`].
    fn backend_versions(&self) -> BoxFuture<'_, BTreeMap<String, BTreeMap<String, String>>> {
        Box::pin(async { BTreeMap::new() })
    }

    /// Opens a testbed for one rule. Testbeds of different rules must not share
    /// injected faults, verbosity or credentials.
    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>>;
}

/// How long a run waits for [`Fixture::backend_versions`] before it records none.
pub const BACKEND_VERSIONS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A location the provider's configuration names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The location's name (kvm2: a host name).
    pub name: String,
    /// A placement that the configuration maps to this location.
    pub placement: String,
}

/// One rule's view of the provider and its backend.
pub trait Testbed: Send + Sync {
    /// The provider for this testbed.
    fn provider(&self) -> Arc<dyn Provider>;

    /// A fresh provider over the same backend, as after a process restart.
    fn restart(&self) -> HookResult<Arc<dyn Provider>>;

    /// A valid request for `name` with `tag`, placed at `location`.
    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest;

    /// The ID the provider gives `name` at `location`.
    fn id_for(&self, location: &str, name: &str) -> ProviderId;

    /// The location an ID names, if it is well formed.
    fn location_of(&self, id: &ProviderId) -> Option<String>;

    /// IDs the provider must reject as malformed.
    fn malformed_ids(&self) -> Vec<String>;

    /// A well-formed ID for `name` at a location the configuration does not have.
    fn unconfigured_id(&self, name: &str) -> ProviderId;

    /// A placement the configuration does not map.
    fn unknown_placement(&self) -> String {
        String::from("no-such-zone")
    }

    /// The [`Inventory`] hook.
    fn inventory(&self) -> Option<&dyn Inventory> {
        None
    }
    /// The [`Planting`] hook.
    fn planting(&self) -> Option<&dyn Planting> {
        None
    }
    /// The [`StateControl`] hook.
    fn state_control(&self) -> Option<&dyn StateControl> {
        None
    }
    /// The [`Capacity`] hook.
    fn capacity(&self) -> Option<&dyn Capacity> {
        None
    }
    /// The [`Faults`] hook.
    fn faults(&self) -> Option<&dyn Faults> {
        None
    }
    /// The [`Rotation`] hook.
    fn rotation(&self) -> Option<&dyn Rotation> {
        None
    }
    /// The [`Observation`] hook.
    fn observation(&self) -> Option<&dyn Observation> {
        None
    }

    /// Removes whatever this testbed left behind (best effort).
    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async { Ok(()) })
    }

    /// A failure of the harness below the checks that makes this rule's result
    /// meaningless, such as a provider process that broke the process protocol; the
    /// runner then reports the rule as Error with this text, whatever the check said.
    /// In-process fixtures keep the default `None`.
    fn harness_failure(&self) -> Option<String> {
        None
    }
}

/// Passes a provider through a wrapper: see [`WrapProviders`].
pub type ProviderWrap = Box<dyn Fn(Arc<dyn Provider>) -> Arc<dyn Provider> + Send + Sync>;

/// Passes a request the testbed hands out through a wrapper: see
/// [`WrapProviders::with_requests`].
pub type RequestWrap = Box<dyn Fn(CreateRequest) -> CreateRequest + Send + Sync>;

/// A testbed that is `inner` in every respect but its providers: each one it
/// hands out, from [`Testbed::provider`] and from [`Testbed::restart`], goes
/// through `wrap` first. For a provider that counts, records or alters what
/// the rules call, over a backend and hooks left as they are.
pub struct WrapProviders {
    inner: Box<dyn Testbed>,
    wrap: ProviderWrap,
    requests: Option<RequestWrap>,
}

impl WrapProviders {
    /// `inner`, its providers passed through `wrap`.
    pub fn new(inner: Box<dyn Testbed>, wrap: ProviderWrap) -> WrapProviders {
        WrapProviders {
            inner,
            wrap,
            requests: None,
        }
    }

    /// The same, with every request [`Testbed::request`] hands out passed through
    /// `requests` too.
    pub fn with_requests(mut self, requests: RequestWrap) -> WrapProviders {
        self.requests = Some(requests);
        self
    }
}

#[deny(clippy::missing_trait_methods)]
impl Testbed for WrapProviders {
    fn provider(&self) -> Arc<dyn Provider> {
        (self.wrap)(self.inner.provider())
    }
    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        self.inner.restart().map(&self.wrap)
    }
    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest {
        let req = self.inner.request(name, tag, location);
        match &self.requests {
            Some(wrap) => wrap(req),
            None => req,
        }
    }
    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        self.inner.id_for(location, name)
    }
    fn location_of(&self, id: &ProviderId) -> Option<String> {
        self.inner.location_of(id)
    }
    fn malformed_ids(&self) -> Vec<String> {
        self.inner.malformed_ids()
    }
    fn unconfigured_id(&self, name: &str) -> ProviderId {
        self.inner.unconfigured_id(name)
    }
    fn unknown_placement(&self) -> String {
        self.inner.unknown_placement()
    }
    fn inventory(&self) -> Option<&dyn Inventory> {
        self.inner.inventory()
    }
    fn planting(&self) -> Option<&dyn Planting> {
        self.inner.planting()
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        self.inner.state_control()
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        self.inner.capacity()
    }
    fn faults(&self) -> Option<&dyn Faults> {
        self.inner.faults()
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        self.inner.rotation()
    }
    fn observation(&self) -> Option<&dyn Observation> {
        self.inner.observation()
    }
    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        self.inner.teardown()
    }
    fn harness_failure(&self) -> Option<String> {
        self.inner.harness_failure()
    }
}

/// Passes a testbed through a wrapper: see [`WrapFixture`].
pub type TestbedWrap = Box<dyn Fn(Box<dyn Testbed>) -> Box<dyn Testbed> + Send + Sync>;

/// Changes the hooks a fixture declares: see [`WrapFixture::with_hooks`].
pub type HooksWrap = Box<dyn Fn(Vec<Hook>) -> Vec<Hook> + Send + Sync>;

/// A fixture that is `inner` in every respect but the testbeds it opens, each of which
/// goes through `wrap` (often a [`WrapProviders`]), and, with
/// [`WrapFixture::with_hooks`], the hooks it declares. For a fixture that records,
/// hides or alters part of what the rules see while the rest is left as it is.
pub struct WrapFixture<F> {
    inner: F,
    wrap: TestbedWrap,
    hooks: Option<HooksWrap>,
}

impl<F: Fixture> WrapFixture<F> {
    /// `inner`, each testbed it opens passed through `wrap`.
    pub fn new(inner: F, wrap: TestbedWrap) -> WrapFixture<F> {
        WrapFixture {
            inner,
            wrap,
            hooks: None,
        }
    }

    /// The same, declaring the hooks `hooks` makes of `inner`'s.
    pub fn with_hooks(
        mut self,
        hooks: impl Fn(Vec<Hook>) -> Vec<Hook> + Send + Sync + 'static,
    ) -> WrapFixture<F> {
        self.hooks = Some(Box::new(hooks));
        self
    }
}

#[deny(clippy::missing_trait_methods)]
impl<F: Fixture> Fixture for WrapFixture<F> {
    fn provider_name(&self) -> String {
        self.inner.provider_name()
    }
    fn profile(&self) -> Profile {
        self.inner.profile()
    }
    fn provider_version(&self) -> String {
        self.inner.provider_version()
    }
    fn hooks(&self) -> Vec<Hook> {
        let hooks = self.inner.hooks();
        match &self.hooks {
            Some(change) => change(hooks),
            None => hooks,
        }
    }
    fn locations(&self) -> Vec<Location> {
        self.inner.locations()
    }
    fn has_checker(&self) -> bool {
        self.inner.has_checker()
    }
    fn is_real_backend(&self) -> bool {
        self.inner.is_real_backend()
    }
    fn environment(&self) -> BTreeMap<String, String> {
        self.inner.environment()
    }
    fn backend_versions(&self) -> BoxFuture<'_, BTreeMap<String, BTreeMap<String, String>>> {
        self.inner.backend_versions()
    }
    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async move { Ok((self.wrap)(self.inner.open().await?)) })
    }
}

/// One raw backend resource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Resource {
    /// The instance it belongs to; `None` for shared resources (base images, markers).
    pub instance: Option<String>,
    /// What it is (kvm2: `domain`, `overlay`, `seed`, `nvram`, `image`, `marker`).
    pub kind: String,
    /// Whether it is the instance itself rather than something it owns.
    pub primary: bool,
    /// Its backend name.
    pub name: String,
}

/// Reads raw backend resources out of band (leak checks, "creates nothing").
pub trait Inventory: Send + Sync {
    /// Every resource at `location`.
    fn resources<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<Vec<Resource>>>;
}

/// What to plant out of band under a name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Plant {
    /// A resource with no mark at all.
    Unmarked,
    /// A marked resource whose uid is someone else's.
    ForeignUid {
        /// The tag it carries.
        tag: String,
        /// The foreign uid.
        uid: String,
    },
    /// A marked resource with an empty uid, planted complete and running with an
    /// address, like an instance the provider made itself (Create must change nothing).
    EmptyUid {
        /// The tag it carries.
        tag: String,
    },
    /// A resource that carries the mark but cannot be read.
    Unreadable {
        /// The tag it carries.
        tag: String,
    },
}

/// A part of an instance to remove out of band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Part {
    /// Every secondary resource (disks, seed, firmware state).
    Secondary,
    /// The primary resource only, leaving the secondary ones.
    Primary,
    /// The container the secondary resources live in (kvm2: the storage pool).
    Container,
}

/// Plants and removes backend resources behind the provider's back.
pub trait Planting: Send + Sync {
    /// Plants `what` under `name` at `location`.
    fn plant<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        what: Plant,
    ) -> BoxFuture<'a, HookResult<()>>;

    /// A fingerprint of `name` at `location` (its state, mark and parts), or `None`
    /// when nothing of that name exists. Equal fingerprints mean untouched.
    fn inspect<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, HookResult<Option<String>>>;

    /// Removes `part` of the instance `name` at `location`.
    fn remove_part<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        part: Part,
    ) -> BoxFuture<'a, HookResult<()>>;

    /// Removes everything named `name` at `location` (cleanup of plants).
    fn remove<'a>(&'a self, location: &'a str, name: &'a str) -> BoxFuture<'a, HookResult<()>>;
}

/// Power states the suite can force out of band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Power {
    /// Running.
    Running,
    /// Paused.
    Paused,
    /// Shut off.
    Stopped,
}

/// Controls instance state out of band.
pub trait StateControl: Send + Sync {
    /// Forces the power state of `name`.
    fn set_power<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        power: Power,
    ) -> BoxFuture<'a, HookResult<()>>;

    /// Sets the addresses `name` reports.
    fn set_addresses<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        addrs: Vec<IpAddr>,
    ) -> BoxFuture<'a, HookResult<()>>;

    /// Makes the address lookup of `name` fail (or work again).
    fn fail_address_lookup<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        fail: bool,
    ) -> BoxFuture<'a, HookResult<()>>;

    /// Holds boots at every location: started instances get no address until released.
    fn hold_boot(&self, hold: bool) -> BoxFuture<'_, HookResult<()>>;
}

/// Sets a location's free capacity.
pub trait Capacity: Send + Sync {
    /// Sets the free capacity at `location`, in bytes; `None` restores it.
    fn set_free<'a>(
        &'a self,
        location: &'a str,
        bytes: Option<u64>,
    ) -> BoxFuture<'a, HookResult<()>>;
}

/// When an injected fault fires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Trigger {
    /// On the k-th backend call from now (1-based), counting calls at the fault's location.
    Nth(u64),
    /// On the next call of the named backend procedure.
    Named(String),
    /// On every call until cleared.
    Always,
}

/// What an injected fault does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum FaultKind {
    /// The backend answers with an error the provider must classify as Transient.
    Transient,
    /// The backend answers with an error the provider must classify as Permanent.
    Permanent,
    /// The backend answers "not found" for the object the call names.
    NotFound,
    /// The backend refuses for lack of capacity.
    Quota,
    /// The call never answers until faults are cleared.
    Hang,
    /// The call is delayed by this much, then proceeds.
    Delay(Duration),
    /// The connection drops during the call.
    Drop,
    /// The backend performs the call, then the connection drops before the reply
    /// reaches the provider (the provider cannot know whether the call took effect).
    LostReply,
}

/// One injection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FaultSpec {
    /// The location whose backend calls it applies to; `None` for every location.
    pub location: Option<String>,
    /// When it fires.
    pub trigger: Trigger,
    /// What it does.
    pub kind: FaultKind,
}

/// A handle to an injection, to ask whether it fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct FaultId(pub u64);

/// How a location answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Reachability {
    /// Normally.
    Up,
    /// Connections are refused at once.
    Refused,
    /// Connections are accepted and never answered.
    BlackHole,
}

/// Injects faults *below* the provider, at its backend seam.
pub trait Faults: Send + Sync {
    /// Injects a fault.
    fn inject(&self, spec: FaultSpec) -> HookResult<FaultId>;

    /// Whether the injection fired.
    fn fired(&self, id: FaultId) -> bool;

    /// Removes every injection and releases hung calls.
    fn clear(&self);

    /// Sets how `location` answers new connections; existing ones drop unless `Up`.
    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>>;

    /// Makes `location` unhealthy for `reason`, one of the reasons the provider's
    /// checker declares ([`Checker::extra_reasons`](crate::Checker::extra_reasons)),
    /// as its backend would come to be in the field (kvm2: its storage pool gone or
    /// inactive), and returns whether this fixture can produce that cause (`false`:
    /// CHK-REASONS records the reason as not checked). Connections already open stay
    /// open.
    fn cause<'a>(&'a self, location: &'a str, reason: &'a str) -> BoxFuture<'a, HookResult<bool>> {
        let _ = (location, reason);
        Box::pin(async { Ok(false) })
    }

    /// Undoes every [`cause`](Faults::cause) at `location`: the location is healthy
    /// again, and the provider needs no restart to see it.
    fn undo_cause<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        let _ = location;
        Box::pin(async { Ok(()) })
    }
}

/// A way to break a location's access, for the health-reason checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum AccessBreak {
    /// The credentials the provider holds are revoked and nothing replaces them.
    Revoke,
    /// The location presents a host key other than the one the provider trusts.
    ForeignHostKey,
    /// The credential file the provider reads is removed (as when a secret is not
    /// mounted yet).
    RemoveCredentials,
}

impl AccessBreak {
    /// Every way, in report order.
    pub const ALL: [AccessBreak; 3] = [
        AccessBreak::Revoke,
        AccessBreak::ForeignHostKey,
        AccessBreak::RemoveCredentials,
    ];

    /// The way's name as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            AccessBreak::Revoke => "revoke",
            AccessBreak::ForeignHostKey => "foreign-host-key",
            AccessBreak::RemoveCredentials => "remove-credentials",
        }
    }
}

/// Rotates credentials, and breaks access on purpose.
pub trait Rotation: Send + Sync {
    /// Installs new credentials at `location` and in the files the provider reads,
    /// and revokes the old ones. Connections already open stay open.
    fn rotate<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>>;

    /// Breaks access to `location` as `how` says, installing no replacement, and
    /// returns whether this fixture can produce that cause (`false`: the checks record
    /// the cause as not checked). Connections already open stay open.
    fn break_access<'a>(
        &'a self,
        location: &'a str,
        how: AccessBreak,
    ) -> BoxFuture<'a, HookResult<bool>> {
        let _ = (location, how);
        Box::pin(async { Ok(false) })
    }

    /// Undoes every [`break_access`](Rotation::break_access) at `location`.
    fn restore_access<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        let _ = location;
        Box::pin(async { Ok(()) })
    }
}

/// One backend call, as the backend saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BackendCall {
    /// The location called.
    pub location: String,
    /// The backend procedure's name (kvm2: `DomainDefineXML`).
    pub name: String,
    /// The identity of the connection it came on.
    pub connection: u64,
}

/// Verbosity tiers of the `logging` axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verbosity {
    /// Warnings and errors only; silent on success.
    V0,
    /// One outcome line per operation.
    V1,
    /// One line per backend call.
    V2,
}

/// Observes the backend and controls the provider's verbosity.
///
/// Log and span capture need no hook: the suite installs a `tracing` subscriber and
/// attributes what the provider emits under [`Ctx::span`](crate::Ctx::span) to the
/// rule that made the call.
pub trait Observation: Send + Sync {
    /// Every backend call since the testbed opened, in order.
    fn calls(&self) -> Vec<BackendCall>;

    /// How many connections the provider has opened to `location`.
    fn dials(&self, location: &str) -> u64;

    /// Sets the provider's verbosity.
    fn set_verbosity(&self, v: Verbosity);
}
