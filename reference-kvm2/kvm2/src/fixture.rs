//! `Kvm2Fixture`: the conformance fixture that runs kvm2 against two in-memory
//! libvirt hosts (`libvirt-fake`) served over the real remote protocol, one
//! in-memory pipe per dial.
//!
//! Every testbed gets hosts of its own. The hooks reach below the provider: the
//! fake's own API plants, removes and steers domains and pools; faults are the
//! fake's per-call injections; reachability is decided where the dialer opens
//! pipes; observation is the fake's trace. Credential rotation has no meaning
//! for pipes, so that hook is absent until the SSH transport serves the fake.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use conformance::fixture::{
    BackendCall, Capacity, FaultId, FaultKind, FaultSpec, Faults, Fixture, Hook, HookError,
    HookResult, Inventory, Location, Observation, Part, Plant, Planting, Power, Reachability,
    Resource, StateControl, Testbed, Trigger, Verbosity as Tier,
};
use conformance::{BoxFuture, CloudInit, CreateRequest, Profile, Provider, ProviderId};
use libvirt_fake::{
    AddressSource, DialMode, DomainState, FakeConnection, FakeLibvirt, Fault, FaultHandle,
    FaultRule, Interface, Procedure, code, domain, flags, reason,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::backend::Verbosity;
use crate::config::{Config, DomainType, Firmware, HostConfig, ImageConfig, Sizes, Timeouts};
use crate::dialer::{DialError, Dialer, Stream};
use crate::names::{image_marker, image_volume, overlay_volume, seed_volume, volume_owner};
use crate::provider::Kvm2;
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
            "libvirt-fake over the libvirt remote protocol (in-memory pipes)".to_owned(),
        )])
    }

    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async move {
            let mut hosts = Vec::new();
            for (name, _) in &self.hosts {
                let fake = FakeLibvirt::with_config(libvirt_fake::HostConfig {
                    hostname: format!("{name}.fake"),
                    ..Default::default()
                });
                seed_host(&fake).await?;
                let trace = fake.trace();
                hosts.push(Arc::new(FakeHost {
                    name: name.clone(),
                    baseline_calls: trace.calls().len(),
                    baseline_dials: trace.dial_count(),
                    fake,
                    conns: Mutex::default(),
                    dial_turn: tokio::sync::Mutex::new(()),
                }));
            }
            let dialer = Arc::new(FakeDialer {
                hosts: hosts.iter().map(|h| (h.name.clone(), h.clone())).collect(),
            });
            let config = self.config();
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
            }) as Box<dyn Testbed>)
        })
    }
}

/// One fake host and the pipes its dialer handed out.
struct FakeHost {
    name: String,
    fake: FakeLibvirt,
    baseline_calls: usize,
    baseline_dials: u64,
    /// Live connections by the fake's connection id.
    conns: Mutex<HashMap<u64, CancellationToken>>,
    dial_turn: tokio::sync::Mutex<()>,
}

impl FakeHost {
    fn kill(&self, ids: impl Fn(u64) -> bool) {
        let mut conns = self.conns.lock().expect("connection table poisoned");
        conns.retain(|id, token| {
            if ids(*id) {
                token.cancel();
                false
            } else {
                true
            }
        });
    }
}

/// Opens an in-memory pipe to a fake host per dial, served by the fake's
/// remote-protocol server.
struct FakeDialer {
    hosts: HashMap<String, Arc<FakeHost>>,
}

