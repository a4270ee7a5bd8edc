//! A run's live progress on stderr. On a terminal: a progress bar with rules done out
//! of the total, the rules running now and for how long, and an estimate of the time
//! left. Elsewhere (CI logs): one line per finished rule, and a heartbeat line every
//! period (30 s unless `--heartbeat` says otherwise) naming the running rules and the
//! time elapsed, so a silent log always means a stuck machine, never a slow rule.
//!
//! The estimate comes from the durations of a previous run's report
//! (`--previous REPORT.json`) when given, else from the rules finished so far; both
//! divide by the run's concurrency.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::suite::outcome::{Event, Outcome, RuleResult};
use crate::suite::report::human_duration;

/// The progress line of the `index`-th finished rule out of `total`.
pub fn progress_line(index: usize, total: usize, r: &RuleResult) -> String {
    let w = total.to_string().len();
    let head = format!("[{index:>w$}/{total}] {} ...", r.id);
    let line = match r.outcome {
        Outcome::Pass => format!("{head} Pass ({})", human_duration(r.duration)),
        Outcome::Skipped | Outcome::NotApplicable => format!(
            "{head} {}: {}",
            r.outcome.as_str(),
            r.reason.as_deref().unwrap_or("")
        ),
        Outcome::Fail | Outcome::Error => format!(
            "{head} {} ({}): {}",
            r.outcome.as_str(),
            human_duration(r.duration),
            r.reason.as_deref().unwrap_or("")
        ),
    };
    match runs_note(r) {
        Some(note) => format!("{line} [{note}]"),
        None => line,
    }
}

/// `flaky: 2 of 3 runs passed`, or `3 of 3 runs passed`, for a rule run more than once.
pub fn runs_note(r: &RuleResult) -> Option<String> {
    (r.runs > 1).then(|| {
        format!(
            "{}{} of {} runs passed",
            if r.flaky { "flaky: " } else { "" },
            r.passes,
            r.runs
        )
    })
}

/// How often the heartbeat line is printed without a terminal, by default.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

/// How often the bar's message (running rules, their times, the estimate) is
/// refreshed.
const BAR_REFRESH: Duration = Duration::from_millis(500);

/// Where progress goes.
pub enum Sink {
    /// A progress bar drawn on this target (a terminal).
    Bar(ProgressDrawTarget),
    /// Plain lines on this writer, with a heartbeat line every period.
    Lines(Box<dyn Write + Send>, Duration),
}

/// What the progress display knows of the run.
#[derive(Debug)]
struct State {
    started: Instant,
    total: usize,
    done: usize,
    running: BTreeMap<String, Instant>,
    /// Rules that will run and have not started.
    pending: BTreeSet<String>,
    /// Durations of the rules that ran to a verdict, for the estimate without
    /// `--previous`.
    ran: Vec<Duration>,
    previous: BTreeMap<String, Duration>,
    concurrency: usize,
}

impl State {
    /// The time left, when there is anything to estimate it from.
    fn eta(&self, now: Instant) -> Option<Duration> {
        let left = self.pending.len() + self.running.len();
        if left == 0 {
            return Some(Duration::ZERO);
        }
        let mean = |ds: &mut dyn Iterator<Item = Duration>| {
            let (n, sum) = ds.fold((0u32, Duration::ZERO), |(n, s), d| (n + 1, s + d));
            (n > 0).then(|| sum / n)
        };
        let guess = |id: &str| -> Option<Duration> {
            self.previous
                .get(id)
                .copied()
                .or_else(|| mean(&mut self.previous.values().copied()))
                .or_else(|| mean(&mut self.ran.iter().copied()))
        };
        let mut work = Duration::ZERO;
        for id in &self.pending {
            work += guess(id)?;
        }
        for (id, since) in &self.running {
            work += guess(id)?.saturating_sub(now.duration_since(*since));
        }
        Some(work / u32::try_from(self.concurrency.max(1)).unwrap_or(1))
    }

