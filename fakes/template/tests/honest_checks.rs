//! Checks that cannot test what they claim say so instead of passing.
//!
//! - `without_the_inventory_unchecked_parts_are_recorded`: the template fixture with
//!   its inventory hook hidden. The rules whose sub-assertions need the inventory still
//!   pass on what they could see, each records what it did not check and why, and the
//!   run's verdict is partial.
//! - `check_isolated_is_an_error_when_no_check_call_is_seen`: the observation hook
//!   hides the calls Check makes; CHK-ISOLATED cannot tell Check's connections from the
//!   operations', so it is an Error, not a Pass.
//! - `a_declared_reason_the_fixture_cannot_cause_is_recorded`: the faults hook
//!   answers that it cannot produce the template's declared `ContainerMissing`;
//!   CHK-REASONS still passes on the other causes and records that reason, and only
//!   it, as not checked.
//!
//! `cargo test -p template-provider --test honest_checks`

use std::sync::Arc;

use conformance::fixture::{
    BackendCall, Capacity, FaultId, FaultSpec, Faults, Hook, HookResult, Inventory, Location,
    Observation, Planting, Reachability, Rotation, StateControl, Testbed, Verbosity, WrapFixture,
};
use conformance::suite::outcome::{Outcome, Report, Verdict};
use conformance::suite::runner::{RunOptions, run};
use conformance::{BoxFuture, CreateRequest, Provider, ProviderId};
use template_provider::TemplateFixture;

/// What the wrapper hides from the suite.
#[derive(Clone, Copy)]
enum Hide {
    /// The inventory hook.
    Inventory,
    /// The backend calls Check makes (its dials, pings and capacity reads), from the
    /// observation hook.
    CheckCalls,
    /// The faults hook's ability to produce the checker's declared reasons.
    Causes,
}

/// The template fixture with what `hide` names hidden from the suite.
fn hiding(hide: Hide) -> WrapFixture<TemplateFixture> {
    WrapFixture::new(
        TemplateFixture::default(),
        Box::new(move |tb| Box::new(HidingBed { tb, hide })),
    )
    .with_hooks(move |mut hooks| {
        if let Hide::Inventory = hide {
            hooks.retain(|h| *h != Hook::Inventory);
        }
        hooks
    })
}

struct HidingBed {
    tb: Box<dyn Testbed>,
    hide: Hide,
}

impl Testbed for HidingBed {
    fn provider(&self) -> Arc<dyn Provider> {
        self.tb.provider()
    }
    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        self.tb.restart()
    }
    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest {
        self.tb.request(name, tag, location)
    }
    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        self.tb.id_for(location, name)
    }
    fn location_of(&self, id: &ProviderId) -> Option<String> {
        self.tb.location_of(id)
    }
    fn malformed_ids(&self) -> Vec<String> {
        self.tb.malformed_ids()
    }
    fn unconfigured_id(&self, name: &str) -> ProviderId {
        self.tb.unconfigured_id(name)
    }
    fn inventory(&self) -> Option<&dyn Inventory> {
        match self.hide {
            Hide::Inventory => None,
            _ => self.tb.inventory(),
        }
    }
    fn planting(&self) -> Option<&dyn Planting> {
        self.tb.planting()
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        self.tb.state_control()
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        self.tb.capacity()
    }
    fn faults(&self) -> Option<&dyn Faults> {
        match self.hide {
            Hide::Causes => Some(self),
            _ => self.tb.faults(),
        }
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        self.tb.rotation()
    }
    fn observation(&self) -> Option<&dyn Observation> {
        match self.hide {
            Hide::CheckCalls => Some(self),
            _ => self.tb.observation(),
        }
    }
    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        self.tb.teardown()
    }
}

/// Every fault as the template has it, but no declared reason can be caused (the
/// trait's default `cause` and `undo_cause`).
impl Faults for HidingBed {
    fn inject(&self, spec: FaultSpec) -> HookResult<FaultId> {
        self.tb.faults().expect("the template injects").inject(spec)
    }
    fn fired(&self, id: FaultId) -> bool {
        self.tb.faults().expect("the template injects").fired(id)
    }
    fn clear(&self) {
        self.tb.faults().expect("the template injects").clear()
    }
    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>> {
        self.tb
            .faults()
            .expect("the template injects")
            .set_reachability(location, r)
    }
}

impl Observation for HidingBed {
    fn calls(&self) -> Vec<BackendCall> {
        let obs = self.tb.observation().expect("the template observes");
        obs.calls()
            .into_iter()
            .filter(|c| !["dial", "ping", "capacity"].contains(&c.name.as_str()))
            .collect()
    }
    fn dials(&self, location: &str) -> u64 {
        self.tb.observation().expect("observes").dials(location)
    }
    fn set_verbosity(&self, v: Verbosity) {
        self.tb.observation().expect("observes").set_verbosity(v)
    }
}

fn run_rules(fixture: WrapFixture<TemplateFixture>, rules: &[&str]) -> Report {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let opts = RunOptions {
        rules: Some(rules.iter().map(|r| r.to_string()).collect()),
        ..RunOptions::default()
    };
    rt.block_on(run(Arc::new(fixture), opts, &mut |_| {}))
}

#[test]
fn without_the_inventory_unchecked_parts_are_recorded() {
    let rules = [
        "CRE-IDEMPOTENT",
        "CRE-RESUME",
        "DEL-IDEMPOTENT",
        "GEN-MODEL",
    ];
    let report = run_rules(hiding(Hide::Inventory), &rules);
    for id in rules {
        let r = report
            .results
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("{id} has no result"));
        assert_eq!(r.outcome, Outcome::Pass, "{id}: {:?}", r.reason);
        assert!(
            r.not_checked
                .iter()
                .any(|n| n.why.contains("no inventory hook")),
            "{id} passed without recording what the missing inventory left unchecked: {:?}",
            r.not_checked
        );
    }
    assert_eq!(report.verdict, Verdict::Partial);
}

#[test]
fn check_isolated_is_an_error_when_no_check_call_is_seen() {
    let report = run_rules(hiding(Hide::CheckCalls), &["CHK-ISOLATED"]);
    let r = &report.results[0];
    assert_eq!(r.id, "CHK-ISOLATED");
    assert_eq!(r.outcome, Outcome::Error, "{:?} {:?}", r.reason, r.evidence);
    assert!(
        r.reason
            .as_deref()
            .is_some_and(|w| w.contains("Check made no backend call")),
        "{:?}",
        r.reason
    );
}

#[test]
fn a_declared_reason_the_fixture_cannot_cause_is_recorded() {
    let report = run_rules(hiding(Hide::Causes), &["CHK-REASONS"]);
    let r = &report.results[0];
    assert_eq!(r.id, "CHK-REASONS");
    assert_eq!(r.outcome, Outcome::Pass, "{:?} {:?}", r.reason, r.evidence);
    let recorded: Vec<_> = r
        .not_checked
        .iter()
        .map(|n| (n.what.as_str(), n.why.as_str()))
        .collect();
    assert_eq!(
        recorded,
        [(
            "ContainerMissing at a location",
            "the fixture cannot produce it"
        )]
    );
}
