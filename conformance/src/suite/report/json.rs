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

/// Renders `report` as pretty-printed JSON with a trailing newline, its last field
/// the report's digest (see [`digest_of`]).
pub fn render(report: &Report) -> String {
    #[derive(serde::Serialize)]
    struct WithDigest<'a> {
        #[serde(flatten)]
        report: &'a Report,
        digest: String,
    }
    // Every map in a Report has string keys and every value is plain data, so
    // serialising cannot fail.
    let value = serde_json::to_value(report).expect("a report always serialises");
    let mut out = serde_json::to_string_pretty(&WithDigest {
        report,
        digest: digest_of(&value),
    })
    .expect("a report always serialises");
    out.push('\n');
    out
}

/// The digest a report records of itself: `sha256:` and the hex SHA-256 of the report
/// as compact JSON with its keys sorted and without its `digest` field. It shows that
/// a report was not changed after it was written (by accident or by hand); anyone can
/// compute it, so it proves nothing of who wrote the report.
pub fn digest_of(report: &serde_json::Value) -> String {
    use sha2::{Digest as _, Sha256};
    let mut v = sorted(report);
    if let Some(o) = v.as_object_mut() {
        o.remove("digest");
    }
    let bytes = serde_json::to_vec(&v).expect("a JSON value always serialises");
    let hash = Sha256::digest(&bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `v` with every object's keys in sorted order, whatever order the map type keeps.
fn sorted(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&o[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Reads a `report.json` back: the inverse of [`render`].
///
/// A report whose `schema_version` has another major version than
/// [`REPORT_SCHEMA_VERSION`](crate::suite::outcome::REPORT_SCHEMA_VERSION) is refused;
/// one of another minor version is read, its unknown fields ignored and missing
/// optional ones left empty.
pub fn parse(text: &str) -> Result<Report, String> {
    use crate::suite::outcome::REPORT_SCHEMA_VERSION;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let version = value
        .get("schema_version")
        .ok_or("not a conformance report: no schema_version")?
        .as_str()
        .ok_or("schema_version is not a string")?;
    let major = |v: &str| v.split('.').next().unwrap_or_default().to_owned();
    if major(version) != major(REPORT_SCHEMA_VERSION) {
        return Err(format!(
            "schema_version {version} is not readable by this suite, which reads {}.x reports (its own is {REPORT_SCHEMA_VERSION})",
            major(REPORT_SCHEMA_VERSION)
        ));
    }
    serde_json::from_str(text).map_err(|e| format!("not a valid report: {e}"))
}

/// Reads the `report.json` at `path`; the error names the file and what is wrong.
pub fn read(path: &std::path::Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("failed to read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}
