//! forager-cluster — what daemons on several machines share, in PostgreSQL
//! (docs/cluster.md, ARCHITECTURE.md § Cluster).
//!
//! Owns: the database's schema and its migration ([`schema`]), the job
//! registry ([`registry`]: a job is registered once, by name and content
//! hash), job leases with fencing epochs ([`lease`]: acquire with `FOR
//! UPDATE SKIP LOCKED`, renew, release, and a [`lease::LeaseKeeper`] per
//! lease, all of a node's renewed in one statement every lease/3, that says
//! *stop* before the lease can expire when it cannot be renewed), the job checkpoints kept in the database as content-defined
//! chunks, written only under the writer's epoch ([`checkpoint`]), manifest
//! rows recorded under the epoch too ([`manifest`]), and per-host pacing
//! reservations ([`pacing`]). Every write a job makes goes through a
//! [`Lease`] and is refused with [`ClusterError::Fenced`] once another node
//! holds a newer epoch.
//!
//! Must not touch: the network beyond its database connection, the redb
//! store, the file system (but the secret file named in the config, read by
//! `forager-core`'s config), or crawl decisions. It depends on
//! `forager-core` only (the config, the chunker, the codec): the daemon in
//! `forager` calls down into it, never the other way, and the compiler keeps
//! that rule (`forager` is not a dependency of this crate).

pub mod checkpoint;
pub mod control;
pub mod lease;
pub mod manifest;
pub mod nodes;
pub mod pacing;
pub mod registry;
pub mod schema;

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use forager_core::config::{is_valid_node_name, ClusterConfig};

pub use checkpoint::{Checkpoint, CheckpointParts, CheckpointWrite, StoredChunks};
pub use control::{Control, Owned};
pub use lease::{Lease, LeaseClock, LeaseKeeper, LeaseSignal};
pub use nodes::{fair_share, Beat, Census, NodeRow};
pub use pacing::{Reservation, Stretch};
pub use registry::{JobRow, Registration};

/// Connections one node keeps to the database: the lease keeper, a
/// checkpoint and a few pacing reservations at once.
const POOL_SIZE: usize = 8;
/// How long a connection attempt may take before the database counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a cluster operation failed; each names the node, and the job and its
/// epoch where there is one.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("[cluster] database: {why}")]
    Config { why: String },
    #[error("node {node}: cannot reach the cluster database {target}: {why}")]
    Unreachable {
        node: String,
        target: String,
        why: String,
    },
    #[error("node {node}: {what}: {}", with_causes(source))]
    Query {
        node: String,
        what: String,
        #[source]
        source: tokio_postgres::Error,
    },
    /// The job's lease is held under a newer epoch (or has expired): this
    /// node must stop the job and write nothing more for it.
    #[error(
        "node {node}: job {job}: lease of epoch {epoch} lost ({why}); the job's writes are refused"
    )]
    Fenced {
        node: String,
        job: String,
        epoch: i64,
        why: String,
    },
    #[error(
        "node {node}: the cluster database has schema version {found}, this forager knows up to {known}: \
         upgrade forager on this node"
    )]
    SchemaTooNew {
        node: String,
        found: i32,
        known: i32,
    },
    /// A checkpoint handed over without the bytes of a chunk the database
    /// lacks (a caller's bug): nothing of it is written.
    #[error("node {node}: job {job}: checkpoint not written: {why}")]
    Incomplete {
        node: String,
        job: String,
        why: String,
    },
    #[error("node {node}: job {job}: stored checkpoint is damaged: {why}")]
    Damaged {
        node: String,
        job: String,
        why: String,
    },
}

pub type Result<T, E = ClusterError> = std::result::Result<T, E>;

/// What a node's metrics hear from its cluster handle: the daemon's
/// `/metrics` records it (this crate keeps no metrics library of its own).
pub trait Observer: Send + Sync {
    /// A database operation `op` took `elapsed`, failed ones included.
    fn query(&self, op: &'static str, elapsed: Duration);
    /// A lease renewal failed (database away or slow) or found the lease lost.
    fn renew_failed(&self);
}

/// One node's handle on the cluster database: a connection pool, the node's
/// name and the lease length. Cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    node: String,
    lease: Duration,
    /// Host and database, for messages (never the password).
    target: String,
    /// Set once by the daemon, for its metrics.
    observer: OnceLock<Arc<dyn Observer>>,
    /// The stretches of pacing keys this node reserved (`pacing.rs`).
    holds: pacing::Holds,
    /// The leases this node keeps, renewed together (`lease.rs`).
    renewals: Arc<lease::Renewals>,
}

/// What [`Cluster::connect`] found: the server answers, and the schema is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// `SHOW server_version`.
    pub server_version: String,
    pub schema: schema::Migrated,
}

