//! The sample run: fixed IDs, times and durations, every outcome, violations,
//! a failed property and evidence.

use super::*;

pub(super) fn result(
    id: &str,
    area: &str,
    title: &str,
    outcome: Outcome,
    millis: u64,
) -> RuleResult {
    RuleResult {
        id: id.into(),
        title: title.into(),
        area: area.into(),
        outcome,
        reason: None,
        violations: Vec::new(),
        evidence: Vec::new(),
        property: None,
        seed: 7,
        not_checked: Vec::new(),
        faults: Vec::new(),
        duration: Duration::from_micros(millis * 1000 + 250),
        peak_instances: 0,
        runs: u32::from(!matches!(
            outcome,
            Outcome::Skipped | Outcome::NotApplicable
        )),
        passes: u32::from(outcome == Outcome::Pass),
        flaky: false,
        repeat_seeds: Vec::new(),
        waiver: None,
        log: None,
    }
}

pub(super) fn sample_events() -> Vec<Event> {
    let profile = Profile::builder()
        .with("quota", "none")
        .unwrap()
        .build()
        .unwrap();
    let info = RunInfo {
        run_id: "0f9e8d7c6b5a49388271605f4e3d2c1b".into(),
        provider: "kvm2".into(),
        provider_version: "0.1.0".into(),
        provider_commit: Some("a1b2c3d4e5f6".into()),
        provider_dirty: Some(false),
        profile,
        hooks: vec![Hook::Inventory, Hook::Faults, Hook::Observation],
        suite_version: "0.0.0-sample".into(),
        suite_commit: Some("0123456789ab".into()),
        suite_dirty: Some(true),
        backend_versions: BTreeMap::from([(
            "host-a".to_owned(),
            BTreeMap::from([
                ("libvirt".to_owned(), "11.3.0".to_owned()),
                ("qemu".to_owned(), "10.0.2".to_owned()),
            ]),
        )]),
        catalogue_hash: "5e".repeat(32),
        seed: 42,
        real_backend: false,
        environment: BTreeMap::from([
            ("arch".to_owned(), "x86_64".to_owned()),
            ("backend".to_owned(), "libvirt-fake 0.1.0".to_owned()),
            ("os".to_owned(), "linux".to_owned()),
        ]),
        options: RunSettings {
            rules: None,
            cases: 16,
            steps: 40,
            rule_timeout: Duration::from_secs(120),
            concurrency: 4,
            rule_seeds: BTreeMap::from([("CRE-SECRET".to_owned(), 488_782_666)]),
            skip: Vec::new(),
            repeat: 1,
            max_wall: None,
            max_instances: None,
            shard: None,
            max_fail: None,
        },
        started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_212_800),
    };

    let mut idempotent = result(
        "CRE-IDEMPOTENT",
        "create",
        "Repeating Create changes nothing",
        Outcome::Pass,
        12,
    );
    idempotent.not_checked = vec![NotChecked {
        what: "backend resources unchanged by the repeat".into(),
        why: "the fixture has no inventory hook".into(),
    }];
    idempotent.evidence = vec![
        "case same-request: the same ID came back".into(),
        "inventory before and after: 3 resources".into(),
    ];

    let mut quota = result(
        "CRE-QUOTA",
        "create",
        "Too little capacity is QuotaExceeded",
        Outcome::NotApplicable,
        0,
    );
    quota.duration = Duration::ZERO;
    quota.reason = Some("profile declares quota=none; the rule applies to quota=detected".into());

    let secret_violations = vec![
        Violation {
            rule: "CRE-SECRET".into(),
            location: "create at verbosity V2".into(),
            expected: "no cloud-init payload in any log line".into(),
            actual: "the payload appeared in a debug line: user-data=<b>\"s3cr3t\"</b> & more"
                .into(),
        },
        Violation {
            rule: "CRE-SECRET".into(),
            location: "error from a failed create".into(),
            expected: "no cloud-init payload in the error chain".into(),
            actual: "the payload appeared in the source error".into(),
        },
    ];
    let mut secret = result(
        "CRE-SECRET",
        "create",
        "The cloud-init payload never leaks",
        Outcome::Fail,
        840,
    );
    secret.reason = Some(secret_violations[0].to_string());
    secret.violations = secret_violations;
    secret.property = Some(PropertyFailure {
        seed: 0x1d2c_3b4a,
        shrunk: "[Create { name: \"a-0\", verbosity: V2 }, Restart, Get { name: \"a-0\" }]".into(),
        replay: "--rules CRE-SECRET --rule-seed CRE-SECRET=488782666".into(),
    });
    secret.evidence = vec![
        "captured 214 log lines and 61 spans".into(),
        "sentinel: a 32-byte random marker inside user-data".into(),
    ];

    let mut malformed = result(
        "GET-MALFORMED",
        "get",
        "A malformed ID is Permanent",
        Outcome::Pass,
        3,
    );
    malformed.evidence = vec![
        "case \"\": Permanent".into(),
        "case \"hosts//x\": Permanent".into(),
    ];

    let mut busy = result(
        "GET-BUSY",
        "get",
        "A busy backend is Transient",
        Outcome::Error,
        5_003,
    );
    busy.reason = Some("could not open a testbed: connection refused".into());

    let mut partial = result(
        "DEL-PARTIAL",
        "delete",
        "Delete tolerates missing parts",
        Outcome::Skipped,
        0,
    );
    partial.duration = Duration::ZERO;
    partial.reason = Some("the fixture lacks the planting hook(s)".into());

    let order_violation = Violation {
        rule: "LST-ORDER".into(),
        location: "list across two hosts".into(),
        expected: "host-a before host-b".into(),
        actual: "host-b first".into(),
    };
    let mut order = result(
        "LST-ORDER",
        "list",
        "Listings come in configuration order",
        Outcome::Fail,
        61_500,
    );
    order.reason = Some(order_violation.to_string());
    order.faults = vec![
        InjectedFault {
            location: Some("host-b".into()),
            trigger: "nth(2)".into(),
            kind: "lost-reply".into(),
            fired: true,
        },
        InjectedFault {
            location: None,
            trigger: "named(DomainDefineXML)".into(),
            kind: "delay(200ms)".into(),
            fired: false,
        },
    ];
    order.violations = vec![order_violation];

    let mut check = result(
        "CHK-ORDER",
        "check",
        "One entry per location, in order",
        Outcome::NotApplicable,
        0,
    );
    check.duration = Duration::ZERO;
    check.reason = Some("the provider has no Checker (Check is optional)".into());

    let results = vec![
        order, check, busy, idempotent, partial, secret, malformed, quota,
    ];
    let mut events = vec![Event::RunStarted(info)];
    for r in results {
        events.push(Event::CheckStarted { id: r.id.clone() });
        events.push(Event::CheckFinished(r));
    }
    events.push(Event::RunFinished {
        duration: Duration::from_millis(67_890),
        swept: vec!["cf-0f9e8d7c-lst-order-1".into()],
    });
    events
}

pub(super) fn sample() -> Report {
    Report::from_events(&sample_events()).expect("the sample starts with RunStarted")
}

#[test]
fn the_sample_covers_every_outcome() {
    let r = sample();
    for o in Outcome::ALL {
        assert!(r.results.iter().any(|x| x.outcome == o), "{o:?} missing");
    }
    assert_eq!(r.results[0].id, "CRE-IDEMPOTENT", "catalogue order");
}
