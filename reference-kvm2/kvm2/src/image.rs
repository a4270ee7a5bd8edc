//! The image cache on each host: a base image volume per configured image,
//! trusted only once its marker volume exists.
//!
//! A missing image is downloaded (Content-Length required), streamed into
//! `StorageVolUpload` on a connection of its own while a blocking thread hashes
//! the same buffers with SHA-256 ([`upload_hashed`]), the pool is
//! refreshed and the marker written last. A failed attempt deletes the partial
//! volume. Callers for one image on one host take turns, so the image is
//! fetched once; the second caller finds the marker.
//!
//! The download runs in a task of its own, shared by every Create that waits for
//! it: a caller whose call is cancelled returns at once and the download goes on
//! for the others; it is abandoned, and its partial volume deleted, only when no
//! caller waits any more.

use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use conformance::BoxFuture;
use futures_util::{Stream, StreamExt};
use libvirt_wire::{ErrorCode, STORAGE_VOL_DELETE_NORMAL, StoragePool};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::backend::{Session, rpc, rpc_once};
use crate::config::ImageConfig;
use crate::errors::Failure;
use crate::lookup::lookup_volume;
use crate::names::{image_marker, image_volume};
use crate::xml::raw_volume_xml;

/// A body being downloaded.
pub type Body = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// An image download that has started: its announced length and its body.
pub struct Download {
    /// The Content-Length.
    pub length: u64,
    /// The bytes.
    pub body: Body,
}

/// Where images come from (HTTP in production, memory in tests).
pub trait ImageSource: Send + Sync + 'static {
    /// Starts downloading `url`. A missing length or an HTTP 4xx is Permanent
    /// ([`Failure::Refused`]); 5xx and network errors are Transient ([`Failure::NotYet`]).
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Download, Failure>>;
}

/// Downloads over HTTP(S) with reqwest; the client is built on first use, so
/// constructing a provider reads nothing.
#[derive(Default)]
pub struct HttpSource {
    client: std::sync::OnceLock<reqwest::Client>,
}

impl ImageSource for HttpSource {
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Download, Failure>> {
        Box::pin(async move {
            let resp = self
                .client
                .get_or_init(reqwest::Client::new)
                .get(url)
                .send()
                .await
                .map_err(|e| Failure::NotYet(format!("image download of {url}: {e}")))?;
            let status = resp.status();
            if status.is_client_error() {
                return Err(Failure::Refused(format!(
                    "image download of {url}: http {status}"
                )));
            }
            if !status.is_success() {
                return Err(Failure::NotYet(format!(
                    "image download of {url}: http {status}"
                )));
            }
            let length = resp.content_length().ok_or_else(|| {
                Failure::Refused(format!("image download of {url}: no Content-Length"))
            })?;
            let body = resp
                .bytes_stream()
                .map(|r| r.map_err(std::io::Error::other));
            Ok(Download {
                length,
                body: Box::pin(body),
            })
        })
    }
}

/// Why a shared download failed, as every waiting caller sees it.
#[derive(Clone, Debug)]
pub(crate) enum FlightError {
    Quota(conformance::Quota),
    Permanent(String),
    Transient(String),
}

impl From<FlightError> for Failure {
    fn from(e: FlightError) -> Failure {
        match e {
            FlightError::Quota(q) => Failure::Quota(q),
            FlightError::Permanent(m) => Failure::Refused(m),
            FlightError::Transient(m) => Failure::NotYet(m),
        }
    }
}

fn flight_error(f: Failure) -> FlightError {
    match crate::errors::classify(conformance::Op::Create, &f) {
        conformance::ErrorKind::QuotaExceeded(q) => FlightError::Quota(q),
        conformance::ErrorKind::Permanent => FlightError::Permanent(f.to_string()),
        _ => FlightError::Transient(f.to_string()),
    }
}

type Outcome = Option<Result<(), FlightError>>;

/// One shared download; dropping the last handle abandons it.
pub(crate) struct Flight {
    done: tokio::sync::watch::Receiver<Outcome>,
    abandon: CancellationToken,
}

impl Drop for Flight {
    fn drop(&mut self) {
        self.abandon.cancel();
    }
}

/// The downloads in progress, by host and image.
#[derive(Default)]
pub(crate) struct Flights(Mutex<std::collections::HashMap<String, std::sync::Weak<Flight>>>);

