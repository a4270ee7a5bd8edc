//! Where the bytes of a large upload go (one too large to keep in memory): a
//! thread of its own takes them a few chunks behind the socket and either
//! writes them to a file in the fake's spill directory (the daemon has one)
//! or hashes them with SHA-256 (in process, where nothing gives a file a
//! home).
//!
//! Why a thread: SHA-256 was about 70 % of the daemon's CPU time on a large
//! upload (measured with `perf`), and on the connection's thread reading
//! the socket and hashing took turns. Why a file in the daemon: hashing every
//! byte bounds an upload at one core's SHA-256 rate (about 1 580 MiB/s here,
//! below what libvirtd reaches writing its file), while libvirtd itself only
//! writes the bytes to a file. A spilled upload is hashed when someone first
//! asks for its digest.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use bytes::Bytes;
use sha2::{Digest, Sha256};

/// Chunks queued for the thread; a writer finding the queue full waits for
/// it, as it would have waited doing the work itself.
const QUEUE: usize = 8;

/// The bytes of one upload in a file of the spill directory. The file is
/// removed when the last content naming it goes (the volume is deleted or
/// written anew, or the fake is dropped).
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    size: u64,
    sha256: OnceLock<[u8; 32]>,
}

impl SpillFile {
    /// The file holding the bytes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of bytes in the file.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// SHA-256 of the bytes, read and hashed on the first call.
    pub fn sha256(&self) -> io::Result<[u8; 32]> {
        if let Some(d) = self.sha256.get() {
            return Ok(*d);
        }
        let mut file = File::open(&self.path)?.take(self.size);
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match file.read(&mut buf)? {
                0 => break,
                n => hasher.update(&buf[..n]),
            }
        }
        Ok(*self.sha256.get_or_init(|| hasher.finalize().into()))
    }
}

impl PartialEq for SpillFile {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for SpillFile {}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What a large upload's bytes became.
#[derive(Debug)]
pub(crate) enum Landed {
    Digest([u8; 32]),
    Spilled(SpillFile),
}

/// The worker of one large upload.
#[derive(Debug)]
pub(crate) enum LargeUpload {
    /// Hashed on the writer's thread (no thread could be started).
    Inline(Sha256),
    /// Taken by a thread of its own through a bounded queue.
    Thread {
        /// `None` once the thread stopped taking chunks (a write failed).
        queue: Option<SyncSender<Bytes>>,
        thread: JoinHandle<io::Result<Landed>>,
    },
}

/// A name no other spill file of this process has.
fn spill_path(dir: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    dir.join(format!(
        "upload-{}.raw",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

fn spill(path: PathBuf, length: u64, chunks: impl Iterator<Item = Bytes>) -> io::Result<Landed> {
    let mut file = File::create(&path)?;
    // Owned from here on: a failed write leaves no file behind.
    let mut spilled = SpillFile {
        path,
        size: 0,
        sha256: OnceLock::new(),
    };
    if length > 0 {
        // The declared length allocated at once, as libvirtd's volume file
        // is at creation: writes then fill blocks the file system already
        // gave (one in eight off the upload's time, measured). Only a hint:
        // a file system without it, or without the room, is left to the
        // writes, which report what goes wrong.
        // The file keeps its size: an upload that ends early is no longer
        // than what it wrote.
        let _ = rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::KEEP_SIZE, 0, length);
    }
    for chunk in chunks {
        file.write_all(&chunk)?;
        spilled.size += chunk.len() as u64;
    }
    Ok(Landed::Spilled(spilled))
}

fn hash(chunks: impl Iterator<Item = Bytes>) -> Landed {
    let mut hasher = Sha256::new();
    for chunk in chunks {
        hasher.update(&chunk);
    }
    Landed::Digest(hasher.finalize().into())
}

impl LargeUpload {
    /// Starts the worker: spilling into `spill_dir` when there is one,
    /// hashing otherwise.
    pub(crate) fn start(spill_dir: Option<&Path>, length: u64) -> LargeUpload {
        let (queue, chunks) = sync_channel::<Bytes>(QUEUE);
        let target = spill_dir.map(spill_path);
        let spawned = std::thread::Builder::new()
            .name("upload-sink".into())
            .spawn(move || match target {
                Some(path) => spill(path, length, chunks.into_iter()),
                None => Ok(hash(chunks.into_iter())),
            });
        match spawned {
            Ok(thread) => LargeUpload::Thread {
                queue: Some(queue),
                thread,
            },
            Err(_) => LargeUpload::Inline(Sha256::new()),
        }
    }

    /// Takes the next chunk (waiting while the queue is full).
    pub(crate) fn take(&mut self, chunk: Bytes) {
        match self {
            LargeUpload::Inline(h) => h.update(&chunk),
            LargeUpload::Thread { queue, .. } => {
                if let Some(q) = queue
                    && q.send(chunk).is_err()
                {
                    // The thread stopped on an error, which `finish` reports.
                    *queue = None;
                }
            }
        }
    }

    /// Waits for the last chunk to land.
    pub(crate) fn finish(self) -> io::Result<Landed> {
        match self {
            LargeUpload::Inline(h) => Ok(Landed::Digest(h.finalize().into())),
            LargeUpload::Thread { queue, thread } => {
                drop(queue);
                thread
                    .join()
                    .map_err(|_| io::Error::other("the upload's worker thread panicked"))?
            }
        }
    }
}
