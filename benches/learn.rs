//! CPU cost of the learners and of the `sb` strategy (issue 3 budgets).
//!
//! - `actions/*`: tag-path clustering with 100 000 actions, per page of 200
//!   links (budget: < 1 ms per page).
//! - `pipeline/*`: everything the job core, `learn` and `strategy` do for one
//!   fetched page of 200 new links (pop, label, 200 × admit — seen set,
//!   scope, traps — classify + cluster + push, HEADs and fetch-now links
//!   answered, reward), driven through the engine's real `JobCore` by
//!   `engine::replay` as the runner drives it with one step in flight, the
//!   network replaced by the links' true labels (budget: ≤ 0.3 ms per page).
//!
//! Inputs are synthetic but shaped like real pages: tag paths repeat a page
//! template with a few new paths per page; URLs mix pages and data files.
//!
//! Before criterion's figure, `pipeline` prints the *thread CPU time* per
//! page over [`CPU_PAGES`] pages (and, apart, the core's share of the
//! checkpoints those pages needed): on a loaded machine wall-clock samples
//! spread by ±25 %, CPU time far less, so compare builds with it, runs
//! interleaved. `LEARN_CPU_ONLY=1 cargo bench --bench learn` prints only
//! that figure (no actions index, no criterion sampling).

mod common;

use common::{random_path, thread_cpu};
use criterion::{criterion_group, BatchSize, Criterion};
use forager_core::config::JobSpec;
use forager_core::extract::{ExtractedLink, PageLinks, RejectCounts};
use forager_core::job::replay::{Answers, Replay};
use forager_core::learn::{ActionConfig, ActionIndex};
use forager_core::link::{Link, TagPath};
use forager_core::mime::Label;
use forager_core::strategy::StrategyKind;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use std::time::{Duration, Instant};
use url::Url;

const ACTIONS: usize = 100_000;
const LINKS_PER_PAGE: usize = 200;
/// Distinct tag paths on one page (menus, lists, footers...).
const PATHS_PER_PAGE: usize = 25;
/// Of those, never seen before on a typical page.
const NEW_PATHS_PER_PAGE: usize = 3;

/// An index with `ACTIONS` actions, and the paths that built it.
fn index_with_actions(rng: &mut Xoshiro256PlusPlus) -> (ActionIndex, Vec<String>) {
    let mut index = ActionIndex::new(ActionConfig::default());
    let mut paths = Vec::new();
    while index.len() < ACTIONS {
        assert_eq!(
            index.overflowed(),
            0,
            "the learner's caps stop the index below {ACTIONS} actions"
        );
        let p = random_path(rng);
        index.assign(&p);
        paths.push(p);
    }
    (index, paths)
}

/// One page: 200 links over `PATHS_PER_PAGE` paths, `new` of them never seen.
fn page_paths(rng: &mut Xoshiro256PlusPlus, known: &[String], new: usize) -> Vec<String> {
    let mut distinct: Vec<String> = (0..PATHS_PER_PAGE - new)
        .map(|_| known[rng.random_range(0..known.len())].clone())
        .collect();
    distinct.extend((0..new).map(|_| random_path(rng)));
    (0..LINKS_PER_PAGE)
        .map(|i| distinct[i % distinct.len()].clone())
        .collect()
}

fn bench_actions(c: &mut Criterion) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let started = Instant::now();
    let (index, known) = index_with_actions(&mut rng);
    eprintln!(
        "built {} actions from {} paths in {:.2?}",
        index.len(),
        known.len(),
        started.elapsed()
    );
    let mut group = c.benchmark_group("actions");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(8));

    // Typical page: 200 links, 25 paths, 3 of them never seen (fresh ones for
    // every iteration, generated outside the timing; the index grows slowly).
    let mut typical = index.clone();
    let mut page_rng = Xoshiro256PlusPlus::seed_from_u64(99);
    group.bench_function("page_200_links_3_new_paths_100k_actions", |b| {
        b.iter_batched(
            || page_paths(&mut page_rng, &known, NEW_PATHS_PER_PAGE),
            |page| {
                for p in &page {
                    black_box(typical.assign(p));
                }
            },
            BatchSize::SmallInput,
        )
    });
    eprintln!("typical pages grew the index to {} actions", typical.len());

    // Only memo hits: a page whose paths were all seen before.
    let known_pages: Vec<Vec<String>> = (0..256).map(|_| page_paths(&mut rng, &known, 0)).collect();
    let mut warm = index.clone();
    let mut next = 0;
    group.bench_function("page_200_links_known_paths_100k_actions", |b| {
        b.iter(|| {
            let page = &known_pages[next % known_pages.len()];
            next += 1;
            for p in page {
                black_box(warm.assign(p));
            }
        })
    });

    // Worst case, per new path: vectorise + exact nearest-centroid search (read-only).
    let probes: Vec<String> = (0..4096).map(|_| random_path(&mut rng)).collect();
    let mut search = index.clone();
    let mut next = 0;
    let before = search.search_stats();
    group.bench_function("nearest_one_new_path_100k_actions", |b| {
        b.iter(|| {
            let p = &probes[next % probes.len()];
            next += 1;
            black_box(search.nearest_path(p))
        })
    });
    let after = search.search_stats();
    let searches = (after.searches - before.searches).max(1) as f64;
    eprintln!(
        "nearest: per search {:.0} postings accumulated, {:.1} of {} centroids verified",
        (after.accumulated - before.accumulated) as f64 / searches,
        (after.scored - before.scored) as f64 / searches,
        search.len()
    );
    group.finish();
}

