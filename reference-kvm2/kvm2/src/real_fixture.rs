//! `RealFixture`: the conformance fixture that runs kvm2 against the real libvirt
//! hosts of a configuration file (`kvm2 conformance --config FILE --test-host`).
//!
//! Instances really boot. Each request asks the test guest for an address of its
//! own in 192.0.2.0/24 through a `# test-address:` line in its user-data (the guest
//! of `scripts/build-guest.sh` configures exactly that address).
//!
//! The hooks reach below the provider without touching it:
//!
//! - every testbed gets storage pools of its own, one per host, defined beside the
//!   configured pool and removed with the testbed, so rules running at once never
//!   see each other's volumes and "the pool is gone" can really happen;
//! - inventory and planting use a libvirt connection of the testbed's own, dialled
//!   with the configuration's credentials (planting defines domains with or without
//!   kvm2's mark; an instance with an empty uid is made complete by an out-of-band
//!   kvm2 and then has its mark rewritten); NVRAM files are listed through a
//!   transient pool over libvirt's NVRAM directory, so remote hosts work too;
//! - faults are injected by a chaos layer at the dialer seam: every stream the
//!   provider dials is wrapped, its libvirt packets are framed, and a call chosen by
//!   an injection is answered with a libvirt error, held forever, delayed, or has its
//!   connection dropped. `fired` is true only once the layer has done so;
//! - state control: power through libvirt (suspend, resume, destroy, start); the
//!   addresses a guest reports, a failing guest agent and held boots by the chaos
//!   layer rewriting the host's answers to `DomainInterfaceAddresses` (a held boot
//!   answers "agent not connected", as a booting guest does);
//! - capacity: the chaos layer lowers the free space `StoragePoolGetInfo` reports;
//! - reachability dials the host's real SSH client against a closed loopback port
//!   (refused at once) or a listener that accepts and never answers;
//! - rotation, when every host is on loopback with its `authorized_keys` file
//!   beside the configured key (the layout of `scripts/libvirt-host.sh`): each
//!   testbed authorises a key of its own per host, with a key file and a
//!   known_hosts file per host in its scratch directory, and rotation swaps the
//!   location's key for a new one in its key file and in `authorized_keys`.
//!   Access to a location is broken by taking its key out of `authorized_keys`
//!   (revoked), by rewriting its known_hosts file to name a freshly generated
//!   host key (foreign host key), or by moving its key file aside (credentials
//!   removed); restoring puts back the line, the files and the known_hosts file;
//! - observation: the calls and dials the chaos layer saw, and the provider's
//!   verbosity.
//!
//! The chaos layer also gates boots: a call that starts a guest waits for one of
//! two turns of the whole process; a turn is given back when the host first reports
//! the guest's IPv4 through its agent, when the guest is destroyed or fails to
//! start, or after [`BOOT_TURN_MAX`], so at most two guests boot at once whatever
//! the rules do in parallel.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use bytes::BytesMut;
use conformance::fixture::{
    AccessBreak, BackendCall, Capacity, FaultId, FaultKind, FaultSpec, Faults, Fixture, Hook,
    HookError, HookResult, Inventory, Location, Observation, Part, Plant, Planting, Power,
    Reachability, Resource, Rotation, StateControl, Testbed, Trigger, Verbosity as Tier,
};
use conformance::{BoxFuture, CloudInit, Ctx, Profile, Provider, ProviderId};
use libvirt_rpc::Client;
use libvirt_ssh::server::{KeyKind, generate_client_key};
use libvirt_wire::{
    DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, DOMAIN_METADATA_ELEMENT, DOMAIN_UNDEFINE_NVRAM,
    DOMAIN_XML_INACTIVE, Decode, Domain, DomainInterface, DomainInterfaceAddressesArgs,
    DomainInterfaceAddressesRet, DomainIpAddr, DomainState, ErrorCode, ErrorDomain, Header,
    IP_ADDR_TYPE_IPV4, IP_ADDR_TYPE_IPV6, KEEPALIVE_PROGRAM, MessageType, REMOTE_PROGRAM, Reader,
    RemoteError, STORAGE_VOL_DELETE_NORMAL, Status, StoragePool, StoragePoolGetInfoRet,
    decode_exact, encode_error_reply, encode_packet, frame_len,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::backend::Verbosity;
use crate::config::{Config, HostConfig};
use crate::dialer::{DialError, Dialer, SshDialer, Stream};
use crate::names::{image_marker, image_volume, overlay_volume, seed_volume, volume_owner};
use crate::provider::Kvm2;
use crate::scratch::ScratchDir;
use crate::xml::{Mark, format_time, metadata_element};

/// Where libvirtd keeps NVRAM files (listed through [`NVRAM_POOL`]).
const NVRAM_DIR: &str = "/var/lib/libvirt/qemu/nvram";

/// The transient pool over [`NVRAM_DIR`] through which the fixture lists NVRAM
/// files; it goes away when libvirtd restarts and is made again when missing.
const NVRAM_POOL: &str = "kvm2-conformance-nvram";

/// The fixture over the hosts of a configuration file.
pub struct RealFixture {
    config: Config,
    /// The `authorized_keys` files of the loopback test hosts' sshd, when the
    /// fixture may add testbed keys to them (empty: no rotation).
    authorized_keys: Vec<PathBuf>,
}

/// The `authorized_keys` files beside every host's key file, when every host is on
/// loopback and every such file can be appended to; else none.
fn rotation_files(hosts: &[HostConfig]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for h in hosts {
        let ak = h
            .key_file
            .as_ref()
            .and_then(|k| k.parent())
            .map(|d| d.join("authorized_keys"))
            .filter(|p| std::fs::OpenOptions::new().append(true).open(p).is_ok());
        match ak {
            Some(ak) if is_loopback(&h.address) => {
                if !out.contains(&ak) {
                    out.push(ak);
                }
            }
            _ => return Vec::new(),
        }
    }
    out
}

impl RealFixture {
    /// The fixture for `config`. Refuses a configuration without hosts.
    pub fn new(config: Config) -> Result<RealFixture, String> {
        if config.hosts.is_empty() {
            return Err("the configuration names no host".into());
        }
        let authorized_keys = rotation_files(&config.hosts);
        for ak in &authorized_keys {
            sweep_stale_keys(ak);
        }
        Ok(RealFixture {
            config,
            authorized_keys,
        })
    }

    /// Reads the configuration file at `path`.
    pub fn from_file(path: &Path) -> Result<RealFixture, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the configuration {}: {e}", path.display()))?;
        let config = Config::from_yaml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        RealFixture::new(config)
    }

    /// The provider configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

fn is_loopback(address: &str) -> bool {
    address == "localhost"
        || address
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback())
}

fn hook_err(e: impl std::fmt::Display) -> HookError {
    HookError::new(e)
}

/// The test address for instance `name`: distinct per name in 192.0.2.10-249,
/// the same for the same name (a repeated Create sends the same request).
pub fn test_address(name: &str) -> Ipv4Addr {
    static TABLE: Mutex<(BTreeMap<String, u8>, u8)> = Mutex::new((BTreeMap::new(), 0));
    let mut t = TABLE.lock().expect("address table poisoned");
    if let Some(a) = t.0.get(name) {
        return Ipv4Addr::new(192, 0, 2, *a);
    }
    let octet = 10 + t.1 % 240;
    t.1 = t.1.wrapping_add(1) % 240;
    t.0.insert(name.to_owned(), octet);
    Ipv4Addr::new(192, 0, 2, octet)
}

/// The user-data of a test instance: the test guest takes its address from it.
pub fn user_data(name: &str) -> String {
    format!(
        "#cloud-config\n# test-address: {}/24\nhostname: {name}\n",
        test_address(name)
    )
}

/// The comment that marks a testbed's key in `authorized_keys`.
const KEY_MARK: &str = "kvm2-conformance-";

