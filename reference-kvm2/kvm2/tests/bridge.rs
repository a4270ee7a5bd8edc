//! kvm2 on its embedded fake, checked through the process protocol: this test binary
//! serves `Kvm2Fixture` over stdio when started with `KVM2_BRIDGE_SERVE=1`, and
//! otherwise starts itself that way and runs the whole suite through the bridge.
//! Every rule must pass, as it does in process (`tests/conformance.rs`).
//!
//! `cargo test -p reference-kvm2 --test bridge`

use std::process::ExitCode;
use std::sync::Arc;

use conformance::remote::{Endpoint, RemoteFixture, RemoteOptions, serve_stdio};
use conformance::suite::outcome::{Outcome, Verdict};
use conformance::suite::runner::{RunOptions, run};

const SERVE: &str = "KVM2_BRIDGE_SERVE";

fn main() -> ExitCode {
    if std::env::var_os(SERVE).is_some() {
        return match serve_stdio(Arc::new(kvm2::fixture::Kvm2Fixture::default())) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("serving kvm2 over stdio: {e}");
                ExitCode::FAILURE
            }
        };
    }
    // libtest's flags (`--list`, filters) are not ours; listing shows the one check.
    if std::env::args().any(|a| a == "--list") {
        println!("bridge: test");
        return ExitCode::SUCCESS;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let command = format!("{SERVE}=1 exec '{}'", exe.display());
    let fixture = match RemoteFixture::new(Endpoint::Command(command), RemoteOptions::default()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("bridge: kvm2 served over stdio did not initialize: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let opts = RunOptions {
        concurrency: 8,
        ..RunOptions::default()
    };
    let report = rt.block_on(run(Arc::new(fixture), opts, &mut |_| {}));
    let mut failed = false;
    for r in &report.results {
        let ok = matches!(r.outcome, Outcome::Pass | Outcome::NotApplicable);
        println!(
            "bridge: {} {}{}",
            r.id,
            r.outcome.as_str(),
            r.reason
                .as_deref()
                .map(|w| format!(": {w}"))
                .unwrap_or_default()
        );
        failed |= !ok;
    }
    println!(
        "bridge: kvm2-fake through the process protocol, verdict {} ({} rules)",
        report.verdict.as_str(),
        report.results.len()
    );
    if failed
        || report.verdict != Verdict::Pass
        || report.results.len() != conformance::rules::CATALOGUE.len()
    {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
