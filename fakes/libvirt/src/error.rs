//! libvirt's error values as the fake reports them: the error number, the
//! domain (the libvirt subsystem that raised it) and the full message text,
//! built by one constructor per failure so each text is written once.
//!
//! Numbers, domains and message texts follow libvirt's `virerror.h` and
//! `virerror.c` (restated in the project's protocol reference) and what real
//! libvirtd 9.0 and 11.3 were measured to return.

use std::fmt;

use libvirt_wire::{ErrorCode, ErrorDomain, ErrorLevel, RemoteError};

/// One libvirt error, shaped like `remote_error` on the wire.
///
/// `message` is the full text a client shows (`"Domain not found: no domain
/// with matching name 'x'"`); `str1` is the format of its prefix and `str2`
/// the detail, as libvirtd fills them. Its level is not stored: every error
/// the fake raises is `VIR_ERR_ERROR` ([`ErrorLevel::Error`]) on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirError {
    /// The error number (`virErrorNumber`).
    pub code: ErrorCode,
    /// The raising subsystem (`virErrorDomain`).
    pub domain: ErrorDomain,
    /// The full message text.
    pub message: String,
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
fn prefix_format(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InternalError => "internal error: %s",
        ErrorCode::NoSupport => "this function is not supported by the connection driver: %s",
        ErrorCode::InvalidArg => "invalid argument: %s",
        ErrorCode::OperationFailed => "operation failed: %s",
        ErrorCode::NoName => "missing name information in %s",
        ErrorCode::XmlError => "XML error: %s",
        ErrorCode::OperationDenied => "operation forbidden: %s",
        ErrorCode::NoDomain => "Domain not found: %s",
        ErrorCode::AuthFailed => "authentication failed: %s",
        ErrorCode::NoStoragePool => "Storage pool not found: %s",
        ErrorCode::NoStorageVol => "Storage volume not found: %s",
        ErrorCode::OperationInvalid => "Requested operation is not valid: %s",
        ErrorCode::OperationTimeout => "Timed out during operation: %s",
        ErrorCode::ArgumentUnsupported => "argument unsupported: %s",
        ErrorCode::NoDomainMetadata => "metadata not found: %s",
        ErrorCode::AgentUnresponsive => "Guest agent is not responding: %s",
        ErrorCode::AccessDenied => "access denied: %s",
        ErrorCode::StorageVolExist => "storage volume %s exists already",
        ErrorCode::NoInterface => "Interface not found: %s",
        // `VIR_ERR_RPC` (unknown procedure, undecodable payload, bad status)
        // carries the bare detail: libvirtd 11.3 sends "unknown procedure: N",
        // which the C client's fallbacks match by prefix.
        _ => "%s",
    }
}

impl VirError {
    /// Builds an error the way libvirt's `virReportError` does: the message is
    /// the error number's format with `detail` filled in.
    pub fn new(code: ErrorCode, domain: ErrorDomain, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let format = prefix_format(code);
        VirError {
            code,
            domain,
            message: format.replacen("%s", &detail, 1),
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
            ErrorCode::NoDomain,
            ErrorDomain::Qemu,
            format!("no domain with matching name '{name}'"),
        )
    }

    /// `VIR_ERR_NO_DOMAIN` for a handle whose UUID is unknown.
    pub fn no_domain_uuid(uuid: &impl fmt::Display, name: &str) -> Self {
        Self::new(
            ErrorCode::NoDomain,
            ErrorDomain::Qemu,
            format!("no domain with matching uuid '{uuid}' ({name})"),
        )
    }

    /// `VIR_ERR_NO_INTERFACE` for a lookup by name (the udev backend's words).
    pub fn no_interface_name(name: &str) -> Self {
        Self::new(
            ErrorCode::NoInterface,
            ErrorDomain::Interface,
            format!("couldn't find interface named '{name}'"),
        )
    }

    /// `VIR_ERR_NO_SUPPORT`: the host has no driver for the call (`function`
    /// is the public API's name, `virInterfaceLookupByName`).
    pub fn no_support(function: &str) -> Self {
        Self::new(ErrorCode::NoSupport, ErrorDomain::None, function)
    }

