//! Crate-level tests: every libvirt call the provider makes is instrumented.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use conformance::Ctx;
use conformance::fixture::Fixture;
use tracing::span::{Attributes, Id};
use tracing::{Subscriber, info_span};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::fixture::Kvm2Fixture;

#[derive(Clone, Default)]
struct Names(Arc<Mutex<Vec<String>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Names {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        self.0
            .lock()
            .unwrap()
            .push(attrs.metadata().name().to_owned());
    }
}

/// Every backend call of a create/get/list/delete/check cycle has its own
/// `kvm2.<Call>` span, and the dial has `kvm2.dial`.
#[test]
fn every_backend_call_is_instrumented() {
    let names = Names::default();
    let subscriber = tracing_subscriber::registry().with(names.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        rt.block_on(async {
            let fixture = Kvm2Fixture::default();
            let bed = fixture.open().await.unwrap();
            let obs = bed.observation().unwrap();
            let before = obs.calls().len();
            let p = bed.provider();
            let loc = &fixture.locations()[0];
            let req = bed.request("vm-1", "tag-1", loc);
            let ctx = Ctx::with_timeout(Duration::from_secs(10)).in_span(info_span!("caller"));
            let id = p.create(&ctx, &req).await.unwrap();
            p.get(&ctx, &id).await.unwrap();
            p.list_by_tag(&ctx, "tag-1").await.unwrap();
            p.delete(&ctx, &id).await.unwrap();
            let health = p.checker().unwrap().check(&ctx).await;
            assert!(health.iter().all(|h| h.ready), "{health:?}");
            // The fake's versions: libvirt 9.0.0, QEMU 10.0.2.
            for h in &health {
                assert_eq!(h.details["libvirtVersion"], "9.0.0", "{h:?}");
                assert_eq!(h.details["hypervisorVersion"], "10.0.2", "{h:?}");
            }
            let calls = obs.calls()[before..].to_vec();
            let spans = names.0.lock().unwrap().clone();
            assert!(spans.iter().any(|s| s == "kvm2.dial"));
            for op in [
                "kvm2.create",
                "kvm2.get",
                "kvm2.list_by_tag",
                "kvm2.delete",
                "kvm2.check",
            ] {
                assert!(spans.iter().any(|s| s == op), "no span {op}");
            }
            let mut left: Vec<String> = spans
                .iter()
                .filter_map(|s| s.strip_prefix("kvm2."))
                .map(str::to_ascii_lowercase)
                .collect();
            for c in &calls {
                let want = c.name.to_ascii_lowercase();
                match left.iter().position(|s| *s == want) {
                    Some(i) => {
                        left.remove(i);
                    }
                    None => panic!("backend call {} has no kvm2.{} span", c.name, c.name),
                }
            }
        })
    });
}

/// A span's name is `kvm2.` and the call's API name, byte for byte, including
/// the calls whose marker type is spelled otherwise (`DomainDefineXml` is
/// `DomainDefineXML`): what the fake saw and what was traced agree exactly.
#[test]
fn span_names_are_the_api_names_byte_for_byte() {
    let names = Names::default();
    let subscriber = tracing_subscriber::registry().with(names.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        rt.block_on(async {
            let fixture = Kvm2Fixture::default();
            let bed = fixture.open().await.unwrap();
            let obs = bed.observation().unwrap();
            let p = bed.provider();
            let req = bed.request("vm-2", "tag-2", &fixture.locations()[0]);
            let ctx = Ctx::with_timeout(Duration::from_secs(10));
            let id = p.create(&ctx, &req).await.unwrap();
            p.delete(&ctx, &id).await.unwrap();
            let spans = names.0.lock().unwrap().clone();
            for c in obs.calls() {
                let want = format!("kvm2.{}", c.name);
                assert!(spans.contains(&want), "no span {want} in {spans:?}");
            }
            for want in [
                "kvm2.DomainDefineXML",
                "kvm2.StorageVolCreateXML",
                "kvm2.AuthList",
                "kvm2.ConnectOpen",
                "kvm2.DomainCreateWithFlags",
            ] {
                assert!(
                    spans.iter().any(|s| s == want),
                    "no span {want} in {spans:?}"
                );
            }
        })
    });
}

/// Check against a libvirtd on this machine, reached through its socket.
/// Runs only when `KVM2_TEST_LOCAL_SOCKET` names the socket (`KVM2_TEST_POOL`
/// the pool); read-only: Check, a listing and a Get change nothing on the host.
#[tokio::test]
async fn check_a_local_libvirtd() {
    let Ok(socket) = std::env::var("KVM2_TEST_LOCAL_SOCKET") else {
        eprintln!("skipped: KVM2_TEST_LOCAL_SOCKET is not set");
        return;
    };
    let mut config = Kvm2Fixture::default().config();
    config.hosts.truncate(1);
    config.placement.retain(|_, h| h == "host-a");
    config.hosts[0].socket = socket;
    if let Ok(pool) = std::env::var("KVM2_TEST_POOL") {
        config.pool = pool;
    }
    let p = crate::Kvm2::new(config, Arc::new(crate::LocalSocketDialer));
    let ctx = Ctx::with_timeout(Duration::from_secs(10));
    let health = conformance::Checker::check(&p, &ctx).await;
    eprintln!("{health:#?}");
    assert_eq!(health.len(), 1);
    for key in ["libvirtVersion", "hypervisorVersion"] {
        assert!(health[0].details.contains_key(key), "{key}: {health:?}");
    }
    // Read-only as well: a listing and a Get of a name that does not exist.
    use conformance::Provider;
    let listing = p.list_by_tag(&ctx, "kvm2-local-probe").await.unwrap();
    assert!(listing.instances.is_empty());
    let missing = crate::id::format_id("host-a", "kvm2-local-probe-missing");
    assert!(p.get(&ctx, &missing).await.unwrap_err().is_not_found());
}
