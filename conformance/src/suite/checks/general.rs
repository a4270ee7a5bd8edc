//! Checks of the General rules (GEN-*).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use tracing::Level;

use crate::fixture::{FaultKind, FaultSpec, Faults, Trigger, Verbosity};
use crate::profile::{Credentials, DeleteReturn, ListPartial};
use crate::suite::checks::create::{create_steps, exists_once};
use crate::suite::checks::steps::{Steps, made_since, sample_steps, trace_mark};
use crate::suite::cx::{CheckError, CheckResult, Cx, describe, describe_result, kind_of};
use crate::suite::props::{PropError, property};
use crate::{CreateRequest, Ctx, Error, Op, Provider, ProviderId};

/// GEN-CANCEL
pub async fn gen_cancel(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    let loc = cx.loc0().name.clone();
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    for op in ["Get", "ListByTag", "Create", "Delete"] {
        for by_token in [false, true] {
            hung(cx, faults, &loc, &req, &id, op, by_token).await?;
        }
    }
    // Everything converges afterwards: the instance may be half deleted, so delete it.
    cx.delete_ok(cx.p.as_ref(), &id, "Delete after the hangs")
        .await?;
    let names = cx.listed_names(&req.tag, "listing after the hangs").await?;
    for n in names {
        let _ = cx.p.delete(&cx.ctx(), &cx.tb.id_for(&loc, &n)).await;
    }
    // A Create cancelled after its k-th backend call, for every k, then retried.
    let steps = create_steps(cx).await?;
    for k in sample_steps(cx, &steps) {
        cancelled_create(cx, faults, &loc, &steps, k).await?;
    }
    Ok(())
}

/// One operation against a backend that holds every call, ended by its deadline or
/// its token (`by_token`): Transient, within the time it was given.
async fn hung(
    cx: &Cx,
    faults: &dyn Faults,
    loc: &str,
    req: &CreateRequest,
    id: &ProviderId,
    op: &str,
    by_token: bool,
) -> CheckResult {
    let short = cx.timing.quiet * 2;
    let case = format!(
        "{op} with a hung backend, {}",
        if by_token {
            "token fired"
        } else {
            "deadline passed"
        }
    );
    let f = cx.inject(FaultSpec {
        location: Some(loc.to_owned()),
        trigger: Trigger::Always,
        kind: FaultKind::Hang,
    })?;
    let ctx = if by_token {
        let c = Ctx::new().in_span(cx.ctx().span().clone());
        let t = c.token().clone();
        tokio::spawn(async move {
            tokio::time::sleep(short).await;
            t.cancel();
        });
        c
    } else {
        cx.ctx_for(short).0
    };
    let t = Instant::now();
    let kind = match op {
        "Get" => kind_of(&cx.p.get(&ctx, id).await),
        "ListByTag" => match cx.p.list_by_tag(&ctx, &req.tag).await {
            // With list-partial=partial a listing that names the hung location
            // before the deadline is the promised answer.
            Ok(l)
                if cx.profile.list_partial() == ListPartial::Partial
                    && l.unreachable.iter().any(|u| u.location == loc) =>
            {
                "Transient"
            }
            r => kind_of(&r),
        },
        "Create" => kind_of(&cx.p.create(&ctx, &cx.request()).await),
        _ => kind_of(&cx.p.delete(&ctx, id).await),
    };
    let took = t.elapsed();
    let fired = faults.fired(f);
    faults.clear();
    if !fired {
        return Err(CheckError::Harness(format!(
            "{case}: the hang did not fire"
        )));
    }
    if kind != "Transient" {
        cx.violate(&case, "Transient", kind);
    }
    if took > short + cx.timing.slack {
        cx.violate(
            &case,
            format!("an answer within {short:?}"),
            format!("took {took:?}"),
        );
    }
    cx.note(format!("{case}: {kind} in {took:?}"));
    Ok(())
}

