//! Pools and volumes: accounting, create, lookup, path, delete, uploads.

use std::time::Duration;

use libvirt_fake::{CallError, VolumeContent};
use libvirt_wire::{DOMAIN_SHUTOFF_FAILED, DomainState, ErrorCode, ErrorDomain, StoragePoolState};
use sha2::{Digest, Sha256};
use tokio::time::timeout;

use crate::common::{code, message, open, pool_fake};

fn vol_xml(name: &str, capacity: &str, format: &str) -> String {
    format!(
        "<volume type='file'><name>{name}</name><capacity unit='bytes'>{capacity}</capacity>\
         <target><format type='{format}'/></target></volume>"
    )
}

#[tokio::test]
async fn create_lookup_path_info_delete() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let before = c.storage_pool_get_info(&pool).await.unwrap();
    assert_eq!(before.state, StoragePoolState::Running);
    assert_eq!(before.capacity, 10 << 30);
    assert_eq!(before.available, 10 << 30);

    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("base.raw", "1048576", "raw"), 0)
        .await
        .unwrap();
    assert_eq!(vol.key, "/var/lib/libvirt/images/base.raw");
    assert_eq!(
        c.storage_vol_get_path(&vol).await.unwrap(),
        "/var/lib/libvirt/images/base.raw"
    );
    let info = c.storage_vol_get_info(&vol).await.unwrap();
    assert_eq!((info.capacity, info.allocation), (1 << 20, 1 << 20));
    let after = c.storage_pool_get_info(&pool).await.unwrap();
    assert_eq!(after.allocation, 1 << 20);
    assert_eq!(after.available, (10 << 30) - (1 << 20));

    let overlay = "<volume type='file'><name>vm-root.qcow2</name><capacity unit='G'>20</capacity>\
        <target><format type='qcow2'/></target><backingStore><path>/var/lib/libvirt/images/base.raw</path>\
        <format type='raw'/></backingStore></volume>";
    let ov = c.storage_vol_create_xml(&pool, overlay, 0).await.unwrap();
    let snap = fake.volume("default", "vm-root.qcow2").unwrap();
    assert_eq!(snap.capacity, 20 << 30);
    assert_eq!(
        snap.backing_path.as_deref(),
        Some("/var/lib/libvirt/images/base.raw")
    );
    let names: Vec<_> = c
        .storage_pool_list_all_volumes(&pool, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["base.raw", "vm-root.qcow2"]);

    let dup = c
        .storage_vol_create_xml(&pool, &vol_xml("base.raw", "1", "raw"), 0)
        .await;
    assert_eq!(message(dup), "storage volume 'base.raw' exists already");

    c.storage_vol_delete(&ov, 0).await.unwrap();
    let r = c.storage_vol_get_info(&ov).await;
    assert_eq!(
        message(r),
        "Storage volume not found: no storage vol with matching name 'vm-root.qcow2'"
    );
    assert_eq!(
        code(c.storage_vol_lookup_by_name(&pool, "vm-root.qcow2").await),
        ErrorCode::NoStorageVol
    );
    c.storage_pool_refresh(&pool, 0).await.unwrap();
    fake.check_invariants().unwrap();
}

#[tokio::test]
async fn missing_and_inactive_pools() {
    let fake = pool_fake();
    let c = open(&fake).await;
    assert_eq!(
        message(c.storage_pool_lookup_by_name("nope").await),
        "Storage pool not found: no storage pool with matching name 'nope'"
    );
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("a", "10", "raw"), 0)
        .await
        .unwrap();
    fake.set_pool_active("default", false).unwrap();
    assert_eq!(
        message(c.storage_vol_get_info(&vol).await),
        "Requested operation is not valid: storage pool 'default' is not active"
    );
    assert_eq!(
        c.storage_pool_get_info(&pool).await.unwrap().state,
        StoragePoolState::Inactive
    );
    fake.set_pool_active("default", true).unwrap();
    fake.remove_pool("default");
    assert_eq!(
        code(c.storage_pool_get_info(&pool).await),
        ErrorCode::NoStoragePool
    );
    assert_eq!(
        code(c.storage_vol_get_path(&vol).await),
        ErrorCode::NoStoragePool
    );
}

