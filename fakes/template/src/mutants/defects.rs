//! The defects below the provider's API: each one [`Seams`] seam overridden to do
//! the wrong thing, for exactly one mutant.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use conformance::fixture::{Power, Verbosity};
use conformance::profile::Logging;
use conformance::{
    BoxFuture, CreateRequest, Ctx, Error, ErrorKind, HealthReason, Instance, InvalidField, Op,
    Provider, State, validate_name, validate_tag,
};
use tracing::{Level, Span, debug};

use crate::backend::{BackendError, ConnId, Mark, Proc, digest};
use crate::locks::NameGuard;
use crate::provider::{
    Entry, Failure, Found, Left, Removal, Seen, Session, Steps, TemplateProvider, Trace, Verdict,
    lock_key,
};

use crate::provider::seams::{Correct, Seams};

/// How long an unlocked mutant waits, between its lookup and its first change, for
/// another call on the same name to arrive, so that concurrent calls meet whatever the
/// machine's load or the process bridge do to their timing.
const UNLOCKED_WAIT: Duration = Duration::from_secs(1);

/// One deliberate defect below the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Defect {
    /// A repeated Create whose cloud-init differs writes a second seed.
    ReapplyCloudInit,
    /// A repeated Create returns the ID without completing missing steps.
    NoResume,
    /// A resumed Create that finds its instance not yet started writes a new mark,
    /// with a new creation time, before starting it.
    RestampOnResume,
    /// A Start whose connection dropped is sent again on a new connection, though the
    /// backend may have acted on the first one.
    RetryStartBlindly,
    /// An unmarked instance of the requested name is adopted.
    AdoptUnmarked,
    /// An instance with a foreign uid is adopted.
    AdoptForeign,
    /// Create's refusal of another owner's instance carries the payload in its
    /// source chain.
    ForeignRefusalCarriesCloudInit,
    /// Create skips the capacity precheck.
    NoQuotaPrecheck,
    /// The capacity precheck refuses an instance that fits exactly.
    QuotaRefusesExactFit,
    /// The capacity precheck counts the seed but names only the disk as needed.
    QuotaNamesOnlyTheDisk,
    /// The capacity precheck names a mebibyte more than it checks for.
    QuotaNamesMoreThanItNeeds,
    /// A backend not-found inside Create surfaces as NotFound.
    CreateNotFound,
    /// Create reports a part of its instance that vanished mid-way as NotFound.
    VanishedPartIsNotFound,
    /// A failed authentication inside Create surfaces as Transient.
    CreateAuthFailureTransient,
    /// A backend's Permanent answer inside Create surfaces as Transient.
    CreatePermanentAsTransient,
    /// The backend's capacity refusal inside Create surfaces as Transient.
    QuotaRefusalTransient,
    /// Transient backend errors inside Create surface as Permanent.
    CreateTransientAsPermanent,
    /// Create logs the cloud-init payload at debug level.
    LogCloudInit,
    /// Create does not validate the uid.
    SkipUidValidation,
    /// Create writes no creation time.
    NoCreatedAt,
    /// Create takes no per-name lock and pauses between lookup and define.
    CreateUnlocked,
    /// Get answers Transient while another operation holds the name.
    GetBusyWhileLocked,
    /// Get reads a dropped connection as a missing instance.
    GetClosedAsNotFound,
    /// Get reports a missing instance as Transient.
    GetNotFoundAsTransient,
    /// Get reports a paused instance as Provisioning.
    PausedIsProvisioning,
    /// Get accepts link-local and loopback addresses.
    AnyAddressIsUsable,
    /// Get reports the creation time this process wrote, not the backend's.
    CreatedAtInMemory,
    /// Delete leaves the seed behind.
    DeleteKeepsSeed,
    /// Delete leaves the seed behind at every site but the first.
    DeleteKeepsSeedAtSecondSite,
    /// Delete does not stop a running instance first.
    DeleteWithoutStop,
    /// Delete fails on a part that is already gone.
    DeleteRequiresParts,
    /// Delete treats a missing primary record as nothing left to do.
    DeleteDoneWithoutPrimary,
    /// Delete refuses, as not its own, a record that vanished while it read the mark.
    DeleteRefusesVanished,
    /// Delete fails when the volume store goes away between its disk and its seed.
    DeleteRefusesVanishedContainer,
    /// Delete finds the parts of `name-N` by an index one off and removes the disk of
    /// `name-(N-1)` too.
    DeleteTakesThePreviousDisk,
    /// Delete takes no per-name lock and pauses between lookup and stop.
    DeleteUnlocked,
    /// Delete ignores the ownership guard.
    DeleteIgnoresMark,
    /// Listing includes unmarked instances.
    ListUnmarked,
    /// Listing keeps only the marked instances whose uid this provider process wrote
    /// (it trusts its memory of its own Creates over the backend's marks).
    ListKnowsOnlyItsOwn,
    /// One unreadable instance fails the listing.
    ListUnreadableFatal,
    /// An instance that vanishes while the listing reads its mark fails the listing.
    ListVanishedFatal,
    /// An instance whose mark read the backend refuses fails the listing.
    ListRefusedReadFatal,
    /// An instance whose mark read fails for any reason, a busy backend too, is left
    /// out of a listing that succeeds.
    ListSkipsBusyRead,
    /// A partial listing waits for every site until the caller's deadline, so a silent
    /// site fails the whole call.
    ListWaitsForEverySite,
    /// Log an info line per backend call even at V0.
    LogCallsAtV0,
    /// Backend calls get no span.
    NoCallSpans,
    /// Backend call spans are not children of the operation span.
    DetachedCallSpans,
    /// The credentials are read once, at the first dial, and cached.
    CredentialsReadOnce,
    /// Operations share one lock across all names.
    GlobalLock,
    /// Check visits the sites one after another.
    CheckSequential,
    /// Check uses the operations' cached connection.
    CheckOnCachedConnection,
    /// A repeated Create of a complete instance makes one more volume for it.
    RepeatCreateAddsVolume,
    /// A resumed Create makes the seed again, under a new name, beside the one there.
    ResumeReseeds,
    /// Create stops a resource of the requested name before it finds it is not ours.
    GuardStopsFirst,
    /// A marked resource with an empty uid is taken for someone else's.
    EmptyUidIsForeign,
    /// Get fails when the address lookup fails, instead of reporting Provisioning.
    AddressLookupFatal,
    /// A Delete that finds no record but parts of it refuses them as half deleted.
    HalfDeletedPermanent,
    /// Delete refuses a resource without our mark as Transient.
    UnmarkedDeleteTransient,
    /// A listing keeps marked instances whatever their tag.
    ListIgnoresTag,
    /// The name's lock of a Create is released by a step under the call's context,
    /// which never runs once that context was cancelled or ran out.
    CreateLockUnderContext,
    /// At V1 the per-call debug lines are written too.
    CallLinesAtV1,
    /// No per-call line is written at any verbosity.
    NoCallLines,
    /// Every backend call's span is named `call`.
    CallSpansMisnamed,
    /// Check closes the operations' cached connection of each site it checked.
    CheckClosesCached,
    /// A failed operation's outcome line is written at info, at every tier.
    FailuresAtInfo,
    /// A failed operation writes no outcome line.
    FailuresSilent,
    /// Check's outcome line is written at every tier, V0 included.
    CheckLineAtV0,
    /// Check reports any failure of its container read as the container missing.
    CheckContainerReadIsMissing,
    /// Check reports a busy site (a transient failure) as AuthFailed.
    CheckBusyIsAuthFailed,
    /// An operation's dial refused for good surfaces as busy (Transient).
    DialRefusalTransient,
}

