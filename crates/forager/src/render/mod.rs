//! Rendering pages built by scripts in headless Chromium, driven over the
//! Chrome DevTools Protocol (`chromiumoxide`), for jobs with `render` ≠
//! `never` (docs/jobs.md, *Pages built by scripts*).
//!
//! Owns: finding and launching the browser (one per job, started on the
//! first render, restarted after a crash), its flags, the pool of pages
//! rendered at once, one render's life ([`Session`]: navigation, settling on
//! network idle or a deadline, stopping a script that never yields, reading
//! the DOM, closing the page) and killing every process the browser
//! started when it is dropped.
//!
//! The browser never touches the network: it is launched with a proxy that
//! points nowhere (`127.0.0.1:9`, loopback included), a host resolver that
//! resolves nothing, and request interception on every page (CDP
//! `Fetch.enable`, pattern `*`). Every request it makes is handed to the
//! caller as a [`Step::Request`] and answered from forager's own fetcher
//! ([`Session::answer`]) — SSRF guard, robots.txt, politeness and budget —
//! or refused. This module decides only what needs no crawl knowledge
//! (resource types, methods, the per-render request cap).
//!
//! Must not touch: the fetcher, the store, link extraction or any crawl
//! decision — the engine's runner (`engine/runner/render.rs`) serves the
//! requests and reads the rendered HTML like a fetched page.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::fetch::{
    EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry, RequestId,
};
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::cdp::browser_protocol::page::{EventLoadEventFired, NavigateParams};
use chromiumoxide::cdp::js_protocol::runtime::TerminateExecutionParams;
use chromiumoxide::listeners::EventStream;
use chromiumoxide::Page;
use forager_core::config::{RenderSpec, CHROMIUM_NAMES};
use forager_core::render::fetches_resource;
use futures_util::StreamExt;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tracing::{debug, info, warn};
use url::Url;

/// A page counts as settled once its load event fired and no request came
/// for this long (what "network idle" means here).
pub const IDLE: Duration = Duration::from_millis(500);
/// Longest wait for one protocol command once the render's deadline passed
/// (stopping scripts, reading the DOM, closing the page).
const AFTER_DEADLINE: Duration = Duration::from_secs(3);
/// Longest wait for the browser to start.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// How often a render checks that the browser's process is still there:
/// a killed browser leaves a connection that errors without ending, so the
/// render would otherwise wait for its deadline.
const LIVENESS: Duration = Duration::from_millis(250);
/// Bytes of rendered HTML read at most (the page cap of a fetched page).
pub const MAX_RENDERED_BYTES: usize = 32 << 20;

/// Why a render gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("no Chromium found: {0}")]
    NoBrowser(String),
    #[error("Chromium failed to start: {0}")]
    Launch(String),
    #[error("the page's renderer crashed")]
    Crashed,
    #[error("the browser stopped answering: {0}")]
    Browser(String),
    #[error("the DOM could not be read within the render's time: {0}")]
    Unreadable(String),
}

