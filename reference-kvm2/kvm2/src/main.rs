//! The `kvm2` command.
//!
//! - `kvm2 conformance [suite options]` runs the conformance suite against
//!   kvm2 on the embedded in-memory libvirt hosts and writes the report;
//!   `kvm2 conformance --config FILE --test-host [suite options]` runs it against
//!   the real hosts of a configuration file.
//! - `kvm2 check|preflight|create|get|delete|list --config FILE` drive the
//!   provider against the hosts of a configuration file, over SSH, for
//!   manual use and for checking a host before anything touches it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use conformance::{CloudInit, CreateRequest, Ctx, Provider, ProviderId};
use kvm2::{Config, Kvm2, SshDialer};
use libvirt_wire::ErrorCode;

/// What the manual commands accept; `conformance` is passed on to the suite's
/// own parser before this one runs.
#[derive(Parser)]
#[command(
    name = "kvm2",
    about = "The kvm2 provider: libvirt hosts over SSH",
    after_help = "kvm2 conformance [options] runs the conformance suite on the embedded fake \
                  (see `kvm2 conformance --help`)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every configured host: SSH, libvirt, the pool (prints one JSON line per host).
    Check {
        /// The YAML configuration with a `kvm2:` block.
        #[arg(long)]
        config: PathBuf,
    },
    /// Check a host before anything touches it: readiness, free space for one
    /// instance, and instances an earlier run left behind under a tag.
    Preflight {
        /// The YAML configuration with a `kvm2:` block.
        #[arg(long)]
        config: PathBuf,
        /// The tag whose instances count as leftovers.
        #[arg(long)]
        tag: Option<String>,
    },
    /// Create (or adopt) an instance and wait until it runs with an address.
    Create {
        /// The YAML configuration with a `kvm2:` block.
        #[arg(long)]
        config: PathBuf,
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
        /// The YAML configuration with a `kvm2:` block.
        #[arg(long)]
        config: PathBuf,
        /// The instance ID.
        id: String,
    },
    /// Delete an instance by ID; deleting a missing one succeeds.
    Delete {
        /// The YAML configuration with a `kvm2:` block.
        #[arg(long)]
        config: PathBuf,
        /// The instance ID.
        id: String,
    },
    /// List the instances carrying a tag on every configured host.
    List {
        /// The YAML configuration with a `kvm2:` block.
        #[arg(long)]
        config: PathBuf,
        /// The tag.
        #[arg(long)]
        tag: String,
    },
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) == Some("conformance") {
        let program = args.remove(0);
        args[0] = format!("{} conformance", program.to_string_lossy()).into();
        return conformance_main(args);
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kvm2: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("kvm2: {message}");
            ExitCode::from(1)
        }
    }
}

/// `kvm2 conformance`: on the embedded fake, or with `--config FILE` on the real
/// hosts of a configuration file. A real host must be marked a test host with
/// `--test-host` (the suite creates, breaks and deletes VMs there); real runs
/// default to 3 rules at once (the fixture lets at most 2 guests boot at a time), 2
/// property cases, 4 interrupted Create steps per step-wise rule and a 15-minute rule
/// limit unless the flags or `CONFORMANCE_*` variables say otherwise.
fn conformance_main(mut args: Vec<OsString>) -> ExitCode {
    let mut config: Option<PathBuf> = None;
    let mut test_host = false;
    let mut rest: Vec<OsString> = Vec::with_capacity(args.len());
    let mut it = args.drain(..);
    while let Some(a) = it.next() {
        let text = a.to_string_lossy().into_owned();
        if text == "--config" {
            match it.next() {
                Some(v) => config = Some(PathBuf::from(v)),
                None => {
                    eprintln!("error: --config needs a file");
                    return ExitCode::from(conformance::suite::cli::EXIT_USAGE);
                }
            }
        } else if let Some(v) = text.strip_prefix("--config=") {
            config = Some(PathBuf::from(v));
        } else if text == "--test-host" {
            test_host = true;
        } else {
            rest.push(a);
        }
    }
    drop(it);
    let Some(path) = config else {
        if test_host {
            eprintln!("error: --test-host needs --config FILE");
            return ExitCode::from(conformance::suite::cli::EXIT_USAGE);
        }
        let fixture = Arc::new(kvm2::fixture::Kvm2Fixture::default());
        return ExitCode::from(conformance::suite::cli::main_with(fixture, rest));
    };
    let fixture = match kvm2::real_fixture::RealFixture::from_file(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(conformance::suite::cli::EXIT_USAGE);
        }
    };
    let listing_or_help = rest.iter().any(|a| {
        matches!(
            a.to_str(),
            Some("--list" | "--help" | "-h" | "--version" | "-V")
        )
    });
    if !test_host && !listing_or_help {
        eprintln!(
            "error: refusing to run the suite against {}: it creates, breaks and deletes VMs \
             on every host of that configuration. Pass --test-host if these are test hosts.",
            path.display()
        );
        return ExitCode::from(conformance::suite::cli::EXIT_USAGE);
    }
    for (flag, env, value) in [
        ("--concurrency", "CONFORMANCE_CONCURRENCY", "3"),
        ("--cases", "CONFORMANCE_CASES", "2"),
        ("--steps", "CONFORMANCE_STEPS", "4"),
        ("--rule-timeout", "CONFORMANCE_RULE_TIMEOUT", "900"),
    ] {
        let given = rest.iter().any(|a| {
            a.to_str()
                .is_some_and(|a| a == flag || a.starts_with(&format!("{flag}=")))
        }) || std::env::var_os(env).is_some();
        if !given {
            rest.push(flag.into());
            rest.push(value.into());
        }
    }
    ExitCode::from(conformance::suite::cli::main_with(Arc::new(fixture), rest))
}

