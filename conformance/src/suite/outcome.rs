//! The suite's event stream and the run report built from it: outcomes, per-rule
//! results with evidence, and run metadata. Reporters are pure functions of these.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize};

use crate::fixture::Hook;
use crate::profile::Profile;

/// The version of the report format (`report.json` and its schema).
pub const REPORT_SCHEMA_VERSION: &str = "2.3.0";

/// What happened to one rule. Exactly one per rule and run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Outcome {
    /// The check ran and the provider obeyed the rule.
    Pass,
    /// The provider broke the rule.
    Fail,
    /// The harness or the environment broke; the rule could not be judged.
    Error,
    /// A fixture hook or need the rule depends on is missing.
    Skipped,
    /// The declared profile makes the rule moot.
    NotApplicable,
}

impl Outcome {
    /// Every outcome, in report order.
    pub const ALL: [Outcome; 5] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Error,
        Outcome::Skipped,
        Outcome::NotApplicable,
    ];

    /// The outcome's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "Pass",
            Outcome::Fail => "Fail",
            Outcome::Error => "Error",
            Outcome::Skipped => "Skipped",
            Outcome::NotApplicable => "NotApplicable",
        }
    }

    /// Whether the run fails because of it.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Fail | Outcome::Error)
    }
}

/// One broken expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The rule broken.
    pub rule: String,
    /// Where in the check: the step or parameter case.
    pub location: String,
    /// What the contract expects.
    pub expected: String,
    /// What the provider did.
    pub actual: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at {}: expected {}, got {}",
            self.rule, self.location, self.expected, self.actual
        )
    }
}

/// A failing property's reproduction data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyFailure {
    /// The seed the property ran with (the rule's seed).
    pub seed: u64,
    /// The shrunk input, as Debug text.
    pub shrunk: String,
    /// The suite flags that replay the failing property alone
    /// (`--rules GEN-MODEL --rule-seed GEN-MODEL=N --cases C`).
    pub replay: String,
}

/// A sub-assertion of a rule that the run could not check, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotChecked {
    /// What was not checked (`resources unchanged after the repeat`).
    pub what: String,
    /// Why (`the fixture has no inventory hook`).
    pub why: String,
}

/// A fault a check injected through the faults hook, and whether it fired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InjectedFault {
    /// The location it applied to; `None` for every location.
    pub location: Option<String>,
    /// When it was to fire: `nth(3)`, `named(DomainDefineXML)`, `always`.
    pub trigger: String,
    /// What it did: `transient`, `hang`, `lost-reply`, `delay(200ms)`, …
    pub kind: String,
    /// Whether the fixture reported it fired.
    pub fired: bool,
}

impl InjectedFault {
    /// The record of `spec`, fired or not.
    pub fn of(spec: &crate::fixture::FaultSpec, fired: bool) -> InjectedFault {
        use crate::fixture::{FaultKind, Trigger};
        InjectedFault {
            location: spec.location.clone(),
            trigger: match &spec.trigger {
                Trigger::Nth(k) => format!("nth({k})"),
                Trigger::Named(n) => format!("named({n})"),
                Trigger::Always => "always".into(),
            },
            kind: match &spec.kind {
                FaultKind::Transient => "transient".into(),
                FaultKind::Permanent => "permanent".into(),
                FaultKind::NotFound => "not-found".into(),
                FaultKind::Quota => "quota".into(),
                FaultKind::Hang => "hang".into(),
                FaultKind::Delay(d) => format!("delay({}ms)", d.as_millis()),
                FaultKind::Drop => "drop".into(),
                FaultKind::LostReply => "lost-reply".into(),
            },
            fired,
        }
    }
}

