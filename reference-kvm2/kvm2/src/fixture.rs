//! `Kvm2Fixture`: the conformance fixture that runs kvm2 against two in-memory
//! libvirt hosts (`libvirt-fake`) served over the real remote protocol, reached
//! through kvm2's production [`SshDialer`] and an in-process SSH server per host
//! (`libvirt-ssh`'s `TestServer`) on loopback.
//!
//! Every testbed gets hosts of its own, each with its SSH server, a client key and
//! a known_hosts file in a temporary directory of the testbed. The hooks reach
//! below the provider: the fake's own API plants, removes and steers domains and
//! pools; faults are the fake's per-call injections; reachability is decided where
//! the dialer opens connections; observation is the fake's trace; rotation writes
//! a new client key and known_hosts file and revokes the old key on the server,
//! and the provider's next dial reads the new files. Access is broken the same
//! way: the server stops accepting the provider's key, presents a host key other
//! than its own, or the key file is moved aside.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use conformance::fixture::{
    AccessBreak, BackendCall, Capacity, FaultId, FaultKind, FaultSpec, Faults, Fixture, Hook,
    HookError, HookResult, Inventory, Location, Observation, Part, Plant, Planting, Power,
    Reachability, Resource, Rotation, StateControl, Testbed, Trigger, Verbosity as Tier,
};
use conformance::{BoxFuture, CloudInit, CreateRequest, Profile, Provider, ProviderId};
use libvirt_fake::{
    AddressSource, DialMode, DomainState, FakeConnection, FakeLibvirt, Fault, FaultHandle,
    FaultRule, Interface, Procedure, flags, reason,
};
use libvirt_ssh::server::{
    ChannelTarget, KeyKind, PublicKey, TestServer, TestServerOptions, generate_client_key,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::backend::Verbosity;
use crate::config::{Config, DomainType, Firmware, HostConfig, ImageConfig, Sizes, Timeouts};
use crate::dialer::{DialError, Dialer, SshDialer, Stream};
use crate::names::{image_marker, image_volume, overlay_volume, seed_volume, volume_owner};
use crate::provider::Kvm2;
use crate::scratch::ScratchDir;
use crate::xml::format_time;

const POOL: &str = "default";
const POOL_PATH: &str = "/var/lib/libvirt/images";
const POOL_CAPACITY: u64 = 200 << 30;

/// The fixture: kvm2 on two fake hosts, `host-a` (zone `zone-a`) and `host-b`
/// (zone `zone-b`).
pub struct Kvm2Fixture {
    hosts: Vec<(String, String)>,
}

impl Default for Kvm2Fixture {
    fn default() -> Self {
        Kvm2Fixture {
            hosts: vec![
                ("host-a".into(), "zone-a".into()),
                ("host-b".into(), "zone-b".into()),
            ],
        }
    }
}

fn image() -> ImageConfig {
    ImageConfig {
        name: "tiny".into(),
        url: "https://images.invalid/tiny.qcow2".into(),
        sha256: None,
        firmware: Firmware::Efi,
    }
}

impl Kvm2Fixture {
    /// The provider configuration the testbeds use.
    pub fn config(&self) -> Config {
        Config {
            name: "kvm2-fake".into(),
            hosts: self
                .hosts
                .iter()
                .map(|(h, _)| HostConfig {
                    name: h.clone(),
                    address: format!("{h}.fake"),
                    port: 22,
                    user: "root".into(),
                    key_file: None,
                    known_hosts_file: None,
                    socket: crate::config::DEFAULT_SOCKET.into(),
                })
                .collect(),
            pool: POOL.into(),
            bridge: "br0".into(),
            domain_type: DomainType::Qemu,
            images: vec![image()],
            default_image: None,
            sizes: Sizes::default(),
            placement: self
                .hosts
                .iter()
                .map(|(h, z)| (z.clone(), h.clone()))
                .collect(),
            timeouts: Timeouts {
                keepalive_interval: Duration::from_secs(1),
                keepalive_count: 3,
                ..Timeouts::default()
            },
            namespace: crate::config::DEFAULT_NAMESPACE.into(),
            vendor_data: None,
        }
    }
}

fn hook_err(e: impl std::fmt::Display) -> HookError {
    HookError::new(e)
}

/// Opens a side connection to a fake, for out-of-band steps that need a call.
async fn side(fake: &FakeLibvirt) -> HookResult<FakeConnection> {
    let c = fake.connect().map_err(hook_err)?;
    c.auth_list().await.map_err(hook_err)?;
    c.open(Some("qemu:///system"), 0).await.map_err(hook_err)?;
    Ok(c)
}

async fn seed_host(fake: &FakeLibvirt) -> HookResult<()> {
    fake.add_pool(POOL, POOL_PATH, POOL_CAPACITY);
    let c = side(fake).await?;
    let pool = c
        .storage_pool_lookup_by_name(POOL)
        .await
        .map_err(hook_err)?;
    let img = image();
    let base = format!(
        "<volume><name>{}</name><capacity unit='GiB'>2</capacity><allocation unit='MiB'>300</allocation><target><format type='qcow2'/></target></volume>",
        image_volume(&img)
    );
    let marker = format!(
        "<volume><name>{}</name><capacity unit='bytes'>64</capacity><target><format type='raw'/></target></volume>",
        image_marker(&img)
    );
    for xml in [base, marker] {
        c.storage_vol_create_xml(&pool, &xml, 0)
            .await
            .map_err(hook_err)?;
    }
    c.close();
    Ok(())
}

impl Fixture for Kvm2Fixture {
    fn provider_name(&self) -> String {
        "kvm2-fake".into()
    }

    fn profile(&self) -> Profile {
        Kvm2::declared_profile()
    }

    fn provider_version(&self) -> String {
        env!("CARGO_PKG_VERSION").into()
    }

    fn hooks(&self) -> Vec<Hook> {
        vec![
            Hook::Inventory,
            Hook::Planting,
            Hook::StateControl,
            Hook::Capacity,
            Hook::Faults,
            Hook::Rotation,
            Hook::Observation,
        ]
    }

    fn locations(&self) -> Vec<Location> {
        self.hosts
            .iter()
            .map(|(h, z)| Location {
                name: h.clone(),
                placement: z.clone(),
            })
            .collect()
    }

    fn has_checker(&self) -> bool {
        true
    }

    fn environment(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(
            "backend".to_owned(),
            "libvirt-fake over the libvirt remote protocol, through an in-process SSH server on loopback"
                .to_owned(),
        )])
    }

    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async move {
            let dir = ScratchDir::new("kvm2-fixture").map_err(hook_err)?;
            let mut config = self.config();
            let mut hosts = Vec::new();
            for (name, _) in &self.hosts {
                let fake = FakeLibvirt::with_config(libvirt_fake::HostConfig {
                    hostname: format!("{name}.fake"),
                    ..Default::default()
                });
                seed_host(&fake).await?;
                let host = FakeHost::start(name, fake, &dir.path().join(name)).await?;
                let cfg = config
                    .hosts
                    .iter_mut()
                    .find(|h| &h.name == name)
                    .expect("every fixture host is configured");
                cfg.address = "127.0.0.1".into();
                cfg.port = host.ssh.port();
                cfg.key_file = Some(host.key_file.clone());
                cfg.known_hosts_file = Some(host.known_hosts_file.clone());
                hosts.push(Arc::new(host));
            }
            let dialer = Arc::new(FixtureDialer {
                hosts: hosts.iter().map(|h| (h.name.clone(), h.clone())).collect(),
                ssh: SshDialer {
                    handshake_timeout: config.timeouts.dial,
                },
            });
            let verbosity: Verbosity = Arc::new(1.into());
            let provider = Kvm2::with_verbosity(config.clone(), dialer.clone(), verbosity.clone());
            Ok(Box::new(Bed {
                hosts,
                dialer,
                config,
                verbosity,
                provider,
                faults: Mutex::default(),
                next_fault: AtomicU64::new(1),
                _dir: dir,
            }) as Box<dyn Testbed>)
        })
    }
}

