//! kvm2 against a real libvirt host whose transport dies in the middle of a Create.
//!
//! For each of the host's sshd and libvirtd: a Create starts, the daemon is killed
//! (`scripts/libvirt-host.sh kill`) as soon as the domain shows up on a watching
//! connection of the test's own, and the Create must fail promptly with a Transient
//! error. The daemon is revived (`scripts/libvirt-host.sh revive`); the same Create
//! must then converge — the same ID, and Get reaching Running with the address the
//! user-data asked for — and a Delete must leave nothing of the instance behind, as a
//! domain or as a volume in the pool.
//!
//! Gated on `KVM2_TEST_CONFIG` (the kvm2.yaml `scripts/libvirt-host.sh start` writes), on
//! the script and on running as root; without them it prints why it skips. It runs on
//! the configuration's second host (`local2`, which has an sshd of its own) when there is
//! one, so that the first host's users are not disturbed, and on the first otherwise.
//! Also read:
//!
//! - `KVM2_TEST_KILL_HOST` — `1` or `2`: the host by its position in the configuration
//!   (and the script's host number);
//! - `KVM2_TEST_KILL` — which daemons, comma-separated (default `sshd,libvirtd`);
//! - `KVM2_TEST_KILL_PROMPT` — how soon after the kill Create must return, in seconds
//!   (default 30);
//! - `KVM2_TEST_KILL_STRICT` — set to `1` to fail when the first Create after the revive
//!   does not converge at once (by default a Transient answer is retried for up to two
//!   minutes, as a caller would, and each retry is printed as a note).

mod support;
use support::Inventory;

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::{CloudInit, CreateRequest, Ctx, ErrorKind, Provider, State};
use futures_util::FutureExt;
use kvm2::config::HostConfig;
use kvm2::names::{image_marker, image_volume};
use kvm2::{Config, Kvm2, SshDialer};

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/libvirt-host.sh")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Runs `libvirt-host.sh <verb> <daemon> <host>`; panics with its output on failure.
fn host_script(verb: &str, daemon: &str, host: usize) -> Duration {
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(script())
        .args([verb, daemon, &host.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script().display()));
    assert!(
        out.status.success(),
        "libvirt-host.sh {verb} {daemon} {host} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

/// Revives both daemons of the host when dropped, so that a failed case does not leave
/// the host without its sshd or libvirtd.
struct ReviveOnDrop(usize);

impl Drop for ReviveOnDrop {
    fn drop(&mut self) {
        for daemon in ["sshd", "libvirtd"] {
            let _ = Command::new("bash")
                .arg(script())
                .args(["revive", daemon, &self.0.to_string()])
                .output();
        }
    }
}

/// How long Transient answers of the converging Create are retried: a boot takes
/// 20-40 s here, so a Create that has not converged by then is not going to.
const RETRY_FOR: Duration = Duration::from_secs(120);

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

#[test]
fn real_host_transport_killed_during_create() {
    let Some(path) = env("KVM2_TEST_CONFIG") else {
        eprintln!(
            "skipped: KVM2_TEST_CONFIG is not set; start the hosts with `scripts/libvirt-host.sh \
             start` and `eval \"$(scripts/libvirt-host.sh env)\"` to run this test"
        );
        return;
    };
    if !script().exists() {
        eprintln!(
            "skipped: {} is missing; it kills and revives the daemons",
            script().display()
        );
        return;
    }
    if !is_root() {
        eprintln!("skipped: killing and reviving the host's daemons needs root");
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut config = Config::from_yaml(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let number = match env("KVM2_TEST_KILL_HOST") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=config.hosts.len()).contains(n))
            .unwrap_or_else(|| {
                panic!(
                    "KVM2_TEST_KILL_HOST must be 1..={}, not {n:?}",
                    config.hosts.len()
                )
            }),
        None => config.hosts.len().min(2),
    };
    // Only the chosen host: the provider never dials the other.
    let host = config.hosts[number - 1].clone();
    config.hosts = vec![host.clone()];
    config.placement = BTreeMap::from([(host.name.clone(), host.name.clone())]);
    config.sizes.memory_mib = 256;
    config.sizes.disk_gib = 1;
    let daemons: Vec<String> = env("KVM2_TEST_KILL")
        .unwrap_or_else(|| "sshd,libvirtd".into())
        .split(',')
        .map(|d| d.trim().to_owned())
        .collect();
    for d in &daemons {
        assert!(
            d == "sshd" || d == "libvirtd",
            "KVM2_TEST_KILL names {d:?}; only sshd and libvirtd"
        );
    }
    let prompt = Duration::from_secs(
        env("KVM2_TEST_KILL_PROMPT")
            .map(|s| s.parse().expect("KVM2_TEST_KILL_PROMPT in seconds"))
            .unwrap_or(30),
    );

    let strict = env("KVM2_TEST_KILL_STRICT").is_some_and(|v| v != "0");
    let _revive = ReviveOnDrop(number);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Both daemons up before the first case (a previous run may have left one dead).
        host_script("revive", "sshd", number);
        host_script("revive", "libvirtd", number);
        for daemon in &daemons {
            kill_case(&config, &host, number, daemon, prompt, strict).await;
        }
    });
}

