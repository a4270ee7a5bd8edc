//! Reading and writing the XML documents the fake handles: domain
//! definitions (the few facts the model needs, plus the stored body it
//! renders back), volume definitions, and metadata elements moved in and out
//! of their namespace the way libvirt's `virXMLInjectNamespace` and
//! `virXMLExtractNamespaceXML` do.

use std::borrow::Cow;

use quick_xml::Reader;
use quick_xml::Writer;
use quick_xml::events::{BytesStart, BytesText, Event};
use uuid::Uuid;

use crate::error::{VirError, domain};
use crate::types::MetadataEntry;

/// What the model keeps from a defined domain document.
#[derive(Debug, Clone)]
pub(crate) struct ParsedDomain {
    pub(crate) name: String,
    pub(crate) uuid: Option<Uuid>,
    /// `<os firmware='efi'>`, or an explicit pflash loader or NVRAM element.
    pub(crate) uefi: bool,
    /// The `<nvram>` path, when the document names one.
    pub(crate) nvram_path: Option<String>,
    /// The `<nvram template=…>` a first start copies the NVRAM file from.
    pub(crate) nvram_template: Option<String>,
    /// A virtio channel named `org.qemu.guest_agent.0`.
    pub(crate) agent_channel: bool,
    pub(crate) max_mem_kib: u64,
    pub(crate) memory_kib: u64,
    pub(crate) vcpus: u16,
    /// The MAC addresses of the interfaces, in document order.
    pub(crate) macs: Vec<String>,
    /// The `<source file=…>` paths of the disks, in document order.
    pub(crate) disk_files: Vec<String>,
    /// The top-level elements of `<metadata>` that carry a namespace.
    pub(crate) metadata: Vec<MetadataEntry>,
    /// `<title>`, which libvirt also serves through the metadata calls.
    pub(crate) title: Option<String>,
    /// `<description>`, likewise.
    pub(crate) description: Option<String>,
    /// The document without `<uuid>`, `<title>`, `<description>`,
    /// `<metadata>` and the root `id` attribute; [`render_domain`] puts the
    /// current values back.
    pub(crate) body: String,
}

/// What the model keeps from a volume document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParsedVolume {
    pub(crate) name: String,
    pub(crate) capacity: Option<u64>,
    pub(crate) allocation: Option<u64>,
    pub(crate) format: Option<String>,
    pub(crate) backing_path: Option<String>,
    pub(crate) backing_format: Option<String>,
}

/// What the model keeps from a storage pool document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParsedPool {
    pub(crate) name: String,
    pub(crate) uuid: Option<Uuid>,
    /// `<target><path>`, sanitised as libvirt does (no repeated or trailing
    /// slashes).
    pub(crate) path: String,
}

/// Pool types libvirt knows (`virStoragePoolType`), in numeric order.
const POOL_TYPES: [&str; 14] = [
    "dir",
    "fs",
    "netfs",
    "logical",
    "disk",
    "iscsi",
    "iscsi-direct",
    "scsi",
    "mpath",
    "rbd",
    "sheepdog",
    "gluster",
    "zfs",
    "vstorage",
];

fn parse_error(what: &str, e: impl std::fmt::Display) -> VirError {
    VirError::xml(format!("failed to parse {what}: {e}"))
}

/// The documents whose syntax errors libvirt reports as `VIR_ERR_XML_DETAIL`
/// from the subsystem that parsed them.
#[derive(Debug, Clone, Copy)]
enum Document {
    Domain,
    Volume,
    Pool,
}

impl Document {
    /// A syntax error at byte `pos` of `xml`: its line (counted from 1), the
    /// text of that line and the column of `pos` in it.
    fn syntax(self, xml: &str, pos: u64, detail: impl std::fmt::Display) -> VirError {
        let mut upto = usize::try_from(pos).unwrap_or(usize::MAX).min(xml.len());
        while !xml.is_char_boundary(upto) {
            upto -= 1;
        }
        let start = xml[..upto].rfind('\n').map_or(0, |i| i + 1);
        let end = xml[upto..].find('\n').map_or(xml.len(), |i| upto + i);
        let line = xml[..upto].matches('\n').count() + 1;
        let from = match self {
            Document::Domain => domain::DOMAIN,
            Document::Volume | Document::Pool => domain::STORAGE,
        };
        let column = xml[start..upto].chars().count();
        VirError::xml_syntax(from, line, &detail.to_string(), &xml[start..end], column)
    }

    /// The element libvirt's parser wants at the root.
    fn root(self) -> &'static str {
        match self {
            Document::Domain => "domain",
            Document::Volume => "volume",
            Document::Pool => "pool",
        }
    }

    /// Checks an element opening at `depth`: a document has one root, and
    /// it is the one expected.
    fn open(
        self,
        xml: &str,
        pos: u64,
        depth: usize,
        seen_root: &mut bool,
        name: &str,
    ) -> Result<(), VirError> {
        if depth > 0 {
            return Ok(());
        }
        if *seen_root {
            return Err(self.syntax(xml, pos, "Extra content at the end of the document"));
        }
        *seen_root = true;
        let root = self.root();
        if name == root {
            return Ok(());
        }
        Err(VirError::xml(match self {
            Document::Pool => format!("expecting root element of '{root}', not '{name}'"),
            Document::Domain | Document::Volume => {
                format!("unexpected root element <{name}>, expecting <{root}>")
            }
        }))
    }

    /// Checks a start tag's names and attribute list as libxml2 does: a
    /// qualified name has at most one colon with a name (an NCName: a letter or
    /// `_`, then letters, digits, `_`, `-` or `.`) on each side, and the
    /// attribute list is well formed (quoted values, no name twice).
    fn names(self, xml: &str, pos: u64, e: &BytesStart<'_>) -> Result<(), VirError> {
        let qname_ok = |n: &str| {
            let parts: Vec<&str> = n.split(':').collect();
            parts.len() <= 2 && parts.iter().all(|p| is_ncname(p))
        };
        if !qname_ok(e.name().as_ref()) {
            let n = e.name().as_ref().to_owned();
            return Err(self.syntax(xml, pos, format!("Failed to parse QName '{n}'")));
        }
        for a in e.attributes() {
            let a = a.map_err(|err| self.syntax(xml, pos, err))?;
            if !qname_ok(a.key.as_ref()) {
                let n = a.key.as_ref().to_owned();
                return Err(self.syntax(xml, pos, format!("Failed to parse QName '{n}'")));
            }
        }
        Ok(())
    }

    /// Checks the end of input: every element closed, and a root seen.
    fn finish(
        self,
        xml: &str,
        pos: u64,
        open: Option<&String>,
        seen_root: bool,
    ) -> Result<(), VirError> {
        if let Some(open) = open {
            // libxml2 adds the line where the unclosed element opened.
            let opened = xml
                .rfind(&format!("<{open}"))
                .map_or(1, |i| xml[..i].matches('\n').count() + 1);
            return Err(self.syntax(
                xml,
                pos,
                format!("Premature end of data in tag {open} line {opened}"),
            ));
        }
        if !seen_root {
            return Err(self.syntax(xml, pos, "Document is empty"));
        }
        Ok(())
    }
}

