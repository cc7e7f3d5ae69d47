//! The foreground progress bar, and a log writer that keeps log lines from tearing it.

use forager::daemon::live::RateMeter;
use forager::engine::{CrawlObserver, OriginWait, RequestEvent};
use forager::store::{JobCounters, StopReason};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal, Write};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The bar currently on screen, if any; log lines are printed "under" it.
static ACTIVE: OnceLock<Mutex<Option<ProgressBar>>> = OnceLock::new();

fn active() -> &'static Mutex<Option<ProgressBar>> {
    ACTIVE.get_or_init(|| Mutex::new(None))
}

/// Writes log lines to stderr, suspending the progress bar while doing so.
#[derive(Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let bar = active().lock().ok().and_then(|b| b.clone());
        match bar {
            Some(bar) => bar.suspend(|| io::stderr().write(buf)),
            None => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// Shows a crawl's progress: requests, pages, targets, links waiting, rate, bytes.
///
/// A crawl's end is rarely known: the site decides how many links there are.
/// The line shows a bar only once it is, that is once the frontier holds more
/// links than the request budget has requests left, so the budget will end
/// the crawl (see [`budget_ends_the_crawl`]).
pub struct ProgressObserver {
    bar: ProgressBar,
    budget: u64,
    rate: RateMeter,
    with_bar: bool,
    /// What the crawl only waits for, shown after the counts.
    waiting_for: Option<String>,
    /// The last counts shown, to redraw the line when only the wait changed.
    last: Option<(JobCounters, u64)>,
}

const COUNTS_ONLY: &str = "{prefix} [{elapsed_precise}] {spinner} {msg}";
const WITH_BAR: &str = "{prefix} [{elapsed_precise}] {bar:24} {pos}/{len} req · {msg}";

/// Whether the request budget, not the frontier running dry, ends the crawl:
/// the links waiting outnumber the requests left.
pub fn budget_ends_the_crawl(budget: u64, requests: u64, frontier: u64) -> bool {
    budget > 0 && frontier >= budget.saturating_sub(requests)
}

/// The progress line's counts.
pub fn progress_message(c: &JobCounters, frontier: u64, per_minute: f64, with_bar: bool) -> String {
    let requests = if with_bar {
        String::new()
    } else {
        format!("{} req · ", c.requests)
    };
    format!(
        "{requests}{} pages · {} targets · {frontier} waiting · {per_minute:.0} req/min · {}",
        c.pages,
        c.targets,
        bytesize::ByteSize::b(c.bytes)
    )
}

impl ProgressObserver {
    /// A line when stderr is a terminal (and `enabled`), a hidden one otherwise.
    pub fn new(enabled: bool, job: &str, request_budget: u64) -> Self {
        let bar = if enabled && io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            if let Ok(style) = ProgressStyle::with_template(COUNTS_ONLY) {
                bar.set_style(style);
            }
            bar.set_prefix(job.to_string());
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        } else {
            ProgressBar::hidden()
        };
        if let Ok(mut a) = active().lock() {
            *a = Some(bar.clone());
        }
        ProgressObserver {
            bar,
            budget: request_budget,
            rate: RateMeter::default(),
            with_bar: false,
            waiting_for: None,
            last: None,
        }
    }

    fn show(&mut self, c: &JobCounters, frontier: u64) {
        // Once the budget is known to end the crawl it stays so: the frontier only shrinks near the end.
        if !self.with_bar && budget_ends_the_crawl(self.budget, c.requests, frontier) {
            if let Ok(style) = ProgressStyle::with_template(WITH_BAR) {
                self.bar.set_style(style);
                self.bar.set_length(self.budget);
                self.with_bar = true;
            }
        }
        self.bar.set_position(c.requests);
        let per_minute = self.rate.per_minute(Instant::now());
        let mut message = progress_message(c, frontier, per_minute, self.with_bar);
        if let Some(w) = &self.waiting_for {
            message.push_str(" · ");
            message.push_str(w);
        }
        self.bar.set_message(message);
        self.last = Some((c.clone(), frontier));
    }
}

impl CrawlObserver for ProgressObserver {
    fn request(&mut self, event: &RequestEvent<'_>) {
        self.rate.record(Instant::now());
        self.show(event.counters, event.frontier);
    }

    fn waiting_for_origin(&mut self, wait: Option<&OriginWait>) {
        self.waiting_for = wait.map(ToString::to_string);
        let (counters, frontier) = self.last.clone().unwrap_or_default();
        self.show(&counters, frontier);
    }

    fn finished(&mut self, counters: &JobCounters, _stop: Option<StopReason>) {
        self.bar.set_position(counters.requests);
        self.bar.finish_and_clear();
        if let Ok(mut a) = active().lock() {
            *a = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_only_once_the_budget_will_end_the_crawl() {
        // 100 000 requests allowed, 221 made, 40 links waiting: the site ends it.
        assert!(!budget_ends_the_crawl(100_000, 221, 40));
        // 300 allowed, 221 made, 90 waiting: the budget ends it.
        assert!(budget_ends_the_crawl(300, 221, 90));
        assert!(!budget_ends_the_crawl(0, 221, 1_000_000), "no budget");
    }

    #[test]
    fn the_line_says_what_was_done_what_waits_and_how_fast() {
        let c = JobCounters {
            requests: 221,
            pages: 180,
            targets: 12,
            bytes: 3 << 20,
            ..Default::default()
        };
        let line = progress_message(&c, 40, 118.4, false);
        assert_eq!(
            line,
            "221 req · 180 pages · 12 targets · 40 waiting · 118 req/min · 3.0 MiB"
        );
        // The bar shows requests itself.
        let line = progress_message(&c, 40, 118.4, true);
        assert!(line.starts_with("180 pages"), "{line}");
    }
}
