//! Argument and return structs of every procedure in the table, in libvirt's
//! field order. Procedures with no payload use `()`.

use crate::limits::{
    AUTH_TYPE_LIST_MAX, DOMAIN_INTERFACE_MAX, DOMAIN_IP_ADDR_MAX, DOMAIN_LIST_MAX,
    DOMAIN_MESSAGES_MAX, SECURITY_DOI_MAX, SECURITY_LABEL_MAX, SECURITY_MODEL_MAX,
    STORAGE_POOL_LIST_MAX, STORAGE_VOL_LIST_MAX,
};
use crate::types::{
    AuthType, CharArray, Domain, FixedChars, Interface, StoragePool, StorageVol, Uuid,
};

// Connection.

xdr_struct! {
    /// Arguments of `CONNECT_OPEN`.
    pub struct ConnectOpenArgs {
        /// The URI to open (`qemu:///system`); absent lets the server choose.
        pub name: Option<String>,
        /// `CONNECT_RO` or 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `CONNECT_GET_CAPABILITIES`.
    pub struct ConnectGetCapabilitiesRet {
        /// The capabilities XML.
        pub capabilities: String,
    }
}

xdr_struct! {
    /// Arguments of `CONNECT_GET_DOMAIN_CAPABILITIES`; each absent field lets
    /// the host choose (its default emulator, architecture, machine, type).
    /// The result is a [`ConnectGetCapabilitiesRet`], one XML string.
    pub struct ConnectGetDomainCapabilitiesArgs {
        /// Path of the emulator binary.
        pub emulatorbin: Option<String>,
        /// Architecture (`x86_64`).
        pub arch: Option<String>,
        /// Machine type (`q35`).
        pub machine: Option<String>,
        /// Domain type (`kvm`, `qemu`).
        pub virttype: Option<String>,
        /// No flags are defined; 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `CONNECT_GET_HOSTNAME`.
    pub struct ConnectGetHostnameRet {
        /// The host name.
        pub hostname: String,
    }
}

xdr_struct! {
    /// Arguments of `CONNECT_SUPPORTS_FEATURE`.
    pub struct ConnectSupportsFeatureArgs {
        /// The feature number (see `FEATURE_PROGRAM_KEEPALIVE`).
        pub feature: i32,
    }
}

xdr_struct! {
    /// Result of `CONNECT_SUPPORTS_FEATURE`.
    pub struct ConnectSupportsFeatureRet {
        /// 1 when supported.
        pub supported: i32,
    }
}

xdr_struct! {
    /// Result of `AUTH_LIST`.
    pub struct AuthListRet {
        /// The schemes the socket accepts.
        pub types: Vec<AuthType> [max = AUTH_TYPE_LIST_MAX],
    }
}

xdr_struct! {
    /// Result of `AUTH_POLKIT`.
    pub struct AuthPolkitRet {
        /// 1 when authentication completed.
        pub complete: i32,
    }
}

xdr_struct! {
    /// Result of `CONNECT_GET_URI`.
    pub struct ConnectGetUriRet {
        /// The URI.
        pub uri: String,
    }
}

xdr_struct! {
    /// Result of `CONNECT_GET_VERSION`.
    pub struct ConnectGetVersionRet {
        /// The hypervisor's version: major * 1_000_000 + minor * 1_000 + micro.
        pub hv_ver: u64,
    }
}

xdr_struct! {
    /// Result of `CONNECT_GET_LIB_VERSION`.
    pub struct ConnectGetLibVersionRet {
        /// major * 1_000_000 + minor * 1_000 + micro.
        pub lib_ver: u64,
    }
}

xdr_struct! {
    /// Arguments of `CONNECT_LIST_ALL_DOMAINS`.
    pub struct ConnectListAllDomainsArgs {
        /// 1 to receive the list, 0 for the count only.
        pub need_results: i32,
        /// `CONNECT_LIST_DOMAINS_*` filter bits; 0 lists all.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `CONNECT_LIST_ALL_DOMAINS`.
    pub struct ConnectListAllDomainsRet {
        /// The domains (empty when `need_results` was 0).
        pub domains: Vec<Domain> [max = DOMAIN_LIST_MAX],
        /// The number of domains.
        pub ret: u32,
    }
}

xdr_struct! {
    /// Arguments of `CONNECT_LIST_ALL_STORAGE_POOLS`.
    pub struct ConnectListAllStoragePoolsArgs {
        /// 1 to receive the list, 0 for the count only.
        pub need_results: i32,
        /// Filter bits; 0 lists all.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `CONNECT_LIST_ALL_STORAGE_POOLS`.
    pub struct ConnectListAllStoragePoolsRet {
        /// The pools.
        pub pools: Vec<StoragePool> [max = STORAGE_POOL_LIST_MAX],
        /// The number of pools.
        pub ret: u32,
    }
}

// Domains.

xdr_struct! {
    /// Arguments of `DOMAIN_CREATE`.
    pub struct DomainCreateArgs {
        /// The domain to start.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_DEFINE_XML`.
    pub struct DomainDefineXmlArgs {
        /// The domain XML.
        pub xml: String,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_DEFINE_XML`.
    pub struct DomainDefineXmlRet {
        /// The defined domain.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_DEFINE_XML_FLAGS`.
    pub struct DomainDefineXmlFlagsArgs {
        /// The domain XML.
        pub xml: String,
        /// `DOMAIN_DEFINE_VALIDATE` or 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_DEFINE_XML_FLAGS`.
    pub struct DomainDefineXmlFlagsRet {
        /// The defined domain.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_SUSPEND` and `DOMAIN_RESUME`.
    pub struct DomainArgs {
        /// The domain.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_DESTROY`.
    pub struct DomainDestroyArgs {
        /// The domain to stop.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_DESTROY_FLAGS`.
    pub struct DomainDestroyFlagsArgs {
        /// The domain to stop.
        pub dom: Domain,
        /// `DOMAIN_DESTROY_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_SHUTDOWN_FLAGS`.
    pub struct DomainShutdownFlagsArgs {
        /// The domain to shut down.
        pub dom: Domain,
        /// Shutdown method bits; 0 lets the hypervisor choose.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_GET_XML_DESC`.
    pub struct DomainGetXmlDescArgs {
        /// The domain.
        pub dom: Domain,
        /// `DOMAIN_XML_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_GET_XML_DESC`.
    pub struct DomainGetXmlDescRet {
        /// The domain XML.
        pub xml: String,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_GET_INFO`.
    pub struct DomainGetInfoArgs {
        /// The domain.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_GET_INFO`.
    pub struct DomainGetInfoRet {
        /// The state (`DomainState`), four bytes on the wire.
        pub state: u8,
        /// Maximum memory in KiB.
        pub max_mem: u64,
        /// Current memory in KiB.
        pub memory: u64,
        /// Number of virtual CPUs, four bytes on the wire.
        pub nr_virt_cpu: u16,
        /// CPU time used, in nanoseconds.
        pub cpu_time: u64,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_LOOKUP_BY_NAME`.
    pub struct DomainLookupByNameArgs {
        /// The domain name.
        pub name: String,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_LOOKUP_BY_NAME`.
    pub struct DomainLookupByNameRet {
        /// The domain.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_LOOKUP_BY_UUID`.
    pub struct DomainLookupByUuidArgs {
        /// The domain UUID.
        pub uuid: Uuid,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_LOOKUP_BY_UUID`.
    pub struct DomainLookupByUuidRet {
        /// The domain.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_CREATE_WITH_FLAGS`.
    pub struct DomainCreateWithFlagsArgs {
        /// The domain to start.
        pub dom: Domain,
        /// `DOMAIN_START_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_CREATE_WITH_FLAGS`.
    pub struct DomainCreateWithFlagsRet {
        /// The domain, with its new running id.
        pub dom: Domain,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_GET_STATE`.
    pub struct DomainGetStateArgs {
        /// The domain.
        pub dom: Domain,
        /// Must be 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_GET_STATE`.
    pub struct DomainGetStateRet {
        /// The state (`DomainState`).
        pub state: i32,
        /// The state-specific reason.
        pub reason: i32,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_UNDEFINE_FLAGS`.
    pub struct DomainUndefineFlagsArgs {
        /// The domain.
        pub dom: Domain,
        /// `DOMAIN_UNDEFINE_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_SET_METADATA`.
    pub struct DomainSetMetadataArgs {
        /// The domain.
        pub dom: Domain,
        /// `DOMAIN_METADATA_*` type.
        pub kind: i32,
        /// The new content; absent removes the entry.
        pub metadata: Option<String>,
        /// The namespace prefix (element type only).
        pub key: Option<String>,
        /// The namespace URI (element type only).
        pub uri: Option<String>,
        /// `DOMAIN_AFFECT_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_GET_METADATA`.
    pub struct DomainGetMetadataArgs {
        /// The domain.
        pub dom: Domain,
        /// `DOMAIN_METADATA_*` type.
        pub kind: i32,
        /// The namespace URI (element type only).
        pub uri: Option<String>,
        /// `DOMAIN_AFFECT_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_GET_METADATA`.
    pub struct DomainGetMetadataRet {
        /// The entry, without namespace prefix or declaration.
        pub metadata: String,
    }
}

xdr_struct! {
    /// Arguments of `DOMAIN_INTERFACE_ADDRESSES`.
    pub struct DomainInterfaceAddressesArgs {
        /// The domain.
        pub dom: Domain,
        /// `DOMAIN_INTERFACE_ADDRESSES_SRC_*`.
        pub source: u32,
        /// Must be 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// One address of a domain interface (`remote_domain_ip_addr`).
    pub struct DomainIpAddr {
        /// `IP_ADDR_TYPE_IPV4` or `IP_ADDR_TYPE_IPV6`.
        pub kind: i32,
        /// The address text.
        pub addr: String,
        /// The prefix length.
        pub prefix: u32,
    }
}

impl DomainIpAddr {
    /// An IPv4 address with its prefix length.
    pub fn v4(addr: impl Into<String>, prefix: u32) -> Self {
        DomainIpAddr {
            kind: crate::IP_ADDR_TYPE_IPV4,
            addr: addr.into(),
            prefix,
        }
    }

    /// An IPv6 address with its prefix length.
    pub fn v6(addr: impl Into<String>, prefix: u32) -> Self {
        DomainIpAddr {
            kind: crate::IP_ADDR_TYPE_IPV6,
            addr: addr.into(),
            prefix,
        }
    }
}

xdr_struct! {
    /// One interface of a domain (`remote_domain_interface`).
    pub struct DomainInterface {
        /// The interface name (host side for lease/ARP, guest side for the agent).
        pub name: String,
        /// The MAC address.
        pub hwaddr: Option<String>,
        /// Its addresses.
        pub addrs: Vec<DomainIpAddr> [max = DOMAIN_IP_ADDR_MAX],
    }
}

xdr_struct! {
    /// Result of `DOMAIN_INTERFACE_ADDRESSES`.
    pub struct DomainInterfaceAddressesRet {
        /// The interfaces.
        pub ifaces: Vec<DomainInterface> [max = DOMAIN_INTERFACE_MAX],
    }
}

// Host interfaces.

xdr_struct! {
    /// Arguments of `INTERFACE_LOOKUP_BY_NAME`.
    pub struct InterfaceLookupByNameArgs {
        /// The interface name.
        pub name: String,
    }
}

xdr_struct! {
    /// Result of `INTERFACE_LOOKUP_BY_NAME`.
    pub struct InterfaceLookupByNameRet {
        /// The interface.
        pub iface: Interface,
    }
}

xdr_struct! {
    /// Arguments of `INTERFACE_GET_XML_DESC`.
    pub struct InterfaceGetXmlDescArgs {
        /// The interface.
        pub iface: Interface,
        /// `VIR_INTERFACE_XML_INACTIVE` (1) or 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `INTERFACE_GET_XML_DESC`.
    pub struct InterfaceGetXmlDescRet {
        /// The interface XML.
        pub xml: String,
    }
}

xdr_struct! {
    /// Arguments of `INTERFACE_IS_ACTIVE`.
    pub struct InterfaceIsActiveArgs {
        /// The interface.
        pub iface: Interface,
    }
}

xdr_struct! {
    /// Result of `INTERFACE_IS_ACTIVE` (also of the other `*_IS_*` calls).
    pub struct IsActiveRet {
        /// 1 when active, 0 when not.
        pub active: i32,
    }
}

// Storage pools.

xdr_struct! {
    /// Arguments of `STORAGE_POOL_LOOKUP_BY_NAME`.
    pub struct StoragePoolLookupByNameArgs {
        /// The pool name.
        pub name: String,
    }
}

xdr_struct! {
    /// Result of `STORAGE_POOL_LOOKUP_BY_NAME`.
    pub struct StoragePoolLookupByNameRet {
        /// The pool.
        pub pool: StoragePool,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_POOL_GET_INFO`.
    pub struct StoragePoolGetInfoArgs {
        /// The pool.
        pub pool: StoragePool,
    }
}

xdr_struct! {
    /// Result of `STORAGE_POOL_GET_INFO`.
    pub struct StoragePoolGetInfoRet {
        /// The state (`STORAGE_POOL_*`), four bytes on the wire.
        pub state: u8,
        /// Capacity in bytes.
        pub capacity: u64,
        /// Allocation in bytes.
        pub allocation: u64,
        /// Free space in bytes.
        pub available: u64,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_POOL_DEFINE_XML` (also `STORAGE_POOL_CREATE_XML`).
    pub struct StoragePoolDefineXmlArgs {
        /// The pool XML.
        pub xml: String,
        /// Must be 0 for define; `STORAGE_POOL_CREATE_*` for create.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `STORAGE_POOL_DEFINE_XML`.
    pub struct StoragePoolDefineXmlRet {
        /// The new pool.
        pub pool: StoragePool,
    }
}

xdr_struct! {
    /// Arguments of the pool calls that take a pool and flags
    /// (`STORAGE_POOL_CREATE`, `_BUILD`, `_DELETE`, `_GET_XML_DESC`).
    pub struct StoragePoolFlagsArgs {
        /// The pool.
        pub pool: StoragePool,
        /// Flags of the call.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Arguments of the pool calls that take only a pool
    /// (`STORAGE_POOL_DESTROY`, `_UNDEFINE`).
    pub struct StoragePoolArgs {
        /// The pool.
        pub pool: StoragePool,
    }
}

xdr_struct! {
    /// Result of `STORAGE_POOL_GET_XML_DESC`.
    pub struct StoragePoolGetXmlDescRet {
        /// The pool XML.
        pub xml: String,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_POOL_REFRESH`.
    pub struct StoragePoolRefreshArgs {
        /// The pool.
        pub pool: StoragePool,
        /// Must be 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_POOL_LIST_ALL_VOLUMES`.
    pub struct StoragePoolListAllVolumesArgs {
        /// The pool.
        pub pool: StoragePool,
        /// 1 to receive the list, 0 for the count only.
        pub need_results: i32,
        /// Must be 0.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `STORAGE_POOL_LIST_ALL_VOLUMES`.
    pub struct StoragePoolListAllVolumesRet {
        /// The volumes.
        pub vols: Vec<StorageVol> [max = STORAGE_VOL_LIST_MAX],
        /// The number of volumes.
        pub ret: u32,
    }
}

// Storage volumes.

xdr_struct! {
    /// Arguments of `STORAGE_VOL_LOOKUP_BY_NAME`.
    pub struct StorageVolLookupByNameArgs {
        /// The pool.
        pub pool: StoragePool,
        /// The volume name.
        pub name: String,
    }
}

xdr_struct! {
    /// Result of `STORAGE_VOL_LOOKUP_BY_NAME`.
    pub struct StorageVolLookupByNameRet {
        /// The volume.
        pub vol: StorageVol,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_CREATE_XML`.
    pub struct StorageVolCreateXmlArgs {
        /// The pool to create the volume in.
        pub pool: StoragePool,
        /// The volume XML.
        pub xml: String,
        /// `STORAGE_VOL_CREATE_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `STORAGE_VOL_CREATE_XML`.
    pub struct StorageVolCreateXmlRet {
        /// The new volume.
        pub vol: StorageVol,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_DELETE`.
    pub struct StorageVolDeleteArgs {
        /// The volume.
        pub vol: StorageVol,
        /// `STORAGE_VOL_DELETE_*` bits.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_GET_INFO`.
    pub struct StorageVolGetInfoArgs {
        /// The volume.
        pub vol: StorageVol,
    }
}

xdr_struct! {
    /// Result of `STORAGE_VOL_GET_INFO`.
    pub struct StorageVolGetInfoRet {
        /// The volume type (`STORAGE_VOL_*`), a signed char, four bytes on the wire.
        pub kind: i8,
        /// Capacity in bytes.
        pub capacity: u64,
        /// Allocation in bytes.
        pub allocation: u64,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_GET_PATH`.
    pub struct StorageVolGetPathArgs {
        /// The volume.
        pub vol: StorageVol,
    }
}

xdr_struct! {
    /// Result of `STORAGE_VOL_GET_PATH`.
    pub struct StorageVolGetPathRet {
        /// The path on the host.
        pub name: String,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_UPLOAD`.
    pub struct StorageVolUploadArgs {
        /// The volume.
        pub vol: StorageVol,
        /// Where writing starts, in bytes.
        pub offset: u64,
        /// How many bytes will be sent; 0 for no limit.
        pub length: u64,
        /// `STORAGE_VOL_UPLOAD_*` bits; use 0.
        pub flags: u32,
    }
}

// What virsh's host, domain-information and storage commands ask.

xdr_struct! {
    /// Result of `CONNECT_GET_TYPE`.
    pub struct ConnectGetTypeRet {
        /// The driver's name (`QEMU`).
        pub kind: String,
    }
}

xdr_struct! {
    /// Result of `NODE_GET_INFO`.
    pub struct NodeGetInfoRet {
        /// The CPU model (the architecture for QEMU hosts), 32 chars.
        pub model: FixedChars<32>,
        /// Memory in KiB.
        pub memory: u64,
        /// Active CPUs.
        pub cpus: i32,
        /// CPU frequency in MHz.
        pub mhz: i32,
        /// NUMA nodes.
        pub nodes: i32,
        /// Sockets per node.
        pub sockets: i32,
        /// Cores per socket.
        pub cores: i32,
        /// Threads per core.
        pub threads: i32,
    }
}

xdr_struct! {
    /// Result of `NODE_GET_SECURITY_MODEL`.
    pub struct NodeGetSecurityModelRet {
        /// The security driver's name (`none`, `apparmor`, `selinux`); empty
        /// when there is none.
        pub model: CharArray<SECURITY_MODEL_MAX>,
        /// Its domain of interpretation.
        pub doi: CharArray<SECURITY_DOI_MAX>,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_GET_SECURITY_LABEL`.
    pub struct DomainGetSecurityLabelRet {
        /// The domain's process label (empty without one).
        pub label: CharArray<SECURITY_LABEL_MAX>,
        /// 1 when enforcing.
        pub enforcing: i32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_GET_OS_TYPE`.
    pub struct DomainGetOsTypeRet {
        /// The guest OS type (`hvm`).
        pub kind: String,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_IS_PERSISTENT` and `STORAGE_POOL_IS_PERSISTENT`.
    pub struct IsPersistentRet {
        /// 1 when the object has a persistent definition.
        pub persistent: i32,
    }
}

xdr_struct! {
    /// Result of the autostart queries of domains and pools.
    pub struct GetAutostartRet {
        /// 1 when the object starts with the daemon.
        pub autostart: i32,
    }
}

xdr_struct! {
    /// Arguments of the domain calls that take a domain and flags
    /// (`DOMAIN_HAS_MANAGED_SAVE_IMAGE`, `DOMAIN_SNAPSHOT_NUM`,
    /// `DOMAIN_GET_MESSAGES`).
    pub struct DomainFlagsArgs {
        /// The domain.
        pub dom: Domain,
        /// Flags of the call.
        pub flags: u32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_HAS_MANAGED_SAVE_IMAGE`.
    pub struct DomainHasManagedSaveImageRet {
        /// 1 when a managed save image exists.
        pub result: i32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_SNAPSHOT_NUM`.
    pub struct DomainSnapshotNumRet {
        /// The number of snapshots.
        pub num: i32,
    }
}

xdr_struct! {
    /// Result of `DOMAIN_GET_MESSAGES`.
    pub struct DomainGetMessagesRet {
        /// Deprecation and tainting messages.
        pub msgs: Vec<String> [max = DOMAIN_MESSAGES_MAX],
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_POOL_LOOKUP_BY_VOLUME`.
    pub struct StoragePoolLookupByVolumeArgs {
        /// The volume.
        pub vol: StorageVol,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_LOOKUP_BY_PATH`.
    pub struct StorageVolLookupByPathArgs {
        /// The volume's path on the host.
        pub path: String,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_LOOKUP_BY_KEY`.
    pub struct StorageVolLookupByKeyArgs {
        /// The volume's key (a directory pool's: its path).
        pub key: String,
    }
}

xdr_struct! {
    /// Arguments of `STORAGE_VOL_DOWNLOAD`, laid out as the upload's.
    pub struct StorageVolDownloadArgs {
        /// The volume.
        pub vol: StorageVol,
        /// Where reading starts, in bytes.
        pub offset: u64,
        /// How many bytes to read; 0 reads to the end.
        pub length: u64,
        /// `STORAGE_VOL_DOWNLOAD_*` bits.
        pub flags: u32,
    }
}
