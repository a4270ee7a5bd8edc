//! Tests of the command line: flags, defaults, bad values, subcommands, listing and
//! progress lines.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args as _, CommandFactory, Parser};

use super::tree::Cli;
use super::*;
use crate::fixture::{Fixture, Hook, HookError, HookResult, Location, Testbed};
use crate::profile::Profile;
use crate::suite::outcome::{Outcome, RuleResult};
use crate::suite::report::Format;
use crate::suite::runner::RunOptions;

struct Named;

impl Fixture for Named {
    fn provider_name(&self) -> String {
        "my/provider".into()
    }
    fn profile(&self) -> Profile {
        Profile::builder()
            .with("quota", "none")
            .unwrap()
            .build()
            .unwrap()
    }
    fn hooks(&self) -> Vec<Hook> {
        vec![Hook::Inventory]
    }
    fn locations(&self) -> Vec<Location> {
        vec![Location {
            name: "l0".into(),
            placement: "z0".into(),
        }]
    }
    fn has_checker(&self) -> bool {
        false
    }
    fn open(&self) -> crate::BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async { Err(HookError::new("no backend")) })
    }
}

fn plan(args: &[&str]) -> Result<Plan, String> {
    let cli = Cli::try_parse_from(std::iter::once("conformance").chain(args.iter().copied()))
        .map_err(|e| e.to_string())?;
    Plan::resolve(cli.suite.run, &Named).map_err(|e| e.to_string())
}

#[test]
fn every_flag_is_documented_once_with_an_env_fallback() {
    let cmd = RunArgs::augment_args(clap::Command::new("run"));
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version") {
            continue;
        }
        let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
        let want = format!("CONFORMANCE_{}", id.to_ascii_uppercase());
        assert_eq!(env.as_deref(), Some(want.as_str()), "--{id}");
        assert!(arg.get_help().is_some(), "--{id} has no help");
    }
    cmd.debug_assert();
}

#[test]
fn defaults_resolve_from_the_fixture() {
    let p = plan(&[]).unwrap();
    assert_eq!(p.formats, Format::ALL);
    assert_eq!(p.out, PathBuf::from("reports/my-provider"));
    assert!(p.random_seed);
    assert_eq!(p.opts.rules, None);
    let defaults = RunOptions::default();
    assert_eq!(
        (p.opts.cases, p.opts.concurrency, p.opts.rule_timeout),
        (defaults.cases, defaults.concurrency, defaults.rule_timeout)
    );
}

#[test]
fn flags_resolve_to_run_options() {
    let p = plan(&[
        "--rules",
        "CRE-*,GET-MALFORMED",
        "--format",
        "md,json,md",
        "--out",
        "x",
        "--seed",
        "7",
        "--rule-timeout",
        "1.5",
        "--cases",
        "3",
        "--concurrency",
        "2",
        "--provider-commit",
        " 1a2b3c ",
    ])
    .unwrap();
    assert_eq!(
        p.opts.rules,
        Some(vec!["CRE-*".to_owned(), "GET-MALFORMED".to_owned()])
    );
    assert_eq!(p.formats, [Format::Markdown, Format::Json]);
    assert_eq!(p.out, PathBuf::from("x"));
    assert_eq!((p.opts.seed, p.random_seed), (7, false));
    assert_eq!(p.opts.rule_timeout, Duration::from_millis(1500));
    assert_eq!((p.opts.cases, p.opts.concurrency), (3, 2));
    assert_eq!(p.opts.provider_commit.as_deref(), Some("1a2b3c"));
    assert_eq!(plan(&[]).unwrap().opts.provider_commit, None);
}

/// `--rule-timeout` takes seconds or a duration as Go writes it.
#[test]
fn rule_timeout_takes_seconds_or_a_duration() {
    for (text, want) in [
        ("90", 90_000),
        ("1m30s", 90_000),
        ("1.5h", 5_400_000),
        ("250ms", 250),
    ] {
        let p = plan(&["--rule-timeout", text]).unwrap();
        assert_eq!(p.opts.rule_timeout, Duration::from_millis(want), "{text}");
    }
    let e = plan(&["--rule-timeout", "soon"]).unwrap_err();
    assert!(e.contains("--rule-timeout") && e.contains("1m30s"), "{e}");
    let e = plan(&["--rule-timeout=-1m"]).unwrap_err();
    assert!(e.contains("out of range"), "{e}");
}

#[test]
fn bad_values_name_the_flag() {
    for (args, flag) in [
        (&["--rules", "NOPE-*"][..], "--rules"),
        (&["--format", "pdf"], "--format"),
        (&["--seed", "twelve"], "--seed"),
        (&["--seed=-1"], "--seed"),
        (&["--rule-timeout", "0"], "--rule-timeout"),
        (&["--cases", "0"], "--cases"),
        (&["--concurrency", "0"], "--concurrency"),
    ] {
        let e = plan(args).unwrap_err();
        assert!(e.contains(flag), "{args:?}: {e}");
    }
}

