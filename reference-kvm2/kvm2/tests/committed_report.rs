//! The committed report of kvm2 on the embedded fake (`reports/kvm2-fake/report.json`)
//! verifies and has, rule by rule, the outcomes a fresh run gives.

use std::path::Path;
use std::sync::Arc;

use conformance::fixture::Fixture;
use conformance::suite::freshness::check_committed;
use conformance::suite::runner::{RunOptions, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committed_kvm2_fake_report_is_what_a_fresh_run_gives() {
    let fixture: Arc<dyn Fixture> = Arc::new(kvm2::fixture::Kvm2Fixture::default());
    let fresh = run(fixture, RunOptions::default(), &mut |_| {}).await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reports/kvm2-fake/report.json");
    if let Err(e) = check_committed(
        &path,
        &fresh,
        "cargo run -p reference-kvm2 -- conformance --out reports/kvm2-fake",
    ) {
        panic!("{e}");
    }
}
