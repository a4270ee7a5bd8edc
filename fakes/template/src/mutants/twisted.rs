//! API-visible defects: the correct provider inside a small wrapper that twists
//! one answer (a declaration, an error kind, a listing, a check entry) on its way
//! out.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conformance::profile::{CreateReturn, ListPartial, ProvisioningState};
use conformance::{
    BoxFuture, CreateRequest, Ctx, Error, ErrorKind, Instance, Listing, Op, Profile, Provider,
    ProviderId, Quota, State, UnreachableLocation, validate_name, validate_tag, validate_uid,
};
use tracing::Instrument;

use super::DELIBERATE_PANIC;
use crate::id::{instance_id, parse_id};
use crate::provider::TemplateProvider;

mod check;

/// What a [`Twisted`] wrapper changes at the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Twist {
    DeclaresBlocking,
    DeclaresEarly,
    DeclaresPartial,
    DeclaresFailWhole,
    PlacementTransient,
    ErrorCarriesCloudInit,
    /// Create logs the payload at WARN when it fails with QuotaExceeded.
    WarnsCloudInitOnQuota,
    /// Every error's message is empty.
    ErrorsWithoutMessage,
    /// Create answers Ok with the instance's ID when the backend failed it
    /// transiently (its deadline aside).
    CreateSwallowsBackendErrors,
    /// Delete answers Ok, as if the instance were gone, when the backend failed it
    /// transiently (its deadline aside).
    DeleteSwallowsBackendErrors,
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
    /// A site that denies the check's calls is reported Unreachable.
    CheckDeniedIsUnreachable,
    CheckContainerMissingIsUnreachable,
    /// Declares no reason of its own, yet reports one when the container is missing.
    CheckDeclaresNoReasons,
    CheckHostKeyIsAuthFailed,
    CheckNoCredentialsIsAuthFailed,
    CheckEverythingUnreachable,
    WrongName,
    /// A name this provider created (and has not deleted) is refused as existing.
    RepeatCreateTransient,
    /// The first Get of an ID after its Create returned still says Provisioning.
    GetLagsAfterCreate,
    /// A booting instance is reported Running.
    BootingIsRunning,
    /// An unmapped placement falls back to the first site, then is refused.
    UnknownPlacementCreatesAtFirst,
    /// QuotaExceeded without what is short or the figures.
    QuotaWithoutFigures,
    /// Create runs in a span of its own that records the cloud-init payload.
    SpanCarriesCloudInit,
    /// A request whose only fault is its uid is created with a placeholder uid, then
    /// refused.
    InvalidUidCreatesThenRefuses,
    /// The uid is not read back: Get and listings report an empty one.
    ReportsNoUid,
    /// The creation time is read back an hour early, by Get and listings alike.
    CreatedAtAnHourEarly,
    /// Get percent-decodes the ID and panics on a `%`.
    GetPanicsOnPercent,
    /// Delete percent-decodes the ID and panics on a `%`.
    DeletePanicsOnPercent,
    /// Delete's backend Transient errors surface as Permanent.
    DeleteTransientIsPermanent,
    /// Every listing is empty.
    ListReturnsNothing,
    /// A listed instance with an empty uid is shown with the uid `unknown`.
    ListFillsEmptyUid,
    /// Every second listing reverses each location's instances.
    ListOrderAlternates,
    /// A partial listing names no location unreachable.
    PartialNamesNoLocation,
    /// A partial listing names the unreachable location with an empty reason.
    PartialNamesNoReason,
    /// A listing whose first site is unreachable fails whole (Transient), as if the
    /// first site's answer were the listing's.
    PartialFailsOnTheFirstSite,
    /// Every listing names the last site unreachable although it answered.
    NamesReachableLocation,
    /// Every listed instance shows Stopped.
    ListSaysStopped,
    /// Each operation runs under a deadline 750 ms later than its caller's.
    OverstaysDeadline,
    /// Get's errors name the operation Delete.
    ErrorNamesAnotherOperation,
    /// Each operation opens and closes an empty span before its own.
    OpensTwoSpans,
    /// Check's entries in reverse order.
    CheckReversed,
    /// Check runs under a deadline 750 ms later than its caller's.
    CheckOverstaysDeadline,
    /// A Timeout entry says ready.
    CheckReadyWithReason,
    /// A refused site is reported as a Timeout.
    CheckRefusedIsTimeout,
    /// The first Create takes a while to set the provider up; a Create of another
    /// name that arrives meanwhile fails with Transient instead of waiting for it.
    FirstCreatesDoNotWait,
    /// The first Create takes a while to set the provider up; a Create that arrived
    /// meanwhile and is refused for capacity reports Transient.
    WaitersQuotaTransient,
}

