//! The HTML report: one self-contained page, with inline CSS, no script and nothing
//! fetched (a content security policy forbids it), that opens with the verdict and
//! summary cards, then failures and errors with their violations, property data and
//! evidence behind `<details>`, then one table per area, the declared profile and
//! the run's metadata.
//!
//! Every piece of text that comes from the run goes through [`escape`]; element IDs
//! are fixed strings or escaped too.

use std::fmt::Write as _;

use super::view::{
    RunValue, by_area, class_label, clip, counts, distinct_reason, fault_lines, human_duration,
    judged, outcome_label, outcome_slug, pass_percent, problems, result_label, result_notes,
    result_time, run_rows, verdict, verdict_meaning, violation_line, waiver_file,
};
use crate::profile::Axis;
use crate::suite::outcome::{Report, RuleResult, rfc3339};

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root {
  --bg: #f6f8fa; --panel: #ffffff; --text: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --pass: #1a7f37; --fail: #cf222e; --error: #bc4c00; --skipped: #6e7781; --na: #8250df;
  --pass-bg: #dafbe1; --fail-bg: #ffebe9; --error-bg: #fff1e5; --skipped-bg: #eaeef2; --na-bg: #fbefff;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --panel: #151b23; --text: #e6edf3; --muted: #9198a1; --line: #3d444d;
    --pass: #3fb950; --fail: #f85149; --error: #db6d28; --skipped: #9198a1; --na: #ab7df8;
    --pass-bg: #12261e; --fail-bg: #2d1214; --error-bg: #2b1a0e; --skipped-bg: #212830; --na-bg: #231a33;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, main, footer { max-width: 1100px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 28px; display: flex; gap: 18px; align-items: center; flex-wrap: wrap; }
h1 { margin: 0; font-size: 26px; }
h2 { margin: 36px 0 12px; font-size: 20px; border-bottom: 1px solid var(--line); padding-bottom: 6px; }
h3 { margin: 22px 0 8px; font-size: 16px; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.sub { color: var(--muted); margin: 4px 0 0; }
.verdict { font-weight: 700; font-size: 18px; letter-spacing: .08em; padding: 10px 18px;
  border-radius: 10px; color: #fff; }
.verdict.pass { background: var(--pass); } .verdict.fail { background: var(--fail); }
.verdict.partial { background: var(--skipped, #b58a00); } .verdict.error { background: var(--error, #8a3ffc); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr)); gap: 12px; margin-top: 24px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px;
  border-top: 4px solid var(--muted); }
.card .num { font-size: 30px; font-weight: 700; line-height: 1.1; }
.card .label { color: var(--muted); font-size: 13px; }
.card.pass { border-top-color: var(--pass); } .card.pass .num { color: var(--pass); }
.card.fail { border-top-color: var(--fail); } .card.fail .num { color: var(--fail); }
.card.error { border-top-color: var(--error); } .card.error .num { color: var(--error); }
.card.skipped { border-top-color: var(--skipped); }
.card.na { border-top-color: var(--na); } .card.na .num { color: var(--na); }
.card.ratio { border-top-color: var(--text); }
.bar { display: flex; height: 12px; border-radius: 6px; overflow: hidden; margin: 16px 0 4px;
  background: var(--skipped-bg); }
.bar span { display: block; height: 100%; }
.bar .pass { background: var(--pass); } .bar .fail { background: var(--fail); }
.bar .error { background: var(--error); } .bar .skipped { background: var(--skipped); }
.bar .na { background: var(--na); }
.legend { color: var(--muted); font-size: 13px; }
.pill { display: inline-block; padding: 1px 9px; border-radius: 999px; font-size: 12px; font-weight: 600;
  white-space: nowrap; }
.pill.pass { color: var(--pass); background: var(--pass-bg); }
.pill.fail { color: var(--fail); background: var(--fail-bg); }
.pill.error { color: var(--error); background: var(--error-bg); }
.pill.skipped { color: var(--skipped); background: var(--skipped-bg); }
.pill.na { color: var(--na); background: var(--na-bg); }
.problem { background: var(--panel); border: 1px solid var(--line); border-left: 5px solid var(--fail);
  border-radius: 8px; padding: 4px 16px 12px; margin: 12px 0; }
.problem.error { border-left-color: var(--error); }
.problem .reason { margin: 4px 0 8px; }
.none { background: var(--pass-bg); color: var(--pass); padding: 10px 14px; border-radius: 8px; }
details { margin: 6px 0; }
summary { cursor: pointer; color: var(--muted); }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  overflow-x: auto; white-space: pre-wrap; word-break: break-word; margin: 6px 0; }
table { width: 100%; border-collapse: collapse; background: var(--panel); border: 1px solid var(--line);
  border-radius: 8px; overflow: hidden; }
th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 13px; color: var(--muted); font-weight: 600; background: var(--bg); }
tr:last-child td { border-bottom: none; }
table.results { table-layout: fixed; }
table.results col.c-id { width: 190px; } table.results col.c-title { width: 28%; }
table.results col.c-outcome { width: 130px; } table.results col.c-time { width: 90px; }
table.results td { overflow-wrap: anywhere; }
td.time { text-align: right; white-space: nowrap; color: var(--muted); }
td.id { white-space: nowrap; }
tr.fail td:first-child { box-shadow: inset 4px 0 var(--fail); }
tr.error td:first-child { box-shadow: inset 4px 0 var(--error); }
.area-count { color: var(--muted); font-weight: 400; font-size: 13px; margin-left: 8px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0;
  background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
dl.meta dt { color: var(--muted); } dl.meta dd { margin: 0; word-break: break-all; }
ol.violations { margin: 6px 0; padding-left: 22px; }
ol.violations li { margin: 4px 0; }
.muted { color: var(--muted); }
footer { color: var(--muted); font-size: 12px; padding: 30px 20px 40px; }
a { color: inherit; }
"#;

/// Renders `report` as one self-contained HTML page.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = write_page(&mut out, report);
    out
}

fn write_page(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    let provider = escape(&run.provider);
    let verdict = verdict(report.verdict);
    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
    )?;
    writeln!(
        out,
        "<title>{verdict}: {provider} conformance report</title>"
    )?;
    writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>")?;

    write_header(out, report)?;
    write_not_checked(out, report)?;
    write_summary(out, report)?;
    write_problems(out, report)?;
    write_waivers(out, report)?;
    write_areas(out, report)?;
    write_profile(out, report)?;
    write_run(out, report)?;
    write_footer(out, report)?;
    Ok(())
}

/// The page header: verdict, provider, version, start, wall time, seed.
fn write_header(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    let provider = escape(&run.provider);
    let verdict = verdict(report.verdict);
    writeln!(out, "<header>")?;
    writeln!(
        out,
        "<div class=\"verdict {}\" id=\"verdict\">{verdict}</div>",
        verdict.to_ascii_lowercase()
    )?;
    writeln!(
        out,
        "<div><h1>Conformance report: <span id=\"provider\">{provider}</span></h1>"
    )?;
    writeln!(
        out,
        "<p class=\"sub\">version {} &middot; started {} &middot; wall time {} &middot; seed <span class=\"mono\">{}</span></p></div>",
        escape(&run.provider_version),
        rfc3339(run.started_at),
        human_duration(report.duration),
        run.seed
    )?;
    writeln!(out, "</header>\n<main>")?;
    writeln!(
        out,
        "<p class=\"sub\" id=\"verdict-meaning\">Verdict {}: {}.</p>",
        report.verdict,
        verdict_meaning(report.verdict)
    )?;
    Ok(())
}

/// What the run did not check, and why.
fn write_not_checked(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(
        out,
        "<section id=\"not-checked\" aria-label=\"not checked\"><h2>Not checked</h2>"
    )?;
    if report.not_checked.is_empty() {
        writeln!(
            out,
            "<p>Nothing: every rule ran and checked all it asserts.</p>"
        )?;
    } else {
        writeln!(
            out,
            "<table><thead><tr><th>Rule</th><th>What</th><th>Why</th></tr></thead><tbody>"
        )?;
        for u in &report.not_checked {
            writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                escape(&u.rule),
                escape(&u.what),
                escape(&u.why)
            )?;
        }
        writeln!(out, "</tbody></table>")?;
    }
    writeln!(out, "</section>")?;
    Ok(())
}

