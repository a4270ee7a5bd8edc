//! `Kvm2`: the provider value, its construction (no I/O), the operation
//! wrapper (span, deadline, classification, outcome line) and the per-name lock.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use conformance::profile::Profile;
use conformance::{
    BoxFuture, Checker, CreateRequest, Ctx, Error, Instance, Listing, Op, Provider, ProviderId,
};
use tracing::{Instrument, info, warn};

use crate::backend::{Hosts, Session, Verbosity};
use crate::config::{Config, HostConfig};
use crate::dialer::Dialer;
use crate::errors::{Failure, to_error};
use crate::image::{HttpSource, ImageSource};

/// The kvm2 provider. Cheap to clone; clones share connections and locks.
#[derive(Clone)]
pub struct Kvm2 {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) hosts: Hosts,
    pub(crate) verbosity: Verbosity,
    pub(crate) images: Arc<dyn ImageSource>,
    pub(crate) flights: crate::image::Flights,
    locks: KeyedLocks,
}

impl Kvm2 {
    /// A provider over `config`, reaching hosts through `dialer`.
    ///
    /// Does no I/O beyond checking, for a warning, that configured key and
    /// known_hosts files are readable; the first operation on a host dials it.
    pub fn new(config: Config, dialer: Arc<dyn Dialer>) -> Kvm2 {
        Self::with_verbosity(config, dialer, Arc::new(AtomicU8::new(1)))
    }

    /// Like [`Kvm2::new`], with a verbosity handle shared with the caller.
    pub fn with_verbosity(config: Config, dialer: Arc<dyn Dialer>, verbosity: Verbosity) -> Kvm2 {
        for h in &config.hosts {
            for (what, path) in [
                ("key file", &h.key_file),
                ("known_hosts file", &h.known_hosts_file),
            ] {
                if let Some(p) = path
                    && std::fs::metadata(p).is_err()
                {
                    warn!(host = %h.name, path = %p.display(), "{what} is not readable yet; dials fail until it is");
                }
            }
        }
        let hosts = Hosts::new(&config, dialer);
        Kvm2 {
            inner: Arc::new(Inner {
                config,
                hosts,
                verbosity,
                images: Arc::new(HttpSource::default()),
                flights: crate::image::Flights::default(),
                locks: KeyedLocks::default(),
            }),
        }
    }

    /// Replaces where images are downloaded from (HTTP by default).
    pub fn with_image_source(mut self, source: Arc<dyn ImageSource>) -> Kvm2 {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.images = source,
            None => panic!("with_image_source is for a provider that is not shared yet"),
        }
        self
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Sets the verbosity: 0 warnings and errors only, 1 one line per operation,
    /// 2 one line per libvirt call.
    pub fn set_verbosity(&self, v: u8) {
        self.inner.verbosity.store(v.min(2), Ordering::Relaxed);
    }

    /// kvm2's profile: the first value of every axis.
    pub fn declared_profile() -> Profile {
        Profile::builder()
            .build()
            .expect("the first value of every axis is a legal profile")
    }

    fn op<'a, T: Send + 'a>(
        &'a self,
        ctx: &'a Ctx,
        op: Op,
        subject: String,
        work: impl Future<Output = Result<T, Failure>> + Send + 'a,
    ) -> BoxFuture<'a, Result<T, Error>> {
        let parent = ctx.span();
        let span = match op {
            Op::Create => tracing::info_span!(parent: parent, "kvm2.create", subject = %subject),
            Op::Get => tracing::info_span!(parent: parent, "kvm2.get", subject = %subject),
            Op::Delete => tracing::info_span!(parent: parent, "kvm2.delete", subject = %subject),
            Op::ListByTag => {
                tracing::info_span!(parent: parent, "kvm2.list_by_tag", subject = %subject)
            }
            Op::Check => tracing::info_span!(parent: parent, "kvm2.check", subject = %subject),
        };
        let name = self.inner.config.name.clone();
        let verbosity = self.inner.verbosity.clone();
        Box::pin(
            async move {
                let started = Instant::now();
                let r = match ctx.run(work).await {
                    Ok(r) => r,
                    Err(i) => Err(Failure::Interrupted(i)),
                };
                let r = r.map_err(|f| to_error(&name, op, f));
                let v = verbosity.load(Ordering::Relaxed);
                let elapsed_ms = started.elapsed().as_millis() as u64;
                match &r {
                    Ok(_) if v >= 1 => info!(op = %op, subject, elapsed_ms, "succeeded"),
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {
                        if v >= 1 {
                            info!(op = %op, subject, elapsed_ms, "not found");
                        }
                    }
                    Err(e) => {
                        if v >= 1 {
                            info!(op = %op, subject, elapsed_ms, kind = e.kind().name(), "failed");
                        }
                        warn!(op = %op, subject, error = %e.chain(), "operation failed");
                    }
                }
                r
            }
            .instrument(span),
        )
    }

    /// The configured host of that name, as an operation needs it.
    pub(crate) fn host(&self, name: &str) -> Option<&HostConfig> {
        self.inner.config.host(name)
    }

    /// A session on `host`'s operations connection.
    pub(crate) async fn session<'a>(
        &'a self,
        ctx: &'a Ctx,
        host: &str,
    ) -> Result<Session<'a>, Failure> {
        let i = &*self.inner;
        let slot = i
            .hosts
            .slot(host)
            .ok_or_else(|| Failure::Refused(format!("host {host:?} is not configured")))?;
        i.hosts.session(ctx, &i.config, &i.verbosity, slot).await
    }

    /// Holds the per-name lock while the returned guard lives.
    pub(crate) async fn lock_name(&self, ctx: &Ctx, key: String) -> Result<NameGuard, Failure> {
        let m = self.inner.locks.entry(&key);
        let g = ctx
            .run(m.clone().lock_owned())
            .await
            .map_err(Failure::Interrupted)?;
        Ok(NameGuard {
            guard: Some(g),
            key,
            inner: self.inner.clone(),
        })
    }
}

/// A map of per-name async mutexes that forgets names nobody holds.
#[derive(Default)]
struct KeyedLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl KeyedLocks {
    fn entry(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.0
            .lock()
            .expect("lock table poisoned")
            .entry(key.to_owned())
            .or_default()
            .clone()
    }
}

/// The per-name lock, held.
pub(crate) struct NameGuard {
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    key: String,
    inner: Arc<Inner>,
}

impl Drop for NameGuard {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut map = self.inner.locks.0.lock().expect("lock table poisoned");
        if map
            .get(&self.key)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            map.remove(&self.key);
        }
    }
}

impl Provider for Kvm2 {
    fn name(&self) -> &str {
        &self.inner.config.name
    }

    fn profile(&self) -> Profile {
        Kvm2::declared_profile()
    }

    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, conformance::Result<ProviderId>> {
        self.op(
            ctx,
            Op::Create,
            req.name.clone(),
            self.create_impl(ctx, req),
        )
    }

    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<Instance>> {
        self.op(ctx, Op::Get, id.to_string(), self.get_impl(ctx, id))
    }

    fn delete<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        self.op(ctx, Op::Delete, id.to_string(), self.delete_impl(ctx, id))
    }

    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, conformance::Result<Listing>> {
        self.op(ctx, Op::ListByTag, tag.to_owned(), self.list_impl(ctx, tag))
    }

    fn checker(&self) -> Option<&dyn Checker> {
        Some(self)
    }
}