/// The correct provider with one API-visible behaviour twisted.
struct Twisted {
    inner: TemplateProvider,
    twist: Twist,
    deleted: Mutex<HashSet<ProviderId>>,
    /// The IDs whose Create returned (and that were not deleted since).
    created: Mutex<HashSet<ProviderId>>,
    /// How many listings this provider has answered.
    listings: AtomicUsize,
    /// The first Create's setup, while it runs: another Create arriving meanwhile is
    /// a waiter.
    first: tokio::sync::Mutex<bool>,
    /// Whether that setup is done.
    set_up: std::sync::atomic::AtomicBool,
}

/// A context like `ctx` (span kept) that hears of its caller's deadline and
/// cancellation 750 ms late: a provider that pads the time it was given.
pub(super) fn late(ctx: &Ctx) -> Ctx {
    const LATE: Duration = Duration::from_millis(750);
    let mut out = Ctx::new().in_span(ctx.span().clone());
    if let Some(d) = ctx.deadline() {
        out = out.deadline_at(d + LATE);
    }
    let (caller, own) = (ctx.token().clone(), out.token().clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = caller.cancelled() => {
                tokio::time::sleep(LATE).await;
                own.cancel();
            }
            _ = own.cancelled() => {}
        }
    });
    out
}

/// What a sloppy percent-decoder does with an ID holding a `%`.
fn decode_or_panic(id: &ProviderId) {
    if let Some(at) = id.as_str().find('%') {
        panic!("{DELIBERATE_PANIC} at byte {at}");
    }
}

