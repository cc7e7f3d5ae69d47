//! Loopback websites for tests and for the efficiency benchmark (DESIGN §7).
//!
//! Owns: the in-process HTTP server that serves several [`server::Site`]s at
//! once under made-up host names ([`server`]), the site kinds it serves — a
//! folder on disk ([`directory`]), a deterministic generated site of any size
//! ([`synthetic`]), the small hand-made site of the end-to-end test
//! ([`fixture`]) — and the ground truth of a site, computed by walking it in
//! memory ([`groundtruth`]).
//!
//! Must not touch: the crawl engine, the store or the network beyond
//! 127.0.0.1. A site is plain synchronous code behind [`server::Site`]: the
//! same object answers the HTTP server and the in-memory ground-truth walk, so
//! both always see the same website.

pub mod directory;
pub mod fixture;
pub mod groundtruth;
pub mod load;
pub mod report;
pub mod runner;
pub mod server;
pub mod synthetic;

mod rng;

pub use server::{
    Body, Chunk, ChunkSource, RequestRecord, Site, SiteRequest, SiteResponse, SiteServer,
};
