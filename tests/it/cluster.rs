//! The cluster's foundation against a real PostgreSQL (issue 38): the job
//! registry, leases with fencing epochs, checkpoints that move between
//! nodes, pacing reservations across clients. Each test starts a server of
//! its own (`harness::postgres`) and plays two nodes as two
//! `forager_cluster::Cluster`s, each with its own connection pool.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use forager_cluster::{Cluster, ClusterError, LeaseSignal, Registration};

use crate::harness::postgres::Postgres;

async fn node(pg: &Postgres, name: &str, lease: Duration) -> Cluster {
    let (cluster, probe) = Cluster::connect_as(&pg.cluster_config(lease), name)
        .await
        .unwrap_or_else(|e| panic!("{name} connects: {e}"));
    assert_eq!(probe.schema.version, forager_cluster::schema::VERSION);
    cluster
}

const JOB: &str = "name = \"j\"\nseeds = [\"http://site.test/\"]\n";

/// Bytes shaped like a learner's state: repetitive, with scattered variety.
fn state_blob(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 7 == 0 {
                (x >> 24) as u8
            } else {
                (i % 251) as u8
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn schema_is_created_once_and_registration_is_idempotent() {
    let pg = Postgres::start();
    let (_, first) = Cluster::connect_as(&pg.cluster_config(Duration::from_secs(30)), "a")
        .await
        .unwrap();
    assert_eq!(first.schema.from, 0);
    assert!(
        first.server_version.starts_with(char::is_numeric),
        "{first:?}"
    );
    let (b, again) = Cluster::connect_as(&pg.cluster_config(Duration::from_secs(30)), "b")
        .await
        .unwrap();
    assert_eq!(again.schema.from, forager_cluster::schema::VERSION);
    let a = node(&pg, "a", Duration::from_secs(30)).await;

    assert_eq!(a.register("j", JOB).await.unwrap(), Registration::New);
    assert_eq!(b.register("j", JOB).await.unwrap(), Registration::Unchanged);
    assert_eq!(a.register("j", JOB).await.unwrap(), Registration::Unchanged);
    let edited = format!("{JOB}strategy = \"bfs\"\n");
    assert_eq!(
        b.register("j", &edited).await.unwrap(),
        Registration::Updated
    );
    let jobs = a.jobs().await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].name, "j");
    assert_eq!(jobs[0].owner, None);
    assert_eq!(jobs[0].epoch, 0);

    // A database at a newer schema is refused, naming the node and both versions.
    pg.client()
        .await
        .execute("UPDATE forager_schema SET version = 99", &[])
        .await
        .unwrap();
    let e = Cluster::connect_as(&pg.cluster_config(Duration::from_secs(30)), "c")
        .await
        .err()
        .unwrap();
    assert!(
        matches!(e, ClusterError::SchemaTooNew { found: 99, .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("node c: the cluster database has schema version 99"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn two_nodes_compete_for_a_job_and_exactly_one_holds_it() {
    let pg = Postgres::start();
    let a = node(&pg, "node-a", Duration::from_secs(30)).await;
    let b = node(&pg, "node-b", Duration::from_secs(30)).await;
    for round in 0..30 {
        let name = format!("job-{round}");
        a.register(&name, JOB).await.unwrap();
        b.register(&name, JOB).await.unwrap();
        // Both ask at once, as two daemons would.
        let (la, lb) = tokio::join!(a.acquire(4), b.acquire(4));
        let (la, lb) = (la.unwrap(), lb.unwrap());
        assert_eq!(la.len() + lb.len(), 1, "round {round}: {la:?} {lb:?}");
        let (holder, lease, other) = if la.len() == 1 {
            (&a, &la[0], &b)
        } else {
            (&b, &lb[0], &a)
        };
        assert_eq!(lease.job, name);
        assert_eq!(lease.epoch, 1);
        assert_eq!(lease.spec, JOB);
        // The holder renews; the other cannot take it while the lease runs.
        holder.renew(lease).await.unwrap();
        assert!(other.acquire(4).await.unwrap().is_empty());
        let row = a
            .jobs()
            .await
            .unwrap()
            .into_iter()
            .find(|j| j.name == name)
            .unwrap();
        assert_eq!(row.owner.as_deref(), Some(holder.node()));
        assert!(row.leased);
        holder.finish(lease).await.unwrap();
    }
    // A finished job is not leased again; a released one is, under a new epoch.
    assert!(a.acquire(100).await.unwrap().is_empty());
    a.register("again", JOB).await.unwrap();
    let l1 = a.acquire(1).await.unwrap().pop().unwrap();
    assert!(a.release(&l1).await.unwrap());
    let l2 = b.acquire(1).await.unwrap().pop().unwrap();
    assert_eq!((l2.job.as_str(), l2.epoch), ("again", l1.epoch + 1));
}

/// The fair share (forager-cluster's `nodes`): a dead node's jobs are
/// shared by the live nodes round by round, where the first to ask used
/// to take them all; a node whose beat is a lease old, or that drains,
/// is not counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_dead_nodes_jobs_are_shared_among_the_live_nodes() {
    use forager_cluster::Beat;
    let pg = Postgres::start();
    let lease = Duration::from_secs(1);
    let a = node(&pg, "a", lease).await;
    let b = node(&pg, "b", lease).await;
    let dead = node(&pg, "dead", lease).await;
    for n in [&a, &b, &dead] {
        n.join(20).await.unwrap();
    }
    for i in 0..20 {
        let name = format!("j{i}");
        a.register(&name, &JOB.replace("\"j\"", &format!("\"{name}\"")))
            .await
            .unwrap();
    }
    // It held them all, then died: no renewal, no beat.
    assert_eq!(dead.acquire(20).await.unwrap().len(), 20);
    let beat = |held: usize| Beat {
        held,
        max_jobs: 20,
        draining: false,
    };
    let lapsed = Instant::now() + lease + Duration::from_millis(300);
    while Instant::now() < lapsed {
        a.heartbeat(beat(0)).await.unwrap();
        b.heartbeat(beat(0)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Rounds in turn, as two daemons' ticks: each takes its share.
    let (mut held_a, mut held_b) = (0usize, 0usize);
    let (first, census) = a.acquire_share(20, beat(0)).await.unwrap();
    assert_eq!((census.free_jobs, census.live_peers), (20, 1), "{census:?}");
    assert_eq!(first.len(), 10, "half of the free jobs, not all 20");
    held_a += first.len();
    for _round in 0..10 {
        let (got, _) = b.acquire_share(20 - held_b, beat(held_b)).await.unwrap();
        held_b += got.len();
        let (got, _) = a.acquire_share(20 - held_a, beat(held_a)).await.unwrap();
        held_a += got.len();
    }
    assert_eq!(held_a + held_b, 20);
    assert!(held_b >= 8, "a {held_a}, b {held_b}");
    let nodes = a.nodes().await.unwrap();
    let live: Vec<(&str, bool)> = nodes.iter().map(|n| (n.name.as_str(), n.live)).collect();
    assert_eq!(live, [("a", true), ("b", true), ("dead", false)]);

    // A draining peer is not counted; a node that left neither.
    a.register("k", JOB).await.unwrap();
    a.register("l", JOB.replace("\"j\"", "\"l\"").as_str())
        .await
        .unwrap();
    let mut drains = beat(held_b);
    drains.draining = true;
    let (none, _) = b.acquire_share(20, drains).await.unwrap();
    assert!(none.is_empty(), "a draining node takes nothing");
    let (both, census) = a.acquire_share(20, beat(held_a)).await.unwrap();
    assert_eq!(census.live_peers, 0, "{census:?}");
    assert_eq!(both.len(), 2, "alone, a takes every free job");
    b.leave().await.unwrap();
    let b_row = a.nodes().await.unwrap().into_iter().find(|n| n.name == "b");
    assert!(b_row.is_some_and(|n| !n.live && n.left_at.is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_node_whose_lease_expired_cannot_write() {
    let pg = Postgres::start();
    let lease = Duration::from_secs(1);
    let a = node(&pg, "node-a", lease).await;
    let b = node(&pg, "node-b", lease).await;
    a.register("j", JOB).await.unwrap();
    let la = a.acquire(1).await.unwrap().pop().unwrap();
    let mine = state_blob(50_000, 1);
    a.write_checkpoint(&la, &mine).await.unwrap();
    assert_eq!(
        a.record_manifest(&la, &[(0, "{\"row\":0}")]).await.unwrap(),
        1
    );

    // A is paused past its lease (no renewal): its writes are refused even
    // before anyone takes the job over.
    tokio::time::sleep(lease + Duration::from_millis(300)).await;
    let e = a
        .write_checkpoint(&la, &state_blob(50_000, 2))
        .await
        .err()
        .unwrap();
    assert!(matches!(&e, ClusterError::Fenced { epoch: 1, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "node node-a: job j: lease of epoch 1 lost (lease expired or taken over); the job's writes are refused"
    );

    // B takes it over: epoch 2. A's renewal, checkpoint, manifest row and
    // finish are all refused; B's go through.
    let lb = b.acquire(1).await.unwrap().pop().unwrap();
    assert_eq!(lb.epoch, 2);
    assert!(matches!(
        a.renew(&la).await,
        Err(ClusterError::Fenced { .. })
    ));
    assert!(matches!(
        a.write_checkpoint(&la, &state_blob(50_000, 3)).await,
        Err(ClusterError::Fenced { .. })
    ));
    assert!(matches!(
        a.record_manifest(&la, &[(1, "{\"row\":\"from a\"}")]).await,
        Err(ClusterError::Fenced { .. })
    ));
    assert!(matches!(
        a.finish(&la).await,
        Err(ClusterError::Fenced { .. })
    ));
    assert!(
        !a.release(&la).await.unwrap(),
        "a lost lease has nothing to release"
    );

    // What B restores is what A wrote under its lease, and B writes on.
    let restored = b.read_checkpoint("j").await.unwrap().unwrap();
    assert_eq!((restored.epoch, restored.seq), (1, 1));
    assert!(restored.bytes == mine);
    let theirs = state_blob(50_000, 4);
    b.write_checkpoint(&lb, &theirs).await.unwrap();
    assert_eq!(
        b.record_manifest(&lb, &[(0, "{\"row\":\"dup\"}"), (1, "{\"row\":1}")])
            .await
            .unwrap(),
        1
    );
    let rows = a.manifest("j").await.unwrap();
    assert_eq!(
        rows,
        vec![
            (0, "node-a".to_string(), "{\"row\":0}".to_string()),
            (1, "node-b".to_string(), "{\"row\":1}".to_string())
        ]
    );
    let now = b.read_checkpoint("j").await.unwrap().unwrap();
    assert_eq!((now.epoch, now.seq), (2, 2));
    assert!(now.bytes == theirs);
}

/// The ordering fencing relies on (ARCHITECTURE.md § Cluster): a write in
/// flight holds the job's row `FOR KEY SHARE`, which a renewal does not
/// wait for and an acquisition skips; once the write commits, the
/// acquisition goes through and the writer's next write is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_write_in_flight_and_a_take_over_are_ordered() {
    let pg = Postgres::start();
    let lease = Duration::from_secs(1);
    let a = node(&pg, "node-a", lease).await;
    let b = node(&pg, "node-b", lease).await;
    a.register("j", JOB).await.unwrap();
    let la = a.acquire(1).await.unwrap().pop().unwrap();

    // A write of node-a's in flight, as `Lease::fence` starts it.
    let mut raw = pg.client().await;
    let txn = raw.transaction().await.unwrap();
    let fenced = txn
        .query(
            "SELECT 1 FROM forager_jobs WHERE name = 'j' AND owner = 'node-a' AND epoch = $1
             AND lease_until > now() FOR KEY SHARE",
            &[&la.epoch],
        )
        .await
        .unwrap();
    assert_eq!(fenced.len(), 1);
    // A renewal does not wait for it.
    tokio::time::timeout(Duration::from_secs(2), a.renew(&la))
        .await
        .expect("a renewal does not wait for a write in flight")
        .unwrap();
    // The lease lapses while the write is still open: the job is locked, so skipped.
    tokio::time::sleep(lease + Duration::from_millis(300)).await;
    assert!(b.acquire(1).await.unwrap().is_empty());
    txn.commit().await.unwrap();
    // The write committed under epoch 1; now the take-over goes through, and
    // node-a's next write is refused.
    let lb = b.acquire(1).await.unwrap().pop().unwrap();
    assert_eq!(lb.epoch, la.epoch + 1);
    assert!(matches!(
        a.write_checkpoint(&la, b"late").await,
        Err(ClusterError::Fenced { .. })
    ));
    b.write_checkpoint(&lb, b"new owner").await.unwrap();
    assert_eq!(
        a.read_checkpoint("j").await.unwrap().unwrap().bytes,
        b"new owner"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn the_lease_keeper_renews_and_says_stop_before_the_lease_can_lapse() {
    let pg = Postgres::start();
    let lease = Duration::from_millis(1500);
    let a = node(&pg, "node-a", lease).await;
    let b = node(&pg, "node-b", lease).await;
    a.register("kept", JOB).await.unwrap();
    a.register("taken", JOB).await.unwrap();
    let mut held = a.acquire(2).await.unwrap();
    let taken = held.pop().unwrap();
    let kept = held.pop().unwrap();
    assert_eq!((kept.job.as_str(), taken.job.as_str()), ("kept", "taken"));
    let mut keeper = a.keep(&kept);
    let mut lost = a.keep(&taken);

    // Twice the lease later, renewals kept it.
    tokio::time::sleep(lease * 2).await;
    assert_eq!(keeper.now(), LeaseSignal::Held);
    assert!(b.acquire(2).await.unwrap().is_empty());
    a.write_checkpoint(&kept, b"still mine").await.unwrap();

    // Another node holding a newer epoch (forced here by hand): the keeper
    // notices at its next renewal and says stop.
    pg.client()
        .await
        .execute(
            "UPDATE forager_jobs SET epoch = epoch + 1, owner = 'node-b' WHERE name = 'taken'",
            &[],
        )
        .await
        .unwrap();
    let why = tokio::time::timeout(lease, lost.stopped()).await.unwrap();
    assert!(why.contains("lease of epoch 1 lost"), "{why}");

    // The database goes away: the keeper cannot renew and says stop within
    // two thirds of the lease of its last renewal, so before the lease
    // could lapse in the database.
    let down = Instant::now();
    pg.stop();
    let why = tokio::time::timeout(lease, keeper.stopped()).await.unwrap();
    let after = down.elapsed();
    assert!(
        after < lease * 2 / 3 + Duration::from_millis(250),
        "{after:?}"
    );
    assert!(why.contains("could not be renewed"), "{why}");
    assert!(
        why.contains("node node-a: job kept: lease of epoch 1"),
        "{why}"
    );
}

/// One renewal statement for all of a node's leases (forager-cluster's
/// `lease`): leases taken at three moments are soon renewed together, so
/// fifteen leases cost a statement per period, not fifteen; a lease taken
/// over still stops alone and at once, the others held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_nodes_leases_are_renewed_together_in_one_statement() {
    let pg = Postgres::start();
    let lease = Duration::from_millis(1500);
    let a = node(&pg, "node-a", lease).await;
    let b = node(&pg, "node-b", lease).await;
    let renewals = Arc::new(Renewals::default());
    assert!(a.set_observer(renewals.clone()));
    for i in 0..15 {
        let name = format!("r{i}");
        a.register(&name, &JOB.replace("\"j\"", &format!("\"{name}\"")))
            .await
            .unwrap();
    }
    let mut keepers = Vec::new();
    for _ in 0..3 {
        for l in a.acquire(5).await.unwrap() {
            keepers.push((l.job.clone(), a.keep(&l)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(keepers.len(), 15);
    let counted_from = renewals.0.load(Ordering::Relaxed);
    tokio::time::sleep(lease * 2).await;
    let statements = renewals.0.load(Ordering::Relaxed) - counted_from;
    // A period is 500 ms: 6 in the 3 s, plus a few retries on a busy
    // machine; one statement per lease would be 90.
    assert!(
        (3..=10).contains(&statements),
        "{statements} renewal statements"
    );
    assert!(keepers.iter().all(|(_, k)| k.now() == LeaseSignal::Held));
    assert!(
        b.acquire(15).await.unwrap().is_empty(),
        "every lease renewed"
    );

    // One job taken by another epoch (by hand): its keeper alone says stop.
    pg.client()
        .await
        .execute(
            "UPDATE forager_jobs SET epoch = epoch + 1, owner = 'node-b' WHERE name = 'r7'",
            &[],
        )
        .await
        .unwrap();
    let (_, lost) = keepers.iter_mut().find(|(j, _)| j == "r7").unwrap();
    let why = tokio::time::timeout(lease, lost.stopped()).await.unwrap();
    assert!(why.contains("job r7: lease of epoch 1 lost"), "{why}");
    tokio::time::sleep(lease).await;
    let held = keepers
        .iter()
        .filter(|(_, k)| k.now() == LeaseSignal::Held)
        .count();
    assert_eq!(held, 14);
    // Keepers dropped stop renewing: the leases lapse and another node
    // takes them (r7's lapsed too: nobody renewed it since).
    keepers.clear();
    tokio::time::sleep(lease + Duration::from_millis(300)).await;
    assert_eq!(b.acquire(15).await.unwrap().len(), 15);
}

/// Counts a node's renewal statements.
#[derive(Default)]
struct Renewals(AtomicU64);

impl forager_cluster::Observer for Renewals {
    fn query(&self, op: &'static str, _elapsed: Duration) {
        if op == "renew" {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn renew_failed(&self) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn pacing_reservations_from_two_clients_are_never_closer_than_the_delay() {
    let pg = Postgres::start();
    let a = node(&pg, "node-a", Duration::from_secs(30)).await;
    let b = node(&pg, "node-b", Duration::from_secs(30)).await;
    let delay = Duration::from_millis(20);
    let per_client = 25;
    // The raw reservations: slots by the database's clock.
    let reserve = |c: Cluster| async move {
        let mut out = Vec::new();
        for _ in 0..per_client {
            let r = c.reserve("site.test", delay).await.unwrap();
            tokio::time::sleep(r.wait).await;
            out.push(r.slot);
        }
        out
    };
    let (ra, rb) = tokio::join!(
        tokio::spawn(reserve(a.clone())),
        tokio::spawn(reserve(b.clone()))
    );
    let mut slots: Vec<SystemTime> = ra.unwrap().into_iter().chain(rb.unwrap()).collect();
    slots.sort();
    assert_eq!(slots.len(), 2 * per_client);
    let smallest = slots
        .windows(2)
        .map(|w| w[1].duration_since(w[0]).unwrap_or_default())
        .min()
        .unwrap_or_default();
    // Slots are the database's microseconds: a gap may round 1 µs short of 20 ms, never more.
    assert!(
        smallest + Duration::from_micros(1) >= delay,
        "smallest slot gap {smallest:?}"
    );
    // Two clients interleaved: the whole run took about 50 delays, not 25.
    let span = slots[slots.len() - 1]
        .duration_since(slots[0])
        .unwrap_or_default();
    assert!(
        span + Duration::from_micros(50) >= delay * (2 * per_client as u32 - 1),
        "{span:?}"
    );
    // Another key is paced on its own.
    assert_eq!(
        a.reserve("other.test", delay).await.unwrap().wait,
        Duration::ZERO
    );

    // What a request does: `pace` returns when it may start; the starts of
    // both clients, on this machine's clock, are never closer than the delay.
    // Each client reserves a stretch of the key at a time and starts several
    // requests inside it: fewer reservations than requests.
    let reserves = Arc::new(Reserves::default());
    assert!(a.set_observer(reserves.clone()));
    let pace = |c: Cluster| async move {
        let mut out = Vec::new();
        for _ in 0..per_client {
            out.push(c.pace("paced.test", delay).await.unwrap());
        }
        out
    };
    let (pa, pb) = tokio::join!(tokio::spawn(pace(a.clone())), tokio::spawn(pace(b.clone())));
    let mut starts: Vec<Instant> = pa.unwrap().into_iter().chain(pb.unwrap()).collect();
    starts.sort();
    let smallest_start = starts
        .windows(2)
        .map(|w| w[1].duration_since(w[0]))
        .min()
        .unwrap_or_default();
    assert!(
        smallest_start >= delay,
        "smallest start gap {smallest_start:?}"
    );
    let reserved = reserves.0.load(Ordering::Relaxed);
    assert!(
        (1..per_client as u64).contains(&reserved),
        "node-a reserved {reserved} times for {per_client} requests"
    );
    eprintln!("pacing: smallest slot gap {smallest:?}, smallest start gap with pace() {smallest_start:?} (delay {delay:?}); node-a reserved {reserved} stretches for {per_client} requests");

    // A node alone on a key takes long stretches once its last one is
    // still the key's end: 60 requests 20 ms apart (1.2 s) fit in 2 or 3
    // stretches (250 ms, then 1 s each; 3 when each sleep overshoots by a
    // millisecond), where short ones alone need at least 5 (12 starts each).
    let before = reserves.0.load(Ordering::Relaxed);
    let mut starts = Vec::new();
    for _ in 0..60 {
        starts.push(a.pace("alone.test", delay).await.unwrap());
    }
    let alone = reserves.0.load(Ordering::Relaxed) - before;
    let smallest_alone = starts
        .windows(2)
        .map(|w| w[1].duration_since(w[0]))
        .min()
        .unwrap_or_default();
    assert!(smallest_alone >= delay, "{smallest_alone:?}");
    assert!(
        (1..=4).contains(&alone),
        "{alone} reservations for 60 requests of a node alone"
    );
    eprintln!("pacing alone: {alone} reservations for 60 requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_stretch_is_long_only_while_no_other_node_reserved_the_key() {
    let pg = Postgres::start();
    let a = node(&pg, "node-a", Duration::from_secs(30)).await;
    let b = node(&pg, "node-b", Duration::from_secs(30)).await;
    let (short, long) = (Duration::from_millis(100), Duration::from_millis(400));
    let key = "shared.test";
    // A key nobody reserved: short.
    let first = a.reserve_stretch(key, short, long, None).await.unwrap();
    assert_eq!(first.span, short);
    assert_eq!(
        first.end.duration_since(first.reservation.slot).unwrap(),
        short
    );
    // Still a's end: long, from that end on (or from now, if already past).
    let second = a
        .reserve_stretch(key, short, long, Some(first.end))
        .await
        .unwrap();
    assert_eq!(second.span, long);
    assert!(second.reservation.slot >= first.end);
    // b asks: short, after a's long stretch.
    let third = b.reserve_stretch(key, short, long, None).await.unwrap();
    assert_eq!(third.span, short);
    assert!(third.reservation.slot >= second.end);
    // a again, naming its own last end, which is no longer the key's: short.
    let fourth = a
        .reserve_stretch(key, short, long, Some(second.end))
        .await
        .unwrap();
    assert_eq!(fourth.span, short);
    assert!(fourth.reservation.slot >= third.end);
}

/// Counts a node's pacing reservations (its observer hears every query).
#[derive(Default)]
struct Reserves(AtomicU64);

impl forager_cluster::Observer for Reserves {
    fn query(&self, op: &'static str, _elapsed: Duration) {
        if op == "reserve" {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn renew_failed(&self) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_checkpoint_written_on_one_node_restores_byte_exactly_on_another() {
    let pg = Postgres::start();
    let a = node(&pg, "node-a", Duration::from_secs(30)).await;
    let b = node(&pg, "node-b", Duration::from_secs(30)).await;
    a.register("j", JOB).await.unwrap();
    assert_eq!(b.read_checkpoint("j").await.unwrap(), None);
    let la = a.acquire(1).await.unwrap().pop().unwrap();

    let mut state = state_blob(400_000, 7);
    let first = a.write_checkpoint(&la, &state).await.unwrap();
    assert_eq!(first.seq, 1);
    assert!(first.chunks > 50, "{first:?}");
    assert_eq!(first.chunks_put, first.chunks);
    // One edit in the middle: about one chunk written, the rest kept.
    state[200_000..200_010].copy_from_slice(b"0123456789");
    let second = a.write_checkpoint(&la, &state).await.unwrap();
    assert_eq!(second.seq, 2);
    assert!(
        second.chunks_put <= 3 && second.chunks_put >= 1,
        "{second:?}"
    );
    assert!(second.chunks_removed >= 1, "{second:?}");
    // Writing the same state again writes no chunk.
    assert_eq!(a.write_checkpoint(&la, &state).await.unwrap().chunks_put, 0);
    a.release(&la).await.unwrap();

    let lb = b.acquire(1).await.unwrap().pop().unwrap();
    let restored = b.read_checkpoint("j").await.unwrap().unwrap();
    assert_eq!(restored.epoch, la.epoch);
    assert_eq!(restored.seq, 3);
    assert!(restored.bytes == state, "restored state differs");

    // An empty state and a large one round-trip too.
    b.write_checkpoint(&lb, b"").await.unwrap();
    assert_eq!(a.read_checkpoint("j").await.unwrap().unwrap().bytes, b"");
    let big = state_blob(3 << 20, 9);
    b.write_checkpoint(&lb, &big).await.unwrap();
    assert!(a.read_checkpoint("j").await.unwrap().unwrap().bytes == big);

    // A damaged chunk is an error naming node and job, never a wrong state.
    pg.client()
        .await
        .execute(
            "UPDATE forager_chunks SET bytes = 'x'::bytea
             WHERE ctid = (SELECT ctid FROM forager_chunks LIMIT 1)",
            &[],
        )
        .await
        .unwrap();
    let e = a.read_checkpoint("j").await.err().unwrap();
    assert!(
        matches!(&e, ClusterError::Damaged { .. })
            && e.to_string()
                .starts_with("node node-a: job j: stored checkpoint is damaged"),
        "{e}"
    );
}

/// The incremental mirror (forager-cluster's `checkpoint`): a checkpoint
/// in two parts, the learned state handed over as the store keeps it in
/// chunks. Once a write of the lease committed, the next one asks the
/// database nothing, sends only the chunks that changed and deletes only
/// the ones that left; what is read back is byte-exact, a checkpoint
/// written as one blob before (format 1) still reads, and a write that
/// lacks a chunk's bytes is refused rather than storing a broken head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_checkpoint_after_a_small_change_sends_only_the_changed_chunks() {
    use forager_cluster::{CheckpointParts, StoredChunks};
    use forager_core::chunk::{split, ChunkKey};
    use std::collections::HashMap;
    let pg = Postgres::start();
    let a = node(&pg, "node-a", Duration::from_secs(30)).await;
    a.register("j", JOB).await.unwrap();
    let la = a.acquire(1).await.unwrap().pop().unwrap();
    let chunks_of = |bytes: &[u8], known: &StoredChunks| {
        let cut = split(bytes);
        let map: HashMap<ChunkKey, Vec<u8>> = cut
            .index
            .chunks
            .iter()
            .zip(cut.pieces())
            .filter(|(c, _)| !known.knows(c.key))
            .map(|(c, p)| (c.key, p.to_vec()))
            .collect();
        (cut.index, map)
    };
    let mut stored = StoredChunks::default();
    let mut state = state_blob(2 << 20, 11);
    let (index, all) = chunks_of(&state, &stored);
    assert!(all.len() > 200, "{} chunks", all.len());
    let parts = CheckpointParts {
        rows: b"rows, first",
        state: &index,
        state_chunks: &all,
    };
    let first = a
        .write_checkpoint_parts(&la, parts, &mut stored)
        .await
        .unwrap();
    assert!(first.asked_stored && stored.is_known(), "{first:?}");
    assert_eq!(first.chunks_put, all.len() + 1, "{first:?}");

    // Three edits in place: a few chunks read from the store, a few sent.
    for at in [100_000, 1_000_000, 1_900_000] {
        state[at] ^= 0xff;
    }
    let (index, dirty) = chunks_of(&state, &stored);
    assert!(
        (3..=6).contains(&dirty.len()),
        "{} chunks dirty",
        dirty.len()
    );
    let parts = CheckpointParts {
        rows: b"rows, second",
        state: &index,
        state_chunks: &dirty,
    };
    let second = a
        .write_checkpoint_parts(&la, parts, &mut stored)
        .await
        .unwrap();
    assert!(!second.asked_stored, "{second:?}");
    assert_eq!(second.chunks_put, dirty.len() + 1, "{second:?}");
    // The old rows chunk and the chunks the edits replaced (an edit may
    // move a cut: one chunk may become two, or two one).
    assert!((3..=8).contains(&second.chunks_removed), "{second:?}");
    assert!(second.bytes_put < 6 * 16384, "{second:?}");
    let back = a.read_checkpoint("j").await.unwrap().unwrap();
    assert_eq!((back.epoch, back.seq), (la.epoch, 2));
    assert_eq!(back.bytes, b"rows, second");
    assert!(
        back.state.as_deref() == Some(state.as_slice()),
        "state differs"
    );
    // No chunk row the head does not name, none missing.
    let client = pg.client().await;
    let rows: i64 = client
        .query_one("SELECT count(*) FROM forager_chunks WHERE job = 'j'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows as usize, index.keys().len() + 1);

    // A write whose new chunk's bytes are missing is refused; the head stays.
    state[5] ^= 0xff;
    let (index, _) = chunks_of(&state, &stored);
    let none = HashMap::new();
    let parts = CheckpointParts {
        rows: b"rows, second",
        state: &index,
        state_chunks: &none,
    };
    let e = a
        .write_checkpoint_parts(&la, parts, &mut stored)
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("lacks the bytes of state chunk"),
        "{e}"
    );
    assert!(
        !stored.is_known(),
        "an unknown outcome asks the database next time"
    );
    assert_eq!(a.read_checkpoint("j").await.unwrap().unwrap().seq, 2);

    // A head written as one blob before the two parts (format 1) reads.
    let blob = state_blob(300_000, 12);
    let cut = split(&blob);
    client
        .execute("DELETE FROM forager_chunks WHERE job = 'j'", &[])
        .await
        .unwrap();
    for (c, piece) in cut.index.chunks.iter().zip(cut.pieces()) {
        client
            .execute(
                "INSERT INTO forager_chunks (job, hash, bytes) VALUES ('j', $1, $2)
                 ON CONFLICT DO NOTHING",
                &[&c.key.0.to_be_bytes().to_vec(), piece],
            )
            .await
            .unwrap();
    }
    {
        use sha2::Digest;
        let sha = sha2::Sha256::digest(&blob).to_vec();
        client
            .execute(
                "UPDATE forager_checkpoints SET format = 1, chunks = $1, len = $2, sha256 = $3
                 WHERE job = 'j'",
                &[
                    &forager_core::codec::encode(&cut.index),
                    &(blob.len() as i64),
                    &sha,
                ],
            )
            .await
            .unwrap();
    }
    let old = a.read_checkpoint("j").await.unwrap().unwrap();
    assert!(old.bytes == blob && old.state.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_failed_job_is_kept_failed_until_its_file_changes() {
    let pg = Postgres::start();
    let a = node(&pg, "node-a", Duration::from_secs(30)).await;
    let b = node(&pg, "node-b", Duration::from_secs(30)).await;
    a.register("j", JOB).await.unwrap();
    let la = a.acquire(1).await.unwrap().pop().unwrap();
    // Only the holder of the epoch may say so.
    let stale = forager_cluster::Lease {
        epoch: la.epoch + 1,
        ..la.clone()
    };
    assert!(matches!(
        a.fail(&stale, "x").await,
        Err(ClusterError::Fenced { .. })
    ));
    a.fail(&la, "disk on fire").await.unwrap();
    let row = &b.jobs().await.unwrap()[0];
    assert_eq!(
        (
            row.status.as_str(),
            row.failure.as_deref(),
            row.owner.as_deref()
        ),
        ("failed", Some("disk on fire"), None)
    );
    // Not leased again, not even when its unchanged file is registered again…
    assert_eq!(b.register("j", JOB).await.unwrap(), Registration::Unchanged);
    assert!(b.acquire(4).await.unwrap().is_empty());
    // …until the file changes.
    let edited = format!("{JOB}strategy = \"bfs\"\n");
    assert_eq!(
        b.register("j", &edited).await.unwrap(),
        Registration::Updated
    );
    let lb = b.acquire(4).await.unwrap().pop().unwrap();
    assert_eq!((lb.job.as_str(), lb.epoch), ("j", la.epoch + 1));
    let row = &a.jobs().await.unwrap()[0];
    assert_eq!(
        (row.status.as_str(), row.failure.as_deref()),
        ("active", None)
    );
}

/// Figures for docs/bench (run by hand: `cargo test --test it cluster::measure -- --ignored --nocapture`):
/// pacing reservations per second and lease round trips, on a server with
/// PostgreSQL's default durability (every commit flushed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand"]
async fn measure_reservations_and_lease_round_trips() {
    let pg = Postgres::start_durable();
    let a = node(&pg, "node-a", Duration::from_secs(30)).await;
    for clients in [1usize, 4] {
        let n = 2000 / clients;
        let start = Instant::now();
        let tasks: Vec<_> = (0..clients)
            .map(|c| {
                let a = a.clone();
                tokio::spawn(async move {
                    for i in 0..n {
                        // Many keys, as many hosts: no wait, only the round trip and the commit.
                        a.reserve(&format!("host-{c}-{}.test", i % 50), Duration::ZERO)
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let took = start.elapsed();
        eprintln!(
            "reservations: {clients} client(s), {} in {took:?}: {:.0}/s",
            n * clients,
            (n * clients) as f64 / took.as_secs_f64()
        );
    }
    a.register("m", JOB).await.unwrap();
    let mut samples = Vec::new();
    let start = Instant::now();
    let l = a.acquire(1).await.unwrap().pop().unwrap();
    eprintln!("acquire: {:?}", start.elapsed());
    for _ in 0..500 {
        let t = Instant::now();
        a.renew(&l).await.unwrap();
        samples.push(t.elapsed());
    }
    samples.sort();
    eprintln!(
        "renew round trip over 500: median {:?}, p99 {:?}, max {:?}",
        samples[250], samples[495], samples[499]
    );
    let blob = state_blob(1 << 20, 3);
    let t = Instant::now();
    let w = a.write_checkpoint(&l, &blob).await.unwrap();
    eprintln!(
        "checkpoint of 1 MiB, first: {:?} ({} chunks)",
        t.elapsed(),
        w.chunks
    );
    let mut edited = blob.clone();
    edited[500_000] ^= 1;
    let t = Instant::now();
    let w = a.write_checkpoint(&l, &edited).await.unwrap();
    eprintln!(
        "checkpoint of 1 MiB, one edit: {:?} ({} chunks put)",
        t.elapsed(),
        w.chunks_put
    );
    let t = Instant::now();
    a.read_checkpoint("m").await.unwrap().unwrap();
    eprintln!("checkpoint of 1 MiB, read: {:?}", t.elapsed());
}

#[test]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
fn check_says_whether_the_database_answers_and_the_daemon_refuses_an_unreachable_one() {
    use crate::harness::bin;
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("jobs")).unwrap();
    let config = dir.path().join("forager.toml");
    let write = |database: &str| {
        std::fs::write(
            &config,
            format!("jobs_dir = \"jobs\"\n[cluster]\ndatabase = \"{database}\"\nnode = \"n1\"\n"),
        )
        .unwrap()
    };
    let check = || {
        let out =
            bin::output_blocking(bin::std_command().arg("check").arg("--daemon").arg(&config));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let shared_targets = format!(
        "{}: in a cluster, each job's targets folder must be one every node mounts (NFS, CephFS…): \
         a job taken over writes where its last node wrote",
        config.display()
    );

    write(&pg.database());
    let (code, out) = check();
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "{}: cluster database answers: PostgreSQL ",
            config.display()
        )) && lines[0].ends_with(&format!(
            "schema version {} (created from 0), this node is \"n1\"",
            forager_cluster::schema::VERSION
        )),
        "{out}"
    );
    assert_eq!(lines[1], shared_targets);
    let (_, out) = check();
    assert!(
        out.lines().next().unwrap_or("").ends_with(&format!(
            ", schema version {}, this node is \"n1\"",
            forager_cluster::schema::VERSION
        )),
        "{out}"
    );

    // Nobody listens there: the reason, on the line of `database`.
    let port = pg.port;
    drop(pg);
    write(&format!(
        "host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=2"
    ));
    let (code, out) = check();
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out.lines().next().unwrap_or(""),
        format!(
            "{}:3: cluster.database: node n1: cannot reach the cluster database 127.0.0.1:{port}/postgres: \
             error connecting to server: Connection refused (os error 111)",
            config.display()
        )
    );

    // The daemon does not start without its database: a clear error, at once.
    let out = bin::output_blocking(
        bin::std_command()
            .arg("daemon")
            .arg("--config")
            .arg(&config),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "[cluster]: node n1: cannot reach the cluster database 127.0.0.1:{port}/postgres"
        )),
        "{err}"
    );
}

/// Pages of the take-over test's site; each links on and to one CSV target.
const TAKEOVER_PAGES: usize = 30;

/// `/` and `/page/N` link to `/page/N+1` and to `/data/N.csv`; every
/// request's arrival is noted (the server's own log of politeness). The
/// site can also SIGSTOP a node at the arrival of one path ([`Chain::stop_at`]),
/// so that the node is stopped at a known point of its crawl.
struct Chain {
    pages: usize,
    arrivals: std::sync::Mutex<Vec<Instant>>,
    /// (path, pid): stop `pid` when `path` is first asked for.
    stop_at: std::sync::Mutex<Option<(String, u32)>>,
    stopped: std::sync::atomic::AtomicBool,
}

impl Default for Chain {
    fn default() -> Self {
        Chain::with_pages(TAKEOVER_PAGES)
    }
}

impl Chain {
    fn with_pages(pages: usize) -> Chain {
        Chain {
            pages,
            arrivals: std::sync::Mutex::new(Vec::new()),
            stop_at: std::sync::Mutex::new(None),
            stopped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// SIGSTOP process `pid` when `path` arrives, before it is answered.
    fn stop_at(&self, path: &str, pid: u32) {
        *self.stop_at.lock().unwrap_or_else(|p| p.into_inner()) = Some((path.to_string(), pid));
    }

    /// Whether [`Chain::stop_at`] fired.
    fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl forager_bench::sites::Site for Chain {
    fn respond(
        &self,
        req: &forager_bench::sites::SiteRequest,
    ) -> forager_bench::sites::SiteResponse {
        use forager_bench::sites::SiteResponse;
        self.arrivals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Instant::now());
        let path = req.path.as_str();
        {
            let mut stop_at = self.stop_at.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, pid)) = stop_at.as_ref() {
                if at == path {
                    // SAFETY: kill(2) on a child of this test process, still running.
                    let sent = unsafe { libc::kill(*pid as libc::pid_t, libc::SIGSTOP) };
                    assert_eq!(
                        sent,
                        0,
                        "SIGSTOP {pid}: {}",
                        std::io::Error::last_os_error()
                    );
                    *stop_at = None;
                    self.stopped
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
        }
        let pages = self.pages;
        let page = |n: usize| {
            let mut links = format!("<a href=\"/data/{n}.csv\">data {n}</a>");
            if n + 1 < pages {
                links.push_str(&format!("<a href=\"/page/{}\">next</a>", n + 1));
            }
            SiteResponse::html(format!("<html><body>{links}</body></html>"))
        };
        if path == "/" {
            return page(0);
        }
        let number = |prefix: &str, suffix: &str| {
            path.strip_prefix(prefix)
                .and_then(|p| p.strip_suffix(suffix))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n < pages)
        };
        if let Some(n) = number("/page/", "") {
            return page(n);
        }
        if let Some(n) = number("/data/", ".csv") {
            return SiteResponse::ok("text/csv", format!("n,square\n{n},{}\n", n * n));
        }
        SiteResponse::not_found()
    }
}

/// One node of the take-over test: its folder (jobs, state whose `targets`
/// is the shared folder), its config and, once started, its process.
struct TestNode {
    name: &'static str,
    dir: std::path::PathBuf,
    config: std::path::PathBuf,
    admin: std::net::SocketAddr,
}

impl TestNode {
    fn new(
        root: &std::path::Path,
        name: &'static str,
        max_jobs: usize,
        pg: &Postgres,
        port: u16,
        shared: &std::path::Path,
    ) -> TestNode {
        let hosts = ["chain.test".to_string()];
        TestNode::with(root, name, max_jobs, pg, port, shared, &hosts, "1s")
    }

    /// A node whose config resolves each of `hosts` to the loopback server
    /// and checkpoints every `checkpoint`.
    #[allow(clippy::too_many_arguments)]
    fn with(
        root: &std::path::Path,
        name: &'static str,
        max_jobs: usize,
        pg: &Postgres,
        port: u16,
        shared: &std::path::Path,
        hosts: &[String],
        checkpoint: &str,
    ) -> TestNode {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join("jobs.d")).unwrap();
        std::fs::create_dir_all(dir.join("state")).unwrap();
        // The shared mount every node's targets go to (NFS in production).
        std::os::unix::fs::symlink(shared, dir.join("state").join("targets")).unwrap();
        let config = dir.join("forager.toml");
        let admin = crate::harness::sites::admin_addr();
        let resolve: String = hosts
            .iter()
            .map(|h| format!("\"{h}\" = \"127.0.0.1:{port}\"\n"))
            .collect();
        std::fs::write(
            &config,
            format!(
                "jobs_dir = \"jobs.d\"\n\
                 state_dir = \"state\"\n\
                 admin_listen = \"{admin}\"\n\
                 max_jobs = {max_jobs}\n\
                 checkpoint_interval = \"{checkpoint}\"\n\
                 poll_interval = \"1s\"\n\
                 allow_private = true\n\
                 [resolve]\n\
                 {resolve}\
                 [cluster]\n\
                 database = \"{}\"\n\
                 node = \"{name}\"\n\
                 lease = \"2s\"\n",
                pg.database()
            ),
        )
        .unwrap();
        TestNode {
            name,
            dir,
            config,
            admin,
        }
    }

    /// `forager ARGS --config` this node's config, to its end (at most 60 s).
    async fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut command = crate::harness::bin::command();
        command.args(args).arg("--config").arg(&self.config);
        crate::harness::bin::output_within(&mut command, Duration::from_secs(60)).await
    }

    /// `GET path` of this node's admin API: (status, body).
    async fn get(&self, path: &str) -> (u16, String) {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let r = http
            .get(format!("http://{}{path}", self.admin))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{} {path}: {e}", self.name));
        let status = r.status().as_u16();
        (status, r.text().await.unwrap_or_default())
    }

    fn start(&self) -> crate::harness::daemon::DaemonProcess {
        let mut command = crate::harness::bin::std_command();
        command
            .arg("daemon")
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "info");
        crate::harness::daemon::DaemonProcess::start(&mut command, self.dir.join("daemon.log"))
    }
}

/// (status, owner) of `job` in the registry; `None` too before a node created the tables.
async fn registry_row(
    client: &tokio_postgres::Client,
    job: &str,
) -> Option<(String, Option<String>)> {
    client
        .query_opt(
            "SELECT status, owner FROM forager_jobs WHERE name = $1",
            &[&job],
        )
        .await
        .ok()
        .flatten()
        .map(|r| (r.get(0), r.get(1)))
}

/// (row number, node, final_url) of every manifest row of `job` in the
/// database; none before a node created the tables.
async fn manifest_rows(client: &tokio_postgres::Client, job: &str) -> Vec<(i64, String, String)> {
    client
        .query(
            "SELECT row_no, node, row_json FROM forager_manifest WHERE job = $1 ORDER BY row_no",
            &[&job],
        )
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let json: String = r.get(2);
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            (
                r.get(0),
                r.get(1),
                v["final_url"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_job_whose_node_is_killed_finishes_on_another_with_every_target_once() {
    let pg = Postgres::start();
    let server = serve(
        &std::sync::Arc::new(Chain::default()),
        &["chain.test".to_string()],
    )
    .await;
    let (root, shared) = root_with_shared_targets();
    let n1 = TestNode::new(root.path(), "n1", 2, &pg, server.port(), &shared);
    let n2 = TestNode::new(root.path(), "n2", 2, &pg, server.port(), &shared);
    // 2 requests a page at 150 ms: about 9 s of crawl, checkpoints every second.
    let job = crate::harness::JobFile::new("chain")
        .seed(format!("http://chain.test:{}/", server.port()))
        .strategy("bfs")
        .no_early_stop()
        .delay("150ms");
    let client = pg.client().await;

    let mut p1 = n1.start();
    // The job dropped into both folders is one job.
    job.write(&n1.dir.join("jobs.d"));
    job.write(&n2.dir.join("jobs.d"));
    // Mid-crawl: n1 runs it and has mirrored some targets to the database.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = manifest_rows(&client, "chain").await;
        let row = registry_row(&client, "chain").await;
        if rows.len() >= 3 {
            assert_eq!(
                row,
                Some(("active".into(), Some("n1".into()))),
                "{}",
                p1.log()
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "n1 mirrored no targets in time\n{}",
            p1.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut p2 = n2.start();
    tokio::time::sleep(Duration::from_millis(500)).await;
    p1.signal("KILL");
    assert!(p1.wait(Duration::from_secs(10)).is_some(), "n1 killed");
    let killed_at = Instant::now();

    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some((status, _)) = registry_row(&client, "chain").await {
            if status == "done" {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the job did not finish on n2\n--- n2 ---\n{}\n--- n1 ---\n{}",
            p2.log(),
            p1.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "take-over and the rest of the crawl: {:?}",
        killed_at.elapsed()
    );
    let n2_log = p2.log();
    assert!(
        n2_log.contains("job restored from its checkpoint in the cluster database"),
        "{n2_log}"
    );

    // Every target exactly once: in the database's manifest (rows of both
    // nodes) and in the shared folder's manifest.jsonl (what a one-node
    // run of the whole site writes).
    let expected: std::collections::BTreeSet<String> = (0..TAKEOVER_PAGES)
        .map(|n| format!("http://chain.test:{}/data/{n}.csv", server.port()))
        .collect();
    let rows = manifest_rows(&client, "chain").await;
    let urls: std::collections::BTreeSet<String> = rows.iter().map(|r| r.2.clone()).collect();
    assert_eq!(rows.len(), TAKEOVER_PAGES, "no target twice: {rows:?}");
    assert_eq!(urls, expected);
    let nodes: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(nodes, ["n1", "n2"].into_iter().collect(), "{rows:?}");
    let on_disk = crate::harness::sites::manifest_by_final_url(&shared.join("chain"));
    assert_eq!(
        on_disk
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        expected
    );
    let registered: i64 = client
        .query_one("SELECT count(*) FROM forager_jobs", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(registered, 1, "registered once");

    // The merged manifests equal a real one-node run's: the same job
    // crawled by `forager crawl` alone over the same loopback web gives
    // the same (url, sha256) pairs as the shared manifest.jsonl and the
    // database's rows of both nodes.
    let alone = tempfile::tempdir().unwrap();
    let job_path = job.write(alone.path());
    let mut crawl = crate::harness::bin::command();
    crawl
        .arg("crawl")
        .arg(&job_path)
        .arg("--state-dir")
        .arg(alone.path().join("state"))
        .arg("--allow-private")
        .args([
            "--resolve",
            &format!("chain.test=127.0.0.1:{}", server.port()),
        ])
        .arg("--no-progress");
    let out = crate::harness::bin::output_within(&mut crawl, Duration::from_secs(120)).await;
    assert!(out.status.success(), "{out:?}");
    let one_node = crate::harness::sites::manifest_by_final_url(
        &alone.path().join("state").join("targets").join("chain"),
    );
    assert_eq!(one_node.len(), TAKEOVER_PAGES, "{one_node:?}");
    assert_eq!(
        on_disk, one_node,
        "the shared manifest.jsonl against a one-node run"
    );
    let in_db: std::collections::BTreeMap<String, String> = client
        .query(
            "SELECT row_json FROM forager_manifest WHERE job = 'chain'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_str(r.get(0)).unwrap();
            (
                v["final_url"].as_str().unwrap_or("").to_string(),
                v["sha256"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        in_db, one_node,
        "the database's merged rows against a one-node run"
    );

    p2.signal("TERM");
    assert!(
        p2.wait(Duration::from_secs(30)).is_some(),
        "n2 stops\n{}",
        p2.log()
    );
    let _ = (n1.name, n2.name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn two_nodes_crawling_one_host_keep_its_delay_between_them() {
    // A stretch of the host's time (250 ms at least) holds one request.
    two_nodes_on_one_host(Duration::from_millis(200)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn two_nodes_crawling_one_host_with_a_short_delay_keep_it_between_them() {
    // A stretch holds several requests of one node, paced by the node alone.
    two_nodes_on_one_host(Duration::from_millis(60)).await;
}

/// Two daemons, one job each on one host with `delay`: the server sees no
/// two requests closer than the delay.
async fn two_nodes_on_one_host(delay: Duration) {
    let pg = Postgres::start();
    let site = std::sync::Arc::new(Chain::default());
    let server = serve(&site, &["chain.test".to_string()]).await;
    let (root, shared) = root_with_shared_targets();
    // One job each: two jobs on two nodes reach one host.
    let n1 = TestNode::new(root.path(), "n1", 1, &pg, server.port(), &shared);
    let n2 = TestNode::new(root.path(), "n2", 1, &pg, server.port(), &shared);
    let mut p1 = n1.start();
    let mut p2 = n2.start();
    for name in ["pa", "pb"] {
        crate::harness::JobFile::new(name)
            .seed(format!("http://chain.test:{}/", server.port()))
            .strategy("bfs")
            .no_early_stop()
            .set("budget", "requests", 12)
            .delay(&format!("{}ms", delay.as_millis()))
            .write(&n1.dir.join("jobs.d"));
    }
    let client = pg.client().await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let a = registry_row(&client, "pa").await;
        let b = registry_row(&client, "pb").await;
        if a.is_some_and(|r| r.0 == "done") && b.is_some_and(|r| r.0 == "done") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the jobs did not finish\n--- n1 ---\n{}\n--- n2 ---\n{}",
            p1.log(),
            p2.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ran_on = |rows: Vec<(i64, String, String)>| {
        rows.into_iter()
            .map(|r| r.1)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (a, b) = (
        ran_on(manifest_rows(&client, "pa").await),
        ran_on(manifest_rows(&client, "pb").await),
    );
    assert!(
        a.len() == 1 && b.len() == 1 && a != b,
        "one job on each node: pa on {a:?}, pb on {b:?}"
    );
    // The server's own view: no two requests closer than the delay, whichever
    // node sent them (less a loopback hop's jitter between start and arrival).
    let mut arrivals = site.arrivals.lock().unwrap().clone();
    arrivals.sort();
    assert!(arrivals.len() >= 20, "{} requests", arrivals.len());
    let gaps: Vec<Duration> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    let closest = gaps.iter().min().copied().unwrap_or_default();
    eprintln!(
        "{} requests from two nodes; closest two {closest:?} apart (delay {delay:?})",
        arrivals.len()
    );
    assert!(
        closest + Duration::from_millis(10) >= delay,
        "two requests {closest:?} apart, under the delay of {delay:?}: {gaps:?}"
    );
    for p in [&mut p1, &mut p2] {
        p.signal("TERM");
        assert!(
            p.wait(Duration::from_secs(30)).is_some(),
            "stops\n{}",
            p.log()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_node_that_loses_the_database_stops_its_job_before_the_lease_can_lapse() {
    let pg = Postgres::start();
    let server = serve(
        &std::sync::Arc::new(Chain::default()),
        &["chain.test".to_string()],
    )
    .await;
    let (root, shared) = root_with_shared_targets();
    let n1 = TestNode::new(root.path(), "n1", 2, &pg, server.port(), &shared);
    let mut p1 = n1.start();
    crate::harness::JobFile::new("chain")
        .seed(format!("http://chain.test:{}/", server.port()))
        .strategy("bfs")
        .no_early_stop()
        .delay("150ms")
        .write(&n1.dir.join("jobs.d"));
    let client = pg.client().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while manifest_rows(&client, "chain").await.len() < 2 {
        assert!(
            Instant::now() < deadline,
            "no targets mirrored\n{}",
            p1.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(client);
    pg.stop();
    let lost = Instant::now();
    // Lease 2 s: the keeper says stop 1.33 s after its last renewal, the
    // runner then checkpoints locally; all before the lease lapses (2 s).
    let deadline = lost + Duration::from_secs(10);
    let stopped = "job stopped; state saved";
    while !p1.log().contains(stopped) {
        assert!(
            Instant::now() < deadline,
            "the job did not stop\n{}",
            p1.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = lost.elapsed();
    let log = p1.log();
    assert!(
        log.contains("stopping the job: its lease cannot be kept"),
        "{log}"
    );
    assert!(
        took < Duration::from_secs(2),
        "stopped {took:?} after the database went: later than the lease\n{log}"
    );
    assert!(
        p1.running(),
        "the daemon goes on without its database\n{log}"
    );
    p1.signal("TERM");
    assert!(
        p1.wait(Duration::from_secs(30)).is_some(),
        "stops\n{}",
        p1.log()
    );
}

/// A node SIGSTOPped past its lease while it holds work its checkpoint has
/// not taken yet, then continued: the race the fence closes happens every
/// run. n1 checkpoints once a minute, so when the site stops it (at the
/// request of `/data/4.csv`) it holds the manifest rows of `/data/0..3`
/// unwritten; n2 takes the job over, crawls it and writes manifest.jsonl;
/// n1, continued, finds its lease gone at once (its own clock), stops, and
/// its last checkpoint must leave the shared manifest.jsonl alone (with
/// the guard off this test fails: four rows twice in the file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_node_paused_past_its_lease_writes_nothing_more_once_continued() {
    let pg = Postgres::start();
    let site = std::sync::Arc::new(Chain::default());
    let server = serve(&site, &["chain.test".to_string()]).await;
    let (root, shared) = root_with_shared_targets();
    let hosts = ["chain.test".to_string()];
    let n1 = TestNode::with(
        root.path(),
        "n1",
        2,
        &pg,
        server.port(),
        &shared,
        &hosts,
        "60s",
    );
    let n2 = TestNode::with(
        root.path(),
        "n2",
        2,
        &pg,
        server.port(),
        &shared,
        &hosts,
        "1s",
    );
    let mut p1 = n1.start();
    site.stop_at("/data/4.csv", p1.child.id());
    crate::harness::JobFile::new("chain")
        .seed(format!("http://chain.test:{}/", server.port()))
        .strategy("bfs")
        .no_early_stop()
        .delay("150ms")
        .write(&n1.dir.join("jobs.d"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !site.stopped() {
        assert!(
            Instant::now() < deadline,
            "n1 never asked for /data/4.csv\n{}",
            p1.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let client = pg.client().await;
    assert!(
        manifest_rows(&client, "chain").await.is_empty(),
        "n1 mirrored no target before it was stopped"
    );
    // n2 takes the job once n1's lease lapsed, and crawls all of it.
    let mut p2 = n2.start();
    let deadline = Instant::now() + Duration::from_secs(120);
    while registry_row(&client, "chain").await.map(|r| r.0) != Some("done".into()) {
        assert!(
            Instant::now() < deadline,
            "the job did not finish on n2\n{}",
            p2.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    p1.signal("CONT");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !p1.log().contains("job stopped; state saved") {
        assert!(
            Instant::now() < deadline,
            "n1 did not stop the job it lost\n{}",
            p1.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expected: std::collections::BTreeSet<String> = (0..TAKEOVER_PAGES)
        .map(|n| format!("http://chain.test:{}/data/{n}.csv", server.port()))
        .collect();
    // Each target once in the shared manifest.jsonl (a duplicate row panics
    // here) and in the database, all of them n2's.
    let on_disk = crate::harness::sites::manifest_by_final_url(&shared.join("chain"));
    assert_eq!(
        on_disk
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        expected,
        "{}",
        p1.log()
    );
    let rows = manifest_rows(&client, "chain").await;
    assert_eq!(rows.len(), TAKEOVER_PAGES, "{rows:?}");
    assert!(rows.iter().all(|r| r.1 == "n2"), "{rows:?}");
    // The race happened: n1 had rows to write when it woke, and left them.
    let n1_log = p1.log();
    assert!(
        n1_log.contains("stopping the job: its lease cannot be kept"),
        "{n1_log}"
    );
    assert!(
        n1_log.contains("manifest.jsonl left alone"),
        "n1 held no unwritten rows when it woke\n{n1_log}"
    );
    for p in [&mut p1, &mut p2] {
        p.signal("TERM");
        assert!(
            p.wait(Duration::from_secs(30)).is_some(),
            "stops\n{}",
            p.log()
        );
    }
}

/// (owner → active jobs it holds, node → manifest rows it recorded), from the database.
async fn census(
    client: &tokio_postgres::Client,
) -> (
    std::collections::BTreeMap<String, i64>,
    std::collections::BTreeMap<String, i64>,
) {
    let held = client
        .query(
            "SELECT owner, count(*) FROM forager_jobs
             WHERE owner IS NOT NULL AND status = 'active' GROUP BY owner",
            &[],
        )
        .await
        .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        .unwrap_or_default();
    let rows = client
        .query(
            "SELECT node, count(*) FROM forager_manifest GROUP BY node",
            &[],
        )
        .await
        .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        .unwrap_or_default();
    (held, rows)
}

/// One number a query answers; 0 before a node created the tables.
async fn count(client: &tokio_postgres::Client, query: &str) -> i64 {
    client
        .query_one(query, &[])
        .await
        .map(|r| r.get(0))
        .unwrap_or(0)
}

/// Ask `check` every 100 ms until it is `Ok`; past `within`, fail with its
/// last answer and every node's log.
async fn until<F, Fut>(
    procs: &[crate::harness::daemon::DaemonProcess],
    names: &[&str],
    within: Duration,
    mut check: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + within;
    loop {
        let why = match check().await {
            Ok(()) => return,
            Err(why) => why,
        };
        if Instant::now() >= deadline {
            let logs = procs
                .iter()
                .zip(names)
                .map(|(p, n)| format!("--- {n} ---\n{}", p.log()))
                .collect::<Vec<_>>()
                .join("\n");
            panic!("{why} after {within:?}\n{logs}");
        }
        // How often the database is asked; it orders nothing.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Pages of each site of the three-node test (each links on and to one CSV
/// target): 2 requests a page.
const WEB_PAGES: usize = 10;
/// Jobs of the three-node test, one site (host) each.
const WEB_JOBS: usize = 60;

/// The issue's quality bar: 3 daemons, one PostgreSQL, one loopback web of
/// 60 sites and 60 jobs; n1 is killed (-9) mid-crawl, then n2 once it runs
/// jobs it took over from n1. Every job finishes with every target exactly
/// once (the database's manifest and the shared manifest.jsonl list each
/// site's targets once: what a one-node run of the site writes), no host
/// is asked twice within its delay whichever nodes asked, and a job
/// taken over redoes at most the requests of about one checkpoint interval
/// per take-over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn sixty_jobs_on_three_nodes_survive_two_kills_with_every_target_once() {
    use std::collections::{BTreeMap, BTreeSet};
    let pg = Postgres::start();
    let site = std::sync::Arc::new(Chain::with_pages(WEB_PAGES));
    let hosts: Vec<String> = (0..WEB_JOBS).map(|i| format!("w{i}.test")).collect();
    let server = serve(&site, &hosts).await;
    let port = server.port();
    let (root, shared) = root_with_shared_targets();
    let names = ["n1", "n2", "n3"];
    let nodes: Vec<TestNode> = names
        .iter()
        .map(|&n| TestNode::with(root.path(), n, 20, &pg, port, &shared, &hosts, "1s"))
        .collect();
    let delay = Duration::from_millis(300);
    let mut procs: Vec<_> = nodes.iter().map(TestNode::start).collect();
    // Each job file dropped into one node's folder, in turn.
    for (i, host) in hosts.iter().enumerate() {
        crate::harness::JobFile::new(&format!("web{i}"))
            .seed(format!("http://{host}:{port}/"))
            .strategy("bfs")
            .no_early_stop()
            .delay("300ms")
            .write(&nodes[i % 3].dir.join("jobs.d"));
    }
    let client = pg.client().await;
    let client = &client;
    // Mid-crawl: every node holds 20 jobs, and n1 has mirrored targets
    // (3 a job on average, of 10).
    let started = Instant::now();
    until(&procs, &names, Duration::from_secs(60), || async move {
        let (held, rows) = census(client).await;
        if names.iter().all(|n| held.get(*n) == Some(&20))
            && rows.get("n1").is_some_and(|&r| r >= 60)
        {
            return Ok(());
        }
        Err(format!(
            "the nodes did not take 20 jobs each ({held:?}, rows {rows:?})"
        ))
    })
    .await;
    procs[0].signal("KILL");
    assert!(
        procs[0].wait(Duration::from_secs(10)).is_some(),
        "n1 killed"
    );
    let first_kill = Instant::now();

    // n2 runs jobs it took over from n1 and mirrored their progress: kill it too.
    until(&procs, &names, Duration::from_secs(90), || async move {
        // A job at epoch 2 that n2 holds is one it took over from n1
        // (nobody releases here); a row of n2's says it crawls it.
        let taken = count(
            client,
            "SELECT count(*) FROM forager_jobs j
             WHERE j.owner = 'n2' AND j.status = 'active' AND j.epoch >= 2
               AND EXISTS (SELECT 1 FROM forager_manifest m
                           WHERE m.job = j.name AND m.node = 'n2')",
        )
        .await;
        if taken >= 1 {
            return Ok(());
        }
        let (held, _) = census(client).await;
        Err(format!("n2 runs none of n1's jobs (held: {held:?})"))
    })
    .await;
    procs[1].signal("KILL");
    assert!(
        procs[1].wait(Duration::from_secs(10)).is_some(),
        "n2 killed"
    );
    let second_kill = Instant::now();

    // n3 finishes everything.
    until(&procs, &names, Duration::from_secs(150), || async move {
        let done = count(
            client,
            "SELECT count(*) FROM forager_jobs WHERE status = 'done'",
        )
        .await;
        if done == WEB_JOBS as i64 {
            return Ok(());
        }
        Err(format!("{done} of {WEB_JOBS} jobs done"))
    })
    .await;
    let all_done = Instant::now();

    // Every target of every job exactly once, in the database and in the
    // shared folder's manifest.jsonl (which panics on a duplicate row).
    let log = server.log();
    let mut redone_total = 0usize;
    let mut takeovers_total = 0i64;
    let mut by_node: BTreeMap<String, usize> = BTreeMap::new();
    for (i, host) in hosts.iter().enumerate() {
        let job = format!("web{i}");
        let expected: BTreeSet<String> = (0..WEB_PAGES)
            .map(|n| format!("http://{host}:{port}/data/{n}.csv"))
            .collect();
        let rows = manifest_rows(client, &job).await;
        assert_eq!(rows.len(), WEB_PAGES, "{job}: no target twice: {rows:?}");
        let urls: BTreeSet<String> = rows.iter().map(|r| r.2.clone()).collect();
        assert_eq!(urls, expected, "{job}");
        for r in &rows {
            *by_node.entry(r.1.clone()).or_default() += 1;
        }
        let on_disk = crate::harness::sites::manifest_by_final_url(&shared.join(&job));
        assert_eq!(
            on_disk.keys().cloned().collect::<BTreeSet<_>>(),
            expected,
            "{job}"
        );
        // Requests asked again (robots.txt is asked by each node anew).
        let counts =
            forager_bench::sites::server::request_counts(&log, host, &axum::http::Method::GET);
        let redone: usize = counts
            .iter()
            .filter(|(path, _)| path.as_str() != "/robots.txt")
            .map(|(_, n)| n - 1)
            .sum();
        let epoch: i64 = client
            .query_one("SELECT epoch FROM forager_jobs WHERE name = $1", &[&job])
            .await
            .unwrap()
            .get(0);
        let takeovers = epoch - 1;
        // One checkpoint interval (1 s) holds at most 1 s / 300 ms + 1
        // requests of a job; one more may be in flight when its node dies.
        let per_takeover = (Duration::from_secs(1).as_millis() / delay.as_millis()) as usize + 2;
        assert!(
            redone <= takeovers as usize * per_takeover,
            "{job}: {redone} requests redone over {takeovers} take-over(s): {counts:?}"
        );
        redone_total += redone;
        takeovers_total += takeovers;
        // The server's own log: no two requests to a host within its delay.
        if let Some(gap) = forager_bench::sites::server::min_start_gap(&log, host) {
            assert!(
                gap + Duration::from_millis(30) >= delay,
                "{job}: two requests {gap:?} apart (delay {delay:?})"
            );
        }
    }
    assert!(takeovers_total >= 20, "{takeovers_total} take-overs");
    assert_eq!(
        by_node.keys().map(String::as_str).collect::<Vec<_>>(),
        names,
        "every node recorded targets: {by_node:?}"
    );
    eprintln!(
        "3 nodes, {WEB_JOBS} jobs, {} requests: kills at {:?} and {:?}, all done at {:?}; \
         {takeovers_total} take-overs, {redone_total} requests redone; rows by node {by_node:?}",
        log.len(),
        first_kill - started,
        second_kill - started,
        all_done - started,
    );
    procs[2].signal("TERM");
    assert!(
        procs[2].wait(Duration::from_secs(30)).is_some(),
        "n3 stops\n{}",
        procs[2].log()
    );
}

/// Draining a node (docs/cluster.md): SIGTERM makes it checkpoint its jobs
/// into the database and release their leases before it exits, so another
/// node takes them over at once, from where it stopped, without waiting
/// for a lease to lapse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_drained_node_hands_its_jobs_over_at_once() {
    let pg = Postgres::start();
    let site = std::sync::Arc::new(Chain::default());
    let server = serve(&site, &["chain.test".to_string()]).await;
    let (root, shared) = root_with_shared_targets();
    let n1 = TestNode::new(root.path(), "n1", 2, &pg, server.port(), &shared);
    let n2 = TestNode::new(root.path(), "n2", 2, &pg, server.port(), &shared);
    let mut p1 = n1.start();
    crate::harness::JobFile::new("chain")
        .seed(format!("http://chain.test:{}/", server.port()))
        .strategy("bfs")
        .no_early_stop()
        .delay("150ms")
        .write(&n1.dir.join("jobs.d"));
    let client = pg.client().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while manifest_rows(&client, "chain").await.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "no targets mirrored\n{}",
            p1.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut p2 = n2.start();
    p1.signal("TERM");
    assert!(
        p1.wait(Duration::from_secs(30)).is_some(),
        "n1 stops\n{}",
        p1.log()
    );
    let drained_at = Instant::now();
    // Released before n1 exited: no owner (or already n2), not n1's lapsing lease.
    let row = registry_row(&client, "chain").await;
    assert!(
        matches!(&row, Some((s, owner)) if s == "active" && owner.as_deref() != Some("n1")),
        "{row:?}\n{}",
        p1.log()
    );
    let rows_at_drain = manifest_rows(&client, "chain").await.len();
    let deadline = Instant::now() + Duration::from_secs(120);
    while registry_row(&client, "chain").await.map(|r| r.0) != Some("done".into()) {
        assert!(
            Instant::now() < deadline,
            "the job did not finish on n2\n{}",
            p2.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let n2_log = p2.log();
    assert!(
        n2_log.contains("job restored from its checkpoint in the cluster database"),
        "{n2_log}"
    );
    // Every target once; n1's rows were all written before it exited.
    let rows = manifest_rows(&client, "chain").await;
    assert_eq!(rows.len(), TAKEOVER_PAGES, "{rows:?}");
    let by_n1 = rows.iter().filter(|r| r.1 == "n1").count();
    assert_eq!(by_n1, rows_at_drain, "{rows:?}");
    let log = server.log();
    let counts =
        forager_bench::sites::server::request_counts(&log, "chain.test", &axum::http::Method::GET);
    let redone: Vec<_> = counts
        .iter()
        .filter(|(path, n)| path.as_str() != "/robots.txt" && **n > 1)
        .collect();
    // At most the one request in flight when n1 stopped (cancelled, its answer unread).
    assert!(
        redone.iter().map(|(_, n)| **n - 1).sum::<usize>() <= 1,
        "a drain redoes nothing but a request in flight: {redone:?}"
    );
    eprintln!(
        "drain: {by_n1} targets on n1, the rest on n2, done {:?} after n1 exited",
        drained_at.elapsed()
    );
    p2.signal("TERM");
    assert!(
        p2.wait(Duration::from_secs(30)).is_some(),
        "n2 stops\n{}",
        p2.log()
    );
}

/// A test's root folder and, in it, the targets folder every node mounts.
fn root_with_shared_targets() -> (tempfile::TempDir, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let shared = root.path().join("shared-targets");
    std::fs::create_dir(&shared).unwrap();
    (root, shared)
}

/// A loopback server answering `site` on every host of `hosts`.
async fn serve(site: &std::sync::Arc<Chain>, hosts: &[String]) -> forager_bench::sites::SiteServer {
    forager_bench::sites::SiteServer::start(
        hosts
            .iter()
            .map(|h| {
                (
                    h.clone(),
                    site.clone() as std::sync::Arc<dyn forager_bench::sites::Site>,
                )
            })
            .collect(),
    )
    .await
    .unwrap()
}

/// A loopback web of `n` chain sites (`c0.test`…), one per job.
async fn chain_web(n: usize) -> (forager_bench::sites::SiteServer, Vec<String>) {
    let site = std::sync::Arc::new(Chain::default());
    let hosts: Vec<String> = (0..n).map(|i| format!("c{i}.test")).collect();
    let server = serve(&site, &hosts).await;
    (server, hosts)
}

/// Issue 38 point 7: any node's `forager status`, `/status` and dashboard
/// show every job of the cluster with the node that runs it, and every
/// node with its heartbeat; its `/metrics` has its lease and database
/// numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn any_node_shows_every_job_of_the_cluster_with_its_node() {
    use std::collections::{BTreeMap, BTreeSet};
    let pg = Postgres::start();
    let (server, hosts) = chain_web(6).await;
    let port = server.port();
    let (root, shared) = root_with_shared_targets();
    let names = ["n1", "n2", "n3"];
    let nodes: Vec<TestNode> = names
        .iter()
        .map(|&n| TestNode::with(root.path(), n, 2, &pg, port, &shared, &hosts, "1s"))
        .collect();
    let procs: Vec<_> = nodes.iter().map(TestNode::start).collect();
    for (i, host) in hosts.iter().enumerate() {
        crate::harness::JobFile::new(&format!("job{i}"))
            .seed(format!("http://{host}:{port}/"))
            .strategy("bfs")
            .no_early_stop()
            .delay("300ms")
            .write(&nodes[i % 3].dir.join("jobs.d"));
    }
    let client = pg.client().await;
    let client = &client;
    until(&procs, &names, Duration::from_secs(60), || async move {
        let (held, _) = census(client).await;
        if names.iter().all(|n| held.get(*n) == Some(&2)) {
            return Ok(());
        }
        Err(format!("the nodes did not take 2 jobs each ({held:?})"))
    })
    .await;

    // n1's status, as JSON through the binary: all six jobs, by node.
    let out = nodes[0].cli(&["status", "--json"]).await;
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cluster = &report["cluster"];
    assert_eq!(cluster["node"], "n1", "{report}");
    assert!(cluster["error"].is_null(), "{report}");
    let by_node: BTreeMap<String, BTreeSet<String>> = cluster["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .fold(BTreeMap::new(), |mut m, j| {
            m.entry(j["node"].as_str().unwrap_or("-").to_string())
                .or_default()
                .insert(j["name"].as_str().unwrap_or("").to_string());
            m
        });
    assert_eq!(
        by_node.keys().map(String::as_str).collect::<Vec<_>>(),
        names,
        "{report}"
    );
    assert!(by_node.values().all(|jobs| jobs.len() == 2), "{by_node:?}");
    // The local table lists n1's own two jobs only: the rest is the cluster's view.
    assert_eq!(report["jobs"].as_array().map(Vec::len), Some(2), "{report}");
    let live: Vec<(&str, &str)> = cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["name"].as_str().unwrap(), n["state"].as_str().unwrap()))
        .collect();
    assert_eq!(live, [("n1", "live"), ("n2", "live"), ("n3", "live")]);
    assert!(cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["heartbeat_age_secs"].as_f64().is_some_and(|a| a < 3.0)));

    // The text of `forager status`: a line per job of n2's.
    let out = nodes[0].cli(&["status"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cluster (this node: n1):"), "{text}");
    for job in &by_node["n2"] {
        assert!(
            text.lines().any(|l| l
                .split_whitespace()
                .take(3)
                .eq([job.as_str(), "active", "n2"])),
            "{job} on n2\n{text}"
        );
    }

    // The dashboard of n3 lists the six jobs and the three nodes.
    let (code, html) = nodes[2].get("/").await;
    assert_eq!(code, 200);
    assert_eq!(
        html.matches("<tr class=\"cluster-job\">").count(),
        6,
        "{html}"
    );
    assert_eq!(html.matches("<tr class=\"node\">").count(), 3, "{html}");

    // n2's metrics: its two leases, acquired, and database round trips timed.
    let (code, metrics) = nodes[1].get("/metrics").await;
    assert_eq!(code, 200);
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name}\n{metrics}"))
    };
    assert_eq!(value("forager_cluster_leases_held"), 2.0);
    assert!(value("forager_cluster_leases_acquired_total") >= 2.0);
    assert_eq!(value("forager_cluster_takeovers_total"), 0.0);
    assert_eq!(value("forager_cluster_lease_renew_failures_total"), 0.0);
    // At least its beat, its acquisition and a checkpoint read per job:
    // the status may be asked within a second of the start.
    assert!(value("forager_cluster_database_latency_seconds_count") >= 4.0);
    assert!(metrics.contains("forager_cluster_database_latency_seconds_bucket{le=\"0.001\"}"));
    stop_all(procs, &names);
}

/// `forager drain` (docs/cluster.md): the node's jobs checkpoint and are
/// released to the other node at once, the node stays up and takes no new
/// job until `forager drain --cancel`; the route needs the admin token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn forager_drain_hands_a_nodes_jobs_over_and_keeps_it_up() {
    let pg = Postgres::start();
    let (server, hosts) = chain_web(3).await;
    let port = server.port();
    let (root, shared) = root_with_shared_targets();
    let names = ["n1", "n2"];
    let nodes: Vec<TestNode> = names
        .iter()
        .map(|&n| TestNode::with(root.path(), n, 2, &pg, port, &shared, &hosts, "1s"))
        .collect();
    let job = |i: usize, to: &TestNode| {
        crate::harness::JobFile::new(&format!("job{i}"))
            .seed(format!("http://{}:{port}/", hosts[i]))
            .strategy("bfs")
            .no_early_stop()
            .delay("150ms")
            .write(&to.dir.join("jobs.d"));
    };
    let mut procs = vec![nodes[0].start()];
    job(0, &nodes[0]);
    job(1, &nodes[0]);
    let client = pg.client().await;
    let client = &client;
    until(&procs, &names, Duration::from_secs(60), || async move {
        let (held, rows) = census(client).await;
        if held.get("n1") == Some(&2) && rows.get("n1").is_some_and(|&r| r >= 4) {
            return Ok(());
        }
        Err(format!(
            "n1 did not take and crawl both jobs ({held:?}, {rows:?})"
        ))
    })
    .await;
    procs.push(nodes[1].start());

    // Without the token: refused.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = http
        .post(format!("http://{}/drain", nodes[0].admin))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);

    let out = nodes[0].cli(&["drain"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}\n{}", procs[0].log());
    assert!(text.contains("node n1 drains: 2 running jobs"), "{text}");
    assert!(
        text.contains("drained: this node holds no job lease"),
        "{text}"
    );
    // Released, not lapsed: nobody's or n2's at once, and n1 is up.
    for j in ["job0", "job1"] {
        let row = registry_row(client, j).await;
        assert!(
            matches!(&row, Some((s, owner)) if s == "active" && owner.as_deref() != Some("n1")),
            "{j}: {row:?}"
        );
    }
    assert!(procs[0].running(), "n1 stays up\n{}", procs[0].log());
    let (_, status) = nodes[0].get("/status").await;
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let n1 = status["cluster"]["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["name"] == "n1").cloned());
    assert_eq!(
        n1.map(|n| n["state"].clone()),
        Some("draining".into()),
        "{status}"
    );

    // A job dropped into the drained node's folder runs on n2.
    job(2, &nodes[0]);
    until(&procs, &names, Duration::from_secs(120), || async move {
        let done = count(
            client,
            "SELECT count(*) FROM forager_jobs WHERE status = 'done'",
        )
        .await;
        if done == 3 {
            return Ok(());
        }
        Err(format!("{done} of 3 jobs done"))
    })
    .await;
    let rows = manifest_rows(client, "job2").await;
    assert_eq!(rows.len(), TAKEOVER_PAGES);
    assert!(rows.iter().all(|r| r.1 == "n2"), "{rows:?}");
    let mut recorders = std::collections::BTreeSet::new();
    for j in ["job0", "job1"] {
        let rows = manifest_rows(client, j).await;
        assert_eq!(rows.len(), TAKEOVER_PAGES, "{j}: every target once");
        recorders.extend(rows.into_iter().map(|r| r.1));
    }
    // Begun on n1, finished on n2.
    assert_eq!(recorders.into_iter().collect::<Vec<_>>(), names);
    let n2_log = procs[1].log();
    assert!(
        n2_log.contains("job restored from its checkpoint in the cluster database"),
        "{n2_log}"
    );

    // Cancelled: n1 is live again.
    let out = nodes[0].cli(&["drain", "--cancel"]).await;
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("node n1 takes jobs again"));
    let (_, status) = nodes[0].get("/status").await;
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let n1 = status["cluster"]["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["name"] == "n1").cloned());
    assert_eq!(
        n1.map(|n| n["state"].clone()),
        Some("live".into()),
        "{status}"
    );
    stop_all(procs, &names);
}

/// Lines of a job's `manifest.jsonl` in the shared folder, and the files
/// set aside by reruns (`manifest.superseded-*.jsonl`).
fn manifest_files(shared: &std::path::Path, job: &str) -> (Vec<String>, usize) {
    let dir = shared.join(job);
    let lines = std::fs::read_to_string(dir.join("manifest.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["final_url"].as_str().unwrap_or("").to_string()
        })
        .collect();
    let aside = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("manifest.superseded-")
                })
                .count()
        })
        .unwrap_or(0);
    (lines, aside)
}

/// Issue 38: `forager pause|resume|rerun JOB` and `GET /jobs/NAME` on any
/// node act on (and show) the job wherever it runs. Two daemons, one job
/// each: the node that does not run job0 shows it from the registry, then
/// pauses it — its node checkpoints and releases it, and no node takes it
/// for longer than a lease; `POST /jobs/job0/resume` on a node (with the
/// token) lets it finish with every target once. job1 is rerun while its
/// node runs it (its node sets its manifest aside and wipes it; it runs
/// again from its seeds), then job0 once done (wiped at once). Every
/// target once in the database and in manifest.jsonl after each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn pause_resume_and_rerun_act_on_a_job_wherever_it_runs() {
    use std::collections::BTreeSet;
    let pg = Postgres::start();
    let (server, hosts) = chain_web(2).await;
    let port = server.port();
    let (root, shared) = root_with_shared_targets();
    let names = ["n1", "n2"];
    let nodes: Vec<TestNode> = names
        .iter()
        .map(|&n| TestNode::with(root.path(), n, 2, &pg, port, &shared, &hosts, "1s"))
        .collect();
    let procs: Vec<_> = nodes.iter().map(TestNode::start).collect();
    // job1 runs longer (about 18 s), so that the rerun meets it running.
    for (i, host) in hosts.iter().enumerate() {
        crate::harness::JobFile::new(&format!("job{i}"))
            .seed(format!("http://{host}:{port}/"))
            .strategy("bfs")
            .no_early_stop()
            .delay(["150ms", "300ms"][i])
            .write(&nodes[i].dir.join("jobs.d"));
    }
    let expected = |i: usize| -> BTreeSet<String> {
        (0..TAKEOVER_PAGES)
            .map(|n| format!("http://{}:{port}/data/{n}.csv", hosts[i]))
            .collect()
    };
    let client = pg.client().await;
    let client = &client;
    let procs_ = &procs;
    until(procs_, &names, Duration::from_secs(60), || async move {
        let a = manifest_rows(client, "job0").await.len();
        let b = manifest_rows(client, "job1").await.len();
        let row0 = registry_row(client, "job0").await;
        let row1 = registry_row(client, "job1").await;
        if a >= 2
            && b >= 2
            && row0.is_some_and(|r| r.1.is_some())
            && row1.is_some_and(|r| r.1.is_some())
        {
            return Ok(());
        }
        Err(format!("both jobs not running with targets ({a}, {b})"))
    })
    .await;
    let holder = |job: &'static str| async move {
        registry_row(client, job)
            .await
            .and_then(|r| r.1)
            .unwrap_or_default()
    };
    let h0 = holder("job0").await;
    let (runs0, other0) = if h0 == "n1" {
        (&nodes[0], &nodes[1])
    } else {
        (&nodes[1], &nodes[0])
    };

    // The node that does not run job0 shows it, from the registry.
    let (code, body) = other0.get("/jobs/job0").await;
    assert_eq!(code, 200, "{body}");
    let j: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(j["state"], "running", "{j}");
    assert_eq!(j["cluster"]["node"], h0.as_str(), "{j}");
    assert!(
        j["counters"]["targets"].as_u64().is_some_and(|t| t >= 2),
        "{j}"
    );
    let (code, body) = other0.get("/jobs/nosuch").await;
    assert_eq!(code, 404, "{body}");

    // Paused from the other node: its node checkpoints and lets it go.
    let out = other0.cli(&["pause", "job0"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains(&format!("job job0 pauses: node {h0}")),
        "{text}"
    );
    until(procs_, &names, Duration::from_secs(30), || async move {
        match registry_row(client, "job0").await {
            Some((s, None)) if s == "paused" => Ok(()),
            row => Err(format!("job0 not paused and released: {row:?}")),
        }
    })
    .await;
    let paused_rows = manifest_rows(client, "job0").await.len();
    assert!(paused_rows < TAKEOVER_PAGES, "paused mid-crawl");
    let (_, body) = runs0.get("/jobs/job0").await;
    let j: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(j["state"], "paused", "{j}");
    // job1 rerun while it runs, asked of the node that does not run it
    // (or of its own: what matters is that its holder obeys).
    let h1 = holder("job1").await;
    let asker = if h1 == "n1" { &nodes[1] } else { &nodes[0] };
    let before = manifest_rows(client, "job1").await.len();
    let out = asker.cli(&["rerun", "job1"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains(&format!("job job1 runs again from its seeds: node {h1}")),
        "{text}"
    );

    // Longer than a lease and two rounds of both nodes: nobody takes it.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        registry_row(client, "job0").await,
        Some(("paused".to_string(), None))
    );
    assert_eq!(manifest_rows(client, "job0").await.len(), paused_rows);
    // Resuming a job that is not paused says why.
    let out = runs0.cli(&["resume", "job1"]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is active: only a paused job resumes"),
        "{out:?}"
    );

    // Resumed through the admin API of the node that ran it (token needed).
    let token = std::fs::read_to_string(runs0.dir.join("state").join("admin.token")).unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = http
        .post(format!("http://{}/jobs/job0/resume", runs0.admin))
        .bearer_auth(token.trim())
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text().await);

    until(procs_, &names, Duration::from_secs(120), || async move {
        let done = count(
            client,
            "SELECT count(*) FROM forager_jobs WHERE status = 'done'",
        )
        .await;
        if done == 2 {
            return Ok(());
        }
        Err(format!(
            "{done} of 2 jobs done after the pause and the rerun"
        ))
    })
    .await;
    for i in 0..2 {
        let job = format!("job{i}");
        let rows = manifest_rows(client, &job).await;
        assert_eq!(
            rows.len(),
            TAKEOVER_PAGES,
            "{job}: every target once: {rows:?}"
        );
        let urls: BTreeSet<String> = rows.iter().map(|r| r.2.clone()).collect();
        assert_eq!(urls, expected(i), "{job}");
        let (lines, aside) = manifest_files(&shared, &job);
        assert_eq!(
            lines.len(),
            TAKEOVER_PAGES,
            "{job}: manifest.jsonl once each"
        );
        assert_eq!(lines.into_iter().collect::<BTreeSet<_>>(), expected(i));
        assert_eq!(aside, i, "{job}: manifests set aside by reruns");
    }
    let logs: String = procs.iter().map(|p| p.log()).collect();
    assert!(logs.contains("job reset for a rerun"), "{logs}");
    assert!(before >= 2);

    // job0, done, rerun: wiped at once, and it runs again.
    let out = nodes[0].cli(&["rerun", "job0"]).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("its state in the cluster database is deleted"),
        "{text}"
    );
    until(procs_, &names, Duration::from_secs(120), || async move {
        match registry_row(client, "job0").await {
            Some((s, None)) if s == "done" => Ok(()),
            row => Err(format!("job0 not done again: {row:?}")),
        }
    })
    .await;
    let rows = manifest_rows(client, "job0").await;
    assert_eq!(rows.len(), TAKEOVER_PAGES, "{rows:?}");
    let (lines, aside) = manifest_files(&shared, "job0");
    assert_eq!(lines.len(), TAKEOVER_PAGES);
    assert_eq!(aside, 1, "the first run's manifest, set aside");

    stop_all(procs, &names);
}

/// Issue 38, docs/cluster.md *A job file edited while it runs*: the new
/// text is registered (another SHA-256), the node that runs the job sees
/// it at its next round, stops the run at a checkpoint and releases the
/// lease; the job is leased again with the new text and goes on from
/// that checkpoint: every target once, and the registry ends with the new
/// text, done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_postgres),
    ignore = "needs PostgreSQL (apt-get install postgresql)"
)]
async fn a_job_file_edited_while_it_runs_goes_on_from_its_checkpoint_with_the_new_text() {
    use std::collections::BTreeSet;
    let pg = Postgres::start();
    let (server, hosts) = chain_web(1).await;
    let port = server.port();
    let (root, shared) = root_with_shared_targets();
    let names = ["n1"];
    let node = TestNode::with(root.path(), "n1", 2, &pg, port, &shared, &hosts, "1s");
    let procs = vec![node.start()];
    let job = |delay: &str| {
        crate::harness::JobFile::new("job0")
            .seed(format!("http://{}:{port}/", hosts[0]))
            .strategy("bfs")
            .no_early_stop()
            .delay(delay)
            .write(&node.dir.join("jobs.d"));
    };
    job("150ms");
    let client = pg.client().await;
    let client = &client;
    let procs_ = &procs;
    until(procs_, &names, Duration::from_secs(60), || async move {
        let rows = manifest_rows(client, "job0").await.len();
        if rows >= 3 {
            return Ok(());
        }
        Err(format!("job0 has {rows} targets in the database"))
    })
    .await;
    let epoch = count(client, "SELECT epoch FROM forager_jobs WHERE name = 'job0'").await;
    job("100ms");
    until(procs_, &names, Duration::from_secs(120), || async move {
        let row = registry_row(client, "job0").await;
        let new_text = count(
            client,
            "SELECT count(*) FROM forager_jobs WHERE name = 'job0' AND spec LIKE '%100ms%'",
        )
        .await;
        match row {
            Some((s, None)) if s == "done" && new_text == 1 => Ok(()),
            row => Err(format!(
                "job0 not done with its new text: {row:?}, {new_text}"
            )),
        }
    })
    .await;
    let later = count(client, "SELECT epoch FROM forager_jobs WHERE name = 'job0'").await;
    assert!(
        later > epoch,
        "leased again after the edit: {epoch} -> {later}"
    );
    let expected: BTreeSet<String> = (0..TAKEOVER_PAGES)
        .map(|n| format!("http://{}:{port}/data/{n}.csv", hosts[0]))
        .collect();
    let rows = manifest_rows(client, "job0").await;
    assert_eq!(rows.len(), TAKEOVER_PAGES, "every target once: {rows:?}");
    assert_eq!(
        rows.iter().map(|r| r.2.clone()).collect::<BTreeSet<_>>(),
        expected
    );
    let (lines, aside) = manifest_files(&shared, "job0");
    assert_eq!(lines.len(), TAKEOVER_PAGES);
    assert_eq!(lines.into_iter().collect::<BTreeSet<_>>(), expected);
    assert_eq!(aside, 0, "an edit is no rerun");
    let log = procs[0].log();
    assert!(log.contains("Changed"), "{log}");
    assert!(
        log.contains("job restored from its checkpoint in the cluster database"),
        "{log}"
    );
    stop_all(procs, &names);
}

/// SIGTERM to every node, then each must exit within 30 s.
fn stop_all(procs: Vec<crate::harness::daemon::DaemonProcess>, names: &[&str]) {
    for p in &procs {
        p.signal("TERM");
    }
    for (mut p, n) in procs.into_iter().zip(names) {
        assert!(
            p.wait(Duration::from_secs(30)).is_some(),
            "{n} stops\n{}",
            p.log()
        );
    }
}
