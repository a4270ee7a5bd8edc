//! Running proptest properties inside async checks: a seeded runner, case bodies
//! driven on the current tokio runtime, and the seed and shrunk input recorded on
//! failure.

use std::future::Future;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use sha2::{Digest, Sha256};

use super::cx::{CheckError, CheckResult, Cx};
use super::guard;
use super::outcome::PropertyFailure;

/// Runs `body` over `cx.cases` values of `strategy`, seeded by the rule's seed.
///
/// A body returns `Ok(())`, `Err(Fail(msg))` for a broken contract, or
/// `Err(Harness(msg))` when the environment broke (the property stops with Error).
/// On failure the shrunk input, the seed and the way to replay the rule alone go to
/// the report: [`replay_flags`] for the suite's command line, [`replay_env`] for the
/// cargo-test harness.
pub fn property<S, F, Fut>(cx: &Cx, what: &str, strategy: S, body: F) -> CheckResult
where
    S: Strategy,
    S::Value: std::fmt::Debug + Clone,
    F: Fn(S::Value) -> Fut,
    Fut: Future<Output = Result<(), PropError>>,
{
    let handle = tokio::runtime::Handle::current();
    if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
        return Err(CheckError::Harness(
            "property checks need a multi-thread tokio runtime".into(),
        ));
    }
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&cx.seed.to_le_bytes());
    let config = Config {
        cases: cx.cases.max(1),
        failure_persistence: None,
        max_shrink_iters: if cx.timing.settle.as_secs() > 60 {
            8
        } else {
            256
        },
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let harness = std::sync::Mutex::new(None::<String>);
    // A digest of every generated input, so two runs can be shown to draw the same
    // cases (the inputs hold no names: bodies take names from the rule's context).
    let inputs = std::sync::Mutex::new(Sha256::new());
    let result = tokio::task::block_in_place(|| {
        runner.run(&strategy, |value| {
            if harness.lock().unwrap().is_some() {
                return Ok(());
            }
            inputs
                .lock()
                .unwrap()
                .update(format!("{value:?}\n").as_bytes());
            // A panic inside the provider fails the case, as any broken promise
            // does; any other panic is the suite's (or a hook's) and stops the
            // property with Error instead of passing for the provider's failure.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handle.block_on(body(value))
            }));
            match ran {
                Ok(Ok(())) => Ok(()),
                Ok(Err(PropError::Fail(msg))) => Err(TestCaseError::fail(msg)),
                Ok(Err(PropError::Harness(msg))) => {
                    *harness.lock().unwrap() = Some(msg);
                    Ok(())
                }
                Err(p) if guard::is_provider_panic(p.as_ref()) => Err(TestCaseError::fail(
                    format!("the provider panicked: {}", guard::panic_text(p.as_ref())),
                )),
                Err(p) => {
                    *harness.lock().unwrap() = Some(format!(
                        "the suite panicked outside the provider (a bug in the suite or in a fixture hook): {}",
                        guard::panic_text(p.as_ref())
                    ));
                    Ok(())
                }
            }
        })
    });
    let digest: String = inputs
        .into_inner()
        .unwrap()
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    cx.note(format!(
        "property {what}: seed {}, inputs digest {digest}",
        cx.seed
    ));
    if let Some(msg) = harness.into_inner().unwrap() {
        return Err(CheckError::Harness(msg));
    }
    match result {
        Ok(()) => {
            cx.note(format!(
                "property {what}: {} cases passed (seed {})",
                cx.cases.max(1),
                cx.seed
            ));
            Ok(())
        }
        Err(TestError::Fail(reason, value)) => {
            let shrunk = format!("{value:?}");
            let cases = cx.cases.max(1);
            let replay = replay_flags(cx.rule.id, cx.seed, cases);
            cx.set_property_failure(PropertyFailure {
                seed: cx.seed,
                shrunk: shrunk.clone(),
                replay: replay.clone(),
            });
            cx.fail(
                format!(
                    "property {what} (seed {}, shrunk input {shrunk}; replay with `{replay}`, \
                     or under cargo test with `{}` and the trial filter `--exact {}`)",
                    cx.seed,
                    replay_env(cx.rule.id, cx.seed, cases),
                    cx.rule.trial_name()
                ),
                "the property to hold for every input",
                reason.message().to_owned(),
            )
        }
        Err(TestError::Abort(reason)) => Err(CheckError::Harness(format!(
            "property {what} aborted: {}",
            reason.message()
        ))),
    }
}

/// The suite flags that run rule `id` alone with `seed` as its own seed and the
/// property's `cases`: the same cases in the same order, up to the failing one.
pub fn replay_flags(id: &str, seed: u64, cases: u32) -> String {
    format!("--rules {id} --rule-seed {id}={seed} --cases {cases}")
}

/// The environment that gives rule `id` the same seed and cases under the cargo-test
/// harness (which reads both variables; so does the command line). The harness
/// selects the rule by its trial name instead of `--rules`.
pub fn replay_env(id: &str, seed: u64, cases: u32) -> String {
    format!("CONFORMANCE_RULE_SEED={id}={seed} CONFORMANCE_CASES={cases}")
}

/// Why a property case failed.
#[derive(Debug)]
pub enum PropError {
    /// The contract was broken.
    Fail(String),
    /// The environment broke.
    Harness(String),
}

impl From<crate::fixture::HookError> for PropError {
    fn from(e: crate::fixture::HookError) -> Self {
        PropError::Harness(format!("fixture hook failed: {e}"))
    }
}

impl From<CheckError> for PropError {
    fn from(e: CheckError) -> Self {
        match e {
            CheckError::Violation(v) => PropError::Fail(v.to_string()),
            CheckError::Harness(msg) | CheckError::Skip(msg) => PropError::Harness(msg),
        }
    }
}
