//! The committed report of the template provider (`reports/template/report.json`)
//! verifies and has, rule by rule, the outcomes a fresh run gives.

use std::path::Path;
use std::sync::Arc;

use conformance::fixture::Fixture;
use conformance::suite::freshness::check_committed;
use conformance::suite::runner::{RunOptions, run};
use template_provider::TemplateFixture;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committed_template_report_is_what_a_fresh_run_gives() {
    let fixture: Arc<dyn Fixture> = Arc::new(TemplateFixture::default());
    let fresh = run(fixture, RunOptions::default(), &mut |_| {}).await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reports/template/report.json");
    if let Err(e) = check_committed(
        &path,
        &fresh,
        "cargo run -p template-provider --bin template-conformance -- --out reports/template",
    ) {
        panic!("{e}");
    }
}