/// An element as [`walk`] meets it, with the name of its parent (empty for
/// the root).
enum Node<'a, 'e> {
    /// It opens, with its attributes.
    Open {
        parent: &'a str,
        name: &'a str,
        element: &'a BytesStart<'e>,
    },
    /// It closes, with the text directly inside it; `depth` is its parent's.
    Close {
        parent: &'a str,
        name: &'a str,
        text: String,
        depth: usize,
    },
}

/// Walks a small definition (a volume's, a pool's) the way libvirt's parser
/// reads it, handing each element to `visit` as it opens and as it closes.
fn walk(
    xml: &str,
    doc: Document,
    mut visit: impl FnMut(Node<'_, '_>) -> Result<(), VirError>,
) -> Result<(), VirError> {
    let mut reader = Reader::from_str(xml);
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut seen_root = false;
    loop {
        // Where the event starts: an extra root is reported at its `<`.
        let at = reader.buffer_position();
        let ev = reader
            .read_event()
            .map_err(|e| doc.syntax(xml, reader.error_position(), e))?;
        match &ev {
            Event::Start(e) | Event::Empty(e) => {
                let q = e.name().as_ref().to_owned();
                doc.open(xml, at, path.len(), &mut seen_root, &q)?;
                doc.names(xml, at, e)?;
                visit(Node::Open {
                    parent: path.last().map_or("", String::as_str),
                    name: &q,
                    element: e,
                })?;
                if matches!(ev, Event::Start(_)) {
                    path.push(q);
                    text.clear();
                }
            }
            Event::End(_) => {
                let q = path.pop().unwrap_or_default();
                visit(Node::Close {
                    parent: path.last().map_or("", String::as_str),
                    name: &q,
                    text: std::mem::take(&mut text),
                    depth: path.len(),
                })?;
            }
            Event::Text(t) => text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) => text.push_str(&ref_text(&r.xml10_content())),
            Event::CData(c) => text.push_str(&c.xml10_content()),
            Event::Eof => break,
            _ => {}
        }
    }
    doc.finish(xml, reader.buffer_position(), path.last(), seen_root)
}

fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(Cow::into_owned)
        })
}

fn ref_text(name: &str) -> String {
    match name {
        "amp" => "&".into(),
        "lt" => "<".into(),
        "gt" => ">".into(),
        "quot" => "\"".into(),
        "apos" => "'".into(),
        _ => {
            let code = name
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()));
            code.and_then(char::from_u32)
                .map(String::from)
                .unwrap_or_default()
        }
    }
}

/// Converts a size with a libvirt unit suffix into bytes (or KiB-scaled
/// numbers for memory, where the caller passes the default unit).
fn scaled(value: &str, unit: Option<&str>, default_unit: &str) -> Result<u64, VirError> {
    let n: u64 = value
        .trim()
        .parse()
        .map_err(|_| VirError::xml(format!("invalid value '{}'", value.trim())))?;
    let unit = unit.unwrap_or(default_unit);
    let mult: u64 = match unit {
        "b" | "byte" | "bytes" => 1,
        "KB" => 1000,
        "k" | "K" | "KiB" => 1 << 10,
        "MB" => 1000u64.pow(2),
        "M" | "MiB" => 1 << 20,
        "GB" => 1000u64.pow(3),
        "G" | "GiB" => 1 << 30,
        "TB" => 1000u64.pow(4),
        "T" | "TiB" => 1 << 40,
        "PB" => 1000u64.pow(5),
        "P" | "PiB" => 1 << 50,
        "EB" => 1000u64.pow(6),
        "E" | "EiB" => 1 << 60,
        other => return Err(VirError::xml(format!("unknown suffix '{other}'"))),
    };
    n.checked_mul(mult)
        .ok_or_else(|| VirError::xml(format!("value '{n}' too large")))
}

