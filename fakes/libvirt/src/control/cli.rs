//! `fake-libvirtd ctl`: one subcommand per control request, each turned
//! into a [`Request`], sent, and its answer printed (the trace as one line
//! per call, a dump as a state file, anything else as its JSON).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::client::ControlClient;
use super::proto::{
    Code, DialModeSpec, ErrorSpec, FaultSpec, Request, Response, RuleSpec, TriggerSpec,
};

/// Talks to a running daemon's control socket.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The daemon's control socket (its `--control PATH`).
    #[arg(long, value_name = "PATH", env = "FAKE_LIBVIRTD_CONTROL")]
    pub control: PathBuf,
    /// What to do.
    #[command(subcommand)]
    pub command: CtlCommand,
}

/// The control commands.
#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// Checks the daemon answers.
    Ping,
    /// Fault rules: add, fired, remove, clear.
    #[command(subcommand)]
    Fault(FaultCommand),
    /// Prints the calls since a mark: seq, connection, procedure, fault.
    Trace {
        /// Start at this mark (a `mark`, or the `next` of an earlier trace).
        #[arg(long, default_value_t = 0)]
        since: u64,
        /// Print the reply's JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Prints the mark the next call will take.
    Mark,
    /// Lists every connection dialled.
    Connections,
    /// Closes open connections (all without ids).
    CloseConnections {
        /// Connection ids, as the trace names them.
        ids: Vec<u64>,
    },
    /// How new connections are answered: accept, refuse, black-hole.
    DialMode {
        /// The mode.
        #[arg(value_parser = ["accept", "refuse", "black-hole"])]
        mode: String,
    },
    /// Restarts the daemon as libvirtd restarts: the state stays, open
    /// connections are closed.
    Restart {
        /// Leave them open, never answered again.
        #[arg(long)]
        keep_connections: bool,
    },
    /// Makes the daemon answer nothing until `restart`.
    Wedge,
    /// Holds the boot of a domain (of every domain without a name).
    HoldBoot {
        /// The domain.
        name: Option<String>,
    },
    /// Releases a held boot (every boot without a name).
    ReleaseBoot {
        /// The domain.
        name: Option<String>,
    },
    /// Makes a domain report an IPv4 address (agent and ARP).
    SetIpv4 {
        /// The domain.
        name: String,
        /// The address.
        addr: String,
    },
    /// Sets a domain's state: running, paused, shutoff, crashed, …
    SetState {
        /// The domain.
        name: String,
        /// The state.
        state: String,
        /// The state reason (default 1).
        #[arg(long)]
        reason: Option<i32>,
    },
    /// Sets a pool's capacity in bytes.
    PoolCapacity {
        /// The pool.
        pool: String,
        /// Bytes.
        bytes: u64,
    },
    /// Makes a pool report this many free bytes.
    PoolAvailable {
        /// The pool.
        pool: String,
        /// Bytes.
        bytes: u64,
    },
    /// Defines a domain from an XML file, out of band.
    Define {
        /// The domain XML file.
        file: PathBuf,
        /// Start it too.
        #[arg(long)]
        running: bool,
    },
    /// Removes a domain out of band, whatever its state.
    RemoveDomain {
        /// The domain.
        name: String,
    },
    /// Creates a volume out of band.
    VolCreate {
        /// The pool.
        pool: String,
        /// The volume.
        name: String,
        /// Its capacity in bytes.
        bytes: u64,
        /// raw (default) or qcow2.
        #[arg(long)]
        format: Option<String>,
    },
    /// Removes a volume out of band.
    VolRemove {
        /// The pool.
        pool: String,
        /// The volume.
        name: String,
    },
    /// Lists every domain, pool and volume.
    Inventory,
    /// Prints a domain's XML (persistent, then running).
    DumpXml {
        /// The domain.
        name: String,
    },
    /// Prints the host as a state file (for `--state`).
    Dump,
    /// Sends one request as JSON, e.g. '{"cmd":"set_arp_failure","fail":true}'.
    Raw {
        /// The request line.
        json: String,
    },
}

