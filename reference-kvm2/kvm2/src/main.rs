//! The `kvm2` command.
//!
//! - `kvm2 conformance [suite options]` runs the conformance suite against
//!   kvm2 on the embedded in-memory libvirt hosts and writes the report;
//!   `kvm2 conformance --config FILE --test-host [suite options]` runs it against
//!   the real hosts of a configuration file.
//! - `kvm2 check|preflight|create|get|delete|list --config FILE` drive the
//!   provider against the hosts of a configuration file, over SSH, for
//!   manual use and for checking a host before anything touches it
//!   (`KVM2_CONFIG` names the file when `--config` is not given).
//! - `kvm2 completions SHELL` prints shell completions; `kvm2 --version` the
//!   version and the git commit it was built from.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use conformance::fixture::Fixture;
use conformance::suite::cli::{RunArgs, Secs, SuiteArgs, SuiteCommand};
use conformance::{CloudInit, CreateRequest, Ctx, ErrorKind, Provider, ProviderId};
use kvm2::{Config, Kvm2, SshDialer};
use libvirt_wire::ErrorCode;

/// `kvm2 --version`: the package version and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KVM2_GIT_COMMIT"),
    ")"
);

/// Exit code of a manual command whose answer is negative: a host not ready
/// (check, preflight), a preflight check failed, a host unreachable (list).
const EXIT_NOT_READY: u8 = 1;
/// Exit code for bad arguments, or a configuration or user-data file that
/// cannot be read or is invalid.
const EXIT_USAGE: u8 = 2;

/// The exit code of a manual command that failed with an error of `kind`.
fn exit_code_of(kind: &ErrorKind) -> u8 {
    match kind {
        ErrorKind::NotFound => 3,
        ErrorKind::Transient => 4,
        ErrorKind::Permanent => 5,
        ErrorKind::QuotaExceeded(_) => 6,
    }
}

const EXIT_CODES_HELP: &str = "Exit codes of check, preflight, create, get, delete and list: \
0 success, 1 a host is not ready, a preflight check failed or a host could not be listed, \
2 bad arguments or an unusable configuration file, 3 NotFound, 4 Transient (retrying may \
succeed), 5 Permanent, 6 QuotaExceeded. `kvm2 conformance --help` gives the suite's own.";

#[derive(Parser)]
#[command(
    name = "kvm2",
    version = VERSION,
    about = "The kvm2 provider: libvirt hosts over SSH",
    after_help = EXIT_CODES_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The configuration file of a manual command.
#[derive(clap::Args)]
struct ConfigFile {
    /// The YAML configuration with a `kvm2:` block.
    #[arg(long, env = "KVM2_CONFIG", value_name = "FILE")]
    config: PathBuf,
}

/// `kvm2 conformance`: the suite's own command line, and where it runs.
#[derive(clap::Args)]
#[command(after_help = conformance::suite::cli::EXIT_CODES_HELP)]
struct ConformanceArgs {
    /// Run against the real hosts of this configuration instead of the embedded fake
    /// (defaults become 3 rules at once, 2 property cases, 4 interrupted steps and a
    /// 15-minute rule limit unless given).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Confirm that the hosts of --config are test hosts: the suite creates, breaks
    /// and deletes VMs on them. Not needed to list rules.
    #[arg(long, global = true, requires = "config")]
    test_host: bool,

