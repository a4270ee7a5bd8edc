//! Create: validation, placement, the ownership guard, then define, disk, seed and
//! start, each skipped when already done, so that the next Create completes an
//! interrupted one.

use std::time::{Duration, SystemTime};

use conformance::fixture::{Power, Verbosity};
use conformance::profile::{CreateReturn, CreatedAt, QuotaMode, SecondaryResources};
use conformance::{
    CreateRequest, Ctx, Error, ErrorKind, Op, ProviderId, Quota, validate_name, validate_request,
    validate_tag,
};
use tracing::{Span, debug};

use crate::backend::{BackendError, InstanceInfo, Mark, Proc, digest, seed_volume};
use crate::id::instance_id;

use super::{Failure, Session, TemplateProvider, first_usable};

impl TemplateProvider {
    pub(super) async fn create_op(
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
                || (q.quota_refusal_transient
                    && matches!(f, Failure::Backend(BackendError::NoSpace { .. })))
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
                        s.call(Proc::Undefine, self.backend.undefine(s.conn, site, key))
                            .await
                            .map_err(|f| fail(&format!("restamping {name}"), f))?;
                        s.call(Proc::Define, self.backend.define(s.conn, site, key, fresh))
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
                                key,
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
        let (site, name, q) = (s.site, req.name.as_str(), self.config.quirks);
        let payload = req.cloud_init.expose().as_bytes();
        let whole = self.config.declared.secondary_resources() == SecondaryResources::None;
        let need_disk = existing.is_none_or(|i| !i.disk);
        let need_seed = existing.is_none_or(|i| i.seed.is_none());
        let needed = if need_disk { self.config.disk_bytes } else { 0 }
            + if need_seed { payload.len() as u64 } else { 0 };
        let precheck = self.config.declared.quota() == QuotaMode::Detected;
        if needed > 0 && precheck && !q.no_quota_precheck {
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
                self.meet_another(&self.lock_key(site, name)).await;
            }
            // The mark travels with the define: no instance of ours is ever unmarked.
            let written =
                !q.no_created_at && self.config.declared.created_at() == CreatedAt::WrittenAtCreate;
            let mark = Self::mark_for(req, written.then(SystemTime::now));
            if q.created_at_in_memory {
                self.written
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        name.to_owned(),
                        mark.created_at.unwrap_or(SystemTime::UNIX_EPOCH),
                    );
            }
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
        if need_disk && !whole {
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
        if need_seed && !whole {
            if q.log_cloud_init && self.verbosity() >= Verbosity::V2 {
                debug!(parent: s.span, user_data = req.cloud_init.expose(), "writing seed");
            }
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
        if existing.is_none_or(|i| i.power == Power::Stopped) {
            let started = s
                .call(Proc::Start, self.backend.start(s.conn, site, key))
                .await;
            let started = match started {
                Err(Failure::Backend(BackendError::Closed)) if q.retry_start_blindly => {
                    let again = self
                        .session(s.ctx, s.span, site)
                        .await
                        .map_err(|f| fail(&format!("reconnecting to {site}"), f))?;
                    again
                        .call(Proc::Start, self.backend.start(again.conn, site, key))
                        .await
                }
                r => r,
            };
            started.map_err(|f| fail(&format!("starting {name}"), f))?;
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
