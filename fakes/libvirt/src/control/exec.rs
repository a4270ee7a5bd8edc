//! Carries out control requests on a [`FakeLibvirt`]: each [`Request`] is
//! checked whole (names, procedures, codes) before anything changes, then
//! becomes one call of the handle's out-of-band API.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libvirt_wire::{
    DomainInterface, DomainIpAddr, DomainState, ErrorCode, ErrorDomain, IP_ADDR_TYPE_IPV4,
    IP_ADDR_TYPE_IPV6, Procedure, StoragePoolState,
};

use super::proto::{
    CallRecord, Code, ConnectionRecord, DialModeSpec, DomainRecord, ErrorSpec, FaultSpec,
    InterfaceSpec, Inventory, PoolRecord, Request, Response, RuleSpec, SourceSpec, TriggerSpec,
    VolumeRecord,
};
use crate::error::VirError;
use crate::fake::{DialMode, FakeLibvirt};
use crate::fault::{Fault, FaultHandle, FaultRule, Trigger};
use crate::state_file::StateFile;
use crate::types::AddressSource;

/// The control side of one fake: the host and the injections made through
/// the control API (their ids are positions in `faults`, from 1).
#[derive(Debug)]
pub struct Control {
    fake: FakeLibvirt,
    faults: Mutex<Vec<FaultHandle>>,
}

impl Control {
    /// Controls `fake`; it starts tracking connections so that they can be
    /// closed from outside.
    pub fn new(fake: FakeLibvirt) -> Self {
        fake.track_connections();
        Control {
            fake,
            faults: Mutex::new(Vec::new()),
        }
    }

    /// The host controlled.
    pub fn fake(&self) -> &FakeLibvirt {
        &self.fake
    }

    fn keep(&self, handle: FaultHandle) -> Response {
        let mut f = self.faults.lock().expect("fault ids poisoned");
        f.push(handle);
        Response::Fault { id: f.len() as u64 }
    }

