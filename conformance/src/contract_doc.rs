//! Renders `docs/provider-contract.md` from the rule catalogue and the profile axes,
//! so the document can never drift from the code (a test compares the two).

use std::fmt::Write as _;

use crate::clauses::{self, Proof};
use crate::expectations::{MEANINGS, of_rule};
use crate::fixture::Hook;
use crate::profile::{Axis, AxisClass};
use crate::rules::{Area, CATALOGUE, Need};

const PREAMBLE: &str = r#"# The provider contract (v1)

<!-- Generated from conformance/src/rules.rs and conformance/src/profile.rs by
     `UPDATE_DOCS=1 cargo test -p conformance --test docs`. Do not edit by hand. -->

A provider creates, inspects, deletes and lists small VMs on one backend.
This document is the contract every provider obeys; the conformance suite checks each rule by its ID.
IDs are stable: a changed rule keeps its ID only if its meaning stays, and new rules get new IDs.

## Types and call semantics

- Every method takes a call context `Ctx` (deadline, cancellation token, parent span).
  When the deadline passes or the token fires, the call returns `Transient` promptly.
  Dropping the future at any await point is safe.
  The trait is object safe, so callers hold `Arc<dyn Provider>`.
- `CreateRequest { name, uid, tag, placement, image?, cloud_init }`.
  `name` is the idempotency key: lowercase letters, digits and `-`, starting with a letter, at most 63 characters.
  `uid` is the owner's id (letters, digits, `-`, `_`, `.`; at most 128); `tag` is the garbage-collection mark (the name alphabet; at most 63).
  `placement` is a zone the configuration maps to a location.
  `cloud_init` is secret: its `Debug`, `Display` and serialisation print a redaction marker.
- A repeated Create of a name whose recorded uid equals the request's, or is empty, returns the same ID and changes nothing (image, tag and cloud-init differences are not applied).
  A resource of that name without our mark, or with a non-empty different uid, makes Create fail with `Permanent`.
- `ProviderId` is opaque, stable and round-trips.
- `Instance { id, name, state, ipv4?, uid, tag, created_at? }` with `State = Provisioning | Running | Stopped`.
- `list_by_tag` returns `Listing { instances, unreachable }`; with `list-partial=fail-whole`, `unreachable` is always empty.
  A listing discovers no addresses: a listed instance may show Provisioning where Get shows Running.
- Errors carry the configured provider name, the operation and exactly one kind: `NotFound`, `Transient`, `Permanent`, or `QuotaExceeded { what, available, needed }`.
  Backend detail lives in the error's source chain.
- `Check` returns one `HostHealth { location, ready, reason, message, details }` per location.
  Reasons come from a closed shared set (Ready, Unreachable, AuthFailed, HostKeyRejected, Timeout, CredentialsUnavailable) plus reasons the provider declares.
- Logging tiers: V0 warnings and errors only, V1 one outcome line per operation at info, V2 one debug line per backend call. TRACE lies below the tiers and is not counted.
- A Delete request carries only an ID, so the ownership guard of Delete is the mark: a resource without our mark is never destroyed.

## Outcomes

Every rule of a run has exactly one outcome:
Pass (the provider obeyed it), Fail (the provider broke it), Error (the harness or environment broke),
Skipped (a fixture hook the rule needs is missing; the reason names it) or NotApplicable (the declared profile makes it moot; the reason names the axis).
Skipped and NotApplicable never count as passes.

## Where rules are checked

A rule holds at every location. Where a rule's text names no location, the suite checks it at the first location,
and for the rules whose check works at one location (CRE-IDEMPOTENT, CRE-RESUME, CRE-ADOPT-GUARD, CRE-QUOTA, CRE-BACKEND-NOTFOUND, CRE-SECRET, DEL-IDEMPOTENT, DEL-RESUME, DEL-PARTIAL, DEL-OWNERSHIP, GET-STATE, GET-BUSY, LST-MARKED-ONLY, LST-EMPTY-UID, LST-UNREADABLE)
at every location in turn on a fake backend, and at one location picked by the rule's seed on a real backend (recorded in the evidence).
"#;

/// The whole document.
pub fn render() -> String {
    let mut out = String::from(PREAMBLE);
    axes_section(&mut out);
    hooks_section(&mut out);
    rules_section(&mut out);
    out
}

