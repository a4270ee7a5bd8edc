//! The Python example provider (`conformance/examples/python/provider.py`, standard
//! library only) passes the whole suite through the process protocol, and the
//! examples of `docs/remote-protocol.md` are the lines it sends. Without `python3` on
//! PATH the tests say why they skip, unless `CI` is set: then they fail.

/// Whether `python3` runs; without it, says why the test skips (or fails under CI).
fn python3() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 is missing, and CI is set: the Python example provider must be checked"
        );
        eprintln!("skipped: python3 is not on PATH, so the Python example provider was not run");
    }
    ok
}

#[test]
fn the_protocol_documents_examples_are_what_the_python_example_sends() {
    if !python3() {
        return;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/python/doc_examples.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg(feature = "remote")]
#[test]
fn the_python_example_provider_passes_the_suite() {
    use std::path::PathBuf;
    use std::time::Instant;

    if !python3() {
        return;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/python/provider.py");
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let code = conformance::remote::standalone_main_with([
        "conformance".to_owned(),
        "run".to_owned(),
        "--provider-command".to_owned(),
        format!("python3 '{}'", script.display()),
        "--seed".to_owned(),
        "1".to_owned(),
        "--out".to_owned(),
        out.path().display().to_string(),
    ]);
    eprintln!(
        "the Python example provider's run took {:?}",
        started.elapsed()
    );
    let report = std::fs::read_to_string(out.path().join("report.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    let not_passed: Vec<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] != "Pass")
        .map(|r| format!("{} {}: {}", r["rule"], r["outcome"], r["reason"]))
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:#?}");
    assert_eq!(v["verdict"], "pass");
    assert_eq!(code, 0);
}

#[cfg(not(feature = "remote"))]
#[test]
fn the_python_example_provider_passes_the_suite() {
    eprintln!("skipped: the Python example provider is checked with --features remote");
}
