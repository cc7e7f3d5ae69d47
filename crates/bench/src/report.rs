//! Efficiency figures from traces: req@50/80/90, byte waste, tables and plots (ARCHITECTURE.md § Measuring).

use super::groundtruth::GroundTruth;
use super::runner::{RunResult, TraceRow};
use anyhow::Context;
use forager_core::strategy::StrategyKind;
use std::fmt::Write as _;
use std::path::Path;

/// The fractions of the site's targets at which requests are counted.
pub const LEVELS: [f64; 3] = [0.5, 0.8, 0.9];

/// The figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFigures {
    /// Requests needed for 50/80/90 % of the targets, as % of reachable pages + targets
    /// (`None` when the run never got there).
    pub req_at: [Option<f64>; 3],
    /// Share of the ground truth's targets harvested.
    pub coverage: f64,
    /// Bytes of non-target responses fetched before 90 % of the target bytes.
    pub waste_bytes: Option<u64>,
    /// Requests answered neither a page nor a target up to req@90 (`None` if never reached).
    pub neither_before_90: Option<u64>,
    pub requests: u64,
    pub accuracy: Option<f64>,
    pub actions: u64,
    /// Requests to 90 % of the targets divided by the site's oracle floor
    /// ([`GroundTruth::floor90`]); `None` without either.
    pub vs_floor: Option<f64>,
}

/// Requests (1-based index) at which the `k`-th target was saved.
fn target_request_indices(trace: &[TraceRow]) -> Vec<u64> {
    trace.iter().filter(|r| r.target).map(|r| r.index).collect()
}

/// Figures of a run against the site's ground truth.
pub fn figures(run: &RunResult, truth: &GroundTruth) -> RunFigures {
    let total = truth.targets.len();
    let denominator = (truth.pages + total).max(1) as f64;
    let hits = target_request_indices(&run.trace);
    let mut req_at = [None; 3];
    let mut neither_before_90 = None;
    let mut vs_floor = None;
    for (slot, level) in req_at.iter_mut().zip(LEVELS) {
        let need = (level * total as f64).ceil() as usize;
        let at = if need == 0 {
            Some(0)
        } else {
            hits.get(need - 1).copied()
        };
        if let Some(idx) = at {
            *slot = Some(100.0 * idx as f64 / denominator);
            if level == 0.9 {
                vs_floor = truth
                    .floor90
                    .filter(|f| f.requests() > 0)
                    .map(|f| idx as f64 / f.requests() as f64);
                neither_before_90 = Some(
                    run.trace
                        .iter()
                        .filter(|r| r.neither && r.index <= idx)
                        .count() as u64,
                );
            }
        }
    }
    let mut target_bytes = 0u64;
    let mut waste = 0u64;
    let mut waste_bytes = None;
    let goal = (0.9 * truth.target_bytes as f64).ceil() as u64;
    for r in &run.trace {
        if r.target {
            target_bytes += r.bytes;
        } else {
            waste += r.bytes;
        }
        if target_bytes >= goal {
            waste_bytes = Some(waste);
            break;
        }
    }
    RunFigures {
        req_at,
        coverage: if total == 0 {
            1.0
        } else {
            hits.len().min(total) as f64 / total as f64
        },
        waste_bytes,
        neither_before_90,
        requests: run.counters.requests,
        accuracy: run.stats.classifier_accuracy(),
        actions: run.stats.actions,
        vs_floor,
    }
}

/// The OMNISCIENT bound: one request per target, in % of pages + targets.
pub fn omniscient(truth: &GroundTruth) -> [f64; 3] {
    let total = truth.targets.len() as f64;
    let denominator = (truth.pages as f64 + total).max(1.0);
    LEVELS.map(|l| 100.0 * (l * total).ceil() / denominator)
}

/// Mean and sample standard deviation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanStd {
    pub mean: f64,
    pub std: f64,
    pub n: usize,
}

impl MeanStd {
    pub fn of(values: &[f64]) -> Option<MeanStd> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(MeanStd {
            mean,
            std: var.sqrt(),
            n,
        })
    }

    /// Of `value` over `items`; `None` when there are none or one has no value.
    pub fn over<T>(items: &[T], value: impl Fn(&T) -> Option<f64>) -> Option<MeanStd> {
        let values: Option<Vec<f64>> = items.iter().map(value).collect();
        values.and_then(|v| MeanStd::of(&v))
    }

    pub fn show(self, digits: usize) -> String {
        if self.n > 1 {
            format!("{:.digits$} ± {:.digits$}", self.mean, self.std)
        } else {
            format!("{:.digits$}", self.mean)
        }
    }
}

/// A table cell: mean ± std, or a dash where there is no figure.
pub fn cell(v: Option<MeanStd>, digits: usize) -> String {
    v.map_or("—".to_string(), |v| v.show(digits))
}

