//! Storage definitions: volume documents, directory pool documents, the
//! pool XML libvirt formats, and pool target paths as libvirt keeps them.

use libvirt_wire::{ErrorCode, ErrorDomain};
use uuid::Uuid;

use crate::error::VirError;

use super::doc::{Document, Node, attr, escape_text, scaled, walk};

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
            ErrorCode::XmlError,
            ErrorDomain::Storage,
            "missing volume name element",
        ));
    }
    if vol.capacity.is_none() && vol.backing_path.is_none() {
        return Err(VirError::new(
            ErrorCode::XmlError,
            ErrorDomain::Storage,
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
    let storage =
        |code: ErrorCode, detail: String| VirError::new(code, ErrorDomain::Storage, detail);
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
    let name = name.filter(|n| !n.is_empty()).ok_or_else(|| {
        storage(
            ErrorCode::XmlError,
            "missing pool source name element".to_owned(),
        )
    })?;
    if name.contains('/') {
        return Err(storage(
            ErrorCode::XmlError,
            format!("name {name} cannot contain '/'"),
        ));
    }
    let uuid = match uuid {
        None => None,
        Some(u) => Some(
            Uuid::parse_str(&u)
                .map_err(|_| storage(ErrorCode::XmlError, "malformed uuid element".to_owned()))?,
        ),
    };
    let target = target.filter(|t| !t.is_empty()).ok_or_else(|| {
        storage(
            ErrorCode::XmlError,
            "missing storage pool target path".to_owned(),
        )
    })?;
    if number != 0 {
        return Err(storage(
            ErrorCode::InternalError,
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
        assert_eq!(e.code, ErrorCode::XmlDetail);
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
        assert_eq!(e.code, ErrorCode::XmlError);
    }
}
