//! The pools the script makes of its own: a persistent one through its whole
//! lifecycle, and a transient one.

use super::*;

/// A call on one pool handle, or the listing of the run's pools: the steps the pool
/// sequences repeat in different states.
#[derive(Clone, Copy)]
enum PoolOp {
    Info,
    Xml,
    Build,
    Start,
    Destroy,
    Delete,
    Undefine,
    Volumes,
    ListPools,
}

/// Runs `steps` in order on `pool`, each recorded under its label.
async fn pool_steps(
    c: &Client,
    rec: &mut Recorder,
    pool: &StoragePool,
    prefix: &str,
    steps: &[(&str, PoolOp)],
) {
    for &(label, op) in steps {
        match op {
            PoolOp::Info => {
                let r = c.storage_pool_get_info(pool).await;
                rec.call(label, Procedure::StoragePoolGetInfo, r, show_pool_info);
            }
            PoolOp::Xml => {
                let r = c.storage_pool_get_xml_desc(pool).await;
                rec.call(label, Procedure::StoragePoolGetXmlDesc, r, show_pool_xml);
            }
            PoolOp::Build => {
                let r = c.storage_pool_build(pool).await;
                rec.call(label, Procedure::StoragePoolBuild, r, show_unit);
            }
            PoolOp::Start => {
                let r = c.storage_pool_create(pool).await;
                rec.call(label, Procedure::StoragePoolCreate, r, show_unit);
            }
            PoolOp::Destroy => {
                let r = c.storage_pool_destroy(pool).await;
                rec.call(label, Procedure::StoragePoolDestroy, r, show_unit);
            }
            PoolOp::Delete => {
                let r = c.storage_pool_delete(pool).await;
                rec.call(label, Procedure::StoragePoolDelete, r, show_unit);
            }
            PoolOp::Undefine => {
                let r = c.storage_pool_undefine(pool).await;
                rec.call(label, Procedure::StoragePoolUndefine, r, show_unit);
            }
            PoolOp::Volumes => {
                let r = list_vols(c, pool, prefix).await;
                rec.call(label, Procedure::StoragePoolListAllVolumes, r, show_vols);
            }
            PoolOp::ListPools => {
                let r = list_pools(c, prefix).await;
                rec.call(label, Procedure::ConnectListAllStoragePools, r, show_pools);
            }
        }
    }
}

/// A persistent directory pool through its life: define, build, start, a
/// volume, stop, delete refused while the volume is there, undefine with
/// the volume still on disk and a new definition that finds it, then the
/// volume deleted, the directory deleted and the pool undefined; with the
/// refusals on the way (wrong state, duplicates, a missing directory).
pub(super) async fn pool_lifecycle(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("pool lifecycle");
    let Some(parent) = test_pool_parent(b, rec).await else {
        return;
    };
    let name = format!("{}-pool", names.prefix);
    let dir = pool_dir(&parent, &names.prefix, "dir");
    let xml = dir_pool_xml(&name, &dir);
    let Some(pool) = define_pool(c, &name, &dir, &xml, rec).await else {
        return;
    };
    let vol_name = format!("{}-in-pool.img", names.prefix);
    first_life(c, &names.prefix, &pool, &name, &vol_name, rec).await;
    redefine_and_delete(c, &names.prefix, &xml, &vol_name, rec).await;
}

/// Looks up the test pool and its directory; returns the directory the pools are made in.
async fn test_pool_parent(b: &Backend, rec: &mut Recorder) -> Option<String> {
    let c = &b.client;
    let test_pool = rec.call(
        "lookup the test pool",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(&b.pool).await,
        show_pool,
    );
    let test_pool = test_pool?;
    let test_xml = rec.call(
        "xml of the test pool",
        Procedure::StoragePoolGetXmlDesc,
        c.storage_pool_get_xml_desc(&test_pool).await,
        show_pool_xml,
    );
    let Some(root) = test_xml.as_deref().and_then(pool_target_path) else {
        rec.skip("define", Procedure::StoragePoolDefineXml, NO_HANDLE);
        return None;
    };
    rec.norm.replace(root.clone(), "<pool-root>");
    let parent = root
        .rsplit_once('/')
        .map_or("/".to_owned(), |(p, _)| p.to_owned());
    rec.norm.replace(format!("{parent}/"), "<pools>/");
    Some(parent)
}

