//! Size limits of the protocol, as libvirt declares them.
//!
//! The decoder enforces every one of them before allocating.

/// Bytes in the length word that starts every packet.
pub const LEN_WORD: usize = 4;

/// Bytes in the fixed packet header that follows the length word.
pub const HEADER_LEN: usize = 24;

/// Smallest legal value of the length word: the length word plus the header.
pub const PACKET_MIN: usize = LEN_WORD + HEADER_LEN;

/// Largest header plus payload, excluding the length word (libvirt's
/// `VIR_NET_MESSAGE_MAX`, 32 MiB on current daemons).
pub const MESSAGE_MAX: usize = 32 * 1024 * 1024;

/// Largest payload after the header (`VIR_NET_MESSAGE_PAYLOAD_MAX`).
pub const PAYLOAD_MAX: usize = MESSAGE_MAX - HEADER_LEN;

/// Payload size every libvirt release accepts (`VIR_NET_MESSAGE_LEGACY_PAYLOAD_MAX`);
/// libvirt's own clients send stream data in chunks of this size.
pub const LEGACY_PAYLOAD_MAX: usize = 262_120;

/// Longest string (`REMOTE_STRING_MAX`).
pub const STRING_MAX: usize = 4 * 1024 * 1024;

/// Most entries in an `AUTH_LIST` reply.
pub const AUTH_TYPE_LIST_MAX: usize = 20;

/// Most domains in a `CONNECT_LIST_ALL_DOMAINS` reply.
pub const DOMAIN_LIST_MAX: usize = 16_384;

/// Most pools in a `CONNECT_LIST_ALL_STORAGE_POOLS` reply.
pub const STORAGE_POOL_LIST_MAX: usize = 16_384;

/// Most volumes in a `STORAGE_POOL_LIST_ALL_VOLUMES` reply.
pub const STORAGE_VOL_LIST_MAX: usize = 16_384;

/// Most interfaces in a `DOMAIN_INTERFACE_ADDRESSES` reply.
pub const DOMAIN_INTERFACE_MAX: usize = 2048;

/// Most addresses per interface in a `DOMAIN_INTERFACE_ADDRESSES` reply.
pub const DOMAIN_IP_ADDR_MAX: usize = 2048;
/// `REMOTE_SECURITY_MODEL_MAX` (`VIR_SECURITY_MODEL_BUFLEN`, 256 + 1).
pub const SECURITY_MODEL_MAX: usize = 257;
/// `REMOTE_SECURITY_DOI_MAX` (`VIR_SECURITY_DOI_BUFLEN`, 256 + 1).
pub const SECURITY_DOI_MAX: usize = 257;
/// `REMOTE_SECURITY_LABEL_MAX` (`VIR_SECURITY_LABEL_BUFLEN`, 4096 + 1).
pub const SECURITY_LABEL_MAX: usize = 4097;
/// `REMOTE_DOMAIN_MESSAGES_MAX`.
pub const DOMAIN_MESSAGES_MAX: usize = 2048;
