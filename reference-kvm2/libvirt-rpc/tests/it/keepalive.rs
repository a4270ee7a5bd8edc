//! Keepalive: the server's PINGs are answered, the client PINGs a silent
//! server, and a server that never answers is declared dead.

use std::time::Duration;

use libvirt_rpc::{Config, Keepalive};
use libvirt_wire::{Header, KEEPALIVE_PING, KEEPALIVE_PONG, MessageType};

use crate::server::{pair, quiet};

fn fast(count: u32) -> Config {
    Config {
        keepalive: Some(Keepalive {
            interval: Duration::from_millis(50),
            count,
        }),
        ..Config::default()
    }
}

#[tokio::test]
async fn server_pings_are_answered() {
    let (_client, _task, mut server) = pair(quiet());
    for _ in 0..3 {
        server
            .send_packet(&Header::keepalive(KEEPALIVE_PING), &())
            .await;
        let p = server.recv().await;
        assert_eq!(p.header, Header::keepalive(KEEPALIVE_PONG));
        assert!(p.payload.is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn silent_server_gets_pinged_and_answers_keep_it_alive() {
    let (client, task, mut server) = pair(fast(2));
    // Answer ten PINGs: the connection stays up far past count * interval.
    for _ in 0..10 {
        let p = server.recv().await;
        assert!(p.header.is_ping(), "{:?}", p.header);
        assert_eq!(p.header.kind, MessageType::Message);
        server
            .send_packet(&Header::keepalive(KEEPALIVE_PONG), &())
            .await;
    }
    assert!(!task.is_finished());
    assert!(!client.is_closed());
}

#[tokio::test(start_paused = true)]
async fn unanswered_pings_close_the_connection() {
    let (client, task, mut server) = pair(fast(3));
    let call = tokio::spawn({
        let client = client.with_timeout(Duration::from_secs(3600));
        async move { client.connect_get_hostname().await }
    });
    // The call arrives, then only PINGs, none answered.
    let (_h, _) = server.recv_call().await;
    let mut pings = 0;
    while let Some(p) = server.maybe_recv(Duration::from_secs(1)).await {
        assert!(p.header.is_ping());
        pings += 1;
    }
    assert_eq!(pings, 3);

    let err = task.await.unwrap().unwrap_err();
    assert!(err.is_keepalive_timeout(), "{err}");
    assert!(err.is_closed());

    let call_err = call.await.unwrap().unwrap_err();
    assert!(call_err.is_closed(), "{call_err}");
    assert!(call_err.is_keepalive_timeout(), "{call_err}");
    assert!(client.is_closed());
}

#[tokio::test(start_paused = true)]
async fn any_packet_counts_as_a_sign_of_life() {
    let (client, task, mut server) = pair(fast(1));
    // The server never answers PINGs but keeps sending its own.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(40)).await;
        server
            .send_packet(&Header::keepalive(KEEPALIVE_PING), &())
            .await;
    }
    assert!(!task.is_finished());
    assert!(!client.is_closed());
}

#[test]
fn attaching_needs_no_runtime() {
    let (stream, _server_end) = tokio::io::duplex(64);
    let (client, connection) = fast(1).attach(stream);
    assert!(!client.is_closed());
    drop(connection);
    assert!(client.is_closed());
}
