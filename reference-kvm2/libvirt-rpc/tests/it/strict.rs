//! Strict replies: a reply that answers no call in flight and no recently
//! abandoned call is a protocol violation that fails every call in flight at
//! once and closes the connection; late replies to abandoned calls are
//! discarded without disturbing anything.

use std::time::Duration;

use futures_util::FutureExt;
use libvirt_rpc::{Client, Error};
use libvirt_wire::{
    CallArgs, ConnectGetHostnameRet, DomainLookupByNameRet, Header, MessageType, Procedure, Status,
};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::server::{Server, domain, pair, quiet};

/// Well under a second: a violation fails calls at once, not at their deadline.
const PROMPT: Duration = Duration::from_millis(500);

/// Starts a hostname lookup of `name` and returns it with when it started.
fn lookup(client: &Client, name: &str) -> JoinHandle<(Result<String, Error>, Duration)> {
    let client = client.clone();
    let name = name.to_owned();
    tokio::spawn(async move {
        let started = Instant::now();
        let r = client.domain_lookup_by_name(&name).await;
        (r.map(|d| d.name), started.elapsed())
    })
}

/// Receives `n` lookups and returns their headers in the order of `names`.
async fn recv_lookups(server: &mut Server, names: &[&str]) -> Vec<Header> {
    let mut got = Vec::new();
    for _ in names {
        let (h, args) = server.recv_call().await;
        let CallArgs::DomainLookupByName(a) = args else {
            panic!("unexpected call {args:?}");
        };
        got.push((a.name, h));
    }
    names
        .iter()
        .map(|n| got.iter().find(|(name, _)| name == n).expect("call seen").1)
        .collect()
}

async fn reply_lookup(server: &mut Server, h: &Header, name: &str) {
    server
        .reply(h, &DomainLookupByNameRet { dom: domain(name) })
        .await;
}

/// A reply frame header claiming to answer `serial` of a hostname call.
fn hostname_reply_header(serial: u32) -> Header {
    Header::call(Procedure::ConnectGetHostname, serial).reply(Status::Ok)
}

/// Asserts that `err` is the violation described by `expected`, seen by a
/// call in flight (`closed`) or by the connection task itself.
fn assert_violation(err: &Error, expected: &str) {
    assert!(err.is_protocol(), "{err}");
    assert!(err.is_closed(), "{err}");
    assert!(err.to_string().contains(expected), "{err}");
}

/// Every call in `calls` fails promptly with the violation, the connection
/// task ends with it, and the handle reports the connection closed (which
/// is what makes kvm2 dial a new one).
async fn assert_all_failed(
    client: &Client,
    task: JoinHandle<libvirt_rpc::Result<()>>,
    calls: Vec<JoinHandle<(Result<String, Error>, Duration)>>,
    expected: &str,
) {
    let err = task.await.unwrap().unwrap_err();
    assert_violation(&err, expected);
    for call in calls {
        let (result, elapsed) = call.await.unwrap();
        let err = result.unwrap_err();
        assert_violation(&err, expected);
        assert!(elapsed < PROMPT + Duration::from_millis(500), "{elapsed:?}");
    }
    assert!(client.is_closed());
    let next = client.connect_get_hostname().await.unwrap_err();
    assert!(next.is_closed(), "{next}");
}

#[tokio::test]
async fn reply_to_a_serial_never_issued_fails_every_call_at_once() {
    let (client, task, mut server) = pair(quiet());
    let names = ["a", "b", "c"];
    let calls: Vec<_> = names.iter().map(|n| lookup(&client, n)).collect();
    let headers = recv_lookups(&mut server, &names).await;
    let highest = headers.iter().map(|h| h.serial).max().unwrap();
    assert_eq!(highest, 3);

    let sent = Instant::now();
    server
        .send_packet(&hostname_reply_header(highest + 1000), &())
        .await;
    let expected = format!("reply to serial {}", highest + 1000);
    let err = task.await.unwrap().unwrap_err();
    assert_violation(&err, &expected);
    assert_violation(&err, "above the highest serial sent (3)");
    for call in calls {
        let (result, _) = call.await.unwrap();
        assert_violation(&result.unwrap_err(), "above the highest serial sent (3)");
    }
    // The default deadline is 30 s; the calls failed as soon as the reply came.
    let waited = sent.elapsed();
    assert!(waited < PROMPT, "calls failed after {waited:?}");
    assert!(client.is_closed());
}

#[tokio::test]
async fn reply_before_any_call_was_sent() {
    let (client, task, mut server) = pair(quiet());
    server.send_packet(&hostname_reply_header(1), &()).await;
    let err = task.await.unwrap().unwrap_err();
    assert_violation(&err, "reply to serial 1");
    assert_violation(&err, "before any call was sent");
    assert!(client.is_closed());
}

#[tokio::test]
async fn second_reply_to_an_answered_call() {
    let (client, task, mut server) = pair(quiet());
    let first = lookup(&client, "first");
    let [h1] = recv_lookups(&mut server, &["first"]).await[..] else {
        unreachable!()
    };
    reply_lookup(&mut server, &h1, "first").await;
    assert_eq!(first.await.unwrap().0.unwrap(), "first");

    let other = lookup(&client, "other");
    recv_lookups(&mut server, &["other"]).await;
    reply_lookup(&mut server, &h1, "first").await;
    let expected = format!(
        "reply to serial {} (procedure 23): a second reply to a call already answered",
        h1.serial
    );
    assert_all_failed(&client, task, vec![other], &expected).await;
}

