//! Removing everything a run made, whatever state it was left in.

use super::*;

/// Removes every domain (with its NVRAM) and volume whose name starts with
/// `prefix`; returns what could not be removed.
pub async fn cleanup(b: &Backend, prefix: &str) -> Vec<String> {
    let c = &b.client;
    let mut problems = Vec::new();
    if prefix.len() < 4 {
        return vec![format!("refusing to clean up with the prefix {prefix:?}")];
    }
    match list_ours(c, prefix, 0).await {
        Ok(doms) => {
            for d in doms {
                if d.id != -1
                    && let Err(e) = c.domain_destroy(&d).await
                    && !is_code(&e, &[ErrorCode::NoDomain, ErrorCode::OperationInvalid])
                {
                    problems.push(format!("destroy {}: {e}", d.name));
                }
                if let Err(e) = c.domain_undefine_flags(&d, DOMAIN_UNDEFINE_NVRAM).await
                    && !is_code(&e, &[ErrorCode::NoDomain])
                {
                    problems.push(format!("undefine {}: {e}", d.name));
                }
            }
        }
        Err(e) => problems.push(format!("list domains: {e}")),
    }
    match c.storage_pool_lookup_by_name(&b.pool).await {
        Ok(pool) => match list_vols(c, &pool, prefix).await {
            Ok(vols) => {
                for v in vols {
                    if let Err(e) = c.storage_vol_delete(&v, 0).await
                        && !is_code(&e, &[ErrorCode::NoStorageVol])
                    {
                        problems.push(format!("delete {}: {e}", v.name));
                    }
                }
            }
            Err(e) => problems.push(format!("list volumes: {e}")),
        },
        Err(e) => problems.push(format!("pool {}: {e}", b.pool)),
    }
    if let Ok(left) = list_ours(c, prefix, 0).await
        && !left.is_empty()
    {
        problems.push(format!("domains left: {}", show_doms(&left)));
    }
    problems.extend(cleanup_pools(b, prefix).await);
    problems
}

/// Removes every pool whose name starts with `prefix`, with its volumes and
/// its directory, and the run's pool directories no pool holds any more
/// (through a pool defined over each); returns what could not be removed.
async fn cleanup_pools(b: &Backend, prefix: &str) -> Vec<String> {
    let c = &b.client;
    let mut problems = Vec::new();
    let parent = match pools_parent(c, &b.pool).await {
        Ok(p) => p,
        Err(e) => return vec![e],
    };
    let pools = match list_pools(c, prefix).await {
        Ok(p) => p,
        Err(e) => return vec![format!("list pools: {e}")],
    };
    let mut held = Vec::new();
    for p in &pools {
        if let Ok(xml) = c.storage_pool_get_xml_desc(p).await
            && let Some(path) = pool_target_path(&xml)
        {
            held.push(path);
        }
        problems.extend(remove_pool(c, p).await);
    }
    for suffix in POOL_DIR_SUFFIXES {
        let dir = pool_dir(&parent, prefix, suffix);
        if held.contains(&dir) {
            continue;
        }
        let name = format!("{prefix}-sweep-{suffix}");
        match c.storage_pool_define_xml(&dir_pool_xml(&name, &dir)).await {
            Ok(p) => problems.extend(remove_pool(c, &p).await),
            Err(e) => problems.push(format!("define a pool over {dir}: {e}")),
        }
    }
    if let Ok(left) = list_pools(c, prefix).await
        && !left.is_empty()
    {
        problems.push(format!("pools left: {}", show_pools(&left)));
    }
    problems
}

/// Stops a pool, deletes its volumes (starting it for that if it can),
/// deletes its directory and undefines it. A directory that is already
/// gone is fine.
async fn remove_pool(c: &Client, p: &StoragePool) -> Vec<String> {
    let mut problems = Vec::new();
    let _ = c.storage_pool_destroy(p).await;
    if c.storage_pool_create(p).await.is_ok() {
        if let Ok(vols) = c.storage_pool_list_all_volumes(p).await {
            for v in vols {
                if let Err(e) = c.storage_vol_delete(&v, 0).await {
                    problems.push(format!("delete {} in {}: {e}", v.name, p.name));
                }
            }
        }
        if let Err(e) = c.storage_pool_destroy(p).await {
            problems.push(format!("stop {}: {e}", p.name));
        }
    }
    if let Err(e) = c.storage_pool_delete(p).await
        && !is_code(&e, &[ErrorCode::NoStoragePool, ErrorCode::SystemError])
    {
        problems.push(format!("delete pool {}: {e}", p.name));
    }
    if let Err(e) = c.storage_pool_undefine(p).await
        && !is_code(&e, &[ErrorCode::NoStoragePool])
    {
        problems.push(format!("undefine {}: {e}", p.name));
    }
    problems
}