async fn kill_case(
    config: &Config,
    host: &HostConfig,
    number: usize,
    daemon: &str,
    prompt: Duration,
    strict: bool,
) {
    let run_id = support::run_id();
    let name = format!("kvm2-kill-{daemon}-{run_id}");
    // 192.0.2.230-249: apart from the addresses the other real-host tests pick.
    let offset = if daemon == "sshd" { 0 } else { 10 };
    let address = Ipv4Addr::new(192, 0, 2, 230 + offset + (std::process::id() % 10) as u8);
    let request = CreateRequest {
        name: name.clone(),
        uid: format!("uid-{run_id}"),
        tag: format!("kvm2-kill-tag-{run_id}"),
        placement: host.name.clone(),
        image: None,
        cloud_init: CloudInit::new(format!(
            "#cloud-config\n# test-address: {address}/24\nhostname: {name}\n"
        )),
    };
    let want_id = kvm2::id::format_id(&host.name, &name);
    eprintln!(
        "== kill {daemon} of host {number} ({}:{}, socket {}) during the Create of {name}, address {address}",
        host.address, host.port, host.socket
    );

    let provider = Arc::new(Kvm2::new(config.clone(), Arc::new(SshDialer::default())));
    let outcome = std::panic::AssertUnwindSafe(steps(
        config, host, number, daemon, prompt, strict, &provider, &request, address,
    ))
    .catch_unwind()
    .await;
    if let Err(panic) = outcome {
        // Both daemons back, then the instance away, before the failure is reported.
        for d in ["sshd", "libvirtd"] {
            let _ = Command::new("bash")
                .arg(script())
                .args(["revive", d, &number.to_string()])
                .output();
        }
        let fresh = Kvm2::new(config.clone(), Arc::new(SshDialer::default()));
        let ctx = Ctx::with_timeout(Duration::from_secs(120));
        match fresh.delete(&ctx, &want_id).await {
            Ok(()) => eprintln!("cleaned up {name} after the failure"),
            Err(e) => eprintln!("could not clean up {name}: {}", e.chain()),
        }
        std::panic::resume_unwind(panic);
    }
}

