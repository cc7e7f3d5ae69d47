use super::super::Strategy;
use crate::config::JobSpec;
use crate::extract::{ExtractedLink, PageLinks, RejectCounts};
use crate::job::replay::{Answers, Replay};
use crate::link::{Link, LinkId, QueueKey, TagPath};
use crate::mime::Label;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, HashSet};
use url::Url;

pub const NAV: &str = "/html/body/nav/ul/li/a";
pub const ARTICLE_LIST: &str = "/html/body/main/div.articles/h2/a";
pub const DATASET_LIST: &str = "/html/body/main/aside.data/ul/li/a.dataset";
pub const RELATED: &str = "/html/body/main/article/p/a";
pub const FIGURE: &str = "/html/body/main/article/figure/a";
pub const DOWNLOAD: &str = "/html/body/main/table.files/tbody/tr/td/a.download";

/// A link on a page: destination and tag path.
#[derive(Clone, Debug)]
pub struct Anchor {
    pub url: String,
    pub tag_path: &'static str,
}

/// Shape of the generated site.
#[derive(Clone, Copy, Debug)]
pub struct SiteShape {
    pub topics: usize,
    pub articles_per_topic: usize,
    pub datasets_per_topic: usize,
    pub targets_per_dataset: usize,
    pub related_per_article: usize,
    pub seed: u64,
}

/// Topics under a nav menu; each topic lists articles (no targets, images,
/// links to other articles) and a few dataset pages, each of which lists
/// CSV targets. Targets hang under one tag-path pattern only.
pub struct Site {
    pub pages: BTreeMap<String, Vec<Anchor>>,
    pub targets: HashSet<String>,
    pub images: HashSet<String>,
}

const BASE: &str = "https://site.test";

impl Site {
    pub fn generate(shape: SiteShape) -> Site {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(shape.seed);
        let mut pages = BTreeMap::new();
        let mut targets = HashSet::new();
        let mut images = HashSet::new();
        let topic = |t: usize| format!("{BASE}/topic/{t}/");
        let nav: Vec<Anchor> = (0..shape.topics)
            .map(|t| Anchor {
                url: topic(t),
                tag_path: NAV,
            })
            .collect();
        pages.insert(format!("{BASE}/"), nav.clone());
        let n_articles = shape.topics * shape.articles_per_topic;
        for t in 0..shape.topics {
            let mut links = nav.clone();
            for a in 0..shape.articles_per_topic {
                let id = t * shape.articles_per_topic + a;
                links.push(Anchor {
                    url: format!("{BASE}/article/{id}/"),
                    tag_path: ARTICLE_LIST,
                });
            }
            for d in 0..shape.datasets_per_topic {
                let id = t * shape.datasets_per_topic + d;
                let url = format!("{BASE}/dataset/{id}/");
                links.push(Anchor {
                    url: url.clone(),
                    tag_path: DATASET_LIST,
                });
                let mut dl = nav.clone();
                for k in 0..shape.targets_per_dataset {
                    let target = format!("{BASE}/files/{id}-{k}.csv");
                    targets.insert(target.clone());
                    dl.push(Anchor {
                        url: target,
                        tag_path: DOWNLOAD,
                    });
                }
                pages.insert(url, dl);
            }
            pages.insert(topic(t), links);
        }
        for id in 0..n_articles {
            let mut links = nav.clone();
            for _ in 0..shape.related_per_article {
                let other = rng.random_range(0..n_articles);
                links.push(Anchor {
                    url: format!("{BASE}/article/{other}/"),
                    tag_path: RELATED,
                });
            }
            let image = format!("{BASE}/img/figure-{id}.png");
            images.insert(image.clone());
            links.push(Anchor {
                url: image,
                tag_path: FIGURE,
            });
            pages.insert(format!("{BASE}/article/{id}/"), links);
        }
        Site {
            pages,
            targets,
            images,
        }
    }

    /// What a GET or HEAD would say; `None` for a 404.
    pub fn label(&self, url: &str) -> Option<Label> {
        if self.pages.contains_key(url) {
            Some(Label::Html)
        } else if self.targets.contains(url) {
            Some(Label::Target)
        } else if self.images.contains(url) {
            Some(Label::Neither)
        } else {
            None
        }
    }
}

