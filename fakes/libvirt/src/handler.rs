//! The fake's answer to every procedure of the wire table: `libvirt_wire`'s
//! [`Handler`] for one CALL the server decoded. Each method is the wire form
//! of a [`FakeConnection`] method: it takes the argument struct apart, makes
//! the call (trace, faults, gating, the model) and builds the result struct.
//!
//! A procedure added to the table without its method here does not compile.

use libvirt_wire::{
    AuthListRet, AuthPolkitRet, AuthType, ConnectGetCapabilitiesRet,
    ConnectGetDomainCapabilitiesArgs, ConnectGetHostnameRet, ConnectGetLibVersionRet,
    ConnectGetUriRet, ConnectGetVersionRet, ConnectListAllDomainsArgs, ConnectListAllDomainsRet,
    ConnectListAllStoragePoolsArgs, ConnectListAllStoragePoolsRet, ConnectOpenArgs,
    ConnectSupportsFeatureArgs, ConnectSupportsFeatureRet, DomainArgs, DomainCreateArgs,
    DomainCreateWithFlagsArgs, DomainCreateWithFlagsRet, DomainDefineXmlArgs,
    DomainDefineXmlFlagsArgs, DomainDefineXmlFlagsRet, DomainDefineXmlRet, DomainDestroyArgs,
    DomainDestroyFlagsArgs, DomainGetInfoArgs, DomainGetInfoRet, DomainGetMetadataArgs,
    DomainGetMetadataRet, DomainGetStateArgs, DomainGetStateRet, DomainGetXmlDescArgs,
    DomainGetXmlDescRet, DomainInterfaceAddressesArgs, DomainInterfaceAddressesRet,
    DomainLookupByNameArgs, DomainLookupByNameRet, DomainLookupByUuidArgs, DomainLookupByUuidRet,
    DomainSetMetadataArgs, DomainShutdownFlagsArgs, DomainUndefineFlagsArgs, Handler, Header,
    Interface, InterfaceGetXmlDescArgs, InterfaceGetXmlDescRet, InterfaceIsActiveArgs,
    InterfaceLookupByNameArgs, InterfaceLookupByNameRet, IsActiveRet, StoragePoolArgs,
    StoragePoolDefineXmlArgs, StoragePoolDefineXmlRet, StoragePoolFlagsArgs,
    StoragePoolGetInfoArgs, StoragePoolGetInfoRet, StoragePoolGetXmlDescRet,
    StoragePoolListAllVolumesArgs, StoragePoolListAllVolumesRet, StoragePoolLookupByNameArgs,
    StoragePoolLookupByNameRet, StoragePoolRefreshArgs, StorageVolCreateXmlArgs,
    StorageVolCreateXmlRet, StorageVolDeleteArgs, StorageVolGetInfoArgs, StorageVolGetInfoRet,
    StorageVolGetPathArgs, StorageVolGetPathRet, StorageVolLookupByNameArgs,
    StorageVolLookupByNameRet, StorageVolUploadArgs,
};
use libvirt_wire::{
    CharArray, ConnectGetTypeRet, DomainFlagsArgs, DomainGetMessagesRet, DomainGetOsTypeRet,
    DomainGetSecurityLabelRet, DomainHasManagedSaveImageRet, DomainSnapshotNumRet, GetAutostartRet,
    IsPersistentRet, NodeGetInfoRet, NodeGetSecurityModelRet, StoragePoolLookupByVolumeArgs,
    StorageVolDownloadArgs, StorageVolLookupByKeyArgs, StorageVolLookupByPathArgs,
};

use crate::error::CallError;
use crate::fake::connection::FakeConnection;
use crate::streams::{Streams, Tx};

/// One CALL being answered: the connection it came on, its header (the
/// serial an upload stream carries) and the server's outgoing packets and
/// stream table, which an upload joins.
pub(crate) struct WireCall<'a> {
    pub(crate) conn: &'a FakeConnection,
    pub(crate) header: Header,
    pub(crate) tx: &'a Tx,
    pub(crate) streams: &'a Streams,
    /// What the server runs once the REPLY is queued: a download's data,
    /// which must follow it.
    pub(crate) after_reply: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

fn flag(b: bool) -> i32 {
    i32::from(b)
}

