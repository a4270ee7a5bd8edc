//! The simulated backend: locations ("sites") holding instances, their disks and seeds,
//! a shared base image, free capacity, reachability and credentials.
//!
//! Every procedure enters through [`SimBackend::invoke`], the backend's one seam, which
//! checks the connection, records the call in the trace, applies injected faults and
//! the configured latency, and only then touches the state.
//! The provider talks to it through its own seam in `provider.rs`; the fixture reaches
//! the same state out of band through the hook methods at the bottom of this file.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use conformance::fixture::{
    BackendCall, FaultId, FaultKind, FaultSpec, Plant, Power, Reachability, Resource, Trigger,
};
use tokio::time::Instant;

/// Volume size of the shared base image, in bytes.
const BASE_IMAGE_BYTES: u64 = 512 << 20;

/// A backend procedure: the unit the trace records and faults target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proc {
    /// Opens a connection.
    Dial,
    /// Finds an instance and the parts it has.
    Lookup,
    /// Creates an instance record together with its mark.
    Define,
    /// Creates an instance's disk from the base image.
    CreateDisk,
    /// Creates an instance's seed volume holding its cloud-init bytes.
    CreateSeed,
    /// Powers an instance on.
    Start,
    /// Reads the addresses an instance reports.
    Addresses,
    /// Powers an instance off.
    Stop,
    /// Removes an instance record.
    Undefine,
    /// Removes a disk volume.
    DeleteDisk,
    /// Removes a seed volume.
    DeleteSeed,
    /// Lists instance names and power states.
    List,
    /// Reads an instance's mark.
    ReadMark,
    /// Reads free capacity.
    Capacity,
    /// Answers when the site is alive.
    Ping,
}

impl Proc {
    /// The procedure's name in the trace and in span names (`template.<name>`).
    pub fn as_str(self) -> &'static str {
        match self {
            Proc::Dial => "dial",
            Proc::Lookup => "lookup",
            Proc::Define => "define",
            Proc::CreateDisk => "create_disk",
            Proc::CreateSeed => "create_seed",
            Proc::Start => "start",
            Proc::Addresses => "addresses",
            Proc::Stop => "stop",
            Proc::Undefine => "undefine",
            Proc::DeleteDisk => "delete_disk",
            Proc::DeleteSeed => "delete_seed",
            Proc::List => "list",
            Proc::ReadMark => "read_mark",
            Proc::Capacity => "capacity",
            Proc::Ping => "ping",
        }
    }
}

/// The identity of one connection.
pub type ConnId = u64;

/// What the backend answers instead of a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendError {
    /// The object the call names does not exist.
    NoObject(String),
    /// The backend is busy; retrying may work.
    Busy(String),
    /// The backend refuses the call for good.
    Denied(String),
    /// Not enough free capacity.
    NoSpace {
        /// What is short.
        what: String,
        /// Free bytes.
        available: u64,
        /// Bytes asked for.
        needed: u64,
    },
    /// The object already exists.
    Exists(String),
    /// The volume store is gone.
    NoContainer(String),
    /// The object exists but its mark cannot be read.
    Unreadable(String),
    /// The connection is closed; dial again.
    Closed,
    /// The site refused the connection.
    Refused,
    /// The site rejected the credential token.
    AuthFailed,
    /// The site's identity is not the one the caller trusts (its host key changed).
    HostKeyRejected,
    /// The credential file is not there (yet).
    CredentialsMissing(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::NoObject(what) => write!(f, "no such object: {what}"),
            BackendError::Busy(why) => write!(f, "backend busy: {why}"),
            BackendError::Denied(why) => write!(f, "operation denied: {why}"),
            BackendError::NoSpace {
                what,
                available,
                needed,
            } => write!(f, "no space in {what}: {available} free, {needed} needed"),
            BackendError::Exists(what) => write!(f, "already exists: {what}"),
            BackendError::NoContainer(site) => write!(f, "volume store missing at {site}"),
            BackendError::Unreadable(what) => write!(f, "mark of {what} cannot be read"),
            BackendError::Closed => f.write_str("connection closed"),
            BackendError::Refused => f.write_str("connection refused"),
            BackendError::AuthFailed => f.write_str("credential token rejected"),
            BackendError::HostKeyRejected => {
                f.write_str("site identity differs from the trusted one")
            }
            BackendError::CredentialsMissing(path) => {
                write!(f, "credential file {path} is missing")
            }
        }
    }
}

impl std::error::Error for BackendError {}

/// The garbage-collection mark written with an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The tag.
    pub tag: String,
    /// The owner's uid (empty when unknown).
    pub uid: String,
    /// When the instance was created, if the writer recorded it.
    pub created_at: Option<SystemTime>,
}

/// What a lookup reports about an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceInfo {
    /// Its power state.
    pub power: Power,
    /// Whether its disk exists.
    pub disk: bool,
    /// The digest of its seed's bytes, when the seed exists.
    pub seed: Option<u64>,
}

