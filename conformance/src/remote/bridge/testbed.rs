//! The testbed in the provider process, and each of its optional hooks.

use super::*;

/// A testbed in the provider process.
pub(super) struct RemoteTestbed {
    pub(super) shared: Arc<Shared>,
    pub(super) provider: Arc<RemoteProvider>,
    /// Every backend call fetched so far; `observation/calls` fetches only the rest.
    pub(super) calls: Mutex<Vec<BackendCall>>,
}

impl RemoteTestbed {
    fn has(&self, h: Hook) -> bool {
        self.shared.hooks.contains(&h)
    }
}

impl Testbed for RemoteTestbed {
    fn provider(&self) -> Arc<dyn Provider> {
        self.provider.clone()
    }

    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        let info: ProviderInfo = self.shared.blocking("testbed/restart", &self.shared.tb())?;
        let p = RemoteProvider::new(self.shared.clone(), info)
            .map_err(|e| HookError(self.shared.note("testbed/restart", &CallError::Protocol(e))))?;
        Ok(Arc::new(p))
    }

    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest {
        let params = RequestParams {
            testbed: self.shared.testbed,
            name: name.to_owned(),
            tag: tag.to_owned(),
            location: location.into(),
        };
        let fallback = WireCreateRequest {
            name: name.to_owned(),
            uid: "unknown".into(),
            tag: tag.to_owned(),
            placement: location.placement.clone(),
            image: None,
            cloud_init: String::new(),
        };
        self.shared
            .infallible("testbed/request", &params, fallback)
            .into()
    }

    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        let params = IdForParams {
            testbed: self.shared.testbed,
            location: location.to_owned(),
            name: name.to_owned(),
        };
        let r = self
            .shared
            .infallible("testbed/id_for", &params, IdResult { id: String::new() });
        ProviderId::new(r.id)
    }

    fn location_of(&self, id: &ProviderId) -> Option<String> {
        let params = LocationOfParams {
            testbed: self.shared.testbed,
            id: id.as_str().to_owned(),
        };
        self.shared
            .infallible(
                "testbed/location_of",
                &params,
                LocationOfResult { location: None },
            )
            .location
    }

    fn malformed_ids(&self) -> Vec<String> {
        self.shared
            .infallible(
                "testbed/malformed_ids",
                &self.shared.tb(),
                MalformedIdsResult { ids: Vec::new() },
            )
            .ids
    }

    fn unconfigured_id(&self, name: &str) -> ProviderId {
        let params = UnconfiguredIdParams {
            testbed: self.shared.testbed,
            name: name.to_owned(),
        };
        let r = self.shared.infallible(
            "testbed/unconfigured_id",
            &params,
            IdResult { id: String::new() },
        );
        ProviderId::new(r.id)
    }

    fn unknown_placement(&self) -> String {
        self.shared
            .infallible(
                "testbed/unknown_placement",
                &self.shared.tb(),
                UnknownPlacementResult {
                    placement: "no-such-zone".into(),
                },
            )
            .placement
    }

    fn inventory(&self) -> Option<&dyn Inventory> {
        self.has(Hook::Inventory).then_some(self as &dyn Inventory)
    }
    fn planting(&self) -> Option<&dyn Planting> {
        self.has(Hook::Planting).then_some(self as &dyn Planting)
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        self.has(Hook::StateControl)
            .then_some(self as &dyn StateControl)
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        self.has(Hook::Capacity).then_some(self as &dyn Capacity)
    }
    fn faults(&self) -> Option<&dyn Faults> {
        self.has(Hook::Faults).then_some(self as &dyn Faults)
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        self.has(Hook::Rotation).then_some(self as &dyn Rotation)
    }
    fn observation(&self) -> Option<&dyn Observation> {
        self.has(Hook::Observation)
            .then_some(self as &dyn Observation)
    }

    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async move {
            let _: Empty = self
                .shared
                .call("testbed/teardown", &self.shared.tb())
                .await?;
            Ok(())
        })
    }

    fn harness_failure(&self) -> Option<String> {
        let own = self
            .shared
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        own.or_else(|| {
            self.shared
                .conn
                .failure()
                .map(|f| format!("the connection to the provider failed: {f}"))
        })
    }
}

impl Inventory for RemoteTestbed {
    fn resources<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<Vec<Resource>>> {
        Box::pin(async move {
            let r: ResourcesResult = self
                .shared
                .call("inventory/resources", &self.shared.loc(location))
                .await?;
            Ok(r.resources.into_iter().map(Resource::from).collect())
        })
    }
}

impl Planting for RemoteTestbed {
    fn plant<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        what: Plant,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let params = PlantParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                name: name.to_owned(),
                what: what.into(),
            };
            let _: Empty = self.shared.call("planting/plant", &params).await?;
            Ok(())
        })
    }

    fn inspect<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, HookResult<Option<String>>> {
        Box::pin(async move {
            let r: InspectResult = self
                .shared
                .call("planting/inspect", &self.shared.name(location, name))
                .await?;
            Ok(r.fingerprint)
        })
    }

    fn remove_part<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        part: Part,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let params = RemovePartParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                name: name.to_owned(),
                part: part.into(),
            };
            let _: Empty = self.shared.call("planting/remove_part", &params).await?;
            Ok(())
        })
    }

    fn remove<'a>(&'a self, location: &'a str, name: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let _: Empty = self
                .shared
                .call("planting/remove", &self.shared.name(location, name))
                .await?;
            Ok(())
        })
    }
}

