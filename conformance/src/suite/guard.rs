//! The guard every provider call of a rule passes through: it marks each payload the
//! testbed hands out as the rule's secret, looks for payloads in every error and
//! health report the provider returns and in every panic it raises, and tells a
//! panic raised inside the provider's code from one raised by the suite.
//!
//! A panic inside a provider call (in process, or raised by the bridge where the suite
//! made the call when the provider reported one) leaves the guard as a
//! [`ProviderPanic`]: the runner makes that the provider's Fail. Any other panic is the
//! suite's own bug, or a fixture hook's, and the rule is an Error.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;

use super::secrets;
use crate::fixture::{ProviderWrap, Testbed, WrapProviders};
use crate::{
    BoxFuture, Checker, CreateRequest, Ctx, HostHealth, Instance, Listing, Profile, Provider,
    ProviderId,
};

/// The payload of a panic that started inside the provider's code, with its message
/// (payloads blanked).
#[derive(Debug)]
pub struct ProviderPanic(pub String);

/// The message of a panic payload.
pub fn panic_text(p: &(dyn Any + Send)) -> String {
    if let Some(ProviderPanic(m)) = p.downcast_ref::<ProviderPanic>() {
        return m.clone();
    }
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

/// Whether a panic payload is a [`ProviderPanic`].
pub fn is_provider_panic(p: &(dyn Any + Send)) -> bool {
    p.is::<ProviderPanic>()
}

/// Where payloads were seen by the guard, as lines naming the place (never the payload).
#[derive(Clone, Default)]
pub struct Leaks(Arc<Mutex<Vec<String>>>);

impl Leaks {
    fn saw(&self, text: &str, place: impl FnOnce() -> String) {
        if secrets::any_in(text) {
            let place = place();
            let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if !all.contains(&place) {
                all.push(place);
            }
        }
    }

    /// Every place seen so far.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// `inner` with its requests' payloads marked as `owner`'s secrets (one run of one
/// rule's check: [`secrets::new_owner`]) and its providers guarded; the handle reads
/// what the guard saw.
pub fn guarded(inner: Box<dyn Testbed>, owner: String) -> (WrapProviders, Leaks) {
    let leaks = Leaks::default();
    let seen = leaks.clone();
    let wrap: ProviderWrap = Box::new(move |inner| {
        Arc::new(Guarded {
            inner,
            leaks: seen.clone(),
        })
    });
    let tb = WrapProviders::new(inner, wrap).with_requests(Box::new(move |mut req| {
        req.cloud_init = secrets::mark(&owner, &req.cloud_init);
        req
    }));
    (tb, leaks)
}

struct Guarded {
    inner: Arc<dyn Provider>,
    leaks: Leaks,
}

impl Guarded {
    /// Runs one provider call: a panic leaves as a [`ProviderPanic`], an error is
    /// scanned for payloads.
    async fn call<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        start: impl FnOnce() -> BoxFuture<'a, crate::Result<T>>,
    ) -> crate::Result<T> {
        let outcome = match std::panic::catch_unwind(AssertUnwindSafe(start)) {
            Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
            Err(p) => Err(p),
        };
        match outcome {
            Ok(r) => {
                if let Err(e) = &r {
                    self.leaks.saw(&format!("{}\n{e:?}", e.chain()), || {
                        format!("the error {op} returned (its message, source chain or Debug form)")
                    });
                }
                r
            }
            Err(p) => std::panic::resume_unwind(self.provider_panic(op, p)),
        }
    }

    fn provider_panic(&self, op: &str, p: Box<dyn Any + Send>) -> Box<dyn Any + Send> {
        if is_provider_panic(p.as_ref()) {
            return p;
        }
        let text = panic_text(p.as_ref());
        self.leaks
            .saw(&text, || format!("the message of a panic inside {op}"));
        Box::new(ProviderPanic(format!(
            "{op} panicked: {}",
            secrets::redact(&text)
        )))
    }
}

#[deny(clippy::missing_trait_methods)]
impl Provider for Guarded {
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
        Box::pin(self.call("Create", move || self.inner.create(ctx, req)))
    }
    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, crate::Result<Instance>> {
        Box::pin(self.call("Get", move || self.inner.get(ctx, id)))
    }
    fn delete<'a>(&'a self, ctx: &'a Ctx, id: &'a ProviderId) -> BoxFuture<'a, crate::Result<()>> {
        Box::pin(self.call("Delete", move || self.inner.delete(ctx, id)))
    }
    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, crate::Result<Listing>> {
        Box::pin(self.call("ListByTag", move || self.inner.list_by_tag(ctx, tag)))
    }
    fn checker(&self) -> Option<&dyn Checker> {
        self.inner.checker().map(|_| self as &dyn Checker)
    }
}

impl Checker for Guarded {
    fn check<'a>(&'a self, ctx: &'a Ctx) -> BoxFuture<'a, Vec<HostHealth>> {
        Box::pin(async move {
            let Some(inner) = self.inner.checker() else {
                return Vec::new();
            };
            let health = match std::panic::catch_unwind(AssertUnwindSafe(|| inner.check(ctx))) {
                Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                Err(p) => Err(p),
            };
            match health {
                Ok(health) => {
                    for h in &health {
                        self.leaks.saw(&format!("{h:?}"), || {
                            format!("the health Check reported for {}", h.location)
                        });
                    }
                    health
                }
                Err(p) => std::panic::resume_unwind(self.provider_panic("Check", p)),
            }
        })
    }
    fn extra_reasons(&self) -> &'static [&'static str] {
        self.inner
            .checker()
            .map(|c| c.extra_reasons())
            .unwrap_or(&[])
    }
}
