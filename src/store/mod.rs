//! Durable state: the redb database and the codec of every stored value.
//!
//! Owns: the schema (tables and key layout), encoding ([`codec`]), and the
//! single writer that commits checkpoints. Must not touch: the network, crawl
//! decisions. Everything a job knows is written here.

pub mod codec;
