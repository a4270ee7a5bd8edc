//! python3-libvirt and go-libvirt, clients nobody here wrote, against
//! `fake-libvirtd` and (when `scripts/libvirt-host.sh` is up and
//! `KVM2_TEST_SOCKET` names its socket) against the real libvirtd.
//!
//! Each client runs one session (`clients/python/session.py`,
//! `clients/go/session.go`): host facts, a domain defined, started,
//! suspended, resumed, destroyed and undefined, a pool and a volume, an
//! upload and a download over the stream protocol read back byte for byte,
//! eight calls at once on one connection, and a connection closed under the
//! client. The session prints one JSON line per step; both sides' lines go
//! through the same normalisation, [`normalise`], and are compared step by
//! step, error codes and messages included. Without the real host the
//! sessions run against the daemon alone, with expectations of their own,
//! and say so.
//!
//! # Normalisation
//!
//! As in `virsh.rs` (the helpers are shared, `support/`): UUIDs become
//! `<uuid>`, the session's directory `<dir>`; the library and hypervisor
//! versions and the hostname are masked; the capabilities document is
//! reduced to its structure and the domain XML to the facts a definition
//! fixes. Nothing else is masked.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    Daemon, ScratchDir, capabilities_structure, domain_summary, mask_uuids, real_socket,
};

/// The steps of the session, in order, and whether each must fail.
const STEPS: &[(&str, bool)] = &[
    ("connect", true),
    ("lib_version", true),
    ("hypervisor_version", true),
    ("hostname", true),
    ("capabilities", true),
    ("list_domains", true),
    ("define", true),
    ("lookup", true),
    ("info", true),
    ("state", true),
    ("xml", true),
    ("start", true),
    ("start_again", false),
    ("info_running", true),
    ("list_domains_running", true),
    ("suspend", true),
    ("state_paused", true),
    ("resume", true),
    ("state_resumed", true),
    ("destroy", true),
    ("state_destroyed", true),
    ("destroy_again", false),
    ("suspend_inactive", false),
    ("pool_define", true),
    ("pool_build", true),
    ("pool_start", true),
    ("pool_list", true),
    ("pool_state", true),
    ("vol_create", true),
    ("vol_create_again", false),
    ("vol_list", true),
    ("vol_info", true),
    ("vol_path", true),
    ("upload", true),
    ("download", true),
    ("vol_info_uploaded", true),
    ("vol_delete", true),
    ("vol_lookup_deleted", false),
    ("concurrent", true),
    ("undefine", true),
    ("lookup_undefined", false),
    ("pool_destroy", true),
    ("pool_undefine", true),
    ("pool_lookup_undefined", false),
    ("before_cut_hostname_known", true),
    ("call_after_close", true),
    ("reconnect_lib_version_known", true),
];

/// Values some steps must have on any side.
const EXPECTED: &[(&str, &str)] = &[
    ("download", r#"{"bytes":1048576,"identical":true}"#),
    ("concurrent", "[true,true,true,true,true,true,true,true]"),
    ("before_cut_hostname_known", "true"),
    ("call_after_close", r#""failed""#),
    ("reconnect_lib_version_known", "true"),
];

/// How long one session may take before it is killed.
const SESSION_TIMEOUT: Duration = Duration::from_secs(120);

/// A client program: the command that runs a session, given the socket,
/// the prefix and the directory.
struct Client {
    name: &'static str,
    command: Vec<String>,
}

impl Client {
    fn session(
        &self,
        socket: &str,
        prefix: &str,
        dir: &Path,
    ) -> Result<Vec<(String, Value)>, String> {
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(&self.command[1..])
            .arg(socket)
            .arg(prefix)
            .arg(dir);
        let (code, stdout, stderr) = run_bounded(cmd, SESSION_TIMEOUT)?;
        let mut lines = Vec::new();
        for l in stdout.lines() {
            let v: Value = serde_json::from_str(l)
                .map_err(|e| format!("{}: unreadable line {l:?}: {e}", self.name))?;
            let step = v["step"].as_str().unwrap_or_default().to_owned();
            lines.push((step, v));
        }
        if code != Some(0) {
            return Err(format!(
                "{} exited {code:?} after {} steps: {stderr}",
                self.name,
                lines.len()
            ));
        }
        Ok(lines)
    }
}

/// Runs `cmd` to its end or until `limit` passes (then kills it); returns
/// its exit code, stdout and stderr.
fn run_bounded(mut cmd: Command, limit: Duration) -> Result<(Option<i32>, String, String), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("failed to run {cmd:?}: {e}"))?;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{cmd:?} did not finish within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok((
        status.code(),
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    ))
}

/// The Debian python3-libvirt binding, or why it cannot be used. The
/// system's interpreter is tried first: another `python3` on the PATH may
/// not see Debian's packages.
fn python_client() -> Result<Client, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/python/session.py");
    for python in ["/usr/bin/python3", "python3"] {
        let ok = Command::new(python)
            .args(["-c", "import libvirt"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(Client {
                name: "python3-libvirt",
                command: vec![python.to_owned(), script.to_owned()],
            });
        }
    }
    Err("python3 cannot import libvirt (apt-get install python3-libvirt)".to_owned())
}

/// The Go session program, built offline in GOPATH mode against Debian's
/// go-libvirt, or why it cannot be.
fn go_client() -> Result<Client, String> {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libvirt-client-session");
    support::build_go_client(&out)?;
    Ok(Client {
        name: "go-libvirt",
        command: vec![out.display().to_string(), "session".to_owned()],
    })
}

