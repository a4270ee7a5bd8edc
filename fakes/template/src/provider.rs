//! The template provider: Create, Get, Delete, ListByTag and Check over a
//! [`SimBackend`], written the way a provider for a real backend should be.
//!
//! Everything the provider says to the backend goes through [`Session::call`], its one
//! seam, which opens the `template.<procedure>` span, writes the V2 log line and runs
//! the call under the context's deadline and token.
//! Connections are cached per site and dialled lazily; operations on one name are
//! serialised by a per-name lock and nothing else.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use conformance::fixture::{Power, Verbosity};
use conformance::{
    BoxFuture, Checker, CreateRequest, Ctx, Error, ErrorKind, HealthReason, HostHealth, Instance,
    Interrupted, Listing, Op, Profile, Provider, ProviderId, Quota, State, UnreachableLocation,
    is_usable_ipv4, validate_name, validate_request, validate_tag,
};
use futures_util::future::join_all;
use tracing::{Instrument, Span, debug, info, warn};

use crate::backend::{
    BackendError, ConnId, InstanceInfo, Mark, Proc, SimBackend, digest, seed_volume,
};
use crate::config::TemplateConfig;
use crate::id::{instance_id, parse_id};
use crate::locks::NameLocks;

/// Why a step did not produce its result: the backend said no, or the call was
/// interrupted by its context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The backend answered with an error.
    Backend(BackendError),
    /// The context's deadline passed or its token fired.
    Interrupted(Interrupted),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Backend(e) => e.fmt(f),
            Failure::Interrupted(i) => i.fmt(f),
        }
    }
}

impl std::error::Error for Failure {}

impl From<BackendError> for Failure {
    fn from(e: BackendError) -> Self {
        Failure::Backend(e)
    }
}

impl From<Interrupted> for Failure {
    fn from(i: Interrupted) -> Self {
        Failure::Interrupted(i)
    }
}

impl Failure {
    fn is_no_object(&self) -> bool {
        matches!(self, Failure::Backend(BackendError::NoObject(_)))
    }

    /// A missing object or a missing volume store: both mean "already gone" to Delete.
    fn is_gone(&self) -> bool {
        matches!(
            self,
            Failure::Backend(BackendError::NoObject(_) | BackendError::NoContainer(_))
        )
    }
}

/// Maps a failure onto exactly one of the contract's four kinds.
///
/// This is the provider's only classification: a missing object is NotFound, except
/// inside Create where it means a dependency vanished mid-way (Transient); bad
/// credentials, a site identity other than the trusted one (a changed host key),
/// refusals and unreadable marks are Permanent; a full volume store is
/// QuotaExceeded; everything else (busy, closed, refused connections, missing
/// credential files, deadlines, cancellation) is Transient.
pub fn classify(provider: &str, op: Op, message: String, failure: Failure) -> Error {
    let kind = match &failure {
        Failure::Interrupted(_) => ErrorKind::Transient,
        Failure::Backend(b) => match b {
            BackendError::NoObject(_) if op == Op::Create => ErrorKind::Transient,
            BackendError::NoObject(_) => ErrorKind::NotFound,
            BackendError::Busy(_)
            | BackendError::Exists(_)
            | BackendError::Closed
            | BackendError::Refused
            | BackendError::CredentialsMissing(_) => ErrorKind::Transient,
            BackendError::Denied(_)
            | BackendError::AuthFailed
            | BackendError::HostKeyRejected
            | BackendError::Unreadable(_)
            | BackendError::NoContainer(_) => ErrorKind::Permanent,
            BackendError::NoSpace {
                what,
                available,
                needed,
            } => ErrorKind::QuotaExceeded(Quota {
                what: what.clone(),
                available: *available,
                needed: *needed,
            }),
        },
    };
    Error::new(provider, op, kind, message).with_source(failure)
}

/// The contract state of an instance from its power state and reported addresses:
/// running with a usable IPv4 is Running, running without one is Provisioning, and
/// anything else is Stopped.
pub fn state_of(power: Power, addresses: Option<&[IpAddr]>) -> (State, Option<Ipv4Addr>) {
    match power {
        Power::Running => match first_usable(addresses.unwrap_or_default()) {
            Some(ip) => (State::Running, Some(ip)),
            None => (State::Provisioning, None),
        },
        Power::Paused | Power::Stopped => (State::Stopped, None),
    }
}

fn first_usable(addrs: &[IpAddr]) -> Option<Ipv4Addr> {
    addrs.iter().find_map(|a| match a {
        IpAddr::V4(v4) if is_usable_ipv4(*v4) => Some(*v4),
        _ => None,
    })
}

/// The cached connection of one site.
#[derive(Default)]
struct Slot {
    conn: Mutex<Option<ConnId>>,
    dialing: tokio::sync::Mutex<()>,
}

/// An in-memory provider over a [`SimBackend`].
///
/// Construction does no I/O: connections are dialled on first use, and the credential
/// file of a site is read on every dial.
pub struct TemplateProvider {
    config: TemplateConfig,
    backend: SimBackend,
    /// One cached connection per configured site.
    slots: HashMap<String, Slot>,
    /// Per-name locks for Create and Delete.
    locks: NameLocks,
    /// Tokens kept after the first read; only the `credentials_read_once` mutant uses it.
    tokens: Mutex<HashMap<String, String>>,
    /// Creation times this process wrote; only the `created_at_in_memory` mutant uses it.
    written: Mutex<HashMap<String, SystemTime>>,
}

