//! The JSON report: the [`Report`] serialised as it is, pretty-printed.
//!
//! Its shape is versioned by
//! [`REPORT_SCHEMA_VERSION`](crate::suite::outcome::REPORT_SCHEMA_VERSION) and
//! described exactly by the JSON Schema (draft 2020-12) committed at
//! `conformance/schema/report.schema.json`, also available as [`SCHEMA`]. Durations
//! are milliseconds with microsecond precision; times are RFC 3339 in UTC.

use crate::suite::outcome::Report;

/// The JSON Schema of `report.json`, as committed in `conformance/schema/`.
pub const SCHEMA: &str = include_str!("../../../schema/report.schema.json");

/// Renders `report` as pretty-printed JSON with a trailing newline.
pub fn render(report: &Report) -> String {
    // Every map in a Report has string keys and every value is plain data, so
    // serialising to a String cannot fail.
    let mut out = serde_json::to_string_pretty(report).expect("a report always serialises");
    out.push('\n');
    out
}
