//! The reporters over one fixed sample run that has every outcome, violations, a
//! failed property and evidence: a snapshot per format, the JSON checked against
//! the committed schema, the JUnit file read back, the HTML escaped and rendered by
//! headless Chromium, and the CLI end to end.
//!
//! The sample is built with fixed run IDs, times and durations, so the snapshots
//! need no redaction.

#![cfg(feature = "suite")]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use conformance::fixture::{Fixture, Hook, HookError, HookResult, Location, Testbed};
use conformance::profile::Axis;
use conformance::rules::Area;
use conformance::suite::cli;
use conformance::suite::outcome::{
    Event, InjectedFault, NotChecked, Outcome, PropertyFailure, REPORT_SCHEMA_VERSION, Report,
    RuleResult, RunInfo, RunSettings, Verdict, Violation,
};
use conformance::suite::report::{self, Format};
use conformance::{BoxFuture, Profile};
use serde_json::Value;

// ---------------------------------------------------------------------------
// The sample run.

fn result(id: &str, area: &str, title: &str, outcome: Outcome, millis: u64) -> RuleResult {
    RuleResult {
        id: id.into(),
        title: title.into(),
        area: area.into(),
        outcome,
        reason: None,
        violations: Vec::new(),
        evidence: Vec::new(),
        property: None,
        seed: 7,
        not_checked: Vec::new(),
        faults: Vec::new(),
        duration: Duration::from_micros(millis * 1000 + 250),
        peak_instances: 0,
        runs: u32::from(!matches!(
            outcome,
            Outcome::Skipped | Outcome::NotApplicable
        )),
        passes: u32::from(outcome == Outcome::Pass),
        flaky: false,
        repeat_seeds: Vec::new(),
        waiver: None,
        log: None,
    }
}

fn sample_events() -> Vec<Event> {
    let profile = Profile::builder()
        .with("quota", "none")
        .unwrap()
        .build()
        .unwrap();
    let info = RunInfo {
        run_id: "0f9e8d7c6b5a49388271605f4e3d2c1b".into(),
        provider: "kvm2".into(),
        provider_version: "0.1.0".into(),
        provider_commit: Some("a1b2c3d4e5f6".into()),
        profile,
        hooks: vec![Hook::Inventory, Hook::Faults, Hook::Observation],
        suite_version: "0.0.0-sample".into(),
        suite_commit: Some("0123456789ab".into()),
        catalogue_hash: "5e".repeat(32),
        seed: 42,
        real_backend: false,
        environment: BTreeMap::from([
            ("arch".to_owned(), "x86_64".to_owned()),
            ("backend".to_owned(), "libvirt-fake 0.1.0".to_owned()),
            ("os".to_owned(), "linux".to_owned()),
        ]),
        options: RunSettings {
            rules: None,
            cases: 16,
            steps: 40,
            rule_timeout: Duration::from_secs(120),
            concurrency: 4,
            rule_seeds: BTreeMap::from([("CRE-SECRET".to_owned(), 488_782_666)]),
            skip: Vec::new(),
            repeat: 1,
            max_wall: None,
            max_instances: None,
        },
        started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_212_800),
    };

    let mut idempotent = result(
        "CRE-IDEMPOTENT",
        "create",
        "Repeating Create changes nothing",
        Outcome::Pass,
        12,
    );
    idempotent.not_checked = vec![NotChecked {
        what: "backend resources unchanged by the repeat".into(),
        why: "the fixture has no inventory hook".into(),
    }];
    idempotent.evidence = vec![
        "case same-request: the same ID came back".into(),
        "inventory before and after: 3 resources".into(),
    ];

    let mut quota = result(
        "CRE-QUOTA",
        "create",
        "Too little capacity is QuotaExceeded",
        Outcome::NotApplicable,
        0,
    );
    quota.duration = Duration::ZERO;
    quota.reason = Some("profile declares quota=none; the rule applies to quota=detected".into());

    let secret_violations = vec![
        Violation {
            rule: "CRE-SECRET".into(),
            location: "create at verbosity V2".into(),
            expected: "no cloud-init payload in any log line".into(),
            actual: "the payload appeared in a debug line: user-data=<b>\"s3cr3t\"</b> & more"
                .into(),
        },
        Violation {
            rule: "CRE-SECRET".into(),
            location: "error from a failed create".into(),
            expected: "no cloud-init payload in the error chain".into(),
            actual: "the payload appeared in the source error".into(),
        },
    ];
    let mut secret = result(
        "CRE-SECRET",
        "create",
        "The cloud-init payload never leaks",
        Outcome::Fail,
        840,
    );
    secret.reason = Some(secret_violations[0].to_string());
    secret.violations = secret_violations;
    secret.property = Some(PropertyFailure {
        seed: 0x1d2c_3b4a,
        shrunk: "[Create { name: \"a-0\", verbosity: V2 }, Restart, Get { name: \"a-0\" }]".into(),
        replay: "--rules CRE-SECRET --rule-seed CRE-SECRET=488782666".into(),
    });
    secret.evidence = vec![
        "captured 214 log lines and 61 spans".into(),
        "sentinel: a 32-byte random marker inside user-data".into(),
    ];

    let mut malformed = result(
        "GET-MALFORMED",
        "get",
        "A malformed ID is Permanent",
        Outcome::Pass,
        3,
    );
    malformed.evidence = vec![
        "case \"\": Permanent".into(),
        "case \"hosts//x\": Permanent".into(),
    ];

    let mut busy = result(
        "GET-BUSY",
        "get",
        "A busy backend is Transient",
        Outcome::Error,
        5_003,
    );
    busy.reason = Some("could not open a testbed: connection refused".into());

    let mut partial = result(
        "DEL-PARTIAL",
        "delete",
        "Delete tolerates missing parts",
        Outcome::Skipped,
        0,
    );
    partial.duration = Duration::ZERO;
    partial.reason = Some("the fixture lacks the planting hook(s)".into());

    let order_violation = Violation {
        rule: "LST-ORDER".into(),
        location: "list across two hosts".into(),
        expected: "host-a before host-b".into(),
        actual: "host-b first".into(),
    };
    let mut order = result(
        "LST-ORDER",
        "list",
        "Listings come in configuration order",
        Outcome::Fail,
        61_500,
    );
    order.reason = Some(order_violation.to_string());
    order.faults = vec![
        InjectedFault {
            location: Some("host-b".into()),
            trigger: "nth(2)".into(),
            kind: "lost-reply".into(),
            fired: true,
        },
        InjectedFault {
            location: None,
            trigger: "named(DomainDefineXML)".into(),
            kind: "delay(200ms)".into(),
            fired: false,
        },
    ];
    order.violations = vec![order_violation];

    let mut check = result(
        "CHK-ORDER",
        "check",
        "One entry per location, in order",
        Outcome::NotApplicable,
        0,
    );
    check.duration = Duration::ZERO;
    check.reason = Some("the provider has no Checker (Check is optional)".into());

    let results = vec![
        order, check, busy, idempotent, partial, secret, malformed, quota,
    ];
    let mut events = vec![Event::RunStarted(info)];
    for r in results {
        events.push(Event::CheckStarted { id: r.id.clone() });
        events.push(Event::CheckFinished(r));
    }
    events.push(Event::RunFinished {
        duration: Duration::from_millis(67_890),
        swept: vec!["cf-0f9e8d7c-lst-order-1".into()],
    });
    events
}

fn sample() -> Report {
    Report::from_events(&sample_events()).expect("the sample starts with RunStarted")
}

#[test]
fn the_sample_covers_every_outcome() {
    let r = sample();
    for o in Outcome::ALL {
        assert!(r.results.iter().any(|x| x.outcome == o), "{o:?} missing");
    }
    assert_eq!(r.results[0].id, "CRE-IDEMPOTENT", "catalogue order");
}

// ---------------------------------------------------------------------------
// Verdicts.

/// A report of `results`, every other rule of the catalogue left out unless `all`.
fn verdict_of(mut results: Vec<RuleResult>, all: bool) -> (Verdict, Report) {
    if all {
        for rule in conformance::rules::CATALOGUE {
            if !results.iter().any(|r| r.id == rule.id) {
                results.push(result(
                    rule.id,
                    rule.area.as_str(),
                    rule.title,
                    Outcome::Pass,
                    1,
                ));
            }
        }
    }
    let mut events = vec![sample_events().remove(0)];
    events.extend(results.into_iter().map(Event::CheckFinished));
    let report = Report::from_events(&events).unwrap();
    (report.verdict, report)
}

