//! The plain values the fake's API takes and returns: info records, address
//! sources and metadata entries. Object handles, domain and pool states, state
//! reasons, flags and interface addresses are the wire crate's, named from
//! there by every caller.

use libvirt_wire::{
    DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, DOMAIN_INTERFACE_ADDRESSES_SRC_ARP,
    DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE, DomainState, StoragePoolState,
};

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
    pub state: StoragePoolState,
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