/// The result of one rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleResult {
    /// The rule's ID.
    pub id: String,
    /// The rule's title.
    pub title: String,
    /// The rule's area (`create`, `get`, …).
    pub area: String,
    /// The outcome.
    pub outcome: Outcome,
    /// Why, for every outcome but Pass: the skip or not-applicable reason, the first
    /// violation, or the harness error.
    pub reason: Option<String>,
    /// Every violation found (Fail only).
    pub violations: Vec<Violation>,
    /// What the check did: parameter cases, observations, notes.
    pub evidence: Vec<String>,
    /// A failing property's seed and shrunk input.
    pub property: Option<PropertyFailure>,
    /// The rule's own seed (derived from the run's seed unless given with
    /// `--rule-seed`); every randomised part of the check draws from it.
    pub seed: u64,
    /// Sub-assertions the check could not make, with the reason. A rule that passed
    /// with any of these makes the run's verdict partial.
    pub not_checked: Vec<NotChecked>,
    /// The faults the check injected, in order, and whether each fired.
    pub faults: Vec<InjectedFault>,
    /// Wall time of the check, cleanup included (of every repetition together).
    #[serde(serialize_with = "ser_millis", deserialize_with = "de_millis")]
    pub duration: Duration,
    /// The most instances the check held at once, created through the provider and not
    /// yet deleted (of the reported run, with `--repeat`).
    #[serde(default)]
    pub peak_instances: u32,
    /// Times the check ran (`--repeat`); 0 for a rule that never ran.
    #[serde(default)]
    pub runs: u32,
    /// Runs that passed.
    #[serde(default)]
    pub passes: u32,
    /// Whether the rule both passed and failed across its runs.
    #[serde(default)]
    pub flaky: bool,
    /// The seed of each run after the first, derived from the rule's seed and the
    /// repetition (the first run uses the rule's seed); empty without `--repeat`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeat_seeds: Vec<u64>,
    /// The baseline or quarantine entry that keeps this rule's Fail from failing the
    /// run.
    #[serde(default)]
    pub waiver: Option<Waiver>,
    /// The rule's log file, relative to the report directory (`logs/ID.log`), for a
    /// rule that failed or errored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

impl RuleResult {
    /// Whether this result fails the run: a Fail no entry excuses, or an Error.
    pub fn fails_run(&self) -> bool {
        match self.outcome {
            Outcome::Fail => self.waiver.is_none(),
            Outcome::Error => true,
            _ => false,
        }
    }
}

/// Which file an entry that excuses a failure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaiverKind {
    /// `--expected-failures`: the rule is known to fail.
    ExpectedFailure,
    /// `--quarantine`: the rule is known to be flaky.
    Quarantine,
}

impl WaiverKind {
    /// The kind as reports print it.
    pub fn label(self) -> &'static str {
        match self {
            WaiverKind::ExpectedFailure => "expected failure",
            WaiverKind::Quarantine => "quarantined",
        }
    }
}

/// Why a rule's Fail does not fail the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiver {
    /// The file it comes from.
    pub kind: WaiverKind,
    /// The entry's reason.
    pub reason: String,
    /// The last day the entry holds (`YYYY-MM-DD`, UTC).
    pub expires: String,
}

/// What became of one entry of an expected-failures or quarantine file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryStatus {
    /// The rule failed and the entry excused it.
    Applied,
    /// The rule passed: the entry is stale and fails the run until it is removed.
    Stale,
    /// The entry is past its expiry date: it excuses nothing and fails the run.
    Expired,
    /// The rule was not judged Pass or Fail (not selected, skipped, not applicable,
    /// errored), or passed while quarantined: the entry did nothing.
    Unused,
}

impl EntryStatus {
    /// Whether the entry fails the run.
    pub fn fails_run(self) -> bool {
        matches!(self, EntryStatus::Stale | EntryStatus::Expired)
    }

    /// The status's name (`applied`, `stale`, `expired`, `unused`).
    pub fn as_str(self) -> &'static str {
        match self {
            EntryStatus::Applied => "applied",
            EntryStatus::Stale => "stale",
            EntryStatus::Expired => "expired",
            EntryStatus::Unused => "unused",
        }
    }
}

/// One entry of an expected-failures or quarantine file and what the run made of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaiverEntry {
    /// The file it comes from.
    pub kind: WaiverKind,
    /// The rule it names.
    pub rule: String,
    /// Why the rule is listed.
    pub reason: String,
    /// The last day the entry holds (`YYYY-MM-DD`, UTC).
    pub expires: String,
    /// What became of it.
    pub status: EntryStatus,
    /// The status in a sentence, with what to do about it.
    pub message: String,
}