#[tokio::test]
async fn capacity_hooks_and_out_of_space() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    fake.set_pool_other_allocation("default", (10 << 30) - 100)
        .unwrap();
    assert_eq!(c.storage_pool_get_info(&pool).await.unwrap().available, 100);
    let r = c
        .storage_vol_create_xml(&pool, &vol_xml("big", "1000", "raw"), 0)
        .await;
    assert_eq!(code(r), ErrorCode::InternalError);
    fake.set_pool_capacity("default", 1).unwrap();
    let info = c.storage_pool_get_info(&pool).await.unwrap();
    assert_eq!(info.available, 0, "available never goes negative");
}

#[tokio::test]
async fn small_uploads_keep_their_bytes() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("seed.iso", "6", "raw"), 0)
        .await
        .unwrap();
    let mut up = c.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
    up.send(b"abc").unwrap();
    up.send(b"def").unwrap();
    up.finish().unwrap();
    let v = fake.volume("default", "seed.iso").unwrap();
    assert_eq!(v.content, VolumeContent::Bytes(b"abcdef".to_vec()));
}

#[tokio::test]
async fn large_uploads_keep_only_size_and_digest() {
    let fake = pool_fake();
    fake.update_host_config(|h| h.upload_keep_limit = 1024);
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("base.qcow2", "1", "qcow2"), 0)
        .await
        .unwrap();
    let chunk = vec![7u8; 4096];
    let mut hasher = Sha256::new();
    let mut up = c.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
    for _ in 0..16 {
        up.send(&chunk).unwrap();
        hasher.update(&chunk);
    }
    up.finish().unwrap();
    let v = fake.volume("default", "base.qcow2").unwrap();
    let want: [u8; 32] = hasher.finalize().into();
    assert_eq!(
        v.content,
        VolumeContent::Digest {
            size: 65536,
            sha256: want
        }
    );
    // An upload writes into the existing file without truncating it.
    assert_eq!(v.allocation, 200_704);
}

/// A fake keeping 1 KiB of an upload in memory and spilling the rest into
/// the returned directory.
fn spilling_fake() -> (libvirt_fake::FakeLibvirt, tempfile::TempDir) {
    let fake = pool_fake();
    let spill = tempfile::tempdir().unwrap();
    fake.update_host_config(|h| {
        h.upload_keep_limit = 1024;
        h.upload_spill_dir = Some(spill.path().to_path_buf());
    });
    (fake, spill)
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn large_uploads_spill_to_a_file_removed_with_the_volume() {
    let (fake, spill) = spilling_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    // Declared larger than the limit (spilled from the first byte), and
    // undeclared (kept until it outgrows the limit, then spilled).
    for (name, length) in [("declared.raw", 65536), ("undeclared.raw", 0)] {
        let vol = c
            .storage_vol_create_xml(&pool, &vol_xml(name, "70000", "raw"), 0)
            .await
            .unwrap();
        let mut hasher = Sha256::new();
        let mut sent = Vec::new();
        let mut up = c.storage_vol_upload(&vol, 0, length, 0).await.unwrap();
        for i in 0..16u8 {
            let chunk = vec![i; 4096];
            up.send(&chunk).unwrap();
            hasher.update(&chunk);
            sent.extend_from_slice(&chunk);
        }
        up.finish().unwrap();
        let content = fake.volume("default", name).unwrap().content;
        let VolumeContent::Spilled(file) = &content else {
            panic!("{name}: a large upload with a spill directory is spilled, not {content:?}");
        };
        let path = file.path().to_path_buf();
        assert!(path.starts_with(spill.path()), "{name}: {}", path.display());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 65536, "{name}");
        assert_eq!(content.size(), 65536, "{name}");
        let want: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(content.sha256_hex(), want, "{name}");
        // Downloads read the file: the whole volume (the upload, then zeros
        // up to the capacity), and a range across the end of the upload.
        let whole = c.storage_vol_download(&vol, 0, 0, 0).await.unwrap();
        let mut want_whole = sent.clone();
        want_whole.resize(70_000, 0);
        assert!(
            whole == want_whole,
            "{name}: the download is not what was uploaded"
        );
        let tail = c
            .storage_vol_download(&vol, 60_000, 8_000, 0)
            .await
            .unwrap();
        let mut want_tail = sent[60_000..].to_vec();
        want_tail.resize(8_000, 0);
        assert!(tail == want_tail, "{name}: a range past the upload");
        drop(content);
        c.storage_vol_delete(&vol, 0).await.unwrap();
        assert!(!path.exists(), "{name}: the volume's file outlived it");
    }
}

