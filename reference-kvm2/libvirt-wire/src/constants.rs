//! Enumerations and flag values the provider passes to or reads from
//! procedures: domain states, pool states, metadata types, undefine and
//! modification flags, address sources, feature numbers.
//!
//! A flag set a call accepts whole is named `*_ALL`: the bits of its
//! `virXxxFlags` enum that libvirt's driver takes.

int_enum! {
    /// A domain's state (`virDomainState`), as `DOMAIN_GET_STATE` reports it.
    pub enum DomainState: i32 {
        /// No state.
        NoState = 0 => "VIR_DOMAIN_NOSTATE",
        /// Running.
        Running = 1 => "VIR_DOMAIN_RUNNING",
        /// Blocked on a resource.
        Blocked = 2 => "VIR_DOMAIN_BLOCKED",
        /// Paused.
        Paused = 3 => "VIR_DOMAIN_PAUSED",
        /// Being shut down.
        Shutdown = 4 => "VIR_DOMAIN_SHUTDOWN",
        /// Shut off.
        Shutoff = 5 => "VIR_DOMAIN_SHUTOFF",
        /// Crashed.
        Crashed = 6 => "VIR_DOMAIN_CRASHED",
        /// Suspended by guest power management.
        PmSuspended = 7 => "VIR_DOMAIN_PMSUSPENDED",
    }
}

int_enum! {
    /// A storage pool's state (`virStoragePoolState`).
    pub enum StoragePoolState: i32 {
        /// Not active.
        Inactive = 0 => "VIR_STORAGE_POOL_INACTIVE",
        /// Being built.
        Building = 1 => "VIR_STORAGE_POOL_BUILDING",
        /// Active and usable.
        Running = 2 => "VIR_STORAGE_POOL_RUNNING",
        /// Running but degraded.
        Degraded = 3 => "VIR_STORAGE_POOL_DEGRADED",
        /// Running but inaccessible.
        Inaccessible = 4 => "VIR_STORAGE_POOL_INACCESSIBLE",
    }
}

impl DomainState {
    /// Whether a domain in this state has a running QEMU process (libvirt's
    /// `virDomainObjIsActive`): every state but shut off, and crashed, which
    /// libvirt reports for a process that is gone.
    pub const fn is_active(self) -> bool {
        !matches!(
            self.normalized(),
            DomainState::Shutoff | DomainState::Crashed
        )
    }
}

/// Domain running, reason "booted": started normally.
pub const DOMAIN_RUNNING_BOOTED: i32 = 1;
/// Domain running, reason "unpaused": resumed after a pause.
pub const DOMAIN_RUNNING_UNPAUSED: i32 = 5;
/// Domain paused, reason "user": paused by a suspend call.
pub const DOMAIN_PAUSED_USER: i32 = 1;
/// Domain shut off, reason "shutdown": the guest shut down.
pub const DOMAIN_SHUTOFF_SHUTDOWN: i32 = 1;
/// Domain shut off, reason "unknown": defined but never started.
pub const DOMAIN_SHUTOFF_UNKNOWN: i32 = 0;
/// Domain shut off, reason "destroyed": stopped by a destroy call.
pub const DOMAIN_SHUTOFF_DESTROYED: i32 = 2;
/// Domain shut off, reason "failed": it failed to start.
pub const DOMAIN_SHUTOFF_FAILED: i32 = 6;
/// Domain shut off, reason "daemon": libvirtd went away while it ran or started.
pub const DOMAIN_SHUTOFF_DAEMON: i32 = 8;
/// Domain paused, reason "starting up": libvirt starts every guest paused, then
/// resumes it.
pub const DOMAIN_PAUSED_STARTING_UP: i32 = 11;

/// Metadata type: the `<description>` element.
pub const DOMAIN_METADATA_DESCRIPTION: i32 = 0;
/// Metadata type: the `<title>` element.
pub const DOMAIN_METADATA_TITLE: i32 = 1;
/// Metadata type: an element of the caller's namespace under `<metadata>`.
pub const DOMAIN_METADATA_ELEMENT: i32 = 2;

/// Affect the current state (live if running, else persistent config).
pub const DOMAIN_AFFECT_CURRENT: u32 = 0;
/// Affect the running domain.
pub const DOMAIN_AFFECT_LIVE: u32 = 1;
/// Affect the persistent configuration.
pub const DOMAIN_AFFECT_CONFIG: u32 = 2;