/// All runs of one strategy on one site, summarised.
#[derive(Clone, Debug)]
pub struct StrategySummary {
    pub strategy: StrategyKind,
    pub runs: usize,
    /// Over the runs that reached the level; `None` if any run did not.
    pub req_at: [Option<MeanStd>; 3],
    pub coverage: MeanStd,
    pub waste_mib: Option<MeanStd>,
    pub neither_before_90: Option<MeanStd>,
    pub requests: MeanStd,
    pub accuracy: Option<MeanStd>,
    pub actions: MeanStd,
    pub vs_floor: Option<MeanStd>,
}

pub fn summarise(strategy: StrategyKind, figs: &[RunFigures]) -> StrategySummary {
    let col = |f: &dyn Fn(&RunFigures) -> Option<f64>| -> Option<MeanStd> {
        let v: Option<Vec<f64>> = figs.iter().map(f).collect();
        v.and_then(|v| MeanStd::of(&v))
    };
    let zero = MeanStd {
        mean: 0.0,
        std: 0.0,
        n: 0,
    };
    StrategySummary {
        strategy,
        runs: figs.len(),
        req_at: [0, 1, 2].map(|i| col(&|f: &RunFigures| f.req_at[i])),
        coverage: col(&|f| Some(f.coverage * 100.0)).unwrap_or(zero),
        waste_mib: col(&|f| f.waste_bytes.map(|b| b as f64 / (1 << 20) as f64)),
        neither_before_90: col(&|f| f.neither_before_90.map(|n| n as f64)),
        requests: col(&|f| Some(f.requests as f64)).unwrap_or(zero),
        accuracy: {
            let v: Vec<f64> = figs.iter().filter_map(|f| f.accuracy).collect();
            MeanStd::of(&v).map(|m| MeanStd {
                mean: m.mean * 100.0,
                std: m.std * 100.0,
                n: m.n,
            })
        },
        actions: col(&|f| Some(f.actions as f64)).unwrap_or(zero),
        vs_floor: col(&|f| f.vs_floor),
    }
}

/// A Markdown table for one site.
pub fn markdown_table(site: &str, truth: &GroundTruth, rows: &[StrategySummary]) -> String {
    let mut out = String::new();
    let floor = truth.floor90.map_or("—".to_string(), |f| {
        format!(
            "{} requests ({} pages + {} targets)",
            f.requests(),
            f.pages,
            f.targets
        )
    });
    let _ = writeln!(
        out,
        "**{site}** — {} pages, {} targets reachable; oracle floor for 90 %: {floor}\n",
        truth.pages,
        truth.targets.len()
    );
    let _ = writeln!(
        out,
        "| strategy | runs | req@50 % | req@80 % | req@90 % | req@90 ÷ floor | coverage % | non-target MiB before 90 % target bytes | neither requests before req@90 | requests | classifier acc. % | actions |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    let show = |m: Option<MeanStd>, d: usize| m.map_or("—".to_string(), |m| m.show(d));
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.strategy.name(),
            r.runs,
            show(r.req_at[0], 1),
            show(r.req_at[1], 1),
            show(r.req_at[2], 1),
            show(r.vs_floor, 2),
            r.coverage.show(1),
            show(r.waste_mib, 1),
            show(r.neither_before_90, 0),
            r.requests.show(0),
            show(r.accuracy, 1),
            r.actions.show(0),
        );
    }
    let o = omniscient(truth);
    let _ = writeln!(
        out,
        "| omniscient | — | {:.1} | {:.1} | {:.1} | {} | 100 | 0 | 0 | {} | — | — |",
        o[0],
        o[1],
        o[2],
        truth.floor90.map_or("—".to_string(), |f| {
            let need = (0.9 * truth.targets.len() as f64).ceil();
            format!("{:.2}", need / f.requests().max(1) as f64)
        }),
        truth.targets.len()
    );
    if let Some(f) = truth.floor90 {
        let reach = (truth.pages + truth.targets.len()).max(1) as f64;
        let _ = writeln!(
            out,
            "| floor | — | — | — | {:.1} | 1.00 | 90 | — | — | {} | — | — |",
            100.0 * f.requests() as f64 / reach,
            f.requests()
        );
    }
    out
}

