//! The admin HTTP API (loopback by default; it has no authentication) and its
//! client, used by `forager status`.
//!
//! | route                      | answer                                              |
//! |----------------------------|-----------------------------------------------------|
//! | `GET /status`              | [`StatusReport`] as JSON                            |
//! | `GET /jobs/{name}`         | [`JobStatus`] as JSON, with all its top actions     |
//! | `GET /metrics`             | Prometheus text format                              |
//! | `POST /jobs/{name}/purge`  | delete a stopped job's stored state (the daemon holds the store open, so `forager purge` goes through here while it runs) |

use super::metrics;
use super::report::{self, JobStatus, StatusReport};
use super::Shared;
use anyhow::{bail, Context};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long the client waits for the daemon.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The body of every error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
}

/// What the daemon's main loop answers to a purge request.
#[derive(Debug)]
pub enum PurgeOutcome {
    Purged,
    NotFound(String),
    /// The job is running: refused.
    Conflict(String),
    Failed(String),
}

/// A request from the API to the daemon's main loop.
#[derive(Debug)]
pub enum Command {
    Purge {
        job: String,
        reply: oneshot::Sender<PurgeOutcome>,
    },
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(ApiError {
            error: message.into(),
        }),
    )
        .into_response()
}

/// The routes, over the daemon's shared state.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/metrics", get(metrics_text))
        .route("/jobs/{name}", get(job))
        .route("/jobs/{name}/purge", post(purge))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "no such route; try /status, /jobs/NAME or /metrics",
            )
        })
        .with_state(shared)
}

async fn status(State(shared): State<Arc<Shared>>) -> Json<StatusReport> {
    Json(shared.report())
}

async fn metrics_text(State(shared): State<Arc<Shared>>) -> Response {
    let body = shared.metrics_text();
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], body).into_response()
}

async fn job(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let table = shared.table();
    match table.get(&name) {
        Some(e) => Json(report::job_status(e, Instant::now(), usize::MAX)).into_response(),
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
        Ok(PurgeOutcome::Purged) => {
            (StatusCode::OK, Json(serde_json::json!({ "purged": name }))).into_response()
        }
        Ok(PurgeOutcome::NotFound(m)) => error(StatusCode::NOT_FOUND, m),
        Ok(PurgeOutcome::Conflict(m)) => error(StatusCode::CONFLICT, m),
        Ok(PurgeOutcome::Failed(m)) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping"),
    }
}

/// Bind the admin address (before anything else starts, so a second daemon fails fast).
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.with_context(|| {
        format!("admin API: cannot listen on {addr} (is another forager daemon running?)")
    })
}

/// Serve until `shutdown` resolves.
pub fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> JoinHandle<std::io::Result<()>> {
    let app = router(shared);
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
    })
}

fn client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        // The admin API is on loopback: an http_proxy variable must not send it elsewhere.
        .no_proxy()
        .timeout(CLIENT_TIMEOUT)
        .build()
        .context("building the HTTP client")
}

async fn decode<T: serde::de::DeserializeOwned>(
    admin: SocketAddr,
    resp: reqwest::Response,
) -> anyhow::Result<T> {
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

/// Ask the daemon at `admin` to purge a stopped job's stored state.
pub async fn purge_via(admin: SocketAddr, name: &str) -> anyhow::Result<()> {
    let resp = client()?
        .post(format!("http://{admin}/jobs/{name}/purge"))
        .send()
        .await
        .with_context(|| unreachable(admin))?;
    decode::<serde_json::Value>(admin, resp).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::JobSpec;
    use crate::daemon::jobs::{JobTable, Parsed, ScannedFile};
    use crate::daemon::report::DaemonInfo;
    use tokio::sync::mpsc;

    async fn start() -> (
        SocketAddr,
        Arc<Shared>,
        mpsc::UnboundedReceiver<Command>,
        oneshot::Sender<()>,
    ) {
        let mut table = JobTable::new();
        table.reconcile(vec![ScannedFile {
            path: "j/a.toml".into(),
            parsed: Parsed::Valid(JobSpec::new(
                "a",
                vec![url::Url::parse("http://a.test/").unwrap()],
            )),
        }]);
        let (tx, rx) = mpsc::unbounded_channel();
        let info = DaemonInfo::for_tests(2);
        let shared = Arc::new(Shared::new(table, info, tx));
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        serve(listener, shared.clone(), async {
            let _ = stopped.await;
        });
        (addr, shared, rx, stop)
    }

    #[tokio::test]
    async fn status_job_and_metrics_answer() {
        let (addr, _shared, _rx, _stop) = start().await;
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
        let (addr, _shared, mut rx, _stop) = start().await;
        tokio::spawn(async move {
            while let Some(Command::Purge { job, reply }) = rx.recv().await {
                let _ = reply.send(if job == "a" {
                    PurgeOutcome::Conflict("job \"a\" is running".into())
                } else {
                    PurgeOutcome::Purged
                });
            }
        });
        let e = purge_via(addr, "a").await.unwrap_err().to_string();
        assert!(e.contains("409") && e.contains("running"), "{e}");
        purge_via(addr, "b").await.unwrap();
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
