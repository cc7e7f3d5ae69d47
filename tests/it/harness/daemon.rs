//! A `forager daemon` run by a test: started through [`bin`] with its
//! stdout and stderr in a log file (what a failure shows), signalled by
//! name, waited for with a deadline, and killed if the test ends first.

use super::bin;
use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The daemon process; killed if the test ends before it exits.
pub struct DaemonProcess {
    pub child: Child,
    log: PathBuf,
}

impl DaemonProcess {
    /// Start `cmd` (a [`bin::std_command`] with the daemon's arguments) with
    /// stdin closed and its output appended to `log`.
    pub fn start(cmd: &mut std::process::Command, log: PathBuf) -> DaemonProcess {
        let file = std::fs::File::create(&log)
            .unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
        let file2 = file
            .try_clone()
            .unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        cmd.stdin(Stdio::null()).stdout(file2).stderr(file);
        let child = bin::spawn_std(cmd);
        DaemonProcess { child, log }
    }

    /// What the daemon wrote so far.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }

    /// Send `SIG<name>` (`"TERM"`, `"HUP"`).
    pub fn signal(&self, name: &str) {
        let signal = match name {
            "TERM" => libc::SIGTERM,
            "HUP" => libc::SIGHUP,
            "INT" => libc::SIGINT,
            "KILL" => libc::SIGKILL,
            "STOP" => libc::SIGSTOP,
            "CONT" => libc::SIGCONT,
            other => panic!("no such signal in the harness: {other}"),
        };
        // SAFETY: kill(2) on our own child, not reaped yet (this owns it).
        let sent = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(sent, 0, "kill -{name}: {}", std::io::Error::last_os_error());
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait for the exit, at most `within`.
    pub fn wait(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("waiting for the daemon") {
                return Some(status);
            }
            // How often a bounded wait looks; it orders nothing.
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            eprintln!("--- daemon log ---\n{}", self.log());
        }
    }
}