/// One step's result after the normalisation of the module's documentation.
fn normalise(step: &str, line: &Value, dir: &Path) -> String {
    let text = if let Some(e) = line.get("error").filter(|e| !e.is_null()) {
        format!(
            "error {}: {}",
            e["code"],
            e["message"].as_str().unwrap_or_default()
        )
    } else {
        let v = &line["value"];
        match (step, v) {
            ("lib_version" | "hypervisor_version", Value::Number(n)) if n.as_u64() > Some(0) => {
                "<version>".to_owned()
            }
            ("hostname", Value::String(h)) if !h.is_empty() => "<hostname>".to_owned(),
            ("capabilities", Value::String(x)) => capabilities_structure(x),
            ("xml", Value::String(x)) => domain_summary(x),
            (_, Value::String(s)) => s.clone(),
            _ => v.to_string(),
        }
    };
    mask_uuids(&text.replace(&dir.display().to_string(), "<dir>"))
}

/// What one side's session must show whoever answers it: every step in
/// order, each failing or succeeding as it must, and the fixed values.
fn check_expectations(side: &str, lines: &[(String, Value)]) -> Vec<String> {
    let mut problems = Vec::new();
    let names: Vec<&str> = lines.iter().map(|(s, _)| s.as_str()).collect();
    let want: Vec<&str> = STEPS.iter().map(|(s, _)| *s).collect();
    if names != want {
        problems.push(format!("{side}: the steps were {names:?}, not {want:?}"));
        return problems;
    }
    for ((step, ok), (_, line)) in STEPS.iter().zip(lines) {
        let failed = line.get("error").is_some_and(|e| !e.is_null());
        if failed == *ok {
            problems.push(format!(
                "{side}: step {step} {} (expected {}): {line}",
                if failed { "failed" } else { "succeeded" },
                if *ok { "success" } else { "an error" }
            ));
        }
        if let Some((_, want)) = EXPECTED.iter().find(|(s, _)| s == step) {
            let got = line["value"].to_string();
            if got != *want {
                problems.push(format!("{side}: step {step} gave {got}, not {want}"));
            }
        }
    }
    problems
}

/// Runs `client`'s session against the daemon and, when the host is up,
/// the real libvirtd; returns the problems found.
fn compare(client: &Client) -> Vec<String> {
    let t0 = Instant::now();
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let prefix = format!("{}-{}", &client.name[..2], &tag[..8]);
    let scratch = ScratchDir::new(&format!("cl-{prefix}"));
    let daemon = Daemon::start(&scratch.0);
    let fake_dir = scratch.0.join("fake");
    std::fs::create_dir_all(&fake_dir).unwrap();
    let t = Instant::now();
    let fake = match client.session(&daemon.socket.display().to_string(), &prefix, &fake_dir) {
        Ok(l) => l,
        Err(e) => return vec![format!("against fake-libvirtd: {e}")],
    };
    let fake_secs = t.elapsed().as_secs_f64();
    let mut problems = check_expectations("fake-libvirtd", &fake);
    let fake_norm: Vec<String> = fake
        .iter()
        .map(|(s, l)| normalise(s, l, &fake_dir))
        .collect();
    println!("{} against fake-libvirtd ({fake_secs:.1} s):", client.name);
    for ((step, _), n) in fake.iter().zip(&fake_norm) {
        println!("  {step}: {n}");
    }
    match real_socket() {
        Err(why) => println!(
            "{}: comparison with libvirtd SKIPPED: {why}; the session ran against fake-libvirtd alone ({} steps)",
            client.name,
            fake.len()
        ),
        Ok(socket) => {
            let real_dir = scratch.0.join("real");
            std::fs::create_dir_all(&real_dir).unwrap();
            support::set_mode(&real_dir, 0o755);
            let t = Instant::now();
            let real = match client.session(&socket, &prefix, &real_dir) {
                Ok(l) => l,
                Err(e) => {
                    problems.push(format!("against libvirtd: {e}"));
                    return problems;
                }
            };
            let real_secs = t.elapsed().as_secs_f64();
            problems.extend(check_expectations("libvirtd", &real));
            let mut differ = 0;
            for (((step, f), (_, r)), fnorm) in fake.iter().zip(&real).zip(&fake_norm) {
                let rnorm = normalise(step, r, &real_dir);
                if *fnorm != rnorm {
                    differ += 1;
                    problems.push(format!(
                        "{}: step {step} differs:\n  fake-libvirtd: {fnorm}\n  libvirtd:      {rnorm}\n  (raw fake: {f})",
                        client.name
                    ));
                }
            }
            println!(
                "{}: session compared with libvirtd on {socket}: {} steps, {differ} differences (fake {fake_secs:.1} s, real {real_secs:.1} s)",
                client.name,
                fake.len()
            );
        }
    }
    println!("{}: total {:.1} s", client.name, t0.elapsed().as_secs_f64());
    problems
}

/// Runs the comparison for one client, or says why it skips (never under
/// CI, where `.ci/run` installs the clients).
fn check_client(test: &str, client: Result<Client, String>) {
    let client = match client {
        Ok(c) => c,
        Err(why) => {
            assert!(std::env::var_os("CI").is_none(), "{test}: {why} under CI");
            println!("SKIPPED {test}: {why}");
            return;
        }
    };
    let problems = compare(&client);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn python_libvirt_against_the_daemon_and_libvirtd() {
    check_client(
        "python_libvirt_against_the_daemon_and_libvirtd",
        python_client(),
    );
}

#[test]
fn go_libvirt_against_the_daemon_and_libvirtd() {
    check_client("go_libvirt_against_the_daemon_and_libvirtd", go_client());
}
