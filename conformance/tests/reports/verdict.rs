//! Verdicts: never more than the run proved, and first in every format.

use super::*;

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
