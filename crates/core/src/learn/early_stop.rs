//! Early stopping (sb-classifier §4.8, ARCHITECTURE.md § Crawl loop).
//!
//! Every `window` (k = 500) requests, the slope = new targets / k of that
//! window feeds an exponential moving average with decay 0.8 (the first
//! window starts it); the job stops when the average stays below 0.005 for 10
//! consecutive windows. The paper's own values were lost in extraction: these
//! are the design's defaults, tuned on the benchmark.

use serde::{Deserialize, Serialize};

/// Windows closed by one [`EarlyStop::record`] call at most.
const MAX_WINDOWS_PER_CALL: u64 = 1_000;

/// Tuning of early stopping (all configurable per job).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EarlyStopConfig {
    pub enabled: bool,
    /// Requests per window (k).
    pub window: u64,
    /// Weight of the previous average (β of `ema = β·ema + (1-β)·slope`).
    pub decay: f64,
    /// Slope average under which a window counts as exhausted.
    pub threshold: f64,
    /// Consecutive exhausted windows that stop the job.
    pub patience: u32,
}

impl Default for EarlyStopConfig {
    fn default() -> Self {
        EarlyStopConfig {
            enabled: true,
            window: 500,
            decay: 0.8,
            threshold: 0.005,
            patience: 10,
        }
    }
}

/// Early-stopping state of one job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EarlyStop {
    #[serde(skip)]
    config: EarlyStopConfig,
    requests_in_window: u64,
    targets_in_window: u64,
    average: Option<f64>,
    windows_below: u32,
    windows: u64,
    stopped: bool,
}

impl EarlyStop {
    pub fn new(config: EarlyStopConfig) -> Self {
        EarlyStop {
            config,
            ..Default::default()
        }
    }

    pub fn config(&self) -> EarlyStopConfig {
        self.config
    }

    /// Change the tuning (configuration is not stored).
    pub fn set_config(&mut self, config: EarlyStopConfig) {
        self.config = config;
    }

    /// Account for `requests` more requests that found `new_targets` new
    /// targets; returns true when the job should stop. When a call spans
    /// several windows, its targets count in the first one it closes.
    pub fn record(&mut self, requests: u64, new_targets: u64) -> bool {
        if self.stopped {
            return self.should_stop();
        }
        self.requests_in_window = self.requests_in_window.saturating_add(requests);
        self.targets_in_window = self.targets_in_window.saturating_add(new_targets);
        let k = self.config.window.max(1);
        let windows = self.requests_in_window / k;
        self.requests_in_window %= k;
        // Past a few hundred empty windows the average has long converged: a
        // call spanning millions of windows must not loop millions of times.
        for i in 0..windows.min(MAX_WINDOWS_PER_CALL) {
            let slope = if i == 0 {
                std::mem::take(&mut self.targets_in_window) as f64 / k as f64
            } else {
                0.0
            };
            self.close_window(slope);
            if self.stopped {
                break;
            }
        }
        self.should_stop()
    }

    fn close_window(&mut self, slope: f64) {
        let d = self.config.decay;
        let avg = match self.average {
            None => slope,
            Some(prev) => d * prev + (1.0 - d) * slope,
        };
        self.average = Some(avg);
        self.windows += 1;
        if avg < self.config.threshold {
            self.windows_below += 1;
        } else {
            self.windows_below = 0;
        }
        if self.windows_below >= self.config.patience {
            self.stopped = true;
        }
    }

    /// True once the average stayed low long enough (and stopping is enabled).
    pub fn should_stop(&self) -> bool {
        self.config.enabled && self.stopped
    }

    /// The current moving average of the slope.
    pub fn average(&self) -> Option<f64> {
        self.average
    }

    /// Windows closed so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Consecutive windows below the threshold.
    pub fn windows_below(&self) -> u32 {
        self.windows_below
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    #[test]
    fn stops_after_ten_low_windows() {
        let mut e = EarlyStop::new(EarlyStopConfig::default());
        // A productive start: 50 targets per 500 requests (slope 0.1).
        for _ in 0..3 {
            assert!(!e.record(500, 50));
        }
        assert!((e.average().unwrap() - 0.1).abs() < 1e-12);
        // Then nothing: the average decays 0.1·0.8^n and drops below 0.005 after n = 14.
        let mut stopped_at = None;
        for w in 1..=40 {
            if e.record(500, 0) {
                stopped_at = Some(w);
                break;
            }
        }
        // 0.1·0.8^14 = 0.0044 < 0.005 (0.8^13 gives 0.0055): below from window 14, stop at 23.
        assert_eq!(stopped_at, Some(23));
        assert!(e.should_stop());
    }

    #[test]
    fn a_find_resets_the_count_and_requests_accumulate() {
        let mut e = EarlyStop::new(EarlyStopConfig {
            window: 10,
            patience: 3,
            ..Default::default()
        });
        for _ in 0..19 {
            assert!(!e.record(1, 0));
        }
        assert_eq!(e.windows(), 1);
        e.record(1, 0);
        assert_eq!((e.windows(), e.windows_below()), (2, 2));
        e.record(10, 5);
        assert_eq!(e.windows_below(), 0, "slope 0.5 lifts the average");
        // One call spanning three windows closes all three.
        e.record(30, 0);
        assert_eq!(e.windows(), 6);
        // A huge jump is bounded work and still stops the job.
        assert!(e.record(u64::MAX, 0));
        assert!(e.windows() < 6 + MAX_WINDOWS_PER_CALL);
    }

    #[test]
    fn disabled_never_stops_and_state_round_trips() {
        let cfg = EarlyStopConfig {
            enabled: false,
            window: 1,
            patience: 1,
            ..Default::default()
        };
        let mut e = EarlyStop::new(cfg);
        assert!(!e.record(5, 0));
        let mut back: EarlyStop = codec::decode(&codec::encode(&e)).unwrap();
        back.set_config(cfg);
        assert_eq!(back, e);
        back.set_config(EarlyStopConfig {
            enabled: true,
            ..cfg
        });
        assert!(back.should_stop());
    }
}
