//! The contract document's clause table is true of the mutants: every mutant a
//! clause names exists and declares the clause's rule (so the kill matrix, which
//! fails unless a mutant fails exactly its declared rules, shows the rule catches
//! it), and every mutant proves a clause or a profile value, so none is kept for
//! nothing.

use std::collections::BTreeSet;

use conformance::clauses::{CLAUSES, Proof};
use conformance::expectations::MEANINGS;
use template_provider::mutants::{MUTANTS, SLOW_FIRST};

#[test]
fn every_mutant_a_clause_names_exists_and_declares_its_rule() {
    let mut wrong = Vec::new();
    for c in CLAUSES {
        let Proof::Mutants(names) = c.proof else {
            continue;
        };
        for n in names {
            match MUTANTS.iter().find(|m| m.name == *n) {
                None => wrong.push(format!("{}: no mutant {n}", c.rule)),
                Some(m) if !m.declared.contains(&c.rule) => wrong.push(format!(
                    "{}: {n} does not declare it (declares {:?})",
                    c.rule, m.declared
                )),
                Some(_) => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_mutant_proves_a_clause_or_a_profile_value() {
    let named: BTreeSet<&str> = CLAUSES
        .iter()
        .filter_map(|c| match c.proof {
            Proof::Mutants(m) => Some(m.iter().copied()),
            Proof::NotChecked(_) => None,
        })
        .flatten()
        .chain(MEANINGS.iter().flat_map(|m| m.proved_by.iter().copied()))
        .collect();
    let idle: Vec<&str> = MUTANTS
        .iter()
        .map(|m| m.name)
        .filter(|n| !named.contains(n))
        .collect();
    assert!(
        idle.is_empty(),
        "mutants that prove no clause and no profile value: {idle:?}"
    );
    let (proved, open): (Vec<&conformance::clauses::Clause>, Vec<_>) = CLAUSES
        .iter()
        .partition(|c| matches!(c.proof, Proof::Mutants(_)));
    println!(
        "{} clauses: {} broken by a mutant, {} not checked ({})",
        CLAUSES.len(),
        proved.len(),
        open.len(),
        open.iter()
            .map(|c| format!("{}: {:?}", c.rule, c.text))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

#[test]
fn the_slow_mutants_the_matrices_start_first_exist() {
    for name in SLOW_FIRST {
        assert!(
            MUTANTS.iter().any(|m| m.name == *name),
            "SLOW_FIRST names {name}, which is no mutant"
        );
    }
}
