//! Plain calls: typed round trips, remote errors, out-of-order replies,
//! pipelining, deadlines with late replies, draining.

use std::time::Duration;

use futures_util::future::join_all;
use libvirt_wire::{CallArgs, DomainLookupByNameRet, ErrorCode, ErrorDomain, Header, RemoteError};

use crate::server::{PATIENCE, domain, pair, quiet};

#[tokio::test]
async fn typed_call_round_trip() {
    let (client, _task, mut server) = pair(quiet());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.domain_lookup_by_name("vm-1").await }
    });
    let (h, args) = server.recv_call().await;
    let CallArgs::DomainLookupByName(args) = args else {
        panic!("unexpected call {args:?}");
    };
    assert_eq!(args.name, "vm-1");
    server
        .reply(
            &h,
            &DomainLookupByNameRet {
                dom: domain("vm-1"),
            },
        )
        .await;
    assert_eq!(call.await.unwrap().unwrap(), domain("vm-1"));
}

/// `connect_get_version` sends procedure 4 with no arguments and returns the
/// hypervisor's version as the server encoded it.
#[tokio::test]
async fn connect_get_version_returns_the_hypervisor_version() {
    let (client, _task, mut server) = pair(quiet());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.connect_get_version().await }
    });
    let (h, args) = server.recv_call().await;
    assert_eq!(args, CallArgs::ConnectGetVersion(()));
    assert_eq!(h.procedure, 4);
    server
        .reply(
            &h,
            &libvirt_wire::ConnectGetVersionRet { hv_ver: 10_000_002 },
        )
        .await;
    assert_eq!(call.await.unwrap().unwrap(), 10_000_002);
}

#[tokio::test]
async fn remote_errors_fail_only_their_call() {
    let (client, _task, mut server) = pair(quiet());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.domain_lookup_by_name("ghost").await }
    });
    let (h, _) = server.recv_call().await;
    let sent = RemoteError::new(
        ErrorCode::NoDomain,
        ErrorDomain::Qemu,
        "Domain not found: no domain with matching name 'ghost'",
    );
    server.reply_error(&h, &sent).await;
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_remote(), "{err}");
    assert!(!err.is_closed());
    assert_eq!(err.as_remote().unwrap().code, ErrorCode::NoDomain);
    assert_eq!(err.as_remote(), Some(&sent));
    assert!(err.to_string().contains("no domain with matching name"));
    // Walking the source chain prints libvirt's message once, not twice.
    assert_eq!(
        chain(&err).matches("no domain with matching name").count(),
        1,
        "{}",
        chain(&err)
    );

    // The connection is still usable.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.connect_get_hostname().await }
    });
    let (h, _) = server.recv_call().await;
    server
        .reply(
            &h,
            &libvirt_wire::ConnectGetHostnameRet {
                hostname: "host".into(),
            },
        )
        .await;
    assert_eq!(call.await.unwrap().unwrap(), "host");
}

#[tokio::test]
async fn replies_are_routed_by_serial_in_any_order() {
    let (client, _task, mut server) = pair(quiet());
    let names = ["a", "b", "c", "d"];
    let calls: Vec<_> = names
        .iter()
        .map(|n| {
            let client = client.clone();
            let n = n.to_string();
            tokio::spawn(async move { client.domain_lookup_by_name(&n).await })
        })
        .collect();
    let mut received: Vec<(Header, String)> = Vec::new();
    for _ in names {
        let (h, args) = server.recv_call().await;
        let CallArgs::DomainLookupByName(a) = args else {
            panic!()
        };
        received.push((h, a.name));
    }
    // Answer in reverse order of arrival.
    for (h, name) in received.iter().rev() {
        server
            .reply(h, &DomainLookupByNameRet { dom: domain(name) })
            .await;
    }
    for (call, name) in calls.into_iter().zip(names) {
        assert_eq!(call.await.unwrap().unwrap().name, name);
    }
}

#[tokio::test]
async fn sixty_four_calls_are_pipelined() {
    let (client, _task, mut server) = pair(quiet());
    let calls = join_all((0..64).map(|i| {
        let client = client.clone();
        async move { client.domain_lookup_by_name(&format!("vm-{i}")).await }
    }));
    let serve = async {
        // Every call is on the wire before any reply is sent.
        let mut received = Vec::new();
        for _ in 0..64 {
            let (h, args) = server.recv_call().await;
            let CallArgs::DomainLookupByName(a) = args else {
                panic!()
            };
            received.push((h, a.name));
        }
        // Interleave the answers: odd positions first, then even ones.
        let (odd, even): (Vec<_>, Vec<_>) = received
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 1);
        for (_, (h, name)) in odd.into_iter().chain(even) {
            server
                .reply(&h, &DomainLookupByNameRet { dom: domain(&name) })
                .await;
        }
    };
    let (results, ()) = tokio::time::timeout(PATIENCE, futures_util::future::join(calls, serve))
        .await
        .expect("pipelined calls hung");
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.unwrap().name, format!("vm-{i}"));
    }
}

