//! The record of what reached the fake: one entry per call (procedure,
//! connection, time, injected fault) and one per dialled connection, so tests
//! can count backend calls and dials and tell connections apart.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use libvirt_wire::Procedure;

/// One call that reached the fake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// Position in the trace, from 0; it keeps counting when older entries
    /// are forgotten ([`Trace::clear_calls`], [`Trace::set_limit`]).
    pub seq: u64,
    /// The connection it came on.
    pub connection: u64,
    /// The procedure.
    pub procedure: Procedure,
    /// Wall-clock time it arrived.
    pub at: SystemTime,
    /// Time since the fake was created.
    pub since_start: Duration,
    /// The injected fault that hit it (`error(42)`, `delay`, `hang`, `drop`).
    pub fault: Option<String>,
}

/// One connection dialled to the fake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// Its id, unique within one fake, from 1.
    pub id: u64,
    /// Wall-clock time it was dialled.
    pub dialed_at: SystemTime,
    /// Whether it is closed.
    pub closed: bool,
    /// How many calls it carried.
    pub calls: u64,
}

#[derive(Debug)]
struct Log {
    started: Instant,
    calls: VecDeque<TraceEntry>,
    /// The `seq` of the first entry of `calls` (or of the next call).
    first_seq: u64,
    /// How many calls are kept at most; older ones are forgotten.
    limit: Option<usize>,
    /// Every connection dialled, in order: connection `id` is at `id - 1`.
    connections: Vec<ConnectionInfo>,
}

impl Log {
    /// The record of connection `id`, found by position rather than by a scan
    /// (the list grows with every connection ever dialled).
    fn connection_mut(&mut self, id: u64) -> Option<&mut ConnectionInfo> {
        let at = usize::try_from(id.checked_sub(1)?).ok()?;
        self.connections.get_mut(at).filter(|c| c.id == id)
    }
}

/// The trace of one fake; reached through [`crate::FakeLibvirt::trace`].
#[derive(Debug, Clone)]
pub struct Trace {
    inner: Arc<Mutex<Log>>,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            inner: Arc::new(Mutex::new(Log {
                started: Instant::now(),
                calls: VecDeque::new(),
                first_seq: 0,
                limit: None,
                connections: Vec::new(),
            })),
        }
    }
}

impl Trace {
    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.inner.lock().expect("trace poisoned")
    }

    pub(crate) fn dial(&self) -> u64 {
        let mut l = self.lock();
        let id = l.connections.len() as u64 + 1;
        l.connections.push(ConnectionInfo {
            id,
            dialed_at: SystemTime::now(),
            closed: false,
            calls: 0,
        });
        id
    }

    pub(crate) fn closed(&self, connection: u64) {
        if let Some(c) = self.lock().connection_mut(connection) {
            c.closed = true;
        }
    }

    pub(crate) fn record(&self, connection: u64, procedure: Procedure, fault: Option<String>) {
        let mut l = self.lock();
        let seq = l.first_seq + l.calls.len() as u64;
        let since_start = l.started.elapsed();
        if l.limit.is_some_and(|n| l.calls.len() >= n) && l.calls.pop_front().is_some() {
            l.first_seq += 1;
        }
        l.calls.push_back(TraceEntry {
            seq,
            connection,
            procedure,
            at: SystemTime::now(),
            since_start,
            fault,
        });
        if let Some(c) = l.connection_mut(connection) {
            c.calls += 1;
        }
    }

    /// Every call so far, in arrival order.
    pub fn calls(&self) -> Vec<TraceEntry> {
        self.lock().calls.iter().cloned().collect()
    }

    /// The calls from position `since` on (a mark taken with
    /// [`Trace::next_seq`]), and how many calls after `since` were already
    /// forgotten.
    pub fn calls_since(&self, since: u64) -> (Vec<TraceEntry>, u64) {
        let l = self.lock();
        let skip = since.saturating_sub(l.first_seq);
        let calls = l
            .calls
            .iter()
            .skip(usize::try_from(skip).unwrap_or(usize::MAX))
            .cloned()
            .collect();
        (calls, l.first_seq.saturating_sub(since))
    }

    /// The position the next call will take: a mark for
    /// [`Trace::calls_since`].
    pub fn next_seq(&self) -> u64 {
        let l = self.lock();
        l.first_seq + l.calls.len() as u64
    }

    /// Keeps at most `limit` calls, forgetting the oldest (`None`: all).
    pub fn set_limit(&self, limit: Option<usize>) {
        let mut l = self.lock();
        l.limit = limit;
        while limit.is_some_and(|n| l.calls.len() > n) && l.calls.pop_front().is_some() {
            l.first_seq += 1;
        }
    }

    /// Calls of one procedure so far.
    pub fn count(&self, procedure: Procedure) -> usize {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.procedure == procedure)
            .count()
    }

    /// Calls on one connection so far.
    pub fn calls_on(&self, connection: u64) -> Vec<TraceEntry> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.connection == connection)
            .cloned()
            .collect()
    }

    /// Every connection dialled so far.
    pub fn connections(&self) -> Vec<ConnectionInfo> {
        self.lock().connections.clone()
    }

    /// How many connections were dialled.
    pub fn dial_count(&self) -> u64 {
        self.lock().connections.len() as u64
    }

    /// Forgets every call recorded so far (positions keep counting).
    pub fn clear_calls(&self) {
        let mut l = self.lock();
        l.first_seq += l.calls.len() as u64;
        l.calls.clear();
    }
}
