//! kvm2 against a real libvirt host over SSH: one instance through its whole life.
//!
//! Gated on the `KVM2_TEST_*` variables that `scripts/libvirt-host.sh env` prints
//! (`HOST`, `PORT`, `USER`, `SSH_KEY`, `KNOWN_HOSTS`, `BRIDGE`, `IMAGE_URL`, and
//! optionally `IMAGE_SHA256`, `POOL`, `SOCKET`); without `KVM2_TEST_HOST` it prints why
//! it skips. Also read:
//!
//! - `KVM2_TEST_DOMAIN_TYPE` — `kvm` (default) or `qemu` (software emulation, for hosts
//!   without usable KVM such as the local test host);
//! - `KVM2_TEST_TIMEOUT` — Create's deadline (`5m` style; the default config's otherwise);
//! - `KVM2_TEST_KEEP` — set to anything but `0` to keep the instance after the
//!   Get and listing checks (the delete checks are then skipped, and say so);
//! - `KVM2_TEST_LOG_LEVEL` — a tracing filter (`info`, `kvm2=debug`) printed to stderr;
//! - `KVM2_TEST_ADDRESS` — the guest address to ask for (default: one in 192.0.2.10-99
//!   chosen from the process id).
//!
//! The request's user-data carries `# test-address: A.B.C.D/24`: the test guest of
//! `scripts/build-guest.sh` configures exactly that address from the seed ISO, so the
//! address Get reports proves the seed reached the guest.

mod support;
use support::Inventory;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use conformance::{BoxFuture, CloudInit, CreateRequest, Ctx, HealthReason, Provider, State};
use futures_util::FutureExt;
use kvm2::config::{DomainType, HostConfig};
use kvm2::dialer::Stream;
use kvm2::names::{image_marker, image_volume};
use kvm2::{Config, DialError, Dialer, Kvm2, SshDialer};
use tracing::span::{Attributes, Id};
use tracing::{Subscriber, info_span};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// The SSH dialer, counting its dials.
struct CountingDialer {
    inner: SshDialer,
    dials: AtomicUsize,
}

impl Dialer for CountingDialer {
    fn dial<'a>(&'a self, host: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
        self.dials.fetch_add(1, Ordering::SeqCst);
        self.inner.dial(host)
    }
}

/// One span as the recorder saw it open.
#[derive(Clone, Debug)]
struct SpanSeen {
    name: String,
    parent: Option<String>,
    grandparent: Option<String>,
    at: Instant,
}

/// An in-memory span recorder: name, parent and grandparent of every new span.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<SpanSeen>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx.span(id).and_then(|s| s.parent());
        let grandparent = parent.as_ref().and_then(|p| p.parent());
        self.0.lock().unwrap().push(SpanSeen {
            name: attrs.metadata().name().to_owned(),
            parent: parent.map(|p| p.name().to_owned()),
            grandparent: grandparent.map(|g| g.name().to_owned()),
            at: Instant::now(),
        });
    }
}

impl Recorder {
    fn spans(&self) -> Vec<SpanSeen> {
        self.0.lock().unwrap().clone()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn elapsed(since: Instant) -> String {
    format!("{:.1} s", since.elapsed().as_secs_f64())
}

#[test]
fn real_host_create_get_list_delete() {
    let Some(config) = Config::from_env() else {
        eprintln!(
            "skipped: KVM2_TEST_HOST is not set; start a host with `scripts/libvirt-host.sh start` \
             and `eval \"$(scripts/libvirt-host.sh env)\"` to run this test"
        );
        return;
    };
    let mut config = config.unwrap_or_else(|e| panic!("KVM2_TEST_* variables: {e}"));
    match env("KVM2_TEST_DOMAIN_TYPE").as_deref() {
        None | Some("kvm") => config.domain_type = DomainType::Kvm,
        Some("qemu") => config.domain_type = DomainType::Qemu,
        Some(other) => panic!("KVM2_TEST_DOMAIN_TYPE must be kvm or qemu, not {other:?}"),
    }
    // The test guest is tiny; a small instance keeps software emulation quick.
    config.sizes.memory_mib = 256;
    config.sizes.disk_gib = 1;

    let recorder = Recorder::default();
    let filter = env("KVM2_TEST_LOG_LEVEL").map(|f| {
        tracing_subscriber::EnvFilter::try_new(&f)
            .unwrap_or_else(|e| panic!("KVM2_TEST_LOG_LEVEL {f:?}: {e}"))
    });
    let fmt = filter.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(f)
    });
    let subscriber = tracing_subscriber::registry()
        .with(recorder.clone())
        .with(fmt);
    // A current-thread runtime keeps every task on the thread the recorder is the
    // default subscriber of.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || rt.block_on(run(config, recorder)));
}

