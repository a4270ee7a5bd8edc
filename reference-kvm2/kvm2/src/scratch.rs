//! A testbed's scratch directory (its SSH key, known_hosts, the fake's files),
//! private to its owner and removed with the testbed.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A directory under the system's temporary directory, named after the
/// process and a counter, mode 0700, removed (with what it holds) on drop.
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates `<tmp>/<prefix>-<pid>-<n>`.
    pub(crate) fn new(prefix: &str) -> io::Result<ScratchDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(ScratchDir(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_distinct_and_removed_on_drop() {
        let a = ScratchDir::new("kvm2-scratch-test").unwrap();
        let b = ScratchDir::new("kvm2-scratch-test").unwrap();
        assert_ne!(a.path(), b.path());
        std::fs::write(a.path().join("key"), b"secret").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{:o}", mode);
        }
        let path = a.path().to_owned();
        drop(a);
        assert!(!path.exists(), "{} is left behind", path.display());
    }
}