/// A Create whose token fires once its k-th backend call is held: Transient (or done
/// before the cancel), and a retry converges on one instance.
async fn cancelled_create(
    cx: &Cx,
    faults: &dyn Faults,
    loc: &str,
    steps: &Steps,
    k: u64,
) -> CheckResult {
    let req = cx.request();
    let f = cx.inject(FaultSpec {
        location: Some(loc.to_owned()),
        trigger: Trigger::Nth(k),
        kind: FaultKind::Hang,
    })?;
    let mark = trace_mark(cx);
    let ctx = cx.ctx();
    let token = ctx.token().clone();
    let t = Instant::now();
    // The token fires as soon as the k-th call is held; a Create that ends
    // first (it made fewer calls this time) ends the watch too.
    let r = {
        let create = cx.p.create(&ctx, &req);
        tokio::pin!(create);
        loop {
            tokio::select! {
                r = &mut create => break r,
                _ = tokio::time::sleep(Duration::from_millis(2)) => {
                    if faults.fired(f) || t.elapsed() > cx.timing.settle {
                        token.cancel();
                    }
                }
            }
        }
    };
    let took = t.elapsed();
    let hit = faults.fired(f);
    faults.clear();
    if !hit {
        let made = made_since(cx, mark, loc);
        let case = format!("cancel at step {k}");
        steps.unfired(cx, &case, "Create", k, made, kind_of(&r));
    } else if r.is_ok() {
        cx.note(format!(
            "cancel at step {k}: Create finished before the cancel"
        ));
    } else if !matches!(&r, Err(e) if e.is_transient()) {
        cx.violate(
            format!("cancel at step {k}"),
            "Transient",
            describe_result(&r),
        );
    }
    let id = cx
        .create_ok(
            cx.p.as_ref(),
            &req,
            &format!("retry after cancel at step {k}"),
        )
        .await?;
    exists_once(cx, &req, &format!("cancel at step {k}")).await?;
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await?;
    if hit {
        cx.note(format!(
            "cancel at step {k}: {} in {took:?}, retry converged",
            kind_of(&r)
        ));
    }
    Ok(())
}

/// GEN-ERROR-NAME
pub async fn gen_error_name(cx: &Cx) -> CheckResult {
    let p = cx.p.as_ref();
    if p.name() != cx.provider_name {
        cx.violate(
            "Provider::name",
            format!("the configured name {:?}", cx.provider_name),
            format!("{:?}", p.name()),
        );
    }
    let mut errors: Vec<(String, Op, Result<(), Error>)> = Vec::new();
    if let Some(bad) = cx.tb.malformed_ids().first() {
        let id = ProviderId::new(bad.clone());
        errors.push((
            "Get of a malformed ID".into(),
            Op::Get,
            p.get(&cx.ctx(), &id).await.map(|_| ()),
        ));
        errors.push((
            "Delete of a malformed ID".into(),
            Op::Delete,
            p.delete(&cx.ctx(), &id).await,
        ));
    }
    let missing = cx.tb.id_for(&cx.loc0().name, &cx.name());
    errors.push((
        "Get of a missing instance".into(),
        Op::Get,
        p.get(&cx.ctx(), &missing).await.map(|_| ()),
    ));
    errors.push((
        "Get at an unconfigured location".into(),
        Op::Get,
        p.get(&cx.ctx(), &cx.tb.unconfigured_id(&cx.name()))
            .await
            .map(|_| ()),
    ));
    let mut req = cx.request();
    req.placement = cx.tb.unknown_placement();
    errors.push((
        "Create at an unknown placement".into(),
        Op::Create,
        p.create(&cx.ctx(), &req).await.map(|_| ()),
    ));
    let mut req = cx.request();
    req.name = "Not A Name".into();
    errors.push((
        "Create of an invalid name".into(),
        Op::Create,
        p.create(&cx.ctx(), &req).await.map(|_| ()),
    ));
    if let Some(faults) = cx.tb.faults() {
        cx.inject(FaultSpec {
            location: None,
            trigger: Trigger::Always,
            kind: FaultKind::Transient,
        })?;
        errors.push((
            "ListByTag of a busy backend".into(),
            Op::ListByTag,
            p.list_by_tag(&cx.ctx(), &cx.tag()).await.map(|_| ()),
        ));
        faults.clear();
    }
    for (case, op, r) in errors {
        match r {
            Ok(()) => cx.note(format!("{case}: no error to inspect")),
            Err(e) => {
                if e.provider() != cx.provider_name || !e.to_string().contains(&cx.provider_name) {
                    cx.violate(
                        &case,
                        format!("an error naming provider {:?}", cx.provider_name),
                        format!("provider {:?}: {e}", e.provider()),
                    );
                }
                if e.op() != op {
                    cx.violate(&case, format!("operation {op}"), format!("{}", e.op()));
                }
                if e.message().trim().is_empty() {
                    cx.violate(&case, "a message saying what went wrong", describe(&e));
                }
                cx.note(format!("{case}: {}", describe(&e)));
            }
        }
    }
    Ok(())
}