/// The browser program a job would run: its `render.chromium`, else the
/// first of [`CHROMIUM_NAMES`] on `PATH`. `forager check` asks this too.
pub fn find_chromium(spec: &RenderSpec) -> Result<PathBuf, RenderError> {
    if let Some(path) = &spec.chromium {
        return if is_executable(path) {
            Ok(path.clone())
        } else if path.components().count() == 1 {
            on_path(&path.to_string_lossy()).ok_or_else(|| {
                RenderError::NoBrowser(format!(
                    "render.chromium {:?} is not on PATH",
                    path.display().to_string()
                ))
            })
        } else {
            Err(RenderError::NoBrowser(format!(
                "render.chromium {:?} is not an executable file",
                path.display().to_string()
            )))
        };
    }
    CHROMIUM_NAMES
        .iter()
        .find_map(|name| on_path(name))
        .ok_or_else(|| {
            RenderError::NoBrowser(format!(
                "none of {} is on PATH; install Chromium (Debian: apt-get install chromium) or set render.chromium to its path",
                CHROMIUM_NAMES.join(", ")
            ))
        })
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// One job's renderer: a browser started on first use and a pool of pages.
pub struct Renderer {
    spec: RenderSpec,
    program: PathBuf,
    job: String,
    pages: Arc<Semaphore>,
    browser: Mutex<Option<Arc<Live>>>,
    launches: AtomicU64,
}

/// A running browser and what it takes to end it.
struct Live {
    browser: Browser,
    handler: tokio::task::JoinHandle<()>,
    /// Its profile folder, unique to it: also how its processes are found.
    dir: PathBuf,
    /// Set when a render saw it fail: the next render starts a new one.
    broken: AtomicBool,
    /// The browser's main process.
    pid: Option<u32>,
}

impl Live {
    /// Whether the browser's main process is gone (or a zombie: killed, not
    /// yet reaped). Unknown counts as running.
    fn exited(&self) -> bool {
        let Some(pid) = self.pid else {
            return false;
        };
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rfind(')')
                .and_then(|p| stat.get(p + 2..p + 3))
                .is_some_and(|state| state == "Z" || state == "X"),
            Err(_) => true,
        }
    }
}

/// How long [`Live`]'s drop waits for the killed browser to be reaped: at
/// most `REAP_TRIES × REAP_PAUSE` (100 ms).
const REAP_TRIES: u32 = 50;
const REAP_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

impl Drop for Live {
    fn drop(&mut self) {
        // Read before the kill: once the browser is killed its helpers exit
        // within milliseconds and a zombie's /proc entry names no profile
        // folder, so a later read finds nothing (it read 0 ms every time).
        let cpu_ms = cpu_ms_of(&self.dir);
        self.handler.abort();
        if let Some(child) = self.browser.get_mut_child() {
            let _ = child.as_mut_inner().start_kill();
        }
        // The browser's helpers (zygotes, renderers, GPU, network service)
        // die with it, but a helper stuck in a loop may take its time: every
        // process started with this profile folder is killed now.
        let killed = kill_processes_of(&self.dir);
        // Reap the killed main process (a few ms after SIGKILL), so that
        // chromiumoxide's own drop sees it gone and does not warn that the
        // browser "was not closed manually"; bounded, since it runs on a
        // runtime worker.
        if let Some(child) = self.browser.get_mut_child() {
            for _ in 0..REAP_TRIES {
                if !matches!(child.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(REAP_PAUSE);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        info!(dir = %self.dir.display(), killed, cpu_ms, "browser ended (cpu_ms: its processes then, with the children they had reaped)");
    }
}

/// The processes whose command line names `dir` as their `--user-data-dir`.
fn processes_of(dir: &Path) -> Vec<i32> {
    let needle = format!("--user-data-dir={}", dir.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            cmdline
                .split(|&b| b == 0)
                .any(|arg| arg == needle.as_bytes())
                .then_some(pid)
        })
        .collect()
}

/// CPU time (user + system, ms) the processes of `dir` used so far, with
/// that of the children they reaped (the zygote reaps the renderers of
/// closed pages, the browser its utility processes); a renderer that exited
/// and was not reaped yet is missed, so this is a lower bound.
fn cpu_ms_of(dir: &Path) -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .unwrap_or(100)
        .max(1);
    processes_of(dir)
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // Fields after the command name, which may hold spaces: utime,
            // stime, cutime and cstime are the 12th to the 15th.
            let rest = &stat[stat.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split(' ').collect();
            (11..=14)
                .map(|i| f.get(i)?.parse::<u64>().ok())
                .sum::<Option<u64>>()
        })
        .sum::<u64>()
        * 1000
        / ticks
}

