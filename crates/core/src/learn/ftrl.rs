//! FTRL-proximal logistic regression (McMahan et al., KDD 2013, Algorithm 1).
//!
//! Per coordinate i with state (z_i, n_i):
//! `w_i = 0` if `|z_i| ≤ λ1`, else `-(z_i - sgn(z_i)·λ1) / ((β + √n_i)/α + λ2)`;
//! `p = σ(Σ w_i)` over the example's (binary) features; training with label y
//! and importance weight ω uses the gradient `g = ω·(p - y)`:
//! `σ_i = (√(n_i + g²) - √n_i)/α`, `z_i += g - σ_i·w_i`, `n_i += g²`.
//!
//! Only trained features get a state, so an idle model is empty and a model's
//! size follows what it has seen. Features below [`HOT_FEATURES`] (character
//! 2-grams: a few thousand, read for every URL) live in their own small map,
//! which stays in cache while the other map grows with every unique path
//! segment a crawl trains on. The state is stored sorted by feature id so
//! that the same model always encodes to the same bytes.

use super::features::{
    for_each_tag_path_feature, for_each_url_feature, id_set_slots, insert_id, tag_path_id_room,
    url_id_room, UrlFeatures, HOT_FEATURES, NO_ID,
};
use crate::hash::IntHashBuilder;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use url::Url;

/// Logits are clamped so that σ never saturates to exactly 0 or 1.
const MAX_LOGIT: f64 = 35.0;

/// Hyper-parameters (ARCHITECTURE.md § Crawl loop defaults: α = 0.1, β = 1, λ1 = 1, λ2 = 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FtrlConfig {
    pub alpha: f64,
    pub beta: f64,
    pub l1: f64,
    pub l2: f64,
}

impl Default for FtrlConfig {
    fn default() -> Self {
        FtrlConfig {
            alpha: 0.1,
            beta: 1.0,
            l1: 1.0,
            l2: 1.0,
        }
    }
}

/// Stored state of one coordinate. f32 halves the memory of a large model;
/// the arithmetic is done in f64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Coordinate {
    z: f32,
    n: f32,
}

/// A coordinate in memory: its state and the weight derived from it, cached
/// because a prediction reads ~100 weights and the formula costs a square
/// root and a division each. Always recomputed from (z, n, config).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Coefficient {
    state: Coordinate,
    w: f32,
}

/// A binary FTRL-proximal model over hashed features.
#[derive(Clone, Debug, Default)]
pub struct FtrlModel {
    config: FtrlConfig,
    /// Features below `HOT_FEATURES`.
    hot: HashMap<u32, Coefficient, IntHashBuilder>,
    /// The weights of the hot features whose two bytes both have a
    /// [`PairTable`] class, read for nearly every 2-gram of a URL without a
    /// map probe; the map stays the store of their state. Allocated with the
    /// first such feature trained (an untrained model costs nothing).
    pairs: Option<PairTable>,
    /// The others.
    cold: HashMap<u32, Coefficient, IntHashBuilder>,
    examples: u64,
}

impl FtrlModel {
    pub fn new(config: FtrlConfig) -> Self {
        FtrlModel {
            config,
            ..Default::default()
        }
    }

    pub fn config(&self) -> FtrlConfig {
        self.config
    }

    /// Change the hyper-parameters (configuration is not stored).
    pub fn set_config(&mut self, config: FtrlConfig) {
        self.config = config;
        let cfg = self.config;
        for c in self.hot.values_mut().chain(self.cold.values_mut()) {
            c.w = weight_of(&cfg, c.state);
        }
        self.pairs = None;
        for (&f, c) in &self.hot {
            if let Some(slot) = pair_slot(f) {
                self.pairs.get_or_insert_with(PairTable::new).0[slot] = c.w;
            }
        }
    }