/// The fault subcommands.
#[derive(Debug, Subcommand)]
pub enum FaultCommand {
    /// Adds a rule; prints its id.
    Add(FaultAdd),
    /// Whether a rule fired, and how often.
    Fired {
        /// Its id.
        id: u64,
    },
    /// Takes one rule out.
    Remove {
        /// Its id.
        id: u64,
    },
    /// Removes every rule and closes the connections holding a hung call.
    Clear {
        /// Leave the hung calls hanging.
        #[arg(long)]
        keep_hung: bool,
    },
}

/// One rule: a trigger (`--procedure`, `--nth`, both, or `--always`), a fault
/// (`--error`, `--delay-ms`, `--hang`, `--drop` or `--lose-reply`), and limits.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("trigger").required(true).multiple(true).args(["procedure", "nth", "always"])))]
#[command(group(clap::ArgGroup::new("fault").required(true).args(["error", "delay_ms", "hang", "drop", "lose_reply"])))]
pub struct FaultAdd {
    /// Hit calls of this procedure, by API name (DomainCreate).
    #[arg(long, value_name = "NAME")]
    pub procedure: Option<String>,
    /// Hit the n-th call (of `--procedure`, or of any procedure) from now.
    #[arg(long, value_name = "N")]
    pub nth: Option<u64>,
    /// Hit every call.
    #[arg(long, conflicts_with_all = ["procedure", "nth"])]
    pub always: bool,
    /// Fail with this libvirt error code (a number or a VIR_ERR_* name).
    #[arg(long, value_name = "CODE")]
    pub error: Option<String>,
    /// The error's domain (a number or a VIR_FROM_* name).
    #[arg(long, value_name = "DOMAIN", requires = "error")]
    pub domain: Option<String>,
    /// The error's detail text.
    #[arg(long, value_name = "TEXT", requires = "error")]
    pub message: Option<String>,
    /// Hold the call this long.
    #[arg(long, value_name = "MS")]
    pub delay_ms: Option<u64>,
    /// Never answer the call.
    #[arg(long)]
    pub hang: bool,
    /// Close the connection under the call.
    #[arg(long)]
    pub drop: bool,
    /// Run the call, then close the connection before its reply.
    #[arg(long)]
    pub lose_reply: bool,
    /// Fire at most once.
    #[arg(long)]
    pub once: bool,
    /// Only calls about the domain, pool or volume of this name.
    #[arg(long, value_name = "NAME")]
    pub object: Option<String>,
    /// Only calls on this connection.
    #[arg(long, value_name = "ID")]
    pub connection: Option<u64>,
}

fn code(s: &str) -> Code {
    s.parse()
        .map(Code::Number)
        .unwrap_or(Code::Name(s.to_owned()))
}

impl FaultAdd {
    fn rule(&self) -> RuleSpec {
        let trigger = match (&self.procedure, self.nth) {
            (Some(name), Some(n)) => TriggerSpec::NthCallOf {
                name: name.clone(),
                n,
            },
            (Some(name), None) => TriggerSpec::Procedure { name: name.clone() },
            (None, Some(n)) => TriggerSpec::NthCall { n },
            (None, None) => TriggerSpec::Always,
        };
        let fault = if let Some(c) = &self.error {
            FaultSpec::Error {
                error: ErrorSpec {
                    code: code(c),
                    domain: self.domain.as_deref().map(code),
                    message: self.message.clone(),
                },
            }
        } else if let Some(millis) = self.delay_ms {
            FaultSpec::Delay { millis }
        } else if self.hang {
            FaultSpec::Hang
        } else if self.drop {
            FaultSpec::DropConnection
        } else {
            FaultSpec::LoseReply
        };
        RuleSpec {
            trigger,
            fault,
            once: self.once,
            object: self.object.clone(),
            connection: self.connection,
        }
    }
}

