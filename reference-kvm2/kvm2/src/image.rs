//! The image cache on each host: a base image volume per configured image,
//! trusted only once its marker volume exists.
//!
//! A missing image is downloaded (Content-Length required), streamed through
//! SHA-256 into `StorageVolUpload` on a connection of its own, the pool is
//! refreshed and the marker written last. A failed attempt deletes the partial
//! volume. Callers for one image on one host take turns, so the image is
//! fetched once; the second caller finds the marker.
//!
//! Known gap: the download runs in the task of the caller that started it, so
//! cancelling that caller abandons the download (the next attempt starts over)
//! even when another caller is waiting.

use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use conformance::BoxFuture;
use futures_util::{Stream, StreamExt};
use libvirt_wire::{ErrorCode, STORAGE_VOL_DELETE_NORMAL, StoragePool};
use sha2::{Digest, Sha256};
use tracing::Instrument;

use crate::backend::{Session, rpc, rpc_once};
use crate::config::ImageConfig;
use crate::create::lookup_volume;
use crate::errors::Failure;
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
            rpc!(up, "StorageVolDelete", |c| c
                .storage_vol_delete(&stale, STORAGE_VOL_DELETE_NORMAL))?;
        }
        let xml = raw_volume_xml(&name, dl.length, "qcow2");
        let vol = rpc!(up, "StorageVolCreateXML", |c| c
            .storage_vol_create_xml(pool, &xml, 0))?;
        let r = upload(up, pool, img, &vol, dl).await;
        if r.is_err() {
            let _ = rpc!(up, "StorageVolDelete", |c| c
                .storage_vol_delete(&vol, STORAGE_VOL_DELETE_NORMAL));
        }
        r
    }
    .instrument(span)
    .await
}

async fn upload(
    up: &Session<'_>,
    pool: &StoragePool,
    img: &ImageConfig,
    vol: &libvirt_wire::StorageVol,
    dl: Download,
) -> Result<(), Failure> {
    let hasher = Arc::new(Mutex::new(Sha256::new()));
    let h = hasher.clone();
    let body = dl.body.map(move |r| {
        if let Ok(b) = &r {
            h.lock().expect("hasher poisoned").update(b);
        }
        r
    });
    let len = dl.length;
    let sent = rpc_once!(
        up,
        "StorageVolUpload",
        up.config.timeouts.upload,
        |c| async move {
            let u = c.storage_vol_upload(vol, 0, len, 0).await?;
            u.send_stream(body).await
        }
    )?;
    if sent != len {
        return Err(Failure::NotYet(format!(
            "image {}: got {sent} bytes, Content-Length said {len}",
            img.name
        )));
    }
    let digest = hex(&hasher.lock().expect("hasher poisoned").clone().finalize());
    if let Some(want) = &img.sha256
        && !want.eq_ignore_ascii_case(&digest)
    {
        return Err(Failure::Refused(format!(
            "image {}: sha256 {digest} does not match the configured {want}",
            img.name
        )));
    }
    match rpc!(up, "StoragePoolRefresh", |c| c.storage_pool_refresh(pool)) {
        Ok(()) => {}
        Err(f) if f.is(ErrorCode::OperationInvalid) => {}
        Err(f) => return Err(f),
    }
    let marker = image_marker(img);
    let xml = raw_volume_xml(&marker, 0, "raw");
    rpc!(up, "StorageVolCreateXML", |c| c
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
    }

    impl ImageSource for Mem {
        fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Download, Failure>> {
            Box::pin(async move {
                self.fetches.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
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
        let sum = digest(&[7u8; 1_500_000]);
        let (fake, p, mem, config) = setup(Some(sum.clone()), Some(LEN));
        let ctx = Ctx::with_timeout(std::time::Duration::from_secs(20));
        let (ra, rb) = (req("vm-a"), req("vm-b"));
        let (a, b) = tokio::join!(p.create(&ctx, &ra), p.create(&ctx, &rb));
        a.unwrap();
        b.unwrap();
        assert_eq!(mem.fetches.load(Ordering::SeqCst), 1);
        let img = &config.images[0];
        let vol = fake.volume("default", &image_volume(img)).unwrap();
        assert_eq!(vol.content.sha256_hex(), sum);
        assert!(fake.volume("default", &image_marker(img)).is_some());
        let marker_call = fake
            .trace()
            .calls()
            .iter()
            .rposition(|c| c.procedure == libvirt_fake::Procedure::StorageVolCreateXml && c.seq > 0)
            .unwrap();
        let upload_call = fake
            .trace()
            .calls()
            .iter()
            .position(|c| c.procedure == libvirt_fake::Procedure::StorageVolUpload)
            .unwrap();
        assert!(upload_call < marker_call);
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
}