    /// The running rules, longest-running first, with how long each has run.
    fn running_text(&self, now: Instant) -> String {
        let mut running: Vec<(&String, Duration)> = self
            .running
            .iter()
            .map(|(id, since)| (id, now.duration_since(*since)))
            .collect();
        running.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        running
            .iter()
            .map(|(id, d)| format!("{id} ({})", human_duration(*d)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The heartbeat line.
    fn heartbeat(&self, now: Instant) -> String {
        let mut line = format!(
            "conformance: {} elapsed, {}/{} rules done",
            human_duration(now.duration_since(self.started)),
            self.done,
            self.total
        );
        if self.running.is_empty() {
            line.push_str("; none running");
        } else {
            line.push_str(&format!("; running: {}", self.running_text(now)));
        }
        if let Some(eta) = self.eta(now) {
            line.push_str(&format!("; about {} left", human_duration(eta)));
        }
        line
    }

    /// The bar's message.
    fn bar_message(&self, now: Instant) -> String {
        let eta = match self.eta(now) {
            Some(d) => format!("ETA {}", human_duration(d)),
            None => "ETA unknown".to_owned(),
        };
        if self.running.is_empty() {
            eta
        } else {
            format!("{eta} · running: {}", self.running_text(now))
        }
    }
}

enum Out {
    Bar(ProgressBar),
    Lines(Arc<Mutex<Box<dyn Write + Send>>>),
}

/// The live progress of one run: feed it the run's events, then [`Progress::finish`].
pub struct Progress {
    state: Arc<Mutex<State>>,
    out: Out,
    ticker: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Progress {
    /// Starts showing progress of a run of `total` rules, of which `to_run` will run,
    /// `concurrency` at a time. `previous` holds a previous run's durations by rule ID.
    pub fn start(
        sink: Sink,
        total: usize,
        to_run: impl IntoIterator<Item = String>,
        concurrency: usize,
        previous: BTreeMap<String, Duration>,
    ) -> Progress {
        let state = Arc::new(Mutex::new(State {
            started: Instant::now(),
            total,
            done: 0,
            running: BTreeMap::new(),
            pending: to_run.into_iter().collect(),
            ran: Vec::new(),
            previous,
            concurrency,
        }));
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (out, period) = match sink {
            Sink::Bar(target) => {
                let bar = ProgressBar::with_draw_target(Some(total as u64), target);
                bar.set_style(
                    ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}")
                        .expect("a valid template")
                        .progress_chars("=> "),
                );
                (Out::Bar(bar), BAR_REFRESH)
            }
            Sink::Lines(w, period) => (Out::Lines(Arc::new(Mutex::new(w))), period),
        };
        let tick: Box<dyn Fn() + Send> = match &out {
            Out::Bar(bar) => {
                let (bar, state) = (bar.clone(), state.clone());
                Box::new(move || {
                    let msg = state.lock().unwrap().bar_message(Instant::now());
                    bar.set_message(msg);
                })
            }
            Out::Lines(w) => {
                let (w, state) = (w.clone(), state.clone());
                Box::new(move || {
                    let line = state.lock().unwrap().heartbeat(Instant::now());
                    let mut w = w.lock().unwrap();
                    let _ = writeln!(w, "{line}");
                    let _ = w.flush();
                })
            }
        };
        let handle = std::thread::spawn(move || {
            loop {
                match stop_rx.recv_timeout(period) {
                    Err(RecvTimeoutError::Timeout) => tick(),
                    _ => return,
                }
            }
        });
        Progress {
            state,
            out,
            ticker: Some((stop_tx, handle)),
        }
    }

    /// Takes in one event of the run.
    pub fn event(&self, e: &Event) {
        let now = Instant::now();
        let mut st = self.state.lock().unwrap();
        match e {
            Event::CheckStarted { id } => {
                st.pending.remove(id);
                st.running.insert(id.clone(), now);
            }
            Event::CheckFinished(r) => {
                st.pending.remove(&r.id);
                st.running.remove(&r.id);
                st.done += 1;
                if !matches!(r.outcome, Outcome::Skipped | Outcome::NotApplicable) {
                    st.ran.push(r.duration);
                }
                let line = progress_line(st.done, st.total, r);
                match &self.out {
                    Out::Bar(bar) => {
                        bar.set_position(st.done as u64);
                        bar.set_message(st.bar_message(now));
                        bar.println(line);
                    }
                    Out::Lines(w) => {
                        let mut w = w.lock().unwrap();
                        let _ = writeln!(w, "{line}");
                        let _ = w.flush();
                    }
                }
            }
            _ => {}
        }
    }

    /// Stops the ticker and clears the bar.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some((tx, handle)) = self.ticker.take() {
            drop(tx);
            let _ = handle.join();
        }
        if let Out::Bar(bar) = &self.out {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::outcome::RuleResult;

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// A terminal that records what the bar draws.
    #[derive(Debug, Default, Clone)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            160
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.to_owned());
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.to_owned());
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn finished(id: &str, millis: u64) -> Event {
        Event::CheckFinished(RuleResult {
            id: id.into(),
            title: "t".into(),
            area: "create".into(),
            outcome: Outcome::Pass,
            reason: None,
            violations: vec![],
            evidence: vec![],
            property: None,
            seed: 1,
            not_checked: vec![],
            faults: vec![],
            duration: Duration::from_millis(millis),
            peak_instances: 0,
            runs: 1,
            passes: 1,
            flaky: false,
            repeat_seeds: vec![],
            waiver: None,
            log: None,
        })
    }

    fn started(id: &str) -> Event {
        Event::CheckStarted { id: id.into() }
    }

    fn ids(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    /// Without a terminal, a heartbeat names the running rules within each period,
    /// even while no rule finishes.
    #[test]
    fn without_a_terminal_a_heartbeat_names_the_running_rules() {
        let out = Shared::default();
        let p = Progress::start(
            Sink::Lines(Box::new(out.clone()), Duration::from_millis(40)),
            3,
            ids(&["CRE-RESUME", "GEN-CANCEL", "GET-BUSY"]),
            2,
            BTreeMap::new(),
        );
        p.event(&started("CRE-RESUME"));
        p.event(&started("GEN-CANCEL"));
        p.event(&finished("GEN-CANCEL", 5));
        std::thread::sleep(Duration::from_millis(300));
        p.finish();
        let text = out.text();
        assert!(
            text.contains("[1/3] GEN-CANCEL ... Pass (5 ms)"),
            "the finished rule's line: {text}"
        );
        let beats: Vec<&str> = text.lines().filter(|l| l.contains("elapsed")).collect();
        assert!(beats.len() >= 2, "a heartbeat every 40 ms: {text}");
        for beat in &beats {
            assert!(beat.contains("1/3 rules done"), "{beat}");
            assert!(beat.contains("running: CRE-RESUME ("), "{beat}");
            assert!(
                !beat.contains("GEN-CANCEL"),
                "finished rules are not running: {beat}"
            );
            assert!(
                beat.contains("left"),
                "an estimate from the rule done: {beat}"
            );
        }
    }

    /// On a terminal, the bar shows done/total, the running rules and an estimate.
    #[test]
    fn on_a_terminal_the_bar_shows_counts_running_rules_and_an_eta() {
        let screen = Screen::default();
        let p = Progress::start(
            Sink::Bar(ProgressDrawTarget::term_like(Box::new(screen.clone()))),
            4,
            ids(&["A-1", "A-2", "A-3", "A-4"]),
            1,
            BTreeMap::from([
                ("A-3".to_owned(), Duration::from_secs(60)),
                ("A-4".to_owned(), Duration::from_secs(120)),
            ]),
        );
        p.event(&started("A-1"));
        p.event(&finished("A-1", 10));
        p.event(&started("A-2"));
        p.event(&finished("A-2", 10));
        p.event(&started("A-3"));
        std::thread::sleep(Duration::from_millis(1200));
        let drawn = screen.0.lock().unwrap().join("\n");
        p.finish();
        assert!(drawn.contains("[1/4] A-1 ... Pass"), "{drawn}");
        assert!(drawn.contains("2/4"), "{drawn}");
        assert!(drawn.contains("running: A-3 ("), "{drawn}");
        // A-3's 60 s (less the moment it has run) and A-4's 120 s, one at a time.
        assert!(
            drawn.contains("ETA 2 min 59 s") || drawn.contains("ETA 3 min 00 s"),
            "{drawn}"
        );
    }

    #[test]
    fn the_estimate_divides_by_concurrency_and_waits_for_data() {
        let now = Instant::now();
        let mut st = State {
            started: now,
            total: 4,
            done: 0,
            running: BTreeMap::new(),
            pending: ids(&["A", "B", "C", "D"]).into_iter().collect(),
            ran: Vec::new(),
            previous: BTreeMap::new(),
            concurrency: 2,
        };
        assert_eq!(st.eta(now), None, "nothing to estimate from");
        st.pending.remove("A");
        st.ran.push(Duration::from_secs(10));
        assert_eq!(st.eta(now), Some(Duration::from_secs(15)));
        st.previous.insert("B".into(), Duration::from_secs(40));
        // B 40 s; C and D the previous run's mean, 40 s: 120 s over 2.
        assert_eq!(st.eta(now), Some(Duration::from_secs(60)));
    }
}
