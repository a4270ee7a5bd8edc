//! Typed methods on `Client`, one per procedure of the table: each builds the
//! argument struct, makes the call with the handle's deadline, and unwraps the
//! result struct where it has a single field.

use libvirt_wire::{
    AuthListRet, AuthType, ConnectGetDomainCapabilitiesArgs, ConnectListAllDomainsArgs,
    ConnectListAllStoragePoolsArgs, ConnectOpenArgs, ConnectSupportsFeatureArgs, Domain,
    DomainArgs, DomainCreateArgs, DomainCreateWithFlagsArgs, DomainDefineXmlArgs,
    DomainDefineXmlFlagsArgs, DomainDestroyArgs, DomainDestroyFlagsArgs, DomainGetInfoArgs,
    DomainGetInfoRet, DomainGetMetadataArgs, DomainGetStateArgs, DomainGetXmlDescArgs,
    DomainInterface, DomainInterfaceAddressesArgs, DomainLookupByNameArgs, DomainLookupByUuidArgs,
    DomainSetMetadataArgs, DomainShutdownFlagsArgs, DomainState, DomainUndefineFlagsArgs,
    ErrorCode, ErrorDomain, FEATURE_PROGRAM_KEEPALIVE, Interface, InterfaceGetXmlDescArgs,
    InterfaceIsActiveArgs, InterfaceLookupByNameArgs, RemoteError, StoragePool, StoragePoolArgs,
    StoragePoolDefineXmlArgs, StoragePoolFlagsArgs, StoragePoolGetInfoArgs, StoragePoolGetInfoRet,
    StoragePoolListAllVolumesArgs, StoragePoolLookupByNameArgs, StoragePoolRefreshArgs, StorageVol,
    StorageVolCreateXmlArgs, StorageVolDeleteArgs, StorageVolGetInfoArgs, StorageVolGetInfoRet,
    StorageVolGetPathArgs, StorageVolLookupByNameArgs, Uuid, calls,
};

use crate::client::Client;
use crate::error::{Error, Result};

impl Client {
    /// Authenticates and opens `uri`: `AUTH_LIST`, then `AUTH_POLKIT` when
    /// the socket asks for it, then `CONNECT_OPEN`. SASL is not supported.
    pub async fn open(&self, uri: &str) -> Result<()> {
        let types = self.auth_list().await?;
        if types.first().is_some_and(|t| *t == AuthType::Polkit) {
            if !self.auth_polkit().await? {
                return Err(Error::remote(RemoteError::new(
                    ErrorCode::AuthFailed,
                    ErrorDomain::Rpc,
                    "polkit authentication did not complete",
                )));
            }
        } else if !types.is_empty() && !types.contains(&AuthType::None) {
            return Err(Error::remote(RemoteError::new(
                ErrorCode::AuthUnavailable,
                ErrorDomain::Rpc,
                format!("unsupported authentication schemes {types:?}"),
            )));
        }
        self.connect_open(uri).await
    }

    /// Asks the server to send keepalive PINGs (`CONNECT_SUPPORTS_FEATURE` 10).
    /// Safe at any time: the connection always answers PINGs.
    pub async fn enable_server_keepalive(&self) -> Result<bool> {
        self.connect_supports_feature(FEATURE_PROGRAM_KEEPALIVE)
            .await
    }

    /// `AUTH_LIST`: the authentication schemes of the socket.
    pub async fn auth_list(&self) -> Result<Vec<AuthType>> {
        let ret: AuthListRet = self.call::<calls::AuthList>(&()).await?;
        Ok(ret.types)
    }

    /// `AUTH_POLKIT`: whether polkit authentication completed.
    pub async fn auth_polkit(&self) -> Result<bool> {
        Ok(self.call::<calls::AuthPolkit>(&()).await?.complete != 0)
    }

    /// `CONNECT_OPEN` with `uri` and no flags.
    pub async fn connect_open(&self, uri: &str) -> Result<()> {
        self.connect_open_with(Some(uri), 0).await
    }

    /// `CONNECT_OPEN` with an optional URI (absent: the server's default) and flags.
    pub async fn connect_open_with(&self, uri: Option<&str>, flags: u32) -> Result<()> {
        let args = ConnectOpenArgs {
            name: uri.map(str::to_owned),
            flags,
        };
        self.call::<calls::ConnectOpen>(&args).await
    }

