//! The look-ups the operations and the image cache share, below all of them:
//! a domain by name, kvm2's mark on it, its address (guest agent first, then
//! ARP), and a volume by name. Each answers "not there" as `None` and leaves
//! every other failure to its caller.

use std::net::Ipv4Addr;

use libvirt_wire::{
    DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, DOMAIN_INTERFACE_ADDRESSES_SRC_ARP,
    DOMAIN_METADATA_ELEMENT, Domain, ErrorCode, StoragePool, StorageVol,
};

use crate::backend::{Session, rpc};
use crate::errors::Failure;
use crate::state::first_ipv4;
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
    match rpc!(s, DomainLookupByName, |c| c.domain_lookup_by_name(name)) {
        Ok(d) => Ok(Some(d)),
        Err(f) if f.is(ErrorCode::NoDomain) => Ok(None),
        Err(f) => Err(f),
    }
}

/// Reads kvm2's mark from a domain (live definition when running).
pub(crate) async fn read_mark(s: &Session<'_>, dom: &Domain) -> Result<MarkRead, Failure> {
    let ns = s.config.namespace.as_str();
    let r = rpc!(s, DomainGetMetadata, |c| c.domain_get_metadata(
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
    let agent = rpc!(s, DomainInterfaceAddresses, |c| c
        .domain_interface_addresses(dom, DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, 0));
    if let Some(ip) = agent.ok().and_then(|i| first_ipv4(&i)) {
        return Some(ip);
    }
    let arp = rpc!(s, DomainInterfaceAddresses, |c| c
        .domain_interface_addresses(dom, DOMAIN_INTERFACE_ADDRESSES_SRC_ARP, 0));
    arp.ok().and_then(|i| first_ipv4(&i))
}

/// The volume named `name` in `pool`, or `None`.
pub(crate) async fn lookup_volume(
    s: &Session<'_>,
    pool: &StoragePool,
    name: &str,
) -> Result<Option<StorageVol>, Failure> {
    match rpc!(s, StorageVolLookupByName, |c| c
        .storage_vol_lookup_by_name(pool, name))
    {
        Ok(v) => Ok(Some(v)),
        Err(f) if f.is(ErrorCode::NoStorageVol) => Ok(None),
        Err(f) => Err(f),
    }
}
