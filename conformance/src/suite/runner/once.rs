//! One run of one rule's check, as named steps: open a testbed and build the check's
//! context; run the check under the panic and timeout guards; sweep what it left and
//! collect what it found; judge ([`super::judge`]); and write the result.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;

use super::judge::{Findings, Judged, judge};
use super::{RunOptions, SWEEP_LOCATION, redact_result, skipped};
use crate::fixture::{Fixture, Hook};
use crate::rules::Rule;
use crate::suite::budget::{self, Peak};
use crate::suite::capture::{Capture, Checkpoint};
use crate::suite::checks::{self, CheckFn};
use crate::suite::cx::{CheckError, Cx, CxParts, Timing};
use crate::suite::outcome::{InjectedFault, Outcome, RuleResult};
use crate::suite::{guard, hooklog, secrets};

/// Runs one rule's check once, on a testbed of its own, with `seed`.
pub(super) async fn run_once(
    fixture: Arc<dyn Fixture>,
    rule: &'static Rule,
    opts: &RunOptions,
    run_id: &str,
    seed: u64,
) -> RuleResult {
    let started = Instant::now();
    let error = |reason: String| {
        let mut r = skipped(rule, seed, Outcome::Error, reason);
        r.duration = started.elapsed();
        r
    };
    let Some(check) = checks::check_for(rule.id) else {
        return error(format!("no check is registered for {}", rule.id));
    };
    let opened = match open(fixture.as_ref(), rule, opts, run_id, seed).await {
        Ok(o) => o,
        Err(reason) => return error(reason),
    };
    let verdict = guarded_check(&opened.cx, check, opts.rule_timeout).await;
    let (findings, collected) = collect(fixture.as_ref(), rule, &opened, verdict).await;
    let judged = judge(findings);
    result(rule, seed, started, judged, collected)
}

/// A testbed opened for one rule, behind the suite's wrappers, and the check's context.
struct Opened {
    cx: Cx,
    /// The most instances the rule held at once.
    peak: Peak,
    /// Payloads the guard saw escape through the provider's answers.
    leaks: guard::Leaks,
    /// Where the captured telemetry stood when the rule started.
    since: Option<Checkpoint>,
}

/// Opens a testbed and wraps it: the instance count, the payload guard, the hook log
/// under the rule's span. An error is the reason the rule could not run.
async fn open(
    fixture: &dyn Fixture,
    rule: &'static Rule,
    opts: &RunOptions,
    run_id: &str,
    seed: u64,
) -> Result<Opened, String> {
    let tb = fixture
        .open()
        .await
        .map_err(|e| format!("could not open a testbed: {e}"))?;
    let (counted, peak) = budget::counted(tb);
    let owner = secrets::new_owner(rule.id);
    let (guarded, leaks) = guard::guarded(Box::new(counted), owner.clone());
    let since = Capture::global().map(|c| c.checkpoint());
    let real = fixture.is_real_backend();
    let run_short: String = run_id.chars().take(8).collect();
    let span =
        tracing::info_span!("conformance.rule", cf_mark = %format!("{}-{}", rule.id, run_short));
    let tb = hooklog::logged(Box::new(guarded), span.clone());
    let cx = Cx::new(CxParts {
        rule,
        tb,
        provider_name: fixture.provider_name(),
        profile: fixture.profile(),
        locations: fixture.locations(),
        run_short,
        seed,
        cases: opts.cases_for(fixture),
        steps: opts.steps.max(2),
        timing: if real { Timing::real() } else { Timing::fake() },
        capture: Capture::global(),
        span,
        owner,
        real_backend: real,
    });
    if cx.locations.is_empty() {
        return Err("the fixture configures no location".into());
    }
    Ok(Opened {
        cx,
        peak,
        leaks,
        since,
    })
}

