//! Mutant providers: the template provider with exactly one behaviour broken, each
//! declaring the rules the suite must then fail.
//!
//! A defect below the API is a `Defect` behind one of the provider's seams (the
//! provider's own `provider::seams::Seams` trait, whose defaults are the correct
//! behaviour, implemented here from outside); a defect visible at the API is a small
//! wrapper (`Twisted`) around the correct provider. Both exist only in this module:
//! the provider does not know of it, and faults for the real suite are injected below
//! the provider. Deleting this module (and the `mod mutants` line that installs it)
//! leaves a provider that compiles unchanged.
//! The kill-matrix test runs the whole suite against every mutant and checks that the
//! failed rules are exactly the declared ones.

use std::sync::Arc;
use std::time::Duration;

use conformance::{Ctx, Provider};

mod defects;
mod twisted;

use defects::{Defect, broken};
use twisted::*;

use crate::config::TemplateConfig;
use crate::fixture::{FixtureTwists, TemplateFixture};
use crate::provider::TemplateProvider;

/// One mutant: a fixture whose provider breaks one behaviour.
pub struct Mutant {
    /// A short name for the broken behaviour.
    pub name: &'static str,
    /// The rule IDs the suite must fail, and no others.
    pub declared: &'static [&'static str],
    /// Builds the mutant's fixture.
    pub build: fn() -> TemplateFixture,
}

impl std::fmt::Debug for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutant")
            .field("name", &self.name)
            .field("declared", &self.declared)
            .finish()
    }
}

/// Opens a connection to every site while the provider is being built.
fn dials_at_new(p: TemplateProvider) -> Arc<dyn Provider> {
    if let Ok(rt) = tokio::runtime::Handle::try_current()
        && rt.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
    {
        let ctx = Ctx::with_timeout(Duration::from_secs(1));
        let _ = tokio::task::block_in_place(|| rt.block_on(p.list_by_tag(&ctx, "warm-up")));
    }
    Arc::new(p)
}

/// A declaration mutant: declares `claim`, behaves as `behaves` (each `axis=value`
/// pairs over the default profile), with `twist` applied to the fixture.
fn declares(claim: &str, behaves: &str, twist: fn(&mut FixtureTwists)) -> TemplateFixture {
    let base = TemplateConfig::default_profile();
    let legal = |pairs: &str| {
        base.with_pairs(pairs)
            .unwrap_or_else(|e| panic!("mutant profile {pairs}: {e}"))
    };
    let mut f = TemplateFixture::default().with_profile(legal(behaves));
    f.twists.claim = Some(legal(claim));
    twist(&mut f.twists);
    f
}

macro_rules! defective {
    ($($f:ident => $d:ident),* $(,)?) => {
        $(fn $f(p: TemplateProvider) -> Arc<dyn Provider> {
            broken(p, Defect::$d)
        })*
    };
}