#[test]
fn the_verdict_never_claims_more_than_the_run_proved() {
    let pass = |id: &str| result(id, "create", "t", Outcome::Pass, 1);
    let with = |id: &str, o: Outcome| {
        let mut r = result(id, "create", "t", o, 1);
        r.reason = Some("why".into());
        r
    };
    assert_eq!(verdict_of(vec![], true).0, Verdict::Pass);
    let (v, report) = verdict_of(vec![pass("CRE-IDEMPOTENT")], false);
    assert_eq!(v, Verdict::Partial, "a selection of rules is partial");
    assert!(
        report
            .not_checked
            .iter()
            .any(|u| u.rule == "CRE-RESUME" && u.why.contains("not selected"))
    );
    let (v, report) = verdict_of(vec![with("CRE-QUOTA", Outcome::Skipped)], true);
    assert_eq!(v, Verdict::Partial, "a skipped rule is partial");
    assert!(report.not_checked.iter().any(|u| u.rule == "CRE-QUOTA"));
    assert_eq!(
        verdict_of(vec![with("CRE-QUOTA", Outcome::NotApplicable)], true).0,
        Verdict::Pass,
        "not applicable is as good as pass"
    );
    let mut unchecked = pass("CRE-IDEMPOTENT");
    unchecked.not_checked = vec![NotChecked {
        what: "resources unchanged".into(),
        why: "no inventory hook".into(),
    }];
    let (v, report) = verdict_of(vec![unchecked], true);
    assert_eq!(
        v,
        Verdict::Partial,
        "a pass with a sub-assertion not checked"
    );
    assert_eq!(report.not_checked.len(), 1);
    assert_eq!(
        verdict_of(vec![with("GET-BUSY", Outcome::Error)], true).0,
        Verdict::Error
    );
    let mut fail = with("GET-BUSY", Outcome::Fail);
    fail.violations = vec![Violation {
        rule: "GET-BUSY".into(),
        location: "l".into(),
        expected: "e".into(),
        actual: "a".into(),
    }];
    assert_eq!(
        verdict_of(vec![fail, with("GET-STATE", Outcome::Error)], true).0,
        Verdict::Fail,
        "a Fail outweighs an Error"
    );
    assert_eq!(sample().verdict, Verdict::Fail);
}

#[test]
fn every_format_shows_the_verdict_first_and_what_was_not_checked() {
    let mut r = result("CRE-IDEMPOTENT", "create", "t", Outcome::Pass, 1);
    r.not_checked = vec![NotChecked {
        what: "resources unchanged".into(),
        why: "no inventory hook".into(),
    }];
    let (_, report) = verdict_of(vec![r], false);
    let md = report::markdown::render(&report);
    let verdict_line = md.lines().find(|l| l.starts_with("**Verdict")).unwrap();
    assert!(verdict_line.contains("PARTIAL"), "{verdict_line}");
    assert!(md.find("**Verdict").unwrap() < md.find("## Summary").unwrap());
    assert!(md.contains("| CRE-IDEMPOTENT | resources unchanged | no inventory hook |"));
    let html = report::html::render(&report);
    assert!(html.contains("id=\"verdict\">PARTIAL<"));
    assert!(html.contains("resources unchanged"));
    let junit = report::junit::render(&report);
    assert!(
        junit.contains("name=\"verdict\" value=\"partial\""),
        "{junit}"
    );
    let json = json_of(&report);
    assert_eq!(json["verdict"], "partial");
    validate(&json).unwrap();
    let text = cli::summary_text(&report);
    assert!(text.trim_end().ends_with("verdict: partial"), "{text}");
    assert!(text.contains("CRE-IDEMPOTENT resources unchanged: no inventory hook"));
}

// ---------------------------------------------------------------------------
// Snapshots.

#[test]
fn json_snapshot() {
    insta::assert_snapshot!("report.json", report::json::render(&sample()));
}

#[test]
fn junit_snapshot() {
    insta::assert_snapshot!("junit.xml", report::junit::render(&sample()));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!("report.md", report::markdown::render(&sample()));
}

#[test]
fn html_snapshot() {
    insta::assert_snapshot!("report.html", report::html::render(&sample()));
}

// ---------------------------------------------------------------------------
// JSON and its schema.

fn schema() -> Value {
    serde_json::from_str(report::json::SCHEMA).expect("the schema is JSON")
}

/// Validates `instance` against the committed schema; the error lists every failure.
fn validate(instance: &Value) -> Result<(), String> {
    let mut compiler = boon::Compiler::new();
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource("urn:report-schema", schema())
        .map_err(|e| format!("add the schema: {e}"))?;
    let index = compiler
        .compile("urn:report-schema", &mut schemas)
        .map_err(|e| format!("compile the schema: {e:#}"))?;
    schemas
        .validate(instance, index)
        .map_err(|e| format!("{e:#}"))
}

fn json_of(report: &Report) -> Value {
    serde_json::from_str(&report::json::render(report)).expect("the report is JSON")
}

#[test]
fn the_sample_report_matches_the_schema() {
    validate(&json_of(&sample())).unwrap();
}

#[test]
fn an_empty_run_matches_the_schema() {
    let events = vec![sample_events().remove(0)];
    validate(&json_of(&Report::from_events(&events).unwrap())).unwrap();
}

#[test]
fn unknown_provenance_matches_the_schema() {
    let mut r = sample();
    r.run.provider_commit = None;
    r.run.suite_commit = None;
    let v = json_of(&r);
    assert_eq!(v["run"]["provider_commit"], Value::Null);
    assert_eq!(v["run"]["suite_commit"], Value::Null);
    validate(&v).unwrap();
}

