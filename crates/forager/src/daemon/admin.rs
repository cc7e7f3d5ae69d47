//! The admin HTTP API and its client, used by `forager status` and `forager purge`.
//!
//! | route                      | answer                                              |
//! |----------------------------|-----------------------------------------------------|
//! | `GET /`                    | the dashboard: an HTML page of the jobs ([`super::dashboard`]) |
//! | `GET /jobs/{name}/plot.svg`| a job's targets against its requests, as SVG         |
//! | `GET /jobs/{name}/explain` | what `forager explain` prints, as text              |
//! | `GET /status`              | [`StatusReport`] as JSON                            |
//! | `GET /jobs/{name}`         | [`JobStatus`] as JSON, with all its top actions     |
//! | `GET /metrics`             | Prometheus text format                              |
//! | `POST /jobs/{name}/purge`  | delete a stopped job's stored state (the daemon holds the store open, so `forager purge` goes through here while it runs) |
//! | `POST /jobs/{name}/pause`, `/resume`, `/rerun` | what `forager pause|resume|rerun` send ([`DriveAction`]) |
//! | `POST /dashboard/drive`    | the dashboard's buttons: the token comes in the form, typed by a person |
//! | `POST /drain`, `/drain/cancel` | what `forager drain [--cancel]` sends: a cluster node gives its jobs back and takes none ([`DrainReply`]) |
//!
//! # Who may ask
//!
//! Any local process, and any web page a local browser shows, can open a
//! connection to a loopback port. So:
//!
//! - every request must name the listen address in `Host` (an IP literal or
//!   `localhost`, with the listen port): a DNS-rebinding page sends its own
//!   host name and is refused, so it cannot read `/status` either;
//! - a request carrying an `Origin` must come from that same address: a
//!   cross-site form post is refused before it reaches a route;
//! - a mutating route (anything but `GET`/`HEAD`) also needs
//!   `Authorization: Bearer TOKEN`, where TOKEN is the content of
//!   `STATE_DIR/admin.token`, written afresh (mode 0600) at every daemon start.
//!   Reading that file is the permission: the daemon's user and root.
//!
//! # Slow clients
//!
//! The listener is its own small server (not `axum::serve`): a header must
//! arrive within [`HEADER_TIMEOUT`], a connection lives at most
//! [`CONNECTION_LIFETIME`] (idle keep-alive and slow readers included), and
//! at most [`MAX_CONNECTIONS`] are open at once — a new one closes the oldest.
//! So a flood of trickling clients holds a bounded number of descriptors (the
//! crawl's own sockets and files never starve) and `/status` keeps answering.

use super::dashboard::DASHBOARD_FORM;
use super::metrics;
use super::report::{self, JobStatus, StatusReport};
use super::Shared;
use anyhow::{bail, Context};
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Semaphore};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

/// How long the client waits for the daemon.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Open admin connections at most; one more closes the oldest.
pub const MAX_CONNECTIONS: usize = 64;
/// A request's headers must be complete this long after the connection
/// opened (or after the previous answer on a kept-alive connection).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest life of one connection, whatever it does.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);
/// Largest request head accepted (request line and headers).
const MAX_HEADER_BYTES: usize = 16 << 10;
/// The token file in the state folder.
pub const TOKEN_FILE: &str = "admin.token";

/// The body of every error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
}

/// What the daemon's main loop answers to a purge request.
#[derive(Debug)]
pub enum PurgeOutcome {
    /// Done; `restarts` when a job file still declares the job, which starts again from its seeds.
    Purged {
        restarts: bool,
    },
    NotFound(String),
    /// The job is running: refused.
    Conflict(String),
    Failed(String),
}

/// What a person asks of a job: `forager pause|resume|rerun NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DriveAction {
    /// Checkpoint and stop fetching until resumed (held across daemon restarts).
    Pause,
    /// Continue a paused job from its checkpoint.
    Resume,
    /// Run a finished, stopped or paused job again from its seeds, as a new job.
    Rerun,
}

impl DriveAction {
    pub const ALL: [DriveAction; 3] = [DriveAction::Pause, DriveAction::Resume, DriveAction::Rerun];

    pub fn as_str(self) -> &'static str {
        match self {
            DriveAction::Pause => "pause",
            DriveAction::Resume => "resume",
            DriveAction::Rerun => "rerun",
        }
    }

    pub fn parse(word: &str) -> Option<DriveAction> {
        DriveAction::ALL.into_iter().find(|a| a.as_str() == word)
    }
}

