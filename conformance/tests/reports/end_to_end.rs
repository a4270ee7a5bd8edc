//! The CLI end to end: every format written, partial runs, and reports of any
//! size.

use super::*;

/// A fixture whose testbeds never open: every rule that would run is an Error.
pub(super) struct Unopenable;

impl Fixture for Unopenable {
    fn provider_name(&self) -> String {
        "unopenable".into()
    }
    fn profile(&self) -> Profile {
        Profile::builder().build().unwrap()
    }
    fn hooks(&self) -> Vec<Hook> {
        vec![Hook::Inventory]
    }
    fn locations(&self) -> Vec<Location> {
        vec![Location {
            name: "only".into(),
            placement: "zone-a".into(),
        }]
    }
    fn has_checker(&self) -> bool {
        false
    }
    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Box::pin(async { Err(HookError::new("no backend here")) })
    }
}

#[test]
fn the_cli_runs_and_writes_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let code = cli::main_with(
        Arc::new(Unopenable),
        [
            "conformance".as_ref(),
            "--rules".as_ref(),
            "CRE-*,CHK-ORDER".as_ref(),
            "--seed".as_ref(),
            "9".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
            "--provider-commit".as_ref(),
            "c0ffee123456".as_ref(),
        ],
    );
    assert_eq!(
        code,
        cli::EXIT_ERROR,
        "errors without a failure: the error verdict"
    );
    for f in Format::ALL {
        assert!(
            out.join(f.file_name()).exists(),
            "{} missing",
            f.file_name()
        );
    }
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    validate(&json).unwrap();
    assert_eq!(json["verdict"], "error");
    assert_eq!(json["run"]["seed"], 9);
    assert_eq!(json["run"]["options"]["rules"][0], "CRE-*");
    assert_eq!(json["run"]["provider_commit"], "c0ffee123456");
    match &json["run"]["suite_commit"] {
        // Built outside a git checkout.
        Value::Null => {}
        Value::String(c) => assert!(
            c.len() == 12 && c.chars().all(|ch| ch.is_ascii_hexdigit()),
            "a short commit: {c}"
        ),
        other => panic!("suite_commit is {other}"),
    }
    let results = json["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .all(|r| r["id"].as_str().unwrap().starts_with("CRE-") || r["id"] == "CHK-ORDER")
    );
    assert!(results.iter().any(|r| r["outcome"] == "Error"));
    let chk = results.iter().find(|r| r["id"] == "CHK-ORDER").unwrap();
    assert_eq!(chk["outcome"], "NotApplicable");
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    quick_junit::Report::deserialize_from_str(&xml).expect("valid junit");
}

#[test]
fn a_partial_run_exits_with_its_own_code_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "conformance",
            "--rules",
            "CHK-ORDER",
            "--seed",
            "3",
            "--out",
        ];
        args.push(out.to_str().unwrap());
        args.extend_from_slice(extra);
        cli::main_with(Arc::new(Unopenable), args)
    };
    assert_eq!(
        run(&[]),
        cli::EXIT_PARTIAL,
        "one rule of the catalogue is partial"
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["verdict"], "partial");
    assert_eq!(run(&["--allow-partial"]), 0);
    let distinct = [
        0,
        cli::EXIT_FAILED,
        cli::EXIT_USAGE,
        cli::EXIT_ERROR,
        cli::EXIT_PARTIAL,
    ];
    let mut sorted = distinct.to_vec();
    sorted.dedup();
    assert_eq!(sorted.len(), distinct.len(), "one code per verdict");
}

#[test]
fn write_all_writes_only_the_asked_formats() {
    let dir = tempfile::tempdir().unwrap();
    let paths = report::write_all(&sample(), dir.path(), &[Format::Html, Format::Json]).unwrap();
    assert_eq!(
        paths,
        [
            dir.path().join("report.json"),
            dir.path().join("report.html")
        ]
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn every_format_renders_an_empty_run() {
    let events = vec![sample_events().remove(0)];
    let empty = Report::from_events(&events).unwrap();
    for f in Format::ALL {
        let text = f.render(&empty);
        assert!(text.contains("kvm2"), "{f:?} names no provider");
        assert!(text.ends_with('\n'), "{f:?} does not end with a newline");
    }
    let html = report::html::render(&empty);
    assert!(html.contains("No rule failed"));
    assert!(!html.contains("class=\"bar\""), "no bar without rules");
}

#[test]
fn junit_survives_control_characters() {
    let mut r = sample();
    r.results[0]
        .evidence
        .push("\u{1b}[31mred\u{1b}[0m and a NUL \u{0} here".into());
    r.results[2].reason = Some("bell \u{7} and form feed \u{c}".into());
    let xml = report::junit::render(&r);
    let doc = quick_junit::Report::deserialize_from_str(&xml).expect("valid junit");
    assert_eq!(doc.tests, r.results.len());
    assert!(
        xml.contains("red and a NUL  here"),
        "escape codes are stripped"
    );
}

/// [`Unopenable`] that knows its backend's versions.
struct Versioned;

impl Fixture for Versioned {
    fn provider_name(&self) -> String {
        Unopenable.provider_name()
    }
    fn profile(&self) -> Profile {
        Unopenable.profile()
    }
    fn hooks(&self) -> Vec<Hook> {
        Unopenable.hooks()
    }
    fn locations(&self) -> Vec<Location> {
        Unopenable.locations()
    }
    fn has_checker(&self) -> bool {
        false
    }
    fn backend_versions(&self) -> BoxFuture<'_, BTreeMap<String, BTreeMap<String, String>>> {
        Box::pin(async {
            BTreeMap::from([(
                "only".to_owned(),
                BTreeMap::from([("libvirt".to_owned(), "11.3.0".to_owned())]),
            )])
        })
    }
    fn open(&self) -> BoxFuture<'_, HookResult<Box<dyn Testbed>>> {
        Unopenable.open()
    }
}

#[test]
fn the_report_records_backend_versions_and_dirty_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    cli::main_with(
        Arc::new(Versioned),
        [
            "conformance",
            "--rules",
            "CHK-ORDER",
            "--provider-commit",
            "c0ffee123456",
            "--provider-dirty",
            "true",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    validate(&json).unwrap();
    assert_eq!(json["run"]["backend_versions"]["only"]["libvirt"], "11.3.0");
    assert_eq!(json["run"]["provider_dirty"], true);
    assert_eq!(
        json["run"]["suite_dirty"].is_boolean(),
        json["run"]["suite_commit"].is_string(),
        "a dirty flag beside a known commit"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| Provider commit | c0ffee123456 (dirty) |"),
        "{md}"
    );
    assert!(
        md.contains("| Backend versions | only: libvirt 11.3.0 |"),
        "{md}"
    );
}