/// The template provider with `defect`: what a mutant's fixture builds.
pub(super) fn broken(p: TemplateProvider, defect: Defect) -> Arc<dyn Provider> {
    let broken = Broken {
        defect,
        tokens: Mutex::default(),
        written: Mutex::default(),
        uids: Mutex::default(),
        arrivals: Mutex::default(),
        repeats: AtomicU32::new(0),
    };
    Arc::new(p.with_seams(Box::new(broken)))
}

/// The builders of the clause mutants below the API, one per defect.
macro_rules! builders {
    ($($f:ident => $d:ident),* $(,)?) => {
        $(pub(super) fn $f(p: TemplateProvider) -> Arc<dyn Provider> {
            broken(p, Defect::$d)
        })*
    };
}

builders! {
    repeat_create_adds_volume => RepeatCreateAddsVolume,
    resume_reseeds => ResumeReseeds,
    guard_stops_first => GuardStopsFirst,
    empty_uid_is_foreign => EmptyUidIsForeign,
    address_lookup_fatal => AddressLookupFatal,
    half_deleted_permanent => HalfDeletedPermanent,
    unmarked_delete_transient => UnmarkedDeleteTransient,
    list_ignores_tag => ListIgnoresTag,
    create_lock_under_context => CreateLockUnderContext,
    call_lines_at_v1 => CallLinesAtV1,
    no_call_lines => NoCallLines,
    call_spans_misnamed => CallSpansMisnamed,
    check_closes_cached => CheckClosesCached,
    failures_at_info => FailuresAtInfo,
    failures_silent => FailuresSilent,
    check_line_at_v0 => CheckLineAtV0,
}

