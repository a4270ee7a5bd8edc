//! Log and span capture: a `tracing` layer that records every span and event the
//! process emits, with each event's span ancestry, so a check can ask what a
//! provider logged under one operation and whether a secret appeared anywhere.
//!
//! Spans get a process-unique sequence number (the subscriber's own IDs are reused
//! after a span closes). The suite marks its rule and operation spans with a
//! `cf_mark` field; [`Capture::find_mark`] finds them again.
//!
//! A span's name is static in `tracing`, so spans re-created from another process's
//! telemetry share one callsite, [`REMOTE_SPAN`], and carry their real name in a
//! `name` field; the capture records that field as the span's name.

use std::collections::HashMap;
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
    /// When it was created.
    pub at: std::time::Instant,
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
    /// Its place in the order of every span and event the capture recorded (spans'
    /// sequence numbers count in the same order).
    pub order: u64,
    /// When it was emitted.
    pub at: std::time::Instant,
}

#[derive(Default)]
struct Store {
    spans: Vec<SpanRecord>,
    span_index: HashMap<u64, usize>,
    children: HashMap<u64, Vec<u64>>,
    marks: HashMap<String, u64>,
    events: Vec<EventRecord>,
    events_by_span: HashMap<u64, Vec<usize>>,
    /// Records that held a cloud-init payload, found as they were recorded.
    payloads: Vec<PayloadHit>,
}

/// A record that held a cloud-init payload: where it is, and whose payloads.
struct PayloadHit {
    /// Its index among the spans (`true`) or the events (`false`).
    span: bool,
    at: usize,
    /// The place, described without the text.
    place: String,
    /// The owners of the payloads it held.
    owners: Vec<String>,
}

/// A point in the capture; records made after it can be searched alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct Checkpoint {
    spans: usize,
    events: usize,
}

/// A layer that prints log lines, for [`Capture::global_with`].
pub type Printer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

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
        Capture::global_with(None)
    }

    /// [`Capture::global`], with `printer` beside the capture when this call installs
    /// it: a layer that prints what its own filter lets through, while the capture
    /// still records everything.
    pub fn global_with(printer: Option<Printer>) -> Option<Capture> {
        GLOBAL
            .get_or_init(|| {
                let cap = Capture {
                    store: Arc::default(),
                };
                let layer = CaptureLayer { cap: cap.clone() };
                let sub = tracing_subscriber::registry().with(printer).with(layer);
                tracing::subscriber::set_global_default(sub)
                    .ok()
                    .map(|_| cap)
            })
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The sequence number of the span created with the field `cf_mark = <mark>`.
    pub fn find_mark(&self, mark: &str) -> Option<u64> {
        self.lock().marks.get(mark).copied()
    }

    /// Direct children of span `seq`.
    pub fn children(&self, seq: u64) -> Vec<SpanRecord> {
        let store = self.lock();
        store
            .children
            .get(&seq)
            .into_iter()
            .flatten()
            .filter_map(|c| store.span_index.get(c).map(|i| store.spans[*i].clone()))
            .collect()
    }

    fn subtree(store: &Store, seq: u64) -> Vec<u64> {
        let mut out = vec![seq];
        let mut i = 0;
        while i < out.len() {
            if let Some(kids) = store.children.get(&out[i]) {
                out.extend(kids.iter().copied());
            }
            i += 1;
        }
        out
    }

    /// Every span below `seq`, at any depth.
    pub fn descendants(&self, seq: u64) -> Vec<SpanRecord> {
        let store = self.lock();
        Self::subtree(&store, seq)
            .into_iter()
            .skip(1)
            .filter_map(|c| store.span_index.get(&c).map(|i| store.spans[*i].clone()))
            .collect()
    }

    /// The span `seq`, if recorded.
    pub fn span(&self, seq: u64) -> Option<SpanRecord> {
        let store = self.lock();
        store.span_index.get(&seq).map(|i| store.spans[*i].clone())
    }

    /// Events emitted inside span `seq` or any span below it.
    pub fn events_under(&self, seq: u64) -> Vec<EventRecord> {
        let store = self.lock();
        let mut idx: Vec<usize> = Self::subtree(&store, seq)
            .iter()
            .filter_map(|s| store.events_by_span.get(s))
            .flatten()
            .copied()
            .collect();
        idx.sort_unstable();
        idx.into_iter().map(|i| store.events[i].clone()).collect()
    }

    /// The current end of the capture.
    pub fn checkpoint(&self) -> Checkpoint {
        let store = self.lock();
        Checkpoint {
            spans: store.spans.len(),
            events: store.events.len(),
        }
    }

    /// Where `needle` appears in a span name, span field or event recorded since `from`.
    pub fn contains_since(&self, from: Checkpoint, needle: &str) -> Option<String> {
        let store = self.lock();
        for s in store.spans.iter().skip(from.spans) {
            if s.name.contains(needle) || s.fields.contains(needle) {
                return Some(format!("span {} {}", s.name, s.fields));
            }
        }
        for e in store.events.iter().skip(from.events) {
            if e.text.contains(needle) || e.target.contains(needle) {
                return Some(format!("{} event: {}", e.level, e.text));
            }
        }
        None
    }

    /// Where the records made since `from` held a payload of `owner`'s, each place
    /// once and described without the text itself: the span's name, or the event's
    /// level and target (the provider's stderr lines are named as such). Payloads are
    /// found as records are made, so this reads only the records that held one.
    pub fn payload_places_since(&self, from: Checkpoint, owner: &str) -> Vec<String> {
        let store = self.lock();
        let mut out: Vec<String> = Vec::new();
        for h in &store.payloads {
            let after = if h.span {
                h.at >= from.spans
            } else {
                h.at >= from.events
            };
            if after && h.owners.iter().any(|o| o == owner) && !out.contains(&h.place) {
                out.push(h.place.clone());
            }
        }
        out
    }

    /// Where `needle` appears anywhere in the capture.
    pub fn contains(&self, needle: &str) -> Option<String> {
        self.contains_since(Checkpoint::default(), needle)
    }
}

