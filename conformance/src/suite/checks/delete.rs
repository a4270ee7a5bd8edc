//! Checks of the Delete rules (DEL-*).

use crate::ProviderId;
use crate::fixture::{BackendCall, FaultKind, Location, Part, Plant};
use crate::profile::SecondaryResources;
use crate::suite::checks::get::{arbitrary_ids, gone_after_delete};
use crate::suite::checks::steps::{
    Steps, calls_since, clean_runs, count_calls, held_at, interrupt, made_since, none_counted,
    plan, plan_of, resumer, trace_mark,
};
use crate::suite::cx::{CheckError, CheckResult, Cx, describe, describe_result, kind_of};
use crate::suite::props::{PropError, property};

/// Checks that the inventory holds nothing of `name` at the first location.
pub(crate) async fn nothing_left(cx: &Cx, name: &str, at: &str) -> CheckResult {
    nothing_left_at(cx, &cx.loc0().name, name, at).await
}

/// [`nothing_left`] at `location`.
pub(crate) async fn nothing_left_at(cx: &Cx, location: &str, name: &str, at: &str) -> CheckResult {
    if let Some(left) = cx
        .inventory_for("nothing of the instance left (inventory)", location, name)
        .await?
        && !left.is_empty()
    {
        cx.violate(at, format!("nothing of {name} left"), format!("{left:?}"));
    }
    Ok(())
}

/// [`nothing_left`], under `delete-return=early` once the inventory has settled
/// (within the settle time): what a finished deletion left, not one still under way.
pub(crate) async fn nothing_left_settled(cx: &Cx, name: &str, at: &str) -> CheckResult {
    if cx.profile.delete_return() == crate::profile::DeleteReturn::Early
        && cx.tb.inventory().is_some()
    {
        let loc = cx.loc0().name.clone();
        cx.poll(|| async {
            match cx.inventory_of(&loc, name).await {
                Ok(Some(left)) if left.is_empty() => Some(()),
                _ => None,
            }
        })
        .await;
    }
    nothing_left(cx, name, at).await
}

/// DEL-MALFORMED
pub async fn del_malformed(cx: &Cx) -> CheckResult {
    for raw in cx.tb.malformed_ids() {
        let r = cx.p.delete(&cx.ctx(), &ProviderId::new(raw.clone())).await;
        if !matches!(&r, Err(e) if e.is_permanent()) {
            cx.violate(format!("Delete {raw:?}"), "Permanent", describe_result(&r));
        }
    }
    property(cx, "arbitrary IDs", arbitrary_ids(cx), |raw| async move {
        let id = ProviderId::new(raw);
        let r = cx.p.delete(&cx.ctx(), &id).await;
        let well_formed = cx.tb.location_of(&id).is_some();
        match &r {
            Err(e) if e.is_permanent() => Ok(()),
            Ok(()) if well_formed => Ok(()),
            _ => Err(PropError::Fail(format!(
                "Delete {:?} ({}) returned {}",
                id.as_str(),
                if well_formed {
                    "well formed"
                } else {
                    "malformed"
                },
                describe_result(&r)
            ))),
        }
    })
}

/// DEL-IDEMPOTENT
pub async fn del_idempotent(cx: &Cx) -> CheckResult {
    let never = cx.tb.id_for(&cx.loc0().name, &cx.name());
    cx.delete_ok(cx.p.as_ref(), &never, "Delete of a never-created instance")
        .await?;
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    cx.delete_ok(cx.p.as_ref(), &id, "first Delete").await?;
    cx.delete_ok(cx.p.as_ref(), &id, "second Delete").await?;
    gone_after_delete(cx, &id, "after two Deletes").await?;
    nothing_left(cx, &req.name, "after two Deletes").await
}

/// DEL-COMPLETE
pub async fn del_complete(cx: &Cx) -> CheckResult {
    for loc in cx.every_location() {
        del_complete_at(cx, &loc).await?;
    }
    Ok(())
}