/// A named way to break a valid report.
type Breakage = (&'static str, Box<dyn Fn(&mut Value)>);

#[test]
fn the_schema_rejects_broken_reports() {
    let good = json_of(&sample());
    let broken: Vec<Breakage> = vec![
        (
            "unknown outcome",
            Box::new(|v| v["results"][0]["outcome"] = "Maybe".into()),
        ),
        (
            "missing field",
            Box::new(|v| {
                v["summary"].as_object_mut().unwrap().remove("fail");
            }),
        ),
        (
            "extra field",
            Box::new(|v| v["run"]["colour"] = "blue".into()),
        ),
        (
            "unknown axis value",
            Box::new(|v| v["run"]["profile"]["quota"] = "lots".into()),
        ),
        (
            "fail without violations",
            Box::new(|v| {
                let fail = v["results"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|r| r["outcome"] == "Fail")
                    .unwrap();
                fail["violations"] = Value::Array(vec![]);
            }),
        ),
        (
            "other version",
            Box::new(|v| v["schema_version"] = "0.9.0".into()),
        ),
        (
            "empty provider commit",
            Box::new(|v| v["run"]["provider_commit"] = "".into()),
        ),
        (
            "negative duration",
            Box::new(|v| v["duration"] = (-1.0).into()),
        ),
    ];
    for (what, breaks) in broken {
        let mut v = good.clone();
        breaks(&mut v);
        assert!(
            validate(&v).is_err(),
            "the schema accepted a report with {what}"
        );
    }
}

fn enum_of(v: &Value) -> Vec<String> {
    v["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("no enum in {v}"))
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_schema_names_what_the_code_emits() {
    let s = schema();
    assert_eq!(
        s["properties"]["schema_version"]["const"],
        REPORT_SCHEMA_VERSION
    );
    assert!(
        s["$id"].as_str().unwrap().ends_with(REPORT_SCHEMA_VERSION),
        "the $id carries the version"
    );
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let defs = &s["$defs"];
    let outcomes: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str().to_owned()).collect();
    assert_eq!(enum_of(&defs["outcome"]), outcomes);
    let verdicts: Vec<_> = Verdict::ALL.iter().map(|v| v.as_str().to_owned()).collect();
    assert_eq!(enum_of(&defs["verdict"]), verdicts);
    let areas: Vec<_> = Area::ALL.iter().map(|a| a.as_str().to_owned()).collect();
    assert_eq!(enum_of(&defs["area"]), areas);
    let hooks: Vec<_> = Hook::ALL
        .iter()
        .map(|h| {
            serde_json::to_value(h)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(enum_of(&defs["hook"]), hooks);
    let axes = defs["profile"]["properties"].as_object().unwrap();
    let keys: Vec<_> = axes.keys().cloned().collect();
    let mut want: Vec<_> = Axis::ALL.iter().map(|a| a.key().to_owned()).collect();
    want.sort();
    assert_eq!(keys, want, "one property per axis");
    for a in Axis::ALL {
        assert_eq!(enum_of(&axes[a.key()]), a.values(), "{}", a.key());
    }
    let required: Vec<_> = defs["profile"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    let want: Vec<_> = Axis::ALL.iter().map(|a| a.key().to_owned()).collect();
    assert_eq!(required, want, "every axis is required, in contract order");
}

// ---------------------------------------------------------------------------
// JUnit.

#[test]
fn junit_reads_back_with_every_outcome_mapped() {
    let xml = report::junit::render(&sample());
    let doc = quick_junit::Report::deserialize_from_str(&xml).expect("valid junit");
    assert_eq!(doc.test_suites.len(), 1);
    let suite = &doc.test_suites[0];
    assert_eq!(suite.name.as_str(), "kvm2");
    assert_eq!((suite.tests, suite.failures, suite.errors), (8, 2, 1));
    let skipped = suite
        .test_cases
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::Skipped { .. }))
        .count();
    assert_eq!(skipped, 3);
    let case = |name: &str| {
        suite
            .test_cases
            .iter()
            .find(|c| c.name.as_str() == name)
            .unwrap_or_else(|| panic!("no testcase {name}"))
    };
    match &case("conformance::create::CRE-SECRET").status {
        quick_junit::TestCaseStatus::NonSuccess {
            kind: quick_junit::NonSuccessKind::Failure,
            message,
            description,
            ..
        } => {
            assert!(
                message
                    .as_ref()
                    .unwrap()
                    .as_str()
                    .contains("create at verbosity V2")
            );
            let text = description.as_ref().unwrap().as_str();
            assert!(text.contains("property seed 489438026"), "{text}");
            assert!(text.contains("captured 214 log lines"), "{text}");
        }
        other => panic!("CRE-SECRET: {other:?}"),
    }
    match &case("conformance::check::CHK-ORDER").status {
        quick_junit::TestCaseStatus::Skipped { message, ty, .. } => {
            assert_eq!(ty.as_ref().unwrap().as_str(), "NotApplicable");
            assert!(message.as_ref().unwrap().as_str().contains("Checker"));
        }
        other => panic!("CHK-ORDER: {other:?}"),
    }
    assert!(matches!(
        case("conformance::get::GET-BUSY").status,
        quick_junit::TestCaseStatus::NonSuccess {
            kind: quick_junit::NonSuccessKind::Error,
            ..
        }
    ));
    assert_eq!(
        case("conformance::list::LST-ORDER").time,
        Some(Duration::from_millis(61_500)),
        "seconds, to the millisecond"
    );
}

// ---------------------------------------------------------------------------
// HTML.

const HOSTILE: &str = "<script>alert('x')</script>";

fn hostile() -> Report {
    let mut r = sample();
    r.run.provider = format!("evil{HOSTILE}");
    r.run.provider_version = HOSTILE.into();
    r.run.run_id = HOSTILE.into();
    r.run.environment.insert(HOSTILE.into(), HOSTILE.into());
    r.swept.push(HOSTILE.into());
    for x in &mut r.results {
        x.id = format!("{}{HOSTILE}", x.id);
        x.title = HOSTILE.into();
        x.reason = Some(format!("\"{HOSTILE}\" & more"));
        x.evidence.push(HOSTILE.into());
        for v in &mut x.violations {
            v.location = HOSTILE.into();
            v.actual = HOSTILE.into();
        }
        if let Some(p) = &mut x.property {
            p.shrunk = HOSTILE.into();
        }
    }
    r
}

#[test]
fn html_escapes_every_piece_of_text() {
    let html = report::html::render(&hostile());
    assert!(!html.contains("<script"), "an unescaped tag got through");
    assert!(
        !html.contains("alert('x')"),
        "an unescaped quote got through"
    );
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(html.contains("&quot;&lt;script&gt;"));
}

#[test]
fn html_is_self_contained() {
    let html = report::html::render(&sample());
    for needle in ["<script", "<link", "src=", "@import", "url(", "http://"] {
        assert!(
            !html.contains(needle),
            "the page fetches or runs something: {needle}"
        );
    }
    assert!(html.contains("Content-Security-Policy"));
}

#[test]
fn markdown_escapes_markup_outside_code_blocks() {
    let md = report::markdown::render(&hostile());
    let mut fence: Option<String> = None;
    for line in md.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(f) if line == f.as_str() => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 => fence = Some(ticks),
            None => assert!(!line.contains("<script"), "unescaped: {line}"),
        }
    }
    assert!(fence.is_none(), "a code block was left open");
    assert!(md.contains("```text\n<script>alert('x')</script>\n```"));
}

/// Where Debian's chromium is, if it is installed.
fn chromium() -> Option<PathBuf> {
    let fixed = PathBuf::from("/usr/bin/chromium");
    if fixed.exists() {
        return Some(fixed);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("chromium"))
            .find(|p| p.exists())
    })
}

/// Renders `page` in headless Chromium and returns the DOM it built.
fn dump_dom(chromium: &Path, page: &Path, profile: &Path) -> String {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match child.try_wait().expect("wait for chromium") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within 90 s");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let out = child.wait_with_output().expect("chromium output");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dom.contains("</html>"),
        "chromium printed no DOM ({}); stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    dom
}

/// The text of the element with `id` in a serialised DOM.
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let marker = format!("id=\"{id}\">");
    let start = dom
        .find(&marker)
        .unwrap_or_else(|| panic!("no element #{id} in the DOM"))
        + marker.len();
    let len = dom[start..].find('<').unwrap_or(0);
    &dom[start..start + len]
}

#[test]
fn html_renders_the_summary_in_chromium() {
    let Some(chromium) = chromium() else {
        // Written to the process's stderr, past the test harness's capture, so the
        // skip shows in every run and never passes silently.
        let _ = writeln!(
            std::io::stderr(),
            "skipping html_renders_the_summary_in_chromium: chromium is not installed \
             (/usr/bin/chromium or on PATH); `apt-get install chromium` enables it"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let report = hostile();
    let page = dir.path().join("report.html");
    std::fs::write(&page, report::html::render(&report)).unwrap();
    let dom = dump_dom(&chromium, &page, &dir.path().join("profile"));
    assert_eq!(
        text_of(&dom, "provider"),
        "evil&lt;script&gt;alert('x')&lt;/script&gt;"
    );
    assert_eq!(text_of(&dom, "verdict"), "FAIL");
    let s = &report.summary;
    for (id, want) in [
        ("count-pass", s.pass),
        ("count-fail", s.fail),
        ("count-error", s.error),
        ("count-skipped", s.skipped),
        ("count-na", s.not_applicable),
        ("count-total", s.total()),
    ] {
        assert_eq!(text_of(&dom, id), want.to_string(), "#{id}");
    }
    assert_eq!(text_of(&dom, "pass-ratio"), "40%");
    assert!(!dom.contains("<script"), "the DOM holds a script element");
}

// ---------------------------------------------------------------------------
// The CLI, end to end.

/// A fixture whose testbeds never open: every rule that would run is an Error.
struct Unopenable;

impl Fixture for Unopenable {
    fn provider_name(&self) -> String {
        "unopenable".into()
    }
    fn profile(&self) -> Profile {
        Profile::builder().build().unwrap()
    }
    fn hooks(&self) -> Vec<Hook> {
        vec![Hook::Inventory]
    }
    fn locations(&self) -> Vec<Location> {
        vec![Location {
            name: "only".into(),
            placement: "zone-a".into(),
        }]
    }
    fn has_checker(&self) -> bool {
        false
    }
    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async { Err(HookError::new("no backend here")) })
    }
}

#[test]
fn the_cli_runs_and_writes_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let code = cli::main_with(
        Arc::new(Unopenable),
        [
            "conformance".as_ref(),
            "--rules".as_ref(),
            "CRE-*,CHK-ORDER".as_ref(),
            "--seed".as_ref(),
            "9".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
            "--provider-commit".as_ref(),
            "c0ffee123456".as_ref(),
        ],
    );
    assert_eq!(
        code,
        cli::EXIT_ERROR,
        "errors without a failure: the error verdict"
    );
    for f in Format::ALL {
        assert!(
            out.join(f.file_name()).exists(),
            "{} missing",
            f.file_name()
        );
    }
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    validate(&json).unwrap();
    assert_eq!(json["verdict"], "error");
    assert_eq!(json["run"]["seed"], 9);
    assert_eq!(json["run"]["options"]["rules"][0], "CRE-*");
    assert_eq!(json["run"]["provider_commit"], "c0ffee123456");
    match &json["run"]["suite_commit"] {
        // Built outside a git checkout.
        Value::Null => {}
        Value::String(c) => assert!(
            c.len() == 12 && c.chars().all(|ch| ch.is_ascii_hexdigit()),
            "a short commit: {c}"
        ),
        other => panic!("suite_commit is {other}"),
    }
    let results = json["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .all(|r| r["id"].as_str().unwrap().starts_with("CRE-") || r["id"] == "CHK-ORDER")
    );
    assert!(results.iter().any(|r| r["outcome"] == "Error"));
    let chk = results.iter().find(|r| r["id"] == "CHK-ORDER").unwrap();
    assert_eq!(chk["outcome"], "NotApplicable");
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    quick_junit::Report::deserialize_from_str(&xml).expect("valid junit");
}

