//! The fake daemon: raw packets built with `libvirt-wire` in, libvirt's
//! replies out; keepalive, the 5-request budget, overlapping latency,
//! uploads, dropped connections and the Unix-socket listener.

use std::time::Duration;

use bytes::BytesMut;
use libvirt_fake::{FakeLibvirt, Fault, FaultRule, VolumeContent};
use libvirt_wire::{
    ConnectOpenArgs, DomainDefineXmlArgs, DomainLookupByNameArgs, Encode, ErrorCode, Header,
    KEEPALIVE_PING, KEEPALIVE_PONG, MessageType, Packet, Procedure, Status,
    StoragePoolLookupByNameArgs, StoragePoolLookupByNameRet, StorageVolCreateXmlArgs,
    StorageVolCreateXmlRet, StorageVolDownloadArgs, StorageVolUploadArgs, encode_packet,
    encode_raw,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::common::{bios_xml, pool_fake};

pub(crate) struct Raw<S> {
    io: S,
    buf: BytesMut,
    serial: u32,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Raw<S> {
    pub(crate) fn new(io: S) -> Self {
        Raw {
            io,
            buf: BytesMut::new(),
            serial: 0,
        }
    }

    async fn send<T: Encode + ?Sized>(&mut self, proc_: Procedure, args: &T) -> u32 {
        self.serial += 1;
        let mut out = BytesMut::new();
        encode_packet(&mut out, &Header::call(proc_, self.serial), args).unwrap();
        self.io.write_all(&out).await.unwrap();
        self.serial
    }

    async fn read(&mut self) -> Option<Packet> {
        loop {
            if let Some(p) = Packet::decode_from(&mut self.buf).unwrap() {
                return Some(p);
            }
            if self.io.read_buf(&mut self.buf).await.unwrap() == 0 {
                return None;
            }
        }
    }

    pub(crate) async fn call<T: Encode + ?Sized>(&mut self, proc_: Procedure, args: &T) -> Packet {
        let serial = self.send(proc_, args).await;
        let p = self.read().await.expect("a reply");
        assert_eq!(p.header.serial, serial);
        p
    }

    /// Sends a packet of any header and payload and reads the answer.
    pub(crate) async fn call_raw(&mut self, header: &Header, payload: &[u8]) -> Packet {
        let mut out = BytesMut::new();
        encode_raw(&mut out, header, payload).unwrap();
        self.io.write_all(&out).await.unwrap();
        let p = self.read().await.expect("a reply");
        assert_eq!(p.header.serial, header.serial);
        p
    }

    pub(crate) async fn handshake(&mut self) {
        let p = self.call(Procedure::AuthList, &()).await;
        assert_eq!(p.header.status, Status::Ok);
        let open = ConnectOpenArgs {
            name: Some("qemu:///system".into()),
            flags: 0,
        };
        let p = self.call(Procedure::ConnectOpen, &open).await;
        assert_eq!(p.header.status, Status::Ok);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test]
async fn raw_auth_list_call_gets_the_reference_reply() {
    let fake = FakeLibvirt::new();
    let mut io = fake.duplex();
    // AUTH_LIST, serial 1, exactly as the protocol reference spells it.
    let call = "0000001c200080860000000100000042000000000000000100000000";
    let bytes: Vec<u8> = (0..call.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&call[i..i + 2], 16).unwrap())
        .collect();
    io.write_all(&bytes).await.unwrap();
    let mut reply = vec![0u8; 36];
    io.read_exact(&mut reply).await.unwrap();
    assert_eq!(
        hex(&reply),
        "00000024200080860000000100000042000000010000000100000000\
         0000000100000000"
    );
}

#[tokio::test]
async fn calls_and_errors_over_the_wire() {
    let fake = FakeLibvirt::new();
    let mut c = Raw::new(fake.duplex());
    // Before ConnectOpen the hypervisor is not reachable.
    let p = c.call(Procedure::ConnectGetHostname, &()).await;
    assert_eq!(p.header.kind, MessageType::Reply);
    assert_eq!(p.header.status, Status::Error);
    let e = p.remote_error().unwrap();
    assert_eq!(e.code, ErrorCode::InternalError);
    assert_eq!(
        e.message(),
        "internal error: hypervisor connection not open"
    );
    c.handshake().await;
    let p = c
        .call(
            Procedure::DomainDefineXml,
            &DomainDefineXmlArgs {
                xml: bios_xml("w1"),
            },
        )
        .await;
    assert_eq!(p.header.status, Status::Ok);
    let p = c
        .call(
            Procedure::DomainLookupByName,
            &DomainLookupByNameArgs {
                name: "missing".into(),
            },
        )
        .await;
    let e = p.remote_error().unwrap();
    assert_eq!(e.code, ErrorCode::NoDomain);
    assert_eq!(e.code, ErrorCode::NoDomain);
    assert_eq!(
        e.message(),
        "Domain not found: no domain with matching name 'missing'"
    );
    assert_eq!((e.int1, e.int2), (-1, -1));
    assert_eq!(e.str1.as_deref(), Some("Domain not found: %s"));
    let p = c.call(Procedure::Other(9999), &()).await;
    let e = p.remote_error().unwrap();
    assert_eq!(e.code, ErrorCode::Rpc);
    assert_eq!(e.message(), "unknown procedure: 9999");
    assert_eq!(fake.domains().len(), 1);
}

/// `CONNECT_GET_VERSION` answers the configured hypervisor version, and only
/// on an open connection.
#[tokio::test]
async fn connect_get_version_answers_the_hypervisor_version() {
    let fake = FakeLibvirt::with_config(libvirt_fake::HostConfig {
        hypervisor_version: 8_002_001,
        ..Default::default()
    });
    let mut c = Raw::new(fake.duplex());
    let p = c.call(Procedure::ConnectGetVersion, &()).await;
    assert_eq!(p.header.status, Status::Error);
    assert_eq!(p.remote_error().unwrap().code, ErrorCode::InternalError);
    c.handshake().await;
    let p = c.call(Procedure::ConnectGetVersion, &()).await;
    assert_eq!(p.header.status, Status::Ok);
    assert_eq!(
        libvirt_wire::CallRet::decode(Procedure::ConnectGetVersion, &p.payload),
        Ok(libvirt_wire::CallRet::ConnectGetVersion(
            libvirt_wire::ConnectGetVersionRet { hv_ver: 8_002_001 }
        ))
    );
    assert_eq!(fake.trace().count(Procedure::ConnectGetVersion), 2);
}

#[tokio::test]
async fn keepalive_ping_gets_a_pong() {
    let fake = FakeLibvirt::new();
    let mut c = Raw::new(fake.duplex());
    let mut out = BytesMut::new();
    encode_packet(&mut out, &Header::keepalive(KEEPALIVE_PING), &()).unwrap();
    c.io.write_all(&out).await.unwrap();
    let p = c.read().await.unwrap();
    assert_eq!(p.header, Header::keepalive(KEEPALIVE_PONG));
    assert!(fake.trace().calls().is_empty(), "keepalive is not a call");
}

#[tokio::test(start_paused = true)]
async fn injected_latency_overlaps_and_replies_come_out_of_order() {
    let fake = FakeLibvirt::new();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    fake.faults().add(
        FaultRule::on(
            Procedure::ConnectGetHostname,
            Fault::Delay(Duration::from_secs(5)),
        )
        .once(),
    );
    let start = Instant::now();
    let slow = c.send(Procedure::ConnectGetHostname, &()).await;
    let fast = c.send(Procedure::ConnectGetLibVersion, &()).await;
    let first = c.read().await.unwrap();
    assert_eq!(first.header.serial, fast);
    assert!(start.elapsed() < Duration::from_secs(1));
    let second = c.read().await.unwrap();
    assert_eq!(second.header.serial, slow);
    assert!(start.elapsed() >= Duration::from_secs(5));
    assert!(start.elapsed() < Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn at_most_five_requests_in_flight_per_client() {
    let fake = FakeLibvirt::new();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    fake.faults().add(FaultRule::on(
        Procedure::ConnectGetHostname,
        Fault::Delay(Duration::from_secs(10)),
    ));
    let start = Instant::now();
    for _ in 0..6 {
        c.send(Procedure::ConnectGetHostname, &()).await;
    }
    let quick = c.send(Procedure::ConnectGetLibVersion, &()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        fake.trace().count(Procedure::ConnectGetHostname),
        5,
        "the sixth call waits for a free slot"
    );
    assert_eq!(fake.trace().count(Procedure::ConnectGetLibVersion), 0);
    let mut got_quick_at = None;
    for _ in 0..7 {
        let p = c.read().await.unwrap();
        if p.header.serial == quick {
            got_quick_at = Some(start.elapsed());
        }
    }
    let at = got_quick_at.expect("the queued call is answered");
    assert!(
        at >= Duration::from_secs(10),
        "queued behind the budget: {at:?}"
    );
    assert!(start.elapsed() >= Duration::from_secs(20));
}

#[tokio::test]
async fn upload_stream_over_the_wire() {
    let fake = pool_fake();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    let p = c
        .call(
            Procedure::StoragePoolLookupByName,
            &StoragePoolLookupByNameArgs {
                name: "default".into(),
            },
        )
        .await;
    let pool = p
        .decode_payload::<StoragePoolLookupByNameRet>()
        .unwrap()
        .pool;
    let p = c
        .call(
            Procedure::StorageVolCreateXml,
            &StorageVolCreateXmlArgs {
                pool,
                xml: "<volume><name>seed.iso</name><capacity>8</capacity></volume>".into(),
                flags: 0,
            },
        )
        .await;
    let vol = p.decode_payload::<StorageVolCreateXmlRet>().unwrap().vol;
    let serial = c
        .send(
            Procedure::StorageVolUpload,
            &StorageVolUploadArgs {
                vol,
                offset: 0,
                length: 0,
                flags: 0,
            },
        )
        .await;
    let p = c.read().await.unwrap();
    assert_eq!(
        (p.header.kind, p.header.status),
        (MessageType::Reply, Status::Ok)
    );
    let stream = Header::call(Procedure::StorageVolUpload, serial);
    let mut out = BytesMut::new();
    encode_raw(&mut out, &stream.stream(Status::Continue), b"cidata").unwrap();
    encode_raw(&mut out, &stream.stream(Status::Continue), b"!!").unwrap();
    encode_raw(&mut out, &stream.stream(Status::Ok), b"").unwrap();
    c.io.write_all(&out).await.unwrap();
    let p = c.read().await.unwrap();
    assert_eq!(
        (p.header.kind, p.header.status),
        (MessageType::Stream, Status::Ok)
    );
    assert_eq!(p.header.serial, serial);
    assert_eq!(
        fake.volume("default", "seed.iso").unwrap().content,
        VolumeContent::Bytes(b"cidata!!".to_vec())
    );
}

#[tokio::test]
async fn dropped_connection_fault_closes_the_transport() {
    let fake = FakeLibvirt::new();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    let h = fake
        .faults()
        .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::DropConnection).once());
    c.send(Procedure::ConnectGetHostname, &()).await;
    assert!(c.read().await.is_none(), "EOF instead of a reply");
    assert!(h.fired());
    // A new dial works.
    let mut c2 = Raw::new(fake.duplex());
    c2.handshake().await;
    assert_eq!(fake.trace().dial_count(), 2);
}

#[tokio::test]
async fn connect_close_replies_then_closes() {
    let fake = FakeLibvirt::new();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    let p = c.call(Procedure::ConnectClose, &()).await;
    assert_eq!(p.header.status, Status::Ok);
    assert!(c.read().await.is_none());
}

#[tokio::test]
async fn unix_socket_listener_serves_clients() {
    let fake = FakeLibvirt::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libvirt-sock");
    let server = fake.serve_unix(&path).await.unwrap();
    for _ in 0..2 {
        let stream = tokio::net::UnixStream::connect(server.path())
            .await
            .unwrap();
        let mut c = Raw::new(stream);
        c.handshake().await;
        let p = c.call(Procedure::ConnectGetHostname, &()).await;
        assert_eq!(p.header.status, Status::Ok);
    }
    assert_eq!(fake.trace().dial_count(), 2);
    server.shutdown();
    assert!(!path.exists());
}

#[tokio::test(start_paused = true)]
async fn server_pings_a_silent_keepalive_client_then_drops_it() {
    let fake = FakeLibvirt::new();
    let (client, server) = tokio::io::duplex(1 << 16);
    let opts = libvirt_fake::ServerOptions {
        keepalive_interval: Some(Duration::from_secs(1)),
        keepalive_count: 2,
        ..Default::default()
    };
    let task = tokio::spawn({
        let fake = fake.clone();
        async move { fake.serve_with(server, opts).await }
    });
    let mut c = Raw::new(client);
    let p = c
        .call(
            Procedure::ConnectSupportsFeature,
            &libvirt_wire::ConnectSupportsFeatureArgs { feature: 10 },
        )
        .await;
    assert_eq!(p.header.status, Status::Ok);
    let start = Instant::now();
    let mut pings = 0;
    while let Some(p) = c.read().await {
        assert_eq!(p.header, Header::keepalive(KEEPALIVE_PING));
        pings += 1;
    }
    assert_eq!(pings, 2);
    assert!(start.elapsed() >= Duration::from_secs(2));
    task.await.unwrap().unwrap();
}

/// libvirtd pings only clients that asked for keepalive (feature 10):
/// go-libvirt never does and never answers a PING, and is never dropped.
#[tokio::test(start_paused = true)]
async fn a_client_that_never_asked_for_keepalive_is_never_pinged() {
    let fake = FakeLibvirt::new();
    let (client, server) = tokio::io::duplex(1 << 16);
    let opts = libvirt_fake::ServerOptions {
        keepalive_interval: Some(Duration::from_secs(1)),
        keepalive_count: 2,
        ..Default::default()
    };
    tokio::spawn({
        let fake = fake.clone();
        async move { fake.serve_with(server, opts).await }
    });
    let mut c = Raw::new(client);
    c.handshake().await;
    let silent = tokio::time::timeout(Duration::from_secs(30), c.read()).await;
    assert!(silent.is_err(), "a packet came unasked: {silent:?}");
    let p = c.call(Procedure::ConnectGetHostname, &()).await;
    assert_eq!(p.header.status, Status::Ok, "still served after 30 s");
}

#[tokio::test]
async fn stream_error_mid_upload_reaches_the_client() {
    let fake = pool_fake();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    let p = c
        .call(
            Procedure::StoragePoolLookupByName,
            &StoragePoolLookupByNameArgs {
                name: "default".into(),
            },
        )
        .await;
    let pool = p
        .decode_payload::<StoragePoolLookupByNameRet>()
        .unwrap()
        .pool;
    let p = c
        .call(
            Procedure::StorageVolCreateXml,
            &StorageVolCreateXmlArgs {
                pool,
                xml: "<volume><name>v</name><capacity>8</capacity></volume>".into(),
                flags: 0,
            },
        )
        .await;
    let vol = p.decode_payload::<StorageVolCreateXmlRet>().unwrap().vol;
    let h = fake.faults().stream_error_after(
        4,
        libvirt_fake::VirError::new(
            ErrorCode::InternalError,
            libvirt_wire::ErrorDomain::Streams,
            "disk full",
        ),
    );
    let args = StorageVolUploadArgs {
        vol,
        offset: 0,
        length: 0,
        flags: 0,
    };
    let serial = c.send(Procedure::StorageVolUpload, &args).await;
    assert_eq!(c.read().await.unwrap().header.status, Status::Ok);
    let stream = Header::call(Procedure::StorageVolUpload, serial);
    let mut out = BytesMut::new();
    encode_raw(&mut out, &stream.stream(Status::Continue), b"abcdef").unwrap();
    c.io.write_all(&out).await.unwrap();
    let p = c.read().await.unwrap();
    assert_eq!(
        (p.header.kind, p.header.status),
        (MessageType::Stream, Status::Error)
    );
    assert_eq!(
        p.remote_error().unwrap().message(),
        "internal error: disk full"
    );
    assert!(h.fired());
    // Later packets of the dead stream are swallowed; other calls still work.
    let mut out = BytesMut::new();
    encode_raw(&mut out, &stream.stream(Status::Ok), b"").unwrap();
    c.io.write_all(&out).await.unwrap();
    let p = c.call(Procedure::ConnectGetHostname, &()).await;
    assert_eq!(p.header.kind, MessageType::Reply);
    assert_eq!(
        fake.volume("default", "v").unwrap().content.bytes(),
        Some(&b"abcd"[..])
    );
}

/// libvirtd 11.3, measured: a STREAM packet that would take an upload past its
/// declared length gets no error back; the finish is never answered, and
/// neither is any call or keepalive on any connection, until a restart.
#[tokio::test]
async fn upload_past_its_declared_length_wedges_the_daemon_over_the_wire() {
    let fake = pool_fake();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    let p = c
        .call(
            Procedure::StoragePoolLookupByName,
            &StoragePoolLookupByNameArgs {
                name: "default".into(),
            },
        )
        .await;
    let pool = p
        .decode_payload::<StoragePoolLookupByNameRet>()
        .unwrap()
        .pool;
    let p = c
        .call(
            Procedure::StorageVolCreateXml,
            &StorageVolCreateXmlArgs {
                pool,
                xml: "<volume><name>v</name><capacity>2048</capacity></volume>".into(),
                flags: 0,
            },
        )
        .await;
    let vol = p.decode_payload::<StorageVolCreateXmlRet>().unwrap().vol;
    let args = StorageVolUploadArgs {
        vol,
        offset: 0,
        length: 1000,
        flags: 0,
    };
    let serial = c.send(Procedure::StorageVolUpload, &args).await;
    assert_eq!(c.read().await.unwrap().header.status, Status::Ok);
    let stream = Header::call(Procedure::StorageVolUpload, serial);
    let mut out = BytesMut::new();
    encode_raw(&mut out, &stream.stream(Status::Continue), &[b'a'; 600]).unwrap();
    encode_raw(&mut out, &stream.stream(Status::Continue), &[b'b'; 600]).unwrap();
    encode_raw(&mut out, &stream.stream(Status::Ok), b"").unwrap();
    c.io.write_all(&out).await.unwrap();
    // The stream is fed on a task of its own; wait for it to reach the packet.
    let waited = Instant::now();
    while !fake.is_wedged() {
        assert!(waited.elapsed() < Duration::from_secs(5), "never wedged");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // No stream error, no finish, no reply to a call, no PONG.
    c.send(Procedure::ConnectGetHostname, &()).await;
    let mut ping = BytesMut::new();
    encode_packet(&mut ping, &Header::keepalive(KEEPALIVE_PING), &()).unwrap();
    c.io.write_all(&ping).await.unwrap();
    let quiet = Duration::from_millis(300);
    assert!(tokio::time::timeout(quiet, c.read()).await.is_err());
    assert!(fake.is_wedged());
    // The first packet is written, the one that crossed the length is not.
    assert_eq!(
        fake.volume("default", "v").unwrap().content.bytes(),
        Some(&[b'a'; 600][..])
    );
    // A new client is accepted and never answered.
    let mut other = Raw::new(fake.duplex());
    other.send(Procedure::AuthList, &()).await;
    assert!(tokio::time::timeout(quiet, other.read()).await.is_err());

    // After a restart new clients are served again, the old ones are not.
    fake.restart_daemon();
    let mut fresh = Raw::new(fake.duplex());
    fresh.handshake().await;
    let p = fresh.call(Procedure::ConnectGetHostname, &()).await;
    assert_eq!(p.header.status, Status::Ok);
    c.send(Procedure::ConnectGetHostname, &()).await;
    assert!(tokio::time::timeout(quiet, c.read()).await.is_err());
}

#[tokio::test]
async fn large_upload_over_the_wire_keeps_a_digest() {
    use sha2::{Digest, Sha256};
    let fake = pool_fake();
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    let p = c
        .call(
            Procedure::StoragePoolLookupByName,
            &StoragePoolLookupByNameArgs {
                name: "default".into(),
            },
        )
        .await;
    let pool = p
        .decode_payload::<StoragePoolLookupByNameRet>()
        .unwrap()
        .pool;
    let size: usize = 32 << 20;
    let p = c
        .call(
            Procedure::StorageVolCreateXml,
            &StorageVolCreateXmlArgs {
                pool,
                xml: format!("<volume><name>base</name><capacity>{size}</capacity></volume>"),
                flags: 0,
            },
        )
        .await;
    let vol = p.decode_payload::<StorageVolCreateXmlRet>().unwrap().vol;
    let args = StorageVolUploadArgs {
        vol,
        offset: 0,
        length: size as u64,
        flags: 0,
    };
    let serial = c.send(Procedure::StorageVolUpload, &args).await;
    assert_eq!(c.read().await.unwrap().header.status, Status::Ok);
    let stream = Header::call(Procedure::StorageVolUpload, serial);
    let chunk: Vec<u8> = (0..262_120u32).map(|i| (i % 251) as u8).collect();
    let mut hasher = Sha256::new();
    let mut sent = 0;
    while sent < size {
        let n = chunk.len().min(size - sent);
        let mut out = BytesMut::new();
        encode_raw(&mut out, &stream.stream(Status::Continue), &chunk[..n]).unwrap();
        c.io.write_all(&out).await.unwrap();
        hasher.update(&chunk[..n]);
        sent += n;
    }
    let mut out = BytesMut::new();
    encode_raw(&mut out, &stream.stream(Status::Ok), b"").unwrap();
    c.io.write_all(&out).await.unwrap();
    let p = c.read().await.unwrap();
    assert_eq!(
        (p.header.kind, p.header.status),
        (MessageType::Stream, Status::Ok)
    );
    let v = fake.volume("default", "base").unwrap();
    let want: [u8; 32] = hasher.finalize().into();
    assert_eq!(
        v.content,
        VolumeContent::Digest {
            size: size as u64,
            sha256: want
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_client_hanging_up_behind_a_full_budget_ends_its_session() {
    let fake = FakeLibvirt::new();
    let (client, server) = tokio::io::duplex(1 << 16);
    let task = tokio::spawn({
        let fake = fake.clone();
        async move { fake.serve(server).await }
    });
    let mut c = Raw::new(client);
    c.handshake().await;
    fake.faults()
        .add(FaultRule::on(Procedure::ConnectGetHostname, Fault::Hang));
    for _ in 0..6 {
        c.send(Procedure::ConnectGetHostname, &()).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.trace().count(Procedure::ConnectGetHostname), 5);
    drop(c);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the session ends")
        .unwrap()
        .unwrap();
    assert!(fake.trace().connections()[0].closed);
}

/// `vol-download` as virsh reads it from libvirtd 11.3: the REPLY, the
/// volume's bytes in CONTINUE packets of at most 262 120 bytes, an empty
/// CONTINUE that ends them, and the client's finish confirmed.
#[tokio::test]
async fn download_stream_over_the_wire() {
    let fake = pool_fake();
    let conn = crate::common::open(&fake).await;
    let pool = conn.storage_pool_lookup_by_name("default").await.unwrap();
    let xml = "<volume><name>d.img</name><capacity unit='bytes'>300000</capacity>\
               <target><format type='raw'/></target></volume>";
    let vol = conn.storage_vol_create_xml(&pool, xml, 0).await.unwrap();
    let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    let mut up = conn.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
    up.send(&data).unwrap();
    up.finish().unwrap();

    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    let serial = c
        .send(
            Procedure::StorageVolDownload,
            &StorageVolDownloadArgs {
                vol,
                offset: 0,
                length: 0,
                flags: 0,
            },
        )
        .await;
    let p = c.read().await.unwrap();
    assert_eq!(
        (p.header.kind, p.header.status),
        (MessageType::Reply, Status::Ok)
    );
    let mut got = Vec::new();
    loop {
        let p = c.read().await.unwrap();
        assert_eq!(p.header.serial, serial);
        assert_eq!(
            (p.header.kind, p.header.status),
            (MessageType::Stream, Status::Continue)
        );
        assert!(p.payload.len() <= 262_120);
        if p.payload.is_empty() {
            break;
        }
        got.extend_from_slice(&p.payload);
    }
    // The raw file is as long as its capacity: the upload, then zeros.
    assert_eq!(got.len(), 300_000);
    assert_eq!(&got[..1000], &data[..]);
    assert!(got[1000..].iter().all(|b| *b == 0));
    let stream = Header::call(Procedure::StorageVolDownload, serial);
    let mut out = BytesMut::new();
    encode_raw(&mut out, &stream.stream(Status::Ok), b"").unwrap();
    c.io.write_all(&out).await.unwrap();
    let p = c.read().await.unwrap();
    assert_eq!(
        (p.header.kind, p.header.status, p.header.serial),
        (MessageType::Stream, Status::Ok, serial)
    );
    // The connection still answers calls.
    let p = c.call(Procedure::ConnectGetHostname, &()).await;
    assert_eq!(p.header.status, Status::Ok);
}

/// A part of the file from an offset, and a part past its end.
#[tokio::test]
async fn download_reads_from_an_offset_and_stops_at_the_end() {
    let fake = pool_fake();
    let conn = crate::common::open(&fake).await;
    let pool = conn.storage_pool_lookup_by_name("default").await.unwrap();
    let xml = "<volume><name>o.img</name><capacity unit='bytes'>10</capacity></volume>";
    let vol = conn.storage_vol_create_xml(&pool, xml, 0).await.unwrap();
    let mut up = conn.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
    up.send(b"0123456789").unwrap();
    up.finish().unwrap();
    let part = conn.storage_vol_download(&vol, 3, 4, 0).await.unwrap();
    assert_eq!(part, b"3456");
    let tail = conn.storage_vol_download(&vol, 8, 100, 0).await.unwrap();
    assert_eq!(tail, b"89");
    assert!(
        conn.storage_vol_download(&vol, 20, 0, 0)
            .await
            .unwrap()
            .is_empty()
    );
    let e = conn.storage_vol_download(&vol, 0, 0, 2).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::InvalidArg));
}
