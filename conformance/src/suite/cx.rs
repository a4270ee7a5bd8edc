//! The check context: everything one rule's check needs (testbed, provider, profile,
//! names and tags scoped to the rule, evidence, capture) and the small helpers that
//! keep checks short.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::Span;

use super::capture::Capture;
use super::guard;
use super::outcome::{NotChecked, PropertyFailure, Violation};
use crate::fixture::{
    Capacity, FaultId, FaultSpec, Faults, Hook, HookError, Inventory, Location, Observation,
    Planting, Rotation, StateControl, Testbed,
};
use crate::profile::{Axis, WatchedProfile};
use crate::rules::Rule;
use crate::{CreateRequest, Ctx, Error, ErrorKind, Instance, Profile, Provider, ProviderId, State};

/// Why a check stopped early.
#[derive(Debug)]
pub enum CheckError {
    /// The contract was broken (the rule fails).
    Violation(Violation),
    /// The harness or environment broke (the rule errors).
    Harness(String),
    /// The check cannot run here (the rule is skipped), with the reason.
    Skip(String),
}

impl From<HookError> for CheckError {
    fn from(e: HookError) -> Self {
        CheckError::Harness(format!("fixture hook failed: {e}"))
    }
}

/// The result of a check or a step of one.
pub type CheckResult<T = ()> = Result<T, CheckError>;

static OP_SEQ: AtomicU64 = AtomicU64::new(1);

/// Timing knobs a check uses.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// The deadline given to an ordinary operation.
    pub op_timeout: Duration,
    /// How long a check waits for something eventual (Running, NotFound, a boot).
    pub settle: Duration,
    /// How long to wait before concluding that something did *not* happen.
    pub quiet: Duration,
    /// How late a call may return after its deadline and still be prompt.
    pub slack: Duration,
}

impl Timing {
    /// Timing for an in-memory backend.
    pub fn fake() -> Timing {
        Timing {
            op_timeout: Duration::from_secs(10),
            settle: Duration::from_secs(5),
            quiet: Duration::from_millis(150),
            slack: Duration::from_millis(500),
        }
    }

    /// Timing for a real backend where guests boot under emulation.
    pub fn real() -> Timing {
        Timing {
            op_timeout: Duration::from_secs(300),
            settle: Duration::from_secs(300),
            quiet: Duration::from_secs(3),
            slack: Duration::from_secs(3),
        }
    }
}

static AXES_READ: Mutex<BTreeMap<&'static str, Vec<Axis>>> = Mutex::new(BTreeMap::new());

fn note_read(rule: &'static str, axis: Axis) {
    let mut read = AXES_READ.lock().unwrap_or_else(|e| e.into_inner());
    let axes = read.entry(rule).or_default();
    if !axes.contains(&axis) {
        axes.push(axis);
    }
}

/// Every profile axis each rule's check has read in this process so far, by rule ID:
/// what its verdicts depend on, to compare with the axes its catalogue entry names.
pub fn axes_read() -> BTreeMap<&'static str, Vec<Axis>> {
    AXES_READ.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// One rule's view of the run.
pub struct Cx {
    /// The rule being checked.
    pub rule: &'static Rule,
    /// The rule's testbed.
    pub tb: Box<dyn Testbed>,
    /// The provider under test.
    pub p: Arc<dyn Provider>,
    /// Its declared profile; what a check reads of it is recorded ([`axes_read`]).
    pub profile: WatchedProfile,
    /// Its provider name.
    pub provider_name: String,
    /// The configured locations.
    pub locations: Vec<Location>,
    /// The rule's seed.
    pub seed: u64,
    /// Property cases to run.
    pub cases: u32,
    /// Create steps a step-wise check interrupts at most.
    pub steps: u32,
    /// Timing knobs.
    pub timing: Timing,
    /// The log and span capture, when installed.
    pub capture: Option<Capture>,
    /// Whether the backend is real (guests really boot): a rule that would repeat
    /// itself at every location picks one by its seed instead.
    pub real_backend: bool,
    /// What owns the payloads this run of the check hands out
    /// ([`secrets::new_owner`](super::secrets::new_owner)).
    pub owner: String,
    prefix: String,
    tag: String,
    counter: AtomicU32,
    span: Span,
    pub(crate) evidence: Mutex<Vec<String>>,
    pub(crate) violations: Mutex<Vec<Violation>>,
    pub(crate) property: Mutex<Option<PropertyFailure>>,
    pub(crate) names: Mutex<Vec<String>>,
    pub(crate) tags: Mutex<Vec<String>>,
    pub(crate) not_checked: Mutex<Vec<NotChecked>>,
    /// The index of the location the rule works at ([`Cx::loc0`]), and whether the
    /// check runs at more than one in turn (violations then name the location).
    at: std::sync::atomic::AtomicUsize,
    in_turn: std::sync::atomic::AtomicBool,
    pub(crate) injected: Mutex<Vec<Injected>>,
    /// What one turn of a check run at several locations leaves the next (DEL-PARTIAL:
    /// the step of Delete at which a missing container first shows).
    pub(crate) carried: Mutex<Option<(u64, String)>>,
}

