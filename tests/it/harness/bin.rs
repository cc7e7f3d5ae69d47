//! Every run of the `forager` binary under test goes through here, and every
//! run has a deadline: a hung crawl, daemon or bench must fail its test in
//! minutes, with the command and the tail of its stderr, instead of hanging
//! CI until the job is killed (it once ran 90 minutes on one hung bench).
//!
//! [`command`] and [`std_command`] make the commands (the binary, stdin
//! closed, killed when dropped where tokio can); [`output`], [`status`] and
//! their blocking twins run one to the end within [`DEADLINE`]; [`spawn`]
//! and [`spawn_std`] start one that the test stops itself, and [`wait`] /
//! [`wait_std`] wait for it within the deadline.

use std::io::Read;
use std::process::{ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one run of the binary may take. The slowest test run (the crash
/// soak, the bench) takes well under a minute on a quiet machine; ten times
/// that and more leaves room for a loaded CI runner and still fails in
/// minutes, not hours.
pub const DEADLINE: Duration = Duration::from_secs(600);

/// The binary under test.
pub fn forager() -> &'static str {
    env!("CARGO_BIN_EXE_forager")
}

/// `forager` with stdin closed, killed if the test drops it (a failed
/// assertion must not leave a crawl running).
pub fn command() -> tokio::process::Command {
    let mut c = tokio::process::Command::new(forager());
    c.stdin(Stdio::null()).kill_on_drop(true);
    c
}

/// The same, blocking: for tests that poll `/proc` or a daemon while it runs.
pub fn std_command() -> std::process::Command {
    let mut c = std::process::Command::new(forager());
    c.stdin(Stdio::null());
    c
}

/// How a command reads in a failure message.
fn describe(cmd: &std::process::Command) -> String {
    format!("{cmd:?}")
}

/// The last few KiB of a captured stream, for a failure message.
fn tail(bytes: &[u8]) -> String {
    const KEEP: usize = 4096;
    let from = bytes.len().saturating_sub(KEEP);
    String::from_utf8_lossy(&bytes[from..]).into_owned()
}

fn overdue(what: &str, within: Duration, stderr: &[u8]) -> ! {
    panic!(
        "{what} still running after {within:?}: killed it. Tail of its stderr:\n{}",
        tail(stderr)
    )
}

/// Run `cmd` to the end within [`DEADLINE`], stdout and stderr captured.
pub async fn output(cmd: &mut tokio::process::Command) -> Output {
    output_within(cmd, DEADLINE).await
}

/// [`output`] with another deadline.
pub async fn output_within(cmd: &mut tokio::process::Command, within: Duration) -> Output {
    use tokio::io::AsyncReadExt;
    let what = describe(cmd.as_std());
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    // Read both pipes while waiting (a child blocked on a full pipe would
    // never exit), into buffers that the deadline's message can still read.
    fn drain(
        pipe: Option<impl tokio::io::AsyncRead + Unpin + Send + 'static>,
    ) -> (Arc<Mutex<Vec<u8>>>, tokio::task::JoinHandle<()>) {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let task = tokio::spawn(async move {
            let Some(mut pipe) = pipe else { return };
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
                sink.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        (buf, task)
    }
    let (stdout, out_task) = drain(child.stdout.take());
    let (stderr, err_task) = drain(child.stderr.take());
    let status = match tokio::time::timeout(within, child.wait()).await {
        Ok(status) => status.unwrap_or_else(|e| panic!("waiting for {what}: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            let stderr = stderr.lock().unwrap().clone();
            overdue(&what, within, &stderr)
        }
    };
    let _ = out_task.await;
    let _ = err_task.await;
    let stdout = std::mem::take(&mut *stdout.lock().unwrap());
    let stderr = std::mem::take(&mut *stderr.lock().unwrap());
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Run `cmd` to the end within [`DEADLINE`]; its exit status. The output is
/// captured (not shown) so that a run past the deadline can say what it said.
pub async fn status(cmd: &mut tokio::process::Command) -> ExitStatus {
    output(cmd).await.status
}

/// Start `cmd`, which the test ends itself (a signal, a kill); killed if the
/// test drops it. Wait for it with [`wait`].
pub fn spawn(cmd: &mut tokio::process::Command) -> tokio::process::Child {
    cmd.kill_on_drop(true);
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", describe(cmd.as_std())))
}

/// Wait within [`DEADLINE`] for a child of [`spawn`]; kill it and fail after.
pub async fn wait(child: &mut tokio::process::Child) -> ExitStatus {
    match tokio::time::timeout(DEADLINE, child.wait()).await {
        Ok(status) => status.expect("waiting for forager"),
        Err(_) => {
            let _ = child.kill().await;
            overdue("forager (spawned)", DEADLINE, b"(not captured)")
        }
    }
}

/// Run `cmd` to the end within [`DEADLINE`], blocking; stdout and stderr captured.
pub fn output_blocking(cmd: &mut std::process::Command) -> Output {
    let what = describe(cmd);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    fn drain(
        pipe: Option<impl Read + Send + 'static>,
    ) -> (Arc<Mutex<Vec<u8>>>, std::thread::JoinHandle<()>) {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let thread = std::thread::spawn(move || {
            let Some(mut pipe) = pipe else { return };
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                sink.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        (buf, thread)
    }
    let (stdout, out_thread) = drain(child.stdout.take());
    let (stderr, err_thread) = drain(child.stderr.take());
    let status = wait_std_within(&mut child, &what, DEADLINE, || {
        stderr.lock().unwrap().clone()
    });
    let _ = out_thread.join();
    let _ = err_thread.join();
    let stdout = std::mem::take(&mut *stdout.lock().unwrap());
    let stderr = std::mem::take(&mut *stderr.lock().unwrap());
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Start a blocking `cmd` that the test ends itself; wait with [`wait_std`].
/// Its owner kills it when dropped (see the daemon fixtures).
pub fn spawn_std(cmd: &mut std::process::Command) -> std::process::Child {
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", describe(cmd)))
}

/// Wait within [`DEADLINE`] for a child of [`spawn_std`]; kill it and fail after.
pub fn wait_std(child: &mut std::process::Child) -> ExitStatus {
    wait_std_within(child, "forager (spawned)", DEADLINE, || {
        b"(not captured)".to_vec()
    })
}

fn wait_std_within(
    child: &mut std::process::Child,
    what: &str,
    within: Duration,
    stderr: impl Fn() -> Vec<u8>,
) -> ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) if Instant::now() < deadline => {
                // How often a bounded wait looks; it orders nothing.
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                overdue(what, within, &stderr())
            }
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    }
}

/// Wait, within [`DEADLINE`], until `seen()` holds (a test's server saw the
/// requests after which it stops the child) or the child has exited; true
/// if it exited first. A stop follows what the server saw, never a clock: on
/// a loaded machine a sleep can end before the first request.
pub async fn until(child: &mut tokio::process::Child, seen: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if child.try_wait().ok().flatten().is_some() {
            return true;
        }
        if seen() {
            return false;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not see what the test waits for within {DEADLINE:?}"
        );
        // How often the server's log is read; it orders nothing.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Send `signal` to a child of [`spawn`] (if it still runs) and wait for it.
pub async fn stop(child: &mut tokio::process::Child, signal: i32) -> ExitStatus {
    if let Some(pid) = child.id() {
        // SAFETY: signalling our own child by pid; it is not reaped yet
        // (`id` is None once it is), so the pid is still its own.
        unsafe { libc::kill(pid as i32, signal) };
    }
    wait(child).await
}

/// Wait within [`DEADLINE`] for a child of [`spawn`] whose output was piped
/// ([`crate::harness::Crawl::command`]); its output.
pub async fn finish(child: tokio::process::Child) -> Output {
    match tokio::time::timeout(DEADLINE, child.wait_with_output()).await {
        Ok(out) => out.expect("waiting for forager"),
        // Dropping the child (kill_on_drop, set by `spawn`) killed it.
        Err(_) => overdue("forager (spawned)", DEADLINE, b"(not captured)"),
    }
}

/// [`output_blocking`]'s exit status (the output is captured, not shown).
pub fn status_blocking(cmd: &mut std::process::Command) -> ExitStatus {
    output_blocking(cmd).status
}
