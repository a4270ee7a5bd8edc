//! What the human-facing formats (Markdown, HTML, the CLI) show the same way: the
//! order of results, the grouping by area, the verdict, the pass ratio and how a
//! duration reads.

use std::time::Duration;

use crate::profile::AxisClass;
use crate::rules::Area;
use crate::suite::outcome::{
    Outcome, Report, RuleResult, RunInfo, Summary, Verdict, WaiverKind, rfc3339,
};

/// The run's verdict in one word, in capitals (`PASS`, `PARTIAL`, `FAIL`, `ERROR`).
pub(crate) fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "PASS",
        Verdict::Partial => "PARTIAL",
        Verdict::Fail => "FAIL",
        Verdict::Error => "ERROR",
    }
}

/// What the verdict means, in one sentence for the report's head.
pub(crate) fn verdict_meaning(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "every rule of the catalogue ran and passed or was not applicable",
        Verdict::Partial => {
            "no rule failed or errored, but the run did not check everything (see Not checked) \
             or excused a failure (see Expected failures and quarantine)"
        }
        Verdict::Fail => {
            "a rule failed, or an expected-failure or quarantine entry is stale or expired"
        }
        Verdict::Error => "no rule failed, but one could not be judged (an error)",
    }
}

/// One value of the run's metadata, by how a format must show it.
pub(crate) enum RunValue {
    /// Text from the run, escaped by each format.
    Text(String),
    /// An identifier from the run, escaped and shown as code where a format can.
    Code(String),
    /// The run's seed, with how to replay it.
    Seed(u64),
    /// Text the suite wrote (a time, a word, hook names), shown as it is.
    Plain(String),
}

/// The run's metadata, in the order both human-facing reports show it: identity,
/// versions and commits, seed, times, backend, hooks, then the options that shaped it.
pub(crate) fn run_rows(report: &Report) -> Vec<(&'static str, RunValue)> {
    use RunValue::{Code, Plain, Seed, Text};
    let run = &report.run;
    let hooks: Vec<&str> = run.hooks.iter().map(|h| h.as_str()).collect();
    let mut rows = vec![
        ("Provider", Text(run.provider.clone())),
        ("Provider version", Text(run.provider_version.clone())),
        (
            "Provider commit",
            Text(commit_text(
                run.provider_commit.as_deref(),
                run.provider_dirty,
            )),
        ),
        ("Suite version", Text(run.suite_version.clone())),
        (
            "Suite commit",
            Text(commit_text(run.suite_commit.as_deref(), run.suite_dirty)),
        ),
        ("Report schema", Text(report.schema_version.clone())),
        ("Catalogue hash", Code(run.catalogue_hash.clone())),
        ("Seed", Seed(run.seed)),
        ("Run ID", Code(run.run_id.clone())),
        ("Started", Plain(rfc3339(run.started_at))),
        ("Wall time", Plain(human_duration(report.duration))),
        (
            "Backend",
            Plain(if run.real_backend { "real" } else { "fake" }.to_owned()),
        ),
        (
            "Hooks",
            Plain(if hooks.is_empty() {
                "none".to_owned()
            } else {
                hooks.join(", ")
            }),
        ),
    ];
    rows.extend(settings_rows(run).into_iter().map(|(k, v)| (k, Text(v))));
    rows
}

