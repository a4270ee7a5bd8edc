//! The backend seam: one cached connection per host (lazy dial, redial after a
//! drop), dedicated connections for Check, and the one decorator every libvirt
//! call goes through ([`rpc!`]): a span `kvm2.<Call>` as a child of the operation
//! span, a per-call deadline inside the operation's, and at V2 one debug line.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conformance::Ctx;
use libvirt_rpc::{Client, Keepalive};
use libvirt_wire::AuthType;
use tracing::{Instrument, Span, debug};

use crate::config::{Config, HostConfig};
use crate::dialer::{DialError, Dialer};
use crate::errors::Failure;

/// The URI kvm2 opens on every host.
pub const LIBVIRT_URI: &str = "qemu:///system";

/// Verbosity levels: 0 warnings only, 1 one line per operation, 2 one per call.
pub type Verbosity = Arc<AtomicU8>;

/// Runs one libvirt call through the decorator.
///
/// `rpc!(session, DomainLookupByName, |c| c.domain_lookup_by_name(name))`, or with
/// an explicit per-call limit as the third argument. The procedure is named by its
/// marker type in [`libvirt_wire::calls`]: the call's name is the marker's
/// `API_NAME` and its span `kvm2.<API_NAME>`, both constants, so neither can drift
/// from the procedure table.
macro_rules! rpc {
    ($s:expr, $proc:ident, |$c:ident| $call:expr) => {
        rpc!($s, $proc, $s.rpc_limit(), |$c| $call)
    };
    ($s:expr, $proc:ident, $limit:expr, |$c:ident| $call:expr) => {{
        const CALL: &str = libvirt_wire::calls::$proc::API_NAME;
        const SPAN: &str = const_format::concatcp!($crate::backend::SPAN_PREFIX, CALL);
        let s: &$crate::backend::Session<'_> = &$s;
        let span = tracing::info_span!(SPAN, host = %s.host);
        let started = std::time::Instant::now();
        let $c = s.client().with_timeout(s.limit($limit));
        let r = tracing::Instrument::instrument(s.ctx.run($call), span.clone()).await;
        let mut r = s.finish(CALL, &span, started, r);
        if s.retryable(CALL, &r) && s.refresh().await {
            let span = tracing::info_span!(SPAN, host = %s.host, retry = true);
            let started = std::time::Instant::now();
            let $c = s.client().with_timeout(s.limit($limit));
            let again = tracing::Instrument::instrument(s.ctx.run($call), span.clone()).await;
            r = s.finish(CALL, &span, started, again);
        }
        r
    }};
}
pub(crate) use rpc;

/// [`rpc!`] without the retry, for the handshake of a new connection.
macro_rules! rpc_once {
    ($s:expr, $proc:ident, |$c:ident| $call:expr) => {
        rpc_once!($s, $proc, $s.rpc_limit(), |$c| $call)
    };
    ($s:expr, $proc:ident, $limit:expr, |$c:ident| $call:expr) => {{
        const CALL: &str = libvirt_wire::calls::$proc::API_NAME;
        const SPAN: &str = const_format::concatcp!($crate::backend::SPAN_PREFIX, CALL);
        let s: &$crate::backend::Session<'_> = &$s;
        let span = tracing::info_span!(SPAN, host = %s.host);
        let started = std::time::Instant::now();
        let $c = s.client().with_timeout(s.limit($limit));
        let r = tracing::Instrument::instrument(s.ctx.run($call), span.clone()).await;
        s.finish(CALL, &span, started, r)
    }};
}
pub(crate) use rpc_once;

/// What every span of a libvirt call is named with, before the call's API name.
pub(crate) const SPAN_PREFIX: &str = "kvm2.";

struct Cached {
    generation: u64,
    client: Client,
}

/// One configured host: its cached operations connection and the lock that makes
/// concurrent callers share one dial.
pub(crate) struct HostSlot {
    pub(crate) cfg: HostConfig,
    cached: Mutex<Option<Cached>>,
    dialing: tokio::sync::Mutex<()>,
}

/// Connections to every configured host.
pub(crate) struct Hosts {
    slots: HashMap<String, Arc<HostSlot>>,
    dialer: Arc<dyn Dialer>,
    generation: AtomicU64,
}

/// One operation's view of one host's connection.
pub struct Session<'a> {
    pub(crate) ctx: &'a Ctx,
    pub(crate) host: &'a str,
    pub(crate) config: &'a Config,
    verbosity: &'a AtomicU8,
    client: Mutex<(u64, Client)>,
    slot: Option<(&'a Hosts, &'a HostSlot)>,
}

