//! What a volume holds, and the running state of one upload into it (small
//! uploads keep their bytes, large ones only their size and SHA-256, so a test
//! uploading a gigabyte does not hold a gigabyte).

use sha2::{Digest, Sha256};

use crate::error::VirError;

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
}

impl std::fmt::Debug for VolumeContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VolumeContent::Empty => f.write_str("Empty"),
            VolumeContent::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            VolumeContent::Digest { size, sha256 } => {
                write!(f, "Digest {{ size: {size}, sha256: {} }}", hex(sha256))
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
        }
    }

    /// SHA-256 of the uploaded bytes, as lower-case hex.
    pub fn sha256_hex(&self) -> String {
        match self {
            VolumeContent::Empty => hex(&Sha256::digest([])),
            VolumeContent::Bytes(b) => hex(&Sha256::digest(b)),
            VolumeContent::Digest { sha256, .. } => hex(sha256),
        }
    }

    /// The bytes, when the upload was small enough to keep them.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            VolumeContent::Empty => Some(&[]),
            VolumeContent::Bytes(b) => Some(b),
            VolumeContent::Digest { .. } => None,
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
    hasher: Sha256,
    /// Content the volume had before, for writes at an offset.
    base: VolumeContent,
}

impl UploadSession {
    pub(crate) fn new(offset: u64, length: u64, keep_limit: u64, base: VolumeContent) -> Self {
        UploadSession {
            offset,
            limit: (length != 0).then_some(length),
            written: 0,
            keep_limit,
            kept: Some(Vec::new()),
            hasher: Sha256::new(),
            base,
        }
    }

    /// Takes one data packet. A packet that would go past the declared
    /// length is not written at all and fails with `ENOSPC` (what libvirtd
    /// 11.x does before it is lost; see `FakeLibvirt::is_wedged`).
    pub(crate) fn write(&mut self, data: &[u8]) -> Result<(), VirError> {
        if let Some(limit) = self.limit
            && self.written + data.len() as u64 > limit
        {
            return Err(VirError::stream_no_space());
        }
        self.append(data);
        Ok(())
    }

    fn append(&mut self, data: &[u8]) {
        let total = self.written + data.len() as u64;
        self.hasher.update(data);
        if let Some(kept) = self.kept.as_mut() {
            if self.offset + total <= self.keep_limit {
                kept.extend_from_slice(data);
            } else {
                self.kept = None;
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

    /// What the volume holds once the stream ends (finished or aborted).
    pub(crate) fn content(&self) -> VolumeContent {
        match &self.kept {
            Some(kept) => {
                let mut bytes = self.base.bytes().map(<[u8]>::to_vec).unwrap_or_default();
                let start = usize::try_from(self.offset).unwrap_or(usize::MAX);
                if bytes.len() < start + kept.len() {
                    bytes.resize(start + kept.len(), 0);
                }
                bytes[start..start + kept.len()].copy_from_slice(kept);
                VolumeContent::Bytes(bytes)
            }
            None => VolumeContent::Digest {
                size: self.end(),
                sha256: self.hasher.clone().finalize().into(),
            },
        }
    }
}