/// SIGKILLs every process whose command line names `dir` as its
/// `--user-data-dir` (unique to one browser of this process); how many.
fn kill_processes_of(dir: &Path) -> usize {
    let pids = processes_of(dir);
    for &pid in &pids {
        // SAFETY: kill(2) with a pid read from /proc and a valid signal.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    pids.len()
}

static PROFILE_SEQ: AtomicU64 = AtomicU64::new(0);

/// Prefix of a browser's profile folder in the temporary folder; the
/// forager process id and a sequence number follow.
const PROFILE_PREFIX: &str = "forager-chromium-";

/// A forager killed with SIGKILL cannot end its browsers: the next one to
/// start a browser ends those whose forager is gone (their profile folder
/// names its process) and removes their folders.
fn reap_orphans() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PROFILE_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let killed = kill_processes_of(&entry.path());
        let _ = std::fs::remove_dir_all(entry.path());
        info!(dir = %entry.path().display(), killed, "ended the browser of a forager that is gone");
    }
}

impl Renderer {
    /// A renderer for `job`; fails when no browser is found.
    pub fn new(job: &str, spec: &RenderSpec) -> Result<Renderer, RenderError> {
        let program = find_chromium(spec)?;
        Ok(Renderer {
            spec: spec.clone(),
            program,
            job: job.to_string(),
            pages: Arc::new(Semaphore::new(spec.pages.max(1) as usize)),
            browser: Mutex::new(None),
            launches: AtomicU64::new(0),
        })
    }

    /// Browsers started so far (1 plus the restarts after a crash).
    pub fn launches(&self) -> u64 {
        self.launches.load(Ordering::Relaxed)
    }

    /// Pages rendered at once at most (`render.pages`).
    pub fn pages(&self) -> u64 {
        self.spec.pages.max(1)
    }

    /// The time one render may take.
    pub fn timeout(&self) -> Duration {
        self.spec.timeout
    }

    /// Starts rendering `url`, whose HTML forager already fetched (`body`,
    /// served to the browser as the page's own answer, never fetched again).
    /// Waits for a page of the pool.
    pub async fn start(
        &self,
        url: &Url,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<Session, RenderError> {
        let permit = self
            .pages
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| RenderError::Browser(e.to_string()))?;
        let deadline = Instant::now() + self.spec.timeout;
        let live = self.live().await?;
        let page =
            match tokio::time::timeout_at(deadline, live.browser.new_page("about:blank")).await {
                Ok(Ok(page)) => page,
                Ok(Err(e)) => {
                    live.broken.store(true, Ordering::Relaxed);
                    return Err(RenderError::Browser(e.to_string()));
                }
                Err(_) => {
                    live.broken.store(true, Ordering::Relaxed);
                    return Err(RenderError::Browser("no new page in time".into()));
                }
            };
        let listen = async {
            Ok::<_, chromiumoxide::error::CdpError>((
                page.event_listener::<EventRequestPaused>().await?,
                page.event_listener::<EventTargetCrashed>().await?,
                page.event_listener::<EventLoadEventFired>().await?,
            ))
        };
        let (paused, crashed, loaded) = match listen.await {
            Ok(l) => l,
            Err(e) => {
                live.broken.store(true, Ordering::Relaxed);
                return Err(RenderError::Browser(e.to_string()));
            }
        };
        let nav_page = page.clone();
        let nav_url = url.to_string();
        // The navigation's answer comes once the page's own request is
        // fulfilled, which the session does: it runs beside it.
        let navigation = tokio::spawn(async move {
            let _ = nav_page.execute(NavigateParams::new(nav_url)).await;
        });
        Ok(Session {
            page: Some(page),
            live,
            _permit: permit,
            paused,
            crashed,
            loaded,
            navigation,
            deadline,
            main: Some(MainDocument {
                content_type: content_type.unwrap_or("text/html").to_string(),
                body: body.to_vec(),
            }),
            is_loaded: false,
            last_activity: Instant::now(),
            requests: 0,
            max_requests: self.spec.max_requests,
            refused: 0,
            job: self.job.clone(),
        })
    }