fn ser_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0)
}

/// Facts about a run, known before the first rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// A unique ID; the per-run tag and name prefix derive from it.
    pub run_id: String,
    /// The provider's configured name.
    pub provider: String,
    /// The provider's version.
    pub provider_version: String,
    /// The source commit the provider was built from, when the run was told it
    /// (`--provider-commit`).
    #[serde(default)]
    pub provider_commit: Option<String>,
    /// Whether the provider's checkout had changes not committed when it was built,
    /// when the run was told (`--provider-dirty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_dirty: Option<bool>,
    /// The declared profile.
    pub profile: Profile,
    /// The hooks the fixture offers.
    pub hooks: Vec<Hook>,
    /// This crate's version.
    pub suite_version: String,
    /// The git commit this crate was built from; `None` when it was built outside a
    /// git checkout.
    #[serde(default)]
    pub suite_commit: Option<String>,
    /// Whether this crate's files had changes not committed when it was built; `None`
    /// when it was built outside a git checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_dirty: Option<bool>,
    /// The backend's versions at each location, as the fixture reported them
    /// (kvm2: `libvirt`, `qemu`); empty when it could not tell.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_versions: BTreeMap<String, BTreeMap<String, String>>,
    /// A sha256 over the rule catalogue (IDs and normative texts).
    pub catalogue_hash: String,
    /// The seed of every randomised part of the run.
    pub seed: u64,
    /// Whether the backend is real.
    pub real_backend: bool,
    /// Facts about the environment.
    pub environment: BTreeMap<String, String>,
    /// The options that shaped the run.
    pub options: RunSettings,
    /// When the run started.
    #[serde(serialize_with = "ser_time", deserialize_with = "de_time")]
    pub started_at: SystemTime,
}

/// The options a run was made with, as its report records them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The `--rules` selection; `None` when every rule was selected.
    pub rules: Option<Vec<String>>,
    /// Cases each property ran (after the real-backend cap).
    pub cases: u32,
    /// Create and Delete steps the step-wise checks interrupted at most.
    pub steps: u32,
    /// The limit of one rule's check, cleanup included.
    #[serde(serialize_with = "ser_millis", deserialize_with = "de_millis")]
    pub rule_timeout: Duration,
    /// Rules checked at once.
    pub concurrency: usize,
    /// Rule seeds given explicitly (`--rule-seed ID=N`), by rule ID.
    pub rule_seeds: BTreeMap<String, u64>,
    /// Patterns of rules skipped on request (`--skip`).
    #[serde(default)]
    pub skip: Vec<String>,
    /// Times each rule's check ran (`--repeat`).
    #[serde(default = "one")]
    pub repeat: u32,
    /// The wall-time budget after which no rule started (`--max-wall`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_millis",
        deserialize_with = "de_opt_millis"
    )]
    pub max_wall: Option<Duration>,
    /// The most instances the running rules could hold together (`--max-instances`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_instances: Option<u32>,
    /// The shard of the selection this run checked (`--shard K/N`) and its rules; a
    /// report merged from shards has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::suite::shard::ShardInfo>,
    /// The failures after which no rule started (`--max-fail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_fail: Option<u32>,
}

fn ser_opt_millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ser_millis(d, s),
        None => s.serialize_none(),
    }
}

fn de_opt_millis<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    de_millis(d).map(Some)
}

fn one() -> u32 {
    1
}

/// Reads what [`ser_millis`] writes: milliseconds, kept to the microsecond.
fn de_millis<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let millis = f64::deserialize(d)?;
    if !(millis.is_finite() && millis >= 0.0) {
        return Err(serde::de::Error::custom(format!(
            "{millis} is not a duration in milliseconds"
        )));
    }
    Ok(Duration::from_micros((millis * 1000.0).round() as u64))
}

fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

/// Reads what [`ser_time`] writes: an RFC 3339 time.
fn de_time<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let text = String::deserialize(d)?;
    let ts: jiff::Timestamp = text
        .parse()
        .map_err(|e| serde::de::Error::custom(format!("{text:?} is not an RFC 3339 time: {e}")))?;
    SystemTime::try_from(ts)
        .map_err(|e| serde::de::Error::custom(format!("{text:?} is out of range: {e}")))
}

