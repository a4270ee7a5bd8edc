//! Storage operations of the model: pools with their space accounting and
//! volumes (create, look up, path, info, delete), failing as libvirt's
//! storage driver does.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::content::VolumeContent;
use crate::error::VirError;
use crate::state::{QCOW2_EMPTY_ALLOCATION, State, check_flags};
use crate::types::{PoolInfo, VolInfo};
use crate::xml;
use libvirt_wire::{
    CONNECT_LIST_STORAGE_POOLS_ACTIVE, CONNECT_LIST_STORAGE_POOLS_AUTOSTART,
    CONNECT_LIST_STORAGE_POOLS_INACTIVE, CONNECT_LIST_STORAGE_POOLS_NO_AUTOSTART,
    CONNECT_LIST_STORAGE_POOLS_PERSISTENT, CONNECT_LIST_STORAGE_POOLS_TRANSIENT, ErrorDomain,
    STORAGE_POOL_BUILD_NO_OVERWRITE, STORAGE_POOL_BUILD_OVERWRITE, STORAGE_POOL_CREATE_WITH_BUILD,
    STORAGE_POOL_CREATE_WITH_BUILD_NO_OVERWRITE, STORAGE_POOL_CREATE_WITH_BUILD_OVERWRITE,
    STORAGE_POOL_DEFINE_VALIDATE, STORAGE_VOL_CREATE_ALL, STORAGE_VOL_DELETE_ALL,
    STORAGE_XML_INACTIVE, StoragePool, StoragePoolState, StorageVol,
};

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
    /// Whether the pool has a persistent definition; a transient pool goes
    /// away when it stops.
    pub(crate) persistent: bool,
    /// Whether the pool's directory exists on the host.
    pub(crate) built: bool,
    /// The mode of the pool's directory (while it exists).
    pub(crate) dir_mode: u32,
    /// The directory's mode as the definition shows it: read by a start.
    pub(crate) mode: Option<u32>,
    /// The definition to switch to when the pool stops (libvirt's
    /// `newDef`): a redefinition while it ran, or the persistent definition
    /// a transient create replaced.
    pub(crate) next_path: Option<String>,
    /// The files in the pool's directory. libvirt lists them only while the
    /// pool runs; they stay on disk while it is stopped.
    pub(crate) volumes: BTreeMap<String, Volume>,
}

/// A directory left on the host by a pool that was undefined (or a
/// transient pool that stopped), with the files in it: a pool defined at the
/// same path later finds them again.
#[derive(Debug, Clone)]
pub(crate) struct Directory {
    pub(crate) mode: u32,
    pub(crate) volumes: BTreeMap<String, Volume>,
}

/// Mode of a directory `virStoragePoolBuild` makes (`0711`).
const BUILT_DIR_MODE: u32 = 0o711;
/// Mode of a pool directory added out of band (`0755`).
const EXISTING_DIR_MODE: u32 = 0o755;
/// Capacity of a new pool's file system when no other pool tells it.
const DEFAULT_POOL_CAPACITY: u64 = 50 << 30;

