//! Get: the domain, its mark, its state and (when it may have one) its address.

use conformance::{Ctx, Instance, ProviderId};

use crate::backend::rpc;
use crate::errors::Failure;
use crate::id::{format_id, parse_id};
use crate::lookup::{MarkRead, address, lookup_domain, read_mark};
use crate::provider::Kvm2;
use crate::state::{map_state, may_have_address};

impl Kvm2 {
    pub(crate) async fn get_impl(&self, ctx: &Ctx, id: &ProviderId) -> Result<Instance, Failure> {
        let p = parse_id(id)
            .ok_or_else(|| Failure::Refused(format!("malformed id {:?}", id.as_str())))?;
        if self.host(&p.host).is_none() {
            return Err(Failure::Refused(format!(
                "host {:?} is not configured",
                p.host
            )));
        }
        let s = self.session(ctx, &p.host).await?;
        let dom = lookup_domain(&s, &p.name)
            .await?
            .ok_or_else(|| Failure::Missing(format!("no domain {} on {}", p.name, p.host)))?;
        let mark = match read_mark(&s, &dom).await? {
            MarkRead::Marked(m) => m,
            MarkRead::Unmarked => {
                return Err(Failure::Missing(format!(
                    "domain {} on {} is not managed by kvm2",
                    p.name, p.host
                )));
            }
            MarkRead::Unreadable(e) => {
                return Err(Failure::Refused(format!(
                    "domain {} on {}: {e}",
                    p.name, p.host
                )));
            }
        };
        let (state, _) = rpc!(s, DomainGetState, |c| c.domain_get_state(&dom))?;
        let ipv4 = if may_have_address(state) {
            address(&s, &dom).await
        } else {
            None
        };
        Ok(Instance {
            id: format_id(&p.host, &p.name),
            name: p.name,
            state: map_state(state, ipv4.is_some()),
            ipv4,
            uid: mark.uid,
            tag: mark.tag,
            created_at: mark.created_at,
        })
    }
}