impl Twisted {
    fn err(&self, e: Error) -> Error {
        match self.twist {
            Twist::ErrorsWithoutMessage => {
                let mut out = Error::new(e.provider(), e.op(), e.kind().clone(), "");
                if let Some(s) = std::error::Error::source(&e) {
                    out = out.with_source(s.to_string());
                }
                out
            }
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

    /// The same error, with its kind and operation replaced.
    fn recast(&self, e: Error, op: Op, kind: ErrorKind, message: impl Into<String>) -> Error {
        let mut out = Error::new(self.inner.name(), op, kind, message);
        if let Some(s) = std::error::Error::source(&e) {
            out = out.with_source(s.to_string());
        }
        out
    }

    /// What every operation does before the provider's own work: the context it runs
    /// under.
    fn prologue(&self, ctx: &Ctx) -> Ctx {
        match self.twist {
            Twist::OverstaysDeadline => late(ctx),
            Twist::OpensTwoSpans => {
                drop(tracing::info_span!(parent: ctx.span(), "template.prepare"));
                ctx.clone()
            }
            _ => ctx.clone(),
        }
    }

    /// The first Create's setup (for the twists that have one): the first caller holds
    /// it for 100 ms; returns whether this caller arrived while it was held.
    async fn first_setup(&self) -> bool {
        if !matches!(
            self.twist,
            Twist::FirstCreatesDoNotWait | Twist::WaitersQuotaTransient
        ) {
            return false;
        }
        if self.set_up.load(Ordering::SeqCst) {
            return false;
        }
        let Ok(mut done) = self.first.try_lock() else {
            // Held: another Create is setting up. Wait for it, as a waiter.
            drop(self.first.lock().await);
            return true;
        };
        if !*done {
            tokio::time::sleep(Duration::from_millis(100)).await;
            *done = true;
            self.set_up.store(true, Ordering::SeqCst);
        }
        false
    }

    /// An instance as Get or a listing reports it.
    fn shown(&self, mut i: Instance) -> Instance {
        match self.twist {
            Twist::ReportsNoUid => i.uid.clear(),
            Twist::CreatedAtAnHourEarly => {
                i.created_at = i.created_at.map(|t| t - Duration::from_secs(3600));
            }
            _ => {}
        }
        i
    }

    /// The ID `req` lands at, when its placement is mapped.
    fn target(&self, req: &CreateRequest) -> Option<ProviderId> {
        let site = self.inner.config().site_for(&req.placement)?;
        Some(instance_id(&site.name, &req.name))
    }

    /// Create's twists that answer before (or instead of) the provider's Create.
    async fn create_early(
        &self,
        ctx: &Ctx,
        req: &CreateRequest,
    ) -> Option<conformance::Result<ProviderId>> {
        let name = self.inner.name();
        let target = self.target(req);
        match self.twist {
            Twist::PlacementTransient if target.is_none() => Some(Err(Error::new(
                name,
                Op::Create,
                ErrorKind::Transient,
                "placement not mapped yet",
            ))),
            Twist::RepeatCreateTransient
                if target
                    .as_ref()
                    .is_some_and(|id| self.created.lock().unwrap().contains(id)) =>
            {
                Some(Err(Error::transient(
                    name,
                    Op::Create,
                    format!("{} already exists", req.name),
                )))
            }
            Twist::UnknownPlacementCreatesAtFirst if target.is_none() => {
                let first = self.inner.config().sites.first()?;
                let mut moved = req.clone();
                moved.placement = first.placement.clone();
                let _ = self.inner.create(ctx, &moved).await;
                Some(Err(Error::permanent(
                    name,
                    Op::Create,
                    format!("placement {:?} is not configured", req.placement),
                )))
            }
            Twist::InvalidUidCreatesThenRefuses
                if validate_uid(&req.uid).is_err()
                    && validate_name(&req.name).is_ok()
                    && validate_tag(&req.tag).is_ok() =>
            {
                let mut placeholder = req.clone();
                placeholder.uid = "pending-uid".into();
                let _ = self.inner.create(ctx, &placeholder).await;
                Some(Err(Error::permanent(name, Op::Create, "invalid uid")))
            }
            _ => None,
        }
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
            let mut ctx = self.prologue(ctx);
            if let Some(r) = self.create_early(&ctx, req).await {
                return r;
            }
            let waited = self.first_setup().await;
            if waited && self.twist == Twist::FirstCreatesDoNotWait {
                return Err(Error::new(
                    self.inner.name(),
                    Op::Create,
                    ErrorKind::Transient,
                    "the provider is still being set up",
                ));
            }
            let r = if self.twist == Twist::SpanCarriesCloudInit {
                let span = tracing::info_span!(
                    parent: ctx.span(),
                    "template.request",
                    user_data = req.cloud_init.expose()
                );
                ctx = ctx.in_span(span.clone());
                self.inner.create(&ctx, req).instrument(span).await
            } else {
                self.inner.create(&ctx, req).await
            };
            if let Ok(id) = &r {
                self.deleted.lock().unwrap().remove(id);
                if matches!(
                    self.twist,
                    Twist::RepeatCreateTransient | Twist::GetLagsAfterCreate
                ) {
                    self.created.lock().unwrap().insert(id.clone());
                }
            }
            if self.twist == Twist::CreateSwallowsBackendErrors
                && matches!(&r, Err(e) if e.is_transient())
                && ctx.interrupted().is_none()
                && let Some(id) = self.target(req)
            {
                return Ok(id);
            }
            r.map_err(|e| {
                let e = self.on_cancel(&ctx, self.err(e));
                match (self.twist, e.kind()) {
                    (Twist::WaitersQuotaTransient, ErrorKind::QuotaExceeded(_)) if waited => self
                        .recast(
                            e,
                            Op::Create,
                            ErrorKind::Transient,
                            "the shared setup failed",
                        ),
                    (Twist::ErrorCarriesCloudInit, _) => {
                        let msg =
                            format!("{} (user data {:?})", e.message(), req.cloud_init.expose());
                        Error::new(self.inner.name(), e.op(), e.kind().clone(), msg)
                    }
                    (Twist::WarnsCloudInitOnQuota, ErrorKind::QuotaExceeded(_)) => {
                        tracing::warn!(
                            parent: ctx.span(),
                            "create refused for want of room; user data was {:?}",
                            req.cloud_init.expose()
                        );
                        e
                    }
                    (Twist::QuotaWithoutFigures, ErrorKind::QuotaExceeded(_)) => {
                        let blank = Quota {
                            what: String::new(),
                            available: 0,
                            needed: 0,
                        };
                        let kind = ErrorKind::QuotaExceeded(blank);
                        self.recast(e, Op::Create, kind, "quota exceeded")
                    }
                    _ => e,
                }
            })
        })
    }

    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<Instance>> {
        Box::pin(async move {
            let ctx = self.prologue(ctx);
            if self.twist == Twist::GetPanicsOnPercent {
                decode_or_panic(id);
            }
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
            let r = self.inner.get(&ctx, id).await;
            let r = r.map_err(|e| {
                let e = self.on_cancel(&ctx, self.err(e));
                if self.twist == Twist::ErrorNamesAnotherOperation {
                    let (kind, msg) = (e.kind().clone(), e.message().to_owned());
                    return self.recast(e, Op::Delete, kind, msg);
                }
                e
            });
            let mut i = self.shown(r?);
            match self.twist {
                Twist::GetLagsAfterCreate if self.created.lock().unwrap().remove(id) => {
                    i.state = State::Provisioning;
                    i.ipv4 = None;
                }
                Twist::BootingIsRunning if i.state == State::Provisioning => {
                    i.state = State::Running;
                }
                _ => {}
            }
            Ok(i)
        })
    }

