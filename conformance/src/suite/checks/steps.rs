//! Step-wise interruption, shared by the rules that interrupt an operation after each of
//! its backend calls (CRE-RESUME, DEL-RESUME): how an operation is interrupted, and
//! whether an interruption really happened.
//!
//! An interruption counts when its fault fired during the interrupted call. The call
//! then fails with Transient, is dropped while it is still running, or recovers and
//! returns Ok; an Ok is judged by what the operation must then have done (the rule's
//! check does that: [`Interrupted::returned_ok`]), never set aside.
//!
//! Steps are counted from several clean runs in the state the interrupted attempts
//! start from (a warm connection, a cached image), never from a testbed's first
//! operation. A fault that did not fire tested nothing: past the shortest clean run
//! that is the operation's varying length and a note; up to it, a recorded "not
//! checked" ([`Steps::unfired`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::fixture::{BackendCall, FaultKind, FaultSpec, Trigger};
use crate::suite::cx::{CheckError, CheckResult, Cx, describe, describe_result};
use crate::{Error, Provider};

/// How an operation is interrupted at its k-th backend call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interruption {
    /// The call fails with a transient backend error; the same provider retries.
    Error,
    /// The backend acts on the call, then the connection drops before the reply; the
    /// same provider retries.
    LostReply,
    /// The call hangs and the operation's future is dropped, as when the process dies;
    /// a fresh provider over the same backend retries.
    Death,
}

impl Interruption {
    const ALL: [Interruption; 3] = [
        Interruption::Error,
        Interruption::LostReply,
        Interruption::Death,
    ];

    /// A short name for evidence and violation locations.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Interruption::Error => "error",
            Interruption::LostReply => "lost reply",
            Interruption::Death => "death",
        }
    }

    fn fault(self) -> FaultKind {
        match self {
            Interruption::Error => FaultKind::Transient,
            Interruption::LostReply => FaultKind::LostReply,
            Interruption::Death => FaultKind::Hang,
        }
    }
}

/// How many clean runs of an operation measure its length: two on a fake; one on a
/// real backend, where each costs a boot and a run that ends early is noted as the
/// backend's varying length anyway ([`Steps::unfired`]).
pub(crate) fn clean_runs(cx: &Cx) -> usize {
    if cx.real_backend { 1 } else { 2 }
}

/// How many backend calls clean runs of an operation made, in the state the
/// interrupted attempts start from (a warm connection, a cached image): every clean
/// run reached step `least`; steps past it up to `most` may legitimately not be
/// reached by a run (an operation whose length varies: a poll that ends sooner, a
/// read the backend answers from a cache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Steps {
    pub least: u64,
    pub most: u64,
    /// The procedures the counted runs called, each once, in the order first called.
    pub procedures: Vec<String>,
    /// The procedures the first, uncounted run called and no counted run did (a dial,
    /// an image fetch), each once, in the order first called.
    pub cold_only: Vec<String>,
}

