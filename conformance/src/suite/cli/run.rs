//! Running the suite from the command line: the listing, one progress line per
//! finished rule on stderr, the summary, the reports and the exit code.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::time::Instant;

use super::args::Plan;
use super::progress::{Progress, Sink};
use super::{EXIT_ERROR, EXIT_FAILED, EXIT_PARTIAL};
use crate::fixture::Fixture;
use crate::rules::CATALOGUE;
use crate::suite::baseline::{apply, day_of};
use crate::suite::capture::Capture;
use crate::suite::logs::write_rule_logs;
use crate::suite::outcome::{Event, NOT_SELECTED, Outcome, Report, Verdict, WaiverKind};
use crate::suite::report::{find_payload, human_duration, write_all};
use crate::suite::runner::{applicability, run, selected, skip_reason};
use crate::suite::tags::tags_of;

/// Every selected rule with whether it runs against `fixture` (or why not: the
/// profile, a missing hook, or `skip`), and its tags.
pub fn listing(fixture: &dyn Fixture, rules: &Option<Vec<String>>, skip: &[String]) -> String {
    let chosen: Vec<_> = CATALOGUE.iter().filter(|r| selected(r, rules)).collect();
    let id_w = chosen.iter().map(|r| r.id.len()).max().unwrap_or(0);
    let title_w = chosen
        .iter()
        .map(|r| r.title.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for rule in chosen {
        let status = match applicability(fixture, rule) {
            None => match skip_reason(rule, skip) {
                None => "runs".to_owned(),
                Some(why) => format!("Skipped: {why}"),
            },
            Some((o, why)) => format!("{}: {why}", o.as_str()),
        };
        let tags = tags_of(rule);
        let tags = if tags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", tags.join(", "))
        };
        out.push_str(&format!(
            "{:<id_w$}  {:<title_w$}  {status}{tags}\n",
            rule.id, rule.title
        ));
    }
    out
}

/// The summary printed after the run: counts, then each failure and error.
pub fn summary_text(report: &Report) -> String {
    let s = &report.summary;
    let mut out = format!(
        "{} rules: {} pass, {} fail, {} error, {} skipped, {} not applicable\n",
        s.total(),
        s.pass,
        s.fail,
        s.error,
        s.skipped,
        s.not_applicable
    );
    for r in report.results.iter().filter(|r| r.fails_run()) {
        out.push_str(&format!(
            "  {:<5} {}: {}\n",
            r.outcome.as_str(),
            r.id,
            r.reason.as_deref().unwrap_or("")
        ));
        if let Some(p) = &r.property {
            out.push_str(&format!(
                "        property seed {}, shrunk input: {}\n        replay: {}\n",
                p.seed, p.shrunk, p.replay
            ));
        }
    }
    let flaky: Vec<_> = report.results.iter().filter(|r| r.flaky).collect();
    if !flaky.is_empty() {
        out.push_str("flaky:\n");
        for r in flaky {
            out.push_str(&format!(
                "  {}: {} of {} runs passed{}\n",
                r.id,
                r.passes,
                r.runs,
                if r.waiver.is_some() {
                    " (quarantined)"
                } else {
                    ""
                }
            ));
        }
    }
    out.push_str(&waivers_text(report));
    out.push_str(&not_checked_text(report));
    if let Some(why) = &report.stopped_early {
        out.push_str(&format!("stopped early: {why}\n"));
    }
    out.push_str(&format!("verdict: {}\n", report.verdict));
    out
}

/// The expected-failures and quarantine entries with what became of each, for the
/// summary; empty without entries.
pub fn waivers_text(report: &Report) -> String {
    if report.waivers.is_empty() {
        return String::new();
    }
    let mut out = String::from("expected failures and quarantine:\n");
    for w in &report.waivers {
        let file = match w.kind {
            WaiverKind::ExpectedFailure => "expected-failures",
            WaiverKind::Quarantine => "quarantine",
        };
        out.push_str(&format!(
            "  {:<7} {} ({file}, expires {}): {}\n",
            w.status.as_str(),
            w.rule,
            w.expires,
            w.message
        ));
    }
    out
}

