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
use libvirt_fake::{DomainSnapshot, FakeLibvirt, Fault, FaultHandle, FaultRule, VirError};
use libvirt_ssh::server::{
    ChannelTarget, KeyKind, TestServer, TestServerOptions, generate_client_key,
};
use libvirt_wire::{DomainState, ErrorCode, ErrorDomain, Procedure};

mod faults;
mod lanes;
mod oracle;
mod run;
mod schedule;
mod shrink;

pub use faults::{Class, FaultArm, KINDS, Part};
use lanes::*;
pub use lanes::{Lane, Outcome};
use run::*;
pub use schedule::{Op, Schedule, Step, generate};
pub use shrink::shrink;

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
