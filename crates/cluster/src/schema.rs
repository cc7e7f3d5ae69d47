//! The cluster database's tables, created and upgraded in numbered steps.
//!
//! `forager_schema` holds one row, the version the tables are at. Every node
//! runs [`migrate`] when it connects: under a transaction-scoped advisory
//! lock (so two nodes starting at once do not both create the tables), it
//! applies the steps above the stored version, in order, in one
//! transaction. A database at a version this forager does not know is
//! refused: an older node must not write into tables it does not understand.
//!
//! Times are the database's (`now()`), never a node's clock: leases and
//! pacing compare times taken on one clock.

use crate::{Cluster, ClusterError, Result};

/// The advisory lock key of migrations ("forager" in ASCII, as an i64).
const MIGRATION_LOCK: i64 = 0x0066_6f72_6167_6572;

/// Version 1: registry, leases, checkpoints, manifest, pacing.
const V1: &str = r#"
CREATE TABLE forager_jobs (
    -- The job's name (its file name without .toml): one registry row per name.
    name          text PRIMARY KEY,
    -- The job file's text, so that any node can run it, and its SHA-256,
    -- so that registering the same file again changes nothing.
    spec          text NOT NULL,
    spec_sha256   bytea NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    -- 'active' (to be run) or 'done' (finished; never leased again until re-registered).
    status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'done')),
    -- The node holding the lease, NULL when none does.
    owner         text,
    -- The fencing epoch: bumped by every acquisition, never decreased. A
    -- write carries its writer's epoch and is refused under any other.
    epoch         bigint NOT NULL DEFAULT 0,
    -- When the lease lapses unless renewed (database clock).
    lease_until   timestamptz
);
CREATE INDEX forager_jobs_free ON forager_jobs (lease_until) WHERE status = 'active';

-- A job's checkpoint: the head names its chunks in order (an encoded
-- StateIndex) and is written under the writer's epoch.
CREATE TABLE forager_checkpoints (
    job        text PRIMARY KEY REFERENCES forager_jobs (name) ON DELETE CASCADE,
    epoch      bigint NOT NULL,
    seq        bigint NOT NULL,
    chunks     bytea NOT NULL,
    len        bigint NOT NULL,
    sha256     bytea NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);

-- Each distinct chunk of a job's checkpoint once, named by the first 128
-- bits of its SHA-256 (forager_core::chunk::ChunkKey, big-endian).
CREATE TABLE forager_chunks (
    job   text NOT NULL REFERENCES forager_jobs (name) ON DELETE CASCADE,
    hash  bytea NOT NULL,
    bytes bytea NOT NULL,
    PRIMARY KEY (job, hash)
);

-- Manifest rows of every node: a job's row number is its place in the
-- job's manifest, so a row re-sent after a take-over is the same row.
CREATE TABLE forager_manifest (
    job         text NOT NULL REFERENCES forager_jobs (name) ON DELETE CASCADE,
    row_no      bigint NOT NULL,
    epoch       bigint NOT NULL,
    node        text NOT NULL,
    row_json    text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job, row_no)
);

-- Per politeness key (host or pay-level domain): the earliest time the
-- next request may start, cluster-wide. Unlogged: a reservation matters
-- for the next seconds only, so it need not survive a crash of the server
-- (the table is then empty, and the nodes' own per-host limiters still
-- hold), and its commits wait for no WAL flush.
CREATE UNLOGGED TABLE forager_pacing (
    key     text PRIMARY KEY,
    next_at timestamptz NOT NULL
);
"#;

/// Version 2: a job whose run failed is `failed`, with the reason, and is
/// leased again only once its file changes (before, it was given back and
/// failed on each node in turn).
const V2: &str = r#"
ALTER TABLE forager_jobs DROP CONSTRAINT forager_jobs_status_check;
ALTER TABLE forager_jobs ADD CONSTRAINT forager_jobs_status_check
    CHECK (status IN ('active', 'done', 'failed'));
