//! `Connection`: the task that owns the byte stream. It writes what the
//! `Client` handles queue, reads packets, routes REPLY and STREAM packets by
//! serial to whoever waits for them, answers keepalive PINGs, sends its own
//! PINGs, and decides when the connection is dead.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::Stream;
use libvirt_wire::{
    ErrorCode, ErrorDomain, Header, KEEPALIVE_PING, KEEPALIVE_PONG, KEEPALIVE_PROGRAM, MessageType,
    Packet, Procedure, REMOTE_PROGRAM, REMOTE_VERSION, RemoteError, Status, encode_packet,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, Sleep};
use tokio_util::codec::FramedRead;
use tracing::{debug, trace};

use crate::codec::{CodecError, PacketCodec};
use crate::error::{Cause, Error, Kind, Result};

/// Packets read, or requests taken, per turn before yielding to the runtime.
const BUDGET: usize = 64;
/// Frames waiting for the transport before new requests stop being taken.
const OUTBOX_MAX: usize = 16;
/// Buffers handed to one vectored write, at most.
const WRITE_SLICES: usize = 64;
/// Frames smaller than this are gathered with their neighbours into one
/// vectored write; a larger one is written on its own.
const GATHER_MAX: usize = 64 << 10;
/// How many abandoned calls, and how many answered ones, the connection
/// remembers to judge a reply that matches no call in flight.
pub(crate) const RECENT_MAX: usize = 4096;

/// The life cycle of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Accepting calls.
    Active,
    /// Every `Client` handle is gone: no new calls, finishing those in flight.
    Draining,
    /// Finished, cleanly or not. Calls fail with a closed error.
    Closed,
}

/// What a `Client` (or an `Upload`) asks of the connection task.
pub(crate) enum Request {
    /// Send a CALL and route its REPLY to `reply`. With `stream`, a successful
    /// REPLY opens an upload stream whose events go there.
    Call {
        serial: u32,
        procedure: Procedure,
        frame: Bytes,
        reply: oneshot::Sender<Result<Packet>>,
        stream: Option<mpsc::UnboundedSender<StreamEvent>>,
    },
    /// The caller gave up on this serial: discard its reply, abort its stream.
    Cancel { serial: u32 },
    /// Stream data: the packet's length word and header, then its payload
    /// in one or more buffers, written as they are (no copy). `ack` fires
    /// once the whole packet was written to the transport; dropping it
    /// unsent means the stream ended first.
    StreamData {
        serial: u32,
        parts: Vec<Bytes>,
        ack: oneshot::Sender<()>,
    },
    /// The end of the stream data (STREAM/OK), awaiting confirmation.
    StreamFinish { serial: u32 },
    /// Abort the stream (STREAM/ERROR, empty), awaiting confirmation.
    StreamAbort { serial: u32 },
}

/// What happens to a stream, as seen by its `Upload` or `Download`.
#[derive(Debug)]
pub(crate) enum StreamEvent {
    /// Data from the server (a download); empty marks the end of the data.
    Data(Bytes),
    /// The server confirmed the finish (or the abort).
    Confirmed,
    /// The server reported an error; the stream is over.
    Failed(RemoteError),
    /// The connection closed.
    Closed(Cause),
}

struct Pending {
    procedure: Procedure,
    reply: oneshot::Sender<Result<Packet>>,
    stream: Option<PendingStream>,
}

struct PendingStream {
    events: mpsc::UnboundedSender<StreamEvent>,
    abandoned: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamState {
    Open,
    Finishing,
    Aborting,
}

struct StreamEntry {
    header: Header,
    state: StreamState,
    events: Option<mpsc::UnboundedSender<StreamEvent>>,
}

/// A packet waiting for the transport: what is left of its buffers, front
/// first.
struct Outgoing {
    parts: VecDeque<Bytes>,
    ack: Option<oneshot::Sender<()>>,
    /// For stream data: the stream's serial, so that data of a stream the
    /// server ended is dropped instead of written.
    stream: Option<u32>,
    /// Part of it is on the wire: it must be finished before anything else.
    started: bool,
}

impl Outgoing {
    fn frame(frame: Bytes) -> Self {
        Outgoing {
            parts: VecDeque::from([frame]),
            ack: None,
            stream: None,
            started: false,
        }
    }

    fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }
}

/// The last `RECENT_MAX` serials added, oldest forgotten first.
struct Recent {
    set: HashSet<u32>,
    order: VecDeque<u32>,
}

