//! The fault-schedule soak: random sequences of Create, Get, Delete, ListByTag
//! and provider restarts, with one seeded fault armed before most steps at the
//! backend seam (every libvirt error kind kvm2 classifies, hangs, dropped
//! connections, lost replies, daemon restarts, latency), against kvm2 on the
//! in-memory libvirt behind an in-process SSH server.
//!
//! The engine is `tests/support/soak/`, shared with the `soak_replay` test.
//! It prints schedules per second, the faults armed and fired per kind, leaks,
//! wrong kinds and false claims (each must be 0), and for every failure its seed
//! and its shrunk schedule as one line that `tests/soak_replay.rs` replays.
//! Exits 1 on any failure.
//!
//! Knobs: `KVM2_SOAK_SCHEDULES` (10000), `KVM2_SOAK_SECONDS` (a time budget; no
//! schedule starts after it), `KVM2_SOAK_SEED` (1), `KVM2_SOAK_LANES` (8 fake
//! hosts, each with its SSH server and provider, run side by side).
//!
//! `cargo bench -p reference-kvm2 --bench soak`. Without `--bench` (as under
//! `cargo test --benches`) it makes a token run of 10 schedules.

#[path = "../tests/support/soak/mod.rs"]
mod soak;

const GOAL: u64 = 10_000;

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let opts = soak::Options {
        seed: env("KVM2_SOAK_SEED").unwrap_or(1),
        schedules: if benching {
            env("KVM2_SOAK_SCHEDULES").unwrap_or(GOAL)
        } else {
            10
        },
        seconds: env("KVM2_SOAK_SECONDS"),
        lanes: env("KVM2_SOAK_LANES").unwrap_or(8).max(1),
        shrink_failures: 3,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let summary = rt.block_on(soak::soak(&opts));
    summary.print(&opts);
    if benching {
        let met = summary.schedules >= GOAL && summary.clean();
        println!(
            "goal: >= {GOAL} schedules, 0 leaks, 0 wrong kinds, 0 false claims: {} ({} schedules, {} leaks, {} wrong kinds, {} false claims)",
            if met { "PASS" } else { "MISS" },
            summary.schedules,
            summary.leaks,
            summary.wrong_kinds,
            summary.false_claims
        );
    }
    if !summary.clean() {
        std::process::exit(1);
    }
}
