//! `forager bench --cpu --reference CMD`: forager and a reference crawler
//! side by side on one loopback site.
//!
//! The bench serves the site from a child process (`forager serve-site
//! --loopback-name`), so the site also answers under `127.0.0.1`, the URL the
//! reference is given. Both crawlers are measured the same way where it
//! matters: what they fetched comes from the server's own log (requests, and
//! the bytes of `text/html` answers), never from the crawlers' counters, so
//! the denominators of "CPU per MiB of HTML" and "CPU per request" are counted
//! by one party. CPU time is user + system: forager's from `getrusage(SELF)`
//! around its run (it runs in this process), the reference's from `wait4` on
//! its `sh -c` process, which adds every descendant that was waited for — the
//! whole process tree, unless the command leaves something running in the
//! background (whatever is still running when it exits is killed with its
//! process group and not counted).
//!
//! Runs are interleaved — each forager strategy, then the reference, round
//! after round — so that a change in the machine's load touches both; the
//! table reports medians over the rounds.
//!
//! Loopback only: the template must contain `{url}`, which becomes the
//! site's `http://127.0.0.1:PORT/…`; a template naming any other URL is
//! refused, and the command runs without proxy variables. forager cannot
//! police what the command does beyond that.

use crate::sites::server::RequestRecord;
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use url::{Host, Url};

/// The placeholder of a reference command template.
pub const URL_PLACEHOLDER: &str = "{url}";

/// A reference crawler's command template, checked: it names `{url}` and no
/// URL off this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceCommand {
    template: String,
}

impl ReferenceCommand {
    pub fn parse(template: &str) -> anyhow::Result<ReferenceCommand> {
        let template = template.trim();
        anyhow::ensure!(
            !template.is_empty(),
            "--reference is empty: give a command line with {URL_PLACEHOLDER}, e.g. \
             --reference 'spider-ref {URL_PLACEHOLDER}'"
        );
        anyhow::ensure!(
            template.contains(URL_PLACEHOLDER),
            "--reference {template:?} has no {URL_PLACEHOLDER}: the bench serves the site on \
             127.0.0.1 and puts its start URL where {URL_PLACEHOLDER} stands"
        );
        for url in urls_in(template) {
            match Url::parse(url) {
                Ok(parsed) if is_loopback(&parsed) => {}
                Ok(_) => bail!(
                    "--reference names {url}, which is not on this machine: the reference \
                     crawls only the loopback site the bench serves ({URL_PLACEHOLDER})"
                ),
                Err(e) => bail!("--reference names {url:?}, which is not a URL ({e})"),
            }
        }
        Ok(ReferenceCommand {
            template: template.to_string(),
        })
    }

    /// The shell command line for the site at `url` (shell-quoted in place of
    /// every `{url}`); refuses a URL that is not on loopback.
    pub fn command_line(&self, url: &Url) -> anyhow::Result<String> {
        anyhow::ensure!(
            is_loopback(url),
            "refusing to run the reference on {url}: only loopback URLs (127.0.0.0/8, ::1, \
             localhost) are crawled"
        );
        Ok(self
            .template
            .replace(URL_PLACEHOLDER, &shell_quote(url.as_str())))
    }
}

/// Whether `url` is http(s) on this machine: 127.0.0.0/8, `::1` or `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Every `scheme://…` token of `text`, up to the next space or quote.
fn urls_in(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(i) = rest.find("://") {
        let at = offset + i;
        let start = text[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |p| p + 1);
        let end = text[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ';' | '|' | ')'))
            .map_or(text.len(), |p| at + p);
        found.push(&text[start..end]);
        offset = end.max(at + 3);
        rest = &text[offset..];
    }
    found
}

/// `s` as one word for `sh`: single-quoted, each `'` as `'\''`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What the server answered over one run, from its log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedTally {
    /// Every request answered (GET + HEAD, redirects and errors included).
    pub requests: u64,
    pub heads: u64,
    /// GET answers of type `text/html` or `application/xhtml+xml`, any status.
    pub html_pages: u64,
    /// Body bytes sent with those.
    pub html_bytes: u64,
    /// Body bytes sent, all answers.
    pub bytes: u64,
}

