//! Running the suite from the command line: the listing, one progress line per
//! finished rule on stderr, the summary, the reports and the exit code.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Instant;

use super::args::Plan;
use super::{EXIT_ERROR, EXIT_FAILED, EXIT_PARTIAL};
use crate::fixture::Fixture;
use crate::rules::CATALOGUE;
use crate::suite::outcome::{Event, NOT_SELECTED, Outcome, Report, RuleResult, Verdict};
use crate::suite::report::{find_sentinel, human_duration, write_all};
use crate::suite::runner::{applicability, run, selected};

/// Every selected rule with its trial name and whether it runs against `fixture`.
pub fn listing(fixture: &dyn Fixture, rules: &Option<Vec<String>>) -> String {
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
            None => "runs".to_owned(),
            Some((o, why)) => format!("{}: {why}", o.as_str()),
        };
        out.push_str(&format!(
            "{:<id_w$}  {:<title_w$}  {status}\n",
            rule.id, rule.title
        ));
    }
    out
}

/// The progress line of the `index`-th finished rule out of `total`.
pub fn progress_line(index: usize, total: usize, r: &RuleResult) -> String {
    let w = total.to_string().len();
    let head = format!("[{index:>w$}/{total}] {} ...", r.id);
    match r.outcome {
        Outcome::Pass => format!("{head} Pass ({})", human_duration(r.duration)),
        Outcome::Skipped | Outcome::NotApplicable => format!(
            "{head} {}: {}",
            r.outcome.as_str(),
            r.reason.as_deref().unwrap_or("")
        ),
        Outcome::Fail | Outcome::Error => format!(
            "{head} {} ({}): {}",
            r.outcome.as_str(),
            human_duration(r.duration),
            r.reason.as_deref().unwrap_or("")
        ),
    }
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
    for r in report.results.iter().filter(|r| r.outcome.is_failure()) {
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
    out.push_str(&not_checked_text(report));
    out.push_str(&format!("verdict: {}\n", report.verdict));
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
    let provider = fixture.provider_name();
    let selected_rules: Vec<_> = CATALOGUE
        .iter()
        .filter(|r| selected(r, &plan.opts.rules))
        .collect();
    let total = selected_rules.len();
    let runnable = selected_rules
        .iter()
        .filter(|r| applicability(fixture.as_ref(), r).is_none())
        .count();
    eprintln!(
        "conformance: {provider} {}, {total} rules ({runnable} to run), seed {}{}",
        fixture.provider_version(),
        plan.opts.seed,
        if plan.random_seed {
            " (random; replay with --seed)"
        } else {
            ""
        }
    );
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
    let mut finished = 0usize;
    let mut sink = move |e: &Event| {
        if let Event::CheckFinished(r) = e {
            finished += 1;
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{}", progress_line(finished, total, r));
        }
    };
    let report = runtime.block_on(run(fixture, plan.opts.clone(), &mut sink));
    drop(runtime);
    eprint!("\n{}", summary_text(&report));
    let mut code = exit_code(&report, plan.allow_partial);
    match write_all(&report, &plan.out, &plan.formats) {
        Ok(paths) => {
            for p in &paths {
                eprintln!("wrote {}", p.display());
            }
            if let Some(found) = find_sentinel(&paths) {
                eprintln!("error: a cloud-init sentinel reached a report (CRE-SECRET): {found}");
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
    eprintln!(
        "{} in {} (seed {})",
        report.verdict.as_str().to_uppercase(),
        human_duration(started.elapsed()),
        report.run.seed
    );
    code
}
