//! Tests of the protocol itself: the committed schema is current, every part of the
//! fixture API has a protocol counterpart, the conversions round-trip, and every
//! protocol failure is a harness Error naming it, within the rule's timeout.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::proto::*;
use super::{Connector, Link, RemoteFixture, RemoteOptions};
use crate::fixture::{FaultKind, FaultSpec, Fixture, Hook, Plant, Reachability, Trigger};
use crate::profile::Profile;
use crate::suite::outcome::Outcome;
use crate::suite::runner::{RunOptions, run_rule};
use crate::{CloudInit, CreateRequest, Ctx, Error, Instance, Op, Quota, State};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_committed_schema_is_current() {
    let path = root().join("schema/remote/protocol-v1.schema.json");
    let want = super::schema::render();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale; run `UPDATE_SCHEMA=1 cargo test -p conformance --features remote --lib remote::tests`",
        path.display()
    );
}

#[test]
fn the_schema_names_every_method_and_notification() {
    let doc = super::schema::document();
    let methods = doc["x-methods"].as_object().unwrap();
    for m in METHODS {
        assert!(methods[*m].get("result").is_some(), "{m}");
    }
    for n in NOTIFICATIONS {
        assert!(methods[*n].get("result").is_none(), "{n}");
    }
    assert_eq!(methods.len(), METHODS.len() + NOTIFICATIONS.len());
}

/// The `fn` names declared in `pub trait <name>` of `src`.
fn trait_methods(src: &str, name: &str) -> Vec<String> {
    let start = src
        .find(&format!("pub trait {name}"))
        .unwrap_or_else(|| panic!("no trait {name}"));
    let body = block(&src[start..]);
    let mut out = Vec::new();
    for (i, _) in body.match_indices("fn ") {
        let before = &body[..i];
        // Only items of the trait itself: not inside a default method's body.
        if depth(before) != 1 {
            continue;
        }
        let n: String = body[i + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.push(n);
    }
    out
}

/// The variants of `pub enum <name>` in `src`.
fn enum_variants(src: &str, name: &str) -> Vec<String> {
    let start = src
        .find(&format!("pub enum {name} "))
        .unwrap_or_else(|| panic!("no enum {name}"));
    let body = block(&src[start..]);
    let mut out = Vec::new();
    let mut d = 0;
    let mut line_start = true;
    for (i, c) in body.char_indices() {
        match c {
            '{' | '(' => d += 1,
            '}' | ')' => d -= 1,
            _ => {}
        }
        if line_start && d == 1 {
            let rest = body[i..].trim_start_matches(' ');
            if rest.starts_with(|c: char| c.is_ascii_uppercase()) {
                out.push(rest.chars().take_while(|c| c.is_alphanumeric()).collect());
            }
        }
        line_start = c == '\n';
    }
    out
}

fn block(s: &str) -> &str {
    let open = s.find('{').unwrap();
    let mut d = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '{' => d += 1,
            '}' => {
                d -= 1;
                if d == 0 {
                    return &s[open..open + i + 1];
                }
            }
            _ => {}
        }
    }
    s
}

fn depth(s: &str) -> i32 {
    s.chars().fold(0, |d, c| match c {
        '{' => d + 1,
        '}' => d - 1,
        _ => d,
    })
}

