//! Pure builders and parsers for the XML documents kvm2 exchanges with libvirt:
//! the domain definition (with the mark inside), overlay and seed volume
//! definitions, and the `<instance>` metadata element.
//!
//! Nothing here does I/O; the provider sends what these functions return.

use std::time::SystemTime;

use quick_xml::Reader;
use quick_xml::Writer;
use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};

use crate::config::{DomainType, Firmware};

/// The prefix of the mark's element in the domain XML and in `SetMetadata`.
pub const METADATA_KEY: &str = "kvm2";

/// kvm2's mark on a domain: the tag, the owner's uid and the creation time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The garbage-collection tag (`managed`).
    pub tag: String,
    /// The owner's uid; empty when none was recorded.
    pub uid: String,
    /// When the instance was created.
    pub created_at: Option<SystemTime>,
}

/// Everything the domain definition is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSpec {
    /// The domain name.
    pub name: String,
    /// `kvm` or `qemu`.
    pub domain_type: DomainType,
    /// Virtual CPUs.
    pub vcpus: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// UEFI or BIOS.
    pub firmware: Firmware,
    /// The root overlay's path on the host (from `StorageVolGetPath`).
    pub root_path: String,
    /// The seed ISO's path on the host (from `StorageVolGetPath`).
    pub seed_path: String,
    /// The bridge the NIC joins.
    pub bridge: String,
    /// The metadata namespace URI of the mark.
    pub namespace: String,
    /// The mark.
    pub mark: Mark,
}

fn el<'a>(name: &'a str, attrs: &[(&'a str, &'a str)]) -> BytesStart<'a> {
    let mut s = BytesStart::new(name);
    for (k, v) in attrs {
        s.push_attribute((*k, *v));
    }
    s
}

struct Doc(Writer<Vec<u8>>);

impl Doc {
    fn new() -> Doc {
        Doc(Writer::new_with_indent(Vec::new(), b' ', 2))
    }
    fn open(&mut self, name: &str, attrs: &[(&str, &str)]) {
        self.0
            .write_event(Event::Start(el(name, attrs)))
            .expect("writing to a Vec cannot fail");
    }
    fn close(&mut self, name: &str) {
        self.0
            .write_event(Event::End(BytesEnd::new(name)))
            .expect("writing to a Vec cannot fail");
    }
    fn empty(&mut self, name: &str, attrs: &[(&str, &str)]) {
        self.0
            .write_event(Event::Empty(el(name, attrs)))
            .expect("writing to a Vec cannot fail");
    }
    fn text(&mut self, name: &str, attrs: &[(&str, &str)], text: &str) {
        self.open(name, attrs);
        self.0
            .write_event(Event::Text(BytesText::new(text)))
            .expect("writing to a Vec cannot fail");
        self.close(name);
    }
    fn finish(self) -> String {
        String::from_utf8(self.0.into_inner()).expect("quick-xml writes utf-8")
    }
}

/// The `<instance>` element's attributes, in document order.
fn mark_attrs(mark: &Mark) -> Vec<(&'static str, String)> {
    vec![
        ("managed", mark.tag.clone()),
        ("uid", mark.uid.clone()),
        (
            "createdAt",
            mark.created_at.map(format_time).unwrap_or_default(),
        ),
    ]
}

/// `<metadata>` holding the `<kvm2:instance>` element with `attrs`, in namespace
/// `namespace`.
fn metadata_block(d: &mut Doc, namespace: &str, attrs: &[(&str, &str)]) {
    d.open("metadata", &[]);
    let xmlns = format!("xmlns:{METADATA_KEY}");
    let qname = format!("{METADATA_KEY}:instance");
    let mut all: Vec<(&str, &str)> = vec![(xmlns.as_str(), namespace)];
    all.extend_from_slice(attrs);
    d.empty(&qname, &all);
    d.close("metadata");
}

