//! Metadata elements moved in and out of their namespace the way libvirt's
//! `virXMLInjectNamespace` and `virXMLExtractNamespaceXML` do, and shown as
//! libxml2 formats them.

use libvirt_wire::ErrorDomain;
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::error::VirError;

use super::doc::{is_ncname, rebuild, rewrite};

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

/// Puts every element of `xml` that has no namespace yet into `uri` with
/// prefix `key` and declares it on the root: how `virDomainSetMetadata`
/// stores an element and how `virDomainGetXMLDesc` shows it.
pub(crate) fn inject_namespace(xml: &str, key: &str, uri: &str) -> Result<String, VirError> {
    if !is_ncname(key) {
        return Err(VirError::invalid_arg(
            ErrorDomain::Xml,
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
pub(super) fn declare_default_namespace(xml: &str, uri: &str) -> Result<String, VirError> {
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

#[cfg(test)]
mod tests {
    use libvirt_wire::ErrorCode;

    use super::*;
    use rstest::rstest;

    const NS: &str = "https://example.org/ns";

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
            assert_eq!(e.code, ErrorCode::XmlError, "{bad}");
        }
        let e = inject_namespace("<a/>", "no:colon", NS).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArg);
    }
}
