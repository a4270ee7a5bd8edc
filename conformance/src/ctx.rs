//! The call context every provider method takes: a deadline, a cancellation token and
//! the parent span under which the provider opens its operation span.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Span;

/// Why a call stopped before its work finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// The context's deadline passed.
    DeadlineExceeded,
    /// The context's cancellation token fired.
    Cancelled,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Interrupted::DeadlineExceeded => f.write_str("deadline exceeded"),
            Interrupted::Cancelled => f.write_str("call cancelled"),
        }
    }
}

impl std::error::Error for Interrupted {}

/// The context of one provider call.
///
/// When the deadline passes or the token fires, the call must return a
/// [`Transient`](crate::ErrorKind::Transient) error promptly.
/// Dropping the call's future at any await point must also be safe.
/// A provider opens its operation span as a child of [`Ctx::span`], so whoever made
/// the call can attribute the provider's spans and log lines to it.
#[derive(Clone, Debug)]
pub struct Ctx {
    deadline: Option<Instant>,
    cancel: CancellationToken,
    span: Span,
}

impl Default for Ctx {
    fn default() -> Self {
        Ctx::new()
    }
}

impl Ctx {
    /// A context with no deadline, a fresh token and the current span as parent.
    pub fn new() -> Self {
        Ctx {
            deadline: None,
            cancel: CancellationToken::new(),
            span: Span::current(),
        }
    }

    /// A context whose deadline is `timeout` from now.
    pub fn with_timeout(timeout: Duration) -> Self {
        Ctx::new().deadline_at(Instant::now() + timeout)
    }

    /// Sets the deadline.
    pub fn deadline_at(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the cancellation token.
    pub fn cancelled_by(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Sets the parent span.
    pub fn in_span(mut self, span: Span) -> Self {
        self.span = span;
        self
    }

    /// The deadline, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The cancellation token.
    pub fn token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The span under which the provider opens its operation span.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Time left until the deadline (zero once it passed); `None` without a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether the call should stop now, and why.
    pub fn interrupted(&self) -> Option<Interrupted> {
        if self.cancel.is_cancelled() {
            return Some(Interrupted::Cancelled);
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Some(Interrupted::DeadlineExceeded),
            _ => None,
        }
    }

    /// A context for a sub-step: the earlier of this deadline and `now + limit`,
    /// the same token and span.
    pub fn narrowed(&self, limit: Duration) -> Ctx {
        let cap = Instant::now() + limit;
        let deadline = Some(self.deadline.map_or(cap, |d| d.min(cap)));
        Ctx {
            deadline,
            cancel: self.cancel.clone(),
            span: self.span.clone(),
        }
    }

    /// Runs `fut` until it completes, the deadline passes or the token fires.
    ///
    /// `fut` is dropped when the call is interrupted, so it must itself be cancel safe.
    pub async fn run<F: Future>(&self, fut: F) -> Result<F::Output, Interrupted> {
        if let Some(why) = self.interrupted() {
            return Err(why);
        }
        let sleep = async {
            match self.deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(Interrupted::Cancelled),
            _ = sleep => Err(Interrupted::DeadlineExceeded),
            out = fut => Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn run_stops_at_the_deadline() {
        let ctx = Ctx::with_timeout(Duration::from_millis(20));
        let got = ctx.run(std::future::pending::<()>()).await;
        assert_eq!(got, Err(Interrupted::DeadlineExceeded));
    }

    #[tokio::test]
    async fn run_stops_when_cancelled() {
        let ctx = Ctx::new();
        ctx.token().cancel();
        assert_eq!(ctx.run(async { 1 }).await, Err(Interrupted::Cancelled));
    }

    #[tokio::test]
    async fn narrowed_keeps_the_earlier_deadline() {
        let ctx = Ctx::with_timeout(Duration::from_millis(10));
        let sub = ctx.narrowed(Duration::from_secs(60));
        assert_eq!(sub.deadline(), ctx.deadline());
        assert_eq!(ctx.run(async { 7 }).await, Ok(7));
    }
}