#[test]
fn bad_arguments_exit_with_two() {
    let code = main_with(Arc::new(Named), ["conformance", "--rules", "XYZ-1"]);
    assert_eq!(code, EXIT_USAGE);
    // main_with prints clap's own errors straight to stderr; check the code only.
    let e = Cli::try_parse_from(["conformance", "--bogus"]).unwrap_err();
    assert_eq!(e.exit_code(), i32::from(EXIT_USAGE));
}

#[test]
fn listing_shows_applicability() {
    let text = listing(&Named, &Some(vec!["CRE-QUOTA".into(), "CHK-*".into()]), &[]);
    let quota = text.lines().find(|l| l.starts_with("CRE-QUOTA")).unwrap();
    assert!(
        quota.contains("NotApplicable: profile declares quota=none"),
        "{quota}"
    );
    assert!(text.lines().any(|l| l.starts_with("CHK-ORDER")));
    assert!(!text.contains("GET-"));
}

#[test]
fn progress_lines_pad_the_counter() {
    let mut r = RuleResult {
        id: "CRE-RETURN".into(),
        title: "t".into(),
        area: "create".into(),
        outcome: Outcome::Pass,
        reason: None,
        violations: vec![],
        evidence: vec![],
        property: None,
        seed: 1,
        not_checked: vec![],
        faults: vec![],
        duration: Duration::from_millis(12),
        peak_instances: 0,
        runs: 1,
        passes: 1,
        flaky: false,
        repeat_seeds: vec![],
        waiver: None,
        log: None,
    };
    assert_eq!(
        progress_line(3, 45, &r),
        "[ 3/45] CRE-RETURN ... Pass (12 ms)"
    );
    r.outcome = Outcome::NotApplicable;
    r.reason = Some("profile declares quota=none".into());
    assert_eq!(
        progress_line(10, 45, &r),
        "[10/45] CRE-RETURN ... NotApplicable: profile declares quota=none"
    );
}

#[test]
fn subcommands_take_the_run_flags_after_them() {
    let cli = Cli::try_parse_from(["conformance", "run", "--seed", "3"]).unwrap();
    match cli.suite.command {
        Some(SuiteCommand::Run(a)) => assert_eq!(a.seed, Some(3)),
        other => panic!("{other:?}"),
    }
    let cli = Cli::try_parse_from(["conformance", "list", "--rules", "CRE-QUOTA"]).unwrap();
    match cli.suite.command {
        Some(SuiteCommand::List(a)) => assert_eq!(a.rules, ["CRE-QUOTA"]),
        other => panic!("{other:?}"),
    }
    let cli = Cli::try_parse_from(["conformance", "catalogue", "--format", "md"]).unwrap();
    assert!(matches!(
        cli.suite.command,
        Some(SuiteCommand::Catalogue {
            format: CatalogueFormat::Md
        })
    ));
    let cli =
        Cli::try_parse_from(["conformance", "render", "r.json", "--format", "md,html"]).unwrap();
    match cli.suite.command {
        Some(SuiteCommand::Render(a)) => {
            assert_eq!(a.report, PathBuf::from("r.json"));
            assert_eq!(a.format, [Format::Markdown, Format::Html]);
            assert_eq!(a.out, None);
        }
        other => panic!("{other:?}"),
    }
    let cli = Cli::try_parse_from(["conformance", "diff", "old.json", "new.json"]).unwrap();
    match cli.suite.command {
        Some(SuiteCommand::Diff(a)) => {
            assert_eq!((a.old, a.new), ("old.json".into(), "new.json".into()));
        }
        other => panic!("{other:?}"),
    }
    assert!(Cli::try_parse_from(["conformance", "diff", "old.json"]).is_err());
    let cli = Cli::try_parse_from(["conformance", "--seed", "4"]).unwrap();
    assert!(cli.suite.command.is_none());
    assert_eq!(cli.suite.run.seed, Some(4));
    // Run flags before a subcommand would be lost: refused instead.
    assert!(Cli::try_parse_from(["conformance", "--seed", "4", "list"]).is_err());
    Cli::command().debug_assert();
}

/// A provider command that embeds the suite and adds a flag of its own.
#[derive(Debug, Parser)]
struct Embedding {
    /// The provider's configuration.
    #[arg(long, global = true)]
    config: Option<String>,
    #[command(flatten)]
    suite: SuiteArgs,
}

#[test]
fn an_embedding_command_adds_its_own_flags() {
    Embedding::command().debug_assert();
    let e = Embedding::try_parse_from(["p", "--config", "c.yaml", "--seed", "1"]).unwrap();
    assert_eq!(e.config.as_deref(), Some("c.yaml"));
    assert_eq!(e.suite.run.seed, Some(1));
    let e = Embedding::try_parse_from(["p", "list", "--config", "c.yaml"]).unwrap();
    assert_eq!(e.config.as_deref(), Some("c.yaml"));
    assert!(matches!(e.suite.command, Some(SuiteCommand::List(_))));
    let help = Embedding::command().render_help().to_string();
    assert!(
        help.contains("--config") && help.contains("--rules"),
        "{help}"
    );
}