impl Steps {
    /// The steps of `runs` (the calls of each clean run; never empty), with a note for
    /// the evidence; `cold` is a testbed's first run, not counted because it may do
    /// more (a dial, an image fetch) than the interrupted attempts will.
    pub(crate) fn of(
        cx: &Cx,
        what: &str,
        cold: Option<&[BackendCall]>,
        runs: &[Vec<BackendCall>],
    ) -> Steps {
        let counts: Vec<u64> = runs.iter().map(|r| r.len() as u64).collect();
        let least = counts.iter().copied().min().unwrap_or(0);
        let most = counts.iter().copied().max().unwrap_or(0);
        let mut procedures: Vec<String> = Vec::new();
        for c in runs.iter().flatten() {
            if !procedures.contains(&c.name) {
                procedures.push(c.name.clone());
            }
        }
        let mut cold_only: Vec<String> = Vec::new();
        for c in cold.unwrap_or_default() {
            if !procedures.contains(&c.name) && !cold_only.contains(&c.name) {
                cold_only.push(c.name.clone());
            }
        }
        let cold = cold
            .map(|c| {
                format!(
                    "the first {} (not counted: a testbed's first {what} may dial and fetch what later ones find cached), then ",
                    c.len()
                )
            })
            .unwrap_or_default();
        cx.note(format!(
            "clean {what}s made {cold}{} backend calls in the state the interrupted ones start from",
            counts
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        Steps {
            least,
            most,
            procedures,
            cold_only,
        }
    }

    /// Records a step `k` of `op` whose fault did not fire in `case`, where the
    /// interrupted run made `made` backend calls at the fault's location (`None`: not
    /// observed). A run that ended before step `k` is the operation's varying length
    /// (a note) when some clean run ended before it too, or on a real backend, where an
    /// operation that waits for the guest makes as many polls as its boot takes;
    /// otherwise, and whenever the run reached step `k` and the fault still did not
    /// act, the step was not checked (a record that makes a passing run partial).
    pub(crate) fn unfired(
        &self,
        cx: &Cx,
        case: &str,
        op: &str,
        k: u64,
        made: Option<u64>,
        outcome: &str,
    ) {
        let clean = format!("clean {op}s made {} to {}", self.least, self.most);
        let why = match made {
            Some(n) if n >= k => format!(
                "the {op} made {n} backend calls at the fault's location, yet the fault set for call {k} did not fire"
            ),
            Some(n) if k > self.least || cx.real_backend => {
                let boot = if k > self.least {
                    ""
                } else {
                    "; on a real backend an operation that waits for the guest polls as long as its boot takes"
                };
                cx.note(format!(
                    "{case}: not counted, the {op} made {n} backend calls this time and ended before step {k} ({outcome}); {clean}{boot}"
                ));
                return;
            }
            Some(n) => format!(
                "the {op} made {n} backend calls this time, though every clean one made at least {}, so step {k} was never reached",
                self.least
            ),
            None if k > self.least => {
                cx.note(format!(
                    "{case}: not counted, its fault did not fire ({outcome}); {clean}"
                ));
                return;
            }
            None => format!(
                "the fault set for call {k} did not fire, though every clean {op} made at least {} backend calls",
                self.least
            ),
        };
        cx.note(format!("{case}: not checked, {why} ({outcome})"));
        cx.not_checked(case.to_owned(), why);
    }
}

/// Where the observation trace stands, to count what a call then makes
/// ([`made_since`]); `None` without an observation hook.
pub(crate) fn trace_mark(cx: &Cx) -> Option<usize> {
    cx.tb.observation().map(|o| o.calls().len())
}

/// How many backend calls were made at `location` since `mark`.
pub(crate) fn made_since(cx: &Cx, mark: Option<usize>, location: &str) -> Option<u64> {
    calls_since(cx, mark, location).map(|c| c.len() as u64)
}

/// The procedures of the backend calls made at `location` since `mark`, in order.
pub(crate) fn calls_since(cx: &Cx, mark: Option<usize>, location: &str) -> Option<Vec<String>> {
    let (obs, mark) = (cx.tb.observation()?, mark?);
    Some(
        obs.calls()
            .get(mark..)
            .unwrap_or_default()
            .iter()
            .filter(|c| c.location == location)
            .map(|c| c.name.clone())
            .collect(),
    )
}

/// The interruptions to try at each step: every kind at every step when every step is
/// tried, and otherwise (a sampled real backend, where each one costs a boot) the
/// three kinds in turn over the sampled steps.
pub(crate) fn plan(cx: &Cx, steps: &Steps) -> Vec<(u64, Interruption)> {
    plan_of(cx, steps, &Interruption::ALL)
}

/// What to try at each step: every one of `ways` at every step when every step is
/// tried, and otherwise `ways` in turn over the sampled steps.
pub(crate) fn plan_of<T: Copy>(cx: &Cx, steps: &Steps, ways: &[T]) -> Vec<(u64, T)> {
    let chosen = sample_steps(cx, steps);
    if chosen.len() as u64 == steps.most {
        (chosen.into_iter())
            .flat_map(|k| ways.iter().map(move |&w| (k, w)))
            .collect()
    } else {
        (chosen.into_iter().enumerate())
            .map(|(n, k)| (k, ways[n % ways.len()]))
            .collect()
    }
}

/// The steps to interrupt: all of them, or an even sample on a real backend.
pub(crate) fn sample_steps(cx: &Cx, steps: &Steps) -> Vec<u64> {
    spread(steps.most, u64::from(cx.steps.max(2)))
}

/// `1..=steps`, or `limit` of them spread evenly from the first to the last.
pub(crate) fn spread(steps: u64, limit: u64) -> Vec<u64> {
    let limit = limit.max(2);
    if steps <= limit {
        return (1..=steps).collect();
    }
    (0..limit)
        .map(|i| 1 + i * (steps - 1) / (limit - 1))
        .collect()
}

/// The backend calls `op` makes, as the observation hook sees them.
pub(crate) async fn count_calls<T>(
    cx: &Cx,
    what: &str,
    op: impl Future<Output = CheckResult<T>>,
) -> CheckResult<(T, Vec<BackendCall>)> {
    let obs = cx.observation()?;
    let before = obs.calls().len();
    let out = op.await?;
    let calls = obs.calls().split_off(before);
    if calls.is_empty() {
        return Err(CheckError::Harness(format!(
            "the observation hook saw no backend call during {what}"
        )));
    }
    Ok((out, calls))
}

/// What an interrupted call did.
pub(crate) struct Interrupted<T> {
    /// Whether the injected fault fired.
    pub fired: bool,
    /// The call's result; `None` when it was dropped mid-call.
    pub result: Option<Result<T, Error>>,
    /// The backend calls it made at the fault's location, when observed.
    pub made: Option<u64>,
}

impl<T: std::fmt::Debug> Interrupted<T> {
    /// The call's outcome for evidence.
    pub fn outcome(&self) -> String {
        match &self.result {
            None => "dropped mid-call".into(),
            Some(r) => describe_result(r),
        }
    }

    /// Judges the interrupted `op` of `case`, whose fault was set at step `k`: a call
    /// that failed must have failed with Transient (the backend failed or the reply
    /// was lost, so nothing is known to be wrong for good); one that returned Ok is for
    /// the caller to judge by what it must have done ([`Interrupted::returned_ok`]); a
    /// fault that did not fire is recorded ([`Steps::unfired`]). Returns whether the
    /// interruption counted.
    pub fn judge(&self, cx: &Cx, case: &str, op: &str, k: u64, steps: &Steps) -> bool {
        if let Some(Err(e)) = &self.result
            && !e.is_transient()
        {
            cx.violate(
                case,
                format!("Transient from the interrupted {op}"),
                describe(e),
            );
        }
        if !self.fired {
            steps.unfired(cx, case, op, k, self.made, &self.outcome());
        }
        self.fired
    }

    /// What the call returned when its fault fired and it recovered and returned Ok:
    /// the caller must then find the operation done in full.
    pub fn returned_ok(&self) -> Option<&T> {
        match &self.result {
            Some(Ok(v)) if self.fired => Some(v),
            _ => None,
        }
    }
}

/// The provider that goes on after `how`: a fresh one over the same backend after a
/// death, the same one otherwise.
pub(crate) fn resumer(cx: &Cx, how: Interruption) -> CheckResult<Arc<dyn Provider>> {
    Ok(match how {
        Interruption::Death => cx.tb.restart()?,
        Interruption::Error | Interruption::LostReply => cx.p.clone(),
    })
}

/// The rule's Error when not one interruption of `op` counted.
pub(crate) fn none_counted(op: &str) -> CheckError {
    CheckError::Harness(format!(
        "no interruption counted: no fault fired inside a {op} that then failed or was dropped"
    ))
}

/// Runs `op` with `how` injected at its `k`-th backend call at `location`. For
/// [`Interruption::Death`] the call is dropped as soon as the fault holds it (or when
/// it ends by itself first). Every fault is cleared before this returns.
pub(crate) async fn interrupt<T, Fut>(
    cx: &Cx,
    location: &str,
    k: u64,
    how: Interruption,
    op: Fut,
) -> CheckResult<Interrupted<T>>
where
    Fut: Future<Output = Result<T, Error>>,
{
    let faults = cx.faults()?;
    let mark = trace_mark(cx);
    let f = cx.inject(FaultSpec {
        location: Some(location.to_owned()),
        trigger: Trigger::Nth(k),
        kind: how.fault(),
    })?;
    let result = if how == Interruption::Death {
        tokio::pin!(op);
        let end = tokio::time::Instant::now() + cx.timing.settle;
        loop {
            tokio::select! {
                r = &mut op => break Some(r),
                _ = tokio::time::sleep(Duration::from_millis(2)) => {
                    if faults.fired(f) || tokio::time::Instant::now() > end {
                        break None;
                    }
                }
            }
        }
    } else {
        Some(op.await)
    };
    let fired = faults.fired(f);
    faults.clear();
    Ok(Interrupted {
        fired,
        result,
        made: made_since(cx, mark, location),
    })
}

/// Runs `op` held at its `k`-th backend call at `loc` by the fault `hold` (a hang, or
/// a delay after which the call proceeds): once it fires, `meanwhile` runs while the
/// operation waits, then the faults are cleared (a hang released). A fault that has
/// not fired within the settle time is cleared unused. The operation's result, and
/// whether `meanwhile` ran.
pub(crate) async fn held_at<T, M, MF>(
    cx: &Cx,
    (loc, k, hold): (&str, u64, FaultKind),
    op: impl Future<Output = T>,
    meanwhile: M,
) -> CheckResult<(T, bool)>
where
    M: FnOnce() -> MF,
    MF: Future<Output = CheckResult>,
{
    let faults = cx.faults()?;
    let f = cx.inject(FaultSpec {
        location: Some(loc.to_owned()),
        trigger: Trigger::Nth(k),
        kind: hold,
    })?;
    tokio::pin!(op);
    let end = tokio::time::Instant::now() + cx.timing.settle;
    let mut meanwhile = Some(meanwhile);
    let mut ran = false;
    let r = loop {
        tokio::select! {
            r = &mut op => break r,
            _ = tokio::time::sleep(Duration::from_millis(2)), if meanwhile.is_some() => {
                if faults.fired(f) {
                    let m = meanwhile.take().expect("checked by the guard");
                    if let Err(e) = m().await {
                        faults.clear();
                        return Err(e);
                    }
                    ran = true;
                    faults.clear();
                } else if tokio::time::Instant::now() > end {
                    meanwhile = None;
                    faults.clear();
                }
            }
        }
    };
    faults.clear();
    Ok((r, ran))
}
