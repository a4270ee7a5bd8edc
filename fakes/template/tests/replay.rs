//! Replaying a property rule from its seed, against the template provider.
//!
//! - `the_recorded_rule_seed_replays_the_same_cases`: GEN-MODEL runs once under one
//!   run seed; its report records the rule's own seed. A second run under another run
//!   seed, given that rule seed, makes exactly the same provider calls and fault
//!   injections (names compared with the run's random part stripped); a third, given
//!   another rule seed, makes different ones.
//! - `a_failing_property_prints_a_replay_that_reproduces_it`: against a mutant that
//!   breaks GEN-MODEL (run alone), the failure's message carries a command-line replay and a
//!   cargo-test replay; both, run again under another run seed, fail with the same
//!   seed and the same shrunk input.
//!
//! `cargo test -p template-provider --test replay`

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use conformance::fixture::{
    Capacity, FaultId, FaultSpec, Faults, Fixture, HookResult, Inventory, Location, Observation,
    Planting, Reachability, Rotation, StateControl, Testbed, WrapFixture,
};
use conformance::rules::CATALOGUE;
use conformance::suite::outcome::{Outcome, Report, RuleResult};
use conformance::suite::runner::{RunOptions, parse_rule_seeds, run};
use conformance::{
    BoxFuture, Checker, CreateRequest, Ctx, Instance, Listing, Profile, Provider, ProviderId,
};
use template_provider::TemplateFixture;
use template_provider::mutants::MUTANTS;

/// The property rule replayed: random operation sequences with seeded faults.
const RULE: &str = "GEN-MODEL";

/// Property cases per run: enough to draw distinct sequences, few enough to be quick.
const CASES: u32 = 8;

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, line: String) {
    log.lock().unwrap().push(line);
}

// ---------------------------------------------------------------------------
// A fixture that records what the check asks of the provider and of the faults
// hook, and otherwise passes everything through unchanged.

/// The template fixture whose testbeds record into `log`.
fn recording(log: Log) -> WrapFixture<TemplateFixture> {
    WrapFixture::new(
        TemplateFixture::default(),
        Box::new(move |tb| {
            let tb: Arc<dyn Testbed> = Arc::from(tb);
            Box::new(RecordingBed {
                faults: RecordingFaults {
                    tb: tb.clone(),
                    log: log.clone(),
                },
                tb,
                log: log.clone(),
            })
        }),
    )
}

struct RecordingBed {
    tb: Arc<dyn Testbed>,
    faults: RecordingFaults,
    log: Log,
}

impl RecordingBed {
    fn wrap(&self, p: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(RecordingProvider {
            inner: p,
            log: self.log.clone(),
        })
    }
}

impl Testbed for RecordingBed {
    fn provider(&self) -> Arc<dyn Provider> {
        self.wrap(self.tb.provider())
    }
    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        push(&self.log, "restart".into());
        Ok(self.wrap(self.tb.restart()?))
    }
    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest {
        self.tb.request(name, tag, location)
    }
    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        self.tb.id_for(location, name)
    }
    fn location_of(&self, id: &ProviderId) -> Option<String> {
        self.tb.location_of(id)
    }
    fn malformed_ids(&self) -> Vec<String> {
        self.tb.malformed_ids()
    }
    fn unconfigured_id(&self, name: &str) -> ProviderId {
        self.tb.unconfigured_id(name)
    }
    fn unknown_placement(&self) -> String {
        self.tb.unknown_placement()
    }
    fn inventory(&self) -> Option<&dyn Inventory> {
        self.tb.inventory()
    }
    fn planting(&self) -> Option<&dyn Planting> {
        self.tb.planting()
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        self.tb.state_control()
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        self.tb.capacity()
    }
    fn faults(&self) -> Option<&dyn Faults> {
        self.tb.faults().map(|_| &self.faults as &dyn Faults)
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        self.tb.rotation()
    }
    fn observation(&self) -> Option<&dyn Observation> {
        self.tb.observation()
    }
    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        self.tb.teardown()
    }
}

struct RecordingFaults {
    tb: Arc<dyn Testbed>,
    log: Log,
}

impl RecordingFaults {
    fn inner(&self) -> &dyn Faults {
        self.tb
            .faults()
            .expect("offered only when the testbed has faults")
    }
}

impl Faults for RecordingFaults {
    fn inject(&self, spec: FaultSpec) -> HookResult<FaultId> {
        push(&self.log, format!("inject {spec:?}"));
        self.inner().inject(spec)
    }
    fn fired(&self, id: FaultId) -> bool {
        self.inner().fired(id)
    }
    fn clear(&self) {
        self.inner().clear()
    }
    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>> {
        push(&self.log, format!("reachability {location} {r:?}"));
        self.inner().set_reachability(location, r)
    }
    fn cause<'a>(&'a self, location: &'a str, reason: &'a str) -> BoxFuture<'a, HookResult<bool>> {
        push(&self.log, format!("cause {location} {reason}"));
        self.inner().cause(location, reason)
    }
    fn undo_cause<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        push(&self.log, format!("undo cause {location}"));
        self.inner().undo_cause(location)
    }
}

