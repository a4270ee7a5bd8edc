//! The JUnit XML report, through `quick-junit`: one testsuite per provider and one
//! testcase per rule, named by its trial name `conformance::<area>::<ID>` so CI
//! viewers line it up with `cargo test` output.
//!
//! Outcomes map as the contract says: Pass is a success, Fail a `<failure>` (message:
//! the reason; text: violations, property seed and shrunk input, evidence), Error an
//! `<error>`, Skipped and NotApplicable a `<skipped>` whose type is the outcome and
//! whose message is the reason (for NotApplicable it names the axis). A Fail that an
//! expected-failures or quarantine entry excuses is a `<skipped>` of type
//! `ExpectedFailure` or `Quarantined`, its details kept. A rule run more than once
//! carries its runs, passes, `flaky` and seeds as testcase properties. A stale or
//! expired entry is a failing testcase of its own (`expected-failures::<ID>`,
//! `quarantine::<ID>`). Run metadata
//! (profile, seed, catalogue hash, versions) are testsuite properties, so the file
//! alone is enough to replay the run. Times are in seconds.

use std::fmt::Write as _;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use super::view::violation_line;
use crate::suite::outcome::{EntryStatus, Outcome, Report, RuleResult, WaiverKind, rfc3339};

/// Renders `report` as a JUnit XML document.
pub fn render(report: &Report) -> String {
    let run = &report.run;
    let mut suite = TestSuite::new(run.provider.as_str());
    suite
        .set_timestamp(timestamp(run.started_at))
        .set_time(report.duration);
    suite.add_properties(properties(report));
    for r in &report.results {
        suite.add_test_case(test_case(&run.provider, r));
    }
    // A stale or expired entry fails the run: a failing testcase of its own, so a
    // viewer shows the run red for the same reason the exit code does.
    for w in report.waivers.iter().filter(|w| w.status.fails_run()) {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(format!("{} entry: {}", w.status.as_str(), w.message))
            .set_type(match w.status {
                EntryStatus::Stale => "StaleEntry",
                _ => "ExpiredEntry",
            });
        let file = match w.kind {
            WaiverKind::ExpectedFailure => "expected-failures",
            WaiverKind::Quarantine => "quarantine",
        };
        let mut case = TestCase::new(format!("{file}::{}", w.rule), s);
        case.set_classname(run.provider.as_str());
        suite.add_test_case(case);
    }
    let mut doc = quick_junit::Report::new("conformance");
    if let Ok(uuid) = run.run_id.parse::<uuid::Uuid>() {
        doc.set_uuid(uuid);
    }
    doc.set_timestamp(timestamp(run.started_at))
        .set_time(report.duration)
        .add_test_suite(suite);
    // Serialising into memory has no I/O to fail, and quick-junit strips characters
    // XML cannot hold, so this cannot fail.
    let mut out = doc.to_string().expect("a junit report always serialises");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn timestamp(t: std::time::SystemTime) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::<chrono::Utc>::from(t).fixed_offset()
}

fn properties(report: &Report) -> Vec<Property> {
    let run = &report.run;
    let mut props = vec![
        Property::new("verdict", report.verdict.as_str()),
        Property::new("schema_version", report.schema_version.as_str()),
        Property::new("run_id", run.run_id.as_str()),
        Property::new("provider_version", run.provider_version.as_str()),
        Property::new("suite_version", run.suite_version.as_str()),
        Property::new("catalogue_hash", run.catalogue_hash.as_str()),
        Property::new("seed", run.seed.to_string()),
        Property::new("real_backend", run.real_backend.to_string()),
        Property::new("started_at", rfc3339(run.started_at)),
        Property::new(
            "hooks",
            run.hooks
                .iter()
                .map(|h| h.as_str())
                .collect::<Vec<_>>()
                .join(","),
        ),
    ];
    for (name, commit) in [
        ("provider_commit", &run.provider_commit),
        ("suite_commit", &run.suite_commit),
    ] {
        if let Some(c) = commit {
            props.push(Property::new(name, c.as_str()));
        }
    }
    for (name, dirty) in [
        ("provider_dirty", run.provider_dirty),
        ("suite_dirty", run.suite_dirty),
    ] {
        if let Some(d) = dirty {
            props.push(Property::new(name, d.to_string()));
        }
    }
    for (loc, versions) in &run.backend_versions {
        for (k, v) in versions {
            props.push(Property::new(format!("backend.{loc}.{k}"), v.as_str()));
        }
    }
    for (axis, value) in run.profile.entries() {
        props.push(Property::new(format!("profile.{}", axis.key()), value));
    }
    for (k, v) in &run.environment {
        props.push(Property::new(format!("environment.{k}"), v.as_str()));
    }
    if !report.swept.is_empty() {
        props.push(Property::new("swept", report.swept.join(",")));
    }
    let o = &run.options;
    if let Some(rules) = &o.rules {
        props.push(Property::new("options.rules", rules.join(",")));
    }
    props.push(Property::new("options.cases", o.cases.to_string()));
    props.push(Property::new("options.steps", o.steps.to_string()));
    props.push(Property::new(
        "options.rule_timeout_ms",
        o.rule_timeout.as_millis().to_string(),
    ));
    props.push(Property::new(
        "options.concurrency",
        o.concurrency.to_string(),
    ));
    for (id, n) in &o.rule_seeds {
        props.push(Property::new(
            format!("options.rule_seed.{id}"),
            n.to_string(),
        ));
    }
    if !o.skip.is_empty() {
        props.push(Property::new("options.skip", o.skip.join(",")));
    }
    if o.repeat > 1 {
        props.push(Property::new("options.repeat", o.repeat.to_string()));
    }
    if let Some(limit) = o.max_wall {
        props.push(Property::new(
            "options.max_wall_ms",
            limit.as_millis().to_string(),
        ));
    }
    for w in &report.waivers {
        props.push(Property::new(
            format!(
                "{}.{}",
                match w.kind {
                    WaiverKind::ExpectedFailure => "expected_failure",
                    WaiverKind::Quarantine => "quarantine",
                },
                w.rule
            ),
            format!(
                "{} (expires {}): {}",
                w.status.as_str(),
                w.expires,
                w.message
            ),
        ));
    }
    for u in &report.not_checked {
        props.push(Property::new(
            format!("not_checked.{}", u.rule),
            format!("{}: {}", u.what, u.why),
        ));
    }
    props
}

