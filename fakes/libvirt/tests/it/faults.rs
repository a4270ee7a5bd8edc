//! Fault injection, the trace, dial modes and connection gating.

use std::time::Duration;

use libvirt_fake::{CallError, DialMode, FakeLibvirt, Fault, FaultRule, Trigger, VirError};
use libvirt_wire::{ErrorCode, ErrorDomain, Procedure};

use crate::common::{bios_xml, code, message, open, pool_fake};

#[tokio::test]
async fn error_on_a_named_procedure_once_fires_and_reports() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let h = fake.faults().add(
        FaultRule::on(
            Procedure::DomainLookupByName,
            Fault::error(
                ErrorCode::NoDomain,
                ErrorDomain::Qemu,
                "no domain with matching name 'x'",
            ),
        )
        .once(),
    );
    assert!(!h.fired());
    c.get_hostname().await.unwrap();
    assert!(!h.fired(), "other procedures are not hit");
    c.domain_define_xml(&bios_xml("x")).await.unwrap();
    assert_eq!(
        message(c.domain_lookup_by_name("x").await),
        "Domain not found: no domain with matching name 'x'"
    );
    assert!(h.fired());
    c.domain_lookup_by_name("x").await.unwrap();
    assert_eq!(h.fire_count(), 1);
}

#[tokio::test]
async fn kth_call_and_kth_call_of_a_procedure() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let third = fake.faults().add(FaultRule::nth_call(3, Fault::busy()));
    let second_lookup = fake.faults().add(FaultRule::new(
        Trigger::NthCallOf(Procedure::ConnectGetHostname, 2),
        Fault::access_denied(),
    ));
    c.get_lib_version().await.unwrap();
    c.get_hostname().await.unwrap();
    assert_eq!(code(c.get_lib_version().await), ErrorCode::OperationTimeout);
    assert!(third.fired());
    assert_eq!(code(c.get_hostname().await), ErrorCode::AccessDenied);
    assert!(second_lookup.fired());
    c.get_hostname().await.unwrap();
}

#[tokio::test]
async fn scripted_queue_runs_in_order() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let a = fake.faults().push(Fault::busy());
    let pass = fake.faults().push_pass();
    let drop = fake.faults().push(Fault::DropConnection);
    assert_eq!(code(c.get_hostname().await), ErrorCode::OperationTimeout);
    c.get_hostname().await.unwrap();
    assert_eq!(c.get_hostname().await, Err(CallError::Closed));
    assert!(a.fired() && drop.fired() && !pass.fired());
    assert!(c.is_closed());
    assert_eq!(c.get_hostname().await, Err(CallError::Closed));
    let info = fake.trace().connections();
    assert!(info[0].closed);
    // A new dial works.
    let c2 = open(&fake).await;
    c2.get_hostname().await.unwrap();
    assert_eq!(fake.trace().dial_count(), 2);
}

#[tokio::test]
async fn removed_injections_do_not_fire() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let h = fake
        .faults()
        .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::busy()));
    h.remove();
    c.get_hostname().await.unwrap();
    assert!(!h.fired());
}

#[tokio::test(start_paused = true)]
async fn delay_holds_only_its_own_call() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let h = fake.faults().add(
        FaultRule::on(
            Procedure::ConnectGetHostname,
            Fault::Delay(Duration::from_secs(5)),
        )
        .once(),
    );
    let start = tokio::time::Instant::now();
    let slow = tokio::spawn({
        let c = c.clone();
        async move {
            c.get_hostname().await.unwrap();
            tokio::time::Instant::now()
        }
    });
    tokio::task::yield_now().await;
    c.get_lib_version().await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));
    let done = slow.await.unwrap();
    assert!(done - start >= Duration::from_secs(5));
    assert!(h.fired());
}