struct RecordingProvider {
    inner: Arc<dyn Provider>,
    log: Log,
}

impl Provider for RecordingProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> Profile {
        self.inner.profile()
    }
    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, conformance::Result<ProviderId>> {
        push(
            &self.log,
            format!("create {} tag {} at {}", req.name, req.tag, req.placement),
        );
        self.inner.create(ctx, req)
    }
    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<Instance>> {
        push(&self.log, format!("get {id}"));
        self.inner.get(ctx, id)
    }
    fn delete<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        push(&self.log, format!("delete {id}"));
        self.inner.delete(ctx, id)
    }
    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, conformance::Result<Listing>> {
        push(&self.log, format!("list {tag}"));
        self.inner.list_by_tag(ctx, tag)
    }
    fn checker(&self) -> Option<&dyn Checker> {
        self.inner.checker()
    }
}

// ---------------------------------------------------------------------------

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn only_rule(opts: RunOptions) -> RunOptions {
    RunOptions {
        rules: Some(vec![RULE.into()]),
        cases: CASES,
        ..opts
    }
}

/// The single result of a one-rule run.
fn result_of(report: &Report) -> &RuleResult {
    assert_eq!(report.results.len(), 1, "{:?}", report.results);
    let r = &report.results[0];
    assert_eq!(r.id, RULE);
    r
}

/// The first 8 characters of the run ID, which every name and tag of the run carries
/// (`c<run>-gen-model-<n>`, `t<run>-gen-model`).
fn run_short(report: &Report) -> String {
    report.run.run_id.chars().take(8).collect()
}

/// The property's evidence line with its seed and the digest of its inputs.
fn digest_line(r: &RuleResult) -> String {
    r.evidence
        .iter()
        .find(|e| e.contains("inputs digest"))
        .cloned()
        .unwrap_or_else(|| panic!("no inputs digest in the evidence: {:?}", r.evidence))
}

/// What a passing GEN-MODEL run asked for, in order, with the run's random part
/// replaced by `RUN`.
struct Recorded {
    seed: u64,
    calls: Vec<String>,
    digest: String,
}

fn record(rt: &tokio::runtime::Runtime, opts: RunOptions) -> Recorded {
    let log: Log = Arc::default();
    let fixture: Arc<dyn Fixture> = Arc::new(recording(log.clone()));
    let report = rt.block_on(run(fixture, only_rule(opts), &mut |_| {}));
    let r = result_of(&report);
    assert_eq!(
        r.outcome,
        Outcome::Pass,
        "{:?}: {:?}\n{:?}",
        r.reason,
        r.violations,
        r.evidence
    );
    let short = run_short(&report);
    let calls: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .map(|l| l.replace(&short, "RUN"))
        .collect();
    let named = format!("cRUN-{}-", RULE.to_ascii_lowercase());
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("create ") && c.contains(&named)),
        "no Create of a name {named}<n> was recorded: {calls:?}"
    );
    Recorded {
        seed: r.seed,
        calls,
        digest: digest_line(r),
    }
}

/// The first line where two call sequences part, for the failure message.
fn first_difference(a: &[String], b: &[String]) -> String {
    let at = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    format!(
        "{} and {} calls; they part at call {at}: {:?} vs {:?}",
        a.len(),
        b.len(),
        a.get(at),
        b.get(at)
    )
}

#[test]
fn the_recorded_rule_seed_replays_the_same_cases() {
    let rt = runtime();
    let first = record(
        &rt,
        RunOptions {
            seed: 1,
            ..RunOptions::default()
        },
    );

    // The seed the report recorded, given as the rule's seed under another run seed.
    let again = record(
        &rt,
        RunOptions {
            seed: 2,
            rule_seeds: BTreeMap::from([(RULE.to_owned(), first.seed)]),
            ..RunOptions::default()
        },
    );
    assert_eq!(again.seed, first.seed, "the rule ran with the given seed");
    assert!(
        first.calls == again.calls,
        "the same rule seed drew different cases: {}",
        first_difference(&first.calls, &again.calls)
    );
    assert_eq!(again.digest, first.digest);

    // Another rule seed draws other cases.
    let other_seed = first.seed.wrapping_add(1);
    let other = record(
        &rt,
        RunOptions {
            seed: 2,
            rule_seeds: BTreeMap::from([(RULE.to_owned(), other_seed)]),
            ..RunOptions::default()
        },
    );
    assert_eq!(other.seed, other_seed);
    assert!(
        other.calls != first.calls,
        "rule seeds {} and {other_seed} drew the same {} calls",
        first.seed,
        first.calls.len()
    );
    assert_ne!(other.digest, first.digest);
}