#[test]
fn a_partial_run_exits_with_its_own_code_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "conformance",
            "--rules",
            "CHK-ORDER",
            "--seed",
            "3",
            "--out",
        ];
        args.push(out.to_str().unwrap());
        args.extend_from_slice(extra);
        cli::main_with(Arc::new(Unopenable), args)
    };
    assert_eq!(
        run(&[]),
        cli::EXIT_PARTIAL,
        "one rule of the catalogue is partial"
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["verdict"], "partial");
    assert_eq!(run(&["--allow-partial"]), 0);
    let distinct = [
        0,
        cli::EXIT_FAILED,
        cli::EXIT_USAGE,
        cli::EXIT_ERROR,
        cli::EXIT_PARTIAL,
    ];
    let mut sorted = distinct.to_vec();
    sorted.dedup();
    assert_eq!(sorted.len(), distinct.len(), "one code per verdict");
}

#[test]
fn write_all_writes_only_the_asked_formats() {
    let dir = tempfile::tempdir().unwrap();
    let paths = report::write_all(&sample(), dir.path(), &[Format::Html, Format::Json]).unwrap();
    assert_eq!(
        paths,
        [
            dir.path().join("report.json"),
            dir.path().join("report.html")
        ]
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn every_format_renders_an_empty_run() {
    let events = vec![sample_events().remove(0)];
    let empty = Report::from_events(&events).unwrap();
    for f in Format::ALL {
        let text = f.render(&empty);
        assert!(text.contains("kvm2"), "{f:?} names no provider");
        assert!(text.ends_with('\n'), "{f:?} does not end with a newline");
    }
    let html = report::html::render(&empty);
    assert!(html.contains("No rule failed"));
    assert!(!html.contains("class=\"bar\""), "no bar without rules");
}

#[test]
fn junit_survives_control_characters() {
    let mut r = sample();
    r.results[0]
        .evidence
        .push("\u{1b}[31mred\u{1b}[0m and a NUL \u{0} here".into());
    r.results[2].reason = Some("bell \u{7} and form feed \u{c}".into());
    let xml = report::junit::render(&r);
    let doc = quick_junit::Report::deserialize_from_str(&xml).expect("valid junit");
    assert_eq!(doc.tests, r.results.len());
    assert!(
        xml.contains("red and a NUL  here"),
        "escape codes are stripped"
    );
}

// ---------------------------------------------------------------------------
// Reading reports back: `render` and `diff`.

#[test]
fn a_report_reads_back_as_it_was_written() {
    let empty = Report::from_events(&[sample_events().remove(0)]).unwrap();
    let mut waived = sample();
    let entries = conformance::suite::baseline::parse(
        "- rule: CRE-SECRET\n  reason: known leak\n  expires: 2999-01-01\n\
         - rule: CRE-IDEMPOTENT\n  reason: stale\n  expires: 2999-01-01\n",
    )
    .unwrap();
    conformance::suite::baseline::apply(
        &mut waived,
        conformance::suite::outcome::WaiverKind::ExpectedFailure,
        &entries,
        jiff::civil::date(2026, 12, 4),
    );
    waived.results[0].runs = 3;
    waived.results[0].passes = 3;
    waived.results[0].repeat_seeds = vec![1, 2];
    assert_eq!(waived.waivers.len(), 2);
    validate(&json_of(&waived)).unwrap();
    for original in [sample(), empty, waived] {
        let text = report::json::render(&original);
        let read = report::json::parse(&text).expect("a written report reads back");
        assert_eq!(read, original);
        for f in Format::ALL {
            assert_eq!(f.render(&read), f.render(&original), "{f:?}");
        }
    }
}

#[test]
fn a_report_of_an_earlier_minor_version_reads_with_unknown_provenance() {
    let mut v = json_of(&sample());
    v["schema_version"] = "2.0.0".into();
    let run = v["run"].as_object_mut().unwrap();
    run.remove("provider_commit");
    run.remove("suite_commit");
    // A field of a later minor version is ignored.
    v["run"]["later_field"] = "x".into();
    let read = report::json::parse(&v.to_string()).unwrap();
    assert_eq!(read.run.provider_commit, None);
    assert_eq!(read.run.suite_commit, None);
    assert_eq!(read.results, sample().results);
}

#[test]
fn an_unreadable_report_is_refused_naming_the_file_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let good = json_of(&sample());
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        v.to_string()
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("not-json.json", "{ nope".into(), "not JSON"),
        ("no-version.json", "{}".into(), "no schema_version"),
        (
            "major.json",
            with(&|v| v["schema_version"] = "3.0.0".into()),
            "schema_version 3.0.0",
        ),
        (
            "outcome.json",
            with(&|v| v["results"][0]["outcome"] = "Maybe".into()),
            "Maybe",
        ),
        (
            "axis.json",
            with(&|v| v["run"]["profile"]["quota"] = "lots".into()),
            "lots",
        ),
        (
            "time.json",
            with(&|v| v["run"]["started_at"] = "yesterday".into()),
            "yesterday",
        ),
        (
            "duration.json",
            with(&|v| v["duration"] = (-1.0).into()),
            "-1",
        ),
    ];
    for (name, text, fault) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let e = report::json::read(&path).unwrap_err();
        assert!(e.contains(name) && e.contains(fault), "{name}: {e}");
    }
    let missing = dir.path().join("missing.json");
    let e = report::json::read(&missing).unwrap_err();
    assert!(
        e.contains("failed to read") && e.contains("missing.json"),
        "{e}"
    );
}

/// Runs the suite's command line with `args` after the program name.
fn cli_code(args: &[&std::ffi::OsStr]) -> u8 {
    let mut all = vec![std::ffi::OsStr::new("conformance")];
    all.extend_from_slice(args);
    cli::main_with(Arc::new(Unopenable), all)
}

#[test]
fn render_writes_a_report_made_elsewhere_in_the_other_formats() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    std::fs::write(&json, report::json::render(&sample())).unwrap();
    assert_eq!(cli_code(&["render".as_ref(), json.as_os_str()]), 0);
    for f in [Format::Junit, Format::Markdown, Format::Html] {
        let written = std::fs::read_to_string(dir.path().join(f.file_name())).unwrap();
        assert_eq!(written, f.render(&sample()), "{f:?}");
    }

    let out = dir.path().join("md-only");
    let code = cli_code(&[
        "render".as_ref(),
        json.as_os_str(),
        "--format".as_ref(),
        "md".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, 0);
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["report.md"]);

    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let broken = bad.join("report.json");
    std::fs::write(&broken, "[]").unwrap();
    assert_eq!(
        cli_code(&["render".as_ref(), broken.as_os_str()]),
        cli::EXIT_USAGE
    );
    assert_eq!(
        std::fs::read_dir(&bad).unwrap().count(),
        1,
        "nothing written"
    );
}

/// The sample with one rule's outcome replaced (and a violation for a Fail).
fn with_outcome(mut r: Report, id: &str, outcome: Outcome) -> Report {
    let x = r.results.iter_mut().find(|x| x.id == id).unwrap();
    x.outcome = outcome;
    if outcome == Outcome::Fail && x.violations.is_empty() {
        x.violations.push(Violation {
            rule: id.into(),
            location: "step 1".into(),
            expected: "something".into(),
            actual: "something else".into(),
        });
    }
    r
}

