//! The mutants record (`mutants/*.json`) against what cargo-mutants lists today.
//!
//! `cargo mutants --list`, with the committed `.cargo/mutants.toml`, names every
//! machine-made mutant of the measured files. Each must be in the record with an
//! outcome, and each that survived with a judgment: a mutant that appears or
//! disappears fails here until `scripts/mutants.sh` has measured it and someone has
//! judged it. Nothing is run: listing takes about a second. Without cargo-mutants at
//! the record's version the test says so and checks only the record itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The record of each crate and the package cargo-mutants mutates for it.
const CRATES: &[(&str, &str)] = &[
    ("kvm2", "reference-kvm2"),
    ("template", "template-provider"),
];
const OUTCOMES: &[&str] = &["caught", "missed", "unviable", "timeout"];
const JUDGMENTS: &[&str] = &["equivalent", "gap", "killed-since"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("architecture/ sits in the workspace root")
        .to_path_buf()
}

fn load(crate_name: &str) -> Value {
    let path = workspace_root().join(format!("mutants/{crate_name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// `file:12:5: replace ..` → `file: replace ..`, the key the record uses.
fn strip_line_col(name: &str) -> String {
    let mut parts = name.splitn(4, ':');
    let (Some(file), Some(line), Some(col), Some(rest)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return name.to_owned();
    };
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if numeric(line) && numeric(col) {
        format!("{file}:{rest}")
    } else {
        name.to_owned()
    }
}

/// Keys in listing order, a repeated one numbered ` #2`, ` #3` .. (as `mutants/record.py`).
fn keyed<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    names
        .into_iter()
        .map(|n| {
            let base = strip_line_col(n);
            let k = seen.entry(base.clone()).or_default();
            *k += 1;
            if *k == 1 {
                base
            } else {
                format!("{base} #{k}")
            }
        })
        .collect()
}

/// The installed cargo-mutants' version, or why there is none.
fn installed_version() -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["mutants", "--version"])
        .output()
        .map_err(|e| format!("cargo does not run: {e}"))?;
    if !out.status.success() {
        return Err("cargo-mutants is not installed (scripts/mutants.sh install)".into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .nth(1)
        .map(str::to_owned)
        .ok_or_else(|| format!("unreadable version line: {text}"))
}

/// What cargo-mutants lists for `package` with the committed configuration.
fn listed(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "mutants",
            "--list",
            "--line-col=false",
            "--package",
            package,
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo mutants --list runs");
    assert!(
        out.status.success(),
        "cargo mutants --list --package {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    keyed(text.lines().filter(|l| !l.is_empty()))
}

fn str_field<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    v.get(field).and_then(Value::as_str)
}

/// Every mutant has an outcome (or the reason it has none yet); every survivor a
/// judgment and its reason; the stored figures are the ones the entries give.
fn record_problems(crate_name: &str, rec: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let mutants = rec["mutants"].as_array().cloned().unwrap_or_default();
    if mutants.is_empty() {
        problems.push(format!("{crate_name}: the record lists no mutant"));
    }
    let mut count: BTreeMap<&str, u64> = BTreeMap::new();
    for m in &mutants {
        let key = str_field(m, "key").unwrap_or("<no key>");
        let Some(outcome) = str_field(m, "outcome") else {
            // Not run yet: allowed only where the record says why, in so many words.
            if str_field(m, "unmeasured").is_none_or(|w| w.trim().len() < 10) {
                problems.push(format!(
                    "{key}: no outcome and no reason why (scripts/mutants.sh new {crate_name})"
                ));
            }
            *count.entry("unmeasured").or_default() += 1;
            continue;
        };
        if !OUTCOMES.contains(&outcome) {
            problems.push(format!("{key}: unknown outcome {outcome}"));
            continue;
        }
        *count.entry(outcome).or_default() += 1;
        // A timeout counts as killed (the suite did not pass): only a miss is judged.
        if outcome != "missed" {
            continue;
        }
        let judgment = str_field(m, "judgment").unwrap_or("");
        if !JUDGMENTS.contains(&judgment) {
            problems.push(format!("{key}: {outcome} and not judged ({JUDGMENTS:?})"));
            continue;
        }
        *count.entry(judgment).or_default() += 1;
        if str_field(m, "why").is_none_or(|w| w.trim().len() < 10) {
            problems.push(format!("{key}: judged {judgment} without a reason"));
        }
        if m.get("recheck").and_then(Value::as_bool) == Some(true) {
            problems.push(format!(
                "{key}: its code changed since it was judged {judgment}; judge it again"
            ));
        }
    }
    let n = |k: &str| count.get(k).copied().unwrap_or(0);
    let viable = n("caught") + n("missed") + n("timeout");
    let non_equivalent = viable - n("equivalent");
    let killed = n("caught") + n("timeout") + n("killed-since");
    let s = &rec["summary"];
    for (field, want) in [
        ("caught", n("caught")),
        ("missed", n("missed")),
        ("unviable", n("unviable")),
        ("timeout", n("timeout")),
        ("unmeasured", n("unmeasured")),
        ("equivalent", n("equivalent")),
        ("gap", n("gap")),
        ("killed_since", n("killed-since")),
        ("non_equivalent", non_equivalent),
        ("killed", killed),
    ] {
        if s[field].as_u64() != Some(want) {
            problems.push(format!(
                "{crate_name}: summary.{field} is {}, the entries give {want} (mutants/record.py summary)",
                s[field]
            ));
        }
    }
    problems
}

#[test]
fn every_mutant_in_the_record_has_an_outcome_and_every_survivor_a_judgment() {
    let mut problems = Vec::new();
    for (crate_name, _) in CRATES {
        let rec = load(crate_name);
        problems.extend(record_problems(crate_name, &rec));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The row of the figures table in `mutants/README.md` for one record (as
/// `mutants/record.py summary --markdown` prints it).
fn figures_row(crate_name: &str, s: &Value) -> String {
    let n = |k: &str| s[k].as_u64().unwrap_or(u64::MAX);
    let rate = s["kill_rate_percent"]
        .as_f64()
        .map_or("–".to_owned(), |r| format!("{r:.1} %"));
    format!(
        "| {crate_name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {rate} |",
        n("listed"),
        n("caught"),
        n("missed"),
        n("unviable"),
        n("timeout"),
        n("unmeasured"),
        n("equivalent"),
        n("gap"),
        n("killed_since"),
    )
}

#[test]
fn the_readme_states_the_figures_of_the_record() {
    let readme = std::fs::read_to_string(workspace_root().join("mutants/README.md"))
        .expect("mutants/README.md is readable");
    for (crate_name, _) in CRATES {
        let row = figures_row(crate_name, &load(crate_name)["summary"]);
        assert!(
            readme.lines().any(|l| l == row),
            "mutants/README.md does not show {row} (python3 mutants/record.py summary --markdown)"
        );
    }
}

#[test]
fn the_record_lists_exactly_what_cargo_mutants_lists() {
    let installed = match installed_version() {
        Ok(v) => v,
        Err(why) => {
            println!("skipped: {why}; the record is checked only against itself");
            return;
        }
    };
    let mut problems = Vec::new();
    for (crate_name, package) in CRATES {
        let rec = load(crate_name);
        let pinned = str_field(&rec, "cargo_mutants").unwrap_or("<none>");
        if installed != pinned {
            println!(
                "skipped {crate_name}: cargo-mutants {installed} is installed, the record was listed with {pinned} (scripts/mutants.sh install)"
            );
            continue;
        }
        let now = listed(package);
        assert!(
            !now.is_empty(),
            "cargo mutants --list names no mutant of {package}: is .cargo/mutants.toml read?"
        );
        let recorded: Vec<String> = rec["mutants"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|m| str_field(m, "key"))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        for k in now.iter().filter(|k| !recorded.contains(k)) {
            problems.push(format!("new, not in mutants/{crate_name}.json: {k}"));
        }
        for k in recorded.iter().filter(|k| !now.contains(k)) {
            problems.push(format!("gone, still in mutants/{crate_name}.json: {k}"));
        }
    }
    assert!(
        problems.is_empty(),
        "the record and the listing differ; measure and judge them (mutants/README.md):\n{}",
        problems.join("\n")
    );
}

#[test]
fn keys_drop_line_and_column_and_number_repeats() {
    let keys = keyed([
        "a/b.rs:12:5: replace == with != in f",
        "a/b.rs:14:9: replace == with != in f",
        "a/b.rs:3:1: replace g -> bool with true",
    ]);
    assert_eq!(
        keys,
        [
            "a/b.rs: replace == with != in f",
            "a/b.rs: replace == with != in f #2",
            "a/b.rs: replace g -> bool with true",
        ]
    );
}