/// DEL-COMPLETE at one location.
async fn del_complete_at(cx: &Cx, at: &crate::fixture::Location) -> CheckResult {
    let loc = at.name.clone();
    // Another instance at the same location, whose resources and the shared ones
    // the Delete below must leave in place.
    let bystander = cx.tb.request(&cx.name(), &cx.tag(), at);
    let bid = cx
        .create_ok(
            cx.p.as_ref(),
            &bystander,
            &format!("Create of a bystander at {loc}"),
        )
        .await?;
    let req = cx.tb.request(&cx.name(), &cx.tag(), at);
    let id = cx
        .create_ok(cx.p.as_ref(), &req, &format!("Create at {loc}"))
        .await?;
    cx.wait_running(cx.p.as_ref(), &id, &format!("boot at {loc}"))
        .await?;
    let inv = cx.inventory()?;
    let res: Vec<_> = inv
        .resources(&loc)
        .await?
        .into_iter()
        .filter(|r| r.instance.as_deref() == Some(req.name.as_str()))
        .collect();
    let secondary: Vec<String> = res
        .iter()
        .filter(|r| !r.primary)
        .map(|r| format!("{}:{}", r.kind, r.name))
        .collect();
    match (cx.profile.secondary_resources(), secondary.is_empty()) {
        // Nothing but the primary to delete: it alone is judged below.
        (SecondaryResources::None, true) => {}
        (SecondaryResources::None, false) => {
            cx.violate(
                format!("before Delete at {loc}"),
                "no secondary resource (secondary-resources=none)",
                format!("{} has {secondary:?}", req.name),
            );
        }
        (_, true) => {
            cx.cleanup(&[id]).await;
            return Err(CheckError::Harness(format!(
                "the inventory shows no secondary resource of {} ({res:?}); completeness cannot be judged",
                req.name
            )));
        }
        (_, false) => {}
    }
    cx.note(format!(
        "before Delete at {loc}: {:?}",
        res.iter()
            .map(|r| format!("{}:{}", r.kind, r.name))
            .collect::<Vec<_>>()
    ));
    let after = format!("after Delete at {loc}");
    let kept = others(cx, &loc, &bystander.name).await?;
    cx.delete_ok(cx.p.as_ref(), &id, &format!("Delete at {loc}"))
        .await?;
    gone_after_delete(cx, &id, &after).await?;
    nothing_left_at(cx, &loc, &req.name, &after).await?;
    let now = others(cx, &loc, &bystander.name).await?;
    let gone: Vec<&String> = kept.iter().filter(|r| !now.contains(r)).collect();
    if !gone.is_empty() {
        cx.violate(
            &after,
            format!(
                "the bystander {}'s resources and the shared ones in place",
                bystander.name
            ),
            format!("{gone:?} gone"),
        );
    }
    cx.delete_ok(
        cx.p.as_ref(),
        &bid,
        &format!("Delete of the bystander at {loc}"),
    )
    .await
}

/// The resources at `location` of the instance `name` and the shared ones (of no
/// instance), as `kind:name`.
async fn others(cx: &Cx, location: &str, name: &str) -> CheckResult<Vec<String>> {
    let inv = cx.inventory()?;
    Ok(inv
        .resources(location)
        .await?
        .into_iter()
        .filter(|r| r.instance.as_deref().is_none_or(|i| i == name))
        .map(|r| format!("{}:{}", r.kind, r.name))
        .collect())
}

/// DEL-RUNNING
pub async fn del_running(cx: &Cx) -> CheckResult {
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    cx.delete_ok(cx.p.as_ref(), &id, "Delete of a Running instance")
        .await?;
    gone_after_delete(cx, &id, "after Delete").await?;
    nothing_left(cx, &req.name, "after Delete").await
}

/// DEL-PARTIAL
pub async fn del_partial(cx: &Cx) -> CheckResult {
    gone_before(cx, "secondary resources gone", Part::Secondary).await?;
    gone_before(cx, "primary resource gone", Part::Primary).await?;
    // Clean Deletes measured once, for the held parts and for the container case.
    let measured = if cx.tb.faults().is_some() && cx.tb.observation().is_some() {
        Some(measure_delete(cx).await?)
    } else {
        None
    };
    vanishing_parts(cx, measured.as_ref().map(|(steps, _)| steps)).await?;
    // The container goes last at a location: without it the location hosts nothing.
    // Once gone before a Delete, to find the step at which its absence first shows;
    // then, at another location, removed while a Delete is held at that step (in the
    // last turn when the rule runs at every location in turn).
    let loc0 = cx.loc0().clone();
    let carried = if cx.last_turn() {
        cx.carried.lock().unwrap().take()
    } else {
        None
    };
    if let Some(step) = carried {
        return container_vanishing(cx, &loc0, step).await;
    }
    let clean = match measured {
        Some((_, sequence)) => Some(sequence),
        None => clean_delete(cx).await?,
    };
    let without = gone_before(cx, "container gone", Part::Container).await?;
    let step = missing_shows_at(cx, clean, without);
    if cx.in_turn() {
        *cx.carried.lock().unwrap() = step;
        return Ok(());
    }
    match (step, cx.locations.iter().find(|l| l.name != loc0.name)) {
        (Some(step), Some(other)) => container_vanishing(cx, other, step).await,
        (None, _) => Ok(()),
        (Some(_), None) => {
            cx.not_checked(
                VANISHING,
                "one location only, and its container is gone already",
            );
            Ok(())
        }
    }
}