/// Formats a time as RFC 3339 in UTC to the second (`2026-12-02T00:00:00Z`); a
/// fraction of a second is dropped.
pub fn rfc3339(t: SystemTime) -> String {
    let ts = jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("{ts:.0}")
}

/// Counts of outcomes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Rules that passed.
    pub pass: usize,
    /// Rules the provider broke.
    pub fail: usize,
    /// Rules the harness could not judge.
    pub error: usize,
    /// Rules skipped for a missing hook.
    pub skipped: usize,
    /// Rules the profile makes moot.
    pub not_applicable: usize,
    /// Rules counted under `fail` whose failure an expected-failures or quarantine
    /// entry excused.
    #[serde(default)]
    pub waived: usize,
}

impl Summary {
    /// Counts `results`.
    pub fn of(results: &[RuleResult]) -> Summary {
        let mut s = Summary::default();
        for r in results {
            *match r.outcome {
                Outcome::Pass => &mut s.pass,
                Outcome::Fail => &mut s.fail,
                Outcome::Error => &mut s.error,
                Outcome::Skipped => &mut s.skipped,
                Outcome::NotApplicable => &mut s.not_applicable,
            } += 1;
            if r.outcome == Outcome::Fail && r.waiver.is_some() {
                s.waived += 1;
            }
        }
        s
    }

    /// Total rules.
    pub fn total(&self) -> usize {
        self.pass + self.fail + self.error + self.skipped + self.not_applicable
    }

    /// Whether the run passed: no Fail (but excused ones) and no Error.
    pub fn ok(&self) -> bool {
        self.fail == self.waived && self.error == 0
    }
}

/// A run's verdict: what the run proved of the whole catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every rule of the catalogue ran and was Pass or NotApplicable, and every
    /// sub-assertion was checked.
    Pass,
    /// No Fail and no Error, but something was not checked: a rule was Skipped or not
    /// selected, a rule has a sub-assertion it could not check, or a rule failed that
    /// an expected-failures or quarantine entry excuses.
    Partial,
    /// A rule failed, or an expected-failures or quarantine entry is stale or expired.
    Fail,
    /// No rule failed, but one errored: the harness or the environment broke.
    Error,
}

impl Verdict {
    /// Every verdict, best first.
    pub const ALL: [Verdict; 4] = [
        Verdict::Pass,
        Verdict::Partial,
        Verdict::Fail,
        Verdict::Error,
    ];

    /// The verdict's name as reports print it (`pass`, `partial`, `fail`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Partial => "partial",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }

    /// The verdict of `results` out of a catalogue of `catalogue` rules.
    pub fn of(results: &[RuleResult], catalogue: usize) -> Verdict {
        if results
            .iter()
            .any(|r| r.outcome == Outcome::Fail && r.waiver.is_none())
        {
            Verdict::Fail
        } else if results.iter().any(|r| r.outcome == Outcome::Error) {
            Verdict::Error
        } else if results.len() < catalogue
            || results.iter().any(|r| {
                r.outcome == Outcome::Skipped
                    || r.outcome == Outcome::Fail
                    || !r.not_checked.is_empty()
            })
        {
            Verdict::Partial
        } else {
            Verdict::Pass
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a rule that `--rules` left out is not checked.
pub const NOT_SELECTED: &str = "not selected for this run";

/// Something a run did not check: a rule not selected or skipped, or one
/// sub-assertion of a rule that ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unchecked {
    /// The rule's ID.
    pub rule: String,
    /// What was not checked: `the whole rule`, or the sub-assertion.
    pub what: String,
    /// Why.
    pub why: String,
}

/// One event of a run. Reporters consume these in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// The run started.
    RunStarted(RunInfo),
    /// A rule's check started.
    CheckStarted {
        /// The rule's ID.
        id: String,
    },
    /// A rule's check finished (or was skipped without running).
    CheckFinished(RuleResult),
    /// The run finished; the sweep found these leftovers (if any).
    RunFinished {
        /// Wall time of the run.
        #[serde(serialize_with = "ser_millis", deserialize_with = "de_millis")]
        duration: Duration,
        /// Instances carrying the run's tags that the final sweep had to remove.
        swept: Vec<String>,
    },
}

/// A whole run, folded from its events: what every file reporter renders.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The report format version.
    pub schema_version: String,
    /// What the run proved: pass, partial, fail or error.
    pub verdict: Verdict,
    /// Run metadata.
    pub run: RunInfo,
    /// Outcome counts.
    pub summary: Summary,
    /// Everything the run did not check, and why: rules not selected, skipped rules,
    /// and sub-assertions of rules that ran (in catalogue order).
    pub not_checked: Vec<Unchecked>,
    /// One result per rule, catalogue order.
    pub results: Vec<RuleResult>,
    /// Wall time of the run.
    #[serde(serialize_with = "ser_millis", deserialize_with = "de_millis")]
    pub duration: Duration,
    /// Leftovers the final sweep removed.
    pub swept: Vec<String>,
    /// Every entry of the expected-failures and quarantine files, and what became of
    /// it.
    #[serde(default)]
    pub waivers: Vec<WaiverEntry>,
    /// Why the run stopped starting rules before it had run them all (`--max-fail`);
    /// such a run's verdict is never pass or partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
}

