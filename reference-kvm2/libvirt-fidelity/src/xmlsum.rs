//! A summary of a domain's XML with only what both hosts must agree on:
//! libvirt adds devices, machine versions, firmware paths and more that an
//! in-memory model does not (and need not) invent.

use std::collections::BTreeMap;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// The parts of a domain XML that are compared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainSummary {
    /// `<domain type=…>`.
    pub kind: Option<String>,
    /// Whether `<domain id=…>` is present (only on a running domain).
    pub has_id: bool,
    /// `<name>`.
    pub name: Option<String>,
    /// `<uuid>`.
    pub uuid: Option<String>,
    /// `<title>`.
    pub title: Option<String>,
    /// `<memory>` in KiB.
    pub memory_kib: Option<u64>,
    /// `<vcpu>`.
    pub vcpu: Option<String>,
    /// `<os firmware=…>`.
    pub firmware: Option<String>,
    /// `<os><type arch=…>`.
    pub arch: Option<String>,
    /// Each element under `<metadata>`, rendered with its namespace URI.
    pub metadata: Vec<String>,
}

impl std::fmt::Display for DomainSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        write!(
            f,
            "type={} id={} name={} uuid={} title={} memory_kib={} vcpu={} firmware={} arch={} metadata=[{}]",
            o(&self.kind),
            if self.has_id { "yes" } else { "no" },
            o(&self.name),
            o(&self.uuid),
            o(&self.title),
            self.memory_kib.map_or("-".into(), |m| m.to_string()),
            o(&self.vcpu),
            o(&self.firmware),
            o(&self.arch),
            self.metadata.join(", ")
        )
    }
}

fn attrs(e: &BytesStart<'_>) -> BTreeMap<String, String> {
    e.attributes()
        .flatten()
        .filter_map(|a| {
            let key = a.key.as_ref().to_owned();
            let value = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()?
                .into_owned();
            Some((key, value))
        })
        .collect()
}

fn local(e: &BytesStart<'_>) -> String {
    e.local_name().as_ref().to_owned()
}

fn kib(value: &str, unit: Option<&str>) -> Option<u64> {
    let v: u64 = value.trim().parse().ok()?;
    let factor: u64 = match unit.unwrap_or("KiB") {
        "b" | "bytes" => return Some(v / 1024),
        "k" | "KiB" => 1,
        "KB" => return Some(v * 1000 / 1024),
        "M" | "MiB" => 1 << 10,
        "G" | "GiB" => 1 << 20,
        "T" | "TiB" => 1 << 30,
        _ => return None,
    };
    Some(v * factor)
}

/// One element of a metadata subtree, rendered canonically: namespace (by
/// URI, never by prefix), local name, sorted attributes without namespace
/// declarations, children and text.
#[derive(Debug, Default)]
struct Node {
    ns: Option<String>,
    name: String,
    attrs: BTreeMap<String, String>,
    text: String,
    children: Vec<Node>,
}

impl Node {
    fn render(&self) -> String {
        let mut s = String::new();
        if let Some(ns) = &self.ns {
            s.push_str(&format!("{{{ns}}}"));
        }
        s.push_str(&self.name);
        let a: Vec<String> = self
            .attrs
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        s.push_str(&format!("({})", a.join(" ")));
        let text = self.text.trim();
        if !text.is_empty() {
            s.push_str(&format!("{text:?}"));
        }
        if !self.children.is_empty() {
            let c: Vec<String> = self.children.iter().map(Node::render).collect();
            s.push_str(&format!("[{}]", c.join(" ")));
        }
        s
    }
}

fn node(e: &BytesStart<'_>, parent_ns: Option<&str>) -> Node {
    let all = attrs(e);
    let raw_name = e.name().as_ref().to_owned();
    let prefix = raw_name.split_once(':').map(|(p, _)| p.to_owned());
    let decl = match &prefix {
        Some(p) => all.get(&format!("xmlns:{p}")).cloned(),
        None => all.get("xmlns").cloned(),
    };
    Node {
        ns: decl.or_else(|| parent_ns.map(str::to_owned)),
        name: local(e),
        attrs: all
            .into_iter()
            .filter(|(k, _)| k != "xmlns" && !k.starts_with("xmlns:"))
            .collect(),
        text: String::new(),
        children: Vec::new(),
    }
}

/// What the reading of a domain XML holds from one event to the next.
#[derive(Default)]
struct Walk {
    out: DomainSummary,
    path: Vec<String>,
    text: String,
    unit: Option<String>,
    // Open metadata elements (a stack), and the finished top-level ones.
    meta: Vec<Node>,
}

