//! The online URL classifier: is a link HTML or a target? (ARCHITECTURE.md § Crawl loop, sb-classifier §3.3)
//!
//! - Warm-up: until `warmup_labels` (10) links are labelled HTML or target,
//!   the classifier gives no prediction and the strategy asks the server (HEAD).
//! - Labels observed on real responses are buffered and trained on in
//!   mini-batches of `batch_size` (10). "Neither" labels are not trained on by
//!   the binary model: the paper found that class unlearnable from URLs.
//! - Online accuracy: a prediction is remembered (bounded memory, keyed by a
//!   URL fingerprint) and scored when the label of that URL arrives.
//! - Features: the URL's ([`UrlFeatures::of_url`]) and, beyond the paper,
//!   the tag path of the element that carried the link
//!   ([`UrlFeatures::of_link`]; a caller without one passes none): a file and
//!   a page of the same URL family (`/node/8723`, `/node/8722`) are told
//!   apart by the markup that links them.
//! - Optional third outcome (ARCHITECTURE.md § Crawl loop "Beyond the paper", off by default): a
//!   second FTRL model learns "neither" vs the rest from every 2xx label; a link
//!   it calls neither with p ≥ 0.9 is not fetched, except a fraction ε (0.17)
//!   of them that are fetched anyway and trained with importance weight 1/ε
//!   (LDCOC's subsampling), so the model keeps seeing the class it suppresses.

use super::features::{extension_feature, UrlFeatures};
use super::ftrl::{FtrlConfig, FtrlModel};
use crate::codec::{self, CodecError};
use crate::hash::{fingerprint64, IntHashBuilder};
use crate::mime::Label;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use url::Url;

/// The optional "neither" outcome.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NeitherConfig {
    pub enabled: bool,
    /// Probability of "neither" from which a link is left unfetched.
    pub confidence: f64,
    /// Fraction ε of those fetched anyway (trained with weight 1/ε).
    pub sample_rate: f64,
}

impl Default for NeitherConfig {
    fn default() -> Self {
        NeitherConfig {
            enabled: false,
            confidence: 0.9,
            sample_rate: 0.17,
        }
    }
}

/// Tuning of the URL classifier.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassifierConfig {
    /// HTML-or-target labels needed before predictions replace HEAD requests.
    pub warmup_labels: u32,
    /// Labelled examples buffered before a training pass.
    pub batch_size: usize,
    /// A link is predicted a target when p(target) > threshold (τ).
    pub threshold: f64,
    pub ftrl: FtrlConfig,
    /// Predictions remembered for the online accuracy (oldest forgotten first).
    pub prediction_memory: usize,
    pub neither: NeitherConfig,
    /// Tell the links whose extension the model has not learnt from
    /// ([`UrlClassifier::is_unfamiliar`]); `false`: none is. sb fetches
    /// such a link at once when its extension names one of the job's
    /// targets. Measured (8 seeds, scikit-image, cold): online accuracy
    /// 94.5 ± 2.4 → 99.5 ± 0.4 %, req@90 ÷ floor 1.06 → 1.04.
    pub unfamiliar_extensions: bool,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            warmup_labels: 10,
            batch_size: 10,
            threshold: 0.5,
            ftrl: FtrlConfig::default(),
            prediction_memory: 16_384,
            neither: NeitherConfig::default(),
            unfamiliar_extensions: true,
        }
    }
}

/// A prediction for one link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// What to treat the link as: `Neither` only when the neither model is on,
    /// confident, and the link was not sampled for fetching.
    pub label: Label,
    /// p(target) of the binary model.
    pub target_probability: f64,
    /// p(neither), when the neither model is on.
    pub neither_probability: Option<f64>,
    /// Predicted neither but sampled for fetching (its label will be trained with weight 1/ε).
    pub sampled: bool,
}

/// The classifier's answer for a link whose label is unknown.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Still warming up: ask the server.
    AskServer,
    Predicted(Prediction),
}

/// Predictions scored against the labels that arrived later.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnlineAccuracy {
    pub predictions: u64,
    pub correct: u64,
}

