//! Checks of the ListByTag rules (LST-*).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::fixture::{FaultKind, FaultSpec, Faults, Observation, Plant, Reachability, Trigger};
use crate::profile::ListPartial;
use crate::suite::cx::{CheckError, CheckResult, Cx, describe, describe_result};
use crate::{Listing, ProviderId, State};

async fn list(cx: &Cx, tag: &str, at: &str) -> CheckResult<Listing> {
    match cx.p.list_by_tag(&cx.ctx(), tag).await {
        Ok(l) => Ok(l),
        Err(e) => cx.fail(at, "ListByTag to succeed", describe(&e)),
    }
}

/// LST-MARKED-ONLY
pub async fn lst_marked_only(cx: &Cx) -> CheckResult {
    let planting = cx.planting()?;
    let loc = cx.loc0().clone();
    let (tag, other) = (cx.tag(), cx.tag_variant("other"));
    let ours = cx.tb.request(&cx.name(), &tag, &loc);
    let theirs = cx.tb.request(&cx.name(), &other, &loc);
    let unmarked = cx.name();
    // Marked with the tag by someone else (another operator, or an earlier provider
    // process): carrying the tag is what lists it, with the uid its mark carries.
    let (foreign, foreign_uid) = (cx.name(), "someone-else-0001");
    let a = cx
        .create_ok(cx.p.as_ref(), &ours, "Create with the tag")
        .await?;
    let b = cx
        .create_ok(cx.p.as_ref(), &theirs, "Create with another tag")
        .await?;
    planting
        .plant(&loc.name, &unmarked, Plant::Unmarked)
        .await?;
    let plant = Plant::ForeignUid {
        tag: tag.clone(),
        uid: foreign_uid.into(),
    };
    planting.plant(&loc.name, &foreign, plant).await?;
    let l = list(cx, &tag, "ListByTag").await;
    let l2 = list(cx, &other, "ListByTag of the other tag").await;
    planting.remove(&loc.name, &unmarked).await?;
    planting.remove(&loc.name, &foreign).await?;
    cx.cleanup(&[a, b]).await;
    let (l, l2) = (l?, l2?);
    let mut names: Vec<_> = l.instances.iter().map(|i| i.name.as_str()).collect();
    let names2: Vec<_> = l2.instances.iter().map(|i| i.name.as_str()).collect();
    names.sort_unstable();
    let mut want = [ours.name.as_str(), foreign.as_str()];
    want.sort_unstable();
    if names != want {
        cx.violate(
            "ListByTag",
            format!("exactly {want:?} (the second planted with the tag and another uid)"),
            format!("{names:?} (unmarked {unmarked}, other tag {})", theirs.name),
        );
    }
    if let Some(i) = l.instances.iter().find(|i| i.name == foreign)
        && i.uid != foreign_uid
    {
        cx.violate(
            "ListByTag",
            format!("{foreign} listed with the uid its mark carries, {foreign_uid:?}"),
            format!("uid {:?}", i.uid),
        );
    }
    if names2 != [theirs.name.as_str()] {
        cx.violate(
            "ListByTag of the other tag",
            format!("exactly [{}]", theirs.name),
            format!("{names2:?}"),
        );
    }
    Ok(())
}

/// LST-EMPTY-UID
pub async fn lst_empty_uid(cx: &Cx) -> CheckResult {
    let planting = cx.planting()?;
    let loc = cx.loc0().name.clone();
    let tag = cx.tag();
    let name = cx.name();
    planting
        .plant(&loc, &name, Plant::EmptyUid { tag: tag.clone() })
        .await?;
    let l = list(cx, &tag, "ListByTag").await;
    planting.remove(&loc, &name).await?;
    let l = l?;
    match l.instances.iter().find(|i| i.name == name) {
        Some(i) if i.uid.is_empty() => cx.note(format!("{name} listed with an empty uid")),
        Some(i) => cx.violate("ListByTag", "an empty uid", format!("uid {:?}", i.uid)),
        None => cx.violate(
            "ListByTag",
            format!("{name} (marked, empty uid) listed"),
            format!(
                "{:?}",
                l.instances.iter().map(|i| &i.name).collect::<Vec<_>>()
            ),
        ),
    }
    Ok(())
}

