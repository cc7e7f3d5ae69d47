//! forager-bench — the efficiency and load benchmarks, and the loopback
//! websites they and the tests crawl.
//!
//! Owns: the test webs ([`sites`]: synthetic sites, webs of many hosts,
//! linked and structured webs, a changing site, served on 127.0.0.1),
//! running a job of the real engine over one of them ([`runner`]), the ground truth of a site computed by
//! walking it in memory ([`groundtruth`]), its oracle floor (the requests a
//! crawler that knows the site needs, [`floor`]), the tables and plots of a run
//! ([`report`]), one job over a web of many hosts measured from the server's
//! log ([`multihost`]), the linked-data benchmark ([`linked`]), the open-data portals with each link source on and off ([`portal`]), the structured-data benchmark
//! ([`structured`]), continuous jobs over a site that changes over simulated
//! days ([`changing`]), forager side by side with a reference crawler the
//! user names ([`reference`]: CPU per MiB of HTML and per request), and the
//! daemon load benchmark ([`daemon_load`]), and a cluster of daemons on a
//! PostgreSQL server of its own against one daemon ([`cluster`]).
//!
//! Must not touch: the network beyond 127.0.0.1. It sits above the engine and
//! the daemon it measures (crate `forager`), and below the CLI. The
//! `forager` binary carries it only with its `bench` feature (on by
//! default), for the `demo` and `bench` commands.

pub mod changing;
pub mod cluster;
pub mod daemon_load;
pub mod floor;
pub mod groundtruth;
pub mod linked;
pub mod multihost;
pub mod portal;
pub mod reference;
pub mod report;
pub mod runner;
pub mod sites;
pub mod structured;
