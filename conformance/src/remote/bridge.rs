//! The bridge: a [`Fixture`] whose provider, testbeds and hooks live in another
//! process, reached over the process protocol (a child's stdin and stdout, or a Unix
//! socket).
//!
//! The bridge answers nothing for the provider. Its own I/O runs on a small runtime
//! of its own, so the fixture API's synchronous methods can block for their round
//! trip from any thread. A protocol failure breaks the connection, fails every call
//! on it at once, and makes the rule of every testbed on it an Error naming the
//! failure ([`Testbed::harness_failure`]); the next testbed starts the process again.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite};

use super::conn::{CallError, Conn, STDERR_TARGET};
use super::proto::{self, *};
use crate::fixture::{
    AccessBreak, BackendCall, Capacity, FaultId, FaultSpec, Faults, Fixture, Hook, HookError,
    HookResult, Inventory, Location, Observation, Part, Plant, Planting, Power, Reachability,
    Resource, Rotation, StateControl, Testbed, Verbosity,
};
use crate::suite::cx::Timing;
use crate::{
    BoxFuture, Checker, CreateRequest, Ctx, Error, HostHealth, Instance, Listing, Op, Profile,
    Provider, ProviderId,
};

/// How the bridge reaches the provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A command line run with `sh -c`; the protocol runs over its stdin and stdout.
    Command(String),
    /// A Unix socket a provider daemon listens on.
    Socket(PathBuf),
}

/// Limits and files of a bridge.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// How long `initialize` may take.
    pub init_timeout: Duration,
    /// How long any call other than a provider operation may take.
    pub hook_timeout: Duration,
    /// How long after a deadline or a cancel the bridge waits for the provider's own
    /// answer; `None`: twice the suite's slack (by whether the backend is real).
    pub grace: Option<Duration>,
    /// Where the provider's stderr goes (appended); `None`: kept in memory (up to
    /// 1 MiB) until [`RemoteFixture::set_stderr_log`] names a file. Every line is also
    /// recorded at TRACE outside any span, where CRE-SECRET's scan sees it.
    pub stderr_log: Option<PathBuf>,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            init_timeout: Duration::from_secs(20),
            hook_timeout: Duration::from_secs(30),
            grace: None,
            stderr_log: None,
        }
    }
}

/// A connection's two ends and, for a child process, how to ask whether it exited.
pub struct Link {
    /// What the provider writes.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// What the provider reads.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// Says how the process ended, once it did.
    pub exit_status: Option<ExitStatus>,
}

/// Says how a provider process ended, once it did.
pub type ExitStatus = Box<dyn FnMut() -> Option<String> + Send>;

/// Makes a new connection (a new process, or a new socket connection).
pub type Connector = Arc<dyn Fn() -> BoxFuture<'static, io::Result<Link>> + Send + Sync>;

/// A [`Fixture`] over the process protocol.
pub struct RemoteFixture {
    rt: Option<tokio::runtime::Runtime>,
    connector: Connector,
    opts: RemoteOptions,
    grace: Duration,
    facts: InitializeResult,
    profile: Profile,
    conn: tokio::sync::Mutex<Arc<Conn>>,
    stderr: Option<Arc<StderrLog>>,
}

/// Where the provider's stderr lines go.
struct StderrLog {
    path: Mutex<Option<PathBuf>>,
    held: Mutex<(Vec<String>, usize)>,
}

impl StderrLog {
    /// Appends the held lines and `line` to the file, or holds them without one.
    fn write(&self, line: Option<String>) {
        let path = self.path.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = line
            && held.1 + l.len() <= 1 << 20
        {
            held.1 += l.len();
            held.0.push(l);
        }
        let Some(path) = path else { return };
        if held.0.is_empty() {
            return;
        }
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        if let Ok(mut f) = file {
            use std::io::Write as _;
            for l in held.0.drain(..) {
                let _ = writeln!(f, "{l}");
            }
            held.1 = 0;
        }
    }
}

impl Drop for RemoteFixture {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl std::fmt::Debug for RemoteFixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteFixture")
            .field("provider", &self.facts.provider_name)
            .finish_non_exhaustive()
    }
}

impl RemoteFixture {
    /// Connects to `endpoint` and initializes; blocks until the provider answered.
    pub fn new(endpoint: Endpoint, opts: RemoteOptions) -> Result<RemoteFixture, String> {
        let log = Arc::new(StderrLog {
            path: Mutex::new(opts.stderr_log.clone()),
            held: Mutex::default(),
        });
        let held = log.clone();
        let connector: Connector = match endpoint {
            Endpoint::Command(cmd) => Arc::new(move || {
                let (cmd, log) = (cmd.clone(), held.clone());
                Box::pin(async move { spawn_command(&cmd, log) })
            }),
            Endpoint::Socket(path) => Arc::new(move || {
                let path = path.clone();
                Box::pin(async move {
                    let s = tokio::net::UnixStream::connect(&path).await.map_err(|e| {
                        io::Error::new(e.kind(), format!("connecting to {}: {e}", path.display()))
                    })?;
                    let (r, w) = s.into_split();
                    Ok(Link {
                        reader: Box::new(r),
                        writer: Box::new(w),
                        exit_status: None,
                    })
                })
            }),
        };
        let mut f = RemoteFixture::with_connector(connector, opts)?;
        f.stderr = Some(log);
        Ok(f)
    }

