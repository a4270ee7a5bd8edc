//! JUnit read back, and HTML and Markdown escaped; the HTML rendered by
//! headless Chromium.

use super::*;

#[test]
fn junit_reads_back_with_every_outcome_mapped() {
    let xml = report::junit::render(&sample());
    let doc = quick_junit::Report::deserialize_from_str(&xml).expect("valid junit");
    assert_eq!(doc.test_suites.len(), 1);
    let suite = &doc.test_suites[0];
    assert_eq!(suite.name.as_str(), "kvm2");
    assert_eq!((suite.tests, suite.failures, suite.errors), (8, 2, 1));
    let skipped = suite
        .test_cases
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::Skipped { .. }))
        .count();
    assert_eq!(skipped, 3);
    let case = |name: &str| {
        suite
            .test_cases
            .iter()
            .find(|c| c.name.as_str() == name)
            .unwrap_or_else(|| panic!("no testcase {name}"))
    };
    match &case("conformance::create::CRE-SECRET").status {
        quick_junit::TestCaseStatus::NonSuccess {
            kind: quick_junit::NonSuccessKind::Failure,
            message,
            description,
            ..
        } => {
            assert!(
                message
                    .as_ref()
                    .unwrap()
                    .as_str()
                    .contains("create at verbosity V2")
            );
            let text = description.as_ref().unwrap().as_str();
            assert!(text.contains("property seed 489438026"), "{text}");
            assert!(text.contains("captured 214 log lines"), "{text}");
        }
        other => panic!("CRE-SECRET: {other:?}"),
    }
    match &case("conformance::check::CHK-ORDER").status {
        quick_junit::TestCaseStatus::Skipped { message, ty, .. } => {
            assert_eq!(ty.as_ref().unwrap().as_str(), "NotApplicable");
            assert!(message.as_ref().unwrap().as_str().contains("Checker"));
        }
        other => panic!("CHK-ORDER: {other:?}"),
    }
    assert!(matches!(
        case("conformance::get::GET-BUSY").status,
        quick_junit::TestCaseStatus::NonSuccess {
            kind: quick_junit::NonSuccessKind::Error,
            ..
        }
    ));
    assert_eq!(
        case("conformance::list::LST-ORDER").time,
        Some(Duration::from_millis(61_500)),
        "seconds, to the millisecond"
    );
}

const HOSTILE: &str = "<script>alert('x')</script>";

fn hostile() -> Report {
    let mut r = sample();
    r.run.provider = format!("evil{HOSTILE}");
    r.run.provider_version = HOSTILE.into();
    r.run.run_id = HOSTILE.into();
    r.run.environment.insert(HOSTILE.into(), HOSTILE.into());
    r.swept.push(HOSTILE.into());
    for x in &mut r.results {
        x.id = format!("{}{HOSTILE}", x.id);
        x.title = HOSTILE.into();
        x.reason = Some(format!("\"{HOSTILE}\" & more"));
        x.evidence.push(HOSTILE.into());
        for v in &mut x.violations {
            v.location = HOSTILE.into();
            v.actual = HOSTILE.into();
        }
        if let Some(p) = &mut x.property {
            p.shrunk = HOSTILE.into();
        }
    }
    r
}

#[test]
fn html_escapes_every_piece_of_text() {
    let html = report::html::render(&hostile());
    assert!(!html.contains("<script"), "an unescaped tag got through");
    assert!(
        !html.contains("alert('x')"),
        "an unescaped quote got through"
    );
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(html.contains("&quot;&lt;script&gt;"));
}

#[test]
fn html_is_self_contained() {
    let html = report::html::render(&sample());
    for needle in ["<script", "<link", "src=", "@import", "url(", "http://"] {
        assert!(
            !html.contains(needle),
            "the page fetches or runs something: {needle}"
        );
    }
    assert!(html.contains("Content-Security-Policy"));
}

#[test]
fn markdown_escapes_markup_outside_code_blocks() {
    let md = report::markdown::render(&hostile());
    let mut fence: Option<String> = None;
    for line in md.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(f) if line == f.as_str() => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 => fence = Some(ticks),
            None => assert!(!line.contains("<script"), "unescaped: {line}"),
        }
    }
    assert!(fence.is_none(), "a code block was left open");
    assert!(md.contains("```text\n<script>alert('x')</script>\n```"));
}

/// Where Debian's chromium is, if it is installed.
fn chromium() -> Option<PathBuf> {
    let fixed = PathBuf::from("/usr/bin/chromium");
    if fixed.exists() {
        return Some(fixed);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("chromium"))
            .find(|p| p.exists())
    })
}

/// Renders `page` in headless Chromium and returns the DOM it built.
fn dump_dom(chromium: &Path, page: &Path, profile: &Path) -> String {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match child.try_wait().expect("wait for chromium") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within 90 s");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let out = child.wait_with_output().expect("chromium output");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dom.contains("</html>"),
        "chromium printed no DOM ({}); stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    dom
}

/// The text of the element with `id` in a serialised DOM.
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let marker = format!("id=\"{id}\">");
    let start = dom
        .find(&marker)
        .unwrap_or_else(|| panic!("no element #{id} in the DOM"))
        + marker.len();
    let len = dom[start..].find('<').unwrap_or(0);
    &dom[start..start + len]
}

#[test]
fn html_renders_the_summary_in_chromium() {
    let Some(chromium) = chromium() else {
        // Written to the process's stderr, past the test harness's capture, so the
        // skip shows in every run and never passes silently.
        let _ = writeln!(
            std::io::stderr(),
            "skipping html_renders_the_summary_in_chromium: chromium is not installed \
             (/usr/bin/chromium or on PATH); `apt-get install chromium` enables it"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let report = hostile();
    let page = dir.path().join("report.html");
    std::fs::write(&page, report::html::render(&report)).unwrap();
    let dom = dump_dom(&chromium, &page, &dir.path().join("profile"));
    assert_eq!(
        text_of(&dom, "provider"),
        "evil&lt;script&gt;alert('x')&lt;/script&gt;"
    );
    assert_eq!(text_of(&dom, "verdict"), "FAIL");
    let s = &report.summary;
    for (id, want) in [
        ("count-pass", s.pass),
        ("count-fail", s.fail),
        ("count-error", s.error),
        ("count-skipped", s.skipped),
        ("count-na", s.not_applicable),
        ("count-total", s.total()),
    ] {
        assert_eq!(text_of(&dom, id), want.to_string(), "#{id}");
    }
    assert_eq!(text_of(&dom, "pass-ratio"), "40%");
    assert!(!dom.contains("<script"), "the DOM holds a script element");
}