/// What a list entry reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The instance name.
    pub name: String,
    /// Its power state.
    pub power: Power,
}

/// A 64-bit FNV-1a digest, as the backend reports for volume contents.
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The disk volume name of an instance.
pub fn disk_volume(name: &str) -> String {
    format!("{name}-disk")
}

/// The seed volume name of an instance.
pub fn seed_volume(name: &str) -> String {
    format!("{name}-seed")
}

#[derive(Clone, Debug)]
struct Record {
    mark: Option<Mark>,
    power: Power,
    started: Option<Instant>,
    booted: bool,
    ip: Ipv4Addr,
    addresses: Option<Vec<IpAddr>>,
    lookup_fails: bool,
    unreadable: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VolumeKind {
    Image,
    Disk,
    Seed,
}

impl VolumeKind {
    fn as_str(self) -> &'static str {
        match self {
            VolumeKind::Image => "image",
            VolumeKind::Disk => "disk",
            VolumeKind::Seed => "seed",
        }
    }
}

#[derive(Clone, Debug)]
struct Volume {
    instance: Option<String>,
    kind: VolumeKind,
    size: u64,
    digest: u64,
    /// The seed's bytes; the one place the cloud-init payload lives.
    data: Vec<u8>,
}

struct Site {
    instances: BTreeMap<String, Record>,
    volumes: BTreeMap<String, Volume>,
    container: bool,
    capacity: u64,
    free_override: Option<u64>,
    reach: Reachability,
    token: String,
    /// What the site presents as its identity (its host key).
    identity: String,
    dials: u64,
    open: HashSet<ConnId>,
}

impl Site {
    fn new(capacity: u64, token: String, identity: String) -> Site {
        let mut s = Site {
            instances: BTreeMap::new(),
            volumes: BTreeMap::new(),
            container: true,
            capacity,
            free_override: None,
            reach: Reachability::Up,
            token,
            identity,
            dials: 0,
            open: HashSet::new(),
        };
        s.add_base_image();
        s
    }

    fn add_base_image(&mut self) {
        self.volumes.insert(
            "base-image".into(),
            Volume {
                instance: None,
                kind: VolumeKind::Image,
                size: BASE_IMAGE_BYTES,
                digest: 0,
                data: Vec::new(),
            },
        );
    }

    fn free(&self) -> u64 {
        let used: u64 = self.volumes.values().map(|v| v.size).sum();
        self.free_override
            .unwrap_or_else(|| self.capacity.saturating_sub(used))
    }
}

struct World {
    sites: BTreeMap<String, Site>,
    boot_held: bool,
    boot_delay: Duration,
    next_ip: u32,
}

impl World {
    /// Lets a started instance finish booting once its delay passed and boots are not held.
    fn progress(&mut self, site: &str, name: &str) {
        let (held, delay) = (self.boot_held, self.boot_delay);
        if let Some(r) = self
            .sites
            .get_mut(site)
            .and_then(|s| s.instances.get_mut(name))
            && r.power == Power::Running
            && !r.booted
            && !held
            && r.started.is_some_and(|t| t.elapsed() >= delay)
        {
            r.booted = true;
        }
    }

    fn allocate_ip(&mut self) -> Ipv4Addr {
        self.next_ip += 1;
        let n = self.next_ip;
        Ipv4Addr::new(10, 77, (n >> 8) as u8, (n & 0xff) as u8)
    }
}

struct Injection {
    id: u64,
    spec: FaultSpec,
    seen: u64,
    spent: bool,
}

#[derive(Default)]
struct FaultTable {
    next: u64,
    active: Vec<Injection>,
    fired: HashSet<u64>,
}

impl FaultTable {
    /// Counts one call and returns the fault it triggers, if any.
    fn on_call(&mut self, site: &str, proc: Proc) -> Option<FaultKind> {
        let mut hit = None;
        for inj in &mut self.active {
            if inj.spent || inj.spec.location.as_deref().is_some_and(|l| l != site) {
                continue;
            }
            inj.seen += 1;
            let fires = match &inj.spec.trigger {
                Trigger::Nth(k) => inj.seen == *k,
                Trigger::Named(n) => n.eq_ignore_ascii_case(proc.as_str()),
                Trigger::Always => true,
            };
            if fires && hit.is_none() {
                if !matches!(inj.spec.trigger, Trigger::Always) {
                    inj.spent = true;
                }
                self.fired.insert(inj.id);
                hit = Some(inj.spec.kind.clone());
            }
        }
        hit
    }
}

struct Inner {
    world: Mutex<World>,
    faults: Mutex<FaultTable>,
    released: tokio::sync::watch::Sender<u64>,
    latency: Duration,
    trace: Mutex<Vec<BackendCall>>,
    next_conn: AtomicU64,
}

