//! Volume upload streams: chunking and confirmation, a server error in the
//! middle (which must never hang the writer), abort on drop and on a failing
//! source.

use std::time::Duration;

use bytes::Bytes;
use libvirt_rpc::{CHUNK_SIZE, Client, Upload};
use libvirt_wire::{
    CallArgs, ErrorCode, ErrorDomain, Header, MessageType, RemoteError, Status, StorageVol,
};

use crate::server::{PATIENCE, Server, pair, quiet};

fn vol() -> StorageVol {
    StorageVol {
        pool: "default".into(),
        name: "base.qcow2".into(),
        key: "/var/lib/libvirt/images/base.qcow2".into(),
    }
}

/// Opens an upload and accepts it on the server; returns the call header.
async fn open(client: &Client, server: &mut Server) -> (Upload, Header) {
    let opening = tokio::spawn({
        let client = client.clone();
        async move { client.storage_vol_upload(&vol(), 0, 0, 0).await }
    });
    let (h, args) = server.recv_call().await;
    let CallArgs::StorageVolUpload(args) = args else {
        panic!("unexpected call {args:?}")
    };
    assert_eq!(args.vol, vol());
    server.reply(&h, &()).await;
    (opening.await.unwrap().unwrap(), h)
}

/// Reads stream data packets until a control packet; returns the data and it.
async fn read_stream(server: &mut Server, serial: u32) -> (Vec<u8>, Vec<usize>, Header) {
    let mut data = Vec::new();
    let mut sizes = Vec::new();
    loop {
        let p = server.recv().await;
        assert_eq!(p.header.kind, MessageType::Stream);
        assert_eq!(p.header.serial, serial);
        if p.header.status != Status::Continue {
            assert!(p.payload.is_empty());
            return (data, sizes, p.header);
        }
        sizes.push(p.payload.len());
        data.extend_from_slice(&p.payload);
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[tokio::test]
async fn happy_path_from_a_reader() {
    let (client, _task, mut server) = pair(quiet());
    let (upload, h) = open(&client, &mut server).await;
    let payload = pattern(2 * CHUNK_SIZE + 12_345);
    let sending = tokio::spawn({
        let payload = payload.clone();
        async move { upload.send_reader(&payload[..]).await }
    });
    let (data, sizes, end) = read_stream(&mut server, h.serial).await;
    assert_eq!(end.status, Status::Ok, "finish marker");
    assert_eq!(data, payload);
    assert_eq!(sizes, vec![CHUNK_SIZE, CHUNK_SIZE, 12_345]);
    assert!(!sending.is_finished(), "finish waits for the confirmation");
    server.send_packet(&h.stream(Status::Ok), &()).await;
    let sent = sending.await.unwrap().unwrap();
    assert_eq!(sent, payload.len() as u64);
}

#[tokio::test]
async fn happy_path_from_a_stream_of_small_buffers() {
    let (client, _task, mut server) = pair(quiet());
    let (upload, h) = open(&client, &mut server).await;
    let payload = pattern(CHUNK_SIZE + 1000);
    let items: Vec<Result<Bytes, std::io::Error>> = payload
        .chunks(10_000)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let sending =
        tokio::spawn(async move { upload.send_stream(futures_util::stream::iter(items)).await });
    let (data, sizes, end) = read_stream(&mut server, h.serial).await;
    assert_eq!(end.status, Status::Ok);
    assert_eq!(data, payload);
    assert_eq!(sizes, vec![CHUNK_SIZE, 1000], "small buffers are coalesced");
    server.send_packet(&h.stream(Status::Ok), &()).await;
    assert_eq!(sending.await.unwrap().unwrap(), payload.len() as u64);
}

fn write_failed() -> RemoteError {
    RemoteError::new(
        ErrorCode::SystemError,
        ErrorDomain::Storage,
        "cannot write to volume: No space left on device",
    )
}

#[tokio::test]
async fn server_error_mid_stream_surfaces_on_the_next_write() {
    let (client, _task, mut server) = pair(quiet());
    let (mut upload, h) = open(&client, &mut server).await;
    upload.write(Bytes::from(pattern(1000))).await.unwrap();
    let p = server.recv().await;
    assert_eq!(p.header.status, Status::Continue);

    let mut buf = bytes::BytesMut::new();
    libvirt_wire::encode_packet(&mut buf, &h.stream(Status::Error), &write_failed()).unwrap();
    server.send_frame(buf.freeze()).await;

    // Keep writing: an error must come back, never a hang.
    let outcome = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Err(e) = upload.write(Bytes::from(pattern(CHUNK_SIZE))).await {
                return e;
            }
        }
    })
    .await
    .expect("writer hung after a server error");
    assert!(outcome.is_remote(), "{outcome}");
    assert_eq!(outcome.as_remote(), Some(&write_failed()));

    // The connection is still fine for other calls.
    let (_seen, _auto) = crate::server::spawn_auto(server, |_, _| None);
    tokio::time::timeout(PATIENCE, client.connect_open("test:///default"))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn server_error_before_finish_surfaces_from_finish() {
    let (client, _task, mut server) = pair(quiet());
    let (mut upload, h) = open(&client, &mut server).await;
    upload.write(Bytes::from(pattern(100))).await.unwrap();
    server.recv().await;
    // The server fails and then swallows everything, as libvirtd does.
    let mut buf = bytes::BytesMut::new();
    libvirt_wire::encode_packet(&mut buf, &h.stream(Status::Error), &write_failed()).unwrap();
    server.send_frame(buf.freeze()).await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    let err = tokio::time::timeout(PATIENCE, upload.finish())
        .await
        .expect("finish hung after a server error")
        .unwrap_err();
    assert_eq!(err.as_remote(), Some(&write_failed()));
}