/// Undefine: also remove a managed save image.
pub const DOMAIN_UNDEFINE_MANAGED_SAVE: u32 = 1;
/// Undefine: also remove snapshot metadata.
pub const DOMAIN_UNDEFINE_SNAPSHOTS_METADATA: u32 = 2;
/// Undefine: also remove the NVRAM file (needed for UEFI domains on QEMU).
pub const DOMAIN_UNDEFINE_NVRAM: u32 = 4;
/// Undefine: keep the NVRAM file.
pub const DOMAIN_UNDEFINE_KEEP_NVRAM: u32 = 8;
/// Undefine: also remove checkpoint metadata.
pub const DOMAIN_UNDEFINE_CHECKPOINTS_METADATA: u32 = 16;
/// Undefine: also remove the TPM state.
pub const DOMAIN_UNDEFINE_TPM: u32 = 32;
/// Undefine: keep the TPM state.
pub const DOMAIN_UNDEFINE_KEEP_TPM: u32 = 64;

/// Create (start): leave the domain paused.
pub const DOMAIN_START_PAUSED: u32 = 1;
/// Every `virDomainCreateFlags` bit (paused, autodestroy, bypass cache,
/// force boot, validate, reset NVRAM).
pub const DOMAIN_START_ALL: u32 = 0x3f;

/// Address source: DHCP leases of libvirt-managed networks.
pub const DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE: u32 = 0;
/// Address source: the QEMU guest agent.
pub const DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT: u32 = 1;
/// Address source: the host's ARP table.
pub const DOMAIN_INTERFACE_ADDRESSES_SRC_ARP: u32 = 2;

/// Address type: IPv4.
pub const IP_ADDR_TYPE_IPV4: i32 = 0;
/// Address type: IPv6.
pub const IP_ADDR_TYPE_IPV6: i32 = 1;

/// `GET_XML_DESC`: include security-sensitive data.
pub const DOMAIN_XML_SECURE: u32 = 1;
/// `GET_XML_DESC`: the persistent rather than the live definition.
pub const DOMAIN_XML_INACTIVE: u32 = 2;
/// Every `virDomainXMLFlags` bit (secure, inactive, update CPU, migratable).
pub const DOMAIN_XML_ALL: u32 = 0xf;

/// Define: validate the XML against the schema.
pub const DOMAIN_DEFINE_VALIDATE: u32 = 1;

/// Destroy flags: the default (forceful) stop.
pub const DOMAIN_DESTROY_DEFAULT: u32 = 0;
/// Destroy flags: only send SIGTERM.
pub const DOMAIN_DESTROY_GRACEFUL: u32 = 1;
/// Destroy flags: also remove the domain's log files.
pub const DOMAIN_DESTROY_REMOVE_LOGS: u32 = 2;

/// List all domains: active ones.
pub const CONNECT_LIST_DOMAINS_ACTIVE: u32 = 1;
/// List all domains: inactive ones.
pub const CONNECT_LIST_DOMAINS_INACTIVE: u32 = 2;
/// List all domains: persistent ones.
pub const CONNECT_LIST_DOMAINS_PERSISTENT: u32 = 4;
/// List all domains: transient ones.
pub const CONNECT_LIST_DOMAINS_TRANSIENT: u32 = 8;
/// List all domains: running ones.
pub const CONNECT_LIST_DOMAINS_RUNNING: u32 = 16;
/// List all domains: paused ones.
pub const CONNECT_LIST_DOMAINS_PAUSED: u32 = 32;
/// List all domains: shut off ones.
pub const CONNECT_LIST_DOMAINS_SHUTOFF: u32 = 64;
/// List all domains: those in any other state.
pub const CONNECT_LIST_DOMAINS_OTHER: u32 = 128;

/// List all domains: every `virConnectListAllDomainsFlags` bit (the state,
/// persistence, autostart, snapshot, checkpoint and managed-save filters).
pub const CONNECT_LIST_DOMAINS_ALL: u32 = 0xffff;

/// Connect flags: read-only.
pub const CONNECT_RO: u32 = 1;
/// Connect flags: do not resolve URI aliases.
pub const CONNECT_NO_ALIASES: u32 = 2;
/// Every connect flag a remote `CONNECT_OPEN` accepts.
pub const CONNECT_OPEN_ALL: u32 = CONNECT_RO | CONNECT_NO_ALIASES;

/// Domain capabilities: leave out features the hypervisor deprecates.
pub const CONNECT_GET_DOMAIN_CAPABILITIES_DISABLE_DEPRECATED_FEATURES: u32 = 1;

/// Interface XML: the persistent rather than the live definition.
pub const INTERFACE_XML_INACTIVE: u32 = 1;