/// What the capture saw under one operation span.
struct Seen {
    levels: BTreeMap<Level, usize>,
    calls: usize,
    op_spans: usize,
    unmatched_calls: Vec<String>,
}

/// Runs `op` under a marked context and reports what it logged and which spans it
/// opened; an operation that fails fails the rule.
async fn observe<F, Fut>(cx: &Cx, op: F) -> CheckResult<((), Seen)>
where
    F: FnOnce(Ctx) -> Fut,
    Fut: std::future::Future<Output = Result<(), Error>>,
{
    let (r, seen) = observe_outcome(cx, op).await?;
    if let Err(e) = r {
        return cx.fail("the observed operation", "success", describe(&e));
    }
    Ok(((), seen))
}

/// Runs `op` under a marked context and reports its outcome, what it logged and which
/// spans it opened.
async fn observe_outcome<F, Fut>(cx: &Cx, op: F) -> CheckResult<(Result<(), Error>, Seen)>
where
    F: FnOnce(Ctx) -> Fut,
    Fut: std::future::Future<Output = Result<(), Error>>,
{
    let cap = cx.capture.clone().ok_or_else(|| {
        CheckError::Harness(
            "another tracing subscriber is installed; logs cannot be captured".into(),
        )
    })?;
    let obs = cx.observation()?;
    let (ctx, mark) = cx.ctx_for(cx.timing.op_timeout);
    let before = obs.calls().len();
    let r = op(ctx).await;
    let calls: Vec<String> = obs.calls()[before..]
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let seq = cap
        .find_mark(&mark)
        .ok_or_else(|| CheckError::Harness("the operation span was not captured".into()))?;
    let mut levels = BTreeMap::new();
    for e in cap.events_under(seq) {
        *levels.entry(e.level).or_default() += 1;
    }
    let children = cap.children(seq);
    let mut names: HashMap<String, usize> = HashMap::new();
    for s in children.iter().flat_map(|c| cap.descendants(c.seq)) {
        let short = s
            .name
            .rsplit(['.', ':'])
            .next()
            .unwrap_or(&s.name)
            .to_ascii_lowercase();
        *names.entry(short).or_default() += 1;
    }
    let mut unmatched = Vec::new();
    for c in &calls {
        match names.get_mut(&c.to_ascii_lowercase()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => unmatched.push(c.clone()),
        }
    }
    Ok((
        r,
        Seen {
            levels,
            calls: calls.len(),
            op_spans: children.len(),
            unmatched_calls: unmatched,
        },
    ))
}

/// The four operations on one fresh instance, each observed.
async fn observe_lifecycle(cx: &Cx) -> CheckResult<Vec<(&'static str, Seen)>> {
    let req = cx.request();
    let id = cx.tb.id_for(&cx.loc0().name, &req.name);
    let mut out = Vec::new();
    let (_, s) = observe(cx, |ctx| async move {
        cx.p.create(&ctx, &req).await.map(|_| ())
    })
    .await?;
    out.push(("create", s));
    cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    let got = id.clone();
    let (_, s) = observe(
        cx,
        |ctx| async move { cx.p.get(&ctx, &got).await.map(|_| ()) },
    )
    .await?;
    out.push(("get", s));
    let tag = cx.tag();
    let (_, s) = observe(cx, |ctx| async move {
        cx.p.list_by_tag(&ctx, &tag).await.map(|_| ())
    })
    .await?;
    out.push(("list_by_tag", s));
    let (_, s) = observe(cx, |ctx| async move { cx.p.delete(&ctx, &id).await }).await?;
    out.push(("delete", s));
    Ok(out)
}