#[tokio::test]
async fn a_timed_out_call_does_not_disturb_others() {
    let (client, task, mut server) = pair(quiet());
    let slow = tokio::spawn({
        let client = client.with_timeout(Duration::from_millis(100));
        async move {
            let started = tokio::time::Instant::now();
            let r = client.domain_lookup_by_name("slow").await;
            (r, started.elapsed())
        }
    });
    let other = tokio::spawn({
        let client = client.clone();
        async move { client.domain_lookup_by_name("other").await }
    });
    let (h1, a1) = server.recv_call().await;
    let (h2, a2) = server.recv_call().await;
    let (slow_h, other_h) = match (a1, a2) {
        (CallArgs::DomainLookupByName(a), _) if a.name == "slow" => (h1, h2),
        _ => (h2, h1),
    };

    let (result, elapsed) = slow.await.unwrap();
    let err = result.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(!err.is_closed());
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");

    // The late reply arrives and is discarded; the other call still succeeds.
    server
        .reply(
            &slow_h,
            &DomainLookupByNameRet {
                dom: domain("slow"),
            },
        )
        .await;
    server
        .reply(
            &other_h,
            &DomainLookupByNameRet {
                dom: domain("other"),
            },
        )
        .await;
    assert_eq!(other.await.unwrap().unwrap().name, "other");

    // And a fresh call works too.
    let fresh = tokio::spawn({
        let client = client.clone();
        async move { client.connect_get_lib_version().await }
    });
    let (h, _) = server.recv_call().await;
    server
        .reply(
            &h,
            &libvirt_wire::ConnectGetLibVersionRet {
                lib_ver: 10_000_000,
            },
        )
        .await;
    assert_eq!(fresh.await.unwrap().unwrap(), 10_000_000);
    assert!(!client.is_closed());
    assert!(!task.is_finished());
}

#[tokio::test]
async fn dropping_every_client_drains_calls_in_flight() {
    let (client, task, mut server) = pair(quiet());
    let call = tokio::spawn(async move { client.domain_lookup_by_name("vm").await });
    let (h, _) = server.recv_call().await;
    // The only client handle now lives inside the pending call; the
    // connection must still deliver the reply before ending.
    server
        .reply(&h, &DomainLookupByNameRet { dom: domain("vm") })
        .await;
    assert_eq!(call.await.unwrap().unwrap().name, "vm");
    let ended = tokio::time::timeout(PATIENCE, task)
        .await
        .expect("no drain");
    ended.unwrap().unwrap();
    // The connection shut its side down.
    assert!(server.next().await.is_none());
}

#[tokio::test]
async fn server_hanging_up_fails_calls_in_flight() {
    let (client, task, mut server) = pair(quiet());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.domain_lookup_by_name("vm").await }
    });
    server.recv_call().await;
    drop(server);
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_closed(), "{err}");
    let conn_err = task.await.unwrap().unwrap_err();
    assert!(conn_err.is_closed(), "{conn_err}");
    let again = client.connect_get_hostname().await.unwrap_err();
    assert!(again.is_closed(), "{again}");
    assert!(client.is_closed());
}

#[tokio::test]
async fn server_closing_an_idle_connection_is_clean() {
    let (client, task, server) = pair(quiet());
    drop(server);
    task.await.unwrap().unwrap();
    assert!(client.is_closed());
    assert!(client.connect_get_hostname().await.unwrap_err().is_closed());
}

#[test]
fn handles_and_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    fn assert_sync<T: Sync>() {}
    assert_sync::<libvirt_rpc::Client>();
    assert_sync::<libvirt_rpc::Error>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let (stream, _server_end) = tokio::io::duplex(64);
    let (client, connection) = quiet().attach(stream);
    assert_send(&connection);
    assert_send(&client.domain_lookup_by_name("x"));
    let vol = libvirt_wire::StorageVol::default();
    assert_send(&client.storage_vol_upload(&vol, 0, 0, 0));
    let upload_of_reader = |u: libvirt_rpc::Upload| async move { u.send_reader(&b"abc"[..]).await };
    fn assert_send_fn<F: FnOnce(libvirt_rpc::Upload) -> Fut, Fut: Send>(_: F) {}
    assert_send_fn(upload_of_reader);
}

