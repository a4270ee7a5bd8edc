//! The command-line entry a provider crate wraps in a few lines:
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
//! It works in two stages. [`Args`] only parses (flags, then `CONFORMANCE_*`
//! environment variables, then defaults) and does no I/O. [`Plan::resolve`] checks
//! the values against the catalogue and the fixture and fills in the defaults that
//! depend on them (the output directory, a random seed). Then the suite runs on a
//! multi-thread tokio runtime, printing one progress line per rule on stderr, and
//! the reports are written.
//!
//! Exit codes: 0 when no rule failed or errored, 1 when one did (or the reports
//! could not be written), 2 for bad arguments.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use super::outcome::{Event, Outcome, Report, RuleResult};
use super::report::{Format, find_sentinel, human_duration, write_all};
use super::runner::{RunOptions, applicability, run, selected};
use crate::fixture::Fixture;
use crate::rules::CATALOGUE;

/// Exit code for bad arguments.
pub const EXIT_USAGE: u8 = 2;
/// Exit code when a rule failed or errored, or the reports could not be written.
pub const EXIT_FAILED: u8 = 1;

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
    let args = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE);
        }
    };
    let plan = match Plan::resolve(args, fixture.as_ref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if plan.list {
        print!("{}", listing(fixture.as_ref(), &plan.opts.rules));
        return 0;
    }
    execute(fixture, plan)
}

/// The command line, parsed and nothing more.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "conformance",
    about = "Runs the provider conformance suite and writes compliance reports",
    version
)]
pub struct Args {
    /// Rules to run, comma separated: IDs, or prefixes ending in `*` (`CRE-*`). Default: all.
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

    /// Time limit of one rule's check, cleanup included, in seconds (fractions allowed).
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

fn parse_secs(s: &str) -> Result<Secs, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
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
}

