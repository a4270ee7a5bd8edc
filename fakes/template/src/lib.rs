//! The template provider: an in-memory provider over a simulated backend, written as
//! the example a new provider's author copies, together with its conformance fixture
//! and the mutant providers that prove the suite catches each violation.
//!
//! [`SimBackend`] plays the backend (sites, instances, disks, seeds, capacity,
//! credentials, faults and a call trace); [`TemplateProvider`] implements
//! [`conformance::Provider`] and [`conformance::Checker`] over it; [`TemplateFixture`]
//! implements [`conformance::fixture::Fixture`] with every hook; [`mutants::MUTANTS`]
//! lists deliberately broken variants and the rules each must break.
//! Neighbours: `conformance` (the contract and the suite) and nothing else.
//!
//! ```
//! use conformance::{CloudInit, CreateRequest, Ctx, Provider, State};
//! use template_provider::{BackendConfig, SimBackend, TemplateConfig, TemplateProvider};
//!
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() {
//! // Per site a credential file and the identity the site is trusted to present,
//! // both read on every dial.
//! let dir = tempfile::tempdir().unwrap();
//! for site in ["site-a", "site-b"] {
//!     std::fs::write(dir.path().join(format!("{site}.token")), format!("token-{site}-0")).unwrap();
//!     std::fs::write(dir.path().join(format!("{site}.known_host")), format!("identity-{site}-0"))
//!         .unwrap();
//! }
//! let backend = SimBackend::new(&BackendConfig::default());
//! let provider = TemplateProvider::new(TemplateConfig::new(dir.path()), backend);
//!
//! let req = CreateRequest {
//!     name: "web-1".into(),
//!     uid: "owner-1".into(),
//!     tag: "managed".into(),
//!     placement: "zone-a".into(),
//!     image: None,
//!     cloud_init: CloudInit::new("#cloud-config\n"),
//! };
//! let ctx = Ctx::with_timeout(std::time::Duration::from_secs(5));
//! let id = provider.create(&ctx, &req).await.unwrap();
//! assert_eq!(id.as_str(), "sites/site-a/instances/web-1");
//! // Create returns early; the instance gets its address once it has booted.
//! loop {
//!     let got = provider.get(&ctx, &id).await.unwrap();
//!     if got.state == State::Running {
//!         assert!(got.ipv4.is_some());
//!         break;
//!     }
//!     tokio::time::sleep(std::time::Duration::from_millis(2)).await;
//! }
//! provider.delete(&ctx, &id).await.unwrap();
//! assert!(provider.get(&ctx, &id).await.unwrap_err().is_not_found());
//! # }
//! ```

#![deny(missing_docs)]

pub mod backend;
mod config;
mod fixture;
mod id;
mod locks;
mod matrix;
pub mod mutants;
mod provider;

pub use backend::{BackendConfig, SimBackend};
pub use config::{CredentialSource, LogTier, SiteConfig, TemplateConfig, token_env_var};
pub use fixture::{FIXTURE_LIES, Lie, TemplateFixture, TemplateTestbed};
pub use id::{instance_id, parse_id};
pub use matrix::{covering_profiles, covering_rows};
pub use provider::{CONTAINER_MISSING, Failure, TemplateProvider, classify, state_of};
