//! The bodies of the fuzz targets in `fuzz/`, kept here so that a plain
//! `cargo test` replays each committed seed corpus through exactly the code
//! the fuzzer runs: the XML readers, the state file, and the daemon's
//! decoding and answering of calls. Not part of the crate's API.

use uuid::Uuid;

use crate::xml::{
    ParsedDomain, ParsedPool, Rendered, RenderedPool, parse_domain, parse_pool, parse_volume,
    render_domain, render_pool,
};

/// Reads `data` as a domain definition a client sends to `DomainDefineXML`.
/// Nothing may panic, and a definition that parses, rendered back as
/// `DomainGetXMLDesc` would, must parse to the same facts: what a client
/// reads back it can define again.
pub fn parse_domain_xml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(first) = parse_domain(text) else {
        return;
    };
    let uuid = first.uuid.unwrap_or_else(Uuid::nil);
    let rendered = render(&first, &uuid);
    let again = parse_domain(&rendered)
        .unwrap_or_else(|e| panic!("a rendered domain re-parses: {e}: {rendered:?}"));
    assert_eq!(again.uuid, Some(uuid), "{rendered:?}");
    assert_eq!(facts(&again), facts(&first), "{rendered:?}");
    // Rendering is stable from then on, to the byte.
    assert_eq!(render(&again, &uuid), rendered);
}

fn render(d: &ParsedDomain, uuid: &Uuid) -> String {
    render_domain(
        &d.body,
        Rendered {
            uuid,
            id: None,
            title: d.title.as_deref(),
            description: d.description.as_deref(),
            metadata: &d.metadata,
        },
    )
}

/// Everything the model keeps from a domain but its UUID and stored body.
#[allow(clippy::type_complexity)]
fn facts(
    d: &ParsedDomain,
) -> (
    &str,
    bool,
    Option<&str>,
    Option<&str>,
    bool,
    (u64, u64, u16),
    &[String],
    &[String],
    &[crate::types::MetadataEntry],
    (Option<&str>, Option<&str>),
) {
    (
        &d.name,
        d.uefi,
        d.nvram_path.as_deref(),
        d.nvram_template.as_deref(),
        d.agent_channel,
        (d.max_mem_kib, d.memory_kib, d.vcpus),
        &d.macs,
        &d.disk_files,
        &d.metadata,
        (d.title.as_deref(), d.description.as_deref()),
    )
}

/// Reads `data` as a volume definition a client sends to
/// `StorageVolCreateXML`. Nothing may panic, and what parses has a name and
/// a size or a backing volume to take one from.
pub fn parse_volume_xml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(v) = parse_volume(text) {
        assert!(!v.name.is_empty());
        assert!(v.capacity.is_some() || v.backing_path.is_some());
    }
}

/// Reads `data` as a storage pool definition a client sends to
/// `StoragePoolDefineXML`. Nothing may panic, and a pool that parses,
/// rendered back as `StoragePoolGetXMLDesc` would, parses to the same pool.
pub fn parse_pool_xml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(pool) = parse_pool(text) else {
        return;
    };
    let uuid = pool.uuid.unwrap_or_else(Uuid::nil);
    let rendered = render_pool(RenderedPool {
        name: &pool.name,
        uuid: &uuid,
        capacity: 1 << 40,
        allocation: 1 << 30,
        available: (1 << 40) - (1 << 30),
        path: &pool.path,
        mode: Some(0o755),
    });
    let again = parse_pool(&rendered)
        .unwrap_or_else(|e| panic!("a rendered pool re-parses: {e}: {rendered:?}"));
    assert_eq!(
        again,
        ParsedPool {
            uuid: Some(uuid),
            ..pool
        },
        "{rendered:?}"
    );
}

/// Reads `data` as a `fake-libvirtd` state file and loads it into a fresh
/// host. Nothing may panic, and a file that loads gives a host with each of
/// its pools and domains. Files naming other files (`xml_file`) are
/// skipped, so the fuzzer reads nothing from disk.
pub fn load_state_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(state) = crate::StateFile::parse(text, std::path::Path::new("/nonexistent")) else {
        return;
    };
    if state.domains.iter().any(|d| d.xml_file.is_some()) {
        return;
    }
    let fake = crate::FakeLibvirt::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if runtime.block_on(state.apply(&fake)).is_ok() {
        let pools = fake.pools();
        for p in &state.pools {
            assert!(pools.contains(&p.name), "pool {} missing", p.name);
        }
        assert_eq!(fake.domains().len(), state.domains.len());
    }
}

