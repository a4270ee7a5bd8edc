//! The runner: decides each rule's applicability from the profile and the fixture's
//! hooks, runs the applicable checks (each on its own testbed, under a timeout),
//! fails a rule that leaves instances behind, and emits the event stream.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

mod judge;
mod once;

use super::capture::Capture;
use super::outcome::{Event, Outcome, Report, RuleResult, RunInfo, RunSettings};
use super::secrets;
use crate::fixture::Fixture;
use crate::rules::{CATALOGUE, Need, Rule};

/// How a run goes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The seed of every randomised part; the same seed gives the same outcomes.
    pub seed: u64,
    /// Rule IDs to run (`None`: all). An entry ending in `*` is a prefix.
    pub rules: Option<Vec<String>>,
    /// The limit for one rule's check, cleanup included.
    pub rule_timeout: Duration,
    /// Cases per property (capped on a real backend).
    pub cases: u32,
    /// Rules run at once.
    pub concurrency: usize,
    /// Create steps a step-wise check (CRE-RESUME, CRE-BACKEND-NOTFOUND,
    /// GEN-CANCEL) interrupts at most: every step when Create has no more,
    /// else this many spread evenly from the first to the last.
    pub steps: u32,
    /// Seeds given to single rules (`--rule-seed ID=N`), replacing the seed derived
    /// from [`RunOptions::seed`]: a failing property prints the one that replays it.
    pub rule_seeds: BTreeMap<String, u64>,
    /// The source commit the provider was built from, for the report; `None` when not
    /// known.
    pub provider_commit: Option<String>,
    /// Whether the provider's checkout was dirty when it was built, when known.
    pub provider_dirty: Option<bool>,
    /// Rules skipped on request (`--skip`): IDs, prefixes ending in `*`, `tag:NAME`.
    /// They are Skipped with the pattern that matched, and the verdict is partial.
    pub skip: Vec<String>,
    /// Times each rule's check runs, each on a fresh testbed (`--repeat`); at least 1.
    pub repeat: u32,
    /// No rule starts once the run has taken this long (`--max-wall`); the rules left
    /// are Skipped and the verdict is partial. Rules already running finish.
    pub max_wall: Option<Duration>,
    /// No rule starts once this is cancelled (the first Ctrl-C); the rules left are
    /// Skipped. Rules already running finish and sweep what they made.
    pub stop: Option<tokio_util::sync::CancellationToken>,
    /// The most instances the running rules may hold together (`--max-instances`): a
    /// rule starts only when its declaration ([`budget::held`](super::budget::held))
    /// fits, and one declaring more is Skipped.
    pub max_instances: Option<u32>,
    /// The shard of the selection to run (`--shard K/N`): only its rules run, and the
    /// report records it.
    pub shard: Option<super::shard::ShardInfo>,
    /// No rule starts once this many rules have failed or errored (`--max-fail`); the
    /// rules left are Skipped and the report says the run stopped early.
    pub max_fail: Option<u32>,
}

impl RunOptions {
    /// Whether `rule` is among the rules this run checks: selected by
    /// [`RunOptions::rules`] and in the shard, if any.
    pub fn selects(&self, rule: &Rule) -> bool {
        selected(rule, &self.rules)
            && self
                .shard
                .as_ref()
                .is_none_or(|s| s.rules.iter().any(|id| id == rule.id))
    }

    /// The seed rule `id` runs with.
    pub fn seed_of(&self, id: &str) -> u64 {
        self.rule_seeds
            .get(id)
            .copied()
            .unwrap_or_else(|| rule_seed(self.seed, id))
    }

    /// Why no more rules start, a run having started at `started`: interrupted, or
    /// `--max-wall` spent.
    pub fn stopped(&self, started: Instant) -> Option<String> {
        if self.stop.as_ref().is_some_and(|t| t.is_cancelled()) {
            return Some("not started: the run was interrupted".into());
        }
        match self.max_wall {
            Some(limit) if started.elapsed() >= limit => Some(format!(
                "not started: --max-wall {} was spent",
                crate::suite::report::human_duration(limit)
            )),
            _ => None,
        }
    }

