//! What a caught panic said, for a log line or an error: a parser or a
//! library that panics on hostile bytes costs one page or one file, and the
//! message says which.

use std::any::Any;
use std::cell::{Cell, RefCell};

thread_local! {
    /// Depth of [`catch_quietly`] calls on this thread.
    static QUIET: Cell<u32> = const { Cell::new(0) };
    /// Panics the hook saw inside [`catch_quietly`] that no `catch_quietly`
    /// has caught yet: a second one while the first is in flight was raised
    /// by a destructor during the unwind, and the runtime aborts after it.
    static IN_FLIGHT: Cell<u32> = const { Cell::new(0) };
    /// The innermost [`catch_quietly_or_exit`]'s last word.
    static LAST_WORD: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The exit code of a command that ends on an error (`ExitCode::FAILURE`),
/// used by the last word of [`catch_quietly_or_exit`].
pub const ERROR_EXIT_CODE: i32 = 1;

/// Runs `f`, catching a panic, with the panic hook silent meanwhile: the
/// caller turns the panic into an error that says what happened and what to
/// do (a damaged store names `forager repair`), so the default hook's
/// `thread … panicked at …/redb/…: internal error: entered unreachable
/// code` would only alarm, and say nothing of the way out.
pub fn catch_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    QUIET.with(|q| q.set(q.get() + 1));
    let in_flight = IN_FLIGHT.with(Cell::get);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    // A panic caught here is no longer in flight.
    IN_FLIGHT.with(|n| n.set(in_flight));
    QUIET.with(|q| q.set(q.get() - 1));
    result
}

/// [`catch_quietly`], and if a destructor panics while a first panic unwinds
/// out of `f` — the runtime then aborts, and no `catch_unwind` can stop it —
/// the panic hook prints `forager: {last_word}` and exits with
/// [`ERROR_EXIT_CODE`] instead.
///
/// Why: redb's destructors (`Table`, `WriteTransaction`, `PageImpl`) take
/// its mutexes with `lock().unwrap()` and `unwrap` map lookups; after redb
/// panicked on a damaged page while holding one, the drop of a table or
/// transaction during the unwind panics again, and the process died with
/// `thread caused non-unwinding panic. aborting.` (issue #36 item 9: one
/// store with bytes flipped at 1 622 869). Those drops happen inside redb
/// and inside every store closure, so no drop order of ours avoids them; the
/// store's caller passes the same error it would have returned (naming
/// `forager repair --state-dir DIR`), so the user sees the way out either way.
pub fn catch_quietly_or_exit<R>(
    last_word: String,
    f: impl FnOnce() -> R,
) -> std::thread::Result<R> {
    LAST_WORD.with(|w| w.borrow_mut().push(last_word));
    let result = catch_quietly(f);
    LAST_WORD.with(|w| w.borrow_mut().pop());
    result
}

/// Puts a hook in front of the current one that lets [`catch_quietly`]'s
/// panics go by at debug level; every other panic is reported as before.
pub fn install_quiet_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if QUIET.with(Cell::get) > 0 {
            // `std::thread::panicking()` cannot tell a nested panic: it is
            // already true in the hook of the first one; count instead.
            let nested = IN_FLIGHT.with(|n| {
                n.set(n.get() + 1);
                n.get() > 1
            });
            tracing::debug!(panic = %info, nested, "panic caught; reported as an error");
            if nested {
                let last_word = LAST_WORD.with(|w| w.borrow().last().cloned());
                if let Some(last_word) = last_word {
                    tracing::debug!("a destructor panicked during the unwind; exiting before the runtime aborts");
                    eprintln!("forager: {last_word}");
                    std::process::exit(ERROR_EXIT_CODE);
                }
            }
        } else {
            previous(info);
        }
    }));
}

/// The message of a panic payload (`panic!` with a literal or a format), or
/// `None` for a payload of another type.
pub fn panic_message(payload: &(dyn Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn literal_and_formatted_panics_give_their_message_others_none() {
        let literal = std::panic::catch_unwind(|| panic!("bad page")).err();
        let formatted = std::panic::catch_unwind(|| panic!("bad page {}", 7)).err();
        let other = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).err();
        assert_eq!(
            literal.and_then(|p| panic_message(&*p)).as_deref(),
            Some("bad page")
        );
        assert_eq!(
            formatted.and_then(|p| panic_message(&*p)).as_deref(),
            Some("bad page 7")
        );
        assert_eq!(other.and_then(|p| panic_message(&*p)), None);
    }
}
