//! The fixture that runs the conformance suite against the template provider: every
//! testbed gets a fresh [`SimBackend`], a fresh credential directory and a fresh
//! provider, and offers all seven hooks straight from the backend.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use conformance::fixture::{
    AccessBreak, BackendCall, Capacity, FaultId, FaultSpec, Faults, Fixture, Hook, HookError,
    HookResult, Inventory, Location, Observation, Part, Plant, Planting, Power, Reachability,
    Resource, Rotation, StateControl, Testbed, Verbosity,
};
use conformance::profile::{
    CreateReturn, Credentials, DeleteReturn, GcMark, ListPartial, ProvisioningState,
    SecondaryResources,
};
use conformance::{BoxFuture, CloudInit, CreateRequest, Profile, Provider, ProviderId};

/// How long the backend takes to remove an instance after accepting its undefine, under
/// `delete-return=early`.
pub const UNDEFINE_DELAY: Duration = Duration::from_millis(40);

use crate::backend::{BackendConfig, SimBackend, initial_identity, initial_token};
use crate::config::{CredentialSource, LogTier, TemplateConfig, token_env_var};
use crate::id::{instance_id, parse_id};
use crate::provider::{CONTAINER_MISSING, TemplateProvider};

/// Builds the provider a testbed hands out; mutants replace it.
pub(crate) type Build = fn(TemplateProvider) -> Arc<dyn Provider>;

fn plain(p: TemplateProvider) -> Arc<dyn Provider> {
    Arc::new(p)
}

/// The template provider's fixture.
///
/// `TemplateFixture::default()` is the provider as shipped
/// ([`TemplateConfig::default_profile`]: early Create, partial listings, ...), a 5 ms
/// boot and 0.2 ms per backend call. [`TemplateFixture::with_profile`] makes it declare
/// and behave as any legal profile; the other builder methods tune the timing.
#[derive(Clone)]
pub struct TemplateFixture {
    name: String,
    boot_delay: Duration,
    latency: Duration,
    profile: Profile,
    build: Build,
    /// What the mutants change around the provider: a claimed profile, the backend's
    /// cascading, a restart that ignores rotated credentials.
    pub(crate) twists: FixtureTwists,
}

/// Fixture-level changes the declaration mutants make.
#[derive(Clone, Copy, Default)]
pub(crate) struct FixtureTwists {
    /// Report this profile instead of the one behaved as.
    pub claim: Option<Profile>,
    /// Whether the backend cascades, whatever the profile says.
    pub cascade: Option<bool>,
    /// A restarted provider gets the credentials of the testbed's start.
    pub restart_keeps_credentials: bool,
    /// How long an accepted undefine takes, whatever the profile says.
    pub undefine_delay: Option<Duration>,
    /// A hook that lies, so that a rule relying on it would test nothing.
    pub lie: Option<Lie>,
}

/// A way a fixture's hook can lie (each is the harness's Error, naming the hook).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lie {
    /// `planting/inspect` gives the same fingerprint whatever happens to what exists.
    FingerprintNeverChanges,
    /// `planting/inspect` leaves an instance's parts out of its fingerprint.
    FingerprintIgnoresParts,
    /// `inventory/resources` shows nothing.
    InventoryEmpty,
    /// `inventory/resources` attributes every volume to an instance nobody made.
    InventoryNamesAStranger,
    /// Every injected fault is reported fired and does nothing.
    FaultsFireIdle,
}