/// The profile axes, their illegal combinations and what each value promises.
fn axes_section(out: &mut String) {
    out.push_str("\n## Profile axes\n\nA provider declares exactly one value per axis.\nBehaviour-checked axes change what rules expect, and the suite flags a declaration that behaviour contradicts; declared-only axes are reported, not checked.\n\n| axis | values (first = kvm2's) | class | rules whose expectation it changes |\n|---|---|---|---|\n");
    for a in Axis::ALL {
        let rules: Vec<_> = CATALOGUE
            .iter()
            .filter(|r| r.axes.contains(a) || r.gate.is_some_and(|(g, _)| g == *a))
            .map(|r| r.id)
            .collect();
        let class = match a.class() {
            AxisClass::BehaviourChecked => "behaviour-checked",
            AxisClass::DeclaredOnly => "declared-only",
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {class} | {} |",
            a.key(),
            a.values().join(" \\| "),
            if rules.is_empty() {
                "—".into()
            } else {
                rules.join(", ")
            }
        );
    }
    out.push_str("\nIllegal combinations are rejected when a profile is built: `create-return=early` with `provisioning-state=create-blocks` (an early Create leaves provisioning to Get), `create-return=blocking` with `provisioning-state=get-reports` (a Create that returns once Running leaves Get nothing to report as Provisioning, so no check could tell it from `create-blocks`), and `created-at=written-at-create` with `gc-mark=name-prefix` (a name prefix has nowhere to write a time).\n");
    out.push_str("\n### What each value promises\n\nEach rule below says what each value of the axes it names changes in its expectation. Each value that promises a behaviour has a mutant of the template provider that declares it and breaks the promise; the template's kill matrix checks that the suite catches each one (its axis coverage table names the rules that do).\n\n| axis | value | promise | proved by (template mutant) |\n|---|---|---|---|\n");
    for m in MEANINGS {
        let proof = if m.proved_by.is_empty() {
            "—".to_owned()
        } else {
            m.proved_by
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {proof} |",
            m.axis.key(),
            m.value,
            m.promise
        );
    }
}

/// Which rules each fixture hook enables.
fn hooks_section(out: &mut String) {
    out.push_str("\n## Fixture hooks\n\nA provider author writes one fixture. Each optional hook enables the rules that need it; without it they are Skipped.\n\n| hook | rules |\n|---|---|\n");
    for h in Hook::ALL {
        let rules: Vec<_> = CATALOGUE
            .iter()
            .filter(|r| r.hooks.contains(&h))
            .map(|r| r.id)
            .collect();
        let _ = writeln!(out, "| {h} | {} |", rules.join(", "));
    }
}

/// Every rule by area, with its clauses and the mutants that break each.
fn rules_section(out: &mut String) {
    out.push_str("\n## Rules\n\nUnder each rule, its clauses in its own words, each with the template provider's mutants that break it (the template's kill matrix shows the suite fails the rule under every one), or why the clause is not checked.\n");
    for area in Area::ALL {
        let _ = writeln!(out, "\n### {} ({}-*)\n", area.title(), area.prefix());
        for r in CATALOGUE.iter().filter(|r| r.area == area) {
            let _ = writeln!(out, "#### {} — {}\n\n{}\n", r.id, r.title, r.text);
            let mut facts = Vec::new();
            if let Some((a, vs)) = r.gate {
                let when: Vec<String> = vs.iter().map(|v| format!("`{a}={v}`")).collect();
                facts.push(format!("applies when {}", when.join(" or ")));
            }
            if !r.axes.is_empty() {
                facts.push(format!(
                    "expectation depends on {}",
                    r.axes
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !r.hooks.is_empty() {
                facts.push(format!(
                    "hooks: {}",
                    r.hooks
                        .iter()
                        .map(|h| h.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            for n in r.needs {
                facts.push(match n {
                    Need::Checker => "needs a Checker".into(),
                    Need::TwoLocations => "needs two locations".into(),
                });
            }
            let _ = writeln!(
                out,
                "Trial: `{}`{}\n",
                r.trial_name(),
                if facts.is_empty() {
                    String::new()
                } else {
                    format!("; {}.", facts.join("; "))
                }
            );
            for e in of_rule(r.id) {
                let _ = writeln!(out, "- `{}={}`: {}", e.axis.key(), e.value, e.expects);
            }
            if of_rule(r.id).next().is_some() {
                out.push('\n');
            }
            out.push_str("| clause | proof |\n|---|---|\n");
            for c in clauses::of_rule(r.id) {
                let proof = match c.proof {
                    Proof::Mutants(m) => format!(
                        "broken by {}",
                        m.iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Proof::NotChecked(why) => format!("not checked: {why}"),
                };
                let _ = writeln!(out, "| {} | {proof} |", c.text.replace('|', "\\|"));
            }
            out.push('\n');
        }
    }
}