/// Panics seen anywhere in the process since the counter was installed,
/// spawned tasks included (a task's panic never reaches its caller).
fn panics_so_far() -> usize {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
    PANICS.load(Ordering::SeqCst)
}

/// A host with something for calls to find: a running domain `d`, pool
/// `p` with a raw volume `v.img` holding a few bytes.
async fn calls_fixture() -> crate::FakeLibvirt {
    let fake = crate::FakeLibvirt::new();
    fake.add_pool("p", "/srv/fuzz", 1 << 30);
    let conn = fake.connect().expect("a dial");
    let _ = conn.auth_list().await;
    let _ = conn.open(Some("qemu:///system"), 0).await;
    if let Ok(dom) = conn
        .domain_define_xml("<domain type='kvm'><name>d</name><memory>1024</memory></domain>")
        .await
    {
        let _ = conn.domain_create_with_flags(&dom, 0).await;
    }
    if let Ok(pool) = conn.storage_pool_lookup_by_name("p").await
        && let Ok(vol) = conn
            .storage_vol_create_xml(
                &pool,
                "<volume><name>v.img</name><capacity>4096</capacity></volume>",
                0,
            )
            .await
        && let Ok(mut up) = conn.storage_vol_upload(&vol, 0, 0, 0).await
    {
        let _ = up.send(b"fuzz");
        let _ = up.finish();
    }
    conn.close();
    fake
}

/// How many CALL packets `data` holds before anything unreadable.
fn calls_in(data: &[u8]) -> usize {
    let mut buf = bytes::BytesMut::from(data);
    let mut n = 0;
    while let Ok(Some(p)) = libvirt_wire::Packet::decode_from(&mut buf) {
        n += usize::from(p.header.kind == libvirt_wire::MessageType::Call);
    }
    n
}

/// Serves `data` as the bytes a client sends the daemon on one connection
/// (`AUTH_LIST` and `CONNECT_OPEN` are sent first, so the input reaches the
/// calls of an open connection), waits for a reply to each of its calls
/// (or for the server to close, or a second), then closes the client's
/// side. Nothing may panic, in the server or in a task it spawns, and the
/// server must finish once the client has gone.
pub fn serve_calls(data: &[u8]) {
    use libvirt_wire::{ConnectOpenArgs, Header, MessageType, Packet, Procedure, encode_packet};
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let before = panics_so_far();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let fake = calls_fixture().await;
        let mut hello = bytes::BytesMut::new();
        let open = ConnectOpenArgs {
            name: Some("qemu:///system".into()),
            flags: 0,
        };
        encode_packet(&mut hello, &Header::call(Procedure::AuthList, 1), &()).expect("encodes");
        encode_packet(&mut hello, &Header::call(Procedure::ConnectOpen, 2), &open)
            .expect("encodes");
        let (client, server) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(async move { fake.serve(server).await });
        let (mut rd, mut wr) = tokio::io::split(client);
        let (replied, mut replies) = tokio::sync::mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut buf = bytes::BytesMut::with_capacity(1 << 16);
            while matches!(rd.read_buf(&mut buf).await, Ok(n) if n > 0) {
                while let Ok(Some(p)) = Packet::decode_from(&mut buf) {
                    if p.header.kind == MessageType::Reply {
                        let _ = replied.send(());
                    }
                }
            }
        });
        // The server may stop reading (a protocol violation closes it).
        let _ = wr.write_all(&hello).await;
        let _ = wr.write_all(data).await;
        let expected = calls_in(data) + 2;
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            for _ in 0..expected {
                if replies.recv().await.is_none() {
                    break;
                }
            }
        })
        .await;
        let _ = wr.shutdown().await;
        let served = tokio::time::timeout(Duration::from_secs(10), serving).await;
        assert!(
            served.is_ok(),
            "the server did not finish after the client left"
        );
        reader.abort();
    });
    drop(runtime);
    assert_eq!(panics_so_far(), before, "a panic while serving the input");
}

#[cfg(test)]
mod replay {
    fn replay(target: &str, f: fn(&[u8])) {
        seed_corpus::replay(env!("CARGO_MANIFEST_DIR"), target, f);
    }

    #[test]
    fn parse_domain_corpus() {
        replay("parse_domain", super::parse_domain_xml);
    }

    #[test]
    fn parse_volume_corpus() {
        replay("parse_volume", super::parse_volume_xml);
    }

    #[test]
    fn parse_pool_corpus() {
        replay("parse_pool", super::parse_pool_xml);
    }

    #[test]
    fn serve_calls_corpus() {
        replay("serve_calls", super::serve_calls);
    }

    #[test]
    fn load_state_file_corpus() {
        replay("load_state_file", super::load_state_file);
    }
}