#[tokio::test]
async fn open_authenticates_with_polkit_then_opens() {
    let (client, _task, mut server) = pair(quiet());
    let opening = tokio::spawn({
        let client = client.clone();
        async move { client.open("qemu:///system").await }
    });
    let (h, args) = server.recv_call().await;
    assert_eq!(args, CallArgs::AuthList(()));
    server
        .reply(
            &h,
            &libvirt_wire::AuthListRet {
                types: vec![libvirt_wire::AuthType::Polkit],
            },
        )
        .await;
    let (h, args) = server.recv_call().await;
    assert_eq!(args, CallArgs::AuthPolkit(()));
    server
        .reply(&h, &libvirt_wire::AuthPolkitRet { complete: 1 })
        .await;
    let (h, args) = server.recv_call().await;
    let CallArgs::ConnectOpen(open) = args else {
        panic!("unexpected call {args:?}")
    };
    assert_eq!(open.name.as_deref(), Some("qemu:///system"));
    assert_eq!(open.flags, 0);
    server.reply(&h, &()).await;
    opening.await.unwrap().unwrap();
}

#[tokio::test]
async fn server_events_reach_the_events_channel() {
    let (stream, server_end) = tokio::io::duplex(1 << 16);
    let (client, mut connection) = quiet().attach(stream);
    let mut events = connection.events(4);
    let _task = tokio::spawn(connection);
    let mut server = tokio_util::codec::Framed::new(server_end, libvirt_rpc::PacketCodec);
    // An event: type MESSAGE, serial 1, some procedure of the remote program.
    let mut h = Header::call(libvirt_wire::Procedure::Other(318), 1);
    h.kind = libvirt_wire::MessageType::Message;
    let mut buf = bytes::BytesMut::new();
    libvirt_wire::encode_packet(&mut buf, &h, &7u32).unwrap();
    futures_util::SinkExt::send(&mut server, buf.freeze())
        .await
        .unwrap();
    let event = tokio::time::timeout(PATIENCE, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.header, h);
    assert_eq!(event.decode_payload::<u32>().unwrap(), 7);
    assert!(!client.is_closed());
}

/// A small deterministic generator, so the test needs no extra dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

#[tokio::test(start_paused = true)]
async fn randomized_mixture_of_answers_timeouts_and_abandoned_calls() {
    for seed in 1..=16u64 {
        let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (client, task, mut server) = pair(quiet());
        let n = 12 + rng.next(20) as usize;
        // 0: answered in time; 1: times out, answered late; 2: dropped by the caller.
        let fates: Vec<u64> = (0..n).map(|_| rng.next(3)).collect();
        let mut handles = Vec::new();
        for (i, fate) in fates.iter().enumerate() {
            let timeout = if *fate == 1 {
                Duration::from_millis(20)
            } else {
                Duration::from_secs(60)
            };
            let client = client.with_timeout(timeout);
            let name = format!("vm-{i}");
            let call = tokio::spawn(async move { client.domain_lookup_by_name(&name).await });
            handles.push(call);
        }
        // Let every call reach the server.
        let mut received = Vec::new();
        for _ in 0..n {
            let (h, args) = server.recv_call().await;
            let CallArgs::DomainLookupByName(a) = args else {
                panic!()
            };
            received.push((h, a.name));
        }
        for (i, fate) in fates.iter().enumerate() {
            if *fate == 2 {
                handles[i].abort();
            }
        }
        // Past every short deadline, answer everything in a shuffled order.
        tokio::time::sleep(Duration::from_millis(100)).await;
        for i in (1..received.len()).rev() {
            let j = rng.next(i as u64 + 1) as usize;
            received.swap(i, j);
        }
        for (h, name) in &received {
            server
                .reply(h, &DomainLookupByNameRet { dom: domain(name) })
                .await;
        }
        for (i, (call, fate)) in handles.into_iter().zip(&fates).enumerate() {
            match (fate, call.await) {
                (0, Ok(r)) => assert_eq!(r.unwrap().name, format!("vm-{i}"), "seed {seed}"),
                (1, Ok(r)) => assert!(r.unwrap_err().is_timeout(), "seed {seed}"),
                (2, Err(e)) => assert!(e.is_cancelled(), "seed {seed}"),
                (2, Ok(_)) => {} // finished before the abort landed
                (f, other) => panic!("seed {seed}: call {i} with fate {f} gave {other:?}"),
            }
        }
        // The connection is intact.
        let fresh = tokio::spawn({
            let client = client.clone();
            async move { client.domain_lookup_by_name("fresh").await }
        });
        let (h, _) = server.recv_call().await;
        server
            .reply(
                &h,
                &DomainLookupByNameRet {
                    dom: domain("fresh"),
                },
            )
            .await;
        assert_eq!(fresh.await.unwrap().unwrap().name, "fresh", "seed {seed}");
        assert!(!task.is_finished(), "seed {seed}");
    }
}

/// An error and every source below it, joined as a report would join them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}
