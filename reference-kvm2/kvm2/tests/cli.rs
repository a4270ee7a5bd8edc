//! The `kvm2` command's manual subcommands, run as a user would: bad input is
//! named, an unusable host is reported with its reason and a failing exit code.

use std::path::Path;
use std::process::{Command, Output};

use libvirt_fake::{HostConfig, HostInterface};
use rstest::rstest;

fn kvm2(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvm2"))
        .args(args)
        .output()
        .expect("run kvm2")
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// A port on loopback that nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn config(dir: &Path, port: u16) -> String {
    let key = dir.join("missing_key");
    let known = dir.join("missing_known_hosts");
    let path = dir.join("kvm2.yaml");
    std::fs::write(
        &path,
        format!(
            "kvm2:\n  hosts:\n    - name: h1\n      address: 127.0.0.1\n      port: {port}\n      \
             user: root\n      keyFile: {}\n      knownHostsFile: {}\n  pool: p\n  bridge: br0\n  \
             images:\n    - name: img\n      url: http://127.0.0.1:1/img.qcow2\n  \
             placement:\n    z: h1\n",
            key.display(),
            known.display()
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn a_missing_configuration_file_is_named() {
    let o = kvm2(&["list", "--config", "/nonexistent/kvm2.yaml", "--tag", "t"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("/nonexistent/kvm2.yaml"), "{err}");
}

#[test]
fn an_invalid_field_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 22);
    let text_ = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text_.replace("address: 127.0.0.1", "address: ''")).unwrap();
    let o = kvm2(&["check", "--config", &cfg]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("kvm2.hosts[0].address"), "{err}");
}

#[test]
fn check_and_preflight_report_an_unusable_host_and_fail() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), closed_port());
    let o = kvm2(&["check", "--config", &cfg]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let line: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(line["location"], "h1");
    assert_eq!(line["ready"], false);
    // The key file is not there yet: the secret may not be mounted.
    assert_eq!(line["reason"], "CredentialsUnavailable", "{out}");

    let o = kvm2(&["preflight", "--config", &cfg]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert!(
        out.contains("FAIL host h1: CredentialsUnavailable"),
        "{out}"
    );
    assert!(out.contains("skip leftovers: no --tag given"), "{out}");
}

#[test]
fn help_lists_every_command() {
    let o = kvm2(&["--help"]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    for c in [
        "check",
        "preflight",
        "create",
        "get",
        "delete",
        "list",
        "conformance",
    ] {
        assert!(out.contains(c), "{c} missing from:\n{out}");
    }
}

/// A fake libvirt host behind the in-process SSH server, with pool `p`; the
/// configuration file points at it.
async fn served_host(
    dir: &Path,
    host: libvirt_fake::HostConfig,
) -> (libvirt_ssh::server::TestServer, String) {
    let (ssh, cfg, _) = served_fake(dir, host).await;
    (ssh, cfg)
}

/// [`served_host`], with the fake itself.
async fn served_fake(
    dir: &Path,
    host: libvirt_fake::HostConfig,
) -> (
    libvirt_ssh::server::TestServer,
    String,
    libvirt_fake::FakeLibvirt,
) {
    use libvirt_fake::FakeLibvirt;
    use libvirt_ssh::server::{ChannelTarget, TestServer};
    let fake = FakeLibvirt::with_config(host);
    fake.add_pool("p", "/var/lib/libvirt/images", 50 << 30);
    let serving = fake.clone();
    let (ssh, files) = TestServer::start_with_client(
        dir,
        ChannelTarget::Handler(std::sync::Arc::new(move |stream| {
            let f = serving.clone();
            Box::pin(async move {
                let _ = f.serve(stream).await;
            })
        })),
    )
    .await;
    let cfg = config(dir, ssh.port());
    let yaml = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace(
            &dir.join("missing_key").display().to_string(),
            &files.key.display().to_string(),
        )
        .replace(
            &dir.join("missing_known_hosts").display().to_string(),
            &files.known_hosts.display().to_string(),
        );
    std::fs::write(&cfg, yaml).unwrap();
    (ssh, cfg, fake)
}

fn without_ovmf(mut h: HostConfig) -> HostConfig {
    h.uefi_firmware.clear();
    h
}

fn interfaces(mut h: HostConfig, interfaces: Option<Vec<HostInterface>>) -> HostConfig {
    h.interfaces = interfaces;
    h
}

/// Preflight asks the host's domain capabilities whether UEFI firmware is
/// offered, since the configured image boots with it (the default), and
/// libvirt's interface driver whether the configured bridge is there and is
/// a bridge. Each case names the line it must print and the exit status.
#[rstest]
#[case::ready(
    HostConfig::default(),
    "ok   bridge br0 on h1: a bridge, not active yet",
    0
)]
#[case::ready_firmware(
    HostConfig::default(),
    "ok   UEFI firmware on h1: offered to kvm domains",
    0
)]
#[case::no_ovmf(
    without_ovmf(HostConfig::default()),
    "FAIL UEFI firmware on h1: not offered to kvm domains, which images img need",
    1
)]
#[case::no_bridge(
    interfaces(HostConfig::default(), Some(vec![HostInterface::ethernet("eth0", "02:00:00:00:00:01")])),
    "FAIL bridge br0 on h1: no such interface on the host; every guest joins it",
    1
)]
#[case::not_a_bridge(
    interfaces(HostConfig::default(), Some(vec![HostInterface::ethernet("br0", "02:00:00:00:00:01")])),
    "FAIL bridge br0 on h1: is an interface of type ethernet, not a bridge",
    1
)]
#[case::no_interface_driver(
    interfaces(HostConfig::default(), None),
    "skip bridge br0 on h1: the host's libvirt has no interface driver",
    0
)]
#[tokio::test(flavor = "multi_thread")]
async fn preflight_checks_firmware_and_bridge(
    #[case] host: HostConfig,
    #[case] line: &str,
    #[case] status: i32,
) {
    let dir = tempfile::tempdir().unwrap();
    let (_ssh, cfg) = served_host(dir.path(), host).await;
    let o = tokio::task::spawn_blocking(move || kvm2(&["preflight", "--config", &cfg]))
        .await
        .unwrap();
    let out = text(&o.stdout);
    assert!(
        out.contains("ok   host h1: ready, libvirt 9.0.0, hypervisor 10.0.2"),
        "{out}\n{}",
        text(&o.stderr)
    );
    assert!(out.contains(line), "{out}");
    assert_eq!(o.status.code(), Some(status), "{out}");
}

