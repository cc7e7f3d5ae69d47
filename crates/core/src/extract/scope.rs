//! Which URLs belong to a job (ARCHITECTURE.md § Job files scope rules) and which politeness
//! bucket a URL falls in.

use serde::{Deserialize, Serialize};
use url::{Host, Url};

/// Which URLs belong to a job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeKind {
    /// The seed's host without `www.`, and its subdomains.
    #[default]
    Site,
    /// The seed's host only.
    Host,
    /// Everything (linked-data crawls); politeness per pay-level domain.
    Any,
}

/// What one politeness key covers: the requests of a job under one key are
/// spaced by its delay and never overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolitenessPer {
    /// Each host name on its own.
    Host,
    /// Every host of one pay-level domain together (`a.example.org` and
    /// `b.example.org` share `example.org`), by the public suffix list.
    Pld,
}

impl PolitenessPer {
    /// The default of a scope: per host within one site, per pay-level domain
    /// across the web (one site's many subdomains are still one server's load).
    pub fn default_for(scope: ScopeKind) -> PolitenessPer {
        match scope {
            ScopeKind::Site | ScopeKind::Host => PolitenessPer::Host,
            ScopeKind::Any => PolitenessPer::Pld,
        }
    }
}

/// The scope of one job, built once from its kind and seeds.
#[derive(Clone, Debug)]
pub struct Scope {
    kind: ScopeKind,
    seeds: Vec<SeedHost>,
}

/// The part of a seed URL the scope rules compare against.
#[derive(Clone, Debug)]
struct SeedHost {
    /// Host as serialised by the URL parser (lower case, IPv6 in brackets).
    host: String,
    /// The host without a leading `www.` (`site` scope).
    site: String,
    /// Whether `site` may have subdomains (not for IP literals).
    is_domain: bool,
    /// Explicit port only: `None` for the scheme's default, so that an
    /// http seed keeps its https pages in a `host` scope.
    port: Option<u16>,
}

impl Scope {
    /// A scope of `kind` around `seeds` (seeds without a host are ignored).
    pub fn new(kind: ScopeKind, seeds: &[Url]) -> Self {
        let seeds = seeds
            .iter()
            .filter_map(|seed| {
                let host = seed.host_str()?;
                let host = host.trim_end_matches('.').to_ascii_lowercase();
                Some(SeedHost {
                    site: strip_www(&host).to_owned(),
                    is_domain: matches!(seed.host(), Some(Host::Domain(_))),
                    port: seed.port(),
                    host,
                })
            })
            .collect();
        Scope { kind, seeds }
    }

    pub fn kind(&self) -> ScopeKind {
        self.kind
    }

    /// Whether the crawl may follow `url`. Only http(s) URLs are ever in scope.
    pub fn contains(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        let Some(host) = url.host_str() else {
            return false;
        };
        let host = host.trim_end_matches('.');
        match self.kind {
            ScopeKind::Any => true,
            ScopeKind::Host => self
                .seeds
                .iter()
                .any(|s| s.host.eq_ignore_ascii_case(host) && s.port == url.port()),
            ScopeKind::Site => {
                let is_domain = matches!(url.host(), Some(Host::Domain(_)));
                let site = strip_www(host);
                self.seeds.iter().any(|s| {
                    if !(is_domain && s.is_domain) {
                        return s.host.eq_ignore_ascii_case(host);
                    }
                    is_same_or_subdomain(site, &s.site)
                })
            }
        }
    }
}

/// The politeness bucket of `url`: its host for `site`/`host` jobs, its
/// pay-level domain for `any` jobs (ARCHITECTURE.md § Job files); IP literals are their own key.
pub fn politeness_key(url: &Url, per: PolitenessPer) -> String {
    let host = match url.host() {
        None => return String::new(),
        Some(Host::Domain(domain)) => domain.trim_end_matches('.'),
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => {
            return url.host_str().unwrap_or_default().to_owned();
        }
    };
    match per {
        PolitenessPer::Host => host.to_ascii_lowercase(),
        PolitenessPer::Pld => psl::domain_str(host).unwrap_or(host).to_ascii_lowercase(),
    }
}

fn strip_www(host: &str) -> &str {
    match host.get(..4) {
        Some(prefix) if prefix.eq_ignore_ascii_case("www.") && host.len() > 4 => &host[4..],
        _ => host,
    }
}

