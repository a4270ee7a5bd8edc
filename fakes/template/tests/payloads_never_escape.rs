//! No payload escapes the suite: a provider process that puts its cloud-init payload
//! everywhere it can (log lines at every level, a span field, stderr, a panic message,
//! an error's message and source) fails the rules in which it did so, and neither the
//! run's output nor any file of its report directory holds a byte of a payload.
//!
//! The suite runs as the standalone command would, in a child process of this test
//! (the test binary started again with `PAYLOAD_ESCAPE_OUT` set), so that everything
//! it prints can be read back.

use std::path::Path;
use std::process::Command;

use conformance::remote::standalone_main_with;
use conformance::suite::cli::EXIT_FAILED;

const CHILD: &str = "PAYLOAD_ESCAPE_OUT";
const TEST: &str =
    "a_provider_that_leaks_everywhere_leaves_no_payload_in_the_output_or_the_reports";

/// What the template's payloads hold besides the token: `hostname: <name>`.
fn holds_a_payload(text: &str) -> bool {
    text.contains(conformance::suite::secrets::TOKEN_PREFIX) || text.contains("hostname: ")
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn a_provider_that_leaks_everywhere_leaves_no_payload_in_the_output_or_the_reports() {
    if let Some(out) = std::env::var_os(CHILD) {
        let serve = env!("CARGO_BIN_EXE_template-serve");
        let code = standalone_main_with([
            "conformance".into(),
            "--provider-command".into(),
            format!("{serve} --mutant remote-leaks-everywhere").into(),
            "--rules".into(),
            "CRE-SECRET,CRE-IDEMPOTENT,CRE-QUOTA,CRE-ADOPT-GUARD,GET-AFTER-DELETE".into(),
            "--log-level".into(),
            "trace".into(),
            "--seed".into(),
            "1".into(),
            "--out".into(),
            out,
        ]);
        std::process::exit(i32::from(code));
    }
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let printed = format!(
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        run.status.code(),
        Some(i32::from(EXIT_FAILED)),
        "the run fails: {printed}"
    );
    // The run printed the provider's log lines (trace and up) and its panic.
    assert!(printed.contains("user data"), "{printed}");
    if let Some(line) = printed.lines().find(|l| holds_a_payload(l)) {
        panic!("the run printed a payload: {line}");
    }
    let mut written = Vec::new();
    files(dir.path(), &mut written);
    assert!(
        written.iter().any(|p| p.ends_with("provider-stderr.log")),
        "{written:?}"
    );
    for p in &written {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        assert!(
            !holds_a_payload(&text),
            "{} holds a payload:\n{text}",
            p.display()
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    let outcome = |id: &str| {
        json["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["outcome"].as_str().unwrap_or_default().to_owned())
    };
    for id in [
        "CRE-SECRET",
        "CRE-IDEMPOTENT",
        "CRE-QUOTA",
        "CRE-ADOPT-GUARD",
    ] {
        assert_eq!(outcome(id).as_deref(), Some("Fail"), "{id}");
    }
}
