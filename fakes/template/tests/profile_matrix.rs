//! The profile matrix: the whole suite against the template declaring, and behaving
//! as, each profile of a covering set, one trial per profile:
//! `cargo test -p template-provider --test profile_matrix`.
//!
//! The set exercises every value of every behaviour-checked axis, and every pair of the interacting axes (create-return × provisioning-state,
//! delete-return × secondary-resources, gc-mark × list-partial, gc-mark × created-at).
//! A trial passes when every rule is Pass or NotApplicable with a reason; the
//! `coverage` trial checks the set itself and prints it. The `axis-lists` trial runs
//! the suite under every profile of the set at once and checks that each rule's
//! catalogue axes are exactly the axes its check read (gates aside: the runner reads
//! those), so the contract document claims no dependency that does not exist.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Arc;

use conformance::Profile;
use conformance::fixture::Fixture;
use conformance::profile::{Axis, AxisClass};
use conformance::rules::CATALOGUE;
use conformance::suite::cx::axes_read;
use conformance::suite::outcome::Outcome;
use conformance::suite::runner::{RunOptions, run};
use libtest_mimic::{Arguments, Failed, Trial};
use template_provider::{TemplateConfig, TemplateFixture, covering_profiles, covering_rows};

fn profile(pairs: &str) -> Result<Profile, Failed> {
    TemplateConfig::default_profile()
        .with_pairs(pairs)
        .map_err(|e| format!("{pairs}: {e}").into())
}

fn coverage() -> Result<(), Failed> {
    let profiles = covering_profiles();
    let mut missing = Vec::new();
    println!("\naxis                 value                 profiles");
    for axis in Axis::ALL
        .iter()
        .filter(|a| a.class() == AxisClass::BehaviourChecked)
    {
        for value in axis.values() {
            let rows: Vec<String> = profiles
                .iter()
                .enumerate()
                .filter(|(_, p)| p.value(*axis) == *value)
                .map(|(i, _)| format!("#{i}"))
                .collect();
            println!("  {:<20} {:<21} {}", axis.key(), value, rows.join(" "));
            if rows.is_empty() {
                missing.push(format!("{}={value}", axis.key()));
            }
        }
    }
    let pairs = [
        ("create-return", "provisioning-state"),
        ("delete-return", "secondary-resources"),
        ("gc-mark", "list-partial"),
        ("gc-mark", "created-at"),
    ];
    for (a, b) in pairs {
        let (a, b) = (axis(a), axis(b));
        let seen: BTreeSet<(&str, &str)> =
            profiles.iter().map(|p| (p.value(a), p.value(b))).collect();
        for va in a.values() {
            for vb in b.values() {
                let legal = Profile::builder()
                    .with(a.key(), va)
                    .and_then(|x| x.with(b.key(), vb))
                    .and_then(|x| x.build())
                    .is_ok();
                if legal && !seen.contains(&(*va, *vb)) {
                    missing.push(format!("{a}={va} with {b}={vb}"));
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("the matrix misses {missing:?}").into())
    }
}

fn axis(key: &str) -> Axis {
    *Axis::ALL
        .iter()
        .find(|a| a.key() == key)
        .expect("a known axis")
}

fn axis_lists() -> Result<(), Failed> {
    let profiles = covering_profiles();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let reports = rt.block_on(futures_util::future::join_all(profiles.into_iter().map(
        |p| {
            let fixture: Arc<dyn Fixture> = Arc::new(TemplateFixture::default().with_profile(p));
            let opts = RunOptions {
                concurrency: 8,
                ..RunOptions::default()
            };
            async move { run(fixture, opts, &mut |_| {}).await }
        },
    )));
    let ran: BTreeSet<&str> = reports
        .iter()
        .flat_map(|r| r.results.iter())
        .filter(|r| r.outcome == Outcome::Pass)
        .map(|r| r.id.as_str())
        .collect();
    let read = axes_read();
    let mut wrong = Vec::new();
    for rule in CATALOGUE {
        if !ran.contains(rule.id) {
            wrong.push(format!(
                "{}: never passed under the matrix, so its reads are unknown",
                rule.id
            ));
            continue;
        }
        let named: BTreeSet<&str> = rule.axes.iter().map(|a| a.key()).collect();
        let got: BTreeSet<&str> = read
            .get(rule.id)
            .map(|v| v.iter().map(|a| a.key()).collect())
            .unwrap_or_default();
        if named != got {
            wrong.push(format!(
                "{}: the catalogue names {named:?}, the check read {got:?}",
                rule.id
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n").into())
    }
}

fn judge(pairs: &str) -> Result<(), Failed> {
    let profile = profile(pairs)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let fixture: Arc<dyn Fixture> = Arc::new(TemplateFixture::default().with_profile(profile));
    if fixture.profile() != profile {
        return Err(format!("the fixture declares {:?}, not {pairs}", fixture.profile()).into());
    }
    let opts = RunOptions {
        concurrency: 8,
        ..RunOptions::default()
    };
    let report = rt.block_on(run(fixture, opts, &mut |_| {}));
    let bad: Vec<String> = report
        .results
        .iter()
        .filter(|r| match r.outcome {
            Outcome::Pass => false,
            Outcome::NotApplicable => r.reason.as_deref().is_none_or(str::is_empty),
            _ => true,
        })
        .map(|r| {
            format!(
                "  {} {}: {}",
                r.outcome.as_str(),
                r.id,
                r.reason.clone().unwrap_or_default()
            )
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{pairs}\n{}", bad.join("\n")).into())
    }
}

fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(3);
    }
    let mut trials = vec![
        Trial::test("coverage", coverage),
        Trial::test("axis-lists", axis_lists),
    ];
    trials.extend(
        covering_rows()
            .into_iter()
            .enumerate()
            .map(|(i, pairs)| Trial::test(format!("profile::{i}"), move || judge(&pairs))),
    );
    libtest_mimic::run(&args, trials).exit_code()
}
