//! Object handles shared by many procedures: `Uuid`, `Domain`, `Network`,
//! `StoragePool`, `StorageVol`, and the `AuthType` enum.
//!
//! Servers rebuild objects from exactly these fields, so a client must send
//! back the handle it was given, unchanged.

use bytes::BytesMut;

use crate::error::WireError;
use crate::xdr::{Decode, Encode, Reader, encode_fixed_opaque};

/// A 16-byte libvirt UUID (`remote_uuid`, fixed opaque data on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[cfg_attr(test, derive(proptest_derive::Arbitrary))]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// Parses the usual 36-character hyphenated form (hyphens optional).
    pub fn parse(s: &str) -> Option<Uuid> {
        let hex: Vec<u8> = s.bytes().filter(|b| *b != b'-').collect();
        if hex.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, pair) in hex.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).ok()?;
            out[i] = u8::from_str_radix(text, 16).ok()?;
        }
        Some(Uuid(out))
    }
}

impl std::fmt::Display for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl Encode for Uuid {
    fn encode(&self, buf: &mut BytesMut) {
        encode_fixed_opaque(&self.0, buf);
    }
}

impl Decode for Uuid {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let mut out = [0u8; 16];
        out.copy_from_slice(r.read_fixed_opaque(16)?);
        Ok(Uuid(out))
    }
}

xdr_struct! {
    /// A domain handle (`remote_nonnull_domain`).
    pub struct Domain {
        /// The domain's name.
        pub name: String,
        /// The domain's UUID, which servers use to find it.
        pub uuid: Uuid,
        /// The running id, or -1 when the domain is inactive.
        pub id: i32,
    }
}

xdr_struct! {
    /// A network handle (`remote_nonnull_network`).
    pub struct Network {
        /// The network's name.
        pub name: String,
        /// The network's UUID.
        pub uuid: Uuid,
    }
}

xdr_struct! {
    /// A storage pool handle (`remote_nonnull_storage_pool`).
    pub struct StoragePool {
        /// The pool's name.
        pub name: String,
        /// The pool's UUID.
        pub uuid: Uuid,
    }
}

xdr_struct! {
    /// A storage volume handle (`remote_nonnull_storage_vol`).
    pub struct StorageVol {
        /// The name of the pool holding the volume.
        pub pool: String,
        /// The volume's name.
        pub name: String,
        /// The volume's key (the path, for file volumes).
        pub key: String,
    }
}

xdr_struct! {
    /// A host network interface handle (`remote_nonnull_interface`).
    pub struct Interface {
        /// The interface's name (`br0`).
        pub name: String,
        /// Its MAC address as text.
        pub mac: String,
    }
}

int_enum! {
    /// An authentication scheme offered by the server (`remote_auth_type`).
    pub enum AuthType: i32 {
        /// No authentication needed.
        None = 0 => "REMOTE_AUTH_NONE",
        /// SASL.
        Sasl = 1 => "REMOTE_AUTH_SASL",
        /// polkit.
        Polkit = 2 => "REMOTE_AUTH_POLKIT",
    }
}

/// A C string as rpcgen sends `char x<MAX>` (the security model and label
/// calls): a count, then each byte widened to four bytes, the terminating
/// NUL included in the count (libvirtd sends `strlen + 1`). Decoding takes
/// the bytes before the first NUL and refuses an array without one; bytes
/// map to the chars U+0000..U+00FF and back, so nothing is lost.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(test, derive(proptest_derive::Arbitrary))]
pub struct CharArray<const MAX: usize>(
    #[cfg_attr(test, proptest(regex = "[a-z0-9_]{0,12}"))] pub String,
);

impl<const MAX: usize> Encode for CharArray<MAX> {
    fn encode(&self, buf: &mut BytesMut) {
        let bytes = c_bytes(&self.0, MAX.saturating_sub(1));
        bytes::BufMut::put_u32(buf, (bytes.len() + 1) as u32);
        for b in bytes {
            (b as i8).encode(buf);
        }
        0i8.encode(buf);
    }
}

impl<const MAX: usize> Decode for CharArray<MAX> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let chars: Vec<i8> = crate::xdr::decode_array(r, MAX)?;
        Ok(CharArray(c_string(&chars)?))
    }
}

/// A C string as rpcgen sends `char x[N]` (`NODE_GET_INFO`'s CPU model):
/// exactly `N` bytes, each widened to four bytes, NUL-padded, the last one
/// always NUL (libvirt's `virStrcpy`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(test, derive(proptest_derive::Arbitrary))]
pub struct FixedChars<const N: usize>(
    #[cfg_attr(test, proptest(regex = "[a-z0-9_]{0,12}"))] pub String,
);

impl<const N: usize> Encode for FixedChars<N> {
    fn encode(&self, buf: &mut BytesMut) {
        let bytes = c_bytes(&self.0, N.saturating_sub(1));
        for i in 0..N {
            (bytes.get(i).copied().unwrap_or(0) as i8).encode(buf);
        }
    }
}

impl<const N: usize> Decode for FixedChars<N> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let chars = (0..N)
            .map(|_| i8::decode(r))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FixedChars(c_string(&chars)?))
    }
}

/// The bytes of a C string: each char as its byte (chars past U+00FF as
/// `?`), at most `max`, stopping at a NUL.
fn c_bytes(s: &str, max: usize) -> Vec<u8> {
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
        .take_while(|&b| b != 0)
        .take(max)
        .collect()
}

/// The chars before the first NUL; an array without one is malformed.
fn c_string(chars: &[i8]) -> Result<String, WireError> {
    let end = chars
        .iter()
        .position(|&c| c == 0)
        .ok_or(WireError::UnterminatedCString)?;
    Ok(chars[..end].iter().map(|&c| char::from(c as u8)).collect())
}
