//! The rule catalogue as data: every rule of the contract with its ID, title,
//! normative text, the axes that change its expected result, the axis value that gates
//! it, and the fixture hooks it needs. Docs, listings and reports are generated from
//! this one table.

use serde::Serialize;

use crate::fixture::Hook;
use crate::profile::Axis;

/// The contract's areas, which prefix rule IDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Area {
    /// CRE-*: Create.
    Create,
    /// GET-*: Get.
    Get,
    /// DEL-*: Delete.
    Delete,
    /// LST-*: ListByTag.
    List,
    /// GEN-*: every operation.
    General,
    /// CHK-*: Check.
    Check,
}

impl Area {
    /// Every area in catalogue order.
    pub const ALL: [Area; 6] = [
        Area::Create,
        Area::Get,
        Area::Delete,
        Area::List,
        Area::General,
        Area::Check,
    ];

    /// The area's name in trial names (`conformance::<area>::<ID>`).
    pub fn as_str(self) -> &'static str {
        match self {
            Area::Create => "create",
            Area::Get => "get",
            Area::Delete => "delete",
            Area::List => "list",
            Area::General => "general",
            Area::Check => "check",
        }
    }

    /// The ID prefix of the area's rules.
    pub fn prefix(self) -> &'static str {
        match self {
            Area::Create => "CRE",
            Area::Get => "GET",
            Area::Delete => "DEL",
            Area::List => "LST",
            Area::General => "GEN",
            Area::Check => "CHK",
        }
    }

    /// The heading used in documents.
    pub fn title(self) -> &'static str {
        match self {
            Area::Create => "Create",
            Area::Get => "Get",
            Area::Delete => "Delete",
            Area::List => "ListByTag",
            Area::General => "General",
            Area::Check => "Check",
        }
    }
}

/// What a rule needs beyond fixture hooks and the profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Need {
    /// The provider must have a Checker.
    Checker,
    /// The configuration must have at least two locations.
    TwoLocations,
}

/// One rule of the contract.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Rule {
    /// The stable ID, e.g. `CRE-IDEMPOTENT`.
    pub id: &'static str,
    /// The area.
    pub area: Area,
    /// A short title.
    pub title: &'static str,
    /// The normative text.
    pub text: &'static str,
    /// Axes whose declared value changes what the rule expects.
    pub axes: &'static [Axis],
    /// The rule applies only when this axis has this value; otherwise NotApplicable.
    pub gate: Option<(Axis, &'static [&'static str])>,
    /// Fixture hooks the rule's check needs; without them it is Skipped.
    pub hooks: &'static [Hook],
    /// Other needs; without them it is NotApplicable (Checker) or Skipped.
    pub needs: &'static [Need],
}

impl Rule {
    /// The trial name: `conformance::<area>::<ID>`.
    pub fn trial_name(&self) -> String {
        format!("conformance::{}::{}", self.area.as_str(), self.id)
    }
}

/// Finds a rule by ID.
pub fn rule(id: &str) -> Option<&'static Rule> {
    CATALOGUE.iter().find(|r| r.id == id)
}

macro_rules! rules {
    ($( $id:literal, $area:ident, $title:literal,
        axes: [$($axis:ident),*], gate: $gate:expr, hooks: [$($hook:ident),*], needs: [$($need:ident),*],
        $text:literal; )*) => {
        /// Every rule, grouped by area, in catalogue order.
        pub static CATALOGUE: &[Rule] = &[$(Rule {
            id: $id,
            area: Area::$area,
            title: $title,
            text: $text,
            axes: &[$(Axis::$axis),*],
            gate: $gate,
            hooks: &[$(Hook::$hook),*],
            needs: &[$(Need::$need),*],
        }),*];
    };
}

