//! The `fake-libvirtd` daemon: its state file (the committed example, the
//! test driver's default, refused documents) and the binary itself (a Unix
//! socket served until SIGTERM, a non-loopback address refused).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libvirt_fake::{FakeLibvirt, StateFile};
use libvirt_wire::{ConnectListAllDomainsArgs, DomainState, Procedure, Status};

use crate::wire::Raw;

const BIN: &str = env!("CARGO_BIN_EXE_fake-libvirtd");

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/host.json")
}

#[tokio::test]
async fn the_example_state_file_loads() {
    let state = StateFile::load(&example()).unwrap();
    let fake = FakeLibvirt::new();
    state.apply(&fake).await.unwrap();
    let web = fake.domain("web").expect("web is defined");
    assert_eq!(web.state, DomainState::Running);
    assert!(web.persistent);
    assert_eq!(fake.domain("idle").unwrap().state, DomainState::Shutoff);
    assert_eq!(fake.pools(), ["default", "scratch"]);
    let vols: Vec<String> = fake
        .volumes("default")
        .unwrap()
        .into_iter()
        .map(|v| v.handle.name)
        .collect();
    assert_eq!(vols, ["base.qcow2", "data.img"]);
    assert_eq!(fake.host_config().hostname, "fake-host");
}

#[tokio::test]
async fn without_a_file_the_state_is_the_test_drivers() {
    let fake = FakeLibvirt::new();
    StateFile::test_driver_default().apply(&fake).await.unwrap();
    let test = fake.domain("test").unwrap();
    assert_eq!(test.state, DomainState::Running);
    assert_eq!(test.handle.id, 1);
    assert_eq!(
        test.handle.uuid.to_string(),
        "6695eb01-f6a4-8304-79aa-97f2502e193f"
    );
    assert_eq!(fake.pools(), ["default-pool"]);
    assert!(fake.volumes("default-pool").unwrap().is_empty());
}

#[test]
fn state_files_with_mistakes_are_refused() {
    let dir = Path::new(".");
    for (doc, says) in [
        (r#"{"pool": []}"#, "unknown field `pool`"),
        (r#"{"domains": [{"running": true}]}"#, "exactly one of"),
        (
            r#"{"domains": [{"xml": "<domain/>", "xml_file": "a.xml"}]}"#,
            "exactly one of",
        ),
        (r#"{"pools": [{"name": "p"}]}"#, "missing field `path`"),
    ] {
        let e = StateFile::parse(doc, dir).unwrap_err();
        assert!(e.contains(says), "{doc}: {e}");
    }
}

#[tokio::test]
async fn a_domain_xml_libvirt_refuses_fails_the_load() {
    let state = StateFile::parse(r#"{"domains": [{"xml": "<domain>"}]}"#, Path::new(".")).unwrap();
    let e = state.apply(&FakeLibvirt::new()).await.unwrap_err();
    assert!(e.starts_with("domain 0: "), "{e}");
}

#[tokio::test]
async fn a_name_defined_twice_fails_the_load() {
    let xml = "<domain type='kvm'><name>a</name><memory>1024</memory></domain>";
    let doc = format!(r#"{{"domains": [{{"xml": "{xml}"}}, {{"xml": "{xml}"}}]}}"#);
    let state = StateFile::parse(&doc, Path::new(".")).unwrap();
    let e = state.apply(&FakeLibvirt::new()).await.unwrap_err();
    assert_eq!(e, "domain 1: 'a' is defined twice");
}

#[test]
fn the_daemon_refuses_a_non_loopback_address() {
    let out = Command::new(BIN)
        .args(["--listen", "192.0.2.1:16509"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address"), "{err}");
}

#[test]
fn the_daemon_needs_somewhere_to_listen() {
    let out = Command::new(BIN).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--socket"));
}

#[tokio::test]
async fn the_daemon_serves_a_socket_and_exits_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("sock");
    let started = Instant::now();
    let child = Command::new(BIN)
        .arg("--socket")
        .arg(&sock)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while !sock.exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "no socket");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stream = tokio::net::UnixStream::connect(&sock).await.unwrap();
    let mut c = Raw::new(stream);
    c.handshake().await;
    let p = c
        .call(
            Procedure::ConnectListAllDomains,
            &ConnectListAllDomainsArgs {
                need_results: 1,
                flags: 0,
            },
        )
        .await;
    assert_eq!(p.header.status, Status::Ok);
    drop(c);
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("connection closed"), "{log}");
    assert!(log.contains("shutting down"), "{log}");
    assert!(!sock.exists(), "the socket is removed");
}