/// Is this `Content-Type` a page a crawler parses for links?
fn is_html(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else {
        return false;
    };
    let essence = ct.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("text/html")
        || essence.eq_ignore_ascii_case("application/xhtml+xml")
}

/// The tally of a server's log.
pub fn tally(records: &[RequestRecord]) -> ServedTally {
    let mut t = ServedTally::default();
    for r in records {
        t.requests += 1;
        t.bytes += r.bytes;
        if r.method == axum::http::Method::HEAD {
            t.heads += 1;
        } else if is_html(r.content_type.as_deref()) {
            t.html_pages += 1;
            t.html_bytes += r.bytes;
        }
    }
    t
}

/// One crawl: its CPU time and what the server sent it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunSample {
    pub cpu: Duration,
    pub served: ServedTally,
}

impl RunSample {
    pub fn html_mib(&self) -> f64 {
        self.served.html_bytes as f64 / (1u64 << 20) as f64
    }

    /// CPU ms per MiB of HTML (`None` without HTML).
    pub fn ms_per_mib(&self) -> Option<f64> {
        let mib = self.html_mib();
        (mib > 0.0).then(|| self.cpu.as_secs_f64() * 1000.0 / mib)
    }

    /// CPU ms per request (`None` without requests).
    pub fn ms_per_request(&self) -> Option<f64> {
        (self.served.requests > 0)
            .then(|| self.cpu.as_secs_f64() * 1000.0 / self.served.requests as f64)
    }
}

/// The median of `values` (the mean of the two middle ones for an even
/// count); `None` when empty.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// One crawler's row: medians over its runs, each column on its own.
#[derive(Clone, Debug, PartialEq)]
pub struct CrawlerSummary {
    pub name: String,
    pub runs: usize,
    pub requests: Option<f64>,
    pub html_pages: Option<f64>,
    pub html_mib: Option<f64>,
    pub cpu_s: Option<f64>,
    pub ms_per_mib: Option<f64>,
    pub ms_per_request: Option<f64>,
}

pub fn summarise(name: &str, runs: &[RunSample]) -> CrawlerSummary {
    let of = |f: &dyn Fn(&RunSample) -> Option<f64>| median(runs.iter().filter_map(f).collect());
    CrawlerSummary {
        name: name.to_string(),
        runs: runs.len(),
        requests: of(&|r| Some(r.served.requests as f64)),
        html_pages: of(&|r| Some(r.served.html_pages as f64)),
        html_mib: of(&|r| Some(r.html_mib())),
        cpu_s: of(&|r| Some(r.cpu.as_secs_f64())),
        ms_per_mib: of(&RunSample::ms_per_mib),
        ms_per_request: of(&RunSample::ms_per_request),
    }
}

/// The side-by-side table: one row per crawler, the reference last, and each
/// crawler's medians as a multiple of the reference's.
pub fn markdown_table(site: &str, rows: &[CrawlerSummary], reference: &CrawlerSummary) -> String {
    let num =
        |v: Option<f64>, digits: usize| v.map_or("—".to_string(), |v| format!("{v:.digits$}"));
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "—".to_string(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**{site}** — CPU time (user + sys) per MiB of HTML and per request, medians over \
         {} interleaved runs; requests and bytes from the site server's log",
        reference.runs
    );
    out.push('\n');
    out.push_str(
        "| crawler | runs | requests | HTML pages | HTML MiB | CPU s | CPU ms per MiB of HTML \
         | CPU ms per request | × reference per MiB | × reference per request |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for row in rows.iter().chain(std::iter::once(reference)) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.name,
            row.runs,
            num(row.requests, 0),
            num(row.html_pages, 0),
            num(row.html_mib, 1),
            num(row.cpu_s, 2),
            num(row.ms_per_mib, 2),
            num(row.ms_per_request, 3),
            ratio(row.ms_per_mib, reference.ms_per_mib),
            ratio(row.ms_per_request, reference.ms_per_request),
        );
    }
    out
}

