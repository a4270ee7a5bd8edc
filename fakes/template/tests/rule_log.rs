//! A rule's log reads as a story: one time-ordered stream in which the suite's own
//! actions (a fault injected, seen fired, cleared) sit among the provider's spans and
//! lines in the order they happened.

use std::sync::Arc;

use conformance::fixture::Fixture;
use conformance::suite::capture::Capture;
use conformance::suite::logs::write_rule_logs;
use conformance::suite::runner::{RunOptions, run};
use template_provider::TemplateFixture;

/// The seconds a log line begins with (`+0.123s`).
fn time_of(line: &str) -> f64 {
    line.strip_prefix('+')
        .and_then(|l| l.split_once("s "))
        .and_then(|(t, _)| t.parse().ok())
        .unwrap_or_else(|| panic!("a line without its time: {line:?}"))
}

#[test]
fn the_log_of_cre_resume_tells_what_happened_in_order() {
    assert!(Capture::global().is_some(), "the capture is installed");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let fixture: Arc<dyn Fixture> = Arc::new(TemplateFixture::default());
    let opts = RunOptions {
        seed: 7,
        rules: Some(vec!["CRE-RESUME".into()]),
        ..RunOptions::default()
    };
    let mut report = rt.block_on(run(fixture, opts, &mut |_| {}));
    let dir = tempfile::tempdir().expect("a temp dir");
    write_rule_logs(&mut report, dir.path()).expect("the logs are written");
    let text = std::fs::read_to_string(dir.path().join("logs/CRE-RESUME.log"))
        .expect("CRE-RESUME has a log");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() > 50,
        "a whole rule's story: {} lines",
        lines.len()
    );
    let times: Vec<f64> = lines.iter().map(|l| time_of(l)).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "times never go back"
    );
    // The first lost reply: injected, then the provider's Create runs into it, then
    // the suite sees it fired and clears it.
    let inject = lines
        .iter()
        .position(|l| l.contains("hook faults/inject") && l.contains("LostReply"))
        .expect("a LostReply injected");
    let id = lines[inject]
        .rsplit("FaultId(")
        .next()
        .and_then(|t| t.split(')').next())
        .expect("the fault's id");
    let fired = inject
        + lines[inject..]
            .iter()
            .position(|l| l.contains(&format!("fault {id} fired")))
            .expect("the fault seen fired");
    let clear = fired
        + lines[fired..]
            .iter()
            .position(|l| l.contains("hook faults/clear"))
            .expect("the faults cleared");
    assert!(
        lines[inject..fired]
            .iter()
            .any(|l| l.contains("span template.create")),
        "the provider's Create between the injection and the firing: {:#?}",
        &lines[inject..=fired]
    );
    assert!(clear > fired);
    // Indentation follows depth: the provider's call spans sit below its operation.
    let create = lines[inject..]
        .iter()
        .find(|l| l.contains("span template.create"))
        .expect("a Create span");
    let call = lines[inject..]
        .iter()
        .find(|l| l.contains("span template.lookup"))
        .expect("a call span");
    let indent = |l: &str| {
        l.split_once("s ")
            .map(|(_, r)| r.len() - r.trim_start().len())
    };
    assert!(indent(call) > indent(create), "{call:?} below {create:?}");
}