/// What an observed operation ended in, for the tiers: a success logs nothing at V0
/// and one info line at V1; a not-found or failed outcome may log warnings and errors
/// at every tier, and at V1 logs at least one line, at most one of them at info.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Success,
    NotFound,
    Failed,
}

/// The operations GEN-LOGGING observes at one tier: the lifecycle, Check when the
/// provider has one, a Get that finds nothing, a Get of a malformed ID, and (with the
/// faults hook) a Create whose first backend call fails.
async fn observe_outcomes(cx: &Cx) -> CheckResult<Vec<(String, Ending, Seen)>> {
    let mut out: Vec<(String, Ending, Seen)> = observe_lifecycle(cx)
        .await?
        .into_iter()
        .map(|(op, s)| (op.to_owned(), Ending::Success, s))
        .collect();
    if let Some(checker) = cx.p.checker() {
        let mut unhealthy = Vec::new();
        let (_, s) = observe_outcome(cx, |ctx| {
            let unhealthy = &mut unhealthy;
            async move {
                for h in checker.check(&ctx).await {
                    if !h.ready {
                        unhealthy.push(format!("{}: {}", h.location, h.reason));
                    }
                }
                Ok(())
            }
        })
        .await?;
        if unhealthy.is_empty() {
            out.push(("check".into(), Ending::Success, s));
        } else {
            cx.not_checked(
                "the tiers for Check",
                format!("Check found locations unhealthy: {unhealthy:?}"),
            );
        }
    }
    let missing = cx.tb.id_for(&cx.loc0().name, &cx.name());
    let (r, s) = observe_outcome(cx, |ctx| async move {
        cx.p.get(&ctx, &missing).await.map(|_| ())
    })
    .await?;
    // Its kind is for the GET-* rules to judge; here only the lines it logs.
    match r {
        Err(e) if e.is_not_found() => {
            out.push(("get of a missing instance".into(), Ending::NotFound, s))
        }
        Err(_) => out.push(("get of a missing instance".into(), Ending::Failed, s)),
        Ok(()) => cx.not_checked(
            "the tiers for a Get that finds nothing",
            "Get of an instance never created succeeded",
        ),
    }
    if let Some(bad) = cx.tb.malformed_ids().first() {
        let id = ProviderId::new(bad.clone());
        let (r, s) = observe_outcome(
            cx,
            |ctx| async move { cx.p.get(&ctx, &id).await.map(|_| ()) },
        )
        .await?;
        if r.is_err() {
            out.push(("get of a malformed ID".into(), Ending::Failed, s));
        }
    }
    if let Some(faults) = cx.tb.faults() {
        let req = cx.request();
        let f = cx.inject(FaultSpec {
            location: Some(cx.loc0().name.clone()),
            trigger: Trigger::Nth(1),
            kind: FaultKind::Permanent,
        })?;
        let (r, s) = observe_outcome(cx, |ctx| async move {
            cx.p.create(&ctx, &req).await.map(|_| ())
        })
        .await?;
        let fired = faults.fired(f);
        faults.clear();
        match r {
            Err(_) if fired => out.push((
                "create whose first backend call fails".into(),
                Ending::Failed,
                s,
            )),
            _ => cx.not_checked(
                "the tiers for a failed Create",
                "the injected Permanent answer did not make Create fail",
            ),
        }
        cx.settle_deletions().await;
    } else {
        cx.not_checked(
            "the tiers for a failed Create",
            "the fixture lacks the faults hook",
        );
    }
    Ok(out)
}

