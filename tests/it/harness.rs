//! The one harness of the integration tests: job files ([`job`]), runs of the
//! real binary ([`crawl`]), loopback servers ([`sites`]) and what `/proc`
//! says of a process ([`procfs`]).
//!
//! Each test crate includes it with `mod common;` and uses a part of it.
#![allow(dead_code, unused_imports)]

pub mod crawl;
pub mod job;
pub mod procfs;
pub mod sites;

pub use crawl::Crawl;
pub use job::JobFile;
pub use sites::{manifest_by_final_url, serve_small_site};
