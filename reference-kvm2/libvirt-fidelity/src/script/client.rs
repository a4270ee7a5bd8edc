//! Calls the sequences share: listings narrowed to the run's names, uploads, and
//! where the pools live.

use super::*;

pub(super) async fn list_ours(
    c: &Client,
    prefix: &str,
    flags: u32,
) -> libvirt_rpc::Result<Vec<Domain>> {
    let mut v: Vec<Domain> = c
        .connect_list_all_domains(flags)
        .await?
        .into_iter()
        .filter(|d| d.name.starts_with(prefix))
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}

pub(super) async fn list_vols(
    c: &Client,
    pool: &StoragePool,
    prefix: &str,
) -> libvirt_rpc::Result<Vec<StorageVol>> {
    let mut v: Vec<StorageVol> = c
        .storage_pool_list_all_volumes(pool)
        .await?
        .into_iter()
        .filter(|v| v.name.starts_with(prefix))
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}

/// Uploads `data` at `offset` (declared `length`) and finishes; any error,
/// from the call or the stream, is the step's outcome.
pub(super) async fn upload(
    c: &Client,
    vol: &StorageVol,
    offset: u64,
    length: u64,
    data: Bytes,
) -> libvirt_rpc::Result<u64> {
    let mut up = c.storage_vol_upload(vol, offset, length, 0).await?;
    up.write(data).await?;
    up.finish().await
}

/// The directory that holds the test pool's directory, from its XML.
pub async fn pools_parent(c: &Client, pool: &str) -> Result<String, String> {
    let p = c
        .storage_pool_lookup_by_name(pool)
        .await
        .map_err(|e| format!("pool {pool}: {e}"))?;
    let xml = c
        .storage_pool_get_xml_desc(&p)
        .await
        .map_err(|e| format!("xml of pool {pool}: {e}"))?;
    let path = pool_target_path(&xml).ok_or_else(|| format!("pool {pool} has no target path"))?;
    path.rsplit_once('/')
        .map(|(parent, _)| if parent.is_empty() { "/" } else { parent }.to_owned())
        .ok_or_else(|| format!("pool {pool} has a relative path {path}"))
}

/// A pool's directory: `<parent>/<prefix>-<suffix>`.
pub fn pool_dir(parent: &str, prefix: &str, suffix: &str) -> String {
    format!("{}/{prefix}-{suffix}", parent.trim_end_matches('/'))
}

pub(super) async fn list_pools(c: &Client, prefix: &str) -> libvirt_rpc::Result<Vec<StoragePool>> {
    Ok(c.connect_list_all_storage_pools()
        .await?
        .into_iter()
        .filter(|p| p.name.starts_with(prefix))
        .collect())
}
