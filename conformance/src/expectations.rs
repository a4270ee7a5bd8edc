//! What each value of a behaviour-checked axis promises, and what it changes in the
//! expectation of each rule whose catalogue entry names the axis: the tables the
//! contract document renders (a test keeps them complete).

use crate::profile::Axis;

/// What a provider promises by declaring `value` on `axis`.
pub struct Meaning {
    /// The axis.
    pub axis: Axis,
    /// One of its values.
    pub value: &'static str,
    /// What the value promises, or that it promises nothing.
    pub promise: &'static str,
    /// The template provider's mutants that declare the value and break its
    /// promise (`fakes/template/src/mutants.rs`; its kill matrix checks that each
    /// exists and is killed, and that every promising value has one).
    pub proved_by: &'static [&'static str],
}

impl Meaning {
    /// Whether the value promises a behaviour the suite can check.
    pub fn promises(&self) -> bool {
        !self.promise.starts_with("Promises nothing")
    }
}

/// What `value` on `axis` makes rule `rule` expect.
pub struct Expectation {
    /// The rule's ID.
    pub rule: &'static str,
    /// The axis.
    pub axis: Axis,
    /// One of its values.
    pub value: &'static str,
    /// The expectation under that value (or why the rule does not apply).
    pub expects: &'static str,
}

macro_rules! meanings {
    ($($axis:ident $value:literal => $promise:literal, [$($m:literal),*];)*) => {
        /// Every value of every behaviour-checked axis.
        pub const MEANINGS: &[Meaning] = &[
            $(Meaning { axis: Axis::$axis, value: $value, promise: $promise, proved_by: &[$($m),*] },)*
        ];
    };
}

macro_rules! expectations {
    ($($rule:literal $axis:ident $value:literal => $expects:literal;)*) => {
        /// Every value of every axis a rule names (its `axes` and its gate).
        pub const EXPECTATIONS: &[Expectation] = &[
            $(Expectation { rule: $rule, axis: Axis::$axis, value: $value, expects: $expects },)*
        ];
    };
}

