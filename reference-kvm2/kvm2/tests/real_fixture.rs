//! The real-host fixture's hooks, checked hermetically: `RealFixture` is pointed at
//! a configuration whose host is an in-memory libvirt behind an in-process SSH
//! server, so its chaos layer, reachability, planting and inventory run exactly as
//! they do against a real libvirtd (over SSH, through kvm2's production dialer).
//! The `kvm2 conformance --config` guard is checked through the binary.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::fixture::{FaultKind, FaultSpec, Fixture, Plant, Reachability, Testbed, Trigger};
use conformance::{Ctx, ErrorKind};
use kvm2::Config;
use kvm2::real_fixture::{RealFixture, test_address, user_data};
use libvirt_fake::FakeLibvirt;
use libvirt_ssh::server::{
    ChannelTarget, KeyKind, TestServer, TestServerOptions, generate_client_key,
};

const POOL: &str = "kvm2-test";

fn yaml(port: u16, key: &Path, known: &Path) -> String {
    format!(
        "kvm2:
  name: kvm2-local
  hosts:
    - name: local
      address: 127.0.0.1
      port: {port}
      user: root
      keyFile: {}
      knownHostsFile: {}
  pool: {POOL}
  bridge: br0
  domainType: qemu
  images:
    - name: tiny
      url: http://127.0.0.1:9/tiny.qcow2
      firmware: efi
  placement:
    local: local
",
        key.display(),
        known.display()
    )
}

struct Host {
    _dir: tempfile::TempDir,
    fake: FakeLibvirt,
    _ssh: TestServer,
    config: Config,
}

async fn host() -> Host {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLibvirt::new();
    fake.add_pool(POOL, "/var/lib/libvirt/images", 50 << 30);
    let serving = fake.clone();
    let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
    let ssh = TestServer::start(TestServerOptions {
        authorized: vec![public],
        channel: ChannelTarget::Handler(Arc::new(move |stream| {
            let f = serving.clone();
            Box::pin(async move {
                let _ = f.serve(stream).await;
            })
        })),
    })
    .await;
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, format!("{}\n", ssh.known_hosts_line())).unwrap();
    let config = Config::from_yaml(&yaml(ssh.port(), &key, &known)).unwrap();
    Host {
        _dir: dir,
        fake,
        _ssh: ssh,
        config,
    }
}

async fn bed(h: &Host) -> (RealFixture, Box<dyn Testbed>) {
    let f = RealFixture::new(h.config.clone()).unwrap();
    let tb = f.open().await.unwrap();
    (f, tb)
}

fn missing_id(tb: &dyn Testbed) -> conformance::ProviderId {
    tb.id_for("local", "kvm2-nobody")
}

#[tokio::test]
async fn declares_a_real_backend_with_the_hooks_it_can_do() {
    let h = host().await;
    let (f, _tb) = bed(&h).await;
    assert!(f.is_real_backend());
    let hooks: Vec<&str> = f.hooks().iter().map(|h| h.as_str()).collect();
    // No authorized_keys beside the key: no rotation.
    assert_eq!(
        hooks,
        ["inventory", "planting", "faults", "observation"],
        "{hooks:?}"
    );
    assert_eq!(f.locations().len(), 1);
    assert_eq!(f.locations()[0].placement, "local");
}

