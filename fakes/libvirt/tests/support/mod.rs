//! What the tests and benches that drive `fake-libvirtd` as a process share: the
//! daemon on sockets of its own (and its control socket), virsh against it, the real
//! libvirtd's socket from the host's variables, and the normalisation helpers that
//! mask what differs between two hosts without being a difference of behaviour. Each
//! target uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The daemon binary Cargo built for this target.
pub const BIN: &str = env!("CARGO_BIN_EXE_fake-libvirtd");

/// What one virsh invocation gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Outcome {
    fn from(out: std::process::Output) -> Self {
        Outcome {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Whether virsh is installed; under CI its absence is a failure.
pub fn virsh_installed(test: &str) -> bool {
    if Command::new("virsh").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "virsh is missing under CI"
    );
    println!("SKIPPED {test}: virsh is not installed");
    false
}

/// Runs virsh against `uri`.
pub fn virsh(uri: &str, args: &[String]) -> Outcome {
    let out = Command::new("virsh")
        .arg("-c")
        .arg(uri)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("virsh runs");
    Outcome::from(out)
}

#[cfg(unix)]
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A scratch directory the real libvirtd can reach (it builds pool
/// directories inside it), removed on drop.
pub struct ScratchDir(pub PathBuf);

impl ScratchDir {
    pub fn new(prefix: &str) -> Self {
        let dir = std::env::temp_dir().join(prefix);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        set_mode(&dir, 0o755);
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `fake-libvirtd` on a socket and a loopback port of its own, and a
/// control socket when started with one.
pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    pub control: Option<PathBuf>,
    pub port: u16,
    pub started_in: Duration,
}

impl Daemon {
    /// A daemon with an empty host and a control socket.
    pub fn start(dir: &Path) -> Self {
        Self::start_with_state(dir, "{}")
    }

    /// A daemon with a control socket, starting from this state document.
    pub fn start_with_state(dir: &Path, state_json: &str) -> Self {
        Self::launch(dir, state_json, Some(dir.join("control.sock")))
    }

    /// A daemon without a control socket (its trace keeps next to nothing), starting
    /// from this state document.
    pub fn start_with(dir: &Path, state_json: &str) -> Self {
        Self::launch(dir, state_json, None)
    }

    fn launch(dir: &Path, state_json: &str, control: Option<PathBuf>) -> Self {
        let socket = dir.join("fake.sock");
        let state = dir.join("state.json");
        std::fs::write(&state, state_json).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let t = Instant::now();
        let mut cmd = Command::new(BIN);
        cmd.arg("--socket")
            .arg(&socket)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--state")
            .arg(&state)
            .stderr(Stdio::null());
        if let Some(c) = &control {
            cmd.arg("--control").arg(c);
        }
        let child = cmd.spawn().unwrap();
        while control.as_ref().is_some_and(|c| !c.exists())
            || !socket.exists()
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
        {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the daemon never listened"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        Daemon {
            child,
            socket,
            control,
            port,
            started_in: t.elapsed(),
        }
    }

    pub fn unix_uri(&self) -> String {
        format!("qemu+unix:///system?socket={}", self.socket.display())
    }

    pub fn tcp_uri(&self) -> String {
        format!("qemu+tcp://127.0.0.1:{}/system", self.port)
    }

    /// Runs `fake-libvirtd ctl --control <its control socket> <args>`.
    pub fn ctl(&self, args: &[&str]) -> Outcome {
        let control = self
            .control
            .as_ref()
            .expect("the daemon was started with a control socket");
        let out = Command::new(BIN)
            .arg("ctl")
            .arg("--control")
            .arg(control)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("fake-libvirtd ctl runs");
        Outcome::from(out)
    }

    /// The daemon's resident set size in KiB, from `/proc`.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the daemon's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc status")
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The real libvirtd's socket, when the host's variables name one that
/// exists.
pub fn real_socket() -> Result<String, String> {
    let socket = std::env::var("KVM2_TEST_SOCKET").map_err(|_| {
        "KVM2_TEST_SOCKET is not set (scripts/libvirt-host.sh start; eval \"$(scripts/libvirt-host.sh env)\")"
            .to_owned()
    })?;
    if !Path::new(&socket).exists() {
        return Err(format!("KVM2_TEST_SOCKET={socket} does not exist"));
    }
    Ok(socket)
}

/// The real libvirtd's URI, when the host's variables name its socket.
pub fn real_uri() -> Result<String, String> {
    real_socket().map(|s| format!("qemu+unix:///system?socket={s}"))
}

/// Every UUID in `s` replaced by `<uuid>`.
pub fn mask_uuids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < s.len() {
        if i + 36 <= s.len()
            && s.is_char_boundary(i)
            && s.is_char_boundary(i + 36)
            && uuid::Uuid::try_parse(&s[i..i + 36]).is_ok()
            && b[i + 8] == b'-'
        {
            out.push_str("<uuid>");
            i += 36;
        } else {
            let c = s[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The facts a domain definition fixes, from its XML as the daemon shows
/// it: type, name, memory in KiB, vCPUs, OS type and architecture (libvirtd
/// fills in machine types, devices and addresses the fake does not invent).
pub fn domain_summary(xml: &str) -> String {
    let attr = |tag: &str, name: &str| -> String {
        xml.find(&format!("<{tag}"))
            .and_then(|at| {
                let rest = &xml[at..];
                let end = rest.find('>')?;
                let head = &rest[..end];
                let key = format!("{name}='");
                let v = head.find(&key)? + key.len();
                Some(head[v..].split('\'').next()?.to_owned())
            })
            .unwrap_or_default()
    };
    let text = |tag: &str| -> String {
        xml.find(&format!("<{tag}"))
            .and_then(|at| {
                let rest = &xml[at..];
                let open = rest.find('>')? + 1;
                let close = rest.find(&format!("</{tag}>"))?;
                Some(rest[open..close].trim().to_owned())
            })
            .unwrap_or_default()
    };
    let memory: u64 = text("memory").parse().unwrap_or(0);
    let kib = match attr("memory", "unit").as_str() {
        "MiB" | "M" => memory << 10,
        "GiB" | "G" => memory << 20,
        "b" | "bytes" => memory >> 10,
        _ => memory,
    };
    format!(
        "type={} name={} memory_kib={kib} vcpu={} os={} arch={}",
        attr("domain", "type"),
        text("name"),
        text("vcpu"),
        text("type"),
        attr("type", "arch"),
    )
}

/// The capabilities document reduced to its structure: the root and the
/// names of its top-level children (the host's facts differ).
pub fn capabilities_structure(xml: &str) -> String {
    let children: std::collections::BTreeSet<&str> = xml
        .lines()
        .filter(|l| l.starts_with("  <") && !l.starts_with("  </"))
        .map(|l| {
            l.trim()
                .trim_start_matches('<')
                .split(['>', ' '])
                .next()
                .unwrap_or("")
        })
        .collect();
    format!("{} {children:?}", xml.lines().next().unwrap_or(""))
}

/// Where Debian's golang-github-digitalocean-go-libvirt-dev puts its sources.
pub const GOPATH: &str = "/usr/share/gocode";

/// The go-libvirt program of `clients/go`, built offline in GOPATH mode
/// against Debian's go-libvirt into `out`, or why it cannot be.
pub fn build_go_client(out: &Path) -> Result<(), String> {
    if !Path::new(GOPATH)
        .join("src/github.com/digitalocean/go-libvirt/libvirt.go")
        .exists()
    {
        return Err(format!(
            "go-libvirt is not in {GOPATH} (apt-get install golang-github-digitalocean-go-libvirt-dev)"
        ));
    }
    let build = Command::new("go")
        .args(["build", "-o"])
        .arg(out)
        .arg(".")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/clients/go"))
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH)
        .env("GOFLAGS", "")
        .output()
        .map_err(|e| format!("go is not installed ({e}; apt-get install golang-go)"))?;
    if !build.status.success() {
        return Err(format!(
            "the Go client program does not build: {}",
            String::from_utf8_lossy(&build.stderr)
        ));
    }
    Ok(())
}
