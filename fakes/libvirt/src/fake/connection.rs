//! One client connection to the fake, with one async method per remote
//! procedure. Each call is recorded in the trace, meets the fault registry
//! (error, delay, hang, dropped connection), then passes libvirtd's gating
//! (authentication, `ConnectOpen` first) before it reaches the model.
//!
//! The wire server reaches the same methods through the fake's handler
//! (`handler.rs`), so in-process users and clients speaking the remote
//! protocol see one behaviour.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;
use uuid::Uuid;

use crate::content::UploadSession;
use crate::error::{CallError, VirError};
use crate::fake::FakeLibvirt;
use crate::fault::{Fault, FaultHandle};
use crate::state::State;
use crate::types::{DomainInfo, PoolInfo, VolInfo};
use libvirt_wire::{
    AuthType, CONNECT_GET_DOMAIN_CAPABILITIES_DISABLE_DEPRECATED_FEATURES, CONNECT_OPEN_ALL,
    Domain, DomainInterface, DomainState, ErrorCode, ErrorDomain, FEATURE_PROGRAM_KEEPALIVE,
    FEATURE_REMOTE_CLOSE_CALLBACK, FEATURE_REMOTE_EVENT_CALLBACK, FEATURE_TYPED_PARAM_STRING,
    INTERFACE_XML_INACTIVE, Procedure, STORAGE_VOL_UPLOAD_SPARSE_STREAM, StoragePool, StorageVol,
};

/// The polkit authentication type, as the host's settings list it.
const POLKIT: i32 = AuthType::Polkit.to_raw();

#[derive(Debug, Default)]
struct ConnState {
    /// The hypervisor driver connection is open.
    opened: bool,
    /// The storage driver connection is open. `ConnectOpen` opens both; a
    /// second `ConnectOpen` fails and drops only the hypervisor one.
    storage: bool,
    authenticated: bool,
    uri: Option<String>,
    keepalive: bool,
    /// The client registered a close callback (libvirtd only notes it).
    close_callback: bool,
}

/// A connection to a [`FakeLibvirt`]. Cloning gives another handle to the
/// same connection, so calls can run concurrently.
#[derive(Clone)]
pub struct FakeConnection {
    fake: FakeLibvirt,
    id: u64,
    black_hole: bool,
    /// The daemon generation the connection was dialled under.
    generation: u64,
    conn: Arc<Mutex<ConnState>>,
    closed: watch::Sender<bool>,
    dropped: Arc<AtomicBool>,
}

