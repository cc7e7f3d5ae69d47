//! The one harness of the integration tests: job files ([`job`]), every run
//! of the real binary, under a deadline ([`bin`]), `forager crawl`'s
//! arguments ([`crawl`]), loopback servers ([`sites`]) and their https
//! fronts with a test CA ([`tls`]), the conditions a
//! test compiles with ([`env`]), what `/proc` says of a process
//! ([`procfs`]) and a PostgreSQL server of a test's own ([`postgres`]).
//!
//! Each test module uses the part it needs (`crate::harness::…`).
#![allow(dead_code, unused_imports)]

pub mod bin;
pub mod crawl;
pub mod daemon;
pub mod job;
pub mod postgres;
pub mod procfs;
pub mod sites;
pub mod tls;

pub use crawl::Crawl;
pub use job::JobFile;
pub use sites::{manifest_by_final_url, serve_small_site};
