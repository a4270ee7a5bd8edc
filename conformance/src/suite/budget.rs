//! Instance budgets on real backends: how many instances each rule holds at once, a
//! testbed wrapper that measures it, and what `--max-instances N` makes of it.
//!
//! Each rule declares the most instances it creates through the provider and holds at
//! once ([`HELD`]). With `--max-instances N` the runner admits a rule only when its
//! declaration fits in what the running rules leave of N, and a rule declaring more
//! than N is Skipped with that reason. Every run measures what each rule really held
//! ([`counted`], `RuleResult::peak_instances`), and a rule that held more than it
//! declares says so in its evidence. Instances the fixture plants below the provider
//! are not counted.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::fixture::{ProviderWrap, Testbed, WrapProviders};
use crate::{
    BoxFuture, Checker, CreateRequest, Ctx, Instance, Listing, Profile, Provider, ProviderId,
};

/// The most instances each rule holds at once, by rule ID: the peak measured with
/// [`counted`] on kvm2 over the in-memory libvirt hosts, the same for seeds 1 to 6
/// (GEN-MODEL's is also its bound: three names per case), or, where another profile
/// holds more (CRE-QUOTA under quota=backend-reported), that profile's. A rule not
/// listed held one or none (some only plant below the provider) and declares one.
pub static HELD: &[(&str, u32)] = &[
    ("CRE-QUOTA", 2),
    ("CRE-CONCURRENT", 2),
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

/// `inner` with providers that count the instances they create and delete,
/// and a handle that reads the peak after the testbed is gone.
pub fn counted(inner: Box<dyn Testbed>) -> (WrapProviders, Peak) {
    let count: Arc<Count> = Arc::default();
    let peak = Peak(count.clone());
    let wrap: ProviderWrap = Box::new(move |inner| {
        Arc::new(Counting {
            inner,
            count: count.clone(),
        })
    });
    (WrapProviders::new(inner, wrap), peak)
}

/// The most instances a [`counted`] testbed's providers held at once.
#[derive(Clone)]
pub struct Peak(Arc<Count>);

impl Peak {
    /// The peak so far.
    pub fn get(&self) -> u32 {
        self.0.peak.load(Ordering::Relaxed)
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