impl OnlineAccuracy {
    pub fn ratio(&self) -> Option<f64> {
        (self.predictions > 0).then(|| self.correct as f64 / self.predictions as f64)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct RememberedPrediction {
    key: u64,
    predicted: Label,
    /// Importance weight its label will be trained with.
    weight: f64,
}

/// Bounded memory of predictions awaiting their label, oldest evicted first.
///
/// `order` may hold stale positions (labels that arrived, keys predicted
/// again); a sequence number tells the live position of a key, so eviction
/// order depends only on the live entries — and a restored memory evicts
/// exactly like the one that was saved.
#[derive(Clone, Debug, Default)]
struct PredictionMemory {
    order: VecDeque<Slot>,
    /// Keys are URL fingerprints already: no need for SipHash.
    entries: HashMap<u64, Remembered, IntHashBuilder>,
    next_seq: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    key: u64,
    seq: u64,
}

/// A live entry: its position in `order` and the prediction without its
/// key (the map's key already): 24 bytes instead of 32 in a map of up to
/// `prediction_memory` (16 384) entries per job.
#[derive(Clone, Copy, Debug)]
struct Remembered {
    seq: u64,
    weight: f64,
    predicted: Label,
}

impl Remembered {
    fn prediction(&self, key: u64) -> RememberedPrediction {
        RememberedPrediction {
            key,
            predicted: self.predicted,
            weight: self.weight,
        }
    }
}

impl PredictionMemory {
    fn is_live(&self, slot: &Slot) -> bool {
        self.entries
            .get(&slot.key)
            .is_some_and(|r| r.seq == slot.seq)
    }

    /// An eviction probes the map once (an entry, not a lookup then a
    /// removal): this runs for every link the classifier predicts, and the
    /// memory is full after the first `capacity` predictions.
    fn remember(&mut self, p: RememberedPrediction, capacity: usize) {
        if capacity == 0 {
            return;
        }
        if let Some(existing) = self.entries.get_mut(&p.key) {
            existing.weight = p.weight;
            existing.predicted = p.predicted;
            return;
        }
        while self.entries.len() >= capacity {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Entry::Occupied(e) = self.entries.entry(old.key) {
                if e.get().seq == old.seq {
                    e.remove();
                }
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.push_back(Slot { key: p.key, seq });
        self.entries.insert(
            p.key,
            Remembered {
                seq,
                weight: p.weight,
                predicted: p.predicted,
            },
        );
        if self.order.len() > 2 * capacity {
            let order = std::mem::take(&mut self.order);
            self.order = order.into_iter().filter(|s| self.is_live(s)).collect();
        }
    }

    fn take(&mut self, key: u64) -> Option<RememberedPrediction> {
        self.entries.remove(&key).map(|r| r.prediction(key))
    }

    /// Live entries, oldest first.
    fn live(&self) -> Vec<RememberedPrediction> {
        self.order
            .iter()
            .filter_map(|s| {
                self.entries
                    .get(&s.key)
                    .filter(|r| r.seq == s.seq)
                    .map(|r| r.prediction(s.key))
            })
            .collect()
    }

    fn from_live(live: Vec<RememberedPrediction>) -> Self {
        let mut memory = PredictionMemory::default();
        for p in live {
            let seq = memory.next_seq;
            memory.next_seq += 1;
            memory.order.push_back(Slot { key: p.key, seq });
            memory.entries.insert(
                p.key,
                Remembered {
                    seq,
                    weight: p.weight,
                    predicted: p.predicted,
                },
            );
        }
        memory
    }
}

/// A labelled example waiting for the next training pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct PendingExample {
    url: String,
    /// The tag path of the element that carried the link ("" when unknown).
    tag_path: String,
    label: Label,
    weight: f64,
}

/// The URL classifier of one job.
#[derive(Clone, Debug)]
pub struct UrlClassifier {
    config: ClassifierConfig,
    /// html (false) vs target (true).
    target: FtrlModel,
    /// neither (true) vs html-or-target (false); trained only when enabled.
    neither: FtrlModel,
    warm: bool,
    /// HTML-or-target labels observed.
    labelled: u64,
    batch: Vec<PendingExample>,
    memory: PredictionMemory,
    accuracy: OnlineAccuracy,
    /// Draws the ε-subsample; separate from the strategy's RNG so that turning
    /// the neither model on does not change which links the bandit picks.
    rng: Xoshiro256PlusPlus,
}

impl UrlClassifier {
    pub fn new(config: ClassifierConfig, seed: u64) -> Self {
        UrlClassifier {
            config,
            target: FtrlModel::new(config.ftrl),
            neither: FtrlModel::new(config.ftrl),
            warm: false,
            labelled: 0,
            batch: Vec::new(),
            memory: PredictionMemory::default(),
            accuracy: OnlineAccuracy::default(),
            // A distinct stream from the strategy's generator seeded with the same seed.
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6e65_6974_6865_7221),
        }
    }

    pub fn config(&self) -> ClassifierConfig {
        self.config
    }

    /// Change the tuning (configuration is not stored).
    pub fn set_config(&mut self, config: ClassifierConfig) {
        self.config = config;
        self.target.set_config(config.ftrl);
        self.neither.set_config(config.ftrl);
    }

    /// True until the warm-up labels have been collected and trained on.
    pub fn is_warming_up(&self) -> bool {
        !self.warm
    }

    pub fn accuracy(&self) -> OnlineAccuracy {
        self.accuracy
    }

    /// HTML-or-target labels observed so far.
    pub fn labelled(&self) -> u64 {
        self.labelled
    }

    /// Examples the binary model was trained on.
    pub fn trained(&self) -> u64 {
        self.target.examples()
    }

    /// Whether the binary model, warm, has never trained on a page or target
    /// whose URL has `url`'s extension (`false` for a URL without one, or
    /// with [`ClassifierConfig::unfamiliar_extensions`] off). Its prediction
    /// for such a link is the class prior of the links it has seen. A
    /// gallery whose first pages are all `.html` (scikit-image's docs: the
    /// 10 warm-up labels are pages) had its first `_downloads/…/plot_x.py`,
    /// `.ipynb` and `.zip` predicted pages at p ≈ 0.02–0.03, 10–32 per
    /// crawl, all before the first file label arrived (they waited in the
    /// queue); after it, nearly no file was mistaken. A caller that has the
    /// label fetched instead of predicting it turns that cold start into
    /// labels (sb does, for the extensions of the job's targets). Neither
    /// labels do not train the binary model, so an extension seen only on
    /// neither links stays unfamiliar here.
    pub fn is_unfamiliar(&self, url: &Url) -> bool {
        self.config.unfamiliar_extensions
            && self.warm
            && extension_feature(url).is_some_and(|f| !self.target.trained_on(f))
    }

    /// p(target) of `url`, without remembering a prediction (e.g. for priorities).
    pub fn target_probability(&self, url: &Url) -> f64 {
        self.target.predict_url(url)
    }

    /// Predict the label of a link whose label is unknown from its URL alone,
    /// remembering the prediction for the online accuracy.
    pub fn classify(&mut self, url: &Url) -> Verdict {
        self.classify_keyed(url, fingerprint64(url.as_str().as_bytes()))
    }

    /// [`Self::classify`] with the URL's `fingerprint64` computed already
    /// (`key`; debug builds check it).
    pub fn classify_keyed(&mut self, url: &Url, key: u64) -> Verdict {
        self.classify_link(url, key, "")
    }

    /// [`Self::classify_keyed`] of a link carried by the element at
    /// `tag_path`: its features too. Its label should be observed with the
    /// same tag path ([`Self::observe_link`]).
    pub fn classify_link(&mut self, url: &Url, key: u64, tag_path: &str) -> Verdict {
        debug_assert_eq!(key, fingerprint64(url.as_str().as_bytes()));
        if !self.warm {
            return Verdict::AskServer;
        }
        let p_target = self.target.predict_link(url, tag_path);
        let binary = if p_target > self.config.threshold {
            Label::Target
        } else {
            Label::Html
        };
        let capacity = self.config.prediction_memory;
        let mut prediction = Prediction {
            label: binary,
            target_probability: p_target,
            neither_probability: None,
            sampled: false,
        };
        let nc = self.config.neither;
        if nc.enabled {
            let p_neither = self.neither.predict_link(url, tag_path);
            prediction.neither_probability = Some(p_neither);
            if p_neither >= nc.confidence {
                let rate = nc.sample_rate.clamp(f64::MIN_POSITIVE, 1.0);
                if self.rng.random_bool(rate) {
                    prediction.sampled = true;
                    self.memory.remember(
                        RememberedPrediction {
                            key,
                            predicted: Label::Neither,
                            weight: 1.0 / rate,
                        },
                        capacity,
                    );
                } else {
                    // Never fetched, so never labelled: nothing to remember.
                    prediction.label = Label::Neither;
                }
                return Verdict::Predicted(prediction);
            }
        }
        self.memory.remember(
            RememberedPrediction {
                key,
                predicted: binary,
                weight: 1.0,
            },
            capacity,
        );
        Verdict::Predicted(prediction)
    }

    /// A label observed on a real 2xx response (HEAD or GET), for a link
    /// known by its URL alone.
    pub fn observe(&mut self, url: &Url, label: Label) {
        self.observe_link(url, "", label);
    }

    /// [`Self::observe`] of a link carried by the element at `tag_path`.
    pub fn observe_link(&mut self, url: &Url, tag_path: &str, label: Label) {
        let neither_on = self.config.neither.enabled;
        let mut weight = 1.0;
        if let Some(p) = self.memory.take(fingerprint64(url.as_str().as_bytes())) {
            weight = p.weight;
            // The binary model cannot say "neither": such labels do not score it.
            if label != Label::Neither || neither_on {
                self.accuracy.predictions += 1;
                self.accuracy.correct += u64::from(p.predicted == label);
            }
        }
        match label {
            Label::Html | Label::Target => self.labelled += 1,
            Label::Neither if neither_on => {}
            Label::Neither => return,
        }
        self.batch.push(PendingExample {
            url: url.as_str().to_owned(),
            tag_path: tag_path.to_owned(),
            label,
            weight,
        });
        let warmup_done = self.labelled >= u64::from(self.config.warmup_labels);
        if (!self.warm && warmup_done) || self.batch.len() >= self.config.batch_size.max(1) {
            self.train_batch();
            self.warm |= warmup_done;
        }
    }

    fn train_batch(&mut self) {
        let neither_on = self.config.neither.enabled;
        for example in std::mem::take(&mut self.batch) {
            // Stored URLs were serialised by `Url`; one that no longer parses is skipped.
            let Ok(url) = Url::parse(&example.url) else {
                continue;
            };
            let features = UrlFeatures::of_link(&url, &example.tag_path);
            if example.label != Label::Neither {
                self.target
                    .train(&features, example.label == Label::Target, example.weight);
            }
            if neither_on {
                self.neither
                    .train(&features, example.label == Label::Neither, example.weight);
            }
        }
    }
}

/// Stored: everything learned and pending, not the configuration.
#[derive(Serialize)]
struct StoredClassifierRef<'a> {
    target: &'a FtrlModel,
    neither: &'a FtrlModel,
    warm: bool,
    labelled: u64,
    batch: &'a [PendingExample],
    memory: Vec<RememberedPrediction>,
    accuracy: OnlineAccuracy,
    rng: &'a Xoshiro256PlusPlus,
}

#[derive(Deserialize)]
struct StoredClassifier {
    target: FtrlModel,
    neither: FtrlModel,
    warm: bool,
    labelled: u64,
    batch: Vec<PendingExample>,
    memory: Vec<RememberedPrediction>,
    accuracy: OnlineAccuracy,
    rng: Xoshiro256PlusPlus,
}

impl Serialize for UrlClassifier {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StoredClassifierRef {
            target: &self.target,
            neither: &self.neither,
            warm: self.warm,
            labelled: self.labelled,
            batch: &self.batch,
            memory: self.memory.live(),
            accuracy: self.accuracy,
            rng: &self.rng,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for UrlClassifier {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(StoredClassifier::deserialize(d)?.into_classifier())
    }
}

impl StoredClassifier {
    fn into_classifier(self) -> UrlClassifier {
        let memory = PredictionMemory::from_live(self.memory);
        let config = ClassifierConfig::default();
        let mut c = UrlClassifier {
            config,
            target: self.target,
            neither: self.neither,
            warm: self.warm,
            labelled: self.labelled,
            batch: self.batch,
            memory,
            accuracy: self.accuracy,
            rng: self.rng,
        };
        c.set_config(config);
        c
    }
}

impl UrlClassifier {
    /// A classifier stored on its own by [`codec::encode`], in the current
    /// layout or the one before tag paths ([`UrlClassifierWithoutTagPaths`]);
    /// when neither decodes, the current layout's error.
    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        codec::decode::<UrlClassifier>(bytes).or_else(|current| {
            codec::decode::<UrlClassifierWithoutTagPaths>(bytes)
                .map(UrlClassifier::from)
                .map_err(|_| current)
        })
    }
}

/// A pending example in the layout before tag paths.
#[derive(Serialize, Deserialize)]
struct PendingExampleWithoutTagPath {
    url: String,
    label: Label,
    weight: f64,
}

/// The layout before tag paths: the same fields, examples without one.
#[derive(Deserialize)]
struct StoredClassifierWithoutTagPaths {
    target: FtrlModel,
    neither: FtrlModel,
    warm: bool,
    labelled: u64,
    batch: Vec<PendingExampleWithoutTagPath>,
    memory: Vec<RememberedPrediction>,
    accuracy: OnlineAccuracy,
    rng: Xoshiro256PlusPlus,
}

/// A classifier saved before links' tag paths were features: decoded from
/// that layout, it is restored as it was (its models hold no tag-path
/// weight yet, and its pending examples train without one), then learns
/// from tag paths like a new one. Containers of a classifier (sb's state)
/// keep their older layouts decodable through it.
pub struct UrlClassifierWithoutTagPaths(UrlClassifier);

impl<'de> Deserialize<'de> for UrlClassifierWithoutTagPaths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = StoredClassifierWithoutTagPaths::deserialize(d)?;
        let batch = s
            .batch
            .into_iter()
            .map(|e| PendingExample {
                url: e.url,
                tag_path: String::new(),
                label: e.label,
                weight: e.weight,
            })
            .collect();
        Ok(UrlClassifierWithoutTagPaths(
            StoredClassifier {
                target: s.target,
                neither: s.neither,
                warm: s.warm,
                labelled: s.labelled,
                batch,
                memory: s.memory,
                accuracy: s.accuracy,
                rng: s.rng,
            }
            .into_classifier(),
        ))
    }
}

