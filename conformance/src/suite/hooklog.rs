//! The suite's own actions in the rule's log: a testbed wrapper that logs every hook
//! call that changes or inspects the backend (its arguments and outcome), every
//! restart, and the first time a fault is seen fired, as `conformance::suite` events
//! under the rule's span, so `logs/<RULE>.log` tells what the suite did between the
//! provider's lines. Reads the suite polls (`fired`, `calls`, `dials`) are not logged,
//! save a fault's first `fired`. Hook arguments carry no payload; the log writer
//! redacts every line anyway.

use std::collections::HashSet;
use std::fmt::Debug;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::fixture::{
    AccessBreak, BackendCall, Capacity, FaultId, FaultSpec, Faults, HookResult, Inventory,
    Location, Observation, Part, Plant, Planting, Power, Reachability, Resource, Rotation,
    StateControl, Testbed, Verbosity,
};
use tracing::Span;

use crate::{BoxFuture, CreateRequest, Provider, ProviderId};

/// The target of the suite's own log lines.
pub const TARGET: &str = "conformance::suite";

/// `inner`, every hook call it answers logged under `span` (the rule's).
pub(crate) fn logged(inner: Box<dyn Testbed>, span: Span) -> Box<dyn Testbed> {
    Box::new(Logged {
        inner,
        span,
        fired: Mutex::default(),
    })
}

struct Logged {
    inner: Box<dyn Testbed>,
    span: Span,
    /// The faults already logged as fired.
    fired: Mutex<HashSet<FaultId>>,
}

fn line(span: &Span, what: impl AsRef<str>) {
    tracing::info!(target: TARGET, parent: span, "{}", what.as_ref());
}

/// A hook result, short.
fn outcome<T: Debug>(r: &HookResult<T>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("failed: {e}"),
    }
}

/// Logs `call`, runs `fut`, logs its outcome.
async fn logging<T: Debug>(
    span: &Span,
    call: String,
    fut: BoxFuture<'_, HookResult<T>>,
) -> HookResult<T> {
    line(span, format!("hook {call}"));
    let r = fut.await;
    line(span, format!("hook {call} -> {}", outcome(&r)));
    r
}

#[deny(clippy::missing_trait_methods)]
impl Testbed for Logged {
    fn provider(&self) -> Arc<dyn Provider> {
        self.inner.provider()
    }
    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        line(
            &self.span,
            "testbed restart: a fresh provider over the same backend",
        );
        self.inner.restart()
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
        self.inner.inventory().map(|_| self as &dyn Inventory)
    }
    fn planting(&self) -> Option<&dyn Planting> {
        self.inner.planting().map(|_| self as &dyn Planting)
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        self.inner
            .state_control()
            .map(|_| self as &dyn StateControl)
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        self.inner.capacity().map(|_| self as &dyn Capacity)
    }
    fn faults(&self) -> Option<&dyn Faults> {
        self.inner.faults().map(|_| self as &dyn Faults)
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        self.inner.rotation().map(|_| self as &dyn Rotation)
    }
    fn observation(&self) -> Option<&dyn Observation> {
        self.inner.observation().map(|_| self as &dyn Observation)
    }
    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        self.inner.teardown()
    }
    fn harness_failure(&self) -> Option<String> {
        self.inner.harness_failure()
    }
}

// Each hook below is reached only through the accessor above, which hands it out
// only when the inner testbed has it.
const PROMISED: &str = "a hook handed out only when the inner testbed has it";

#[deny(clippy::missing_trait_methods)]
impl Inventory for Logged {
    fn resources<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<Vec<Resource>>> {
        self.inner.inventory().expect(PROMISED).resources(location)
    }
}

#[deny(clippy::missing_trait_methods)]
impl Planting for Logged {
    fn plant<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        what: Plant,
    ) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("planting/plant {location} {name} {what:?}");
        let h = self.inner.planting().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.plant(location, name, what)))
    }
    fn inspect<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, HookResult<Option<String>>> {
        let call = format!("planting/inspect {location} {name}");
        let h = self.inner.planting().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.inspect(location, name)))
    }
    fn remove_part<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        part: Part,
    ) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("planting/remove_part {location} {name} {part:?}");
        let h = self.inner.planting().expect(PROMISED);
        Box::pin(logging(
            &self.span,
            call,
            h.remove_part(location, name, part),
        ))
    }
    fn remove<'a>(&'a self, location: &'a str, name: &'a str) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("planting/remove {location} {name}");
        let h = self.inner.planting().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.remove(location, name)))
    }
}

