//! virsh, a client nobody here wrote, against `fake-libvirtd` and (when
//! `scripts/libvirt-host.sh` is up and `KVM2_TEST_SOCKET` names its socket)
//! against the real libvirtd: the same session on both, compared command by
//! command — exit code, output and error text — after the normalisation
//! below. Without the real host the session runs against the daemon alone,
//! with expectations of its own, and says so.
//!
//! # Normalisation
//!
//! Both sides' output goes through the same function, [`normalise`]:
//!
//! * UUIDs become `<uuid>`; the session's directory (pool target, files)
//!   becomes `<dir>`; a daemon's socket path in a URI becomes `<socket>`.
//! * Domain IDs (`Id:` in `dominfo`, the first column of `list`) become
//!   `<id>`; `CPU time:` becomes `<time>`.
//! * Host facts are masked: the versions in `version`, the answer of
//!   `hostname`, every value of `nodeinfo`, pool sizes in `pool-info` and
//!   `pool-dumpxml`; `capabilities` is reduced to its root and the names of
//!   its top-level children (its structure).
//! * `list` and `pool-list` keep only the rows of the session's own objects
//!   (a shared host has others); runs of spaces collapse to one (column
//!   widths follow the widest ID).
//! * `dumpxml` is reduced to the facts a definition fixes: the domain type,
//!   name, memory in KiB, vCPUs, OS type and architecture (libvirtd fills in
//!   machine types, devices and addresses the fake does not invent).
//!
//! Everything else must match, error messages included. One step is run
//! but not compared: the `destroy` after `shutdown` (a real guest without an
//! OS ignores the ACPI request; the fake's guests obey at once).

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{
    BIN, Daemon, Outcome, capabilities_structure, domain_summary, mask_uuids, real_uri, set_mode,
    virsh,
};

/// One virsh invocation of the session.
struct Step {
    args: Vec<String>,
    /// Whether the step must succeed (checked on the daemon alone too).
    ok: bool,
    /// Whether its result is compared between the two sides.
    compared: bool,
}

/// The names and files of one session, the same on both sides.
struct Session {
    prefix: String,
    dir: PathBuf,
}

impl Session {
    fn new() -> Self {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let prefix = format!("vsh-{}", &tag[..8]);
        let dir = std::env::temp_dir().join(&prefix);
        std::fs::create_dir_all(&dir).unwrap();
        // The real libvirtd reads the domain XML through virsh, but builds
        // the pool directory itself: it must be able to reach it.
        set_mode(&dir, 0o755);
        Session { prefix, dir }
    }

    fn dom(&self) -> String {
        format!("{}-dom", self.prefix)
    }