/// Removes testbed keys of runs whose process is gone (killed before teardown).
fn sweep_stale_keys(authorized_keys: &Path) {
    let alive = |line: &str| {
        let Some((_, mark)) = line.rsplit_once(' ') else {
            return true;
        };
        let Some(rest) = mark.strip_prefix(KEY_MARK) else {
            return true;
        };
        // `<tmp>/kvm2-real-fixture-<pid>-<n>`
        let pid = rest
            .rsplit('/')
            .next()
            .and_then(|d| d.strip_prefix("kvm2-real-fixture-"))
            .and_then(|d| d.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        pid.is_none_or(|p| Path::new(&format!("/proc/{p}")).exists())
    };
    let _ = edit_authorized_keys(authorized_keys, |mut lines| {
        lines.retain(|l| alive(l));
        lines
    });
}

/// Serialises edits of the host's `authorized_keys` file.
static AUTHORIZED_KEYS: Mutex<()> = Mutex::new(());

fn edit_authorized_keys(
    path: &Path,
    edit: impl FnOnce(Vec<String>) -> Vec<String>,
) -> io::Result<()> {
    let _one = AUTHORIZED_KEYS
        .lock()
        .expect("authorized_keys lock poisoned");
    let text = std::fs::read_to_string(path)?;
    let lines = edit(text.lines().map(str::to_owned).collect());
    let tmp = path.with_extension("kvm2-conformance.new");
    let mut out = lines.join("\n");
    out.push('\n');
    std::fs::write(&tmp, out)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    }
    std::fs::rename(&tmp, path)
}

impl Fixture for RealFixture {
    fn provider_name(&self) -> String {
        self.config.name.clone()
    }

    fn profile(&self) -> Profile {
        Kvm2::declared_profile()
    }

    fn provider_version(&self) -> String {
        env!("CARGO_PKG_VERSION").into()
    }

    fn hooks(&self) -> Vec<Hook> {
        let mut hooks = vec![
            Hook::Inventory,
            Hook::Planting,
            Hook::StateControl,
            Hook::Capacity,
            Hook::Faults,
            Hook::Observation,
        ];
        if !self.authorized_keys.is_empty() {
            hooks.push(Hook::Rotation);
        }
        hooks
    }

    fn locations(&self) -> Vec<Location> {
        let mut out = Vec::new();
        for h in &self.config.hosts {
            // The first placement that maps to the host, in name order.
            if let Some((zone, _)) = self
                .config
                .placement
                .iter()
                .find(|(_, host)| **host == h.name)
            {
                out.push(Location {
                    name: h.name.clone(),
                    placement: zone.clone(),
                });
            }
        }
        out
    }

    fn has_checker(&self) -> bool {
        true
    }

    fn is_real_backend(&self) -> bool {
        true
    }

    fn environment(&self) -> BTreeMap<String, String> {
        let hosts: Vec<String> = self
            .config
            .hosts
            .iter()
            .map(|h| format!("{} ({}@{}:{})", h.name, h.user, h.address, h.port))
            .collect();
        BTreeMap::from([
            (
                "backend".to_owned(),
                "real libvirtd over SSH; faults injected by a chaos layer at the dialer seam"
                    .to_owned(),
            ),
            ("hosts".to_owned(), hosts.join(", ")),
            (
                "pool".to_owned(),
                format!(
                    "{} (each testbed works in a pool of its own beside it)",
                    self.config.pool
                ),
            ),
            (
                "rpcTimeout".to_owned(),
                format!(
                    "{:?} for the testbeds (so a held call outlasts a boot)",
                    self.config.timeouts.rpc.max(HELD_CALL_RPC_TIMEOUT)
                ),
            ),
            ("bridge".to_owned(), self.config.bridge.clone()),
            (
                "domainType".to_owned(),
                self.config.domain_type.as_str().to_owned(),
            ),
        ])
    }

    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async move {
            static NEXT_BED: AtomicU64 = AtomicU64::new(0);
            let dir = ScratchDir::new("kvm2-real-fixture").map_err(hook_err)?;
            let mut config = self.config.clone();
            config.pool = format!(
                "{}{}{}-{}",
                self.config.pool,
                BED_POOL_INFIX,
                std::process::id(),
                NEXT_BED.fetch_add(1, Ordering::Relaxed)
            );
            // A held call must outlast another guest's boot (queued behind others'),
            // so that a stall shows as a stall and not as an RPC deadline.
            config.timeouts.rpc = config.timeouts.rpc.max(HELD_CALL_RPC_TIMEOUT);
            let mut creds = None;
            if !self.authorized_keys.is_empty() {
                // Dropped on a failure below, it takes out the keys it installed.
                let c = creds.insert(Creds {
                    authorized_keys: self.authorized_keys.clone(),
                    originals: known_hosts_files(&self.config.hosts),
                    marker: format!("{KEY_MARK}{}", dir.path().display()),
                    hosts: HashMap::new(),
                });
                for (i, host) in config.hosts.iter_mut().enumerate() {
                    let hc = c.install(&dir.path().join(format!("host-{i}")), host)?;
                    host.key_file = Some(hc.key_file.clone());
                    host.known_hosts_file = Some(hc.known_hosts_file.clone());
                    c.hosts.insert(host.name.clone(), hc);
                }
            }
            // The testbed's pools, one per host, and its side connections.
            let mut side = HashMap::new();
            let mut pools = HashMap::new();
            for h in &self.config.hosts {
                let made = async {
                    let c = dial_side(h).await?;
                    sweep_stale_pools(&c, &h.name, &self.config.pool).await;
                    let dir = make_pool(&c, &self.config.pool, &config.pool).await?;
                    HookResult::Ok((c, dir))
                }
                .await;
                match made {
                    Ok((c, dir)) => {
                        side.insert(h.name.clone(), c);
                        pools.insert(h.name.clone(), dir);
                    }
                    Err(e) => {
                        for (name, c) in &side {
                            let _ = drop_pool(c, &config.pool, pools.get(name)).await;
                        }
                        return Err(HookError::new(format!(
                            "the testbed's pool on {}: {e}",
                            h.name
                        )));
                    }
                }
            }
            let chaos = Arc::new(Chaos::default());
            let dialer = Arc::new(ChaosDialer {
                ssh: SshDialer {
                    handshake_timeout: config.timeouts.dial,
                },
                chaos: chaos.clone(),
            });
            let verbosity: Verbosity = Arc::new(1.into());
            let provider = Kvm2::with_verbosity(config.clone(), dialer.clone(), verbosity.clone());
            // The operator's credentials, the testbed's pool.
            let mut oob_config = self.config.clone();
            oob_config.pool = config.pool.clone();
            let oob = Kvm2::new(
                oob_config,
                Arc::new(SshDialer {
                    handshake_timeout: config.timeouts.dial,
                }),
            );
            Ok(Box::new(RealBed {
                operator: self.config.clone(),
                config,
                chaos,
                dialer,
                verbosity,
                provider,
                oob,
                side: tokio::sync::Mutex::new(side),
                pools,
                creds,
                _scratch: dir,
            }) as Box<dyn Testbed>)
        })
    }
}

/// The per-call deadline of the testbeds' providers, at least.
const HELD_CALL_RPC_TIMEOUT: Duration = Duration::from_secs(180);

/// What names a testbed pool: `<configured pool><infix><pid>-<n>`.
const BED_POOL_INFIX: &str = "-bed";

