//! Check: every host concurrently, each on a fresh connection of its own (never
//! the operations' one): library and hypervisor versions, hostname, pool lookup
//! and info.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use conformance::{BoxFuture, Checker, Ctx, HealthReason, HostHealth, Interrupted};
use libvirt_wire::{ErrorCode, StoragePoolState};
use tracing::{Instrument, info};

use crate::backend::rpc;
use crate::config::HostConfig;
use crate::dialer::DialError;
use crate::errors::Failure;
use crate::provider::Kvm2;

/// Reasons kvm2 adds to the shared vocabulary.
pub const EXTRA_REASONS: &[&str] = &["PoolNotFound", "PoolNotActive"];

const GIB: f64 = (1u64 << 30) as f64;

fn unhealthy(host: &HostConfig, reason: HealthReason, message: String) -> HostHealth {
    let mut details = BTreeMap::new();
    details.insert("user".to_owned(), host.user.clone());
    HostHealth {
        location: host.name.clone(),
        ready: false,
        reason,
        message,
        details,
    }
}

/// A libvirt-encoded version (major·10⁶ + minor·10³ + micro) as `major.minor.micro`.
fn dotted_version(v: u64) -> String {
    format!("{}.{}.{}", v / 1_000_000, v / 1000 % 1000, v % 1000)
}

/// The health reason for a failure before the pool was reached.
fn reason_of(f: &Failure) -> HealthReason {
    match f {
        Failure::Dial(d) => match d {
            DialError::Timeout => HealthReason::Timeout,
            DialError::AuthFailed(_) | DialError::BadCredentials(_) => HealthReason::AuthFailed,
            DialError::HostKeyRejected(_) => HealthReason::HostKeyRejected,
            DialError::CredentialsUnavailable(_) => HealthReason::CredentialsUnavailable,
            DialError::Unreachable(_) | DialError::Other(_) => HealthReason::Unreachable,
        },
        Failure::Interrupted(_) => HealthReason::Timeout,
        Failure::Rpc { err, .. } if err.is_timeout() => HealthReason::Timeout,
        f if f.is(ErrorCode::AuthFailed) || f.is(ErrorCode::AccessDenied) => {
            HealthReason::AuthFailed
        }
        _ => HealthReason::Unreachable,
    }
}

impl Kvm2 {
    async fn check_host(&self, ctx: &Ctx, host: &HostConfig) -> HostHealth {
        let i = &*self.inner;
        let r = ctx
            .run(async {
                let s = i
                    .hosts
                    .dedicated(ctx, &i.config, &i.verbosity, host)
                    .await
                    .map_err(|f| (reason_of(&f), f.to_string()))?;
                let step = |f: Failure| (reason_of(&f), f.to_string());
                let version =
                    rpc!(s, ConnectGetLibVersion, |c| c.connect_get_lib_version()).map_err(step)?;
                let hypervisor =
                    rpc!(s, ConnectGetVersion, |c| c.connect_get_version()).map_err(step)?;
                let hostname =
                    rpc!(s, ConnectGetHostname, |c| c.connect_get_hostname()).map_err(step)?;
                let mut details = BTreeMap::new();
                details.insert("user".to_owned(), host.user.clone());
                details.insert("hostname".to_owned(), hostname);
                if let Some(cipher) = crate::dialer::negotiated_cipher(host) {
                    details.insert("sshCipher".to_owned(), cipher);
                }
                details.insert("libvirtVersion".to_owned(), dotted_version(version));
                details.insert("hypervisorVersion".to_owned(), dotted_version(hypervisor));
                let pool_name = i.config.pool.as_str();
                details.insert("pool".to_owned(), pool_name.to_owned());
                let pool = match rpc!(s, StoragePoolLookupByName, |c| c
                    .storage_pool_lookup_by_name(pool_name))
                {
                    Ok(p) => p,
                    Err(f) if f.is(ErrorCode::NoStoragePool) => {
                        return Ok((
                            HealthReason::Other("PoolNotFound".into()),
                            format!("storage pool {pool_name} does not exist"),
                            details,
                        ));
                    }
                    Err(f) => return Err(step(f)),
                };
                let info = rpc!(s, StoragePoolGetInfo, |c| c.storage_pool_get_info(&pool))
                    .map_err(step)?;
                let state = StoragePoolState::from_raw(i32::from(info.state));
                details.insert(
                    "poolState".to_owned(),
                    state
                        .name()
                        .map(|n| n.trim_start_matches("VIR_STORAGE_POOL_").to_lowercase())
                        .unwrap_or_else(|| state.to_string()),
                );
                details.insert(
                    "poolCapacityGiB".to_owned(),
                    format!("{:.1}", info.capacity as f64 / GIB),
                );
                details.insert(
                    "poolAvailableGiB".to_owned(),
                    format!("{:.1}", info.available as f64 / GIB),
                );
                if state != StoragePoolState::Running {
                    return Ok((
                        HealthReason::Other("PoolNotActive".into()),
                        format!("storage pool {pool_name} is not active"),
                        details,
                    ));
                }
                Ok((
                    HealthReason::Ready,
                    "libvirt answers and the pool is active".to_owned(),
                    details,
                ))
            })
            .await;
        health_of(host, r)
    }
}