#[test]
fn conformance_help_shows_config_and_test_host() {
    let o = kvm2(&["conformance", "--help"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for flag in ["--config <FILE>", "--test-host", "--rules", "Exit codes"] {
        assert!(out.contains(flag), "{flag} missing from:\n{out}");
    }
}

#[test]
fn version_names_the_commit() {
    let o = kvm2(&["--version"]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    let want = format!("kvm2 {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(out.starts_with(&want), "{out}");
    let commit = out
        .trim()
        .strip_prefix(&want)
        .and_then(|c| c.strip_suffix(')'));
    assert!(
        commit.is_some_and(
            |c| c == "unknown" || (c.len() == 12 && c.chars().all(|x| x.is_ascii_hexdigit()))
        ),
        "{out}"
    );
}

#[rstest]
#[case("bash", "complete -F _kvm2")]
#[case("zsh", "#compdef kvm2")]
#[case("fish", "complete -c kvm2")]
fn completions_are_printed(#[case] shell: &str, #[case] marker: &str) {
    let o = kvm2(&["completions", shell]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains(marker), "{out}");
    assert!(out.contains("preflight"), "{out}");
}

/// `KVM2_CONFIG` stands in for `--config`; a flag given wins.
#[test]
fn kvm2_config_names_the_file_when_no_flag_does() {
    let o = Command::new(env!("CARGO_BIN_EXE_kvm2"))
        .args(["list", "--tag", "t"])
        .env("KVM2_CONFIG", "/nonexistent/from-env.yaml")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("/nonexistent/from-env.yaml"),
        "{}",
        text(&o.stderr)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_kvm2"))
        .args(["list", "--tag", "t", "--config", "/nonexistent/flag.yaml"])
        .env("KVM2_CONFIG", "/nonexistent/from-env.yaml")
        .output()
        .unwrap();
    assert!(
        text(&o.stderr).contains("/nonexistent/flag.yaml"),
        "{}",
        text(&o.stderr)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_kvm2"))
        .args(["list", "--tag", "t"])
        .env_remove("KVM2_CONFIG")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--config <FILE>"),
        "{}",
        text(&o.stderr)
    );
}

/// An error names the program once, then the operation, the kind and the
/// message; the exit code is the kind's.
#[tokio::test(flavor = "multi_thread")]
async fn an_error_prints_operation_and_kind_and_exits_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let (_ssh, cfg) = served_host(dir.path(), HostConfig::default()).await;
    let o = tokio::task::spawn_blocking(move || {
        kvm2(&["get", "--config", &cfg, "hosts/h1/domains/nothing-here"])
    })
    .await
    .unwrap();
    let err = text(&o.stderr);
    assert!(err.starts_with("kvm2: get: NotFound: "), "{err}");
    assert_eq!(err.matches("kvm2").count(), 1, "{err}");
    assert_eq!(o.status.code(), Some(3), "{err}");
}

/// The in-process SSH server presents a host key the known_hosts file does
/// not hold: Check says HostKeyRejected and names the file and the command
/// that records the key; an operation fails Permanent (exit 5) saying the same.
#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_host_key_names_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (ssh, cfg) = served_host(dir.path(), HostConfig::default()).await;
    let known = dir.path().join("empty_known_hosts");
    std::fs::write(&known, "").unwrap();
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    let line = yaml
        .lines()
        .find(|l| l.trim_start().starts_with("knownHostsFile:"))
        .unwrap()
        .to_owned();
    let indent = &line[..line.len() - line.trim_start().len()];
    std::fs::write(
        &cfg,
        yaml.replace(
            &line,
            &format!("{indent}knownHostsFile: {}", known.display()),
        ),
    )
    .unwrap();
    let fix = format!(
        "ssh-keyscan -p {} 127.0.0.1 >> {}",
        ssh.port(),
        known.display()
    );
    let c = cfg.clone();
    let o = tokio::task::spawn_blocking(move || kvm2(&["check", "--config", &c]))
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    let h: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(h["reason"], "HostKeyRejected", "{out}");
    let message = h["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "is not in the known_hosts file {}",
            known.display()
        )),
        "{message}"
    );
    assert!(message.contains(&fix), "{message}");
    let o = tokio::task::spawn_blocking(move || {
        kvm2(&["get", "--config", &cfg, "hosts/h1/domains/vm-1"])
    })
    .await
    .unwrap();
    let err = text(&o.stderr);
    assert!(err.starts_with("kvm2: get: Permanent: "), "{err}");
    assert!(err.contains(&fix), "{err}");
    assert_eq!(o.status.code(), Some(5), "{err}");
}

