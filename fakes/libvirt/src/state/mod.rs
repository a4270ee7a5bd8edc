//! The model's state: the host settings and one plain struct holding every
//! domain, pool and volume, with the invariants a test can check. The
//! operations live beside it, in `domains` and `storage`.
//!
//! Nothing here knows about connections, faults or the wire; `fake` wraps it
//! in a lock and `connection` tags each call with its procedure.

pub(crate) mod domains;
pub(crate) mod storage;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use uuid::Uuid;

use crate::error::VirError;
use crate::state::domains::Domain;
use crate::state::storage::{Directory, Pool};
use crate::types::AddressSource;
use libvirt_wire::{AuthType, DomainInterface};

/// Where libvirt puts a domain's NVRAM file when its XML names none.
pub(crate) const NVRAM_DIR: &str = "/var/lib/libvirt/qemu/nvram";

/// Allocation of a freshly created, empty qcow2 file: qemu-img 7.2 writes
/// 196 616 bytes, which ext4 stores in 49 blocks of 4 KiB (measured on the
/// project's real-host setup, with and without a backing file).
pub(crate) const QCOW2_EMPTY_ALLOCATION: u64 = 200_704;

/// Settings of the fake host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// What `ConnectGetHostname` returns.
    pub hostname: String,
    /// What `ConnectGetLibVersion` returns (major·10⁶ + minor·10³ + micro).
    pub lib_version: u64,
    /// What `ConnectGetVersion` returns (the hypervisor version).
    pub hypervisor_version: u64,
    /// What `ConnectGetURI` returns when the client opened no URI.
    pub default_uri: String,
    /// What `AuthList` offers, as raw [`AuthType`] numbers (none, polkit).
    pub auth_types: Vec<i32>,
    /// What `ConnectGetCapabilities` returns.
    pub capabilities: String,
    /// The UEFI firmware images the host offers domains, which
    /// `ConnectGetDomainCapabilities` lists as loaders (and `efi` among the
    /// firmware kinds); empty when no OVMF is installed.
    pub uefi_firmware: Vec<String>,
    /// The NVRAM templates that come with that firmware: files a domain's
    /// `<nvram template=…>` may name.
    pub uefi_vars: Vec<String>,
    /// The host's network interfaces as libvirt's interface driver (the
    /// udev backend) reports them; `None` when the host has no interface
    /// driver, and every interface call fails with `VIR_ERR_NO_SUPPORT`.
    pub interfaces: Option<Vec<HostInterface>>,
    /// Uploads larger than this are not kept in memory: they go to a file
    /// in `upload_spill_dir`, or keep only their size and SHA-256 without
    /// one.
    pub upload_keep_limit: u64,
    /// Where uploads larger than `upload_keep_limit` are written (the
    /// daemon's own temporary directory); `None` keeps only their digest.
    pub upload_spill_dir: Option<std::path::PathBuf>,
    /// How long after a start the guest agent answers.
    pub agent_boot_delay: Duration,
    /// Whether running domains report an address of their own without a
    /// test having set one. Either way, a guest whose boot disk chain held
    /// no data when it started reports none.
    pub auto_addresses: bool,
    /// Network round trip added to every call: half before the call runs,
    /// half before its answer arrives. Calls in flight overlap.
    pub latency: Duration,
    /// Whether the host runs QEMU as root (`user = "root"` in qemu.conf, as
    /// the project's real host does): libvirt then taints running domains,
    /// and `DomainGetMessages` says so.
    pub qemu_as_root: bool,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            hostname: "fake-host".into(),
            lib_version: 9_000_000,
            hypervisor_version: 10_000_002,
            default_uri: "qemu:///system".into(),
            auth_types: vec![AuthType::None.to_raw()],
            capabilities: default_capabilities(),
            uefi_firmware: vec!["/usr/share/OVMF/OVMF_CODE_4M.fd".into()],
            uefi_vars: vec!["/usr/share/OVMF/OVMF_VARS_4M.fd".into()],
            interfaces: Some(vec![HostInterface::bridge("br0")]),
            upload_keep_limit: 1 << 20,
            upload_spill_dir: None,
            agent_boot_delay: Duration::ZERO,
            auto_addresses: true,
            latency: Duration::ZERO,
            qemu_as_root: true,
        }
    }
}