/// GEN-LOGGING
pub async fn gen_logging(cx: &Cx) -> CheckResult {
    let obs = cx.observation()?;
    for v in [Verbosity::V0, Verbosity::V1, Verbosity::V2] {
        obs.set_verbosity(v);
        for (op, ending, seen) in observe_outcomes(cx).await? {
            let at = |l: Level| seen.levels.get(&l).copied().unwrap_or(0);
            // TRACE lies below the tiers (libraries may trace freely); it is not counted.
            let (info, finer) = (at(Level::INFO), at(Level::DEBUG));
            let loud = at(Level::WARN) + at(Level::ERROR);
            let case = format!("{v:?} {op}");
            let levels = format!("{:?}", seen.levels);
            match (v, ending) {
                (Verbosity::V0, Ending::Success) if info + finer + loud > 0 => {
                    cx.violate(&case, "no log line on success", levels.clone())
                }
                (Verbosity::V0, _) if info + finer > 0 => {
                    cx.violate(&case, "nothing below warning level", levels.clone())
                }
                (Verbosity::V1, Ending::Success) if info != 1 || finer > 0 => cx.violate(
                    &case,
                    "exactly one info line and nothing finer",
                    levels.clone(),
                ),
                (Verbosity::V1, _) if info > 1 || info + loud == 0 || finer > 0 => cx.violate(
                    &case,
                    "at least one line, at most one of them at info level, and nothing finer",
                    levels.clone(),
                ),
                (Verbosity::V2, _) if finer < seen.calls => cx.violate(
                    &case,
                    format!("at least one debug line per backend call ({})", seen.calls),
                    levels.clone(),
                ),
                _ => {}
            }
            cx.note(format!("{case}: {levels} for {} backend calls", seen.calls));
        }
    }
    obs.set_verbosity(Verbosity::V1);
    Ok(())
}

/// GEN-SPANS
pub async fn gen_spans(cx: &Cx) -> CheckResult {
    for (op, seen) in observe_lifecycle(cx).await? {
        if seen.op_spans != 1 {
            cx.violate(
                op.to_string(),
                "exactly one operation span under the caller's span",
                format!("{} spans", seen.op_spans),
            );
        }
        if !seen.unmatched_calls.is_empty() {
            cx.violate(
                op.to_string(),
                "a child span named after every backend call",
                format!("no span for {:?}", seen.unmatched_calls),
            );
        }
        cx.note(format!(
            "{op}: {} operation span(s), {} backend calls, unmatched {:?}",
            seen.op_spans, seen.calls, seen.unmatched_calls
        ));
    }
    Ok(())
}

/// GEN-NO-IO-AT-NEW
pub async fn gen_no_io_at_new(cx: &Cx) -> CheckResult {
    let obs = cx.observation()?;
    let dials = |obs: &dyn crate::fixture::Observation| {
        cx.locations.iter().map(|l| obs.dials(&l.name)).sum::<u64>()
    };
    let (calls, d) = (obs.calls().len(), dials(obs));
    if let Some(f) = cx.tb.faults() {
        f.set_reachability(&cx.loc0().name, crate::fixture::Reachability::Refused)
            .await?;
    }
    let p2 = cx.tb.restart()?;
    tokio::time::sleep(cx.timing.quiet).await;
    if let Some(f) = cx.tb.faults() {
        f.set_reachability(&cx.loc0().name, crate::fixture::Reachability::Up)
            .await?;
    }
    let (calls2, d2) = (obs.calls().len(), dials(obs));
    if calls2 != calls || d2 != d {
        cx.violate(
            "constructing a provider",
            "no backend call and no connection",
            format!("{} calls, {} dials", calls2 - calls, d2 - d),
        );
    }
    drop(p2);
    cx.note(
        "a new provider made no call and no dial, with the first location refusing connections",
    );
    Ok(())
}