    /// Cases a property runs against `fixture` (capped on a real backend).
    pub fn cases_for(&self, fixture: &dyn Fixture) -> u32 {
        if fixture.is_real_backend() {
            self.cases.min(REAL_BACKEND_MAX_CASES)
        } else {
            self.cases
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: 0x5eed,
            rules: None,
            rule_timeout: Duration::from_secs(120),
            cases: 16,
            concurrency: 4,
            steps: 40,
            rule_seeds: BTreeMap::new(),
            provider_commit: None,
            provider_dirty: None,
            skip: Vec::new(),
            repeat: 1,
            max_wall: None,
            stop: None,
            max_instances: None,
            shard: None,
            max_fail: None,
        }
    }
}

/// Reads `ID=N` entries (blank ones ignored) into rule seeds; the error names the
/// entry that is wrong.
pub fn parse_rule_seeds(entries: &[String]) -> Result<BTreeMap<String, u64>, String> {
    let mut seeds = BTreeMap::new();
    for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        let (id, n) = entry
            .split_once('=')
            .ok_or_else(|| format!("{entry:?} is not ID=N"))?;
        let id = id.trim();
        if crate::rules::rule(id).is_none() {
            return Err(format!("{id:?} is no rule of the catalogue"));
        }
        let n: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("{n:?} in {entry:?} is not a seed (an unsigned integer)"))?;
        seeds.insert(id.to_owned(), n);
    }
    Ok(seeds)
}

/// Cases a property runs on a real backend at most, unless asked for fewer.
pub const REAL_BACKEND_MAX_CASES: u32 = 4;

/// Whether `rule` is selected by `filter` (IDs, prefixes ending in `*`, `tag:NAME`).
pub fn selected(rule: &Rule, filter: &Option<Vec<String>>) -> bool {
    match filter {
        None => true,
        Some(patterns) => patterns.iter().any(|f| super::tags::matches(rule, f)),
    }
}

/// Why `rule` is skipped on request, when one of `skip` matches it.
pub fn skip_reason(rule: &Rule, skip: &[String]) -> Option<String> {
    super::tags::first_match(rule, skip).map(|p| format!("skipped on request (--skip {p})"))
}

/// Why `rule` will not run against `fixture`: `Some((Skipped | NotApplicable, reason))`.
pub fn applicability(fixture: &dyn Fixture, rule: &Rule) -> Option<(Outcome, String)> {
    let profile = fixture.profile();
    if let Some((axis, want)) = rule.gate {
        let have = profile.value(axis);
        if !want.contains(&have) {
            return Some((
                Outcome::NotApplicable,
                format!(
                    "profile declares {axis}={have}; the rule applies to {axis}={}",
                    want.join(" or ")
                ),
            ));
        }
    }
    for need in rule.needs {
        match need {
            Need::Checker if !fixture.has_checker() => {
                return Some((
                    Outcome::NotApplicable,
                    "the provider has no Checker (Check is optional)".into(),
                ));
            }
            Need::TwoLocations if fixture.locations().len() < 2 => {
                return Some((
                    Outcome::Skipped,
                    format!(
                        "the fixture configures {} location(s); the rule needs two",
                        fixture.locations().len()
                    ),
                ));
            }
            _ => {}
        }
    }
    let hooks = fixture.hooks();
    let missing: Vec<_> = rule
        .hooks
        .iter()
        .filter(|h| !hooks.contains(h))
        .map(|h| h.as_str())
        .collect();
    if !missing.is_empty() {
        return Some((
            Outcome::Skipped,
            format!("the fixture lacks the {} hook(s)", missing.join(", ")),
        ));
    }
    None
}

