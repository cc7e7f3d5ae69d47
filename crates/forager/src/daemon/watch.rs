//! Noticing changes in the jobs folder: kernel notifications (notify) on the
//! folder, debounced, or polling; plus a periodic full rescan as a safety net.
//!
//! The watcher never interprets a change: it only says "rescan" ([`Trigger`]).
//! The daemon then reads the whole folder and compares it with what it knows,
//! so atomic-rename saves, editors' swap files, lost events (`Rescan`) and a
//! folder on a network filesystem all end up in the same code path.
//!
//! The folder itself is watched, not the files: an editor that saves by
//! writing a temporary file and renaming it over the job file replaces the
//! inode, and a watch on the old file would go silent.

use forager_core::config::{self, WatchMode};
use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};
use tracing::{debug, info, warn};

/// Quiet time after the last event before a rescan: an editor's save is a burst of events.
pub const DEBOUNCE: Duration = Duration::from_millis(300);
/// Longest a rescan waits while events keep coming (a folder written to non-stop).
pub const MAX_DELAY: Duration = Duration::from_secs(2);
/// Period of the full rescan that catches whatever notifications missed.
pub const SAFETY_RESCAN: Duration = Duration::from_secs(60);

/// A request to rescan the jobs folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// Read every file, even those whose size, time and inode look unchanged.
    pub full: bool,
}

/// How to watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchSettings {
    pub dir: PathBuf,
    pub mode: WatchMode,
    pub poll_interval: Duration,
    pub debounce: Duration,
    pub max_delay: Duration,
    pub safety_rescan: Duration,
}

impl WatchSettings {
    /// `dir` is made absolute (against the current folder): notify reports
    /// absolute paths, and a relative `jobs_dir` (from a relative `--config`
    /// path) compared with them never noticed the folder itself going away.
    pub fn new(dir: &Path, mode: WatchMode, poll_interval: Duration) -> Self {
        WatchSettings {
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            mode,
            poll_interval,
            debounce: DEBOUNCE,
            max_delay: MAX_DELAY,
            safety_rescan: SAFETY_RESCAN,
        }
    }
}

/// Coalesces a burst of events into one rescan.
#[derive(Clone, Debug)]
pub struct Debouncer {
    quiet: Duration,
    max_delay: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
    full: bool,
}

impl Debouncer {
    pub fn new(quiet: Duration, max_delay: Duration) -> Self {
        Debouncer {
            quiet,
            max_delay,
            first: None,
            last: None,
            full: false,
        }
    }

    /// An event arrived at `now`.
    pub fn push(&mut self, now: Instant, full: bool) {
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.full |= full;
    }

    /// When the pending rescan is due, if one is pending.
    pub fn deadline(&self) -> Option<Instant> {
        let (first, last) = (self.first?, self.last?);
        Some((last + self.quiet).min(first + self.max_delay))
    }

    /// The rescan, if due at `now`; resets the debouncer.
    pub fn take(&mut self, now: Instant) -> Option<Trigger> {
        if self.deadline()? > now {
            return None;
        }
        let t = Trigger { full: self.full };
        *self = Debouncer::new(self.quiet, self.max_delay);
        Some(t)
    }
}

/// What one notification means for the jobs folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relevance {
    /// Reads, or files that are not job files (swap, temp, backup files).
    Ignore,
    /// A job file may have changed.
    Changed,
    /// The kernel lost events, or did not say which file: read everything.
    Rescan,
    /// The folder itself was removed or moved: the watch must be set up again.
    FolderGone,
}

/// Classify a notification about `dir`.
pub fn relevance(event: &notify::Event, dir: &Path) -> Relevance {
    if event.need_rescan() {
        return Relevance::Rescan;
    }
    match event.kind {
        // Closing a file written in place: the write is complete.
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
        EventKind::Access(_) => return Relevance::Ignore,
        _ => {}
    }
    if event.paths.is_empty() {
        return Relevance::Rescan;
    }
    let folder_moved = matches!(
        event.kind,
        EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
    ) && event.paths.iter().any(|p| p == dir);
    if folder_moved {
        return Relevance::FolderGone;
    }
    // A rename carries both names: `.x.toml.tmp` → `x.toml` is a change of `x.toml`.
    if event.paths.iter().any(|p| config::is_job_file(p)) {
        Relevance::Changed
    } else {
        Relevance::Ignore
    }
}

