//! The checks, one async function per rule, and the registry that maps rule IDs to them.

pub mod check;
pub mod create;
pub mod delete;
pub mod general;
pub mod get;
pub(crate) mod honesty;
pub mod list;
mod steps;

use super::cx::{CheckResult, Cx};
use crate::BoxFuture;

/// A check: runs against one rule's context.
pub type CheckFn = for<'a> fn(&'a Cx) -> BoxFuture<'a, CheckResult>;

/// The rules whose checks work at one location though the contract holds at each:
/// on a fake their check runs at every location in turn, on a real backend at one
/// picked by the rule's seed (each run there costs boots), recorded in the evidence.
pub const AT_EVERY_LOCATION: &[&str] = &[
    "CRE-IDEMPOTENT",
    "CRE-RESUME",
    "CRE-ADOPT-GUARD",
    "CRE-QUOTA",
    "CRE-BACKEND-NOTFOUND",
    "CRE-SECRET",
    "DEL-IDEMPOTENT",
    "DEL-RESUME",
    "DEL-PARTIAL",
    "DEL-OWNERSHIP",
    "GET-STATE",
    "GET-BUSY",
    "LST-MARKED-ONLY",
    "LST-EMPTY-UID",
    "LST-UNREADABLE",
];

/// Runs `check` at the locations its rule is checked at ([`AT_EVERY_LOCATION`]),
/// stopping at the first that ends it.
pub(crate) async fn at_its_locations(cx: &Cx, check: CheckFn) -> CheckResult {
    let n = cx.locations.len();
    let plan: Vec<usize> = if !AT_EVERY_LOCATION.contains(&cx.rule.id) || n < 2 {
        vec![0]
    } else if cx.real_backend {
        let at = (cx.seed % n as u64) as usize;
        cx.note(format!(
            "a real backend: checked at one location of {n}, {} (picked by the rule's seed)",
            cx.locations[at].name
        ));
        vec![at]
    } else {
        (0..n).collect()
    };
    let in_turn = plan.len() > 1;
    for (n, at) in plan.into_iter().enumerate() {
        if n > 0 {
            // What the last pass deleted may linger (delete-return=early): the next
            // pass starts once it is gone, as a fresh rule would.
            cx.settle_deletions().await;
        }
        cx.work_at(at, in_turn);
        if in_turn {
            cx.note(format!("at {}:", cx.loc0().name));
        }
        check(cx).await?;
    }
    Ok(())
}

macro_rules! registry {
    ($($id:literal => $f:path),* $(,)?) => {
        /// The check registered for a rule ID.
        pub fn check_for(id: &str) -> Option<CheckFn> {
            match id {
                $($id => Some(|cx| Box::pin($f(cx))),)*
                _ => None,
            }
        }

        /// Every rule ID that has a check.
        pub const REGISTERED: &[&str] = &[$($id),*];
    };
}

registry! {
    "CRE-IDEMPOTENT" => create::cre_idempotent,
    "CRE-RESUME" => create::cre_resume,
    "CRE-RETURN" => create::cre_return,
    "CRE-PLACEMENT" => create::cre_placement,
    "CRE-ADOPT-GUARD" => create::cre_adopt_guard,
    "CRE-QUOTA" => create::cre_quota,
    "CRE-BACKEND-NOTFOUND" => create::cre_backend_notfound,
    "CRE-SECRET" => create::cre_secret,
    "CRE-INVALID" => create::cre_invalid,
    "CRE-MARK" => create::cre_mark,
    "CRE-CONCURRENT" => create::cre_concurrent,
    "GET-AFTER-DELETE" => get::get_after_delete,
    "GET-DURING-DELETE" => get::get_during_delete,
    "GET-BUSY" => get::get_busy,
    "GET-STATE" => get::get_state,
    "GET-MALFORMED" => get::get_malformed,
    "GET-UNCONFIGURED" => get::get_unconfigured,
    "GET-STATELESS" => get::get_stateless,
    "DEL-MALFORMED" => delete::del_malformed,
    "DEL-IDEMPOTENT" => delete::del_idempotent,
    "DEL-COMPLETE" => delete::del_complete,
    "DEL-RUNNING" => delete::del_running,
    "DEL-PARTIAL" => delete::del_partial,
    "DEL-UNCONFIGURED" => delete::del_unconfigured,
    "DEL-CONCURRENT" => delete::del_concurrent,
    "DEL-RESUME" => delete::del_resume,
    "DEL-OWNERSHIP" => delete::del_ownership,
    "LST-MARKED-ONLY" => list::lst_marked_only,
    "LST-EMPTY-UID" => list::lst_empty_uid,
    "LST-ORDER" => list::lst_order,
    "LST-PARTIAL" => list::lst_partial,
    "LST-UNREADABLE" => list::lst_unreadable,
    "LST-AGREES" => list::lst_agrees,
    "GEN-CANCEL" => general::gen_cancel,
    "GEN-ERROR-NAME" => general::gen_error_name,
    "GEN-LOGGING" => general::gen_logging,
    "GEN-SPANS" => general::gen_spans,
    "GEN-NO-IO-AT-NEW" => general::gen_no_io_at_new,
    "GEN-ROTATION" => general::gen_rotation,
    "GEN-PARALLEL" => general::gen_parallel,
    "GEN-MODEL" => general::gen_model,
    "CHK-ORDER" => check::chk_order,
    "CHK-CONCURRENT" => check::chk_concurrent,
    "CHK-DEADLINE" => check::chk_deadline,
    "CHK-REASONS" => check::chk_reasons,
    "CHK-ISOLATED" => check::chk_isolated,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::CATALOGUE;

    #[test]
    fn every_rule_has_a_check_and_every_check_a_rule() {
        for r in CATALOGUE {
            assert!(check_for(r.id).is_some(), "{} has no check", r.id);
        }
        for id in REGISTERED {
            assert!(
                crate::rules::rule(id).is_some(),
                "check {id} names no catalogue rule"
            );
        }
        assert_eq!(REGISTERED.len(), CATALOGUE.len());
    }

    #[test]
    fn the_contract_document_names_exactly_the_rules_checked_at_every_location() {
        let doc = crate::contract_doc::render();
        let section = doc
            .split("## Where rules are checked")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .expect("the section is in the document");
        let mut named: Vec<&str> = CATALOGUE
            .iter()
            .map(|r| r.id)
            .filter(|id| section.contains(id))
            .collect();
        let mut listed = AT_EVERY_LOCATION.to_vec();
        named.sort_unstable();
        listed.sort_unstable();
        assert_eq!(named, listed);
    }
}