#[test]
fn every_name_gets_its_own_test_address_and_keeps_it() {
    let a = test_address("kvm2-addr-a");
    let b = test_address("kvm2-addr-b");
    assert_ne!(a, b);
    assert_eq!(test_address("kvm2-addr-a"), a);
    assert_eq!(a.octets()[..3], [192, 0, 2]);
    assert!(user_data("kvm2-addr-a").contains(&format!("# test-address: {a}/24\n")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_libvirt_error_answers_the_call_and_is_reported_fired() {
    let h = host().await;
    let (_f, tb) = bed(&h).await;
    let faults = tb.faults().unwrap();
    let obs = tb.observation().unwrap();
    let p = tb.provider();
    let ctx = Ctx::with_timeout(Duration::from_secs(10));
    let e = p.get(&ctx, &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound, "{e}");

    let id = faults
        .inject(FaultSpec {
            location: None,
            trigger: Trigger::Named("DomainLookupByName".into()),
            kind: FaultKind::Transient,
        })
        .unwrap();
    assert!(!faults.fired(id));
    let e = p.get(&ctx, &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::Transient, "{e}");
    assert!(faults.fired(id));
    // Once only: the next Get reaches the host again.
    let e = p.get(&ctx, &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound, "{e}");
    let names: Vec<String> = obs.calls().into_iter().map(|c| c.name).collect();
    assert!(
        names.iter().filter(|n| *n == "DomainLookupByName").count() >= 3,
        "{names:?}"
    );
    assert_eq!(obs.dials("local"), 1);

    let e = faults
        .inject(FaultSpec {
            location: None,
            trigger: Trigger::Named("NoSuchCall".into()),
            kind: FaultKind::Transient,
        })
        .unwrap_err();
    assert!(e.to_string().contains("NoSuchCall"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_is_transient_at_the_deadline_and_clear_releases_it() {
    let h = host().await;
    let (_f, tb) = bed(&h).await;
    let faults = tb.faults().unwrap();
    let p = tb.provider();
    let id = faults
        .inject(FaultSpec {
            location: Some("local".into()),
            trigger: Trigger::Always,
            kind: FaultKind::Hang,
        })
        .unwrap();
    let t = Instant::now();
    let ctx = Ctx::with_timeout(Duration::from_secs(2));
    let e = p.get(&ctx, &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::Transient, "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(faults.fired(id));
    faults.clear();
    assert!(faults.fired(id), "fired survives clear");
    let ctx = Ctx::with_timeout(Duration::from_secs(10));
    let e = p.get(&ctx, &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_delayed_refused_and_black_holed_connections() {
    let h = host().await;
    let (_f, tb) = bed(&h).await;
    let faults = tb.faults().unwrap();
    let obs = tb.observation().unwrap();
    let p = tb.provider();
    let ctx = || Ctx::with_timeout(Duration::from_secs(10));

    // Drop: the call fails Transient, the next one redials and works.
    let id = faults
        .inject(FaultSpec {
            location: None,
            trigger: Trigger::Named("DomainLookupByName".into()),
            kind: FaultKind::Drop,
        })
        .unwrap();
    let e = p.get(&ctx(), &missing_id(tb.as_ref())).await.unwrap_err();
    assert!(faults.fired(id));
    if *e.kind() != ErrorKind::NotFound {
        // kvm2 may retry an idempotent lookup on a new connection by itself.
        assert_eq!(*e.kind(), ErrorKind::Transient, "{e}");
    }
    let e = p.get(&ctx(), &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound, "{e}");
    assert!(obs.dials("local") >= 2);

    // Delay: the call waits, then proceeds.
    faults
        .inject(FaultSpec {
            location: None,
            trigger: Trigger::Named("DomainLookupByName".into()),
            kind: FaultKind::Delay(Duration::from_millis(800)),
        })
        .unwrap();
    let t = Instant::now();
    let e = p.get(&ctx(), &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound, "{e}");
    assert!(
        t.elapsed() >= Duration::from_millis(800),
        "{:?}",
        t.elapsed()
    );

    // Refused: a real SSH dial to a closed port fails at once.
    faults
        .set_reachability("local", Reachability::Refused)
        .await
        .unwrap();
    let dials = obs.dials("local");
    let t = Instant::now();
    let e = p.get(&ctx(), &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::Transient, "{e}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(obs.dials("local") > dials);

    // Black hole: the dial hangs until the caller's deadline.
    faults
        .set_reachability("local", Reachability::BlackHole)
        .await
        .unwrap();
    let t = Instant::now();
    let e = p
        .get(
            &Ctx::with_timeout(Duration::from_secs(2)),
            &missing_id(tb.as_ref()),
        )
        .await
        .unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::Transient, "{e}");
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );

    faults
        .set_reachability("local", Reachability::Up)
        .await
        .unwrap();
    let e = p.get(&ctx(), &missing_id(tb.as_ref())).await.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plants_are_defined_through_libvirt_seen_by_inventory_and_removed() {
    let h = host().await;
    let (_f, tb) = bed(&h).await;
    let planting = tb.planting().unwrap();
    let inventory = tb.inventory().unwrap();
    planting
        .plant("local", "kvm2-plant-a", Plant::Unmarked)
        .await
        .unwrap();
    planting
        .plant(
            "local",
            "kvm2-plant-b",
            Plant::ForeignUid {
                tag: "t".into(),
                uid: "someone-else".into(),
            },
        )
        .await
        .unwrap();
    assert!(h.fake.domain("kvm2-plant-a").is_some());
    let names: Vec<String> = inventory
        .resources("local")
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.primary)
        .map(|r| r.name)
        .collect();
    assert!(names.contains(&"kvm2-plant-a".to_owned()), "{names:?}");
    assert!(names.contains(&"kvm2-plant-b".to_owned()), "{names:?}");

    let before = planting.inspect("local", "kvm2-plant-b").await.unwrap();
    assert!(before.is_some());
    assert_eq!(
        planting.inspect("local", "kvm2-plant-b").await.unwrap(),
        before,
        "an untouched plant keeps its fingerprint"
    );
    assert!(before.unwrap().contains("someone-else"));
    planting.remove("local", "kvm2-plant-a").await.unwrap();
    planting.remove("local", "kvm2-plant-b").await.unwrap();
    assert_eq!(
        planting.inspect("local", "kvm2-plant-a").await.unwrap(),
        None
    );
    assert!(h.fake.domain("kvm2-plant-b").is_none());
    let e = planting
        .remove_part("local", "x", conformance::fixture::Part::Container)
        .await
        .unwrap_err();
    assert!(e.to_string().contains(POOL), "{e}");
}

#[test]
fn the_suite_refuses_a_configured_host_not_marked_as_a_test_host() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kvm2.yaml");
    std::fs::write(
        &path,
        yaml(9, &dir.path().join("key"), &dir.path().join("known")),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kvm2"))
            .arg("conformance")
            .arg("--config")
            .arg(&path)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&[
        "--rules",
        "CHK-ORDER",
        "--out",
        dir.path().join("r").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--test-host"), "{err}");
    assert!(!dir.path().join("r").exists());

    // Listing needs no mark: it touches nothing.
    let o = run(&["--list"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.starts_with("GET-STATE") && l.contains("state-control")),
        "{out}"
    );
}