impl Plan {
    /// Checks `args` against the catalogue and fills in the defaults that depend on
    /// the fixture.
    pub fn resolve(args: Args, fixture: &dyn Fixture) -> Result<Plan, UsageError> {
        let defaults = RunOptions::default();
        let rules: Vec<String> = args
            .rules
            .iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect();
        for r in &rules {
            let filter = Some(vec![r.clone()]);
            if !CATALOGUE.iter().any(|rule| selected(rule, &filter)) {
                return Err(UsageError {
                    flag: "--rules",
                    message: format!("no rule matches {r:?} (`--list` shows them)"),
                });
            }
        }
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
            },
            formats,
            out,
            random_seed,
            list: args.list,
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

/// Every selected rule with its trial name and whether it runs against `fixture`.
pub fn listing(fixture: &dyn Fixture, rules: &Option<Vec<String>>) -> String {
    let chosen: Vec<_> = CATALOGUE.iter().filter(|r| selected(r, rules)).collect();
    let id_w = chosen.iter().map(|r| r.id.len()).max().unwrap_or(0);
    let title_w = chosen
        .iter()
        .map(|r| r.title.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for rule in chosen {
        let status = match applicability(fixture, rule) {
            None => "runs".to_owned(),
            Some((o, why)) => format!("{}: {why}", o.as_str()),
        };
        out.push_str(&format!(
            "{:<id_w$}  {:<title_w$}  {status}\n",
            rule.id, rule.title
        ));
    }
    out
}

/// The progress line of the `index`-th finished rule out of `total`.
pub fn progress_line(index: usize, total: usize, r: &RuleResult) -> String {
    let w = total.to_string().len();
    let head = format!("[{index:>w$}/{total}] {} ...", r.id);
    match r.outcome {
        Outcome::Pass => format!("{head} Pass ({})", human_duration(r.duration)),
        Outcome::Skipped | Outcome::NotApplicable => format!(
            "{head} {}: {}",
            r.outcome.as_str(),
            r.reason.as_deref().unwrap_or("")
        ),
        Outcome::Fail | Outcome::Error => format!(
            "{head} {} ({}): {}",
            r.outcome.as_str(),
            human_duration(r.duration),
            r.reason.as_deref().unwrap_or("")
        ),
    }
}

/// The summary printed after the run: counts, then each failure and error.
pub fn summary_text(report: &Report) -> String {
    let s = &report.summary;
    let mut out = format!(
        "{} rules: {} pass, {} fail, {} error, {} skipped, {} not applicable\n",
        s.total(),
        s.pass,
        s.fail,
        s.error,
        s.skipped,
        s.not_applicable
    );
    for r in report.results.iter().filter(|r| r.outcome.is_failure()) {
        out.push_str(&format!(
            "  {:<5} {}: {}\n",
            r.outcome.as_str(),
            r.id,
            r.reason.as_deref().unwrap_or("")
        ));
        if let Some(p) = &r.property {
            out.push_str(&format!(
                "        property seed {}, shrunk input: {}\n",
                p.seed, p.shrunk
            ));
        }
    }
    out
}

/// The exit code a finished run earns.
pub fn exit_code(report: &Report) -> u8 {
    if report.summary.ok() { 0 } else { EXIT_FAILED }
}

fn execute(fixture: Arc<dyn Fixture>, plan: Plan) -> u8 {
    let started = Instant::now();
    let provider = fixture.provider_name();
    let selected_rules: Vec<_> = CATALOGUE
        .iter()
        .filter(|r| selected(r, &plan.opts.rules))
        .collect();
    let total = selected_rules.len();
    let runnable = selected_rules
        .iter()
        .filter(|r| applicability(fixture.as_ref(), r).is_none())
        .count();
    eprintln!(
        "conformance: {provider} {}, {total} rules ({runnable} to run), seed {}{}",
        fixture.provider_version(),
        plan.opts.seed,
        if plan.random_seed {
            " (random; replay with --seed)"
        } else {
            ""
        }
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: failed to start the tokio runtime: {e}");
            return EXIT_FAILED;
        }
    };
    let mut finished = 0usize;
    let mut sink = move |e: &Event| {
        if let Event::CheckFinished(r) = e {
            finished += 1;
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{}", progress_line(finished, total, r));
        }
    };
    let report = runtime.block_on(run(fixture, plan.opts.clone(), &mut sink));
    drop(runtime);
    eprint!("\n{}", summary_text(&report));
    let mut code = exit_code(&report);
    match write_all(&report, &plan.out, &plan.formats) {
        Ok(paths) => {
            for p in &paths {
                eprintln!("wrote {}", p.display());
            }
            if let Some(found) = find_sentinel(&paths) {
                eprintln!("error: a cloud-init sentinel reached a report (CRE-SECRET): {found}");
                code = EXIT_FAILED;
            }
        }
        Err(e) => {
            eprintln!("error: failed to write the reports: {e}");
            code = EXIT_FAILED;
        }
    }
    eprintln!(
        "{} in {} (seed {})",
        if report.summary.ok() { "PASS" } else { "FAIL" },
        human_duration(started.elapsed()),
        report.run.seed
    );
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{Hook, HookError, HookResult, Location, Testbed};
    use crate::profile::Profile;
    use clap::CommandFactory;

    struct Named;

    impl Fixture for Named {
        fn provider_name(&self) -> String {
            "my/provider".into()
        }
        fn profile(&self) -> Profile {
            Profile::builder()
                .with("quota", "none")
                .unwrap()
                .build()
                .unwrap()
        }
        fn hooks(&self) -> Vec<Hook> {
            vec![Hook::Inventory]
        }
        fn locations(&self) -> Vec<Location> {
            vec![Location {
                name: "l0".into(),
                placement: "z0".into(),
            }]
        }
        fn has_checker(&self) -> bool {
            false
        }
        fn open(&self) -> crate::BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
            Box::pin(async { Err(HookError::new("no backend")) })
        }
    }