    #[command(flatten)]
    suite: SuiteArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the conformance suite against kvm2 and write its reports.
    ///
    /// On two embedded in-memory libvirt hosts, or with --config FILE --test-host on
    /// the real hosts of a configuration.
    // Boxed: the suite's flags make it much larger than the other commands.
    Conformance(Box<ConformanceArgs>),
    /// Check every configured host: SSH, libvirt, the pool (prints one JSON line per host).
    Check {
        #[command(flatten)]
        config: ConfigFile,
    },
    /// Check a host before anything touches it: readiness, free space for one
    /// instance, and instances an earlier run left behind under a tag.
    Preflight {
        #[command(flatten)]
        config: ConfigFile,
        /// The tag whose instances count as leftovers.
        #[arg(long)]
        tag: Option<String>,
    },
    /// Create (or adopt) an instance and wait until it runs with an address.
    Create {
        #[command(flatten)]
        config: ConfigFile,
        /// The instance name (the idempotency key).
        #[arg(long)]
        name: String,
        /// The owner's id recorded on the instance.
        #[arg(long)]
        uid: String,
        /// The garbage-collection tag recorded on the instance.
        #[arg(long)]
        tag: String,
        /// The placement zone (mapped to a host by the configuration).
        #[arg(long)]
        zone: String,
        /// An image name from the configuration (default: its default image).
        #[arg(long)]
        image: Option<String>,
        /// A file holding the cloud-init user data (never printed).
        #[arg(long)]
        user_data: Option<PathBuf>,
    },
    /// Read an instance by ID (`hosts/<host>/domains/<name>`).
    Get {
        #[command(flatten)]
        config: ConfigFile,
        /// The instance ID.
        id: String,
    },
    /// Delete an instance by ID; deleting a missing one succeeds.
    Delete {
        #[command(flatten)]
        config: ConfigFile,
        /// The instance ID.
        id: String,
    },
    /// List the instances carrying a tag on every configured host.
    List {
        #[command(flatten)]
        config: ConfigFile,
        /// The tag.
        #[arg(long)]
        tag: String,
    },
    /// Print shell completions for kvm2 (`kvm2 completions bash > /etc/bash_completion.d/kvm2`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Why a manual command failed.
enum Failed {
    /// Bad input: the configuration or a file it names (exit 2).
    Usage(String),
    /// The provider answered with an error (exit code per kind).
    Provider(conformance::Error),
}

impl From<conformance::Error> for Failed {
    fn from(e: conformance::Error) -> Self {
        Failed::Provider(e)
    }
}

/// How a failed manual command is reported: the program once, then the operation,
/// the error's kind, its message and every cause below it
/// (`kvm2: get: NotFound: …: …`), and the exit code.
fn report(failed: &Failed) -> (String, u8) {
    match failed {
        Failed::Usage(m) => (format!("kvm2: {m}"), EXIT_USAGE),
        Failed::Provider(e) => {
            let mut text = format!("kvm2: {}: {}: {}", e.op(), e.kind().name(), e.message());
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                text.push_str(": ");
                text.push_str(&c.to_string());
                cause = c.source();
            }
            (text, exit_code_of(e.kind()))
        }
    }
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.command {
        Command::Conformance(args) => {
            let sub = matches
                .subcommand_matches("conformance")
                .expect("the conformance subcommand was parsed");
            return ExitCode::from(conformance_main(*args, sub));
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "kvm2", &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kvm2: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(code) => code,
        Err(failed) => {
            let (line, code) = report(&failed);
            eprintln!("{line}");
            ExitCode::from(code)
        }
    }
}

/// `kvm2 conformance`: on the embedded fake, or with `--config FILE` on the real
/// hosts of a configuration file. A real host must be marked a test host with
/// `--test-host` (the suite creates, breaks and deletes VMs there); real runs
/// default to 3 rules at once (the fixture lets at most 2 guests boot at a time), 2
/// property cases, 4 interrupted Create steps per step-wise rule and a 15-minute rule
/// limit unless the flags or `CONFORMANCE_*` variables say otherwise.
fn conformance_main(args: ConformanceArgs, matches: &ArgMatches) -> u8 {
    let ConformanceArgs {
        config,
        test_host,
        mut suite,
    } = args;
    let listing = suite.run.list
        || matches!(
            suite.command,
            Some(SuiteCommand::List(_) | SuiteCommand::Catalogue { .. })
        );
    if config.is_some() {
        real_host_defaults(&mut suite, matches);
    }
    record_own_commit(&mut suite);
    let fixture = move || -> Result<Arc<dyn Fixture>, String> {
        let Some(path) = &config else {
            return Ok(Arc::new(kvm2::fixture::Kvm2Fixture::default()));
        };
        let fixture = kvm2::fixture::RealFixture::from_file(path)?;
        if !test_host && !listing {
            return Err(format!(
                "refusing to run the suite against {}: it creates, breaks and deletes VMs \
                 on every host of that configuration. Pass --test-host if these are test hosts.",
                path.display()
            ));
        }
        Ok(Arc::new(fixture))
    };
    conformance::suite::cli::run_suite(suite, &fixture)
}

/// Records the commit kvm2 was built from as the run's provider commit, unless
/// `--provider-commit` (or its variable) names one or the commit is unknown.
fn record_own_commit(suite: &mut SuiteArgs) {
    let run = match &mut suite.command {
        Some(SuiteCommand::Run(run) | SuiteCommand::List(run)) => run,
        _ => &mut suite.run,
    };
    let own = env!("KVM2_GIT_COMMIT");
    if run.provider_commit.is_none() && own != "unknown" {
        run.provider_commit = Some(own.to_owned());
        run.provider_dirty = Some(env!("KVM2_GIT_DIRTY") == "true");
    }
}

/// The defaults of a run on real hosts, for the flags neither given nor set
/// through their `CONFORMANCE_*` variable; `matches` are the `conformance`
/// subcommand's.
fn real_host_defaults(suite: &mut SuiteArgs, matches: &ArgMatches) {
    let (run, m) = match &mut suite.command {
        Some(SuiteCommand::Run(run)) => (run, matches.subcommand_matches("run")),
        Some(SuiteCommand::List(run)) => (run, matches.subcommand_matches("list")),
        _ => (&mut suite.run, Some(matches)),
    };
    if let Some(m) = m {
        run_defaults(run, m);
    }
}

fn run_defaults(run: &mut RunArgs, m: &ArgMatches) {
    let defaulted = |id: &str| m.value_source(id) == Some(ValueSource::DefaultValue);
    if defaulted("concurrency") {
        run.concurrency = 3;
    }
    if defaulted("cases") {
        run.cases = 2;
    }
    if defaulted("steps") {
        run.steps = 4;
    }
    if defaulted("rule_timeout") {
        run.rule_timeout = Secs(Duration::from_secs(15 * 60));
    }
}

fn load(path: &Path) -> Result<Kvm2, Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failed::Usage(format!(
            "cannot read the configuration {}: {e}",
            path.display()
        ))
    })?;
    let config =
        Config::from_yaml(&text).map_err(|e| Failed::Usage(format!("{}: {e}", path.display())))?;
    Ok(Kvm2::new(config, Arc::new(SshDialer::default())))
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("(cannot render: {e})"))
}

