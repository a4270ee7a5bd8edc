//! The fault-schedule soak engine, shared by the `soak` bench (many seeded
//! schedules) and the `soak_replay` test (committed schedules, and a short run).
//!
//! A *schedule* is a short list of steps over three names: Create, Get, Delete,
//! ListByTag and a provider restart, each but the restart optionally preceded by
//! one fault armed at the backend seam of the fake libvirt host: a libvirt error
//! the provider must classify (busy, system error, internal error, access
//! denied, invalid argument, no domain, no storage volume), a hang, a dropped
//! connection, a lost reply, a daemon restart, or added latency.
//!
//! kvm2 runs against the in-memory fake through its production SSH dialer and an
//! in-process SSH server on loopback, as in the conformance fixture; one fake host
//! and SSH server per *lane* is reused for every schedule the lane runs (fresh
//! names and tag per schedule), and lanes run side by side so that the time a
//! step spends waiting out a hang overlaps with other lanes' work.
//!
//! After every step an oracle checks the result against the kinds the contract
//! allows for the fault that fired, and every success against the fake's own
//! inventory (read out of band). After every schedule the faults are cleared,
//! every name is deleted (a bounded number of tries) and the host must hold
//! nothing but its storage pool and the image cache. The engine lives here
//! rather than in the crate so that no soak code is built into the provider.

#![allow(dead_code)] // the bench and the test each use their own part of it

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conformance::{
    BoxFuture, CloudInit, CreateRequest, Ctx, Error, ErrorKind, Op as ContractOp, Provider,
    ProviderId,
};
use kvm2::config::{Config, DEFAULT_NAMESPACE, Timeouts};
use kvm2::fixture::Kvm2Fixture;
use kvm2::names::{image_marker, image_volume, overlay_volume, seed_volume, volume_owner};
use kvm2::xml::{Mark, parse_mark};
use kvm2::{Download, Failure, ImageSource, Kvm2, SshDialer};
use libvirt_fake::{DomainSnapshot, DomainState, FakeLibvirt, Fault, FaultHandle, FaultRule};
use libvirt_fake::{Procedure, VirError, code, domain};
use libvirt_ssh::server::{
    ChannelTarget, KeyKind, TestServer, TestServerOptions, generate_client_key,
};

const HOST: &str = "host-a";
const ZONE: &str = "zone-a";
const POOL: &str = "default";
const POOL_PATH: &str = "/var/lib/libvirt/images";
const PROVIDER: &str = "kvm2-soak";
/// Names per schedule.
pub const NAMES: usize = 3;
/// The most steps a generated schedule has.
pub const MAX_STEPS: usize = 10;
/// Each step's overall deadline; far above what any step needs, so only the
/// provider's own per-call limits end a hung call.
const STEP_DEADLINE: Duration = Duration::from_secs(10);
/// How long after a daemon restart the provider may still use its dead
/// connection (its keepalive notices in about three intervals).
const RESTART_NOTICED: Duration = Duration::from_secs(3);
/// Deletes tried per name when cleaning up after a schedule.
const CLEANUP_TRIES: usize = 5;

/// The provider's limits in the soak: short per-call limits so a hang costs
/// little, and a keepalive that notices a dead connection (after a daemon
/// restart) within a few hundred milliseconds.
pub fn soak_timeouts() -> Timeouts {
    Timeouts {
        dial: Duration::from_secs(5),
        rpc: Duration::from_millis(400),
        start: Duration::from_millis(400),
        upload: Duration::from_millis(400),
        create: Duration::from_secs(5),
        keepalive_interval: Duration::from_millis(100),
        keepalive_count: 2,
    }
}

// ----- schedules -----------------------------------------------------------

/// A seeded generator (SplitMix64): small, fast, and the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// What a step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Create(usize),
    Get(usize),
    Delete(usize),
    List,
    Restart,
}

/// One fault, armed just before a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultArm {
    /// `VIR_ERR_OPERATION_TIMEOUT` on the k-th call: a busy driver.
    Busy(u64),
    /// `VIR_ERR_SYSTEM_ERROR` on the k-th call.
    SystemError(u64),
    /// `VIR_ERR_INTERNAL_ERROR` on the k-th call.
    Internal(u64),
    /// `VIR_ERR_ACCESS_DENIED` on the k-th call.
    Denied(u64),
    /// `VIR_ERR_INVALID_ARG` on the k-th call.
    InvalidArg(u64),
    /// `VIR_ERR_NO_DOMAIN` on the first call of this procedure.
    NoDomain(Procedure),
    /// `VIR_ERR_NO_STORAGE_VOL` on the first call of this procedure.
    NoVolume(Procedure),
    /// The k-th call never answers.
    Hang(u64),
    /// The connection drops under the k-th call.
    Drop(u64),
    /// The k-th call takes effect, then the connection drops before its reply.
    LostReply(u64),
    /// The daemon restarts: connections dialled before are never answered again.
    DaemonRestart,
    /// Every call of the step gets this many milliseconds of round trip.
    Latency(u64),
    /// Part of an instance goes out of band before the step: its domain
    /// (destroyed and undefined) or its volumes (deleted).
    Vanish(Part, usize),
}

/// What of an instance a [`FaultArm::Vanish`] removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Domain,
    Volumes,
}

/// The fault kinds, in the order they are reported.
pub const KINDS: [&str; 13] = [
    "busy", "syserr", "internal", "denied", "invalid", "nodom", "novol", "hang", "drop", "lost",
    "restart", "latency", "vanish",
];

/// What the contract lets a fault cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A passing cause (busy, system or internal error, hang, dropped
    /// connection, lost reply, restarted daemon): Transient or success.
    Transient,
    /// The backend says the object is missing: NotFound-consistent results
    /// (Transient inside Create).
    Gone,
    /// A lasting refusal: Permanent or success.
    Permanent,
    /// Latency within every limit, or a part removed out of band before the
    /// step: exactly what the step gives without a fault on the host as it is.
    Benign,
}