#[tokio::test]
async fn a_spilled_upload_that_ends_early_is_as_long_as_what_it_wrote() {
    let (fake, _spill) = spilling_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("short.raw", "1", "raw"), 0)
        .await
        .unwrap();
    // Declared 1 MiB (the file is allocated for it), 8 KiB sent.
    let mut up = c.storage_vol_upload(&vol, 0, 1 << 20, 0).await.unwrap();
    up.send(&[9u8; 8192]).unwrap();
    up.finish().unwrap();
    let content = fake.volume("default", "short.raw").unwrap().content;
    let VolumeContent::Spilled(file) = &content else {
        panic!("not spilled: {content:?}");
    };
    assert_eq!(std::fs::metadata(file.path()).unwrap().len(), 8192);
    assert_eq!(content.size(), 8192);
    assert_eq!(content.sha256_hex(), hex(&Sha256::digest([9u8; 8192])));
}

#[tokio::test]
async fn a_spill_that_cannot_be_written_fails_the_upload_by_name() {
    let fake = pool_fake();
    let spill = tempfile::tempdir().unwrap();
    let missing = spill.path().join("no-such-dir");
    fake.update_host_config(|h| {
        h.upload_keep_limit = 1024;
        h.upload_spill_dir = Some(missing.clone());
    });
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("v.raw", "1", "raw"), 0)
        .await
        .unwrap();
    let mut up = c.storage_vol_upload(&vol, 0, 8192, 0).await.unwrap();
    // The worker may stop before or after taking these: either way the
    // failure shows at the end, naming the write.
    let _ = up.send(&[1u8; 4096]);
    let _ = up.send(&[2u8; 4096]);
    let e = up.finish().unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::SystemError), "{e:?}");
    let text = &e.as_libvirt().expect("a libvirt error").message;
    assert!(
        text.starts_with("cannot write to stream: ") && text.contains("No such file"),
        "{text}"
    );
    assert_eq!(
        fake.volume("default", "v.raw").unwrap().content,
        VolumeContent::Empty
    );
}

#[tokio::test]
async fn upload_into_a_missing_volume() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("v", "10", "raw"), 0)
        .await
        .unwrap();
    fake.remove_volume("default", "v");
    assert_eq!(
        code(c.storage_vol_upload(&vol, 0, 0, 0).await),
        ErrorCode::NoStorageVol
    );
}

/// libvirtd 11.3, measured: a packet that would take an upload past its
/// declared length is not written, and the daemon answers nothing more on any
/// connection until it is restarted.
#[tokio::test]
async fn upload_past_its_declared_length_loses_the_daemon() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = c
        .storage_vol_create_xml(&pool, &vol_xml("v", "10", "raw"), 0)
        .await
        .unwrap();
    let mut up = c.storage_vol_upload(&vol, 0, 4, 0).await.unwrap();
    up.send(b"ab").unwrap();
    assert!(!fake.is_wedged());
    // Two bytes would fit; the packet of four is not written at all.
    assert!(matches!(up.send(b"cdef"), Err(CallError::Closed)));
    assert!(fake.is_wedged());
    assert!(c.daemon_lost());
    assert!(matches!(up.finish(), Err(CallError::Closed)));
    let v = fake.volume("default", "v").unwrap();
    assert_eq!(v.content, VolumeContent::Bytes(b"ab".to_vec()));

    // Nothing answers: not this connection, not a new one.
    let quiet = Duration::from_millis(200);
    assert!(timeout(quiet, c.get_hostname()).await.is_err());
    let other = fake.connect().unwrap();
    assert!(timeout(quiet, other.auth_list()).await.is_err());

    // A restarted daemon answers new connections with the state it had;
    // connections from before stay unanswered.
    fake.restart_daemon();
    assert!(!fake.is_wedged());
    assert!(c.daemon_lost() && other.daemon_lost());
    assert!(timeout(quiet, c.get_hostname()).await.is_err());
    let fresh = open(&fake).await;
    assert!(!fresh.daemon_lost());
    let pool = fresh.storage_pool_lookup_by_name("default").await.unwrap();
    let vol = fresh.storage_vol_lookup_by_name(&pool, "v").await.unwrap();
    // Up to the declared length an upload is fine.
    let mut up = fresh.storage_vol_upload(&vol, 0, 4, 0).await.unwrap();
    up.send(b"wx").unwrap();
    up.send(b"yz").unwrap();
    up.finish().unwrap();
    assert!(!fake.is_wedged());
    assert_eq!(
        fake.volume("default", "v").unwrap().content,
        VolumeContent::Bytes(b"wxyz".to_vec())
    );
}