    /// Sends the provider's stderr to `path` (appended) from now on, with the lines
    /// held so far first.
    pub fn set_stderr_log(&self, path: PathBuf) {
        if let Some(log) = &self.stderr {
            *log.path.lock().unwrap_or_else(|e| e.into_inner()) = Some(path);
            log.write(None);
        }
    }

    /// Connects through `connector` (any byte stream) and initializes; blocks until
    /// the provider answered.
    pub fn with_connector(
        connector: Connector,
        opts: RemoteOptions,
    ) -> Result<RemoteFixture, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("conformance-remote")
            .enable_all()
            .build()
            .map_err(|e| format!("failed to start the bridge's runtime: {e}"))?;
        let (tx, rx) = std::sync::mpsc::channel();
        let (c, timeout) = (connector.clone(), opts.init_timeout);
        rt.spawn(async move {
            let _ = tx.send(connect(&c, timeout).await);
        });
        let (conn, facts) =
            block(|| rx.recv()).map_err(|_| "the bridge's runtime stopped".to_owned())??;
        let profile = facts
            .profile
            .to_profile()
            .map_err(|e| format!("the provider's initialize result: {e}"))?;
        let grace = opts.grace.unwrap_or_else(|| {
            let t = if facts.is_real_backend {
                Timing::real()
            } else {
                Timing::fake()
            };
            t.slack * 2
        });
        Ok(RemoteFixture {
            rt: Some(rt),
            connector,
            opts,
            grace,
            facts,
            profile,
            conn: tokio::sync::Mutex::new(conn),
            stderr: None,
        })
    }

    /// What `initialize` returned.
    pub fn facts(&self) -> &InitializeResult {
        &self.facts
    }

    /// A live connection: the current one, or a new one when it broke.
    async fn live(&self) -> Result<Arc<Conn>, String> {
        let mut cur = self.conn.lock().await;
        if cur.failure().is_none() {
            return Ok(cur.clone());
        }
        let (c, timeout) = (self.connector.clone(), self.opts.init_timeout);
        let rt = self.rt.as_ref().ok_or("the bridge is shut down")?;
        let (conn, facts) = rt
            .spawn(async move { connect(&c, timeout).await })
            .await
            .map_err(|e| format!("the bridge's runtime failed: {e}"))??;
        if facts != self.facts {
            conn.fail("the restarted provider declared other facts".into());
            return Err(
                "the restarted provider process declared other facts in initialize than the first"
                    .into(),
            );
        }
        *cur = conn.clone();
        Ok(conn)
    }
}

/// Spawns `cmd` under `sh -c` with its stderr going to `log`.
fn spawn_command(cmd: &str, log: Arc<StderrLog>) -> io::Result<Link> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("starting the provider command: {e}")))?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("no stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    if let Some(err) = child.stderr.take() {
        tokio::spawn(pump_stderr(err, log));
    }
    let child = Arc::new(Mutex::new(child));
    let status = child.clone();
    Ok(Link {
        reader: Box::new(stdout),
        writer: Box::new(KillOnDrop {
            w: stdin,
            child: child.clone(),
        }),
        exit_status: Some(Box::new(move || {
            let mut c = status.lock().unwrap_or_else(|e| e.into_inner());
            c.try_wait().ok().flatten().map(|s| s.to_string())
        })),
    })
}

/// The child's stdin; when the connection ends the child is killed.
struct KillOnDrop {
    w: tokio::process::ChildStdin,
    child: Arc<Mutex<tokio::process::Child>>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self
            .child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .start_kill();
    }
}

impl AsyncWrite for KillOnDrop {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.w).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.w).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.w).poll_shutdown(cx)
    }
}

/// Records each of the provider's stderr lines at TRACE and hands it to `log`.
async fn pump_stderr(err: tokio::process::ChildStderr, log: Arc<StderrLog>) {
    let mut lines = tokio::io::BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::trace!(target: STDERR_TARGET, parent: None, "{line}");
        log.write(Some(line));
    }
}