#[test]
fn diff_names_each_changed_rule_and_whether_it_got_worse() {
    let old = sample();
    assert_eq!(cli::ReportDiff::of(&old, &old).changes, []);
    assert!(!cli::ReportDiff::of(&old, &old).regressed());

    let pass = old
        .results
        .iter()
        .find(|r| r.outcome == Outcome::Pass)
        .unwrap()
        .id
        .clone();
    let fail = old
        .results
        .iter()
        .find(|r| r.outcome == Outcome::Fail)
        .unwrap()
        .id
        .clone();
    let removed = old
        .results
        .iter()
        .find(|r| r.outcome == Outcome::Skipped)
        .unwrap()
        .id
        .clone();
    let added = conformance::rules::CATALOGUE
        .iter()
        .find(|rule| !old.results.iter().any(|r| r.id == rule.id))
        .unwrap();

    // Only better: the failing rule passes, a rule is removed, a passing one added.
    let mut better = with_outcome(old.clone(), &fail, Outcome::Pass);
    better.results.retain(|r| r.id != removed);
    better.results.push(result(
        added.id,
        added.area.as_str(),
        added.title,
        Outcome::Pass,
        1,
    ));
    let d = cli::ReportDiff::of(&old, &better);
    let kinds: Vec<_> = d
        .changes
        .iter()
        .map(|c| (c.id.as_str(), c.change))
        .collect();
    assert!(
        kinds.contains(&(fail.as_str(), cli::Change::Better)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(removed.as_str(), cli::Change::Removed)),
        "{kinds:?}"
    );
    assert!(kinds.contains(&(added.id, cli::Change::Added)), "{kinds:?}");
    assert_eq!(d.changes.len(), 3);
    assert_eq!(d.unchanged, old.results.len() - 2);
    assert!(!d.regressed(), "nothing got worse");

    // A pass that fails, and an added rule that errors: both regressions.
    let mut worse = with_outcome(old.clone(), &pass, Outcome::Fail);
    worse.results.push(result(
        added.id,
        added.area.as_str(),
        added.title,
        Outcome::Error,
        1,
    ));
    let d = cli::ReportDiff::of(&old, &worse);
    let regressions: Vec<_> = d.regressions().map(|c| c.id.as_str()).collect();
    assert_eq!(regressions.len(), 2, "{regressions:?}");
    assert!(regressions.contains(&pass.as_str()) && regressions.contains(&added.id));
    let text = d.text();
    let line = text.lines().find(|l| l.starts_with(&pass)).unwrap();
    assert!(
        line.contains("Pass") && line.contains("Fail") && line.ends_with("worse"),
        "{text}"
    );
    assert!(
        text.contains("1 worse, 0 better, 0 changed, 1 added, 0 removed"),
        "{text}"
    );

    // The verdict line.
    let all_pass: Report = {
        let mut r = old.clone();
        r.verdict = Verdict::Pass;
        r
    };
    assert!(
        cli::ReportDiff::of(&all_pass, &old)
            .text()
            .starts_with("verdict: pass -> fail\n")
    );
    assert!(
        cli::ReportDiff::of(&old, &old)
            .text()
            .contains("no rule changed")
    );
}

#[test]
fn diff_exits_one_only_when_a_rule_got_worse() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, r: &Report| {
        let p = dir.path().join(name);
        std::fs::write(&p, report::json::render(r)).unwrap();
        p
    };
    let old = sample();
    let pass = old
        .results
        .iter()
        .find(|r| r.outcome == Outcome::Pass)
        .unwrap()
        .id
        .clone();
    let old_path = write("old.json", &old);
    let worse_path = write(
        "worse.json",
        &with_outcome(old.clone(), &pass, Outcome::Error),
    );
    let diff = |a: &Path, b: &Path| cli_code(&["diff".as_ref(), a.as_os_str(), b.as_os_str()]);
    assert_eq!(diff(&old_path, &old_path), 0);
    assert_eq!(diff(&old_path, &worse_path), cli::EXIT_FAILED);
    assert_eq!(
        diff(&worse_path, &old_path),
        0,
        "a fixed rule is no regression"
    );
    let missing = dir.path().join("missing.json");
    assert_eq!(diff(&old_path, &missing), cli::EXIT_USAGE);
}

#[test]
fn render_writes_an_earlier_minor_version_in_the_current_format() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = json_of(&sample());
    v["schema_version"] = "2.0.0".into();
    let run = v["run"].as_object_mut().unwrap();
    run.remove("provider_commit");
    run.remove("suite_commit");
    let old = dir.path().join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let out = dir.path().join("out");
    let code = cli_code(&[
        "render".as_ref(),
        old.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, 0);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(written["schema_version"], REPORT_SCHEMA_VERSION);
    assert_eq!(written["run"]["provider_commit"], Value::Null);
    validate(&written).unwrap();
}

// ---------------------------------------------------------------------------
// Expected failures, quarantine, skips and repeats, end to end through the CLI.

/// A provider that refuses every Get as Permanent and accepts every Delete: it passes
/// GET-MALFORMED, GET-UNCONFIGURED and DEL-UNCONFIGURED and fails DEL-MALFORMED. With
/// `flaky`, every other testbed's Get answers NotFound instead, so GET-UNCONFIGURED
/// passes and fails by turns.
#[derive(Default)]
struct Stub {
    flaky: bool,
    opened: std::sync::atomic::AtomicU32,
    get_delay: Duration,
    /// Every Get answers QuotaExceeded.
    quota: bool,
    real: bool,
}

impl Stub {
    fn new(flaky: bool) -> Arc<Stub> {
        Arc::new(Stub {
            flaky,
            ..Stub::default()
        })
    }
}

struct StubProvider {
    not_found: bool,
    get_delay: Duration,
    quota: bool,
}

impl conformance::Provider for StubProvider {
    fn name(&self) -> &str {
        "stub"
    }
    fn profile(&self) -> Profile {
        Profile::builder().build().unwrap()
    }
    fn create<'a>(
        &'a self,
        ctx: &'a conformance::Ctx,
        req: &'a conformance::CreateRequest,
    ) -> BoxFuture<'a, conformance::Result<conformance::ProviderId>> {
        Box::pin(async move {
            // The leak the log files are scanned for, in the operation's span.
            let _in = ctx.span().enter();
            tracing::debug!(target: "stub", "creating with {}", req.cloud_init.expose());
            Err(conformance::Error::permanent(
                "stub",
                conformance::Op::Create,
                "no",
            ))
        })
    }
    fn get<'a>(
        &'a self,
        _: &'a conformance::Ctx,
        _: &'a conformance::ProviderId,
    ) -> BoxFuture<'a, conformance::Result<conformance::Instance>> {
        Box::pin(async move {
            tokio::time::sleep(self.get_delay).await;
            Err(if self.quota {
                conformance::Error::quota(
                    "stub",
                    conformance::Op::Get,
                    conformance::Quota {
                        what: "memory on host-a".into(),
                        available: 0,
                        needed: 1,
                    },
                )
            } else if self.not_found {
                conformance::Error::not_found("stub", conformance::Op::Get, "nothing")
            } else {
                conformance::Error::permanent("stub", conformance::Op::Get, "refused")
            })
        })
    }
    fn delete<'a>(
        &'a self,
        _: &'a conformance::Ctx,
        _: &'a conformance::ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        Box::pin(async { Ok(()) })
    }
    fn list_by_tag<'a>(
        &'a self,
        _: &'a conformance::Ctx,
        _: &'a str,
    ) -> BoxFuture<'a, conformance::Result<conformance::Listing>> {
        Box::pin(async { Ok(conformance::Listing::default()) })
    }
}

struct StubTestbed {
    provider: Arc<StubProvider>,
}

impl Testbed for StubTestbed {
    fn provider(&self) -> Arc<dyn conformance::Provider> {
        self.provider.clone()
    }
    fn restart(&self) -> HookResult<Arc<dyn conformance::Provider>> {
        Ok(self.provider.clone())
    }
    fn request(&self, name: &str, tag: &str, location: &Location) -> conformance::CreateRequest {
        conformance::CreateRequest {
            name: name.into(),
            uid: "u".into(),
            tag: tag.into(),
            placement: location.placement.clone(),
            image: None,
            cloud_init: conformance::CloudInit::new("#cloud-config\n"),
        }
    }
    fn id_for(&self, location: &str, name: &str) -> conformance::ProviderId {
        conformance::ProviderId::new(format!("{location}/{name}"))
    }
    fn location_of(&self, _: &conformance::ProviderId) -> Option<String> {
        None
    }
    fn malformed_ids(&self) -> Vec<String> {
        vec![String::new(), "no-slash".into()]
    }
    fn unconfigured_id(&self, name: &str) -> conformance::ProviderId {
        conformance::ProviderId::new(format!("elsewhere/{name}"))
    }
}

