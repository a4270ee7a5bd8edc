//! The queries virsh's everyday commands make besides the calls a provider
//! needs: host facts (`nodeinfo`, `version`, the security model), a domain's
//! flags (`dominfo`: OS type, persistence, autostart, managed save, security
//! label, messages, snapshots), a pool's flags (`pool-info`, `pool-list`), lookups by
//! path and by volume, and a volume's bytes for `vol-download`, each failing
//! as libvirt 11.3's QEMU and storage drivers do.

use libvirt_wire::{
    DOMAIN_MESSAGE_DEPRECATION, DOMAIN_MESSAGE_IOERRORS, DOMAIN_MESSAGE_TAINTING, Domain,
    ErrorCode, ErrorDomain, NodeGetInfoRet, Procedure, STORAGE_VOL_DOWNLOAD_SPARSE_STREAM,
    StoragePool, StorageVol,
};

use crate::content::VolumeContent;
use crate::download::{DownloadData, Held};
use crate::error::{CallError, VirError};
use crate::fake::connection::FakeConnection;
use crate::state::{State, check_flags};

const DOMAIN_MESSAGE_ALL: u32 =
    DOMAIN_MESSAGE_DEPRECATION | DOMAIN_MESSAGE_TAINTING | DOMAIN_MESSAGE_IOERRORS;

/// The taint libvirtd's QEMU driver puts on a domain whose QEMU runs as
/// root (as on the project's real host, measured on 11.3).
const ROOT_TAINT: &str = "tainted: running with undesirable elevated privileges";
/// Every `VIR_DOMAIN_SNAPSHOT_LIST_*` filter and order bit (up to
/// `TOPOLOGICAL`, 1 << 10).
const DOMAIN_SNAPSHOT_LIST_ALL: u32 = (1 << 11) - 1;

/// The host's CPUs and memory as `NODE_GET_INFO` reports them: a 2-CPU
/// x86_64 host with 8 GiB, one NUMA node.
fn node_info() -> NodeGetInfoRet {
    NodeGetInfoRet {
        model: libvirt_wire::FixedChars("x86_64".into()),
        memory: 8 << 20,
        cpus: 2,
        mhz: 2000,
        nodes: 1,
        sockets: 1,
        cores: 2,
        threads: 1,
    }
}

fn no_vol_key(key: &str) -> VirError {
    VirError::new(
        ErrorCode::NoStorageVol,
        ErrorDomain::Storage,
        format!("no storage vol with matching key {key}"),
    )
}

impl State {
    /// The volume of a running pool whose path (a dir pool's key) is
    /// `path`.
    fn vol_at(&self, path: &str) -> Option<StorageVol> {
        self.pools.values().filter(|p| p.active).find_map(|p| {
            p.volumes
                .keys()
                .find(|name| p.vol_path(name) == path)
                .map(|name| p.vol_handle(name))
        })
    }

    /// A volume by key: libvirt's miss names the key unquoted.
    fn vol_by_key(&self, key: &str) -> Result<StorageVol, VirError> {
        self.vol_at(key).ok_or_else(|| no_vol_key(key))
    }

    /// A volume by path; libvirt's miss quotes the path.
    fn vol_by_path(&self, path: &str) -> Result<StorageVol, VirError> {
        self.vol_at(path).ok_or_else(|| {
            VirError::new(
                ErrorCode::NoStorageVol,
                ErrorDomain::Storage,
                format!("no storage vol with matching path '{path}'"),
            )
        })
    }

    /// What `vol-download` reads: the file is as long as a raw volume's
    /// capacity (or what was uploaded past it); a qcow2 volume's file holds
    /// only what was uploaded (the fake writes no qcow2 header). Only the
    /// uploaded bytes in range are copied; the rest is zeros, made as sent.
    fn vol_download_data(
        &self,
        h: &StorageVol,
        offset: u64,
        length: u64,
        flags_: u32,
    ) -> Result<DownloadData, VirError> {
        check_flags(
            flags_,
            STORAGE_VOL_DOWNLOAD_SPARSE_STREAM,
            "storageVolDownload",
        )?;
        let v = self.vol(h)?;
        let uploaded = match &v.content {
            VolumeContent::Digest { size, .. } => {
                return Err(VirError::internal(
                    ErrorDomain::Storage,
                    format!(
                        "volume '{}' keeps only the size ({size} bytes) and digest of what was \
                         uploaded into it",
                        h.name
                    ),
                ));
            }
            content => content.size(),
        };
        let size = match v.format.as_deref() {
            Some("qcow2") => uploaded,
            _ => v.capacity.max(uploaded),
        };
        let start = offset.min(size);
        let end = if length == 0 {
            size
        } else {
            start.saturating_add(length).min(size)
        };
        let in_range = uploaded.saturating_sub(start).min(end - start);
        let held = match &v.content {
            VolumeContent::Spilled(file) => Held::File {
                file: std::fs::File::open(file.path()).map_err(|e| {
                    VirError::system(
                        ErrorDomain::Storage,
                        format!("cannot open volume '{}'", file.path().display()),
                        &e.to_string(),
                    )
                })?,
                from: start,
                len: in_range,
            },
            content => {
                let data = content.bytes().unwrap_or_default();
                let from = usize::try_from(start).unwrap_or(usize::MAX).min(data.len());
                let to = from + usize::try_from(in_range).unwrap_or(usize::MAX);
                Held::Bytes(data[from..to.min(data.len())].to_vec())
            }
        };
        Ok(DownloadData {
            held,
            len: end - start,
        })
    }
}

