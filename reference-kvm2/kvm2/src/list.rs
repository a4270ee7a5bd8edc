//! ListByTag: every host concurrently, in configuration order; metadata reads
//! pipelined per host; no address lookups; unreadable domains skipped.

use conformance::{Ctx, Instance, Listing};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use libvirt_wire::{Domain, ErrorCode};
use tracing::warn;

use crate::backend::{Session, rpc};
use crate::errors::Failure;
use crate::id::format_id;
use crate::lookup::{MarkRead, read_mark};
use crate::provider::Kvm2;
use crate::state::map_state;
use crate::xml::Mark;

/// Calls in flight per host. libvirtd works on five calls per client at once
/// (`max_client_requests`) and leaves the rest unread in the socket, so the
/// limit that matters is the server's: keeping a whole listing phase in
/// flight costs one round trip per phase instead of one per five domains.
/// The bound only caps what one listing queues (measured in
/// `benches/list_by_tag.rs`).
const PIPELINE: usize = 512;

impl Kvm2 {
    pub(crate) async fn list_impl(&self, ctx: &Ctx, tag: &str) -> Result<Listing, Failure> {
        let hosts: Vec<String> = self
            .inner
            .config
            .hosts
            .iter()
            .map(|h| h.name.clone())
            .collect();
        let per_host =
            futures_util::future::join_all(hosts.iter().map(|h| self.list_host(ctx, h, tag))).await;
        let mut instances = Vec::new();
        for r in per_host {
            instances.extend(r?);
        }
        Ok(Listing {
            instances,
            unreachable: Vec::new(),
        })
    }

    async fn list_host(&self, ctx: &Ctx, host: &str, tag: &str) -> Result<Vec<Instance>, Failure> {
        let s = self.session(ctx, host).await?;
        let doms = rpc!(s, ConnectListAllDomains, |c| c.connect_list_all_domains(0))?;
        let marked: Vec<(Domain, Mark)> = stream::iter(doms)
            .map(|d| {
                let s = &s;
                async move { mark_of(s, host, d).await }
            })
            .buffered(PIPELINE)
            .try_filter_map(|m| async move { Ok(m.filter(|(_, m)| m.tag == tag)) })
            .try_collect()
            .await?;
        let listed: Vec<Option<Instance>> = stream::iter(marked)
            .map(|(d, m)| {
                let s = &s;
                async move {
                    match rpc!(s, DomainGetState, |c| c.domain_get_state(&d)) {
                        Ok((state, _)) => Ok(Some(Instance {
                            id: format_id(host, &d.name),
                            name: d.name.clone(),
                            state: map_state(state, false),
                            ipv4: None,
                            uid: m.uid,
                            tag: m.tag,
                            created_at: m.created_at,
                        })),
                        Err(f) if f.is(ErrorCode::NoDomain) => Ok(None),
                        Err(f) if refused(&f) => {
                            warn!(host, domain = %d.name, error = %f, "skipping a domain whose state cannot be read");
                            Ok(None)
                        }
                        Err(f) => Err(f),
                    }
                }
            })
            .buffered(PIPELINE)
            .try_collect()
            .await?;
        let mut listed: Vec<Instance> = listed.into_iter().flatten().collect();
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listed)
    }
}

/// The mark of one listed domain; `None` for unmarked, vanished or unreadable ones.
async fn mark_of(
    s: &Session<'_>,
    host: &str,
    d: Domain,
) -> Result<Option<(Domain, Mark)>, Failure> {
    match read_mark(s, &d).await {
        Ok(MarkRead::Marked(m)) => Ok(Some((d, m))),
        Ok(MarkRead::Unmarked) => Ok(None),
        Ok(MarkRead::Unreadable(e)) => {
            warn!(host, domain = %d.name, "skipping a domain whose mark is unreadable: {e}");
            Ok(None)
        }
        Err(f) if f.is(ErrorCode::NoDomain) => Ok(None),
        Err(f) if refused(&f) => {
            warn!(host, domain = %d.name, error = %f, "skipping a domain whose metadata cannot be read");
            Ok(None)
        }
        Err(f) => Err(f),
    }
}

/// Whether libvirt answered a per-domain read with an error of its own (not a lost
/// connection, not a timeout): that domain cannot be read, the others still can.
fn refused(f: &Failure) -> bool {
    matches!(f, Failure::Rpc { .. }) && f.code().is_some() && !f.is(ErrorCode::OperationTimeout)
}
