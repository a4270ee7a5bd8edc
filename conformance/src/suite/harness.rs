//! The cargo-test integration: one libtest-mimic trial per rule, named
//! `conformance::<area>::<ID>` so `--exact` runs one rule and nextest can list and
//! filter them. NotApplicable and Skipped rules are ignored trials whose reason shows
//! in the run output and in `--list` (outside nextest's terse format).
//!
//! Set `CONFORMANCE_REPORT_DIR` to write every report format after the trials ran
//! (when the process ran every rule), and in any case this process's results as a
//! fragment with a name of its own in its `fragments/` directory: under nextest, each
//! trial runs in a process of its own, and `merge DIR/fragments` folds the fragments
//! into the run's report (clear the directory before a run);
//! `CONFORMANCE_SEED` and `CONFORMANCE_CASES` override the seed and property cases,
//! and `CONFORMANCE_RULE_SEED` (`ID=N,...`) a single rule's seed, as a failing
//! property prints it. `CONFORMANCE_SKIP` (`ID,PREFIX*,tag:NAME`) skips rules, as the
//! CLI's `--skip` does: libtest's own `--skip` is a substring filter that drops trials
//! from the run without a word in the report. The closing lines give the run's verdict.
//!
//! The binary's exit code honours the verdict as the CLI's does: a rule that ran and
//! was Skipped, or left a sub-assertion not checked, makes it exit 4 (partial) though
//! every trial that ran is `ok`, unless `CONFORMANCE_ALLOW_PARTIAL` is set to a true
//! value. A trial filter that selects rules does not by itself make the run partial.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use libtest_mimic::{Arguments, Completion, Failed, FormatSetting, Trial};

use super::outcome::{Event, Outcome, Report, RuleResult};
use super::runner::{RunOptions, applicability, run_info, run_rule};
use crate::fixture::Fixture;
use crate::rules::CATALOGUE;

/// Runs the suite as a libtest-compatible test binary. Use from a `harness = false` test target.
pub fn main(fixture: Arc<dyn Fixture>) -> ExitCode {
    ExitCode::from(main_with(fixture, Arguments::from_args(), allow_partial()))
}

/// The exit code libtest gives a run with a failed trial.
pub const EXIT_TRIAL_FAILED: u8 = 101;

/// [`main`] with explicit arguments, and whether a partial run is accepted (what
/// `CONFORMANCE_ALLOW_PARTIAL` says to [`main`]); returns the exit code.
pub fn main_with(fixture: Arc<dyn Fixture>, args: Arguments, allow_partial: bool) -> u8 {
    let dir = std::env::var_os("CONFORMANCE_REPORT_DIR").filter(|d| !d.is_empty());
    run_trials(
        fixture,
        args,
        allow_partial,
        dir.as_deref().map(std::path::Path::new),
    )
}

/// [`main_with`] with the reports' directory given instead of read from
/// `CONFORMANCE_REPORT_DIR`.
pub fn run_trials(
    fixture: Arc<dyn Fixture>,
    args: Arguments,
    allow_partial: bool,
    report_dir: Option<&std::path::Path>,
) -> u8 {
    let opts = match options_from_env() {
        Ok(o) => o,
        Err(code) => return code,
    };
    if args.list && args.format != Some(FormatSetting::Terse) {
        list_trials(fixture.as_ref(), &opts);
        return 0;
    }
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime"),
    );
    let started = std::time::Instant::now();
    let mut info = run_info(fixture.as_ref(), &opts);
    info.backend_versions = runtime.block_on(super::runner::backend_versions(fixture.as_ref()));
    let results: Arc<Mutex<Vec<RuleResult>>> = Arc::default();
    let provider = fixture.provider_name();
    let trials = CATALOGUE
        .iter()
        .map(|rule| {
            let run = (
                fixture.clone(),
                runtime.clone(),
                opts.clone(),
                info.run_id.clone(),
            );
            trial(rule, run, results.clone()).with_kind(provider.clone())
        })
        .collect();
    super::secrets::install_panic_hook();
    let conclusion = libtest_mimic::run(&args, trials);
    let finished: Vec<RuleResult> = results.lock().unwrap().drain(..).collect();
    let unproved = unproved(&finished);
    let swept = finished.iter().flat_map(super::runner::swept_by).collect();
    let mut events = vec![Event::RunStarted(info)];
    events.extend(finished.into_iter().map(Event::CheckFinished));
    events.push(Event::RunFinished {
        duration: started.elapsed(),
        swept,
    });
    if let Some(report) = Report::from_events(&events) {
        conclude(&report, report_dir);
    }
    if conclusion.has_failed() {
        return EXIT_TRIAL_FAILED;
    }
    if unproved.is_empty() {
        return 0;
    }
    if allow_partial {
        eprintln!(
            "conformance: partial ({}), accepted: CONFORMANCE_ALLOW_PARTIAL is set",
            unproved.join("; ")
        );
        return 0;
    }
    eprintln!(
        "conformance: error: the run is partial ({}); every trial that ran is ok, but the \
         rules above were not fully checked. Set CONFORMANCE_ALLOW_PARTIAL=1 to accept a \
         partial run.",
        unproved.join("; ")
    );
    super::cli::EXIT_PARTIAL
}