/// The known_hosts files of `hosts`, each once, in order.
fn known_hosts_files(hosts: &[HostConfig]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for k in hosts.iter().filter_map(|h| h.known_hosts_file.clone()) {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// Writes the concatenation of `originals` to `to`, atomically.
fn write_known_hosts(originals: &[PathBuf], to: &Path) -> HookResult<()> {
    let mut text = Vec::new();
    for k in originals {
        text.extend(
            std::fs::read(k)
                .map_err(|e| HookError::new(format!("known_hosts file {}: {e}", k.display())))?,
        );
        if !text.ends_with(b"\n") {
            text.push(b'\n');
        }
    }
    let tmp = to.with_extension("new");
    std::fs::write(&tmp, text).map_err(hook_err)?;
    std::fs::rename(&tmp, to).map_err(hook_err)
}

/// A libvirt connection of its own to `host` (over SSH, with the host's configured
/// credentials), for looking below the provider: the fixture's and the real-host
/// tests' inventory.
pub async fn dial_side(host: &HostConfig) -> HookResult<Client> {
    let stream = SshDialer::default()
        .dial(host)
        .await
        .map_err(|e| HookError::new(format!("side connection to {}: {e}", host.name)))?;
    let (client, conn) = libvirt_rpc::Config::default().attach(stream);
    tokio::spawn(conn);
    client
        .open(crate::backend::LIBVIRT_URI)
        .await
        .map_err(hook_err)?;
    Ok(client)
}

fn is_missing_pool(e: &libvirt_rpc::Error) -> bool {
    e.as_remote()
        .is_some_and(|r| r.code == ErrorCode::NoStoragePool)
}

/// The XML of a directory pool.
fn pool_xml(name: &str, path: &str) -> String {
    format!(
        "<pool type='dir'><name>{}</name><target><path>{}</path></target></pool>",
        quick_xml::escape::escape(name),
        quick_xml::escape::escape(path)
    )
}

/// The `<target><path>` of a pool's XML.
fn target_path(xml: &str) -> Option<String> {
    let target = &xml[xml.find("<target>")?..];
    let start = target.find("<path>")? + "<path>".len();
    let end = start + target[start..].find("</path>")?;
    Some(target[start..end].trim().to_owned())
}

/// Defines, builds and starts pool `name` in a directory beside pool `model`'s.
/// Returns the directory.
async fn make_pool(c: &Client, model: &str, name: &str) -> HookResult<String> {
    let base = c
        .storage_pool_lookup_by_name(model)
        .await
        .map_err(|e| HookError::new(format!("the configured pool {model}: {e}")))?;
    let xml = c.storage_pool_get_xml_desc(&base).await.map_err(hook_err)?;
    let path = target_path(&xml)
        .ok_or_else(|| HookError::new(format!("pool {model} has no target path")))?;
    let parent = Path::new(&path)
        .parent()
        .ok_or_else(|| HookError::new(format!("pool {model}'s path {path} has no parent")))?;
    let dir = parent.join(name).to_string_lossy().into_owned();
    let pool = c
        .storage_pool_define_xml(&pool_xml(name, &dir))
        .await
        .map_err(hook_err)?;
    let built = c.storage_pool_build(&pool).await;
    if let Err(e) = c.storage_pool_create(&pool).await {
        let _ = c.storage_pool_undefine(&pool).await;
        return Err(HookError::new(format!(
            "starting pool {name} in {dir}: {e} (build: {built:?})"
        )));
    }
    Ok(dir)
}

/// Empties and removes pool `name`. A pool that is gone is defined again at `dir`
/// first, so files it left behind are deleted too.
async fn drop_pool(c: &Client, name: &str, dir: Option<&String>) -> HookResult<()> {
    let pool = match c.storage_pool_lookup_by_name(name).await {
        Ok(p) => p,
        Err(e) if is_missing_pool(&e) => match dir {
            Some(dir) => c
                .storage_pool_define_xml(&pool_xml(name, dir))
                .await
                .map_err(hook_err)?,
            None => return Ok(()),
        },
        Err(e) => return Err(hook_err(e)),
    };
    // Started if it was not (an error here means it already runs).
    let _ = c.storage_pool_create(&pool).await;
    c.storage_pool_refresh(&pool).await.map_err(hook_err)?;
    for v in c
        .storage_pool_list_all_volumes(&pool)
        .await
        .map_err(hook_err)?
    {
        c.storage_vol_delete(&v, STORAGE_VOL_DELETE_NORMAL)
            .await
            .map_err(|e| HookError::new(format!("volume {} of pool {name}: {e}", v.name)))?;
    }
    c.storage_pool_destroy(&pool).await.map_err(hook_err)?;
    c.storage_pool_delete(&pool).await.map_err(hook_err)?;
    c.storage_pool_undefine(&pool).await.map_err(hook_err)
}

/// Removes the testbed pools of runs whose process is gone (killed before their
/// teardown), once per host and process.
async fn sweep_stale_pools(c: &Client, host: &str, model: &str) {
    static SWEPT: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    if !SWEPT
        .lock()
        .expect("sweep lock poisoned")
        .get_or_insert_with(HashSet::new)
        .insert(host.to_owned())
    {
        return;
    }
    let prefix = format!("{model}{BED_POOL_INFIX}");
    let Ok(pools) = c.connect_list_all_storage_pools().await else {
        return;
    };
    for p in pools {
        let Some(pid) = p
            .name
            .strip_prefix(&prefix)
            .and_then(|r| r.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let dir = match c.storage_pool_get_xml_desc(&p).await {
            Ok(xml) => target_path(&xml),
            Err(_) => None,
        };
        let _ = drop_pool(c, &p.name, dir.as_ref()).await;
    }
}

/// Writes a new key to `key_file` and puts its public half in every
/// `authorized_keys` file under `marker`, replacing `old` when given. Returns the
/// line written.
fn install_key(
    dir: &Path,
    key_file: &Path,
    authorized_keys: &[PathBuf],
    marker: &str,
    old: Option<&str>,
) -> HookResult<String> {
    let (key, public) = generate_client_key(dir, KeyKind::Ed25519);
    let line = format!(
        "{} {marker}",
        public
            .to_openssh()
            .map_err(hook_err)?
            .split(' ')
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for ak in authorized_keys {
        let add = line.clone();
        edit_authorized_keys(ak, move |mut lines| {
            if let Some(old) = old {
                lines.retain(|l| l != old);
            }
            lines.push(add);
            lines
        })
        .map_err(hook_err)?;
    }
    std::fs::rename(&key, key_file).map_err(hook_err)?;
    Ok(line)
}

/// The testbed's own keys, one per host, authorised on the hosts under a marker;
/// every key is taken out again when this is dropped.
struct Creds {
    authorized_keys: Vec<PathBuf>,
    /// The hosts' own known_hosts files, concatenated into each host's
    /// `known_hosts_file`.
    originals: Vec<PathBuf>,
    marker: String,
    /// By host name.
    hosts: HashMap<String, HostCreds>,
}

/// The testbed's credentials for one host, in a directory of their own.
struct HostCreds {
    dir: PathBuf,
    key_file: PathBuf,
    known_hosts_file: PathBuf,
    /// How known_hosts names the host: `address`, or `[address]:port` off port 22.
    pattern: String,
    /// The `authorized_keys` line of the key in `key_file`.
    line: Mutex<String>,
}

impl HostCreds {
    /// Where the key file waits while the credentials are "not mounted".
    fn key_aside(&self) -> PathBuf {
        self.key_file.with_extension("removed")
    }
}

impl Creds {
    /// Writes `host`'s key file and known_hosts file into `dir` and authorises the key.
    fn install(&self, dir: &Path, host: &HostConfig) -> HookResult<HostCreds> {
        std::fs::create_dir_all(dir).map_err(hook_err)?;
        let key_file = dir.join("id_ed25519");
        let known_hosts_file = dir.join("known_hosts");
        write_known_hosts(&self.originals, &known_hosts_file)?;
        let line = install_key(dir, &key_file, &self.authorized_keys, &self.marker, None)?;
        Ok(HostCreds {
            dir: dir.to_owned(),
            key_file,
            known_hosts_file,
            pattern: if host.port == 22 {
                host.address.clone()
            } else {
                format!("[{}]:{}", host.address, host.port)
            },
            line: Mutex::new(line),
        })
    }

    fn host(&self, location: &str) -> HookResult<&HostCreds> {
        self.hosts
            .get(location)
            .ok_or_else(|| HookError::new(format!("no testbed credentials for {location}")))
    }

    fn rotate(&self, location: &str) -> HookResult<()> {
        let h = self.host(location)?;
        let mut line = h.line.lock().expect("credential lock poisoned");
        let new = install_key(
            &h.dir,
            &h.key_file,
            &self.authorized_keys,
            &self.marker,
            Some(&line),
        )?;
        *line = new;
        // The host keys stay; the known_hosts file is written anew, so a dial
        // that cached it would not notice.
        write_known_hosts(&self.originals, &h.known_hosts_file)
    }

    /// Breaks access to `location` as `how` says, installing nothing in its place.
    fn break_access(&self, location: &str, how: AccessBreak) -> HookResult<()> {
        let h = self.host(location)?;
        match how {
            AccessBreak::Revoke => {
                let line = h.line.lock().expect("credential lock poisoned").clone();
                for ak in &self.authorized_keys {
                    let line = line.clone();
                    edit_authorized_keys(ak, move |mut lines| {
                        lines.retain(|l| *l != line);
                        lines
                    })
                    .map_err(hook_err)?;
                }
            }
            AccessBreak::ForeignHostKey => {
                let (key, public) = generate_client_key(&h.dir, KeyKind::Ed25519);
                let _ = std::fs::remove_file(&key);
                let foreign = public.to_openssh().map_err(hook_err)?;
                let foreign: Vec<&str> = foreign.split(' ').take(2).collect();
                replace_file(
                    &h.known_hosts_file,
                    format!("{} {}\n", h.pattern, foreign.join(" ")).as_bytes(),
                )?;
            }
            AccessBreak::RemoveCredentials => {
                if h.key_file.exists() {
                    std::fs::rename(&h.key_file, h.key_aside()).map_err(hook_err)?;
                }
            }
        }
        Ok(())
    }

    /// Undoes every break at `location`: the key file back, its line back in
    /// `authorized_keys`, the known_hosts file written from the hosts' own again.
    fn restore_access(&self, location: &str) -> HookResult<()> {
        let h = self.host(location)?;
        let aside = h.key_aside();
        if aside.exists() {
            if h.key_file.exists() {
                // Rotated while removed: the new key file stands.
                std::fs::remove_file(&aside).map_err(hook_err)?;
            } else {
                std::fs::rename(&aside, &h.key_file).map_err(hook_err)?;
            }
        }
        let line = h.line.lock().expect("credential lock poisoned").clone();
        for ak in &self.authorized_keys {
            let line = line.clone();
            edit_authorized_keys(ak, move |mut lines| {
                if !lines.contains(&line) {
                    lines.push(line);
                }
                lines
            })
            .map_err(hook_err)?;
        }
        write_known_hosts(&self.originals, &h.known_hosts_file)
    }

    fn revoke(&self) {
        for ak in &self.authorized_keys {
            let marker = self.marker.clone();
            let _ = edit_authorized_keys(ak, move |mut lines| {
                lines.retain(|l| !l.ends_with(&format!(" {marker}")));
                lines
            });
        }
    }
}

impl Drop for Creds {
    fn drop(&mut self) {
        self.revoke();
    }
}

/// Writes `contents` to `path` through a file beside it and a rename, so a dial
/// reading `path` meanwhile sees the old file or the new one, never half of one.
fn replace_file(path: &Path, contents: &[u8]) -> HookResult<()> {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, contents).map_err(hook_err)?;
    std::fs::rename(&tmp, path).map_err(hook_err)
}

// ---------------------------------------------------------------------------
// The chaos layer.

/// One injection.
struct Injection {
    id: u64,
    location: Option<String>,
    trigger: Trigger,
    kind: FaultKind,
    /// For `Nth`: the call count per location when injected.
    base: HashMap<String, u64>,
    fired: bool,
    spent: bool,
}

/// One live connection the provider dialled.
struct Conn {
    location: String,
    killed: CancellationToken,
    hung: AtomicBool,
}

/// What the chaos layer decides for one call.
enum Action {
    Forward,
    Reply(RemoteError),
    Hang,
    Delay(Duration),
    Drop,
    LoseReply,
}

#[derive(Default)]
struct ChaosState {
    injections: Vec<Injection>,
    next_id: u64,
    calls: Vec<BackendCall>,
    counts: HashMap<String, u64>,
    dials: HashMap<String, u64>,
    reach: HashMap<String, Reachability>,
    conns: HashMap<u64, Arc<Conn>>,
    next_conn: u64,
    /// State control: the addresses a guest reports, by (location, name).
    addresses: HashMap<(String, String), Vec<IpAddr>>,
    /// State control: guests whose address lookup fails, by (location, name).
    lookup_fails: HashSet<(String, String)>,
    /// State control: boots held (no guest reports an address).
    hold_boot: bool,
    /// Capacity: the free bytes a location's pools report at most.
    free: HashMap<String, u64>,
}

/// What the chaos layer makes of a guest's address lookup.
enum AddressOverride {
    /// The host's answer goes through.
    None,
    /// The agent "is not connected".
    Fail,
    /// These addresses.
    Addresses(Vec<IpAddr>),
}

/// The fault table, the call log and the connections of one testbed.
#[derive(Default)]
struct Chaos {
    state: Mutex<ChaosState>,
    /// Sockets of the black-hole listener, held open and never answered.
    black_hole: tokio::sync::Mutex<Option<(u16, tokio::task::JoinHandle<()>)>>,
}

impl Drop for Chaos {
    fn drop(&mut self) {
        if let Some((_, task)) = self.black_hole.get_mut().take() {
            task.abort();
        }
        for c in self.state.get_mut().expect("chaos poisoned").conns.values() {
            c.killed.cancel();
        }
    }
}

fn action_for(kind: &FaultKind, procedure: &str) -> Action {
    match kind {
        FaultKind::Hang => Action::Hang,
        FaultKind::Delay(d) => Action::Delay(*d),
        FaultKind::Drop => Action::Drop,
        FaultKind::LostReply => Action::LoseReply,
        reply => {
            let e = crate::injected::libvirt_error(reply, procedure)
                .expect("a fault kind that answers");
            Action::Reply(RemoteError::new(
                ErrorCode::from_raw(e.code),
                ErrorDomain::from_raw(e.domain),
                e.message,
            ))
        }
    }
}

impl Chaos {
    fn address_override(&self, location: &str, name: &str) -> AddressOverride {
        let s = self.state.lock().expect("chaos poisoned");
        let key = (location.to_owned(), name.to_owned());
        if s.hold_boot || s.lookup_fails.contains(&key) {
            AddressOverride::Fail
        } else if let Some(a) = s.addresses.get(&key) {
            AddressOverride::Addresses(a.clone())
        } else {
            AddressOverride::None
        }
    }

    fn free(&self, location: &str) -> Option<u64> {
        self.state
            .lock()
            .expect("chaos poisoned")
            .free
            .get(location)
            .copied()
    }

    /// Records one call and decides its fate.
    fn on_call(&self, conn: u64, location: &str, procedure: &str) -> Action {
        let mut s = self.state.lock().expect("chaos poisoned");
        s.calls.push(BackendCall {
            location: location.to_owned(),
            name: procedure.to_owned(),
            connection: conn,
        });
        let count = {
            let c = s.counts.entry(location.to_owned()).or_default();
            *c += 1;
            *c
        };
        for inj in s.injections.iter_mut() {
            if inj.spent || inj.location.as_deref().is_some_and(|l| l != location) {
                continue;
            }
            let hit = match &inj.trigger {
                Trigger::Nth(k) => count == inj.base.get(location).copied().unwrap_or(0) + k,
                Trigger::Named(n) => n == procedure,
                Trigger::Always => true,
            };
            if !hit {
                continue;
            }
            inj.fired = true;
            if !matches!(inj.trigger, Trigger::Always) {
                inj.spent = true;
            }
            return action_for(&inj.kind, procedure);
        }
        Action::Forward
    }

    fn register(&self, location: &str) -> (u64, Arc<Conn>) {
        let mut s = self.state.lock().expect("chaos poisoned");
        s.next_conn += 1;
        let id = s.next_conn;
        let conn = Arc::new(Conn {
            location: location.to_owned(),
            killed: CancellationToken::new(),
            hung: AtomicBool::new(false),
        });
        s.conns.insert(id, conn.clone());
        (id, conn)
    }

    fn forget(&self, id: u64) {
        self.state.lock().expect("chaos poisoned").conns.remove(&id);
    }

    fn kill(&self, pick: impl Fn(&Conn) -> bool) {
        let s = self.state.lock().expect("chaos poisoned");
        for c in s.conns.values() {
            if pick(c) {
                c.killed.cancel();
            }
        }
    }

    async fn black_hole_port(&self) -> io::Result<u16> {
        let mut bh = self.black_hole.lock().await;
        if let Some((port, _)) = &*bh {
            return Ok(*port);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                held.push(sock);
            }
        });
        *bh = Some((port, task));
        Ok(port)
    }
}

/// Boots started at once on the hosts, at most (software emulation on a small
/// machine), and how long a started boot holds its turn when nothing gives it back
/// earlier: the test guest reports its address through the agent some 20-25 s
/// after the start.
const BOOTS_AT_ONCE: usize = 2;
const BOOT_TURN_MAX: Duration = Duration::from_secs(40);

/// The calls that start a guest.
const BOOT_CALLS: [&str; 2] = ["DomainCreateWithFlags", "DomainCreate"];

/// The calls after which a guest no longer boots.
const STOP_CALLS: [&str; 3] = ["DomainDestroy", "DomainDestroyFlags", "DomainUndefineFlags"];

/// The boot turns held, by domain name: dropping the sender gives the turn back.
static TURNS_HELD: Mutex<Option<HashMap<String, tokio::sync::oneshot::Sender<()>>>> =
    Mutex::new(None);

/// Waits for a boot turn of the whole process for guest `name`; the turn is given
/// back by [`end_boot_turn`] or after [`BOOT_TURN_MAX`].
async fn boot_turn(name: String) {
    static TURNS: std::sync::LazyLock<Arc<tokio::sync::Semaphore>> =
        std::sync::LazyLock::new(|| Arc::new(tokio::sync::Semaphore::new(BOOTS_AT_ONCE)));
    if let Ok(permit) = TURNS.clone().acquire_owned().await {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        // A second start of the same guest replaces (and so ends) the first turn.
        TURNS_HELD
            .lock()
            .expect("boot turns poisoned")
            .get_or_insert_with(HashMap::new)
            .insert(name, tx);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(BOOT_TURN_MAX, rx).await;
            drop(permit);
        });
    }
}

