//! Data catalogs as link sources (`forager_core::catalog`): queue a seed
//! origin's well-known catalogs the first time a job fetches from it, and
//! read a catalog's body into links. Which paths are asked and what a body
//! says are the core's; this file only fetches, caps and hands over. A
//! catalog link is a frontier link like any other: its request passes the
//! same robots gate, politeness slot, SSRF guard and budget, and its entries
//! go through the same triage as a page's links.

use super::fetching::LinkList;
use super::*;
use forager_core::catalog::{CatalogKind, MAX_CATALOG_BYTES};

/// The origins whose well-known catalogs a job asks for: its seeds' (none
/// when it reads no catalogs). Only the seeds': a job pointed at a portal
/// asks it, while a job that wanders over many hosts (scope `any`) pays
/// three requests per seed, not per host it meets.
pub(super) fn seed_origins(spec: &JobSpec) -> HashSet<String> {
    if !spec.targets.catalogs {
        return HashSet::new();
    }
    spec.seeds
        .iter()
        .map(|s| s.origin().ascii_serialization())
        .collect()
}

impl Runner<'_> {
    /// Queue the well-known catalogs of `url`'s origin when it is a seed's
    /// and they were not queued yet in this run (the seen set keeps them
    /// from being queued again after a restart).
    pub(super) fn admit_catalogs(&self, url: &Url) {
        let origin = {
            let mut pending = lock(&self.catalog_origins);
            if pending.is_empty() {
                return;
            }
            let origin = url.origin().ascii_serialization();
            if !pending.remove(&origin) {
                return;
            }
            origin
        };
        let Ok(root) = Url::parse(&format!("{origin}/")) else {
            return;
        };
        let referrer = Some(Arc::new(root.clone()));
        for (mut found, kind) in catalog::well_known(&root) {
            extract::normalize(&mut found, &self.limits.url_rules);
            if extract::check_limits(&found, &self.limits.url_rules).is_err() {
                continue;
            }
            let link = Link {
                url: found.clone(),
                tag_path: TagPath::new(kind.tag_path()),
                anchor: String::new(),
                depth: 1,
                referrer: referrer.clone(),
                pattern_run: 0,
            };
            if self.core().admit_listed(link) {
                debug!(job = %self.spec.name, catalog = %found, kind = kind.as_str(), "well-known catalog queued");
            }
            self.log_skipped();
        }
    }

    /// A catalog: its entries (and a CKAN API's next page) are links, like a
    /// page's (counted as a page). A body over [`MAX_CATALOG_BYTES`] is read
    /// up to it; what it held past the cap is lost.
    pub(super) async fn handle_catalog(
        &self,
        kind: CatalogKind,
        link: &Link,
        url: Url,
        resp: Response,
        latency: Option<Duration>,
    ) -> Fetched {
        let content_type = essence(resp.content_type.as_deref().unwrap_or(""));
        let cap = self.spec.limits.max_body.min(MAX_CATALOG_BYTES);
        let limits = self.limits.clone();
        self.handle_link_list(
            LinkList {
                source: kind.as_str(),
                cap,
            },
            link,
            url,
            resp,
            latency,
            move |body, url| catalog::catalog_links(kind, body, url, &content_type, &limits),
        )
        .await
    }
}