/// The running watcher; dropping it stops watching.
pub struct WatchHandle {
    task: JoinHandle<()>,
    pub settings: WatchSettings,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start watching; triggers go to `tx`. Falls back to polling (with a
/// warning) when kernel notifications cannot be set up.
pub fn spawn(settings: WatchSettings, tx: mpsc::UnboundedSender<Trigger>) -> WatchHandle {
    let (raw_tx, raw_rx) = mpsc::unbounded_channel::<notify::Result<notify::Event>>();
    let mut watcher = None;
    if settings.mode == WatchMode::Notify {
        match notify::recommended_watcher(move |res| {
            // The daemon is gone when this fails: nothing to tell.
            let _ = raw_tx.send(res);
        }) {
            Ok(mut w) => match w.watch(&settings.dir, RecursiveMode::NonRecursive) {
                Ok(()) => watcher = Some(w),
                Err(e) => warn!(
                    dir = %settings.dir.display(), error = %e,
                    "cannot watch the jobs folder; polling it instead"
                ),
            },
            Err(e) => {
                warn!(error = %e, "kernel file notifications unavailable; polling the jobs folder instead")
            }
        }
    }
    let task = tokio::spawn(run(settings.clone(), watcher, raw_rx, tx));
    WatchHandle { task, settings }
}

async fn run(
    settings: WatchSettings,
    mut watcher: Option<notify::RecommendedWatcher>,
    mut raw: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    tx: mpsc::UnboundedSender<Trigger>,
) {
    let mut polling = watcher.is_none();
    if polling {
        info!(dir = %settings.dir.display(), every = ?settings.poll_interval, "polling the jobs folder");
    } else {
        info!(dir = %settings.dir.display(), "watching the jobs folder");
    }
    let mut debouncer = Debouncer::new(settings.debounce, settings.max_delay);
    let mut safety = tokio::time::interval_at(
        Instant::now() + settings.safety_rescan,
        settings.safety_rescan,
    );
    safety.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut poll = tokio::time::interval_at(
        Instant::now() + settings.poll_interval,
        settings.poll_interval,
    );
    poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut folder_lost = false;
    loop {
        let deadline = debouncer.deadline();
        let trigger = tokio::select! {
            event = raw.recv(), if !polling => {
                match event {
                    Some(Ok(event)) => match relevance(&event, &settings.dir) {
                        Relevance::Ignore => {}
                        Relevance::Changed => debouncer.push(Instant::now(), false),
                        Relevance::Rescan => debouncer.push(Instant::now(), true),
                        Relevance::FolderGone => {
                            warn!(dir = %settings.dir.display(), "the jobs folder was removed or moved; jobs keep running as they are until it is back");
                            folder_lost = true;
                            debouncer.push(Instant::now(), true);
                        }
                    },
                    Some(Err(e)) => {
                        warn!(error = %e, "file notification error; rescanning the jobs folder");
                        debouncer.push(Instant::now(), true);
                    }
                    // The notify thread is gone: poll instead.
                    None => {
                        warn!("file notifications stopped; polling the jobs folder instead");
                        watcher = None;
                        polling = true;
                    }
                }
                None
            }
            _ = sleep_until(deadline), if deadline.is_some() => debouncer.take(Instant::now()),
            // Also while the folder is gone: try to watch it again every poll interval.
            _ = poll.tick(), if polling || folder_lost => {
                if folder_lost && !polling {
                    folder_lost = !rewatch(&mut watcher, &settings.dir);
                    Some(Trigger { full: true })
                } else {
                    Some(Trigger { full: false })
                }
            }
            _ = safety.tick() => Some(Trigger { full: true }),
        };
        if let Some(t) = trigger {
            debug!(full = t.full, "jobs folder rescan");
            if tx.send(t).is_err() {
                return;
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Set the watch up again on a folder that came back; whether it worked.
fn rewatch(watcher: &mut Option<notify::RecommendedWatcher>, dir: &Path) -> bool {
    let Some(w) = watcher.as_mut() else {
        return false;
    };
    // The old watch died with the old folder; removing it may fail, which is fine.
    let _ = w.unwatch(dir);
    match w.watch(dir, RecursiveMode::NonRecursive) {
        Ok(()) => {
            info!(dir = %dir.display(), "watching the jobs folder again");
            true
        }
        Err(e) => {
            debug!(dir = %dir.display(), error = %e, "jobs folder still unavailable");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, Flag, RemoveKind, RenameMode};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_relative_jobs_dir_still_notices_its_own_removal() {
        let settings = WatchSettings::new(
            Path::new("jobs.d"),
            WatchMode::Notify,
            Duration::from_secs(1),
        );
        assert!(settings.dir.is_absolute(), "{}", settings.dir.display());
        // What inotify reports when the watched folder goes: its absolute path.
        let absolute = std::env::current_dir().unwrap().join("jobs.d");
        let gone = notify::Event::new(EventKind::Remove(RemoveKind::Folder)).add_path(absolute);
        assert_eq!(relevance(&gone, &settings.dir), Relevance::FolderGone);
    }

    #[test]
    fn a_burst_becomes_one_trigger_after_the_quiet_time() {
        let t0 = Instant::now();
        let mut d = Debouncer::new(ms(300), ms(2000));
        assert_eq!(d.deadline(), None);
        assert_eq!(d.take(t0), None);
        d.push(t0, false);
        d.push(t0 + ms(100), false);
        d.push(t0 + ms(200), false);
        assert_eq!(d.deadline(), Some(t0 + ms(500)));
        assert_eq!(d.take(t0 + ms(499)), None);
        assert_eq!(d.take(t0 + ms(500)), Some(Trigger { full: false }));
        // Reset: nothing pending.
        assert_eq!(d.deadline(), None);
        assert_eq!(d.take(t0 + ms(5000)), None);
    }

    #[test]
    fn endless_events_still_trigger_by_the_max_delay() {
        let t0 = Instant::now();
        let mut d = Debouncer::new(ms(300), ms(2000));
        let mut fired = None;
        for i in 0..100 {
            let now = t0 + ms(100 * i);
            if let Some(t) = d.take(now) {
                fired = Some((now, t));
                break;
            }
            d.push(now, i == 3);
        }
        let (at, t) = fired.expect("never fired");
        assert_eq!(at, t0 + ms(2000));
        assert!(t.full, "a Rescan in the burst makes the trigger full");
    }

    fn event(kind: EventKind, paths: &[&str]) -> notify::Event {
        let mut e = notify::Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        e
    }

    #[test]
    fn classifies_notifications() {
        let dir = Path::new("/etc/forager/jobs.d");
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        assert_eq!(
            relevance(&event(data, &["/etc/forager/jobs.d/a.toml"]), dir),
            Relevance::Changed
        );
        assert_eq!(
            relevance(&event(data, &["/etc/forager/jobs.d/.a.toml.swp"]), dir),
            Relevance::Ignore
        );
        assert_eq!(
            relevance(&event(data, &["/etc/forager/jobs.d/4913"]), dir),
            Relevance::Ignore
        );
        // An atomic save: temp file renamed over the job file.
        let rename = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert_eq!(
            relevance(
                &event(
                    rename,
                    &[
                        "/etc/forager/jobs.d/.a.toml.tmp",
                        "/etc/forager/jobs.d/a.toml"
                    ]
                ),
                dir
            ),
            Relevance::Changed
        );
        assert_eq!(
            relevance(
                &event(
                    EventKind::Create(CreateKind::File),
                    &["/etc/forager/jobs.d/b.toml"]
                ),
                dir
            ),
            Relevance::Changed
        );
        let opened = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert_eq!(
            relevance(&event(opened, &["/etc/forager/jobs.d/a.toml"]), dir),
            Relevance::Ignore
        );
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert_eq!(
            relevance(&event(closed, &["/etc/forager/jobs.d/a.toml"]), dir),
            Relevance::Changed
        );
        let rescan = event(EventKind::Other, &[]).set_flag(Flag::Rescan);
        assert_eq!(relevance(&rescan, dir), Relevance::Rescan);
        assert_eq!(
            relevance(&event(EventKind::Any, &[]), dir),
            Relevance::Rescan
        );
        assert_eq!(
            relevance(
                &event(
                    EventKind::Remove(RemoveKind::Folder),
                    &["/etc/forager/jobs.d"]
                ),
                dir
            ),
            Relevance::FolderGone
        );
    }

    async fn next(rx: &mut mpsc::UnboundedReceiver<Trigger>, within: Duration) -> Option<Trigger> {
        tokio::time::timeout(within, rx.recv()).await.ok().flatten()
    }

    #[tokio::test]
    async fn notify_mode_sees_an_atomic_save_and_ignores_swap_files() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut settings =
            WatchSettings::new(dir.path(), WatchMode::Notify, Duration::from_secs(3600));
        settings.debounce = ms(50);
        let _w = spawn(settings, tx);
        // Let the watch settle before writing.
        tokio::time::sleep(ms(50)).await;
        std::fs::write(dir.path().join(".a.toml.swp"), "x").unwrap();
        assert_eq!(
            next(&mut rx, ms(500)).await,
            None,
            "swap files are not job files"
        );
        let tmp = dir.path().join(".a.toml.tmp");
        std::fs::write(&tmp, "name = \"a\"").unwrap();
        std::fs::rename(&tmp, dir.path().join("a.toml")).unwrap();
        assert_eq!(
            next(&mut rx, Duration::from_secs(5)).await,
            Some(Trigger { full: false })
        );
    }

    #[tokio::test]
    async fn a_folder_removed_and_recreated_is_watched_again() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("jobs.d");
        std::fs::create_dir(&dir).unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut settings = WatchSettings::new(&dir, WatchMode::Notify, ms(100));
        settings.debounce = ms(50);
        let _w = spawn(settings, tx);
        tokio::time::sleep(ms(50)).await;
        std::fs::remove_dir(&dir).unwrap();
        assert_eq!(
            next(&mut rx, Duration::from_secs(5)).await,
            Some(Trigger { full: true })
        );
        std::fs::create_dir(&dir).unwrap();
        // Re-armed on a poll tick; then an edit is seen again.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            std::fs::write(dir.join("a.toml"), "name = \"a\"").unwrap();
            if next(&mut rx, ms(300)).await == Some(Trigger { full: false }) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "edits in the recreated folder never seen"
            );
        }
    }

    #[tokio::test]
    async fn poll_mode_triggers_on_its_interval() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _w = spawn(WatchSettings::new(dir.path(), WatchMode::Poll, ms(50)), tx);
        assert_eq!(
            next(&mut rx, Duration::from_secs(5)).await,
            Some(Trigger { full: false })
        );
        assert_eq!(
            next(&mut rx, Duration::from_secs(5)).await,
            Some(Trigger { full: false })
        );
    }
}
