//! The plain values the fake's API takes and returns: object handles shaped
//! like the wire's `remote_nonnull_*` structs, info records, domain states and
//! the libvirt flag values the fake interprets.

use uuid::Uuid;

/// A domain state (`virDomainState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DomainState {
    /// `VIR_DOMAIN_NOSTATE`.
    NoState = 0,
    /// `VIR_DOMAIN_RUNNING`.
    Running = 1,
    /// `VIR_DOMAIN_BLOCKED`.
    Blocked = 2,
    /// `VIR_DOMAIN_PAUSED`.
    Paused = 3,
    /// `VIR_DOMAIN_SHUTDOWN` (shutting down).
    Shutdown = 4,
    /// `VIR_DOMAIN_SHUTOFF`.
    Shutoff = 5,
    /// `VIR_DOMAIN_CRASHED`.
    Crashed = 6,
    /// `VIR_DOMAIN_PMSUSPENDED`.
    PmSuspended = 7,
}

impl DomainState {
    /// Every state, in numeric order.
    pub const ALL: [DomainState; 8] = [
        DomainState::NoState,
        DomainState::Running,
        DomainState::Blocked,
        DomainState::Paused,
        DomainState::Shutdown,
        DomainState::Shutoff,
        DomainState::Crashed,
        DomainState::PmSuspended,
    ];

    /// The state for a wire value, if it is one.
    pub fn from_i32(v: i32) -> Option<Self> {
        Self::ALL.get(usize::try_from(v).ok()?).copied()
    }

    /// Whether a domain in this state has a running QEMU process (libvirt's
    /// `virDomainObjIsActive`): everything but shut off (and crashed, which
    /// libvirt reports for a process that is gone).
    pub fn is_active(self) -> bool {
        !matches!(self, DomainState::Shutoff | DomainState::Crashed)
    }
}

/// State reasons (`virDomain*Reason`) the fake sets by itself.
pub mod reason {
    /// `VIR_DOMAIN_RUNNING_BOOTED`.
    pub const RUNNING_BOOTED: i32 = 1;
    /// `VIR_DOMAIN_RUNNING_UNPAUSED`.
    pub const RUNNING_UNPAUSED: i32 = 5;
    /// `VIR_DOMAIN_PAUSED_USER`.
    pub const PAUSED_USER: i32 = 1;
    /// `VIR_DOMAIN_SHUTOFF_UNKNOWN` (defined, never started).
    pub const SHUTOFF_UNKNOWN: i32 = 0;
    /// `VIR_DOMAIN_SHUTOFF_SHUTDOWN`.
    pub const SHUTOFF_SHUTDOWN: i32 = 1;
    /// `VIR_DOMAIN_SHUTOFF_DESTROYED`.
    pub const SHUTOFF_DESTROYED: i32 = 2;
    /// `VIR_DOMAIN_SHUTOFF_FAILED` (a start failed).
    pub const SHUTOFF_FAILED: i32 = 6;
}