#[tokio::test(start_paused = true)]
async fn hang_never_answers_until_the_connection_closes() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    fake.faults()
        .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::Hang).once());
    let r = tokio::time::timeout(Duration::from_secs(60), c.get_hostname()).await;
    assert!(r.is_err(), "a hung call does not answer");
    let hung = tokio::spawn({
        let c = c.clone();
        async move { c.get_hostname().await }
    });
    tokio::task::yield_now().await;
    // The rule fired once; this call passes.
    assert!(hung.await.unwrap().is_ok());
    let h2 = fake
        .faults()
        .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::Hang));
    let hung = tokio::spawn({
        let c = c.clone();
        async move { c.get_hostname().await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.close();
    assert_eq!(hung.await.unwrap(), Err(CallError::Closed));
    assert!(h2.fired());
}

#[tokio::test]
async fn seeded_random_faults_repeat_with_the_seed() {
    async fn run(seed: u64) -> Vec<bool> {
        let fake = FakeLibvirt::new();
        let c = open(&fake).await;
        fake.faults().random(
            seed,
            0.3,
            vec![Fault::busy()],
            Some(vec![Procedure::ConnectGetHostname]),
        );
        let mut out = Vec::new();
        for _ in 0..64 {
            out.push(c.get_hostname().await.is_err());
        }
        out
    }
    let a = run(42).await;
    assert_eq!(a, run(42).await);
    assert_ne!(a, run(43).await);
    assert!(a.iter().any(|x| *x) && a.iter().any(|x| !*x));
}

#[tokio::test]
async fn faults_can_be_limited_to_one_connection() {
    let fake = FakeLibvirt::new();
    let a = open(&fake).await;
    let b = open(&fake).await;
    fake.faults()
        .add(FaultRule::new(Trigger::Always, Fault::busy()).on_connection(b.id()));
    a.get_hostname().await.unwrap();
    assert!(b.get_hostname().await.is_err());
}

#[tokio::test]
async fn trace_records_calls_per_connection() {
    let fake = FakeLibvirt::new();
    let a = open(&fake).await;
    let b = open(&fake).await;
    a.get_hostname().await.unwrap();
    b.get_lib_version().await.unwrap();
    let calls = fake.trace().calls();
    let procs: Vec<_> = calls.iter().map(|c| (c.connection, c.procedure)).collect();
    assert_eq!(
        procs,
        vec![
            (1, Procedure::AuthList),
            (1, Procedure::ConnectOpen),
            (2, Procedure::AuthList),
            (2, Procedure::ConnectOpen),
            (1, Procedure::ConnectGetHostname),
            (2, Procedure::ConnectGetLibVersion),
        ]
    );
    assert_eq!(fake.trace().calls_on(a.id()).len(), 3);
    assert_eq!(fake.trace().count(Procedure::ConnectOpen), 2);
    assert_eq!(fake.trace().connections()[1].calls, 3);
}

#[tokio::test(start_paused = true)]
async fn dial_modes() {
    let fake = FakeLibvirt::new();
    fake.set_dial_mode(DialMode::Refuse);
    assert_eq!(fake.connect().err(), Some(CallError::Closed));
    fake.set_dial_mode(DialMode::BlackHole);
    let c = fake.connect().unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), c.auth_list()).await;
    assert!(r.is_err());
    fake.set_dial_mode(DialMode::Accept);
    open(&fake).await;
    assert_eq!(fake.trace().dial_count(), 3);
}

#[tokio::test]
async fn gating_like_libvirtd() {
    let fake = FakeLibvirt::new();
    let c = fake.connect().unwrap();
    assert_eq!(
        message(c.get_hostname().await),
        "internal error: hypervisor connection not open"
    );
    assert_eq!(c.supports_feature(10).await.unwrap(), 1);
    assert!(c.keepalive_requested());
    assert_eq!(
        message(c.auth_polkit().await),
        "Library function returned error but did not set virError",
        "polkit on a socket that does not ask for it"
    );
    c.open(None, 0).await.unwrap();
    assert_eq!(c.get_uri().await.unwrap(), "qemu:///system");
    assert_eq!(
        message(c.open(None, 0).await),
        "internal error: connection already open"
    );
    // The failed open released the hypervisor connection but not the
    // storage one, and a third open succeeds (libvirtd 9.0, measured).
    assert_eq!(
        message(c.get_uri().await),
        "internal error: hypervisor connection not open"
    );
    assert_eq!(
        message(c.domain_lookup_by_name("x").await),
        "internal error: hypervisor connection not open"
    );
    assert_eq!(c.list_all_storage_pools(0).await.unwrap(), vec![]);
    c.open(None, 0).await.unwrap();
    assert_eq!(c.get_uri().await.unwrap(), "qemu:///system");
    c.connect_close().await.unwrap();
    assert!(c.is_closed());

    let polkit = FakeLibvirt::new();
    polkit.update_host_config(|h| h.auth_types = vec![2]);
    let c = polkit.connect().unwrap();
    assert_eq!(c.auth_list().await.unwrap(), vec![2]);
    assert_eq!(code(c.open(None, 0).await), ErrorCode::Rpc);
    assert_eq!(c.auth_polkit().await.unwrap(), 1);
    c.open(Some("qemu:///system"), 0).await.unwrap();
}

