//! The benchmark harness end to end on one small synthetic site and two
//! strategies (the full runs are documented commands, not CI).

#[test]
fn bench_writes_table_traces_and_plot() {
    let out = tempfile::tempdir().unwrap();
    let status = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args([
                "bench",
                "--site",
                "synthetic:small",
                "--strategies",
                "sb,bfs",
            ])
            .args(["--seeds", "2", "--out"])
            .arg(out.path()),
    );
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
    for row in ["| sb | 2 |", "| bfs | 1 |", "| omniscient |", "| floor |"] {
        assert!(table.contains(row), "missing {row:?} in {table}");
    }
    // The oracle floor: in the heading, a column, and a line per site.
    assert!(table.contains("oracle floor for 90 %: "), "{table}");
    assert!(table.contains("| req@90 ÷ floor |"), "{table}");
    assert!(table.contains("req@90 ÷ floor: sb "), "{table}");
    // Every run harvested the whole site: coverage 100 %.
    for line in table
        .lines()
        .filter(|l| l.starts_with("| sb") || l.starts_with("| bfs"))
    {
        // The columns: strategy, runs, req@50, req@80, req@90, ÷ floor, coverage.
        let coverage = line.split('|').nth(7).unwrap().trim();
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
    let out = crate::harness::bin::output_blocking(crate::harness::bin::std_command().arg("demo"));
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

/// Multi-host mode end to end on a small web that the crawl finishes: the
/// report's politeness verdict is read from the server's own log, and every
/// target of the web is fetched.
#[test]
fn bench_web_crawls_many_hosts_and_reports_politeness_from_the_server_log() {
    let out = tempfile::tempdir().unwrap();
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["bench", "--site", "web:12:3", "--strategies", "bfs"])
            .args(["--seeds", "2", "--delay", "100ms", "--warmup", "0s"])
            // Far longer than the crawl: it ends when the web is harvested.
            .args(["--duration", "120s", "--out"])
            .arg(out.path()),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = std::fs::read_to_string(out.path().join("web-12.md")).unwrap();
    assert!(
        report.contains("**web:12** — 12 hosts, 3 pages each, 12 targets on every third host"),
        "{report}"
    );
    let row = report
        .lines()
        .find(|l| l.starts_with("| bfs | 2 |"))
        .unwrap_or_else(|| panic!("no bfs row in {report}"));
    // Hosts 0, 3, 6 and 9 serve three files each: both runs fetched all 12.
    assert!(row.ends_with("| 12 ± 0 |"), "{row}");
    assert!(
        report.contains("most requests in flight on one host 1 ("),
        "{report}"
    );
    assert!(report.contains("(delay 100ms): polite."), "{report}");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.matches("finished after").count(), 2, "{stderr}");
    for seed in [1, 2] {
        let csv =
            std::fs::read_to_string(out.path().join(format!("web-12-bfs-{seed}.csv"))).unwrap();
        let total: usize = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(1).unwrap().parse::<usize>().unwrap())
            .sum();
        // 12 robots.txt, 12 home pages, 36 pages, 12 files.
        assert_eq!(total, 72, "{csv}");
    }
}

#[test]
fn bench_web_runs_alone() {
    let out = crate::harness::bin::output_blocking(crate::harness::bin::std_command().args([
        "bench",
        "--site",
        "web:10",
        "--site",
        "synthetic:small",
    ]));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("runs the multi-host measurement on its own"),
        "{stderr}"
    );
    let out = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command().args(["bench", "--site", "web:0"]),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HOSTS must be between 1 and 100000"),
        "{stderr}"
    );
}