/// What the daemon's main loop answers to a pause, resume or rerun.
#[derive(Debug)]
pub enum DriveOutcome {
    /// Done: what happens now, for a person.
    Done(String),
    NotFound(String),
    /// The job is not in a state the action applies to.
    Conflict(String),
    Failed(String),
    /// The daemon is shutting down and takes no more commands.
    Stopping,
}

/// What `POST /jobs/NAME/{pause,resume,rerun}` answers.
#[derive(Debug, Serialize, Deserialize)]
pub struct DriveReply {
    pub job: String,
    pub action: DriveAction,
    /// What happens now, for a person.
    pub message: String,
}

/// What `POST /drain` and `/drain/cancel` answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct DrainReply {
    /// What happens now, for a person.
    pub message: String,
}

/// A request from the API to the daemon's main loop.
#[derive(Debug)]
pub enum Command {
    /// Pause, resume or rerun a job.
    Drive {
        job: String,
        action: DriveAction,
        reply: oneshot::Sender<DriveOutcome>,
    },
    Purge {
        job: String,
        reply: oneshot::Sender<PurgeOutcome>,
    },
    /// Start (`on`) or end draining this cluster node.
    Drain {
        on: bool,
        reply: oneshot::Sender<DriveOutcome>,
    },
    /// `forager explain`'s text for a job, from its last checkpoint.
    Explain {
        job: String,
        top: usize,
        reply: oneshot::Sender<ExplainOutcome>,
    },
}

/// The answer to [`Command::Explain`].
#[derive(Debug)]
pub enum ExplainOutcome {
    Text(String),
    NotFound(String),
    Failed(String),
}

/// Most actions `GET /jobs/NAME/explain` lists.
const MAX_EXPLAIN_TOP: usize = 1000;

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(ApiError {
            error: message.into(),
        }),
    )
        .into_response()
}

/// Who may use the API: the listen address requests must name, and the token
/// mutating requests must carry.
#[derive(Clone)]
pub struct Guard {
    listen: SocketAddr,
    token: String,
}

impl Guard {
    pub fn new(listen: SocketAddr, token: String) -> Guard {
        Guard { listen, token }
    }

    /// Whether `host` (a `Host` header or an origin's authority) names the listen address.
    fn names_listener(&self, host: &str) -> bool {
        let Ok(authority) = host.parse::<axum::http::uri::Authority>() else {
            return false;
        };
        if authority.port_u16().unwrap_or(80) != self.listen.port() {
            return false;
        }
        let name = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let listen = self.listen.ip();
        if name.eq_ignore_ascii_case("localhost") {
            return listen.is_loopback() || listen.is_unspecified();
        }
        // Any other name could be a rebinding attacker's: only IP literals.
        match name.parse::<IpAddr>() {
            Ok(ip) => {
                listen.is_unspecified()
                    || ip == listen
                    || (ip.is_loopback() && listen.is_loopback())
            }
            Err(_) => false,
        }
    }

    /// Why a request is refused, if it is.
    fn check(&self, method: &Method, path: &str, headers: &HeaderMap) -> Option<Response> {
        // HTTP/1.0 clients may send no Host; a browser always sends one.
        if let Some(host) = headers.get(header::HOST) {
            let ok = host.to_str().is_ok_and(|h| self.names_listener(h));
            if !ok {
                return Some(error(
                    StatusCode::MISDIRECTED_REQUEST,
                    format!(
                        "Host must be the admin address {} (or localhost:{})",
                        self.listen,
                        self.listen.port()
                    ),
                ));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let ok = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|authority| self.names_listener(authority));
            if !ok {
                return Some(error(
                    StatusCode::FORBIDDEN,
                    "cross-origin requests are refused",
                ));
            }
        }
        // The dashboard's form carries the token in its body (a browser
        // cannot add the header); its handler checks it.
        if method != Method::GET && method != Method::HEAD && path != DASHBOARD_FORM {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            if !same_secret(given.trim().as_bytes(), self.token.as_bytes()) {
                return Some(error(
                    StatusCode::UNAUTHORIZED,
                    format!(
                        "this route needs Authorization: Bearer <the content of {TOKEN_FILE} in the daemon's state_dir>; `forager purge`, `pause`, `resume` and `rerun` send it"
                    ),
                ));
            }
        }
        None
    }
}

/// Compare two secrets in time independent of where they differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

async fn guard(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    if let Some(refused) = guard.check(req.method(), req.uri().path(), req.headers()) {
        debug!(method = %req.method(), uri = %req.uri(), status = %refused.status(), "admin request refused");
        return refused;
    }
    next.run(req).await
}

