//! A stub provider whose rules fail, skip or flake on demand, run through the
//! CLI.

use super::*;

/// A provider that refuses every Get as Permanent and accepts every Delete: it passes
/// GET-MALFORMED, GET-UNCONFIGURED and DEL-UNCONFIGURED and fails DEL-MALFORMED. With
/// `flaky`, every other testbed's Get answers NotFound instead, so GET-UNCONFIGURED
/// passes and fails by turns.
#[derive(Default)]
pub(super) struct Stub {
    pub(super) flaky: bool,
    pub(super) opened: std::sync::atomic::AtomicU32,
    pub(super) get_delay: Duration,
    /// Every Get answers QuotaExceeded.
    pub(super) quota: bool,
    pub(super) real: bool,
    /// Hooks the fixture declares though its testbeds hand out none.
    pub(super) lies_about: Vec<Hook>,
    /// Every Get panics.
    pub(super) panics: bool,
}

impl Stub {
    pub(super) fn new(flaky: bool) -> Arc<Stub> {
        Arc::new(Stub {
            flaky,
            ..Stub::default()
        })
    }
}

struct StubProvider {
    not_found: bool,
    get_delay: Duration,
    quota: bool,
    panics: bool,
}

impl conformance::Provider for StubProvider {
    fn name(&self) -> &str {
        "stub"
    }
    fn profile(&self) -> Profile {
        Profile::builder().build().unwrap()
    }
    fn create<'a>(
        &'a self,
        ctx: &'a conformance::Ctx,
        req: &'a conformance::CreateRequest,
    ) -> BoxFuture<'a, conformance::Result<conformance::ProviderId>> {
        Box::pin(async move {
            // The leak the log files are scanned for, in the operation's span.
            let _in = ctx.span().enter();
            tracing::debug!(target: "stub", "creating with {}", req.cloud_init.expose());
            Err(conformance::Error::permanent(
                "stub",
                conformance::Op::Create,
                "no",
            ))
        })
    }
    fn get<'a>(
        &'a self,
        _: &'a conformance::Ctx,
        _: &'a conformance::ProviderId,
    ) -> BoxFuture<'a, conformance::Result<conformance::Instance>> {
        Box::pin(async move {
            tokio::time::sleep(self.get_delay).await;
            assert!(!self.panics, "the stub's Get panics on purpose");
            Err(if self.quota {
                conformance::Error::quota(
                    "stub",
                    conformance::Op::Get,
                    conformance::Quota {
                        what: "memory on host-a".into(),
                        available: 0,
                        needed: 1,
                    },
                )
            } else if self.not_found {
                conformance::Error::not_found("stub", conformance::Op::Get, "nothing")
            } else {
                conformance::Error::permanent("stub", conformance::Op::Get, "refused")
            })
        })
    }
    fn delete<'a>(
        &'a self,
        _: &'a conformance::Ctx,
        _: &'a conformance::ProviderId,
    ) -> BoxFuture<'a, conformance::Result<()>> {
        Box::pin(async { Ok(()) })
    }
    fn list_by_tag<'a>(
        &'a self,
        _: &'a conformance::Ctx,
        _: &'a str,
    ) -> BoxFuture<'a, conformance::Result<conformance::Listing>> {
        Box::pin(async { Ok(conformance::Listing::default()) })
    }
}

struct StubTestbed {
    provider: Arc<StubProvider>,
}

impl Testbed for StubTestbed {
    fn provider(&self) -> Arc<dyn conformance::Provider> {
        self.provider.clone()
    }
    fn restart(&self) -> HookResult<Arc<dyn conformance::Provider>> {
        Ok(self.provider.clone())
    }
    fn request(&self, name: &str, tag: &str, location: &Location) -> conformance::CreateRequest {
        conformance::CreateRequest {
            name: name.into(),
            uid: "u".into(),
            tag: tag.into(),
            placement: location.placement.clone(),
            image: None,
            cloud_init: conformance::CloudInit::new("#cloud-config\n"),
        }
    }
    fn id_for(&self, location: &str, name: &str) -> conformance::ProviderId {
        conformance::ProviderId::new(format!("{location}/{name}"))
    }
    fn location_of(&self, _: &conformance::ProviderId) -> Option<String> {
        None
    }
    fn malformed_ids(&self) -> Vec<String> {
        vec![String::new(), "no-slash".into()]
    }
    fn unconfigured_id(&self, name: &str) -> conformance::ProviderId {
        conformance::ProviderId::new(format!("elsewhere/{name}"))
    }
}

impl Fixture for Stub {
    fn provider_name(&self) -> String {
        "stub".into()
    }
    fn profile(&self) -> Profile {
        Profile::builder().build().unwrap()
    }
    fn hooks(&self) -> Vec<Hook> {
        self.lies_about.clone()
    }
    fn locations(&self) -> Vec<Location> {
        vec![Location {
            name: "only".into(),
            placement: "zone-a".into(),
        }]
    }
    fn has_checker(&self) -> bool {
        false
    }
    fn is_real_backend(&self) -> bool {
        self.real
    }
    fn environment(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("backend".to_owned(), "stub-cloud eu-1".to_owned())])
    }
    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        let n = self
            .opened
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let not_found = self.flaky && n % 2 == 1;
        Box::pin(async move {
            Ok(Box::new(StubTestbed {
                provider: Arc::new(StubProvider {
                    not_found,
                    get_delay: self.get_delay,
                    quota: self.quota,
                    panics: self.panics,
                }),
            }) as Box<dyn Testbed>)
        })
    }
}

/// Runs the CLI against `fixture` with `args` into `out`; returns the exit code and
/// every format as text (JSON parsed and validated against the schema).
pub(super) fn run_stub(
    fixture: Arc<Stub>,
    out: &Path,
    args: &[&str],
) -> (u8, Value, String, String, String) {
    let mut all = vec!["conformance", "--seed", "5", "--cases", "2", "--out"];
    all.push(out.to_str().unwrap());
    all.extend_from_slice(args);
    let code = cli::main_with(fixture, all);
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    let json: Value = serde_json::from_str(&read("report.json")).unwrap();
    validate(&json).unwrap();
    let junit = read("junit.xml");
    quick_junit::Report::deserialize_from_str(&junit).expect("valid junit");
    (code, json, junit, read("report.md"), read("report.html"))
}

pub(super) fn result_json<'a>(json: &'a Value, id: &str) -> &'a Value {
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in the report"))
}

pub(super) const STUB_RULES: &str = "GET-MALFORMED,GET-UNCONFIGURED,DEL-MALFORMED,DEL-UNCONFIGURED";
