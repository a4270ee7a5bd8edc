//! Check: every site at once, each on a connection of its own.

use std::time::Duration;

use conformance::{BoxFuture, Ctx, HealthReason, HostHealth};
use futures_util::future::join_all;
use tokio::time::Instant;
use tracing::Span;

use crate::backend::{BackendError, Proc};

use super::{CONTAINER_MISSING, Failure, Session, TemplateProvider};

/// The longest Check waits for one site, whatever the caller's deadline: a site that
/// takes the connection and answers nothing is reported Timeout within it, and the
/// other sites' answers do not wait for it. It is longer than the deadlines callers
/// usually give a Check, so it bounds only a Check given a generous deadline or none.
const SITE_BUDGET: Duration = Duration::from_secs(2);

impl TemplateProvider {
    pub(super) async fn check_op(&self, ctx: &Ctx, span: &Span) -> Vec<HostHealth> {
        let mut visits: Vec<BoxFuture<'_, HostHealth>> = self
            .config
            .sites
            .iter()
            .map(|site| Box::pin(self.check_site(ctx, span, &site.name)) as BoxFuture<'_, _>)
            .collect();
        match self.seams().visit(&mut visits) {
            Some(visited) => visited.await,
            None => join_all(visits).await,
        }
    }

    /// Checks one site on a connection of its own, closed afterwards, within
    /// [`SITE_BUDGET`] or the caller's deadline, whichever comes first.
    pub(super) async fn check_site(&self, ctx: &Ctx, span: &Span, site: &str) -> HostHealth {
        let budget = Instant::now() + SITE_BUDGET;
        let ctx = &ctx
            .clone()
            .deadline_at(ctx.deadline().map_or(budget, |d| d.min(budget)));
        let mut details =
            std::collections::BTreeMap::from([("location".to_owned(), site.to_owned())]);
        let r: Result<(usize, u64), Failure> = async {
            let (conn, own) = match self.seams().borrowed_conn(self, ctx, span, site) {
                Some(borrowed) => (borrowed.await?, false),
                None => (self.dial(ctx, span, site).await?, true),
            };
            let s = Session {
                p: self,
                ctx,
                span,
                site,
                conn,
            };
            let r = async {
                let n = s.call(Proc::Ping, self.backend.ping(s.conn, site)).await?;
                let free = s
                    .call(Proc::Capacity, self.backend.capacity(s.conn, site))
                    .await
                    .map_err(|f| self.seams().container_read(f))?;
                Ok((n, free))
            }
            .await;
            if own {
                self.backend.close(site, s.conn);
            }
            self.seams().checked(self, site);
            r
        }
        .await;
        let (ready, reason, message) = match r {
            Ok((n, free)) => {
                details.insert("instances".into(), n.to_string());
                details.insert("freeBytes".into(), free.to_string());
                (true, HealthReason::Ready, format!("{site} is ready"))
            }
            Err(f) => {
                let reason = match &f {
                    Failure::Interrupted(_) => HealthReason::Timeout,
                    // A site that takes the connection and denies the calls: our
                    // identity lacks what the calls need.
                    Failure::Backend(BackendError::AuthFailed | BackendError::Denied(_)) => {
                        HealthReason::AuthFailed
                    }
                    Failure::Backend(BackendError::HostKeyRejected) => {
                        HealthReason::HostKeyRejected
                    }
                    Failure::Backend(BackendError::CredentialsMissing(_)) => {
                        HealthReason::CredentialsUnavailable
                    }
                    Failure::Backend(BackendError::NoContainer(_)) => {
                        HealthReason::Other(CONTAINER_MISSING.into())
                    }
                    Failure::Backend(_) => HealthReason::Unreachable,
                };
                let reason = self.seams().health_reason(&f, reason);
                (false, reason, format!("{site}: {f}"))
            }
        };
        HostHealth {
            location: site.to_owned(),
            ready,
            reason,
            message,
            details,
        }
    }
}
