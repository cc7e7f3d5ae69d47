//! A job's `render`: whether pages built by scripts are rendered in headless
//! Chromium, and the caps of one render (docs/jobs.md, *Pages built by scripts*).
//!
//! `render = "auto"`, or a `[render]` table with `mode` and the caps. Which
//! Chromium runs is the job's `chromium` (a path), else the first of
//! [`CHROMIUM_NAMES`] on `PATH` — looked up by `forager check` and the
//! engine, not here: this module reads no file.

use std::path::PathBuf;
use std::time::Duration;

use toml::de::DeValue;

use super::reader::{Node, Reader};

/// Program names looked up on `PATH` when a job names no `chromium`.
pub const CHROMIUM_NAMES: &[&str] = &["chromium", "chromium-browser", "google-chrome"];

const RENDER_FIELDS: &[&str] = &[
    "mode",
    "chromium",
    "pages",
    "timeout",
    "max_requests",
    "max_memory",
];

/// Default `render.timeout`: long enough for a script portal to fetch its
/// list and draw it, short enough that a page that never settles costs little.
pub const DEFAULT_RENDER_TIMEOUT: Duration = Duration::from_secs(10);
/// Range of `render.timeout`.
const RENDER_TIMEOUT_RANGE: (Duration, Duration) =
    (Duration::from_millis(500), Duration::from_secs(300));
/// Default `render.pages`: pages rendered at once (one browser per job).
pub const DEFAULT_RENDER_PAGES: u64 = 2;
const RENDER_PAGES_RANGE: (u64, u64) = (1, 32);
/// Default `render.max_requests`: requests one render may make besides the
/// page itself (scripts, the JSON it asks for).
pub const DEFAULT_RENDER_MAX_REQUESTS: u64 = 32;
const RENDER_MAX_REQUESTS_RANGE: (u64, u64) = (0, 1000);
/// Default `render.max_memory`: the JavaScript heap of a renderer (V8's
/// `--max-old-space-size`); a page past it crashes its renderer, costing that page.
pub const DEFAULT_RENDER_MAX_MEMORY: u64 = 256 << 20;
const RENDER_MAX_MEMORY_RANGE: (u64, u64) = (16 << 20, 8 << 30);

/// `render.mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RenderMode {
    /// Pages are read as fetched (the default).
    #[default]
    Never,
    /// Only pages that look like a script shell, and only while rendering pays on their site.
    Auto,
    /// Every HTML page is rendered.
    Always,
}

impl RenderMode {
    pub const ALL: [(&'static str, RenderMode); 3] = [
        ("never", RenderMode::Never),
        ("auto", RenderMode::Auto),
        ("always", RenderMode::Always),
    ];

    pub fn name(self) -> &'static str {
        match self {
            RenderMode::Never => "never",
            RenderMode::Auto => "auto",
            RenderMode::Always => "always",
        }
    }
}

/// A job's `render` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderSpec {
    pub mode: RenderMode,
    /// `render.chromium`: the browser to run; `None`: look up [`CHROMIUM_NAMES`].
    pub chromium: Option<PathBuf>,
    /// Pages rendered at once.
    pub pages: u64,
    /// Longest one render may take, from navigation to the DOM read.
    pub timeout: Duration,
    /// Requests one render may make besides its page.
    pub max_requests: u64,
    /// Bytes of JavaScript heap per renderer.
    pub max_memory: u64,
}

impl Default for RenderSpec {
    fn default() -> Self {
        RenderSpec {
            mode: RenderMode::Never,
            chromium: None,
            pages: DEFAULT_RENDER_PAGES,
            timeout: DEFAULT_RENDER_TIMEOUT,
            max_requests: DEFAULT_RENDER_MAX_REQUESTS,
            max_memory: DEFAULT_RENDER_MAX_MEMORY,
        }
    }
}

impl RenderSpec {
    /// Whether pages may be rendered at all (so Chromium is needed).
    pub fn enabled(&self) -> bool {
        self.mode != RenderMode::Never
    }
}

/// `render = "MODE"`, or a `[render]` table.
pub(super) fn read_render(r: &mut Reader<'_>, node: Node<'_>) -> Option<RenderSpec> {
    let d = RenderSpec::default();
    if !matches!(node.value, DeValue::Table(_)) {
        let mode = r.choice("render", node, &RenderMode::ALL)?;
        return Some(RenderSpec { mode, ..d });
    }
    let t = r.table("render", node, RENDER_FIELDS)?;
    let mode = match t.get("mode") {
        Some(n) => r.choice(&t.child("mode"), n, &RenderMode::ALL),
        None => Some(d.mode),
    };
    let chromium = match t.get("chromium") {
        Some(n) => r.string(&t.child("chromium"), n).and_then(|s| {
            if s.is_empty() {
                r.invalid(&t.child("chromium"), n, "must name a program");
                None
            } else {
                Some(Some(PathBuf::from(s)))
            }
        }),
        None => Some(None),
    };
    let pages = match t.get("pages") {
        Some(n) => r.u64_in(
            &t.child("pages"),
            n,
            RENDER_PAGES_RANGE.0,
            RENDER_PAGES_RANGE.1,
        ),
        None => Some(d.pages),
    };
    let timeout = match t.get("timeout") {
        Some(n) => r.duration_in(
            &t.child("timeout"),
            n,
            RENDER_TIMEOUT_RANGE.0,
            RENDER_TIMEOUT_RANGE.1,
        ),
        None => Some(d.timeout),
    };
    let max_requests = match t.get("max_requests") {
        Some(n) => r.u64_in(
            &t.child("max_requests"),
            n,
            RENDER_MAX_REQUESTS_RANGE.0,
            RENDER_MAX_REQUESTS_RANGE.1,
        ),
        None => Some(d.max_requests),
    };
    let max_memory = match t.get("max_memory") {
        Some(n) => {
            let field = t.child("max_memory");
            r.size(&field, n).and_then(|v| {
                let (lo, hi) = RENDER_MAX_MEMORY_RANGE;
                if (lo..=hi).contains(&v) {
                    Some(v)
                } else {
                    r.invalid(&field, n, "must be between 16 MiB and 8 GiB");
                    None
                }
            })
        }
        None => Some(d.max_memory),
    };
    Some(RenderSpec {
        mode: mode?,
        chromium: chromium?,
        pages: pages?,
        timeout: timeout?,
        max_requests: max_requests?,
        max_memory: max_memory?,
    })
}