/// What the site answers a crawl, and what the crawl found.
#[derive(Clone)]
struct SiteAnswers<'s> {
    site: &'s Site,
    found: HashSet<String>,
    requests_at_all_targets: Option<u64>,
}

impl Answers for SiteAnswers<'_> {
    fn label(&mut self, url: &Url) -> Option<Label> {
        self.site.label(url.as_str())
    }

    fn links(&mut self, page: &Link) -> PageLinks {
        let links = self.site.pages[page.url.as_str()]
            .iter()
            .map(|a| ExtractedLink {
                url: Url::parse(&a.url).unwrap(),
                tag_path: TagPath::new(a.tag_path),
                anchor: String::new(),
            })
            .collect();
        PageLinks {
            links,
            base: page.url.clone(),
            structured_data: false,
            structured: None,
            cut: None,
            rejected: RejectCounts::default(),
        }
    }

    fn target(&mut self, link: &Link, requests: u64) -> bool {
        let new = self.found.insert(link.url.to_string());
        if new && self.found.len() == self.site.targets.len() {
            self.requests_at_all_targets = Some(requests);
        }
        new
    }
}

/// One crawl of a [`Site`] by the engine's own job core ([`Replay`]):
/// the runner's triage protocol with the network replaced by the site.
pub struct Crawl<'s> {
    replay: Replay,
    answers: SiteAnswers<'s>,
    /// Popped ids, in order.
    pub trace: Vec<u64>,
}

impl<'s> Crawl<'s> {
    /// A crawl of `site` from its home page by `strategy`.
    pub fn start(site: &'s Site, strategy: impl Strategy + 'static) -> Self {
        let mut spec = JobSpec::new("fake-site", vec![Url::parse(&format!("{BASE}/")).unwrap()]);
        // The site's images must reach the strategy; the crawl has no budget of its own.
        spec.targets.block_ext.clear();
        spec.budget.requests = 0;
        spec.budget.bytes = 0;
        spec.budget.early_stop = false;
        Crawl {
            replay: Replay::new(spec, Box::new(strategy)),
            answers: SiteAnswers {
                site,
                found: HashSet::new(),
                requests_at_all_targets: None,
            },
            trace: Vec::new(),
        }
    }

    pub fn strategy(&mut self) -> &mut dyn Strategy {
        self.replay.strategy()
    }

    /// GET and HEAD requests so far.
    pub fn requests(&self) -> u64 {
        self.replay.requests()
    }

    pub fn heads(&self) -> u64 {
        self.replay.core.counters().heads
    }

    /// Requests spent when the last target was found.
    pub fn requests_at_all_targets(&self) -> Option<u64> {
        self.answers.requests_at_all_targets
    }

    pub fn targets_found(&self) -> usize {
        self.answers.found.len()
    }

    /// Pop and fetch one link; false when the frontier is empty.
    pub fn step(&mut self) -> bool {
        let Some(stepped) = self.replay.step(&mut self.answers) else {
            return false;
        };
        self.trace.push(stepped.id.0);
        true
    }

    /// Crawl until every target is found, the frontier is empty or `budget` requests.
    pub fn run(&mut self, budget: u64) {
        while self.answers.requests_at_all_targets.is_none() && self.requests() < budget {
            if !self.step() {
                break;
            }
        }
    }

    /// The frontier as a checkpoint now commits it: ids and keys.
    pub fn frontier(&mut self) -> Vec<(LinkId, QueueKey)> {
        self.replay.checkpoint();
        self.replay.stored_frontier().collect()
    }

    /// This crawl as a restart from a checkpoint taken now resumes it,
    /// `strategy` (a fresh one) restoring the saved learner; the learner
    /// state the checkpoint saved comes with it.
    pub fn resume(&mut self, strategy: impl Strategy + 'static) -> (Crawl<'s>, Vec<u8>) {
        let replay = self.replay.resume(Box::new(strategy)).unwrap();
        let saved = self.replay.record().strategy_state.clone();
        let fork = Crawl {
            replay,
            answers: self.answers.clone(),
            trace: self.trace.clone(),
        };
        (fork, saved)
    }
}
