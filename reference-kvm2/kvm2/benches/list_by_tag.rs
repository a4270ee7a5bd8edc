//! ListByTag over many marked domains behind network latency.
//!
//! One fake host holds `KVM2_BENCH_DOMAINS` (500) domains carrying the bench's
//! tag, planted straight into the fake. Every connection to it goes through
//! `libvirt_fake::latency`, which delays bytes by half of
//! `KVM2_BENCH_RTT_MS` (10) in each direction while later bytes keep
//! flowing, so calls in flight overlap as on a network; the fake daemon
//! behind it works on at most 5 calls per client at once, like libvirtd's
//! `max_client_requests`. Side by side, on connections of the same kind:
//!
//! - kvm2's `list_by_tag` (its metadata and state reads pipelined);
//! - the same RPCs (list all domains, then the metadata of each, then the
//!   state of each marked one) through the RPC client kvm2 is built on
//!   (`libvirt_rpc::Client`, on a connection of its own over the same kind
//!   of link): every call of a phase in flight, 64 in flight, 5 in flight,
//!   and one call at a time.
//!
//! Goal: kvm2 within 10 round trips, against ~500 for a client
//! making one call at a time.
//!
//! `cargo bench -p reference-kvm2 --bench list_by_tag`. Without `--bench` (as under
//! `cargo test --benches`) it does a token run on 20 domains.

use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::{BoxFuture, Ctx, Provider};
use futures_util::stream::{self, StreamExt};
use kvm2::config::{DEFAULT_NAMESPACE, HostConfig};
use kvm2::dialer::{DialError, Dialer, Stream};
use kvm2::fixture::Kvm2Fixture;
use kvm2::xml::parse_mark;
use libvirt_fake::FakeLibvirt;
use libvirt_rpc::Client;
use libvirt_wire::{DOMAIN_METADATA_ELEMENT, DOMAIN_RUNNING_BOOTED, Domain, DomainState};

const TAG: &str = "bench-list";

/// Every dial gets a fresh pipe to the fake daemon behind the latency link.
struct SlowLink {
    fake: FakeLibvirt,
    round_trip: Duration,
}

impl Dialer for SlowLink {
    fn dial<'a>(&'a self, _: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
        Box::pin(
            async move { Ok(Box::new(self.fake.duplex_with_latency(self.round_trip)) as Stream) },
        )
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn plant(fake: &FakeLibvirt, count: usize) {
    for i in 0..count {
        let name = format!("bench-{i:04}");
        let xml = format!(
            "<domain type='qemu'><name>{name}</name><metadata><kvm2:instance xmlns:kvm2='{DEFAULT_NAMESPACE}' managed='{TAG}' uid='uid-{i}' createdAt='2026-01-01T00:00:00Z'/></metadata><memory unit='MiB'>64</memory><os><type>hvm</type></os></domain>"
        );
        fake.define_domain(&xml).expect("define a bench domain");
        fake.set_domain_state(&name, DomainState::Running, DOMAIN_RUNNING_BOOTED)
            .expect("start a bench domain");
    }
}

/// An RPC client of our own on the same kind of link, opened like kvm2 opens one.
async fn open_client(link: &SlowLink) -> Client {
    let (client, conn) =
        libvirt_rpc::Config::default().attach(link.fake.duplex_with_latency(link.round_trip));
    tokio::spawn(conn);
    client.open("qemu:///system").await.expect("open");
    client
}

/// What one listing found: marked domains with the tag, and how many RPCs it took.
struct Found {
    domains: usize,
    calls: usize,
}

/// The listing's RPCs, `depth` calls in flight per phase (1: one at a time),
/// marks parsed with kvm2's own parser.
async fn raw_listing(client: &Client, depth: usize) -> Found {
    let doms = client
        .connect_list_all_domains(0)
        .await
        .expect("list all domains");
    let read: Vec<(Domain, String)> = stream::iter(doms)
        .map(|d| async move {
            let xml = client
                .domain_get_metadata(&d, DOMAIN_METADATA_ELEMENT, Some(DEFAULT_NAMESPACE), 0)
                .await
                .expect("metadata");
            (d, xml)
        })
        .buffered(depth)
        .collect()
        .await;
    let calls = 1 + read.len();
    let marked: Vec<Domain> = read
        .into_iter()
        .filter(|(_, xml)| parse_mark(xml).is_ok_and(|m| m.tag == TAG))
        .map(|(d, _)| d)
        .collect();
    let states: Vec<_> = stream::iter(marked)
        .map(|d| async move { client.domain_get_state(&d).await.expect("state") })
        .buffered(depth)
        .collect()
        .await;
    Found {
        domains: states.len(),
        calls: calls + states.len(),
    }
}

/// The median of `runs` timings.
fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

struct Row {
    what: &'static str,
    calls: usize,
    runs: usize,
    elapsed: Duration,
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let domains = if benching {
        env_num("KVM2_BENCH_DOMAINS", 500) as usize
    } else {
        20
    };
    let repeats = if benching {
        env_num("KVM2_BENCH_REPEATS", 3).max(1) as usize
    } else {
        1
    };
    let round_trip = Duration::from_millis(env_num("KVM2_BENCH_RTT_MS", 10));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let fake = FakeLibvirt::with_config(libvirt_fake::HostConfig {
            hostname: "host-a.fake".into(),
            ..Default::default()
        });
        plant(&fake, domains);
        let link = Arc::new(SlowLink {
            fake: fake.clone(),
            round_trip,
        });
        let mut config = Kvm2Fixture::default().config();
        config.hosts.truncate(1);
        config.placement.retain(|_, h| h == "host-a");
        let provider = kvm2::Kvm2::new(config, link.clone());
        provider.set_verbosity(0);
        let client = open_client(&link).await;