/// A network interface of the host, as libvirt's udev interface backend
/// sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInterface {
    /// The interface name (`br0`).
    pub name: String,
    /// Its MAC address.
    pub mac: String,
    /// Its MTU.
    pub mtu: u32,
    /// The kernel's operational state (`up`, `down`, `unknown`): libvirt
    /// calls the interface active only when it is `up`, so a bridge without
    /// ports is inactive even when it is administratively up.
    pub operstate: String,
    /// For a bridge, its spanning tree setting and forward delay (in
    /// hundredths of a second, as sysfs has it); `None` for an ethernet
    /// interface.
    pub bridge: Option<(bool, u32)>,
}

impl HostInterface {
    /// A bridge as `ip link add NAME type bridge` makes it: no ports, STP
    /// off, a 15 s forward delay, MTU 1500, operational state `down`.
    pub fn bridge(name: &str) -> Self {
        HostInterface {
            name: name.to_owned(),
            mac: "52:54:00:00:00:b0".to_owned(),
            mtu: 1500,
            operstate: "down".to_owned(),
            bridge: Some((false, 1500)),
        }
    }

    /// An ethernet interface that is up.
    pub fn ethernet(name: &str, mac: &str) -> Self {
        HostInterface {
            name: name.to_owned(),
            mac: mac.to_owned(),
            mtu: 1500,
            operstate: "up".to_owned(),
            bridge: None,
        }
    }

    /// Whether libvirt calls it active.
    pub fn is_active(&self) -> bool {
        self.operstate == "up"
    }

    /// `InterfaceGetXMLDesc` in the udev backend's layout (measured on libvirt
    /// 11.3): a bridge lists its MTU and bridge settings, an ethernet
    /// interface its MTU, link state and MAC address.
    pub(crate) fn xml(&self) -> String {
        match self.bridge {
            Some((stp, delay)) => format!(
                "<interface type='bridge' name='{}'>\n  <mtu size='{}'/>\n  \
                 <bridge stp='{}' delay='{delay}'>\n  </bridge>\n</interface>\n",
                self.name,
                self.mtu,
                if stp { "on" } else { "off" },
            ),
            None => format!(
                "<interface type='ethernet' name='{}'>\n  <mtu size='{}'/>\n  \
                 <link state='{}'/>\n  <mac address='{}'/>\n</interface>\n",
                self.name, self.mtu, self.operstate, self.mac,
            ),
        }
    }
}

/// The domain capabilities XML for a domain type and architecture: the
/// parts a provider reads (the firmware kinds and loaders) in libvirt's
/// layout, the rest left out.
pub(crate) fn domain_capabilities(host: &HostConfig, virttype: &str, arch: &str) -> String {
    let efi = !host.uefi_firmware.is_empty();
    let mut out = format!(
        "<domainCapabilities>\n  <path>/usr/bin/qemu-system-{arch}</path>\n  \
         <domain>{virttype}</domain>\n  <machine>pc-q35-10.0</machine>\n  <arch>{arch}</arch>\n  \
         <os supported='yes'>\n    <enum name='firmware'>\n"
    );
    if efi {
        out.push_str("      <value>efi</value>\n");
    }
    out.push_str("    </enum>\n");
    out.push_str(&format!(
        "    <loader supported='{}'>\n",
        if efi { "yes" } else { "no" }
    ));
    for f in &host.uefi_firmware {
        out.push_str(&format!("      <value>{f}</value>\n"));
    }
    out.push_str(
        "      <enum name='type'>\n        <value>rom</value>\n        <value>pflash</value>\n      \
         </enum>\n    </loader>\n  </os>\n</domainCapabilities>\n",
    );
    out
}

fn default_capabilities() -> String {
    "<capabilities>\n  <host>\n    <uuid>00000000-0000-4000-8000-00000000fa4e</uuid>\n    \
     <cpu>\n      <arch>x86_64</arch>\n    </cpu>\n  </host>\n  <guest>\n    \
     <os_type>hvm</os_type>\n    <arch name='x86_64'>\n      <wordsize>64</wordsize>\n      \
     <emulator>/usr/bin/qemu-system-x86_64</emulator>\n      <machine>q35</machine>\n      \
     <domain type='qemu'/>\n      <domain type='kvm'/>\n    </arch>\n  </guest>\n</capabilities>\n"
        .to_owned()
}

