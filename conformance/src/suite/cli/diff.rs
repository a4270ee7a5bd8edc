//! `diff`: two runs' reports compared rule by rule: outcomes that changed, violations
//! that appeared or went away in a rule failing in both, rules added or removed, the
//! verdict, and with `--durations PCT` rules that got slower or faster by more than
//! that. As text or Markdown; the exit code says whether anything got worse.

use std::path::PathBuf;

use super::{EXIT_FAILED, EXIT_USAGE};
use crate::rules::CATALOGUE;
use crate::suite::outcome::{Outcome, Report, RuleResult, Verdict, Violation};
use crate::suite::report::{human_duration, json};

/// The flags of `diff`.
#[derive(Clone, Debug, clap::Args)]
pub struct DiffArgs {
    /// The earlier run's `report.json`.
    #[arg(value_name = "OLD.json")]
    pub old: PathBuf,
    /// The later run's `report.json`.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
    /// How to print the diff.
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// Also compare durations: a rule more than PCT percent slower is worse (and one
    /// more than PCT percent faster is better). Rules under 100 ms in both runs are
    /// left out: their times are noise.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub durations: Option<f64>,
}

/// How `diff` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// A plain table.
    Text,
    /// A Markdown table, for a pull request or a CI summary.
    Markdown,
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let pct: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage"))?;
    if pct.is_finite() && pct > 0.0 {
        Ok(pct)
    } else {
        Err(format!("{s} is out of range: more than 0"))
    }
}

/// Durations both under this are not compared.
const DURATION_FLOOR: std::time::Duration = std::time::Duration::from_millis(100);

/// What `diff --help` says of the exit codes.
pub const DIFF_EXIT_HELP: &str = "A rule got worse when its outcome moved down the order \
Pass/NotApplicable, Skipped, Error, Fail, or when a rule absent from OLD is Fail or Error in \
NEW, or when a rule failing in both has a violation it did not have (or, with --durations, \
is slower by more than PCT percent). Exit codes: 0 no rule got worse, 1 some rule got worse, \
2 a report could not be read.";

/// How one rule's outcome changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Its outcome moved down the order: a new failure, a new error, a lost check.
    Worse,
    /// Its outcome moved up the order: a fixed rule.
    Better,
    /// Its outcome changed without getting better or worse (Pass and NotApplicable).
    Changed,
    /// The rule is in the new report only.
    Added,
    /// The rule is in the old report only.
    Removed,
    /// Slower by more than `--durations` percent.
    Slower,
    /// Faster by more than `--durations` percent.
    Faster,
}

impl Change {
    /// The change's name as the table prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Worse => "worse",
            Change::Better => "better",
            Change::Changed => "changed",
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Slower => "slower",
            Change::Faster => "faster",
        }
    }
}

/// One rule whose outcome differs between the two reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleChange {
    /// The rule's ID.
    pub id: String,
    /// Its outcome in the old report; `None` when it is not there.
    pub old: Option<Outcome>,
    /// Its outcome in the new report; `None` when it is not there.
    pub new: Option<Outcome>,
    /// How it changed.
    pub change: Change,
    /// What changed beyond the outcome: violations that appeared or went away, the
    /// durations; empty when the outcome says it all.
    pub detail: String,
}

/// Two reports compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportDiff {
    /// The old report's verdict.
    pub old_verdict: Verdict,
    /// The new report's verdict.
    pub new_verdict: Verdict,
    /// Every rule whose outcome differs, in catalogue order (rules the catalogue does
    /// not know last, by ID).
    pub changes: Vec<RuleChange>,
    /// Rules in both reports with the same outcome.
    pub unchanged: usize,
}

/// An outcome's place in the order `diff` judges by; higher is worse.
fn badness(o: Outcome) -> u8 {
    match o {
        Outcome::Pass | Outcome::NotApplicable => 0,
        Outcome::Skipped => 1,
        Outcome::Error => 2,
        Outcome::Fail => 3,
    }
}

impl ReportDiff {
    /// Compares `old` with `new`: outcomes, and violations of rules failing in both.
    pub fn of(old: &Report, new: &Report) -> ReportDiff {
        ReportDiff::with_durations(old, new, None)
    }