const VANISHING: &str = "the container removed while Delete runs";

/// `part` of a Running instance removed out of band before its Delete, which succeeds;
/// the backend calls the Delete made (`None` without an observation hook).
async fn gone_before(cx: &Cx, case: &str, part: Part) -> CheckResult<Option<Vec<String>>> {
    let planting = cx.planting()?;
    let loc = cx.loc0().name.clone();
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, case).await?;
    cx.wait_running(cx.p.as_ref(), &id, case).await?;
    planting.remove_part(&loc, &req.name, part).await?;
    let mark = trace_mark(cx);
    let r = cx.p.delete(&cx.ctx(), &id).await;
    let calls = calls_since(cx, mark, &loc);
    if let Err(e) = &r {
        cx.violate(case, "Delete to succeed", describe(e));
    }
    gone_after_delete(cx, &id, case).await?;
    planting.remove(&loc, &req.name).await?;
    cx.note(format!("{case}: Delete → {}", kind_of(&r)));
    Ok(calls)
}

/// The procedures a clean Delete of a Running instance calls at the first location
/// (`None` without an observation hook), measured alone: a fixture with both the
/// fault and the observation hook has it from [`measure_delete`].
async fn clean_delete(cx: &Cx) -> CheckResult<Option<Vec<String>>> {
    let loc = cx.loc0().name.clone();
    let req = cx.request();
    let id = cx
        .create_ok(cx.p.as_ref(), &req, "measuring Delete")
        .await?;
    cx.wait_running(cx.p.as_ref(), &id, "measuring Delete: boot")
        .await?;
    let mark = trace_mark(cx);
    cx.delete_ok(cx.p.as_ref(), &id, "measuring Delete").await?;
    Ok(calls_since(cx, mark, &loc))
}

/// The step of Delete (1-based, with its procedure) at which a Delete that found the
/// container gone (`without`) first stopped making the calls of a clean one
/// (`clean`): the call after the provider found, or failed to find, the container.
/// `None`, recorded, without an observation hook or when the two made the same calls.
fn missing_shows_at(
    cx: &Cx,
    clean: Option<Vec<String>>,
    without: Option<Vec<String>>,
) -> Option<(u64, String)> {
    let (Some(clean), Some(without)) = (clean, without) else {
        cx.not_checked(VANISHING, "the fixture has no observation hook");
        return None;
    };
    let d = clean
        .iter()
        .zip(&without)
        .take_while(|(a, b)| a == b)
        .count();
    if d >= clean.len() {
        cx.note(format!(
            "{VANISHING}: a Delete without its container made the calls of a clean one ({})",
            clean.join(", ")
        ));
        return None;
    }
    Some((d as u64 + 1, clean[d].clone()))
}

/// The container removed at `at` while Delete is held at `step` (see
/// [`missing_shows_at`]): the provider has found the container and goes on to the
/// parts that vanish with it. Delete must succeed, and the instance is gone.
async fn container_vanishing(cx: &Cx, at: &Location, (k, proc): (u64, String)) -> CheckResult {
    if cx.tb.faults().is_none() {
        cx.not_checked(VANISHING, "the fixture has no faults hook");
        return Ok(());
    }
    let case = format!(
        "container removed at step {k} of Delete ({proc}) at {}",
        at.name
    );
    let planting = cx.planting()?;
    let req = cx.tb.request(&cx.name(), &cx.tag(), at);
    let id = cx.create_ok(cx.p.as_ref(), &req, &case).await?;
    cx.wait_running(cx.p.as_ref(), &id, &case).await?;
    let remove = || async {
        planting
            .remove_part(&at.name, &req.name, Part::Container)
            .await?;
        Ok(())
    };
    let hold = FaultKind::Delay(cx.timing.quiet);
    let ctx = cx.ctx();
    let (r, ran) = held_at(cx, (&at.name, k, hold), cx.p.delete(&ctx, &id), remove).await?;
    if !ran {
        cx.not_checked(
            VANISHING,
            format!("the hold at step {k} of Delete did not fire"),
        );
    }
    match &r {
        Err(e) => cx.violate(&case, "Delete to succeed", describe(e)),
        Ok(()) => gone_after_delete(cx, &id, &case).await?,
    }
    planting.remove(&at.name, &req.name).await?;
    cx.note(format!("{case}: Delete → {}", kind_of(&r)));
    Ok(())
}

