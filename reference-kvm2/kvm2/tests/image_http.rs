//! kvm2's production image download (`HttpSource`, reqwest) against the loopback
//! image server of `fakes/image-server` in every mode, on its own and through the
//! provider's Create path into the in-memory libvirt fake.

use std::sync::Arc;
use std::time::{Duration, Instant};

use conformance::{BoxFuture, CloudInit, CreateRequest, Ctx, Provider};
use futures_util::StreamExt;
use image_server::{ImageServer, Mode};
use kvm2::config::HostConfig;
use kvm2::fixture::Kvm2Fixture;
use kvm2::names::{image_marker, image_volume};
use kvm2::{Config, DialError, Dialer, Failure, HttpSource, ImageSource, Kvm2};
use libvirt_fake::FakeLibvirt;
use libvirt_wire::Procedure;
use sha2::{Digest, Sha256};

const POOL: &str = "default";
const PATH: &str = "/tiny.qcow2";

/// One in-memory pipe to the fake per dial.
struct Pipe(FakeLibvirt);

impl Dialer for Pipe {
    fn dial<'a>(
        &'a self,
        _: &'a HostConfig,
    ) -> BoxFuture<'a, Result<kvm2::dialer::Stream, DialError>> {
        Box::pin(async move { Ok(Box::new(self.0.duplex()) as kvm2::dialer::Stream) })
    }
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 253) as u8).collect()
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest(d: &[u8]) -> String {
    hex(&Sha256::digest(d))
}

/// A fake host with an empty pool, and kvm2 on it whose only image is `url`,
/// downloaded with the production `HttpSource`.
struct Setup {
    fake: FakeLibvirt,
    provider: Kvm2,
    config: Config,
}

fn setup(url: String, sha256: Option<String>) -> Setup {
    let fake = FakeLibvirt::new();
    fake.add_pool(POOL, "/var/lib/libvirt/images", 100 << 30);
    let mut config = Kvm2Fixture::default().config();
    config.hosts.truncate(1);
    config.placement.retain(|_, h| h == "host-a");
    config.images[0].url = url;
    config.images[0].sha256 = sha256;
    let provider = Kvm2::new(config.clone(), Arc::new(Pipe(fake.clone())))
        .with_image_source(Arc::new(HttpSource::default()));
    Setup {
        fake,
        provider,
        config,
    }
}

impl Setup {
    fn image_volume(&self) -> Option<libvirt_fake::VolumeSnapshot> {
        self.fake
            .volume(POOL, &image_volume(&self.config.images[0]))
    }

    fn marker(&self) -> bool {
        self.fake
            .volume(POOL, &image_marker(&self.config.images[0]))
            .is_some()
    }

    fn no_volumes(&self) -> bool {
        self.fake.volumes(POOL).unwrap_or_default().is_empty()
    }

    /// How many times the fake saw `p`.
    fn calls(&self, p: Procedure) -> usize {
        self.fake
            .trace()
            .calls()
            .iter()
            .filter(|c| c.procedure == p)
            .count()
    }
}

fn req(name: &str) -> CreateRequest {
    CreateRequest {
        name: name.into(),
        uid: format!("uid-{name}"),
        tag: "image-http".into(),
        placement: "zone-a".into(),
        image: None,
        cloud_init: CloudInit::new("#cloud-config\n"),
    }
}

fn ctx() -> Ctx {
    Ctx::with_timeout(Duration::from_secs(30))
}

async fn fetch_err(url: &str) -> Failure {
    match HttpSource::default().fetch(url).await {
        Ok(d) => panic!(
            "{url}: expected a failure, got a body of {} bytes",
            d.length
        ),
        Err(f) => f,
    }
}