fn test_case(provider: &str, r: &RuleResult) -> TestCase {
    let reason = r.reason.clone().unwrap_or_default();
    let status = match r.outcome {
        Outcome::Pass => TestCaseStatus::success(),
        // An excused failure is no failure of the run: skipped, its type saying why,
        // with the failure's details kept.
        Outcome::Fail if r.waiver.is_some() => {
            let w = r.waiver.as_ref().expect("checked above");
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!(
                "{} until {}: {}; the failure: {reason}",
                w.kind.label(),
                w.expires,
                w.reason
            ))
            .set_type(match w.kind {
                WaiverKind::ExpectedFailure => "ExpectedFailure",
                WaiverKind::Quarantine => "Quarantined",
            })
            .set_description(details(r));
            s
        }
        Outcome::Fail | Outcome::Error => {
            let kind = if r.outcome == Outcome::Fail {
                NonSuccessKind::Failure
            } else {
                NonSuccessKind::Error
            };
            let mut s = TestCaseStatus::non_success(kind);
            s.set_message(reason)
                .set_type(r.outcome.as_str())
                .set_description(details(r));
            s
        }
        Outcome::Skipped | Outcome::NotApplicable => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(reason).set_type(r.outcome.as_str());
            s
        }
    };
    let mut case = TestCase::new(trial_name(r), status);
    case.set_classname(provider).set_time(r.duration);
    if let Some(log) = &r.log {
        case.add_property(Property::new("log", log.as_str()));
    }
    if r.runs > 1 {
        case.add_property(Property::new("runs", r.runs.to_string()));
        case.add_property(Property::new("passes", r.passes.to_string()));
        case.add_property(Property::new("flaky", r.flaky.to_string()));
        let seeds: Vec<String> = std::iter::once(r.seed)
            .chain(r.repeat_seeds.iter().copied())
            .map(|s| s.to_string())
            .collect();
        case.add_property(Property::new("seeds", seeds.join(",")));
    }
    if !r.outcome.is_failure() && !r.evidence.is_empty() {
        case.set_system_out(evidence_text(r));
    }
    case
}

/// `conformance::<area>::<ID>`, as the cargo-test harness names the trial.
fn trial_name(r: &RuleResult) -> String {
    format!("conformance::{}::{}", r.area, r.id)
}

/// The body of a `<failure>` or `<error>`: violations, property, evidence.
fn details(r: &RuleResult) -> String {
    let mut out = String::new();
    for v in &r.violations {
        let _ = writeln!(out, "violation {}", violation_line(v));
    }
    for f in super::view::fault_lines(r) {
        let _ = writeln!(out, "fault {f}");
    }
    if let Some(p) = &r.property {
        let _ = writeln!(
            out,
            "property seed {}, replay with {}, shrunk input:",
            p.seed, p.replay
        );
        for line in p.shrunk.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    if !r.evidence.is_empty() {
        out.push_str("evidence:\n");
        out.push_str(&evidence_text(r));
    }
    out
}

fn evidence_text(r: &RuleResult) -> String {
    r.evidence.iter().map(|e| format!("  {e}\n")).collect()
}
