//! The provider library an operator links carries no fixture: with default features
//! off, kvm2's normal dependencies include neither the libvirt fake, nor libvirt-ssh's
//! test server, nor the conformance suite; with them on (the `fixtures` feature) they
//! are all there, so the check below can fail.

use std::collections::BTreeMap;
use std::process::Command;

/// Each package in kvm2's normal dependency tree with its enabled features.
fn tree(no_default: bool) -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "tree",
        "-p",
        "reference-kvm2",
        "-e",
        "normal",
        "--prefix",
        "none",
        "-f",
        "{p} [{f}]",
        "--offline",
        "--locked",
    ]);
    if no_default {
        cmd.arg("--no-default-features");
    }
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    let out = cmd.output().expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(' ')?;
            let features = rest
                .rsplit_once('[')?
                .1
                .trim_end_matches(" (*)")
                .trim_end_matches(']');
            let features = features
                .split(',')
                .filter(|f| !f.is_empty())
                .map(String::from);
            Some((name.to_owned(), features.collect()))
        })
        .collect()
}

fn fixture_parts(t: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut found = Vec::new();
    if t.contains_key("libvirt-fake") {
        found.push("libvirt-fake".to_owned());
    }
    if t.get("libvirt-ssh")
        .is_some_and(|f| f.iter().any(|f| f == "server"))
    {
        found.push("libvirt-ssh's server".to_owned());
    }
    if t.get("conformance")
        .is_some_and(|f| f.iter().any(|f| f == "suite"))
    {
        found.push("conformance's suite".to_owned());
    }
    found
}

#[test]
fn without_default_features_kvm2_links_no_fixture() {
    let lean = tree(true);
    assert!(lean.contains_key("libvirt-rpc"), "{lean:?}");
    assert_eq!(fixture_parts(&lean), Vec::<String>::new(), "{lean:?}");
    let full = tree(false);
    assert_eq!(
        fixture_parts(&full),
        [
            "libvirt-fake",
            "libvirt-ssh's server",
            "conformance's suite"
        ],
        "{full:?}"
    );
}
