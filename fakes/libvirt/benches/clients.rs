//! `fake-libvirtd` and the real libvirtd side by side, through clients
//! nobody here wrote, in one run on one machine:
//!
//! - go-libvirt (the Go program of `clients/go`, built offline in GOPATH
//!   mode): `KVM2_BENCH_CALLS` (2 000) sequential `ConnectGetLibVersion`
//!   calls on one connection, and a `KVM2_BENCH_UPLOAD_MIB` (1 024) MiB
//!   upload into a fresh raw volume on one connection (bytes generated as
//!   they are sent; the time is the upload alone);
//! - virsh: the same number of `hostname` commands (one
//!   `ConnectGetHostname` each) read from stdin by one virsh on one
//!   connection, process start included, and `vol-upload` of a file of the
//!   same size into a fresh raw volume (virsh's own time, start to exit).
//!
//! Every call contender runs `KVM2_BENCH_ROUNDS` (10) rounds (a round is a
//! new client process, and where the scheduler puts its threads decides
//! which of two speeds the round runs at, on either side) and every upload
//! contender `KVM2_BENCH_UPLOAD_ROUNDS` (3; each after a `sync`, untimed,
//! since both daemons write uploads to files on the same disk), the daemon and libvirtd
//! alternating which goes first, and the best round of each side counts
//! (the machine is shared: the best round is the one least disturbed). The
//! fake daemon is this build's `fake-libvirtd` (the bench profile) with a
//! pool of its own; libvirtd is the host of `scripts/libvirt-host.sh`
//! (`KVM2_TEST_SOCKET`, `KVM2_TEST_POOL`), whose pool is a directory on the
//! same disk. Without it the bench measures the daemon alone and says why.
//!
//! Goals: go-libvirt gets at least 2× libvirtd's calls per second from the
//! daemon, and uploads at least as fast.
//!
//! `cargo bench -p libvirt-fake --bench clients`. Without `--bench` (as
//! under `cargo test --benches`) it makes a token run: 200 calls, 16 MiB,
//! one round. Figures: `fakes/libvirt/BENCHES.md`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Daemon, ScratchDir, build_go_client, real_socket};

const MIB: u64 = 1 << 20;

/// One side of the comparison: a socket and a pool on it.
#[derive(Clone)]
struct Side {
    name: &'static str,
    socket: String,
    pool: String,
}

impl Side {
    fn uri(&self) -> String {
        format!("qemu+unix:///system?socket={}", self.socket)
    }
}