    /// The running browser, started (again) when there is none or the last one broke.
    async fn live(&self) -> Result<Arc<Live>, RenderError> {
        let mut slot = self.browser.lock().await;
        if let Some(live) = slot.as_ref() {
            let exited = live.handler.is_finished() || live.exited();
            if !live.broken.load(Ordering::Relaxed) && !exited {
                return Ok(live.clone());
            }
            warn!(job = %self.job, "the browser crashed or stopped answering: starting a new one");
        }
        // Dropping the old one (once its last session ends) kills its processes.
        *slot = None;
        let live = Arc::new(self.launch().await?);
        *slot = Some(live.clone());
        Ok(live)
    }

    async fn launch(&self) -> Result<Live, RenderError> {
        reap_orphans();
        let dir = std::env::temp_dir().join(format!(
            "{PROFILE_PREFIX}{}-{}",
            std::process::id(),
            PROFILE_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| RenderError::Launch(e.to_string()))?;
        let heap_mib = (self.spec.max_memory >> 20).max(16);
        let mut config = BrowserConfig::builder()
            .chrome_executable(&self.program)
            .user_data_dir(&dir)
            .enable_request_intercept()
            .disable_cache()
            .launch_timeout(LAUNCH_TIMEOUT)
            .request_timeout(self.spec.timeout + AFTER_DEADLINE)
            // chromiumoxide writes each as `--` and the text: no dashes here
            // (with them Chromium saw `----proxy-server=…` and ignored every one).
            .args([
                // Nothing leaves the browser but through interception: a proxy
                // that answers nothing, for loopback too, and no name resolves.
                "proxy-server=127.0.0.1:9".to_string(),
                "proxy-bypass-list=<-loopback>".to_string(),
                "host-resolver-rules=MAP * ~NOTFOUND".to_string(),
                "force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_string(),
                "webrtc-ip-handling-policy=disable_non_proxied_udp".to_string(),
                "disable-component-update".to_string(),
                "disable-domain-reliability".to_string(),
                "no-pings".to_string(),
                "disable-gpu".to_string(),
                // The memory cap: a page past it crashes its renderer only.
                // No renderer-process-limit: with it at `pages`, pages of the
                // pool shared a renderer and a page past the memory cap
                // crashed its neighbour (the test of the cap saw it); at most
                // `pages` pages are open, so renderers stay about that many.
                format!("js-flags=--max-old-space-size={heap_mib}"),
            ]);
        // Chromium refuses to run as root with its sandbox on.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            config = config.no_sandbox();
        }
        let config = config.build().map_err(RenderError::Launch)?;
        let (mut browser, mut handler) = match Browser::launch(config).await {
            Ok(b) => b,
            Err(e) => {
                kill_processes_of(&dir);
                let _ = std::fs::remove_dir_all(&dir);
                return Err(RenderError::Launch(e.to_string()));
            }
        };
        let handler = tokio::spawn(async move {
            // The connection lives as long as this loop; an error of one
            // message is not the end of the browser.
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    debug!(error = %e, "browser connection");
                }
            }
        });
        let pid = browser
            .get_mut_child()
            .and_then(|child| child.as_mut_inner().id());
        let n = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        info!(job = %self.job, program = %self.program.display(), launch = n, "browser started");
        Ok(Live {
            browser,
            handler,
            dir,
            broken: AtomicBool::new(false),
            pid,
        })
    }
}

struct MainDocument {
    content_type: String,
    body: Vec<u8>,
}

/// A request the browser made, to answer with [`Session::answer`].
#[derive(Debug)]
pub struct SubRequest {
    id: RequestId,
    pub url: Url,
    pub resource_type: String,
}

