//! Call rate of the RPC client: N cheap calls (`CONNECT_GET_HOSTNAME`) made
//! one after another, then with 5 and 64 calls in flight on one connection,
//! and the same N calls made by one `virsh` process reading them from stdin.
//! Run against the fake over an in-memory duplex and, when one is reachable,
//! a real libvirtd through its Unix socket (gated like the tests; the reason
//! is printed when skipped).
//!
//! `cargo bench -p libvirt-fidelity --bench rpc`; `FIDELITY_BENCH_CALLS`
//! (default 10 000) and `FIDELITY_BENCH_SECONDS` (default 10, per run) bound
//! the work; each figure is the median of `FIDELITY_BENCH_REPEATS` (3) runs.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use libvirt_fidelity::backend::Backend;
use libvirt_fidelity::target::{DEFAULT_POOL, DEFAULT_SOCKET, Gate, URI, gate};
use libvirt_rpc::Client;

#[derive(Debug, Clone, Copy)]
struct Bounds {
    calls: usize,
    time: Duration,
    /// Each figure is the median of this many runs.
    repeats: usize,
}

/// The run of median duration (by rate) among `runs`.
fn median(mut runs: Vec<(usize, Duration)>) -> (usize, Duration) {
    runs.sort_by(|a, b| {
        let ra = a.0 as f64 / a.1.as_secs_f64();
        let rb = b.0 as f64 / b.1.as_secs_f64();
        ra.total_cmp(&rb)
    });
    runs[runs.len() / 2]
}

#[derive(Debug, Clone)]
struct Figure {
    target: String,
    mode: String,
    calls: usize,
    elapsed: Duration,
}

impl Figure {
    fn rate(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `depth` tasks share the budget of calls; each makes one call at a time,
/// so `depth` calls are in flight.
async fn measure(client: &Client, depth: usize, b: Bounds) -> Result<(usize, Duration), String> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..depth {
        let (client, next) = (client.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut done = 0usize;
            while next.fetch_add(1, Ordering::Relaxed) < b.calls && started.elapsed() < b.time {
                client
                    .connect_get_hostname()
                    .await
                    .map_err(|e| e.to_string())?;
                done += 1;
            }
            Ok::<usize, String>(done)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.map_err(|e| e.to_string())??;
    }
    Ok((total, started.elapsed()))
}

async fn client_figures(target: &str, client: &Client, b: Bounds) -> Result<Vec<Figure>, String> {
    // Warm up the connection and both sides' caches.
    measure(client, 1, Bounds { calls: 50, ..b }).await?;
    let mut out = Vec::new();
    for (mode, depth) in [("sequential", 1), ("5 in flight", 5), ("64 in flight", 64)] {
        let mut runs = Vec::new();
        for _ in 0..b.repeats {
            runs.push(measure(client, depth, b).await?);
        }
        let (calls, elapsed) = median(runs);
        out.push(Figure {
            target: target.into(),
            mode: mode.into(),
            calls,
            elapsed,
        });
    }
    Ok(out)
}

/// One `virsh` process running `commands` commands read from stdin.
fn virsh_run(uri: &str, commands: usize, limit: Duration) -> Result<Duration, String> {
    let script = "hostname\n".repeat(commands);
    let started = Instant::now();
    let mut child = Command::new("virsh")
        .args(["-q", "-c", uri])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run virsh: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(script.as_bytes()));
    // Drain both outputs while virsh runs, so a full pipe never stalls it.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let deadline = started + limit;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "virsh did not finish {commands} commands within {limit:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let elapsed = started.elapsed();
    let _ = writer.join();
    let out = reader
        .join()
        .map_err(|_| "stdout reader panicked".to_owned())?
        .map_err(|e| e.to_string())?;
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("virsh exited with {status}: {}", err.trim()));
    }
    // Read from a pipe, virsh still echoes its prompt and the command.
    let answered = out
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("virsh #"))
        .count();
    if answered != commands {
        return Err(format!("virsh answered {answered} of {commands} commands"));
    }
    Ok(elapsed)
}

fn virsh_figures(uri: &str, b: Bounds) -> Result<Vec<Figure>, String> {
    // One command alone is the process's own cost (start, connect, close).
    let startup = median(
        (0..b.repeats)
            .map(|_| virsh_run(uri, 1, b.time * 3).map(|d| (1, d)))
            .collect::<Result<_, _>>()?,
    )
    .1;
    let whole = median(
        (0..b.repeats)
            .map(|_| virsh_run(uri, b.calls, b.time * 3).map(|d| (b.calls, d)))
            .collect::<Result<_, _>>()?,
    )
    .1;
    Ok(vec![
        Figure {
            target: "real (virsh)".into(),
            mode: "one process, whole run".into(),
            calls: b.calls,
            elapsed: whole,
        },
        Figure {
            target: "real (virsh)".into(),
            mode: format!("minus start-up ({:.0} ms)", startup.as_secs_f64() * 1e3),
            calls: b.calls - 1,
            elapsed: whole.saturating_sub(startup).max(Duration::from_micros(1)),
        },
    ])
}

