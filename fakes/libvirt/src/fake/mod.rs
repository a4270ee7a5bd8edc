//! The fake host handle: a cheap clone over the shared model, its fault
//! registry and its trace, with the out-of-band hooks tests use to plant
//! objects, steer domain state and look inside.
//!
//! Calls as a libvirt client would make them go through a
//! [`crate::FakeConnection`] obtained from [`FakeLibvirt::connect`]; hooks here
//! bypass faults and the trace.

pub(crate) mod connection;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{CallError, VirError};
use crate::fake::connection::FakeConnection;
use crate::fault::Faults;
use crate::state::domains::DomainSnapshot;
use crate::state::storage::VolumeSnapshot;
use crate::state::{HostConfig, State};
use crate::trace::Trace;
use crate::types::{AddressSource, PoolInfo};
use libvirt_wire::{
    DOMAIN_PAUSED_USER, DOMAIN_RUNNING_UNPAUSED, DOMAIN_SHUTOFF_SHUTDOWN, Domain, DomainInterface,
    DomainIpAddr, DomainState, StoragePool,
};

/// How the fake answers a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DialMode {
    /// Connections are accepted and served.
    #[default]
    Accept,
    /// Connections are refused (an unreachable host).
    Refuse,
    /// Connections are accepted and never answered (a black-holed host).
    BlackHole,
}

pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) faults: Faults,
    pub(crate) trace: Trace,
    dial: Mutex<DialMode>,
    /// The daemon stopped answering (see [`FakeLibvirt::is_wedged`]).
    wedged: AtomicBool,
    /// Bumped by [`FakeLibvirt::restart_daemon`]; a connection dialled under an
    /// older generation is never answered again.
    generation: AtomicU64,
    /// The open connections, kept once [`FakeLibvirt::track_connections`] was
    /// called so they can be closed from outside.
    tracked: Mutex<Option<Vec<FakeConnection>>>,
}

/// An in-memory libvirt host. Cloning is cheap; every clone sees the same
/// host, and it is safe to use from many threads and tasks at once.
#[derive(Clone)]
pub struct FakeLibvirt {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for FakeLibvirt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeLibvirt")
            .field("hostname", &self.state().host.hostname)
            .finish_non_exhaustive()
    }
}

impl Default for FakeLibvirt {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeLibvirt {
    /// An empty host (no domains, no pools) with the default settings:
    /// libvirt 9.0.0, `qemu:///system`, no authentication.
    pub fn new() -> Self {
        Self::with_config(HostConfig::default())
    }

    /// An empty host with these settings.
    pub fn with_config(host: HostConfig) -> Self {
        FakeLibvirt {
            shared: Arc::new(Shared {
                state: Mutex::new(State::new(host)),
                faults: Faults::default(),
                trace: Trace::default(),
                dial: Mutex::new(DialMode::Accept),
                wedged: AtomicBool::new(false),
                generation: AtomicU64::new(0),
                tracked: Mutex::new(None),
            }),
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().expect("fake state poisoned")
    }

    /// Dials a new connection. A refused dial fails with
    /// [`CallError::Closed`]; every dial is counted in the trace.
    pub fn connect(&self) -> Result<FakeConnection, CallError> {
        let mode = self.dial_mode();
        let id = self.shared.trace.dial();
        if mode == DialMode::Refuse {
            self.shared.trace.closed(id);
            return Err(CallError::Closed);
        }
        let conn = FakeConnection::new(self.clone(), id, mode == DialMode::BlackHole);
        if let Some(open) = self.tracked().as_mut() {
            open.retain(|c| !c.is_closed());
            open.push(conn.clone());
        }
        Ok(conn)
    }

    fn tracked(&self) -> MutexGuard<'_, Option<Vec<FakeConnection>>> {
        self.shared
            .tracked
            .lock()
            .expect("connection list poisoned")
    }

    /// Keeps a handle on every connection dialled from now on, so that
    /// [`FakeLibvirt::close_connections`] can close them. A daemon does this;
    /// a test that drops its fake with connections still open should not,
    /// since each kept connection holds the fake.
    pub fn track_connections(&self) {
        self.tracked().get_or_insert_with(Vec::new);
    }

    /// Closes the open tracked connections whose id `which` accepts, as a
    /// dropped network would: their calls in flight (a hung one included) fail
    /// and their clients see the connection end. Returns the ids closed.
    pub fn close_connections(&self, which: impl Fn(u64) -> bool) -> Vec<u64> {
        let picked: Vec<FakeConnection> = match self.tracked().as_mut() {
            Some(open) => {
                open.retain(|c| !c.is_closed());
                open.iter().filter(|c| which(c.id())).cloned().collect()
            }
            None => Vec::new(),
        };
        picked
            .iter()
            .map(|c| {
                c.close();
                c.id()
            })
            .collect()
    }