/// Defines the pool, then the definitions refused beside it, and looks it up.
async fn define_pool(
    c: &Client,
    name: &str,
    dir: &str,
    xml: &str,
    rec: &mut Recorder,
) -> Option<StoragePool> {
    let pool = rec.call(
        "define",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml(xml).await,
        show_pool,
    )?;
    rec.norm.replace(pool.uuid.to_string(), "<uuid:pool-1>");
    rec.call(
        "define again",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml(xml).await,
        show_pool,
    );
    rec.call(
        "define another name on the same directory",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml(&dir_pool_xml(&format!("{name}-twin"), dir))
            .await,
        show_pool,
    );
    rec.call(
        "define without a target path",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml(&format!(
            "<pool type='dir'><name>{name}-nopath</name></pool>"
        ))
        .await,
        show_pool,
    );
    rec.call(
        "define malformed XML",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml("<pool type='dir'><name>").await,
        show_pool,
    );
    rec.call(
        "lookup defined",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(name).await,
        show_pool,
    );
    Some(pool)
}

/// The defined pool built, started, given a volume, stopped and undefined, with the refusals on the way.
async fn first_life(
    c: &Client,
    prefix: &str,
    pool: &StoragePool,
    name: &str,
    vol_name: &str,
    rec: &mut Recorder,
) {
    pool_steps(
        c,
        rec,
        pool,
        prefix,
        &[
            ("info defined", PoolOp::Info),
            ("xml defined", PoolOp::Xml),
            ("list inactive", PoolOp::ListPools),
            ("destroy inactive", PoolOp::Destroy),
            ("start before build", PoolOp::Start),
            ("delete before build", PoolOp::Delete),
            ("build", PoolOp::Build),
            ("build again", PoolOp::Build),
            ("start", PoolOp::Start),
            ("start again", PoolOp::Start),
            ("build while running", PoolOp::Build),
            ("info running", PoolOp::Info),
            ("xml running", PoolOp::Xml),
        ],
    )
    .await;
    rec.call(
        "create volume",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &raw_volume_xml(vol_name, RAW_CAPACITY), 0)
            .await,
        show_vol,
    );
    pool_steps(
        c,
        rec,
        pool,
        prefix,
        &[
            ("list volumes", PoolOp::Volumes),
            ("undefine while running", PoolOp::Undefine),
            ("delete while running", PoolOp::Delete),
            ("destroy", PoolOp::Destroy),
            ("info destroyed", PoolOp::Info),
            ("xml destroyed", PoolOp::Xml),
            ("list volumes while stopped", PoolOp::Volumes),
            ("delete with a volume", PoolOp::Delete),
            ("undefine with a volume", PoolOp::Undefine),
        ],
    )
    .await;
    rec.call(
        "lookup undefined",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(name).await,
        show_pool,
    );
    pool_steps(
        c,
        rec,
        pool,
        prefix,
        &[
            ("info undefined", PoolOp::Info),
            ("undefine again", PoolOp::Undefine),
        ],
    )
    .await;
}

/// A new definition over the left directory finds the volume; then the volume, the directory and the pool go.
async fn redefine_and_delete(
    c: &Client,
    prefix: &str,
    xml: &str,
    vol_name: &str,
    rec: &mut Recorder,
) {
    // The directory and the volume's file are still there: a new
    // definition at the same path finds them once it runs.
    let Some(again) = rec.call(
        "define again on the same directory",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml(xml).await,
        show_pool,
    ) else {
        return;
    };
    rec.norm.replace(again.uuid.to_string(), "<uuid:pool-2>");
    pool_steps(
        c,
        rec,
        &again,
        prefix,
        &[
            ("start redefined", PoolOp::Start),
            ("list volumes of the redefined pool", PoolOp::Volumes),
        ],
    )
    .await;
    let vol = rec.call(
        "lookup the volume again",
        Procedure::StorageVolLookupByName,
        c.storage_vol_lookup_by_name(&again, vol_name).await,
        show_vol,
    );
    if let Some(vol) = &vol {
        rec.call(
            "delete the volume",
            Procedure::StorageVolDelete,
            c.storage_vol_delete(vol, 0).await,
            show_unit,
        );
    }
    pool_steps(
        c,
        rec,
        &again,
        prefix,
        &[
            ("destroy redefined", PoolOp::Destroy),
            ("delete", PoolOp::Delete),
            ("delete again", PoolOp::Delete),
            ("start after delete", PoolOp::Start),
            ("undefine", PoolOp::Undefine),
            ("list after undefine", PoolOp::ListPools),
        ],
    )
    .await;
}

