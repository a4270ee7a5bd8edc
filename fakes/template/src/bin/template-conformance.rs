//! Runs the conformance suite against the template provider and writes the reports:
//! `cargo run -p template-provider --bin template-conformance -- --out reports/template`.
//!
//! `--profile create-return=blocking,provisioning-state=create-blocks,quota=none` makes
//! the template declare, and behave as, those values over its default profile; the
//! report shows the profile that ran.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use conformance::fixture::Fixture;
use conformance::suite::cli::{EXIT_USAGE, SuiteArgs, run_suite};
use template_provider::{TemplateConfig, TemplateFixture};

#[derive(Debug, Parser)]
#[command(
    name = "template-conformance",
    about = "Runs the conformance suite against the template provider",
    after_help = conformance::suite::cli::EXIT_CODES_HELP
)]
struct Args {
    /// Profile values to declare and behave as, over the template's default profile:
    /// comma-separated axis=value pairs (e.g. `delete-return=early,quota=none`).
    #[arg(
        long,
        global = true,
        value_name = "AXIS=VALUE,...",
        env = "TEMPLATE_PROFILE"
    )]
    profile: Option<String>,
    #[command(flatten)]
    suite: SuiteArgs,
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE));
        }
    };
    let profile = match args.profile.as_deref() {
        None => TemplateConfig::default_profile(),
        Some(pairs) => match TemplateConfig::default_profile().with_pairs(pairs) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("template-conformance: --profile {pairs:?}: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
    };
    let build = move || -> Result<Arc<dyn Fixture>, String> {
        Ok(Arc::new(TemplateFixture::default().with_profile(profile)))
    };
    ExitCode::from(run_suite(args.suite, &build))
}
