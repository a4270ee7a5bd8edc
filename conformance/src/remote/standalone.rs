//! The standalone `conformance` command (feature `remote`): the suite's command tree
//! plus the two ways to reach a provider in another process, `--provider-command`
//! and `--provider-socket`. The provider's stderr goes to `provider-stderr.log` in
//! the report directory.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use super::{Endpoint, RemoteFixture, RemoteOptions, StartFailure};
use crate::BoxFuture;
use crate::fixture::{Fixture, Hook, HookError, HookResult, Location, Testbed};
use crate::profile::Profile;
use crate::suite::cli::{EXIT_USAGE, Plan, SuiteArgs, SuiteCommand, run_suite};

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
    after_help = crate::suite::cli::EXIT_CODES_HELP
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
        let opts = RemoteOptions {
            // With --out known, the provider's stderr goes to its file from the start.
            stderr_log: run_args
                .as_ref()
                .and_then(|a| a.out.as_ref())
                .map(|o| o.join(STDERR_LOG)),
            ..RemoteOptions::default()
        };
        let fixture = match RemoteFixture::start(endpoint, opts) {
            Ok(f) => f,
            Err(failure) => return Ok(unstarted(failure, run_args.as_ref())),
        };
        if let Some(a) = &run_args
            && let Ok(plan) = Plan::resolve(a.clone(), &fixture)
        {
            fixture.set_stderr_log(plan.out.join(STDERR_LOG));
        }
        Ok(Arc::new(fixture))
    };
    run_suite(cli.suite, &make)
}

/// The file beside the reports that holds the provider's stderr.
const STDERR_LOG: &str = "provider-stderr.log";

/// A provider that failed at start-up: the failure is printed with the last lines of
/// its stderr, and the run goes on against [`Unstarted`], so that every rule is an
/// Error naming the failure and the reports say so (verdict error).
fn unstarted(
    failure: StartFailure,
    run_args: Option<&crate::suite::cli::RunArgs>,
) -> Arc<dyn Fixture> {
    eprintln!("error: the provider did not start: {failure}");
    let f = Unstarted { failure };
    if let Some(a) = run_args
        && a.out.is_none()
        && let Ok(plan) = Plan::resolve(a.clone(), &f)
    {
        let path = plan.out.join(STDERR_LOG);
        let _ = std::fs::create_dir_all(&plan.out);
        let mut text = f.failure.stderr_tail.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        let _ = std::fs::write(path, text);
    }
    Arc::new(f)
}

/// The stand-in for a provider whose `initialize` never answered: it declares every
/// hook, a checker and two locations, so no rule is Skipped for want of one, and every testbed it
/// is asked for fails with the start-up failure. Its profile is the default one,
/// which the report's environment says stands in for a profile never declared.
pub(super) struct Unstarted {
    failure: StartFailure,
}

impl Fixture for Unstarted {
    fn provider_name(&self) -> String {
        "unstarted-provider".into()
    }

    fn profile(&self) -> Profile {
        Profile::builder()
            .build()
            .unwrap_or_else(|_| unreachable!("the default profile is legal"))
    }

    fn hooks(&self) -> Vec<Hook> {
        Hook::ALL.to_vec()
    }

    /// Two stand-ins, so no rule is Skipped for want of locations either: every rule
    /// reaches `open` and is an Error naming the start-up failure.
    fn locations(&self) -> Vec<Location> {
        (1..=2)
            .map(|n| Location {
                name: format!("unknown-location-{n}"),
                placement: format!("unknown-placement-{n}"),
            })
            .collect()
    }

    fn has_checker(&self) -> bool {
        true
    }

    fn environment(&self) -> std::collections::BTreeMap<String, String> {
        [
            ("start-failure".to_owned(), self.failure.to_string()),
            (
                "profile".to_owned(),
                "never declared: initialize was not answered; the default profile stands in"
                    .to_owned(),
            ),
        ]
        .into()
    }

    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        let why = format!(
            "not run: the provider did not start: {}",
            self.failure.reason
        );
        Box::pin(async move { Err(HookError(why)) })
    }
}
