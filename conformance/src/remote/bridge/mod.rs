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

use super::conn::{CallError, Conn, ExitStatus, STDERR_TARGET};
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

mod dispatch;
mod process;
mod provider;
mod testbed;

use dispatch::*;
use process::*;
use provider::*;
use testbed::*;

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
    /// Connections closed because the provider stopped answering.
    wedges: std::sync::atomic::AtomicU32,
    /// Why no testbed can be opened any more: the provider could not be reached
    /// again after its connection broke, or it wedged [`MAX_WEDGES`] times.
    given_up: Mutex<Option<String>>,
    stderr: Option<Arc<StderrLog>>,
}

/// How many times a wedged provider is restarted (or its socket reopened) before
/// every remaining rule is an Error at once.
pub const MAX_WEDGES: u32 = 2;

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

/// Why a provider could not be started: the reason, and the last lines it wrote to
/// stderr (blanked of payloads), which usually say why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartFailure {
    /// What went wrong (`initialize failed: the provider process exited (…)`).
    pub reason: String,
    /// The provider's last stderr lines, oldest first, at most [`STDERR_TAIL`].
    pub stderr_tail: Vec<String>,
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)?;
        if self.stderr_tail.is_empty() {
            return f.write_str("; it wrote nothing to stderr");
        }
        f.write_str("; the last lines of its stderr:")?;
        for l in &self.stderr_tail {
            write!(f, "\n    {l}")?;
        }
        Ok(())
    }
}

impl RemoteFixture {
    /// Connects to `endpoint` and initializes; blocks until the provider answered.
    /// The error names the failure and carries the provider's last stderr lines.
    pub fn new(endpoint: Endpoint, opts: RemoteOptions) -> Result<RemoteFixture, String> {
        RemoteFixture::start(endpoint, opts).map_err(|e| e.to_string())
    }

    /// [`RemoteFixture::new`], with the failure's parts apart.
    pub fn start(endpoint: Endpoint, opts: RemoteOptions) -> Result<RemoteFixture, StartFailure> {
        let log = Arc::new(StderrLog {
            path: Mutex::new(opts.stderr_log.clone()),
            ..StderrLog::default()
        });
        // The file exists from the start, empty if the provider writes nothing.
        log.write(None);
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
        match RemoteFixture::with_connector(connector, opts) {
            Ok(mut f) => {
                f.stderr = Some(log);
                Ok(f)
            }
            Err(reason) => Err(StartFailure {
                reason,
                stderr_tail: log.tail(Duration::from_millis(500)),
            }),
        }
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
            wedges: std::sync::atomic::AtomicU32::new(0),
            given_up: Mutex::new(None),
            stderr: None,
        })
    }

    /// What `initialize` returned.
    pub fn facts(&self) -> &InitializeResult {
        &self.facts
    }

    /// Gives up on the provider for the rest of the run: every later testbed fails
    /// at once with `why`.
    fn give_up(&self, why: String) -> String {
        let mut g = self.given_up.lock().unwrap_or_else(|e| e.into_inner());
        g.get_or_insert(why).clone()
    }

    /// A live connection: the current one, or a new one when it broke. A provider
    /// that cannot be reached again, or that wedged more than [`MAX_WEDGES`] times,
    /// is given up on.
    async fn live(&self) -> Result<Arc<Conn>, String> {
        if let Some(why) = self
            .given_up
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Err(why);
        }
        let mut cur = self.conn.lock().await;
        let Some(failure) = cur.failure() else {
            return Ok(cur.clone());
        };
        if cur.wedged() {
            let n = self
                .wedges
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            if n > MAX_WEDGES {
                return Err(self.give_up(format!(
                    "not run: the provider wedged {n} times ({failure}); the suite stopped restarting it"
                )));
            }
        }
        let (c, timeout) = (self.connector.clone(), self.opts.init_timeout);
        let rt = self.rt.as_ref().ok_or("the bridge is shut down")?;
        let (conn, facts) = match rt.spawn(async move { connect(&c, timeout).await }).await {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                return Err(self.give_up(format!(
                    "not run: the provider could not be started again after its connection failed ({failure}): {e}"
                )));
            }
            Err(e) => return Err(format!("the bridge's runtime failed: {e}")),
        };
        // The failed connection is dropped here, before the new one is in use.
        *cur = conn.clone();
        if facts != self.facts {
            conn.fail("the restarted provider declared other facts".into());
            return Err(self.give_up(
                "not run: the restarted provider process declared other facts in initialize than the first"
                    .into(),
            ));
        }
        Ok(conn)
    }
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

    fn backend_versions(&self) -> BoxFuture<'_, BTreeMap<String, BTreeMap<String, String>>> {
        let versions = self.facts.backend_versions.clone();
        Box::pin(async move { versions })
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
                    e => HookError(failure_text(&conn, "fixture/open", &e)),
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
