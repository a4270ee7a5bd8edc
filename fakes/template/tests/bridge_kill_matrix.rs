//! The kill matrix through the bridge: every mutant of the template, served by
//! `template-serve --mutant NAME` and checked through the process protocol, fails
//! exactly the rules it declares, as in process; and the bridge mutants (a provider
//! process that ignores its deadline, reports no spans, or logs the cloud-init in a
//! notification or on stderr) each fail the rule they break: the bridge never makes a
//! provider look better than it is.

mod support;

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Arc;

use conformance::suite::outcome::Outcome;
use libtest_mimic::{Arguments, Failed, Trial};
use support::{bridged, explain, run_suite, with_outcome};
use template_provider::mutants::{DELIBERATE_PANIC, MUTANTS, Mutant, SLOW_FIRST, rules_for};

const SEED: u64 = 0x5eed;

fn judge(args: &str, declared: &[&str], rules: Option<Vec<String>>) -> Result<(), Failed> {
    let report = run_suite(Arc::new(bridged(args)), SEED, rules);
    let failed = with_outcome(&report, Outcome::Fail);
    let errored = with_outcome(&report, Outcome::Error);
    let declared: BTreeSet<String> = declared.iter().map(|s| s.to_string()).collect();
    let missed: BTreeSet<String> = declared.difference(&failed).cloned().collect();
    let extra: BTreeSet<String> = failed.difference(&declared).cloned().collect();
    if missed.is_empty() && extra.is_empty() && errored.is_empty() {
        return Ok(());
    }
    Err(format!(
        "declared but passed: {missed:?}\nfailed but not declared: {extra:?}\n{}errored: {errored:?}\n{}",
        explain(&report, &extra),
        explain(&report, &errored)
    )
    .into())
}

/// A bridge mutant must fail `rule` (it may fail others too: a provider without
/// spans also logs nothing the suite can see).
fn must_fail(mutant: &str, rule: &str) -> Result<(), Failed> {
    let report = run_suite(
        Arc::new(bridged(&format!("--mutant {mutant}"))),
        SEED,
        Some(vec![rule.to_owned()]),
    );
    let r = report
        .results
        .iter()
        .find(|r| r.id == rule)
        .ok_or("the rule did not run")?;
    if r.outcome == Outcome::Fail {
        Ok(())
    } else {
        Err(format!(
            "{mutant}: {rule} is {} ({})",
            r.outcome.as_str(),
            r.reason.clone().unwrap_or_default()
        )
        .into())
    }
}

fn main() -> ExitCode {
    quiet_deliberate_panics();
    let mut args = Arguments::from_args();
    // The trials mostly wait; six at a time keep the two cores from being the limit.
    if args.test_threads.is_none() {
        args.test_threads = Some(6);
    }
    // A declaration mutant runs only the rules naming its axis, as in process.
    let mutant = |m: &'static Mutant| {
        Trial::test(format!("mutant::{}", m.name), move || {
            judge(&format!("--mutant {}", m.name), m.declared, rules_for(m))
        })
    };
    let slow = |m: &&Mutant| SLOW_FIRST.contains(&m.name);
    let mut trials: Vec<Trial> = MUTANTS.iter().filter(slow).map(mutant).collect();
    trials.push(Trial::test("correct::default", || judge("", &[], None)));
    // Telemetry a request's leftover task sends after its reply is dropped by serve,
    // so it breaks nothing (issue 28: late telemetry is a protocol failure).
    trials.push(Trial::test("correct::late-telemetry", || {
        let rules = [
            "CRE-IDEMPOTENT",
            "GET-STATE",
            "DEL-IDEMPOTENT",
            "LST-AGREES",
            "GEN-LOGGING",
        ];
        judge(
            "--mutant remote-late-telemetry",
            &[],
            Some(rules.iter().map(|r| r.to_string()).collect()),
        )
    }));
    trials.extend(MUTANTS.iter().filter(|m| !slow(m)).map(mutant));
    for (mutant, rule) in [
        ("remote-ignores-deadline", "GEN-CANCEL"),
        ("remote-no-spans", "GEN-SPANS"),
        ("remote-secret-in-log", "CRE-SECRET"),
        ("remote-secret-on-stderr", "CRE-SECRET"),
        ("remote-leaks-everywhere", "CRE-SECRET"),
    ] {
        trials.push(Trial::test(format!("bridge-mutant::{mutant}"), move || {
            must_fail(mutant, rule)
        }));
    }
    libtest_mimic::run(&args, trials).exit_code()
}

/// Keeps the panics mutants raise on purpose off the console; any other panic is
/// printed as usual.
fn quiet_deliberate_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if !text.contains(DELIBERATE_PANIC) {
            default(info);
        }
    }));
}
