//! Instance budgets on real backends: how many instances each rule holds at once, a
//! testbed wrapper that measures it, and what `--max-instances N` makes of it.
//!
//! Each rule declares the most instances it creates through the provider and holds at
//! once ([`HELD`]). With `--max-instances N` the runner admits a rule only when its
//! declaration fits in what the running rules leave of N, and a rule declaring more
//! than N is Skipped with that reason. Every run measures what each rule really held
//! ([`Counted`], `RuleResult::peak_instances`), and a rule that held more than it
//! declares says so in its evidence. Instances the fixture plants below the provider
//! are not counted.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::fixture::{
    Capacity, Faults, HookResult, Inventory, Location, Observation, Planting, Rotation,
    StateControl, Testbed,
};
use crate::{
    BoxFuture, Checker, CreateRequest, Ctx, Instance, Listing, Profile, Provider, ProviderId,
};

/// The most instances each rule holds at once, by rule ID: the peak measured with
/// [`Counted`] on kvm2 over the in-memory libvirt hosts, the same for seeds 1 to 6
/// (GEN-MODEL's is also its bound: three names per case). A rule not listed held one
/// or none (some only plant below the provider) and declares one.
pub static HELD: &[(&str, u32)] = &[
    ("LST-MARKED-ONLY", 2),
    ("LST-ORDER", 4),
    ("LST-PARTIAL", 2),
    ("LST-UNREADABLE", 3),
    ("LST-AGREES", 4),
    ("GEN-PARALLEL", 2),
    ("GEN-MODEL", 3),
];

/// The most instances rule `id` holds at once, as declared.
pub fn held(id: &str) -> u32 {
    HELD.iter()
        .find(|(rule, _)| *rule == id)
        .map_or(1, |(_, n)| *n)
}

/// Live instances and their peak, shared by every provider of one testbed.
#[derive(Default)]
struct Count {
    live: Mutex<HashSet<String>>,
    peak: AtomicU32,
}

impl Count {
    fn created(&self, id: &ProviderId) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.insert(id.as_str().to_owned());
        let n = u32::try_from(live.len()).unwrap_or(u32::MAX);
        self.peak.fetch_max(n, Ordering::Relaxed);
    }

    fn deleted(&self, id: &ProviderId) {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id.as_str());
    }
}

/// A testbed whose providers count the instances they create and delete.
pub struct Counted {
    inner: Box<dyn Testbed>,
    count: Arc<Count>,
}

impl Counted {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn Testbed>) -> Counted {
        Counted {
            inner,
            count: Arc::default(),
        }
    }

    /// A handle that reads the peak after the testbed is gone.
    pub fn peak(&self) -> Peak {
        Peak(self.count.clone())
    }

    fn wrap(&self, p: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(Counting {
            inner: p,
            count: self.count.clone(),
        })
    }
}

/// The most instances a [`Counted`] testbed's providers held at once.
#[derive(Clone)]
pub struct Peak(Arc<Count>);

impl Peak {
    /// The peak so far.
    pub fn get(&self) -> u32 {
        self.0.peak.load(Ordering::Relaxed)
    }
}

#[deny(clippy::missing_trait_methods)]
impl Testbed for Counted {
    fn provider(&self) -> Arc<dyn Provider> {
        self.wrap(self.inner.provider())
    }
    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        self.inner.restart().map(|p| self.wrap(p))
    }
    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest {
        self.inner.request(name, tag, location)
    }
    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        self.inner.id_for(location, name)
    }
    fn location_of(&self, id: &ProviderId) -> Option<String> {
        self.inner.location_of(id)
    }
    fn malformed_ids(&self) -> Vec<String> {
        self.inner.malformed_ids()
    }
    fn unconfigured_id(&self, name: &str) -> ProviderId {
        self.inner.unconfigured_id(name)
    }
    fn unknown_placement(&self) -> String {
        self.inner.unknown_placement()
    }
    fn inventory(&self) -> Option<&dyn Inventory> {
        self.inner.inventory()
    }
    fn planting(&self) -> Option<&dyn Planting> {
        self.inner.planting()
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        self.inner.state_control()
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        self.inner.capacity()
    }
    fn faults(&self) -> Option<&dyn Faults> {
        self.inner.faults()
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        self.inner.rotation()
    }
    fn observation(&self) -> Option<&dyn Observation> {
        self.inner.observation()
    }
    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        self.inner.teardown()
    }
    fn harness_failure(&self) -> Option<String> {
        self.inner.harness_failure()
    }
}

/// A provider that counts what it creates and deletes, and does nothing else.
struct Counting {
    inner: Arc<dyn Provider>,
    count: Arc<Count>,
}

#[deny(clippy::missing_trait_methods)]
impl Provider for Counting {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> Profile {
        self.inner.profile()
    }
    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, crate::Result<ProviderId>> {
        Box::pin(async move {
            let r = self.inner.create(ctx, req).await;
            if let Ok(id) = &r {
                self.count.created(id);
            }
            r
        })
    }
    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, crate::Result<Instance>> {
        self.inner.get(ctx, id)
    }
    fn delete<'a>(&'a self, ctx: &'a Ctx, id: &'a ProviderId) -> BoxFuture<'a, crate::Result<()>> {
        Box::pin(async move {
            let r = self.inner.delete(ctx, id).await;
            if r.is_ok() {
                self.count.deleted(id);
            }
            r
        })
    }
    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, crate::Result<Listing>> {
        self.inner.list_by_tag(ctx, tag)
    }
    fn checker(&self) -> Option<&dyn Checker> {
        self.inner.checker()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{CATALOGUE, rule};

    #[test]
    fn every_declaration_names_a_rule_and_holds_at_least_one() {
        for (id, n) in HELD {
            assert!(rule(id).is_some(), "{id}");
            assert!(*n >= 1, "{id}");
        }
        assert!(CATALOGUE.iter().all(|r| held(r.id) >= 1));
        assert_eq!(held("LST-ORDER"), 4);
        assert_eq!(held("CRE-IDEMPOTENT"), 1);
    }

    #[test]
    fn the_count_keeps_its_peak() {
        let c = Count::default();
        let (a, b) = (ProviderId::new("a"), ProviderId::new("b"));
        c.created(&a);
        c.created(&a);
        c.created(&b);
        c.deleted(&a);
        c.created(&ProviderId::new("c"));
        c.deleted(&b);
        assert_eq!(c.peak.load(Ordering::Relaxed), 2);
        assert_eq!(c.live.lock().unwrap().len(), 1);
    }
}
