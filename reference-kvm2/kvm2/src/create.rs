//! Create: the adoption guard, the quota precheck, the volumes, the define with
//! the mark, the start, and the wait for an address under the overall deadline.
//!
//! Every step first looks for what an interrupted earlier attempt left, so a
//! repeated Create completes the same instance instead of doubling anything.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use conformance::{CreateRequest, Ctx, Interrupted, ProviderId, Quota, validate_request};
use libvirt_wire::{
    DOMAIN_AFFECT_LIVE, DOMAIN_METADATA_ELEMENT, Domain, DomainState, ErrorCode, StoragePool,
    StoragePoolState, StorageVol,
};

use crate::backend::{Session, rpc};
use crate::config::ImageConfig;
use crate::errors::Failure;
use crate::id::format_id;
use crate::image;
use crate::lookup::{MarkRead, address, lookup_domain, lookup_volume, read_mark};
use crate::names::{image_volume, overlay_volume, seed_volume};
use crate::provider::Kvm2;
use crate::seed::{SeedData, seed_iso};
use crate::state::may_have_address;
use crate::xml::{
    DomainSpec, METADATA_KEY, Mark, domain_define_xml, metadata_element, overlay_volume_xml,
    raw_volume_xml,
};

/// Headroom the quota precheck adds to what a new instance needs.
const HEADROOM: u64 = 16 << 20;

/// The disks a new domain is defined with, found or made.
struct Disks {
    /// The pool they live in (the seed goes there too).
    pool: StoragePool,
    /// The root overlay's path.
    root_path: String,
}

/// Creates a volume, or finds the one a concurrent creator just made.
async fn create_volume(
    s: &Session<'_>,
    pool: &StoragePool,
    name: &str,
    xml: &str,
) -> Result<StorageVol, Failure> {
    match rpc!(s, StorageVolCreateXml, |c| c
        .storage_vol_create_xml(pool, xml, 0))
    {
        Ok(v) => Ok(v),
        Err(f) if f.is(ErrorCode::StorageVolExist) || f.is(ErrorCode::OperationFailed) => {
            lookup_volume(s, pool, name).await?.ok_or(f)
        }
        Err(f) => Err(f),
    }
}

impl Kvm2 {
    pub(crate) async fn create_impl(
        &self,
        ctx: &Ctx,
        req: &CreateRequest,
    ) -> Result<ProviderId, Failure> {
        validate_request(req).map_err(|e| Failure::Refused(e.to_string()))?;
        let cfg = &self.inner.config;
        let host = cfg
            .host_for_zone(&req.placement)
            .ok_or_else(|| Failure::Refused(format!("unknown placement {:?}", req.placement)))?
            .name
            .clone();
        let image = cfg
            .image(req.image.as_deref())
            .ok_or_else(|| Failure::Refused(format!("unknown image {:?}", req.image)))?;
        let _guard = self.lock_name(ctx, format!("{host}/{}", req.name)).await?;
        let cctx = ctx.narrowed(cfg.timeouts.create);
        match self.create_steps(&cctx, req, &host, image).await {
            Err(Failure::Interrupted(Interrupted::DeadlineExceeded))
                if ctx.interrupted().is_none() =>
            {
                Err(Failure::NotYet(format!(
                    "{} on {host} is not running with an address within {:?}; the next create resumes it",
                    req.name, cfg.timeouts.create
                )))
            }
            other => other,
        }
    }

    /// Create's steps, in order: resume the domain an earlier attempt left (or refuse
    /// one that is not ours), else ensure the disks, write the seed, define and start,
    /// and wait for an address.
    async fn create_steps(
        &self,
        ctx: &Ctx,
        req: &CreateRequest,
        host: &str,
        image: &ImageConfig,
    ) -> Result<ProviderId, Failure> {
        let s = self.session(ctx, host).await?;
        let id = format_id(host, &req.name);
        if let Some(dom) = lookup_domain(&s, &req.name).await? {
            self.resume_existing(&s, host, req, dom).await?;
            return Ok(id);
        }
        let disks = self.ensure_disks(&s, host, req, image).await?;
        let seed_path = self.write_seed(&s, &disks.pool, req).await?;
        let dom = self
            .define_and_start(&s, req, image, disks.root_path, seed_path)
            .await?;
        self.wait_for_address(&s, &dom).await?;
        Ok(id)
    }

