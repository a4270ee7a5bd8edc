//! The suite's end of one connection to a provider process: a writer task, a reader
//! task that routes replies to their callers and re-creates the provider's telemetry
//! as `tracing` spans and events, and the failure every pending and later call gets
//! once the connection broke.
//!
//! Protocol failures are named and never quote a message body: the line may carry the
//! cloud-init payload.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;
use tracing::{Level, Span};

use super::proto::{
    CANCEL, CancelParams, EVENT, EventParams, MAX_LINE, SPAN_END, SPAN_START, SpanEndParams,
    SpanStartParams, WireLevel,
};
use crate::Ctx;

pub use crate::suite::capture::REMOTE_SPAN;
/// The target of re-created spans and events.
pub const REMOTE_TARGET: &str = "conformance::remote";
/// The target of the provider's stderr lines, recorded at TRACE outside any span.
pub use crate::suite::capture::STDERR_TARGET;

/// Why a call got no usable answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The connection broke, or the answer broke the protocol; the text names how.
    Protocol(String),
    /// The provider answered with a JSON-RPC error object.
    Rpc {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// No answer within the deadline and the grace after it (provider operations) or
    /// within the hook timeout (everything else).
    NoReply(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Protocol(s) | CallError::NoReply(s) => f.write_str(s),
            CallError::Rpc { code, message } => write!(f, "error {code}: {message}"),
        }
    }
}

type Answer = Result<Value, CallError>;

enum Reply {
    Async(oneshot::Sender<Answer>),
    Blocking(std::sync::mpsc::Sender<Answer>),
}

impl Reply {
    fn send(self, a: Answer) {
        match self {
            Reply::Async(tx) => {
                let _ = tx.send(a);
            }
            Reply::Blocking(tx) => {
                let _ = tx.send(a);
            }
        }
    }
}

struct Pending {
    method: &'static str,
    /// `None` once the caller gave up: a late answer is discarded.
    reply: Option<Reply>,
    caller: Span,
}

#[derive(Default)]
struct State {
    pending: HashMap<u64, Pending>,
    /// Open remote spans: the re-created span and the request it belongs to.
    spans: HashMap<u64, (Span, u64)>,
    failure: Option<String>,
    /// Whether the failure is a wedge: a request the provider left unanswered past
    /// the hook timeout.
    wedged: bool,
}

/// Says how a provider process ended, once it did.
pub type ExitStatus = Box<dyn FnMut() -> Option<String> + Send>;

/// What the reader and writer tasks share with callers.
pub(crate) struct Conn {
    out: mpsc::UnboundedSender<String>,
    state: Mutex<State>,
    next_id: AtomicU64,
    closed: CancellationToken,
    /// Says how the process ended, for the failure text (process transports only).
    exit_status: Mutex<Option<ExitStatus>>,
}