    fn handle_of(&self, id: u64) -> Result<FaultHandle, String> {
        let f = self.faults.lock().expect("fault ids poisoned");
        usize::try_from(id)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| f.get(i))
            .cloned()
            .ok_or_else(|| match f.len() {
                0 => format!("no fault with id {id}: none was added"),
                n => format!("no fault with id {id}: ids run from 1 to {n}"),
            })
    }

    /// Carries out one request. A dispatch table: one arm per request.
    pub fn handle(&self, req: Request) -> Result<Response, String> {
        let fake = &self.fake;
        let done = |r: Result<(), VirError>| r.map(|()| Response::Done).map_err(vir);
        match req {
            Request::Ping {} => Ok(Response::Pong {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            }),
            Request::FaultAdd { rule } => Ok(self.keep(fake.faults().add(rule_of(&rule)?))),
            Request::FaultPush { fault } => Ok(self.keep(match fault {
                Some(f) => fake.faults().push(fault_of(&f)?),
                None => fake.faults().push_pass(),
            })),
            Request::FaultRandom {
                seed,
                probability,
                faults,
                procedures,
            } => {
                if !(0.0..=1.0).contains(&probability) {
                    return Err(format!("probability {probability} is not between 0 and 1"));
                }
                let faults = faults.iter().map(fault_of).collect::<Result<_, _>>()?;
                let procedures = procedures
                    .map(|ps| ps.iter().map(|p| procedure(p)).collect())
                    .transpose()?;
                Ok(self.keep(fake.faults().random(seed, probability, faults, procedures)))
            }
            Request::FaultStreamError { after_bytes, error } => Ok(self.keep(
                fake.faults()
                    .stream_error_after(after_bytes, vir_error(&error)?),
            )),
            Request::FaultFired { id } => {
                let h = self.handle_of(id)?;
                Ok(Response::Fired {
                    fired: h.fired(),
                    count: h.fire_count(),
                })
            }
            Request::FaultRemove { id } => {
                self.handle_of(id)?.remove();
                Ok(Response::Done)
            }
            Request::FaultClear { release_hung } => {
                fake.faults().clear();
                let mut closed = Vec::new();
                if release_hung {
                    let hung: Vec<u64> = fake
                        .trace()
                        .calls()
                        .iter()
                        .filter(|c| c.fault.as_deref() == Some("hang"))
                        .map(|c| c.connection)
                        .collect();
                    closed = fake.close_connections(|id| hung.contains(&id));
                }
                Ok(Response::Closed {
                    connections: closed,
                })
            }
            Request::Trace { since } => Ok(trace(fake, since)),
            Request::Mark {} => Ok(Response::Mark {
                mark: fake.trace().next_seq(),
            }),
            Request::Connections {} => Ok(Response::Connections {
                connections: fake
                    .trace()
                    .connections()
                    .into_iter()
                    .map(|c| ConnectionRecord {
                        id: c.id,
                        dialed_at_us: micros(c.dialed_at),
                        closed: c.closed,
                        calls: c.calls,
                    })
                    .collect(),
            }),
            Request::CloseConnections { ids } => Ok(Response::Closed {
                connections: fake
                    .close_connections(|id| ids.as_ref().is_none_or(|ids| ids.contains(&id))),
            }),
            Request::SetDialMode { mode } => {
                fake.set_dial_mode(match mode {
                    DialModeSpec::Accept => DialMode::Accept,
                    DialModeSpec::Refuse => DialMode::Refuse,
                    DialModeSpec::BlackHole => DialMode::BlackHole,
                });
                Ok(Response::Done)
            }
            Request::Restart { keep_connections } => {
                fake.restart_daemon();
                let closed = if keep_connections {
                    Vec::new()
                } else {
                    fake.close_connections(|_| true)
                };
                Ok(Response::Closed {
                    connections: closed,
                })
            }
            Request::Wedge {} => {
                fake.wedge();
                Ok(Response::Done)
            }
            Request::HoldBoot { name, hold } => {
                match name {
                    Some(n) if hold => fake.hold_boot(&n),
                    Some(n) => fake.release_boot(&n),
                    None => fake.hold_all_boots(hold),
                }
                Ok(Response::Done)
            }
            Request::SetAddresses {
                name,
                source,
                interfaces,
            } => {
                self.domain_exists(&name)?;
                let ifaces = interfaces
                    .iter()
                    .map(interface_of)
                    .collect::<Result<_, _>>()?;
                fake.set_interfaces(&name, source_of(source), ifaces);
                Ok(Response::Done)
            }
            Request::SetIpv4 { name, addr } => {
                self.domain_exists(&name)?;
                addr.parse::<std::net::Ipv4Addr>()
                    .map_err(|e| format!("address {addr:?}: {e}"))?;
                fake.set_ipv4(&name, &addr);
                Ok(Response::Done)
            }
            Request::ClearAddresses { name, source } => {
                self.domain_exists(&name)?;
                fake.clear_interfaces(&name, source_of(source));
                Ok(Response::Done)
            }
            Request::SetAgentUnresponsive { name, unresponsive } => {
                self.domain_exists(&name)?;
                fake.set_agent_unresponsive(&name, unresponsive);
                Ok(Response::Done)
            }
            Request::SetArpFailure { fail } => {
                fake.set_arp_failure(fail);
                Ok(Response::Done)
            }
            Request::SetDomainState {
                name,
                state,
                reason,
            } => {
                let state = domain_state(&state)?;
                done(fake.set_domain_state(&name, state, reason.unwrap_or(1)))
            }
            Request::SetPoolCapacity { pool, capacity } => {
                done(fake.set_pool_capacity(&pool, capacity))
            }
            Request::SetPoolAvailable { pool, available } => {
                done(fake.set_pool_available(&pool, available))
            }
            Request::SetPoolActive { pool, active } => done(fake.set_pool_active(&pool, active)),
            Request::AddPool {
                name,
                path,
                capacity,
            } => {
                fake.add_pool(&name, &path, capacity);
                Ok(Response::Done)
            }
            Request::RemovePool { name } => removed(fake.remove_pool(&name), "pool", &name),
            Request::DefineDomain { xml, running } => self.define(&xml, running),
            Request::RemoveDomain { name } => removed(fake.remove_domain(&name), "domain", &name),
            Request::CreateVolume {
                pool,
                name,
                capacity,
                format,
            } => self.create_volume(&pool, &name, capacity, format.as_deref()),
            Request::RemoveVolume { pool, name } => {
                if fake.pool_info(&pool).is_none() {
                    return Err(vir(VirError::no_pool_name(&pool)));
                }
                removed(fake.remove_volume(&pool, &name), "volume", &name)
            }
            Request::Inventory {} => Ok(Response::Inventory(inventory(fake))),
            Request::DomainXml { name } => self.domain_xml(&name),
            Request::Dump {} => Ok(Response::State {
                state: StateFile::dump(fake),
            }),
            Request::SetLatency { millis } => {
                fake.set_latency(Duration::from_millis(millis));
                Ok(Response::Done)
            }
            Request::SetAgentBootDelay { millis } => {
                fake.set_agent_boot_delay(Duration::from_millis(millis));
                Ok(Response::Done)
            }
        }
    }

    fn domain_exists(&self, name: &str) -> Result<(), String> {
        match self.fake.domain(name) {
            Some(_) => Ok(()),
            None => Err(vir(VirError::no_domain_name(name))),
        }
    }

    fn domain_xml(&self, name: &str) -> Result<Response, String> {
        let st = self.fake.state();
        let h = st.lookup_by_name(name).map_err(vir)?;
        let config = st
            .get_xml_desc(&h, libvirt_wire::DOMAIN_XML_INACTIVE)
            .map_err(vir)?;
        let live = if h.id >= 0 {
            Some(st.get_xml_desc(&h, 0).map_err(vir)?)
        } else {
            None
        };
        Ok(Response::Xml { config, live })
    }

    fn define(&self, xml: &str, running: bool) -> Result<Response, String> {
        let before: Vec<String> = self
            .fake
            .domains()
            .into_iter()
            .map(|d| d.handle.name)
            .collect();
        let dom = self.fake.define_domain(xml).map_err(vir)?;
        let existed = before.contains(&dom.name);
        if running
            && let Err(e) = self.fake.set_domain_state(
                &dom.name,
                DomainState::Running,
                libvirt_wire::DOMAIN_RUNNING_BOOTED,
            )
        {
            // A request that fails changes nothing: take a new domain out (a
            // redefinition of an existing one stays, as a define call's would).
            if !existed {
                self.fake.remove_domain(&dom.name);
            }
            return Err(vir(e));
        }
        Ok(Response::Domain {
            name: dom.name,
            uuid: dom.uuid.to_string(),
        })
    }

    fn create_volume(
        &self,
        pool: &str,
        name: &str,
        capacity: u64,
        format: Option<&str>,
    ) -> Result<Response, String> {
        let format = format.unwrap_or("raw");
        if !matches!(format, "raw" | "qcow2") {
            return Err(format!(
                "volume format {format:?}: only raw and qcow2 exist"
            ));
        }
        if name.is_empty() || name.contains(['/', '<', '>', '&', '\'', '"']) {
            return Err(format!("volume name {name:?}: not a plain file name"));
        }
        let mut st = self.fake.state();
        let handle = st.pool_lookup_by_name(pool).map_err(vir)?;
        let xml = format!(
            "<volume><name>{name}</name><capacity unit='bytes'>{capacity}</capacity>\
             <target><format type='{format}'/></target></volume>"
        );
        st.vol_create(&handle, &xml, 0).map_err(vir)?;
        Ok(Response::Done)
    }
}