/// Gives back the boot turn guest `name` holds, if any.
fn end_boot_turn(name: &str) {
    if let Some(held) = TURNS_HELD.lock().expect("boot turns poisoned").as_mut() {
        held.remove(name);
    }
}

/// The domain a call's arguments start with (every domain call's do).
fn domain_of(body: &[u8]) -> Option<String> {
    Domain::decode(&mut Reader::new(body)).ok().map(|d| d.name)
}

/// Bytes before a packet's payload: the length word and the header.
const HEADER_LEN: usize = 28;

/// A call whose reply the chaos layer looks at.
enum Watch {
    /// A guest's start: a failed one gives its boot turn back.
    Boot(String),
    /// A guest's address lookup, with its source.
    Addresses(String, u32),
    /// A pool's sizes.
    PoolInfo,
    /// A call the host performs but whose reply is lost: the connection drops when it
    /// arrives (a boot call among them gives its boot turn back).
    LoseReply(Option<String>),
}

/// The name kvm2's spans give procedure `number` (`DomainDefineXML`), from the
/// procedure table `libvirt-fake` shares with kvm2's call names.
fn procedure_name(number: i32) -> String {
    libvirt_fake::Procedure::from_number(number)
        .map(|p| p.name().to_owned())
        .unwrap_or_else(|| format!("Procedure{number}"))
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    l.local_addr().map(|a| a.port())
}