/// What the fetcher made of a [`SubRequest`].
pub enum Answer {
    /// An HTTP answer to hand to the page.
    Response {
        status: u16,
        /// Fields passed on (content type, location, CORS).
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Refused or failed: the page sees a network error.
    Refused,
}

/// What a render wants next.
#[derive(Debug)]
pub enum Step {
    /// The browser asks for this; answer it.
    Request(SubRequest),
    /// The page settled (network idle) or its time is up: read it.
    Settled { deadline: bool },
    /// The render failed; the page is read as fetched.
    Failed(RenderError),
}

/// One page being rendered.
pub struct Session {
    page: Option<Page>,
    live: Arc<Live>,
    _permit: OwnedSemaphorePermit,
    paused: EventStream<EventRequestPaused>,
    crashed: EventStream<EventTargetCrashed>,
    loaded: EventStream<EventLoadEventFired>,
    navigation: tokio::task::JoinHandle<()>,
    deadline: Instant,
    main: Option<MainDocument>,
    is_loaded: bool,
    last_activity: Instant,
    requests: u64,
    max_requests: u64,
    refused: u64,
    job: String,
}

impl Session {
    /// Requests handed out so far (each one the caller may have sent).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Requests refused without asking the caller (types, methods, the cap).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// The render's deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Waits for the next thing the render needs.
    pub async fn next(&mut self) -> Step {
        loop {
            let now = Instant::now();
            if now >= self.deadline {
                return Step::Settled { deadline: true };
            }
            let settle_at = if self.is_loaded {
                (self.last_activity + IDLE).min(self.deadline)
            } else {
                self.deadline
            };
            let wake = settle_at.min(now + LIVENESS);
            tokio::select! {
                ev = self.paused.next() => {
                    let Some(ev) = ev else {
                        self.live.broken.store(true, Ordering::Relaxed);
                        return Step::Failed(RenderError::Browser("the page's events ended".into()));
                    };
                    self.last_activity = Instant::now();
                    if let Some(req) = self.triage(&ev).await {
                        return Step::Request(req);
                    }
                }
                _ = self.crashed.next() => return Step::Failed(RenderError::Crashed),
                l = self.loaded.next() => {
                    if l.is_some() {
                        self.is_loaded = true;
                        self.last_activity = Instant::now();
                    }
                }
                _ = tokio::time::sleep_until(wake) => {
                    if Instant::now() >= settle_at {
                        return Step::Settled { deadline: settle_at >= self.deadline };
                    }
                    if self.live.exited() {
                        self.live.broken.store(true, Ordering::Relaxed);
                        return Step::Failed(RenderError::Browser("the browser's process ended".into()));
                    }
                }
            }
        }
    }

    /// Answers what needs no fetch (the page itself, refusals); a request
    /// for the caller otherwise.
    async fn triage(&mut self, ev: &EventRequestPaused) -> Option<SubRequest> {
        let resource_type = ev.resource_type.as_ref().to_string();
        let id = ev.request_id.clone();
        if resource_type == "Document" {
            // The first document asked for is the page, answered with the
            // body forager already holds. Any later one (a frame, a script
            // navigating away) is refused: its links are the crawl's to follow.
            if let Some(main) = self.main.take() {
                let headers = vec![("Content-Type".to_string(), main.content_type)];
                self.fulfil(id, 200, &headers, &main.body).await;
                return None;
            }
            self.refuse(id, &ev.request.url, "a second document").await;
            return None;
        }
        if !fetches_resource(&resource_type) {
            self.refuse(id, &ev.request.url, "resource type").await;
            return None;
        }
        if ev.request.method != "GET" {
            self.refuse(id, &ev.request.url, "method").await;
            return None;
        }
        if self.requests >= self.max_requests {
            warn!(job = %self.job, url = %ev.request.url, max = self.max_requests, "render: request refused, over render.max_requests");
            self.refuse(id, &ev.request.url, "render.max_requests")
                .await;
            return None;
        }
        let Ok(url) = Url::parse(&ev.request.url) else {
            self.refuse(id, &ev.request.url, "not a URL").await;
            return None;
        };
        if !matches!(url.scheme(), "http" | "https") {
            self.refuse(id, &ev.request.url, "scheme").await;
            return None;
        }
        self.requests += 1;
        Some(SubRequest {
            id,
            url,
            resource_type,
        })
    }