impl Flights {
    /// Joins the download of `img` to `host`, starting it with `start` when none
    /// runs; `start` is handed the token that abandons the download once no
    /// caller waits any more.
    pub(crate) fn join(
        &self,
        host: &str,
        img: &ImageConfig,
        start: impl FnOnce(CancellationToken) -> BoxFuture<'static, Result<(), Failure>>,
    ) -> Arc<Flight> {
        let key = format!("{host}/{}", img.name);
        let mut map = self.0.lock().expect("flight table poisoned");
        if let Some(f) = map.get(&key).and_then(std::sync::Weak::upgrade) {
            return f;
        }
        let (tx, rx) = tokio::sync::watch::channel(None);
        let abandon = CancellationToken::new();
        let flight = Arc::new(Flight {
            done: rx,
            abandon: abandon.clone(),
        });
        map.insert(key, Arc::downgrade(&flight));
        // The flight's backend calls are traced under the operation that started it
        // (callers that join later wait on it without a span link).
        let span = tracing::info_span!("kvm2.image", host = %host, image = %img.name);
        let work = start(abandon);
        tokio::spawn(
            async move {
                let r = work.await.map_err(flight_error);
                let _ = tx.send(Some(r));
            }
            .instrument(span),
        );
        flight
    }
}

/// Waits for a shared download under the caller's context.
pub(crate) async fn wait(ctx: &conformance::Ctx, flight: &Flight) -> Result<(), Failure> {
    let mut rx = flight.done.clone();
    let r = ctx
        .run(rx.wait_for(Option::is_some))
        .await
        .map_err(Failure::Interrupted)?;
    match r {
        Ok(v) => v
            .clone()
            .expect("waited for a value")
            .map_err(Failure::from),
        Err(_) => Err(Failure::NotYet(
            "the image download ended without a result".into(),
        )),
    }
}

/// The download itself, on `up`, a connection of its own to the host: unless
/// `img` is cached by now, fetches it from `source`, checks that the pool holds
/// it and `needed` more, and stores it.
pub(crate) async fn fill(
    up: &Session<'_>,
    source: &dyn ImageSource,
    img: &ImageConfig,
    needed: u64,
) -> Result<(), Failure> {
    let host = up.host;
    let pool_name = up.config.pool.as_str();
    let pool = rpc!(up, StoragePoolLookupByName, |c| c
        .storage_pool_lookup_by_name(pool_name))?;
    if cached(up, &pool, img).await? {
        return Ok(());
    }
    // The HTTP request is the image's, not the operation's: its client library's
    // own log lines stay out of the operation's tiers (the span only follows it).
    let fetch = tracing::info_span!(parent: None, "kvm2.fetch", image = %img.name);
    fetch.follows_from(tracing::Span::current());
    let dl = up
        .ctx
        .run(source.fetch(&img.url).instrument(fetch))
        .await
        .map_err(Failure::Interrupted)??;
    let info = rpc!(up, StoragePoolGetInfo, |c| c.storage_pool_get_info(&pool))?;
    if info.available < needed + dl.length {
        return Err(Failure::Quota(conformance::Quota {
            what: format!("storage pool {pool_name} on {host}"),
            available: info.available,
            needed: needed + dl.length,
        }));
    }
    store(up, &pool, img, dl).await
}

