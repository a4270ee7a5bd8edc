//! The flags of a run: [`RunArgs`] only parses (flags, then `CONFORMANCE_*`
//! environment variables, then defaults) and does no I/O; [`Plan::resolve`] checks the
//! values against the catalogue and the fixture and fills in the defaults that depend
//! on them (the output directory, a random seed).

use std::path::PathBuf;
use std::time::Duration;

use crate::fixture::Fixture;
use crate::suite::baseline::{Entry, load as load_entries};
use crate::suite::outcome::Report;
use crate::suite::report::Format;
use crate::suite::runner::{RunOptions, parse_rule_seeds};
use crate::suite::tags::check_pattern;

/// The flags of a run (and of `list`), parsed and nothing more.
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    /// Rules to run, comma separated: IDs, prefixes ending in `*` (`CRE-*`), or `tag:NAME`
    /// (`tag:two-locations`; `catalogue` lists each rule's tags). Default: all.
    #[arg(
        long,
        env = "CONFORMANCE_RULES",
        value_delimiter = ',',
        value_name = "ID,..."
    )]
    pub rules: Vec<String>,

    /// Report formats to write, comma separated.
    #[arg(
        long,
        env = "CONFORMANCE_FORMAT",
        value_delimiter = ',',
        value_enum,
        default_value = "json,junit,md,html",
        value_name = "FORMAT,..."
    )]
    pub format: Vec<Format>,

    /// Directory for the reports. Default: `reports/<provider>`.
    #[arg(long, env = "CONFORMANCE_OUT", value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Seed of every randomised part of the run. Default: random, and printed.
    #[arg(long, env = "CONFORMANCE_SEED", value_name = "N")]
    pub seed: Option<u64>,

    /// Time limit of one rule's check, cleanup included: seconds (fractions allowed) or a
    /// duration such as `15m` or `1m30s`.
    #[arg(
        long,
        env = "CONFORMANCE_RULE_TIMEOUT",
        value_name = "SECS",
        value_parser = parse_secs,
        default_value_t = Secs(RunOptions::default().rule_timeout)
    )]
    pub rule_timeout: Secs,

    /// Cases each property runs (capped on a real backend).
    #[arg(
        long,
        env = "CONFORMANCE_CASES",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..),
        default_value_t = RunOptions::default().cases
    )]
    pub cases: u32,

    /// Create steps the step-wise checks interrupt at most (every step when
    /// Create makes no more backend calls; else this many, spread evenly).
    #[arg(
        long,
        env = "CONFORMANCE_STEPS",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(2..),
        default_value_t = RunOptions::default().steps
    )]
    pub steps: u32,

    /// Rules checked at once.
    #[arg(
        long,
        env = "CONFORMANCE_CONCURRENCY",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=256),
        default_value_t = RunOptions::default().concurrency as u64
    )]
    pub concurrency: u64,

    /// A rule's own seed, replacing the one derived from `--seed` (what a failing
    /// property prints to replay it), comma separated: `GEN-MODEL=123,CRE-SECRET=4`.
    #[arg(
        long,
        env = "CONFORMANCE_RULE_SEED",
        value_delimiter = ',',
        value_name = "ID=N,..."
    )]
    pub rule_seed: Vec<String>,

    /// Rules to skip, comma separated, as `--rules` takes them (`GEN-CANCEL,tag:slow`):
    /// each is Skipped with the pattern named, and the verdict is partial.
    #[arg(
        long,
        env = "CONFORMANCE_SKIP",
        value_delimiter = ',',
        value_name = "ID|PREFIX*|tag:NAME,..."
    )]
    pub skip: Vec<String>,

    /// Runs each rule's check N times, each on a fresh testbed with a seed derived from
    /// the rule's seed and the repetition; a rule that both passes and fails is flaky.
    #[arg(
        long,
        env = "CONFORMANCE_REPEAT",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=1000),
        default_value_t = 1
    )]
    pub repeat: u32,

    /// Starts no rule once the run has taken this long (seconds, or a duration such as
    /// `45m`); rules running then finish, the rest are Skipped (a partial verdict).
    #[arg(long, env = "CONFORMANCE_MAX_WALL", value_name = "DURATION", value_parser = parse_secs)]
    pub max_wall: Option<Secs>,

    /// The most instances the running rules may hold together: a rule starts only when
    /// the instances it declares fit, and one declaring more than N is Skipped.
    #[arg(
        long,
        env = "CONFORMANCE_MAX_INSTANCES",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_instances: Option<u32>,

    /// A YAML list of expected failures (`- rule: ID`, `reason: …`, `expires:
    /// YYYY-MM-DD`): a listed rule that fails does not fail the run; one that passes
    /// (a stale entry) or an expired entry does.
    #[arg(long, env = "CONFORMANCE_EXPECTED_FAILURES", value_name = "FILE")]
    pub expected_failures: Option<PathBuf>,

    /// A YAML list of flaky rules, as `--expected-failures` writes it: a listed rule
    /// that both passed and failed (or ran once and failed) does not fail the run
    /// until its entry expires.
    #[arg(long, env = "CONFORMANCE_QUARANTINE", value_name = "FILE")]
    pub quarantine: Option<PathBuf>,

    /// A previous run's `report.json`: its rule durations make the progress estimate of
    /// the time left, and the CI summary (`$GITHUB_STEP_SUMMARY`) says what changed.
    #[arg(long, env = "CONFORMANCE_PREVIOUS", value_name = "REPORT.json")]
    pub previous: Option<PathBuf>,

    /// Seconds between heartbeat lines when stderr is no terminal.
    #[arg(
        long,
        env = "CONFORMANCE_HEARTBEAT",
        value_name = "SECS",
        value_parser = parse_secs,
        default_value_t = Secs(super::progress::HEARTBEAT),
        hide = true
    )]
    pub heartbeat: Secs,

    /// What to print of the provider's log lines on stderr, as `RUST_LOG` writes it
    /// (`warn`, `kvm2=debug`); `RUST_LOG` when not given, else nothing. It filters
    /// only what is printed: the suite captures every line.
    #[arg(long, env = "CONFORMANCE_LOG_LEVEL", value_name = "FILTER")]
    pub log_level: Option<String>,

    /// How printed log lines look.
    #[arg(
        long,
        env = "CONFORMANCE_LOG_FORMAT",
        value_enum,
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub log_format: super::logging::LogFormat,

    /// Exit 0 on a partial verdict (no Fail, no Error, but not everything checked).
    #[arg(long, env = "CONFORMANCE_ALLOW_PARTIAL")]
    pub allow_partial: bool,

    /// The source commit the provider was built from, recorded in the reports.
    #[arg(long, env = "CONFORMANCE_PROVIDER_COMMIT", value_name = "COMMIT")]
    pub provider_commit: Option<String>,

    /// Print every rule with whether it would run, and why not, then exit.
    #[arg(long, env = "CONFORMANCE_LIST")]
    pub list: bool,
}

