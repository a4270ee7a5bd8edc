//! Delete: stop, undefine and remove the parts, each tolerant of what is already gone.

use conformance::fixture::Power;
use conformance::profile::SecondaryResources;
use conformance::{Ctx, Error, ErrorKind, Op, ProviderId};
use tracing::Span;

use crate::backend::{BackendError, Proc, seed_volume};

use super::{Failure, Session, TemplateProvider};

/// What Delete finds of an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// No record: at most parts of an interrupted Create or Delete are left.
    NoRecord,
    /// The record went away while Delete read its mark.
    Vanished,
    /// The record, running or not, with or without a mark.
    Record {
        /// Whether it is anything but stopped.
        running: bool,
        /// Whether it carries a mark.
        marked: bool,
    },
}

/// What Delete does about what it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Removal {
    /// Leave it alone and fail: it is not managed by this provider.
    pub(crate) refuse: bool,
    /// Stop it first.
    pub(crate) stop: bool,
    /// Undefine it.
    pub(crate) undefine: bool,
    /// Delete its disk.
    pub(crate) disk: bool,
    /// Delete its seed.
    pub(crate) seed: bool,
    /// Whether a part (or the whole volume store) already gone is fine.
    pub(crate) tolerant: bool,
}

impl TemplateProvider {
    pub(super) async fn delete_op(
        &self,
        ctx: &Ctx,
        span: &Span,
        id: &ProviderId,
    ) -> Result<(), Error> {
        let (site, name) = self.locate(Op::Delete, id)?;
        if !self.config.has_site(site) {
            // Nothing of ours can live where we were never configured to go.
            return Ok(());
        }
        let fail = |what: String, f: Failure| self.fail(Op::Delete, what, f);
        let _guard = self.hold(ctx, Op::Delete, site, name).await?;
        let s = self
            .session(ctx, span, site)
            .await
            .map_err(|f| fail(format!("connecting to {site}"), f))?;
        let (found, left) = match self.look_up(&s, name).await {
            Ok((key, info)) => match self.mark_of(&s, &key).await {
                Ok(mark) => {
                    let left = Left::Record {
                        running: info.power != Power::Stopped,
                        marked: mark.is_some(),
                    };
                    (Some(key), left)
                }
                Err(f) if f.is_no_object() => (None, Left::Vanished),
                Err(f) => return Err(fail(format!("reading the mark of {name}"), f)),
            },
            Err(f) if f.is_no_object() => (None, Left::NoRecord),
            Err(f) => return Err(fail(format!("looking up {name}"), f)),
        };
        let plan = self.seams().removal(site, left, self.removal(left));
        if plan.refuse {
            return Err(self.error(
                Op::Delete,
                self.seams().refusal_kind(ErrorKind::Permanent),
                format!("{name} at {site} is not managed by this provider; left alone"),
            ));
        }
        if let Some(key) = &found {
            self.seams().before_change(Op::Delete, site, name).await;
            if plan.stop {
                match s
                    .call(Proc::Stop, self.backend.stop(s.conn, site, key))
                    .await
                {
                    Ok(()) => {}
                    Err(f) if f.is_no_object() => {}
                    Err(f) => return Err(fail(format!("stopping {name}"), f)),
                }
            }
            if plan.undefine {
                match s
                    .call(Proc::Undefine, self.backend.undefine(s.conn, site, key))
                    .await
                {
                    Ok(()) => {}
                    Err(f) if f.is_no_object() => {}
                    Err(f) => return Err(fail(format!("undefining {name}"), f)),
                }
            }
        }
        self.remove_parts(&s, name, left, plan).await
    }

    /// What Delete does about `left`: an unmarked record is left alone; a record is
    /// stopped (when running) and undefined; the parts go too when Delete owns them
    /// (`secondary-resources=explicit`; the backend removes them otherwise, or there
    /// are none), whatever is already gone.
    fn removal(&self, left: Left) -> Removal {
        let parts = self.config.declared.secondary_resources() == SecondaryResources::Explicit;
        let (refuse, stop, undefine) = match left {
            Left::NoRecord | Left::Vanished => (false, false, false),
            Left::Record { marked: false, .. } => (true, false, false),
            Left::Record { running, .. } => (false, running, true),
        };
        Removal {
            refuse,
            stop,
            undefine,
            disk: parts,
            seed: parts,
            tolerant: true,
        }
    }

    /// Deletes the parts of `name` that `plan` names.
    async fn remove_parts(
        &self,
        s: &Session<'_>,
        name: &str,
        left: Left,
        plan: Removal,
    ) -> Result<(), Error> {
        let site = s.site;
        let disk = if plan.disk {
            let r = s
                .call(
                    Proc::DeleteDisk,
                    self.backend.delete_disk(s.conn, site, name),
                )
                .await;
            self.seams().part_removed(left, "disk", r)
        } else {
            Ok(())
        };
        // A defect's extra removals (none in the provider as shipped).
        for other in self.seams().also_removed(name) {
            let r = s
                .call(
                    Proc::DeleteDisk,
                    self.backend.delete_disk(s.conn, site, &other),
                )
                .await;
            if let Err(f) = r.or_else(|f| if f.is_gone() { Ok(()) } else { Err(f) }) {
                return Err(self.fail(Op::Delete, format!("deleting the disk of {other}"), f));
            }
        }
        // With the volume store gone, so is the seed.
        let store_gone = matches!(&disk, Err(Failure::Backend(BackendError::NoContainer(_))));
        let seed = if plan.seed && !store_gone {
            let r = s
                .call(
                    Proc::DeleteSeed,
                    self.backend.delete_seed(s.conn, site, &seed_volume(name)),
                )
                .await;
            self.seams().part_removed(left, "seed", r)
        } else {
            Ok(())
        };
        for (part, r) in [("disk", disk), ("seed", seed)] {
            match r {
                Ok(()) => {}
                Err(f) if plan.tolerant && f.is_gone() => {}
                Err(f) => {
                    return Err(self.fail(Op::Delete, format!("deleting the {part} of {name}"), f));
                }
            }
        }
        Ok(())
    }
}