#[tokio::test]
async fn server_error_instead_of_finish_confirmation() {
    let (client, _task, mut server) = pair(quiet());
    let (mut upload, h) = open(&client, &mut server).await;
    upload.write(Bytes::from(pattern(100))).await.unwrap();
    let finishing = tokio::spawn(upload.finish());
    let (_, _, end) = read_stream(&mut server, h.serial).await;
    assert_eq!(end.status, Status::Ok);
    let mut buf = bytes::BytesMut::new();
    libvirt_wire::encode_packet(&mut buf, &h.stream(Status::Error), &write_failed()).unwrap();
    server.send_frame(buf.freeze()).await;
    let err = tokio::time::timeout(PATIENCE, finishing)
        .await
        .expect("finish hung")
        .unwrap()
        .unwrap_err();
    assert!(err.is_remote(), "{err}");
}

#[tokio::test]
async fn dropping_an_upload_aborts_it() {
    let (client, task, mut server) = pair(quiet());
    let (mut upload, h) = open(&client, &mut server).await;
    upload.write(Bytes::from(pattern(5000))).await.unwrap();
    drop(upload);
    let (data, _, end) = read_stream(&mut server, h.serial).await;
    assert_eq!(data.len(), 5000);
    assert_eq!(end.status, Status::Error, "abort marker");
    assert_eq!(end.kind, MessageType::Stream);
    // The server confirms; the confirmation is swallowed, and the
    // connection carries on.
    server.send_packet(&h.stream(Status::Ok), &()).await;
    let (_seen, _auto) = crate::server::spawn_auto(server, |_, _| None);
    client.connect_open("test:///default").await.unwrap();
    assert!(!task.is_finished());
}

#[tokio::test]
async fn explicit_abort_waits_for_confirmation() {
    let (client, _task, server) = pair(quiet());
    let (seen, _auto) = crate::server::spawn_auto(server, |_, _| None);
    let mut upload = client.storage_vol_upload(&vol(), 0, 0, 0).await.unwrap();
    upload.write(Bytes::from(pattern(10))).await.unwrap();
    upload.abort().await.unwrap();
    assert_eq!(seen.aborts.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn failing_source_aborts_the_stream() {
    let (client, _task, mut server) = pair(quiet());
    let (upload, h) = open(&client, &mut server).await;
    let items: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from(pattern(CHUNK_SIZE + 10))),
        Err(std::io::Error::other("http body ended early")),
    ];
    let err = upload
        .send_stream(futures_util::stream::iter(items))
        .await
        .unwrap_err();
    assert!(err.is_source(), "{err}");
    assert!(err.to_string().contains("http body ended early"));
    let (data, _, end) = read_stream(&mut server, h.serial).await;
    assert_eq!(data.len(), CHUNK_SIZE);
    assert_eq!(end.status, Status::Error, "abort marker");
}

#[tokio::test]
async fn a_refused_upload_opens_no_stream() {
    let (client, _task, mut server) = pair(quiet());
    let opening = tokio::spawn({
        let client = client.clone();
        async move { client.storage_vol_upload(&vol(), 0, 0, 0).await }
    });
    let (h, _) = server.recv_call().await;
    let refusal = RemoteError::new(
        ErrorCode::NoSupport,
        ErrorDomain::Test,
        "this function is not supported by the connection driver: virStorageVolUpload",
    );
    server.reply_error(&h, &refusal).await;
    let err = opening.await.unwrap().unwrap_err();
    assert_eq!(err.as_remote(), Some(&refusal));
    // No abort follows for a stream that never opened.
    assert!(
        server
            .maybe_recv(Duration::from_millis(100))
            .await
            .is_none()
    );
}

#[tokio::test]
async fn a_dead_connection_fails_the_upload() {
    let (client, _task, mut server) = pair(quiet());
    let (mut upload, _h) = open(&client, &mut server).await;
    drop(server);
    let err = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Err(e) = upload.write(Bytes::from(pattern(CHUNK_SIZE))).await {
                return e;
            }
        }
    })
    .await
    .expect("writer hung on a dead connection");
    assert!(err.is_closed(), "{err}");
}

#[tokio::test]
async fn a_server_error_stops_a_pipelined_sender_promptly() {
    let (client, _task, mut server) = pair(quiet());
    let (upload, h) = open(&client, &mut server).await;
    // An endless source of full chunks: only the server's error ends it.
    let chunk = Bytes::from(pattern(CHUNK_SIZE));
    let source = futures_util::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
    let sender = tokio::spawn(upload.send_stream(source));
    for _ in 0..5 {
        let p = server.recv().await;
        assert_eq!(p.header.status, Status::Continue);
        assert_eq!(p.payload.len(), CHUNK_SIZE);
    }
    let mut buf = bytes::BytesMut::new();
    libvirt_wire::encode_packet(&mut buf, &h.stream(Status::Error), &write_failed()).unwrap();
    server.send_frame(buf.freeze()).await;

    let outcome = tokio::time::timeout(PATIENCE, sender)
        .await
        .expect("the sender kept going after the server's error")
        .unwrap()
        .unwrap_err();
    assert_eq!(outcome.as_remote(), Some(&write_failed()), "{outcome}");
    // What still reaches the server: at most the pipe's worth (1 MiB, four
    // chunks), the chunks in flight and the one part-way out; no abort, since
    // the server already ended the stream.
    let mut late = 0;
    while let Some(p) = server.maybe_recv(Duration::from_millis(300)).await {
        assert_eq!(p.header.status, Status::Continue, "{:?}", p.header);
        late += 1;
        assert!(late <= 100, "data keeps coming after the error");
    }
    assert!(
        late <= 4 + libvirt_rpc::IN_FLIGHT + 1,
        "{late} chunks after the error"
    );
}
