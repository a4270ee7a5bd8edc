//! The storage pool the script borrows, and the volumes it makes in it.

use super::*;

pub(super) async fn storage_pool(
    b: &Backend,
    names: &RunNames,
    rec: &mut Recorder,
) -> Option<StoragePool> {
    let c = &b.client;
    rec.sequence("pool");
    let pool = rec.call(
        "lookup",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(&b.pool).await,
        show_pool,
    );
    if let Some(p) = &pool {
        rec.norm.replace(p.uuid.to_string(), "<uuid:pool>");
    }
    rec.call(
        "lookup missing",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(&format!("{}-no-pool", names.prefix))
            .await,
        show_pool,
    );
    let ghost = StoragePool {
        name: format!("{}-no-pool", names.prefix),
        uuid: names.missing.1,
    };
    rec.call(
        "info of a missing pool",
        Procedure::StoragePoolGetInfo,
        c.storage_pool_get_info(&ghost).await,
        show_pool_info,
    );
    rec.call(
        "refresh a missing pool",
        Procedure::StoragePoolRefresh,
        c.storage_pool_refresh(&ghost).await,
        show_unit,
    );
    let Some(pool) = pool else {
        rec.skip("info", Procedure::StoragePoolGetInfo, NO_HANDLE);
        return None;
    };
    rec.call(
        "info",
        Procedure::StoragePoolGetInfo,
        c.storage_pool_get_info(&pool).await,
        show_pool_info,
    );
    rec.call(
        "refresh",
        Procedure::StoragePoolRefresh,
        c.storage_pool_refresh(&pool).await,
        show_unit,
    );
    rec.call(
        "list volumes before",
        Procedure::StoragePoolListAllVolumes,
        list_vols(c, &pool, &names.prefix).await,
        show_vols,
    );
    Some(pool)
}

pub(super) async fn volumes(b: &Backend, names: &RunNames, pool: &StoragePool, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("volume");
    let raw_name = format!("{}-raw.img", names.prefix);
    let prefix = &names.prefix;
    let Some(vol) = create_raw(c, prefix, pool, &raw_name, rec).await else {
        return;
    };
    let path = path_and_info(c, prefix, pool, &vol, rec).await;
    uploads(b, &vol, &raw_name, path.as_deref(), rec).await;
    let overlay = overlays(c, prefix, pool, path.as_deref(), rec).await;
    delete_and_after(c, prefix, pool, &vol, &raw_name, overlay, rec).await;
}

/// Creates the raw volume (twice) and looks it up and a missing one.
async fn create_raw(
    c: &Client,
    prefix: &str,
    pool: &StoragePool,
    raw_name: &str,
    rec: &mut Recorder,
) -> Option<StorageVol> {
    let raw_xml = raw_volume_xml(raw_name, RAW_CAPACITY);
    let vol = rec.call(
        "create raw",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &raw_xml, 0).await,
        show_vol,
    );
    rec.call(
        "create raw again",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &raw_xml, 0).await,
        show_vol,
    );
    rec.call(
        "lookup",
        Procedure::StorageVolLookupByName,
        c.storage_vol_lookup_by_name(pool, raw_name).await,
        show_vol,
    );
    rec.call(
        "lookup missing",
        Procedure::StorageVolLookupByName,
        c.storage_vol_lookup_by_name(pool, &format!("{prefix}-nothing"))
            .await,
        show_vol,
    );
    let Some(vol) = vol else {
        rec.skip("path", Procedure::StorageVolGetPath, NO_HANDLE);
        return None;
    };
    Some(vol)
}

/// The volume's path (its directory normalised), its info and the pool's volumes; returns the path.
async fn path_and_info(
    c: &Client,
    prefix: &str,
    pool: &StoragePool,
    vol: &StorageVol,
    rec: &mut Recorder,
) -> Option<String> {
    let path = rec.call(
        "path",
        Procedure::StorageVolGetPath,
        c.storage_vol_get_path(vol).await,
        |p| p.clone(),
    );
    if let Some((root, _)) = path.as_deref().and_then(|p| p.rsplit_once('/')) {
        rec.norm.replace(root.to_owned(), "<pool-root>");
    }
    rec.call(
        "info new",
        Procedure::StorageVolGetInfo,
        c.storage_vol_get_info(vol).await,
        show_vol_info,
    );
    rec.call(
        "list volumes",
        Procedure::StoragePoolListAllVolumes,
        list_vols(c, pool, prefix).await,
        show_vols,
    );
    path
}