/// LST-ORDER
pub async fn lst_order(cx: &Cx) -> CheckResult {
    let tag = cx.tag();
    let mut ids = Vec::new();
    // Created in reverse configuration order, two per location.
    for loc in cx.locations.iter().rev() {
        for _ in 0..2 {
            let req = cx.tb.request(&cx.name(), &tag, loc);
            ids.push(
                cx.create_ok(cx.p.as_ref(), &req, &format!("Create at {}", loc.name))
                    .await?,
            );
        }
    }
    let first = list(cx, &tag, "first ListByTag").await;
    let second = list(cx, &tag, "second ListByTag").await;
    cx.cleanup(&ids).await;
    let (first, second) = (first?, second?);
    let order =
        |l: &Listing| -> Vec<ProviderId> { l.instances.iter().map(|i| i.id.clone()).collect() };
    let index = |id: &ProviderId| {
        cx.tb
            .location_of(id)
            .and_then(|loc| cx.locations.iter().position(|l| l.name == loc))
            .unwrap_or(usize::MAX)
    };
    let locs: Vec<usize> = first.instances.iter().map(|i| index(&i.id)).collect();
    if locs.windows(2).any(|w| w[0] > w[1]) {
        cx.violate(
            "first ListByTag",
            "locations in configuration order",
            format!("location indexes {locs:?}"),
        );
    }
    if first.instances.len() != ids.len() {
        cx.violate(
            "first ListByTag",
            format!("{} instances", ids.len()),
            format!("{}", first.instances.len()),
        );
    }
    if order(&first) != order(&second) {
        cx.violate(
            "second ListByTag",
            format!("the same sequence {:?}", order(&first)),
            format!("{:?}", order(&second)),
        );
    }
    cx.note(format!("location indexes in listing order: {locs:?}"));
    Ok(())
}

/// LST-PARTIAL (also verifies the list-partial declaration)
pub async fn lst_partial(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    let tag = cx.tag();
    let (l0, l1) = (cx.locations[0].clone(), cx.locations[1].clone());
    let a = cx
        .create_ok(
            cx.p.as_ref(),
            &cx.tb.request(&cx.name(), &tag, &l0),
            "Create at the first location",
        )
        .await?;
    let b = cx
        .create_ok(
            cx.p.as_ref(),
            &cx.tb.request(&cx.name(), &tag, &l1),
            "Create at the second location",
        )
        .await?;
    let all = list(cx, &tag, "every location reachable").await?;
    if !all.unreachable.is_empty() || all.instances.len() != 2 {
        cx.violate(
            "every location reachable",
            "both instances and nothing unreachable",
            format!("{all:?}"),
        );
    }
    let fail_whole = cx.profile.list_partial() == ListPartial::FailWhole;
    // The second location refused and black-holed, then the first refused: which
    // location is down does not change what the others get.
    let cases = [
        (&l1, &a, &b, Reachability::Refused),
        (&l1, &a, &b, Reachability::BlackHole),
        (&l0, &b, &a, Reachability::Refused),
    ];
    for (down, up_id, down_id, reach) in cases {
        let case = format!("{} {:?}", down.name, reach);
        faults.set_reachability(&down.name, reach).await?;
        let short = cx.timing.quiet * 4;
        let (ctx, _) = cx.ctx_for(short);
        let t = Instant::now();
        let r = cx.p.list_by_tag(&ctx, &tag).await;
        let took = t.elapsed();
        faults
            .set_reachability(&down.name, Reachability::Up)
            .await?;
        if took > short + cx.timing.slack {
            cx.violate(
                &case,
                format!("an answer within the {short:?} deadline"),
                format!("took {took:?}"),
            );
        }
        match (&r, fail_whole) {
            (Err(e), true) if e.is_transient() => {}
            (Ok(l), true) => cx.violate(
                &case,
                "Transient (list-partial=fail-whole)",
                format!("a listing: the provider behaves as list-partial=partial ({l:?})"),
            ),
            (Ok(l), false) => {
                let named: Vec<_> = l.unreachable.iter().map(|u| u.location.as_str()).collect();
                let has_up = l.instances.iter().any(|i| i.id == *up_id);
                let has_down = l.instances.iter().any(|i| i.id == *down_id);
                if named != [down.name.as_str()] || !has_up || has_down {
                    cx.violate(
                        &case,
                        format!(
                            "{} listed and {} named unreachable (list-partial=partial)",
                            up_id, down.name
                        ),
                        format!("{l:?}"),
                    );
                }
                for u in l.unreachable.iter().filter(|u| u.reason.trim().is_empty()) {
                    cx.violate(
                        &case,
                        format!("{} named with the reason it could not be read", u.location),
                        "an empty reason",
                    );
                }
            }
            (Err(e), false) if e.is_transient() => cx.violate(
                &case,
                format!(
                    "a listing before the deadline with {} named unreachable (list-partial=partial)",
                    down.name
                ),
                format!(
                    "the whole call failed: {}; the provider behaves as list-partial=fail-whole",
                    describe(e)
                ),
            ),
            _ => cx.violate(
                &case,
                if fail_whole {
                    "Transient"
                } else {
                    "a partial listing"
                },
                describe_result(&r),
            ),
        }
        cx.note(format!(
            "{case}: {} in {took:?}",
            if r.is_ok() { "listing" } else { "error" }
        ));
    }
    cx.cleanup(&[a, b]).await;
    Ok(())
}

