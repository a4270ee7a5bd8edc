//! The crate-graph invariants of ARCHITECTURE.md, each checked against what
//! `cargo metadata` reports for the workspace (manifests and the resolved graph).
//! Every check also asserts something about the graph that holds today, so a
//! metadata format it misreads fails instead of passing vacuously.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// The crates that implement or back a provider; `conformance` may depend on none.
const PROVIDER_AND_BACKEND: &[&str] = &[
    "template-provider",
    "libvirt-fake",
    "image-server",
    "libvirt-wire",
    "libvirt-rpc",
    "libvirt-ssh",
    "libvirt-fidelity",
    "reference-kvm2",
];

/// The suite's test-only dependencies, which the contract alone must not pull in.
const TEST_ONLY: &[&str] = &["proptest", "libtest-mimic", "quick-junit", "clap"];

/// The platform this runs on (`rustc -vV`'s host).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("rustc -vV runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no host line in rustc -vV: {text}"))
}

/// The workspace's metadata, its graph resolved for this platform: a fresh
/// machine holds only the crates a build here needs, and reading the graph
/// of every platform offline would need them all (Android's and Windows'
/// too).
fn metadata() -> &'static Value {
    static META: OnceLock<Value> = OnceLock::new();
    META.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--offline", "--locked"])
            .args(["--filter-platform", &host_triple()])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
    })
}

fn packages() -> impl Iterator<Item = &'static Value> {
    metadata()["packages"].as_array().expect("packages").iter()
}

fn package(name: &str) -> &'static Value {
    packages()
        .find(|p| p["name"] == name && p["source"].is_null())
        .unwrap_or_else(|| panic!("no workspace package {name}"))
}

fn members() -> BTreeSet<String> {
    let ids: BTreeSet<&str> = metadata()["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    packages()
        .filter(|p| ids.contains(p["id"].as_str().unwrap_or_default()))
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect()
}

/// A manifest dependency: its name, kind (`normal`, `dev`, `build`), whether it
/// is optional, and the features it asks for.
struct Dep {
    name: String,
    kind: String,
    optional: bool,
    features: Vec<String>,
}

fn deps(package_name: &str) -> Vec<Dep> {
    package(package_name)["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .map(|d| Dep {
            name: d["name"].as_str().expect("dep name").to_owned(),
            kind: d["kind"].as_str().unwrap_or("normal").to_owned(),
            optional: d["optional"].as_bool().unwrap_or(false),
            features: strings(&d["features"]),
        })
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// What a set of features of a package turns on: the features themselves
/// (closed under the feature table), the optional dependencies they enable, and
/// the features they ask of each dependency.
#[derive(Debug, Default)]
struct Enabled {
    features: BTreeSet<String>,
    optional_deps: BTreeSet<String>,
    dep_features: BTreeMap<String, BTreeSet<String>>,
}

fn enable(package_name: &str, start: &[&str]) -> Enabled {
    let table: BTreeMap<String, Vec<String>> = package(package_name)["features"]
        .as_object()
        .expect("features")
        .iter()
        .map(|(k, v)| (k.clone(), strings(v)))
        .collect();
    let optional: BTreeSet<String> = deps(package_name)
        .into_iter()
        .filter(|d| d.optional && d.kind == "normal")
        .map(|d| d.name)
        .collect();
    let mut on = Enabled::default();
    let mut todo: Vec<String> = start.iter().map(|s| s.to_string()).collect();
    while let Some(f) = todo.pop() {
        if !on.features.insert(f.clone()) {
            continue;
        }
        for entry in table.get(&f).into_iter().flatten() {
            if let Some(dep) = entry.strip_prefix("dep:") {
                on.optional_deps.insert(dep.to_owned());
            } else if let Some((dep, feature)) = entry.split_once('/') {
                let (dep, weak) = match dep.strip_suffix('?') {
                    Some(d) => (d, true),
                    None => (dep, false),
                };
                if !weak && optional.contains(dep) {
                    on.optional_deps.insert(dep.to_owned());
                }
                on.dep_features
                    .entry(dep.to_owned())
                    .or_default()
                    .insert(feature.to_owned());
            } else if table.contains_key(entry) {
                todo.push(entry.clone());
            } else if optional.contains(entry) {
                on.optional_deps.insert(entry.clone());
            }
        }
    }
    on
}

/// The packages reachable from `root` in the resolved graph over edges of the
/// given kinds.
fn closure(root: &str, kinds: &[&str]) -> BTreeSet<String> {
    let nodes = metadata()["resolve"]["nodes"].as_array().expect("resolve");
    let name_of: BTreeMap<&str, &str> = packages()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let root_id = package(root)["id"].as_str().unwrap();
    let mut seen = BTreeSet::new();
    let mut todo = vec![root_id];
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        let node = nodes.iter().find(|n| n["id"] == id).expect("node");
        for d in node["deps"].as_array().into_iter().flatten() {
            let of_kind = d["dep_kinds"].as_array().into_iter().flatten().any(|k| {
                let kind = k["kind"].as_str().unwrap_or("normal");
                kinds.contains(&kind)
            });
            if of_kind {
                todo.push(d["pkg"].as_str().unwrap());
            }
        }
    }
    seen.remove(root_id);
    seen.iter().map(|id| name_of[id].to_owned()).collect()
}

