//! Create: validation, placement, the ownership guard, then define, disk, seed and
//! start, each skipped when already done, so that the next Create completes an
//! interrupted one.

use std::time::{Duration, SystemTime};

use conformance::fixture::Power;
use conformance::profile::{CreateReturn, CreatedAt, QuotaMode, SecondaryResources};
use conformance::{CreateRequest, Ctx, Error, ErrorKind, Op, ProviderId, Quota, validate_request};
use tracing::Span;

use crate::backend::{BackendError, InstanceInfo, Mark, Proc, seed_volume};
use crate::id::instance_id;

use super::{Failure, Session, TemplateProvider, first_usable};

/// What Create does with an instance it finds under the requested name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It carries no mark: refused, it is not ours.
    Unmanaged,
    /// Its mark names another owner: refused.
    Foreign,
    /// It is ours: the missing steps are completed.
    Resume,
    /// Its mark has no owner: returned exactly as it is.
    AsIs,
}

/// The instance Create found under the requested name.
pub(crate) struct Found<'a> {
    /// The site's session.
    pub(crate) s: &'a Session<'a>,
    /// The request.
    pub(crate) req: &'a CreateRequest,
    /// Its backend name.
    pub(crate) key: &'a str,
    /// What the backend says of it.
    pub(crate) info: &'a InstanceInfo,
    /// Its mark.
    pub(crate) mark: Option<&'a Mark>,
}

/// The steps Create takes to make what is missing of an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Steps {
    /// Read the free capacity first and refuse what does not fit (`quota=detected`).
    pub(crate) precheck: bool,
    /// Define the instance, with its mark.
    pub(crate) define: bool,
    /// Create its disk.
    pub(crate) disk: bool,
    /// Create its cloud-init seed.
    pub(crate) seed: bool,
    /// Start it.
    pub(crate) start: bool,
}

