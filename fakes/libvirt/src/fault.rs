//! Fault injection at the backend seam: a scripted queue for exact
//! sequences, rules that fire on the k-th call or on a named procedure
//! (optionally once, optionally on one connection), and seeded random rules.
//!
//! Every injection returns a [`FaultHandle`] that tells whether, and how
//! often, it fired. Random rules take a seed and draw from their own
//! generator, so a run is reproduced by its seed alone.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::VirError;
use libvirt_wire::{ErrorCode, ErrorDomain, Procedure};

/// What an injected fault does to the call it hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The call fails with this libvirt error; nothing is changed.
    Error(VirError),
    /// The call fails with libvirt's "not found" error for the kind of object it
    /// works on ([`VirError::not_found_for`]); nothing is changed.
    NotFound,
    /// The call is held this long before it runs (network latency: other
    /// calls in flight are not held).
    Delay(Duration),
    /// The call never answers.
    Hang,
    /// The connection is closed under the call.
    DropConnection,
    /// The call runs, then the connection is closed before its reply is sent: the
    /// caller cannot tell whether it took effect.
    LoseReply,
}

impl Fault {
    /// A libvirt error with the number's real prefix and this detail.
    pub fn error(code: ErrorCode, domain: ErrorDomain, detail: impl Into<String>) -> Self {
        Fault::Error(VirError::new(code, domain, detail))
    }

    /// A typical passing failure: `VIR_ERR_OPERATION_TIMEOUT` "cannot acquire
    /// state change lock", what a busy QEMU driver answers.
    pub fn busy() -> Self {
        Fault::error(
            ErrorCode::OperationTimeout,
            ErrorDomain::Qemu,
            "cannot acquire state change lock",
        )
    }

    /// A typical lasting failure: `VIR_ERR_ACCESS_DENIED`.
    pub fn access_denied() -> Self {
        Fault::error(
            ErrorCode::AccessDenied,
            ErrorDomain::None,
            "'manage' denied by the access driver",
        )
    }

    /// `VIR_ERR_NO_DOMAIN` for a lookup by name, as QEMU words it.
    pub fn no_domain(name: &str) -> Self {
        Fault::Error(VirError::no_domain_name(name))
    }

    /// `VIR_ERR_NO_STORAGE_VOL` for a lookup by name.
    pub fn no_storage_vol(name: &str) -> Self {
        Fault::Error(VirError::no_vol_name(name))
    }

    /// `VIR_ERR_NO_STORAGE_POOL` for a lookup by name.
    pub fn no_storage_pool(name: &str) -> Self {
        Fault::Error(VirError::no_pool_name(name))
    }

    /// A short name for traces: `error(42)`, `delay`, `hang`, `drop`, `lose-reply`.
    pub fn kind(&self) -> String {
        match self {
            Fault::Error(e) => format!("error({})", e.code),
            Fault::NotFound => "not-found".into(),
            Fault::Delay(_) => "delay".into(),
            Fault::Hang => "hang".into(),
            Fault::DropConnection => "drop".into(),
            Fault::LoseReply => "lose-reply".into(),
        }
    }
}

/// Which calls a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// Every call.
    Always,
    /// The k-th call (1-based) counted from when the rule was added.
    NthCall(u64),
    /// Every call of this procedure.
    Procedure(Procedure),
    /// The k-th call (1-based) of this procedure counted from when the rule
    /// was added.
    NthCallOf(Procedure, u64),
}

/// One injection rule: a trigger, a fault, and how often it may fire.
#[derive(Debug, Clone)]
pub struct FaultRule {
    trigger: Trigger,
    fault: Fault,
    once: bool,
    connection: Option<u64>,
    object: Option<String>,
}

impl FaultRule {
    /// A rule firing `fault` on the calls `trigger` selects.
    pub fn new(trigger: Trigger, fault: Fault) -> Self {
        FaultRule {
            trigger,
            fault,
            once: false,
            connection: None,
            object: None,
        }
    }