/// One rule as a libtest trial: it runs the rule on the shared runtime and keeps its
/// result; Skipped and NotApplicable are ignored trials, Fail and Error failed ones.
fn trial(
    rule: &'static crate::rules::Rule,
    (fixture, runtime, opts, run_id): (
        Arc<dyn Fixture>,
        Arc<tokio::runtime::Runtime>,
        RunOptions,
        String,
    ),
    results: Arc<Mutex<Vec<RuleResult>>>,
) -> Trial {
    Trial::ignorable_test(rule.trial_name(), move || {
        let r = runtime.block_on(run_rule(fixture, rule, &opts, &run_id));
        let verdict = match r.outcome {
            Outcome::Pass => Ok(Completion::Completed),
            Outcome::Skipped | Outcome::NotApplicable => Ok(Completion::ignored_with(format!(
                "{}: {}",
                r.outcome.as_str(),
                r.reason.clone().unwrap_or_default()
            ))),
            Outcome::Fail | Outcome::Error => Err(Failed::from(failure_text(&r))),
        };
        results.lock().unwrap().push(r);
        verdict
    })
}

/// `--list`: every trial, with why it will not run when it will not.
fn list_trials(fixture: &dyn Fixture, opts: &RunOptions) {
    for rule in CATALOGUE {
        let why = applicability(fixture, rule).or_else(|| {
            super::runner::skip_reason(rule, &opts.skip).map(|r| (Outcome::Skipped, r))
        });
        match why {
            Some((o, why)) => println!("{}: test  # {}: {why}", rule.trial_name(), o.as_str()),
            None => println!("{}: test", rule.trial_name()),
        }
    }
}

/// The run's options from the `CONFORMANCE_*` variables; `Err` is the exit code of a
/// bad one (named on stderr).
fn options_from_env() -> Result<RunOptions, u8> {
    let mut opts = RunOptions::default();
    if let Some(seed) = std::env::var("CONFORMANCE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        opts.seed = seed;
    }
    if let Some(cases) = std::env::var("CONFORMANCE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        opts.cases = cases;
    }
    if let Ok(entries) = std::env::var("CONFORMANCE_RULE_SEED") {
        let entries: Vec<String> = entries.split(',').map(str::to_owned).collect();
        match super::runner::parse_rule_seeds(&entries) {
            Ok(seeds) => opts.rule_seeds = seeds,
            Err(e) => {
                eprintln!("conformance: CONFORMANCE_RULE_SEED: {e}");
                return Err(2);
            }
        }
    }
    if let Ok(entries) = std::env::var("CONFORMANCE_SKIP") {
        let patterns: Vec<String> = entries
            .split(',')
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        for p in &patterns {
            if let Err(e) = super::tags::check_pattern(p) {
                eprintln!("conformance: CONFORMANCE_SKIP: {e}");
                return Err(2);
            }
        }
        opts.skip = patterns;
    }
    Ok(opts)
}