/// An instance as `get`, `create` and `list` print it: its fields as they serialise,
/// but `created_at` as RFC 3339 in UTC (fractions of a second kept when there are any)
/// rather than seconds and nanoseconds since the epoch.
fn instance_json(instance: &conformance::Instance) -> serde_json::Value {
    let mut v = serde_json::to_value(instance).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        let created = instance
            .created_at
            .and_then(|t| jiff::Timestamp::try_from(t).ok())
            .map(|ts| serde_json::Value::String(ts.to_string()));
        o.insert(
            "created_at".into(),
            created.unwrap_or(serde_json::Value::Null),
        );
    }
    v
}

/// A listing as `list` prints it, each instance as [`instance_json`] makes it.
fn listing_json(listing: &conformance::Listing) -> serde_json::Value {
    let mut v = serde_json::to_value(listing).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "instances".into(),
            listing.instances.iter().map(instance_json).collect(),
        );
    }
    v
}

/// Room for the operation's own deadlines (image downloads can take minutes).
fn ctx() -> Ctx {
    Ctx::with_timeout(Duration::from_secs(30 * 60))
}

async fn run(command: Command) -> Result<ExitCode, Failed> {
    match command {
        Command::Conformance(_) | Command::Completions { .. } => {
            unreachable!("handled before the runtime starts")
        }
        Command::Check { config } => {
            let p = load(&config.config)?;
            let health = p.checker().expect("kvm2 has a checker").check(&ctx()).await;
            let mut all_ready = true;
            for h in &health {
                all_ready &= h.ready;
                println!("{}", serde_json::to_string(h).unwrap_or_default());
            }
            Ok(exit(all_ready))
        }
        Command::Preflight { config, tag } => {
            preflight(&load(&config.config)?, tag.as_deref()).await
        }
        Command::Create {
            config,
            name,
            uid,
            tag,
            zone,
            image,
            user_data,
        } => {
            let p = load(&config.config)?;
            let cloud_init = match user_data {
                Some(path) => CloudInit::new(std::fs::read_to_string(&path).map_err(|e| {
                    Failed::Usage(format!("cannot read the user data {}: {e}", path.display()))
                })?),
                None => CloudInit::new(String::new()),
            };
            let req = CreateRequest {
                name,
                uid,
                tag,
                placement: zone,
                image,
                cloud_init,
            };
            let id = p.create(&ctx(), &req).await?;
            let instance = p.get(&ctx(), &id).await?;
            println!("{}", json(&instance_json(&instance)));
            Ok(ExitCode::SUCCESS)
        }
        Command::Get { config, id } => {
            let p = load(&config.config)?;
            let instance = p.get(&ctx(), &ProviderId::new(id)).await?;
            println!("{}", json(&instance_json(&instance)));
            Ok(ExitCode::SUCCESS)
        }
        Command::Delete { config, id } => {
            let p = load(&config.config)?;
            p.delete(&ctx(), &ProviderId::new(id.clone())).await?;
            println!("deleted {id}");
            Ok(ExitCode::SUCCESS)
        }
        Command::List { config, tag } => {
            let p = load(&config.config)?;
            let listing = p.list_by_tag(&ctx(), &tag).await?;
            println!("{}", json(&listing_json(&listing)));
            Ok(exit(listing.unreachable.is_empty()))
        }
    }
}

fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_NOT_READY)
    }
}

/// One line of the preflight verdict.
fn verdict(ok: bool, what: &str, detail: &str) -> bool {
    println!("{} {what}: {detail}", if ok { "ok  " } else { "FAIL" });
    ok
}

async fn preflight(p: &Kvm2, tag: Option<&str>) -> Result<ExitCode, Failed> {
    let cfg = p.config();
    let mut ok = true;
    // One instance needs its disk, the seed ISO and, when the image is not
    // cached yet, the image itself: the image size is only known once its
    // download starts, so the free space asked for here is the disk's.
    let needed_gib = cfg.sizes.disk_gib as f64 + 16.0 / 1024.0;
    let health = p.checker().expect("kvm2 has a checker").check(&ctx()).await;
    for h in &health {
        let what = format!("host {}", h.location);
        if !h.ready {
            ok &= verdict(false, &what, &format!("{}: {}", h.reason, h.message));
            continue;
        }
        let version = |key: &str| h.details.get(key).map_or("?", String::as_str);
        ok &= verdict(
            true,
            &what,
            &format!(
                "ready, libvirt {}, hypervisor {}",
                version("libvirtVersion"),
                version("hypervisorVersion")
            ),
        );
        let pool = h.details.get("pool").map_or("?", String::as_str);
        match h
            .details
            .get("poolAvailableGiB")
            .and_then(|v| v.parse::<f64>().ok())
        {
            Some(free) => {
                ok &= verdict(
                    free >= needed_gib,
                    &format!("pool {pool} on {}", h.location),
                    &format!(
                        "{free:.2} GiB free, one instance needs at least {needed_gib:.2} GiB \
                         plus its image when not cached"
                    ),
                );
            }
            None => {
                ok &= verdict(
                    false,
                    &format!("pool {pool} on {}", h.location),
                    "no free space reported",
                );
            }
        }
        if let Some(host) = cfg.hosts.iter().find(|c| c.name == h.location) {
            match kvm2::fixture::real::dial_side(host).await {
                Ok(client) => {
                    ok &= firmware(cfg, &host.name, &client).await;
                    ok &= bridge(cfg, &host.name, &client).await;
                }
                Err(e) => {
                    ok &= verdict(false, &format!("libvirt on {}", host.name), &e.to_string())
                }
            }
        }
    }
    match tag {
        Some(tag) => match p.list_by_tag(&ctx(), tag).await {
            Ok(listing) => {
                let names: Vec<&str> = listing.instances.iter().map(|i| i.id.as_str()).collect();
                ok &= verdict(
                    names.is_empty(),
                    &format!("leftovers tagged {tag}"),
                    &if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    },
                );
            }
            Err(e) => ok &= verdict(false, &format!("leftovers tagged {tag}"), &e.chain()),
        },
        None => println!("skip leftovers: no --tag given"),
    }
    Ok(exit(ok))
}

/// Whether `host` offers UEFI firmware (OVMF) to domains of the configured
/// type, when an image boots with it: libvirt's domain capabilities list `efi`
/// among the firmware kinds only when a firmware descriptor is installed.
async fn firmware(cfg: &kvm2::Config, host: &str, client: &libvirt_rpc::Client) -> bool {
    let what = format!("UEFI firmware on {host}");
    let efi: Vec<&str> = cfg
        .images
        .iter()
        .filter(|i| i.firmware == kvm2::config::Firmware::Efi)
        .map(|i| i.name.as_str())
        .collect();
    if efi.is_empty() {
        println!("skip {what}: no image boots with UEFI");
        return true;
    }
    let virttype = cfg.domain_type.as_str();
    match client
        .connect_get_domain_capabilities(Some(virttype), None)
        .await
    {
        Ok(xml) if xml.contains("<value>efi</value>") => verdict(
            true,
            &what,
            &format!("offered to {virttype} domains (images {})", efi.join(", ")),
        ),
        Ok(_) => verdict(
            false,
            &what,
            &format!(
                "not offered to {virttype} domains, which images {} need (is OVMF installed?)",
                efi.join(", ")
            ),
        ),
        Err(e) => verdict(false, &what, &format!("domain capabilities: {e}")),
    }
}

