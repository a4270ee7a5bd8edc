//! What a volume holds, and the running state of one upload into it (small
//! uploads keep their bytes; large ones go to a file of the spill directory
//! when the fake has one, and keep only their size and SHA-256 otherwise,
//! so a test uploading a gigabyte does not hold a gigabyte; `large.rs`).

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use libvirt_wire::ErrorDomain;

use crate::error::VirError;
use crate::large::{Landed, LargeUpload, SpillFile};

/// The contents of a volume as far as uploads wrote them.
#[derive(Clone, PartialEq, Eq)]
pub enum VolumeContent {
    /// Nothing was uploaded.
    Empty,
    /// The uploaded bytes (small uploads).
    Bytes(Vec<u8>),
    /// Only the size and SHA-256 of the uploaded bytes (large uploads).
    Digest {
        /// Number of bytes uploaded.
        size: u64,
        /// SHA-256 of the uploaded bytes.
        sha256: [u8; 32],
    },
    /// The uploaded bytes in a file of the spill directory (large uploads
    /// to a fake with one, as the daemon has).
    Spilled(Arc<SpillFile>),
}

impl std::fmt::Debug for VolumeContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VolumeContent::Empty => f.write_str("Empty"),
            VolumeContent::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            VolumeContent::Digest { size, sha256 } => {
                write!(f, "Digest {{ size: {size}, sha256: {} }}", hex(sha256))
            }
            VolumeContent::Spilled(file) => {
                write!(
                    f,
                    "Spilled({} bytes in {})",
                    file.size(),
                    file.path().display()
                )
            }
        }
    }
}

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl VolumeContent {
    /// Number of bytes the uploads wrote.
    pub fn size(&self) -> u64 {
        match self {
            VolumeContent::Empty => 0,
            VolumeContent::Bytes(b) => b.len() as u64,
            VolumeContent::Digest { size, .. } => *size,
            VolumeContent::Spilled(file) => file.size(),
        }
    }

    /// SHA-256 of the uploaded bytes, as lower-case hex (a spilled
    /// upload's file is read and hashed on the first call).
    ///
    /// # Panics
    ///
    /// When a spilled upload's file can no longer be read (it was removed
    /// or damaged behind the fake's back).
    pub fn sha256_hex(&self) -> String {
        match self {
            VolumeContent::Empty => hex(&Sha256::digest([])),
            VolumeContent::Bytes(b) => hex(&Sha256::digest(b)),
            VolumeContent::Digest { sha256, .. } => hex(sha256),
            VolumeContent::Spilled(file) => match file.sha256() {
                Ok(d) => hex(&d),
                Err(e) => panic!(
                    "the spilled upload {} is unreadable: {e}",
                    file.path().display()
                ),
            },
        }
    }

    /// The bytes, when the upload was small enough to keep them.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            VolumeContent::Empty => Some(&[]),
            VolumeContent::Bytes(b) => Some(b),
            VolumeContent::Digest { .. } | VolumeContent::Spilled(_) => None,
        }
    }
}

/// The running state of one upload stream.
#[derive(Debug)]
pub(crate) struct UploadSession {
    offset: u64,
    limit: Option<u64>,
    written: u64,
    keep_limit: u64,
    /// The bytes so far, while they fit under `keep_limit`.
    kept: Option<Vec<u8>>,
    /// Where the bytes go once they are not kept.
    large: Option<LargeUpload>,
    /// Where a large upload written from its first byte is spilled.
    spill_dir: Option<PathBuf>,
    /// Content the volume had before, for writes at an offset.
    base: VolumeContent,
}

impl UploadSession {
    /// A session writing from `offset`, at most `length` bytes (0: no
    /// limit), over what the volume held. Large uploads written from the
    /// volume's first byte go to `spill_dir` when there is one (one written
    /// at an offset keeps its digest, as it would without one).
    pub(crate) fn new(
        offset: u64,
        length: u64,
        keep_limit: u64,
        base: VolumeContent,
        spill_dir: Option<PathBuf>,
    ) -> Self {
        let spill_dir = spill_dir.filter(|_| offset == 0);
        // An upload declared larger than what is kept goes to its worker
        // from the start rather than kept until it outgrows the limit.
        let too_big = length != 0 && offset.saturating_add(length) > keep_limit;
        UploadSession {
            offset,
            limit: (length != 0).then_some(length),
            written: 0,
            keep_limit,
            kept: (!too_big).then(Vec::new),
            large: too_big.then(|| LargeUpload::start(spill_dir.as_deref(), length)),
            spill_dir,
            base,
        }
    }

    /// Takes one data packet. A packet that would go past the declared
    /// length is not written at all and fails with `ENOSPC` (what libvirtd
    /// 11.x does before it is lost; see `FakeLibvirt::is_wedged`).
    pub(crate) fn write(&mut self, data: Bytes) -> Result<(), VirError> {
        if let Some(limit) = self.limit
            && self.written + data.len() as u64 > limit
        {
            return Err(VirError::stream_no_space());
        }
        self.append(data);
        Ok(())
    }

    fn append(&mut self, data: Bytes) {
        let total = self.written + data.len() as u64;
        match self.kept.as_mut() {
            Some(kept) if self.offset + total <= self.keep_limit => kept.extend_from_slice(&data),
            _ => {
                let spill_dir = self.spill_dir.as_deref();
                let limit = self.limit.unwrap_or(0);
                let large = self
                    .large
                    .get_or_insert_with(|| LargeUpload::start(spill_dir, limit));
                if let Some(kept) = self.kept.take() {
                    large.take(Bytes::from(kept));
                }
                large.take(data);
            }
        }
        self.written = total;
    }

    /// The first byte the stream writes.
    pub(crate) fn start(&self) -> u64 {
        self.offset
    }

    /// The highest byte written so far (offset + bytes).
    pub(crate) fn end(&self) -> u64 {
        self.offset + self.written
    }

    /// What the volume holds once the stream ends (finished or aborted);
    /// fails when a large upload's bytes could not be written.
    pub(crate) fn content(&mut self) -> Result<VolumeContent, VirError> {
        if let Some(kept) = &self.kept {
            let mut bytes = self.base.bytes().map(<[u8]>::to_vec).unwrap_or_default();
            let start = usize::try_from(self.offset).unwrap_or(usize::MAX);
            if bytes.len() < start + kept.len() {
                bytes.resize(start + kept.len(), 0);
            }
            bytes[start..start + kept.len()].copy_from_slice(kept);
            return Ok(VolumeContent::Bytes(bytes));
        }
        let large = self
            .large
            .take()
            .unwrap_or_else(|| LargeUpload::Inline(Sha256::new()));
        match large.finish() {
            Ok(Landed::Digest(sha256)) => Ok(VolumeContent::Digest {
                size: self.end(),
                sha256,
            }),
            Ok(Landed::Spilled(file)) => Ok(VolumeContent::Spilled(Arc::new(file))),
            Err(e) => Err(VirError::system(
                ErrorDomain::Streams,
                "cannot write to stream",
                &e.to_string(),
            )),
        }
    }
}