/// Reads a domain definition.
pub(crate) fn parse_domain(xml: &str) -> Result<ParsedDomain, VirError> {
    let mut reader = Reader::from_str(xml);
    let mut body = Writer::new(Vec::new());
    let mut path: Vec<String> = Vec::new();
    let mut ns: Vec<Vec<(String, String)>> = Vec::new();
    let mut text = String::new();
    let mut seen_root = false;
    let mut skip_depth: Option<usize> = None;
    let mut capture: Option<(usize, Writer<Vec<u8>>, String, String)> = None;

    let mut name = None;
    let mut uuid = None;
    let mut uefi = false;
    let mut nvram_path = None;
    let mut nvram_template = None;
    let mut agent_channel = false;
    let mut max_mem_kib = 0;
    let mut memory_kib = None;
    let mut vcpus = 1;
    let mut macs = Vec::new();
    let mut disk_files = Vec::new();
    let mut metadata = Vec::new();
    let mut title = None;
    let mut description = None;
    let mut mem_unit: Option<String> = None;
    let mut pending_blank = String::new();
    let doc = Document::Domain;

    loop {
        let at = reader.buffer_position();
        let ev = reader
            .read_event()
            .map_err(|e| doc.syntax(xml, reader.error_position(), e))?;
        let is_start = matches!(ev, Event::Start(_));
        match &ev {
            Event::Start(e) | Event::Empty(e) => {
                let qname = e.name().as_ref().to_owned();
                let depth = path.len();
                doc.open(xml, at, depth, &mut seen_root, &qname)?;
                doc.names(xml, at, e)?;
                // Blank text between the root's children is kept only before
                // the children the body keeps: the ones `render_domain` puts
                // back bring their own.
                if depth == 1 && capture.is_none() && skip_depth.is_none() {
                    let dropped = matches!(
                        qname.as_str(),
                        "uuid" | "metadata" | "title" | "description"
                    );
                    let blank = std::mem::take(&mut pending_blank);
                    if !dropped && !blank.is_empty() {
                        body.write_event(Event::Text(BytesText::from_escaped(blank)))
                            .map_err(|e| parse_error("domain definition", e))?;
                    }
                }
                let mut decls = Vec::new();
                for a in e.attributes().flatten() {
                    let k = a.key.as_ref();
                    // The URI as the document means it, references resolved.
                    let uri = || {
                        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                            .map(Cow::into_owned)
                            .unwrap_or_default()
                    };
                    if let Some(prefix) = k.strip_prefix("xmlns:") {
                        decls.push((prefix.to_owned(), uri()));
                    } else if k == "xmlns" {
                        decls.push((String::new(), uri()));
                    }
                }
                let parent = path.last().map(String::as_str).unwrap_or("");
                let grand = if depth >= 2 {
                    path[depth - 2].as_str()
                } else {
                    ""
                };
                match (grand, parent, qname.as_str()) {
                    (_, "domain", "memory") | (_, "domain", "currentMemory") => {
                        mem_unit = attr(e, "unit");
                    }
                    (_, "domain", "os") if attr(e, "firmware").as_deref() == Some("efi") => {
                        uefi = true;
                    }
                    ("domain", "os", "loader") if attr(e, "type").as_deref() == Some("pflash") => {
                        uefi = true;
                    }
                    ("domain", "os", "nvram") => {
                        uefi = true;
                        nvram_template = attr(e, "template");
                    }
                    ("devices", "disk", "source") => {
                        if let Some(f) = attr(e, "file") {
                            disk_files.push(f);
                        }
                    }
                    ("devices", "interface", "mac") => {
                        if let Some(m) = attr(e, "address") {
                            macs.push(m);
                        }
                    }
                    ("devices", "channel", "target")
                        if attr(e, "name").as_deref() == Some("org.qemu.guest_agent.0") =>
                    {
                        agent_channel = true;
                    }
                    _ => {}
                }
                if let Some((_, w, _, _)) = capture.as_mut() {
                    w.write_event(ev.borrow())
                        .map_err(|e| parse_error("metadata", e))?;
                } else if depth == 2 && path[1] == "metadata" {
                    let (prefix, _) = split_qname(&qname);
                    let uri = resolve(&ns, &decls, prefix);
                    let mut w = Writer::new(Vec::new());
                    w.write_event(ev.borrow())
                        .map_err(|e| parse_error("metadata", e))?;
                    if is_start {
                        capture = Some((depth, w, prefix.to_owned(), uri.unwrap_or_default()));
                    } else {
                        push_metadata(&mut metadata, w, prefix, uri.as_deref().unwrap_or(""))?;
                    }
                } else if skip_depth.is_none() {
                    if depth == 1
                        && matches!(
                            qname.as_str(),
                            "uuid" | "metadata" | "title" | "description"
                        )
                    {
                        if is_start {
                            skip_depth = Some(depth);
                        }
                    } else if depth == 0 {
                        // Keep the attributes as written (libvirt quotes with
                        // apostrophes); only the running id goes.
                        let mut content = qname.clone();
                        for a in e.attributes().flatten() {
                            if a.key.as_ref() != "id" {
                                let q = if a.value.contains('\'') { '"' } else { '\'' };
                                content.push_str(&format!(" {}={q}{}{q}", a.key.as_ref(), a.value));
                            }
                        }
                        let root = BytesStart::from_content(content, qname.len());
                        let out = if is_start {
                            Event::Start(root)
                        } else {
                            Event::Empty(root)
                        };
                        body.write_event(out)
                            .map_err(|e| parse_error("domain definition", e))?;
                    } else {
                        body.write_event(ev.borrow())
                            .map_err(|e| parse_error("domain definition", e))?;
                    }
                }
                if is_start {
                    path.push(qname);
                    ns.push(decls);
                    text.clear();
                }
            }
            Event::End(_) => {
                let Some(qname) = path.pop() else {
                    return Err(doc.syntax(xml, reader.buffer_position(), "Unexpected end tag"));
                };
                ns.pop();
                let depth = path.len();
                if depth == 0 {
                    let blank = std::mem::take(&mut pending_blank);
                    if !blank.is_empty() {
                        body.write_event(Event::Text(BytesText::from_escaped(blank)))
                            .map_err(|e| parse_error("domain definition", e))?;
                    }
                }
                let parent = path.last().map(String::as_str).unwrap_or("");
                let value = std::mem::take(&mut text);
                match (parent, qname.as_str()) {
                    ("domain", "name") => name = Some(value.trim().to_owned()),
                    ("domain", "uuid") => {
                        let u = Uuid::parse_str(value.trim())
                            .map_err(|_| VirError::malformed_uuid())?;
                        uuid = Some(u);
                    }
                    ("domain", "title") => title = Some(value),
                    ("domain", "description") => description = Some(value),
                    ("domain", "memory") => {
                        max_mem_kib = scaled(&value, mem_unit.as_deref(), "KiB")? / 1024;
                    }
                    ("domain", "currentMemory") => {
                        memory_kib = Some(scaled(&value, mem_unit.as_deref(), "KiB")? / 1024);
                    }
                    ("domain", "vcpu") => {
                        vcpus = value
                            .trim()
                            .parse()
                            .map_err(|_| VirError::xml("maximum vcpus count must be an integer"))?;
                    }
                    ("os", "nvram") if !value.trim().is_empty() => {
                        nvram_path = Some(value.trim().to_owned());
                    }
                    _ => {}
                }
                if let Some((cdepth, w, _, _)) = capture.as_mut() {
                    w.write_event(ev.borrow())
                        .map_err(|e| parse_error("metadata", e))?;
                    if *cdepth == depth {
                        let (_, w, prefix, uri) = capture.take().expect("capture is set");
                        push_metadata(&mut metadata, w, &prefix, &uri)?;
                    }
                } else if let Some(sd) = skip_depth {
                    if sd == depth {
                        skip_depth = None;
                    }
                } else {
                    body.write_event(ev.borrow())
                        .map_err(|e| parse_error("domain definition", e))?;
                }
            }
            Event::Text(t) => {
                let content = t.xml10_content();
                text.push_str(&content);
                let between_children = path.len() == 1 && capture.is_none() && skip_depth.is_none();
                if between_children && content.trim().is_empty() {
                    // Held until the next child shows whether it stays.
                    pending_blank.push_str(t.as_ref());
                } else {
                    flush_blank(&mut body, &mut pending_blank, between_children)?;
                    write_other(&mut body, &mut capture, skip_depth, &path, ev.borrow())?;
                }
            }
            Event::GeneralRef(r) => {
                text.push_str(&ref_text(&r.xml10_content()));
                let between_children = path.len() == 1 && capture.is_none() && skip_depth.is_none();
                flush_blank(&mut body, &mut pending_blank, between_children)?;
                write_other(&mut body, &mut capture, skip_depth, &path, ev.borrow())?;
            }
            Event::CData(c) => {
                text.push_str(&c.xml10_content());
                let between_children = path.len() == 1 && capture.is_none() && skip_depth.is_none();
                flush_blank(&mut body, &mut pending_blank, between_children)?;
                write_other(&mut body, &mut capture, skip_depth, &path, ev.borrow())?;
            }
            Event::Eof => break,
            Event::Comment(_) | Event::PI(_) | Event::Decl(_) | Event::DocType(_) => {}
        }
    }
    doc.finish(xml, reader.buffer_position(), path.last(), seen_root)?;
    let name = match name {
        Some(n) if !n.is_empty() => n,
        _ => return Err(VirError::missing_name()),
    };
    let body = String::from_utf8(body.into_inner()).expect("writer output is utf-8");
    Ok(ParsedDomain {
        name,
        uuid,
        uefi,
        nvram_path,
        nvram_template,
        agent_channel,
        max_mem_kib,
        memory_kib: memory_kib.unwrap_or(max_mem_kib),
        vcpus,
        macs,
        disk_files,
        metadata,
        title,
        description,
        body,
    })
}