/// What the runner hands a new [`Cx`].
pub(crate) struct CxParts {
    pub rule: &'static Rule,
    pub tb: Box<dyn Testbed>,
    pub provider_name: String,
    pub profile: Profile,
    pub locations: Vec<Location>,
    pub run_short: String,
    pub seed: u64,
    pub cases: u32,
    pub steps: u32,
    pub timing: Timing,
    pub capture: Option<Capture>,
    pub span: Span,
    pub owner: String,
    pub real_backend: bool,
}

impl Cx {
    pub(crate) fn new(parts: CxParts) -> Cx {
        let slug = parts.rule.id.to_ascii_lowercase();
        let p = parts.tb.provider();
        Cx {
            rule: parts.rule,
            p,
            tb: parts.tb,
            profile: {
                let rule = parts.rule.id;
                WatchedProfile::new(parts.profile, move |axis| note_read(rule, axis))
            },
            provider_name: parts.provider_name,
            locations: parts.locations,
            seed: parts.seed,
            cases: parts.cases,
            steps: parts.steps,
            timing: parts.timing,
            capture: parts.capture,
            owner: parts.owner,
            real_backend: parts.real_backend,
            prefix: format!("c{}-{slug}", parts.run_short),
            tag: format!("t{}-{slug}", parts.run_short),
            counter: AtomicU32::new(0),
            span: parts.span,
            evidence: Mutex::default(),
            violations: Mutex::default(),
            property: Mutex::default(),
            names: Mutex::default(),
            tags: Mutex::default(),
            not_checked: Mutex::default(),
            at: Default::default(),
            in_turn: Default::default(),
            injected: Mutex::default(),
            carried: Mutex::default(),
        }
    }

    /// Records that the sub-assertion `what` could not be checked, and why; a passing
    /// rule with such a record makes the run's verdict partial. Recorded once per `what`.
    pub fn not_checked(&self, what: impl Into<String>, why: impl Into<String>) {
        let (what, why) = (what.into(), why.into());
        let mut all = self.not_checked.lock().unwrap();
        if !all.iter().any(|n| n.what == what) {
            all.push(NotChecked { what, why });
        }
    }

    /// A hook the testbed returned, or why not: when the rule is gated on `hook` the
    /// runner promised it, so its absence is the harness's Error (the fixture's
    /// declared hooks and its testbed disagree, or the suite's gate is wrong), never a
    /// panic; a rule that uses the hook without being gated on it is Skipped.
    fn hook<T>(&self, got: Option<T>, hook: Hook) -> CheckResult<T> {
        match got {
            Some(h) => Ok(h),
            None if self.rule.hooks.contains(&hook) => Err(CheckError::Harness(format!(
                "the testbed returned no {} hook, though the rule runs only when the fixture declares it \
                 (the fixture's declared hooks and its testbed disagree)",
                hook.as_str()
            ))),
            None => Err(CheckError::Skip(format!(
                "the fixture lacks the {} hook",
                hook.as_str()
            ))),
        }
    }

    /// The faults hook.
    pub fn faults(&self) -> CheckResult<&dyn Faults> {
        self.hook(self.tb.faults(), Hook::Faults)
    }

