//! `diff`: two runs' reports compared rule by rule: outcomes that changed, rules added
//! or removed, and the verdict. The exit code says whether anything got worse.

use std::path::PathBuf;

use super::{EXIT_FAILED, EXIT_USAGE};
use crate::rules::CATALOGUE;
use crate::suite::outcome::{Outcome, Report, Verdict};
use crate::suite::report::json;

/// The flags of `diff`.
#[derive(Clone, Debug, clap::Args)]
pub struct DiffArgs {
    /// The earlier run's `report.json`.
    #[arg(value_name = "OLD.json")]
    pub old: PathBuf,
    /// The later run's `report.json`.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
}

/// What `diff --help` says of the exit codes.
pub const DIFF_EXIT_HELP: &str = "A rule got worse when its outcome moved down the order \
Pass/NotApplicable, Skipped, Error, Fail, or when a rule absent from OLD is Fail or Error in \
NEW. Exit codes: 0 no rule got worse, 1 some rule got worse, 2 a report could not be read.";

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
    /// Compares `old` with `new`.
    pub fn of(old: &Report, new: &Report) -> ReportDiff {
        let outcome_in =
            |r: &Report, id: &str| r.results.iter().find(|x| x.id == id).map(|x| x.outcome);
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
            let change = match (o, n) {
                (Some(o), Some(n)) if o == n => {
                    unchanged += 1;
                    continue;
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
            c.change == Change::Worse
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
            out.push_str(&format!(
                "{:<id_w$}  {:<w$}  {:<w$}  {}\n",
                c.id,
                name(c.old),
                name(c.new),
                c.change.as_str()
            ));
        }
        let count = |k: Change| self.changes.iter().filter(|c| c.change == k).count();
        out.push_str(&format!(
            "{} worse, {} better, {} changed, {} added, {} removed, {} the same\n",
            count(Change::Worse),
            count(Change::Better),
            count(Change::Changed),
            count(Change::Added),
            count(Change::Removed),
            self.unchanged
        ));
        out
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
    let d = ReportDiff::of(&old, &new);
    print!("{}", d.text());
    if d.regressed() { EXIT_FAILED } else { 0 }
}