    /// `CONNECT_CLOSE`; the server closes the connection after replying.
    pub async fn connect_close(&self) -> Result<()> {
        self.call::<calls::ConnectClose>(&()).await
    }

    /// `CONNECT_GET_LIB_VERSION`: major * 1 000 000 + minor * 1 000 + micro.
    pub async fn connect_get_lib_version(&self) -> Result<u64> {
        Ok(self.call::<calls::ConnectGetLibVersion>(&()).await?.lib_ver)
    }

    /// `CONNECT_GET_VERSION`: the hypervisor's version (for the QEMU driver,
    /// QEMU's), major * 1 000 000 + minor * 1 000 + micro.
    pub async fn connect_get_version(&self) -> Result<u64> {
        Ok(self.call::<calls::ConnectGetVersion>(&()).await?.hv_ver)
    }

    /// `CONNECT_GET_HOSTNAME`.
    pub async fn connect_get_hostname(&self) -> Result<String> {
        Ok(self.call::<calls::ConnectGetHostname>(&()).await?.hostname)
    }

    /// `CONNECT_GET_CAPABILITIES`: the capabilities XML.
    pub async fn connect_get_capabilities(&self) -> Result<String> {
        Ok(self
            .call::<calls::ConnectGetCapabilities>(&())
            .await?
            .capabilities)
    }

    /// `CONNECT_GET_DOMAIN_CAPABILITIES` for a domain type and architecture
    /// (absent: the host's choice) on the host's default emulator and machine.
    pub async fn connect_get_domain_capabilities(
        &self,
        virttype: Option<&str>,
        arch: Option<&str>,
    ) -> Result<String> {
        let args = ConnectGetDomainCapabilitiesArgs {
            emulatorbin: None,
            arch: arch.map(str::to_owned),
            machine: None,
            virttype: virttype.map(str::to_owned),
            flags: 0,
        };
        Ok(self
            .call::<calls::ConnectGetDomainCapabilities>(&args)
            .await?
            .capabilities)
    }

    /// `INTERFACE_LOOKUP_BY_NAME`: a host network interface (the host needs
    /// libvirt's interface driver; without it the call fails with
    /// `VIR_ERR_NO_SUPPORT`).
    pub async fn interface_lookup_by_name(&self, name: &str) -> Result<Interface> {
        let args = InterfaceLookupByNameArgs {
            name: name.to_owned(),
        };
        Ok(self
            .call::<calls::InterfaceLookupByName>(&args)
            .await?
            .iface)
    }

    /// `INTERFACE_GET_XML_DESC`: the interface's XML as the host sees it now.
    pub async fn interface_get_xml_desc(&self, iface: &Interface) -> Result<String> {
        let args = InterfaceGetXmlDescArgs {
            iface: iface.clone(),
            flags: 0,
        };
        Ok(self.call::<calls::InterfaceGetXmlDesc>(&args).await?.xml)
    }

    /// `INTERFACE_IS_ACTIVE`.
    pub async fn interface_is_active(&self, iface: &Interface) -> Result<bool> {
        let args = InterfaceIsActiveArgs {
            iface: iface.clone(),
        };
        Ok(self.call::<calls::InterfaceIsActive>(&args).await?.active != 0)
    }

    /// `CONNECT_GET_URI`.
    pub async fn connect_get_uri(&self) -> Result<String> {
        Ok(self.call::<calls::ConnectGetUri>(&()).await?.uri)
    }

    /// `CONNECT_SUPPORTS_FEATURE`.
    pub async fn connect_supports_feature(&self, feature: i32) -> Result<bool> {
        let args = ConnectSupportsFeatureArgs { feature };
        Ok(self
            .call::<calls::ConnectSupportsFeature>(&args)
            .await?
            .supported
            != 0)
    }

    /// `CONNECT_LIST_ALL_DOMAINS`; `flags` 0 lists all domains.
    pub async fn connect_list_all_domains(&self, flags: u32) -> Result<Vec<Domain>> {
        let args = ConnectListAllDomainsArgs {
            need_results: 1,
            flags,
        };
        Ok(self
            .call::<calls::ConnectListAllDomains>(&args)
            .await?
            .domains)
    }

    /// `DOMAIN_LOOKUP_BY_NAME`.
    pub async fn domain_lookup_by_name(&self, name: &str) -> Result<Domain> {
        let args = DomainLookupByNameArgs {
            name: name.to_owned(),
        };
        Ok(self.call::<calls::DomainLookupByName>(&args).await?.dom)
    }