/// One provider's breakage: its defect and what the defect remembers, per provider (a
/// restarted provider starts afresh).
struct Broken {
    defect: Defect,
    /// Tokens kept after the first read (`CredentialsReadOnce`).
    tokens: Mutex<HashMap<String, String>>,
    /// Creation times this process wrote (`CreatedAtInMemory`).
    written: Mutex<HashMap<String, SystemTime>>,
    /// The uids this process wrote into marks (`ListKnowsOnlyItsOwn`).
    uids: Mutex<HashSet<String>>,
    /// Calls that reached the unlocked window, per name (the unlocked defects).
    arrivals: Mutex<HashMap<String, tokio::sync::watch::Sender<u32>>>,
    /// Volumes made by repeated Creates (`RepeatCreateAddsVolume`).
    repeats: AtomicU32,
}

impl Broken {
    /// The unlocked window: waits until a second call on `key` reached it too (or
    /// [`UNLOCKED_WAIT`] passed), so that two unserialised calls really overlap.
    async fn meet_another(&self, key: String) {
        let mut arrived = {
            let mut all = self.arrivals.lock().unwrap_or_else(|e| e.into_inner());
            let tx = all
                .entry(key)
                .or_insert_with(|| tokio::sync::watch::Sender::new(0));
            let rx = tx.subscribe();
            tx.send_modify(|n| *n += 1);
            rx
        };
        let _ = tokio::time::timeout(UNLOCKED_WAIT, arrived.wait_for(|n| *n >= 2)).await;
    }

    /// Rewrites the mark of a stopped instance of ours with a new creation time.
    async fn restamp(&self, found: &Found<'_>, mark: &Mark) -> Result<(), Error> {
        let (s, key, p) = (found.s, found.key, found.s.p);
        let name = &found.req.name;
        let fresh = Mark {
            created_at: Some(SystemTime::now()),
            ..mark.clone()
        };
        let fail = |f| p.fail(Op::Create, format!("restamping {name}"), f);
        s.call(Proc::Undefine, p.backend.undefine(s.conn, s.site, key))
            .await
            .map_err(fail)?;
        s.call(Proc::Define, p.backend.define(s.conn, s.site, key, fresh))
            .await
            .map_err(fail)
    }

    /// Writes the request's cloud-init once more, beside the seed already there, as
    /// the volume `<name>-<suffix>`.
    async fn reseed(&self, found: &Found<'_>, suffix: &str) -> Result<(), Error> {
        let (s, p, req) = (found.s, found.s.p, found.req);
        let payload = req.cloud_init.expose().as_bytes();
        let volume = format!("{}-{suffix}", req.name);
        s.call(
            Proc::CreateSeed,
            p.backend
                .create_seed(s.conn, s.site, found.key, &volume, payload),
        )
        .await
        .map_err(|f| p.fail(Op::Create, format!("rewriting the seed of {}", req.name), f))
    }
}