#[deny(clippy::missing_trait_methods)]
impl StateControl for Logged {
    fn set_power<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        power: Power,
    ) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("state/set_power {location} {name} {power:?}");
        let h = self.inner.state_control().expect(PROMISED);
        Box::pin(logging(
            &self.span,
            call,
            h.set_power(location, name, power),
        ))
    }
    fn set_addresses<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        addrs: Vec<IpAddr>,
    ) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("state/set_addresses {location} {name} {addrs:?}");
        let h = self.inner.state_control().expect(PROMISED);
        Box::pin(logging(
            &self.span,
            call,
            h.set_addresses(location, name, addrs),
        ))
    }
    fn fail_address_lookup<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        fail: bool,
    ) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("state/fail_address_lookup {location} {name} {fail}");
        let h = self.inner.state_control().expect(PROMISED);
        Box::pin(logging(
            &self.span,
            call,
            h.fail_address_lookup(location, name, fail),
        ))
    }
    fn hold_boot(&self, hold: bool) -> BoxFuture<'_, HookResult<()>> {
        let call = format!("state/hold_boot {hold}");
        let h = self.inner.state_control().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.hold_boot(hold)))
    }
}

#[deny(clippy::missing_trait_methods)]
impl Capacity for Logged {
    fn set_free<'a>(
        &'a self,
        location: &'a str,
        bytes: Option<u64>,
    ) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("capacity/set_free {location} {bytes:?}");
        let h = self.inner.capacity().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.set_free(location, bytes)))
    }
}

#[deny(clippy::missing_trait_methods)]
impl Faults for Logged {
    fn inject(&self, spec: FaultSpec) -> HookResult<FaultId> {
        let call = format!("faults/inject {spec:?}");
        let r = self.inner.faults().expect(PROMISED).inject(spec);
        line(&self.span, format!("hook {call} -> {}", outcome(&r)));
        r
    }
    fn fired(&self, id: FaultId) -> bool {
        let fired = self.inner.faults().expect(PROMISED).fired(id);
        if fired && self.fired.lock().unwrap().insert(id) {
            line(&self.span, format!("fault {} fired", id.0));
        }
        fired
    }
    fn clear(&self) {
        line(&self.span, "hook faults/clear");
        self.inner.faults().expect(PROMISED).clear();
    }
    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("faults/set_reachability {location} {r:?}");
        let h = self.inner.faults().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.set_reachability(location, r)))
    }
    fn cause<'a>(&'a self, location: &'a str, reason: &'a str) -> BoxFuture<'a, HookResult<bool>> {
        let call = format!("faults/cause {location} {reason}");
        let h = self.inner.faults().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.cause(location, reason)))
    }
    fn undo_cause<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("faults/undo_cause {location}");
        let h = self.inner.faults().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.undo_cause(location)))
    }
}

#[deny(clippy::missing_trait_methods)]
impl Rotation for Logged {
    fn rotate<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("rotation/rotate {location}");
        let h = self.inner.rotation().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.rotate(location)))
    }
    fn break_access<'a>(
        &'a self,
        location: &'a str,
        how: AccessBreak,
    ) -> BoxFuture<'a, HookResult<bool>> {
        let call = format!("rotation/break_access {location} {}", how.as_str());
        let h = self.inner.rotation().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.break_access(location, how)))
    }
    fn restore_access<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        let call = format!("rotation/restore_access {location}");
        let h = self.inner.rotation().expect(PROMISED);
        Box::pin(logging(&self.span, call, h.restore_access(location)))
    }
}

#[deny(clippy::missing_trait_methods)]
impl Observation for Logged {
    fn calls(&self) -> Vec<BackendCall> {
        self.inner.observation().expect(PROMISED).calls()
    }
    fn dials(&self, location: &str) -> u64 {
        self.inner.observation().expect(PROMISED).dials(location)
    }
    fn set_verbosity(&self, v: Verbosity) {
        line(&self.span, format!("hook observation/set_verbosity {v:?}"));
        self.inner.observation().expect(PROMISED).set_verbosity(v);
    }
}