/// GEN-ROTATION
pub async fn gen_rotation(cx: &Cx) -> CheckResult {
    let rot = cx.rotation()?;
    let faults = cx.faults()?;
    let obs = cx.observation()?;
    let loc = cx.loc0().name.clone();
    let req = cx.request();
    let id = cx
        .create_ok(cx.p.as_ref(), &req, "Create before rotation")
        .await?;
    rot.rotate(&loc).await?;
    // Files are re-read on every dial, so the provider that runs goes on; credentials
    // handed over at construction reach a provider constructed after the rotation.
    let (p, expect) = match cx.profile.credentials() {
        Credentials::MountedFiles => (
            cx.p.clone(),
            "success with the new credentials, without restart (credentials=mounted-files)",
        ),
        Credentials::Env | Credentials::Inline => (
            cx.tb.restart()?,
            "success with the new credentials once the provider is constructed again",
        ),
    };
    let dials = obs.dials(&loc);
    let f = cx.inject(FaultSpec {
        location: Some(loc.clone()),
        trigger: Trigger::Nth(1),
        kind: FaultKind::Drop,
    })?;
    let first = p.get(&cx.ctx(), &id).await;
    if !faults.fired(f) {
        return Err(CheckError::Harness(
            "the connection drop did not fire".into(),
        ));
    }
    let last = std::sync::Mutex::new(describe_result(&first));
    let (last_ref, id_ref, p_ref) = (&last, &id, &p);
    let ok = cx
        .poll(|| async move {
            match p_ref.get(&cx.ctx(), id_ref).await {
                Ok(_) => Some(()),
                Err(e) => {
                    *last_ref.lock().unwrap() = describe(&e);
                    None
                }
            }
        })
        .await;
    if ok.is_none() {
        cx.violate(
            "Get after rotation and a dropped connection",
            expect,
            last.into_inner().unwrap(),
        );
    } else if obs.dials(&loc) <= dials {
        return Err(CheckError::Harness(
            "no new connection was opened after the drop".into(),
        ));
    }
    cx.note(format!(
        "after rotation: first Get {}, then success over a new connection",
        kind_of(&first)
    ));
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await
}

/// GEN-PARALLEL
pub async fn gen_parallel(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    let loc = cx.loc0().name.clone();
    let stalled = cx.request();
    let other = cx.request();
    // Open the connections first: the stall must hit an operation, not a shared dial.
    cx.listed_names(&stalled.tag, "warm-up listing").await?;
    let f = cx.inject(FaultSpec {
        location: Some(loc.clone()),
        trigger: Trigger::Nth(1),
        kind: FaultKind::Hang,
    })?;
    let (p, ctx, r) = (cx.p.clone(), cx.ctx(), stalled.clone());
    let task = tokio::spawn(async move { p.create(&ctx, &r).await });
    if cx
        .poll(|| async { faults.fired(f).then_some(()) })
        .await
        .is_none()
    {
        return Err(CheckError::Harness(
            "the stalled Create never reached the backend".into(),
        ));
    }
    let budget = cx.timing.settle / 2;
    let (ctx, _) = cx.ctx_for(budget);
    let t = Instant::now();
    let r = cx.p.create(&ctx, &other).await;
    let took = t.elapsed();
    let still_stalled = !task.is_finished();
    faults.clear();
    let first = cx.joined(task.await, "create task")?;
    if r.is_err() {
        cx.violate(
            "Create of another name while one Create is stalled",
            format!("success within {budget:?}"),
            describe_result(&r),
        );
    } else if !still_stalled {
        return Err(CheckError::Harness(
            "the stalled Create finished before the other one; concurrency not shown".into(),
        ));
    }
    cx.note(format!(
        "other Create: {} in {took:?} while the first was stalled",
        kind_of(&r)
    ));
    let mut ids = vec![cx.tb.id_for(&loc, &other.name)];
    if let Ok(id) = first {
        ids.push(id);
    } else {
        ids.push(cx.tb.id_for(&loc, &stalled.name));
    }
    for id in &ids {
        cx.delete_ok(cx.p.as_ref(), id, "cleanup").await?;
    }
    Ok(())
}