    /// `DOMAIN_LOOKUP_BY_UUID`.
    pub async fn domain_lookup_by_uuid(&self, uuid: Uuid) -> Result<Domain> {
        let args = DomainLookupByUuidArgs { uuid };
        Ok(self.call::<calls::DomainLookupByUuid>(&args).await?.dom)
    }

    /// `DOMAIN_DEFINE_XML`.
    pub async fn domain_define_xml(&self, xml: &str) -> Result<Domain> {
        let args = DomainDefineXmlArgs {
            xml: xml.to_owned(),
        };
        Ok(self.call::<calls::DomainDefineXml>(&args).await?.dom)
    }

    /// `DOMAIN_DEFINE_XML_FLAGS`.
    pub async fn domain_define_xml_flags(&self, xml: &str, flags: u32) -> Result<Domain> {
        let args = DomainDefineXmlFlagsArgs {
            xml: xml.to_owned(),
            flags,
        };
        Ok(self.call::<calls::DomainDefineXmlFlags>(&args).await?.dom)
    }

    /// `DOMAIN_CREATE`: starts a defined domain.
    pub async fn domain_create(&self, dom: &Domain) -> Result<()> {
        let args = DomainCreateArgs { dom: dom.clone() };
        self.call::<calls::DomainCreate>(&args).await
    }

    /// `DOMAIN_CREATE_WITH_FLAGS`: starts a defined domain; returns it with its id.
    pub async fn domain_create_with_flags(&self, dom: &Domain, flags: u32) -> Result<Domain> {
        let args = DomainCreateWithFlagsArgs {
            dom: dom.clone(),
            flags,
        };
        Ok(self.call::<calls::DomainCreateWithFlags>(&args).await?.dom)
    }

    /// `DOMAIN_GET_STATE`: the state and its reason.
    pub async fn domain_get_state(&self, dom: &Domain) -> Result<(DomainState, i32)> {
        let args = DomainGetStateArgs {
            dom: dom.clone(),
            flags: 0,
        };
        let ret = self.call::<calls::DomainGetState>(&args).await?;
        Ok((DomainState::from_raw(ret.state), ret.reason))
    }

    /// `DOMAIN_GET_INFO`.
    pub async fn domain_get_info(&self, dom: &Domain) -> Result<DomainGetInfoRet> {
        let args = DomainGetInfoArgs { dom: dom.clone() };
        self.call::<calls::DomainGetInfo>(&args).await
    }

    /// `DOMAIN_GET_XML_DESC`.
    pub async fn domain_get_xml_desc(&self, dom: &Domain, flags: u32) -> Result<String> {
        let args = DomainGetXmlDescArgs {
            dom: dom.clone(),
            flags,
        };
        Ok(self.call::<calls::DomainGetXmlDesc>(&args).await?.xml)
    }

    /// `DOMAIN_SUSPEND`: pauses the domain.
    pub async fn domain_suspend(&self, dom: &Domain) -> Result<()> {
        let args = DomainArgs { dom: dom.clone() };
        self.call::<calls::DomainSuspend>(&args).await
    }

    /// `DOMAIN_RESUME`: resumes a paused domain.
    pub async fn domain_resume(&self, dom: &Domain) -> Result<()> {
        let args = DomainArgs { dom: dom.clone() };
        self.call::<calls::DomainResume>(&args).await
    }

    /// `DOMAIN_DESTROY`: forcibly stops the domain.
    pub async fn domain_destroy(&self, dom: &Domain) -> Result<()> {
        let args = DomainDestroyArgs { dom: dom.clone() };
        self.call::<calls::DomainDestroy>(&args).await
    }

    /// `DOMAIN_DESTROY_FLAGS`.
    pub async fn domain_destroy_flags(&self, dom: &Domain, flags: u32) -> Result<()> {
        let args = DomainDestroyFlagsArgs {
            dom: dom.clone(),
            flags,
        };
        self.call::<calls::DomainDestroyFlags>(&args).await
    }

    /// `DOMAIN_SHUTDOWN_FLAGS`.
    pub async fn domain_shutdown_flags(&self, dom: &Domain, flags: u32) -> Result<()> {
        let args = DomainShutdownFlagsArgs {
            dom: dom.clone(),
            flags,
        };
        self.call::<calls::DomainShutdownFlags>(&args).await
    }

