//! kvm2: the reference provider of the provider contract, for libvirt/KVM hosts.
//!
//! It speaks libvirt's remote protocol (the `libvirt-rpc` client over a stream the
//! [`Dialer`] opens, SSH in production), builds the domain and volume XML itself,
//! writes a cloud-init seed ISO of its own, marks every domain it makes with
//! `<instance managed= uid= createdAt=>` in its metadata namespace, and keeps no
//! state outside the hosts. [`Kvm2`] implements `conformance::Provider` and
//! `conformance::Checker`; [`fixture::Kvm2Fixture`] runs the conformance suite
//! against it on the in-memory libvirt fake served over the real wire protocol.

#![deny(missing_docs)]

mod backend;
mod check;
pub mod config;
mod create;
mod delete;
pub mod dialer;
mod errors;
#[cfg(feature = "fixtures")]
pub mod fixture;
#[doc(hidden)]
pub mod fuzzing;
mod get;
pub mod id;
pub mod image;
mod iso9660;
mod list;
mod lookup;
pub mod names;
mod provider;
pub mod seed;
pub mod state;
#[cfg(test)]
mod tests;
pub mod xml;

pub use check::EXTRA_REASONS;
pub use config::{Config, ConfigError};
pub use dialer::{AsyncReadWrite, DialError, Dialer, LocalSocketDialer, SshDialer};
pub use errors::{Failure, classify};
pub use image::{Download, HttpSource, ImageSource};
pub use iso9660::write_iso;
pub use provider::Kvm2;
