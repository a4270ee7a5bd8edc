//! The JUnit XML report, through `quick-junit`: one testsuite per provider and one
//! testcase per rule, named by its trial name `conformance::<area>::<ID>` so CI
//! viewers line it up with `cargo test` output.
//!
//! Outcomes map as the contract says: Pass is a success, Fail a `<failure>` (message:
//! the reason; text: violations, property seed and shrunk input, evidence), Error an
//! `<error>`, Skipped and NotApplicable a `<skipped>` whose type is the outcome and
//! whose message is the reason (for NotApplicable it names the axis). Run metadata
//! (profile, seed, catalogue hash, versions) are testsuite properties, so the file
//! alone is enough to replay the run. Times are in seconds.

use std::fmt::Write as _;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use super::view::violation_line;
use crate::suite::outcome::{Outcome, Report, RuleResult, rfc3339};

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