/// LST-UNREADABLE
pub async fn lst_unreadable(cx: &Cx) -> CheckResult {
    let planting = cx.planting()?;
    let loc = cx.loc0().clone();
    let tag = cx.tag();
    let req = cx.tb.request(&cx.name(), &tag, &loc);
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    let bad = cx.name();
    planting
        .plant(&loc.name, &bad, Plant::Unreadable { tag: tag.clone() })
        .await?;
    let l = cx.p.list_by_tag(&cx.ctx(), &tag).await;
    planting.remove(&loc.name, &bad).await?;
    match &l {
        Ok(l)
            if l.instances.iter().any(|i| i.id == id)
                && !l.instances.iter().any(|i| i.name == bad) => {}
        _ => cx.violate(
            "ListByTag with an unreadable resource",
            format!("success listing {} and skipping {bad}", req.name),
            describe_result(&l),
        ),
    }
    let vanished = vanishing_reads(cx, &tag, id.clone()).await;
    cx.cleanup(std::slice::from_ref(&id)).await;
    vanished
}

/// The second half of LST-UNREADABLE: a resource that vanishes or cannot be read while
/// the listing reads it. The per-resource reads are the backend calls a listing makes
/// more of when the location holds one more instance; each answers "not found" once,
/// then a permanent error once, in turn.
async fn vanishing_reads(cx: &Cx, tag: &str, first: ProviderId) -> CheckResult {
    const WHAT: &str = "a resource vanishing or refused during a per-resource read is skipped";
    let (Some(obs), Some(faults)) = (cx.tb.observation(), cx.tb.faults()) else {
        cx.not_checked(WHAT, "the fixture lacks the faults or observation hook");
        return Ok(());
    };
    let mut ids = vec![first];
    let reads = per_instance_reads(cx, obs, tag, &mut ids).await?;
    let mut fired = 0;
    let answers = [
        (FaultKind::NotFound, "not-found"),
        (FaultKind::Permanent, "a permanent error"),
    ];
    for read in &reads {
        for (kind, answer) in answers.clone() {
            if read_answers(cx, faults, tag, &ids, read, kind, answer).await? {
                fired += 1;
            }
        }
        for busy in [Busy::Once, Busy::Hangs] {
            if read_busy(cx, faults, tag, &ids, read, busy).await? {
                fired += 1;
            }
        }
    }
    cx.cleanup(&ids[1..]).await;
    if reads.is_empty() {
        cx.not_checked(
            WHAT,
            "the observation hook showed no backend call a listing makes per instance",
        );
    } else if fired == 0 {
        cx.not_checked(WHAT, "no fault injected on a per-instance read fired");
    }
    Ok(())
}