/// Writes `contents` to `path` through a file beside it and a rename, so a dial
/// reading `path` meanwhile sees the old file or the new one, never half of one.
fn replace_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

/// The connections one fake host serves, shared with its SSH server's channel handler.
struct Serving {
    fake: FakeLibvirt,
    /// Live connections by the fake's connection id.
    conns: Mutex<HashMap<u64, CancellationToken>>,
    /// The dial in progress: the token that drops its connection, and where to
    /// say that the channel is being served.
    pending: Mutex<Option<(CancellationToken, tokio::sync::oneshot::Sender<()>)>>,
    /// Serialises registering a connection with reading its id off the trace.
    register: Mutex<()>,
}

impl Serving {
    /// Serves one accepted SSH channel with the fake's remote-protocol server until
    /// the client goes, the fake drops it, or the fixture kills it.
    async fn channel<S>(self: Arc<Self>, stream: S)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (token, ack) = match self.pending.lock().expect("pending dial poisoned").take() {
            Some((token, ack)) => (token, Some(ack)),
            None => (CancellationToken::new(), None),
        };
        let fake = self.fake.clone();
        let mut serve = Box::pin(async move { fake.serve(stream).await });
        let id = {
            let _one = self.register.lock().expect("register lock poisoned");
            // The first poll registers the connection with the fake, so its id is
            // known; later polls (below) register the real waker.
            let done = serve
                .as_mut()
                .poll(&mut Context::from_waker(std::task::Waker::noop()))
                .is_ready();
            let id = self.fake.trace().dial_count();
            if !done {
                self.conns
                    .lock()
                    .expect("connection table poisoned")
                    .insert(id, token.clone());
            }
            id
        };
        if let Some(ack) = ack {
            let _ = ack.send(());
        }
        tokio::select! {
            _ = serve => {}
            _ = token.cancelled() => {}
        }
        self.conns
            .lock()
            .expect("connection table poisoned")
            .remove(&id);
    }
}

