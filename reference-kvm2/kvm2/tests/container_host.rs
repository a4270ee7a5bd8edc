//! kvm2 against the libvirt test host running in a Docker container, started through
//! testcontainers from the locally built image of `scripts/container-host.sh image`.
//!
//! The gate, decided before anything starts:
//!
//! - `KVM2_TEST_DOCKER=0` — skipped;
//! - `KVM2_TEST_DOCKER=1` — required: no engine or no image fails the test;
//! - unset — runs when a Docker engine answers on the socket (`DOCKER_HOST=unix://…`, or
//!   `/var/run/docker.sock`) and the image exists; otherwise prints why it skips.
//!
//! The image is `KVM2_TEST_DOCKER_IMAGE`, or by default `kvm2-libvirt-host:<first 12
//! hex digits of the sha256 of scripts/container-host.sh>` — the tag the script builds.
//!
//! The container gets every capability but SYS_RESOURCE, seccomp=unconfined,
//! `/dev/net/tun`, an init as PID 1, and port 22 published on 127.0.0.1 only. The test
//! generates the SSH client key and the host key: the client's public key goes in as an
//! environment variable and the host key is copied into the container before it starts,
//! so the known_hosts line is known in advance.
//!
//! Through kvm2's public API: Check reports Ready. With the guest image of
//! `scripts/libvirt-host.sh env` (`KVM2_TEST_IMAGE_URL`, optionally
//! `KVM2_TEST_IMAGE_SHA256`) also Create → Get Running with the address the user-data
//! asks for → Delete → Get NotFound, on the container's libvirtd; the provider fetches the
//! image from loopback itself and uploads it over SSH, so the container needs no network.

