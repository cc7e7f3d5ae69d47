//! The foreground progress bar, and a log writer that keeps log lines from tearing it.

use crate::engine::{CrawlObserver, RequestEvent};
use crate::store::{JobCounters, StopReason};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal, Write};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

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

/// Shows a crawl's progress: requests, pages, targets, bytes, rate.
pub struct ProgressObserver {
    bar: ProgressBar,
    budget: u64,
}

impl ProgressObserver {
    /// A bar when stderr is a terminal (and `enabled`), a hidden one otherwise.
    pub fn new(enabled: bool, job: &str, request_budget: u64) -> Self {
        let bar = if enabled && io::stderr().is_terminal() {
            let bar = if request_budget > 0 {
                ProgressBar::new(request_budget)
            } else {
                ProgressBar::new_spinner()
            };
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let template = if request_budget > 0 {
                "{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} req · {msg}"
            } else {
                "{prefix} [{elapsed_precise}] {spinner} {pos} req · {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
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
        }
    }

    fn show(&self, c: &JobCounters) {
        self.bar.set_position(if self.budget > 0 {
            c.requests.min(self.budget)
        } else {
            c.requests
        });
        self.bar.set_message(format!(
            "{} pages · {} targets · {} HEAD · {}",
            c.pages,
            c.targets,
            c.heads,
            bytesize::ByteSize::b(c.bytes)
        ));
    }
}

impl CrawlObserver for ProgressObserver {
    fn request(&mut self, event: &RequestEvent<'_>) {
        self.show(event.counters);
    }

    fn finished(&mut self, counters: &JobCounters, _stop: Option<StopReason>) {
        self.show(counters);
        self.bar.finish_and_clear();
        if let Ok(mut a) = active().lock() {
            *a = None;
        }
    }
}