    /// `VIR_ERR_NO_STORAGE_POOL` for a lookup by name.
    pub fn no_pool_name(name: &str) -> Self {
        Self::new(
            ErrorCode::NoStoragePool,
            ErrorDomain::Storage,
            format!("no storage pool with matching name '{name}'"),
        )
    }

    /// `VIR_ERR_NO_STORAGE_POOL` for a handle whose UUID is unknown.
    pub fn no_pool_uuid(uuid: &impl fmt::Display, name: &str) -> Self {
        Self::new(
            ErrorCode::NoStoragePool,
            ErrorDomain::Storage,
            format!("no storage pool with matching uuid '{uuid}' ({name})"),
        )
    }

    /// `VIR_ERR_NO_STORAGE_VOL` for a lookup by name.
    pub fn no_vol_name(name: &str) -> Self {
        Self::new(
            ErrorCode::NoStorageVol,
            ErrorDomain::Storage,
            format!("no storage vol with matching name '{name}'"),
        )
    }

    /// The "not found" error of the object the procedure named `api_name` works on
    /// (`StorageVolLookupByName`, `DomainGetState`, …): `VIR_ERR_NO_STORAGE_VOL`
    /// for a volume call, `VIR_ERR_NO_STORAGE_POOL` for a pool call and
    /// `VIR_ERR_NO_DOMAIN` for any other, as the drivers word them.
    pub fn not_found_for(api_name: &str) -> Self {
        if api_name.starts_with("StorageVol") {
            Self::new(
                ErrorCode::NoStorageVol,
                ErrorDomain::Storage,
                "no storage vol with matching name",
            )
        } else if api_name.starts_with("StoragePool") {
            Self::new(
                ErrorCode::NoStoragePool,
                ErrorDomain::Storage,
                "no storage pool with matching name",
            )
        } else {
            Self::new(
                ErrorCode::NoDomain,
                ErrorDomain::Qemu,
                "no domain with matching name",
            )
        }
    }

