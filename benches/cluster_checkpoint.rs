//! The cluster's checkpoint mirror (issue 38): what one checkpoint of a
//! large job costs the node that runs it, when the job's learned state
//! changed in a few places since the last one.
//!
//! Two ways, on one job, against one PostgreSQL server of its own:
//!
//! - **whole** (the mirror before session 8): `Store::export_job` reads and
//!   encodes every row of the job, its learned state assembled from its
//!   chunks; the blob is hashed whole (SHA-256, as the old head held) and
//!   written with `Cluster::write_checkpoint`, which cuts all of it into
//!   chunks, asks the database which of them it holds and deletes the
//!   others by the full list;
//! - **incremental** (the mirror now): `Store::export_checkpoint` reads the
//!   rows without the state, the state's chunk list as the store keeps it
//!   and only the chunks the mirror's `StoredChunks` does not know;
//!   `Cluster::write_checkpoint_parts` cuts the rows only, sends the new
//!   chunks and deletes the ones that left.
//!
//! Each checkpoint follows a store commit that changes the state in
//! `FORAGER_MIRROR_EDITS` places (default 20) and adds a few rows (the
//! commit itself is not counted: it is the same in both ways). Reported per
//! checkpoint, median over `FORAGER_MIRROR_CHECKPOINTS` (default 10): the
//! CPU of this process (getrusage: the node's side; the database's is not
//! in it), the wall time (the database's included), chunks and bytes put,
//! the head's chunk-list bytes and the chunk names sent in statements.
//! The state is `FORAGER_MIRROR_STATE_MIB` MiB (default 32) of random
//! bytes, which cut like a learner's state; 200 000 seen URLs and 2 000
//! manifest rows stand for the rest of the job.
//!
//! Run: `cargo bench --bench cluster_checkpoint` (needs PostgreSQL:
//! Debian's `initdb` and `pg_ctl`, as `forager bench --cluster`).

mod common;

