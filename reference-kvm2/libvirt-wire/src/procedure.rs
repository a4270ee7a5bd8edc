//! The procedure table of the remote program: one row per procedure gives its
//! number, libvirt's names, its argument and return types, the name of its
//! handler method and, for procedures a client calls plainly, the shape of
//! the client's typed method.
//!
//! The table is the body of [`for_each_procedure!`], which hands it to any
//! macro. Here it yields the `Procedure` enum, one marker type per procedure
//! in [`calls`] implementing [`RemoteCall`] (what a typed client uses), and
//! the `CallArgs` / `CallRet` enums (what a server uses to decode an incoming
//! CALL by its procedure number); `handler.rs` turns it into the server's
//! [`crate::Handler`] trait, and `libvirt-rpc` into its `Client` methods.

use crate::error::WireError;
use crate::messages::*;
use crate::xdr::{Decode, Encode, decode_exact};

/// A procedure of the remote program, tied to its argument and return types.
pub trait RemoteCall {
    /// The procedure number.
    const PROCEDURE: Procedure;
    /// The CALL payload (`()` when the procedure takes none).
    type Args: Encode + Decode + std::fmt::Debug + Clone + Send + Sync + 'static;
    /// The successful REPLY payload (`()` when the procedure returns none).
    type Ret: Encode + Decode + std::fmt::Debug + Clone + Send + Sync + 'static;
    /// libvirt's API name without the `vir` prefix, e.g. `DomainDefineXML`
    /// (the same as [`Procedure::api_name`] of [`RemoteCall::PROCEDURE`]).
    const API_NAME: &'static str;
}

