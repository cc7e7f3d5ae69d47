//! Conditional revisits, as pure logic: what forager remembers of a fetched
//! URL ([`Validators`]), the conditional request it sends next time
//! ([`conditional_headers`]), what the answer means ([`classify`]), and when to
//! come back ([`schedule`]), and the book of a continuous job's fetched URLs
//! that says which are due ([`RevisitBook`]).
//!
//! Owns: these types, their stored encoding (through [`crate::codec`])
//! and the revisit-interval rules. Must not touch: the network, the store's
//! tables, the clock (every time is an argument), or crawl decisions beyond
//! "when is this page due and how urgent is it".

mod book;
pub mod schedule;
mod validators;

pub use book::{
    BookDelta, RevisitBook, RevisitEntry, RevisitPolicy, RevisitState, RevisitStats, DUE_WINDOW,
};
pub use schedule::{ActionStats, PageSchedule, RevisitLearner, ScheduleConfig};
pub use validators::{classify, conditional_headers, Change, Validators, MAX_ETAG_LEN};
