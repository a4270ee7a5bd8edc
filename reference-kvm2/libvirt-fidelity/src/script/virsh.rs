//! What virsh's everyday commands ask besides the calls a provider makes
//! (traced against libvirtd 11.3 with `LIBVIRT_DEBUG=1`): the driver type
//! and host facts of `version` and `nodeinfo`, the close callback every
//! virsh session registers, `dominfo`'s questions on a defined, a running
//! and a missing domain, `undefine`'s snapshot count, `shutdown` without
//! flags, `pool-info`'s and `pool-list`'s flags, and `vol-info`'s lookups by
//! path and by volume, and `vol-download`'s stream.

use super::*;

/// Host facts, by shape only: they differ between any two hosts.
fn show_node(i: &libvirt_wire::NodeGetInfoRet) -> String {
    format!(
        "model-set={} memory>0={} cpus>0={} nodes>0={}",
        !i.model.0.is_empty(),
        i.memory > 0,
        i.cpus > 0,
        i.nodes > 0
    )
}

async fn dominfo(c: &Client, dom: &Domain, rec: &mut Recorder, when: &str) {
    rec.call(
        &format!("os type {when}"),
        Procedure::DomainGetOsType,
        c.domain_get_os_type(dom).await,
        |t| t.clone(),
    );
    rec.call(
        &format!("active {when}"),
        Procedure::DomainIsActive,
        c.domain_is_active(dom).await,
        |a| a.to_string(),
    );
    rec.call(
        &format!("persistent {when}"),
        Procedure::DomainIsPersistent,
        c.domain_is_persistent(dom).await,
        |a| a.to_string(),
    );
    rec.call(
        &format!("autostart {when}"),
        Procedure::DomainGetAutostart,
        c.domain_get_autostart(dom).await,
        |a| a.to_string(),
    );
    rec.call(
        &format!("autostart once {when}"),
        Procedure::DomainGetAutostartOnce,
        c.domain_get_autostart_once(dom).await,
        |a| a.to_string(),
    );
    rec.call(
        &format!("managed save image {when}"),
        Procedure::DomainHasManagedSaveImage,
        c.domain_has_managed_save_image(dom).await,
        |a| a.to_string(),
    );
    rec.call(
        &format!("security label {when}"),
        Procedure::DomainGetSecurityLabel,
        c.domain_get_security_label(dom).await,
        |l| format!("label={:?} enforcing={}", l.label.0, l.enforcing),
    );
    rec.call(
        &format!("messages {when}"),
        Procedure::DomainGetMessages,
        c.domain_get_messages(dom, 0).await,
        |m| format!("{m:?}"),
    );
    rec.call(
        &format!("snapshots {when}"),
        Procedure::DomainSnapshotNum,
        c.domain_snapshot_num(dom).await,
        |n| n.to_string(),
    );
}

/// The host and connection questions of `version`, `nodeinfo` and every
/// virsh session's start and end.
pub(super) async fn virsh_host(b: &Backend, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("virsh host");
    rec.call(
        "driver type",
        Procedure::ConnectGetType,
        c.connect_get_type().await,
        |t| t.clone(),
    );
    rec.call(
        "node info",
        Procedure::NodeGetInfo,
        c.node_get_info().await,
        show_node,
    );
    rec.call(
        "security model",
        Procedure::NodeGetSecurityModel,
        c.node_get_security_model().await,
        |m| format!("model={:?} doi={:?}", m.model.0, m.doi.0),
    );
    rec.call(
        "register close callback",
        Procedure::ConnectRegisterCloseCallback,
        c.connect_register_close_callback().await,
        show_unit,
    );
    rec.call(
        "unregister close callback",
        Procedure::ConnectUnregisterCloseCallback,
        c.connect_unregister_close_callback().await,
        show_unit,
    );
}

/// `dominfo` on a defined, a running and a missing domain; `shutdown`
/// without flags; unknown flags refused.
pub(super) async fn virsh_domain(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("virsh domain");
    let (name, uuid) = &names.virsh;
    let Some(dom) = rec.call(
        "define",
        Procedure::DomainDefineXml,
        c.domain_define_xml(&bios_xml(name, uuid)).await,
        show_dom,
    ) else {
        return;
    };
    dominfo(c, &dom, rec, "defined").await;
    for (label, flags) in [
        ("messages with the I/O errors flag", 4),
        ("messages with an unknown flag", 8),
    ] {
        rec.call(
            label,
            Procedure::DomainGetMessages,
            c.domain_get_messages(&dom, flags).await,
            |m| format!("{m:?}"),
        );
    }
    rec.call(
        "shutdown while off",
        Procedure::DomainShutdown,
        c.domain_shutdown(&dom).await,
        show_unit,
    );
    if let Some(running) = rec.call(
        "start",
        Procedure::DomainCreateWithFlags,
        c.domain_create_with_flags(&dom, 0).await,
        show_dom,
    ) {
        dominfo(c, &running, rec, "running").await;
        rec.call(
            "taints running",
            Procedure::DomainGetMessages,
            c.domain_get_messages(&running, libvirt_wire::DOMAIN_MESSAGE_TAINTING)
                .await,
            |m| format!("{m:?}"),
        );
        // A real guest may take its time over the shutdown request (this
        // one has no OS to obey it), the fake's obeys at once: only the
        // answer to the request is compared, then the domain is stopped.
        rec.call(
            "shutdown while running",
            Procedure::DomainShutdown,
            c.domain_shutdown(&running).await,
            show_unit,
        );
        let _ = c.domain_destroy(&running).await;
    }
    let missing = Domain {
        name: names.missing.0.clone(),
        uuid: names.missing.1,
        id: -1,
    };
    dominfo(c, &missing, rec, "of a missing domain").await;
    rec.call(
        "shutdown a missing domain",
        Procedure::DomainShutdown,
        c.domain_shutdown(&missing).await,
        show_unit,
    );
    let _ = c.domain_undefine_flags(&dom, 0).await;
}