/// The options that shaped the run, as (label, plain text) rows.
fn settings_rows(run: &RunInfo) -> Vec<(&'static str, String)> {
    let o = &run.options;
    let seeds = if o.rule_seeds.is_empty() {
        "none given".to_owned()
    } else {
        o.rule_seeds
            .iter()
            .map(|(id, n)| format!("{id}={n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut rows = vec![
        (
            "Rules selected",
            o.rules
                .as_ref()
                .map_or_else(|| "all".to_owned(), |r| r.join(", ")),
        ),
        ("Property cases", o.cases.to_string()),
        ("Interrupted steps", format!("at most {}", o.steps)),
        ("Rule timeout", human_duration(o.rule_timeout)),
        ("Concurrency", o.concurrency.to_string()),
        ("Rule seeds", seeds),
    ];
    if !o.skip.is_empty() {
        rows.push(("Skipped on request", o.skip.join(", ")));
    }
    if o.repeat > 1 {
        rows.push(("Runs per rule", o.repeat.to_string()));
    }
    if let Some(limit) = o.max_wall {
        rows.push(("Wall-time budget", human_duration(limit)));
    }
    if let Some(s) = &o.shard {
        rows.push((
            "Shard",
            format!(
                "{} ({}): {} rule(s)",
                s.label(),
                s.balanced_by,
                s.rules.len()
            ),
        ));
    }
    if let Some(n) = o.max_fail {
        rows.push(("Stop after failures", n.to_string()));
    }
    if !run.backend_versions.is_empty() {
        rows.push(("Backend versions", backend_versions(run)));
    }
    rows
}

/// The backend's versions per location: `host-a: libvirt 11.3.0, qemu 10.0.2; …`.
pub(crate) fn backend_versions(run: &RunInfo) -> String {
    run.backend_versions
        .iter()
        .map(|(loc, v)| {
            let v: Vec<String> = v.iter().map(|(k, x)| format!("{k} {x}")).collect();
            format!("{loc}: {}", v.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A commit as the reports print it: `unknown`, the commit, or the commit with
/// `(dirty)` when its checkout had changes not committed.
pub(crate) fn commit_text(commit: Option<&str>, dirty: Option<bool>) -> String {
    match (commit, dirty) {
        (None, _) => "unknown".to_owned(),
        (Some(c), Some(true)) => format!("{c} (dirty)"),
        (Some(c), _) => c.to_owned(),
    }
}

/// A result's outcome with what qualifies it: `Fail (expected failure)`,
/// `Fail (quarantined, flaky)`, `Pass`.
pub(crate) fn result_label(r: &RuleResult) -> String {
    let mut marks: Vec<&str> = Vec::new();
    if r.outcome == Outcome::Fail
        && let Some(w) = &r.waiver
    {
        marks.push(w.kind.label());
    }
    if r.flaky {
        marks.push("flaky");
    }
    if marks.is_empty() {
        outcome_label(r.outcome).to_owned()
    } else {
        format!("{} ({})", outcome_label(r.outcome), marks.join(", "))
    }
}

/// What a report says of a result beyond its outcome: the entry that excuses it and
/// its repeated runs, one sentence each.
pub(crate) fn result_notes(r: &RuleResult) -> Vec<String> {
    let mut notes = Vec::new();
    if r.outcome == Outcome::Fail
        && let Some(w) = &r.waiver
    {
        notes.push(format!(
            "{} until {}, so the run does not fail for it: {}",
            match w.kind {
                WaiverKind::ExpectedFailure => "An expected failure",
                WaiverKind::Quarantine => "Quarantined",
            },
            w.expires,
            w.reason
        ));
    }
    if r.runs > 1 {
        let seeds: Vec<String> = std::iter::once(r.seed)
            .chain(r.repeat_seeds.iter().copied())
            .map(|s| s.to_string())
            .collect();
        notes.push(format!(
            "{}{} of {} runs passed (seeds {}).",
            if r.flaky { "Flaky: " } else { "" },
            r.passes,
            r.runs,
            seeds.join(", ")
        ));
    }
    notes
}

/// The file an entry comes from, as reports name it.
pub(crate) fn waiver_file(k: WaiverKind) -> &'static str {
    match k {
        WaiverKind::ExpectedFailure => "expected failures",
        WaiverKind::Quarantine => "quarantine",
    }
}

/// One line per injected fault of `r`: `transient at nth(3) on l0: fired`.
pub(crate) fn fault_lines(r: &RuleResult) -> Vec<String> {
    r.faults
        .iter()
        .map(|f| {
            format!(
                "{} at {}{}: {}",
                f.kind,
                f.trigger,
                f.location
                    .as_deref()
                    .map(|l| format!(" on {l}"))
                    .unwrap_or_default(),
                if f.fired { "fired" } else { "did not fire" }
            )
        })
        .collect()
}

/// Rules that ran to a verdict: passed, failed or errored.
pub(crate) fn judged(s: &Summary) -> usize {
    s.pass + s.fail + s.error
}

/// Passed rules as a whole percentage of judged rules, rounded down so that a run
/// with any failure never shows 100 %; `None` when nothing was judged.
pub(crate) fn pass_percent(s: &Summary) -> Option<usize> {
    let judged = judged(s);
    (judged > 0).then(|| s.pass * 100 / judged)
}

/// Fails, then errors, each in report (catalogue) order.
pub(crate) fn problems(results: &[RuleResult]) -> Vec<&RuleResult> {
    let mut out: Vec<&RuleResult> = results
        .iter()
        .filter(|r| r.outcome == Outcome::Fail)
        .collect();
    out.extend(results.iter().filter(|r| r.outcome == Outcome::Error));
    out
}

/// One group of results under an area heading.
pub(crate) struct AreaGroup<'a> {
    /// The heading (`Create`, `ListByTag`, …, or the raw area name if unknown).
    pub title: String,
    /// The area's results, in report order.
    pub results: Vec<&'a RuleResult>,
}

/// Results grouped by area, areas in catalogue order; areas the catalogue does not
/// know come last, in order of appearance. Empty areas are left out.
pub(crate) fn by_area(results: &[RuleResult]) -> Vec<AreaGroup<'_>> {
    let mut groups: Vec<(String, AreaGroup<'_>)> = Area::ALL
        .iter()
        .map(|a| {
            (
                a.as_str().to_owned(),
                AreaGroup {
                    title: a.title().to_owned(),
                    results: Vec::new(),
                },
            )
        })
        .collect();
    for r in results {
        match groups.iter_mut().find(|(key, _)| *key == r.area) {
            Some((_, g)) => g.results.push(r),
            None => groups.push((
                r.area.clone(),
                AreaGroup {
                    title: r.area.clone(),
                    results: vec![r],
                },
            )),
        }
    }
    groups
        .into_iter()
        .map(|(_, g)| g)
        .filter(|g| !g.results.is_empty())
        .collect()
}

/// The outcome as people read it (`Not applicable` rather than `NotApplicable`).
pub(crate) fn outcome_label(o: Outcome) -> &'static str {
    match o {
        Outcome::NotApplicable => "Not applicable",
        other => other.as_str(),
    }
}

/// The CSS class and anchor-safe name of an outcome.
pub(crate) fn outcome_slug(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::Error => "error",
        Outcome::Skipped => "skipped",
        Outcome::NotApplicable => "na",
    }
}

/// Each outcome with its count, in report order.
pub(crate) fn counts(s: &Summary) -> [(Outcome, usize); 5] {
    [
        (Outcome::Pass, s.pass),
        (Outcome::Fail, s.fail),
        (Outcome::Error, s.error),
        (Outcome::Skipped, s.skipped),
        (Outcome::NotApplicable, s.not_applicable),
    ]
}

/// An axis class as reports print it.
pub(crate) fn class_label(c: AxisClass) -> &'static str {
    match c {
        AxisClass::BehaviourChecked => "behaviour-checked",
        AxisClass::DeclaredOnly => "declared-only",
    }
}

/// A violation as one sentence.
pub(crate) fn violation_line(v: &crate::suite::outcome::Violation) -> String {
    format!(
        "at {}: expected {}, got {}",
        v.location, v.expected, v.actual
    )
}

/// The reason worth printing above a result's violations: `None` when it only
/// repeats the first violation, as it does for most failures.
pub(crate) fn distinct_reason(r: &RuleResult) -> Option<&str> {
    let reason = r.reason.as_deref()?;
    match r.violations.first() {
        Some(v) if v.to_string() == reason => None,
        _ => Some(reason),
    }
}

/// `s` cut to at most `max` characters, with an ellipsis when cut.
pub(crate) fn clip(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => s.into(),
        Some((at, _)) => format!("{}…", &s[..at]).into(),
    }
}

