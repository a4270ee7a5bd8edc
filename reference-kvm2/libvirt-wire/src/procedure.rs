//! The procedure table of the remote program: one row per procedure gives its
//! number, libvirt's name, and its argument and return types.
//!
//! From that single table come the `Procedure` enum, one marker type per
//! procedure in [`calls`] implementing [`RemoteCall`] (what a typed client
//! uses), and the `CallArgs` / `CallRet` enums (what a server uses to decode an
//! incoming CALL by its procedure number).

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

macro_rules! procedures {
    (
        $( $(#[$m:meta])* $variant:ident = $value:literal => $label:literal, $api:literal : $args:ty => $ret:ty, )*
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

procedures! {
    /// Opens the hypervisor connection (`CONNECT_OPEN`).
    ConnectOpen = 1 => "CONNECT_OPEN", "ConnectOpen" : ConnectOpenArgs => (),
    /// Closes the hypervisor connection; the server then closes the socket.
    ConnectClose = 2 => "CONNECT_CLOSE", "ConnectClose" : () => (),
    /// The hypervisor's version (for QEMU, QEMU's), encoded as the library's is.
    ConnectGetVersion = 4 => "CONNECT_GET_VERSION", "ConnectGetVersion" : () => ConnectGetVersionRet,
    /// The host capabilities XML.
    ConnectGetCapabilities = 7 => "CONNECT_GET_CAPABILITIES", "ConnectGetCapabilities" : () => ConnectGetCapabilitiesRet,
    /// Starts a defined domain.
    DomainCreate = 9 => "DOMAIN_CREATE", "DomainCreate" : DomainCreateArgs => (),
    /// Defines a persistent domain from XML.
    DomainDefineXml = 11 => "DOMAIN_DEFINE_XML", "DomainDefineXML" : DomainDefineXmlArgs => DomainDefineXmlRet,
    /// Forcibly stops a domain.
    DomainDestroy = 12 => "DOMAIN_DESTROY", "DomainDestroy" : DomainDestroyArgs => (),
    /// The domain XML.
    DomainGetXmlDesc = 14 => "DOMAIN_GET_XML_DESC", "DomainGetXMLDesc" : DomainGetXmlDescArgs => DomainGetXmlDescRet,
    /// Basic domain information (state, memory, vCPUs, CPU time).
    DomainGetInfo = 16 => "DOMAIN_GET_INFO", "DomainGetInfo" : DomainGetInfoArgs => DomainGetInfoRet,
    /// Finds a domain by name.
    DomainLookupByName = 23 => "DOMAIN_LOOKUP_BY_NAME", "DomainLookupByName" : DomainLookupByNameArgs => DomainLookupByNameRet,
    /// Finds a domain by UUID.
    DomainLookupByUuid = 24 => "DOMAIN_LOOKUP_BY_UUID", "DomainLookupByUUID" : DomainLookupByUuidArgs => DomainLookupByUuidRet,
    /// Resumes a paused domain.
    DomainResume = 28 => "DOMAIN_RESUME", "DomainResume" : DomainArgs => (),
    /// Pauses a running domain.
    DomainSuspend = 34 => "DOMAIN_SUSPEND", "DomainSuspend" : DomainArgs => (),
    /// The host name of the hypervisor host.
    ConnectGetHostname = 59 => "CONNECT_GET_HOSTNAME", "ConnectGetHostname" : () => ConnectGetHostnameRet,
    /// Asks whether the server supports a feature (10 turns on keepalive).
    ConnectSupportsFeature = 60 => "CONNECT_SUPPORTS_FEATURE", "ConnectSupportsFeature" : ConnectSupportsFeatureArgs => ConnectSupportsFeatureRet,
    /// The authentication schemes of the socket; always the first call.
    AuthList = 66 => "AUTH_LIST", "AuthList" : () => AuthListRet,
    /// Completes polkit authentication.
    AuthPolkit = 70 => "AUTH_POLKIT", "AuthPolkit" : () => AuthPolkitRet,
    /// Creates and starts a transient storage pool from XML.
    StoragePoolCreateXml = 76 => "STORAGE_POOL_CREATE_XML", "StoragePoolCreateXML" : StoragePoolDefineXmlArgs => StoragePoolDefineXmlRet,
    /// Defines a persistent storage pool from XML.
    StoragePoolDefineXml = 77 => "STORAGE_POOL_DEFINE_XML", "StoragePoolDefineXML" : StoragePoolDefineXmlArgs => StoragePoolDefineXmlRet,
    /// Starts a defined storage pool.
    StoragePoolCreate = 78 => "STORAGE_POOL_CREATE", "StoragePoolCreate" : StoragePoolFlagsArgs => (),
    /// Builds a storage pool (a dir pool: makes its directory).
    StoragePoolBuild = 79 => "STORAGE_POOL_BUILD", "StoragePoolBuild" : StoragePoolFlagsArgs => (),
    /// Stops a storage pool (a transient one goes away).
    StoragePoolDestroy = 80 => "STORAGE_POOL_DESTROY", "StoragePoolDestroy" : StoragePoolArgs => (),
    /// Deletes an inactive pool's storage (a dir pool: removes its empty directory).
    StoragePoolDelete = 81 => "STORAGE_POOL_DELETE", "StoragePoolDelete" : StoragePoolFlagsArgs => (),
    /// Removes an inactive pool's definition.
    StoragePoolUndefine = 82 => "STORAGE_POOL_UNDEFINE", "StoragePoolUndefine" : StoragePoolArgs => (),
    /// Rescans a storage pool.
    StoragePoolRefresh = 83 => "STORAGE_POOL_REFRESH", "StoragePoolRefresh" : StoragePoolRefreshArgs => (),
    /// Finds a storage pool by name.
    StoragePoolLookupByName = 84 => "STORAGE_POOL_LOOKUP_BY_NAME", "StoragePoolLookupByName" : StoragePoolLookupByNameArgs => StoragePoolLookupByNameRet,
    /// Storage pool state and sizes.
    StoragePoolGetInfo = 87 => "STORAGE_POOL_GET_INFO", "StoragePoolGetInfo" : StoragePoolGetInfoArgs => StoragePoolGetInfoRet,
    /// The storage pool XML.
    StoragePoolGetXmlDesc = 88 => "STORAGE_POOL_GET_XML_DESC", "StoragePoolGetXMLDesc" : StoragePoolFlagsArgs => StoragePoolGetXmlDescRet,
    /// Creates a storage volume from XML.
    StorageVolCreateXml = 93 => "STORAGE_VOL_CREATE_XML", "StorageVolCreateXML" : StorageVolCreateXmlArgs => StorageVolCreateXmlRet,
    /// Deletes a storage volume.
    StorageVolDelete = 94 => "STORAGE_VOL_DELETE", "StorageVolDelete" : StorageVolDeleteArgs => (),
    /// Finds a volume in a pool by name.
    StorageVolLookupByName = 95 => "STORAGE_VOL_LOOKUP_BY_NAME", "StorageVolLookupByName" : StorageVolLookupByNameArgs => StorageVolLookupByNameRet,
    /// Volume type and sizes.
    StorageVolGetInfo = 98 => "STORAGE_VOL_GET_INFO", "StorageVolGetInfo" : StorageVolGetInfoArgs => StorageVolGetInfoRet,
    /// The volume's path on the host.
    StorageVolGetPath = 100 => "STORAGE_VOL_GET_PATH", "StorageVolGetPath" : StorageVolGetPathArgs => StorageVolGetPathRet,
    /// The URI the connection was opened with.
    ConnectGetUri = 110 => "CONNECT_GET_URI", "ConnectGetURI" : () => ConnectGetUriRet,
    /// Finds a host network interface by name (the interface driver).
    InterfaceLookupByName = 128 => "INTERFACE_LOOKUP_BY_NAME", "InterfaceLookupByName" : InterfaceLookupByNameArgs => InterfaceLookupByNameRet,
    /// A host network interface's XML (its type, and a bridge's ports).
    InterfaceGetXmlDesc = 130 => "INTERFACE_GET_XML_DESC", "InterfaceGetXMLDesc" : InterfaceGetXmlDescArgs => InterfaceGetXmlDescRet,
    /// Whether a host network interface is up (for the udev backend: its
    /// operational state is `up`, so a bridge without ports is not).
    InterfaceIsActive = 156 => "INTERFACE_IS_ACTIVE", "InterfaceIsActive" : InterfaceIsActiveArgs => IsActiveRet,
    /// The libvirt library version on the server.
    ConnectGetLibVersion = 157 => "CONNECT_GET_LIB_VERSION", "ConnectGetLibVersion" : () => ConnectGetLibVersionRet,
    /// Starts a defined domain with flags; returns the handle with its new id.
    DomainCreateWithFlags = 196 => "DOMAIN_CREATE_WITH_FLAGS", "DomainCreateWithFlags" : DomainCreateWithFlagsArgs => DomainCreateWithFlagsRet,
    /// Uploads data into a volume; the REPLY opens a client-to-server stream.
    StorageVolUpload = 208 => "STORAGE_VOL_UPLOAD", "StorageVolUpload" : StorageVolUploadArgs => (),
    /// Domain state and reason.
    DomainGetState = 212 => "DOMAIN_GET_STATE", "DomainGetState" : DomainGetStateArgs => DomainGetStateRet,
    /// Removes a domain's definition.
    DomainUndefineFlags = 231 => "DOMAIN_UNDEFINE_FLAGS", "DomainUndefineFlags" : DomainUndefineFlagsArgs => (),
    /// Forcibly stops a domain, with flags.
    DomainDestroyFlags = 234 => "DOMAIN_DESTROY_FLAGS", "DomainDestroyFlags" : DomainDestroyFlagsArgs => (),
    /// Asks a domain to shut down.
    DomainShutdownFlags = 258 => "DOMAIN_SHUTDOWN_FLAGS", "DomainShutdownFlags" : DomainShutdownFlagsArgs => (),
    /// Sets or removes a domain metadata entry.
    DomainSetMetadata = 264 => "DOMAIN_SET_METADATA", "DomainSetMetadata" : DomainSetMetadataArgs => (),
    /// Reads a domain metadata entry.
    DomainGetMetadata = 265 => "DOMAIN_GET_METADATA", "DomainGetMetadata" : DomainGetMetadataArgs => DomainGetMetadataRet,
    /// Lists domains (flags 0: all, active and inactive).
    ConnectListAllDomains = 273 => "CONNECT_LIST_ALL_DOMAINS", "ConnectListAllDomains" : ConnectListAllDomainsArgs => ConnectListAllDomainsRet,
    /// Lists storage pools.
    ConnectListAllStoragePools = 281 => "CONNECT_LIST_ALL_STORAGE_POOLS", "ConnectListAllStoragePools" : ConnectListAllStoragePoolsArgs => ConnectListAllStoragePoolsRet,
    /// Lists the volumes of a pool.
    StoragePoolListAllVolumes = 282 => "STORAGE_POOL_LIST_ALL_VOLUMES", "StoragePoolListAllVolumes" : StoragePoolListAllVolumesArgs => StoragePoolListAllVolumesRet,
    /// What the hypervisor offers a domain of one type and architecture
    /// (firmware, machine types, devices), as XML.
    ConnectGetDomainCapabilities = 342 => "CONNECT_GET_DOMAIN_CAPABILITIES", "ConnectGetDomainCapabilities" : ConnectGetDomainCapabilitiesArgs => ConnectGetCapabilitiesRet,
    /// Defines a persistent domain from XML, with flags.
    DomainDefineXmlFlags = 350 => "DOMAIN_DEFINE_XML_FLAGS", "DomainDefineXMLFlags" : DomainDefineXmlFlagsArgs => DomainDefineXmlFlagsRet,
    /// The addresses of a running domain's interfaces.
    DomainInterfaceAddresses = 353 => "DOMAIN_INTERFACE_ADDRESSES", "DomainInterfaceAddresses" : DomainInterfaceAddressesArgs => DomainInterfaceAddressesRet,
}

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
}