async fn run(config: Config, recorder: Recorder) {
    let keep = env("KVM2_TEST_KEEP").is_some_and(|v| v != "0");
    let host = config.hosts[0].clone();
    let image = config.image(None).expect("one image").clone();
    let run_id = support::run_id();
    let name = format!("kvm2-it-{run_id}");
    let tag = format!("kvm2-it-tag-{run_id}");
    let uid = format!("uid-{run_id}");
    let address: Ipv4Addr = match env("KVM2_TEST_ADDRESS") {
        Some(a) => a
            .parse()
            .unwrap_or_else(|e| panic!("KVM2_TEST_ADDRESS {a:?}: {e}")),
        None => Ipv4Addr::new(192, 0, 2, 10 + (std::process::id() % 90) as u8),
    };
    let request = CreateRequest {
        name: name.clone(),
        uid: uid.clone(),
        tag: tag.clone(),
        placement: host.name.clone(),
        image: None,
        cloud_init: CloudInit::new(format!(
            "#cloud-config\n# test-address: {address}/24\nhostname: {name}\n"
        )),
    };
    let op_limit = config.timeouts.create + Duration::from_secs(60);
    eprintln!(
        "real host {}:{} as {}, pool {}, bridge {}, domain type {}, instance {name}, address {address}",
        host.address,
        host.port,
        host.user,
        config.pool,
        config.bridge,
        config.domain_type.as_str()
    );

    // 1. New does not dial.
    let dialer = Arc::new(CountingDialer {
        inner: SshDialer::default(),
        dials: AtomicUsize::new(0),
    });
    let provider = Kvm2::new(config.clone(), dialer.clone());
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0, "New dialled a host");

    // 2. Check is Ready, with details.
    let ctx = Ctx::with_timeout(Duration::from_secs(60));
    let health = conformance::Checker::check(&provider, &ctx).await;
    eprintln!("check: {health:?}");
    assert_eq!(health.len(), 1, "{health:?}");
    let h = &health[0];
    assert!(h.ready, "host not ready: {h:?}");
    assert_eq!(h.reason, HealthReason::Ready, "{h:?}");
    assert_eq!(h.location, host.name);
    for key in [
        "libvirtVersion",
        "hypervisorVersion",
        "hostname",
        "pool",
        "poolState",
    ] {
        assert!(h.details.contains_key(key), "no {key} in {:?}", h.details);
    }
    // QEMU's version, `major.minor.micro`, at least 1.0.0.
    let hv: Vec<u64> = h.details["hypervisorVersion"]
        .split('.')
        .map(|p| p.parse().expect("a number"))
        .collect();
    assert!(hv.len() == 3 && hv[0] >= 1, "{:?}", h.details);
    assert_eq!(h.details["poolState"], "running", "{h:?}");
    assert!(
        dialer.dials.load(Ordering::SeqCst) >= 1,
        "Check did not dial"
    );

    let inventory = Inventory::open(&host, &config.pool).await;
    let domains_before = inventory.domains().await;
    let volumes_before = inventory.volumes().await;
    assert!(
        !domains_before.contains(&name),
        "{name} exists before the test"
    );

    let result = std::panic::AssertUnwindSafe(lifecycle(
        &provider,
        &inventory,
        &request,
        address,
        op_limit,
        keep,
        &recorder,
        &domains_before,
    ))
    .catch_unwind()
    .await;
    if let Err(panic) = result {
        if keep {
            eprintln!("KVM2_TEST_KEEP: {name} is left on the host after the failure");
        } else {
            let id = kvm2::id::format_id(&host.name, &name);
            let ctx = Ctx::with_timeout(Duration::from_secs(120));
            match provider.delete(&ctx, &id).await {
                Ok(()) => eprintln!("cleaned up {name} after the failure"),
                Err(e) => eprintln!("could not clean up {name}: {}", e.chain()),
            }
        }
        std::panic::resume_unwind(panic);
    }
    if keep {
        return;
    }

    // The pool holds what it held before plus the cached base image and its marker.
    let volumes_after = inventory.volumes().await;
    let added: BTreeSet<String> = volumes_after.difference(&volumes_before).cloned().collect();
    let (base, marker) = (image_volume(&image), image_marker(&image));
    assert!(
        volumes_after.contains(&base),
        "no base image {base}: {volumes_after:?}"
    );
    assert!(
        volumes_after.contains(&marker),
        "no marker {marker}: {volumes_after:?}"
    );
    let allowed = BTreeSet::from([base.clone(), marker.clone()]);
    assert!(
        added.is_subset(&allowed),
        "the pool gained more than the base image and its marker: {added:?}"
    );
    let own: Vec<&String> = volumes_after
        .iter()
        .filter(|v| v.starts_with(&format!("{name}-")))
        .collect();
    assert!(own.is_empty(), "volumes of {name} remain: {own:?}");
    let stray: Vec<&String> = volumes_after
        .iter()
        .filter(|v| !allowed.contains(*v) && !volumes_before.contains(*v))
        .collect();
    assert!(stray.is_empty(), "unexpected volumes: {stray:?}");
    assert_eq!(
        inventory.domains().await,
        domains_before,
        "the domains differ from before the test"
    );

    // Spans: the libvirt calls and the dial of the Create are children of its
    // operation span, which is a child of the caller's span.
    let spans = recorder.spans();
    let child_of_create = |call: &str| {
        spans.iter().any(|s| {
            s.name == call
                && s.parent.as_deref() == Some("kvm2.create")
                && s.grandparent.as_deref() == Some("provider.create")
        })
    };
    for call in ["kvm2.DomainDefineXML", "kvm2.dial"] {
        assert!(
            child_of_create(call),
            "{call} is not a child of kvm2.create under provider.create: {:?}",
            spans.iter().filter(|s| s.name == call).collect::<Vec<_>>()
        );
    }
    eprintln!("real-host lifecycle passed");
}

