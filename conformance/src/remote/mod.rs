//! The process protocol (feature `remote`): providers in any language, checked by the
//! same suite.
//!
//! [`proto`] holds the messages of protocol v1 (JSON-RPC 2.0, one message per line,
//! over a provider process's stdin and stdout or a Unix socket), [`schema`] their
//! generated JSON Schema, [`RemoteFixture`] the suite's end (a `Fixture` whose
//! provider and hooks live in the other process) and [`serve`] the provider's end for
//! any Rust fixture. `docs/remote-protocol.md` is the normative description.

mod bridge;
mod conn;
#[doc(hidden)]
pub mod fuzzing;
pub mod proto;
pub mod schema;
mod serve;
mod standalone;

pub use bridge::{Connector, Endpoint, Link, RemoteFixture, RemoteOptions, StartFailure};
pub use conn::{ExitStatus, REMOTE_SPAN, REMOTE_TARGET, STDERR_TARGET};
pub use serve::{TelemetryLayer, install_telemetry, serve, serve_socket, serve_stdio};
pub use standalone::{ProviderArgs, standalone_main, standalone_main_with};

#[cfg(test)]
mod tests;
