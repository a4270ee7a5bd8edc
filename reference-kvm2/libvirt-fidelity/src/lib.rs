//! Fidelity of the in-memory libvirt fake, measured against a real libvirtd.
//!
//! The same scripted RPC sequences ([`script`]) run through
//! `libvirt_rpc::Client` on two sides: the `libvirt-fake` host served over an
//! in-memory duplex, and a real libvirtd on `qemu:///system` reached through
//! its Unix socket ([`target`]). Each step's result is recorded and
//! normalised for what legitimately differs between two hosts (UUIDs of
//! pools, the pool's directory, host names, versions, file system block
//! sizes), and [`record::compare`] names every step where the two disagree.
//! [`exercise`] calls every procedure the client has, with expectations of
//! its own, on either side; the `rpc` bench compares call rates of the
//! client (sequential and pipelined) with `virsh`.
//!
//! Neighbours: `libvirt-rpc` (the client under test), `libvirt-fake` (the
//! model under test), `libvirt-wire` (types), and `scripts/libvirt-host.sh`,
//! which stands up the real host the gated checks use. Without a host the
//! gated checks print why they skip and pass.

#![deny(missing_docs)]

pub mod backend;
pub mod data;
pub mod exercise;
pub mod record;
pub mod script;
pub mod target;
pub mod xmlsum;

pub use backend::{Backend, real_or_skip};
pub use record::{Comparison, Step, compare};
pub use script::{RunNames, SideRun, run_side};
pub use target::{Gate, RealTarget, gate};