/// Writes blank text held between the root's children, when `now`.
fn flush_blank(
    body: &mut Writer<Vec<u8>>,
    pending: &mut String,
    now: bool,
) -> Result<(), VirError> {
    if now && !pending.is_empty() {
        let blank = std::mem::take(pending);
        body.write_event(Event::Text(BytesText::from_escaped(blank)))
            .map_err(|e| parse_error("domain definition", e))?;
    }
    Ok(())
}

fn write_other(
    body: &mut Writer<Vec<u8>>,
    capture: &mut Option<(usize, Writer<Vec<u8>>, String, String)>,
    skip_depth: Option<usize>,
    path: &[String],
    ev: Event<'_>,
) -> Result<(), VirError> {
    if let Some((_, w, _, _)) = capture.as_mut() {
        w.write_event(ev).map_err(|e| parse_error("metadata", e))?;
    } else if skip_depth.is_none() && !path.is_empty() {
        body.write_event(ev)
            .map_err(|e| parse_error("domain definition", e))?;
    }
    Ok(())
}

fn push_metadata(
    out: &mut Vec<MetadataEntry>,
    w: Writer<Vec<u8>>,
    prefix: &str,
    uri: &str,
) -> Result<(), VirError> {
    let raw = String::from_utf8(w.into_inner()).expect("writer output is utf-8");
    if uri.is_empty() {
        // libvirt keeps elements without a namespace but no metadata call can
        // reach them; the fake drops them.
        return Ok(());
    }
    let xml = strip_namespace(&raw, prefix, uri)?;
    out.retain(|m| m.uri != uri);
    out.push(MetadataEntry {
        uri: uri.to_owned(),
        key: prefix.to_owned(),
        xml,
    });
    Ok(())
}

fn split_qname(q: &str) -> (&str, &str) {
    match q.split_once(':') {
        Some((p, l)) => (p, l),
        None => ("", q),
    }
}

fn resolve(ns: &[Vec<(String, String)>], own: &[(String, String)], prefix: &str) -> Option<String> {
    own.iter()
        .chain(ns.iter().rev().flatten())
        .find(|(p, _)| p == prefix)
        .map(|(_, u)| u.clone())
}

/// Serialises one element the way libxml2 does (attributes in double quotes,
/// elements without content written as empty tags), letting `edit` rename
/// each element and change its attributes; end tags follow their start tags.
fn rewrite(
    xml: &str,
    what: &str,
    mut edit: impl FnMut(usize, &BytesStart<'_>) -> BytesStart<'static>,
) -> Result<String, VirError> {
    let mut reader = Reader::from_str(xml);
    let mut w = Writer::new(Vec::new());
    let mut open: Vec<String> = Vec::new();
    let mut roots = 0usize;
    let mut pending: Option<BytesStart<'static>> = None;
    let err = |e: &dyn std::fmt::Display| parse_error(what, e);
    loop {
        let ev = reader.read_event().map_err(|e| err(&e))?;
        if !matches!(ev, Event::End(_) | Event::Eof)
            && let Some(p) = pending.take()
        {
            w.write_event(Event::Start(p)).map_err(|e| err(&e))?;
        }
        match ev {
            Event::Start(e) => {
                if open.is_empty() {
                    roots += 1;
                }
                let out = edit(open.len(), &e);
                open.push(out.name().as_ref().to_owned());
                pending = Some(out);
            }
            Event::Empty(e) => {
                if open.is_empty() {
                    roots += 1;
                }
                let out = edit(open.len(), &e);
                w.write_event(Event::Empty(out)).map_err(|e| err(&e))?;
            }
            Event::End(_) => {
                let name = open.pop().ok_or_else(|| {
                    VirError::xml(format!("failed to parse {what}: unexpected end tag"))
                })?;
                if let Some(p) = pending.take() {
                    w.write_event(Event::Empty(p)).map_err(|e| err(&e))?;
                } else {
                    w.write_event(Event::End(quick_xml::events::BytesEnd::new(name)))
                        .map_err(|e| err(&e))?;
                }
            }
            Event::Text(t) => {
                if open.is_empty() {
                    if t.xml10_content().trim().is_empty() {
                        continue;
                    }
                    return Err(VirError::xml(format!(
                        "failed to parse {what}: content outside the root element"
                    )));
                }
                w.write_event(Event::Text(t)).map_err(|e| err(&e))?;
            }
            Event::Eof => break,
            Event::Decl(_) | Event::DocType(_) => {}
            other => {
                if !open.is_empty() {
                    w.write_event(other).map_err(|e| err(&e))?;
                }
            }
        }
    }
    if !open.is_empty() {
        return Err(VirError::xml(format!(
            "failed to parse {what}: premature end of data"
        )));
    }
    if roots != 1 {
        return Err(VirError::xml(format!(
            "failed to parse {what}: expected one root element, found {roots}"
        )));
    }
    Ok(String::from_utf8(w.into_inner()).expect("writer output is utf-8"))
}

fn rebuild(
    e: &BytesStart<'_>,
    name: &str,
    mut keep: impl FnMut(&str) -> bool,
) -> BytesStart<'static> {
    let mut out = BytesStart::new(name.to_owned());
    for a in e.attributes().flatten() {
        let key = a.key.as_ref();
        if !keep(key) {
            continue;
        }
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map(Cow::into_owned)
            .unwrap_or_default();
        out.push_attribute((key, value.as_str()));
    }
    out
}

/// Removes namespace `uri` (bound to `prefix`) from every element of `xml`
/// and drops its declaration: what `virDomainGetMetadata` returns.
pub(crate) fn strip_namespace(xml: &str, prefix: &str, uri: &str) -> Result<String, VirError> {
    let decl = if prefix.is_empty() {
        "xmlns".to_owned()
    } else {
        format!("xmlns:{prefix}")
    };
    rewrite(xml, "metadata", |_, e| {
        let full = e.name().as_ref().to_owned();
        let name = match full.split_once(':') {
            Some((p, local)) if !prefix.is_empty() && p == prefix => local.to_owned(),
            _ => full,
        };
        let declares_uri = e.attributes().flatten().any(|a| {
            a.key.as_ref() == decl
                && a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .is_ok_and(|v| v == uri)
        });
        rebuild(e, &name, |k| !(declares_uri && k == decl))
    })
}

