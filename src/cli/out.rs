//! Command output that survives a closed pipe.
//!
//! `println!` panics when stdout is a pipe whose reader has gone (`forager
//! crawl … | tee out.txt` and Ctrl-C stops both). Output is a courtesy at
//! that point, so a broken pipe silences the rest of it; any other write
//! error is reported once on stderr.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout failed: later lines are dropped without trying again.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Write one line to stdout.
pub fn line(args: fmt::Arguments<'_>) {
    write_out(|w| {
        w.write_fmt(args)?;
        w.write_all(b"\n")
    });
}

/// Write text to stdout, as `print!` does.
pub fn text(args: fmt::Arguments<'_>) {
    write_out(|w| w.write_fmt(args));
}

fn write_out(f: impl FnOnce(&mut io::StdoutLock<'_>) -> io::Result<()>) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut lock = io::stdout().lock();
    if let Err(e) = f(&mut lock).and_then(|()| lock.flush()) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            error_line(format_args!("forager: writing to stdout: {e}"));
        }
    }
}

/// Write one line to stderr; a failure is ignored (there is nowhere left to report it).
pub fn error_line(args: fmt::Arguments<'_>) {
    let mut lock = io::stderr().lock();
    let _ = lock.write_fmt(args).and_then(|()| lock.write_all(b"\n"));
}