/// A sha256 over the catalogue's IDs and normative texts, in hex.
pub fn catalogue_hash() -> String {
    let mut h = Sha256::new();
    for r in CATALOGUE {
        h.update(r.id.as_bytes());
        h.update(b"\n");
        h.update(r.text.as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The git commit the suite was built from (its build script asks git); `None` when
/// it was built outside a git checkout.
pub fn suite_commit() -> Option<&'static str> {
    Some(env!("CONFORMANCE_GIT_COMMIT")).filter(|c| *c != "unknown")
}

/// The metadata of a run about to start.
pub fn run_info(fixture: &dyn Fixture, opts: &RunOptions) -> RunInfo {
    let mut environment = fixture.environment();
    environment.insert("os".into(), std::env::consts::OS.into());
    environment.insert("arch".into(), std::env::consts::ARCH.into());
    RunInfo {
        run_id: uuid::Uuid::new_v4().simple().to_string(),
        provider: fixture.provider_name(),
        provider_version: fixture.provider_version(),
        provider_commit: opts.provider_commit.clone(),
        provider_dirty: opts.provider_dirty,
        profile: fixture.profile(),
        hooks: fixture.hooks(),
        suite_version: env!("CARGO_PKG_VERSION").to_owned(),
        suite_commit: suite_commit().map(str::to_owned),
        suite_dirty: suite_commit().map(|_| env!("CONFORMANCE_GIT_DIRTY") == "true"),
        backend_versions: BTreeMap::new(),
        catalogue_hash: catalogue_hash(),
        seed: opts.seed,
        real_backend: fixture.is_real_backend(),
        environment,
        options: RunSettings {
            rules: opts.rules.clone(),
            cases: opts.cases_for(fixture),
            steps: opts.steps.max(2),
            rule_timeout: opts.rule_timeout,
            concurrency: opts.concurrency.max(1),
            rule_seeds: opts.rule_seeds.clone(),
            skip: opts.skip.clone(),
            repeat: opts.repeat.max(1),
            max_wall: opts.max_wall,
            max_instances: opts.max_instances,
            shard: opts.shard.clone(),
            max_fail: opts.max_fail,
        },
        started_at: SystemTime::now(),
    }
}

/// What [`Fixture::backend_versions`] reports, or nothing once
/// [`BACKEND_VERSIONS_TIMEOUT`](crate::fixture::BACKEND_VERSIONS_TIMEOUT) has passed.
pub async fn backend_versions(fixture: &dyn Fixture) -> BTreeMap<String, BTreeMap<String, String>> {
    tokio::time::timeout(
        crate::fixture::BACKEND_VERSIONS_TIMEOUT,
        fixture.backend_versions(),
    )
    .await
    .unwrap_or_default()
}

/// Runs the selected rules and returns the report; `sink` sees every event.
///
/// Needs a multi-thread tokio runtime (property checks block in place).
pub async fn run(
    fixture: Arc<dyn Fixture>,
    opts: RunOptions,
    sink: &mut (dyn FnMut(&Event) + Send),
) -> Report {
    let started = Instant::now();
    secrets::install_panic_hook();
    // The capture must be in place before the first rule's span is made.
    let _ = Capture::global();
    let mut info = run_info(fixture.as_ref(), &opts);
    info.backend_versions = backend_versions(fixture.as_ref()).await;
    let mut events = vec![Event::RunStarted(info.clone())];
    sink(&events[0]);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let sched = Arc::new(Schedule {
        gate: tokio::sync::Semaphore::new(opts.concurrency.max(1)),
        instances: opts
            .max_instances
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n as usize))),
        halted: tokio_util::sync::CancellationToken::new(),
        failures: std::sync::atomic::AtomicU32::new(0),
        fixture,
        opts,
        started,
        run_id: info.run_id.clone(),
    });
    // The rules tagged slow start first: a long rule that started last would run
    // alone at the end of the run.
    let mut order: Vec<&'static Rule> =
        CATALOGUE.iter().filter(|r| sched.opts.selects(r)).collect();
    order.sort_by_key(|r| !super::tags::tags_of(r).contains(&"slow"));
    let handles: Vec<_> = order
        .into_iter()
        .map(|rule| tokio::spawn(scheduled(rule, sched.clone(), tx.clone())))
        .collect();
    drop(tx);
    let mut swept = Vec::new();
    while let Some(e) = rx.recv().await {
        if let Event::CheckFinished(r) = &e {
            swept.extend(swept_by(r));
        }
        sink(&e);
        events.push(e);
    }
    for h in handles {
        let _ = h.await;
    }
    let finished = Event::RunFinished {
        duration: started.elapsed(),
        swept,
    };
    sink(&finished);
    events.push(finished);
    let mut report = Report::from_events(&events).expect("the stream starts with RunStarted");
    if sched.halted.is_cancelled() {
        report.stopped_early = Some(format!(
            "--max-fail {}: {} rule(s) failed or errored, and no rule started after",
            sched.opts.max_fail.unwrap_or(0),
            sched.failures.load(std::sync::atomic::Ordering::SeqCst)
        ));
        report.refresh();
    }
    report
}