#[test]
fn every_fixture_testbed_and_hook_method_has_a_protocol_counterpart() {
    let fixture_rs = std::fs::read_to_string(root().join("src/fixture.rs")).unwrap();
    let provider_rs = std::fs::read_to_string(root().join("src/provider.rs")).unwrap();
    let doc = super::schema::document();
    let defs = doc["$defs"].as_object().unwrap();
    let field = |def: &str, f: &str| defs.get(def).and_then(|d| d["properties"].get(f)).is_some();
    let mut missing = Vec::new();
    let mut seen = 0;
    for (file, name) in [
        (&fixture_rs, "Fixture"),
        (&fixture_rs, "Testbed"),
        (&fixture_rs, "Inventory"),
        (&fixture_rs, "Planting"),
        (&fixture_rs, "StateControl"),
        (&fixture_rs, "Capacity"),
        (&fixture_rs, "Faults"),
        (&fixture_rs, "Rotation"),
        (&fixture_rs, "Observation"),
        (&provider_rs, "Provider"),
        (&provider_rs, "Checker"),
    ] {
        for m in trait_methods(file, name) {
            seen += 1;
            let hook_accessor = Hook::ALL.iter().any(|h| h.as_str().replace('-', "_") == m);
            let ok = match (name, m.as_str()) {
                ("Fixture", "open") => METHODS.contains(&"fixture/open"),
                ("Fixture", m) => field("InitializeResult", m),
                ("Testbed", "provider") => field("OpenResult", "provider"),
                // The bridge's own report to the runner; nothing crosses the wire.
                ("Testbed", "harness_failure") => true,
                ("Testbed", _) if hook_accessor => field("InitializeResult", "hooks"),
                ("Testbed", m) => METHODS.contains(&format!("testbed/{m}").as_str()),
                ("Provider", "name" | "profile" | "checker") => field("ProviderInfo", &m),
                ("Provider", m) => METHODS.contains(&format!("provider/{m}").as_str()),
                ("Checker", "check") => METHODS.contains(&"checker/check"),
                ("Checker", m) => field("CheckerInfo", m),
                (hook, m) => {
                    let prefix: String = hook
                        .chars()
                        .enumerate()
                        .flat_map(|(i, c)| {
                            let lower = c.to_ascii_lowercase();
                            if c.is_ascii_uppercase() && i > 0 {
                                vec!['_', lower]
                            } else {
                                vec![lower]
                            }
                        })
                        .collect();
                    METHODS.contains(&format!("{prefix}/{m}").as_str())
                }
            };
            if !ok {
                missing.push(format!("{name}::{m}"));
            }
        }
    }
    assert!(seen > 40, "the parser found only {seen} methods");
    assert!(missing.is_empty(), "no protocol counterpart: {missing:?}");
}

#[test]
fn every_enum_variant_has_a_protocol_counterpart() {
    let src: String = ["src/fixture.rs", "src/types.rs", "src/error.rs"]
        .iter()
        .map(|f| std::fs::read_to_string(root().join(f)).unwrap())
        .collect();
    let doc = super::schema::document();
    let defs = &doc["$defs"];
    let mut missing = Vec::new();
    for (rust, wire) in [
        ("Hook", "WireHook"),
        ("Plant", "WirePlant"),
        ("Part", "WirePart"),
        ("Power", "WirePower"),
        ("Trigger", "WireTrigger"),
        ("FaultKind", "WireFaultKind"),
        ("Reachability", "WireReachability"),
        ("AccessBreak", "WireAccessBreak"),
        ("Verbosity", "WireVerbosity"),
        ("State", "WireState"),
        ("Op", "WireOp"),
        ("ErrorKind", "WireErrorKind"),
    ] {
        let schema = defs[wire].to_string();
        let variants = enum_variants(&src, rust);
        assert!(!variants.is_empty(), "{rust}");
        for v in variants {
            if !schema.contains(&format!("\"{v}\"")) {
                missing.push(format!("{rust}::{v}"));
            }
        }
    }
    for v in enum_variants(&src, "HealthReason") {
        if v != "Other" && matches!(reason_from_wire(&v), crate::HealthReason::Other(_)) {
            missing.push(format!("HealthReason::{v}"));
        }
    }
    assert!(missing.is_empty(), "no protocol counterpart: {missing:?}");
}

#[test]
fn contract_values_round_trip() {
    let t = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
    let i = Instance {
        id: "sites/a/instances/web".into(),
        name: "web".into(),
        state: State::Running,
        ipv4: Some("10.0.0.5".parse().unwrap()),
        uid: "u".into(),
        tag: "t".into(),
        created_at: Some(t),
    };
    let wire: WireInstance =
        serde_json::from_value(serde_json::to_value(WireInstance::from(&i)).unwrap()).unwrap();
    assert_eq!(wire.to_instance().unwrap(), i);

    let e = Error::quota(
        "p",
        Op::Create,
        Quota {
            what: "pool".into(),
            available: 1,
            needed: 2,
        },
    )
    .with_source(std::io::Error::other("outer"));
    let back = ContractError::from(&e).to_error().unwrap();
    assert_eq!(back.chain(), e.chain());
    assert_eq!(back.kind(), e.kind());

    let bad = ContractError {
        quota: None,
        ..ContractError::from(&e)
    };
    assert!(bad.to_error().is_err());

    let spec = FaultSpec {
        location: Some("l".into()),
        trigger: Trigger::Nth(3),
        kind: FaultKind::Delay(Duration::from_micros(1500)),
    };
    assert_eq!(FaultSpec::from(WireFaultSpec::from(spec.clone())), spec);
    let plant = Plant::ForeignUid {
        tag: "t".into(),
        uid: "u".into(),
    };
    assert_eq!(Plant::from(WirePlant::from(plant.clone())), plant);

    let p = Profile::builder()
        .with("quota", "none")
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(WireProfile::from(&p).to_profile().unwrap(), p);
}