/// One fake host, the SSH server in front of it, and the credential files the
/// provider reads.
struct FakeHost {
    name: String,
    serving: Arc<Serving>,
    ssh: TestServer,
    /// The directory of this host's credentials.
    dir: PathBuf,
    key_file: PathBuf,
    known_hosts_file: PathBuf,
    /// The public half of the key in `key_file`: what the server accepts unless
    /// access is broken.
    public: Mutex<PublicKey>,
    baseline_calls: usize,
    baseline_dials: u64,
    dial_turn: tokio::sync::Mutex<()>,
}

impl FakeHost {
    /// Starts an SSH server in front of `fake` and writes a client key it accepts
    /// and a known_hosts file naming it into `dir`.
    async fn start(name: &str, fake: FakeLibvirt, dir: &Path) -> HookResult<FakeHost> {
        std::fs::create_dir_all(dir).map_err(hook_err)?;
        let serving = Arc::new(Serving {
            fake,
            conns: Mutex::default(),
            pending: Mutex::default(),
            register: Mutex::default(),
        });
        let handler = serving.clone();
        let (key, public) = generate_client_key(dir, KeyKind::Ed25519);
        let ssh = TestServer::start(TestServerOptions {
            authorized: vec![public.clone()],
            channel: ChannelTarget::Handler(Arc::new(move |stream| {
                Box::pin(handler.clone().channel(stream))
            })),
        })
        .await;
        let key_file = dir.join("id_ed25519");
        std::fs::rename(&key, &key_file).map_err(hook_err)?;
        let known_hosts_file = dir.join("known_hosts");
        std::fs::write(&known_hosts_file, format!("{}\n", ssh.known_hosts_line()))
            .map_err(hook_err)?;
        let trace = serving.fake.trace();
        Ok(FakeHost {
            name: name.to_owned(),
            baseline_calls: trace.calls().len(),
            baseline_dials: trace.dial_count(),
            serving,
            ssh,
            dir: dir.to_owned(),
            key_file,
            known_hosts_file,
            public: Mutex::new(public),
            dial_turn: tokio::sync::Mutex::new(()),
        })
    }

    fn fake(&self) -> &FakeLibvirt {
        &self.serving.fake
    }

    fn kill(&self, ids: impl Fn(u64) -> bool) {
        let mut conns = self
            .serving
            .conns
            .lock()
            .expect("connection table poisoned");
        conns.retain(|id, token| {
            if ids(*id) {
                token.cancel();
                false
            } else {
                true
            }
        });
    }

