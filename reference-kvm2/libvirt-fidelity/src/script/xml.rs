//! The XML the script defines: domains, volumes, pools and metadata, and the
//! few readers of XML it needs.

use super::*;

/// A UEFI domain (secure boot off) that QEMU can start under TCG with no disk.
pub fn uefi_xml(name: &str, uuid: &Uuid) -> String {
    format!(
        "<domain type='qemu'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  <memory unit='KiB'>262144</memory>
  <vcpu>1</vcpu>
  <os firmware='efi'>
    <type arch='x86_64' machine='q35'>hvm</type>
    <firmware>
      <feature enabled='no' name='secure-boot'/>
      <feature enabled='no' name='enrolled-keys'/>
    </firmware>
  </os>
  <features><acpi/></features>
  <devices><memballoon model='none'/></devices>
</domain>"
    )
}

/// A BIOS domain with no disk.
pub fn bios_xml(name: &str, uuid: &Uuid) -> String {
    format!(
        "<domain type='qemu'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  <memory unit='KiB'>65536</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices><memballoon model='none'/></devices>
</domain>"
    )
}

/// A raw volume with no space allocated up front.
pub fn raw_volume_xml(name: &str, capacity: u64) -> String {
    format!(
        "<volume><name>{name}</name><capacity unit='bytes'>{capacity}</capacity>\
         <allocation unit='bytes'>0</allocation><target><format type='raw'/></target></volume>"
    )
}

/// A qcow2 volume backed by `backing` (a raw file).
pub fn overlay_xml(name: &str, capacity: u64, backing: &str) -> String {
    format!(
        "<volume><name>{name}</name><capacity unit='bytes'>{capacity}</capacity>\
         <target><format type='qcow2'/></target>\
         <backingStore><path>{backing}</path><format type='raw'/></backingStore></volume>"
    )
}

pub(super) fn metadata(value: &str) -> String {
    format!(
        "<instance managed=\"yes\" uid=\"u-1\" createdAt=\"2026-01-01T00:00:00Z\"><tag>{value}</tag></instance>"
    )
}

/// Drops whitespace-only text between tags.
pub fn squeeze_xml(xml: &str) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml.trim();
    while let Some(i) = rest.find('>') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let next = rest.find('<').unwrap_or(rest.len());
        if rest[..next].trim().is_empty() {
            rest = &rest[next..];
        }
    }
    out.push_str(rest);
    out
}

/// A BIOS domain whose one disk is the file `disk` in format `format`.
pub fn disk_domain_xml(name: &str, uuid: &Uuid, disk: &str, format: &str) -> String {
    bios_xml(name, uuid).replacen(
        "<devices>",
        &format!(
            "<devices><disk type='file' device='disk'><driver name='qemu' type='{format}'/>\
             <source file='{disk}'/><target dev='vda' bus='virtio'/></disk>"
        ),
        1,
    )
}

/// A UEFI domain with an explicit loader and an NVRAM `template`.
pub fn nvram_template_xml(name: &str, uuid: &Uuid, template: &str) -> String {
    format!(
        "<domain type='qemu'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  <memory unit='KiB'>262144</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <loader readonly='yes' type='pflash'>{OVMF_CODE}</loader>
    <nvram template='{template}'/>
  </os>
  <features><acpi/></features>
  <devices><memballoon model='none'/></devices>
</domain>"
    )
}

/// Where nothing exists on either side: outside every pool.
pub(super) fn outside_pools(prefix: &str) -> String {
    format!("/nonexistent-{prefix}/disk.img")
}

/// A directory pool.
pub fn dir_pool_xml(name: &str, path: &str) -> String {
    format!("<pool type='dir'><name>{name}</name><target><path>{path}</path></target></pool>")
}

/// The text of the first element at `path` (names from the root down).
pub(super) fn xml_text(xml: &str, path: &[&str]) -> Option<String> {
    use quick_xml::Reader;
    use quick_xml::events::Event;
    let mut reader = Reader::from_str(xml);
    let mut at: Vec<String> = Vec::new();
    let mut text = String::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) => {
                at.push(e.local_name().as_ref().to_owned());
                text.clear();
            }
            Event::Text(t) => text.push_str(&t.xml10_content()),
            Event::End(_) => {
                if at.iter().map(String::as_str).eq(path.iter().copied()) {
                    return Some(text.trim().to_owned());
                }
                at.pop();
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// `<pool><target><path>` of a pool's XML.
pub fn pool_target_path(xml: &str) -> Option<String> {
    xml_text(xml, &["pool", "target", "path"])
}