#[test]
fn the_cloud_init_crosses_in_clear_and_never_prints() {
    let req = CreateRequest {
        name: "n".into(),
        uid: "u".into(),
        tag: "t".into(),
        placement: "z".into(),
        image: None,
        cloud_init: CloudInit::new("secret-payload"),
    };
    let wire = WireCreateRequest::from(&req);
    assert!(
        serde_json::to_string(&wire)
            .unwrap()
            .contains("secret-payload")
    );
    assert!(!format!("{wire:?}").contains("secret-payload"));
    assert_eq!(CreateRequest::from(wire), req);
}

// ---------------------------------------------------------------------------------------
// Protocol failures, against a scripted provider on an in-memory stream.

/// What the scripted provider does when the suite sends `method`.
#[derive(Clone, Copy, Debug)]
enum Misstep {
    /// Answers with a line that is not JSON.
    NotJson,
    /// Answers with an unknown-method error.
    UnknownMethod,
    /// Sends a line longer than the limit.
    Oversize,
    /// Answers a request id that was never sent.
    UnknownId,
    /// Answers twice.
    Duplicate,
    /// Closes its output.
    CloseOutput,
    /// Answers that the method panicked.
    Panic,
    /// Prints a line of its own to stdout (a stray `print`), then answers.
    StrayLine,
    /// Opens a span for a request that is not in flight, then answers.
    SpanOfUnknownRequest,
    /// Ends a span it never started, then answers.
    EndOfUnstartedSpan,
    /// Logs for the request after answering it.
    EventAfterReply,
}

fn facts() -> InitializeResult {
    InitializeResult {
        protocol_version: PROTOCOL_VERSION,
        provider_name: "scripted".into(),
        provider_version: "0".into(),
        profile: (&Profile::builder().build().unwrap()).into(),
        hooks: vec![WireHook::Faults],
        locations: vec![WireLocation {
            name: "l0".into(),
            placement: "z0".into(),
        }],
        has_checker: false,
        is_real_backend: false,
        environment: BTreeMap::new(),
        backend_versions: BTreeMap::new(),
    }
}

