//! Sequences about what is not there: files a domain or volume names that do
//! not exist, a domain that does not exist, and definitions libvirt refuses.

use super::*;

/// What a host refuses because a file is not there: an overlay of a deleted
/// volume, and starting a domain whose disk, backing file or NVRAM template
/// is missing (inside the pool and outside it); then the same start once the
/// disk exists.
pub(super) async fn missing_files(
    b: &Backend,
    names: &RunNames,
    pool: &StoragePool,
    rec: &mut Recorder,
) {
    let c = &b.client;
    rec.sequence("missing files");
    let p = &names.prefix;
    let Some((root, top_name, top)) = overlays(c, pool, p, rec).await else {
        return;
    };
    let disk_name = format!("{p}-disk.img");
    let nodisk = failing_starts(c, p, &root, &top_name, &disk_name, rec).await;
    start_once_the_disk_exists(c, pool, &disk_name, nodisk, top, rec).await;
}

/// Makes an overlay of a base volume, deletes the base and overlays it again; returns the pool's directory, the overlay's name and the overlay.
async fn overlays(
    c: &Client,
    pool: &StoragePool,
    p: &str,
    rec: &mut Recorder,
) -> Option<(String, String, Option<StorageVol>)> {
    let base_name = format!("{p}-base.img");
    let base = rec.call(
        "create base",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &raw_volume_xml(&base_name, RAW_CAPACITY), 0)
            .await,
        show_vol,
    )?;
    let base_path = rec.call(
        "base path",
        Procedure::StorageVolGetPath,
        c.storage_vol_get_path(&base).await,
        |p| p.clone(),
    )?;
    let root = base_path.rsplit_once('/').map_or("", |(r, _)| r).to_owned();
    rec.norm.replace(root.clone(), "<pool-root>");
    let top_name = format!("{p}-top.qcow2");
    let top = rec.call(
        "create overlay of the base",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &overlay_xml(&top_name, RAW_CAPACITY, &base_path), 0)
            .await,
        show_vol,
    );
    rec.call(
        "delete base",
        Procedure::StorageVolDelete,
        c.storage_vol_delete(&base, 0).await,
        show_unit,
    );
    rec.call(
        "create overlay of the deleted base",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(
            pool,
            &overlay_xml(&format!("{p}-orphan.qcow2"), RAW_CAPACITY, &base_path),
            0,
        )
        .await,
        show_vol,
    );
    Some((root, top_name, top))
}

/// Starts that must fail, each on a domain of its own; returns the domain whose disk is missing.
async fn failing_starts(
    c: &Client,
    p: &str,
    root: &str,
    top_name: &str,
    disk_name: &str,
    rec: &mut Recorder,
) -> Option<Domain> {
    // Starts that must fail, each on a domain of its own.
    let disk_path = format!("{root}/{disk_name}");
    let cases = [
        (
            "missing disk",
            disk_domain_xml(&format!("{p}-nodisk"), &wire_uuid(), &disk_path, "raw"),
        ),
        (
            "missing backing file",
            disk_domain_xml(
                &format!("{p}-nobacking"),
                &wire_uuid(),
                &format!("{root}/{top_name}"),
                "qcow2",
            ),
        ),
        (
            "missing disk outside the pool",
            disk_domain_xml(
                &format!("{p}-outside"),
                &wire_uuid(),
                &outside_pools(p),
                "raw",
            ),
        ),
        (
            "missing nvram template",
            nvram_template_xml(
                &format!("{p}-notemplate"),
                &wire_uuid(),
                &format!("/nonexistent-{p}/VARS.fd"),
            ),
        ),
    ];
    let mut nodisk = None;
    for (what, xml) in &cases {
        let Some(dom) = rec.call(
            &format!("define with a {what}"),
            Procedure::DomainDefineXml,
            c.domain_define_xml(xml).await,
            show_dom_masked,
        ) else {
            continue;
        };
        rec.call(
            &format!("start with a {what}"),
            Procedure::DomainCreateWithFlags,
            c.domain_create_with_flags(&dom, 0).await,
            show_dom_masked,
        );
        rec.call(
            &format!("state after the {what}"),
            Procedure::DomainGetState,
            c.domain_get_state(&dom).await,
            show_state,
        );
        if *what == "missing disk" {
            nodisk = Some(dom);
        } else {
            rec.call(
                &format!("undefine after the {what}"),
                Procedure::DomainUndefineFlags,
                c.domain_undefine_flags(&dom, DOMAIN_UNDEFINE_NVRAM).await,
                show_unit,
            );
        }
    }
    nodisk
}