/// The length of a list as the wire counts it.
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The list itself when the caller asked for it (`need_results`), else
/// nothing: the count alone is answered.
fn results<T>(need_results: i32, list: Vec<T>) -> Vec<T> {
    if need_results != 0 { list } else { Vec::new() }
}

impl Handler for WireCall<'_> {
    type Error = CallError;

    // Connection.

    async fn connect_open(&self, a: ConnectOpenArgs) -> Result<(), CallError> {
        self.conn.open(a.name.as_deref(), a.flags).await
    }

    async fn connect_close(&self, (): ()) -> Result<(), CallError> {
        self.conn.connect_close().await
    }

    async fn connect_get_version(&self, (): ()) -> Result<ConnectGetVersionRet, CallError> {
        let hv_ver = self.conn.get_version().await?;
        Ok(ConnectGetVersionRet { hv_ver })
    }

    async fn connect_get_lib_version(&self, (): ()) -> Result<ConnectGetLibVersionRet, CallError> {
        let lib_ver = self.conn.get_lib_version().await?;
        Ok(ConnectGetLibVersionRet { lib_ver })
    }

    async fn connect_get_hostname(&self, (): ()) -> Result<ConnectGetHostnameRet, CallError> {
        let hostname = self.conn.get_hostname().await?;
        Ok(ConnectGetHostnameRet { hostname })
    }

    async fn connect_get_uri(&self, (): ()) -> Result<ConnectGetUriRet, CallError> {
        let uri = self.conn.get_uri().await?;
        Ok(ConnectGetUriRet { uri })
    }

    async fn connect_get_capabilities(
        &self,
        (): (),
    ) -> Result<ConnectGetCapabilitiesRet, CallError> {
        let capabilities = self.conn.get_capabilities().await?;
        Ok(ConnectGetCapabilitiesRet { capabilities })
    }

    async fn connect_get_domain_capabilities(
        &self,
        a: ConnectGetDomainCapabilitiesArgs,
    ) -> Result<ConnectGetCapabilitiesRet, CallError> {
        let capabilities = self
            .conn
            .get_domain_capabilities(a.virttype.as_deref(), a.arch.as_deref(), a.flags)
            .await?;
        Ok(ConnectGetCapabilitiesRet { capabilities })
    }

    async fn connect_supports_feature(
        &self,
        a: ConnectSupportsFeatureArgs,
    ) -> Result<ConnectSupportsFeatureRet, CallError> {
        let supported = self.conn.supports_feature(a.feature).await?;
        Ok(ConnectSupportsFeatureRet { supported })
    }

    async fn auth_list(&self, (): ()) -> Result<AuthListRet, CallError> {
        let types = self.conn.auth_list().await?;
        let types = types.into_iter().map(AuthType::from_raw).collect();
        Ok(AuthListRet { types })
    }

    async fn auth_polkit(&self, (): ()) -> Result<AuthPolkitRet, CallError> {
        let complete = self.conn.auth_polkit().await?;
        Ok(AuthPolkitRet { complete })
    }

    async fn connect_list_all_domains(
        &self,
        a: ConnectListAllDomainsArgs,
    ) -> Result<ConnectListAllDomainsRet, CallError> {
        let domains = self.conn.list_all_domains(a.flags).await?;
        let ret = count(domains.len());
        let domains = results(a.need_results, domains);
        Ok(ConnectListAllDomainsRet { domains, ret })
    }

    async fn connect_list_all_storage_pools(
        &self,
        a: ConnectListAllStoragePoolsArgs,
    ) -> Result<ConnectListAllStoragePoolsRet, CallError> {
        let pools = self.conn.list_all_storage_pools(a.flags).await?;
        let ret = count(pools.len());
        let pools = results(a.need_results, pools);
        Ok(ConnectListAllStoragePoolsRet { pools, ret })
    }

    // Host interfaces.

    async fn interface_lookup_by_name(
        &self,
        a: InterfaceLookupByNameArgs,
    ) -> Result<InterfaceLookupByNameRet, CallError> {
        let (name, mac) = self.conn.interface_lookup_by_name(&a.name).await?;
        Ok(InterfaceLookupByNameRet {
            iface: Interface { name, mac },
        })
    }

    async fn interface_get_xml_desc(
        &self,
        a: InterfaceGetXmlDescArgs,
    ) -> Result<InterfaceGetXmlDescRet, CallError> {
        let xml = self
            .conn
            .interface_get_xml_desc(&a.iface.name, a.flags)
            .await?;
        Ok(InterfaceGetXmlDescRet { xml })
    }

    async fn interface_is_active(
        &self,
        a: InterfaceIsActiveArgs,
    ) -> Result<IsActiveRet, CallError> {
        let active = self.conn.interface_is_active(&a.iface.name).await?;
        Ok(IsActiveRet {
            active: i32::from(active),
        })
    }

    // Domains.

    async fn domain_lookup_by_name(
        &self,
        a: DomainLookupByNameArgs,
    ) -> Result<DomainLookupByNameRet, CallError> {
        let dom = self.conn.domain_lookup_by_name(&a.name).await?;
        Ok(DomainLookupByNameRet { dom })
    }

    async fn domain_lookup_by_uuid(
        &self,
        a: DomainLookupByUuidArgs,
    ) -> Result<DomainLookupByUuidRet, CallError> {
        let uuid = uuid::Uuid::from_bytes(a.uuid.0);
        let dom = self.conn.domain_lookup_by_uuid(&uuid).await?;
        Ok(DomainLookupByUuidRet { dom })
    }

    async fn domain_define_xml(
        &self,
        a: DomainDefineXmlArgs,
    ) -> Result<DomainDefineXmlRet, CallError> {
        let dom = self.conn.domain_define_xml(&a.xml).await?;
        Ok(DomainDefineXmlRet { dom })
    }

    async fn domain_define_xml_flags(
        &self,
        a: DomainDefineXmlFlagsArgs,
    ) -> Result<DomainDefineXmlFlagsRet, CallError> {
        let dom = self.conn.domain_define_xml_flags(&a.xml, a.flags).await?;
        Ok(DomainDefineXmlFlagsRet { dom })
    }

    async fn domain_create(&self, a: DomainCreateArgs) -> Result<(), CallError> {
        self.conn.domain_create(&a.dom).await
    }

    async fn domain_create_with_flags(
        &self,
        a: DomainCreateWithFlagsArgs,
    ) -> Result<DomainCreateWithFlagsRet, CallError> {
        let dom = self.conn.domain_create_with_flags(&a.dom, a.flags).await?;
        Ok(DomainCreateWithFlagsRet { dom })
    }

    async fn domain_destroy(&self, a: DomainDestroyArgs) -> Result<(), CallError> {
        self.conn.domain_destroy(&a.dom).await
    }

    async fn domain_destroy_flags(&self, a: DomainDestroyFlagsArgs) -> Result<(), CallError> {
        self.conn.domain_destroy_flags(&a.dom, a.flags).await
    }

    async fn domain_shutdown_flags(&self, a: DomainShutdownFlagsArgs) -> Result<(), CallError> {
        self.conn.domain_shutdown_flags(&a.dom, a.flags).await
    }

    async fn domain_undefine_flags(&self, a: DomainUndefineFlagsArgs) -> Result<(), CallError> {
        self.conn.domain_undefine_flags(&a.dom, a.flags).await
    }

    async fn domain_suspend(&self, a: DomainArgs) -> Result<(), CallError> {
        self.conn.domain_suspend(&a.dom).await
    }

    async fn domain_resume(&self, a: DomainArgs) -> Result<(), CallError> {
        self.conn.domain_resume(&a.dom).await
    }

    async fn domain_get_state(
        &self,
        a: DomainGetStateArgs,
    ) -> Result<DomainGetStateRet, CallError> {
        let (state, reason) = self.conn.domain_get_state(&a.dom, a.flags).await?;
        Ok(DomainGetStateRet {
            state: state.to_raw(),
            reason,
        })
    }

    async fn domain_get_info(&self, a: DomainGetInfoArgs) -> Result<DomainGetInfoRet, CallError> {
        let i = self.conn.domain_get_info(&a.dom).await?;
        Ok(DomainGetInfoRet {
            state: i.state.to_raw() as u8,
            max_mem: i.max_mem_kib,
            memory: i.memory_kib,
            nr_virt_cpu: i.nr_virt_cpu,
            cpu_time: i.cpu_time_ns,
        })
    }

    async fn domain_get_xml_desc(
        &self,
        a: DomainGetXmlDescArgs,
    ) -> Result<DomainGetXmlDescRet, CallError> {
        let xml = self.conn.domain_get_xml_desc(&a.dom, a.flags).await?;
        Ok(DomainGetXmlDescRet { xml })
    }

    async fn domain_set_metadata(&self, a: DomainSetMetadataArgs) -> Result<(), CallError> {
        self.conn
            .domain_set_metadata(
                &a.dom,
                a.kind,
                a.metadata.as_deref(),
                a.key.as_deref(),
                a.uri.as_deref(),
                a.flags,
            )
            .await
    }

    async fn domain_get_metadata(
        &self,
        a: DomainGetMetadataArgs,
    ) -> Result<DomainGetMetadataRet, CallError> {
        let metadata = self
            .conn
            .domain_get_metadata(&a.dom, a.kind, a.uri.as_deref(), a.flags)
            .await?;
        Ok(DomainGetMetadataRet { metadata })
    }

    async fn domain_interface_addresses(
        &self,
        a: DomainInterfaceAddressesArgs,
    ) -> Result<DomainInterfaceAddressesRet, CallError> {
        let ifaces = self
            .conn
            .domain_interface_addresses(&a.dom, a.source, a.flags)
            .await?;
        Ok(DomainInterfaceAddressesRet { ifaces })
    }

    // Storage pools.

    async fn storage_pool_lookup_by_name(
        &self,
        a: StoragePoolLookupByNameArgs,
    ) -> Result<StoragePoolLookupByNameRet, CallError> {
        let pool = self.conn.storage_pool_lookup_by_name(&a.name).await?;
        Ok(StoragePoolLookupByNameRet { pool })
    }

    async fn storage_pool_define_xml(
        &self,
        a: StoragePoolDefineXmlArgs,
    ) -> Result<StoragePoolDefineXmlRet, CallError> {
        let pool = self.conn.storage_pool_define_xml(&a.xml, a.flags).await?;
        Ok(StoragePoolDefineXmlRet { pool })
    }

    async fn storage_pool_create_xml(
        &self,
        a: StoragePoolDefineXmlArgs,
    ) -> Result<StoragePoolDefineXmlRet, CallError> {
        let pool = self.conn.storage_pool_create_xml(&a.xml, a.flags).await?;
        Ok(StoragePoolDefineXmlRet { pool })
    }

    async fn storage_pool_create(&self, a: StoragePoolFlagsArgs) -> Result<(), CallError> {
        self.conn.storage_pool_create(&a.pool, a.flags).await
    }

    async fn storage_pool_build(&self, a: StoragePoolFlagsArgs) -> Result<(), CallError> {
        self.conn.storage_pool_build(&a.pool, a.flags).await
    }

    async fn storage_pool_destroy(&self, a: StoragePoolArgs) -> Result<(), CallError> {
        self.conn.storage_pool_destroy(&a.pool).await
    }

    async fn storage_pool_delete(&self, a: StoragePoolFlagsArgs) -> Result<(), CallError> {
        self.conn.storage_pool_delete(&a.pool, a.flags).await
    }

    async fn storage_pool_undefine(&self, a: StoragePoolArgs) -> Result<(), CallError> {
        self.conn.storage_pool_undefine(&a.pool).await
    }

    async fn storage_pool_get_xml_desc(
        &self,
        a: StoragePoolFlagsArgs,
    ) -> Result<StoragePoolGetXmlDescRet, CallError> {
        let xml = self
            .conn
            .storage_pool_get_xml_desc(&a.pool, a.flags)
            .await?;
        Ok(StoragePoolGetXmlDescRet { xml })
    }

    async fn storage_pool_get_info(
        &self,
        a: StoragePoolGetInfoArgs,
    ) -> Result<StoragePoolGetInfoRet, CallError> {
        let i = self.conn.storage_pool_get_info(&a.pool).await?;
        Ok(StoragePoolGetInfoRet {
            state: i.state.to_raw() as u8,
            capacity: i.capacity,
            allocation: i.allocation,
            available: i.available,
        })
    }

    async fn storage_pool_refresh(&self, a: StoragePoolRefreshArgs) -> Result<(), CallError> {
        self.conn.storage_pool_refresh(&a.pool, a.flags).await
    }

    async fn storage_pool_list_all_volumes(
        &self,
        a: StoragePoolListAllVolumesArgs,
    ) -> Result<StoragePoolListAllVolumesRet, CallError> {
        let vols = self
            .conn
            .storage_pool_list_all_volumes(&a.pool, a.flags)
            .await?;
        let ret = count(vols.len());
        let vols = results(a.need_results, vols);
        Ok(StoragePoolListAllVolumesRet { vols, ret })
    }

    // Storage volumes.

    async fn storage_vol_create_xml(
        &self,
        a: StorageVolCreateXmlArgs,
    ) -> Result<StorageVolCreateXmlRet, CallError> {
        let vol = self
            .conn
            .storage_vol_create_xml(&a.pool, &a.xml, a.flags)
            .await?;
        Ok(StorageVolCreateXmlRet { vol })
    }

    async fn storage_vol_lookup_by_name(
        &self,
        a: StorageVolLookupByNameArgs,
    ) -> Result<StorageVolLookupByNameRet, CallError> {
        let vol = self
            .conn
            .storage_vol_lookup_by_name(&a.pool, &a.name)
            .await?;
        Ok(StorageVolLookupByNameRet { vol })
    }

    async fn storage_vol_delete(&self, a: StorageVolDeleteArgs) -> Result<(), CallError> {
        self.conn.storage_vol_delete(&a.vol, a.flags).await
    }

    async fn storage_vol_get_info(
        &self,
        a: StorageVolGetInfoArgs,
    ) -> Result<StorageVolGetInfoRet, CallError> {
        let i = self.conn.storage_vol_get_info(&a.vol).await?;
        Ok(StorageVolGetInfoRet {
            kind: i8::try_from(i.kind).unwrap_or(0),
            capacity: i.capacity,
            allocation: i.allocation,
        })
    }

    async fn storage_vol_get_path(
        &self,
        a: StorageVolGetPathArgs,
    ) -> Result<StorageVolGetPathRet, CallError> {
        let name = self.conn.storage_vol_get_path(&a.vol).await?;
        Ok(StorageVolGetPathRet { name })
    }

    async fn storage_vol_upload(&self, a: StorageVolUploadArgs) -> Result<(), CallError> {
        let upload = self
            .conn
            .storage_vol_upload(&a.vol, a.offset, a.length, a.flags)
            .await?;
        crate::upload::open_stream(upload, self.header, self.tx, self.streams);
        Ok(())
    }

    // What virsh's commands ask besides.

    async fn connect_get_type(&self, (): ()) -> Result<ConnectGetTypeRet, CallError> {
        let kind = self.conn.get_type().await?;
        Ok(ConnectGetTypeRet { kind })
    }

    async fn node_get_info(&self, (): ()) -> Result<NodeGetInfoRet, CallError> {
        self.conn.node_get_info().await
    }

    async fn node_get_security_model(&self, (): ()) -> Result<NodeGetSecurityModelRet, CallError> {
        let (model, doi) = self.conn.node_get_security_model().await?;
        Ok(NodeGetSecurityModelRet {
            model: CharArray(model),
            doi: CharArray(doi),
        })
    }

    async fn connect_register_close_callback(&self, (): ()) -> Result<(), CallError> {
        self.conn.register_close_callback().await
    }

    async fn connect_unregister_close_callback(&self, (): ()) -> Result<(), CallError> {
        self.conn.unregister_close_callback().await
    }

    async fn domain_get_os_type(&self, a: DomainArgs) -> Result<DomainGetOsTypeRet, CallError> {
        let kind = self.conn.domain_get_os_type(&a.dom).await?;
        Ok(DomainGetOsTypeRet { kind })
    }

    async fn domain_is_active(&self, a: DomainArgs) -> Result<IsActiveRet, CallError> {
        let active = flag(self.conn.domain_is_active(&a.dom).await?);
        Ok(IsActiveRet { active })
    }

    async fn domain_is_persistent(&self, a: DomainArgs) -> Result<IsPersistentRet, CallError> {
        let persistent = flag(self.conn.domain_is_persistent(&a.dom).await?);
        Ok(IsPersistentRet { persistent })
    }

    async fn domain_get_autostart(&self, a: DomainArgs) -> Result<GetAutostartRet, CallError> {
        let autostart = flag(self.conn.domain_get_autostart(&a.dom, false).await?);
        Ok(GetAutostartRet { autostart })
    }

    async fn domain_get_autostart_once(&self, a: DomainArgs) -> Result<GetAutostartRet, CallError> {
        let autostart = flag(self.conn.domain_get_autostart(&a.dom, true).await?);
        Ok(GetAutostartRet { autostart })
    }

    async fn domain_has_managed_save_image(
        &self,
        a: DomainFlagsArgs,
    ) -> Result<DomainHasManagedSaveImageRet, CallError> {
        let result = flag(
            self.conn
                .domain_has_managed_save_image(&a.dom, a.flags)
                .await?,
        );
        Ok(DomainHasManagedSaveImageRet { result })
    }

    async fn domain_snapshot_num(
        &self,
        a: DomainFlagsArgs,
    ) -> Result<DomainSnapshotNumRet, CallError> {
        let num = self.conn.domain_snapshot_num(&a.dom, a.flags).await?;
        Ok(DomainSnapshotNumRet { num })
    }

    async fn domain_get_security_label(
        &self,
        a: DomainArgs,
    ) -> Result<DomainGetSecurityLabelRet, CallError> {
        let (label, enforcing) = self.conn.domain_get_security_label(&a.dom).await?;
        Ok(DomainGetSecurityLabelRet {
            label: CharArray(label),
            enforcing: flag(enforcing),
        })
    }

    async fn domain_get_messages(
        &self,
        a: DomainFlagsArgs,
    ) -> Result<DomainGetMessagesRet, CallError> {
        let msgs = self.conn.domain_get_messages(&a.dom, a.flags).await?;
        Ok(DomainGetMessagesRet { msgs })
    }

    async fn domain_shutdown(&self, a: DomainArgs) -> Result<(), CallError> {
        self.conn.domain_shutdown(&a.dom).await
    }

    async fn storage_pool_is_active(&self, a: StoragePoolArgs) -> Result<IsActiveRet, CallError> {
        let active = flag(self.conn.storage_pool_is_active(&a.pool).await?);
        Ok(IsActiveRet { active })
    }

    async fn storage_pool_is_persistent(
        &self,
        a: StoragePoolArgs,
    ) -> Result<IsPersistentRet, CallError> {
        let persistent = flag(self.conn.storage_pool_is_persistent(&a.pool).await?);
        Ok(IsPersistentRet { persistent })
    }

    async fn storage_pool_get_autostart(
        &self,
        a: StoragePoolArgs,
    ) -> Result<GetAutostartRet, CallError> {
        let autostart = flag(self.conn.storage_pool_get_autostart(&a.pool).await?);
        Ok(GetAutostartRet { autostart })
    }

    async fn storage_pool_lookup_by_volume(
        &self,
        a: StoragePoolLookupByVolumeArgs,
    ) -> Result<StoragePoolLookupByNameRet, CallError> {
        let pool = self.conn.storage_pool_lookup_by_volume(&a.vol).await?;
        Ok(StoragePoolLookupByNameRet { pool })
    }

    async fn storage_vol_lookup_by_path(
        &self,
        a: StorageVolLookupByPathArgs,
    ) -> Result<StorageVolLookupByNameRet, CallError> {
        let vol = self.conn.storage_vol_lookup_by_path(&a.path).await?;
        Ok(StorageVolLookupByNameRet { vol })
    }

    async fn storage_vol_lookup_by_key(
        &self,
        a: StorageVolLookupByKeyArgs,
    ) -> Result<StorageVolLookupByNameRet, CallError> {
        let vol = self.conn.storage_vol_lookup_by_key(&a.key).await?;
        Ok(StorageVolLookupByNameRet { vol })
    }

    async fn storage_vol_download(&self, a: StorageVolDownloadArgs) -> Result<(), CallError> {
        let data = self
            .conn
            .storage_vol_download_data(&a.vol, a.offset, a.length, a.flags)
            .await?;
        let send = crate::download::open_stream(data, self.header, self.tx, self.streams);
        *self.after_reply.lock().expect("after-reply slot poisoned") = Some(send);
        Ok(())
    }
}
