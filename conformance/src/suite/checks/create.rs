//! Checks of the Create rules (CRE-*).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::fixture::{AccessBreak, FaultKind, FaultSpec, Part, Plant, Trigger, Verbosity};
use crate::profile::CreatedAt as CreatedAtMode;
use crate::suite::checks::steps::{
    Interruption, Steps, clean_runs, count_calls, held_at, interrupt, made_since, none_counted,
    plan, resumer, sample_steps, spread, trace_mark,
};
use crate::suite::cx::{CheckError, CheckResult, Cx, describe, describe_result, kind_of};
use crate::suite::props::{PropError, property};
use crate::suite::secrets;
use crate::{CloudInit, CreateRequest, ErrorKind, ProviderId, State};

/// How many backend calls a clean Create makes, measured on throwaway instances after
/// a first Create that warms the connection and the image cache.
pub(crate) async fn create_steps(cx: &Cx) -> CheckResult<Steps> {
    let mut runs = Vec::new();
    for _ in 0..=clean_runs(cx) {
        let req = cx.request();
        let (id, calls) = count_calls(
            cx,
            "Create",
            cx.create_ok(cx.p.as_ref(), &req, "measuring Create"),
        )
        .await?;
        cx.delete_ok(cx.p.as_ref(), &id, "measuring Create: cleanup")
            .await?;
        runs.push(calls);
    }
    Ok(Steps::of(cx, "Create", Some(&runs[0]), &runs[1..]))
}

/// Checks that the instance `req` names exists once: listed once, no doubled resource.
pub(crate) async fn exists_once(cx: &Cx, req: &CreateRequest, at: &str) -> CheckResult {
    let names = cx.listed_names(&req.tag, at).await?;
    let n = names.iter().filter(|n| **n == req.name).count();
    if n != 1 {
        cx.violate(
            at,
            format!("{} listed exactly once", req.name),
            format!("listed {n} times"),
        );
    }
    let made = super::honesty::made_inventoried(cx, &location_of(cx, req), &req.name).await?;
    if made.is_none() {
        cx.not_checked(
            "no backend resource made twice (inventory)",
            "the fixture has no inventory hook",
        );
    }
    if let Some(res) = made {
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &res {
            *kinds.entry(r.split(':').next().unwrap_or("")).or_default() += 1;
        }
        let doubled: Vec<_> = kinds
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, n)| format!("{n}×{k}"))
            .collect();
        if !doubled.is_empty() {
            cx.violate(
                at,
                "no backend resource made twice",
                format!("{} (all: {res:?})", doubled.join(", ")),
            );
        }
    }
    Ok(())
}

fn location_of(cx: &Cx, req: &CreateRequest) -> String {
    cx.locations
        .iter()
        .find(|l| l.placement == req.placement)
        .map(|l| l.name.clone())
        .unwrap_or_else(|| cx.loc0().name.clone())
}

/// CRE-IDEMPOTENT
pub async fn cre_idempotent(cx: &Cx) -> CheckResult {
    let p = cx.p.as_ref();
    let req = cx.request();
    let loc = cx.loc0().name.clone();
    let whole = super::honesty::location_inventory(cx, &loc).await?;
    let id = cx.create_ok(p, &req, "first Create").await?;
    super::honesty::added_attributed(cx, &loc, whole.as_deref(), &req.name).await?;
    let again = cx.create_ok(p, &req, "immediate repeat").await?;
    if again != id {
        cx.violate(
            "immediate repeat",
            format!("the same ID {id}"),
            again.to_string(),
        );
    }
    cx.wait_running(p, &id, "waiting for Running").await?;
    let before = cx
        .inventory_for(
            "backend resources unchanged by the repeats",
            &loc,
            &req.name,
        )
        .await?;
    let mut changed = req.clone();
    changed.cloud_init = secrets::mark(
        &cx.owner,
        &CloudInit::new("#cloud-config\n# a different payload\n"),
    );
    for (case, r) in [
        ("repeat once Running", &req),
        ("repeat with a different cloud-init", &changed),
    ] {
        let again = cx.create_ok(p, r, case).await?;
        if again != id {
            cx.violate(case, format!("the same ID {id}"), again.to_string());
        }
        let after = cx.inventory_of(&loc, &req.name).await?;
        if after != before {
            cx.violate(
                case,
                format!("backend resources unchanged: {before:?}"),
                format!("{after:?}"),
            );
        }
        cx.note(format!(
            "{case}: same ID, resources {}",
            if before.is_some() {
                "unchanged"
            } else {
                "not inventoried"
            }
        ));
    }
    exists_once(cx, &req, "after the repeats").await?;
    cx.delete_ok(p, &id, "cleanup").await
}