/// Opens a connection and initializes it.
async fn connect(
    connector: &Connector,
    timeout: Duration,
) -> Result<(Arc<Conn>, InitializeResult), String> {
    let link = (connector)()
        .await
        .map_err(|e| format!("could not reach the provider: {e}"))?;
    let conn = Conn::start(link.reader, link.writer, link.exit_status);
    let params = InitializeParams {
        protocol_versions: vec![PROTOCOL_VERSION],
        suite_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let r: InitializeResult = match conn.call("initialize", &params, timeout).await {
        Ok(r) => r,
        Err(CallError::NoReply(_)) => {
            conn.fail("no answer to initialize".into());
            return Err(format!(
                "the provider sent no answer to initialize within {timeout:?}"
            ));
        }
        Err(e) => {
            conn.fail(format!("initialize failed: {e}"));
            return Err(format!("initialize failed: {e}"));
        }
    };
    if r.protocol_version != PROTOCOL_VERSION {
        conn.fail("unsupported protocol version".into());
        return Err(format!(
            "the provider chose protocol version {}; the suite speaks {PROTOCOL_VERSION}",
            r.protocol_version
        ));
    }
    Ok((conn, r))
}

impl Fixture for RemoteFixture {
    fn provider_name(&self) -> String {
        self.facts.provider_name.clone()
    }

    fn profile(&self) -> Profile {
        self.profile
    }

    fn provider_version(&self) -> String {
        self.facts.provider_version.clone()
    }

    fn hooks(&self) -> Vec<Hook> {
        self.facts.hooks.iter().map(|h| (*h).into()).collect()
    }

    fn locations(&self) -> Vec<Location> {
        self.facts
            .locations
            .iter()
            .cloned()
            .map(Location::from)
            .collect()
    }

    fn has_checker(&self) -> bool {
        self.facts.has_checker
    }

    fn is_real_backend(&self) -> bool {
        self.facts.is_real_backend
    }

    fn environment(&self) -> BTreeMap<String, String> {
        let mut env = self.facts.environment.clone();
        env.insert(
            "transport".into(),
            format!("process protocol v{PROTOCOL_VERSION}"),
        );
        env
    }

    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async move {
            let conn = self.live().await.map_err(HookError)?;
            let r: OpenResult = conn
                .call("fixture/open", &Empty {}, self.opts.hook_timeout)
                .await
                .map_err(|e| match e {
                    CallError::Rpc {
                        code: HOOK_FAILED,
                        message,
                    } => HookError(message),
                    e => HookError(format!("fixture/open: {e}")),
                })?;
            let shared = Arc::new(Shared {
                conn,
                testbed: r.testbed,
                hook_timeout: self.opts.hook_timeout,
                grace: self.grace,
                hooks: self.hooks(),
                failure: Mutex::new(None),
            });
            let provider = RemoteProvider::new(shared.clone(), r.provider)
                .map_err(|e| HookError(format!("fixture/open: {e}")))?;
            Ok(Box::new(RemoteTestbed {
                shared,
                provider: Arc::new(provider),
                calls: Mutex::default(),
            }) as Box<dyn Testbed>)
        })
    }
}

/// What a testbed and its providers share: the connection and the first failure.
struct Shared {
    conn: Arc<Conn>,
    testbed: TestbedHandle,
    hook_timeout: Duration,
    grace: Duration,
    hooks: Vec<Hook>,
    failure: Mutex<Option<String>>,
}

impl Shared {
    fn note(&self, method: &str, e: &CallError) -> String {
        let text = format!("the provider process broke the protocol in {method}: {e}");
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

    fn blocking<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> HookResult<T> {
        let r = self.conn.call_blocking(method, params, self.hook_timeout);
        self.hook(method, r)
    }

    async fn call<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> HookResult<T> {
        let r = self.conn.call(method, params, self.hook_timeout).await;
        self.hook(method, r)
    }

    /// A synchronous method that cannot return an error: a failure is recorded (the
    /// rule becomes an Error) and `fallback` stands in.
    fn infallible<P: serde::Serialize, T: serde::de::DeserializeOwned>(
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

    fn tb(&self) -> TestbedParams {
        TestbedParams {
            testbed: self.testbed,
        }
    }

    fn loc(&self, location: &str) -> LocationParams {
        LocationParams {
            testbed: self.testbed,
            location: location.to_owned(),
        }
    }

    fn name(&self, location: &str, name: &str) -> NameParams {
        NameParams {
            testbed: self.testbed,
            location: location.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// A testbed in the provider process.
struct RemoteTestbed {
    shared: Arc<Shared>,
    provider: Arc<RemoteProvider>,
    /// Every backend call fetched so far; `observation/calls` fetches only the rest.
    calls: Mutex<Vec<BackendCall>>,
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
        own.or_else(|| self.shared.conn.failure())
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

/// A provider instance in the provider process.
struct RemoteProvider {
    shared: Arc<Shared>,
    handle: ProviderHandle,
    name: String,
    profile: Profile,
    extra_reasons: Option<&'static [&'static str]>,
}

impl RemoteProvider {
    fn new(shared: Arc<Shared>, info: ProviderInfo) -> Result<RemoteProvider, String> {
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

/// Runs a blocking wait; on a multi-thread runtime's worker it tells the runtime first.
fn block<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
