//! Checks of the fixture where a lie would make a rule vacuous: a rule that judges
//! "untouched" by comparing fingerprints first shows that the planting hook's
//! fingerprint changes when the suite changes the resource; a rule that finds what a
//! Create made through the inventory first sees the inventory show it; and every
//! fault reported fired must show in the observation trace. A hook that fails the
//! test is the harness's Error, naming the hook, never a Pass.

use crate::fixture::{BackendCall, FaultKind, Faults, Part, Plant, Power, Resource, Trigger};
use crate::suite::cx::{CheckError, CheckResult, Cx, Injected};

/// Shows that `planting/inspect` reflects what the rule's judgement relies on: a
/// resource planted at `location` is inspected, then changed out of band (its power,
/// with the state-control hook; its secondary parts removed, when the inventory shows
/// it has some; then its primary part removed), and each change must change its
/// fingerprint. Removes the probe afterwards.
pub(crate) async fn fingerprint_bites(cx: &Cx, location: &str) -> CheckResult {
    let planting = cx.planting()?;
    let name = cx.name();
    planting.plant(location, &name, Plant::Unmarked).await?;
    let r = changes_seen(cx, location, &name).await;
    planting.remove(location, &name).await?;
    r
}

async fn changes_seen(cx: &Cx, location: &str, name: &str) -> CheckResult {
    let planting = cx.planting()?;
    let mut last = planting.inspect(location, name).await?;
    if last.is_none() {
        return Err(CheckError::Harness(format!(
            "the planting hook's inspect found nothing of {name}, which it had just planted at {location}"
        )));
    }
    let mut seen = Vec::new();
    if let Some(sc) = cx.tb.state_control() {
        // Running, then stopped: whatever it was planted as, the two differ in power.
        sc.set_power(location, name, Power::Running).await?;
        last = planting.inspect(location, name).await?;
        sc.set_power(location, name, Power::Stopped).await?;
        let now = planting.inspect(location, name).await?;
        seen.push(("its power state went from running to stopped", now != last));
        last = now;
    }
    if has_parts(cx, location, name).await? {
        planting
            .remove_part(location, name, Part::Secondary)
            .await?;
        let now = planting.inspect(location, name).await?;
        seen.push(("its secondary parts removed", now != last));
        last = now;
    }
    planting.remove_part(location, name, Part::Primary).await?;
    let now = planting.inspect(location, name).await?;
    seen.push(("its primary part removed", now != last));
    let unseen: Vec<&str> = seen
        .iter()
        .filter(|(_, changed)| !changed)
        .map(|(w, _)| *w)
        .collect();
    if !unseen.is_empty() {
        return Err(CheckError::Harness(format!(
            "the planting hook's inspect gave the same fingerprint of a planted resource after {}: \
             a fingerprint must change with the resource's power state, parts and mark, or the \
             rule's \"untouched\" judgement tests nothing",
            unseen.join(" and ")
        )));
    }
    cx.note(format!(
        "the planting hook's fingerprint changed with each of: {}",
        seen.iter().map(|(w, _)| *w).collect::<Vec<_>>().join(", ")
    ));
    Ok(())
}

/// Whether the inventory shows secondary parts of `name` at `location` (`false`
/// without the inventory hook).
async fn has_parts(cx: &Cx, location: &str, name: &str) -> CheckResult<bool> {
    let Some(all) = location_inventory(cx, location).await? else {
        return Ok(false);
    };
    Ok(all
        .iter()
        .any(|r| r.instance.as_deref() == Some(name) && !r.primary))
}

/// What the inventory shows of `name` at `location` right after a Create of it
/// succeeded: `None` without the inventory hook; an inventory that shows nothing of it
/// is the harness's Error (every "nothing left" and "nothing made twice" judgement
/// would test nothing).
pub(crate) async fn made_inventoried(
    cx: &Cx,
    location: &str,
    name: &str,
) -> CheckResult<Option<Vec<String>>> {
    let got = cx.inventory_of(location, name).await?;
    if let Some(res) = &got
        && res.is_empty()
    {
        return Err(CheckError::Harness(format!(
            "the inventory hook shows nothing of {name} at {location}, which a Create just made: \
             an inventory must list every backend resource of an instance, or the rules that \
             judge what is left or made twice test nothing"
        )));
    }
    Ok(got)
}

