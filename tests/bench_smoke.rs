//! The benchmark harness end to end on one small synthetic site and two
//! strategies (the full runs are documented commands, not CI).

use std::process::Command;

#[test]
fn bench_writes_table_traces_and_plot() {
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_forager"))
        .args([
            "bench",
            "--site",
            "synthetic:small",
            "--strategies",
            "sb,bfs",
        ])
        .args(["--seeds", "2", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let table = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(
        table.contains("**synthetic-small** — 1000 pages, 250 targets reachable"),
        "{table}"
    );
    for row in ["| sb | 2 |", "| bfs | 1 |", "| omniscient |"] {
        assert!(table.contains(row), "missing {row:?} in {table}");
    }
    // Every run harvested the whole site: coverage 100 %.
    for line in table
        .lines()
        .filter(|l| l.starts_with("| sb") || l.starts_with("| bfs"))
    {
        let coverage = line.split('|').nth(6).unwrap().trim();
        assert!(coverage.starts_with("100.0"), "{line}");
    }
    let trace = std::fs::read_to_string(out.path().join("synthetic-small-sb-1.csv")).unwrap();
    let mut lines = trace.lines();
    assert_eq!(lines.next(), Some("index,kind,bytes,target,neither"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let targets = rows.iter().filter(|r| r[3] == "1").count();
    assert_eq!(targets, 250);
    // A request is a target or neither, never both; small has neither links (images, 4xx).
    assert!(rows.iter().all(|r| !(r[3] == "1" && r[4] == "1")));
    assert!(rows.iter().any(|r| r[4] == "1"));
    let svg = std::fs::read_to_string(out.path().join("synthetic-small.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("omniscient"));
}

#[test]
fn demo_runs_offline_and_compares_sb_with_bfs() {
    let out = Command::new(env!("CARGO_BIN_EXE_forager"))
        .arg("demo")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("targets harvested") && text.contains("250/250"),
        "{text}"
    );
    assert!(text.contains("sb needed"), "{text}");
    // Issue 17 item 14: the page counts add up, and "% of site" is explained.
    assert!(
        text.contains("1000 distinct pages and 250 data files, and an endless calendar"),
        "{text}"
    );
    let row = |label: &str| -> Vec<u64> {
        let line = text.lines().find(|l| l.starts_with(label)).unwrap();
        line[label.len()..]
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let pages = row("pages fetched");
    let trapped = row("  of which in the calendar trap");
    for (p, t) in pages.iter().zip(&trapped) {
        assert!(p - t <= 1000, "{p} pages, {t} in the trap: {text}");
    }
    assert!(
        text.contains("% of site: requests made until then, as a share of the site's 1000 pages + 250 data files"),
        "{text}"
    );
}