/// A provider that answers correctly until the suite sends `at`, then does `misstep`.
fn scripted(at: &'static str, misstep: Misstep) -> Connector {
    Arc::new(move || {
        Box::pin(async move {
            let (suite, provider) = tokio::io::duplex(1 << 16);
            let (r, mut w) = tokio::io::split(provider);
            tokio::spawn(async move {
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let msg: Value = serde_json::from_str(&line).unwrap();
                    let Some(id) = msg.get("id").cloned() else {
                        continue;
                    };
                    let method = msg["method"].as_str().unwrap_or_default().to_owned();
                    let result = match method.as_str() {
                        "initialize" => serde_json::to_value(facts()).unwrap(),
                        "fixture/open" => json!({"testbed": 1, "provider": {
                            "provider": 2, "name": "scripted",
                            "profile": WireProfile::from(&Profile::builder().build().unwrap()),
                            "checker": null}}),
                        "testbed/request" => serde_json::to_value(WireCreateRequest {
                            name: msg["params"]["name"].as_str().unwrap().into(),
                            uid: "u".into(),
                            tag: msg["params"]["tag"].as_str().unwrap().into(),
                            placement: "z0".into(),
                            image: None,
                            cloud_init: "#cloud-config".into(),
                        })
                        .unwrap(),
                        "testbed/id_for" => json!({"id": "x"}),
                        "provider/create" => json!({"ok": {"id": "x"}}),
                        "provider/list_by_tag" => {
                            json!({"ok": {"instances": [], "unreachable": []}})
                        }
                        "provider/delete" => json!({"ok": {}}),
                        "faults/cause" => json!({"produced": true}),
                        _ => json!({}),
                    };
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
                    let out = if method == at {
                        match misstep {
                            Misstep::NotJson => "{\"jsonrpc\": \"2.0\", \"id\": ".to_owned(),
                            Misstep::UnknownMethod => json!({"jsonrpc": "2.0", "id": id,
                                "error": {"code": METHOD_NOT_FOUND, "message": "unknown method"}})
                            .to_string(),
                            Misstep::Oversize => "x".repeat(MAX_LINE + 1),
                            Misstep::UnknownId => {
                                json!({"jsonrpc": "2.0", "id": 999_999, "result": {}}).to_string()
                            }
                            Misstep::Duplicate => format!("{answer}\n{answer}"),
                            Misstep::Panic => json!({"jsonrpc": "2.0", "id": id,
                                "error": {"code": PROVIDER_PANICKED, "message": "index out of bounds"}})
                            .to_string(),
                            Misstep::StrayLine => format!("debug: token=hunter2\n{answer}"),
                            Misstep::SpanOfUnknownRequest => format!(
                                "{}\n{answer}",
                                json!({"jsonrpc": "2.0", "method": "$/span/start", "params": {
                                    "request": 999_999, "span": 1, "parent": null,
                                    "name": "x.create", "level": "INFO", "fields": {}}})
                            ),
                            Misstep::EndOfUnstartedSpan => format!(
                                "{}\n{answer}",
                                json!({"jsonrpc": "2.0", "method": "$/span/end",
                                    "params": {"span": 4242}})
                            ),
                            Misstep::EventAfterReply => format!(
                                "{answer}\n{}",
                                json!({"jsonrpc": "2.0", "method": "$/event", "params": {
                                    "request": id, "span": null, "level": "INFO",
                                    "message": "late", "fields": {}}})
                            ),
                            Misstep::CloseOutput => {
                                let _ = w.shutdown().await;
                                // Keep reading so the suite's writes do not fail first.
                                while let Ok(Some(_)) = lines.next_line().await {}
                                return;
                            }
                        }
                    } else {
                        answer.to_string()
                    };
                    if w.write_all(format!("{out}\n").as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
            let (r, w) = tokio::io::split(suite);
            Ok(Link {
                reader: Box::new(r),
                writer: Box::new(w),
                exit_status: None,
            })
        })
    })
}

fn opts() -> RemoteOptions {
    RemoteOptions {
        init_timeout: Duration::from_secs(2),
        hook_timeout: Duration::from_secs(2),
        grace: Some(Duration::from_millis(200)),
        stderr_log: None,
    }
}

/// Runs CRE-IDEMPOTENT (Create, then Get, List, Delete) against the scripted
/// provider and returns its outcome, reason and how long it took.
fn rule_against(at: &'static str, misstep: Misstep) -> (Outcome, String, Duration) {
    let fixture: Arc<dyn Fixture> =
        Arc::new(RemoteFixture::with_connector(scripted(at, misstep), opts()).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let opts = RunOptions {
        rule_timeout: Duration::from_secs(20),
        ..RunOptions::default()
    };
    let started = Instant::now();
    let r = rt.block_on(run_rule(
        fixture,
        crate::rules::rule("CRE-IDEMPOTENT").unwrap(),
        &opts,
        "0123456789",
    ));
    (r.outcome, r.reason.unwrap_or_default(), started.elapsed())
}

fn assert_error_naming(at: &'static str, misstep: Misstep, words: &str) {
    let (outcome, reason, took) = rule_against(at, misstep);
    assert_eq!(outcome, Outcome::Error, "{misstep:?}: {reason}");
    assert!(reason.contains(words), "{misstep:?}: {reason}");
    assert!(!reason.contains("#cloud-config"), "{reason}");
    assert!(took < Duration::from_secs(10), "{misstep:?} took {took:?}");
}

#[test]
fn a_method_that_panicked_fails_the_rule_at_once_as_a_panic_in_process_would() {
    let (outcome, reason, took) = rule_against("provider/create", Misstep::Panic);
    assert_eq!(outcome, Outcome::Fail, "{reason}");
    assert!(
        reason.contains("panicked") && reason.contains("index out of bounds"),
        "{reason}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_line_that_is_not_json_is_an_error_naming_it() {
    assert_error_naming("provider/create", Misstep::NotJson, "not JSON");
}

#[test]
fn an_unknown_method_is_an_error_naming_it() {
    assert_error_naming("provider/create", Misstep::UnknownMethod, "-32601");
}

#[test]
fn an_oversize_line_is_an_error_naming_it() {
    assert_error_naming("provider/create", Misstep::Oversize, "longer than");
}

#[test]
fn a_reply_to_an_unknown_id_is_an_error_naming_it() {
    assert_error_naming("provider/create", Misstep::UnknownId, "unknown request id");
}

#[test]
fn a_duplicate_reply_is_an_error_naming_it() {
    assert_error_naming("provider/create", Misstep::Duplicate, "duplicate reply");
}

#[test]
fn closed_output_is_an_error_naming_it() {
    assert_error_naming("provider/create", Misstep::CloseOutput, "closed its output");
}

#[test]
fn a_stray_stdout_line_is_an_error_citing_its_position_and_what_stdout_is_for() {
    // Requests 1-2 are initialize and fixture/open, 3 testbed/request: the stray line
    // comes before the reply to provider/create, the fourth request, as line 4.
    let (outcome, reason, _) = rule_against("provider/create", Misstep::StrayLine);
    assert_eq!(outcome, Outcome::Error, "{reason}");
    assert!(
        reason.contains("the connection to the provider failed")
            && reason.contains("not JSON")
            && reason.contains("at line ")
            && reason.contains(" of its output")
            && reason.contains("stdout is reserved for protocol messages"),
        "{reason}"
    );
    assert!(!reason.contains("hunter2"), "{reason}");
}

#[test]
fn telemetry_of_a_request_not_in_flight_is_an_error_naming_it() {
    assert_error_naming(
        "provider/create",
        Misstep::SpanOfUnknownRequest,
        "$/span/start for request 999999, which is not in flight",
    );
    assert_error_naming(
        "provider/create",
        Misstep::EventAfterReply,
        "$/event for request",
    );
}

#[test]
fn a_bad_protocol_message_is_not_taken_for_a_stray_line() {
    let (outcome, reason, _) = rule_against("provider/create", Misstep::EndOfUnstartedSpan);
    assert_eq!(outcome, Outcome::Error, "{reason}");
    assert!(reason.contains("at line "), "{reason}");
    assert!(!reason.contains("stdout is reserved"), "{reason}");
}

#[test]
fn the_end_of_a_span_never_started_is_an_error_naming_it() {
    assert_error_naming(
        "provider/create",
        Misstep::EndOfUnstartedSpan,
        "$/span/end for span 4242, which is not open",
    );
}

#[test]
fn a_failure_in_a_synchronous_hook_is_an_error_too() {
    assert_error_naming("testbed/request", Misstep::NotJson, "not JSON");
}

#[test]
fn no_answer_to_initialize_is_named() {
    let silent: Connector = Arc::new(|| {
        Box::pin(async {
            let (suite, provider) = tokio::io::duplex(1024);
            tokio::spawn(async move {
                let _keep = provider;
                tokio::time::sleep(Duration::from_secs(30)).await;
            });
            let (r, w) = tokio::io::split(suite);
            Ok(Link {
                reader: Box::new(r),
                writer: Box::new(w),
                exit_status: None,
            })
        })
    });
    let mut o = opts();
    o.init_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let e = RemoteFixture::with_connector(silent, o).unwrap_err();
    assert!(e.contains("no answer to initialize"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_process_that_exits_mid_call_is_an_error_naming_it_and_the_next_testbed_starts_it_again() {
    // Answers initialize and fixture/open, then exits at the first other request.
    let dir = tempfile::tempdir().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "result": facts()});
    std::fs::write(dir.path().join("init"), format!("{init}\n")).unwrap();
    let open = json!({"jsonrpc": "2.0", "id": 2, "result": {"testbed": 1, "provider": {
        "provider": 2, "name": "scripted",
        "profile": WireProfile::from(&Profile::builder().build().unwrap()), "checker": null}}});
    std::fs::write(dir.path().join("open"), format!("{open}\n")).unwrap();
    let cmd = format!(
        "cd '{}' && read l && cat init && read l && cat open && read l && exit 7",
        dir.path().display()
    );
    let fixture = Arc::new(RemoteFixture::new(super::Endpoint::Command(cmd), opts()).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for round in 0..2 {
        let r = rt.block_on(run_rule(
            fixture.clone(),
            crate::rules::rule("CRE-IDEMPOTENT").unwrap(),
            &RunOptions::default(),
            "0123456789",
        ));
        let reason = r.reason.unwrap_or_default();
        assert_eq!(r.outcome, Outcome::Error, "round {round}: {reason}");
        assert!(reason.contains("exited"), "round {round}: {reason}");
        assert!(reason.contains("exit status: 7"), "round {round}: {reason}");
    }
}

/// A provider that answers initialize and fixture/open on its first connection and
/// then nothing; on every later connection it answers nothing at all.
fn wedging(connections: Arc<std::sync::atomic::AtomicU32>) -> Connector {
    Arc::new(move || {
        let n = connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            let (suite, provider) = tokio::io::duplex(1 << 16);
            let (r, mut w) = tokio::io::split(provider);
            tokio::spawn(async move {
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let msg: Value = serde_json::from_str(&line).unwrap();
                    let result = match msg["method"].as_str() {
                        Some("initialize") if n == 0 => serde_json::to_value(facts()).unwrap(),
                        Some("fixture/open") if n == 0 => json!({"testbed": 1, "provider": {
                            "provider": 2, "name": "scripted",
                            "profile": WireProfile::from(&Profile::builder().build().unwrap()),
                            "checker": null}}),
                        _ => continue,
                    };
                    let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
                    let _ = w.write_all(format!("{answer}\n").as_bytes()).await;
                }
            });
            let (r, w) = tokio::io::split(suite);
            Ok(Link {
                reader: Box::new(r),
                writer: Box::new(w),
                exit_status: None,
            })
        })
    })
}

#[test]
fn a_wedged_provider_is_reconnected_once_and_then_given_up_on_at_once() {
    let connections = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut o = opts();
    o.hook_timeout = Duration::from_millis(300);
    o.init_timeout = Duration::from_millis(300);
    let fixture: Arc<dyn Fixture> =
        Arc::new(RemoteFixture::with_connector(wedging(connections.clone()), o).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run = |fixture: Arc<dyn Fixture>| {
        let started = Instant::now();
        let r = rt.block_on(run_rule(
            fixture,
            crate::rules::rule("CRE-IDEMPOTENT").unwrap(),
            &RunOptions::default(),
            "0123456789",
        ));
        (r.outcome, r.reason.unwrap_or_default(), started.elapsed())
    };
    let (outcome, reason, _) = run(fixture.clone());
    assert_eq!(outcome, Outcome::Error, "{reason}");
    assert!(
        reason.contains("wedged") && reason.contains("testbed/request"),
        "{reason}"
    );
    // The next testbed reconnects; the provider stays silent, so the suite gives up.
    let (outcome, reason, _) = run(fixture.clone());
    assert_eq!(outcome, Outcome::Error, "{reason}");
    assert!(reason.contains("could not be started again"), "{reason}");
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2);
    // Every later rule is an Error at once, with no further connection.
    let (outcome, reason, took) = run(fixture);
    assert_eq!(outcome, Outcome::Error, "{reason}");
    assert!(reason.contains("could not be started again"), "{reason}");
    assert!(took < Duration::from_millis(250), "took {took:?}");
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[test]
fn a_wedged_provider_process_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "result": facts()});
    std::fs::write(dir.path().join("init"), format!("{init}\n")).unwrap();
    let open = json!({"jsonrpc": "2.0", "id": 2, "result": {"testbed": 1, "provider": {
        "provider": 2, "name": "scripted",
        "profile": WireProfile::from(&Profile::builder().build().unwrap()), "checker": null}}});
    std::fs::write(dir.path().join("open"), format!("{open}\n")).unwrap();
    let cmd = format!(
        "cd '{}' && read l && cat init && read l && cat open && echo $$ > pid && exec sleep 600",
        dir.path().display()
    );
    let mut o = opts();
    o.hook_timeout = Duration::from_millis(300);
    let fixture = Arc::new(RemoteFixture::new(super::Endpoint::Command(cmd), o).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(run_rule(
        fixture.clone(),
        crate::rules::rule("CRE-IDEMPOTENT").unwrap(),
        &RunOptions::default(),
        "0123456789",
    ));
    assert_eq!(r.outcome, Outcome::Error, "{:?}", r.reason);
    let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
    // Killed and not yet reaped (a zombie) counts as gone.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_owned()))
            .is_some_and(|r| !r.starts_with('Z'))
    };
    let started = Instant::now();
    while alive() && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(),
        "the wedged provider process {} still runs",
        pid.trim()
    );
}

#[test]
fn a_late_answer_to_an_abandoned_operation_is_discarded() {
    // The provider answers every operation 300 ms late; the bridge gives up after
    // deadline + grace and must not take the late answer as a duplicate or unknown.
    let late: Connector = Arc::new(|| {
        Box::pin(async {
            let (suite, provider) = tokio::io::duplex(1 << 16);
            let (r, w) = tokio::io::split(provider);
            let w = Arc::new(tokio::sync::Mutex::new(w));
            tokio::spawn(async move {
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let msg: Value = serde_json::from_str(&line).unwrap();
                    let Some(id) = msg.get("id").cloned() else {
                        continue;
                    };
                    let method = msg["method"].as_str().unwrap_or_default().to_owned();
                    let (result, wait) = match method.as_str() {
                        "initialize" => (serde_json::to_value(facts()).unwrap(), 0),
                        "fixture/open" => (
                            json!({"testbed": 1, "provider": {
                            "provider": 2, "name": "scripted",
                            "profile": WireProfile::from(&Profile::builder().build().unwrap()),
                            "checker": null}}),
                            0,
                        ),
                        _ => (json!({"ok": {"instances": [], "unreachable": []}}), 300),
                    };
                    let w = w.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
                        let _ = w
                            .lock()
                            .await
                            .write_all(format!("{answer}\n").as_bytes())
                            .await;
                    });
                }
            });
            let (r, w) = tokio::io::split(suite);
            Ok(Link {
                reader: Box::new(r),
                writer: Box::new(w),
                exit_status: None,
            })
        })
    });
    let mut o = opts();
    o.grace = Some(Duration::from_millis(50));
    let fixture = RemoteFixture::with_connector(late, o).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tb = fixture.open().await.unwrap();
        let p = tb.provider();
        let started = Instant::now();
        let e = p
            .list_by_tag(&Ctx::with_timeout(Duration::from_millis(50)), "t")
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert!(e.is_transient(), "{e}");
        assert!(
            e.to_string().contains("no reply by deadline + grace"),
            "{e}"
        );
        assert!(
            took >= Duration::from_millis(100) && took < Duration::from_millis(290),
            "{took:?}"
        );
        // The late answer arrives and is dropped; the connection stays healthy.
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(tb.harness_failure(), None);
        let l = p
            .list_by_tag(&Ctx::with_timeout(Duration::from_secs(2)), "t")
            .await
            .unwrap();
        assert!(l.instances.is_empty());
    });
}

