//! API-visible defects: the correct provider inside a small wrapper that twists
//! one answer (a declaration, an error kind, a listing, a check entry) on its way
//! out.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conformance::profile::{CreateReturn, ListPartial, ProvisioningState};
use conformance::{
    BoxFuture, Checker, CreateRequest, Ctx, Error, ErrorKind, HealthReason, HostHealth, Instance,
    Listing, Op, Profile, Provider, ProviderId,
};

use crate::id::parse_id;
use crate::provider::TemplateProvider;

/// What a [`Twisted`] wrapper changes at the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Twist {
    DeclaresBlocking,
    DeclaresEarly,
    DeclaresPartial,
    DeclaresFailWhole,
    PlacementTransient,
    ErrorCarriesCloudInit,
    MalformedGetNotFound,
    UnconfiguredGetNotFound,
    MalformedDeleteOk,
    UnconfiguredDeletePermanent,
    RepeatDeleteNotFound,
    CancelIsPermanent,
    NoProviderName,
    ListReversed,
    ListSkipsEmptyUid,
    ListTruncatesCreatedAt,
    CheckAddsAggregate,
    CheckTimeoutIsUnreachable,
    CheckInventsReason,
    CheckAuthIsUnreachable,
    CheckHostKeyIsAuthFailed,
    CheckNoCredentialsIsAuthFailed,
    CheckEverythingUnreachable,
    WrongName,
}

/// The correct provider with one API-visible behaviour twisted.
struct Twisted {
    inner: TemplateProvider,
    twist: Twist,
    deleted: Mutex<HashSet<ProviderId>>,
}

impl Twisted {
    fn err(&self, e: Error) -> Error {
        match self.twist {
            Twist::NoProviderName => {
                let mut out = Error::new("", e.op(), e.kind().clone(), e.message().to_owned());
                if let Some(s) = std::error::Error::source(&e) {
                    out = out.with_source(s.to_string());
                }
                out
            }
            _ => e,
        }
    }

    fn on_cancel(&self, ctx: &Ctx, e: Error) -> Error {
        if self.twist == Twist::CancelIsPermanent && e.is_transient() && ctx.token().is_cancelled()
        {
            return Error::new(
                self.inner.name(),
                e.op(),
                ErrorKind::Permanent,
                e.message().to_owned(),
            );
        }
        e
    }
}

#[deny(clippy::missing_trait_methods)]
impl Provider for Twisted {
    fn name(&self) -> &str {
        if self.twist == Twist::WrongName {
            return "not-the-configured-name";
        }
        self.inner.name()
    }

    fn profile(&self) -> Profile {
        let p = self.inner.profile();
        let b = Profile::builder()
            .with_child_spans(p.child_spans())
            .with_quota(p.quota())
            .with_credentials(p.credentials())
            .with_client_kind(p.client_kind())
            .with_gc_mark(p.gc_mark())
            .with_created_at(p.created_at())
            .with_ip_source(p.ip_source())
            .with_not_found(p.not_found())
            .with_delete_return(p.delete_return())
            .with_secondary_resources(p.secondary_resources())
            .with_timeouts(p.timeouts())
            .with_logging(p.logging())
            .with_backend_test(p.backend_test())
            .with_create_return(p.create_return())
            .with_provisioning_state(p.provisioning_state())
            .with_list_partial(p.list_partial());
        let b = match self.twist {
            Twist::DeclaresBlocking => b
                .with_create_return(CreateReturn::Blocking)
                .with_provisioning_state(ProvisioningState::CreateBlocks),
            Twist::DeclaresEarly => b
                .with_create_return(CreateReturn::Early)
                .with_provisioning_state(ProvisioningState::GetReports),
            Twist::DeclaresPartial => b.with_list_partial(ListPartial::Partial),
            Twist::DeclaresFailWhole => b.with_list_partial(ListPartial::FailWhole),
            _ => b,
        };
        b.build().expect("a legal profile")
    }

    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, conformance::Result<ProviderId>> {
        Box::pin(async move {
            if self.twist == Twist::PlacementTransient
                && self.inner.config().site_for(&req.placement).is_none()
            {
                return Err(Error::new(
                    self.inner.name(),
                    Op::Create,
                    ErrorKind::Transient,
                    "placement not mapped yet",
                ));
            }
            let r = self.inner.create(ctx, req).await;
            if let Ok(id) = &r {
                self.deleted.lock().unwrap().remove(id);
            }
            r.map_err(|e| {
                let e = self.on_cancel(ctx, self.err(e));
                if self.twist == Twist::ErrorCarriesCloudInit {
                    let msg = format!("{} (user data {:?})", e.message(), req.cloud_init.expose());
                    return Error::new(self.inner.name(), e.op(), e.kind().clone(), msg);
                }
                e
            })
        })
    }

    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<Instance>> {
        Box::pin(async move {
            let parsed = parse_id(id);
            let missing = |why: &str| Err(Error::not_found(self.inner.name(), Op::Get, why));
            match (self.twist, parsed) {
                (Twist::MalformedGetNotFound, None) => return missing("no such instance"),
                (Twist::UnconfiguredGetNotFound, Some((site, _)))
                    if !self.inner.config().has_site(site) =>
                {
                    return missing("no such instance");
                }
                _ => {}
            }
            self.inner
                .get(ctx, id)
                .await
                .map_err(|e| self.on_cancel(ctx, self.err(e)))
        })
    }

