//! `RemoteError`: the error libvirt sends in a failed REPLY or STREAM packet,
//! with its `ErrorCode`, `ErrorDomain` and `ErrorLevel` tables.

use bytes::BytesMut;

use crate::error::WireError;
use crate::types::{Domain, Network};
use crate::xdr::{Decode, Encode, Reader};

int_enum! {
    /// libvirt's error number (`virErrorNumber`). Branch on this, not on text.
    pub enum ErrorCode: i32 {
        /// No error.
        Ok = 0 => "VIR_ERR_OK",
        /// Internal error (also: connection not open, already open, keepalive timeout).
        InternalError = 1 => "VIR_ERR_INTERNAL_ERROR",
        /// Out of memory.
        NoMemory = 2 => "VIR_ERR_NO_MEMORY",
        /// The driver does not support the function.
        NoSupport = 3 => "VIR_ERR_NO_SUPPORT",
        /// Invalid argument, including unsupported flags.
        InvalidArg = 8 => "VIR_ERR_INVALID_ARG",
        /// The operation failed.
        OperationFailed = 9 => "VIR_ERR_OPERATION_FAILED",
        /// A definition lacks its name.
        NoName = 21 => "VIR_ERR_NO_NAME",
        /// Malformed XML.
        XmlError = 27 => "VIR_ERR_XML_ERROR",
        /// The domain exists already.
        DomExist = 28 => "VIR_ERR_DOM_EXIST",
        /// Forbidden, for example on a read-only connection.
        OperationDenied = 29 => "VIR_ERR_OPERATION_DENIED",
        /// XML parser detail.
        XmlDetail = 35 => "VIR_ERR_XML_DETAIL",
        /// An operating system error.
        SystemError = 38 => "VIR_ERR_SYSTEM_ERROR",
        /// Protocol error (unknown procedure, authentication required, bad payload).
        Rpc = 39 => "VIR_ERR_RPC",
        /// No such domain.
        NoDomain = 42 => "VIR_ERR_NO_DOMAIN",
        /// No such network.
        NoNetwork = 43 => "VIR_ERR_NO_NETWORK",
        /// Authentication failed.
        AuthFailed = 45 => "VIR_ERR_AUTH_FAILED",
        /// Invalid storage pool object.
        InvalidStoragePool = 46 => "VIR_ERR_INVALID_STORAGE_POOL",
        /// Invalid storage volume object.
        InvalidStorageVol = 47 => "VIR_ERR_INVALID_STORAGE_VOL",
        /// No such storage pool.
        NoStoragePool = 49 => "VIR_ERR_NO_STORAGE_POOL",
        /// No such storage volume.
        NoStorageVol = 50 => "VIR_ERR_NO_STORAGE_VOL",
        /// The operation is not valid in the object's current state.
        OperationInvalid = 55 => "VIR_ERR_OPERATION_INVALID",
        /// No such host interface.
        NoInterface = 57 => "VIR_ERR_NO_INTERFACE",
        /// Unsupported configuration.
        ConfigUnsupported = 67 => "VIR_ERR_CONFIG_UNSUPPORTED",
        /// Timed out (for example waiting for the state change lock).
        OperationTimeout = 68 => "VIR_ERR_OPERATION_TIMEOUT",
        /// Invalid stream object.
        InvalidStream = 73 => "VIR_ERR_INVALID_STREAM",
        /// An argument is not supported (for example no guest agent configured).
        ArgumentUnsupported = 74 => "VIR_ERR_ARGUMENT_UNSUPPORTED",
        /// The operation was aborted.
        OperationAborted = 78 => "VIR_ERR_OPERATION_ABORTED",
        /// Authentication was cancelled.
        AuthCancelled = 79 => "VIR_ERR_AUTH_CANCELLED",
        /// The requested metadata element is not present.
        NoDomainMetadata = 80 => "VIR_ERR_NO_DOMAIN_METADATA",
        /// The operation is not supported.
        OperationUnsupported = 84 => "VIR_ERR_OPERATION_UNSUPPORTED",
        /// The guest agent is configured but not responding.
        AgentUnresponsive = 86 => "VIR_ERR_AGENT_UNRESPONSIVE",
        /// The resource is busy.
        ResourceBusy = 87 => "VIR_ERR_RESOURCE_BUSY",
        /// Access denied by the access control driver.
        AccessDenied = 88 => "VIR_ERR_ACCESS_DENIED",
        /// The storage volume exists already.
        StorageVolExist = 90 => "VIR_ERR_STORAGE_VOL_EXIST",
        /// The XML does not validate against the schema.
        XmlInvalidSchema = 92 => "VIR_ERR_XML_INVALID_SCHEMA",
        /// Authentication is unavailable.
        AuthUnavailable = 94 => "VIR_ERR_AUTH_UNAVAILABLE",
        /// The host name could not be determined.
        NoHostname = 108 => "VIR_ERR_NO_HOSTNAME",
        /// A guest agent command timed out.
        AgentCommandTimeout = 112 => "VIR_ERR_AGENT_COMMAND_TIMEOUT",
        /// A guest agent command failed.
        AgentCommandFailed = 113 => "VIR_ERR_AGENT_COMMAND_FAILED",
    }
}

