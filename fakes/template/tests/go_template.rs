//! The Go side of the process protocol, checked from the README's test command: the
//! Go SDK (`conformance/go`) and the Go template provider (`fakes/go-template`) must be
//! gofmt-clean, pass `go vet` and `go test`, and the Go template must pass the whole
//! suite through the bridge. Then the Go kill matrix: every mutant that
//! `go-template-serve -list-mutants` names, served with `-mutant NAME`, must fail
//! exactly the rules it declares, and at least one.
//!
//! Without `go` on PATH the test says why and passes, unless `CI` is set: there it
//! fails, so a CI machine cannot skip the Go side by accident.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use conformance::remote::{Endpoint, RemoteFixture, RemoteOptions};
use conformance::suite::outcome::{Outcome, Verdict};
use support::{explain, run_suite, with_outcome};

const SEED: u64 = 0x5eed;
/// Suites run at once; each also runs its rules with concurrency 8.
const PARALLEL_SUITES: usize = 4;
const MODULES: [&str; 2] = ["conformance/go", "fakes/go-template"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"))
}

/// A Go tool command, offline, with its build cache under target/.
fn go_tool(tool: &str, dir: &Path, cache: &Path) -> Command {
    let mut c = Command::new(tool);
    c.current_dir(dir)
        .env("GOPROXY", "off")
        .env("GOCACHE", cache);
    c
}

/// Runs `cmd`, panicking with its output unless it succeeds; returns its stdout.
fn run(what: &str, cmd: &mut Command) -> String {
    let started = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        panic!(
            "{what}: {}\n--- stdout\n{stdout}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!(
        "go-template: {what}: ok ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    stdout
}

/// Parses the `-list-mutants` JSON: an object of name → array of rule IDs (strings
/// without escapes, as the table holds only names and IDs).
fn parse_table(json: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut table = BTreeMap::new();
    let mut key: Option<String> = None;
    let mut in_array = false;
    let mut chars = json.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let s: String = chars.by_ref().take_while(|&c| c != '"').collect();
                assert!(!s.contains('\\'), "unexpected escape in {s:?}");
                if in_array {
                    let k = key.clone().expect("a rule ID inside a mutant's array");
                    table.entry(k).or_insert_with(BTreeSet::new).insert(s);
                } else {
                    table.entry(s.clone()).or_insert_with(BTreeSet::new);
                    key = Some(s);
                }
            }
            '[' => in_array = true,
            ']' => in_array = false,
            c if c.is_whitespace() || matches!(c, '{' | '}' | ':' | ',') => {}
            c => panic!("unexpected {c:?} in the mutant table:\n{json}"),
        }
    }
    table
}

/// Runs the whole suite against `go-template-serve args`; an empty list of failures
/// when the failed set is `declared`, nothing errored and (for the correct template)
/// the verdict is pass.
fn judge(serve: &Path, args: &str, declared: &BTreeSet<String>) -> Vec<String> {
    let command = format!("exec '{}' {args}", serve.display());
    let fixture = RemoteFixture::new(Endpoint::Command(command), RemoteOptions::default())
        .expect("go-template-serve initializes");
    let report = run_suite(Arc::new(fixture), SEED, None);
    let failed = with_outcome(&report, Outcome::Fail);
    let errored = with_outcome(&report, Outcome::Error);
    let missed: BTreeSet<String> = declared.difference(&failed).cloned().collect();
    let extra: BTreeSet<String> = failed.difference(declared).cloned().collect();
    let mut problems = Vec::new();
    if !missed.is_empty() || !extra.is_empty() || !errored.is_empty() {
        problems.push(format!(
            "declared but passed: {missed:?}\nfailed but not declared: {extra:?}\n{}errored: {errored:?}\n{}",
            explain(&report, &extra),
            explain(&report, &errored)
        ));
    }
    if declared.is_empty() {
        if report.verdict != Verdict::Pass {
            problems.push(format!("verdict {}, not pass", report.verdict.as_str()));
        }
        let not_pass: Vec<String> = report
            .results
            .iter()
            .filter(|r| r.outcome != Outcome::Pass)
            .map(|r| format!("{} is {}", r.id, r.outcome.as_str()))
            .collect();
        if !not_pass.is_empty() {
            problems.push(format!("not every rule passed: {not_pass:?}"));
        }
    }
    problems
}