/// The best of a contender's rounds, per side.
#[derive(Default, Clone, Copy)]
struct Best {
    fake: Option<f64>,
    real: Option<f64>,
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs a command and returns its stdout, or panics naming it.
fn run(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().expect("the command runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Seconds from the Go program's "<what> <n> <seconds>" line.
fn go_seconds(out: &str) -> f64 {
    out.split_whitespace()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no timing in {out:?}"))
}

fn go_calls(go: &Path, side: &Side, calls: u64) -> f64 {
    go_seconds(&run(Command::new(go)
        .arg("calls")
        .arg(&side.socket)
        .arg(calls.to_string())))
}

/// Writes the dirty pages of earlier rounds out first, untimed: both daemons
/// write what is uploaded to files on the same disk, and otherwise a round
/// pays for the write-back of the one before it, whichever side that was.
fn settle_disk() {
    let _ = Command::new("sync").status();
}

fn go_upload(go: &Path, side: &Side, bytes: u64) -> f64 {
    settle_disk();
    go_seconds(&run(Command::new(go)
        .arg("upload")
        .arg(&side.socket)
        .arg(&side.pool)
        .arg("bench-go-upload.img")
        .arg(bytes.to_string())))
}

fn virsh(side: &Side, args: &[&str]) -> String {
    run(Command::new("virsh").arg("-c").arg(side.uri()).args(args))
}

/// `calls` `hostname` commands through one interactive virsh.
fn virsh_calls(side: &Side, calls: u64) -> f64 {
    let t = Instant::now();
    let mut child = Command::new("virsh")
        .arg("-c")
        .arg(side.uri())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("virsh runs");
    {
        let mut stdin = child.stdin.take().unwrap();
        let script = "hostname\n".repeat(calls as usize);
        stdin.write_all(script.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "virsh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    t.elapsed().as_secs_f64()
}

fn virsh_upload(side: &Side, file: &Path, bytes: u64) -> f64 {
    let vol = "bench-virsh-upload.img";
    let _ = Command::new("virsh")
        .args(["-c", &side.uri(), "vol-delete", vol, "--pool", &side.pool])
        .output();
    virsh(
        side,
        &[
            "vol-create-as",
            &side.pool,
            vol,
            &bytes.to_string(),
            "--format",
            "raw",
        ],
    );
    settle_disk();
    let t = Instant::now();
    virsh(
        side,
        &[
            "vol-upload",
            vol,
            &file.display().to_string(),
            "--pool",
            &side.pool,
        ],
    );
    let secs = t.elapsed().as_secs_f64();
    virsh(side, &["vol-delete", vol, "--pool", &side.pool]);
    secs
}

/// Writes `bytes` of a fixed pattern to `path`, a MiB at a time.
fn write_source(path: &Path, bytes: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let block: Vec<u8> = (0..MIB).map(|i| (i * 7 % 251) as u8).collect();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(MIB);
        f.write_all(&block[..n as usize]).unwrap();
        left -= n;
    }
    f.flush().unwrap();
}

/// Runs `measure` for `rounds` rounds on each side, alternating which side
/// goes first, and keeps the best (smallest) time of each.
fn best_of(sides: &[Side], rounds: u64, mut measure: impl FnMut(&Side) -> f64) -> Best {
    let mut best = Best::default();
    for round in 0..rounds {
        let mut order: Vec<&Side> = sides.iter().collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for side in order {
            let secs = measure(side);
            let slot = if side.name == "fake" {
                &mut best.fake
            } else {
                &mut best.real
            };
            *slot = Some(slot.map_or(secs, |b: f64| b.min(secs)));
        }
    }
    best
}

/// One row: the rate on each side (`units` per second) and their ratio.
fn row(label: &str, best: Best, amount: f64, unit: &str) -> Option<f64> {
    let rate = |s: Option<f64>| s.map(|s| amount / s);
    let cell = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.0} {unit}/s"));
    let ratio = rate(best.fake).zip(rate(best.real)).map(|(f, r)| f / r);
    println!(
        "| {label} | {} | {} | {} |",
        cell(rate(best.fake)),
        cell(rate(best.real)),
        ratio.map_or("-".to_owned(), |r| format!("{r:.2}×"))
    );
    ratio
}

fn verdict(goal: &str, ratio: Option<f64>, want: f64) {
    match ratio {
        None => println!("SKIPPED {goal}: no libvirtd to compare with"),
        Some(r) if r >= want => println!("PASS {goal}: {r:.2}× (goal ≥ {want}×)"),
        Some(r) => println!("MISS {goal}: {r:.2}× (goal ≥ {want}×)"),
    }
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let calls = env_num("KVM2_BENCH_CALLS", if benching { 2000 } else { 200 });
    let mib = env_num("KVM2_BENCH_UPLOAD_MIB", if benching { 1024 } else { 16 });
    let rounds = env_num("KVM2_BENCH_ROUNDS", if benching { 10 } else { 1 });
    let upload_rounds = env_num("KVM2_BENCH_UPLOAD_ROUNDS", if benching { 3 } else { 1 });
    let bytes = mib * MIB;

    let scratch = ScratchDir::new(&format!("bench-clients-{}", std::process::id()));
    let go = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libvirt-client-bench");
    if let Err(why) = build_go_client(&go) {
        println!("clients bench skipped: {why}");
        return;
    }
    let have_virsh = Command::new("virsh").arg("--version").output().is_ok();
    let state = format!(
        r#"{{"pools": [{{"name": "bench", "path": "{}/pool", "capacity": {}}}]}}"#,
        scratch.0.display(),
        4 * bytes + (64 << 20)
    );
    let daemon = Daemon::start_with(&scratch.0, &state);
    let mut sides = vec![Side {
        name: "fake",
        socket: daemon.socket.display().to_string(),
        pool: "bench".into(),
    }];
    match real_socket() {
        Ok(socket) => sides.push(Side {
            name: "real",
            socket,
            pool: std::env::var("KVM2_TEST_POOL").unwrap_or_else(|_| "kvm2-test".into()),
        }),
        Err(why) => println!("libvirtd not compared: {why}"),
    }
    let source = scratch.0.join("source.img");
    if have_virsh {
        write_source(&source, bytes);
    }
    println!(
        "{calls} calls (best of {rounds} rounds) and {mib} MiB uploads (best of {upload_rounds}), \
         fake-libvirtd pid {}\n",
        daemon.child.id()
    );
    println!("| contender | fake-libvirtd | libvirtd | ratio |\n| --- | --- | --- | --- |");
    let t = Instant::now();
    let go_call_ratio = row(
        "go-libvirt `ConnectGetLibVersion`, one connection",
        best_of(&sides, rounds, |s| go_calls(&go, s, calls)),
        calls as f64,
        "calls",
    );
    let go_upload_ratio = row(
        &format!("go-libvirt upload of {mib} MiB"),
        best_of(&sides, upload_rounds, |s| go_upload(&go, s, bytes)),
        mib as f64,
        "MiB",
    );
    if have_virsh {
        row(
            "virsh `hostname` ×N, one connection",
            best_of(&sides, rounds, |s| virsh_calls(s, calls)),
            calls as f64,
            "calls",
        );
        row(
            &format!("virsh `vol-upload` of {mib} MiB"),
            best_of(&sides, upload_rounds, |s| virsh_upload(s, &source, bytes)),
            mib as f64,
            "MiB",
        );
    } else {
        println!("virsh rows skipped: virsh is not installed");
    }
    println!();
    verdict(
        "go-libvirt calls per second, fake-libvirtd / libvirtd",
        go_call_ratio,
        2.0,
    );
    verdict(
        "go-libvirt upload speed, fake-libvirtd / libvirtd",
        go_upload_ratio,
        1.0,
    );
    println!(
        "fake-libvirtd RSS after the run: {} MiB; bench time {:.1?}",
        daemon.rss_kib() >> 10,
        Duration::from_secs_f64(t.elapsed().as_secs_f64())
    );
}