    /// Scale every weight by `scale` (in 0..=1) and forget the gradients
    /// that set them (n = 0), so that the next examples move the weights
    /// at the first step's rate: a model learnt elsewhere becomes a prior
    /// that the examples of a new site can override within a few labels.
    pub fn soften(&mut self, scale: f64) {
        debug_assert!((0.0..=1.0).contains(&scale), "scale {scale}");
        let cfg = self.config;
        // The weight's denominator at n = 0.
        let d = cfg.beta / cfg.alpha + cfg.l2;
        for c in self.hot.values_mut().chain(self.cold.values_mut()) {
            let w = f64::from(c.w) * scale;
            let z = if w == 0.0 {
                0.0
            } else {
                -w * d - w.signum() * cfg.l1
            };
            c.state = Coordinate {
                z: z as f32,
                n: 0.0,
            };
        }
        // Recomputes the cached weights and the pair table.
        self.set_config(cfg);
    }

    fn map(&self, feature: u32) -> &HashMap<u32, Coefficient, IntHashBuilder> {
        if feature < HOT_FEATURES {
            &self.hot
        } else {
            &self.cold
        }
    }

    fn map_mut(&mut self, feature: u32) -> &mut HashMap<u32, Coefficient, IntHashBuilder> {
        if feature < HOT_FEATURES {
            &mut self.hot
        } else {
            &mut self.cold
        }
    }

    /// Examples trained on.
    pub fn examples(&self) -> u64 {
        self.examples
    }

    /// Features with a state (touched by training).
    pub fn touched(&self) -> usize {
        self.hot.len() + self.cold.len()
    }

    /// Features whose weight is not zero.
    pub fn nonzero(&self) -> usize {
        self.hot
            .values()
            .chain(self.cold.values())
            .filter(|c| c.w != 0.0)
            .count()
    }

    /// The current weight of one feature.
    pub fn weight(&self, feature: u32) -> f64 {
        if let Some(slot) = pair_slot(feature) {
            return self.pairs.as_ref().map_or(0.0, |t| f64::from(t.0[slot]));
        }
        self.map(feature)
            .get(&feature)
            .map_or(0.0, |c| f64::from(c.w))
    }

    /// Whether any example trained on held `feature` (its weight may still
    /// be 0: L1 keeps a rare feature's weight at 0 for its first examples).
    pub fn trained_on(&self, feature: u32) -> bool {
        self.map(feature).contains_key(&feature)
    }

    /// Probability of the positive class.
    pub fn predict(&self, features: &UrlFeatures) -> f64 {
        let logit: f64 = features.ids().iter().map(|&f| self.weight(f)).sum();
        sigmoid(logit)
    }

    /// [`Self::predict`] of `UrlFeatures::of_url(url)`, bit for bit, without
    /// collecting the features: the ids are streamed, a feature without a
    /// weight is skipped (adding 0 changes no sum, and σ(−0) = σ(0)), and only
    /// the weighted ones are deduplicated — in a set on the stack for a URL of
    /// usual length — so each still counts once, summed in extraction order.
    pub fn predict_url(&self, url: &Url) -> f64 {
        self.predict_streamed(url_id_room(url), |sum| {
            for_each_url_feature(url, |f| sum.add(f));
        })
    }

    /// [`Self::predict`] of `UrlFeatures::of_link(url, tag_path)`, bit for
    /// bit, streamed as [`Self::predict_url`] is.
    pub fn predict_link(&self, url: &Url, tag_path: &str) -> f64 {
        let room = url_id_room(url) + tag_path_id_room(tag_path);
        self.predict_streamed(room, |sum| {
            for_each_url_feature(url, |f| sum.add(f));
            for_each_tag_path_feature(tag_path, |f| sum.add(f));
        })
    }

