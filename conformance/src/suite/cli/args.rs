//! The flags of a run: [`RunArgs`] only parses (flags, then `CONFORMANCE_*`
//! environment variables, then defaults) and does no I/O; [`Plan::resolve`] checks the
//! values against the catalogue and the fixture and fills in the defaults that depend
//! on them (the output directory, a random seed).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::fixture::Fixture;
use crate::suite::baseline::{Entry, load as load_entries};
use crate::suite::outcome::Report;
use crate::suite::report::Format;
use crate::suite::runner::{RunOptions, parse_rule_seeds};
use crate::suite::shard::ShardInfo;
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

    /// Whether the provider's checkout had changes not committed when it was built,
    /// recorded in the reports beside its commit.
    #[arg(long, env = "CONFORMANCE_PROVIDER_DIRTY", value_name = "true|false")]
    pub provider_dirty: Option<bool>,

    /// Runs the K-th of N disjoint parts of the selected rules (`1/2`, `2/2`), the same
    /// parts on every machine: balanced by the rule durations of `--previous` when
    /// given (every shard must be given the same file), dealt out in catalogue order
    /// otherwise. `merge` folds the shards' reports into one.
    #[arg(long, env = "CONFORMANCE_SHARD", value_name = "K/N")]
    pub shard: Option<String>,

    /// Runs the rules that failed or errored in this report (with its seed unless
    /// `--seed` is given); `--rules` is then not allowed.
    #[arg(long, env = "CONFORMANCE_RERUN_FAILED", value_name = "REPORT.json")]
    pub rerun_failed: Option<PathBuf>,

    /// Starts no rule once N rules have failed or errored; the rest are Skipped and
    /// the verdict is fail (never pass), the report saying the run stopped early.
    #[arg(
        long,
        env = "CONFORMANCE_MAX_FAIL",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_fail: Option<u32>,

    /// Writes the run's events as JSON lines while it goes, to FILE or to stdout
    /// (`-`): run started, rule started and finished, faults, sweeps, run finished
    /// (schema: `conformance/schema/events.schema.json`).
    #[arg(long, env = "CONFORMANCE_EVENTS", value_name = "FILE|-")]
    pub events: Option<PathBuf>,

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
    /// Where to write the event stream (`--events`); `-` is stdout.
    pub events: Option<PathBuf>,
}