/// User + system CPU time of a `libc::rusage`.
pub fn rusage_cpu(usage: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Run `command_line` with `sh -c` in a process group of its own, its output
/// to `log`; return its CPU time (user + sys of it and of every descendant
/// it waited for) once it exits 0. A failure says how it ended and shows the
/// end of its output; past `timeout` the group is killed.
pub fn run_reference(
    command_line: &str,
    log: &Path,
    timeout: Duration,
) -> anyhow::Result<Duration> {
    use std::os::unix::process::CommandExt;
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out
        .try_clone()
        .with_context(|| format!("opening {} twice", log.display()))?;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(command_line)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    // The site is on loopback: a proxy could only take the crawl elsewhere.
    for var in [
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ] {
        command.env_remove(var);
    }
    let child = command
        .spawn()
        .with_context(|| format!("starting the reference: sh -c {command_line:?}"))?;
    let pid = child.id() as libc::pid_t;
    // The child is reaped here with wait4 (for its rusage), never through `child`.
    drop(child);
    let deadline = Instant::now() + timeout;
    let (status, usage) = loop {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child's pid with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e).context("waiting for the reference");
        }
        if Instant::now() >= deadline {
            kill_group(pid);
            // SAFETY: as above, blocking this time: it was just killed.
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            bail!(
                "the reference did not finish within {} and was killed: {command_line}\n{}",
                humantime::format_duration(timeout),
                tail_of(log)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Anything it left running would keep crawling the site (and go uncounted).
    kill_group(pid);
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(rusage_cpu(&usage));
    }
    let how = if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            127 => "exited with status 127: the shell did not find the command".to_string(),
            126 => "exited with status 126: the command is not executable".to_string(),
            code => format!("exited with status {code}"),
        }
    } else if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("ended with wait status {status}")
    };
    bail!(
        "the reference {how}: sh -c {command_line:?}\n{}",
        tail_of(log)
    )
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: a signal to the process group we created for the reference;
    // ESRCH (nothing left) is fine.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