/// The text between `start` and the next backtick after it in `s`.
fn quoted_after<'a>(s: &'a str, start: &str) -> &'a str {
    let from = s
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in {s:?}"))
        + start.len();
    let len = s[from..]
        .find('`')
        .unwrap_or_else(|| panic!("no closing backtick after {start:?} in {s:?}"));
    &s[from..from + len]
}

#[test]
fn a_failing_property_prints_a_replay_that_reproduces_it() {
    // A mutant the kill matrix declares to fail GEN-MODEL; the one whose Create calls a
    // transient backend failure Permanent when there is one.
    let breaks = |m: &&template_provider::mutants::Mutant| m.declared.contains(&RULE);
    let mutant = MUTANTS
        .iter()
        .filter(breaks)
        .find(|m| m.name == "create-transient-is-permanent")
        .or_else(|| MUTANTS.iter().find(breaks))
        .expect("a mutant that breaks GEN-MODEL");

    let rt = runtime();
    let report = rt.block_on(run(
        Arc::new((mutant.build)()),
        only_rule(RunOptions {
            seed: 1,
            ..RunOptions::default()
        }),
        &mut |_| {},
    ));
    drop(rt);
    let failed = result_of(&report);
    assert_eq!(failed.outcome, Outcome::Fail, "{:?}", failed.reason);
    let property = failed.property.clone().expect("the property's failure");
    assert_eq!(property.seed, failed.seed);
    let message = failed
        .violations
        .iter()
        .map(|v| v.to_string())
        .find(|v| v.contains("shrunk input"))
        .unwrap_or_else(|| panic!("no property violation: {:?}", failed.violations));

    // The command line, as printed, run by the suite's CLI under another run seed.
    let flags = quoted_after(&message, "replay with `");
    assert_eq!(flags, property.replay);
    assert_eq!(
        flags,
        format!(
            "--rules {RULE} --rule-seed {RULE}={} --cases {CASES}",
            property.seed
        )
    );
    let out = tempfile::tempdir().unwrap();
    let mut args = vec!["conformance".to_owned()];
    args.extend(flags.split_whitespace().map(str::to_owned));
    args.extend(["--seed", "7", "--format", "md", "--out"].map(str::to_owned));
    args.push(out.path().display().to_string());
    let code = conformance::suite::cli::main_with(Arc::new((mutant.build)()), args);
    assert_eq!(code, conformance::suite::cli::EXIT_FAILED);
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        md.contains(&format!(
            "Property failed with seed {}; replay with `{}`",
            property.seed, property.replay
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!("```text\n{}\n```", property.shrunk)),
        "the replay shrank to another input than {}:\n{md}",
        property.shrunk
    );

    // The cargo-test form: the environment the harness reads, and its trial filter.
    let env = quoted_after(&message, "under cargo test with `");
    let vars: BTreeMap<&str, &str> = env
        .split_whitespace()
        .map(|kv| kv.split_once('=').expect("NAME=VALUE"))
        .collect();
    let entries: Vec<String> = vars["CONFORMANCE_RULE_SEED"]
        .split(',')
        .map(str::to_owned)
        .collect();
    let rule_seeds = parse_rule_seeds(&entries).expect("the harness accepts the rule seed");
    assert_eq!(
        rule_seeds,
        BTreeMap::from([(RULE.to_owned(), property.seed)])
    );
    let cases: u32 = vars["CONFORMANCE_CASES"]
        .parse()
        .expect("a number of cases");
    let filter = quoted_after(&message, "trial filter `");
    let trial = filter.strip_prefix("--exact ").expect("an exact filter");
    let rule = CATALOGUE
        .iter()
        .find(|r| r.trial_name() == trial)
        .unwrap_or_else(|| panic!("no trial named {trial}"));
    assert_eq!(rule.id, RULE);
    let rt = runtime();
    let replayed = rt.block_on(run(
        Arc::new((mutant.build)()),
        RunOptions {
            seed: 8,
            rules: Some(vec![rule.id.to_owned()]),
            cases,
            rule_seeds,
            ..RunOptions::default()
        },
        &mut |_| {},
    ));
    let again = result_of(&replayed);
    assert_eq!(again.outcome, Outcome::Fail);
    let p = again.property.as_ref().expect("the property fails again");
    assert_eq!((p.seed, &p.shrunk), (property.seed, &property.shrunk));
}
