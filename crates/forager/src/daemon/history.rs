//! What the daemon keeps of each job in the store beside its crawl state
//! ([`crate::store::Store::daemon_notes`]): a pause a person asked for, and
//! the dashboard's history — the harvest curve, the learner's last figures
//! (classifier accuracy, top actions), responses and errors by kind, the
//! last error. Without it a restarted daemon drew its plots from zero and
//! showed no accuracy until a job's first checkpoint.
//!
//! Saved by the main loop: at once for a pause or resume (it must hold
//! across a crash), once a minute for the jobs whose numbers changed, and
//! at shutdown. A crash costs at most a minute of plot, never crawl state.
//!
//! JSON rather than the store's bincode codec: the record gains fields from
//! one version to the next (`#[serde(default)]` reads an older one), and a
//! record that does not decode costs a plot, not a job (it is logged and
//! ignored).

use super::live::{Curve, ErrorKinds, LiveStats, StatusClasses};
use forager_core::strategy::StrategyStats;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One job's notes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobNotes {
    /// Unix seconds when `forager pause` paused it; `None` when it is not paused.
    #[serde(default)]
    pub paused_at: Option<u64>,
    /// (requests, targets), as [`Curve`] keeps them.
    #[serde(default)]
    pub curve: Vec<(u64, u64)>,
    /// The strategy's figures at its last checkpoint.
    #[serde(default)]
    pub stats: Option<StrategyStats>,
    #[serde(default)]
    pub responses: StatusClasses,
    #[serde(default)]
    pub errors: ErrorKinds,
    #[serde(default)]
    pub last_error: Option<String>,
    /// Unix seconds.
    #[serde(default)]
    pub last_error_at: Option<u64>,
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl JobNotes {
    /// What `live` holds now, with the pause the table knows.
    pub fn of(live: &LiveStats, paused_at: Option<SystemTime>) -> JobNotes {
        JobNotes {
            paused_at: paused_at.map(unix),
            curve: live.curve.points().to_vec(),
            stats: Some(live.stats.clone()),
            responses: live.responses,
            errors: live.errors.clone(),
            last_error: live.last_error.clone(),
            last_error_at: live.last_error_at.map(unix),
        }
    }

    /// Put the history into a fresh job's live numbers (nothing reported yet).
    pub fn restore_into(&self, live: &mut LiveStats) {
        live.curve = Curve::from_points(&self.curve);
        if let Some(stats) = &self.stats {
            live.stats = stats.clone();
        }
        live.responses = self.responses;
        live.errors = self.errors.clone();
        live.last_error = self.last_error.clone();
        live.last_error_at = self
            .last_error_at
            .map(|s| UNIX_EPOCH + Duration::from_secs(s));
    }

    /// When a person paused the job.
    pub fn paused_since(&self) -> Option<SystemTime> {
        self.paused_at.map(|s| UNIX_EPOCH + Duration::from_secs(s))
    }

    pub fn encode(&self) -> Vec<u8> {
        // A struct of plain fields always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<JobNotes, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::live::RequestFacts;
    use crate::store::JobCounters;
    use std::time::Instant;

    #[test]
    fn notes_carry_the_history_through_bytes() {
        let mut live = LiveStats::default();
        for (requests, status) in [(1, Some(200)), (2, Some(404)), (3, None)] {
            let c = JobCounters {
                requests,
                targets: requests / 2,
                ..Default::default()
            };
            let facts = RequestFacts {
                method: "GET",
                url: "http://a.test/x",
                status,
                latency: None,
            };
            live.on_request(&facts, &c, 1, Instant::now());
        }
        live.stats.classifier_predictions = 10;
        live.stats.classifier_correct = 9;
        let paused = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let notes = JobNotes::of(&live, Some(paused));
        let back = JobNotes::decode(&notes.encode()).unwrap();
        assert_eq!(back, notes);
        assert_eq!(back.paused_since(), Some(paused));
        let mut fresh = LiveStats::default();
        back.restore_into(&mut fresh);
        assert_eq!(fresh.curve.points(), [(1, 0), (2, 1), (3, 1)]);
        assert_eq!(fresh.stats.classifier_accuracy(), Some(0.9));
        assert_eq!(fresh.errors.len(), 2);
        assert_eq!(fresh.responses.failed, 1);
        assert!(fresh
            .last_error
            .as_deref()
            .unwrap()
            .contains("request failed"));
        // An older record (fewer fields) still reads.
        assert_eq!(JobNotes::decode(b"{}").unwrap(), JobNotes::default());
        assert!(JobNotes::decode(b"not json").is_err());
    }
}