/// Calls that change nothing, so a call lost with its connection may be repeated.
fn idempotent(call: &str) -> bool {
    ["Lookup", "Get", "List", "InterfaceAddresses"]
        .iter()
        .any(|p| call.contains(p))
}

impl<'a> Session<'a> {
    /// The connection's client.
    pub(crate) fn client(&self) -> Client {
        self.client.lock().expect("session poisoned").1.clone()
    }

    /// Whether a failed call should be repeated on a new connection: it changes
    /// nothing and failed only because its connection was gone.
    pub(crate) fn retryable<T>(&self, call: &str, r: &Result<T, Failure>) -> bool {
        self.slot.is_some() && idempotent(call) && matches!(r, Err(f) if f.connection_lost())
    }

    /// Switches to the host's current connection, dialling a new one if needed.
    pub(crate) async fn refresh(&self) -> bool {
        let Some((hosts, slot)) = self.slot else {
            return false;
        };
        match hosts
            .connect(self.ctx, self.config, self.verbosity, slot)
            .await
        {
            Ok(found) => {
                *self.client.lock().expect("session poisoned") = found;
                true
            }
            Err(_) => false,
        }
    }

    /// The default per-call limit.
    pub(crate) fn rpc_limit(&self) -> Duration {
        self.config.timeouts.rpc
    }

    /// A call's deadline: `limit`, within the operation's.
    pub(crate) fn limit(&self, limit: Duration) -> Duration {
        self.ctx.remaining().map_or(limit, |r| r.min(limit))
    }

    /// Ends a call: maps its result, forgets a dead connection, logs at V2.
    pub(crate) fn finish<T>(
        &self,
        call: &'static str,
        span: &Span,
        started: Instant,
        r: Result<Result<T, libvirt_rpc::Error>, conformance::Interrupted>,
    ) -> Result<T, Failure> {
        let r = match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(err)) => Err(Failure::Rpc { call, err }),
            Err(i) => Err(Failure::Interrupted(i)),
        };
        if let Err(f) = &r
            && f.connection_lost()
            && let Some((_, slot)) = self.slot
        {
            let generation = self.client.lock().expect("session poisoned").0;
            forget(slot, generation);
        }
        if self.verbosity.load(Ordering::Relaxed) >= 2 {
            let elapsed_ms = started.elapsed().as_millis() as u64;
            span.in_scope(|| match &r {
                Ok(_) => debug!(call, host = self.host, elapsed_ms, "libvirt call succeeded"),
                Err(f) => {
                    debug!(call, host = self.host, elapsed_ms, error = %f, "libvirt call failed")
                }
            });
        }
        r
    }
}

fn forget(slot: &HostSlot, generation: u64) {
    let mut c = slot.cached.lock().expect("host slot poisoned");
    if c.as_ref().is_some_and(|c| c.generation == generation) {
        *c = None;
    }
}

impl Hosts {
    pub(crate) fn new(config: &Config, dialer: Arc<dyn Dialer>) -> Hosts {
        let slots = config
            .hosts
            .iter()
            .map(|h| {
                (
                    h.name.clone(),
                    Arc::new(HostSlot {
                        cfg: h.clone(),
                        cached: Mutex::new(None),
                        dialing: tokio::sync::Mutex::new(()),
                    }),
                )
            })
            .collect();
        Hosts {
            slots,
            dialer,
            generation: AtomicU64::new(1),
        }
    }

    pub(crate) fn slot(&self, host: &str) -> Option<&Arc<HostSlot>> {
        self.slots.get(host)
    }