/// Checks that `key` is an XML NCName (a valid namespace prefix).
fn is_ncname(key: &str) -> bool {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if c.is_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Puts every element of `xml` that has no namespace yet into `uri` with
/// prefix `key` and declares it on the root: how `virDomainSetMetadata`
/// stores an element and how `virDomainGetXMLDesc` shows it.
pub(crate) fn inject_namespace(xml: &str, key: &str, uri: &str) -> Result<String, VirError> {
    if !is_ncname(key) {
        return Err(VirError::invalid_arg(
            crate::error::domain::XML,
            "failed to validate prefix for a new XML namespace",
        ));
    }
    let decl = format!("xmlns:{key}");
    // Depth at which a default namespace was declared; elements below it
    // already have a namespace and keep their names.
    let mut default_ns: Option<usize> = None;
    rewrite(xml, "metadata", |depth, e| {
        if default_ns.is_some_and(|d| depth <= d) {
            default_ns = None;
        }
        if default_ns.is_none() && e.attributes().flatten().any(|a| a.key.as_ref() == "xmlns") {
            default_ns = Some(depth);
        }
        let name = e.name().as_ref().to_owned();
        let name = if name.contains(':') || default_ns.is_some() {
            name
        } else {
            format!("{key}:{name}")
        };
        let mut out = BytesStart::new(name.clone());
        if depth == 0 {
            out.push_attribute((decl.as_str(), uri));
        }
        let rest = rebuild(e, &name, |k| !(depth == 0 && k == decl));
        for a in rest.attributes().flatten() {
            out.push_attribute(a);
        }
        out.into_owned()
    })
}

/// Declares `uri` as the default namespace on the root of `xml`: how a
/// metadata element defined in a default namespace (`<e xmlns='…'>`, stored
/// with an empty key) is shown again.
fn declare_default_namespace(xml: &str, uri: &str) -> Result<String, VirError> {
    rewrite(xml, "metadata", |depth, e| {
        let name = e.name().as_ref().to_owned();
        if depth > 0 {
            return rebuild(e, &name, |_| true);
        }
        let mut out = BytesStart::new(name.clone());
        out.push_attribute(("xmlns", uri));
        for a in rebuild(e, &name, |k| k != "xmlns").attributes().flatten() {
            out.push_attribute(a);
        }
        out
    })
}

/// Canonical form of a metadata element given to `virDomainSetMetadata`:
/// the element with no namespace of `uri`, as a later get returns it.
pub(crate) fn canonical_metadata(xml: &str, key: &str, uri: &str) -> Result<String, VirError> {
    let qualified = inject_namespace(xml, key, uri)?;
    strip_namespace(&qualified, key, uri)
}

/// A metadata element as `virDomainGetMetadata` returns it: libxml2's
/// formatted dump, where an element whose children are all elements has
/// each child on a line of its own, indented two spaces a level, and an
/// element with any text inside (blank text too) is written as it is.
/// Input that does not parse is returned unchanged.
pub(crate) fn format_metadata(xml: &str) -> String {
    enum Node {
        Element { start: String, children: Vec<Node> },
        Text(String),
    }
    fn write(node: &Node, level: usize, out: &mut String) {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Element { start, children } if children.is_empty() => {
                out.push('<');
                out.push_str(start);
                out.push_str("/>");
            }
            Node::Element { start, children } => {
                out.push('<');
                out.push_str(start);
                out.push('>');
                let indent = children.iter().all(|c| matches!(c, Node::Element { .. }));
                for c in children {
                    if indent {
                        out.push('\n');
                        out.push_str(&"  ".repeat(level + 1));
                    }
                    write(c, level + 1, out);
                }
                if indent {
                    out.push('\n');
                    out.push_str(&"  ".repeat(level));
                }
                let name = start
                    .split(|c: char| c.is_ascii_whitespace())
                    .next()
                    .unwrap_or("");
                out.push_str("</");
                out.push_str(name);
                out.push('>');
            }
        }
    }
    let parse = || -> Option<Vec<Node>> {
        let mut reader = Reader::from_str(xml);
        // The open elements, each with the children read so far; the bottom
        // entry collects the top level.
        let mut stack: Vec<(String, Vec<Node>)> = vec![(String::new(), Vec::new())];
        loop {
            match reader.read_event().ok()? {
                Event::Start(e) => {
                    stack.push(((*e).to_owned(), Vec::new()));
                }
                Event::Empty(e) => {
                    let start = (*e).to_owned();
                    stack.last_mut()?.1.push(Node::Element {
                        start,
                        children: Vec::new(),
                    });
                }
                Event::End(_) => {
                    let (start, children) = stack.pop()?;
                    stack.last_mut()?.1.push(Node::Element { start, children });
                }
                Event::Text(t) => {
                    stack.last_mut()?.1.push(Node::Text((*t).to_owned()));
                }
                Event::GeneralRef(r) => {
                    let text = format!("&{};", &*r);
                    stack.last_mut()?.1.push(Node::Text(text));
                }
                Event::CData(c) => {
                    let text = format!("<![CDATA[{}]]>", &*c);
                    stack.last_mut()?.1.push(Node::Text(text));
                }
                Event::Eof => break,
                _ => {}
            }
        }
        let (_, top) = stack.pop()?;
        stack.is_empty().then_some(top)
    };
    match parse() {
        Some(top) if top.len() == 1 && matches!(top[0], Node::Element { .. }) => {
            let mut out = String::with_capacity(xml.len() + 16);
            write(&top[0], 0, &mut out);
            out
        }
        _ => xml.to_owned(),
    }
}

/// What [`render_domain`] puts back into a stored body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rendered<'a> {
    pub(crate) uuid: &'a Uuid,
    pub(crate) id: Option<i32>,
    pub(crate) title: Option<&'a str>,
    pub(crate) description: Option<&'a str>,
    pub(crate) metadata: &'a [MetadataEntry],
}

/// Escapes text for an element's content.
fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Writes a stored domain body back out with its current UUID, running id,
/// title, description and metadata, in libvirt's element order.
pub(crate) fn render_domain(body: &str, r: Rendered<'_>) -> String {
    let Rendered {
        uuid,
        id,
        title,
        description,
        metadata,
    } = r;
    let mut out = String::with_capacity(body.len() + 256);
    // The body was written by `parse_domain`, so its root start tag is the
    // first `<domain` and its last end tag is `</domain>`.
    let Some(root_end) = find_tag_end(body) else {
        return body.to_owned();
    };
    let self_closing = body[..root_end].ends_with('/');
    let open = if self_closing {
        &body[..root_end - 1]
    } else {
        &body[..root_end]
    };
    out.push_str(open);
    if let Some(id) = id {
        out.push_str(&format!(" id='{id}'"));
    }
    out.push('>');
    let inner_end = if self_closing {
        root_end + 1
    } else {
        body.rfind("</domain").unwrap_or(body.len())
    };
    let inner = if self_closing {
        ""
    } else {
        &body[root_end + 1..inner_end]
    };
    let mut rest = inner;
    if let Some(cut) = top_level_name_end(inner) {
        out.push_str(&inner[..cut]);
        rest = &inner[cut..];
    }
    out.push_str(&format!("\n  <uuid>{uuid}</uuid>"));
    if let Some(t) = title {
        out.push_str(&format!("\n  <title>{}</title>", escape_text(t)));
    }
    if let Some(d) = description {
        out.push_str(&format!(
            "\n  <description>{}</description>",
            escape_text(d)
        ));
    }
    if !metadata.is_empty() {
        out.push_str("\n  <metadata>");
        for m in metadata {
            let q = if m.key.is_empty() {
                declare_default_namespace(&m.xml, &m.uri)
            } else {
                inject_namespace(&m.xml, &m.key, &m.uri)
            }
            .unwrap_or_else(|_| m.xml.clone());
            out.push_str("\n    ");
            out.push_str(&q);
        }
        out.push_str("\n  </metadata>");
    }
    out.push_str(rest);
    out.push_str("</domain>\n");
    out
}

