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
//! With the `remote` feature, the standalone `conformance` command
//! (`crate::remote::standalone_main`) embeds the same tree and adds
//! `--provider-command 'CMD ARGS'` / `--provider-socket PATH` (the process protocol).
//!
//! Subcommands: `run` (the default when none is given), `list`, `catalogue`,
//! `render REPORT.json` (a report made elsewhere written in other formats),
//! `diff OLD.json NEW.json` (two runs compared; exit 1 when a rule got worse) and
//! `verify REPORT.json` (schema, catalogue hash and the report's own digest) and
//! `merge PART... --out DIR` (shards' reports, or a cargo-test run's fragments, as the
//! report of one run). When a
//! subcommand is named, the suite's flags follow it (`kvm2 conformance list --rules
//! 'CRE-*'`).
//!
//! Exit codes of a run, one per verdict: 0 pass (every rule of the catalogue ran and passed or
//! was not applicable), 1 fail (a rule failed), 2 bad arguments, 3 error (no rule
//! failed but one errored, or the reports could not be written), 4 partial (no Fail
//! and no Error, but a rule was skipped or not selected, or a sub-assertion was not
//! checked; `--allow-partial` makes it 0).

mod args;
mod catalogue;
mod diff;
mod logging;
mod merge;
mod progress;
mod render;
mod run;
mod tree;
mod verify;

pub use args::{Plan, RunArgs, Secs, UsageError};
pub use catalogue::{CatalogueFormat, catalogue};
pub use diff::{Change, DIFF_EXIT_HELP, DiffArgs, DiffFormat, ReportDiff, RuleChange, diff};
pub use logging::{LogFormat, printer};
pub use merge::{MERGE_EXIT_HELP, MergeArgs, merge, merge_reports, read_parts};
pub use progress::{HEARTBEAT, Progress, Sink, progress_line, runs_note};
pub use render::{RENDER_EXIT_HELP, RenderArgs, render};
pub use run::{
    ci_summary, execute, exit_code, listing, not_checked_text, summary_text, waivers_text,
};
pub use tree::{SuiteArgs, SuiteCommand, main, main_with, run_suite};
pub use verify::{Finding, VERIFY_EXIT_HELP, VerifyArgs, verify, verify_text};

/// Exit code of a run whose verdict is fail.
pub const EXIT_FAILED: u8 = 1;
/// Exit code for bad arguments.
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a run whose verdict is error, or whose reports could not be written.
pub const EXIT_ERROR: u8 = 3;
/// Exit code of a run whose verdict is partial (unless `--allow-partial`).
pub const EXIT_PARTIAL: u8 = 4;

/// What `--help` says of the exit codes.
pub const EXIT_CODES_HELP: &str = "Exit codes: 0 pass (every rule ran: Pass or NotApplicable), \
1 fail (a rule failed), 2 bad arguments, 3 error (no Fail, but a rule errored or the reports \
could not be written), 4 partial (no Fail or Error, but a rule was skipped or not selected, \
or a sub-assertion was not checked; --allow-partial makes it 0).";

#[cfg(test)]
mod tests;
