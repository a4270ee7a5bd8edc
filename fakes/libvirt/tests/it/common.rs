//! Shared fixtures: domain and volume documents, an opened connection, and a
//! guest with an image to boot.

use libvirt_fake::{CallError, FakeConnection, FakeLibvirt};
use libvirt_wire::ErrorCode;

pub const NS: &str = "https://example.org/kvm2/v1";

pub fn bios_xml(name: &str) -> String {
    format!(
        "<domain type='kvm'>\n  <name>{name}</name>\n  <memory unit='MiB'>512</memory>\n  \
         <vcpu>2</vcpu>\n  <os><type arch='x86_64' machine='q35'>hvm</type></os>\n  <devices>\n    \
         <interface type='bridge'><mac address='52:54:00:aa:bb:cc'/><source bridge='br0'/></interface>\n    \
         <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>\n  \
         </devices>\n</domain>\n"
    )
}

pub fn uefi_xml(name: &str) -> String {
    bios_xml(name).replace("<os>", "<os firmware='efi'>")
}

pub fn with_uuid(xml: &str, uuid: &str) -> String {
    xml.replacen("</name>", &format!("</name>\n  <uuid>{uuid}</uuid>"), 1)
}

pub async fn open(fake: &FakeLibvirt) -> FakeConnection {
    let c = fake.connect().expect("dial");
    c.auth_list().await.expect("auth list");
    c.open(Some("qemu:///system"), 0).await.expect("open");
    c
}

pub fn code(r: Result<impl std::fmt::Debug, CallError>) -> ErrorCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code().expect("a libvirt error"),
    }
}

pub fn message<T: std::fmt::Debug>(r: Result<T, CallError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(CallError::Libvirt(e)) => e.message,
        Err(e) => panic!("expected a libvirt error, got {e:?}"),
    }
}

pub fn pool_fake() -> FakeLibvirt {
    let fake = FakeLibvirt::new();
    fake.add_pool("default", POOL_PATH, 10 << 30);
    fake
}

/// Where the pool of [`pool_fake`] and [`with_boot_disk`] keeps its files.
pub const POOL_PATH: &str = "/var/lib/libvirt/images";

/// Creates volume `name` in pool `default` (qcow2, backed by `backing` when
/// given) and uploads `data` into it unless `data` is `None`.
pub async fn volume(c: &FakeConnection, name: &str, backing: Option<&str>, data: Option<&[u8]>) {
    let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
    let backing = backing
        .map(|b| format!("<backingStore><path>{POOL_PATH}/{b}</path></backingStore>"))
        .unwrap_or_default();
    let xml = format!(
        "<volume><name>{name}</name><capacity unit='MiB'>64</capacity>\
         <target><format type='qcow2'/></target>{backing}</volume>"
    );
    let vol = c.storage_vol_create_xml(&pool, &xml, 0).await.unwrap();
    if let Some(data) = data {
        let mut up = c.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
        up.send(data).unwrap();
        up.finish().unwrap();
    }
}

/// `xml` with a hard disk over the file of volume `volume`.
pub fn with_disk(xml: &str, volume: &str) -> String {
    xml.replacen(
        "<devices>",
        &format!(
            "<devices>\n    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/>\
             <source file='{POOL_PATH}/{volume}'/><target dev='vda' bus='virtio'/></disk>"
        ),
        1,
    )
}

/// `xml` with a boot disk that holds an image: a guest a start really boots
/// (one whose disks hold nothing never gets an address). Adds pool `default`
/// when the fake has none.
pub async fn with_boot_disk(
    fake: &FakeLibvirt,
    c: &FakeConnection,
    xml: &str,
    name: &str,
) -> String {
    if fake.pool_info("default").is_none() {
        fake.add_pool("default", POOL_PATH, 10 << 30);
    }
    let vol = format!("{name}.qcow2");
    volume(c, &vol, None, Some(b"QFI\xfb a few bytes of image")).await;
    with_disk(xml, &vol)
}