impl Fixture for Stub {
    fn provider_name(&self) -> String {
        "stub".into()
    }
    fn profile(&self) -> Profile {
        Profile::builder().build().unwrap()
    }
    fn hooks(&self) -> Vec<Hook> {
        Vec::new()
    }
    fn locations(&self) -> Vec<Location> {
        vec![Location {
            name: "only".into(),
            placement: "zone-a".into(),
        }]
    }
    fn has_checker(&self) -> bool {
        false
    }
    fn is_real_backend(&self) -> bool {
        self.real
    }
    fn environment(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("backend".to_owned(), "stub-cloud eu-1".to_owned())])
    }
    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        let n = self
            .opened
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let not_found = self.flaky && n % 2 == 1;
        Box::pin(async move {
            Ok(Box::new(StubTestbed {
                provider: Arc::new(StubProvider {
                    not_found,
                    get_delay: self.get_delay,
                    quota: self.quota,
                }),
            }) as Box<dyn Testbed>)
        })
    }
}

/// Runs the CLI against `fixture` with `args` into `out`; returns the exit code and
/// every format as text (JSON parsed and validated against the schema).
fn run_stub(fixture: Arc<Stub>, out: &Path, args: &[&str]) -> (u8, Value, String, String, String) {
    let mut all = vec!["conformance", "--seed", "5", "--cases", "2", "--out"];
    all.push(out.to_str().unwrap());
    all.extend_from_slice(args);
    let code = cli::main_with(fixture, all);
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    let json: Value = serde_json::from_str(&read("report.json")).unwrap();
    validate(&json).unwrap();
    let junit = read("junit.xml");
    quick_junit::Report::deserialize_from_str(&junit).expect("valid junit");
    (code, json, junit, read("report.md"), read("report.html"))
}

fn result_json<'a>(json: &'a Value, id: &str) -> &'a Value {
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in the report"))
}

const STUB_RULES: &str = "GET-MALFORMED,GET-UNCONFIGURED,DEL-MALFORMED,DEL-UNCONFIGURED";

/// One expected failure, one stale entry and one expired one: the expected failure
/// alone leaves the run partial; the stale and the expired entries fail it, and every
/// format says which entry did what.
#[test]
fn a_baseline_excuses_its_failure_and_fails_on_stale_and_expired_entries() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let expected = dir.path().join("expected.yaml");
    let only_expected =
        "- rule: DEL-MALFORMED\n  reason: accepts IDs it cannot parse\n  expires: 2999-12-31\n";
    std::fs::write(&expected, only_expected).unwrap();
    let file = expected.to_str().unwrap();

    // Without the baseline the failure fails the run.
    let (code, json, ..) = run_stub(Stub::new(false), &out, &["--rules", STUB_RULES]);
    assert_eq!(code, cli::EXIT_FAILED);
    assert_eq!(json["verdict"], "fail");
    assert_eq!(result_json(&json, "DEL-MALFORMED")["outcome"], "Fail");
    assert_eq!(result_json(&json, "GET-MALFORMED")["outcome"], "Pass");

    // The expected failure alone: partial, exit 4, 0 with --allow-partial.
    let (code, json, junit, md, html) = run_stub(
        Stub::new(false),
        &out,
        &["--rules", STUB_RULES, "--expected-failures", file],
    );
    assert_eq!(code, cli::EXIT_PARTIAL, "{json}");
    assert_eq!(json["verdict"], "partial");
    let del = result_json(&json, "DEL-MALFORMED");
    assert_eq!(del["outcome"], "Fail", "the outcome stays one of the five");
    assert_eq!(del["waiver"]["kind"], "expected-failure");
    assert_eq!(del["waiver"]["expires"], "2999-12-31");
    assert_eq!(json["summary"]["fail"], 1);
    assert_eq!(json["summary"]["waived"], 1);
    assert_eq!(json["waivers"][0]["status"], "applied");
    assert!(junit.contains("type=\"ExpectedFailure\""), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(md.contains("| Fail (expected failure) |"), "{md}");
    assert!(md.contains("## Expected failures and quarantine"), "{md}");
    assert!(html.contains("Fail (expected failure)"), "{html}");
    assert!(html.contains("id=\"waivers\""));
    let (code, ..) = run_stub(
        Stub::new(false),
        &out,
        &[
            "--rules",
            STUB_RULES,
            "--expected-failures",
            file,
            "--allow-partial",
        ],
    );
    assert_eq!(code, 0);

    // Plus a stale entry (a rule that passes) and an expired one: fail.
    std::fs::write(
        &expected,
        format!(
            "{only_expected}- rule: GET-MALFORMED\n  reason: used to crash\n  expires: 2999-12-31\n\
             - rule: DEL-UNCONFIGURED\n  reason: was broken once\n  expires: 2020-01-31\n"
        ),
    )
    .unwrap();
    let (code, json, junit, md, html) = run_stub(
        Stub::new(false),
        &out,
        &[
            "--rules",
            STUB_RULES,
            "--expected-failures",
            file,
            "--allow-partial",
        ],
    );
    assert_eq!(code, cli::EXIT_FAILED, "{json}");
    assert_eq!(json["verdict"], "fail");
    let status = |rule: &str| {
        json["waivers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["rule"] == rule)
            .map(|w| {
                (
                    w["status"].clone(),
                    w["message"].as_str().unwrap().to_owned(),
                )
            })
            .unwrap()
    };
    assert_eq!(status("DEL-MALFORMED").0, "applied");
    let (stale, why) = status("GET-MALFORMED");
    assert_eq!(stale, "stale");
    assert!(why.contains("remove its entry"), "{why}");
    let (expired, why) = status("DEL-UNCONFIGURED");
    assert_eq!(expired, "expired");
    assert!(why.contains("2020-01-31"), "{why}");
    assert!(
        result_json(&json, "DEL-MALFORMED")["waiver"].is_object(),
        "the valid entry still excuses its rule"
    );
    assert!(junit.contains("expected_failure.GET-MALFORMED"), "{junit}");
    assert!(junit.contains("stale (expires 2999-12-31)"), "{junit}");
    assert!(junit.contains("expired (expires 2020-01-31)"), "{junit}");
    let parsed = quick_junit::Report::deserialize_from_str(&junit).unwrap();
    let failing: Vec<&str> = parsed.test_suites[0]
        .test_cases
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::NonSuccess { .. }))
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        failing,
        [
            "expected-failures::GET-MALFORMED",
            "expected-failures::DEL-UNCONFIGURED"
        ],
        "the stale and the expired entry fail in JUnit too"
    );
    for text in [&md, &html] {
        assert!(text.contains("remove its entry from the expected failures"));
        assert!(text.contains("the entry expired on 2020-01-31"));
    }

    // An expired entry excuses nothing.
    std::fs::write(
        &expected,
        "- rule: DEL-MALFORMED\n  reason: accepts IDs it cannot parse\n  expires: 2020-01-31\n",
    )
    .unwrap();
    let (code, json, ..) = run_stub(
        Stub::new(false),
        &out,
        &["--rules", STUB_RULES, "--expected-failures", file],
    );
    assert_eq!(code, cli::EXIT_FAILED);
    assert!(result_json(&json, "DEL-MALFORMED")["waiver"].is_null());
    assert_eq!(json["summary"]["waived"], 0);
}

/// `--skip` skips by ID, prefix or tag, with the pattern in the reason; the verdict
/// is partial.
#[test]
fn a_skipped_rule_names_the_pattern_and_makes_the_run_partial() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let (code, json, junit, md, _) = run_stub(
        Stub::new(false),
        &out,
        &["--rules", "GET-MALFORMED,DEL-MALFORMED", "--skip", "DEL-*"],
    );
    assert_eq!(code, cli::EXIT_PARTIAL);
    let del = result_json(&json, "DEL-MALFORMED");
    assert_eq!(del["outcome"], "Skipped");
    assert_eq!(del["reason"], "skipped on request (--skip DEL-*)");
    assert_eq!(del["runs"], 0);
    assert_eq!(json["run"]["options"]["skip"][0], "DEL-*");
    assert!(junit.contains("skipped on request (--skip DEL-*)"));
    assert!(md.contains("| Skipped on request | DEL-\\* |"), "{md}");
}