fn vir(e: VirError) -> String {
    format!("{} ({})", e.message, e.code.name().unwrap_or("VIR_ERR_?"))
}

fn removed(existed: bool, what: &str, name: &str) -> Result<Response, String> {
    if existed {
        Ok(Response::Done)
    } else {
        Err(format!("no {what} named {name:?}"))
    }
}

/// A procedure by its API name (`DomainCreate`; case and a `vir` prefix are
/// forgiven).
fn procedure(name: &str) -> Result<Procedure, String> {
    Procedure::from_name(name).ok_or_else(|| {
        format!(
            "unknown procedure {name:?}: give libvirt's API name without `vir`, such as \
             DomainCreate (the crate README lists them)"
        )
    })
}

fn rule_of(spec: &RuleSpec) -> Result<FaultRule, String> {
    let trigger = match &spec.trigger {
        TriggerSpec::Always => Trigger::Always,
        TriggerSpec::NthCall { n: 0 } | TriggerSpec::NthCallOf { n: 0, .. } => {
            return Err("trigger n is 1-based: 0 never fires".into());
        }
        TriggerSpec::NthCall { n } => Trigger::NthCall(*n),
        TriggerSpec::Procedure { name } => Trigger::Procedure(procedure(name)?),
        TriggerSpec::NthCallOf { name, n } => Trigger::NthCallOf(procedure(name)?, *n),
    };
    let mut rule = FaultRule::new(trigger, fault_of(&spec.fault)?);
    if spec.once {
        rule = rule.once();
    }
    if let Some(o) = &spec.object {
        rule = rule.on_object(o.clone());
    }
    if let Some(c) = spec.connection {
        rule = rule.on_connection(c);
    }
    Ok(rule)
}

fn fault_of(spec: &FaultSpec) -> Result<Fault, String> {
    Ok(match spec {
        FaultSpec::Error { error } => Fault::Error(vir_error(error)?),
        FaultSpec::Delay { millis } => Fault::Delay(Duration::from_millis(*millis)),
        FaultSpec::Hang => Fault::Hang,
        FaultSpec::DropConnection => Fault::DropConnection,
        FaultSpec::LoseReply => Fault::LoseReply,
    })
}

/// Folds a name for comparison: lowercase, no `_`, without `prefix`.
fn fold(s: &str, prefix: &str) -> String {
    let s: String = s
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    s.strip_prefix(prefix).map(str::to_owned).unwrap_or(s)
}