defective! {
    reapply_cloud_init => ReapplyCloudInit,
    no_resume => NoResume,
    restamp_on_resume => RestampOnResume,
    retry_start_blindly => RetryStartBlindly,
    adopt_unmarked => AdoptUnmarked,
    adopt_foreign => AdoptForeign,
    foreign_refusal_carries_cloud_init => ForeignRefusalCarriesCloudInit,
    no_quota_precheck => NoQuotaPrecheck,
    quota_refuses_exact_fit => QuotaRefusesExactFit,
    quota_names_only_the_disk => QuotaNamesOnlyTheDisk,
    quota_names_more_than_it_needs => QuotaNamesMoreThanItNeeds,
    create_not_found => CreateNotFound,
    vanished_part_is_not_found => VanishedPartIsNotFound,
    create_auth_failure_transient => CreateAuthFailureTransient,
    create_permanent_as_transient => CreatePermanentAsTransient,
    quota_refusal_transient => QuotaRefusalTransient,
    create_transient_as_permanent => CreateTransientAsPermanent,
    log_cloud_init => LogCloudInit,
    skip_uid_validation => SkipUidValidation,
    no_created_at => NoCreatedAt,
    create_unlocked => CreateUnlocked,
    get_busy_while_locked => GetBusyWhileLocked,
    get_closed_as_not_found => GetClosedAsNotFound,
    get_not_found_as_transient => GetNotFoundAsTransient,
    paused_is_provisioning => PausedIsProvisioning,
    any_address_is_usable => AnyAddressIsUsable,
    created_at_in_memory => CreatedAtInMemory,
    delete_keeps_seed => DeleteKeepsSeed,
    delete_keeps_seed_at_second_site => DeleteKeepsSeedAtSecondSite,
    delete_without_stop => DeleteWithoutStop,
    delete_requires_parts => DeleteRequiresParts,
    delete_done_without_primary => DeleteDoneWithoutPrimary,
    delete_refuses_vanished => DeleteRefusesVanished,
    delete_refuses_vanished_container => DeleteRefusesVanishedContainer,
    delete_takes_previous_disk => DeleteTakesThePreviousDisk,
    delete_unlocked => DeleteUnlocked,
    delete_ignores_mark => DeleteIgnoresMark,
    list_unmarked => ListUnmarked,
    list_knows_only_its_own => ListKnowsOnlyItsOwn,
    check_container_read_is_missing => CheckContainerReadIsMissing,
    check_busy_is_auth_failed => CheckBusyIsAuthFailed,
    dial_refusal_transient => DialRefusalTransient,
    list_unreadable_fatal => ListUnreadableFatal,
    list_vanished_fatal => ListVanishedFatal,
    list_refused_read_fatal => ListRefusedReadFatal,
    list_skips_busy_read => ListSkipsBusyRead,
    list_waits_for_every_site => ListWaitsForEverySite,
    log_calls_at_v0 => LogCallsAtV0,
    no_call_spans => NoCallSpans,
    detached_call_spans => DetachedCallSpans,
    credentials_read_once => CredentialsReadOnce,
    global_lock => GlobalLock,
    check_sequential => CheckSequential,
    check_on_cached_connection => CheckOnCachedConnection,
}

/// A mutant whose provider has one defect below the API.
fn defect(build: crate::fixture::Build) -> TemplateFixture {
    TemplateFixture::default().with_build(build)
}

/// What a provider that records every payload in a span's fields fails: every rule in
/// which it is handed one (the rules that make no Create, and Check's, it passes).
const SPAN_CARRIES_CLOUD_INIT_FAILS: &[&str] = &[
    "CRE-IDEMPOTENT",
    "CRE-RESUME",
    "CRE-RETURN",
    "CRE-PLACEMENT",
    "CRE-ADOPT-GUARD",
    "CRE-QUOTA",
    "CRE-BACKEND-NOTFOUND",
    "CRE-SECRET",
    "CRE-INVALID",
    "CRE-MARK",
    "CRE-CONCURRENT",
    "GET-AFTER-DELETE",
    "GET-DURING-DELETE",
    "GET-BUSY",
    "GET-STATE",
    "GET-STATELESS",
    "DEL-IDEMPOTENT",
    "DEL-COMPLETE",
    "DEL-RUNNING",
    "DEL-PARTIAL",
    "DEL-CONCURRENT",
    "DEL-RESUME",
    "LST-MARKED-ONLY",
    "LST-ORDER",
    "LST-PARTIAL",
    "LST-UNREADABLE",
    "LST-AGREES",
    "GEN-CANCEL",
    "GEN-ERROR-NAME",
    "GEN-LOGGING",
    "GEN-SPANS",
    "GEN-ROTATION",
    "GEN-PARALLEL",
    "GEN-MODEL",
    "CHK-ISOLATED",
];

/// The rules whose catalogue entry names `delete-return`: what a declaration mutant of
/// that axis runs, and breaks.
const DELETE_RETURN_RULES: &[&str] = &[
    "CRE-QUOTA",
    "GET-AFTER-DELETE",
    "GET-DURING-DELETE",
    "DEL-IDEMPOTENT",
    "DEL-COMPLETE",
    "DEL-RUNNING",
    "DEL-PARTIAL",
    "DEL-CONCURRENT",
    "DEL-RESUME",
    "GEN-MODEL",
];

/// The rules a mutant's kill-matrix trial runs: for a declaration mutant, only those
/// whose catalogue entry names its axis (as its axes or its gate); for the others, all.
pub fn rules_for(m: &Mutant) -> Option<Vec<String>> {
    let (_, axis) = DECLARED_AXIS.iter().find(|(n, _)| *n == m.name)?;
    Some(
        conformance::rules::CATALOGUE
            .iter()
            .filter(|r| {
                r.axes.iter().any(|a| a.key() == *axis)
                    || r.gate.is_some_and(|(g, _)| g.key() == *axis)
            })
            .map(|r| r.id.to_owned())
            .collect(),
    )
}