/// The lying fixtures: each name with the hook its lie is in, the rules whose checks
/// rely on that hook (each must be the harness's Error naming it), and the fixture.
pub const FIXTURE_LIES: &[(&str, &str, &[&str], Lie)] = &[
    (
        "fingerprint-never-changes",
        "planting",
        &["DEL-OWNERSHIP", "CRE-ADOPT-GUARD"],
        Lie::FingerprintNeverChanges,
    ),
    (
        "fingerprint-ignores-parts",
        "planting",
        &["DEL-OWNERSHIP", "CRE-ADOPT-GUARD"],
        Lie::FingerprintIgnoresParts,
    ),
    (
        "inventory-always-empty",
        "inventory",
        &["CRE-IDEMPOTENT", "CRE-CONCURRENT"],
        Lie::InventoryEmpty,
    ),
    (
        "inventory-names-a-stranger",
        "inventory",
        &["CRE-IDEMPOTENT"],
        Lie::InventoryNamesAStranger,
    ),
    (
        "faults-fire-and-do-nothing",
        "faults",
        &["CRE-RESUME", "DEL-RESUME"],
        Lie::FaultsFireIdle,
    ),
];

impl TemplateFixture {
    /// The template's correct provider under a fixture that tells `lie`.
    pub fn lying(lie: Lie) -> TemplateFixture {
        let mut f = TemplateFixture::default();
        f.twists.lie = Some(lie);
        f
    }
}

impl Default for TemplateFixture {
    fn default() -> Self {
        let b = BackendConfig::default();
        TemplateFixture {
            name: "template".into(),
            boot_delay: b.boot_delay,
            latency: b.latency,
            profile: TemplateConfig::default_profile(),
            build: plain,
            twists: FixtureTwists::default(),
        }
    }
}

impl TemplateFixture {
    /// Sets the provider name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets how long a started instance takes to get its address.
    pub fn with_boot_delay(mut self, d: Duration) -> Self {
        self.boot_delay = d;
        self
    }

    /// Sets the latency of every backend call.
    pub fn with_latency(mut self, d: Duration) -> Self {
        self.latency = d;
        self
    }

    /// Declares `profile` and behaves as it: every behaviour-checked value is honoured
    /// (the declared-only axes are reported as given).
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Makes Create wait until Running (`create-return=blocking`,
    /// `provisioning-state=create-blocks`).
    pub fn blocking(self) -> Self {
        let p = self
            .profile
            .to_builder()
            .with_create_return(CreateReturn::Blocking)
            .with_provisioning_state(ProvisioningState::CreateBlocks)
            .build()
            .expect("blocking with create-blocks is legal");
        self.with_profile(p)
    }

    /// Makes one unreachable site fail the whole listing (`list-partial=fail-whole`).
    pub fn fail_whole(self) -> Self {
        let p = self
            .profile
            .to_builder()
            .with_list_partial(ListPartial::FailWhole)
            .build()
            .expect("list-partial takes part in no illegal combination");
        self.with_profile(p)
    }

    pub(crate) fn with_build(mut self, build: Build) -> Self {
        self.build = build;
        self
    }

    fn config(&self, dir: &std::path::Path, verbosity: LogTier) -> TemplateConfig {
        let mut c = TemplateConfig::new(dir);
        c.name = self.name.clone();
        c.declared = self.profile;
        c.credentials = match self.profile.credentials() {
            Credentials::MountedFiles => CredentialSource::MountedFiles,
            Credentials::Env => CredentialSource::Env(
                c.sites
                    .iter()
                    .map(|s| (token_env_var(&s.name), initial_token(&s.name)))
                    .collect(),
            ),
            Credentials::Inline => CredentialSource::Inline(
                c.sites
                    .iter()
                    .map(|s| (s.name.clone(), initial_token(&s.name)))
                    .collect(),
            ),
        };
        c.verbosity = verbosity;
        c.claimed = self.twists.claim;
        c
    }

    fn backend_config(&self, sites: Vec<String>) -> BackendConfig {
        BackendConfig {
            sites,
            boot_delay: self.boot_delay,
            latency: self.latency,
            cascade: self
                .twists
                .cascade
                .unwrap_or(self.profile.secondary_resources() == SecondaryResources::Cascaded),
            name_marks: self.profile.gc_mark() == GcMark::NamePrefix,
            undefine_delay:
                self.twists
                    .undefine_delay
                    .or((self.profile.delete_return() == DeleteReturn::Early)
                        .then_some(UNDEFINE_DELAY)),
            ..BackendConfig::default()
        }
    }

    /// The provider this fixture hands out, over a throwaway backend (no I/O).
    fn sample(&self) -> Arc<dyn Provider> {
        let config = self.config(std::path::Path::new("/nonexistent"), LogTier::default());
        let sites = config.sites.iter().map(|s| s.name.clone()).collect();
        let backend = SimBackend::new(&self.backend_config(sites));
        (self.build)(TemplateProvider::new(config, backend))
    }
}

impl Fixture for TemplateFixture {
    fn provider_name(&self) -> String {
        self.name.clone()
    }