ALTER TABLE forager_jobs ADD COLUMN failure text;
"#;

/// Version 3: the nodes, each with its heartbeat (`nodes.rs`): who is alive
/// for the fair share of free jobs, and what `status` shows of each node.
const V3: &str = r#"
CREATE TABLE forager_nodes (
    name         text PRIMARY KEY,
    -- When the node (last) started, and its last beat (database clock).
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    -- Leases it held and its max_jobs at that beat.
    held         integer NOT NULL DEFAULT 0,
    max_jobs     integer NOT NULL,
    -- It gives its jobs back and takes none (forager drain).
    draining     boolean NOT NULL DEFAULT false,
    -- When it stopped cleanly; NULL while it runs (or if it died).
    left_at      timestamptz
);
"#;

/// Version 4: a person's pause and rerun, whichever node runs the job
/// (`control.rs`): a `paused` status no node leases, and a rerun asked of
/// the node that holds the job.
const V4: &str = r#"
ALTER TABLE forager_jobs DROP CONSTRAINT forager_jobs_status_check;
ALTER TABLE forager_jobs ADD CONSTRAINT forager_jobs_status_check
    CHECK (status IN ('active', 'done', 'failed', 'paused'));
ALTER TABLE forager_jobs ADD COLUMN requested text CHECK (requested IN ('rerun'));
"#;

/// Version 5: a checkpoint's head in two parts (`checkpoint.rs`): the
/// job's rows, cut by the database writer, and its learned state, in the
/// chunks the node's store already keeps, so that a checkpoint need not
/// read, cut and hash the whole job. `format` 1 is a head written before
/// (one blob, its SHA-256 in `sha256`), still read.
const V5: &str = r#"
ALTER TABLE forager_checkpoints ADD COLUMN format smallint NOT NULL DEFAULT 1
    CHECK (format IN (1, 2));
"#;

/// The steps, in order: step `i` brings the tables to version `i + 1`.
const STEPS: &[&str] = &[V1, V2, V3, V4, V5];

/// The newest schema this forager knows.
pub const VERSION: i32 = STEPS.len() as i32;

/// What [`migrate`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The version the tables are at now.
    pub version: i32,
    /// The version found (0: no tables yet).
    pub from: i32,
}

/// Bring the tables to [`VERSION`] (see the module doc).
pub async fn migrate(cluster: &Cluster) -> Result<Migrated> {
    let mut client = cluster.client().await?;
    let q = |what: &'static str| move |e| cluster.query_error(what, e);
    let txn = client
        .transaction()
        .await
        .map_err(q("begin the schema migration"))?;
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(q("take the migration lock"))?;
    txn.batch_execute(
        "CREATE TABLE IF NOT EXISTS forager_schema (
             one     boolean PRIMARY KEY DEFAULT true CHECK (one),
             version integer NOT NULL
         )",
    )
    .await
    .map_err(q("create the schema version table"))?;
    let from: i32 = match txn
        .query_opt("SELECT version FROM forager_schema", &[])
        .await
        .map_err(q("read the schema version"))?
    {
        Some(row) => row.try_get(0).map_err(q("read the schema version"))?,
        None => 0,
    };
    if from > VERSION {
        return Err(ClusterError::SchemaTooNew {
            node: cluster.node().to_string(),
            found: from,
            known: VERSION,
        });
    }
    let start = usize::try_from(from).unwrap_or(0);
    for (i, step) in STEPS.iter().enumerate().skip(start) {
        txn.batch_execute(step)
            .await
            .map_err(q("apply a schema migration step"))?;
        tracing::info!(
            node = cluster.node(),
            version = i + 1,
            "cluster schema migrated"
        );
    }
    txn.execute(
        "INSERT INTO forager_schema (version) VALUES ($1)
         ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version",
        &[&VERSION],
    )
    .await
    .map_err(q("record the schema version"))?;
    txn.commit()
        .await
        .map_err(q("commit the schema migration"))?;
    Ok(Migrated {
        version: VERSION,
        from,
    })
}
