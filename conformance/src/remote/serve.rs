//! The provider's end: [`serve`] offers any Rust [`Fixture`] over the process
//! protocol, so a Rust provider can also be checked out of process (and the bridge
//! checked against the in-process run).
//!
//! Every request runs as a task of its own, so requests are handled concurrently and
//! answered in any order. A provider operation runs under a request span; the
//! [`TelemetryLayer`] forwards the spans and events below it as notifications, sent
//! before the operation's reply; what a request emits after its reply was queued (a
//! span a background task still holds, a line logged after a cancellation) is
//! dropped, since the suite takes such telemetry as a protocol failure.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use super::proto::*;
use crate::fixture::{Fixture, HookError, Testbed};
use crate::{CreateRequest, Ctx, Provider, ProviderId};

/// The span every served request runs under; its children are forwarded.
const REQUEST_SPAN: &str = "conformance.remote.request";

static NEXT_CONN: AtomicU64 = AtomicU64::new(1);
static NEXT_SPAN: AtomicU64 = AtomicU64::new(1);

/// Where each served connection's notifications go, by connection number.
fn sinks() -> &'static Mutex<HashMap<u64, mpsc::UnboundedSender<String>>> {
    static SINKS: OnceLock<Mutex<HashMap<u64, mpsc::UnboundedSender<String>>>> = OnceLock::new();
    SINKS.get_or_init(Mutex::default)
}

fn sink(conn: u64) -> Option<mpsc::UnboundedSender<String>> {
    sinks()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&conn)
        .cloned()
}

/// The requests whose telemetry is still sent, by connection and request id: from
/// the operation's start until its reply is queued. The lock is held while a
/// notification or a reply is queued, so no telemetry follows its request's reply.
fn open_requests() -> &'static Mutex<std::collections::HashSet<(u64, u64)>> {
    static OPEN: OnceLock<Mutex<std::collections::HashSet<(u64, u64)>>> = OnceLock::new();
    OPEN.get_or_init(Mutex::default)
}

/// Sends a telemetry notification of `request`, or drops it once the request was
/// answered (a span a background task still holds, an event after a cancellation).
fn notify(conn: u64, request: u64, method: &str, params: &impl Serialize) {
    let open = open_requests().lock().unwrap_or_else(|e| e.into_inner());
    if !open.contains(&(conn, request)) {
        return;
    }
    if let Some(tx) = sink(conn) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let _ = tx.send(line.to_string());
    }
}

/// Installs the [`TelemetryLayer`] as the process's global `tracing` subscriber;
/// `false` when another was installed first (telemetry is then not forwarded).
pub fn install_telemetry() -> bool {
    use tracing_subscriber::prelude::*;
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(TelemetryLayer))
        .is_ok()
}

/// Forwards the spans and events emitted under a served request to the suite.
#[derive(Clone, Copy, Debug, Default)]
pub struct TelemetryLayer;

/// A served request's root span.
struct Root {
    conn: u64,
    request: u64,
}

/// A forwarded span.
struct Forwarded {
    conn: u64,
    request: u64,
    span: u64,
}

#[derive(Default)]
struct Fields {
    message: String,
    fields: BTreeMap<String, String>,
    conn: Option<u64>,
    request: Option<u64>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "cf_conn" => self.conn = Some(value),
            "cf_request" => self.request = Some(value),
            _ => {
                self.fields
                    .insert(field.name().to_owned(), value.to_string());
            }
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.fields
                .insert(field.name().to_owned(), value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut s = String::new();
        let _ = write!(s, "{value:?}");
        if field.name() == "message" {
            self.message = s;
        } else {
            self.fields.insert(field.name().to_owned(), s);
        }
    }
}

