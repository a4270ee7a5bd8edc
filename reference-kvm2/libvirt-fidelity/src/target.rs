//! Which real libvirtd to talk to, read from the `KVM2_TEST_*` variables,
//! and how a gated test or bench says why it does not run.
//!
//! The real daemon runs on this machine (the checks read uploaded bytes back
//! from the pool's directory). It is reached the way kvm2 reaches a host —
//! over SSH, forwarding its socket — when `KVM2_TEST_HOST`, `_PORT`, `_USER`,
//! `_SSH_KEY` and `_KNOWN_HOSTS` are all set, and through the socket directly
//! otherwise.

use std::io::Write;
use std::path::{Path, PathBuf};

/// libvirtd's read-write socket for `qemu:///system`.
pub const DEFAULT_SOCKET: &str = "/var/run/libvirt/libvirt-sock";
/// The pool `scripts/libvirt-host.sh` creates.
pub const DEFAULT_POOL: &str = "kvm2-test";
/// The connection URI opened on both sides.
pub const URI: &str = "qemu:///system";

/// An SSH server on this machine that forwards the daemon's socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshRoute {
    /// The server's address.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// The user to log in as.
    pub user: String,
    /// The client's private key file.
    pub key_file: PathBuf,
    /// The known_hosts file holding the server's key.
    pub known_hosts_file: PathBuf,
}

/// A real libvirtd reachable on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealTarget {
    /// The daemon's Unix socket.
    pub socket: PathBuf,
    /// The SSH server to reach the socket through, when configured.
    pub ssh: Option<SshRoute>,
    /// An active directory pool the checks may create volumes in.
    pub pool: String,
    /// Whether a variable asked for the real host (then failing to reach it
    /// is an error, not a reason to skip).
    pub requested: bool,
}

/// Whether a gated check runs, and against what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Run against this daemon.
    Run(RealTarget),
    /// Do not run, for this reason.
    Skip(String),
}

/// Decides from the process environment and the file system.
pub fn gate() -> Gate {
    gate_from(|k| std::env::var(k).ok(), |p| p.exists())
}

/// Decides from the given variables and socket check: `KVM2_TEST_SOCKET`
/// names the socket (default [`DEFAULT_SOCKET`]), `KVM2_TEST_POOL` the pool
/// (default [`DEFAULT_POOL`]). Without `KVM2_TEST_HOST` and
/// `KVM2_TEST_SOCKET` the default socket must exist, or the check skips.
pub fn gate_from(var: impl Fn(&str) -> Option<String>, exists: impl Fn(&Path) -> bool) -> Gate {
    let get = |k: &str| var(k).filter(|v| !v.is_empty());
    let socket = get("KVM2_TEST_SOCKET");
    let requested = socket.is_some() || get("KVM2_TEST_HOST").is_some();
    let socket = PathBuf::from(socket.unwrap_or_else(|| DEFAULT_SOCKET.to_owned()));
    if !requested && !exists(&socket) {
        return Gate::Skip(format!(
            "neither KVM2_TEST_HOST nor KVM2_TEST_SOCKET is set and {} does not exist \
             (start a host with scripts/libvirt-host.sh start)",
            socket.display()
        ));
    }
    let ssh = match (
        get("KVM2_TEST_HOST"),
        get("KVM2_TEST_PORT").and_then(|p| p.parse().ok()),
        get("KVM2_TEST_USER"),
        get("KVM2_TEST_SSH_KEY"),
        get("KVM2_TEST_KNOWN_HOSTS"),
    ) {
        (Some(host), Some(port), Some(user), Some(key), Some(known)) => Some(SshRoute {
            host,
            port,
            user,
            key_file: key.into(),
            known_hosts_file: known.into(),
        }),
        _ => None,
    };
    Gate::Run(RealTarget {
        socket,
        ssh,
        pool: get("KVM2_TEST_POOL").unwrap_or_else(|| DEFAULT_POOL.to_owned()),
        requested,
    })
}

/// Writes a line straight to the process's stderr, bypassing the test
/// harness's output capture, so a skip is visible in a plain `cargo test`.
pub fn announce(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// Announces that `check` is skipped and why.
pub fn announce_skip(check: &str, reason: &str) {
    announce(&format!("SKIPPED {check}: {reason}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn skips_without_variables_and_socket() {
        match gate_from(vars(&[]), |_| false) {
            Gate::Skip(reason) => {
                assert!(reason.contains("KVM2_TEST_HOST"), "{reason}");
                assert!(reason.contains(DEFAULT_SOCKET), "{reason}");
            }
            other => panic!("expected a skip, got {other:?}"),
        }
    }

    #[test]
    fn runs_on_the_default_socket_when_it_exists() {
        let Gate::Run(t) = gate_from(vars(&[]), |p| p == Path::new(DEFAULT_SOCKET)) else {
            panic!("expected a run");
        };
        assert_eq!(t.socket, Path::new(DEFAULT_SOCKET));
        assert_eq!(t.pool, DEFAULT_POOL);
        assert!(!t.requested);
    }

    #[test]
    fn variables_request_the_host_even_without_the_socket() {
        let Gate::Run(t) = gate_from(
            vars(&[
                ("KVM2_TEST_SOCKET", "/tmp/s.sock"),
                ("KVM2_TEST_POOL", "p1"),
            ]),
            |_| false,
        ) else {
            panic!("expected a run");
        };
        assert_eq!(t.socket, Path::new("/tmp/s.sock"));
        assert_eq!(t.pool, "p1");
        assert!(t.requested);

        let Gate::Run(t) = gate_from(vars(&[("KVM2_TEST_HOST", "127.0.0.1")]), |_| false) else {
            panic!("expected a run");
        };
        assert_eq!(t.socket, Path::new(DEFAULT_SOCKET));
        assert!(t.requested);
        assert_eq!(t.ssh, None, "an incomplete SSH setting means the socket");
    }

    #[test]
    fn a_complete_ssh_setting_routes_through_ssh() {
        let Gate::Run(t) = gate_from(
            vars(&[
                ("KVM2_TEST_HOST", "127.0.0.1"),
                ("KVM2_TEST_PORT", "2222"),
                ("KVM2_TEST_USER", "root"),
                ("KVM2_TEST_SSH_KEY", "/k"),
                ("KVM2_TEST_KNOWN_HOSTS", "/kh"),
            ]),
            |_| false,
        ) else {
            panic!("expected a run");
        };
        let ssh = t.ssh.expect("an SSH route");
        assert_eq!((ssh.host.as_str(), ssh.port), ("127.0.0.1", 2222));
        assert_eq!(ssh.key_file, Path::new("/k"));
    }

    #[test]
    fn empty_variables_count_as_unset() {
        assert!(matches!(
            gate_from(
                vars(&[("KVM2_TEST_HOST", ""), ("KVM2_TEST_SOCKET", "")]),
                |_| false
            ),
            Gate::Skip(_)
        ));
    }
}
