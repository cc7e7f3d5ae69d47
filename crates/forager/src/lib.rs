//! forager — the harvesting daemon's I/O: fetching, storing, writing what
//! a job finds, running jobs, the daemon.
//!
//! Data flows one way: [`daemon`] → [`engine`] (one job runner per job,
//! driving the pure job core of `forager_core::job`) → [`fetch`] → [`store`]
//! and [`output`]. What to fetch and what a page says are decided in
//! `forager_core`, which this crate depends on and which knows nothing of
//! it. [`exchange`] is what an HTTP exchange looked like on the wire (for
//! the WARC writer), [`crashpoint`] the named points where a test may kill
//! the process, [`panics`] what a caught panic said, [`render`] headless
//! Chromium for pages built by scripts (its requests served by the engine). `ARCHITECTURE.md`
//! draws the map.

pub mod crashpoint;
pub mod daemon;
pub mod engine;
pub mod exchange;
pub mod fetch;
pub mod output;
pub mod panics;
pub mod render;
pub mod store;