/// kvm2's production [`SshDialer`], with every stream wrapped by the chaos layer and
/// reachability applied as a real TCP behaviour.
struct ChaosDialer {
    ssh: SshDialer,
    chaos: Arc<Chaos>,
}

impl Dialer for ChaosDialer {
    fn dial<'a>(&'a self, host: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
        Box::pin(async move {
            let reach = {
                let mut s = self.chaos.state.lock().expect("chaos poisoned");
                *s.dials.entry(host.name.clone()).or_default() += 1;
                s.reach.get(&host.name).copied().unwrap_or(Reachability::Up)
            };
            let mut target = host.clone();
            match reach {
                Reachability::Up => {}
                Reachability::Refused => {
                    target.address = "127.0.0.1".into();
                    target.port = closed_port().map_err(|e| DialError::Other(e.to_string()))?;
                }
                Reachability::BlackHole => {
                    target.address = "127.0.0.1".into();
                    target.port = self
                        .chaos
                        .black_hole_port()
                        .await
                        .map_err(|e| DialError::Other(e.to_string()))?;
                }
            }
            let inner = self.ssh.dial(&target).await?;
            let (id, conn) = self.chaos.register(&host.name);
            let killed = Box::pin(conn.killed.clone().cancelled_owned());
            Ok(Box::new(ChaosStream {
                inner,
                id,
                conn,
                chaos: self.chaos.clone(),
                killed,
                wbuf: BytesMut::new(),
                out: BytesMut::new(),
                delayed: BytesMut::new(),
                delay: None,
                rraw: BytesMut::new(),
                rq: BytesMut::new(),
                read_waker: None,
                watch: HashMap::new(),
            }) as Stream)
        })
    }
}

/// The provider's end of a connection, framed both ways so calls can be answered,
/// held, delayed or dropped without a partial packet ever reaching either side.
struct ChaosStream {
    inner: Stream,
    id: u64,
    conn: Arc<Conn>,
    chaos: Arc<Chaos>,
    killed: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
    /// Bytes from the provider not yet framed.
    wbuf: BytesMut,
    /// Framed bytes for the host.
    out: BytesMut,
    /// A delayed call, sent when `delay` ends.
    delayed: BytesMut,
    /// What holds `delayed` back: an injected delay or the boot gate.
    delay: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Bytes from the host not yet framed.
    rraw: BytesMut,
    /// Whole packets for the provider (the host's and injected replies).
    rq: BytesMut,
    read_waker: Option<Waker>,
    /// Calls whose replies the layer looks at or rewrites, by serial.
    watch: HashMap<u32, Watch>,
}

impl Drop for ChaosStream {
    fn drop(&mut self) {
        self.chaos.forget(self.id);
    }
}

fn dropped() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "connection dropped")
}

impl ChaosStream {
    /// Passes one whole packet from the host to the provider, rewritten when it
    /// answers a watched call and state control or capacity says so.
    fn on_reply(&mut self, frame: &[u8]) {
        let header = Header::decode(frame).ok().flatten();
        let watched = header
            .filter(|h| h.program == REMOTE_PROGRAM && h.kind == MessageType::Reply)
            .and_then(|h| self.watch.remove(&h.serial).map(|w| (h, w)));
        let Some((h, w)) = watched else {
            self.rq.extend_from_slice(frame);
            return;
        };
        let body = frame.get(HEADER_LEN..).unwrap_or_default();
        let ok = h.status == Status::Ok;
        let location = self.conn.location.clone();
        let rewritten = match w {
            Watch::LoseReply(guest) => {
                if let Some(g) = guest {
                    end_boot_turn(&g);
                }
                self.conn.killed.cancel();
                return;
            }
            Watch::Boot(guest) => {
                if !ok {
                    end_boot_turn(&guest);
                }
                false
            }
            Watch::PoolInfo => match (ok, self.chaos.free(&location)) {
                (true, Some(free)) => match decode_exact::<StoragePoolGetInfoRet>(body) {
                    Ok(mut info) => {
                        info.available = info.available.min(free);
                        encode_packet(&mut self.rq, &h, &info).is_ok()
                    }
                    Err(_) => false,
                },
                _ => false,
            },
            Watch::Addresses(guest, source) => {
                let agent = source == DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT;
                // The host's own answer ends the guest's boot turn.
                if ok
                    && agent
                    && decode_exact::<DomainInterfaceAddressesRet>(body)
                        .is_ok_and(|r| crate::state::first_ipv4(&r.ifaces).is_some())
                {
                    end_boot_turn(&guest);
                }
                match self.chaos.address_override(&location, &guest) {
                    AddressOverride::None => false,
                    AddressOverride::Fail => {
                        let err = RemoteError::new(
                            ErrorCode::AgentUnresponsive,
                            ErrorDomain::Qemu,
                            "Guest agent is not responding: QEMU guest agent is not connected",
                        );
                        let eh = Header {
                            status: Status::Error,
                            ..h
                        };
                        encode_packet(&mut self.rq, &eh, &err).is_ok()
                    }
                    AddressOverride::Addresses(list) => {
                        let ret = DomainInterfaceAddressesRet {
                            ifaces: if agent { reported(&list) } else { Vec::new() },
                        };
                        let oh = Header {
                            status: Status::Ok,
                            ..h
                        };
                        encode_packet(&mut self.rq, &oh, &ret).is_ok()
                    }
                }
            }
        };
        if !rewritten {
            self.rq.extend_from_slice(frame);
        }
    }

    fn dead(&mut self, cx: &mut Context<'_>) -> bool {
        self.killed.as_mut().poll(cx).is_ready()
    }

