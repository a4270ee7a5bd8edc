//! An async client for libvirt's remote protocol, in the shape of
//! tokio-postgres: a cheap, clonable [`Client`] handle plus a [`Connection`]
//! future that owns the byte stream and that the caller spawns.
//!
//! Its neighbours: `libvirt-wire` below it encodes and decodes packets (this
//! crate adds only tokio and routing); `libvirt-ssh` supplies the byte stream
//! (an SSH channel to libvirtd's socket), and any `AsyncRead + AsyncWrite`
//! works as well, such as a Unix socket or `tokio::io::duplex`; the kvm2
//! provider sits above it.
//!
//! ```no_run
//! # async fn demo(stream: tokio::net::UnixStream) -> Result<(), libvirt_rpc::Error> {
//! let (client, connection) = libvirt_rpc::Config::default().attach(stream);
//! tokio::spawn(connection);
//! client.open("qemu:///system").await?;
//! let dom = client.domain_lookup_by_name("vm-1").await?;
//! let (state, _reason) = client.domain_get_state(&dom).await?;
//! # let _ = state;
//! # Ok(())
//! # }
//! ```
//!
//! # Cancel safety
//!
//! Every call is cancel safe and carries its own deadline (the handle's
//! [`Client::timeout`], or [`Client::call_until`]):
//!
//! * nothing is sent before a call's future is first polled;
//! * a call whose future is dropped, or whose deadline passes, returns (or
//!   vanishes) at once; the connection reads its late reply and discards it;
//! * the connection is closed only when it is itself dead: keepalive PINGs
//!   unanswered, an I/O error, or a protocol violation. One timed-out call
//!   never cuts the other calls in flight;
//! * a reply that answers no call in flight and none of the recently
//!   abandoned ones (an unsent serial, a second reply) is a protocol
//!   violation: the calls in flight fail at once and the connection closes;
//! * an [`Upload`] dropped before it finished sends an abort.

#![deny(missing_docs)]

mod client;
mod codec;
mod connection;
mod download;
mod error;
mod methods;
mod upload;

pub use client::{Client, Config};
pub use codec::{CodecError, PacketCodec};
pub use connection::{Connection, Keepalive, State};
pub use download::Download;
pub use error::{Error, Result};
pub use upload::{CHUNK_SIZE, IN_FLIGHT, Upload};