    /// Hands the fetcher's answer to the page.
    pub async fn answer(&mut self, req: SubRequest, answer: Answer) {
        match answer {
            Answer::Response {
                status,
                headers,
                body,
            } => self.fulfil(req.id, status, &headers, &body).await,
            Answer::Refused => {
                self.fail(req.id).await;
            }
        }
        self.last_activity = Instant::now();
    }

    async fn fulfil(
        &mut self,
        id: RequestId,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) {
        let mut params = FulfillRequestParams::new(id, i64::from(status));
        params.response_headers = Some(
            headers
                .iter()
                .map(|(k, v)| HeaderEntry::new(k.clone(), v.clone()))
                .collect(),
        );
        params.body = Some(
            base64::engine::general_purpose::STANDARD
                .encode(body)
                .into(),
        );
        self.command(params).await;
    }

    async fn refuse(&mut self, id: RequestId, url: &str, why: &'static str) {
        self.refused += 1;
        debug!(job = %self.job, url, why, "render: request refused");
        self.fail(id).await;
    }

    async fn fail(&mut self, id: RequestId) {
        self.command(FailRequestParams::new(id, ErrorReason::BlockedByClient))
            .await;
    }

    async fn command<C: chromiumoxide::types::Command>(&mut self, cmd: C) {
        let Some(page) = &self.page else {
            return;
        };
        let until = self.deadline.max(Instant::now()) + AFTER_DEADLINE;
        match tokio::time::timeout_at(until, page.execute(cmd)).await {
            Ok(Ok(_)) => {}
            // A request the page gave up on (navigated away, closed) is not an error.
            Ok(Err(e)) => debug!(job = %self.job, error = %e, "render: command failed"),
            Err(_) => {
                self.live.broken.store(true, Ordering::Relaxed);
                debug!(job = %self.job, "render: command timed out");
            }
        }
    }

    /// Reads the rendered DOM and closes the page. `deadline`: the page did
    /// not settle, so a script may be running still — it is stopped first.
    pub async fn finish(mut self, deadline: bool) -> Result<String, RenderError> {
        let Some(page) = self.page.take() else {
            return Err(RenderError::Browser("no page".into()));
        };
        self.navigation.abort();
        if deadline {
            // Stops a script that never yields (a loop), so the DOM can be read.
            let _ = tokio::time::timeout(
                AFTER_DEADLINE,
                page.execute(TerminateExecutionParams::default()),
            )
            .await;
        }
        let html = match tokio::time::timeout(AFTER_DEADLINE, page.content()).await {
            Ok(Ok(html)) => Ok(html),
            Ok(Err(e)) => Err(RenderError::Unreadable(e.to_string())),
            Err(_) => Err(RenderError::Unreadable("timed out".into())),
        };
        if html.is_err() {
            // A renderer that cannot be read may not close either: the
            // browser is replaced rather than trusted.
            self.live.broken.store(true, Ordering::Relaxed);
        }
        match tokio::time::timeout(AFTER_DEADLINE, page.close()).await {
            Ok(Ok(())) => {}
            _ => self.live.broken.store(true, Ordering::Relaxed),
        }
        html.map(|mut h| {
            if h.len() > MAX_RENDERED_BYTES {
                let mut cut = MAX_RENDERED_BYTES;
                while !h.is_char_boundary(cut) {
                    cut -= 1;
                }
                h.truncate(cut);
            }
            h
        })
    }

    /// Ends a render that failed: the page is closed, or the browser replaced.
    pub async fn abandon(mut self) {
        self.navigation.abort();
        if let Some(page) = self.page.take() {
            if !matches!(
                tokio::time::timeout(AFTER_DEADLINE, page.close()).await,
                Ok(Ok(()))
            ) {
                self.live.broken.store(true, Ordering::Relaxed);
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.navigation.abort();
        // A session dropped mid-way (the job stopped) leaves a page open in
        // a browser that is then replaced rather than reused.
        if self.page.is_some() {
            self.live.broken.store(true, Ordering::Relaxed);
        }
    }
}