    /// A new client key in the key file and a freshly written known_hosts file;
    /// the server accepts only the new key from now on.
    fn rotate(&self) -> HookResult<()> {
        let (key, public) = generate_client_key(&self.dir, KeyKind::Ed25519);
        std::fs::rename(&key, &self.key_file).map_err(hook_err)?;
        // The host key stays, but the file is rewritten in the hashed form, so a
        // dial that cached it would not match.
        replace_file(
            &self.known_hosts_file,
            format!("{}\n", self.ssh.hashed_known_hosts_line()).as_bytes(),
        )
        .map_err(hook_err)?;
        self.ssh.set_authorized(vec![public.clone()]);
        *self.public.lock().expect("key lock poisoned") = public;
        Ok(())
    }

    /// Where the key file waits while the credentials are "not mounted".
    fn key_aside(&self) -> PathBuf {
        self.key_file.with_extension("removed")
    }

    /// Breaks access as `how` says, installing nothing in its place.
    fn break_access(&self, how: AccessBreak) -> HookResult<()> {
        match how {
            // The server accepts no key: the provider's is refused.
            AccessBreak::Revoke => self.ssh.set_authorized(Vec::new()),
            // The server presents a host key the known_hosts file does not record.
            AccessBreak::ForeignHostKey => self.ssh.present_foreign_host_key(true),
            AccessBreak::RemoveCredentials => {
                if self.key_file.exists() {
                    std::fs::rename(&self.key_file, self.key_aside()).map_err(hook_err)?;
                }
            }
        }
        Ok(())
    }

    /// Undoes every break: the key file back, the provider's key accepted, the
    /// server's own host key presented.
    fn restore_access(&self) -> HookResult<()> {
        let aside = self.key_aside();
        if aside.exists() {
            if self.key_file.exists() {
                // Rotated while removed: the new key file stands.
                std::fs::remove_file(&aside).map_err(hook_err)?;
            } else {
                std::fs::rename(&aside, &self.key_file).map_err(hook_err)?;
            }
        }
        let public = self.public.lock().expect("key lock poisoned").clone();
        self.ssh.set_authorized(vec![public]);
        self.ssh.present_foreign_host_key(false);
        Ok(())
    }
}

/// Dials a fake host with kvm2's production [`SshDialer`] through the host's SSH
/// server, after applying the host's reachability; the fixture can drop any
/// connection it handed out.
struct FixtureDialer {
    hosts: HashMap<String, Arc<FakeHost>>,
    ssh: SshDialer,
}

impl Dialer for FixtureDialer {
    fn dial<'a>(&'a self, host: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
        Box::pin(async move {
            let h = self
                .hosts
                .get(&host.name)
                .ok_or_else(|| DialError::Unreachable(format!("no fake host {}", host.name)))?;
            if h.fake().dial_mode() == DialMode::Refuse {
                // Counted as a dial by the fake, refused at once.
                let _ = h.fake().connect();
                return Err(DialError::Unreachable("connection refused".into()));
            }
            let _turn = h.dial_turn.lock().await;
            let token = CancellationToken::new();
            let (ack, served) = tokio::sync::oneshot::channel();
            *h.serving.pending.lock().expect("pending dial poisoned") = Some((token.clone(), ack));
            let stream = self.ssh.dial(host).await;
            let stream = match stream {
                Ok(s) => s,
                Err(e) => {
                    h.serving
                        .pending
                        .lock()
                        .expect("pending dial poisoned")
                        .take();
                    return Err(e);
                }
            };
            // The channel is open; wait until the server side has registered it, so
            // the next dial's token cannot be taken for this one.
            if served.await.is_err() {
                return Err(DialError::Unreachable("channel closed at once".into()));
            }
            let killed = Box::pin(token.cancelled_owned());
            Ok(Box::new(Killable {
                inner: stream,
                killed,
            }) as Stream)
        })
    }
}

/// The provider's end of a connection, which fails at once when the fixture drops
/// the connection (the fake's server may keep its own end open for hung calls).
struct Killable {
    inner: Stream,
    killed: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}
impl Killable {
    fn dead(&mut self, cx: &mut Context<'_>) -> bool {
        self.killed.as_mut().poll(cx).is_ready()
    }
}

fn dropped() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "connection dropped")
}