    /// `VIR_ERR_STORAGE_VOL_EXIST` from the storage driver's create.
    pub fn vol_exists(name: &str) -> Self {
        Self::new(
            ErrorCode::StorageVolExist,
            ErrorDomain::Storage,
            format!("'{name}'"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for a pool that is not running.
    pub fn pool_not_active(name: &str) -> Self {
        Self::new(
            ErrorCode::OperationInvalid,
            ErrorDomain::Storage,
            format!("storage pool '{name}' is not active"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for starting or building a pool that runs.
    pub fn pool_already_active(name: &str) -> Self {
        Self::new(
            ErrorCode::OperationInvalid,
            ErrorDomain::Storage,
            format!("storage pool '{name}' is already active"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for deleting or undefining a pool that
    /// runs.
    pub fn pool_still_active(name: &str) -> Self {
        Self::new(
            ErrorCode::OperationInvalid,
            ErrorDomain::Storage,
            format!("storage pool '{name}' is still active"),
        )
    }

    /// `VIR_ERR_OPERATION_FAILED` for a new pool whose name another pool
    /// (with another UUID) has.
    pub fn pool_exists(name: &str, uuid: &uuid::Uuid) -> Self {
        Self::new(
            ErrorCode::OperationFailed,
            ErrorDomain::Storage,
            format!("pool '{name}' already exists with uuid {uuid}"),
        )
    }

    /// `VIR_ERR_OPERATION_FAILED` for a pool whose UUID another pool (with
    /// another name) has.
    pub fn pool_uuid_taken(other: &str, uuid: &uuid::Uuid) -> Self {
        Self::new(
            ErrorCode::OperationFailed,
            ErrorDomain::Storage,
            format!("pool '{other}' is already defined with uuid {uuid}"),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for creating a transient pool over a
    /// running one with the same name and UUID.
    pub fn pool_active_as(name: &str) -> Self {
        Self::new(
            ErrorCode::OperationInvalid,
            ErrorDomain::Storage,
            format!("pool is already active as '{name}'"),
        )
    }

    /// `VIR_ERR_OPERATION_FAILED` for a pool whose target another pool uses.
    pub fn pool_source_conflict(other: &str) -> Self {
        Self::new(
            ErrorCode::OperationFailed,
            ErrorDomain::Storage,
            format!("Storage source conflict with pool: '{other}'"),
        )
    }

    /// `VIR_ERR_SYSTEM_ERROR`: what failed and the operating system's reason
    /// (`strerror`), as `virReportSystemError` writes them.
    pub fn system(domain: ErrorDomain, text: impl Into<String>, reason: &str) -> Self {
        Self::new(
            ErrorCode::SystemError,
            domain,
            format!("{}: {reason}", text.into()),
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` for pausing or resuming a domain that is
    /// suspended to memory by its guest.
    pub fn domain_pmsuspended() -> Self {
        Self::new(
            ErrorCode::OperationInvalid,
            ErrorDomain::Qemu,
            "domain is pmsuspended",
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` "domain is not running", as the generic
    /// domain code raises it (destroy, interface addresses, live metadata).
    pub fn domain_not_running() -> Self {
        Self::domain_not_running_from(ErrorDomain::Domain)
    }

    /// `VIR_ERR_OPERATION_INVALID` "domain is not running" raised by the given
    /// subsystem: the QEMU driver checks shutdown itself.
    pub fn domain_not_running_from(from: ErrorDomain) -> Self {
        Self::new(ErrorCode::OperationInvalid, from, "domain is not running")
    }

    /// `VIR_ERR_OPERATION_INVALID` "domain is already running".
    pub fn domain_already_running() -> Self {
        Self::new(
            ErrorCode::OperationInvalid,
            ErrorDomain::Qemu,
            "domain is already running",
        )
    }

    /// `VIR_ERR_OPERATION_INVALID` raised when undefining a UEFI domain whose
    /// NVRAM file exists without `VIR_DOMAIN_UNDEFINE_NVRAM` or `KEEP_NVRAM`.
    pub fn undefine_with_nvram() -> Self {
        Self::new(
            ErrorCode::OperationInvalid,
            ErrorDomain::Qemu,
            "cannot undefine domain with nvram",
        )
    }

    /// `VIR_ERR_NO_DOMAIN_METADATA` for a missing metadata element.
    pub fn no_metadata() -> Self {
        Self::new(
            ErrorCode::NoDomainMetadata,
            ErrorDomain::Domain,
            "Requested metadata element is not present",
        )
    }

    /// `VIR_ERR_INVALID_ARG` for flags a function does not accept.
    pub fn unsupported_flags(flags: u32, function: &str) -> Self {
        // The driver the function belongs to raises it, named by its prefix.
        let from = if function.starts_with("storage") {
            ErrorDomain::Storage
        } else if function.starts_with("udevInterface") {
            ErrorDomain::Interface
        } else {
            ErrorDomain::Qemu
        };
        Self::invalid_arg_check(
            from,
            format!("unsupported flags (0x{flags:x}) in function {function}"),
        )
    }

    /// `VIR_ERR_INVALID_ARG` with a free-form detail.
    pub fn invalid_arg(domain: ErrorDomain, detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArg, domain, detail)
    }

    /// `VIR_ERR_INVALID_ARG` from one of libvirt's argument-check macros
    /// (unsupported flags, flags that exclude each other, an argument that
    /// must or must not be NULL): libvirt 11.3 gives the bare text, without
    /// the "invalid argument: " prefix (measured by the fidelity comparison's
    /// metadata and domain-capabilities steps).
    pub fn invalid_arg_check(domain: ErrorDomain, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        VirError {
            message: detail.clone(),
            str1: Some("%s".to_owned()),
            str2: Some(detail),
            ..Self::new(ErrorCode::InvalidArg, domain, "")
        }
    }

    /// `VIR_ERR_XML_ERROR` with a parser detail.
    pub fn xml(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::XmlError, ErrorDomain::Xml, detail)
    }

    /// `VIR_ERR_XML_DETAIL`: the XML parser rejected a document, raised from
    /// the subsystem that parsed it. libvirt 11.3 words it as its libxml2
    /// handler does: the line, the parser's detail, then the line of input
    /// and a pointer to the column where the parser stopped.
    pub fn xml_syntax(
        from: ErrorDomain,
        line: usize,
        detail: &str,
        context: &str,
        column: usize,
    ) -> Self {
        let message = format!(
            "at line {line}: {detail}\n{context}\n{}^",
            "-".repeat(column)
        );
        VirError {
            message: message.clone(),
            str1: Some("%s".to_owned()),
            str2: Some(message),
            ..Self::new(ErrorCode::XmlDetail, from, "")
        }
    }

    /// `VIR_ERR_INTERNAL_ERROR` for a `<uuid>` that does not parse.
    pub fn malformed_uuid() -> Self {
        Self::internal(ErrorDomain::Domain, "malformed uuid element")
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
            ..Self::new(ErrorCode::InternalError, ErrorDomain::Rpc, "")
        }
    }

    /// `VIR_ERR_SYSTEM_ERROR` from the stream when an upload sends more bytes
    /// than it declared. libvirtd 9.0 sent it to the client; 11.x only logs
    /// it and is then lost (see `FakeLibvirt::is_wedged`).
    pub fn stream_no_space() -> Self {
        Self::new(
            ErrorCode::SystemError,
            ErrorDomain::Streams,
            "cannot write to stream: No space left on device",
        )
    }

    /// `VIR_ERR_NO_NAME` for a domain definition without `<name>`.
    pub fn missing_name() -> Self {
        VirError {
            message: "missing name information".to_owned(),
            str1: Some("missing name information".to_owned()),
            str2: None,
            ..Self::new(ErrorCode::NoName, ErrorDomain::Domain, "")
        }
    }

    /// `VIR_ERR_INTERNAL_ERROR` with a detail, from the given subsystem.
    pub fn internal(domain: ErrorDomain, detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, domain, detail)
    }

    /// `VIR_ERR_SYSTEM_ERROR` for a missing file: the text and the
    /// operating system's reason, as `virReportSystemError` writes them.
    pub fn no_such_file(domain: ErrorDomain, text: impl Into<String>) -> Self {
        Self::new(
            ErrorCode::SystemError,
            domain,
            format!("{}: No such file or directory", text.into()),
        )
    }

    /// `VIR_ERR_INTERNAL_ERROR` "hypervisor connection not open".
    pub fn not_open() -> Self {
        Self::internal(ErrorDomain::Rpc, "hypervisor connection not open")
    }

    /// `VIR_ERR_INTERNAL_ERROR` "connection already open".
    pub fn already_open() -> Self {
        Self::internal(ErrorDomain::Rpc, "connection already open")
    }

    /// `VIR_ERR_RPC` "authentication required".
    pub fn auth_required() -> Self {
        Self::new(ErrorCode::Rpc, ErrorDomain::Rpc, "authentication required")
    }

    /// `VIR_ERR_AGENT_UNRESPONSIVE` while the guest agent has not connected.
    pub fn agent_not_connected() -> Self {
        Self::new(
            ErrorCode::AgentUnresponsive,
            ErrorDomain::Qemu,
            "QEMU guest agent is not connected",
        )
    }

    /// `VIR_ERR_ARGUMENT_UNSUPPORTED` for a domain without an agent channel.
    pub fn agent_not_configured() -> Self {
        Self::new(
            ErrorCode::ArgumentUnsupported,
            ErrorDomain::Qemu,
            "QEMU guest agent is not configured",
        )
    }

    /// The ARP source failure of libvirt 9.0 (`virArpTableGet` on a host
    /// whose netlink answer it cannot parse).
    pub fn arp_wrong_nlmsg_len() -> Self {
        Self::internal(ErrorDomain::None, "wrong nlmsg len")
    }
}

impl From<&VirError> for RemoteError {
    fn from(e: &VirError) -> Self {
        RemoteError {
            code: e.code,
            domain: e.domain,
            message: Some(e.message.clone()),
            level: ErrorLevel::Error,
            dom: None,
            str1: e.str1.clone(),
            str2: e.str2.clone(),
            str3: e.str3.clone(),
            int1: e.int1,
            int2: e.int2,
            net: None,
        }
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
    pub fn code(&self) -> Option<ErrorCode> {
        self.as_libvirt().map(|e| e.code)
    }
}

impl From<VirError> for CallError {
    fn from(e: VirError) -> Self {
        CallError::Libvirt(e)
    }
}
