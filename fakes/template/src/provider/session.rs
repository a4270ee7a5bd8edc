//! The seam: one operation's view of one site, its connection, and the decorator
//! every backend call runs through (span, V2 line, deadline and token).

use std::future::Future;

use conformance::Ctx;
use conformance::fixture::Verbosity;
use conformance::profile::ChildSpans;
use tracing::{Instrument, Level, Span, debug, info};

use crate::backend::{BackendError, ConnId, Proc};
use crate::config::{CredentialSource, token_env_var};

use super::{Failure, Slot, TemplateProvider};

/// One operation's view of one site: the context, the operation span and the
/// connection every call of the operation at that site uses.
pub(crate) struct Session<'a> {
    pub(crate) p: &'a TemplateProvider,
    pub(crate) ctx: &'a Ctx,
    pub(crate) span: &'a Span,
    pub(crate) site: &'a str,
    pub(crate) conn: ConnId,
}

/// How one backend call is traced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Trace {
    /// The call gets a span of its own (`child-spans=span-decorator`).
    pub(crate) span: bool,
    /// That span is a child of the operation's span.
    pub(crate) attached: bool,
    /// The level of the call's log line, if it gets one (V2 only: debug).
    pub(crate) line: Option<Level>,
    /// That span is named after the procedure (`template.<procedure>`).
    pub(crate) named: bool,
}

impl Session<'_> {
    /// The seam: runs one backend call with its span, its log line and the deadline.
    pub(crate) async fn call<T>(
        &self,
        proc: Proc,
        fut: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, Failure> {
        let r = self
            .p
            .instrumented(self.ctx, self.span, self.site, proc, fut)
            .await;
        if matches!(r, Err(Failure::Backend(BackendError::Closed))) {
            self.p.forget(self.site, self.conn);
        }
        r
    }

    /// A read that changes nothing: a busy answer is retried once before it counts.
    pub(super) async fn read<T, Fut>(&self, proc: Proc, fut: impl Fn() -> Fut) -> Result<T, Failure>
    where
        Fut: Future<Output = Result<T, BackendError>>,
    {
        match self.call(proc, fut()).await {
            Err(Failure::Backend(BackendError::Busy(_))) => self.call(proc, fut()).await,
            r => r,
        }
    }
}

macro_rules! call_span {
    ($parent:expr, $proc:expr, $site:expr; $($p:ident => $n:literal),* $(,)?) => {
        match $proc {
            $(Proc::$p => tracing::debug_span!(parent: $parent, $n, site = $site),)*
        }
    };
}

impl TemplateProvider {
    /// Runs one backend call under `span` with its own child span and V2 line.
    pub(super) async fn instrumented<T>(
        &self,
        ctx: &Ctx,
        op_span: &Span,
        site: &str,
        proc: Proc,
        fut: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, Failure> {
        let correct = Trace {
            // child-spans=none: the backend call runs in the operation's span.
            span: self.config.declared.child_spans() != ChildSpans::None,
            attached: true,
            named: true,
            line: (self.logs() && self.verbosity() >= Verbosity::V2).then_some(Level::DEBUG),
        };
        let trace = self.seams().trace(self, correct);
        let parent = if trace.attached { op_span.id() } else { None };
        let span = if !trace.span {
            Span::none()
        } else if !trace.named {
            tracing::debug_span!(parent: parent, "call", site, call = proc.as_str())
        } else {
            call_span!(parent, proc, site;
                Dial => "template.dial", Lookup => "template.lookup",
                Define => "template.define", CreateDisk => "template.create_disk",
                CreateSeed => "template.create_seed", Start => "template.start",
                Addresses => "template.addresses", Stop => "template.stop",
                Undefine => "template.undefine", DeleteDisk => "template.delete_disk",
                DeleteSeed => "template.delete_seed", List => "template.list",
                ReadMark => "template.read_mark", Capacity => "template.capacity",
                Ping => "template.ping",
            )
        };
        let line_parent = if trace.span && trace.attached {
            &span
        } else {
            op_span
        };
        match trace.line {
            Some(Level::INFO) => {
                info!(parent: line_parent, site, call = proc.as_str(), "backend call")
            }
            Some(_) => debug!(parent: line_parent, site, call = proc.as_str(), "backend call"),
            None => {}
        }
        match ctx.run(fut.instrument(span)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Failure::Backend(e)),
            Err(i) => Err(Failure::Interrupted(i)),
        }
    }

