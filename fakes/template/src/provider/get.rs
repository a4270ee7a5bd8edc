//! Get: the instance, its state and its address, read from the backend alone.

use std::net::IpAddr;

use conformance::fixture::Power;
use conformance::profile::{CreatedAt, IpSource};
use conformance::{Ctx, Error, ErrorKind, Instance, Op, ProviderId, State};
use tracing::Span;

use crate::backend::{BackendError, Proc};

use super::{Failure, TemplateProvider, state_of};

/// What the backend said of an instance Get reports.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen<'a> {
    /// Its power state.
    pub(crate) power: Power,
    /// The addresses it reported, when they were read and the read succeeded.
    pub(crate) addresses: Option<&'a [IpAddr]>,
}

impl TemplateProvider {
    pub(super) async fn get_op(
        &self,
        ctx: &Ctx,
        span: &Span,
        id: &ProviderId,
    ) -> Result<Instance, Error> {
        let (site, name) = self.locate(Op::Get, id)?;
        if !self.config.has_site(site) {
            return Err(self.error(
                Op::Get,
                ErrorKind::Permanent,
                format!("site {site:?} is not configured"),
            ));
        }
        self.seams().admit(self, Op::Get, site, name)?;
        let fail = |what: String, f: Failure| self.fail(Op::Get, what, f);
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
        // ip-source=none: the backend's word that the guest booted makes it Running.
        let by_address = self.config.declared.ip_source() != IpSource::None;
        let addresses = match info.power {
            Power::Running if by_address => match s
                .call(Proc::Addresses, self.backend.addresses(s.conn, site, &key))
                .await
            {
                Ok(addrs) => Some(addrs),
                Err(f) => {
                    // A dropped connection, the deadline or a vanished instance fail
                    // Get; any other failure to read them: not known to be reachable yet.
                    let fatal = matches!(
                        f,
                        Failure::Interrupted(_) | Failure::Backend(BackendError::Closed)
                    ) || f.is_no_object();
                    if self.seams().address_failure_fatal(&f, fatal) {
                        return Err(fail(format!("reading the addresses of {name}"), f));
                    }
                    None
                }
            },
            _ => None,
        };
        let (state, ipv4) = match info.power {
            Power::Running if !by_address => {
                let state = if info.booted {
                    State::Running
                } else {
                    State::Provisioning
                };
                (state, None)
            }
            p => state_of(p, addresses.as_deref()),
        };
        let created_at = match self.config.declared.created_at() {
            CreatedAt::WrittenAtCreate => mark.created_at,
            CreatedAt::BackendReported => Some(info.defined_at),
            CreatedAt::None => None,
        };
        let seen = Seen {
            power: info.power,
            addresses: addresses.as_deref(),
        };
        Ok(self.seams().reported(
            seen,
            Instance {
                id: id.clone(),
                name: name.to_owned(),
                state,
                ipv4,
                uid: mark.uid,
                tag: mark.tag,
                created_at,
            },
        ))
    }
}
