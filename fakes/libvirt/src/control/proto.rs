//! The control protocol's messages: one [`Request`] per line from the client,
//! one [`Reply`] per line back. This file is the protocol's whole schema; the
//! crate README's section on the control socket lists the requests.

use serde::{Deserialize, Serialize};

use crate::state_file::StateFile;

/// The longest request line the server reads (inline domain XML included).
pub const MAX_LINE: usize = 1 << 20;

/// One request: `{"cmd": "<name>", ...fields}`. Requests without fields
/// are empty struct variants so that a stray field is refused too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Answers `pong` with the daemon's version.
    Ping {},
    /// Adds a fault rule; answers its id.
    FaultAdd {
        /// The rule.
        rule: RuleSpec,
    },
    /// Queues one entry of the fault script (`fault` absent: one call passes).
    FaultPush {
        /// What the next call not yet scripted gets.
        #[serde(default)]
        fault: Option<FaultSpec>,
    },
    /// Adds a seeded random rule.
    FaultRandom {
        /// The generator's seed.
        seed: u64,
        /// The chance each call is hit, 0 to 1.
        probability: f64,
        /// The faults drawn from, uniformly.
        faults: Vec<FaultSpec>,
        /// The procedures (API names) it applies to; absent: every call.
        #[serde(default)]
        procedures: Option<Vec<String>>,
    },
    /// Makes the next upload stream fail once this many bytes arrived.
    FaultStreamError {
        /// Bytes accepted before the error.
        after_bytes: u64,
        /// The stream error.
        error: ErrorSpec,
    },
    /// Whether (and how often) an injection fired.
    FaultFired {
        /// The id `fault_add` (or push, random, stream error) answered.
        id: u64,
    },
    /// Takes one injection out.
    FaultRemove {
        /// Its id.
        id: u64,
    },
    /// Removes every injection; by default also closes the connections that
    /// carry a hung call, so their clients are released.
    FaultClear {
        /// Close the connections with a hung call (default true).
        #[serde(default = "yes")]
        release_hung: bool,
    },
    /// The calls from position `since` on (default 0).
    Trace {
        /// A mark (`mark`, or a previous trace's `next`).
        #[serde(default)]
        since: u64,
    },
    /// The position the next call will take.
    Mark {},
    /// Every connection dialled so far.
    Connections {},
    /// Closes open connections (`ids` absent: all of them).
    CloseConnections {
        /// The connection ids, as the trace names them.
        #[serde(default)]
        ids: Option<Vec<u64>>,
    },
    /// How new connections are answered.
    SetDialMode {
        /// `accept`, `refuse` or `black_hole`.
        mode: DialModeSpec,
    },
    /// What killing and starting libvirtd again does: the host's state is
    /// kept, a wedge is cleared, and the open connections are closed, as the
    /// end of libvirtd's process closes its sockets.
    Restart {
        /// Leave the open connections open and silent instead: they are
        /// never answered again (the in-process handle's model).
        #[serde(default)]
        keep_connections: bool,
    },
    /// Makes the daemon answer nothing more until `restart`.
    Wedge {},
    /// Holds or releases the boot of one domain (by name, whether or not it
    /// exists yet) or of all.
    HoldBoot {
        /// The domain; absent: every domain.
        #[serde(default)]
        name: Option<String>,
        /// Hold (true) or release (false).
        hold: bool,
    },
    /// Sets the interfaces a domain reports from one address source (the
    /// domain must exist; so for the other address requests).
    SetAddresses {
        /// The domain.
        name: String,
        /// `agent`, `lease` or `arp`.
        source: SourceSpec,
        /// The interfaces.
        interfaces: Vec<InterfaceSpec>,
    },
    /// Makes a domain report one IPv4 address from the agent and ARP.
    SetIpv4 {
        /// The domain.
        name: String,
        /// The address, e.g. `192.168.122.10`.
        addr: String,
    },
    /// Drops the interfaces set for one source.
    ClearAddresses {
        /// The domain.
        name: String,
        /// The source.
        source: SourceSpec,
    },
    /// Makes a domain's guest agent never answer (or answer again).
    SetAgentUnresponsive {
        /// The domain.
        name: String,
        /// Whether it stops answering.
        unresponsive: bool,
    },
    /// Makes the ARP address source fail (or work again).
    SetArpFailure {
        /// Whether it fails.
        fail: bool,
    },
    /// Sets a domain's state out of band.
    SetDomainState {
        /// The domain.
        name: String,
        /// `running`, `paused`, `shutoff`, … (libvirt's state names).
        state: String,
        /// The state reason (default 1: booted, user, shutdown).
        #[serde(default)]
        reason: Option<i32>,
    },
    /// Sets a pool's capacity in bytes.
    SetPoolCapacity {
        /// The pool.
        pool: String,
        /// Bytes.
        capacity: u64,
    },
    /// Makes a pool report exactly this many free bytes.
    SetPoolAvailable {
        /// The pool.
        pool: String,
        /// Bytes.
        available: u64,
    },
    /// Starts or stops a pool.
    SetPoolActive {
        /// The pool.
        pool: String,
        /// Whether it is active.
        active: bool,
    },
    /// Adds an active directory pool (or updates an existing one).
    AddPool {
        /// Its name.
        name: String,
        /// Its target path (a name only).
        path: String,
        /// Its capacity in bytes.
        capacity: u64,
    },
    /// Removes a pool and its volumes.
    RemovePool {
        /// The pool.
        name: String,
    },
    /// Defines a domain out of band, with the rules of a define call.
    DefineDomain {
        /// The domain XML.
        xml: String,
        /// Start it too.
        #[serde(default)]
        running: bool,
    },
    /// Removes a domain out of band, whatever its state.
    RemoveDomain {
        /// The domain.
        name: String,
    },
    /// Creates a volume out of band, with the rules of a create call.
    CreateVolume {
        /// The pool.
        pool: String,
        /// The volume's name.
        name: String,
        /// Its capacity in bytes.
        capacity: u64,
        /// `raw` (default) or `qcow2`.
        #[serde(default)]
        format: Option<String>,
    },
    /// Removes a volume out of band.
    RemoveVolume {
        /// The pool.
        pool: String,
        /// The volume.
        name: String,
    },
    /// Every domain, pool and volume.
    Inventory {},
    /// A domain's definitions as `virDomainGetXMLDesc` gives them, metadata
    /// included.
    DomainXml {
        /// The domain.
        name: String,
    },
    /// The host in the state-file format (loadable with `--state`).
    Dump {},
    /// Sets the network round trip added to every call.
    SetLatency {
        /// Milliseconds.
        millis: u64,
    },
    /// Sets how long after a start the guest agent begins to answer.
    SetAgentBootDelay {
        /// Milliseconds.
        millis: u64,
    },
}