/// Links shaped like a statistics site's pages: page links and data files
/// under a page template's tag paths (a few under paths of their own). The
/// kinds and paths come from a pool walked in a cycle, as before the bench
/// drove the job core, so that the learner sees the same paths; the URLs
/// carry a running number, because the job's seen set drops a repeated URL.
struct Pages {
    /// (data file?, tag path) of each link.
    pool: Vec<(bool, TagPath)>,
    cursor: usize,
    made: u64,
}

/// Links of the pool the warm-up takes; the cycle restarts after them.
const WARM_LINKS: usize = 40_000;

impl Pages {
    fn new(rng: &mut Xoshiro256PlusPlus, count: usize) -> Pages {
        let templates: Vec<String> = (0..40).map(|_| random_path(rng)).collect();
        let pool = (0..count)
            .map(|_| {
                let target = rng.random_bool(0.1);
                let path = if rng.random_bool(0.02) {
                    random_path(rng)
                } else {
                    templates[rng.random_range(0..templates.len())].clone()
                };
                (target, TagPath::new(path))
            })
            .collect();
        Pages {
            pool,
            cursor: 0,
            made: 0,
        }
    }

    /// The links of one page, as link extraction hands them to the core.
    fn next_page(&mut self) -> PageLinks {
        if self.cursor + LINKS_PER_PAGE > self.pool.len() {
            self.cursor = WARM_LINKS;
        }
        let links = self.pool[self.cursor..self.cursor + LINKS_PER_PAGE]
            .iter()
            .map(|(target, path)| {
                let i = self.made;
                self.made += 1;
                let url = if *target {
                    format!("https://stats.example.org/data/{}/table-{i}.csv", i % 97)
                } else {
                    format!(
                        "https://stats.example.org/section/{}/page-{i}.html?lang=en",
                        i % 53
                    )
                };
                ExtractedLink {
                    url: Url::parse(&url).expect("generated URL parses"),
                    tag_path: path.clone(),
                    anchor: String::new(),
                }
            })
            .collect();
        self.cursor += LINKS_PER_PAGE;
        PageLinks {
            links,
            base: Url::parse(SEED).expect("seed URL parses"),
            structured_data: false,
            structured: None,
            cut: None,
            rejected: RejectCounts::default(),
        }
    }
}

const SEED: &str = "https://stats.example.org/";

/// What a link really is: the site's data files are CSV.
fn truth(url: &Url) -> Label {
    if url.path().ends_with(".csv") {
        Label::Target
    } else {
        Label::Html
    }
}

/// The site the pipeline crawls: every link answers its true label at once,
/// and the page fetched next has the links [`Pages`] made for it (a page
/// fetched within a step, a mispredicted fetch-now link, has none).
struct Feed {
    next: Option<PageLinks>,
}

impl Answers for Feed {
    fn label(&mut self, url: &Url) -> Option<Label> {
        Some(truth(url))
    }

    fn links(&mut self, page: &Link) -> PageLinks {
        self.next.take().unwrap_or_else(|| PageLinks {
            links: Vec::new(),
            base: page.url.clone(),
            structured_data: false,
            structured: None,
            cut: None,
            rejected: RejectCounts::default(),
        })
    }

    fn target(&mut self, _link: &Link, _requests: u64) -> bool {
        true
    }
}

/// One job driven through the engine's real [`JobCore`] by [`Replay`], the
/// runner's protocol with the network replaced by the links' true labels.
struct Crawl {
    replay: Replay,
    feed: Feed,
    pages: u64,
}

/// Pages between two (untimed) checkpoints, which move the frontier's
/// records out of the core as a real checkpoint does.
const PAGES_PER_CHECKPOINT: u64 = 1000;