/// CRE-RESUME
pub async fn cre_resume(cx: &Cx) -> CheckResult {
    let loc = cx.loc0().name.clone();
    let steps = create_steps(cx).await?;
    let mut counted = 0;
    let mut waited = false;
    for (k, how) in plan(cx, &steps) {
        let case = format!("{} at step {k}", how.as_str());
        let req = cx.request();
        let cut = interrupt(cx, &loc, k, how, cx.p.create(&cx.ctx(), &req)).await?;
        // A fault that did not fire leaves a clean Create, which the next one
        // repeats: still judged, never counted as an interruption.
        let fired = cut.judge(cx, &case, "Create", k, &steps);
        counted += u32::from(fired);
        if let Some(made) = cut.returned_ok() {
            made_in_full(
                cx,
                &req,
                made,
                &format!("{case}: the interrupted Create returned Ok"),
            )
            .await?;
        }
        let p = resumer(cx, how)?;
        // What the interrupted attempt left: once its mark is written, the instance
        // is someone's, and resuming must keep who and when.
        let left = p.get(&cx.ctx(), &cx.tb.id_for(&loc, &req.name)).await;
        if !waited
            && how != Interruption::Death
            && let Ok(i) = &left
        {
            // A provider may record creation times in whole seconds: the first
            // instance left marked but not running is resumed in a later second,
            // so a resume that writes a new creation time shows. Only where the same
            // provider resumes (an error, a lost reply): after a death the wait would
            // only give what is left of the dead attempt time to race the new one.
            waited = later_second(i).await;
        }
        let id = cx
            .create_ok(p.as_ref(), &req, &format!("{case}: the next Create"))
            .await?;
        if id != cx.tb.id_for(&loc, &req.name) {
            cx.violate(
                &case,
                cx.tb.id_for(&loc, &req.name).to_string(),
                id.to_string(),
            );
        }
        let now = cx
            .wait_running(p.as_ref(), &id, &format!("{case}: boot"))
            .await?;
        if let Ok(before) = &left {
            let keep = |x: &crate::Instance| (x.uid.clone(), x.tag.clone(), x.created_at);
            if keep(before) != keep(&now) {
                cx.violate(
                    format!("{case}: the resumed instance"),
                    format!(
                        "the mark the interrupted attempt wrote kept (uid, tag, created_at): {:?}",
                        keep(before)
                    ),
                    format!("{:?}", keep(&now)),
                );
            }
        }
        exists_once(cx, &req, &case).await?;
        cx.delete_ok(p.as_ref(), &id, "cleanup").await?;
        if fired {
            cx.note(format!(
                "{case}: interrupted Create {}; Get before resuming {}; resumed",
                cut.outcome(),
                kind_of(&left)
            ));
        }
    }
    if counted == 0 {
        return Err(none_counted("Create"));
    }
    Ok(())
}