#[tokio::test]
async fn second_late_reply_to_an_abandoned_call() {
    let (client, task, mut server) = pair(quiet());
    let slow = lookup(&client.with_timeout(Duration::from_millis(50)), "slow");
    let [h] = recv_lookups(&mut server, &["slow"]).await[..] else {
        unreachable!()
    };
    assert!(slow.await.unwrap().0.unwrap_err().is_timeout());

    // The first late reply is discarded; a call made since still works.
    let other = lookup(&client, "other");
    let [ho] = recv_lookups(&mut server, &["other"]).await[..] else {
        unreachable!()
    };
    reply_lookup(&mut server, &h, "slow").await;
    reply_lookup(&mut server, &ho, "other").await;
    assert_eq!(other.await.unwrap().0.unwrap(), "other");

    // A second one is a violation.
    let pending = lookup(&client, "pending");
    recv_lookups(&mut server, &["pending"]).await;
    reply_lookup(&mut server, &h, "slow").await;
    let expected = format!(
        "reply to serial {} (procedure 23): a second reply to a call already answered",
        h.serial
    );
    assert_all_failed(&client, task, vec![pending], &expected).await;
}

#[tokio::test]
async fn reply_to_a_serial_sent_but_never_written() {
    let (client, task, mut server) = pair(quiet());
    // Polled once, then dropped: serial 1 is taken but the connection skips
    // the call, so the server never sees it.
    assert!(client.connect_get_hostname().now_or_never().is_none());
    let call = lookup(&client, "real");
    let [h] = recv_lookups(&mut server, &["real"]).await[..] else {
        unreachable!()
    };
    assert_eq!(h.serial, 2, "the dropped call took serial 1");
    server.send_packet(&hostname_reply_header(1), &()).await;
    assert_all_failed(
        &client,
        task,
        vec![call],
        "reply to serial 1 (procedure 59): neither in flight nor recently abandoned",
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn abandoned_calls_are_remembered_up_to_a_bound() {
    const N: usize = 4097;
    let (client, task, mut server) = pair(quiet());
    let short = client.with_timeout(Duration::from_millis(10));
    let calls: Vec<_> = (0..N)
        .map(|i| {
            let c = short.clone();
            tokio::spawn(async move { c.domain_lookup_by_name(&format!("vm-{i}")).await })
        })
        .collect();
    let mut serials = Vec::new();
    for _ in 0..N {
        let (h, _) = server.recv_call().await;
        serials.push(h.serial);
    }
    for call in calls {
        assert!(call.await.unwrap().unwrap_err().is_timeout());
    }
    // A round trip behind the cancellations: they have all been taken.
    let probe = lookup(&client, "probe");
    let [hp] = recv_lookups(&mut server, &["probe"]).await[..] else {
        unreachable!()
    };
    reply_lookup(&mut server, &hp, "probe").await;
    assert_eq!(probe.await.unwrap().0.unwrap(), "probe");

    // The newest abandoned call's late reply is discarded quietly.
    serials.sort_unstable();
    let newest = *serials.last().unwrap();
    let oldest = serials[0];
    server
        .send_packet(
            &Header::call(Procedure::DomainLookupByName, newest).reply(Status::Ok),
            &DomainLookupByNameRet {
                dom: domain("late"),
            },
        )
        .await;
    let still = lookup(&client, "still");
    let [hs] = recv_lookups(&mut server, &["still"]).await[..] else {
        unreachable!()
    };
    reply_lookup(&mut server, &hs, "still").await;
    assert_eq!(still.await.unwrap().0.unwrap(), "still");
    assert!(!task.is_finished());

    // The oldest fell out of the last 4,096: its reply is a violation.
    let waiting = lookup(&client, "waiting");
    recv_lookups(&mut server, &["waiting"]).await;
    server
        .send_packet(
            &Header::call(Procedure::DomainLookupByName, oldest).reply(Status::Ok),
            &DomainLookupByNameRet {
                dom: domain("late"),
            },
        )
        .await;
    let expected = format!("reply to serial {oldest} (procedure 23): neither in flight");
    assert_all_failed(&client, task, vec![waiting], &expected).await;
}

#[tokio::test]
async fn late_replies_to_abandoned_calls_do_not_disturb_others() {
    let (client, task, mut server) = pair(quiet());
    let timed_out = lookup(&client.with_timeout(Duration::from_millis(50)), "timed-out");
    let dropped = lookup(&client, "dropped");
    let kept = lookup(&client, "kept");
    let h = recv_lookups(&mut server, &["timed-out", "dropped", "kept"]).await;
    assert!(timed_out.await.unwrap().0.unwrap_err().is_timeout());
    dropped.abort();
    assert!(dropped.await.unwrap_err().is_cancelled());

    // Both late replies come first, an error reply among them; the call
    // still in flight is answered after them and the connection carries on.
    reply_lookup(&mut server, &h[0], "timed-out").await;
    server
        .reply_error(
            &h[1],
            &libvirt_wire::RemoteError::new(
                libvirt_wire::ErrorCode::NoDomain,
                libvirt_wire::ErrorDomain::Qemu,
                "no domain",
            ),
        )
        .await;
    reply_lookup(&mut server, &h[2], "kept").await;
    assert_eq!(kept.await.unwrap().0.unwrap(), "kept");

    let host = tokio::spawn({
        let client = client.clone();
        async move { client.connect_get_hostname().await }
    });
    let (hh, _) = server.recv_call().await;
    assert_eq!(hh.kind, MessageType::Call);
    server
        .reply(
            &hh,
            &ConnectGetHostnameRet {
                hostname: "host".into(),
            },
        )
        .await;
    assert_eq!(host.await.unwrap().unwrap(), "host");
    assert!(!task.is_finished());
    assert!(!client.is_closed());
}