/// Whether `host` has the configured bridge, the one every guest's interface
/// joins, as a bridge. libvirt's interface driver answers this; on a host
/// without it the check is skipped (a Create then fails with libvirt's own
/// error when the bridge is missing).
async fn bridge(cfg: &kvm2::Config, host: &str, client: &libvirt_rpc::Client) -> bool {
    let what = format!("bridge {} on {host}", cfg.bridge);
    let code = |e: &libvirt_rpc::Error| e.as_remote().map(|r| r.code);
    let iface = match client.interface_lookup_by_name(&cfg.bridge).await {
        Ok(iface) => iface,
        Err(e) if code(&e) == Some(ErrorCode::NoSupport) => {
            println!(
                "skip {what}: the host's libvirt has no interface driver \
                 (libvirt-daemon-driver-interface)"
            );
            return true;
        }
        Err(e) if code(&e) == Some(ErrorCode::NoInterface) => {
            return verdict(
                false,
                &what,
                "no such interface on the host; every guest joins it",
            );
        }
        Err(e) => return verdict(false, &what, &e.to_string()),
    };
    let xml = match client.interface_get_xml_desc(&iface).await {
        Ok(xml) => xml,
        Err(e) => return verdict(false, &what, &e.to_string()),
    };
    let kind = match kvm2::xml::root_attribute(&xml, "type") {
        Some((root, kind)) if root == "interface" => kind,
        _ => None,
    };
    if kind.as_deref() != Some("bridge") {
        let kind = kind.as_deref().unwrap_or("unknown");
        return verdict(
            false,
            &what,
            &format!("is an interface of type {kind}, not a bridge"),
        );
    }
    match client.interface_is_active(&iface).await {
        Ok(true) => verdict(true, &what, "a bridge, up"),
        Ok(false) => verdict(
            true,
            &what,
            "a bridge, not active yet (libvirt counts a bridge active once a running guest joins it)",
        ),
        Err(e) => verdict(false, &what, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `conformance` subcommand's arguments and matches for `args`.
    fn conformance(args: &[&str]) -> (SuiteArgs, ArgMatches) {
        let matches = Cli::command()
            .try_get_matches_from(["kvm2", "conformance"].iter().chain(args))
            .unwrap();
        let Command::Conformance(c) = Cli::from_arg_matches(&matches).unwrap().command else {
            panic!("not the conformance command");
        };
        (
            c.suite,
            matches.subcommand_matches("conformance").unwrap().clone(),
        )
    }

    fn settings(run: &RunArgs) -> (u64, u32, u32, Duration) {
        (run.concurrency, run.cases, run.steps, run.rule_timeout.0)
    }

    /// Real hosts get their own defaults, but never over a flag the user gave,
    /// before or after the `run`/`list` subcommand.
    #[test]
    fn real_host_defaults_yield_to_given_flags() {
        let (mut suite, m) = conformance(&["--config", "k.yaml", "--cases", "5"]);
        real_host_defaults(&mut suite, &m);
        assert_eq!(settings(&suite.run), (3, 5, 4, Duration::from_secs(900)));
        let (mut suite, m) = conformance(&["run", "--rule-timeout", "1m", "--config", "k.yaml"]);
        real_host_defaults(&mut suite, &m);
        let Some(SuiteCommand::Run(run)) = &suite.command else {
            panic!("not run");
        };
        assert_eq!(settings(run), (3, 2, 4, Duration::from_secs(60)));
    }

    #[test]
    fn config_and_test_host_are_flags_of_conformance() {
        let help = Cli::command()
            .find_subcommand_mut("conformance")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(
            help.contains("--config <FILE>") && help.contains("--test-host"),
            "{help}"
        );
        let e = Cli::command()
            .try_get_matches_from(["kvm2", "conformance", "--test-host"])
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        Cli::command().debug_assert();
    }

    /// Each kind has its own exit code, none of them 0, 1 or 2.
    #[test]
    fn errors_print_program_operation_kind_and_message_once() {
        let quota = conformance::Quota {
            what: "pool".into(),
            available: 1,
            needed: 2,
        };
        let mut codes = std::collections::BTreeSet::new();
        for kind in [
            ErrorKind::NotFound,
            ErrorKind::Transient,
            ErrorKind::Permanent,
            ErrorKind::QuotaExceeded(quota),
        ] {
            let name = kind.name();
            let e =
                conformance::Error::new("kvm2-home", conformance::Op::Get, kind, "no such domain");
            let (line, code) = report(&Failed::Provider(e));
            assert_eq!(line, format!("kvm2: get: {name}: no such domain"));
            assert!(code > EXIT_USAGE, "{name}: {code}");
            codes.insert(code);
        }
        assert_eq!(codes.len(), 4);
        assert_eq!(
            report(&Failed::Usage("x".into())),
            ("kvm2: x".to_owned(), EXIT_USAGE)
        );
    }
}
