//! `fake-libvirtd`: the in-memory libvirt of `libvirt-fake` as a daemon that
//! any libvirt client (virsh, python3-libvirt, go-libvirt) can use, on a Unix
//! socket and/or loopback TCP without authentication.
//!
//! ```text
//! fake-libvirtd --listen 127.0.0.1:16509 --socket /tmp/fake.sock --state host.json
//! virsh -c qemu+tcp://127.0.0.1/system list --all
//! virsh -c 'qemu+unix:///system?socket=/tmp/fake.sock' pool-list --all
//! ```
//!
//! It logs one line per connection (info) and one per call (debug), and
//! exits cleanly on SIGTERM or SIGINT, removing its socket.
//!
//! With `--control PATH` it also listens for control requests (faults,
//! trace, restarts, planting, dumps; `libvirt_fake::control`), which
//! `fake-libvirtd ctl --control PATH <command>` sends.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use libvirt_fake::control::{Control, ControlServer, CtlArgs, run_ctl};
use libvirt_fake::{FakeLibvirt, HostConfig, QuietSocket, ServerOptions, StateFile};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{SignalKind, signal};
use tracing::{Instrument, info, info_span, warn};

/// A fake libvirtd: libvirt's remote protocol over an in-memory host.
#[derive(Debug, Parser)]
#[command(name = "fake-libvirtd", version, about, long_about = None)]
#[command(group(clap::ArgGroup::new("endpoint").required(true).multiple(true).args(["socket", "listen"])))]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
struct Args {
    /// Talk to a running daemon instead of being one.
    #[command(subcommand)]
    command: Option<Command>,
    /// Listen on a Unix socket at PATH (a stale socket file is replaced).
    #[arg(long, value_name = "PATH", env = "FAKE_LIBVIRTD_SOCKET")]
    socket: Option<PathBuf>,
    /// Listen on loopback TCP, without authentication (libvirtd's port is
    /// 16509); any address that is not loopback is refused.
    #[arg(long, value_name = "ADDR", env = "FAKE_LIBVIRTD_LISTEN")]
    listen: Option<SocketAddr>,
    /// Start from this state file (JSON: pools, volumes, domains as libvirt
    /// XML; see fakes/libvirt/examples/). Without it: one running domain
    /// `test` and one pool `default-pool`, as libvirt's test driver has.
    #[arg(long, value_name = "FILE", env = "FAKE_LIBVIRTD_STATE")]
    state: Option<PathBuf>,
    /// Log filter (`info`, `debug` for one line per call, or a
    /// tracing-subscriber directive).
    #[arg(
        long,
        value_name = "FILTER",
        env = "FAKE_LIBVIRTD_LOG",
        default_value = "info"
    )]
    log: String,
    /// Seconds of silence before a client that asked for keepalive is
    /// pinged (libvirtd's keepalive_interval); 0 sends no pings.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    keepalive_interval: u64,
    /// Unanswered pings after which such a client is dropped
    /// (libvirtd's keepalive_count).
    #[arg(long, value_name = "N", default_value_t = 5)]
    keepalive_count: u32,
    /// Listen for control requests (JSON lines) on a Unix socket at PATH;
    /// `fake-libvirtd ctl --control PATH …` sends them.
    #[arg(long, value_name = "PATH", env = "FAKE_LIBVIRTD_CONTROL")]
    control: Option<PathBuf>,
    /// Calls the trace keeps for the control API (with --control); older
    /// ones are forgotten.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    trace_limit: usize,
    /// Write the bytes of uploads larger than 256 MiB to files in DIR, as
    /// libvirtd writes a volume's file (they are removed with the volume).
    /// Without it: a private temporary directory, removed at exit.
    #[arg(long, value_name = "DIR", env = "FAKE_LIBVIRTD_SPILL_DIR")]
    spill_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Sends a control request to a running daemon (see `ctl --help`).
    Ctl(CtlArgs),
}

/// Keeps the 4 MiB buffers of a streamed upload in the heap once freed
/// rather than handing them back to the kernel and faulting fresh zeroed
/// pages in for the next packet: glibc maps blocks that large on their own
/// by default, and the page faults were a fifth of the connection thread's
/// time on a large upload (`perf`). At most 64 MiB of freed heap is kept
/// before it is returned.
fn keep_stream_buffers() {
    // SAFETY: `mallopt` only sets allocator tunables; it is called before
    // any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// libvirt 11.3.0, the version the fake's behaviour was measured on.
const LIB_VERSION: u64 = 11_003_000;

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if let Some(Command::Ctl(ctl)) = &args.command {
        return match run_ctl(ctl) {
            Ok(out) => {
                print!("{out}");
                std::process::ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("fake-libvirtd ctl: {e}");
                std::process::ExitCode::from(1)
            }
        };
    }
    keep_stream_buffers();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&args.log)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // One thread runs every connection: a call and its reply then cost no
    // hand-off between worker threads (about a fifth off a call's round trip,
    // measured in BENCHES.md). No handler blocks the thread.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&format!("failed to start the runtime: {e}")),
    };
    match runtime.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(msg: &str) -> std::process::ExitCode {
    eprintln!("fake-libvirtd: {msg}");
    std::process::ExitCode::from(1)
}

