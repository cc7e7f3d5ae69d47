//! Figures of a multi-host run, from the loopback server's own request log:
//! pure functions of the log (and of the harness's `/proc` samples), so that
//! they are tested without a crawl.

use crate::report::MeanStd;
use crate::sites::server::RequestRecord;
use forager_core::strategy::StrategyKind;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The length of the stretches whose slowest one is reported: long enough
/// that a 1 s delay's rounding does not show, short enough to see a stall.
pub const STRETCH: Duration = Duration::from_secs(5);

/// Share of the allowed request rate (hosts / delay) the goal asks for.
pub const GOAL_SHARE: f64 = 0.9;

/// What the log says about politeness, over a whole run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Politeness {
    /// The most requests one host was answering at one moment, and that host.
    pub most_on_a_host: usize,
    pub busiest_host: Option<String>,
    /// The smallest gap between the arrivals of two requests to one host, and that host.
    pub smallest_gap: Option<(Duration, String)>,
    /// The most requests the server was answering at one moment, all hosts together.
    pub most_at_once: usize,
}

/// The most intervals `[start, end)` open at one moment; an interval with no
/// end (a response still being sent) stays open. Touching is not overlapping.
fn most_open(intervals: &mut [(Instant, i32)]) -> usize {
    // At equal instants an end (-1) sorts before a start (+1).
    intervals.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for &(_, d) in intervals.iter() {
        now += i64::from(d);
        most = most.max(now);
    }
    usize::try_from(most).unwrap_or(0)
}

fn edges(r: &RequestRecord, out: &mut Vec<(Instant, i32)>) {
    out.push((r.at, 1));
    if let Some(done) = r.done {
        out.push((done, -1));
    }
}

/// Politeness per host, from every request of a run.
pub fn politeness(log: &[RequestRecord]) -> Politeness {
    let mut by_host: HashMap<&str, Vec<&RequestRecord>> = HashMap::new();
    for r in log {
        by_host.entry(r.host.as_str()).or_default().push(r);
    }
    let mut p = Politeness::default();
    let mut scratch = Vec::new();
    // Hosts in name order, so that ties name the same host every time.
    let mut hosts: Vec<&str> = by_host.keys().copied().collect();
    hosts.sort_unstable();
    for host in hosts {
        let records = &by_host[host];
        scratch.clear();
        records.iter().for_each(|r| edges(r, &mut scratch));
        let most = most_open(&mut scratch);
        if most > p.most_on_a_host {
            p.most_on_a_host = most;
            p.busiest_host = Some(host.to_string());
        }
        let mut starts: Vec<Instant> = records.iter().map(|r| r.at).collect();
        starts.sort_unstable();
        if let Some(gap) = starts.windows(2).map(|w| w[1] - w[0]).min() {
            if p.smallest_gap.as_ref().is_none_or(|(g, _)| gap < *g) {
                p.smallest_gap = Some((gap, host.to_string()));
            }
        }
    }
    scratch.clear();
    log.iter().for_each(|r| edges(r, &mut scratch));
    p.most_at_once = most_open(&mut scratch);
    p
}

/// Requests that reached the server in `[from, to)`.
pub fn requests_between(log: &[RequestRecord], from: Instant, to: Instant) -> usize {
    log.iter().filter(|r| r.at >= from && r.at < to).count()
}

/// Requests per second of the slowest whole `stretch` of `[from, to)`
/// (stretches laid end to end from `from`); `None` when none fits.
pub fn slowest_stretch(
    log: &[RequestRecord],
    from: Instant,
    to: Instant,
    stretch: Duration,
) -> Option<f64> {
    if stretch.is_zero() || to <= from {
        return None;
    }
    let whole = ((to - from).as_nanos() / stretch.as_nanos()) as usize;
    if whole == 0 {
        return None;
    }
    let mut counts = vec![0usize; whole];
    for r in log.iter().filter(|r| r.at >= from) {
        let i = ((r.at - from).as_nanos() / stretch.as_nanos()) as usize;
        if let Some(c) = counts.get_mut(i) {
            *c += 1;
        }
    }
    let fewest = counts.into_iter().min()?;
    Some(fewest as f64 / stretch.as_secs_f64())
}