    /// [`ReportDiff::of`], and with `durations` (a percentage) rules slower or
    /// faster by more than it.
    pub fn with_durations(old: &Report, new: &Report, durations: Option<f64>) -> ReportDiff {
        let result_in = |r: &'_ Report, id: &str| -> Option<RuleResult> {
            r.results.iter().find(|x| x.id == id).cloned()
        };
        let outcome_in = |r: &Report, id: &str| result_in(r, id).map(|x| x.outcome);
        let mut ids: Vec<&str> = old
            .results
            .iter()
            .chain(&new.results)
            .map(|r| r.id.as_str())
            .collect();
        let position = |id: &str| {
            CATALOGUE
                .iter()
                .position(|r| r.id == id)
                .unwrap_or(usize::MAX)
        };
        ids.sort_by(|a, b| (position(a), a).cmp(&(position(b), b)));
        ids.dedup();
        let mut changes = Vec::new();
        let mut unchanged = 0;
        for id in ids {
            let (o, n) = (outcome_in(old, id), outcome_in(new, id));
            let mut detail = String::new();
            let change = match (o, n) {
                (Some(o), Some(n)) if o == n => {
                    let (before, after) = (
                        result_in(old, id).expect("present"),
                        result_in(new, id).expect("present"),
                    );
                    match same_outcome_change(&before, &after, durations) {
                        Some((change, d)) => {
                            detail = d;
                            change
                        }
                        None => {
                            unchanged += 1;
                            continue;
                        }
                    }
                }
                (Some(o), Some(n)) => match badness(n).cmp(&badness(o)) {
                    std::cmp::Ordering::Greater => Change::Worse,
                    std::cmp::Ordering::Less => Change::Better,
                    std::cmp::Ordering::Equal => Change::Changed,
                },
                (None, Some(_)) => Change::Added,
                (Some(_), None) => Change::Removed,
                (None, None) => continue,
            };
            changes.push(RuleChange {
                id: id.to_owned(),
                old: o,
                new: n,
                change,
                detail,
            });
        }
        ReportDiff {
            old_verdict: old.verdict,
            new_verdict: new.verdict,
            changes,
            unchanged,
        }
    }

    /// The rules that got worse: outcomes down the order, and added rules that fail or
    /// error.
    pub fn regressions(&self) -> impl Iterator<Item = &RuleChange> {
        self.changes.iter().filter(|c| {
            matches!(c.change, Change::Worse | Change::Slower)
                || (c.change == Change::Added && c.new.is_some_and(Outcome::is_failure))
        })
    }

    /// Whether some rule got worse.
    pub fn regressed(&self) -> bool {
        self.regressions().next().is_some()
    }

    /// The diff as a short table: the verdict, one line per changed rule, the counts.
    pub fn text(&self) -> String {
        let mut out = if self.old_verdict == self.new_verdict {
            format!("verdict: {} (unchanged)\n", self.new_verdict)
        } else {
            format!("verdict: {} -> {}\n", self.old_verdict, self.new_verdict)
        };
        if self.changes.is_empty() {
            out.push_str(&format!("no rule changed ({} the same)\n", self.unchanged));
            return out;
        }
        let name = |o: Option<Outcome>| o.map_or("-", Outcome::as_str);
        let id_w = self
            .changes
            .iter()
            .map(|c| c.id.len())
            .chain([4])
            .max()
            .unwrap_or(4);
        let w = "NotApplicable".len();
        out.push_str(&format!(
            "{:<id_w$}  {:<w$}  {:<w$}  CHANGE\n",
            "RULE", "OLD", "NEW"
        ));
        for c in &self.changes {
            let line = format!(
                "{:<id_w$}  {:<w$}  {:<w$}  {:<7}  {}",
                c.id,
                name(c.old),
                name(c.new),
                c.change.as_str(),
                c.detail
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str(&self.counts());
        out.push('\n');
        out
    }

    /// `1 worse, 0 better, …, 40 the same`.
    fn counts(&self) -> String {
        let count = |k: Change| self.changes.iter().filter(|c| c.change == k).count();
        let mut out = format!(
            "{} worse, {} better, {} changed, {} added, {} removed",
            count(Change::Worse),
            count(Change::Better),
            count(Change::Changed),
            count(Change::Added),
            count(Change::Removed),
        );
        let (slower, faster) = (count(Change::Slower), count(Change::Faster));
        if slower + faster > 0 {
            out.push_str(&format!(", {slower} slower, {faster} faster"));
        }
        out.push_str(&format!(", {} the same", self.unchanged));
        out
    }

    /// The diff as Markdown: the verdict, new failures, fixed rules, then a table of
    /// every change.
    pub fn markdown(&self) -> String {
        let mut out = String::from("### Conformance: changes since the previous run\n\n");
        if self.old_verdict == self.new_verdict {
            out.push_str(&format!(
                "Verdict: **{}** (unchanged).\n\n",
                self.new_verdict
            ));
        } else {
            out.push_str(&format!(
                "Verdict: {} → **{}**.\n\n",
                self.old_verdict, self.new_verdict
            ));
        }
        if self.changes.is_empty() {
            out.push_str(&format!("No rule changed ({} the same).\n", self.unchanged));
            return out;
        }
        let regressions: Vec<String> = self.regressions().map(|c| format!("`{}`", c.id)).collect();
        if !regressions.is_empty() {
            out.push_str(&format!("Got worse: {}.\n\n", regressions.join(", ")));
        }
        let fixed: Vec<String> = self
            .changes
            .iter()
            .filter(|c| c.change == Change::Better)
            .map(|c| format!("`{}`", c.id))
            .collect();
        if !fixed.is_empty() {
            out.push_str(&format!("Got better: {}.\n\n", fixed.join(", ")));
        }
        let name = |o: Option<Outcome>| o.map_or("–", Outcome::as_str);
        out.push_str("| Rule | Old | New | Change | Detail |\n| --- | --- | --- | --- | --- |\n");
        for c in &self.changes {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                c.id,
                name(c.old),
                name(c.new),
                c.change.as_str(),
                cell(&c.detail)
            ));
        }
        out.push_str(&format!("\n{}.\n", self.counts()));
        out
    }
}