int_enum! {
    /// The libvirt subsystem an error came from (`virErrorDomain`).
    pub enum ErrorDomain: i32 {
        /// No particular subsystem.
        None = 0 => "VIR_FROM_NONE",
        /// The XML parser.
        Xml = 5 => "VIR_FROM_XML",
        /// The domain object layer.
        Dom = 6 => "VIR_FROM_DOM",
        /// The RPC layer.
        Rpc = 7 => "VIR_FROM_RPC",
        /// The configuration file handling.
        Conf = 9 => "VIR_FROM_CONF",
        /// The QEMU driver.
        Qemu = 10 => "VIR_FROM_QEMU",
        /// The network layer.
        Net = 11 => "VIR_FROM_NET",
        /// The test driver.
        Test = 12 => "VIR_FROM_TEST",
        /// The remote driver.
        Remote = 13 => "VIR_FROM_REMOTE",
        /// The storage driver.
        Storage = 18 => "VIR_FROM_STORAGE",
        /// The network driver.
        Network = 19 => "VIR_FROM_NETWORK",
        /// Domain configuration handling.
        Domain = 20 => "VIR_FROM_DOMAIN",
        /// The interface driver.
        Interface = 26 => "VIR_FROM_INTERFACE",
        /// Streams.
        Streams = 38 => "VIR_FROM_STREAMS",
        /// Authentication.
        Auth = 46 => "VIR_FROM_AUTH",
        /// The SSH transport.
        Ssh = 50 => "VIR_FROM_SSH",
        /// Access control.
        Access = 55 => "VIR_FROM_ACCESS",
        /// polkit.
        Polkit = 60 => "VIR_FROM_POLKIT",
        /// The libssh transport.
        Libssh = 66 => "VIR_FROM_LIBSSH",
    }
}

int_enum! {
    /// Severity of a libvirt error (`virErrorLevel`).
    pub enum ErrorLevel: i32 {
        /// No level.
        None = 0 => "VIR_ERR_NONE",
        /// A warning.
        Warning = 1 => "VIR_ERR_WARNING",
        /// An error (what servers send).
        Error = 2 => "VIR_ERR_ERROR",
    }
}

/// An error reported by libvirt (`remote_error`), all eleven fields.
///
/// Clients should branch on [`RemoteError::code`]; the message is for humans.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(test, derive(proptest_derive::Arbitrary))]
pub struct RemoteError {
    /// The error number.
    pub code: ErrorCode,
    /// The subsystem that raised it.
    pub domain: ErrorDomain,
    /// The full human-readable text, e.g. "Domain not found: no domain with matching name 'x'".
    pub message: Option<String>,
    /// The severity.
    pub level: ErrorLevel,
    /// The domain concerned (modern servers never send it).
    pub dom: Option<Domain>,
    /// Extra string 1 (modern servers: the format string).
    pub str1: Option<String>,
    /// Extra string 2 (the detail text).
    pub str2: Option<String>,
    /// Extra string 3 (usually absent).
    pub str3: Option<String>,
    /// Extra number 1 (usually -1).
    pub int1: i32,
    /// Extra number 2 (usually -1).
    pub int2: i32,
    /// The network concerned (never sent in practice).
    pub net: Option<Network>,
}

impl RemoteError {
    /// An error the way libvirtd fills one in: level ERROR, the message as
    /// both message and detail, no extra numbers.
    pub fn new(code: ErrorCode, domain: ErrorDomain, message: impl Into<String>) -> Self {
        let message = message.into();
        RemoteError {
            code,
            domain,
            message: Some(message.clone()),
            level: ErrorLevel::Error,
            dom: None,
            str1: None,
            str2: Some(message),
            str3: None,
            int1: -1,
            int2: -1,
            net: None,
        }
    }

    /// The message, or a placeholder when the server sent none.
    pub fn message(&self) -> &str {
        self.message.as_deref().unwrap_or("no error message")
    }
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {})", self.message(), self.code, self.domain)
    }
}

impl std::error::Error for RemoteError {}

impl Encode for RemoteError {
    fn encode(&self, buf: &mut BytesMut) {
        self.code.encode(buf);
        self.domain.encode(buf);
        self.message.encode(buf);
        self.level.encode(buf);
        self.dom.encode(buf);
        self.str1.encode(buf);
        self.str2.encode(buf);
        self.str3.encode(buf);
        self.int1.encode(buf);
        self.int2.encode(buf);
        self.net.encode(buf);
    }
}

impl Decode for RemoteError {
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(RemoteError {
            code: Decode::decode(r)?,
            domain: Decode::decode(r)?,
            message: Decode::decode(r)?,
            level: Decode::decode(r)?,
            dom: Decode::decode(r)?,
            str1: Decode::decode(r)?,
            str2: Decode::decode(r)?,
            str3: Decode::decode(r)?,
            int1: Decode::decode(r)?,
            int2: Decode::decode(r)?,
            net: Decode::decode(r)?,
        })
    }
}
