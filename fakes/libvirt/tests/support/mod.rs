//! What the tests that drive `fake-libvirtd` as a process share: the daemon
//! on sockets of its own, and virsh against it. Each test binary uses part of
//! it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The daemon binary Cargo built for this test.
pub const BIN: &str = env!("CARGO_BIN_EXE_fake-libvirtd");

/// What one virsh invocation gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
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
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A running `fake-libvirtd` on a socket, a loopback port and a control
/// socket of its own.
pub struct Daemon {
    child: Child,
    pub socket: PathBuf,
    pub control: PathBuf,
    pub port: u16,
    pub started_in: Duration,
}

impl Daemon {
    /// A daemon with an empty host.
    pub fn start(dir: &Path) -> Self {
        Self::start_with_state(dir, "{}")
    }

    /// A daemon starting from this state document.
    pub fn start_with_state(dir: &Path, state_json: &str) -> Self {
        let socket = dir.join("fake.sock");
        let control = dir.join("control.sock");
        let state = dir.join("state.json");
        std::fs::write(&state, state_json).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let t = Instant::now();
        let child = Command::new(BIN)
            .arg("--socket")
            .arg(&socket)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--control")
            .arg(&control)
            .arg("--state")
            .arg(&state)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while !control.exists()
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
        let out = Command::new(BIN)
            .arg("ctl")
            .arg("--control")
            .arg(&self.control)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("fake-libvirtd ctl runs");
        Outcome {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
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