/// The summary cards and the outcome bar.
fn write_summary(out: &mut String, report: &Report) -> std::fmt::Result {
    let s = &report.summary;
    writeln!(
        out,
        "<section class=\"cards\" id=\"summary\" aria-label=\"summary\">"
    )?;
    let (ratio, ratio_note) = match pass_percent(s) {
        Some(p) => (
            format!("{p}%"),
            format!("{} of {} judged rules", s.pass, judged(s)),
        ),
        None => ("&ndash;".to_owned(), "no rule was judged".to_owned()),
    };
    writeln!(
        out,
        "<div class=\"card ratio\"><div class=\"num\" id=\"pass-ratio\">{ratio}</div><div class=\"label\">pass ratio<br>{ratio_note}</div></div>"
    )?;
    for (o, n) in counts(s) {
        let slug = outcome_slug(o);
        writeln!(
            out,
            "<div class=\"card {slug}\"><div class=\"num\" id=\"count-{slug}\">{n}</div><div class=\"label\">{}</div></div>",
            outcome_label(o)
        )?;
    }
    writeln!(
        out,
        "<div class=\"card\"><div class=\"num\" id=\"count-total\">{}</div><div class=\"label\">rules</div></div>",
        s.total()
    )?;
    writeln!(out, "</section>")?;
    if s.total() > 0 {
        write!(out, "<div class=\"bar\" aria-hidden=\"true\">")?;
        for (o, n) in counts(s).into_iter().filter(|(_, n)| *n > 0) {
            write!(
                out,
                "<span class=\"{}\" style=\"width:{:.3}%\" title=\"{}: {n}\"></span>",
                outcome_slug(o),
                n as f64 * 100.0 / s.total() as f64,
                outcome_label(o)
            )?;
        }
        writeln!(out, "</div>")?;
        let legend: Vec<String> = counts(s)
            .iter()
            .map(|(o, n)| format!("{n} {}", outcome_label(*o).to_ascii_lowercase()))
            .collect();
        writeln!(out, "<p class=\"legend\">{}</p>", legend.join(" &middot; "))?;
    }
    Ok(())
}