/// How a [`SimBackend`] starts out.
#[derive(Clone, Debug)]
pub struct BackendConfig {
    /// Site names, in configuration order.
    pub sites: Vec<String>,
    /// Capacity of each site's volume store, in bytes.
    pub capacity: u64,
    /// How long a started instance takes to get its address.
    pub boot_delay: Duration,
    /// Latency added to every call.
    pub latency: Duration,
}

impl Default for BackendConfig {
    fn default() -> Self {
        BackendConfig {
            sites: vec!["site-a".into(), "site-b".into()],
            capacity: 1 << 40,
            boot_delay: Duration::from_millis(5),
            latency: Duration::from_micros(200),
        }
    }
}

/// The simulated backend, shared by every provider of one testbed.
///
/// Cloning is cheap; clones share the state.
#[derive(Clone)]
pub struct SimBackend {
    inner: Arc<Inner>,
}

impl fmt::Debug for SimBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimBackend")
            .field("sites", &self.world().sites.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl SimBackend {
    /// A backend with the sites of `config`, each accepting the token `token-<site>-0`
    /// and presenting the identity `identity-<site>-0`.
    pub fn new(config: &BackendConfig) -> SimBackend {
        let sites = config
            .sites
            .iter()
            .map(|s| {
                let site = Site::new(config.capacity, initial_token(s), initial_identity(s));
                (s.clone(), site)
            })
            .collect();
        SimBackend {
            inner: Arc::new(Inner {
                world: Mutex::new(World {
                    sites,
                    boot_held: false,
                    boot_delay: config.boot_delay,
                    next_ip: 0,
                }),
                faults: Mutex::default(),
                released: tokio::sync::watch::Sender::new(0),
                latency: config.latency,
                trace: Mutex::default(),
                next_conn: AtomicU64::new(1),
            }),
        }
    }

    fn world(&self) -> MutexGuard<'_, World> {
        self.inner.world.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn faults(&self) -> MutexGuard<'_, FaultTable> {
        self.inner.faults.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, site: &str, proc: Proc, conn: ConnId) {
        self.inner
            .trace
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(BackendCall {
                location: site.to_owned(),
                name: proc.as_str().to_owned(),
                connection: conn,
            });
    }

    /// Applies the fault `kind` the call triggered; `Ok` means the call goes on.
    async fn suffer(
        &self,
        site: &str,
        conn: ConnId,
        kind: Option<FaultKind>,
        mut released: tokio::sync::watch::Receiver<u64>,
    ) -> Result<(), BackendError> {
        match kind {
            None => Ok(()),
            Some(FaultKind::Transient) => {
                Err(BackendError::Busy("injected transient fault".into()))
            }
            Some(FaultKind::Permanent) => {
                Err(BackendError::Denied("injected permanent fault".into()))
            }
            Some(FaultKind::NotFound) => {
                Err(BackendError::NoObject("injected not-found fault".into()))
            }
            Some(FaultKind::Quota) => {
                let available = self.world().sites.get(site).map_or(0, Site::free);
                Err(BackendError::NoSpace {
                    what: format!("volume store at {site}"),
                    available,
                    needed: available + 1,
                })
            }
            Some(FaultKind::Hang) => {
                let _ = released.changed().await;
                Ok(())
            }
            Some(FaultKind::Delay(d)) => {
                tokio::time::sleep(d).await;
                Ok(())
            }
            Some(FaultKind::Drop) | Some(FaultKind::LostReply) => {
                if let Some(s) = self.world().sites.get_mut(site) {
                    s.open.remove(&conn);
                }
                Err(BackendError::Closed)
            }
        }
    }

    /// The seam: every procedure but [`SimBackend::dial`] runs through here.
    async fn invoke<T>(
        &self,
        conn: ConnId,
        site: &str,
        proc: Proc,
        op: impl FnOnce(&mut World) -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        {
            let w = self.world();
            let s = w
                .sites
                .get(site)
                .ok_or_else(|| BackendError::Denied(format!("no site {site}")))?;
            if !s.open.contains(&conn) {
                return Err(BackendError::Closed);
            }
        }
        self.record(site, proc, conn);
        let released = self.inner.released.subscribe();
        let fault = self.faults().on_call(site, proc);
        // A lost reply is suffered after the call took effect, not before.
        let lose_reply = fault == Some(FaultKind::LostReply);
        if !lose_reply {
            self.suffer(site, conn, fault, released).await?;
        }
        if !self.inner.latency.is_zero() {
            tokio::time::sleep(self.inner.latency).await;
        }
        let mut w = self.world();
        if !w.sites.get(site).is_some_and(|s| s.open.contains(&conn)) {
            return Err(BackendError::Closed);
        }
        let result = op(&mut w);
        if lose_reply {
            if let Some(s) = w.sites.get_mut(site) {
                s.open.remove(&conn);
            }
            return Err(BackendError::Closed);
        }
        result
    }

    /// Opens a connection to `site` presenting `token`, when the site's identity is
    /// `trusted` (checked first, as an SSH client checks the host key before it
    /// authenticates).
    ///
    /// A refusing site fails at once; a black-holed one never answers (the caller's
    /// deadline ends the wait).
    pub async fn dial(
        &self,
        site: &str,
        token: &str,
        trusted: &str,
    ) -> Result<ConnId, BackendError> {
        let reach = {
            let w = self.world();
            w.sites
                .get(site)
                .ok_or_else(|| BackendError::Denied(format!("no site {site}")))?
                .reach
        };
        let conn = self.inner.next_conn.fetch_add(1, Ordering::Relaxed);
        self.record(site, Proc::Dial, conn);
        match reach {
            Reachability::Up => {}
            Reachability::Refused => return Err(BackendError::Refused),
            Reachability::BlackHole => std::future::pending::<()>().await,
        }
        let released = self.inner.released.subscribe();
        let fault = self.faults().on_call(site, Proc::Dial);
        match fault {
            Some(FaultKind::Drop) | Some(FaultKind::LostReply) => {
                return Err(BackendError::Closed);
            }
            other => self.suffer(site, conn, other, released).await?,
        }
        if !self.inner.latency.is_zero() {
            tokio::time::sleep(self.inner.latency).await;
        }
        let mut w = self.world();
        let s = w
            .sites
            .get_mut(site)
            .ok_or_else(|| BackendError::Denied(format!("no site {site}")))?;
        if s.reach != Reachability::Up {
            return Err(BackendError::Refused);
        }
        if s.identity != trusted {
            return Err(BackendError::HostKeyRejected);
        }
        if s.token != token {
            return Err(BackendError::AuthFailed);
        }
        s.dials += 1;
        s.open.insert(conn);
        Ok(conn)
    }

    /// Hangs up a connection (no call; like closing a socket).
    pub fn close(&self, site: &str, conn: ConnId) {
        if let Some(s) = self.world().sites.get_mut(site) {
            s.open.remove(&conn);
        }
    }

    /// Finds an instance.
    pub async fn lookup(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
    ) -> Result<InstanceInfo, BackendError> {
        self.invoke(c, site, Proc::Lookup, |w| {
            let s = &w.sites[site];
            let r = s
                .instances
                .get(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            Ok(InstanceInfo {
                power: r.power,
                disk: s.container && s.volumes.contains_key(&disk_volume(name)),
                seed: s
                    .container
                    .then(|| s.volumes.get(&seed_volume(name)).map(|v| v.digest))
                    .flatten(),
            })
        })
        .await
    }

    /// Creates an instance record with its mark, powered off.
    pub async fn define(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        mark: Mark,
    ) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Define, |w| {
            let ip = w.allocate_ip();
            let s = w.sites.get_mut(site).expect("checked by the seam");
            if s.instances.contains_key(name) {
                return Err(BackendError::Exists(format!("instance {name}")));
            }
            s.instances.insert(
                name.to_owned(),
                Record {
                    mark: Some(mark),
                    power: Power::Stopped,
                    started: None,
                    booted: false,
                    ip,
                    addresses: None,
                    lookup_fails: false,
                    unreadable: false,
                },
            );
            Ok(())
        })
        .await
    }

    /// Creates `name`'s disk of `size` bytes from the base image.
    pub async fn create_disk(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        size: u64,
    ) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::CreateDisk, |w| {
            let s = w.sites.get_mut(site).expect("checked by the seam");
            add_volume(
                s,
                site,
                &disk_volume(name),
                name,
                VolumeKind::Disk,
                size,
                Vec::new(),
            )
        })
        .await
    }

    /// Creates the seed volume `volume` of `name` holding `bytes`.
    pub async fn create_seed(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
        volume: &str,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        let data = bytes.to_vec();
        self.invoke(c, site, Proc::CreateSeed, move |w| {
            let s = w.sites.get_mut(site).expect("checked by the seam");
            let size = data.len() as u64;
            add_volume(s, site, volume, name, VolumeKind::Seed, size, data)
        })
        .await
    }

    /// Powers `name` on.
    pub async fn start(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Start, |w| {
            let s = w.sites.get_mut(site).expect("checked by the seam");
            let has_parts = s.container
                && s.volumes.contains_key(&disk_volume(name))
                && s.volumes.contains_key(&seed_volume(name));
            let r = s
                .instances
                .get_mut(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if !has_parts {
                return Err(BackendError::NoObject(format!("a volume of {name}")));
            }
            if r.power == Power::Running {
                return Err(BackendError::Denied(format!("{name} is already running")));
            }
            r.power = Power::Running;
            r.started = Some(Instant::now());
            r.booted = false;
            Ok(())
        })
        .await
    }

    /// The addresses `name` reports: none until it booted.
    pub async fn addresses(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
    ) -> Result<Vec<IpAddr>, BackendError> {
        self.invoke(c, site, Proc::Addresses, |w| {
            w.progress(site, name);
            let r = w.sites[site]
                .instances
                .get(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.lookup_fails {
                return Err(BackendError::Busy(format!(
                    "address lookup of {name} failed"
                )));
            }
            Ok(match (&r.addresses, r.booted) {
                (Some(a), _) => a.clone(),
                (None, true) => vec![IpAddr::V4(r.ip)],
                (None, false) => Vec::new(),
            })
        })
        .await
    }

    /// Powers `name` off; an instance that is not running is refused.
    pub async fn stop(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Stop, |w| {
            let r = w
                .sites
                .get_mut(site)
                .expect("checked by the seam")
                .instances
                .get_mut(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.power == Power::Stopped {
                return Err(BackendError::Denied(format!("{name} is not running")));
            }
            r.power = Power::Stopped;
            r.booted = false;
            Ok(())
        })
        .await
    }

    /// Removes `name`'s record; a running instance is refused.
    pub async fn undefine(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::Undefine, |w| {
            let s = w.sites.get_mut(site).expect("checked by the seam");
            let r = s
                .instances
                .get(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.power != Power::Stopped {
                return Err(BackendError::Busy(format!("{name} must be stopped first")));
            }
            s.instances.remove(name);
            Ok(())
        })
        .await
    }

    /// Removes the disk of `name`.
    pub async fn delete_disk(&self, c: ConnId, site: &str, name: &str) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::DeleteDisk, |w| {
            remove_volume(
                w.sites.get_mut(site).expect("checked by the seam"),
                site,
                &disk_volume(name),
            )
        })
        .await
    }

    /// Removes the seed volume `volume`.
    pub async fn delete_seed(
        &self,
        c: ConnId,
        site: &str,
        volume: &str,
    ) -> Result<(), BackendError> {
        self.invoke(c, site, Proc::DeleteSeed, |w| {
            remove_volume(
                w.sites.get_mut(site).expect("checked by the seam"),
                site,
                volume,
            )
        })
        .await
    }

    /// Lists every instance at the site, by name.
    pub async fn list(&self, c: ConnId, site: &str) -> Result<Vec<Listed>, BackendError> {
        self.invoke(c, site, Proc::List, |w| {
            Ok(w.sites[site]
                .instances
                .iter()
                .map(|(name, r)| Listed {
                    name: name.clone(),
                    power: r.power,
                })
                .collect())
        })
        .await
    }

    /// Reads `name`'s mark: `None` when it carries none.
    pub async fn read_mark(
        &self,
        c: ConnId,
        site: &str,
        name: &str,
    ) -> Result<Option<Mark>, BackendError> {
        self.invoke(c, site, Proc::ReadMark, |w| {
            let r = w.sites[site]
                .instances
                .get(name)
                .ok_or_else(|| BackendError::NoObject(format!("instance {name}")))?;
            if r.unreadable {
                return Err(BackendError::Unreadable(format!("instance {name}")));
            }
            Ok(r.mark.clone())
        })
        .await
    }

    /// Free bytes in the site's volume store.
    pub async fn capacity(&self, c: ConnId, site: &str) -> Result<u64, BackendError> {
        self.invoke(c, site, Proc::Capacity, |w| {
            let s = &w.sites[site];
            if !s.container {
                return Err(BackendError::NoContainer(site.to_owned()));
            }
            Ok(s.free())
        })
        .await
    }

    /// Answers with the number of instances at the site.
    pub async fn ping(&self, c: ConnId, site: &str) -> Result<usize, BackendError> {
        self.invoke(c, site, Proc::Ping, |w| Ok(w.sites[site].instances.len()))
            .await
    }

    // The out-of-band side, used by the fixture's hooks.

    /// The token `site` currently accepts.
    pub fn token(&self, site: &str) -> Option<String> {
        self.world().sites.get(site).map(|s| s.token.clone())
    }

    /// Replaces the token `site` accepts (the old one is revoked; open connections stay).
    pub fn set_token(&self, site: &str, token: String) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.token = token;
        Ok(())
    }

    /// The identity `site` presents.
    pub fn identity(&self, site: &str) -> Option<String> {
        self.world().sites.get(site).map(|s| s.identity.clone())
    }

    /// Replaces the identity `site` presents (as when its host key changes; open
    /// connections stay).
    pub fn set_identity(&self, site: &str, identity: String) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.identity = identity;
        Ok(())
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<BackendCall> {
        self.inner
            .trace
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Connections opened to `site`.
    pub fn dials(&self, site: &str) -> u64 {
        self.world().sites.get(site).map_or(0, |s| s.dials)
    }

    /// Injects a fault.
    pub fn inject(&self, spec: FaultSpec) -> Result<FaultId, String> {
        if let Some(l) = &spec.location
            && !self.world().sites.contains_key(l)
        {
            return Err(format!("no site {l}"));
        }
        let mut f = self.faults();
        f.next += 1;
        let id = f.next;
        f.active.push(Injection {
            id,
            spec,
            seen: 0,
            spent: false,
        });
        Ok(FaultId(id))
    }

    /// Whether injection `id` fired.
    pub fn fired(&self, id: FaultId) -> bool {
        self.faults().fired.contains(&id.0)
    }

    /// Removes every injection and releases hung calls.
    pub fn clear_faults(&self) {
        self.faults().active.clear();
        self.inner.released.send_modify(|g| *g += 1);
    }

    /// Sets how `site` answers; anything but `Up` drops its open connections.
    pub fn set_reachability(&self, site: &str, r: Reachability) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.reach = r;
        if r != Reachability::Up {
            s.open.clear();
        }
        Ok(())
    }

    /// Sets the free capacity of `site`; `None` goes back to capacity minus use.
    pub fn set_free(&self, site: &str, bytes: Option<u64>) -> Result<(), String> {
        site_mut(&mut self.world(), site)?.free_override = bytes;
        Ok(())
    }

    /// Holds or releases boots everywhere.
    pub fn hold_boot(&self, hold: bool) {
        self.world().boot_held = hold;
    }

    /// Forces the power state of `name`.
    pub fn set_power(&self, site: &str, name: &str, power: Power) -> Result<(), String> {
        let mut w = self.world();
        let r = record_mut(&mut w, site, name)?;
        match power {
            Power::Running if r.power == Power::Stopped => {
                r.started = Some(Instant::now());
                r.booted = false;
            }
            Power::Stopped => r.booted = false,
            _ => {}
        }
        r.power = power;
        Ok(())
    }

    /// Sets the addresses `name` reports.
    pub fn set_addresses(&self, site: &str, name: &str, addrs: Vec<IpAddr>) -> Result<(), String> {
        record_mut(&mut self.world(), site, name)?.addresses = Some(addrs);
        Ok(())
    }

    /// Makes the address lookup of `name` fail, or work again.
    pub fn fail_address_lookup(&self, site: &str, name: &str, fail: bool) -> Result<(), String> {
        record_mut(&mut self.world(), site, name)?.lookup_fails = fail;
        Ok(())
    }

    /// Every resource at `site`, instances first.
    pub fn resources(&self, site: &str) -> Result<Vec<Resource>, String> {
        let w = self.world();
        let s = w.sites.get(site).ok_or_else(|| format!("no site {site}"))?;
        let mut out: Vec<Resource> = s
            .instances
            .keys()
            .map(|n| Resource {
                instance: Some(n.clone()),
                kind: "instance".into(),
                primary: true,
                name: n.clone(),
            })
            .collect();
        if s.container {
            out.extend(s.volumes.iter().map(|(n, v)| Resource {
                instance: v.instance.clone(),
                kind: v.kind.as_str().into(),
                primary: false,
                name: n.clone(),
            }));
        }
        Ok(out)
    }

    /// The bytes of a volume (the seed holds the cloud-init payload).
    pub fn volume_bytes(&self, site: &str, volume: &str) -> Option<Vec<u8>> {
        self.world()
            .sites
            .get(site)?
            .volumes
            .get(volume)
            .map(|v| v.data.clone())
    }

    /// Plants `what` under `name`, as if someone else had made it.
    pub fn plant(&self, site: &str, name: &str, what: Plant) -> Result<(), String> {
        let mut w = self.world();
        let ip = w.allocate_ip();
        let s = site_mut(&mut w, site)?;
        if s.instances.contains_key(name) {
            return Err(format!("{name} already exists at {site}"));
        }
        let now = Some(SystemTime::now());
        let (mark, unreadable) = match what {
            Plant::Unmarked => (None, false),
            Plant::ForeignUid { tag, uid } => (
                Some(Mark {
                    tag,
                    uid,
                    created_at: now,
                }),
                false,
            ),
            Plant::EmptyUid { tag } => (
                Some(Mark {
                    tag,
                    uid: String::new(),
                    created_at: now,
                }),
                false,
            ),
            Plant::Unreadable { tag } => (
                Some(Mark {
                    tag,
                    uid: "unknown".into(),
                    created_at: now,
                }),
                true,
            ),
        };
        s.instances.insert(
            name.to_owned(),
            Record {
                mark,
                power: Power::Running,
                started: Some(Instant::now()),
                booted: true,
                ip,
                addresses: None,
                lookup_fails: false,
                unreadable,
            },
        );
        if s.container {
            add_volume(
                s,
                site,
                &disk_volume(name),
                name,
                VolumeKind::Disk,
                1 << 20,
                Vec::new(),
            )
            .map_err(|e| e.to_string())?;
            add_volume(
                s,
                site,
                &seed_volume(name),
                name,
                VolumeKind::Seed,
                9,
                b"#planted\n".to_vec(),
            )
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// A fingerprint of `name` and its parts; `None` when nothing of that name exists.
    pub fn inspect(&self, site: &str, name: &str) -> Result<Option<String>, String> {
        let w = self.world();
        let s = w.sites.get(site).ok_or_else(|| format!("no site {site}"))?;
        let parts: Vec<String> = s
            .volumes
            .iter()
            .filter(|(_, v)| v.instance.as_deref() == Some(name))
            .map(|(n, v)| format!("{n}:{}:{}", v.size, v.digest))
            .collect();
        let rec = s.instances.get(name);
        if rec.is_none() && parts.is_empty() {
            return Ok(None);
        }
        Ok(Some(format!(
            "{:?} parts {parts:?}",
            rec.map(|r| (&r.mark, r.power, r.booted, &r.addresses, r.unreadable))
        )))
    }

    /// Removes the secondary resources of `name`.
    pub fn remove_secondary(&self, site: &str, name: &str) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.volumes.retain(|_, v| v.instance.as_deref() != Some(name));
        Ok(())
    }

    /// Removes the record of `name`, leaving its parts.
    pub fn remove_primary(&self, site: &str, name: &str) -> Result<(), String> {
        site_mut(&mut self.world(), site)?.instances.remove(name);
        Ok(())
    }

    /// Removes the volume store of `site` and everything in it.
    pub fn remove_container(&self, site: &str) -> Result<(), String> {
        let mut w = self.world();
        let s = site_mut(&mut w, site)?;
        s.container = false;
        s.volumes.clear();
        Ok(())
    }

    /// Removes everything named `name`.
    pub fn remove_all(&self, site: &str, name: &str) -> Result<(), String> {
        self.remove_primary(site, name)?;
        self.remove_secondary(site, name)
    }
}