fn vir_error(spec: &ErrorSpec) -> Result<VirError, String> {
    let code = match &spec.code {
        Code::Number(n) => ErrorCode::from_raw(*n),
        Code::Name(name) => ErrorCode::ALL
            .iter()
            .copied()
            .find(|c| {
                let wanted = fold(name, "virerr");
                fold(c.name().unwrap_or(""), "virerr") == wanted
                    || fold(&format!("{c:?}"), "") == wanted
            })
            .ok_or_else(|| {
                format!("unknown error code {name:?}: give a number or a VIR_ERR_* name")
            })?,
    };
    let domain = match &spec.domain {
        None => ErrorDomain::None,
        Some(Code::Number(n)) => ErrorDomain::from_raw(*n),
        Some(Code::Name(name)) => ErrorDomain::ALL
            .iter()
            .copied()
            .find(|d| {
                let wanted = fold(name, "virfrom");
                fold(d.name().unwrap_or(""), "virfrom") == wanted
                    || fold(&format!("{d:?}"), "") == wanted
            })
            .ok_or_else(|| {
                format!("unknown error domain {name:?}: give a number or a VIR_FROM_* name")
            })?,
    };
    let detail = spec.message.as_deref().unwrap_or("injected fault");
    Ok(VirError::new(code, domain, detail))
}

fn domain_state(name: &str) -> Result<DomainState, String> {
    let wanted = fold(name, "virdomain");
    DomainState::ALL
        .iter()
        .copied()
        .find(|s| fold(s.name().unwrap_or(""), "virdomain") == wanted)
        .ok_or_else(|| {
            format!("unknown domain state {name:?}: running, paused, shutoff, crashed, …")
        })
}

fn state_name(s: DomainState) -> String {
    fold(s.name().unwrap_or("unknown"), "virdomain")
}

fn source_of(s: SourceSpec) -> AddressSource {
    match s {
        SourceSpec::Lease => AddressSource::Lease,
        SourceSpec::Agent => AddressSource::Agent,
        SourceSpec::Arp => AddressSource::Arp,
    }
}

fn interface_of(spec: &InterfaceSpec) -> Result<DomainInterface, String> {
    let addrs = spec
        .addrs
        .iter()
        .map(|a| {
            let (ip, prefix) = a.split_once('/').unwrap_or((a, ""));
            let ip: std::net::IpAddr = ip
                .parse()
                .map_err(|e| format!("interface {}: address {a:?}: {e}", spec.name))?;
            let kind = if ip.is_ipv4() {
                IP_ADDR_TYPE_IPV4
            } else {
                IP_ADDR_TYPE_IPV6
            };
            let prefix = match prefix {
                "" if ip.is_ipv4() => 24,
                "" => 64,
                p => p
                    .parse()
                    .map_err(|e| format!("interface {}: prefix of {a:?}: {e}", spec.name))?,
            };
            Ok(DomainIpAddr {
                kind,
                addr: ip.to_string(),
                prefix,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(DomainInterface {
        name: spec.name.clone(),
        hwaddr: spec.hwaddr.clone(),
        addrs,
    })
}

fn micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn trace(fake: &FakeLibvirt, since: u64) -> Response {
    let (calls, forgotten) = fake.trace().calls_since(since);
    let next = fake.trace().next_seq().max(since);
    Response::Trace {
        calls: calls
            .into_iter()
            .map(|c| CallRecord {
                seq: c.seq,
                connection: c.connection,
                procedure: c.procedure.api_name().to_owned(),
                number: c.procedure.to_raw(),
                at_us: micros(c.at),
                fault: c.fault,
            })
            .collect(),
        next,
        forgotten,
    }
}

fn inventory(fake: &FakeLibvirt) -> Inventory {
    let domains = fake
        .domains()
        .into_iter()
        .map(|d| DomainRecord {
            name: d.handle.name.clone(),
            uuid: d.handle.uuid.to_string(),
            id: d.handle.id,
            state: state_name(d.state),
            reason: d.reason,
            persistent: d.persistent,
        })
        .collect();
    let pools = fake
        .pools()
        .into_iter()
        .filter_map(|name| {
            let info = fake.pool_info(&name)?;
            let volumes = fake
                .volumes(&name)
                .unwrap_or_default()
                .into_iter()
                .map(|v| VolumeRecord {
                    name: v.handle.name,
                    path: v.handle.key,
                    capacity: v.capacity,
                    allocation: v.allocation,
                    format: v.format,
                    content_bytes: v.content.size(),
                })
                .collect();
            Some(PoolRecord {
                active: info.state == StoragePoolState::Running,
                name,
                capacity: info.capacity,
                allocation: info.allocation,
                available: info.available,
                volumes,
            })
        })
        .collect();
    Inventory { domains, pools }
}