/// Declaration mutants, each with the axis its declaration is about: its kill-matrix
/// trial runs only the rules whose catalogue entry names that axis (as its `axes` or
/// its gate); the profile matrix's axis-lists trial shows those are exactly the rules
/// whose checks read it.
pub static DECLARED_AXIS: &[(&str, &str)] = &[
    ("declares-delete-waits-returns-early", "delete-return"),
    (
        "declares-cascaded-backend-keeps-parts",
        "secondary-resources",
    ),
    ("declares-no-secondary-has-parts", "secondary-resources"),
    ("declares-env-restart-keeps-old", "credentials"),
    ("declares-inline-restart-keeps-old", "credentials"),
    ("declares-allocated-reports-none", "ip-source"),
    ("declares-discovered-reports-none", "ip-source"),
    ("declares-no-ip-reports-one", "ip-source"),
    ("declares-no-created-at-reports-one", "created-at"),
    ("declares-backend-created-at-reports-none", "created-at"),
    ("declares-tags-behaves-name-prefix", "gc-mark"),
    ("declares-metadata-behaves-name-prefix", "gc-mark"),
    ("declares-tiered-logs-nothing", "logging"),
    ("declares-span-decorator-no-spans", "child-spans"),
    ("declares-quota-detected-no-precheck", "quota"),
    ("backend-quota-refusal-is-transient", "quota"),
    ("backend-quota-delete-keeps-seed", "quota"),
    ("declares-early-never-finishes", "delete-return"),
];

/// Every rule whose check deletes an instance it created: the leak is seen by the
/// check itself or by the runner's sweep, which fails any rule that leaves a resource
/// of its own behind.
const LEAKS: &[&str] = &[
    "CRE-IDEMPOTENT",
    "CRE-RESUME",
    "CRE-RETURN",
    "CRE-QUOTA",
    "CRE-BACKEND-NOTFOUND",
    "CRE-SECRET",
    "CRE-MARK",
    "CRE-CONCURRENT",
    "GET-AFTER-DELETE",
    "GET-DURING-DELETE",
    "GET-BUSY",
    "GET-STATE",
    "GET-STATELESS",
    "DEL-IDEMPOTENT",
    "DEL-COMPLETE",
    "DEL-RUNNING",
    "DEL-CONCURRENT",
    "DEL-PARTIAL",
    "DEL-RESUME",
    "LST-MARKED-ONLY",
    "LST-ORDER",
    "LST-PARTIAL",
    "LST-UNREADABLE",
    "LST-AGREES",
    "GEN-CANCEL",
    "GEN-LOGGING",
    "GEN-SPANS",
    "GEN-ROTATION",
    "GEN-PARALLEL",
    "GEN-MODEL",
    "CHK-ISOLATED",
];

/// Every rule whose check deletes a running instance it created and needs the Delete
/// to succeed (directly, in its cleanup, or through the sweep that lists leftovers).
/// GET-STATE is absent: its instance is shut off before the cleanup.
const STUCK: &[&str] = &[
    "CRE-IDEMPOTENT",
    "CRE-RESUME",
    "CRE-RETURN",
    "CRE-QUOTA",
    "CRE-BACKEND-NOTFOUND",
    "CRE-SECRET",
    "CRE-MARK",
    "CRE-CONCURRENT",
    "GET-AFTER-DELETE",
    "GET-DURING-DELETE",
    "GET-BUSY",
    "GET-STATELESS",
    "DEL-IDEMPOTENT",
    "DEL-COMPLETE",
    "DEL-RUNNING",
    "DEL-PARTIAL",
    "DEL-CONCURRENT",
    "DEL-RESUME",
    "LST-MARKED-ONLY",
    "LST-ORDER",
    "LST-PARTIAL",
    "LST-UNREADABLE",
    "LST-AGREES",
    "GEN-CANCEL",
    "GEN-LOGGING",
    "GEN-SPANS",
    "GEN-ROTATION",
    "GEN-PARALLEL",
    "GEN-MODEL",
    "CHK-ISOLATED",
];

/// The message of the panics mutants raise on purpose (the suite records each as a
/// violation): the matrices keep them off the console.
pub const DELIBERATE_PANIC: &str = "percent-decoding the instance id failed";