impl std::fmt::Debug for FakeConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeConnection")
            .field("id", &self.id)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl FakeConnection {
    pub(crate) fn new(fake: FakeLibvirt, id: u64, black_hole: bool) -> Self {
        let (closed, _) = watch::channel(false);
        let generation = fake.generation();
        FakeConnection {
            fake,
            id,
            black_hole,
            generation,
            conn: Arc::new(Mutex::new(ConnState::default())),
            closed,
            dropped: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The connection id, as the trace names it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The host this connection talks to.
    pub fn fake(&self) -> &FakeLibvirt {
        &self.fake
    }

    /// Whether the connection was dialled while the fake black-holed dials:
    /// none of its calls ever answers.
    pub fn is_black_hole(&self) -> bool {
        self.black_hole
    }

    /// Whether the daemon will never answer this connection again: it is
    /// wedged ([`FakeLibvirt::is_wedged`]), or it was restarted after the
    /// connection was dialled ([`FakeLibvirt::restart_daemon`]).
    pub fn daemon_lost(&self) -> bool {
        self.fake.is_wedged() || self.generation != self.fake.generation()
    }

    /// Whether an injected fault dropped the connection (as opposed to an
    /// orderly close).
    pub fn was_dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Closes the connection; calls in flight and later calls fail with
    /// [`CallError::Closed`].
    pub fn close(&self) {
        if !self.closed.send_replace(true) {
            self.fake.trace().closed(self.id);
        }
    }

    /// Resolves once the connection is closed (by [`Self::close`], by
    /// `ConnectClose` or by an injected dropped connection).
    pub fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.closed.subscribe();
        async move {
            let _ = rx.wait_for(|c| *c).await;
        }
    }

    /// Whether the client asked for keepalive (`ConnectSupportsFeature(10)`).
    pub fn keepalive_requested(&self) -> bool {
        self.lock_conn().keepalive
    }

    fn lock_conn(&self) -> std::sync::MutexGuard<'_, ConnState> {
        self.conn.lock().expect("connection state poisoned")
    }

    /// Runs one call: trace, faults, gating, then `op` on the model.
    pub(crate) async fn call<T>(
        &self,
        procedure: Procedure,
        op: impl FnOnce(&mut State, Instant) -> Result<T, VirError>,
    ) -> Result<T, CallError> {
        self.call_inner(procedure, &[], |_, st, now| op(st, now))
            .await
    }

    /// A call about named objects, which object-bound fault rules match.
    pub(crate) async fn call_on<T>(
        &self,
        procedure: Procedure,
        objects: &[&str],
        op: impl FnOnce(&mut State, Instant) -> Result<T, VirError>,
    ) -> Result<T, CallError> {
        self.call_inner(procedure, objects, |_, st, now| op(st, now))
            .await
    }

    async fn call_conn<T>(
        &self,
        procedure: Procedure,
        op: impl FnOnce(&mut ConnState, &mut State, Instant) -> Result<T, VirError>,
    ) -> Result<T, CallError> {
        self.call_inner(procedure, &[], op).await
    }

    async fn call_inner<T>(
        &self,
        procedure: Procedure,
        objects: &[&str],
        op: impl FnOnce(&mut ConnState, &mut State, Instant) -> Result<T, VirError>,
    ) -> Result<T, CallError> {
        if self.is_closed() {
            return Err(CallError::Closed);
        }
        let fault = self.fake.faults().decide(self.id, procedure, objects);
        self.fake
            .trace()
            .record(self.id, procedure, fault.as_ref().map(Fault::kind));
        if self.black_hole {
            std::future::pending::<()>().await;
        }
        if self.daemon_lost() {
            self.closed().await;
            return Err(CallError::Closed);
        }
        let latency = self.fake.state().host.latency / 2;
        self.travel(latency).await?;
        let answer = match fault {
            None => self.run(procedure, op),
            Some(Fault::Delay(d)) => {
                self.travel(d).await?;
                self.run(procedure, op)
            }
            Some(Fault::Hang) => {
                self.closed().await;
                return Err(CallError::Closed);
            }
            Some(Fault::DropConnection) => {
                self.dropped.store(true, Ordering::SeqCst);
                self.close();
                return Err(CallError::Closed);
            }
            Some(Fault::LoseReply) => {
                let _ = self.run(procedure, op);
                self.dropped.store(true, Ordering::SeqCst);
                self.close();
                return Err(CallError::Closed);
            }
            Some(Fault::Error(e)) => Err(CallError::Libvirt(e)),
            Some(Fault::NotFound) => Err(CallError::Libvirt(VirError::not_found_for(
                procedure.api_name(),
            ))),
        };
        self.travel(latency).await?;
        answer
    }

    /// Waits out one direction of the network round trip.
    async fn travel(&self, d: Duration) -> Result<(), CallError> {
        if !d.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(d) => {}
                _ = self.closed() => return Err(CallError::Closed),
            }
        }
        if self.is_closed() {
            return Err(CallError::Closed);
        }
        Ok(())
    }

    /// Gating, then the operation on the model.
    fn run<T>(
        &self,
        procedure: Procedure,
        op: impl FnOnce(&mut ConnState, &mut State, Instant) -> Result<T, VirError>,
    ) -> Result<T, CallError> {
        let mut conn = self.lock_conn();
        let polkit = self.fake.state().host.auth_types.first() == Some(&POLKIT);
        if polkit
            && !conn.authenticated
            && !matches!(procedure, Procedure::AuthList | Procedure::AuthPolkit)
        {
            return Err(VirError::auth_required().into());
        }
        let open = if procedure.uses_storage_driver() {
            conn.storage
        } else {
            conn.opened
        };
        if procedure.needs_open() && !open {
            return Err(VirError::not_open().into());
        }
        let mut state = self.fake.state();
        Ok(op(&mut conn, &mut state, Instant::now())?)
    }

    // ----- connection ----------------------------------------------------

    /// `AuthList`: the authentication types of the socket.
    pub async fn auth_list(&self) -> Result<Vec<i32>, CallError> {
        self.call_conn(Procedure::AuthList, |_, st, _| {
            Ok(st.host.auth_types.clone())
        })
        .await
    }

    /// `AuthPolkit`: authenticates the connection and returns `complete`
    /// on a socket whose authentication is polkit; elsewhere libvirtd
    /// refuses it without setting an error.
    pub async fn auth_polkit(&self) -> Result<i32, CallError> {
        self.call_conn(Procedure::AuthPolkit, |c, st, _| {
            if !st.host.auth_types.contains(&POLKIT) {
                return Err(VirError::error_not_set());
            }
            c.authenticated = true;
            Ok(1)
        })
        .await
    }

    /// `ConnectSupportsFeature`: `PROGRAM_KEEPALIVE` (10) is answered before
    /// `ConnectOpen` and switches keepalive on; other features need an open
    /// connection.
    pub async fn supports_feature(&self, feature: i32) -> Result<i32, CallError> {
        self.call_conn(Procedure::ConnectSupportsFeature, |c, _, _| {
            if feature == FEATURE_PROGRAM_KEEPALIVE {
                c.keepalive = true;
                return Ok(1);
            }
            if !c.opened {
                return Err(VirError::not_open());
            }
            Ok(i32::from(matches!(
                feature,
                FEATURE_TYPED_PARAM_STRING
                    | FEATURE_REMOTE_EVENT_CALLBACK
                    | FEATURE_REMOTE_CLOSE_CALLBACK
            )))
        })
        .await
    }

    /// `ConnectOpen`.
    pub async fn open(&self, uri: Option<&str>, flags_: u32) -> Result<(), CallError> {
        let uri = uri.map(str::to_owned);
        self.call_conn(Procedure::ConnectOpen, move |c, _, _| {
            if c.opened {
                // libvirtd releases the hypervisor connection of a failed
                // open, even when it failed for being open already; the
                // storage connection stays, and a later open succeeds.
                c.opened = false;
                return Err(VirError::already_open());
            }
            if flags_ & !CONNECT_OPEN_ALL != 0 {
                return Err(VirError::unsupported_flags(flags_, "virConnectOpenAuth"));
            }
            c.opened = true;
            c.storage = true;
            c.uri = uri;
            Ok(())
        })
        .await
    }

    /// `ConnectClose`: answers, then the connection closes.
    pub async fn connect_close(&self) -> Result<(), CallError> {
        let r = self.call(Procedure::ConnectClose, |_, _| Ok(())).await;
        self.close();
        r
    }

    /// `ConnectRegisterCloseCallback`: libvirtd notes the registration
    /// (the QEMU driver has no hook of its own) and answers.
    pub async fn register_close_callback(&self) -> Result<(), CallError> {
        self.call_conn(Procedure::ConnectRegisterCloseCallback, |c, _, _| {
            c.close_callback = true;
            Ok(())
        })
        .await
    }

    /// `ConnectUnregisterCloseCallback`.
    pub async fn unregister_close_callback(&self) -> Result<(), CallError> {
        self.call_conn(Procedure::ConnectUnregisterCloseCallback, |c, _, _| {
            c.close_callback = false;
            Ok(())
        })
        .await
    }

    /// `ConnectGetVersion` (the hypervisor version).
    pub async fn get_version(&self) -> Result<u64, CallError> {
        self.call(Procedure::ConnectGetVersion, |st, _| {
            Ok(st.host.hypervisor_version)
        })
        .await
    }

    /// `ConnectGetLibVersion`.
    pub async fn get_lib_version(&self) -> Result<u64, CallError> {
        self.call(Procedure::ConnectGetLibVersion, |st, _| {
            Ok(st.host.lib_version)
        })
        .await
    }

    /// `ConnectGetHostname`.
    pub async fn get_hostname(&self) -> Result<String, CallError> {
        self.call(Procedure::ConnectGetHostname, |st, _| {
            Ok(st.host.hostname.clone())
        })
        .await
    }

    /// `ConnectGetURI`: the URI opened, or the default one.
    pub async fn get_uri(&self) -> Result<String, CallError> {
        self.call_conn(Procedure::ConnectGetUri, |c, st, _| {
            Ok(c.uri.clone().unwrap_or_else(|| st.host.default_uri.clone()))
        })
        .await
    }

    /// `ConnectGetCapabilities`.
    pub async fn get_capabilities(&self) -> Result<String, CallError> {
        self.call(Procedure::ConnectGetCapabilities, |st, _| {
            Ok(st.host.capabilities.clone())
        })
        .await
    }

    /// `ConnectGetDomainCapabilities` for a domain type and architecture
    /// (absent: `kvm` and `x86_64`, as libvirt picks on such a host).
    pub async fn get_domain_capabilities(
        &self,
        virttype: Option<&str>,
        arch: Option<&str>,
        flags_: u32,
    ) -> Result<String, CallError> {
        self.call(Procedure::ConnectGetDomainCapabilities, |st, _| {
            crate::state::check_flags(
                flags_,
                CONNECT_GET_DOMAIN_CAPABILITIES_DISABLE_DEPRECATED_FEATURES,
                "qemuConnectGetDomainCapabilities",
            )?;
            Ok(crate::state::domain_capabilities(
                &st.host,
                virttype.unwrap_or("kvm"),
                arch.unwrap_or("x86_64"),
            ))
        })
        .await
    }

    // ----- host interfaces -----------------------------------------------

    /// `InterfaceLookupByName`: the interface's name and MAC address.
    pub async fn interface_lookup_by_name(
        &self,
        name: &str,
    ) -> Result<(String, String), CallError> {
        self.call(Procedure::InterfaceLookupByName, |st, _| {
            let i = st.host_interface(name, "virInterfaceLookupByName")?;
            Ok((i.name.clone(), i.mac.clone()))
        })
        .await
    }

    /// `InterfaceGetXMLDesc` for the interface of that name.
    pub async fn interface_get_xml_desc(
        &self,
        name: &str,
        flags_: u32,
    ) -> Result<String, CallError> {
        self.call(Procedure::InterfaceGetXmlDesc, |st, _| {
            let i = st.host_interface(name, "virInterfaceGetXMLDesc")?;
            crate::state::check_flags(flags_, INTERFACE_XML_INACTIVE, "udevInterfaceGetXMLDesc")?;
            Ok(i.xml())
        })
        .await
    }

    /// `InterfaceIsActive` for the interface of that name.
    pub async fn interface_is_active(&self, name: &str) -> Result<bool, CallError> {
        self.call(Procedure::InterfaceIsActive, |st, _| {
            Ok(st.host_interface(name, "virInterfaceIsActive")?.is_active())
        })
        .await
    }

    /// `ConnectListAllDomains`, sorted by name.
    pub async fn list_all_domains(&self, flags_: u32) -> Result<Vec<Domain>, CallError> {
        self.call(Procedure::ConnectListAllDomains, |st, _| {
            st.list_all_domains(flags_)
        })
        .await
    }

    // ----- domains -------------------------------------------------------

    /// `DomainLookupByName`.
    pub async fn domain_lookup_by_name(&self, name: &str) -> Result<Domain, CallError> {
        self.call_on(Procedure::DomainLookupByName, &[name], |st, _| {
            st.lookup_by_name(name)
        })
        .await
    }

    /// `DomainLookupByUUID`.
    pub async fn domain_lookup_by_uuid(&self, uuid: &Uuid) -> Result<Domain, CallError> {
        self.call(Procedure::DomainLookupByUuid, |st, _| {
            st.lookup_by_uuid(uuid)
        })
        .await
    }

    /// `DomainDefineXML`: defines a domain, or updates the definition of the
    /// domain with that name (keeping its UUID).
    pub async fn domain_define_xml(&self, xml: &str) -> Result<Domain, CallError> {
        self.call(Procedure::DomainDefineXml, |st, _| st.define(xml, 0))
            .await
    }

    /// `DomainDefineXMLFlags`.
    pub async fn domain_define_xml_flags(
        &self,
        xml: &str,
        flags_: u32,
    ) -> Result<Domain, CallError> {
        self.call(Procedure::DomainDefineXmlFlags, |st, _| {
            st.define(xml, flags_)
        })
        .await
    }

    /// `DomainCreate`.
    pub async fn domain_create(&self, dom: &Domain) -> Result<(), CallError> {
        self.call_on(Procedure::DomainCreate, &[&dom.name], |st, now| {
            st.create(dom, 0, now).map(drop)
        })
        .await
    }

    /// `DomainCreateWithFlags`: returns the handle with its new id.
    pub async fn domain_create_with_flags(
        &self,
        dom: &Domain,
        flags_: u32,
    ) -> Result<Domain, CallError> {
        self.call_on(Procedure::DomainCreateWithFlags, &[&dom.name], |st, now| {
            st.create(dom, flags_, now)
        })
        .await
    }

    /// `DomainDestroy`.
    pub async fn domain_destroy(&self, dom: &Domain) -> Result<(), CallError> {
        self.call_on(Procedure::DomainDestroy, &[&dom.name], |st, _| {
            st.destroy(dom, 0)
        })
        .await
    }

    /// `DomainDestroyFlags`.
    pub async fn domain_destroy_flags(&self, dom: &Domain, flags_: u32) -> Result<(), CallError> {
        self.call_on(Procedure::DomainDestroyFlags, &[&dom.name], |st, _| {
            st.destroy(dom, flags_)
        })
        .await
    }

    /// `DomainShutdownFlags`: the guest shuts down at once (reason
    /// shutdown).
    pub async fn domain_shutdown_flags(&self, dom: &Domain, flags_: u32) -> Result<(), CallError> {
        self.call_on(Procedure::DomainShutdownFlags, &[&dom.name], |st, _| {
            st.shutdown(dom, flags_)
        })
        .await
    }

    /// `DomainUndefineFlags`.
    pub async fn domain_undefine_flags(&self, dom: &Domain, flags_: u32) -> Result<(), CallError> {
        self.call_on(Procedure::DomainUndefineFlags, &[&dom.name], |st, _| {
            st.undefine(dom, flags_)
        })
        .await
    }

    /// `DomainSuspend`: pauses a running domain.
    pub async fn domain_suspend(&self, dom: &Domain) -> Result<(), CallError> {
        self.call_on(Procedure::DomainSuspend, &[&dom.name], |st, _| {
            st.suspend(dom)
        })
        .await
    }

    /// `DomainResume`: resumes a paused domain.
    pub async fn domain_resume(&self, dom: &Domain) -> Result<(), CallError> {
        self.call_on(Procedure::DomainResume, &[&dom.name], |st, _| {
            st.resume(dom)
        })
        .await
    }

    /// `DomainGetState`: state and reason.
    pub async fn domain_get_state(
        &self,
        dom: &Domain,
        flags_: u32,
    ) -> Result<(DomainState, i32), CallError> {
        self.call_on(Procedure::DomainGetState, &[&dom.name], |st, _| {
            st.get_state(dom, flags_)
        })
        .await
    }

    /// `DomainGetInfo`.
    pub async fn domain_get_info(&self, dom: &Domain) -> Result<DomainInfo, CallError> {
        self.call_on(Procedure::DomainGetInfo, &[&dom.name], |st, now| {
            st.get_info(dom, now)
        })
        .await
    }

    /// `DomainGetXMLDesc`: the live definition of a running domain unless
    /// `VIR_DOMAIN_XML_INACTIVE` is given.
    pub async fn domain_get_xml_desc(
        &self,
        dom: &Domain,
        flags_: u32,
    ) -> Result<String, CallError> {
        self.call_on(Procedure::DomainGetXmlDesc, &[&dom.name], |st, _| {
            st.get_xml_desc(dom, flags_)
        })
        .await
    }

    /// `DomainSetMetadata`.
    pub async fn domain_set_metadata(
        &self,
        dom: &Domain,
        kind: i32,
        metadata: Option<&str>,
        key: Option<&str>,
        uri: Option<&str>,
        flags_: u32,
    ) -> Result<(), CallError> {
        self.call_on(Procedure::DomainSetMetadata, &[&dom.name], |st, _| {
            st.set_metadata(dom, kind, metadata, key, uri, flags_)
        })
        .await
    }

    /// `DomainGetMetadata`.
    pub async fn domain_get_metadata(
        &self,
        dom: &Domain,
        kind: i32,
        uri: Option<&str>,
        flags_: u32,
    ) -> Result<String, CallError> {
        self.call_on(Procedure::DomainGetMetadata, &[&dom.name], |st, _| {
            st.get_metadata(dom, kind, uri, flags_)
        })
        .await
    }

    /// `DomainInterfaceAddresses`.
    pub async fn domain_interface_addresses(
        &self,
        dom: &Domain,
        source: u32,
        flags_: u32,
    ) -> Result<Vec<DomainInterface>, CallError> {
        self.call_on(
            Procedure::DomainInterfaceAddresses,
            &[&dom.name],
            |st, now| st.interface_addresses(dom, source, flags_, now),
        )
        .await
    }

    // ----- storage -------------------------------------------------------

    /// `ConnectListAllStoragePools`.
    pub async fn list_all_storage_pools(&self, flags_: u32) -> Result<Vec<StoragePool>, CallError> {
        self.call(Procedure::ConnectListAllStoragePools, |st, _| {
            st.list_all_pools(flags_)
        })
        .await
    }

    /// `StoragePoolLookupByName`.
    pub async fn storage_pool_lookup_by_name(&self, name: &str) -> Result<StoragePool, CallError> {
        self.call_on(Procedure::StoragePoolLookupByName, &[name], |st, _| {
            st.pool_lookup_by_name(name)
        })
        .await
    }

    /// `StoragePoolDefineXML`: a persistent pool, inactive until started.
    pub async fn storage_pool_define_xml(
        &self,
        xml: &str,
        flags_: u32,
    ) -> Result<StoragePool, CallError> {
        self.call(Procedure::StoragePoolDefineXml, |st, _| {
            st.pool_define(xml, flags_)
        })
        .await
    }

    /// `StoragePoolCreateXML`: a transient pool, started at once.
    pub async fn storage_pool_create_xml(
        &self,
        xml: &str,
        flags_: u32,
    ) -> Result<StoragePool, CallError> {
        self.call(Procedure::StoragePoolCreateXml, |st, _| {
            st.pool_create_xml(xml, flags_)
        })
        .await
    }

    /// `StoragePoolCreate`: starts a defined pool.
    pub async fn storage_pool_create(
        &self,
        pool: &StoragePool,
        flags_: u32,
    ) -> Result<(), CallError> {
        self.call_on(Procedure::StoragePoolCreate, &[&pool.name], |st, _| {
            st.pool_start(pool, flags_)
        })
        .await
    }

    /// `StoragePoolBuild`: makes a stopped pool's directory.
    pub async fn storage_pool_build(
        &self,
        pool: &StoragePool,
        flags_: u32,
    ) -> Result<(), CallError> {
        self.call_on(Procedure::StoragePoolBuild, &[&pool.name], |st, _| {
            st.pool_build(pool, flags_)
        })
        .await
    }

    /// `StoragePoolDestroy`: stops a pool (a transient one goes away).
    pub async fn storage_pool_destroy(&self, pool: &StoragePool) -> Result<(), CallError> {
        self.call_on(Procedure::StoragePoolDestroy, &[&pool.name], |st, _| {
            st.pool_destroy(pool)
        })
        .await
    }

    /// `StoragePoolDelete`: removes a stopped pool's (empty) directory.
    pub async fn storage_pool_delete(
        &self,
        pool: &StoragePool,
        flags_: u32,
    ) -> Result<(), CallError> {
        self.call_on(Procedure::StoragePoolDelete, &[&pool.name], |st, _| {
            st.pool_delete(pool, flags_)
        })
        .await
    }

    /// `StoragePoolUndefine`: forgets a stopped pool; its files stay.
    pub async fn storage_pool_undefine(&self, pool: &StoragePool) -> Result<(), CallError> {
        self.call_on(Procedure::StoragePoolUndefine, &[&pool.name], |st, _| {
            st.pool_undefine(pool)
        })
        .await
    }

    /// `StoragePoolGetXMLDesc`.
    pub async fn storage_pool_get_xml_desc(
        &self,
        pool: &StoragePool,
        flags_: u32,
    ) -> Result<String, CallError> {
        self.call_on(Procedure::StoragePoolGetXmlDesc, &[&pool.name], |st, _| {
            st.pool_get_xml_desc(pool, flags_)
        })
        .await
    }

    /// `StoragePoolGetInfo`.
    pub async fn storage_pool_get_info(&self, pool: &StoragePool) -> Result<PoolInfo, CallError> {
        self.call_on(Procedure::StoragePoolGetInfo, &[&pool.name], |st, _| {
            st.pool_get_info(pool)
        })
        .await
    }

    /// `StoragePoolRefresh`.
    pub async fn storage_pool_refresh(
        &self,
        pool: &StoragePool,
        flags_: u32,
    ) -> Result<(), CallError> {
        self.call_on(Procedure::StoragePoolRefresh, &[&pool.name], |st, _| {
            st.pool_refresh(pool, flags_)
        })
        .await
    }

    /// `StoragePoolListAllVolumes`, sorted by name.
    pub async fn storage_pool_list_all_volumes(
        &self,
        pool: &StoragePool,
        flags_: u32,
    ) -> Result<Vec<StorageVol>, CallError> {
        self.call_on(
            Procedure::StoragePoolListAllVolumes,
            &[&pool.name],
            |st, _| st.pool_list_volumes(pool, flags_),
        )
        .await
    }

    /// `StorageVolCreateXML`. Object-bound fault rules see the pool and the name
    /// of the volume the XML describes.
    pub async fn storage_vol_create_xml(
        &self,
        pool: &StoragePool,
        xml: &str,
        flags_: u32,
    ) -> Result<StorageVol, CallError> {
        let name = crate::xml::parse_volume(xml).map(|v| v.name).ok();
        let mut objects = vec![pool.name.as_str()];
        objects.extend(name.as_deref());
        self.call_on(Procedure::StorageVolCreateXml, &objects, |st, _| {
            st.vol_create(pool, xml, flags_)
        })
        .await
    }

    /// `StorageVolLookupByName`.
    pub async fn storage_vol_lookup_by_name(
        &self,
        pool: &StoragePool,
        name: &str,
    ) -> Result<StorageVol, CallError> {
        self.call_on(
            Procedure::StorageVolLookupByName,
            &[&pool.name, name],
            |st, _| st.vol_lookup_by_name(pool, name),
        )
        .await
    }

    /// `StorageVolGetInfo`.
    pub async fn storage_vol_get_info(&self, vol: &StorageVol) -> Result<VolInfo, CallError> {
        self.call_on(
            Procedure::StorageVolGetInfo,
            &[&vol.pool, &vol.name],
            |st, _| st.vol_get_info(vol),
        )
        .await
    }

    /// `StorageVolGetPath`.
    pub async fn storage_vol_get_path(&self, vol: &StorageVol) -> Result<String, CallError> {
        self.call_on(
            Procedure::StorageVolGetPath,
            &[&vol.pool, &vol.name],
            |st, _| st.vol_get_path(vol),
        )
        .await
    }

    /// `StorageVolDelete`.
    pub async fn storage_vol_delete(&self, vol: &StorageVol, flags_: u32) -> Result<(), CallError> {
        self.call_on(
            Procedure::StorageVolDelete,
            &[&vol.pool, &vol.name],
            |st, _| st.vol_delete(vol, flags_),
        )
        .await
    }

    /// `StorageVolUpload`: opens an upload stream into the volume.
    /// `length` 0 means no limit.
    pub async fn storage_vol_upload(
        &self,
        vol: &StorageVol,
        offset: u64,
        length: u64,
        flags_: u32,
    ) -> Result<Upload, CallError> {
        let session = self
            .call_on(
                Procedure::StorageVolUpload,
                &[&vol.pool, &vol.name],
                |st, _| {
                    if flags_ & !STORAGE_VOL_UPLOAD_SPARSE_STREAM != 0 {
                        return Err(VirError::unsupported_flags(flags_, "storageVolUpload"));
                    }
                    let v = st.vol(vol)?;
                    let keep = st.host.upload_keep_limit;
                    let spill = st.host.upload_spill_dir.clone();
                    Ok(UploadSession::new(
                        offset,
                        length,
                        keep,
                        v.content.clone(),
                        spill,
                    ))
                },
            )
            .await?;
        Ok(Upload {
            conn: self.clone(),
            vol: vol.clone(),
            session,
            fault: self.fake.faults().take_stream_fault(),
            done: false,
        })
    }
}