/// The linked-data benchmark end to end on a small web: the table, and a
/// complete bfs crawl that finds every RDF document of the ground truth.
#[test]
fn bench_measures_a_linked_web() {
    let out = tempfile::tempdir().unwrap();
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args([
                "bench",
                "--site",
                "linked:10:6:3",
                "--strategies",
                "ldcoc,bfs",
            ])
            .args(["--seeds", "2", "--out"])
            .arg(out.path()),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let table = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    let header = table
        .lines()
        .find(|l| l.starts_with("**linked web**") && l.contains("— 10 hosts"))
        .unwrap_or_else(|| panic!("no linked web in {table}"));
    // "… N URIs reachable, R of them RDF (…)"
    let words: Vec<&str> = header.split_whitespace().collect();
    let rdf: u64 = words[words.iter().position(|w| *w == "of").unwrap() - 1]
        .trim_end_matches(',')
        .parse()
        .unwrap();
    assert!(rdf > 0, "{header}");
    assert_eq!(cell(&table, "ldcoc", "runs"), "2", "{table}");
    assert_eq!(cell(&table, "bfs", "runs"), "1", "{table}");
    // A complete bfs crawl harvests every RDF document.
    assert_eq!(
        cell(&table, "bfs", "RDF documents"),
        rdf.to_string(),
        "{table}"
    );
    assert_eq!(cell(&table, "bfs", "coverage %"), "100.0", "{table}");
    let trace = std::fs::read_to_string(out.path().join("linked.csv")).unwrap();
    let bfs_rdf = trace
        .lines()
        .filter(|l| l.starts_with("bfs,") && l.ends_with(",1"))
        .count();
    assert_eq!(bfs_rdf as u64, rdf);
}

/// The cell of a Markdown table of `forager bench` in the row of
/// `strategy` and the column named `column` (the first table that has it).
fn cell(table: &str, strategy: &str, column: &str) -> String {
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let mut lines = table.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with("| strategy |") {
            continue;
        }
        let header = cells(line);
        let Some(at) = header.iter().position(|h| h == column) else {
            continue;
        };
        for row in lines.by_ref().take_while(|l| l.starts_with('|')) {
            let row = cells(row);
            if row.first().map(String::as_str) == Some(strategy) {
                return row.get(at).cloned().unwrap_or_default();
            }
        }
    }
    panic!("no cell {strategy:?} / {column:?} in {table}")
}

/// The structured-data benchmark end to end on a tiny web: the table, and a
/// complete bfs crawl that harvests every relevant page of the ground truth
/// (the engine's own count is checked against the truth by the bench).
#[test]
fn bench_measures_a_structured_web() {
    let out = tempfile::tempdir().unwrap();
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args([
                "bench",
                "--site",
                "structured:12:6:3",
                "--strategies",
                "sb,bfs",
            ])
            .args(["--seeds", "2", "--out"])
            .arg(out.path()),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let table = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    let header = table
        .lines()
        .find(|l| l.starts_with("**structured web** — 12 hosts"))
        .unwrap_or_else(|| panic!("no structured web in {table}"));
    // "… P pages, R relevant (…)"
    let words: Vec<&str> = header.split_whitespace().collect();
    let relevant: u64 = words[words.iter().position(|w| *w == "relevant").unwrap() - 1]
        .parse()
        .unwrap();
    assert!(relevant > 0, "{header}");
    assert_eq!(cell(&table, "sb", "runs"), "2", "{table}");
    assert_eq!(cell(&table, "bfs", "runs"), "1", "{table}");
    // A complete bfs crawl harvests every relevant page.
    assert_eq!(
        cell(&table, "bfs", "relevant pages"),
        relevant.to_string(),
        "{table}"
    );
    assert_eq!(cell(&table, "bfs", "coverage %"), "100.0", "{table}");
    let trace = std::fs::read_to_string(out.path().join("structured.csv")).unwrap();
    let bfs_hits = trace
        .lines()
        .filter(|l| l.starts_with("bfs,") && l.ends_with(",1"))
        .count();
    assert_eq!(bfs_hits as u64, relevant);
    let bad = crate::harness::bin::output_blocking(crate::harness::bin::std_command().args([
        "bench",
        "--site",
        "structured:12:x",
    ]));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a number"));
}

