//! Shared fixtures: domain and volume documents and an opened connection.

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
    fake.add_pool("default", "/var/lib/libvirt/images", 10 << 30);
    fake
}