    fn profile(&self) -> Profile {
        self.sample().profile()
    }

    fn provider_version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_owned()
    }

    fn hooks(&self) -> Vec<Hook> {
        Hook::ALL.to_vec()
    }

    fn locations(&self) -> Vec<Location> {
        TemplateConfig::new("")
            .sites
            .into_iter()
            .map(|s| Location {
                name: s.name,
                placement: s.placement,
            })
            .collect()
    }

    fn has_checker(&self) -> bool {
        self.sample().checker().is_some()
    }

    fn environment(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("backend".into(), "in-memory simulated backend".into()),
            ("bootDelay".into(), format!("{:?}", self.boot_delay)),
            ("callLatency".into(), format!("{:?}", self.latency)),
            (
                "undefineDelay".into(),
                match self.profile.delete_return() {
                    DeleteReturn::Waits => "none".into(),
                    DeleteReturn::Early => format!("{UNDEFINE_DELAY:?}"),
                },
            ),
        ])
    }

    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async move {
            let dir = tempfile::tempdir().map_err(|e| HookError::new(format!("temp dir: {e}")))?;
            let config = self.config(dir.path(), LogTier::new(Verbosity::V1));
            let sites: Vec<String> = config.sites.iter().map(|s| s.name.clone()).collect();
            for s in &sites {
                std::fs::write(config.token_file(s), initial_token(s))
                    .and_then(|()| std::fs::write(config.known_host_file(s), initial_identity(s)))
                    .map_err(|e| {
                        HookError::new(format!("writing the credential files of {s}: {e}"))
                    })?;
            }
            let backend = SimBackend::new(&self.backend_config(sites));
            let provider = (self.build)(TemplateProvider::new(config.clone(), backend.clone()));
            Ok(Box::new(TemplateTestbed {
                credentials: std::sync::Mutex::new(config.credentials.clone()),
                restart_keeps_credentials: self.twists.restart_keeps_credentials,
                config,
                backend,
                provider,
                build: self.build,
                rotations: std::sync::atomic::AtomicU64::new(0),
                lie: self.twists.lie,
                idle_faults: std::sync::Mutex::default(),
                _dir: dir,
            }) as Box<dyn Testbed>)
        })
    }
}

/// One rule's backend, credential directory and provider.
pub struct TemplateTestbed {
    config: TemplateConfig,
    /// The credentials a provider constructed now gets: with `env` and `inline`, a
    /// rotation lands here and reaches a provider only when it is constructed again.
    credentials: std::sync::Mutex<CredentialSource>,
    restart_keeps_credentials: bool,
    backend: SimBackend,
    provider: Arc<dyn Provider>,
    build: Build,
    rotations: std::sync::atomic::AtomicU64,
    lie: Option<Lie>,
    /// The faults a lying faults hook accepted and did nothing with.
    idle_faults: std::sync::Mutex<Vec<FaultId>>,
    _dir: tempfile::TempDir,
}

impl TemplateTestbed {
    /// The backend under this testbed.
    pub fn backend(&self) -> &SimBackend {
        &self.backend
    }

