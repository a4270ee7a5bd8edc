//! The provider and its checker in the provider process.

use super::*;

/// A provider instance in the provider process.
pub(super) struct RemoteProvider {
    shared: Arc<Shared>,
    handle: ProviderHandle,
    name: String,
    profile: Profile,
    extra_reasons: Option<&'static [&'static str]>,
}

impl RemoteProvider {
    pub(super) fn new(shared: Arc<Shared>, info: ProviderInfo) -> Result<RemoteProvider, String> {
        let profile = info.profile.to_profile()?;
        Ok(RemoteProvider {
            shared,
            handle: info.provider,
            name: info.name,
            profile,
            extra_reasons: info.checker.map(|c| interned(c.extra_reasons)),
        })
    }

    /// An operation's outcome; anything that is not one is a protocol failure,
    /// reported to the check as Transient (the rule is an Error anyway).
    async fn op<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        op: Op,
        params: serde_json::Value,
        ctx: &Ctx,
    ) -> Result<T, Error> {
        let r: Result<OpOutcome<T>, CallError> = self
            .shared
            .conn
            .call_op(method, params, ctx, self.shared.grace)
            .await;
        match r {
            Ok(OpOutcome::Ok(v)) => Ok(v),
            Ok(OpOutcome::Error(e)) => Err(e.to_error().unwrap_or_else(|why| {
                let why = self.shared.note(method, &CallError::Protocol(why));
                Error::transient(&self.name, op, why)
            })),
            Err(CallError::NoReply(why)) => Err(Error::transient(&self.name, op, why)),
            // As in process: the call panics where the suite made it.
            Err(CallError::Rpc {
                code: PROVIDER_PANICKED,
                message,
            }) => panic!("the provider panicked in {method}: {message}"),
            Err(e) => {
                let why = self.shared.note(method, &e);
                Err(Error::transient(&self.name, op, why))
            }
        }
    }

    fn broken(&self, method: &str, op: Op, why: String) -> Error {
        let why = self.shared.note(method, &CallError::Protocol(why));
        Error::transient(&self.name, op, why)
    }
}

/// A leaked, shared copy of a checker's extra reasons (`Checker::extra_reasons`
/// returns a static slice); each distinct list is leaked once.
fn interned(reasons: Vec<String>) -> &'static [&'static str] {
    static SEEN: OnceLock<Mutex<HashMap<Vec<String>, &'static [&'static str]>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(s) = seen.get(&reasons) {
        return s;
    }
    let leaked: Vec<&'static str> = reasons
        .iter()
        .map(|r| &*Box::leak(r.clone().into_boxed_str()))
        .collect();
    let slice: &'static [&'static str] = Box::leak(leaked.into_boxed_slice());
    seen.insert(reasons, slice);
    slice
}

impl Provider for RemoteProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn profile(&self) -> Profile {
        self.profile
    }

    fn create<'a>(
        &'a self,
        ctx: &'a Ctx,
        req: &'a CreateRequest,
    ) -> BoxFuture<'a, crate::Result<ProviderId>> {
        Box::pin(async move {
            let params = json!({
                "provider": self.handle,
                "request": WireCreateRequest::from(req),
            });
            let r: IdResult = self.op("provider/create", Op::Create, params, ctx).await?;
            Ok(ProviderId::new(r.id))
        })
    }

    fn get<'a>(
        &'a self,
        ctx: &'a Ctx,
        id: &'a ProviderId,
    ) -> BoxFuture<'a, crate::Result<Instance>> {
        Box::pin(async move {
            let params = json!({ "provider": self.handle, "id": id.as_str() });
            let r: WireInstance = self.op("provider/get", Op::Get, params, ctx).await?;
            r.to_instance()
                .map_err(|why| self.broken("provider/get", Op::Get, why))
        })
    }

    fn delete<'a>(&'a self, ctx: &'a Ctx, id: &'a ProviderId) -> BoxFuture<'a, crate::Result<()>> {
        Box::pin(async move {
            let params = json!({ "provider": self.handle, "id": id.as_str() });
            let _: Empty = self.op("provider/delete", Op::Delete, params, ctx).await?;
            Ok(())
        })
    }

    fn list_by_tag<'a>(
        &'a self,
        ctx: &'a Ctx,
        tag: &'a str,
    ) -> BoxFuture<'a, crate::Result<Listing>> {
        Box::pin(async move {
            let params = json!({ "provider": self.handle, "tag": tag });
            let r: WireListing = self
                .op("provider/list_by_tag", Op::ListByTag, params, ctx)
                .await?;
            r.to_listing()
                .map_err(|why| self.broken("provider/list_by_tag", Op::ListByTag, why))
        })
    }

    fn checker(&self) -> Option<&dyn Checker> {
        self.extra_reasons.map(|_| self as &dyn Checker)
    }
}

impl Checker for RemoteProvider {
    fn check<'a>(&'a self, ctx: &'a Ctx) -> BoxFuture<'a, Vec<HostHealth>> {
        Box::pin(async move {
            let params = json!({ "provider": self.handle });
            let r: Result<proto::CheckResult, CallError> = self
                .shared
                .conn
                .call_op("checker/check", params, ctx, self.shared.grace)
                .await;
            match r {
                Ok(r) => r.health.into_iter().map(HostHealth::from).collect(),
                // A checker that ignores its deadline reports nothing: CHK-DEADLINE
                // judges that.
                Err(CallError::NoReply(_)) => Vec::new(),
                Err(CallError::Rpc {
                    code: PROVIDER_PANICKED,
                    message,
                }) => panic!("the checker panicked in checker/check: {message}"),
                Err(e) => {
                    self.shared.note("checker/check", &e);
                    Vec::new()
                }
            }
        })
    }

    fn extra_reasons(&self) -> &'static [&'static str] {
        self.extra_reasons.unwrap_or(&[])
    }
}