/// Every example line of `docs/remote-protocol.md` fits the schema: a request's
/// params the method's, a reply's result the method of the request with its id, a
/// notification's params its own; and every method has an example.
#[test]
fn the_documents_examples_fit_the_schema() {
    let doc = std::fs::read_to_string(root().join("../docs/remote-protocol.md")).unwrap();
    let schema = super::schema::document();
    let mut compiler = boon::Compiler::new();
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource("urn:protocol", schema.clone())
        .unwrap();
    let whole = compiler.compile("urn:protocol", &mut schemas).unwrap();
    let mut parts = BTreeMap::new();
    for (method, m) in schema["x-methods"].as_object().unwrap() {
        let pointer = method.replace('~', "~0").replace('/', "~1");
        for which in ["params", "result"] {
            if m.get(which).is_some() {
                let idx = compiler
                    .compile(
                        &format!("urn:protocol#/x-methods/{pointer}/{which}"),
                        &mut schemas,
                    )
                    .unwrap_or_else(|e| panic!("{method} {which}: {e:#}"));
                parts.insert((method.clone(), which), idx);
            }
        }
    }
    let part = |method: &str, which: &'static str| parts[&(method.to_owned(), which)];
    let mut methods_of_ids: BTreeMap<u64, String> = BTreeMap::new();
    let mut shown = std::collections::BTreeSet::new();
    let mut lines = 0;
    for line in doc.lines() {
        let (json, _) = match (line.strip_prefix("--> "), line.strip_prefix("<-- ")) {
            (Some(j), _) => (j, true),
            (_, Some(j)) => (j, false),
            _ => continue,
        };
        lines += 1;
        let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Err(e) = schemas.validate(&v, whole) {
            panic!("{line}\n{e:#}");
        }
        if let Some(m) = v["method"].as_str() {
            shown.insert(m.to_owned());
            if let Some(id) = v["id"].as_u64() {
                methods_of_ids.insert(id, m.to_owned());
            }
            let idx = part(m, "params");
            if let Err(e) = schemas.validate(&v["params"], idx) {
                panic!("{line}\n{e:#}");
            }
        } else if let Some(r) = v.get("result") {
            let id = v["id"].as_u64().unwrap();
            let m = methods_of_ids
                .get(&id)
                .unwrap_or_else(|| panic!("no request {id} before: {line}"))
                .clone();
            let idx = part(&m, "result");
            if let Err(e) = schemas.validate(r, idx) {
                panic!("{line}\n{e:#}");
            }
        }
    }
    assert!(lines > 40, "{lines} example lines");
    let missing: Vec<&&str> = METHODS
        .iter()
        .chain(NOTIFICATIONS)
        .filter(|m| !shown.contains(**m))
        .collect();
    assert!(missing.is_empty(), "no example for {missing:?}");
}