impl Conn {
    /// Starts the reader and writer tasks on the current runtime.
    pub(crate) fn start<R, W>(reader: R, writer: W, exit_status: Option<ExitStatus>) -> Arc<Conn>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        let conn = Arc::new(Conn {
            out: tx,
            state: Mutex::default(),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
            exit_status: Mutex::new(exit_status),
        });
        tokio::spawn(write_loop(conn.clone(), writer, rx));
        tokio::spawn(read_loop(conn.clone(), reader));
        conn
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The failure that broke the connection, if it broke.
    pub(crate) fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }

    /// Whether the connection broke because the provider stopped answering.
    pub(crate) fn wedged(&self) -> bool {
        self.lock().wedged
    }

    /// Breaks the connection because a request went unanswered past the hook
    /// timeout: the provider is treated as wedged, and closing the connection ends a
    /// process the suite started.
    pub(crate) fn fail_wedged(&self, why: String) {
        {
            let mut st = self.lock();
            if st.failure.is_none() {
                st.wedged = true;
            }
        }
        self.fail(why);
    }

    /// Breaks the connection: every pending call and every later one gets `why`.
    pub(crate) fn fail(&self, why: String) {
        let drained: Vec<Pending> = {
            let mut st = self.lock();
            if st.failure.is_none() {
                st.failure = Some(why.clone());
            }
            st.spans.clear();
            st.pending.drain().map(|(_, p)| p).collect()
        };
        let why = self.failure().unwrap_or(why);
        for p in drained {
            if let Some(r) = p.reply {
                r.send(Err(CallError::Protocol(why.clone())));
            }
        }
        self.closed.cancel();
    }

    fn send_line(&self, v: &Value) {
        // A JSON value always serialises.
        let line = serde_json::to_string(v).expect("a JSON value serialises");
        let _ = self.out.send(line);
    }

    fn register(&self, method: &'static str, reply: Reply, caller: Span) -> Result<u64, CallError> {
        let mut st = self.lock();
        if let Some(f) = &st.failure {
            return Err(CallError::Protocol(f.clone()));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        st.pending.insert(
            id,
            Pending {
                method,
                reply: Some(reply),
                caller,
            },
        );
        Ok(id)
    }

    fn request(&self, id: u64, method: &str, params: Value) {
        self.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// Sends `$/cancel` for `id` and, with `abandon`, discards its answer when it comes.
    fn cancel(&self, id: u64, abandon: bool) {
        if abandon && let Some(p) = self.lock().pending.get_mut(&id) {
            p.reply = None;
        }
        self.send_line(&json!({
            "jsonrpc": "2.0",
            "method": CANCEL,
            "params": CancelParams { id },
        }));
    }

    /// A call answered within `timeout`, awaited.
    pub(crate) async fn call<P: Serialize, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        timeout: Duration,
    ) -> Result<T, CallError> {
        let (tx, rx) = oneshot::channel();
        let id = self.register(method, Reply::Async(tx), Span::current())?;
        let mut guard = Abandon {
            conn: self,
            id,
            armed: true,
        };
        self.request(id, method, to_value(params));
        let answer = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(a)) => a,
            Ok(Err(_)) => Err(self.gone()),
            Err(_) => Err(CallError::NoReply(format!(
                "the provider sent no reply to {method} within {timeout:?}"
            ))),
        };
        guard.armed = answer.is_err();
        decode(method, answer?)
    }

    /// A call answered within `timeout`, waited for by blocking the calling thread
    /// (for the fixture API's synchronous methods).
    pub(crate) fn call_blocking<P: Serialize, T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        timeout: Duration,
    ) -> Result<T, CallError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let id = self.register(method, Reply::Blocking(tx), Span::current())?;
        self.request(id, method, to_value(params));
        let got = block(|| rx.recv_timeout(timeout));
        let answer = match got {
            Ok(a) => a,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.cancel(id, true);
                Err(CallError::NoReply(format!(
                    "the provider sent no reply to {method} within {timeout:?}"
                )))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(self.gone()),
        };
        decode(method, answer?)
    }

    /// A provider operation: carries the remaining deadline (the provider keeps it
    /// itself), sends `$/cancel` when the context's token fires or the future is
    /// dropped, and after the deadline or the token waits `grace` for the provider's
    /// own answer; without one it is [`CallError::NoReply`] and the answer, should it
    /// come, is discarded.
    pub(crate) async fn call_op<T: DeserializeOwned>(
        &self,
        method: &'static str,
        mut params: Value,
        ctx: &Ctx,
        grace: Duration,
    ) -> Result<T, CallError> {
        let (tx, mut rx) = oneshot::channel();
        let id = self.register(method, Reply::Async(tx), ctx.span().clone())?;
        let mut guard = Abandon {
            conn: self,
            id,
            armed: true,
        };
        if let Value::Object(m) = &mut params {
            let ms = ctx
                .remaining()
                .map(|d| u64::try_from(d.as_micros().div_ceil(1000)).unwrap_or(u64::MAX));
            m.insert("deadline_ms".into(), json!(ms));
        }
        self.request(id, method, params);
        let deadline = async {
            match ctx.deadline() {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        // The provider holds the deadline itself; only the token's firing is sent on.
        let mut cancelled = false;
        let first = tokio::select! {
            a = &mut rx => Some(a),
            _ = ctx.token().cancelled() => {
                cancelled = true;
                None
            }
            _ = deadline => None,
        };
        let answer = match first {
            Some(a) => a,
            None => {
                if cancelled {
                    self.cancel(id, false);
                }
                let grace_end = tokio::time::Instant::now() + grace;
                let waited = loop {
                    tokio::select! {
                        a = &mut rx => break Some(a),
                        _ = ctx.token().cancelled(), if !cancelled => {
                            cancelled = true;
                            self.cancel(id, false);
                        }
                        _ = tokio::time::sleep_until(grace_end) => break None,
                    }
                };
                match waited {
                    Some(a) => a,
                    None => {
                        guard.armed = false;
                        self.cancel(id, true);
                        return Err(CallError::NoReply(format!(
                            "no reply by deadline + grace ({grace:?}) to {method}"
                        )));
                    }
                }
            }
        };
        guard.armed = false;
        let answer = match answer {
            Ok(a) => a,
            Err(_) => Err(self.gone()),
        };
        decode(method, answer?)
    }

    fn gone(&self) -> CallError {
        CallError::Protocol(
            self.failure()
                .unwrap_or_else(|| "the connection to the provider closed".into()),
        )
    }

    fn on_line(&self, line: &str) -> Result<(), String> {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "the provider sent a line that is not JSON ({})",
                e.classify_text()
            )
        })?;
        let Value::Object(m) = v else {
            return Err("the provider sent a JSON value that is not a message object".into());
        };
        if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err("the provider sent a message without \"jsonrpc\": \"2.0\"".into());
        }
        if let Some(method) = m.get("method") {
            return self.on_notification(method.as_str().unwrap_or(""), &m);
        }
        let id = match m.get("id") {
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or_default(),
            Some(_) => return Err("the provider sent a reply whose id is not a request id".into()),
            None => return Err(
                "the provider sent a message that is neither a request, a notification nor a reply"
                    .into(),
            ),
        };
        self.on_reply(id, &m)
    }

    /// A notification from the provider: span telemetry or an event; a request or an
    /// unknown method breaks the protocol.
    fn on_notification(
        &self,
        method: &str,
        m: &serde_json::Map<String, Value>,
    ) -> Result<(), String> {
        let shown = shorten(method);
        if m.contains_key("id") {
            return Err(format!(
                "the provider sent a request ({shown}); in protocol v1 only the suite sends requests"
            ));
        }
        let params = m.get("params").cloned().unwrap_or(Value::Null);
        match method {
            SPAN_START => self.span_start(parse(SPAN_START, params)?),
            SPAN_END => {
                let p: SpanEndParams = parse(SPAN_END, params)?;
                match self.lock().spans.remove(&p.span) {
                    Some(_) => Ok(()),
                    None => Err(format!(
                        "the provider sent $/span/end for span {}, which is not open (never started, already ended, or its request already answered)",
                        p.span
                    )),
                }
            }
            EVENT => self.event(parse(EVENT, params)?),
            _ => Err(format!(
                "the provider sent an unknown notification method {shown}"
            )),
        }
    }

    /// The reply to request `id`: handed to its waiting caller.
    fn on_reply(&self, id: u64, m: &serde_json::Map<String, Value>) -> Result<(), String> {
        let answer = match (m.get("result"), m.get("error")) {
            (Some(r), None) => Ok(r.clone()),
            (None, Some(e)) => {
                let code = e.get("code").and_then(Value::as_i64);
                let message = e.get("message").and_then(Value::as_str);
                match (code, message) {
                    (Some(code), Some(message)) => Err(CallError::Rpc {
                        code,
                        message: message.to_owned(),
                    }),
                    _ => {
                        return Err(format!(
                            "the provider's error reply to request {id} lacks a code or a message"
                        ));
                    }
                }
            }
            _ => {
                return Err(format!(
                    "the provider's reply to request {id} has not exactly one of result and error"
                ));
            }
        };
        let pending = {
            let mut st = self.lock();
            let p = st.pending.remove(&id);
            if p.is_some() {
                // A request's telemetry comes before its reply; its spans close here.
                st.spans.retain(|_, (_, r)| *r != id);
            }
            p
        };
        match pending {
            Some(p) => {
                if let Some(r) = p.reply {
                    r.send(answer);
                }
                Ok(())
            }
            None if id > 0 && id < self.next_id.load(Ordering::Relaxed) => Err(format!(
                "the provider sent a duplicate reply to request {id}"
            )),
            None => Err(format!(
                "the provider sent a reply to unknown request id {id}"
            )),
        }
    }

    fn span_start(&self, p: SpanStartParams) -> Result<(), String> {
        let mut st = self.lock();
        let Some(request) = st.pending.get(&p.request) else {
            return Err(not_in_flight(SPAN_START, p.request));
        };
        let parent = match p.parent.and_then(|s| st.spans.get(&s)) {
            Some((s, _)) => s.id(),
            None => request.caller.id(),
        };
        let fields = fields_text(&p.fields);
        let name = p.name;
        macro_rules! at {
            ($lvl:expr) => {
                tracing::span!(target: REMOTE_TARGET, parent: parent, $lvl, REMOTE_SPAN, name = %name, fields = %fields)
            };
        }
        let span = match p.level {
            WireLevel::ERROR => at!(Level::ERROR),
            WireLevel::WARN => at!(Level::WARN),
            WireLevel::INFO => at!(Level::INFO),
            WireLevel::DEBUG => at!(Level::DEBUG),
            WireLevel::TRACE => at!(Level::TRACE),
        };
        st.spans.insert(p.span, (span, p.request));
        Ok(())
    }

    fn event(&self, p: EventParams) -> Result<(), String> {
        let parent = {
            let st = self.lock();
            let Some(request) = st.pending.get(&p.request) else {
                return Err(not_in_flight(EVENT, p.request));
            };
            match p.span.and_then(|s| st.spans.get(&s)) {
                Some((s, _)) => s.id(),
                None => request.caller.id(),
            }
        };
        let msg = p.message;
        if p.fields.is_empty() {
            macro_rules! at {
                ($lvl:expr) => {
                    tracing::event!(target: REMOTE_TARGET, parent: parent, $lvl, "{}", msg)
                };
            }
            match p.level {
                WireLevel::ERROR => at!(Level::ERROR),
                WireLevel::WARN => at!(Level::WARN),
                WireLevel::INFO => at!(Level::INFO),
                WireLevel::DEBUG => at!(Level::DEBUG),
                WireLevel::TRACE => at!(Level::TRACE),
            }
        } else {
            let fields = fields_text(&p.fields);
            macro_rules! at {
                ($lvl:expr) => {
                    tracing::event!(target: REMOTE_TARGET, parent: parent, $lvl, fields = %fields, "{}", msg)
                };
            }
            match p.level {
                WireLevel::ERROR => at!(Level::ERROR),
                WireLevel::WARN => at!(Level::WARN),
                WireLevel::INFO => at!(Level::INFO),
                WireLevel::DEBUG => at!(Level::DEBUG),
                WireLevel::TRACE => at!(Level::TRACE),
            }
        }
        Ok(())
    }

    /// Resolves when the connection broke or closed.
    pub(crate) async fn closed(&self) {
        self.closed.cancelled().await;
    }

    fn pending_methods(&self) -> String {
        let st = self.lock();
        let mut m: Vec<&str> = st.pending.values().map(|p| p.method).collect();
        m.sort_unstable();
        m.dedup();
        m.join(", ")
    }
}