impl Plan {
    /// Checks `args` against the catalogue and fills in the defaults that depend on
    /// the fixture.
    pub fn resolve(args: RunArgs, fixture: &dyn Fixture) -> Result<Plan, UsageError> {
        let defaults = RunOptions::default();
        let mut rules = patterns("--rules", &args.rules)?;
        let skip = patterns("--skip", &args.skip)?;
        let expected_failures = entries("--expected-failures", &args.expected_failures)?;
        let quarantine = entries("--quarantine", &args.quarantine)?;
        let log_filter = log_filter(args.log_level.clone())?;
        let previous = match &args.previous {
            None => None,
            Some(path) => Some(read_report("--previous", path)?),
        };
        let mut seed_given = args.seed;
        if let Some(path) = &args.rerun_failed {
            let (rerun, seed) = rerun_failed(path, &rules)?;
            rules = rerun;
            seed_given = seed_given.or(Some(seed));
        }
        let shard = match &args.shard {
            None => None,
            Some(text) => {
                let (index, count) =
                    crate::suite::shard::parse_shard(text).map_err(|message| UsageError {
                        flag: "--shard",
                        message,
                    })?;
                Some(shard_of(index, count, &rules, previous.as_ref()))
            }
        };
        let formats = formats(&args.format)?;
        let (seed, random_seed) = match seed_given {
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
                provider_dirty: args.provider_dirty,
                skip,
                repeat: args.repeat.max(1),
                max_wall: args.max_wall.map(|s| s.0),
                stop: None,
                max_instances: args.max_instances,
                shard,
                max_fail: args.max_fail,
            },
            events: args.events,
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

/// The rule patterns a flag gives, trimmed, blanks dropped, each checked.
fn patterns(flag: &'static str, given: &[String]) -> Result<Vec<String>, UsageError> {
    let list: Vec<String> = given
        .iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect();
    for r in &list {
        check_pattern(r).map_err(|message| UsageError { flag, message })?;
    }
    Ok(list)
}

/// The expected-failure or quarantine entries in the file a flag names, if any.
fn entries(flag: &'static str, path: &Option<PathBuf>) -> Result<Vec<Entry>, UsageError> {
    match path {
        None => Ok(Vec::new()),
        Some(p) => load_entries(p).map_err(|message| UsageError { flag, message }),
    }
}

/// The log filter from `--log-level` or `RUST_LOG`, checked; `None` when neither
/// gives one.
fn log_filter(given: Option<String>) -> Result<Option<String>, UsageError> {
    let filter = given
        .or_else(|| std::env::var("RUST_LOG").ok())
        .map(|f| f.trim().to_owned())
        .filter(|f| !f.is_empty());
    if let Some(f) = &filter {
        tracing_subscriber::EnvFilter::try_new(f).map_err(|e| UsageError {
            flag: "--log-level",
            message: format!("{f:?} is not a log filter: {e}"),
        })?;
    }
    Ok(filter)
}

/// A report a flag names.
fn read_report(flag: &'static str, path: &std::path::Path) -> Result<Report, UsageError> {
    crate::suite::report::json::read(path).map_err(|message| UsageError { flag, message })
}

/// `--rerun-failed REPORT`: the rules that failed or errored there, and its seed.
fn rerun_failed(
    path: &std::path::Path,
    rules: &[String],
) -> Result<(Vec<String>, u64), UsageError> {
    let flag = "--rerun-failed";
    if !rules.is_empty() {
        return Err(UsageError {
            flag,
            message: "selects the rules itself; drop --rules".into(),
        });
    }
    let earlier = read_report(flag, path)?;
    let rules = rerun_selection(&earlier).map_err(|message| UsageError { flag, message })?;
    Ok((rules, earlier.run.seed))
}

/// The report formats asked for, each once, in the order given; at least one.
fn formats(given: &[Format]) -> Result<Vec<Format>, UsageError> {
    let mut formats = Vec::new();
    for f in given {
        if !formats.contains(f) {
            formats.push(*f);
        }
    }
    if formats.is_empty() {
        return Err(UsageError {
            flag: "--format",
            message: "names no format".into(),
        });
    }
    Ok(formats)
}

/// The rules that failed or errored in `earlier`, as `--rules` IDs; an error when
/// there are none.
fn rerun_selection(earlier: &Report) -> Result<Vec<String>, String> {
    let failed: Vec<String> = earlier
        .results
        .iter()
        .filter(|r| r.outcome.is_failure())
        .map(|r| r.id.clone())
        .collect();
    for id in &failed {
        if crate::rules::rule(id).is_none() {
            return Err(format!(
                "{id} failed there but is no rule of this catalogue"
            ));
        }
    }
    if failed.is_empty() {
        return Err(format!(
            "no rule failed or errored in run {} (verdict {}): nothing to rerun",
            earlier.run.run_id, earlier.verdict
        ));
    }
    Ok(failed)
}

/// Shard `index` of `count` of the rules `rules` selects, balanced by the durations
/// of `previous` when given.
fn shard_of(index: u32, count: u32, rules: &[String], previous: Option<&Report>) -> ShardInfo {
    let filter = (!rules.is_empty()).then(|| rules.to_vec());
    let ids: Vec<String> = crate::rules::CATALOGUE
        .iter()
        .filter(|r| crate::suite::runner::selected(r, &filter))
        .map(|r| r.id.to_owned())
        .collect();
    let durations: Option<BTreeMap<String, Duration>> = previous.map(|p| {
        p.results
            .iter()
            .filter(|r| r.runs > 0)
            .map(|r| (r.id.clone(), r.duration))
            .collect()
    });
    let parts = crate::suite::shard::partition(&ids, count, durations.as_ref());
    ShardInfo {
        index,
        count,
        balanced_by: if durations.is_some() {
            "previous durations".into()
        } else {
            "catalogue order".into()
        },
        rules: parts[(index - 1) as usize].clone(),
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
