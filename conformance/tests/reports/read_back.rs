//! Reading reports back: `render` and `diff`.

use super::*;

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
pub(super) fn cli_code(args: &[&std::ffi::OsStr]) -> u8 {
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