/// Text made safe for a Markdown table cell.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// A violation as `diff` compares it: where and what was expected, with names and
/// run IDs (hex runs of eight or more) blanked, since they differ on every run.
fn violation_key(v: &Violation) -> String {
    let text = format!("{} / {}", v.location, v.expected);
    let mut out = String::with_capacity(text.len());
    let mut hex = String::new();
    for ch in text.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_hexdigit() {
            hex.push(ch);
            continue;
        }
        if hex.len() >= 8 {
            out.push('#');
        } else {
            out.push_str(&hex);
        }
        hex.clear();
        out.push(ch);
    }
    out.pop();
    out
}

/// How a rule whose outcome stayed the same changed: its violations (a rule failing
/// in both), else its duration (with `durations`); `None` when it did not.
fn same_outcome_change(
    old: &RuleResult,
    new: &RuleResult,
    durations: Option<f64>,
) -> Option<(Change, String)> {
    if old.outcome == Outcome::Fail {
        let keys = |r: &RuleResult| -> std::collections::BTreeSet<String> {
            r.violations.iter().map(violation_key).collect()
        };
        let (before, after) = (keys(old), keys(new));
        let appeared: Vec<&String> = after.difference(&before).collect();
        let gone: Vec<&String> = before.difference(&after).collect();
        let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ");
        if !appeared.is_empty() {
            let mut d = format!("new violation(s): {}", list(&appeared));
            if !gone.is_empty() {
                d.push_str(&format!("; gone: {}", list(&gone)));
            }
            return Some((Change::Worse, d));
        }
        if !gone.is_empty() {
            return Some((
                Change::Better,
                format!("gone violation(s): {}", list(&gone)),
            ));
        }
    }
    let pct = durations?;
    if old.duration < DURATION_FLOOR && new.duration < DURATION_FLOOR {
        return None;
    }
    let (a, b) = (old.duration.as_secs_f64(), new.duration.as_secs_f64());
    let change = if a > 0.0 {
        (b - a) / a * 100.0
    } else {
        f64::INFINITY
    };
    let detail = format!(
        "{} → {} ({:+.0} %)",
        human_duration(old.duration),
        human_duration(new.duration),
        change
    );
    if change > pct {
        Some((Change::Slower, detail))
    } else if change < -pct {
        Some((Change::Faster, detail))
    } else {
        None
    }
}

/// Reads both reports, prints their diff and returns the exit code.
pub fn diff(args: DiffArgs) -> u8 {
    let (old, new) = match (json::read(&args.old), json::read(&args.new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let d = ReportDiff::with_durations(&old, &new, args.durations);
    match args.format {
        DiffFormat::Text => print!("{}", d.text()),
        DiffFormat::Markdown => print!("{}", d.markdown()),
    }
    if d.regressed() { EXIT_FAILED } else { 0 }
}
