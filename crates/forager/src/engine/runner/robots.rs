//! A link's robots.txt gate: fetch (or reuse) its host's rules, refuse what
//! they disallow, and admit the sitemaps they list. The rules themselves are
//! the fetcher's ([`crate::fetch::RobotsRules`]); this file only asks them.

use super::*;

impl Runner<'_> {
    /// robots.txt check for one URL (fetches the file when needed).
    pub(super) async fn robots_gate(&self, url: &Url) -> Gate {
        if !self.politeness.robots {
            return Gate::Allowed;
        }
        let key = self.host_key(url);
        match self
            .engine
            .fetcher
            .robots_counted(url, &self.politeness, &key)
            .await
        {
            Ok(verdict) => {
                self.core()
                    .count(Count::RobotsFetches(u64::from(verdict.requests)));
                self.admit_sitemaps(url, &verdict.rules);
                if verdict.rules.status() == RobotsStatus::Unavailable {
                    if verdict.requests > 0 {
                        // This job's own try failed (the fetcher logged it).
                        lock(&self.observer).robots_failed(verdict.rules.origin());
                    }
                    // Cached as unavailable until it expires: ask nothing of
                    // the origin before then, so a retry finds a fresh
                    // answer. Only this origin waits: the host's other
                    // origins (its http port when https fails) go on.
                    let until = verdict.rules.expires_at();
                    let left = until.duration_since(SystemTime::now()).unwrap_or_default();
                    self.engine.fetcher.back_off(url, &key, left);
                    let origin = verdict.rules.origin().to_string();
                    let why = verdict.rules.error().unwrap_or("no answer");
                    return Gate::Unavailable(format!(
                        "robots.txt of {origin} unavailable ({why}); asked again at {}",
                        humantime::format_rfc3339_seconds(until)
                    ));
                }
                if verdict.rules.allowed(url) {
                    Gate::Allowed
                } else {
                    self.core().count(Count::RobotsDisallowed);
                    debug!(job = %self.spec.name, url = %url, "disallowed by robots.txt");
                    self.log_skip(url, SkipReason::Robots);
                    Gate::Disallowed
                }
            }
            Err(e) if e.may_pass() => Gate::Unavailable(format!("robots.txt: {e}")),
            Err(e @ FetchError::Forbidden { .. }) => {
                self.refused_by_guard(url, &e);
                Gate::Disallowed
            }
            Err(e) => {
                warn!(job = %self.spec.name, url = %url, error = %e, "robots.txt refused; not fetching");
                self.core().count(Count::RobotsDisallowed);
                self.log_skip(url, SkipReason::Robots);
                Gate::Disallowed
            }
        }
    }

    /// Queue the sitemaps robots.txt lists for this URL's origin, once per run
    /// (the seen set keeps them from being queued again after a restart).
    fn admit_sitemaps(&self, url: &Url, rules: &RobotsRules) {
        if rules.sitemaps().is_empty() {
            return;
        }
        let origin = url.origin().ascii_serialization();
        if !lock(&self.sitemap_origins).insert(origin.clone()) {
            return;
        }
        let robots_url = Url::parse(&format!("{origin}/robots.txt")).ok();
        for listed in rules.sitemaps() {
            let mut sitemap = listed.clone();
            extract::normalize(&mut sitemap, &self.limits.url_rules);
            if extract::check_limits(&sitemap, &self.limits.url_rules).is_err() {
                continue;
            }
            // A `Sitemap:` line may name a catalog (a CKAN API, a
            // `data.json`, a DCAT file): in a job that reads catalogs it is
            // read as one, under the catalog's caps and tag path.
            let (sitemap, tag_path) = match catalog::listed_catalog(&sitemap) {
                Some((url, kind)) if self.spec.targets.catalogs => (url, kind.tag_path()),
                _ => (sitemap, SITEMAP_TAG_PATH),
            };
            let link = Link {
                url: sitemap.clone(),
                tag_path: TagPath::new(tag_path),
                anchor: String::new(),
                depth: 1,
                referrer: robots_url.clone().map(Arc::new),
                pattern_run: 0,
            };
            if self.core().admit_listed(link) {
                debug!(job = %self.spec.name, sitemap = %sitemap, tag_path, "sitemap from robots.txt queued");
            }
            self.log_skipped();
        }
    }
}
