//! Unix signals, as one stream: SIGTERM and SIGINT stop (a second one forces
//! the exit), SIGHUP reloads the daemon's config and rescans the jobs folder.
//!
//! The handlers come from `signal-hook`: its iterator runs on a thread of its
//! own, so a signal is seen even while every runtime worker is busy, and the
//! daemon and `forager crawl` read the same stream.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tokio::sync::mpsc;
use tracing::{error, info};

/// Exit status of a forced exit (a second SIGTERM/SIGINT): 128 + SIGINT, as shells report Ctrl-C.
pub const FORCED_EXIT_CODE: i32 = 130;

/// What a signal asks of the daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalEvent {
    /// Stop every job (they checkpoint), close the store, exit 0.
    Shutdown { signal: &'static str },
    /// Re-read the daemon config and rescan the jobs folder.
    Reload,
}

/// Install the handlers; events arrive on the returned channel.
///
/// The first SIGTERM/SIGINT is forwarded; the second one exits the process at
/// once (jobs resume from their last committed checkpoint at the next start).
pub fn listen() -> std::io::Result<mpsc::UnboundedReceiver<SignalEvent>> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("forager-signals".into())
        .spawn(move || {
            let mut stopping = false;
            for number in signals.forever() {
                let event = match number {
                    SIGTERM => SignalEvent::Shutdown { signal: "SIGTERM" },
                    SIGINT => SignalEvent::Shutdown { signal: "SIGINT" },
                    _ => SignalEvent::Reload,
                };
                match event {
                    SignalEvent::Shutdown { signal } if stopping => {
                        error!(
                            signal,
                            "second stop signal: exiting now; jobs resume from their last checkpoint"
                        );
                        std::process::exit(FORCED_EXIT_CODE);
                    }
                    SignalEvent::Shutdown { signal } => {
                        info!(
                            signal,
                            "stopping: jobs checkpoint, then the process exits (send it again to force)"
                        );
                        stopping = true;
                    }
                    SignalEvent::Reload => info!("SIGHUP: reloading the config and rescanning jobs"),
                }
                if tx.send(event).is_err() {
                    return;
                }
            }
        })?;
    Ok(rx)
}