/// The backend calls a listing makes once per instance: those it makes more of with
/// three instances than with two (the instances it creates for that are added to
/// `ids`).
async fn per_instance_reads(
    cx: &Cx,
    obs: &dyn Observation,
    tag: &str,
    ids: &mut Vec<ProviderId>,
) -> Result<Vec<String>, CheckError> {
    let loc = cx.loc0().clone();
    let counts = |from: usize| {
        let mut n: BTreeMap<String, usize> = BTreeMap::new();
        for c in obs.calls()[from..]
            .iter()
            .filter(|c| c.location == loc.name)
        {
            *n.entry(c.name.clone()).or_default() += 1;
        }
        n
    };
    let mut listed = Vec::new();
    for what in ["ListByTag of two instances", "ListByTag of three instances"] {
        let req = cx.tb.request(&cx.name(), tag, &loc);
        ids.push(cx.create_ok(cx.p.as_ref(), &req, "Create").await?);
        let from = obs.calls().len();
        list(cx, tag, what).await?;
        listed.push(counts(from));
    }
    let (two, three) = (&listed[0], &listed[1]);
    Ok(three
        .iter()
        .filter(|(name, n)| **n > two.get(*name).copied().unwrap_or(0))
        .map(|(name, _)| name.clone())
        .collect())
}

/// A listing of `tag` under `ctx` with `kind` injected on the next call of the
/// procedure `read` at the first location; `None` when that fault did not fire.
async fn listed_with_fault(
    cx: &Cx,
    faults: &dyn Faults,
    tag: &str,
    (read, kind): (&str, FaultKind),
    ctx: crate::Ctx,
) -> CheckResult<Option<crate::Result<crate::Listing>>> {
    let f = cx.inject(FaultSpec {
        location: Some(cx.loc0().name.clone()),
        trigger: Trigger::Named(read.to_owned()),
        kind,
    })?;
    let l = cx.p.list_by_tag(&ctx, tag).await;
    let hit = faults.fired(f);
    faults.clear();
    Ok(hit.then_some(l))
}

/// One per-instance read answering `kind` once during a listing: the listing still
/// succeeds with the other instances. Returns whether the fault fired.
async fn read_answers(
    cx: &Cx,
    faults: &dyn Faults,
    tag: &str,
    ids: &[ProviderId],
    read: &str,
    kind: FaultKind,
    answer: &str,
) -> Result<bool, CheckError> {
    let Some(l) = listed_with_fault(cx, faults, tag, (read, kind), cx.ctx()).await? else {
        cx.note(format!("{answer} on {read}: did not fire"));
        return Ok(false);
    };
    let case = format!("{read} answering {answer} for one instance");
    match &l {
        Ok(l) => {
            let listed = ids
                .iter()
                .filter(|id| l.instances.iter().any(|i| i.id == **id))
                .count();
            if listed + 1 < ids.len() {
                cx.violate(
                    &case,
                    format!(
                        "the other instances listed (at least {} of {})",
                        ids.len() - 1,
                        ids.len()
                    ),
                    format!("{listed} listed: {l:?}"),
                );
            }
            cx.note(format!("{case}: listing of {listed}"));
        }
        Err(e) => cx.violate(
            &case,
            "the listing to succeed, skipping that instance",
            describe(e),
        ),
    }
    Ok(true)
}

/// How a per-instance read is kept busy.
#[derive(Clone, Copy, Debug)]
enum Busy {
    /// It fails once with a transient error (a provider may read again).
    Once,
    /// It never answers, within a listing given a short deadline.
    Hangs,
}

