//! Domain operations of the model: define, start, stop, undefine with the
//! NVRAM rules, states, XML, metadata and interface addresses, each failing
//! as libvirt's QEMU driver does; plus the out-of-band controls tests use.

use tokio::time::Instant;
use uuid::Uuid;

use crate::error::VirError;
use crate::state::storage::Volume;
use crate::state::{NVRAM_DIR, State, auto_ip, check_flags, mac_for};
use crate::types::{AddressSource, DomainInfo, MetadataEntry};
use crate::xml::{self, ParsedDomain};
use libvirt_wire::{
    CONNECT_LIST_DOMAINS_ACTIVE, CONNECT_LIST_DOMAINS_ALL, CONNECT_LIST_DOMAINS_INACTIVE,
    CONNECT_LIST_DOMAINS_OTHER, CONNECT_LIST_DOMAINS_PAUSED, CONNECT_LIST_DOMAINS_PERSISTENT,
    CONNECT_LIST_DOMAINS_RUNNING, CONNECT_LIST_DOMAINS_SHUTOFF, CONNECT_LIST_DOMAINS_TRANSIENT,
    DOMAIN_AFFECT_CONFIG, DOMAIN_AFFECT_LIVE, DOMAIN_DEFINE_VALIDATE, DOMAIN_DESTROY_GRACEFUL,
    DOMAIN_DESTROY_REMOVE_LOGS, DOMAIN_METADATA_DESCRIPTION, DOMAIN_METADATA_ELEMENT,
    DOMAIN_METADATA_TITLE, DOMAIN_PAUSED_USER, DOMAIN_RUNNING_BOOTED, DOMAIN_RUNNING_UNPAUSED,
    DOMAIN_SHUTDOWN_ALL, DOMAIN_SHUTOFF_DESTROYED, DOMAIN_SHUTOFF_FAILED, DOMAIN_SHUTOFF_SHUTDOWN,
    DOMAIN_SHUTOFF_UNKNOWN, DOMAIN_START_ALL, DOMAIN_START_PAUSED, DOMAIN_UNDEFINE_ALL,
    DOMAIN_UNDEFINE_KEEP_NVRAM, DOMAIN_UNDEFINE_NVRAM, DOMAIN_XML_ALL, DOMAIN_XML_INACTIVE,
    DomainInterface, DomainIpAddr, DomainState, ErrorCode, ErrorDomain,
};

/// The IPv6 link-local address a guest derives from its MAC (EUI-64), as a
/// real guest agent reports next to the IPv4 address.
fn link_local(mac: &str) -> String {
    let b: Vec<u8> = mac
        .split(':')
        .filter_map(|h| u8::from_str_radix(h, 16).ok())
        .collect();
    if b.len() != 6 {
        return "fe80::1".into();
    }
    format!(
        "fe80::{:x}:{:x}:{:x}:{:x}",
        u16::from_be_bytes([b[0] ^ 2, b[1]]),
        u16::from_be_bytes([b[2], 0xff]),
        u16::from_be_bytes([0xfe, b[3]]),
        u16::from_be_bytes([b[4], b[5]]),
    )
}

/// One definition of a domain (persistent or live).
#[derive(Debug, Clone)]
pub(crate) struct Def {
    pub(crate) parsed: ParsedDomain,
    pub(crate) metadata: Vec<MetadataEntry>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
}