    /// Frames what the provider wrote and decides each call's fate, until a delay
    /// holds the rest back. Errs when a call drops the connection.
    fn process(&mut self) -> io::Result<()> {
        while self.delay.is_none() {
            let len = match frame_len(&self.wbuf) {
                Ok(Some(n)) if self.wbuf.len() >= n => n,
                Ok(_) => return Ok(()),
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            };
            let frame = self.wbuf.split_to(len);
            let header = Header::decode(&frame)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            let Some(h) =
                header.filter(|h| h.program == REMOTE_PROGRAM && h.kind == MessageType::Call)
            else {
                self.out.extend_from_slice(&frame);
                continue;
            };
            let name = procedure_name(h.procedure);
            let body = frame.get(HEADER_LEN..).unwrap_or_default();
            let action = self.chaos.on_call(self.id, &self.conn.location, &name);
            // A boot call that goes through waits for its turn and its reply is watched,
            // both by the guest's name.
            let boot = matches!(action, Action::Forward) && BOOT_CALLS.contains(&name.as_str());
            let boot_guest = if boot { domain_of(body) } else { None };
            if matches!(action, Action::Forward) {
                let watch = match name.as_str() {
                    n if BOOT_CALLS.contains(&n) => boot_guest.clone().map(Watch::Boot),
                    n if STOP_CALLS.contains(&n) => {
                        if let Some(d) = domain_of(body) {
                            end_boot_turn(&d);
                        }
                        None
                    }
                    "DomainInterfaceAddresses" => {
                        decode_exact::<DomainInterfaceAddressesArgs>(body)
                            .ok()
                            .map(|a| Watch::Addresses(a.dom.name, a.source))
                    }
                    "StoragePoolGetInfo" => Some(Watch::PoolInfo),
                    _ => None,
                };
                if let Some(w) = watch {
                    self.watch.insert(h.serial, w);
                }
            }
            match action {
                Action::Forward if boot => {
                    self.delayed.extend_from_slice(&frame);
                    self.delay = Some(Box::pin(boot_turn(boot_guest.unwrap_or_default())));
                }
                Action::Forward => self.out.extend_from_slice(&frame),
                Action::Reply(err) => {
                    encode_error_reply(&mut self.rq, &h, &err)
                        .map_err(|e| io::Error::other(e.to_string()))?;
                    if let Some(w) = self.read_waker.take() {
                        w.wake();
                    }
                }
                Action::Hang => self.conn.hung.store(true, Ordering::SeqCst),
                Action::Delay(d) => {
                    self.delayed.extend_from_slice(&frame);
                    self.delay = Some(Box::pin(tokio::time::sleep(d)));
                }
                Action::Drop => {
                    self.conn.killed.cancel();
                    return Err(dropped());
                }
                Action::LoseReply => {
                    let guest = BOOT_CALLS
                        .contains(&name.as_str())
                        .then(|| domain_of(body))
                        .flatten();
                    self.watch.insert(h.serial, Watch::LoseReply(guest));
                    self.out.extend_from_slice(&frame);
                }
            }
        }
        self.pass_keepalives()
    }

    /// While a call is held, the keepalive packets written after it still go out
    /// (a client whose pings went unanswered would drop the connection); the other
    /// packets keep their order behind the held call.
    fn pass_keepalives(&mut self) -> io::Result<()> {
        let mut rest = BytesMut::new();
        let mut at = 0;
        loop {
            let len = match frame_len(&self.wbuf[at..]) {
                Ok(Some(n)) if self.wbuf.len() - at >= n => n,
                Ok(_) => break,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            };
            let frame = &self.wbuf[at..at + len];
            let keepalive = Header::decode(frame)
                .ok()
                .flatten()
                .is_some_and(|h| h.program == KEEPALIVE_PROGRAM);
            if keepalive {
                self.out.extend_from_slice(frame);
            } else {
                rest.extend_from_slice(frame);
            }
            at += len;
        }
        rest.extend_from_slice(&self.wbuf[at..]);
        self.wbuf = rest;
        Ok(())
    }

    /// Writes everything framed to the host, then moves a finished delay's call
    /// out. Pending while the host does not take bytes or a delay runs.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            while !self.out.is_empty() {
                let out = self.out.clone();
                match Pin::new(&mut self.inner).poll_write(cx, &out) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(dropped())),
                    Poll::Ready(Ok(n)) => {
                        let _ = self.out.split_to(n);
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            }
            let Some(sleep) = self.delay.as_mut() else {
                return Poll::Ready(Ok(()));
            };
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.delay = None;
            let d = self.delayed.split();
            self.out.extend_from_slice(&d);
            self.process()?;
        }
    }
}

/// Bytes the chaos layer buffers from the provider before it pushes back.
const WRITE_HIGH_WATER: usize = 4 << 20;

