//! `GET /`: an HTML page of the daemon's jobs with a pause, resume or rerun
//! button for each, and `GET /jobs/NAME/plot.svg`: a job's targets against
//! its requests.
//!
//! One self-contained page — no script, no external asset, no build step —
//! rendered from the same [`StatusReport`] as `/status`, refreshed by the
//! browser every [`REFRESH_SECS`]. Everything a job file or a server
//! controls (job names, errors) is HTML-escaped.
//!
//! The buttons are one plain form posted to [`DASHBOARD_FORM`]
//! with the admin token a person types into the page: the page itself never
//! holds the token (anyone who can read `/status` can read the page), and
//! without script a browser cannot add an `Authorization` header.

use super::jobs::Phase;
use super::report::{human_bytes, JobStatus, StatusReport};
use std::fmt::Write as _;

/// Where the dashboard's buttons post: `token=…&do=ACTION:JOB`, form-encoded
/// (the admin API routes it to its handler, which checks the token).
pub const DASHBOARD_FORM: &str = "/dashboard/drive";

/// How often the page reloads itself.
pub const REFRESH_SECS: u32 = 10;

/// `Content-Security-Policy` of the page: its own images, its inline style, nothing else.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Text made safe for HTML element content and quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A job name as a URL path segment (names are `[a-z0-9_-]`, but a
/// refused file's name is whatever the file says).
fn path_segment(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC).to_string()
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.3em}table{border-collapse:collapse;margin-bottom:1.5em}\
th,td{padding:.3em .7em;border-bottom:1px solid #ddd;text-align:right}\
th:first-child,td:first-child,.text{text-align:left}\
.running{color:#06c}.paused,.failed,.invalid{color:#b00}.done{color:#070}\
.plots{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}\
figcaption{font-weight:600}.muted{color:#777}\
button{margin-right:.3em}.default{position:absolute;left:-9999px}";

/// The whole page.
pub fn page(r: &StatusReport) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}\">\
         <title>forager</title><style>{STYLE}</style></head><body>\
         <h1>forager {}</h1><p>{} running, {} waiting, {} paused (max_jobs {}) · \
         {:.0} requests/min · jobs folder <code>{}</code></p>",
        escape(&r.version),
        r.running,
        r.pending,
        r.paused,
        r.max_jobs,
        r.request_rate_per_min,
        escape(&r.jobs_dir.display().to_string()),
    );
    if r.jobs.is_empty() {
        o.push_str("<p class=\"muted\">No jobs: drop a job file into the jobs folder.</p>");
    } else {
        let _ = write!(
            o,
            "<form method=\"post\" action=\"{action}\">\
             <p><label>admin token <input type=\"password\" name=\"token\" autocomplete=\"off\" size=\"32\"></label> \
             <span class=\"muted\">the buttons need it: the content of <code>admin.token</code> in the daemon's state folder</span>\
             <button class=\"default\" type=\"submit\" name=\"do\" value=\"\" tabindex=\"-1\" aria-hidden=\"true\">none</button></p>\
             <table id=\"jobs\"><thead><tr><th>job</th><th>state</th><th>requests</th>\
             <th>targets</th><th>bytes</th><th>waiting</th><th>req/min</th>\
             <th>accuracy</th><th>errors</th><th class=\"text\">detail</th><th class=\"text\">do</th></tr></thead><tbody>",
            action = DASHBOARD_FORM,
        );
        for j in &r.jobs {
            row(&mut o, j);
        }
        o.push_str("</tbody></table></form><div class=\"plots\">");
        for j in r.jobs.iter().filter(|j| j.counters.requests > 0) {
            let _ = write!(
                o,
                "<figure><figcaption>{name}</figcaption>\
                 <img src=\"/jobs/{seg}/plot.svg\" width=\"480\" height=\"300\" \
                 alt=\"targets harvested against requests made by {name}\"></figure>",
                name = escape(&j.name),
                seg = path_segment(&j.name),
            );
        }
        o.push_str("</div>");
    }
    if let Some(c) = &r.cluster {
        cluster_section(&mut o, c);
    }
    if !r.config_errors.is_empty() {
        o.push_str("<h2>Refused job files</h2><ul>");
        for e in &r.config_errors {
            let _ = write!(o, "<li>{}</li>", escape(&e.message));
        }
        o.push_str("</ul>");
    }
    o.push_str(
        "<p class=\"muted\">The same as <a href=\"/status\">/status</a> \
         and <a href=\"/metrics\">/metrics</a>; pause keeps a job's place (also across \
         daemon restarts), rerun starts a finished job again from its seeds.</p></body></html>",
    );
    o
}