/// Requests per whole second since `start`, for a run's CSV.
pub fn per_second(log: &[RequestRecord], start: Instant) -> Vec<usize> {
    let mut counts: Vec<usize> = Vec::new();
    for r in log.iter().filter(|r| r.at >= start) {
        let s = (r.at - start).as_secs() as usize;
        if counts.len() <= s {
            counts.resize(s + 1, 0);
        }
        counts[s] += 1;
    }
    counts
}

/// Distinct targets (`host/path`, as [`crate::sites::web::Web::targets`]
/// names them) the server sent whole with a GET.
pub fn targets_fetched(log: &[RequestRecord], targets: &HashSet<String>) -> usize {
    log.iter()
        .filter(|r| r.method == axum::http::Method::GET && r.status == 200 && r.done.is_some())
        .map(|r| format!("{}{}", r.host, r.path_and_query))
        .filter(|t| targets.contains(t))
        .collect::<HashSet<String>>()
        .len()
}

/// One process sample taken by the harness while the crawler ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcSample {
    pub at: Instant,
    /// The crawler's user + system CPU time so far.
    pub cpu: Duration,
    /// Its peak resident set so far (`VmHWM`), bytes.
    pub peak_rss: u64,
}

/// The measured window of a run: from the first sample at or after the
/// warm-up to the last one before the crawler stopped (or was stopped).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub from: ProcSample,
    pub to: ProcSample,
}

impl Window {
    /// `None` when the crawl ended before two samples fell in the window.
    pub fn of(samples: &[ProcSample], warm_from: Instant) -> Option<Window> {
        let first = samples.iter().find(|s| s.at >= warm_from)?;
        let last = samples.last()?;
        (last.at > first.at).then_some(Window {
            from: *first,
            to: *last,
        })
    }

    pub fn length(&self) -> Duration {
        self.to.at - self.from.at
    }
}

/// The figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct WebRun {
    pub strategy: StrategyKind,
    pub seed: u64,
    /// Requests in the whole run, and the targets they fetched.
    pub requests: usize,
    pub targets: usize,
    /// `None`: the crawl ended before a window could be measured.
    pub window: Option<WindowFigures>,
    pub politeness: Politeness,
    /// The crawl ended on its own (frontier empty, budget) after this long.
    pub finished_after: Option<Duration>,
}

/// What was measured over a run's window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowFigures {
    pub length: Duration,
    pub requests: usize,
    pub per_sec: f64,
    /// The slowest [`STRETCH`] of the window, requests per second.
    pub slowest_per_sec: Option<f64>,
    pub cpu: Duration,
    pub peak_rss: u64,
}

impl WindowFigures {
    pub fn of(log: &[RequestRecord], w: &Window) -> WindowFigures {
        let requests = requests_between(log, w.from.at, w.to.at);
        let length = w.length();
        WindowFigures {
            length,
            requests,
            per_sec: requests as f64 / length.as_secs_f64().max(1e-9),
            slowest_per_sec: slowest_stretch(log, w.from.at, w.to.at, STRETCH),
            cpu: w.to.cpu.saturating_sub(w.from.cpu),
            peak_rss: w.to.peak_rss,
        }
    }

    /// Milliseconds of crawler CPU per request.
    pub fn cpu_per_request_ms(&self) -> f64 {
        self.cpu.as_secs_f64() * 1000.0 / self.requests.max(1) as f64
    }

    /// The crawler's CPU as a share of one core, %.
    pub fn cpu_share(&self) -> f64 {
        100.0 * self.cpu.as_secs_f64() / self.length.as_secs_f64().max(1e-9)
    }
}

/// What the table is about.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WebSetting {
    pub hosts: usize,
    pub pages_per_host: usize,
    pub targets: usize,
    pub delay: Duration,
}

impl WebSetting {
    /// The most requests per second politeness allows: one per host and
    /// delay; none without a delay (the goal has no rate to reach then).
    pub fn allowed_per_sec(&self) -> Option<f64> {
        (!self.delay.is_zero()).then(|| self.hosts as f64 / self.delay.as_secs_f64())
    }
}

fn mean_std(values: impl Iterator<Item = f64>, digits: usize) -> String {
    let v: Vec<f64> = values.collect();
    MeanStd::of(&v).map_or("—".to_string(), |m| m.show(digits))
}