#[tokio::test]
async fn stream_error_mid_upload_keeps_the_bytes_before() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(
            &pool,
            "<volume><name>v</name><capacity>100</capacity></volume>",
            0,
        )
        .await
        .unwrap();
    let h = fake.faults().stream_error_after(
        5,
        VirError::new(
            ErrorCode::InternalError,
            ErrorDomain::Streams,
            "write failed",
        ),
    );
    let mut up = c.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
    up.send(b"abc").unwrap();
    assert_eq!(code(up.send(b"defg").map(|_| ())), ErrorCode::InternalError);
    assert!(h.fired());
    let v = fake.volume("default", "v").unwrap();
    assert_eq!(v.content.bytes(), Some(&b"abcde"[..]));
}

#[tokio::test]
async fn faults_can_be_bound_to_one_object() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let a = c.domain_define_xml(&bios_xml("a")).await.unwrap();
    let b = c.domain_define_xml(&bios_xml("b")).await.unwrap();
    let h = fake
        .faults()
        .add(FaultRule::on(Procedure::DomainGetXmlDesc, Fault::busy()).on_object("b"));
    c.domain_get_xml_desc(&a, 0).await.unwrap();
    assert_eq!(
        code(c.domain_get_xml_desc(&b, 0).await),
        ErrorCode::OperationTimeout
    );
    assert_eq!(h.fire_count(), 1);
}

#[tokio::test]
async fn a_volume_create_is_bound_to_the_volume_it_names() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let h = fake
        .faults()
        .add(FaultRule::on(Procedure::StorageVolCreateXml, Fault::busy()).on_object("second"));
    let xml = |n: &str| format!("<volume><name>{n}</name><capacity>100</capacity></volume>");
    c.storage_vol_create_xml(&pool, &xml("first"), 0)
        .await
        .unwrap();
    assert_eq!(
        code(c.storage_vol_create_xml(&pool, &xml("second"), 0).await),
        ErrorCode::OperationTimeout
    );
    assert_eq!(h.fire_count(), 1);
    assert!(fake.volume("default", "second").is_none());
    // The pool's name still binds every create in it.
    let p = fake
        .faults()
        .add(FaultRule::on(Procedure::StorageVolCreateXml, Fault::busy()).on_object("default"));
    assert_eq!(
        code(c.storage_vol_create_xml(&pool, &xml("third"), 0).await),
        ErrorCode::OperationTimeout
    );
    assert_eq!(p.fire_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn host_latency_is_paid_once_per_call_and_overlaps() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    fake.set_latency(Duration::from_millis(200));
    let start = tokio::time::Instant::now();
    c.get_hostname().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    let start = tokio::time::Instant::now();
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.get_lib_version().await })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(start.elapsed(), Duration::from_millis(200), "calls overlap");
    // An injected error also travels back.
    fake.faults().push(Fault::busy());
    let start = tokio::time::Instant::now();
    assert!(c.get_hostname().await.is_err());
    assert_eq!(start.elapsed(), Duration::from_millis(200));
}

#[tokio::test]
async fn not_found_helpers_carry_the_real_texts() {
    let fake = pool_fake();
    let c = open(&fake).await;
    fake.faults().push(Fault::no_storage_pool("default"));
    fake.faults().push(Fault::no_storage_vol("base"));
    fake.faults().push(Fault::no_domain("vm"));
    assert_eq!(code(c.get_hostname().await), ErrorCode::NoStoragePool);
    assert_eq!(
        message(c.get_hostname().await),
        "Storage volume not found: no storage vol with matching name 'base'"
    );
    assert_eq!(code(c.get_hostname().await), ErrorCode::NoDomain);
}

#[tokio::test]
async fn a_lost_reply_runs_the_call_then_closes_the_connection() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let lost = fake.faults().push(Fault::LoseReply);
    assert_eq!(
        c.domain_define_xml(&bios_xml("kept")).await.map(|_| ()),
        Err(CallError::Closed)
    );
    assert!(lost.fired() && c.is_closed() && c.was_dropped());
    // The domain was defined although its caller never heard so.
    assert!(fake.domain("kept").is_some());
    let traced = fake.trace().calls().last().and_then(|t| t.fault.clone());
    assert_eq!(traced.as_deref(), Some("lose-reply"));
}