    /// The inventory hook.
    pub fn inventory(&self) -> CheckResult<&dyn Inventory> {
        self.hook(self.tb.inventory(), Hook::Inventory)
    }

    /// The planting hook.
    pub fn planting(&self) -> CheckResult<&dyn Planting> {
        self.hook(self.tb.planting(), Hook::Planting)
    }

    /// The state-control hook.
    pub fn state_control(&self) -> CheckResult<&dyn StateControl> {
        self.hook(self.tb.state_control(), Hook::StateControl)
    }

    /// The capacity hook.
    pub fn capacity(&self) -> CheckResult<&dyn Capacity> {
        self.hook(self.tb.capacity(), Hook::Capacity)
    }

    /// The rotation hook.
    pub fn rotation(&self) -> CheckResult<&dyn Rotation> {
        self.hook(self.tb.rotation(), Hook::Rotation)
    }

    /// The observation hook.
    pub fn observation(&self) -> CheckResult<&dyn Observation> {
        self.hook(self.tb.observation(), Hook::Observation)
    }

    /// The result of a task the check spawned around a provider call: a panic inside
    /// the provider is the provider's violation, any other failure of the task the
    /// harness's Error.
    pub fn joined<T>(&self, r: Result<T, tokio::task::JoinError>, what: &str) -> CheckResult<T> {
        match r {
            Ok(v) => Ok(v),
            Err(e) if e.is_panic() => {
                let p = e.into_panic();
                let text = super::secrets::redact(&guard::panic_text(p.as_ref())).into_owned();
                if guard::is_provider_panic(p.as_ref()) {
                    self.fail(
                        what,
                        "no panic inside the provider",
                        format!("the provider panicked: {text}"),
                    )
                } else {
                    Err(CheckError::Harness(format!(
                        "{what}: the task panicked outside the provider: {text}"
                    )))
                }
            }
            Err(e) => Err(CheckError::Harness(format!("{what}: the task failed: {e}"))),
        }
    }

    /// Injects a fault through the faults hook and records it for the report, which
    /// says whether it fired.
    pub fn inject(&self, spec: FaultSpec) -> CheckResult<FaultId> {
        let faults = self.faults()?;
        let trace_mark = self.tb.observation().map(|o| o.calls().len());
        let id = faults.inject(spec.clone())?;
        self.injected.lock().unwrap().push(Injected {
            spec,
            id,
            trace_mark,
        });
        Ok(id)
    }

    /// The rule's tag: every instance the check creates carries it (or [`Cx::tag_variant`]).
    pub fn tag(&self) -> String {
        self.remember_tag(&self.tag);
        self.tag.clone()
    }

    /// Another tag scoped to this rule.
    pub fn tag_variant(&self, suffix: &str) -> String {
        let t = format!("{}-{suffix}", self.tag);
        self.remember_tag(&t);
        t
    }

    fn remember_tag(&self, t: &str) {
        let mut tags = self.tags.lock().unwrap();
        if !tags.iter().any(|x| x == t) {
            tags.push(t.to_owned());
        }
    }

    /// A fresh instance name scoped to this rule and run.
    pub fn name(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let name = format!("{}-{n}", self.prefix);
        self.names.lock().unwrap().push(name.clone());
        name
    }

    /// The prefix every name of this rule starts with.
    pub fn name_prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether `name` is one this rule made (`<prefix>-<n>`): another rule's names
    /// may start with the same letters (GET-STATE, GET-STATELESS) and share a backend.
    pub fn owns_name(&self, name: &str) -> bool {
        named_by(&self.prefix, name)
    }

    /// Whether `name` is one any rule of this run made (`c<run>-<rule>-<n>`): the rules
    /// of one run may share a backend, never with names of another shape.
    pub fn of_this_run(&self, name: &str) -> bool {
        named_in_run(&self.prefix, name)
    }

    /// The location the rule works at: the first configured one, or for a rule run
    /// at every location ([`crate::suite::checks::AT_EVERY_LOCATION`]) each in turn.
    pub fn loc0(&self) -> &Location {
        let at = self.at.load(std::sync::atomic::Ordering::SeqCst);
        &self.locations[at.min(self.locations.len().saturating_sub(1))]
    }

