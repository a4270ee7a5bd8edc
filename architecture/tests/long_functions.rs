//! Functions longer than a screen are few and each has a reason. A function of more
//! than [`LIMIT`] lines (from `fn` to the closing brace) in any library or binary
//! target of the workspace, test code left out, must be listed in [`LONG`] with one
//! line saying why it stays long; a listed function that got shorter, was renamed or
//! is gone must leave the list. How functions are read: `src/functions.rs`.

use std::collections::BTreeMap;

use architecture::{functions, modules};

mod support;
use support::targets;

/// The length above which a function must be listed.
const LIMIT: usize = 80;

/// (file from the workspace root, function, why it stays long).
const LONG: &[(&str, &str, &str)] = &[
    // Dispatch tables: one arm per method, request or variant.
    (
        "conformance/src/remote/serve.rs",
        "Server::handle",
        "one arm per operation method of the process protocol",
    ),
    (
        "conformance/src/remote/serve.rs",
        "Server::hook",
        "one arm per fixture hook method of the process protocol",
    ),
    (
        "conformance/src/suite/report/junit.rs",
        "properties",
        "one JUnit property per field of the run, in the schema's order",
    ),
    (
        "fakes/template/src/mutants/twisted.rs",
        "Twisted::create",
        "one arm per mutant that twists Create at the API",
    ),
    (
        "fakes/libvirt/src/control/exec.rs",
        "Control::handle",
        "one arm per request of fake-libvirtd's control socket",
    ),
    (
        "fakes/libvirt/src/control/cli.rs",
        "CtlCommand::request",
        "one arm per `fake-libvirtd ctl` command, each the request it sends",
    ),
    // libvirt's own behaviour, case by case, as measured on libvirtd.
    (
        "fakes/libvirt/src/state/domains.rs",
        "State::interface_addresses",
        "each address source (lease, agent, ARP) with the errors libvirtd gives for it, in its order",
    ),
    (
        "fakes/libvirt/src/state/domains.rs",
        "State::set_metadata",
        "each metadata type (title, description, element) set live, in the config or both, as libvirtd checks them",
    ),
    (
        "fakes/libvirt/src/xml/metadata.rs",
        "format_metadata",
        "one pass of libxml2's formatting rules over the element's events, with the state they share",
    ),
    (
        "fakes/libvirt/src/server.rs",
        "read_loop",
        "one select loop over the socket, the keepalive timer and the calls in flight; split, the loop's state would be passed around whole",
    ),
    (
        "fakes/libvirt/src/bin/fake-libvirtd.rs",
        "run",
        "the daemon's start in order: state file, listeners, control socket, signals, then serving",
    ),
    // The provider people copy, in the order its steps should read, with the seams
    // between them where the mutants break it (`provider/seams.rs`).
    (
        "fakes/template/src/provider/create.rs",
        "TemplateProvider::converge",
        "Create's steps on a found or missing instance, with six seams between them",
    ),
    (
        "fakes/template/src/provider/create.rs",
        "TemplateProvider::create_op",
        "Create's checks before any step (validation, placement, lock, adoption guard), each behind its seam",
    ),
    (
        "fakes/template/src/provider/get.rs",
        "TemplateProvider::get_op",
        "Get's reads in order (locate, admit, look up, mark, addresses, state), each failure named where it happens",
    ),
    (
        "fakes/template/src/backend/control.rs",
        "SimBackend::plant",
        "one arm per kind of instance the planting hook makes out of band (unmarked, foreign owner, empty UID, unreadable mark), then where its mark is kept",
    ),
    // A rule's scenario, whose steps share what was observed along the way.
    (
        "conformance/src/suite/checks/create.rs",
        "cre_return",
        "the rule and the two declarations it verifies are judged from one timed Create and the Gets after it",
    ),
    (
        "conformance/src/suite/checks/create.rs",
        "cre_secret",
        "every place a payload could escape is one assertion over the same Create's telemetry",
    ),
    (
        "conformance/src/suite/checks/general.rs",
        "gen_error_name",
        "one provoked error per operation and path, each asserted where it is provoked",
    ),
    (
        "conformance/src/suite/checks/general.rs",
        "observe_outcomes",
        "the list of operations GEN-LOGGING observes at one tier, one call and one outcome each",
    ),
    (
        "conformance/src/suite/checks/list.rs",
        "lst_partial",
        "each reachability fault in turn, judged by the declared list-partial value",
    ),
    (
        "conformance/src/suite/cli/verify.rs",
        "verify_text",
        "one finding per check of a report's text, in the order the schema states them",
    ),
    (
        "conformance/src/suite/props.rs",
        "property",
        "the bridge from proptest's synchronous runner to an async check: its configuration, the runner and the replay lines of a failure",
    ),
];

#[test]
fn every_long_function_is_listed_with_a_reason() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let mut found: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut seen = 0;
    for (package, target, src) in targets() {
        let graph = modules::read(&src).unwrap_or_else(|e| panic!("{package} ({target}): {e}"));
        let mut files: Vec<_> = graph.modules.values().cloned().collect();
        files.sort();
        files.dedup();
        for file in files {
            let rel = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .to_string_lossy()
                .into_owned();
            for f in functions::functions(&file).unwrap_or_else(|e| panic!("{e}")) {
                seen += 1;
                if f.lines > LIMIT {
                    found.insert((rel.clone(), f.name), f.lines);
                }
            }
        }
    }
    // What the reading saw, so that a reading that finds nothing fails.
    assert!(seen > 1000, "read only {seen} functions");
    let listed: BTreeMap<(String, String), &str> = LONG
        .iter()
        .map(|(file, name, why)| (((*file).to_owned(), (*name).to_owned()), *why))
        .collect();
    let unlisted: Vec<String> = found
        .iter()
        .filter(|(k, _)| !listed.contains_key(*k))
        .map(|((file, name), n)| format!("    (\"{file}\", \"{name}\", \"…\"), // {n} lines"))
        .collect();
    let stale: Vec<String> = listed
        .keys()
        .filter(|k| !found.contains_key(*k))
        .map(|(file, name)| format!("{file}: {name}"))
        .collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "functions over {LIMIT} lines not in LONG (split them into named steps, or list \
         them with why they stay long):\n{}\nlisted but no longer over {LIMIT} lines (remove \
         them from LONG):\n{}",
        unlisted.join("\n"),
        stale.join("\n")
    );
    for why in listed.values() {
        assert!(
            !why.trim().is_empty() && !why.contains('…'),
            "a reason is missing"
        );
    }
}
