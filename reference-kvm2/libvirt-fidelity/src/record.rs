//! Recording what each step of a script observed, normalising what
//! legitimately differs between two hosts, and comparing two recordings.
//!
//! A step's value is rendered to text by the script; the recorder keeps it
//! raw and normalises at the end, once it has learned the host's names (pool
//! directory, hostname), so that steps recorded before a name was known are
//! normalised too.

use std::fmt;

use libvirt_wire::Procedure;

/// What one step observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The call succeeded; its value, rendered.
    Value(String),
    /// libvirt answered with an error.
    Error {
        /// `VIR_ERR_*` name and number.
        code: String,
        /// `VIR_FROM_*` name and number.
        domain: String,
        /// The message (compared, but a difference is only a note).
        message: String,
    },
    /// The call failed below libvirt (transport, protocol, deadline).
    Failed(String),
    /// The step could not run because an earlier one failed.
    Skipped(String),
}

impl Outcome {
    /// Whether two outcomes agree, ignoring error messages.
    pub fn agrees(&self, other: &Outcome) -> bool {
        match (self, other) {
            (
                Outcome::Error {
                    code: c1,
                    domain: d1,
                    ..
                },
                Outcome::Error {
                    code: c2,
                    domain: d2,
                    ..
                },
            ) => c1 == c2 && d1 == d2,
            (a, b) => a == b,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Value(v) => write!(f, "ok {v}"),
            Outcome::Error {
                code,
                domain,
                message,
            } => write!(f, "error {code} {domain} {message:?}"),
            Outcome::Failed(e) => write!(f, "failed: {e}"),
            Outcome::Skipped(why) => write!(f, "skipped: {why}"),
        }
    }
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The sequence the step belongs to.
    pub sequence: String,
    /// The step's label, unique within its sequence.
    pub label: String,
    /// The procedure the step calls (or a pseudo name for local checks).
    pub procedure: String,
    /// What it observed.
    pub outcome: Outcome,
    /// Detail that may legitimately differ (formatting, version-dependent
    /// output): compared, but a difference is only a note.
    pub detail: Option<String>,
}

impl Step {
    /// `sequence / label (PROCEDURE)`.
    pub fn title(&self) -> String {
        format!("{} / {} ({})", self.sequence, self.label, self.procedure)
    }
}

/// Replaces host-specific text with placeholders.
#[derive(Debug, Clone, Default)]
pub struct Normaliser {
    subs: Vec<(String, String)>,
}

impl Normaliser {
    /// Replaces `from` with `to` (longer texts are replaced first).
    pub fn replace(&mut self, from: impl Into<String>, to: impl Into<String>) {
        let from = from.into();
        if !from.is_empty() && !self.subs.iter().any(|(f, _)| *f == from) {
            self.subs.push((from, to.into()));
            self.subs.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
        }
    }

    /// Applies every replacement, then turns any other UUID into `<uuid>`.
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (from, to) in &self.subs {
            out = out.replace(from.as_str(), to);
        }
        mask_uuids(&out)
    }
}

