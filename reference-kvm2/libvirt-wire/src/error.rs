//! `WireError`: why bytes could not be decoded or a packet could not be framed.

/// A violation of the wire format.
///
/// Every variant is a protocol violation: a connection that sees one should
/// be dropped, since the byte stream can no longer be trusted to be in sync.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The input ended inside a value.
    #[error("truncated input: needed {needed} bytes, {available} available")]
    Truncated {
        /// Bytes the value needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A complete value was followed by unread bytes.
    #[error("{0} trailing bytes after the payload")]
    TrailingBytes(usize),
    /// The packet length word is below the 28-byte minimum.
    #[error("packet length {0} is below the minimum of 28")]
    PacketTooSmall(u32),
    /// The packet is larger than the protocol allows.
    #[error("packet of {len} bytes exceeds the maximum of {max}")]
    PacketTooLarge {
        /// Header plus payload, excluding the length word.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A string or opaque field is longer than its declared maximum.
    #[error("string of {len} bytes exceeds the maximum of {max}")]
    StringTooLong {
        /// Declared length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// An array count is above its declared maximum.
    #[error("array of {count} elements exceeds the maximum of {max}")]
    ArrayTooLong {
        /// Declared count.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A union discriminant has no arm.
    #[error("invalid discriminant {0}")]
    InvalidDiscriminant(u32),
    /// A call names a procedure this crate has no argument type for.
    #[error("unknown procedure {0}")]
    UnknownProcedure(i32),
    /// A C string (`char x<N>` or `char x[N]`) has no terminating NUL.
    #[error("C string without its terminating NUL")]
    UnterminatedCString,
}
