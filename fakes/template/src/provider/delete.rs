//! Delete: stop, undefine and remove the parts, each tolerant of what is already gone.

use conformance::fixture::Power;
use conformance::profile::SecondaryResources;
use conformance::{Ctx, Error, ErrorKind, Op, ProviderId};
use tracing::Span;

use crate::backend::{Proc, seed_volume};

use super::{Failure, Session, TemplateProvider};

impl TemplateProvider {
    pub(super) async fn delete_op(
        &self,
        ctx: &Ctx,
        span: &Span,
        id: &ProviderId,
    ) -> Result<(), Error> {
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
        let (key, info) = match self.look_up(&s, name).await {
            Ok(found) => found,
            Err(f) if f.is_no_object() && q.delete_done_without_primary => return Ok(()),
            Err(f) if f.is_no_object() => return self.remove_parts(&s, name, true).await,
            Err(f) => return Err(fail(format!("looking up {name}"), f)),
        };
        let mark = match self.mark_of(&s, &key).await {
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
            self.meet_another(&self.lock_key(site, name)).await;
        }
        if info.power != Power::Stopped && !q.delete_without_stop {
            match s
                .call(Proc::Stop, self.backend.stop(s.conn, site, &key))
                .await
            {
                Ok(()) => {}
                Err(f) if f.is_no_object() => {}
                Err(f) => return Err(fail(format!("stopping {name}"), f)),
            }
        }
        match s
            .call(Proc::Undefine, self.backend.undefine(s.conn, site, &key))
            .await
        {
            Ok(()) => {}
            Err(f) if f.is_no_object() => {}
            Err(f) => return Err(fail(format!("undefining {name}"), f)),
        }
        self.remove_parts(&s, name, !q.delete_requires_parts).await
    }

    /// Whether Delete removes the disk and the seed itself
    /// (`secondary-resources=explicit`); the backend does it otherwise, or there are none.
    fn owns_parts(&self) -> bool {
        self.config.declared.secondary_resources() == SecondaryResources::Explicit
    }

    /// Deletes the disk and the seed of `name`; with `tolerant`, parts (or the whole
    /// volume store) already gone are fine.
    pub(super) async fn remove_parts(
        &self,
        s: &Session<'_>,
        name: &str,
        tolerant: bool,
    ) -> Result<(), Error> {
        if !self.owns_parts() {
            return Ok(());
        }
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
}