impl FaultArm {
    pub fn kind(&self) -> &'static str {
        match self {
            FaultArm::Busy(_) => "busy",
            FaultArm::SystemError(_) => "syserr",
            FaultArm::Internal(_) => "internal",
            FaultArm::Denied(_) => "denied",
            FaultArm::InvalidArg(_) => "invalid",
            FaultArm::NoDomain(_) => "nodom",
            FaultArm::NoVolume(_) => "novol",
            FaultArm::Hang(_) => "hang",
            FaultArm::Drop(_) => "drop",
            FaultArm::LostReply(_) => "lost",
            FaultArm::DaemonRestart => "restart",
            FaultArm::Latency(_) => "latency",
            FaultArm::Vanish(..) => "vanish",
        }
    }

    pub fn class(&self) -> Class {
        match self {
            FaultArm::Busy(_)
            | FaultArm::SystemError(_)
            | FaultArm::Internal(_)
            | FaultArm::Hang(_)
            | FaultArm::Drop(_)
            | FaultArm::LostReply(_)
            | FaultArm::DaemonRestart => Class::Transient,
            FaultArm::NoDomain(_) | FaultArm::NoVolume(_) => Class::Gone,
            FaultArm::Denied(_) | FaultArm::InvalidArg(_) => Class::Permanent,
            FaultArm::Latency(_) | FaultArm::Vanish(..) => Class::Benign,
        }
    }

    /// Whether the fault is a libvirt error answered to one call.
    fn is_error(&self) -> bool {
        matches!(
            self,
            FaultArm::Busy(_)
                | FaultArm::SystemError(_)
                | FaultArm::Internal(_)
                | FaultArm::Denied(_)
                | FaultArm::InvalidArg(_)
                | FaultArm::NoDomain(_)
                | FaultArm::NoVolume(_)
        )
    }

    /// The rule that arms it at the fake's seam (none for a restart or latency).
    fn rule(&self) -> Option<FaultRule> {
        let err = |c, d, m: &str| Fault::Error(VirError::new(c, d, m));
        let nth = |k: u64, f| Some(FaultRule::nth_call(k, f).once());
        match self {
            FaultArm::Busy(k) => nth(*k, Fault::busy()),
            FaultArm::SystemError(k) => nth(
                *k,
                err(
                    code::SYSTEM_ERROR,
                    domain::QEMU,
                    "Unable to read from monitor: Connection reset by peer",
                ),
            ),
            FaultArm::Internal(k) => nth(
                *k,
                err(
                    code::INTERNAL_ERROR,
                    domain::QEMU,
                    "unexpected error in the driver",
                ),
            ),
            FaultArm::Denied(k) => nth(*k, Fault::access_denied()),
            FaultArm::InvalidArg(k) => nth(
                *k,
                err(code::INVALID_ARG, domain::NONE, "invalid argument in flags"),
            ),
            FaultArm::NoDomain(p) => Some(
                FaultRule::new(
                    libvirt_fake::Trigger::NthCallOf(*p, 1),
                    Fault::no_domain("x"),
                )
                .once(),
            ),
            FaultArm::NoVolume(p) => Some(
                FaultRule::new(
                    libvirt_fake::Trigger::NthCallOf(*p, 1),
                    Fault::no_storage_vol("x"),
                )
                .once(),
            ),
            FaultArm::Hang(k) => nth(*k, Fault::Hang),
            FaultArm::Drop(k) => nth(*k, Fault::DropConnection),
            FaultArm::LostReply(k) => nth(*k, Fault::LoseReply),
            FaultArm::DaemonRestart | FaultArm::Latency(_) | FaultArm::Vanish(..) => None,
        }
    }
}

impl fmt::Display for FaultArm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultArm::Busy(k)
            | FaultArm::SystemError(k)
            | FaultArm::Internal(k)
            | FaultArm::Denied(k)
            | FaultArm::InvalidArg(k)
            | FaultArm::Hang(k)
            | FaultArm::Drop(k)
            | FaultArm::LostReply(k) => write!(f, "{}@{k}", self.kind()),
            FaultArm::NoDomain(p) | FaultArm::NoVolume(p) => {
                write!(f, "{}:{}", self.kind(), p.name())
            }
            FaultArm::DaemonRestart => f.write_str("restart"),
            FaultArm::Latency(ms) => write!(f, "latency={ms}"),
            FaultArm::Vanish(Part::Domain, i) => write!(f, "vanish:dom:{i}"),
            FaultArm::Vanish(Part::Volumes, i) => write!(f, "vanish:vol:{i}"),
        }
    }
}

/// One step: an operation and the fault armed before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub op: Op,
    pub fault: Option<FaultArm>,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Op::Create(i) => write!(f, "C{i}")?,
            Op::Get(i) => write!(f, "G{i}")?,
            Op::Delete(i) => write!(f, "D{i}")?,
            Op::List => f.write_str("L")?,
            Op::Restart => f.write_str("R")?,
        }
        if let Some(fault) = &self.fault {
            write!(f, "+{fault}")?;
        }
        Ok(())
    }
}

