//! The run as it goes, as JSON lines (`--events FILE|-`): one [`StreamEvent`] a line,
//! for a CI system or an editor that cannot wait for the report. The shape is
//! versioned by [`EVENTS_SCHEMA_VERSION`] and described by the JSON Schema committed
//! at `conformance/schema/events.schema.json` ([`EVENTS_SCHEMA`]).
//!
//! Events carry no payload: no cloud-init data, no evidence, no log lines; every line
//! is blanked of payload tokens before it is written all the same. Faults and sweeps
//! are told when the rule that injected or swept them finishes.

use std::io::Write;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::outcome::{Event, Outcome, Report, RuleResult, Summary, Verdict, Violation};
use super::shard::ShardInfo;
use crate::profile::Profile;

/// The version of the event stream's format.
pub const EVENTS_SCHEMA_VERSION: &str = "1.0.0";

/// The JSON Schema of one line of the stream, as committed in `conformance/schema/`.
pub const EVENTS_SCHEMA: &str = include_str!("../../schema/events.schema.json");

/// One line of the stream. `t_ms` is the time since the run started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The run started.
    RunStarted {
        /// [`EVENTS_SCHEMA_VERSION`].
        schema_version: String,
        /// Milliseconds since the run started.
        t_ms: u64,
        /// The run's ID, as the report records it.
        run_id: String,
        /// The provider's configured name.
        provider: String,
        /// The provider's version.
        provider_version: String,
        /// The run's seed.
        seed: u64,
        /// The declared profile.
        profile: Profile,
        /// The `--rules` patterns; `None` for every rule.
        selection: Option<Vec<String>>,
        /// The shard, when the run is one.
        shard: Option<ShardInfo>,
    },
    /// A rule's check started.
    RuleStarted {
        /// Milliseconds since the run started.
        t_ms: u64,
        /// The rule's ID.
        rule: String,
    },
    /// A fault the rule's check injected, and whether it fired.
    Fault {
        /// Milliseconds since the run started.
        t_ms: u64,
        /// The rule that injected it.
        rule: String,
        /// The location it applied to; `None` for every location.
        location: Option<String>,
        /// When it was to fire.
        trigger: String,
        /// What it did.
        kind: String,
        /// Whether it fired.
        fired: bool,
    },
    /// What the sweep after a rule's check removed.
    Sweep {
        /// Milliseconds since the run started.
        t_ms: u64,
        /// The rule whose leftovers these were.
        rule: String,
        /// What was removed.
        removed: String,
    },
    /// A rule finished (or was decided without running).
    RuleFinished {
        /// Milliseconds since the run started.
        t_ms: u64,
        /// The rule's ID.
        rule: String,
        /// Its outcome.
        outcome: Outcome,
        /// Wall time of its check, in milliseconds.
        duration_ms: f64,
        /// Why, for every outcome but Pass.
        reason: Option<String>,
        /// Every violation (Fail only).
        violations: Vec<Violation>,
    },
    /// The run finished.
    RunFinished {
        /// Milliseconds since the run started.
        t_ms: u64,
        /// The run's verdict.
        verdict: Verdict,
        /// Outcome counts.
        summary: Summary,
        /// Why the run stopped early (`--max-fail`), if it did.
        stopped_early: Option<String>,
    },
}

/// Writes the stream to a file or stdout, a line per event, flushed as it goes. A
/// failed write is reported once and the stream stops; the run goes on.
pub struct EventWriter {
    out: Option<Box<dyn Write + Send>>,
    started: Instant,
}

impl EventWriter {
    /// A writer to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> EventWriter {
        EventWriter {
            out: Some(out),
            started: Instant::now(),
        }
    }

    /// A writer to `path`, or to stdout for `-`.
    pub fn open(path: &std::path::Path) -> std::io::Result<EventWriter> {
        if path.as_os_str() == "-" {
            return Ok(EventWriter::new(Box::new(std::io::stdout())));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::File::create(path)?;
        Ok(EventWriter::new(Box::new(std::io::LineWriter::new(file))))
    }

    fn t_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn put(&mut self, e: &StreamEvent) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let line = serde_json::to_string(e).expect("an event always serialises");
        let line = super::secrets::redact(&line);
        let written = writeln!(out, "{line}").and_then(|()| out.flush());
        if let Err(e) = written {
            eprintln!("warning: failed to write the event stream: {e}; it stops here");
            self.out = None;
        }
    }

    /// Writes what the runner's `e` tells; a run's end is written by
    /// [`EventWriter::finished`], once the verdict is final.
    pub fn event(&mut self, e: &Event) {
        let t_ms = self.t_ms();
        match e {
            Event::RunStarted(info) => self.put(&StreamEvent::RunStarted {
                schema_version: EVENTS_SCHEMA_VERSION.into(),
                t_ms,
                run_id: info.run_id.clone(),
                provider: info.provider.clone(),
                provider_version: info.provider_version.clone(),
                seed: info.seed,
                profile: info.profile,
                selection: info.options.rules.clone(),
                shard: info.options.shard.clone(),
            }),
            Event::CheckStarted { id } => self.put(&StreamEvent::RuleStarted {
                t_ms,
                rule: id.clone(),
            }),
            Event::CheckFinished(r) => self.finished_rule(t_ms, r),
            Event::RunFinished { .. } => {}
        }
    }

    fn finished_rule(&mut self, t_ms: u64, r: &RuleResult) {
        for f in &r.faults {
            self.put(&StreamEvent::Fault {
                t_ms,
                rule: r.id.clone(),
                location: f.location.clone(),
                trigger: f.trigger.clone(),
                kind: f.kind.clone(),
                fired: f.fired,
            });
        }
        for line in super::runner::swept_by(r) {
            let removed = line
                .split_once(": ")
                .map_or(line.clone(), |(_, what)| what.to_owned());
            self.put(&StreamEvent::Sweep {
                t_ms,
                rule: r.id.clone(),
                removed,
            });
        }
        self.put(&StreamEvent::RuleFinished {
            t_ms,
            rule: r.id.clone(),
            outcome: r.outcome,
            duration_ms: (r.duration.as_secs_f64() * 1e6).round() / 1e3,
            reason: r.reason.clone(),
            violations: r.violations.clone(),
        });
    }

    /// Writes the run's end with its final verdict.
    pub fn finished(&mut self, report: &Report) {
        let t_ms = self.t_ms();
        self.put(&StreamEvent::RunFinished {
            t_ms,
            verdict: report.verdict,
            summary: report.summary.clone(),
            stopped_early: report.stopped_early.clone(),
        });
    }
}