/// A positive duration written as seconds, fractions allowed (`--rule-timeout 1.5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Secs(pub Duration);

impl std::fmt::Display for Secs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

/// A number of seconds (`90`, `1.5`), or a duration as Go writes them (`90s`,
/// `1m30s`, `1.5h`).
fn parse_secs(s: &str) -> Result<Secs, String> {
    let text = s.trim();
    let secs: f64 = match text.parse::<f64>() {
        Ok(secs) => secs,
        Err(_) => text
            .parse::<jiff::SignedDuration>()
            .map_err(|_| {
                format!("{s:?} is neither a number of seconds nor a duration such as 1m30s")
            })?
            .as_secs_f64(),
    };
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "{s} is out of range: more than 0 and at most 86400 seconds"
        ));
    }
    Ok(Secs(Duration::from_secs_f64(secs)))
}

/// A bad flag value found while resolving the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError {
    /// The flag, as typed (`--rules`).
    pub flag: &'static str,
    /// What is wrong with its value.
    pub message: String,
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.flag, self.message)
    }
}

impl std::error::Error for UsageError {}

/// A run, resolved: what the runner and the reporters are given.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The runner's options.
    pub opts: RunOptions,
    /// The formats to write, without repeats.
    pub formats: Vec<Format>,
    /// Where the reports go.
    pub out: PathBuf,
    /// Whether the seed was drawn at random rather than given.
    pub random_seed: bool,
    /// Only list the rules.
    pub list: bool,
    /// Whether a partial verdict exits 0.
    pub allow_partial: bool,
    /// The entries of `--expected-failures`.
    pub expected_failures: Vec<Entry>,
    /// The entries of `--quarantine`.
    pub quarantine: Vec<Entry>,
    /// A previous run's report (`--previous`): its durations make the progress
    /// estimate, and the CI summary says what changed since.
    pub previous: Option<Report>,
    /// The period of the heartbeat line without a terminal.
    pub heartbeat: Duration,
    /// What to print of the provider's log lines (`--log-level`, else `RUST_LOG`).
    pub log_filter: Option<String>,
    /// How to print them.
    pub log_format: super::logging::LogFormat,
}