/// A transient pool: refused without its directory, created with a build,
/// gone once stopped; its directory, left on the host, is removed through
/// a pool defined over it.
pub(super) async fn transient_pool(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("transient pool");
    let parent = match pools_parent(c, &b.pool).await {
        Ok(p) => p,
        Err(e) => {
            rec.push("parent directory", "-", Outcome::Failed(e));
            return;
        }
    };
    rec.norm.replace(format!("{parent}/"), "<pools>/");
    let name = format!("{}-transient", names.prefix);
    let dir = pool_dir(&parent, &names.prefix, "tdir");
    let xml = dir_pool_xml(&name, &dir);
    let Some(pool) = create_transient(c, &name, &xml, rec).await else {
        return;
    };
    while_running_and_after(c, &names.prefix, &pool, &name, &xml, rec).await;
    sweep_left_directory(c, &names.prefix, &xml, rec).await;
}

/// Creates the transient pool, refused first without its directory, then with a build.
async fn create_transient(
    c: &Client,
    name: &str,
    xml: &str,
    rec: &mut Recorder,
) -> Option<StoragePool> {
    rec.call(
        "create without its directory",
        Procedure::StoragePoolCreateXml,
        c.storage_pool_create_xml(xml).await,
        show_pool,
    );
    rec.call(
        "lookup after the failed create",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(name).await,
        show_pool,
    );
    let created = c
        .call::<calls::StoragePoolCreateXml>(&StoragePoolDefineXmlArgs {
            xml: xml.to_owned(),
            flags: STORAGE_POOL_CREATE_WITH_BUILD,
        })
        .await
        .map(|r| r.pool);
    let pool = rec.call(
        "create with build",
        Procedure::StoragePoolCreateXml,
        created,
        show_pool,
    )?;
    rec.norm.replace(pool.uuid.to_string(), "<uuid:transient>");
    Some(pool)
}

/// The running transient pool: read, created and defined again, undefined, listed, destroyed and gone.
async fn while_running_and_after(
    c: &Client,
    prefix: &str,
    pool: &StoragePool,
    name: &str,
    xml: &str,
    rec: &mut Recorder,
) {
    pool_steps(
        c,
        rec,
        pool,
        prefix,
        &[("info", PoolOp::Info), ("xml", PoolOp::Xml)],
    )
    .await;
    rec.call(
        "create again",
        Procedure::StoragePoolCreateXml,
        c.storage_pool_create_xml(xml).await,
        show_pool,
    );
    rec.call(
        "define over the running transient pool",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml(xml).await,
        show_pool,
    );
    pool_steps(
        c,
        rec,
        pool,
        prefix,
        &[
            ("undefine", PoolOp::Undefine),
            ("list", PoolOp::ListPools),
            ("destroy", PoolOp::Destroy),
        ],
    )
    .await;
    rec.call(
        "lookup destroyed",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(name).await,
        show_pool,
    );
    pool_steps(
        c,
        rec,
        pool,
        prefix,
        &[
            ("info destroyed", PoolOp::Info),
            ("destroy again", PoolOp::Destroy),
        ],
    )
    .await;
}

/// Removes the directory the build left through a pool defined over it.
async fn sweep_left_directory(c: &Client, prefix: &str, xml: &str, rec: &mut Recorder) {
    // The directory the build made is still there.
    let Some(sweep) = rec.call(
        "define over the left directory",
        Procedure::StoragePoolDefineXml,
        c.storage_pool_define_xml(xml).await,
        show_pool,
    ) else {
        return;
    };
    pool_steps(
        c,
        rec,
        &sweep,
        prefix,
        &[
            ("delete the left directory", PoolOp::Delete),
            ("undefine the sweeper", PoolOp::Undefine),
        ],
    )
    .await;
}
