//! libvirt's error values as the fake reports them: the error number, the
//! domain (the libvirt subsystem that raised it) and the full message text,
//! built by one constructor per failure so each text is written once.
//!
//! Numbers, domains and message texts follow libvirt's `virerror.h` and
//! `virerror.c` (restated in the project's protocol reference) and what real
//! libvirtd 9.0 and 11.3 were measured to return.

use std::fmt;

/// libvirt error numbers (`virErrorNumber`) that the fake raises.
///
/// Kept as plain `i32` constants so that any number, including ones the fake
/// never raises by itself, can be injected as a fault.
pub mod code {
    /// `VIR_ERR_INTERNAL_ERROR`.
    pub const INTERNAL_ERROR: i32 = 1;
    /// `VIR_ERR_NO_SUPPORT`.
    pub const NO_SUPPORT: i32 = 3;
    /// `VIR_ERR_INVALID_ARG`.
    pub const INVALID_ARG: i32 = 8;
    /// `VIR_ERR_OPERATION_FAILED`.
    pub const OPERATION_FAILED: i32 = 9;
    /// `VIR_ERR_NO_NAME`.
    pub const NO_NAME: i32 = 21;
    /// `VIR_ERR_XML_ERROR`.
    pub const XML_ERROR: i32 = 27;
    /// `VIR_ERR_XML_DETAIL` (a syntax error found by the XML parser).
    pub const XML_DETAIL: i32 = 35;
    /// `VIR_ERR_OPERATION_DENIED`.
    pub const OPERATION_DENIED: i32 = 29;
    /// `VIR_ERR_SYSTEM_ERROR`.
    pub const SYSTEM_ERROR: i32 = 38;
    /// `VIR_ERR_RPC`.
    pub const RPC: i32 = 39;
    /// `VIR_ERR_NO_DOMAIN`.
    pub const NO_DOMAIN: i32 = 42;
    /// `VIR_ERR_AUTH_FAILED`.
    pub const AUTH_FAILED: i32 = 45;
    /// `VIR_ERR_NO_STORAGE_POOL`.
    pub const NO_STORAGE_POOL: i32 = 49;
    /// `VIR_ERR_NO_STORAGE_VOL`.
    pub const NO_STORAGE_VOL: i32 = 50;
    /// `VIR_ERR_OPERATION_INVALID`.
    pub const OPERATION_INVALID: i32 = 55;
    /// `VIR_ERR_OPERATION_TIMEOUT`.
    pub const OPERATION_TIMEOUT: i32 = 68;
    /// `VIR_ERR_ARGUMENT_UNSUPPORTED`.
    pub const ARGUMENT_UNSUPPORTED: i32 = 74;
    /// `VIR_ERR_NO_DOMAIN_METADATA`.
    pub const NO_DOMAIN_METADATA: i32 = 80;
    /// `VIR_ERR_AGENT_UNRESPONSIVE`.
    pub const AGENT_UNRESPONSIVE: i32 = 86;
    /// `VIR_ERR_ACCESS_DENIED`.
    pub const ACCESS_DENIED: i32 = 88;
    /// `VIR_ERR_STORAGE_VOL_EXIST`.
    pub const STORAGE_VOL_EXIST: i32 = 90;
    /// `VIR_ERR_NO_INTERFACE`.
    pub const NO_INTERFACE: i32 = 57;
}

/// libvirt error domains (`virErrorDomain`): which subsystem raised an error.
pub mod domain {
    /// `VIR_FROM_NONE`.
    pub const NONE: i32 = 0;
    /// `VIR_FROM_XML`.
    pub const XML: i32 = 5;
    /// `VIR_FROM_RPC`.
    pub const RPC: i32 = 7;
    /// `VIR_FROM_QEMU`.
    pub const QEMU: i32 = 10;
    /// `VIR_FROM_STORAGE`.
    pub const STORAGE: i32 = 18;
    /// `VIR_FROM_INTERFACE`.
    pub const INTERFACE: i32 = 26;
    /// `VIR_FROM_DOMAIN` (the domain configuration code).
    pub const DOMAIN: i32 = 20;
    /// `VIR_FROM_STREAMS`.
    pub const STREAMS: i32 = 38;
}

