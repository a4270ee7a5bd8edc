//! Every normative clause of every rule's text, with its proof: the template
//! provider's mutants that break that clause (each declares the rule, and the
//! template's kill matrix shows the suite fails the rule under it), or why the
//! clause is not checked. The contract document renders the table under each
//! rule; tests keep it complete (every sentence of every rule holds a clause,
//! every clause is the rule's own words) and the template's tests keep it true
//! (every named mutant exists and declares the rule).

/// What shows that the suite checks a clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// The template mutants that break this clause and are caught by the rule.
    Mutants(&'static [&'static str]),
    /// The clause is not checked; the text says why.
    NotChecked(&'static str),
}

/// One normative clause of a rule.
#[derive(Clone, Copy, Debug)]
pub struct Clause {
    /// The rule's ID.
    pub rule: &'static str,
    /// The clause, in the rule's own words (a part of its text).
    pub text: &'static str,
    /// What proves the suite checks it.
    pub proof: Proof,
}

/// The clauses of `rule`, in table order.
pub fn of_rule(rule: &str) -> impl Iterator<Item = &'static Clause> + '_ {
    CLAUSES.iter().filter(move |c| c.rule == rule)
}

macro_rules! clauses {
    ($($rule:literal { $($text:literal => $how:ident $what:tt;)* })*) => {
        /// Every clause of every rule, by rule in catalogue order.
        pub static CLAUSES: &[Clause] = &[
            $($(Clause { rule: $rule, text: $text, proof: clauses!(@proof $how $what) },)*)*
        ];
    };
    (@proof mutants [$($m:literal),*]) => { Proof::Mutants(&[$($m),*]) };
    (@proof not_checked $why:literal) => { Proof::NotChecked($why) };
}

