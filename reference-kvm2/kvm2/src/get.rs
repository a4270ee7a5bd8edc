//! Get, and the reads Create, Delete and ListByTag share: domain lookup, the
//! mark, and address discovery (guest agent first, then ARP).

use std::net::Ipv4Addr;

use conformance::{Ctx, Instance, ProviderId};
use libvirt_wire::{
    DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, DOMAIN_INTERFACE_ADDRESSES_SRC_ARP,
    DOMAIN_METADATA_ELEMENT, Domain, ErrorCode,
};

use crate::backend::{Session, rpc};
use crate::errors::Failure;
use crate::id::{format_id, parse_id};
use crate::provider::Kvm2;
use crate::state::{first_ipv4, map_state, may_have_address};
use crate::xml::{Mark, parse_mark};

/// What a domain's metadata says about ownership.
pub(crate) enum MarkRead {
    /// kvm2's mark.
    Marked(Mark),
    /// No element in kvm2's namespace.
    Unmarked,
    /// An element that does not parse.
    Unreadable(String),
}

/// The domain named `name`, or `None` when there is none.
pub(crate) async fn lookup_domain(s: &Session<'_>, name: &str) -> Result<Option<Domain>, Failure> {
    match rpc!(s, "DomainLookupByName", |c| c.domain_lookup_by_name(name)) {
        Ok(d) => Ok(Some(d)),
        Err(f) if f.is(ErrorCode::NoDomain) => Ok(None),
        Err(f) => Err(f),
    }
}

/// Reads kvm2's mark from a domain (live definition when running).
pub(crate) async fn read_mark(s: &Session<'_>, dom: &Domain) -> Result<MarkRead, Failure> {
    let ns = s.config.namespace.as_str();
    let r = rpc!(s, "DomainGetMetadata", |c| c.domain_get_metadata(
        dom,
        DOMAIN_METADATA_ELEMENT,
        Some(ns),
        0
    ));
    match r {
        Ok(xml) => Ok(match parse_mark(&xml) {
            Ok(m) => MarkRead::Marked(m),
            Err(e) => MarkRead::Unreadable(e.to_string()),
        }),
        Err(f) if f.is(ErrorCode::NoDomainMetadata) => Ok(MarkRead::Unmarked),
        Err(f) => Err(f),
    }
}

/// The first usable IPv4 address, from the guest agent, else from ARP; lookup
/// errors mean no address yet.
pub(crate) async fn address(s: &Session<'_>, dom: &Domain) -> Option<Ipv4Addr> {
    let agent = rpc!(s, "DomainInterfaceAddresses", |c| c
        .domain_interface_addresses(dom, DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, 0));
    if let Some(ip) = agent.ok().and_then(|i| first_ipv4(&i)) {
        return Some(ip);
    }
    let arp = rpc!(s, "DomainInterfaceAddresses", |c| c
        .domain_interface_addresses(dom, DOMAIN_INTERFACE_ADDRESSES_SRC_ARP, 0));
    arp.ok().and_then(|i| first_ipv4(&i))
}

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
        let (state, _) = rpc!(s, "DomainGetState", |c| c.domain_get_state(&dom))?;
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
