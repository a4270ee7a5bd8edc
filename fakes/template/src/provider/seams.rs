//! The seams: each decision of the provider that a defect could get wrong, as a method
//! whose default is the decision the provider made.
//!
//! The provider computes the correct value at each seam and hands it to its
//! [`Seams`]; every method's default returns that value unchanged (or does nothing,
//! or substitutes nothing), so [`Correct`] is the provider as shipped. Code that
//! breaks the provider on purpose implements this trait from outside and overrides one
//! method: the wrong behaviour lives in that override, never in the provider's code.
//! Without this module, each `self.seams().seam(.., correct)` call in `src/provider/`
//! is just `correct`.

use std::time::Duration;

use conformance::{
    BoxFuture, CreateRequest, Ctx, Error, ErrorKind, HealthReason, HostHealth, Instance,
    InvalidField, Op,
};
use tracing::{Level, Span};

use super::{
    Entry, Failure, Found, Left, Removal, Seen, Session, Steps, TemplateProvider, Trace, Verdict,
};
use crate::backend::{BackendError, ConnId, Mark};
use crate::locks::NameGuard;

/// One seam per decision a mutant gets wrong; every default is the correct behaviour.
pub(crate) trait Seams: Send + Sync {
    /// The kind a failed step surfaces as (`kind` is the provider's classification).
    fn error_kind(&self, _op: Op, _failure: &Failure, kind: ErrorKind) -> ErrorKind {
        kind
    }

    /// Whether a Create request is acceptable (`verdict` is the full validation).
    fn validate(
        &self,
        _req: &CreateRequest,
        verdict: Result<(), InvalidField>,
    ) -> Result<(), InvalidField> {
        verdict
    }

    /// The lock `op` takes for one name (`key`, that name's own); `None` takes none.
    fn lock_key(&self, _op: Op, key: String) -> Option<String> {
        Some(key)
    }

    /// The guard of the lock `op` took, under `ctx`.
    fn lock_guard(&self, _op: Op, _ctx: &Ctx, guard: NameGuard) -> NameGuard {
        guard
    }

    /// Runs between `op`'s reading the state of `name` and its first change to it.
    fn before_change<'a>(&'a self, _op: Op, _site: &'a str, _name: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Whether `op` on `name` may go ahead now, before it reads anything.
    fn admit(&self, _p: &TemplateProvider, _op: Op, _site: &str, _name: &str) -> Result<(), Error> {
        Ok(())
    }

    /// What Create does with the instance it found under the requested name.
    fn existing<'a>(
        &'a self,
        _found: Found<'a>,
        verdict: Verdict,
    ) -> BoxFuture<'a, Result<Verdict, Error>> {
        Box::pin(std::future::ready(Ok(verdict)))
    }

    /// The steps Create takes to make what is missing.
    fn steps(&self, _s: &Session<'_>, _req: &CreateRequest, steps: Steps) -> Steps {
        steps
    }

    /// The need the capacity precheck reports (`quota=detected`) for a disk of `disk`
    /// bytes and a seed of `seed` bytes with `free` bytes free: `shortfall`, the
    /// provider's own answer (`None`: they fit).
    fn shortfall(&self, _parts: (u64, u64), _free: u64, shortfall: Option<u64>) -> Option<u64> {
        shortfall
    }

    /// The mark a new instance named `name` is defined with.
    fn new_mark(&self, _name: &str, mark: Mark) -> Mark {
        mark
    }

    /// The outcome of Create's Start of the instance whose backend name is `key`: an
    /// instance another attempt started meanwhile (a resumed Create racing what is
    /// left of an earlier one) is started, as asked.
    fn started<'a>(
        &'a self,
        _s: &'a Session<'a>,
        _key: &'a str,
        started: Result<(), Failure>,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(std::future::ready(match started {
            Err(Failure::Backend(BackendError::Running(_))) => Ok(()),
            r => r,
        }))
    }

    /// What Delete does about what it found at `site`.
    fn removal(&self, _site: &str, _left: Left, removal: Removal) -> Removal {
        removal
    }

    /// The kind Delete's refusal of a resource that is not ours surfaces as.
    fn refusal_kind(&self, kind: ErrorKind) -> ErrorKind {
        kind
    }

    /// What Delete makes of removing `part` (`disk` or `seed`) of an instance it found
    /// as `left` (`removed` is what the backend said).
    fn part_removed(
        &self,
        _left: Left,
        _part: &str,
        removed: Result<(), Failure>,
    ) -> Result<(), Failure> {
        removed
    }

    /// Other instances whose disks Delete of `name` removes too (none).
    fn also_removed(&self, _name: &str) -> Vec<String> {
        Vec::new()
    }

    /// Whether Get fails on a failed read of the addresses (`fatal`: the provider's
    /// decision; otherwise the instance is not known to be reachable yet).
    fn address_failure_fatal(&self, _failure: &Failure, fatal: bool) -> bool {
        fatal
    }

    /// The instance Get reports, from what the backend said of it.
    fn reported(&self, _seen: Seen<'_>, instance: Instance) -> Instance {
        instance
    }

    /// What a listing does with one entry, given the read of its mark.
    fn entry(&self, _read: &Result<Option<Mark>, Failure>, entry: Entry) -> Entry {
        entry
    }

    /// How long each site of a listing may take (`None`: until the caller's deadline).
    fn site_share(&self, share: Option<Duration>) -> Option<Duration> {
        share
    }

    /// How one backend call of `p` is traced.
    fn trace(&self, _p: &TemplateProvider, trace: Trace) -> Trace {
        trace
    }

    /// The level of `op`'s outcome line (`None`: no line); `ok` is whether it
    /// succeeded.
    fn outcome_line(&self, _op: Op, _ok: bool, level: Option<Level>) -> Option<Level> {
        level
    }

    /// The token a dial to `site` uses (`read` is the token read for this dial).
    fn token(
        &self,
        _site: &str,
        read: Result<String, BackendError>,
    ) -> Result<String, BackendError> {
        read
    }

    /// Check visiting the sites otherwise than all at once (`None`: all at once).
    fn visit<'a>(
        &'a self,
        _visits: &mut Vec<BoxFuture<'a, HostHealth>>,
    ) -> Option<BoxFuture<'a, Vec<HostHealth>>> {
        None
    }

    /// A connection Check borrows instead of dialling its own (`None`: its own).
    fn borrowed_conn<'a>(
        &'a self,
        _p: &'a TemplateProvider,
        _ctx: &'a Ctx,
        _span: &'a Span,
        _site: &'a str,
    ) -> Option<BoxFuture<'a, Result<ConnId, Failure>>> {
        None
    }

    /// What an operation's dial of a site, retried once when busy, gives.
    fn dialled(&self, dialled: Result<ConnId, Failure>) -> Result<ConnId, Failure> {
        dialled
    }

    /// Runs once Check is done with `site`.
    fn checked(&self, _p: &TemplateProvider, _site: &str) {}

    /// The failure Check reports for its read of a site's container (`failure` is
    /// what the read failed with).
    fn container_read(&self, failure: Failure) -> Failure {
        failure
    }

    /// The reason Check gives for a site that failed with `failure` (`reason` is the
    /// provider's mapping).
    fn health_reason(&self, _failure: &Failure, reason: HealthReason) -> HealthReason {
        reason
    }
}

/// The provider as shipped: every seam keeps the correct behaviour.
pub(crate) struct Correct;

impl Seams for Correct {}
