//! Every crate with fuzz targets keeps a seed corpus per target under
//! `fuzz/seeds/<target>/` and replays it in its unit tests, so that an input
//! that once found a bug keeps being checked by `cargo test`, without a
//! fuzzer. [`replay`] is that replay, written once for all of them.

#![deny(missing_docs)]

use std::path::Path;

/// Runs every file of `<crate_dir>/fuzz/seeds/<target>` through `f` (pass
/// `env!("CARGO_MANIFEST_DIR")` as `crate_dir`). A corpus that is missing or
/// empty fails, so the replay cannot pass without having run anything.
/// Returns how many inputs it ran.
pub fn replay(crate_dir: &str, target: &str, f: fn(&[u8])) -> usize {
    let dir = Path::new(crate_dir).join("fuzz/seeds").join(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus {}: {e}", dir.display()));
    let mut n = 0;
    for entry in entries {
        let path = entry.expect("corpus entry").path();
        let data =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        f(&data);
        n += 1;
    }
    assert!(n > 0, "the corpus {} is empty", dir.display());
    n
}

#[cfg(test)]
mod tests {
    use super::replay;

    fn non_empty(data: &[u8]) {
        assert!(!data.is_empty());
    }

    #[test]
    fn runs_every_seed_of_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = dir.path().join("fuzz/seeds/t");
        std::fs::create_dir_all(&seeds).unwrap();
        std::fs::write(seeds.join("a"), b"1").unwrap();
        std::fs::write(seeds.join("b"), b"22").unwrap();
        assert_eq!(replay(dir.path().to_str().unwrap(), "t", non_empty), 2);
    }

    #[test]
    #[should_panic(expected = "is empty")]
    fn an_empty_corpus_fails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("fuzz/seeds/t")).unwrap();
        replay(dir.path().to_str().unwrap(), "t", non_empty);
    }

    #[test]
    #[should_panic(expected = "cannot read the corpus")]
    fn a_missing_corpus_fails() {
        let dir = tempfile::tempdir().unwrap();
        replay(dir.path().to_str().unwrap(), "t", non_empty);
    }

    #[test]
    #[should_panic(expected = "rejected")]
    fn a_seed_the_target_rejects_fails() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = dir.path().join("fuzz/seeds/t");
        std::fs::create_dir_all(&seeds).unwrap();
        std::fs::write(seeds.join("a"), b"").unwrap();
        replay(dir.path().to_str().unwrap(), "t", |d| {
            assert!(!d.is_empty(), "rejected");
        });
    }
}