/// A mark written by another implementation, with a fraction of a second and
/// an offset (Go's `time.RFC3339Nano` in a local zone), is read by Get and by
/// ListByTag: the instance is neither skipped nor refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_mark_with_a_fraction_and_an_offset_is_read_by_get_and_list() {
    let dir = tempfile::tempdir().unwrap();
    let (_ssh, cfg, fake) = served_fake(dir.path(), HostConfig::default()).await;
    fake.define_domain(&format!(
        "<domain type='kvm'><name>vm-go</name><metadata><kvm2:instance xmlns:kvm2='{}' \
         managed='go-tag' uid='u-go' createdAt='2026-12-04T10:00:00.123+01:00'/></metadata>\
         <memory unit='MiB'>64</memory><os><type>hvm</type></os></domain>",
        kvm2::config::DEFAULT_NAMESPACE
    ))
    .unwrap();
    // Printed as RFC 3339 in UTC, the fraction kept.
    let created = "2026-12-04T09:00:00.123Z";
    let c = cfg.clone();
    let o = tokio::task::spawn_blocking(move || {
        kvm2(&["get", "--config", &c, "hosts/h1/domains/vm-go"])
    })
    .await
    .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got["tag"], "go-tag");
    assert_eq!(got["created_at"], created, "{got}");
    let o =
        tokio::task::spawn_blocking(move || kvm2(&["list", "--config", &cfg, "--tag", "go-tag"]))
            .await
            .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let listing: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let instances = listing["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 1, "{listing}");
    assert_eq!(instances[0]["id"], "hosts/h1/domains/vm-go");
    assert_eq!(instances[0]["created_at"], created, "{listing}");
}