/// The revisit benchmark end to end on a small changing site over two
/// simulated days of 24 s: one continuous job per policy through the real
/// `forager crawl`. Checks the report's invariants, not its figures: every
/// share is a share, every harvested file really was published (and served),
/// the budget held, and the server's log counts the requests the crawler does.
#[test]
fn bench_changing_runs_continuous_jobs_and_its_figures_hold_together() {
    let out = tempfile::tempdir().unwrap();
    let budget = 1000;
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["bench", "--site", "changing:3:1", "--seeds", "1"])
            .args(["--days", "2", "--day", "24s", "--budget"])
            .arg(budget.to_string())
            .arg("--out")
            .arg(out.path()),
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let report = std::fs::read_to_string(out.path().join("changing.md")).unwrap();
    assert!(
        report.starts_with("**changing:3:1** — 3 sections publishing 8.00 to 2.000 files"),
        "{report}"
    );
    for policy in ["learned", "adaptive", "fixed"] {
        assert!(
            report.contains(&format!("| {policy} | 1 |")),
            "no {policy} row in {report}"
        );
    }
    assert!(
        report.contains("Checks: 0 of 3 runs over the budget")
            && report.contains(
                "; 0 manifest rows naming no file the server served; 0 runs whose request count"
            ),
        "{report}"
    );
    let csv = std::fs::read_to_string(out.path().join("changing.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    let col = |row: &[&str], name: &str| -> String {
        let i = header.iter().position(|h| *h == name).unwrap();
        row[i].to_string()
    };
    let num = |row: &[&str], name: &str| -> u64 { col(row, name).parse().unwrap() };
    for row in &rows {
        // Three sections at 8, 4 and 2 files a day publish on the measured day.
        assert!(num(row, "published") > 0, "{csv}");
        assert!(num(row, "found") <= num(row, "published"), "{csv}");
        if let Ok(share) = col(row, "share").parse::<f64>() {
            assert!((0.0..=1.0).contains(&share), "{csv}");
        }
        if let Ok(delay) = col(row, "mean_delay_hours").parse::<f64>() {
            assert!(delay >= 0.0, "{csv}");
        }
        assert!(
            num(row, "revisions_caught") <= num(row, "revisions"),
            "{csv}"
        );
        assert!(num(row, "not_modified") <= num(row, "requests"), "{csv}");
        assert!(num(row, "busiest_day") <= budget + 1, "{csv}");
        // Every file the manifest holds was published and served.
        assert_eq!(num(row, "unpublished"), 0, "{csv}");
        // A file found in the window is new to the job: its row says so.
        assert!(num(row, "rows_new") >= num(row, "found"), "{csv}");
        // The stop that ends a run may cut the one request in flight after the
        // server logged it (its link stays unsettled): the server may hold one more.
        let crawler = num(row, "crawler_requests");
        assert!(
            (crawler..=crawler + 1).contains(&num(row, "server_requests")),
            "{csv}"
        );
    }
}

#[test]
fn bench_changing_runs_alone_and_checks_its_settings() {
    for (args, says) in [
        (
            &["--site", "changing", "--site", "synthetic:small"][..],
            "runs the revisit measurement on its own",
        ),
        (&["--site", "changing:0"], "1 to 20 sections"),
        (
            &["--site", "changing", "--days", "1"],
            "--days must be more than 1",
        ),
        (
            &["--site", "changing", "--day", "5s"],
            "--day must be at least 24s",
        ),
        (
            &["--site", "changing", "--policies", "often"],
            "unknown revisit policy",
        ),
    ] {
        let out = crate::harness::bin::output_blocking(
            crate::harness::bin::std_command().arg("bench").args(args),
        );
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// `bench --cpu --reference` end to end with a reference of its own: the
/// `forager crawl` binary on a job written by the command from `{url}`, so
/// the CPU time counted is that of a process tree (sh, printf, forager).
#[test]
fn bench_cpu_puts_forager_side_by_side_with_a_reference_command() {
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let job = work.path().join("reference.toml");
    // The job as a printf format: the shell puts the site's URL in the seed.
    let format = crate::harness::JobFile::new("reference")
        .seed("%s")
        .delay("0s")
        .set("budget", "requests", 40)
        .toml();
    let state = work.path().join("state");
    let crawl = crate::harness::Crawl::new(&job, &state).allow_private();
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    // A fresh state each run: a finished job would resume and fetch nothing.
    let command = format!(
        "rm -rf {} && printf {} {{url}} > {} && {} {}",
        quote(&state.to_string_lossy()),
        quote(&format),
        quote(&job.to_string_lossy()),
        quote(crate::harness::bin::forager()),
        crawl
            .args()
            .iter()
            .map(|a| quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["bench", "--cpu", "--site", "synthetic:small"])
            .args(["--strategies", "bfs", "--max-requests", "300"])
            .args(["--reference", &command, "--reference-name", "itself"])
            .arg("--out")
            .arg(out.path()),
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("round 3: itself"), "{stderr}");
    let table =
        std::fs::read_to_string(out.path().join("cpu-reference-synthetic-small.md")).unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), table.trim());
    let cells = |name: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no {name} row in {table}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    };
    let number = |cells: &[String], i: usize| -> f64 {
        cells[i]
            .parse()
            .unwrap_or_else(|_| panic!("column {i} of {cells:?}"))
    };
    let forager = cells("forager bfs");
    let itself = cells("itself");
    assert_eq!(forager[2], "3", "three runs: {forager:?}");
    assert_eq!(itself[2], "3", "three runs: {itself:?}");
    // Each side's requests are its own, from the server's log: forager's
    // budget of 300 (robots.txt and a last redirect hop may add a few), the
    // reference job's 40.
    let requests = number(&forager, 3);
    assert!((300.0..=320.0).contains(&requests), "{forager:?}");
    let requests = number(&itself, 3);
    assert!((40.0..=60.0).contains(&requests), "{itself:?}");
    for row in [&forager, &itself] {
        assert!(number(row, 4) > 0.0, "HTML pages: {row:?}");
        assert!(number(row, 7) > 0.0, "CPU per MiB: {row:?}");
        assert!(number(row, 8) > 0.0, "CPU per request: {row:?}");
    }
    assert_eq!(itself[9], "1.00×");
    assert!(
        forager[9].ends_with('×') && forager[9] != "—",
        "{forager:?}"
    );
}

