//! The learners behind the crawl strategies (ARCHITECTURE.md § Crawl loop): pure, synchronous,
//! deterministic given a seed.
//!
//! Owns: tag-path vectors ([`tagpath`]), action clustering ([`actions`]), the
//! AUER sleeping bandit ([`bandit`]), hashed URL features ([`features`]),
//! FTRL-proximal ([`ftrl`]), the online URL classifier ([`classifier`]), the
//! ranking of links within an action by where they lead ([`lead`]), the
//! MIME Bloom filters ([`mime_filter`]), the neither-pattern statistics
//! ([`neither`]) and early stopping ([`early_stop`]).
//!
//! Must not touch: the network, the disk, the clock, threads or global state.
//! Every learner is `Serialize + Deserialize` (through
//! [`crate::codec`]) such that a restored learner makes exactly the
//! decisions the saved one would have made; configuration is not stored but
//! given again after a restore (`set_config`).

pub mod actions;
pub mod bandit;
pub mod classifier;
pub mod early_stop;
pub mod features;
pub mod ftrl;
pub mod lead;
pub mod mime_filter;
pub mod neither;
pub mod tagpath;

pub use actions::{ActionConfig, ActionId, ActionIndex, Assignment};
pub use bandit::{ArmStats, AuerBandit, AuerConfig};
pub use classifier::{
    ClassifierConfig, NeitherConfig, OnlineAccuracy, Prediction, UrlClassifier,
    UrlClassifierWithoutTagPaths, Verdict,
};
pub use early_stop::{EarlyStop, EarlyStopConfig};
pub use features::{anthelion_tokens, LinkContext, ParentRelevance, UrlFeatures};
pub use ftrl::{FtrlConfig, FtrlModel};
pub use lead::{LeadConfig, LeadPrior, LeadRanker, LeadWeight};
pub use mime_filter::{BloomLayout, DirtyChunk, MimeFilterConfig, MimeFilterError, MimeFilters};
pub use neither::{NeitherCounts, NeitherDecision, NeitherPatternConfig, NeitherPatterns};
pub use tagpath::{PathVectorizer, SparseEntry, SparseVector};
