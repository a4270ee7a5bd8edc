//! Storage operations of the model: pools with their space accounting and
//! volumes (create, look up, path, info, delete), failing as libvirt's
//! storage driver does.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::error::{VirError, domain};
use crate::state::{QCOW2_EMPTY_ALLOCATION, State, check_flags};
use crate::types::{PoolInfo, PoolRef, PoolState, VolInfo, VolRef};
use crate::upload::VolumeContent;
use crate::xml;

/// The unit in which a file system allocates: writes allocate whole blocks.
const BLOCK: u64 = 4096;

#[derive(Debug, Clone)]
pub(crate) struct Volume {
    pub(crate) name: String,
    pub(crate) capacity: u64,
    pub(crate) allocation: u64,
    pub(crate) format: Option<String>,
    pub(crate) backing_path: Option<String>,
    pub(crate) content: VolumeContent,
    /// Blocks allocated, as sorted disjoint half-open ranges of block
    /// numbers: the allocation the volume was created with, then every
    /// range an upload wrote. Files are sparse, so writing past a hole
    /// allocates only the blocks written.
    pub(crate) blocks: Vec<(u64, u64)>,
}

impl Volume {
    /// Accounts for bytes `start..end` written by an upload: the blocks they
    /// touch become allocated and a raw file grows to hold them (its
    /// capacity is its size), as a plain file on a directory pool does.
    pub(crate) fn record_write(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        if self.blocks.is_empty() && self.allocation > 0 {
            self.blocks.push((0, self.allocation.div_ceil(BLOCK)));
        }
        self.blocks.push((start / BLOCK, end.div_ceil(BLOCK)));
        self.blocks.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.blocks.len());
        for &(a, b) in &self.blocks {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.allocation = merged.iter().map(|(a, b)| (b - a) * BLOCK).sum();
        self.blocks = merged;
        if self.format.as_deref() != Some("qcow2") {
            self.capacity = self.capacity.max(end);
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Pool {
    pub(crate) uuid: Uuid,
    pub(crate) name: String,
    pub(crate) path: String,
    pub(crate) capacity: u64,
    pub(crate) other_allocation: u64,
    pub(crate) active: bool,
    pub(crate) volumes: BTreeMap<String, Volume>,
}

impl Pool {
    pub(crate) fn handle(&self) -> PoolRef {
        PoolRef {
            name: self.name.clone(),
            uuid: self.uuid,
        }
    }

    pub(crate) fn allocation(&self) -> u64 {
        self.volumes.values().fold(self.other_allocation, |acc, v| {
            acc.saturating_add(v.allocation)
        })
    }

    pub(crate) fn info(&self) -> PoolInfo {
        let allocation = self.allocation();
        PoolInfo {
            state: if self.active {
                PoolState::Running
            } else {
                PoolState::Inactive
            },
            capacity: self.capacity,
            allocation,
            available: self.capacity.saturating_sub(allocation),
        }
    }

    pub(crate) fn vol_path(&self, name: &str) -> String {
        format!("{}/{}", self.path.trim_end_matches('/'), name)
    }

    pub(crate) fn vol_handle(&self, name: &str) -> VolRef {
        VolRef {
            pool: self.name.clone(),
            name: name.to_owned(),
            key: self.vol_path(name),
        }
    }
}

/// A read-only view of one volume, for tests and inventories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSnapshot {
    /// The handle (pool, name, key).
    pub handle: VolRef,
    /// Logical size.
    pub capacity: u64,
    /// Bytes allocated.
    pub allocation: u64,
    /// `<target><format type=…>`.
    pub format: Option<String>,
    /// `<backingStore><path>`.
    pub backing_path: Option<String>,
    /// What was uploaded into it.
    pub content: VolumeContent,
}

impl State {
    // ----- pools ---------------------------------------------------------

    pub(crate) fn add_pool(&mut self, name: &str, path: &str, capacity: u64) -> PoolRef {
        let pool = self.pools.entry(name.to_owned()).or_insert_with(|| Pool {
            uuid: Uuid::new_v4(),
            name: name.to_owned(),
            path: path.to_owned(),
            capacity,
            other_allocation: 0,
            active: true,
            volumes: BTreeMap::new(),
        });
        pool.path = path.to_owned();
        pool.capacity = capacity;
        pool.handle()
    }

    pub(crate) fn remove_pool(&mut self, name: &str) -> bool {
        self.pools.remove(name).is_some()
    }

    pub(crate) fn pool_hook(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut u64, &mut u64, &mut bool),
    ) -> Result<(), VirError> {
        let p = self
            .pools
            .get_mut(name)
            .ok_or_else(|| VirError::no_pool_name(name))?;
        f(&mut p.capacity, &mut p.other_allocation, &mut p.active);
        Ok(())
    }

    fn pool(&self, h: &PoolRef) -> Result<&Pool, VirError> {
        self.pools
            .values()
            .find(|p| p.uuid == h.uuid)
            .ok_or_else(|| VirError::no_pool_uuid(&h.uuid, &h.name))
    }

    fn pool_mut(&mut self, h: &PoolRef) -> Result<&mut Pool, VirError> {
        self.pools
            .values_mut()
            .find(|p| p.uuid == h.uuid)
            .ok_or_else(|| VirError::no_pool_uuid(&h.uuid, &h.name))
    }

    fn active_pool(&self, h: &PoolRef) -> Result<&Pool, VirError> {
        let p = self.pool(h)?;
        if !p.active {
            return Err(VirError::pool_not_active(&p.name));
        }
        Ok(p)
    }

    pub(crate) fn pool_lookup_by_name(&self, name: &str) -> Result<PoolRef, VirError> {
        self.pools
            .get(name)
            .map(Pool::handle)
            .ok_or_else(|| VirError::no_pool_name(name))
    }

    pub(crate) fn pool_get_info(&self, h: &PoolRef) -> Result<PoolInfo, VirError> {
        Ok(self.pool(h)?.info())
    }

    pub(crate) fn pool_refresh(&mut self, h: &PoolRef, flags_: u32) -> Result<(), VirError> {
        check_flags(flags_, 0, "storagePoolRefresh")?;
        self.active_pool(h)?;
        Ok(())
    }

    pub(crate) fn list_all_pools(&self, flags_: u32) -> Result<Vec<PoolRef>, VirError> {
        // `VIR_CONNECT_LIST_STORAGE_POOLS_INACTIVE` (1) and `_ACTIVE` (2);
        // the pool-type filters are accepted and, all pools being
        // directories, ignored.
        let (inactive, active) = (flags_ & 1 != 0, flags_ & 2 != 0);
        Ok(self
            .pools
            .values()
            .filter(|p| (!inactive && !active) || (inactive && !p.active) || (active && p.active))
            .map(Pool::handle)
            .collect())
    }

    pub(crate) fn pool_list_volumes(
        &self,
        h: &PoolRef,
        flags_: u32,
    ) -> Result<Vec<VolRef>, VirError> {
        check_flags(flags_, 0, "storagePoolListAllVolumes")?;
        let p = self.active_pool(h)?;
        Ok(p.volumes.keys().map(|n| p.vol_handle(n)).collect())
    }

    // ----- volumes -------------------------------------------------------

    /// Resolves a volume handle as the storage driver does: the pool by
    /// name, which must be active, then the volume by name.
    fn vol_pool(&self, h: &VolRef) -> Result<&Pool, VirError> {
        let p = self
            .pools
            .get(&h.pool)
            .ok_or_else(|| VirError::no_pool_name(&h.pool))?;
        if !p.active {
            return Err(VirError::pool_not_active(&p.name));
        }
        if !p.volumes.contains_key(&h.name) {
            return Err(VirError::no_vol_name(&h.name));
        }
        Ok(p)
    }

    pub(crate) fn vol(&self, h: &VolRef) -> Result<&Volume, VirError> {
        Ok(&self.vol_pool(h)?.volumes[&h.name])
    }

    pub(crate) fn vol_mut(&mut self, h: &VolRef) -> Result<&mut Volume, VirError> {
        self.vol_pool(h)?;
        Ok(self
            .pools
            .get_mut(&h.pool)
            .and_then(|p| p.volumes.get_mut(&h.name))
            .expect("resolved above"))
    }

    pub(crate) fn vol_create(
        &mut self,
        h: &PoolRef,
        doc: &str,
        flags_: u32,
    ) -> Result<VolRef, VirError> {
        check_flags(flags_, 0x7, "storageVolCreateXML")?;
        self.active_pool(h)?;
        let parsed = xml::parse_volume(doc)?;
        let backing_capacity = parsed.backing_path.as_ref().and_then(|bp| {
            self.pools.values().find_map(|p| {
                p.volumes
                    .values()
                    .find(|v| p.vol_path(&v.name) == *bp)
                    .map(|v| v.capacity)
            })
        });
        if let Some(bp) = &parsed.backing_path
            && backing_capacity.is_none()
        {
            return Err(VirError::no_such_file(
                domain::STORAGE,
                format!("inaccessible backing store volume {bp}"),
            ));
        }
        let p = self.pool_mut(h)?;
        if p.volumes.contains_key(&parsed.name) {
            return Err(VirError::vol_exists(&parsed.name));
        }
        let capacity = parsed.capacity.or(backing_capacity).unwrap_or(0);
        let allocation = parsed.allocation.unwrap_or(match parsed.format.as_deref() {
            Some("qcow2") => QCOW2_EMPTY_ALLOCATION.min(capacity.max(QCOW2_EMPTY_ALLOCATION)),
            _ => capacity,
        });
        let available = p.info().available;
        if allocation > available {
            return Err(VirError::internal(
                domain::STORAGE,
                format!("Not enough free space in pool for volume '{}'", parsed.name),
            ));
        }
        let handle = p.vol_handle(&parsed.name);
        p.volumes.insert(
            parsed.name.clone(),
            Volume {
                name: parsed.name,
                capacity,
                allocation,
                format: parsed.format,
                backing_path: parsed.backing_path,
                content: VolumeContent::Empty,
                blocks: Vec::new(),
            },
        );
        Ok(handle)
    }

    pub(crate) fn vol_lookup_by_name(&self, h: &PoolRef, name: &str) -> Result<VolRef, VirError> {
        let p = self.active_pool(h)?;
        if !p.volumes.contains_key(name) {
            return Err(VirError::no_vol_name(name));
        }
        Ok(p.vol_handle(name))
    }

    pub(crate) fn vol_get_info(&self, h: &VolRef) -> Result<VolInfo, VirError> {
        let v = self.vol(h)?;
        Ok(VolInfo {
            kind: 0,
            capacity: v.capacity,
            allocation: v.allocation,
        })
    }

    pub(crate) fn vol_get_path(&self, h: &VolRef) -> Result<String, VirError> {
        let p = self.vol_pool(h)?;
        Ok(p.vol_path(&h.name))
    }

    pub(crate) fn vol_delete(&mut self, h: &VolRef, flags_: u32) -> Result<(), VirError> {
        check_flags(flags_, 0x3, "storageVolDelete")?;
        self.vol_pool(h)?;
        if let Some(p) = self.pools.get_mut(&h.pool) {
            p.volumes.remove(&h.name);
        }
        Ok(())
    }

    pub(crate) fn snapshot_volumes(&self, pool: &str) -> Option<Vec<VolumeSnapshot>> {
        let p = self.pools.get(pool)?;
        Some(
            p.volumes
                .values()
                .map(|v| VolumeSnapshot {
                    handle: p.vol_handle(&v.name),
                    capacity: v.capacity,
                    allocation: v.allocation,
                    format: v.format.clone(),
                    backing_path: v.backing_path.clone(),
                    content: v.content.clone(),
                })
                .collect(),
        )
    }

    pub(crate) fn remove_volume(&mut self, pool: &str, name: &str) -> bool {
        self.pools
            .get_mut(pool)
            .is_some_and(|p| p.volumes.remove(name).is_some())
    }

    pub(crate) fn pool_other_allocation(&self, name: &str) -> u64 {
        self.pools.get(name).map_or(0, |p| p.other_allocation)
    }

    pub(crate) fn pool_names(&self) -> Vec<String> {
        self.pools.keys().cloned().collect()
    }

    pub(crate) fn pool_info_by_name(&self, name: &str) -> Option<PoolInfo> {
        self.pools.get(name).map(Pool::info)
    }
}