impl<S> Layer<S> for TelemetryLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut f = Fields::default();
        attrs.record(&mut f);
        if attrs.metadata().name() == REQUEST_SPAN {
            if let (Some(conn), Some(request)) = (f.conn, f.request) {
                span.extensions_mut().insert(Root { conn, request });
            }
            return;
        }
        let Some(parent) = span.parent() else { return };
        let (conn, request, parent_span) = {
            let ext = parent.extensions();
            if let Some(r) = ext.get::<Root>() {
                (r.conn, r.request, None)
            } else if let Some(p) = ext.get::<Forwarded>() {
                (p.conn, p.request, Some(p.span))
            } else {
                return;
            }
        };
        let sid = NEXT_SPAN.fetch_add(1, Ordering::Relaxed);
        span.extensions_mut().insert(Forwarded {
            conn,
            request,
            span: sid,
        });
        notify(
            conn,
            request,
            SPAN_START,
            &SpanStartParams {
                request,
                span: sid,
                parent: parent_span,
                name: attrs.metadata().name().to_owned(),
                level: (*attrs.metadata().level()).into(),
                fields: f.fields,
            },
        );
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        let (conn, request, sid) = {
            let ext = span.extensions();
            if let Some(r) = ext.get::<Root>() {
                (r.conn, r.request, None)
            } else if let Some(p) = ext.get::<Forwarded>() {
                (p.conn, p.request, Some(p.span))
            } else {
                return;
            }
        };
        let mut f = Fields::default();
        event.record(&mut f);
        notify(
            conn,
            request,
            EVENT,
            &EventParams {
                request,
                span: sid,
                level: (*event.metadata().level()).into(),
                message: f.message,
                fields: f.fields,
            },
        );
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let ext = span.extensions();
        if let Some(p) = ext.get::<Forwarded>() {
            notify(p.conn, p.request, SPAN_END, &SpanEndParams { span: p.span });
        }
    }
}

/// Serves `fixture` on the process's stdin and stdout until stdin closes. Installs
/// the telemetry layer. Nothing else may write to stdout.
pub fn serve_stdio(fixture: Arc<dyn Fixture>) -> std::io::Result<()> {
    install_telemetry();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(serve(fixture, tokio::io::stdin(), tokio::io::stdout()))
}

/// Serves `fixture` on a Unix socket at `path`, one connection after another or at
/// once, until the process ends. Installs the telemetry layer.
pub async fn serve_socket(fixture: Arc<dyn Fixture>, path: &Path) -> std::io::Result<()> {
    install_telemetry();
    let listener = tokio::net::UnixListener::bind(path)?;
    loop {
        let (s, _) = listener.accept().await?;
        let f = fixture.clone();
        tokio::spawn(async move {
            let (r, w) = s.into_split();
            let _ = serve(f, r, w).await;
        });
    }
}

/// A served provider and its testbed's handle.
type Served = (TestbedHandle, Arc<dyn Provider>);

/// One connection's handles.
struct Server {
    fixture: Arc<dyn Fixture>,
    conn: u64,
    out: mpsc::UnboundedSender<String>,
    testbeds: Mutex<HashMap<TestbedHandle, Arc<dyn Testbed>>>,
    /// Each provider handle with the testbed it belongs to.
    providers: Mutex<HashMap<ProviderHandle, Served>>,
    inflight: Mutex<HashMap<u64, CancellationToken>>,
    next_handle: AtomicU64,
}

/// A request's failure, answered as a JSON-RPC error.
struct Fail {
    code: i64,
    message: String,
}

impl From<HookError> for Fail {
    fn from(e: HookError) -> Self {
        Fail {
            code: HOOK_FAILED,
            message: e.0,
        }
    }
}

fn bad_params(method: &str, e: serde_json::Error) -> Fail {
    Fail {
        code: INVALID_PARAMS,
        message: format!("params of {method} do not fit the protocol: {e}"),
    }
}

/// Serves `fixture` over one connection until the reader closes; then every testbed
/// still open is torn down.
pub async fn serve<R, W>(fixture: Arc<dyn Fixture>, reader: R, mut writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let conn = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
    sinks()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(conn, tx.clone());
    let server = Arc::new(Server {
        fixture,
        conn,
        out: tx,
        testbeds: Mutex::default(),
        providers: Mutex::default(),
        inflight: Mutex::default(),
        next_handle: AtomicU64::new(1),
    });
    let writer_task = tokio::spawn(async move {
        while let Some(mut line) = rx.recv().await {
            line.push('\n');
            writer.write_all(line.as_bytes()).await?;
            if rx.is_empty() {
                writer.flush().await?;
            }
        }
        writer.flush().await
    });
    let mut lines = FramedRead::new(reader, LinesCodec::new_with_max_length(MAX_LINE));
    let mut tasks = tokio::task::JoinSet::new();
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(l) => l,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                server.reply_err(
                    Value::Null,
                    Fail {
                        code: INVALID_REQUEST,
                        message: format!("a line longer than {MAX_LINE} bytes"),
                    },
                );
                break;
            }
            Err(LinesCodecError::Io(_)) => break,
        };
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                server.reply_err(
                    Value::Null,
                    Fail {
                        code: PARSE_ERROR,
                        message: "the line is not JSON".into(),
                    },
                );
                continue;
            }
        };
        server.message(msg, &mut tasks);
    }
    server.shut_down(tasks).await;
    sinks()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&conn);
    drop(server);
    match writer_task.await {
        Ok(r) => r,
        Err(e) => Err(std::io::Error::other(e)),
    }
}

