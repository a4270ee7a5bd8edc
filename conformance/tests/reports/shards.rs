//! A run beyond one process: shards merged into the report of one run, the parts
//! merge refuses, cargo-test fragments, the event stream read back, `--rerun-failed`
//! and `--max-fail`.

use super::*;
use conformance::suite::cli::{ReportDiff, merge_reports, read_parts, verify_text};
use conformance::suite::events::{EVENTS_SCHEMA, StreamEvent};

/// Runs the CLI against the fixture that never opens a testbed (every rule that runs
/// is an Error, at once) with `args` and the output directory `out`.
fn run_in(out: &Path, args: &[&str]) -> u8 {
    let mut all = vec!["conformance", "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    cli::main_with(Arc::new(Unopenable), all)
}

fn read(path: &Path) -> Report {
    report::json::read(path).unwrap()
}

const SELECTION: &[&str] = &["--rules", "CRE-*,GET-*,CHK-ORDER", "--seed", "5"];

#[test]
fn two_shards_merged_are_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    run_in(&at("full"), SELECTION);
    for k in ["1/2", "2/2"] {
        let name = format!("shard{}", &k[..1]);
        run_in(&at(&name), &[SELECTION, &["--shard", k]].concat());
    }
    let (s1, s2) = (
        read(&at("shard1/report.json")),
        read(&at("shard2/report.json")),
    );
    let shard = s1
        .run
        .options
        .shard
        .clone()
        .expect("the report records its shard");
    assert_eq!((shard.index, shard.count), (1, 2));
    assert_eq!(shard.balanced_by, "catalogue order");
    let ids: Vec<&str> = s1.results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, shard.rules, "a shard runs exactly its rules");
    assert!(
        s2.results.iter().all(|r| !shard.rules.contains(&r.id)),
        "the shards are disjoint"
    );
    let logs = at("shard1/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join(format!("{}.log", shard.rules[0])), "a line\n").unwrap();
    let code = cli::main_with(
        Arc::new(Unopenable),
        [
            "conformance",
            "merge",
            at("shard1/report.json").to_str().unwrap(),
            at("shard2/report.json").to_str().unwrap(),
            "--out",
            at("merged").to_str().unwrap(),
        ],
    );
    assert_eq!(code, cli::EXIT_ERROR, "the verdict of the run: error");
    for f in Format::ALL {
        assert!(at("merged").join(f.file_name()).exists(), "{f:?}");
    }
    let (full, merged) = (
        read(&at("full/report.json")),
        read(&at("merged/report.json")),
    );
    let diff = ReportDiff::of(&full, &merged);
    assert!(diff.changes.is_empty(), "{}", diff.text());
    assert_eq!(merged.verdict, full.verdict);
    assert_eq!(merged.summary, full.summary);
    assert_eq!(merged.not_checked, full.not_checked);
    assert_eq!(merged.run.options, full.run.options, "no shard left");
    for r in &merged.results {
        if let Some(log) = &r.log {
            assert!(
                at("merged").join(log).is_file(),
                "{log} beside the merged report"
            );
        }
    }
    let copied = at("merged/logs").join(format!("{}.log", shard.rules[0]));
    assert_eq!(
        std::fs::read_to_string(copied).unwrap(),
        "a line\n",
        "a rule's log is copied from beside its shard's report"
    );
    let text = std::fs::read_to_string(at("merged/report.json")).unwrap();
    assert!(
        verify_text(&text).unwrap().iter().all(|f| f.ok),
        "verify accepts it"
    );
}

#[test]
fn previous_durations_balance_the_shards() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    run_in(&at("full"), SELECTION);
    let previous = at("full/report.json");
    let prev = ["--previous", previous.to_str().unwrap()];
    run_in(&at("a"), &[SELECTION, &prev, &["--shard", "1/3"]].concat());
    let shard = read(&at("a/report.json")).run.options.shard.unwrap();
    assert_eq!(shard.balanced_by, "previous durations");
    assert!(!shard.rules.is_empty());
}

#[test]
fn merge_refuses_what_is_not_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    run_in(&at("s1"), &[SELECTION, &["--shard", "1/2"]].concat());
    run_in(&at("s2"), &[SELECTION, &["--shard", "2/2"]].concat());
    let other_seed = [
        "--rules",
        "CRE-*,GET-*,CHK-ORDER",
        "--seed",
        "6",
        "--shard",
        "2/2",
    ];
    run_in(&at("seed6"), &other_seed);
    run_in(&at("s3"), &[SELECTION, &["--shard", "2/3"]].concat());
    let merge = |names: &[&str]| {
        let paths: Vec<PathBuf> = names.iter().map(|n| at(n).join("report.json")).collect();
        merge_reports(&read_parts(&paths).unwrap())
    };
    assert!(merge(&["s1", "s2"]).is_ok());
    let cases: [(&[&str], &str); 4] = [
        (&["s1", "s1"], "shard 1/2 is given twice"),
        (&["s1", "seed6"], "seed (5 vs 6)"),
        (&["s1"], "shard(s) 2/2 missing"),
        (&["s1", "s3"], "a shard of 2 but"),
    ];
    for (names, want) in cases {
        let e = merge(names).unwrap_err();
        assert!(e.contains(want), "{names:?}: {e}");
    }
    // Overlapping parts that are no shards: one run's report twice.
    run_in(&at("whole"), SELECTION);
    let e = merge(&["whole", "whole"]).unwrap_err();
    assert!(e.contains("in both") && e.contains("overlap"), "{e}");
    let mut other = read(&at("s2/report.json"));
    other.run.catalogue_hash = "0".repeat(64);
    other.run.options.cases = 3;
    let parts = vec![
        (at("s1/report.json"), read(&at("s1/report.json"))),
        (PathBuf::from("edited.json"), other),
    ];
    let e = merge_reports(&parts).unwrap_err();
    assert!(
        e.contains("catalogue") && e.contains("option cases (16 vs 3)"),
        "{e}"
    );
}