#[test]
fn render_and_diff_document_their_exit_codes() {
    let mut cmd = Cli::command();
    for (name, want) in [("render", RENDER_EXIT_HELP), ("diff", DIFF_EXIT_HELP)] {
        let help = cmd
            .find_subcommand_mut(name)
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains(want), "{name}: {help}");
    }
    assert!(DIFF_EXIT_HELP.contains("1 some rule got worse"));
}

#[test]
fn run_suite_builds_the_fixture_only_when_it_needs_one() {
    let built = std::sync::atomic::AtomicBool::new(false);
    let make = || -> Result<Arc<dyn Fixture>, String> {
        built.store(true, std::sync::atomic::Ordering::SeqCst);
        Err("no such configuration".into())
    };
    let cli = Cli::try_parse_from(["conformance", "catalogue"]).unwrap();
    assert_eq!(run_suite(cli.suite, &make), 0);
    assert!(!built.load(std::sync::atomic::Ordering::SeqCst));
    let cli = Cli::try_parse_from(["conformance", "render", "/nonexistent/report.json"]).unwrap();
    assert_eq!(run_suite(cli.suite, &make), EXIT_USAGE);
    let cli =
        Cli::try_parse_from(["conformance", "diff", "/nonexistent/a", "/nonexistent/b"]).unwrap();
    assert_eq!(run_suite(cli.suite, &make), EXIT_USAGE);
    assert!(!built.load(std::sync::atomic::Ordering::SeqCst));
    let cli = Cli::try_parse_from(["conformance", "list"]).unwrap();
    assert_eq!(run_suite(cli.suite, &make), EXIT_USAGE);
    assert!(built.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn rules_and_skip_take_tags() {
    let p = plan(&["--rules", "tag:two-locations", "--skip", "tag:faults,CHK-*"]).unwrap();
    assert_eq!(p.opts.rules, Some(vec!["tag:two-locations".to_owned()]));
    assert_eq!(p.opts.skip, ["tag:faults", "CHK-*"]);
    for (args, flag, want) in [
        (&["--rules", "tag:nope"][..], "--rules", "no tag is named"),
        (&["--skip", "tag:nope"], "--skip", "no tag is named"),
        (&["--skip", "XYZ-*"], "--skip", "no rule matches"),
        (&["--repeat", "0"], "--repeat", "0"),
    ] {
        let e = plan(args).unwrap_err();
        assert!(e.contains(flag) && e.contains(want), "{args:?}: {e}");
    }
    assert_eq!(plan(&["--repeat", "3"]).unwrap().opts.repeat, 3);
    assert_eq!(plan(&[]).unwrap().opts.repeat, 1);
}

#[test]
fn the_listing_names_a_requested_skip_and_the_tags() {
    let text = listing(
        &Named,
        &Some(vec!["LST-*".into(), "GET-MALFORMED".into()]),
        &["GET-*".into()],
    );
    let get = text
        .lines()
        .find(|l| l.starts_with("GET-MALFORMED"))
        .unwrap();
    assert!(
        get.contains("Skipped: skipped on request (--skip GET-*)"),
        "{get}"
    );
    let partial = text.lines().find(|l| l.starts_with("LST-PARTIAL")).unwrap();
    assert!(partial.ends_with("[faults, two-locations]"), "{partial}");
}

#[test]
fn baseline_files_are_read_when_the_plan_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("expected.yaml");
    std::fs::write(
        &good,
        "- rule: DEL-MALFORMED\n  reason: accepts empty IDs\n  expires: 2999-01-01\n",
    )
    .unwrap();
    let p = plan(&["--expected-failures", good.to_str().unwrap()]).unwrap();
    assert_eq!(p.expected_failures.len(), 1);
    assert_eq!(p.expected_failures[0].rule, "DEL-MALFORMED");
    assert!(p.quarantine.is_empty());
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "- rule: NOPE\n  reason: x\n  expires: 2999-01-01\n").unwrap();
    let e = plan(&["--quarantine", bad.to_str().unwrap()]).unwrap_err();
    assert!(
        e.contains("--quarantine") && e.contains("bad.yaml") && e.contains("NOPE"),
        "{e}"
    );
    let e = plan(&["--expected-failures", "/nonexistent/x.yaml"]).unwrap_err();
    assert!(
        e.contains("--expected-failures") && e.contains("failed to read"),
        "{e}"
    );
}

#[test]
fn a_repeated_rule_shows_its_runs_on_the_progress_line() {
    let r = RuleResult {
        id: "GET-BUSY".into(),
        title: "t".into(),
        area: "get".into(),
        outcome: Outcome::Fail,
        reason: Some("run 2 of 3, seed 9: boom".into()),
        violations: vec![],
        evidence: vec![],
        property: None,
        seed: 1,
        not_checked: vec![],
        faults: vec![],
        duration: Duration::from_millis(30),
        peak_instances: 0,
        runs: 3,
        passes: 2,
        flaky: true,
        repeat_seeds: vec![9, 10],
        waiver: None,
        log: None,
    };
    assert_eq!(
        progress_line(1, 1, &r),
        "[1/1] GET-BUSY ... Fail (30 ms): run 2 of 3, seed 9: boom [flaky: 2 of 3 runs passed]"
    );
}
