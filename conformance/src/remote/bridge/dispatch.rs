//! Calls on a testbed's connection: the blocking and async round trips, and
//! how a failed call becomes a hook error or breaks the testbed.

use super::*;

/// What a testbed and its providers share: the connection and the first failure.
pub(super) struct Shared {
    pub(super) conn: Arc<Conn>,
    pub(super) testbed: TestbedHandle,
    pub(super) hook_timeout: Duration,
    pub(super) grace: Duration,
    pub(super) hooks: Vec<Hook>,
    pub(super) failure: Mutex<Option<String>>,
}

impl Shared {
    pub(super) fn note(&self, method: &str, e: &CallError) -> String {
        let text = failure_text(&self.conn, method, e);
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(text.clone());
        }
        text
    }

    /// A hook's answer: a hook error stays one; anything else is a protocol failure.
    fn hook<T>(&self, method: &str, r: Result<T, CallError>) -> HookResult<T> {
        match r {
            Ok(v) => Ok(v),
            Err(CallError::Rpc {
                code: HOOK_FAILED,
                message,
            }) => Err(HookError(message)),
            Err(e) => Err(HookError(self.note(method, &e))),
        }
    }

    pub(super) fn blocking<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> HookResult<T> {
        let r = self.conn.call_blocking(method, params, self.hook_timeout);
        self.hook(method, r)
    }

    pub(super) async fn call<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> HookResult<T> {
        let r = self.conn.call(method, params, self.hook_timeout).await;
        self.hook(method, r)
    }

    /// A call of a method added to version 1 after its first release: a provider
    /// that predates it answers "unknown method", which is `None` here (the hook's
    /// default), not a protocol failure.
    pub(super) async fn call_added<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> HookResult<Option<T>> {
        match self.conn.call(method, params, self.hook_timeout).await {
            Err(CallError::Rpc {
                code: METHOD_NOT_FOUND,
                ..
            }) => Ok(None),
            r => self.hook(method, r).map(Some),
        }
    }

    /// A synchronous method that cannot return an error: a failure is recorded (the
    /// rule becomes an Error) and `fallback` stands in.
    pub(super) fn infallible<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        fallback: T,
    ) -> T {
        match self.blocking(method, params) {
            Ok(v) => v,
            Err(HookError(e)) => {
                let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
                if f.is_none() {
                    *f = Some(format!("{method} failed: {e}"));
                }
                fallback
            }
        }
    }

    pub(super) fn tb(&self) -> TestbedParams {
        TestbedParams {
            testbed: self.testbed,
        }
    }

    pub(super) fn loc(&self, location: &str) -> LocationParams {
        LocationParams {
            testbed: self.testbed,
            location: location.to_owned(),
        }
    }

    pub(super) fn name(&self, location: &str, name: &str) -> NameParams {
        NameParams {
            testbed: self.testbed,
            location: location.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// What a failed call makes of its testbed's rule: the connection's failure first
/// (every rule open on it cites the same cause), or the call's own. A request left
/// unanswered past the hook timeout wedges the connection: it is closed, which ends
/// a process the suite started, and the next testbed connects again.
pub(super) fn failure_text(conn: &Conn, method: &str, e: &CallError) -> String {
    match e {
        CallError::NoReply(why) => {
            conn.fail_wedged(format!(
                "the provider is wedged: {why}; its connection was closed"
            ));
        }
        CallError::Rpc { .. } => {
            return format!("the provider broke the protocol in {method}: {e}");
        }
        CallError::Protocol(_) => {}
    }
    match conn.failure() {
        Some(f) => format!("the connection to the provider failed: {f} ({method} was pending)"),
        None => format!("the provider broke the protocol in {method}: {e}"),
    }
}

/// Runs a blocking wait; on a multi-thread runtime's worker it tells the runtime first.
pub(super) fn block<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
