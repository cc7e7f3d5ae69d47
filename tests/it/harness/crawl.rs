//! Runs of the real `forager crawl` binary.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Output, Stdio};

use super::bin;

/// The arguments of one `forager crawl` run: the job file, its state folder,
/// no progress bar, and whatever the test adds.
#[derive(Clone, Debug)]
pub struct Crawl {
    args: Vec<OsString>,
}

impl Crawl {
    pub fn new(job: &Path, state: &Path) -> Crawl {
        let args = vec![
            "crawl".into(),
            job.as_os_str().to_owned(),
            "--state-dir".into(),
            state.as_os_str().to_owned(),
            "--no-progress".into(),
        ];
        Crawl { args }
    }

    /// [`Crawl::new`] of a crawl of loopback servers ([`Crawl::allow_private`]).
    pub fn loopback(job: &Path, state: &Path) -> Crawl {
        Crawl::new(job, state).allow_private()
    }

    /// A crawl of the fixture site on `port` (both its host names there).
    pub fn fixture(job: &Path, state: &Path, port: u16) -> Crawl {
        use forager_bench::sites::fixture::{FIXTURE_HOST, OUTSIDE_HOST};
        Crawl::loopback(job, state)
            .resolve(FIXTURE_HOST, port)
            .resolve(OUTSIDE_HOST, port)
    }

    /// Loopback servers are private addresses: tests opt in, as users must.
    pub fn allow_private(self) -> Crawl {
        self.arg("--allow-private")
    }

    /// Send `host` to 127.0.0.1:`port`.
    pub fn resolve(self, host: &str, port: u16) -> Crawl {
        self.resolve_to(host, SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// Send every one of `hosts` to 127.0.0.1:`port` (one server, many sites).
    pub fn resolve_all(self, hosts: impl IntoIterator<Item = String>, port: u16) -> Crawl {
        hosts
            .into_iter()
            .fold(self, |crawl, host| crawl.resolve(&host, port))
    }

    pub fn resolve_to(self, host: &str, addr: SocketAddr) -> Crawl {
        self.arg("--resolve").arg(format!("{host}={addr}"))
    }

    pub fn checkpoint_interval(self, interval: &str) -> Crawl {
        self.arg("--checkpoint-interval").arg(interval)
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Crawl {
        self.args.push(arg.into());
        self
    }

    /// The arguments, for a test that runs the binary through a wrapper.
    pub fn args(&self) -> Vec<String> {
        self.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// A command with piped output, to spawn or wait for.
    pub fn command(&self) -> tokio::process::Command {
        let mut c = bin::command();
        c.args(&self.args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// The same, blocking (for tests that poll `/proc` while it runs).
    pub fn std_command(&self) -> std::process::Command {
        let mut c = bin::std_command();
        c.args(&self.args);
        c
    }

    /// Run to the end (within [`bin::DEADLINE`]) and collect its output.
    pub async fn output(&self) -> Output {
        bin::output(&mut self.command()).await
    }

    /// The same, blocking (for a test without a runtime).
    pub fn output_blocking(&self) -> Output {
        bin::output_blocking(&mut self.std_command())
    }

    /// Run to the end, which must be a success; its standard output.
    pub async fn succeed(&self) -> String {
        let out = self.output().await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}
