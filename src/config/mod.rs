//! Daemon configuration and job specifications: parse, validate, defaults, clear errors.
//!
//! Owns: the TOML formats of DESIGN §2 and the daemon config. Must not touch:
//! the network or the store. Every error names file, line and field.

use serde::{Deserialize, Serialize};

/// Which URLs belong to a job (DESIGN §2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeKind {
    /// The seed's host without `www.`, and its subdomains.
    #[default]
    Site,
    /// The seed's host only.
    Host,
    /// Everything (linked-data crawls); politeness per pay-level domain.
    Any,
}
