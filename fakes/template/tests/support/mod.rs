//! What the bridge tests share: the template served as a child process through the
//! bridge, and the suite run on a runtime of its own.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use conformance::fixture::Fixture;
use conformance::remote::{Endpoint, RemoteFixture, RemoteOptions};
use conformance::suite::outcome::{Outcome, Report};
use conformance::suite::runner::{RunOptions, run};

/// The `template-serve` command line with `args`.
pub fn serve_command(args: &str) -> String {
    format!("exec '{}' {args}", env!("CARGO_BIN_EXE_template-serve"))
}

/// The bridge to `template-serve` with `args`.
pub fn bridged(args: &str) -> RemoteFixture {
    RemoteFixture::new(
        Endpoint::Command(serve_command(args)),
        RemoteOptions::default(),
    )
    .expect("template-serve initializes")
}

/// Runs the suite (or the `rules`) against `fixture` with `seed`.
pub fn run_suite(fixture: Arc<dyn Fixture>, seed: u64, rules: Option<Vec<String>>) -> Report {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let opts = RunOptions {
        seed,
        rules,
        concurrency: 8,
        ..RunOptions::default()
    };
    rt.block_on(run(fixture, opts, &mut |_| {}))
}

/// Each rule's outcome.
pub fn outcomes(report: &Report) -> BTreeMap<String, Outcome> {
    report
        .results
        .iter()
        .map(|r| (r.id.clone(), r.outcome))
        .collect()
}

/// The rules with outcome `which`.
pub fn with_outcome(report: &Report, which: Outcome) -> BTreeSet<String> {
    report
        .results
        .iter()
        .filter(|r| r.outcome == which)
        .map(|r| r.id.clone())
        .collect()
}

/// Outcome and reason of the rules in `ids`, one per line.
pub fn explain(report: &Report, ids: &BTreeSet<String>) -> String {
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