/// Parts of an instance removed out of band while Delete is held at its k-th backend
/// call, as another party deleting the same instance would: Delete still succeeds
/// and leaves nothing. At each of Delete's steps the primary and the secondary parts
/// are removed in turn; on a sampled real backend the part alternates over the sample.
/// `steps` are a clean Delete's, `None` when the fixture lacks the hooks to hold one.
async fn vanishing_parts(cx: &Cx, steps: Option<&Steps>) -> CheckResult {
    const WHAT: &str = "parts removed out of band between Delete's steps";
    let Some(steps) = steps else {
        cx.not_checked(WHAT, "the fixture has no fault or observation hook");
        return Ok(());
    };
    let planting = cx.planting()?;
    let loc = cx.loc0().name.clone();
    // A cascading backend removes the parts with the primary; one removed by another
    // party without that cascade leaves its parts to that party.
    let cascaded = cx.profile.secondary_resources() == SecondaryResources::Cascaded;
    let mut removed = 0u32;
    for (k, part) in plan_of(cx, steps, &[Part::Primary, Part::Secondary]) {
        let case = format!("{part:?} removed at step {k} of Delete");
        let req = cx.request();
        let id = cx.create_ok(cx.p.as_ref(), &req, &case).await?;
        cx.wait_running(cx.p.as_ref(), &id, &case).await?;
        let ctx = cx.ctx();
        let remove = || async {
            planting.remove_part(&loc, &req.name, part).await?;
            Ok(())
        };
        let mark = trace_mark(cx);
        // A delay, not a hang: the held call then goes on as sent, on its connection.
        let hold = FaultKind::Delay(cx.timing.quiet);
        let (r, ran) = held_at(cx, (&loc, k, hold), cx.p.delete(&ctx, &id), remove).await?;
        removed += u32::from(ran);
        if !ran {
            let made = made_since(cx, mark, &loc);
            steps.unfired(cx, &case, "Delete", k, made, kind_of(&r));
        }
        match &r {
            Err(e) => cx.violate(&case, "Delete to succeed", describe(e)),
            Ok(()) => {
                gone_after_delete(cx, &id, &case).await?;
                if !(cascaded && part == Part::Primary) {
                    nothing_left_settled(cx, &req.name, &case).await?;
                }
            }
        }
        planting.remove(&loc, &req.name).await?;
        cx.note(format!("{case}: Delete → {}", kind_of(&r)));
    }
    if removed == 0 {
        cx.not_checked(
            WHAT,
            "no held step fired, so nothing was removed mid-Delete",
        );
    }
    Ok(())
}

/// DEL-UNCONFIGURED
pub async fn del_unconfigured(cx: &Cx) -> CheckResult {
    let id = cx.tb.unconfigured_id(&cx.name());
    cx.delete_ok(cx.p.as_ref(), &id, "Delete at an unconfigured location")
        .await
}

/// DEL-CONCURRENT
pub async fn del_concurrent(cx: &Cx) -> CheckResult {
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (p, ctx, i) = (cx.p.clone(), cx.ctx(), id.clone());
        tasks.push(tokio::spawn(async move { p.delete(&ctx, &i).await }));
    }
    for (n, t) in tasks.into_iter().enumerate() {
        let r = cx.joined(t.await, "delete task")?;
        if let Err(e) = r {
            cx.violate(format!("concurrent Delete #{}", n + 1), "Ok", describe(&e));
        }
    }
    gone_after_delete(cx, &id, "after concurrent Deletes").await?;
    nothing_left(cx, &req.name, "after concurrent Deletes").await
}

/// How many backend calls a clean Delete of a Running instance makes, as every
/// interrupted one below, measured over several instances on a warm connection.
async fn delete_steps(cx: &Cx) -> CheckResult<Steps> {
    Ok(measure_delete(cx).await?.0)
}