    fn current_credentials(&self) -> CredentialSource {
        self.credentials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Hands `token` to `location` wherever this testbed's credentials live: the file
    /// (read by the running provider at its next dial), or the environment map or
    /// inline tokens (read by the next provider constructed).
    fn hand_out(&self, location: &str, token: &str) -> HookResult<()> {
        let mut creds = self.credentials.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *creds {
            CredentialSource::MountedFiles => {
                std::fs::write(self.config.token_file(location), token)
                    .map_err(|e| HookError::new(format!("writing the credential file: {e}")))
            }
            CredentialSource::Env(env) => {
                env.insert(token_env_var(location), token.to_owned());
                Ok(())
            }
            CredentialSource::Inline(tokens) => {
                tokens.insert(location.to_owned(), token.to_owned());
                Ok(())
            }
        }
    }

    /// The token a provider constructed now would present to `location`.
    fn held_token(&self, location: &str) -> HookResult<String> {
        match self.current_credentials() {
            CredentialSource::MountedFiles => {
                let path = self.config.token_file(location);
                std::fs::read_to_string(&path)
                    .map(|t| t.trim().to_owned())
                    .map_err(|e| HookError::new(format!("reading {}: {e}", path.display())))
            }
            CredentialSource::Env(env) => {
                env.get(&token_env_var(location)).cloned().ok_or_else(|| {
                    HookError::new(format!("no token for {location} in the environment map"))
                })
            }
            CredentialSource::Inline(tokens) => tokens
                .get(location)
                .cloned()
                .ok_or_else(|| HookError::new(format!("no inline token for {location}"))),
        }
    }
}

fn hook<T>(r: Result<T, String>) -> HookResult<T> {
    r.map_err(HookError)
}

impl Testbed for TemplateTestbed {
    fn provider(&self) -> Arc<dyn Provider> {
        self.provider.clone()
    }

    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        let mut config = self.config.clone();
        if !self.restart_keeps_credentials {
            config.credentials = self.current_credentials();
        }
        Ok((self.build)(TemplateProvider::new(
            config,
            self.backend.clone(),
        )))
    }

    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest {
        CreateRequest {
            name: name.to_owned(),
            uid: format!("owner-{name}"),
            tag: tag.to_owned(),
            placement: location.placement.clone(),
            image: None,
            cloud_init: CloudInit::new(format!("#cloud-config\nhostname: {name}\n")),
        }
    }

    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        instance_id(location, name)
    }

    fn location_of(&self, id: &ProviderId) -> Option<String> {
        parse_id(id).map(|(site, _)| site.to_owned())
    }

    fn malformed_ids(&self) -> Vec<String> {
        [
            "",
            "sites",
            "sites/site-a",
            "sites/site-a/instances",
            "sites/site-a/instances/",
            "sites//instances/web",
            "sites/site-a/instances/web/disk",
            "/sites/site-a/instances/web",
            "hosts/site-a/domains/web",
            "sites/site-a/instances/Web",
            "sites/site-a/instances/../web",
            "sites/site-a/instances/web<1>",
        ]
        .map(String::from)
        .to_vec()
    }

    fn unconfigured_id(&self, name: &str) -> ProviderId {
        instance_id("site-z", name)
    }

    fn inventory(&self) -> Option<&dyn Inventory> {
        Some(self)
    }
    fn planting(&self) -> Option<&dyn Planting> {
        Some(self)
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        Some(self)
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        Some(self)
    }
    fn faults(&self) -> Option<&dyn Faults> {
        Some(self)
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        Some(self)
    }
    fn observation(&self) -> Option<&dyn Observation> {
        Some(self)
    }

    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async move {
            self.backend.clear_faults();
            Ok(())
        })
    }
}

impl Inventory for TemplateTestbed {
    fn resources<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<Vec<Resource>>> {
        Box::pin(async move {
            let mut seen = hook(self.backend.resources(location))?;
            match self.lie {
                Some(Lie::InventoryEmpty) => seen.clear(),
                Some(Lie::InventoryNamesAStranger) => {
                    for r in seen.iter_mut().filter(|r| !r.primary) {
                        r.instance = Some("xyzzy".into());
                    }
                }
                _ => {}
            }
            Ok(seen)
        })
    }
}

