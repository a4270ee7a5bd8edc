//! One lane: a fake host, its SSH server and the provider, reused for every
//! schedule the lane runs; and what a schedule's run found.

use super::*;

/// kvm2 needs no image in the soak (the host's cache is seeded with a few bytes
/// of image, so its guests boot and get addresses); should it look
/// for one anyway, the download fails at once as a passing failure, and nothing
/// leaves the machine.
struct NoImages;

impl ImageSource for NoImages {
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Download, Failure>> {
        Box::pin(async move {
            Err(Failure::NotYet(format!(
                "the soak serves no images ({url} not fetched)"
            )))
        })
    }
}

/// One fake host behind an in-process SSH server, and the provider on it.
pub struct Lane {
    pub number: usize,
    pub(super) fake: FakeLibvirt,
    _ssh: TestServer,
    _dir: tempfile::TempDir,
    pub(super) config: Config,
    pub(super) dialer: Arc<SshDialer>,
    pub(super) provider: Kvm2,
    /// Schedules run on this lane, for fresh names.
    runs: u64,
    pub(super) baseline_dirs: Vec<String>,
}

async fn seed_host(fake: &FakeLibvirt, config: &Config) {
    fake.add_pool(POOL, POOL_PATH, 200 << 30);
    let c = fake.connect().expect("a side connection to the fake");
    c.auth_list().await.expect("auth list");
    c.open(Some("qemu:///system"), 0).await.expect("open");
    let pool = c.storage_pool_lookup_by_name(POOL).await.expect("the pool");
    let img = &config.images[0];
    let base = format!(
        "<volume><name>{}</name><capacity unit='GiB'>2</capacity><allocation unit='MiB'>300</allocation><target><format type='qcow2'/></target></volume>",
        image_volume(img)
    );
    let marker = format!(
        "<volume><name>{}</name><capacity unit='bytes'>64</capacity><target><format type='raw'/></target></volume>",
        image_marker(img)
    );
    let mut vols = Vec::new();
    for xml in [base, marker] {
        let vol = c
            .storage_vol_create_xml(&pool, &xml, 0)
            .await
            .expect("seed the image cache");
        vols.push(vol);
    }
    // A guest over a base image that holds nothing boots nothing.
    let mut up = c
        .storage_vol_upload(&vols[0], 0, 0, 0)
        .await
        .expect("upload into the cached image");
    up.send(b"QFI\xfb a few bytes of image")
        .expect("the image bytes");
    up.finish().expect("the image upload ends");
    c.close();
}

impl Lane {
    /// A fresh host with its pool and image cache, an SSH server in front of it,
    /// and a provider configured with the soak's short limits.
    pub async fn start(number: usize) -> Lane {
        let dir = tempfile::tempdir().expect("a directory for the lane's keys");
        let fake = FakeLibvirt::with_config(libvirt_fake::HostConfig {
            hostname: format!("{HOST}.fake"),
            ..Default::default()
        });
        let mut config = Kvm2Fixture::default().config();
        config.name = PROVIDER.into();
        config.hosts.truncate(1);
        config.placement.retain(|_, h| h == HOST);
        config.timeouts = soak_timeouts();
        seed_host(&fake, &config).await;
        let served = fake.clone();
        let (key, public) = generate_client_key(dir.path(), KeyKind::Ed25519);
        let ssh = TestServer::start(TestServerOptions {
            authorized: vec![public],
            channel: ChannelTarget::Handler(Arc::new(move |stream| {
                let fake = served.clone();
                Box::pin(async move {
                    let _ = fake.serve(stream).await;
                })
            })),
        })
        .await;
        let known: PathBuf = dir.path().join("known_hosts");
        std::fs::write(&known, format!("{}\n", ssh.known_hosts_line())).expect("known_hosts");
        let host = &mut config.hosts[0];
        host.address = "127.0.0.1".into();
        host.port = ssh.port();
        host.key_file = Some(key);
        host.known_hosts_file = Some(known);
        let dialer = Arc::new(SshDialer {
            handshake_timeout: config.timeouts.dial,
        });
        let provider = new_provider(&config, &dialer);
        let baseline_dirs = fake.leftover_directories();
        Lane {
            number,
            fake,
            _ssh: ssh,
            _dir: dir,
            config,
            dialer,
            provider,
            runs: 0,
            baseline_dirs,
        }
    }

    /// Runs one schedule with fresh names and checks every step and the host
    /// afterwards.
    pub async fn run(&mut self, schedule: &Schedule) -> Outcome {
        self.runs += 1;
        let stem = format!("soak{}x{}", self.number, self.runs);
        let names: Vec<String> = (0..NAMES).map(|i| format!("{stem}n{i}")).collect();
        let mut out = Outcome::default();
        let mut run = Run {
            lane: self,
            tag: stem.clone(),
            names,
            out: &mut out,
            restart_pending: None,
            hung: false,
            volumes_removed: [false; NAMES],
        };
        for (n, step) in schedule.steps.iter().enumerate() {
            run.step(n, step).await;
        }
        run.cleanup().await;
        out
    }

    pub(super) fn ids(&self, names: &[String]) -> Vec<ProviderId> {
        names.iter().map(|n| kvm2::id::format_id(HOST, n)).collect()
    }
}

pub(super) fn new_provider(config: &Config, dialer: &Arc<SshDialer>) -> Kvm2 {
    let p = Kvm2::new(config.clone(), dialer.clone()).with_image_source(Arc::new(NoImages));
    p.set_verbosity(0);
    p
}

/// What one schedule did and found.
#[derive(Default, Debug)]
pub struct Outcome {
    pub steps: u64,
    pub armed: BTreeMap<&'static str, u64>,
    pub fired: BTreeMap<&'static str, u64>,
    /// Errors of a kind the contract does not allow for the fault that fired.
    pub wrong_kinds: Vec<String>,
    /// Successes (or NotFound) that the host's inventory contradicts, and errors
    /// without the provider's name or operation.
    pub false_claims: Vec<String>,
    /// What the host still held after the schedule's cleanup.
    pub leaks: Vec<String>,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        !self.wrong_kinds.is_empty() || !self.false_claims.is_empty() || !self.leaks.is_empty()
    }

    pub fn problems(&self) -> Vec<String> {
        let mut all = Vec::new();
        all.extend(self.wrong_kinds.iter().map(|p| format!("wrong kind: {p}")));
        all.extend(
            self.false_claims
                .iter()
                .map(|p| format!("false claim: {p}")),
        );
        all.extend(self.leaks.iter().map(|p| format!("leak: {p}")));
        all
    }
}