/// Byte offset just past the `</name>` that closes a child of the root, in the
/// root's content as `parse_domain` wrote it (no comments; text escaped; CDATA
/// sections whole): tags are followed by depth, so a `<name>` nested deeper, or
/// inside a CDATA section, is passed over.
fn top_level_name_end(inner: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(off) = inner[i..].find('<') {
        let at = i + off;
        let tail = &inner[at..];
        if tail.starts_with("<![CDATA[") {
            i = at + tail.find("]]>")? + 3;
            continue;
        }
        let end = at + find_tag_end(tail)?;
        let tag = &inner[at..=end];
        if tag.starts_with("</") {
            depth = depth.checked_sub(1)?;
            if depth == 0 && tag.trim_end_matches('>').trim_end() == "</name" {
                return Some(end + 1);
            }
        } else if !tag.ends_with("/>") && !tag.starts_with("<?") {
            depth += 1;
        }
        i = end + 1;
    }
    None
}

/// Byte offset of the `>` closing the first start tag.
fn find_tag_end(s: &str) -> Option<usize> {
    let start = s.find('<')?;
    let mut quote: Option<char> = None;
    for (i, c) in s[start..].char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(start + i),
            _ => {}
        }
    }
    None
}

/// Reads a volume definition.
pub(crate) fn parse_volume(xml: &str) -> Result<ParsedVolume, VirError> {
    let mut unit: Option<String> = None;
    let mut vol = ParsedVolume {
        name: String::new(),
        capacity: None,
        allocation: None,
        format: None,
        backing_path: None,
        backing_format: None,
    };
    walk(xml, Document::Volume, |node| {
        match node {
            Node::Open {
                parent,
                name,
                element: e,
            } => match (parent, name) {
                ("volume", "capacity") | ("volume", "allocation") => unit = attr(e, "unit"),
                ("target", "format") => vol.format = attr(e, "type"),
                ("backingStore", "format") => vol.backing_format = attr(e, "type"),
                _ => {}
            },
            Node::Close {
                parent, name, text, ..
            } => match (parent, name) {
                ("volume", "name") => vol.name = text.trim().to_owned(),
                ("volume", "capacity") => {
                    vol.capacity = Some(scaled(&text, unit.as_deref(), "bytes")?);
                }
                ("volume", "allocation") => {
                    vol.allocation = Some(scaled(&text, unit.as_deref(), "bytes")?);
                }
                ("backingStore", "path") => vol.backing_path = Some(text.trim().to_owned()),
                _ => {}
            },
        }
        Ok(())
    })?;
    if vol.name.is_empty() {
        return Err(VirError::new(
            crate::error::code::XML_ERROR,
            crate::error::domain::STORAGE,
            "missing volume name element",
        ));
    }
    if vol.capacity.is_none() && vol.backing_path.is_none() {
        return Err(VirError::new(
            crate::error::code::XML_ERROR,
            crate::error::domain::STORAGE,
            "missing capacity element",
        ));
    }
    Ok(vol)
}

/// `virFileSanitizePath`: collapses repeated slashes and drops a trailing
/// one (but keeps a lone `/`).
/// A pool's target path as it is kept: trimmed and sanitised until neither
/// changes it, so that reading it back gives the same path.
pub(crate) fn clean_pool_path(path: &str) -> String {
    let mut cur = path.trim().to_owned();
    loop {
        let next = sanitize_path(&cur).trim().to_owned();
        if next == cur {
            return cur;
        }
        cur = next;
    }
}

pub(crate) fn sanitize_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    if out.len() > 1 && out.ends_with('/') {
        out.pop();
    }
    out
}

/// Reads a storage pool definition. Only directory pools are served: any
/// other type libvirt knows fails as on a daemon built without its backend.
pub(crate) fn parse_pool(xml: &str) -> Result<ParsedPool, VirError> {
    use crate::error::code::{INTERNAL_ERROR, XML_ERROR};
    let storage = |code: i32, detail: String| VirError::new(code, domain::STORAGE, detail);
    let mut kind: Option<String> = None;
    let mut name: Option<String> = None;
    let mut uuid: Option<String> = None;
    let mut target: Option<String> = None;
    walk(xml, Document::Pool, |node| {
        match node {
            Node::Open {
                parent: "",
                element,
                ..
            } => kind = attr(element, "type"),
            Node::Open { .. } => {}
            Node::Close {
                parent,
                name: element,
                text,
                depth,
            } => match (parent, element) {
                ("pool", "name") if name.is_none() => name = Some(text.trim().to_owned()),
                ("pool", "uuid") if uuid.is_none() => uuid = Some(text.trim().to_owned()),
                ("target", "path") if depth == 2 && target.is_none() => {
                    target = Some(text.trim().to_owned());
                }
                _ => {}
            },
        }
        Ok(())
    })?;
    let Some(kind) = kind else {
        return Err(VirError::xml(
            "Missing required attribute 'type' in element 'pool'",
        ));
    };
    let Some(number) = POOL_TYPES.iter().position(|t| *t == kind) else {
        return Err(VirError::xml(format!(
            "Invalid value for attribute 'type' in element 'pool': '{kind}'."
        )));
    };
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| storage(XML_ERROR, "missing pool source name element".to_owned()))?;
    if name.contains('/') {
        return Err(storage(
            XML_ERROR,
            format!("name {name} cannot contain '/'"),
        ));
    }
    let uuid = match uuid {
        None => None,
        Some(u) => Some(
            Uuid::parse_str(&u)
                .map_err(|_| storage(XML_ERROR, "malformed uuid element".to_owned()))?,
        ),
    };
    let target = target
        .filter(|t| !t.is_empty())
        .ok_or_else(|| storage(XML_ERROR, "missing storage pool target path".to_owned()))?;
    if number != 0 {
        return Err(storage(
            INTERNAL_ERROR,
            format!("missing backend for pool type {number} ({kind})"),
        ));
    }
    Ok(ParsedPool {
        name,
        uuid,
        path: clean_pool_path(&target),
    })
}

/// What [`render_pool`] writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RenderedPool<'a> {
    pub(crate) name: &'a str,
    pub(crate) uuid: &'a Uuid,
    pub(crate) capacity: u64,
    pub(crate) allocation: u64,
    pub(crate) available: u64,
    pub(crate) path: &'a str,
    /// The directory's mode, once a start has read it.
    pub(crate) mode: Option<u32>,
}