impl Planting for TemplateTestbed {
    fn plant<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        what: Plant,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { hook(self.backend.plant(location, name, what)) })
    }

    fn inspect<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, HookResult<Option<String>>> {
        Box::pin(async move {
            let seen = hook(self.backend.inspect(location, name))?;
            match self.lie {
                Some(Lie::FingerprintNeverChanges) => {
                    return Ok(seen.map(|_| "present".to_owned()));
                }
                Some(Lie::FingerprintIgnoresParts) => {
                    return Ok(
                        seen.map(|f| f.split(" parts ").next().unwrap_or_default().to_owned())
                    );
                }
                _ => {}
            }
            Ok(seen)
        })
    }

    fn remove_part<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        part: Part,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            hook(match part {
                Part::Secondary => self.backend.remove_secondary(location, name),
                Part::Primary => self.backend.remove_primary(location, name),
                Part::Container => self.backend.remove_container(location),
            })
        })
    }

    fn remove<'a>(&'a self, location: &'a str, name: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { hook(self.backend.remove_all(location, name)) })
    }
}

impl StateControl for TemplateTestbed {
    fn set_power<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        power: Power,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { hook(self.backend.set_power(location, name, power)) })
    }

    fn set_addresses<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        addrs: Vec<IpAddr>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { hook(self.backend.set_addresses(location, name, addrs)) })
    }

    fn fail_address_lookup<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        fail: bool,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { hook(self.backend.fail_address_lookup(location, name, fail)) })
    }

    fn hold_boot(&self, hold: bool) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async move {
            self.backend.hold_boot(hold);
            Ok(())
        })
    }
}

impl Capacity for TemplateTestbed {
    fn set_free<'a>(
        &'a self,
        location: &'a str,
        bytes: Option<u64>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { hook(self.backend.set_free(location, bytes)) })
    }
}

impl Faults for TemplateTestbed {
    fn inject(&self, spec: FaultSpec) -> HookResult<FaultId> {
        if self.lie == Some(Lie::FaultsFireIdle) {
            let mut idle = self.idle_faults.lock().unwrap();
            let id = FaultId(u64::MAX - idle.len() as u64);
            idle.push(id);
            return Ok(id);
        }
        hook(self.backend.inject(spec))
    }

    fn fired(&self, id: FaultId) -> bool {
        self.idle_faults.lock().unwrap().contains(&id) || self.backend.fired(id)
    }

    fn clear(&self) {
        self.backend.clear_faults();
    }

    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { hook(self.backend.set_reachability(location, r)) })
    }

    fn cause<'a>(&'a self, location: &'a str, reason: &'a str) -> BoxFuture<'a, HookResult<bool>> {
        Box::pin(async move {
            if reason != CONTAINER_MISSING {
                return Ok(false);
            }
            // The site's volume store goes, with everything in it.
            hook(self.backend.remove_container(location))?;
            Ok(true)
        })
    }

    fn undo_cause<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        // The store comes back with the base image in it, as an operator restores it.
        Box::pin(async move { hook(self.backend.restore_container(location)) })
    }
}

