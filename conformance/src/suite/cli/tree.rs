//! The command tree: [`SuiteArgs`] (the suite's flags and subcommands, to flatten into
//! any command) and [`run_suite`], which carries out what they ask for.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use super::EXIT_USAGE;
use super::args::{Plan, RunArgs};
use super::catalogue::{CatalogueFormat, catalogue};
use super::diff::{DIFF_EXIT_HELP, DiffArgs, diff};
use super::merge::{MERGE_EXIT_HELP, MergeArgs, merge};
use super::render::{RENDER_EXIT_HELP, RenderArgs, render};
use super::run::{execute, listing};
use super::verify::{VERIFY_EXIT_HELP, VerifyArgs, verify};
use crate::fixture::Fixture;

/// The suite's whole command line, flattened into a provider's own command
/// (`#[command(flatten)] suite: SuiteArgs`). Without a subcommand it runs the suite.
///
/// A command that embeds it adds only its fixture's own flags, best as
/// `global = true` args so that they are accepted after a subcommand too.
#[derive(Clone, Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SuiteArgs {
    /// What to do; running the suite when none is named.
    #[command(subcommand)]
    pub command: Option<SuiteCommand>,

    /// The flags of a run without a subcommand.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The suite's subcommands.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum SuiteCommand {
    /// Runs the suite and writes the reports (the default).
    Run(RunArgs),
    /// Prints every selected rule with whether it would run against this provider,
    /// and why not.
    List(RunArgs),
    /// Prints the rule catalogue, for tools in other languages.
    Catalogue {
        /// `json`: the rules as data; `md`: the contract document.
        #[arg(long, value_enum, default_value = "json")]
        format: CatalogueFormat,
    },
    /// Writes a `report.json` made elsewhere in other formats.
    #[command(after_help = RENDER_EXIT_HELP)]
    Render(RenderArgs),
    /// Compares two runs' `report.json`: outcomes that changed, rules added or removed,
    /// and the verdict.
    #[command(after_help = DIFF_EXIT_HELP)]
    Diff(DiffArgs),
    /// Checks a `report.json`: its schema, that it was made against this suite's
    /// catalogue, and the digest it records of itself.
    #[command(after_help = VERIFY_EXIT_HELP)]
    Verify(VerifyArgs),
    /// Folds the reports of a run's shards (`--shard K/N`), or the fragments a
    /// cargo-test run writes, into the report of one run.
    #[command(after_help = MERGE_EXIT_HELP)]
    Merge(MergeArgs),
}

/// Runs what `args` asks for and returns the exit code. `fixture` is called only by
/// the commands that need a provider (run, list); an `Err(message)` from it is a
/// usage error (exit 2).
pub fn run_suite(args: SuiteArgs, fixture: &dyn Fn() -> Result<Arc<dyn Fixture>, String>) -> u8 {
    let (run_args, list_only) = match args.command {
        None => (args.run, false),
        Some(SuiteCommand::Run(a)) => (a, false),
        Some(SuiteCommand::List(a)) => (a, true),
        Some(SuiteCommand::Catalogue { format }) => {
            print!("{}", catalogue(format));
            return 0;
        }
        Some(SuiteCommand::Render(a)) => return render(a),
        Some(SuiteCommand::Diff(a)) => return diff(a),
        Some(SuiteCommand::Verify(a)) => return verify(a),
        Some(SuiteCommand::Merge(a)) => return merge(a),
    };
    let fixture = match fixture() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let plan = match Plan::resolve(run_args, fixture.as_ref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if list_only || plan.list {
        print!(
            "{}",
            listing(fixture.as_ref(), &plan.opts.rules, &plan.opts.skip)
        );
        return 0;
    }
    execute(fixture, plan)
}

/// The suite as a program of its own, for a provider that adds no flags.
#[derive(Debug, Parser)]
#[command(
    name = "conformance",
    about = "Runs the provider conformance suite and writes compliance reports",
    version,
    after_help = super::EXIT_CODES_HELP
)]
pub(super) struct Cli {
    #[command(flatten)]
    pub(super) suite: SuiteArgs,
}

/// Runs the conformance suite against `fixture` as a command-line program.
pub fn main(fixture: Arc<dyn Fixture>) -> ExitCode {
    ExitCode::from(main_with(fixture, std::env::args_os()))
}

/// [`main`] with explicit arguments (the first is the program name); returns the exit
/// code.
pub fn main_with<I, T>(fixture: Arc<dyn Fixture>, args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE);
        }
    };
    run_suite(cli.suite, &|| Ok(fixture.clone()))
}