impl Def {
    pub(crate) fn new(mut parsed: ParsedDomain) -> Self {
        let metadata = std::mem::take(&mut parsed.metadata);
        let title = parsed.title.take();
        let description = parsed.description.take();
        Def {
            parsed,
            metadata,
            title,
            description,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Domain {
    pub(crate) uuid: Uuid,
    pub(crate) name: String,
    pub(crate) persistent: bool,
    pub(crate) config: Def,
    pub(crate) live: Option<Def>,
    pub(crate) state: DomainState,
    pub(crate) reason: i32,
    pub(crate) id: i32,
    pub(crate) started_at: Option<Instant>,
    /// Whether the guest found data on its boot disk chain when it last
    /// started (see `boot`): a guest that did not never runs its agent and
    /// never asks for an address.
    pub(crate) boots: bool,
    pub(crate) auto_ip: String,
}

impl Domain {
    pub(crate) fn handle(&self) -> libvirt_wire::Domain {
        libvirt_wire::Domain {
            name: self.name.clone(),
            uuid: libvirt_wire::Uuid(*self.uuid.as_bytes()),
            id: self.id,
        }
    }

    pub(crate) fn active(&self) -> bool {
        self.live.is_some()
    }

    pub(crate) fn nvram_path(&self) -> Option<String> {
        let def = self.live.as_ref().unwrap_or(&self.config);
        def.parsed.uefi.then(|| {
            def.parsed
                .nvram_path
                .clone()
                .unwrap_or_else(|| format!("{NVRAM_DIR}/{}_VARS.fd", self.name))
        })
    }
}

/// A read-only view of one domain, for tests and inventories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainSnapshot {
    /// The handle (name, UUID, id).
    pub handle: libvirt_wire::Domain,
    /// Current state.
    pub state: DomainState,
    /// Current state reason.
    pub reason: i32,
    /// Whether it has a persistent definition.
    pub persistent: bool,
    /// Whether it boots with UEFI firmware.
    pub uefi: bool,
    /// Its NVRAM path, for UEFI domains.
    pub nvram_path: Option<String>,
    /// Whether its NVRAM file exists.
    pub nvram_exists: bool,
    /// Metadata of the persistent definition.
    pub config_metadata: Vec<MetadataEntry>,
    /// Metadata of the live definition, when running.
    pub live_metadata: Option<Vec<MetadataEntry>>,
}

impl State {
    // ----- domains -------------------------------------------------------

    fn find_name(&self, name: &str) -> Option<&Domain> {
        self.domains.values().find(|d| d.name == name)
    }

    pub(crate) fn dom(&self, h: &libvirt_wire::Domain) -> Result<&Domain, VirError> {
        self.domains
            .get(&Uuid::from_bytes(h.uuid.0))
            .ok_or_else(|| VirError::no_domain_uuid(&h.uuid, &h.name))
    }

    fn dom_mut(&mut self, h: &libvirt_wire::Domain) -> Result<&mut Domain, VirError> {
        self.domains
            .get_mut(&Uuid::from_bytes(h.uuid.0))
            .ok_or_else(|| VirError::no_domain_uuid(&h.uuid, &h.name))
    }

    fn dom_by_name_mut(&mut self, name: &str) -> Result<&mut Domain, VirError> {
        self.domains
            .values_mut()
            .find(|d| d.name == name)
            .ok_or_else(|| VirError::no_domain_name(name))
    }

    pub(crate) fn define(
        &mut self,
        xml_doc: &str,
        flags_: u32,
    ) -> Result<libvirt_wire::Domain, VirError> {
        check_flags(flags_, DOMAIN_DEFINE_VALIDATE, "qemuDomainDefineXMLFlags")?;
        let parsed = xml::parse_domain(xml_doc)?;
        let by_name = self.find_name(&parsed.name).map(|d| d.uuid);
        if let Some(u) = parsed.uuid
            && let Some(other) = self.domains.get(&u)
            && other.name != parsed.name
        {
            return Err(VirError::new(
                ErrorCode::OperationFailed,
                ErrorDomain::Domain,
                format!("domain '{}' is already defined with uuid {u}", other.name),
            ));
        }
        match (by_name, parsed.uuid) {
            (Some(existing), Some(given)) if existing != given => Err(VirError::new(
                ErrorCode::OperationFailed,
                ErrorDomain::Domain,
                format!(
                    "domain '{}' already exists with uuid {existing}",
                    parsed.name
                ),
            )),
            (Some(existing), _) => {
                let d = self.domains.get_mut(&existing).expect("found by name");
                d.config = Def::new(parsed);
                d.persistent = true;
                Ok(d.handle())
            }
            (None, given) => {
                let uuid = given.unwrap_or_else(Uuid::new_v4);
                let ip = auto_ip(self.next_auto_ip);
                self.next_auto_ip += 1;
                let name = parsed.name.clone();
                let d = Domain {
                    uuid,
                    name,
                    persistent: true,
                    config: Def::new(parsed),
                    live: None,
                    state: DomainState::Shutoff,
                    reason: DOMAIN_SHUTOFF_UNKNOWN,
                    id: -1,
                    started_at: None,
                    boots: false,
                    auto_ip: ip,
                };
                let h = d.handle();
                self.domains.insert(uuid, d);
                Ok(h)
            }
        }
    }

    pub(crate) fn lookup_by_name(&self, name: &str) -> Result<libvirt_wire::Domain, VirError> {
        self.find_name(name)
            .map(Domain::handle)
            .ok_or_else(|| VirError::no_domain_name(name))
    }

    pub(crate) fn lookup_by_uuid(&self, uuid: &Uuid) -> Result<libvirt_wire::Domain, VirError> {
        self.domains.get(uuid).map(Domain::handle).ok_or_else(|| {
            VirError::new(
                ErrorCode::NoDomain,
                ErrorDomain::Qemu,
                format!("no domain with matching uuid '{uuid}'"),
            )
        })
    }

    pub(crate) fn create(
        &mut self,
        h: &libvirt_wire::Domain,
        flags_: u32,
        now: Instant,
    ) -> Result<libvirt_wire::Domain, VirError> {
        check_flags(flags_, DOMAIN_START_ALL, "qemuDomainCreateWithFlags")?;
        let id = self.next_id;
        let d = self.dom(h)?;
        if d.active() {
            return Err(VirError::domain_already_running());
        }
        if let Err(e) = self.check_files(d) {
            let d = self.dom_mut(h)?;
            d.reason = DOMAIN_SHUTOFF_FAILED;
            return Err(e);
        }
        let boots = self.boot_chain_holds_data(&d.config.parsed);
        let d = self.dom_mut(h)?;
        d.live = Some(d.config.clone());
        d.id = id;
        d.started_at = Some(now);
        d.boots = boots;
        if flags_ & DOMAIN_START_PAUSED != 0 {
            d.state = DomainState::Paused;
            d.reason = DOMAIN_PAUSED_USER;
        } else {
            d.state = DomainState::Running;
            d.reason = DOMAIN_RUNNING_BOOTED;
        }
        let nvram = d.nvram_path();
        let handle = d.handle();
        self.next_id += 1;
        if let Some(p) = nvram {
            self.nvram_files.insert(p);
        }
        Ok(handle)
    }

    /// Stops a running domain (destroy, or an out-of-band stop); a transient
    /// domain disappears.
    fn stop(&mut self, uuid: Uuid, reason_: i32) {
        let Some(d) = self.domains.get_mut(&uuid) else {
            return;
        };
        d.live = None;
        d.id = -1;
        d.state = DomainState::Shutoff;
        d.reason = reason_;
        d.started_at = None;
        if !d.persistent {
            self.domains.remove(&uuid);
        }
    }

    pub(crate) fn destroy(
        &mut self,
        h: &libvirt_wire::Domain,
        flags_: u32,
    ) -> Result<(), VirError> {
        check_flags(
            flags_,
            DOMAIN_DESTROY_GRACEFUL | DOMAIN_DESTROY_REMOVE_LOGS,
            "qemuDomainDestroyFlags",
        )?;
        let d = self.dom(h)?;
        if !d.active() {
            return Err(VirError::domain_not_running());
        }
        let uuid = d.uuid;
        self.stop(uuid, DOMAIN_SHUTOFF_DESTROYED);
        Ok(())
    }

    /// A guest shutdown; the fake's guests always comply at once.
    pub(crate) fn shutdown(
        &mut self,
        h: &libvirt_wire::Domain,
        flags_: u32,
    ) -> Result<(), VirError> {
        check_flags(flags_, DOMAIN_SHUTDOWN_ALL, "qemuDomainShutdownFlags")?;
        let d = self.dom(h)?;
        if !d.active() {
            return Err(VirError::domain_not_running_from(ErrorDomain::Qemu));
        }
        let uuid = d.uuid;
        self.stop(uuid, DOMAIN_SHUTOFF_SHUTDOWN);
        Ok(())
    }

    /// `virDomainSuspend`: a running domain pauses (reason user); pausing a
    /// paused domain changes nothing, as in the QEMU driver.
    pub(crate) fn suspend(&mut self, h: &libvirt_wire::Domain) -> Result<(), VirError> {
        let d = self.dom_mut(h)?;
        if !d.active() {
            return Err(VirError::domain_not_running());
        }
        match d.state {
            DomainState::PmSuspended => Err(VirError::domain_pmsuspended()),
            DomainState::Paused => Ok(()),
            _ => {
                d.state = DomainState::Paused;
                d.reason = DOMAIN_PAUSED_USER;
                Ok(())
            }
        }
    }

    /// `virDomainResume`: a paused domain runs again (reason unpaused); a
    /// running one is refused, other states are left as they are.
    pub(crate) fn resume(&mut self, h: &libvirt_wire::Domain) -> Result<(), VirError> {
        let d = self.dom_mut(h)?;
        if !d.active() {
            return Err(VirError::domain_not_running());
        }
        match d.state {
            DomainState::PmSuspended => Err(VirError::domain_pmsuspended()),
            DomainState::Running => Err(VirError::domain_already_running()),
            DomainState::Paused => {
                d.state = DomainState::Running;
                d.reason = DOMAIN_RUNNING_UNPAUSED;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn undefine(
        &mut self,
        h: &libvirt_wire::Domain,
        flags_: u32,
    ) -> Result<(), VirError> {
        check_flags(flags_, DOMAIN_UNDEFINE_ALL, "qemuDomainUndefineFlags")?;
        if flags_ & DOMAIN_UNDEFINE_NVRAM != 0 && flags_ & DOMAIN_UNDEFINE_KEEP_NVRAM != 0 {
            return Err(VirError::invalid_arg_check(
                ErrorDomain::Qemu,
                "Flags 'VIR_DOMAIN_UNDEFINE_NVRAM' and 'VIR_DOMAIN_UNDEFINE_KEEP_NVRAM' are mutually exclusive",
            ));
        }
        let d = self.dom(h)?;
        if !d.persistent {
            return Err(VirError::new(
                ErrorCode::OperationInvalid,
                ErrorDomain::Qemu,
                "cannot undefine transient domain",
            ));
        }
        let uuid = d.uuid;
        let active = d.active();
        if let Some(path) = d.nvram_path()
            && self.nvram_files.contains(&path)
        {
            if flags_ & DOMAIN_UNDEFINE_NVRAM != 0 {
                self.nvram_files.remove(&path);
            } else if flags_ & DOMAIN_UNDEFINE_KEEP_NVRAM == 0 {
                return Err(VirError::undefine_with_nvram());
            }
        }
        if active {
            let d = self.domains.get_mut(&uuid).expect("resolved above");
            d.persistent = false;
        } else {
            self.domains.remove(&uuid);
        }
        Ok(())
    }

    pub(crate) fn get_state(
        &self,
        h: &libvirt_wire::Domain,
        flags_: u32,
    ) -> Result<(DomainState, i32), VirError> {
        check_flags(flags_, 0, "qemuDomainGetState")?;
        let d = self.dom(h)?;
        Ok((d.state, d.reason))
    }

    pub(crate) fn get_info(
        &self,
        h: &libvirt_wire::Domain,
        now: Instant,
    ) -> Result<DomainInfo, VirError> {
        let d = self.dom(h)?;
        let def = d.live.as_ref().unwrap_or(&d.config);
        let cpu_time_ns = d
            .started_at
            .map(|s| {
                u64::try_from(now.saturating_duration_since(s).as_nanos() / 10).unwrap_or(u64::MAX)
            })
            .unwrap_or(0);
        Ok(DomainInfo {
            state: d.state,
            max_mem_kib: def.parsed.max_mem_kib,
            memory_kib: def.parsed.memory_kib,
            nr_virt_cpu: def.parsed.vcpus,
            cpu_time_ns,
        })
    }

    pub(crate) fn get_xml_desc(
        &self,
        h: &libvirt_wire::Domain,
        flags_: u32,
    ) -> Result<String, VirError> {
        check_flags(flags_, DOMAIN_XML_ALL, "qemuDomainGetXMLDesc")?;
        let d = self.dom(h)?;
        let (def, id) = match (&d.live, flags_ & DOMAIN_XML_INACTIVE != 0) {
            (Some(live), false) => (live, Some(d.id)),
            _ => (&d.config, None),
        };
        Ok(xml::render_domain(
            &def.parsed.body,
            xml::Rendered {
                uuid: &d.uuid,
                id,
                title: def.title.as_deref(),
                description: def.description.as_deref(),
                metadata: &def.metadata,
            },
        ))
    }

    /// Picks the definitions a metadata call affects, as libvirt's
    /// `virDomainObjGetDefs` does.
    fn metadata_targets(d: &Domain, flags_: u32) -> Result<(bool, bool), VirError> {
        let mut live = flags_ & DOMAIN_AFFECT_LIVE != 0;
        let mut config = flags_ & DOMAIN_AFFECT_CONFIG != 0;
        if !live && !config {
            if d.active() {
                live = true;
            } else {
                config = true;
            }
        }
        if live && !d.active() {
            return Err(VirError::domain_not_running());
        }
        if config && !d.persistent {
            return Err(VirError::new(
                ErrorCode::OperationInvalid,
                ErrorDomain::Domain,
                "transient domains do not have any persistent config",
            ));
        }
        Ok((live, config))
    }

    pub(crate) fn set_metadata(
        &mut self,
        h: &libvirt_wire::Domain,
        kind: i32,
        metadata: Option<&str>,
        key: Option<&str>,
        uri: Option<&str>,
        flags_: u32,
    ) -> Result<(), VirError> {
        check_flags(
            flags_,
            DOMAIN_AFFECT_LIVE | DOMAIN_AFFECT_CONFIG,
            "qemuDomainSetMetadata",
        )?;
        let arg = |what: &str, must: &str| {
            VirError::invalid_arg_check(
                ErrorDomain::Domain,
                format!("{what} in virDomainSetMetadata must {must}"),
            )
        };
        enum Change {
            Title(Option<String>),
            Description(Option<String>),
            Element(String, Option<MetadataEntry>),
        }
        let change = match kind {
            DOMAIN_METADATA_TITLE | DOMAIN_METADATA_DESCRIPTION => {
                if uri.is_some() {
                    return Err(arg("uri", "be NULL"));
                }
                if key.is_some() {
                    return Err(arg("key", "be NULL"));
                }
                let text = metadata.filter(|m| !m.is_empty()).map(str::to_owned);
                if kind == DOMAIN_METADATA_TITLE {
                    if text.as_deref().is_some_and(|t| t.contains('\n')) {
                        return Err(VirError::invalid_arg(
                            ErrorDomain::Domain,
                            "metadata title can't contain newlines",
                        ));
                    }
                    Change::Title(text)
                } else {
                    Change::Description(text)
                }
            }
            DOMAIN_METADATA_ELEMENT => {
                let uri = uri.ok_or_else(|| arg("uri", "not be NULL"))?;
                match metadata {
                    Some(m) => {
                        let key = key.ok_or_else(|| arg("key", "not be NULL"))?;
                        let xml = xml::canonical_metadata(m, key, uri)?;
                        Change::Element(
                            uri.to_owned(),
                            Some(MetadataEntry {
                                uri: uri.to_owned(),
                                key: key.to_owned(),
                                xml,
                            }),
                        )
                    }
                    None => Change::Element(uri.to_owned(), None),
                }
            }
            other => {
                return Err(VirError::invalid_arg(
                    ErrorDomain::Domain,
                    format!("unknown metadata type '{other}'"),
                ));
            }
        };
        let d = self.dom_mut(h)?;
        let (live, config) = Self::metadata_targets(d, flags_)?;
        let apply = |def: &mut Def| match &change {
            Change::Title(t) => def.title = t.clone(),
            Change::Description(t) => def.description = t.clone(),
            Change::Element(uri, entry) => {
                def.metadata.retain(|m| &m.uri != uri);
                if let Some(e) = entry {
                    def.metadata.push(e.clone());
                }
            }
        };
        if live && let Some(l) = d.live.as_mut() {
            apply(l);
        }
        if config {
            apply(&mut d.config);
        }
        Ok(())
    }

    pub(crate) fn get_metadata(
        &self,
        h: &libvirt_wire::Domain,
        kind: i32,
        uri: Option<&str>,
        flags_: u32,
    ) -> Result<String, VirError> {
        if flags_ & DOMAIN_AFFECT_LIVE != 0 && flags_ & DOMAIN_AFFECT_CONFIG != 0 {
            return Err(VirError::invalid_arg_check(
                ErrorDomain::Domain,
                "Flags 'VIR_DOMAIN_AFFECT_LIVE' and 'VIR_DOMAIN_AFFECT_CONFIG' are mutually exclusive",
            ));
        }
        check_flags(
            flags_,
            DOMAIN_AFFECT_LIVE | DOMAIN_AFFECT_CONFIG,
            "qemuDomainGetMetadata",
        )?;
        match (kind, uri) {
            (DOMAIN_METADATA_TITLE | DOMAIN_METADATA_DESCRIPTION, Some(_)) => {
                return Err(VirError::invalid_arg_check(
                    ErrorDomain::Domain,
                    "uri in virDomainGetMetadata must be NULL",
                ));
            }
            (DOMAIN_METADATA_ELEMENT, None) => {
                return Err(VirError::invalid_arg_check(
                    ErrorDomain::Domain,
                    "uri in virDomainGetMetadata must not be NULL",
                ));
            }
            (DOMAIN_METADATA_TITLE | DOMAIN_METADATA_DESCRIPTION | DOMAIN_METADATA_ELEMENT, _) => {}
            (other, _) => {
                return Err(VirError::invalid_arg(
                    ErrorDomain::Domain,
                    format!("unknown metadata type '{other}'"),
                ));
            }
        }
        let d = self.dom(h)?;
        let (live, _) = Self::metadata_targets(d, flags_)?;
        let def = if live {
            d.live.as_ref().expect("checked active")
        } else {
            &d.config
        };
        let found = match kind {
            DOMAIN_METADATA_TITLE => def.title.clone(),
            DOMAIN_METADATA_DESCRIPTION => def.description.clone(),
            _ => {
                let uri = uri.expect("checked above");
                def.metadata
                    .iter()
                    .find(|m| m.uri == uri)
                    .map(|m| crate::xml::format_metadata(&m.xml))
            }
        };
        found.ok_or_else(VirError::no_metadata)
    }

    /// Whether the guest finished booting: it found data to boot from,
    /// started at least the boot delay ago and is not held.
    fn booted(&self, d: &Domain, now: Instant) -> bool {
        let held = self.hold_all_boots || self.boot_held.contains(&d.name);
        d.boots
            && !held
            && d.started_at
                .is_some_and(|s| now.saturating_duration_since(s) >= self.host.agent_boot_delay)
    }

    pub(crate) fn interface_addresses(
        &self,
        h: &libvirt_wire::Domain,
        source: u32,
        flags_: u32,
        now: Instant,
    ) -> Result<Vec<DomainInterface>, VirError> {
        check_flags(flags_, 0, "qemuDomainInterfaceAddresses")?;
        let d = self.dom(h)?;
        if !d.active() {
            return Err(VirError::domain_not_running());
        }
        let Some(src) = AddressSource::from_u32(source) else {
            return Err(VirError::new(
                ErrorCode::ArgumentUnsupported,
                ErrorDomain::Qemu,
                format!("Unknown IP address data source {source}"),
            ));
        };
        let def = d.live.as_ref().expect("active");
        let mac = def
            .parsed
            .macs
            .first()
            .cloned()
            .unwrap_or_else(|| mac_for(&d.uuid));
        match src {
            AddressSource::Agent => {
                if !def.parsed.agent_channel {
                    return Err(VirError::agent_not_configured());
                }
                if !self.booted(d, now) || self.agent_broken.contains(&d.name) {
                    return Err(VirError::agent_not_connected());
                }
                if let Some(set) = self.addresses.get(&(d.name.clone(), src)) {
                    return Ok(set.clone());
                }
                if !self.host.auto_addresses || d.state != DomainState::Running {
                    return Ok(Vec::new());
                }
                Ok(vec![
                    DomainInterface {
                        name: "lo".into(),
                        hwaddr: Some("00:00:00:00:00:00".into()),
                        addrs: vec![
                            DomainIpAddr::v4("127.0.0.1", 8),
                            DomainIpAddr::v6("::1", 128),
                        ],
                    },
                    DomainInterface {
                        name: "eth0".into(),
                        addrs: vec![
                            DomainIpAddr::v4(d.auto_ip.clone(), 24),
                            DomainIpAddr::v6(link_local(&mac), 64),
                        ],
                        hwaddr: Some(mac),
                    },
                ])
            }
            AddressSource::Arp => {
                if self.arp_failure {
                    return Err(VirError::arp_wrong_nlmsg_len());
                }
                // A guest with nothing to boot never sends a packet, so no
                // neighbour entry names it, whatever a test set.
                if !d.boots {
                    return Ok(Vec::new());
                }
                if let Some(set) = self.addresses.get(&(d.name.clone(), src)) {
                    return Ok(set.clone());
                }
                if !self.host.auto_addresses || !self.booted(d, now) {
                    return Ok(Vec::new());
                }
                Ok(vec![DomainInterface {
                    name: "vnet0".into(),
                    hwaddr: Some(mac),
                    addrs: vec![DomainIpAddr::v4(d.auto_ip.clone(), 0)],
                }])
            }
            // Nor does it ask for a lease.
            AddressSource::Lease if !d.boots => Ok(Vec::new()),
            AddressSource::Lease => Ok(self
                .addresses
                .get(&(d.name.clone(), src))
                .cloned()
                .unwrap_or_default()),
        }
    }

    pub(crate) fn list_all_domains(
        &self,
        flags_: u32,
    ) -> Result<Vec<libvirt_wire::Domain>, VirError> {
        check_flags(
            flags_,
            CONNECT_LIST_DOMAINS_ALL,
            "qemuConnectListAllDomains",
        )?;
        let group = |a: u32, b: u32, pa: bool, pb: bool| -> bool {
            let fa = flags_ & a != 0;
            let fb = flags_ & b != 0;
            !(fa || fb) || (fa && pa) || (fb && pb)
        };
        let mut out: Vec<libvirt_wire::Domain> = self
            .domains
            .values()
            .filter(|d| {
                let running = d.state == DomainState::Running;
                let paused = d.state == DomainState::Paused;
                let shutoff = d.state == DomainState::Shutoff;
                let state_bits = CONNECT_LIST_DOMAINS_RUNNING
                    | CONNECT_LIST_DOMAINS_PAUSED
                    | CONNECT_LIST_DOMAINS_SHUTOFF
                    | CONNECT_LIST_DOMAINS_OTHER;
                let state_ok = flags_ & state_bits == 0
                    || (flags_ & CONNECT_LIST_DOMAINS_RUNNING != 0 && running)
                    || (flags_ & CONNECT_LIST_DOMAINS_PAUSED != 0 && paused)
                    || (flags_ & CONNECT_LIST_DOMAINS_SHUTOFF != 0 && shutoff)
                    || (flags_ & CONNECT_LIST_DOMAINS_OTHER != 0
                        && !running
                        && !paused
                        && !shutoff);
                group(
                    CONNECT_LIST_DOMAINS_ACTIVE,
                    CONNECT_LIST_DOMAINS_INACTIVE,
                    d.active(),
                    !d.active(),
                ) && group(
                    CONNECT_LIST_DOMAINS_PERSISTENT,
                    CONNECT_LIST_DOMAINS_TRANSIENT,
                    d.persistent,
                    !d.persistent,
                ) && state_ok
            })
            .map(Domain::handle)
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    // ----- out-of-band domain control -----------------------------------

    pub(crate) fn snapshot_domain(&self, name: &str) -> Option<DomainSnapshot> {
        let d = self.find_name(name)?;
        let nvram_path = d.nvram_path();
        Some(DomainSnapshot {
            handle: d.handle(),
            state: d.state,
            reason: d.reason,
            persistent: d.persistent,
            uefi: d.config.parsed.uefi,
            nvram_exists: nvram_path
                .as_ref()
                .is_some_and(|p| self.nvram_files.contains(p)),
            nvram_path,
            config_metadata: d.config.metadata.clone(),
            live_metadata: d.live.as_ref().map(|l| l.metadata.clone()),
        })
    }

    pub(crate) fn all_domain_snapshots(&self) -> Vec<DomainSnapshot> {
        let mut names: Vec<&str> = self.domains.values().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        names
            .into_iter()
            .filter_map(|n| self.snapshot_domain(n))
            .collect()
    }

    pub(crate) fn force_state(
        &mut self,
        name: &str,
        state: DomainState,
        reason_: i32,
        now: Instant,
    ) -> Result<(), VirError> {
        let d = self.dom_by_name_mut(name)?;
        let (uuid, active, handle) = (d.uuid, d.active(), d.handle());
        if state.is_active() && !active {
            self.create(&handle, 0, now)?;
        } else if !state.is_active() && active {
            self.stop(uuid, reason_);
        }
        if let Some(d) = self.domains.get_mut(&uuid) {
            d.state = state;
            d.reason = reason_;
        }
        Ok(())
    }

    pub(crate) fn set_addresses(
        &mut self,
        name: &str,
        source: AddressSource,
        ifaces: Option<Vec<DomainInterface>>,
    ) {
        let key = (name.to_owned(), source);
        match ifaces {
            Some(i) => self.addresses.insert(key, i),
            None => self.addresses.remove(&key),
        };
    }

    pub(crate) fn set_boot_held(&mut self, name: Option<&str>, held: bool) {
        match name {
            None => self.hold_all_boots = held,
            Some(n) if held => {
                self.boot_held.insert(n.to_owned());
            }
            Some(n) => {
                self.boot_held.remove(n);
            }
        }
    }

    pub(crate) fn set_agent_broken(&mut self, name: &str, broken: bool) {
        if broken {
            self.agent_broken.insert(name.to_owned());
        } else {
            self.agent_broken.remove(name);
        }
    }

    pub(crate) fn set_arp_failure(&mut self, fail: bool) {
        self.arp_failure = fail;
    }

    pub(crate) fn nvram_files(&self) -> Vec<String> {
        self.nvram_files.iter().cloned().collect()
    }

    pub(crate) fn remove_domain(&mut self, name: &str) -> bool {
        let uuid = self.find_name(name).map(|d| d.uuid);
        uuid.is_some_and(|u| self.domains.remove(&u).is_some())
    }

    /// The volume whose file is `path`, in whichever pool holds it.
    pub(crate) fn volume_at(&self, path: &str) -> Option<&Volume> {
        let (dir, name) = path.rsplit_once('/')?;
        self.pools
            .values()
            .filter(|p| p.path.trim_end_matches('/') == dir)
            .find_map(|p| p.volumes.get(name))
    }

    /// Whether a file exists on the fake's host. Its file system holds the
    /// pools' volumes, the NVRAM files of domains and the firmware the host
    /// offers, and nothing else: a path elsewhere is missing, as it would be
    /// on a host where nobody put it.
    fn file_exists(&self, path: &str) -> bool {
        self.volume_at(path).is_some()
            || self.nvram_files.contains(path)
            || self.host.uefi_firmware.iter().any(|f| f == path)
            || self.host.uefi_vars.iter().any(|f| f == path)
    }

    /// What a start finds missing before QEMU runs, as libvirt 11.3 reports
    /// it (measured by the fidelity comparison): a disk file, a file in a
    /// disk's backing chain, or the template of an NVRAM file not made yet.
    fn check_files(&self, d: &Domain) -> Result<(), VirError> {
        let parsed = &d.config.parsed;
        for disk in &parsed.disk_files {
            if !self.file_exists(disk) {
                return Err(VirError::no_such_file(
                    ErrorDomain::Storage,
                    format!("Cannot access storage file '{disk}'"),
                ));
            }
            // A chain longer than libvirt's limit of 200 would be refused
            // as well; a cycle cannot be built through volume creation.
            let mut parent = disk.as_str();
            let mut backing = self.volume_at(disk).and_then(|v| v.backing_path.as_deref());
            for _ in 0..200 {
                let Some(b) = backing else { break };
                let Some(v) = self.volume_at(b) else {
                    return Err(VirError::no_such_file(
                        ErrorDomain::Storage,
                        format!(
                            "Cannot access backing file '{b}' of storage file '{parent}' \
                             (as uid:0, gid:0)"
                        ),
                    ));
                };
                parent = b;
                backing = v.backing_path.as_deref();
            }
        }
        if let (Some(template), Some(nvram)) = (&parsed.nvram_template, d.nvram_path())
            && !self.nvram_files.contains(&nvram)
            && !self.file_exists(template)
        {
            return Err(VirError::no_such_file(
                ErrorDomain::Qemu,
                format!("Failed to open file '{template}'"),
            ));
        }
        Ok(())
    }
}