/// A mark's attributes as they are written, `createdAt` as text: what a domain
/// planted beside kvm2's carries, readable or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkText<'a> {
    /// `managed`.
    pub tag: &'a str,
    /// `uid`.
    pub uid: &'a str,
    /// `createdAt`, e.g. [`format_time`]'s output or something unreadable.
    pub created_at: &'a str,
}

/// The `<metadata>` element of a domain definition carrying `mark` in
/// `namespace`, written as [`domain_define_xml`] writes it.
pub fn metadata_xml(namespace: &str, mark: &MarkText<'_>) -> String {
    let mut d = Doc(Writer::new(Vec::new()));
    let attrs = [
        ("managed", mark.tag),
        ("uid", mark.uid),
        ("createdAt", mark.created_at),
    ];
    metadata_block(&mut d, namespace, &attrs);
    d.finish()
}

/// The domain definition: file disks, firmware, guest agent channel, bridge NIC
/// and the mark in kvm2's own metadata namespace.
pub fn domain_define_xml(spec: &DomainSpec) -> String {
    let mut d = Doc::new();
    d.open("domain", &[("type", spec.domain_type.as_str())]);
    d.text("name", &[], &spec.name);
    let attrs = mark_attrs(&spec.mark);
    let attrs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    metadata_block(&mut d, &spec.namespace, &attrs);
    d.text("memory", &[("unit", "MiB")], &spec.memory_mib.to_string());
    d.text("vcpu", &[], &spec.vcpus.to_string());
    match spec.firmware {
        Firmware::Efi => {
            d.open("os", &[("firmware", "efi")]);
            d.text("type", &[("arch", "x86_64"), ("machine", "q35")], "hvm");
            d.open("firmware", &[]);
            d.empty("feature", &[("enabled", "no"), ("name", "secure-boot")]);
            d.close("firmware");
        }
        Firmware::Bios => {
            d.open("os", &[]);
            d.text("type", &[("arch", "x86_64"), ("machine", "q35")], "hvm");
        }
    }
    d.empty("boot", &[("dev", "hd")]);
    d.close("os");
    d.open("features", &[]);
    d.empty("acpi", &[]);
    d.close("features");
    if spec.domain_type == DomainType::Kvm {
        d.empty("cpu", &[("mode", "host-passthrough")]);
    }
    d.open("devices", &[]);
    d.open("disk", &[("type", "file"), ("device", "disk")]);
    d.empty("driver", &[("name", "qemu"), ("type", "qcow2")]);
    d.empty("source", &[("file", &spec.root_path)]);
    d.empty("target", &[("dev", "vda"), ("bus", "virtio")]);
    d.close("disk");
    d.open("disk", &[("type", "file"), ("device", "cdrom")]);
    d.empty("driver", &[("name", "qemu"), ("type", "raw")]);
    d.empty("source", &[("file", &spec.seed_path)]);
    d.empty("target", &[("dev", "sda"), ("bus", "sata")]);
    d.empty("readonly", &[]);
    d.close("disk");
    d.open("interface", &[("type", "bridge")]);
    d.empty("source", &[("bridge", &spec.bridge)]);
    d.empty("model", &[("type", "virtio")]);
    d.close("interface");
    d.open("channel", &[("type", "unix")]);
    d.empty(
        "target",
        &[("type", "virtio"), ("name", "org.qemu.guest_agent.0")],
    );
    d.close("channel");
    d.open("serial", &[("type", "pty")]);
    d.empty("target", &[("port", "0")]);
    d.close("serial");
    d.open("console", &[("type", "pty")]);
    d.empty("target", &[("type", "serial"), ("port", "0")]);
    d.close("console");
    d.open("rng", &[("model", "virtio")]);
    d.text("backend", &[("model", "random")], "/dev/urandom");
    d.close("rng");
    d.close("devices");
    d.close("domain");
    d.finish()
}