/// Replaces every hyphenated UUID (8-4-4-4-12 hex digits) with `<uuid>`.
pub fn mask_uuids(text: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let b = text.as_bytes();
    let is_uuid_at = |i: usize| {
        let mut j = i;
        for (n, len) in SHAPE.iter().enumerate() {
            if n > 0 {
                if b.get(j) != Some(&b'-') {
                    return false;
                }
                j += 1;
            }
            for _ in 0..*len {
                if !b.get(j).is_some_and(u8::is_ascii_hexdigit) {
                    return false;
                }
                j += 1;
            }
        }
        !b.get(j).is_some_and(u8::is_ascii_hexdigit)
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !b[i - 1].is_ascii_hexdigit();
        if boundary && is_uuid_at(i) {
            out.push_str("<uuid>");
            i += 36;
        } else {
            let ch = text[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Collects the steps of one run on one side.
#[derive(Debug, Default)]
pub struct Recorder {
    sequence: String,
    steps: Vec<Step>,
    /// Host-specific names learned during the run.
    pub norm: Normaliser,
}

impl Recorder {
    /// An empty recording.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a new sequence; later steps belong to it.
    pub fn sequence(&mut self, name: &str) {
        self.sequence = name.to_owned();
    }

    /// Records an outcome for a step.
    pub fn push(&mut self, label: &str, procedure: impl ToString, outcome: Outcome) {
        self.push_detailed(label, procedure, outcome, None);
    }

    /// Records an outcome with a detail that is compared only as a note.
    pub fn push_detailed(
        &mut self,
        label: &str,
        procedure: impl ToString,
        outcome: Outcome,
        detail: Option<String>,
    ) {
        let label = label.to_owned();
        debug_assert!(
            !self
                .steps
                .iter()
                .any(|s| s.sequence == self.sequence && s.label == label),
            "duplicate step {} / {label}",
            self.sequence
        );
        self.steps.push(Step {
            sequence: self.sequence.clone(),
            label,
            procedure: procedure.to_string(),
            outcome,
            detail,
        });
    }

    /// Records a call's result, rendering a success with `show`; returns the
    /// value on success.
    pub fn call<T>(
        &mut self,
        label: &str,
        procedure: Procedure,
        result: libvirt_rpc::Result<T>,
        show: impl FnOnce(&T) -> String,
    ) -> Option<T> {
        let outcome = match &result {
            Ok(v) => Outcome::Value(show(v)),
            Err(e) => error_outcome(e),
        };
        self.push(label, procedure, outcome);
        result.ok()
    }

    /// Like [`Recorder::call`], with `show` also giving a detail that is
    /// compared only as a note.
    pub fn call_detailed<T>(
        &mut self,
        label: &str,
        procedure: Procedure,
        result: libvirt_rpc::Result<T>,
        show: impl FnOnce(&T) -> (String, Option<String>),
    ) -> Option<T> {
        let (outcome, detail) = match &result {
            Ok(v) => {
                let (value, detail) = show(v);
                (Outcome::Value(value), detail)
            }
            Err(e) => (error_outcome(e), None),
        };
        self.push_detailed(label, procedure, outcome, detail);
        result.ok()
    }

    /// Records a step that could not run.
    pub fn skip(&mut self, label: &str, procedure: Procedure, why: &str) {
        self.push(label, procedure, Outcome::Skipped(why.to_owned()));
    }

    /// The steps so far, normalised with what the recorder learned.
    pub fn finish(&self) -> Vec<Step> {
        self.steps
            .iter()
            .map(|s| Step {
                outcome: match &s.outcome {
                    Outcome::Value(v) => Outcome::Value(self.norm.apply(v)),
                    Outcome::Error {
                        code,
                        domain,
                        message,
                    } => Outcome::Error {
                        code: code.clone(),
                        domain: domain.clone(),
                        message: self.norm.apply(message),
                    },
                    Outcome::Failed(e) => Outcome::Failed(self.norm.apply(e)),
                    other => other.clone(),
                },
                detail: s.detail.as_deref().map(|d| self.norm.apply(d)),
                ..s.clone()
            })
            .collect()
    }
}

/// The outcome of a failed call.
pub fn error_outcome(e: &libvirt_rpc::Error) -> Outcome {
    match e.as_remote() {
        Some(r) => Outcome::Error {
            code: format!(
                "{}({})",
                r.code.name().unwrap_or("VIR_ERR_?"),
                r.code.to_raw()
            ),
            domain: format!(
                "{}({})",
                r.domain.name().unwrap_or("VIR_FROM_?"),
                r.domain.to_raw()
            ),
            message: r.message().to_owned(),
        },
        None => Outcome::Failed(failure_class(e).to_owned()),
    }
}

/// What kind of non-libvirt failure this is; the text (EOF or reset, for
/// example) depends on timing and is not compared.
fn failure_class(e: &libvirt_rpc::Error) -> &'static str {
    if e.is_timeout() {
        "deadline exceeded"
    } else if e.is_protocol() {
        "protocol violation"
    } else if e.is_closed() {
        "connection closed"
    } else if e.is_encode() {
        "request not encodable"
    } else {
        "client-side failure"
    }
}

/// How two recordings differ at one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `sequence / label (PROCEDURE)`.
    pub step: String,
    /// What the first side (the fake) observed, if it ran the step.
    pub left: Option<Outcome>,
    /// What the second side (the real host) observed, if it ran the step.
    pub right: Option<Outcome>,
    /// The two details, when only they (or only the messages) differ.
    pub details: Option<(Option<String>, Option<String>)>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |o: &Option<Outcome>| {
            o.as_ref()
                .map_or("(no such step)".into(), Outcome::to_string)
        };
        write!(
            f,
            "{}\n    fake: {}\n    real: {}",
            self.step,
            show(&self.left),
            show(&self.right)
        )?;
        if let Some((l, r)) = &self.details
            && l != r
        {
            let d = |x: &Option<String>| x.clone().unwrap_or_else(|| "-".into());
            write!(f, "\n    fake detail: {}\n    real detail: {}", d(l), d(r))?;
        }
        Ok(())
    }
}

/// The comparison of two recordings.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// Steps whose outcomes disagree (value, error code or domain, or
    /// presence): each one fails the comparison.
    pub differences: Vec<Difference>,
    /// Steps that agree except for the error message or the detail.
    pub notes: Vec<Difference>,
    /// Steps compared.
    pub compared: usize,
}

impl Comparison {
    /// Whether the recordings agree.
    pub fn agrees(&self) -> bool {
        self.differences.is_empty()
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} steps compared, {} differences, {} notes (message or detail only)",
            self.compared,
            self.differences.len(),
            self.notes.len()
        )?;
        for d in &self.differences {
            writeln!(f, "DIFFERENCE {d}")?;
        }
        for d in &self.notes {
            writeln!(f, "note (not a failure) {d}")?;
        }
        Ok(())
    }
}