/// Every failure and error in full.
fn write_problems(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(
        out,
        "<section id=\"problems\">\n<h2>Failures and errors</h2>"
    )?;
    let problems = problems(&report.results);
    if problems.is_empty() {
        writeln!(
            out,
            "<p class=\"none\">No rule failed and no rule errored.</p>"
        )?;
    }
    for r in problems {
        write_problem(out, r)?;
    }
    writeln!(out, "</section>")?;
    Ok(())
}

/// The expected failures and quarantine entries, when there are any.
fn write_waivers(out: &mut String, report: &Report) -> std::fmt::Result {
    if !report.waivers.is_empty() {
        writeln!(
            out,
            "<section id=\"waivers\">\n<h2>Expected failures and quarantine</h2>\n<table>\n<thead><tr><th>Rule</th><th>File</th><th>Expires</th><th>Status</th><th>What it means</th></tr></thead>\n<tbody>"
        )?;
        for w in &report.waivers {
            writeln!(
                out,
                "<tr class=\"waiver-{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                w.status.as_str(),
                escape(&w.rule),
                waiver_file(w.kind),
                escape(&w.expires),
                w.status.as_str(),
                escape(&w.message)
            )?;
        }
        writeln!(out, "</tbody>\n</table>\n</section>")?;
    }
    Ok(())
}