        // One round trip as the link gives it (timer granularity included).
        let mut pings = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            client.connect_get_hostname().await.expect("hostname");
            pings.push(t.elapsed());
        }
        let one_rtt = median(pings);

        // Warm up: kvm2 dials and opens its connection on the first call.
        let ctx = Ctx::with_timeout(Duration::from_secs(300));
        let warm = provider.list_by_tag(&ctx, TAG).await.expect("list_by_tag");
        assert_eq!(
            warm.instances.len(),
            domains,
            "kvm2 lists every planted domain"
        );

        let mut rows = Vec::new();
        let trace = fake.trace();
        let before = trace.calls().len();
        let mut runs = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            let l = provider.list_by_tag(&ctx, TAG).await.expect("list_by_tag");
            runs.push(t.elapsed());
            assert_eq!(l.instances.len(), domains);
        }
        rows.push(Row {
            what: "kvm2 list_by_tag",
            calls: (trace.calls().len() - before) / repeats,
            runs: repeats,
            elapsed: median(runs),
        });

        // The same RPCs through our client: every call of a phase in flight,
        // then 64 and 5 in flight (kvm2's depth), then one at a time (one run
        // only: it is the slow one).
        let depths = [
            ("same RPCs, all in flight", domains + 1, repeats),
            ("same RPCs, 64 in flight", 64, repeats),
            ("same RPCs, 5 in flight", 5, 1),
            ("same RPCs, one at a time", 1, 1),
        ];
        for (what, depth, n) in depths {
            let mut runs = Vec::new();
            let mut calls = 0;
            for _ in 0..n {
                let t = Instant::now();
                let f = raw_listing(&client, depth).await;
                runs.push(t.elapsed());
                assert_eq!(f.domains, domains);
                calls = f.calls;
            }
            rows.push(Row {
                what,
                calls,
                runs: n,
                elapsed: median(runs),
            });
        }
        let sequential = rows[rows.len() - 1].elapsed;

        println!(
            "ListByTag: {domains} marked domains on one fake host, {} ms round trip injected \
             in the transport (measured one call: {:.1} ms), daemon works on 5 calls per client",
            round_trip.as_millis(),
            one_rtt.as_secs_f64() * 1e3
        );
        println!(
            "{:<28} {:>6} {:>5} {:>10} {:>11} {:>13}",
            "client",
            "calls",
            "runs",
            "ms",
            format!("x {} ms RTT", round_trip.as_millis()),
            "x measured RTT"
        );
        for r in &rows {
            println!(
                "{:<28} {:>6} {:>5} {:>10.1} {:>11.1} {:>13.1}",
                r.what,
                r.calls,
                r.runs,
                r.elapsed.as_secs_f64() * 1e3,
                r.elapsed.as_secs_f64() / round_trip.as_secs_f64(),
                r.elapsed.as_secs_f64() / one_rtt.as_secs_f64()
            );
        }
        let kvm2 = rows[0].elapsed.as_secs_f64();
        let all = rows[1].elapsed.as_secs_f64();
        let five = rows[3].elapsed.as_secs_f64();
        println!(
            "one at a time / kvm2 = {:.1}x; kvm2 / all in flight = {:.1}x; kvm2 / 5 in flight = {:.2}x",
            sequential.as_secs_f64() / kvm2,
            kvm2 / all,
            kvm2 / five
        );
        let rtts = kvm2 / round_trip.as_secs_f64();
        println!(
            "goal: kvm2 <= 10 round trips: {} ({rtts:.1} round trips)",
            if rtts <= 10.0 { "PASS" } else { "MISS" }
        );
        drop(client);
    });
}
