//! A rule's outcome from what its run found: a pure function of explicit data, so that
//! every way a Pass, Fail, Error or Skipped comes about is one row of a table test.

use crate::suite::cx::CheckError;
use crate::suite::outcome::{Outcome, Violation};

/// What one run of a rule's check found, collected after the check, its sweep and the
/// testbed's teardown.
#[derive(Debug)]
pub(super) struct Findings {
    /// How the check ended.
    pub verdict: Result<(), CheckError>,
    /// The violations recorded while the check went on (the sweep's included).
    pub violations: Vec<Violation>,
    /// The harness broke below the checks (e.g. a provider process broke the
    /// protocol): the result means nothing, whatever the check said.
    pub harness_failure: Option<String>,
    /// The fixture's faults did not do what it reported they did.
    pub fault_lie: Option<String>,
    /// On a real backend, for a rule that asked for no capacity hook and injected no
    /// quota fault: the environment the run used, named, which is blamed when every
    /// violation is a QuotaExceeded. `None` on a fake, whose capacity is the fixture's.
    pub environment_capacity: Option<String>,
}

/// The outcome, its reason and the violations reported.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Judged {
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub violations: Vec<Violation>,
}

/// The rule's outcome from its findings. In order: the check's own verdict (a
/// violation is a Fail whether it was returned or recorded; the harness's Error after a
/// violation still fails the rule, naming both); then a broken harness or a lying
/// fixture outranks it (Error); then a Fail made only of QuotaExceeded that the rule did
/// not ask for, on a real backend, is the environment's Error, not the provider's Fail.
pub(super) fn judge(f: Findings) -> Judged {
    let Findings {
        verdict,
        mut violations,
        harness_failure,
        fault_lie,
        environment_capacity,
    } = f;
    let (outcome, reason) = match verdict {
        Ok(()) if violations.is_empty() => (Outcome::Pass, None),
        Ok(()) => (Outcome::Fail, Some(violations[0].to_string())),
        Err(CheckError::Violation(v)) => {
            violations.insert(0, v);
            (Outcome::Fail, Some(violations[0].to_string()))
        }
        Err(CheckError::Harness(msg)) if violations.is_empty() => (Outcome::Error, Some(msg)),
        Err(CheckError::Harness(msg)) => (
            Outcome::Fail,
            Some(format!("{}; then: {msg}", violations[0])),
        ),
        Err(CheckError::Skip(msg)) => (Outcome::Skipped, Some(msg)),
    };
    let (outcome, reason) = match harness_failure.or(fault_lie) {
        Some(why) => (Outcome::Error, Some(why)),
        None => (outcome, reason),
    };
    let all_quota = !violations.is_empty()
        && violations
            .iter()
            .all(|v| v.actual.starts_with("QuotaExceeded"));
    let (outcome, reason) = match environment_capacity {
        Some(env) if outcome == Outcome::Fail && all_quota => (
            Outcome::Error,
            Some(format!(
                "the environment ran out of capacity, which the rule did not ask for ({env}): {}; \
                 free capacity on the backend and run the rule again",
                violations[0]
            )),
        ),
        _ => (outcome, reason),
    };
    Judged {
        outcome,
        reason,
        violations,
    }
}

// A row of the table is one case with every input and expectation as an argument.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn v(actual: &str) -> Violation {
        Violation {
            rule: "R-1".into(),
            location: "step".into(),
            expected: "x".into(),
            actual: actual.into(),
        }
    }

    fn violation(actual: &str) -> Result<(), CheckError> {
        Err(CheckError::Violation(v(actual)))
    }

    fn harness(msg: &str) -> Result<(), CheckError> {
        Err(CheckError::Harness(msg.into()))
    }

    const ENV: Option<&str> = Some("host=a");

    /// Each row: the verdict, the recorded violations' texts, a harness failure, a
    /// fault lie, the environment blamed for capacity; the outcome, the start of the
    /// reason, and the violations reported (their texts, in order).
    #[rstest]
    #[case::nothing_wrong(Ok(()), &[], None, None, None, Outcome::Pass, None, &[])]
    #[case::recorded_violation_fails(Ok(()), &["Ok"], None, None, None, Outcome::Fail, Some("R-1 at step"), &["Ok"])]
    #[case::returned_violation_comes_first(violation("B"), &["A"], None, None, None, Outcome::Fail, Some("R-1 at step: expected x, got B"), &["B", "A"])]
    #[case::harness_alone_is_an_error(harness("hook broke"), &[], None, None, None, Outcome::Error, Some("hook broke"), &[])]
    #[case::harness_after_a_violation_still_fails(harness("timed out"), &["A"], None, None, None, Outcome::Fail, Some("R-1 at step: expected x, got A; then: timed out"), &["A"])]
    #[case::skip(Err(CheckError::Skip("no hook".into())), &[], None, None, None, Outcome::Skipped, Some("no hook"), &[])]
    #[case::broken_harness_outranks_a_pass(Ok(()), &[], Some("protocol broken"), None, None, Outcome::Error, Some("protocol broken"), &[])]
    #[case::lying_fixture_outranks_a_fail(Ok(()), &["A"], None, Some("fault did nothing"), None, Outcome::Error, Some("fault did nothing"), &["A"])]
    #[case::harness_failure_before_fault_lie(Ok(()), &[], Some("protocol broken"), Some("fault did nothing"), None, Outcome::Error, Some("protocol broken"), &[])]
    #[case::unasked_quota_on_a_real_backend_is_the_environments(Ok(()), &["QuotaExceeded: 0 free"], None, None, ENV, Outcome::Error, Some("the environment ran out of capacity, which the rule did not ask for (host=a): R-1"), &["QuotaExceeded: 0 free"])]
    #[case::quota_among_other_violations_stays_a_fail(Ok(()), &["QuotaExceeded: 0 free", "Ok"], None, None, ENV, Outcome::Fail, Some("R-1 at step: expected x, got QuotaExceeded"), &["QuotaExceeded: 0 free", "Ok"])]
    #[case::quota_on_a_fake_stays_a_fail(Ok(()), &["QuotaExceeded: 0 free"], None, None, None, Outcome::Fail, Some("R-1"), &["QuotaExceeded: 0 free"])]
    #[case::environment_never_turns_a_pass(Ok(()), &[], None, None, ENV, Outcome::Pass, None, &[])]
    fn judged(
        #[case] verdict: Result<(), CheckError>,
        #[case] recorded: &[&str],
        #[case] harness_failure: Option<&str>,
        #[case] fault_lie: Option<&str>,
        #[case] environment: Option<&str>,
        #[case] outcome: Outcome,
        #[case] reason_starts: Option<&str>,
        #[case] reported: &[&str],
    ) {
        let j = judge(Findings {
            verdict,
            violations: recorded.iter().map(|a| v(a)).collect(),
            harness_failure: harness_failure.map(str::to_owned),
            fault_lie: fault_lie.map(str::to_owned),
            environment_capacity: environment.map(str::to_owned),
        });
        assert_eq!(j.outcome, outcome, "{j:?}");
        match (reason_starts, &j.reason) {
            (None, None) => {}
            (Some(start), Some(reason)) => {
                assert!(
                    reason.starts_with(start),
                    "reason {reason:?}, want {start:?}…"
                )
            }
            (want, got) => panic!("reason {got:?}, want {want:?}"),
        }
        let got: Vec<&str> = j.violations.iter().map(|v| v.actual.as_str()).collect();
        assert_eq!(got, reported);
    }
}
