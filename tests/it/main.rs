//! forager's integration tests, linked into one test binary (ripgrep's
//! layout): each former `tests/*.rs` file is a module here, and they share
//! one [`harness`] for job files, loopback sites, runs of the `forager`
//! binary (always under a deadline) and the daemon.
//!
//! One binary instead of twenty: each test binary links the whole crate and
//! its dependencies (100+ MB with debug info), and linking them was most of
//! CI's build time. Run one module with `cargo test --release --test it
//! crawl::`, one test by its full name.

mod harness;

mod bench_smoke;
mod changing;
mod cluster;
mod continuous;
mod crash;
mod crawl;
mod daemon;
mod dayuse;
mod diskfull;
mod export;
mod hostile;
mod linked;
mod lv2;
mod manifest;
mod multihost;
mod naming;
mod politeness;
mod portal;
mod portal_sources;
mod rdf_oracle;
mod render;
mod resume;
mod retries;
mod store_faults;
mod structured;
mod tls;
mod warc;
