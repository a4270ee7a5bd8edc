//! The provider contract as code, and a generic conformance suite that checks any
//! provider against it.
//!
//! Without features this crate is the contract only: the [`Provider`] and [`Checker`]
//! traits, their types, the [`Error`] with its four kinds, the [`Profile`] axes, the
//! rule [`rules::CATALOGUE`] and the [`fixture`] API a provider author implements.
//! With the `suite` feature (not API-stable) it adds the checks, the runner, the
//! reporters, a libtest-mimic harness and a CLI entry. With `remote` it adds the
//! process protocol: a fixture bridging to a provider in another process, and `serve`
//! for offering a Rust fixture over it. It depends on no provider.

#![deny(missing_docs)]

pub mod clauses;
pub mod contract_doc;
mod ctx;
mod error;
pub mod expectations;
pub mod fixture;
pub mod profile;
mod provider;
pub mod rules;
mod types;

#[cfg(feature = "suite")]
pub mod suite;

#[cfg(feature = "remote")]
pub mod remote;

pub use ctx::{Ctx, Interrupted};
pub use error::{Error, ErrorKind, Op, Quota};
pub use profile::{Axis, AxisClass, Profile, ProfileError};
pub use provider::{BoxFuture, Checker, Provider, Result};
pub use types::{
    CloudInit, CreateRequest, HealthReason, HostHealth, Instance, InvalidField, Listing,
    MAX_NAME_LEN, MAX_TAG_LEN, MAX_UID_LEN, ProviderId, State, UnreachableLocation, is_usable_ipv4,
    validate_name, validate_request, validate_tag, validate_uid,
};
