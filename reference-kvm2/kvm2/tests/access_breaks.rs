//! The embedded fixture's access breaks (`Rotation::break_access`), seen through
//! kvm2's own Checker: each break makes the first host not ready for the reason it
//! stands for while the other host stays ready, and `restore_access` makes both
//! ready again without a restart of the provider. The same for the causes of the
//! reasons kvm2 declares (`Faults::cause`): the storage pool stopped or undefined.

use std::time::Duration;

use conformance::fixture::{AccessBreak, Fixture, Testbed};
use conformance::{Ctx, HealthReason, HostHealth, Provider};
use kvm2::fixture::Kvm2Fixture;

async fn check(p: &dyn Provider) -> Vec<HostHealth> {
    let ctx = Ctx::with_timeout(Duration::from_secs(20));
    p.checker().expect("kvm2 has a checker").check(&ctx).await
}

fn reasons(h: &[HostHealth]) -> Vec<(String, bool, HealthReason)> {
    h.iter()
        .map(|x| (x.location.clone(), x.ready, x.reason.clone()))
        .collect()
}

fn all_ready(h: &[HostHealth]) -> bool {
    h.iter().all(|x| x.ready && x.reason == HealthReason::Ready)
}

async fn breaks_and_restores(how: AccessBreak, want: HealthReason) {
    let f = Kvm2Fixture::default();
    let tb: Box<dyn Testbed> = f.open().await.unwrap();
    let locations = f.locations();
    let (first, other) = (&locations[0].name, &locations[1].name);
    let p = tb.provider();
    let rotation = tb.rotation().expect("the fixture rotates");

    let before = check(p.as_ref()).await;
    assert!(all_ready(&before), "{:?}", reasons(&before));
    // An operation's connection to the first host, open before the break.
    let ctx = Ctx::with_timeout(Duration::from_secs(20));
    p.list_by_tag(&ctx, "kvm2-access-breaks").await.unwrap();

    assert!(
        rotation.break_access(first, how).await.unwrap(),
        "{how:?} is offered"
    );
    let broken = check(p.as_ref()).await;
    let h = |n: &str| broken.iter().find(|x| x.location == n).unwrap().clone();
    let (a, b) = (h(first), h(other));
    assert!(!a.ready, "{how:?}: {:?}", reasons(&broken));
    assert_eq!(a.reason, want, "{how:?}: {}", a.message);
    assert!(b.ready, "{how:?}: the other host: {:?}", reasons(&broken));
    assert_eq!(b.reason, HealthReason::Ready);

    rotation.restore_access(first).await.unwrap();
    let after = check(p.as_ref()).await;
    assert!(all_ready(&after), "{how:?}: {:?}", reasons(&after));
    // Operations work again through the same provider.
    p.list_by_tag(&ctx, "kvm2-access-breaks").await.unwrap();
    tb.teardown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_is_auth_failed() {
    breaks_and_restores(AccessBreak::Revoke, HealthReason::AuthFailed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_key_is_host_key_rejected() {
    breaks_and_restores(AccessBreak::ForeignHostKey, HealthReason::HostKeyRejected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_key_file_is_credentials_unavailable() {
    breaks_and_restores(
        AccessBreak::RemoveCredentials,
        HealthReason::CredentialsUnavailable,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_break_at_once_is_undone_by_one_restore() {
    let f = Kvm2Fixture::default();
    let tb = f.open().await.unwrap();
    let first = f.locations()[0].name.clone();
    let p = tb.provider();
    let rotation = tb.rotation().unwrap();
    for how in AccessBreak::ALL {
        assert!(rotation.break_access(&first, how).await.unwrap());
    }
    let broken = check(p.as_ref()).await;
    assert!(!broken[0].ready, "{:?}", reasons(&broken));
    rotation.restore_access(&first).await.unwrap();
    let after = check(p.as_ref()).await;
    assert!(all_ready(&after), "{:?}", reasons(&after));
    // A restore with nothing broken changes nothing.
    rotation.restore_access(&first).await.unwrap();
    assert!(all_ready(&check(p.as_ref()).await));
    tb.teardown().await.unwrap();
}

/// `Faults::cause` for each of kvm2's declared reasons: the first host reports it,
/// the other stays ready, and after `undo_cause` the same provider finds both ready
/// and the instance made before the cause whole again (its volumes came back with
/// the pool's directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_declared_reason_is_caused_and_undone() {
    let f = Kvm2Fixture::default();
    let tb = f.open().await.unwrap();
    let locations = f.locations();
    let first = locations[0].name.clone();
    let p = tb.provider();
    let faults = tb.faults().unwrap();
    let ctx = Ctx::with_timeout(Duration::from_secs(60));
    let req = tb.request("kvm2-cause", "kvm2-causes", &locations[0]);
    let id = p.create(&ctx, &req).await.unwrap();
    assert!(!faults.cause(&first, "ContainerMissing").await.unwrap());
    let declared = p.checker().unwrap().extra_reasons();
    assert_eq!(declared, ["PoolNotFound", "PoolNotActive"]);
    for reason in declared {
        assert!(faults.cause(&first, reason).await.unwrap(), "{reason}");
        let broken = check(p.as_ref()).await;
        assert_eq!(
            reasons(&broken),
            [
                (first.clone(), false, HealthReason::Other((*reason).into())),
                (locations[1].name.clone(), true, HealthReason::Ready),
            ],
            "{reason}"
        );
        faults.undo_cause(&first).await.unwrap();
        let after = check(p.as_ref()).await;
        assert!(all_ready(&after), "{reason}: {:?}", reasons(&after));
        p.get(&ctx, &id).await.unwrap();
    }
    // An undo with nothing to undo changes nothing.
    faults.undo_cause(&first).await.unwrap();
    assert!(all_ready(&check(p.as_ref()).await));
    p.delete(&ctx, &id).await.unwrap();
    let left = tb.inventory().unwrap().resources(&first).await.unwrap();
    assert!(
        left.iter()
            .all(|r| r.instance.as_deref() != Some("kvm2-cause")),
        "{left:?}"
    );
    tb.teardown().await.unwrap();
}
