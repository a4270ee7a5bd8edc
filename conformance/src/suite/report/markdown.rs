//! The Markdown report, for pull requests and the repository's `reports/` folder: a
//! header with the run's identity and declared profile, the summary counts, failures
//! and errors in full, then one table per area.
//!
//! Text from the provider or the run is escaped so it cannot open a table cell, a
//! link, an HTML tag or a code span; multi-line text goes in fenced blocks whose
//! fence is longer than any backtick run inside.

use std::fmt::Write as _;

use super::view::{
    RunValue, by_area, class_label, counts, distinct_reason, fault_lines, judged, outcome_label,
    pass_percent, problems, result_label, result_notes, result_time, run_rows, verdict,
    verdict_meaning, violation_line, waiver_file,
};
use crate::profile::Axis;
use crate::suite::outcome::{Report, RuleResult};

/// Renders `report` as a Markdown document.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = write_report(&mut out, report);
    // Every block ends with a blank line; the file ends with one newline.
    let end = out.trim_end_matches('\n').len();
    out.truncate(end);
    out.push('\n');
    out
}

fn write_report(out: &mut String, report: &Report) -> std::fmt::Result {
    write_head(out, report)?;
    write_run(out, report)?;
    write_profile(out, report)?;
    write_summary(out, report)?;
    write_not_checked(out, report)?;
    write_waivers(out, report)?;
    write_problems(out, report)?;
    write_areas(out, report)?;
    write_environment(out, report)?;
    Ok(())
}

/// The title, the verdict and the counts.
fn write_head(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    let s = &report.summary;
    writeln!(out, "# Conformance report: {}\n", text(&run.provider))?;
    let ratio = match pass_percent(s) {
        Some(p) => format!("{p} % of {} judged rules passed", judged(s)),
        None => "no rule was judged".to_owned(),
    };
    writeln!(
        out,
        "**Verdict: {}** ({}).\n",
        verdict(report.verdict),
        verdict_meaning(report.verdict)
    )?;
    writeln!(
        out,
        "{} pass, {} fail, {} error, {} skipped, {} not applicable, of {} rules run ({} in the catalogue); {ratio}.\n",
        s.pass,
        s.fail,
        s.error,
        s.skipped,
        s.not_applicable,
        s.total(),
        crate::rules::CATALOGUE.len()
    )?;
    if s.waived > 0 {
        writeln!(
            out,
            "{} of the failures are expected or quarantined and do not fail the run.\n",
            s.waived
        )?;
    }
    Ok(())
}

/// The run's metadata.
fn write_run(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "| Run | |\n| --- | --- |")?;
    for (k, v) in run_rows(report) {
        let v = match v {
            RunValue::Text(t) | RunValue::Code(t) => text(&t),
            RunValue::Seed(seed) => format!("{seed} (replay with `--seed {seed}`)"),
            RunValue::Plain(t) => t,
        };
        writeln!(out, "| {k} | {v} |")?;
    }
    Ok(())
}

/// The declared profile.
fn write_profile(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    writeln!(out)?;
    writeln!(out, "## Profile\n")?;
    writeln!(out, "| Axis | Declared | Class |\n| --- | --- | --- |")?;
    for (axis, value) in run.profile.entries() {
        writeln!(
            out,
            "| {} | {value} | {} |",
            axis.key(),
            class_label(Axis::class(axis))
        )?;
    }
    Ok(())
}

/// The summary counts.
fn write_summary(out: &mut String, report: &Report) -> std::fmt::Result {
    let s = &report.summary;
    writeln!(out)?;
    writeln!(out, "## Summary\n")?;
    writeln!(out, "| Outcome | Rules |\n| --- | ---: |")?;
    for (o, n) in counts(s) {
        writeln!(out, "| {} | {n} |", outcome_label(o))?;
    }
    writeln!(out, "| **Total** | **{}** |", s.total())?;
    Ok(())
}

