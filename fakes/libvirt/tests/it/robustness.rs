//! The daemon facing clients that misbehave: hundreds of connections
//! opened and dropped at every point of the handshake, clients that vanish
//! in the middle of an upload or a download, and one that stops reading.
//! The `fake-libvirtd` process must not die, its memory must come back to
//! a bound (its RSS from `/proc`, before and after), and a client that
//! behaves is answered promptly throughout.

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use libvirt_wire::{
    ConnectOpenArgs, Decode, Encode, Header, Packet, Procedure, Reader, Status,
    StoragePoolLookupByNameArgs, StoragePoolLookupByNameRet, StorageVol, StorageVolDownloadArgs,
    StorageVolLookupByNameArgs, StorageVolLookupByNameRet, StorageVolUploadArgs, encode_packet,
    encode_raw,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::support::{Daemon, ScratchDir};

/// A pool with a volume to upload into and one of 32 MiB to download.
const STATE: &str = r#"{
  "pools": [{
    "name": "p", "path": "/srv/robust", "capacity": 10737418240,
    "volumes": [
      { "name": "up.img", "capacity": 67108864 },
      { "name": "down.img", "capacity": 33554432 }
    ]
  }]
}"#;

/// A client speaking raw packets.
struct Client {
    io: UnixStream,
    buf: BytesMut,
    serial: u32,
}

impl Client {
    async fn dial(socket: &Path) -> Client {
        Client {
            io: UnixStream::connect(socket)
                .await
                .expect("the daemon accepts"),
            buf: BytesMut::new(),
            serial: 0,
        }
    }

    async fn send<T: Encode + ?Sized>(&mut self, p: Procedure, args: &T) -> u32 {
        self.serial += 1;
        let mut out = BytesMut::new();
        encode_packet(&mut out, &Header::call(p, self.serial), args).unwrap();
        self.io.write_all(&out).await.expect("the daemon reads");
        self.serial
    }

    async fn read(&mut self) -> Packet {
        loop {
            if let Some(p) = Packet::decode_from(&mut self.buf).expect("a well-formed packet") {
                return p;
            }
            let n = self
                .io
                .read_buf(&mut self.buf)
                .await
                .expect("the daemon writes");
            assert!(n > 0, "the daemon closed the connection");
        }
    }

    async fn call<T: Encode + ?Sized, R: Decode>(&mut self, p: Procedure, args: &T) -> R {
        let serial = self.send(p, args).await;
        let reply = self.read().await;
        assert_eq!(reply.header.serial, serial);
        assert_eq!(reply.header.status, Status::Ok, "{p:?} failed");
        R::decode(&mut Reader::new(&reply.payload)).expect("a decodable reply")
    }

    async fn handshake(&mut self) {
        self.call::<_, ()>(Procedure::AuthList, &()).await;
        let open = ConnectOpenArgs {
            name: Some("qemu:///system".into()),
            flags: 0,
        };
        self.call::<_, ()>(Procedure::ConnectOpen, &open).await;
    }

    async fn volume(&mut self, name: &str) -> StorageVol {
        let pool: StoragePoolLookupByNameRet = self
            .call(
                Procedure::StoragePoolLookupByName,
                &StoragePoolLookupByNameArgs { name: "p".into() },
            )
            .await;
        let vol: StorageVolLookupByNameRet = self
            .call(
                Procedure::StorageVolLookupByName,
                &StorageVolLookupByNameArgs {
                    pool: pool.pool,
                    name: name.into(),
                },
            )
            .await;
        vol.vol
    }
}

/// A client that behaves: one `ConnectGetLibVersion` must be answered
/// within `limit`.
async fn answered_within(witness: &mut Client, limit: Duration) -> Duration {
    let t = Instant::now();
    let serial = witness.send(Procedure::ConnectGetLibVersion, &()).await;
    let reply = tokio::time::timeout(limit, witness.read())
        .await
        .unwrap_or_else(|_| {
            panic!("the daemon did not answer a well-behaved client within {limit:?}")
        });
    assert_eq!(reply.header.serial, serial);
    t.elapsed()
}

