//! Every procedure the client has, called on one side with expectations of
//! its own (not a comparison): what a provider relies on, checked the same
//! way on the fake and on a real libvirtd. Also a large upload whose bytes
//! are verified on the far side.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream;
use libvirt_rpc::Client;
use libvirt_wire::{
    CONNECT_LIST_DOMAINS_ACTIVE, ConnectListAllStoragePoolsArgs, DOMAIN_AFFECT_CONFIG,
    DOMAIN_DEFINE_VALIDATE, DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT,
    DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE, DOMAIN_METADATA_ELEMENT, DOMAIN_UNDEFINE_NVRAM,
    DOMAIN_XML_INACTIVE, Domain, DomainState, ErrorCode, Procedure, STORAGE_POOL_CREATE_WITH_BUILD,
    StoragePoolDefineXmlArgs, StoragePoolState, calls,
};

use crate::backend::Backend;
use crate::data::{Pattern, pattern, pattern_sha256};
use crate::script::{
    RunNames, bios_xml, cleanup, dir_pool_xml, pool_dir, pool_target_path, pools_parent,
    raw_volume_xml, squeeze_xml,
};
use crate::target::URI;
use crate::xmlsum::summarise;

/// What an exercise did: one line per call, and the procedures it covered.
#[derive(Debug, Default)]
pub struct Log {
    /// One line per call.
    pub lines: Vec<String>,
    /// The procedures called at least once.
    pub covered: BTreeSet<i32>,
}

impl Log {
    fn note(&mut self, p: Procedure, what: &str, outcome: &str) {
        self.covered.insert(p.to_raw());
        self.lines.push(format!("{p:<32} {what}: {outcome}"));
    }

    /// Expects success.
    fn ok<T>(&mut self, p: Procedure, what: &str, r: libvirt_rpc::Result<T>) -> Result<T, String> {
        match r {
            Ok(v) => {
                self.note(p, what, "ok");
                Ok(v)
            }
            Err(e) => Err(format!("{p} ({what}) failed: {e}")),
        }
    }

    /// Expects libvirt to answer with `code`.
    fn fails<T: std::fmt::Debug>(
        &mut self,
        p: Procedure,
        what: &str,
        r: libvirt_rpc::Result<T>,
        code: ErrorCode,
    ) -> Result<(), String> {
        match r {
            Err(e) if e.as_remote().is_some_and(|r| r.code == code) => {
                self.note(p, what, &format!("fails as expected: {e}"));
                Ok(())
            }
            Err(e) => Err(format!("{p} ({what}): expected {code}, got {e}")),
            Ok(v) => Err(format!("{p} ({what}): expected {code}, got {v:?}")),
        }
    }