clauses! {
    "CRE-IDEMPOTENT" {
        "Repeating Create with the same request returns the same ID" => mutants ["repeat-create-is-transient"];
        "creates no further backend resource" => mutants ["repeat-create-adds-a-volume"];
        "An existing instance of that name whose recorded uid equals the request's, or is empty, is the same instance" => not_checked "not by this rule's check beyond the plain repeat: CRE-ADOPT-GUARD plants a marked resource with an empty uid and catches empty-uid-is-foreign, which breaks this clause";
        "nothing about it is changed" => mutants ["create-reapplies-cloud-init"];
    }
    "CRE-RESUME" {
        "A Create interrupted after any backend step, by an error, a lost reply, a dropped future or the death of the process, fails with Transient" => mutants ["create-transient-is-permanent"];
        "or returns Ok having made exactly one instance that Get and the inventory agree on" => mutants ["create-swallows-backend-errors"];
        "it is completed by the next Create of the same request (by a fresh provider after a death)" => mutants ["create-does-not-resume", "retries-start-blindly"];
        "Nothing leaks and nothing is made twice" => mutants ["resume-makes-another-seed"];
        "once the interrupted attempt has written the instance's mark, the completed instance keeps its uid, tag and created_at" => mutants ["resume-restamps-created-at"];
    }
    "CRE-RETURN" {
        "With create-return=blocking, Create returns only once the instance is Running" => mutants ["blocking-declares-early"];
        "a Get right after it reports Running" => mutants ["get-lags-after-create"];
        "With create-return=early, Create returns while the instance still boots" => mutants ["early-declares-blocking"];
        "Get reports Provisioning, then Running" => mutants ["booting-is-running"];
        "A provider whose behaviour contradicts its declaration fails." => mutants ["blocking-declares-early", "early-declares-blocking"];
    }
    "CRE-PLACEMENT" {
        "A request whose placement the configuration does not map fails with Permanent" => mutants ["unknown-placement-is-transient"];
        "nothing is created" => mutants ["unknown-placement-creates-at-the-first"];
    }
    "CRE-ADOPT-GUARD" {
        "An existing resource of the requested name that is not ours (it carries no mark, or a non-empty uid other than the request's) makes Create fail with Permanent" => mutants ["adopts-unmarked", "adopts-foreign-uid"];
        "the resource is left untouched" => mutants ["guard-stops-the-resource-first"];
        "A marked resource with an empty uid is the same instance: its ID is returned and it is not changed." => mutants ["empty-uid-is-foreign"];
    }
    "CRE-QUOTA" {
        "A Create that does not fit in the location's free capacity fails with QuotaExceeded naming what is short, how much is available and how much is needed" => mutants ["quota-without-figures"];
        "with quota=detected before anything is created" => mutants ["no-quota-precheck", "declares-quota-detected-no-precheck"];
        "with quota=backend-reported as the backend refused" => mutants ["backend-quota-refusal-is-transient"];
        "after which a Delete leaves nothing of what was made" => mutants ["backend-quota-delete-keeps-seed"];
        "Every one of several such Creates running at once as a location's first fails so, whatever work they share." => mutants ["waiting-creates-get-quota-as-transient"];
        "With quota=detected the need it names is what it needs: with one byte less free the same Create is refused again, with exactly that much free it succeeds." => mutants ["quota-refuses-an-exact-fit", "quota-names-only-the-disk", "quota-names-more-than-it-needs"];
    }
    "CRE-BACKEND-NOTFOUND" {
        "When a backend call inside Create reports that something is missing (a base volume vanished, say)" => mutants ["create-surfaces-backend-not-found"];
        "or a part of the instance is removed out of band between Create's steps, Create fails with Transient or recovers; it never returns NotFound" => mutants ["vanished-part-is-not-found"];
        "A backend's Permanent answer to any of Create's calls surfaces as Permanent unless Create recovers" => mutants ["create-permanent-is-transient"];
        "those only a location's first Create makes (a dial, an image fetch) included" => mutants ["dial-refusal-is-transient"];
        "an authentication that fails because access was revoked surfaces as Permanent too" => mutants ["create-auth-failure-is-transient"];
    }
    "CRE-SECRET" {
        "The cloud-init payload never appears in log lines at any verbosity" => mutants ["logs-cloud-init-at-debug", "warns-cloud-init-on-quota"];
        "in span names or fields" => mutants ["span-carries-cloud-init"];
        "in error messages or their sources" => mutants ["error-carries-cloud-init", "foreign-refusal-source-carries-cloud-init"];
        "or in reports" => not_checked "a provider writes no report; the suite does, blanks every payload in whatever it writes or prints, and its own tests scan every report format and the run's output for them";
        "Every payload the suite hands the provider, in any rule, is looked for wherever it could show up; one that shows up while a rule runs fails that rule." => mutants ["warns-cloud-init-on-quota", "foreign-refusal-source-carries-cloud-init"];
    }
    "CRE-INVALID" {
        "A request whose name, uid or tag is empty, too long, or contains XML or path metacharacters fails with Permanent" => mutants ["skips-uid-validation"];
        "nothing is created" => mutants ["invalid-uid-creates-then-refuses"];
    }
    "CRE-MARK" {
        "The created instance reports the request's tag and uid" => mutants ["get-reports-no-uid"];
        "(unless created-at=none) a creation time" => mutants ["no-created-at", "declares-backend-created-at-reports-none", "declares-no-created-at-reports-one"];
        "taken during the Create call (written-at-create) or reported by the backend" => mutants ["created-at-an-hour-early"];
    }
    "CRE-CONCURRENT" {
        "Several Creates of the same request running at once all return the same ID" => mutants ["create-without-lock"];
        "one instance exists afterwards" => mutants ["create-without-lock"];
        "Creates of different requests running at once as a location's first all succeed" => mutants ["first-creates-do-not-wait"];
        "what their instances share is made once." => not_checked "checked through the inventory (kvm2's first Creates share the image they download), but the template's one shared resource, its base image, exists before any Create, so no template mutant makes it twice";
    }
    "GET-AFTER-DELETE" {
        "With delete-return=waits, Get returns NotFound as soon as Delete has returned." => mutants ["declares-delete-waits-returns-early", "get-not-found-is-transient"];
        "With delete-return=early, Get returns NotFound within the suite's settle time." => mutants ["declares-early-never-finishes"];
    }
    "GET-DURING-DELETE" {
        "While a Delete is in flight, Get returns the instance or NotFound, never another error kind." => mutants ["get-busy-while-locked"];
    }
    "GET-BUSY" {
        "When the backend is busy, hangs past the deadline, drops the connection or cannot be reached, Get fails with Transient, never with NotFound." => mutants ["get-dropped-connection-is-not-found"];
    }
    "GET-STATE" {
        "A Running instance has a usable IPv4 address, neither loopback nor link-local (unless ip-source=none)." => mutants ["link-local-is-usable", "declares-allocated-reports-none", "declares-discovered-reports-none", "declares-no-ip-reports-one"];
        "A running instance without one is Provisioning" => mutants ["link-local-is-usable"];
        "as is one whose address lookup fails" => mutants ["failed-address-lookup-is-transient"];
        "A stopped or paused instance is Stopped." => mutants ["paused-is-provisioning"];
    }
    "GET-MALFORMED" {
        "Get of a malformed ID fails with Permanent." => mutants ["malformed-get-is-not-found"];
        "Get of any string whatever returns Permanent or NotFound and never panics." => mutants ["get-panics-on-a-percent-sign"];
    }
    "GET-UNCONFIGURED" {
        "Get of a well-formed ID naming a location the configuration does not have fails with Permanent." => mutants ["unconfigured-get-is-not-found"];
    }
    "GET-STATELESS" {
        "A new provider instance over the same backend reports the same name, uid, tag and created_at for an instance" => mutants ["created-at-in-memory"];
        "all state lives in the backend" => mutants ["created-at-in-memory"];
    }
    "DEL-MALFORMED" {
        "Delete of a malformed ID fails with Permanent" => mutants ["malformed-delete-is-ok"];
        "never panics" => mutants ["delete-panics-on-a-percent-sign"];
    }
    "DEL-IDEMPOTENT" {
        "Deleting an instance twice succeeds both times" => mutants ["repeat-delete-is-not-found"];
        "deleting a well-formed ID that was never created succeeds" => mutants ["repeat-delete-is-not-found"];
    }
    "DEL-COMPLETE" {
        "Once Delete has returned (and settled, with delete-return=early)" => mutants ["declares-delete-waits-returns-early"];
        "no resource of the instance is left: no disk, seed or firmware state, whether the provider deletes them (secondary-resources=explicit)" => mutants ["delete-keeps-seed"];
        "or the backend does (cascaded)" => mutants ["declares-cascaded-backend-keeps-parts"];
        "with secondary-resources=none the instance has no resource but its primary one" => mutants ["declares-no-secondary-has-parts"];
        "Nothing else goes with it: another instance's resources and the shared ones stay." => mutants ["delete-takes-the-previous-disk"];
        "This holds at every location." => mutants ["delete-keeps-seed-at-second-site"];
    }
    "DEL-RUNNING" {
        "Delete of a Running instance stops it and deletes it" => mutants ["delete-without-stop"];
        "Get then returns NotFound" => mutants ["get-not-found-is-transient"];
    }
    "DEL-PARTIAL" {
        "Delete succeeds when parts of the instance are already gone: its secondary resources, the primary resource, or even their container." => mutants ["delete-requires-every-part"];
        "It succeeds too when another party removes its secondary resources, its primary resource or their container while it runs, between its backend calls" => mutants ["delete-refuses-a-vanished-record", "delete-refuses-a-vanished-container"];
        "and leaves nothing of what it removes itself (with secondary-resources=cascaded, parts whose primary another party removed are left to that party's backend)." => mutants ["delete-done-without-primary"];
    }
    "DEL-UNCONFIGURED" {
        "Delete of a well-formed ID naming a location the configuration does not have succeeds" => mutants ["unconfigured-delete-is-permanent"];
        "does nothing" => not_checked "the suite has no view of a location the configuration lacks, and the check plants nothing of the same name at the configured ones (it would cost a Create, a boot on a real host, for a defect no provider has shown)";
    }
    "DEL-CONCURRENT" {
        "Several Deletes of one instance running at once all succeed" => mutants ["delete-without-lock"];
        "nothing of the instance is left" => mutants ["delete-keeps-seed"];
    }
    "DEL-RESUME" {
        "A Delete interrupted after any backend step, by an error, a lost reply, a dropped future or the death of the process, fails with Transient" => mutants ["delete-transient-is-permanent"];
        "or returns Ok having left nothing of the instance (under delete-return=early, within the settle time)" => mutants ["delete-swallows-backend-errors"];
        "the next Delete (by a fresh provider after a death) succeeds" => mutants ["half-deleted-is-permanent"];
        "the instance is gone and nothing of it is left" => mutants ["delete-done-without-primary", "get-not-found-is-transient"];
    }
    "DEL-OWNERSHIP" {
        "Delete never destroys or changes a resource that does not carry our mark" => mutants ["delete-ignores-ownership"];
        "it either refuses with Permanent or leaves it alone and succeeds" => mutants ["unmarked-delete-is-transient"];
    }
    "LST-MARKED-ONLY" {
        "ListByTag returns the instances carrying the tag" => mutants ["list-returns-nothing"];
        "its own and those another party marked (listed with the uid their mark carries)" => mutants ["list-knows-only-its-own"];
        "excludes unmarked resources" => mutants ["list-leaks-unmarked", "name-prefix-lists-unprefixed"];
        "instances with other tags" => mutants ["list-ignores-the-tag"];
    }
    "LST-EMPTY-UID" {
        "A resource carrying the tag but an empty uid is listed" => mutants ["list-skips-empty-uid"];
        "with an empty uid" => mutants ["list-fills-an-empty-uid"];
    }
    "LST-ORDER" {
        "Instances of different locations are listed in configuration order of their locations" => mutants ["list-reversed"];
        "repeated listings return the same sequence" => mutants ["list-order-alternates"];
    }
    "LST-PARTIAL" {
        "With list-partial=fail-whole, one unreachable location fails the call with Transient." => mutants ["fail-whole-declares-partial"];
        "With list-partial=partial, the call returns before its deadline" => mutants ["partial-waits-for-every-site"];
        "with the reachable locations' instances and the unreachable location named" => mutants ["partial-names-no-location"];
        "for a refused location and for a black-holed one alike" => mutants ["partial-declares-fail-whole"];
        "and whichever location it is, the first included; a whole-call Transient is a violation" => mutants ["partial-fails-on-the-first-site"];
        "With every location reachable, nothing is named unreachable." => mutants ["names-a-reachable-location"];
        "A location named unreachable comes with a reason that is not empty." => mutants ["partial-names-no-reason"];
    }
    "LST-UNREADABLE" {
        "A marked resource that cannot be read is skipped; the call still succeeds and lists the others." => mutants ["list-unreadable-is-fatal", "declares-tags-behaves-name-prefix", "declares-metadata-behaves-name-prefix"];
        "Likewise a resource that vanishes while the listing reads it (a not-found answer to any of its per-resource reads) is skipped, not fatal" => mutants ["list-vanished-is-fatal"];
        "and so is one whose per-resource read is refused (a permanent error)." => mutants ["list-refused-read-is-fatal"];
        "A per-resource read that fails transiently (a busy backend) or never answers never drops its resource silently: the listing fails with Transient, names the location unreachable, or lists the resource." => mutants ["list-skips-a-busy-read"];
    }
    "LST-AGREES" {
        "Every listed instance agrees with Get on id, name, uid, tag and created_at." => mutants ["list-truncates-created-at"];
        "Its state agrees too" => mutants ["list-says-stopped"];
        "except that a listing may show Provisioning where Get shows Running, and it may omit the address" => not_checked "a freedom, not a duty: nothing a provider does can break it (the check tolerates both, and the template uses neither)";
    }
    "GEN-CANCEL" {
        "A call whose deadline passes or whose token fires returns Transient promptly, even when the backend hangs" => mutants ["cancel-is-permanent", "overstays-its-deadline"];
        "(with list-partial=partial a listing may instead return in time with the hung location named unreachable)" => mutants ["partial-declares-fail-whole"];
        "a call dropped after any backend step leaves nothing behind that the next call cannot converge from" => mutants ["dropped-create-keeps-its-lock"];
    }
    "GEN-ERROR-NAME" {
        "Every error names the configured provider" => mutants ["error-without-provider-name", "name-is-not-the-configured-one"];
        "the operation it came from" => mutants ["error-names-another-operation"];
        "says what went wrong in a message that is not empty" => mutants ["errors-without-message"];
    }
    "GEN-LOGGING" {
        "At V0 a successful operation logs nothing" => mutants ["logs-every-call-at-v0"];
        "and no operation logs below warning level" => mutants ["failures-logged-at-info"];
        "at V1 a successful one logs exactly one line at info level and nothing finer" => mutants ["v1-logs-calls-at-debug"];
        "and a failed one or one that finds nothing logs at least one line, at most one of them at info level, and nothing finer" => mutants ["failures-log-no-outcome"];
        "at V2 every operation logs at least one debug line per backend call" => mutants ["v2-logs-no-call-lines", "declares-tiered-logs-nothing"];
        "Check is an operation like the others." => mutants ["check-logs-its-outcome-at-v0"];
    }
    "GEN-SPANS" {
        "Each operation opens exactly one span under the caller's span" => mutants ["opens-two-operation-spans"];
        "every backend call it makes has its own span below that one" => mutants ["no-call-spans", "call-spans-detached", "declares-span-decorator-no-spans"];
        "named after the call" => mutants ["call-spans-misnamed"];
    }
    "GEN-NO-IO-AT-NEW" {
        "Building a provider makes no backend call and opens no connection, even when a location is unreachable." => mutants ["dials-at-new"];
    }
    "GEN-ROTATION" {
        "Rotated credentials are used: with credentials=mounted-files, credentials replaced on disk are used by the next connection the provider opens, without a restart" => mutants ["credentials-read-once"];
        "with credentials=env or inline, a provider constructed after the rotation uses the new ones" => mutants ["declares-env-restart-keeps-old", "declares-inline-restart-keeps-old"];
    }
    "GEN-PARALLEL" {
        "An operation on one name does not wait for a stalled operation on another name: there is no global lock." => mutants ["global-lock"];
    }
    "GEN-MODEL" {
        "Random sequences of Create, Get, Delete, ListByTag and restart over a small pool of names, with seeded transient faults and lost replies (the backend acts, the reply is lost with the connection), agree with a reference model: repeats are idempotent" => mutants ["repeat-delete-is-not-found"];
        "NotFound only follows a Delete or a Create that never completed" => mutants ["get-dropped-connection-is-not-found"];
        "listings hold exactly the live instances" => mutants ["list-returns-nothing"];
        "only the allowed error kinds occur" => mutants ["create-transient-is-permanent", "get-not-found-is-transient"];
        "nothing is left after the final Deletes" => mutants ["delete-keeps-seed", "delete-requires-every-part"];
    }
    "CHK-ORDER" {
        "Check returns exactly one entry per configured location" => mutants ["check-adds-an-aggregate-entry"];
        "in configuration order" => mutants ["check-reversed"];
    }
    "CHK-CONCURRENT" {
        "A slow or black-holed location does not delay the others: Check's duration is that of the slowest location, not the sum." => mutants ["check-sequential"];
    }
    "CHK-DEADLINE" {
        "When locations do not answer, Check returns promptly once its deadline passes" => mutants ["check-overstays-its-deadline"];
        "with one not-ready entry per location and reason Timeout" => mutants ["check-timeout-is-unreachable", "check-adds-an-aggregate-entry"];
    }
    "CHK-REASONS" {
        "Every reason is one of Ready, Unreachable, AuthFailed, HostKeyRejected, Timeout, CredentialsUnavailable or a reason the provider declares" => mutants ["check-invents-a-reason"];
        "ready entries say Ready and others do not" => mutants ["check-ready-with-a-reason"];
        "Each cause gives its own reason at the location it breaks, and the other locations stay Ready" => mutants ["check-says-unreachable-for-everything"];
        "a refused location Unreachable" => mutants ["check-refused-is-timeout"];
        "a black-holed one Timeout" => mutants ["check-timeout-is-unreachable"];
        "one that takes the connection and never answers a call Timeout" => mutants ["check-timeout-is-unreachable"];
        "one that takes the connection and refuses every call for good (a permanent error, as an access-control denial) AuthFailed" => mutants ["check-denied-is-unreachable"];
        "one that refuses any single one of Check's calls for good after the ones before it answered AuthFailed" => mutants ["check-late-refusal-is-container-missing"];
        "one that answers every call with a transient error (a busy backend) Unreachable or Timeout" => mutants ["check-busy-is-auth-failed"];
        "credentials revoked with nothing in their place AuthFailed" => mutants ["check-auth-is-unreachable"];
        "a host key other than the trusted one HostKeyRejected" => mutants ["check-host-key-is-auth-failed"];
        "a credential file that is not there CredentialsUnavailable" => mutants ["check-no-credentials-is-auth-failed"];
        "each reason the provider declares, as its fixture produces it" => mutants ["check-container-missing-is-unreachable"];
        "Once the cause is undone, the location is Ready again without a restart." => mutants ["credentials-read-once"];
        "A cause the fixture cannot produce is recorded as not checked." => not_checked "it binds the suite, not the provider: the suite's own tests run the rule with a fixture that lacks the hooks and expect the causes recorded as not checked";
        "With a location's container removed, whatever Check says of it is a shared reason or a declared one." => mutants ["check-declares-no-reasons"];
    }
    "CHK-ISOLATED" {
        "Check never uses or breaks the connections that operations use: it makes its backend calls on connections of its own" => mutants ["check-on-the-operations-connection"];
        "the operations' connection is still in use afterwards" => mutants ["check-closes-the-operations-connection"];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::CATALOGUE;

    /// A rule's text cut into sentences (at a full stop followed by a space or the end).
    fn sentences(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, _) in text.match_indices('.') {
            let next = text[i + 1..].chars().next();
            if next.is_none_or(|c| c == ' ') {
                out.push(text[start..=i].trim());
                start = i + 1;
            }
        }
        if !text[start..].trim().is_empty() {
            out.push(text[start..].trim());
        }
        out
    }

    #[test]
    fn every_clause_is_its_rules_own_words_in_order() {
        for c in CLAUSES {
            let r = CATALOGUE
                .iter()
                .find(|r| r.id == c.rule)
                .unwrap_or_else(|| panic!("unknown rule {}", c.rule));
            assert!(
                r.text.contains(c.text),
                "{}: {:?} is not in the rule's text",
                c.rule,
                c.text
            );
        }
        for r in CATALOGUE {
            let at: Vec<usize> = of_rule(r.id)
                .map(|c| r.text.find(c.text).unwrap())
                .collect();
            assert!(
                at.windows(2).all(|w| w[0] <= w[1]),
                "{}: clauses out of the text's order",
                r.id
            );
        }
    }

    #[test]
    fn every_sentence_of_every_rule_holds_a_clause() {
        for r in CATALOGUE {
            for s in sentences(r.text) {
                assert!(
                    of_rule(r.id).any(|c| s.contains(c.text) || c.text.contains(s)),
                    "{}: no clause in {s:?}",
                    r.id
                );
            }
        }
    }

    /// The words of a rule's text that no clause holds: only connectives may be left.
    #[test]
    fn the_clauses_cover_every_word_of_every_rule() {
        const CONNECTIVES: &[&str] = &["and", "or", "then", "too", "also"];
        let mut gaps = Vec::new();
        for r in CATALOGUE {
            let mut covered = vec![false; r.text.len()];
            for c in of_rule(r.id) {
                let at = r.text.find(c.text).unwrap_or(0);
                covered[at..at + c.text.len()].fill(true);
            }
            let left: String = r
                .text
                .char_indices()
                .map(|(i, ch)| if covered[i] { ' ' } else { ch })
                .collect();
            let words: Vec<&str> = left
                .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '=')
                .filter(|w| !w.is_empty() && !CONNECTIVES.contains(w))
                .collect();
            if !words.is_empty() {
                gaps.push(format!("{}: {words:?}", r.id));
            }
        }
        assert!(gaps.is_empty(), "words in no clause:\n{}", gaps.join("\n"));
    }

    #[test]
    fn every_proof_names_something() {
        for c in CLAUSES {
            match c.proof {
                Proof::Mutants(m) => assert!(!m.is_empty(), "{}: {:?}", c.rule, c.text),
                Proof::NotChecked(why) => assert!(why.len() > 20, "{}: {:?}", c.rule, c.text),
            }
        }
    }
}