/// Every resource at `location`, read through the inventory hook before a Create whose
/// additions [`added_attributed`] then judges; `None` without the hook.
pub(crate) async fn location_inventory(
    cx: &Cx,
    location: &str,
) -> CheckResult<Option<Vec<Resource>>> {
    match cx.tb.inventory() {
        Some(inv) => Ok(Some(inv.resources(location).await?)),
        None => Ok(None),
    }
}

/// Shows that the inventory attributes what a Create of `name` added at `location`
/// (the resources not in `before`) to that instance or to none (shared): a resource
/// attributed to an instance no rule of this run named is the harness's Error, since
/// every "nothing left of it" and "nothing made twice" judgement of `name` would then
/// look past it. Rules of one run may share a backend, so another of this run's names
/// is accepted.
pub(crate) async fn added_attributed(
    cx: &Cx,
    location: &str,
    before: Option<&[Resource]>,
    name: &str,
) -> CheckResult {
    let (Some(before), Some(now)) = (before, location_inventory(cx, location).await?) else {
        return Ok(());
    };
    let strangers: Vec<String> = now
        .iter()
        .filter(|r| !before.iter().any(|b| b.kind == r.kind && b.name == r.name))
        .filter_map(|r| {
            let owner = r.instance.as_deref()?;
            (owner != name && !cx.of_this_run(owner))
                .then(|| format!("{} {} of {owner:?}", r.kind, r.name))
        })
        .collect();
    if !strangers.is_empty() {
        return Err(CheckError::Harness(format!(
            "the inventory hook attributes what a Create of {name} just made at {location} to \
             instances nobody created ({}): a resource belongs to the instance that made it or, \
             shared, to none, or the rules that judge what is left of an instance look past it",
            strangers.join(", ")
        )));
    }
    Ok(())
}

/// The first fault of `injected` that the faults hook reports fired although the
/// observation trace disagrees, as the harness's Error: no call between its injection
/// and the next fault's that its trigger could have fired on; or, for a fault that
/// closes the connection (`Drop`, `LostReply`), later calls at its location in that
/// window that all stayed on the connection it closed. Judged below the provider, which may legitimately recover
/// and return Ok. `None` without an observation hook, or when every fault agrees.
pub(crate) fn fault_lie(cx: &Cx, injected: &[Injected], faults: &dyn Faults) -> Option<String> {
    let obs = cx.tb.observation()?;
    let calls = obs.calls();
    for (n, inj) in injected.iter().enumerate() {
        let Some(mark) = inj.trace_mark else {
            continue;
        };
        if !faults.fired(inj.id) {
            continue;
        }
        // The fault's window: from its injection to the next one's.
        let end = injected[n + 1..]
            .iter()
            .find_map(|i| i.trace_mark)
            .unwrap_or(calls.len())
            .clamp(mark.min(calls.len()), calls.len());
        let at = |c: &&BackendCall| inj.spec.location.as_ref().is_none_or(|l| *l == c.location);
        let after: Vec<&BackendCall> = calls
            .get(mark..end)
            .unwrap_or_default()
            .iter()
            .filter(at)
            .collect();
        let hit = match &inj.spec.trigger {
            Trigger::Nth(k) => usize::try_from(*k)
                .ok()
                .filter(|k| *k >= 1 && after.len() >= *k)
                .map(|k| k - 1),
            Trigger::Named(name) => after.iter().position(|c| c.name.eq_ignore_ascii_case(name)),
            Trigger::Always => (!after.is_empty()).then_some(0),
        };
        let what = format!(
            "a {:?} fault ({:?}{})",
            inj.spec.kind,
            inj.spec.trigger,
            inj.spec
                .location
                .as_ref()
                .map(|l| format!(" at {l}"))
                .unwrap_or_default()
        );
        let Some(i) = hit else {
            return Some(format!(
                "the faults hook reported {what} as fired, but the observation hook shows no call \
                 after its injection (and before the next fault's) that it could have fired on: a fault reported fired must have \
                 acted on a call the trace shows"
            ));
        };
        if matches!(inj.spec.kind, FaultKind::Drop | FaultKind::LostReply) {
            let closed = after[i].connection;
            let later = &after[i + 1..];
            if !later.is_empty() && later.iter().all(|c| c.connection == closed) {
                return Some(format!(
                    "the faults hook reported {what} as fired, but the observation hook shows the \
                     connection it closed carrying {} later call(s) and no other connection after \
                     it: a dropped connection must be closed, so the provider's next call dials again",
                    later.len()
                ));
            }
        }
    }
    None
}
