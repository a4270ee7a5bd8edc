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
use kvm2::fixture::real::{RealFixture, test_address, user_data};
use libvirt_fake::FakeLibvirt;
use libvirt_ssh::server::{ChannelTarget, TestServer};

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
    let (ssh, files) = TestServer::start_with_client(
        dir.path(),
        ChannelTarget::Handler(Arc::new(move |stream| {
            let f = serving.clone();
            Box::pin(async move {
                let _ = f.serve(stream).await;
            })
        })),
    )
    .await;
    let config = Config::from_yaml(&yaml(ssh.port(), &files.key, &files.known_hosts)).unwrap();
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
        [
            "inventory",
            "planting",
            "state-control",
            "capacity",
            "faults",
            "observation"
        ],
        "{hooks:?}"
    );
    assert_eq!(f.locations().len(), 1);
    assert_eq!(f.locations()[0].placement, "local");
}

/// The report's provenance: libvirt's and QEMU's versions per host, as Check reads
/// them over the operator's own connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_versions_name_libvirt_and_qemu_per_host() {
    let h = host().await;
    let f = RealFixture::new(h.config.clone()).unwrap();
    let versions = f.backend_versions().await;
    let host = versions
        .get("local")
        .unwrap_or_else(|| panic!("{versions:?}"));
    let keys: Vec<&str> = host.keys().map(String::as_str).collect();
    assert_eq!(keys, ["libvirt", "qemu"]);
    for v in host.values() {
        assert!(
            v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{v}"
        );
    }
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
    // The testbed works in a pool of its own beside the configured one: removing
    // the container removes that pool only, and teardown cleans up after it.
    let pools = h.fake.pools();
    assert_eq!(pools.len(), 2, "{pools:?}");
    assert!(pools.iter().any(|p| p == POOL), "{pools:?}");
    planting
        .remove_part("local", "x", conformance::fixture::Part::Container)
        .await
        .unwrap();
    assert_eq!(h.fake.pools(), [POOL]);
    assert!(inventory.resources("local").await.is_ok());
    tb.teardown().await.unwrap();
    assert_eq!(h.fake.pools(), [POOL]);
    assert!(
        h.fake.leftover_directories().is_empty(),
        "{:?}",
        h.fake.leftover_directories()
    );
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
            .any(|l| l.starts_with("GEN-ROTATION") && l.contains("rotation")),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_control_and_capacity_rewrite_what_the_provider_sees() {
    use conformance::State;
    use conformance::fixture::Power;
    let h = host().await;
    let (_f, tb) = bed(&h).await;
    let planting = tb.planting().unwrap();
    let sc = tb.state_control().unwrap();
    let p = tb.provider();
    let ctx = || Ctx::with_timeout(Duration::from_secs(10));
    // A marked, running domain.
    planting
        .plant(
            "local",
            "kvm2-sc",
            Plant::ForeignUid {
                tag: "t".into(),
                uid: "u".into(),
            },
        )
        .await
        .unwrap();
    let id = tb.id_for("local", "kvm2-sc");
    // The fake's guest reports an address of its own until told otherwise.
    let own = p.get(&ctx(), &id).await.unwrap().ipv4;
    assert_ne!(own, Some("10.1.2.3".parse().unwrap()));

    sc.set_addresses("local", "kvm2-sc", vec!["10.1.2.3".parse().unwrap()])
        .await
        .unwrap();
    let got = p.get(&ctx(), &id).await.unwrap();
    assert_eq!(got.state, State::Running);
    assert_eq!(got.ipv4, Some("10.1.2.3".parse().unwrap()));

    sc.fail_address_lookup("local", "kvm2-sc", true)
        .await
        .unwrap();
    let got = p.get(&ctx(), &id).await.unwrap();
    assert_eq!((got.state, got.ipv4), (State::Provisioning, None));
    sc.fail_address_lookup("local", "kvm2-sc", false)
        .await
        .unwrap();
    sc.hold_boot(true).await.unwrap();
    assert_eq!(p.get(&ctx(), &id).await.unwrap().state, State::Provisioning);
    sc.hold_boot(false).await.unwrap();
    assert_eq!(p.get(&ctx(), &id).await.unwrap().state, State::Running);

    // Power goes through libvirt itself.
    sc.set_power("local", "kvm2-sc", Power::Paused)
        .await
        .unwrap();
    assert_eq!(p.get(&ctx(), &id).await.unwrap().state, State::Stopped);
    sc.set_power("local", "kvm2-sc", Power::Running)
        .await
        .unwrap();
    assert_eq!(p.get(&ctx(), &id).await.unwrap().state, State::Running);
    sc.set_power("local", "kvm2-sc", Power::Stopped)
        .await
        .unwrap();
    assert_eq!(p.get(&ctx(), &id).await.unwrap().state, State::Stopped);

    // Capacity: the free space the pool reports is lowered, and restored.
    let cap = tb.capacity().unwrap();
    let checker = p.checker().unwrap();
    let available = || async {
        let health = checker.check(&ctx()).await;
        health[0].details.get("poolAvailableGiB").cloned()
    };
    let before = available().await;
    assert!(before.is_some(), "{:?}", checker.check(&ctx()).await);
    cap.set_free("local", Some(1 << 20)).await.unwrap();
    assert_eq!(available().await.as_deref(), Some("0.0"));
    assert_ne!(before.as_deref(), Some("0.0"));
    cap.set_free("local", None).await.unwrap();
    assert_eq!(available().await, before);
    planting.remove("local", "kvm2-sc").await.unwrap();
    tb.teardown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_reply_lets_the_host_act_then_drops_the_connection() {
    let h = host().await;
    let (_f, tb) = bed(&h).await;
    let faults = tb.faults().unwrap();
    let obs = tb.observation().unwrap();
    tb.planting()
        .unwrap()
        .plant(
            "local",
            "kvm2-lost",
            Plant::ForeignUid {
                tag: "t".into(),
                uid: "someone".into(),
            },
        )
        .await
        .unwrap();
    let p = tb.provider();
    let dials = obs.dials("local");
    let id = faults
        .inject(FaultSpec {
            location: None,
            trigger: Trigger::Named("DomainUndefineFlags".into()),
            kind: FaultKind::LostReply,
        })
        .unwrap();
    let ctx = Ctx::with_timeout(Duration::from_secs(10));
    let result = p.delete(&ctx, &tb.id_for("local", "kvm2-lost")).await;
    assert!(faults.fired(id));
    // The host undefined the domain although the provider never saw the reply.
    assert!(h.fake.domain("kvm2-lost").is_none());
    if let Err(e) = result {
        assert_eq!(*e.kind(), ErrorKind::Transient, "{e}");
    }
    let ctx = Ctx::with_timeout(Duration::from_secs(10));
    p.delete(&ctx, &tb.id_for("local", "kvm2-lost"))
        .await
        .unwrap();
    assert!(
        obs.dials("local") > dials,
        "the lost reply cost the connection"
    );
}

/// Two hosts laid out as `scripts/libvirt-host.sh` lays them out: one client key,
/// one `authorized_keys` file beside it that both SSH servers read on every
/// attempt (as sshd does), and one known_hosts file naming both.
struct TwoHosts {
    dir: tempfile::TempDir,
    _ssh: Vec<TestServer>,
    config: Config,
}

async fn two_hosts() -> TwoHosts {
    use libvirt_ssh::server::{KeyKind, TestServerOptions, generate_client_key};
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
    let key_file = dir.path().join("client_ed25519");
    std::fs::rename(&key, &key_file).unwrap();
    let authorized_keys = dir.path().join("authorized_keys");
    std::fs::write(
        &authorized_keys,
        format!("{} operator\n", public.to_openssh().unwrap()),
    )
    .unwrap();
    let mut servers = Vec::new();
    let mut known = String::new();
    let mut hosts = String::new();
    let mut placement = String::new();
    for name in ["h1", "h2"] {
        let fake = FakeLibvirt::new();
        fake.add_pool(POOL, "/var/lib/libvirt/images", 50 << 30);
        let ssh = TestServer::start(TestServerOptions {
            authorized: Vec::new(),
            channel: ChannelTarget::Handler(Arc::new(move |stream| {
                let f = fake.clone();
                Box::pin(async move {
                    let _ = f.serve(stream).await;
                })
            })),
        })
        .await;
        ssh.authorize_file(&authorized_keys);
        known.push_str(&format!("{}\n", ssh.known_hosts_line()));
        hosts.push_str(&format!(
            "    - name: {name}
      address: 127.0.0.1
      port: {}
      user: root
      keyFile: {}
      knownHostsFile: {}
",
            ssh.port(),
            key_file.display(),
            dir.path().join("known_hosts").display()
        ));
        placement.push_str(&format!("    zone-{name}: {name}\n"));
        servers.push(ssh);
    }
    std::fs::write(dir.path().join("known_hosts"), known).unwrap();
    let yaml = format!(
        "kvm2:
  name: kvm2-local
  hosts:
{hosts}  pool: {POOL}
  bridge: br0
  domainType: qemu
  images:
    - name: tiny
      url: http://127.0.0.1:9/tiny.qcow2
      firmware: efi
  placement:
{placement}"
    );
    TwoHosts {
        dir,
        _ssh: servers,
        config: Config::from_yaml(&yaml).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_breaks_one_host_for_the_reason_asked_and_restore_needs_no_restart() {
    use conformance::fixture::AccessBreak;
    use conformance::{HealthReason, HostHealth};
    let h = two_hosts().await;
    let f = RealFixture::new(h.config.clone()).unwrap();
    assert!(
        f.hooks().iter().any(|x| x.as_str() == "rotation"),
        "authorized_keys beside the key: rotation"
    );
    let tb = f.open().await.unwrap();
    let rotation = tb.rotation().expect("rotation");
    let p = tb.provider();
    let checker = p.checker().unwrap();
    let check = || async {
        let health: Vec<HostHealth> = checker
            .check(&Ctx::with_timeout(Duration::from_secs(20)))
            .await;
        health
            .into_iter()
            .map(|x| (x.location, x.ready, x.reason, x.message))
            .collect::<Vec<_>>()
    };
    let ready = |v: &[(String, bool, HealthReason, String)]| {
        v.iter()
            .all(|(_, r, reason, _)| *r && *reason == HealthReason::Ready)
    };
    let authorized = || std::fs::read_to_string(h.dir.path().join("authorized_keys")).unwrap();
    let before = check().await;
    assert!(ready(&before), "{before:?}");
    // The testbed authorises a key of its own per host, beside the operator's.
    assert_eq!(authorized().lines().count(), 3, "{}", authorized());

    for (how, want) in [
        (AccessBreak::Revoke, HealthReason::AuthFailed),
        (AccessBreak::ForeignHostKey, HealthReason::HostKeyRejected),
        (
            AccessBreak::RemoveCredentials,
            HealthReason::CredentialsUnavailable,
        ),
    ] {
        assert!(rotation.break_access("h1", how).await.unwrap(), "{how:?}");
        let broken = check().await;
        let (_, ready1, reason1, message1) = &broken[0];
        assert!(!ready1, "{how:?}: {broken:?}");
        assert_eq!(*reason1, want, "{how:?}: {message1}");
        assert!(broken[1].1, "{how:?}: the other host: {broken:?}");
        if how == AccessBreak::Revoke {
            assert_eq!(authorized().lines().count(), 2, "{}", authorized());
        }
        rotation.restore_access("h1").await.unwrap();
        let after = check().await;
        assert!(ready(&after), "{how:?}: {after:?}");
    }
    assert_eq!(authorized().lines().count(), 3, "{}", authorized());
    // Rotation at one host leaves the other's key alone.
    rotation.rotate("h1").await.unwrap();
    assert!(ready(&check().await));
    assert_eq!(authorized().lines().count(), 3, "{}", authorized());

    tb.teardown().await.unwrap();
    drop(tb);
    // The testbed's keys leave with it; the operator's stays.
    let left = authorized();
    assert_eq!(left.lines().count(), 1, "{left}");
    assert!(left.contains(" operator"), "{left}");
}

/// `Faults::cause` acts on the testbed's own pool only: the operator's pool stays
/// running, Check names each declared reason and is Ready again after `undo_cause`,
/// and a teardown after a cause left in place still removes the testbed's pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_causes_stop_or_undefine_the_testbeds_pool_only() {
    let h = host().await;
    let (_f, tb) = bed(&h).await;
    let faults = tb.faults().unwrap();
    let p = tb.provider();
    let checker = p.checker().unwrap();
    let check = || async {
        let health = checker
            .check(&Ctx::with_timeout(Duration::from_secs(20)))
            .await;
        (health[0].reason.clone(), health[0].message.clone())
    };
    let pools_before = h.fake.pools();
    assert!(!faults.cause("local", "ContainerMissing").await.unwrap());
    for reason in kvm2::EXTRA_REASONS {
        assert!(faults.cause("local", reason).await.unwrap(), "{reason}");
        let (got, message) = check().await;
        assert_eq!(got.as_str(), *reason, "{message}");
        assert_eq!(
            h.fake.pool_info(POOL).map(|i| i.state),
            Some(libvirt_wire::StoragePoolState::Running),
            "the operator's pool"
        );
        faults.undo_cause("local").await.unwrap();
        let (got, message) = check().await;
        assert_eq!(got.as_str(), "Ready", "after {reason}: {message}");
    }
    assert_eq!(h.fake.pools(), pools_before);
    assert!(faults.cause("local", "PoolNotFound").await.unwrap());
    tb.teardown().await.unwrap();
    assert_eq!(h.fake.pools(), [POOL.to_owned()]);
}
