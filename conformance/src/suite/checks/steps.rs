//! Step-wise interruption, shared by the rules that interrupt an operation after each of
//! its backend calls (CRE-RESUME, DEL-RESUME): how an operation is interrupted, and
//! whether an interruption really happened.
//!
//! An interruption counts when its fault fired during the interrupted call. The call
//! then fails with Transient, is dropped while it is still running, or recovers and
//! returns Ok; an Ok is judged by what the operation must then have done (the rule's
//! check does that: [`Interrupted::returned_ok`]), never set aside. A fault that did
//! not fire (the call made fewer backend calls this time) tested nothing; the check
//! records it and goes on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::fixture::{FaultKind, FaultSpec, Trigger};
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

/// The interruptions to try at each step: every kind at every step when every step is
/// tried, and otherwise (a sampled real backend, where each one costs a boot) the
/// three kinds in turn over the sampled steps.
pub(crate) fn plan(cx: &Cx, steps: u64) -> Vec<(u64, Interruption)> {
    let chosen = sample_steps(cx, steps);
    if chosen.len() as u64 == steps {
        chosen
            .into_iter()
            .flat_map(|k| Interruption::ALL.map(|i| (k, i)))
            .collect()
    } else {
        chosen
            .into_iter()
            .enumerate()
            .map(|(n, k)| (k, Interruption::ALL[n % Interruption::ALL.len()]))
            .collect()
    }
}

/// The steps to interrupt: all of them, or an even sample on a real backend.
pub(crate) fn sample_steps(cx: &Cx, steps: u64) -> Vec<u64> {
    spread(steps, u64::from(cx.steps.max(2)))
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

/// How many backend calls `op` makes, as the observation hook sees them.
pub(crate) async fn count_calls<T>(
    cx: &Cx,
    what: &str,
    op: impl Future<Output = CheckResult<T>>,
) -> CheckResult<(T, u64)> {
    let obs = cx
        .tb
        .observation()
        .ok_or_else(|| CheckError::Skip("no observation hook".into()))?;
    let before = obs.calls().len();
    let out = op.await?;
    let n = (obs.calls().len() - before) as u64;
    if n == 0 {
        return Err(CheckError::Harness(format!(
            "the observation hook saw no backend call during {what}"
        )));
    }
    cx.note(format!("a clean {what} made {n} backend calls"));
    Ok((out, n))
}

/// What an interrupted call did.
pub(crate) struct Interrupted<T> {
    /// Whether the injected fault fired.
    pub fired: bool,
    /// The call's result; `None` when it was dropped mid-call.
    pub result: Option<Result<T, Error>>,
}

impl<T: std::fmt::Debug> Interrupted<T> {
    /// The call's outcome for evidence.
    pub fn outcome(&self) -> String {
        match &self.result {
            None => "dropped mid-call".into(),
            Some(r) => describe_result(r),
        }
    }

    /// Judges the interrupted `op` of `case`: a call that failed must have failed with
    /// Transient (the backend failed or the reply was lost, so nothing is known to be
    /// wrong for good); one that returned Ok is for the caller to judge by what it
    /// must have done ([`Interrupted::returned_ok`]); an interruption that did not
    /// count is recorded. Returns whether it counted.
    pub fn judge(&self, cx: &Cx, case: &str, op: &str) -> bool {
        if let Some(Err(e)) = &self.result
            && !e.is_transient()
        {
            cx.violate(
                case,
                format!("Transient from the interrupted {op}"),
                describe(e),
            );
        }
        match self.why_not_counted() {
            Some(why) => {
                cx.note(format!("{case}: not counted, {why} ({})", self.outcome()));
                false
            }
            None => true,
        }
    }

    /// Why the interruption did not count, if it did not.
    pub fn why_not_counted(&self) -> Option<&'static str> {
        (!self.fired).then_some("its fault did not fire within the call")
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
    Ok(Interrupted { fired, result })
}