    /// σ of the sum of the weights of the ids `stream` adds (at most `room`
    /// distinct ones), each counted once, in the order added.
    fn predict_streamed(&self, room: usize, stream: impl FnOnce(&mut LogitSum<'_>)) -> f64 {
        /// Ids a link of usual length can give, times 2 (load ≤ 1/2): a URL
        /// of up to ~200 bytes, or ~180 and a tag path of a dozen elements.
        const STACK_SET: usize = 512;
        let room = id_set_slots(room);
        let mut on_stack = [NO_ID; STACK_SET];
        let mut on_heap = Vec::new();
        let slots: &mut [u32] = if room <= STACK_SET {
            &mut on_stack[..room]
        } else {
            on_heap.resize(room, NO_ID);
            &mut on_heap
        };
        let mut sum = LogitSum {
            model: self,
            slots,
            logit: 0.0,
        };
        stream(&mut sum);
        sigmoid(sum.logit)
    }

    /// One online update with label `positive` and importance weight `weight` (> 0).
    pub fn train(&mut self, features: &UrlFeatures, positive: bool, weight: f64) {
        if !(weight.is_finite() && weight > 0.0) {
            return;
        }
        let p = self.predict(features);
        let y = if positive { 1.0 } else { 0.0 };
        let g = weight * (p - y);
        let g2 = g * g;
        let alpha = self.config.alpha;
        let cfg = self.config;
        for &f in features.ids() {
            let c = self.map_mut(f).entry(f).or_default();
            let w = f64::from(c.w);
            let n = f64::from(c.state.n);
            let sigma = ((n + g2).sqrt() - n.sqrt()) / alpha;
            c.state = Coordinate {
                z: (f64::from(c.state.z) + g - sigma * w) as f32,
                n: (n + g2) as f32,
            };
            c.w = weight_of(&cfg, c.state);
            let w = c.w;
            if let Some(slot) = pair_slot(f) {
                self.pairs.get_or_insert_with(PairTable::new).0[slot] = w;
            }
        }
        self.examples += 1;
    }
}

/// The logit of a streamed prediction ([`FtrlModel::predict_url`]): a
/// concrete type, so the feature loops call [`LogitSum::add`] statically.
struct LogitSum<'a> {
    model: &'a FtrlModel,
    /// The weighted ids added so far (an open-addressed set).
    slots: &'a mut [u32],
    logit: f64,
}

impl LogitSum<'_> {
    /// Add the weight of `f` unless it is zero (adding 0 changes no sum, and
    /// σ(−0) = σ(0)) or `f` was added already: only weighted ids enter the set.
    #[inline]
    fn add(&mut self, f: u32) {
        let w = self.model.weight(f);
        if w != 0.0 && insert_id(self.slots, f) {
            self.logit += w;
        }
    }
}

/// Classes of the bytes a lower-cased URL is mostly made of (and the
/// end-of-URL mark, 0): `PAIR_CLASSES` of them, so a pair of classes indexes a
/// table of `PAIR_CLASSES²` f32 weights (16 KiB). `NO_CLASS` for the others,
/// whose 2-grams are looked up in the map.
const PAIR_CLASS_BYTES: &[u8; PAIR_CLASSES] =
    b"\0abcdefghijklmnopqrstuvwxyz0123456789/.-_:?=&%#+~,;!@$*()'[]|^{}";
const PAIR_CLASSES: usize = 64;
const NO_CLASS: u8 = u8::MAX;
const PAIR_CLASS: [u8; 256] = {
    let mut class = [NO_CLASS; 256];
    let mut i = 0;
    while i < PAIR_CLASSES {
        class[PAIR_CLASS_BYTES[i] as usize] = i as u8;
        i += 1;
    }
    class
};

/// The weights of the class pairs (see `FtrlModel::pairs`); 0 where untrained.
#[derive(Clone, Debug, PartialEq)]
struct PairTable(Box<[f32]>);

impl PairTable {
    fn new() -> Self {
        PairTable(vec![0.0; PAIR_CLASSES * PAIR_CLASSES].into_boxed_slice())
    }
}

/// The [`PairTable`] slot of a 2-gram feature whose bytes both have a class.
#[inline]
fn pair_slot(feature: u32) -> Option<usize> {
    if feature >= HOT_FEATURES {
        return None;
    }
    let a = PAIR_CLASS[(feature >> 8) as usize];
    let b = PAIR_CLASS[(feature & 0xff) as usize];
    (a != NO_CLASS && b != NO_CLASS).then_some(usize::from(a) * PAIR_CLASSES + usize::from(b))
}

