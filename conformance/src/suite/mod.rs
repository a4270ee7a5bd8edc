//! The generic conformance suite (feature `suite`; not API-stable): the checks for
//! every rule, the runner that turns a [`Fixture`](crate::fixture::Fixture) into
//! outcomes, the event stream and its reporters, the libtest-mimic harness and a CLI.

pub mod baseline;
pub mod budget;
pub mod capture;
pub mod checks;
pub mod cli;
pub mod cx;
pub mod events;
pub mod freshness;
pub mod guard;
pub mod harness;
mod hooklog;
pub mod logs;
pub mod outcome;
pub mod props;
pub mod report;
pub mod runner;
pub mod secrets;
pub mod shard;
pub mod tags;