impl Recent {
    fn new() -> Self {
        Recent {
            set: HashSet::new(),
            order: VecDeque::new(),
        }
    }

    fn insert(&mut self, serial: u32) {
        if !self.set.insert(serial) {
            return;
        }
        self.order.push_back(serial);
        // A serial removed early leaves its place in `order`; the queue stays
        // bounded all the same, and such a place frees nothing when it goes.
        while self.order.len() > RECENT_MAX {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    fn remove(&mut self, serial: u32) -> bool {
        self.set.remove(&serial)
    }

    fn contains(&self, serial: u32) -> bool {
        self.set.contains(&serial)
    }
}

/// Keepalive settings of a connection.
///
/// Any packet from the server counts as a sign of life, so PINGs go out only
/// when the server has been silent for a whole interval. A PING waits behind
/// data already handed to the transport: a server that stops reading for
/// longer than `interval * (count + 1)` (for example, during a large upload to
/// a stalled disk) is declared dead, as libvirt's own client would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// How long the connection may be silent before a PING is sent.
    pub interval: Duration,
    /// How many unanswered PINGs are tolerated before the connection is
    /// declared dead (after about `interval * (count + 1)` of silence).
    pub count: u32,
}

struct KeepaliveTimer {
    config: Keepalive,
    // Created on first poll, so building a connection needs no runtime.
    sleep: Option<Pin<Box<Sleep>>>,
    unanswered: u32,
    heard: bool,
}

enum Tick {
    Ping,
    Dead,
    Quiet,
}

impl KeepaliveTimer {
    fn new(config: Keepalive) -> Self {
        KeepaliveTimer {
            config,
            sleep: None,
            unanswered: 0,
            heard: false,
        }
    }

    fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Tick> {
        let interval = self.config.interval;
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(interval)));
        ready!(sleep.as_mut().poll(cx));
        sleep.as_mut().reset(Instant::now() + interval);
        if std::mem::take(&mut self.heard) {
            self.unanswered = 0;
            return Poll::Ready(Tick::Quiet);
        }
        if self.unanswered >= self.config.count {
            return Poll::Ready(Tick::Dead);
        }
        self.unanswered += 1;
        Poll::Ready(Tick::Ping)
    }
}

/// The connection task: owns the transport and routes packets.
///
/// It does nothing unless polled: spawn it (`tokio::spawn(connection)`). It
/// resolves when the connection ends: `Ok(())` after every `Client` handle
/// was dropped and the calls in flight completed, or when the server closed
/// the connection with nothing in flight; an error when the connection died
/// (I/O error, protocol violation, keepalive timeout, or the server hanging
/// up on calls in flight).
///
/// # Cancel safety
///
/// Calls never depend on the caller's future being polled to completion.
/// A call whose future is dropped, or whose deadline passes, is forgotten:
/// if it was not written yet it never is, and if it was, its late reply is
/// read and discarded. Only a dead connection (keepalive unanswered, I/O
/// error, protocol violation) is closed, so one timed-out call never cuts
/// the other calls in flight. An upload stream whose `Upload` is dropped
/// before finishing is aborted.
///
/// # Strict replies
///
/// The last 4,096 abandoned calls are remembered, and so are the last 4,096
/// answered ones. A reply that matches no call in flight and none of those
/// abandoned calls (a serial above the highest sent, a second reply to an
/// answered call, or a serial never sent or long forgotten) is a protocol
/// violation: every call in flight fails at once with an error naming the
/// serial and what was wrong with it, and the connection closes, so the next
/// call needs a new one. A late reply to an abandoned call is discarded.
#[must_use = "the connection does nothing unless it is polled; spawn it"]
pub struct Connection<S> {
    /// Reads packets; writes go straight to the transport (`get_mut`), so
    /// stream data reaches it without being copied into a frame buffer.
    framed: FramedRead<S, PacketCodec>,
    requests: mpsc::UnboundedReceiver<Request>,
    pending: HashMap<u32, Pending>,
    /// The highest serial written so far (0: none yet).
    highest: u32,
    /// Calls given up on before their reply came: a late reply is discarded.
    abandoned: Recent,
    /// Calls already answered: another reply to one is a violation.
    answered: Recent,
    streams: HashMap<u32, StreamEntry>,
    outbox: VecDeque<Outgoing>,
    keepalive: Option<KeepaliveTimer>,
    events: Option<mpsc::Sender<Packet>>,
    state: State,
}

