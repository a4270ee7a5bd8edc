//! The `kvm2:` configuration block: parsing from YAML, defaults and validation.
//!
//! Validation names the offending field the way the operator's configuration does
//! (`kvm2.hosts[0].address: is empty`), so a user can find it in the file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// The metadata namespace kvm2 writes its mark in (shared with the operator's kvm2).
pub const DEFAULT_NAMESPACE: &str =
    "https://gitea.home.hrajfrisbee.cz/kacerr/egress-proxies-operator/kvm2";

/// The libvirt socket on a host when the configuration names none.
pub const DEFAULT_SOCKET: &str = "/var/run/libvirt/libvirt-sock";

/// A configuration problem, naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The field path, e.g. `kvm2.hosts[0].address`.
    pub field: String,
    /// What is wrong, as a lowercase fragment.
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for ConfigError {}

fn err(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// A file holding the `kvm2:` block at its top level.
#[derive(Debug, Deserialize)]
struct File {
    kvm2: Option<Config>,
}

/// The kvm2 provider's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// The configured provider name that every error carries.
    #[serde(default = "default_name")]
    pub name: String,
    /// The hypervisor hosts, in order (listing and health checks follow it).
    pub hosts: Vec<HostConfig>,
    /// The storage pool on every host.
    #[serde(default = "default_pool")]
    pub pool: String,
    /// The host bridge the instances' NIC joins.
    #[serde(default = "default_bridge")]
    pub bridge: String,
    /// The libvirt domain type.
    #[serde(default)]
    pub domain_type: DomainType,
    /// The images instances boot from.
    pub images: Vec<ImageConfig>,
    /// The image used when a request names none; the first image by default.
    #[serde(default)]
    pub default_image: Option<String>,
    /// Instance sizes.
    #[serde(default)]
    pub sizes: Sizes,
    /// Placement zone → host name.
    #[serde(default)]
    pub placement: BTreeMap<String, String>,
    /// Deadlines.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// The metadata namespace of the mark.
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Extra vendor data run after the guest agent script (multipart when set).
    #[serde(default)]
    pub vendor_data: Option<String>,
}

fn default_name() -> String {
    "kvm2".into()
}
fn default_pool() -> String {
    "default".into()
}
fn default_bridge() -> String {
    "br0".into()
}
fn default_namespace() -> String {
    DEFAULT_NAMESPACE.into()
}
fn default_port() -> u16 {
    22
}
fn default_user() -> String {
    "root".into()
}
fn default_socket() -> String {
    DEFAULT_SOCKET.into()
}

/// One hypervisor host.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostConfig {
    /// The host's name in IDs, listings and health reports.
    pub name: String,
    /// DNS name or IP address of its SSH server.
    pub address: String,
    /// SSH port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// SSH user.
    #[serde(default = "default_user")]
    pub user: String,
    /// Private key file, re-read on every dial.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// known_hosts file, re-read on every dial.
    #[serde(default)]
    pub known_hosts_file: Option<PathBuf>,
    /// libvirtd's socket on the host.
    #[serde(default = "default_socket")]
    pub socket: String,
}

/// The libvirt domain type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DomainType {
    /// Hardware virtualisation.
    #[default]
    Kvm,
    /// Software emulation.
    Qemu,
}

impl DomainType {
    /// The value of `<domain type=…>`.
    pub fn as_str(self) -> &'static str {
        match self {
            DomainType::Kvm => "kvm",
            DomainType::Qemu => "qemu",
        }
    }
}

/// The firmware an image boots with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Firmware {
    /// UEFI with secure boot off (the default).
    #[default]
    Efi,
    /// SeaBIOS.
    Bios,
}

/// One bootable image.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageConfig {
    /// The name requests use.
    pub name: String,
    /// Where to download the qcow2 from.
    pub url: String,
    /// The expected SHA-256 of the download, in hex.
    #[serde(default)]
    pub sha256: Option<String>,
    /// The firmware it boots with.
    #[serde(default)]
    pub firmware: Firmware,
}

/// Instance sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Sizes {
    /// Virtual CPUs.
    pub vcpus: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Root disk in GiB.
    pub disk_gib: u64,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            vcpus: 1,
            memory_mib: 512,
            disk_gib: 10,
        }
    }
}

