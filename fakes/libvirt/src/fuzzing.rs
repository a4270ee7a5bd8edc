//! The bodies of the fuzz targets in `fuzz/`, kept here so that a plain
//! `cargo test` replays each committed seed corpus through exactly the code
//! the fuzzer runs. Not part of the crate's API.

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
    fn load_state_file_corpus() {
        replay("load_state_file", super::load_state_file);
    }
}
