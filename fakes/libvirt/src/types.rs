//! The plain values the fake's API takes and returns: info records, address
//! sources and metadata entries. Object handles, domain and pool states, state
//! reasons, flags and interface addresses are the wire crate's, re-exported
//! here under the names this crate's callers use.

use libvirt_wire::{
    DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, DOMAIN_INTERFACE_ADDRESSES_SRC_ARP,
    DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE,
};

pub use libvirt_wire::DomainState;
/// A storage pool state (`virStoragePoolState`), the wire crate's.
pub use libvirt_wire::StoragePoolState as PoolState;

/// The state reasons of the wire crate under the short names this crate's
/// callers use (`reason::RUNNING_BOOTED` is `DOMAIN_RUNNING_BOOTED`).
pub mod reason {
    pub use libvirt_wire::{
        DOMAIN_PAUSED_USER as PAUSED_USER, DOMAIN_RUNNING_BOOTED as RUNNING_BOOTED,
        DOMAIN_RUNNING_UNPAUSED as RUNNING_UNPAUSED, DOMAIN_SHUTOFF_DESTROYED as SHUTOFF_DESTROYED,
        DOMAIN_SHUTOFF_FAILED as SHUTOFF_FAILED, DOMAIN_SHUTOFF_SHUTDOWN as SHUTOFF_SHUTDOWN,
        DOMAIN_SHUTOFF_UNKNOWN as SHUTOFF_UNKNOWN,
    };
}

/// The flag values of the wire crate under the short names this crate's
/// callers use (`flags::UNDEFINE_NVRAM` is `DOMAIN_UNDEFINE_NVRAM`).
pub mod flags {
    pub use libvirt_wire::{
        CONNECT_LIST_DOMAINS_ACTIVE as LIST_ACTIVE, CONNECT_LIST_DOMAINS_INACTIVE as LIST_INACTIVE,
        CONNECT_LIST_DOMAINS_OTHER as LIST_OTHER, CONNECT_LIST_DOMAINS_PAUSED as LIST_PAUSED,
        CONNECT_LIST_DOMAINS_PERSISTENT as LIST_PERSISTENT,
        CONNECT_LIST_DOMAINS_RUNNING as LIST_RUNNING, CONNECT_LIST_DOMAINS_SHUTOFF as LIST_SHUTOFF,
        CONNECT_LIST_DOMAINS_TRANSIENT as LIST_TRANSIENT, DOMAIN_AFFECT_CONFIG as AFFECT_CONFIG,
        DOMAIN_AFFECT_LIVE as AFFECT_LIVE, DOMAIN_DEFINE_VALIDATE as DEFINE_VALIDATE,
        DOMAIN_DESTROY_GRACEFUL as DESTROY_GRACEFUL,
        DOMAIN_DESTROY_REMOVE_LOGS as DESTROY_REMOVE_LOGS,
        DOMAIN_METADATA_DESCRIPTION as METADATA_DESCRIPTION,
        DOMAIN_METADATA_ELEMENT as METADATA_ELEMENT, DOMAIN_METADATA_TITLE as METADATA_TITLE,
        DOMAIN_START_ALL as CREATE_ALL, DOMAIN_START_PAUSED as START_PAUSED,
        DOMAIN_UNDEFINE_CHECKPOINTS_METADATA as UNDEFINE_CHECKPOINTS_METADATA,
        DOMAIN_UNDEFINE_KEEP_NVRAM as UNDEFINE_KEEP_NVRAM,
        DOMAIN_UNDEFINE_KEEP_TPM as UNDEFINE_KEEP_TPM,
        DOMAIN_UNDEFINE_MANAGED_SAVE as UNDEFINE_MANAGED_SAVE,
        DOMAIN_UNDEFINE_NVRAM as UNDEFINE_NVRAM,
        DOMAIN_UNDEFINE_SNAPSHOTS_METADATA as UNDEFINE_SNAPSHOTS_METADATA,
        DOMAIN_UNDEFINE_TPM as UNDEFINE_TPM, DOMAIN_XML_ALL as XML_ALL,
        DOMAIN_XML_INACTIVE as XML_INACTIVE, FEATURE_PROGRAM_KEEPALIVE,
    };
}

/// A domain handle (`remote_nonnull_domain`), the wire crate's: its name,
/// UUID (the fake resolves handles by it, as QEMU does) and id (`-1` when
/// inactive).
pub use libvirt_wire::Domain as DomainRef;
/// A storage pool handle (`remote_nonnull_storage_pool`), the wire crate's.
pub use libvirt_wire::StoragePool as PoolRef;
/// A storage volume handle (`remote_nonnull_storage_vol`), the wire crate's:
/// its pool's name, its name and its key (its path in a directory pool).
pub use libvirt_wire::StorageVol as VolRef;

/// What `virDomainGetInfo` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DomainInfo {
    /// The current state.
    pub state: DomainState,
    /// Maximum memory in KiB.
    pub max_mem_kib: u64,
    /// Current memory in KiB.
    pub memory_kib: u64,
    /// Number of virtual CPUs.
    pub nr_virt_cpu: u16,
    /// CPU time used, in nanoseconds.
    pub cpu_time_ns: u64,
}

/// What `virStoragePoolGetInfo` returns (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolInfo {
    /// Active or inactive.
    pub state: PoolState,
    /// Total size of the pool.
    pub capacity: u64,
    /// Bytes in use.
    pub allocation: u64,
    /// Bytes free, `capacity - allocation` (never negative).
    pub available: u64,
}

/// What `virStorageVolGetInfo` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolInfo {
    /// `virStorageVolType`, always `0` (file) in the fake.
    pub kind: i32,
    /// Logical size in bytes.
    pub capacity: u64,
    /// Bytes allocated on the host.
    pub allocation: u64,
}

/// Where `virDomainInterfaceAddresses` takes its answer from
/// (`virDomainInterfaceAddressesSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressSource {
    /// DHCP leases of libvirt-managed networks (`SRC_LEASE`, 0).
    Lease,
    /// The QEMU guest agent (`SRC_AGENT`, 1).
    Agent,
    /// The host's neighbour table (`SRC_ARP`, 2).
    Arp,
}

impl AddressSource {
    /// The source for a wire value, if it is one.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE => Some(AddressSource::Lease),
            DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT => Some(AddressSource::Agent),
            DOMAIN_INTERFACE_ADDRESSES_SRC_ARP => Some(AddressSource::Arp),
            _ => None,
        }
    }
}

/// One interface as `virDomainInterfaceAddresses` reports it
/// (`remote_domain_interface`), the wire crate's.
pub use libvirt_wire::DomainInterface as Interface;
/// One address of an interface (`remote_domain_ip_addr`), the wire crate's.
pub use libvirt_wire::DomainIpAddr as IpAddr;

/// One metadata element stored in a domain definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataEntry {
    /// The namespace URI.
    pub uri: String,
    /// The namespace prefix it was set with.
    pub key: String,
    /// The element as `virDomainGetMetadata` returns it: no prefix, no
    /// namespace declaration.
    pub xml: String,
}
