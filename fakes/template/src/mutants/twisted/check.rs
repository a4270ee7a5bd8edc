//! The [`Twisted`] wrapper's Checker: the correct provider's entries, twisted on
//! their way out.

use conformance::{BoxFuture, Checker, Ctx, HealthReason, HostHealth};

use super::{Twist, Twisted, late};
use crate::provider::CONTAINER_MISSING;

#[deny(clippy::missing_trait_methods)]
impl Checker for Twisted {
    fn check<'a>(&'a self, ctx: &'a Ctx) -> BoxFuture<'a, Vec<HostHealth>> {
        Box::pin(async move {
            let mut h = if self.twist == Twist::CheckOverstaysDeadline {
                self.inner.check(&late(ctx)).await
            } else {
                self.inner.check(ctx).await
            };
            match self.twist {
                Twist::CheckAddsAggregate => {
                    let bad = h.iter().find(|x| !x.ready).cloned();
                    h.push(HostHealth {
                        location: "all".into(),
                        ready: bad.is_none(),
                        reason: bad.map_or(HealthReason::Ready, |b| b.reason),
                        message: "every site".into(),
                        details: Default::default(),
                    });
                }
                Twist::CheckTimeoutIsUnreachable => {
                    rename(&mut h, HealthReason::Timeout, HealthReason::Unreachable)
                }
                Twist::CheckInventsReason => rename(
                    &mut h,
                    HealthReason::Unreachable,
                    HealthReason::Other("Down".into()),
                ),
                Twist::CheckAuthIsUnreachable => {
                    rename(&mut h, HealthReason::AuthFailed, HealthReason::Unreachable)
                }
                Twist::CheckDeniedIsUnreachable => {
                    for x in h
                        .iter_mut()
                        .filter(|x| x.message.contains("operation denied"))
                    {
                        x.reason = HealthReason::Unreachable;
                    }
                }
                Twist::CheckHostKeyIsAuthFailed => rename(
                    &mut h,
                    HealthReason::HostKeyRejected,
                    HealthReason::AuthFailed,
                ),
                Twist::CheckNoCredentialsIsAuthFailed => rename(
                    &mut h,
                    HealthReason::CredentialsUnavailable,
                    HealthReason::AuthFailed,
                ),
                Twist::CheckEverythingUnreachable => {
                    for x in h.iter_mut().filter(|x| !x.ready) {
                        x.reason = HealthReason::Unreachable;
                    }
                }
                Twist::CheckReversed => h.reverse(),
                Twist::CheckReadyWithReason => {
                    for x in h.iter_mut().filter(|x| x.reason == HealthReason::Timeout) {
                        x.ready = true;
                    }
                }
                Twist::CheckRefusedIsTimeout => {
                    rename(&mut h, HealthReason::Unreachable, HealthReason::Timeout)
                }
                Twist::CheckContainerMissingIsUnreachable => rename(
                    &mut h,
                    HealthReason::Other(CONTAINER_MISSING.into()),
                    HealthReason::Unreachable,
                ),
                _ => {}
            }
            h
        })
    }

    fn extra_reasons(&self) -> &'static [&'static str] {
        if self.twist == Twist::CheckDeclaresNoReasons {
            // Reports its own reason all the same.
            return &[];
        }
        self.inner.extra_reasons()
    }
}

/// A Checker whose mapping gives `to` where the cause called for `from`.
fn rename(h: &mut [HostHealth], from: HealthReason, to: HealthReason) {
    for x in h.iter_mut().filter(|x| x.reason == from) {
        x.reason = to.clone();
    }
}