/// The routes, over the daemon's shared state, behind `guard`.
pub fn router(shared: Arc<Shared>, guard_: Guard) -> Router {
    Router::new()
        .route("/", get(dashboard_page))
        .route("/jobs/{name}/plot.svg", get(job_plot))
        .route("/status", get(status))
        .route("/metrics", get(metrics_text))
        .route("/jobs/{name}", get(job))
        .route("/jobs/{name}/purge", post(purge))
        .route(
            "/jobs/{name}/pause",
            post(|s: State<Arc<Shared>>, n: Path<String>| drive_route(s, n, DriveAction::Pause)),
        )
        .route(
            "/jobs/{name}/resume",
            post(|s: State<Arc<Shared>>, n: Path<String>| drive_route(s, n, DriveAction::Resume)),
        )
        .route(
            "/jobs/{name}/rerun",
            post(|s: State<Arc<Shared>>, n: Path<String>| drive_route(s, n, DriveAction::Rerun)),
        )
        .route(DASHBOARD_FORM, post(dashboard_form))
        .route("/drain", post(|s: State<Arc<Shared>>| drain_route(s, true)))
        .route(
            "/drain/cancel",
            post(|s: State<Arc<Shared>>| drain_route(s, false)),
        )
        .route("/jobs/{name}/explain", get(explain))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "no such route; try /, /status, /jobs/NAME or /metrics",
            )
        })
        .with_state(shared)
        .layer(axum::Extension(Arc::new(guard_.clone())))
        .layer(middleware::from_fn_with_state(Arc::new(guard_), guard))
}

/// Ask the main loop to pause, resume or rerun `job`.
async fn drive(shared: &Shared, job: String, action: DriveAction) -> DriveOutcome {
    let (reply, answer) = oneshot::channel();
    if shared
        .commands
        .send(Command::Drive { job, action, reply })
        .is_err()
    {
        return DriveOutcome::Stopping;
    }
    answer.await.unwrap_or(DriveOutcome::Stopping)
}

async fn drive_route(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    action: DriveAction,
) -> Response {
    match drive(&shared, name.clone(), action).await {
        DriveOutcome::Done(message) => Json(DriveReply {
            job: name,
            action,
            message,
        })
        .into_response(),
        DriveOutcome::NotFound(m) => error(StatusCode::NOT_FOUND, m),
        DriveOutcome::Conflict(m) => error(StatusCode::CONFLICT, m),
        DriveOutcome::Failed(m) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
        DriveOutcome::Stopping => error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping"),
    }
}

async fn drain_route(State(shared): State<Arc<Shared>>, on: bool) -> Response {
    let (reply, answer) = oneshot::channel();
    if shared.commands.send(Command::Drain { on, reply }).is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping");
    }
    match answer.await.unwrap_or(DriveOutcome::Stopping) {
        DriveOutcome::Done(message) => Json(DrainReply { message }).into_response(),
        DriveOutcome::NotFound(m) => error(StatusCode::NOT_FOUND, m),
        DriveOutcome::Conflict(m) => error(StatusCode::CONFLICT, m),
        DriveOutcome::Failed(m) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
        DriveOutcome::Stopping => error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping"),
    }
}

/// A dashboard button: the token typed into the page and `ACTION:JOB`.
/// Success goes back to the dashboard (303); a refusal is a small page that says why.
async fn dashboard_form(
    State(shared): State<Arc<Shared>>,
    axum::Extension(guard): axum::Extension<Arc<Guard>>,
    body: axum::body::Bytes,
) -> Response {
    let mut token = String::new();
    let mut wanted = String::new();
    for (key, value) in url::form_urlencoded::parse(&body) {
        match key.as_ref() {
            "token" => token = value.trim().to_string(),
            "do" => wanted = value.into_owned(),
            _ => {}
        }
    }
    let page = |status: StatusCode, message: &str| {
        (
            status,
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    super::dashboard::CONTENT_SECURITY_POLICY,
                ),
                (header::CACHE_CONTROL, "no-store"),
            ],
            super::dashboard::answer_page(message),
        )
            .into_response()
    };
    if !same_secret(token.as_bytes(), guard.token.as_bytes()) {
        return page(
            StatusCode::UNAUTHORIZED,
            &format!("Wrong or missing admin token: paste the content of {TOKEN_FILE} in the daemon's state_dir into the token field."),
        );
    }
    let Some((action, job)) = wanted
        .split_once(':')
        .and_then(|(a, j)| Some((DriveAction::parse(a)?, j.to_string())))
    else {
        return page(StatusCode::BAD_REQUEST, "The form named no action and job.");
    };
    match drive(&shared, job, action).await {
        DriveOutcome::Done(_) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, "/"), (header::CACHE_CONTROL, "no-store")],
        )
            .into_response(),
        DriveOutcome::NotFound(m) => page(StatusCode::NOT_FOUND, &m),
        DriveOutcome::Conflict(m) => page(StatusCode::CONFLICT, &m),
        DriveOutcome::Failed(m) => page(StatusCode::INTERNAL_SERVER_ERROR, &m),
        DriveOutcome::Stopping => page(StatusCode::SERVICE_UNAVAILABLE, "The daemon is stopping."),
    }
}

