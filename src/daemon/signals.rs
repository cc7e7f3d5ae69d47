//! Unix signals: SIGTERM and SIGINT stop the daemon (a second one forces the
//! exit), SIGHUP reloads its config and rescans the jobs folder.

use tokio::signal::unix::{signal, SignalKind};
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

/// Install the handlers; events arrive on the returned channel. Must be
/// called inside the tokio runtime.
///
/// The first SIGTERM/SIGINT is forwarded; the second one exits the process at
/// once (jobs resume from their last committed checkpoint at the next start).
pub fn listen() -> std::io::Result<mpsc::UnboundedReceiver<SignalEvent>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stopping = false;
        loop {
            let event = tokio::select! {
                Some(()) = term.recv() => SignalEvent::Shutdown { signal: "SIGTERM" },
                Some(()) = int.recv() => SignalEvent::Shutdown { signal: "SIGINT" },
                Some(()) = hup.recv() => SignalEvent::Reload,
                else => return,
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
                        "stopping: jobs checkpoint, then the daemon exits (send it again to force)"
                    );
                    stopping = true;
                }
                SignalEvent::Reload => info!("SIGHUP: reloading the config and rescanning jobs"),
            }
            if tx.send(event).is_err() {
                return;
            }
        }
    });
    Ok(rx)
}