rules! {
    "CRE-IDEMPOTENT", Create, "Repeated Create returns the same ID",
        axes: [], gate: None, hooks: [], needs: [],
        "Repeating Create with the same request returns the same ID and creates no further backend resource. An existing instance of that name whose recorded uid equals the request's, or is empty, is the same instance; nothing about it is changed.";
    "CRE-RESUME", Create, "Interrupted Create is completed by the next",
        axes: [], gate: None, hooks: [Faults, Observation], needs: [],
        "A Create interrupted after any backend step, by an error, a lost reply, a dropped future or the death of the process, fails with Transient, or returns Ok having made exactly one instance that Get and the inventory agree on; it is completed by the next Create of the same request (by a fresh provider after a death). Nothing leaks and nothing is made twice, and once the interrupted attempt has written the instance's mark, the completed instance keeps its uid, tag and created_at.";
    "CRE-RETURN", Create, "Create returns as create-return declares",
        axes: [CreateReturn, ProvisioningState], gate: None, hooks: [StateControl], needs: [],
        "With create-return=blocking, Create returns only once the instance is Running, and a Get right after it reports Running. With create-return=early, Create returns while the instance still boots; Get reports Provisioning, then Running. A provider whose behaviour contradicts its declaration fails.";
    "CRE-PLACEMENT", Create, "Unknown placement is Permanent",
        axes: [], gate: None, hooks: [], needs: [],
        "A request whose placement the configuration does not map fails with Permanent, and nothing is created.";
    "CRE-ADOPT-GUARD", Create, "Create never adopts what is not ours",
        axes: [], gate: None, hooks: [Planting], needs: [],
        "An existing resource of the requested name that is not ours (it carries no mark, or a non-empty uid other than the request's) makes Create fail with Permanent, and the resource is left untouched. A marked resource with an empty uid is the same instance: its ID is returned and it is not changed.";
    "CRE-QUOTA", Create, "Short capacity is QuotaExceeded",
        axes: [QuotaMode, DeleteReturn], gate: Some((Axis::QuotaMode, &["detected", "backend-reported"])), hooks: [Capacity], needs: [],
        "A Create that does not fit in the location's free capacity fails with QuotaExceeded naming what is short, how much is available and how much is needed: with quota=detected before anything is created; with quota=backend-reported as the backend refused, after which a Delete leaves nothing of what was made. Every one of several such Creates running at once as a location's first fails so, whatever work they share. With quota=detected the need it names is what it needs: with one byte less free the same Create is refused again, with exactly that much free it succeeds.";
    "CRE-BACKEND-NOTFOUND", Create, "Backend answers inside Create keep their kind",
        axes: [], gate: None, hooks: [Faults, Observation], needs: [],
        "When a backend call inside Create reports that something is missing (a base volume vanished, say), or a part of the instance is removed out of band between Create's steps, Create fails with Transient or recovers; it never returns NotFound. A backend's Permanent answer to any of Create's calls surfaces as Permanent unless Create recovers, those only a location's first Create makes (a dial, an image fetch) included, and an authentication that fails because access was revoked surfaces as Permanent too.";
    "CRE-SECRET", Create, "Cloud-init never leaks",
        axes: [Logging, QuotaMode], gate: None, hooks: [], needs: [],
        "The cloud-init payload never appears in log lines at any verbosity, in span names or fields, in error messages or their sources, or in reports. Every payload the suite hands the provider, in any rule, is looked for wherever it could show up; one that shows up while a rule runs fails that rule.";
    "CRE-INVALID", Create, "Invalid names, uids and tags are Permanent",
        axes: [], gate: None, hooks: [], needs: [],
        "A request whose name, uid or tag is empty, too long, or contains XML or path metacharacters fails with Permanent, and nothing is created.";
    "CRE-MARK", Create, "The instance carries tag, uid and created_at",
        axes: [CreatedAt], gate: None, hooks: [], needs: [],
        "The created instance reports the request's tag and uid, and (unless created-at=none) a creation time taken during the Create call (written-at-create) or reported by the backend.";
    "CRE-CONCURRENT", Create, "Concurrent Creates of one name make one instance",
        axes: [], gate: None, hooks: [], needs: [],
        "Several Creates of the same request running at once all return the same ID, and one instance exists afterwards. Creates of different requests running at once as a location's first all succeed, and what their instances share is made once.";
    "GET-AFTER-DELETE", Get, "Get after Delete is NotFound",
        axes: [DeleteReturn], gate: None, hooks: [], needs: [],
        "With delete-return=waits, Get returns NotFound as soon as Delete has returned. With delete-return=early, Get returns NotFound within the suite's settle time.";
    "GET-DURING-DELETE", Get, "Get during Delete is the instance or NotFound",
        axes: [DeleteReturn], gate: None, hooks: [], needs: [],
        "While a Delete is in flight, Get returns the instance or NotFound, never another error kind.";
    "GET-BUSY", Get, "A busy backend is Transient, never NotFound",
        axes: [], gate: None, hooks: [Faults], needs: [],
        "When the backend is busy, hangs past the deadline, drops the connection or cannot be reached, Get fails with Transient, never with NotFound.";
    "GET-STATE", Get, "State follows the backend and the address",
        axes: [IpSource], gate: None, hooks: [StateControl], needs: [],
        "A Running instance has a usable IPv4 address, neither loopback nor link-local (unless ip-source=none). A running instance without one is Provisioning, as is one whose address lookup fails. A stopped or paused instance is Stopped.";
    "GET-MALFORMED", Get, "Malformed IDs are Permanent; no input panics",
        axes: [], gate: None, hooks: [], needs: [],
        "Get of a malformed ID fails with Permanent. Get of any string whatever returns Permanent or NotFound and never panics.";
    "GET-UNCONFIGURED", Get, "An unconfigured location is Permanent",
        axes: [], gate: None, hooks: [], needs: [],
        "Get of a well-formed ID naming a location the configuration does not have fails with Permanent.";
    "GET-STATELESS", Get, "A new provider sees the same instance",
        axes: [], gate: None, hooks: [], needs: [],
        "A new provider instance over the same backend reports the same name, uid, tag and created_at for an instance: all state lives in the backend.";
    "DEL-MALFORMED", Delete, "Malformed IDs are Permanent",
        axes: [], gate: None, hooks: [], needs: [],
        "Delete of a malformed ID fails with Permanent and never panics.";
    "DEL-IDEMPOTENT", Delete, "Delete twice, or of nothing, succeeds",
        axes: [DeleteReturn], gate: None, hooks: [], needs: [],
        "Deleting an instance twice succeeds both times, and deleting a well-formed ID that was never created succeeds.";
    "DEL-COMPLETE", Delete, "Nothing of a deleted instance is left",
        axes: [DeleteReturn, SecondaryResources], gate: None, hooks: [Inventory], needs: [],
        "Once Delete has returned (and settled, with delete-return=early), no resource of the instance is left: no disk, seed or firmware state, whether the provider deletes them (secondary-resources=explicit) or the backend does (cascaded); with secondary-resources=none the instance has no resource but its primary one. Nothing else goes with it: another instance's resources and the shared ones stay. This holds at every location.";
    "DEL-RUNNING", Delete, "A Running instance is stopped and deleted",
        axes: [DeleteReturn], gate: None, hooks: [], needs: [],
        "Delete of a Running instance stops it and deletes it; Get then returns NotFound.";
    "DEL-PARTIAL", Delete, "Delete tolerates missing parts",
        axes: [DeleteReturn, SecondaryResources], gate: None, hooks: [Planting], needs: [],
        "Delete succeeds when parts of the instance are already gone: its secondary resources, the primary resource, or even their container. It succeeds too when another party removes its secondary resources, its primary resource or their container while it runs, between its backend calls, and leaves nothing of what it removes itself (with secondary-resources=cascaded, parts whose primary another party removed are left to that party's backend).";
    "DEL-UNCONFIGURED", Delete, "An unconfigured location is a no-op",
        axes: [], gate: None, hooks: [], needs: [],
        "Delete of a well-formed ID naming a location the configuration does not have succeeds and does nothing.";
    "DEL-CONCURRENT", Delete, "Concurrent Deletes all succeed",
        axes: [DeleteReturn], gate: None, hooks: [], needs: [],
        "Several Deletes of one instance running at once all succeed, and nothing of the instance is left.";
    "DEL-RESUME", Delete, "Interrupted Delete is completed by the next",
        axes: [DeleteReturn], gate: None, hooks: [Faults, Observation], needs: [],
        "A Delete interrupted after any backend step, by an error, a lost reply, a dropped future or the death of the process, fails with Transient, or returns Ok having left nothing of the instance (under delete-return=early, within the settle time); the next Delete (by a fresh provider after a death) succeeds: the instance is gone and nothing of it is left.";
    "DEL-OWNERSHIP", Delete, "Delete never destroys what is not ours",
        axes: [], gate: None, hooks: [Planting], needs: [],
        "Delete never destroys or changes a resource that does not carry our mark; it either refuses with Permanent or leaves it alone and succeeds.";
    "LST-MARKED-ONLY", List, "Only marked resources with the tag are listed",
        axes: [], gate: None, hooks: [Planting], needs: [],
        "ListByTag returns the instances carrying the tag, its own and those another party marked (listed with the uid their mark carries), and excludes unmarked resources and instances with other tags.";
    "LST-EMPTY-UID", List, "Marked resources with an empty uid are listed",
        axes: [], gate: None, hooks: [Planting], needs: [],
        "A resource carrying the tag but an empty uid is listed, with an empty uid.";
    "LST-ORDER", List, "Locations come in configuration order",
        axes: [], gate: None, hooks: [], needs: [TwoLocations],
        "Instances of different locations are listed in configuration order of their locations, and repeated listings return the same sequence.";
    "LST-PARTIAL", List, "Unreachable locations follow list-partial",
        axes: [ListPartial], gate: None, hooks: [Faults], needs: [TwoLocations],
        "With list-partial=fail-whole, one unreachable location fails the call with Transient. With list-partial=partial, the call returns before its deadline with the reachable locations' instances and the unreachable location named, for a refused location and for a black-holed one alike, and whichever location it is, the first included; a whole-call Transient is a violation. With every location reachable, nothing is named unreachable. A location named unreachable comes with a reason that is not empty.";
    "LST-UNREADABLE", List, "An unreadable resource is skipped",
        axes: [], gate: Some((Axis::GcMark, &["written-metadata", "backend-tags"])), hooks: [Planting], needs: [],
        "A marked resource that cannot be read is skipped; the call still succeeds and lists the others. Likewise a resource that vanishes while the listing reads it (a not-found answer to any of its per-resource reads) is skipped, not fatal, and so is one whose per-resource read is refused (a permanent error). A per-resource read that fails transiently (a busy backend) or never answers never drops its resource silently: the listing fails with Transient, names the location unreachable, or lists the resource.";
    "LST-AGREES", List, "Listing agrees with Get",
        axes: [], gate: None, hooks: [], needs: [],
        "Every listed instance agrees with Get on id, name, uid, tag and created_at. Its state agrees too, except that a listing may show Provisioning where Get shows Running, and it may omit the address.";
    "GEN-CANCEL", General, "Deadlines and cancellation return promptly",
        axes: [ListPartial], gate: None, hooks: [Faults, Observation], needs: [],
        "A call whose deadline passes or whose token fires returns Transient promptly, even when the backend hangs (with list-partial=partial a listing may instead return in time with the hung location named unreachable); a call dropped after any backend step leaves nothing behind that the next call cannot converge from.";
    "GEN-ERROR-NAME", General, "Errors carry the configured provider name",
        axes: [], gate: None, hooks: [], needs: [],
        "Every error names the configured provider and the operation it came from, and says what went wrong in a message that is not empty.";
    "GEN-LOGGING", General, "Logging follows the verbosity tiers",
        axes: [], gate: Some((Axis::Logging, &["tiered"])), hooks: [Observation], needs: [],
        "At V0 a successful operation logs nothing, and no operation logs below warning level; at V1 a successful one logs exactly one line at info level and nothing finer, and a failed one or one that finds nothing logs at least one line, at most one of them at info level, and nothing finer; at V2 every operation logs at least one debug line per backend call. Check is an operation like the others.";
    "GEN-SPANS", General, "One span per operation, one child per backend call",
        axes: [], gate: Some((Axis::ChildSpans, &["span-decorator"])), hooks: [Observation], needs: [],
        "Each operation opens exactly one span under the caller's span, and every backend call it makes has its own span below that one, named after the call.";
    "GEN-NO-IO-AT-NEW", General, "Constructing a provider does no I/O",
        axes: [], gate: None, hooks: [Observation], needs: [],
        "Building a provider makes no backend call and opens no connection, even when a location is unreachable.";
    "GEN-ROTATION", General, "Rotated credentials are used",
        axes: [Credentials], gate: None, hooks: [Rotation, Faults, Observation], needs: [],
        "Rotated credentials are used: with credentials=mounted-files, credentials replaced on disk are used by the next connection the provider opens, without a restart; with credentials=env or inline, a provider constructed after the rotation uses the new ones.";
    "GEN-PARALLEL", General, "Different names run concurrently",
        axes: [], gate: None, hooks: [Faults], needs: [],
        "An operation on one name does not wait for a stalled operation on another name: there is no global lock.";
    "GEN-MODEL", General, "Random operation sequences agree with a model",
        axes: [DeleteReturn], gate: None, hooks: [Faults], needs: [],
        "Random sequences of Create, Get, Delete, ListByTag and restart over a small pool of names, with seeded transient faults and lost replies (the backend acts, the reply is lost with the connection), agree with a reference model: repeats are idempotent, NotFound only follows a Delete or a Create that never completed, listings hold exactly the live instances, only the allowed error kinds occur, and nothing is left after the final Deletes.";
    "CHK-ORDER", Check, "One entry per location, in order",
        axes: [], gate: None, hooks: [], needs: [Checker],
        "Check returns exactly one entry per configured location, in configuration order.";
    "CHK-CONCURRENT", Check, "Locations are checked concurrently",
        axes: [], gate: None, hooks: [Faults], needs: [Checker, TwoLocations],
        "A slow or black-holed location does not delay the others: Check's duration is that of the slowest location, not the sum.";
    "CHK-DEADLINE", Check, "An expired deadline returns promptly with timeouts",
        axes: [], gate: None, hooks: [Faults], needs: [Checker],
        "When locations do not answer, Check returns promptly once its deadline passes, with one not-ready entry per location and reason Timeout.";
    "CHK-REASONS", Check, "Each cause gives its reason, from a closed vocabulary",
        axes: [], gate: None, hooks: [], needs: [Checker],
        "Every reason is one of Ready, Unreachable, AuthFailed, HostKeyRejected, Timeout, CredentialsUnavailable or a reason the provider declares; ready entries say Ready and others do not. Each cause gives its own reason at the location it breaks, and the other locations stay Ready: a refused location Unreachable, a black-holed one Timeout, one that takes the connection and never answers a call Timeout, one that takes the connection and refuses every call for good (a permanent error, as an access-control denial) AuthFailed, one that refuses any single one of Check's calls for good after the ones before it answered AuthFailed, one that answers every call with a transient error (a busy backend) Unreachable or Timeout, credentials revoked with nothing in their place AuthFailed, a host key other than the trusted one HostKeyRejected, a credential file that is not there CredentialsUnavailable, and each reason the provider declares, as its fixture produces it. Once the cause is undone, the location is Ready again without a restart. A cause the fixture cannot produce is recorded as not checked. With a location's container removed, whatever Check says of it is a shared reason or a declared one.";
    "CHK-ISOLATED", Check, "Check uses its own connections",
        axes: [], gate: None, hooks: [Observation], needs: [Checker],
        "Check never uses or breaks the connections that operations use: it makes its backend calls on connections of its own, and the operations' connection is still in use afterwards.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_prefixed_and_grouped_by_area() {
        let mut seen = std::collections::HashSet::new();
        let mut last_area = Area::Create;
        for r in CATALOGUE {
            assert!(seen.insert(r.id), "duplicate id {}", r.id);
            assert!(
                r.id.starts_with(r.area.prefix()),
                "{} is not in {:?}",
                r.id,
                r.area
            );
            assert!(r.area >= last_area, "{} is out of area order", r.id);
            last_area = r.area;
            if let Some((axis, values)) = r.gate {
                assert!(
                    !values.is_empty() && values.iter().all(|v| axis.values().contains(v)),
                    "{}: gate values {values:?}",
                    r.id
                );
            }
            assert!(!r.text.is_empty() && !r.title.is_empty());
        }
    }
}