/// Hands the procedure table to the macro named `$callback`, as
/// `$callback! { rows }`: the one list of the procedures this workspace
/// speaks, from which every per-procedure item is generated.
///
/// Each row reads
///
/// ```text
/// /// Docs.
/// Variant = number => "REMOTE_NAME", "ApiName",
///     fn handler_method(ArgsType) -> RetType,
///     client { fn client_method(param: Type, ...) { fixed_field: value, ... } -> Out = ret_field };
/// ```
///
/// `ArgsType` and `RetType` are the message structs of `messages.rs` (or
/// `()`), each a single token tree. The `client` clause is there when a
/// client calls the procedure plainly: its parameters fill the argument
/// fields of the same names, the optional braces fill the others with fixed
/// values, and the result is the return struct's `ret_field` (or the whole
/// struct) as `Out`. A procedure with more to it than that (a stream, a
/// handshake) has no `client` clause and a hand-written method instead.
///
/// Types in the rows are bare names: expand the callback where the crate's
/// items are in scope (`use libvirt_wire::*`).
#[macro_export]
macro_rules! for_each_procedure {
    ($callback:ident) => {
        $callback! {
        /// Opens the hypervisor connection; an absent URI lets the server choose.
        ConnectOpen = 1 => "CONNECT_OPEN", "ConnectOpen",
            fn connect_open(ConnectOpenArgs) -> (),
            client { fn connect_open_with(name: Option<&str>, flags: u32) -> () };
        /// Closes the hypervisor connection; the server then closes the socket.
        ConnectClose = 2 => "CONNECT_CLOSE", "ConnectClose",
            fn connect_close(()) -> (),
            client { fn connect_close() -> () };
        /// The driver's name (`QEMU`); virsh's `version` prints it.
        ConnectGetType = 3 => "CONNECT_GET_TYPE", "ConnectGetType",
            fn connect_get_type(()) -> ConnectGetTypeRet,
            client { fn connect_get_type() -> String = kind };
        /// The hypervisor's version (for QEMU, QEMU's), encoded as the library's is.
        ConnectGetVersion = 4 => "CONNECT_GET_VERSION", "ConnectGetVersion",
            fn connect_get_version(()) -> ConnectGetVersionRet,
            client { fn connect_get_version() -> u64 = hv_ver };
        /// The host's CPUs and memory (`virsh nodeinfo`).
        NodeGetInfo = 6 => "NODE_GET_INFO", "NodeGetInfo",
            fn node_get_info(()) -> NodeGetInfoRet,
            client { fn node_get_info() -> NodeGetInfoRet };
        /// The host capabilities XML.
        ConnectGetCapabilities = 7 => "CONNECT_GET_CAPABILITIES", "ConnectGetCapabilities",
            fn connect_get_capabilities(()) -> ConnectGetCapabilitiesRet,
            client { fn connect_get_capabilities() -> String = capabilities };
        /// Starts a defined domain.
        DomainCreate = 9 => "DOMAIN_CREATE", "DomainCreate",
            fn domain_create(DomainCreateArgs) -> (),
            client { fn domain_create(dom: &Domain) -> () };
        /// Defines a persistent domain from XML.
        DomainDefineXml = 11 => "DOMAIN_DEFINE_XML", "DomainDefineXML",
            fn domain_define_xml(DomainDefineXmlArgs) -> DomainDefineXmlRet,
            client { fn domain_define_xml(xml: &str) -> Domain = dom };
        /// Forcibly stops a domain.
        DomainDestroy = 12 => "DOMAIN_DESTROY", "DomainDestroy",
            fn domain_destroy(DomainDestroyArgs) -> (),
            client { fn domain_destroy(dom: &Domain) -> () };
        /// The domain XML.
        DomainGetXmlDesc = 14 => "DOMAIN_GET_XML_DESC", "DomainGetXMLDesc",
            fn domain_get_xml_desc(DomainGetXmlDescArgs) -> DomainGetXmlDescRet,
            client { fn domain_get_xml_desc(dom: &Domain, flags: u32) -> String = xml };
        /// Whether a domain starts with the daemon.
        DomainGetAutostart = 15 => "DOMAIN_GET_AUTOSTART", "DomainGetAutostart",
            fn domain_get_autostart(DomainArgs) -> GetAutostartRet,
            client { fn domain_get_autostart(dom: &Domain) -> bool = autostart };
        /// Basic domain information (state, memory, vCPUs, CPU time).
        DomainGetInfo = 16 => "DOMAIN_GET_INFO", "DomainGetInfo",
            fn domain_get_info(DomainGetInfoArgs) -> DomainGetInfoRet,
            client { fn domain_get_info(dom: &Domain) -> DomainGetInfoRet };
        /// A domain's guest OS type (`hvm`).
        DomainGetOsType = 19 => "DOMAIN_GET_OS_TYPE", "DomainGetOSType",
            fn domain_get_os_type(DomainArgs) -> DomainGetOsTypeRet,
            client { fn domain_get_os_type(dom: &Domain) -> String = kind };
        /// Finds a domain by name.
        DomainLookupByName = 23 => "DOMAIN_LOOKUP_BY_NAME", "DomainLookupByName",
            fn domain_lookup_by_name(DomainLookupByNameArgs) -> DomainLookupByNameRet,
            client { fn domain_lookup_by_name(name: &str) -> Domain = dom };
        /// Finds a domain by UUID.
        DomainLookupByUuid = 24 => "DOMAIN_LOOKUP_BY_UUID", "DomainLookupByUUID",
            fn domain_lookup_by_uuid(DomainLookupByUuidArgs) -> DomainLookupByUuidRet,
            client { fn domain_lookup_by_uuid(uuid: Uuid) -> Domain = dom };
        /// Resumes a paused domain.
        DomainResume = 28 => "DOMAIN_RESUME", "DomainResume",
            fn domain_resume(DomainArgs) -> (),
            client { fn domain_resume(dom: &Domain) -> () };
        /// Asks a domain to shut down (`virsh shutdown` without flags).
        DomainShutdown = 33 => "DOMAIN_SHUTDOWN", "DomainShutdown",
            fn domain_shutdown(DomainArgs) -> (),
            client { fn domain_shutdown(dom: &Domain) -> () };
        /// Pauses a running domain.
        DomainSuspend = 34 => "DOMAIN_SUSPEND", "DomainSuspend",
            fn domain_suspend(DomainArgs) -> (),
            client { fn domain_suspend(dom: &Domain) -> () };
        /// The host name of the hypervisor host.
        ConnectGetHostname = 59 => "CONNECT_GET_HOSTNAME", "ConnectGetHostname",
            fn connect_get_hostname(()) -> ConnectGetHostnameRet,
            client { fn connect_get_hostname() -> String = hostname };
        /// Asks whether the server supports a feature (10 turns on keepalive).
        ConnectSupportsFeature = 60 => "CONNECT_SUPPORTS_FEATURE", "ConnectSupportsFeature",
            fn connect_supports_feature(ConnectSupportsFeatureArgs) -> ConnectSupportsFeatureRet,
            client { fn connect_supports_feature(feature: i32) -> bool = supported };
        /// The authentication schemes of the socket; always the first call.
        AuthList = 66 => "AUTH_LIST", "AuthList",
            fn auth_list(()) -> AuthListRet,
            client { fn auth_list() -> Vec<AuthType> = types };
        /// Completes polkit authentication.
        AuthPolkit = 70 => "AUTH_POLKIT", "AuthPolkit",
            fn auth_polkit(()) -> AuthPolkitRet,
            client { fn auth_polkit() -> bool = complete };
        /// Creates and starts a transient storage pool from XML.
        StoragePoolCreateXml = 76 => "STORAGE_POOL_CREATE_XML", "StoragePoolCreateXML",
            fn storage_pool_create_xml(StoragePoolDefineXmlArgs) -> StoragePoolDefineXmlRet,
            client { fn storage_pool_create_xml(xml: &str) { flags: 0 } -> StoragePool = pool };
        /// Defines a persistent storage pool from XML.
        StoragePoolDefineXml = 77 => "STORAGE_POOL_DEFINE_XML", "StoragePoolDefineXML",
            fn storage_pool_define_xml(StoragePoolDefineXmlArgs) -> StoragePoolDefineXmlRet,
            client { fn storage_pool_define_xml(xml: &str) { flags: 0 } -> StoragePool = pool };
        /// Starts a defined storage pool.
        StoragePoolCreate = 78 => "STORAGE_POOL_CREATE", "StoragePoolCreate",
            fn storage_pool_create(StoragePoolFlagsArgs) -> (),
            client { fn storage_pool_create(pool: &StoragePool) { flags: 0 } -> () };
        /// Builds a storage pool (a dir pool: makes its directory).
        StoragePoolBuild = 79 => "STORAGE_POOL_BUILD", "StoragePoolBuild",
            fn storage_pool_build(StoragePoolFlagsArgs) -> (),
            client { fn storage_pool_build(pool: &StoragePool) { flags: 0 } -> () };
        /// Stops a storage pool (a transient one goes away).
        StoragePoolDestroy = 80 => "STORAGE_POOL_DESTROY", "StoragePoolDestroy",
            fn storage_pool_destroy(StoragePoolArgs) -> (),
            client { fn storage_pool_destroy(pool: &StoragePool) -> () };
        /// Deletes an inactive pool's storage (a dir pool: removes its empty directory).
        StoragePoolDelete = 81 => "STORAGE_POOL_DELETE", "StoragePoolDelete",
            fn storage_pool_delete(StoragePoolFlagsArgs) -> (),
            client { fn storage_pool_delete(pool: &StoragePool) { flags: 0 } -> () };
        /// Removes an inactive pool's definition.
        StoragePoolUndefine = 82 => "STORAGE_POOL_UNDEFINE", "StoragePoolUndefine",
            fn storage_pool_undefine(StoragePoolArgs) -> (),
            client { fn storage_pool_undefine(pool: &StoragePool) -> () };
        /// Rescans a storage pool.
        StoragePoolRefresh = 83 => "STORAGE_POOL_REFRESH", "StoragePoolRefresh",
            fn storage_pool_refresh(StoragePoolRefreshArgs) -> (),
            client { fn storage_pool_refresh(pool: &StoragePool) { flags: 0 } -> () };
        /// Finds a storage pool by name.
        StoragePoolLookupByName = 84 => "STORAGE_POOL_LOOKUP_BY_NAME", "StoragePoolLookupByName",
            fn storage_pool_lookup_by_name(StoragePoolLookupByNameArgs) -> StoragePoolLookupByNameRet,
            client { fn storage_pool_lookup_by_name(name: &str) -> StoragePool = pool };
        /// The pool a volume belongs to.
        StoragePoolLookupByVolume = 86 => "STORAGE_POOL_LOOKUP_BY_VOLUME", "StoragePoolLookupByVolume",
            fn storage_pool_lookup_by_volume(StoragePoolLookupByVolumeArgs) -> StoragePoolLookupByNameRet,
            client { fn storage_pool_lookup_by_volume(vol: &StorageVol) -> StoragePool = pool };
        /// Storage pool state and sizes.
        StoragePoolGetInfo = 87 => "STORAGE_POOL_GET_INFO", "StoragePoolGetInfo",
            fn storage_pool_get_info(StoragePoolGetInfoArgs) -> StoragePoolGetInfoRet,
            client { fn storage_pool_get_info(pool: &StoragePool) -> StoragePoolGetInfoRet };
        /// The storage pool XML.
        StoragePoolGetXmlDesc = 88 => "STORAGE_POOL_GET_XML_DESC", "StoragePoolGetXMLDesc",
            fn storage_pool_get_xml_desc(StoragePoolFlagsArgs) -> StoragePoolGetXmlDescRet,
            client { fn storage_pool_get_xml_desc(pool: &StoragePool) { flags: 0 } -> String = xml };
        /// Whether a pool starts with the daemon.
        StoragePoolGetAutostart = 89 => "STORAGE_POOL_GET_AUTOSTART", "StoragePoolGetAutostart",
            fn storage_pool_get_autostart(StoragePoolArgs) -> GetAutostartRet,
            client { fn storage_pool_get_autostart(pool: &StoragePool) -> bool = autostart };
        /// Creates a storage volume from XML.
        StorageVolCreateXml = 93 => "STORAGE_VOL_CREATE_XML", "StorageVolCreateXML",
            fn storage_vol_create_xml(StorageVolCreateXmlArgs) -> StorageVolCreateXmlRet,
            client { fn storage_vol_create_xml(pool: &StoragePool, xml: &str, flags: u32) -> StorageVol = vol };
        /// Deletes a storage volume.
        StorageVolDelete = 94 => "STORAGE_VOL_DELETE", "StorageVolDelete",
            fn storage_vol_delete(StorageVolDeleteArgs) -> (),
            client { fn storage_vol_delete(vol: &StorageVol, flags: u32) -> () };
        /// Finds a volume in a pool by name.
        StorageVolLookupByName = 95 => "STORAGE_VOL_LOOKUP_BY_NAME", "StorageVolLookupByName",
            fn storage_vol_lookup_by_name(StorageVolLookupByNameArgs) -> StorageVolLookupByNameRet,
            client { fn storage_vol_lookup_by_name(pool: &StoragePool, name: &str) -> StorageVol = vol };
        /// Finds a volume of a running pool by its key (a dir pool's: its path).
        StorageVolLookupByKey = 96 => "STORAGE_VOL_LOOKUP_BY_KEY", "StorageVolLookupByKey",
            fn storage_vol_lookup_by_key(StorageVolLookupByKeyArgs) -> StorageVolLookupByNameRet,
            client { fn storage_vol_lookup_by_key(key: &str) -> StorageVol = vol };
        /// Finds a volume of a running pool by its path on the host.
        StorageVolLookupByPath = 97 => "STORAGE_VOL_LOOKUP_BY_PATH", "StorageVolLookupByPath",
            fn storage_vol_lookup_by_path(StorageVolLookupByPathArgs) -> StorageVolLookupByNameRet,
            client { fn storage_vol_lookup_by_path(path: &str) -> StorageVol = vol };
        /// Volume type and sizes.
        StorageVolGetInfo = 98 => "STORAGE_VOL_GET_INFO", "StorageVolGetInfo",
            fn storage_vol_get_info(StorageVolGetInfoArgs) -> StorageVolGetInfoRet,
            client { fn storage_vol_get_info(vol: &StorageVol) -> StorageVolGetInfoRet };
        /// The volume's path on the host.
        StorageVolGetPath = 100 => "STORAGE_VOL_GET_PATH", "StorageVolGetPath",
            fn storage_vol_get_path(StorageVolGetPathArgs) -> StorageVolGetPathRet,
            client { fn storage_vol_get_path(vol: &StorageVol) -> String = name };
        /// The URI the connection was opened with.
        ConnectGetUri = 110 => "CONNECT_GET_URI", "ConnectGetURI",
            fn connect_get_uri(()) -> ConnectGetUriRet,
            client { fn connect_get_uri() -> String = uri };
        /// A domain's security label (empty under the `none` model).
        DomainGetSecurityLabel = 121 => "DOMAIN_GET_SECURITY_LABEL", "DomainGetSecurityLabel",
            fn domain_get_security_label(DomainArgs) -> DomainGetSecurityLabelRet,
            client { fn domain_get_security_label(dom: &Domain) -> DomainGetSecurityLabelRet };
        /// The host's security model and DOI.
        NodeGetSecurityModel = 122 => "NODE_GET_SECURITY_MODEL", "NodeGetSecurityModel",
            fn node_get_security_model(()) -> NodeGetSecurityModelRet,
            client { fn node_get_security_model() -> NodeGetSecurityModelRet };
        /// Finds a host network interface by name (the host needs libvirt's
        /// interface driver; without it the call fails with `VIR_ERR_NO_SUPPORT`).
        InterfaceLookupByName = 128 => "INTERFACE_LOOKUP_BY_NAME", "InterfaceLookupByName",
            fn interface_lookup_by_name(InterfaceLookupByNameArgs) -> InterfaceLookupByNameRet,
            client { fn interface_lookup_by_name(name: &str) -> Interface = iface };
        /// A host network interface's XML (its type, and a bridge's ports).
        InterfaceGetXmlDesc = 130 => "INTERFACE_GET_XML_DESC", "InterfaceGetXMLDesc",
            fn interface_get_xml_desc(InterfaceGetXmlDescArgs) -> InterfaceGetXmlDescRet,
            client { fn interface_get_xml_desc(iface: &Interface) { flags: 0 } -> String = xml };
        /// Whether a domain is running (or paused).
        DomainIsActive = 150 => "DOMAIN_IS_ACTIVE", "DomainIsActive",
            fn domain_is_active(DomainArgs) -> IsActiveRet,
            client { fn domain_is_active(dom: &Domain) -> bool = active };
        /// Whether a domain has a persistent definition.
        DomainIsPersistent = 151 => "DOMAIN_IS_PERSISTENT", "DomainIsPersistent",
            fn domain_is_persistent(DomainArgs) -> IsPersistentRet,
            client { fn domain_is_persistent(dom: &Domain) -> bool = persistent };
        /// Whether a storage pool runs.
        StoragePoolIsActive = 154 => "STORAGE_POOL_IS_ACTIVE", "StoragePoolIsActive",
            fn storage_pool_is_active(StoragePoolArgs) -> IsActiveRet,
            client { fn storage_pool_is_active(pool: &StoragePool) -> bool = active };
        /// Whether a storage pool has a persistent definition.
        StoragePoolIsPersistent = 155 => "STORAGE_POOL_IS_PERSISTENT", "StoragePoolIsPersistent",
            fn storage_pool_is_persistent(StoragePoolArgs) -> IsPersistentRet,
            client { fn storage_pool_is_persistent(pool: &StoragePool) -> bool = persistent };
        /// Whether a host network interface is up (for the udev backend: its
        /// operational state is `up`, so a bridge without ports is not).
        InterfaceIsActive = 156 => "INTERFACE_IS_ACTIVE", "InterfaceIsActive",
            fn interface_is_active(InterfaceIsActiveArgs) -> IsActiveRet,
            client { fn interface_is_active(iface: &Interface) -> bool = active };
        /// The libvirt library version on the server.
        ConnectGetLibVersion = 157 => "CONNECT_GET_LIB_VERSION", "ConnectGetLibVersion",
            fn connect_get_lib_version(()) -> ConnectGetLibVersionRet,
            client { fn connect_get_lib_version() -> u64 = lib_ver };
        /// Whether a domain has a managed save image.
        DomainHasManagedSaveImage = 183 => "DOMAIN_HAS_MANAGED_SAVE_IMAGE", "DomainHasManagedSaveImage",
            fn domain_has_managed_save_image(DomainFlagsArgs) -> DomainHasManagedSaveImageRet,
            client { fn domain_has_managed_save_image(dom: &Domain) { flags: 0 } -> bool = result };
        /// How many snapshots a domain has (`virsh undefine` asks).
        DomainSnapshotNum = 187 => "DOMAIN_SNAPSHOT_NUM", "DomainSnapshotNum",
            fn domain_snapshot_num(DomainFlagsArgs) -> DomainSnapshotNumRet,
            client { fn domain_snapshot_num(dom: &Domain) { flags: 0 } -> i32 = num };
        /// Starts a defined domain with flags; returns the handle with its new id.
        DomainCreateWithFlags = 196 => "DOMAIN_CREATE_WITH_FLAGS", "DomainCreateWithFlags",
            fn domain_create_with_flags(DomainCreateWithFlagsArgs) -> DomainCreateWithFlagsRet,
            client { fn domain_create_with_flags(dom: &Domain, flags: u32) -> Domain = dom };
        /// Uploads data into a volume; the REPLY opens a client-to-server stream.
        StorageVolUpload = 208 => "STORAGE_VOL_UPLOAD", "StorageVolUpload",
            fn storage_vol_upload(StorageVolUploadArgs) -> ();
        /// Reads data from a volume; the REPLY opens a server-to-client stream.
        StorageVolDownload = 209 => "STORAGE_VOL_DOWNLOAD", "StorageVolDownload",
            fn storage_vol_download(StorageVolDownloadArgs) -> ();
        /// Domain state and reason.
        DomainGetState = 212 => "DOMAIN_GET_STATE", "DomainGetState",
            fn domain_get_state(DomainGetStateArgs) -> DomainGetStateRet,
            client { fn domain_get_state(dom: &Domain) { flags: 0 } -> (DomainState, i32) };
        /// Removes a domain's definition.
        DomainUndefineFlags = 231 => "DOMAIN_UNDEFINE_FLAGS", "DomainUndefineFlags",
            fn domain_undefine_flags(DomainUndefineFlagsArgs) -> (),
            client { fn domain_undefine_flags(dom: &Domain, flags: u32) -> () };
        /// Forcibly stops a domain, with flags.
        DomainDestroyFlags = 234 => "DOMAIN_DESTROY_FLAGS", "DomainDestroyFlags",
            fn domain_destroy_flags(DomainDestroyFlagsArgs) -> (),
            client { fn domain_destroy_flags(dom: &Domain, flags: u32) -> () };
        /// Asks a domain to shut down.
        DomainShutdownFlags = 258 => "DOMAIN_SHUTDOWN_FLAGS", "DomainShutdownFlags",
            fn domain_shutdown_flags(DomainShutdownFlagsArgs) -> (),
            client { fn domain_shutdown_flags(dom: &Domain, flags: u32) -> () };
        /// Sets or removes a domain metadata entry (absent `metadata` removes it).
        DomainSetMetadata = 264 => "DOMAIN_SET_METADATA", "DomainSetMetadata",
            fn domain_set_metadata(DomainSetMetadataArgs) -> (),
            client { fn domain_set_metadata(dom: &Domain, kind: i32, metadata: Option<&str>, key: Option<&str>, uri: Option<&str>, flags: u32) -> () };
        /// Reads a domain metadata entry; `kind` is a `DOMAIN_METADATA_*` type.
        DomainGetMetadata = 265 => "DOMAIN_GET_METADATA", "DomainGetMetadata",
            fn domain_get_metadata(DomainGetMetadataArgs) -> DomainGetMetadataRet,
            client { fn domain_get_metadata(dom: &Domain, kind: i32, uri: Option<&str>, flags: u32) -> String = metadata };
        /// Lists domains (flags 0: all, active and inactive).
        ConnectListAllDomains = 273 => "CONNECT_LIST_ALL_DOMAINS", "ConnectListAllDomains",
            fn connect_list_all_domains(ConnectListAllDomainsArgs) -> ConnectListAllDomainsRet,
            client { fn connect_list_all_domains(flags: u32) { need_results: 1 } -> Vec<Domain> = domains };
        /// Lists storage pools.
        ConnectListAllStoragePools = 281 => "CONNECT_LIST_ALL_STORAGE_POOLS", "ConnectListAllStoragePools",
            fn connect_list_all_storage_pools(ConnectListAllStoragePoolsArgs) -> ConnectListAllStoragePoolsRet,
            client { fn connect_list_all_storage_pools() { need_results: 1, flags: 0 } -> Vec<StoragePool> = pools };
        /// Lists the volumes of a pool.
        StoragePoolListAllVolumes = 282 => "STORAGE_POOL_LIST_ALL_VOLUMES", "StoragePoolListAllVolumes",
            fn storage_pool_list_all_volumes(StoragePoolListAllVolumesArgs) -> StoragePoolListAllVolumesRet,
            client { fn storage_pool_list_all_volumes(pool: &StoragePool) { need_results: 1, flags: 0 } -> Vec<StorageVol> = vols };
        /// What the hypervisor offers a domain of one type and architecture
        /// (firmware, machine types, devices), as XML.
        ConnectGetDomainCapabilities = 342 => "CONNECT_GET_DOMAIN_CAPABILITIES", "ConnectGetDomainCapabilities",
            fn connect_get_domain_capabilities(ConnectGetDomainCapabilitiesArgs) -> ConnectGetCapabilitiesRet,
            client { fn connect_get_domain_capabilities(virttype: Option<&str>, arch: Option<&str>) { emulatorbin: None, machine: None, flags: 0 } -> String = capabilities };
        /// Defines a persistent domain from XML, with flags.
        DomainDefineXmlFlags = 350 => "DOMAIN_DEFINE_XML_FLAGS", "DomainDefineXMLFlags",
            fn domain_define_xml_flags(DomainDefineXmlFlagsArgs) -> DomainDefineXmlFlagsRet,
            client { fn domain_define_xml_flags(xml: &str, flags: u32) -> Domain = dom };
        /// The addresses of a running domain's interfaces; `source` is a
        /// `DOMAIN_INTERFACE_ADDRESSES_SRC_*` value.
        DomainInterfaceAddresses = 353 => "DOMAIN_INTERFACE_ADDRESSES", "DomainInterfaceAddresses",
            fn domain_interface_addresses(DomainInterfaceAddressesArgs) -> DomainInterfaceAddressesRet,
            client { fn domain_interface_addresses(dom: &Domain, source: u32, flags: u32) -> Vec<DomainInterface> = ifaces };
        /// Asks to be told when the connection closes (virsh sends it when
        /// feature 15 is answered 1).
        ConnectRegisterCloseCallback = 360 => "CONNECT_REGISTER_CLOSE_CALLBACK", "ConnectRegisterCloseCallback",
            fn connect_register_close_callback(()) -> (),
            client { fn connect_register_close_callback() -> () };
        /// Withdraws the close callback (virsh sends it before `CONNECT_CLOSE`).
        ConnectUnregisterCloseCallback = 361 => "CONNECT_UNREGISTER_CLOSE_CALLBACK", "ConnectUnregisterCloseCallback",
            fn connect_unregister_close_callback(()) -> (),
            client { fn connect_unregister_close_callback() -> () };
        /// A domain's deprecation and tainting messages.
        DomainGetMessages = 426 => "DOMAIN_GET_MESSAGES", "DomainGetMessages",
            fn domain_get_messages(DomainFlagsArgs) -> DomainGetMessagesRet,
            client { fn domain_get_messages(dom: &Domain, flags: u32) -> Vec<String> = msgs };
        /// Whether a domain starts once with the daemon (libvirt 11.2).
        DomainGetAutostartOnce = 449 => "DOMAIN_GET_AUTOSTART_ONCE", "DomainGetAutostartOnce",
            fn domain_get_autostart_once(DomainArgs) -> GetAutostartRet,
            client { fn domain_get_autostart_once(dom: &Domain) -> bool = autostart };
        }
    };
}

