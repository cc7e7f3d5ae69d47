//! What a caught panic said, for a log line or an error: a parser or a
//! library that panics on hostile bytes costs one page or one file, and the
//! message says which.

use std::any::Any;

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
