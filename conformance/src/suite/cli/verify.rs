//! `verify REPORT.json`: whether a report can be trusted as a statement about the
//! current contract. It checks that the report matches the committed JSON Schema of its
//! version, that it was made against the catalogue this suite has (its catalogue hash),
//! and that it is as it was written (the digest it records of itself).

use std::path::PathBuf;

use super::{EXIT_FAILED, EXIT_USAGE};
use crate::suite::outcome::REPORT_SCHEMA_VERSION;
use crate::suite::report::json;
use crate::suite::runner::catalogue_hash;

/// The flags of `verify`.
#[derive(Clone, Debug, clap::Args)]
pub struct VerifyArgs {
    /// The `report.json` to check.
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,
}

/// What `verify --help` says of the exit codes.
pub const VERIFY_EXIT_HELP: &str = "Checks the report against the JSON Schema of this suite's \
report format, its catalogue hash against this suite's catalogue, and the digest it records \
of itself. Exit codes: 0 every check passed, 1 a check failed, 2 the file could not be read \
or is no JSON.";

/// One check of `verify` and its finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What was checked: `schema`, `catalogue`, `digest`.
    pub check: &'static str,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub detail: String,
}

/// Checks the text of a `report.json`; `Err` when it is no JSON object at all.
pub fn verify_text(text: &str) -> Result<Vec<Finding>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if !value.is_object() {
        return Err("not a conformance report: not a JSON object".into());
    }
    let version = value
        .get("schema_version")
        .and_then(|v| v.as_str())
        .unwrap_or("none");
    let schema = if version != REPORT_SCHEMA_VERSION {
        Finding {
            check: "schema",
            ok: false,
            detail: format!(
                "schema_version {version}; this suite checks {REPORT_SCHEMA_VERSION} \
                 (regenerate the report, or `render` it into the current format)"
            ),
        }
    } else {
        match validate(&value) {
            Ok(()) => Finding {
                check: "schema",
                ok: true,
                detail: format!("valid against report schema {REPORT_SCHEMA_VERSION}"),
            },
            Err(e) => Finding {
                check: "schema",
                ok: false,
                detail: format!("invalid: {e}"),
            },
        }
    };
    let current = catalogue_hash();
    let catalogue = match value
        .pointer("/run/catalogue_hash")
        .and_then(|v| v.as_str())
    {
        Some(h) if h == current => Finding {
            check: "catalogue",
            ok: true,
            detail: format!("made against this suite's catalogue ({current})"),
        },
        Some(h) => Finding {
            check: "catalogue",
            ok: false,
            detail: format!(
                "made against another catalogue ({h}); this suite's is {current}: the rules \
                 changed since, so the report is stale"
            ),
        },
        None => Finding {
            check: "catalogue",
            ok: false,
            detail: "the report records no catalogue hash".into(),
        },
    };
    let digest = match value.get("digest").and_then(|v| v.as_str()) {
        None => Finding {
            check: "digest",
            ok: false,
            detail: "the report records no digest of itself".into(),
        },
        Some(d) => {
            let computed = json::digest_of(&value);
            if d == computed {
                Finding {
                    check: "digest",
                    ok: true,
                    detail: format!("matches ({d})"),
                }
            } else {
                Finding {
                    check: "digest",
                    ok: false,
                    detail: format!(
                        "the report records {d} but its content hashes to {computed}: it was \
                         changed after it was written"
                    ),
                }
            }
        }
    };
    Ok(vec![schema, catalogue, digest])
}

/// Validates a report against the committed schema; the error lists every failure.
fn validate(value: &serde_json::Value) -> Result<(), String> {
    let schema: serde_json::Value =
        serde_json::from_str(json::SCHEMA).map_err(|e| format!("the schema is no JSON: {e}"))?;
    let mut compiler = boon::Compiler::new();
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource("urn:conformance-report-schema", schema)
        .map_err(|e| format!("failed to load the schema: {e}"))?;
    let index = compiler
        .compile("urn:conformance-report-schema", &mut schemas)
        .map_err(|e| format!("failed to compile the schema: {e}"))?;
    schemas.validate(value, index).map_err(|e| format!("{e:#}"))
}

/// Reads the report, prints each check's finding and returns the exit code.
pub fn verify(args: VerifyArgs) -> u8 {
    let text = match std::fs::read_to_string(&args.report) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: failed to read {}: {e}", args.report.display());
            return EXIT_USAGE;
        }
    };
    let findings = match verify_text(&text) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {}: {e}", args.report.display());
            return EXIT_USAGE;
        }
    };
    for f in &findings {
        println!(
            "{:<9}  {}  {}",
            f.check,
            if f.ok { "ok    " } else { "FAILED" },
            f.detail
        );
    }
    if findings.iter().all(|f| f.ok) {
        0
    } else {
        EXIT_FAILED
    }
}