/// What the run did not check, for the summary: rules not selected as one count,
/// every other entry on a line of its own.
pub fn not_checked_text(report: &Report) -> String {
    let not_selected = report
        .not_checked
        .iter()
        .filter(|u| u.why == NOT_SELECTED)
        .count();
    let rest: Vec<_> = report
        .not_checked
        .iter()
        .filter(|u| u.why != NOT_SELECTED)
        .collect();
    if not_selected == 0 && rest.is_empty() {
        return String::new();
    }
    let mut out = String::from("not checked:\n");
    if not_selected > 0 {
        out.push_str(&format!(
            "  {not_selected} rule(s) of the catalogue were not selected\n"
        ));
    }
    for u in rest {
        out.push_str(&format!("  {} {}: {}\n", u.rule, u.what, u.why));
    }
    out
}

/// The run in Markdown for a CI job's summary page (`$GITHUB_STEP_SUMMARY`, which
/// Gitea and Forgejo honour too): the verdict and counts, every rule that fails the run,
/// excused failures, flaky rules and baseline entries, and what changed since
/// `previous` when given.
pub fn ci_summary(report: &Report, previous: Option<&Report>) -> String {
    let s = &report.summary;
    let clip = |t: &str| {
        let t: String = t.replace(['\n', '\r'], " ").replace('|', "\\|");
        match t.char_indices().nth(200) {
            Some((at, _)) => format!("{}…", &t[..at]),
            None => t,
        }
    };
    let mut out = format!(
        "## Conformance: {} {}: **{}**\n\n",
        report.run.provider,
        report.run.provider_version,
        report.verdict.as_str().to_uppercase()
    );
    out.push_str(&format!(
        "{} pass, {} fail{}, {} error, {} skipped, {} not applicable; seed {}; {}.\n\n",
        s.pass,
        s.fail,
        if s.waived > 0 {
            format!(" ({} expected or quarantined)", s.waived)
        } else {
            String::new()
        },
        s.error,
        s.skipped,
        s.not_applicable,
        report.run.seed,
        human_duration(report.duration)
    ));
    let failing: Vec<_> = report.results.iter().filter(|r| r.fails_run()).collect();
    if !failing.is_empty() {
        out.push_str("| Rule | Outcome | Reason |\n| --- | --- | --- |\n");
        for r in failing {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                r.id,
                r.outcome.as_str(),
                clip(r.reason.as_deref().unwrap_or(""))
            ));
        }
        out.push('\n');
    }
    for r in report
        .results
        .iter()
        .filter(|r| r.waiver.is_some() || r.flaky)
    {
        let mut what = Vec::new();
        if let Some(w) = &r.waiver {
            what.push(format!(
                "{} until {}: {}",
                w.kind.label(),
                w.expires,
                clip(&w.reason)
            ));
        }
        if r.flaky {
            what.push(format!("flaky, {} of {} runs passed", r.passes, r.runs));
        }
        out.push_str(&format!("- `{}` {}\n", r.id, what.join("; ")));
    }
    for w in report.waivers.iter().filter(|w| w.status.fails_run()) {
        out.push_str(&format!(
            "- `{}` {} entry: {}\n",
            w.rule,
            w.status.as_str(),
            clip(&w.message)
        ));
    }
    if let Some(prev) = previous {
        out.push('\n');
        out.push_str(&super::diff::ReportDiff::of(prev, report).markdown());
    }
    out.push('\n');
    out
}

/// Ctrl-C: the first stops starting rules (those running finish and sweep what they
/// made, and the report is written, its verdict partial); the second aborts at once.
async fn interrupt(stop: tokio_util::sync::CancellationToken) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    stop.cancel();
    eprintln!(
        "\ninterrupted: no more rules start; the running ones finish and sweep, then the \
         reports are written (Ctrl-C again aborts)"
    );
    if tokio::signal::ctrl_c().await.is_ok() {
        eprintln!("aborted: nothing more is swept and no report is written");
        std::process::exit(130);
    }
}

/// The exit code a finished run earns: one per verdict (see the module's docs).
pub fn exit_code(report: &Report, allow_partial: bool) -> u8 {
    match report.verdict {
        Verdict::Pass => 0,
        Verdict::Partial if allow_partial => 0,
        Verdict::Partial => EXIT_PARTIAL,
        Verdict::Fail => EXIT_FAILED,
        Verdict::Error => EXIT_ERROR,
    }
}

