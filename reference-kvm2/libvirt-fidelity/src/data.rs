//! Deterministic test bytes: a xorshift stream, so an upload's contents can
//! be regenerated (and hashed) on the checking side without keeping them.

use sha2::{Digest, Sha256};

/// A repeatable pseudo-random byte source.
#[derive(Debug, Clone)]
pub struct Pattern {
    state: u64,
}

impl Pattern {
    /// A source for `seed` (any value).
    pub fn new(seed: u64) -> Self {
        Pattern {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    /// Fills `buf` with the next bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let mut x = self.state;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.state = x;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
    }
}

/// `len` bytes of the pattern for `seed`.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    Pattern::new(seed).fill(&mut v);
    v
}

/// SHA-256 (hex) of `len` bytes of the pattern for `seed`, generated in
/// chunks of `chunk` bytes (the same chunking as an upload, so that the
/// pattern continues across chunk boundaries identically).
pub fn pattern_sha256(len: u64, seed: u64, chunk: usize) -> String {
    let mut p = Pattern::new(seed);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; chunk];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk as u64) as usize;
        p.fill(&mut buf[..n]);
        h.update(&buf[..n]);
        left -= n as u64;
    }
    crate::backend::hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeatable_and_seed_dependent() {
        assert_eq!(pattern(100, 1), pattern(100, 1));
        assert_ne!(pattern(100, 1), pattern(100, 2));
        assert_eq!(
            pattern_sha256(1000, 3, 64),
            crate::backend::hex(&Sha256::digest(pattern(1000, 3)))
        );
    }
}