    /// Whether the daemon is lost: libvirtd 11.x, when an upload stream sends
    /// a packet that would take it past the length it declared, writes none of
    /// that packet, logs `cannot write to stream: No space left on device` and
    /// then answers nothing more — no stream error, no reply to the stream's
    /// finish, no reply or keepalive on any connection, new ones included.
    /// (Measured on 11.3.0: the main loop spins at full CPU; one time in three
    /// the daemon crashed instead.) libvirt 9.0 wrote up to the length and
    /// failed the stream with that error; kvm2 must never send past it.
    pub fn is_wedged(&self) -> bool {
        self.shared.wedged.load(Ordering::SeqCst)
    }

    /// Makes the daemon stop answering, as an upload past its declared length
    /// does to libvirtd 11.x (see [`FakeLibvirt::is_wedged`]), until
    /// [`FakeLibvirt::restart_daemon`].
    pub fn wedge(&self) {
        self.shared.wedged.store(true, Ordering::SeqCst);
    }

    /// What killing and starting libvirtd again does: the daemon answers new
    /// connections (and clears a wedge); connections dialled before are never
    /// answered again, so their clients must dial anew. The host's state
    /// (domains, pools, volumes) is kept.
    pub fn restart_daemon(&self) {
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        self.shared.wedged.store(false, Ordering::SeqCst);
    }

    pub(crate) fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// The fault registry.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// The call and dial trace.
    pub fn trace(&self) -> &Trace {
        &self.shared.trace
    }

    /// How new connections are answered.
    pub fn dial_mode(&self) -> DialMode {
        *self.shared.dial.lock().expect("dial mode poisoned")
    }

    /// Changes how new connections are answered (connections already open
    /// are not affected).
    pub fn set_dial_mode(&self, mode: DialMode) {
        *self.shared.dial.lock().expect("dial mode poisoned") = mode;
    }

    /// The host settings.
    pub fn host_config(&self) -> HostConfig {
        self.state().host.clone()
    }

    /// Changes the host settings.
    pub fn update_host_config(&self, f: impl FnOnce(&mut HostConfig)) {
        f(&mut self.state().host);
    }

    /// Sets how long after a start the guest agent begins to answer.
    pub fn set_agent_boot_delay(&self, delay: Duration) {
        self.state().host.agent_boot_delay = delay;
    }

    /// Sets the network round trip added to every call (half each way).
    pub fn set_latency(&self, round_trip: Duration) {
        self.state().host.latency = round_trip;
    }

    // ----- storage hooks -------------------------------------------------

    /// Adds an active directory pool (or updates the path and capacity of an
    /// existing one).
    pub fn add_pool(&self, name: &str, path: &str, capacity: u64) -> StoragePool {
        self.state().add_pool(name, path, capacity)
    }

    /// Removes a pool and its volumes, out of band.
    pub fn remove_pool(&self, name: &str) -> bool {
        self.state().remove_pool(name)
    }

    /// Sets a pool's capacity.
    pub fn set_pool_capacity(&self, name: &str, capacity: u64) -> Result<(), VirError> {
        self.state().pool_hook(name, |c, _, _| *c = capacity)
    }

    /// Sets the bytes a pool uses for files that are not volumes, so its
    /// available space can be set exactly.
    pub fn set_pool_other_allocation(&self, name: &str, bytes: u64) -> Result<(), VirError> {
        self.state().pool_hook(name, |_, o, _| *o = bytes)
    }

    /// Makes a pool report exactly `available` free bytes (within its
    /// capacity), by setting the space its non-volume files use.
    pub fn set_pool_available(&self, name: &str, available: u64) -> Result<(), VirError> {
        let info = self
            .pool_info(name)
            .ok_or_else(|| VirError::no_pool_name(name))?;
        let volumes = info
            .allocation
            .saturating_sub(self.state().pool_other_allocation(name));
        let other = info
            .capacity
            .saturating_sub(available)
            .saturating_sub(volumes);
        self.set_pool_other_allocation(name, other)
    }

    /// Starts or stops a pool.
    pub fn set_pool_active(&self, name: &str, active: bool) -> Result<(), VirError> {
        self.state().pool_hook(name, |_, _, a| *a = active)
    }

    /// The directories left on the host by undefined pools (and stopped
    /// transient ones), which a pool defined at the same path finds again.
    pub fn leftover_directories(&self) -> Vec<String> {
        self.state().directory_names()
    }

    /// Whether a pool is persistent, without a call.
    pub fn pool_persistent(&self, name: &str) -> Option<bool> {
        self.state().pools.get(name).map(|p| p.persistent)
    }

    /// A pool's info, without a call.
    pub fn pool_info(&self, name: &str) -> Option<PoolInfo> {
        self.state().pool_info_by_name(name)
    }

    /// The pool names.
    pub fn pools(&self) -> Vec<String> {
        self.state().pool_names()
    }

    /// The volumes of a pool, sorted by name.
    pub fn volumes(&self, pool: &str) -> Option<Vec<VolumeSnapshot>> {
        self.state().snapshot_volumes(pool)
    }

    /// One volume.
    pub fn volume(&self, pool: &str, name: &str) -> Option<VolumeSnapshot> {
        self.volumes(pool)?
            .into_iter()
            .find(|v| v.handle.name == name)
    }