/// An open upload stream into a volume. Bytes written stay in the volume even
/// when the stream is aborted or dropped, as with libvirt.
#[derive(Debug)]
pub struct Upload {
    conn: FakeConnection,
    vol: StorageVol,
    session: UploadSession,
    fault: Option<(u64, VirError, FaultHandle)>,
    done: bool,
}

impl Upload {
    /// Sends one chunk of data.
    pub fn send(&mut self, data: &[u8]) -> Result<(), CallError> {
        self.send_bytes(Bytes::copy_from_slice(data))
    }

    /// [`Upload::send`] of a chunk the caller hands over (a STREAM
    /// packet's payload), which a large upload hashes without a copy.
    pub(crate) fn send_bytes(&mut self, data: Bytes) -> Result<(), CallError> {
        if self.done {
            return Err(
                VirError::new(ErrorCode::Rpc, ErrorDomain::Streams, "stream is not open").into(),
            );
        }
        if self.conn.is_closed() {
            self.commit();
            return Err(CallError::Closed);
        }
        if let Some((after, err, handle)) = &self.fault
            && self.session.end() + data.len() as u64 > *after
        {
            let keep = usize::try_from(after.saturating_sub(self.session.end())).unwrap_or(0);
            let _ = self.session.write(data.slice(..keep.min(data.len())));
            handle.hit();
            let err = err.clone();
            self.commit();
            return Err(err.into());
        }
        if self.conn.daemon_lost() {
            // Nobody reads the stream any more.
            return Err(CallError::Closed);
        }
        if self.session.write(data).is_err() {
            // Past the declared length: libvirtd 11.x writes none of this
            // packet and is lost (see `FakeLibvirt::is_wedged`). In process
            // the loss shows as a closed connection; over the wire nothing
            // is answered at all.
            self.conn.fake.wedge();
            self.commit();
            return Err(CallError::Closed);
        }
        let (start, end) = (self.session.start(), self.session.end());
        let mut st = self.conn.fake.state();
        match st.vol_mut(&self.vol) {
            Ok(v) => {
                v.record_write(start, end);
                Ok(())
            }
            Err(e) => {
                drop(st);
                self.done = true;
                Err(e.into())
            }
        }
    }

    /// Bytes sent so far.
    pub fn bytes_sent(&self) -> u64 {
        self.session.end()
    }

    /// Finishes the stream; the volume keeps what was sent.
    pub fn finish(mut self) -> Result<(), CallError> {
        if self.conn.daemon_lost() {
            return Err(CallError::Closed);
        }
        if self.done {
            return Err(
                VirError::new(ErrorCode::Rpc, ErrorDomain::Streams, "stream is not open").into(),
            );
        }
        if self.conn.is_closed() {
            self.commit();
            return Err(CallError::Closed);
        }
        self.commit_checked().map_err(CallError::from)
    }

    /// Aborts the stream; what was sent stays in the volume.
    pub fn abort(mut self) -> Result<(), CallError> {
        self.commit();
        Ok(())
    }

    fn commit(&mut self) {
        let _ = self.commit_checked();
    }

    fn commit_checked(&mut self) -> Result<(), VirError> {
        self.done = true;
        let content = self.session.content()?;
        let (start, end) = (self.session.start(), self.session.end());
        let mut st = self.conn.fake.state();
        let v = st.vol_mut(&self.vol)?;
        v.record_write(start, end);
        v.content = content;
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if !self.done {
            self.commit();
        }
    }
}