#[tokio::test]
async fn a_normal_image_arrives_whole_and_verified_and_is_fetched_once() {
    let server = ImageServer::start().await.unwrap();
    let bytes = data(2_500_000);
    server.add(PATH, bytes.clone());

    // The source on its own: the announced length and the very bytes.
    let dl = HttpSource::default()
        .fetch(&server.url_for(PATH))
        .await
        .unwrap();
    assert_eq!(dl.length, bytes.len() as u64);
    let mut got = Vec::new();
    let mut body = dl.body;
    while let Some(chunk) = body.next().await {
        got.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(got, bytes);

    // Through Create: the volume holds the bytes, the configured digest matched,
    // the marker is there, and two concurrent Creates plus a later one fetch once.
    let s = setup(server.url_for(PATH), Some(digest(&bytes)));
    let (c1, c2) = (ctx(), ctx());
    let (ra, rb) = (req("vm-a"), req("vm-b"));
    let (a, b) = tokio::join!(s.provider.create(&c1, &ra), s.provider.create(&c2, &rb));
    a.unwrap();
    b.unwrap();
    s.provider.create(&ctx(), &req("vm-c")).await.unwrap();
    let vol = s.image_volume().expect("image volume");
    assert_eq!(vol.content.sha256_hex(), digest(&bytes));
    assert!(s.marker());
    assert_eq!(
        server.requests(PATH),
        2,
        "one fetch above, one for the Creates"
    );
}

#[tokio::test]
async fn a_file_served_from_disk_streams_into_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.qcow2");
    let bytes = data(8 << 20);
    std::fs::write(&file, &bytes).unwrap();
    let server = ImageServer::start().await.unwrap();
    server.add_file(PATH, &file);
    let s = setup(server.url_for(PATH), Some(digest(&bytes)));
    let t = Instant::now();
    s.provider.create(&ctx(), &req("vm-a")).await.unwrap();
    eprintln!(
        "8 MiB image from disk cached and instance created in {:?}",
        t.elapsed()
    );
    assert_eq!(
        s.image_volume().unwrap().content.sha256_hex(),
        digest(&bytes)
    );
}

#[tokio::test]
async fn a_digest_mismatch_is_permanent_and_leaves_no_volume() {
    let server = ImageServer::start().await.unwrap();
    server.add(PATH, data(300_000));
    let s = setup(server.url_for(PATH), Some("ab".repeat(32)));
    let e = s.provider.create(&ctx(), &req("vm-a")).await.unwrap_err();
    assert!(e.is_permanent(), "{e}");
    assert!(s.no_volumes(), "{:?}", s.fake.volumes(POOL));
}

#[tokio::test]
async fn no_content_length_is_permanent() {
    let server = ImageServer::start().await.unwrap();
    server.add(PATH, data(300_000));
    server.set_mode(PATH, Mode::NoLength);
    let f = fetch_err(&server.url_for(PATH)).await;
    assert!(matches!(f, Failure::Refused(_)), "{f}");
    assert!(f.to_string().contains("Content-Length"), "{f}");

    let s = setup(server.url_for(PATH), None);
    let e = s.provider.create(&ctx(), &req("vm-a")).await.unwrap_err();
    assert!(e.is_permanent(), "{e}");
    assert!(s.no_volumes());
    assert!(s.fake.domain("vm-a").is_none());
}

#[tokio::test]
async fn http_404_is_permanent() {
    let server = ImageServer::start().await.unwrap();
    server.set_mode(PATH, Mode::NotFound);
    let f = fetch_err(&server.url_for(PATH)).await;
    assert!(matches!(f, Failure::Refused(_)), "{f}");
    assert!(f.to_string().contains("404"), "{f}");
    let f = fetch_err(&server.url_for("/never-registered")).await;
    assert!(matches!(f, Failure::Refused(_)), "{f}");

    let s = setup(server.url_for(PATH), None);
    let e = s.provider.create(&ctx(), &req("vm-a")).await.unwrap_err();
    assert!(e.is_permanent(), "{e}");
    assert!(s.no_volumes());
}

#[tokio::test]
async fn http_503_is_transient_and_the_next_create_completes() {
    let server = ImageServer::start().await.unwrap();
    let bytes = data(400_000);
    server.add(PATH, bytes.clone());
    server.set_mode(PATH, Mode::Unavailable);
    let f = fetch_err(&server.url_for(PATH)).await;
    assert!(matches!(f, Failure::NotYet(_)), "{f}");
    assert!(f.to_string().contains("503"), "{f}");

    let s = setup(server.url_for(PATH), Some(digest(&bytes)));
    let e = s.provider.create(&ctx(), &req("vm-a")).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    assert!(s.no_volumes());
    server.set_mode(PATH, Mode::Normal);
    s.provider.create(&ctx(), &req("vm-a")).await.unwrap();
    assert!(s.marker());
}

