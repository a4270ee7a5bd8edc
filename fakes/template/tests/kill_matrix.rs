//! The kill matrix: the whole suite against every mutant, one trial each.
//!
//! A mutant's trial passes when the rules that failed are exactly the rules it
//! declares and nothing errored. The correct provider, in each of its profile
//! variants, must fail nothing. The `coverage` trial checks that every catalogue rule
//! is declared by at least one mutant and prints the matrix (rule → mutants).

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::Arc;

use conformance::expectations::MEANINGS;
use conformance::fixture::Fixture;
use conformance::profile::{Axis, AxisClass};
use conformance::rules::CATALOGUE;
use conformance::suite::outcome::{Outcome, Report};
use conformance::suite::runner::{RunOptions, run};
use libtest_mimic::{Arguments, Failed, Trial};
use template_provider::TemplateFixture;
use template_provider::covering_profiles;
use template_provider::mutants::{DELIBERATE_PANIC, MUTANTS, Mutant, SLOW_FIRST, rules_for};

fn run_suite(fixture: TemplateFixture, rules: Option<Vec<String>>) -> Report {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let fixture: Arc<dyn Fixture> = Arc::new(fixture);
    let opts = RunOptions {
        concurrency: 8,
        rules,
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

/// Runs the suite (only the rules naming the mutant's declared axis, for a declaration
/// mutant) and compares the failed rules with `declared`.
fn judge_mutant(m: &Mutant) -> Result<(), Failed> {
    let rules = rules_for(m);
    if let Some(rules) = &rules
        && let Some(outside) = m.declared.iter().find(|d| !rules.iter().any(|r| r == *d))
    {
        return Err(format!(
            "{} declares {outside}, which does not name its axis",
            m.name
        )
        .into());
    }
    judge_on((m.build)(), m.declared, rules)
}

/// Runs the suite and compares the failed rules with `declared`.
fn judge(fixture: TemplateFixture, declared: &[&str]) -> Result<(), Failed> {
    judge_on(fixture, declared, None)
}

fn judge_on(
    fixture: TemplateFixture,
    declared: &[&str],
    rules: Option<Vec<String>>,
) -> Result<(), Failed> {
    let report = run_suite(fixture, rules);
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

/// The axis coverage table: for every value of every behaviour-checked axis, the
/// covering profiles that exercise it, and for every value that promises a behaviour
/// the mutants that break the promise and the rules that kill them (the mutants'
/// trials check the kills). Printed and written beside the test's output; below 100 %
/// of promising values it fails.
fn axis_coverage() -> Result<(), Failed> {
    let rows = covering_profiles();
    let mut table = String::from(
        "| axis | value | exercised by (profile matrix rows) | mutants | killed by |\n|---|---|---|---|---|\n",
    );
    let (mut promising, mut covered, mut missing) = (0, 0, Vec::new());
    for axis in Axis::ALL
        .iter()
        .filter(|a| a.class() == AxisClass::BehaviourChecked)
    {
        for value in axis.values() {
            let exercised: Vec<String> = rows
                .iter()
                .enumerate()
                .filter(|(_, p)| p.value(*axis) == *value)
                .map(|(i, _)| format!("#{i}"))
                .collect();
            let meaning = MEANINGS
                .iter()
                .find(|m| m.axis == *axis && m.value == *value)
                .ok_or_else(|| format!("{axis}={value} has no meaning"))?;
            let (mutants, killed) = if !meaning.promises() {
                ("(promises nothing)".to_owned(), "—".to_owned())
            } else {
                promising += 1;
                let names = meaning.proved_by;
                let mut killers = BTreeSet::new();
                for n in names {
                    let m = MUTANTS
                        .iter()
                        .find(|m| m.name == *n)
                        .ok_or_else(|| format!("the contract names an unknown mutant {n}"))?;
                    killers.extend(m.declared.iter().copied());
                }
                if names.is_empty() {
                    missing.push(format!("{axis}={value}"));
                } else {
                    covered += 1;
                }
                (
                    names.join(", "),
                    killers.into_iter().collect::<Vec<_>>().join(", "),
                )
            };
            table.push_str(&format!(
                "| `{axis}` | {value} | {} | {mutants} | {killed} |\n",
                exercised.join(" ")
            ));
        }
    }
    let pct = if promising == 0 {
        100
    } else {
        covered * 100 / promising
    };
    table.push_str(&format!(
        "\n{covered} of {promising} promising values have a mutant ({pct} %).\n"
    ));
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("axis-coverage.md");
    std::fs::write(&path, &table).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("\naxis coverage (also in {}):\n{table}", path.display());
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("promising values without a mutant: {missing:?}").into())
    }
}

fn main() -> ExitCode {
    quiet_deliberate_panics();
    let mut args = Arguments::from_args();
    // The trials mostly wait (deadlines, settle times, held boots): eight at a time keep
    // the two cores far from busy.
    if args.test_threads.is_none() {
        args.test_threads = Some(8);
    }
    let slow = |m: &&Mutant| SLOW_FIRST.contains(&m.name);
    let mutant =
        |m: &'static Mutant| Trial::test(format!("mutant::{}", m.name), move || judge_mutant(m));
    let mut trials: Vec<Trial> = MUTANTS.iter().filter(slow).map(mutant).collect();
    trials.push(Trial::test("correct::blocking", || {
        judge(TemplateFixture::default().blocking(), &[])
    }));
    trials.extend([
        Trial::test("coverage", coverage),
        Trial::test("correct::default", || {
            judge(TemplateFixture::default(), &[])
        }),
        Trial::test("correct::fail-whole", || {
            judge(TemplateFixture::default().fail_whole(), &[])
        }),
        Trial::test("axis-coverage", axis_coverage),
    ]);
    trials.extend(MUTANTS.iter().filter(|m| !slow(m)).map(mutant));
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
