//! An in-memory libvirt host with real libvirt semantics: the backend the
//! hermetic tests of the `kvm2` provider stand on.
//!
//! [`FakeLibvirt`] holds domains, storage pools and volumes and answers every
//! call the way libvirtd 9.0 with the QEMU and storage drivers does, with
//! libvirt's own error numbers, domains and message texts. Calls go through a
//! [`FakeConnection`], where [`Faults`] can inject errors, delays, hangs and
//! dropped connections and the [`Trace`] records every call and dial. The
//! `server` module serves the same model over libvirt's remote protocol
//! (encoded by the `libvirt-wire` crate) on any byte stream, so the provider's
//! own RPC client can be tested end to end without libvirtd.
//!
//! Neighbours: `conformance` runs its suite against `kvm2` on top of this
//! crate; `libvirt-wire` owns the packet and XDR format. Nothing here depends
//! on the provider.
#![deny(missing_docs)]

mod connection;
mod error;
mod fake;
mod fault;
mod procedure;
mod server;
mod state;
mod trace;
mod types;
mod upload;
mod xml;

pub use connection::{FakeConnection, Upload};
pub use error::{CallError, LEVEL_ERROR, VirError, code, domain};
pub use fake::{DialMode, FakeLibvirt};
pub use fault::{Fault, FaultHandle, FaultRule, Faults, Trigger};
pub use procedure::Procedure;
pub use server::{ServerOptions, UnixServer};
pub use state::{DomainSnapshot, HostConfig, VolumeSnapshot};
pub use trace::{ConnectionInfo, Trace, TraceEntry};
pub use types::{
    AddressSource, DomainInfo, DomainRef, DomainState, Interface, IpAddr, MetadataEntry, PoolInfo,
    PoolRef, PoolState, VolInfo, VolRef, flags, reason,
};
pub use upload::VolumeContent;