/// The token a site accepts before any rotation.
pub fn initial_token(site: &str) -> String {
    format!("token-{site}-0")
}

/// The identity a site presents unless told otherwise.
pub fn initial_identity(site: &str) -> String {
    format!("identity-{site}-0")
}

fn site_mut<'a>(w: &'a mut World, site: &str) -> Result<&'a mut Site, String> {
    w.sites
        .get_mut(site)
        .ok_or_else(|| format!("no site {site}"))
}

fn record_mut<'a>(w: &'a mut World, site: &str, name: &str) -> Result<&'a mut Record, String> {
    site_mut(w, site)?
        .instances
        .get_mut(name)
        .ok_or_else(|| format!("no instance {name} at {site}"))
}

fn add_volume(
    s: &mut Site,
    site: &str,
    volume: &str,
    owner: &str,
    kind: VolumeKind,
    size: u64,
    data: Vec<u8>,
) -> Result<(), BackendError> {
    if !s.container {
        return Err(BackendError::NoContainer(site.to_owned()));
    }
    if kind == VolumeKind::Disk && !s.volumes.contains_key("base-image") {
        return Err(BackendError::NoObject("base image".into()));
    }
    if s.volumes.contains_key(volume) {
        return Err(BackendError::Exists(format!("volume {volume}")));
    }
    let free = s.free();
    if size > free {
        return Err(BackendError::NoSpace {
            what: format!("volume store at {site}"),
            available: free,
            needed: size,
        });
    }
    s.volumes.insert(
        volume.to_owned(),
        Volume {
            instance: Some(owner.to_owned()),
            kind,
            size,
            digest: digest(&data),
            data,
        },
    );
    Ok(())
}

