//! The daemon's logging: text or JSON lines on stderr (journald stores them),
//! filtered by `--log`, else the config's `log_level`, else `RUST_LOG`, else
//! `info`. The filter sits behind a reload layer so SIGHUP can apply a new
//! `log_level` without a restart; `log_format` needs a restart.
//!
//! The filter chosen at start lives in a process-wide cell: there is one
//! global subscriber, so there is one handle to change it.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use tracing::{info, warn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

/// Filter when nothing says otherwise: a service logs what it does.
pub const DEFAULT_FILTER: &str = "info";

/// Where the filter in force came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterSource {
    /// `--log`: fixed for the life of the process; SIGHUP does not change it.
    CommandLine,
    /// `log_level` in the daemon config.
    Config,
    /// `RUST_LOG` (the config sets no `log_level`).
    Environment,
    Default,
}

/// A filter and its origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChosenFilter {
    pub filter: String,
    pub source: FilterSource,
}

/// The filter in force, by precedence: command line, config, environment, default.
pub fn choose(
    command_line: Option<&str>,
    config: Option<&str>,
    environment: Option<&str>,
) -> ChosenFilter {
    let pick = |filter: &str, source| ChosenFilter {
        filter: filter.trim().to_string(),
        source,
    };
    let usable = |f: &&str| !f.trim().is_empty();
    if let Some(f) = command_line.filter(usable) {
        pick(f, FilterSource::CommandLine)
    } else if let Some(f) = config.filter(usable) {
        pick(f, FilterSource::Config)
    } else if let Some(f) = environment.filter(usable) {
        pick(f, FilterSource::Environment)
    } else {
        pick(DEFAULT_FILTER, FilterSource::Default)
    }
}

/// What a reload did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// The new filter is in force.
    Applied(String),
    /// The filter did not change.
    Unchanged,
    /// `--log` fixes the filter; the config's `log_level` is ignored.
    OverriddenByCommandLine,
    /// Logging was not set up by [`init`] (tests, library use).
    NotInitialised,
    Failed(String),
}

struct Control {
    handle: reload::Handle<EnvFilter, Registry>,
    chosen: ChosenFilter,
}

static CONTROL: OnceLock<Mutex<Control>> = OnceLock::new();

fn parse(filter: &str) -> Result<EnvFilter, String> {
    EnvFilter::builder()
        .parse(filter)
        .map_err(|e| format!("invalid log filter {filter:?}: {e}"))
}

/// Install the global subscriber for `forager daemon --config CONFIG`.
/// `command_line` is `--log`; JSON lines when `json` (`--log-json`) or the
/// config's `log_format = "json"`. A config that cannot be read here is
/// reported by the daemon right after; logging then takes its defaults.
pub fn init(command_line: Option<&str>, json: bool, config: &Path) {
    let loaded = forager_core::config::load_daemon(config).ok();
    let json = json
        || loaded
            .as_ref()
            .is_some_and(|c| c.log_format == forager_core::config::LogFormat::Json);
    let environment = std::env::var("RUST_LOG").ok();
    let mut chosen = choose(
        command_line,
        loaded.as_ref().and_then(|c| c.log_level.as_deref()),
        environment.as_deref(),
    );
    let mut refused = None;
    let filter = match parse(&chosen.filter) {
        Ok(f) => f,
        Err(e) => {
            // Only --log and RUST_LOG get here (log_level was validated): say so once logging works.
            refused = Some(e);
            chosen = choose(None, None, None);
            EnvFilter::new(DEFAULT_FILTER)
        }
    };
    let (filter, handle) = reload::Layer::new(filter);
    // Colours only for a person at a terminal: journald and log files get plain text.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let installed = if json {
        tracing_subscriber::registry()
            .with(filter)
            .with(fmt.json())
            .try_init()
    } else {
        tracing_subscriber::registry()
            .with(filter)
            .with(fmt)
            .try_init()
    };
    if installed.is_err() {
        // Someone else owns the global subscriber; there is nothing of ours to reload.
        return;
    }
    if let Some(e) = refused {
        warn!("{e}; logging at {DEFAULT_FILTER:?}");
    }
    let _ = CONTROL.set(Mutex::new(Control { handle, chosen }));
}