/// The mutants whose suite takes ten seconds or more (measured one at a time): the
/// kill matrices start them first, so that a matrix takes about its total time divided
/// by its threads instead of ending on a long trial started last.
pub static SLOW_FIRST: &[&str] = &[
    "declares-early-never-finishes",
    "delete-without-lock",
    "create-without-lock",
    "blocking-declares-early",
    "get-lags-after-create",
    "overstays-its-deadline",
    "dropped-create-keeps-its-lock",
];

macro_rules! mutants {
    ($($name:literal $declared:expr => $build:expr;)*) => {
        /// Every mutant, with the rules it must break.
        pub static MUTANTS: &[Mutant] = &[$(Mutant { name: $name, declared: $declared, build: $build }),*];
    };
}

mutants! {
    "create-reapplies-cloud-init" &["CRE-IDEMPOTENT"] => || defect(reapply_cloud_init);
    "create-does-not-resume" &["CRE-RESUME"] => || defect(no_resume);
    "resume-restamps-created-at" &["CRE-RESUME"] => || defect(restamp_on_resume);
    "retries-start-blindly" &["CRE-RESUME"] => || defect(retry_start_blindly);
    "early-declares-blocking" &["CRE-RETURN"] => || TemplateFixture::default().with_build(declares_blocking);
    "blocking-declares-early" &["CRE-RETURN"] => || TemplateFixture::default().blocking().with_build(declares_early);
    "unknown-placement-is-transient" &["CRE-PLACEMENT"] => || TemplateFixture::default().with_build(placement_transient);
    "adopts-unmarked" &["CRE-ADOPT-GUARD"] => || defect(adopt_unmarked);
    "adopts-foreign-uid" &["CRE-ADOPT-GUARD"] => || defect(adopt_foreign);
    "no-quota-precheck" &["CRE-QUOTA"] => || defect(no_quota_precheck);
    "quota-refuses-an-exact-fit" &["CRE-QUOTA"] => || defect(quota_refuses_exact_fit);
    "quota-names-only-the-disk" &["CRE-QUOTA"] => || defect(quota_names_only_the_disk);
    "quota-names-more-than-it-needs" &["CRE-QUOTA"] => || defect(quota_names_more_than_it_needs);
    "create-surfaces-backend-not-found" &["CRE-BACKEND-NOTFOUND"] => || defect(create_not_found);
    "vanished-part-is-not-found" &["CRE-BACKEND-NOTFOUND"] => || defect(vanished_part_is_not_found);
    "create-auth-failure-is-transient" &["CRE-BACKEND-NOTFOUND"] => || defect(create_auth_failure_transient);
    "create-permanent-is-transient" &["CRE-BACKEND-NOTFOUND"] => || defect(create_permanent_as_transient);
    "logs-cloud-init-at-debug" &["CRE-SECRET", "GEN-LOGGING"] => || defect(log_cloud_init);
    "error-carries-cloud-init" &["CRE-SECRET", "CRE-ADOPT-GUARD", "CRE-BACKEND-NOTFOUND", "CRE-INVALID", "CRE-PLACEMENT", "CRE-QUOTA", "CRE-RESUME", "GEN-CANCEL", "GEN-ERROR-NAME", "GEN-LOGGING", "GEN-MODEL"] => || TemplateFixture::default().with_build(error_carries_cloud_init);
    "warns-cloud-init-on-quota" &["CRE-QUOTA", "CRE-SECRET"] => || TemplateFixture::default().with_build(warns_cloud_init_on_quota);
    "foreign-refusal-source-carries-cloud-init" &["CRE-ADOPT-GUARD", "CRE-SECRET"] => || defect(foreign_refusal_carries_cloud_init);
    "errors-without-message" &["GEN-ERROR-NAME"] => || TemplateFixture::default().with_build(errors_without_message);
    "create-swallows-backend-errors" &["CRE-RESUME", "GEN-MODEL"] => || TemplateFixture::default().with_build(create_swallows_backend_errors);
    "delete-swallows-backend-errors" &["DEL-RESUME"] => || TemplateFixture::default().with_build(delete_swallows_backend_errors);
    "skips-uid-validation" &["CRE-INVALID"] => || defect(skip_uid_validation);
    "no-created-at" &["CRE-MARK"] => || defect(no_created_at);
    "create-without-lock" &["CRE-CONCURRENT"] => || defect(create_unlocked);
    "get-not-found-is-transient" &["GET-AFTER-DELETE", "GET-DURING-DELETE", "DEL-IDEMPOTENT", "DEL-COMPLETE", "DEL-RUNNING", "DEL-PARTIAL", "DEL-CONCURRENT", "GEN-MODEL", "DEL-RESUME"] => || defect(get_not_found_as_transient);
    "get-busy-while-locked" &["GET-DURING-DELETE"] => || defect(get_busy_while_locked);
    "get-dropped-connection-is-not-found" &["GET-BUSY", "GEN-MODEL"] => || defect(get_closed_as_not_found);
    "paused-is-provisioning" &["GET-STATE"] => || defect(paused_is_provisioning);
    "link-local-is-usable" &["GET-STATE"] => || defect(any_address_is_usable);
    "malformed-get-is-not-found" &["GET-MALFORMED", "GEN-LOGGING"] => || TemplateFixture::default().with_build(malformed_get_not_found);
    "unconfigured-get-is-not-found" &["GET-UNCONFIGURED"] => || TemplateFixture::default().with_build(unconfigured_get_not_found);
    "created-at-in-memory" &["GET-STATELESS"] => || defect(created_at_in_memory);
    "malformed-delete-is-ok" &["DEL-MALFORMED"] => || TemplateFixture::default().with_build(malformed_delete_ok);
    "repeat-delete-is-not-found" &["DEL-IDEMPOTENT", "GEN-MODEL"] => || TemplateFixture::default().with_build(repeat_delete_not_found);
    "delete-keeps-seed" LEAKS => || defect(delete_keeps_seed);
    "delete-keeps-seed-at-second-site" &["CRE-BACKEND-NOTFOUND", "CRE-IDEMPOTENT", "CRE-QUOTA", "CRE-RESUME", "CRE-SECRET", "DEL-COMPLETE", "DEL-IDEMPOTENT", "DEL-PARTIAL", "DEL-RESUME", "GET-BUSY", "GET-STATE", "LST-AGREES", "LST-MARKED-ONLY", "LST-ORDER", "LST-PARTIAL", "LST-UNREADABLE"] => || defect(delete_keeps_seed_at_second_site);
    "delete-without-stop" STUCK => || defect(delete_without_stop);
    "delete-requires-every-part" &["DEL-PARTIAL", "GEN-MODEL"] => || defect(delete_requires_parts);
    "delete-refuses-a-vanished-record" &["DEL-PARTIAL"] => || defect(delete_refuses_vanished);
    "delete-refuses-a-vanished-container" &["DEL-PARTIAL"] => || defect(delete_refuses_vanished_container);
    "delete-takes-the-previous-disk" &["DEL-COMPLETE"] => || defect(delete_takes_previous_disk);
    "unconfigured-delete-is-permanent" &["DEL-UNCONFIGURED"] => || TemplateFixture::default().with_build(unconfigured_delete_permanent);
    "delete-done-without-primary" &["DEL-PARTIAL", "DEL-RESUME"] => || defect(delete_done_without_primary);
    "delete-without-lock" &["DEL-CONCURRENT"] => || defect(delete_unlocked);
    "delete-ignores-ownership" &["DEL-OWNERSHIP"] => || defect(delete_ignores_mark);
    "list-leaks-unmarked" &["LST-MARKED-ONLY"] => || defect(list_unmarked);
    "list-knows-only-its-own" &["LST-MARKED-ONLY", "CRE-RESUME", "GEN-MODEL", "GET-STATELESS"] => || defect(list_knows_only_its_own);
    "list-skips-empty-uid" &["LST-EMPTY-UID"] => || TemplateFixture::default().with_build(list_skips_empty_uid);
    "list-reversed" &["LST-ORDER"] => || TemplateFixture::default().with_build(list_reversed);
    "fail-whole-declares-partial" &["LST-PARTIAL"] => || TemplateFixture::default().fail_whole().with_build(declares_partial);
    "partial-declares-fail-whole" &["LST-PARTIAL", "GEN-CANCEL"] => || TemplateFixture::default().with_build(declares_fail_whole);
    "list-unreadable-is-fatal" &["LST-UNREADABLE"] => || defect(list_unreadable_fatal);
    "list-vanished-is-fatal" &["LST-UNREADABLE"] => || defect(list_vanished_fatal);
    "list-refused-read-is-fatal" &["LST-UNREADABLE"] => || defect(list_refused_read_fatal);
    "list-skips-a-busy-read" &["LST-UNREADABLE"] => || defect(list_skips_busy_read);
    "partial-waits-for-every-site" &["LST-PARTIAL"] => || defect(list_waits_for_every_site);
    "list-truncates-created-at" &["LST-AGREES"] => || TemplateFixture::default().with_build(list_truncates_created_at);
    "cancel-is-permanent" &["GEN-CANCEL"] => || TemplateFixture::default().with_build(cancel_is_permanent);
    "error-without-provider-name" &["GEN-ERROR-NAME"] => || TemplateFixture::default().with_build(no_provider_name);
    "name-is-not-the-configured-one" &["GEN-ERROR-NAME"] => || TemplateFixture::default().with_build(wrong_name);
    "logs-every-call-at-v0" &["GEN-LOGGING"] => || defect(log_calls_at_v0);
    "no-call-spans" &["GEN-SPANS"] => || defect(no_call_spans);
    "call-spans-detached" &["GEN-SPANS"] => || defect(detached_call_spans);
    "dials-at-new" &["GEN-NO-IO-AT-NEW"] => || TemplateFixture::default().with_build(dials_at_new);
    "credentials-read-once" &["GEN-ROTATION", "CHK-REASONS"] => || defect(credentials_read_once);
    "global-lock" &["GEN-PARALLEL"] => || defect(global_lock);
    "create-transient-is-permanent" &["GEN-MODEL", "CRE-RESUME"] => || defect(create_transient_as_permanent);
    "check-adds-an-aggregate-entry" &["CHK-ORDER", "CHK-DEADLINE", "CHK-REASONS"] => || TemplateFixture::default().with_build(check_adds_aggregate);
    "check-sequential" &["CHK-CONCURRENT", "CHK-REASONS"] => || defect(check_sequential);
    "check-timeout-is-unreachable" &["CHK-DEADLINE", "CHK-REASONS"] => || TemplateFixture::default().with_build(check_timeout_is_unreachable);
    "check-invents-a-reason" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_invents_reason);
    "check-auth-is-unreachable" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_auth_is_unreachable);
    "check-host-key-is-auth-failed" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_host_key_is_auth_failed);
    "check-no-credentials-is-auth-failed" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_no_credentials_is_auth_failed);
    "check-says-unreachable-for-everything" &["CHK-REASONS", "CHK-DEADLINE"] => || TemplateFixture::default().with_build(check_everything_unreachable);
    "check-on-the-operations-connection" &["CHK-ISOLATED"] => || defect(check_on_cached_connection);
    "check-late-refusal-is-container-missing" &["CHK-REASONS"] => || defect(check_container_read_is_missing);
    "check-busy-is-auth-failed" &["CHK-REASONS"] => || defect(check_busy_is_auth_failed);
    "dial-refusal-is-transient" &["CRE-BACKEND-NOTFOUND"] => || defect(dial_refusal_transient);
    // Declaration mutants: each declares one value and behaves as another of the axis.
    "declares-delete-waits-returns-early" DELETE_RETURN_RULES => || declares("delete-return=waits", "delete-return=early", |t| t.undefine_delay = Some(Duration::from_secs(1)));
    "declares-cascaded-backend-keeps-parts" &["DEL-COMPLETE"] => || declares("secondary-resources=cascaded", "secondary-resources=cascaded", |t| t.cascade = Some(false));
    "declares-no-secondary-has-parts" &["DEL-COMPLETE"] => || declares("secondary-resources=none", "secondary-resources=explicit", |_| {});
    "declares-env-restart-keeps-old" &["GEN-ROTATION"] => || declares("credentials=env", "credentials=env", |t| t.restart_keeps_credentials = true);
    "declares-inline-restart-keeps-old" &["GEN-ROTATION"] => || declares("credentials=inline", "credentials=inline", |t| t.restart_keeps_credentials = true);
    "declares-allocated-reports-none" &["GET-STATE"] => || declares("ip-source=allocated", "ip-source=none", |_| {});
    "declares-discovered-reports-none" &["GET-STATE"] => || declares("ip-source=discovered", "ip-source=none", |_| {});
    "declares-no-ip-reports-one" &["GET-STATE"] => || declares("ip-source=none", "ip-source=allocated", |_| {});
    "declares-no-created-at-reports-one" &["CRE-MARK"] => || declares("created-at=none", "created-at=written-at-create", |_| {});
    "declares-backend-created-at-reports-none" &["CRE-MARK"] => || declares("created-at=backend-reported", "created-at=none", |_| {});
    "declares-tags-behaves-name-prefix" &["LST-UNREADABLE"] => || declares("gc-mark=backend-tags,created-at=backend-reported", "gc-mark=name-prefix,created-at=backend-reported", |_| {});
    "declares-metadata-behaves-name-prefix" &["LST-UNREADABLE"] => || declares("gc-mark=written-metadata,created-at=backend-reported", "gc-mark=name-prefix,created-at=backend-reported", |_| {});
    "name-prefix-lists-unprefixed" &["LST-MARKED-ONLY"] => || {
        declares("gc-mark=name-prefix,created-at=none", "gc-mark=name-prefix,created-at=none", |_| {}).with_build(list_unmarked)
    };
    "declares-tiered-logs-nothing" &["GEN-LOGGING", "CRE-SECRET"] => || declares("logging=tiered", "logging=none", |_| {});
    "declares-span-decorator-no-spans" &["GEN-SPANS"] => || declares("child-spans=span-decorator", "child-spans=none", |_| {});
    "declares-quota-detected-no-precheck" &["CRE-QUOTA"] => || declares("quota=detected", "quota=backend-reported", |_| {});
    "backend-quota-refusal-is-transient" &["CRE-QUOTA"] => || {
        declares("quota=backend-reported", "quota=backend-reported", |_| {}).with_build(quota_refusal_transient)
    };
    // Clause mutants, API-visible (mutants/twisted.rs): each breaks one clause of a rule.
    "repeat-create-is-transient" &["CRE-IDEMPOTENT", "CRE-BACKEND-NOTFOUND", "GEN-MODEL"] => || TemplateFixture::default().with_build(repeat_create_transient);
    "get-lags-after-create" &["CRE-RETURN"] => || TemplateFixture::default().blocking().with_build(get_lags_after_create);
    "booting-is-running" &["CRE-RETURN", "GET-STATE"] => || TemplateFixture::default().with_build(booting_is_running);
    "unknown-placement-creates-at-the-first" &["CRE-PLACEMENT", "CRE-SECRET", "GEN-ERROR-NAME"] => || TemplateFixture::default().with_build(unknown_placement_creates_at_first);
    "quota-without-figures" &["CRE-QUOTA"] => || TemplateFixture::default().with_build(quota_without_figures);
    "span-carries-cloud-init" SPAN_CARRIES_CLOUD_INIT_FAILS => || TemplateFixture::default().with_build(span_carries_cloud_init);
    "invalid-uid-creates-then-refuses" &["CRE-INVALID"] => || TemplateFixture::default().with_build(invalid_uid_creates_then_refuses);
    "get-reports-no-uid" &["CRE-MARK", "LST-MARKED-ONLY"] => || TemplateFixture::default().with_build(reports_no_uid);
    "created-at-an-hour-early" &["CRE-MARK"] => || TemplateFixture::default().with_build(created_at_an_hour_early);
    "get-panics-on-a-percent-sign" &["GET-MALFORMED"] => || TemplateFixture::default().with_build(get_panics_on_percent);
    "delete-panics-on-a-percent-sign" &["DEL-MALFORMED"] => || TemplateFixture::default().with_build(delete_panics_on_percent);
    "delete-transient-is-permanent" &["DEL-RESUME", "GEN-MODEL"] => || TemplateFixture::default().with_build(delete_transient_is_permanent);
    "list-returns-nothing" &["LST-MARKED-ONLY", "GEN-MODEL", "LST-ORDER", "LST-PARTIAL", "LST-UNREADABLE", "LST-AGREES", "LST-EMPTY-UID", "CRE-IDEMPOTENT", "CRE-RESUME", "CRE-CONCURRENT", "GET-STATELESS", "GEN-CANCEL"] => || TemplateFixture::default().with_build(list_returns_nothing);
    "list-fills-an-empty-uid" &["LST-EMPTY-UID"] => || TemplateFixture::default().with_build(list_fills_empty_uid);
    "list-order-alternates" &["LST-ORDER"] => || TemplateFixture::default().with_build(list_order_alternates);
    "partial-names-no-location" &["LST-PARTIAL", "LST-UNREADABLE", "GEN-CANCEL"] => || TemplateFixture::default().with_build(partial_names_no_location);
    "partial-names-no-reason" &["LST-PARTIAL"] => || TemplateFixture::default().with_build(partial_names_no_reason);
    "partial-fails-on-the-first-site" &["LST-PARTIAL"] => || TemplateFixture::default().with_build(partial_fails_on_the_first_site);
    "names-a-reachable-location" &["LST-PARTIAL"] => || TemplateFixture::default().with_build(names_reachable_location);
    "list-says-stopped" &["LST-AGREES"] => || TemplateFixture::default().with_build(list_says_stopped);
    "overstays-its-deadline" &["GEN-CANCEL", "GET-BUSY"] => || TemplateFixture::default().with_build(overstays_deadline);
    "error-names-another-operation" &["GEN-ERROR-NAME"] => || TemplateFixture::default().with_build(error_names_another_operation);
    "opens-two-operation-spans" &["GEN-SPANS"] => || TemplateFixture::default().with_build(opens_two_spans);
    "check-reversed" &["CHK-ORDER"] => || TemplateFixture::default().with_build(check_reversed);
    "check-overstays-its-deadline" &["CHK-DEADLINE", "CHK-CONCURRENT"] => || TemplateFixture::default().with_build(check_overstays_deadline);
    "check-ready-with-a-reason" &["CHK-REASONS", "CHK-DEADLINE"] => || TemplateFixture::default().with_build(check_ready_with_reason);
    "check-refused-is-timeout" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_refused_is_timeout);
    "check-denied-is-unreachable" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_denied_is_unreachable);
    "check-container-missing-is-unreachable" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_container_missing_is_unreachable);
    "check-declares-no-reasons" &["CHK-REASONS"] => || TemplateFixture::default().with_build(check_declares_no_reasons);
    "first-creates-do-not-wait" &["CRE-CONCURRENT", "CRE-QUOTA"] => || TemplateFixture::default().with_build(first_creates_do_not_wait);
    "waiting-creates-get-quota-as-transient" &["CRE-QUOTA"] => || TemplateFixture::default().with_build(waiters_quota_transient);
    // Clause mutants, below the API (mutants/defects.rs): each breaks one clause of a rule.
    "repeat-create-adds-a-volume" &["CRE-IDEMPOTENT", "CRE-RESUME", "CRE-BACKEND-NOTFOUND", "CRE-CONCURRENT", "GEN-MODEL"] => || defect(defects::repeat_create_adds_volume);
    "resume-makes-another-seed" &["CRE-RESUME", "CRE-BACKEND-NOTFOUND", "GEN-CANCEL"] => || defect(defects::resume_reseeds);
    "guard-stops-the-resource-first" &["CRE-ADOPT-GUARD"] => || defect(defects::guard_stops_first);
    "empty-uid-is-foreign" &["CRE-ADOPT-GUARD"] => || defect(defects::empty_uid_is_foreign);
    "backend-quota-delete-keeps-seed" &["CRE-QUOTA", "CRE-SECRET"] => || {
        declares("quota=backend-reported", "quota=backend-reported", |_| {}).with_build(delete_keeps_seed)
    };
    "failed-address-lookup-is-transient" &["GET-STATE"] => || defect(defects::address_lookup_fatal);
    "half-deleted-is-permanent" &["DEL-RESUME", "DEL-PARTIAL"] => || defect(defects::half_deleted_permanent);
    "unmarked-delete-is-transient" &["DEL-OWNERSHIP"] => || defect(defects::unmarked_delete_transient);
    "list-ignores-the-tag" &["LST-MARKED-ONLY"] => || defect(defects::list_ignores_tag);
    "dropped-create-keeps-its-lock" &["GEN-CANCEL"] => || defect(defects::create_lock_under_context);
    "failures-logged-at-info" &["GEN-LOGGING"] => || defect(defects::failures_at_info);
    "failures-log-no-outcome" &["GEN-LOGGING"] => || defect(defects::failures_silent);
    "check-logs-its-outcome-at-v0" &["GEN-LOGGING"] => || defect(defects::check_line_at_v0);
    "v1-logs-calls-at-debug" &["GEN-LOGGING"] => || defect(defects::call_lines_at_v1);
    "v2-logs-no-call-lines" &["GEN-LOGGING"] => || defect(defects::no_call_lines);
    "call-spans-misnamed" &["GEN-SPANS"] => || defect(defects::call_spans_misnamed);
    "check-closes-the-operations-connection" &["CHK-ISOLATED"] => || defect(defects::check_closes_cached);
    "declares-early-never-finishes" DELETE_RETURN_RULES => || declares("delete-return=early", "delete-return=early", |t| t.undefine_delay = Some(Duration::from_secs(20)));
}
