//! Checks of the Check rules (CHK-*).

use std::time::{Duration, Instant};

use crate::fixture::{AccessBreak, FaultKind, FaultSpec, Part, Reachability, Trigger};
use crate::suite::checks::steps::{made_since, trace_mark};
use crate::suite::cx::{CheckError, CheckResult, Cx};
use crate::{Checker, HealthReason, HostHealth};

fn checker(cx: &Cx) -> CheckResult<&dyn Checker> {
    cx.p.checker().ok_or_else(|| {
        CheckError::Harness("the fixture declared a Checker but the provider has none".into())
    })
}

async fn timed_check(cx: &Cx, limit: Duration) -> CheckResult<(Vec<HostHealth>, Duration)> {
    let (ctx, _) = cx.ctx_for(limit);
    let t = Instant::now();
    let out = checker(cx)?.check(&ctx).await;
    Ok((out, t.elapsed()))
}

fn summary(h: &[HostHealth]) -> String {
    h.iter()
        .map(|x| format!("{}={}", x.location, x.reason))
        .collect::<Vec<_>>()
        .join(", ")
}

/// CHK-ORDER
pub async fn chk_order(cx: &Cx) -> CheckResult {
    let (h, _) = timed_check(cx, cx.timing.op_timeout).await?;
    let got: Vec<_> = h.iter().map(|x| x.location.as_str()).collect();
    let want: Vec<_> = cx.locations.iter().map(|l| l.name.as_str()).collect();
    if got != want {
        cx.violate("Check", format!("{want:?}"), format!("{got:?}"));
    }
    cx.note(summary(&h));
    Ok(())
}

/// CHK-CONCURRENT
pub async fn chk_concurrent(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    let (l0, l1) = (cx.locations[0].name.clone(), cx.locations[1].name.clone());
    // A black-holed first location must not starve the second.
    faults
        .set_reachability(&l0, Reachability::BlackHole)
        .await?;
    let limit = cx.timing.quiet * 6;
    let (h, took) = timed_check(cx, limit).await?;
    faults.set_reachability(&l0, Reachability::Up).await?;
    let second = h.iter().find(|x| x.location == l1);
    if !second.is_some_and(|x| x.ready) {
        cx.violate(
            format!("{l0} black-holed"),
            format!("{l1} Ready while {l0} hangs"),
            summary(&h),
        );
    }
    if took > limit + cx.timing.slack {
        cx.violate(
            format!("{l0} black-holed"),
            format!("an answer within {limit:?}"),
            format!("{took:?}"),
        );
    }
    // Every location slow: the whole check takes about as long as one slow location.
    let delay = cx.timing.quiet / 2;
    let f = cx.inject(FaultSpec {
        location: Some(l0.clone()),
        trigger: Trigger::Always,
        kind: FaultKind::Delay(delay),
    })?;
    let (_, one) = timed_check(cx, cx.timing.op_timeout).await?;
    faults.clear();
    cx.inject(FaultSpec {
        location: None,
        trigger: Trigger::Always,
        kind: FaultKind::Delay(delay),
    })?;
    let (h, all) = timed_check(cx, cx.timing.op_timeout).await?;
    faults.clear();
    if !faults.fired(f) {
        return Err(CheckError::Harness(
            "the injected delay did not fire".into(),
        ));
    }
    let n = cx.locations.len() as f64;
    let bound = one.mul_f64(1.0 + (n - 1.0) / 2.0);
    if all > bound {
        cx.violate(
            "every location slow",
            format!("about the time of one slow location ({one:?}), under {bound:?}"),
            format!("{all:?}: locations checked one after another"),
        );
    }
    cx.note(format!(
        "one slow location {one:?}, all slow {all:?}; {}",
        summary(&h)
    ));
    Ok(())
}

/// CHK-DEADLINE
pub async fn chk_deadline(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    for l in &cx.locations {
        faults
            .set_reachability(&l.name, Reachability::BlackHole)
            .await?;
    }
    let limit = cx.timing.quiet * 3;
    let r = timed_check(cx, limit).await;
    for l in &cx.locations {
        faults.set_reachability(&l.name, Reachability::Up).await?;
    }
    let (h, took) = r?;
    if took > limit + cx.timing.slack {
        cx.violate(
            "every location black-holed",
            format!("an answer within {limit:?}"),
            format!("{took:?}"),
        );
    }
    if h.len() != cx.locations.len()
        || h.iter()
            .any(|x| x.ready || x.reason != HealthReason::Timeout)
    {
        cx.violate(
            "every location black-holed",
            "one entry per location, not ready, reason Timeout",
            summary(&h),
        );
    }
    cx.note(format!("{} in {took:?}", summary(&h)));
    Ok(())
}