/// Sends `$/cancel` and discards the answer when the call's future is dropped early.
struct Abandon<'a> {
    conn: &'a Conn,
    id: u64,
    armed: bool,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if self.armed && self.conn.failure().is_none() {
            let still = self
                .conn
                .lock()
                .pending
                .get(&self.id)
                .is_some_and(|p| p.reply.is_some());
            if still {
                self.conn.cancel(self.id, true);
            }
        }
    }
}

/// A telemetry notification naming a request the suite is not waiting on.
fn not_in_flight(method: &str, request: u64) -> String {
    format!(
        "the provider sent {method} for request {request}, which is not in flight (never sent, or already answered: telemetry comes before its request's reply)"
    )
}

fn to_value<P: Serialize>(p: &P) -> Value {
    // The protocol's params types are plain data with string keys.
    serde_json::to_value(p).expect("protocol params serialise")
}

fn decode<T: DeserializeOwned>(method: &str, v: Value) -> Result<T, CallError> {
    serde_json::from_value(v).map_err(|e| {
        CallError::Protocol(format!(
            "the provider's result for {method} does not fit the protocol ({})",
            e.classify_text()
        ))
    })
}

fn parse<T: DeserializeOwned>(method: &str, v: Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| {
        format!(
            "the provider's {method} params do not fit the protocol ({})",
            e.classify_text()
        )
    })
}