/// The FTRL-proximal closed form of a coordinate's weight (f32 like its state).
fn weight_of(cfg: &FtrlConfig, c: Coordinate) -> f32 {
    let z = f64::from(c.z);
    if z.abs() <= cfg.l1 {
        return 0.0;
    }
    let w = -(z - z.signum() * cfg.l1) / ((cfg.beta + f64::from(c.n).sqrt()) / cfg.alpha + cfg.l2);
    w as f32
}

fn sigmoid(logit: f64) -> f64 {
    1.0 / (1.0 + (-logit.clamp(-MAX_LOGIT, MAX_LOGIT)).exp())
}

#[derive(Serialize, Deserialize)]
struct StoredCoordinate {
    feature: u32,
    state: Coordinate,
}

#[derive(Serialize, Deserialize)]
struct StoredModel {
    examples: u64,
    coordinates: Vec<StoredCoordinate>,
}

impl Serialize for FtrlModel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut coordinates: Vec<StoredCoordinate> = self
            .hot
            .iter()
            .chain(self.cold.iter())
            .map(|(&feature, c)| StoredCoordinate {
                feature,
                state: c.state,
            })
            .collect();
        coordinates.sort_unstable_by_key(|c| c.feature);
        StoredModel {
            examples: self.examples,
            coordinates,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for FtrlModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let stored = StoredModel::deserialize(d)?;
        let mut model = FtrlModel {
            examples: stored.examples,
            ..Default::default()
        };
        for c in stored.coordinates {
            if !(c.state.z.is_finite() && c.state.n.is_finite() && c.state.n >= 0.0) {
                return Err(serde::de::Error::custom(format!(
                    "FTRL feature {} has an invalid state",
                    c.feature
                )));
            }
            let coefficient = Coefficient {
                state: c.state,
                w: 0.0,
            };
            if model
                .map_mut(c.feature)
                .insert(c.feature, coefficient)
                .is_some()
            {
                return Err(serde::de::Error::custom(format!(
                    "FTRL feature {} stored twice",
                    c.feature
                )));
            }
        }
        model.set_config(FtrlConfig::default());
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    fn f(u: &str) -> UrlFeatures {
        UrlFeatures::of_url(&Url::parse(u).unwrap())
    }

    fn toy_examples(count: usize) -> Vec<(UrlFeatures, bool)> {
        (0..count)
            .map(|i| {
                if i % 2 == 0 {
                    (
                        f(&format!("https://stats.example.org/files/t{i}.csv")),
                        true,
                    )
                } else {
                    (f(&format!("https://stats.example.org/page/{i}/")), false)
                }
            })
            .collect()
    }

    #[test]
    fn a_single_update_matches_the_formulas() {
        let mut m = FtrlModel::new(FtrlConfig::default());
        let x = UrlFeatures::from_ids(vec![7]);
        assert_eq!(m.predict(&x), 0.5);
        assert!(!m.trained_on(7));
        m.train(&x, true, 1.0);
        // g = 0.5 - 1 = -0.5; σ = (√0.25 - 0)/0.1 = 5; z = -0.5 - 5·0 = -0.5; n = 0.25.
        let c = m.hot[&7].state;
        assert_eq!((c.z, c.n), (-0.5, 0.25));
        assert_eq!(m.weight(7), 0.0, "|z| ≤ λ1 keeps the weight at zero");
        assert!(m.trained_on(7), "trained on, though its weight is 0");
        assert!(!m.trained_on(8));
        m.train(&x, true, 4.0);
        // g = 4·(0.5 - 1) = -2; σ = (√4.25 - √0.25)/0.1; w was 0: z = -2.5, n = 4.25.
        let c = m.hot[&7].state;
        assert_eq!((c.z, c.n), (-2.5, 4.25));
        let expected = 1.5 / ((1.0 + 4.25f64.sqrt()) / 0.1 + 1.0);
        assert!((m.weight(7) - expected).abs() < 1e-6);
        assert!(m.predict(&x) > 0.5);
    }

    #[test]
    fn softened_weights_shrink_and_move_faster() {
        let mut m = FtrlModel::new(FtrlConfig::default());
        for (x, y) in toy_examples(200) {
            m.train(&x, y, 1.0);
        }
        let csv = f("https://stats.example.org/files/new-table.csv");
        let mut soft = m.clone();
        soft.soften(0.5);
        for &id in csv.ids() {
            let (w, s) = (m.weight(id), soft.weight(id));
            assert!(
                (s - 0.5 * w).abs() < 1e-4 * (1.0 + w.abs()),
                "{id}: {w} → {s}"
            );
        }
        // Forgotten gradients: one contrary example moves the softened model further.
        let (before, soft_before) = (m.predict(&csv), soft.predict(&csv));
        m.train(&csv, false, 1.0);
        soft.train(&csv, false, 1.0);
        assert!(
            soft_before - soft.predict(&csv) > before - m.predict(&csv),
            "{soft_before} → {} against {before} → {}",
            soft.predict(&csv),
            m.predict(&csv)
        );
        let mut gone = FtrlModel::new(FtrlConfig::default());
        for (x, y) in toy_examples(50) {
            gone.train(&x, y, 1.0);
        }
        gone.soften(0.0);
        assert_eq!(gone.nonzero(), 0);
        assert_eq!(gone.predict(&csv), 0.5);
    }

    #[test]
    fn learns_csv_versus_pages() {
        let mut m = FtrlModel::new(FtrlConfig::default());
        for (x, y) in toy_examples(200) {
            m.train(&x, y, 1.0);
        }
        assert!(m.predict(&f("https://stats.example.org/files/new-table.csv")) > 0.8);
        assert!(m.predict(&f("https://stats.example.org/page/about/")) < 0.2);
        let held_out = toy_examples(400).split_off(200);
        let correct = held_out
            .iter()
            .filter(|(x, y)| (m.predict(x) > 0.5) == *y)
            .count();
        assert_eq!(correct, held_out.len());
    }

    #[test]
    fn weights_stay_sparse() {
        let mut m = FtrlModel::new(FtrlConfig::default());
        assert_eq!(m.touched(), 0);
        let probe = f("https://elsewhere.net/never/trained/on.pdf");
        m.predict(&probe);
        assert_eq!(m.touched(), 0, "prediction never allocates");
        let examples = toy_examples(100);
        let distinct: std::collections::HashSet<u32> = examples
            .iter()
            .flat_map(|(x, _)| x.ids().iter().copied())
            .collect();
        for (x, y) in &examples {
            m.train(x, *y, 1.0);
        }
        assert_eq!(m.touched(), distinct.len());
        // L1 keeps rare features (a unique file name) at zero weight.
        assert!(
            m.nonzero() < m.touched() / 2,
            "{} of {}",
            m.nonzero(),
            m.touched()
        );
    }

    #[test]
    fn importance_weight_scales_the_step() {
        let x = UrlFeatures::from_ids(vec![1, 2, 3]);
        let mut light = FtrlModel::new(FtrlConfig::default());
        let mut heavy = FtrlModel::new(FtrlConfig::default());
        for _ in 0..3 {
            light.train(&x, true, 1.0);
            heavy.train(&x, true, 1.0 / 0.17);
        }
        assert!(heavy.predict(&x) > light.predict(&x));
        let before = heavy.clone();
        heavy.train(&x, true, 0.0);
        heavy.train(&x, true, f64::NAN);
        assert_eq!(
            heavy.examples(),
            before.examples(),
            "invalid weights are ignored"
        );
    }

    #[test]
    fn round_trips_to_identical_bytes() {
        let mut m = FtrlModel::new(FtrlConfig::default());
        for (x, y) in toy_examples(50) {
            m.train(&x, y, 1.0);
        }
        let bytes = codec::encode(&m);
        let back: FtrlModel = codec::decode(&bytes).unwrap();
        assert_eq!(codec::encode(&back), bytes);
        let probe = f("https://stats.example.org/files/zzz.csv");
        assert_eq!(back.predict(&probe), m.predict(&probe));
    }

    #[test]
    fn predicting_a_url_equals_predicting_its_features_bit_for_bit() {
        let mut m = FtrlModel::new(FtrlConfig::default());
        for round in 0..3 {
            for (x, y) in toy_examples(60) {
                m.train(&x, y, 1.0 + f64::from(round));
            }
        }
        let long = format!("https://stats.example.org/{}/x.csv", "ab/".repeat(200));
        let probes = [
            "https://stats.example.org/files/zzz.csv",
            "https://stats.example.org/page/7/",
            "https://Stats.Example.org/FILES/T2.CSV?Key=1&key=2",
            "https://stats.example.org/files/files/files/t4.csv",
            "https://other.test/",
            long.as_str(),
        ];
        for u in probes {
            let url = Url::parse(u).unwrap();
            let expected = m.predict(&UrlFeatures::of_url(&url));
            assert_ne!(expected, 0.5, "{u}: the probe must hit trained weights");
            assert_eq!(m.predict_url(&url).to_bits(), expected.to_bits(), "{u}");
        }
        let empty = FtrlModel::new(FtrlConfig::default());
        let url = Url::parse(probes[0]).unwrap();
        assert_eq!(empty.predict_url(&url), 0.5);
    }

    #[test]
    fn predicting_a_link_equals_predicting_its_features_bit_for_bit() {
        let files = "/html/body/div#main/table/tr/td/span.file/a.file-icon";
        let text = "/html/body/div#main/div.content/p/a";
        let mut m = FtrlModel::new(FtrlConfig::default());
        for (i, (x, y)) in toy_examples(120).into_iter().enumerate() {
            let tag = if y { files } else { text };
            let u = Url::parse(&format!("https://stats.example.org/node/{i}")).unwrap();
            m.train(&UrlFeatures::of_link(&u, tag), y, 1.0);
            m.train(&x, y, 1.0);
        }
        let deep = format!("/html{}/a", "/div.wrapper".repeat(300));
        let cases = [
            ("https://stats.example.org/node/7", files),
            ("https://stats.example.org/node/8", text),
            ("https://stats.example.org/files/t2.csv", files),
            ("https://stats.example.org/node/9", ""),
            ("https://stats.example.org/node/10", deep.as_str()),
        ];
        for (u, tag) in cases {
            let url = Url::parse(u).unwrap();
            let expected = m.predict(&UrlFeatures::of_link(&url, tag));
            assert_ne!(expected, 0.5, "{u}: the probe must hit trained weights");
            assert_eq!(
                m.predict_link(&url, tag).to_bits(),
                expected.to_bits(),
                "{u} {tag}"
            );
        }
        let url = Url::parse(cases[0].0).unwrap();
        assert_eq!(
            m.predict_link(&url, "").to_bits(),
            m.predict_url(&url).to_bits()
        );
        assert!(m.predict_link(&url, files) > m.predict_link(&url, text));
    }

    #[test]
    fn the_pair_table_mirrors_the_weights_of_the_map() {
        let mut m = FtrlModel::new(FtrlConfig::default());
        assert!(m.pairs.is_none(), "an untrained model has no table");
        for (i, (x, y)) in toy_examples(80).into_iter().enumerate() {
            m.train(&x, y, 1.0);
            // Bytes without a class (`"`, `>`, `` ` ``, left as they are in an
            // opaque path) take the map.
            let odd = f(&format!("mailto:q\"{i}>`x"));
            m.train(&odd, i % 3 == 0, 1.0);
        }
        let check = |m: &FtrlModel| {
            let mut in_table = 0;
            for (&feature, c) in &m.hot {
                assert_eq!(m.weight(feature).to_bits(), f64::from(c.w).to_bits());
                in_table += usize::from(pair_slot(feature).is_some());
            }
            assert!(
                in_table > 0 && in_table < m.hot.len(),
                "{in_table} of {}",
                m.hot.len()
            );
        };
        check(&m);
        let back: FtrlModel = codec::decode(&codec::encode(&m)).unwrap();
        check(&back);
        assert_eq!(back.pairs, m.pairs);
        m.set_config(FtrlConfig {
            alpha: 0.3,
            ..FtrlConfig::default()
        });
        check(&m);
    }
}
