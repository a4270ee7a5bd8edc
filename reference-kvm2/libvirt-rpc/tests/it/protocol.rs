//! Protocol violations close the connection with a clear error.

use bytes::Bytes;
use libvirt_wire::{Header, MessageType, Procedure, Status};

use crate::server::{pair, quiet};

async fn violation_closes(frame: Bytes, expected: &str) {
    let (client, task, mut server) = pair(quiet());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.connect_get_hostname().await }
    });
    server.recv_call().await;
    server.send_frame(frame).await;

    let err = task.await.unwrap().unwrap_err();
    assert!(err.is_protocol(), "{err}");
    assert!(err.is_closed());
    assert!(err.to_string().contains(expected), "{err}");

    let call_err = call.await.unwrap().unwrap_err();
    assert!(call_err.is_closed(), "{call_err}");
    assert!(call_err.is_protocol(), "{call_err}");
    assert!(call_err.to_string().contains(expected), "{call_err}");

    assert!(client.is_closed());
    assert!(client.connect_get_hostname().await.unwrap_err().is_closed());
}

fn header_frame(h: Header) -> Bytes {
    let mut buf = bytes::BytesMut::new();
    libvirt_wire::encode_packet(&mut buf, &h, &()).unwrap();
    buf.freeze()
}

#[tokio::test]
async fn unknown_program() {
    let mut h = Header::call(Procedure::ConnectGetHostname, 1).reply(Status::Ok);
    h.program = 0x1234_5678;
    violation_closes(header_frame(h), "unknown program 0x12345678").await;
}

#[tokio::test]
async fn oversize_length() {
    violation_closes(
        Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]),
        "exceeds the maximum",
    )
    .await;
}

#[tokio::test]
async fn undersize_length() {
    violation_closes(Bytes::from_static(&[0, 0, 0, 8]), "below the minimum").await;
}

#[tokio::test]
async fn call_from_the_server() {
    let h = Header::call(Procedure::ConnectGetHostname, 9);
    violation_closes(header_frame(h), "unexpected packet type").await;
}

#[tokio::test]
async fn reply_naming_another_procedure() {
    // Serial 1 is the hostname call, but the reply claims AUTH_LIST.
    let mut h = Header::call(Procedure::AuthList, 1).reply(Status::Ok);
    h.kind = MessageType::Reply;
    violation_closes(header_frame(h), "names procedure 66").await;
}

#[tokio::test]
async fn undecodable_reply_fails_only_its_call() {
    let (client, task, mut server) = pair(quiet());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.connect_get_hostname().await }
    });
    let (h, _) = server.recv_call().await;
    // A hostname reply with no string in it.
    server.reply(&h, &()).await;
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_protocol(), "{err}");
    assert!(!err.is_closed(), "{err}");
    assert!(!task.is_finished());
}
