//! Delete: the ownership guard, destroy, undefine with the NVRAM flag, then the
//! overlay and seed volumes; every part may already be gone.

use conformance::{Ctx, ProviderId};
use libvirt_wire::{DOMAIN_UNDEFINE_NVRAM, ErrorCode, STORAGE_VOL_DELETE_NORMAL};

use crate::backend::{Session, rpc};
use crate::errors::Failure;
use crate::id::parse_id;
use crate::lookup::{MarkRead, lookup_domain, lookup_volume, read_mark};
use crate::names::{overlay_volume, seed_volume};
use crate::provider::Kvm2;

impl Kvm2 {
    pub(crate) async fn delete_impl(&self, ctx: &Ctx, id: &ProviderId) -> Result<(), Failure> {
        let p = parse_id(id)
            .ok_or_else(|| Failure::Refused(format!("malformed id {:?}", id.as_str())))?;
        if self.host(&p.host).is_none() {
            // Nothing of kvm2's can live on a host it does not know.
            return Ok(());
        }
        let _guard = self
            .lock_name(ctx, format!("{}/{}", p.host, p.name))
            .await?;
        let s = self.session(ctx, &p.host).await?;
        if let Some(dom) = lookup_domain(&s, &p.name).await? {
            let mark = match read_mark(&s, &dom).await {
                // Gone between the lookup and the read: only the volumes are left.
                Err(f) if f.is(ErrorCode::NoDomain) => None,
                other => Some(other?),
            };
            match mark {
                None => return self.delete_volumes(&s, &p.name).await,
                Some(MarkRead::Marked(_)) => {}
                Some(MarkRead::Unmarked) => {
                    return Err(Failure::Refused(format!(
                        "domain {} on {} does not carry kvm2's mark; it is left alone",
                        p.name, p.host
                    )));
                }
                Some(MarkRead::Unreadable(e)) => {
                    return Err(Failure::Refused(format!(
                        "domain {} on {} has an unreadable mark ({e}); it is left alone",
                        p.name, p.host
                    )));
                }
            }
            match rpc!(s, DomainDestroy, |c| c.domain_destroy(&dom)) {
                Ok(()) => {}
                Err(f) if f.is(ErrorCode::OperationInvalid) || f.is(ErrorCode::NoDomain) => {}
                Err(f) => return Err(f),
            }
            match rpc!(s, DomainUndefineFlags, |c| c
                .domain_undefine_flags(&dom, DOMAIN_UNDEFINE_NVRAM))
            {
                Ok(()) => {}
                Err(f) if f.is(ErrorCode::NoDomain) => {}
                Err(f) => return Err(f),
            }
        }
        self.delete_volumes(&s, &p.name).await
    }

    async fn delete_volumes(&self, s: &Session<'_>, name: &str) -> Result<(), Failure> {
        let pool_name = self.inner.config.pool.as_str();
        let pool = match rpc!(s, StoragePoolLookupByName, |c| c
            .storage_pool_lookup_by_name(pool_name))
        {
            Ok(p) => p,
            Err(f) if f.is(ErrorCode::NoStoragePool) => return Ok(()),
            Err(f) => return Err(f),
        };
        for vol_name in [overlay_volume(name), seed_volume(name)] {
            let vol = match lookup_volume(s, &pool, &vol_name).await {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(f) if f.is(ErrorCode::NoStoragePool) || f.is(ErrorCode::OperationInvalid) => {
                    return Ok(());
                }
                Err(f) => return Err(f),
            };
            match rpc!(s, StorageVolDelete, |c| c
                .storage_vol_delete(&vol, STORAGE_VOL_DELETE_NORMAL))
            {
                Ok(()) => {}
                Err(f) if f.is(ErrorCode::NoStorageVol) || f.is(ErrorCode::NoStoragePool) => {}
                Err(f) => return Err(f),
            }
        }
        Ok(())
    }
}