/// A schedule: its steps, written one line as `C0+busy@3 G0 D1+nodom:DomainLookupByName R L`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Schedule {
    pub steps: Vec<Step>,
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, s) in self.steps.iter().enumerate() {
            if n > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Schedule {
    type Err = String;

    fn from_str(line: &str) -> Result<Schedule, String> {
        let mut steps = Vec::new();
        for word in line.split_whitespace() {
            let (op, fault) = match word.split_once('+') {
                Some((o, f)) => (o, Some(f)),
                None => (word, None),
            };
            let index = |s: &str| -> Result<usize, String> {
                s.parse::<usize>()
                    .ok()
                    .filter(|i| *i < NAMES)
                    .ok_or_else(|| format!("bad name index in {word:?}"))
            };
            let op = match op.split_at_checked(1) {
                Some(("C", i)) => Op::Create(index(i)?),
                Some(("G", i)) => Op::Get(index(i)?),
                Some(("D", i)) => Op::Delete(index(i)?),
                Some(("L", "")) => Op::List,
                Some(("R", "")) => Op::Restart,
                _ => return Err(format!("bad step {word:?}")),
            };
            let fault = fault.map(|f| parse_fault(f, word)).transpose()?;
            steps.push(Step { op, fault });
        }
        Ok(Schedule { steps })
    }
}

fn parse_fault(f: &str, word: &str) -> Result<FaultArm, String> {
    let bad = || format!("bad fault in {word:?}");
    if f == "restart" {
        return Ok(FaultArm::DaemonRestart);
    }
    if let Some(ms) = f.strip_prefix("latency=") {
        return ms.parse().map(FaultArm::Latency).map_err(|_| bad());
    }
    if let Some(rest) = f.strip_prefix("vanish:") {
        let (part, i) = rest.split_once(':').ok_or_else(bad)?;
        let i: usize = i.parse().ok().filter(|i| *i < NAMES).ok_or_else(bad)?;
        return match part {
            "dom" => Ok(FaultArm::Vanish(Part::Domain, i)),
            "vol" => Ok(FaultArm::Vanish(Part::Volumes, i)),
            _ => Err(bad()),
        };
    }
    if let Some((kind, proc_name)) = f.split_once(':') {
        let p = Procedure::from_name(proc_name).ok_or_else(bad)?;
        return match kind {
            "nodom" => Ok(FaultArm::NoDomain(p)),
            "novol" => Ok(FaultArm::NoVolume(p)),
            _ => Err(bad()),
        };
    }
    let (kind, k) = f.split_once('@').ok_or_else(bad)?;
    let k: u64 = k.parse().ok().filter(|k| *k >= 1).ok_or_else(bad)?;
    Ok(match kind {
        "busy" => FaultArm::Busy(k),
        "syserr" => FaultArm::SystemError(k),
        "internal" => FaultArm::Internal(k),
        "denied" => FaultArm::Denied(k),
        "invalid" => FaultArm::InvalidArg(k),
        "hang" => FaultArm::Hang(k),
        "drop" => FaultArm::Drop(k),
        "lost" => FaultArm::LostReply(k),
        _ => return Err(bad()),
    })
}

/// The procedures a "missing" answer is plausible for, per operation.
fn gone_targets(op: Op) -> (&'static [&'static str], &'static [&'static str]) {
    match op {
        Op::Create(_) => (
            &[
                "DomainLookupByName",
                "DomainGetMetadata",
                "DomainGetState",
                "DomainCreateWithFlags",
                "DomainSetMetadata",
            ],
            &["StorageVolLookupByName", "StorageVolGetPath"],
        ),
        Op::Get(_) => (
            &[
                "DomainLookupByName",
                "DomainGetMetadata",
                "DomainGetState",
                "DomainInterfaceAddresses",
            ],
            &["StorageVolLookupByName"],
        ),
        Op::Delete(_) => (
            &[
                "DomainLookupByName",
                "DomainGetMetadata",
                "DomainDestroy",
                "DomainUndefineFlags",
            ],
            &["StorageVolLookupByName", "StorageVolDelete"],
        ),
        Op::List | Op::Restart => (
            &["DomainGetMetadata", "DomainGetState"],
            &["StorageVolLookupByName"],
        ),
    }
}

/// Roughly how many backend calls an operation makes, so a k-th-call fault
/// usually lands inside it (sometimes past its end: armed, not fired).
fn calls_of(op: Op) -> u64 {
    match op {
        Op::Create(_) => 18,
        Op::Get(_) => 6,
        Op::Delete(_) => 9,
        Op::List => 6,
        Op::Restart => 1,
    }
}

/// The schedule number `index` of the run seeded with `seed`.
pub fn generate(seed: u64, index: u64) -> Schedule {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let len = 1 + rng.below(MAX_STEPS as u64) as usize;
    let mut steps = Vec::with_capacity(len);
    for _ in 0..len {
        let name = rng.below(NAMES as u64) as usize;
        let op = match rng.below(11) {
            0..=2 => Op::Create(name),
            3..=5 => Op::Get(name),
            6..=7 => Op::Delete(name),
            8..=9 => Op::List,
            _ => Op::Restart,
        };
        let fault = if op == Op::Restart || rng.below(10) < 4 {
            None
        } else {
            let k = 1 + rng.below(calls_of(op));
            let (doms, vols) = gone_targets(op);
            let pick = |rng: &mut Rng, names: &[&str]| {
                Procedure::from_name(names[rng.below(names.len() as u64) as usize])
                    .expect("a procedure the fake knows")
            };
            let vanish = |rng: &mut Rng| {
                let part = if rng.below(2) == 0 {
                    Part::Domain
                } else {
                    Part::Volumes
                };
                let i = match op {
                    Op::Create(i) | Op::Get(i) | Op::Delete(i) => i,
                    Op::List | Op::Restart => rng.below(NAMES as u64) as usize,
                };
                FaultArm::Vanish(part, i)
            };
            Some(match rng.below(KINDS.len() as u64) {
                // A "missing" answer for an object that exists is a lie a Delete
                // would act on (it would remove the rest and leave the object);
                // libvirt never tells it. Delete meets missing parts for real.
                5 | 6 if matches!(op, Op::Delete(_)) => vanish(&mut rng),
                12 => vanish(&mut rng),
                0 => FaultArm::Busy(k),
                1 => FaultArm::SystemError(k),
                2 => FaultArm::Internal(k),
                3 => FaultArm::Denied(k),
                4 => FaultArm::InvalidArg(k),
                5 => FaultArm::NoDomain(pick(&mut rng, doms)),
                6 => FaultArm::NoVolume(pick(&mut rng, vols)),
                7 => FaultArm::Hang(k),
                8 => FaultArm::Drop(k),
                9 => FaultArm::LostReply(k),
                10 => FaultArm::DaemonRestart,
                _ => FaultArm::Latency(1 + rng.below(20)),
            })
        };
        steps.push(Step { op, fault });
    }
    Schedule { steps }
}

// ----- one lane: a fake host, its SSH server, the provider ----------------

/// kvm2 needs no image in the soak (the host's cache is seeded); should it look
/// for one anyway, the download fails at once as a passing failure, and nothing
/// leaves the machine.
struct NoImages;