#[test]
fn bench_cpu_reference_refuses_other_urls_and_explains_a_failing_command() {
    let bench = |reference: &str| {
        let out = tempfile::tempdir().unwrap();
        let run = crate::harness::bin::output_blocking(
            crate::harness::bin::std_command()
                .args(["bench", "--cpu", "--site", "synthetic:small"])
                .args(["--strategies", "bfs", "--max-requests", "20"])
                .args(["--reference", reference, "--out"])
                .arg(out.path()),
        );
        assert!(!run.status.success(), "{reference}: succeeded");
        String::from_utf8_lossy(&run.stderr).into_owned()
    };
    let stderr = bench("wget -r {url} http://example.com/");
    assert!(
        stderr.contains("names http://example.com/, which is not on this machine"),
        "{stderr}"
    );
    let stderr = bench("wget -r http://127.0.0.1:1/");
    assert!(stderr.contains("has no {url}"), "{stderr}");
    let stderr = bench("echo crawling {url}; exit 3");
    assert!(
        stderr.contains("the reference exited with status 3")
            && stderr.contains("crawling http://127.0.0.1:"),
        "{stderr}"
    );
    let stderr = bench("true {url}");
    assert!(stderr.contains("made no request"), "{stderr}");
}

/// A preset resized with `pages=`, crawled in CPU mode end to end: the site
/// has the size asked for, the database is reported table by table and
/// `--keep` leaves the state folder; a bad size is refused with its reason.
#[test]
fn bench_cpu_crawls_a_resized_preset_and_reports_the_store() {
    let out = tempfile::tempdir().unwrap();
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["bench", "--cpu", "--site", "synthetic:small:2:pages=300"])
            .args(["--strategies", "bfs", "--keep", "--out"])
            .arg(out.path()),
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("site            synthetic-small-300p"),
        "{stdout}"
    );
    // bfs crawls the whole site: the targets of 300 pages at small's 20 %
    // density (75; small itself has 250), and the pages besides a few
    // hundred in the calendar trap before its guard stops them.
    let (pages, targets) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("requests"))
        .and_then(|l| l.split_once('(')?.1.split_once(" pages, "))
        .and_then(|(p, t)| {
            Some((
                p.parse::<u64>().ok()?,
                t.split(' ').next()?.parse::<u64>().ok()?,
            ))
        })
        .unwrap_or_else(|| panic!("no page and target counts in {stdout}"));
    assert!((74..=76).contains(&targets), "{targets} targets: {stdout}");
    assert!((300..1000).contains(&pages), "{pages} pages: {stdout}");
    for table in ["  seen ", "  manifest ", "  jobs "] {
        assert!(stdout.contains(table), "no {table:?} row in {stdout}");
    }
    let state = out
        .path()
        .join("state-cpu")
        .join("synthetic-small-300p-bfs-1");
    assert!(state.join("forager.redb").is_file(), "{stdout}");
    assert!(stdout.contains("state kept in"), "{stdout}");

    let bad = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["bench", "--cpu", "--site", "synthetic:small:pages=50"])
            .arg("--out")
            .arg(out.path()),
    );
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("\"synthetic:small:pages=50\"")
            && stderr.contains("outside [100, 100000000]"),
        "{stderr}"
    );
}