impl Server {
    /// One message from the suite: a cancellation, a request (run on a task of its
    /// own, a panic answered as one), an ignored notification, or an error.
    fn message(self: &Arc<Self>, msg: Value, tasks: &mut tokio::task::JoinSet<()>) {
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").cloned();
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        match (method, id) {
            (Some(m), None) if m == CANCEL => {
                if let Ok(p) = serde_json::from_value::<CancelParams>(params) {
                    let token = self
                        .inflight
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&p.id)
                        .cloned();
                    if let Some(t) = token {
                        t.cancel();
                    }
                }
            }
            // Unknown notifications are ignored, as JSON-RPC allows.
            (Some(_), None) => {}
            (Some(m), Some(id)) => {
                let s = self.clone();
                tasks.spawn(async move {
                    // A method that panics is answered at once, as a panic, instead
                    // of leaving the suite to wait out its deadline.
                    let r = AssertUnwindSafe(s.handle(&m, &id, params))
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|panic| {
                            Err(Fail {
                                code: PROVIDER_PANICKED,
                                message: crate::suite::guard::panic_text(panic.as_ref()),
                            })
                        });
                    match r {
                        Ok(v) => s.reply_ok(id, v),
                        Err(f) => s.reply_err(id, f),
                    }
                });
                while tasks.try_join_next().is_some() {}
            }
            (None, _) => self.reply_err(
                Value::Null,
                Fail {
                    code: INVALID_REQUEST,
                    message: "a message with no method".into(),
                },
            ),
        }
    }

    /// The suite is gone: stops what runs and tears down what is open.
    async fn shut_down(&self, mut tasks: tokio::task::JoinSet<()>) {
        for t in self
            .inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            t.cancel();
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        let open: Vec<Arc<dyn Testbed>> = self
            .testbeds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, t)| t)
            .collect();
        for tb in open {
            let _ = tb.teardown().await;
        }
    }

    fn reply_ok(&self, id: Value, result: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.reply(&id, line);
    }

    fn reply_err(&self, id: Value, f: Fail) {
        let line = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": f.code, "message": f.message},
        });
        self.reply(&id, line);
    }

    /// Queues a reply; the request's telemetry stops here.
    fn reply(&self, id: &Value, line: Value) {
        let mut open = open_requests().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = id.as_u64() {
            open.remove(&(self.conn, id));
        }
        let _ = self.out.send(line.to_string());
    }

    fn testbed(&self, h: TestbedHandle) -> Result<Arc<dyn Testbed>, Fail> {
        self.testbeds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&h)
            .cloned()
            .ok_or(Fail {
                code: UNKNOWN_HANDLE,
                message: format!("no testbed {h}"),
            })
    }

    fn provider(&self, h: ProviderHandle) -> Result<Arc<dyn Provider>, Fail> {
        self.providers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&h)
            .map(|(_, p)| p.clone())
            .ok_or(Fail {
                code: UNKNOWN_HANDLE,
                message: format!("no provider {h}"),
            })
    }

    fn register(&self, tb: TestbedHandle, p: Arc<dyn Provider>) -> ProviderInfo {
        let h = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let info = ProviderInfo {
            provider: h,
            name: p.name().to_owned(),
            profile: (&p.profile()).into(),
            checker: p.checker().map(|c| CheckerInfo {
                extra_reasons: c.extra_reasons().iter().map(|s| s.to_string()).collect(),
            }),
        };
        self.providers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(h, (tb, p));
        info
    }

    /// The context of an operation: the deadline it carried, a token `$/cancel`
    /// fires, and the request span its telemetry hangs under.
    fn ctx(&self, id: u64, deadline_ms: Option<u64>) -> Ctx {
        open_requests()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((self.conn, id));
        let span = tracing::info_span!(REQUEST_SPAN, cf_conn = self.conn, cf_request = id);
        let token = CancellationToken::new();
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, token.clone());
        let ctx = Ctx::new().cancelled_by(token).in_span(span);
        match deadline_ms {
            Some(ms) => ctx.deadline_at(tokio::time::Instant::now() + Duration::from_millis(ms)),
            None => ctx,
        }
    }

    fn done(&self, id: u64) {
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    async fn handle(&self, method: &str, id: &Value, params: Value) -> Result<Value, Fail> {
        fn p<T: DeserializeOwned>(method: &str, v: Value) -> Result<T, Fail> {
            serde_json::from_value(v).map_err(|e| bad_params(method, e))
        }
        fn ok<T: Serialize>(v: T) -> Result<Value, Fail> {
            serde_json::to_value(v).map_err(|e| Fail {
                code: INTERNAL_ERROR,
                message: format!("the result does not serialise: {e}"),
            })
        }
        let rid = id.as_u64().unwrap_or(0);
        match method {
            "initialize" => {
                let q: InitializeParams = p(method, params)?;
                if !q.protocol_versions.contains(&PROTOCOL_VERSION) {
                    return Err(Fail {
                        code: UNSUPPORTED_VERSION,
                        message: format!(
                            "this provider speaks protocol version {PROTOCOL_VERSION} only"
                        ),
                    });
                }
                let f = &self.fixture;
                ok(InitializeResult {
                    protocol_version: PROTOCOL_VERSION,
                    provider_name: f.provider_name(),
                    provider_version: f.provider_version(),
                    profile: (&f.profile()).into(),
                    hooks: f.hooks().into_iter().map(Into::into).collect(),
                    locations: f.locations().iter().map(Into::into).collect(),
                    has_checker: f.has_checker(),
                    is_real_backend: f.is_real_backend(),
                    environment: f.environment(),
                    backend_versions: crate::suite::runner::backend_versions(f.as_ref()).await,
                })
            }
            "shutdown" => ok(Empty {}),
            "fixture/open" => {
                let tb: Arc<dyn Testbed> = Arc::from(self.fixture.open().await?);
                let h = self.next_handle.fetch_add(1, Ordering::Relaxed);
                let provider = self.register(h, tb.provider());
                self.testbeds
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(h, tb);
                ok(OpenResult {
                    testbed: h,
                    provider,
                })
            }
            "testbed/teardown" => {
                let q: TestbedParams = p(method, params)?;
                let tb = self.testbed(q.testbed)?;
                let r = tb.teardown().await;
                self.testbeds
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&q.testbed);
                self.providers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|_, (t, _)| *t != q.testbed);
                r?;
                ok(Empty {})
            }
            "testbed/restart" => {
                let q: TestbedParams = p(method, params)?;
                let tb = self.testbed(q.testbed)?;
                let fresh = tb.restart()?;
                ok(self.register(q.testbed, fresh))
            }
            "testbed/request" => {
                let q: RequestParams = p(method, params)?;
                let tb = self.testbed(q.testbed)?;
                let r = tb.request(&q.name, &q.tag, &q.location.into());
                ok(WireCreateRequest::from(&r))
            }
            "testbed/id_for" => {
                let q: IdForParams = p(method, params)?;
                let id = self.testbed(q.testbed)?.id_for(&q.location, &q.name);
                ok(IdResult {
                    id: id.as_str().to_owned(),
                })
            }
            "testbed/location_of" => {
                let q: LocationOfParams = p(method, params)?;
                let location = self.testbed(q.testbed)?.location_of(&ProviderId::new(q.id));
                ok(LocationOfResult { location })
            }
            "testbed/malformed_ids" => {
                let q: TestbedParams = p(method, params)?;
                ok(MalformedIdsResult {
                    ids: self.testbed(q.testbed)?.malformed_ids(),
                })
            }
            "testbed/unconfigured_id" => {
                let q: UnconfiguredIdParams = p(method, params)?;
                let id = self.testbed(q.testbed)?.unconfigured_id(&q.name);
                ok(IdResult {
                    id: id.as_str().to_owned(),
                })
            }
            "testbed/unknown_placement" => {
                let q: TestbedParams = p(method, params)?;
                ok(UnknownPlacementResult {
                    placement: self.testbed(q.testbed)?.unknown_placement(),
                })
            }
            "provider/create" => {
                let q: CreateParams = p(method, params)?;
                let prov = self.provider(q.provider)?;
                let ctx = self.ctx(rid, q.deadline_ms);
                let req = CreateRequest::from(q.request);
                let r = prov.create(&ctx, &req).await;
                self.done(rid);
                ok(match r {
                    Ok(id) => OpOutcome::Ok(IdResult {
                        id: id.as_str().to_owned(),
                    }),
                    Err(e) => OpOutcome::Error(ContractError::from(&e)),
                })
            }
            "provider/get" => {
                let q: IdParams = p(method, params)?;
                let prov = self.provider(q.provider)?;
                let ctx = self.ctx(rid, q.deadline_ms);
                let r = prov.get(&ctx, &ProviderId::new(q.id)).await;
                self.done(rid);
                ok(match r {
                    Ok(i) => OpOutcome::Ok(WireInstance::from(&i)),
                    Err(e) => OpOutcome::Error(ContractError::from(&e)),
                })
            }
            "provider/delete" => {
                let q: IdParams = p(method, params)?;
                let prov = self.provider(q.provider)?;
                let ctx = self.ctx(rid, q.deadline_ms);
                let r = prov.delete(&ctx, &ProviderId::new(q.id)).await;
                self.done(rid);
                ok(match r {
                    Ok(()) => OpOutcome::Ok(Empty {}),
                    Err(e) => OpOutcome::Error(ContractError::from(&e)),
                })
            }
            "provider/list_by_tag" => {
                let q: ListByTagParams = p(method, params)?;
                let prov = self.provider(q.provider)?;
                let ctx = self.ctx(rid, q.deadline_ms);
                let r = prov.list_by_tag(&ctx, &q.tag).await;
                self.done(rid);
                ok(match r {
                    Ok(l) => OpOutcome::Ok(WireListing::from(&l)),
                    Err(e) => OpOutcome::Error(ContractError::from(&e)),
                })
            }
            "checker/check" => {
                let q: CheckParams = p(method, params)?;
                let prov = self.provider(q.provider)?;
                let Some(checker) = prov.checker() else {
                    return Err(Fail {
                        code: INVALID_REQUEST,
                        message: format!("provider {} has no checker", q.provider),
                    });
                };
                let ctx = self.ctx(rid, q.deadline_ms);
                let health = checker.check(&ctx).await;
                self.done(rid);
                ok(CheckResult {
                    health: health.iter().map(WireHostHealth::from).collect(),
                })
            }
            _ => self.hook(method, params).await,
        }
    }

    async fn hook(&self, method: &str, params: Value) -> Result<Value, Fail> {
        fn p<T: DeserializeOwned>(method: &str, v: Value) -> Result<T, Fail> {
            serde_json::from_value(v).map_err(|e| bad_params(method, e))
        }
        fn ok<T: Serialize>(v: T) -> Result<Value, Fail> {
            serde_json::to_value(v).map_err(|e| Fail {
                code: INTERNAL_ERROR,
                message: format!("the result does not serialise: {e}"),
            })
        }
        fn absent(hook: &str) -> Fail {
            Fail {
                code: INVALID_REQUEST,
                message: format!("the testbed has no {hook} hook"),
            }
        }
        let testbed = params
            .get("testbed")
            .and_then(Value::as_u64)
            .ok_or_else(|| Fail {
                code: if METHODS.contains(&method) {
                    INVALID_PARAMS
                } else {
                    METHOD_NOT_FOUND
                },
                message: if METHODS.contains(&method) {
                    format!("{method} needs a testbed")
                } else {
                    format!("unknown method {method:?}")
                },
            })?;
        let tb = self.testbed(testbed)?;
        match method {
            "inventory/resources" => {
                let q: LocationParams = p(method, params)?;
                let h = tb.inventory().ok_or_else(|| absent("inventory"))?;
                let r = h.resources(&q.location).await?;
                ok(ResourcesResult {
                    resources: r.iter().map(WireResource::from).collect(),
                })
            }
            "planting/plant" => {
                let q: PlantParams = p(method, params)?;
                let h = tb.planting().ok_or_else(|| absent("planting"))?;
                h.plant(&q.location, &q.name, q.what.into()).await?;
                ok(Empty {})
            }
            "planting/inspect" => {
                let q: NameParams = p(method, params)?;
                let h = tb.planting().ok_or_else(|| absent("planting"))?;
                ok(InspectResult {
                    fingerprint: h.inspect(&q.location, &q.name).await?,
                })
            }
            "planting/remove_part" => {
                let q: RemovePartParams = p(method, params)?;
                let h = tb.planting().ok_or_else(|| absent("planting"))?;
                h.remove_part(&q.location, &q.name, q.part.into()).await?;
                ok(Empty {})
            }
            "planting/remove" => {
                let q: NameParams = p(method, params)?;
                let h = tb.planting().ok_or_else(|| absent("planting"))?;
                h.remove(&q.location, &q.name).await?;
                ok(Empty {})
            }
            "state_control/set_power" => {
                let q: SetPowerParams = p(method, params)?;
                let h = tb.state_control().ok_or_else(|| absent("state-control"))?;
                h.set_power(&q.location, &q.name, q.power.into()).await?;
                ok(Empty {})
            }
            "state_control/set_addresses" => {
                let q: SetAddressesParams = p(method, params)?;
                let h = tb.state_control().ok_or_else(|| absent("state-control"))?;
                let addrs = addrs_from_wire(&q.addrs).map_err(|m| Fail {
                    code: INVALID_PARAMS,
                    message: m,
                })?;
                h.set_addresses(&q.location, &q.name, addrs).await?;
                ok(Empty {})
            }
            "state_control/fail_address_lookup" => {
                let q: FailAddressLookupParams = p(method, params)?;
                let h = tb.state_control().ok_or_else(|| absent("state-control"))?;
                h.fail_address_lookup(&q.location, &q.name, q.fail).await?;
                ok(Empty {})
            }
            "state_control/hold_boot" => {
                let q: HoldBootParams = p(method, params)?;
                let h = tb.state_control().ok_or_else(|| absent("state-control"))?;
                h.hold_boot(q.hold).await?;
                ok(Empty {})
            }
            "capacity/set_free" => {
                let q: SetFreeParams = p(method, params)?;
                let h = tb.capacity().ok_or_else(|| absent("capacity"))?;
                h.set_free(&q.location, q.bytes).await?;
                ok(Empty {})
            }
            "faults/inject" => {
                let q: InjectParams = p(method, params)?;
                let h = tb.faults().ok_or_else(|| absent("faults"))?;
                let id = h.inject(q.spec.into())?;
                ok(InjectResult { id: id.0 })
            }
            "faults/fired" => {
                let q: FiredParams = p(method, params)?;
                let h = tb.faults().ok_or_else(|| absent("faults"))?;
                ok(FiredResult {
                    fired: h.fired(crate::fixture::FaultId(q.id)),
                })
            }
            "faults/clear" => {
                let h = tb.faults().ok_or_else(|| absent("faults"))?;
                h.clear();
                ok(Empty {})
            }
            "faults/set_reachability" => {
                let q: SetReachabilityParams = p(method, params)?;
                let h = tb.faults().ok_or_else(|| absent("faults"))?;
                h.set_reachability(&q.location, q.reachability.into())
                    .await?;
                ok(Empty {})
            }
            "faults/cause" => {
                let q: CauseParams = p(method, params)?;
                let h = tb.faults().ok_or_else(|| absent("faults"))?;
                ok(CauseResult {
                    produced: h.cause(&q.location, &q.reason).await?,
                })
            }
            "faults/undo_cause" => {
                let q: LocationParams = p(method, params)?;
                let h = tb.faults().ok_or_else(|| absent("faults"))?;
                h.undo_cause(&q.location).await?;
                ok(Empty {})
            }
            "rotation/rotate" => {
                let q: LocationParams = p(method, params)?;
                let h = tb.rotation().ok_or_else(|| absent("rotation"))?;
                h.rotate(&q.location).await?;
                ok(Empty {})
            }
            "rotation/break_access" => {
                let q: BreakAccessParams = p(method, params)?;
                let h = tb.rotation().ok_or_else(|| absent("rotation"))?;
                ok(BreakAccessResult {
                    produced: h.break_access(&q.location, q.how.into()).await?,
                })
            }
            "rotation/restore_access" => {
                let q: LocationParams = p(method, params)?;
                let h = tb.rotation().ok_or_else(|| absent("rotation"))?;
                h.restore_access(&q.location).await?;
                ok(Empty {})
            }
            "observation/calls" => {
                let q: CallsParams = p(method, params)?;
                let h = tb.observation().ok_or_else(|| absent("observation"))?;
                let skip = usize::try_from(q.since).unwrap_or(usize::MAX);
                ok(CallsResult {
                    calls: h
                        .calls()
                        .iter()
                        .skip(skip)
                        .map(WireBackendCall::from)
                        .collect(),
                })
            }
            "observation/dials" => {
                let q: LocationParams = p(method, params)?;
                let h = tb.observation().ok_or_else(|| absent("observation"))?;
                ok(DialsResult {
                    dials: h.dials(&q.location),
                })
            }
            "observation/set_verbosity" => {
                let q: SetVerbosityParams = p(method, params)?;
                let h = tb.observation().ok_or_else(|| absent("observation"))?;
                h.set_verbosity(q.verbosity.into());
                ok(Empty {})
            }
            _ => Err(Fail {
                code: METHOD_NOT_FOUND,
                message: format!("unknown method {method:?}"),
            }),
        }
    }
}
