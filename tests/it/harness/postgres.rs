//! A PostgreSQL server of a test's own: `initdb` into a temporary folder,
//! `pg_ctl start` on loopback and a free port, stopped (immediately) when
//! dropped. The binaries are Debian's (`/usr/lib/postgresql/*/bin`, the
//! newest), else `initdb` on `PATH`; as root, the server runs as the
//! `postgres` user (it refuses root). `build.rs`'s `have_postgres` compiles
//! the cluster tests ignored where there is none.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use forager_core::config::ClusterConfig;

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    user: Option<(u32, u32)>,
    pub port: u16,
}

use forager_bench::cluster::{postgres_bin_dir as bin_dir, postgres_user};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Postgres {
    /// A fresh server tuned for tests (no fsync: a crash of the test machine loses nothing of value).
    pub fn start() -> Postgres {
        Self::start_with(&[
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ])
    }

    /// A fresh server with PostgreSQL's default durability (for measurements).
    pub fn start_durable() -> Postgres {
        Self::start_with(&[])
    }

    fn start_with(settings: &[&str]) -> Postgres {
        let bin = bin_dir().expect("PostgreSQL's initdb (apt-get install postgresql)");
        let dir = tempfile::Builder::new()
            .prefix("forager-pg-")
            .tempdir()
            .expect("temporary folder");
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let user = if root {
            let user = postgres_user().expect("a postgres user to run the server as root");
            std::os::unix::fs::chown(dir.path(), Some(user.0), Some(user.1))
                .expect("chown the server's folder");
            Some(user)
        } else {
            None
        };
        let mut pg = Postgres {
            dir,
            bin,
            user,
            port: 0,
        };
        let data = pg.data();
        pg.run(
            "initdb",
            &[
                "--no-sync",
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "-D",
                data.to_str().expect("UTF-8 temp path"),
            ],
        );
        // A port found free may be taken before the server binds it: try a few.
        for attempt in 0..5 {
            pg.port = free_port();
            let mut options = format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {}",
                pg.port,
                pg.dir.path().display()
            );
            for s in settings {
                options.push(' ');
                options.push_str(s);
            }
            let log = pg.dir.path().join("server.log");
            let out = pg.output(
                "pg_ctl",
                &[
                    "start",
                    "-w",
                    "-t",
                    "60",
                    "-D",
                    data.to_str().expect("UTF-8 temp path"),
                    "-l",
                    log.to_str().expect("UTF-8 temp path"),
                    "-o",
                    &options,
                ],
            );
            if out.status.success() {
                return pg;
            }
            assert!(
                attempt < 4,
                "pg_ctl start failed: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        unreachable!()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new(self.bin.join(program));
        c.args(args)
            .stdin(Stdio::null())
            .env("LC_ALL", "C")
            .current_dir(self.dir.path());
        if let Some((uid, gid)) = self.user {
            c.uid(uid).gid(gid).env("HOME", self.dir.path());
        }
        c
    }

    fn output(&self, program: &str, args: &[&str]) -> Output {
        self.command(program, args)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"))
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self.output(program, args);
        assert!(
            out.status.success(),
            "{program} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The server's connection string (no password: trust on loopback).
    pub fn database(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    /// `[cluster]` for this server with `lease`.
    pub fn cluster_config(&self, lease: Duration) -> ClusterConfig {
        ClusterConfig {
            database: self.database(),
            password: None,
            node: None,
            lease,
        }
    }

    /// A plain connection, for what the product never does (tests' own SQL).
    pub async fn client(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.database(), tokio_postgres::NoTls)
            .await
            .expect("connect to the test server");
        tokio::spawn(connection);
        client
    }

    /// Stop the server now (a database lost mid-run).
    pub fn stop(&self) {
        let data = self.data();
        let _ = self
            .command(
                "pg_ctl",
                &[
                    "stop",
                    "-w",
                    "-m",
                    "immediate",
                    "-D",
                    data.to_str().unwrap_or(""),
                ],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