#[test]
fn conformance_depends_on_no_provider_and_no_backend_crate() {
    let direct: Vec<String> = deps("conformance").into_iter().map(|d| d.name).collect();
    assert!(direct.iter().any(|d| d == "tokio"), "{direct:?}");
    let reach = closure("conformance", &["normal", "dev", "build"]);
    let bad: Vec<&&str> = PROVIDER_AND_BACKEND
        .iter()
        .filter(|c| direct.iter().any(|d| d == **c) || reach.contains(**c))
        .collect();
    assert!(bad.is_empty(), "conformance depends on {bad:?}");
}

#[test]
fn conformance_without_the_suite_pulls_in_no_test_only_dependency() {
    let all = deps("conformance");
    for name in TEST_ONLY {
        let normal: Vec<&Dep> = all
            .iter()
            .filter(|d| d.name == *name && d.kind == "normal")
            .collect();
        assert!(
            !normal.is_empty() && normal.iter().all(|d| d.optional),
            "{name} must be an optional dependency of conformance"
        );
    }
    let default = enable("conformance", &["default"]);
    let leaked: Vec<&&str> = TEST_ONLY
        .iter()
        .filter(|n| default.optional_deps.contains(**n))
        .collect();
    assert!(leaked.is_empty(), "default features enable {leaked:?}");
    // The check can fail: the suite does turn them all on.
    let suite = enable("conformance", &["suite"]);
    for name in TEST_ONLY {
        assert!(suite.optional_deps.contains(*name), "suite: {suite:?}");
    }
}

#[test]
fn libvirt_wire_has_no_tokio_dependency() {
    let reach = closure("libvirt-wire", &["normal", "build"]);
    assert!(reach.contains("bytes"), "{reach:?}");
    assert!(
        !reach.contains("tokio"),
        "libvirt-wire reaches tokio: {reach:?}"
    );
    // The check can fail: the RPC client above it does reach tokio.
    assert!(closure("libvirt-rpc", &["normal"]).contains("tokio"));
}

#[test]
fn fakes_never_depend_on_kvm2() {
    for fake in ["template-provider", "libvirt-fake", "image-server"] {
        let reach = closure(fake, &["normal", "dev", "build"]);
        assert!(
            !reach.contains("reference-kvm2"),
            "{fake} depends on reference-kvm2: {reach:?}"
        );
    }
    assert!(closure("libvirt-fake", &["normal"]).contains("libvirt-wire"));
}

#[test]
fn kvm2_depends_on_the_fake_only_for_its_fixtures() {
    let normal: Vec<Dep> = deps("reference-kvm2")
        .into_iter()
        .filter(|d| d.kind == "normal")
        .collect();
    let fake: Vec<&Dep> = normal.iter().filter(|d| d.name == "libvirt-fake").collect();
    assert!(
        !fake.is_empty() && fake.iter().all(|d| d.optional),
        "libvirt-fake must be an optional normal dependency of kvm2"
    );
    // What the lean library asks of the SSH and contract crates carries no fixture.
    for d in &normal {
        let fixture_feature = matches!(
            (
                d.name.as_str(),
                d.features.iter().any(|f| f == "server" || f == "suite")
            ),
            ("libvirt-ssh" | "conformance", true)
        );
        assert!(
            !fixture_feature,
            "kvm2's {} asks for {:?}",
            d.name, d.features
        );
    }
    let lean = enable("reference-kvm2", &[]);
    assert!(lean.optional_deps.is_empty(), "{lean:?}");
    let full = enable("reference-kvm2", &["default"]);
    assert!(full.features.contains("fixtures"), "{full:?}");
    assert!(full.optional_deps.contains("libvirt-fake"), "{full:?}");
    assert!(
        full.dep_features["libvirt-ssh"].contains("server"),
        "{full:?}"
    );
    assert!(
        full.dep_features["conformance"].contains("suite"),
        "{full:?}"
    );
}

#[test]
fn no_dev_dependency_cycles() {
    let members = members();
    assert!(members.len() >= 9, "{members:?}");
    let edges: BTreeMap<String, BTreeSet<String>> = members
        .iter()
        .map(|m| {
            let to = deps(m)
                .into_iter()
                .map(|d| d.name)
                .filter(|d| members.contains(d) && d != m)
                .collect();
            (m.clone(), to)
        })
        .collect();
    assert!(
        edges["reference-kvm2"].contains("conformance"),
        "the graph has edges: {edges:?}"
    );
    // Depth-first search; a back edge is a cycle, printed as a path.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(n) {
            return;
        }
        if let Some(at) = path.iter().position(|p| p == n) {
            panic!("dependency cycle: {} -> {n}", path[at..].join(" -> "));
        }
        path.push(n.to_owned());
        for m in &edges[n] {
            visit(m, edges, path, done);
        }
        path.pop();
        done.insert(n.to_owned());
    }
    let mut done = BTreeSet::new();
    for m in &members {
        visit(m, &edges, &mut Vec::new(), &mut done);
    }
}