impl Walk {
    /// An opening or empty element: a metadata node, or a fact of the domain.
    fn start(&mut self, e: &BytesStart<'_>, empty: bool) {
        let name = local(e);
        let a = attrs(e);
        let path = &self.path;
        let parent = path.last().map(String::as_str);
        let in_meta = path.len() >= 2 && path[1] == "metadata" && path[0] == "domain";
        if in_meta {
            let n = node(e, self.meta.last().and_then(|m| m.ns.as_deref()));
            if empty {
                match self.meta.last_mut() {
                    Some(p) => p.children.push(n),
                    None => self.out.metadata.push(n.render()),
                }
            } else {
                self.meta.push(n);
            }
        } else {
            match (parent, name.as_str()) {
                (None, "domain") => {
                    self.out.kind = a.get("type").cloned();
                    self.out.has_id = a.contains_key("id");
                }
                (Some("domain"), "os") => self.out.firmware = a.get("firmware").cloned(),
                (Some("os"), "type") => self.out.arch = a.get("arch").cloned(),
                (Some("domain"), "memory") => self.unit = a.get("unit").cloned(),
                _ => {}
            }
        }
        if !empty {
            self.path.push(name);
            self.text.clear();
        }
    }

    /// Text, to the open metadata element or else to the element's own text.
    fn push_text(&mut self, s: &str) {
        match self.meta.last_mut() {
            Some(m) => m.text.push_str(s),
            None => self.text.push_str(s),
        }
    }

    /// A closing element: a finished metadata node, or a value of the domain.
    fn end(&mut self) {
        let name = self.path.pop().unwrap_or_default();
        let path = &self.path;
        let parent = path.last().map(String::as_str);
        if path.len() >= 2 && path[1] == "metadata" && path[0] == "domain" {
            if let Some(done) = self.meta.pop() {
                match self.meta.last_mut() {
                    Some(p) => p.children.push(done),
                    None => self.out.metadata.push(done.render()),
                }
            }
        } else if parent == Some("domain") {
            let t = self.text.trim().to_owned();
            let out = &mut self.out;
            match name.as_str() {
                "name" => out.name = Some(t),
                "uuid" => out.uuid = Some(t),
                "title" => out.title = Some(t),
                "memory" => out.memory_kib = kib(&t, self.unit.as_deref()),
                "vcpu" => out.vcpu = Some(t),
                _ => {}
            }
        }
        self.text.clear();
    }
}

/// Summarises a domain XML document.
pub fn summarise(xml: &str) -> Result<DomainSummary, String> {
    let mut reader = Reader::from_str(xml);
    let mut walk = Walk::default();
    loop {
        let ev = reader.read_event().map_err(|e| format!("bad XML: {e}"))?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                walk.start(e, empty);
            }
            Event::Text(t) => {
                let s = t.xml10_content();
                walk.push_text(&s);
            }
            Event::GeneralRef(r) => {
                let name = r.xml10_content();
                let s = match name.as_ref() {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    "apos" => "'",
                    _ => "?",
                };
                walk.push_text(s);
            }
            Event::End(_) => walk.end(),
            Event::Eof => break,
            _ => {}
        }
    }
    let out = walk.out;
    if out.kind.is_none() && out.name.is_none() {
        return Err("not a domain document".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_what_matters() {
        let xml = r#"<domain type='qemu' id='3'>
  <name>vm</name>
  <uuid>535260dc-c8f5-4300-8334-20d1fe3c014f</uuid>
  <title>a &amp; b</title>
  <metadata>
    <k:instance xmlns:k="https://example.org/k/1" uid="u" managed="yes"><k:tag>x</k:tag><k:e/></k:instance>
    <other xmlns="urn:o"/>
  </metadata>
  <memory unit='MiB'>128</memory>
  <vcpu placement='static'>1</vcpu>
  <os firmware='efi'><type arch='x86_64' machine='pc-q35-7.2'>hvm</type><loader>/x</loader></os>
  <devices><emulator>/usr/bin/qemu</emulator></devices>
</domain>"#;
        let s = summarise(xml).unwrap();
        assert_eq!(s.kind.as_deref(), Some("qemu"));
        assert!(s.has_id);
        assert_eq!(s.name.as_deref(), Some("vm"));
        assert_eq!(s.title.as_deref(), Some("a & b"));
        assert_eq!(s.memory_kib, Some(131072));
        assert_eq!(s.vcpu.as_deref(), Some("1"));
        assert_eq!(s.firmware.as_deref(), Some("efi"));
        assert_eq!(s.arch.as_deref(), Some("x86_64"));
        assert_eq!(
            s.metadata,
            [
                r#"{https://example.org/k/1}instance(managed="yes" uid="u")[{https://example.org/k/1}tag()"x" {https://example.org/k/1}e()]"#,
                "{urn:o}other()"
            ]
        );
    }

    #[test]
    fn a_prefix_does_not_matter_only_the_uri() {
        let a = summarise(
            r#"<domain><name>n</name><metadata><p:i xmlns:p="u:1" a="1"/></metadata></domain>"#,
        )
        .unwrap();
        let b = summarise(
            r#"<domain><name>n</name><metadata><i xmlns="u:1" a="1"></i></metadata></domain>"#,
        )
        .unwrap();
        assert_eq!(a.metadata, b.metadata);
    }
}
