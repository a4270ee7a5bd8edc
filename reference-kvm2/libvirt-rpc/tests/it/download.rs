//! Volume download streams: the data in CONTINUE packets, the empty one
//! that ends it, the finish and its confirmation; a server error in the
//! middle; abort on drop.

use bytes::{Bytes, BytesMut};
use libvirt_rpc::{Client, Download};
use libvirt_wire::{
    CallArgs, ErrorCode, ErrorDomain, Header, MessageType, RemoteError, Status, StorageVol,
    encode_raw,
};

use crate::server::{Server, pair, quiet};

fn vol() -> StorageVol {
    StorageVol {
        pool: "default".into(),
        name: "disk.img".into(),
        key: "/var/lib/libvirt/images/disk.img".into(),
    }
}

async fn open(client: &Client, server: &mut Server) -> (Download, Header) {
    let opening = tokio::spawn({
        let client = client.clone();
        async move { client.storage_vol_download(&vol(), 0, 0, 0).await }
    });
    let (h, args) = server.recv_call().await;
    let CallArgs::StorageVolDownload(args) = args else {
        panic!("unexpected call {args:?}")
    };
    assert_eq!(args.vol, vol());
    server.reply(&h, &()).await;
    (opening.await.unwrap().unwrap(), h)
}

async fn send_data(server: &mut Server, call: &Header, data: &[u8]) {
    let mut out = BytesMut::new();
    encode_raw(&mut out, &call.stream(Status::Continue), data).unwrap();
    server.send_frame(out.freeze()).await;
}

#[tokio::test]
async fn the_data_then_the_finish_and_its_confirmation() {
    let (client, _conn, mut server) = pair(quiet());
    let (download, h) = open(&client, &mut server).await;
    let reading = tokio::spawn(download.read_all());
    send_data(&mut server, &h, b"hello ").await;
    send_data(&mut server, &h, b"world").await;
    send_data(&mut server, &h, b"").await;
    let finish = server.recv().await;
    assert_eq!(
        (
            finish.header.kind,
            finish.header.status,
            finish.header.serial
        ),
        (MessageType::Stream, Status::Ok, h.serial)
    );
    server.send_packet(&h.stream(Status::Ok), &()).await;
    assert_eq!(reading.await.unwrap().unwrap(), b"hello world");
    // The connection carries on.
    let host = tokio::spawn({
        let client = client.clone();
        async move { client.connect_get_hostname().await }
    });
    let (h, _) = server.recv_call().await;
    server.reply(&h, &"host".to_owned()).await;
    assert_eq!(host.await.unwrap().unwrap(), "host");
}

#[tokio::test]
async fn a_server_error_mid_stream_fails_the_download() {
    let (client, _conn, mut server) = pair(quiet());
    let (mut download, h) = open(&client, &mut server).await;
    send_data(&mut server, &h, b"part").await;
    assert_eq!(
        download.next_chunk().await.unwrap(),
        Some(Bytes::from_static(b"part"))
    );
    let err = RemoteError::new(ErrorCode::SystemError, ErrorDomain::Storage, "read failed");
    server.send_packet(&h.stream(Status::Error), &err).await;
    let e = download.next_chunk().await.unwrap_err();
    assert_eq!(e.as_remote().map(|r| r.code), Some(ErrorCode::SystemError));
    assert_eq!(download.received(), 4);
}

#[tokio::test]
async fn dropping_a_download_aborts_it() {
    let (client, _conn, mut server) = pair(quiet());
    let (download, h) = open(&client, &mut server).await;
    drop(download);
    let abort = server.recv().await;
    assert_eq!(
        (abort.header.kind, abort.header.status, abort.header.serial),
        (MessageType::Stream, Status::Error, h.serial)
    );
}

/// Data that overtakes the REPLY opening the stream is kept, as the C
/// client keeps it.
#[tokio::test]
async fn data_before_the_reply_is_kept() {
    let (client, _conn, mut server) = pair(quiet());
    let opening = tokio::spawn({
        let client = client.clone();
        async move { client.storage_vol_download(&vol(), 0, 0, 0).await }
    });
    let (h, _) = server.recv_call().await;
    send_data(&mut server, &h, b"early").await;
    send_data(&mut server, &h, b"").await;
    server.reply(&h, &()).await;
    let download = opening.await.unwrap().unwrap();
    let reading = tokio::spawn(download.read_all());
    let finish = server.recv().await;
    assert_eq!(finish.header.status, Status::Ok);
    server.send_packet(&h.stream(Status::Ok), &()).await;
    assert_eq!(reading.await.unwrap().unwrap(), b"early");
}