/// A result's time as tables show it: a dash for a rule that never ran.
pub(crate) fn result_time(r: &RuleResult) -> String {
    let never_ran =
        matches!(r.outcome, Outcome::Skipped | Outcome::NotApplicable) && r.duration.is_zero();
    if never_ran {
        "–".to_owned()
    } else {
        human_duration(r.duration)
    }
}

/// A duration as people read it: `0 ms`, `12 ms`, `3.4 s`, `2 min 05 s`.
pub fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d < Duration::from_secs(60) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        let s = d.as_secs();
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_their_scale() {
        assert_eq!(human_duration(Duration::ZERO), "0 ms");
        assert_eq!(human_duration(Duration::from_micros(12_700)), "12 ms");
        assert_eq!(human_duration(Duration::from_millis(3_460)), "3.5 s");
        assert_eq!(human_duration(Duration::from_secs(125)), "2 min 05 s");
    }

    #[test]
    fn clip_cuts_on_characters() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("ééé", 2), "éé…");
    }

    #[test]
    fn pass_ratio_never_rounds_a_failure_up_to_all() {
        let s = Summary {
            pass: 199,
            fail: 1,
            ..Summary::default()
        };
        assert_eq!(pass_percent(&s), Some(99));
        assert_eq!(pass_percent(&Summary::default()), None);
        let skipped_only = Summary {
            skipped: 3,
            ..Summary::default()
        };
        assert_eq!(pass_percent(&skipped_only), None);
    }
}