/// `VIR_ERR_ERROR`, the level of every error the fake raises.
pub const LEVEL_ERROR: i32 = 2;

/// One libvirt error, shaped like `remote_error` on the wire.
///
/// `message` is the full text a client shows (`"Domain not found: no domain
/// with matching name 'x'"`); `str1` is the format of its prefix and `str2`
/// the detail, as libvirtd fills them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirError {
    /// The error number (`virErrorNumber`, see [`code`]).
    pub code: i32,
    /// The raising subsystem (`virErrorDomain`, see [`domain`]).
    pub domain: i32,
    /// The full message text.
    pub message: String,
    /// The level, always [`LEVEL_ERROR`] for raised errors.
    pub level: i32,
    /// The message format of the error number (`"Domain not found: %s"`).
    pub str1: Option<String>,
    /// The detail text.
    pub str2: Option<String>,
    /// Unused by the errors the fake raises.
    pub str3: Option<String>,
    /// Unused by the errors the fake raises, `-1`.
    pub int1: i32,
    /// Unused by the errors the fake raises, `-1`.
    pub int2: i32,
}

impl fmt::Display for VirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for VirError {}

/// The message prefix libvirt puts before the detail for an error number,
/// with `%s` where the detail goes (libvirt's `virErrorMsg` table).
fn prefix_format(code: i32) -> &'static str {
    match code {
        code::INTERNAL_ERROR => "internal error: %s",
        code::NO_SUPPORT => "this function is not supported by the connection driver: %s",
        code::INVALID_ARG => "invalid argument: %s",
        code::OPERATION_FAILED => "operation failed: %s",
        code::NO_NAME => "missing name information in %s",
        code::XML_ERROR => "XML error: %s",
        code::OPERATION_DENIED => "operation forbidden: %s",
        code::RPC => "RPC error: %s",
        code::NO_DOMAIN => "Domain not found: %s",
        code::AUTH_FAILED => "authentication failed: %s",
        code::NO_STORAGE_POOL => "Storage pool not found: %s",
        code::NO_STORAGE_VOL => "Storage volume not found: %s",
        code::OPERATION_INVALID => "Requested operation is not valid: %s",
        code::OPERATION_TIMEOUT => "Timed out during operation: %s",
        code::ARGUMENT_UNSUPPORTED => "argument unsupported: %s",
        code::NO_DOMAIN_METADATA => "metadata not found: %s",
        code::AGENT_UNRESPONSIVE => "Guest agent is not responding: %s",
        code::ACCESS_DENIED => "access denied: %s",
        code::STORAGE_VOL_EXIST => "storage volume %s exists already",
        code::NO_INTERFACE => "Interface not found: %s",
        _ => "%s",
    }
}

impl VirError {
    /// Builds an error the way libvirt's `virReportError` does: the message is
    /// the error number's format with `detail` filled in.
    pub fn new(code: i32, domain: i32, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let format = prefix_format(code);
        VirError {
            code,
            domain,
            message: format.replacen("%s", &detail, 1),
            level: LEVEL_ERROR,
            str1: Some(format.to_owned()),
            str2: Some(detail),
            str3: None,
            int1: -1,
            int2: -1,
        }
    }

    /// `VIR_ERR_NO_DOMAIN` for a lookup by name.
    pub fn no_domain_name(name: &str) -> Self {
        Self::new(
            code::NO_DOMAIN,
            domain::QEMU,
            format!("no domain with matching name '{name}'"),
        )
    }

    /// `VIR_ERR_NO_DOMAIN` for a handle whose UUID is unknown.
    pub fn no_domain_uuid(uuid: &uuid::Uuid, name: &str) -> Self {
        Self::new(
            code::NO_DOMAIN,
            domain::QEMU,
            format!("no domain with matching uuid '{uuid}' ({name})"),
        )
    }

    /// `VIR_ERR_NO_INTERFACE` for a lookup by name (the udev backend's words).
    pub fn no_interface_name(name: &str) -> Self {
        Self::new(
            code::NO_INTERFACE,
            domain::INTERFACE,
            format!("couldn't find interface named '{name}'"),
        )
    }