async fn run(args: Args) -> Result<(), String> {
    let started = Instant::now();
    if let Some(addr) = args.listen
        && !addr.ip().is_loopback()
    {
        return Err(format!(
            "refusing to listen on {addr}: not a loopback address (the daemon has no \
             authentication; use 127.0.0.1 or [::1])"
        ));
    }
    let state = match &args.state {
        Some(path) => StateFile::load(path)?,
        None => StateFile::test_driver_default(),
    };
    // Held until the daemon stops: dropping it removes the directory.
    let private_spill = match &args.spill_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!("failed to make the spill directory {}: {e}", dir.display())
            })?;
            None
        }
        None => Some(
            tempfile::Builder::new()
                .prefix("fake-libvirtd-spill-")
                // Uploads may carry secrets (a seed image's keys).
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir()
                .map_err(|e| format!("failed to make a spill directory: {e}"))?,
        ),
    };
    let spill_dir =
        (args.spill_dir.clone()).or_else(|| private_spill.as_ref().map(|t| t.path().to_path_buf()));
    let fake = FakeLibvirt::with_config(HostConfig {
        lib_version: LIB_VERSION,
        upload_keep_limit: 256 << 20,
        upload_spill_dir: spill_dir,
        ..HostConfig::default()
    });
    state
        .apply(&fake)
        .await
        .map_err(|e| format!("failed to load the state: {e}"))?;
    let opts = ServerOptions {
        keepalive_interval: (args.keepalive_interval > 0)
            .then(|| Duration::from_secs(args.keepalive_interval)),
        keepalive_count: args.keepalive_count,
        ..ServerOptions::default()
    };
    // Only the control API reads the trace: without it, keep next to nothing.
    let limit = if args.control.is_some() {
        args.trace_limit.max(1)
    } else {
        1
    };
    fake.trace().set_limit(Some(limit));
    let _control = match &args.control {
        Some(path) => {
            let server = ControlServer::bind(path, std::sync::Arc::new(Control::new(fake.clone())))
                .map_err(|e| format!("failed to listen on {}: {e}", path.display()))?;
            info!(path = %path.display(), "listening for control requests");
            Some(server)
        }
        None => None,
    };
    let ids = std::sync::Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(addr) = args.listen {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("failed to listen on {addr}: {e}"))?;
        info!(addr = %listener.local_addr().unwrap_or(addr), "listening on TCP");
        let (fake, opts, ids) = (fake.clone(), opts.clone(), ids.clone());
        tasks.spawn(async move {
            loop {
                if let Ok((stream, peer)) = listener.accept().await {
                    let _ = stream.set_nodelay(true);
                    match QuietSocket::tcp(stream) {
                        Ok(stream) => spawn_client(&fake, &opts, &ids, stream, peer.to_string()),
                        Err(e) => warn!(%peer, error = %e, "connection not served"),
                    }
                }
            }
        });
    }
    if let Some(path) = &args.socket {
        if path.exists() {
            std::fs::remove_file(path).map_err(|e| {
                format!("failed to remove the stale socket {}: {e}", path.display())
            })?;
        }
        let listener = UnixListener::bind(path)
            .map_err(|e| format!("failed to listen on {}: {e}", path.display()))?;
        info!(path = %path.display(), "listening on a Unix socket");
        let (fake, opts, ids) = (fake.clone(), opts.clone(), ids.clone());
        tasks.spawn(async move {
            loop {
                if let Ok((stream, _)) = listener.accept().await {
                    match QuietSocket::unix(stream) {
                        Ok(stream) => spawn_client(&fake, &opts, &ids, stream, "unix".to_owned()),
                        Err(e) => warn!(error = %e, "connection not served"),
                    }
                }
            }
        });
    }
    info!(
        domains = fake.domains().len(),
        pools = fake.pools().len(),
        ready_ms = started.elapsed().as_millis() as u64,
        "ready"
    );
    let signal_name = wait_for_signal().await?;
    info!(signal = signal_name, "shutting down");
    tasks.shutdown().await;
    if let Some(path) = &args.socket {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

async fn wait_for_signal() -> Result<&'static str, String> {
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| format!("failed to catch SIGTERM: {e}"))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| format!("failed to catch SIGINT: {e}"))?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
}

/// Serves one client in a task of its own, logging one line when it ends.
fn spawn_client<S>(fake: &FakeLibvirt, opts: &ServerOptions, ids: &AtomicU64, io: S, peer: String)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let id = ids.fetch_add(1, Ordering::Relaxed) + 1;
    let (fake, opts) = (fake.clone(), opts.clone());
    let span = info_span!("conn", id, peer = %peer);
    tokio::spawn(
        async move {
            let since = Instant::now();
            let result = fake.serve_with(io, opts).await;
            let seconds = since.elapsed().as_secs_f64();
            match result {
                Ok(()) => info!(seconds, "connection closed"),
                Err(e) => info!(seconds, error = %e, "connection dropped"),
            }
        }
        .instrument(span),
    );
}