/// Opens a connection and drops it at the point `kind` names.
async fn open_and_drop(socket: &Path, kind: usize) {
    let mut c = Client::dial(socket).await;
    match kind {
        // Gone before a byte.
        0 => {}
        // A call sent, its reply never read.
        1 => {
            c.send(Procedure::AuthList, &()).await;
        }
        // A whole handshake, then gone.
        2 => c.handshake().await,
        // Half a packet: a length announcing more than ever comes.
        _ => {
            c.io.write_all(&[0, 0, 0, 200, 0x20, 0x00]).await.unwrap();
        }
    }
}

/// Starts an upload into `up.img`, sends `bytes` and vanishes.
async fn vanish_mid_upload(socket: &Path, bytes: usize) {
    let mut c = Client::dial(socket).await;
    c.handshake().await;
    let vol = c.volume("up.img").await;
    let args = StorageVolUploadArgs {
        vol,
        offset: 0,
        length: 0,
        flags: 0,
    };
    c.call::<_, ()>(Procedure::StorageVolUpload, &args).await;
    let call = Header::call(Procedure::StorageVolUpload, c.serial);
    let chunk = vec![0x5a; 256 * 1024];
    let mut out = BytesMut::new();
    for _ in 0..bytes / chunk.len() {
        out.clear();
        encode_raw(&mut out, &call.stream(Status::Continue), &chunk).unwrap();
        c.io.write_all(&out).await.unwrap();
    }
}

/// Starts a download of `down.img`, reads `packets` data packets and
/// vanishes.
async fn vanish_mid_download(socket: &Path, packets: usize) {
    let mut c = Client::dial(socket).await;
    c.handshake().await;
    let vol = c.volume("down.img").await;
    start_download(&mut c, vol).await;
    for _ in 0..packets {
        let p = c.read().await;
        assert_eq!(p.header.status, Status::Continue);
    }
}