impl Rotation for TemplateTestbed {
    fn rotate<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let n = self
                .rotations
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            let token = format!("token-{location}-{n}");
            self.hand_out(location, &token)?;
            hook(self.backend.set_token(location, token))
        })
    }

    fn break_access<'a>(
        &'a self,
        location: &'a str,
        how: AccessBreak,
    ) -> BoxFuture<'a, HookResult<bool>> {
        Box::pin(async move {
            if !self.config.has_site(location) {
                return Err(HookError::new(format!("no site {location}")));
            }
            match how {
                // The site accepts a token nobody holds.
                AccessBreak::Revoke => {
                    let n = self
                        .rotations
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        + 1;
                    hook(
                        self.backend
                            .set_token(location, format!("revoked-{location}-{n}")),
                    )?;
                }
                // The site presents an identity other than the one the provider trusts.
                AccessBreak::ForeignHostKey => hook(
                    self.backend
                        .set_identity(location, format!("foreign-identity-{location}")),
                )?,
                // Environment and inline tokens were handed over at construction: a
                // running provider cannot lose them.
                AccessBreak::RemoveCredentials
                    if self.current_credentials() != CredentialSource::MountedFiles =>
                {
                    return Ok(false);
                }
                // The token file goes aside, as a secret not mounted yet.
                AccessBreak::RemoveCredentials => {
                    let file = self.config.token_file(location);
                    if file.exists() {
                        std::fs::rename(&file, aside(&file)).map_err(|e| {
                            HookError::new(format!("moving the credential file aside: {e}"))
                        })?;
                    }
                }
            }
            Ok(true)
        })
    }

    fn restore_access<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let file = self.config.token_file(location);
            let moved = aside(&file);
            if moved.exists() {
                let r = if file.exists() {
                    // Rotated while removed: the new file stands.
                    std::fs::remove_file(&moved)
                } else {
                    std::fs::rename(&moved, &file)
                };
                r.map_err(|e| HookError::new(format!("putting the credential file back: {e}")))?;
            }
            // The site accepts what the provider holds and presents what it trusts.
            hook(self.backend.set_token(location, self.held_token(location)?))?;
            let path = self.config.known_host_file(location);
            let trusted = std::fs::read_to_string(&path)
                .map(|t| t.trim().to_owned())
                .map_err(|e| HookError::new(format!("reading {}: {e}", path.display())))?;
            hook(self.backend.set_identity(location, trusted))
        })
    }
}

/// Where a credential file waits while it is "not mounted".
fn aside(file: &std::path::Path) -> std::path::PathBuf {
    file.with_extension("token.removed")
}

impl Observation for TemplateTestbed {
    fn calls(&self) -> Vec<BackendCall> {
        self.backend.calls()
    }

    fn dials(&self, location: &str) -> u64 {
        self.backend.dials(location)
    }

    fn set_verbosity(&self, v: Verbosity) {
        self.config.verbosity.set(v);
    }
}

#[cfg(test)]
mod tests {
    use conformance::{Ctx, HealthReason};

    use super::*;

    async fn health(tb: &dyn Testbed) -> Vec<(String, HealthReason)> {
        let ctx = Ctx::with_timeout(Duration::from_secs(5));
        let p = tb.provider();
        p.checker()
            .expect("the template has a checker")
            .check(&ctx)
            .await
            .into_iter()
            .map(|h| {
                assert_eq!(h.ready, h.reason == HealthReason::Ready, "{h:?}");
                (h.location, h.reason)
            })
            .collect()
    }

    fn all_ready() -> Vec<(String, HealthReason)> {
        vec![
            ("site-a".into(), HealthReason::Ready),
            ("site-b".into(), HealthReason::Ready),
        ]
    }

    #[tokio::test]
    async fn each_access_break_names_its_reason_at_one_site_until_restored() {
        for (how, want) in [
            (AccessBreak::Revoke, HealthReason::AuthFailed),
            (AccessBreak::ForeignHostKey, HealthReason::HostKeyRejected),
            (
                AccessBreak::RemoveCredentials,
                HealthReason::CredentialsUnavailable,
            ),
        ] {
            let tb = TemplateFixture::default().open().await.unwrap();
            let rotation = tb.rotation().unwrap();
            let p = tb.provider();
            let ctx = Ctx::with_timeout(Duration::from_secs(5));
            assert_eq!(health(tb.as_ref()).await, all_ready(), "{how:?}");
            // The operations' connection, open before the break, stays usable.
            p.list_by_tag(&ctx, "t").await.unwrap();

            assert!(rotation.break_access("site-a", how).await.unwrap());
            assert_eq!(
                health(tb.as_ref()).await,
                [
                    ("site-a".into(), want),
                    ("site-b".into(), HealthReason::Ready)
                ],
                "{how:?}"
            );
            let listing = p.list_by_tag(&ctx, "t").await.unwrap();
            assert!(listing.unreachable.is_empty(), "{how:?}: {listing:?}");

            rotation.restore_access("site-a").await.unwrap();
            assert_eq!(health(tb.as_ref()).await, all_ready(), "{how:?}");
        }
    }