async fn dashboard_page(State(shared): State<Arc<Shared>>) -> Response {
    let html = super::dashboard::page(&shared.full_report().await);
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                super::dashboard::CONTENT_SECURITY_POLICY,
            ),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

async fn job_plot(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let points = match shared.table().get(&name) {
        Some(e) => e.live.lock().curve.points().to_vec(),
        None => return error(StatusCode::NOT_FOUND, format!("no job named {name:?}")),
    };
    match super::dashboard::plot_svg(&name, &points) {
        Ok(svg) => (
            [
                (header::CONTENT_TYPE, "image/svg+xml"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            svg,
        )
            .into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn status(State(shared): State<Arc<Shared>>) -> Json<StatusReport> {
    Json(shared.full_report().await)
}

async fn metrics_text(State(shared): State<Arc<Shared>>) -> Response {
    let body = shared.metrics_text();
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], body).into_response()
}

async fn job(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    // In a cluster, an entry whose (virtual) file is gone is what an
    // earlier lease left here: the registry knows where the job is now.
    let in_cluster = shared.cluster.get().is_some();
    let local = {
        let table = shared.table();
        table
            .get(&name)
            .filter(|e| !in_cluster || e.file.is_some())
            .map(|e| report::job_status(e, Instant::now(), usize::MAX))
    };
    if let Some(status) = local {
        return Json(status).into_response();
    }
    // In a cluster, another node may run it: the registry answers.
    match shared.cluster_job(&name).await {
        Some(Ok(Some(status))) => Json(status).into_response(),
        Some(Err(e)) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "job {name:?} is not on this node, and the cluster database cannot say where: {e}"
            ),
        ),
        Some(Ok(None)) => error(
            StatusCode::NOT_FOUND,
            format!("no job named {name:?} on this node or in the cluster registry"),
        ),
        None => error(StatusCode::NOT_FOUND, format!("no job named {name:?}")),
    }
}

async fn purge(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let (reply, answer) = oneshot::channel();
    if shared
        .commands
        .send(Command::Purge {
            job: name.clone(),
            reply,
        })
        .is_err()
    {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping");
    }
    match answer.await {
        Ok(PurgeOutcome::Purged { restarts }) => (
            StatusCode::OK,
            Json(PurgeReply {
                purged: name,
                restarts,
            }),
        )
            .into_response(),
        Ok(PurgeOutcome::NotFound(m)) => error(StatusCode::NOT_FOUND, m),
        Ok(PurgeOutcome::Conflict(m)) => error(StatusCode::CONFLICT, m),
        Ok(PurgeOutcome::Failed(m)) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping"),
    }
}

/// What `POST /jobs/NAME/purge` answers.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct PurgeReply {
    pub purged: String,
    /// A job file still declares the job: it starts again from its seeds.
    pub restarts: bool,
}

#[derive(serde::Deserialize)]
struct ExplainQuery {
    top: Option<usize>,
}

async fn explain(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    axum::extract::Query(query): axum::extract::Query<ExplainQuery>,
) -> Response {
    let (reply, answer) = oneshot::channel();
    let top = query.top.unwrap_or(15).min(MAX_EXPLAIN_TOP);
    if shared
        .commands
        .send(Command::Explain {
            job: name,
            top,
            reply,
        })
        .is_err()
    {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping");
    }
    match answer.await {
        Ok(ExplainOutcome::Text(text)) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Ok(ExplainOutcome::NotFound(m)) => error(StatusCode::NOT_FOUND, m),
        Ok(ExplainOutcome::Failed(m)) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping"),
    }
}

/// Bind the admin address (before anything else starts, so a second daemon fails fast).
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.with_context(|| {
        format!("admin API: cannot listen on {addr} (is another forager daemon running?)")
    })
}

/// Write a fresh random token to `STATE_DIR/admin.token` (mode 0600, replaced
/// atomically) and return it.
pub fn write_token(state_dir: &std::path::Path) -> anyhow::Result<String> {
    use rand::RngCore;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let path = state_dir.join(TOKEN_FILE);
    let tmp = state_dir.join(format!(".{TOKEN_FILE}.tmp"));
    // A leftover from a crash may have other permissions: never write into it.
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", tmp.display())),
    }
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(token.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().with_context(|| format!("writing the admin token {}", path.display()))?;
    Ok(token)
}

