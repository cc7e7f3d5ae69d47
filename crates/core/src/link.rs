//! What a link is, as every part of the crawler sees it.
//!
//! A [`Link`] is a normalised absolute URL discovered on a page, with the
//! [`TagPath`] of the element that carried it. The engine gives each link it
//! puts in the frontier a [`LinkId`]: ids grow monotonically within a job, so
//! an order "by id" is the order of discovery, and strategies that restore
//! their queues from the store get back exactly the order they had.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;
use url::Url;

/// Identifier of a frontier entry within one job; increasing in discovery order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkId(pub u64);

/// Stable 64-bit hash of a normalised URL (MurmurHash3 x64/128, low half):
/// the seen-set key, and the key of every per-URL table a job keeps.
pub fn url_hash(url: &Url) -> u64 {
    crate::hash::murmur3_x64_128(url.as_str().as_bytes(), 0x666f_7261) as u64
}

impl fmt::Display for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The DOM path from the root element to the element carrying a link, e.g.
/// `/html/body/div.content main#x/ul/li/a.download` (ARCHITECTURE.md § Crawl loop).
///
/// Cheap to clone: all links of one list on a page share the same string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TagPath(Arc<str>);

impl TagPath {
    pub fn new(path: impl Into<Arc<str>>) -> Self {
        TagPath(path.into())
    }

    /// The path of a seed or of a link found outside HTML (a sitemap, a redirect).
    pub fn root() -> Self {
        TagPath(Arc::from("/"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TagPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A link discovered by the crawl: where it points and where it was found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Normalised absolute URL, fragment removed.
    #[serde(with = "url_serde")]
    pub url: Url,
    /// Tag path of the `<a>`/`<area>`/`<iframe>` that carried it.
    pub tag_path: TagPath,
    /// Anchor text (whitespace collapsed, truncated).
    pub anchor: String,
    /// Number of links followed from a seed to reach it (seeds are 0).
    pub depth: u32,
    /// The page it was found on (`None` for seeds), shared by every link
    /// found on that page (one copy per page, not per link). Stored as the URL.
    #[serde(with = "opt_url_serde")]
    pub referrer: Option<Arc<Url>>,
    /// How many pages in a row, up to this link, share its URL pattern
    /// (`/calendar/2024/05` → `/calendar/2024/06` → …); 0 when the page it
    /// was found on has another pattern. Long runs are how infinite spaces look.
    pub pattern_run: u32,
}

impl Link {
    /// A seed link: depth 0, no referrer, the root tag path.
    pub fn seed(url: Url) -> Self {
        Link {
            url,
            tag_path: TagPath::root(),
            anchor: String::new(),
            depth: 0,
            referrer: None,
            pattern_run: 0,
        }
    }
}

mod url_serde {
    use serde::{Deserialize, Deserializer, Serializer};
    use url::Url;

    pub fn serialize<S: Serializer>(url: &Url, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(url.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Url, D::Error> {
        let s = String::deserialize(d)?;
        Url::parse(&s).map_err(serde::de::Error::custom)
    }
}

mod opt_url_serde {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::sync::Arc;
    use url::Url;

    pub fn serialize<S: Serializer>(url: &Option<Arc<Url>>, s: S) -> Result<S::Ok, S::Error> {
        match url {
            Some(u) => s.serialize_some(u.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<Url>>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        s.map(|s| {
            Url::parse(&s)
                .map(Arc::new)
                .map_err(serde::de::Error::custom)
        })
        .transpose()
    }
}

/// Where a link sits in a strategy's frontier: an arm (`slot`: action id,
/// host, pay-level domain) and a priority (`score`). Stored with the link so
/// that a restored frontier is the frontier that was saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueKey {
    pub slot: u32,
    pub score: f32,
}
