//! Loopback servers and what a crawl left on disk.

use forager_bench::sites::server::{Site, SiteServer};
use forager_bench::sites::synthetic::{Preset, SyntheticSite};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The synthetic `small` site of `seed` served under `host` on loopback;
/// returns the server and the site's start path.
pub async fn serve_small_site(host: &str, seed: u64) -> (SiteServer, String) {
    let site = SyntheticSite::preset(Preset::Small, seed).unwrap();
    let start = site.start_path().to_string();
    let sites: Vec<(String, Arc<dyn Site>)> = vec![(host.to_string(), Arc::new(site))];
    (SiteServer::start(sites).await.unwrap(), start)
}

/// A job's `manifest.jsonl` as final URL → sha256; panics on a duplicate row.
pub fn manifest_by_final_url(job_targets: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(job_targets.join("manifest.jsonl")).unwrap_or_default();
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let prev = rows.insert(
            v["final_url"].as_str().unwrap().to_string(),
            v["sha256"].as_str().unwrap().to_string(),
        );
        assert!(prev.is_none(), "duplicate manifest row: {line}");
    }
    rows
}

/// Serve `sites` (host name → site) on a loopback port of the system's
/// choosing; the server holds its listener, so the port is ours from the
/// start (no port is picked, freed and bound again).
pub async fn serve(sites: Vec<(String, Arc<dyn Site>)>) -> SiteServer {
    SiteServer::start(sites)
        .await
        .expect("start the loopback site server")
}

/// Serve one `site` under `host`.
pub async fn serve_host(host: &str, site: Arc<dyn Site>) -> SiteServer {
    serve(vec![(host.to_string(), site)]).await
}

/// A loopback port that refuses every connection, and stays so while this
/// lives: a TCP socket bound to it without listening. (A port found free and
/// let go could be taken, by a test's own outgoing connection even, before
/// the crawl tries it.)
pub struct DeadPort {
    fd: std::os::fd::OwnedFd,
    port: u16,
}

impl DeadPort {
    pub fn new() -> DeadPort {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket calls on a descriptor we own; the address
        // structure is fully initialised before use.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let fd = std::os::fd::OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            addr.sin_port = 0;
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            use std::os::fd::AsRawFd;
            let ok = libc::bind(
                fd.as_raw_fd(),
                &addr as *const libc::sockaddr_in as *const libc::sockaddr,
                len,
            );
            assert_eq!(ok, 0, "bind: {}", std::io::Error::last_os_error());
            let mut bound: libc::sockaddr_in = std::mem::zeroed();
            let mut bound_len = len;
            let ok = libc::getsockname(
                fd.as_raw_fd(),
                &mut bound as *mut libc::sockaddr_in as *mut libc::sockaddr,
                &mut bound_len,
            );
            assert_eq!(ok, 0, "getsockname: {}", std::io::Error::last_os_error());
            DeadPort {
                fd,
                port: u16::from_be(bound.sin_port),
            }
        }
    }

    pub fn port(&self) -> u16 {
        let _ = &self.fd;
        self.port
    }
}

/// An address for a daemon's admin API, which the daemon binds itself (it
/// takes an address from its config, not a listener, and its CLI finds it
/// there too). Not a port found free and dropped in the ephemeral range,
/// where any outgoing connection of a concurrent test can take it before the
/// daemon binds it: a port below that range (which connections and port-0
/// binds never use), distinct within this process, checked free when chosen.
pub fn admin_addr() -> std::net::SocketAddr {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    // Below the ephemeral range, above the well-known ports; each test
    // process starts at its own offset so that two concurrent runs (two
    // worktrees on one machine) rarely try the same ports.
    let base = 10_000u32;
    let span = low.saturating_sub(base).max(1000);
    let offset = std::process::id() * 97;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = base + (offset + n) % span;
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port as u16));
        if std::net::TcpListener::bind(addr).is_ok() {
            return addr;
        }
    }
    panic!("no free port below the ephemeral range {low}");
}

/// A job over the fixture site (`forager_bench::sites::fixture`) served on `port`:
/// its seed, robots.txt obeyed and its `max_body`; the test adds the rest.
pub fn fixture_job(name: &str, port: u16) -> super::JobFile {
    use forager_bench::sites::fixture::{FIXTURE_HOST, FIXTURE_MAX_BODY};
    super::JobFile::new(name)
        .seed(format!("http://{FIXTURE_HOST}:{port}/"))
        .set("politeness", "robots", true)
        .set("limits", "max_body", FIXTURE_MAX_BODY)
}
