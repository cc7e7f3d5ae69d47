//! forager — a focused harvesting crawler.
//!
//! Data flows one way: [`daemon`] → [`engine`] (one job runner per job) →
//! [`fetch`] / [`extract`] → [`strategy`] (built from the pure [`learn`]
//! primitives) → [`store`] and [`output`]. [`bench`] measures harvest
//! efficiency through the same engine, on the loopback websites of [`sites`],
//! which need nothing of the crawl and sit at the bottom.
//!
//! The small shared vocabulary lives at the bottom too: [`link`] (what a link
//! is), [`mime`] (what a response is: HTML, target or neither), [`exchange`]
//! (what an HTTP exchange looked like on the wire, for the WARC writer),
//! [`http_options`] (what a job adds to its requests: headers, credentials, a
//! proxy), [`codec`] (how every stored value is encoded) and [`panics`] (what a
//! caught panic said). [`revisit`] holds the pure
//! logic of conditional revisits (validators, schedule). `ARCHITECTURE.md`
//! draws the map.

pub mod bench;
pub mod cli;
pub mod codec;
pub mod config;
pub mod crashpoint;
pub mod daemon;
pub mod engine;
pub mod exchange;
pub mod extract;
pub mod fetch;
pub mod http_options;
pub mod learn;
pub mod link;
pub mod mime;
pub mod output;
pub mod panics;
pub mod rdf;
pub mod revisit;
pub mod sites;
pub mod store;
pub mod strategy;