/// `--repeat` runs each rule on fresh testbeds with seeds derived per repetition; a
/// rule that passes and fails is flaky in every format, and a quarantine entry keeps
/// it from failing the run while a rule failing every run stays a failure.
#[test]
fn repeated_runs_find_a_flaky_rule_and_quarantine_excuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let (code, json, junit, md, html) = run_stub(
        Stub::new(true),
        &out,
        &["--rules", "GET-UNCONFIGURED", "--repeat", "4"],
    );
    assert_eq!(code, cli::EXIT_FAILED);
    let r = result_json(&json, "GET-UNCONFIGURED");
    assert_eq!(r["outcome"], "Fail");
    assert_eq!(
        (r["runs"].as_u64(), r["passes"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(r["flaky"], true);
    let seeds: Vec<u64> = r["repeat_seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert_eq!(seeds.len(), 3);
    assert!(!seeds.contains(&r["seed"].as_u64().unwrap()));
    assert_eq!(json["run"]["options"]["repeat"], 4);
    assert!(junit.contains("name=\"flaky\" value=\"true\""), "{junit}");
    assert!(
        md.contains("Fail (flaky)") && md.contains("Flaky: 2 of 4 runs passed"),
        "{md}"
    );
    assert!(html.contains("Fail (flaky)"));

    let quarantine = dir.path().join("quarantine.yaml");
    std::fs::write(
        &quarantine,
        "- rule: GET-UNCONFIGURED\n  reason: races the address lookup\n  expires: 2999-01-01\n\
         - rule: DEL-MALFORMED\n  reason: not a flake\n  expires: 2999-01-01\n",
    )
    .unwrap();
    let (code, json, junit, ..) = run_stub(
        Stub::new(true),
        &out,
        &[
            "--rules",
            "GET-UNCONFIGURED,DEL-MALFORMED",
            // One rule at a time: the stub alternates by testbed, across rules.
            "--concurrency",
            "1",
            "--repeat",
            "2",
            "--quarantine",
            quarantine.to_str().unwrap(),
        ],
    );
    assert_eq!(code, cli::EXIT_FAILED, "DEL-MALFORMED failed every run");
    assert_eq!(
        result_json(&json, "GET-UNCONFIGURED")["waiver"]["kind"],
        "quarantine"
    );
    assert!(result_json(&json, "DEL-MALFORMED")["waiver"].is_null());
    assert!(junit.contains("type=\"Quarantined\""), "{junit}");
    let (code, json, ..) = run_stub(
        Stub::new(true),
        &out,
        &[
            "--rules",
            "GET-UNCONFIGURED",
            "--repeat",
            "2",
            "--quarantine",
            quarantine.to_str().unwrap(),
            "--allow-partial",
        ],
    );
    assert_eq!(code, 0, "{json}");
}

/// With `$GITHUB_STEP_SUMMARY` set, a run appends its Markdown summary there, and
/// with `--previous` what changed since. The variable is set for a child process (this
/// test binary running this one test), not for the other tests of this binary.
#[test]
fn a_run_appends_its_summary_to_the_ci_step_summary() {
    const CHILD: &str = "CONFORMANCE_TEST_STEP_SUMMARY_CHILD";
    if let Some(out) = std::env::var_os(CHILD) {
        let previous = Path::new(&out).join("previous.json");
        let code = cli::main_with(
            Stub::new(false),
            [
                "conformance".as_ref(),
                "--seed".as_ref(),
                "5".as_ref(),
                "--cases".as_ref(),
                "2".as_ref(),
                "--rules".as_ref(),
                STUB_RULES.as_ref(),
                "--out".as_ref(),
                Path::new(&out).join("reports").as_os_str(),
                "--previous".as_ref(),
                previous.as_os_str(),
            ],
        );
        std::process::exit(i32::from(code));
    }
    let dir = tempfile::tempdir().unwrap();
    // The previous run: DEL-MALFORMED passed and DEL-UNCONFIGURED was not run.
    let (_, mut prev, ..) = run_stub(
        Stub::new(false),
        &dir.path().join("prev"),
        &["--rules", "GET-MALFORMED,GET-UNCONFIGURED,DEL-MALFORMED"],
    );
    let del = prev["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["id"] == "DEL-MALFORMED")
        .unwrap();
    del["outcome"] = "Pass".into();
    del["violations"] = Value::Array(vec![]);
    del["reason"] = Value::Null;
    del["property"] = Value::Null;
    std::fs::write(dir.path().join("previous.json"), prev.to_string()).unwrap();
    let summary = dir.path().join("step-summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_run_appends_its_summary_to_the_ci_step_summary",
            "--nocapture",
        ])
        .env(CHILD, dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(i32::from(cli::EXIT_FAILED)));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("earlier step\n## Conformance: stub"),
        "{text}"
    );
    assert!(text.contains(": **FAIL**"), "{text}");
    assert!(text.contains("| `DEL-MALFORMED` | Fail |"), "{text}");
    assert!(
        text.contains("### Conformance: changes since the previous run"),
        "{text}"
    );
    assert!(text.contains("Got worse: `DEL-MALFORMED`."), "{text}");
    assert!(
        text.contains("| `DEL-UNCONFIGURED` | – | Pass | added |"),
        "{text}"
    );
}

/// `diff` names new failures, fixed rules and new violations, as text and Markdown;
/// `--durations` adds rules that got slower.
#[test]
fn diff_compares_violations_and_durations_in_text_and_markdown() {
    let old = sample();
    let fail = old
        .results
        .iter()
        .find(|r| r.outcome == Outcome::Fail)
        .unwrap()
        .clone();
    let pass = old
        .results
        .iter()
        .find(|r| r.outcome == Outcome::Pass)
        .unwrap()
        .id
        .clone();
    let mut new = old.clone();
    {
        let r = new.results.iter_mut().find(|r| r.id == fail.id).unwrap();
        r.violations.push(Violation {
            rule: fail.id.clone(),
            location: "Get c0123456789abcdef-x".into(),
            expected: "NotFound".into(),
            actual: "Ok".into(),
        });
    }
    let d = cli::ReportDiff::of(&old, &new);
    assert_eq!(d.changes.len(), 1, "{:?}", d.changes);
    assert_eq!(d.changes[0].change, cli::Change::Worse);
    assert!(
        d.changes[0]
            .detail
            .contains("new violation(s): Get #-x / NotFound"),
        "{:?}",
        d.changes[0]
    );
    assert!(d.regressed());
    let md = d.markdown();
    assert!(md.contains(&format!("Got worse: `{}`.", fail.id)), "{md}");
    assert!(
        md.contains("| Rule | Old | New | Change | Detail |"),
        "{md}"
    );
    // Names that differ run by run are no new violation.
    let mut renamed = old.clone();
    for v in &mut renamed
        .results
        .iter_mut()
        .find(|r| r.id == fail.id)
        .unwrap()
        .violations
    {
        v.location = v.location.replace("0123", "4567");
    }
    assert!(!cli::ReportDiff::of(&old, &renamed).regressed());
    // The reverse: the violation went away.
    let back = cli::ReportDiff::of(&new, &old);
    assert_eq!(back.changes[0].change, cli::Change::Better);
    assert!(!back.regressed());

    let timed = |millis: u64| {
        let mut r = old.clone();
        r.results
            .iter_mut()
            .find(|r| r.id == pass)
            .unwrap()
            .duration = Duration::from_millis(millis);
        r
    };
    let (before, slow) = (timed(200), timed(600));
    assert!(
        !cli::ReportDiff::of(&before, &slow).regressed(),
        "durations only when asked"
    );
    let d = cli::ReportDiff::with_durations(&before, &slow, Some(50.0));
    assert_eq!(d.changes[0].change, cli::Change::Slower);
    assert!(d.changes[0].detail.contains("+200 %"), "{:?}", d.changes[0]);
    assert!(d.regressed());
    assert!(d.text().contains("1 slower, 0 faster"), "{}", d.text());
    assert!(!cli::ReportDiff::with_durations(&before, &slow, Some(250.0)).regressed());
    let d = cli::ReportDiff::with_durations(&slow, &before, Some(50.0));
    assert_eq!(d.changes[0].change, cli::Change::Faster);
    assert!(!d.regressed());
    // Both under 100 ms: noise, not compared.
    assert!(
        cli::ReportDiff::with_durations(&timed(10), &timed(90), Some(50.0))
            .changes
            .is_empty()
    );
}

/// `verify` passes a report as written and names what is wrong with one changed by
/// hand, made against another catalogue, or of an earlier format.
#[test]
fn verify_checks_schema_catalogue_and_digest() {
    let mut fresh = sample();
    fresh.run.catalogue_hash = conformance::suite::runner::catalogue_hash();
    let text = report::json::render(&fresh);
    let findings = cli::verify_text(&text).unwrap();
    assert!(findings.iter().all(|f| f.ok), "{findings:?}");
    assert_eq!(
        findings.iter().map(|f| f.check).collect::<Vec<_>>(),
        ["schema", "catalogue", "digest"]
    );
    let failed = |text: &str| -> Vec<(&'static str, String)> {
        cli::verify_text(text)
            .unwrap()
            .into_iter()
            .filter(|f| !f.ok)
            .map(|f| (f.check, f.detail))
            .collect()
    };
    // An outcome changed by hand.
    let tampered = text.replacen("\"Fail\"", "\"Pass\"", 1);
    assert_ne!(tampered, text);
    let f = failed(&tampered);
    assert!(
        f.iter()
            .any(|(c, d)| *c == "digest" && d.contains("changed after")),
        "{f:?}"
    );
    // Made against another catalogue (the sample's hash is made up).
    let f = failed(&report::json::render(&sample()));
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].0 == "catalogue" && f[0].1.contains("stale"), "{f:?}");
    // An earlier format, without a digest.
    let mut old = json_of(&fresh);
    old["schema_version"] = "2.1.0".into();
    old.as_object_mut().unwrap().remove("digest");
    let f = failed(&old.to_string());
    assert!(f.iter().any(|(c, _)| *c == "schema"), "{f:?}");
    assert!(
        f.iter()
            .any(|(c, d)| *c == "digest" && d.contains("no digest")),
        "{f:?}"
    );
    // A report that breaks the schema.
    let mut broken = json_of(&fresh);
    broken["verdict"] = "maybe".into();
    let f = failed(&broken.to_string());
    assert!(f.iter().any(|(c, _)| *c == "schema"), "{f:?}");
    assert!(cli::verify_text("{ nope").is_err());

    // Through the command: 0, then 1 for the tampered file, 2 for a missing one.
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, &text).unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, &tampered).unwrap();
    assert_eq!(cli_code(&["verify".as_ref(), good.as_os_str()]), 0);
    assert_eq!(
        cli_code(&["verify".as_ref(), bad.as_os_str()]),
        cli::EXIT_FAILED
    );
    let missing = dir.path().join("missing.json");
    assert_eq!(
        cli_code(&["verify".as_ref(), missing.as_os_str()]),
        cli::EXIT_USAGE
    );
}

