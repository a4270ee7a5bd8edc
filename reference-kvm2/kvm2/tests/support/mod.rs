//! What the real-host tests share.

use std::collections::BTreeSet;
use std::time::SystemTime;

use kvm2::config::HostConfig;

/// A short hex ID for one test run: the process and the time of day, so runs one
/// after another on the same host never pick the same names.
pub fn run_id() -> String {
    format!(
        "{:x}{:x}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            % 0x10000
    )
}

/// What a host holds (domains, and the volumes of one pool), read on a libvirt
/// connection of the test's own, never the provider's.
#[allow(dead_code)] // not every test binary that shares this module takes inventory
pub struct Inventory {
    client: libvirt_rpc::Client,
    pool: String,
}

#[allow(dead_code)]
impl Inventory {
    pub async fn open(host: &HostConfig, pool: &str) -> Inventory {
        let client = kvm2::fixture::real::dial_side(host)
            .await
            .unwrap_or_else(|e| panic!("a connection of the test's own to {}: {e}", host.name));
        Inventory {
            client,
            pool: pool.to_owned(),
        }
    }

    pub async fn domains(&self) -> BTreeSet<String> {
        let all = self
            .client
            .connect_list_all_domains(0)
            .await
            .expect("list the domains");
        all.into_iter().map(|d| d.name).collect()
    }

    /// The pool's volumes after a refresh, so files changed behind libvirt count too.
    pub async fn volumes(&self) -> BTreeSet<String> {
        let pool = self
            .client
            .storage_pool_lookup_by_name(&self.pool)
            .await
            .expect("look the pool up");
        self.client
            .storage_pool_refresh(&pool)
            .await
            .expect("refresh the pool");
        let vols = self
            .client
            .storage_pool_list_all_volumes(&pool)
            .await
            .expect("list the volumes");
        vols.into_iter().map(|v| v.name).collect()
    }
}