/// Every node and every job of the cluster (the jobs above are this node's).
fn cluster_section(o: &mut String, c: &super::report::ClusterReport) {
    let _ = write!(
        o,
        "<h2>Cluster</h2><p>this node: <code>{}</code></p>",
        escape(&c.node)
    );
    if let Some(e) = &c.error {
        let _ = write!(o, "<p>cannot read the cluster database: {}</p>", escape(e));
        return;
    }
    o.push_str(
        "<table id=\"nodes\"><thead><tr><th>node</th><th>state</th><th>jobs</th>\
         <th>heartbeat</th></tr></thead><tbody>",
    );
    for n in &c.nodes {
        let _ = write!(
            o,
            "<tr class=\"node\"><td>{}</td><td>{}</td><td>{}/{}</td><td>{:.0} s ago</td></tr>",
            escape(&n.name),
            escape(&n.state),
            n.held,
            n.max_jobs,
            n.heartbeat_age_secs.max(0.0),
        );
    }
    o.push_str(
        "</tbody></table><table id=\"cluster-jobs\"><thead><tr><th>job</th><th>status</th>\
         <th>node</th><th>epoch</th><th>targets</th><th class=\"text\">detail</th></tr></thead><tbody>",
    );
    for j in &c.jobs {
        let node = match (&j.node, &j.lapsed_from) {
            (Some(n), _) => escape(n),
            (None, Some(n)) => format!("({}: lease lapsed)", escape(n)),
            (None, None) => "-".to_string(),
        };
        let _ = write!(
            o,
            "<tr class=\"cluster-job\"><td>{}</td><td>{}</td><td>{node}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            escape(&j.name),
            escape(&j.status),
            j.epoch,
            j.targets,
            escape(j.failure.as_deref().unwrap_or("")),
        );
    }
    o.push_str("</tbody></table>");
}

/// What a refused button answers: the reason and the way back.
pub fn answer_page(message: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>forager</title><style>{STYLE}</style></head><body>\
         <p id=\"answer\">{}</p><p><a href=\"/\">back to the dashboard</a></p></body></html>",
        escape(message)
    )
}

/// The buttons a job's state allows.
fn buttons(j: &JobStatus) -> Vec<&'static str> {
    match j.state {
        Phase::Running | Phase::Pending => vec!["pause"],
        // Paused on a full disk: still running, it may be paused for good.
        Phase::Paused if !j.paused_by_user => vec!["pause"],
        Phase::Paused => vec!["resume", "rerun"],
        Phase::Done | Phase::Stopped | Phase::Failed if j.file.is_some() => vec!["rerun"],
        _ => vec![],
    }
}

/// `4 (3 × HTTP 404, 1 × network)`.
fn errors_cell(j: &JobStatus) -> String {
    let total = j.counters.http_errors + j.counters.fetch_errors;
    if total == 0 || j.errors_by_kind.is_empty() {
        return total.to_string();
    }
    let kinds: Vec<String> = j
        .errors_by_kind
        .iter()
        .map(|(kind, n)| format!("{n} × {kind}"))
        .collect();
    format!("{total} ({})", kinds.join(", "))
}

fn row(o: &mut String, j: &JobStatus) {
    let state = j.state.as_str();
    let accuracy = j
        .classifier_accuracy
        .map_or_else(|| "-".to_string(), |a| format!("{:.0} %", a * 100.0));
    let errors = errors_cell(j);
    // A job's last error stays in view after it ends: what failed is what a person looks for.
    let detail = match (&j.detail, &j.last_error) {
        (None, Some(e)) => format!("last error: {e}"),
        (Some(d), Some(e)) if !d.contains(e.as_str()) => format!("{d}; last error: {e}"),
        (d, _) => d.clone().unwrap_or_default(),
    };
    let detail = match &j.warning {
        Some(w) if detail.is_empty() => format!("warning: {w}"),
        Some(w) => format!("{detail}; warning: {w}"),
        None => detail,
    };
    let _ = write!(
        o,
        "<tr class=\"job\"><td>{}</td><td class=\"{state}\">{state}</td><td>{}</td><td>{}</td>\
         <td>{}</td><td>{}</td><td>{:.0}</td><td>{accuracy}</td><td>{}</td>\
         <td class=\"text\">{}</td><td class=\"text\">",
        escape(&j.name),
        j.counters.requests,
        j.counters.targets,
        human_bytes(j.counters.bytes),
        j.frontier
            .map_or_else(|| "-".to_string(), |f| f.to_string()),
        j.request_rate_per_min,
        escape(&errors),
        escape(&detail),
    );
    for b in buttons(j) {
        let _ = write!(
            o,
            "<button type=\"submit\" name=\"do\" value=\"{b}:{}\">{b}</button>",
            escape(&j.name)
        );
    }
    o.push_str("</td></tr>");
}

