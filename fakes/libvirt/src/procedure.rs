//! The remote procedures the fake serves, named the way traces, fault rules
//! and span names refer to them.
//!
//! The wire numbers are the remote program's (`REMOTE_PROC_*`); the server
//! maps decoded packets onto this enum, and the in-process connection tags
//! each of its methods with one value.

use std::fmt;

macro_rules! procedures {
    ($($(#[$doc:meta])* $variant:ident = $num:literal, $name:literal;)*) => {
        /// A remote procedure the fake implements.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Procedure {
            $($(#[$doc])* $variant,)*
        }

        impl Procedure {
            /// Every procedure the fake implements.
            pub const ALL: &'static [Procedure] = &[$(Procedure::$variant,)*];

            /// The remote program's procedure number.
            pub fn number(self) -> i32 {
                match self { $(Procedure::$variant => $num,)* }
            }

            /// The procedure's libvirt API name without the `vir` prefix,
            /// e.g. `DomainDefineXML`.
            pub fn name(self) -> &'static str {
                match self { $(Procedure::$variant => $name,)* }
            }

            /// The procedure with this remote program number.
            pub fn from_number(n: i32) -> Option<Self> {
                match n { $($num => Some(Procedure::$variant),)* _ => None }
            }
        }
    };
}

procedures! {
    /// `REMOTE_PROC_CONNECT_OPEN`.
    ConnectOpen = 1, "ConnectOpen";
    /// `REMOTE_PROC_CONNECT_CLOSE`.
    ConnectClose = 2, "ConnectClose";
    /// `REMOTE_PROC_CONNECT_GET_TYPE`.
    ConnectGetType = 3, "ConnectGetType";
    /// `REMOTE_PROC_CONNECT_GET_VERSION`.
    ConnectGetVersion = 4, "ConnectGetVersion";
    /// `REMOTE_PROC_CONNECT_GET_CAPABILITIES`.
    ConnectGetCapabilities = 7, "ConnectGetCapabilities";
    /// `REMOTE_PROC_DOMAIN_CREATE`.
    DomainCreate = 9, "DomainCreate";
    /// `REMOTE_PROC_DOMAIN_DEFINE_XML`.
    DomainDefineXml = 11, "DomainDefineXML";
    /// `REMOTE_PROC_DOMAIN_DESTROY`.
    DomainDestroy = 12, "DomainDestroy";
    /// `REMOTE_PROC_DOMAIN_GET_XML_DESC`.
    DomainGetXmlDesc = 14, "DomainGetXMLDesc";
    /// `REMOTE_PROC_DOMAIN_GET_INFO`.
    DomainGetInfo = 16, "DomainGetInfo";
    /// `REMOTE_PROC_DOMAIN_LOOKUP_BY_NAME`.
    DomainLookupByName = 23, "DomainLookupByName";
    /// `REMOTE_PROC_DOMAIN_LOOKUP_BY_UUID`.
    DomainLookupByUuid = 24, "DomainLookupByUUID";
    /// `REMOTE_PROC_DOMAIN_RESUME`.
    DomainResume = 28, "DomainResume";
    /// `REMOTE_PROC_DOMAIN_SUSPEND`.
    DomainSuspend = 34, "DomainSuspend";
    /// `REMOTE_PROC_CONNECT_GET_HOSTNAME`.
    ConnectGetHostname = 59, "ConnectGetHostname";
    /// `REMOTE_PROC_CONNECT_SUPPORTS_FEATURE`.
    ConnectSupportsFeature = 60, "ConnectSupportsFeature";
    /// `REMOTE_PROC_AUTH_LIST`.
    AuthList = 66, "AuthList";
    /// `REMOTE_PROC_AUTH_POLKIT`.
    AuthPolkit = 70, "AuthPolkit";
    /// `REMOTE_PROC_STORAGE_POOL_CREATE_XML`.
    StoragePoolCreateXml = 76, "StoragePoolCreateXML";
    /// `REMOTE_PROC_STORAGE_POOL_DEFINE_XML`.
    StoragePoolDefineXml = 77, "StoragePoolDefineXML";
    /// `REMOTE_PROC_STORAGE_POOL_CREATE`.
    StoragePoolCreate = 78, "StoragePoolCreate";
    /// `REMOTE_PROC_STORAGE_POOL_BUILD`.
    StoragePoolBuild = 79, "StoragePoolBuild";
    /// `REMOTE_PROC_STORAGE_POOL_DESTROY`.
    StoragePoolDestroy = 80, "StoragePoolDestroy";
    /// `REMOTE_PROC_STORAGE_POOL_DELETE`.
    StoragePoolDelete = 81, "StoragePoolDelete";
    /// `REMOTE_PROC_STORAGE_POOL_UNDEFINE`.
    StoragePoolUndefine = 82, "StoragePoolUndefine";
    /// `REMOTE_PROC_STORAGE_POOL_REFRESH`.
    StoragePoolRefresh = 83, "StoragePoolRefresh";
    /// `REMOTE_PROC_STORAGE_POOL_LOOKUP_BY_NAME`.
    StoragePoolLookupByName = 84, "StoragePoolLookupByName";
    /// `REMOTE_PROC_STORAGE_POOL_GET_INFO`.
    StoragePoolGetInfo = 87, "StoragePoolGetInfo";
    /// `REMOTE_PROC_STORAGE_POOL_GET_XML_DESC`.
    StoragePoolGetXmlDesc = 88, "StoragePoolGetXMLDesc";
    /// `REMOTE_PROC_STORAGE_VOL_CREATE_XML`.
    StorageVolCreateXml = 93, "StorageVolCreateXML";
    /// `REMOTE_PROC_STORAGE_VOL_DELETE`.
    StorageVolDelete = 94, "StorageVolDelete";
    /// `REMOTE_PROC_STORAGE_VOL_LOOKUP_BY_NAME`.
    StorageVolLookupByName = 95, "StorageVolLookupByName";
    /// `REMOTE_PROC_STORAGE_VOL_GET_INFO`.
    StorageVolGetInfo = 98, "StorageVolGetInfo";
    /// `REMOTE_PROC_STORAGE_VOL_GET_PATH`.
    StorageVolGetPath = 100, "StorageVolGetPath";
    /// `REMOTE_PROC_CONNECT_GET_URI`.
    ConnectGetUri = 110, "ConnectGetURI";
    /// `REMOTE_PROC_INTERFACE_LOOKUP_BY_NAME`.
    InterfaceLookupByName = 128, "InterfaceLookupByName";
    /// `REMOTE_PROC_INTERFACE_GET_XML_DESC`.
    InterfaceGetXmlDesc = 130, "InterfaceGetXMLDesc";
    /// `REMOTE_PROC_INTERFACE_IS_ACTIVE`.
    InterfaceIsActive = 156, "InterfaceIsActive";
    /// `REMOTE_PROC_CONNECT_GET_LIB_VERSION`.
    ConnectGetLibVersion = 157, "ConnectGetLibVersion";
    /// `REMOTE_PROC_DOMAIN_CREATE_WITH_FLAGS`.
    DomainCreateWithFlags = 196, "DomainCreateWithFlags";
    /// `REMOTE_PROC_STORAGE_VOL_UPLOAD`.
    StorageVolUpload = 208, "StorageVolUpload";
    /// `REMOTE_PROC_DOMAIN_GET_STATE`.
    DomainGetState = 212, "DomainGetState";
    /// `REMOTE_PROC_DOMAIN_UNDEFINE_FLAGS`.
    DomainUndefineFlags = 231, "DomainUndefineFlags";
    /// `REMOTE_PROC_DOMAIN_DESTROY_FLAGS`.
    DomainDestroyFlags = 234, "DomainDestroyFlags";
    /// `REMOTE_PROC_DOMAIN_SHUTDOWN_FLAGS`.
    DomainShutdownFlags = 258, "DomainShutdownFlags";
    /// `REMOTE_PROC_DOMAIN_SET_METADATA`.
    DomainSetMetadata = 264, "DomainSetMetadata";
    /// `REMOTE_PROC_DOMAIN_GET_METADATA`.
    DomainGetMetadata = 265, "DomainGetMetadata";
    /// `REMOTE_PROC_CONNECT_LIST_ALL_DOMAINS`.
    ConnectListAllDomains = 273, "ConnectListAllDomains";
    /// `REMOTE_PROC_CONNECT_LIST_ALL_STORAGE_POOLS`.
    ConnectListAllStoragePools = 281, "ConnectListAllStoragePools";
    /// `REMOTE_PROC_STORAGE_POOL_LIST_ALL_VOLUMES`.
    StoragePoolListAllVolumes = 282, "StoragePoolListAllVolumes";
    /// `REMOTE_PROC_CONNECT_GET_DOMAIN_CAPABILITIES`.
    ConnectGetDomainCapabilities = 342, "ConnectGetDomainCapabilities";
    /// `REMOTE_PROC_DOMAIN_DEFINE_XML_FLAGS`.
    DomainDefineXmlFlags = 350, "DomainDefineXMLFlags";
    /// `REMOTE_PROC_DOMAIN_INTERFACE_ADDRESSES`.
    DomainInterfaceAddresses = 353, "DomainInterfaceAddresses";
    /// `REMOTE_PROC_STORAGE_VOL_GET_INFO_FLAGS`.
    StorageVolGetInfoFlags = 378, "StorageVolGetInfoFlags";
}

impl Procedure {
    /// Finds a procedure by name, ignoring case and underscores and an
    /// optional `vir` or `REMOTE_PROC_` prefix, so `DomainDefineXML`,
    /// `virDomainDefineXML` and `DOMAIN_DEFINE_XML` all name the same one.
    pub fn from_name(name: &str) -> Option<Self> {
        let norm = |s: &str| -> String {
            s.chars()
                .filter(|c| *c != '_')
                .flat_map(char::to_lowercase)
                .collect()
        };
        let mut wanted = norm(name);
        for prefix in ["remoteproc", "vir"] {
            if let Some(rest) = wanted.strip_prefix(prefix) {
                wanted = rest.to_owned();
            }
        }
        Self::ALL.iter().copied().find(|p| norm(p.name()) == wanted)
    }

    /// Whether the procedure may run before `ConnectOpen` (libvirtd answers
    /// these without a hypervisor connection).
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
}

impl Procedure {
    /// Whether libvirtd serves the procedure through the client's storage
    /// driver connection rather than its hypervisor connection (the two are
    /// opened together but can be lost separately).
    pub fn uses_storage_driver(self) -> bool {
        self.name().starts_with("Storage") || self == Procedure::ConnectListAllStoragePools
    }
}

impl fmt::Display for Procedure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
