//! The scripted RPC sequences run on both sides, each step recorded with a
//! rendering that keeps what must agree and drops what may differ.
//!
//! Every name the script creates starts with the run's prefix, so runs on a
//! shared host never collide, and [`cleanup`] removes everything with that
//! prefix (domains, their NVRAM, volumes) whatever happened before.

// The renderers take exactly the reference types the recorder hands them, so
// they can be passed by name.
#![allow(clippy::ptr_arg)]

use bytes::Bytes;
use libvirt_rpc::Client;
use libvirt_wire::{
    CONNECT_LIST_DOMAINS_ACTIVE, CONNECT_LIST_DOMAINS_INACTIVE, ConnectGetDomainCapabilitiesArgs,
    ConnectListAllStoragePoolsArgs, DOMAIN_AFFECT_CONFIG, DOMAIN_AFFECT_CURRENT,
    DOMAIN_AFFECT_LIVE, DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE,
    DOMAIN_METADATA_DESCRIPTION, DOMAIN_METADATA_ELEMENT, DOMAIN_METADATA_TITLE,
    DOMAIN_UNDEFINE_NVRAM, DOMAIN_XML_INACTIVE, Domain, DomainGetInfoRet, DomainInterface,
    DomainState, ErrorCode, FEATURE_PROGRAM_KEEPALIVE, InterfaceGetXmlDescArgs, Procedure,
    STORAGE_POOL_CREATE_WITH_BUILD, StoragePool, StoragePoolDefineXmlArgs, StoragePoolGetInfoRet,
    StoragePoolState, StorageVol, StorageVolGetInfoRet, Uuid, calls,
};

use crate::backend::Backend;
use crate::data::pattern;
use crate::record::{Outcome, Recorder, Step};
use crate::xmlsum::summarise;

mod cleanup;
mod client;
mod connect;
mod domains;
mod missing;
mod pools;
mod show;
mod storage;
mod uefi;
mod virsh;
mod xml;

pub use cleanup::cleanup;
use client::*;
pub use client::{pool_dir, pools_parent};
use connect::*;
use domains::*;
use missing::*;
use pools::*;
use show::*;
pub use show::{BLOCK, show_dom, show_info, show_pool_info, show_pool_xml, show_vol_info};
use storage::*;
use uefi::*;
use virsh::*;
use xml::*;
pub use xml::{
    bios_xml, dir_pool_xml, disk_domain_xml, nvram_template_xml, overlay_xml, pool_target_path,
    raw_volume_xml, squeeze_xml, uefi_xml,
};

/// The names and UUIDs of one run, the same on both sides.
#[derive(Debug, Clone)]
pub struct RunNames {
    /// Prefix of every name the run creates.
    pub prefix: String,
    /// The UEFI domain that is started, stopped and undefined.
    pub uefi: (String, Uuid),
    /// A UEFI domain that is never started.
    pub cold: (String, Uuid),
    /// A BIOS domain made transient while running.
    pub transient: (String, Uuid),
    /// A domain that never exists.
    pub missing: (String, Uuid),
    /// The BIOS domain virsh's `dominfo` questions are asked about.
    pub virsh: (String, Uuid),
}

fn wire_uuid() -> Uuid {
    Uuid(*uuid::Uuid::new_v4().as_bytes())
}

impl RunNames {
    /// Fresh names under a random prefix `fid-xxxxxxxx`.
    pub fn new() -> Self {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        Self::with_prefix(&format!("fid-{}", &tag[..8]))
    }

    /// Names under `prefix`, with fresh UUIDs.
    pub fn with_prefix(prefix: &str) -> Self {
        let n = |s: &str| (format!("{prefix}-{s}"), wire_uuid());
        RunNames {
            prefix: prefix.to_owned(),
            uefi: n("uefi"),
            cold: n("cold"),
            transient: n("transient"),
            missing: n("missing"),
            virsh: n("virsh"),
        }
    }