impl Pool {
    pub(crate) fn handle(&self) -> StoragePool {
        StoragePool {
            name: self.name.clone(),
            uuid: libvirt_wire::Uuid(*self.uuid.as_bytes()),
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
                StoragePoolState::Running
            } else {
                StoragePoolState::Inactive
            },
            capacity: self.capacity,
            allocation,
            available: self.capacity.saturating_sub(allocation),
        }
    }

    pub(crate) fn vol_path(&self, name: &str) -> String {
        format!("{}/{}", self.path.trim_end_matches('/'), name)
    }

    pub(crate) fn vol_handle(&self, name: &str) -> StorageVol {
        StorageVol {
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
    pub handle: StorageVol,
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

    pub(crate) fn add_pool(&mut self, name: &str, path: &str, capacity: u64) -> StoragePool {
        let dir = self.directories.remove(path).unwrap_or(Directory {
            mode: EXISTING_DIR_MODE,
            volumes: BTreeMap::new(),
        });
        let pool = self.pools.entry(name.to_owned()).or_insert_with(|| Pool {
            uuid: Uuid::new_v4(),
            name: name.to_owned(),
            path: path.to_owned(),
            capacity,
            other_allocation: 0,
            active: true,
            persistent: true,
            built: true,
            dir_mode: dir.mode,
            mode: Some(dir.mode),
            next_path: None,
            volumes: dir.volumes,
        });
        pool.path = path.to_owned();
        pool.capacity = capacity;
        pool.built = true;
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

    pub(crate) fn pool(&self, h: &StoragePool) -> Result<&Pool, VirError> {
        self.pools
            .values()
            .find(|p| *p.uuid.as_bytes() == h.uuid.0)
            .ok_or_else(|| VirError::no_pool_uuid(&h.uuid, &h.name))
    }

    fn pool_mut(&mut self, h: &StoragePool) -> Result<&mut Pool, VirError> {
        self.pools
            .values_mut()
            .find(|p| *p.uuid.as_bytes() == h.uuid.0)
            .ok_or_else(|| VirError::no_pool_uuid(&h.uuid, &h.name))
    }

    pub(crate) fn active_pool(&self, h: &StoragePool) -> Result<&Pool, VirError> {
        let p = self.pool(h)?;
        if !p.active {
            return Err(VirError::pool_not_active(&p.name));
        }
        Ok(p)
    }

    pub(crate) fn pool_lookup_by_name(&self, name: &str) -> Result<StoragePool, VirError> {
        self.pools
            .get(name)
            .map(Pool::handle)
            .ok_or_else(|| VirError::no_pool_name(name))
    }

    pub(crate) fn pool_get_info(&self, h: &StoragePool) -> Result<PoolInfo, VirError> {
        Ok(self.pool(h)?.info())
    }

    pub(crate) fn pool_refresh(&mut self, h: &StoragePool, flags_: u32) -> Result<(), VirError> {
        check_flags(flags_, 0, "storagePoolRefresh")?;
        self.active_pool(h)?;
        Ok(())
    }

    pub(crate) fn list_all_pools(&self, flags_: u32) -> Result<Vec<StoragePool>, VirError> {
        // `VIR_CONNECT_LIST_STORAGE_POOLS_INACTIVE` (1) and `_ACTIVE` (2);
        // the pool-type filters are accepted and, all pools being
        // directories, ignored.
        let (inactive, active) = (
            flags_ & CONNECT_LIST_STORAGE_POOLS_INACTIVE != 0,
            flags_ & CONNECT_LIST_STORAGE_POOLS_ACTIVE != 0,
        );
        let (persistent, transient) = (
            flags_ & CONNECT_LIST_STORAGE_POOLS_PERSISTENT != 0,
            flags_ & CONNECT_LIST_STORAGE_POOLS_TRANSIENT != 0,
        );
        // No pool of the fake starts on its own.
        let (autostart, no_autostart) = (
            flags_ & CONNECT_LIST_STORAGE_POOLS_AUTOSTART != 0,
            flags_ & CONNECT_LIST_STORAGE_POOLS_NO_AUTOSTART != 0,
        );
        Ok(self
            .pools
            .values()
            .filter(|p| (!inactive && !active) || (inactive && !p.active) || (active && p.active))
            .filter(|p| {
                (!persistent && !transient)
                    || (persistent && p.persistent)
                    || (transient && !p.persistent)
            })
            .filter(|_| !autostart || no_autostart)
            .map(Pool::handle)
            .collect())
    }

    // ----- pool lifecycle ------------------------------------------------

    /// Adds a parsed definition as libvirt's `virStoragePoolObjListAdd`
    /// does: a target another pool uses is refused first, then a UUID or
    /// name another pool has; the same name and UUID update that pool
    /// (`live`: the definition is the running one of a transient create,
    /// refused over a running pool). Returns the pool's name.
    fn pool_add(&mut self, def: xml::ParsedPool, live: bool) -> Result<String, VirError> {
        if let Some(other) = self
            .pools
            .values()
            .find(|p| p.name != def.name && p.path == def.path)
        {
            return Err(VirError::pool_source_conflict(&other.name));
        }
        let same_uuid = def
            .uuid
            .and_then(|u| self.pools.values().find(|p| p.uuid == u));
        if let Some(p) = same_uuid {
            if p.name != def.name {
                return Err(VirError::pool_uuid_taken(&p.name, &p.uuid));
            }
            if live && p.active {
                return Err(VirError::pool_active_as(&p.name));
            }
            let name = p.name.clone();
            let (active, old) = (p.active, p.path.clone());
            if active {
                // Takes effect when the pool stops.
                self.pools.get_mut(&name).expect("found").next_path = Some(def.path);
            } else {
                if live {
                    // The persistent definition comes back when it stops.
                    self.pools.get_mut(&name).expect("found").next_path = Some(old);
                }
                self.relocate_pool(&name, &def.path);
            }
            return Ok(name);
        }
        if let Some(p) = self.pools.get(&def.name) {
            return Err(VirError::pool_exists(&p.name, &p.uuid));
        }
        let dir = self.directories.remove(&def.path);
        let pool = Pool {
            uuid: def.uuid.unwrap_or_else(Uuid::new_v4),
            name: def.name.clone(),
            path: def.path,
            capacity: 0,
            other_allocation: 0,
            active: false,
            persistent: false,
            built: dir.is_some(),
            dir_mode: dir.as_ref().map_or(0, |d| d.mode),
            mode: None,
            next_path: None,
            volumes: dir.map(|d| d.volumes).unwrap_or_default(),
        };
        self.pools.insert(def.name.clone(), pool);
        Ok(def.name)
    }

    /// Points an inactive pool at another directory: its own directory
    /// stays on the host with its files, the new one is looked up.
    fn relocate_pool(&mut self, name: &str, path: &str) {
        let Some(p) = self.pools.get(name) else {
            return;
        };
        if p.path == path {
            return;
        }
        self.leave_directory(name);
        let dir = self.directories.remove(path);
        let p = self.pools.get_mut(name).expect("checked above");
        p.path = path.to_owned();
        p.built = dir.is_some();
        p.dir_mode = dir.as_ref().map_or(0, |d| d.mode);
        p.volumes = dir.map(|d| d.volumes).unwrap_or_default();
    }

    /// Moves a pool's directory (if it exists) and its files out of the
    /// pool, onto the host.
    fn leave_directory(&mut self, name: &str) {
        let Some(p) = self.pools.get_mut(name) else {
            return;
        };
        let volumes = std::mem::take(&mut p.volumes);
        if p.built {
            p.built = false;
            self.directories.insert(
                p.path.clone(),
                Directory {
                    mode: p.dir_mode,
                    volumes,
                },
            );
        }
    }

    /// Removes a pool, leaving its directory on the host.
    fn forget_pool(&mut self, name: &str) {
        self.leave_directory(name);
        self.pools.remove(name);
    }

    /// Starts an inactive pool: its directory must exist; the first start
    /// reads the file system's size and the directory's mode.
    fn start_pool(&mut self, name: &str) -> Result<(), VirError> {
        let default_capacity = self
            .pools
            .values()
            .find(|p| p.capacity > 0)
            .map_or(DEFAULT_POOL_CAPACITY, |p| p.capacity);
        let p = self.pools.get_mut(name).expect("resolved by the caller");
        if !p.built {
            return Err(VirError::system(
                ErrorDomain::None,
                format!("cannot open directory '{}'", p.path),
                "No such file or directory",
            ));
        }
        if p.capacity == 0 {
            p.capacity = default_capacity;
        }
        p.mode = Some(p.dir_mode);
        p.active = true;
        Ok(())
    }

    /// Makes a pool's directory (`mkdir`; an existing one is kept).
    fn build_pool(&mut self, name: &str) {
        let p = self.pools.get_mut(name).expect("resolved by the caller");
        if !p.built {
            p.built = true;
            p.dir_mode = BUILT_DIR_MODE;
        }
    }

    fn check_create_flags(flags_: u32, function: &str) -> Result<(), VirError> {
        check_flags(
            flags_,
            STORAGE_POOL_CREATE_WITH_BUILD
                | STORAGE_POOL_CREATE_WITH_BUILD_OVERWRITE
                | STORAGE_POOL_CREATE_WITH_BUILD_NO_OVERWRITE,
            function,
        )?;
        if flags_ & STORAGE_POOL_CREATE_WITH_BUILD_OVERWRITE != 0
            && flags_ & STORAGE_POOL_CREATE_WITH_BUILD_NO_OVERWRITE != 0
        {
            return Err(VirError::invalid_arg_check(
                ErrorDomain::Storage,
                "Flags 'VIR_STORAGE_POOL_CREATE_WITH_BUILD_OVERWRITE' and \
                 'VIR_STORAGE_POOL_CREATE_WITH_BUILD_NO_OVERWRITE' are mutually exclusive",
            ));
        }
        Ok(())
    }

    /// `virStoragePoolDefineXML`: a new pool is persistent and inactive; a
    /// pool with the same name and UUID gets the new definition (at once
    /// when stopped, when it stops otherwise) and becomes persistent.
    pub(crate) fn pool_define(&mut self, doc: &str, flags_: u32) -> Result<StoragePool, VirError> {
        check_flags(flags_, STORAGE_POOL_DEFINE_VALIDATE, "storagePoolDefineXML")?;
        let def = xml::parse_pool(doc)?;
        let name = self.pool_add(def, false)?;
        let p = self.pools.get_mut(&name).expect("added");
        p.persistent = true;
        Ok(p.handle())
    }

    /// `virStoragePoolCreateXML`: a transient pool, started at once (built
    /// first with the build flags). When it cannot start it is gone.
    pub(crate) fn pool_create_xml(
        &mut self,
        doc: &str,
        flags_: u32,
    ) -> Result<StoragePool, VirError> {
        Self::check_create_flags(flags_, "storagePoolCreateXML")?;
        let def = xml::parse_pool(doc)?;
        let name = self.pool_add(def, true)?;
        if flags_ != 0 {
            self.build_pool(&name);
        }
        if let Err(e) = self.start_pool(&name) {
            let p = &self.pools[&name];
            if p.persistent {
                if let Some(back) = self.pools.get_mut(&name).and_then(|p| p.next_path.take()) {
                    self.relocate_pool(&name, &back);
                }
            } else {
                self.forget_pool(&name);
            }
            return Err(e);
        }
        Ok(self.pools[&name].handle())
    }

    /// `virStoragePoolCreate`: starts a defined pool.
    pub(crate) fn pool_start(&mut self, h: &StoragePool, flags_: u32) -> Result<(), VirError> {
        Self::check_create_flags(flags_, "storagePoolCreate")?;
        let p = self.pool(h)?;
        if p.active {
            return Err(VirError::pool_already_active(&p.name));
        }
        let name = p.name.clone();
        if flags_ != 0 {
            self.build_pool(&name);
        }
        self.start_pool(&name)
    }

    /// `virStoragePoolBuild` of a directory pool: makes the directory.
    pub(crate) fn pool_build(&mut self, h: &StoragePool, flags_: u32) -> Result<(), VirError> {
        let p = self.pool(h)?;
        if p.active {
            return Err(VirError::pool_already_active(&p.name));
        }
        let name = p.name.clone();
        if flags_ & !(STORAGE_POOL_BUILD_NO_OVERWRITE | STORAGE_POOL_BUILD_OVERWRITE) != 0 {
            return Err(VirError::invalid_arg_check(
                ErrorDomain::Storage,
                format!(
                    "unsupported flags (0x{:x}) in function virStorageBackendFileSystemBuild",
                    flags_ & !(STORAGE_POOL_BUILD_NO_OVERWRITE | STORAGE_POOL_BUILD_OVERWRITE)
                ),
            ));
        }
        if flags_ & STORAGE_POOL_BUILD_NO_OVERWRITE != 0
            && flags_ & STORAGE_POOL_BUILD_OVERWRITE != 0
        {
            return Err(VirError::invalid_arg_check(
                ErrorDomain::Storage,
                "Flags 'VIR_STORAGE_POOL_BUILD_OVERWRITE' and \
                 'VIR_STORAGE_POOL_BUILD_NO_OVERWRITE' are mutually exclusive",
            ));
        }
        self.build_pool(&name);
        Ok(())
    }

    /// `virStoragePoolDestroy`: stops a pool; a transient one is gone (its
    /// directory and files stay on the host).
    pub(crate) fn pool_destroy(&mut self, h: &StoragePool) -> Result<(), VirError> {
        let p = self.pool(h)?;
        if !p.active {
            return Err(VirError::pool_not_active(&p.name));
        }
        let (name, persistent) = (p.name.clone(), p.persistent);
        if !persistent {
            self.forget_pool(&name);
            return Ok(());
        }
        let p = self.pools.get_mut(&name).expect("resolved above");
        p.active = false;
        if let Some(next) = p.next_path.take() {
            self.relocate_pool(&name, &next);
        }
        Ok(())
    }

    /// `virStoragePoolDelete` of a directory pool: removes the directory of
    /// a stopped pool, which fails as `rmdir` does when it is missing or
    /// still holds files.
    pub(crate) fn pool_delete(&mut self, h: &StoragePool, flags_: u32) -> Result<(), VirError> {
        let p = self.pool(h)?;
        if p.active {
            return Err(VirError::pool_still_active(&p.name));
        }
        if flags_ != 0 {
            return Err(VirError::invalid_arg_check(
                ErrorDomain::Storage,
                format!(
                    "unsupported flags (0x{flags_:x}) in function virStorageBackendDeleteLocal"
                ),
            ));
        }
        let failed = |reason: &str| {
            VirError::system(
                ErrorDomain::Storage,
                format!("failed to remove pool '{}'", p.path),
                reason,
            )
        };
        if !p.built {
            return Err(failed("No such file or directory"));
        }
        if !p.volumes.is_empty() {
            return Err(failed("Directory not empty"));
        }
        let name = p.name.clone();
        let p = self.pools.get_mut(&name).expect("resolved above");
        p.built = false;
        Ok(())
    }

    /// `virStoragePoolUndefine`: forgets a stopped pool; its directory and
    /// files stay on the host.
    pub(crate) fn pool_undefine(&mut self, h: &StoragePool) -> Result<(), VirError> {
        let p = self.pool(h)?;
        if p.active {
            return Err(VirError::pool_still_active(&p.name));
        }
        let name = p.name.clone();
        self.forget_pool(&name);
        Ok(())
    }

    /// `virStoragePoolGetXMLDesc`; `VIR_STORAGE_XML_INACTIVE` shows the
    /// definition a running pool will switch to when it stops.
    pub(crate) fn pool_get_xml_desc(
        &self,
        h: &StoragePool,
        flags_: u32,
    ) -> Result<String, VirError> {
        check_flags(flags_, STORAGE_XML_INACTIVE, "storagePoolGetXMLDesc")?;
        let p = self.pool(h)?;
        let i = p.info();
        let path = match (&p.next_path, flags_ & STORAGE_XML_INACTIVE != 0) {
            (Some(next), true) => next.as_str(),
            _ => p.path.as_str(),
        };
        Ok(xml::render_pool(xml::RenderedPool {
            name: &p.name,
            uuid: &p.uuid,
            capacity: i.capacity,
            allocation: i.allocation,
            available: i.available,
            path,
            mode: p.mode,
        }))
    }

    /// The directories the host holds outside any pool, with their files.
    pub(crate) fn directory_names(&self) -> Vec<String> {
        self.directories.keys().cloned().collect()
    }

    pub(crate) fn pool_list_volumes(
        &self,
        h: &StoragePool,
        flags_: u32,
    ) -> Result<Vec<StorageVol>, VirError> {
        check_flags(flags_, 0, "storagePoolListAllVolumes")?;
        let p = self.active_pool(h)?;
        Ok(p.volumes.keys().map(|n| p.vol_handle(n)).collect())
    }

    // ----- volumes -------------------------------------------------------

    /// Resolves a volume handle as the storage driver does: the pool by
    /// name, which must be active, then the volume by name.
    pub(crate) fn vol_pool(&self, h: &StorageVol) -> Result<&Pool, VirError> {
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

    pub(crate) fn vol(&self, h: &StorageVol) -> Result<&Volume, VirError> {
        Ok(&self.vol_pool(h)?.volumes[&h.name])
    }

    pub(crate) fn vol_mut(&mut self, h: &StorageVol) -> Result<&mut Volume, VirError> {
        self.vol_pool(h)?;
        Ok(self
            .pools
            .get_mut(&h.pool)
            .and_then(|p| p.volumes.get_mut(&h.name))
            .expect("resolved above"))
    }

    pub(crate) fn vol_create(
        &mut self,
        h: &StoragePool,
        doc: &str,
        flags_: u32,
    ) -> Result<StorageVol, VirError> {
        check_flags(flags_, STORAGE_VOL_CREATE_ALL, "storageVolCreateXML")?;
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
                ErrorDomain::Storage,
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
                ErrorDomain::Storage,
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

    pub(crate) fn vol_lookup_by_name(
        &self,
        h: &StoragePool,
        name: &str,
    ) -> Result<StorageVol, VirError> {
        let p = self.active_pool(h)?;
        if !p.volumes.contains_key(name) {
            return Err(VirError::no_vol_name(name));
        }
        Ok(p.vol_handle(name))
    }

    pub(crate) fn vol_get_info(&self, h: &StorageVol) -> Result<VolInfo, VirError> {
        let v = self.vol(h)?;
        Ok(VolInfo {
            kind: 0,
            capacity: v.capacity,
            allocation: v.allocation,
        })
    }

    pub(crate) fn vol_get_path(&self, h: &StorageVol) -> Result<String, VirError> {
        let p = self.vol_pool(h)?;
        Ok(p.vol_path(&h.name))
    }

    pub(crate) fn vol_delete(&mut self, h: &StorageVol, flags_: u32) -> Result<(), VirError> {
        check_flags(flags_, STORAGE_VOL_DELETE_ALL, "storageVolDelete")?;
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