#[tokio::test]
async fn a_body_cut_mid_stream_fails_and_leaves_no_partial_volume() {
    let server = ImageServer::start().await.unwrap();
    let bytes = data(3_000_000);
    server.add(PATH, bytes.clone());
    server.set_mode(PATH, Mode::Cut { after: 1_000_000 });

    // The source announces the full length; the body breaks off.
    let dl = HttpSource::default()
        .fetch(&server.url_for(PATH))
        .await
        .unwrap();
    assert_eq!(dl.length, 3_000_000);
    let mut body = dl.body;
    let (mut got, mut broke) = (0usize, false);
    while let Some(chunk) = body.next().await {
        match chunk {
            Ok(c) => got += c.len(),
            Err(_) => {
                broke = true;
                break;
            }
        }
    }
    assert!(broke, "a cut body ends in an error, not a clean end");
    assert!(got <= 1_000_000);

    // Through Create: an error, no image volume, no marker, no instance left over;
    // a retry once the server is whole completes.
    let s = setup(server.url_for(PATH), None);
    let e = s.provider.create(&ctx(), &req("vm-a")).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    // The volume was made and the upload begun, then the volume deleted.
    assert_eq!(s.calls(Procedure::StorageVolUpload), 1);
    assert_eq!(s.calls(Procedure::StorageVolDelete), 1);
    assert!(s.image_volume().is_none());
    assert!(!s.marker());
    assert!(s.no_volumes(), "{:?}", s.fake.volumes(POOL));
    assert!(s.fake.domain("vm-a").is_none());
    server.set_mode(PATH, Mode::Normal);
    s.provider.create(&ctx(), &req("vm-a")).await.unwrap();
    assert_eq!(
        s.image_volume().unwrap().content.sha256_hex(),
        digest(&bytes)
    );
}

fn slow(server: &ImageServer, bytes: Vec<u8>) {
    server.add(PATH, bytes);
    server.set_mode(
        PATH,
        Mode::Slow {
            chunk: 100_000,
            delay: Duration::from_millis(50),
        },
    );
}

#[tokio::test]
async fn a_cancelled_caller_returns_promptly_while_the_download_goes_on_for_others() {
    let server = ImageServer::start().await.unwrap();
    let bytes = data(1_500_000);
    slow(&server, bytes.clone());
    let s = setup(server.url_for(PATH), Some(digest(&bytes)));
    let (short, cancel) = {
        let c = ctx();
        let token = c.token().clone();
        (c, token)
    };
    let patient = ctx();
    let (ra, rb) = (req("vm-a"), req("vm-b"));
    let started = Instant::now();
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
        Instant::now()
    };
    let quick = async {
        let r = s.provider.create(&short, &ra).await;
        (r, Instant::now())
    };
    let ((a, a_done), b, cancelled_at) =
        tokio::join!(quick, s.provider.create(&patient, &rb), canceller);
    let returned_after = a_done.duration_since(cancelled_at);
    eprintln!(
        "cancelled caller returned {returned_after:?} after cancellation; \
         patient caller done after {:?}",
        started.elapsed()
    );
    assert!(a.is_err(), "the cancelled Create fails");
    assert!(
        returned_after < Duration::from_millis(300),
        "{returned_after:?}"
    );
    b.unwrap();
    // 15 chunks, 14 pauses of 50 ms: the download outlived the cancelled caller.
    assert!(started.elapsed() >= Duration::from_millis(700));
    assert_eq!(server.requests(PATH), 1);
    assert_eq!(
        s.image_volume().unwrap().content.sha256_hex(),
        digest(&bytes)
    );
}