/// A job's curve as an SVG image (480 × 300).
pub fn plot_svg(job: &str, points: &[(u64, u64)]) -> Result<String, String> {
    use plotters::prelude::*;
    let max_x = points.iter().map(|p| p.0).max().unwrap_or(1).max(1);
    let max_y = points.iter().map(|p| p.1).max().unwrap_or(1).max(1);
    let min_x = points.first().map_or(0, |p| p.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (480, 300)).into_drawing_area();
        let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(format!("{job}: targets vs requests"), ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(32)
                .y_label_area_size(48)
                .build_cartesian_2d(min_x..max_x, 0u64..max_y + max_y / 20 + 1)?;
            chart
                .configure_mesh()
                .x_desc("requests")
                .y_desc("targets")
                .draw()?;
            chart.draw_series(LineSeries::new(points.iter().copied(), &BLUE))?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| format!("drawing the plot of {job}: {e}"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::live::{StatusClasses, TimeTotal};
    use crate::store::JobCounters;

    fn job(name: &str, state: Phase) -> JobStatus {
        JobStatus {
            name: name.into(),
            state,
            stop_reason: None,
            warning: None,
            detail: (state == Phase::Done).then(|| "done".to_string()),
            file: Some(format!("j/{name}.toml").into()),
            strategy: Some("sb".into()),
            counters: JobCounters {
                requests: 120,
                targets: 7,
                ..Default::default()
            },
            request_rate_per_min: 60.0,
            classifier_accuracy: Some(0.9),
            actions: 3,
            top_actions: vec![],
            frontier: Some(40),
            poisoned: None,
            responses: StatusClasses::default(),
            fetch_latency: TimeTotal::default(),
            checkpoints: 1,
            checkpoint_time: TimeTotal::default(),
            last_checkpoint_at: None,
            paused_since: None,
            paused_by_user: false,
            errors_by_kind: Default::default(),
            next_revisit_at: None,
            last_error: Some("GET http://a.test/<script>: HTTP 500".into()),
            last_error_at: None,
            config_error: None,
            cluster: None,
        }
    }

    #[test]
    fn the_page_lists_jobs_plots_them_and_escapes_what_it_shows() {
        let r = StatusReport {
            version: "0.1.0".into(),
            pid: 1,
            started_at: 1_700_000_000,
            uptime_secs: 5,
            jobs_dir: "jobs.d".into(),
            max_jobs: 8,
            running: 1,
            paused: 0,
            pending: 0,
            request_rate_per_min: 60.0,
            shutting_down: false,
            daemon_config_error: None,
            restart_required: vec![],
            jobs_dir_error: None,
            jobs: vec![job("alpha", Phase::Running), job("beta", Phase::Done)],
            config_errors: vec![],
            cluster: None,
        };
        let html = page(&r);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(html.matches("<tr class=\"job\">").count(), 2);
        assert!(html.contains("<img src=\"/jobs/alpha/plot.svg\""), "{html}");
        assert!(html.contains("<td class=\"running\">running</td>"));
        assert!(html.contains("90 %"));
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
        assert!(!html.contains("src=\"http"), "no external asset");
        // Buttons by state, in one form posted with the typed token.
        assert!(html.contains("<form method=\"post\" action=\"/dashboard/drive\">"));
        assert!(html.contains("value=\"pause:alpha\""), "{html}");
        assert!(html.contains("value=\"rerun:beta\""), "{html}");
        assert!(!html.contains("value=\"pause:beta\""), "{html}");
        // A finished job's last error stays in view.
        assert!(
            html.contains("done; last error: GET http://a.test/&lt;script&gt;"),
            "{html}"
        );
    }

    #[test]
    fn a_plot_is_an_svg_with_its_line() {
        let svg = plot_svg("alpha", &[(0, 0), (10, 2), (50, 9)]).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("alpha: targets vs requests"));
        assert!(svg.contains("<polyline"), "{svg}");
        // No points yet is a plot too (an empty frame).
        assert!(plot_svg("new", &[]).unwrap().contains("<svg"));
    }
}