/// The mark as a standalone element for `DomainSetMetadata` (sent unqualified;
/// libvirt puts it in the namespace).
pub fn metadata_element(mark: &Mark) -> String {
    let mut d = Doc(Writer::new(Vec::new()));
    let attrs = mark_attrs(mark);
    let all: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    d.empty("instance", &all);
    d.finish()
}

/// Why a metadata element could not be read as a mark.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unreadable mark: {0}")]
pub struct BadMark(pub String);

/// Reads the mark from the element `DomainGetMetadata` returns, matching names by
/// local name (libvirt strips the namespace declaration, the prefix may remain).
pub fn parse_mark(xml: &str) -> Result<Mark, BadMark> {
    let mut r = Reader::from_str(xml);
    loop {
        match r.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                if e.local_name().into_inner() != "instance" {
                    return Err(BadMark(format!(
                        "root element is not instance but {}",
                        e.local_name().into_inner()
                    )));
                }
                let (mut tag, mut uid, mut created) = (None, String::new(), None);
                for a in e.attributes() {
                    let a = a.map_err(|e| BadMark(e.to_string()))?;
                    let v = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| BadMark(e.to_string()))?
                        .into_owned();
                    match a.key.local_name().into_inner() {
                        "managed" => tag = Some(v),
                        "uid" => uid = v,
                        "createdAt" if !v.is_empty() => {
                            created = Some(
                                parse_time(&v)
                                    .ok_or_else(|| BadMark(format!("createdAt {v:?}")))?,
                            )
                        }
                        _ => {}
                    }
                }
                let tag = tag.ok_or_else(|| BadMark("no managed attribute".into()))?;
                return Ok(Mark {
                    tag,
                    uid,
                    created_at: created,
                });
            }
            Ok(Event::Eof) => return Err(BadMark("no element".into())),
            Ok(_) => {}
            Err(e) => return Err(BadMark(e.to_string())),
        }
    }
}