    fn delete<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        Box::pin(async move {
            let parsed = parse_id(id);
            match (self.twist, parsed) {
                (Twist::MalformedDeleteOk, None) => return Ok(()),
                (Twist::UnconfiguredDeletePermanent, Some((site, _)))
                    if !self.inner.config().has_site(site) =>
                {
                    return Err(Error::permanent(
                        self.inner.name(),
                        Op::Delete,
                        "unknown site",
                    ));
                }
                (Twist::RepeatDeleteNotFound, _) if self.deleted.lock().unwrap().contains(id) => {
                    return Err(Error::not_found(
                        self.inner.name(),
                        Op::Delete,
                        "already deleted",
                    ));
                }
                _ => {}
            }
            let r = self.inner.delete(ctx, id).await;
            if r.is_ok() && self.twist == Twist::RepeatDeleteNotFound {
                self.deleted.lock().unwrap().insert(id.clone());
            }
            r.map_err(|e| self.on_cancel(ctx, self.err(e)))
        })
    }

    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, conformance::Result<Listing>> {
        Box::pin(async move {
            let mut l = self
                .inner
                .list_by_tag(ctx, tag)
                .await
                .map_err(|e| self.on_cancel(ctx, self.err(e)))?;
            match self.twist {
                Twist::ListReversed => l.instances.reverse(),
                Twist::ListSkipsEmptyUid => l.instances.retain(|i| !i.uid.is_empty()),
                Twist::ListTruncatesCreatedAt => {
                    for i in &mut l.instances {
                        i.created_at = i.created_at.map(|t| {
                            let secs = t
                                .duration_since(std::time::UNIX_EPOCH)
                                .unwrap_or_default()
                                .as_secs();
                            std::time::UNIX_EPOCH + Duration::from_secs(secs)
                        });
                    }
                }
                _ => {}
            }
            Ok(l)
        })
    }

    fn checker(&self) -> Option<&dyn Checker> {
        Some(self)
    }
}

#[deny(clippy::missing_trait_methods)]
impl Checker for Twisted {
    fn check<'a>(&'a self, ctx: &'a Ctx) -> BoxFuture<'a, Vec<HostHealth>> {
        Box::pin(async move {
            let mut h = self.inner.check(ctx).await;
            match self.twist {
                Twist::CheckAddsAggregate => {
                    let bad = h.iter().find(|x| !x.ready).cloned();
                    h.push(HostHealth {
                        location: "all".into(),
                        ready: bad.is_none(),
                        reason: bad.map_or(HealthReason::Ready, |b| b.reason),
                        message: "every site".into(),
                        details: Default::default(),
                    });
                }
                Twist::CheckTimeoutIsUnreachable => {
                    for x in &mut h {
                        if x.reason == HealthReason::Timeout {
                            x.reason = HealthReason::Unreachable;
                        }
                    }
                }
                Twist::CheckInventsReason => {
                    for x in &mut h {
                        if x.reason == HealthReason::Unreachable {
                            x.reason = HealthReason::Other("Down".into());
                        }
                    }
                }
                Twist::CheckAuthIsUnreachable => {
                    rename(&mut h, HealthReason::AuthFailed, HealthReason::Unreachable)
                }
                Twist::CheckHostKeyIsAuthFailed => rename(
                    &mut h,
                    HealthReason::HostKeyRejected,
                    HealthReason::AuthFailed,
                ),
                Twist::CheckNoCredentialsIsAuthFailed => rename(
                    &mut h,
                    HealthReason::CredentialsUnavailable,
                    HealthReason::AuthFailed,
                ),
                Twist::CheckEverythingUnreachable => {
                    for x in h.iter_mut().filter(|x| !x.ready) {
                        x.reason = HealthReason::Unreachable;
                    }
                }
                _ => {}
            }
            h
        })
    }

    fn extra_reasons(&self) -> &'static [&'static str] {
        self.inner.extra_reasons()
    }
}

/// A Checker whose mapping gives `to` where the cause called for `from`.
fn rename(h: &mut [HostHealth], from: HealthReason, to: HealthReason) {
    for x in h.iter_mut().filter(|x| x.reason == from) {
        x.reason = to.clone();
    }
}

macro_rules! twisted {
    ($($f:ident => $t:ident),* $(,)?) => {
        $(pub(super) fn $f(p: TemplateProvider) -> Arc<dyn Provider> {
            Arc::new(Twisted { inner: p, twist: Twist::$t, deleted: Mutex::default() })
        })*
    };
}

twisted! {
    declares_blocking => DeclaresBlocking,
    declares_early => DeclaresEarly,
    declares_partial => DeclaresPartial,
    declares_fail_whole => DeclaresFailWhole,
    placement_transient => PlacementTransient,
    error_carries_cloud_init => ErrorCarriesCloudInit,
    malformed_get_not_found => MalformedGetNotFound,
    unconfigured_get_not_found => UnconfiguredGetNotFound,
    malformed_delete_ok => MalformedDeleteOk,
    unconfigured_delete_permanent => UnconfiguredDeletePermanent,
    repeat_delete_not_found => RepeatDeleteNotFound,
    cancel_is_permanent => CancelIsPermanent,
    no_provider_name => NoProviderName,
    list_reversed => ListReversed,
    list_skips_empty_uid => ListSkipsEmptyUid,
    list_truncates_created_at => ListTruncatesCreatedAt,
    check_adds_aggregate => CheckAddsAggregate,
    check_timeout_is_unreachable => CheckTimeoutIsUnreachable,
    check_invents_reason => CheckInventsReason,
    check_auth_is_unreachable => CheckAuthIsUnreachable,
    check_host_key_is_auth_failed => CheckHostKeyIsAuthFailed,
    check_no_credentials_is_auth_failed => CheckNoCredentialsIsAuthFailed,
    check_everything_unreachable => CheckEverythingUnreachable,
    wrong_name => WrongName,
}