/// Deadlines, written as Go writes durations: `500ms`, `90s`, `1m30s`, `1.5h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Timeouts {
    /// Opening a connection, handshake included.
    #[serde(with = "duration")]
    pub dial: Duration,
    /// One RPC.
    #[serde(with = "duration")]
    pub rpc: Duration,
    /// Starting a domain.
    #[serde(with = "duration")]
    pub start: Duration,
    /// One image upload.
    #[serde(with = "duration")]
    pub upload: Duration,
    /// A whole Create, waiting for the address included.
    #[serde(with = "duration")]
    pub create: Duration,
    /// Silence after which the client PINGs the daemon.
    #[serde(with = "duration")]
    pub keepalive_interval: Duration,
    /// Unanswered PINGs after which a connection is dead.
    pub keepalive_count: u32,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            dial: Duration::from_secs(10),
            rpc: Duration::from_secs(30),
            start: Duration::from_secs(90),
            upload: Duration::from_secs(20 * 60),
            create: Duration::from_secs(5 * 60),
            keepalive_interval: Duration::from_secs(5),
            keepalive_count: 5,
        }
    }
}

/// Parses a duration as Go writes them (`90s`, `1m30s`, `1.5h`, `500ms`), with
/// units from `ns` to `h` (jiff's friendly format, which also reads ISO 8601's
/// `PT1M30S`). A bare number has no unit and is refused, as is a negative duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d: jiff::SignedDuration = s
        .trim()
        .parse()
        .map_err(|e| format!("invalid duration {s:?} (write it as 90s, 1m30s or 1.5h): {e}"))?;
    Duration::try_from(d).map_err(|_| format!("invalid duration {s:?}: must not be negative"))
}

mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_duration(&s).map_err(serde::de::Error::custom)
    }
}