/// Prints what the run did not check and its verdict, and writes this process's
/// fragment and, when it ran every rule, the reports.
fn conclude(report: &Report, report_dir: Option<&std::path::Path>) {
    eprint!(
        "{}",
        super::cli::not_checked_text(report).replace("not checked:", "conformance: not checked:")
    );
    eprintln!(
        "conformance: {} verdict: {} ({} of {} catalogue rules ran)",
        report.run.provider,
        report.verdict,
        report.results.len(),
        CATALOGUE.len()
    );
    if let Some(dir) = report_dir {
        write_fragment(report, dir);
        if report.results.len() == CATALOGUE.len() {
            write_reports(report, dir);
        } else {
            eprintln!(
                "conformance: this process ran {} of {} rules: `merge {}` makes the report \
                 of the whole run from every process's fragment",
                report.results.len(),
                CATALOGUE.len(),
                dir.join(FRAGMENTS).display()
            );
        }
    }
}

/// The rules among `results` that ran yet prove less than a pass: Skipped, or with
/// sub-assertions not checked. A rule the trial filter left out is not among them.
fn unproved(results: &[RuleResult]) -> Vec<String> {
    results
        .iter()
        .filter_map(|r| match r.outcome {
            Outcome::Skipped => Some(format!("{} Skipped", r.id)),
            _ if !r.not_checked.is_empty() => Some(format!(
                "{} left {} item(s) not checked",
                r.id,
                r.not_checked.len()
            )),
            _ => None,
        })
        .collect()
}

/// Whether `CONFORMANCE_ALLOW_PARTIAL` is set to a true value, as the CLI reads it:
/// unset, empty, `0`, `false`, `no`, `off`, `n` and `f` are false.
fn allow_partial() -> bool {
    std::env::var("CONFORMANCE_ALLOW_PARTIAL").is_ok_and(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "no" | "off" | "n" | "f"
        )
    })
}

/// The directory under `CONFORMANCE_REPORT_DIR` where each test process writes its
/// fragment.
pub const FRAGMENTS: &str = "fragments";

/// Writes this process's results as `fragments/<provider>-<run id>.json` under `dir`:
/// a name no other process takes, so that under nextest (a process per trial) every
/// rule's result is kept for `merge`.
fn write_fragment(report: &Report, dir: &std::path::Path) {
    let frags = dir.join(FRAGMENTS);
    let name = format!("{}-{}.json", report.run.provider, report.run.run_id);
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let path = frags.join(&name);
    let partial = frags.join(format!(".{name}.partial"));
    let json = super::report::json::render(report);
    let text = super::secrets::redact(&json);
    let written = std::fs::create_dir_all(&frags)
        .and_then(|()| std::fs::write(&partial, text.as_bytes()))
        .and_then(|()| std::fs::rename(&partial, &path));
    match written {
        Ok(()) => eprintln!("conformance: wrote the fragment {}", path.display()),
        Err(e) => eprintln!(
            "conformance: could not write the fragment {}: {e}",
            path.display()
        ),
    }
}

fn write_reports(report: &Report, dir: &std::path::Path) {
    match super::report::write_all(report, dir, &super::report::Format::ALL) {
        Ok(paths) => {
            for p in &paths {
                eprintln!("conformance: wrote {}", p.display());
            }
            if let Some(found) = super::report::find_payload(&paths) {
                eprintln!("conformance: error: {found} (the suite failed to blank it)");
                std::process::exit(1);
            }
        }
        Err(e) => eprintln!(
            "conformance: could not write reports to {}: {e}",
            dir.display()
        ),
    }
}

/// The text a failed trial prints: outcome, violations, evidence, property seed.
pub fn failure_text(r: &RuleResult) -> String {
    let mut out = format!(
        "{} {}: {}\n",
        r.outcome.as_str(),
        r.id,
        r.reason.clone().unwrap_or_default()
    );
    for v in &r.violations {
        out.push_str(&format!("  violation: {v}\n"));
    }
    if let Some(p) = &r.property {
        out.push_str(&format!(
            "  property seed {} shrunk input {}\n  replay: {} (the violation names the cargo-test form)\n",
            p.seed, p.shrunk, p.replay
        ));
    }
    for e in &r.evidence {
        out.push_str(&format!("  evidence: {e}\n"));
    }
    out
}
