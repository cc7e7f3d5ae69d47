//! The systemd notification protocol (`Type=notify`): READY, RELOADING,
//! STOPPING, STATUS lines and watchdog pings, sent as datagrams to
//! `$NOTIFY_SOCKET` (nothing is sent when it is unset, e.g. run by hand).
//!
//! The watchdog ping comes from a task that only pings while the daemon's main
//! loop keeps beating ([`Heartbeat`]): a wedged main loop, not just a live
//! process, is what systemd should restart.

use sd_notify::NotifyState;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

/// Sends notifications to the service manager.
#[derive(Debug)]
pub struct Notifier {
    enabled: bool,
    warned: AtomicBool,
}

impl Notifier {
    /// Notifications go to `$NOTIFY_SOCKET` when it is set.
    pub fn from_env() -> Self {
        Notifier {
            enabled: std::env::var_os("NOTIFY_SOCKET").is_some(),
            warned: AtomicBool::new(false),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn send(&self, states: &[NotifyState<'_>]) {
        if !self.enabled {
            return;
        }
        if let Err(e) = sd_notify::notify(states) {
            // Once: a broken socket would otherwise log on every watchdog ping.
            if !self.warned.swap(true, Ordering::Relaxed) {
                warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)");
            }
        }
    }

    /// The daemon is up: the admin API listens and the jobs folder was read.
    pub fn ready(&self, status: &str) {
        let status = one_line(status);
        self.send(&[NotifyState::Ready, NotifyState::Status(&status)]);
    }

    /// A configuration reload begins; [`Notifier::ready`] ends it.
    pub fn reloading(&self) {
        match NotifyState::monotonic_usec_now() {
            Ok(now) => self.send(&[NotifyState::Reloading, now]),
            Err(_) => self.send(&[NotifyState::Reloading]),
        }
    }

    pub fn stopping(&self, status: &str) {
        let status = one_line(status);
        self.send(&[NotifyState::Stopping, NotifyState::Status(&status)]);
    }

    pub fn status(&self, status: &str) {
        let status = one_line(status);
        self.send(&[NotifyState::Status(&status)]);
    }

    pub fn watchdog(&self) {
        self.send(&[NotifyState::Watchdog]);
    }
}

/// A STATUS text is one line of the datagram: a line break would start a bogus assignment.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Ping interval when systemd enabled the watchdog: half its timeout, as sd_watchdog_enabled(3) advises.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled().map(|timeout| timeout / 2)
}

/// The main loop's proof of life.
#[derive(Debug)]
pub struct Heartbeat {
    origin: Instant,
    last_ms: AtomicU64,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Heartbeat {
            origin: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Heartbeat {
    pub fn beat(&self) {
        self.beat_at(Instant::now());
    }

    fn beat_at(&self, now: Instant) {
        let ms = now.saturating_duration_since(self.origin).as_millis();
        self.last_ms
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Time since the last beat.
    pub fn age(&self, now: Instant) -> Duration {
        let last = self.origin + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        now.saturating_duration_since(last)
    }
}

/// Ping the watchdog every `interval` while the heartbeat is younger than
/// `stale_after`; stop pinging (so systemd restarts us) when it is older.
pub fn spawn_watchdog(
    notifier: Arc<Notifier>,
    heartbeat: Arc<Heartbeat>,
    interval: Duration,
    stale_after: Duration,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut silent = false;
        loop {
            tick.tick().await;
            let age = heartbeat.age(Instant::now());
            if age <= stale_after {
                if silent {
                    debug!("main loop alive again; watchdog pings resume");
                    silent = false;
                }
                notifier.watchdog();
            } else if !silent {
                warn!(stalled_for = ?age, "main loop stalled; withholding watchdog pings");
                silent = true;
            }
        }
    })
}

/// The numbers of a STATUS line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Crawling (paused jobs not included).
    pub running: usize,
    /// Cannot write their state or targets and retry.
    pub paused: usize,
    pub pending: usize,
    pub done: usize,
    pub failed: usize,
    pub requests_per_min: f64,
    pub config_errors: usize,
}

/// `"3 jobs running, 2 waiting, 1 done, 1200 req/min, 1 invalid job file"`.
pub fn status_line(s: &Summary) -> String {
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut parts = vec![plural(s.running, "job running", "jobs running")];
    if s.paused > 0 {
        parts.push(format!("{} paused (cannot write)", s.paused));
    }
    if s.pending > 0 {
        parts.push(format!("{} waiting", s.pending));
    }
    if s.done > 0 {
        parts.push(format!("{} done", s.done));
    }
    if s.failed > 0 {
        parts.push(format!("{} failed", s.failed));
    }
    // Not `max(0.0)`: it can keep a -0.0, which prints as "-0".
    let rate = if s.requests_per_min > 0.0 {
        s.requests_per_min
    } else {
        0.0
    };
    parts.push(format!("{rate:.0} req/min"));
    if s.config_errors > 0 {
        parts.push(plural(
            s.config_errors,
            "invalid job file",
            "invalid job files",
        ));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_read_well() {
        let negative_zero = Summary {
            requests_per_min: -0.0,
            ..Summary::default()
        };
        assert_eq!(status_line(&negative_zero), "0 jobs running, 0 req/min");
        assert_eq!(
            status_line(&Summary::default()),
            "0 jobs running, 0 req/min"
        );
        let s = Summary {
            running: 1,
            paused: 0,
            pending: 2,
            done: 3,
            failed: 1,
            requests_per_min: 1199.6,
            config_errors: 1,
        };
        assert_eq!(
            status_line(&s),
            "1 job running, 2 waiting, 3 done, 1 failed, 1200 req/min, 1 invalid job file"
        );
        let paused = Summary {
            running: 2,
            paused: 1,
            ..Summary::default()
        };
        assert_eq!(
            status_line(&paused),
            "2 jobs running, 1 paused (cannot write), 0 req/min"
        );
    }

    #[test]
    fn status_text_cannot_inject_assignments() {
        assert_eq!(one_line("a\nREADY=1"), "a READY=1");
    }

    #[test]
    fn heartbeat_ages() {
        let h = Heartbeat::default();
        let t = h.origin + Duration::from_secs(10);
        h.beat_at(t);
        assert_eq!(h.age(t + Duration::from_secs(3)), Duration::from_secs(3));
        assert_eq!(h.age(t - Duration::from_secs(3)), Duration::ZERO);
    }

    #[test]
    fn disabled_without_a_socket_sends_nothing_and_does_not_fail() {
        let n = Notifier {
            enabled: false,
            warned: AtomicBool::new(false),
        };
        n.ready("x");
        n.watchdog();
        assert!(!n.warned.load(Ordering::Relaxed));
    }
}