impl Config {
    /// Parses a YAML document whose top level holds a `kvm2:` block, and validates it.
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        let file: File = serde_saphyr::from_str(text).map_err(|e| err("kvm2", format!("{e}")))?;
        let cfg = file.kvm2.ok_or_else(|| err("kvm2", "block is missing"))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// A one-host configuration from `KVM2_TEST_*` variables (the real-host test
    /// path): `HOST`, `USER`, `SSH_KEY`, `KNOWN_HOSTS`, `BRIDGE`, `IMAGE_URL`, and
    /// optionally `IMAGE_SHA256`, `POOL`, `SOCKET`, `PORT`, `TIMEOUT` (Create's).
    /// `None` when `KVM2_TEST_HOST` is unset.
    pub fn from_env() -> Option<Result<Config, ConfigError>> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// [`Config::from_env`] over any variable lookup.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<Result<Config, ConfigError>> {
        let get = |k: &str| var(&format!("KVM2_TEST_{k}")).filter(|v| !v.is_empty());
        let host = get("HOST")?;
        let need = |k: &str| get(k).ok_or_else(|| err(format!("KVM2_TEST_{k}"), "is not set"));
        let build = || -> Result<Config, ConfigError> {
            // A DNS name gives its first label; an IP address all of it, its
            // separators made dashes (`127.0.0.1` → `127-0-0-1`, not `127`).
            let name: String = if host.parse::<std::net::IpAddr>().is_ok() {
                host.replace(['.', ':'], "-")
            } else {
                host.split('.').next().unwrap_or(&host).to_owned()
            };
            let mut timeouts = Timeouts::default();
            if let Some(t) = get("TIMEOUT") {
                timeouts.create = parse_duration(&t).map_err(|e| err("KVM2_TEST_TIMEOUT", e))?;
            }
            let port = match get("PORT") {
                Some(p) => p
                    .parse()
                    .map_err(|_| err("KVM2_TEST_PORT", format!("invalid port {p:?}")))?,
                None => default_port(),
            };
            let cfg = Config {
                name: "kvm2".into(),
                hosts: vec![HostConfig {
                    name: name.clone(),
                    address: host.clone(),
                    port,
                    user: need("USER")?,
                    key_file: Some(need("SSH_KEY")?.into()),
                    known_hosts_file: Some(need("KNOWN_HOSTS")?.into()),
                    socket: get("SOCKET").unwrap_or_else(default_socket),
                }],
                pool: get("POOL").unwrap_or_else(default_pool),
                bridge: need("BRIDGE")?,
                domain_type: DomainType::Kvm,
                images: vec![ImageConfig {
                    name: "test-image".into(),
                    url: need("IMAGE_URL")?,
                    sha256: get("IMAGE_SHA256"),
                    firmware: Firmware::Efi,
                }],
                default_image: None,
                sizes: Sizes::default(),
                placement: BTreeMap::from([(name.clone(), name)]),
                timeouts,
                namespace: default_namespace(),
                vendor_data: None,
            };
            cfg.validate()?;
            Ok(cfg)
        };
        Some(build())
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.name.trim().is_empty() {
            return Err(err("kvm2.name", "is empty"));
        }
        self.validate_hosts()?;
        if self.pool.trim().is_empty() {
            return Err(err("kvm2.pool", "is empty"));
        }
        if self.bridge.trim().is_empty() {
            return Err(err("kvm2.bridge", "is empty"));
        }
        self.validate_images()?;
        if self.sizes.vcpus == 0 {
            return Err(err("kvm2.sizes.vcpus", "must be at least 1"));
        }
        if self.sizes.memory_mib < 64 {
            return Err(err("kvm2.sizes.memoryMib", "must be at least 64"));
        }
        if self.sizes.disk_gib == 0 {
            return Err(err("kvm2.sizes.diskGib", "must be at least 1"));
        }
        for (zone, host) in &self.placement {
            if !self.hosts.iter().any(|h| &h.name == host) {
                return Err(err(
                    format!("kvm2.placement.{zone}"),
                    format!("names no configured host: {host:?}"),
                ));
            }
        }
        self.validate_timeouts()?;
        if self.namespace.trim().is_empty() {
            return Err(err("kvm2.namespace", "is empty"));
        }
        Ok(())
    }

    /// Checks the hosts: at least one, each with a distinct, well-formed name and its fields set.
    fn validate_hosts(&self) -> Result<(), ConfigError> {
        if self.hosts.is_empty() {
            return Err(err("kvm2.hosts", "needs at least one host"));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            let f = |field: &str| format!("kvm2.hosts[{i}].{field}");
            if h.name.is_empty() {
                return Err(err(f("name"), "is empty"));
            }
            if !h
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
            {
                return Err(err(
                    f("name"),
                    format!(
                        "{:?} may hold only letters, digits, '-', '.' and '_'",
                        h.name
                    ),
                ));
            }
            if h.name == "." || h.name == ".." {
                // An ID's host part; `hosts/../domains/x` is no kvm2 ID.
                return Err(err(f("name"), format!("{:?} is not a host name", h.name)));
            }
            if self.hosts[..i].iter().any(|o| o.name == h.name) {
                return Err(err(f("name"), format!("{:?} is used twice", h.name)));
            }
            if h.address.trim().is_empty() {
                return Err(err(f("address"), "is empty"));
            }
            if h.port == 0 {
                return Err(err(f("port"), "must not be 0"));
            }
            if h.user.trim().is_empty() {
                return Err(err(f("user"), "is empty"));
            }
            if !h.socket.starts_with('/') {
                return Err(err(f("socket"), "must be an absolute path"));
            }
        }
        Ok(())
    }

    /// Checks the images: at least one, each with a distinct name, an http(s) URL and a well-formed digest, and the default among them.
    fn validate_images(&self) -> Result<(), ConfigError> {
        if self.images.is_empty() {
            return Err(err("kvm2.images", "needs at least one image"));
        }
        for (i, img) in self.images.iter().enumerate() {
            let f = |field: &str| format!("kvm2.images[{i}].{field}");
            if conformance::validate_name(&img.name).is_err() {
                return Err(err(
                    f("name"),
                    format!("{:?} must be lowercase letters, digits and '-'", img.name),
                ));
            }
            if self.images[..i].iter().any(|o| o.name == img.name) {
                return Err(err(f("name"), format!("{:?} is used twice", img.name)));
            }
            if !(img.url.starts_with("http://") || img.url.starts_with("https://")) {
                return Err(err(f("url"), "must be an http or https URL"));
            }
            if let Some(s) = &img.sha256
                && (s.len() != 64 || !s.chars().all(|c| c.is_ascii_hexdigit()))
            {
                return Err(err(f("sha256"), "must be 64 hexadecimal digits"));
            }
        }
        if let Some(d) = &self.default_image
            && !self.images.iter().any(|i| &i.name == d)
        {
            return Err(err("kvm2.defaultImage", format!("names no image: {d:?}")));
        }
        Ok(())
    }

    /// Checks that every timeout is positive and the upload's is at most 20 minutes.
    fn validate_timeouts(&self) -> Result<(), ConfigError> {
        let t = &self.timeouts;
        for (field, d) in [
            ("dial", t.dial),
            ("rpc", t.rpc),
            ("start", t.start),
            ("upload", t.upload),
            ("create", t.create),
            ("keepaliveInterval", t.keepalive_interval),
        ] {
            if d.is_zero() {
                return Err(err(format!("kvm2.timeouts.{field}"), "must be positive"));
            }
        }
        if t.upload > Duration::from_secs(20 * 60) {
            return Err(err("kvm2.timeouts.upload", "must be at most 20m"));
        }
        Ok(())
    }

    /// The host a placement zone maps to. A zone that is itself a host name maps to it.
    pub fn host_for_zone(&self, zone: &str) -> Option<&HostConfig> {
        let name = self.placement.get(zone).map(String::as_str).unwrap_or(zone);
        self.host(name)
    }

    /// A configured host by name.
    pub fn host(&self, name: &str) -> Option<&HostConfig> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The image a request names, or the default one.
    pub fn image(&self, name: Option<&str>) -> Option<&ImageConfig> {
        let wanted = name.or(self.default_image.as_deref());
        match wanted {
            Some(n) => self.images.iter().find(|i| i.name == n),
            None => self.images.first(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const GOOD: &str = r#"
kvm2:
  name: kvm2-home
  hosts:
    - name: beelink
      address: beelink.example
      user: novakj
      keyFile: /etc/kvm-ssh/id_ed25519
      knownHostsFile: /etc/kvm-ssh/known_hosts
  pool: default
  bridge: br0
  domainType: kvm
  images:
    - name: debian-13
      url: https://cloud.debian.org/debian-13-genericcloud-amd64.qcow2
      firmware: efi
  sizes:
    vcpus: 2
    memoryMib: 1024
    diskGib: 20
  placement:
    home: beelink
  timeouts:
    create: 6m
"#;

    /// Found by the `load_config` fuzz target's invariant: a host named
    /// `.` or `..` was accepted, but no ID naming it parses.
    #[test]
    fn dot_host_names_are_refused() {
        for name in [".", ".."] {
            let yaml = format!(
                "kvm2:\n  hosts:\n    - {{name: '{name}', address: a}}\n  images:\n    - {{name: i, url: 'https://i'}}\n"
            );
            let e = Config::from_yaml(&yaml).unwrap_err();
            assert_eq!(e.field, "kvm2.hosts[0].name", "{e}");
        }
    }

    #[test]
    fn a_full_block_parses_with_defaults() {
        let c = Config::from_yaml(GOOD).unwrap();
        assert_eq!(c.name, "kvm2-home");
        assert_eq!(c.hosts[0].port, 22);
        assert_eq!(c.hosts[0].socket, DEFAULT_SOCKET);
        assert_eq!(c.timeouts.create, Duration::from_secs(360));
        assert_eq!(c.timeouts.dial, Duration::from_secs(10));
        assert_eq!(c.sizes.vcpus, 2);
        assert_eq!(c.host_for_zone("home").unwrap().name, "beelink");
        assert_eq!(c.image(None).unwrap().name, "debian-13");
        assert_eq!(c.namespace, DEFAULT_NAMESPACE);
    }

    #[rstest]
    #[case(
        "address: beelink.example",
        "address: \"\"",
        "kvm2.hosts[0].address: is empty"
    )]
    #[case("name: beelink", "name: bee/link", "kvm2.hosts[0].name")]
    #[case("user: novakj", "user: novakj\n      port: 0", "kvm2.hosts[0].port")]
    #[case("url: https://", "url: ftp://", "kvm2.images[0].url")]
    #[case(
        "firmware: efi",
        "firmware: efi\n      sha256: abc",
        "kvm2.images[0].sha256"
    )]
    #[case("home: beelink", "home: nowhere", "kvm2.placement.home")]
    #[case("vcpus: 2", "vcpus: 0", "kvm2.sizes.vcpus")]
    #[case("create: 6m", "create: 0s", "kvm2.timeouts.create")]
    #[case("create: 6m", "upload: 2h", "kvm2.timeouts.upload")]
    #[case("bridge: br0", "bridge: \"\"", "kvm2.bridge")]
    fn validation_names_the_field(#[case] from: &str, #[case] to: &str, #[case] field: &str) {
        let text = GOOD.replacen(from, to, 1);
        let e = Config::from_yaml(&text).unwrap_err();
        assert!(e.to_string().starts_with(field), "{e}");
    }

    #[test]
    fn missing_block_and_unknown_fields_are_errors() {
        assert!(Config::from_yaml("other: 1\n").is_err());
        let e = Config::from_yaml(&GOOD.replacen("pool: default", "pol: default", 1));
        assert!(e.is_err());
    }

    #[test]
    fn from_vars_builds_one_host() {
        let vars = BTreeMap::from([
            ("KVM2_TEST_HOST", "beelink.example"),
            ("KVM2_TEST_USER", "novakj"),
            ("KVM2_TEST_SSH_KEY", "/k"),
            ("KVM2_TEST_KNOWN_HOSTS", "/kh"),
            ("KVM2_TEST_BRIDGE", "br0"),
            ("KVM2_TEST_IMAGE_URL", "https://example/debian.qcow2"),
            ("KVM2_TEST_TIMEOUT", "7m"),
        ]);
        let c = Config::from_vars(|k| vars.get(k).map(|v| v.to_string()))
            .unwrap()
            .unwrap();
        assert_eq!(c.hosts[0].name, "beelink");
        assert_eq!(
            c.host_for_zone("beelink").unwrap().address,
            "beelink.example"
        );
        assert_eq!(c.timeouts.create, Duration::from_secs(420));
        let ip = Config::from_vars(|k| match k {
            "KVM2_TEST_HOST" => Some("127.0.0.1".to_string()),
            _ => vars.get(k).map(|v| v.to_string()),
        })
        .unwrap()
        .unwrap();
        assert_eq!(ip.hosts[0].name, "127-0-0-1", "an address is kept whole");
        assert!(Config::from_vars(|_| None).is_none());
        let e = Config::from_vars(|k| (k == "KVM2_TEST_HOST").then(|| "h".to_string()))
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().starts_with("KVM2_TEST_"), "{e}");
    }

    #[rstest]
    #[case("500ms", Some(Duration::from_millis(500)))]
    #[case("10s", Some(Duration::from_secs(10)))]
    #[case("5m", Some(Duration::from_secs(300)))]
    #[case("1h", Some(Duration::from_secs(3600)))]
    #[case("90s", Some(Duration::from_secs(90)))]
    #[case("1m30s", Some(Duration::from_secs(90)))]
    #[case("1.5h", Some(Duration::from_secs(5400)))]
    #[case("2h45m0.5s", Some(Duration::from_millis(9_900_500)))]
    #[case("300us", Some(Duration::from_micros(300)))]
    #[case("10", None)]
    #[case("s", None)]
    #[case("-5m", None)]
    #[case("5 fortnights", None)]
    fn durations(#[case] text: &str, #[case] want: Option<Duration>) {
        assert_eq!(parse_duration(text).ok(), want, "{text}");
    }

    /// Go's forms load from the file; a bad one names its field and says how to
    /// write it.
    #[test]
    fn go_durations_load_and_a_bad_one_is_explained() {
        let c = Config::from_yaml(&GOOD.replacen("create: 6m", "create: 1m30s\n    rpc: 1.5h", 1))
            .unwrap();
        assert_eq!(c.timeouts.create, Duration::from_secs(90));
        assert_eq!(c.timeouts.rpc, Duration::from_secs(5400));
        let e = Config::from_yaml(&GOOD.replacen("create: 6m", "create: 6", 1)).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("\"6\"") && text.contains("1m30s"), "{text}");
    }
}