/// One step of a model-based sequence.
#[derive(Clone, Debug)]
enum Step {
    Create(usize),
    Get(usize),
    Delete(usize),
    List,
    Restart,
    /// The next step's first backend call fails transiently.
    Fault(Box<Step>),
    /// The next step's k-th backend call takes effect, but its reply is lost with the
    /// connection.
    Lost(u64, Box<Step>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Model {
    Absent,
    Present,
    Unknown,
    /// Deleted under `delete-return=early`: Get may still return it and a listing may
    /// still show it, until it is gone.
    Going,
}

fn step() -> impl Strategy<Value = Step> {
    let plain = prop_oneof![
        3 => (0..3usize).prop_map(Step::Create),
        3 => (0..3usize).prop_map(Step::Get),
        2 => (0..3usize).prop_map(Step::Delete),
        2 => Just(Step::List),
        1 => Just(Step::Restart),
    ];
    prop_oneof![
        4 => plain.clone(),
        1 => plain.clone().prop_map(|s| Step::Fault(Box::new(s))),
        1 => (1..4u64, plain).prop_map(|(k, s)| Step::Lost(k, Box::new(s))),
    ]
}

/// GEN-MODEL
pub async fn gen_model(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    let loc = cx.loc0().clone();
    property(
        cx,
        "random sequences agree with the model",
        prop::collection::vec(step(), 1..14),
        |steps| {
            let loc = loc.clone();
            async move {
                let mut run = ModelRun::new(cx, loc);
                let mut p = cx.p.clone();
                let mut log = Vec::new();
                let result = async {
                    for (n, s) in steps.iter().enumerate() {
                        let (s, faulty) = run.inject(s)?;
                        let at = format!(
                            "step {n} {s:?}{}",
                            if faulty { " with a fault" } else { "" }
                        );
                        let done = match s {
                            Step::Create(i) => run.create(&p, *i, faulty).await,
                            Step::Get(i) => run.get(&p, *i, faulty).await,
                            Step::Delete(i) => run.delete(&p, *i, faulty).await,
                            Step::List => run.list(&p, faulty).await,
                            Step::Restart => {
                                p = cx.tb.restart()?;
                                Ok(())
                            }
                            Step::Fault(_) | Step::Lost(..) => {
                                unreachable!("faults are unwrapped by inject")
                            }
                        };
                        if let Err(msg) = done {
                            return Err(PropError::Fail(format!(
                                "{at}: {msg}; steps so far {log:?}"
                            )));
                        }
                        faults.clear();
                        log.push(format!("{s:?}{}", if faulty { "!" } else { "" }));
                    }
                    Ok(())
                }
                .await;
                faults.clear();
                run.finish(&p, result).await
            }
        },
    )
}

/// One sequence of GEN-MODEL: three names at one location, what the model holds of
/// each, and how each answer must agree with it.
struct ModelRun<'a> {
    cx: &'a Cx,
    loc: crate::fixture::Location,
    tag: String,
    names: Vec<String>,
    ids: Vec<ProviderId>,
    model: [Model; 3],
    /// What a successful Delete leaves, by the profile's `delete-return`.
    deleted: Model,
}

impl<'a> ModelRun<'a> {
    fn new(cx: &'a Cx, loc: crate::fixture::Location) -> ModelRun<'a> {
        let tag = cx.tag();
        let names: Vec<String> = (0..3).map(|_| cx.name()).collect();
        let ids = names.iter().map(|n| cx.tb.id_for(&loc.name, n)).collect();
        let deleted = match cx.profile.delete_return() {
            DeleteReturn::Waits => Model::Absent,
            DeleteReturn::Early => Model::Going,
        };
        ModelRun {
            cx,
            loc,
            tag,
            names,
            ids,
            model: [Model::Absent; 3],
            deleted,
        }
    }

    /// Injects the fault a step carries; returns the step it applies to and whether
    /// there is one.
    fn inject<'s>(&self, s: &'s Step) -> Result<(&'s Step, bool), PropError> {
        let (trigger, kind, inner) = match s {
            Step::Fault(inner) => (Trigger::Nth(1), FaultKind::Transient, inner),
            Step::Lost(k, inner) => (Trigger::Nth(*k), FaultKind::LostReply, inner),
            s => return Ok((s, false)),
        };
        self.cx.inject(FaultSpec {
            location: Some(self.loc.name.clone()),
            trigger,
            kind,
        })?;
        Ok((inner.as_ref(), true))
    }

    async fn create(
        &mut self,
        p: &Arc<dyn Provider>,
        i: usize,
        faulty: bool,
    ) -> Result<(), String> {
        let req = self.cx.tb.request(&self.names[i], &self.tag, &self.loc);
        match p.create(&self.cx.ctx(), &req).await {
            Ok(id) if id == self.ids[i] => self.model[i] = Model::Present,
            Ok(id) => return Err(format!("ID {id}, expected {}", self.ids[i])),
            Err(e) if faulty && e.is_transient() => self.model[i] = Model::Unknown,
            Err(e) => return Err(describe(&e)),
        }
        Ok(())
    }

