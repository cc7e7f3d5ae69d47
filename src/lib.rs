//! forager — a focused harvesting crawler.
//!
//! Data flows one way: [`daemon`] → [`engine`] (one job runner per job) →
//! [`fetch`] / [`extract`] → [`strategy`] (built from the pure [`learn`]
//! primitives) → [`store`] and [`output`]. [`bench`] serves loopback sites and
//! measures harvest efficiency through the same engine.
//!
//! The small shared vocabulary lives at the top: [`link`] (what a link is) and
//! [`mime`] (what a response is: HTML, target or neither), [`exchange`] (what
//! an HTTP exchange looked like on the wire, for the WARC writer). [`revisit`]
//! holds the pure logic of conditional revisits (validators, schedule).

pub mod bench;
pub mod cli;
pub mod config;
pub mod crashpoint;
pub mod daemon;
pub mod engine;
pub mod exchange;
pub mod extract;
pub mod fetch;
pub mod learn;
pub mod link;
pub mod mime;
pub mod output;
pub mod revisit;
pub mod store;
pub mod strategy;