fn remove_volume(s: &mut Site, site: &str, volume: &str) -> Result<(), BackendError> {
    if !s.container {
        return Err(BackendError::NoContainer(site.to_owned()));
    }
    s.volumes
        .remove(volume)
        .map(|_| ())
        .ok_or_else(|| BackendError::NoObject(format!("volume {volume}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_site() -> SimBackend {
        SimBackend::new(&BackendConfig {
            sites: vec!["s".into()],
            latency: Duration::ZERO,
            ..BackendConfig::default()
        })
    }

    async fn dial(b: &SimBackend) -> ConnId {
        b.dial("s", &initial_token("s"), &initial_identity("s"))
            .await
            .unwrap()
    }

    fn at(trigger: Trigger, kind: FaultKind) -> FaultSpec {
        FaultSpec {
            location: Some("s".into()),
            trigger,
            kind,
        }
    }

    #[tokio::test]
    async fn nth_counts_calls_from_injection_and_fired_survives_clear() {
        let b = one_site();
        let c = dial(&b).await;
        b.ping(c, "s").await.unwrap();
        let f = b.inject(at(Trigger::Nth(2), FaultKind::Transient)).unwrap();
        assert!(b.ping(c, "s").await.is_ok());
        assert!(matches!(b.ping(c, "s").await, Err(BackendError::Busy(_))));
        assert!(b.ping(c, "s").await.is_ok(), "an Nth fault fires once");
        b.clear_faults();
        assert!(b.fired(f));
    }

    #[tokio::test]
    async fn named_faults_wait_for_their_procedure() {
        let b = one_site();
        let c = dial(&b).await;
        b.inject(at(Trigger::Named("capacity".into()), FaultKind::NotFound))
            .unwrap();
        assert!(b.ping(c, "s").await.is_ok());
        assert!(matches!(
            b.capacity(c, "s").await,
            Err(BackendError::NoObject(_))
        ));
    }

    #[tokio::test]
    async fn a_hang_lasts_until_cleared() {
        let b = one_site();
        let c = dial(&b).await;
        b.inject(at(Trigger::Always, FaultKind::Hang)).unwrap();
        let hung = tokio::time::timeout(Duration::from_millis(30), b.ping(c, "s")).await;
        assert!(hung.is_err());
        let b2 = b.clone();
        let call = tokio::spawn(async move { b2.ping(c, "s").await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        b.clear_faults();
        assert!(call.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_drop_closes_the_connection_and_a_redial_works() {
        let b = one_site();
        let c = dial(&b).await;
        b.inject(at(Trigger::Nth(1), FaultKind::Drop)).unwrap();
        assert_eq!(b.ping(c, "s").await, Err(BackendError::Closed));
        assert_eq!(b.ping(c, "s").await, Err(BackendError::Closed));
        let c2 = dial(&b).await;
        assert!(b.ping(c2, "s").await.is_ok());
        assert_eq!(b.dials("s"), 2);
    }

    #[tokio::test]
    async fn a_lost_reply_acts_then_closes_the_connection() {
        let b = one_site();
        let c = dial(&b).await;
        let f = b.inject(at(Trigger::Nth(1), FaultKind::LostReply)).unwrap();
        let mark = Mark {
            tag: "t".into(),
            uid: String::new(),
            created_at: None,
        };
        assert_eq!(
            b.define(c, "s", "vm", mark).await,
            Err(BackendError::Closed)
        );
        assert!(b.fired(f));
        // The define took effect; only its answer was lost, with the connection.
        assert!(b.world().sites["s"].instances.contains_key("vm"));
        assert_eq!(b.ping(c, "s").await, Err(BackendError::Closed));
    }

    #[tokio::test]
    async fn reachability_and_tokens_decide_dials() {
        let b = one_site();
        let c = dial(&b).await;
        b.set_reachability("s", Reachability::Refused).unwrap();
        assert_eq!(b.ping(c, "s").await, Err(BackendError::Closed));
        let (token, identity) = (initial_token("s"), initial_identity("s"));
        assert_eq!(
            b.dial("s", &token, &identity).await,
            Err(BackendError::Refused)
        );
        b.set_reachability("s", Reachability::BlackHole).unwrap();
        let silent =
            tokio::time::timeout(Duration::from_millis(30), b.dial("s", &token, &identity)).await;
        assert!(silent.is_err());
        b.set_reachability("s", Reachability::Up).unwrap();
        assert_eq!(
            b.dial("s", "wrong", &identity).await,
            Err(BackendError::AuthFailed)
        );
        // The identity is checked first, as a host key is before authentication.
        b.set_identity("s", "someone-else".into()).unwrap();
        for t in [token.as_str(), "wrong"] {
            assert_eq!(
                b.dial("s", t, &identity).await,
                Err(BackendError::HostKeyRejected)
            );
        }
        b.set_identity("s", identity.clone()).unwrap();
        assert!(b.dial("s", &token, &identity).await.is_ok());
    }

    #[tokio::test]
    async fn an_instance_boots_after_its_delay_unless_held() {
        let b = one_site();
        let c = dial(&b).await;
        let mark = Mark {
            tag: "t".into(),
            uid: "u".into(),
            created_at: Some(SystemTime::now()),
        };
        b.define(c, "s", "vm", mark).await.unwrap();
        b.create_disk(c, "s", "vm", 1 << 20).await.unwrap();
        b.create_seed(c, "s", "vm", &seed_volume("vm"), b"#cloud-config\n")
            .await
            .unwrap();
        b.hold_boot(true);
        b.start(c, "s", "vm").await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(b.addresses(c, "s", "vm").await.unwrap().is_empty());
        b.hold_boot(false);
        let addrs = b.addresses(c, "s", "vm").await.unwrap();
        assert!(matches!(addrs.as_slice(), [IpAddr::V4(ip)] if ip.octets()[..2] == [10, 77]));
        assert_eq!(
            b.volume_bytes("s", &seed_volume("vm")).unwrap(),
            b"#cloud-config\n"
        );
    }
}