impl fmt::Debug for TemplateProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemplateProvider")
            .field("name", &self.config.name)
            .field("sites", &self.config.sites)
            .finish_non_exhaustive()
    }
}

/// One operation's view of one site: the context, the operation span and the
/// connection every call of the operation at that site uses.
struct Session<'a> {
    p: &'a TemplateProvider,
    ctx: &'a Ctx,
    span: &'a Span,
    site: &'a str,
    conn: ConnId,
}

impl Session<'_> {
    /// The seam: runs one backend call with its span, its log line and the deadline.
    async fn call<T>(
        &self,
        proc: Proc,
        fut: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, Failure> {
        let r = self
            .p
            .instrumented(self.ctx, self.span, self.site, proc, fut)
            .await;
        if matches!(r, Err(Failure::Backend(BackendError::Closed))) {
            self.p.forget(self.site, self.conn);
        }
        r
    }

    /// A read that changes nothing: a busy answer is retried once before it counts.
    async fn read<T, Fut>(&self, proc: Proc, fut: impl Fn() -> Fut) -> Result<T, Failure>
    where
        Fut: Future<Output = Result<T, BackendError>>,
    {
        match self.call(proc, fut()).await {
            Err(Failure::Backend(BackendError::Busy(_))) => self.call(proc, fut()).await,
            r => r,
        }
    }
}

macro_rules! call_span {
    ($parent:expr, $proc:expr, $site:expr; $($p:ident => $n:literal),* $(,)?) => {
        match $proc {
            $(Proc::$p => tracing::debug_span!(parent: $parent, $n, site = $site),)*
        }
    };
}

impl TemplateProvider {
    /// A provider with `config` over `backend`. Does no I/O.
    pub fn new(config: TemplateConfig, backend: SimBackend) -> TemplateProvider {
        let slots = config
            .sites
            .iter()
            .map(|s| (s.name.clone(), Slot::default()))
            .collect();
        TemplateProvider {
            locks: NameLocks::default(),
            config,
            backend,
            slots,
            tokens: Mutex::default(),
            written: Mutex::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TemplateConfig {
        &self.config
    }

    fn verbosity(&self) -> Verbosity {
        self.config.verbosity.get()
    }

    fn error(&self, op: Op, kind: ErrorKind, message: impl Into<String>) -> Error {
        Error::new(self.config.name.as_str(), op, kind, message)
    }

    fn fail(&self, op: Op, what: impl Into<String>, f: Failure) -> Error {
        classify(&self.config.name, op, what.into(), f)
    }

    /// Runs one backend call under `span` with its own child span and V2 line.
    async fn instrumented<T>(
        &self,
        ctx: &Ctx,
        op_span: &Span,
        site: &str,
        proc: Proc,
        fut: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, Failure> {
        let q = self.config.quirks;
        let parent = if q.detached_call_spans {
            None
        } else {
            op_span.id()
        };
        let span = if q.no_call_spans {
            Span::none()
        } else {
            call_span!(parent, proc, site;
                Dial => "template.dial", Lookup => "template.lookup",
                Define => "template.define", CreateDisk => "template.create_disk",
                CreateSeed => "template.create_seed", Start => "template.start",
                Addresses => "template.addresses", Stop => "template.stop",
                Undefine => "template.undefine", DeleteDisk => "template.delete_disk",
                DeleteSeed => "template.delete_seed", List => "template.list",
                ReadMark => "template.read_mark", Capacity => "template.capacity",
                Ping => "template.ping",
            )
        };
        let line_parent = if q.no_call_spans || q.detached_call_spans {
            op_span
        } else {
            &span
        };
        if q.log_calls_at_v0 {
            info!(parent: line_parent, site, call = proc.as_str(), "backend call");
        } else if self.verbosity() >= Verbosity::V2 {
            debug!(parent: line_parent, site, call = proc.as_str(), "backend call");
        }
        match ctx.run(fut.instrument(span)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Failure::Backend(e)),
            Err(i) => Err(Failure::Interrupted(i)),
        }
    }

    fn slot(&self, site: &str) -> &Slot {
        &self.slots[site]
    }

    fn forget(&self, site: &str, conn: ConnId) {
        let mut c = self
            .slot(site)
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if *c == Some(conn) {
            *c = None;
        }
    }

    /// Reads the credential token of `site` from its file (on every dial).
    fn read_token(&self, site: &str) -> Result<String, BackendError> {
        if self.config.quirks.credentials_read_once
            && let Some(t) = self
                .tokens
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(site)
        {
            return Ok(t.clone());
        }
        let path = self.config.token_file(site);
        let token = std::fs::read_to_string(&path)
            .map(|t| t.trim().to_owned())
            .map_err(|_| BackendError::CredentialsMissing(path.display().to_string()))?;
        if self.config.quirks.credentials_read_once {
            self.tokens
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(site.to_owned(), token.clone());
        }
        Ok(token)
    }

    /// Reads the identity `site` is trusted to present from its file (on every dial).
    fn read_known_host(&self, site: &str) -> Result<String, BackendError> {
        let path = self.config.known_host_file(site);
        std::fs::read_to_string(&path)
            .map(|t| t.trim().to_owned())
            .map_err(|_| BackendError::CredentialsMissing(path.display().to_string()))
    }

    /// Opens a fresh connection to `site`.
    async fn dial(&self, ctx: &Ctx, span: &Span, site: &str) -> Result<ConnId, Failure> {
        let token = self.read_token(site)?;
        let trusted = self.read_known_host(site)?;
        let dial = self.backend.dial(site, &token, &trusted);
        self.instrumented(ctx, span, site, Proc::Dial, dial).await
    }

    /// The cached connection to `site`, dialled if there is none.
    async fn session<'a>(
        &'a self,
        ctx: &'a Ctx,
        span: &'a Span,
        site: &'a str,
    ) -> Result<Session<'a>, Failure> {
        let slot = self.slot(site);
        let cached = *slot.conn.lock().unwrap_or_else(|e| e.into_inner());
        let conn = match cached {
            Some(c) => c,
            None => {
                let _dialing = ctx.run(slot.dialing.lock()).await?;
                let again = *slot.conn.lock().unwrap_or_else(|e| e.into_inner());
                match again {
                    Some(c) => c,
                    None => {
                        // Dialling changes nothing, so a busy answer is retried once.
                        let c = match self.dial(ctx, span, site).await {
                            Err(Failure::Backend(BackendError::Busy(_))) => {
                                self.dial(ctx, span, site).await?
                            }
                            r => r?,
                        };
                        *slot.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                        c
                    }
                }
            }
        };
        Ok(Session {
            p: self,
            ctx,
            span,
            site,
            conn,
        })
    }