meanings! {
    CreateReturn "blocking" => "Create returns once the instance is Running.", ["blocking-declares-early"];
    CreateReturn "early" => "Create returns once the instance exists; Get reports Provisioning until it runs.", ["early-declares-blocking"];
    ProvisioningState "create-blocks" => "Provisioning happens inside Create (only with create-return=blocking).", ["blocking-declares-early"];
    ProvisioningState "get-reports" => "Get reports Provisioning while the instance boots (only with create-return=early).", ["early-declares-blocking"];
    ChildSpans "span-decorator" => "Every backend call gets a child span of the operation's span.", ["declares-span-decorator-no-spans", "no-call-spans", "call-spans-detached"];
    ChildSpans "none" => "Promises nothing about spans below the operation.", [];
    QuotaMode "detected" => "Create checks capacity before it creates anything and fails with QuotaExceeded naming what is short.", ["declares-quota-detected-no-precheck", "no-quota-precheck"];
    QuotaMode "backend-reported" => "The backend refuses what does not fit, and Create surfaces that refusal as QuotaExceeded with the backend's figures.", ["backend-quota-refusal-is-transient"];
    QuotaMode "none" => "Promises nothing about capacity.", [];
    Credentials "mounted-files" => "Credentials are files re-read on every new connection: a rotation needs no restart.", ["credentials-read-once"];
    Credentials "env" => "Credentials come from environment variables read when the provider is constructed: a rotation reaches a provider constructed after it.", ["declares-env-restart-keeps-old"];
    Credentials "inline" => "Credentials are written in the configuration: a rotation reaches a provider constructed after it.", ["declares-inline-restart-keeps-old"];
    GcMark "written-metadata" => "uid, tag and created_at are metadata written on the primary resource with its definition, read per resource.", ["declares-metadata-behaves-name-prefix"];
    GcMark "backend-tags" => "uid, tag and created_at are the backend's own tags or labels on the resource.", ["declares-tags-behaves-name-prefix", "list-leaks-unmarked"];
    GcMark "name-prefix" => "The mark is a prefix of the resource's backend name carrying tag and uid; a resource whose name lacks it is unmarked; it holds no time (created-at is backend-reported or none).", ["name-prefix-lists-unprefixed"];
    CreatedAt "written-at-create" => "created_at is written with the mark at create and never changes.", ["no-created-at"];
    CreatedAt "backend-reported" => "created_at is the time the backend reports for the resource.", ["declares-backend-created-at-reports-none"];
    CreatedAt "none" => "Instances carry no created_at.", ["declares-no-created-at-reports-one"];
    IpSource "discovered" => "The address is discovered from the running guest; Running means a usable IPv4 is known.", ["declares-discovered-reports-none"];
    IpSource "allocated" => "The address is allocated by the backend; Running means a usable IPv4 is known.", ["declares-allocated-reports-none", "link-local-is-usable"];
    IpSource "none" => "No address is reported; Running follows the backend's word that the guest booted.", ["declares-no-ip-reports-one"];
    ListPartial "fail-whole" => "A location that cannot be read fails the whole listing with Transient.", ["partial-declares-fail-whole"];
    ListPartial "partial" => "A location that cannot be read is named in `unreachable`, and the others are listed within the caller's deadline.", ["fail-whole-declares-partial", "partial-waits-for-every-site"];
    DeleteReturn "waits" => "Delete returns once the instance and its parts are gone.", ["declares-delete-waits-returns-early"];
    DeleteReturn "early" => "Promises nothing beyond what every provider owes: Delete may return once the backend accepted the removal; Get reaches NotFound, and nothing is left, within the suite's settle time.", [];
    SecondaryResources "explicit" => "The provider deletes each secondary resource (disks, seed, firmware state).", ["delete-keeps-seed"];
    SecondaryResources "cascaded" => "The backend deletes the secondary resources with the instance.", ["declares-cascaded-backend-keeps-parts"];
    SecondaryResources "none" => "An instance has no resource but its primary one.", ["declares-no-secondary-has-parts"];
    Logging "tiered" => "V0 warnings and errors only, V1 one outcome line per operation, V2 one line per backend call.", ["declares-tiered-logs-nothing", "logs-every-call-at-v0"];
    Logging "none" => "Promises nothing about log lines: the provider may write none.", [];
}