impl From<UrlClassifierWithoutTagPaths> for UrlClassifier {
    fn from(old: UrlClassifierWithoutTagPaths) -> Self {
        old.0
    }
}

/// A classifier in the layout before tag paths, as an older version saved
/// it (its pending examples' tag paths dropped): for the tests of the
/// containers of a classifier.
#[cfg(test)]
#[derive(Serialize)]
pub(crate) struct StoredWithoutTagPathsRef<'a> {
    target: &'a FtrlModel,
    neither: &'a FtrlModel,
    warm: bool,
    labelled: u64,
    batch: Vec<PendingExampleWithoutTagPath>,
    memory: Vec<RememberedPrediction>,
    accuracy: OnlineAccuracy,
    rng: &'a Xoshiro256PlusPlus,
}

#[cfg(test)]
impl UrlClassifier {
    pub(crate) fn without_tag_paths(&self) -> StoredWithoutTagPathsRef<'_> {
        StoredWithoutTagPathsRef {
            target: &self.target,
            neither: &self.neither,
            warm: self.warm,
            labelled: self.labelled,
            batch: self
                .batch
                .iter()
                .map(|e| PendingExampleWithoutTagPath {
                    url: e.url.clone(),
                    label: e.label,
                    weight: e.weight,
                })
                .collect(),
            memory: self.memory.live(),
            accuracy: self.accuracy,
            rng: &self.rng,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn csv(i: usize) -> Url {
        url(&format!("https://stats.example.org/data/table-{i}.csv"))
    }

    fn page(i: usize) -> Url {
        url(&format!("https://stats.example.org/section/{i}/"))
    }

    fn image(i: usize) -> Url {
        url(&format!("https://stats.example.org/img/photo-{i}.jpg"))
    }

    #[test]
    fn warm_up_asks_until_ten_labels_then_predicts() {
        let mut c = UrlClassifier::new(ClassifierConfig::default(), 1);
        for i in 0..9 {
            assert_eq!(c.classify(&csv(100 + i)), Verdict::AskServer);
            c.observe(
                &if i % 2 == 0 { csv(i) } else { page(i) },
                if i % 2 == 0 {
                    Label::Target
                } else {
                    Label::Html
                },
            );
        }
        // Neither labels do not count towards the warm-up.
        c.observe(&image(1), Label::Neither);
        assert!(c.is_warming_up());
        assert_eq!(c.trained(), 0);
        c.observe(&page(99), Label::Html);
        assert!(!c.is_warming_up());
        assert_eq!(c.trained(), 10);
        assert!(matches!(c.classify(&csv(500)), Verdict::Predicted(_)));
    }

    #[test]
    fn an_extension_is_unfamiliar_until_a_page_or_target_of_it_is_trained() {
        let py = |i: usize| url(&format!("http://d.test/_downloads/{i:x}/plot_{i}.py"));
        let html = |i: usize| url(&format!("http://d.test/auto_examples/plot_{i}.html"));
        let mut c = UrlClassifier::new(ClassifierConfig::default(), 1);
        assert!(
            !c.is_unfamiliar(&py(1)),
            "warming up: the server is asked anyway"
        );
        for i in 0..10 {
            c.observe(&html(i), Label::Html);
        }
        assert!(!c.is_warming_up());
        assert!(c.is_unfamiliar(&py(1)));
        assert!(
            !c.is_unfamiliar(&html(50)),
            "pages of its extension were trained"
        );
        assert!(
            !c.is_unfamiliar(&url("http://d.test/node/8723")),
            "no extension"
        );
        // A neither label does not train the binary model: still unfamiliar.
        c.observe(&py(2), Label::Neither);
        for i in 20..29 {
            c.observe(&html(i), Label::Html);
        }
        assert!(c.is_unfamiliar(&py(1)));
        // One target label, once its batch is trained, is enough.
        c.observe(&py(3), Label::Target);
        assert!(!c.is_unfamiliar(&py(1)));
        let off = ClassifierConfig {
            unfamiliar_extensions: false,
            ..ClassifierConfig::default()
        };
        let mut c = UrlClassifier::new(off, 1);
        for i in 0..10 {
            c.observe(&html(i), Label::Html);
        }
        assert!(!c.is_unfamiliar(&py(1)));
    }

    #[test]
    fn trains_in_mini_batches_and_scores_its_predictions() {
        let mut c = UrlClassifier::new(ClassifierConfig::default(), 1);
        for i in 0..10 {
            c.observe(
                &if i % 2 == 0 { csv(i) } else { page(i) },
                if i % 2 == 0 {
                    Label::Target
                } else {
                    Label::Html
                },
            );
        }
        assert_eq!(c.trained(), 10);
        for i in 10..19 {
            c.observe(&page(i), Label::Html);
        }
        assert_eq!(c.trained(), 10, "9 pending: no pass yet");
        c.observe(&page(19), Label::Html);
        assert_eq!(c.trained(), 20);
        // Learn for a while, then check the online accuracy counts only predicted links.
        for i in 20..400 {
            c.observe(
                &if i % 2 == 0 { csv(i) } else { page(i) },
                if i % 2 == 0 {
                    Label::Target
                } else {
                    Label::Html
                },
            );
        }
        assert_eq!(
            c.accuracy(),
            OnlineAccuracy::default(),
            "no prediction was made"
        );
        let mut right = 0;
        for i in 400..500 {
            let (u, truth) = if i % 2 == 0 {
                (csv(i), Label::Target)
            } else {
                (page(i), Label::Html)
            };
            let Verdict::Predicted(p) = c.classify(&u) else {
                panic!("warm")
            };
            right += usize::from(p.label == truth);
            c.observe(&u, truth);
        }
        assert_eq!(c.accuracy().predictions, 100);
        assert_eq!(c.accuracy().correct, right as u64);
        assert!(right >= 95, "{right}");
        // A neither label does not score the binary model.
        let Verdict::Predicted(_) = c.classify(&image(7)) else {
            panic!()
        };
        c.observe(&image(7), Label::Neither);
        assert_eq!(c.accuracy().predictions, 100);
    }

    #[test]
    fn learns_classes_told_apart_only_by_how_the_url_ends() {
        // Drupal-like ids where files and pages differ only in the last digit
        // (the synthetic sites: odd node = file): the end-of-URL 2-gram learns it.
        let node = |n: usize| url(&format!("https://stats.example.org/node/{n}"));
        let truth = |n: usize| {
            if n % 2 == 1 {
                Label::Target
            } else {
                Label::Html
            }
        };
        let mut c = UrlClassifier::new(ClassifierConfig::default(), 7);
        let mut n = 1000;
        for _ in 0..300 {
            n += 7;
            c.observe(&node(n), truth(n));
        }
        let mut right = 0;
        for _ in 0..200 {
            n += 13;
            let Verdict::Predicted(p) = c.classify(&node(n)) else {
                panic!("warm")
            };
            right += usize::from(p.label == truth(n));
            c.observe(&node(n), truth(n));
        }
        // Without the end 2-gram: 130 of 200 (measured).
        assert!(right >= 190, "{right} of 200");
    }

    #[test]
    fn a_remembered_entry_does_not_repeat_its_key() {
        assert!(std::mem::size_of::<Remembered>() <= 24);
    }

    #[test]
    fn prediction_memory_is_bounded() {
        let mut m = PredictionMemory::default();
        for k in 0..1000u64 {
            m.remember(
                RememberedPrediction {
                    key: k,
                    predicted: Label::Html,
                    weight: 1.0,
                },
                64,
            );
            if k % 3 == 0 {
                m.take(k);
            }
        }
        assert!(m.entries.len() <= 64);
        assert!(m.order.len() <= 128 + 1);
        assert!(m.take(998).is_some(), "recent entries survive");
        assert!(m.take(1).is_none(), "old entries are evicted");
        // A key predicted again after its label arrived lives at its new position.
        let mut m = PredictionMemory::default();
        let p = |key| RememberedPrediction {
            key,
            predicted: Label::Html,
            weight: 1.0,
        };
        m.remember(p(1), 2);
        m.take(1);
        m.remember(p(2), 2);
        m.remember(p(1), 2);
        m.remember(p(3), 2);
        assert_eq!(
            m.live().iter().map(|r| r.key).collect::<Vec<_>>(),
            vec![1, 3]
        );
    }

    #[test]
    fn neither_model_suppresses_confident_neither_and_samples_some() {
        let config = ClassifierConfig {
            neither: NeitherConfig {
                enabled: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut c = UrlClassifier::new(config, 9);
        for i in 0..600 {
            let (u, l) = match i % 3 {
                0 => (csv(i), Label::Target),
                1 => (page(i), Label::Html),
                _ => (image(i), Label::Neither),
            };
            c.observe(&u, l);
        }
        let (mut dropped, mut sampled) = (0, 0);
        for i in 1000..1400 {
            let Verdict::Predicted(p) = c.classify(&image(i)) else {
                panic!("warm")
            };
            assert!(p.neither_probability.is_some_and(|x| x >= 0.9), "{p:?}");
            if p.sampled {
                sampled += 1;
                assert_ne!(p.label, Label::Neither);
                c.observe(&image(i), Label::Neither);
            } else {
                assert_eq!(p.label, Label::Neither);
                dropped += 1;
            }
        }
        // ε = 0.17 of 400 ≈ 68; a wide band keeps the test about behaviour, not luck.
        assert!((40..100).contains(&sampled), "{sampled}");
        assert_eq!(sampled + dropped, 400);
        // Sampled links were scored as "neither" predictions, all correct.
        assert_eq!(c.accuracy().predictions, sampled as u64);
        assert_eq!(c.accuracy().correct, sampled as u64);
        // Pages are not suppressed.
        let Verdict::Predicted(p) = c.classify(&page(2000)) else {
            panic!()
        };
        assert_eq!(p.label, Label::Html);
    }

    #[test]
    fn restore_continues_identically() {
        let config = ClassifierConfig {
            neither: NeitherConfig {
                enabled: true,
                ..Default::default()
            },
            ..Default::default()
        };
        // Tag paths by class, so the pending examples and the models hold them.
        let tag = |l: Label| match l {
            Label::Target => FILE_CELL,
            Label::Html => TEXT_LINK,
            Label::Neither => "/html/body/div.gallery/a.thumb",
        };
        let key = |u: &Url| fingerprint64(u.as_str().as_bytes());
        let mut a = UrlClassifier::new(config, 3);
        for i in 0..57 {
            let (u, l) = match i % 3 {
                0 => (csv(i), Label::Target),
                1 => (page(i), Label::Html),
                _ => (image(i), Label::Neither),
            };
            if i > 30 {
                a.classify_link(&u, key(&u), tag(l));
            }
            a.observe_link(&u, tag(l), l);
        }
        assert!(!a.batch.is_empty(), "examples are pending");
        a.classify_link(&csv(9999), key(&csv(9999)), FILE_CELL);
        let bytes = codec::encode(&a);
        let mut b = UrlClassifier::decode(&bytes).unwrap();
        b.set_config(config);
        assert_eq!(codec::encode(&b), bytes);
        for i in 57..200 {
            let u = if i % 2 == 0 { image(i) } else { csv(i) };
            let t = tag(if i % 2 == 0 {
                Label::Neither
            } else {
                Label::Target
            });
            assert_eq!(
                a.classify_link(&u, key(&u), t),
                b.classify_link(&u, key(&u), t)
            );
            a.observe_link(&u, t, Label::Neither);
            b.observe_link(&u, t, Label::Neither);
        }
        a.observe_link(&csv(9999), FILE_CELL, Label::Target);
        b.observe_link(&csv(9999), FILE_CELL, Label::Target);
        assert_eq!(a.accuracy(), b.accuracy());
        assert_eq!(codec::encode(&a), codec::encode(&b));
    }

    /// Where the markup carried a file.
    const FILE_CELL: &str =
        "/html/body.page-data/div#main/table.files/tbody/tr/td/span.file/a.file-icon";
    /// Where it carried a page.
    const TEXT_LINK: &str = "/html/body.page-data/div#main/div.content/p/a";

    #[test]
    fn tag_paths_tell_files_from_pages_of_one_url_family() {
        // A Drupal-like site: pages are `/node/N` with N even, and files are
        // `.csv` links at first, then `/node/N` with N odd (attachments),
        // always in the same attachments table. The crawl meets the first
        // attachments before it has seen any: their URL says "page".
        let node = |n: usize| url(&format!("https://stats.example.org/node/{n}"));
        let key = |u: &Url| fingerprint64(u.as_str().as_bytes());
        let run = |with_tag_paths: bool| {
            let tag = |t: &'static str| if with_tag_paths { t } else { "" };
            let mut c = UrlClassifier::new(ClassifierConfig::default(), 5);
            // Files of many kinds in many folders: what they share is the markup.
            let dirs = ["files", "media/documents", "uploads", "sites/default/files"];
            let exts = ["csv", "pdf", "xlsx", "json", "zip"];
            for i in 0..200 {
                let (u, t, l) = if i % 2 == 0 {
                    let file = format!(
                        "https://stats.example.org/{}/{}/table-{i}.{}",
                        dirs[i % 8 / 2],
                        2000 + i % 7,
                        exts[i / 2 % 5]
                    );
                    (url(&file), FILE_CELL, Label::Target)
                } else {
                    (node(2 * i), TEXT_LINK, Label::Html)
                };
                c.observe_link(&u, tag(t), l);
            }
            // Twenty attachments met at once on a listing, labelled later.
            let attachments: Vec<Url> = (0..20).map(|i| node(5001 + 2 * i)).collect();
            let mut right = 0;
            for u in &attachments {
                let Verdict::Predicted(p) = c.classify_link(u, key(u), tag(FILE_CELL)) else {
                    panic!("warm")
                };
                right += usize::from(p.label == Label::Target);
            }
            for u in &attachments {
                c.observe_link(u, tag(FILE_CELL), Label::Target);
            }
            // Pages of the family are still pages.
            let u = node(9000);
            let Verdict::Predicted(p) = c.classify_link(&u, key(&u), tag(TEXT_LINK)) else {
                panic!("warm")
            };
            // (By its URL alone it is a target now: the attachments moved the family.)
            assert!(!with_tag_paths || p.label == Label::Html);
            (right, c.accuracy())
        };
        let (url_only, _) = run(false);
        let (with_tag_paths, accuracy) = run(true);
        assert_eq!(url_only, 0, "the URL alone says page");
        assert_eq!(with_tag_paths, 20);
        assert_eq!(accuracy.predictions, 20);
    }

    #[test]
    fn the_layout_before_tag_paths_is_restored_as_it_was() {
        let mut a = UrlClassifier::new(ClassifierConfig::default(), 11);
        for i in 0..25 {
            let (u, l) = if i % 2 == 0 {
                (csv(i), Label::Target)
            } else {
                (page(i), Label::Html)
            };
            if i > 12 {
                a.classify(&u);
            }
            a.observe(&u, l);
        }
        a.classify(&csv(7777));
        assert_eq!(a.batch.len(), 5, "examples are pending");
        let old = codec::encode(&a.without_tag_paths());
        let current = codec::encode(&a);
        assert_ne!(old, current, "pending examples make the layouts differ");
        assert!(codec::decode::<UrlClassifier>(&old).is_err());
        let mut b = UrlClassifier::decode(&old).unwrap();
        // Examples seen without a tag path: the state is the one saved.
        assert_eq!(codec::encode(&b), current);
        for i in 25..60 {
            let u = if i % 2 == 0 { csv(i) } else { page(i) };
            assert_eq!(a.classify(&u), b.classify(&u));
            let l = if i % 2 == 0 {
                Label::Target
            } else {
                Label::Html
            };
            a.observe(&u, l);
            b.observe(&u, l);
        }
        assert_eq!(codec::encode(&a), codec::encode(&b));
        // Bytes that are neither layout: the current layout's error.
        assert!(matches!(
            UrlClassifier::decode(&current[..current.len() - 1]),
            Err(CodecError::Decode(_))
        ));
    }
}
