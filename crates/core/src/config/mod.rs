//! Daemon configuration and job specifications: parse, validate, defaults, clear errors.
//!
//! Owns: the TOML formats of ARCHITECTURE.md § Job files (job files, [`JobSpec`]) and of the
//! daemon config ([`DaemonConfig`]), their defaults, and which files of the
//! jobs folder are job files ([`is_job_file`]). Must not touch: the network,
//! the store, or any file but the one it is asked to read.
//!
//! Every error is a [`ConfigError`] naming file, line and field on one line
//! (`jobs.d/bea.toml:12: budget.requests: expected an integer, found a string`);
//! unknown keys are errors at every level, so a typo is never silently ignored.
//! Nothing here panics on any input: the parsers walk toml's spanned tree by
//! hand ([`reader`]) instead of deriving serde, to keep the field path and line
//! of every refusal.

mod cluster;
mod daemon;
mod error;
mod files;
mod http;
mod job;
mod reader;
mod render;
mod units;

pub use cluster::{
    is_valid_node_name, ClusterConfig, DatabasePassword, DEFAULT_LEASE, MAX_LEASE, MAX_NODE_LEN,
    MIN_LEASE,
};
pub use daemon::{
    load_daemon, parse_daemon, parse_daemon_all, DaemonConfig, LogFormat, WatchMode,
    DEFAULT_PARSE_MEMORY, MIN_PARSE_MEMORY,
};
pub use error::ConfigError;
pub use files::{is_job_file, job_name_from_path, read_config_file, MAX_CONFIG_FILE_BYTES};
pub use job::{
    check_extension, check_mime_pattern, check_user_agent, is_valid_job_name, load_job, parse_job,
    parse_job_all, BudgetSpec, JobMode, JobSpec, LimitsSpec, NeitherLinks, OutputSpec,
    PolitenessSpec, RevisitSpec, StructuredTargets, TargetsSpec, DEFAULT_BLOCK_EXT,
    DEFAULT_BLOCK_MIME, DEFAULT_MIN_STATEMENTS, DEFAULT_STRIP_PARAMS, DEFAULT_USER_AGENT,
    DEFAULT_WARC_MAX_SIZE, MAX_DELAY, MAX_NAME_LEN,
};
pub use render::{
    RenderMode, RenderSpec, CHROMIUM_NAMES, DEFAULT_RENDER_MAX_MEMORY, DEFAULT_RENDER_MAX_REQUESTS,
    DEFAULT_RENDER_PAGES, DEFAULT_RENDER_TIMEOUT,
};
pub use units::{parse_duration, parse_size, show_duration, show_size};

/// The first of a non-empty error list (the `parse_*_all` functions never return an empty one).
fn first(errors: Vec<ConfigError>) -> ConfigError {
    errors
        .into_iter()
        .next()
        .unwrap_or_else(|| ConfigError::new(std::path::Path::new(""), None, "", "invalid file"))
}

#[cfg(test)]
mod tests;