/// One table of results per area.
fn write_areas(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "<section id=\"areas\">\n<h2>Results by area</h2>")?;
    for group in by_area(&report.results) {
        let passed = group
            .results
            .iter()
            .filter(|r| r.outcome == crate::suite::outcome::Outcome::Pass)
            .count();
        writeln!(
            out,
            "<h3>{}<span class=\"area-count\">{passed} of {} passed</span></h3>",
            escape(&group.title),
            group.results.len()
        )?;
        writeln!(
            out,
            "<table class=\"results\">\n<colgroup><col class=\"c-id\"><col class=\"c-title\"><col class=\"c-outcome\"><col><col class=\"c-time\"></colgroup>\n<thead><tr><th>ID</th><th>Title</th><th>Outcome</th><th>Reason and evidence</th><th>Time</th></tr></thead>\n<tbody>"
        )?;
        for r in group.results {
            write_row(out, r)?;
        }
        writeln!(out, "</tbody>\n</table>")?;
    }
    writeln!(out, "</section>")?;
    Ok(())
}

/// The declared profile.
fn write_profile(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    writeln!(
        out,
        "<section id=\"profile\">\n<h2>Declared profile</h2>\n<table>\n<thead><tr><th>Axis</th><th>Declared</th><th>Class</th></tr></thead>\n<tbody>"
    )?;
    for (axis, value) in run.profile.entries() {
        writeln!(
            out,
            "<tr><td><code>{}</code></td><td><code>{value}</code></td><td class=\"muted\">{}</td></tr>",
            axis.key(),
            class_label(Axis::class(axis))
        )?;
    }
    writeln!(out, "</tbody>\n</table>\n</section>")?;
    Ok(())
}

/// The run's metadata, environment and what was swept.
fn write_run(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    writeln!(
        out,
        "<section id=\"run\">\n<h2>Run</h2>\n<dl class=\"meta\">"
    )?;
    let mut meta: Vec<(&str, String)> = run_rows(report)
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                RunValue::Text(t) => escape(&t),
                RunValue::Code(t) => format!("<code>{}</code>", escape(&t)),
                RunValue::Seed(seed) => format!(
                    "<code>{seed}</code> <span class=\"muted\">(replay with <code>--seed {seed}</code>)</span>"
                ),
                RunValue::Plain(t) => t,
            };
            (k, v)
        })
        .collect();
    if !run.environment.is_empty() {
        let env: Vec<String> = run
            .environment
            .iter()
            .map(|(k, v)| format!("<code>{}</code> = {}", escape(k), escape(v)))
            .collect();
        meta.push(("Environment", env.join("<br>")));
    }
    if !report.swept.is_empty() {
        let swept: Vec<String> = report.swept.iter().map(|s| escape(s)).collect();
        meta.push(("Swept after the run", swept.join("<br>")));
    }
    for (k, v) in meta {
        writeln!(out, "<dt>{k}</dt><dd>{v}</dd>")?;
    }
    writeln!(out, "</dl>\n</section>\n</main>")?;
    Ok(())
}

/// The footer: report format and suite version.
fn write_footer(out: &mut String, report: &Report) -> std::fmt::Result {
    let run = &report.run;
    writeln!(
        out,
        "<footer>Report format {} &middot; conformance suite {}</footer>\n</body>\n</html>",
        escape(&report.schema_version),
        escape(&run.suite_version)
    )?;
    Ok(())
}