/// `host` equals `site` or ends with `.site` (case-insensitive).
fn is_same_or_subdomain(host: &str, site: &str) -> bool {
    if host.eq_ignore_ascii_case(site) {
        return true;
    }
    host.len() > site.len() + 1
        && host.as_bytes()[host.len() - site.len() - 1] == b'.'
        && host[host.len() - site.len()..].eq_ignore_ascii_case(site)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn scope(kind: ScopeKind, seeds: &[&str]) -> Scope {
        let seeds: Vec<Url> = seeds.iter().map(|s| url(s)).collect();
        Scope::new(kind, &seeds)
    }

    #[test]
    fn site_scope_strips_www_and_accepts_subdomains() {
        let s = scope(ScopeKind::Site, &["https://www.bea.gov/"]);
        for inside in [
            "https://www.bea.gov/data",
            "http://bea.gov/",
            "https://apps.bea.gov/x.csv",
            "https://www.apps.bea.gov/",
            "https://BEA.GOV./",
            "https://bea.gov:8080/",
        ] {
            assert!(s.contains(&url(inside)), "{inside}");
        }
        for outside in [
            "https://notbea.gov/",
            "https://bea.gov.evil.com/",
            "https://gov/",
            "https://www.census.gov/",
            "ftp://bea.gov/",
            "mailto:x@bea.gov",
        ] {
            assert!(!s.contains(&url(outside)), "{outside}");
        }
    }

    #[test]
    fn site_scope_of_a_subdomain_seed_excludes_the_parent() {
        let s = scope(ScopeKind::Site, &["https://data.example.org/"]);
        assert!(s.contains(&url("https://x.data.example.org/")));
        assert!(!s.contains(&url("https://example.org/")));
        assert!(!s.contains(&url("https://www.example.org/")));
    }

    #[test]
    fn site_scope_with_ip_seed_is_exact() {
        let s = scope(ScopeKind::Site, &["http://127.0.0.1:8080/"]);
        assert!(s.contains(&url("http://127.0.0.1:9999/a")));
        assert!(!s.contains(&url("http://127.0.0.2:8080/")));
        assert!(!s.contains(&url("http://x.127.0.0.1.nip.io/")));
    }

    #[test]
    fn host_scope_is_exact_host_and_port() {
        let s = scope(ScopeKind::Host, &["http://www.example.org/"]);
        assert!(s.contains(&url("http://www.example.org/a")));
        assert!(s.contains(&url("https://www.example.org/a")));
        assert!(!s.contains(&url("http://example.org/")));
        assert!(!s.contains(&url("http://sub.www.example.org/")));
        assert!(!s.contains(&url("http://www.example.org:8080/")));
        let p = scope(ScopeKind::Host, &["http://127.0.0.1:8080/"]);
        assert!(p.contains(&url("http://127.0.0.1:8080/x")));
        assert!(!p.contains(&url("http://127.0.0.1:8081/x")));
    }

    #[test]
    fn several_seeds_form_a_union() {
        let s = scope(ScopeKind::Site, &["https://a.com/", "https://b.org/"]);
        assert!(s.contains(&url("https://x.a.com/")));
        assert!(s.contains(&url("https://b.org/y")));
        assert!(!s.contains(&url("https://c.net/")));
        assert!(!scope(ScopeKind::Site, &[]).contains(&url("https://a.com/")));
    }

    #[test]
    fn any_scope_takes_every_http_url() {
        let s = scope(ScopeKind::Any, &["https://a.com/"]);
        assert!(s.contains(&url("https://anything.example/")));
        assert!(s.contains(&url("http://[::1]:81/")));
        assert!(!s.contains(&url("data:text/plain,x")));
        assert_eq!(s.kind(), ScopeKind::Any);
    }

    #[test]
    fn politeness_keys() {
        let u = url("https://apps.bea.gov/x");
        assert_eq!(politeness_key(&u, PolitenessPer::Host), "apps.bea.gov");
        assert_eq!(politeness_key(&u, PolitenessPer::Host), "apps.bea.gov");
        assert_eq!(politeness_key(&u, PolitenessPer::Pld), "bea.gov");
        assert_eq!(
            politeness_key(&url("http://a.b.example.co.uk/"), PolitenessPer::Pld),
            "example.co.uk"
        );
        assert_eq!(
            politeness_key(&url("http://localhost:8080/"), PolitenessPer::Pld),
            "localhost"
        );
        assert_eq!(
            politeness_key(&url("http://10.0.0.1:8080/"), PolitenessPer::Pld),
            "10.0.0.1"
        );
        assert_eq!(
            politeness_key(&url("http://[::1]/"), PolitenessPer::Pld),
            "[::1]"
        );
        assert_eq!(
            politeness_key(&url("http://example.com./"), PolitenessPer::Pld),
            "example.com"
        );
    }
}