#[tokio::test]
async fn a_slow_download_nobody_waits_for_is_abandoned_and_cleaned_up() {
    let server = ImageServer::start().await.unwrap();
    slow(&server, data(1_500_000));
    let s = setup(server.url_for(PATH), None);
    let short = Ctx::with_timeout(Duration::from_millis(300));
    let t = Instant::now();
    let e = s.provider.create(&short, &req("vm-a")).await.unwrap_err();
    let took = t.elapsed();
    eprintln!("caller with a 300 ms deadline returned after {took:?}");
    assert!(e.is_transient(), "{e}");
    assert!(took < Duration::from_millis(800), "{took:?}");
    assert!(
        s.image_volume().is_some(),
        "the upload is under way when the caller leaves"
    );
    // The partial volume goes once the abandoned download notices.
    let gone = async {
        while !s.no_volumes() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let left = Instant::now();
    tokio::time::timeout(Duration::from_secs(3), gone)
        .await
        .unwrap_or_else(|_| panic!("left behind: {:?}", s.fake.volumes(POOL)));
    eprintln!(
        "abandoned download's partial volume deleted {:?} after the caller left",
        left.elapsed()
    );
    assert!(!s.marker());
    assert_eq!(s.calls(Procedure::StorageVolDelete), 1);
    assert_eq!(server.requests(PATH), 1);
}

/// A Create cut off by a libvirtd restart leaves the guest shut off with reason
/// "daemon": the next Create starts it again and converges on the same ID. A guest
/// shut off by someone else's shutdown is not restarted behind their back.
#[tokio::test]
async fn the_next_create_restarts_a_guest_a_daemon_restart_shut_off() {
    use libvirt_wire::DomainState;
    let server = ImageServer::start().await.unwrap();
    let bytes = data(300_000);
    server.add(PATH, bytes.clone());
    let s = setup(server.url_for(PATH), Some(digest(&bytes)));
    let id = s.provider.create(&ctx(), &req("vm-d")).await.unwrap();
    // VIR_DOMAIN_SHUTOFF_DAEMON
    s.fake
        .set_domain_state("vm-d", DomainState::Shutoff, 8)
        .unwrap();
    let again = s.provider.create(&ctx(), &req("vm-d")).await.unwrap();
    assert_eq!(again, id);
    assert_eq!(s.fake.domain("vm-d").unwrap().state, DomainState::Running);
    // VIR_DOMAIN_SHUTOFF_SHUTDOWN
    s.fake
        .set_domain_state("vm-d", DomainState::Shutoff, 1)
        .unwrap();
    let e = s.provider.create(&ctx(), &req("vm-d")).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    assert_eq!(s.fake.domain("vm-d").unwrap().state, DomainState::Shutoff);
}

/// An image whose bytes never reach its volume boots nothing: kvm2 accepts an
/// empty image whose digest matches (the digest of nothing), but the fake, as
/// QEMU, gives a guest over it no address, so Create runs into its deadline
/// (Transient) and the instance stays Provisioning. The same Create over an
/// image with bytes gets its address.
#[tokio::test]
async fn a_guest_over_an_image_that_holds_nothing_never_gets_an_address() {
    let server = ImageServer::start().await.unwrap();
    server.add(PATH, Vec::new());
    let s = setup(server.url_for(PATH), Some(digest(&[])));
    let short = Ctx::with_timeout(Duration::from_secs(2));
    let e = s
        .provider
        .create(&short, &req("vm-empty"))
        .await
        .unwrap_err();
    assert!(e.is_transient(), "{e}");
    assert_eq!(s.image_volume().expect("image volume").content.size(), 0);
    let id = kvm2::id::format_id("host-a", "vm-empty");
    let got = s.provider.get(&ctx(), &id).await.unwrap();
    assert_eq!(got.state, conformance::State::Provisioning, "{got:?}");
    assert_eq!(got.ipv4, None, "{got:?}");

    let server = ImageServer::start().await.unwrap();
    let bytes = data(4096);
    server.add(PATH, bytes.clone());
    let s = setup(server.url_for(PATH), Some(digest(&bytes)));
    let id = s.provider.create(&ctx(), &req("vm-full")).await.unwrap();
    let got = s.provider.get(&ctx(), &id).await.unwrap();
    assert_eq!(got.state, conformance::State::Running, "{got:?}");
    assert!(got.ipv4.is_some(), "{got:?}");
}