impl AsyncRead for Killable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.dead(cx) {
            return Poll::Ready(Err(dropped()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Killable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.dead(cx) {
            return Poll::Ready(Err(dropped()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.dead(cx) {
            return Poll::Ready(Err(dropped()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

struct Bed {
    hosts: Vec<Arc<FakeHost>>,
    dialer: Arc<FixtureDialer>,
    config: Config,
    verbosity: Verbosity,
    provider: Kvm2,
    faults: Mutex<HashMap<u64, Vec<FaultHandle>>>,
    next_fault: AtomicU64,
    /// Dropped last: the credential files.
    _dir: ScratchDir,
}

impl Drop for Bed {
    fn drop(&mut self) {
        for h in &self.hosts {
            h.kill(|_| true);
        }
    }
}

impl Bed {
    fn host(&self, location: &str) -> HookResult<&Arc<FakeHost>> {
        self.hosts
            .iter()
            .find(|h| h.name == location)
            .ok_or_else(|| HookError::new(format!("no location {location}")))
    }

    fn fake(&self, location: &str) -> HookResult<&FakeLibvirt> {
        Ok(self.host(location)?.fake())
    }
}

fn plant_xml(name: &str, mark: Option<(&str, &str, &str)>) -> String {
    let metadata = mark
        .map(|(tag, uid, created)| {
            format!(
                "<metadata><kvm2:instance xmlns:kvm2='{}' managed='{tag}' uid='{uid}' createdAt='{created}'/></metadata>",
                crate::config::DEFAULT_NAMESPACE
            )
        })
        .unwrap_or_default();
    format!(
        "<domain type='qemu'><name>{name}</name>{metadata}<memory unit='MiB'>64</memory><os><type>hvm</type></os><devices><channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices></domain>"
    )
}

async fn destroy_and_undefine(fake: &FakeLibvirt, name: &str) -> HookResult<()> {
    if fake.domain(name).is_none() {
        return Ok(());
    }
    let c = side(fake).await?;
    if let Ok(d) = c.domain_lookup_by_name(name).await {
        let _ = c.domain_destroy(&d).await;
        let _ = c.domain_undefine_flags(&d, flags::UNDEFINE_NVRAM).await;
    }
    c.close();
    fake.remove_domain(name);
    Ok(())
}

impl Testbed for Bed {
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

    fn request(&self, name: &str, tag: &str, location: &Location) -> CreateRequest {
        CreateRequest {
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            tag: tag.to_owned(),
            placement: location.placement.clone(),
            image: None,
            cloud_init: CloudInit::new(format!(
                "#cloud-config\nhostname: {name}\npackages: [squid]\n"
            )),
        }
    }

    fn id_for(&self, location: &str, name: &str) -> ProviderId {
        crate::id::format_id(location, name)
    }

    fn location_of(&self, id: &ProviderId) -> Option<String> {
        crate::id::parse_id(id).map(|p| p.host)
    }

    fn malformed_ids(&self) -> Vec<String> {
        crate::id::malformed_examples("host-a")
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
    fn state_control(&self) -> Option<&dyn StateControl> {
        Some(self)
    }
    fn capacity(&self) -> Option<&dyn Capacity> {
        Some(self)
    }
    fn faults(&self) -> Option<&dyn Faults> {
        Some(self)
    }
    fn rotation(&self) -> Option<&dyn Rotation> {
        Some(self)
    }
    fn observation(&self) -> Option<&dyn Observation> {
        Some(self)
    }
}

impl Rotation for Bed {
    fn rotate<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { self.host(location)?.rotate() })
    }

    fn break_access<'a>(
        &'a self,
        location: &'a str,
        how: AccessBreak,
    ) -> BoxFuture<'a, HookResult<bool>> {
        Box::pin(async move {
            self.host(location)?.break_access(how)?;
            Ok(true)
        })
    }

    fn restore_access<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move { self.host(location)?.restore_access() })
    }
}

impl Inventory for Bed {
    fn resources<'a>(&'a self, location: &'a str) -> BoxFuture<'a, HookResult<Vec<Resource>>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            let img = image();
            let mut out: Vec<Resource> = fake
                .domains()
                .into_iter()
                .map(|d| Resource {
                    instance: Some(d.handle.name.clone()),
                    kind: "domain".into(),
                    primary: true,
                    name: d.handle.name,
                })
                .collect();
            for v in fake.volumes(POOL).unwrap_or_default() {
                let name = v.handle.name;
                let (instance, kind) = match volume_owner(&name) {
                    Some((owner, kind)) => (Some(owner.to_owned()), kind),
                    None if name == image_volume(&img) => (None, "image"),
                    None if name == image_marker(&img) => (None, "marker"),
                    None => (None, "volume"),
                };
                out.push(Resource {
                    instance,
                    kind: kind.into(),
                    primary: false,
                    name,
                });
            }
            for path in fake.nvram_files() {
                let file = path.rsplit('/').next().unwrap_or(&path).to_owned();
                let owner = file.strip_suffix("_VARS.fd").map(str::to_owned);
                out.push(Resource {
                    instance: owner,
                    kind: "nvram".into(),
                    primary: false,
                    name: path,
                });
            }
            out.sort();
            Ok(out)
        })
    }
}

impl Planting for Bed {
    fn plant<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        what: Plant,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            let now = format_time(std::time::SystemTime::now());
            let xml = match &what {
                Plant::Unmarked => plant_xml(name, None),
                Plant::ForeignUid { tag, uid } => plant_xml(name, Some((tag, uid, &now))),
                Plant::EmptyUid { tag } => plant_xml(name, Some((tag, "", &now))),
                Plant::Unreadable { tag } => plant_xml(name, Some((tag, "someone", "not-a-time"))),
            };
            fake.define_domain(&xml).map_err(hook_err)?;
            fake.set_domain_state(name, DomainState::Running, reason::RUNNING_BOOTED)
                .map_err(hook_err)
        })
    }

    fn inspect<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, HookResult<Option<String>>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            let vols: Vec<String> = fake
                .volumes(POOL)
                .unwrap_or_default()
                .into_iter()
                .filter(|v| volume_owner(&v.handle.name).is_some_and(|(o, _)| o == name))
                .map(|v| format!("{v:?}"))
                .collect();
            Ok(match fake.domain(name) {
                None if vols.is_empty() => None,
                d => Some(format!("{d:?} {vols:?}")),
            })
        })
    }

    fn remove_part<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        part: Part,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            match part {
                Part::Secondary => {
                    fake.remove_volume(POOL, &overlay_volume(name));
                    fake.remove_volume(POOL, &seed_volume(name));
                }
                Part::Primary => destroy_and_undefine(fake, name).await?,
                Part::Container => {
                    fake.remove_pool(POOL);
                }
            }
            Ok(())
        })
    }

    fn remove<'a>(&'a self, location: &'a str, name: &'a str) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            destroy_and_undefine(fake, name).await?;
            fake.remove_volume(POOL, &overlay_volume(name));
            fake.remove_volume(POOL, &seed_volume(name));
            Ok(())
        })
    }
}

