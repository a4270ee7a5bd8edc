//! The provider's configuration: its name, the sites and the placements that map to
//! them, where its credentials come from, sizes, and the profile it declares (and
//! behaves as: every behaviour-checked value is honoured, see `TemplateConfig::profile`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use conformance::Profile;
use conformance::fixture::Verbosity;
use conformance::profile::{
    BackendTest, ChildSpans, ClientKind, CreateReturn, CreatedAt, Credentials, DeleteReturn,
    GcMark, IpSource, ListPartial, Logging, NotFoundMode, ProvisioningState, QuotaMode,
    SecondaryResources, Timeouts,
};

/// One configured site and the placement zone that maps to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteConfig {
    /// The site's name, used in IDs and reports.
    pub name: String,
    /// The placement zone a request names to land here.
    pub placement: String,
}

/// A shared, adjustable logging tier; every provider built from one config shares it.
#[derive(Clone, Debug)]
pub struct LogTier(Arc<AtomicU8>);

impl Default for LogTier {
    fn default() -> Self {
        LogTier::new(Verbosity::V1)
    }
}

impl LogTier {
    /// A tier starting at `v`.
    pub fn new(v: Verbosity) -> LogTier {
        let t = LogTier(Arc::default());
        t.set(v);
        t
    }

    /// Sets the tier.
    pub fn set(&self, v: Verbosity) {
        let n = match v {
            Verbosity::V0 => 0,
            Verbosity::V1 => 1,
            Verbosity::V2 => 2,
        };
        self.0.store(n, Ordering::Relaxed);
    }

    /// The current tier.
    pub fn get(&self) -> Verbosity {
        match self.0.load(Ordering::Relaxed) {
            0 => Verbosity::V0,
            1 => Verbosity::V1,
            _ => Verbosity::V2,
        }
    }
}

/// How a [`TemplateProvider`](crate::TemplateProvider) is set up.
#[derive(Clone, Debug)]
pub struct TemplateConfig {
    /// The provider name every error carries (default `template`).
    pub name: String,
    /// The sites, in configuration order.
    pub sites: Vec<SiteConfig>,
    /// The directory holding the credential files of each site, read on every
    /// dial: `<site>.token`, the token, and `<site>.known_host`, the identity the
    /// provider trusts the site to present (its host key).
    pub credentials_dir: PathBuf,
    /// Where the site tokens come from; the `credentials` axis of the profile follows it.
    pub credentials: CredentialSource,
    /// The size of each instance's disk, in bytes.
    pub disk_bytes: u64,
    /// The profile declared, and behaved as. Its `credentials` value is overridden by
    /// [`TemplateConfig::credentials`].
    pub declared: Profile,
    /// The logging tier.
    pub verbosity: LogTier,
    /// A profile reported instead of the one behaved as, for the mutants only.
    pub(crate) claimed: Option<Profile>,
}

impl TemplateConfig {
    /// The default two sites (`site-a` in `zone-a`, `site-b` in `zone-b`) with their
    /// credential files under `credentials_dir`.
    pub fn new(credentials_dir: impl Into<PathBuf>) -> TemplateConfig {
        TemplateConfig {
            name: "template".into(),
            sites: vec![
                SiteConfig {
                    name: "site-a".into(),
                    placement: "zone-a".into(),
                },
                SiteConfig {
                    name: "site-b".into(),
                    placement: "zone-b".into(),
                },
            ],
            credentials_dir: credentials_dir.into(),
            credentials: CredentialSource::MountedFiles,
            disk_bytes: 256 << 20,
            declared: TemplateConfig::default_profile(),
            verbosity: LogTier::default(),
            claimed: None,
        }
    }

    /// The credential file of `site`.
    pub fn token_file(&self, site: &str) -> PathBuf {
        self.credentials_dir.join(format!("{site}.token"))
    }

    /// The file holding the identity `site` is trusted to present (beside its token).
    pub fn known_host_file(&self, site: &str) -> PathBuf {
        self.credentials_dir.join(format!("{site}.known_host"))
    }

    /// The site a placement maps to.
    pub fn site_for(&self, placement: &str) -> Option<&SiteConfig> {
        self.sites.iter().find(|s| s.placement == placement)
    }

    /// Whether `site` is configured.
    pub fn has_site(&self, site: &str) -> bool {
        self.sites.iter().any(|s| s.name == site)
    }

    /// The profile the template declares unless told otherwise: early Create, backend
    /// tags, allocated addresses, partial listings, explicit secondary resources.
    pub fn default_profile() -> Profile {
        Profile::builder()
            .with_create_return(CreateReturn::Early)
            .with_provisioning_state(ProvisioningState::GetReports)
            .with_child_spans(ChildSpans::SpanDecorator)
            .with_quota(QuotaMode::Detected)
            .with_credentials(Credentials::MountedFiles)
            .with_client_kind(ClientKind::Sdk)
            .with_gc_mark(GcMark::BackendTags)
            .with_created_at(CreatedAt::WrittenAtCreate)
            .with_ip_source(IpSource::Allocated)
            .with_list_partial(ListPartial::Partial)
            .with_not_found(NotFoundMode::ErrorCode)
            .with_delete_return(DeleteReturn::Waits)
            .with_secondary_resources(SecondaryResources::Explicit)
            .with_timeouts(Timeouts::PerOperation)
            .with_logging(Logging::Tiered)
            .with_backend_test(BackendTest::None)
            .build()
            .expect("the template profile is a legal combination")
    }

    /// The profile this configuration declares: [`TemplateConfig::declared`] with the
    /// `credentials` value of its [`CredentialSource`].
    pub fn profile(&self) -> Profile {
        if let Some(claimed) = self.claimed {
            return claimed;
        }
        let credentials = match self.credentials {
            CredentialSource::MountedFiles => Credentials::MountedFiles,
            CredentialSource::Env(_) => Credentials::Env,
            CredentialSource::Inline(_) => Credentials::Inline,
        };
        self.declared
            .to_builder()
            .with_credentials(credentials)
            .build()
            .expect("the credentials axis takes part in no illegal combination")
    }
}

/// Where a provider's site tokens come from (`credentials` in the profile).
///
/// The identity each site is trusted to present is configuration, not a secret, and
/// always comes from `<site>.known_host` in the credential directory.
#[derive(Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// `<site>.token` in the credential directory, re-read on every dial: a rotated
    /// file is used from the next dial on.
    MountedFiles,
    /// An environment map handed over at construction (never the process environment),
    /// with `TEMPLATE_TOKEN_<SITE>` per site (upper case, `-` as `_`): a rotation
    /// reaches the provider when it is constructed again.
    Env(BTreeMap<String, String>),
    /// Tokens written into the configuration, per site name: as with `Env`, a rotation
    /// reaches the provider when it is constructed again.
    Inline(BTreeMap<String, String>),
}

impl std::fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens are secrets: only which keys are present is shown.
        match self {
            CredentialSource::MountedFiles => f.write_str("MountedFiles"),
            CredentialSource::Env(m) => f
                .debug_tuple("Env")
                .field(&m.keys().collect::<Vec<_>>())
                .finish(),
            CredentialSource::Inline(m) => f
                .debug_tuple("Inline")
                .field(&m.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// The environment variable holding `site`'s token under [`CredentialSource::Env`].
pub fn token_env_var(site: &str) -> String {
    format!(
        "TEMPLATE_TOKEN_{}",
        site.to_ascii_uppercase().replace('-', "_")
    )
}