/// One line under a site's table: each strategy's req@90 ÷ floor, and sb's
/// req@90 over bfs's when both ran (the yardstick before the floor).
pub fn floor_line(rows: &[StrategySummary]) -> String {
    let mut parts: Vec<String> = rows
        .iter()
        .filter_map(|r| Some(format!("{} {:.2}", r.strategy.name(), r.vs_floor?.mean)))
        .collect();
    let req90 = |k: StrategyKind| {
        rows.iter()
            .find(|r| r.strategy == k)
            .and_then(|r| r.req_at[2])
    };
    if let (Some(sb), Some(bfs)) = (req90(StrategyKind::Sb), req90(StrategyKind::Bfs)) {
        if bfs.mean > 0.0 {
            parts.push(format!("sb / bfs {:.2}", sb.mean / bfs.mean));
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("\nreq@90 ÷ floor: {}\n", parts.join(", "))
}

/// Write one run's trace as CSV (index,kind,bytes,target,neither).
pub fn write_trace_csv(path: &Path, trace: &[TraceRow]) -> anyhow::Result<()> {
    let mut out = String::from("index,kind,bytes,target,neither\n");
    for r in trace {
        let kind = match r.kind {
            forager::engine::RequestKind::Get => "GET",
            forager::engine::RequestKind::Head => "HEAD",
        };
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            r.index,
            kind,
            r.bytes,
            u8::from(r.target),
            u8::from(r.neither)
        );
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

/// An SVG plot of targets harvested against requests, one line per strategy
/// (its first run), as in the sb paper's Figure 4.
pub fn write_plot(
    path: &Path,
    site: &str,
    truth: &GroundTruth,
    runs: &[&RunResult],
) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let max_x = runs
        .iter()
        .map(|r| r.counters.requests)
        .max()
        .unwrap_or(1)
        .max(1);
    let max_y = truth.targets.len().max(1) as u64;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{site}: targets vs requests"), ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0u64..max_x, 0u64..max_y + max_y / 20 + 1)?;
        chart
            .configure_mesh()
            .x_desc("requests (GET + HEAD)")
            .y_desc("targets harvested")
            .draw()?;
        let palette = [&BLUE, &RED, &GREEN, &MAGENTA, &CYAN, &BLACK];
        chart
            .draw_series(LineSeries::new(
                [(0, 0), (max_y, max_y), (max_x, max_y)],
                BLACK.mix(0.3),
            ))?
            .label("omniscient")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.3)));
        for (i, run) in runs.iter().enumerate() {
            let color = palette[i % palette.len()];
            let mut found = 0u64;
            let mut points = vec![(0u64, 0u64)];
            for r in run.trace.iter().filter(|r| r.target) {
                found += 1;
                points.push((r.index, found));
            }
            points.push((run.counters.requests, found));
            chart
                .draw_series(LineSeries::new(points, color))?
                .label(run.strategy.name())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .position(SeriesLabelPosition::LowerRight)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager::engine::RequestKind;
    use forager::store::JobCounters;

    fn run(trace: Vec<(u64, u64, bool)>) -> RunResult {
        let requests = trace.last().map_or(0, |t| t.0);
        RunResult {
            site: "s".into(),
            strategy: StrategyKind::Bfs,
            seed: 1,
            trace: trace
                .into_iter()
                .map(|(index, bytes, target)| TraceRow {
                    index,
                    kind: RequestKind::Get,
                    bytes,
                    target,
                    // Empty responses that are not targets: the neither answers.
                    neither: bytes == 0 && !target,
                })
                .collect(),
            target_urls: Vec::new(),
            counters: JobCounters {
                requests,
                ..Default::default()
            },
            stats: Default::default(),
            wall: Default::default(),
            prior: None,
        }
    }

    fn truth(pages: usize, targets: usize, target_bytes: u64) -> GroundTruth {
        GroundTruth {
            pages,
            targets: (0..targets).map(|i| format!("t{i}")).collect(),
            target_bytes,
            ..Default::default()
        }
    }

    #[test]
    fn req_at_counts_the_request_of_the_kth_target() {
        // 10 pages + 10 targets = 20; targets found at requests 2,4,...,20.
        let trace = (1..=20).map(|i| (i, 10, i % 2 == 0)).collect();
        let f = figures(&run(trace), &truth(10, 10, 100));
        // 50 % = 5th target at request 10 → 50 % of 20.
        assert_eq!(f.req_at, [Some(50.0), Some(80.0), Some(90.0)]);
        assert_eq!(f.coverage, 1.0);
        // 90 % of 100 target bytes = 9 targets, found by request 18: 9 pages of 10 bytes before.
        assert_eq!(f.waste_bytes, Some(90));
        assert_eq!(f.neither_before_90, Some(0));
    }

    #[test]
    fn neither_answers_are_counted_up_to_req_at_90() {
        // Targets at 3, 6, …, 30; every third request from 2 on is neither (2, 5, 8, …).
        let trace = (1..=40)
            .map(|i| (i, if i % 3 == 2 { 0 } else { 10 }, i % 3 == 0 && i <= 30))
            .collect();
        let f = figures(&run(trace), &truth(10, 10, 100));
        // 9th target at request 27: neither answers at 2, 5, …, 26 = 9 of them.
        assert_eq!(f.req_at[2], Some(135.0));
        assert_eq!(f.neither_before_90, Some(9));
        let never = figures(&run(vec![(1, 0, false)]), &truth(1, 4, 20));
        assert_eq!(never.neither_before_90, None);
    }

    #[test]
    fn levels_never_reached_are_none() {
        let f = figures(&run(vec![(1, 5, true), (2, 5, false)]), &truth(1, 4, 20));
        assert_eq!(f.req_at, [None, None, None]);
        assert_eq!(f.coverage, 0.25);
    }

    #[test]
    fn omniscient_is_one_request_per_target() {
        assert_eq!(omniscient(&truth(90, 10, 0)), [5.0, 8.0, 9.0]);
    }

    #[test]
    fn mean_and_sample_std() {
        let m = MeanStd::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m.mean, 2.0);
        assert!((m.std - 1.0).abs() < 1e-12);
        assert!(MeanStd::of(&[]).is_none());
    }
}
