//! The suite's event stream and the run report built from it: outcomes, per-rule
//! results with evidence, and run metadata. Reporters are pure functions of these.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::fixture::Hook;
use crate::profile::Profile;

/// The version of the report format (`report.json` and its schema).
pub const REPORT_SCHEMA_VERSION: &str = "1.0.0";

/// What happened to one rule. Exactly one per rule and run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyFailure {
    /// The seed the property ran with.
    pub seed: u64,
    /// The shrunk input, as Debug text.
    pub shrunk: String,
}

/// The result of one rule.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
    /// Wall time of the check, cleanup included.
    #[serde(serialize_with = "ser_millis")]
    pub duration: Duration,
}

fn ser_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0)
}

/// Facts about a run, known before the first rule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunInfo {
    /// A unique ID; the per-run tag and name prefix derive from it.
    pub run_id: String,
    /// The provider's configured name.
    pub provider: String,
    /// The provider's version.
    pub provider_version: String,
    /// The declared profile.
    pub profile: Profile,
    /// The hooks the fixture offers.
    pub hooks: Vec<Hook>,
    /// This crate's version.
    pub suite_version: String,
    /// A sha256 over the rule catalogue (IDs and normative texts).
    pub catalogue_hash: String,
    /// The seed of every randomised part of the run.
    pub seed: u64,
    /// Whether the backend is real.
    pub real_backend: bool,
    /// Facts about the environment.
    pub environment: BTreeMap<String, String>,
    /// When the run started.
    #[serde(serialize_with = "ser_time")]
    pub started_at: SystemTime,
}

fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

/// Formats a time as RFC 3339 in UTC with second precision.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil-from-days, proleptic Gregorian calendar.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// Counts of outcomes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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
        }
        s
    }

    /// Total rules.
    pub fn total(&self) -> usize {
        self.pass + self.fail + self.error + self.skipped + self.not_applicable
    }

    /// Whether the run passed: no Fail and no Error.
    pub fn ok(&self) -> bool {
        self.fail == 0 && self.error == 0
    }
}

/// One event of a run. Reporters consume these in order.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
        #[serde(serialize_with = "ser_millis")]
        duration: Duration,
        /// Instances carrying the run's tags that the final sweep had to remove.
        swept: Vec<String>,
    },
}

/// A whole run, folded from its events: what every file reporter renders.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The report format version.
    pub schema_version: String,
    /// Run metadata.
    pub run: RunInfo,
    /// Outcome counts.
    pub summary: Summary,
    /// One result per rule, catalogue order.
    pub results: Vec<RuleResult>,
    /// Wall time of the run.
    #[serde(serialize_with = "ser_millis")]
    pub duration: Duration,
    /// Leftovers the final sweep removed.
    pub swept: Vec<String>,
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
        Some(Report {
            schema_version: REPORT_SCHEMA_VERSION.to_owned(),
            summary: Summary::of(&results),
            run: run?,
            results,
            duration,
            swept,
        })
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
    }
}