    fn pool(&self) -> String {
        format!("{}-pool", self.prefix)
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// Writes the domain XML and the upload's data.
    fn write_inputs(&self) -> Vec<u8> {
        let xml = format!(
            "<domain type='qemu'>\n  <name>{}</name>\n  <memory unit='MiB'>64</memory>\n  \
             <vcpu>1</vcpu>\n  <os><type arch='x86_64' machine='pc'>hvm</type></os>\n</domain>\n",
            self.dom()
        );
        std::fs::write(self.file("dom.xml"), xml).unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(self.file("data.bin"), &data).unwrap();
        data
    }

    /// The session: item 3 of the daemon's issue, in the order a user types it.
    fn steps(&self) -> Vec<Step> {
        let (d, p) = (self.dom(), self.pool());
        let pool = ["--pool", p.as_str()];
        let s = |ok: bool, args: &[&str]| Step {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            ok,
            compared: true,
        };
        let mut steps = vec![
            s(true, &["version"]),
            s(true, &["hostname"]),
            s(true, &["uri"]),
            s(true, &["capabilities"]),
            s(true, &["nodeinfo"]),
            s(true, &["define", &self.file("dom.xml")]),
            s(true, &["list", "--all"]),
            s(true, &["dominfo", &d]),
            s(true, &["domstate", &d]),
            s(true, &["dumpxml", &d]),
            s(true, &["start", &d]),
            s(false, &["start", &d]),
            s(true, &["dominfo", &d]),
            s(true, &["list", "--all"]),
            s(true, &["suspend", &d]),
            s(true, &["domstate", &d]),
            s(true, &["resume", &d]),
            s(true, &["domstate", &d]),
            s(false, &["domifaddr", &d, "--source", "agent"]),
            s(true, &["shutdown", &d]),
        ];
        steps.push(Step {
            compared: false,
            ..s(false, &["destroy", &d])
        });
        steps.extend([
            s(true, &["domstate", &d]),
            s(false, &["destroy", &d]),
            s(false, &["suspend", &d]),
            s(
                true,
                &["pool-define-as", &p, "dir", "--target", &self.file("pool")],
            ),
            s(true, &["pool-build", &p]),
            s(true, &["pool-start", &p]),
            s(true, &["pool-list", "--all"]),
            s(true, &["pool-info", &p]),
            s(true, &["pool-dumpxml", &p]),
            s(true, &["pool-refresh", &p]),
            s(
                true,
                &["vol-create-as", &p, "v.img", "1M", "--format", "raw"],
            ),
            s(
                false,
                &["vol-create-as", &p, "v.img", "1M", "--format", "raw"],
            ),
            s(true, &["vol-list", &p]),
            s(true, &["vol-info", "v.img", pool[0], pool[1]]),
            s(true, &["vol-path", "v.img", pool[0], pool[1]]),
            s(
                true,
                &[
                    "vol-upload",
                    "v.img",
                    &self.file("data.bin"),
                    pool[0],
                    pool[1],
                ],
            ),
            s(
                true,
                &[
                    "vol-download",
                    "v.img",
                    &self.file("back.bin"),
                    pool[0],
                    pool[1],
                ],
            ),
            s(true, &["vol-info", &self.file("pool/v.img")]),
            s(true, &["vol-delete", "v.img", pool[0], pool[1]]),
            s(false, &["vol-info", "v.img", pool[0], pool[1]]),
            s(true, &["undefine", &d, "--nvram"]),
            s(false, &["dominfo", &d]),
            s(false, &["start", &d]),
            s(true, &["pool-destroy", &p]),
            s(false, &["pool-refresh", &p]),
            s(true, &["pool-undefine", &p]),
            s(false, &["pool-info", &p]),
        ]);
        steps
    }

    /// Whatever the session may have left on a side, removed.
    fn cleanup(&self, uri: &str) {
        for args in [
            vec!["destroy", &self.dom()],
            vec!["undefine", &self.dom(), "--nvram"],
            vec!["vol-delete", "v.img", "--pool", &self.pool()],
            vec!["pool-destroy", &self.pool()],
            vec!["pool-delete", &self.pool()],
            vec!["pool-undefine", &self.pool()],
        ] {
            let _ = virsh(
                uri,
                &args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(),
            );
        }
    }
}

/// Masks a `Label: value` line's value.
fn mask_values(s: &str, labels: &[&str], mask: &str) -> String {
    s.lines()
        .map(|l| match l.split_once(':') {
            Some((k, _)) if labels.iter().any(|x| k.trim() == *x) => format!("{k}: {mask}"),
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The normalisation of the module's documentation, for one command's
/// output (`stdout` or `stderr`) on either side.
fn normalise(s: &Session, cmd: &str, text: &str, sockets: &[String]) -> String {
    let mut t = text.to_owned();
    for sock in sockets {
        t = t.replace(sock, "<socket>");
    }
    t = t.replace(&s.dir.display().to_string(), "<dir>");
    t = mask_uuids(&t);
    t = match cmd {
        "version" => t
            .lines()
            .map(|l| match l.rsplit_once(' ') {
                Some((head, _)) => format!("{head} <version>"),
                None => l.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "hostname" if !t.trim().is_empty() => "<hostname>".to_owned(),
        "nodeinfo" => mask_values(
            &t,
            &[
                "CPU model",
                "CPU(s)",
                "CPU frequency",
                "CPU socket(s)",
                "Core(s) per socket",
                "Thread(s) per core",
                "NUMA cell(s)",
                "Memory size",
            ],
            "<host>",
        ),
        "capabilities" => capabilities_structure(&t),
        "dumpxml" if t.contains("<domain") => domain_summary(&t),
        "dominfo" => mask_values(&mask_values(&t, &["Id"], "<id>"), &["CPU time"], "<time>")
            .replace("Id: <id>", "Id:             <id>"),
        "pool-info" => mask_values(&t, &["Capacity", "Allocation", "Available"], "<size>"),
        "pool-dumpxml" => t
            .lines()
            .map(|l| {
                let tl = l.trim_start();
                if ["<capacity", "<allocation", "<available"]
                    .iter()
                    .any(|x| tl.starts_with(x))
                {
                    format!("{}<size/>", &l[..l.len() - tl.len()])
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "list" | "pool-list" => t
            .lines()
            .filter(|l| l.contains(&s.prefix))
            .map(|l| {
                let mut w: Vec<&str> = l.split_whitespace().collect();
                if cmd == "list" && !w.is_empty() && w[0] != "-" {
                    w[0] = "<id>";
                }
                w.join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => t,
    };
    t.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// Runs the session on one side and returns each step's normalised outcome,
/// with the bytes `vol-download` wrote.
fn run_side(s: &Session, uri: &str, sockets: &[String]) -> (Vec<Outcome>, Vec<u8>) {
    let _ = std::fs::remove_file(s.file("back.bin"));
    s.cleanup(uri);
    let mut out = Vec::new();
    let mut downloaded = Vec::new();
    for step in s.steps() {
        let raw = virsh(uri, &step.args);
        if step.args[0] == "vol-download" {
            downloaded = std::fs::read(s.file("back.bin")).unwrap_or_default();
        }
        out.push(Outcome {
            code: raw.code,
            stdout: normalise(s, &step.args[0], &raw.stdout, sockets),
            stderr: normalise(s, &step.args[0], &raw.stderr, sockets),
        });
    }
    s.cleanup(uri);
    (out, downloaded)
}

fn show(step: &Step) -> String {
    step.args.join(" ")
}

/// What the session must show on any side: the steps that must succeed did
/// and the others failed, and the download read back the upload.
fn check_expectations(
    side: &str,
    s: &Session,
    outcomes: &[Outcome],
    data: &[u8],
    back: &[u8],
) -> Vec<String> {
    let mut problems = Vec::new();
    for (step, o) in s.steps().iter().zip(outcomes) {
        if step.compared && step.ok != (o.code == Some(0)) {
            problems.push(format!(
                "{side}: `virsh {}` exited {:?} (expected {}): {}{}",
                show(step),
                o.code,
                if step.ok { "success" } else { "failure" },
                o.stdout,
                o.stderr
            ));
        }
    }
    if back.len() != 1 << 20
        || back[..data.len()] != *data
        || back[data.len()..].iter().any(|b| *b != 0)
    {
        problems.push(format!(
            "{side}: vol-download gave {} bytes, not the 300000 uploaded then zeros to 1 MiB",
            back.len()
        ));
    }
    problems
}

#[test]
fn virsh_against_the_daemon_and_libvirtd() {
    if Command::new("virsh").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "virsh is missing under CI"
        );
        println!("SKIPPED virsh_against_the_daemon_and_libvirtd: virsh is not installed");
        return;
    }
    let t0 = Instant::now();
    let s = Session::new();
    let data = s.write_inputs();
    let daemon = Daemon::start(&s.dir);
    println!(
        "fake-libvirtd answered on its socket and port {:.0} ms after it was spawned",
        daemon.started_in.as_secs_f64() * 1000.0
    );
    assert!(
        daemon.started_in < Duration::from_secs(1),
        "daemon start took {:?}",
        daemon.started_in
    );

    // The TCP transport answers the same as the socket.
    for args in [
        vec!["version".to_owned()],
        vec!["list".to_owned(), "--all".to_owned()],
    ] {
        let tcp = virsh(&daemon.tcp_uri(), &args);
        let unix = virsh(&daemon.unix_uri(), &args);
        assert_eq!(tcp.code, Some(0), "{tcp:?}");
        assert_eq!(tcp, unix, "virsh {args:?} over TCP and over the socket");
    }

    let sockets = vec![daemon.socket.display().to_string()];
    let t = Instant::now();
    let (fake, fake_back) = run_side(&s, &daemon.unix_uri(), &sockets);
    let fake_secs = t.elapsed().as_secs_f64();
    let mut problems = check_expectations("fake-libvirtd", &s, &fake, &data, &fake_back);

    match real_uri() {
        Err(why) => {
            println!(
                "comparison with libvirtd SKIPPED: {why}; the session ran against fake-libvirtd alone ({} commands, {fake_secs:.1} s)",
                fake.len()
            );
        }
        Ok(uri) => {
            let real_socket = std::env::var("KVM2_TEST_SOCKET").unwrap_or_default();
            let t = Instant::now();
            let (real, real_back) = run_side(&s, &uri, &[real_socket]);
            let real_secs = t.elapsed().as_secs_f64();
            problems.extend(check_expectations("libvirtd", &s, &real, &data, &real_back));
            let mut compared = 0;
            for ((step, f), r) in s.steps().iter().zip(&fake).zip(&real) {
                if !step.compared {
                    continue;
                }
                compared += 1;
                if f != r {
                    problems.push(format!(
                        "`virsh {}` differs:\n  fake-libvirtd: exit {:?}\n{}\n{}\n  libvirtd:      exit {:?}\n{}\n{}",
                        show(step),
                        f.code,
                        f.stdout,
                        f.stderr,
                        r.code,
                        r.stdout,
                        r.stderr
                    ));
                }
            }
            println!(
                "virsh session compared with libvirtd on {uri}: {compared} commands, {} differences (fake {fake_secs:.1} s, real {real_secs:.1} s)",
                problems.len()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&s.dir);
    println!("total {:.1} s", t0.elapsed().as_secs_f64());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// virsh asks for keepalive (feature 10) and answers the daemon's pings: an
/// interactive virsh idle for longer than interval × count is not dropped,
/// and its next command is answered.
#[test]
fn an_idle_virsh_answers_the_daemons_pings() {
    if Command::new("virsh").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "virsh is missing under CI"
        );
        println!("SKIPPED an_idle_virsh_answers_the_daemons_pings: virsh is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ka.sock");
    let log = dir.path().join("daemon.log");
    let mut daemon = Command::new(BIN)
        .arg("--socket")
        .arg(&socket)
        .args([
            "--keepalive-interval",
            "1",
            "--keepalive-count",
            "2",
            "--log",
            "debug",
        ])
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !socket.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the daemon never listened"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let script = "sleep 4; echo hostname";
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "({script}) | virsh -c 'qemu+unix:///system?socket={}'",
            socket.display()
        ))
        .output()
        .unwrap();
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status();
    let _ = daemon.wait();
    let log = std::fs::read_to_string(&log).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fake-host"), "{stdout}\n{log}");
    let pings = log.matches("keepalive ping sent").count();
    let pongs = log.matches("keepalive pong received").count();
    println!("idle virsh: {pings} pings, {pongs} pongs in 4 s");
    assert!(pings >= 1 && pongs >= 1, "{log}");
    assert!(!log.contains("keepalive timeout"), "{log}");
}