    /// `DOMAIN_UNDEFINE_FLAGS`.
    pub async fn domain_undefine_flags(&self, dom: &Domain, flags: u32) -> Result<()> {
        let args = DomainUndefineFlagsArgs {
            dom: dom.clone(),
            flags,
        };
        self.call::<calls::DomainUndefineFlags>(&args).await
    }

    /// `DOMAIN_GET_METADATA`: `kind` is a `DOMAIN_METADATA_*` type.
    pub async fn domain_get_metadata(
        &self,
        dom: &Domain,
        kind: i32,
        uri: Option<&str>,
        flags: u32,
    ) -> Result<String> {
        let args = DomainGetMetadataArgs {
            dom: dom.clone(),
            kind,
            uri: uri.map(str::to_owned),
            flags,
        };
        Ok(self.call::<calls::DomainGetMetadata>(&args).await?.metadata)
    }

    /// `DOMAIN_SET_METADATA`: `metadata` absent removes the entry.
    pub async fn domain_set_metadata(
        &self,
        dom: &Domain,
        kind: i32,
        metadata: Option<&str>,
        key: Option<&str>,
        uri: Option<&str>,
        flags: u32,
    ) -> Result<()> {
        let args = DomainSetMetadataArgs {
            dom: dom.clone(),
            kind,
            metadata: metadata.map(str::to_owned),
            key: key.map(str::to_owned),
            uri: uri.map(str::to_owned),
            flags,
        };
        self.call::<calls::DomainSetMetadata>(&args).await
    }

    /// `DOMAIN_INTERFACE_ADDRESSES`: `source` is a
    /// `DOMAIN_INTERFACE_ADDRESSES_SRC_*` value.
    pub async fn domain_interface_addresses(
        &self,
        dom: &Domain,
        source: u32,
        flags: u32,
    ) -> Result<Vec<DomainInterface>> {
        let args = DomainInterfaceAddressesArgs {
            dom: dom.clone(),
            source,
            flags,
        };
        Ok(self
            .call::<calls::DomainInterfaceAddresses>(&args)
            .await?
            .ifaces)
    }

    /// `STORAGE_POOL_LOOKUP_BY_NAME`.
    pub async fn storage_pool_lookup_by_name(&self, name: &str) -> Result<StoragePool> {
        let args = StoragePoolLookupByNameArgs {
            name: name.to_owned(),
        };
        Ok(self
            .call::<calls::StoragePoolLookupByName>(&args)
            .await?
            .pool)
    }

    /// `STORAGE_POOL_GET_INFO`.
    pub async fn storage_pool_get_info(&self, pool: &StoragePool) -> Result<StoragePoolGetInfoRet> {
        let args = StoragePoolGetInfoArgs { pool: pool.clone() };
        self.call::<calls::StoragePoolGetInfo>(&args).await
    }

    /// `STORAGE_POOL_DEFINE_XML`: defines a persistent pool.
    pub async fn storage_pool_define_xml(&self, xml: &str) -> Result<StoragePool> {
        let args = StoragePoolDefineXmlArgs {
            xml: xml.to_owned(),
            flags: 0,
        };
        Ok(self.call::<calls::StoragePoolDefineXml>(&args).await?.pool)
    }

    /// `STORAGE_POOL_CREATE_XML` (flags 0): creates and starts a transient pool.
    pub async fn storage_pool_create_xml(&self, xml: &str) -> Result<StoragePool> {
        let args = StoragePoolDefineXmlArgs {
            xml: xml.to_owned(),
            flags: 0,
        };
        Ok(self.call::<calls::StoragePoolCreateXml>(&args).await?.pool)
    }

    /// `CONNECT_LIST_ALL_STORAGE_POOLS` (flags 0: every pool).
    pub async fn connect_list_all_storage_pools(&self) -> Result<Vec<StoragePool>> {
        let args = ConnectListAllStoragePoolsArgs {
            need_results: 1,
            flags: 0,
        };
        Ok(self
            .call::<calls::ConnectListAllStoragePools>(&args)
            .await?
            .pools)
    }

    /// `STORAGE_POOL_BUILD` (flags 0).
    pub async fn storage_pool_build(&self, pool: &StoragePool) -> Result<()> {
        let args = StoragePoolFlagsArgs {
            pool: pool.clone(),
            flags: 0,
        };
        self.call::<calls::StoragePoolBuild>(&args).await
    }