impl Seams for Broken {
    fn error_kind(&self, op: Op, failure: &Failure, kind: ErrorKind) -> ErrorKind {
        use BackendError as B;
        let Failure::Backend(b) = failure else {
            return kind;
        };
        match (self.defect, op, b) {
            (Defect::CreateNotFound, Op::Create, B::NoObject(_)) => ErrorKind::NotFound,
            (Defect::VanishedPartIsNotFound, Op::Create, B::NoObject(m))
                if m.starts_with("a volume of") =>
            {
                ErrorKind::NotFound
            }
            (Defect::CreateTransientAsPermanent, Op::Create, B::Busy(_)) => ErrorKind::Permanent,
            (Defect::CreateAuthFailureTransient, Op::Create, B::AuthFailed)
            | (Defect::QuotaRefusalTransient, Op::Create, B::NoSpace { .. })
            | (Defect::CreatePermanentAsTransient, Op::Create, B::Denied(_)) => {
                ErrorKind::Transient
            }
            (Defect::GetClosedAsNotFound, Op::Get, B::Closed) => ErrorKind::NotFound,
            (Defect::GetNotFoundAsTransient, Op::Get, B::NoObject(_)) => ErrorKind::Transient,
            // A part Delete requires but finds gone.
            (Defect::DeleteRequiresParts, Op::Delete, B::NoObject(_)) => ErrorKind::Permanent,
            _ => kind,
        }
    }

    fn validate(
        &self,
        req: &CreateRequest,
        verdict: Result<(), InvalidField>,
    ) -> Result<(), InvalidField> {
        match self.defect {
            Defect::SkipUidValidation => {
                validate_name(&req.name).and_then(|()| validate_tag(&req.tag))
            }
            _ => verdict,
        }
    }

    fn lock_key(&self, op: Op, key: String) -> Option<String> {
        match (self.defect, op) {
            (Defect::CreateUnlocked, Op::Create) | (Defect::DeleteUnlocked, Op::Delete) => None,
            (Defect::GlobalLock, _) => Some("*".into()),
            _ => Some(key),
        }
    }