    pub(super) fn slot(&self, site: &str) -> &Slot {
        &self.slots[site]
    }

    /// The cached connection of `site`, if there is one.
    pub(crate) fn cached(&self, site: &str) -> Option<ConnId> {
        *self
            .slot(site)
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn forget(&self, site: &str, conn: ConnId) {
        let mut c = self
            .slot(site)
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if *c == Some(conn) {
            *c = None;
        }
    }

    /// The credential token of `site`: from its file (re-read on every dial), or from the
    /// environment map or inline tokens the provider was constructed with.
    pub(super) fn read_token(&self, site: &str) -> Result<String, BackendError> {
        let token = match &self.config.credentials {
            CredentialSource::MountedFiles => {
                let path = self.config.token_file(site);
                std::fs::read_to_string(&path)
                    .map(|t| t.trim().to_owned())
                    .map_err(|_| BackendError::CredentialsMissing(path.display().to_string()))
            }
            CredentialSource::Env(env) => {
                let var = token_env_var(site);
                env.get(&var)
                    .cloned()
                    .ok_or(BackendError::CredentialsMissing(format!(
                        "environment variable {var}"
                    )))
            }
            CredentialSource::Inline(tokens) => tokens.get(site).cloned().ok_or_else(|| {
                BackendError::CredentialsMissing(format!("the inline token of {site}"))
            }),
        };
        self.seams().token(site, token)
    }

    /// Reads the identity `site` is trusted to present from its file (on every dial).
    pub(super) fn read_known_host(&self, site: &str) -> Result<String, BackendError> {
        let path = self.config.known_host_file(site);
        std::fs::read_to_string(&path)
            .map(|t| t.trim().to_owned())
            .map_err(|_| BackendError::CredentialsMissing(path.display().to_string()))
    }

    /// Opens a fresh connection to `site`.
    pub(crate) async fn dial(&self, ctx: &Ctx, span: &Span, site: &str) -> Result<ConnId, Failure> {
        let token = self.read_token(site)?;
        let trusted = self.read_known_host(site)?;
        let dial = self.backend.dial(site, &token, &trusted);
        self.instrumented(ctx, span, site, Proc::Dial, dial).await
    }

    /// The cached connection to `site`, dialled if there is none.
    pub(crate) async fn session<'a>(
        &'a self,
        ctx: &'a Ctx,
        span: &'a Span,
        site: &'a str,
    ) -> Result<Session<'a>, Failure> {
        let slot = self.slot(site);
        let cached = *slot.conn.lock().unwrap_or_else(|e| e.into_inner());
        let conn = match cached {
            Some(c) => c,
            None => {
                let _dialing = ctx.run(slot.dialing.lock()).await?;
                let again = *slot.conn.lock().unwrap_or_else(|e| e.into_inner());
                match again {
                    Some(c) => c,
                    None => {
                        // Dialling changes nothing, so a busy answer is retried once.
                        let dialled = match self.dial(ctx, span, site).await {
                            Err(Failure::Backend(BackendError::Busy(_))) => {
                                self.dial(ctx, span, site).await
                            }
                            r => r,
                        };
                        let c = self.seams().dialled(dialled)?;
                        *slot.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                        c
                    }
                }
            }
        };
        Ok(Session {
            p: self,
            ctx,
            span,
            site,
            conn,
        })
    }
}
