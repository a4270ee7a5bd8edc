//! Rule tags: names for groups of rules that `--rules tag:NAME` and `--skip tag:NAME`
//! select. Most are derived from what the catalogue already says of a rule (each
//! fixture hook it needs, and its other needs); a few are declared here because the
//! catalogue cannot know them (`slow`, `destructive`).
//!
//! Patterns, as `--rules`, `--skip` and `CONFORMANCE_SKIP` take them: a rule ID, a
//! prefix ending in `*` (`CRE-*`), or `tag:NAME`.

use std::fmt::Write as _;

use crate::fixture::Hook;
use crate::rules::{CATALOGUE, Need, Rule};

/// A tag that is not derived from the catalogue, and the rules that carry it.
pub struct DeclaredTag {
    /// The tag's name.
    pub name: &'static str,
    /// What it means.
    pub meaning: &'static str,
    /// The rules that carry it.
    pub rules: &'static [&'static str],
}

/// Tags declared by hand.
pub static DECLARED: &[DeclaredTag] = &[
    DeclaredTag {
        name: "slow",
        meaning: "took a minute or more against the real libvirt hosts \
                  (reports/kvm2-local-libvirt); step-wise interruptions, cancellation and \
                  multi-location listings",
        rules: &[
            "CRE-RESUME",
            "CRE-BACKEND-NOTFOUND",
            "DEL-RESUME",
            "LST-ORDER",
            "LST-AGREES",
            "GEN-CANCEL",
        ],
    },
    DeclaredTag {
        name: "destructive",
        meaning: "changes the backend below the provider beyond the rule's own instances: \
                  removes parts of an instance out of band, or replaces the credentials \
                  a location is reached with",
        rules: &["DEL-PARTIAL", "GEN-ROTATION"],
    },
];

/// The tag a need gives its rules.
pub fn need_tag(need: Need) -> &'static str {
    match need {
        Need::Checker => "checker",
        Need::TwoLocations => "two-locations",
    }
}

/// Every tag of `rule`, derived ones (hooks, then needs) first, then declared ones.
pub fn tags_of(rule: &Rule) -> Vec<&'static str> {
    let mut tags: Vec<&'static str> = rule.hooks.iter().map(|h| h.as_str()).collect();
    tags.extend(rule.needs.iter().map(|n| need_tag(*n)));
    tags.extend(
        DECLARED
            .iter()
            .filter(|t| t.rules.contains(&rule.id))
            .map(|t| t.name),
    );
    tags
}

/// Every tag name there is, derived ones first, each once.
pub fn all_tags() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = Hook::ALL.iter().map(|h| h.as_str()).collect();
    all.extend([need_tag(Need::Checker), need_tag(Need::TwoLocations)]);
    all.extend(DECLARED.iter().map(|t| t.name));
    all
}

/// Whether `rule` matches `pattern`: an ID, a prefix ending in `*`, or `tag:NAME`.
pub fn matches(rule: &Rule, pattern: &str) -> bool {
    if let Some(tag) = pattern.strip_prefix("tag:") {
        return tags_of(rule).contains(&tag);
    }
    match pattern.strip_suffix('*') {
        Some(prefix) => rule.id.starts_with(prefix),
        None => rule.id == pattern,
    }
}

/// Checks a pattern against the catalogue: `Err` says why it selects nothing.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    if let Some(tag) = pattern.strip_prefix("tag:") {
        if !all_tags().contains(&tag) {
            return Err(format!(
                "no tag is named {tag:?} (tags: {})",
                all_tags().join(", ")
            ));
        }
        return Ok(());
    }
    if CATALOGUE.iter().any(|r| matches(r, pattern)) {
        Ok(())
    } else {
        Err(format!("no rule matches {pattern:?} (`--list` shows them)"))
    }
}

/// The first of `patterns` that `rule` matches.
pub fn first_match<'a>(rule: &Rule, patterns: &'a [String]) -> Option<&'a str> {
    patterns
        .iter()
        .map(String::as_str)
        .find(|p| matches(rule, p))
}