impl<S> Connection<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    pub(crate) fn new(
        stream: S,
        requests: mpsc::UnboundedReceiver<Request>,
        keepalive: Option<Keepalive>,
    ) -> Self {
        Connection {
            framed: FramedRead::new(stream, PacketCodec),
            requests,
            pending: HashMap::new(),
            highest: 0,
            abandoned: Recent::new(),
            answered: Recent::new(),
            streams: HashMap::new(),
            outbox: VecDeque::new(),
            keepalive: keepalive.map(KeepaliveTimer::new),
            events: None,
            state: State::Active,
        }
    }

    /// The connection's state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Server-initiated messages other than keepalive (libvirt events), from
    /// now on. At most `capacity` are buffered; later ones are dropped while
    /// the receiver lags. Calling it again replaces the previous receiver.
    pub fn events(&mut self, capacity: usize) -> mpsc::Receiver<Packet> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        self.events = Some(tx);
        rx
    }

    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        for _ in 0..BUDGET {
            let mut progress = false;

            // Read what the server sent.
            for _ in 0..BUDGET {
                match Pin::new(&mut self.framed).poll_next(cx) {
                    Poll::Ready(Some(Ok(packet))) => {
                        self.on_packet(packet)?;
                        progress = true;
                    }
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(codec_error(e))),
                    Poll::Ready(None) => return Poll::Ready(self.on_eof()),
                    Poll::Pending => break,
                }
            }

            // Take new requests while the outbox has room.
            if self.state == State::Active {
                for _ in 0..BUDGET {
                    if self.outbox.len() >= OUTBOX_MAX {
                        break;
                    }
                    match self.requests.poll_recv(cx) {
                        Poll::Ready(Some(request)) => {
                            self.on_request(request);
                            progress = true;
                        }
                        Poll::Ready(None) => {
                            debug!("every client handle dropped; draining");
                            self.state = State::Draining;
                            progress = true;
                            break;
                        }
                        Poll::Pending => break,
                    }
                }
            }

            // Keepalive.
            if self.poll_keepalive(cx)? {
                progress = true;
            }

            // Write.
            let flushed = match self.poll_write_outbox(cx) {
                Poll::Ready(Ok(wrote)) => {
                    progress |= wrote;
                    true
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => false,
            };

            if self.state == State::Draining
                && flushed
                && self.outbox.is_empty()
                && self.pending.is_empty()
                && self.streams.is_empty()
            {
                ready!(Pin::new(self.framed.get_mut()).poll_shutdown(cx))
                    .map_err(|e| Error::new(Kind::Io).with_source(e))?;
                return Poll::Ready(Ok(()));
            }

            if !progress {
                return Poll::Pending;
            }
        }
        // Plenty of work remains: let other tasks run, then come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Writes queued packets to the transport with vectored writes, small
    /// ones gathered together, and flushes it. Ready once the outbox is
    /// empty and the transport flushed (with whether anything was written),
    /// Pending while the transport is busy.
    fn poll_write_outbox(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool>> {
        let mut wrote = false;
        while !self.outbox.is_empty() {
            let n = {
                let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(WRITE_SLICES);
                let mut total = 0;
                'gather: for out in &self.outbox {
                    if total > 0 && (out.len() >= GATHER_MAX || total >= GATHER_MAX) {
                        break;
                    }
                    for part in out.parts.iter().filter(|p| !p.is_empty()) {
                        if slices.len() == WRITE_SLICES {
                            break 'gather;
                        }
                        slices.push(IoSlice::new(part));
                        total += part.len();
                    }
                }
                let io = Pin::new(self.framed.get_mut());
                match io.poll_write_vectored(cx, &slices) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(Error::new(Kind::Io)
                            .with_source(std::io::Error::from(std::io::ErrorKind::WriteZero))));
                    }
                    Poll::Ready(Ok(n)) => n,
                    Poll::Ready(Err(e)) => {
                        return Poll::Ready(Err(Error::new(Kind::Io).with_source(e)));
                    }
                    Poll::Pending => return Poll::Pending,
                }
            };
            wrote = true;
            self.advance(n);
        }
        match Pin::new(self.framed.get_mut()).poll_flush(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(wrote)),
            Poll::Ready(Err(e)) => Poll::Ready(Err(Error::new(Kind::Io).with_source(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Drops `n` written bytes from the front of the outbox, acknowledging
    /// each packet written whole.
    fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let out = self.outbox.front_mut().expect("written bytes were queued");
            out.started = true;
            while n > 0 {
                let Some(part) = out.parts.front_mut() else {
                    break;
                };
                let take = n.min(part.len());
                part.advance(take);
                n -= take;
                if part.is_empty() {
                    out.parts.pop_front();
                }
            }
            if out.parts.iter().all(Bytes::is_empty) {
                let done = self.outbox.pop_front().expect("front exists");
                if let Some(ack) = done.ack {
                    let _ = ack.send(());
                }
            }
        }
    }

    /// Queues a packet ahead of the others, behind one already part-way out.
    fn push_urgent(&mut self, out: Outgoing) {
        let at = usize::from(self.outbox.front().is_some_and(|o| o.started));
        self.outbox.insert(at, out);
    }

    /// Drops the data of stream `serial` that has not started going out:
    /// the server ended the stream, so it would only be discarded there.
    fn drop_stream_data(&mut self, serial: u32) {
        let before = self.outbox.len();
        self.outbox
            .retain(|o| o.started || o.stream != Some(serial));
        let dropped = before - self.outbox.len();
        if dropped > 0 {
            trace!(serial, dropped, "dropped data queued for an ended stream");
        }
    }

    /// Sends a PING when the server has been silent; fails when it stayed
    /// silent too long. Returns whether the timer fired.
    fn poll_keepalive(&mut self, cx: &mut Context<'_>) -> Result<bool> {
        let Some(timer) = &mut self.keepalive else {
            return Ok(false);
        };
        let Poll::Ready(tick) = timer.poll_tick(cx) else {
            return Ok(false);
        };
        match tick {
            Tick::Quiet => {}
            Tick::Ping => {
                trace!("sending keepalive ping");
                self.push_urgent(Outgoing::frame(keepalive_frame(KEEPALIVE_PING)));
            }
            Tick::Dead => {
                let k = timer.config;
                return Err(Error::new(Kind::KeepaliveTimeout).with_source(format!(
                    "{} pings unanswered at {:?} intervals",
                    k.count, k.interval
                )));
            }
        }
        Ok(true)
    }

    fn on_packet(&mut self, packet: Packet) -> Result<()> {
        if let Some(timer) = &mut self.keepalive {
            timer.heard = true;
        }
        let h = packet.header;
        match h.program {
            KEEPALIVE_PROGRAM => {
                if h.kind != MessageType::Message {
                    return Err(Error::protocol(format!(
                        "keepalive packet of type {}",
                        h.kind
                    )));
                }
                match h.procedure {
                    KEEPALIVE_PING => {
                        trace!("answering keepalive ping");
                        self.push_urgent(Outgoing::frame(keepalive_frame(KEEPALIVE_PONG)));
                    }
                    KEEPALIVE_PONG => trace!("keepalive pong"),
                    other => debug!(procedure = other, "ignoring unknown keepalive procedure"),
                }
                Ok(())
            }
            REMOTE_PROGRAM => {
                if h.version != REMOTE_VERSION {
                    return Err(Error::protocol(format!(
                        "unknown remote program version {}",
                        h.version
                    )));
                }
                match h.kind {
                    MessageType::Reply => self.on_reply(packet),
                    MessageType::Stream => {
                        self.on_stream(packet);
                        Ok(())
                    }
                    MessageType::Message => {
                        self.on_event(packet);
                        Ok(())
                    }
                    other => Err(Error::protocol(format!(
                        "unexpected packet type {other} from the server"
                    ))),
                }
            }
            other => Err(Error::protocol(format!("unknown program {other:#010x}"))),
        }
    }

    fn on_reply(&mut self, packet: Packet) -> Result<()> {
        let h = packet.header;
        let Some(expected) = self.pending.get(&h.serial).map(|p| p.procedure) else {
            return self.on_unmatched_reply(h);
        };
        if expected.to_raw() != h.procedure {
            return Err(Error::protocol(format!(
                "reply for serial {} names procedure {}, the call was {}",
                h.serial,
                h.procedure,
                expected.to_raw()
            )));
        }
        let pending = self.pending.remove(&h.serial).expect("checked above");
        self.answered.insert(h.serial);
        if let Some(stream) = pending.stream
            && h.status == Status::Ok
        {
            let call = Header::call(pending.procedure, h.serial);
            if stream.abandoned || pending.reply.is_closed() {
                debug!(serial = h.serial, "aborting a stream its caller abandoned");
                self.streams.insert(
                    h.serial,
                    StreamEntry {
                        header: call,
                        state: StreamState::Aborting,
                        events: None,
                    },
                );
                self.push_stream_control(call, Status::Error);
            } else {
                self.streams.insert(
                    h.serial,
                    StreamEntry {
                        header: call,
                        state: StreamState::Open,
                        events: Some(stream.events),
                    },
                );
            }
        }
        if pending.reply.send(Ok(packet)).is_err() {
            trace!(serial = h.serial, "discarding reply of an abandoned call");
        }
        Ok(())
    }

    /// Judges a reply that matches no call in flight: the late reply of an
    /// abandoned call is discarded; anything else means the server answers
    /// calls it was never sent, and nothing it says can be trusted any more.
    fn on_unmatched_reply(&mut self, h: Header) -> Result<()> {
        let serial = h.serial;
        if self.abandoned.remove(serial) {
            trace!(serial, "discarding the late reply of an abandoned call");
            self.answered.insert(serial);
            return Ok(());
        }
        let what = if self.highest == 0 {
            "before any call was sent".to_owned()
        } else if serial > self.highest {
            format!("above the highest serial sent ({})", self.highest)
        } else if self.answered.contains(serial) {
            "a second reply to a call already answered".to_owned()
        } else {
            "neither in flight nor recently abandoned".to_owned()
        };
        Err(Error::protocol(format!(
            "reply to serial {serial} (procedure {}): {what}",
            h.procedure
        )))
    }

    fn on_stream(&mut self, packet: Packet) {
        let h = packet.header;
        let Some(entry) = self.streams.get(&h.serial) else {
            // Data may overtake the REPLY that opens a download (libvirtd
            // writes them from different threads); the C client registers
            // the stream before its call, so it keeps such data, and so
            // does this one: it waits in the stream's queue.
            if h.status == Status::Continue
                && let Some(stream) = self.pending.get(&h.serial).and_then(|p| p.stream.as_ref())
            {
                let _ = stream.events.send(StreamEvent::Data(packet.payload));
                return;
            }
            trace!(
                serial = h.serial,
                "discarding stream packet of no open stream"
            );
            return;
        };
        let event = match h.status {
            Status::Ok => StreamEvent::Confirmed,
            Status::Error => StreamEvent::Failed(packet.remote_error().unwrap_or_else(|e| {
                RemoteError::new(
                    ErrorCode::Rpc,
                    ErrorDomain::Rpc,
                    format!("stream error that does not decode: {e}"),
                )
            })),
            Status::Continue => {
                // Data of a download: handed on, the stream stays open.
                if let Some(events) = &entry.events {
                    let _ = events.send(StreamEvent::Data(packet.payload));
                }
                return;
            }
            other => {
                debug!(serial = h.serial, status = %other, "ignoring a stream packet of unknown status");
                return;
            }
        };
        trace!(serial = h.serial, state = ?entry.state, ?event, "stream ended");
        self.drop_stream_data(h.serial);
        if let Some(entry) = self.streams.remove(&h.serial)
            && let Some(events) = entry.events
        {
            let _ = events.send(event);
        }
    }

    fn on_event(&mut self, packet: Packet) {
        let Some(events) = &self.events else {
            trace!(procedure = packet.header.procedure, "ignoring event");
            return;
        };
        if events.try_send(packet).is_err() {
            debug!("dropping event: receiver lags or is gone");
        }
    }

    fn on_eof(&mut self) -> Result<()> {
        if self.pending.is_empty() && self.streams.is_empty() {
            debug!("server closed the connection");
            Ok(())
        } else {
            Err(Error::new(Kind::Io).with_source(format!(
                "server closed the connection with {} calls and {} streams in flight",
                self.pending.len(),
                self.streams.len()
            )))
        }
    }

    fn on_request(&mut self, request: Request) {
        match request {
            Request::Call {
                serial,
                procedure,
                frame,
                reply,
                stream,
            } => {
                if reply.is_closed() {
                    trace!(serial, "skipping a call abandoned before it was sent");
                    return;
                }
                self.highest = self.highest.max(serial);
                self.pending.insert(
                    serial,
                    Pending {
                        procedure,
                        reply,
                        stream: stream.map(|events| PendingStream {
                            events,
                            abandoned: false,
                        }),
                    },
                );
                self.outbox.push_back(Outgoing::frame(frame));
            }
            Request::Cancel { serial } => self.on_cancel(serial),
            Request::StreamData { serial, parts, ack } => {
                match self.streams.get(&serial) {
                    Some(entry) if entry.state == StreamState::Open => {
                        self.outbox.push_back(Outgoing {
                            parts: parts.into(),
                            ack: Some(ack),
                            stream: Some(serial),
                            started: false,
                        });
                    }
                    // The stream ended (its event is already queued); dropping
                    // the ack tells the writer nothing was sent.
                    _ => trace!(serial, "dropping data for a stream that is not open"),
                }
            }
            Request::StreamFinish { serial } => {
                if let Some(entry) = self.streams.get_mut(&serial)
                    && entry.state == StreamState::Open
                {
                    entry.state = StreamState::Finishing;
                    let header = entry.header;
                    self.push_stream_control(header, Status::Ok);
                }
            }
            Request::StreamAbort { serial } => {
                if let Some(entry) = self.streams.get_mut(&serial)
                    && entry.state == StreamState::Open
                {
                    entry.state = StreamState::Aborting;
                    let header = entry.header;
                    self.push_stream_control(header, Status::Error);
                }
            }
        }
    }

    fn on_cancel(&mut self, serial: u32) {
        if let Some(pending) = self.pending.get_mut(&serial) {
            match &mut pending.stream {
                // Keep the entry: if the server opens the stream, abort it.
                Some(stream) => stream.abandoned = true,
                None => {
                    trace!(serial, "call abandoned; its reply will be discarded");
                    self.pending.remove(&serial);
                    self.abandoned.insert(serial);
                }
            }
            return;
        }
        if let Some(entry) = self.streams.get_mut(&serial) {
            entry.events = None;
            if entry.state == StreamState::Open {
                debug!(serial, "aborting a dropped upload");
                entry.state = StreamState::Aborting;
                let header = entry.header;
                self.push_stream_control(header, Status::Error);
            }
        }
    }

    fn push_stream_control(&mut self, call: Header, status: Status) {
        let mut buf = BytesMut::with_capacity(28);
        encode_packet(&mut buf, &call.stream(status), &()).expect("a bare header fits");
        self.outbox.push_back(Outgoing::frame(buf.freeze()));
    }

    /// Fails everything in flight with `error`'s cause and closes.
    fn fail(&mut self, error: &Error) {
        debug!(%error, "connection failed");
        let cause = error.cause();
        for (_, pending) in self.pending.drain() {
            let err = Error::closed_by(&cause).with_procedure(pending.procedure);
            let _ = pending.reply.send(Err(err));
            if let Some(stream) = pending.stream {
                let _ = stream.events.send(StreamEvent::Closed(cause.clone()));
            }
        }
        for (_, entry) in self.streams.drain() {
            if let Some(events) = entry.events {
                let _ = events.send(StreamEvent::Closed(cause.clone()));
            }
        }
        self.close_requests(&cause);
    }

    fn close_requests(&mut self, cause: &Cause) {
        self.state = State::Closed;
        self.outbox.clear();
        self.requests.close();
        while let Ok(request) = self.requests.try_recv() {
            if let Request::Call {
                reply, procedure, ..
            } = request
            {
                let _ = reply.send(Err(Error::closed_by(cause).with_procedure(procedure)));
            }
        }
    }
}

impl<S> Future for Connection<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Output = Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = &mut *self;
        if this.state == State::Closed {
            return Poll::Ready(Ok(()));
        }
        match ready!(this.poll_inner(cx)) {
            Ok(()) => {
                this.fail(&Error::closed("the connection has ended"));
                Poll::Ready(Ok(()))
            }
            Err(error) => {
                this.fail(&error);
                Poll::Ready(Err(error))
            }
        }
    }
}

fn keepalive_frame(procedure: i32) -> Bytes {
    let mut buf = BytesMut::with_capacity(28);
    encode_packet(&mut buf, &Header::keepalive(procedure), &()).expect("a bare header fits");
    buf.freeze()
}

fn codec_error(e: CodecError) -> Error {
    match e {
        CodecError::Io(e) => Error::new(Kind::Io).with_source(e),
        CodecError::Wire(e) => Error::protocol(e),
    }
}