    /// `STORAGE_POOL_CREATE`: starts a defined pool.
    pub async fn storage_pool_create(&self, pool: &StoragePool) -> Result<()> {
        let args = StoragePoolFlagsArgs {
            pool: pool.clone(),
            flags: 0,
        };
        self.call::<calls::StoragePoolCreate>(&args).await
    }

    /// `STORAGE_POOL_DESTROY`: stops a pool.
    pub async fn storage_pool_destroy(&self, pool: &StoragePool) -> Result<()> {
        let args = StoragePoolArgs { pool: pool.clone() };
        self.call::<calls::StoragePoolDestroy>(&args).await
    }

    /// `STORAGE_POOL_DELETE` (flags 0): removes an inactive pool's storage.
    pub async fn storage_pool_delete(&self, pool: &StoragePool) -> Result<()> {
        let args = StoragePoolFlagsArgs {
            pool: pool.clone(),
            flags: 0,
        };
        self.call::<calls::StoragePoolDelete>(&args).await
    }

    /// `STORAGE_POOL_UNDEFINE`: removes an inactive pool's definition.
    pub async fn storage_pool_undefine(&self, pool: &StoragePool) -> Result<()> {
        let args = StoragePoolArgs { pool: pool.clone() };
        self.call::<calls::StoragePoolUndefine>(&args).await
    }

    /// `STORAGE_POOL_GET_XML_DESC` (flags 0).
    pub async fn storage_pool_get_xml_desc(&self, pool: &StoragePool) -> Result<String> {
        let args = StoragePoolFlagsArgs {
            pool: pool.clone(),
            flags: 0,
        };
        Ok(self.call::<calls::StoragePoolGetXmlDesc>(&args).await?.xml)
    }

    /// `STORAGE_POOL_REFRESH`.
    pub async fn storage_pool_refresh(&self, pool: &StoragePool) -> Result<()> {
        let args = StoragePoolRefreshArgs {
            pool: pool.clone(),
            flags: 0,
        };
        self.call::<calls::StoragePoolRefresh>(&args).await
    }

    /// `STORAGE_POOL_LIST_ALL_VOLUMES`.
    pub async fn storage_pool_list_all_volumes(
        &self,
        pool: &StoragePool,
    ) -> Result<Vec<StorageVol>> {
        let args = StoragePoolListAllVolumesArgs {
            pool: pool.clone(),
            need_results: 1,
            flags: 0,
        };
        Ok(self
            .call::<calls::StoragePoolListAllVolumes>(&args)
            .await?
            .vols)
    }

    /// `STORAGE_VOL_LOOKUP_BY_NAME`.
    pub async fn storage_vol_lookup_by_name(
        &self,
        pool: &StoragePool,
        name: &str,
    ) -> Result<StorageVol> {
        let args = StorageVolLookupByNameArgs {
            pool: pool.clone(),
            name: name.to_owned(),
        };
        Ok(self.call::<calls::StorageVolLookupByName>(&args).await?.vol)
    }

    /// `STORAGE_VOL_CREATE_XML`.
    pub async fn storage_vol_create_xml(
        &self,
        pool: &StoragePool,
        xml: &str,
        flags: u32,
    ) -> Result<StorageVol> {
        let args = StorageVolCreateXmlArgs {
            pool: pool.clone(),
            xml: xml.to_owned(),
            flags,
        };
        Ok(self.call::<calls::StorageVolCreateXml>(&args).await?.vol)
    }

    /// `STORAGE_VOL_GET_PATH`: the volume's path on the host.
    pub async fn storage_vol_get_path(&self, vol: &StorageVol) -> Result<String> {
        let args = StorageVolGetPathArgs { vol: vol.clone() };
        Ok(self.call::<calls::StorageVolGetPath>(&args).await?.name)
    }

    /// `STORAGE_VOL_GET_INFO`.
    pub async fn storage_vol_get_info(&self, vol: &StorageVol) -> Result<StorageVolGetInfoRet> {
        let args = StorageVolGetInfoArgs { vol: vol.clone() };
        self.call::<calls::StorageVolGetInfo>(&args).await
    }

    /// `STORAGE_VOL_DELETE`.
    pub async fn storage_vol_delete(&self, vol: &StorageVol, flags: u32) -> Result<()> {
        let args = StorageVolDeleteArgs {
            vol: vol.clone(),
            flags,
        };
        self.call::<calls::StorageVolDelete>(&args).await
    }
}