#[allow(clippy::too_many_arguments)]
async fn steps(
    config: &Config,
    host: &HostConfig,
    number: usize,
    daemon: &str,
    prompt: Duration,
    strict: bool,
    provider: &Arc<Kvm2>,
    request: &CreateRequest,
    address: Ipv4Addr,
) {
    let name = request.name.clone();
    let want_id = kvm2::id::format_id(&host.name, &name);
    let op_limit = config.timeouts.create + Duration::from_secs(60);
    let inventory = Inventory::open(host, &config.pool).await;
    let domains_before = inventory.domains().await;
    let volumes_before = inventory.volumes().await;
    assert!(
        !domains_before.contains(&name),
        "{name} exists before the test"
    );

    // 1. The Create runs on its own task; the domain appearing on the inventory marks it
    //    as in progress (image cached, volumes made, domain defined; start and boot next).
    let started = Instant::now();
    let create = {
        let provider = provider.clone();
        let request = request.clone();
        tokio::spawn(async move {
            let ctx = Ctx::with_timeout(op_limit);
            provider.create(&ctx, &request).await
        })
    };
    let seen = loop {
        if create.is_finished() {
            let r = create.await.unwrap();
            panic!("Create ended before the domain was seen: {r:?}");
        }
        if inventory.domains().await.contains(&name) {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < op_limit,
            "the domain never appeared within {}",
            secs(op_limit)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    drop(inventory);

    // 2. Kill the daemon; Create fails promptly, and Transiently.
    let kill_took = tokio::task::spawn_blocking({
        let daemon = daemon.to_owned();
        move || host_script("kill", &daemon, number)
    })
    .await
    .unwrap();
    let killed = Instant::now();
    let outcome = tokio::time::timeout(prompt, create).await;
    let returned = killed.elapsed();
    let result = match outcome {
        Ok(joined) => joined.unwrap(),
        Err(_) => panic!(
            "Create had not returned {} after {daemon} was killed",
            secs(prompt)
        ),
    };
    let err = match result {
        Ok(id) => panic!("Create succeeded ({id}) although {daemon} was killed during it"),
        Err(e) => e,
    };
    eprintln!(
        "Create failed {} after the kill: {} ({})",
        secs(returned),
        err.kind().name(),
        err.chain()
    );
    assert!(
        matches!(err.kind(), ErrorKind::Transient),
        "Create's error after killing {daemon} is {}, not Transient: {}",
        err.kind().name(),
        err.chain()
    );

    // 3. Revive; the same Create converges on the same instance.
    let revive_took = tokio::task::spawn_blocking({
        let daemon = daemon.to_owned();
        move || host_script("revive", &daemon, number)
    })
    .await
    .unwrap();
    let again = Instant::now();
    let ctx = Ctx::with_timeout(op_limit);
    let mut retries = 0;
    let id = loop {
        match provider.create(&ctx, request).await {
            Ok(id) => break id,
            Err(e) if e.is_transient() && !strict && again.elapsed() < RETRY_FOR => {
                // A caller retries a Transient error; say so, since the contract
                // asks the next Create to converge.
                retries += 1;
                eprintln!(
                    "note: converging Create #{retries} after reviving {daemon} was Transient \
                     ({:.1} s after the revive): {}",
                    again.elapsed().as_secs_f64(),
                    e.chain()
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => panic!(
                "Create after reviving {daemon} ({} retries): {} {}",
                retries,
                e.kind().name(),
                e.chain()
            ),
        }
    };
    let converge_took = again.elapsed();
    assert_eq!(id, want_id, "the converging Create's ID");

    let deadline = Instant::now() + op_limit;
    let inst = loop {
        let inst = provider
            .get(&ctx, &id)
            .await
            .unwrap_or_else(|e| panic!("Get: {}", e.chain()));
        if inst.state == State::Running && inst.ipv4.is_some() {
            break inst;
        }
        assert!(Instant::now() < deadline, "never Running: {inst:?}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let running_took = again.elapsed();
    assert_eq!(inst.id, id);
    assert_eq!(
        inst.ipv4,
        Some(address),
        "the guest did not take the address its user-data asked for"
    );
    assert_eq!(inst.uid, request.uid);

    // 4. Delete leaves nothing of the instance.
    let deleting = Instant::now();
    provider
        .delete(&ctx, &id)
        .await
        .unwrap_or_else(|e| panic!("Delete: {}", e.chain()));
    let delete_took = deleting.elapsed();
    match provider.get(&ctx, &id).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("Get after Delete: {other:?}"),
    }
    let inventory = Inventory::open(host, &config.pool).await;
    let domains = inventory.domains().await;
    assert!(!domains.contains(&name), "the domain {name} is left");
    let volumes = inventory.volumes().await;
    let own: Vec<&String> = volumes.iter().filter(|v| v.contains(&name)).collect();
    assert!(own.is_empty(), "volumes of {name} are left: {own:?}");
    let image = config.image(None).expect("one image");
    let cached = BTreeSet::from([image_volume(image), image_marker(image)]);
    let gained: Vec<&String> = volumes
        .difference(&volumes_before)
        .filter(|v| !cached.contains(*v))
        .collect();
    assert!(
        gained.is_empty(),
        "the pool gained more than the cached image: {gained:?}"
    );

    eprintln!(
        "timing ({daemon}): domain seen {} into the Create; kill {}; Create returned {} after \
         the kill; revive {}; converging Create {} ({retries} Transient retries); Running with \
         {address} {} after it; Delete {}",
        secs(seen),
        secs(kill_took),
        secs(returned),
        secs(revive_took),
        secs(converge_took),
        secs(running_took),
        secs(delete_took)
    );
}