/// Runs the planned rules against `fixture`, prints progress and the summary, writes
/// the reports and returns the exit code.
pub fn execute(fixture: Arc<dyn Fixture>, plan: Plan) -> u8 {
    let started = Instant::now();
    if let Some(filter) = &plan.log_filter {
        // Resolving the plan checked the filter.
        if let Ok(p) = super::logging::printer(filter, plan.log_format, std::io::stderr)
            && Capture::global_with(Some(p)).is_none()
        {
            eprintln!("warning: another tracing subscriber is installed; nothing is captured");
        }
    }
    let to_run = announce(fixture.as_ref(), &plan);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: failed to start the tokio runtime: {e}");
            return EXIT_ERROR;
        }
    };
    let progress = progress(&plan, to_run);
    let mut events = match &plan.events {
        None => None,
        Some(path) => match crate::suite::events::EventWriter::open(path) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!(
                    "error: failed to open the event stream {}: {e}",
                    path.display()
                );
                return EXIT_ERROR;
            }
        },
    };
    let mut sink = |e: &Event| {
        progress.event(e);
        if let Some(w) = events.as_mut() {
            w.event(e);
        }
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let mut opts = plan.opts.clone();
    opts.stop = Some(stop.clone());
    let on_signal = runtime.spawn(interrupt(stop));
    let mut report = runtime.block_on(run(fixture, opts, &mut sink));
    on_signal.abort();
    progress.finish();
    drop(runtime);
    let today = day_of(report.run.started_at);
    apply(
        &mut report,
        WaiverKind::ExpectedFailure,
        &plan.expected_failures,
        today,
    );
    apply(&mut report, WaiverKind::Quarantine, &plan.quarantine, today);
    if let Some(w) = events.as_mut() {
        w.finished(&report);
    }
    let code = write_outputs(&mut report, &plan);
    eprintln!(
        "{} in {} (seed {})",
        report.verdict.as_str().to_uppercase(),
        human_duration(started.elapsed()),
        report.run.seed
    );
    code
}

/// Prints what the run is about to do; returns the rules that will run.
fn announce(fixture: &dyn Fixture, plan: &Plan) -> Vec<String> {
    let selected_rules: Vec<_> = CATALOGUE.iter().filter(|r| plan.opts.selects(r)).collect();
    let to_run: Vec<String> = selected_rules
        .iter()
        .filter(|r| {
            applicability(fixture, r).is_none() && skip_reason(r, &plan.opts.skip).is_none()
        })
        .map(|r| r.id.to_owned())
        .collect();
    eprintln!(
        "conformance: {} {}, {} rules ({} to run), seed {}{}",
        fixture.provider_name(),
        fixture.provider_version(),
        selected_rules.len(),
        to_run.len(),
        plan.opts.seed,
        if plan.random_seed {
            " (random; replay with --seed)"
        } else {
            ""
        }
    );
    to_run
}

/// The live progress on stderr, its estimate from `--previous` when given.
fn progress(plan: &Plan, to_run: Vec<String>) -> Progress {
    let total = CATALOGUE.iter().filter(|r| plan.opts.selects(r)).count();
    let progress_sink = if std::io::stderr().is_terminal() {
        Sink::Bar(indicatif::ProgressDrawTarget::stderr())
    } else {
        Sink::Lines(Box::new(std::io::stderr()), plan.heartbeat)
    };
    Progress::start(
        progress_sink,
        total,
        to_run,
        plan.opts.concurrency.max(1),
        plan.previous
            .iter()
            .flat_map(|r| &r.results)
            .filter(|r| !matches!(r.outcome, Outcome::Skipped | Outcome::NotApplicable))
            .map(|r| (r.id.clone(), r.duration))
            .collect(),
    )
}

/// Writes the rules' logs, the summary, the reports and the CI summary; returns the
/// exit code (a payload found in a written report fails the run).
fn write_outputs(report: &mut Report, plan: &Plan) -> u8 {
    if let Err(e) = write_rule_logs(report, &plan.out) {
        eprintln!("warning: failed to write the rules' log files: {e}");
    }
    eprint!("\n{}", summary_text(report));
    let mut code = exit_code(report, plan.allow_partial);
    match write_all(report, &plan.out, &plan.formats) {
        Ok(paths) => {
            for p in &paths {
                eprintln!("wrote {}", p.display());
            }
            if let Some(found) = find_payload(&paths) {
                eprintln!("error: {found} (the suite failed to blank it)");
                code = EXIT_FAILED;
            }
        }
        Err(e) => {
            eprintln!("error: failed to write the reports: {e}");
            if code != EXIT_FAILED {
                code = EXIT_ERROR;
            }
        }
    }
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let text = ci_summary(report, plan.previous.as_ref());
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        match appended {
            Ok(()) => eprintln!("appended the summary to {}", path.to_string_lossy()),
            Err(e) => eprintln!(
                "warning: failed to append the summary to {}: {e}",
                path.to_string_lossy()
            ),
        }
    }
    code
}