#[allow(clippy::too_many_arguments)]
async fn lifecycle(
    provider: &Kvm2,
    inventory: &Inventory,
    request: &CreateRequest,
    address: Ipv4Addr,
    op_limit: Duration,
    keep: bool,
    recorder: &Recorder,
    domains_before: &BTreeSet<String>,
) {
    let host = &provider.config().hosts[0].name;
    let name = &request.name;
    let want_id = format!("hosts/{host}/domains/{name}");

    // 3. Create returns hosts/<host>/domains/<name>.
    let before_create = SystemTime::now();
    let started = Instant::now();
    let ctx = Ctx::with_timeout(op_limit).in_span(info_span!("provider.create"));
    let id = provider
        .create(&ctx, request)
        .await
        .unwrap_or_else(|e| panic!("Create: {}", e.chain()));
    let create_took = started.elapsed();
    let ended = Instant::now();
    assert_eq!(id.as_str(), want_id);
    let spans = recorder.spans();
    let start_call = spans
        .iter()
        .find(|s| s.name == "kvm2.DomainCreateWithFlags")
        .map(|s| s.at);
    eprintln!(
        "timing: Create {:.1} s = {} until the domain start (image fetch and upload when not \
         cached, volumes, define) + {} from the start to the guest agent's address",
        create_took.as_secs_f64(),
        start_call.map_or("-".into(), |t| format!(
            "{:.1} s",
            t.duration_since(started).as_secs_f64()
        )),
        start_call.map_or("-".into(), |t| format!(
            "{:.1} s",
            ended.duration_since(t).as_secs_f64()
        )),
    );

    // 4. A second Create returns the same ID and makes no second domain.
    let ctx = Ctx::with_timeout(op_limit);
    let again = Instant::now();
    let id2 = provider
        .create(&ctx, request)
        .await
        .unwrap_or_else(|e| panic!("second Create: {}", e.chain()));
    assert_eq!(id2, id);
    let domains = inventory.domains().await;
    assert_eq!(
        domains.len(),
        domains_before.len() + 1,
        "domains before {domains_before:?}, after {domains:?}"
    );
    assert!(domains.contains(name));
    eprintln!("timing: second Create {}", elapsed(again));

    // 5. Get reaches Running with the asked-for IPv4, the uid and createdAt.
    let ctx = Ctx::with_timeout(op_limit);
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
    eprintln!("get: {inst:?}");
    assert_eq!(inst.id, id);
    assert_eq!(&inst.name, name);
    assert_eq!(
        inst.ipv4,
        Some(address),
        "the guest did not take the address its user-data asked for"
    );
    assert_eq!(inst.uid, request.uid);
    assert_eq!(inst.tag, request.tag);
    let created = inst.created_at.expect("createdAt is recorded");
    let slack = Duration::from_secs(2);
    assert!(
        created + slack >= before_create && created <= SystemTime::now() + slack,
        "createdAt {created:?} is outside the Create call"
    );

    // 6. ListByTag contains it.
    let listing = provider
        .list_by_tag(&ctx, &request.tag)
        .await
        .unwrap_or_else(|e| panic!("ListByTag: {}", e.chain()));
    assert!(listing.unreachable.is_empty(), "{listing:?}");
    assert!(
        listing.instances.iter().any(|i| i.id == id),
        "{id} not listed: {listing:?}"
    );

    if keep {
        eprintln!("KVM2_TEST_KEEP: {id} is kept; the delete checks are skipped");
        return;
    }

    // 7. Delete succeeds, Get is NotFound, a second Delete succeeds.
    let started = Instant::now();
    provider
        .delete(&ctx, &id)
        .await
        .unwrap_or_else(|e| panic!("Delete: {}", e.chain()));
    eprintln!("timing: Delete {}", elapsed(started));
    let gone = provider.get(&ctx, &id).await;
    match gone {
        Err(e) if e.is_not_found() => {}
        other => panic!("Get after Delete: {other:?}"),
    }
    provider
        .delete(&ctx, &id)
        .await
        .unwrap_or_else(|e| panic!("second Delete: {}", e.chain()));
}
