//! The simulated backend: locations ("sites") holding instances, their disks and seeds,
//! a shared base image, free capacity, reachability and credentials.
//!
//! Every procedure enters through `SimBackend::invoke`, the backend's one seam, which
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

use conformance::fixture::{BackendCall, FaultKind, FaultSpec, Power, Reachability, Trigger};
use tokio::time::Instant;

mod control;
mod procs;
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
    /// A start of an instance that already runs (refused, like any denial).
    Running(String),
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
            BackendError::Running(name) => write!(f, "operation denied: {name} is already running"),
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
    /// Whether its guest finished booting (the backend's own word, addresses aside).
    pub booted: bool,
    /// When the backend defined it (what `created-at=backend-reported` reports).
    pub defined_at: SystemTime,
    /// Whether an accepted undefine is still being carried out.
    pub removing: bool,
}

/// What a list entry reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The instance name.
    pub name: String,
    /// Its power state.
    pub power: Power,
    /// When the backend defined it.
    pub defined_at: SystemTime,
}

/// A 64-bit FNV-1a digest, as the backend reports for volume contents.
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// What separates the mark from the name in a backend name that carries its mark
/// (`<tag>~<uid>~<name>`, `gc-mark=name-prefix`); no name, tag or uid contains it.
pub const NAME_MARK_SEP: char = '~';

/// The instance name inside a backend name: the part after the last
/// [`NAME_MARK_SEP`], or the whole name when it carries no mark.
pub fn short_name(name: &str) -> &str {
    name.rsplit(NAME_MARK_SEP).next().unwrap_or(name)
}

/// The backend name of `name` carrying `mark` in its prefix.
pub fn name_with_mark(mark: &Mark, name: &str) -> String {
    let sep = NAME_MARK_SEP;
    format!("{}{sep}{}{sep}{name}", mark.tag, mark.uid)
}

/// The mark a backend name carries in its prefix, and the instance name; the mark is
/// `None` for a name without a prefix (or with one that does not parse).
pub fn mark_in_name(name: &str) -> (Option<Mark>, &str) {
    let mut parts = name.splitn(3, NAME_MARK_SEP);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(tag), Some(uid), Some(short)) if !tag.is_empty() => (
            Some(Mark {
                tag: tag.to_owned(),
                uid: uid.to_owned(),
                created_at: None,
            }),
            short,
        ),
        _ => (None, name),
    }
}

/// The disk volume name of an instance (named after its instance name, prefix or not).
pub fn disk_volume(name: &str) -> String {
    format!("{}-disk", short_name(name))
}

/// The seed volume name of an instance (named after its instance name, prefix or not).
pub fn seed_volume(name: &str) -> String {
    format!("{}-seed", short_name(name))
}

#[derive(Clone, Debug)]
struct Record {
    mark: Option<Mark>,
    defined_at: SystemTime,
    /// The disk size and seed bytes of an instance that keeps them inside its record
    /// (`secondary-resources=none`): no volume of its own.
    embedded: Option<(u64, Vec<u8>)>,
    /// Set when a deferred undefine was accepted: when the record goes.
    removing: Option<Instant>,
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
    /// Free bytes set from outside, with the bytes in use when they were set: what is
    /// made afterwards takes from them, what is removed gives back.
    free_override: Option<(u64, u64)>,
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
        let used = self.used();
        match self.free_override {
            Some((free, used_then)) => (free + used_then).saturating_sub(used),
            None => self.capacity.saturating_sub(used),
        }
    }

    /// Bytes the site's volumes and embedded parts take.
    fn used(&self) -> u64 {
        let embedded: u64 = self
            .instances
            .values()
            .filter_map(|r| r.embedded.as_ref())
            .map(|(disk, seed)| disk + seed.len() as u64)
            .sum();
        self.volumes.values().map(|v| v.size).sum::<u64>() + embedded
    }
}

struct World {
    sites: BTreeMap<String, Site>,
    boot_held: bool,
    boot_delay: Duration,
    next_ip: u32,
    /// Whether removing an instance removes its volumes too.
    cascade: bool,
    /// How long an accepted undefine takes to remove the record, if it is deferred.
    undefine_delay: Option<Duration>,
    /// Whether the backend keeps marks in instance names only.
    name_marks: bool,
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

    /// Carries out the deferred removals whose time came.
    fn remove_due(&mut self) {
        if self.undefine_delay.is_none() {
            return;
        }
        let now = Instant::now();
        let due: Vec<(String, String)> = self
            .sites
            .iter()
            .flat_map(|(site, s)| {
                s.instances
                    .iter()
                    .filter(|(_, r)| r.removing.is_some_and(|t| t <= now))
                    .map(|(name, _)| (site.clone(), name.clone()))
            })
            .collect();
        for (site, name) in due {
            self.remove_instance(&site, &name);
        }
    }

    /// Removes an instance record, and with cascading its volumes.
    fn remove_instance(&mut self, site: &str, name: &str) {
        let cascade = self.cascade;
        if let Some(s) = self.sites.get_mut(site) {
            s.instances.remove(name);
            if cascade && s.container {
                let short = short_name(name);
                s.volumes.retain(|_, v| {
                    v.instance.as_deref() != Some(short) || v.kind == VolumeKind::Image
                });
            }
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
    /// Removing an instance removes its disk and seed (`secondary-resources=cascaded`).
    pub cascade: bool,
    /// An undefine is accepted at once and takes effect this much later
    /// (`delete-return=early`); `None` removes the record before the call returns.
    pub undefine_delay: Option<Duration>,
    /// The backend has nowhere to keep a mark but the instance's name
    /// (`gc-mark=name-prefix`): a define keeps no mark, and planted instances carry
    /// theirs as a `<tag>~<uid>~` prefix.
    pub name_marks: bool,
}

impl Default for BackendConfig {
    fn default() -> Self {
        BackendConfig {
            sites: vec!["site-a".into(), "site-b".into()],
            capacity: 1 << 40,
            boot_delay: Duration::from_millis(5),
            latency: Duration::from_micros(200),
            cascade: false,
            undefine_delay: None,
            name_marks: false,
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
                    cascade: config.cascade,
                    undefine_delay: config.undefine_delay,
                    name_marks: config.name_marks,
                }),
                faults: Mutex::default(),
                released: tokio::sync::watch::Sender::new(0),
                latency: config.latency,
                trace: Mutex::default(),
                next_conn: AtomicU64::new(1),
            }),
        }
    }

    /// The world, with every deferred removal that fell due carried out first: however
    /// it is looked at, a removal accepted long enough ago has happened.
    fn world(&self) -> MutexGuard<'_, World> {
        let mut w = self.inner.world.lock().unwrap_or_else(|e| e.into_inner());
        w.remove_due();
        w
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
    let s = site_mut(w, site)?;
    let key = instance_key(s, name).ok_or_else(|| format!("no instance {name} at {site}"))?;
    Ok(s.instances.get_mut(&key).expect("found just now"))
}

/// The backend name of the instance named `name` (itself, or with a mark prefix).
fn instance_key(s: &Site, name: &str) -> Option<String> {
    if s.instances.contains_key(name) {
        return Some(name.to_owned());
    }
    s.instances.keys().find(|k| short_name(k) == name).cloned()
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
            instance: Some(short_name(owner).to_owned()),
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