/// Under nextest each trial runs in a process of its own: every process writes a
/// fragment of its own, and the fragments merged are the run of every trial.
#[test]
fn cargo_test_fragments_merge_into_the_whole_run() {
    use conformance::suite::harness::{FRAGMENTS, run_trials};
    let dir = tempfile::tempdir().unwrap();
    let args = |filter: Option<&str>| libtest_mimic::Arguments {
        filter: filter.map(str::to_owned),
        quiet: true,
        ..Default::default()
    };
    let whole = dir.path().join("whole");
    run_trials(Arc::new(Unopenable), args(None), true, Some(&whole));
    let parts = dir.path().join("parts");
    for area in ["create", "get", "delete", "list", "check", "general"] {
        let filter = format!("conformance::{area}::");
        run_trials(
            Arc::new(Unopenable),
            args(Some(&filter)),
            true,
            Some(&parts),
        );
    }
    assert!(
        !parts.join("report.json").exists(),
        "a process that ran some rules writes no report of its own"
    );
    let fragments = std::fs::read_dir(parts.join(FRAGMENTS)).unwrap().count();
    assert_eq!(fragments, 6, "one fragment per process, none overwritten");
    let merged = merge_reports(&read_parts(&[parts.join(FRAGMENTS)]).unwrap()).unwrap();
    let full = read(&whole.join("report.json"));
    let diff = ReportDiff::of(&full, &merged);
    assert!(diff.changes.is_empty(), "{}", diff.text());
    assert_eq!(merged.verdict, full.verdict);
}

#[test]
fn the_event_stream_reads_back_against_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("events.jsonl");
    run_in(
        &dir.path().join("out"),
        &[SELECTION, &["--events", stream.to_str().unwrap()]].concat(),
    );
    let schema: Value = serde_json::from_str(EVENTS_SCHEMA).unwrap();
    let mut compiler = boon::Compiler::new();
    let mut schemas = boon::Schemas::new();
    compiler.add_resource("urn:events", schema).unwrap();
    let index = compiler.compile("urn:events", &mut schemas).unwrap();
    let text = std::fs::read_to_string(&stream).unwrap();
    let mut events = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        schemas
            .validate(&v, index)
            .unwrap_or_else(|e| panic!("{line}: {e:#}"));
        events.push(serde_json::from_str::<StreamEvent>(line).unwrap());
    }
    let report = read(&dir.path().join("out/report.json"));
    assert!(
        matches!(events.first(), Some(StreamEvent::RunStarted { run_id, .. }) if *run_id == report.run.run_id)
    );
    match events.last() {
        Some(StreamEvent::RunFinished {
            verdict, summary, ..
        }) => {
            assert_eq!(*verdict, report.verdict);
            assert_eq!(*summary, report.summary);
        }
        other => panic!("the stream ends with {other:?}"),
    }
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::RuleFinished { rule, .. } => Some(rule.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished.len(),
        report.results.len(),
        "a rule_finished per rule"
    );
    let started = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::RuleStarted { .. }))
        .count();
    assert_eq!(started, finished.len(), "every rule started, then finished");
}

#[test]
fn rerun_failed_runs_exactly_the_rules_that_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mut earlier = sample();
    let failed = ["CRE-QUOTA", "GET-MALFORMED"];
    for r in &mut earlier.results {
        if !failed.contains(&r.id.as_str()) && r.outcome.is_failure() {
            r.outcome = Outcome::Pass;
        }
    }
    for id in failed {
        if let Some(r) = earlier.results.iter_mut().find(|r| r.id == id) {
            r.outcome = Outcome::Fail;
        } else {
            let mut r = earlier.results[0].clone();
            r.id = id.into();
            r.outcome = Outcome::Error;
            earlier.results.push(r);
        }
    }
    let path = dir.path().join("earlier.json");
    std::fs::write(&path, report::json::render(&earlier)).unwrap();
    let out = dir.path().join("out");
    run_in(&out, &["--rerun-failed", path.to_str().unwrap()]);
    let rerun = read(&out.join("report.json"));
    let mut ids: Vec<&str> = rerun.results.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, failed);
    assert_eq!(rerun.run.seed, earlier.run.seed, "the earlier run's seed");
    earlier
        .results
        .iter_mut()
        .for_each(|r| r.outcome = Outcome::Pass);
    std::fs::write(&path, report::json::render(&earlier)).unwrap();
    assert_eq!(
        run_in(&out, &["--rerun-failed", path.to_str().unwrap()]),
        cli::EXIT_USAGE,
        "nothing to rerun"
    );
}

#[test]
fn max_fail_starts_no_rule_after_n_failures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let code = run_in(
        &out,
        &[
            "--rules",
            "CRE-*",
            "--max-fail",
            "2",
            "--concurrency",
            "1",
            "--seed",
            "1",
        ],
    );
    let r = read(&out.join("report.json"));
    assert_ne!(code, 0);
    assert_eq!(r.summary.error, 2, "two errors, then nothing started");
    assert!(r.stopped_early.as_deref().unwrap().contains("--max-fail 2"));
    let not_started = r
        .results
        .iter()
        .filter(|x| {
            x.reason
                .as_deref()
                .is_some_and(|w| w.contains("--max-fail 2 was reached"))
        })
        .count();
    assert!(not_started > 0);
    let mut passing = r.clone();
    for x in &mut passing.results {
        x.outcome = Outcome::Pass;
    }
    passing.refresh();
    assert_eq!(
        passing.verdict,
        Verdict::Fail,
        "stopped early is never a pass"
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    validate(&v).unwrap();
}
