//! Loopback websites, for tests and for the benchmark.
//!
//! Owns: the in-process HTTP server that serves several [`server::Site`]s at
//! once under made-up host names ([`server`]), and the site kinds it serves —
//! a folder on disk ([`directory`]), a deterministic generated site of any size
//! ([`synthetic`]), the small hand-made site of the end-to-end test
//! ([`fixture`]), a web of many small hosts for cross-host jobs ([`web`]), a web of
//! linked data served by content negotiation ([`linked`], and webs of other
//! shapes in `linked::shapes`), a web of hosts
//! of which a few embed structured data ([`structured`]), open-data portals
//! whose catalogs reach files their HTML does not ([`portal`]), and a site that
//! publishes and revises files over simulated days ([`changing`]).
//!
//! Must not touch: anything of the crawl (engine, store, strategies) or the
//! network beyond 127.0.0.1. This is the bottom of the crate: a site is plain
//! synchronous code behind [`server::Site`], so the same object answers the
//! HTTP server and the benchmark's in-memory ground-truth walk, and both
//! always see the same website.

pub mod changing;
pub mod directory;
pub mod fixture;
pub mod linked;
pub mod portal;
pub mod server;
pub mod structured;
pub mod synthetic;
pub mod web;

mod rng;

pub use server::{
    Body, Chunk, ChunkSource, RequestRecord, Site, SiteRequest, SiteResponse, SiteServer,
};
