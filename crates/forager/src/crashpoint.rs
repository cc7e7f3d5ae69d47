//! Crash points for the crash test: with `FORAGER_CRASH_AT=POINT:N` in its
//! environment the process SIGKILLs itself the N-th time it reaches POINT, so
//! a test can kill it exactly inside a checkpoint commit or a target write
//! instead of hoping a random kill lands there.
//!
//! Owns: parsing that variable and the kill. Must not touch: anything else;
//! unset (always, outside tests) a check is one load of a parsed-once value.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Where the process may be told to die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// Before a write to the state database file: inside a commit.
    StoreWrite,
    /// After a chunk of a target body reached its temp file.
    TargetWrite,
    /// After a target was renamed to its final name, before its manifest row commits.
    TargetSaved,
    /// Inside a WARC record: its header and block written, its gzip member not finished.
    WarcWrite,
    /// After a chunk of a file `forager export` copies reached the destination.
    ExportWrite,
    /// Inside the parse of an RDF document or a structured-data page, after
    /// its journal line (`engine/runner/parsing.rs`).
    Parse,
    /// Inside a read of the state database: not a kill but a panic whose
    /// unwind meets a panicking destructor, as redb's do on some damaged
    /// pages ([`panic_twice_if_reached`]).
    StoreRead,
}

impl CrashPoint {
    fn parse(name: &str) -> Option<CrashPoint> {
        match name {
            "store-write" => Some(CrashPoint::StoreWrite),
            "target-write" => Some(CrashPoint::TargetWrite),
            "target-saved" => Some(CrashPoint::TargetSaved),
            "warc-write" => Some(CrashPoint::WarcWrite),
            "export-write" => Some(CrashPoint::ExportWrite),
            "parse" => Some(CrashPoint::Parse),
            "store-read" => Some(CrashPoint::StoreRead),
            _ => None,
        }
    }
}

/// The environment variable read once at the first check.
pub const ENV: &str = "FORAGER_CRASH_AT";

struct Armed {
    point: CrashPoint,
    at: u64,
    reached: AtomicU64,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let value = std::env::var(ENV).ok()?;
            let parsed = value.split_once(':').and_then(|(point, n)| {
                Some(Armed {
                    point: CrashPoint::parse(point)?,
                    at: n.parse().ok()?,
                    reached: AtomicU64::new(0),
                })
            });
            if parsed.is_none() {
                tracing::warn!(value = %value, "{ENV} is not POINT:N (store-write, target-write, target-saved, warc-write, export-write, parse, store-read); ignored");
            }
            parsed
        })
        .as_ref()
}

/// Whether `point` is armed in this process (to set up its instrumentation).
pub fn is_armed(point: CrashPoint) -> bool {
    armed().is_some_and(|a| a.point == point)
}

/// Count a pass through `point`; SIGKILL this process on the armed pass.
pub fn reached(point: CrashPoint) {
    let Some(a) = armed() else { return };
    if a.point == point && a.reached.fetch_add(1, Ordering::Relaxed) + 1 == a.at {
        // SIGKILL, not exit or abort: no destructor, flush or handler runs.
        // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// Count a pass through `point`; on the armed pass, panic with a value whose
/// destructor panics again during the unwind: what redb does when it panics
/// on a damaged page while holding one of its mutexes (the drop of its table
/// or transaction then unwraps the poisoned lock), which made the runtime
/// abort the process instead of the store reporting the damage.
pub fn panic_twice_if_reached(point: CrashPoint) {
    let Some(a) = armed() else { return };
    if a.point == point && a.reached.fetch_add(1, Ordering::Relaxed) + 1 == a.at {
        struct PanicsOnDrop;
        impl Drop for PanicsOnDrop {
            fn drop(&mut self) {
                panic!("crash point: a destructor panics during the unwind");
            }
        }
        let _guard = PanicsOnDrop;
        panic!("crash point: a panic inside a store read");
    }
}