/// The reason each cause a fixture can produce must give at the first location.
const CAUSES: [(AccessBreak, HealthReason); 3] = [
    (AccessBreak::Revoke, HealthReason::AuthFailed),
    (AccessBreak::ForeignHostKey, HealthReason::HostKeyRejected),
    (
        AccessBreak::RemoveCredentials,
        HealthReason::CredentialsUnavailable,
    ),
];

/// How the first location is broken for one CHK-REASONS case.
#[derive(Clone, Copy)]
enum Cause {
    None,
    Reach(Reachability),
    /// The location takes the connection and never answers a call on it.
    Silent,
    /// The location takes the connection and refuses every call for good, as an
    /// access-control denial does.
    Denied,
    /// The location takes the connection and answers every call with a transient
    /// error, as a busy backend does.
    Busy,
    Access(AccessBreak),
    /// A reason the provider declares, produced by the fixture's `cause`.
    Declared(&'static str),
}

/// CHK-REASONS
pub async fn chk_reasons(cx: &Cx) -> CheckResult {
    let loc = cx.loc0().name.clone();
    for (case, cause, want) in reason_cases(cx)? {
        let gives: Vec<&str> = want.iter().map(HealthReason::as_str).collect();
        let what = format!("{case} gives {}", gives.join(" or "));
        if !produce(cx, &loc, cause, &what).await? {
            continue;
        }
        // A location that answers no call is given the settle time, so that a
        // provider's own per-call timeout, not only the caller's deadline, decides.
        let limit = match cause {
            Cause::Silent => cx.timing.settle,
            _ => cx.timing.quiet * 4,
        };
        let r = timed_check(cx, limit).await;
        undo(cx, &loc, cause).await?;
        let (h, _) = r?;
        judge_case(cx, &loc, &case, &want, &h)?;
        if let Cause::Declared(reason) = cause {
            // A declared cause undone: the location is Ready again, no restart.
            let (h, _) = timed_check(cx, cx.timing.op_timeout).await?;
            if h.iter().any(|x| !x.ready) {
                cx.violate(
                    format!("after the cause of {reason} was undone"),
                    "every location Ready",
                    summary(&h),
                );
            }
        }
    }
    // Every break is undone: the provider works again without a restart.
    let (h, _) = timed_check(cx, cx.timing.op_timeout).await?;
    if h.iter().any(|x| !x.ready) {
        cx.violate(
            "after access was restored",
            "every location Ready",
            summary(&h),
        );
    }
    refused_at_each_call(cx, &loc).await?;
    container_gone(cx, &loc).await
}

/// Each of Check's calls at the first location refused for good in turn (the ones
/// before it answered): whichever call it is, the location is AuthFailed and the
/// others Ready. The calls are counted in a clean Check through the observation hook.
async fn refused_at_each_call(cx: &Cx, loc: &str) -> CheckResult {
    const WHAT: &str = "each of Check's calls refused for good gives AuthFailed";
    if cx.tb.faults().is_none() || cx.tb.observation().is_none() {
        cx.not_checked(WHAT, "the fixture has no faults or observation hook");
        return Ok(());
    }
    let mark = trace_mark(cx);
    timed_check(cx, cx.timing.op_timeout).await?;
    let calls = made_since(cx, mark, loc).unwrap_or(0);
    if calls == 0 {
        return Err(CheckError::Harness(format!(
            "the observation hook shows no call of a Check at {loc}: a Check that reads its \
             locations makes backend calls the trace must show"
        )));
    }
    let mut fired = 0;
    for k in 1..=calls {
        let case = format!("first location refusing Check's call {k} of {calls} for good");
        let id = cx.inject(FaultSpec {
            location: Some(loc.to_owned()),
            trigger: Trigger::Nth(k),
            kind: FaultKind::Permanent,
        })?;
        let r = timed_check(cx, cx.timing.quiet * 4).await;
        let faults = cx.faults()?;
        let hit = faults.fired(id);
        faults.clear();
        let (h, _) = r?;
        if !hit {
            cx.note(format!("{case}: the fault did not fire ({})", summary(&h)));
            continue;
        }
        fired += 1;
        judge_case(cx, loc, &case, &[HealthReason::AuthFailed], &h)?;
    }
    if fired == 0 {
        cx.not_checked(WHAT, "no fault at one of Check's calls fired");
    }
    Ok(())
}

/// The last case, as nothing brings the container back: the first location's
/// container removed out of band (the planting hook's [`Part::Container`]), a cause
/// the fixture produces whatever the provider declares. Whatever Check then says
/// about that location, its reason is a shared one or one the provider declares: a
/// reason of the provider's own that it does not declare shows here.
async fn container_gone(cx: &Cx, loc: &str) -> CheckResult {
    const CASE: &str = "first location's container removed";
    let Some(planting) = cx.tb.planting() else {
        cx.not_checked(CASE, "the fixture has no planting hook");
        return Ok(());
    };
    planting
        .remove_part(loc, &cx.name(), Part::Container)
        .await?;
    let (h, _) = timed_check(cx, cx.timing.quiet * 4).await?;
    judge_reasons(cx, CASE, &h)?;
    cx.note(format!("{CASE}: {}", summary(&h)));
    Ok(())
}

/// CHK-REASONS' cases, each with the reason it must give at the first location;
/// the causes the fixture has no hook for are recorded as not checked.
fn reason_cases(cx: &Cx) -> CheckResult<Vec<(String, Cause, Vec<HealthReason>)>> {
    let mut cases = vec![(
        "every location up".into(),
        Cause::None,
        vec![HealthReason::Ready],
    )];
    let faults = cx.tb.faults().is_some();
    if faults {
        for (case, cause, want) in [
            (
                "first location refusing",
                Cause::Reach(Reachability::Refused),
                vec![HealthReason::Unreachable],
            ),
            (
                "first location black-holed",
                Cause::Reach(Reachability::BlackHole),
                vec![HealthReason::Timeout],
            ),
            (
                "first location answering no call",
                Cause::Silent,
                vec![HealthReason::Timeout],
            ),
            (
                "first location denying every call",
                Cause::Denied,
                vec![HealthReason::AuthFailed],
            ),
            // A transient error says nothing of the credentials.
            (
                "first location busy at every call",
                Cause::Busy,
                vec![HealthReason::Unreachable, HealthReason::Timeout],
            ),
        ] {
            cases.push((case.into(), cause, want));
        }
    } else {
        for what in [
            "a refused location gives Unreachable",
            "a black-holed location gives Timeout",
            "a location that answers no call gives Timeout",
            "a location that denies every call gives AuthFailed",
            "a location busy at every call gives Unreachable or Timeout",
        ] {
            cx.not_checked(what, "the fixture has no faults hook");
        }
    }
    for (how, want) in CAUSES {
        cases.push((how.as_str().into(), Cause::Access(how), vec![want]));
    }
    for reason in checker(cx)?.extra_reasons() {
        if faults {
            let want = HealthReason::Other((*reason).to_owned());
            cases.push((
                format!("first location {reason}"),
                Cause::Declared(reason),
                vec![want],
            ));
        } else {
            cx.not_checked(
                format!("{reason} at a location"),
                "the fixture has no faults hook",
            );
        }
    }
    Ok(cases)
}

/// Breaks the first location as `cause` says; `false` (recorded as not checked)
/// when the fixture cannot.
async fn produce(cx: &Cx, loc: &str, cause: Cause, what: &str) -> CheckResult<bool> {
    match cause {
        Cause::None => {}
        Cause::Reach(r) => cx.faults()?.set_reachability(loc, r).await?,
        Cause::Silent | Cause::Denied | Cause::Busy => {
            cx.inject(FaultSpec {
                location: Some(loc.to_owned()),
                trigger: Trigger::Always,
                kind: match cause {
                    Cause::Silent => FaultKind::Hang,
                    Cause::Busy => FaultKind::Transient,
                    _ => FaultKind::Permanent,
                },
            })?;
        }
        Cause::Access(how) => {
            let Some(rot) = cx.tb.rotation() else {
                cx.not_checked(what, "the fixture has no rotation hook");
                return Ok(false);
            };
            if !rot.break_access(loc, how).await? {
                cx.not_checked(what, "the fixture cannot produce this cause");
                return Ok(false);
            }
        }
        Cause::Declared(reason) => {
            if !cx.faults()?.cause(loc, reason).await? {
                cx.not_checked(
                    format!("{reason} at a location"),
                    "the fixture cannot produce it",
                );
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Undoes what [`produce`] did.
async fn undo(cx: &Cx, loc: &str, cause: Cause) -> CheckResult {
    match cause {
        Cause::None => {}
        Cause::Reach(_) => cx.faults()?.set_reachability(loc, Reachability::Up).await?,
        Cause::Silent | Cause::Denied | Cause::Busy => cx.faults()?.clear(),
        Cause::Access(_) => {
            if let Some(rot) = cx.tb.rotation() {
                rot.restore_access(loc).await?;
            }
        }
        Cause::Declared(_) => cx.faults()?.undo_cause(loc).await?,
    }
    Ok(())
}

/// One case's Check: the vocabulary, one of `want` at the first location, the others
/// Ready.
fn judge_case(
    cx: &Cx,
    loc: &str,
    case: &str,
    want: &[HealthReason],
    h: &[HostHealth],
) -> CheckResult {
    judge_reasons(cx, case, h)?;
    let first = h.iter().find(|x| x.location == loc);
    if !first.is_some_and(|x| want.contains(&x.reason)) {
        let want: Vec<&str> = want.iter().map(HealthReason::as_str).collect();
        cx.violate(
            case,
            format!("{loc}: {}", want.join(" or ")),
            first.map_or_else(|| format!("no entry for {loc}"), |x| x.reason.to_string()),
        );
    }
    for x in h.iter().filter(|x| x.location != loc) {
        if !x.ready {
            cx.violate(case, format!("{} Ready", x.location), x.reason.to_string());
        }
    }
    cx.note(format!("{case}: {}", summary(h)));
    Ok(())
}

/// The vocabulary part of CHK-REASONS: every reason is shared or declared, and an
/// entry is ready exactly when its reason is Ready.
fn judge_reasons(cx: &Cx, case: &str, h: &[HostHealth]) -> CheckResult {
    let extra = checker(cx)?.extra_reasons();
    for x in h {
        let known =
            HealthReason::SHARED.contains(&x.reason.as_str()) || extra.contains(&x.reason.as_str());
        if !known {
            cx.violate(
                case,
                format!("a reason from {:?} or {extra:?}", HealthReason::SHARED),
                format!("{}: {}", x.location, x.reason),
            );
        }
        if x.ready != (x.reason == HealthReason::Ready) {
            cx.violate(
                case,
                "ready exactly when the reason is Ready",
                format!("{}: ready={} reason={}", x.location, x.ready, x.reason),
            );
        }
    }
    Ok(())
}

/// CHK-ISOLATED
pub async fn chk_isolated(cx: &Cx) -> CheckResult {
    let obs = cx.observation()?;
    let loc = cx.loc0().name.clone();
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    let ops_conn = |from: usize| {
        obs.calls()[from..]
            .iter()
            .filter(|c| c.location == loc)
            .map(|c| c.connection)
            .collect::<Vec<_>>()
    };
    let before = obs.calls().len();
    cx.get_ok(cx.p.as_ref(), &id, "Get before Check").await?;
    let conns = ops_conn(before);
    let Some(&op_conn) = conns.last() else {
        cx.cleanup(std::slice::from_ref(&id)).await;
        return Err(CheckError::Harness(
            "Get made no backend call at the first location".into(),
        ));
    };
    let before = obs.calls().len();
    let (h, _) = timed_check(cx, cx.timing.op_timeout).await?;
    let check_conns = ops_conn(before);
    if check_conns.is_empty() {
        cx.cleanup(std::slice::from_ref(&id)).await;
        return Err(CheckError::Harness(
            "Check made no backend call at the first location that the observation hook could see, so its connections could not be told from the operations'".into(),
        ));
    }
    if check_conns.contains(&op_conn) {
        cx.violate(
            "Check",
            format!("calls on connections other than the operations' ({op_conn})"),
            format!("{check_conns:?}"),
        );
    }
    let before = obs.calls().len();
    cx.get_ok(cx.p.as_ref(), &id, "Get after Check").await?;
    let after = ops_conn(before);
    if after.last() != Some(&op_conn) {
        cx.violate(
            "Get after Check",
            format!("the operations' connection {op_conn} still in use"),
            format!("{after:?}"),
        );
    }
    cx.note(format!(
        "operations on connection {op_conn}; Check on {check_conns:?}; {}",
        summary(&h)
    ));
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await
}
