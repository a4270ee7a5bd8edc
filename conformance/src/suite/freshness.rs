//! Whether a committed report still says what a fresh run of the same provider says:
//! it verifies (schema, catalogue hash, its own digest) and every rule has the same
//! outcome, with the same verdict. Providers' tests call [`check_committed`] so that a
//! change that alters an outcome cannot land without its regenerated report.

use std::path::Path;

use super::cli::{ReportDiff, verify_text};
use super::outcome::Report;

/// Compares the report committed at `path` with `fresh`; `Err` says what differs and
/// how to regenerate.
pub fn check_committed(path: &Path, fresh: &Report, regenerate: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("failed to read {}: {e}", path.display()))?;
    let findings = verify_text(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad: Vec<String> = findings
        .iter()
        .filter(|f| !f.ok)
        .map(|f| format!("{}: {}", f.check, f.detail))
        .collect();
    if !bad.is_empty() {
        return Err(format!(
            "{} does not verify ({}); regenerate it: {regenerate}",
            path.display(),
            bad.join("; ")
        ));
    }
    let committed = super::report::json::read(path)?;
    let diff = ReportDiff::of(&committed, fresh);
    if !diff.changes.is_empty() || diff.old_verdict != diff.new_verdict {
        return Err(format!(
            "{} is not what a fresh run gives:\n{}\nregenerate it: {regenerate}",
            path.display(),
            diff.text()
        ));
    }
    Ok(())
}
