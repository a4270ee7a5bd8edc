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
    assert_eq!(o.status.code(), Some(1));
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
    assert_eq!(o.status.code(), Some(1));
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
    use libvirt_fake::FakeLibvirt;
    use libvirt_ssh::server::{ChannelTarget, TestServer};
    let fake = FakeLibvirt::with_config(host);
    fake.add_pool("p", "/var/lib/libvirt/images", 50 << 30);
    let (ssh, files) = TestServer::start_with_client(
        dir,
        ChannelTarget::Handler(std::sync::Arc::new(move |stream| {
            let f = fake.clone();
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
    (ssh, cfg)
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
        out.contains("ok   host h1: ready"),
        "{out}\n{}",
        text(&o.stderr)
    );
    assert!(out.contains(line), "{out}");
    assert_eq!(o.status.code(), Some(status), "{out}");
}