use anyhow::{Context, Result};
use forager::store::{JobDelta, JobRecord, Store};
use forager_cluster::{CheckpointParts, CheckpointWrite, Cluster, StoredChunks};
use forager_core::config::ClusterConfig;
use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// This process's CPU time (user + system), all threads.
fn process_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// One commit of the job: its record with `state`, `seen` and manifest rows `rows`.
fn commit(store: &Store, state: &[u8], seen: std::ops::Range<u64>, rows: std::ops::Range<u64>) {
    let mut d = JobDelta::new("big");
    d.seen_added = seen
        .map(|s| s.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    d.manifest_added = rows
        .clone()
        .map(|n| {
            (
                n,
                common::csv_row(format!("http://a.test/big/{n}.csv"), n, format!("{n}.csv")),
            )
        })
        .collect();
    d.record = Some(JobRecord {
        strategy: "sb".into(),
        strategy_state: state.to_vec(),
        next_manifest_row: rows.end,
        ..Default::default()
    });
    if let Err(e) = store.commit_blocking(d) {
        panic!("commit: {e}");
    }
}

#[derive(Clone, Copy, Debug)]
enum Way {
    Whole,
    Incremental,
}

struct Sample {
    cpu: Duration,
    wall: Duration,
    write: CheckpointWrite,
    /// Chunk names sent in statements (16 bytes each).
    names_sent: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn main() -> Result<()> {
    let state_mib = env_usize("FORAGER_MIRROR_STATE_MIB", 32);
    let edits = env_usize("FORAGER_MIRROR_EDITS", 20);
    let checkpoints = env_usize("FORAGER_MIRROR_CHECKPOINTS", 10);
    let dir = tempfile::tempdir().context("scratch folder")?;
    let pg = forager_bench::cluster::Postgres::start(&dir.path().join("pg"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let config = ClusterConfig {
        database: pg.database(),
        password: None,
        node: None,
        lease: Duration::from_secs(3600),
    };
    let (cluster, _) = rt.block_on(Cluster::connect_as(&config, "bench"))?;
    let job = "name = \"big\"\nseeds = [\"http://a.test/\"]\n";
    rt.block_on(cluster.register("big", job))?;
    let state_dir = dir.path().join("state");
    std::fs::create_dir_all(&state_dir).context("state folder")?;
    let store = Store::open(&state_dir, 64 << 20)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut state = vec![0u8; state_mib << 20];
    rng.fill_bytes(&mut state);
    commit(&store, &state, 0..200_000, 0..2_000);
    println!(
        "job: learned state {state_mib} MiB, 200 000 seen, 2 000 manifest rows; \
         {edits} edits of the state and 10 seen + 2 manifest rows per checkpoint; \
         {checkpoints} checkpoints per way"
    );
    println!(
        "{:<12} {:>10} {:>10} {:>8} {:>11} {:>11} {:>11} {:>11}",
        "way", "CPU ms", "wall ms", "chunks", "chunks put", "bytes put", "head bytes", "names sent"
    );
    let mut seen_next = 200_000u64;
    let mut row_next = 2_000u64;
    for way in [Way::Whole, Way::Incremental, Way::Whole, Way::Incremental] {
        // A lease per way, as a node's: the incremental way's first
        // checkpoint knows nothing and asks the database.
        let lease = match rt.block_on(cluster.acquire(1))?.pop() {
            Some(l) => l,
            None => anyhow::bail!("the job could not be leased"),
        };
        let mut stored = StoredChunks::default();
        let mut samples = Vec::new();
        for i in 0..=checkpoints {
            for _ in 0..edits {
                let at = rng.random_range(0..state.len());
                state[at] ^= 0x5a;
            }
            commit(
                &store,
                &state,
                seen_next..seen_next + 10,
                row_next..row_next + 2,
            );
            seen_next += 10;
            row_next += 2;
            let cpu = process_cpu();
            let wall = Instant::now();
            let write = match way {
                Way::Whole => {
                    let blob = store
                        .export_job("big")?
                        .context("the job is in the store")?
                        .bytes;
                    // The old head's SHA-256 of the whole blob.
                    std::hint::black_box(Sha256::digest(&blob));
                    rt.block_on(cluster.write_checkpoint(&lease, &blob))?
                }
                Way::Incremental => {
                    let c = store
                        .export_checkpoint("big", &|k| stored.knows(k), None)?
                        .context("the job is in the store")?;
                    let parts = CheckpointParts {
                        rows: &c.rows,
                        state: &c.state,
                        state_chunks: &c.state_chunks,
                    };
                    rt.block_on(cluster.write_checkpoint_parts(&lease, parts, &mut stored))?
                }
            };
            let sample = Sample {
                cpu: process_cpu().saturating_sub(cpu),
                wall: wall.elapsed(),
                write,
                names_sent: if write.asked_stored {
                    2 * write.chunks
                } else {
                    write.chunks_removed as usize
                },
            };
            // The first of each lease is the full one: shown, not counted.
            if i == 0 {
                println!(
                    "{:<12} {:>10.1} {:>10.1} {:>8} {:>11} {:>11} {:>11} {:>11}   (first of the lease)",
                    format!("{way:?}"),
                    sample.cpu.as_secs_f64() * 1e3,
                    sample.wall.as_secs_f64() * 1e3,
                    write.chunks,
                    write.chunks_put,
                    write.bytes_put,
                    write.head_bytes,
                    sample.names_sent
                );
            } else {
                samples.push(sample);
            }
        }
        let m = |f: &dyn Fn(&Sample) -> f64| median(samples.iter().map(f).collect());
        println!(
            "{:<12} {:>10.1} {:>10.1} {:>8.0} {:>11.0} {:>11.0} {:>11.0} {:>11.0}   (median of {})",
            format!("{way:?}"),
            m(&|s| s.cpu.as_secs_f64() * 1e3),
            m(&|s| s.wall.as_secs_f64() * 1e3),
            m(&|s| s.write.chunks as f64),
            m(&|s| s.write.chunks_put as f64),
            m(&|s| s.write.bytes_put as f64),
            m(&|s| s.write.head_bytes as f64),
            m(&|s| s.names_sent as f64),
            samples.len()
        );
        // What a node taking the job over restores is the store's job.
        let back = rt
            .block_on(cluster.read_checkpoint("big"))?
            .context("a checkpoint is stored")?;
        let other_dir = dir.path().join(format!("restore-{way:?}"));
        std::fs::create_dir_all(&other_dir).context("restore folder")?;
        let other = Store::open(&other_dir, 64 << 20)?;
        match way {
            // The whole job went as the rows part: its state is inside.
            Way::Whole => other.import_job("big", &back.bytes)?,
            Way::Incremental => {
                other.import_checkpoint("big", &back.bytes, back.state.as_deref())?
            }
        }
        anyhow::ensure!(
            other.export_job("big")?.map(|e| e.bytes) == store.export_job("big")?.map(|e| e.bytes),
            "{way:?}: the restored job differs"
        );
        rt.block_on(cluster.release(&lease))?;
    }
    Ok(())
}