/// The token a running daemon wrote into `state_dir`.
pub fn read_token(state_dir: &std::path::Path) -> anyhow::Result<String> {
    let path = state_dir.join(TOKEN_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading the admin token {} (run as the daemon's user or root, and give --state-dir or --config if the state is elsewhere)",
            path.display()
        )
    })?;
    Ok(text.trim().to_string())
}

/// The open connections, oldest first, each with the sender that closes it.
#[derive(Default)]
struct Connections {
    next: u64,
    open: BTreeMap<u64, oneshot::Sender<()>>,
}

fn lock_connections(c: &Mutex<Connections>) -> std::sync::MutexGuard<'_, Connections> {
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serve until `shutdown` resolves.
pub fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    guard: Guard,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> JoinHandle<std::io::Result<()>> {
    let app = router(shared, guard);
    tokio::spawn(async move {
        let connections = Arc::new(Mutex::new(Connections::default()));
        let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let (stopping_tx, stopping) = watch::channel(false);
        let warned = Arc::new(AtomicBool::new(false));
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors (or similar): back off instead of spinning.
                    warn!(error = %e, "admin API: cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            // A permit per open connection, returned when its socket is dropped:
            // at the cap the loop waits for the oldest to be gone, so the
            // descriptors held never outrun the cap, however slowly the closed
            // connections' tasks get to run on a loaded machine.
            let permit = match permits.clone().try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    // The oldest is the likeliest to be stuck: a real client asks and goes.
                    let oldest = lock_connections(&connections).open.pop_first();
                    if let Some((_, close_oldest)) = oldest {
                        let _ = close_oldest.send(());
                    }
                    if !warned.swap(true, Ordering::Relaxed) {
                        warn!(
                            max = MAX_CONNECTIONS,
                            "admin API: connection cap reached; closing the oldest connections"
                        );
                    }
                    tokio::select! {
                        () = &mut shutdown => break,
                        permit = permits.clone().acquire_owned() => match permit {
                            Ok(permit) => permit,
                            Err(_) => break,
                        },
                    }
                }
            };
            let (close_tx, close) = oneshot::channel();
            let id = {
                let mut c = lock_connections(&connections);
                let id = c.next;
                c.next += 1;
                c.open.insert(id, close_tx);
                id
            };
            let app = app.clone();
            let connections = connections.clone();
            let stopping = stopping.clone();
            tokio::spawn(async move {
                serve_connection(stream, app, close, stopping).await;
                lock_connections(&connections).open.remove(&id);
                drop(permit);
            });
        }
        let _ = stopping_tx.send(true);
        Ok(())
    })
}

/// One connection: HTTP/1.1 with a header time-out, until it ends, is
/// closed for a newer one, outlives [`CONNECTION_LIFETIME`], or the daemon stops.
async fn serve_connection(
    stream: TcpStream,
    app: Router,
    close: oneshot::Receiver<()>,
    mut stopping: watch::Receiver<bool>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_HEADER_BYTES.max(8192))
        .max_header_size(MAX_HEADER_BYTES);
    let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                debug!(error = %e, "admin connection ended with an error");
            }
        }
        _ = close => debug!("admin connection closed for a newer one"),
        () = tokio::time::sleep(CONNECTION_LIFETIME) => debug!("admin connection closed: too old"),
        () = async {
            // The guard `wait_for` returns must not live across an await.
            let _ = stopping.wait_for(|&s| s).await;
        } => {
            // Let an answer under way finish, briefly.
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
        }
    }
}

fn client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        // The admin API is on loopback: an http_proxy variable must not send it elsewhere.
        .no_proxy()
        .timeout(CLIENT_TIMEOUT)
        .build()
        .context("building the HTTP client")
}

/// The body of a successful answer; a failed one becomes its error message.
async fn success_body(admin: SocketAddr, resp: reqwest::Response) -> anyhow::Result<Vec<u8>> {
    let status = resp.status();
    let body = resp
        .bytes()
        .await
        .with_context(|| format!("reading the answer of the daemon at {admin}"))?;
    if !status.is_success() {
        let message = serde_json::from_slice::<ApiError>(&body)
            .map(|e| e.error)
            .unwrap_or_else(|_| String::from_utf8_lossy(&body).chars().take(200).collect());
        bail!("daemon at {admin}: {status}: {message}");
    }
    Ok(body.to_vec())
}

