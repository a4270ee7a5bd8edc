//! The client against a libvirt host: every procedure it has, and a 64 MiB
//! upload whose bytes are hashed where they landed (the file in the pool's
//! directory, on a real host). Run on the fake always, on a real libvirtd
//! when one is reachable (otherwise the reason is printed).

use libvirt_fidelity::exercise::{every_procedure, large_upload, uncovered};
use libvirt_fidelity::target::{DEFAULT_POOL, announce};
use libvirt_fidelity::{Backend, RunNames, real_or_skip};

const LARGE: u64 = 64 << 20;

async fn every_procedure_on(b: &Backend) {
    let names = RunNames::new();
    let log = every_procedure(b, &names)
        .await
        .unwrap_or_else(|e| panic!("{} host: {e}", b.side()));
    println!("{}", log.lines.join("\n"));
    let missing = uncovered(&log);
    assert!(missing.is_empty(), "procedures never called: {missing:?}");
}

async fn large_upload_on(b: &Backend) {
    let names = RunNames::new();
    let report = large_upload(b, &names, LARGE)
        .await
        .unwrap_or_else(|e| panic!("{} host: {e}", b.side()));
    announce(&format!(
        "{} host: 64 MiB uploaded in {:.2} s ({:.0} MiB/s), sha256 {}",
        b.side(),
        report.elapsed.as_secs_f64(),
        report.mib_per_s(),
        report.stored_sha256
    ));
    assert_eq!(report.sent_sha256, report.stored_sha256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_procedure_on_the_fake() {
    every_procedure_on(&Backend::fake(DEFAULT_POOL).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_upload_on_the_fake() {
    large_upload_on(&Backend::fake(DEFAULT_POOL).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_procedure_on_real_libvirt() {
    if let Some(real) = real_or_skip("every_procedure_on_real_libvirt").await {
        every_procedure_on(&real).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_upload_on_real_libvirt() {
    if let Some(real) = real_or_skip("large_upload_on_real_libvirt").await {
        large_upload_on(&real).await;
    }
}