/// Waits, when `left` is marked and not running, until the wall clock is in a later
/// whole second than its creation time; whether it waited.
async fn later_second(left: &crate::Instance) -> bool {
    let Some(at) = left.created_at else {
        return false;
    };
    if left.state == State::Running {
        return false;
    }
    let whole = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    while whole(SystemTime::now()) <= whole(at) + 1 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

/// What an interrupted Create that returned Ok must have done: made exactly one
/// instance under the ID it returned, which Get finds with the request's uid and tag
/// and the listing and the inventory hold once.
async fn made_in_full(cx: &Cx, req: &CreateRequest, made: &ProviderId, at: &str) -> CheckResult {
    let want = cx.tb.id_for(&location_of(cx, req), &req.name);
    if *made != want {
        cx.violate(at, format!("the ID {want}"), made.to_string());
    }
    match cx.p.get(&cx.ctx(), made).await {
        Ok(i) if i.uid == req.uid && i.tag == req.tag => {}
        Ok(i) => cx.violate(
            at,
            format!(
                "Get to find the instance with uid {:?} and tag {:?}",
                req.uid, req.tag
            ),
            format!("uid {:?}, tag {:?}", i.uid, i.tag),
        ),
        Err(e) => cx.violate(at, "Get to find the instance Create returned", describe(&e)),
    }
    exists_once(cx, req, at).await
}

/// CRE-RETURN (also verifies the create-return and provisioning-state declarations)
pub async fn cre_return(cx: &Cx) -> CheckResult {
    let sc = cx.state_control()?;
    let blocking = cx.profile.create_return() == crate::profile::CreateReturn::Blocking;
    sc.hold_boot(true).await?;
    let req = cx.request();
    let (p, ctx, r) = (cx.p.clone(), cx.ctx(), req.clone());
    let mut task = tokio::spawn(async move { p.create(&ctx, &r).await });
    let wait = if blocking {
        cx.timing.quiet
    } else {
        cx.timing.settle
    };
    let early = tokio::time::timeout(wait, &mut task).await;
    let result = match early {
        Ok(joined) => {
            let res = cx.joined(joined, "create task")?;
            if blocking {
                cx.violate(
                    "Create with boot held",
                    "Create to block until Running (create-return=blocking)",
                    format!("returned while boot was held: {}", describe_result(&res)),
                );
            } else if let Ok(id) = &res
                && cx.profile.provisioning_state() == crate::profile::ProvisioningState::GetReports
            {
                let got = cx.p.get(&cx.ctx(), id).await;
                match &got {
                    Ok(i) if i.state == State::Provisioning => {
                        cx.note("early: Get reports Provisioning while boot is held")
                    }
                    _ => cx.violate(
                        "Get while boot is held",
                        "Provisioning (provisioning-state=get-reports)",
                        describe_result(&got),
                    ),
                }
            }
            sc.hold_boot(false).await?;
            res
        }
        Err(_) => {
            if !blocking {
                cx.violate(
                    "Create with boot held",
                    "Create to return while the instance boots (create-return=early)",
                    format!("still blocked after {wait:?}: the provider behaves as create-return=blocking"),
                );
            } else {
                cx.note(format!(
                    "blocking: Create still waiting after {wait:?} with boot held"
                ));
            }
            sc.hold_boot(false).await?;
            cx.joined(task.await, "create task")?
        }
    };
    let id = match result {
        Ok(id) => id,
        Err(e) => {
            return cx.fail(
                "Create",
                "Create to succeed once boot is released",
                describe(&e),
            );
        }
    };
    if blocking {
        let got = cx
            .get_ok(cx.p.as_ref(), &id, "Get right after a blocking Create")
            .await?;
        if got.state != State::Running {
            cx.violate(
                "Get right after a blocking Create",
                "Running",
                format!("{:?}", got.state),
            );
        }
    } else {
        cx.wait_running(cx.p.as_ref(), &id, "early: boot released")
            .await?;
    }
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await
}

/// CRE-PLACEMENT
pub async fn cre_placement(cx: &Cx) -> CheckResult {
    let mut req = cx.request();
    req.placement = cx.tb.unknown_placement();
    let r = cx.p.create(&cx.ctx(), &req).await;
    if !matches!(&r, Err(e) if e.is_permanent()) {
        cx.violate(
            format!("placement {:?}", req.placement),
            "Permanent",
            describe_result(&r),
        );
    }
    nothing_made(cx, &req, "after the refused Create").await
}

/// Checks that nothing named `req.name` exists at any location.
pub(crate) async fn nothing_made(cx: &Cx, req: &CreateRequest, at: &str) -> CheckResult {
    for loc in &cx.locations {
        if let Some(res) = cx
            .inventory_for("nothing made (inventory)", &loc.name, &req.name)
            .await?
            && !res.is_empty()
        {
            cx.violate(
                at,
                format!("nothing of {} at {}", req.name, loc.name),
                format!("{res:?}"),
            );
        }
    }
    if crate::validate_tag(&req.tag).is_ok() {
        let names = cx.listed_names(&req.tag, at).await?;
        if names.contains(&req.name) {
            cx.violate(at, format!("{} not listed", req.name), "listed");
        }
    }
    Ok(())
}

/// CRE-ADOPT-GUARD
pub async fn cre_adopt_guard(cx: &Cx) -> CheckResult {
    let planting = cx.planting()?;
    let loc = cx.loc0().clone();
    super::honesty::fingerprint_bites(cx, &loc.name).await?;
    let tag = cx.tag();
    let cases = [
        ("unmarked resource", Plant::Unmarked, false),
        (
            "foreign uid",
            Plant::ForeignUid {
                tag: tag.clone(),
                uid: "someone-else-0001".into(),
            },
            false,
        ),
        ("empty uid", Plant::EmptyUid { tag: tag.clone() }, true),
    ];
    for (case, plant, same_instance) in cases {
        let name = cx.name();
        planting.plant(&loc.name, &name, plant).await?;
        let before = planting.inspect(&loc.name, &name).await?;
        let req = cx.tb.request(&name, &tag, &loc);
        let r = cx.p.create(&cx.ctx(), &req).await;
        let after = planting.inspect(&loc.name, &name).await?;
        planting.remove(&loc.name, &name).await?;
        if same_instance {
            let want = cx.tb.id_for(&loc.name, &name);
            if !matches!(&r, Ok(id) if *id == want) {
                cx.violate(
                    case,
                    format!("Ok({want}): the same instance"),
                    describe_result(&r),
                );
            }
        } else if !matches!(&r, Err(e) if e.is_permanent()) {
            cx.violate(case, "Permanent (adoption guard)", describe_result(&r));
        }
        if before != after {
            cx.violate(
                case,
                format!("the resource untouched: {before:?}"),
                format!("{after:?}"),
            );
        }
        cx.note(format!("{case}: Create → {}", kind_of(&r)));
    }
    Ok(())
}

/// CRE-QUOTA
pub async fn cre_quota(cx: &Cx) -> CheckResult {
    let cap = cx.capacity()?;
    let loc = cx.loc0().name.clone();
    // Two at once first, as the location's first Creates: a provider that shares
    // first-use work (an image download) must hand its refusal to every caller.
    cap.set_free(&loc, Some(0)).await?;
    let reqs = [cx.request(), cx.request()];
    let results = creates_at_once(cx, &reqs).await?;
    // The request whose refusal named the largest need, to be repeated.
    let named = (reqs.iter().zip(&results))
        .filter_map(|(req, r)| Some((needed_of(r)?, req.clone())))
        .max_by_key(|(need, _)| *need);
    for (n, (req, r)) in reqs.iter().zip(results).enumerate() {
        let case = format!("no free capacity, Create {} of two at once", n + 1);
        short_capacity(cx, &case, req, r, 0).await?;
    }
    for (case, free) in [("no free capacity", 0u64), ("1 MiB free", 1 << 20)] {
        cap.set_free(&loc, Some(free)).await?;
        let req = cx.request();
        let r = cx.p.create(&cx.ctx(), &req).await;
        short_capacity(cx, case, &req, r, free).await?;
    }
    if cx.profile.quota() == crate::profile::QuotaMode::Detected {
        exact_fit(cx, "exactly the need named free", named).await?;
        // Once a Create has succeeded, what later ones share with it (an image, say)
        // is in place: a refusal names a smaller need, which is again enough.
        let case = "no free capacity after a Create succeeded";
        cap.set_free(&loc, Some(0)).await?;
        let req = cx.request();
        let r = cx.p.create(&cx.ctx(), &req).await;
        let named = needed_of(&r).map(|need| (need, req.clone()));
        short_capacity(cx, case, &req, r, 0).await?;
        let case = "exactly the need named free after a Create succeeded";
        exact_fit(cx, case, named).await?;
    }
    cap.set_free(&loc, None).await?;
    let req = cx.request();
    let id = cx
        .create_ok(cx.p.as_ref(), &req, "capacity restored")
        .await?;
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await
}

/// The need a QuotaExceeded names.
fn needed_of(r: &crate::Result<ProviderId>) -> Option<u64> {
    match r.as_ref().err()?.kind() {
        ErrorKind::QuotaExceeded(q) => Some(q.needed),
        _ => None,
    }
}

/// With quota=detected, the need a refused Create named is what it needs: with one
/// byte less free the same Create is refused again, before anything is made; with
/// exactly that much free it succeeds. `named` is the need to give, with the request
/// that named it (`None` when no refusal named one).
async fn exact_fit(cx: &Cx, case: &str, named: Option<(u64, CreateRequest)>) -> CheckResult {
    let Some((need, req)) = named else {
        cx.not_checked(case, "no Create at no free capacity named a need");
        return Ok(());
    };
    let loc = cx.loc0().name.clone();
    let short = need.saturating_sub(1);
    cx.capacity()?.set_free(&loc, Some(short)).await?;
    let r = cx.p.create(&cx.ctx(), &req).await;
    let at = format!("{case}, less one byte");
    short_capacity(cx, &at, &req, r, short).await?;
    cx.capacity()?.set_free(&loc, Some(need)).await?;
    match cx.p.create(&cx.ctx(), &req).await {
        Ok(id) => {
            cx.note(format!("{case}: {need} bytes free, Create succeeded"));
            cx.cleanup(&[id]).await;
        }
        Err(e) => cx.violate(
            case,
            format!("with {need} bytes free, the need QuotaExceeded named, Create to succeed"),
            describe(&e),
        ),
    }
    Ok(())
}

/// Creates of `reqs` started at once, each on a task of its own; their results in
/// the order of `reqs`.
async fn creates_at_once(
    cx: &Cx,
    reqs: &[CreateRequest],
) -> CheckResult<Vec<crate::Result<ProviderId>>> {
    let mut tasks = Vec::new();
    for r in reqs {
        let (p, ctx, r) = (cx.p.clone(), cx.ctx(), r.clone());
        tasks.push(tokio::spawn(async move { p.create(&ctx, &r).await }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(cx.joined(t.await, "create task")?);
    }
    Ok(results)
}

/// Judges a Create `r` of `req` made with `free` bytes free at the first location:
/// QuotaExceeded with its figures, and (quota=detected) nothing made, or
/// (quota=backend-reported) a Delete that takes what was made.
async fn short_capacity(
    cx: &Cx,
    case: &str,
    req: &CreateRequest,
    r: crate::Result<ProviderId>,
    free: u64,
) -> CheckResult {
    let cap = cx.capacity()?;
    let loc = cx.loc0().name.clone();
    // quota=detected promises a precheck; quota=backend-reported only that the backend's
    // refusal surfaces as QuotaExceeded, after which a Delete takes what was made.
    let precheck = cx.profile.quota() == crate::profile::QuotaMode::Detected;
    match &r {
        Err(e) => match e.kind() {
            ErrorKind::QuotaExceeded(q) => {
                if q.what.trim().is_empty() || q.needed <= q.available {
                    cx.violate(
                        case,
                        "QuotaExceeded naming what is short, with needed > available",
                        format!("{q:?}"),
                    );
                }
                cx.note(format!(
                    "{case}: QuotaExceeded {{ what: {:?}, available: {}, needed: {} }}",
                    q.what, q.available, q.needed
                ));
            }
            _ => cx.violate(
                case,
                format!("QuotaExceeded (quota={})", cx.profile.quota()),
                describe(e),
            ),
        },
        Ok(_) => cx.violate(
            case,
            format!("QuotaExceeded (quota={})", cx.profile.quota()),
            describe_result(&r),
        ),
    }
    if precheck {
        nothing_made(cx, req, case).await?;
        if let Ok(id) = r {
            cx.cleanup(&[id]).await;
        }
    } else {
        let id = cx.tb.id_for(&loc, &req.name);
        cap.set_free(&loc, None).await?;
        cx.delete_ok(
            cx.p.as_ref(),
            &id,
            &format!("{case}: Delete of what was made"),
        )
        .await?;
        super::get::gone_after_delete(cx, &id, case).await?;
        super::delete::nothing_left(cx, &req.name, case).await?;
        cap.set_free(&loc, Some(free)).await?;
    }
    Ok(())
}

/// CRE-BACKEND-NOTFOUND (also: Permanent answers and failed authentication inside
/// Create surface as Permanent)
pub async fn cre_backend_notfound(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    let loc = cx.loc0().name.clone();
    let steps = create_steps(cx).await?;
    let every = sample_steps(cx, &steps).len() as u64 == steps.most;
    let mut fired = 0;
    for k in sample_steps(cx, &steps) {
        let req = cx.request();
        let mark = trace_mark(cx);
        let f = cx.inject(FaultSpec {
            location: Some(loc.clone()),
            trigger: Trigger::Nth(k),
            kind: FaultKind::NotFound,
        })?;
        let r = cx.p.create(&cx.ctx(), &req).await;
        let hit = faults.fired(f);
        faults.clear();
        fired += u32::from(hit);
        if !hit {
            let made = made_since(cx, mark, &loc);
            let case = format!("not-found at step {k}");
            steps.unfired(cx, &case, "Create", k, made, kind_of(&r));
        }
        if matches!(&r, Err(e) if e.is_not_found()) {
            cx.violate(
                format!("not-found at step {k}"),
                "Transient (or recovery), never NotFound",
                describe_result(&r),
            );
        }
        if hit {
            cx.note(format!("not-found at step {k}: Create → {}", kind_of(&r)));
        }
        let id = cx
            .create_ok(
                cx.p.as_ref(),
                &req,
                &format!("retry after not-found at step {k}"),
            )
            .await?;
        cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await?;
    }
    if fired == 0 {
        return Err(CheckError::Harness("no injected not-found fired".into()));
    }
    vanished_parts(cx, &steps, every).await?;
    // The procedures a clean Create calls, each answered once with a Permanent error.
    let procs = &steps.procedures;
    // Each case costs a boot on a real backend, where the steps above were sampled
    // already: there, half as many procedures.
    let limit = if every {
        u64::MAX
    } else {
        u64::from(cx.steps / 2)
    };
    let picked: Vec<String> = spread(procs.len() as u64, limit)
        .into_iter()
        .map(|i| procs[(i - 1) as usize].clone())
        .collect();
    for proc in picked {
        let case = format!("Permanent answer to {proc}");
        let req = cx.request();
        let _judged = permanent_answer(cx, &case, &loc, &proc, &req).await?;
        let id = cx
            .create_ok(cx.p.as_ref(), &req, &format!("{case}: retry"))
            .await?;
        cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await?;
    }
    first_use_refused(cx, &steps).await?;
    auth_failure(cx, &loc).await
}

/// A Create of `req` whose first call of `proc` at `location` is answered with a
/// Permanent error: it must fail Permanent or recover. Whether the fault fired (a
/// fault that did not is noted, not judged), and the Create's result.
async fn permanent_answer(
    cx: &Cx,
    case: &str,
    location: &str,
    proc: &str,
    req: &CreateRequest,
) -> CheckResult<(bool, crate::Result<ProviderId>)> {
    let faults = cx.faults()?;
    let f = cx.inject(FaultSpec {
        location: Some(location.to_owned()),
        trigger: Trigger::Named(proc.to_owned()),
        kind: FaultKind::Permanent,
    })?;
    let r = cx.p.create(&cx.ctx(), req).await;
    let hit = faults.fired(f);
    faults.clear();
    if !hit {
        cx.note(format!(
            "{case}: not counted, the fault did not fire (Create → {})",
            kind_of(&r)
        ));
    } else {
        if r.is_err() && !matches!(&r, Err(e) if e.is_permanent()) {
            cx.violate(case, "Permanent (or recovery)", describe_result(&r));
        }
        cx.note(format!("{case}: Create → {}", kind_of(&r)));
    }
    Ok((hit, r))
}

/// The procedures only a location's first Create calls (a dial, an image fetch the
/// later Creates find cached), each answered once with a Permanent error during the
/// first Create at a location no Create has used yet: that Create fails Permanent or
/// recovers. A refused first Create leaves the location unused for the next case.
async fn first_use_refused(cx: &Cx, steps: &Steps) -> CheckResult {
    const WHAT: &str = "a Permanent answer to a call only a location's first Create makes";
    if steps.cold_only.is_empty() {
        cx.note(format!(
            "{WHAT}: the first Create called no procedure the later ones did not"
        ));
        return Ok(());
    }
    if cx.later_turn() {
        cx.note(format!(
            "{WHAT}: checked in the first turn, while the other locations were unused"
        ));
        return Ok(());
    }
    let Some(at) = cx.locations.iter().find(|l| l.name != cx.loc0().name) else {
        cx.not_checked(
            WHAT,
            "one location only: no location is left that no Create has used",
        );
        return Ok(());
    };
    let mut fired = 0u32;
    for proc in &steps.cold_only {
        let case = format!(
            "Permanent answer to {proc} in the first Create at {}",
            at.name
        );
        let req = cx.tb.request(&cx.name(), &cx.tag(), at);
        let (hit, r) = permanent_answer(cx, &case, &at.name, proc, &req).await?;
        fired += u32::from(hit);
        if let Ok(id) = &r {
            cx.delete_ok(cx.p.as_ref(), id, &format!("{case}: cleanup"))
                .await?;
        }
    }
    if fired == 0 {
        cx.not_checked(WHAT, "no fault at a first Create's own procedure fired");
    }
    Ok(())
}

/// A part of the instance removed out of band while Create is held at step k: the
/// Create that goes on and finds it gone fails with Transient or recovers, never
/// NotFound.
async fn vanished_parts(cx: &Cx, steps: &Steps, every: bool) -> CheckResult {
    const WHAT: &str = "a part removed out of band between Create's steps";
    let Some(planting) = cx.tb.planting() else {
        cx.not_checked(WHAT, "the fixture has no planting hook");
        return Ok(());
    };
    let loc = cx.loc0().name.clone();
    let parts = [Part::Secondary, Part::Primary];
    let mut plan = Vec::new();
    // As for the Permanent answers: half as many steps where each costs a boot.
    let limit = if every {
        u64::MAX
    } else {
        u64::from(cx.steps / 2)
    };
    for (n, k) in spread(steps.most, limit).into_iter().enumerate() {
        if every {
            plan.extend(parts.map(|p| (k, p)));
        } else {
            plan.push((k, parts[n % parts.len()]));
        }
    }
    let mut removed = 0;
    for (k, part) in plan {
        let case = format!("{part:?} removed at step {k}");
        let req = cx.request();
        let mark = trace_mark(cx);
        let ctx = cx.ctx();
        let remove = || async {
            planting.remove_part(&loc, &req.name, part).await?;
            Ok(())
        };
        let (r, ran) = held_at(
            cx,
            (&loc, k, FaultKind::Hang),
            cx.p.create(&ctx, &req),
            remove,
        )
        .await?;
        removed += u32::from(ran);
        if matches!(&r, Err(e) if e.is_not_found()) {
            cx.violate(
                &case,
                "Transient (or recovery), never NotFound",
                describe_result(&r),
            );
        }
        if !ran {
            let made = made_since(cx, mark, &loc);
            steps.unfired(cx, &case, "Create", k, made, kind_of(&r));
        } else {
            cx.note(format!("{case}: Create → {}", kind_of(&r)));
        }
        // What is left is half an instance: removed out of band, so that this rule
        // judges Create alone (DEL-PARTIAL judges Delete with parts missing).
        let _ = cx.p.delete(&cx.ctx(), &cx.tb.id_for(&loc, &req.name)).await;
        planting.remove(&loc, &req.name).await?;
    }
    if removed == 0 {
        cx.not_checked(
            WHAT,
            "no held step fired, so nothing was removed mid-Create",
        );
    }
    Ok(())
}

/// Access revoked with nothing to replace it: a fresh provider's Create fails with
/// Permanent (waiting does not bring credentials back).
async fn auth_failure(cx: &Cx, loc: &str) -> CheckResult {
    const WHAT: &str = "a failed authentication inside Create is Permanent";
    let Some(rot) = cx.tb.rotation() else {
        cx.not_checked(WHAT, "the fixture has no rotation hook");
        return Ok(());
    };
    if !rot.break_access(loc, AccessBreak::Revoke).await? {
        cx.not_checked(
            WHAT,
            "the fixture cannot revoke access without replacing it",
        );
        return Ok(());
    }
    let req = cx.request();
    let r = match cx.tb.restart() {
        Ok(p) => Ok(p.create(&cx.ctx(), &req).await),
        Err(e) => Err(e),
    };
    rot.restore_access(loc).await?;
    let r = r?;
    if !matches!(&r, Err(e) if e.is_permanent()) {
        cx.violate(
            "Create with revoked credentials",
            "Permanent",
            describe_result(&r),
        );
    }
    cx.note(format!("Create with revoked credentials → {}", kind_of(&r)));
    if r.is_ok() {
        let id = cx.tb.id_for(loc, &req.name);
        cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await?;
    }
    Ok(())
}

/// CRE-SECRET
pub async fn cre_secret(cx: &Cx) -> CheckResult {
    let Some(cap) = cx.capture.clone() else {
        return Err(CheckError::Harness(
            "another tracing subscriber is installed; logs cannot be captured".into(),
        ));
    };
    if let Some(obs) = cx.tb.observation() {
        obs.set_verbosity(Verbosity::V2);
    }
    let loc = cx.loc0().clone();
    let result = property(cx, "cloud-init never leaks", "[a-z0-9]{12,20}", |s| {
        let cap = cap.clone();
        let loc = loc.clone();
        async move {
            // A token of its own in the middle of the payload, where a provider
            // that leaks a part of it shows one: unique to this case, so that runs
            // in one process (a kill matrix) sharing seeds and inputs never count
            // one run's leak against another.
            let sentinel = secrets::new_token(&cx.owner);
            let from = cap.checkpoint();
            let text = format!(
                "#cloud-config\nchpasswd:\n  list: |\n    root:{sentinel}-{s}\nwrite_files:\n  - path: /etc/token\n    content: {sentinel}-{s}\n"
            );
            secrets::register_whole(&sentinel, &text);
            let payload = CloudInit::new(text);
            let mut req = cx.tb.request(&cx.name(), &cx.tag(), &loc);
            req.cloud_init = payload.clone();
            let mut texts = vec![
                format!("{req:?}"),
                serde_json::to_string(&req).unwrap_or_default(),
            ];
            let (ctx, mark) = cx.ctx_for(cx.timing.op_timeout);
            let created = cx.p.create(&ctx, &req).await;
            let mut errors = Vec::new();
            if let Ok(id) = &created {
                errors.push(cx.p.get(&cx.ctx(), id).await.err());
                errors.push(cx.p.list_by_tag(&cx.ctx(), &req.tag).await.err());
                errors.push(cx.p.delete(&cx.ctx(), id).await.err());
            }
            errors.push(created.err());
            let mut bad = req.clone();
            bad.placement = cx.tb.unknown_placement();
            errors.push(cx.p.create(&cx.ctx(), &bad).await.err());
            let mut bad = req.clone();
            bad.name = format!("Bad/{s}");
            errors.push(cx.p.create(&cx.ctx(), &bad).await.err());
            for e in errors.into_iter().flatten() {
                texts.push(e.chain());
                texts.push(format!("{e:?}"));
            }
            // The evidence names where the payload appeared with the payload itself
            // blanked out: a report must not carry what it caught leaking.
            let blank = |t: &str| secrets::redact(t).into_owned();
            if let Some(t) = texts.iter().find(|t| t.contains(&sentinel)) {
                return Err(PropError::Fail(format!(
                    "the cloud-init payload appeared in an error or request rendering: {}",
                    blank(t)
                )));
            }
            if let Some(where_) = cap.contains_since(from, &sentinel) {
                return Err(PropError::Fail(format!(
                    "the cloud-init payload appeared in captured telemetry: {}",
                    blank(&where_)
                )));
            }
            let own = cap
                .find_mark(&mark)
                .map(|seq| cap.events_under(seq).len())
                .unwrap_or(0);
            // A provider that declares logging=none writes no line to leak through;
            // spans and errors were scanned above all the same. One that declares
            // tiered logging owes lines at V2, where the hook put it.
            if own == 0 && cx.profile.logging() == crate::profile::Logging::Tiered {
                if cx.tb.observation().is_some() {
                    return Err(PropError::Fail(
                        "declares logging=tiered, yet Create wrote no log line at V2, so a leak could not be looked for".into(),
                    ));
                }
                return Err(PropError::Harness(
                    "the capture saw none of Create's own log lines, so a leak could not be seen; raise the verbosity through the observation hook".into(),
                ));
            }
            Ok(())
        }
    });
    let refusals = secret_refusals(cx).await;
    if let Some(obs) = cx.tb.observation() {
        obs.set_verbosity(Verbosity::V1);
    }
    result?;
    refusals
}

/// CRE-SECRET's probes of Create's refusals, which carry the request on paths the
/// property does not reach: no room (with the capacity hook, unless quota=none) and
/// another owner's instance of that name (with the planting hook). What they leak is
/// found where every rule's leaks are: the runner scans what the provider returned
/// and logged for this rule's payloads.
async fn secret_refusals(cx: &Cx) -> CheckResult {
    let loc = cx.loc0().clone();
    const ROOM: &str = "the payload in Create's refusal for want of room";
    match (cx.tb.capacity(), cx.profile.quota()) {
        (_, crate::profile::QuotaMode::None) => {}
        (Some(cap), _) => {
            cap.set_free(&loc.name, Some(0)).await?;
            let req = cx.request();
            let r = cx.p.create(&cx.ctx(), &req).await;
            cap.set_free(&loc.name, None).await?;
            cx.note(format!("no room: Create → {}", kind_of(&r)));
            let id = cx.tb.id_for(&loc.name, &req.name);
            cx.cleanup(&[id]).await;
        }
        (None, _) => cx.not_checked(ROOM, "the fixture has no capacity hook"),
    }
    let Some(planting) = cx.tb.planting() else {
        cx.not_checked(
            "the payload in Create's refusal of another owner's instance",
            "the fixture has no planting hook",
        );
        return Ok(());
    };
    let name = cx.name();
    let tag = cx.tag();
    let foreign = Plant::ForeignUid {
        tag: tag.clone(),
        uid: "someone-else-0001".into(),
    };
    planting.plant(&loc.name, &name, foreign).await?;
    let req = cx.tb.request(&name, &tag, &loc);
    let r = cx.p.create(&cx.ctx(), &req).await;
    planting.remove(&loc.name, &name).await?;
    cx.note(format!(
        "another owner's instance: Create → {}",
        kind_of(&r)
    ));
    Ok(())
}

/// CRE-INVALID
pub async fn cre_invalid(cx: &Cx) -> CheckResult {
    let long_name = format!("a{}", "b".repeat(63));
    let names = [
        "", "Upper", "1digit", "-dash", &long_name, "a<b", "a>b", "a&b", "a\"b", "a'b", "a/b",
        "../etc", "a b", "a\nb", "ünï",
    ];
    let long_uid = "u".repeat(129);
    let uids = ["", &long_uid, "<uid/>", "a/b", "a\"b", "a&b"];
    let long_tag = format!("t{}", "x".repeat(63));
    let tags = ["", &long_tag, "T<x>", "a/b", "a b"];
    let mut cases: Vec<(String, CreateRequest)> = Vec::new();
    for n in names {
        let mut r = cx.request();
        r.name = n.to_owned();
        cases.push((format!("name {n:?}"), r));
    }
    for u in uids {
        let mut r = cx.request();
        r.uid = u.to_owned();
        cases.push((format!("uid {u:?}"), r));
    }
    for t in tags {
        let mut r = cx.request();
        r.tag = t.to_owned();
        cases.push((format!("tag {t:?}"), r));
    }
    for (case, req) in &cases {
        let r = cx.p.create(&cx.ctx(), req).await;
        if !matches!(&r, Err(e) if e.is_permanent()) {
            cx.violate(case, "Permanent", describe_result(&r));
            if let Ok(id) = r {
                cx.cleanup(&[id]).await;
            }
        }
        if crate::validate_name(&req.name).is_ok() {
            nothing_made(cx, req, case).await?;
        }
    }
    cx.note(format!("{} invalid requests refused", cases.len()));
    Ok(())
}

/// CRE-MARK
pub async fn cre_mark(cx: &Cx) -> CheckResult {
    let req = cx.request();
    let t0 = SystemTime::now() - Duration::from_secs(2);
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    let t1 = SystemTime::now() + Duration::from_secs(2);
    let inst = cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    for (field, want, got) in [
        ("id", id.to_string(), inst.id.to_string()),
        ("name", req.name.clone(), inst.name.clone()),
        ("uid", req.uid.clone(), inst.uid.clone()),
        ("tag", req.tag.clone(), inst.tag.clone()),
    ] {
        if want != got {
            cx.violate(format!("Get: {field}"), want, got);
        }
    }
    match (cx.profile.created_at(), inst.created_at) {
        (CreatedAtMode::WrittenAtCreate, Some(t)) if t < t0 || t > t1 => {
            cx.violate(
                "Get: created_at",
                "a time during the Create call (written-at-create)",
                format!("{t:?}"),
            );
        }
        (CreatedAtMode::BackendReported, Some(t)) if t > t1 => {
            cx.violate(
                "Get: created_at",
                "a time no later than the Create call",
                format!("{t:?}"),
            );
        }
        (CreatedAtMode::None, Some(t)) => {
            cx.violate(
                "Get: created_at",
                "no creation time (created-at=none)",
                format!("{t:?}"),
            );
        }
        (CreatedAtMode::WrittenAtCreate | CreatedAtMode::BackendReported, None) => {
            cx.violate(
                "Get: created_at",
                format!("a creation time (created-at={})", cx.profile.created_at()),
                "none",
            );
        }
        _ => {}
    }
    let again = cx.get_ok(cx.p.as_ref(), &id, "second Get").await?;
    if again.created_at != inst.created_at {
        cx.violate(
            "second Get: created_at",
            format!("{:?}", inst.created_at),
            format!("{:?}", again.created_at),
        );
    }
    cx.note(format!(
        "instance: uid {}, tag {}, created_at {:?}",
        inst.uid, inst.tag, inst.created_at
    ));
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await
}

/// CRE-CONCURRENT
pub async fn cre_concurrent(cx: &Cx) -> CheckResult {
    different_requests_first(cx).await?;
    let req = cx.request();
    let mut ids = Vec::new();
    for r in creates_at_once(cx, &vec![req.clone(); 4]).await? {
        match r {
            Ok(id) => ids.push(id),
            Err(e) => cx.violate("concurrent Create", "Ok with the common ID", describe(&e)),
        }
    }
    ids.sort();
    ids.dedup();
    if ids.len() > 1 {
        cx.violate("concurrent Create", "one ID", format!("{ids:?}"));
    }
    exists_once(cx, &req, "after concurrent Creates").await?;
    let want = cx.tb.id_for(&cx.loc0().name, &req.name);
    cx.delete_ok(cx.p.as_ref(), &want, "cleanup").await
}

/// Two different requests at once, as the location's first Creates: a provider that
/// shares first-use work (a connection, an image download) makes every caller wait
/// for it, and makes what they share once.
async fn different_requests_first(cx: &Cx) -> CheckResult {
    const CASE: &str = "two different requests at once, the location's first Creates";
    let loc = cx.loc0().name.clone();
    let shared = |res: Option<Vec<crate::fixture::Resource>>| {
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for r in res.unwrap_or_default() {
            if r.instance.is_none() {
                *kinds.entry(r.kind).or_default() += 1;
            }
        }
        kinds
    };
    let inventory = cx.tb.inventory();
    let before = match inventory {
        Some(inv) => Some(shared(Some(inv.resources(&loc).await?))),
        None => None,
    };
    let reqs = [cx.request(), cx.request()];
    let mut ids = Vec::new();
    for (req, r) in reqs.iter().zip(creates_at_once(cx, &reqs).await?) {
        match r {
            Ok(id) => {
                let want = cx.tb.id_for(&loc, &req.name);
                if id != want {
                    cx.violate(CASE, format!("the ID {want}"), id.to_string());
                }
                ids.push(id);
            }
            Err(e) => cx.violate(CASE, "every Create to succeed", describe(&e)),
        }
    }
    for req in &reqs {
        exists_once(cx, req, CASE).await?;
    }
    match (inventory, before) {
        (Some(inv), Some(before)) => {
            let after = shared(Some(inv.resources(&loc).await?));
            let doubled: Vec<String> = after
                .iter()
                .filter(|(k, n)| **n > before.get(*k).copied().unwrap_or(0) + 1)
                .map(|(k, n)| format!("{n}×{k}"))
                .collect();
            if !doubled.is_empty() {
                cx.violate(
                    CASE,
                    "what the instances share made once",
                    format!("{} (shared before: {before:?})", doubled.join(", ")),
                );
            }
            cx.note(format!("{CASE}: both made; shared resources {after:?}"));
        }
        _ => cx.not_checked(
            "what Creates at once share is made once (inventory)",
            "the fixture lacks the inventory hook",
        ),
    }
    cx.cleanup(&ids).await;
    cx.settle_deletions().await;
    Ok(())
}