/// The whole fake host.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) host: HostConfig,
    pub(crate) domains: BTreeMap<Uuid, Domain>,
    pub(crate) next_id: i32,
    pub(crate) nvram_files: BTreeSet<String>,
    pub(crate) pools: BTreeMap<String, Pool>,
    /// Directories on the host that no pool holds (left by undefined or
    /// stopped transient pools), by path.
    pub(crate) directories: BTreeMap<String, Directory>,
    pub(crate) arp_failure: bool,
    pub(crate) next_auto_ip: u32,
    /// Out-of-band "the guest agent never answers" switch per domain name.
    pub(crate) agent_broken: BTreeSet<String>,
    /// Domain names whose boot is held: the guest reports no address and its
    /// agent does not answer until released.
    pub(crate) boot_held: BTreeSet<String>,
    /// Whether every boot is held.
    pub(crate) hold_all_boots: bool,
    /// Addresses set by tests, per domain name and source.
    pub(crate) addresses: HashMap<(String, AddressSource), Vec<DomainInterface>>,
}

pub(crate) fn check_flags(given: u32, allowed: u32, function: &str) -> Result<(), VirError> {
    if given & !allowed != 0 {
        return Err(VirError::unsupported_flags(given & !allowed, function));
    }
    Ok(())
}

pub(crate) fn auto_ip(n: u32) -> String {
    // Documentation ranges only: 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24.
    let nets = ["192.0.2", "198.51.100", "203.0.113"];
    let n = n % (3 * 250);
    format!("{}.{}", nets[(n / 250) as usize], n % 250 + 2)
}

pub(crate) fn mac_for(uuid: &Uuid) -> String {
    let b = uuid.as_bytes();
    format!("52:54:00:{:02x}:{:02x}:{:02x}", b[13], b[14], b[15])
}

impl State {
    pub(crate) fn new(host: HostConfig) -> Self {
        State {
            host,
            domains: BTreeMap::new(),
            next_id: 1,
            nvram_files: BTreeSet::new(),
            pools: BTreeMap::new(),
            directories: BTreeMap::new(),
            arp_failure: false,
            next_auto_ip: 0,
            agent_broken: BTreeSet::new(),
            boot_held: BTreeSet::new(),
            hold_all_boots: false,
            addresses: HashMap::new(),
        }
    }

    /// The host interface of that name; `function` names the public call
    /// in the error of a host without an interface driver.
    pub(crate) fn host_interface(
        &self,
        name: &str,
        function: &str,
    ) -> Result<&HostInterface, VirError> {
        self.host
            .interfaces
            .as_ref()
            .ok_or_else(|| VirError::no_support(function))?
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| VirError::no_interface_name(name))
    }

    /// Checks the model's invariants; used by tests.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let mut ids = BTreeSet::new();
        let mut names = BTreeSet::new();
        for d in self.domains.values() {
            if !names.insert(d.name.clone()) {
                return Err(format!("duplicate domain name {}", d.name));
            }
            match (d.active(), d.id) {
                (true, id) if id >= 1 => {
                    if !ids.insert(id) {
                        return Err(format!("duplicate id {id}"));
                    }
                }
                (false, -1) => {}
                (a, id) => return Err(format!("domain {} active={a} with id {id}", d.name)),
            }
            if d.active() != d.state.is_active() {
                return Err(format!(
                    "domain {} active={} in state {:?}",
                    d.name,
                    d.active(),
                    d.state
                ));
            }
            if !d.active() && !d.persistent {
                return Err(format!("inactive transient domain {}", d.name));
            }
        }
        for p in self.pools.values() {
            let i = p.info();
            if i.available != i.capacity.saturating_sub(i.allocation) {
                return Err(format!("pool {} accounting broken", p.name));
            }
            if !p.active && !p.persistent {
                return Err(format!("inactive transient pool {}", p.name));
            }
            if p.active && !p.built {
                return Err(format!("pool {} runs without its directory", p.name));
            }
            if !p.built && !p.volumes.is_empty() {
                return Err(format!("pool {} has files but no directory", p.name));
            }
            if self.directories.contains_key(&p.path) && p.built {
                return Err(format!("directory {} held twice", p.path));
            }
        }
        Ok(())
    }
}