    /// Logs an operation's outcome: one info line at V1 and above on success, one
    /// warning on failure at every tier.
    fn outcome<T>(&self, span: &Span, op: Op, r: &Result<T, Error>) {
        match r {
            Ok(_) if self.verbosity() >= Verbosity::V1 => {
                info!(parent: span, op = op.as_str(), "succeeded")
            }
            Ok(_) => {}
            Err(e) => {
                warn!(parent: span, op = op.as_str(), kind = e.kind().name(), error = %e, "failed")
            }
        }
    }

    fn lock_key(&self, site: &str, name: &str) -> String {
        if self.config.quirks.global_lock {
            String::from("*")
        } else {
            format!("{site}/{name}")
        }
    }

    async fn create_op(
        &self,
        ctx: &Ctx,
        span: &Span,
        req: &CreateRequest,
    ) -> Result<ProviderId, Error> {
        let q = self.config.quirks;
        let invalid = if q.skip_uid_validation {
            validate_name(&req.name).and_then(|()| validate_tag(&req.tag))
        } else {
            validate_request(req)
        };
        if let Err(e) = invalid {
            return Err(self
                .error(Op::Create, ErrorKind::Permanent, "invalid request")
                .with_source(e));
        }
        let site = self
            .config
            .site_for(&req.placement)
            .ok_or_else(|| {
                self.error(
                    Op::Create,
                    ErrorKind::Permanent,
                    format!("unknown placement {:?}", req.placement),
                )
            })?
            .name
            .as_str();
        let name = req.name.as_str();
        let id = instance_id(site, name);
        let _guard = if q.create_unlocked {
            None
        } else {
            Some(
                ctx.run(self.locks.lock(&self.lock_key(site, name)))
                    .await
                    .map_err(|i| self.fail(Op::Create, format!("waiting for {name}"), i.into()))?,
            )
        };
        let fail = |what: &str, f: Failure| {
            if q.create_not_found && f.is_no_object() {
                return self
                    .error(Op::Create, ErrorKind::NotFound, what.to_owned())
                    .with_source(f);
            }
            if q.create_transient_as_permanent
                && matches!(f, Failure::Backend(BackendError::Busy(_)))
            {
                return self
                    .error(Op::Create, ErrorKind::Permanent, what.to_owned())
                    .with_source(f);
            }
            if (q.create_auth_failure_transient
                && matches!(f, Failure::Backend(BackendError::AuthFailed)))
                || (q.create_permanent_as_transient
                    && matches!(f, Failure::Backend(BackendError::Denied(_))))
            {
                return self
                    .error(Op::Create, ErrorKind::Transient, what.to_owned())
                    .with_source(f);
            }
            if q.vanished_part_is_not_found
                && matches!(&f, Failure::Backend(BackendError::NoObject(m)) if m.starts_with("a volume of"))
            {
                return self
                    .error(Op::Create, ErrorKind::NotFound, what.to_owned())
                    .with_source(f);
            }
            self.fail(Op::Create, what, f)
        };
        let s = self
            .session(ctx, span, site)
            .await
            .map_err(|f| fail(&format!("connecting to {site}"), f))?;
        let existing = match s
            .call(Proc::Lookup, self.backend.lookup(s.conn, site, name))
            .await
        {
            Ok(info) => Some(info),
            Err(f) if f.is_no_object() => None,
            Err(f) => return Err(fail(&format!("looking up {name}"), f)),
        };
        if let Some(info) = &existing {
            let mark = s
                .call(Proc::ReadMark, self.backend.read_mark(s.conn, site, name))
                .await
                .map_err(|f| fail(&format!("reading the mark of {name}"), f))?;
            match mark {
                None if !q.adopt_unmarked => {
                    return Err(self.error(
                        Op::Create,
                        ErrorKind::Permanent,
                        format!("{name} exists at {site} and is not managed by this provider"),
                    ));
                }
                Some(m) if !m.uid.is_empty() && m.uid != req.uid && !q.adopt_foreign => {
                    return Err(self.error(
                        Op::Create,
                        ErrorKind::Permanent,
                        format!("{name} exists at {site} and belongs to another owner"),
                    ));
                }
                // Our own instance: an earlier Create may have stopped half way, so
                // the steps below finish what is missing and change nothing that
                // exists (a different image, tag or cloud-init is not applied).
                Some(m) if m.uid == req.uid && !q.no_resume => {
                    if q.restamp_on_resume && info.power == Power::Stopped {
                        let fresh = Mark {
                            created_at: Some(SystemTime::now()),
                            ..m.clone()
                        };
                        s.call(Proc::Undefine, self.backend.undefine(s.conn, site, name))
                            .await
                            .map_err(|f| fail(&format!("restamping {name}"), f))?;
                        s.call(Proc::Define, self.backend.define(s.conn, site, name, fresh))
                            .await
                            .map_err(|f| fail(&format!("restamping {name}"), f))?;
                    }
                    if q.reapply_cloud_init
                        && info
                            .seed
                            .is_some_and(|d| d != digest(req.cloud_init.expose().as_bytes()))
                    {
                        s.call(
                            Proc::CreateSeed,
                            self.backend.create_seed(
                                s.conn,
                                site,
                                name,
                                &format!("{name}-seed-update"),
                                req.cloud_init.expose().as_bytes(),
                            ),
                        )
                        .await
                        .map_err(|f| fail(&format!("rewriting the seed of {name}"), f))?;
                    }
                }
                // A marked instance with an empty uid is the same instance, but its
                // owner is unknown, so it is returned exactly as it is.
                _ => return Ok(id),
            }
        }
        self.converge(&s, req, existing.as_ref(), fail).await?;
        if self.config.create_blocks {
            self.wait_running(&s, name)
                .await
                .map_err(|f| fail(&format!("waiting for {name} to boot"), f))?;
        }
        Ok(id)
    }