    /// Fires on every call of `procedure`.
    pub fn on(procedure: Procedure, fault: Fault) -> Self {
        Self::new(Trigger::Procedure(procedure), fault)
    }

    /// Fires on the k-th call from now.
    pub fn nth_call(k: u64, fault: Fault) -> Self {
        Self::new(Trigger::NthCall(k), fault)
    }

    /// Fires at most once.
    pub fn once(mut self) -> Self {
        self.once = true;
        self
    }

    /// Only counts and hits calls about the domain, pool or volume of this
    /// name (a volume call matches both its volume and its pool name).
    pub fn on_object(mut self, name: impl Into<String>) -> Self {
        self.object = Some(name.into());
        self
    }

    /// Only counts and hits calls on this connection.
    pub fn on_connection(mut self, connection: u64) -> Self {
        self.connection = Some(connection);
        self
    }
}

/// Reports whether an injection fired; dropping it leaves the injection in
/// place, [`FaultHandle::remove`] takes it out.
#[derive(Clone)]
pub struct FaultHandle {
    inner: Arc<HandleState>,
}

#[derive(Default)]
struct HandleState {
    fired: AtomicU64,
    removed: AtomicBool,
}

impl FaultHandle {
    fn new() -> Self {
        FaultHandle {
            inner: Arc::new(HandleState::default()),
        }
    }

    /// Whether the injection fired at least once.
    pub fn fired(&self) -> bool {
        self.fire_count() > 0
    }

    /// How many calls the injection hit.
    pub fn fire_count(&self) -> u64 {
        self.inner.fired.load(Ordering::SeqCst)
    }

    /// Takes the injection out; calls from now on are not hit.
    pub fn remove(&self) {
        self.inner.removed.store(true, Ordering::SeqCst);
    }

    fn live(&self) -> bool {
        !self.inner.removed.load(Ordering::SeqCst)
    }

    pub(crate) fn hit(&self) {
        self.inner.fired.fetch_add(1, Ordering::SeqCst);
    }
}

impl fmt::Debug for FaultHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultHandle")
            .field("fired", &self.fire_count())
            .field("removed", &!self.live())
            .finish()
    }
}

struct ActiveRule {
    rule: FaultRule,
    handle: FaultHandle,
    seen: u64,
}

struct RandomRule {
    rng: StdRng,
    probability: f64,
    faults: Vec<Fault>,
    procedures: Option<Vec<Procedure>>,
    handle: FaultHandle,
}

#[derive(Default)]
struct Registry {
    script: VecDeque<(Option<Fault>, FaultHandle)>,
    rules: Vec<ActiveRule>,
    random: Vec<RandomRule>,
    streams: VecDeque<(u64, VirError, FaultHandle)>,
}

/// The injection registry of one fake; reached through
/// [`crate::FakeLibvirt::faults`].
#[derive(Clone, Default)]
pub struct Faults {
    inner: Arc<Mutex<Registry>>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.inner.lock().expect("fault registry poisoned");
        f.debug_struct("Faults")
            .field("scripted", &r.script.len())
            .field("rules", &r.rules.len())
            .field("random", &r.random.len())
            .finish()
    }
}

impl Faults {
    /// Queues one entry of the script: the next call not yet scripted gets
    /// `fault`. Scripted entries are consumed in order, one per call, before
    /// any rule is looked at.
    pub fn push(&self, fault: Fault) -> FaultHandle {
        self.push_entry(Some(fault))
    }

    /// Queues a script entry that lets one call through untouched.
    pub fn push_pass(&self) -> FaultHandle {
        self.push_entry(None)
    }

    fn push_entry(&self, fault: Option<Fault>) -> FaultHandle {
        let handle = FaultHandle::new();
        self.lock().script.push_back((fault, handle.clone()));
        handle
    }