mod support;

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conformance::{CloudInit, CreateRequest, Ctx, HealthReason, Provider, State};
use kvm2::{Config, Kvm2, SshDialer};
use libvirt_ssh::server::{KeyKind, generate_client_key};
use sha2::{Digest, Sha256};
use testcontainers::bollard::models::{DeviceMapping, HostConfig, PortBinding};
use testcontainers::core::logs::LogFrame;
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{CopyTargetOptions, GenericImage, ImageExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::Subscriber;
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

const REPOSITORY: &str = "kvm2-libvirt-host";
const READY_LINE: &str = "kvm2-libvirt-host: ready";

/// When the spans the Create timing is split by opened and closed: the image download
/// (fetch from loopback and upload over SSH) and the domain start.
#[derive(Clone, Default)]
struct Milestones(Arc<Mutex<Vec<Milestone>>>);

/// A span name, "open" or "close", and when.
type Milestone = (&'static str, &'static str, Instant);

const MILESTONE_SPANS: [&str; 2] = ["kvm2.download", "kvm2.DomainCreateWithFlags"];

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Milestones {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let name = attrs.metadata().name();
        if MILESTONE_SPANS.contains(&name) {
            self.0.lock().unwrap().push((name, "open", Instant::now()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && MILESTONE_SPANS.contains(&span.name())
        {
            self.0
                .lock()
                .unwrap()
                .push((span.name(), "close", Instant::now()));
        }
    }
}

impl Milestones {
    /// The first time `name` did `what` (open or close).
    fn first(&self, name: &str, what: &str) -> Option<Instant> {
        let seen = self.0.lock().unwrap();
        seen.iter()
            .find(|(n, w, _)| *n == name && *w == what)
            .map(|(_, _, at)| *at)
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The tag `scripts/container-host.sh image` gives the image it builds.
fn default_image() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/container-host.sh");
    let bytes = std::fs::read(&script)
        .unwrap_or_else(|e| panic!("read {} for the image tag: {e}", script.display()));
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{REPOSITORY}:{}", &hex[..12])
}

/// The engine's Unix socket: `DOCKER_HOST` when it names one, else the default.
fn engine_socket() -> Result<PathBuf, String> {
    match env("DOCKER_HOST") {
        None => Ok(PathBuf::from("/var/run/docker.sock")),
        Some(h) => match h.strip_prefix("unix://") {
            Some(path) => Ok(PathBuf::from(path)),
            None => Err(format!(
                "DOCKER_HOST={h} is not a unix:// socket, the only kind this test probes"
            )),
        },
    }
}

/// One HTTP/1.0 GET on the engine's socket; the status code and the body.
async fn engine_get(socket: &Path, path: &str) -> Result<(u16, String), String> {
    let io = async {
        let mut s = tokio::net::UnixStream::connect(socket).await?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n").as_bytes())
            .await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await?;
        Ok::<_, std::io::Error>(out)
    };
    let out = tokio::time::timeout(Duration::from_secs(5), io)
        .await
        .map_err(|_| format!("{} did not answer within 5 s", socket.display()))?
        .map_err(|e| format!("{}: {e}", socket.display()))?;
    let text = String::from_utf8_lossy(&out);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{}: not an HTTP answer", socket.display()))?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Ok((status, body))
}

/// Whether to run, and against which image; `Err` is the reason to skip.
async fn gate() -> Result<String, String> {
    let image = env("KVM2_TEST_DOCKER_IMAGE").unwrap_or_else(default_image);
    let socket = engine_socket()?;
    match engine_get(&socket, "/_ping").await {
        Ok((200, _)) => {}
        Ok((code, body)) => {
            return Err(format!(
                "the Docker engine on {} answers /_ping with {code}: {body}",
                socket.display()
            ));
        }
        Err(e) => {
            return Err(format!(
                "no Docker engine answers ({e}); start one with `scripts/container-host.sh engine`"
            ));
        }
    }
    match engine_get(&socket, &format!("/images/{image}/json")).await? {
        (200, _) => Ok(image),
        (404, _) => Err(format!(
            "the engine on {} has no image {image}; build it with `scripts/container-host.sh image`",
            socket.display()
        )),
        (code, body) => Err(format!("image {image}: the engine answers {code}: {body}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_host_check_and_lifecycle() {
    let mode = env("KVM2_TEST_DOCKER");
    if mode.as_deref() == Some("0") {
        eprintln!("skipped: KVM2_TEST_DOCKER=0");
        return;
    }
    let image = match gate().await {
        Ok(image) => image,
        Err(why) if mode.as_deref() == Some("1") => {
            panic!("KVM2_TEST_DOCKER=1 but the containerised host cannot run: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why} (KVM2_TEST_DOCKER=1 makes this a failure)");
            return;
        }
    };
    let milestones = Milestones::default();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(milestones.clone()),
    )
    .expect("the only subscriber of this test binary");
    run(&image, &milestones).await;
}

async fn run(image: &str, milestones: &Milestones) {
    let total = Instant::now();
    let dir = tempfile::tempdir().expect("temporary directory");
    let (client_key, client_pub) = generate_client_key(dir.path(), KeyKind::Ed25519);
    let (host_key, host_pub) = generate_client_key(dir.path(), KeyKind::Ed25519);
    let client_line = client_pub.to_openssh().expect("encode the client key");
    let host_line = host_pub.to_openssh().expect("encode the host key");

    let (name, tag) = image.rsplit_once(':').unwrap_or((image, "latest"));
    let request = GenericImage::new(name, tag)
        .with_exposed_port(22.tcp())
        .with_wait_for(WaitFor::message_on_stdout(READY_LINE))
        .with_env_var("KVM2_AUTHORIZED_KEY", client_line)
        .with_copy_to(
            CopyTargetOptions::new("/etc/kvm2/host_ed25519").with_mode(0o600),
            host_key.clone(),
        )
        // `--privileged` asks for CAP_SYS_RESOURCE, which some sandboxes lack: every
        // other capability, no seccomp filter and the tun device are what libvirt and
        // the bridge need.
        .with_cap_add("ALL")
        .with_cap_drop("SYS_RESOURCE")
        .with_security_opt("seccomp=unconfined")
        .with_security_opt("apparmor=unconfined")
        .with_host_config_modifier(|hc: &mut HostConfig| {
            // An init as PID 1 reaps the QEMU processes libvirtd daemonises; without it
            // destroying a domain waits on a zombie.
            hc.init = Some(true);
            hc.devices = Some(vec![DeviceMapping {
                path_on_host: Some("/dev/net/tun".into()),
                path_in_container: Some("/dev/net/tun".into()),
                cgroup_permissions: Some("rwm".into()),
            }]);
            // Port 22 on loopback only, at a port the engine picks.
            hc.publish_all_ports = Some(false);
            hc.port_bindings = Some(HashMap::from([(
                "22/tcp".to_owned(),
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".into()),
                    host_port: Some(String::new()),
                }]),
            )]));
        })
        .with_log_consumer(|frame: &LogFrame| {
            let (stream, bytes) = match frame {
                LogFrame::StdOut(b) => ("stdout", b),
                LogFrame::StdErr(b) => ("stderr", b),
            };
            for line in String::from_utf8_lossy(bytes).lines() {
                eprintln!("container {stream}: {line}");
            }
        })
        .with_startup_timeout(Duration::from_secs(180));

    let started = Instant::now();
    let container = request
        .start()
        .await
        .unwrap_or_else(|e| panic!("start a container from {image}: {e}"));
    let start_took = started.elapsed();
    let port = container
        .get_host_port_ipv4(22.tcp())
        .await
        .unwrap_or_else(|e| panic!("the published port of 22/tcp: {e}"));
    eprintln!(
        "container {} from {image}: ready in {} (create, copy, start, libvirtd and sshd up), ssh on 127.0.0.1:{port}",
        container.id(),
        secs(start_took)
    );
    let banner = Instant::now();
    wait_for_banner(port).await;
    eprintln!(
        "timing: SSH banner through the published port {}",
        secs(banner.elapsed())
    );

    let known_hosts = dir.path().join("known_hosts");
    let host_key_line = host_line.split(' ').take(2).collect::<Vec<_>>().join(" ");
    std::fs::write(
        &known_hosts,
        format!("[127.0.0.1]:{port} {host_key_line}\n"),
    )
    .expect("write known_hosts");

    let image_url = env("KVM2_TEST_IMAGE_URL");
    let config_path = dir.path().join("kvm2.yaml");
    std::fs::write(
        &config_path,
        config_yaml(
            port,
            &client_key,
            &known_hosts,
            image_url.as_deref(),
            env("KVM2_TEST_IMAGE_SHA256").as_deref(),
        ),
    )
    .expect("write the kvm2 configuration");
    let text = std::fs::read_to_string(&config_path).unwrap();
    let config = Config::from_yaml(&text).unwrap_or_else(|e| panic!("{text}\n{e}"));
    let provider = Kvm2::new(config, Arc::new(SshDialer::default()));

    // Check is Ready.
    let checked = Instant::now();
    let ctx = Ctx::with_timeout(Duration::from_secs(60));
    let health = conformance::Checker::check(&provider, &ctx).await;
    eprintln!("check: {health:?}");
    assert_eq!(health.len(), 1, "{health:?}");
    let h = &health[0];
    assert!(h.ready, "the containerised host is not ready: {h:?}");
    assert_eq!(h.reason, HealthReason::Ready, "{h:?}");
    assert_eq!(
        h.details.get("poolState").map(String::as_str),
        Some("running"),
        "{h:?}"
    );
    eprintln!("timing: Check {}", secs(checked.elapsed()));

    if image_url.is_none() {
        eprintln!(
            "KVM2_TEST_IMAGE_URL is not set: Check only; `eval \"$(scripts/libvirt-host.sh env)\"` \
             adds Create, Get and Delete on the containerised host"
        );
    } else {
        lifecycle(&provider, milestones).await;
    }

    let removed = Instant::now();
    container.rm().await.expect("remove the container");
    eprintln!(
        "timing: container removed in {}; whole test {}",
        secs(removed.elapsed()),
        secs(total.elapsed())
    );
}

/// Waits until sshd's version line comes through the published port.
async fn wait_for_banner(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        let attempt = async {
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            let mut buf = [0u8; 64];
            let n = s.read(&mut buf).await?;
            Ok::<_, std::io::Error>(String::from_utf8_lossy(&buf[..n]).into_owned())
        };
        match tokio::time::timeout(Duration::from_secs(5), attempt).await {
            Ok(Ok(line)) if line.starts_with("SSH-2.0-") => return,
            Ok(Ok(line)) => last = format!("answered {line:?}"),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "no banner within 5 s".into(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("sshd on 127.0.0.1:{port} never sent its banner: {last}");
}

/// A one-host kvm2 configuration for the container, as a user would write it.
fn config_yaml(
    port: u16,
    key: &Path,
    known_hosts: &Path,
    image_url: Option<&str>,
    sha256: Option<&str>,
) -> String {
    // Check reads no image; without a guest image a placeholder keeps the file valid.
    let url = image_url.unwrap_or("http://127.0.0.1:9/unused.qcow2");
    let sha = sha256.map_or(String::new(), |s| format!("\n      sha256: {s}"));
    format!(
        "kvm2:
  name: kvm2-container
  hosts:
    - name: container
      address: 127.0.0.1
      port: {port}
      user: root
      keyFile: {key}
      knownHostsFile: {known_hosts}
      socket: /var/run/libvirt/libvirt-sock
  pool: kvm2-test
  bridge: br0
  domainType: qemu
  images:
    - name: tiny-guest
      url: {url}{sha}
      firmware: efi
  sizes:
    vcpus: 1
    memoryMib: 256
    diskGib: 1
  placement:
    container: container
  timeouts:
    create: 5m
",
        key = key.display(),
        known_hosts = known_hosts.display(),
    )
}

/// Create → Get Running with the asked-for address → Delete → Get NotFound.
async fn lifecycle(provider: &Kvm2, milestones: &Milestones) {
    let run_id = support::run_id();
    let name = format!("kvm2-ct-{run_id}");
    let address = Ipv4Addr::new(192, 0, 2, 100 + (std::process::id() % 100) as u8);
    let request = CreateRequest {
        name: name.clone(),
        uid: format!("uid-{run_id}"),
        tag: format!("kvm2-ct-tag-{run_id}"),
        placement: "container".into(),
        image: None,
        cloud_init: CloudInit::new(format!(
            "#cloud-config\n# test-address: {address}/24\nhostname: {name}\n"
        )),
    };
    let limit = provider.config().timeouts.create + Duration::from_secs(60);
    eprintln!("instance {name}, address {address}");

    let t = Instant::now();
    let id = provider
        .create(&Ctx::with_timeout(limit), &request)
        .await
        .unwrap_or_else(|e| panic!("Create: {}", e.chain()));
    let ended = Instant::now();
    let span = |from: Option<Instant>, to: Option<Instant>| match (from, to) {
        (Some(a), Some(b)) => secs(b.saturating_duration_since(a)),
        _ => "-".into(),
    };
    let download = (
        milestones.first("kvm2.download", "open"),
        milestones.first("kvm2.download", "close"),
    );
    let start = milestones.first("kvm2.DomainCreateWithFlags", "open");
    eprintln!(
        "timing: Create {} = image fetch from loopback and upload over SSH {} + volumes, seed \
         and define until the domain start {} + boot to the guest agent's address {}",
        secs(ended - t),
        span(download.0, download.1),
        span(download.1.or(Some(t)), start),
        span(start, Some(ended)),
    );
    assert_eq!(id.as_str(), format!("hosts/container/domains/{name}"));

    let t = Instant::now();
    let ctx = Ctx::with_timeout(limit);
    let deadline = Instant::now() + limit;
    let inst = loop {
        let inst = provider
            .get(&ctx, &id)
            .await
            .unwrap_or_else(|e| panic!("Get: {}", e.chain()));
        if inst.state == State::Running && inst.ipv4.is_some() {
            break inst;
        }
        assert!(
            Instant::now() < deadline,
            "never Running with an address: {inst:?}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    eprintln!("get: {inst:?}");
    eprintln!("timing: Get Running {}", secs(t.elapsed()));
    assert_eq!(inst.name, name);
    assert_eq!(
        inst.ipv4,
        Some(address),
        "the guest did not take the address its user-data asked for"
    );

    let t = Instant::now();
    provider
        .delete(&ctx, &id)
        .await
        .unwrap_or_else(|e| panic!("Delete: {}", e.chain()));
    eprintln!("timing: Delete {}", secs(t.elapsed()));
    match provider.get(&ctx, &id).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("Get after Delete: {other:?}"),
    }
}