    /// Removes a volume out of band.
    pub fn remove_volume(&self, pool: &str, name: &str) -> bool {
        self.state().remove_volume(pool, name)
    }

    // ----- domain hooks --------------------------------------------------

    /// Defines a domain out of band (planting), with the same rules as a
    /// define call.
    pub fn define_domain(&self, xml: &str) -> Result<Domain, VirError> {
        self.state().define(xml, 0)
    }

    /// One domain by name.
    pub fn domain(&self, name: &str) -> Option<DomainSnapshot> {
        self.state().snapshot_domain(name)
    }

    /// Every domain, sorted by name.
    pub fn domains(&self) -> Vec<DomainSnapshot> {
        self.state().all_domain_snapshots()
    }

    /// Removes a domain out of band, whatever its state.
    pub fn remove_domain(&self, name: &str) -> bool {
        self.state().remove_domain(name)
    }

    /// Sets a domain's state and reason out of band. A stopped state stops a
    /// running domain (a transient one goes away); a running state starts a
    /// stopped one.
    pub fn set_domain_state(
        &self,
        name: &str,
        state: DomainState,
        reason: i32,
    ) -> Result<(), VirError> {
        self.state()
            .force_state(name, state, reason, Instant::now())
    }

    /// Pauses a domain out of band (`PAUSED`, reason user).
    pub fn pause(&self, name: &str) -> Result<(), VirError> {
        self.set_domain_state(name, DomainState::Paused, DOMAIN_PAUSED_USER)
    }

    /// Resumes a paused domain out of band (`RUNNING`, reason unpaused).
    pub fn resume(&self, name: &str) -> Result<(), VirError> {
        self.set_domain_state(name, DomainState::Running, DOMAIN_RUNNING_UNPAUSED)
    }

    /// Stops a domain out of band as a guest shutdown does (`SHUTOFF`,
    /// reason shutdown).
    pub fn stop(&self, name: &str) -> Result<(), VirError> {
        self.set_domain_state(name, DomainState::Shutoff, DOMAIN_SHUTOFF_SHUTDOWN)
    }

    /// Sets the interfaces a domain reports from one source (kept by name,
    /// across restarts and redefinitions).
    pub fn set_interfaces(&self, name: &str, source: AddressSource, ifaces: Vec<DomainInterface>) {
        self.state().set_addresses(name, source, Some(ifaces));
    }

    /// Drops the interfaces set for one source; the default answer returns.
    pub fn clear_interfaces(&self, name: &str, source: AddressSource) {
        self.state().set_addresses(name, source, None);
    }

    /// Makes a domain report `addr` (IPv4, /24) on `eth0` from the guest
    /// agent and the ARP table.
    pub fn set_ipv4(&self, name: &str, addr: &str) {
        let mac = Some("52:54:00:00:00:01".to_owned());
        let agent = vec![
            DomainInterface {
                name: "lo".into(),
                hwaddr: Some("00:00:00:00:00:00".into()),
                addrs: vec![DomainIpAddr::v4("127.0.0.1", 8)],
            },
            DomainInterface {
                name: "eth0".into(),
                hwaddr: mac.clone(),
                addrs: vec![DomainIpAddr::v4(addr, 24)],
            },
        ];
        let arp = vec![DomainInterface {
            name: "vnet0".into(),
            hwaddr: mac,
            addrs: vec![DomainIpAddr::v4(addr, 0)],
        }];
        let mut s = self.state();
        s.set_addresses(name, AddressSource::Agent, Some(agent));
        s.set_addresses(name, AddressSource::Arp, Some(arp));
    }

    /// Makes the ARP source fail the way libvirt 9.0 does on a host whose
    /// netlink answer it cannot parse (`VIR_ERR_INTERNAL_ERROR`
    /// "wrong nlmsg len").
    pub fn set_arp_failure(&self, fail: bool) {
        self.state().set_arp_failure(fail);
    }

    /// Makes a domain's guest agent never answer (or answer again).
    pub fn set_agent_unresponsive(&self, name: &str, unresponsive: bool) {
        self.state().set_agent_broken(name, unresponsive);
    }

    /// Holds the boot of a domain (by name, whether or not it exists yet):
    /// its agent does not answer and it reports no address until released.
    pub fn hold_boot(&self, name: &str) {
        self.state().set_boot_held(Some(name), true);
    }

    /// Releases a held boot.
    pub fn release_boot(&self, name: &str) {
        self.state().set_boot_held(Some(name), false);
    }

    /// Holds (or releases) the boot of every domain.
    pub fn hold_all_boots(&self, held: bool) {
        self.state().set_boot_held(None, held);
    }

    /// The NVRAM files that exist on the fake host.
    pub fn nvram_files(&self) -> Vec<String> {
        self.state().nvram_files()
    }

    /// Checks the model's invariants (unique names and running ids, ids
    /// `-1` exactly when inactive, no inactive transient domain, pool
    /// accounting consistent); the error names the first one broken.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.state().check_invariants()
    }
}