/// libvirt flag values the fake interprets.
pub mod flags {
    /// `VIR_DOMAIN_AFFECT_LIVE`.
    pub const AFFECT_LIVE: u32 = 1;
    /// `VIR_DOMAIN_AFFECT_CONFIG`.
    pub const AFFECT_CONFIG: u32 = 2;
    /// `VIR_DOMAIN_METADATA_DESCRIPTION`.
    pub const METADATA_DESCRIPTION: i32 = 0;
    /// `VIR_DOMAIN_METADATA_TITLE`.
    pub const METADATA_TITLE: i32 = 1;
    /// `VIR_DOMAIN_METADATA_ELEMENT`.
    pub const METADATA_ELEMENT: i32 = 2;
    /// `VIR_DOMAIN_UNDEFINE_MANAGED_SAVE`.
    pub const UNDEFINE_MANAGED_SAVE: u32 = 1;
    /// `VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA`.
    pub const UNDEFINE_SNAPSHOTS_METADATA: u32 = 2;
    /// `VIR_DOMAIN_UNDEFINE_NVRAM`.
    pub const UNDEFINE_NVRAM: u32 = 4;
    /// `VIR_DOMAIN_UNDEFINE_KEEP_NVRAM`.
    pub const UNDEFINE_KEEP_NVRAM: u32 = 8;
    /// `VIR_DOMAIN_UNDEFINE_CHECKPOINTS_METADATA`.
    pub const UNDEFINE_CHECKPOINTS_METADATA: u32 = 16;
    /// `VIR_DOMAIN_UNDEFINE_TPM`.
    pub const UNDEFINE_TPM: u32 = 32;
    /// `VIR_DOMAIN_UNDEFINE_KEEP_TPM`.
    pub const UNDEFINE_KEEP_TPM: u32 = 64;
    /// `VIR_DOMAIN_START_PAUSED`.
    pub const START_PAUSED: u32 = 1;
    /// Every `virDomainCreateFlags` bit (paused, autodestroy, bypass cache,
    /// force boot, validate, reset nvram).
    pub const CREATE_ALL: u32 = 0x3f;
    /// `VIR_DOMAIN_XML_INACTIVE`.
    pub const XML_INACTIVE: u32 = 2;
    /// Every `virDomainXMLFlags` bit.
    pub const XML_ALL: u32 = 0xf;
    /// `VIR_DOMAIN_DEFINE_VALIDATE`.
    pub const DEFINE_VALIDATE: u32 = 1;
    /// `VIR_DOMAIN_DESTROY_GRACEFUL`.
    pub const DESTROY_GRACEFUL: u32 = 1;
    /// `VIR_DOMAIN_DESTROY_REMOVE_LOGS`.
    pub const DESTROY_REMOVE_LOGS: u32 = 2;
    /// `VIR_CONNECT_LIST_DOMAINS_ACTIVE`.
    pub const LIST_ACTIVE: u32 = 1;
    /// `VIR_CONNECT_LIST_DOMAINS_INACTIVE`.
    pub const LIST_INACTIVE: u32 = 2;
    /// `VIR_CONNECT_LIST_DOMAINS_PERSISTENT`.
    pub const LIST_PERSISTENT: u32 = 4;
    /// `VIR_CONNECT_LIST_DOMAINS_TRANSIENT`.
    pub const LIST_TRANSIENT: u32 = 8;
    /// `VIR_CONNECT_LIST_DOMAINS_RUNNING`.
    pub const LIST_RUNNING: u32 = 16;
    /// `VIR_CONNECT_LIST_DOMAINS_PAUSED`.
    pub const LIST_PAUSED: u32 = 32;
    /// `VIR_CONNECT_LIST_DOMAINS_SHUTOFF`.
    pub const LIST_SHUTOFF: u32 = 64;
    /// `VIR_CONNECT_LIST_DOMAINS_OTHER`.
    pub const LIST_OTHER: u32 = 128;
    /// `VIR_DRV_FEATURE_PROGRAM_KEEPALIVE`.
    pub const FEATURE_PROGRAM_KEEPALIVE: i32 = 10;
}

/// A domain handle, shaped like `remote_nonnull_domain`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DomainRef {
    /// The domain name.
    pub name: String,
    /// The domain UUID; the fake resolves handles by it, as QEMU does.
    pub uuid: Uuid,
    /// `-1` when inactive, the running id (≥ 1) otherwise.
    pub id: i32,
}

/// A storage pool handle, shaped like `remote_nonnull_storage_pool`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PoolRef {
    /// The pool name.
    pub name: String,
    /// The pool UUID.
    pub uuid: Uuid,
}

/// A storage volume handle, shaped like `remote_nonnull_storage_vol`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VolRef {
    /// The name of the pool holding the volume.
    pub pool: String,
    /// The volume name.
    pub name: String,
    /// The volume key, its path for a directory pool.
    pub key: String,
}

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

/// A storage pool state (`virStoragePoolState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PoolState {
    /// `VIR_STORAGE_POOL_INACTIVE`.
    Inactive = 0,
    /// `VIR_STORAGE_POOL_RUNNING`.
    Running = 2,
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
            0 => Some(AddressSource::Lease),
            1 => Some(AddressSource::Agent),
            2 => Some(AddressSource::Arp),
            _ => None,
        }
    }
}

/// One address of an interface (`remote_domain_ip_addr`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IpAddr {
    /// `0` for IPv4, `1` for IPv6.
    pub kind: i32,
    /// The address text.
    pub addr: String,
    /// The prefix length.
    pub prefix: u32,
}

impl IpAddr {
    /// An IPv4 address with its prefix.
    pub fn v4(addr: impl Into<String>, prefix: u32) -> Self {
        IpAddr {
            kind: 0,
            addr: addr.into(),
            prefix,
        }
    }

    /// An IPv6 address with its prefix.
    pub fn v6(addr: impl Into<String>, prefix: u32) -> Self {
        IpAddr {
            kind: 1,
            addr: addr.into(),
            prefix,
        }
    }
}

/// One interface as `virDomainInterfaceAddresses` reports it
/// (`remote_domain_interface`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Interface {
    /// Guest interface name (agent) or host-side name (lease, ARP).
    pub name: String,
    /// The MAC address, when known.
    pub hwaddr: Option<String>,
    /// The addresses.
    pub addrs: Vec<IpAddr>,
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