async fn decode<T: serde::de::DeserializeOwned>(
    admin: SocketAddr,
    resp: reqwest::Response,
) -> anyhow::Result<T> {
    let body = success_body(admin, resp).await?;
    serde_json::from_slice(&body).with_context(|| {
        format!("daemon at {admin} sent a status this forager cannot read (different version?)")
    })
}

fn unreachable(admin: SocketAddr) -> String {
    format!("cannot reach the forager daemon's admin API at {admin} (is it running? is admin_listen right?)")
}

/// `GET /status` of the daemon at `admin`.
pub async fn status_of(admin: SocketAddr) -> anyhow::Result<StatusReport> {
    let resp = client()?
        .get(format!("http://{admin}/status"))
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    decode(admin, resp).await
}

/// `GET /metrics` of the daemon at `admin`, as text.
pub async fn metrics_of(admin: SocketAddr) -> anyhow::Result<String> {
    let resp = client()?
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    let status = resp.status();
    let text = resp
        .text()
        .await
        .with_context(|| format!("reading the metrics of the daemon at {admin}"))?;
    if !status.is_success() {
        bail!("daemon at {admin}: /metrics answered {status}");
    }
    Ok(text)
}

/// `GET /jobs/{name}` of the daemon at `admin`.
pub async fn job_of(admin: SocketAddr, name: &str) -> anyhow::Result<JobStatus> {
    let resp = client()?
        .get(format!("http://{admin}/jobs/{name}"))
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    decode(admin, resp).await
}

/// Ask the daemon at `admin`, whose state is in `state_dir` (its token is
/// there), to purge a stopped job's stored state.
pub async fn purge_via(
    admin: SocketAddr,
    state_dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<PurgeReply> {
    let token = read_token(state_dir)?;
    let resp = client()?
        .post(format!("http://{admin}/jobs/{name}/purge"))
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    decode(admin, resp).await
}

/// Ask the daemon at `admin`, whose state is in `state_dir` (its token is
/// there), to pause, resume or rerun a job.
pub async fn drive_via(
    admin: SocketAddr,
    state_dir: &std::path::Path,
    name: &str,
    action: DriveAction,
) -> anyhow::Result<DriveReply> {
    let token = read_token(state_dir)?;
    let seg = percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC);
    let resp = client()?
        .post(format!("http://{admin}/jobs/{seg}/{}", action.as_str()))
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    decode(admin, resp).await
}

/// Ask the daemon at `admin`, whose state is in `state_dir` (its token is
/// there), to drain (`on`) or to take jobs again.
pub async fn drain_via(
    admin: SocketAddr,
    state_dir: &std::path::Path,
    on: bool,
) -> anyhow::Result<DrainReply> {
    let token = read_token(state_dir)?;
    let path = if on { "drain" } else { "drain/cancel" };
    let resp = client()?
        .post(format!("http://{admin}/{path}"))
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    decode(admin, resp).await
}