/// Runs the check at its locations; a panic or the rule's time limit ends it.
async fn guarded_check(cx: &Cx, check: CheckFn, limit: Duration) -> Result<(), CheckError> {
    let body = AssertUnwindSafe(checks::at_its_locations(cx, check)).catch_unwind();
    match tokio::time::timeout(limit, body).await {
        Ok(Ok(v)) => v,
        Ok(Err(panic)) => Err(panicked(cx, panic.as_ref())),
        Err(_) => Err(CheckError::Harness(format!(
            "the check did not finish within {limit:?}"
        ))),
    }
}

/// What goes into the result as it was collected, beside the findings judged.
struct Collected {
    evidence: Vec<String>,
    property: Option<crate::suite::outcome::PropertyFailure>,
    not_checked: Vec<crate::suite::outcome::NotChecked>,
    faults: Vec<InjectedFault>,
    peak_instances: u32,
}

/// After the check: sweeps what it left, asks the faults hook what fired and whether
/// it lied, tears the testbed down, looks for escaped payloads, and takes what the
/// context recorded.
async fn collect(
    fixture: &dyn Fixture,
    rule: &Rule,
    o: &Opened,
    verdict: Result<(), CheckError>,
) -> (Findings, Collected) {
    let cx = &o.cx;
    sweep(cx, matches!(verdict, Err(CheckError::Harness(_)))).await;
    let injected = std::mem::take(&mut *cx.injected.lock().unwrap());
    let faults: Vec<InjectedFault> = match cx.tb.faults() {
        Some(hook) => injected
            .iter()
            .map(|i| InjectedFault::of(&i.spec, hook.fired(i.id)))
            .collect(),
        None => Vec::new(),
    };
    let fault_lie = cx
        .tb
        .faults()
        .and_then(|hook| checks::honesty::fault_lie(cx, &injected, hook));
    if let Err(e) = cx.tb.teardown().await {
        cx.note(format!("teardown failed: {e}"));
    }
    leaked(cx, &o.leaks, o.since);
    let mut evidence = std::mem::take(&mut *cx.evidence.lock().unwrap());
    let peak_instances = o.peak.get();
    let declared = budget::held(rule.id);
    if peak_instances > declared {
        evidence.push(format!(
            "held {peak_instances} instances at once; the rule declares {declared} (--max-instances admits by the declaration)"
        ));
    }
    let findings = Findings {
        verdict,
        violations: std::mem::take(&mut *cx.violations.lock().unwrap()),
        harness_failure: cx.tb.harness_failure(),
        fault_lie,
        environment_capacity: environment_capacity(fixture, rule, &faults),
    };
    let collected = Collected {
        evidence,
        property: cx.property.lock().unwrap().take(),
        not_checked: std::mem::take(&mut *cx.not_checked.lock().unwrap()),
        faults,
        peak_instances,
    };
    (findings, collected)
}

/// The result as reported, every payload blanked.
fn result(rule: &Rule, seed: u64, started: Instant, judged: Judged, c: Collected) -> RuleResult {
    let mut result = RuleResult {
        id: rule.id.into(),
        title: rule.title.into(),
        area: rule.area.as_str().into(),
        outcome: judged.outcome,
        reason: judged.reason,
        violations: judged.violations,
        evidence: c.evidence,
        property: c.property,
        seed,
        not_checked: c.not_checked,
        faults: c.faults,
        duration: started.elapsed(),
        peak_instances: c.peak_instances,
        runs: 1,
        passes: 0,
        flaky: false,
        repeat_seeds: Vec::new(),
        waiver: None,
        log: None,
    };
    redact_result(&mut result);
    result
}

/// On a real backend, for a rule that needs no capacity hook and injected no quota
/// fault, the environment to blame if the rule fails only with QuotaExceeded: it ran
/// out of room, which is not the provider's Fail. `None` on a fake, where the backend's
/// capacity is the fixture's to set.
fn environment_capacity(
    fixture: &dyn Fixture,
    rule: &Rule,
    faults: &[InjectedFault],
) -> Option<String> {
    let unasked =
        !rule.hooks.contains(&Hook::Capacity) && !faults.iter().any(|f| f.kind == "quota");
    if !(fixture.is_real_backend() && unasked) {
        return None;
    }
    let env: Vec<String> = fixture
        .environment()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Some(if env.is_empty() {
        format!("provider {}", fixture.provider_name())
    } else {
        env.join(", ")
    })
}