impl Crawl {
    fn new() -> Crawl {
        let mut spec = JobSpec::new("learn-bench", vec![Url::parse(SEED).expect("seed URL")]);
        spec.strategy = StrategyKind::Sb;
        spec.seed = 1;
        spec.budget.requests = 0;
        spec.budget.bytes = 0;
        spec.budget.early_stop = false;
        let strategy = spec.strategy.build(spec.seed);
        Crawl {
            replay: Replay::new(spec, strategy),
            feed: Feed { next: None },
            pages: 0,
        }
    }

    /// Steps until a page took `links` (steps of popped data files included).
    fn page(&mut self, links: PageLinks) {
        self.feed.next = Some(links);
        while self.feed.next.is_some() {
            self.replay
                .step(&mut self.feed)
                .expect("the frontier never empties: every page brings new links");
        }
        self.pages += 1;
    }

    /// Commit what the pages added, when one is due.
    fn maybe_checkpoint(&mut self) {
        if self.pages % PAGES_PER_CHECKPOINT == 0 {
            self.replay.checkpoint();
        }
    }
}

/// Pages the CPU-time figure is taken over (after the warm-up).
const CPU_PAGES: u64 = 3000;

/// A crawl warmed up as the benchmark starts it: classifier trained, a few
/// hundred pages of learning.
fn warmed_up() -> (Pages, Crawl) {
    let mut pages = Pages::new(&mut Xoshiro256PlusPlus::seed_from_u64(11), 200_000);
    let mut crawl = Crawl::new();
    for _ in 0..WARM_LINKS / LINKS_PER_PAGE {
        let links = pages.next_page();
        crawl.page(links);
        crawl.maybe_checkpoint();
    }
    (pages, crawl)
}

/// Thread CPU time per page over [`CPU_PAGES`] pages, and apart the core's
/// part of the checkpoints due meanwhile ([`Replay::take_checkpoint`]: what
/// the job thread pays; the replay's in-memory commit is not timed).
fn cpu_per_page(pages: &mut Pages, crawl: &mut Crawl) {
    let mut spent = Duration::ZERO;
    let mut checkpoints = Duration::ZERO;
    for _ in 0..CPU_PAGES {
        let links = pages.next_page();
        let started = thread_cpu();
        crawl.page(links);
        spent += thread_cpu() - started;
        if crawl.pages % PAGES_PER_CHECKPOINT == 0 {
            let started = thread_cpu();
            let taken = crawl.replay.take_checkpoint(0);
            checkpoints += thread_cpu() - started;
            let committed: Result<(), std::convert::Infallible> =
                crawl.replay.commit_with(taken, |_| Ok(()));
            if let Err(never) = committed {
                match never {}
            }
        }
    }
    let per_page = |d: Duration| d.as_secs_f64() * 1e3 / CPU_PAGES as f64;
    eprintln!(
        "pipeline/sb_page_200_new_links: {:.3} ms of thread CPU per page over {CPU_PAGES} pages, \
         + {:.3} ms per page of checkpoint takes",
        per_page(spent),
        per_page(checkpoints),
    );
}

fn bench_pipeline(c: &mut Criterion) {
    let (mut pages, mut crawl) = warmed_up();
    cpu_per_page(&mut pages, &mut crawl);
    let mut group = c.benchmark_group("pipeline");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("sb_page_200_new_links", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let links = pages.next_page();
                let started = Instant::now();
                crawl.page(links);
                spent += started.elapsed();
                crawl.maybe_checkpoint();
            }
            spent
        })
    });
    group.finish();
    let core = &crawl.replay.core;
    let stats = core.strategy_stats();
    let counters = core.counters();
    eprintln!(
        "pipeline state: {} pages, {} actions, frontier {}, classifier accuracy {:?} over {} predictions; \
         links dropped {}, out of scope {}, trap {}",
        crawl.pages,
        stats.actions,
        core.frontier_len(),
        stats.classifier_accuracy(),
        stats.classifier_predictions,
        counters.dropped,
        counters.out_of_scope,
        counters.trap_links,
    );
    // Every link must reach the strategy, or the bench measures less than a page's work.
    assert_eq!(
        (counters.out_of_scope, counters.trap_links, counters.blocked),
        (0, 0, 0),
        "links stopped before the strategy"
    );
}

criterion_group!(benches, bench_actions, bench_pipeline);

fn main() {
    if std::env::var_os("LEARN_CPU_ONLY").is_some() {
        let (mut pages, mut crawl) = warmed_up();
        cpu_per_page(&mut pages, &mut crawl);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