    fn plan(args: &[&str]) -> Result<Plan, String> {
        let args = Args::try_parse_from(std::iter::once("conformance").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Plan::resolve(args, &Named).map_err(|e| e.to_string())
    }

    #[test]
    fn every_flag_is_documented_once_with_an_env_fallback() {
        let cmd = Args::command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version") {
                continue;
            }
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            let want = format!("CONFORMANCE_{}", id.to_ascii_uppercase());
            assert_eq!(env.as_deref(), Some(want.as_str()), "--{id}");
            assert!(arg.get_help().is_some(), "--{id} has no help");
        }
        cmd.debug_assert();
    }

    #[test]
    fn defaults_resolve_from_the_fixture() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.formats, Format::ALL);
        assert_eq!(p.out, PathBuf::from("reports/my-provider"));
        assert!(p.random_seed);
        assert_eq!(p.opts.rules, None);
        let defaults = RunOptions::default();
        assert_eq!(
            (p.opts.cases, p.opts.concurrency, p.opts.rule_timeout),
            (defaults.cases, defaults.concurrency, defaults.rule_timeout)
        );
    }

    #[test]
    fn flags_resolve_to_run_options() {
        let p = plan(&[
            "--rules",
            "CRE-*,GET-MALFORMED",
            "--format",
            "md,json,md",
            "--out",
            "x",
            "--seed",
            "7",
            "--rule-timeout",
            "1.5",
            "--cases",
            "3",
            "--concurrency",
            "2",
        ])
        .unwrap();
        assert_eq!(
            p.opts.rules,
            Some(vec!["CRE-*".to_owned(), "GET-MALFORMED".to_owned()])
        );
        assert_eq!(p.formats, [Format::Markdown, Format::Json]);
        assert_eq!(p.out, PathBuf::from("x"));
        assert_eq!((p.opts.seed, p.random_seed), (7, false));
        assert_eq!(p.opts.rule_timeout, Duration::from_millis(1500));
        assert_eq!((p.opts.cases, p.opts.concurrency), (3, 2));
    }

    #[test]
    fn bad_values_name_the_flag() {
        for (args, flag) in [
            (&["--rules", "NOPE-*"][..], "--rules"),
            (&["--format", "pdf"], "--format"),
            (&["--seed", "twelve"], "--seed"),
            (&["--seed=-1"], "--seed"),
            (&["--rule-timeout", "0"], "--rule-timeout"),
            (&["--cases", "0"], "--cases"),
            (&["--concurrency", "0"], "--concurrency"),
        ] {
            let e = plan(args).unwrap_err();
            assert!(e.contains(flag), "{args:?}: {e}");
        }
    }

    #[test]
    fn bad_arguments_exit_with_two() {
        let code = main_with(Arc::new(Named), ["conformance", "--rules", "XYZ-1"]);
        assert_eq!(code, EXIT_USAGE);
        // main_with prints clap's own errors straight to stderr; check the code only.
        let e = Args::try_parse_from(["conformance", "--bogus"]).unwrap_err();
        assert_eq!(e.exit_code(), i32::from(EXIT_USAGE));
    }

    #[test]
    fn listing_shows_applicability() {
        let text = listing(&Named, &Some(vec!["CRE-QUOTA".into(), "CHK-*".into()]));
        let quota = text.lines().find(|l| l.starts_with("CRE-QUOTA")).unwrap();
        assert!(
            quota.contains("NotApplicable: profile declares quota=none"),
            "{quota}"
        );
        assert!(text.lines().any(|l| l.starts_with("CHK-ORDER")));
        assert!(!text.contains("GET-"));
    }

    #[test]
    fn progress_lines_pad_the_counter() {
        let mut r = RuleResult {
            id: "CRE-RETURN".into(),
            title: "t".into(),
            area: "create".into(),
            outcome: Outcome::Pass,
            reason: None,
            violations: vec![],
            evidence: vec![],
            property: None,
            duration: Duration::from_millis(12),
        };
        assert_eq!(
            progress_line(3, 45, &r),
            "[ 3/45] CRE-RETURN ... Pass (12 ms)"
        );
        r.outcome = Outcome::NotApplicable;
        r.reason = Some("profile declares quota=none".into());
        assert_eq!(
            progress_line(10, 45, &r),
            "[10/45] CRE-RETURN ... NotApplicable: profile declares quota=none"
        );
    }
}