/// The tags as a Markdown section under a heading of `level` (`##`, `####`): what each
/// tag means and which rules carry it.
pub fn tags_markdown(level: &str) -> String {
    let mut out = format!("{level} Rule tags\n\n");
    out.push_str(
        "`--rules tag:NAME` selects the rules carrying a tag and `--skip tag:NAME` skips them.\n\
         Hook and need tags come from the catalogue; `slow` and `destructive` are declared.\n\n",
    );
    out.push_str("| Tag | Meaning | Rules |\n| --- | --- | --- |\n");
    for tag in all_tags() {
        let meaning = match DECLARED.iter().find(|t| t.name == tag) {
            Some(t) => t.meaning.split_whitespace().collect::<Vec<_>>().join(" "),
            None if Hook::ALL.iter().any(|h| h.as_str() == tag) => {
                format!("the check needs the fixture's {tag} hook")
            }
            None if tag == need_tag(Need::Checker) => {
                "the provider must have a Checker (without one the rule is not applicable)".into()
            }
            None => "the configuration must have two locations or more (else Skipped)".into(),
        };
        let rules: Vec<String> = CATALOGUE
            .iter()
            .filter(|r| tags_of(r).contains(&tag))
            .map(|r| format!("`{}`", r.id))
            .collect();
        let _ = writeln!(out, "| `{tag}` | {meaning} | {} |", rules.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::rule;

    #[test]
    fn tags_come_from_hooks_needs_and_declarations() {
        let quota = rule("CRE-QUOTA").unwrap();
        assert_eq!(tags_of(quota), ["capacity"]);
        let partial = rule("LST-PARTIAL").unwrap();
        assert_eq!(tags_of(partial), ["faults", "two-locations"]);
        let resume = rule("CRE-RESUME").unwrap();
        assert!(tags_of(resume).contains(&"slow"), "{:?}", tags_of(resume));
        assert!(tags_of(rule("GEN-ROTATION").unwrap()).contains(&"destructive"));
    }

    #[test]
    fn every_declared_tag_names_rules_of_the_catalogue_and_no_derived_name() {
        for t in DECLARED {
            for id in t.rules {
                assert!(rule(id).is_some(), "{}: {id}", t.name);
            }
            assert!(!Hook::ALL.iter().any(|h| h.as_str() == t.name));
        }
        let mut all = all_tags();
        all.sort();
        let n = all.len();
        all.dedup();
        assert_eq!(all.len(), n, "tag names are unique");
    }

    #[test]
    fn every_tag_selects_a_rule() {
        for tag in all_tags() {
            let pattern = format!("tag:{tag}");
            assert!(
                CATALOGUE.iter().any(|r| matches(r, &pattern)),
                "{tag} selects nothing"
            );
        }
    }

    #[test]
    fn patterns_take_ids_prefixes_and_tags() {
        let r = rule("CRE-QUOTA").unwrap();
        assert!(matches(r, "CRE-QUOTA") && matches(r, "CRE-*") && matches(r, "tag:capacity"));
        assert!(!matches(r, "CRE-QUOT") && !matches(r, "tag:faults"));
        assert!(
            check_pattern("tag:nope")
                .unwrap_err()
                .contains("two-locations")
        );
        assert!(check_pattern("NOPE-*").is_err());
        assert!(check_pattern("tag:slow").is_ok());
    }

    #[test]
    fn the_markdown_lists_every_tag() {
        let md = tags_markdown("##");
        assert!(md.starts_with("## Rule tags\n"));
        for tag in all_tags() {
            assert!(md.contains(&format!("| `{tag}` |")), "{tag}");
        }
    }

    /// The tag table in `docs/writing-a-provider.md` is the generated one;
    /// `UPDATE_DOCS=1` rewrites it.
    #[test]
    fn the_guide_shows_the_current_tags() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/writing-a-provider.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let (start, end) = (
            "<!-- rule tags: generated by conformance::suite::tags::tags_markdown; a test fails when stale -->\n",
            "<!-- end of rule tags -->",
        );
        let from = doc.find(start).expect("the start marker") + start.len();
        let to = doc.find(end).expect("the end marker");
        let want = tags_markdown("####");
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{want}{}", &doc[..from], &doc[to..]);
            std::fs::write(&path, updated).unwrap();
            return;
        }
        assert!(
            doc[from..to] == want,
            "the tag table in docs/writing-a-provider.md is stale; run `UPDATE_DOCS=1 cargo test -p conformance --features suite --lib tags`"
        );
    }
}