    /// A domain of the requested name exists: refused unless it carries our mark for
    /// this owner; started again if an interrupted attempt (or Delete) left it down;
    /// then waited for like a new one.
    async fn resume_existing(
        &self,
        s: &Session<'_>,
        host: &str,
        req: &CreateRequest,
        dom: Domain,
    ) -> Result<(), Failure> {
        match read_mark(s, &dom).await? {
            MarkRead::Unmarked => {
                return Err(Failure::Refused(format!(
                    "domain {} on {host} exists without kvm2's mark; it is left alone",
                    req.name
                )));
            }
            MarkRead::Unreadable(e) => {
                return Err(Failure::Refused(format!(
                    "domain {} on {host} exists and its mark is unreadable ({e}); it is left alone",
                    req.name
                )));
            }
            MarkRead::Marked(m) if !m.uid.is_empty() && m.uid != req.uid => {
                return Err(Failure::Refused(format!(
                    "domain {} on {host} belongs to another owner; it is left alone",
                    req.name
                )));
            }
            MarkRead::Marked(_) => {}
        }
        let (state, reason) = rpc!(s, DomainGetState, |c| c.domain_get_state(&dom))?;
        // Started again when it never ran, failed to start, went down with libvirtd (a
        // Create interrupted by a daemon restart), or was destroyed (what a Delete
        // interrupted between its destroy and its undefine leaves: without a start
        // here, every later Create of the name would fail Transient and never
        // converge); a guest that shut itself down is not ours to restart here.
        let dom = if state == DomainState::Shutoff
            && matches!(
                reason,
                libvirt_wire::DOMAIN_SHUTOFF_UNKNOWN
                    | libvirt_wire::DOMAIN_SHUTOFF_DESTROYED
                    | libvirt_wire::DOMAIN_SHUTOFF_FAILED
                    | libvirt_wire::DOMAIN_SHUTOFF_DAEMON
            ) {
            self.start(s, &dom, req).await?
        } else {
            dom
        };
        self.wait_for_address(s, &dom).await
    }

    /// The instance's root disk, an overlay on the cached image: made unless an earlier
    /// attempt made it, after the pool is found active and has room (or the image is
    /// downloaded, which checks the room itself).
    async fn ensure_disks(
        &self,
        s: &Session<'_>,
        host: &str,
        req: &CreateRequest,
        image: &ImageConfig,
    ) -> Result<Disks, Failure> {
        let cfg = &self.inner.config;
        let pool_name = cfg.pool.as_str();
        let pool = rpc!(s, StoragePoolLookupByName, |c| c
            .storage_pool_lookup_by_name(pool_name))?;
        let overlay_name = overlay_volume(&req.name);
        let overlay = lookup_volume(s, &pool, &overlay_name).await?;
        if overlay.is_none() {
            self.ensure_room(s, &pool, host, image).await?;
        }
        let base_name = image_volume(image);
        let base = lookup_volume(s, &pool, &base_name).await?.ok_or_else(|| {
            Failure::Missing(format!("image volume {base_name} vanished on {host}"))
        })?;
        let base_path = rpc!(s, StorageVolGetPath, |c| c.storage_vol_get_path(&base))?;
        let overlay = match overlay {
            Some(v) => v,
            None => {
                let xml = overlay_volume_xml(&overlay_name, cfg.sizes.disk_gib, &base_path);
                create_volume(s, &pool, &overlay_name, &xml).await?
            }
        };
        let root_path = rpc!(s, StorageVolGetPath, |c| c.storage_vol_get_path(&overlay))?;
        Ok(Disks { pool, root_path })
    }

    /// The quota precheck: the pool is active and, with the image cached, has room for
    /// one more instance; without it, the one shared download of the image (which
    /// checks the room for the image and the instance).
    async fn ensure_room(
        &self,
        s: &Session<'_>,
        pool: &StoragePool,
        host: &str,
        image: &ImageConfig,
    ) -> Result<(), Failure> {
        let cfg = &self.inner.config;
        let pool_name = cfg.pool.as_str();
        let info = rpc!(s, StoragePoolGetInfo, |c| c.storage_pool_get_info(pool))?;
        if StoragePoolState::from_raw(i32::from(info.state)) != StoragePoolState::Running {
            return Err(Failure::Refused(format!(
                "storage pool {pool_name} on {host} is not active"
            )));
        }
        let needed = (cfg.sizes.disk_gib << 30) + HEADROOM;
        if image::cached(s, pool, image).await? {
            if info.available < needed {
                return Err(Failure::Quota(Quota {
                    what: format!("storage pool {pool_name} on {host}"),
                    available: info.available,
                    needed,
                }));
            }
            return Ok(());
        }
        // One download per image and host, shared by every caller that waits.
        let flight = self.image_flight(host, image, needed);
        image::wait(s.ctx, &flight).await
    }

