//! A web of many small hosts, for jobs that crawl across hosts (scope `any`).
//!
//! Host `i` of `n` is `h{i:04}.web.test`. Its home page links to its pages
//! `/p/0 … /p/{k-1}` and to two other hosts' home pages; page `j` links back
//! home, to the same page of another host and — on every `data_every`-th host
//! (the *data hosts*) — to the data file `/files/{j}.csv`. Every host is
//! reachable from host 0's home page through the cross-host links, so one
//! seed reaches the whole web. The web is a pure function of its parameters:
//! the ground truth ([`Web::targets`]) needs no crawl.

use super::server::{Site, SiteRequest, SiteResponse};
use axum::http::StatusCode;
use std::sync::Arc;

/// The parameters of a web; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Web {
    pub hosts: usize,
    pub pages_per_host: usize,
    /// Every this many hosts serves data files (1: every host).
    pub data_every: usize,
    /// Added to every answer, like a server far away.
    pub latency: std::time::Duration,
}

impl Web {
    pub fn new(hosts: usize) -> Web {
        Web {
            hosts: hosts.max(1),
            pages_per_host: 3,
            data_every: 3,
            latency: std::time::Duration::ZERO,
        }
    }

    pub fn with_latency(mut self, latency: std::time::Duration) -> Web {
        self.latency = latency;
        self
    }

    pub fn host_name(i: usize) -> String {
        format!("h{i:04}.web.test")
    }

    fn is_data_host(&self, i: usize) -> bool {
        i % self.data_every.max(1) == 0
    }

    /// Every host, each its own [`Site`], for [`super::SiteServer::start`].
    pub fn sites(&self) -> Vec<(String, Arc<dyn Site>)> {
        (0..self.hosts)
            .map(|i| {
                let site: Arc<dyn Site> = Arc::new(WebHost {
                    web: *self,
                    index: i,
                });
                (Web::host_name(i), site)
            })
            .collect()
    }

    /// `host/path` of every data file: what a complete harvest holds.
    pub fn targets(&self) -> Vec<String> {
        (0..self.hosts)
            .filter(|&i| self.is_data_host(i))
            .flat_map(|i| {
                (0..self.pages_per_host)
                    .map(move |j| format!("{}/files/{j}.csv", Web::host_name(i)))
            })
            .collect()
    }

    /// Requests a complete crawl makes: home, pages and files of every host.
    pub fn resources(&self) -> usize {
        self.hosts * (1 + self.pages_per_host) + self.targets().len()
    }

    /// The two hosts a home page links to: the next one (so every host is
    /// reached) and one far away (so the crawl fans out quickly).
    fn neighbours(&self, i: usize) -> [usize; 2] {
        [(i + 1) % self.hosts, (i * 7 + 3) % self.hosts]
    }
}

/// One host of a [`Web`].
struct WebHost {
    web: Web,
    index: usize,
}

impl WebHost {
    fn page(&self, title: &str, links: &[String]) -> SiteResponse {
        let mut html =
            format!("<!doctype html><html><head><title>{title}</title></head><body><ul>");
        for l in links {
            html.push_str(&format!("<li><a href=\"{l}\">{l}</a></li>"));
        }
        html.push_str("</ul></body></html>");
        SiteResponse::html(html)
    }
}

impl Site for WebHost {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let resp = self.answer(req);
        if self.web.latency.is_zero() {
            resp
        } else {
            resp.with_delay(self.web.latency)
        }
    }
}

impl WebHost {
    fn answer(&self, req: &SiteRequest) -> SiteResponse {
        let web = &self.web;
        let path = req.path_and_query();
        if path == "/" {
            let mut links: Vec<String> =
                (0..web.pages_per_host).map(|j| format!("/p/{j}")).collect();
            for n in web.neighbours(self.index) {
                links.push(format!("http://{}/", Web::host_name(n)));
            }
            return self.page(&Web::host_name(self.index), &links);
        }
        if let Some(j) = path
            .strip_prefix("/p/")
            .and_then(|j| j.parse::<usize>().ok())
        {
            if j >= web.pages_per_host {
                return SiteResponse::not_found();
            }
            let other = (self.index + j + 1) % web.hosts;
            let mut links = vec![
                "/".to_string(),
                format!("http://{}/p/{j}", Web::host_name(other)),
            ];
            if web.is_data_host(self.index) {
                links.push(format!("/files/{j}.csv"));
            }
            return self.page(&format!("page {j}"), &links);
        }
        if let Some(j) = path
            .strip_prefix("/files/")
            .and_then(|f| f.strip_suffix(".csv"))
            .and_then(|j| j.parse::<usize>().ok())
        {
            if web.is_data_host(self.index) && j < web.pages_per_host {
                let body = format!("host,file\n{},{j}\n", self.index);
                return SiteResponse::ok("text/csv", body);
            }
        }
        if path == "/robots.txt" {
            return SiteResponse::new(StatusCode::NOT_FOUND);
        }
        SiteResponse::not_found()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashSet, VecDeque};

    /// Walk the web in memory from host 0's home page.
    fn walk(web: &Web) -> (HashSet<String>, HashSet<String>) {
        let sites: std::collections::HashMap<String, Arc<dyn Site>> =
            web.sites().into_iter().collect();
        let mut seen = HashSet::new();
        let mut files = HashSet::new();
        let mut queue = VecDeque::from([(Web::host_name(0), "/".to_string())]);
        while let Some((host, path)) = queue.pop_front() {
            if !seen.insert(format!("{host}{path}")) {
                continue;
            }
            let resp = sites[&host].respond(&SiteRequest::get(&host, &path));
            if resp.content_type() == Some("text/csv") {
                files.insert(format!("{host}{path}"));
                continue;
            }
            let crate::sites::Body::Bytes(bytes) = &resp.body else {
                continue;
            };
            let body = String::from_utf8_lossy(bytes).into_owned();
            for href in body
                .split("href=\"")
                .skip(1)
                .filter_map(|s| s.split('"').next())
            {
                match href.strip_prefix("http://") {
                    Some(rest) => {
                        let (h, p) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                        queue.push_back((h.to_string(), p.to_string()));
                    }
                    None => queue.push_back((host.clone(), href.to_string())),
                }
            }
        }
        (seen, files)
    }

    #[test]
    fn one_seed_reaches_every_host_and_file() {
        for hosts in [1, 2, 7, 50] {
            let web = Web::new(hosts);
            let (seen, files) = walk(&web);
            let expected: HashSet<String> = web.targets().into_iter().collect();
            assert_eq!(files, expected, "{hosts} hosts");
            assert_eq!(seen.len(), web.resources(), "{hosts} hosts");
        }
    }

    #[test]
    fn only_data_hosts_serve_files() {
        let web = Web::new(6);
        let sites = web.sites();
        let (host, site) = &sites[1];
        let resp = site.respond(&SiteRequest::get(host, "/files/0.csv"));
        assert_eq!(resp.status, StatusCode::NOT_FOUND);
        assert_eq!(
            web.targets().len(),
            2 * 3,
            "hosts 0 and 3, three files each"
        );
    }
}