impl ImageSource for NoImages {
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Download, Failure>> {
        Box::pin(async move {
            Err(Failure::NotYet(format!(
                "the soak serves no images ({url} not fetched)"
            )))
        })
    }
}

/// One fake host behind an in-process SSH server, and the provider on it.
pub struct Lane {
    pub number: usize,
    fake: FakeLibvirt,
    _ssh: TestServer,
    _dir: tempfile::TempDir,
    config: Config,
    dialer: Arc<SshDialer>,
    provider: Kvm2,
    /// Schedules run on this lane, for fresh names.
    runs: u64,
    baseline_dirs: Vec<String>,
}

async fn seed_host(fake: &FakeLibvirt, config: &Config) {
    fake.add_pool(POOL, POOL_PATH, 200 << 30);
    let c = fake.connect().expect("a side connection to the fake");
    c.auth_list().await.expect("auth list");
    c.open(Some("qemu:///system"), 0).await.expect("open");
    let pool = c.storage_pool_lookup_by_name(POOL).await.expect("the pool");
    let img = &config.images[0];
    let base = format!(
        "<volume><name>{}</name><capacity unit='GiB'>2</capacity><allocation unit='MiB'>300</allocation><target><format type='qcow2'/></target></volume>",
        image_volume(img)
    );
    let marker = format!(
        "<volume><name>{}</name><capacity unit='bytes'>64</capacity><target><format type='raw'/></target></volume>",
        image_marker(img)
    );
    for xml in [base, marker] {
        c.storage_vol_create_xml(&pool, &xml, 0)
            .await
            .expect("seed the image cache");
    }
    c.close();
}

impl Lane {
    /// A fresh host with its pool and image cache, an SSH server in front of it,
    /// and a provider configured with the soak's short limits.
    pub async fn start(number: usize) -> Lane {
        let dir = tempfile::tempdir().expect("a directory for the lane's keys");
        let fake = FakeLibvirt::with_config(libvirt_fake::HostConfig {
            hostname: format!("{HOST}.fake"),
            ..Default::default()
        });
        let mut config = Kvm2Fixture::default().config();
        config.name = PROVIDER.into();
        config.hosts.truncate(1);
        config.placement.retain(|_, h| h == HOST);
        config.timeouts = soak_timeouts();
        seed_host(&fake, &config).await;
        let served = fake.clone();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let ssh = TestServer::start(TestServerOptions {
            authorized: vec![public],
            channel: ChannelTarget::Handler(Arc::new(move |stream| {
                let fake = served.clone();
                Box::pin(async move {
                    let _ = fake.serve(stream).await;
                })
            })),
        })
        .await;
        let known: PathBuf = dir.path().join("known_hosts");
        std::fs::write(&known, format!("{}\n", ssh.known_hosts_line())).expect("known_hosts");
        let host = &mut config.hosts[0];
        host.address = "127.0.0.1".into();
        host.port = ssh.port();
        host.key_file = Some(key);
        host.known_hosts_file = Some(known);
        let dialer = Arc::new(SshDialer {
            handshake_timeout: config.timeouts.dial,
        });
        let provider = new_provider(&config, &dialer);
        let baseline_dirs = fake.leftover_directories();
        Lane {
            number,
            fake,
            _ssh: ssh,
            _dir: dir,
            config,
            dialer,
            provider,
            runs: 0,
            baseline_dirs,
        }
    }

    /// Runs one schedule with fresh names and checks every step and the host
    /// afterwards.
    pub async fn run(&mut self, schedule: &Schedule) -> Outcome {
        self.runs += 1;
        let stem = format!("soak{}x{}", self.number, self.runs);
        let names: Vec<String> = (0..NAMES).map(|i| format!("{stem}n{i}")).collect();
        let mut out = Outcome::default();
        let mut run = Run {
            lane: self,
            tag: stem.clone(),
            names,
            out: &mut out,
            restart_pending: None,
            hung: false,
            volumes_removed: [false; NAMES],
        };
        for (n, step) in schedule.steps.iter().enumerate() {
            run.step(n, step).await;
        }
        run.cleanup().await;
        out
    }

    fn ids(&self, names: &[String]) -> Vec<ProviderId> {
        names.iter().map(|n| kvm2::id::format_id(HOST, n)).collect()
    }
}

fn new_provider(config: &Config, dialer: &Arc<SshDialer>) -> Kvm2 {
    let p = Kvm2::new(config.clone(), dialer.clone()).with_image_source(Arc::new(NoImages));
    p.set_verbosity(0);
    p
}

/// What one schedule did and found.
#[derive(Default, Debug)]
pub struct Outcome {
    pub steps: u64,
    pub armed: BTreeMap<&'static str, u64>,
    pub fired: BTreeMap<&'static str, u64>,
    /// Errors of a kind the contract does not allow for the fault that fired.
    pub wrong_kinds: Vec<String>,
    /// Successes (or NotFound) that the host's inventory contradicts, and errors
    /// without the provider's name or operation.
    pub false_claims: Vec<String>,
    /// What the host still held after the schedule's cleanup.
    pub leaks: Vec<String>,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        !self.wrong_kinds.is_empty() || !self.false_claims.is_empty() || !self.leaks.is_empty()
    }

    pub fn problems(&self) -> Vec<String> {
        let mut all = Vec::new();
        all.extend(self.wrong_kinds.iter().map(|p| format!("wrong kind: {p}")));
        all.extend(
            self.false_claims
                .iter()
                .map(|p| format!("false claim: {p}")),
        );
        all.extend(self.leaks.iter().map(|p| format!("leak: {p}")));
        all
    }
}

struct Run<'a> {
    lane: &'a mut Lane,
    tag: String,
    names: Vec<String>,
    out: &'a mut Outcome,
    /// A daemon restart whose dead connection the provider may still hold: until
    /// it dials again, Transient is allowed (the dial count at the restart, and
    /// when it was).
    restart_pending: Option<(u64, Instant)>,
    /// A call hangs on the provider's connection (it holds a slot there until the
    /// connection goes).
    hung: bool,
    /// Names whose volumes were removed out of band under their domain, until a
    /// Delete of the name succeeds: a Create then finds the marked domain and
    /// either returns it when it runs (its guest keeps its disks open, so the
    /// volume check after Create does not apply) or fails Transient starting it
    /// (CRE-BACKEND-NOTFOUND allows that).
    volumes_removed: [bool; NAMES],
}

