//! What a caught panic said, for a log line or an error: a parser or a
//! library that panics on hostile bytes costs one page or one file, and the
//! message says which.

use std::any::Any;
use std::cell::Cell;

thread_local! {
    /// Depth of [`catch_quietly`] calls on this thread.
    static QUIET: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, catching a panic, with the panic hook silent meanwhile: the
/// caller turns the panic into an error that says what happened and what to
/// do (a damaged store names `forager repair`), so the default hook's
/// `thread … panicked at …/redb/…: internal error: entered unreachable
/// code` would only alarm, and say nothing of the way out.
pub fn catch_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    QUIET.with(|q| q.set(q.get() + 1));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(q.get() - 1));
    result
}

/// Puts a hook in front of the current one that lets [`catch_quietly`]'s
/// panics go by at debug level; every other panic is reported as before.
pub fn install_quiet_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if QUIET.with(Cell::get) > 0 {
            tracing::debug!(panic = %info, "panic caught; reported as an error");
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
