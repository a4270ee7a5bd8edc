//! The standalone `conformance` command (feature `remote`): the suite's command tree
//! plus the two ways to reach a provider in another process, `--provider-command`
//! and `--provider-socket`. The provider's stderr goes to `provider-stderr.log` in
//! the report directory.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use super::EXIT_USAGE;
use super::args::Plan;
use super::tree::{SuiteArgs, SuiteCommand, run_suite};
use crate::fixture::Fixture;
use crate::remote::{Endpoint, RemoteFixture, RemoteOptions};

/// How the standalone command reaches the provider.
#[derive(Clone, Debug, clap::Args)]
pub struct ProviderArgs {
    /// The provider's command line, run with `sh -c`; the protocol runs over its
    /// stdin and stdout (`docs/remote-protocol.md`).
    #[arg(
        long,
        global = true,
        env = "CONFORMANCE_PROVIDER_COMMAND",
        value_name = "'CMD ARGS'",
        conflicts_with = "provider_socket"
    )]
    pub provider_command: Option<String>,

    /// A Unix socket where a provider serves the protocol.
    #[arg(
        long,
        global = true,
        env = "CONFORMANCE_PROVIDER_SOCKET",
        value_name = "PATH"
    )]
    pub provider_socket: Option<PathBuf>,
}

impl ProviderArgs {
    /// The endpoint named, or a usage error.
    pub fn endpoint(&self) -> Result<Endpoint, String> {
        match (&self.provider_command, &self.provider_socket) {
            (Some(c), None) if !c.trim().is_empty() => Ok(Endpoint::Command(c.clone())),
            (None, Some(p)) => Ok(Endpoint::Socket(p.clone())),
            _ => Err(
                "name the provider with --provider-command 'CMD ARGS' or --provider-socket PATH"
                    .into(),
            ),
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "conformance",
    about = "Runs the provider conformance suite against a provider in any language, over the process protocol",
    version,
    after_help = super::EXIT_CODES_HELP
)]
pub(super) struct StandaloneCli {
    #[command(flatten)]
    pub(super) provider: ProviderArgs,
    #[command(flatten)]
    pub(super) suite: SuiteArgs,
}

/// The standalone command's `main`.
pub fn standalone_main() -> ExitCode {
    ExitCode::from(standalone_main_with(std::env::args_os()))
}

/// [`standalone_main`] with explicit arguments; returns the exit code.
pub fn standalone_main_with<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match StandaloneCli::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE);
        }
    };
    let run_args = match &cli.suite.command {
        None => Some(cli.suite.run.clone()),
        Some(SuiteCommand::Run(a)) | Some(SuiteCommand::List(a)) => Some(a.clone()),
        Some(_) => None,
    };
    let provider = cli.provider.clone();
    let make = move || -> Result<Arc<dyn Fixture>, String> {
        let endpoint = provider.endpoint()?;
        let fixture = RemoteFixture::new(endpoint, RemoteOptions::default())
            .map_err(|e| format!("the provider: {e}"))?;
        if let Some(a) = &run_args
            && let Ok(plan) = Plan::resolve(a.clone(), &fixture)
        {
            fixture.set_stderr_log(plan.out.join("provider-stderr.log"));
        }
        Ok(Arc::new(fixture))
    };
    run_suite(cli.suite, &make)
}