fn write_problem(out: &mut String, r: &RuleResult) -> std::fmt::Result {
    let slug = outcome_slug(r.outcome);
    writeln!(
        out,
        "<article class=\"problem {slug}\" id=\"rule-{}\">",
        escape(&r.id)
    )?;
    writeln!(
        out,
        "<h3><span class=\"pill {slug}\">{}</span> <code>{}</code> {}</h3>",
        escape(&result_label(r)),
        escape(&r.id),
        escape(&r.title)
    )?;
    for note in result_notes(r) {
        writeln!(out, "<p class=\"note\">{}</p>", escape(&note))?;
    }
    if let Some(reason) = distinct_reason(r) {
        writeln!(out, "<p class=\"reason\">{}</p>", escape(reason))?;
    }
    if let Some(log) = &r.log {
        writeln!(
            out,
            "<p class=\"log\">Log: <a href=\"{0}\"><code>{0}</code></a></p>",
            escape(log)
        )?;
    }
    write_details(out, r, true)?;
    writeln!(out, "</article>")
}

/// Violations (open when asked), property data and evidence, each behind `<details>`.
fn write_details(out: &mut String, r: &RuleResult, open: bool) -> std::fmt::Result {
    if !r.violations.is_empty() {
        writeln!(
            out,
            "<details{}><summary>{} violation{}</summary><ol class=\"violations\">",
            if open { " open" } else { "" },
            r.violations.len(),
            if r.violations.len() == 1 { "" } else { "s" }
        )?;
        for v in &r.violations {
            writeln!(out, "<li>{}</li>", escape(&violation_line(v)))?;
        }
        writeln!(out, "</ol></details>")?;
    }
    if let Some(p) = &r.property {
        writeln!(
            out,
            "<details{}><summary>property failed with seed <code>{}</code>; replay with <code>{}</code></summary><pre>{}</pre></details>",
            if open { " open" } else { "" },
            p.seed,
            escape(&p.replay),
            escape(&p.shrunk)
        )?;
    }
    let faults = fault_lines(r);
    if !faults.is_empty() {
        writeln!(
            out,
            "<details><summary>{} fault{} injected (rule seed <code>{}</code>)</summary><pre>{}</pre></details>",
            faults.len(),
            if faults.len() == 1 { "" } else { "s" },
            r.seed,
            escape(&faults.join("\n"))
        )?;
    }
    if !r.evidence.is_empty() {
        writeln!(
            out,
            "<details><summary>evidence ({} line{})</summary><pre>{}</pre></details>",
            r.evidence.len(),
            if r.evidence.len() == 1 { "" } else { "s" },
            escape(&r.evidence.join("\n"))
        )?;
    }
    Ok(())
}

/// Characters of a failure's reason shown in the per-area tables.
const REASON_IN_TABLE: usize = 160;

fn write_row(out: &mut String, r: &RuleResult) -> std::fmt::Result {
    let slug = outcome_slug(r.outcome);
    let id = escape(&r.id);
    let id_cell = if r.outcome.is_failure() {
        format!("<a href=\"#rule-{id}\"><code>{id}</code></a>")
    } else {
        format!("<code>{id}</code>")
    };
    write!(
        out,
        "<tr class=\"{slug}\"><td class=\"id\">{id_cell}</td><td>{}</td><td><span class=\"pill {slug}\">{}</span></td><td>",
        escape(&r.title),
        escape(&result_label(r))
    )?;
    if let Some(reason) = &r.reason {
        if r.outcome.is_failure() {
            // Shown in full, with its details, under "Failures and errors".
            write!(out, "{}", escape(&clip(reason, REASON_IN_TABLE)))?;
        } else {
            write!(out, "{}", escape(reason))?;
        }
    }
    if !r.outcome.is_failure() {
        if r.runs > 1 {
            write!(
                out,
                " <span class=\"muted\">({} of {} runs passed)</span>",
                r.passes, r.runs
            )?;
        }
        write_details(out, r, false)?;
    }
    writeln!(out, "</td><td class=\"time\">{}</td></tr>", result_time(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_content_and_attributes() {
        assert_eq!(
            escape(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
    }
}
