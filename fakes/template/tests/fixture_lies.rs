//! A fixture that lies through a hook makes the rules relying on that hook the
//! harness's Error, naming the hook, never a Pass: in process and through the
//! process protocol (`template-serve --mutant NAME`), for every lie in
//! [`FIXTURE_LIES`], and the same rules pass under the honest fixture.

mod support;

use std::process::ExitCode;
use std::sync::Arc;

use conformance::fixture::Fixture;
use conformance::suite::outcome::{Outcome, Report};
use libtest_mimic::{Arguments, Failed, Trial};
use support::{bridged, run_suite};
use template_provider::{FIXTURE_LIES, TemplateFixture};

const SEED: u64 = 0x11e5;

/// Every rule of `rules` is an Error whose reason names `hook`'s hook.
fn judge(report: &Report, hook: &str, rules: &[&str]) -> Result<(), Failed> {
    let named = format!("the {hook} hook");
    for id in rules {
        let r = report
            .results
            .iter()
            .find(|r| r.id == *id)
            .ok_or_else(|| format!("{id} did not run"))?;
        let reason = r.reason.clone().unwrap_or_default();
        if r.outcome != Outcome::Error || !reason.contains(&named) {
            return Err(format!(
                "{id}: expected an Error naming {named}, got {} ({reason})",
                r.outcome.as_str()
            )
            .into());
        }
    }
    Ok(())
}

fn selection(rules: &[&str]) -> Option<Vec<String>> {
    Some(rules.iter().map(|r| r.to_string()).collect())
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for &(name, hook, rules, lie) in FIXTURE_LIES {
        trials.push(Trial::test(format!("in-process::{name}"), move || {
            let fixture: Arc<dyn Fixture> = Arc::new(TemplateFixture::lying(lie));
            judge(&run_suite(fixture, SEED, selection(rules)), hook, rules)
        }));
        trials.push(Trial::test(format!("bridge::{name}"), move || {
            let fixture = Arc::new(bridged(&format!("--mutant {name}")));
            judge(&run_suite(fixture, SEED, selection(rules)), hook, rules)
        }));
        trials.push(Trial::test(format!("honest::{name}"), move || {
            let report = run_suite(Arc::new(TemplateFixture::default()), SEED, selection(rules));
            for id in rules {
                let r = report.results.iter().find(|r| r.id == *id);
                if r.map(|r| r.outcome) != Some(Outcome::Pass) {
                    return Err(
                        format!("{id} does not pass under the honest fixture: {r:?}").into(),
                    );
                }
            }
            Ok(())
        }));
    }
    libtest_mimic::run(&args, trials).exit_code()
}