impl StateControl for Bed {
    fn set_power<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        power: Power,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            match power {
                Power::Running => {
                    fake.set_domain_state(name, DomainState::Running, reason::RUNNING_BOOTED)
                }
                Power::Paused => fake.pause(name),
                Power::Stopped => fake.stop(name),
            }
            .map_err(hook_err)
        })
    }

    fn set_addresses<'a>(
        &'a self,
        location: &'a str,
        name: &'a str,
        addrs: Vec<IpAddr>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            let mac = Some("52:54:00:00:00:01".to_owned());
            let all: Vec<libvirt_fake::IpAddr> = addrs
                .iter()
                .map(|a| match a {
                    IpAddr::V4(v) => libvirt_fake::IpAddr::v4(v.to_string(), 24),
                    IpAddr::V6(v) => libvirt_fake::IpAddr::v6(v.to_string(), 64),
                })
                .collect();
            let agent = vec![
                Interface {
                    name: "lo".into(),
                    hwaddr: Some("00:00:00:00:00:00".into()),
                    addrs: vec![libvirt_fake::IpAddr::v4("127.0.0.1", 8)],
                },
                Interface {
                    name: "eth0".into(),
                    hwaddr: mac.clone(),
                    addrs: all,
                },
            ];
            let arp = vec![Interface {
                name: "vnet0".into(),
                hwaddr: mac,
                addrs: addrs
                    .iter()
                    .filter(|a| a.is_ipv4())
                    .map(|a| libvirt_fake::IpAddr::v4(a.to_string(), 0))
                    .collect(),
            }];
            fake.set_interfaces(name, AddressSource::Agent, agent);
            fake.set_interfaces(name, AddressSource::Arp, arp);
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
            let fake = self.fake(location)?;
            fake.set_agent_unresponsive(name, fail);
            fake.set_arp_failure(fail);
            Ok(())
        })
    }

    fn hold_boot(&self, hold: bool) -> BoxFuture<'_, HookResult<()>> {
        Box::pin(async move {
            for h in &self.hosts {
                h.fake().hold_all_boots(hold);
            }
            Ok(())
        })
    }
}

