//! Expected failures, quarantine, skips and repeats, end to end through the CLI.

use super::*;

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