/// The worst politeness over `runs`: the most in flight on one host, the smallest gap.
pub fn worst(runs: &[&WebRun]) -> Politeness {
    let mut w = Politeness::default();
    for r in runs {
        let p = &r.politeness;
        if p.most_on_a_host > w.most_on_a_host {
            w.most_on_a_host = p.most_on_a_host;
            w.busiest_host = p.busiest_host.clone();
        }
        if let Some((gap, host)) = &p.smallest_gap {
            if w.smallest_gap.as_ref().is_none_or(|(g, _)| gap < g) {
                w.smallest_gap = Some((*gap, host.clone()));
            }
        }
        w.most_at_once = w.most_at_once.max(p.most_at_once);
    }
    w
}

/// Whether `p` kept one request in flight per host and `delay` between two.
pub fn is_polite(p: &Politeness, delay: Duration) -> bool {
    p.most_on_a_host <= 1 && p.smallest_gap.as_ref().is_none_or(|(g, _)| *g >= delay)
}

fn show_gap(p: &Politeness) -> String {
    p.smallest_gap.as_ref().map_or("—".to_string(), |(g, h)| {
        format!("{:.1} ms ({h})", g.as_secs_f64() * 1000.0)
    })
}

/// The Markdown report: one row per strategy (mean ± std over its seeds),
/// then politeness, worst over every run, and the goal.
pub fn markdown(setting: &WebSetting, runs: &[WebRun]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**web:{}** — {} hosts, {} pages each, {} targets on every third host; delay {}, \
         so {}\n",
        setting.hosts,
        setting.hosts,
        setting.pages_per_host,
        setting.targets,
        humantime::format_duration(setting.delay),
        setting
            .allowed_per_sec()
            .map_or("no rate ceiling".to_string(), |r| format!(
                "at most {r:.0} requests/s"
            ))
    );
    let _ = writeln!(
        out,
        "| strategy | runs | window s | requests/s | slowest {} s, requests/s | CPU per request ms | crawler CPU % of a core | peak RSS MiB | most in flight, all hosts | targets fetched |",
        STRETCH.as_secs()
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    let mut strategies: Vec<StrategyKind> = Vec::new();
    for r in runs {
        if !strategies.contains(&r.strategy) {
            strategies.push(r.strategy);
        }
    }
    for s in &strategies {
        let mine: Vec<&WebRun> = runs.iter().filter(|r| r.strategy == *s).collect();
        let windows: Vec<&WindowFigures> = mine.iter().filter_map(|r| r.window.as_ref()).collect();
        let col = |f: &dyn Fn(&WindowFigures) -> f64, digits: usize| {
            mean_std(windows.iter().map(|w| f(w)), digits)
        };
        let slowest: Vec<f64> = windows.iter().filter_map(|w| w.slowest_per_sec).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.name(),
            mine.len(),
            col(&|w| w.length.as_secs_f64(), 1),
            col(&|w| w.per_sec, 1),
            mean_std(slowest.into_iter(), 1),
            col(&|w| w.cpu_per_request_ms(), 3),
            col(&|w| w.cpu_share(), 1),
            col(&|w| w.peak_rss as f64 / (1 << 20) as f64, 1),
            mean_std(mine.iter().map(|r| r.politeness.most_at_once as f64), 1),
            mean_std(mine.iter().map(|r| r.targets as f64), 0),
        );
    }
    let all: Vec<&WebRun> = runs.iter().collect();
    let w = worst(&all);
    let polite = is_polite(&w, setting.delay);
    let _ = writeln!(
        out,
        "\nPoliteness over every run, from the server's log: most requests in flight on one host {}{}; \
         smallest gap between two requests to one host {} (delay {}): {}.",
        w.most_on_a_host,
        w.busiest_host
            .as_ref()
            .map_or(String::new(), |h| format!(" ({h})")),
        show_gap(&w),
        humantime::format_duration(setting.delay),
        if polite { "polite" } else { "NOT POLITE" }
    );
    let rates: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.window.map(|w| w.per_sec))
        .collect();
    let lowest = rates.iter().copied().reduce(f64::min);
    match (setting.allowed_per_sec(), lowest) {
        (Some(allowed), Some(lowest)) => {
            let goal = GOAL_SHARE * allowed;
            let _ = writeln!(
                out,
                "Goal (every run ≥ {goal:.0} requests/s, {:.0} % of the allowed rate, and polite): {}.",
                GOAL_SHARE * 100.0,
                if lowest >= goal && polite {
                    "met"
                } else {
                    "MISSED"
                }
            );
        }
        (None, Some(_)) => {
            let _ = writeln!(out, "No goal: without a delay politeness allows any rate.");
        }
        (_, None) => {}
    }
    for r in runs.iter().filter(|r| r.window.is_none()) {
        let _ = writeln!(
            out,
            "{} seed {}: the crawl ended during the warm-up; shorten --warmup or grow the web.",
            r.strategy.name(),
            r.seed
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    fn rec(
        base: Instant,
        host: &str,
        path: &str,
        start_ms: u64,
        end_ms: Option<u64>,
    ) -> RequestRecord {
        RequestRecord {
            host: host.to_string(),
            method: Method::GET,
            path_and_query: path.to_string(),
            status: 200,
            at: base + Duration::from_millis(start_ms),
            done: end_ms.map(|e| base + Duration::from_millis(e)),
            bytes: 10,
            content_type: None,
            user_agent: None,
            if_none_match: None,
        }
    }

    #[test]
    fn politeness_per_host_and_overall() {
        let t = Instant::now();
        let log = vec![
            rec(t, "a", "/", 0, Some(50)),
            // Touches the previous one on a: not overlapping.
            rec(t, "a", "/1", 50, Some(80)),
            rec(t, "b", "/", 10, Some(500)),
            rec(t, "b", "/1", 400, Some(450)),
            rec(t, "c", "/", 20, None),
        ];
        let p = politeness(&log);
        assert_eq!(p.most_on_a_host, 2);
        assert_eq!(p.busiest_host.as_deref(), Some("b"));
        assert_eq!(
            p.smallest_gap,
            Some((Duration::from_millis(50), "a".to_string()))
        );
        // a, b and c at 20 ms.
        assert_eq!(p.most_at_once, 3);
        assert!(!is_polite(&p, Duration::from_millis(10)));
    }

    #[test]
    fn a_polite_log_is_polite_and_a_close_gap_is_not() {
        let t = Instant::now();
        let log = vec![
            rec(t, "a", "/", 0, Some(10)),
            rec(t, "a", "/1", 1000, Some(1010)),
            rec(t, "b", "/", 5, Some(15)),
        ];
        let p = politeness(&log);
        assert_eq!(p.most_on_a_host, 1);
        assert!(is_polite(&p, Duration::from_secs(1)));
        assert!(!is_polite(&p, Duration::from_millis(1001)));
        assert_eq!(politeness(&[]), Politeness::default());
    }

    #[test]
    fn rates_over_windows_and_stretches() {
        let t = Instant::now();
        // 3 requests in second 0, 1 in second 1, 2 in second 2, 1 at 3.5 s.
        let log: Vec<RequestRecord> = [0, 100, 900, 1500, 2000, 2999, 3500]
            .iter()
            .map(|&ms| rec(t, "a", "/", ms, Some(ms + 1)))
            .collect();
        let s = Duration::from_secs(1);
        assert_eq!(requests_between(&log, t, t + 3 * s), 6);
        assert_eq!(requests_between(&log, t + s, t + 3 * s), 3);
        // Whole seconds of [0, 3.9 s): 3, 1, 2 — the slowest is 1/s.
        let to = t + Duration::from_millis(3900);
        assert_eq!(slowest_stretch(&log, t, to, s), Some(1.0));
        assert_eq!(
            slowest_stretch(&log, t, to, Duration::from_secs(2)),
            Some(2.0)
        );
        assert_eq!(slowest_stretch(&log, t, to, Duration::from_secs(4)), None);
        assert_eq!(per_second(&log, t), vec![3, 1, 2, 1]);
    }

    #[test]
    fn targets_are_counted_once_and_only_when_sent_whole() {
        let t = Instant::now();
        let mut head = rec(t, "h1", "/files/1.csv", 20, Some(21));
        head.method = Method::HEAD;
        let log = vec![
            rec(t, "h1", "/files/0.csv", 0, Some(5)),
            rec(t, "h1", "/files/0.csv", 10, Some(15)),
            rec(t, "h1", "/files/2.csv", 10, None),
            head,
            rec(t, "h1", "/p/0", 30, Some(31)),
        ];
        let targets: HashSet<String> = ["h1/files/0.csv", "h1/files/1.csv", "h1/files/2.csv"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(targets_fetched(&log, &targets), 1);
    }

    fn sample(t: Instant, ms: u64, cpu_ms: u64, rss: u64) -> ProcSample {
        ProcSample {
            at: t + Duration::from_millis(ms),
            cpu: Duration::from_millis(cpu_ms),
            peak_rss: rss,
        }
    }

    #[test]
    fn the_window_starts_after_the_warm_up() {
        let t = Instant::now();
        let samples = [
            sample(t, 0, 0, 1),
            sample(t, 1000, 100, 2),
            sample(t, 2000, 300, 3),
            sample(t, 3000, 600, 4),
        ];
        let w = Window::of(&samples, t + Duration::from_millis(1500)).unwrap();
        assert_eq!(w.from, samples[2]);
        assert_eq!(w.to, samples[3]);
        assert!(Window::of(&samples, t + Duration::from_millis(2500)).is_none());
        let log: Vec<RequestRecord> = (0..30)
            .map(|i| rec(t, "a", "/", 2000 + i * 30, Some(2001 + i * 30)))
            .collect();
        let f = WindowFigures::of(&log, &w);
        assert_eq!(f.requests, 30);
        assert!((f.per_sec - 30.0).abs() < 1e-9);
        assert_eq!(f.cpu, Duration::from_millis(300));
        assert!((f.cpu_per_request_ms() - 10.0).abs() < 1e-9);
        assert!((f.cpu_share() - 30.0).abs() < 1e-9);
        assert_eq!(f.peak_rss, 4);
    }

    fn run(strategy: StrategyKind, seed: u64, per_sec: f64, gap_ms: u64) -> WebRun {
        WebRun {
            strategy,
            seed,
            requests: 100,
            targets: 7,
            window: Some(WindowFigures {
                length: Duration::from_secs(10),
                requests: (per_sec * 10.0) as usize,
                per_sec,
                slowest_per_sec: Some(per_sec - 1.0),
                cpu: Duration::from_secs(1),
                peak_rss: 64 << 20,
            }),
            politeness: Politeness {
                most_on_a_host: 1,
                busiest_host: Some("a".into()),
                smallest_gap: Some((Duration::from_millis(gap_ms), format!("h{seed}"))),
                most_at_once: 5,
            },
            finished_after: None,
        }
    }

    #[test]
    fn the_table_gives_mean_and_std_and_the_worst_politeness() {
        let setting = WebSetting {
            hosts: 10,
            pages_per_host: 3,
            targets: 12,
            delay: Duration::from_secs(1),
        };
        let runs = vec![
            run(StrategyKind::Bfs, 1, 9.5, 1200),
            run(StrategyKind::Bfs, 2, 9.7, 1001),
            run(StrategyKind::Sb, 1, 9.2, 1100),
        ];
        let text = markdown(&setting, &runs);
        assert!(
            text.contains("| bfs | 2 | 10.0 ± 0.0 | 9.6 ± 0.1 |"),
            "{text}"
        );
        assert!(text.contains("| sb | 1 | 10.0 | 9.2 |"), "{text}");
        assert!(text.contains("1001.0 ms (h2)"), "{text}");
        assert!(text.contains(": polite."), "{text}");
        assert!(text.contains("Goal (every run ≥ 9 requests/s"), "{text}");
        assert!(text.contains("): met."), "{text}");
        let mut slow = runs.clone();
        slow[2] = run(StrategyKind::Sb, 1, 8.0, 999);
        let text = markdown(&setting, &slow);
        assert!(
            text.contains("NOT POLITE") && text.contains("MISSED"),
            "{text}"
        );
    }

    #[test]
    fn without_a_delay_there_is_no_rate_goal() {
        let setting = WebSetting {
            hosts: 10,
            pages_per_host: 3,
            targets: 12,
            delay: Duration::ZERO,
        };
        let text = markdown(&setting, &[run(StrategyKind::Sb, 1, 9.2, 1100)]);
        assert!(text.contains("no rate ceiling"), "{text}");
        assert!(text.contains("No goal: without a delay"), "{text}");
        assert!(!text.contains("Goal (every run"), "{text}");
    }
}
