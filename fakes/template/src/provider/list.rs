//! ListByTag: every site at once, each under part of the caller's deadline.

use conformance::profile::{CreatedAt, ListPartial};
use conformance::{Ctx, Error, ErrorKind, Instance, Listing, Op, UnreachableLocation};
use futures_util::future::join_all;
use tracing::{Span, warn};

use crate::backend::{BackendError, Listed, Mark, Proc, mark_in_name};
use crate::id::instance_id;

use super::{Failure, TemplateProvider, errors, state_of};

/// What a listing does with one backend entry, given what reading its mark gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Listed, with this mark.
    Keep(Mark),
    /// Left out: not ours, not the tag asked for, gone meanwhile, or unreadable.
    Skip,
    /// The site's listing fails.
    Fail(Failure),
}

impl TemplateProvider {
    /// Whether one unreadable site fails the whole listing (`list-partial=fail-whole`).
    fn fail_whole(&self) -> bool {
        self.config.declared.list_partial() == ListPartial::FailWhole
    }

    pub(super) async fn list_op(
        &self,
        ctx: &Ctx,
        span: &Span,
        tag: &str,
    ) -> Result<Listing, Error> {
        // A partial listing must come back before the caller's deadline with a silent
        // site named, so each site gets three quarters of the time left.
        let share = match ctx.remaining() {
            Some(left) if !self.fail_whole() => Some(left * 3 / 4),
            _ => None,
        };
        let site_ctx = match self.seams().site_share(share) {
            Some(share) => ctx.narrowed(share),
            None => ctx.clone(),
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
                Err(f) if self.fail_whole() => {
                    return Err(self.fail(Op::ListByTag, format!("listing {}", site.name), f));
                }
                Err(f) => {
                    if self.logs() {
                        warn!(parent: span, site = %site.name, error = %f, "site skipped");
                    }
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
    pub(super) async fn list_site(
        &self,
        ctx: &Ctx,
        span: &Span,
        site: &str,
        tag: &str,
    ) -> Result<Vec<Instance>, Failure> {
        let s = self.session(ctx, span, site).await?;
        let mut out = Vec::new();
        let items = s
            .read(Proc::List, || self.backend.list(s.conn, site))
            .await?;
        for item in items {
            let (read, short) = if self.marks_in_names() {
                let (mark, short) = mark_in_name(&item.name);
                (Ok(mark), short)
            } else {
                let read = s
                    .read(Proc::ReadMark, || {
                        self.backend.read_mark(s.conn, site, &item.name)
                    })
                    .await;
                (read, item.name.as_str())
            };
            let entry = match &read {
                Ok(Some(m)) if m.tag == tag => Entry::Keep(m.clone()),
                // Unmarked (not ours) or another tag.
                Ok(_) => Entry::Skip,
                // Deleted since the listing: it no longer exists.
                Err(f) if f.is_no_object() => Entry::Skip,
                // One unreadable instance does not hide the others, nor does one whose
                // read the backend refuses for good.
                Err(Failure::Backend(BackendError::Unreadable(_))) => Entry::Skip,
                Err(f) if errors::kind_of(Op::ListByTag, f) == ErrorKind::Permanent => Entry::Skip,
                Err(f) => Entry::Fail(f.clone()),
            };
            match self.seams().entry(&read, entry) {
                Entry::Keep(mark) => out.push(self.listed(site, short, &item, mark)),
                Entry::Skip => match &read {
                    Err(Failure::Backend(BackendError::Unreadable(what))) if self.logs() => {
                        warn!(parent: span, site, instance = %item.name, "skipping {what}");
                    }
                    Err(f) if !f.is_no_object() && self.logs() => {
                        warn!(parent: span, site, instance = %item.name, error = %f, "skipping an instance whose mark cannot be read");
                    }
                    _ => {}
                },
                Entry::Fail(f) => return Err(f),
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// A listed instance, as ListByTag reports it: no address, state from power alone.
    fn listed(&self, site: &str, name: &str, item: &Listed, mark: Mark) -> Instance {
        let (state, _) = state_of(item.power, None);
        let created_at = match self.config.declared.created_at() {
            CreatedAt::WrittenAtCreate => mark.created_at,
            CreatedAt::BackendReported => Some(item.defined_at),
            CreatedAt::None => None,
        };
        Instance {
            id: instance_id(site, name),
            name: name.to_owned(),
            state,
            ipv4: None,
            uid: mark.uid,
            tag: mark.tag,
            created_at,
        }
    }
}
