//! CPU cost of the learners and of the `sb` strategy (issue 3 budgets).
//!
//! - `actions/*`: tag-path clustering with 100 000 actions, per page of 200
//!   links (budget: < 1 ms per page).
//! - `pipeline/*`: everything `learn` + `strategy` do for one fetched page of
//!   200 new links (pop, label, reward, 200 × classify + cluster + push;
//!   budget: ≤ 0.3 ms per page).
//!
//! Inputs are synthetic but shaped like real pages: tag paths repeat a page
//! template with a few new paths per page; URLs mix pages and data files.

mod common;

use common::random_path;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use forager::learn::{ActionConfig, ActionIndex};
use forager::link::{Link, LinkId, TagPath};
use forager::mime::Label;
use forager::strategy::{LabelSource, SleepingBandit, Strategy, Triage};
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

/// A pool of links shaped like a statistics site: pages and data files.
fn link_pool(rng: &mut Xoshiro256PlusPlus, count: usize) -> Vec<(Link, Label)> {
    let templates: Vec<String> = (0..40).map(|_| random_path(rng)).collect();
    (0..count)
        .map(|i| {
            let target = rng.random_bool(0.1);
            let url = if target {
                format!("https://stats.example.org/data/{}/table-{i}.csv", i % 97)
            } else {
                format!(
                    "https://stats.example.org/section/{}/page-{i}.html?lang=en",
                    i % 53
                )
            };
            let path = if rng.random_bool(0.02) {
                random_path(rng)
            } else {
                templates[rng.random_range(0..templates.len())].clone()
            };
            let link = Link {
                url: Url::parse(&url).expect("generated URL parses"),
                tag_path: TagPath::new(path),
                anchor: String::new(),
                depth: 2,
                referrer: None,
                pattern_run: 0,
            };
            (link, if target { Label::Target } else { Label::Html })
        })
        .collect()
}

/// The engine's side of the loop: links pushed so far (id = index) and their true labels.
#[derive(Default)]
struct Engine {
    pushed: Vec<(Link, Label)>,
}

impl Engine {
    /// What the engine does with one page's new links; returns new targets.
    fn handle_links(&mut self, sb: &mut SleepingBandit, links: &[(Link, Label)]) -> u32 {
        let mut reward = 0;
        for (link, truth) in links {
            let mut decision = sb.triage(link, None);
            if decision == Triage::Head {
                sb.observe(link, *truth, LabelSource::Head);
                decision = sb.triage(link, Some(*truth));
            }
            match decision {
                Triage::Enqueue(key) => {
                    sb.push(LinkId(self.pushed.len() as u64), key);
                    self.pushed.push((link.clone(), *truth));
                }
                Triage::FetchNow => {
                    sb.observe(link, *truth, LabelSource::Get);
                    reward += u32::from(*truth == Label::Target);
                }
                Triage::Head | Triage::Drop => {}
            }
        }
        reward
    }

    /// One page: pop, label it (the GET), triage its links, reward its action.
    fn page(&mut self, sb: &mut SleepingBandit, links: &[(Link, Label)]) {
        let popped = sb.pop();
        if let Some((id, _)) = popped {
            let (link, truth) = &self.pushed[id.0 as usize];
            sb.observe(link, *truth, LabelSource::Get);
        }
        let reward = self.handle_links(sb, links);
        if let Some((_, key)) = popped {
            sb.reward(key, reward);
        }
    }
}

fn bench_pipeline(c: &mut Criterion) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let pool = link_pool(&mut rng, 200_000);
    let mut sb = SleepingBandit::new(1);
    let mut engine = Engine::default();
    // Warm up: classifier trained, a few hundred pages of learning.
    const WARM: usize = 40_000;
    for chunk in pool[..WARM].chunks(LINKS_PER_PAGE) {
        engine.page(&mut sb, chunk);
    }
    let mut group = c.benchmark_group("pipeline");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(8));
    let mut cursor = WARM;
    group.bench_function("sb_page_200_new_links", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                if cursor + LINKS_PER_PAGE > pool.len() {
                    cursor = WARM;
                }
                let links = &pool[cursor..cursor + LINKS_PER_PAGE];
                cursor += LINKS_PER_PAGE;
                let started = Instant::now();
                engine.page(&mut sb, links);
                spent += started.elapsed();
            }
            spent
        })
    });
    group.finish();
    let stats = sb.stats();
    eprintln!(
        "pipeline state: {} actions, frontier {}, classifier accuracy {:?} over {} predictions",
        stats.actions,
        sb.len(),
        stats.classifier_accuracy(),
        stats.classifier_predictions
    );
}

criterion_group!(benches, bench_actions, bench_pipeline);
criterion_main!(benches);
