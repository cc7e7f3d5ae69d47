//! forager-core — what a crawl decides, with no I/O.
//!
//! Owns the vocabulary every layer shares and the logic that is a pure
//! function of it: [`link`] (what a link is), [`mime`] (what a response is:
//! HTML, target or neither), [`codec`] (how every stored value is encoded),
//! [`hash`] (the fixed hash functions stored values rely on), [`chunk`]
//! (content-defined chunks of stored blobs),
//! [`http_options`] (what a job adds to its requests), [`politeness`] (the
//! adaptive delay and the back-off of a failing origin), [`config`] (job and
//! daemon files), [`extract`] (links and structured data out of a page),
//! [`rdf`] (RDF documents), [`learn`] (the learning primitives),
//! [`strategy`] (which link next), [`revisit`] (when to look again),
//! [`record`] (what a job stores between checkpoints), [`render`] (whether
//! a page looks built by scripts and whether rendering pays on its site) and [`job`] (the job
//! core: one job's state and its step protocol, with an in-memory driver,
//! [`job::replay`], that runs a crawl without a network).
//!
//! Must not touch: the network, the store, threads or a clock it is not
//! handed; the only files it reads are the config files and the secrets they
//! name ([`config`]). The crate has no tokio, reqwest or redb among its
//! dependencies, so the compiler keeps that rule: the product crate
//! (`forager`) does the I/O and calls in here.
//!
//! Imports point down this list, no module imports one above it: `job` →
//! `config` → `strategy`, `rdf`, `revisit` → `extract`, `learn`, `record` →
//! `link` → `hash`, `chunk`, `mime`, `codec`, `http_options`, `politeness`.

pub mod catalog;
pub mod chunk;
pub mod codec;
pub mod config;
pub mod extract;
pub mod form;
pub mod hash;
pub mod http_options;
pub mod job;
pub mod learn;
pub mod link;
pub mod mime;
pub mod politeness;
pub mod rdf;
pub mod record;
pub mod render;
pub mod revisit;
pub mod strategy;