impl Report {
    /// Folds an event stream into a report; `None` if the stream has no RunStarted.
    pub fn from_events(events: &[Event]) -> Option<Report> {
        let mut run = None;
        let mut results = Vec::new();
        let mut duration = Duration::ZERO;
        let mut swept = Vec::new();
        for e in events {
            match e {
                Event::RunStarted(info) => run = Some(info.clone()),
                Event::CheckStarted { .. } => {}
                Event::CheckFinished(r) => results.push(r.clone()),
                Event::RunFinished {
                    duration: d,
                    swept: s,
                } => {
                    duration = *d;
                    swept = s.clone();
                }
            }
        }
        let order = |id: &str| {
            crate::rules::CATALOGUE
                .iter()
                .position(|r| r.id == id)
                .unwrap_or(usize::MAX)
        };
        results.sort_by_key(|r: &RuleResult| order(&r.id));
        let catalogue = crate::rules::CATALOGUE;
        let mut not_checked = Vec::new();
        for rule in catalogue {
            match results.iter().find(|r| r.id == rule.id) {
                None => not_checked.push(Unchecked {
                    rule: rule.id.into(),
                    what: "the whole rule".into(),
                    why: NOT_SELECTED.into(),
                }),
                Some(r) if r.outcome == Outcome::Skipped => not_checked.push(Unchecked {
                    rule: rule.id.into(),
                    what: "the whole rule".into(),
                    why: r.reason.clone().unwrap_or_else(|| "skipped".into()),
                }),
                Some(r) => not_checked.extend(r.not_checked.iter().map(|n| Unchecked {
                    rule: rule.id.into(),
                    what: n.what.clone(),
                    why: n.why.clone(),
                })),
            }
        }
        Some(Report {
            schema_version: REPORT_SCHEMA_VERSION.to_owned(),
            verdict: Verdict::of(&results, catalogue.len()),
            summary: Summary::of(&results),
            not_checked,
            run: run?,
            results,
            duration,
            swept,
            waivers: Vec::new(),
            stopped_early: None,
        })
    }

    /// Counts the outcomes and judges the verdict again, after the results or the
    /// waivers changed: a stale or expired entry fails the run.
    pub fn refresh(&mut self) {
        self.summary = Summary::of(&self.results);
        self.verdict = Verdict::of(&self.results, crate::rules::CATALOGUE.len());
        if self.waivers.iter().any(|w| w.status.fails_run()) {
            self.verdict = Verdict::Fail;
        }
        if self.stopped_early.is_some() && matches!(self.verdict, Verdict::Pass | Verdict::Partial)
        {
            self.verdict = Verdict::Fail;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_169_600);
        assert_eq!(rfc3339(t), "2026-12-02T00:00:00Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400 + 3661);
        assert_eq!(rfc3339(leap), "2000-02-29T01:01:01Z");
        let fraction = t + Duration::from_millis(999);
        assert_eq!(rfc3339(fraction), "2026-12-02T00:00:00Z");
    }
}
