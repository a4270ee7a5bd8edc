//! Reading and writing the XML documents the fake handles, one file per job:
//! the shared document layer (`doc`), domain definitions (`domain`), metadata
//! elements (`metadata`) and storage pool and volume definitions (`storage`).

mod doc;
mod domain;
mod metadata;
mod storage;

pub(crate) use domain::{ParsedDomain, Rendered, parse_domain, render_domain};
pub(crate) use metadata::{canonical_metadata, format_metadata};
pub(crate) use storage::{ParsedPool, RenderedPool, parse_pool, parse_volume, render_pool};