impl CtlCommand {
    /// The request this command sends.
    pub fn request(&self) -> Result<Request, String> {
        use CtlCommand as C;
        Ok(match self {
            C::Ping => Request::Ping {},
            C::Fault(FaultCommand::Add(a)) => Request::FaultAdd { rule: a.rule() },
            C::Fault(FaultCommand::Fired { id }) => Request::FaultFired { id: *id },
            C::Fault(FaultCommand::Remove { id }) => Request::FaultRemove { id: *id },
            C::Fault(FaultCommand::Clear { keep_hung }) => Request::FaultClear {
                release_hung: !keep_hung,
            },
            C::Trace { since, .. } => Request::Trace { since: *since },
            C::Mark => Request::Mark {},
            C::Connections => Request::Connections {},
            C::CloseConnections { ids } => Request::CloseConnections {
                ids: (!ids.is_empty()).then(|| ids.clone()),
            },
            C::DialMode { mode } => Request::SetDialMode {
                mode: match mode.as_str() {
                    "refuse" => DialModeSpec::Refuse,
                    "black-hole" => DialModeSpec::BlackHole,
                    _ => DialModeSpec::Accept,
                },
            },
            C::Restart { keep_connections } => Request::Restart {
                keep_connections: *keep_connections,
            },
            C::Wedge => Request::Wedge {},
            C::HoldBoot { name } => Request::HoldBoot {
                name: name.clone(),
                hold: true,
            },
            C::ReleaseBoot { name } => Request::HoldBoot {
                name: name.clone(),
                hold: false,
            },
            C::SetIpv4 { name, addr } => Request::SetIpv4 {
                name: name.clone(),
                addr: addr.clone(),
            },
            C::SetState {
                name,
                state,
                reason,
            } => Request::SetDomainState {
                name: name.clone(),
                state: state.clone(),
                reason: *reason,
            },
            C::PoolCapacity { pool, bytes } => Request::SetPoolCapacity {
                pool: pool.clone(),
                capacity: *bytes,
            },
            C::PoolAvailable { pool, bytes } => Request::SetPoolAvailable {
                pool: pool.clone(),
                available: *bytes,
            },
            C::Define { file, running } => Request::DefineDomain {
                xml: std::fs::read_to_string(file)
                    .map_err(|e| format!("failed to read {}: {e}", file.display()))?,
                running: *running,
            },
            C::RemoveDomain { name } => Request::RemoveDomain { name: name.clone() },
            C::VolCreate {
                pool,
                name,
                bytes,
                format,
            } => Request::CreateVolume {
                pool: pool.clone(),
                name: name.clone(),
                capacity: *bytes,
                format: format.clone(),
            },
            C::VolRemove { pool, name } => Request::RemoveVolume {
                pool: pool.clone(),
                name: name.clone(),
            },
            C::Inventory => Request::Inventory {},
            C::DumpXml { name } => Request::DomainXml { name: name.clone() },
            C::Dump => Request::Dump {},
            C::Raw { json } => super::proto::decode_request(json)?,
        })
    }
}

/// Runs one `ctl` command; what it prints goes to stdout.
pub fn run_ctl(args: &CtlArgs) -> Result<String, String> {
    let req = args.command.request()?;
    let mut client = ControlClient::connect(&args.control)?;
    let reply = client.call(&req)?;
    Ok(match (&args.command, reply) {
        (
            CtlCommand::Trace { json: false, .. },
            Response::Trace {
                calls,
                next,
                forgotten,
            },
        ) => {
            let mut out = String::new();
            if forgotten > 0 {
                out.push_str(&format!(
                    "# {forgotten} calls after the mark were forgotten\n"
                ));
            }
            for c in calls {
                out.push_str(&format!(
                    "{} conn={} {}{}\n",
                    c.seq,
                    c.connection,
                    c.procedure,
                    c.fault.map(|f| format!(" fault={f}")).unwrap_or_default()
                ));
            }
            out.push_str(&format!("# next mark: {next}\n"));
            out
        }
        (_, Response::Fault { id }) => format!("{id}\n"),
        (_, Response::Mark { mark }) => format!("{mark}\n"),
        (_, Response::State { state }) => pretty(&state),
        (_, Response::Xml { config, live }) => format!("{config}{}", live.unwrap_or_default()),
        (_, r) => pretty(&r),
    })
}

/// Pretty JSON with a final newline.
fn pretty<T: serde::Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}