async fn start_download(c: &mut Client, vol: StorageVol) {
    let args = StorageVolDownloadArgs {
        vol,
        offset: 0,
        length: 0,
        flags: 0,
    };
    c.call::<_, ()>(Procedure::StorageVolDownload, &args).await;
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// One round of abuse: 400 connections dropped at every point of the
/// handshake, 50 at a time, then 20 uploads and 20 downloads abandoned
/// half-way, 8 at a time; the witness is answered between batches. Returns
/// the time of each half and the slowest answer.
async fn abuse(socket: &Path, witness: &mut Client) -> (Duration, Duration, Duration) {
    let t = Instant::now();
    let mut worst = Duration::ZERO;
    for batch in 0..8 {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..50 {
            let socket = socket.to_path_buf();
            set.spawn(async move { open_and_drop(&socket, batch * 50 + i).await });
        }
        while let Some(r) = set.join_next().await {
            r.expect("a connection task");
        }
        worst = worst.max(answered_within(witness, Duration::from_secs(2)).await);
    }
    let churn = t.elapsed();
    let t = Instant::now();
    for _ in 0..5 {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let (up, down) = (socket.to_path_buf(), socket.to_path_buf());
            set.spawn(async move { vanish_mid_upload(&up, 2 << 20).await });
            set.spawn(async move { vanish_mid_download(&down, 3).await });
        }
        while let Some(r) = set.join_next().await {
            r.expect("a stream task");
        }
        worst = worst.max(answered_within(witness, Duration::from_secs(2)).await);
    }
    (churn, t.elapsed(), worst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_clients_leave_the_daemon_alive_bounded_and_answering() {
    let scratch = ScratchDir::new(&format!("robust-{}", std::process::id()));
    let mut daemon = Daemon::start_with(&scratch.0, STATE);
    let socket = daemon.socket.clone();
    let mut witness = Client::dial(&socket).await;
    witness.handshake().await;
    let settle = || tokio::time::sleep(Duration::from_millis(300));
    let baseline = daemon.rss_kib();

    // Three rounds: the allocator keeps some of what it freed, so the RSS
    // moves from round to round, but a leak per connection or stream (a
    // 64 KiB read buffer per connection is 25 MiB a round) adds up.
    let mut rounds = Vec::new();
    let mut worst = Duration::ZERO;
    for _ in 0..3 {
        let (churn, streams, slowest) = abuse(&socket, &mut witness).await;
        settle().await;
        rounds.push((churn, streams, daemon.rss_kib()));
        worst = worst.max(slowest);
    }
    let peak = rounds.iter().map(|r| r.2).max().unwrap_or(0);

    // A client that asks for a download and stops reading: the others are
    // still answered while it stalls, and it holds only the stream's window.
    let mut slow = Client::dial(&socket).await;
    slow.handshake().await;
    let vol = slow.volume("down.img").await;
    start_download(&mut slow, vol).await;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        worst = worst.max(answered_within(&mut witness, Duration::from_secs(1)).await);
    }
    let stalled = daemon.rss_kib();
    // It reads on, slowly, to the end.
    let mut got = 0usize;
    loop {
        let p = slow.read().await;
        if p.payload.is_empty() {
            break;
        }
        got += p.payload.len();
        if got % (4 << 20) < p.payload.len() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(got, 32 << 20, "the slow reader got the whole volume");
    drop(slow);

    settle().await;
    worst = worst.max(answered_within(&mut witness, Duration::from_secs(2)).await);
    assert!(daemon.alive(), "the daemon died");
    println!(
        "per round: 400 connections dropped, 20 uploads and 20 downloads abandoned: {}; \
         RSS {:.1} MiB at the start, {:.1} MiB with a stalled 32 MiB download; slowest answer \
         to the well-behaved client {worst:.1?}",
        rounds
            .iter()
            .map(|(c, s, rss)| format!("{c:.1?} + {s:.1?}, RSS {:.1} MiB", mib(*rss)))
            .collect::<Vec<_>>()
            .join("; "),
        mib(baseline),
        mib(stalled)
    );
    for (churn, streams, rss) in &rounds {
        assert!(*churn < Duration::from_secs(20), "a churn took {churn:?}");
        assert!(
            *streams < Duration::from_secs(30),
            "abandoned streams took {streams:?}"
        );
        assert!(
            *rss < baseline + (64 << 10),
            "the RSS went from {:.1} MiB to {:.1} MiB",
            mib(baseline),
            mib(*rss)
        );
    }
    // A stalled download holds its window (4 MiB), not the volume (32 MiB)
    // nor the volume queued as packets.
    assert!(
        stalled < peak + (16 << 10),
        "a stalled download took the RSS from {:.1} MiB to {:.1} MiB",
        mib(peak),
        mib(stalled)
    );
}

/// A client that aborts a download half-way gets the abort confirmed (a
/// STREAM OK after whatever data was already on its way) and its connection
/// goes on answering; the rest of the volume is never sent.
#[tokio::test]
async fn a_download_aborted_half_way_is_confirmed_and_stops() {
    let scratch = ScratchDir::new(&format!("robust-abort-{}", std::process::id()));
    let daemon = Daemon::start_with(&scratch.0, STATE);
    let mut c = Client::dial(&daemon.socket).await;
    c.handshake().await;
    let vol = c.volume("down.img").await;
    start_download(&mut c, vol).await;
    let serial = c.serial;
    let first = c.read().await;
    assert_eq!(
        (first.header.serial, first.header.status),
        (serial, Status::Continue)
    );
    let mut out = BytesMut::new();
    let call = Header::call(Procedure::StorageVolDownload, serial);
    encode_raw(&mut out, &call.stream(Status::Error), &[]).unwrap();
    c.io.write_all(&out).await.unwrap();
    let mut data = first.payload.len();
    loop {
        let p = c.read().await;
        assert_eq!(p.header.serial, serial);
        match p.header.status {
            Status::Continue => {
                assert!(!p.payload.is_empty(), "the end mark after an abort");
                data += p.payload.len();
            }
            Status::Ok => break,
            other => panic!("unexpected stream status {other:?}"),
        }
    }
    assert!(
        data < 32 << 20,
        "the whole volume was sent despite the abort"
    );
    let mut witness = c;
    answered_within(&mut witness, Duration::from_secs(1)).await;
}
