//! What a run leaves beside its report: the CI step summary, `verify`, rule
//! logs, log levels, the wall budget and quotas.

use super::*;

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
            "runs::a_run_appends_its_summary_to_the_ci_step_summary",
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
fn rule_log_files_are_scanned_for_payloads_and_failed_rules_point_at_them() {
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
    assert!(
        !conformance::suite::secrets::any_in(&log),
        "a payload was written: {log}"
    );
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
                "runs::the_log_level_filters_what_is_printed_not_what_is_captured",
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
        line.contains(&format!(
            "creating with {}",
            conformance::suite::logs::REDACTED
        )) && !conformance::suite::secrets::any_in(&line),
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

/// A hook the fixture declares and its testbed does not hand out is a condition on the
/// suite's side: the rule is an Error naming the hook, never a panic the runner would
/// call the provider's Fail. A panic inside the provider is the provider's Fail.
#[test]
fn a_promised_hook_missing_is_an_error_and_a_provider_panic_a_fail() {
    let dir = tempfile::tempdir().unwrap();
    let liar = Arc::new(Stub {
        lies_about: vec![Hook::Planting],
        ..Stub::default()
    });
    let (_, json, ..) = run_stub(liar, dir.path(), &["--rules", "CRE-ADOPT-GUARD"]);
    let r = result_json(&json, "CRE-ADOPT-GUARD");
    assert_eq!(r["outcome"], "Error", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("the testbed returned no planting hook"),
        "{r}"
    );

    let dir = tempfile::tempdir().unwrap();
    let panics = Arc::new(Stub {
        panics: true,
        ..Stub::default()
    });
    let (code, json, ..) = run_stub(panics, dir.path(), &["--rules", "GET-MALFORMED"]);
    assert_eq!(code, cli::EXIT_FAILED);
    let r = result_json(&json, "GET-MALFORMED");
    assert_eq!(r["outcome"], "Fail", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("the provider panicked: Get panicked: the stub's Get panics on purpose"),
        "{r}"
    );
}

/// Under cargo test the exit code honours the verdict as the CLI's does: a rule that
/// ran and left a sub-assertion not checked makes the binary exit 4 (partial) though
/// its trial is `ok`, unless a partial run is accepted; a trial filter that selects
/// rules does not by itself, and a failed trial stays libtest's failure.
#[test]
fn the_cargo_test_harness_exits_partial_for_what_it_did_not_check() {
    use conformance::suite::harness::{EXIT_TRIAL_FAILED, main_with};
    let only = |trial: &str| libtest_mimic::Arguments {
        filter: Some(trial.to_owned()),
        exact: true,
        test_threads: Some(1),
        ..Default::default()
    };
    // The stub has no inventory hook: GET-MALFORMED passes, and what its sweep could
    // not look for is recorded as not checked.
    let get = "conformance::get::GET-MALFORMED";
    assert_eq!(
        main_with(Stub::new(false), only(get), false),
        cli::EXIT_PARTIAL
    );
    assert_eq!(main_with(Stub::new(false), only(get), true), 0);
    let del = "conformance::delete::DEL-MALFORMED";
    assert_eq!(
        main_with(Stub::new(false), only(del), true),
        EXIT_TRIAL_FAILED
    );
}
