//! XDR primitives: the `Encode`/`Decode` traits, the bounded slice `Reader`,
//! and the impls for integers, strings, optionals, fixed opaque data and arrays.
//!
//! Every length read from the wire is checked against its declared maximum and
//! against the bytes actually left before anything is allocated, so a hostile
//! peer cannot make the decoder reserve memory it did not send.

use bytes::{BufMut, BytesMut};

use crate::error::WireError;
use crate::limits::STRING_MAX;

/// A value that can be written in XDR form.
///
/// Encoding never fails; size limits are enforced when a whole packet is
/// framed (see [`crate::encode_packet`]).
pub trait Encode {
    /// Appends the XDR form of `self` to `buf`.
    fn encode(&self, buf: &mut BytesMut);
}

/// A value that can be read from XDR form.
pub trait Decode: Sized {
    /// Reads one value from the reader, advancing it.
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError>;
}

/// Decodes a complete XDR body, rejecting trailing bytes.
pub fn decode_exact<T: Decode>(payload: &[u8]) -> Result<T, WireError> {
    let mut r = Reader::new(payload);
    let value = T::decode(&mut r)?;
    r.finish()?;
    Ok(value)
}

/// Encodes a value into a fresh buffer (convenience for tests and tools).
pub fn encode_to_vec<T: Encode + ?Sized>(value: &T) -> Vec<u8> {
    let mut buf = BytesMut::new();
    value.encode(&mut buf);
    buf.to_vec()
}

/// A cursor over a byte slice that XDR values are decoded from.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn pad_len(n: usize) -> usize {
    (4 - n % 4) % 4
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Fails with [`WireError::TrailingBytes`] unless every byte was consumed.
    pub fn finish(&self) -> Result<(), WireError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(WireError::TrailingBytes(n)),
        }
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated {
                needed: n,
                available: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Reads a big-endian `u32`.
    pub fn read_u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a big-endian `i32`.
    pub fn read_i32(&mut self) -> Result<i32, WireError> {
        Ok(self.read_u32()? as i32)
    }

    /// Reads a big-endian `u64` (XDR `unsigned hyper`).
    pub fn read_u64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    /// Reads fixed-length opaque data of `n` bytes plus its padding.
    pub fn read_fixed_opaque(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let data = self.take(n)?;
        self.take(pad_len(n))?;
        Ok(data)
    }

    /// Reads variable-length opaque data of at most `max` bytes plus its padding.
    pub fn read_var_opaque(&mut self, max: usize) -> Result<&'a [u8], WireError> {
        let len = self.read_u32()? as usize;
        if len > max {
            return Err(WireError::StringTooLong { len, max });
        }
        self.read_fixed_opaque(len)
    }

    /// Reads an array count and checks it against `max` and the bytes left,
    /// assuming every element takes at least `min_elem` bytes on the wire.
    pub fn read_count(&mut self, max: usize, min_elem: usize) -> Result<usize, WireError> {
        let count = self.read_u32()? as usize;
        if count > max {
            return Err(WireError::ArrayTooLong { count, max });
        }
        let needed = count.saturating_mul(min_elem.max(1));
        if needed > self.remaining() {
            return Err(WireError::Truncated {
                needed,
                available: self.remaining(),
            });
        }
        Ok(count)
    }
}

/// Encodes variable-length opaque data (length, bytes, padding).
pub fn encode_var_opaque(data: &[u8], buf: &mut BytesMut) {
    buf.put_u32(data.len() as u32);
    encode_fixed_opaque(data, buf);
}

/// Encodes fixed-length opaque data (bytes, padding).
pub fn encode_fixed_opaque(data: &[u8], buf: &mut BytesMut) {
    buf.put_slice(data);
    buf.put_bytes(0, pad_len(data.len()));
}

/// Decodes a variable-length array of at most `max` elements.
///
/// The count is validated before any allocation, and the capacity reserved is
/// never more than the remaining input could hold (every XDR item is at least
/// four bytes).
pub fn decode_array<T: Decode>(r: &mut Reader<'_>, max: usize) -> Result<Vec<T>, WireError> {
    let count = r.read_count(max, 4)?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(T::decode(r)?);
    }
    Ok(out)
}

impl Encode for () {
    fn encode(&self, _buf: &mut BytesMut) {}
}

impl Decode for () {
    fn decode(_r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(())
    }
}

impl Encode for u32 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u32(*self);
    }
}

impl Decode for u32 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        r.read_u32()
    }
}

impl Encode for i32 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(*self);
    }
}

impl Decode for i32 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        r.read_i32()
    }
}

impl Encode for u64 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u64(*self);
    }
}

impl Decode for u64 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        r.read_u64()
    }
}

impl Encode for i64 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i64(*self);
    }
}

impl Decode for i64 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(r.read_u64()? as i64)
    }
}

// rpcgen widens `unsigned char`, `char` and `unsigned short` to four bytes.
// Like the C decoder, the narrower value is obtained by truncation.

impl Encode for u8 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u32(u32::from(*self));
    }
}

impl Decode for u8 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(r.read_u32()? as u8)
    }
}

impl Encode for i8 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(i32::from(*self));
    }
}

impl Decode for i8 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(r.read_i32()? as i8)
    }
}

impl Encode for u16 {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u32(u32::from(*self));
    }
}

impl Decode for u16 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(r.read_u32()? as u16)
    }
}

impl Encode for bool {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u32(u32::from(*self));
    }
}

impl Decode for bool {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        // Like the C library, any non-zero value reads as true.
        Ok(r.read_u32()? != 0)
    }
}

impl Encode for str {
    fn encode(&self, buf: &mut BytesMut) {
        encode_var_opaque(self.as_bytes(), buf);
    }
}

impl Encode for String {
    fn encode(&self, buf: &mut BytesMut) {
        self.as_str().encode(buf);
    }
}

/// Strings are decoded with libvirt's 4 MiB limit (`REMOTE_STRING_MAX`).
///
/// libvirt strings are byte strings; bytes that are not valid UTF-8 are
/// replaced rather than failing the whole message.
impl Decode for String {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let bytes = r.read_var_opaque(STRING_MAX)?;
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// An XDR optional (`T *`): a 0/1 discriminant, then the value when present.
impl<T: Encode> Encode for Option<T> {
    fn encode(&self, buf: &mut BytesMut) {
        match self {
            None => buf.put_u32(0),
            Some(v) => {
                buf.put_u32(1);
                v.encode(buf);
            }
        }
    }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        // The C decoder treats any non-zero discriminant as "present"; some
        // clients rely on that (they send the flag in little-endian order).
        match r.read_u32()? {
            0 => Ok(None),
            _ => Ok(Some(T::decode(r)?)),
        }
    }
}

/// Variable arrays encode as a count followed by the elements. Decoding needs
/// the declared maximum, so it goes through [`decode_array`] instead.
impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u32(self.len() as u32);
        for item in self {
            item.encode(buf);
        }
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, buf: &mut BytesMut) {
        (**self).encode(buf);
    }
}