/// The disk appears: the same domain starts; then the domain and the volumes go.
async fn start_once_the_disk_exists(
    c: &Client,
    pool: &StoragePool,
    disk_name: &str,
    nodisk: Option<Domain>,
    top: Option<StorageVol>,
    rec: &mut Recorder,
) {
    // The disk appears: the same domain starts.
    let disk = rec.call(
        "create the disk",
        Procedure::StorageVolCreateXml,
        c.storage_vol_create_xml(pool, &raw_volume_xml(disk_name, RAW_CAPACITY), 0)
            .await,
        show_vol,
    );
    if let Some(dom) = &nodisk {
        rec.call(
            "start once the disk exists",
            Procedure::DomainCreateWithFlags,
            c.domain_create_with_flags(dom, 0).await,
            show_dom_masked,
        );
        rec.call(
            "destroy",
            Procedure::DomainDestroy,
            c.domain_destroy(dom).await,
            show_unit,
        );
        rec.call(
            "undefine",
            Procedure::DomainUndefineFlags,
            c.domain_undefine_flags(dom, 0).await,
            show_unit,
        );
    }
    for (label, vol) in [("delete the disk", disk), ("delete the overlay", top)] {
        if let Some(v) = vol {
            rec.call(
                label,
                Procedure::StorageVolDelete,
                c.storage_vol_delete(&v, 0).await,
                show_unit,
            );
        }
    }
}

pub(super) async fn missing_domain(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("missing domain");
    let (name, uuid) = &names.missing;
    rec.call(
        "lookup by name",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(name).await,
        show_dom,
    );
    rec.call(
        "lookup by uuid",
        Procedure::DomainLookupByUuid,
        c.domain_lookup_by_uuid(*uuid).await,
        show_dom,
    );
    let ghost = Domain {
        name: name.clone(),
        uuid: *uuid,
        id: -1,
    };
    ghost_lifecycle(c, &ghost, rec).await;
    ghost_metadata_and_addresses(c, &ghost, rec).await;
}

/// Asks a domain that does not exist for its state, info and XML, and to start, stop and go.
async fn ghost_lifecycle(c: &Client, ghost: &Domain, rec: &mut Recorder) {
    rec.call(
        "state",
        Procedure::DomainGetState,
        c.domain_get_state(ghost).await,
        show_state,
    );
    rec.call(
        "info",
        Procedure::DomainGetInfo,
        c.domain_get_info(ghost).await,
        show_info,
    );
    rec.call(
        "xml",
        Procedure::DomainGetXmlDesc,
        c.domain_get_xml_desc(ghost, 0).await,
        show_xml,
    );
    rec.call(
        "start",
        Procedure::DomainCreateWithFlags,
        c.domain_create_with_flags(ghost, 0).await,
        show_dom,
    );
    rec.call(
        "destroy",
        Procedure::DomainDestroy,
        c.domain_destroy(ghost).await,
        show_unit,
    );
    rec.call(
        "shutdown",
        Procedure::DomainShutdownFlags,
        c.domain_shutdown_flags(ghost, 0).await,
        show_unit,
    );
    rec.call(
        "undefine",
        Procedure::DomainUndefineFlags,
        c.domain_undefine_flags(ghost, DOMAIN_UNDEFINE_NVRAM).await,
        show_unit,
    );
}

/// Reads and writes a missing domain's metadata and asks for its addresses.
async fn ghost_metadata_and_addresses(c: &Client, ghost: &Domain, rec: &mut Recorder) {
    rec.call(
        "get metadata",
        Procedure::DomainGetMetadata,
        c.domain_get_metadata(ghost, DOMAIN_METADATA_ELEMENT, Some(META_URI), 0)
            .await,
        |m| m.clone(),
    );
    rec.call(
        "set metadata",
        Procedure::DomainSetMetadata,
        c.domain_set_metadata(
            ghost,
            DOMAIN_METADATA_ELEMENT,
            Some(&metadata("x")),
            Some("fid"),
            Some(META_URI),
            DOMAIN_AFFECT_CONFIG,
        )
        .await,
        show_unit,
    );
    rec.call(
        "addresses",
        Procedure::DomainInterfaceAddresses,
        c.domain_interface_addresses(ghost, DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, 0)
            .await,
        |v| show_ifaces(v),
    );
}

pub(super) async fn bad_definitions(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("bad definitions");
    rec.call(
        "malformed XML",
        Procedure::DomainDefineXml,
        c.domain_define_xml("<domain type='qemu'><name>").await,
        show_dom,
    );
    rec.call(
        "no name",
        Procedure::DomainDefineXml,
        c.domain_define_xml("<domain type='qemu'><memory>65536</memory></domain>")
            .await,
        show_dom,
    );
    let bad_uuid = format!(
        "<domain type='qemu'><name>{}-baduuid</name><uuid>not-a-uuid</uuid>\
         <memory>65536</memory><os><type>hvm</type></os></domain>",
        names.prefix
    );
    rec.call(
        "bad uuid",
        Procedure::DomainDefineXml,
        c.domain_define_xml(&bad_uuid).await,
        show_dom,
    );
}