    fn teach(&self, rec: &mut Recorder) {
        for (label, (_, uuid)) in [
            ("uefi", &self.uefi),
            ("cold", &self.cold),
            ("transient", &self.transient),
            ("missing", &self.missing),
            ("virsh", &self.virsh),
        ] {
            rec.norm
                .replace(uuid.to_string(), format!("<uuid:{label}>"));
        }
    }
}

impl Default for RunNames {
    fn default() -> Self {
        Self::new()
    }
}

/// The namespace of the metadata element the script writes.
pub const META_URI: &str = "https://example.org/kvm2-fidelity/1";
/// Bytes uploaded by the small upload step (two stream packets).
pub const SMALL_UPLOAD: usize = 300_000;
/// Capacity of the raw volume.
pub const RAW_CAPACITY: u64 = 1 << 20;

const NO_HANDLE: &str = "no handle from an earlier step";

/// Runs every sequence on one side and returns its recording (not yet
/// normalised). Never panics on a libvirt answer: each is recorded.
pub async fn run(b: &Backend, names: &RunNames) -> Recorder {
    let mut rec = Recorder::new();
    names.teach(&mut rec);
    rec.norm.replace(names.prefix.clone(), "<run>");
    connect(b, &mut rec).await;
    virsh_host(b, &mut rec).await;
    host_interfaces(b, names, &mut rec).await;
    let pool = storage_pool(b, names, &mut rec).await;
    // Before the uploads: libvirtd 11.3 can stop answering after the upload
    // that sends more than it declared.
    pool_lifecycle(b, names, &mut rec).await;
    transient_pool(b, names, &mut rec).await;
    match pool {
        Some(pool) => {
            volumes(b, names, &pool, &mut rec).await;
            missing_files(b, names, &pool, &mut rec).await;
            virsh_storage(b, names, &pool, &mut rec).await;
        }
        None => rec.push("volumes", "-", Outcome::Skipped("no pool".into())),
    }
    missing_domain(b, names, &mut rec).await;
    bad_definitions(b, names, &mut rec).await;
    uefi_lifecycle(b, names, &mut rec).await;
    never_started(b, names, &mut rec).await;
    transient(b, names, &mut rec).await;
    virsh_domain(b, names, &mut rec).await;
    second_open(b, names, &mut rec).await;
    rec
}

/// The host's 4 MiB OVMF code image (the fake offers the same by default).
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";

/// The directories the run's pools use, under the test pool's parent
/// directory: `<parent>/<prefix>-<suffix>`. [`cleanup`] sweeps each.
pub const POOL_DIR_SUFFIXES: [&str; 3] = ["dir", "tdir", "exdir"];

fn is_code(e: &libvirt_rpc::Error, codes: &[ErrorCode]) -> bool {
    e.as_remote().is_some_and(|r| codes.contains(&r.code))
}

/// One side's run: its normalised steps and what cleaning up left behind.
#[derive(Debug, Clone)]
pub struct SideRun {
    /// "fake" or "real".
    pub side: &'static str,
    /// The normalised steps.
    pub steps: Vec<Step>,
    /// Problems met while cleaning up (empty when everything went).
    pub cleanup: Vec<String>,
}

/// Runs the script on one side in a task of its own (so that a panic is
/// recorded rather than skipping the clean-up), then cleans up.
pub async fn run_side(b: &Backend, names: &RunNames) -> SideRun {
    let task = {
        let (b, names) = (b.clone(), names.clone());
        tokio::spawn(async move { run(&b, &names).await })
    };
    let steps = match task.await {
        Ok(rec) => rec.finish(),
        Err(e) => {
            let mut rec = Recorder::new();
            rec.sequence("script");
            rec.push(
                "run",
                "-",
                Outcome::Failed(format!("the script panicked: {e}")),
            );
            rec.finish()
        }
    };
    let cleanup = cleanup(b, &names.prefix).await;
    SideRun {
        side: b.side(),
        steps,
        cleanup,
    }
}
