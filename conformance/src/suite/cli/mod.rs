//! The suite's command line, one clap command tree that every entry point embeds:
//! `kvm2 conformance`, `template-conformance`, or any provider's own command.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! // In a provider crate, `fixture` is that provider's `Fixture`.
//! fn run(fixture: Arc<dyn conformance::fixture::Fixture>) -> std::process::ExitCode {
//!     conformance::suite::cli::main(fixture)
//! }
//! ```
//!
//! A command that adds flags of its own flattens [`SuiteArgs`] into its parser and
//! calls [`run_suite`] with a closure that builds the fixture from those flags.
//!
//! Subcommands: `run` (the default when none is given), `list`, `catalogue`. When a
//! subcommand is named, the suite's flags follow it (`kvm2 conformance list --rules
//! 'CRE-*'`).
//!
//! Exit codes: 0 when no rule failed or errored, 1 when one did (or the reports
//! could not be written), 2 for bad arguments.

mod args;
mod catalogue;
mod run;
mod tree;

pub use args::{Plan, RunArgs, Secs, UsageError};
pub use catalogue::{CatalogueFormat, catalogue};
pub use run::{execute, exit_code, listing, progress_line, summary_text};
pub use tree::{SuiteArgs, SuiteCommand, main, main_with, run_suite};

/// Exit code for bad arguments.
pub const EXIT_USAGE: u8 = 2;
/// Exit code when a rule failed or errored, or the reports could not be written.
pub const EXIT_FAILED: u8 = 1;

#[cfg(test)]
mod tests;