    fn delete<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        Box::pin(async move {
            let ctx = self.prologue(ctx);
            if self.twist == Twist::DeletePanicsOnPercent {
                decode_or_panic(id);
            }
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
            let r = self.inner.delete(&ctx, id).await;
            if self.twist == Twist::DeleteSwallowsBackendErrors
                && matches!(&r, Err(e) if e.is_transient())
                && ctx.interrupted().is_none()
            {
                return Ok(());
            }
            if r.is_ok() {
                self.created.lock().unwrap().remove(id);
                if self.twist == Twist::RepeatDeleteNotFound {
                    self.deleted.lock().unwrap().insert(id.clone());
                }
            }
            r.map_err(|e| {
                let e = self.on_cancel(&ctx, self.err(e));
                if self.twist == Twist::DeleteTransientIsPermanent
                    && e.is_transient()
                    && ctx.interrupted().is_none()
                {
                    let msg = e.message().to_owned();
                    return self.recast(e, Op::Delete, ErrorKind::Permanent, msg);
                }
                e
            })
        })
    }

    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, conformance::Result<Listing>> {
        Box::pin(async move {
            let ctx = self.prologue(ctx);
            let l = self
                .inner
                .list_by_tag(&ctx, tag)
                .await
                .map_err(|e| self.on_cancel(&ctx, self.err(e)))?;
            if self.twist == Twist::PartialFailsOnTheFirstSite
                && let Some(first) = l.unreachable.iter().find(|u| u.location == "site-a")
            {
                return Err(Error::new(
                    self.inner.name(),
                    Op::ListByTag,
                    ErrorKind::Transient,
                    format!("listing site-a: {}", first.reason),
                ));
            }
            let nth = self.listings.fetch_add(1, Ordering::Relaxed);
            Ok(self.twist_listing(l, nth))
        })
    }

    fn checker(&self) -> Option<&dyn conformance::Checker> {
        Some(self)
    }
}