/// Apply the config's `log_level` after a reload (`None`: the key is gone,
/// so `RUST_LOG` or the default again).
pub fn reload_config(log_level: Option<&str>) -> ReloadOutcome {
    let Some(control) = CONTROL.get() else {
        return ReloadOutcome::NotInitialised;
    };
    // A panic while holding it cannot tear a handle and a string apart in a harmful way.
    let mut control = control.lock().unwrap_or_else(|p| p.into_inner());
    if control.chosen.source == FilterSource::CommandLine {
        return ReloadOutcome::OverriddenByCommandLine;
    }
    let environment = std::env::var("RUST_LOG").ok();
    let wanted = choose(None, log_level, environment.as_deref());
    if wanted.filter == control.chosen.filter {
        control.chosen = wanted;
        return ReloadOutcome::Unchanged;
    }
    let filter = match parse(&wanted.filter) {
        Ok(f) => f,
        Err(e) => return ReloadOutcome::Failed(e),
    };
    match control.handle.reload(filter) {
        Ok(()) => {
            let applied = wanted.filter.clone();
            control.chosen = wanted;
            ReloadOutcome::Applied(applied)
        }
        Err(e) => ReloadOutcome::Failed(format!("reloading the log filter: {e}")),
    }
}

/// [`reload_config`] with its outcome logged.
pub fn reload_and_log(log_level: Option<&str>) {
    match reload_config(log_level) {
        ReloadOutcome::Applied(filter) => info!(filter = %filter, "log filter changed"),
        ReloadOutcome::Unchanged | ReloadOutcome::NotInitialised => {}
        ReloadOutcome::OverriddenByCommandLine => {
            warn!("log_level not applied: --log on the command line fixes the log filter")
        }
        ReloadOutcome::Failed(e) => warn!("log_level not applied: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_beats_the_config_which_beats_the_environment() {
        let c = choose(Some("debug"), Some("warn"), Some("trace"));
        assert_eq!(c.filter, "debug");
        assert_eq!(c.source, FilterSource::CommandLine);
        let c = choose(None, Some("warn"), Some("trace"));
        assert_eq!(
            (c.filter.as_str(), c.source),
            ("warn", FilterSource::Config)
        );
        let c = choose(None, None, Some("trace"));
        assert_eq!(
            (c.filter.as_str(), c.source),
            ("trace", FilterSource::Environment)
        );
        // An empty RUST_LOG (systemd's `Environment=RUST_LOG=`) means unset.
        let c = choose(None, None, Some("  "));
        assert_eq!(
            (c.filter.as_str(), c.source),
            (DEFAULT_FILTER, FilterSource::Default)
        );
    }

    #[test]
    fn without_init_a_reload_is_a_no_op() {
        // Unit tests never install the daemon's subscriber.
        if CONTROL.get().is_none() {
            assert_eq!(reload_config(Some("debug")), ReloadOutcome::NotInitialised);
        }
    }

    #[test]
    fn a_reload_layer_changes_what_is_logged() {
        use std::sync::Arc;
        use tracing_subscriber::fmt::MakeWriter;

        /// Collects formatted log output.
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        impl<'a> MakeWriter<'a> for Sink {
            type Writer = Sink;
            fn make_writer(&'a self) -> Sink {
                self.clone()
            }
        }

        let sink = Sink::default();
        let (filter, handle) = reload::Layer::new(parse("warn").unwrap());
        let subscriber = tracing_subscriber::registry().with(filter).with(
            tracing_subscriber::fmt::layer()
                .with_writer(sink.clone())
                .with_ansi(false),
        );
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("hidden at warn");
            handle.reload(parse("info").unwrap()).unwrap();
            tracing::info!("shown at info");
        });
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("hidden at warn"), "{text}");
        assert!(text.contains("shown at info"), "{text}");
        assert!(parse("info,forager=loud").is_err());
    }
}