trait Classify {
    fn classify_text(&self) -> String;
}

impl Classify for serde_json::Error {
    /// What went wrong and where, without the offending text.
    fn classify_text(&self) -> String {
        let what = match self.classify() {
            serde_json::error::Category::Io => "read error",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "wrong shape",
            serde_json::error::Category::Eof => "truncated",
        };
        if self.line() > 0 {
            format!("{what} at column {}", self.column())
        } else {
            what.to_owned()
        }
    }
}

fn shorten(s: &str) -> String {
    let cut: String = s.chars().take(64).collect();
    format!("{cut:?}")
}

fn fields_text(f: &std::collections::BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (k, v) in f {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    out
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

async fn write_loop<W: AsyncWrite + Unpin>(
    conn: Arc<Conn>,
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<String>,
) {
    loop {
        let line = tokio::select! {
            l = rx.recv() => l,
            _ = conn.closed() => None,
        };
        let Some(mut line) = line else { break };
        line.push('\n');
        let r = async {
            w.write_all(line.as_bytes()).await?;
            if rx.is_empty() {
                w.flush().await?;
            }
            Ok::<_, std::io::Error>(())
        }
        .await;
        if let Err(e) = r {
            let why = match exit_status(&conn).await {
                Some(s) => format!("the provider process exited ({s})"),
                None => format!("could not write to the provider: {e}"),
            };
            conn.fail(why);
            break;
        }
    }
    let _ = w.shutdown().await;
}

/// Where a failure on the provider's output happened and, for a line that is no
/// protocol message at all, what the output is for.
fn at_line(why: String, n: u64, message: bool) -> String {
    if message {
        format!("{why}, at line {n} of its output")
    } else {
        format!(
            "{why}, at line {n} of its output; stdout is reserved for protocol messages (write anything else to stderr)"
        )
    }
}

/// Whether `line` is a JSON-RPC 2.0 message at all (if not a valid one).
fn is_message(line: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("jsonrpc").and_then(Value::as_str).map(|s| s == "2.0"))
        .unwrap_or(false)
}

async fn read_loop<R: AsyncRead + Unpin>(conn: Arc<Conn>, r: R) {
    let mut lines = FramedRead::new(r, LinesCodec::new_with_max_length(MAX_LINE));
    let mut n: u64 = 0;
    loop {
        let next = tokio::select! {
            l = lines.next() => l,
            _ = conn.closed() => return,
        };
        n += 1;
        let why = match next {
            Some(Ok(line)) if line.trim().is_empty() => continue,
            Some(Ok(line)) => match conn.on_line(&line) {
                Ok(()) => continue,
                Err(why) => at_line(why, n, is_message(&line)),
            },
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => at_line(
                format!("the provider sent a line longer than {MAX_LINE} bytes"),
                n,
                false,
            ),
            Some(Err(LinesCodecError::Io(e))) if e.kind() == std::io::ErrorKind::InvalidData => {
                at_line(
                    "the provider sent a line that is not UTF-8".into(),
                    n,
                    false,
                )
            }
            Some(Err(LinesCodecError::Io(e))) => format!("reading from the provider failed: {e}"),
            None => closed_text(&conn).await,
        };
        conn.fail(why);
        return;
    }
}

/// What the end of the provider's output means: a process that exited, or one that
/// closed its output and lives on.
async fn closed_text(conn: &Conn) -> String {
    let during = conn.pending_methods();
    let during = if during.is_empty() {
        String::new()
    } else {
        format!(" while {during} awaited a reply")
    };
    match exit_status(conn).await {
        Some(s) => format!("the provider process exited ({s}){during}"),
        None => format!("the provider closed its output (stdout){during}"),
    }
}

/// How the provider process ended, when it is a process and it ended within 200 ms.
async fn exit_status(conn: &Conn) -> Option<String> {
    let has_status = conn
        .exit_status
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .is_some();
    if !has_status {
        return None;
    }
    for _ in 0..20 {
        let status = conn
            .exit_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|f| f());
        if status.is_some() {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}
