//! Notifications beside the calls: verbosity, cancellation, and the spans and
//! log events a provider sends back.

use super::*;

/// `observation/set_verbosity` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetVerbosityParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The tier.
    pub verbosity: WireVerbosity,
}

// ---------------------------------------------------------------------------------------
// Notifications

/// `$/cancel` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CancelParams {
    /// The request to stop.
    pub id: u64,
}

/// A level of `tracing` (and of the `logging` axis' tiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WireLevel {
    /// Errors.
    ERROR,
    /// Warnings.
    WARN,
    /// V1 outcome lines.
    INFO,
    /// V2 per-call lines.
    DEBUG,
    /// Below the tiers.
    TRACE,
}

impl From<tracing::Level> for WireLevel {
    fn from(l: tracing::Level) -> Self {
        match l {
            tracing::Level::ERROR => WireLevel::ERROR,
            tracing::Level::WARN => WireLevel::WARN,
            tracing::Level::INFO => WireLevel::INFO,
            tracing::Level::DEBUG => WireLevel::DEBUG,
            tracing::Level::TRACE => WireLevel::TRACE,
        }
    }
}

/// `$/span/start` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpanStartParams {
    /// The request it belongs to.
    pub request: u64,
    /// The span's id, unique on the connection.
    pub span: u64,
    /// The parent span's id; `null`: directly under the request's caller.
    pub parent: Option<u64>,
    /// The span's name (`template.create`, `kvm2.DomainDefineXML`).
    pub name: String,
    /// Its level.
    pub level: WireLevel,
    /// Its fields as text.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}

/// `$/span/end` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpanEndParams {
    /// The span.
    pub span: u64,
}

/// `$/event` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventParams {
    /// The request it belongs to.
    pub request: u64,
    /// The span it was emitted in; `null`: directly under the request's caller.
    pub span: Option<u64>,
    /// Its level.
    pub level: WireLevel,
    /// The message.
    pub message: String,
    /// Its other fields as text.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}
