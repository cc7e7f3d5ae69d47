//! Job files for tests: a builder over the TOML a user would write.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A job file under construction. Values are TOML literals (`"\"bfs\""`, `7`),
/// so a test can also write what a user must not (`"many"` for a number).
#[derive(Clone, Debug)]
pub struct JobFile {
    name: String,
    seeds: Vec<String>,
    top: Vec<(String, String)>,
    tables: Vec<(String, Vec<(String, String)>)>,
    /// Raw TOML appended at the end (whole tables only).
    extra: String,
}

impl JobFile {
    pub fn new(name: &str) -> JobFile {
        JobFile {
            name: name.to_string(),
            seeds: Vec::new(),
            top: Vec::new(),
            tables: Vec::new(),
            extra: String::new(),
        }
    }

    pub fn seed(mut self, url: impl Into<String>) -> JobFile {
        self.seeds.push(url.into());
        self
    }

    /// A top-level key, as a TOML literal.
    pub fn top(mut self, key: &str, value: impl ToString) -> JobFile {
        self.top.retain(|(k, _)| k != key);
        self.top.push((key.to_string(), value.to_string()));
        self
    }

    /// A key of `[table]`, as a TOML literal.
    pub fn set(mut self, table: &str, key: &str, value: impl ToString) -> JobFile {
        let idx = match self.tables.iter().position(|(t, _)| t == table) {
            Some(i) => i,
            None => {
                self.tables.push((table.to_string(), Vec::new()));
                self.tables.len() - 1
            }
        };
        let fields = &mut self.tables[idx].1;
        fields.retain(|(k, _)| k != key);
        fields.push((key.to_string(), value.to_string()));
        self
    }

    pub fn strategy(self, name: &str) -> JobFile {
        self.top("strategy", format!("{name:?}"))
    }

    /// The job's RNG seed (`seed = N`).
    pub fn rng_seed(self, seed: u64) -> JobFile {
        self.top("seed", seed)
    }

    pub fn scope(self, scope: &str) -> JobFile {
        self.top("scope", format!("{scope:?}"))
    }

    /// `[politeness] delay`.
    pub fn delay(self, delay: &str) -> JobFile {
        self.set("politeness", "delay", format!("{delay:?}"))
    }

    /// `[budget] early_stop = false`: the crawl runs to the end of the site.
    pub fn no_early_stop(self) -> JobFile {
        self.set("budget", "early_stop", false)
    }

    /// Raw TOML appended after everything else (whole tables only).
    pub fn extra(mut self, toml: &str) -> JobFile {
        self.extra.push_str(toml);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn toml(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "name = {:?}", self.name);
        let seeds: Vec<String> = self.seeds.iter().map(|u| format!("{u:?}")).collect();
        let _ = writeln!(s, "seeds = [{}]", seeds.join(", "));
        for (k, v) in &self.top {
            let _ = writeln!(s, "{k} = {v}");
        }
        for (table, fields) in &self.tables {
            let _ = writeln!(s, "\n[{table}]");
            for (k, v) in fields {
                let _ = writeln!(s, "{k} = {v}");
            }
        }
        if !self.extra.is_empty() {
            s.push('\n');
            s.push_str(&self.extra);
        }
        s
    }

    /// Write `DIR/NAME.toml`; returns its path.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join(format!("{}.toml", self.name));
        std::fs::write(&path, self.toml()).expect("write the job file");
        path
    }
}