/// Uploads a pattern and reads it back, and uploads past the volume's end.
async fn uploads(
    b: &Backend,
    vol: &StorageVol,
    raw_name: &str,
    path: Option<&str>,
    rec: &mut Recorder,
) {
    let c = &b.client;
    let data = pattern(SMALL_UPLOAD, 7);
    rec.call(
        "upload",
        Procedure::StorageVolUpload,
        upload(c, vol, 0, 0, Bytes::from(data.clone())).await,
        |n| format!("sent {n}"),
    );
    rec.call(
        "info after upload",
        Procedure::StorageVolGetInfo,
        c.storage_vol_get_info(vol).await,
        show_vol_info,
    );
    let read = match &path {
        Some(p) => b.read_volume(raw_name, p, SMALL_UPLOAD),
        None => Err(NO_HANDLE.to_owned()),
    };
    rec.push(
        "read back",
        "read-file",
        match read {
            Ok(bytes) => Outcome::Value(format!(
                "first {} bytes as uploaded: {}",
                SMALL_UPLOAD,
                bytes == data
            )),
            Err(e) => Outcome::Failed(e),
        },
    );
    // Not run: libvirtd 11.x answers a packet past the declared length by
    // never answering anything again (measured on 11.3.0; it crashed instead
    // once), and so does the fake (`FakeLibvirt::is_wedged`, tested in
    // fakes/libvirt). Run here, it would take the rest of the run with it.
    rec.skip(
        "upload more than declared",
        Procedure::StorageVolUpload,
        "libvirtd 11.x is lost after it (see FakeLibvirt::is_wedged)",
    );
    rec.call(
        "upload past the end",
        Procedure::StorageVolUpload,
        upload(c, vol, RAW_CAPACITY + 4096, 0, Bytes::from(pattern(10, 9))).await,
        |n| format!("sent {n}"),
    );
    rec.call(
        "info after uploads",
        Procedure::StorageVolGetInfo,
        c.storage_vol_get_info(vol).await,
        show_vol_info,
    );
}

/// Creates an overlay of the volume, then overlays refused (a missing file, bad XML); returns the overlay.
async fn overlays(
    c: &Client,
    prefix: &str,
    pool: &StoragePool,
    path: Option<&str>,
    rec: &mut Recorder,
) -> Option<StorageVol> {
    let overlay_name = format!("{prefix}-overlay.qcow2");
    let overlay = match &path {
        Some(p) => rec.call(
            "create overlay",
            Procedure::StorageVolCreateXml,
            c.storage_vol_create_xml(pool, &overlay_xml(&overlay_name, RAW_CAPACITY, p), 0)
                .await,
            show_vol,
        ),
        None => {
            rec.skip("create overlay", Procedure::StorageVolCreateXml, NO_HANDLE);
            None
        }
    };
    if let Some(o) = &overlay {
        rec.call(
            "overlay info",
            Procedure::StorageVolGetInfo,
            c.storage_vol_get_info(o).await,
            show_vol_info,
        );
    }
    let dangling = match &path {
        Some(p) => {
            let root = p.rsplit_once('/').map_or("", |(r, _)| r);
            overlay_xml(
                &format!("{prefix}-dangling.qcow2"),
                RAW_CAPACITY,
                &format!("{root}/{prefix}-absent.img"),
            )
        }
        None => String::new(),
    };
    rec.call(
        "create overlay of a missing file",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &dangling, 0).await,
        show_vol,
    );
    rec.call(
        "create from bad XML",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, "<volume><name>", 0).await,
        show_vol,
    );
    overlay
}

/// Deletes the overlay and the volume, then asks what is left of the volume and the pool.
async fn delete_and_after(
    c: &Client,
    prefix: &str,
    pool: &StoragePool,
    vol: &StorageVol,
    raw_name: &str,
    overlay: Option<StorageVol>,
    rec: &mut Recorder,
) {
    if let Some(o) = &overlay {
        rec.call(
            "delete overlay",
            Procedure::StorageVolDelete,
            c.storage_vol_delete(o, 0).await,
            show_unit,
        );
    }
    rec.call(
        "delete",
        Procedure::StorageVolDelete,
        c.storage_vol_delete(vol, 0).await,
        show_unit,
    );
    rec.call(
        "delete again",
        Procedure::StorageVolDelete,
        c.storage_vol_delete(vol, 0).await,
        show_unit,
    );
    rec.call(
        "info of deleted",
        Procedure::StorageVolGetInfo,
        c.storage_vol_get_info(vol).await,
        show_vol_info,
    );
    rec.call(
        "path of deleted",
        Procedure::StorageVolGetPath,
        c.storage_vol_get_path(vol).await,
        |p| p.clone(),
    );
    rec.call(
        "lookup deleted",
        Procedure::StorageVolLookupByName,
        c.storage_vol_lookup_by_name(pool, raw_name).await,
        show_vol,
    );
    rec.call(
        "upload into deleted",
        Procedure::StorageVolUpload,
        upload(c, vol, 0, 0, Bytes::from_static(b"x")).await,
        |n| format!("sent {n}"),
    );
    rec.call(
        "refresh",
        Procedure::StoragePoolRefresh,
        c.storage_pool_refresh(pool).await,
        show_unit,
    );
    rec.call(
        "list volumes after",
        Procedure::StoragePoolListAllVolumes,
        list_vols(c, pool, prefix).await,
        show_vols,
    );
}