/// Whether `img` is cached in `pool` (its marker exists).
pub(crate) async fn cached(
    s: &Session<'_>,
    pool: &StoragePool,
    img: &ImageConfig,
) -> Result<bool, Failure> {
    Ok(lookup_volume(s, pool, &image_marker(img)).await?.is_some())
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Streams `dl` into a new image volume on `up` (a connection of its own), checks
/// the digest, refreshes the pool and writes the marker last. Any failure after
/// the volume exists deletes it.
pub(crate) async fn store(
    up: &Session<'_>,
    pool: &StoragePool,
    img: &ImageConfig,
    dl: Download,
) -> Result<(), Failure> {
    let span = tracing::info_span!("kvm2.download", image = %img.name, bytes = dl.length);
    async {
        let name = image_volume(img);
        if let Some(stale) = lookup_volume(up, pool, &name).await? {
            rpc!(up, StorageVolDelete, |c| c
                .storage_vol_delete(&stale, STORAGE_VOL_DELETE_NORMAL))?;
        }
        let xml = raw_volume_xml(&name, dl.length, "qcow2");
        let vol = rpc!(up, StorageVolCreateXml, |c| c
            .storage_vol_create_xml(pool, &xml, 0))?;
        let r = upload(up, pool, img, &vol, dl).await;
        if r.is_err() {
            // Cleaned up on a context of its own: the download's may be cancelled.
            let cleanup = conformance::Ctx::with_timeout(up.config.timeouts.rpc);
            let _ = cleanup
                .run(
                    up.client()
                        .storage_vol_delete(&vol, STORAGE_VOL_DELETE_NORMAL),
                )
                .await;
        }
        r
    }
    .instrument(span)
    .await
}

/// Buffers waiting for the hashing thread, at most: enough that sending and
/// hashing overlap, few enough that memory stays flat.
const HASH_QUEUE: usize = 16;

/// Sends `body` through `upload` and finishes it, while a blocking thread
/// computes the body's SHA-256 from the same buffers (shared, not copied), so
/// hashing overlaps sending instead of delaying it. Returns the bytes sent
/// and the digest of exactly those bytes.
///
/// The hashing thread is fed through a bounded queue: a writer faster than
/// the hash waits for it, and the memory held stays a few buffers.
pub async fn upload_hashed(
    upload: libvirt_rpc::Upload,
    body: Body,
) -> Result<(u64, [u8; 32]), libvirt_rpc::Error> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(HASH_QUEUE);
    let hasher = tokio::task::spawn_blocking(move || {
        let mut h = Sha256::new();
        while let Some(b) = rx.blocking_recv() {
            h.update(&b);
        }
        let digest: [u8; 32] = h.finalize().into();
        digest
    });
    let body = body.then(move |r| {
        let tx = tx.clone();
        async move {
            if let Ok(b) = &r
                && tx.send(b.clone()).await.is_err()
            {
                return Err(std::io::Error::other("the hashing thread stopped"));
            }
            r
        }
    });
    // `send_stream` drops the body, and with it the queue's sender, when it
    // returns: the hashing thread then ends, whatever the outcome.
    let sent = upload.send_stream(body).await?;
    let digest = hasher
        .await
        .map_err(|e| libvirt_rpc::Error::from_source(format!("the hashing thread failed: {e}")))?;
    Ok((sent, digest))
}