impl StateControl for RemoteTestbed {
    fn set_power<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        power: Power,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let params = SetPowerParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                name: name.to_owned(),
                power: power.into(),
            };
            let _: Empty = self.shared.call("state_control/set_power", &params).await?;
            Ok(())
        })
    }

    fn set_addresses<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        addrs: Vec<IpAddr>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let params = SetAddressesParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                name: name.to_owned(),
                addrs: addrs.iter().map(|a| a.to_string()).collect(),
            };
            let _: Empty = self
                .shared
                .call("state_control/set_addresses", &params)
                .await?;
            Ok(())
        })
    }

    fn fail_address_lookup<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        fail: bool,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let params = FailAddressLookupParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                name: name.to_owned(),
                fail,
            };
            let _: Empty = self
                .shared
                .call("state_control/fail_address_lookup", &params)
                .await?;
            Ok(())
        })
    }

    fn hold_boot(&self, hold: bool) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async move {
            let params = HoldBootParams {
                testbed: self.shared.testbed,
                hold,
            };
            let _: Empty = self.shared.call("state_control/hold_boot", &params).await?;
            Ok(())
        })
    }
}

impl Capacity for RemoteTestbed {
    fn set_free<'a>(
        &'a self,
        location: &'a str,
        bytes: Option<u64>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let params = SetFreeParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                bytes,
            };
            let _: Empty = self.shared.call("capacity/set_free", &params).await?;
            Ok(())
        })
    }
}

impl Faults for RemoteTestbed {
    fn inject(&self, spec: FaultSpec) -> HookResult<FaultId> {
        let params = InjectParams {
            testbed: self.shared.testbed,
            spec: spec.into(),
        };
        let r: InjectResult = self.shared.blocking("faults/inject", &params)?;
        Ok(FaultId(r.id))
    }

    fn fired(&self, id: FaultId) -> bool {
        let params = FiredParams {
            testbed: self.shared.testbed,
            id: id.0,
        };
        self.shared
            .infallible("faults/fired", &params, FiredResult { fired: false })
            .fired
    }

    fn clear(&self) {
        let _: Empty = self
            .shared
            .infallible("faults/clear", &self.shared.tb(), Empty {});
    }

    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let params = SetReachabilityParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                reachability: r.into(),
            };
            let _: Empty = self.shared.call("faults/set_reachability", &params).await?;
            Ok(())
        })
    }

    fn cause<'a>(&'a self, location: &'a str, reason: &'a str) -> BoxFuture<'a, HookResult<bool>> {
        Box::pin(async move {
            let params = CauseParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                reason: reason.to_owned(),
            };
            let r: Option<CauseResult> = self.shared.call_added("faults/cause", &params).await?;
            Ok(r.is_some_and(|r| r.produced))
        })
    }

    fn undo_cause<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let _: Option<Empty> = self
                .shared
                .call_added("faults/undo_cause", &self.shared.loc(location))
                .await?;
            Ok(())
        })
    }
}

impl Rotation for RemoteTestbed {
    fn rotate<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let _: Empty = self
                .shared
                .call("rotation/rotate", &self.shared.loc(location))
                .await?;
            Ok(())
        })
    }

    fn break_access<'a>(
        &'a self,
        location: &'a str,
        how: AccessBreak,
    ) -> BoxFuture<'a, HookResult<bool>> {
        Box::pin(async move {
            let params = BreakAccessParams {
                testbed: self.shared.testbed,
                location: location.to_owned(),
                how: how.into(),
            };
            let r: BreakAccessResult = self.shared.call("rotation/break_access", &params).await?;
            Ok(r.produced)
        })
    }

    fn restore_access<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let _: Empty = self
                .shared
                .call("rotation/restore_access", &self.shared.loc(location))
                .await?;
            Ok(())
        })
    }
}

impl Observation for RemoteTestbed {
    fn calls(&self) -> Vec<BackendCall> {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let params = CallsParams {
            testbed: self.shared.testbed,
            since: calls.len() as u64,
        };
        let r = self.shared.infallible(
            "observation/calls",
            &params,
            CallsResult { calls: Vec::new() },
        );
        calls.extend(r.calls.into_iter().map(BackendCall::from));
        calls.clone()
    }

    fn dials(&self, location: &str) -> u64 {
        self.shared
            .infallible(
                "observation/dials",
                &self.shared.loc(location),
                DialsResult { dials: 0 },
            )
            .dials
    }

    fn set_verbosity(&self, v: Verbosity) {
        let params = SetVerbosityParams {
            testbed: self.shared.testbed,
            verbosity: v.into(),
        };
        let _: Empty = self
            .shared
            .infallible("observation/set_verbosity", &params, Empty {});
    }
}