/// A directory pool's XML as `virStoragePoolGetXMLDesc` formats it.
pub(crate) fn render_pool(p: RenderedPool<'_>) -> String {
    let mut out = format!(
        "<pool type='dir'>\n  <name>{}</name>\n  <uuid>{}</uuid>\n  \
         <capacity unit='bytes'>{}</capacity>\n  <allocation unit='bytes'>{}</allocation>\n  \
         <available unit='bytes'>{}</available>\n  <source>\n  </source>\n  <target>\n    \
         <path>{}</path>\n",
        escape_text(p.name),
        p.uuid,
        p.capacity,
        p.allocation,
        p.available,
        escape_text(p.path)
    );
    if let Some(mode) = p.mode {
        out.push_str(&format!(
            "    <permissions>\n      <mode>{mode:04o}</mode>\n      <owner>0</owner>\n      \
             <group>0</group>\n    </permissions>\n"
        ));
    }
    out.push_str("  </target>\n</pool>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const NS: &str = "https://example.org/ns";

    /// The structural checks every document shares, with each document's own
    /// words and error domain for them.
    #[rstest]
    #[case::domain_wrong_root(
        Document::Domain,
        "<volume/>",
        "XML error: unexpected root element <volume>, expecting <domain>"
    )]
    #[case::volume_wrong_root(
        Document::Volume,
        "<pool/>",
        "XML error: unexpected root element <pool>, expecting <volume>"
    )]
    #[case::pool_wrong_root(
        Document::Pool,
        "<volume/>",
        "XML error: expecting root element of 'pool', not 'volume'"
    )]
    #[case::domain_two_roots(
        Document::Domain,
        "<domain><name>a</name></domain>\n<domain/>",
        "at line 2: Extra content at the end of the document\n<domain/>\n^"
    )]
    #[case::volume_unclosed(
        Document::Volume,
        "<volume><name>v",
        "at line 1: Premature end of data in tag name line 1\n<volume><name>v\n---------------^"
    )]
    #[case::pool_empty(Document::Pool, "", "at line 1: Document is empty\n\n^")]
    fn structure_errors(#[case] doc: Document, #[case] xml: &str, #[case] message: &str) {
        let err = match doc {
            Document::Domain => parse_domain(xml).map(drop),
            Document::Volume => parse_volume(xml).map(drop),
            Document::Pool => parse_pool(xml).map(drop),
        }
        .expect_err(xml);
        assert!(
            err.message.contains(message),
            "{xml:?}: {:?} does not contain {message:?}",
            err.message
        );
        let (expected_code, expected_domain) = if message.starts_with("at line") {
            (crate::error::code::XML_DETAIL, doc_domain(doc))
        } else {
            (crate::error::code::XML_ERROR, domain::XML)
        };
        assert_eq!(
            (err.code, err.domain),
            (expected_code, expected_domain),
            "{xml:?}"
        );
    }

    fn doc_domain(doc: Document) -> i32 {
        match doc {
            Document::Domain => domain::DOMAIN,
            Document::Volume | Document::Pool => domain::STORAGE,
        }
    }

    #[rstest]
    #[case::element_children_indented(
        "<instance managed=\"yes\" uid=\"u-1\"><tag>v1</tag><e/></instance>",
        "<instance managed=\"yes\" uid=\"u-1\">\n  <tag>v1</tag>\n  <e/>\n</instance>"
    )]
    #[case::nested(
        "<a><b><c>x &amp; y</c></b></a>",
        "<a>\n  <b>\n    <c>x &amp; y</c>\n  </b>\n</a>"
    )]
    #[case::blank_text_kept_as_is("<a>\n <b>1</b>\n</a>", "<a>\n <b>1</b>\n</a>")]
    #[case::mixed_content_kept("<a>t<b>1</b></a>", "<a>t<b>1</b></a>")]
    #[case::childless("<a x=\"1\"/>", "<a x=\"1\"/>")]
    #[case::not_xml("<a><b></a>", "<a><b></a>")]
    fn metadata_formatted_as_libxml2_dumps_it(#[case] stored: &str, #[case] returned: &str) {
        assert_eq!(format_metadata(stored), returned);
    }

    #[test]
    fn inject_qualifies_every_element_without_a_namespace() {
        let got = inject_namespace(
            "<instance id='1'><id>7</id><o:x xmlns:o='urn:o'/></instance>",
            "k",
            NS,
        )
        .unwrap();
        assert_eq!(
            got,
            format!(
                "<k:instance xmlns:k=\"{NS}\" id=\"1\"><k:id>7</k:id><o:x xmlns:o=\"urn:o\"/></k:instance>"
            )
        );
    }

    #[test]
    fn strip_undoes_inject_and_keeps_other_namespaces() {
        let src = "<instance id=\"1\"><id>7</id><o:x xmlns:o=\"urn:o\"/><e></e></instance>";
        let q = inject_namespace(src, "k", NS).unwrap();
        assert_eq!(
            strip_namespace(&q, "k", NS).unwrap(),
            "<instance id=\"1\"><id>7</id><o:x xmlns:o=\"urn:o\"/><e/></instance>"
        );
    }

    #[test]
    fn elements_under_a_default_namespace_keep_it() {
        let got = inject_namespace("<a><b xmlns='urn:d'><c/></b><d/></a>", "k", NS).unwrap();
        assert_eq!(
            got,
            format!("<k:a xmlns:k=\"{NS}\"><b xmlns=\"urn:d\"><c/></b><k:d/></k:a>")
        );
    }

    #[test]
    fn malformed_metadata_is_an_xml_error() {
        for bad in ["<a>", "<a/><b/>", "text", "", "<a></b>"] {
            let e = inject_namespace(bad, "k", NS).unwrap_err();
            assert_eq!(e.code, crate::error::code::XML_ERROR, "{bad}");
        }
        let e = inject_namespace("<a/>", "no:colon", NS).unwrap_err();
        assert_eq!(e.code, crate::error::code::INVALID_ARG);
    }

    #[test]
    fn domain_body_drops_uuid_metadata_and_id_and_render_restores_them() {
        let src = format!(
            "<domain type='kvm' id='3'>\n  <name>a &amp; b</name>\n  <uuid>535260dc-c8f5-4300-8334-20d1fe3c014f</uuid>\n  \
             <metadata><k:i xmlns:k='{NS}' v='1'/></metadata>\n  <os firmware='efi'><nvram>/n/a.fd</nvram></os>\n</domain>"
        );
        let p = parse_domain(&src).unwrap();
        assert_eq!(p.name, "a & b");
        assert!(p.uefi);
        assert_eq!(p.nvram_path.as_deref(), Some("/n/a.fd"));
        assert_eq!(p.metadata.len(), 1);
        assert_eq!(p.metadata[0].xml, "<i v=\"1\"/>");
        assert!(
            !p.body.contains("uuid") && !p.body.contains("metadata") && !p.body.contains("id='3'")
        );
        let uuid = p.uuid.unwrap();
        let out = render_domain(
            &p.body,
            Rendered {
                uuid: &uuid,
                id: Some(4),
                title: None,
                description: None,
                metadata: &p.metadata,
            },
        );
        assert!(out.starts_with("<domain type='kvm' id='4'>"), "{out}");
        assert!(out.contains(&format!("<uuid>{uuid}</uuid>")), "{out}");
        assert!(
            out.contains(&format!("<k:i xmlns:k=\"{NS}\" v=\"1\"/>")),
            "{out}"
        );
        // The rendered document parses back to the same facts.
        let again = parse_domain(&out).unwrap();
        assert_eq!(again.uuid, Some(uuid));
        assert_eq!(again.metadata, p.metadata);
    }

    /// Found by the `parse_domain` fuzz target: a namespace URI was kept
    /// with its character references unresolved, so a URI holding one
    /// changed each time the document was shown and defined again.
    #[test]
    fn namespace_uris_are_read_with_references_resolved() {
        let src = "<domain><name>a</name><metadata><k:e xmlns:k='urn:a&amp;b&#13;c'/></metadata></domain>";
        let p = parse_domain(src).unwrap();
        assert_eq!(p.metadata[0].uri, "urn:a&b\rc");
        assert_eq!(p.metadata[0].xml, "<e/>");
        let uuid = Uuid::nil();
        let out = render_domain(
            &p.body,
            Rendered {
                uuid: &uuid,
                id: None,
                title: None,
                description: None,
                metadata: &p.metadata,
            },
        );
        assert_eq!(parse_domain(&out).unwrap().metadata, p.metadata, "{out}");
    }

    /// Found by the `parse_domain` fuzz target: metadata in a default
    /// namespace was shown without its declaration, so defining the shown
    /// document again lost it.
    fn shown(p: &ParsedDomain, uuid: &Uuid) -> String {
        render_domain(
            &p.body,
            Rendered {
                uuid,
                id: None,
                title: p.title.as_deref(),
                description: p.description.as_deref(),
                metadata: &p.metadata,
            },
        )
    }

    /// The blank before a `<uuid>` is not kept: a shown document defined
    /// again is shown the same, to the byte.
    #[test]
    fn a_shown_domain_defined_again_is_shown_the_same() {
        let src = "<domain type='kvm'>\n  <name>a</name>\n  <uuid>535260dc-c8f5-4300-8334-20d1fe3c014f</uuid>\n  <title>t</title>\n  <memory>1024</memory>\n</domain>";
        let first = parse_domain(src).unwrap();
        let uuid = first.uuid.unwrap();
        let once = shown(&first, &uuid);
        let twice = shown(&parse_domain(&once).unwrap(), &uuid);
        assert_eq!(twice, once);
        // The source's lines, and the one `</domain>` ends with.
        assert_eq!(
            once.matches('\n').count(),
            src.matches('\n').count() + 1,
            "{once}"
        );
    }

    /// The UUID goes after the root's own `<name>`, not after a `<name>`
    /// nested deeper or written inside a CDATA section.
    #[test]
    fn the_uuid_follows_the_domains_own_name() {
        let src = "<domain><devices><x><name>inner</name></x><y><![CDATA[</name>]]></y></devices><name>a</name></domain>";
        let p = parse_domain(src).unwrap();
        let uuid = Uuid::parse_str("535260dc-c8f5-4300-8334-20d1fe3c014f").unwrap();
        let out = shown(&p, &uuid);
        assert!(out.contains("<name>a</name>\n  <uuid>"), "{out}");
        let again = parse_domain(&out).unwrap();
        assert_eq!((again.name.as_str(), again.uuid), ("a", Some(uuid)));
    }

    /// What libxml2 refuses is refused: a name with two colons, a local name
    /// that is no NCName, an attribute list that is not well formed.
    #[rstest]
    #[case("<domain><name>a</name><a:b:c/></domain>")]
    #[case("<domain><name>a</name><metadata><k:/i xmlns:k='urn:k'/></metadata></domain>")]
    #[case("<domain x=1><name>a</name></domain>")]
    #[case("<domain x='1' x='2'><name>a</name></domain>")]
    fn ill_formed_names_and_attributes_are_refused(#[case] src: &str) {
        assert!(parse_domain(src).is_err(), "{src}");
    }

    /// A pool path is kept as it reads back: trimmed and sanitised until
    /// neither changes it.
    #[rstest]
    #[case("/a/b /", "/a/b")]
    #[case(" /a// /", "/a")]
    #[case("/a/b/", "/a/b")]
    fn pool_paths_are_kept_as_they_read_back(#[case] raw: &str, #[case] kept: &str) {
        let clean = clean_pool_path(raw);
        assert_eq!(clean, kept);
        assert_eq!(clean_pool_path(&clean), clean);
    }

    #[test]
    fn default_namespace_metadata_survives_a_render() {
        let src =
            "<domain><name>a</name><metadata><e xmlns='urn:b' k='v'><c/></e></metadata></domain>";
        let p = parse_domain(src).unwrap();
        assert_eq!(p.metadata.len(), 1);
        assert_eq!(p.metadata[0].key, "");
        let uuid = Uuid::nil();
        let out = render_domain(
            &p.body,
            Rendered {
                uuid: &uuid,
                id: None,
                title: None,
                description: None,
                metadata: &p.metadata,
            },
        );
        assert!(out.contains("<e xmlns=\"urn:b\" k=\"v\"><c/></e>"), "{out}");
        assert_eq!(parse_domain(&out).unwrap().metadata, p.metadata);
    }

    #[test]
    fn pool_definitions() {
        let p = parse_pool(
            "<pool type='dir'><name>p</name><target><path>/a//b/</path></target></pool>",
        )
        .unwrap();
        assert_eq!(
            (p.name.as_str(), p.path.as_str(), p.uuid),
            ("p", "/a/b", None)
        );
        let msg = |x: &str| parse_pool(x).unwrap_err().message;
        assert_eq!(
            msg("<pool type='dir'><name>p</name></pool>"),
            "XML error: missing storage pool target path"
        );
        assert_eq!(
            msg("<pool><name>p</name></pool>"),
            "XML error: Missing required attribute 'type' in element 'pool'"
        );
        assert_eq!(
            msg("<pool type='dir'><target><path>/x</path></target></pool>"),
            "XML error: missing pool source name element"
        );
        assert_eq!(
            msg("<volume type='dir'/>"),
            "XML error: expecting root element of 'pool', not 'volume'"
        );
        let e = parse_pool("<pool type='dir'><name>").unwrap_err();
        assert_eq!(e.code, crate::error::code::XML_DETAIL);
        let e = parse_pool(
            "<pool type='logical'><name>l</name><target><path>/x</path></target></pool>",
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "internal error: missing backend for pool type 3 (logical)"
        );
        assert_eq!(sanitize_path("/"), "/");
    }

    #[test]
    fn volume_units_and_defaults() {
        let v = parse_volume(
            "<volume><name>x</name><capacity unit='G'>2</capacity><allocation unit='KiB'>4</allocation></volume>",
        )
        .unwrap();
        assert_eq!(v.capacity, Some(2 << 30));
        assert_eq!(v.allocation, Some(4096));
        let e = parse_volume("<volume><name>x</name></volume>").unwrap_err();
        assert_eq!(e.message, "XML error: missing capacity element");
        let e = parse_volume("<volume><name>x</name><capacity unit='Q'>1</capacity></volume>")
            .unwrap_err();
        assert_eq!(e.code, crate::error::code::XML_ERROR);
    }
}
