//! Log and span capture: a `tracing` layer that records every span and event the
//! process emits, with each event's span ancestry, so a check can ask what a
//! provider logged under one operation and whether a secret appeared anywhere.
//!
//! Spans get a process-unique sequence number (the subscriber's own IDs are reused
//! after a span closes). The suite marks its rule and operation spans with a
//! `cf_mark` field; [`Capture::find_mark`] finds them again.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// One recorded span.
#[derive(Clone, Debug)]
pub struct SpanRecord {
    /// Process-unique sequence number.
    pub seq: u64,
    /// The parent's sequence number.
    pub parent: Option<u64>,
    /// The span's name.
    pub name: String,
    /// Its fields as `name=value` text.
    pub fields: String,
}

/// One recorded event.
#[derive(Clone, Debug)]
pub struct EventRecord {
    /// Its level.
    pub level: Level,
    /// Its target.
    pub target: String,
    /// Message and fields as text.
    pub text: String,
    /// Sequence numbers of the spans it was emitted in, innermost first.
    pub scope: Vec<u64>,
}

#[derive(Default)]
struct Store {
    spans: Vec<SpanRecord>,
    events: Vec<EventRecord>,
}

/// The process-wide capture.
#[derive(Clone)]
pub struct Capture {
    store: Arc<Mutex<Store>>,
}

struct Seq(u64);

static NEXT: AtomicU64 = AtomicU64::new(1);
static GLOBAL: OnceLock<Option<Capture>> = OnceLock::new();

impl Capture {
    /// Installs the capture as the global subscriber on first use and returns it;
    /// `None` when another global subscriber was installed first.
    pub fn global() -> Option<Capture> {
        GLOBAL
            .get_or_init(|| {
                let cap = Capture {
                    store: Arc::default(),
                };
                let layer = CaptureLayer { cap: cap.clone() };
                let sub = tracing_subscriber::registry().with(layer);
                tracing::subscriber::set_global_default(sub)
                    .ok()
                    .map(|_| cap)
            })
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The sequence number of the span whose fields contain `cf_mark=<mark>`.
    pub fn find_mark(&self, mark: &str) -> Option<u64> {
        let needle = format!("cf_mark={mark:?}");
        self.lock()
            .spans
            .iter()
            .rev()
            .find(|s| s.fields.contains(&needle))
            .map(|s| s.seq)
    }

    /// Direct children of span `seq`.
    pub fn children(&self, seq: u64) -> Vec<SpanRecord> {
        self.lock()
            .spans
            .iter()
            .filter(|s| s.parent == Some(seq))
            .cloned()
            .collect()
    }

    /// Every span below `seq`, at any depth.
    pub fn descendants(&self, seq: u64) -> Vec<SpanRecord> {
        let store = self.lock();
        let mut set = std::collections::HashSet::from([seq]);
        let mut out = Vec::new();
        // Spans are recorded in creation order, so parents come before children.
        for s in &store.spans {
            if s.parent.is_some_and(|p| set.contains(&p)) {
                set.insert(s.seq);
                out.push(s.clone());
            }
        }
        out
    }

    /// Events emitted inside span `seq` or any span below it.
    pub fn events_under(&self, seq: u64) -> Vec<EventRecord> {
        self.lock()
            .events
            .iter()
            .filter(|e| e.scope.contains(&seq))
            .cloned()
            .collect()
    }

    /// Whether `needle` appears in any span name, span field or event captured so far.
    pub fn contains(&self, needle: &str) -> Option<String> {
        let store = self.lock();
        for s in &store.spans {
            if s.name.contains(needle) || s.fields.contains(needle) {
                return Some(format!("span {} {}", s.name, s.fields));
            }
        }
        for e in &store.events {
            if e.text.contains(needle) || e.target.contains(needle) {
                return Some(format!("{} event: {}", e.level, e.text));
            }
        }
        None
    }

    /// How many events have been captured in all.
    pub fn event_count(&self) -> usize {
        self.lock().events.len()
    }
}

struct CaptureLayer {
    cap: Capture,
}

#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, "{}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, "{}={value:?}", field.name());
        }
    }
}

impl<S> Layer<S> for CaptureLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let seq = NEXT.fetch_add(1, Ordering::Relaxed);
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Seq>().map(|s| s.0));
        let mut text = Text::default();
        attrs.record(&mut text);
        span.extensions_mut().insert(Seq(seq));
        self.cap.lock().spans.push(SpanRecord {
            seq,
            parent,
            name: attrs.metadata().name().to_owned(),
            fields: text.0,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let Some(seq) = span.extensions().get::<Seq>().map(|s| s.0) else {
            return;
        };
        let mut text = Text::default();
        values.record(&mut text);
        let mut store = self.cap.lock();
        if let Some(s) = store.spans.iter_mut().rev().find(|s| s.seq == seq) {
            s.fields.push(' ');
            s.fields.push_str(&text.0);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let scope = ctx
            .event_scope(event)
            .map(|sc| {
                sc.filter_map(|s| s.extensions().get::<Seq>().map(|q| q.0))
                    .collect()
            })
            .unwrap_or_default();
        self.cap.lock().events.push(EventRecord {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            text: text.0,
            scope,
        });
    }
}
