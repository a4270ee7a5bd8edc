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

#![deny(missing_docs)]

pub mod backend;
mod config;
mod fixture;
mod id;
mod locks;
pub mod mutants;
mod provider;

pub use backend::{BackendConfig, SimBackend};
pub use config::{LogTier, SiteConfig, TemplateConfig};
pub use fixture::{TemplateFixture, TemplateTestbed};
pub use id::{instance_id, parse_id};
pub use provider::{CONTAINER_MISSING, Failure, TemplateProvider, classify, state_of};