    fn before_change<'a>(&'a self, op: Op, site: &'a str, name: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let (Defect::CreateUnlocked, Op::Create) | (Defect::DeleteUnlocked, Op::Delete) =
                (self.defect, op)
            {
                self.meet_another(lock_key(site, name)).await;
            }
        })
    }

    fn admit(&self, p: &TemplateProvider, op: Op, site: &str, name: &str) -> Result<(), Error> {
        if self.defect == Defect::GetBusyWhileLocked && p.locks.is_held(&lock_key(site, name)) {
            return Err(Error::new(
                p.name(),
                op,
                ErrorKind::Transient,
                format!("{name} is busy"),
            ));
        }
        Ok(())
    }

    fn existing<'a>(
        &'a self,
        found: Found<'a>,
        verdict: Verdict,
    ) -> BoxFuture<'a, Result<Verdict, Error>> {
        Box::pin(async move {
            match (self.defect, verdict) {
                (Defect::AdoptUnmarked, Verdict::Unmanaged)
                | (Defect::AdoptForeign, Verdict::Foreign)
                | (Defect::NoResume, Verdict::Resume) => Ok(Verdict::AsIs),
                (Defect::ForeignRefusalCarriesCloudInit, Verdict::Foreign) => {
                    let cause = std::io::Error::other(format!(
                        "the request asked for user data {:?}",
                        found.req.cloud_init.expose()
                    ));
                    Err(Error::permanent(
                        found.s.p.name(),
                        Op::Create,
                        format!("{} belongs to another owner", found.key),
                    )
                    .with_source(cause))
                }
                (Defect::RestampOnResume, Verdict::Resume) => {
                    if let Some(mark) = found.mark
                        && found.info.power == Power::Stopped
                    {
                        self.restamp(&found, mark).await?;
                    }
                    Ok(verdict)
                }
                (Defect::ReapplyCloudInit, Verdict::Resume) => {
                    let wanted = digest(found.req.cloud_init.expose().as_bytes());
                    if found.info.seed.is_some_and(|d| d != wanted) {
                        self.reseed(&found, "seed-update").await?;
                    }
                    Ok(verdict)
                }
                (Defect::EmptyUidIsForeign, Verdict::AsIs) => Ok(Verdict::Foreign),
                (Defect::GuardStopsFirst, Verdict::Unmanaged | Verdict::Foreign) => {
                    let (s, p) = (found.s, found.s.p);
                    let name = &found.req.name;
                    // Stopped to be looked at safely, before the guard says no.
                    s.call(Proc::Stop, p.backend.stop(s.conn, s.site, found.key))
                        .await
                        .map_err(|f| p.fail(Op::Create, format!("stopping {name}"), f))?;
                    Ok(verdict)
                }
                (Defect::RepeatCreateAddsVolume, Verdict::Resume) => {
                    let info = found.info;
                    if info.disk && info.seed.is_some() && info.power != Power::Stopped {
                        // A fresh volume each time: every repeat makes one more.
                        let n = self.repeats.fetch_add(1, Ordering::Relaxed);
                        self.reseed(&found, &format!("extra-{n}")).await?;
                    }
                    Ok(verdict)
                }
                (Defect::ResumeReseeds, Verdict::Resume) => {
                    let info = found.info;
                    let complete = info.disk && info.power != Power::Stopped;
                    if info.seed.is_some() && !complete {
                        self.reseed(&found, "seed-resumed").await?;
                    }
                    Ok(verdict)
                }
                _ => Ok(verdict),
            }
        })
    }

    fn lock_guard(&self, op: Op, ctx: &Ctx, guard: NameGuard) -> NameGuard {
        match (self.defect, op) {
            (Defect::CreateLockUnderContext, Op::Create) => guard.released_under(ctx),
            _ => guard,
        }
    }

    fn refusal_kind(&self, kind: ErrorKind) -> ErrorKind {
        match self.defect {
            Defect::UnmarkedDeleteTransient => ErrorKind::Transient,
            _ => kind,
        }
    }

    fn also_removed(&self, name: &str) -> Vec<String> {
        match self.defect {
            // Parts found by an index one off: `web-7` takes the disk of `web-6`.
            Defect::DeleteTakesThePreviousDisk => {
                let set = name.trim_end_matches(|c: char| c.is_ascii_digit());
                match name[set.len()..].parse::<u64>() {
                    Ok(n) if n > 1 => vec![format!("{set}{}", n - 1)],
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    fn part_removed(
        &self,
        left: Left,
        part: &str,
        removed: Result<(), Failure>,
    ) -> Result<(), Failure> {
        match (self.defect, left, removed) {
            (
                Defect::DeleteRefusesVanishedContainer,
                _,
                Err(Failure::Backend(BackendError::NoContainer(why))),
            ) if part == "seed" => Err(Failure::Backend(BackendError::Denied(format!(
                "the volume store went away after the disk was removed: {why}"
            )))),
            (Defect::HalfDeletedPermanent, Left::NoRecord, Ok(())) => Err(Failure::Backend(
                BackendError::Denied("a part of an instance without a record: half deleted".into()),
            )),
            (_, _, removed) => removed,
        }
    }

    fn address_failure_fatal(&self, _failure: &Failure, fatal: bool) -> bool {
        fatal || self.defect == Defect::AddressLookupFatal
    }

    fn dialled(&self, dialled: Result<ConnId, Failure>) -> Result<ConnId, Failure> {
        match (self.defect, dialled) {
            (Defect::DialRefusalTransient, Err(Failure::Backend(BackendError::Denied(why)))) => {
                Err(Failure::Backend(BackendError::Busy(why)))
            }
            (_, dialled) => dialled,
        }
    }

    fn container_read(&self, failure: Failure) -> Failure {
        match (self.defect, failure) {
            (Defect::CheckContainerReadIsMissing, Failure::Backend(e)) => {
                Failure::Backend(BackendError::NoContainer(e.to_string()))
            }
            (_, failure) => failure,
        }
    }

    fn health_reason(&self, failure: &Failure, reason: HealthReason) -> HealthReason {
        match (self.defect, failure) {
            (Defect::CheckBusyIsAuthFailed, Failure::Backend(BackendError::Busy(_))) => {
                HealthReason::AuthFailed
            }
            _ => reason,
        }
    }

    fn checked(&self, p: &TemplateProvider, site: &str) {
        if self.defect == Defect::CheckClosesCached
            && let Some(conn) = p.cached(site)
        {
            p.backend.close(site, conn);
            p.forget(site, conn);
        }
    }

    fn steps(&self, s: &Session<'_>, req: &CreateRequest, steps: Steps) -> Steps {
        match self.defect {
            Defect::NoQuotaPrecheck => Steps {
                precheck: false,
                ..steps
            },
            Defect::LogCloudInit => {
                if steps.seed && s.p.verbosity() >= Verbosity::V2 {
                    debug!(parent: s.span, user_data = req.cloud_init.expose(), "writing seed");
                }
                steps
            }
            _ => steps,
        }
    }

    fn shortfall(&self, (disk, seed): (u64, u64), free: u64, short: Option<u64>) -> Option<u64> {
        match self.defect {
            Defect::QuotaRefusesExactFit => (disk + seed >= free).then_some(disk + seed),
            Defect::QuotaNamesOnlyTheDisk => short.map(|_| disk),
            Defect::QuotaNamesMoreThanItNeeds => short.map(|n| n + (1 << 20)),
            _ => short,
        }
    }

    fn new_mark(&self, name: &str, mark: Mark) -> Mark {
        if self.defect == Defect::ListKnowsOnlyItsOwn {
            self.uids
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(mark.uid.clone());
        }
        match self.defect {
            Defect::NoCreatedAt => Mark {
                created_at: None,
                ..mark
            },
            Defect::CreatedAtInMemory => {
                self.written
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        name.to_owned(),
                        mark.created_at.unwrap_or(SystemTime::UNIX_EPOCH),
                    );
                mark
            }
            _ => mark,
        }
    }

    fn started<'a>(
        &'a self,
        s: &'a Session<'a>,
        key: &'a str,
        started: Result<(), Failure>,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            match started {
                Err(Failure::Backend(BackendError::Closed))
                    if self.defect == Defect::RetryStartBlindly =>
                {
                    let again = s.p.session(s.ctx, s.span, s.site).await?;
                    again
                        .call(Proc::Start, s.p.backend.start(again.conn, s.site, key))
                        .await
                }
                r => Correct.started(s, key, r).await,
            }
        })
    }

    fn removal(&self, site: &str, left: Left, removal: Removal) -> Removal {
        // The template's first site in its default configuration.
        const FIRST_SITE: &str = "site-a";
        match (self.defect, left) {
            (Defect::DeleteKeepsSeed, _) => Removal {
                seed: false,
                ..removal
            },
            (Defect::DeleteKeepsSeedAtSecondSite, _) if site != FIRST_SITE => Removal {
                seed: false,
                ..removal
            },
            (Defect::DeleteWithoutStop, _) => Removal {
                stop: false,
                ..removal
            },
            (Defect::DeleteIgnoresMark, _) => Removal {
                refuse: false,
                ..removal
            },
            (Defect::DeleteDoneWithoutPrimary, Left::NoRecord) => Removal {
                disk: false,
                seed: false,
                ..removal
            },
            (Defect::DeleteRefusesVanished, Left::Vanished) => Removal {
                refuse: true,
                ..removal
            },
            (Defect::DeleteRequiresParts, Left::Record { .. }) => Removal {
                tolerant: false,
                ..removal
            },
            _ => removal,
        }
    }

    fn reported(&self, seen: Seen<'_>, instance: Instance) -> Instance {
        match self.defect {
            Defect::PausedIsProvisioning if seen.power == Power::Paused => Instance {
                state: State::Provisioning,
                ipv4: None,
                ..instance
            },
            Defect::AnyAddressIsUsable => match seen.addresses {
                Some(addrs) => {
                    let ipv4 = match addrs.first() {
                        Some(IpAddr::V4(v4)) => Some(*v4),
                        _ => None,
                    };
                    let state = match ipv4 {
                        Some(_) => State::Running,
                        None => State::Provisioning,
                    };
                    Instance {
                        state,
                        ipv4,
                        ..instance
                    }
                }
                None => instance,
            },
            Defect::CreatedAtInMemory => {
                let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
                Instance {
                    created_at: written.get(&instance.name).copied(),
                    ..instance
                }
            }
            _ => instance,
        }
    }

    fn entry(&self, read: &Result<Option<Mark>, Failure>, entry: Entry) -> Entry {
        match (self.defect, read) {
            (Defect::ListKnowsOnlyItsOwn, Ok(Some(m)))
                if !m.uid.is_empty()
                    && !self
                        .uids
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .contains(&m.uid) =>
            {
                Entry::Skip
            }
            (Defect::ListUnmarked, Ok(None)) => Entry::Keep(Mark {
                tag: String::new(),
                uid: String::new(),
                created_at: None,
            }),
            (Defect::ListVanishedFatal, Err(f)) if f.is_no_object() => Entry::Fail(f.clone()),
            (Defect::ListSkipsBusyRead, Err(_)) => Entry::Skip,
            (Defect::ListRefusedReadFatal, Err(f))
                if !f.is_no_object()
                    && !matches!(f, Failure::Backend(BackendError::Unreadable(_))) =>
            {
                Entry::Fail(f.clone())
            }
            (
                Defect::ListUnreadableFatal,
                Err(f @ Failure::Backend(BackendError::Unreadable(_))),
            ) => Entry::Fail(f.clone()),
            (Defect::ListIgnoresTag, Ok(Some(m))) => Entry::Keep(m.clone()),
            _ => entry,
        }
    }

    fn site_share(&self, share: Option<Duration>) -> Option<Duration> {
        match self.defect {
            Defect::ListWaitsForEverySite => None,
            _ => share,
        }
    }

    fn outcome_line(&self, op: Op, ok: bool, level: Option<Level>) -> Option<Level> {
        match self.defect {
            Defect::FailuresAtInfo if !ok => Some(Level::INFO),
            Defect::FailuresSilent if !ok => None,
            Defect::CheckLineAtV0 if op == Op::Check && ok => Some(Level::INFO),
            _ => level,
        }
    }

    fn trace(&self, p: &TemplateProvider, trace: Trace) -> Trace {
        match self.defect {
            Defect::CallLinesAtV1 => {
                let tiered = p.config().declared.logging() == Logging::Tiered;
                Trace {
                    line: (tiered && p.verbosity() >= Verbosity::V1).then_some(Level::DEBUG),
                    ..trace
                }
            }
            Defect::NoCallLines => Trace {
                line: None,
                ..trace
            },
            Defect::CallSpansMisnamed => Trace {
                named: false,
                ..trace
            },
            Defect::NoCallSpans => Trace {
                span: false,
                ..trace
            },
            Defect::DetachedCallSpans => Trace {
                attached: false,
                ..trace
            },
            Defect::LogCallsAtV0 => Trace {
                line: Some(Level::INFO),
                ..trace
            },
            _ => trace,
        }
    }

    fn token(
        &self,
        site: &str,
        read: Result<String, BackendError>,
    ) -> Result<String, BackendError> {
        if self.defect != Defect::CredentialsReadOnce {
            return read;
        }
        let mut kept = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = kept.get(site) {
            return Ok(t.clone());
        }
        let token = read?;
        kept.insert(site.to_owned(), token.clone());
        Ok(token)
    }

    fn visit<'a>(
        &'a self,
        visits: &mut Vec<BoxFuture<'a, conformance::HostHealth>>,
    ) -> Option<BoxFuture<'a, Vec<conformance::HostHealth>>> {
        if self.defect != Defect::CheckSequential {
            return None;
        }
        let visits = std::mem::take(visits);
        Some(Box::pin(async move {
            let mut out = Vec::new();
            for v in visits {
                out.push(v.await);
            }
            out
        }))
    }

    fn borrowed_conn<'a>(
        &'a self,
        p: &'a TemplateProvider,
        ctx: &'a Ctx,
        span: &'a Span,
        site: &'a str,
    ) -> Option<BoxFuture<'a, Result<ConnId, Failure>>> {
        if self.defect != Defect::CheckOnCachedConnection {
            return None;
        }
        Some(Box::pin(async move {
            p.session(ctx, span, site).await.map(|s| s.conn)
        }))
    }
}
