//! Integration tests of the client against a scripted server over
//! `tokio::io::duplex`: routing, pipelining, deadlines, keepalive, upload
//! streams, protocol violations and cancel safety.

mod calls;
mod cancel;
mod download;
mod keepalive;
mod protocol;
mod server;
mod strict;
mod upload;