/// One per-instance read kept busy during a listing: the instance is not dropped
/// silently. The listing fails with Transient, names the location unreachable, or
/// lists every instance (having read again). Returns whether the fault fired.
async fn read_busy(
    cx: &Cx,
    faults: &dyn Faults,
    tag: &str,
    ids: &[ProviderId],
    read: &str,
    busy: Busy,
) -> Result<bool, CheckError> {
    let loc = cx.loc0().name.clone();
    let (kind, ctx, how) = match busy {
        Busy::Once => (FaultKind::Transient, cx.ctx(), "failing transiently"),
        // Long enough for the other reads, short enough not to wait out a whole call.
        Busy::Hangs => (
            FaultKind::Hang,
            cx.ctx_for(cx.timing.quiet * 4).0,
            "never answering",
        ),
    };
    let Some(l) = listed_with_fault(cx, faults, tag, (read, kind), ctx).await? else {
        cx.note(format!("{read} {how}: did not fire"));
        return Ok(false);
    };
    let case = format!("{read} {how} for one instance");
    let want = "Transient, the location named unreachable, or every instance listed";
    match &l {
        Ok(l) => {
            let named = l.unreachable.iter().any(|u| u.location == loc);
            let listed = (ids.iter())
                .filter(|id| l.instances.iter().any(|i| i.id == **id))
                .count();
            if !named && listed < ids.len() {
                cx.violate(
                    &case,
                    want,
                    format!("{listed} of {} listed, no location named: {l:?}", ids.len()),
                );
            }
            cx.note(format!(
                "{case}: listing of {listed}, location named: {named}"
            ));
        }
        Err(e) if e.is_transient() => cx.note(format!("{case}: Transient")),
        Err(e) => cx.violate(&case, want, describe(e)),
    }
    Ok(true)
}

/// LST-AGREES
pub async fn lst_agrees(cx: &Cx) -> CheckResult {
    let tag = cx.tag();
    let mut ids = Vec::new();
    for loc in cx.locations.iter().take(2) {
        for _ in 0..2 {
            let req = cx.tb.request(&cx.name(), &tag, loc);
            ids.push(cx.create_ok(cx.p.as_ref(), &req, "Create").await?);
        }
    }
    for id in &ids {
        cx.wait_running(cx.p.as_ref(), id, "boot").await?;
    }
    let l = list(cx, &tag, "ListByTag").await?;
    if l.instances.len() != ids.len() {
        cx.violate(
            "ListByTag",
            format!("{} instances", ids.len()),
            format!("{}", l.instances.len()),
        );
    }
    for li in &l.instances {
        let g = cx
            .get_ok(cx.p.as_ref(), &li.id, "Get of a listed instance")
            .await?;
        let at = format!("{}", li.id);
        for (field, a, b) in [
            ("id", li.id.to_string(), g.id.to_string()),
            ("name", li.name.clone(), g.name.clone()),
            ("uid", li.uid.clone(), g.uid.clone()),
            ("tag", li.tag.clone(), g.tag.clone()),
            (
                "created_at",
                format!("{:?}", li.created_at),
                format!("{:?}", g.created_at),
            ),
        ] {
            if a != b {
                cx.violate(
                    format!("{at}: {field}"),
                    format!("Get's {b}"),
                    format!("listing's {a}"),
                );
            }
        }
        let state_ok =
            li.state == g.state || (li.state == State::Provisioning && g.state == State::Running);
        if !state_ok {
            cx.violate(
                format!("{at}: state"),
                format!("Get's {:?} (or Provisioning)", g.state),
                format!("{:?}", li.state),
            );
        }
        if li.ipv4.is_some() && li.ipv4 != g.ipv4 {
            cx.violate(
                format!("{at}: address"),
                format!("none or Get's {:?}", g.ipv4),
                format!("{:?}", li.ipv4),
            );
        }
    }
    cx.cleanup(&ids).await;
    Ok(())
}