impl Plan {
    /// Checks `args` against the catalogue and fills in the defaults that depend on
    /// the fixture.
    pub fn resolve(args: RunArgs, fixture: &dyn Fixture) -> Result<Plan, UsageError> {
        let defaults = RunOptions::default();
        let rules: Vec<String> = args
            .rules
            .iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect();
        let patterns = |flag: &'static str, given: &[String]| {
            let list: Vec<String> = given
                .iter()
                .map(|r| r.trim().to_owned())
                .filter(|r| !r.is_empty())
                .collect();
            for r in &list {
                check_pattern(r).map_err(|message| UsageError { flag, message })?;
            }
            Ok::<_, UsageError>(list)
        };
        let rules = patterns("--rules", &rules)?;
        let skip = patterns("--skip", &args.skip)?;
        let load = |flag: &'static str, path: &Option<PathBuf>| match path {
            None => Ok(Vec::new()),
            Some(p) => load_entries(p).map_err(|message| UsageError { flag, message }),
        };
        let expected_failures = load("--expected-failures", &args.expected_failures)?;
        let quarantine = load("--quarantine", &args.quarantine)?;
        let log_filter = args
            .log_level
            .clone()
            .or_else(|| std::env::var("RUST_LOG").ok())
            .map(|f| f.trim().to_owned())
            .filter(|f| !f.is_empty());
        if let Some(f) = &log_filter {
            tracing_subscriber::EnvFilter::try_new(f).map_err(|e| UsageError {
                flag: "--log-level",
                message: format!("{f:?} is not a log filter: {e}"),
            })?;
        }
        let previous = match &args.previous {
            None => None,
            Some(path) => {
                Some(
                    crate::suite::report::json::read(path).map_err(|message| UsageError {
                        flag: "--previous",
                        message,
                    })?,
                )
            }
        };
        let mut formats = Vec::new();
        for f in args.format {
            if !formats.contains(&f) {
                formats.push(f);
            }
        }
        if formats.is_empty() {
            return Err(UsageError {
                flag: "--format",
                message: "names no format".into(),
            });
        }
        let (seed, random_seed) = match args.seed {
            Some(s) => (s, false),
            None => (uuid::Uuid::new_v4().as_u64_pair().0, true),
        };
        let rule_seeds = parse_rule_seeds(&args.rule_seed).map_err(|message| UsageError {
            flag: "--rule-seed",
            message,
        })?;
        let out = args
            .out
            .unwrap_or_else(|| PathBuf::from("reports").join(dir_name(&fixture.provider_name())));
        Ok(Plan {
            opts: RunOptions {
                seed,
                rules: (!rules.is_empty()).then_some(rules),
                rule_timeout: args.rule_timeout.0,
                cases: args.cases,
                steps: args.steps,
                concurrency: usize::try_from(args.concurrency).unwrap_or(defaults.concurrency),
                rule_seeds,
                provider_commit: args
                    .provider_commit
                    .map(|c| c.trim().to_owned())
                    .filter(|c| !c.is_empty()),
                skip,
                repeat: args.repeat.max(1),
                max_wall: args.max_wall.map(|s| s.0),
                stop: None,
                max_instances: args.max_instances,
            },
            expected_failures,
            quarantine,
            previous,
            heartbeat: args.heartbeat.0,
            log_filter,
            log_format: args.log_format,
            formats,
            out,
            random_seed,
            list: args.list,
            allow_partial: args.allow_partial,
        })
    }
}

/// A provider name made safe as one path component.
fn dir_name(provider: &str) -> String {
    let s: String = provider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        "provider".into()
    } else {
        s
    }
}