impl Capacity for Bed {
    fn set_free<'a>(
        &'a self,
        location: &'a str,
        bytes: Option<u64>,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let fake = self.fake(location)?;
            match bytes {
                Some(b) => fake.set_pool_available(POOL, b),
                None => fake.set_pool_other_allocation(POOL, 0),
            }
            .map_err(hook_err)
        })
    }
}

/// The libvirt error a fault kind stands for on `procedure` (when known).
fn fault_for(kind: &FaultKind, procedure: Option<Procedure>) -> Fault {
    let name = procedure.map(|p| p.name()).unwrap_or("Domain");
    match kind {
        FaultKind::Hang => Fault::Hang,
        FaultKind::Delay(d) => Fault::Delay(*d),
        FaultKind::Drop => Fault::DropConnection,
        FaultKind::LostReply => Fault::LoseReply,
        reply => Fault::Error(
            crate::injected::libvirt_error(reply, name).expect("a fault kind that answers"),
        ),
    }
}

impl Faults for Bed {
    fn inject(&self, spec: FaultSpec) -> HookResult<FaultId> {
        let procedure = match &spec.trigger {
            Trigger::Named(n) => Some(
                Procedure::from_name(n)
                    .ok_or_else(|| HookError::new(format!("unknown procedure {n}")))?,
            ),
            _ => None,
        };
        let fault = fault_for(&spec.kind, procedure);
        let rule = match (&spec.trigger, procedure) {
            (Trigger::Nth(k), _) => FaultRule::nth_call(*k, fault).once(),
            (Trigger::Named(_), Some(p)) => FaultRule::on(p, fault).once(),
            _ => FaultRule::new(libvirt_fake::Trigger::Always, fault),
        };
        let mut handles = Vec::new();
        for h in &self.hosts {
            if spec.location.as_deref().is_none_or(|l| l == h.name) {
                handles.push(h.fake().faults().add(rule.clone()));
            }
        }
        if handles.is_empty() {
            return Err(HookError::new(format!(
                "no location {:?}",
                spec.location.unwrap_or_default()
            )));
        }
        let id = self.next_fault.fetch_add(1, Ordering::Relaxed);
        self.faults
            .lock()
            .expect("fault table poisoned")
            .insert(id, handles);
        Ok(FaultId(id))
    }

    fn fired(&self, id: FaultId) -> bool {
        self.faults
            .lock()
            .expect("fault table poisoned")
            .get(&id.0)
            .is_some_and(|hs| hs.iter().any(FaultHandle::fired))
    }

    fn clear(&self) {
        for h in &self.hosts {
            h.fake().faults().clear();
            // A hung call answers only when its connection goes: release them.
            let hung: Vec<u64> = h
                .fake()
                .trace()
                .calls()
                .into_iter()
                .filter(|c| c.fault.as_deref() == Some("hang"))
                .map(|c| c.connection)
                .collect();
            h.kill(|id| hung.contains(&id));
        }
    }

    fn set_reachability<'a>(
        &'a self,
        location: &'a str,
        r: Reachability,
    ) -> BoxFuture<'a, HookResult<()>> {
        Box::pin(async move {
            let h = self.host(location)?;
            let mode = match r {
                Reachability::Up => DialMode::Accept,
                Reachability::Refused => DialMode::Refuse,
                Reachability::BlackHole => DialMode::BlackHole,
            };
            h.fake().set_dial_mode(mode);
            if r != Reachability::Up {
                h.kill(|_| true);
            }
            Ok(())
        })
    }
}

impl Observation for Bed {
    fn calls(&self) -> Vec<BackendCall> {
        let mut all = Vec::new();
        for h in &self.hosts {
            for c in h.fake().trace().calls().into_iter().skip(h.baseline_calls) {
                all.push((
                    c.at,
                    BackendCall {
                        location: h.name.clone(),
                        name: c.procedure.name().to_owned(),
                        connection: c.connection,
                    },
                ));
            }
        }
        all.sort_by_key(|(at, _)| *at);
        all.into_iter().map(|(_, c)| c).collect()
    }

