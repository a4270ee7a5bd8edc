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
}