/// `pool-info`'s and `pool-list`'s flags of the test pool, and `vol-info`'s
/// lookups by path and by volume (a volume of the run's own, a missing path,
/// a volume of a missing pool).
pub(super) async fn virsh_storage(
    b: &Backend,
    names: &RunNames,
    pool: &StoragePool,
    rec: &mut Recorder,
) {
    let c = &b.client;
    rec.sequence("virsh storage");
    rec.call(
        "pool active",
        Procedure::StoragePoolIsActive,
        c.storage_pool_is_active(pool).await,
        |a| a.to_string(),
    );
    rec.call(
        "pool persistent",
        Procedure::StoragePoolIsPersistent,
        c.storage_pool_is_persistent(pool).await,
        |a| a.to_string(),
    );
    rec.call(
        "pool autostart",
        Procedure::StoragePoolGetAutostart,
        c.storage_pool_get_autostart(pool).await,
        |a| a.to_string(),
    );
    let name = format!("{}-virsh.img", names.prefix);
    let Some(vol) = rec.call(
        "create a volume",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &raw_volume_xml(&name, 1 << 20), 0)
            .await,
        |v| v.name.clone(),
    ) else {
        return;
    };
    volume_lookups(c, &vol, rec).await;
    rec.call(
        "pool of the volume",
        Procedure::StoragePoolLookupByVolume,
        c.storage_pool_lookup_by_volume(&vol).await,
        |p| format!("{} same-uuid={}", p.name, p.uuid == pool.uuid),
    );
    let orphan = StorageVol {
        pool: format!("{}-nopool", names.prefix),
        ..vol.clone()
    };
    rec.call(
        "pool of a volume whose pool is missing",
        Procedure::StoragePoolLookupByVolume,
        c.storage_pool_lookup_by_volume(&orphan).await,
        |p| p.name.clone(),
    );
    downloads(c, &vol, rec).await;
}

/// The volume's path, and lookups by path and by key (its own, missing, relative, outside every pool).
async fn volume_lookups(c: &Client, vol: &StorageVol, rec: &mut Recorder) {
    if let Some(path) = rec.call(
        "volume path",
        Procedure::StorageVolGetPath,
        c.storage_vol_get_path(vol).await,
        |p| p.clone(),
    ) {
        rec.call(
            "lookup by path",
            Procedure::StorageVolLookupByPath,
            c.storage_vol_lookup_by_path(&path).await,
            |v| format!("{} in {} same-key={}", v.name, v.pool, v.key == vol.key),
        );
        rec.call(
            "lookup by key",
            Procedure::StorageVolLookupByKey,
            c.storage_vol_lookup_by_key(&vol.key).await,
            |v| format!("{} in {} same-key={}", v.name, v.pool, v.key == vol.key),
        );
        rec.call(
            "lookup a missing key",
            Procedure::StorageVolLookupByKey,
            c.storage_vol_lookup_by_key(&format!("{path}.missing"))
                .await,
            |v| v.name.clone(),
        );
        rec.call(
            "lookup a relative path",
            Procedure::StorageVolLookupByPath,
            c.storage_vol_lookup_by_path(&vol.name).await,
            |v| v.name.clone(),
        );
        rec.call(
            "lookup a path outside every pool",
            Procedure::StorageVolLookupByPath,
            c.storage_vol_lookup_by_path("/nonexistent/fidelity.img")
                .await,
            |v| v.name.clone(),
        );
        rec.call(
            "lookup a missing path",
            Procedure::StorageVolLookupByPath,
            c.storage_vol_lookup_by_path(&format!("{path}.missing"))
                .await,
            |v| v.name.clone(),
        );
    }
}

/// Uploads a pattern, downloads it whole, in part, past the end, with an unknown flag, and once deleted.
async fn downloads(c: &Client, vol: &StorageVol, rec: &mut Recorder) {
    let data = pattern(300_000, 41);
    rec.call(
        "upload for the download",
        Procedure::StorageVolUpload,
        upload(c, vol, 0, 0, Bytes::from(data.clone())).await,
        |n| n.to_string(),
    );
    for (label, offset, length) in [
        ("download the whole volume", 0, 0),
        ("download a part", 299_990, 20),
        ("download past the end", 2 << 20, 0),
    ] {
        let got = async {
            c.storage_vol_download(vol, offset, length, 0)
                .await?
                .read_all()
                .await
        }
        .await;
        rec.call(label, Procedure::StorageVolDownload, got, |bytes| {
            let start = (offset as usize).min(data.len());
            let end = (start + bytes.len()).min(data.len());
            let rest_zero = bytes[end - start..].iter().all(|b| *b == 0);
            format!(
                "{} bytes, the upload's where it wrote: {}, zeros after: {rest_zero}",
                bytes.len(),
                bytes[..end - start] == data[start..end]
            )
        });
    }
    rec.call(
        "download with an unknown flag",
        Procedure::StorageVolDownload,
        async { c.storage_vol_download(vol, 0, 0, 4).await?.read_all().await }.await,
        |b| b.len().to_string(),
    );
    let _ = c.storage_vol_delete(vol, 0).await;
    rec.call(
        "download a deleted volume",
        Procedure::StorageVolDownload,
        async { c.storage_vol_download(vol, 0, 0, 0).await?.read_all().await }.await,
        |b| b.len().to_string(),
    );
}