#[tokio::test]
async fn missing_backing_file_and_missing_disk() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let overlay = "<volume><name>root.qcow2</name><capacity>100</capacity>\
        <target><format type='qcow2'/></target><backingStore>\
        <path>/var/lib/libvirt/images/base.qcow2</path><format type='qcow2'/></backingStore></volume>";
    assert_eq!(
        message(c.storage_vol_create_xml(&pool, overlay, 0).await),
        "inaccessible backing store volume /var/lib/libvirt/images/base.qcow2: No such file or directory"
    );
    let xml = crate::common::bios_xml("d").replace(
        "<devices>",
        "<devices><disk type='file' device='disk'><source file='/var/lib/libvirt/images/d.qcow2'/>\
         <target dev='vda' bus='virtio'/></disk>",
    );
    let d = c.domain_define_xml(&xml).await.unwrap();
    let r = c.domain_create(&d).await;
    assert_eq!(
        message(r),
        "Cannot access storage file '/var/lib/libvirt/images/d.qcow2': No such file or directory"
    );
    c.storage_vol_create_xml(
        &pool,
        "<volume><name>d.qcow2</name><capacity>100</capacity></volume>",
        0,
    )
    .await
    .unwrap();
    c.domain_create(&d).await.unwrap();
}

/// The error a start fails with, as (code, domain, message).
fn failure<T: std::fmt::Debug>(r: Result<T, CallError>) -> (ErrorCode, ErrorDomain, String) {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(CallError::Libvirt(e)) => (e.code, e.domain, e.message),
        Err(e) => panic!("expected a libvirt error, got {e:?}"),
    }
}

fn with_disk(name: &str, path: &str) -> String {
    crate::common::bios_xml(name).replace(
        "<devices>",
        &format!(
            "<devices><disk type='file' device='disk'><source file='{path}'/>\
             <target dev='vda' bus='virtio'/></disk>"
        ),
    )
}

