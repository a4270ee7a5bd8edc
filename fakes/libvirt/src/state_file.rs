//! The state a `fake-libvirtd` starts from: a JSON document naming the
//! host's storage pools with their volumes and its domains as libvirt XML,
//! or, when none is given, a small default like libvirt's test driver's
//! (one running domain `test`, one pool `default-pool`).
//!
//! The document is applied through an ordinary [`FakeConnection`], so every
//! pool, volume and domain in it meets the same checks a client's calls do
//! (a malformed domain XML fails the start with libvirt's error). Pools live
//! in memory: a pool's path is a name, never a directory the fake writes to.
//!
//! ```json
//! {
//!   "hostname": "fake-host",
//!   "pools": [
//!     { "name": "default", "path": "/var/lib/libvirt/images",
//!       "capacity": 107374182400,
//!       "volumes": [ { "name": "base.qcow2", "capacity": 1073741824, "format": "qcow2" } ] }
//!   ],
//!   "domains": [
//!     { "xml": "<domain type='kvm'><name>vm</name><memory>65536</memory></domain>",
//!       "running": true }
//!   ]
//! }
//! ```
//!
//! A domain gives its XML inline (`xml`) or in a file (`xml_file`, relative
//! to the state file). Unknown keys are refused, so a misspelt one is an
//! error rather than a silently empty host.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fake::FakeLibvirt;
use crate::fake::connection::FakeConnection;

/// The whole state file.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StateFile {
    /// What `ConnectGetHostname` answers (default `fake-host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Storage pools, each an active directory pool.
    #[serde(default)]
    pub pools: Vec<PoolSpec>,
    /// Domains, defined in order (and started when `running`).
    #[serde(default)]
    pub domains: Vec<DomainSpec>,
    /// Where relative `xml_file` paths are resolved (the state file's
    /// directory); not part of the document.
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// One storage pool.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    /// The pool's name.
    pub name: String,
    /// Its target path (a name only: nothing is written there).
    pub path: String,
    /// Its capacity in bytes.
    pub capacity: u64,
    /// Volumes in it.
    #[serde(default)]
    pub volumes: Vec<VolumeSpec>,
}

/// One volume of a pool.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VolumeSpec {
    /// The volume's name (its file name in the pool).
    pub name: String,
    /// Its capacity in bytes.
    pub capacity: u64,
    /// `raw` (default) or `qcow2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// One domain.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DomainSpec {
    /// The domain XML, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml: Option<String>,
    /// A file holding the domain XML, relative to the state file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml_file: Option<PathBuf>,
    /// Whether the domain is started after it is defined.
    #[serde(default)]
    pub running: bool,
}

/// The default domain: libvirt's test driver has one running domain named
/// `test`; this is the same, as a QEMU domain.
const DEFAULT_DOMAIN: &str = "<domain type='qemu'>\n  <name>test</name>\n  \
    <uuid>6695eb01-f6a4-8304-79aa-97f2502e193f</uuid>\n  \
    <memory unit='KiB'>8388608</memory>\n  <currentMemory unit='KiB'>2097152</currentMemory>\n  \
    <vcpu>2</vcpu>\n  <os>\n    <type arch='x86_64'>hvm</type>\n  </os>\n</domain>\n";

impl StateFile {
    /// The state used when no file is given: one running domain `test` and
    /// one empty pool `default-pool` of 100 GiB at `/default-pool`, as in
    /// libvirt's test driver.
    pub fn test_driver_default() -> Self {
        StateFile {
            hostname: None,
            pools: vec![PoolSpec {
                name: "default-pool".into(),
                path: "/default-pool".into(),
                capacity: 100 << 30,
                volumes: Vec::new(),
            }],
            domains: vec![DomainSpec {
                xml: Some(DEFAULT_DOMAIN.into()),
                xml_file: None,
                running: true,
            }],
            base_dir: PathBuf::new(),
        }
    }