    #[tokio::test]
    async fn the_declared_cause_names_its_reason_at_one_site_until_undone() {
        let fixture = TemplateFixture::default();
        let tb = fixture.open().await.unwrap();
        let faults = tb.faults().unwrap();
        assert!(!faults.cause("site-a", "PoolNotFound").await.unwrap());
        assert_eq!(health(tb.as_ref()).await, all_ready());
        assert!(faults.cause("site-a", CONTAINER_MISSING).await.unwrap());
        assert_eq!(
            health(tb.as_ref()).await,
            [
                (
                    "site-a".into(),
                    HealthReason::Other(CONTAINER_MISSING.into())
                ),
                ("site-b".into(), HealthReason::Ready)
            ]
        );
        faults.undo_cause("site-a").await.unwrap();
        assert_eq!(health(tb.as_ref()).await, all_ready());
        // The base image came back: a Create works again without a restart.
        let ctx = Ctx::with_timeout(Duration::from_secs(5));
        let req = tb.request("after-undo", "t", &fixture.locations()[0]);
        let id = tb.provider().create(&ctx, &req).await.unwrap();
        tb.provider().delete(&ctx, &id).await.unwrap();
        assert!(faults.cause("site-z", CONTAINER_MISSING).await.is_err());
    }

    #[tokio::test]
    async fn a_foreign_identity_is_permanent_for_operations_that_dial() {
        let tb = TemplateFixture::default().open().await.unwrap();
        let rotation = tb.rotation().unwrap();
        let p = tb.provider();
        let ctx = Ctx::with_timeout(Duration::from_secs(5));
        assert!(
            rotation
                .break_access("site-a", AccessBreak::ForeignHostKey)
                .await
                .unwrap()
        );
        // No connection is cached yet: Get dials and is refused for good.
        let e = p
            .get(&ctx, &tb.id_for("site-a", "nobody"))
            .await
            .unwrap_err();
        assert!(e.is_permanent(), "{e}");
        rotation.restore_access("site-a").await.unwrap();
        let e = p
            .get(&ctx, &tb.id_for("site-a", "nobody"))
            .await
            .unwrap_err();
        assert_eq!(e.kind().name(), "NotFound", "{e}");
    }

    #[tokio::test]
    async fn one_restore_undoes_every_break_and_keeps_a_rotation_made_meanwhile() {
        let tb = TemplateFixture::default().open().await.unwrap();
        let rotation = tb.rotation().unwrap();
        for how in AccessBreak::ALL {
            assert!(rotation.break_access("site-b", how).await.unwrap());
        }
        // The token file is read first: its absence is what the check names.
        assert_eq!(
            health(tb.as_ref()).await[1].1,
            HealthReason::CredentialsUnavailable
        );
        rotation.rotate("site-b").await.unwrap();
        rotation.restore_access("site-b").await.unwrap();
        assert_eq!(health(tb.as_ref()).await, all_ready());
        // Restoring with nothing broken changes nothing.
        rotation.restore_access("site-b").await.unwrap();
        assert_eq!(health(tb.as_ref()).await, all_ready());
        assert!(
            rotation
                .break_access("site-z", AccessBreak::Revoke)
                .await
                .is_err()
        );
    }
}
