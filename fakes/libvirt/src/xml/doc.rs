//! The document layer shared by every XML reader and writer of the fake:
//! the structural checks libvirt's parser (libxml2) makes on any document,
//! a walker over small definitions, attribute and size helpers, escaping,
//! and the element rewriter that renames elements and their namespaces.

use std::borrow::Cow;

use libvirt_wire::ErrorDomain;
use quick_xml::Reader;
use quick_xml::Writer;
use quick_xml::events::{BytesStart, Event};

use crate::error::VirError;

pub(super) fn parse_error(what: &str, e: impl std::fmt::Display) -> VirError {
    VirError::xml(format!("failed to parse {what}: {e}"))
}

/// The documents whose syntax errors libvirt reports as `VIR_ERR_XML_DETAIL`
/// from the subsystem that parsed them.
#[derive(Debug, Clone, Copy)]
pub(super) enum Document {
    Domain,
    Volume,
    Pool,
}

impl Document {
    /// A syntax error at byte `pos` of `xml`: its line (counted from 1), the
    /// text of that line and the column of `pos` in it.
    pub(super) fn syntax(self, xml: &str, pos: u64, detail: impl std::fmt::Display) -> VirError {
        let mut upto = usize::try_from(pos).unwrap_or(usize::MAX).min(xml.len());
        while !xml.is_char_boundary(upto) {
            upto -= 1;
        }
        let start = xml[..upto].rfind('\n').map_or(0, |i| i + 1);
        let end = xml[upto..].find('\n').map_or(xml.len(), |i| upto + i);
        let line = xml[..upto].matches('\n').count() + 1;
        let from = match self {
            Document::Domain => ErrorDomain::Domain,
            Document::Volume | Document::Pool => ErrorDomain::Storage,
        };
        let column = xml[start..upto].chars().count();
        VirError::xml_syntax(from, line, &detail.to_string(), &xml[start..end], column)
    }

    /// The element libvirt's parser wants at the root.
    pub(super) fn root(self) -> &'static str {
        match self {
            Document::Domain => "domain",
            Document::Volume => "volume",
            Document::Pool => "pool",
        }
    }

    /// Checks an element opening at `depth`: a document has one root, and
    /// it is the one expected.
    pub(super) fn open(
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
    pub(super) fn names(self, xml: &str, pos: u64, e: &BytesStart<'_>) -> Result<(), VirError> {
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
    pub(super) fn finish(
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
pub(super) enum Node<'a, 'e> {
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
pub(super) fn walk(
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

pub(super) fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(Cow::into_owned)
        })
}

pub(super) fn ref_text(name: &str) -> String {
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
pub(super) fn scaled(value: &str, unit: Option<&str>, default_unit: &str) -> Result<u64, VirError> {
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

pub(super) fn split_qname(q: &str) -> (&str, &str) {
    match q.split_once(':') {
        Some((p, l)) => (p, l),
        None => ("", q),
    }
}

pub(super) fn resolve(
    ns: &[Vec<(String, String)>],
    own: &[(String, String)],
    prefix: &str,
) -> Option<String> {
    own.iter()
        .chain(ns.iter().rev().flatten())
        .find(|(p, _)| p == prefix)
        .map(|(_, u)| u.clone())
}

/// Serialises one element the way libxml2 does (attributes in double quotes,
/// elements without content written as empty tags), letting `edit` rename
/// each element and change its attributes; end tags follow their start tags.
pub(super) fn rewrite(
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

pub(super) fn rebuild(
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

/// Checks that `key` is an XML NCName (a valid namespace prefix).
pub(super) fn is_ncname(key: &str) -> bool {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if c.is_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Escapes text for an element's content.
pub(super) fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Byte offset of the `>` closing the first start tag.
pub(super) fn find_tag_end(s: &str) -> Option<usize> {
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

#[cfg(test)]
mod tests {
    use libvirt_wire::ErrorCode;

    use super::*;
    use crate::xml::{parse_domain, parse_pool, parse_volume};
    use rstest::rstest;

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
            (ErrorCode::XmlDetail, doc_domain(doc))
        } else {
            (ErrorCode::XmlError, ErrorDomain::Xml)
        };
        assert_eq!(
            (err.code, err.domain),
            (expected_code, expected_domain),
            "{xml:?}"
        );
    }

    fn doc_domain(doc: Document) -> ErrorDomain {
        match doc {
            Document::Domain => ErrorDomain::Domain,
            Document::Volume | Document::Pool => ErrorDomain::Storage,
        }
    }
}