expectations! {
    "CRE-RETURN" CreateReturn "blocking" => "Get right after Create returns is Running with a usable address.";
    "CRE-RETURN" CreateReturn "early" => "Get right after Create may be Provisioning, and reaches Running within the settle time.";
    "CRE-RETURN" ProvisioningState "create-blocks" => "As create-return=blocking (the two are declared together).";
    "CRE-RETURN" ProvisioningState "get-reports" => "As create-return=early (the two are declared together).";
    "CRE-QUOTA" QuotaMode "detected" => "Too little capacity makes Create fail with QuotaExceeded naming what is short, before anything is created; with one byte less than the need it names free the same Create is refused again, with exactly that need free it succeeds.";
    "CRE-QUOTA" QuotaMode "backend-reported" => "Too little capacity makes Create fail with QuotaExceeded carrying the backend's figures (needed > available); a Delete then leaves nothing of what was made.";
    "CRE-QUOTA" QuotaMode "none" => "Not applicable: the provider promises nothing about capacity.";
    "CRE-QUOTA" DeleteReturn "waits" => "With quota=backend-reported, Get is NotFound right after the Delete of what the refused Create made.";
    "CRE-QUOTA" DeleteReturn "early" => "With quota=backend-reported, Get reaches NotFound within the settle time after the Delete of what the refused Create made.";
    "CRE-SECRET" Logging "tiered" => "The payload appears in no log line, span or error, and Create's own log lines must have been seen (else the check could not look).";
    "CRE-SECRET" Logging "none" => "The payload appears in no span or error; no log line is expected.";
    "CRE-SECRET" QuotaMode "detected" => "Create's refusal for want of room is among the paths probed: its error and what it logs carry no payload.";
    "CRE-SECRET" QuotaMode "backend-reported" => "Create's refusal for want of room is among the paths probed: its error and what it logs carry no payload.";
    "CRE-SECRET" QuotaMode "none" => "No refusal for want of room is probed: nothing promises one.";
    "CRE-MARK" CreatedAt "written-at-create" => "created_at is a time during the Create call, and the same on the next Get.";
    "CRE-MARK" CreatedAt "backend-reported" => "created_at is a time no later than the end of the Create call, and the same on the next Get.";
    "CRE-MARK" CreatedAt "none" => "created_at is absent.";
    "GET-AFTER-DELETE" DeleteReturn "waits" => "Get right after Delete returned is NotFound.";
    "GET-AFTER-DELETE" DeleteReturn "early" => "Get reaches NotFound within the settle time after Delete returned.";
    "GET-STATE" IpSource "discovered" => "Running carries a usable IPv4; a guest reporting only unusable addresses is Provisioning.";
    "GET-STATE" IpSource "allocated" => "Running carries a usable IPv4; a guest reporting only unusable addresses is Provisioning.";
    "GET-STATE" IpSource "none" => "Running carries no address.";
    "GET-DURING-DELETE" DeleteReturn "waits" => "Gets overlapping a Delete return the instance or NotFound, never another error; once Delete returned, NotFound.";
    "GET-DURING-DELETE" DeleteReturn "early" => "Gets overlapping a Delete return the instance or NotFound, never another error; NotFound within the settle time after Delete returned.";
    "DEL-IDEMPOTENT" DeleteReturn "waits" => "A second Delete succeeds, and Get is NotFound right after the first.";
    "DEL-IDEMPOTENT" DeleteReturn "early" => "A second Delete succeeds, and Get reaches NotFound within the settle time.";
    "DEL-COMPLETE" DeleteReturn "waits" => "The judgement is made as soon as Delete returned.";
    "DEL-COMPLETE" DeleteReturn "early" => "The judgement is made once Get reached NotFound, within the settle time.";
    "DEL-RUNNING" DeleteReturn "waits" => "Get right after Delete of a Running instance is NotFound, and nothing is left.";
    "DEL-RUNNING" DeleteReturn "early" => "Get reaches NotFound within the settle time after Delete of a Running instance, and nothing is left.";
    "DEL-PARTIAL" DeleteReturn "waits" => "Delete of an instance missing parts succeeds, and Get right after is NotFound.";
    "DEL-PARTIAL" DeleteReturn "early" => "Delete of an instance missing parts succeeds, and Get reaches NotFound within the settle time.";
    "DEL-PARTIAL" SecondaryResources "explicit" => "Parts removed by another party while Delete runs: Delete succeeds and nothing of the instance is left.";
    "DEL-PARTIAL" SecondaryResources "cascaded" => "Parts removed by another party while Delete runs: Delete succeeds; nothing is left but the parts of a primary that other party removed without its backend's cascade.";
    "DEL-PARTIAL" SecondaryResources "none" => "The primary removed by another party while Delete runs: Delete succeeds and nothing is left.";
    "DEL-CONCURRENT" DeleteReturn "waits" => "Every concurrent Delete succeeds, and Get right after is NotFound.";
    "DEL-CONCURRENT" DeleteReturn "early" => "Every concurrent Delete succeeds, and Get reaches NotFound within the settle time.";
    "DEL-COMPLETE" SecondaryResources "explicit" => "The instance had secondary resources; none is left once Delete returned (and settled).";
    "DEL-COMPLETE" SecondaryResources "cascaded" => "The instance had secondary resources; none is left once Delete returned (and settled): the backend took them.";
    "DEL-COMPLETE" SecondaryResources "none" => "The instance has no secondary resource; its primary is gone once Delete returned (and settled).";
    "DEL-RESUME" DeleteReturn "waits" => "After the next Delete, Get is NotFound at once and nothing is left.";
    "DEL-RESUME" DeleteReturn "early" => "After the next Delete, Get reaches NotFound and nothing is left within the settle time.";
    "LST-PARTIAL" ListPartial "fail-whole" => "One unreadable location fails the listing with Transient.";
    "LST-PARTIAL" ListPartial "partial" => "One unreadable location is named in `unreachable` with a reason; the others are listed, within the caller's deadline.";
    "LST-UNREADABLE" GcMark "written-metadata" => "A marked resource whose mark cannot be read, that vanishes while it is read, or whose per-resource read is refused, is skipped.";
    "LST-UNREADABLE" GcMark "backend-tags" => "A marked resource whose tags cannot be read, that vanishes while they are read, or whose per-resource read is refused, is skipped.";
    "LST-UNREADABLE" GcMark "name-prefix" => "Not applicable: the mark is read with the name, by the listing itself.";
    "GEN-CANCEL" ListPartial "fail-whole" => "A listing cut off by its deadline fails with Transient.";
    "GEN-CANCEL" ListPartial "partial" => "A listing cut off by its deadline fails with Transient or returns the locations read so far, naming the others.";
    "GEN-LOGGING" Logging "tiered" => "The tiers hold for every operation and Check, succeeding, failing or finding nothing: nothing at V0 on success and nothing below warning, one outcome line at V1, one more per backend call at V2.";
    "GEN-LOGGING" Logging "none" => "Not applicable: the provider writes no log line.";
    "GEN-SPANS" ChildSpans "span-decorator" => "Every backend call runs in a child span of its operation's span.";
    "GEN-SPANS" ChildSpans "none" => "Not applicable: the provider promises no child spans.";
    "GEN-ROTATION" Credentials "mounted-files" => "After rotation and a dropped connection, the running provider succeeds over a new connection, without restart.";
    "GEN-ROTATION" Credentials "env" => "After rotation, a provider constructed again succeeds over a new connection.";
    "GEN-ROTATION" Credentials "inline" => "After rotation, a provider constructed again succeeds over a new connection.";
    "GEN-MODEL" DeleteReturn "waits" => "A deleted instance is absent from the next Get and listing.";
    "GEN-MODEL" DeleteReturn "early" => "A deleted instance may still appear in Get and listings until it is gone, then never again.";
}