impl Dialer for FakeDialer {
    fn dial<'a>(&'a self, host: &'a HostConfig) -> BoxFuture<'a, Result<Stream, DialError>> {
        Box::pin(async move {
            let h = self
                .hosts
                .get(&host.name)
                .ok_or_else(|| DialError::Unreachable(format!("no fake host {}", host.name)))?;
            if h.fake.dial_mode() == DialMode::Refuse {
                // Counted as a dial by the fake, refused at once.
                let _ = h.fake.connect();
                return Err(DialError::Unreachable("connection refused".into()));
            }
            let _turn = h.dial_turn.lock().await;
            let (client, server) = tokio::io::duplex(1 << 20);
            let fake = h.fake.clone();
            let mut serve = Box::pin(async move { fake.serve(server).await });
            // The first poll registers the connection with the fake, so its id is known.
            if futures_util::poll!(&mut serve).is_ready() {
                return Err(DialError::Unreachable("connection closed at once".into()));
            }
            let id = h.fake.trace().dial_count();
            let token = CancellationToken::new();
            h.conns
                .lock()
                .expect("connection table poisoned")
                .insert(id, token.clone());
            let killed = Box::pin(token.clone().cancelled_owned());
            tokio::spawn(async move {
                tokio::select! {
                    _ = serve => {}
                    _ = token.cancelled() => {}
                }
            });
            Ok(Box::new(Killable {
                inner: client,
                killed,
            }) as Stream)
        })
    }
}

/// The provider's end of a pipe, which fails at once when the fixture drops the
/// connection (the fake's server may keep its own end open for hung calls).
struct Killable {
    inner: tokio::io::DuplexStream,
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
    dialer: Arc<FakeDialer>,
    config: Config,
    verbosity: Verbosity,
    provider: Kvm2,
    faults: Mutex<HashMap<u64, Vec<FaultHandle>>>,
    next_fault: AtomicU64,
}

impl Bed {
    fn host(&self, location: &str) -> HookResult<&Arc<FakeHost>> {
        self.hosts
            .iter()
            .find(|h| h.name == location)
            .ok_or_else(|| HookError::new(format!("no location {location}")))
    }

    fn fake(&self, location: &str) -> HookResult<&FakeLibvirt> {
        Ok(&self.host(location)?.fake)
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
        [
            "",
            "hosts",
            "hosts/host-a",
            "hosts/host-a/domains",
            "hosts/host-a/domains/",
            "hosts//domains/x",
            "host/host-a/domains/x",
            "hosts/host-a/domain/x",
            "hosts/host-a/domains/x/extra",
            "hosts/host-a/domains/Upper",
            "hosts/host-a/domains/../x",
            "hosts/host a/domains/x",
        ]
        .map(String::from)
        .to_vec()
    }

    fn unconfigured_id(&self, name: &str) -> ProviderId {
        crate::id::format_id("no-such-host", name)
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
    fn observation(&self) -> Option<&dyn Observation> {
        Some(self)
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
                h.fake.hold_all_boots(hold);
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
    match kind {
        FaultKind::Transient => Fault::busy(),
        FaultKind::Permanent => Fault::access_denied(),
        FaultKind::NotFound => {
            let name = procedure.map(|p| p.name()).unwrap_or("Domain");
            if name.starts_with("StorageVol") {
                Fault::error(
                    code::NO_STORAGE_VOL,
                    domain::STORAGE,
                    "no storage vol with matching name",
                )
            } else if name.starts_with("StoragePool") {
                Fault::error(
                    code::NO_STORAGE_POOL,
                    domain::STORAGE,
                    "no storage pool with matching name",
                )
            } else {
                Fault::error(
                    code::NO_DOMAIN,
                    domain::QEMU,
                    "no domain with matching name",
                )
            }
        }
        FaultKind::Quota => Fault::error(
            code::INTERNAL_ERROR,
            domain::STORAGE,
            "Not enough free space in pool",
        ),
        FaultKind::Hang => Fault::Hang,
        FaultKind::Delay(d) => Fault::Delay(*d),
        FaultKind::Drop => Fault::DropConnection,
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
                handles.push(h.fake.faults().add(rule.clone()));
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
            h.fake.faults().clear();
            // A hung call answers only when its connection goes: release them.
            let hung: Vec<u64> = h
                .fake
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
            h.fake.set_dial_mode(mode);
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
            for c in h.fake.trace().calls().into_iter().skip(h.baseline_calls) {
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
            .map(|h| h.fake.trace().dial_count() - h.baseline_dials)
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