async fn upload(
    up: &Session<'_>,
    pool: &StoragePool,
    img: &ImageConfig,
    vol: &libvirt_wire::StorageVol,
    dl: Download,
) -> Result<(), Failure> {
    let len = dl.length;
    let body = dl.body;
    let (sent, digest) = rpc_once!(
        up,
        StorageVolUpload,
        up.config.timeouts.upload,
        |c| async move {
            let u = c.storage_vol_upload(vol, 0, len, 0).await?;
            upload_hashed(u, body).await
        }
    )?;
    if sent != len {
        return Err(Failure::NotYet(format!(
            "image {}: got {sent} bytes, Content-Length said {len}",
            img.name
        )));
    }
    let digest = hex(&digest);
    if let Some(want) = &img.sha256
        && !want.eq_ignore_ascii_case(&digest)
    {
        return Err(Failure::Refused(format!(
            "image {}: sha256 {digest} does not match the configured {want}",
            img.name
        )));
    }
    match rpc!(up, StoragePoolRefresh, |c| c.storage_pool_refresh(pool)) {
        Ok(()) => {}
        Err(f) if f.is(ErrorCode::OperationInvalid) => {}
        Err(f) => return Err(f),
    }
    let marker = image_marker(img);
    let xml = raw_volume_xml(&marker, 0, "raw");
    rpc!(up, StorageVolCreateXml, |c| c
        .storage_vol_create_xml(pool, &xml, 0))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use conformance::{CloudInit, CreateRequest, Ctx, Provider};
    use libvirt_fake::FakeLibvirt;

    use super::*;
    use crate::config::{Config, HostConfig};
    use crate::dialer::{DialError, Dialer, Stream};
    use crate::fixture::Kvm2Fixture;
    use crate::provider::Kvm2;

    struct Pipe(FakeLibvirt);

    impl Dialer for Pipe {
        fn dial<'a>(&'a self, _: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
            Box::pin(async move { Ok(Box::new(self.0.duplex()) as Stream) })
        }
    }

    struct Mem {
        data: Bytes,
        length: Option<u64>,
        fetches: AtomicU32,
        pause: std::time::Duration,
    }

    impl ImageSource for Mem {
        fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Download, Failure>> {
            Box::pin(async move {
                self.fetches.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(self.pause).await;
                let length = self.length.ok_or_else(|| {
                    Failure::Refused(format!("image download of {url}: no Content-Length"))
                })?;
                let chunks: Vec<Result<Bytes, std::io::Error>> = self
                    .data
                    .chunks(100_000)
                    .map(|c| Ok(Bytes::copy_from_slice(c)))
                    .collect();
                Ok(Download {
                    length,
                    body: Box::pin(futures_util::stream::iter(chunks)),
                })
            })
        }
    }

    fn setup(sha256: Option<String>, length: Option<u64>) -> (FakeLibvirt, Kvm2, Arc<Mem>, Config) {
        let fake = FakeLibvirt::new();
        fake.add_pool("default", "/var/lib/libvirt/images", 100 << 30);
        let mut config = Kvm2Fixture::default().config();
        config.hosts.truncate(1);
        config.placement.retain(|_, h| h == "host-a");
        config.images[0].sha256 = sha256;
        let data = Bytes::from(vec![7u8; 1_500_000]);
        let mem = Arc::new(Mem {
            length,
            data,
            fetches: AtomicU32::new(0),
            pause: std::time::Duration::from_millis(20),
        });
        let p =
            Kvm2::new(config.clone(), Arc::new(Pipe(fake.clone()))).with_image_source(mem.clone());
        (fake, p, mem, config)
    }

    const LEN: u64 = 1_500_000;

    fn req(name: &str) -> CreateRequest {
        CreateRequest {
            name: name.into(),
            uid: "u-1".into(),
            tag: "t".into(),
            placement: "zone-a".into(),
            image: None,
            cloud_init: CloudInit::new("#cloud-config\n"),
        }
    }

    fn digest(data: &[u8]) -> String {
        hex(&Sha256::digest(data))
    }

    #[tokio::test]
    async fn downloads_once_verifies_and_writes_the_marker_last() {
        use libvirt_fake::{Fault, FaultRule};
        use libvirt_wire::Procedure;
        let sum = digest(&[7u8; 1_500_000]);
        let (fake, p, mem, config) = setup(Some(sum.clone()), Some(LEN));
        let img = &config.images[0];
        // The call that creates the marker volume itself, found by the volume's
        // name: a fault bound to that name which changes nothing (no delay) marks
        // it in the trace.
        let marker_tag = fake.faults().add(
            FaultRule::on(
                Procedure::StorageVolCreateXml,
                Fault::Delay(std::time::Duration::ZERO),
            )
            .on_object(image_marker(img)),
        );
        let ctx = Ctx::with_timeout(std::time::Duration::from_secs(20));
        let (ra, rb) = (req("vm-a"), req("vm-b"));
        let (a, b) = tokio::join!(p.create(&ctx, &ra), p.create(&ctx, &rb));
        a.unwrap();
        b.unwrap();
        assert_eq!(mem.fetches.load(Ordering::SeqCst), 1);
        let vol = fake.volume("default", &image_volume(img)).unwrap();
        assert_eq!(vol.content.sha256_hex(), sum);
        assert!(fake.volume("default", &image_marker(img)).is_some());
        assert_eq!(marker_tag.fire_count(), 1, "the marker is created once");
        let calls = fake.trace().calls();
        let position = |what: &str, hit: &dyn Fn(&libvirt_fake::TraceEntry) -> bool| {
            let found: Vec<usize> = (0..calls.len()).filter(|&i| hit(&calls[i])).collect();
            assert_eq!(found.len(), 1, "one {what}: {calls:?}");
            found[0]
        };
        let marker = position("marker create", &|c| {
            c.procedure == Procedure::StorageVolCreateXml && c.fault.as_deref() == Some("delay")
        });
        // The image's own upload and refresh, on the download's connection (each
        // Create uploads its seed on the operations' connection).
        let conn = calls[marker].connection;
        let upload = position("image upload", &|c| {
            c.connection == conn && c.procedure == Procedure::StorageVolUpload
        });
        let refresh = position("pool refresh", &|c| {
            c.connection == conn && c.procedure == Procedure::StoragePoolRefresh
        });
        assert!(
            upload < refresh && refresh < marker,
            "upload {upload}, refresh {refresh}, marker {marker}: {calls:?}"
        );
        p.create(&ctx, &req("vm-c")).await.unwrap();
        assert_eq!(
            mem.fetches.load(Ordering::SeqCst),
            1,
            "cached: no second download"
        );
    }

    #[tokio::test]
    async fn a_digest_mismatch_is_permanent_and_leaves_no_volume() {
        let (fake, p, _, config) = setup(Some("0".repeat(64)), Some(LEN));
        let ctx = Ctx::with_timeout(std::time::Duration::from_secs(20));
        let e = p.create(&ctx, &req("vm-a")).await.unwrap_err();
        assert!(e.is_permanent(), "{e}");
        let img = &config.images[0];
        assert!(fake.volume("default", &image_volume(img)).is_none());
        assert!(fake.volume("default", &image_marker(img)).is_none());
    }

    #[tokio::test]
    async fn no_content_length_is_permanent() {
        let (fake, p, _, _) = setup(None, None);
        let ctx = Ctx::with_timeout(std::time::Duration::from_secs(20));
        let e = p.create(&ctx, &req("vm-a")).await.unwrap_err();
        assert!(e.is_permanent(), "{e}");
        assert!(fake.volumes("default").unwrap().is_empty());
    }

    #[tokio::test]
    async fn too_little_space_for_image_and_disk_is_quota() {
        let (fake, p, mem, _) = setup(None, Some(LEN));
        fake.set_pool_available("default", 10 << 30).unwrap();
        let ctx = Ctx::with_timeout(std::time::Duration::from_secs(20));
        let e = p.create(&ctx, &req("vm-a")).await.unwrap_err();
        let q = e.quota_fields().expect("quota");
        assert_eq!(q.needed, (10 << 30) + (16 << 20) + 1_500_000);
        assert_eq!(mem.fetches.load(Ordering::SeqCst), 1);
        assert!(fake.volumes("default").unwrap().is_empty());
    }

    fn slow(p: &Kvm2, fake: &FakeLibvirt) -> (Kvm2, Arc<Mem>) {
        let mem = Arc::new(Mem {
            data: Bytes::from(vec![7u8; LEN as usize]),
            length: Some(LEN),
            fetches: AtomicU32::new(0),
            pause: std::time::Duration::from_millis(400),
        });
        let p = Kvm2::new(p.config().clone(), Arc::new(Pipe(fake.clone())))
            .with_image_source(mem.clone());
        (p, mem)
    }

    #[tokio::test]
    async fn a_cancelled_caller_returns_at_once_and_the_download_goes_on() {
        let (fake, p0, _, config) = setup(None, Some(LEN));
        let (p, mem) = slow(&p0, &fake);
        let (ra, rb) = (req("vm-a"), req("vm-b"));
        let short = Ctx::with_timeout(std::time::Duration::from_millis(100));
        let long = Ctx::with_timeout(std::time::Duration::from_secs(20));
        let t = std::time::Instant::now();
        let (a, b) = tokio::join!(p.create(&short, &ra), p.create(&long, &rb));
        assert!(a.unwrap_err().is_transient());
        b.unwrap();
        assert!(t.elapsed() >= std::time::Duration::from_millis(400));
        assert_eq!(mem.fetches.load(Ordering::SeqCst), 1);
        assert!(
            fake.volume("default", &image_marker(&config.images[0]))
                .is_some()
        );
    }

    #[tokio::test]
    async fn a_download_nobody_waits_for_is_abandoned() {
        let (fake, p0, _, config) = setup(None, Some(LEN));
        let (p, _) = slow(&p0, &fake);
        let short = Ctx::with_timeout(std::time::Duration::from_millis(100));
        assert!(p.create(&short, &req("vm-a")).await.is_err());
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        let img = &config.images[0];
        assert!(fake.volume("default", &image_marker(img)).is_none());
        assert!(fake.volume("default", &image_volume(img)).is_none());
    }
}