/// What the rules of one run share to decide when each may start.
struct Schedule {
    fixture: Arc<dyn Fixture>,
    opts: RunOptions,
    /// When the run started (`--max-wall`).
    started: Instant,
    run_id: String,
    /// Rules running at once (`--concurrency`).
    gate: tokio::sync::Semaphore,
    /// Instances held at once (`--max-instances`).
    instances: Option<Arc<tokio::sync::Semaphore>>,
    /// Cancelled when `--max-fail` failures are in: no rule starts after.
    halted: tokio_util::sync::CancellationToken,
    failures: std::sync::atomic::AtomicU32,
}

/// One rule of a run: waits for its turn and for the instances it declares, runs
/// unless the run was stopped, and sends its events.
async fn scheduled(
    rule: &'static Rule,
    sched: Arc<Schedule>,
    tx: tokio::sync::mpsc::UnboundedSender<Event>,
) {
    let Schedule {
        fixture,
        opts,
        halted,
        ..
    } = &*sched;
    let _permit = sched.gate.acquire().await;
    let stopped = opts.stopped(sched.started).or_else(|| {
        halted.is_cancelled().then(|| {
            format!(
                "not started: --max-fail {} was reached",
                opts.max_fail.unwrap_or(0)
            )
        })
    });
    if let Some(why) = stopped {
        let seed = opts.seed_of(rule.id);
        let r = match applicability(fixture.as_ref(), rule) {
            Some((outcome, reason)) => skipped(rule, seed, outcome, reason),
            None => skipped(rule, seed, Outcome::Skipped, why),
        };
        let _ = tx.send(Event::CheckFinished(r));
        return;
    }
    let runs =
        applicability(fixture.as_ref(), rule).is_none() && skip_reason(rule, &opts.skip).is_none();
    let mut _held = None;
    if let (Some(budget), Some(max), true) = (&sched.instances, opts.max_instances, runs) {
        let need = super::budget::held(rule.id);
        if need > max {
            let why =
                format!("holds up to {need} instances at once; --max-instances {max} allows fewer");
            let r = skipped(rule, opts.seed_of(rule.id), Outcome::Skipped, why);
            let _ = tx.send(Event::CheckFinished(r));
            return;
        }
        _held = budget.clone().acquire_many_owned(need).await.ok();
    }
    let _ = tx.send(Event::CheckStarted { id: rule.id.into() });
    let result = run_rule(fixture.clone(), rule, opts, &sched.run_id).await;
    // Counted before the permit is let go, so that no rule starts after the N-th
    // failure.
    if result.outcome.is_failure() {
        let n = sched
            .failures
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        if opts.max_fail.is_some_and(|max| n >= max) {
            halted.cancel();
        }
    }
    let _ = tx.send(Event::CheckFinished(result));
}

/// What the sweep after `r`'s check removed, as `RULE: what` lines for the report.
pub fn swept_by(r: &RuleResult) -> Vec<String> {
    r.violations
        .iter()
        .filter(|v| v.location == SWEEP_LOCATION)
        .map(|v| format!("{}: {}", r.id, v.actual))
        .collect()
}

/// Where the sweep's violations say they were found.
const SWEEP_LOCATION: &str = "after the check";