struct CaptureLayer {
    cap: Capture,
}

/// The target of a provider process's stderr lines, recorded at TRACE outside any span.
pub const STDERR_TARGET: &str = "conformance::remote::stderr";

/// The callsite name of spans whose real name is their `name` field.
pub const REMOTE_SPAN: &str = "conformance.remote";

#[derive(Default)]
struct Text {
    text: String,
    mark: Option<String>,
    name: Option<String>,
}

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        if field.name() == "message" {
            let _ = write!(self.text, "{value:?}");
        } else {
            let _ = write!(self.text, "{}={value:?}", field.name());
        }
        if field.name() == "cf_mark" {
            self.mark = Some(format!("{value:?}").trim_matches('"').to_owned());
        }
        if field.name() == "name" {
            self.name = Some(format!("{value:?}"));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        if field.name() == "message" {
            self.text.push_str(value);
        } else {
            let _ = write!(self.text, "{}={value:?}", field.name());
        }
        if field.name() == "cf_mark" {
            self.mark = Some(value.to_owned());
        }
        if field.name() == "name" {
            self.name = Some(value.to_owned());
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
        let mut store = self.cap.lock();
        if let Some(mark) = text.mark.take() {
            store.marks.insert(mark, seq);
        }
        if let Some(p) = parent {
            store.children.entry(p).or_default().push(seq);
        }
        let at = store.spans.len();
        store.span_index.insert(seq, at);
        let name = match (attrs.metadata().name(), text.name) {
            (REMOTE_SPAN, Some(n)) => n,
            (n, _) => n.to_owned(),
        };
        if super::secrets::any_in(&name) || super::secrets::any_in(&text.text) {
            store.payloads.push(PayloadHit {
                span: true,
                at,
                place: format!("the fields of the span {name}"),
                owners: super::secrets::owners_in(&format!("{name} {}", text.text)),
            });
        }
        store.spans.push(SpanRecord {
            seq,
            parent,
            name,
            fields: text.text,
            at: std::time::Instant::now(),
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
        if let Some(i) = store.span_index.get(&seq).copied() {
            if super::secrets::any_in(&text.text) {
                let place = format!("the fields of the span {}", store.spans[i].name);
                store.payloads.push(PayloadHit {
                    span: true,
                    at: i,
                    place,
                    owners: super::secrets::owners_in(&text.text),
                });
            }
            store.spans[i].fields.push(' ');
            store.spans[i].fields.push_str(&text.text);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let order = NEXT.fetch_add(1, Ordering::Relaxed);
        let now = std::time::Instant::now();
        let mut text = Text::default();
        event.record(&mut text);
        let scope: Vec<u64> = ctx
            .event_scope(event)
            .map(|sc| {
                sc.filter_map(|s| s.extensions().get::<Seq>().map(|q| q.0))
                    .collect()
            })
            .unwrap_or_default();
        let target = event.metadata().target();
        let hit = super::secrets::any_in(&text.text).then(|| {
            let place = if target == STDERR_TARGET {
                "a line the provider wrote to stderr".to_owned()
            } else {
                format!("a {} log line of {target}", event.metadata().level())
            };
            (place, super::secrets::owners_in(&text.text))
        });
        let mut store = self.cap.lock();
        let at = store.events.len();
        if let Some(inner) = scope.first() {
            store.events_by_span.entry(*inner).or_default().push(at);
        }
        if let Some((place, owners)) = hit {
            store.payloads.push(PayloadHit {
                span: false,
                at,
                place,
                owners,
            });
        }
        store.events.push(EventRecord {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            text: text.text,
            scope,
            order,
            at: now,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_events_to_marked_spans_and_finds_needles() {
        let cap = Capture::global().expect("no other global subscriber in this test binary");
        let before = cap.checkpoint();
        let op = tracing::info_span!("conformance.op", cf_mark = %"t-op-1");
        op.in_scope(|| {
            let child = tracing::debug_span!("backend.Call", n = 1);
            child.in_scope(|| tracing::debug!(secret = "needle-42", "inside"));
            tracing::info!("done");
        });
        tracing::warn!("outside");
        let seq = cap.find_mark("t-op-1").expect("the marked span");
        let kids = cap.children(seq);
        assert_eq!(kids.len(), 1);
        assert_eq!(kids[0].name, "backend.Call");
        // A re-created remote span is named by its `name` field; other spans keep
        // their callsite name even when they have a `name` field.
        let remote = tracing::info_span!(parent: &op, REMOTE_SPAN, name = %"far.Create");
        let plain = tracing::info_span!(parent: &op, "near.create", name = %"web-1");
        drop((remote, plain));
        let names: Vec<String> = cap.children(seq).into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["backend.Call", "far.Create", "near.create"]);
        let evs = cap.events_under(seq);
        assert_eq!(evs.len(), 2, "{evs:?}");
        assert!(cap.contains_since(before, "needle-42").is_some());
        assert!(cap.contains_since(cap.checkpoint(), "needle-42").is_none());
    }
}