impl AsyncRead for ChaosStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        this.read_waker = Some(cx.waker().clone());
        if this.dead(cx) {
            return Poll::Ready(Err(dropped()));
        }
        // The reader is always polled: it moves held calls on when their delay ends.
        if let Poll::Ready(Err(e)) = this.drain(cx) {
            return Poll::Ready(Err(e));
        }
        loop {
            if !this.rq.is_empty() {
                let n = this.rq.len().min(buf.remaining());
                buf.put_slice(&this.rq.split_to(n));
                return Poll::Ready(Ok(()));
            }
            let mut tmp = [0u8; 16 * 1024];
            let mut rb = ReadBuf::new(&mut tmp);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {
                    this.rraw.extend_from_slice(rb.filled());
                    loop {
                        match frame_len(&this.rraw) {
                            Ok(Some(n)) if this.rraw.len() >= n => {
                                let f = this.rraw.split_to(n);
                                this.on_reply(&f);
                            }
                            Ok(_) => break,
                            Err(e) => {
                                return Poll::Ready(Err(io::Error::new(
                                    io::ErrorKind::InvalidData,
                                    e.to_string(),
                                )));
                            }
                        }
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl AsyncWrite for ChaosStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.dead(cx) {
            return Poll::Ready(Err(dropped()));
        }
        // Accepted while a call is held (keepalives must get through), pushed back
        // only when much is waiting.
        if this.out.len() + this.wbuf.len() + this.delayed.len() >= WRITE_HIGH_WATER {
            if let Poll::Ready(Err(e)) = this.drain(cx) {
                return Poll::Ready(Err(e));
            }
            if this.out.len() + this.wbuf.len() + this.delayed.len() >= WRITE_HIGH_WATER {
                return Poll::Pending;
            }
        }
        this.wbuf.extend_from_slice(buf);
        if let Err(e) = this.process() {
            return Poll::Ready(Err(e));
        }
        // Start sending at once; the rest goes with the next write or flush.
        if let Poll::Ready(Err(e)) = this.drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.dead(cx) {
            return Poll::Ready(Err(dropped()));
        }
        match this.drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            // A held call goes out when its delay ends (the reader moves it on).
            Poll::Pending if !this.out.is_empty() => Poll::Pending,
            _ => Pin::new(&mut this.inner).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------------------
// The testbed.

struct RealBed {
    /// The configuration as the operator wrote it (the side connections use it).
    operator: Config,
    /// The provider's configuration (the testbed's own credentials when rotating).
    config: Config,
    chaos: Arc<Chaos>,
    dialer: Arc<ChaosDialer>,
    verbosity: Verbosity,
    provider: Kvm2,
    /// An out-of-band kvm2 for plants that must be complete instances.
    oob: Kvm2,
    side: tokio::sync::Mutex<HashMap<String, Client>>,
    /// The directory of the testbed's pool on each host.
    pools: HashMap<String, String>,
    creds: Option<Creds>,
    /// Dropped last: the credential files.
    _scratch: ScratchDir,
}

impl Drop for RealBed {
    fn drop(&mut self) {
        self.chaos.kill(|_| true);
        // `creds` takes its keys out of `authorized_keys` when dropped.
    }
}

impl RealBed {
    fn host(&self, location: &str) -> HookResult<&HostConfig> {
        self.operator
            .hosts
            .iter()
            .find(|h| h.name == location)
            .ok_or_else(|| HookError::new(format!("no location {location}")))
    }

    /// The testbed's own libvirt connection to `location`, dialled with the
    /// operator's credentials (redialled when it went away).
    async fn side(&self, location: &str) -> HookResult<Client> {
        let host = self.host(location)?.clone();
        let mut side = self.side.lock().await;
        if let Some(c) = side.get(location)
            && c.connect_get_lib_version().await.is_ok()
        {
            return Ok(c.clone());
        }
        let client = dial_side(&host).await?;
        side.insert(location.to_owned(), client.clone());
        Ok(client)
    }

    /// The testbed's pool at the connection's host; `None` once it was removed.
    async fn pool(&self, c: &Client) -> HookResult<Option<StoragePool>> {
        match c.storage_pool_lookup_by_name(&self.config.pool).await {
            Ok(p) => Ok(Some(p)),
            Err(e) if is_missing_pool(&e) => Ok(None),
            Err(e) => Err(hook_err(e)),
        }
    }

    async fn volumes(&self, c: &Client) -> HookResult<Vec<String>> {
        let Some(pool) = self.pool(c).await? else {
            return Ok(Vec::new());
        };
        c.storage_pool_refresh(&pool).await.map_err(hook_err)?;
        let vols = c
            .storage_pool_list_all_volumes(&pool)
            .await
            .map_err(hook_err)?;
        Ok(vols.into_iter().map(|v| v.name).collect())
    }

    async fn delete_volume(&self, c: &Client, name: &str) -> HookResult<()> {
        let Some(pool) = self.pool(c).await? else {
            return Ok(());
        };
        if let Ok(v) = c.storage_vol_lookup_by_name(&pool, name).await {
            c.storage_vol_delete(&v, STORAGE_VOL_DELETE_NORMAL)
                .await
                .map_err(hook_err)?;
        }
        Ok(())
    }

    async fn destroy_and_undefine(&self, c: &Client, name: &str) -> HookResult<()> {
        if let Ok(d) = c.domain_lookup_by_name(name).await {
            let _ = c.domain_destroy(&d).await;
            c.domain_undefine_flags(&d, DOMAIN_UNDEFINE_NVRAM)
                .await
                .map_err(hook_err)?;
        }
        Ok(())
    }

    /// The files in the host's NVRAM directory, through [`NVRAM_POOL`].
    async fn nvram_files(&self, c: &Client) -> HookResult<Vec<String>> {
        let pool = match c.storage_pool_lookup_by_name(NVRAM_POOL).await {
            Ok(p) => p,
            Err(e) if is_missing_pool(&e) => {
                match c
                    .storage_pool_create_xml(&pool_xml(NVRAM_POOL, NVRAM_DIR))
                    .await
                {
                    Ok(p) => p,
                    // No directory yet: no guest with NVRAM was ever defined there.
                    Err(made)
                        if made
                            .as_remote()
                            .is_some_and(|r| r.code == ErrorCode::SystemError) =>
                    {
                        return Ok(Vec::new());
                    }
                    // Made at once by another testbed.
                    Err(made) => c
                        .storage_pool_lookup_by_name(NVRAM_POOL)
                        .await
                        .map_err(|_| {
                            HookError::new(format!("listing {NVRAM_DIR} through a pool: {made}"))
                        })?,
                }
            }
            Err(e) => return Err(hook_err(e)),
        };
        c.storage_pool_refresh(&pool).await.map_err(hook_err)?;
        Ok(c.storage_pool_list_all_volumes(&pool)
            .await
            .map_err(hook_err)?
            .into_iter()
            .map(|v| v.name)
            .collect())
    }
}

/// The guest agent's answer for a guest with addresses `list`: loopback, then
/// `eth0` with the addresses.
fn reported(list: &[IpAddr]) -> Vec<DomainInterface> {
    let addr = |a: &IpAddr| DomainIpAddr {
        kind: if a.is_ipv4() {
            IP_ADDR_TYPE_IPV4
        } else {
            IP_ADDR_TYPE_IPV6
        },
        addr: a.to_string(),
        prefix: if a.is_ipv4() { 24 } else { 64 },
    };
    vec![
        DomainInterface {
            name: "lo".into(),
            hwaddr: Some("00:00:00:00:00:00".into()),
            addrs: vec![addr(&IpAddr::V4(Ipv4Addr::LOCALHOST))],
        },
        DomainInterface {
            name: "eth0".into(),
            hwaddr: Some("52:54:00:00:00:01".into()),
            addrs: list.iter().map(addr).collect(),
        },
    ]
}

/// A minimal domain for plants: no disk, so it starts at once and boots nothing.
fn plant_xml(name: &str, domain_type: &str, mark: Option<(&str, &str, &str)>) -> String {
    let metadata = mark
        .map(|(tag, uid, created)| {
            format!(
                "<metadata><kvm2:instance xmlns:kvm2='{}' managed='{tag}' uid='{uid}' createdAt='{created}'/></metadata>",
                crate::config::DEFAULT_NAMESPACE
            )
        })
        .unwrap_or_default();
    format!(
        "<domain type='{domain_type}'><name>{name}</name>{metadata}<memory unit='MiB'>32</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os><devices><channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices></domain>"
    )
}

impl Testbed for RealBed {
    fn provider(&self) -> Arc<dyn Provider> {
        Arc::new(self.provider.clone())
    }

    fn restart(&self) -> HookResult<Arc<dyn Provider>> {
        Ok(Arc::new(Kvm2::with_verbosity(
            self.config.clone(),
            self.dialer.clone(),
            self.verbosity.clone(),
        )))
    }

    fn request(&self, name: &str, tag: &str, location: &Location) -> conformance::CreateRequest {
        conformance::CreateRequest {
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            tag: tag.to_owned(),
            placement: location.placement.clone(),
            image: None,
            cloud_init: CloudInit::new(user_data(name)),
        }
    }

    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        crate::id::format_id(location, name)
    }

    fn location_of(&self, id: &ProviderId) -> Option<String> {
        crate::id::parse_id(id).map(|p| p.host)
    }

    fn malformed_ids(&self) -> Vec<String> {
        crate::id::malformed_examples(&self.config.hosts[0].name)
    }

    fn unconfigured_id(&self, name: &str) -> ProviderId {
        crate::id::unconfigured(name)
    }

    fn inventory(&self) -> Option<&dyn Inventory> {
        Some(self)
    }
    fn planting(&self) -> Option<&dyn Planting> {
        Some(self)
    }
    fn faults(&self) -> Option<&dyn Faults> {
        Some(self)
    }
    fn state_control(&self) -> Option<&dyn StateControl> {
        Some(self)
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        Some(self)
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        self.creds.as_ref().map(|_| self as &dyn Rotation)
    }
    fn observation(&self) -> Option<&dyn Observation> {
        Some(self)
    }

    fn teardown(&self) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async move {
            self.chaos
                .state
                .lock()
                .expect("chaos poisoned")
                .injections
                .clear();
            self.chaos.kill(|_| true);
            let mut failed = Vec::new();
            for h in &self.operator.hosts {
                let dropped = match self.side(&h.name).await {
                    Ok(c) => drop_pool(&c, &self.config.pool, self.pools.get(&h.name)).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = dropped {
                    failed.push(format!("pool {} on {}: {e}", self.config.pool, h.name));
                }
            }
            for (_, c) in self.side.lock().await.drain() {
                let _ = c.connect_close().await;
            }
            if failed.is_empty() {
                Ok(())
            } else {
                Err(HookError::new(failed.join("; ")))
            }
        })
    }
}

impl StateControl for RealBed {
    fn set_power<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        power: Power,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let c = self.side(location).await?;
            let dom = c.domain_lookup_by_name(name).await.map_err(hook_err)?;
            let (state, _) = c.domain_get_state(&dom).await.map_err(hook_err)?;
            let r = match (power, state) {
                (Power::Paused, DomainState::Paused) => Ok(()),
                (Power::Paused, _) => c.domain_suspend(&dom).await,
                (Power::Stopped, DomainState::Shutoff) => Ok(()),
                (Power::Stopped, _) => c.domain_destroy(&dom).await,
                (Power::Running, DomainState::Paused) => c.domain_resume(&dom).await,
                (Power::Running, DomainState::Shutoff) => c.domain_create(&dom).await,
                (Power::Running, _) => Ok(()),
            };
            r.map_err(|e| HookError::new(format!("{name} to {power:?}: {e}")))
        })
    }

    fn set_addresses<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        addrs: Vec<IpAddr>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            self.host(location)?;
            self.chaos
                .state
                .lock()
                .expect("chaos poisoned")
                .addresses
                .insert((location.to_owned(), name.to_owned()), addrs);
            Ok(())
        })
    }

    fn fail_address_lookup<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        fail: bool,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            self.host(location)?;
            let key = (location.to_owned(), name.to_owned());
            let mut s = self.chaos.state.lock().expect("chaos poisoned");
            if fail {
                s.lookup_fails.insert(key);
            } else {
                s.lookup_fails.remove(&key);
            }
            Ok(())
        })
    }

    fn hold_boot(&self, hold: bool) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async move {
            self.chaos.state.lock().expect("chaos poisoned").hold_boot = hold;
            Ok(())
        })
    }
}

impl Capacity for RealBed {
    fn set_free<'a>(
        &'a self,
        location: &'a str,
        bytes: Option<u64>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            self.host(location)?;
            let mut s = self.chaos.state.lock().expect("chaos poisoned");
            match bytes {
                Some(b) => s.free.insert(location.to_owned(), b),
                None => s.free.remove(location),
            };
            Ok(())
        })
    }
}

impl Rotation for RealBed {
    fn rotate<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            self.host(location)?;
            let creds = self
                .creds
                .as_ref()
                .ok_or_else(|| HookError::new("no testbed credentials"))?;
            creds.rotate(location)
        })
    }

    fn break_access<'a>(
        &'a self,
        location: &'a str,
        how: AccessBreak,
    ) -> BoxFuture<'a, HookResult<bool>> {
        Box::pin(async move {
            self.host(location)?;
            let Some(creds) = &self.creds else {
                return Ok(false);
            };
            creds.break_access(location, how)?;
            Ok(true)
        })
    }

    fn restore_access<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            self.host(location)?;
            match &self.creds {
                Some(creds) => creds.restore_access(location),
                None => Ok(()),
            }
        })
    }
}