/// Issue 17: a start whose files are missing fails before the guest runs,
/// with libvirt 11.3's code, domain and words, and leaves the domain shut
/// off with reason "failed"; the same start succeeds once the file is there.
#[tokio::test]
async fn a_start_with_missing_files_fails_as_libvirt_does() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let dir = "/var/lib/libvirt/images";
    let (system, storage, qemu) = (
        ErrorCode::SystemError,
        ErrorDomain::Storage,
        ErrorDomain::Qemu,
    );

    // A disk outside every pool: nothing the fake's host holds.
    let d = c
        .domain_define_xml(&with_disk("outside", "/srv/elsewhere/disk.img"))
        .await
        .unwrap();
    assert_eq!(
        failure(c.domain_create(&d).await),
        (
            system,
            storage,
            "Cannot access storage file '/srv/elsewhere/disk.img': No such file or directory"
                .to_owned()
        )
    );
    let (state, why) = c.domain_get_state(&d, 0).await.unwrap();
    assert_eq!((state, why), (DomainState::Shutoff, DOMAIN_SHUTOFF_FAILED));

    // An overlay whose backing volume was deleted after it was made.
    c.storage_vol_create_xml(&pool, &vol_xml("base.raw", "4096", "raw"), 0)
        .await
        .unwrap();
    let top = format!(
        "<volume><name>top.qcow2</name><capacity>4096</capacity>\
         <target><format type='qcow2'/></target><backingStore><path>{dir}/base.raw</path>\
         <format type='raw'/></backingStore></volume>"
    );
    c.storage_vol_create_xml(&pool, &top, 0).await.unwrap();
    let d = c
        .domain_define_xml(&with_disk("chain", &format!("{dir}/top.qcow2")))
        .await
        .unwrap();
    c.domain_create(&d).await.unwrap();
    c.domain_destroy(&d).await.unwrap();
    let base = c
        .storage_vol_lookup_by_name(&pool, "base.raw")
        .await
        .unwrap();
    c.storage_vol_delete(&base, 0).await.unwrap();
    assert_eq!(
        failure(c.domain_create(&d).await),
        (
            system,
            storage,
            format!(
                "Cannot access backing file '{dir}/base.raw' of storage file \
                 '{dir}/top.qcow2' (as uid:0, gid:0): No such file or directory"
            )
        )
    );
    assert_eq!(
        c.domain_get_state(&d, 0).await.unwrap(),
        (DomainState::Shutoff, DOMAIN_SHUTOFF_FAILED)
    );

    // An NVRAM template that is not there; the host's own template is.
    let nvram = |name: &str, template: &str| {
        crate::common::bios_xml(name).replace(
            "<os>",
            &format!(
                "<os><loader readonly='yes' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.fd\
                 </loader><nvram template='{template}'/>"
            ),
        )
    };
    let d = c
        .domain_define_xml(&nvram("vars", "/nowhere/VARS.fd"))
        .await
        .unwrap();
    assert_eq!(
        failure(c.domain_create(&d).await),
        (
            system,
            qemu,
            "Failed to open file '/nowhere/VARS.fd': No such file or directory".to_owned()
        )
    );
    let d = c
        .domain_define_xml(&nvram("vars-ok", "/usr/share/OVMF/OVMF_VARS_4M.fd"))
        .await
        .unwrap();
    c.domain_create(&d).await.unwrap();
}

#[tokio::test]
async fn set_pool_available_is_exact() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    c.storage_vol_create_xml(&pool, &vol_xml("a", "1000", "raw"), 0)
        .await
        .unwrap();
    fake.set_pool_available("default", 5000).unwrap();
    assert_eq!(
        c.storage_pool_get_info(&pool).await.unwrap().available,
        5000
    );
}

#[tokio::test]
async fn uploads_allocate_sparse_blocks_and_grow_raw_files() {
    let fake = pool_fake();
    let c = open(&fake).await;
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let xml = "<volume><name>r</name><capacity>1048576</capacity>\
               <allocation>0</allocation></volume>";
    let vol = c.storage_vol_create_xml(&pool, xml, 0).await.unwrap();
    let info = c.storage_vol_get_info(&vol).await.unwrap();
    assert_eq!((info.capacity, info.allocation), (1 << 20, 0));

    let mut up = c.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
    up.send(&[1u8; 5000]).unwrap();
    up.finish().unwrap();
    let info = c.storage_vol_get_info(&vol).await.unwrap();
    assert_eq!(info.allocation, 2 * 4096, "two blocks touched");

    // Past the end, with a hole: one more block, and the file grows.
    let end = (1 << 20) + 4096 + 10;
    let mut up = c
        .storage_vol_upload(&vol, (1 << 20) + 4096, 0, 0)
        .await
        .unwrap();
    up.send(&[2u8; 10]).unwrap();
    up.finish().unwrap();
    let info = c.storage_vol_get_info(&vol).await.unwrap();
    assert_eq!(info.allocation, 3 * 4096);
    assert_eq!(info.capacity, end);

    // Rewriting blocks already allocated allocates nothing more.
    let mut up = c.storage_vol_upload(&vol, 100, 0, 0).await.unwrap();
    up.send(&[3u8; 100]).unwrap();
    up.finish().unwrap();
    assert_eq!(
        c.storage_vol_get_info(&vol).await.unwrap().allocation,
        3 * 4096
    );
}