fn yes() -> bool {
    true
}

/// A fault rule: which calls it hits and what it does to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Which calls.
    pub trigger: TriggerSpec,
    /// What happens to them.
    pub fault: FaultSpec,
    /// Fire at most once.
    #[serde(default)]
    pub once: bool,
    /// Only calls about the domain, pool or volume of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Only calls on this connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<u64>,
}

/// Which calls a rule applies to; procedures by their API name
/// (`DomainCreate`, as libvirt-wire's table and the trace name them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TriggerSpec {
    /// Every call.
    Always,
    /// The n-th call (1-based) from now.
    NthCall {
        /// n.
        n: u64,
    },
    /// Every call of a procedure.
    Procedure {
        /// Its API name.
        name: String,
    },
    /// The n-th call (1-based) of a procedure from now.
    NthCallOf {
        /// Its API name.
        name: String,
        /// n.
        n: u64,
    },
}

/// What a fault does to the call it hits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// The call fails with this libvirt error; nothing changes.
    Error {
        /// The error.
        #[serde(flatten)]
        error: ErrorSpec,
    },
    /// The call is held this long, then runs.
    Delay {
        /// Milliseconds.
        millis: u64,
    },
    /// The call never answers (until `fault_clear` closes its connection).
    Hang,
    /// The connection is closed under the call; the call has no effect.
    DropConnection,
    /// The call runs, then the connection is closed before its reply.
    LoseReply,
}

/// A libvirt error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    /// `virErrorNumber`: a number (55) or a name (`VIR_ERR_OPERATION_INVALID`
    /// or `OperationInvalid`).
    pub code: Code,
    /// `virErrorDomain`, a number or a name (default `VIR_FROM_NONE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<Code>,
    /// The detail after the code's standard prefix (default `injected fault`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A libvirt enumeration value, by number or by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Code {
    /// Its number.
    Number(i32),
    /// Its name.
    Name(String),
}

/// How new connections are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DialModeSpec {
    /// Served.
    Accept,
    /// Closed at once.
    Refuse,
    /// Accepted and never answered.
    BlackHole,
}