    /// `VIR_ERR_NO_SUPPORT`: the host has no driver for the call (`function`
    /// is the public API's name, `virInterfaceLookupByName`).
    pub fn no_support(function: &str) -> Self {
        Self::new(code::NO_SUPPORT, domain::NONE, function)
    }

    /// `VIR_ERR_NO_STORAGE_POOL` for a lookup by name.
    pub fn no_pool_name(name: &str) -> Self {
        Self::new(
            code::NO_STORAGE_POOL,
            domain::STORAGE,
            format!("no storage pool with matching name '{name}'"),
        )
    }

    /// `VIR_ERR_NO_STORAGE_POOL` for a handle whose UUID is unknown.
    pub fn no_pool_uuid(uuid: &uuid::Uuid, name: &str) -> Self {
        Self::new(
            code::NO_STORAGE_POOL,
            domain::STORAGE,
            format!("no storage pool with matching uuid '{uuid}' ({name})"),
        )
    }

    /// `VIR_ERR_NO_STORAGE_VOL` for a lookup by name.
    pub fn no_vol_name(name: &str) -> Self {
        Self::new(
            code::NO_STORAGE_VOL,
            domain::STORAGE,
            format!("no storage vol with matching name '{name}'"),
        )
    }

    /// `VIR_ERR_STORAGE_VOL_EXIST` from the storage driver's create.
    pub fn vol_exists(name: &str) -> Self {
        Self::new(
            code::STORAGE_VOL_EXIST,
            domain::STORAGE,
            format!("'{name}'"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for a pool that is not running.
    pub fn pool_not_active(name: &str) -> Self {
        Self::new(
            code::OPERATION_INVALID,
            domain::STORAGE,
            format!("storage pool '{name}' is not active"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for starting or building a pool that runs.
    pub fn pool_already_active(name: &str) -> Self {
        Self::new(
            code::OPERATION_INVALID,
            domain::STORAGE,
            format!("storage pool '{name}' is already active"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for deleting or undefining a pool that
    /// runs.
    pub fn pool_still_active(name: &str) -> Self {
        Self::new(
            code::OPERATION_INVALID,
            domain::STORAGE,
            format!("storage pool '{name}' is still active"),
        )
    }

    /// `VIR_ERR_OPERATION_FAILED` for a new pool whose name another pool
    /// (with another UUID) has.
    pub fn pool_exists(name: &str, uuid: &uuid::Uuid) -> Self {
        Self::new(
            code::OPERATION_FAILED,
            domain::STORAGE,
            format!("pool '{name}' already exists with uuid {uuid}"),
        )
    }

    /// `VIR_ERR_OPERATION_FAILED` for a pool whose UUID another pool (with
    /// another name) has.
    pub fn pool_uuid_taken(other: &str, uuid: &uuid::Uuid) -> Self {
        Self::new(
            code::OPERATION_FAILED,
            domain::STORAGE,
            format!("pool '{other}' is already defined with uuid {uuid}"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for creating a transient pool over a
    /// running one with the same name and UUID.
    pub fn pool_active_as(name: &str) -> Self {
        Self::new(
            code::OPERATION_INVALID,
            domain::STORAGE,
            format!("pool is already active as '{name}'"),
        )
    }

    /// `VIR_ERR_OPERATION_FAILED` for a pool whose target another pool uses.
    pub fn pool_source_conflict(other: &str) -> Self {
        Self::new(
            code::OPERATION_FAILED,
            domain::STORAGE,
            format!("Storage source conflict with pool: '{other}'"),
        )
    }

    /// `VIR_ERR_SYSTEM_ERROR`: what failed and the operating system's reason
    /// (`strerror`), as `virReportSystemError` writes them.
    pub fn system(domain: i32, text: impl Into<String>, reason: &str) -> Self {
        Self::new(
            code::SYSTEM_ERROR,
            domain,
            format!("{}: {reason}", text.into()),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for pausing or resuming a domain that is
    /// suspended to memory by its guest.
    pub fn domain_pmsuspended() -> Self {
        Self::new(
            code::OPERATION_INVALID,
            domain::QEMU,
            "domain is pmsuspended",
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` "domain is not running", as the generic
    /// domain code raises it (destroy, interface addresses, live metadata).
    pub fn domain_not_running() -> Self {
        Self::domain_not_running_from(domain::DOMAIN)
    }

    /// `VIR_ERR_OPERATION_INVALID` "domain is not running" raised by the given
    /// subsystem: the QEMU driver checks shutdown itself.
    pub fn domain_not_running_from(from: i32) -> Self {
        Self::new(code::OPERATION_INVALID, from, "domain is not running")
    }

    /// `VIR_ERR_OPERATION_INVALID` "domain is already running".
    pub fn domain_already_running() -> Self {
        Self::new(
            code::OPERATION_INVALID,
            domain::QEMU,
            "domain is already running",
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` raised when undefining a UEFI domain whose
    /// NVRAM file exists without `VIR_DOMAIN_UNDEFINE_NVRAM` or `KEEP_NVRAM`.
    pub fn undefine_with_nvram() -> Self {
        Self::new(
            code::OPERATION_INVALID,
            domain::QEMU,
            "cannot undefine domain with nvram",
        )
    }

    /// `VIR_ERR_NO_DOMAIN_METADATA` for a missing metadata element.
    pub fn no_metadata() -> Self {
        Self::new(
            code::NO_DOMAIN_METADATA,
            domain::DOMAIN,
            "Requested metadata element is not present",
        )
    }

    /// `VIR_ERR_INVALID_ARG` for flags a function does not accept.
    pub fn unsupported_flags(flags: u32, function: &str) -> Self {
        // The driver the function belongs to raises it, named by its prefix.
        let from = if function.starts_with("storage") {
            domain::STORAGE
        } else if function.starts_with("udevInterface") {
            domain::INTERFACE
        } else {
            domain::QEMU
        };
        Self::invalid_arg_check(
            from,
            format!("unsupported flags (0x{flags:x}) in function {function}"),
        )
    }

    /// `VIR_ERR_INVALID_ARG` with a free-form detail.
    pub fn invalid_arg(domain: i32, detail: impl Into<String>) -> Self {
        Self::new(code::INVALID_ARG, domain, detail)
    }

    /// `VIR_ERR_INVALID_ARG` from one of libvirt's argument-check macros
    /// (unsupported flags, flags that exclude each other, an argument that
    /// must or must not be NULL): libvirt 11.3 gives the bare text, without
    /// the "invalid argument: " prefix (measured by the fidelity comparison's
    /// metadata and domain-capabilities steps).
    pub fn invalid_arg_check(domain: i32, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        VirError {
            message: detail.clone(),
            str1: Some("%s".to_owned()),
            str2: Some(detail),
            ..Self::new(code::INVALID_ARG, domain, "")
        }
    }

    /// `VIR_ERR_XML_ERROR` with a parser detail.
    pub fn xml(detail: impl Into<String>) -> Self {
        Self::new(code::XML_ERROR, domain::XML, detail)
    }

    /// `VIR_ERR_XML_DETAIL`: the XML parser rejected a document, raised from
    /// the subsystem that parsed it. libvirt 11.3 words it as its libxml2
    /// handler does: the line, the parser's detail, then the line of input
    /// and a pointer to the column where the parser stopped.
    pub fn xml_syntax(from: i32, line: usize, detail: &str, context: &str, column: usize) -> Self {
        let message = format!(
            "at line {line}: {detail}\n{context}\n{}^",
            "-".repeat(column)
        );
        VirError {
            message: message.clone(),
            str1: Some("%s".to_owned()),
            str2: Some(message),
            ..Self::new(code::XML_DETAIL, from, "")
        }
    }

    /// `VIR_ERR_INTERNAL_ERROR` for a `<uuid>` that does not parse.
    pub fn malformed_uuid() -> Self {
        Self::internal(domain::DOMAIN, "malformed uuid element")
    }

    /// What libvirtd 9.0 answers to `AUTH_POLKIT` on a socket whose
    /// authentication is not polkit: the dispatcher fails without setting
    /// an error, so the client sees this generic one.
    pub fn error_not_set() -> Self {
        let message = "Library function returned error but did not set virError";
        VirError {
            message: message.to_owned(),
            str1: Some("%s".to_owned()),
            str2: Some(message.to_owned()),
            ..Self::new(code::INTERNAL_ERROR, domain::RPC, "")
        }
    }

    /// `VIR_ERR_SYSTEM_ERROR` from the stream when an upload sends more bytes
    /// than it declared. libvirtd 9.0 sent it to the client; 11.x only logs
    /// it and is then lost (see `FakeLibvirt::is_wedged`).
    pub fn stream_no_space() -> Self {
        Self::new(
            code::SYSTEM_ERROR,
            domain::STREAMS,
            "cannot write to stream: No space left on device",
        )
    }

    /// `VIR_ERR_NO_NAME` for a domain definition without `<name>`.
    pub fn missing_name() -> Self {
        VirError {
            message: "missing name information".to_owned(),
            str1: Some("missing name information".to_owned()),
            str2: None,
            ..Self::new(code::NO_NAME, domain::DOMAIN, "")
        }
    }

    /// `VIR_ERR_INTERNAL_ERROR` with a detail, from the given subsystem.
    pub fn internal(domain: i32, detail: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, domain, detail)
    }

    /// `VIR_ERR_SYSTEM_ERROR` for a missing file: the text and the
    /// operating system's reason, as `virReportSystemError` writes them.
    pub fn no_such_file(domain: i32, text: impl Into<String>) -> Self {
        Self::new(
            code::SYSTEM_ERROR,
            domain,
            format!("{}: No such file or directory", text.into()),
        )
    }

    /// `VIR_ERR_INTERNAL_ERROR` "hypervisor connection not open".
    pub fn not_open() -> Self {
        Self::internal(domain::RPC, "hypervisor connection not open")
    }

    /// `VIR_ERR_INTERNAL_ERROR` "connection already open".
    pub fn already_open() -> Self {
        Self::internal(domain::RPC, "connection already open")
    }

    /// `VIR_ERR_RPC` "authentication required".
    pub fn auth_required() -> Self {
        Self::new(code::RPC, domain::RPC, "authentication required")
    }

    /// `VIR_ERR_AGENT_UNRESPONSIVE` while the guest agent has not connected.
    pub fn agent_not_connected() -> Self {
        Self::new(
            code::AGENT_UNRESPONSIVE,
            domain::QEMU,
            "QEMU guest agent is not connected",
        )
    }

    /// `VIR_ERR_ARGUMENT_UNSUPPORTED` for a domain without an agent channel.
    pub fn agent_not_configured() -> Self {
        Self::new(
            code::ARGUMENT_UNSUPPORTED,
            domain::QEMU,
            "QEMU guest agent is not configured",
        )
    }

    /// The ARP source failure of libvirt 9.0 (`virArpTableGet` on a host
    /// whose netlink answer it cannot parse).
    pub fn arp_wrong_nlmsg_len() -> Self {
        Self::internal(domain::NONE, "wrong nlmsg len")
    }
}

/// Why a call on a [`crate::FakeConnection`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The fake answered with a libvirt error.
    #[error("{0}")]
    Libvirt(VirError),
    /// The connection was dropped (by an injected fault, by close or because
    /// the fake refused it); every later call on it fails the same way.
    #[error("connection closed")]
    Closed,
}

impl CallError {
    /// The libvirt error, when the fake answered with one.
    pub fn as_libvirt(&self) -> Option<&VirError> {
        match self {
            CallError::Libvirt(e) => Some(e),
            CallError::Closed => None,
        }
    }

    /// The libvirt error number, when the fake answered with one.
    pub fn code(&self) -> Option<i32> {
        self.as_libvirt().map(|e| e.code)
    }
}

impl From<VirError> for CallError {
    fn from(e: VirError) -> Self {
        CallError::Libvirt(e)
    }
}