    /// Makes whatever of the instance is missing: the quota precheck, then define,
    /// disk, seed and start, each skipped when already done.
    async fn converge(
        &self,
        s: &Session<'_>,
        req: &CreateRequest,
        existing: Option<&InstanceInfo>,
        fail: impl Fn(&str, Failure) -> Error,
    ) -> Result<(), Error> {
        let (site, name, q) = (s.site, req.name.as_str(), self.config.quirks);
        let payload = req.cloud_init.expose().as_bytes();
        let need_disk = existing.is_none_or(|i| !i.disk);
        let need_seed = existing.is_none_or(|i| i.seed.is_none());
        let needed = if need_disk { self.config.disk_bytes } else { 0 }
            + if need_seed { payload.len() as u64 } else { 0 };
        if needed > 0 && !q.no_quota_precheck {
            let free = s
                .call(Proc::Capacity, self.backend.capacity(s.conn, site))
                .await
                .map_err(|f| fail(&format!("reading free capacity at {site}"), f))?;
            if needed > free {
                return Err(Error::quota(
                    &self.config.name,
                    Op::Create,
                    Quota {
                        what: format!("volume store at {site}"),
                        available: free,
                        needed,
                    },
                ));
            }
        }
        if existing.is_none() {
            if q.create_unlocked {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // The mark travels with the define: no instance of ours is ever unmarked.
            let mark = Mark {
                tag: req.tag.clone(),
                uid: req.uid.clone(),
                created_at: (!q.no_created_at).then(SystemTime::now),
            };
            if q.created_at_in_memory {
                self.written
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        name.to_owned(),
                        mark.created_at.unwrap_or(SystemTime::UNIX_EPOCH),
                    );
            }
            s.call(Proc::Define, self.backend.define(s.conn, site, name, mark))
                .await
                .map_err(|f| fail(&format!("defining {name}"), f))?;
        }
        if need_disk {
            match s
                .call(
                    Proc::CreateDisk,
                    self.backend
                        .create_disk(s.conn, site, name, self.config.disk_bytes),
                )
                .await
            {
                Ok(()) | Err(Failure::Backend(BackendError::Exists(_))) => {}
                Err(f) => return Err(fail(&format!("creating the disk of {name}"), f)),
            }
        }
        if need_seed {
            if q.log_cloud_init && self.verbosity() >= Verbosity::V2 {
                debug!(parent: s.span, user_data = req.cloud_init.expose(), "writing seed");
            }
            match s
                .call(
                    Proc::CreateSeed,
                    self.backend
                        .create_seed(s.conn, site, name, &seed_volume(name), payload),
                )
                .await
            {
                Ok(()) | Err(Failure::Backend(BackendError::Exists(_))) => {}
                Err(f) => return Err(fail(&format!("creating the seed of {name}"), f)),
            }
        }
        if existing.is_none_or(|i| i.power == Power::Stopped) {
            let started = s
                .call(Proc::Start, self.backend.start(s.conn, site, name))
                .await;
            let started = match started {
                Err(Failure::Backend(BackendError::Closed)) if q.retry_start_blindly => {
                    let again = self
                        .session(s.ctx, s.span, site)
                        .await
                        .map_err(|f| fail(&format!("reconnecting to {site}"), f))?;
                    again
                        .call(Proc::Start, self.backend.start(again.conn, site, name))
                        .await
                }
                r => r,
            };
            started.map_err(|f| fail(&format!("starting {name}"), f))?;
        }
        Ok(())
    }