    /// Accepts any libvirt answer (its value or its error) but not a
    /// transport or protocol failure.
    fn answers<T: std::fmt::Debug>(
        &mut self,
        p: Procedure,
        what: &str,
        r: libvirt_rpc::Result<T>,
    ) -> Result<Option<T>, String> {
        match r {
            Ok(v) => {
                self.note(p, what, &format!("ok {v:?}"));
                Ok(Some(v))
            }
            Err(e) if e.is_remote() => {
                self.note(p, what, &format!("libvirt error: {e}"));
                Ok(None)
            }
            Err(e) => Err(format!("{p} ({what}): no libvirt answer: {e}")),
        }
    }
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

const META_URI: &str = "https://example.org/kvm2-fidelity/exercise";

/// Calls every procedure of the client on `b` (a domain and volumes named
/// under `names.prefix`), then cleans up. On failure the error names the
/// procedure and what was expected.
pub async fn every_procedure(b: &Backend, names: &RunNames) -> Result<Log, String> {
    let mut log = Log::default();
    let result = calls(b, names, &mut log).await;
    let left = cleanup(b, &names.prefix).await;
    result?;
    ensure!(left.is_empty(), "clean-up left: {left:?}");
    Ok(log)
}

/// Every call of the session, in order: the connection's own, the host's, storage,
/// domains, then a pool's lifecycle.
async fn calls(b: &Backend, names: &RunNames, log: &mut Log) -> Result<(), String> {
    connection_calls(b, log).await?;
    host_calls(b, log).await?;
    storage_calls(b, names, log).await?;
    domain_calls(b, names, log).await?;
    pool_calls(b, names, log).await
}

/// Connection-level procedures, on a connection of their own.
async fn connection_calls(b: &Backend, log: &mut Log) -> Result<(), String> {
    let fresh = b.new_client().await?;
    let auth = log.ok(Procedure::AuthList, "auth list", fresh.auth_list().await)?;
    ensure!(!auth.is_empty(), "AUTH_LIST returned no scheme");
    log.answers(
        Procedure::AuthPolkit,
        "polkit on a socket that does not ask for it",
        fresh.auth_polkit().await,
    )?;
    let keepalive = log.ok(
        Procedure::ConnectSupportsFeature,
        "keepalive before open",
        fresh.enable_server_keepalive().await,
    )?;
    ensure!(keepalive, "the server does not offer keepalive");
    log.ok(
        Procedure::ConnectOpen,
        "open with an explicit URI",
        fresh.connect_open_with(Some(URI), 0).await,
    )?;
    let uri = log.ok(
        Procedure::ConnectGetUri,
        "uri",
        fresh.connect_get_uri().await,
    )?;
    ensure!(uri == URI, "URI {uri:?}");
    log.ok(
        Procedure::ConnectClose,
        "close",
        fresh.connect_close().await,
    )?;
    let after = fresh.connect_get_lib_version().await;
    ensure!(
        after.as_ref().is_err_and(|e| e.is_closed()),
        "a call after CONNECT_CLOSE: {after:?}"
    );
    Ok(())
}

/// The host: versions, name, capabilities, the bridge and the pools.
async fn host_calls(b: &Backend, log: &mut Log) -> Result<(), String> {
    let c = &b.client;
    let v = log.ok(
        Procedure::ConnectGetLibVersion,
        "lib version",
        c.connect_get_lib_version().await,
    )?;
    ensure!(v >= 9_000_000, "libvirt {v} is older than 9.0.0");
    let hv = log.ok(
        Procedure::ConnectGetVersion,
        "hypervisor version",
        c.connect_get_version().await,
    )?;
    ensure!(
        hv >= 1_000_000 && hv % 1_000_000 / 1000 < 1000,
        "hypervisor version {hv} is not major·10⁶ + minor·10³ + micro of at least 1.0.0"
    );
    let host = log.ok(
        Procedure::ConnectGetHostname,
        "hostname",
        c.connect_get_hostname().await,
    )?;
    ensure!(!host.is_empty(), "empty hostname");
    let caps = log.ok(
        Procedure::ConnectGetCapabilities,
        "capabilities",
        c.connect_get_capabilities().await,
    )?;
    ensure!(
        caps.contains("<domain type='qemu'"),
        "capabilities offer no qemu domains"
    );
    let domcaps = log.ok(
        Procedure::ConnectGetDomainCapabilities,
        "domain capabilities (qemu, x86_64)",
        c.connect_get_domain_capabilities(Some("qemu"), Some("x86_64"))
            .await,
    )?;
    ensure!(
        domcaps.contains("<domain>qemu</domain>"),
        "domain capabilities are not for qemu domains"
    );
    // The bridge the host script makes (and the fake has by default).
    let bridge = log.ok(
        Procedure::InterfaceLookupByName,
        "lookup bridge br0",
        c.interface_lookup_by_name("br0").await,
    )?;
    let bridge_xml = log.ok(
        Procedure::InterfaceGetXmlDesc,
        "bridge XML",
        c.interface_get_xml_desc(&bridge).await,
    )?;
    ensure!(
        bridge_xml.starts_with("<interface type='bridge' name='br0'>"),
        "br0 is not a bridge: {bridge_xml}"
    );
    log.ok(
        Procedure::InterfaceIsActive,
        "bridge active",
        c.interface_is_active(&bridge).await,
    )?;
    let pools = log.ok(
        Procedure::ConnectListAllStoragePools,
        "list pools (generic call)",
        c.call::<calls::ConnectListAllStoragePools>(&ConnectListAllStoragePoolsArgs {
            need_results: 1,
            flags: 0,
        })
        .await,
    )?;
    ensure!(
        pools.pools.iter().any(|p| p.name == b.pool),
        "pool {} not listed",
        b.pool
    );
    Ok(())
}

/// Volumes in the test pool: create, list, read, upload, download, delete.
async fn storage_calls(b: &Backend, names: &RunNames, log: &mut Log) -> Result<(), String> {
    let c = &b.client;
    let pool = test_pool(c, &b.pool, log).await?;
    let name = format!("{}-ex.img", names.prefix);
    let (vol, path) = new_volume(c, &pool, &name, log).await?;
    let data = upload_and_download(b, &vol, &name, &path, log).await?;
    upload_other_ways(b, &vol, &name, &path, &data, log).await?;
    let vinfo = log.ok(
        Procedure::StorageVolGetInfo,
        "volume info",
        c.storage_vol_get_info(&vol).await,
    )?;
    ensure!(vinfo.capacity == 1 << 20, "capacity {}", vinfo.capacity);
    storage_queries(c, &pool, &vol, &path, log).await?;
    log.ok(
        Procedure::StorageVolDelete,
        "delete volume",
        c.storage_vol_delete(&vol, 0).await,
    )?;
    log.fails(
        Procedure::StorageVolGetInfo,
        "info of a deleted volume",
        c.storage_vol_get_info(&vol).await,
        ErrorCode::NoStorageVol,
    )?;
    Ok(())
}

/// Looks up the test pool, checks that it runs, and refreshes it.
async fn test_pool(
    c: &Client,
    name: &str,
    log: &mut Log,
) -> Result<libvirt_wire::StoragePool, String> {
    let pool = log.ok(
        Procedure::StoragePoolLookupByName,
        "lookup pool",
        c.storage_pool_lookup_by_name(name).await,
    )?;
    let info = log.ok(
        Procedure::StoragePoolGetInfo,
        "pool info",
        c.storage_pool_get_info(&pool).await,
    )?;
    ensure!(
        StoragePoolState::from_raw(i32::from(info.state)) == StoragePoolState::Running
            && info.available <= info.capacity,
        "pool info {info:?}"
    );
    log.ok(
        Procedure::StoragePoolRefresh,
        "refresh pool",
        c.storage_pool_refresh(&pool).await,
    )?;
    Ok(pool)
}

/// Creates the volume `name` in `pool`, finds it by name and in the pool's list,
/// and returns it with its path.
async fn new_volume(
    c: &Client,
    pool: &libvirt_wire::StoragePool,
    name: &str,
    log: &mut Log,
) -> Result<(libvirt_wire::StorageVol, String), String> {
    let vol = log.ok(
        Procedure::StorageVolCreateXml,
        "create volume",
        c.storage_vol_create_xml(pool, &raw_volume_xml(name, 1 << 20), 0)
            .await,
    )?;
    let found = log.ok(
        Procedure::StorageVolLookupByName,
        "lookup volume",
        c.storage_vol_lookup_by_name(pool, name).await,
    )?;
    ensure!(found == vol, "lookup gave {found:?}, create gave {vol:?}");
    let listed = log.ok(
        Procedure::StoragePoolListAllVolumes,
        "list volumes",
        c.storage_pool_list_all_volumes(pool).await,
    )?;
    ensure!(listed.contains(&vol), "{name} not listed");
    let path = log.ok(
        Procedure::StorageVolGetPath,
        "volume path",
        c.storage_vol_get_path(&vol).await,
    )?;
    ensure!(
        path.ends_with(&format!("/{name}")),
        "path {path} does not end with the name"
    );
    Ok((vol, path))
}

/// Uploads a pattern with write + finish, reads it back from the volume and
/// downloads it; returns the pattern.
async fn upload_and_download(
    b: &Backend,
    vol: &libvirt_wire::StorageVol,
    name: &str,
    path: &str,
    log: &mut Log,
) -> Result<Vec<u8>, String> {
    let c = &b.client;
    // Upload three ways: write + finish, a reader, a stream of pieces; and
    // an abort, which keeps what was sent.
    let data = pattern(100_000, 11);
    let mut up = log.ok(
        Procedure::StorageVolUpload,
        "open upload",
        c.storage_vol_upload(vol, 0, 0, 0).await,
    )?;
    up.write(Bytes::from(data.clone()))
        .await
        .map_err(|e| format!("upload write: {e}"))?;
    let sent = up
        .finish()
        .await
        .map_err(|e| format!("upload finish: {e}"))?;
    ensure!(sent == data.len() as u64, "sent {sent}");
    let back = b.read_volume(name, path, data.len())?;
    ensure!(back == data, "bytes read back differ from the upload");
    let down = log.ok(
        Procedure::StorageVolDownload,
        "download what was uploaded",
        async {
            c.storage_vol_download(vol, 0, data.len() as u64, 0)
                .await?
                .read_all()
                .await
        }
        .await,
    )?;
    ensure!(down == data, "bytes downloaded differ from the upload");
    Ok(data)
}

/// Uploads at an offset from a reader, as a stream of pieces, and one that is
/// aborted.
async fn upload_other_ways(
    b: &Backend,
    vol: &libvirt_wire::StorageVol,
    name: &str,
    path: &str,
    data: &[u8],
    log: &mut Log,
) -> Result<(), String> {
    let c = &b.client;
    let second = pattern(50_000, 12);
    let up = c
        .storage_vol_upload(vol, 100_000, 50_000, 0)
        .await
        .map_err(|e| format!("upload at an offset: {e}"))?;
    up.send_reader(std::io::Cursor::new(second.clone()))
        .await
        .map_err(|e| format!("upload from a reader: {e}"))?;
    let back = b.read_volume(name, path, 150_000)?;
    ensure!(
        back[..100_000] == data[..] && back[100_000..] == second[..],
        "bytes after an upload at an offset differ"
    );

    let pieces: Vec<Result<Bytes, std::io::Error>> = (0..4)
        .map(|i| Ok(Bytes::from(pattern(10_000, 20 + i))))
        .collect();
    let up = c
        .storage_vol_upload(vol, 0, 0, 0)
        .await
        .map_err(|e| format!("upload of a stream: {e}"))?;
    let n = up
        .send_stream(stream::iter(pieces))
        .await
        .map_err(|e| format!("upload of a stream: {e}"))?;
    ensure!(n == 40_000, "stream sent {n}");

    let mut up = c
        .storage_vol_upload(vol, 0, 0, 0)
        .await
        .map_err(|e| format!("upload to abort: {e}"))?;
    up.write(Bytes::from_static(b"abort me"))
        .await
        .map_err(|e| format!("write before abort: {e}"))?;
    up.abort().await.map_err(|e| format!("abort: {e}"))?;
    log.note(
        Procedure::StorageVolUpload,
        "write, reader, stream and abort",
        "ok",
    );
    Ok(())
}

/// A domain's life: define, start, read, stop, undefine.
async fn domain_calls(b: &Backend, names: &RunNames, log: &mut Log) -> Result<(), String> {
    let c = &b.client;
    let (dname, uuid) = &names.transient;
    let dom = define_domain(c, dname, uuid, log).await?;
    metadata_calls(c, &dom, log).await?;
    let running = start_suspend_resume(c, &dom, log).await?;
    running_reads(c, &running, dname, log).await?;
    stop_and_restart(c, &dom, &running, log).await?;
    domain_queries(c, &dom, log).await?;
    destroy_and_undefine(c, &dom, dname, log).await
}

/// Defines the domain (twice), looks it up by name and uuid, and checks that it
/// is shut off.
async fn define_domain(
    c: &Client,
    dname: &str,
    uuid: &libvirt_wire::Uuid,
    log: &mut Log,
) -> Result<Domain, String> {
    let xml = bios_xml(dname, uuid);
    let dom = log.ok(
        Procedure::DomainDefineXmlFlags,
        "define with validation",
        c.domain_define_xml_flags(&xml, DOMAIN_DEFINE_VALIDATE)
            .await,
    )?;
    ensure!(dom.id == -1 && dom.uuid == *uuid, "defined {dom:?}");
    log.ok(
        Procedure::DomainDefineXml,
        "define again (update)",
        c.domain_define_xml(&xml).await,
    )?;
    let by_name = log.ok(
        Procedure::DomainLookupByName,
        "lookup by name",
        c.domain_lookup_by_name(dname).await,
    )?;
    let by_uuid = log.ok(
        Procedure::DomainLookupByUuid,
        "lookup by uuid",
        c.domain_lookup_by_uuid(*uuid).await,
    )?;
    ensure!(by_name == dom && by_uuid == dom, "lookups disagree");
    let (state, reason) = log.ok(
        Procedure::DomainGetState,
        "state defined",
        c.domain_get_state(&dom).await,
    )?;
    ensure!(
        state == DomainState::Shutoff && reason == 0,
        "state {state:?}/{reason}"
    );
    Ok(dom)
}

/// Sets an element of metadata in the config and reads it back.
async fn metadata_calls(c: &Client, dom: &Domain, log: &mut Log) -> Result<(), String> {
    log.ok(
        Procedure::DomainSetMetadata,
        "set metadata (config)",
        c.domain_set_metadata(
            dom,
            DOMAIN_METADATA_ELEMENT,
            Some("<mark uid=\"u\"><tag>t</tag></mark>"),
            Some("ex"),
            Some(META_URI),
            DOMAIN_AFFECT_CONFIG,
        )
        .await,
    )?;
    let meta = log.ok(
        Procedure::DomainGetMetadata,
        "get metadata",
        c.domain_get_metadata(dom, DOMAIN_METADATA_ELEMENT, Some(META_URI), 0)
            .await,
    )?;
    ensure!(
        squeeze_xml(&meta) == "<mark uid=\"u\"><tag>t</tag></mark>",
        "metadata came back as {meta:?}"
    );
    Ok(())
}

/// Starts the domain, checks its info, suspends and resumes it; returns the
/// running domain.
async fn start_suspend_resume(c: &Client, dom: &Domain, log: &mut Log) -> Result<Domain, String> {
    let running = log.ok(
        Procedure::DomainCreateWithFlags,
        "start",
        c.domain_create_with_flags(dom, 0).await,
    )?;
    ensure!(running.id >= 1, "started domain has id {}", running.id);
    let dinfo = log.ok(
        Procedure::DomainGetInfo,
        "info running",
        c.domain_get_info(&running).await,
    )?;
    ensure!(
        DomainState::from_raw(i32::from(dinfo.state)) == DomainState::Running
            && dinfo.max_mem == 65536
            && dinfo.nr_virt_cpu == 1,
        "info {dinfo:?}"
    );
    log.ok(
        Procedure::DomainSuspend,
        "suspend",
        c.domain_suspend(&running).await,
    )?;
    let (state, _) = c
        .domain_get_state(&running)
        .await
        .map_err(|e| format!("state after suspend: {e}"))?;
    ensure!(state == DomainState::Paused, "after suspend: {state:?}");
    log.ok(
        Procedure::DomainResume,
        "resume",
        c.domain_resume(&running).await,
    )?;
    log.fails(
        Procedure::DomainResume,
        "resume a running domain",
        c.domain_resume(&running).await,
        ErrorCode::OperationInvalid,
    )?;
    let (state, _) = c
        .domain_get_state(&running)
        .await
        .map_err(|e| format!("state after resume: {e}"))?;
    ensure!(state == DomainState::Running, "after resume: {state:?}");
    Ok(running)
}

/// Reads the running domain: the active list, its live and inactive XML, its
/// addresses.
async fn running_reads(
    c: &Client,
    running: &Domain,
    dname: &str,
    log: &mut Log,
) -> Result<(), String> {
    let active = log.ok(
        Procedure::ConnectListAllDomains,
        "list active",
        c.connect_list_all_domains(CONNECT_LIST_DOMAINS_ACTIVE)
            .await,
    )?;
    ensure!(
        active.iter().any(|d| d.name == *dname),
        "{dname} not listed as active"
    );
    let live = log.ok(
        Procedure::DomainGetXmlDesc,
        "live XML",
        c.domain_get_xml_desc(running, 0).await,
    )?;
    let summary = summarise(&live)?;
    ensure!(
        summary.name.as_deref() == Some(dname) && summary.has_id,
        "live XML lacks name or id: {summary}"
    );
    let inactive = log.ok(
        Procedure::DomainGetXmlDesc,
        "inactive XML",
        c.domain_get_xml_desc(running, DOMAIN_XML_INACTIVE).await,
    )?;
    ensure!(!summarise(&inactive)?.has_id, "inactive XML has an id");
    log.fails(
        Procedure::DomainInterfaceAddresses,
        "agent addresses without an agent",
        c.domain_interface_addresses(running, DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, 0)
            .await,
        ErrorCode::ArgumentUnsupported,
    )?;
    log.answers(
        Procedure::DomainInterfaceAddresses,
        "lease addresses",
        c.domain_interface_addresses(running, DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE, 0)
            .await,
    )?;
    Ok(())
}

/// Asks for a shutdown, destroys the domain if it is still up, and starts it
/// again.
async fn stop_and_restart(
    c: &Client,
    dom: &Domain,
    running: &Domain,
    log: &mut Log,
) -> Result<(), String> {
    log.ok(
        Procedure::DomainShutdownFlags,
        "shutdown request",
        c.domain_shutdown_flags(running, 0).await,
    )?;
    // A guest may comply with the shutdown at once (the fake's do): a stop
    // that finds it already stopped is fine.
    let stopped = c.domain_destroy_flags(running, 0).await;
    match &stopped {
        Err(e)
            if e.as_remote()
                .is_some_and(|r| r.code == ErrorCode::OperationInvalid) =>
        {
            log.note(Procedure::DomainDestroyFlags, "destroy", "already stopped")
        }
        _ => {
            log.ok(Procedure::DomainDestroyFlags, "destroy with flags", stopped)?;
        }
    }
    log.ok(
        Procedure::DomainCreate,
        "start again",
        c.domain_create(dom).await,
    )?;
    Ok(())
}

/// Destroys the domain, checks that it is off, undefines it and checks that it
/// is gone.
async fn destroy_and_undefine(
    c: &Client,
    dom: &Domain,
    dname: &str,
    log: &mut Log,
) -> Result<(), String> {
    log.ok(
        Procedure::DomainDestroy,
        "destroy",
        c.domain_destroy(dom).await,
    )?;
    let (state, reason) = c
        .domain_get_state(dom)
        .await
        .map_err(|e| format!("state after destroy: {e}"))?;
    ensure!(
        state == DomainState::Shutoff && reason == 2,
        "after destroy: {state:?}/{reason}"
    );
    log.fails(
        Procedure::DomainShutdown,
        "shutdown while off",
        c.domain_shutdown(dom).await,
        ErrorCode::OperationInvalid,
    )?;
    log.ok(
        Procedure::DomainUndefineFlags,
        "undefine",
        c.domain_undefine_flags(dom, DOMAIN_UNDEFINE_NVRAM).await,
    )?;
    log.fails(
        Procedure::DomainLookupByName,
        "lookup undefined",
        c.domain_lookup_by_name(dname).await,
        ErrorCode::NoDomain,
    )?;
    Ok(())
}

/// The pool lifecycle on a directory pool of its own, next to the test
/// pool's directory.
async fn pool_calls(b: &Backend, names: &RunNames, log: &mut Log) -> Result<(), String> {
    let c = &b.client;
    let parent = pools_parent(c, &b.pool).await?;
    let name = format!("{}-expool", names.prefix);
    let dir = pool_dir(&parent, &names.prefix, "exdir");
    let xml = dir_pool_xml(&name, &dir);
    let pool = define_and_start_pool(c, &xml, &dir, log).await?;
    volume_and_pool_deletion(c, &pool, &names.prefix, log).await?;
    transient_pool_calls(c, &xml, &name, log).await
}

/// Defines the pool (and fails to define it twice), builds and starts it, and
/// checks its XML's path.
async fn define_and_start_pool(
    c: &Client,
    xml: &str,
    dir: &str,
    log: &mut Log,
) -> Result<libvirt_wire::StoragePool, String> {
    let pool = log.ok(
        Procedure::StoragePoolDefineXml,
        "define pool",
        c.storage_pool_define_xml(xml).await,
    )?;
    log.fails(
        Procedure::StoragePoolDefineXml,
        "define the name again",
        c.storage_pool_define_xml(xml).await,
        ErrorCode::OperationFailed,
    )?;
    log.ok(
        Procedure::StoragePoolBuild,
        "build pool",
        c.storage_pool_build(&pool).await,
    )?;
    log.ok(
        Procedure::StoragePoolCreate,
        "start pool",
        c.storage_pool_create(&pool).await,
    )?;
    let pxml = log.ok(
        Procedure::StoragePoolGetXmlDesc,
        "pool XML",
        c.storage_pool_get_xml_desc(&pool).await,
    )?;
    ensure!(
        pool_target_path(&pxml).as_deref() == Some(dir),
        "pool XML has another path: {pxml}"
    );
    Ok(pool)
}

/// Makes a volume in the pool, fails to delete the pool while it holds the
/// volume, then deletes the volume, the pool and its definition.
async fn volume_and_pool_deletion(
    c: &Client,
    pool: &libvirt_wire::StoragePool,
    prefix: &str,
    log: &mut Log,
) -> Result<(), String> {
    let vol = log.ok(
        Procedure::StorageVolCreateXml,
        "volume in the new pool",
        c.storage_vol_create_xml(pool, &raw_volume_xml(&format!("{prefix}-p.img"), 4096), 0)
            .await,
    )?;
    log.ok(
        Procedure::StoragePoolDestroy,
        "stop pool",
        c.storage_pool_destroy(pool).await,
    )?;
    log.fails(
        Procedure::StoragePoolDelete,
        "delete a pool that holds a volume",
        c.storage_pool_delete(pool).await,
        ErrorCode::SystemError,
    )?;
    c.storage_pool_create(pool)
        .await
        .map_err(|e| format!("restart pool: {e}"))?;
    c.storage_vol_delete(&vol, 0)
        .await
        .map_err(|e| format!("delete the volume: {e}"))?;
    c.storage_pool_destroy(pool)
        .await
        .map_err(|e| format!("stop pool again: {e}"))?;
    log.ok(
        Procedure::StoragePoolDelete,
        "delete pool",
        c.storage_pool_delete(pool).await,
    )?;
    log.ok(
        Procedure::StoragePoolUndefine,
        "undefine pool",
        c.storage_pool_undefine(pool).await,
    )?;
    Ok(())
}

/// Creates a transient pool from the same XML under another name, stops it, and
/// checks that it is gone.
async fn transient_pool_calls(
    c: &Client,
    xml: &str,
    name: &str,
    log: &mut Log,
) -> Result<(), String> {
    let transient = log.ok(
        Procedure::StoragePoolCreateXml,
        "create a transient pool",
        c.call::<calls::StoragePoolCreateXml>(&StoragePoolDefineXmlArgs {
            xml: xml.replace(name, &format!("{name}-t")),
            flags: STORAGE_POOL_CREATE_WITH_BUILD,
        })
        .await
        .map(|r| r.pool),
    )?;
    c.storage_pool_destroy(&transient)
        .await
        .map_err(|e| format!("stop the transient pool: {e}"))?;
    log.fails(
        Procedure::StoragePoolLookupByName,
        "a stopped transient pool is gone",
        c.storage_pool_lookup_by_name(&transient.name).await,
        ErrorCode::NoStoragePool,
    )?;
    Ok(())
}

/// The questions virsh's `version`, `nodeinfo` and `dominfo` ask, on a
/// running domain, and a session's close callback.
async fn domain_queries(
    c: &Client,
    dom: &libvirt_wire::Domain,
    log: &mut Log,
) -> Result<(), String> {
    host_queries(c, dom, log).await?;
    domain_state_queries(c, dom, log).await
}

/// The driver type, the node's info and security model, the domain's label, and
/// registering a close callback.
async fn host_queries(c: &Client, dom: &Domain, log: &mut Log) -> Result<(), String> {
    let kind = log.ok(
        Procedure::ConnectGetType,
        "driver type",
        c.connect_get_type().await,
    )?;
    ensure!(kind == "QEMU", "driver type {kind}");
    let node = log.ok(Procedure::NodeGetInfo, "node info", c.node_get_info().await)?;
    ensure!(node.cpus > 0 && node.memory > 0, "node info {node:?}");
    let model = log.ok(
        Procedure::NodeGetSecurityModel,
        "security model",
        c.node_get_security_model().await,
    )?;
    log.ok(
        Procedure::DomainGetSecurityLabel,
        "security label",
        c.domain_get_security_label(dom).await,
    )?;
    ensure!(model.doi.0.len() < 257, "doi {model:?}");
    log.ok(
        Procedure::ConnectRegisterCloseCallback,
        "register close callback",
        c.connect_register_close_callback().await,
    )?;
    log.ok(
        Procedure::ConnectUnregisterCloseCallback,
        "unregister close callback",
        c.connect_unregister_close_callback().await,
    )?;
    Ok(())
}

/// The domain's OS type, whether it is active and persistent, its autostart,
/// managed save image, snapshots and messages.
async fn domain_state_queries(c: &Client, dom: &Domain, log: &mut Log) -> Result<(), String> {
    let os = log.ok(
        Procedure::DomainGetOsType,
        "os type",
        c.domain_get_os_type(dom).await,
    )?;
    ensure!(os == "hvm", "os type {os}");
    let active = log.ok(
        Procedure::DomainIsActive,
        "active",
        c.domain_is_active(dom).await,
    )?;
    ensure!(active, "a started domain is not active");
    let persistent = log.ok(
        Procedure::DomainIsPersistent,
        "persistent",
        c.domain_is_persistent(dom).await,
    )?;
    ensure!(persistent, "a defined domain is not persistent");
    log.ok(
        Procedure::DomainGetAutostart,
        "autostart",
        c.domain_get_autostart(dom).await,
    )?;
    log.ok(
        Procedure::DomainGetAutostartOnce,
        "autostart once",
        c.domain_get_autostart_once(dom).await,
    )?;
    let saved = log.ok(
        Procedure::DomainHasManagedSaveImage,
        "managed save image",
        c.domain_has_managed_save_image(dom).await,
    )?;
    ensure!(!saved, "a managed save image nobody made");
    let snaps = log.ok(
        Procedure::DomainSnapshotNum,
        "snapshots",
        c.domain_snapshot_num(dom).await,
    )?;
    ensure!(snaps == 0, "{snaps} snapshots nobody made");
    log.ok(
        Procedure::DomainGetMessages,
        "messages",
        c.domain_get_messages(dom, 0).await,
    )?;
    Ok(())
}

/// The questions virsh's `pool-info`, `pool-list` and `vol-info` ask.
async fn storage_queries(
    c: &Client,
    pool: &libvirt_wire::StoragePool,
    vol: &libvirt_wire::StorageVol,
    path: &str,
    log: &mut Log,
) -> Result<(), String> {
    let active = log.ok(
        Procedure::StoragePoolIsActive,
        "pool active",
        c.storage_pool_is_active(pool).await,
    )?;
    ensure!(active, "the test pool is not active");
    log.ok(
        Procedure::StoragePoolIsPersistent,
        "pool persistent",
        c.storage_pool_is_persistent(pool).await,
    )?;
    log.ok(
        Procedure::StoragePoolGetAutostart,
        "pool autostart",
        c.storage_pool_get_autostart(pool).await,
    )?;
    let found = log.ok(
        Procedure::StorageVolLookupByPath,
        "lookup volume by path",
        c.storage_vol_lookup_by_path(path).await,
    )?;
    ensure!(found == *vol, "by path: {found:?}, created: {vol:?}");
    let found = log.ok(
        Procedure::StorageVolLookupByKey,
        "lookup volume by key",
        c.storage_vol_lookup_by_key(&vol.key).await,
    )?;
    ensure!(found == *vol, "by key: {found:?}, created: {vol:?}");
    let owner = log.ok(
        Procedure::StoragePoolLookupByVolume,
        "pool of the volume",
        c.storage_pool_lookup_by_volume(vol).await,
    )?;
    ensure!(owner == *pool, "pool of the volume: {owner:?}");
    Ok(())
}

/// The procedures of the protocol table that `log` did not call.
pub fn uncovered(log: &Log) -> Vec<Procedure> {
    Procedure::ALL
        .iter()
        .copied()
        .filter(|p| !log.covered.contains(&p.to_raw()))
        .collect()
}

/// What a large upload measured.
#[derive(Debug, Clone)]
pub struct UploadReport {
    /// Bytes uploaded.
    pub bytes: u64,
    /// Time from opening the stream to the server's confirmation.
    pub elapsed: Duration,
    /// SHA-256 of what was sent.
    pub sent_sha256: String,
    /// SHA-256 of what the far side holds.
    pub stored_sha256: String,
}

impl UploadReport {
    /// MiB per second.
    pub fn mib_per_s(&self) -> f64 {
        self.bytes as f64 / (1 << 20) as f64 / self.elapsed.as_secs_f64()
    }
}

/// Creates a raw volume of `size` bytes, uploads `size` pattern bytes into
/// it in 1 MiB pieces, and hashes what the far side stored (the file in the
/// pool directory for the real host). Deletes the volume afterwards.
pub async fn large_upload(
    b: &Backend,
    names: &RunNames,
    size: u64,
) -> Result<UploadReport, String> {
    let c: Client = b.client.with_timeout(Duration::from_secs(600));
    let name = format!("{}-large.img", names.prefix);
    let result = async {
        let pool = c
            .storage_pool_lookup_by_name(&b.pool)
            .await
            .map_err(|e| format!("pool: {e}"))?;
        let vol = c
            .storage_vol_create_xml(&pool, &raw_volume_xml(&name, size), 0)
            .await
            .map_err(|e| format!("create: {e}"))?;
        let path = c
            .storage_vol_get_path(&vol)
            .await
            .map_err(|e| format!("path: {e}"))?;
        const PIECE: usize = 1 << 20;
        let mut source = Pattern::new(64);
        let pieces = stream::iter((0..size.div_ceil(PIECE as u64)).map(move |i| {
            let n = (size - i * PIECE as u64).min(PIECE as u64) as usize;
            let mut buf = vec![0u8; n];
            source.fill(&mut buf);
            Ok::<_, std::io::Error>(Bytes::from(buf))
        }));
        let started = Instant::now();
        let up = c
            .storage_vol_upload(&vol, 0, size, 0)
            .await
            .map_err(|e| format!("open upload: {e}"))?;
        let sent = up
            .send_stream(pieces)
            .await
            .map_err(|e| format!("upload: {e}"))?;
        let elapsed = started.elapsed();
        if sent != size {
            return Err(format!("sent {sent} of {size} bytes"));
        }
        let stored = {
            let (b, name, path) = (b.clone(), name.clone(), path.clone());
            tokio::task::spawn_blocking(move || b.volume_sha256(&name, &path, size))
                .await
                .map_err(|e| format!("hashing: {e}"))??
        };
        Ok(UploadReport {
            bytes: size,
            elapsed,
            sent_sha256: pattern_sha256(size, 64, PIECE),
            stored_sha256: stored,
        })
    }
    .await;
    let left = cleanup(b, &names.prefix).await;
    let report = result?;
    ensure!(left.is_empty(), "clean-up left: {left:?}");
    Ok(report)
}