    /// Makes the location of index `at` the one the rule works at; `in_turn` when the
    /// check runs at several locations one after another.
    pub(crate) fn work_at(&self, at: usize, in_turn: bool) {
        self.at.store(at, std::sync::atomic::Ordering::SeqCst);
        self.in_turn
            .store(in_turn, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the check runs at several locations, one after another.
    pub fn in_turn(&self) -> bool {
        self.in_turn.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether the check runs at several locations in turn and this is the last turn.
    pub fn last_turn(&self) -> bool {
        self.in_turn.load(std::sync::atomic::Ordering::SeqCst)
            && self.at.load(std::sync::atomic::Ordering::SeqCst) + 1 >= self.locations.len()
    }

    /// Whether the check runs at several locations in turn and this is not the first
    /// turn (the earlier turns have used other locations).
    pub fn later_turn(&self) -> bool {
        self.in_turn.load(std::sync::atomic::Ordering::SeqCst)
            && self.at.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    /// The locations a rule that holds at every location runs at: all of them on a
    /// fake, one picked by the rule's seed on a real backend (where each costs a
    /// boot); the pick is recorded in the evidence.
    pub fn every_location(&self) -> Vec<Location> {
        if !self.real_backend || self.locations.len() < 2 {
            return self.locations.clone();
        }
        let at = (self.seed % self.locations.len() as u64) as usize;
        let picked = self.locations[at].clone();
        self.note(format!(
            "a real backend: one location of {}, {} (picked by the rule's seed)",
            self.locations.len(),
            picked.name
        ));
        vec![picked]
    }

    /// A valid request for a fresh name at the first location, with the rule's tag.
    pub fn request(&self) -> CreateRequest {
        self.tb.request(&self.name(), &self.tag(), self.loc0())
    }

    /// A call context under the rule's span with the default operation deadline.
    pub fn ctx(&self) -> Ctx {
        self.ctx_for(self.timing.op_timeout).0
    }

    /// A call context with `timeout`, and the mark of its operation span for [`Capture::find_mark`].
    pub fn ctx_for(&self, timeout: Duration) -> (Ctx, String) {
        let mark = format!("op{}", OP_SEQ.fetch_add(1, Ordering::Relaxed));
        let span = tracing::info_span!(parent: &self.span, "conformance.op", cf_mark = %mark);
        (Ctx::with_timeout(timeout).in_span(span), mark)
    }

    /// Records a line of evidence.
    pub fn note(&self, line: impl Into<String>) {
        self.evidence.lock().unwrap().push(line.into());
    }

    /// Records a violation and lets the check go on.
    pub fn violate(
        &self,
        location: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) {
        self.violations
            .lock()
            .unwrap()
            .push(self.violation(location, expected, actual));
    }

    /// A violation of this rule.
    pub fn violation(
        &self,
        location: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Violation {
        let location = location.into();
        let location = if self.in_turn.load(std::sync::atomic::Ordering::SeqCst) {
            format!("{location} (at {})", self.loc0().name)
        } else {
            location
        };
        Violation {
            rule: self.rule.id.to_owned(),
            location,
            expected: expected.into(),
            actual: actual.into(),
        }
    }

    /// Stops the check with a violation.
    pub fn fail<T>(
        &self,
        location: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> CheckResult<T> {
        Err(CheckError::Violation(
            self.violation(location, expected, actual),
        ))
    }

    /// Whether violations were recorded so far.
    pub fn has_violations(&self) -> bool {
        !self.violations.lock().unwrap().is_empty()
    }

    pub(crate) fn set_property_failure(&self, f: PropertyFailure) {
        *self.property.lock().unwrap() = Some(f);
    }

    /// Creates and expects success.
    pub async fn create_ok(
        &self,
        p: &dyn Provider,
        req: &CreateRequest,
        at: &str,
    ) -> CheckResult<ProviderId> {
        match p.create(&self.ctx(), req).await {
            Ok(id) => Ok(id),
            Err(e) => self.fail(
                at,
                format!("Create of {} to succeed", req.name),
                describe(&e),
            ),
        }
    }

    /// Gets and expects success.
    pub async fn get_ok(
        &self,
        p: &dyn Provider,
        id: &ProviderId,
        at: &str,
    ) -> CheckResult<Instance> {
        match p.get(&self.ctx(), id).await {
            Ok(i) => Ok(i),
            Err(e) => self.fail(at, format!("Get of {id} to succeed"), describe(&e)),
        }
    }

    /// Deletes and expects success.
    pub async fn delete_ok(&self, p: &dyn Provider, id: &ProviderId, at: &str) -> CheckResult {
        match p.delete(&self.ctx(), id).await {
            Ok(()) => Ok(()),
            Err(e) => self.fail(at, format!("Delete of {id} to succeed"), describe(&e)),
        }
    }

    /// Polls Get until the instance is Running, within the settle time.
    pub async fn wait_running(
        &self,
        p: &dyn Provider,
        id: &ProviderId,
        at: &str,
    ) -> CheckResult<Instance> {
        let last = Mutex::new(String::from("no answer"));
        let last = &last;
        let done = self
            .poll(|| async move {
                match p.get(&self.ctx(), id).await {
                    Ok(i) if i.state == State::Running => Some(i),
                    Ok(i) => {
                        *last.lock().unwrap() = format!("{:?}", i.state);
                        None
                    }
                    Err(e) => {
                        *last.lock().unwrap() = describe(&e);
                        None
                    }
                }
            })
            .await;
        match done {
            Some(i) => Ok(i),
            None => self.fail(
                at,
                format!("{id} to reach Running within {:?}", self.timing.settle),
                last.lock().unwrap().clone(),
            ),
        }
    }

    /// Polls Get until it returns NotFound, within the settle time; any other error is a violation.
    pub async fn wait_gone(&self, p: &dyn Provider, id: &ProviderId, at: &str) -> CheckResult {
        let gone = self
            .poll(|| async move {
                match p.get(&self.ctx(), id).await {
                    Err(e) if e.is_not_found() => Some(Ok(())),
                    Err(e) => Some(Err(describe(&e))),
                    Ok(_) => None,
                }
            })
            .await;
        match gone {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => self.fail(at, "Get to return the instance or NotFound", e),
            None => self.fail(
                at,
                format!("NotFound within {:?}", self.timing.settle),
                "the instance is still there",
            ),
        }
    }

    /// Calls `f` every few milliseconds until it returns `Some` or the settle time passes.
    pub async fn poll<T, F, Fut>(&self, mut f: F) -> Option<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let end = tokio::time::Instant::now() + self.timing.settle;
        let mut wait = Duration::from_millis(5);
        loop {
            if let Some(v) = f().await {
                return Some(v);
            }
            if tokio::time::Instant::now() >= end {
                return None;
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_millis(250));
        }
    }

    /// Under `delete-return=early`, waits (within the settle time) until nothing of the
    /// rule is listed under its tags or held in the inventory, so that the leak sweep
    /// judges what a finished deletion left, not one still under way. Under
    /// `delete-return=waits` it returns at once: Delete already waited.
    pub async fn settle_deletions(&self) {
        if self.profile.unwatched().delete_return() != crate::profile::DeleteReturn::Early {
            return;
        }
        let tags = self.tags.lock().unwrap().clone();
        let clear = || {
            let tags = tags.clone();
            async move {
                for tag in &tags {
                    match self.p.list_by_tag(&self.ctx(), tag).await {
                        Ok(l) if l.instances.is_empty() => {}
                        _ => return None,
                    }
                }
                if let Some(inv) = self.tb.inventory() {
                    for loc in &self.locations {
                        match inv.resources(&loc.name).await {
                            Ok(rs)
                                if !rs.iter().any(|r| {
                                    r.instance.as_deref().is_some_and(|n| self.owns_name(n))
                                }) => {}
                            _ => return None,
                        }
                    }
                }
                Some(())
            }
        };
        self.poll(clear).await;
    }

    /// Deletes `ids`, ignoring errors (cleanup).
    pub async fn cleanup(&self, ids: &[ProviderId]) {
        for id in ids {
            let _ = self.p.delete(&self.ctx(), id).await;
        }
    }

    /// Names of the instance at `location` that the inventory hook reports, if any.
    /// Without the hook, `None`: the caller records what it could not check with
    /// [`Cx::inventory_for`].
    pub async fn inventory_of(
        &self,
        location: &str,
        name: &str,
    ) -> CheckResult<Option<Vec<String>>> {
        let Some(inv) = self.tb.inventory() else {
            return Ok(None);
        };
        let mut out: Vec<String> = inv
            .resources(location)
            .await?
            .into_iter()
            .filter(|r| r.instance.as_deref() == Some(name))
            .map(|r| format!("{}:{}", r.kind, r.name))
            .collect();
        out.sort();
        Ok(Some(out))
    }

    /// [`Cx::inventory_of`] for the sub-assertion `what`: without the inventory hook it
    /// records `what` as not checked and returns `None`.
    pub async fn inventory_for(
        &self,
        what: &str,
        location: &str,
        name: &str,
    ) -> CheckResult<Option<Vec<String>>> {
        let got = self.inventory_of(location, name).await?;
        if got.is_none() {
            self.not_checked(what, "the fixture has no inventory hook");
        }
        Ok(got)
    }

    /// The names listed under `tag`.
    pub async fn listed_names(&self, tag: &str, at: &str) -> CheckResult<Vec<String>> {
        match self.p.list_by_tag(&self.ctx(), tag).await {
            Ok(l) => Ok(l.instances.into_iter().map(|i| i.name).collect()),
            Err(e) => self.fail(at, "ListByTag to succeed", describe(&e)),
        }
    }
}

/// An error as evidence: kind, message and every cause below it.
pub fn describe(e: &Error) -> String {
    format!("{} error: {}", e.kind().name(), e.chain())
}

/// A result as evidence.
pub fn describe_result<T: std::fmt::Debug>(r: &Result<T, Error>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => describe(e),
    }
}

/// The kind's name of an error result, or "Ok".
pub fn kind_of<T>(r: &Result<T, Error>) -> &'static str {
    match r {
        Ok(_) => "Ok",
        Err(e) => e.kind().name(),
    }
}

/// Whether `r` is an error of exactly `kind` (QuotaExceeded matches any fields).
pub fn is_kind<T>(r: &Result<T, Error>, kind: &ErrorKind) -> bool {
    match r {
        Err(e) => std::mem::discriminant(e.kind()) == std::mem::discriminant(kind),
        Ok(_) => false,
    }
}

/// Whether `name` is `<prefix>-<n>`.
fn named_by(prefix: &str, name: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `name` has the run part (`c<run>`) of the rule prefix `prefix` and more.
fn named_in_run(prefix: &str, name: &str) -> bool {
    let run = prefix.split('-').next().unwrap_or_default();
    name.strip_prefix(run)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|rest| !rest.is_empty())
}

#[cfg(test)]
mod name_tests {
    #[test]
    fn a_run_knows_the_names_of_all_its_rules() {
        let ours = |n: &str| super::named_in_run("c1234-get-state", n);
        assert!(ours("c1234-get-state-1"));
        assert!(ours("c1234-del-complete-3"));
        assert!(!ours("c12345-get-state-1"));
        assert!(!ours("c1234-"));
        assert!(!ours("xyzzy"));
        assert!(!ours(""));
    }

    #[test]
    fn a_rule_owns_its_numbered_names_only() {
        let own = |n: &str| super::named_by("c1234-get-state", n);
        assert!(own("c1234-get-state-1"));
        assert!(own("c1234-get-state-12"));
        assert!(!own("c1234-get-stateless-1"));
        assert!(!own("c1234-get-state-"));
        assert!(!own("c1234-get-state"));
        assert!(!own("c1234-get-state-1x"));
    }
}

/// A fault a rule injected: what, its handle, and where the observation trace stood
/// when it was injected (`None` without an observation hook).
#[derive(Clone, Debug)]
pub(crate) struct Injected {
    pub spec: FaultSpec,
    pub id: FaultId,
    pub trace_mark: Option<usize>,
}