/// What the run did not check, and why.
fn write_not_checked(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out)?;
    writeln!(out, "## Not checked\n")?;
    if report.not_checked.is_empty() {
        writeln!(out, "Nothing: every rule ran and checked all it asserts.\n")?;
    } else {
        writeln!(out, "| Rule | What | Why |\n| --- | --- | --- |")?;
        for u in &report.not_checked {
            writeln!(
                out,
                "| {} | {} | {} |",
                text(&u.rule),
                text(&u.what),
                text(&u.why)
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The expected failures and quarantine entries, when there are any.
fn write_waivers(out: &mut String, report: &Report) -> std::fmt::Result {
    if !report.waivers.is_empty() {
        writeln!(out)?;
        writeln!(out, "## Expected failures and quarantine\n")?;
        writeln!(
            out,
            "| Rule | File | Expires | Status | What it means |\n| --- | --- | --- | --- | --- |"
        )?;
        for w in &report.waivers {
            writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                text(&w.rule),
                waiver_file(w.kind),
                text(&w.expires),
                w.status.as_str(),
                text(&w.message)
            )?;
        }
    }
    Ok(())
}

/// Every failure and error in full.
fn write_problems(out: &mut String, report: &Report) -> std::fmt::Result {
    let problems = problems(&report.results);
    writeln!(out)?;
    writeln!(out, "## Failures and errors\n")?;
    if problems.is_empty() {
        writeln!(out, "None.\n")?;
    }
    for r in problems {
        write_problem(out, r)?;
    }
    Ok(())
}

/// One table of results per area.
fn write_areas(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "## Results by area\n")?;
    for group in by_area(&report.results) {
        writeln!(out, "### {}\n", text(&group.title))?;
        writeln!(
            out,
            "| ID | Title | Outcome | Reason | Time |\n| --- | --- | --- | --- | ---: |"
        )?;
        for r in group.results {
            writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                text(&r.id),
                text(&r.title),
                result_label(r),
                reason_cell(r),
                result_time(r)
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The environment and what was swept, when there is any.
fn write_environment(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    if !run.environment.is_empty() {
        writeln!(out, "## Environment\n")?;
        writeln!(out, "| Key | Value |\n| --- | --- |")?;
        for (k, v) in &run.environment {
            writeln!(out, "| {} | {} |", text(k), text(v))?;
        }
        writeln!(out)?;
    }
    if !report.swept.is_empty() {
        writeln!(out, "## Swept after the run\n")?;
        for s in &report.swept {
            writeln!(out, "- {}", text(s))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn write_problem(out: &mut String, r: &RuleResult) -> std::fmt::Result {
    writeln!(
        out,
        "### {}: {} ({})\n",
        text(&r.id),
        text(&r.title),
        result_label(r)
    )?;
    for note in result_notes(r) {
        writeln!(out, "{}\n", text(&note))?;
    }
    if let Some(reason) = distinct_reason(r) {
        writeln!(out, "{}\n", text(reason))?;
    }
    if let Some(log) = &r.log {
        writeln!(out, "Log: [{}]({})\n", text(log), log.replace(' ', "%20"))?;
    }
    if !r.violations.is_empty() {
        writeln!(out, "Violations:\n")?;
        for v in &r.violations {
            writeln!(out, "- {}", text(&violation_line(v)))?;
        }
        writeln!(out)?;
    }
    if let Some(p) = &r.property {
        writeln!(
            out,
            "Property failed with seed {}; replay with `{}`; shrunk input:\n\n{}",
            p.seed,
            text(&p.replay),
            fenced(&p.shrunk)
        )?;
    }
    let faults = fault_lines(r);
    if !faults.is_empty() {
        writeln!(out, "Faults injected (rule seed {}):\n", r.seed)?;
        for f in &faults {
            writeln!(out, "- {}", text(f))?;
        }
        writeln!(out)?;
    }
    if !r.evidence.is_empty() {
        writeln!(out, "Evidence:\n\n{}", fenced(&r.evidence.join("\n")))?;
    }
    Ok(())
}

/// The reason column of a results table: the reason, and for a rule run more than
/// once, how many runs passed.
fn reason_cell(r: &RuleResult) -> String {
    let reason = r.reason.as_deref().map(text).unwrap_or_default();
    if r.runs > 1 {
        let runs = format!("{} of {} runs passed", r.passes, r.runs);
        if reason.is_empty() {
            runs
        } else {
            format!("{reason} ({runs})")
        }
    } else {
        reason
    }
}

/// Escapes text for a table cell or a paragraph: nothing in it opens markup, and a
/// line break stays inside the cell.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' => out.push_str("<br>"),
            '\r' => {}
            '#' if out.is_empty() => out.push_str("\\#"),
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A fenced code block holding `s` verbatim.
fn fenced(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{}\n{fence}\n", s.trim_end_matches('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_text_cannot_open_markup() {
        assert_eq!(text("a|b"), "a\\|b");
        assert_eq!(text("<script>"), "&lt;script&gt;");
        assert_eq!(text("one\ntwo"), "one<br>two");
        assert_eq!(text("[x](y)"), "\\[x\\](y)");
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fenced("plain"), "```text\nplain\n```\n");
        assert_eq!(fenced("a ```` b"), "`````text\na ```` b\n`````\n");
    }
}