/// The last lines of the reference's output, for an error message.
fn tail_of(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return format!("(it printed nothing; output in {})", log.display());
    }
    let from = lines.len().saturating_sub(15);
    format!(
        "last lines of its output ({}):\n{}",
        log.display(),
        lines[from..].join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    #[test]
    fn a_template_needs_the_placeholder_and_only_loopback_urls() {
        assert!(ReferenceCommand::parse("spider-ref {url}").is_ok());
        assert!(ReferenceCommand::parse("  ").is_err());
        let e = ReferenceCommand::parse("spider-ref http://127.0.0.1:8080/").unwrap_err();
        assert!(e.to_string().contains("no {url}"), "{e}");
        let e = ReferenceCommand::parse("wget -r {url} https://example.com/x").unwrap_err();
        assert!(e.to_string().contains("https://example.com/x"), "{e}");
        let e = ReferenceCommand::parse("curl {url} 'http://10.0.0.1/'").unwrap_err();
        assert!(e.to_string().contains("http://10.0.0.1/"), "{e}");
        assert!(
            ReferenceCommand::parse("curl {url} http://localhost:9/ http://127.0.0.2/").is_ok()
        );
        assert!(ReferenceCommand::parse("curl {url} http://[::1]:9/").is_ok());
    }

    #[test]
    fn the_url_is_quoted_into_every_placeholder_and_must_be_loopback() {
        let c = ReferenceCommand::parse("a {url} && b {url}").unwrap();
        let url = Url::parse("http://127.0.0.1:4321/index.html?x=1&y='2'").unwrap();
        assert_eq!(
            c.command_line(&url).unwrap(),
            "a 'http://127.0.0.1:4321/index.html?x=1&y=%272%27' && b 'http://127.0.0.1:4321/index.html?x=1&y=%272%27'"
        );
        assert!(c
            .command_line(&Url::parse("http://example.com/").unwrap())
            .is_err());
        assert!(c
            .command_line(&Url::parse("http://192.168.1.1/").unwrap())
            .is_err());
        assert!(c
            .command_line(&Url::parse("file:///etc/passwd").unwrap())
            .is_err());
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn urls_are_found_up_to_a_space_or_quote() {
        assert_eq!(
            urls_in("x http://a.test/p 'https://b.test/q';ftp://c"),
            vec!["http://a.test/p", "https://b.test/q", "ftp://c"]
        );
        assert!(urls_in("spider {url}").is_empty());
    }

    fn record(method: Method, content_type: Option<&str>, bytes: u64) -> RequestRecord {
        RequestRecord {
            host: "127.0.0.1".into(),
            method,
            path_and_query: "/".into(),
            status: 200,
            at: Instant::now(),
            done: None,
            bytes,
            content_type: content_type.map(str::to_string),
            user_agent: None,
            if_none_match: None,
        }
    }

    #[test]
    fn the_tally_counts_html_by_its_type_and_heads_apart() {
        let log = vec![
            record(Method::GET, Some("text/html; charset=utf-8"), 1000),
            record(Method::GET, Some("TEXT/HTML"), 500),
            record(Method::GET, Some("application/xhtml+xml"), 20),
            record(Method::GET, Some("text/csv"), 4000),
            record(Method::GET, None, 7),
            record(Method::HEAD, Some("text/html"), 0),
        ];
        assert_eq!(
            tally(&log),
            ServedTally {
                requests: 6,
                heads: 1,
                html_pages: 3,
                html_bytes: 1520,
                bytes: 5527,
            }
        );
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    fn sample(cpu_ms: u64, requests: u64, html_mib: u64) -> RunSample {
        RunSample {
            cpu: Duration::from_millis(cpu_ms),
            served: ServedTally {
                requests,
                heads: 0,
                html_pages: requests,
                html_bytes: html_mib << 20,
                bytes: html_mib << 20,
            },
        }
    }

    #[test]
    fn the_table_has_medians_and_ratios_to_the_reference() {
        let forager = summarise(
            "forager bfs",
            &[
                sample(300, 100, 10),
                sample(200, 100, 10),
                sample(900, 100, 10),
            ],
        );
        assert_eq!(forager.ms_per_mib, Some(30.0));
        assert_eq!(forager.ms_per_request, Some(3.0));
        let reference = summarise(
            "spider",
            &[
                sample(100, 50, 10),
                sample(150, 50, 10),
                sample(120, 50, 10),
            ],
        );
        let table = markdown_table("sklearn", &[forager], &reference);
        assert!(table.contains("over 3 interleaved runs"), "{table}");
        assert!(
            table.contains(
                "| forager bfs | 3 | 100 | 100 | 10.0 | 0.30 | 30.00 | 3.000 | 2.50× | 1.25× |"
            ),
            "{table}"
        );
        assert!(
            table
                .contains("| spider | 3 | 50 | 50 | 10.0 | 0.12 | 12.00 | 2.400 | 1.00× | 1.00× |"),
            "{table}"
        );
        // A crawler that fetched no HTML has no figure per MiB, and no ratio.
        let empty = summarise("nothing", &[sample(10, 0, 0)]);
        let table = markdown_table("s", &[empty], &reference);
        assert!(
            table.contains("| nothing | 1 | 0 | 0 | 0.0 | 0.01 | — | — | — | — |"),
            "{table}"
        );
    }

    #[test]
    fn a_reference_is_timed_with_its_children_and_a_failure_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("ref.log");
        // A child of the shell that burns CPU: its time is the reference's.
        let cpu = run_reference(
            "sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'",
            &log,
            Duration::from_secs(60),
        )
        .unwrap();
        assert!(cpu > Duration::ZERO);
        let e = run_reference("echo crawling; exit 3", &log, Duration::from_secs(60)).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("exited with status 3") && text.contains("crawling"),
            "{text}"
        );
        let e =
            run_reference("no-such-crawler-here {url}", &log, Duration::from_secs(60)).unwrap_err();
        assert!(
            format!("{e:#}").contains("did not find the command"),
            "{e:#}"
        );
        let e = run_reference("sleep 30", &log, Duration::from_millis(100)).unwrap_err();
        assert!(format!("{e:#}").contains("was killed"), "{e:#}");
    }
}