/// Where `virDomainInterfaceAddresses` takes its answer from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceSpec {
    /// DHCP leases.
    Lease,
    /// The guest agent.
    Agent,
    /// The host's ARP table.
    Arp,
}

/// One interface a domain reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceSpec {
    /// Its name.
    pub name: String,
    /// Its MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hwaddr: Option<String>,
    /// Its addresses, `ADDR/PREFIX` (IPv4 or IPv6).
    pub addrs: Vec<String>,
}

/// One line back: `{"ok": true, "result": {...}}` or
/// `{"ok": false, "error": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Whether the request was carried out.
    pub ok: bool,
    /// What it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Response>,
    /// Why it was refused; nothing was changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a request answers: `{"reply": "<name>", ...fields}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Response {
    /// Done; nothing to say.
    Done,
    /// The answer to `ping`.
    Pong {
        /// The daemon's version.
        version: String,
    },
    /// An injection's id.
    Fault {
        /// The id.
        id: u64,
    },
    /// Whether an injection fired.
    Fired {
        /// At least once.
        fired: bool,
        /// How many calls it hit.
        count: u64,
    },
    /// Connections closed.
    Closed {
        /// Their ids.
        connections: Vec<u64>,
    },
    /// Calls from a mark.
    Trace {
        /// The calls, in arrival order.
        calls: Vec<CallRecord>,
        /// The mark for the next read.
        next: u64,
        /// Calls after `since` already forgotten (the trace keeps the latest
        /// `--trace-limit`).
        forgotten: u64,
    },
    /// A trace position.
    Mark {
        /// The position the next call will take.
        mark: u64,
    },
    /// Every connection.
    Connections {
        /// In dial order.
        connections: Vec<ConnectionRecord>,
    },
    /// A domain defined.
    Domain {
        /// Its name.
        name: String,
        /// Its UUID.
        uuid: String,
    },
    /// Everything on the host.
    Inventory(Inventory),
    /// A domain's XML.
    Xml {
        /// The persistent definition (`VIR_DOMAIN_XML_INACTIVE`).
        config: String,
        /// The running definition, while it runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        live: Option<String>,
    },
    /// The host in the state-file format.
    State {
        /// The document.
        state: StateFile,
    },
}

/// One call that reached the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Its position in the trace.
    pub seq: u64,
    /// The connection it came on.
    pub connection: u64,
    /// The procedure's API name (`DomainCreate`).
    pub procedure: String,
    /// The procedure number.
    pub number: i32,
    /// Wall-clock arrival, microseconds since the Unix epoch.
    pub at_us: u64,
    /// The injected fault that hit it (`error(VIR_ERR_OPERATION_INVALID)`,
    /// `delay`, `hang`, `drop`, `lose-reply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

/// One connection dialled to the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionRecord {
    /// Its id, as the trace names it.
    pub id: u64,
    /// Wall-clock dial time, microseconds since the Unix epoch.
    pub dialed_at_us: u64,
    /// Whether it is closed.
    pub closed: bool,
    /// How many calls it carried.
    pub calls: u64,
}

/// Every domain, pool and volume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// Domains by name.
    pub domains: Vec<DomainRecord>,
    /// Pools by name.
    pub pools: Vec<PoolRecord>,
}

/// One domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainRecord {
    /// Its name.
    pub name: String,
    /// Its UUID.
    pub uuid: String,
    /// Its running id, -1 when inactive.
    pub id: i32,
    /// `running`, `paused`, `shutoff`, …
    pub state: String,
    /// The state reason.
    pub reason: i32,
    /// Whether it has a persistent definition.
    pub persistent: bool,
}

/// One pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolRecord {
    /// Its name.
    pub name: String,
    /// Whether it is active.
    pub active: bool,
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes in use.
    pub allocation: u64,
    /// Bytes free.
    pub available: u64,
    /// Its volumes by name.
    pub volumes: Vec<VolumeRecord>,
}

/// One volume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeRecord {
    /// Its name.
    pub name: String,
    /// Its path.
    pub path: String,
    /// Logical size.
    pub capacity: u64,
    /// Bytes allocated.
    pub allocation: u64,
    /// `raw` or `qcow2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Bytes uploaded into it.
    pub content_bytes: u64,
}

/// Parses one request line; the error names what was wrong.
pub fn decode_request(line: &str) -> Result<Request, String> {
    serde_json::from_str(line.trim()).map_err(|e| format!("bad request: {e}"))
}