fn print_table(figures: &[Figure]) {
    println!(
        "{:<14} {:<30} {:>7} {:>9} {:>10}",
        "target", "mode", "calls", "seconds", "calls/s"
    );
    for f in figures {
        println!(
            "{:<14} {:<30} {:>7} {:>9.3} {:>10.0}",
            f.target,
            f.mode,
            f.calls,
            f.elapsed.as_secs_f64(),
            f.rate()
        );
    }
}

fn rate_of(figures: &[Figure], target: &str, mode: &str) -> Option<f64> {
    figures
        .iter()
        .find(|f| f.target == target && f.mode.starts_with(mode))
        .map(Figure::rate)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too,
    // then without it: do a token run only.
    let benching = std::env::args().any(|a| a == "--bench");
    let bounds = if benching {
        Bounds {
            calls: env_num("FIDELITY_BENCH_CALLS", 10_000) as usize,
            time: Duration::from_secs(env_num("FIDELITY_BENCH_SECONDS", 10)),
            repeats: env_num("FIDELITY_BENCH_REPEATS", 3).max(1) as usize,
        }
    } else {
        Bounds {
            calls: 20,
            time: Duration::from_secs(2),
            repeats: 1,
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "RPC call rate: CONNECT_GET_HOSTNAME, at most {} calls or {:?} per run, median of {} runs",
        bounds.calls, bounds.time, bounds.repeats
    );
    let mut figures = Vec::new();
    rt.block_on(async {
        let fake = Backend::fake(DEFAULT_POOL).await;
        match client_figures("fake (duplex)", &fake.client, bounds).await {
            Ok(f) => figures.extend(f),
            Err(e) => println!("fake: {e}"),
        }
    });
    let real = match gate() {
        Gate::Skip(reason) => {
            println!("real libvirtd: SKIPPED: {reason}");
            None
        }
        // The socket directly, as virsh reaches it: like for like.
        Gate::Run(t) => Some(libvirt_fidelity::RealTarget { ssh: None, ..t }),
    };
    if let Some(target) = real {
        let socket = target.socket.clone();
        let reached = rt.block_on(async {
            let real = Backend::real(&target).await.map_err(|e| e.reason)?;
            let lib = real
                .client
                .connect_get_lib_version()
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "real libvirtd {}.{}.{} on {}",
                lib / 1_000_000,
                lib / 1000 % 1000,
                lib % 1000,
                socket.display()
            );
            client_figures("real (client)", &real.client, bounds).await
        });
        match reached {
            Ok(f) => {
                figures.extend(f);
                let uri = if socket.as_os_str() == DEFAULT_SOCKET {
                    URI.to_owned()
                } else {
                    format!("qemu+unix:///system?socket={}", socket.display())
                };
                match virsh_figures(&uri, bounds) {
                    Ok(f) => figures.extend(f),
                    Err(e) => println!("virsh: {e}"),
                }
            }
            Err(e) if target.requested => panic!("real libvirtd requested but unusable: {e}"),
            Err(e) => println!("real libvirtd: SKIPPED: {e}"),
        }
    }
    print_table(&figures);
    for target in ["fake (duplex)", "real (client)"] {
        let seq = rate_of(&figures, target, "sequential");
        let p5 = rate_of(&figures, target, "5 in flight");
        let p64 = rate_of(&figures, target, "64 in flight");
        if let (Some(seq), Some(p5), Some(p64)) = (seq, p5, p64) {
            println!(
                "{target}: 64 in flight / sequential = {:.2}x, 5 in flight / sequential = {:.2}x, 64 / 5 in flight = {:.2}x",
                p64 / seq,
                p5 / seq,
                p64 / p5
            );
        }
    }
    if let (Some(p64), Some(seq), Some(virsh), Some(virsh_net)) = (
        rate_of(&figures, "real (client)", "64 in flight"),
        rate_of(&figures, "real (client)", "sequential"),
        rate_of(&figures, "real (virsh)", "one process"),
        rate_of(&figures, "real (virsh)", "minus start-up"),
    ) {
        println!(
            "real: client 64 in flight / virsh = {:.2}x ({:.2}x against virsh minus its start-up); client sequential / virsh = {:.2}x",
            p64 / virsh,
            p64 / virsh_net,
            seq / virsh
        );
    }
    println!(
        "note: libvirtd works on at most max_client_requests = 5 calls per client at once \
         (the fake does the same) and leaves further calls unread in the socket. So 64 in \
         flight is not 64 concurrent calls: it is 5 being worked on plus a queue that refills \
         each freed slot at once, without the client's turnaround between a reply and the \
         next call. It can beat 5 in flight by that turnaround, never by its depth; more \
         throughput than that needs more connections (and, here, more than 2 cores shared \
         by the client and the daemon)."
    );
}