impl Twisted {
    /// A listing as the twist shows it; `nth` counts this provider's listings from 0.
    fn twist_listing(&self, mut l: Listing, nth: usize) -> Listing {
        l.instances = l.instances.into_iter().map(|i| self.shown(i)).collect();
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
            Twist::ListReturnsNothing => l.instances.clear(),
            Twist::ListFillsEmptyUid => {
                for i in l.instances.iter_mut().filter(|i| i.uid.is_empty()) {
                    i.uid = "unknown".into();
                }
            }
            Twist::ListOrderAlternates if nth % 2 == 1 => {
                let site = |i: &Instance| parse_id(&i.id).map(|(s, _)| s.to_owned());
                for run in l.instances.chunk_by_mut(|a, b| site(a) == site(b)) {
                    run.reverse();
                }
            }
            Twist::PartialNamesNoLocation => l.unreachable.clear(),
            Twist::PartialNamesNoReason => {
                for u in &mut l.unreachable {
                    u.reason.clear();
                }
            }
            Twist::NamesReachableLocation => {
                if let Some(last) = self.inner.config().sites.last()
                    && !l.unreachable.iter().any(|u| u.location == last.name)
                {
                    l.unreachable.push(UnreachableLocation {
                        location: last.name.clone(),
                        reason: "connection refused".into(),
                    });
                }
            }
            Twist::ListSaysStopped => {
                for i in &mut l.instances {
                    i.state = State::Stopped;
                }
            }
            _ => {}
        }
        l
    }
}

macro_rules! twisted {
    ($($f:ident => $t:ident),* $(,)?) => {
        $(pub(super) fn $f(p: TemplateProvider) -> Arc<dyn Provider> {
            Arc::new(Twisted {
                inner: p,
                twist: Twist::$t,
                deleted: Mutex::default(),
                created: Mutex::default(),
                listings: AtomicUsize::new(0),
                first: tokio::sync::Mutex::new(false),
                set_up: Default::default(),
            })
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
    warns_cloud_init_on_quota => WarnsCloudInitOnQuota,
    errors_without_message => ErrorsWithoutMessage,
    create_swallows_backend_errors => CreateSwallowsBackendErrors,
    delete_swallows_backend_errors => DeleteSwallowsBackendErrors,
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
    repeat_create_transient => RepeatCreateTransient,
    get_lags_after_create => GetLagsAfterCreate,
    booting_is_running => BootingIsRunning,
    unknown_placement_creates_at_first => UnknownPlacementCreatesAtFirst,
    quota_without_figures => QuotaWithoutFigures,
    span_carries_cloud_init => SpanCarriesCloudInit,
    invalid_uid_creates_then_refuses => InvalidUidCreatesThenRefuses,
    reports_no_uid => ReportsNoUid,
    created_at_an_hour_early => CreatedAtAnHourEarly,
    get_panics_on_percent => GetPanicsOnPercent,
    delete_panics_on_percent => DeletePanicsOnPercent,
    delete_transient_is_permanent => DeleteTransientIsPermanent,
    list_returns_nothing => ListReturnsNothing,
    list_fills_empty_uid => ListFillsEmptyUid,
    list_order_alternates => ListOrderAlternates,
    partial_names_no_location => PartialNamesNoLocation,
    partial_names_no_reason => PartialNamesNoReason,
    partial_fails_on_the_first_site => PartialFailsOnTheFirstSite,
    names_reachable_location => NamesReachableLocation,
    list_says_stopped => ListSaysStopped,
    overstays_deadline => OverstaysDeadline,
    error_names_another_operation => ErrorNamesAnotherOperation,
    opens_two_spans => OpensTwoSpans,
    check_reversed => CheckReversed,
    check_overstays_deadline => CheckOverstaysDeadline,
    check_ready_with_reason => CheckReadyWithReason,
    check_refused_is_timeout => CheckRefusedIsTimeout,
    check_denied_is_unreachable => CheckDeniedIsUnreachable,
    check_container_missing_is_unreachable => CheckContainerMissingIsUnreachable,
    check_declares_no_reasons => CheckDeclaresNoReasons,
    first_creates_do_not_wait => FirstCreatesDoNotWait,
    waiters_quota_transient => WaitersQuotaTransient,
}