impl Inventory for RealBed {
    fn resources<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<Vec<Resource>>> {
        Box::pin(async move {
            let c = self.side(location).await?;
            let mut out: Vec<Resource> = c
                .connect_list_all_domains(0)
                .await
                .map_err(hook_err)?
                .into_iter()
                .map(|d| Resource {
                    instance: Some(d.name.clone()),
                    kind: "domain".into(),
                    primary: true,
                    name: d.name,
                })
                .collect();
            let images: Vec<(String, String)> = self
                .operator
                .images
                .iter()
                .map(|i| (image_volume(i), image_marker(i)))
                .collect();
            for name in self.volumes(&c).await? {
                let (instance, kind) = match volume_owner(&name) {
                    Some((owner, kind)) => (Some(owner.to_owned()), kind),
                    None if images.iter().any(|(v, _)| *v == name) => (None, "image"),
                    None if images.iter().any(|(_, m)| *m == name) => (None, "marker"),
                    None => (None, "volume"),
                };
                out.push(Resource {
                    instance,
                    kind: kind.into(),
                    primary: false,
                    name,
                });
            }
            for file in self.nvram_files(&c).await? {
                let owner = file.strip_suffix("_VARS.fd").map(str::to_owned);
                out.push(Resource {
                    instance: owner,
                    kind: "nvram".into(),
                    primary: false,
                    name: format!("{NVRAM_DIR}/{file}"),
                });
            }
            out.sort();
            Ok(out)
        })
    }
}

impl Planting for RealBed {
    fn plant<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        what: Plant,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let c = self.side(location).await?;
            if let Plant::EmptyUid { tag } = &what {
                // A complete instance, booted with an address, whose mark then
                // loses its uid: made by a kvm2 of the fixture's own.
                let loc = Location {
                    name: location.to_owned(),
                    placement: self
                        .operator
                        .placement
                        .iter()
                        .find(|(_, h)| *h == location)
                        .map(|(z, _)| z.clone())
                        .ok_or_else(|| HookError::new(format!("no zone maps to {location}")))?,
                };
                let req = self.request(name, tag, &loc);
                let ctx =
                    Ctx::with_timeout(self.operator.timeouts.create + Duration::from_secs(60));
                self.oob
                    .create(&ctx, &req)
                    .await
                    .map_err(|e| HookError::new(format!("planting {name}: {}", e.chain())))?;
                let dom = c.domain_lookup_by_name(name).await.map_err(hook_err)?;
                let mark = Mark {
                    tag: tag.clone(),
                    uid: String::new(),
                    created_at: Some(SystemTime::now()),
                };
                // Live and persistent (1 | 2).
                c.domain_set_metadata(
                    &dom,
                    DOMAIN_METADATA_ELEMENT,
                    Some(&metadata_element(&mark)),
                    Some("kvm2"),
                    Some(&self.operator.namespace),
                    3,
                )
                .await
                .map_err(hook_err)?;
                return Ok(());
            }
            let now = format_time(SystemTime::now());
            let dt = self.operator.domain_type.as_str();
            let xml = match &what {
                Plant::Unmarked => plant_xml(name, dt, None),
                Plant::ForeignUid { tag, uid } => plant_xml(name, dt, Some((tag, uid, &now))),
                Plant::Unreadable { tag } => {
                    plant_xml(name, dt, Some((tag, "someone", "not-a-time")))
                }
                Plant::EmptyUid { .. } => unreachable!("handled above"),
            };
            let dom = c.domain_define_xml(&xml).await.map_err(hook_err)?;
            c.domain_create(&dom).await.map_err(hook_err)
        })
    }

    fn inspect<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, HookResult<Option<String>>> {
        Box::pin(async move {
            let c = self.side(location).await?;
            let vols: Vec<String> = self
                .volumes(&c)
                .await?
                .into_iter()
                .filter(|v| volume_owner(v).is_some_and(|(o, _)| o == name))
                .collect();
            let dom = match c.domain_lookup_by_name(name).await {
                Ok(d) => Some(d),
                Err(e) if e.as_remote().is_some_and(|r| r.code == ErrorCode::NoDomain) => None,
                Err(e) => return Err(hook_err(e)),
            };
            let Some(dom) = dom else {
                return Ok((!vols.is_empty()).then(|| format!("no domain, volumes {vols:?}")));
            };
            let state = c.domain_get_state(&dom).await.map_err(hook_err)?;
            let xml = c
                .domain_get_xml_desc(&dom, DOMAIN_XML_INACTIVE)
                .await
                .map_err(hook_err)?;
            let meta = c
                .domain_get_metadata(
                    &dom,
                    DOMAIN_METADATA_ELEMENT,
                    Some(&self.operator.namespace),
                    0,
                )
                .await
                .unwrap_or_default();
            Ok(Some(format!("{state:?} {meta} {xml} {vols:?}")))
        })
    }

    fn remove_part<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        part: Part,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let c = self.side(location).await?;
            match part {
                Part::Secondary => {
                    self.delete_volume(&c, &overlay_volume(name)).await?;
                    self.delete_volume(&c, &seed_volume(name)).await?;
                }
                Part::Primary => self.destroy_and_undefine(&c, name).await?,
                Part::Container => {
                    // The testbed's own pool: stopped and undefined; the files stay
                    // on disk until the testbed's teardown, as a lost pool's would.
                    if let Some(pool) = self.pool(&c).await? {
                        let _ = c.storage_pool_destroy(&pool).await;
                        c.storage_pool_undefine(&pool).await.map_err(hook_err)?;
                    }
                }
            }
            Ok(())
        })
    }

    fn remove<'a>(&'a self, location: &'a str, name: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let c = self.side(location).await?;
            self.destroy_and_undefine(&c, name).await?;
            self.delete_volume(&c, &overlay_volume(name)).await?;
            self.delete_volume(&c, &seed_volume(name)).await
        })
    }
}

impl Faults for RealBed {
    fn inject(&self, mut spec: FaultSpec) -> HookResult<FaultId> {
        if let Some(l) = &spec.location {
            self.host(l)?;
        }
        if let Trigger::Named(n) = &mut spec.trigger {
            // Accepts `DomainDefineXML` and `DOMAIN_DEFINE_XML` alike.
            let p = libvirt_fake::Procedure::from_name(n)
                .ok_or_else(|| HookError::new(format!("unknown procedure {n}")))?;
            *n = p.name().to_owned();
        }
        let mut s = self.chaos.state.lock().expect("chaos poisoned");
        s.next_id += 1;
        let id = s.next_id;
        let base = s.counts.clone();
        s.injections.push(Injection {
            id,
            location: spec.location,
            trigger: spec.trigger,
            kind: spec.kind,
            base,
            fired: false,
            spent: false,
        });
        Ok(FaultId(id))
    }

    fn fired(&self, id: FaultId) -> bool {
        self.chaos
            .state
            .lock()
            .expect("chaos poisoned")
            .injections
            .iter()
            .any(|i| i.id == id.0 && i.fired)
    }

    fn clear(&self) {
        // Spent, not forgotten: `fired` still answers for them.
        for i in &mut self.chaos.state.lock().expect("chaos poisoned").injections {
            i.spent = true;
        }
        // A held call answers only when its connection goes: release them.
        self.chaos.kill(|c| c.hung.load(Ordering::SeqCst));
    }

    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            self.host(location)?;
            self.chaos
                .state
                .lock()
                .expect("chaos poisoned")
                .reach
                .insert(location.to_owned(), r);
            if r != Reachability::Up {
                self.chaos.kill(|c| c.location == location);
            }
            Ok(())
        })
    }
}

impl Observation for RealBed {
    fn calls(&self) -> Vec<BackendCall> {
        self.chaos
            .state
            .lock()
            .expect("chaos poisoned")
            .calls
            .clone()
    }

    fn dials(&self, location: &str) -> u64 {
        self.chaos
            .state
            .lock()
            .expect("chaos poisoned")
            .dials
            .get(location)
            .copied()
            .unwrap_or(0)
    }

    fn set_verbosity(&self, v: Tier) {
        self.provider.set_verbosity(match v {
            Tier::V0 => 0,
            Tier::V1 => 1,
            Tier::V2 => 2,
        });
    }
}