/// What a panic that escaped the check means: the provider's Fail when it started
/// inside a provider call (the guard marks those), else a bug of the suite's or of a
/// fixture hook's, which is the harness's Error.
fn panicked(cx: &Cx, panic: &(dyn std::any::Any + Send)) -> CheckError {
    let text = secrets::redact(&guard::panic_text(panic)).into_owned();
    if guard::is_provider_panic(panic) {
        CheckError::Violation(cx.violation(
            "during the check",
            "no panic inside the provider",
            format!("the provider panicked: {text}"),
        ))
    } else {
        CheckError::Harness(format!(
            "the suite panicked outside the provider (a bug in the suite or in a fixture hook, not the provider's failure): {text}"
        ))
    }
}

/// Fails the rule for every place one of its payloads showed up: in what the provider
/// returned or panicked with (seen by the guard), and in any span, log line or stderr
/// line recorded since the rule started (`since`), whichever rule's span it was in.
fn leaked(cx: &Cx, leaks: &guard::Leaks, since: Option<Checkpoint>) {
    let mut places = leaks.take();
    if let (Some(cap), Some(from)) = (&cx.capture, since) {
        for p in cap.payload_places_since(from, &cx.owner) {
            if !places.contains(&p) {
                places.push(p);
            }
        }
    }
    for place in places {
        cx.violate(
            "a cloud-init payload the rule handed to Create",
            "the payload nowhere but in the backend (no log line, span, error, stderr line or panic message)",
            format!("it appeared in {place}; the report shows it blanked"),
        );
    }
}
/// After a check: anything carrying the rule's tags or names is a leak; it is removed
/// and the rule fails, unless the check was cut short by the harness's Error (it never
/// reached its own cleanup), when the sweep only notes what it removed.
async fn sweep(cx: &Cx, cut_short: bool) {
    let leak = |at: &str, what: &str, found: String| {
        if cut_short {
            cx.note(format!(
                "{at}: {found} (left by a check cut short, not counted)"
            ));
        } else {
            cx.violate(at, what, found);
        }
    };
    cx.settle_deletions().await;
    let tags = cx.tags.lock().unwrap().clone();
    let mut leaked = BTreeMap::new();
    for tag in &tags {
        match cx.p.list_by_tag(&cx.ctx(), tag).await {
            Ok(l) => {
                for i in l.instances {
                    leaked.insert(i.name.clone(), i.id.clone());
                }
                for u in l.unreachable {
                    cx.note(format!("sweep: {} unreachable: {}", u.location, u.reason));
                }
            }
            Err(e) => cx.note(format!("sweep: listing {tag} failed: {e}")),
        }
    }
    for (name, id) in &leaked {
        leak(
            SWEEP_LOCATION,
            "no instance of the rule left behind",
            format!("{name} ({id}) was still listed; the sweep deleted it"),
        );
        let _ = cx.p.delete(&cx.ctx(), id).await;
    }
    let Some(inv) = cx.tb.inventory() else {
        cx.not_checked(
            "no backend resource of the rule left behind",
            "the fixture has no inventory hook (only the listing was swept)",
        );
        return;
    };
    {
        for loc in &cx.locations {
            match inv.resources(&loc.name).await {
                Ok(rs) => {
                    for r in rs.iter().filter(|r| {
                        r.instance.as_deref().is_some_and(|n| cx.owns_name(n))
                            && !leaked.contains_key(r.instance.as_deref().unwrap_or(""))
                    }) {
                        leak(
                            SWEEP_LOCATION,
                            "no backend resource of the rule left behind",
                            format!(
                                "{} {} of {} remains at {}",
                                r.kind,
                                r.name,
                                r.instance.as_deref().unwrap_or(""),
                                loc.name
                            ),
                        );
                    }
                }
                Err(e) => cx.note(format!("sweep: inventory of {} failed: {e}", loc.name)),
            }
        }
    }
}