    /// A session on `host`'s operations connection, dialling it when there is none.
    pub(crate) async fn session<'a>(
        &'a self,
        ctx: &'a Ctx,
        config: &'a Config,
        verbosity: &'a AtomicU8,
        slot: &'a HostSlot,
    ) -> Result<Session<'a>, Failure> {
        let found = self.connect(ctx, config, verbosity, slot).await?;
        Ok(Session {
            ctx,
            host: &slot.cfg.name,
            config,
            verbosity,
            client: Mutex::new(found),
            slot: Some((self, slot)),
        })
    }

    /// The host's operations connection (generation and client), dialled when
    /// there is none.
    async fn connect(
        &self,
        ctx: &Ctx,
        config: &Config,
        verbosity: &AtomicU8,
        slot: &HostSlot,
    ) -> Result<(u64, Client), Failure> {
        let cached = |slot: &HostSlot| {
            let c = slot.cached.lock().expect("host slot poisoned");
            c.as_ref()
                .filter(|c| !c.client.is_closed())
                .map(|c| (c.generation, c.client.clone()))
        };
        let found = match cached(slot) {
            Some(found) => found,
            None => {
                let _turn = ctx
                    .run(slot.dialing.lock())
                    .await
                    .map_err(Failure::Interrupted)?;
                match cached(slot) {
                    Some(found) => found,
                    None => {
                        let client = dial(ctx, config, verbosity, &*self.dialer, &slot.cfg).await?;
                        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
                        *slot.cached.lock().expect("host slot poisoned") = Some(Cached {
                            generation,
                            client: client.clone(),
                        });
                        (generation, client)
                    }
                }
            }
        };
        Ok(found)
    }

    /// A session on a new connection of its own (for Check); it closes when dropped.
    pub(crate) async fn dedicated<'a>(
        &'a self,
        ctx: &'a Ctx,
        config: &'a Config,
        verbosity: &'a AtomicU8,
        host: &'a HostConfig,
    ) -> Result<Session<'a>, Failure> {
        let client = dial(ctx, config, verbosity, &*self.dialer, host).await?;
        Ok(Session {
            ctx,
            host: &host.name,
            config,
            verbosity,
            client: Mutex::new((0, client)),
            slot: None,
        })
    }
}

/// Dials `host`, starts the connection task and opens libvirt, all in a
/// `kvm2.dial` span under the dial deadline.
async fn dial(
    ctx: &Ctx,
    config: &Config,
    verbosity: &AtomicU8,
    dialer: &dyn Dialer,
    host: &HostConfig,
) -> Result<Client, Failure> {
    let span = tracing::info_span!("kvm2.dial", host = %host.name);
    let started = Instant::now();
    let r = async {
        let dctx = ctx.narrowed(config.timeouts.dial);
        let stream = match dctx.run(dialer.dial(host)).await {
            Ok(r) => r.map_err(Failure::Dial)?,
            Err(conformance::Interrupted::DeadlineExceeded) if ctx.interrupted().is_none() => {
                return Err(Failure::Dial(DialError::Timeout));
            }
            Err(i) => return Err(Failure::Interrupted(i)),
        };
        let rpc = libvirt_rpc::Config {
            call_timeout: config.timeouts.rpc,
            keepalive: Some(Keepalive {
                interval: config.timeouts.keepalive_interval,
                count: config.timeouts.keepalive_count,
            }),
        };
        let (client, connection) = rpc.attach(stream);
        // The connection task runs outside any operation's span, on the
        // caller's runtime, as does the SSH session task under it: a caller
        // that wakes the connection task, and the connection task that wakes
        // the session task, usually hand over on the same worker (the
        // runtime runs the task a worker just woke next). A thread of their
        // own costs every call two crossings between threads: the `upload`
        // bench measures 1.18-1.29x the calls per second this way
        // (BENCHES.md).
        tokio::spawn(connection.instrument(Span::none()));
        let s = Session {
            ctx: &dctx,
            host: &host.name,
            config,
            verbosity,
            client: Mutex::new((0, client.clone())),
            slot: None,
        };
        let types = rpc_once!(s, AuthList, |c| c.auth_list());
        let types = match types {
            Err(Failure::Interrupted(conformance::Interrupted::DeadlineExceeded))
                if ctx.interrupted().is_none() =>
            {
                return Err(Failure::Dial(DialError::Timeout));
            }
            other => other?,
        };
        if types.first() == Some(&AuthType::Polkit) {
            let done = rpc_once!(s, AuthPolkit, |c| c.auth_polkit())?;
            if !done {
                return Err(Failure::Dial(DialError::AuthFailed(
                    "polkit authentication did not complete".into(),
                )));
            }
        }
        rpc_once!(s, ConnectOpen, |c| c.connect_open(LIBVIRT_URI))?;
        Ok(client)
    }
    .instrument(span.clone())
    .await;
    if verbosity.load(Ordering::Relaxed) >= 2 {
        let elapsed_ms = started.elapsed().as_millis() as u64;
        span.in_scope(|| match &r {
            Ok(_) => debug!(host = %host.name, elapsed_ms, "dialled"),
            Err(f) => debug!(host = %host.name, elapsed_ms, error = %f, "dial failed"),
        });
    }
    r
}