    /// Parses a state document; `base_dir` resolves relative `xml_file`s.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Self, String> {
        let mut s: StateFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        s.base_dir = base_dir.to_path_buf();
        for (i, d) in s.domains.iter().enumerate() {
            if d.xml.is_some() == d.xml_file.is_some() {
                return Err(format!(
                    "domain {i}: give exactly one of \"xml\" and \"xml_file\""
                ));
            }
        }
        Ok(s)
    }

    /// The host as it is now, in this format, so that a daemon started from
    /// the result has the same pools, volumes and domains. What the format
    /// cannot say is left out: volume contents and backing files, inactive or
    /// transient pools (they come back active and persistent), a paused domain
    /// (it comes back running), a transient domain (it comes back persistent),
    /// and everything set out of band (addresses, held boots, faults).
    pub fn dump(fake: &FakeLibvirt) -> Self {
        let st = fake.state();
        let pools = st
            .pools
            .values()
            .map(|p| PoolSpec {
                name: p.name.clone(),
                path: p.path.clone(),
                capacity: p.capacity,
                volumes: p
                    .volumes
                    .values()
                    .map(|v| VolumeSpec {
                        name: v.name.clone(),
                        capacity: v.capacity,
                        format: v.format.clone().filter(|f| f != "raw"),
                    })
                    .collect(),
            })
            .collect();
        let mut domains: Vec<&crate::state::domains::Domain> = st.domains.values().collect();
        domains.sort_by(|a, b| a.name.cmp(&b.name));
        let domains = domains
            .into_iter()
            .filter_map(|d| {
                let xml = st
                    .get_xml_desc(&d.handle(), libvirt_wire::DOMAIN_XML_INACTIVE)
                    .ok()?;
                Some(DomainSpec {
                    xml: Some(xml),
                    xml_file: None,
                    running: d.active(),
                })
            })
            .collect();
        StateFile {
            hostname: Some(st.host.hostname.clone()),
            pools,
            domains,
            base_dir: PathBuf::new(),
        }
    }

    /// Reads and parses a state file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, dir).map_err(|e| format!("parse {}: {e}", path.display()))
    }

    /// Puts the state into `fake`: sets the host name, adds the pools,
    /// creates the volumes, defines the domains and starts the running
    /// ones, each through a connection of its own as a client would.
    pub async fn apply(&self, fake: &FakeLibvirt) -> Result<(), String> {
        if let Some(h) = &self.hostname {
            fake.update_host_config(|c| c.hostname.clone_from(h));
        }
        let conn = fake.connect().map_err(|e| e.to_string())?;
        conn.open(Some("qemu:///system"), 0)
            .await
            .map_err(|e| e.to_string())?;
        let result = self.apply_on(fake, &conn).await;
        conn.close();
        result
    }

    async fn apply_on(&self, fake: &FakeLibvirt, conn: &FakeConnection) -> Result<(), String> {
        for p in &self.pools {
            let pool = fake.add_pool(&p.name, &p.path, p.capacity);
            for v in &p.volumes {
                let format = v.format.as_deref().unwrap_or("raw");
                let xml = format!(
                    "<volume><name>{}</name><capacity unit='bytes'>{}</capacity>\
                     <target><format type='{format}'/></target></volume>",
                    v.name, v.capacity
                );
                conn.storage_vol_create_xml(&pool, &xml, 0)
                    .await
                    .map_err(|e| format!("pool {} volume {}: {e}", p.name, v.name))?;
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, d) in self.domains.iter().enumerate() {
            let xml = match (&d.xml, &d.xml_file) {
                (Some(x), _) => x.clone(),
                (None, Some(f)) => {
                    let path = self.base_dir.join(f);
                    std::fs::read_to_string(&path)
                        .map_err(|e| format!("domain {i}: read {}: {e}", path.display()))?
                }
                (None, None) => return Err(format!("domain {i}: no XML")),
            };
            let dom = conn
                .domain_define_xml(&xml)
                .await
                .map_err(|e| format!("domain {i}: {e}"))?;
            // libvirt takes a second definition of a name as an update; in
            // a state file it is a mistake.
            if !names.insert(dom.name.clone()) {
                return Err(format!("domain {i}: '{}' is defined twice", dom.name));
            }
            if d.running {
                conn.domain_create(&dom)
                    .await
                    .map_err(|e| format!("domain {}: start: {e}", dom.name))?;
            }
        }
        Ok(())
    }
}
