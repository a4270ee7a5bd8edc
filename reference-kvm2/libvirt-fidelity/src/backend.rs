//! A `Backend` is one side of a comparison: a `libvirt_rpc::Client` opened on
//! `qemu:///system`, either on the in-memory fake (served over a duplex pipe)
//! or on a real libvirtd's Unix socket, plus the one thing the wire cannot
//! tell: what an uploaded volume holds.

use std::io::Read;
use std::time::Duration;

use libvirt_fake::FakeLibvirt;
use libvirt_rpc::{Client, Config};
use libvirt_wire::StoragePoolState;
use sha2::{Digest, Sha256};

use crate::target::{Gate, RealTarget, URI, announce_skip, gate};

/// Where the fake's pool claims to live; paths under it are normalised.
pub const FAKE_POOL_ROOT: &str = "/var/lib/libvirt/fake-pools";
/// Capacity of the fake's pool.
pub const FAKE_POOL_CAPACITY: u64 = 100 << 30;

#[derive(Clone)]
enum Kind {
    Fake(FakeLibvirt),
    Real(RealTarget),
}

/// One side: a client opened on `qemu:///system` and the pool to use.
#[derive(Clone)]
pub struct Backend {
    /// An open client; clones share the connection.
    pub client: Client,
    /// The storage pool the checks work in.
    pub pool: String,
    kind: Kind,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("side", &self.side())
            .field("pool", &self.pool)
            .finish()
    }
}

/// Why a real backend could not be set up.
#[derive(Debug)]
pub struct Unreachable {
    /// What went wrong.
    pub reason: String,
    /// Whether the host was asked for by a variable (then it is an error).
    pub requested: bool,
}

impl Backend {
    /// A fresh fake host with one active pool named `pool`, served over an
    /// in-memory duplex and opened like a real connection.
    pub async fn fake(pool: &str) -> Backend {
        Self::fake_with(FakeLibvirt::new(), pool).await
    }

    /// `fake` (given a pool named `pool` under [`FAKE_POOL_ROOT`]) served
    /// over an in-memory duplex and opened.
    pub async fn fake_with(fake: FakeLibvirt, pool: &str) -> Backend {
        fake.add_pool(
            pool,
            &format!("{FAKE_POOL_ROOT}/{pool}"),
            FAKE_POOL_CAPACITY,
        );
        let (client, connection) = Config::default().attach(fake.duplex());
        tokio::spawn(connection);
        client
            .open(URI)
            .await
            .expect("the fake accepts qemu:///system");
        Backend {
            client,
            pool: pool.to_owned(),
            kind: Kind::Fake(fake),
        }
    }

    /// Connects to the real daemon's socket, opens `qemu:///system` and
    /// checks that the pool is there and active.
    pub async fn real(target: &RealTarget) -> Result<Backend, Unreachable> {
        let fail = |reason: String| Unreachable {
            reason,
            requested: target.requested,
        };
        let client = connect(target, Config::default()).await.map_err(fail)?;
        client.open(URI).await.map_err(|e| {
            fail(format!(
                "cannot open {URI} on {}: {e}",
                target.socket.display()
            ))
        })?;
        let pool = client
            .storage_pool_lookup_by_name(&target.pool)
            .await
            .map_err(|e| {
                fail(format!(
                    "storage pool {:?} is not usable ({e}); scripts/libvirt-host.sh start \
                     creates it, or set KVM2_TEST_POOL",
                    target.pool
                ))
            })?;
        let info = client
            .storage_pool_get_info(&pool)
            .await
            .map_err(|e| fail(format!("storage pool {:?}: {e}", target.pool)))?;
        if StoragePoolState::from_raw(i32::from(info.state)) != StoragePoolState::Running {
            return Err(fail(format!(
                "storage pool {:?} is not active (state {})",
                target.pool, info.state
            )));
        }
        Ok(Backend {
            client,
            pool: target.pool.clone(),
            kind: Kind::Real(target.clone()),
        })
    }

