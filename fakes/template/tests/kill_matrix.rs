//! The kill matrix: the whole suite against every mutant, one trial each.
//!
//! A mutant's trial passes when the rules that failed are exactly the rules it
//! declares and nothing errored. The correct provider, in each of its profile
//! variants, must fail nothing. The `coverage` trial checks that every catalogue rule
//! is declared by at least one mutant and prints the matrix (rule → mutants).

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::Arc;

use conformance::fixture::Fixture;
use conformance::rules::CATALOGUE;
use conformance::suite::outcome::{Outcome, Report};
use conformance::suite::runner::{RunOptions, run};
use libtest_mimic::{Arguments, Failed, Trial};
use template_provider::TemplateFixture;
use template_provider::mutants::MUTANTS;

fn run_suite(fixture: TemplateFixture) -> Report {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let fixture: Arc<dyn Fixture> = Arc::new(fixture);
    let opts = RunOptions {
        concurrency: 8,
        ..RunOptions::default()
    };
    rt.block_on(run(fixture, opts, &mut |_| {}))
}

fn outcomes(report: &Report, which: Outcome) -> BTreeSet<String> {
    report
        .results
        .iter()
        .filter(|r| r.outcome == which)
        .map(|r| r.id.clone())
        .collect()
}

fn explain(report: &Report, ids: &BTreeSet<String>) -> String {
    report
        .results
        .iter()
        .filter(|r| ids.contains(&r.id))
        .map(|r| {
            format!(
                "  {} {}: {}\n",
                r.outcome.as_str(),
                r.id,
                r.reason.clone().unwrap_or_default()
            )
        })
        .collect()
}

/// Runs the suite and compares the failed rules with `declared`.
fn judge(fixture: TemplateFixture, declared: &[&str]) -> Result<(), Failed> {
    let report = run_suite(fixture);
    let failed = outcomes(&report, Outcome::Fail);
    let errored = outcomes(&report, Outcome::Error);
    let declared: BTreeSet<String> = declared.iter().map(|s| s.to_string()).collect();
    let missed: BTreeSet<String> = declared.difference(&failed).cloned().collect();
    let extra: BTreeSet<String> = failed.difference(&declared).cloned().collect();
    if missed.is_empty() && extra.is_empty() && errored.is_empty() {
        return Ok(());
    }
    let mut msg = String::new();
    if !missed.is_empty() {
        msg.push_str(&format!("declared but passed: {missed:?}\n"));
    }
    if !extra.is_empty() {
        msg.push_str(&format!(
            "failed but not declared: {extra:?}\n{}",
            explain(&report, &extra)
        ));
    }
    if !errored.is_empty() {
        msg.push_str(&format!(
            "errored: {errored:?}\n{}",
            explain(&report, &errored)
        ));
    }
    Err(msg.into())
}

fn coverage() -> Result<(), Failed> {
    let mut matrix: BTreeMap<&str, Vec<&str>> =
        CATALOGUE.iter().map(|r| (r.id, Vec::new())).collect();
    for m in MUTANTS {
        for id in m.declared {
            matrix
                .get_mut(id)
                .ok_or_else(|| format!("{} declares unknown rule {id}", m.name))?
                .push(m.name);
        }
    }
    println!("\nrule → mutants that break it");
    for r in CATALOGUE {
        println!("  {:<22} {}", r.id, matrix[r.id].join(", "));
    }
    let unkilled: Vec<_> = matrix
        .iter()
        .filter(|(_, m)| m.is_empty())
        .map(|(id, _)| *id)
        .collect();
    if unkilled.is_empty() {
        Ok(())
    } else {
        Err(format!("rules no mutant breaks: {unkilled:?}").into())
    }
}

fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(4);
    }
    let mut trials = vec![
        Trial::test("coverage", coverage),
        Trial::test("correct::default", || {
            judge(TemplateFixture::default(), &[])
        }),
        Trial::test("correct::blocking", || {
            judge(TemplateFixture::default().blocking(), &[])
        }),
        Trial::test("correct::fail-whole", || {
            judge(TemplateFixture::default().fail_whole(), &[])
        }),
    ];
    trials.extend(MUTANTS.iter().map(|m| {
        Trial::test(format!("mutant::{}", m.name), move || {
            judge((m.build)(), m.declared)
        })
    }));
    libtest_mimic::run(&args, trials).exit_code()
}