/// Compares two recordings step by step, matching steps by sequence and
/// label, in the order of the first.
pub fn compare(left: &[Step], right: &[Step]) -> Comparison {
    let key = |s: &Step| (s.sequence.clone(), s.label.clone());
    let mut out = Comparison::default();
    for l in left {
        let r = right.iter().find(|r| key(r) == key(l));
        out.compared += 1;
        match r {
            None => out.differences.push(Difference {
                step: l.title(),
                left: Some(l.outcome.clone()),
                right: None,
                details: None,
            }),
            Some(r) if !l.outcome.agrees(&r.outcome) => out.differences.push(Difference {
                step: l.title(),
                left: Some(l.outcome.clone()),
                right: Some(r.outcome.clone()),
                details: Some((l.detail.clone(), r.detail.clone())),
            }),
            Some(r) if l.outcome != r.outcome || l.detail != r.detail => {
                out.notes.push(Difference {
                    step: l.title(),
                    left: Some(l.outcome.clone()),
                    right: Some(r.outcome.clone()),
                    details: Some((l.detail.clone(), r.detail.clone())),
                })
            }
            Some(_) => {}
        }
    }
    for r in right {
        if !left.iter().any(|l| key(l) == key(r)) {
            out.compared += 1;
            out.differences.push(Difference {
                step: r.title(),
                left: None,
                right: Some(r.outcome.clone()),
                details: None,
            });
        }
    }
    out
}

/// A table of every step, side by side, marking differences.
pub fn side_by_side(left: &[Step], right: &[Step]) -> String {
    let mut out = String::new();
    for l in left {
        let r = right
            .iter()
            .find(|r| r.sequence == l.sequence && r.label == l.label);
        let mark = match r {
            Some(r) if l.outcome == r.outcome && l.detail == r.detail => "  ",
            Some(r) if l.outcome.agrees(&r.outcome) => "~ ",
            _ => "! ",
        };
        out.push_str(&format!("{mark}{}\n    fake: {}\n", l.title(), l.outcome));
        if let Some(r) = r
            && r.outcome != l.outcome
        {
            out.push_str(&format!("    real: {}\n", r.outcome));
        }
        if let Some(r) = r
            && r.detail != l.detail
        {
            out.push_str(&format!(
                "    fake detail: {}\n    real detail: {}\n",
                l.detail.as_deref().unwrap_or("-"),
                r.detail.as_deref().unwrap_or("-")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_masked_only_when_whole() {
        assert_eq!(
            mask_uuids("no domain with matching uuid '535260dc-c8f5-4300-8334-20d1fe3c014f' (x)"),
            "no domain with matching uuid '<uuid>' (x)"
        );
        assert_eq!(
            mask_uuids("a535260dc-c8f5-4300-8334-20d1fe3c014f"),
            "a535260dc-c8f5-4300-8334-20d1fe3c014f"
        );
        assert_eq!(mask_uuids("é 1234"), "é 1234");
    }

    #[test]
    fn replacements_go_longest_first() {
        let mut n = Normaliser::default();
        n.replace("fid-1", "<run>");
        n.replace("/pool/fid-1", "<pool>/<run>");
        assert_eq!(
            n.apply("/pool/fid-1 and fid-1-vm"),
            "<pool>/<run> and <run>-vm"
        );
    }

    fn step(seq: &str, label: &str, outcome: Outcome) -> Step {
        Step {
            sequence: seq.into(),
            label: label.into(),
            procedure: "P".into(),
            outcome,
            detail: None,
        }
    }

    fn err(code: &str, message: &str) -> Outcome {
        Outcome::Error {
            code: code.into(),
            domain: "D".into(),
            message: message.into(),
        }
    }

    #[test]
    fn comparison_separates_messages_from_differences() {
        let left = vec![
            step("s", "a", Outcome::Value("1".into())),
            step("s", "b", err("C1", "m1")),
            step("s", "c", err("C1", "m")),
            step("s", "only-left", Outcome::Value("x".into())),
        ];
        let right = vec![
            step("s", "a", Outcome::Value("1".into())),
            step("s", "b", err("C1", "m2")),
            step("s", "c", err("C2", "m")),
            step("s", "only-right", Outcome::Value("x".into())),
        ];
        let c = compare(&left, &right);
        assert_eq!(c.compared, 5);
        assert_eq!(c.notes.len(), 1);
        let steps: Vec<_> = c.differences.iter().map(|d| d.step.as_str()).collect();
        assert_eq!(
            steps,
            ["s / c (P)", "s / only-left (P)", "s / only-right (P)"]
        );
        assert!(!c.agrees());
        assert!(compare(&left, &left).agrees());
    }
}