fn load(path: &Path) -> Result<Kvm2, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the configuration {}: {e}", path.display()))?;
    let config = Config::from_yaml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Kvm2::new(config, Arc::new(SshDialer::default())))
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("(cannot render: {e})"))
}

/// Room for the operation's own deadlines (image downloads can take minutes).
fn ctx() -> Ctx {
    Ctx::with_timeout(Duration::from_secs(30 * 60))
}

async fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Check { config } => {
            let p = load(&config)?;
            let health = p.checker().expect("kvm2 has a checker").check(&ctx()).await;
            let mut all_ready = true;
            for h in &health {
                all_ready &= h.ready;
                println!("{}", serde_json::to_string(h).map_err(|e| e.to_string())?);
            }
            Ok(exit(all_ready))
        }
        Command::Preflight { config, tag } => preflight(&load(&config)?, tag.as_deref()).await,
        Command::Create {
            config,
            name,
            uid,
            tag,
            zone,
            image,
            user_data,
        } => {
            let p = load(&config)?;
            let cloud_init =
                match user_data {
                    Some(path) => CloudInit::new(std::fs::read_to_string(&path).map_err(|e| {
                        format!("cannot read the user data {}: {e}", path.display())
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
            let id = p.create(&ctx(), &req).await.map_err(|e| e.to_string())?;
            let instance = p.get(&ctx(), &id).await.map_err(|e| e.to_string())?;
            println!("{}", json(&instance));
            Ok(ExitCode::SUCCESS)
        }
        Command::Get { config, id } => {
            let p = load(&config)?;
            let instance = p
                .get(&ctx(), &ProviderId::new(id))
                .await
                .map_err(|e| e.to_string())?;
            println!("{}", json(&instance));
            Ok(ExitCode::SUCCESS)
        }
        Command::Delete { config, id } => {
            let p = load(&config)?;
            p.delete(&ctx(), &ProviderId::new(id.clone()))
                .await
                .map_err(|e| e.to_string())?;
            println!("deleted {id}");
            Ok(ExitCode::SUCCESS)
        }
        Command::List { config, tag } => {
            let p = load(&config)?;
            let listing = p
                .list_by_tag(&ctx(), &tag)
                .await
                .map_err(|e| e.to_string())?;
            println!("{}", json(&listing));
            Ok(exit(listing.unreachable.is_empty()))
        }
    }
}

fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// One line of the preflight verdict.
fn verdict(ok: bool, what: &str, detail: &str) -> bool {
    println!("{} {what}: {detail}", if ok { "ok  " } else { "FAIL" });
    ok
}

async fn preflight(p: &Kvm2, tag: Option<&str>) -> Result<ExitCode, String> {
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
        let version = h.details.get("libvirtVersion").map_or("?", String::as_str);
        ok &= verdict(true, &what, &format!("ready, libvirt {version}"));
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
            match kvm2::real_fixture::dial_side(host).await {
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
            Err(e) => ok &= verdict(false, &format!("leftovers tagged {tag}"), &e.to_string()),
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
