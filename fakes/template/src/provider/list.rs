//! ListByTag: every site at once, each under part of the caller's deadline.

use conformance::profile::{CreatedAt, ListPartial};
use conformance::{Ctx, Error, Instance, Listing, Op, UnreachableLocation};
use futures_util::future::join_all;
use tracing::{Span, warn};

use crate::backend::{BackendError, Listed, Mark, Proc, mark_in_name};
use crate::id::instance_id;

use super::{Failure, TemplateProvider, state_of};

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
        let site_ctx = match ctx.remaining() {
            Some(left) if !self.fail_whole() && !self.config.quirks.list_waits_for_every_site => {
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
        let q = self.config.quirks;
        let s = self.session(ctx, span, site).await?;
        let mut out = Vec::new();
        let items = s
            .read(Proc::List, || self.backend.list(s.conn, site))
            .await?;
        for item in items {
            if self.marks_in_names() {
                let (mark, short) = mark_in_name(&item.name);
                let mark = match mark {
                    Some(m) if m.tag == tag => m,
                    None if q.list_unmarked => Mark {
                        tag: String::new(),
                        uid: String::new(),
                        created_at: None,
                    },
                    _ => continue,
                };
                out.push(self.listed(site, short, &item, mark));
                continue;
            }
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
                    if self.logs() {
                        warn!(parent: span, site, instance = %item.name, "skipping {what}");
                    }
                    continue;
                }
                Err(f) => return Err(f),
            };
            out.push(self.listed(site, &item.name, &item, mark));
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
