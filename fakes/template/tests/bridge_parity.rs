//! The bridge changes no verdict: the template provider checked through the process
//! protocol (served by `template-serve`, a child process) gets the same outcome on
//! every rule as in process, with the same seed.

mod support;

use std::sync::Arc;

use conformance::suite::outcome::{Outcome, Verdict};
use support::{bridged, explain, outcomes, run_suite};
use template_provider::TemplateFixture;

#[test]
fn every_rule_has_the_same_outcome_through_the_bridge_as_in_process() {
    let seed = 0x00b1_d6e5;
    let local = run_suite(Arc::new(TemplateFixture::default()), seed, None);
    let remote = run_suite(Arc::new(bridged("")), seed, None);
    let (l, r) = (outcomes(&local), outcomes(&remote));
    assert_eq!(l.len(), conformance::rules::CATALOGUE.len());
    let differ: std::collections::BTreeSet<String> = l
        .iter()
        .filter(|(id, o)| r.get(*id) != Some(o))
        .map(|(id, _)| id.clone())
        .collect();
    assert!(
        differ.is_empty(),
        "outcomes differ:\nin process:\n{}through the bridge:\n{}",
        explain(&local, &differ),
        explain(&remote, &differ)
    );
    // Parity of a run that judged nothing would prove nothing.
    assert!(
        l.values().filter(|o| **o == Outcome::Pass).count() > 30,
        "{l:?}"
    );
    assert_eq!(
        remote.verdict,
        Verdict::Pass,
        "{}",
        explain(&remote, &l.keys().cloned().collect())
    );
    assert_eq!(remote.run.provider, "template");
    assert!(
        remote
            .run
            .environment
            .get("transport")
            .is_some_and(|t| t.contains("protocol")),
        "{:?}",
        remote.run.environment
    );
}
