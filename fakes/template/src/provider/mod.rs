//! The template provider: Create, Get, Delete, ListByTag and Check over a
//! [`SimBackend`], written the way a provider for a real backend should be.
//!
//! Everything the provider says to the backend goes through [`Session::call`], its one
//! seam, which opens the `template.<procedure>` span, writes the V2 log line and runs
//! the call under the context's deadline and token.
//! Connections are cached per site and dialled lazily; operations on one name are
//! serialised by a per-name lock and nothing else.
//!
//! Each decision a defect could get wrong passes through a seam ([`seams::Seams`]):
//! each `self.seams().seam(.., correct)` call hands over the value the provider
//! computed, and the provider as shipped ([`seams::Correct`]) keeps it. Code outside
//! this module may install other seams; nothing here knows of it.

mod check;
mod create;
mod delete;
mod errors;
mod get;
mod list;
mod lookup;
pub(crate) mod seams;
mod session;
mod state;

pub(crate) use create::{Found, Steps, Verdict};
pub(crate) use delete::{Left, Removal};
pub use errors::{Failure, classify};
pub(crate) use get::Seen;
pub(crate) use list::Entry;
pub(crate) use session::{Session, Trace};
use state::first_usable;
pub use state::state_of;

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use conformance::fixture::Verbosity;
use conformance::profile::Logging;
use conformance::{
    BoxFuture, Checker, CreateRequest, Ctx, Error, ErrorKind, HostHealth, Instance, Listing, Op,
    Profile, Provider, ProviderId,
};
use tracing::{Level, Span, info, warn};

use crate::backend::{ConnId, SimBackend};
use crate::config::TemplateConfig;
use crate::id::parse_id;
use crate::locks::{NameGuard, NameLocks};
use seams::{Correct, Seams};

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
    pub(crate) backend: SimBackend,
    /// One cached connection per configured site.
    slots: HashMap<String, Slot>,
    /// Per-name locks for Create and Delete.
    pub(crate) locks: NameLocks,
    /// Seams installed over the shipped ones; `None` in the provider as shipped.
    seams: Option<Box<dyn Seams>>,
}

impl fmt::Debug for TemplateProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemplateProvider")
            .field("name", &self.config.name)
            .field("sites", &self.config.sites)
            .finish_non_exhaustive()
    }
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
            seams: None,
        }
    }

    /// The same provider deciding through `seams` instead of the shipped ones.
    pub(crate) fn with_seams(mut self, seams: Box<dyn Seams>) -> TemplateProvider {
        self.seams = Some(seams);
        self
    }

    /// The seams' behaviour: the shipped one unless other seams were installed.
    pub(crate) fn seams(&self) -> &dyn Seams {
        self.seams.as_deref().unwrap_or(&Correct)
    }

    /// The configuration.
    pub fn config(&self) -> &TemplateConfig {
        &self.config
    }

    pub(crate) fn verbosity(&self) -> Verbosity {
        self.config.verbosity.get()
    }

    /// Whether the provider logs at all (`logging=tiered`; `none` writes no line).
    pub(super) fn logs(&self) -> bool {
        self.config.declared.logging() == Logging::Tiered
    }

    pub(super) fn error(&self, op: Op, kind: ErrorKind, message: impl Into<String>) -> Error {
        Error::new(self.config.name.as_str(), op, kind, message)
    }

    /// The error a failed step surfaces as: its kind from [`errors::kind_of`].
    pub(crate) fn fail(&self, op: Op, what: impl Into<String>, f: Failure) -> Error {
        let kind = self.seams().error_kind(op, &f, errors::kind_of(op, &f));
        Error::new(self.config.name.as_str(), op, kind, what).with_source(f)
    }

    /// Logs an operation's outcome: one info line at V1 and above on success, one
    /// warning on failure at every tier.
    pub(super) fn outcome<T>(&self, span: &Span, op: Op, r: &Result<T, Error>) {
        let level = match r {
            _ if !self.logs() => None,
            Ok(_) if self.verbosity() >= Verbosity::V1 => Some(Level::INFO),
            Ok(_) => None,
            Err(_) => Some(Level::WARN),
        };
        let level = self.seams().outcome_line(op, r.is_ok(), level);
        match (level, r) {
            (None, _) => {}
            (Some(Level::INFO), Ok(_)) => info!(parent: span, op = op.as_str(), "succeeded"),
            (Some(Level::INFO), Err(e)) => {
                info!(parent: span, op = op.as_str(), kind = e.kind().name(), error = %e, "failed")
            }
            (Some(_), Ok(_)) => warn!(parent: span, op = op.as_str(), "succeeded"),
            (Some(_), Err(e)) => {
                warn!(parent: span, op = op.as_str(), kind = e.kind().name(), error = %e, "failed")
            }
        }
    }

    /// Serialises `op` with every other operation on `name` at `site`: the guard is
    /// held until the operation ends.
    pub(super) async fn hold(
        &self,
        ctx: &Ctx,
        op: Op,
        site: &str,
        name: &str,
    ) -> Result<Option<NameGuard>, Error> {
        let Some(key) = self.seams().lock_key(op, lock_key(site, name)) else {
            return Ok(None);
        };
        let guard = ctx
            .run(self.locks.lock(&key))
            .await
            .map_err(|i| self.fail(op, format!("waiting for {name}"), i.into()))?;
        Ok(Some(self.seams().lock_guard(op, ctx, guard)))
    }

    /// Parses an ID: malformed → Permanent.
    pub(super) fn locate<'i>(
        &self,
        op: Op,
        id: &'i ProviderId,
    ) -> Result<(&'i str, &'i str), Error> {
        parse_id(id).ok_or_else(|| self.error(op, ErrorKind::Permanent, "malformed instance id"))
    }
}

/// The key of the per-name lock of `name` at `site`.
pub(crate) fn lock_key(site: &str, name: &str) -> String {
    format!("{site}/{name}")
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
    use std::time::Duration;

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