#[test]
fn a_provider_that_fails_at_start_up_shows_its_stderr_and_gets_a_report_with_verdict_error() {
    let out = tempfile::tempdir().unwrap();
    let cmd = "echo 'Traceback (most recent call last):' >&2; echo 'ValueError: no sites configured' >&2; exit 1";
    let failure = RemoteFixture::start(super::Endpoint::Command(cmd.into()), opts()).unwrap_err();
    assert!(failure.reason.contains("exit status: 1"), "{failure}");
    assert_eq!(
        failure.stderr_tail,
        [
            "Traceback (most recent call last):",
            "ValueError: no sites configured"
        ]
    );
    assert!(
        failure
            .to_string()
            .contains("ValueError: no sites configured")
    );

    let dir = out.path().to_str().unwrap();
    let code = crate::remote::standalone_main_with([
        "conformance",
        "run",
        "--provider-command",
        cmd,
        "--rules",
        "CRE-IDEMPOTENT,GET-MALFORMED,LST-ORDER,CHK-CONCURRENT",
        "--out",
        dir,
    ]);
    assert_eq!(code, crate::suite::cli::EXIT_ERROR);
    let report = std::fs::read_to_string(out.path().join("report.json")).unwrap();
    let v: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(v["verdict"], "error", "{report}");
    assert_eq!(v["results"].as_array().unwrap().len(), 4, "{report}");
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["outcome"], "Error", "{r}");
        assert!(
            r["reason"]
                .as_str()
                .unwrap()
                .contains("the provider did not start"),
            "{r}"
        );
    }
    let log = std::fs::read_to_string(out.path().join("provider-stderr.log")).unwrap();
    assert!(log.contains("ValueError: no sites configured"), "{log}");
    let path = out.path().join("report.json");
    let verify =
        crate::remote::standalone_main_with(["conformance", "verify", path.to_str().unwrap()]);
    assert_eq!(
        verify, 0,
        "verify refused the report of a run that never started"
    );
}