/// `GET /jobs/{name}/explain` of the daemon at `admin`: what `forager explain` prints.
pub async fn explain_of(admin: SocketAddr, name: &str, top: usize) -> anyhow::Result<String> {
    let resp = client()?
        .get(format!("http://{admin}/jobs/{name}/explain?top={top}"))
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    let body = success_body(admin, resp).await?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::jobs::{JobTable, Parsed, ScannedFile};
    use crate::daemon::report::DaemonInfo;
    use forager_core::config::JobSpec;
    use tokio::sync::mpsc;

    struct Api {
        addr: SocketAddr,
        state: tempfile::TempDir,
        rx: mpsc::UnboundedReceiver<Command>,
        _stop: oneshot::Sender<()>,
    }

    async fn start() -> Api {
        let mut table = JobTable::new();
        table.reconcile(vec![ScannedFile {
            path: "j/a.toml".into(),
            parsed: Parsed::Valid(Box::new(JobSpec::new(
                "a",
                vec![url::Url::parse("http://a.test/").unwrap()],
            ))),
        }]);
        let (tx, rx) = mpsc::unbounded_channel();
        let info = DaemonInfo::for_tests(2);
        let shared = Arc::new(Shared::new(table, info, tx));
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = tempfile::tempdir().unwrap();
        let token = write_token(state.path()).unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        serve(listener, shared.clone(), Guard::new(addr, token), async {
            let _ = stopped.await;
        });
        Api {
            addr,
            state,
            rx,
            _stop: stop,
        }
    }

    #[tokio::test]
    async fn status_job_and_metrics_answer() {
        let api = start().await;
        let addr = api.addr;
        let r = status_of(addr).await.unwrap();
        assert_eq!(r.jobs.len(), 1);
        assert_eq!(r.jobs[0].name, "a");
        assert_eq!(r.max_jobs, 2);
        let j = job_of(addr, "a").await.unwrap();
        assert_eq!(j.state, crate::daemon::jobs::Phase::Pending);
        let e = job_of(addr, "nope").await.unwrap_err().to_string();
        assert!(
            e.contains("404") && e.contains("no job named \"nope\""),
            "{e}"
        );
        let resp = reqwest::get(format!("http://{addr}/metrics"))
            .await
            .unwrap();
        assert_eq!(resp.headers()[header::CONTENT_TYPE], metrics::CONTENT_TYPE);
        let text = resp.text().await.unwrap();
        assert!(
            text.contains("forager_job_state{job=\"a\",state=\"pending\"} 1"),
            "{text}"
        );
        let resp = reqwest::get(format!("http://{addr}/nothing"))
            .await
            .unwrap();
        assert_eq!(resp.status(), reqwest::StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn purge_goes_through_the_main_loop() {
        let mut api = start().await;
        let mut rx = std::mem::replace(&mut api.rx, mpsc::unbounded_channel().1);
        tokio::spawn(async move {
            while let Some(Command::Purge { job, reply }) = rx.recv().await {
                let _ = reply.send(if job == "a" {
                    PurgeOutcome::Conflict("job \"a\" is running".into())
                } else {
                    PurgeOutcome::Purged { restarts: false }
                });
            }
        });
        let e = purge_via(api.addr, api.state.path(), "a")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("409") && e.contains("running"), "{e}");
        purge_via(api.addr, api.state.path(), "b").await.unwrap();
    }

    #[tokio::test]
    async fn pause_resume_and_rerun_go_through_the_main_loop() {
        let mut api = start().await;
        let mut rx = std::mem::replace(&mut api.rx, mpsc::unbounded_channel().1);
        tokio::spawn(async move {
            while let Some(command) = rx.recv().await {
                if let Command::Drive { job, action, reply } = command {
                    let _ = reply.send(match (job.as_str(), action) {
                        ("a", DriveAction::Pause) => DriveOutcome::Done("job a pauses".into()),
                        ("a", _) => {
                            DriveOutcome::Conflict("job \"a\" is running, not paused".into())
                        }
                        _ => DriveOutcome::NotFound(format!("no job named {job:?}")),
                    });
                }
            }
        });
        let reply = drive_via(api.addr, api.state.path(), "a", DriveAction::Pause)
            .await
            .unwrap();
        assert_eq!(
            (reply.job.as_str(), reply.action),
            ("a", DriveAction::Pause)
        );
        assert_eq!(reply.message, "job a pauses");
        let e = drive_via(api.addr, api.state.path(), "a", DriveAction::Resume)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("409") && e.contains("not paused"), "{e}");
        let e = drive_via(api.addr, api.state.path(), "b c", DriveAction::Rerun)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("404") && e.contains("no job named \"b c\""),
            "{e}"
        );
        // Without the token: refused before the main loop.
        let r = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("http://{}/jobs/a/pause", api.addr))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_token_file_is_private_and_changes_at_each_start() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = write_token(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(first.len(), 64);
        assert_eq!(read_token(dir.path()).unwrap(), first);
        let second = write_token(dir.path()).unwrap();
        assert_ne!(first, second);
        assert_eq!(read_token(dir.path()).unwrap(), second);
        let e = format!("{:#}", read_token(&dir.path().join("nope")).unwrap_err());
        assert!(
            e.contains("admin.token") && e.contains("daemon's user"),
            "{e}"
        );
    }

    /// What a web page can make a browser send, and what a script without the token sends.
    #[tokio::test]
    async fn foreign_hosts_origins_and_tokenless_posts_are_refused() {
        let mut api = start().await;
        let addr = api.addr;
        let mut rx = std::mem::replace(&mut api.rx, mpsc::unbounded_channel().1);
        let purges = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = purges.clone();
        tokio::spawn(async move {
            while let Some(Command::Purge { reply, .. }) = rx.recv().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = reply.send(PurgeOutcome::Purged { restarts: false });
            }
        });
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let token = read_token(api.state.path()).unwrap();
        let purge_url = format!("http://{addr}/jobs/a/purge");
        // A cross-site form post: text/plain, a foreign Origin, no token.
        let r = http
            .post(&purge_url)
            .header("Origin", "http://evil.example")
            .header("Content-Type", "text/plain")
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::FORBIDDEN);
        // Even with the token, a foreign Origin is refused.
        let r = http
            .post(&purge_url)
            .bearer_auth(&token)
            .header("Origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::FORBIDDEN);
        // No token, a wrong token.
        let r = http.post(&purge_url).send().await.unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
        let body = r.text().await.unwrap();
        assert!(body.contains("admin.token"), "{body}");
        let r = http
            .post(&purge_url)
            .bearer_auth("0".repeat(64))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
        // DNS rebinding: the page's own name in Host, for a read too.
        for host in [
            "evil.example".to_string(),
            format!("evil.example:{}", addr.port()),
            format!("127.0.0.1:{}", addr.port().wrapping_add(1)),
        ] {
            let r = http
                .get(format!("http://{addr}/status"))
                .header("Host", &host)
                .send()
                .await
                .unwrap();
            assert_eq!(
                r.status(),
                reqwest::StatusCode::MISDIRECTED_REQUEST,
                "{host}"
            );
        }
        assert_eq!(
            purges.load(Ordering::SeqCst),
            0,
            "nothing reached the main loop"
        );
        // The listen address, localhost, and the same origin are fine.
        for host in [addr.to_string(), format!("localhost:{}", addr.port())] {
            let r = http
                .get(format!("http://{addr}/status"))
                .header("Host", &host)
                .header("Origin", format!("http://{host}"))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), reqwest::StatusCode::OK, "{host}");
        }
        let r = http
            .post(&purge_url)
            .bearer_auth(&token)
            .header("Origin", format!("http://{addr}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::OK);
        assert_eq!(purges.load(Ordering::SeqCst), 1);
    }

    /// A client that sends half a header and then nothing is closed.
    #[tokio::test]
    async fn a_trickling_client_is_closed_after_the_header_time_out() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let api = start().await;
        let mut slow = TcpStream::connect(api.addr).await.unwrap();
        slow.write_all(b"GET /status HTTP/1.1\r\nX-a: b\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 512];
        // Bounded by far more than HEADER_TIMEOUT: the assertion is that it ends at all.
        let read = tokio::time::timeout(HEADER_TIMEOUT * 6, slow.read(&mut buf))
            .await
            .expect("the daemon never closed a connection that sent no complete header");
        // Closed (0 bytes) or answered 408; either way not held open.
        if let Ok(n) = read {
            let text = String::from_utf8_lossy(&buf[..n]);
            assert!(n == 0 || text.contains("408"), "{text}");
        }
    }

    /// More idle connections than the cap: the oldest go, and a new request is answered.
    #[tokio::test]
    async fn the_connection_cap_closes_the_oldest_and_status_still_answers() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let api = start().await;
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS + 16 {
            let mut c = TcpStream::connect(api.addr).await.unwrap();
            c.write_all(b"GET /status HTTP/1.1\r\n").await.unwrap();
            idle.push(c);
        }
        let r = status_of(api.addr).await.unwrap();
        assert_eq!(r.jobs.len(), 1);
        // The first ones were closed to make room.
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(20), idle[0].read(&mut buf))
            .await
            .expect("the oldest connection was not closed")
            .unwrap_or(0);
        assert_eq!(n, 0);
    }

    #[test]
    fn hosts_must_name_the_listener() {
        let g = |listen: &str| Guard::new(listen.parse().unwrap(), "t".into());
        let lo = g("127.0.0.1:7878");
        assert!(lo.names_listener("127.0.0.1:7878"));
        assert!(lo.names_listener("localhost:7878"));
        assert!(lo.names_listener("LOCALHOST:7878"));
        assert!(lo.names_listener("[::1]:7878"), "another loopback literal");
        assert!(
            !lo.names_listener("127.0.0.1"),
            "port 80 is not the listener's"
        );
        assert!(!lo.names_listener("127.0.0.1:7879"));
        assert!(!lo.names_listener("rebind.example:7878"));
        assert!(!lo.names_listener("10.0.0.1:7878"));
        assert!(!lo.names_listener("127.0.0.1:7878@evil"));
        let v6 = g("[::1]:9000");
        assert!(v6.names_listener("[::1]:9000"));
        assert!(v6.names_listener("localhost:9000"));
        let public = g("0.0.0.0:7878");
        assert!(public.names_listener("192.0.2.7:7878"));
        assert!(!public.names_listener("forager.example:7878"));
        let one = g("192.0.2.7:80");
        assert!(one.names_listener("192.0.2.7"));
        assert!(!one.names_listener("192.0.2.8"));
        assert!(!one.names_listener("localhost"));
    }

    #[tokio::test]
    async fn an_absent_daemon_is_a_clear_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let e = format!("{:#}", status_of(addr).await.unwrap_err());
        assert!(e.contains("cannot reach the forager daemon"), "{e}");
    }
}
