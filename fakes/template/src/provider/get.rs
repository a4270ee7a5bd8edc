//! Get: the instance, its state and its address, read from the backend alone.

use std::net::IpAddr;

use conformance::fixture::Power;
use conformance::profile::{CreatedAt, IpSource};
use conformance::{Ctx, Error, ErrorKind, Instance, Op, ProviderId, State};
use tracing::Span;

use crate::backend::{BackendError, Proc};

use super::{Failure, TemplateProvider, state_of};

impl TemplateProvider {
    pub(super) async fn get_op(
        &self,
        ctx: &Ctx,
        span: &Span,
        id: &ProviderId,
    ) -> Result<Instance, Error> {
        let q = self.config.quirks;
        let (site, name) = self.locate(Op::Get, id)?;
        if !self.config.has_site(site) {
            return Err(self.error(
                Op::Get,
                ErrorKind::Permanent,
                format!("site {site:?} is not configured"),
            ));
        }
        if q.get_busy_while_locked && self.locks.is_held(&self.lock_key(site, name)) {
            return Err(self.error(Op::Get, ErrorKind::Transient, format!("{name} is busy")));
        }
        let fail = |what: String, f: Failure| {
            if q.get_closed_as_not_found && f == Failure::Backend(BackendError::Closed) {
                return self
                    .error(Op::Get, ErrorKind::NotFound, what)
                    .with_source(f);
            }
            if q.get_not_found_as_transient && f.is_no_object() {
                return self
                    .error(Op::Get, ErrorKind::Transient, what)
                    .with_source(f);
            }
            self.fail(Op::Get, what, f)
        };
        let s = self
            .session(ctx, span, site)
            .await
            .map_err(|f| fail(format!("connecting to {site}"), f))?;
        let (key, info) = self
            .look_up(&s, name)
            .await
            .map_err(|f| fail(format!("looking up {name}"), f))?;
        let mark = self
            .mark_of(&s, &key)
            .await
            .map_err(|f| fail(format!("reading the mark of {name}"), f))?
            .ok_or_else(|| {
                self.error(
                    Op::Get,
                    ErrorKind::NotFound,
                    format!("{name} is not managed by this provider"),
                )
            })?;
        let (state, ipv4) = match info.power {
            Power::Paused if q.paused_is_provisioning => (State::Provisioning, None),
            // ip-source=none: the backend's word that the guest booted makes it Running.
            Power::Running if self.config.declared.ip_source() == IpSource::None => {
                let state = if info.booted {
                    State::Running
                } else {
                    State::Provisioning
                };
                (state, None)
            }
            Power::Running => match s
                .call(Proc::Addresses, self.backend.addresses(s.conn, site, &key))
                .await
            {
                Ok(addrs) if q.any_address_is_usable => match addrs.first() {
                    Some(IpAddr::V4(v4)) => (State::Running, Some(*v4)),
                    _ => (State::Provisioning, None),
                },
                Ok(addrs) => state_of(Power::Running, Some(&addrs)),
                Err(f @ (Failure::Interrupted(_) | Failure::Backend(BackendError::Closed))) => {
                    return Err(fail(format!("reading the addresses of {name}"), f));
                }
                Err(f) if f.is_no_object() => {
                    return Err(fail(format!("reading the addresses of {name}"), f));
                }
                Err(_) => (State::Provisioning, None),
            },
            p => state_of(p, None),
        };
        let created_at = if q.created_at_in_memory {
            self.written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .copied()
        } else {
            match self.config.declared.created_at() {
                CreatedAt::WrittenAtCreate => mark.created_at,
                CreatedAt::BackendReported => Some(info.defined_at),
                CreatedAt::None => None,
            }
        };
        Ok(Instance {
            id: id.clone(),
            name: name.to_owned(),
            state,
            ipv4,
            uid: mark.uid,
            tag: mark.tag,
            created_at,
        })
    }
}