impl TemplateProvider {
    pub(super) async fn create_op(
        &self,
        ctx: &Ctx,
        span: &Span,
        req: &CreateRequest,
    ) -> Result<ProviderId, Error> {
        if let Err(e) = self.seams().validate(req, validate_request(req)) {
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
        let _guard = self.hold(ctx, Op::Create, site, name).await?;
        let fail = |what: &str, f: Failure| self.fail(Op::Create, what, f);
        let s = self
            .session(ctx, span, site)
            .await
            .map_err(|f| fail(&format!("connecting to {site}"), f))?;
        let (key, existing) = match self.look_up_settled(&s, name).await {
            Ok((key, info)) => (key, Some(info)),
            Err(f) if f.is_no_object() => {
                (self.backend_name(req, &Self::mark_for(req, None)), None)
            }
            Err(f) => return Err(fail(&format!("looking up {name}"), f)),
        };
        let key = key.as_str();
        if let Some(info) = &existing {
            let mark = self
                .mark_of(&s, key)
                .await
                .map_err(|f| fail(&format!("reading the mark of {name}"), f))?;
            let verdict = match &mark {
                None => Verdict::Unmanaged,
                Some(m) if !m.uid.is_empty() && m.uid != req.uid => Verdict::Foreign,
                // Our own instance: an earlier Create may have stopped half way, so
                // the steps below finish what is missing and change nothing that
                // exists (a different image, tag or cloud-init is not applied).
                Some(m) if m.uid == req.uid => Verdict::Resume,
                // A marked instance with an empty uid is the same instance, but its
                // owner is unknown, so it is returned exactly as it is.
                Some(_) => Verdict::AsIs,
            };
            let found = Found {
                s: &s,
                req,
                key,
                info,
                mark: mark.as_ref(),
            };
            match self.seams().existing(found, verdict).await? {
                Verdict::Unmanaged => {
                    return Err(self.error(
                        Op::Create,
                        ErrorKind::Permanent,
                        format!("{name} exists at {site} and is not managed by this provider"),
                    ));
                }
                Verdict::Foreign => {
                    return Err(self.error(
                        Op::Create,
                        ErrorKind::Permanent,
                        format!("{name} exists at {site} and belongs to another owner"),
                    ));
                }
                Verdict::Resume => {}
                Verdict::AsIs => return Ok(id),
            }
        }
        self.converge(&s, req, key, existing.as_ref(), fail).await?;
        if self.config.declared.create_return() == CreateReturn::Blocking {
            self.wait_running(&s, key)
                .await
                .map_err(|f| fail(&format!("waiting for {name} to boot"), f))?;
        }
        Ok(id)
    }

    /// Makes whatever of the instance is missing: the quota precheck (`quota=detected`),
    /// then define, disk, seed and start, each skipped when already done. With
    /// `secondary-resources=none` the define carries the disk and the seed itself.
    pub(super) async fn converge(
        &self,
        s: &Session<'_>,
        req: &CreateRequest,
        key: &str,
        existing: Option<&InstanceInfo>,
        fail: impl Fn(&str, Failure) -> Error,
    ) -> Result<(), Error> {
        let (site, name) = (s.site, req.name.as_str());
        let payload = req.cloud_init.expose().as_bytes();
        let whole = self.config.declared.secondary_resources() == SecondaryResources::None;
        let need_disk = existing.is_none_or(|i| !i.disk);
        let need_seed = existing.is_none_or(|i| i.seed.is_none());
        let disk = if need_disk { self.config.disk_bytes } else { 0 };
        let seed = if need_seed { payload.len() as u64 } else { 0 };
        let steps = Steps {
            precheck: disk + seed > 0 && self.config.declared.quota() == QuotaMode::Detected,
            define: existing.is_none(),
            disk: need_disk && !whole,
            seed: need_seed && !whole,
            start: existing.is_none_or(|i| i.power == Power::Stopped),
        };
        let steps = self.seams().steps(s, req, steps);
        if steps.precheck {
            let free = s
                .call(Proc::Capacity, self.backend.capacity(s.conn, site))
                .await
                .map_err(|f| fail(&format!("reading free capacity at {site}"), f))?;
            let needed = disk + seed;
            let short = (needed > free).then_some(needed);
            if let Some(needed) = self.seams().shortfall((disk, seed), free, short) {
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
        if steps.define {
            self.seams().before_change(Op::Create, site, name).await;
            // The mark travels with the define: no instance of ours is ever unmarked.
            let written = self.config.declared.created_at() == CreatedAt::WrittenAtCreate;
            let mark = Self::mark_for(req, written.then(SystemTime::now));
            let mark = self.seams().new_mark(name, mark);
            let define = if whole {
                let parts = (self.config.disk_bytes, payload);
                s.call(
                    Proc::Define,
                    self.backend.define_whole(s.conn, site, key, mark, parts),
                )
                .await
            } else {
                s.call(Proc::Define, self.backend.define(s.conn, site, key, mark))
                    .await
            };
            define.map_err(|f| fail(&format!("defining {name}"), f))?;
        }
        if steps.disk {
            match s
                .call(
                    Proc::CreateDisk,
                    self.backend
                        .create_disk(s.conn, site, key, self.config.disk_bytes),
                )
                .await
            {
                Ok(()) | Err(Failure::Backend(BackendError::Exists(_))) => {}
                Err(f) => return Err(fail(&format!("creating the disk of {name}"), f)),
            }
        }
        if steps.seed {
            match s
                .call(
                    Proc::CreateSeed,
                    self.backend
                        .create_seed(s.conn, site, key, &seed_volume(name), payload),
                )
                .await
            {
                Ok(()) | Err(Failure::Backend(BackendError::Exists(_))) => {}
                Err(f) => return Err(fail(&format!("creating the seed of {name}"), f)),
            }
        }
        if steps.start {
            let started = s
                .call(Proc::Start, self.backend.start(s.conn, site, key))
                .await;
            self.seams()
                .started(s, key, started)
                .await
                .map_err(|f| fail(&format!("starting {name}"), f))?;
        }
        Ok(())
    }

    /// Looks `name` up, waiting (under the deadline) while a removal the backend
    /// accepted is still under way (`delete-return=early`): a Create after a Delete
    /// makes a new instance instead of reviving the one going away.
    async fn look_up_settled(
        &self,
        s: &Session<'_>,
        name: &str,
    ) -> Result<(String, InstanceInfo), Failure> {
        loop {
            let found = self.look_up(s, name).await?;
            if !found.1.removing {
                return Ok(found);
            }
            s.ctx
                .run(tokio::time::sleep(Duration::from_millis(5)))
                .await?;
        }
    }

    /// The mark an instance of `req` carries.
    fn mark_for(req: &CreateRequest, created_at: Option<SystemTime>) -> Mark {
        Mark {
            tag: req.tag.clone(),
            uid: req.uid.clone(),
            created_at,
        }
    }

    /// Polls the addresses of `name` until it reports a usable IPv4.
    pub(super) async fn wait_running(&self, s: &Session<'_>, name: &str) -> Result<(), Failure> {
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
}