/// `create`, `get`, `list` and `delete` as an operator runs them, against a fake host
/// behind SSH and an image served over HTTP: the instance is made, read and listed with
/// `created_at` in RFC 3339, deleted, and then not found.
#[tokio::test(flavor = "multi_thread")]
async fn create_get_list_delete_run_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let (_ssh, cfg, _fake) = served_fake(dir.path(), HostConfig::default()).await;
    let server = image_server::ImageServer::start().await.unwrap();
    server.add("/img.qcow2", vec![7u8; 64 * 1024]);
    let yaml = std::fs::read_to_string(&cfg).unwrap().replace(
        "http://127.0.0.1:1/img.qcow2",
        &server.url_for("/img.qcow2"),
    );
    std::fs::write(&cfg, yaml).unwrap();
    let user_data = dir.path().join("user-data");
    std::fs::write(&user_data, "#cloud-config\nhostname: vm-cli\n").unwrap();
    let run = |args: Vec<String>| async move {
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kvm2(&args)
        })
        .await
        .unwrap()
    };
    let args = |a: &[&str]| -> Vec<String> { a.iter().map(|s| (*s).to_owned()).collect() };
    let rfc3339 = |v: &serde_json::Value| {
        let t = v.as_str().unwrap_or_else(|| panic!("created_at is {v}"));
        t.parse::<jiff::Timestamp>()
            .unwrap_or_else(|e| panic!("{t}: {e}"));
        assert!(t.ends_with('Z'), "{t}");
    };
    let o = run(args(&[
        "create",
        "--config",
        &cfg,
        "--name",
        "vm-cli",
        "--uid",
        "u-cli",
        "--tag",
        "cli-tag",
        "--zone",
        "z",
        "--user-data",
        user_data.to_str().unwrap(),
    ]))
    .await;
    assert!(o.status.success(), "{}", text(&o.stderr));
    let made: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let id = made["id"].as_str().unwrap().to_owned();
    assert_eq!(id, "hosts/h1/domains/vm-cli");
    assert_eq!(
        (made["uid"].as_str(), made["tag"].as_str()),
        (Some("u-cli"), Some("cli-tag"))
    );
    rfc3339(&made["created_at"]);
    assert!(
        !text(&o.stdout).contains("hostname: vm-cli"),
        "no user data printed"
    );

    let o = run(args(&["get", "--config", &cfg, &id])).await;
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got["created_at"], made["created_at"]);

    let o = run(args(&["list", "--config", &cfg, "--tag", "cli-tag"])).await;
    assert!(o.status.success(), "{}", text(&o.stderr));
    let listing: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let instances = listing["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 1, "{listing}");
    assert_eq!(instances[0]["id"], id.as_str());
    rfc3339(&instances[0]["created_at"]);

    let o = run(args(&["delete", "--config", &cfg, &id])).await;
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), format!("deleted {id}"));
    let o = run(args(&["get", "--config", &cfg, &id])).await;
    assert_eq!(o.status.code(), Some(3), "NotFound: {}", text(&o.stderr));
    let o = run(args(&["list", "--config", &cfg, "--tag", "cli-tag"])).await;
    let listing: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        listing["instances"].as_array().unwrap().len(),
        0,
        "{listing}"
    );
}