#[test]
fn provider_stderr_log_exists_from_the_start_even_when_empty() {
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("sub/provider-stderr.log");
    let mut o = opts();
    o.stderr_log = Some(path.clone());
    let failure = RemoteFixture::start(super::Endpoint::Command("exit 2".into()), o).unwrap_err();
    assert!(
        failure.to_string().contains("wrote nothing to stderr"),
        "{failure}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
}

/// `faults/cause` and `faults/undo_cause` came after version 1's first release: a
/// provider that answers them "unknown method" cannot produce a declared cause and
/// has none to undo; the same answer to a method of the first release still breaks
/// the protocol.
#[test]
fn an_unknown_method_answer_to_the_added_cause_methods_is_no_cause_produced() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for at in [
            "faults/cause",
            "faults/undo_cause",
            "faults/set_reachability",
        ] {
            let fixture =
                RemoteFixture::with_connector(scripted(at, Misstep::UnknownMethod), opts())
                    .unwrap();
            let tb = fixture.open().await.unwrap();
            let faults = tb.faults().unwrap();
            let cause = faults.cause("l0", "Declared").await;
            let undo = faults.undo_cause("l0").await;
            let reach = faults.set_reachability("l0", Reachability::Up).await;
            // Answered, the provider produced the cause; unknown, it did not.
            assert_eq!(cause.unwrap(), at != "faults/cause", "{at}");
            undo.unwrap();
            if at == "faults/set_reachability" {
                let e = reach.unwrap_err();
                assert!(e.to_string().contains("broke the protocol"), "{e}");
            } else {
                reach.unwrap();
            }
        }
    });
}