impl FakeConnection {
    /// `ConnectGetType`: the QEMU driver's name.
    pub async fn get_type(&self) -> Result<String, CallError> {
        self.call(Procedure::ConnectGetType, |_, _| Ok("QEMU".to_owned()))
            .await
    }

    /// `NodeGetInfo`.
    pub async fn node_get_info(&self) -> Result<NodeGetInfoRet, CallError> {
        self.call(Procedure::NodeGetInfo, |_, _| Ok(node_info()))
            .await
    }

    /// `NodeGetSecurityModel`: `none` with DOI `0`, as libvirtd 11.3 answers
    /// with no security driver (the project's real host).
    pub async fn node_get_security_model(&self) -> Result<(String, String), CallError> {
        self.call(Procedure::NodeGetSecurityModel, |_, _| {
            Ok(("none".to_owned(), "0".to_owned()))
        })
        .await
    }

    /// `DomainGetSecurityLabel`: empty and not enforcing under `none`.
    pub async fn domain_get_security_label(
        &self,
        dom: &Domain,
    ) -> Result<(String, bool), CallError> {
        self.call_on(Procedure::DomainGetSecurityLabel, &[&dom.name], |st, _| {
            st.dom(dom)?;
            Ok((String::new(), false))
        })
        .await
    }

    /// `DomainGetOSType`: every domain of the fake is `hvm`.
    pub async fn domain_get_os_type(&self, dom: &Domain) -> Result<String, CallError> {
        self.call_on(Procedure::DomainGetOsType, &[&dom.name], |st, _| {
            st.dom(dom)?;
            Ok("hvm".to_owned())
        })
        .await
    }

    /// `DomainIsActive`.
    pub async fn domain_is_active(&self, dom: &Domain) -> Result<bool, CallError> {
        self.call_on(Procedure::DomainIsActive, &[&dom.name], |st, _| {
            Ok(st.dom(dom)?.active())
        })
        .await
    }

    /// `DomainIsPersistent`.
    pub async fn domain_is_persistent(&self, dom: &Domain) -> Result<bool, CallError> {
        self.call_on(Procedure::DomainIsPersistent, &[&dom.name], |st, _| {
            Ok(st.dom(dom)?.persistent)
        })
        .await
    }

    /// `DomainGetAutostart` and `DomainGetAutostartOnce` (`once`): the
    /// fake's domains never autostart.
    pub async fn domain_get_autostart(&self, dom: &Domain, once: bool) -> Result<bool, CallError> {
        let p = if once {
            Procedure::DomainGetAutostartOnce
        } else {
            Procedure::DomainGetAutostart
        };
        self.call_on(p, &[&dom.name], |st, _| st.dom(dom).map(|_| false))
            .await
    }

    /// `DomainHasManagedSaveImage`: the fake never saves a domain.
    pub async fn domain_has_managed_save_image(
        &self,
        dom: &Domain,
        flags_: u32,
    ) -> Result<bool, CallError> {
        self.call_on(
            Procedure::DomainHasManagedSaveImage,
            &[&dom.name],
            |st, _| {
                check_flags(flags_, 0, "qemuDomainHasManagedSaveImage")?;
                st.dom(dom).map(|_| false)
            },
        )
        .await
    }

    /// `DomainSnapshotNum`: the fake's domains have no snapshots.
    pub async fn domain_snapshot_num(&self, dom: &Domain, flags_: u32) -> Result<i32, CallError> {
        self.call_on(Procedure::DomainSnapshotNum, &[&dom.name], |st, _| {
            check_flags(flags_, DOMAIN_SNAPSHOT_LIST_ALL, "qemuDomainSnapshotNum")?;
            st.dom(dom).map(|_| 0)
        })
        .await
    }