#[test]
fn go_template_provider_and_its_kill_matrix() {
    let started = Instant::now();
    let go_version = Command::new("go").arg("version").output();
    let go_version = match go_version {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        other => {
            let why = match other {
                Ok(out) => format!("`go version` failed: {}", out.status),
                Err(e) => format!("`go` is not on PATH ({e})"),
            };
            if std::env::var_os("CI").is_some() {
                panic!("{why}; CI is set, so the Go side may not be skipped (install golang-go)");
            }
            eprintln!(
                "go-template: skipped: {why}; install golang-go to check the Go SDK and the Go template"
            );
            return;
        }
    };
    eprintln!("go-template: {}", go_version.trim());

    let root = workspace();
    let target = target_dir(&root);
    let cache = target.join("go/cache");
    std::fs::create_dir_all(&cache).expect("target/go/cache");

    let unformatted = run(
        "gofmt -l",
        go_tool("gofmt", &root, &cache).arg("-l").args(MODULES),
    );
    assert!(
        unformatted.trim().is_empty(),
        "gofmt would change these files:\n{unformatted}"
    );
    for m in MODULES {
        let dir = root.join(m);
        run(
            &format!("go vet ./... in {m}"),
            go_tool("go", &dir, &cache).args(["vet", "./..."]),
        );
        run(
            &format!("go test ./... in {m}"),
            go_tool("go", &dir, &cache).args(["test", "./..."]),
        );
    }
    let serve = target.join("go/go-template-serve");
    run(
        "go build go-template-serve",
        go_tool("go", &root.join("fakes/go-template"), &cache)
            .args(["build", "-o"])
            .arg(&serve)
            .arg("./cmd/go-template-serve"),
    );

    let table = parse_table(&run(
        "go-template-serve -list-mutants",
        Command::new(&serve).arg("-list-mutants"),
    ));
    assert!(
        table.len() >= 10,
        "at least ten Go mutants, got {}",
        table.len()
    );
    let mut problems: Vec<String> = table
        .iter()
        .filter(|(_, declared)| declared.is_empty())
        .map(|(name, _)| format!("mutant {name} declares no rule: every mutant must fail one"))
        .collect();

    // The correct template first in the queue, then every mutant.
    let mut jobs: Vec<(String, String, BTreeSet<String>)> =
        vec![("correct".into(), String::new(), BTreeSet::new())];
    jobs.extend(
        table
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|(name, d)| {
                (
                    format!("mutant {name}"),
                    format!("-mutant {name}"),
                    d.clone(),
                )
            }),
    );
    let queue = Mutex::new(jobs.into_iter());
    let found = Mutex::new(Vec::new());
    let suites = Instant::now();
    thread::scope(|s| {
        for _ in 0..PARALLEL_SUITES {
            s.spawn(|| {
                loop {
                    let Some((label, args, declared)) = queue.lock().unwrap().next() else {
                        return;
                    };
                    let t = Instant::now();
                    let p = judge(&serve, &args, &declared);
                    eprintln!(
                        "go-template: {label}: {} ({:.1} s)",
                        if p.is_empty() { "ok" } else { "WRONG" },
                        t.elapsed().as_secs_f64()
                    );
                    found
                        .lock()
                        .unwrap()
                        .extend(p.into_iter().map(|p| format!("{label}:\n{p}")));
                }
            });
        }
    });
    eprintln!(
        "go-template: the suite against the correct template and {} mutants: {:.1} s; whole test {:.1} s",
        table.len(),
        suites.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    problems.extend(found.into_inner().unwrap());
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_mutant_table_parses() {
    let t = parse_table("{\n  \"a-b\": [\n    \"CRE-X\",\n    \"GET-Y\"\n  ],\n  \"c\": []\n}\n");
    assert_eq!(t.len(), 2);
    assert_eq!(
        t["a-b"].iter().cloned().collect::<Vec<_>>(),
        ["CRE-X", "GET-Y"]
    );
    assert!(t["c"].is_empty());
}