    /// Polls the addresses of `name` until it reports a usable IPv4.
    async fn wait_running(&self, s: &Session<'_>, name: &str) -> Result<(), Failure> {
        loop {
            let addrs = s
                .call(
                    Proc::Addresses,
                    self.backend.addresses(s.conn, s.site, name),
                )
                .await;
            if let Ok(a) = &addrs
                && first_usable(a).is_some()
            {
                return Ok(());
            }
            s.ctx
                .run(tokio::time::sleep(Duration::from_millis(2)))
                .await?;
        }
    }

    /// Parses an ID: malformed → Permanent.
    fn locate<'i>(&self, op: Op, id: &'i ProviderId) -> Result<(&'i str, &'i str), Error> {
        parse_id(id).ok_or_else(|| self.error(op, ErrorKind::Permanent, "malformed instance id"))
    }

    async fn get_op(&self, ctx: &Ctx, span: &Span, id: &ProviderId) -> Result<Instance, Error> {
        let q = self.config.quirks;
        let (site, name) = self.locate(Op::Get, id)?;
        if !self.config.has_site(site) {
            return Err(self.error(
                Op::Get,
                ErrorKind::Permanent,
                format!("site {site:?} is not configured"),
            ));
        }
        if q.get_busy_while_locked && self.locks.is_held(&self.lock_key(site, name)) {
            return Err(self.error(Op::Get, ErrorKind::Transient, format!("{name} is busy")));
        }
        let fail = |what: String, f: Failure| {
            if q.get_closed_as_not_found && f == Failure::Backend(BackendError::Closed) {
                return self
                    .error(Op::Get, ErrorKind::NotFound, what)
                    .with_source(f);
            }
            if q.get_not_found_as_transient && f.is_no_object() {
                return self
                    .error(Op::Get, ErrorKind::Transient, what)
                    .with_source(f);
            }
            self.fail(Op::Get, what, f)
        };
        let s = self
            .session(ctx, span, site)
            .await
            .map_err(|f| fail(format!("connecting to {site}"), f))?;
        let info = s
            .call(Proc::Lookup, self.backend.lookup(s.conn, site, name))
            .await
            .map_err(|f| fail(format!("looking up {name}"), f))?;
        let mark = s
            .call(Proc::ReadMark, self.backend.read_mark(s.conn, site, name))
            .await
            .map_err(|f| fail(format!("reading the mark of {name}"), f))?
            .ok_or_else(|| {
                self.error(
                    Op::Get,
                    ErrorKind::NotFound,
                    format!("{name} is not managed by this provider"),
                )
            })?;
        let (state, ipv4) = match info.power {
            Power::Paused if q.paused_is_provisioning => (State::Provisioning, None),
            Power::Running => match s
                .call(Proc::Addresses, self.backend.addresses(s.conn, site, name))
                .await
            {
                Ok(addrs) if q.any_address_is_usable => match addrs.first() {
                    Some(IpAddr::V4(v4)) => (State::Running, Some(*v4)),
                    _ => (State::Provisioning, None),
                },
                Ok(addrs) => state_of(Power::Running, Some(&addrs)),
                Err(f @ (Failure::Interrupted(_) | Failure::Backend(BackendError::Closed))) => {
                    return Err(fail(format!("reading the addresses of {name}"), f));
                }
                Err(f) if f.is_no_object() => {
                    return Err(fail(format!("reading the addresses of {name}"), f));
                }
                Err(_) => (State::Provisioning, None),
            },
            p => state_of(p, None),
        };
        let created_at = if q.created_at_in_memory {
            self.written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .copied()
        } else {
            mark.created_at
        };
        Ok(Instance {
            id: id.clone(),
            name: name.to_owned(),
            state,
            ipv4,
            uid: mark.uid,
            tag: mark.tag,
            created_at,
        })
    }

    async fn delete_op(&self, ctx: &Ctx, span: &Span, id: &ProviderId) -> Result<(), Error> {
        let q = self.config.quirks;
        let (site, name) = self.locate(Op::Delete, id)?;
        if !self.config.has_site(site) {
            // Nothing of ours can live where we were never configured to go.
            return Ok(());
        }
        let fail = |what: String, f: Failure| self.fail(Op::Delete, what, f);
        let _guard = if q.delete_unlocked {
            None
        } else {
            Some(
                ctx.run(self.locks.lock(&self.lock_key(site, name)))
                    .await
                    .map_err(|i| fail(format!("waiting for {name}"), i.into()))?,
            )
        };
        let s = self
            .session(ctx, span, site)
            .await
            .map_err(|f| fail(format!("connecting to {site}"), f))?;
        let info = match s
            .call(Proc::Lookup, self.backend.lookup(s.conn, site, name))
            .await
        {
            Ok(info) => info,
            Err(f) if f.is_no_object() && q.delete_done_without_primary => return Ok(()),
            Err(f) if f.is_no_object() => return self.remove_parts(&s, name, true).await,
            Err(f) => return Err(fail(format!("looking up {name}"), f)),
        };
        let mark = match s
            .call(Proc::ReadMark, self.backend.read_mark(s.conn, site, name))
            .await
        {
            Ok(m) => m,
            Err(f) if f.is_no_object() => return self.remove_parts(&s, name, true).await,
            Err(f) => return Err(fail(format!("reading the mark of {name}"), f)),
        };
        if mark.is_none() && !q.delete_ignores_mark {
            return Err(self.error(
                Op::Delete,
                ErrorKind::Permanent,
                format!("{name} at {site} is not managed by this provider; left alone"),
            ));
        }
        if q.delete_unlocked {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if info.power != Power::Stopped && !q.delete_without_stop {
            match s
                .call(Proc::Stop, self.backend.stop(s.conn, site, name))
                .await
            {
                Ok(()) => {}
                Err(f) if f.is_no_object() => {}
                Err(f) => return Err(fail(format!("stopping {name}"), f)),
            }
        }
        match s
            .call(Proc::Undefine, self.backend.undefine(s.conn, site, name))
            .await
        {
            Ok(()) => {}
            Err(f) if f.is_no_object() => {}
            Err(f) => return Err(fail(format!("undefining {name}"), f)),
        }
        self.remove_parts(&s, name, !q.delete_requires_parts).await
    }

    /// Deletes the disk and the seed of `name`; with `tolerant`, parts (or the whole
    /// volume store) already gone are fine.
    async fn remove_parts(&self, s: &Session<'_>, name: &str, tolerant: bool) -> Result<(), Error> {
        let site = s.site;
        let disk = s
            .call(
                Proc::DeleteDisk,
                self.backend.delete_disk(s.conn, site, name),
            )
            .await;
        let seed = if self.config.quirks.delete_keeps_seed {
            Ok(())
        } else {
            s.call(
                Proc::DeleteSeed,
                self.backend.delete_seed(s.conn, site, &seed_volume(name)),
            )
            .await
        };
        for (part, r) in [("disk", disk), ("seed", seed)] {
            match r {
                Ok(()) => {}
                Err(f) if tolerant && f.is_gone() => {}
                Err(f) => {
                    let mut e = self.fail(Op::Delete, format!("deleting the {part} of {name}"), f);
                    if !tolerant && e.is_not_found() {
                        e = self
                            .error(
                                Op::Delete,
                                ErrorKind::Permanent,
                                format!("the {part} of {name} is missing"),
                            )
                            .with_source(e);
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    async fn list_op(&self, ctx: &Ctx, span: &Span, tag: &str) -> Result<Listing, Error> {
        // A partial listing must come back before the caller's deadline with a silent
        // site named, so each site gets three quarters of the time left.
        let site_ctx = match ctx.remaining() {
            Some(left)
                if !self.config.list_fail_whole
                    && !self.config.quirks.list_waits_for_every_site =>
            {
                ctx.narrowed(left * 3 / 4)
            }
            _ => ctx.clone(),
        };
        let per_site = join_all(
            self.config
                .sites
                .iter()
                .map(|site| self.list_site(&site_ctx, span, &site.name, tag)),
        )
        .await;
        if let Some(why) = ctx.interrupted() {
            return Err(self.fail(Op::ListByTag, "listing", Failure::Interrupted(why)));
        }
        if !per_site.iter().any(Result::is_ok)
            && let Some(Err(f)) = per_site.first()
        {
            // With no site answering, an empty listing could pass for an empty backend.
            return Err(self.fail(Op::ListByTag, "listing: no site answered", f.clone()));
        }
        let mut listing = Listing::default();
        for (site, r) in self.config.sites.iter().zip(per_site) {
            match r {
                Ok(mut found) => listing.instances.append(&mut found),
                Err(f) if self.config.list_fail_whole => {
                    return Err(self.fail(Op::ListByTag, format!("listing {}", site.name), f));
                }
                Err(f) => {
                    warn!(parent: span, site = %site.name, error = %f, "site skipped");
                    listing.unreachable.push(UnreachableLocation {
                        location: site.name.clone(),
                        reason: f.to_string(),
                    });
                }
            }
        }
        Ok(listing)
    }

    /// The instances carrying `tag` at one site, sorted by name. Reads marks, never
    /// addresses, so a running instance lists as Provisioning.
    async fn list_site(
        &self,
        ctx: &Ctx,
        span: &Span,
        site: &str,
        tag: &str,
    ) -> Result<Vec<Instance>, Failure> {
        let q = self.config.quirks;
        let s = self.session(ctx, span, site).await?;
        let mut out = Vec::new();
        let items = s
            .read(Proc::List, || self.backend.list(s.conn, site))
            .await?;
        for item in items {
            let mark = match s
                .read(Proc::ReadMark, || {
                    self.backend.read_mark(s.conn, site, &item.name)
                })
                .await
            {
                Ok(Some(m)) if m.tag == tag => m,
                Ok(None) if q.list_unmarked => Mark {
                    tag: String::new(),
                    uid: String::new(),
                    created_at: None,
                },
                Ok(_) => continue,
                Err(f) if f.is_no_object() && !q.list_vanished_fatal => continue,
                Err(Failure::Backend(BackendError::Unreadable(what)))
                    if !q.list_unreadable_fatal =>
                {
                    warn!(parent: span, site, instance = %item.name, "skipping {what}");
                    continue;
                }
                Err(f) => return Err(f),
            };
            let (state, _) = state_of(item.power, None);
            out.push(Instance {
                id: instance_id(site, &item.name),
                name: item.name,
                state,
                ipv4: None,
                uid: mark.uid,
                tag: mark.tag,
                created_at: mark.created_at,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    async fn check_op(&self, ctx: &Ctx, span: &Span) -> Vec<HostHealth> {
        if self.config.quirks.check_sequential {
            let mut out = Vec::new();
            for site in &self.config.sites {
                out.push(self.check_site(ctx, span, &site.name).await);
            }
            return out;
        }
        join_all(
            self.config
                .sites
                .iter()
                .map(|site| self.check_site(ctx, span, &site.name)),
        )
        .await
    }

    /// Checks one site on a connection of its own, closed afterwards.
    async fn check_site(&self, ctx: &Ctx, span: &Span, site: &str) -> HostHealth {
        let mut details =
            std::collections::BTreeMap::from([("location".to_owned(), site.to_owned())]);
        let r: Result<(usize, u64), Failure> = async {
            let s = if self.config.quirks.check_on_cached_connection {
                self.session(ctx, span, site).await?
            } else {
                let conn = self.dial(ctx, span, site).await?;
                Session {
                    p: self,
                    ctx,
                    span,
                    site,
                    conn,
                }
            };
            let own = !self.config.quirks.check_on_cached_connection;
            let r = async {
                let n = s.call(Proc::Ping, self.backend.ping(s.conn, site)).await?;
                let free = s
                    .call(Proc::Capacity, self.backend.capacity(s.conn, site))
                    .await?;
                Ok((n, free))
            }
            .await;
            if own {
                self.backend.close(site, s.conn);
            }
            r
        }
        .await;
        let (ready, reason, message) = match r {
            Ok((n, free)) => {
                details.insert("instances".into(), n.to_string());
                details.insert("freeBytes".into(), free.to_string());
                (true, HealthReason::Ready, format!("{site} is ready"))
            }
            Err(f) => {
                let reason = match &f {
                    Failure::Interrupted(_) => HealthReason::Timeout,
                    Failure::Backend(BackendError::AuthFailed) => HealthReason::AuthFailed,
                    Failure::Backend(BackendError::HostKeyRejected) => {
                        HealthReason::HostKeyRejected
                    }
                    Failure::Backend(BackendError::CredentialsMissing(_)) => {
                        HealthReason::CredentialsUnavailable
                    }
                    Failure::Backend(BackendError::NoContainer(_)) => {
                        HealthReason::Other(CONTAINER_MISSING.into())
                    }
                    Failure::Backend(_) => HealthReason::Unreachable,
                };
                (false, reason, format!("{site}: {f}"))
            }
        };
        HostHealth {
            location: site.to_owned(),
            ready,
            reason,
            message,
            details,
        }
    }
}

/// The health reason the template provider adds: the site's volume store is gone.
pub const CONTAINER_MISSING: &str = "ContainerMissing";

impl Provider for TemplateProvider {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn profile(&self) -> Profile {
        self.config.profile()
    }

    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, conformance::Result<ProviderId>> {
        let span = tracing::info_span!(parent: ctx.span(), "template.create", name = %req.name, placement = %req.placement);
        Box::pin(async move {
            let r = self.create_op(ctx, &span, req).await;
            self.outcome(&span, Op::Create, &r);
            r
        })
    }

    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<Instance>> {
        let span = tracing::info_span!(parent: ctx.span(), "template.get", id = %id);
        Box::pin(async move {
            let r = self.get_op(ctx, &span, id).await;
            self.outcome(&span, Op::Get, &r);
            r
        })
    }

    fn delete<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        let span = tracing::info_span!(parent: ctx.span(), "template.delete", id = %id);
        Box::pin(async move {
            let r = self.delete_op(ctx, &span, id).await;
            self.outcome(&span, Op::Delete, &r);
            r
        })
    }

    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, conformance::Result<Listing>> {
        let span = tracing::info_span!(parent: ctx.span(), "template.list_by_tag", tag = %tag);
        Box::pin(async move {
            let r = self.list_op(ctx, &span, tag).await;
            self.outcome(&span, Op::ListByTag, &r);
            r
        })
    }

    fn checker(&self) -> Option<&dyn Checker> {
        Some(self)
    }
}

impl Checker for TemplateProvider {
    fn check<'a>(&'a self, ctx: &'a Ctx) -> BoxFuture<'a, Vec<HostHealth>> {
        let span = tracing::info_span!(parent: ctx.span(), "template.check");
        Box::pin(async move {
            let out = self.check_op(ctx, &span).await;
            let ok: Result<(), Error> = Ok(());
            self.outcome(&span, Op::Check, &ok);
            out
        })
    }

    fn extra_reasons(&self) -> &'static [&'static str] {
        &[CONTAINER_MISSING]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn v4(s: &str) -> IpAddr {
        IpAddr::V4(s.parse().unwrap())
    }

    #[rstest]
    #[case::running_with_address(Power::Running, Some(vec![v4("10.77.0.1")]), State::Running, Some("10.77.0.1"))]
    #[case::running_without_address(Power::Running, Some(vec![]), State::Provisioning, None)]
    #[case::lookup_failed(Power::Running, None, State::Provisioning, None)]
    #[case::only_loopback_and_link_local(Power::Running, Some(vec![v4("127.0.0.1"), v4("169.254.1.1")]), State::Provisioning, None)]
    #[case::first_usable_wins(Power::Running, Some(vec![v4("169.254.1.1"), v4("10.0.0.9")]), State::Running, Some("10.0.0.9"))]
    #[case::ipv6_only(Power::Running, Some(vec!["fd00::1".parse().unwrap()]), State::Provisioning, None)]
    #[case::paused(Power::Paused, Some(vec![v4("10.77.0.1")]), State::Stopped, None)]
    #[case::stopped(Power::Stopped, None, State::Stopped, None)]
    fn maps_power_and_addresses_to_state(
        #[case] power: Power,
        #[case] addrs: Option<Vec<IpAddr>>,
        #[case] state: State,
        #[case] ip: Option<&str>,
    ) {
        let got = state_of(power, addrs.as_deref());
        assert_eq!(got, (state, ip.map(|s| s.parse().unwrap())));
    }

    #[rstest]
    #[case(Op::Get, Failure::Backend(BackendError::NoObject("x".into())), "NotFound")]
    #[case(Op::Create, Failure::Backend(BackendError::NoObject("x".into())), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::Busy("x".into())), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::Closed), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::Refused), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::CredentialsMissing("f".into())), "Transient")]
    #[case(Op::Get, Failure::Backend(BackendError::AuthFailed), "Permanent")]
    #[case(
        Op::Create,
        Failure::Backend(BackendError::HostKeyRejected),
        "Permanent"
    )]
    #[case(Op::Delete, Failure::Backend(BackendError::Denied("x".into())), "Permanent")]
    #[case(Op::Create, Failure::Backend(BackendError::NoContainer("s".into())), "Permanent")]
    #[case(Op::Create, Failure::Backend(BackendError::NoSpace { what: "s".into(), available: 1, needed: 2 }), "QuotaExceeded")]
    #[case(
        Op::Get,
        Failure::Interrupted(Interrupted::DeadlineExceeded),
        "Transient"
    )]
    #[case(Op::Delete, Failure::Interrupted(Interrupted::Cancelled), "Transient")]
    fn classifies_every_failure_into_one_kind(
        #[case] op: Op,
        #[case] f: Failure,
        #[case] kind: &str,
    ) {
        let e = classify("template", op, "doing it".into(), f);
        assert_eq!(e.kind().name(), kind);
        assert_eq!(e.provider(), "template");
        assert_eq!(e.op(), op);
        assert!(std::error::Error::source(&e).is_some());
    }

    /// A provider over a fresh backend with every site's credential files written.
    fn provider(dir: &std::path::Path) -> (TemplateProvider, SimBackend) {
        let backend = SimBackend::new(&crate::backend::BackendConfig::default());
        let config = TemplateConfig::new(dir);
        for s in &config.sites {
            std::fs::write(
                config.token_file(&s.name),
                crate::backend::initial_token(&s.name),
            )
            .unwrap();
            std::fs::write(
                config.known_host_file(&s.name),
                crate::backend::initial_identity(&s.name),
            )
            .unwrap();
        }
        (TemplateProvider::new(config, backend.clone()), backend)
    }

    #[tokio::test]
    async fn check_names_why_a_site_is_not_ready() {
        let dir = tempfile::tempdir().unwrap();
        let (p, backend) = provider(dir.path());
        let ctx = Ctx::with_timeout(Duration::from_secs(5));
        let reasons = |h: Vec<HostHealth>| {
            h.into_iter()
                .map(|x| x.reason.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(reasons(p.check(&ctx).await), ["Ready", "Ready"]);
        std::fs::remove_file(p.config().token_file("site-a")).unwrap();
        backend.set_token("site-b", "rotated".into()).unwrap();
        assert_eq!(
            reasons(p.check(&ctx).await),
            ["CredentialsUnavailable", "AuthFailed"]
        );
        backend
            .set_token("site-b", crate::backend::initial_token("site-b"))
            .unwrap();
        backend.remove_container("site-b").unwrap();
        let h = p.check(&ctx).await;
        assert_eq!(h[1].reason.as_str(), CONTAINER_MISSING);
        assert!(p.extra_reasons().contains(&CONTAINER_MISSING));
    }

    #[tokio::test]
    async fn construction_does_no_io_and_the_first_call_dials_once() {
        let dir = tempfile::tempdir().unwrap();
        let (p, backend) = provider(dir.path());
        assert!(backend.calls().is_empty());
        let ctx = Ctx::with_timeout(Duration::from_secs(5));
        p.list_by_tag(&ctx, "t").await.unwrap();
        p.list_by_tag(&ctx, "t").await.unwrap();
        assert_eq!((backend.dials("site-a"), backend.dials("site-b")), (1, 1));
    }
}
