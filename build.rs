//! Probes the machine for what some integration tests (`tests/it/`) need and
//! emits one `cfg` for each thing found, so that a test that cannot run here
//! is compiled `#[ignore]`d, and `cargo test` reports it "ignored", never
//! "ok" after a silent skip:
//!
//! - `have_lv2`: the Turtle of Debian's lv2-dev + lv2-examples 1.18.4-2,
//!   extracted, named by `FORAGER_LV2_ROOT` (`tests/it/lv2.rs`);
//! - `have_warcio`: python3 that imports warcio, the WARC tests' oracle;
//! - `have_chromium`: a headless Chromium on `PATH`, the dashboard's browser;
//! - `have_userns`: unprivileged user and mount namespaces with tmpfs
//!   (`tests/it/diskfull.rs`);
//! - `have_postgres`: PostgreSQL's `initdb` and `pg_ctl` (Debian's
//!   `/usr/lib/postgresql/*/bin`, or on `PATH`), for the cluster tests
//!   (`tests/it/cluster.rs`), which start a server of their own.
//!
//! `FORAGER_REQUIRE_LV2`, `FORAGER_REQUIRE_WARCIO`,
//! `FORAGER_REQUIRE_CHROMIUM` and `FORAGER_REQUIRE_POSTGRES` (set by `.ci/run` after installing the tool)
//! turn the cfg on whatever the probe says: in CI those tests run, and fail
//! loudly if the tool is missing after all.
//!
//! Nothing here touches the product's code: no `src/` file reads these cfgs.
//! The probes run again only when this file or one of the variables below
//! changes (a tool installed later needs `touch build.rs`, or the variable).

use std::path::Path;
use std::process::{Command, Stdio};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for var in [
        "FORAGER_LV2_ROOT",
        "FORAGER_REQUIRE_LV2",
        "FORAGER_REQUIRE_WARCIO",
        "FORAGER_REQUIRE_CHROMIUM",
        "FORAGER_REQUIRE_POSTGRES",
        "PATH",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let required = |var: &str| std::env::var_os(var).is_some();
    let probes = [
        ("have_lv2", required("FORAGER_REQUIRE_LV2") || lv2()),
        (
            "have_warcio",
            required("FORAGER_REQUIRE_WARCIO") || warcio(),
        ),
        (
            "have_chromium",
            required("FORAGER_REQUIRE_CHROMIUM") || chromium(),
        ),
        ("have_userns", userns()),
        (
            "have_postgres",
            required("FORAGER_REQUIRE_POSTGRES") || postgres(),
        ),
    ];
    for (cfg, found) in probes {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if found {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}

fn lv2() -> bool {
    std::env::var_os("FORAGER_LV2_ROOT")
        .is_some_and(|root| Path::new(&root).join("core.lv2/manifest.ttl").is_file())
}

/// Whether `program args…` runs and exits 0 (quietly).
fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn warcio() -> bool {
    succeeds("python3", &["-c", "import warcio"])
}

/// The names `tests/it/daemon.rs` looks for on `PATH`.
const CHROMIUMS: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

fn chromium() -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| CHROMIUMS.iter().any(|n| dir.join(n).is_file()))
}

/// What `tests/it/harness/postgres.rs` looks for: Debian's versioned
/// folders first, then `PATH`.
fn postgres() -> bool {
    let debian = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/initdb").is_file() && e.path().join("bin/pg_ctl").is_file());
    debian
        || std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path)
                .any(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        })
}

/// The diskfull tests' own probe: a tmpfs mounted in a user + mount namespace.
fn userns() -> bool {
    succeeds(
        "unshare",
        &[
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            "d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs \"$d\" && umount \"$d\" && rmdir \"$d\"",
        ],
    )
}
