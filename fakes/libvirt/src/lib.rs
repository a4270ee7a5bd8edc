//! An in-memory libvirt host with real libvirt semantics: the backend the
//! hermetic tests of the `kvm2` provider stand on.
//!
//! [`FakeLibvirt`] holds domains, storage pools and volumes and answers every
//! call the way libvirtd with the QEMU and storage drivers does, with
//! libvirt's own error numbers, domains and message texts: 11.x, the version
//! production hosts run (`libvirt-fidelity` compares the two step by step;
//! 9.0 answered the same everywhere but for uploads past their declared
//! length, see [`FakeLibvirt::is_wedged`]). Calls go through a
//! [`FakeConnection`], where [`Faults`] can inject errors, delays, hangs and
//! dropped connections and the [`Trace`] records every call and dial. The
//! same model is served over libvirt's remote protocol (packets from the
//! `libvirt-wire` crate) on any byte stream by [`FakeLibvirt::serve`],
//! [`FakeLibvirt::duplex`] and [`FakeLibvirt::serve_unix`], so the provider's
//! own RPC client is tested end to end without libvirtd. The `fake-libvirtd`
//! binary serves it as a daemon that virsh and other libvirt clients use,
//! starting from a [`StateFile`] (see the crate's README), and [`control`]
//! steers such a daemon from outside its process.
//!
//! Neighbours: `conformance` runs its suite against `kvm2` on top of this
//! crate; `libvirt-wire` owns the packet and XDR format. Nothing here depends
//! on the provider.
//!
//! ```
//! use libvirt_fake::{FakeLibvirt, Fault, FaultRule};
//! use libvirt_wire::{ErrorCode, Procedure};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let fake = FakeLibvirt::new();
//! fake.add_pool("default", "/var/lib/libvirt/images", 100 << 30);
//! let conn = fake.connect().unwrap();
//! conn.auth_list().await.unwrap();
//! conn.open(Some("qemu:///system"), 0).await.unwrap();
//!
//! let dom = conn
//!     .domain_define_xml("<domain type='kvm'><name>vm</name><memory>1024</memory></domain>")
//!     .await
//!     .unwrap();
//! let running = conn.domain_create_with_flags(&dom, 0).await.unwrap();
//! assert!(running.id >= 1);
//!
//! // The next lookup fails once, and the handle says so.
//! let busy = fake.faults().add(FaultRule::on(Procedure::DomainLookupByName, Fault::busy()).once());
//! let err = conn.domain_lookup_by_name("vm").await.unwrap_err();
//! assert_eq!(err.code(), Some(ErrorCode::OperationTimeout));
//! assert!(busy.fired());
//! assert_eq!(fake.trace().count(Procedure::DomainLookupByName), 1);
//! # });
//! ```
//!
//! # Fidelity
//!
//! Measured on real libvirtd 9.0 and 11.3 and reproduced here: undefining a
//! UEFI domain whose NVRAM file exists fails without the NVRAM flag, running
//! or not; undefining a running domain leaves it running as a transient
//! domain; metadata set without flags on a running domain reaches only the
//! live definition; a missing metadata element is `VIR_ERR_NO_DOMAIN_METADATA`;
//! defining a known name with another UUID is `VIR_ERR_OPERATION_FAILED`; the
//! ARP address source of 9.0 can fail with "wrong nlmsg len" (a switch).
//! Pools follow libvirt 11.3's storage driver: a defined pool is inactive
//! with no sizes until it starts, starting needs its directory (built by
//! `StoragePoolBuild`), deleting it fails as `rmdir` does while files remain,
//! a transient pool is gone once stopped, and an undefined pool's files stay
//! on the host for the next pool defined at that path. Pausing a paused
//! domain succeeds; resuming a running one is refused.
//! A guest is never kinder than QEMU's: one whose boot disk chain holds no
//! uploaded byte (or that has no hard disk) starts and runs, but its agent
//! never connects and no lease or ARP entry ever names it, so it never has an
//! address.
//! Simplifications: guests shut down at once, NVRAM files and volumes are
//! names without bytes unless uploaded, firmware is never resolved into the
//! XML, volume creation checks only pool space and backing files, and only
//! directory pools exist (other types fail as on a daemon without their backend).
#![deny(missing_docs)]

mod boot;
mod content;
pub mod control;
mod download;
mod error;
mod fake;
mod fault;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod inspect;
mod large;
pub mod latency;
mod server;
mod socket;
mod state;
mod state_file;
mod streams;
mod trace;
mod types;
mod upload;
mod xml;

pub use content::VolumeContent;
pub use error::{CallError, VirError};
pub use fake::connection::{FakeConnection, Upload};
pub use fake::{DialMode, FakeLibvirt};
pub use fault::{Fault, FaultHandle, FaultRule, Faults, Trigger};
pub use large::SpillFile;
pub use server::{ServerOptions, UnixServer};
pub use socket::QuietSocket;
pub use state::domains::DomainSnapshot;
pub use state::storage::VolumeSnapshot;
pub use state::{HostConfig, HostInterface};
pub use state_file::{DomainSpec, PoolSpec, StateFile, VolumeSpec};
pub use trace::{ConnectionInfo, Trace, TraceEntry};
pub use types::{AddressSource, DomainInfo, MetadataEntry, PoolInfo, VolInfo};