    /// `DomainGetMessages`: no deprecations or I/O errors; a running
    /// domain is tainted when the host runs QEMU as root
    /// ([`crate::HostConfig::qemu_as_root`]). Flags 0 ask for every kind.
    pub async fn domain_get_messages(
        &self,
        dom: &Domain,
        flags_: u32,
    ) -> Result<Vec<String>, CallError> {
        self.call_on(Procedure::DomainGetMessages, &[&dom.name], |st, _| {
            check_flags(flags_, DOMAIN_MESSAGE_ALL, "qemuDomainGetMessages")?;
            let active = st.dom(dom)?.active();
            let taints = flags_ == 0 || flags_ & DOMAIN_MESSAGE_TAINTING != 0;
            Ok(if active && taints && st.host.qemu_as_root {
                vec![ROOT_TAINT.to_owned()]
            } else {
                Vec::new()
            })
        })
        .await
    }

    /// `DomainShutdown`: `DomainShutdownFlags` with no flags.
    pub async fn domain_shutdown(&self, dom: &Domain) -> Result<(), CallError> {
        self.call_on(Procedure::DomainShutdown, &[&dom.name], |st, _| {
            st.shutdown(dom, 0)
        })
        .await
    }

    /// `StoragePoolIsActive`.
    pub async fn storage_pool_is_active(&self, pool: &StoragePool) -> Result<bool, CallError> {
        self.call_on(Procedure::StoragePoolIsActive, &[&pool.name], |st, _| {
            Ok(st.pool(pool)?.active)
        })
        .await
    }

    /// `StoragePoolIsPersistent`.
    pub async fn storage_pool_is_persistent(&self, pool: &StoragePool) -> Result<bool, CallError> {
        self.call_on(
            Procedure::StoragePoolIsPersistent,
            &[&pool.name],
            |st, _| Ok(st.pool(pool)?.persistent),
        )
        .await
    }

    /// `StoragePoolGetAutostart`: the fake's pools never autostart.
    pub async fn storage_pool_get_autostart(&self, pool: &StoragePool) -> Result<bool, CallError> {
        self.call_on(
            Procedure::StoragePoolGetAutostart,
            &[&pool.name],
            |st, _| st.pool(pool).map(|_| false),
        )
        .await
    }

    /// `StoragePoolLookupByVolume`: the pool the volume names, which must
    /// still exist (the volume itself is not looked at, as in libvirt).
    pub async fn storage_pool_lookup_by_volume(
        &self,
        vol: &StorageVol,
    ) -> Result<StoragePool, CallError> {
        self.call_on(
            Procedure::StoragePoolLookupByVolume,
            &[&vol.pool],
            |st, _| {
                st.pools
                    .get(&vol.pool)
                    .map(|p| p.handle())
                    .ok_or_else(|| VirError::no_pool_name(&vol.pool))
            },
        )
        .await
    }

    /// `StorageVolLookupByPath`: a volume of a running pool by its path.
    pub async fn storage_vol_lookup_by_path(&self, path: &str) -> Result<StorageVol, CallError> {
        self.call(Procedure::StorageVolLookupByPath, |st, _| {
            st.vol_by_path(path)
        })
        .await
    }

    /// `StorageVolLookupByKey`: a volume of a running pool by its key.
    pub async fn storage_vol_lookup_by_key(&self, key: &str) -> Result<StorageVol, CallError> {
        self.call(Procedure::StorageVolLookupByKey, |st, _| st.vol_by_key(key))
            .await
    }

    /// `StorageVolDownload`: the bytes the stream carries (`length` 0 reads
    /// to the end of the file).
    pub async fn storage_vol_download(
        &self,
        vol: &StorageVol,
        offset: u64,
        length: u64,
        flags_: u32,
    ) -> Result<Vec<u8>, CallError> {
        let data = self
            .storage_vol_download_data(vol, offset, length, flags_)
            .await?;
        data.into_vec().map_err(|e| {
            CallError::Libvirt(VirError::system(
                ErrorDomain::Streams,
                "cannot read from stream",
                &e.to_string(),
            ))
        })
    }

    /// `StorageVolDownload` as the daemon streams it: the uploaded bytes in
    /// range and the length of the whole, zeros made as they are sent.
    pub(crate) async fn storage_vol_download_data(
        &self,
        vol: &StorageVol,
        offset: u64,
        length: u64,
        flags_: u32,
    ) -> Result<DownloadData, CallError> {
        self.call_on(
            Procedure::StorageVolDownload,
            &[&vol.pool, &vol.name],
            |st, _| st.vol_download_data(vol, offset, length, flags_),
        )
        .await
    }
}