    /// "fake" or "real".
    pub fn side(&self) -> &'static str {
        match self.kind {
            Kind::Fake(_) => "fake",
            Kind::Real(_) => "real",
        }
    }

    /// The fake host, for the fake side.
    pub fn fake_host(&self) -> Option<&FakeLibvirt> {
        match &self.kind {
            Kind::Fake(f) => Some(f),
            Kind::Real(_) => None,
        }
    }

    /// A new connection to the same host, not yet opened (no call made).
    pub async fn new_client(&self) -> Result<Client, String> {
        let config = Config::default();
        let client = match &self.kind {
            Kind::Fake(f) => {
                let (client, connection) = config.attach(f.duplex());
                tokio::spawn(connection);
                client
            }
            Kind::Real(t) => connect(t, config).await?,
        };
        Ok(client)
    }

    /// The real daemon, for the real side.
    pub fn real_target(&self) -> Option<&RealTarget> {
        match &self.kind {
            Kind::Fake(_) => None,
            Kind::Real(t) => Some(t),
        }
    }

    /// The first `limit` bytes a volume holds: for the fake what uploads
    /// wrote, for the real host the file at `path`, read on this machine.
    pub fn read_volume(&self, name: &str, path: &str, limit: usize) -> Result<Vec<u8>, String> {
        match &self.kind {
            Kind::Fake(f) => {
                let vol = f
                    .volume(&self.pool, name)
                    .ok_or_else(|| format!("the fake has no volume {name}"))?;
                let bytes = vol
                    .content
                    .bytes()
                    .ok_or_else(|| format!("the fake kept only a digest of {name}"))?;
                Ok(bytes[..bytes.len().min(limit)].to_vec())
            }
            Kind::Real(_) => {
                let mut out = Vec::new();
                std::fs::File::open(path)
                    .and_then(|f| f.take(limit as u64).read_to_end(&mut out))
                    .map_err(|e| format!("cannot read {path}: {e}"))?;
                Ok(out)
            }
        }
    }

    /// SHA-256 (lower-case hex) of the first `len` bytes a volume holds.
    /// The fake keeps large uploads only as a digest of what was sent, so
    /// there `len` must be the uploaded size.
    pub fn volume_sha256(&self, name: &str, path: &str, len: u64) -> Result<String, String> {
        match &self.kind {
            Kind::Fake(f) => {
                let vol = f
                    .volume(&self.pool, name)
                    .ok_or_else(|| format!("the fake has no volume {name}"))?;
                if vol.content.size() != len {
                    return Err(format!(
                        "the fake holds {} uploaded bytes, not {len}",
                        vol.content.size()
                    ));
                }
                Ok(vol.content.sha256_hex())
            }
            Kind::Real(_) => {
                let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
                let mut reader = file.take(len);
                let mut hasher = Sha256::new();
                let mut buf = vec![0u8; 1 << 20];
                let mut total = 0u64;
                loop {
                    let n = reader.read(&mut buf).map_err(|e| format!("{path}: {e}"))?;
                    if n == 0 {
                        break;
                    }
                    total += n as u64;
                    hasher.update(&buf[..n]);
                }
                if total != len {
                    return Err(format!("{path} holds {total} bytes, not {len}"));
                }
                Ok(hex(&hasher.finalize()))
            }
        }
    }
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A client on the real daemon: over SSH when the target has a route,
/// through the socket otherwise.
async fn connect(target: &RealTarget, config: Config) -> Result<Client, String> {
    let client = match &target.ssh {
        Some(r) => {
            let mut via = libvirt_ssh::SshTarget::new(
                r.host.clone(),
                r.user.clone(),
                r.key_file.clone(),
                r.known_hosts_file.clone(),
            );
            via.port = r.port;
            via.socket_path = target.socket.display().to_string();
            let stream = libvirt_ssh::dial(&via).await.map_err(|e| {
                format!(
                    "cannot reach {} over ssh to {}@{}:{}: {e}",
                    target.socket.display(),
                    r.user,
                    r.host,
                    r.port
                )
            })?;
            let (client, connection) = config.attach(stream);
            tokio::spawn(connection);
            client
        }
        None => {
            let stream = tokio::net::UnixStream::connect(&target.socket)
                .await
                .map_err(|e| format!("cannot connect to {}: {e}", target.socket.display()))?;
            let (client, connection) = config.attach(stream);
            tokio::spawn(connection);
            client
        }
    };
    Ok(client)
}

/// How a real backend is reached, for the test output.
pub fn route(target: &RealTarget) -> String {
    match &target.ssh {
        Some(r) => format!(
            "{} over ssh {}@{}:{}",
            target.socket.display(),
            r.user,
            r.host,
            r.port
        ),
        None => format!("{} directly", target.socket.display()),
    }
}

/// The real backend for a gated check, or `None` after announcing why the
/// check is skipped. Panics (failing the check) when a `KVM2_TEST_*`
/// variable asked for the real host and it cannot be used.
pub async fn real_or_skip(check: &str) -> Option<Backend> {
    let target = match gate() {
        Gate::Run(t) => t,
        Gate::Skip(reason) => {
            announce_skip(check, &reason);
            return None;
        }
    };
    let connect = tokio::time::timeout(Duration::from_secs(60), Backend::real(&target));
    match connect.await {
        Ok(Ok(b)) => {
            crate::target::announce(&format!("{check}: real libvirt at {}", route(&target)));
            Some(b)
        }
        Ok(Err(e)) if !e.requested => {
            announce_skip(
                check,
                &format!("{} (no KVM2_TEST_* variable set)", e.reason),
            );
            None
        }
        Ok(Err(e)) => panic!(
            "{check}: the real libvirt host was requested but {}",
            e.reason
        ),
        Err(_) => panic!(
            "{check}: no answer from {} within 60 s",
            target.socket.display()
        ),
    }
}