/// An error and its causes on one line (`error connecting to server: Connection refused`).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// This node's name: `[cluster] node`, else the host name.
pub fn node_name(config: &ClusterConfig) -> Result<String> {
    if let Some(n) = &config.node {
        return Ok(n.clone());
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    if is_valid_node_name(&host) {
        Ok(host)
    } else {
        Err(ClusterError::Config {
            why: format!(
                "the host name {host:?} cannot name this node (letters, digits, '-', '_', '.'): set [cluster] node"
            ),
        })
    }
}

/// The connection settings of `config`, with its password and a connect timeout.
fn pg_config(config: &ClusterConfig) -> Result<tokio_postgres::Config> {
    let mut pg: tokio_postgres::Config =
        config
            .database
            .parse()
            .map_err(|e: tokio_postgres::Error| ClusterError::Config {
                why: format!("invalid connection string: {e}"),
            })?;
    if let Some(p) = &config.password {
        pg.password(p.reveal());
    }
    if pg.get_connect_timeout().is_none() {
        pg.connect_timeout(CONNECT_TIMEOUT);
    }
    if pg.get_application_name().is_none() {
        pg.application_name("forager");
    }
    Ok(pg)
}

/// `host:port/dbname` of a connection, for messages.
fn describe(pg: &tokio_postgres::Config) -> String {
    let host = pg
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect::<Vec<_>>()
        .join(",");
    let port = pg
        .get_ports()
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let db = pg.get_dbname().or(pg.get_user()).unwrap_or("?");
    format!("{host}:{port}/{db}")
}

/// TLS for remote servers: rustls (ring, as reqwest's) with the Mozilla
/// roots. With `sslmode=prefer` (libpq's default) a server without TLS is
/// still reached in clear, as libpq would; `sslmode=require` insists, and
/// the certificate is verified.
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| ClusterError::Config {
        why: format!("TLS set-up: {e}"),
    })?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl Cluster {
    /// Connect to the database of `config` as this node, bring its schema up
    /// to date (or refuse a newer one), and keep a pool of connections.
    /// An unreachable database is an error here, at start, not later.
    pub async fn connect(config: &ClusterConfig) -> Result<(Cluster, Probe)> {
        let node = node_name(config)?;
        Self::connect_as(config, &node).await
    }

    /// [`Cluster::connect`] under a given node name (tests run several nodes in one process).
    pub async fn connect_as(config: &ClusterConfig, node: &str) -> Result<(Cluster, Probe)> {
        let pg = pg_config(config)?;
        let target = describe(&pg);
        let manager = Manager::from_config(
            pg,
            tls()?,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(CONNECT_TIMEOUT))
            .wait_timeout(Some(CONNECT_TIMEOUT * 2))
            .build()
            .map_err(|e| ClusterError::Config {
                why: format!("connection pool: {e}"),
            })?;
        let cluster = Cluster {
            inner: Arc::new(Inner {
                pool,
                node: node.to_string(),
                lease: config.lease,
                target,
                observer: OnceLock::new(),
                holds: pacing::Holds::default(),
                renewals: Arc::default(),
            }),
        };
        let client = cluster.client().await?;
        let server_version = client
            .query_one("SHOW server_version", &[])
            .await
            .map_err(|e| cluster.query_error("ask the server's version", e))?
            .try_get::<_, String>(0)
            .map_err(|e| cluster.query_error("read the server's version", e))?;
        drop(client);
        let schema = schema::migrate(&cluster).await?;
        tracing::info!(
            node = %cluster.inner.node,
            database = %cluster.inner.target,
            server_version = %server_version,
            schema_version = schema.version,
            "connected to the cluster database"
        );
        Ok((
            cluster,
            Probe {
                server_version,
                schema,
            },
        ))
    }

    pub fn node(&self) -> &str {
        &self.inner.node
    }

    pub fn lease_duration(&self) -> Duration {
        self.inner.lease
    }

    /// Report database latencies and renewal failures to `observer` from
    /// now on; false if one was set already (it stays).
    pub fn set_observer(&self, observer: Arc<dyn Observer>) -> bool {
        self.inner.observer.set(observer).is_ok()
    }

    pub(crate) fn observer(&self) -> Option<&Arc<dyn Observer>> {
        self.inner.observer.get()
    }

    /// Run `op`'s database work and tell the observer how long it took.
    pub(crate) async fn timed<T>(
        &self,
        op: &'static str,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let started = Instant::now();
        let out = work.await;
        if let Some(o) = self.observer() {
            o.query(op, started.elapsed());
        }
        out
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|e| ClusterError::Unreachable {
                node: self.inner.node.clone(),
                target: self.inner.target.clone(),
                why: match e {
                    deadpool_postgres::PoolError::Backend(e) => with_causes(&e),
                    other => with_causes(&other),
                },
            })
    }

    pub(crate) fn query_error(&self, what: &str, source: tokio_postgres::Error) -> ClusterError {
        ClusterError::Query {
            node: self.inner.node.clone(),
            what: what.to_string(),
            source,
        }
    }

    pub(crate) fn fenced(&self, job: &str, epoch: i64, why: &str) -> ClusterError {
        ClusterError::Fenced {
            node: self.inner.node.clone(),
            job: job.to_string(),
            epoch,
            why: why.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::config::DatabasePassword;

    fn config(database: &str) -> ClusterConfig {
        ClusterConfig {
            database: database.to_string(),
            password: None,
            node: None,
            lease: Duration::from_secs(30),
        }
    }

    #[test]
    fn connection_settings_carry_the_password_and_describe_without_it() {
        let mut c = config("host=db.example port=5433 dbname=forager user=f");
        c.password = Some(DatabasePassword::new("pw".into()));
        let pg = pg_config(&c).unwrap();
        assert!(pg.get_password().is_some());
        assert_eq!(describe(&pg), "db.example:5433/forager");
        assert_eq!(pg.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
    }

    #[test]
    fn a_bad_connection_string_is_a_config_error() {
        let e = pg_config(&config("host=db port=notaport")).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("[cluster] database: invalid connection string"),
            "{e}"
        );
    }

    #[test]
    fn the_node_name_defaults_to_the_host_name() {
        let mut c = config("host=db");
        c.node = Some("n1".into());
        assert_eq!(node_name(&c).unwrap(), "n1");
        c.node = None;
        // The test machine's host name is a valid one.
        assert!(is_valid_node_name(&node_name(&c).unwrap()));
    }
}