/// [`delete_steps`], with the procedures the last measured Delete called at the first
/// location, in order.
async fn measure_delete(cx: &Cx) -> CheckResult<(Steps, Vec<String>)> {
    let loc = cx.loc0().name.clone();
    let mut runs: Vec<Vec<BackendCall>> = Vec::new();
    for _ in 0..clean_runs(cx) {
        let req = cx.request();
        let id = cx
            .create_ok(cx.p.as_ref(), &req, "measuring Delete")
            .await?;
        cx.wait_running(cx.p.as_ref(), &id, "measuring Delete: boot")
            .await?;
        let ((), calls) = count_calls(
            cx,
            "Delete",
            cx.delete_ok(cx.p.as_ref(), &id, "measuring Delete"),
        )
        .await?;
        runs.push(calls);
    }
    let sequence = (runs.last().into_iter().flatten())
        .filter(|c| c.location == loc)
        .map(|c| c.name.clone())
        .collect();
    Ok((Steps::of(cx, "Delete", None, &runs), sequence))
}

/// DEL-RESUME
pub async fn del_resume(cx: &Cx) -> CheckResult {
    let loc = cx.loc0().name.clone();
    let steps = delete_steps(cx).await?;
    let mut counted = 0;
    for (k, how) in plan(cx, &steps) {
        let case = format!("{} at step {k}", how.as_str());
        let req = cx.request();
        let id = cx.create_ok(cx.p.as_ref(), &req, &case).await?;
        cx.wait_running(cx.p.as_ref(), &id, &format!("{case}: boot"))
            .await?;
        let cut = interrupt(cx, &loc, k, how, cx.p.delete(&cx.ctx(), &id)).await?;
        // A fault that did not fire leaves a clean Delete, which the next one
        // repeats: still judged, never counted as an interruption.
        let fired = cut.judge(cx, &case, "Delete", k, &steps);
        counted += u32::from(fired);
        if cut.returned_ok().is_some() {
            // An interrupted Delete that says it is done must be: nothing of the
            // instance left (under delete-return=early, within the settle time).
            let at = format!("{case}: the interrupted Delete returned Ok");
            gone_after_delete(cx, &id, &at).await?;
            nothing_left_settled(cx, &req.name, &at).await?;
        }
        let p = resumer(cx, how)?;
        let r = p.delete(&cx.ctx(), &id).await;
        if let Err(e) = &r {
            cx.violate(format!("{case}: the next Delete"), "Ok", describe(e));
        }
        gone_after_delete(cx, &id, &format!("{case}: after the next Delete")).await?;
        let listed = cx
            .listed_names(&req.tag, &format!("{case}: listing"))
            .await?;
        if listed.contains(&req.name) {
            cx.violate(
                format!("{case}: listing after the next Delete"),
                format!("{} not listed", req.name),
                format!("{listed:?}"),
            );
        }
        nothing_left(cx, &req.name, &format!("{case}: after the next Delete")).await?;
        if fired {
            cx.note(format!(
                "{case}: interrupted Delete {}; next Delete {}",
                cut.outcome(),
                kind_of(&r)
            ));
        }
    }
    if counted == 0 {
        return Err(none_counted("Delete"));
    }
    Ok(())
}

/// DEL-OWNERSHIP
pub async fn del_ownership(cx: &Cx) -> CheckResult {
    let planting = cx.planting()?;
    let loc = cx.loc0().name.clone();
    super::honesty::fingerprint_bites(cx, &loc).await?;
    let name = cx.name();
    planting.plant(&loc, &name, Plant::Unmarked).await?;
    let before = planting.inspect(&loc, &name).await?;
    let r = cx.p.delete(&cx.ctx(), &cx.tb.id_for(&loc, &name)).await;
    let after = planting.inspect(&loc, &name).await?;
    planting.remove(&loc, &name).await?;
    if before.is_none() {
        return Err(CheckError::Harness(
            "the planted resource could not be inspected".into(),
        ));
    }
    if before != after {
        cx.violate(
            "Delete of an unmarked resource",
            format!("the resource untouched: {before:?}"),
            format!("{after:?}"),
        );
    }
    if !(r.is_ok() || matches!(&r, Err(e) if e.is_permanent())) {
        cx.violate(
            "Delete of an unmarked resource",
            "Permanent, or Ok leaving it alone",
            describe_result(&r),
        );
    }
    cx.note(format!("Delete of an unmarked resource → {}", kind_of(&r)));
    Ok(())
}