    async fn get(&mut self, p: &Arc<dyn Provider>, i: usize, faulty: bool) -> Result<(), String> {
        let r = p.get(&self.cx.ctx(), &self.ids[i]).await;
        match (&r, self.model[i]) {
            (Ok(inst), Model::Present | Model::Unknown | Model::Going) => {
                if inst.name != self.names[i] || inst.tag != self.tag {
                    return Err(format!("wrong instance {inst:?}"));
                }
                if self.model[i] != Model::Going {
                    self.model[i] = Model::Present;
                }
            }
            (Err(e), Model::Absent | Model::Unknown | Model::Going) if e.is_not_found() => {
                self.model[i] = Model::Absent
            }
            (Err(e), _) if faulty && e.is_transient() => {}
            _ => {
                return Err(format!(
                    "{} while the model says {:?}",
                    describe_result(&r),
                    self.model[i]
                ));
            }
        }
        Ok(())
    }

    async fn delete(
        &mut self,
        p: &Arc<dyn Provider>,
        i: usize,
        faulty: bool,
    ) -> Result<(), String> {
        match p.delete(&self.cx.ctx(), &self.ids[i]).await {
            Ok(()) => self.model[i] = self.deleted,
            Err(e) if faulty && e.is_transient() => self.model[i] = Model::Unknown,
            Err(e) => return Err(describe(&e)),
        }
        Ok(())
    }

    async fn list(&mut self, p: &Arc<dyn Provider>, faulty: bool) -> Result<(), String> {
        let l = match p.list_by_tag(&self.cx.ctx(), &self.tag).await {
            Ok(l) => l,
            Err(e) if faulty && e.is_transient() => return Ok(()),
            Err(e) => return Err(describe(&e)),
        };
        if l.unreachable.iter().any(|u| u.location == self.loc.name) {
            // A partial listing that names the location: allowed only under a fault,
            // and it says nothing about the instances there.
            if !faulty {
                return Err(format!(
                    "{} named unreachable with no fault injected: {:?}",
                    self.loc.name, l.unreachable
                ));
            }
            return Ok(());
        }
        for (i, m) in self.model.iter_mut().enumerate() {
            let listed = l.instances.iter().any(|x| x.name == self.names[i]);
            match (*m, listed) {
                (Model::Present, false) => {
                    return Err(format!("{} missing from the listing", self.names[i]));
                }
                (Model::Absent, true) => {
                    return Err(format!("{} listed after its Delete", self.names[i]));
                }
                (Model::Unknown, l) => *m = if l { Model::Present } else { Model::Absent },
                (Model::Going, false) => *m = Model::Absent,
                _ => {}
            }
        }
        if l.instances.iter().any(|x| !self.names.contains(&x.name)) {
            return Err(format!("a stranger in the listing: {:?}", l.instances));
        }
        Ok(())
    }

    /// Deletes the three names whatever the sequence did, then judges: the sequence's
    /// own result first, then nothing of any name left in the inventory.
    async fn finish(
        &self,
        p: &Arc<dyn Provider>,
        result: Result<(), PropError>,
    ) -> Result<(), PropError> {
        for id in &self.ids {
            if let Err(e) = p.delete(&self.cx.ctx(), id).await {
                return Err(PropError::Fail(format!(
                    "final Delete of {id}: {}",
                    describe(&e)
                )));
            }
        }
        // With delete-return=early the last Deletes may still be under way.
        self.cx.settle_deletions().await;
        result?;
        for n in &self.names {
            if let Some(left) = self
                .cx
                .inventory_for(
                    "nothing left after the final Deletes (inventory)",
                    &self.loc.name,
                    n,
                )
                .await
                .map_err(|_| PropError::Harness("inventory failed".into()))?
                && !left.is_empty()
            {
                return Err(PropError::Fail(format!(
                    "{n} left {left:?} after its final Delete"
                )));
            }
        }
        Ok(())
    }
}