/// The root element's name and the value of its attribute `attr`, if any
/// (`<interface type='bridge' …>` gives `("interface", Some("bridge"))`);
/// `None` when the text holds no element.
pub fn root_attribute(xml: &str, attr: &str) -> Option<(String, Option<String>)> {
    let mut r = Reader::from_str(xml);
    loop {
        match r.read_event().ok()? {
            Event::Start(e) | Event::Empty(e) => {
                let value = e.attributes().flatten().find_map(|a| {
                    (a.key.local_name().into_inner() == attr)
                        .then(|| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok())
                        .flatten()
                        .map(|v| v.into_owned())
                });
                return Some((e.local_name().into_inner().to_owned(), value));
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// A qcow2 overlay of `backing_path`, `capacity_gib` large.
pub fn overlay_volume_xml(name: &str, capacity_gib: u64, backing_path: &str) -> String {
    let mut d = Doc::new();
    d.open("volume", &[("type", "file")]);
    d.text("name", &[], name);
    d.text("capacity", &[("unit", "GiB")], &capacity_gib.to_string());
    d.open("target", &[]);
    d.empty("format", &[("type", "qcow2")]);
    d.close("target");
    d.open("backingStore", &[]);
    d.text("path", &[], backing_path);
    d.empty("format", &[("type", "qcow2")]);
    d.close("backingStore");
    d.close("volume");
    d.finish()
}

/// A raw file volume of `bytes` bytes (seed ISOs, image markers, downloads).
pub fn raw_volume_xml(name: &str, bytes: u64, format: &str) -> String {
    let mut d = Doc::new();
    d.open("volume", &[("type", "file")]);
    d.text("name", &[], name);
    d.text("capacity", &[("unit", "bytes")], &bytes.to_string());
    d.open("target", &[]);
    d.empty("format", &[("type", format)]);
    d.close("target");
    d.close("volume");
    d.finish()
}

/// RFC 3339 in UTC to the second, e.g. `2026-12-02T17:42:50Z`: how kvm2 writes
/// `createdAt` (a fraction of a second is dropped, not rounded).
pub fn format_time(t: SystemTime) -> String {
    let ts = jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("{ts:.0}")
}

/// Reads a time in any RFC 3339 form: `Z` or a numeric offset, with or without
/// a fraction of a second (`2026-12-04T10:00:00.123+01:00`, as other
/// implementations write `createdAt`), keeping the fraction.
pub fn parse_time(s: &str) -> Option<SystemTime> {
    let ts: jiff::Timestamp = s.trim().parse().ok()?;
    SystemTime::try_from(ts).ok()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn spec(firmware: Firmware) -> DomainSpec {
        DomainSpec {
            name: "proxy-1".into(),
            domain_type: DomainType::Kvm,
            vcpus: 1,
            memory_mib: 512,
            firmware,
            root_path: "/srv/vms/images/proxy-1-root.qcow2".into(),
            seed_path: "/srv/vms/images/proxy-1-seed.iso".into(),
            bridge: "br0".into(),
            namespace: crate::config::DEFAULT_NAMESPACE.into(),
            mark: Mark {
                tag: "egress".into(),
                uid: "0d5c7a2e-1b3f".into(),
                created_at: parse_time("2026-12-02T17:42:50Z"),
            },
        }
    }

    #[test]
    fn domain_xml_uefi_default() {
        let xml = domain_define_xml(&spec(Firmware::Efi));
        assert!(!xml.contains("type=\"volume\""));
        insta::assert_snapshot!(xml);
    }

    #[test]
    fn domain_xml_bios_and_qemu() {
        let mut s = spec(Firmware::Bios);
        s.domain_type = DomainType::Qemu;
        s.bridge = "br<0>&\"x\"".into();
        let xml = domain_define_xml(&s);
        assert!(!xml.contains("firmware=\"efi\""));
        assert!(!xml.contains("host-passthrough"));
        assert!(
            xml.contains("bridge=\"br&lt;0&gt;&amp;&quot;x&quot;\""),
            "{xml}"
        );
        insta::assert_snapshot!(xml);
    }

    #[test]
    fn overlay_volume_has_a_backing_store() {
        insta::assert_snapshot!(overlay_volume_xml(
            "proxy-1-root.qcow2",
            20,
            "/srv/vms/images/base.qcow2"
        ));
    }

    #[test]
    fn metadata_xml_carries_a_mark_parse_mark_reads() {
        let xml = metadata_xml(
            "https://example.invalid/ns",
            &MarkText {
                tag: "t<1>",
                uid: "u'1",
                created_at: "2024-01-02T03:04:05Z",
            },
        );
        assert!(
            xml.starts_with("<metadata><kvm2:instance xmlns:kvm2="),
            "{xml}"
        );
        let inner = xml
            .strip_prefix("<metadata>")
            .and_then(|x| x.strip_suffix("</metadata>"))
            .expect("one element inside <metadata>");
        let m = parse_mark(inner).unwrap();
        assert_eq!((m.tag.as_str(), m.uid.as_str()), ("t<1>", "u'1"));
        assert_eq!(m.created_at, parse_time("2024-01-02T03:04:05Z"));
        let bad = metadata_xml(
            "ns",
            &MarkText {
                tag: "t",
                uid: "",
                created_at: "not-a-time",
            },
        );
        let inner = &bad["<metadata>".len()..bad.len() - "</metadata>".len()];
        assert!(parse_mark(inner).is_err(), "{bad}");
    }

    #[test]
    fn mark_round_trips_with_and_without_namespace() {
        let m = spec(Firmware::Efi).mark;
        assert_eq!(parse_mark(&metadata_element(&m)).unwrap(), m);
        let prefixed = format!(
            "<kvm2:instance xmlns:kvm2=\"{}\" managed=\"egress\" uid=\"0d5c7a2e-1b3f\" createdAt=\"2026-12-02T17:42:50Z\"/>",
            crate::config::DEFAULT_NAMESPACE
        );
        assert_eq!(parse_mark(&prefixed).unwrap(), m);
        let stripped = "<kvm2:instance managed=\"egress\" uid=\"0d5c7a2e-1b3f\" createdAt=\"2026-12-02T17:42:50Z\"/>";
        assert_eq!(parse_mark(stripped).unwrap(), m);
    }

    #[test]
    fn absent_uid_is_empty_and_bad_marks_are_errors() {
        let m = parse_mark("<instance managed=\"t\"/>").unwrap();
        assert_eq!(m.uid, "");
        assert_eq!(m.created_at, None);
        assert!(parse_mark("<instance uid=\"x\"/>").is_err());
        assert!(parse_mark("<other managed=\"t\"/>").is_err());
        assert!(parse_mark("<instance managed=\"t\" createdAt=\"yesterday\"/>").is_err());
        assert!(parse_mark("").is_err());
    }

    #[test]
    fn root_attribute_reads_the_first_element_whatever_the_quoting() {
        let bridge = "<interface type='bridge' name='br0'>\n  <mtu size='1500'/>\n</interface>\n";
        assert_eq!(
            root_attribute(bridge, "type"),
            Some(("interface".into(), Some("bridge".into())))
        );
        assert_eq!(
            root_attribute(
                "<?xml version=\"1.0\"?><interface name=\"e\" type=\"ethernet\"/>",
                "type"
            ),
            Some(("interface".into(), Some("ethernet".into())))
        );
        assert_eq!(
            root_attribute("<interface name='x'/>", "type"),
            Some(("interface".into(), None))
        );
        assert_eq!(root_attribute("", "type"), None);
    }

    #[test]
    fn times_round_trip() {
        for s in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T12:34:56Z",
            "2026-12-02T17:42:50Z",
        ] {
            assert_eq!(format_time(parse_time(s).unwrap()), s);
        }
        assert_eq!(parse_time("2026-13-02T17:42:50Z"), None);
        assert_eq!(parse_time("2026-12-02T17:42:50"), None, "no offset");
        assert_eq!(parse_time("yesterday"), None);
    }

    /// Marks as other implementations write them: Go's `time.RFC3339Nano` (nine
    /// digits at most, trailing zeros dropped, the local offset) and others with
    /// `-00:00` or a lowercase `t`/`z`. Each names the same instant as the UTC
    /// form, and kvm2 writes it back to the second.
    #[test]
    fn times_in_any_rfc3339_form_are_read() {
        let utc = UNIX_EPOCH + Duration::from_secs(1_796_374_800); // 2026-12-04T09:00:00Z
        for (text, nanos) in [
            ("2026-12-04T10:00:00.123+01:00", 123_000_000),
            ("2026-12-04T10:00:00.123456789+01:00", 123_456_789),
            ("2026-12-04T09:00:00.5Z", 500_000_000),
            ("2026-12-04T04:00:00-05:00", 0),
            ("2026-12-04T09:00:00-00:00", 0),
            ("2026-12-04t09:00:00z", 0),
        ] {
            let t = parse_time(text).unwrap_or_else(|| panic!("{text} is not read"));
            assert_eq!(t, utc + Duration::from_nanos(nanos), "{text}");
            assert_eq!(format_time(t), "2026-12-04T09:00:00Z", "{text}");
        }
    }

    #[test]
    fn a_written_time_drops_its_fraction() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_374_800_999);
        assert_eq!(format_time(t), "2026-12-04T09:00:00Z");
        assert_eq!(format_time(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    /// A mark whose `createdAt` has a fraction and an offset is a readable mark.
    #[test]
    fn a_mark_with_a_fraction_and_an_offset_is_read() {
        let m = parse_mark(
            "<instance managed=\"t\" uid=\"u\" createdAt=\"2026-12-04T10:00:00.123+01:00\"/>",
        )
        .unwrap();
        assert_eq!(
            m.created_at,
            Some(UNIX_EPOCH + Duration::from_millis(1_796_374_800_123))
        );
    }
}