/// Each rule that ran has a log file; a sentinel in a log line fails CRE-SECRET naming
/// the file and the line, and the line is written redacted; a failed rule points at
/// its file.
#[test]
fn rule_log_files_are_scanned_for_sentinels_and_failed_rules_point_at_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let (code, json, junit, md, _) = run_stub(
        Stub::new(false),
        &out,
        &["--rules", "CRE-SECRET,DEL-MALFORMED,GET-MALFORMED"],
    );
    assert_eq!(code, cli::EXIT_FAILED);
    let secret = result_json(&json, "CRE-SECRET");
    assert_eq!(secret["outcome"], "Fail");
    let from_logs: Vec<&Value> = secret["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| {
            v["location"]
                .as_str()
                .unwrap()
                .starts_with("logs/CRE-SECRET.log line ")
        })
        .collect();
    assert!(!from_logs.is_empty(), "{secret}");
    assert_eq!(secret["log"], "logs/CRE-SECRET.log");
    let log = std::fs::read_to_string(out.join("logs/CRE-SECRET.log")).unwrap();
    assert!(log.contains(conformance::suite::logs::REDACTED), "{log}");
    for s in conformance::suite::checks::create::sentinels() {
        assert!(!log.contains(&s), "a sentinel was written: {log}");
    }
    let del = result_json(&json, "DEL-MALFORMED");
    assert_eq!(del["log"], "logs/DEL-MALFORMED.log");
    assert!(
        out.join("logs/GET-MALFORMED.log").exists(),
        "a passing rule has its log too"
    );
    assert!(result_json(&json, "GET-MALFORMED").get("log").is_none());
    assert!(junit.contains("name=\"log\" value=\"logs/DEL-MALFORMED.log\""));
    assert!(
        md.contains("Log: [logs/DEL-MALFORMED.log](logs/DEL-MALFORMED.log)"),
        "{md}"
    );
}

/// `--log-level` (as `RUST_LOG`) filters what is printed, never what is captured: with
/// `error`, the provider's debug line leaking the user data still fails CRE-SECRET; with
/// `debug` it is printed, redacted. Each run is a child process (this test binary
/// running this one test), since the printer is part of the process's subscriber.
#[test]
fn the_log_level_filters_what_is_printed_not_what_is_captured() {
    const CHILD: &str = "CONFORMANCE_TEST_LOG_LEVEL_CHILD";
    if let Some(out) = std::env::var_os(CHILD) {
        let code = cli::main_with(
            Stub::new(false),
            [
                "conformance".as_ref(),
                "--seed".as_ref(),
                "5".as_ref(),
                "--cases".as_ref(),
                "2".as_ref(),
                "--rules".as_ref(),
                "CRE-SECRET".as_ref(),
                "--out".as_ref(),
                out.as_os_str(),
            ],
        );
        std::process::exit(i32::from(code));
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |level: &str| {
        let out = dir.path().join(level);
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_log_level_filters_what_is_printed_not_what_is_captured",
                "--nocapture",
            ])
            .env(CHILD, &out)
            .env("RUST_LOG", level)
            .env_remove("CONFORMANCE_LOG_LEVEL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        (
            child.status.code(),
            json,
            String::from_utf8_lossy(&child.stderr).into_owned(),
        )
    };
    let (code, json, stderr) = run("error");
    assert_eq!(code, Some(i32::from(cli::EXIT_FAILED)), "{stderr}");
    let secret = result_json(&json, "CRE-SECRET");
    assert_eq!(secret["outcome"], "Fail");
    assert!(
        secret["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["location"]
                .as_str()
                .unwrap()
                .starts_with("logs/CRE-SECRET.log")),
        "{secret}"
    );
    // The printer writes `LEVEL target: message`; the check's own violation quotes the
    // event differently (`DEBUG event: creating with`).
    let printed = "stub: creating with";
    assert!(
        !stderr.contains(printed),
        "nothing under error is printed: {stderr}"
    );

    let (code, _, stderr) = run("debug");
    assert_eq!(code, Some(i32::from(cli::EXIT_FAILED)));
    let at = stderr
        .find(printed)
        .unwrap_or_else(|| panic!("the debug line is printed: {stderr}"));
    let line: String = stderr[at..].chars().take(160).collect();
    assert!(
        line.contains(&format!("root:{}", conformance::suite::logs::REDACTED))
            && !line.contains("sentinel-"),
        "the printed line is redacted: {line}"
    );
}

/// `--max-wall`: once spent, no rule starts; the rule running finishes, the others are
/// Skipped and the verdict is partial.
#[test]
fn a_spent_wall_budget_skips_the_rules_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Arc::new(Stub {
        get_delay: Duration::from_millis(400),
        ..Stub::default()
    });
    let (code, json, ..) = run_stub(
        slow,
        &dir.path().join("reports"),
        &[
            "--rules",
            "GET-MALFORMED,GET-UNCONFIGURED,DEL-UNCONFIGURED",
            "--concurrency",
            "1",
            "--max-wall",
            "1",
        ],
    );
    assert_eq!(code, cli::EXIT_PARTIAL, "{json}");
    assert_eq!(json["run"]["options"]["max_wall"], 1000.0);
    assert_eq!(result_json(&json, "GET-MALFORMED")["outcome"], "Pass");
    for id in ["GET-UNCONFIGURED", "DEL-UNCONFIGURED"] {
        let r = result_json(&json, id);
        assert_eq!(r["outcome"], "Skipped", "{r}");
        assert_eq!(r["reason"], "not started: --max-wall 1.0 s was spent");
    }
}

/// A QuotaExceeded the rule did not ask for is an Error naming the environment on a
/// real backend, and stays a Fail on a fake.
#[test]
fn an_unasked_quota_is_the_environment_on_a_real_backend_only() {
    let dir = tempfile::tempdir().unwrap();
    for real in [false, true] {
        let stub = Arc::new(Stub {
            quota: true,
            real,
            ..Stub::default()
        });
        let (code, json, ..) = run_stub(
            stub,
            &dir.path().join(real.to_string()),
            &["--rules", "GET-UNCONFIGURED"],
        );
        let r = result_json(&json, "GET-UNCONFIGURED");
        if real {
            assert_eq!(code, cli::EXIT_ERROR);
            assert_eq!(r["outcome"], "Error");
            let reason = r["reason"].as_str().unwrap();
            assert!(
                reason.contains("ran out of capacity")
                    && reason.contains("backend=stub-cloud eu-1"),
                "{reason}"
            );
        } else {
            assert_eq!(code, cli::EXIT_FAILED);
            assert_eq!(r["outcome"], "Fail");
        }
    }
}