    fn dials(&self, location: &str) -> u64 {
        self.host(location)
            .map(|h| h.fake().trace().dial_count() - h.baseline_dials)
            .unwrap_or(0)
    }

    fn set_verbosity(&self, v: Tier) {
        let n = match v {
            Tier::V0 => 0,
            Tier::V1 => 1,
            Tier::V2 => 2,
        };
        self.provider.set_verbosity(n);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    async fn one_host() -> (ScratchDir, Arc<FakeHost>, HostConfig, FixtureDialer) {
        let dir = ScratchDir::new("kvm2-fixture").unwrap();
        let fake = FakeLibvirt::with_config(libvirt_fake::HostConfig {
            hostname: "host-a.fake".into(),
            ..Default::default()
        });
        let host = Arc::new(
            FakeHost::start("host-a", fake, &dir.path().join("host-a"))
                .await
                .unwrap(),
        );
        let mut cfg = Kvm2Fixture::default().config().hosts[0].clone();
        cfg.address = "127.0.0.1".into();
        cfg.port = host.ssh.port();
        cfg.key_file = Some(host.key_file.clone());
        cfg.known_hosts_file = Some(host.known_hosts_file.clone());
        let dialer = FixtureDialer {
            hosts: HashMap::from([("host-a".to_owned(), host.clone())]),
            ssh: SshDialer::default(),
        };
        (dir, host, cfg, dialer)
    }

    async fn client(stream: Stream) -> libvirt_rpc::Client {
        let (client, conn) = libvirt_rpc::Config::default().attach(stream);
        tokio::spawn(conn);
        client.open("qemu:///system").await.unwrap();
        client
    }

    #[tokio::test]
    async fn rotation_revokes_the_old_key_and_the_next_dial_reads_the_new_files() {
        let (dir, host, cfg, dialer) = one_host().await;
        let old_key = std::fs::read(&host.key_file).unwrap();
        let old_known = std::fs::read_to_string(&host.known_hosts_file).unwrap();
        let before = client(dialer.dial(&cfg).await.unwrap()).await;

        host.rotate().unwrap();
        assert_ne!(std::fs::read(&host.key_file).unwrap(), old_key);
        let known = std::fs::read_to_string(&host.known_hosts_file).unwrap();
        assert_ne!(known, old_known);
        assert!(known.starts_with("|1|"), "hashed entry: {known}");

        // The next dial reads the new files; the old key is refused.
        let after = client(dialer.dial(&cfg).await.unwrap()).await;
        assert_eq!(after.connect_get_hostname().await.unwrap(), "host-a.fake");
        let stale = dir.path().join("old-key");
        std::fs::write(&stale, &old_key).unwrap();
        let mut old_cfg = cfg.clone();
        old_cfg.key_file = Some(stale);
        let e = dialer
            .dial(&old_cfg)
            .await
            .err()
            .expect("the old key is revoked");
        assert!(matches!(e, DialError::AuthFailed(_)), "{e}");

        // A connection opened before the rotation stays open.
        assert_eq!(before.connect_get_hostname().await.unwrap(), "host-a.fake");
        assert_eq!(host.fake().trace().dial_count() - host.baseline_dials, 2);
    }

    #[tokio::test]
    async fn killed_connections_fail_at_once_and_refused_dials_are_counted() {
        let (_dir, host, cfg, dialer) = one_host().await;
        let c = client(dialer.dial(&cfg).await.unwrap()).await;
        assert_eq!(host.serving.conns.lock().unwrap().len(), 1);
        host.fake()
            .faults()
            .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::Hang));
        let hung = tokio::spawn(async move { c.connect_get_hostname().await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t = Instant::now();
        host.kill(|_| true);
        let r = tokio::time::timeout(Duration::from_secs(2), hung)
            .await
            .expect("the hung call ends when its connection is killed")
            .unwrap();
        assert!(r.is_err());
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );

        host.fake().set_dial_mode(DialMode::Refuse);
        let dials = host.fake().trace().dial_count();
        let e = dialer.dial(&cfg).await.err().expect("refused");
        assert!(matches!(e, DialError::Unreachable(_)), "{e}");
        assert_eq!(host.fake().trace().dial_count(), dials + 1);
    }
}