    /// Writes the seed ISO into its volume (made unless an earlier attempt made it) and
    /// returns the volume's path. The seed is written again on every attempt that has
    /// not defined the domain yet: an interrupted upload leaves nothing half written.
    async fn write_seed(
        &self,
        s: &Session<'_>,
        pool: &StoragePool,
        req: &CreateRequest,
    ) -> Result<String, Failure> {
        let cfg = &self.inner.config;
        let iso = Bytes::from(seed_iso(&SeedData {
            instance_id: &req.name,
            hostname: &req.name,
            user_data: req.cloud_init.expose().as_bytes(),
            extra_vendor_data: cfg.vendor_data.as_deref(),
        }));
        let seed_name = seed_volume(&req.name);
        let seed = match lookup_volume(s, pool, &seed_name).await? {
            Some(v) => v,
            None => {
                let xml = raw_volume_xml(&seed_name, iso.len() as u64, "raw");
                create_volume(s, pool, &seed_name, &xml).await?
            }
        };
        let len = iso.len() as u64;
        let (target, data) = (&seed, &iso);
        rpc!(s, StorageVolUpload, cfg.timeouts.upload, |c| async move {
            let mut up = c.storage_vol_upload(target, 0, len, 0).await?;
            up.write(data.clone()).await?;
            up.finish().await
        })?;
        rpc!(s, StorageVolGetPath, |c| c.storage_vol_get_path(&seed))
    }

    /// Defines the domain with its disks and the mark, and starts it.
    async fn define_and_start(
        &self,
        s: &Session<'_>,
        req: &CreateRequest,
        image: &ImageConfig,
        root_path: String,
        seed_path: String,
    ) -> Result<Domain, Failure> {
        let cfg = &self.inner.config;
        let spec = DomainSpec {
            name: req.name.clone(),
            domain_type: cfg.domain_type,
            vcpus: cfg.sizes.vcpus,
            memory_mib: cfg.sizes.memory_mib,
            firmware: image.firmware,
            root_path,
            seed_path,
            bridge: cfg.bridge.clone(),
            namespace: cfg.namespace.clone(),
            mark: Mark {
                tag: req.tag.clone(),
                uid: req.uid.clone(),
                created_at: Some(SystemTime::now()),
            },
        };
        let xml = domain_define_xml(&spec);
        let dom = rpc!(s, DomainDefineXml, |c| c.domain_define_xml(&xml))?;
        self.start(s, &dom, req).await
    }

    /// Joins the one download of `img` to `host` every waiting Create shares,
    /// starting it on a connection of its own when none runs. `needed` is what
    /// the instance needs besides the image.
    fn image_flight(&self, host: &str, img: &ImageConfig, needed: u64) -> Arc<image::Flight> {
        let (p, host_name, img_owned) = (self.clone(), host.to_owned(), img.clone());
        self.inner.flights.join(host, img, move |abandon| {
            Box::pin(async move {
                let i = &*p.inner;
                let ctx = Ctx::with_timeout(i.config.timeouts.upload).cancelled_by(abandon);
                let host_cfg = i.config.host(&host_name).ok_or_else(|| {
                    Failure::Refused(format!("host {host_name:?} is not configured"))
                })?;
                let up = i
                    .hosts
                    .dedicated(&ctx, &i.config, &i.verbosity, host_cfg)
                    .await?;
                image::fill(&up, &*i.images, &img_owned, needed).await
            })
        })
    }

    /// Starts a defined domain and writes the mark into its live definition.
    async fn start(
        &self,
        s: &Session<'_>,
        dom: &Domain,
        req: &CreateRequest,
    ) -> Result<Domain, Failure> {
        let cfg = &self.inner.config;
        let started = rpc!(s, DomainCreateWithFlags, cfg.timeouts.start, |c| c
            .domain_create_with_flags(dom, 0));
        let dom = match started {
            Ok(d) => d,
            Err(f) if f.is(ErrorCode::OperationInvalid) => dom.clone(),
            Err(f) => return Err(f),
        };
        let mark = match read_mark(s, &dom).await? {
            MarkRead::Marked(m) => m,
            _ => Mark {
                tag: req.tag.clone(),
                uid: req.uid.clone(),
                created_at: Some(SystemTime::now()),
            },
        };
        let element = metadata_element(&mark);
        let ns = cfg.namespace.as_str();
        rpc!(s, DomainSetMetadata, |c| c.domain_set_metadata(
            &dom,
            DOMAIN_METADATA_ELEMENT,
            Some(&element),
            Some(METADATA_KEY),
            Some(ns),
            DOMAIN_AFFECT_LIVE
        ))?;
        Ok(dom)
    }

    /// Polls until the domain runs with a usable address; the caller's deadline bounds it.
    async fn wait_for_address(&self, s: &Session<'_>, dom: &Domain) -> Result<(), Failure> {
        let mut pause = Duration::from_millis(50);
        loop {
            let (state, reason) = rpc!(s, DomainGetState, |c| c.domain_get_state(dom))?;
            let starting = state == DomainState::NoState
                || (state == DomainState::Paused
                    && reason == libvirt_wire::DOMAIN_PAUSED_STARTING_UP);
            if may_have_address(state) {
                if address(s, dom).await.is_some() {
                    return Ok(());
                }
            } else if !starting {
                return Err(Failure::NotYet(format!(
                    "domain {} is {state} while booting",
                    dom.name
                )));
            }
            s.ctx
                .run(tokio::time::sleep(pause))
                .await
                .map_err(Failure::Interrupted)?;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }
}