/// Feature number for `CONNECT_SUPPORTS_FEATURE`: string typed parameters.
pub const FEATURE_TYPED_PARAM_STRING: i32 = 9;
/// Feature number for `CONNECT_SUPPORTS_FEATURE`: the keepalive program.
/// Asking for it makes the server start sending PINGs.
pub const FEATURE_PROGRAM_KEEPALIVE: i32 = 10;
/// Feature number for `CONNECT_SUPPORTS_FEATURE`: event callbacks with
/// server-side filtering.
pub const FEATURE_REMOTE_EVENT_CALLBACK: i32 = 14;
/// Feature number for `CONNECT_SUPPORTS_FEATURE`: the connection-close
/// callback.
pub const FEATURE_REMOTE_CLOSE_CALLBACK: i32 = 15;

/// Shutdown: every `virDomainShutdownFlagValues` bit (ACPI, guest agent,
/// initctl, signal, paravirt).
pub const DOMAIN_SHUTDOWN_ALL: u32 = 0x1f;
/// Undefine: every `virDomainUndefineFlagsValues` bit above.
pub const DOMAIN_UNDEFINE_ALL: u32 = 0x7f;

/// Volume type: a file.
pub const STORAGE_VOL_FILE: i8 = 0;
/// Volume type: a block device.
pub const STORAGE_VOL_BLOCK: i8 = 1;

/// Volume delete: normal.
pub const STORAGE_VOL_DELETE_NORMAL: u32 = 0;
/// Volume delete: every `virStorageVolDeleteFlags` bit (zeroed, with
/// snapshots).
pub const STORAGE_VOL_DELETE_ALL: u32 = 0x3;
/// Volume create: every `virStorageVolCreateFlags` bit (metadata
/// preallocation, reflink, validate).
pub const STORAGE_VOL_CREATE_ALL: u32 = 0x7;

/// Pool create: build the pool first.
pub const STORAGE_POOL_CREATE_WITH_BUILD: u32 = 1;
/// Pool create: build, overwriting what is there.
pub const STORAGE_POOL_CREATE_WITH_BUILD_OVERWRITE: u32 = 2;
/// Pool create: build, refusing to overwrite.
pub const STORAGE_POOL_CREATE_WITH_BUILD_NO_OVERWRITE: u32 = 4;
/// Pool build: refuse to overwrite.
pub const STORAGE_POOL_BUILD_NO_OVERWRITE: u32 = 4;
/// Pool build: overwrite what is there.
pub const STORAGE_POOL_BUILD_OVERWRITE: u32 = 8;
/// Pool XML: the persistent rather than the live definition.
pub const STORAGE_XML_INACTIVE: u32 = 1;
/// Pool define: validate the XML against the schema.
pub const STORAGE_POOL_DEFINE_VALIDATE: u32 = 1;

/// List storage pools: inactive ones.
pub const CONNECT_LIST_STORAGE_POOLS_INACTIVE: u32 = 1;
/// List storage pools: active ones.
pub const CONNECT_LIST_STORAGE_POOLS_ACTIVE: u32 = 2;
/// List storage pools: persistent ones.
pub const CONNECT_LIST_STORAGE_POOLS_PERSISTENT: u32 = 4;
/// List storage pools: transient ones.
pub const CONNECT_LIST_STORAGE_POOLS_TRANSIENT: u32 = 8;
/// List storage pools: those that start with the host.
pub const CONNECT_LIST_STORAGE_POOLS_AUTOSTART: u32 = 16;
/// List storage pools: those that do not start with the host.
pub const CONNECT_LIST_STORAGE_POOLS_NO_AUTOSTART: u32 = 32;
/// Upload flag: sparse stream (holes); not used here.
pub const STORAGE_VOL_UPLOAD_SPARSE_STREAM: u32 = 1;
/// `VIR_STORAGE_VOL_DOWNLOAD_SPARSE_STREAM`: send holes as holes.
pub const STORAGE_VOL_DOWNLOAD_SPARSE_STREAM: u32 = 1;

/// `VIR_DOMAIN_MESSAGE_DEPRECATION`: `DomainGetMessages` lists deprecations.
pub const DOMAIN_MESSAGE_DEPRECATION: u32 = 1;
/// `VIR_DOMAIN_MESSAGE_TAINTING`: `DomainGetMessages` lists taints.
pub const DOMAIN_MESSAGE_TAINTING: u32 = 2;
/// `VIR_DOMAIN_MESSAGE_IOERRORS` (libvirt 11): `DomainGetMessages` lists I/O errors.
pub const DOMAIN_MESSAGE_IOERRORS: u32 = 4;