/// `bench --site portal:NAME` on the form portal: the GET forms reach every
/// file, and without them plain links reach only the linked fifth, which
/// the verdict states instead of a ratio.
#[test]
fn portal_bench_compares_each_source_on_and_off() {
    let out = tempfile::tempdir().unwrap();
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["bench", "--site", "portal:forms", "--seeds", "2", "--out"])
            .arg(out.path()),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let table = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(
        table.contains("**portal:forms** (forms.portal.test) — 50 files"),
        "{table}"
    );
    // The columns: strategy, sources, runs, files harvested %, requests to 90 %, runs reaching 90 %.
    let row = |strategy: &str, sources: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("| {strategy} | {sources} |")))
            .unwrap_or_else(|| panic!("no row {strategy} {sources} in {table}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    };
    for (strategy, sources, share, reached) in [
        ("sb", "catalogs+forms", "100.0 ± 0.0", "2/2"),
        ("sb", "forms", "100.0 ± 0.0", "2/2"),
        ("sb", "catalogs", "20.0 ± 0.0", "0/2"),
        ("sb", "none", "20.0 ± 0.0", "0/2"),
        ("bfs", "catalogs+forms", "100.0", "2/2"),
        ("bfs", "none", "20.0", "0/2"),
    ] {
        let cells = row(strategy, sources);
        assert!(
            cells[4].starts_with(share),
            "{strategy} {sources}: {cells:?}"
        );
        assert_eq!(cells[6], reached, "{strategy} {sources}: {cells:?}");
    }
    // With forms, requests to 90 %: 45 files need at least 45 requests.
    let req90: f64 = row("sb", "forms")[5]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(req90 >= 45.0, "{req90}");
    // The manifest's provenance follows the path: the download form's own
    // files and the files of the result pages say `form`; the "popular"
    // tables, whose result pages the home page links, `page link`.
    assert!(
        row("sb", "forms")[8].contains("form 40.0, page link 10.0"),
        "{table}"
    );
    assert!(
        table.contains("sb without the sources never reaches 90 % (at most 20.0 % of the files)"),
        "{table}"
    );
    assert!(
        table.contains("sb with catalogs+forms: every file in every run"),
        "{table}"
    );
}

/// `bench --site portal:script`: the script-built portal crawled with
/// `render = "auto"` and `"never"` (sb) and both (bfs), one seed: rendering
/// reaches every file, without it plain links reach the featured quarter,
/// and the manifest says which files only the rendered page held.
#[test]
fn portal_bench_measures_rendering_on_the_script_portal() {
    let out = tempfile::tempdir().unwrap();
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["bench", "--site", "portal:script", "--seeds", "1", "--out"])
            .arg(out.path()),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let table = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(table.contains("**portal:script**"), "{table}");
    let row = |strategy: &str, sources: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("| {strategy} | {sources} |")))
            .unwrap_or_else(|| panic!("no row {strategy} {sources} in {table}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    };
    for (strategy, sources, share, reached) in [
        ("sb", "render auto", "100.0", "1/1"),
        ("sb", "none", "25.0", "0/1"),
        ("bfs", "render auto", "100.0", "1/1"),
        ("bfs", "none", "25.0", "0/1"),
    ] {
        let cells = row(strategy, sources);
        assert!(
            cells[4].starts_with(share),
            "{strategy} {sources}: {cells:?}"
        );
        assert_eq!(cells[6], reached, "{strategy} {sources}: {cells:?}");
    }
    // The 18 files only the script draws say `rendered`; the featured six,
    // which the rendered page holds too, may say either.
    let rendered: f64 = row("sb", "render auto")[8]
        .split(", ")
        .find_map(|c| c.strip_prefix("rendered "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    assert!(rendered >= 18.0, "{table}");
    assert!(
        table.contains("sb with render auto: every file in every run"),
        "{table}"
    );
}