fn kind_name(e: &Error) -> &'static str {
    e.kind().name()
}

/// The mark a domain carries in kvm2's namespace (live first, then persistent).
fn mark_of(d: &DomainSnapshot) -> Option<Mark> {
    d.live_metadata
        .iter()
        .flatten()
        .chain(d.config_metadata.iter())
        .find(|m| m.uri == DEFAULT_NAMESPACE)
        .and_then(|m| parse_mark(&m.xml).ok())
}

impl Run<'_> {
    fn fake(&self) -> &FakeLibvirt {
        &self.lane.fake
    }

    /// What of `name` the host holds: its domain, volumes and NVRAM file.
    fn remains_of(&self, name: &str) -> Vec<String> {
        let mut left = Vec::new();
        if self.fake().domain(name).is_some() {
            left.push(format!("domain {name}"));
        }
        for v in self.fake().volumes(POOL).unwrap_or_default() {
            if volume_owner(&v.handle.name).is_some_and(|(o, _)| o == name) {
                left.push(format!("volume {}", v.handle.name));
            }
        }
        for f in self.fake().nvram_files() {
            if f.rsplit('/').next() == Some(&format!("{name}_VARS.fd")) {
                left.push(format!("nvram {f}"));
            }
        }
        left
    }

    /// The schedule's instances the host holds with the schedule's tag.
    fn truth_listed(&self) -> BTreeSet<String> {
        self.names
            .iter()
            .filter(|n| {
                self.fake()
                    .domain(n)
                    .and_then(|d| mark_of(&d))
                    .is_some_and(|m| m.tag == self.tag)
            })
            .cloned()
            .collect()
    }

    fn request(&self, i: usize) -> CreateRequest {
        let name = &self.names[i];
        CreateRequest {
            name: name.clone(),
            uid: format!("uid-{name}"),
            tag: self.tag.clone(),
            placement: ZONE.into(),
            image: None,
            cloud_init: CloudInit::new(format!("#cloud-config\nhostname: {name}\n")),
        }
    }

    async fn step(&mut self, n: usize, step: &Step) {
        self.out.steps += 1;
        let fake = self.fake().clone();
        let mut vanished = false;
        if let Some(FaultArm::Vanish(part, i)) = &step.fault {
            vanished = self.vanish(*part, *i).await;
        }
        fake.trace().clear_calls();
        let dials_before = fake.trace().dial_count();
        let mut handle: Option<FaultHandle> = None;
        if let Some(f) = &step.fault {
            *self.out.armed.entry(f.kind()).or_default() += 1;
            match f {
                FaultArm::DaemonRestart => {
                    fake.restart_daemon();
                    self.restart_pending = Some((dials_before, Instant::now()));
                }
                FaultArm::Latency(ms) => fake.set_latency(Duration::from_millis(*ms)),
                FaultArm::Vanish(..) => {}
                other => {
                    handle = Some(
                        fake.faults()
                            .add(other.rule().expect("every other fault has a rule")),
                    )
                }
            }
        }
        // A restarted daemon lingers on the provider's old connection until its
        // keepalive gives up and the provider dials again: while it may, any step
        // may fail Transient, whatever else was armed; but not for longer than
        // the keepalive needs to notice, with a wide margin.
        let lingering = self
            .restart_pending
            .is_some_and(|(_, at)| at.elapsed() < RESTART_NOTICED);
        let ids = self.lane.ids(&self.names);
        let p = self.lane.provider.clone();
        let ctx = Ctx::with_timeout(STEP_DEADLINE);
        let result: StepResult = match step.op {
            Op::Create(i) => {
                let req = self.request(i);
                StepResult::Create(p.create(&ctx, &req).await)
            }
            Op::Get(i) => StepResult::Get(p.get(&ctx, &ids[i]).await),
            Op::Delete(i) => StepResult::Delete(p.delete(&ctx, &ids[i]).await),
            Op::List => StepResult::List(p.list_by_tag(&ctx, &self.tag).await),
            Op::Restart => {
                self.lane.provider = new_provider(&self.lane.config, &self.lane.dialer);
                self.hung = false;
                StepResult::Restarted
            }
        };
        fake.faults().clear();
        fake.set_latency(Duration::ZERO);
        let calls = fake.trace().calls().len();
        let fired = match (&step.fault, &handle) {
            (Some(FaultArm::Vanish(..)), _) => vanished,
            (Some(_), Some(h)) => h.fired(),
            (Some(_), None) => calls > 0,
            (None, _) => false,
        };
        if let (true, Some(f)) = (fired, &step.fault) {
            *self.out.fired.entry(f.kind()).or_default() += 1;
            if matches!(f, FaultArm::Hang(_)) {
                self.hung = true;
            }
        }
        if self
            .restart_pending
            .is_some_and(|(dials, _)| fake.trace().dial_count() > dials)
        {
            self.restart_pending = None;
        }
        let class = match &step.fault {
            Some(f) if fired => Some(f.class()),
            _ => None,
        };
        let at = format!("step {n} {step}");
        self.judge(&at, step, class, lingering, result);
    }

    /// The oracle for one step.
    fn judge(
        &mut self,
        at: &str,
        step: &Step,
        class: Option<Class>,
        lingering: bool,
        result: StepResult,
    ) {
        let transient_ok = lingering || matches!(class, Some(Class::Transient));
        let permanent_ok = matches!(class, Some(Class::Permanent));
        let gone = matches!(class, Some(Class::Gone));
        // An error code answered to one metadata read makes a listing skip that
        // domain (LST-UNREADABLE), so one instance may be missing from it.
        let error_fired = class.is_some()
            && step.fault.as_ref().is_some_and(FaultArm::is_error)
            && !matches!(class, Some(Class::Benign));
        let mut wrong = Vec::new();
        let mut false_claims = Vec::new();
        let check_err = |e: &Error, op: ContractOp, false_claims: &mut Vec<String>| {
            if e.provider() != PROVIDER || e.op() != op {
                false_claims.push(format!(
                    "{at}: error names provider {:?} and operation {}, not {PROVIDER:?} and {op}",
                    e.provider(),
                    e.op()
                ));
            }
        };
        match result {
            StepResult::Create(r) => {
                let Op::Create(i) = step.op else {
                    unreachable!()
                };
                let name = &self.names[i];
                match r {
                    Ok(id) => {
                        if id != kvm2::id::format_id(HOST, name) {
                            false_claims.push(format!("{at}: Create returned ID {id}"));
                        }
                        match self.fake().domain(name) {
                            None => false_claims.push(format!("{at}: Create succeeded, no domain")),
                            Some(d) => {
                                if d.state != DomainState::Running {
                                    false_claims.push(format!(
                                        "{at}: Create succeeded, domain is {:?}",
                                        d.state
                                    ));
                                }
                                match mark_of(&d) {
                                    Some(m)
                                        if m.tag == self.tag && m.uid == format!("uid-{name}") => {}
                                    m => false_claims.push(format!(
                                        "{at}: Create succeeded, domain mark is {m:?}"
                                    )),
                                }
                            }
                        }
                        let vols: Vec<String> = self
                            .fake()
                            .volumes(POOL)
                            .unwrap_or_default()
                            .into_iter()
                            .map(|v| v.handle.name)
                            .collect();
                        for v in [overlay_volume(name), seed_volume(name)] {
                            if !vols.contains(&v) && !self.volumes_removed[i] {
                                false_claims
                                    .push(format!("{at}: Create succeeded, volume {v} missing"));
                            }
                        }
                    }
                    Err(e) => {
                        check_err(&e, ContractOp::Create, &mut false_claims);
                        let ok = match e.kind() {
                            // Never NotFound from Create; a missing answer inside
                            // Create, or a part of the instance removed out of
                            // band, is Transient unless Create recovers
                            // (CRE-BACKEND-NOTFOUND).
                            ErrorKind::Transient => transient_ok || gone || self.volumes_removed[i],
                            ErrorKind::Permanent => permanent_ok,
                            ErrorKind::NotFound | ErrorKind::QuotaExceeded(_) => false,
                        };
                        if !ok {
                            wrong.push(format!("{at}: Create failed {}: {}", kind_name(&e), e));
                        }
                    }
                }
            }
            StepResult::Get(r) => {
                let Op::Get(i) = step.op else { unreachable!() };
                let name = &self.names[i];
                let present = self.fake().domain(name).and_then(|d| mark_of(&d)).is_some();
                match r {
                    Ok(inst) => {
                        let want_id = kvm2::id::format_id(HOST, name);
                        if inst.id != want_id
                            || &inst.name != name
                            || inst.tag != self.tag
                            || inst.uid != format!("uid-{name}")
                        {
                            false_claims.push(format!("{at}: Get returned {inst:?}"));
                        }
                        if !present {
                            false_claims.push(format!("{at}: Get succeeded, no domain"));
                        }
                        if inst.state == conformance::State::Running && inst.ipv4.is_none() {
                            false_claims.push(format!("{at}: Running without an address"));
                        }
                    }
                    Err(e) => {
                        check_err(&e, ContractOp::Get, &mut false_claims);
                        let ok = match e.kind() {
                            // NotFound only when the host holds no such instance,
                            // or the backend said so (GET-BUSY: never for a busy
                            // or unreachable backend).
                            ErrorKind::NotFound => !present || gone,
                            ErrorKind::Transient => transient_ok,
                            ErrorKind::Permanent => permanent_ok,
                            ErrorKind::QuotaExceeded(_) => false,
                        };
                        if !ok {
                            let truth = if present { "present" } else { "absent" };
                            wrong.push(format!(
                                "{at}: Get failed {} with the instance {truth}: {}",
                                kind_name(&e),
                                e
                            ));
                        }
                    }
                }
            }
            StepResult::Delete(r) => {
                let Op::Delete(i) = step.op else {
                    unreachable!()
                };
                let name = self.names[i].clone();
                match r {
                    Ok(()) => {
                        // A backend that says a part is missing is believed
                        // (DEL-PARTIAL); the cleanup's Deletes settle it.
                        let left = self.remains_of(&name);
                        if !gone && !left.is_empty() {
                            false_claims
                                .push(format!("{at}: Delete succeeded, the host holds {left:?}"));
                        }
                        if left.is_empty() {
                            self.volumes_removed[i] = false;
                        }
                    }
                    Err(e) => {
                        check_err(&e, ContractOp::Delete, &mut false_claims);
                        // Delete never returns NotFound (DEL-IDEMPOTENT) and
                        // tolerates missing parts (DEL-PARTIAL).
                        let ok = match e.kind() {
                            ErrorKind::Transient => transient_ok,
                            ErrorKind::Permanent => permanent_ok,
                            ErrorKind::NotFound | ErrorKind::QuotaExceeded(_) => false,
                        };
                        if !ok {
                            wrong.push(format!("{at}: Delete failed {}: {}", kind_name(&e), e));
                        }
                    }
                }
            }
            StepResult::List(r) => match r {
                Ok(l) => {
                    let truth = self.truth_listed();
                    let listed: BTreeSet<String> =
                        l.instances.iter().map(|x| x.name.clone()).collect();
                    if listed.len() != l.instances.len() {
                        false_claims.push(format!("{at}: a name listed twice: {:?}", l.instances));
                    }
                    if !l.unreachable.is_empty() {
                        false_claims.push(format!(
                            "{at}: unreachable named with list-partial=fail-whole: {:?}",
                            l.unreachable
                        ));
                    }
                    for x in &l.instances {
                        if x.tag != self.tag
                            || x.uid != format!("uid-{}", x.name)
                            || x.id != kvm2::id::format_id(HOST, &x.name)
                        {
                            false_claims.push(format!("{at}: listed {x:?}"));
                        }
                    }
                    let extra: Vec<_> = listed.difference(&truth).collect();
                    let missing: Vec<_> = truth.difference(&listed).collect();
                    let missing_ok = if error_fired { 1 } else { 0 };
                    if !extra.is_empty() || missing.len() > missing_ok {
                        false_claims
                            .push(format!("{at}: listed {listed:?}, the host holds {truth:?}"));
                    }
                }
                Err(e) => {
                    check_err(&e, ContractOp::ListByTag, &mut false_claims);
                    let ok = match e.kind() {
                        ErrorKind::Transient => transient_ok,
                        ErrorKind::Permanent => permanent_ok,
                        ErrorKind::NotFound | ErrorKind::QuotaExceeded(_) => false,
                    };
                    if !ok {
                        wrong.push(format!("{at}: ListByTag failed {}: {}", kind_name(&e), e));
                    }
                }
            },
            StepResult::Restarted => {}
        }
        self.out.wrong_kinds.extend(wrong);
        self.out.false_claims.extend(false_claims);
    }

    /// Removes part of instance `i` out of band; whether there was anything to remove.
    async fn vanish(&mut self, part: Part, i: usize) -> bool {
        let name = self.names[i].clone();
        let fake = self.fake().clone();
        match part {
            Part::Domain => {
                if fake.domain(&name).is_none() {
                    return false;
                }
                let c = fake.connect().expect("a side connection to the fake");
                c.auth_list().await.expect("auth list");
                c.open(Some("qemu:///system"), 0).await.expect("open");
                let d = c
                    .domain_lookup_by_name(&name)
                    .await
                    .expect("the domain to remove");
                let _ = c.domain_destroy(&d).await;
                c.domain_undefine_flags(&d, libvirt_fake::flags::UNDEFINE_NVRAM)
                    .await
                    .expect("undefine out of band");
                c.close();
                true
            }
            Part::Volumes => {
                let mut any = false;
                for v in [overlay_volume(&name), seed_volume(&name)] {
                    any |= fake.remove_volume(POOL, &v);
                }
                if any && fake.domain(&name).is_some() {
                    self.volumes_removed[i] = true;
                }
                any
            }
        }
    }

    /// Clears every fault, deletes every name (a few tries each), then takes the
    /// host's inventory: it must hold no domain, no NVRAM file and no volume but
    /// the image cache's, and no pool or directory beyond the seeded ones.
    async fn cleanup(&mut self) {
        let fake = self.fake().clone();
        fake.faults().clear();
        fake.set_latency(Duration::ZERO);
        if self.hung {
            // Hung calls hold their connection's slots until it goes: a fresh
            // provider (its old connections close with it) releases them.
            self.lane.provider = new_provider(&self.lane.config, &self.lane.dialer);
            self.hung = false;
        }
        let ids = self.lane.ids(&self.names);
        for id in &ids {
            let mut last = None;
            for _ in 0..CLEANUP_TRIES {
                let ctx = Ctx::with_timeout(STEP_DEADLINE);
                match self.lane.provider.delete(&ctx, id).await {
                    Ok(()) => {
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            if let Some(e) = last {
                self.out.leaks.push(format!(
                    "cleanup Delete of {id} failed {CLEANUP_TRIES} times, last {}: {e}",
                    kind_name(&e)
                ));
            }
        }
        let img = &self.lane.config.images[0];
        let cache = [image_volume(img), image_marker(img)];
        let mut left = Vec::new();
        for d in fake.domains() {
            left.push(format!("domain {}", d.handle.name));
        }
        for v in fake.volumes(POOL).unwrap_or_default() {
            if !cache.contains(&v.handle.name) {
                left.push(format!("volume {}", v.handle.name));
            }
        }
        for f in fake.nvram_files() {
            left.push(format!("nvram {f}"));
        }
        if fake.pools() != [POOL.to_owned()] {
            left.push(format!("pools {:?}", fake.pools()));
        }
        let dirs = fake.leftover_directories();
        if dirs != self.lane.baseline_dirs {
            left.push(format!("directories {dirs:?}"));
        }
        let vols: Vec<String> = fake
            .volumes(POOL)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.handle.name)
            .collect();
        for c in &cache {
            if !vols.contains(c) {
                left.push(format!("the image cache lost {c}"));
            }
        }
        if !left.is_empty() {
            self.out
                .leaks
                .push(format!("after the cleanup the host holds {left:?}"));
            // Scrub, so the next schedule on this lane starts clean.
            for d in fake.domains() {
                fake.remove_domain(&d.handle.name);
            }
            for v in fake.volumes(POOL).unwrap_or_default() {
                if !cache.contains(&v.handle.name) {
                    fake.remove_volume(POOL, &v.handle.name);
                }
            }
        }
        if let Err(e) = fake.check_invariants() {
            self.out.leaks.push(format!("fake invariants broken: {e}"));
        }
    }
}

enum StepResult {
    Create(conformance::Result<ProviderId>),
    Get(conformance::Result<conformance::Instance>),
    Delete(conformance::Result<()>),
    List(conformance::Result<conformance::Listing>),
    Restarted,
}

// ----- shrinking -----------------------------------------------------------

/// Shrinks a failing schedule greedily: drop a step, or the fault of a step,
/// while the schedule still fails; at most `budget` runs. Returns the smallest
/// failing schedule found and its outcome (`None` when the original did not
/// fail again).
pub async fn shrink(
    lane: &mut Lane,
    schedule: &Schedule,
    budget: usize,
) -> Option<(Schedule, Outcome)> {
    let first = lane.run(schedule).await;
    if !first.failed() {
        return None;
    }
    let mut best = (schedule.clone(), first);
    let mut runs = 1;
    loop {
        let mut progressed = false;
        let mut candidates = Vec::new();
        for j in (0..best.0.steps.len()).rev() {
            let mut c = best.0.clone();
            c.steps.remove(j);
            candidates.push(c);
        }
        for j in 0..best.0.steps.len() {
            if best.0.steps[j].fault.is_some() {
                let mut c = best.0.clone();
                c.steps[j].fault = None;
                candidates.push(c);
            }
        }
        for c in candidates {
            if runs >= budget {
                return Some(best);
            }
            runs += 1;
            let o = lane.run(&c).await;
            if o.failed() {
                best = (c, o);
                progressed = true;
                break;
            }
        }
        if !progressed {
            return Some(best);
        }
    }
}

// ----- a whole soak ----------------------------------------------------------

/// What a soak runs.
#[derive(Clone, Debug)]
pub struct Options {
    pub seed: u64,
    /// Schedules to run (at most).
    pub schedules: u64,
    /// Time budget: no schedule starts after it.
    pub seconds: Option<f64>,
    /// Lanes run side by side.
    pub lanes: usize,
    /// Failures shrunk (the rest are reported as found).
    pub shrink_failures: usize,
}

/// One failing schedule: where it came from and what it did.
#[derive(Debug)]
pub struct Failed {
    pub seed: u64,
    pub index: u64,
    pub schedule: Schedule,
    pub problems: Vec<String>,
    /// The shrunk schedule and its problems, when shrinking reproduced it.
    pub shrunk: Option<(Schedule, Vec<String>)>,
}

/// A soak's totals.
#[derive(Debug, Default)]
pub struct Summary {
    pub schedules: u64,
    pub steps: u64,
    pub elapsed: Duration,
    pub armed: BTreeMap<&'static str, u64>,
    pub fired: BTreeMap<&'static str, u64>,
    pub wrong_kinds: u64,
    pub false_claims: u64,
    pub leaks: u64,
    pub failures: Vec<Failed>,
}

impl Summary {
    fn add(&mut self, o: &Outcome) {
        self.schedules += 1;
        self.steps += o.steps;
        for (k, n) in &o.armed {
            *self.armed.entry(k).or_default() += n;
        }
        for (k, n) in &o.fired {
            *self.fired.entry(k).or_default() += n;
        }
        self.wrong_kinds += o.wrong_kinds.len() as u64;
        self.false_claims += o.false_claims.len() as u64;
        self.leaks += o.leaks.len() as u64;
    }

    pub fn clean(&self) -> bool {
        self.wrong_kinds == 0 && self.false_claims == 0 && self.leaks == 0
    }

    /// The report: totals, faults per kind, and every failure with its seed and
    /// (shrunk) schedule in the form the replay test reads.
    pub fn print(&self, opts: &Options) {
        let secs = self.elapsed.as_secs_f64();
        println!(
            "soak: kvm2 on the fake libvirt behind SSH, seed {}, {} lanes",
            opts.seed, opts.lanes
        );
        println!(
            "schedules {}  steps {}  seconds {:.1}  schedules/s {:.1}  steps/s {:.1}",
            self.schedules,
            self.steps,
            secs,
            self.schedules as f64 / secs.max(1e-9),
            self.steps as f64 / secs.max(1e-9)
        );
        println!(
            "{:<10} {:>8} {:>8} {:>7}",
            "fault", "armed", "fired", "fired%"
        );
        let (mut ta, mut tf) = (0, 0);
        for k in KINDS {
            let a = self.armed.get(k).copied().unwrap_or(0);
            let f = self.fired.get(k).copied().unwrap_or(0);
            ta += a;
            tf += f;
            println!(
                "{k:<10} {a:>8} {f:>8} {:>6.0}%",
                100.0 * f as f64 / a.max(1) as f64
            );
        }
        println!(
            "{:<10} {ta:>8} {tf:>8} {:>6.0}%",
            "all",
            100.0 * tf as f64 / ta.max(1) as f64
        );
        println!(
            "leaks {}  wrong kinds {}  false claims {}",
            self.leaks, self.wrong_kinds, self.false_claims
        );
        for f in &self.failures {
            println!(
                "FAILED seed {} schedule {}: {}",
                f.seed, f.index, f.schedule
            );
            for p in &f.problems {
                println!("  {p}");
            }
            match &f.shrunk {
                Some((s, problems)) => {
                    println!("  shrunk (replay line): {s}");
                    for p in problems {
                        println!("    {p}");
                    }
                }
                None => println!("  (not shrunk, or did not fail again when rerun)"),
            }
        }
    }
}

/// Runs `opts.schedules` generated schedules (or until the time budget ends)
/// over `opts.lanes` lanes, then shrinks the first failures.
pub async fn soak(opts: &Options) -> Summary {
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let summary = Arc::new(Mutex::new(Summary::default()));
    let found: Arc<Mutex<Vec<(u64, Schedule, Outcome)>>> = Arc::default();
    let deadline = opts.seconds.map(|s| started + Duration::from_secs_f64(s));
    let mut tasks = Vec::new();
    for number in 0..opts.lanes.max(1) {
        let (next, summary, found) = (next.clone(), summary.clone(), found.clone());
        let (seed, total) = (opts.seed, opts.schedules);
        tasks.push(tokio::spawn(async move {
            let mut lane = Lane::start(number).await;
            loop {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    break;
                }
                let schedule = generate(seed, index);
                let o = lane.run(&schedule).await;
                summary.lock().expect("summary").add(&o);
                if o.failed() {
                    found.lock().expect("failures").push((index, schedule, o));
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("a lane panicked");
    }
    let mut summary = std::mem::take(&mut *summary.lock().expect("summary"));
    summary.elapsed = started.elapsed();
    let mut found = std::mem::take(&mut *found.lock().expect("failures"));
    found.sort_by_key(|(i, ..)| *i);
    if !found.is_empty() {
        let mut lane = Lane::start(opts.lanes + 1).await;
        for (n, (index, schedule, o)) in found.into_iter().enumerate() {
            let shrunk = if n < opts.shrink_failures {
                shrink(&mut lane, &schedule, 200)
                    .await
                    .map(|(s, o)| (s, o.problems()))
            } else {
                None
            };
            summary.failures.push(Failed {
                seed: opts.seed,
                index,
                schedule,
                problems: o.problems(),
                shrunk,
            });
        }
    }
    summary
}
