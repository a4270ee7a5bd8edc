//! Expected failures and quarantine: YAML files whose entries each name a rule, a
//! reason and an expiry date, and what a finished run makes of them.
//!
//! ```yaml
//! - rule: CRE-SECRET
//!   reason: the debug log prints user data; fixed by the next release
//!   expires: 2027-03-31
//! ```
//!
//! An expected-failures entry (`--expected-failures FILE`) excuses its rule's Fail: the
//! run does not fail for it (the verdict is partial) and every report marks the rule.
//! A listed rule that passes makes the entry stale, and a stale entry fails the run
//! until it is removed. A quarantine entry (`--quarantine FILE`) excuses a flaky rule:
//! one that both passed and failed across `--repeat` runs, or that ran once (a single
//! run cannot tell a flake from a failure); a rule that failed every one of several
//! runs is not excused. An entry past its expiry date (the last day it holds, UTC)
//! excuses nothing and fails the run. The reports list every entry with its status.

use std::path::Path;
use std::time::SystemTime;

use jiff::civil::Date;
use serde::Deserialize;

use super::outcome::{EntryStatus, Outcome, Report, Waiver, WaiverEntry, WaiverKind};

/// One entry of an expected-failures or quarantine file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The rule's ID.
    pub rule: String,
    /// Why it is listed.
    pub reason: String,
    /// The last day the entry holds.
    pub expires: Date,
}

/// An entry as the file writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    rule: String,
    reason: String,
    expires: String,
}

/// Reads the entries of an expected-failures or quarantine file's text. Every rule
/// must be in the catalogue, listed once, with a reason and a `YYYY-MM-DD` date.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let raw: Vec<RawEntry> = serde_saphyr::from_str(text)
        .map_err(|e| format!("not a list of entries with rule, reason and expires: {e}"))?;
    let mut entries: Vec<Entry> = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        let n = i + 1;
        let rule = r.rule.trim().to_owned();
        if crate::rules::rule(&rule).is_none() {
            return Err(format!("entry {n}: {rule:?} is no rule of the catalogue"));
        }
        if entries.iter().any(|e| e.rule == rule) {
            return Err(format!("entry {n}: {rule} is listed twice"));
        }
        let reason = r.reason.trim().to_owned();
        if reason.is_empty() {
            return Err(format!("entry {n} ({rule}): the reason is empty"));
        }
        let expires: Date = r.expires.trim().parse().map_err(|e| {
            format!(
                "entry {n} ({rule}): expires {:?} is not a date (YYYY-MM-DD): {e}",
                r.expires
            )
        })?;
        entries.push(Entry {
            rule,
            reason,
            expires,
        });
    }
    Ok(entries)
}

/// Reads an expected-failures or quarantine file.
pub fn load(path: &Path) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("failed to read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The day (UTC) of `t`.
pub fn day_of(t: SystemTime) -> Date {
    let ts = jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    jiff::tz::Offset::UTC.to_datetime(ts).date()
}

/// Applies the entries of one file to a finished run's report: marks the results they
/// excuse, records every entry with its status, and judges the verdict again. `today`
/// decides expiry (the run's start day, as [`day_of`] gives it).
pub fn apply(report: &mut Report, kind: WaiverKind, entries: &[Entry], today: Date) {
    for e in entries {
        let expires = e.expires.to_string();
        let result = report.results.iter_mut().find(|r| r.id == e.rule);
        let (status, message) = if today > e.expires {
            (
                EntryStatus::Expired,
                format!(
                    "the entry expired on {expires}: fix the rule, or renew the entry with a reason"
                ),
            )
        } else {
            match result {
                Some(r) if r.outcome == Outcome::Fail => {
                    let excused = match kind {
                        WaiverKind::ExpectedFailure => true,
                        WaiverKind::Quarantine => r.flaky || r.runs <= 1,
                    };
                    if excused {
                        r.waiver = Some(Waiver {
                            kind,
                            reason: e.reason.clone(),
                            expires: expires.clone(),
                        });
                        (
                            EntryStatus::Applied,
                            format!("{} until {expires}: {}", kind.label(), e.reason),
                        )
                    } else {
                        (
                            EntryStatus::Unused,
                            format!(
                                "failed all {} runs: a failure, not a flake; quarantine does not excuse it",
                                r.runs
                            ),
                        )
                    }
                }
                Some(r) if r.outcome == Outcome::Pass => match kind {
                    WaiverKind::ExpectedFailure => (
                        EntryStatus::Stale,
                        "the rule passed: remove its entry from the expected failures".to_owned(),
                    ),
                    WaiverKind::Quarantine => {
                        (EntryStatus::Unused, format!("passed all {} runs", r.runs))
                    }
                },
                Some(r) => (
                    EntryStatus::Unused,
                    format!("the rule was {}, neither Pass nor Fail", r.outcome.as_str()),
                ),
                None => (
                    EntryStatus::Unused,
                    "the rule was not selected for this run".to_owned(),
                ),
            }
        };
        report.waivers.push(WaiverEntry {
            kind,
            rule: e.rule.clone(),
            reason: e.reason.clone(),
            expires,
            status,
            message,
        });
    }
    report.refresh();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_with_dates_and_reasons() {
        let text = "- rule: CRE-SECRET\n  reason: leaks in debug logs\n  expires: 2027-03-31\n\
                    - rule: GET-BUSY\n  reason: \"flaky: timing\"\n  expires: '2026-01-01'\n";
        let e = parse(text).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].rule, "CRE-SECRET");
        assert_eq!(e[0].expires, jiff::civil::date(2027, 3, 31));
        assert_eq!(e[1].reason, "flaky: timing");
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn bad_entries_are_refused_naming_the_entry() {
        for (text, want) in [
            (
                "- rule: NOPE\n  reason: x\n  expires: 2027-01-01\n",
                "no rule of the catalogue",
            ),
            (
                "- rule: CRE-SECRET\n  reason: ' '\n  expires: 2027-01-01\n",
                "reason is empty",
            ),
            (
                "- rule: CRE-SECRET\n  reason: x\n  expires: next year\n",
                "not a date",
            ),
            (
                "- rule: CRE-SECRET\n  reason: x\n  expires: 2027-01-01\n- rule: CRE-SECRET\n  reason: y\n  expires: 2027-01-01\n",
                "listed twice",
            ),
            ("- rule: CRE-SECRET\n  reason: x\n", "expires"),
            (
                "- rule: CRE-SECRET\n  reason: x\n  expires: 2027-01-01\n  owner: me\n",
                "owner",
            ),
            ("rule: CRE-SECRET\n", "not a list"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn days_are_utc() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_169_600 - 1);
        assert_eq!(day_of(t), jiff::civil::date(2026, 12, 1));
    }
}
