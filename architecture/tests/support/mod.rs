//! What the source-reading tests share: the workspace's targets, from `cargo metadata`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// Every library and binary target of the workspace: (package, target, root file).
pub fn targets() -> Vec<(String, String, PathBuf)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut found = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        for t in p["targets"].as_array().expect("targets") {
            let kinds: Vec<&str> = t["kind"]
                .as_array()
                .expect("kind")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if kinds
                .iter()
                .any(|k| matches!(*k, "lib" | "bin" | "proc-macro"))
            {
                found.push((
                    p["name"].as_str().expect("name").to_owned(),
                    t["name"].as_str().expect("target name").to_owned(),
                    PathBuf::from(t["src_path"].as_str().expect("src_path")),
                ));
            }
        }
    }
    found
}
