//! Control from outside the daemon's process: the out-of-band API of
//! [`crate::FakeLibvirt`] (faults, trace, restarts, boots, addresses, states,
//! capacity, planting, dumps) as JSON lines on a Unix socket of its own,
//! with a blocking client and the `fake-libvirtd ctl` command over it.
//!
//! `proto.rs` is the schema, `exec.rs` carries requests out, `server.rs`
//! listens, `client.rs` and `cli.rs` are the other end.

mod cli;
mod client;
mod exec;
mod proto;
mod server;

pub use cli::{CtlArgs, run_ctl};
pub use client::ControlClient;
pub use exec::Control;
pub use proto::*;
pub use server::{ControlServer, answer};
