//! Per-rule log files: after a run, each rule that ran gets `logs/<RULE>.log` in the
//! report directory, holding every span and log line recorded under that rule's span
//! (the provider's own, the suite's operation spans around them, and the suite's own
//! actions: hooks called, faults injected and fired, restarts) as one time-ordered
//! story, whatever `--log-level` printed.
//!
//! Each line is scanned for cloud-init payloads before it is written: a line holding
//! one is written redacted, and the rule whose log it is fails with a violation naming
//! the file and the line. A rule that failed or errored points at its file
//! (`RuleResult::log`).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::capture::Capture;
use super::outcome::{Outcome, Report, Violation};
use super::secrets;

/// The directory, inside the report directory, the log files go to.
pub const LOG_DIR: &str = "logs";

/// What replaces a payload in a written log line.
pub use super::secrets::REDACTED;

/// The lines of the log of the rule whose span carries `mark`: every span and event
/// recorded under that rule's span, the suite's own actions among them
/// (`conformance::suite`), in the order they happened, each with its time since the
/// rule began and indented by its depth below the rule's span. `None` when no such
/// span was recorded.
pub fn rule_log(cap: &Capture, mark: &str) -> Option<Vec<String>> {
    let root = cap.find_mark(mark)?;
    let spans = cap.descendants(root);
    let find = |seq: u64| spans.iter().find(|s| s.seq == seq);
    let start = cap.span(root).map(|s| s.at);
    let depth = |seq: u64| {
        std::iter::successors(Some(seq), |s| find(*s).and_then(|x| x.parent))
            .take_while(|s| *s != root)
            .count()
    };
    let since = |at: std::time::Instant| {
        start
            .map(|t| at.saturating_duration_since(t).as_secs_f64())
            .unwrap_or(0.0)
    };
    let mut lines: Vec<(u64, String)> = Vec::with_capacity(spans.len() + 1);
    for s in &spans {
        lines.push((
            s.seq,
            format!(
                "+{:.3}s {}span {} {}",
                since(s.at),
                "  ".repeat(depth(s.seq)),
                s.name,
                s.fields
            ),
        ));
    }
    for e in cap.events_under(root) {
        let below = e.scope.iter().position(|s| *s == root).unwrap_or(0);
        let mut line = format!(
            "+{:.3}s {}{:<5} {}: {}",
            since(e.at),
            "  ".repeat(below + 1),
            e.level,
            e.target,
            e.text
        );
        if let Some(inner) = e
            .scope
            .first()
            .filter(|s| **s != root)
            .and_then(|s| find(*s))
        {
            let _ = write!(line, "  (in {})", inner.name);
        }
        lines.push((e.order, line));
    }
    lines.sort_by_key(|(order, _)| *order);
    Some(lines.into_iter().map(|(_, l)| l).collect())
}

/// A payload found in a log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The rule whose log it is.
    pub rule: String,
    /// The file, relative to the report directory (`logs/CRE-SECRET.log`).
    pub file: String,
    /// The line, from 1.
    pub line: usize,
}

/// `lines` with every payload redacted (and each on one line), and the numbers (from
/// 1) of the lines that held one.
pub fn redact(lines: &[String]) -> (Vec<String>, Vec<usize>) {
    let mut hits = Vec::new();
    let out = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if secrets::any_in(l) {
                hits.push(i + 1);
            }
            secrets::redact(l).replace(['\n', '\r'], " ")
        })
        .collect();
    (out, hits)
}

/// Writes each rule's log file into `dir/logs/`, redacting payloads; a payload found
/// fails the rule whose log it is with a violation naming the file and the line.
/// Failed and errored rules point at their file. Returns the files written.
pub fn write_rule_logs(report: &mut Report, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let Some(cap) = Capture::global() else {
        return Ok(Vec::new());
    };
    let run_short: String = report.run.run_id.chars().take(8).collect();
    let logs = dir.join(LOG_DIR);
    let mut written = Vec::new();
    let mut hits = Vec::new();
    for r in report.results.iter_mut().filter(|r| r.runs > 0) {
        let Some(lines) = rule_log(&cap, &format!("{}-{run_short}", r.id)) else {
            continue;
        };
        std::fs::create_dir_all(&logs)?;
        let (lines, at) = redact(&lines);
        let name = format!("{LOG_DIR}/{}.log", r.id);
        hits.extend(at.into_iter().map(|line| Hit {
            rule: r.id.clone(),
            file: name.clone(),
            line,
        }));
        let mut text = lines.join("\n");
        text.push('\n');
        let path = dir.join(&name);
        std::fs::write(&path, text)?;
        written.push(path);
        if r.outcome.is_failure() {
            r.log = Some(name);
        }
    }
    if !hits.is_empty() {
        fail_leaks(report, &hits);
    }
    Ok(written)
}

/// Fails each rule in whose log lines a payload was found.
fn fail_leaks(report: &mut Report, hits: &[Hit]) {
    for h in hits {
        let Some(r) = report.results.iter_mut().find(|r| r.id == h.rule) else {
            continue;
        };
        r.violations.push(Violation {
            rule: h.rule.clone(),
            location: format!("{} line {}", h.file, h.line),
            expected: "no cloud-init user data in the provider's log lines".into(),
            actual: "a cloud-init payload; the line was written redacted".into(),
        });
        if r.outcome != Outcome::Fail {
            r.outcome = Outcome::Fail;
            r.reason = r.violations.first().map(|v| v.to_string());
            r.waiver = None;
        }
    }
    report.refresh();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_redacted_and_their_lines_named() {
        let token = secrets::new_token(&secrets::new_owner("CRE-SECRET"));
        let lines = vec![
            "INFO kvm2: created vm1".to_owned(),
            format!("DEBUG kvm2: user data root:{token}\nsecond"),
            "DEBUG kvm2: nothing".to_owned(),
        ];
        let (out, hits) = redact(&lines);
        assert_eq!(hits, [2]);
        assert_eq!(
            out[1],
            format!("DEBUG kvm2: user data root:{REDACTED} second")
        );
        assert_eq!(out[0], lines[0]);
    }
}