/// The expectations of `rule`, in table order.
pub fn of_rule(rule: &str) -> impl Iterator<Item = &'static Expectation> + '_ {
    EXPECTATIONS.iter().filter(move |e| e.rule == rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::AxisClass;
    use crate::rules::CATALOGUE;

    #[test]
    fn every_value_of_every_behaviour_checked_axis_has_a_meaning() {
        for a in Axis::ALL
            .iter()
            .filter(|a| a.class() == AxisClass::BehaviourChecked)
        {
            for v in a.values() {
                let n = MEANINGS
                    .iter()
                    .filter(|m| m.axis == *a && m.value == *v)
                    .count();
                assert_eq!(n, 1, "{a}={v} has {n} meanings");
            }
        }
        for m in MEANINGS {
            assert!(m.axis.values().contains(&m.value), "{}={}", m.axis, m.value);
            assert_eq!(
                m.promises(),
                !m.proved_by.is_empty(),
                "{}={}: a value that promises names the mutants that prove it, and only then",
                m.axis,
                m.value
            );
        }
    }

    #[test]
    fn every_rule_states_every_value_of_the_axes_it_names_and_no_other() {
        for r in CATALOGUE {
            let mut named: Vec<Axis> = r.axes.to_vec();
            if let Some((g, _)) = r.gate
                && !named.contains(&g)
            {
                named.push(g);
            }
            for a in &named {
                for v in a.values() {
                    let n = of_rule(r.id)
                        .filter(|e| e.axis == *a && e.value == *v)
                        .count();
                    assert_eq!(n, 1, "{} under {a}={v}: {n} expectations", r.id);
                }
            }
            for e in of_rule(r.id) {
                assert!(named.contains(&e.axis), "{} does not name {}", r.id, e.axis);
            }
        }
        for e in EXPECTATIONS {
            assert!(
                CATALOGUE.iter().any(|r| r.id == e.rule),
                "unknown rule {}",
                e.rule
            );
        }
    }

    #[test]
    fn a_gate_and_the_expectations_agree_on_what_is_not_applicable() {
        for r in CATALOGUE {
            if let Some((g, values)) = r.gate {
                for e in of_rule(r.id).filter(|e| e.axis == g) {
                    let na = e.expects.starts_with("Not applicable");
                    assert_eq!(
                        na,
                        !values.contains(&e.value),
                        "{} under {g}={}",
                        r.id,
                        e.value
                    );
                }
            }
        }
    }
}