macro_rules! procedures {
    (
        $(
            $(#[$m:meta])*
            $variant:ident = $value:literal => $label:literal, $api:literal,
                fn $method:ident($args:ty) -> $ret:ty $(, client $client:tt)?;
        )*
    ) => {
        int_enum! {
            @core
            /// A procedure number of the remote program (`REMOTE_PROC_*`).
            ///
            /// It displays as its `REMOTE_PROC_*` name without the prefix
            /// (`DOMAIN_DEFINE_XML`); [`Procedure::api_name`] gives libvirt's
            /// API name (`DomainDefineXML`), which traces and fault rules use.
            pub enum Procedure: i32 {
                $( $(#[$m])* $variant = $value, )*
            }
        }

        impl Procedure {
            /// The procedure's `REMOTE_PROC_*` name without the prefix
            /// (`DOMAIN_DEFINE_XML`), if it is in the table.
            pub const fn remote_name(self) -> Option<&'static str> {
                match self.normalized() {
                    $( Procedure::$variant => Some($label), )*
                    Procedure::Other(_) => None,
                }
            }
        }

        /// One marker type per procedure, for typed calls.
        pub mod calls {
            use super::*;
            $(
                $(#[$m])*
                #[derive(Debug, Clone, Copy, PartialEq, Eq)]
                pub struct $variant;

                impl $variant {
                    /// libvirt's API name without the `vir` prefix.
                    pub const API_NAME: &'static str = $api;
                }

                impl RemoteCall for $variant {
                    const PROCEDURE: Procedure = Procedure::$variant;
                    type Args = $args;
                    type Ret = $ret;
                    const API_NAME: &'static str = $api;
                }
            )*
        }

        impl Procedure {
            /// libvirt's API name for the procedure without the `vir` prefix,
            /// e.g. `DomainDefineXML`; a number not in the table gives
            /// [`Procedure::UNKNOWN_API_NAME`].
            pub const fn api_name(self) -> &'static str {
                match self.normalized() {
                    $( Procedure::$variant => $api, )*
                    Procedure::Other(_) => Self::UNKNOWN_API_NAME,
                }
            }

            /// The procedure whose API name (without the `vir` prefix) is
            /// exactly `name`, e.g. `DomainGetXMLDesc`.
            pub fn from_api_name(name: &str) -> Option<Procedure> {
                match name {
                    $( $api => Some(Procedure::$variant), )*
                    _ => None,
                }
            }
        }

        /// The decoded arguments of any CALL this crate knows, by procedure.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[cfg_attr(test, derive(proptest_derive::Arbitrary))]
        #[allow(clippy::large_enum_variant)]
        pub enum CallArgs {
            $( $(#[$m])* $variant($args), )*
        }

        impl CallArgs {
            /// Decodes a CALL payload for procedure `procedure`.
            ///
            /// Unknown procedures give [`WireError::UnknownProcedure`]; a server
            /// answers those with an RPC error, as libvirtd does.
            pub fn decode(procedure: Procedure, payload: &[u8]) -> Result<Self, WireError> {
                match procedure {
                    $( Procedure::$variant => decode_exact(payload).map(CallArgs::$variant), )*
                    Procedure::Other(n) => Err(WireError::UnknownProcedure(n)),
                }
            }

            /// The procedure these arguments belong to.
            pub fn procedure(&self) -> Procedure {
                match self {
                    $( CallArgs::$variant(_) => Procedure::$variant, )*
                }
            }
        }

        impl Encode for CallArgs {
            fn encode(&self, buf: &mut bytes::BytesMut) {
                match self {
                    $( CallArgs::$variant(v) => v.encode(buf), )*
                }
            }
        }

        /// The decoded successful result of any procedure this crate knows.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[cfg_attr(test, derive(proptest_derive::Arbitrary))]
        #[allow(clippy::large_enum_variant)]
        pub enum CallRet {
            $( $(#[$m])* $variant($ret), )*
        }

        impl CallRet {
            /// Decodes a successful REPLY payload for procedure `procedure`.
            pub fn decode(procedure: Procedure, payload: &[u8]) -> Result<Self, WireError> {
                match procedure {
                    $( Procedure::$variant => decode_exact(payload).map(CallRet::$variant), )*
                    Procedure::Other(n) => Err(WireError::UnknownProcedure(n)),
                }
            }

            /// The procedure this result belongs to.
            pub fn procedure(&self) -> Procedure {
                match self {
                    $( CallRet::$variant(_) => Procedure::$variant, )*
                }
            }
        }

        impl Encode for CallRet {
            fn encode(&self, buf: &mut bytes::BytesMut) {
                match self {
                    $( CallRet::$variant(v) => v.encode(buf), )*
                }
            }
        }
    };
}

for_each_procedure!(procedures);

impl std::fmt::Display for Procedure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.remote_name() {
            Some(name) => f.write_str(name),
            None => write!(f, "Procedure({})", self.to_raw()),
        }
    }
}

impl Procedure {
    /// What [`Procedure::api_name`] gives for a procedure number not in the table.
    pub const UNKNOWN_API_NAME: &'static str = "UnknownProcedure";

    /// The procedure with this number, if it is in the table.
    pub const fn from_number(n: i32) -> Option<Procedure> {
        match Self::from_raw(n) {
            Procedure::Other(_) => None,
            p => Some(p),
        }
    }

    /// Finds a procedure by name, ignoring case and underscores and an
    /// optional `vir` or `REMOTE_PROC_` prefix, so `DomainDefineXML`,
    /// `virDomainDefineXML` and `DOMAIN_DEFINE_XML` all name the same one.
    pub fn from_name(name: &str) -> Option<Procedure> {
        fn norm(s: &str) -> String {
            s.chars()
                .filter(|c| *c != '_')
                .flat_map(char::to_lowercase)
                .collect()
        }
        let mut wanted = norm(name);
        for prefix in ["remoteproc", "vir"] {
            if let Some(rest) = wanted.strip_prefix(prefix) {
                wanted = rest.to_owned();
            }
        }
        Self::ALL
            .iter()
            .copied()
            .find(|p| norm(p.api_name()) == wanted)
    }

    /// Whether libvirtd needs an open hypervisor connection for the
    /// procedure: all but the few it answers before `CONNECT_OPEN`
    /// (authentication, feature probes, open and close themselves).
    pub fn needs_open(self) -> bool {
        !matches!(
            self,
            Procedure::ConnectOpen
                | Procedure::ConnectClose
                | Procedure::AuthList
                | Procedure::AuthPolkit
                | Procedure::ConnectSupportsFeature
        )
    }

    /// Whether libvirtd serves the procedure through the client's storage
    /// driver connection rather than its hypervisor connection (the two are
    /// opened together but can be lost separately).
    pub fn uses_storage_driver(self) -> bool {
        self.api_name().starts_with("Storage") || self == Procedure::ConnectListAllStoragePools
    }

    /// Whether the procedure opens a client-to-server data stream after its REPLY.
    pub fn is_upload_stream(self) -> bool {
        self == Procedure::StorageVolUpload
    }

    /// Whether the procedure opens a server-to-client data stream after its REPLY.
    pub fn is_download_stream(self) -> bool {
        self == Procedure::StorageVolDownload
    }
}