fn rule_seed(seed: u64, id: &str) -> u64 {
    let mut x = seed
        ^ id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn skipped(rule: &Rule, seed: u64, outcome: Outcome, reason: String) -> RuleResult {
    RuleResult {
        id: rule.id.into(),
        title: rule.title.into(),
        area: rule.area.as_str().into(),
        outcome,
        reason: Some(reason),
        violations: Vec::new(),
        evidence: Vec::new(),
        property: None,
        seed,
        not_checked: Vec::new(),
        faults: Vec::new(),
        duration: Duration::ZERO,
        peak_instances: 0,
        runs: 0,
        passes: 0,
        flaky: false,
        repeat_seeds: Vec::new(),
        waiver: None,
        log: None,
    }
}

/// The seed of repetition `k` (from 0) of a rule whose seed is `seed`: the rule's own
/// seed for the first run, one derived from it and `k` for the others.
pub fn repeat_seed(seed: u64, k: u32) -> u64 {
    if k == 0 {
        seed
    } else {
        rule_seed(seed, &format!("repeat-{k}"))
    }
}

/// Runs one rule and returns its result: not at all when the profile, the fixture or
/// `--skip` rule it out, else [`RunOptions::repeat`] times, each on a testbed of its
/// own. Repeated runs fold into one result: the first failing run's (else erroring,
/// else skipping, else passing) with the counts of runs and passes, and `flaky` when
/// the rule both passed and failed.
pub async fn run_rule(
    fixture: Arc<dyn Fixture>,
    rule: &'static Rule,
    opts: &RunOptions,
    run_id: &str,
) -> RuleResult {
    let seed = opts.seed_of(rule.id);
    secrets::install_panic_hook();
    if let Some((outcome, reason)) = applicability(fixture.as_ref(), rule) {
        return skipped(rule, seed, outcome, reason);
    }
    if let Some(reason) = skip_reason(rule, &opts.skip) {
        return skipped(rule, seed, Outcome::Skipped, reason);
    }
    let repeat = opts.repeat.max(1);
    let mut runs = Vec::with_capacity(repeat as usize);
    for k in 0..repeat {
        let mut r = once::run_once(fixture.clone(), rule, opts, run_id, repeat_seed(seed, k)).await;
        r.runs = u32::from(r.outcome != Outcome::Skipped);
        r.passes = u32::from(r.outcome == Outcome::Pass);
        runs.push(r);
    }
    fold_runs(seed, runs)
}

/// Folds the results of one rule's repeated runs into one.
fn fold_runs(seed: u64, runs: Vec<RuleResult>) -> RuleResult {
    let n = runs.len();
    if n == 1 {
        return runs.into_iter().next().expect("one run");
    }
    let rank = |o: Outcome| match o {
        Outcome::Fail => 0,
        Outcome::Error => 1,
        Outcome::Skipped => 2,
        _ => 3,
    };
    let passes = runs.iter().filter(|r| r.outcome == Outcome::Pass).count();
    let fails = runs.iter().filter(|r| r.outcome == Outcome::Fail).count();
    let judged = runs
        .iter()
        .filter(|r| r.outcome != Outcome::Skipped)
        .count();
    let seeds: Vec<u64> = runs.iter().map(|r| r.seed).collect();
    let duration = runs.iter().map(|r| r.duration).sum();
    let worst_at = (0..n)
        .min_by_key(|&i| (rank(runs[i].outcome), i))
        .expect("at least one run");
    let mut out = runs.into_iter().nth(worst_at).expect("in range");
    if out.outcome != Outcome::Pass {
        out.evidence.insert(
            0,
            format!(
                "run {} of {n} (seed {}) is the one reported: {} of {n} runs passed",
                worst_at + 1,
                out.seed,
                passes
            ),
        );
        if let Some(reason) = &out.reason {
            out.reason = Some(format!(
                "run {} of {n}, seed {}: {reason}",
                worst_at + 1,
                out.seed
            ));
        }
    }
    out.seed = seed;
    out.runs = u32::try_from(judged).unwrap_or(u32::MAX);
    out.passes = u32::try_from(passes).unwrap_or(u32::MAX);
    out.flaky = passes > 0 && fails > 0;
    out.repeat_seeds = seeds.into_iter().skip(1).collect();
    out.duration = duration;
    out
}

/// Blanks every payload out of a result's texts: a report never carries one.
pub fn redact_result(r: &mut RuleResult) {
    if let Some(reason) = &mut r.reason {
        secrets::redact_in_place(reason);
    }
    for v in &mut r.violations {
        secrets::redact_in_place(&mut v.location);
        secrets::redact_in_place(&mut v.expected);
        secrets::redact_in_place(&mut v.actual);
    }
    for e in &mut r.evidence {
        secrets::redact_in_place(e);
    }
    for n in &mut r.not_checked {
        secrets::redact_in_place(&mut n.what);
        secrets::redact_in_place(&mut n.why);
    }
    if let Some(p) = &mut r.property {
        secrets::redact_in_place(&mut p.shrunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{Hook, HookError, HookResult, Location, Testbed};
    use crate::profile::Profile;
    use crate::rules::rule;
    use rstest::rstest;

    struct Declared {
        profile: Profile,
        hooks: Vec<Hook>,
        checker: bool,
        locations: usize,
    }

    impl Fixture for Declared {
        fn provider_name(&self) -> String {
            "declared".into()
        }
        fn profile(&self) -> Profile {
            self.profile
        }
        fn hooks(&self) -> Vec<Hook> {
            self.hooks.clone()
        }
        fn locations(&self) -> Vec<Location> {
            (0..self.locations)
                .map(|i| Location {
                    name: format!("l{i}"),
                    placement: format!("z{i}"),
                })
                .collect()
        }
        fn has_checker(&self) -> bool {
            self.checker
        }
        fn open(&self) -> crate::BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
            Box::pin(async { Err(HookError::new("no backend")) })
        }
    }

    fn fixture(
        profile: &[(&str, &str)],
        hooks: &[Hook],
        checker: bool,
        locations: usize,
    ) -> Declared {
        let mut b = Profile::builder();
        for (a, v) in profile {
            b = b.with(a, v).unwrap();
        }
        Declared {
            profile: b.build().unwrap(),
            hooks: hooks.to_vec(),
            checker,
            locations,
        }
    }

    #[rstest]
    #[case::quota_none_is_not_applicable("CRE-QUOTA", &[("quota", "none")], &Hook::ALL, true, 2, Some(Outcome::NotApplicable))]
    #[case::quota_detected_runs("CRE-QUOTA", &[], &Hook::ALL, true, 2, None)]
    #[case::missing_capacity_hook_skips("CRE-QUOTA", &[], &[Hook::Faults], true, 2, Some(Outcome::Skipped))]
    #[case::no_checker("CHK-ORDER", &[], &Hook::ALL, false, 2, Some(Outcome::NotApplicable))]
    #[case::one_location("LST-ORDER", &[], &Hook::ALL, true, 1, Some(Outcome::Skipped))]
    #[case::logging_none("GEN-LOGGING", &[("logging", "none")], &Hook::ALL, true, 2, Some(Outcome::NotApplicable))]
    #[case::hookless_rule_always_runs("CRE-IDEMPOTENT", &[], &[], false, 1, None)]
    fn applicability_follows_profile_hooks_and_needs(
        #[case] id: &str,
        #[case] profile: &[(&str, &str)],
        #[case] hooks: &[Hook],
        #[case] checker: bool,
        #[case] locations: usize,
        #[case] want: Option<Outcome>,
    ) {
        let f = fixture(profile, hooks, checker, locations);
        let got = applicability(&f, rule(id).unwrap());
        assert_eq!(got.as_ref().map(|(o, _)| *o), want, "{got:?}");
        if let Some((_, reason)) = got {
            assert!(!reason.is_empty());
        }
    }

    #[tokio::test]
    async fn a_testbed_that_cannot_open_is_an_error_not_a_pass() {
        let f: Arc<dyn Fixture> = Arc::new(fixture(&[], &Hook::ALL, true, 2));
        let r = run_rule(
            f,
            rule("CRE-IDEMPOTENT").unwrap(),
            &RunOptions::default(),
            "0123456789",
        )
        .await;
        assert_eq!(r.outcome, Outcome::Error);
        assert!(r.reason.unwrap().contains("no backend"));
    }

    /// After a stop, no rule starts: each is Skipped (or keeps the outcome its
    /// applicability gives) and the verdict is partial.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_interrupted_run_starts_no_more_rules() {
        let f: Arc<dyn Fixture> = Arc::new(fixture(&[], &Hook::ALL, true, 2));
        let token = tokio_util::sync::CancellationToken::new();
        token.cancel();
        let opts = RunOptions {
            rules: Some(vec!["CRE-IDEMPOTENT".into(), "CHK-ORDER".into()]),
            stop: Some(token),
            ..RunOptions::default()
        };
        let mut started = 0;
        let report = run(f, opts, &mut |e| {
            if matches!(e, Event::CheckStarted { .. }) {
                started += 1;
            }
        })
        .await;
        assert_eq!(started, 0);
        let r = &report.results[0];
        assert_eq!(r.outcome, Outcome::Skipped);
        assert_eq!(
            r.reason.as_deref(),
            Some("not started: the run was interrupted")
        );
        assert_eq!(report.verdict, crate::suite::outcome::Verdict::Partial);
    }

    /// A fixture whose testbeds take a while to fail to open.
    struct SlowOpen(Declared);

    impl Fixture for SlowOpen {
        fn provider_name(&self) -> String {
            self.0.provider_name()
        }
        fn profile(&self) -> Profile {
            self.0.profile()
        }
        fn hooks(&self) -> Vec<Hook> {
            self.0.hooks()
        }
        fn locations(&self) -> Vec<Location> {
            self.0.locations()
        }
        fn has_checker(&self) -> bool {
            self.0.has_checker()
        }
        fn open(&self) -> crate::BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(40)).await;
                Err(HookError::new("no backend"))
            })
        }
    }

    /// The most rules running at once in a run of `opts`.
    async fn overlap(opts: RunOptions) -> (usize, Report) {
        let f: Arc<dyn Fixture> = Arc::new(SlowOpen(fixture(&[], &Hook::ALL, true, 2)));
        let (mut now, mut most) = (0usize, 0usize);
        let report = run(f, opts, &mut |e| match e {
            Event::CheckStarted { .. } => {
                now += 1;
                most = most.max(now);
            }
            Event::CheckFinished(r) if r.runs > 0 => now -= 1,
            _ => {}
        })
        .await;
        (most, report)
    }

    /// `--max-instances`: rules start only when their declared instances fit; a rule
    /// declaring more than the budget is Skipped.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_instance_budget_admits_rules_that_fit() {
        let rules = Some(vec![
            "CRE-IDEMPOTENT".to_owned(),
            "CRE-MARK".to_owned(),
            "GET-STATELESS".to_owned(),
            "LST-AGREES".to_owned(),
        ]);
        let free = RunOptions {
            rules: rules.clone(),
            ..RunOptions::default()
        };
        let (most, _) = overlap(free).await;
        assert!(most > 1, "without a budget rules overlap ({most})");
        let tight = RunOptions {
            rules,
            max_instances: Some(1),
            ..RunOptions::default()
        };
        let (most, report) = overlap(tight).await;
        assert_eq!(most, 1, "one instance at a time");
        let agrees = report
            .results
            .iter()
            .find(|r| r.id == "LST-AGREES")
            .unwrap();
        assert_eq!(agrees.outcome, Outcome::Skipped);
        assert_eq!(
            agrees.reason.as_deref(),
            Some("holds up to 4 instances at once; --max-instances 1 allows fewer")
        );
    }

    #[test]
    fn a_spent_wall_budget_stops_the_run() {
        let opts = RunOptions {
            max_wall: Some(Duration::from_millis(5)),
            ..RunOptions::default()
        };
        let t0 = Instant::now();
        assert_eq!(opts.stopped(t0 + Duration::from_secs(1)), None);
        let why = opts.stopped(t0 - Duration::from_secs(1)).unwrap();
        assert_eq!(why, "not started: --max-wall 5 ms was spent");
        assert_eq!(
            RunOptions::default().stopped(t0 - Duration::from_secs(9)),
            None
        );
    }

    #[test]
    fn filters_select_ids_and_prefixes() {
        let r = rule("CRE-QUOTA").unwrap();
        assert!(selected(r, &None));
        assert!(selected(r, &Some(vec!["CRE-*".into()])));
        assert!(selected(r, &Some(vec!["CRE-QUOTA".into()])));
        assert!(!selected(r, &Some(vec!["CRE-QUOT".into()])));
        assert!(!selected(r, &Some(vec!["GET-*".into()])));
    }

    #[test]
    fn rule_seeds_differ_per_rule_and_repeat_per_seed() {
        assert_eq!(rule_seed(7, "CRE-SECRET"), rule_seed(7, "CRE-SECRET"));
        assert_ne!(rule_seed(7, "CRE-SECRET"), rule_seed(7, "GET-MALFORMED"));
        assert_ne!(rule_seed(7, "CRE-SECRET"), rule_seed(8, "CRE-SECRET"));
    }
}
