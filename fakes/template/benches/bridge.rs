//! What the process protocol costs, side by side in one run: the template provider in
//! process and the same provider served by `template-serve` through the bridge.
//!
//! - per call: Get of one Running instance, `CALLS` times in a row, each way;
//! - the whole suite (every rule, the same seed), each way, `ROUNDS` times interleaved.
//!
//! Prints medians and the ratios (bridge / in process).
//!
//! `cargo bench -p template-provider --bench bridge`

use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::fixture::{Fixture, Testbed};
use conformance::remote::{Endpoint, RemoteFixture, RemoteOptions};
use conformance::suite::outcome::Verdict;
use conformance::suite::runner::{RunOptions, run};
use conformance::{Ctx, State};
use template_provider::TemplateFixture;

const CALLS: u32 = 300;
const ROUNDS: usize = 3;

fn bridged() -> RemoteFixture {
    let serve = env!("CARGO_BIN_EXE_template-serve");
    RemoteFixture::new(
        Endpoint::Command(format!("exec '{serve}'")),
        RemoteOptions::default(),
    )
    .expect("template-serve initializes")
}

/// The median of `xs`.
fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Time per Get of one Running instance.
async fn per_get(fixture: &dyn Fixture) -> Duration {
    let tb: Box<dyn Testbed> = fixture.open().await.expect("a testbed");
    let p = tb.provider();
    let loc = &fixture.locations()[0];
    let req = tb.request("bench-1", "bench", loc);
    let ctx = Ctx::with_timeout(Duration::from_secs(10));
    let id = p.create(&ctx, &req).await.expect("Create");
    loop {
        let i = p.get(&ctx, &id).await.expect("Get");
        if i.state == State::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let t = Instant::now();
    for _ in 0..CALLS {
        let ctx = Ctx::with_timeout(Duration::from_secs(10));
        p.get(&ctx, &id).await.expect("Get");
    }
    let each = t.elapsed() / CALLS;
    let ctx = Ctx::with_timeout(Duration::from_secs(10));
    p.delete(&ctx, &id).await.expect("Delete");
    tb.teardown().await.expect("teardown");
    each
}

async fn suite(fixture: Arc<dyn Fixture>) -> Duration {
    let opts = RunOptions {
        seed: 7,
        concurrency: 8,
        ..RunOptions::default()
    };
    let t = Instant::now();
    let report = run(fixture, opts, &mut |_| {}).await;
    let took = t.elapsed();
    assert_eq!(
        report.verdict,
        Verdict::Pass,
        "the bench measures passing runs"
    );
    took
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let local: Arc<dyn Fixture> = Arc::new(TemplateFixture::default());
    let remote: Arc<dyn Fixture> = Arc::new(bridged());
    let (mut gl, mut gr, mut sl, mut sr) = (vec![], vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        gl.push(rt.block_on(per_get(local.as_ref())));
        gr.push(rt.block_on(per_get(remote.as_ref())));
        sl.push(rt.block_on(suite(local.clone())));
        sr.push(rt.block_on(suite(remote.clone())));
    }
    let (gl, gr, sl, sr) = (median(gl), median(gr), median(sl), median(sr));
    println!("bridge bench: {ROUNDS} interleaved rounds, medians");
    println!(
        "  Get ({CALLS} in a row): in process {gl:?}, through the bridge {gr:?} per call; ratio {:.1}x, overhead {:?} per call",
        gr.as_secs_f64() / gl.as_secs_f64(),
        gr.saturating_sub(gl)
    );
    println!(
        "  whole suite (46 rules, seed 7): in process {sl:.2?}, through the bridge {sr:.2?}; ratio {:.2}x (goal: at most 1.5x)",
        sr.as_secs_f64() / sl.as_secs_f64()
    );
}