/// The health a check's outcome gives `host`: its answer, its failure, or why it did not finish.
fn health_of(host: &HostConfig, r: Result<HostAnswer, Interrupted>) -> HostHealth {
    match r {
        Ok(Ok((reason, message, details))) => HostHealth {
            location: host.name.clone(),
            ready: reason == HealthReason::Ready,
            reason,
            message,
            details,
        },
        Ok(Err((reason, message))) => unhealthy(host, reason, message),
        Err(Interrupted::DeadlineExceeded) => unhealthy(
            host,
            HealthReason::Timeout,
            "no answer before the deadline".into(),
        ),
        Err(Interrupted::Cancelled) => unhealthy(
            host,
            HealthReason::Timeout,
            "the check was cancelled".into(),
        ),
    }
}

/// What a host's check answers: its reason, message and details, or the reason and message of a failure.
type HostAnswer = Result<(HealthReason, String, BTreeMap<String, String>), (HealthReason, String)>;

impl Checker for Kvm2 {
    fn check<'a>(&'a self, ctx: &'a Ctx) -> BoxFuture<'a, Vec<HostHealth>> {
        let span = tracing::info_span!(parent: ctx.span(), "kvm2.check");
        let verbosity = self.inner.verbosity.clone();
        Box::pin(
            async move {
                let started = Instant::now();
                let out = futures_util::future::join_all(
                    self.inner.config.hosts.iter().map(|h| self.check_host(ctx, h)),
                )
                .await;
                if verbosity.load(Ordering::Relaxed) >= 1 {
                    let summary: Vec<String> =
                        out.iter().map(|h| format!("{}={}", h.location, h.reason)).collect();
                    info!(op = "check", elapsed_ms = started.elapsed().as_millis() as u64, hosts = %summary.join(", "), "checked");
                }
                out
            }
            .instrument(span),
        )
    }

    fn extra_reasons(&self) -> &'static [&'static str] {
        EXTRA_REASONS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[tokio::test]
    async fn check_shows_the_negotiated_ssh_cipher() {
        use conformance::fixture::Fixture;
        // The fixture's hosts are reached over SSH, like production ones.
        let fixture = crate::fixture::Kvm2Fixture::default();
        let bed = fixture.open().await.unwrap();
        let ctx = Ctx::with_timeout(std::time::Duration::from_secs(10));
        let health = bed.provider().checker().unwrap().check(&ctx).await;
        assert!(!health.is_empty());
        for h in &health {
            assert!(h.ready, "{h:?}");
            assert_eq!(
                h.details.get("sshCipher").map(String::as_str),
                Some("aes256-gcm@openssh.com"),
                "{h:?}"
            );
        }
    }

    #[test]
    fn versions_read_as_major_minor_micro() {
        assert_eq!(dotted_version(11_003_000), "11.3.0");
        assert_eq!(dotted_version(10_000_002), "10.0.2");
        assert_eq!(dotted_version(9_010_011), "9.10.11");
    }

    #[rstest]
    #[case(Failure::Dial(DialError::Timeout), "Timeout")]
    #[case(Failure::Dial(DialError::Unreachable("refused".into())), "Unreachable")]
    #[case(Failure::Dial(DialError::Other("eof".into())), "Unreachable")]
    #[case(Failure::Dial(DialError::AuthFailed("denied".into())), "AuthFailed")]
    #[case(Failure::Dial(DialError::BadCredentials("parse".into())), "AuthFailed")]
    #[case(Failure::Dial(DialError::HostKeyRejected("unknown".into())), "HostKeyRejected")]
    #[case(
        Failure::Dial(DialError::CredentialsUnavailable("no key".into())),
        "CredentialsUnavailable"
    )]
    #[case(Failure::Interrupted(Interrupted::DeadlineExceeded), "Timeout")]
    fn reasons(#[case] f: Failure, #[case] want: &str) {
        let r = reason_of(&f);
        assert_eq!(r.as_str(), want);
        assert!(HealthReason::SHARED.contains(&r.as_str()));
    }
}