    /// Adds a rule; rules are tried in the order they were added and the
    /// first that matches fires.
    pub fn add(&self, rule: FaultRule) -> FaultHandle {
        let handle = FaultHandle::new();
        self.lock().rules.push(ActiveRule {
            rule,
            handle: handle.clone(),
            seen: 0,
        });
        handle
    }

    /// Adds a seeded random rule: each call (of one of `procedures`, or any
    /// call when `None`) is hit with `probability`, by one of `faults` chosen
    /// uniformly. The same seed gives the same hits for the same calls.
    pub fn random(
        &self,
        seed: u64,
        probability: f64,
        faults: Vec<Fault>,
        procedures: Option<Vec<Procedure>>,
    ) -> FaultHandle {
        let handle = FaultHandle::new();
        self.lock().random.push(RandomRule {
            rng: StdRng::seed_from_u64(seed),
            probability: probability.clamp(0.0, 1.0),
            faults,
            procedures,
            handle: handle.clone(),
        });
        handle
    }

    /// Makes the next upload stream fail once `after_bytes` bytes arrived:
    /// the server sends `error` as a stream error, as libvirtd does when
    /// writing to the volume fails. The bytes before stay in the volume.
    pub fn stream_error_after(&self, after_bytes: u64, error: VirError) -> FaultHandle {
        let handle = FaultHandle::new();
        self.lock()
            .streams
            .push_back((after_bytes, error, handle.clone()));
        handle
    }

    pub(crate) fn take_stream_fault(&self) -> Option<(u64, VirError, FaultHandle)> {
        let mut r = self.lock();
        while let Some(f) = r.streams.pop_front() {
            if f.2.live() {
                return Some(f);
            }
        }
        None
    }

    /// Removes every injection (handles keep their counts).
    pub fn clear(&self) {
        let mut r = self.lock();
        for (_, h) in r.script.drain(..) {
            h.remove();
        }
        for a in r.rules.drain(..) {
            a.handle.remove();
        }
        for a in r.random.drain(..) {
            a.handle.remove();
        }
        for (_, _, h) in r.streams.drain(..) {
            h.remove();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().expect("fault registry poisoned")
    }

    /// Decides the fault for one call.
    pub(crate) fn decide(
        &self,
        connection: u64,
        procedure: Procedure,
        objects: &[&str],
    ) -> Option<Fault> {
        let mut r = self.lock();
        while let Some((fault, handle)) = r.script.pop_front() {
            if !handle.live() {
                continue;
            }
            if fault.is_some() {
                handle.hit();
            }
            return fault;
        }
        let mut chosen = None;
        for a in r.rules.iter_mut() {
            if !a.handle.live() {
                continue;
            }
            if a.rule.connection.is_some_and(|c| c != connection) {
                continue;
            }
            if a.rule
                .object
                .as_deref()
                .is_some_and(|o| !objects.contains(&o))
            {
                continue;
            }
            let matches = match &a.rule.trigger {
                Trigger::Always => true,
                Trigger::NthCall(k) => {
                    a.seen += 1;
                    a.seen == *k
                }
                Trigger::Procedure(p) => *p == procedure,
                Trigger::NthCallOf(p, k) => {
                    if *p == procedure {
                        a.seen += 1;
                        a.seen == *k
                    } else {
                        false
                    }
                }
            };
            if matches && chosen.is_none() {
                a.handle.hit();
                if a.rule.once {
                    a.handle.remove();
                }
                chosen = Some(a.rule.fault.clone());
            }
        }
        if chosen.is_some() {
            return chosen;
        }
        for rr in r.random.iter_mut() {
            if !rr.handle.live() || rr.faults.is_empty() {
                continue;
            }
            if rr
                .procedures
                .as_ref()
                .is_some_and(|ps| !ps.contains(&procedure))
            {
                continue;
            }
            if rr.rng.random_bool(rr.probability) {
                let i = rr.rng.random_range(0..rr.faults.len());
                rr.handle.hit();
                return Some(rr.faults[i].clone());
            }
        }
        None
    }
}
