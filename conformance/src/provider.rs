//! The `Provider` trait (create, get, delete, list by tag) and the optional `Checker`.

use std::future::Future;
use std::pin::Pin;

use crate::{CreateRequest, Ctx, Error, HostHealth, Instance, Listing, Profile, ProviderId};

/// A boxed, sendable future, so the traits stay object safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The result of a provider call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A backend that creates, inspects, deletes and lists small VMs.
///
/// # Contract
///
/// Every method:
/// - returns [`Transient`](crate::ErrorKind::Transient) promptly once `ctx`'s deadline
///   passes or its token fires, and is safe to drop at any await point (the next call
///   converges);
/// - opens one operation span as a child of [`Ctx::span`] and, with
///   `child-spans=span-decorator`, one child span per backend call;
/// - returns errors carrying [`Provider::name`], the operation and exactly one kind;
/// - keeps all state in the backend: a new provider over the same backend sees the
///   same instances, uids, tags and creation times.
///
/// Constructing a provider does no I/O.
/// Operations on different names run concurrently.
/// Each method's own rules are on the method; the rule IDs refer to
/// `docs/provider-contract.md`.
pub trait Provider: Send + Sync + 'static {
    /// The configured provider name, carried by every error.
    fn name(&self) -> &str;

    /// The declared profile.
    fn profile(&self) -> Profile;

    /// Creates the instance `req` describes, or finds the one already there.
    ///
    /// - Idempotent by `req.name` (CRE-IDEMPOTENT): an existing instance of that name
    ///   whose recorded uid equals `req.uid`, or is empty, is the same instance; its ID
    ///   is returned and nothing is changed (image, tag and cloud-init differences are
    ///   not applied).
    /// - A resource of that name that is not ours (no mark, or a non-empty different
    ///   uid) → Permanent, and it is left untouched (CRE-ADOPT-GUARD).
    /// - Invalid name, uid or tag → Permanent before any backend call (CRE-INVALID);
    ///   unknown placement → Permanent (CRE-PLACEMENT).
    /// - With `quota=detected`, too little capacity → QuotaExceeded before anything is
    ///   made (CRE-QUOTA).
    /// - A backend "not found" inside Create → Transient, never NotFound
    ///   (CRE-BACKEND-NOTFOUND).
    /// - With `create-return=blocking`, returns once the instance is Running; with
    ///   `early`, once it exists (CRE-RETURN).
    /// - Resumable: after a failure or a drop at any step, the next Create completes
    ///   the same instance without doubling anything (CRE-RESUME).
    /// - `req.cloud_init` never reaches logs, spans or errors (CRE-SECRET).
    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, Result<ProviderId>>;

    /// Reads one instance.
    ///
    /// - Unknown instance → NotFound; malformed ID or unconfigured location → Permanent
    ///   (GET-MALFORMED, GET-UNCONFIGURED); busy or unreachable backend → Transient,
    ///   never NotFound (GET-BUSY).
    /// - Running only with a usable IPv4 (unless `ip-source=none`); Provisioning until
    ///   then and when the address lookup fails; Stopped otherwise (GET-STATE).
    fn get<'a>(&'a self, ctx: &'a Ctx, id: &'a ProviderId) -> BoxFuture<'a, Result<Instance>>;

    /// Deletes one instance and, with `secondary-resources=explicit`, everything it owns.
    ///
    /// - Succeeds for an instance that is already gone or never existed, and for an
    ///   unconfigured location (DEL-IDEMPOTENT, DEL-UNCONFIGURED); malformed ID →
    ///   Permanent (DEL-MALFORMED).
    /// - Stops a running instance first (DEL-RUNNING); tolerates missing parts
    ///   (DEL-PARTIAL).
    /// - Never destroys a resource that does not carry our mark (DEL-OWNERSHIP).
    fn delete<'a>(&'a self, ctx: &'a Ctx, id: &'a ProviderId) -> BoxFuture<'a, Result<()>>;

    /// Lists the instances carrying `tag`, locations in configuration order.
    ///
    /// Unmarked resources and other tags are excluded; an unreadable resource is
    /// skipped; a listing discovers no addresses (LST-*).
    /// With `list-partial=fail-whole`, one unreachable location fails the call
    /// (Transient); with `partial`, it is named in [`Listing::unreachable`].
    fn list_by_tag<'a>(&'a self, ctx: &'a Ctx, tag: &'a str) -> BoxFuture<'a, Result<Listing>>;

    /// The health checker, when the provider has one.
    fn checker(&self) -> Option<&dyn Checker> {
        None
    }
}

/// Per-location health checks (optional).
///
/// # Contract
///
/// One entry per configured location, in configuration order (CHK-ORDER), checked
/// concurrently (CHK-CONCURRENT); a location that does not answer before the
/// deadline is reported with reason Timeout and the call returns promptly
/// (CHK-DEADLINE); reasons come from [`HealthReason::SHARED`](crate::HealthReason::SHARED)
/// plus [`Checker::extra_reasons`] (CHK-REASONS); Check uses its own connections and
/// never breaks the ones operations use (CHK-ISOLATED).
pub trait Checker: Send + Sync {
    /// Checks every location.
    fn check<'a>(&'a self, ctx: &'a Ctx) -> BoxFuture<'a, Vec<HostHealth>>;

    /// Reasons this provider adds to the shared vocabulary.
    fn extra_reasons(&self) -> &'static [&'static str] {
        &[]
    }
}
