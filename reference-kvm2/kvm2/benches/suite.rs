//! The whole conformance suite against kvm2 on its embedded fake hosts, as
//! `kvm2 conformance` runs it: every catalogue rule through the suite's
//! runner with its default options (4 rules at once) on a multi-thread
//! runtime, then the four report files written (to a temporary directory).
//!
//! Prints the wall time against the goal, the summed rule times against the
//! wall time, and the five slowest rules.
//!
//! Goal: the full suite in ≤ 10 s.
//!
//! `cargo bench -p reference-kvm2 --bench suite`; `KVM2_BENCH_SEED` (1) is the run's
//! seed. Without `--bench` (as under `cargo test --benches`) it runs the
//! create rules only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::fixture::Fixture;
use conformance::suite::outcome::Outcome;
use conformance::suite::report::{Format, find_payload, write_all};
use conformance::suite::runner::{RunOptions, run};
use kvm2::fixture::Kvm2Fixture;

const GOAL: Duration = Duration::from_secs(10);

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let seed = std::env::var("KVM2_BENCH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let opts = RunOptions {
        seed,
        rules: (!benching).then(|| vec!["CRE-*".to_owned()]),
        ..RunOptions::default()
    };
    let out = tempfile::tempdir().expect("a directory for the reports");
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let fixture = Arc::new(Kvm2Fixture::default());
    let backend = fixture
        .environment()
        .get("backend")
        .cloned()
        .unwrap_or_default();
    let report = rt.block_on(run(fixture, opts.clone(), &mut |_| {}));
    drop(rt);
    let checked = started.elapsed();
    let paths = write_all(&report, out.path(), &Format::ALL).expect("write the reports");
    assert!(
        find_payload(&paths).is_none(),
        "a cloud-init payload reached a report"
    );
    let wall = started.elapsed();

    let s = &report.summary;
    let ran: Vec<_> = report
        .results
        .iter()
        .filter(|r| !matches!(r.outcome, Outcome::Skipped | Outcome::NotApplicable))
        .collect();
    let summed: Duration = ran.iter().map(|r| r.duration).sum();
    println!(
        "Conformance suite, kvm2 on the embedded fake: {} rules, seed {seed}, {} at once",
        report.results.len(),
        opts.concurrency
    );
    println!("backend: {backend}");
    println!(
        "pass {}, fail {}, error {}, skipped {}, not applicable {}",
        s.pass, s.fail, s.error, s.skipped, s.not_applicable
    );
    println!("{:<40} {:>10}", "phase", "seconds");
    println!(
        "{:<40} {:>10.3}",
        "rules checked (runner)",
        checked.as_secs_f64()
    );
    println!(
        "{:<40} {:>10.3}",
        "four report files written",
        (wall - checked).as_secs_f64()
    );
    println!("{:<40} {:>10.3}", "whole run", wall.as_secs_f64());
    println!(
        "{:<40} {:>10.3}",
        "sum of the rules' own times",
        summed.as_secs_f64()
    );
    println!(
        "sum of rule times / whole run = {:.2}x (overlap of rules run at once); whole run / goal = {:.2}",
        summed.as_secs_f64() / wall.as_secs_f64(),
        wall.as_secs_f64() / GOAL.as_secs_f64()
    );
    let mut slowest = ran.clone();
    slowest.sort_by_key(|r| std::cmp::Reverse(r.duration));
    println!("slowest five rules:");
    println!(
        "{:<22} {:<8} {:>9} {:>12}",
        "rule", "outcome", "seconds", "of whole run"
    );
    for r in slowest.iter().take(5) {
        println!(
            "{:<22} {:<8} {:>9.3} {:>11.0}%",
            r.id,
            r.outcome.as_str(),
            r.duration.as_secs_f64(),
            100.0 * r.duration.as_secs_f64() / wall.as_secs_f64()
        );
    }
    println!(
        "goal: whole suite <= {} s: {} ({:.2} s){}",
        GOAL.as_secs(),
        if wall <= GOAL { "PASS" } else { "MISS" },
        wall.as_secs_f64(),
        if s.fail + s.error > 0 {
            " (some rules did not pass: see above)"
        } else {
            ""
        }
    );
}
